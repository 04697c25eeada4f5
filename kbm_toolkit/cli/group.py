"""The `kbm` group: global options, and the one place library errors become a line and an exit code."""

from __future__ import annotations

import faulthandler
import os
import signal
import sys
import traceback
from typing import Any

import click

from kbm_toolkit import __version__
from kbm_toolkit.cli import (analysis_cmds, evaluation_cmds, mutation_cmds, output_cmds, submission_cmds,
                             substrate_cmds)
from kbm_toolkit.cli.context import Context
from kbm_toolkit.cli.exit_codes import ExitCode
from kbm_toolkit.errors import KbmError, NoDevice, OptionError, OutputError

STORE_HELP = ("SQLite store to read and write [default: $KBM_STORE, else ~/.local/share/kbm/kbm.db]; "
              "@kernelbench, @kernelbench-level3 or @demo reads a store shipped with kbm.")
KERNELBENCH_HELP = "A KernelBench checkout to load problems from [env KBM_KERNELBENCH]."
BENCH_HELP = ("A benchmark pack (a folder with bench.toml: problems, substrates, adapters, rules) to load beside "
              "kbm's own; repeatable [env KBM_BENCH, a path list]. kbm init-bench writes one.")
KBV_HELP = "A KernelBench-Verified checkout, for its hidden tests [env KBM_KBV]."


class KbmGroup(click.Group):
    """Turns library errors into one line on stderr and a meaningful exit code."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except KbmError as e:
            click.echo(f"Error: {e.line()}", err=True)
            sys.exit(_exit_code(e))
        except KeyboardInterrupt:  # Ctrl-C, or `timeout -s INT`: every command stores as it goes
            click.echo("Stopped: what was stored so far is kept.", err=True)
            sys.exit(ExitCode.INTERRUPTED)
        except BrokenPipeError:  # `kbm mutants | head`: stop quietly, and keep Python's exit flush from failing again
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            sys.exit(ExitCode.PIPE_CLOSED)
        except (click.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise  # Click's own control flow: --help, usage errors
        except Exception:  # a bug in kbm: show the traceback, exit with its own code
            traceback.print_exc()
            click.echo("Error: internal error in kbm (the traceback above); please report it", err=True)
            sys.exit(ExitCode.INTERNAL)


def _exit_code(error: KbmError) -> ExitCode:
    if isinstance(error, NoDevice):
        return ExitCode.NO_DEVICE
    if isinstance(error, OptionError):
        return ExitCode.USAGE
    if isinstance(error, OutputError):
        return ExitCode.CANNOT_WRITE
    return ExitCode.BAD_INPUT


@click.group(cls=KbmGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="kbm")
@click.option("--store", type=click.Path(dir_okay=False), help=STORE_HELP)
@click.option("--kernelbench", envvar="KBM_KERNELBENCH", type=click.Path(exists=True, file_okay=False),
              help=KERNELBENCH_HELP)
@click.option("--bench", "benches", multiple=True, type=click.Path(exists=True, file_okay=False),
              metavar="PATH", help=BENCH_HELP)
@click.option("--kbv", envvar="KBM_KBV", type=click.Path(exists=True, file_okay=False), metavar="PATH",
              help=KBV_HELP)
@click.pass_context
def cli(ctx: click.Context, store: str | None, kernelbench: str | None, benches: tuple[str, ...],
        kbv: str | None) -> None:
    """Measure how good a GPU-kernel benchmark's correctness checker is, by mutation analysis.

    Your own benchmark: `kbm init-bench DIR`, then `kbm --bench DIR check` (docs/packs.md).
    """
    ctx.obj = Context(store, kernelbench, benches, kbv)


for _module in (substrate_cmds, mutation_cmds, evaluation_cmds, analysis_cmds, submission_cmds, output_cmds):
    for _command in _module.COMMANDS:
        cli.add_command(_command)


def main() -> None:
    """Console-script entry point."""
    if hasattr(signal, "SIGUSR1"):  # `kill -USR1 PID` prints every thread's stack, e.g. of a run that will not stop
        faulthandler.register(signal.SIGUSR1, all_threads=True)
    cli(prog_name="kbm")
