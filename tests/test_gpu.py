"""GPU tests: run with `pytest -m gpu` on a machine with a CUDA device (an H200 for the record)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from kbm_toolkit.errors import ContractViolation
from kbm_toolkit.cuda.kernels import LoadedKernel
from kbm_toolkit.evaluation.gate_task import run_gate
from kbm_toolkit.cuda.nvrtc import compile_source
from kbm_toolkit.problems.problem_set import ProblemSet
from kbm_toolkit.cuda.kernels import device_arch
from kbm_toolkit.problems.substrate import substrate_for
from kbm_toolkit.problems.tensors import build_model, draw_inputs

from support import load_script

pytestmark = pytest.mark.gpu

DEMO = [p.key for p in ProblemSet.discover().select(level="demo")]


@pytest.mark.parametrize("key", DEMO)
def test_demo_substrate_passes_its_gate(demo: ProblemSet, key: str) -> None:
    problem = demo.get(key)
    substrate = substrate_for(problem)
    image = compile_source(substrate.source, device_arch())
    result = run_gate(problem, substrate, image)
    assert result.status == "passed", (result.message, [(r.label, r.outcome, r.margin) for r in result.rows])
    assert result.worst_margin is not None and result.worst_margin <= 1e-3


def test_unwritten_outputs_are_poisoned_and_fail(demo: ProblemSet, tmp_path: Path) -> None:
    # A kernel that writes nothing must fail the comparison, not pass on stale memory.
    problem = demo.get("demo/1")
    folder = tmp_path / "demo" / "1_LeakyReLU"
    folder.mkdir(parents=True)
    (folder / "kernel.cu").write_text('extern "C" __global__ void leaky_relu(const float* x, float* out, '
                                      'long long n, float s) {}\n')
    (folder / "launch.py").write_text((Path(substrate_for(problem).launcher_path)).read_text())
    substrate = substrate_for(problem, tmp_path)
    result = run_gate(problem, substrate, compile_source(substrate.source, device_arch()))
    assert result.status == "failed" and result.rows[0].outcome == "nonfinite"


def test_guard_holds_on_the_gpu(demo: ProblemSet, tmp_path: Path) -> None:
    problem = demo.get("demo/1")
    folder = tmp_path / "demo" / "1_LeakyReLU"
    folder.mkdir(parents=True)
    (folder / "kernel.cu").write_text(substrate_for(problem).source)
    (folder / "launch.py").write_text("import torch\n\ndef launch(k, model, x):\n    return torch.nn.functional.leaky_relu(x)\n")
    substrate = substrate_for(problem, tmp_path)
    kernel = LoadedKernel(substrate, compile_source(substrate.source, device_arch()))
    module = problem.load()
    with pytest.raises(ContractViolation):
        kernel(build_model(module, "cuda"), draw_inputs(module, 1, "cuda"))


def test_inputs_are_built_on_the_gpu(demo: ProblemSet) -> None:
    (x,) = draw_inputs(demo.get("demo/1").load(), 5, "cuda")
    assert x.is_cuda and x.dtype == torch.float32


def test_forced_crash_and_hang_mutants_are_quarantined_without_stopping_the_run(tmp_path: Path,
                                                                                 demo: ProblemSet) -> None:
    from kbm_toolkit.evaluation.options import RunOptions
    from kbm_toolkit.evaluation.run import run_evaluation
    from kbm_toolkit.mutation.mutants import generate
    from kbm_toolkit.mutation.screening import screen
    from kbm_toolkit.mutation.rules import _parse, load_rules
    from kbm_toolkit.evaluation.input_sources import official_specs
    from kbm_toolkit.store import Store

    crash = _parse({"name": "force-crash", "family": "indexing", "description": "write far out of bounds",
                    "pattern": r"out\[i\] = ", "replacement": "out[i + (1LL << 40)] = "}, Path("t.toml"), 0)
    hang = _parse({"name": "force-hang", "family": "synchronization", "description": "spin forever",
                   "pattern": r"if \(i < n\) \{", "replacement": "{ while (clock64() >= 0) {} } if (i < n) {"},
                  Path("t.toml"), 0)
    rules = [crash, hang, *[r for r in load_rules() if r.name == "mul2div"]]
    problem = demo.get("demo/1")
    substrate = substrate_for(problem)
    mutants = generate(substrate, rules)
    screened = screen(mutants, substrate.source, substrate.launcher_source, device_arch(), workers=2)
    assert all(s.status == "distinct" for s in screened), [(s.mutant.rule, s.status) for s in screened]
    store = Store(tmp_path / "s.db")
    store.record_problem(problem)
    store.record_rules(rules)
    store.record_mutants(problem.key, screened, {m.id: m.diff(substrate) for m in mutants}, device_arch())
    summary = run_evaluation(store, [problem], official_specs, "official", device_arch(), {"gpu": "test"},
                             RunOptions(rules=rules))
    by_rule = {m.rule: m.id for m in mutants}
    seen = {rule: [(r["input"][:6], r["outcome"], r["note"]) for r in store.db["cells"].rows_where("mutant = ?", [mid])]
            for rule, mid in by_rule.items() if rule.startswith("force")}
    assert set(summary.quarantined) == {by_rule["force-crash"], by_rule["force-hang"]}, (seen, summary)
    assert summary.problems == {problem.key: "done"}
    verdicts = store.mutant_verdicts(1e-2, problem.key)
    assert verdicts[by_rule["force-crash"]] == verdicts[by_rule["force-hang"]] == "quarantined"
    others = [m.id for m in mutants if m.rule == "mul2div"]
    assert others and all(len(store.db.execute("select 1 from cells where mutant = ?", [m]).fetchall()) == 6
                          for m in others)  # the probe and the five official trials


def test_first_kill_on_the_gpu_keeps_every_audit_with_fewer_cells(tmp_path: Path, demo: ProblemSet) -> None:
    from kbm_toolkit.evaluation.options import RunOptions
    from kbm_toolkit.evaluation.run import run_evaluation
    from kbm_toolkit.mutation.campaign import mutate_problems
    from kbm_toolkit.protocols.registry import load_protocol
    from kbm_toolkit.analysis.matrix import load_matrices
    from kbm_toolkit.analysis.score import run_protocol
    from kbm_toolkit.evaluation.input_sources import resolve
    from kbm_toolkit.store import Store

    problem = demo.get("demo/3")
    protocols = [load_protocol("kernelbench"), load_protocol("kbv")]
    stores = {}
    for name, rule in (("full", None), ("first", protocols)):
        stores[name] = Store(tmp_path / f"{name}.db")
        mutate_problems(stores[name], [problem], device_arch(), workers=2, require_gate=False)
        summary = run_evaluation(stores[name], [problem], resolve("kernelbench,kbv"), "kernelbench,kbv",
                                 device_arch(), {"gpu": "test"}, RunOptions(first_kill=rule))
        assert summary.problems == {problem.key: "done"}
    assert stores["first"].db["cells"].count < stores["full"].db["cells"].count
    # a racing mutant (a barrier removed, two threads on one element) can change its output from one
    # launch to the next: where the two runs measured the same cell apart, it is named and set aside
    compare_cells = load_script("bench/compare_cells.py").compare_cells
    racy = {d["mutant"] for d in compare_cells(tmp_path / "first.db", tmp_path / "full.db", rel=1e-6)["differing"]}
    assert len(racy) <= stores["full"].db["mutants"].count // 10, _differing(stores, racy)
    for protocol in protocols:
        for t in (1e-2, 1e-3):
            mine, theirs = (run_protocol(protocol, load_matrices(stores[s]), t) for s in ("first", "full"))
            differ = (mine.detected[problem.key] ^ theirs.detected[problem.key]) - racy
            assert not differ and not mine.missing_cells, _differing(stores, differ)


def _differing(stores: dict, mutants: set[str]) -> str:
    """Each of `mutants` with its rule and its cells in both stores, for an assertion's message."""
    lines = []
    for mid in sorted(mutants):
        rule = stores["full"].db.execute("select rule from mutants where id = ?", [mid]).fetchone()
        lines.append(f"{mid} {rule}")
        for name, store in stores.items():
            cells = store.db.execute("select input, outcome, margin, note from cells where mutant = ? order by input",
                                     [mid]).fetchall()
            lines += [f"  {name}: {c[0][:8]} {c[1]} {c[2]} {c[3]}" for c in cells]
    return "\n".join(lines)


