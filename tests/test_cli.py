from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from kbm_toolkit import __version__
from kbm_toolkit.cli import cli
from kbm_toolkit.cli.exit_codes import ExitCode

COMMANDS = sorted(cli.commands)


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


def test_version(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["--version"])
    assert result.exit_code == 0 and __version__ in result.output


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help_with_an_example(runner: CliRunner, command: str) -> None:
    result = runner.invoke(cli, [command, "--help"])
    assert result.exit_code == 0
    assert "Example:" in result.output


def test_doctor_reports_versions_problems_and_store(runner: CliRunner, tmp_path: Path) -> None:
    result = runner.invoke(cli, ["--store", str(tmp_path / "s.db"), "doctor"])
    assert result.exit_code == 0, result.output
    for word in ("torch", "cuda-core", "NVRTC", "device", "problems (demo)", str(tmp_path / "s.db")):
        assert word in result.output


def test_problems_lists_the_demo_set(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["problems", "--level", "demo"])
    assert result.exit_code == 0 and "demo/1_LeakyReLU" in result.output


def test_check_passes_on_the_demo_substrates(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["check", "--level", "demo"])
    assert result.exit_code == 0, result.output
    assert "substrates pass the static checks" in result.output


def test_unknown_problem_is_one_line_and_bad_input_code(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["check", "NoSuchProblem"])
    assert result.exit_code == ExitCode.BAD_INPUT
    assert result.output.strip().splitlines() == [
        result.output.strip().splitlines()[0]] and "no problem matches 'NoSuchProblem'" in result.output


def test_kernelbench_option_must_be_a_checkout(runner: CliRunner, tmp_path: Path) -> None:
    result = runner.invoke(cli, ["--kernelbench", str(tmp_path), "problems"])
    assert result.exit_code == ExitCode.BAD_INPUT
    assert "not a KernelBench checkout" in result.output


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="the CPU path of gate")
def test_gate_without_a_gpu_compiles_and_says_so(runner: CliRunner, tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    result = runner.invoke(cli, ["--store", str(store), "gate", "demo/1"])
    assert result.exit_code == 0, result.output
    assert "NVRTC compile" in result.output and "No CUDA device visible" in result.output
    from kbm_toolkit.store import Store

    (row,) = list(Store(store).substrates())
    assert row["problem"] == "demo/1_LeakyReLU" and row["image_hash"]


def test_gate_compile_only(runner: CliRunner, tmp_path: Path) -> None:
    result = runner.invoke(cli, ["--store", str(tmp_path / "s.db"), "gate", "--compile-only", "--level", "demo"])
    assert result.exit_code == 0, result.output
    assert "demo/1_LeakyReLU" in result.output


def test_first_kill_needs_protocols_for_inputs(runner: CliRunner, tmp_path: Path) -> None:
    result = runner.invoke(cli, ["--store", str(tmp_path / "s.db"), "run", "--inputs", "kbv,official", "--first-kill"])
    assert result.exit_code == 2
    assert "'official' is not one" in result.output


def test_run_dry_run_plans_on_the_shipped_pool_without_a_gpu(runner: CliRunner, tmp_path: Path) -> None:
    from kbm_toolkit.store import Store, shipped_store_path

    spec = tmp_path / "fresh.toml"  # two trials no stored run has drawn: every cell waits on its check
    spec.write_text('[protocol]\nname = "fresh"\ntolerance = 0.01\n[[inputs]]\ntrials = 2\nseed_offset = 40\n')
    path = shipped_store_path("demo")
    mutants = Store(path, readonly=True).db.execute(
        "select count(*) from mutants where problem like 'demo/3_%' and status = 'distinct'").fetchone()[0]
    before = path.stat().st_mtime_ns
    result = runner.invoke(cli, ["--store", "@demo", "run", "demo/3", "--inputs", str(spec), "--dry-run"])
    assert result.exit_code == 0, result.output
    assert (f"Dry run: 0 cells on checked inputs, {mutants:,} mutants to compile, on 1 problem; 2 inputs to "
            f"check first, with at most {2 * mutants:,} cells more where they pass.") in " ".join(result.output.split())
    assert path.stat().st_mtime_ns == before
    result = runner.invoke(cli, ["--store", "@demo", "run", "demo/3", "--inputs", "kernelbench", "--dry-run"])
    assert result.exit_code == 0 and "Dry run: 0 cells on checked inputs, 0 mutants" in result.output


def test_audit_sample_scores_a_narrower_share_of_the_same_store(runner: CliRunner) -> None:
    import json

    def audit(*extra: str) -> dict:
        result = runner.invoke(cli, ["--store", "@demo", "audit", "-a", "kernelbench", "--json", *extra])
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)

    whole, half = audit(), audit("--sample", "0.5")
    assert whole["sample"] is None and half["sample"]["share"] == 0.5
    assert 0 < half["witnessed"] < whole["witnessed"]
    assert half["sample"]["mutants"] < half["sample"]["distinct"]


