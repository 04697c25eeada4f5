"""Options several commands share, spelled one way everywhere (old spellings still accepted, hidden)."""

from __future__ import annotations

from typing import Any, Callable

import click

PROTOCOL_WORDS = "a protocol's name (kbm adapters), an adapter folder, or a protocol .toml"
"""How every option that names a protocol says what it takes."""

TOLERANCE = click.FloatRange(0.0, 1.0, min_open=True)
"""atol = rtol: above 0, at most 1 (a tolerance of 1 already passes any output within 1 + |out|)."""

PERCENT = click.FloatRange(0.0, 100.0)

SHARE = click.FloatRange(0.0, 1.0, min_open=True)


def accounting_option() -> Callable:
    """`--accounting`: at which tolerance the denominator's inputs witness mutants for a score."""
    from kbm_toolkit.vocabulary import Accounting

    return click.option("--accounting", type=click.Choice(Accounting.values()), default=Accounting.TOLERANCE.value,
                        show_default=True, callback=lambda _ctx, _param, value: Accounting(value),
                        help="tolerance: a mutant is witnessed for a protocol's score when a valid input kills it "
                             "at that protocol's tolerance (the paper's accounting); union: when any denominator "
                             "protocol's input kills it at that protocol's own (a 1e-4 witness counts against "
                             "a 1e-2 check).")


def protocol_option(*names: str, help: str, **kw: Any) -> Callable:
    """An option naming a protocol (`--adapter/-a`, `--vs`, `--baseline`, `--survivors-of`, `--denominator`)."""
    return click.option(*names, metavar="PROTOCOL", help=f"{help} ({PROTOCOL_WORDS}).", **kw)


def out_option(help: str, folder: bool | None = True, required: bool = False, old: str | None = None) -> Callable:
    """`--out PATH`, the one spelling for where a command writes (a folder, a file, or with `folder`
    None either, as another option decides); `old` (e.g. `--emit`) still works, hidden."""
    kind = click.Path() if folder is None else click.Path(file_okay=not folder, dir_okay=folder)

    def keep_alias(ctx: click.Context, _: click.Parameter, value: Any) -> Any:
        return value if value is not None else ctx.params.get("out")

    def decorate(fn: Callable) -> Callable:
        metavar = "PATH" if folder is None else "DIR" if folder else "FILE"
        fn = click.option("--out", type=kind, required=False, callback=keep_alias, metavar=metavar,
                          help=help + (" [required]" if required else ""))(fn)
        if old:
            def alias(ctx: click.Context, _: click.Parameter, value: Any) -> None:
                if value is not None:
                    ctx.params["out"] = value

            fn = click.option(old, type=kind, hidden=True, expose_value=False, callback=alias, is_eager=True)(fn)
        if required:
            fn = _require_out(fn)
        return fn

    return decorate


def _require_out(fn: Callable) -> Callable:
    import functools

    @functools.wraps(fn)
    def wrapper(*args: Any, **kw: Any) -> Any:
        if kw.get("out") is None:
            raise click.UsageError("Missing option '--out'.")
        return fn(*args, **kw)

    return wrapper


json_option = click.option("--json", "as_json", is_flag=True, help="Print the result as JSON instead.")
