"""Protocol files, adapters as plug-ins, and the audit command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from kbm_toolkit.cli import cli
from kbm_toolkit.errors import KbmError
from kbm_toolkit.cli.exit_codes import ExitCode
from kbm_toolkit.protocols.registry import adapter_names, load_protocol
from kbm_toolkit.problems.problem_set import ProblemSet
from kbm_toolkit.problems.seeds import trial_seeds
from kbm_toolkit.protocols.protocol import load_protocols
from kbm_toolkit.store import Store

from support import seed


def test_builtin_adapters_register_by_entry_point() -> None:
    assert {"kernelbench", "kbv", "fuzz"} <= set(adapter_names())
    assert load_protocol("kernelbench-head").tolerance == 1e-4


def test_builtin_adapters_are_found_in_an_uninstalled_source_tree(monkeypatch: pytest.MonkeyPatch) -> None:
    import kbm_toolkit.protocols.registry as plugins

    monkeypatch.setattr(plugins, "entry_points", lambda group: [])
    assert plugins.adapter_names() == ["fuzz", "kbv", "kernelbench", "probe", "stress"]
    assert load_protocol("fuzz-shapes").name == "fuzz-shapes"
    assert load_protocol("kernelbench-stress").name == "kernelbench-stress"  # the kb-stress step's, on the GPU box


def test_kernelbench_protocol_is_the_official_check(demo: ProblemSet) -> None:
    specs = load_protocol("kernelbench").specs(demo.get("demo/1"))
    assert [s.seed for s in specs] == trial_seeds(5)
    assert load_protocol("kernelbench").tolerance == 1e-2


def test_kbv_scales_floating_inputs_on_seeded_configs(demo: ProblemSet) -> None:
    kbv = load_protocol("kbv")
    specs = kbv.specs(demo.get("demo/1"))
    hidden = specs[5:]
    assert [dict(s.transforms[0][1])["by"] for s in hidden] == [1.0, 3.0, 0.01, -1.0]
    assert [s.seed for s in hidden] == trial_seeds(9)[5:]
    assert kbv.tolerance == 1e-3 and kbv.drop_nonfinite_reference


def test_kbv_excludes_constant_output_problems(tmp_path: Path) -> None:
    from kbm_toolkit.problems.problem import Problem

    problem = Problem("level2/23_Conv3d_GroupNorm_Mean", "level2", 23, "Conv3d_GroupNorm_Mean", tmp_path, "kernelbench")
    assert load_protocol("kbv").specs(problem) == []


def test_fuzz_redraws_six_decades_and_the_shape_variant_varies_sizes(demo: ProblemSet) -> None:
    fuzz = load_protocol("fuzz").specs(demo.get("demo/1"))
    assert [s.base for s in fuzz].count("loguniform") == 5 and fuzz[5].params == (1e-3, 1e3)
    shapes = load_protocol("fuzz-shapes").specs(demo.get("demo/1"))
    varied = {dict(s.shape).get("dim") for s in shapes} | {dict(s.shape).get("batch_size") for s in shapes}
    assert {1, 3, 7, 256, 1025} <= varied
    # smallest against the official size first: --first-kill runs the growing ones on fewer mutants;
    # none grows a size past twice its official value (batch_size 16 to 256 or 1025 is left out)
    official = demo.get("demo/1").constants()
    growth = [v / official[k] for s in shapes[10:] for k, v in dict(s.shape).items()]
    assert len(growth) > 5 and growth == sorted(growth) and growth[0] < 1 and growth[-1] <= 2
    assert official["batch_size"] * 2 < 256 and {dict(s.shape).get("batch_size") for s in shapes} <= {None, 1, 3, 7}
    # a shape the problem cannot take (its reference raises) is no test: fuzz-shapes drops it, while
    # fuzz, whose inputs all keep the official shapes, counts a non-finite reference against the kernel
    assert load_protocol("fuzz-shapes").drop_nonfinite_reference and not load_protocol("fuzz").drop_nonfinite_reference
    # a small `dim` is an axis (level2/24's): fuzz-shapes as shipped leaves it as it is
    assert load_protocol("fuzz-shapes").config["dim_axis_at_most"] == 4



def test_fuzz_shapes_can_cap_how_far_an_input_grows_a_size() -> None:
    import importlib.util

    from kbm_toolkit.protocols.builtin import fuzz

    spec = importlib.util.spec_from_file_location("fuzz_shapes", fuzz() / "shapes.py")
    shapes = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(shapes)
    constants = {"batch_size": 64, "dim": 4096, "kernel_size": 3}  # kernel_size is a parameter, not a size
    every = shapes.boundary_shapes(None, constants, {"values": [1, 3, 7, 256, 1025]})
    capped = shapes.boundary_shapes(None, constants, {"values": [1, 3, 7, 256, 1025], "max_growth": 2})
    assert len(every) == 10 and every[-1]["shape"] == {"batch_size": 1025}  # 16x: last
    assert [tuple(*r["shape"].items()) for r in capped] == [  # batch_size 256 (4x) and 1025 (16x) left out
        ("dim", 1), ("dim", 3), ("dim", 7), ("batch_size", 1), ("batch_size", 3), ("dim", 256), ("batch_size", 7),
        ("dim", 1025)]
    # a `dim` of a tensor's rank or less is the axis an operation reduces (level2/24's minimum): no size
    assert shapes.boundary_shapes(None, {"batch_size": 64, "dim": 2}, {"values": [1, 3], "dim_axis_at_most": 4}) == [
        {"shape": {"batch_size": 1}, "label": "shape batch_size=1"},
        {"shape": {"batch_size": 3}, "label": "shape batch_size=3"}]


README_EXAMPLE = """
[protocol]
name = "my-check"
description = "three official trials and a negated one, at 1e-3"
tolerance = 1e-3