def test_audit_level_scores_one_level_of_the_shipped_pool(runner: CliRunner) -> None:
    import json

    def audit(*extra: str) -> dict:
        result = runner.invoke(cli, ["--store", "@kernelbench", "audit", "-a", "kernelbench", "--json", "--no-run",
                                     *extra])
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)

    whole, one, two = audit(), audit("--level", "level1"), audit("--level", "level2")
    assert 0 < one["witnessed"] < whole["witnessed"] and 0 < two["witnessed"] < whole["witnessed"]
    assert one["witnessed"] + two["witnessed"] == whole["witnessed"]
    assert one["missed"] + two["missed"] == whole["missed"]
    result = runner.invoke(cli, ["--store", "@kernelbench", "audit", "-a", "kernelbench", "--level", "level9"])
    assert result.exit_code == ExitCode.USAGE
    assert "--level level9: no problem of it has mutants in this store (levels with some: level1, level2)" in result.output


def _shares_left_by_a_stopped_run(path: Path) -> list[str]:
    """The shipped demo store copied to `path` as a wider run left it: every problem at 50%, then a
    run to 75% stopped after the first problem; the problem keys, sorted."""
    import shutil

    from kbm_toolkit.store import Store, shipped_store_path

    shutil.copy(shipped_store_path("demo"), path)
    store = Store(path)
    keys = sorted(store.evaluated_problems())
    with store.db.conn:
        store.db.execute(f"update problems set sample = 0.5 where key in ({', '.join('?' * len(keys))})", keys)
        store.db.execute("update problems set sample = 0.75 where key = ?", [keys[0]])
    store.close()
    return keys


def test_the_sample_summary_counts_the_problems_at_each_share(tmp_path: Path) -> None:
    from kbm_toolkit.store import Store

    keys = _shares_left_by_a_stopped_run(tmp_path / "s.db")
    summary = Store(tmp_path / "s.db").sample_summary()
    assert (summary["least"], summary["share"]) == (0.5, 0.75)
    assert summary["problems_at"] == [[0.5, len(keys) - 1], [0.75, 1]]


def test_audit_names_the_shares_an_interrupted_wider_run_left(runner: CliRunner, tmp_path: Path) -> None:
    keys = _shares_left_by_a_stopped_run(tmp_path / "s.db")
    result = runner.invoke(cli, ["--store", str(tmp_path / "s.db"), "audit", "-a", "kernelbench"])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert f"a 50–75% sample of each problem's ({len(keys) - 1} problems at 50%, 1 problem at 75%" in text
    assert "--sample 0.5 scores all alike" in text


def test_a_problem_taken_to_the_whole_pool_counts_at_a_full_share(tmp_path: Path) -> None:
    from kbm_toolkit.store import Store

    keys = _shares_left_by_a_stopped_run(tmp_path / "s.db")
    store = Store(tmp_path / "s.db")
    with store.db.conn:  # the run to 100% finished its first problem: a whole pool's share is stored as null
        store.db.execute("update problems set sample = null where key = ?", [keys[0]])
    summary = store.sample_summary()
    assert summary["problems_at"] == [[0.5, len(keys) - 1], [1.0, 1]] and summary["problems"] == len(keys)
    assert summary["mutants"] < summary["distinct"] == len(list(store.mutants(status="distinct")))


