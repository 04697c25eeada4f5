"""Every `kbm` subcommand's class: it also takes the global options after its own name."""

from __future__ import annotations

from typing import Any, Callable

import click

from kbm_toolkit.cli.context import Context


def _late_store(ctx: click.Context, _: click.Parameter, value: str | None) -> None:
    if value is not None:
        ctx.find_object(Context).use_store(value)


def _late_kernelbench(ctx: click.Context, _: click.Parameter, value: str | None) -> None:
    if value is not None:
        ctx.find_object(Context).use_kernelbench(value)


def _late_bench(ctx: click.Context, _: click.Parameter, value: tuple[str, ...]) -> None:
    if value:
        ctx.find_object(Context).use_benches(value)


def _late_kbv(ctx: click.Context, _: click.Parameter, value: str | None) -> None:
    if value is not None:
        ctx.find_object(Context).use_kbv(value)


class KbmCommand(click.Command):
    """A command that also takes the global options after its name (`kbm audit -a kbv --store @demo`)."""

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.params += [
            click.Option(["--store"], type=click.Path(dir_okay=False), expose_value=False, callback=_late_store,
                         is_eager=True, help="The global --store, given after the command."),
            click.Option(["--kernelbench"], type=click.Path(exists=True, file_okay=False), expose_value=False,
                         callback=_late_kernelbench, is_eager=True,
                         help="The global --kernelbench, given after the command."),
            click.Option(["--bench"], type=click.Path(exists=True, file_okay=False), multiple=True, metavar="PATH",
                         expose_value=False, callback=_late_bench, is_eager=True,
                         help="The global --bench, given after the command (repeatable)."),
            click.Option(["--kbv"], type=click.Path(exists=True, file_okay=False), metavar="PATH", expose_value=False,
                         callback=_late_kbv, is_eager=True, help="The global --kbv, given after the command."),
        ]


def command(name: str | None = None) -> Callable[[Callable], KbmCommand]:
    """`@command()`: a `kbm` subcommand."""
    return click.command(name, cls=KbmCommand)