def test_a_tf32_reference_is_computed_once_per_input_and_its_margins_stored(tmp_path: Path) -> None:
    # KernelBench's checkers run references with PyTorch's defaults: cuDNN convolutions in TF32
    import json

    from kbm_toolkit.evaluation.options import RunOptions
    from kbm_toolkit.evaluation.run import run_evaluation
    from kbm_toolkit.judging import PYTORCH_DEFAULT, margin_key
    from kbm_toolkit.problems.input_spec import official_specs
    from kbm_toolkit.store import Store

    from support import KERNELBENCH

    if not (KERNELBENCH / "KernelBench" / "level2").is_dir():
        pytest.skip("needs a KernelBench checkout")
    problems = ProblemSet.discover(KERNELBENCH)
    conv, relu = problems.get("level2/1"), problems.get("demo/1")
    store = Store(tmp_path / "s.db")
    wanted = [(PYTORCH_DEFAULT, "output", 0.0), (PYTORCH_DEFAULT, "output", 1.0)]
    run_evaluation(store, [conv, relu], lambda p: official_specs(p, 1), "test", device_arch(), {"gpu": "test"},
                   RunOptions(checks_only=True, margins=wanted))
    checks = {r["input"]: r for r in store.db["input_checks"].rows}
    by_problem = {p.key: checks[official_specs(p, 1)[0].id] for p in (conv, relu)}
    for key, check in by_problem.items():
        assert check["valid"] == 1, (key, check)
        assert set(json.loads(check["margins"])) == {margin_key(*m) for m in wanted}
    tf32 = json.loads(by_problem[conv.key]["margins"])[margin_key(PYTORCH_DEFAULT, "output", 1.0)]
    same = json.loads(by_problem[relu.key]["margins"])[margin_key(PYTORCH_DEFAULT, "output", 1.0)]
    assert tf32 > 10 * by_problem[conv.key]["margin"]  # TF32 noise, far above the fp32 kernel's own
    assert same == by_problem[relu.key]["margin"]  # no convolution: the two references agree bit for bit


