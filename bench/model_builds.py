"""How much building reference models costs a task that goes over a protocol's inputs: one model
per input's every override (kbm before 2026-12-05), against one per `InputSpec.model_key`, which
names only the constants the model can read (`constants.model_constants`).

    python bench/model_builds.py --kernelbench PATH [--protocol fuzz-shapes] [--level level2]
        [--problems level2/59,level2/55,level2/56] [--repeat 1]

First, over every problem of `--level` (no model is built): how many models a task over the
protocol's inputs builds with each key. Then, for each of `--problems` (default: the three whose
model building cost the most in the shipped store's fuzz-shapes runs, 72 to 74: a 32,768 x 32,768
`nn.Linear` takes seconds to initialise on a CPU), the models are built on the CPU as a task
builds them (`tensors.spec_model`: the weights drawn under seed 42, as KernelBench does), with
each key, alternating `--repeat` times. Last line: the build time's ratio, every override over the
model key, summed over those problems. No GPU needed: kbm builds models on the CPU and then moves
them to the GPU.
"""

from __future__ import annotations

import argparse
import time

from kbm_toolkit.problems.input_spec import InputSpec
from kbm_toolkit.problems.problem import Problem
from kbm_toolkit.problems.problem_set import ProblemSet
from kbm_toolkit.problems.tensors import spec_model
from kbm_toolkit.protocols.registry import all_protocols

SLOWEST = ("level2/59", "level2/55", "level2/56")
"""The most building in runs 72-74 of the shipped store (`kbm runs --run N`, per problem): 47.9, 41.9 and 39.5 s."""


def every_override(problem: Problem, spec: InputSpec) -> tuple:
    """The model cache's key before: every override, the init."""
    return spec.overrides_key, spec.reinit


def by_model_key(problem: Problem, spec: InputSpec) -> tuple:
    """The model cache's key now."""
    return spec.model_key(problem)


KEYS = {"every override": every_override, "model key": by_model_key}


def build_all(problem: Problem, specs: list[InputSpec], key: object) -> tuple[int, float]:
    """Build the models a task over `specs` builds with `key`, on the CPU: (how many, seconds)."""
    seen: set[tuple] = set()
    start = time.perf_counter()
    for spec in specs:
        k = key(problem, spec)
        if k in seen:
            continue
        seen.add(k)
        model = spec_model(spec, problem.load(dict(spec.shape)), "cpu")
        del model
    return len(seen), time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kernelbench", required=True, help="a KernelBench checkout")
    parser.add_argument("--protocol", default="fuzz-shapes", help="whose inputs a task goes over")
    parser.add_argument("--level", default="level2")
    parser.add_argument("--problems", default=",".join(SLOWEST), help="problems whose models are built, comma-separated")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()

    problems = ProblemSet.discover(kernelbench=args.kernelbench)
    protocol = next((p for p in all_protocols() if p.name == args.protocol), None)
    if protocol is None:
        raise SystemExit(f"no protocol {args.protocol!r}")
    counts = {name: 0 for name in KEYS}
    level = problems.select(level=args.level)
    for problem in level:
        specs = protocol.specs(problem)
        for name, key in KEYS.items():
            counts[name] += len({key(problem, s) for s in specs})
    print(f"{args.protocol} on {len(level)} problems of {args.level}: models built "
          + ", ".join(f"{n:,} by {name}" for name, n in counts.items())
          + f" ({counts['every override'] / counts['model key']:.2f}x fewer)")

    totals: dict[str, list[float]] = {name: [] for name in KEYS}
    for key_text in args.problems.split(","):
        problem = problems.get(key_text)
        specs = protocol.specs(problem)
        for _ in range(args.repeat):
            for name, key in KEYS.items():
                n, s = build_all(problem, specs, key)
                totals[name].append(s)
                print(f"{problem.key}: {len(specs)} inputs, {n} model{'s' if n != 1 else ''} by {name}, {s:.1f} s")
    summed = {name: sum(seconds) / args.repeat for name, seconds in totals.items()}
    print(f"building, summed over {args.problems}: every override {summed['every override']:.1f} s, "
          f"model key {summed['model key']:.1f} s; ratio {summed['every override'] / summed['model key']:.2f}x")


if __name__ == "__main__":
    main()