[[inputs]]
trials = 3
label = "official trial {index}"

[[inputs]]
seed_index = 3
transforms = [{ op = "scale", by = -1.0 }]
label = "negated"
"""


def test_a_protocol_by_path_needs_no_installation(tmp_path: Path, demo: ProblemSet) -> None:
    folder = tmp_path / "my_protocol"
    folder.mkdir()
    (folder / "protocol.toml").write_text(README_EXAMPLE)
    for ref in (folder, folder / "protocol.toml"):
        protocol = load_protocol(str(ref))
        assert protocol.name == "my-check"
        assert [s.label for s in protocol.specs(demo.get("demo/1"))] == [
            "official trial 0", "official trial 1", "official trial 2", "negated"]


BAD = {
    "no_protocol_table": ("[[inputs]]\ntrials = 1\n", "missing [protocol] table"),
    "bad_tolerance": ('[protocol]\nname = "x"\ntolerance = "loose"\n[[inputs]]\ntrials = 1\n',
                      "x: tolerance must be a positive number"),
    "unknown_protocol_key": ('[protocol]\nname = "x"\ntolerance = 1e-3\ntol = 1\n[[inputs]]\ntrials = 1\n',
                             "[protocol]: unknown key 'tol'"),
    "unknown_input_key": ('[protocol]\nname = "x"\ntolerance = 1e-3\n[[inputs]]\ntrial = 1\n',
                          "inputs #1: unknown key 'trial'"),
    "bad_transform": ('[protocol]\nname = "x"\ntolerance = 1e-3\n[[inputs]]\ntrials = 1\ntransforms = [{ op = "shift" }]\n',
                      "inputs #1: unknown input transform 'shift'"),
    "negative_trials": ('[protocol]\nname = "x"\ntolerance = 1e-3\n[[inputs]]\ntrials = -2\n',
                        "inputs #1: trials must be a non-negative integer"),
    "no_inputs": ('[protocol]\nname = "x"\ntolerance = 1e-3\n', "x: no [[inputs]] and no module"),
    "missing_module": ('[protocol]\nname = "x"\ntolerance = 1e-3\nmodule = "gone.py"\n', "x: module gone.py not found"),
    "not_toml": ('[protocol\nname = "x"', "not valid TOML"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_malformed_protocol_files_name_file_key_and_reason(tmp_path: Path, case: str) -> None:
    text, words = BAD[case]
    path = tmp_path / "protocol.toml"
    path.write_text(text)
    with pytest.raises(KbmError) as e:  # typed, so the CLI words it as one line
        load_protocols(tmp_path)
    assert str(path) in str(e.value) and words in str(e.value)


def test_unknown_adapter_lists_the_installed_ones() -> None:
    result = CliRunner().invoke(cli, ["audit", "--adapter", "nope"])
    assert result.exit_code == ExitCode.BAD_INPUT and "installed: " in result.output and "kbv" in result.output


@pytest.fixture
def seeded_db(tmp_path: Path, demo: ProblemSet) -> str:
    store = Store(tmp_path / "s.db")
    seed(store, demo.get("demo/1"))
    store.close()
    return str(tmp_path / "s.db")


def test_audit_prints_provenance_first_and_the_score(seeded_db: str) -> None:
    result = CliRunner().invoke(cli, ["--store", seeded_db, "audit", "-a", "kbv", "--vs", "kernelbench",
                                      "--denominator", "kernelbench", "--denominator", "kbv"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].startswith("Cells from test GPU (")
    assert "Detects 100.0% of 3 mutants witnessed at 0.001 by any of kbv, kernelbench" in " ".join(result.output.split())
    assert "+66.7 points = +33.3 from inputs +33.3 from tolerance" in result.output
    assert "False rejections (inputs on which the correct kernel fails): 1" in result.output


def test_audit_json_and_fail_under(seeded_db: str) -> None:
    args = ["--store", seeded_db, "audit", "-a", "kernelbench", "--denominator", "kernelbench", "--denominator", "kbv"]
    result = CliRunner().invoke(cli, [*args, "--json"])
    report = json.loads(result.output)
    # B, which only kbv's 1e-3 sees, is no witness against kernelbench's 1e-2 (the paper's accounting)
    assert report["witnessed"] == 2 and report["detected"] == 1 and report["protocol"] == "kernelbench"
    assert json.loads(CliRunner().invoke(cli, [*args, "--json", "--accounting", "union"]).output)["witnessed"] == 3
    assert CliRunner().invoke(cli, [*args, "--fail-under", "40"]).exit_code == 0
    assert CliRunner().invoke(cli, [*args, "--fail-under", "60"]).exit_code == ExitCode.BELOW_THRESHOLD


def test_the_readme_protocol_example_loads(tmp_path: Path, demo: ProblemSet) -> None:
    from support import REPO

    readme = (REPO / "README.md").read_text()
    block = readme.split("<!-- protocol-example -->", 1)[1].split("```toml", 1)[1].split("```", 1)[0]
    (tmp_path / "protocol.toml").write_text(block)
    protocol = load_protocol(str(tmp_path))
    assert protocol.name == "my-check" and len(protocol.specs(demo.get("demo/1"))) == 4


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="the no-GPU path of audit")
def test_missing_cells_are_listed_with_the_command_that_fills_them(seeded_db: str) -> None:
    store = Store(seeded_db)
    store.db.execute("delete from cells where mutant = 'A'")
    store.db.conn.commit()
    store.close()
    result = CliRunner().invoke(cli, ["--store", seeded_db, "audit", "-a", "kernelbench",
                                      "--denominator", "kernelbench", "--denominator", "kbv"])
    assert result.exit_code == 0, result.output
    assert "Not yet evaluated: 0 inputs and 5 cells on 1 problems" in result.output
    # the command runs as printed: the store it was given is kept
    assert f"kbm --store {seeded_db} run --inputs kernelbench demo/1_LeakyReLU" in " ".join(result.output.split())


def test_several_input_sources_give_their_union_once() -> None:
    from kbm_toolkit.problems.problem_set import ProblemSet
    from kbm_toolkit.evaluation.input_sources import resolve

    problem = ProblemSet.discover().get("demo/3")
    kb, kbv = resolve("kernelbench")(problem), resolve("kbv")(problem)
    both = resolve("kernelbench, kbv")(problem)
    assert [s.id for s in both] == list(dict.fromkeys(s.id for s in kb + kbv))
    assert len(both) == len(kbv) > len(kb)  # kbv holds the official five


def test_input_sources_use_the_protocols_a_run_loaded_already() -> None:
    from kbm_toolkit.evaluation.fill import source_protocols
    from kbm_toolkit.evaluation.input_sources import resolve
    from kbm_toolkit.problems.problem_set import ProblemSet

    problem = ProblemSet.discover().get("demo/3")
    parts = source_protocols("fuzz-shapes, official")
    assert parts["official"] is None and parts["fuzz-shapes"].name == "fuzz-shapes"
    specs = resolve("fuzz-shapes, official", loaded=parts)(problem)
    # its specs were made by the run's own copy (a protocol caches them): read once, made once
    assert (problem.key, str(problem.path)) in parts["fuzz-shapes"]._specs
    assert [s.id for s in specs] == [s.id for s in resolve("fuzz-shapes, official")(problem)]


def test_a_plugin_variant_named_like_a_built_in_protocol_is_left_out(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from importlib.metadata import EntryPoint

    import kbm_toolkit.protocols.registry as registry

    folder = tmp_path / "plugin"
    folder.mkdir()
    (folder / "protocol.toml").write_text('[protocol]\nname = "mine"\ntolerance = 1e-2\n[[inputs]]\ntrials = 1\n'
                                          '[[variant]]\nname = "kbv"\ntolerance = 0.5\n')
    module = tmp_path / "kbm_test_plugin.py"
    module.write_text(f"from pathlib import Path\ndef adapter():\n    return Path({str(folder)!r})\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(registry, "entry_points", lambda group: [EntryPoint("mine", "kbm_test_plugin:adapter", group)])
    kbv = [p for p in registry.all_protocols() if p.name == "kbv"]
    assert [p.tolerance for p in kbv] == [1e-3]  # kbm's own, not the plug-in's variant at 0.5
    assert registry.load_protocol("kbv").tolerance == 1e-3
    assert "mine" in {p.name for p in registry.all_protocols()}
    assert registry.shadowed() == ["protocol 'kbv' of adapter 'mine' is named like one of adapter 'kbv': "
                                   "it is not loaded; rename it"]


def test_a_protocol_kept_as_text_loads_as_from_its_folder_and_one_running_a_module_is_not_kept(
        tmp_path: Path) -> None:
    from kbm_toolkit.protocols.builtin import fuzz
    from kbm_toolkit.protocols.protocol import ProtocolError, load_protocols, storable_toml, stored_protocol

    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "protocol.toml").write_text(README_EXAMPLE)
    text = storable_toml(folder)
    assert text == README_EXAMPLE
    kept, from_folder = stored_protocol("my-check", text), load_protocols(folder)[0]
    assert (kept.name, kept.tolerance, kept.inputs) == (from_folder.name, from_folder.tolerance, from_folder.inputs)
    with pytest.raises(ProtocolError, match="holds no protocol named 'other'"):
        stored_protocol("other", text)
    with pytest.raises(KbmError, match="the store's protocol bad: not valid TOML"):
        stored_protocol("bad", "[protocol")
    assert storable_toml(fuzz()) is None  # fuzz-shapes runs shapes.py, which a store cannot hold


def test_merging_a_store_brings_its_kept_protocols_once(tmp_path: Path) -> None:
    from kbm_toolkit.store import Store

    mine, theirs = Store(tmp_path / "a.db"), Store(tmp_path / "b.db")
    theirs.record_protocol("my-check", README_EXAMPLE, "elsewhere/my-check")
    assert mine.merge(theirs).get("protocols") == 1 and mine.protocol_toml("my-check") == README_EXAMPLE
    assert mine.merge(theirs)["protocols"] == 0  # kept by name: the same protocol twice is one


def test_every_adapter_kbm_registers_is_found_from_a_source_tree_too() -> None:
    from kbm_toolkit.protocols.registry import BUILT_IN
    from kbm_toolkit.tomlfile import load_toml

    pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
    if not pyproject.is_file():
        pytest.skip("an installed kbm's tests: no pyproject.toml beside them")
    registered = load_toml(pyproject)["project"]["entry-points"]["kbm.adapters"]
    # the GPU box runs kbm from a checkout it never installed: entry points are not there
    assert sorted(registered) == sorted(BUILT_IN)