def test_an_input_a_spare_built_ahead_gives_the_cells_a_fresh_build_gives(demo: ProblemSet) -> None:
    from dataclasses import asdict

    from kbm_toolkit.evaluation import cell_task as ct
    from kbm_toolkit.problems.input_spec import official_specs
    from kbm_toolkit.mutation.mutants import generate
    from kbm_toolkit.mutation.rules import load_rules

    problem = demo.get("demo/1")
    substrate = substrate_for(problem)
    mutant = next(m for m in generate(substrate, load_rules()) if m.rule == "mul2div" and m.target == "kernel")
    spec = official_specs(problem)[0]
    image = compile_source(mutant.kernel_source, device_arch())
    task = {"problem": problem.record(), "substrate": str(substrate.folder), "specs": [spec.record()],
            "original": asdict(compile_source(substrate.source, device_arch())), "margins": [],
            "mutants": [{"id": mutant.id, "image": asdict(image), "kernel_source": mutant.kernel_source,
                         "launcher_source": None, "launch": None}]}
    fresh = list(ct.cell_task(task))
    check = next(r for r in fresh if r["kind"] == "input")
    ct.prepare({"problem": task["problem"], "margins": task["margins"], "spec": spec.record()})
    assert len(ct._PREPARED) == 1
    sent = __import__("time").time() - 1.0  # as if the task had waited a second for this child
    again = list(ct.cell_task({**task, "valid": {spec.id: check["margin"]}, "checked": [spec.id], "sent_at": sent}))
    assert [(r["part"], r["s"] >= 1.0) for r in again[:2]] == [("handover", True), ("setting up", False)]
    assert [r["kind"] for r in again if r["kind"] in ("input", "rebuilt")] == ["rebuilt"]
    assert next(r for r in again if r["kind"] == "rebuilt").get("ahead") is True and not ct._PREPARED
    cells = [[(r["outcome"], r["margin"]) for r in records if r["kind"] == "cell"] for records in (fresh, again)]
    assert cells[0] == cells[1] and len(cells[0]) == 1
