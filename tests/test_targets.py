"""The targeted input generator and the validity-ceiling search (no GPU: checks are hand-made)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kbm_toolkit.cli import cli
from kbm_toolkit.problems.problem_set import ProblemSet
from kbm_toolkit.protocols.protocol import load_protocols
from kbm_toolkit.analysis.targets import CEILING_SCALES, ceiling, ceiling_probes, emit_targets, targeted_specs


def checks_valid_up_to(probes: list, mixed: float, same: float) -> dict:
    out = {}
    for spec in probes:
        kind, scale = spec.label.split()[1], float(spec.label.split("x")[-1])
        limit = mixed if kind == "sign-mixed" else same
        out[spec.id] = {"valid": True, "margin": 1e-6 if scale <= limit else 5e-2}
    return out


def test_ceiling_is_the_largest_scale_with_every_smaller_one_valid(demo: ProblemSet) -> None:
    probes = ceiling_probes(demo.get("demo/2"))
    assert len(probes) == 2 * len(CEILING_SCALES)
    assert ceiling(checks_valid_up_to(probes, 30.0, 1e3), probes, 1e-2) == {"sign-mixed": 30.0, "same-sign": 1e3}
    checks = checks_valid_up_to(probes, 30.0, 1e3)
    hole = next(s for s in probes if s.label == "ceiling same-sign x10")
    checks[hole.id] = {"valid": True, "margin": 0.5}  # invalid at 10: the ceiling stops below it
    assert ceiling(checks, probes, 1e-2)["same-sign"] == 3.0
    assert ceiling({}, probes, 1e-2) == {"sign-mixed": None, "same-sign": None}  # not measured


def test_targets_cover_every_family_probe_under_the_ceiling(demo: ProblemSet) -> None:
    problem = demo.get("demo/2")
    specs = targeted_specs(problem, {"sign-mixed": 30.0, "same-sign": 100.0}, [{"dim": 1001}])
    labels = " | ".join(s.label for s in specs)
    for words in ("sign-mixed normal x30", "negative", "same-sign large x100", "spike final row", "spike final term",
                  "spike first term", "spike last element", "ties", "NaN", "near-constant", "re-drawn parameters",
                  "odd shape dim=1001"):
        assert words in labels
    scales = [dict(t[1]).get("by") for s in specs for t in s.transforms if t[0] == "scale"]
    assert max(scales) <= 100.0
    assert [s.id for s in specs] == [s.id for s in targeted_specs(problem, {"sign-mixed": 30.0, "same-sign": 100.0},
                                                                   [{"dim": 1001}])]


def test_emitted_targets_load_as_a_protocol(tmp_path: Path, demo: ProblemSet) -> None:
    problem = demo.get("demo/1")
    specs = targeted_specs(problem, {"sign-mixed": 3.0, "same-sign": 10.0}, [])
    (tmp_path / "protocol.toml").write_text(emit_targets({problem.key: specs}, "targets", 1e-2))
    (protocol,) = load_protocols(tmp_path)
    assert [s.id for s in protocol.specs(problem)] == [s.id for s in specs]
    assert protocol.drop_nonfinite_reference


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="the no-GPU path of targets")
def test_cli_targets_without_a_gpu_uses_scale_one_and_says_so(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["--store", str(tmp_path / "s.db"), "targets", "demo/1", "--emit",
                                      str(tmp_path / "t")])
    assert result.exit_code == 0, result.output
    assert "sign-mixed not measured (x1 used)" in result.output
    assert (tmp_path / "t" / "protocol.toml").is_file()


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="the no-GPU path of targets")
def test_cli_targets_from_a_shipped_store_uses_its_checks(tmp_path: Path) -> None:
    # read-only: no GPU means nothing to measure, so the stored ceilings and input checks decide
    result = CliRunner().invoke(cli, ["--store", "@demo", "targets", "--level", "demo", "--emit", str(tmp_path / "t")])
    assert result.exit_code == 0, result.output
    assert "not measured" not in result.output  # every demo ceiling is in the store
    assert "left out 'target NaN in the last element'" in result.output and "not checked yet" not in result.output


def test_ceiling_noise_gathers_the_correct_kernels_margins_by_kind_and_scale(demo: ProblemSet) -> None:
    from kbm_toolkit.analysis.matrix import load_matrices
    from kbm_toolkit.analysis.targets import ceiling_noise
    from kbm_toolkit.store import Store

    store = Store(":memory:")
    problem = demo.get("demo/1")
    store.record_problem(problem)
    probes = ceiling_probes(problem)
    store.record_inputs(probes, "targets")
    run = store.start_run("evaluate", {"gpu": "test GPU"})
    for k, spec in enumerate(probes):  # margins grow with the scale; the last probe's reference is non-finite
        check = {"input": spec.id, "valid": True, "outcome": "pass", "margin": 1e-7 * (k + 1), "max_abs": 1e-7}
        if k == len(probes) - 1:
            check = {"input": spec.id, "valid": False, "note": "reference is non-finite on this input"}
        store.record_input_check("h", run, check)
    store.db["mutants"].insert({"id": "A", "problem": problem.key, "substrate_hash": "h", "rule": "r",
                                "family": "arithmetic", "status": "distinct", "name": "A"})
    noise = ceiling_noise(load_matrices(store))
    assert sorted(noise["sign-mixed"]) == list(CEILING_SCALES)
    assert noise["sign-mixed"][CEILING_SCALES[0]] == [pytest.approx(1e-7)]
    assert noise["same-sign"][CEILING_SCALES[1]] == [pytest.approx(4e-7)]
    assert CEILING_SCALES[-1] not in noise["same-sign"]  # no margin on a non-finite reference


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="the no-GPU path of targets")
def test_an_emitted_protocol_is_kept_in_the_store_and_audits_name_it_once_its_folder_is_gone(tmp_path: Path) -> None:
    import shutil

    from kbm_toolkit.store.shipped import shipped_store_path

    store = tmp_path / "mine.db"
    shutil.copy(shipped_store_path("demo"), store)
    folder = tmp_path / "my-targets"
    runner = CliRunner()
    emitted = runner.invoke(cli, ["--store", str(store), "targets", "--level", "demo", "--emit", str(folder)])
    assert emitted.exit_code == 0, emitted.output
    text = (folder / "protocol.toml").read_text()
    shutil.rmtree(folder)
    audit = runner.invoke(cli, ["--store", str(store), "audit", "--adapter", "my-targets", "--no-run"])
    assert audit.exit_code == 0, audit.output
    assert "my-targets: taxonomy-driven targeted inputs" in audit.output
    from kbm_toolkit.store import Store

    kept = Store(store, readonly=True)
    assert kept.protocol_names() == ["my-targets"] and kept.protocol_toml("my-targets") == text
    listed = runner.invoke(cli, ["--store", str(store), "adapters"])
    assert [line.split()[:2] for line in listed.stdout.splitlines() if line.startswith("store ")] == \
        [["store", "my-targets"]]
    missing = runner.invoke(cli, ["--store", str(store), "audit", "--adapter", "other-targets", "--no-run"])
    assert missing.exit_code != 0 and "no adapter, protocol or path 'other-targets'" in missing.output
    shipped = runner.invoke(cli, ["--store", "@demo", "audit", "--adapter", "my-targets", "--no-run"])
    assert shipped.exit_code != 0  # kept by that store only


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="the no-GPU path of targets")
def test_a_kept_protocol_is_a_witness_of_the_default_denominator(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    import json
    import shutil

    from kbm_toolkit.store.shipped import shipped_store_path

    store = tmp_path / "mine.db"
    shutil.copy(shipped_store_path("demo"), store)
    runner = CliRunner()
    before = json.loads(runner.invoke(cli, ["--store", str(store), "audit", "-a", "kernelbench", "--json"]).stdout)
    emitted = runner.invoke(cli, ["--store", str(store), "targets", "--level", "demo", "--emit", str(tmp_path / "t")])
    assert emitted.exit_code == 0, emitted.output
    shutil.rmtree(tmp_path / "t")  # kept in the store, it is found there
    after = json.loads(runner.invoke(cli, ["--store", str(store), "audit", "-a", "kernelbench", "--json"]).stdout)
    assert after["denominator"] == sorted([*before["denominator"], "t"])
    # a folder named like it where kbm runs (a stale copy, one input) changes nothing: the store's is the witness
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "protocol.toml").write_text('[protocol]\nname = "t"\ntolerance = 0.01\n\n[[inputs]]\n'
                                                  'problem = "demo/1_LeakyReLU"\nseed = 1\nbase = "official"\n')
    monkeypatch.chdir(tmp_path)
    stale = json.loads(runner.invoke(cli, ["--store", str(store), "audit", "-a", "kernelbench", "--json"]).stdout)
    assert (stale["witnessed"], stale["missed"]) == (after["witnessed"], after["missed"])
    # the demo pool ran on the targeted inputs: a mutant only they kill is witnessed now, and missed
    assert after["witnessed"] > before["witnessed"] and after["missed"] > before["missed"]
    named = json.loads(runner.invoke(cli, ["--store", str(store), "audit", "-a", "kernelbench", "--json",
                                           *[a for p in before["denominator"] for a in ("--denominator", p)]]).stdout)
    assert (named["denominator"], named["witnessed"]) == (before["denominator"], before["witnessed"])


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="the no-GPU path of targets")
def test_kbm_run_finds_a_kept_protocol_by_name_for_inputs_and_survivors(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    # what the audit tells you to type to fill a kept protocol's cells (`kbm run --inputs NAME`) must run
    import shutil

    import kbm_toolkit.evaluation.device as device
    import kbm_toolkit.evaluation.fill as fill
    from kbm_toolkit.protocols.registry import load_protocol
    from kbm_toolkit.store import Store
    from kbm_toolkit.store.shipped import shipped_store_path

    store = tmp_path / "mine.db"
    shutil.copy(shipped_store_path("demo"), store)
    runner = CliRunner()
    assert runner.invoke(cli, ["--store", str(store), "targets", "--level", "demo", "--emit",
                               str(tmp_path / "kept")]).exit_code == 0
    shutil.rmtree(tmp_path / "kept")
    monkeypatch.chdir(tmp_path)  # no folder of that name here: only the store can say what `kept` is
    asked: list[tuple] = []
    monkeypatch.setattr(device, "describe_device", lambda: {"cuda": True, "arch": "sm_90", "gpu": "fake"})
    from kbm_toolkit.evaluation.stats import RunSummary

    def recorded(store: Any, problems: list, specs: Any, source: str, arch: str, env: dict, options: Any) -> Any:
        asked.append((problems, specs, options))  # what the run was given; nothing evaluated
        return RunSummary()

    monkeypatch.setattr(fill, "run_evaluation", recorded)
    result = runner.invoke(cli, ["--store", str(store), "run", "--inputs", "kept", "--survivors-of", "kept",
                                 "--first-kill", "--level", "demo"])
    assert result.exit_code == 0, result.output
    (problems, specs, options), = asked
    kept = load_protocol("kept", stored=Store(store, readonly=True).protocol_toml)
    assert [s.id for s in specs(problems[0])] == [s.id for s in kept.specs(problems[0])] != []
    assert [p.name for p in options.first_kill] == ["kept"] and options.only is not None
    missing = runner.invoke(cli, ["--store", str(store), "run", "--inputs", "other", "--level", "demo"])
    assert missing.exit_code != 0 and "no input source 'other'" in missing.output


@pytest.mark.parametrize("note, checked_again", [
    ("reference raised TypeError: unhashable type: 'list'", True),  # maybe kbm's own fault, since fixed
    ("reference is non-finite on this input", False),              # the input's own: it stands
])
def test_targets_check_an_input_whose_reference_raised_again(tmp_path: Path, demo: ProblemSet,
                                                              monkeypatch: pytest.MonkeyPatch, note: str,
                                                              checked_again: bool) -> None:
    from kbm_toolkit.evaluation import target_checks
    from kbm_toolkit.problems.substrate import substrate_for
    from kbm_toolkit.store import Store

    problem = demo.get("demo/1")
    store = Store(tmp_path / "kbm.db")
    store.record_problem(problem)
    sh = substrate_for(problem).content_hash
    probes = ceiling_probes(problem)
    generated = targeted_specs(problem, ceiling({s.id: {"valid": True, "margin": 1e-6} for s in probes}, probes, 1e-2),
                               substrate_for(problem).gate_shapes, 1)
    store.record_inputs(probes + generated, "targets")
    run = store.start_run("evaluate", {"gpu": "test GPU"})
    for spec in probes + generated:
        store.record_input_check(sh, run, {"input": spec.id, "valid": True, "outcome": "pass", "margin": 1e-6})
    store.record_input_check(sh, run, {"input": generated[0].id, "valid": False, "note": note})
    asked: list[tuple[str, list[str]]] = []
    monkeypatch.setattr(target_checks, "run_evaluation",
                        lambda _store, todo, _specs, source, *rest: asked.append((source, [p.key for p in todo])))
    target_checks.make_targets(store, [problem], tmp_path / "t", {"cuda": True, "gpu": "test GPU", "arch": "sm_90"})
    assert asked == ([("targets", [problem.key])] if checked_again else [])
