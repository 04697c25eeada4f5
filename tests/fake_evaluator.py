"""A stand-in for kbm_toolkit.evaluation.cell_task:cell_task with the same message protocol and no GPU.

Behaviour per mutant comes from the KBM_FAKE environment variable (JSON: mutant id → `crash`
(the process dies, as an illegal address aborts it), `poison` (a CUDA error: crash cell, then the
task stops), `hang` — each on the real inputs only — or `probe-crash` (dies on the probe input
only)), under the key `broken` a file: while it is absent, a task creates it and says its CUDA
context broke before its first cell (`poisoned`, no cell), under the key `invalid` a list of transform ops: an input with one fails its check (the
correct kernel misses by 0.5), and under `unbuilt` a list of input ids: each cannot be built
for lack of GPU memory (an `unbuilt` record, and the task goes on), and under `crowded` a list of
input ids and a folder (`{"inputs": [...], "dir": ...}`): each fails so once, the first time it is
built, as one too large to build beside another worker's input would; under `margins`, mutant id →
input id → its margin there; under `raises`, input ids whose reference raises; every other mutant is killed by inputs whose id sorts below its own. KBM_FAKE_DELAY slows each cell, so a test can kill a run
halfway. Every margin the task asks for beyond the columns is the strict margin again, as if the
other references agreed bit for bit; an input in `recheck` gets a `margins` record.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any, Iterator

from kbm_toolkit.evaluation.first_kill import FirstKill, Settled
from kbm_toolkit.judging import margin_key
from kbm_toolkit.problems.input_spec import InputSpec


def cell_task(task: dict[str, Any]) -> Iterator[dict[str, Any]]:
    behaviour = json.loads(os.environ.get("KBM_FAKE", "{}"))
    delay = float(os.environ.get("KBM_FAKE_DELAY", "0"))
    done = {tuple(p) for p in task.get("done", ())}
    checked = set(task.get("checked", ()))
    settled = Settled(FirstKill.from_record(task["first_kill"]), dict(task.get("valid", {}))) if task.get("first_kill") else None
    keys = [margin_key(*m) for m in task.get("margins", ())]
    recheck = task.get("recheck", {})
    broken = behaviour.get("broken")
    if broken and not os.path.exists(broken):  # as the real task reports a CUDA error outside a launch
        open(broken, "w").close()
        yield {"kind": "poisoned", "note": "AcceleratorError: CUDA error: unspecified launch failure"}
        return
    for record in task["specs"]:
        spec = InputSpec.from_record(record)
        pending = [m for m in task["mutants"] if (m["id"], spec.id) not in done
                   and (settled is None or settled.needed(m["id"], spec.id))]
        if not pending and spec.id in checked and spec.id not in recheck:
            continue
        crowded = behaviour.get("crowded", {})
        if spec.id in crowded.get("inputs", ()) and not os.path.exists(os.path.join(crowded["dir"], spec.id)):
            open(os.path.join(crowded["dir"], spec.id), "w").close()
            yield {"kind": "unbuilt", "input": spec.id, "note": f"out of GPU memory building input {spec.id}"}
            continue
        if spec.id in behaviour.get("unbuilt", ()):
            yield {"kind": "unbuilt", "input": spec.id, "note": f"out of GPU memory building input {spec.id}"}
            continue
        if spec.id in behaviour.get("raises", ()):  # its reference raises: invalid, no mutant runs on it
            yield {"kind": "input", "input": spec.id, "valid": False, "outcome": None,
                   "note": "reference raised RuntimeError: fake", "build_ms": 1.0}
            continue
        probe = spec.label == "probe" or bool(spec.shape)
        off = any(t["op"] in behaviour.get("invalid", ()) for t in record.get("transforms", ()))
        if spec.id in task.get("valid", {}):  # checked before: built again, not checked again
            if spec.id in recheck:
                yield {"kind": "margins", "input": spec.id, "margins": dict.fromkeys(keys, recheck[spec.id]["margin"])}
            yield {"kind": "rebuilt", "input": spec.id, "valid": True, "margin": task["valid"][spec.id],
                   "ref_ms": 1.0, "build_ms": 1.0}
        else:
            yield {"kind": "input", "input": spec.id, "valid": True, "outcome": "pass", "margin": 0.5 if off else 1e-7,
                   "max_abs": 1e-7, "ref_ms": 1.0, "kernel_ms": 1.0, "build_ms": 1.0,
                   "margins": dict.fromkeys(keys, 0.5 if off else 1e-7)}
        if settled is not None:  # as the real task: the check says at which tolerances cells count
            settled.check(spec.id, task["valid"][spec.id] if spec.id in task.get("valid", {}) else 0.5 if off else 1e-7)
            pending = [m for m in pending if settled.needed(m["id"], spec.id)]
        for m in pending:
            yield {"kind": "start", "mutant": m["id"], "input": spec.id}
            what = behaviour.get(m["id"])
            if probe != (what == "probe-crash"):
                what = None  # the others misbehave only on the real inputs, after the probe
            if what in ("crash", "probe-crash"):
                os._exit(134)
            if what == "hang":
                time.sleep(3600)
            if what == "poison":  # it says its launch crashed after 75 ms, whatever the time since `start`
                time.sleep(delay)
                yield {"kind": "cell", "mutant": m["id"], "input": spec.id, "outcome": "crash", "note": "fake",
                       "load_ms": 0.5, "crash_ms": 75.0}
                yield {"kind": "poisoned", "mutant": m["id"], "input": spec.id}
                return
            time.sleep(delay)
            # a mutant's margin on an input: "margins" sets it; else it kills where the ids say so
            margin = behaviour.get("margins", {}).get(m["id"], {}).get(spec.id, 0.5 if spec.id < m["id"] else 1e-6)
            if settled is not None:
                settled.cell(m["id"], spec.id, "pass", margin)
            yield {"kind": "cell", "mutant": m["id"], "input": spec.id, "outcome": "pass",
                   "margin": margin, "max_abs": margin, "ms": 1.0,
                   "load_ms": 0.5, "compare_ms": 0.25, "check_ms": 0.125, "compared_bytes": 64, "compare_gpu_ms": 0.2,
                   "checked_bytes": 96, "check_gpu_ms": 0.1, "margins": dict.fromkeys(keys, margin)}