def test_an_interrupted_run_says_what_it_stored_and_exits_130(runner: CliRunner, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    import kbm_toolkit.evaluation.device as device
    import kbm_toolkit.evaluation.fill as fill
    from kbm_toolkit.store import Store

    def interrupted(store: Store, *args: object, **kw: object) -> None:
        run = store.start_run("evaluate", {"gpu": "fake"})
        with store.db.conn:
            for i in range(3):
                store.db["cells"].insert({"mutant": f"m{i}", "input": "i", "run": run, "outcome": "pass"})
        raise KeyboardInterrupt

    monkeypatch.setattr(device, "describe_device", lambda: {"cuda": True, "arch": "sm_90", "gpu": "fake"})
    monkeypatch.setattr(fill, "run_evaluation", interrupted)
    result = runner.invoke(cli, ["--store", str(tmp_path / "s.db"), "run", "--inputs", "kernelbench", "demo/1"])
    assert result.exit_code == ExitCode.INTERRUPTED == 130
    assert "Stopped: run 1 stored 3 cells; the same command resumes from them." in result.output


def test_sigusr1_prints_every_threads_stack_and_the_command_goes_on() -> None:
    import signal
    import subprocess
    import sys
    import time

    # a command stuck in a wait, as a run that will not stop was on the H200
    code = ("import sys, time, kbm_toolkit.cli.group as c\n"
            "def stuck(**_):\n    print('up', flush=True)\n    time.sleep(3)\n    print('went on', flush=True)\n"
            "c.cli = stuck\nc.main()\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline() == "up\n"
    time.sleep(0.2)
    proc.send_signal(signal.SIGUSR1)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0 and out == "went on\n"
    assert "most recent call first" in err and "in stuck" in err, err


def test_a_reader_that_stops_reading_stops_kbm_quietly() -> None:
    import subprocess
    import sys

    # the whole pool's mutant list is far longer than a pipe holds, so kbm is still writing when head stops
    kbm = subprocess.Popen([sys.executable, "-m", "kbm_toolkit", "--store", "@kernelbench", "mutants"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert kbm.stdout is not None and kbm.stderr is not None
    assert kbm.stdout.readline().strip()
    kbm.stdout.close()
    error = kbm.stderr.read()
    assert kbm.wait(timeout=60) == ExitCode.PIPE_CLOSED
    assert error == b""


@pytest.mark.parametrize("command", [["mutate"], ["check"], ["targets", "--emit", "OUT"]])
def test_a_level_with_no_problems_here_is_one_line_not_a_silent_nothing(
        runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: list[str]) -> None:
    monkeypatch.delenv("KBM_KERNELBENCH", raising=False)
    command = [str(tmp_path / "out") if word == "OUT" else word for word in command]
    result = runner.invoke(cli, ["--store", str(tmp_path / "s.db"), *command, "--level", "level1"])
    assert result.exit_code == ExitCode.BAD_INPUT, result.output
    (line,) = result.output.splitlines()
    assert "no problem of level1 with a substrate" in line and "--kernelbench" in line
    assert not (tmp_path / "out").exists()  # nothing emitted


def test_a_run_with_nothing_to_evaluate_says_why(runner: CliRunner, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KBM_KERNELBENCH", raising=False)
    result = runner.invoke(cli, ["--store", str(tmp_path / "s.db"), "run", "--inputs", "kbv", "--level", "demo"])
    assert result.exit_code == ExitCode.BAD_INPUT, result.output
    assert "no problem of demo here has mutants in" in result.output and "kbm mutate" in result.output


def test_tables_printed_through_rich_stop_on_a_closed_pipe_like_the_rest() -> None:
    from kbm_toolkit.report import terminal

    class Closed:
        def write(self, text: str) -> int:
            raise BrokenPipeError

        def flush(self) -> None:
            raise BrokenPipeError

    out = terminal.console(width=100)
    out.file = Closed()
    with pytest.raises(BrokenPipeError):  # Rich alone exits 1; the CLI turns this into PIPE_CLOSED
        out.print("a table row")
