"""How long the GPU takes to recover from a crashing or hanging mutant, per way of stopping it.

Each scenario launches one kernel in a child process that fills the GPU, stops it, and times a
tiny kernel in a spare process that was already warm (the evaluator's recovery path) and in a
cold one started afterwards:

  crash      an out-of-bounds store: the context dies at once
  kill       an endless loop, the child killed with SIGKILL after --after seconds (the watchdog)

    python bench/hang_recovery.py [--after 2] [--json OUT.json]      # needs a CUDA GPU
    python bench/hang_recovery.py --idle 0,6 --hold-gb 0,20          # the crash's latency grid

Recovery is the time from the bad kernel's launch until the next kernel has run: with the warm
spare, the bad process's end plus the spare's kernel; from a cold start, the bad process's end plus
a fresh worker's start (torch, a CUDA context, the kernel's image) and its kernel. The last line is
their ratio per scenario, warm spare over cold start, both measured in this call: what keeping a
spare warm saves the evaluator.

With --idle and --hold-gb it measures instead how long an out-of-bounds store takes to report its
error (launch until the exception, as a worker times a crashed launch) while N other processes
hold idle CUDA contexts (a worker's warm spares) and while the crashing process holds G GB of
device memory (a worker's inputs, references and cache): one crash per (N, G), each in a fresh
process. The last line is the slowest cell's latency over the (0 idle, 0 GB) cell's, both in this
call: whether what a run keeps alive makes each crash dearer. With --busy 0,1 each cell also runs
with that many neighbours launching kernels of each --busy-ms back to back (a second worker on the GPU),
and each row gives the neighbours' longest launch around the crash: what a crash costs the worker
beside it. With --crash crash,crash-wide,crash-spread the crashing launch varies (`CRASHES`): the
same faulting page from 64 times the blocks, or each thread 4 KB from the next.

    python bench/hang_recovery.py --idle 0 --hold-gb 0 --busy 0,1 --busy-ms 5,50
    python bench/hang_recovery.py --idle 0 --hold-gb 0 --crash crash,crash-wide,crash-spread
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

KERNELS = {
    "tiny": 'extern "C" __global__ void k(float* p) { p[threadIdx.x] = 1.0f; }',
    "crash": 'extern "C" __global__ void k(float* p) { p[threadIdx.x + (1LL << 40)] = 1.0f; }',
    "kill": 'extern "C" __global__ void k(float* p) { while (clock64() >= 0) {} p[0] = 1.0f; }',
    # every thread stores 4 KB past its neighbour, far out of bounds: thousands of faulting pages, not one
    "crash-spread": 'extern "C" __global__ void k(float* p) '
                    '{ p[((long long)(blockIdx.x * blockDim.x + threadIdx.x) << 10) + (1LL << 40)] = 1.0f; }',
}

CRASHES = {"crash": ("crash", 8), "crash-wide": ("crash", 512), "crash-spread": ("crash-spread", 8)}
"""The grid's crashing launches: (kernel, blocks per SM). `crash` is one page stored into by 8 blocks
an SM; `crash-wide` the same from 64 times the blocks; `crash-spread` each thread 4 KB from the next
(over 16,000 pages of 64 KB on an H100). Whether a
crash's latency is a fixed cost or grows with the faults a kernel makes before it stops."""

BUSY = r"""
import sys, time
sys.path.insert(0, sys.argv[1])
import torch
from cuda.core import Device, LaunchConfig, ObjectCode, Stream, launch
from kbm_toolkit.cuda.nvrtc import compile_source
from kbm_toolkit.cuda.kernels import device_arch
import numpy as np
dev = Device(0); dev.set_current()
buf = torch.zeros(1024, device="cuda")
src = r'''extern "C" __global__ void k(float* p, long long n) {
    unsigned long long t, now;  // the global timer, in ns: SM clocks change with load, it does not
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now)); } while ((long long)(now - t) < n);
    if (threadIdx.x == 0 && blockIdx.x == 0) p[0] += 1.0f;
}'''
fn = ObjectCode.from_cubin(compile_source(src, device_arch()).cubin).get_kernel("k")
stream = Stream.from_handle(torch.cuda.current_stream().cuda_stream)
blocks, ms, seconds = int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
ns = int(ms * 1e6)
launch(stream, LaunchConfig(grid=blocks, block=256), fn, np.intp(buf.data_ptr()), np.int64(1000))
torch.cuda.synchronize()
print("ready", flush=True)
sys.stdin.readline()  # go
laps, end = [], time.perf_counter() + seconds
while time.perf_counter() < end:
    t = time.perf_counter()
    launch(stream, LaunchConfig(grid=blocks, block=256), fn, np.intp(buf.data_ptr()), np.int64(ns))
    torch.cuda.synchronize()
    laps.append((time.perf_counter() - t) * 1000)
laps.sort()
print(f"laps {len(laps)} {laps[len(laps) // 2]:.3f} {laps[-1]:.3f}", flush=True)
"""
"""A neighbour that launches a spinning kernel of argv[3] ms back to back for argv[4] s after `go`,
then reports its launches: count, median and longest in ms."""

CHILD = r"""
import sys, time
sys.path.insert(0, sys.argv[1])
import torch
from cuda.core import Device, LaunchConfig, ObjectCode, Stream, launch
from kbm_toolkit.cuda.nvrtc import compile_source
from kbm_toolkit.cuda.kernels import device_arch
import numpy as np
dev = Device(0); dev.set_current()
buf = torch.zeros(1024, device="cuda")
hold = torch.empty(int(float(sys.argv[3]) * 2**30) // 4, device="cuda") if len(sys.argv) > 3 else None
src = sys.stdin.readline()
while src.strip() == "":
    src = sys.stdin.readline()
import json
src = json.loads(src)
fn = ObjectCode.from_cubin(compile_source(src, device_arch()).cubin).get_kernel("k")
blocks = int(sys.argv[2])
stream = Stream.from_handle(torch.cuda.current_stream().cuda_stream)
print("ready", flush=True)
sys.stdin.readline()  # go
t = time.perf_counter()
try:
    launch(stream, LaunchConfig(grid=blocks, block=256), fn, np.intp(buf.data_ptr()))
    print("launched", flush=True)
    torch.cuda.synchronize()
    print(f"done {(time.perf_counter() - t) * 1000:.3f}", flush=True)
except Exception as e:
    print(f"error {(time.perf_counter() - t) * 1000:.3f} {type(e).__name__}: {str(e)[:120]}", flush=True)
"""


class Child:
    """A process that builds one kernel, waits for `go`, launches it and reports."""

    def __init__(self, source: str, blocks: int = 1, hold_gb: float = 0.0) -> None:
        self.started = time.perf_counter()
        self.proc = subprocess.Popen([sys.executable, "-c", CHILD, str(ROOT), str(blocks), str(hold_gb)],
                                     stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, start_new_session=True)
        self.proc.stdin.write(json.dumps(source) + "\n")
        self.proc.stdin.flush()

    def ready(self) -> float:
        line = self.proc.stdout.readline().strip()
        if line != "ready":
            raise RuntimeError(f"child failed to start: {line!r}")
        return time.perf_counter() - self.started

    def go(self) -> None:
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()

    def line(self) -> str:
        return self.proc.stdout.readline().strip()

    def finish(self) -> tuple[str, float]:
        """Go, and wait for the report; (report, seconds from go to report)."""
        t = time.perf_counter()
        self.go()
        while (line := self.line()) == "launched":
            pass
        self.proc.wait()
        return line, time.perf_counter() - t


def scenario(name: str, after: float, sms: int) -> dict:
    spare = Child(KERNELS["tiny"])
    spare.ready()
    bad = Child(KERNELS[name], blocks=sms * 8)
    bad.ready()
    t0 = time.perf_counter()
    bad.go()
    assert bad.line() == "launched"
    result: dict = {"scenario": name}
    if name == "kill":
        time.sleep(after)
        os.killpg(bad.proc.pid, signal.SIGKILL)
        result["reported"] = "killed"
    else:
        result["reported"] = bad.line()
    bad.proc.wait()
    result["bad_gone_s"] = round(time.perf_counter() - t0, 3)
    report, spare_s = spare.finish()
    result["spare_report"], result["spare_s"] = report, round(spare_s, 3)
    cold = Child(KERNELS["tiny"])
    result["cold_ready_s"] = round(cold.ready(), 3)
    report, cold_s = cold.finish()
    result["cold_report"], result["cold_s"] = report, round(cold_s, 3)
    result["total_s"] = round(time.perf_counter() - t0, 3)
    result["warm_recovery_s"] = round(result["bad_gone_s"] + spare_s, 3)
    result["cold_recovery_s"] = round(result["bad_gone_s"] + result["cold_ready_s"] + cold_s, 3)
    return result


class Busy:
    """A neighbour process launching a spinning kernel back to back (`BUSY`)."""

    def __init__(self, blocks: int, ms: float, seconds: float) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", BUSY, str(ROOT), str(blocks), str(ms), str(seconds)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     start_new_session=True)

    def ready(self) -> None:
        line = self.proc.stdout.readline().strip()
        if line != "ready":
            raise RuntimeError(f"busy neighbour failed to start: {line!r}")

    def go(self) -> None:
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()

    def laps(self) -> tuple[int, float, float]:
        """(launches, median ms, longest ms), once its time is up."""
        line = self.proc.stdout.readline().split()
        self.proc.wait()
        if line[:1] != ["laps"]:
            raise RuntimeError(f"busy neighbour did not report: {line!r}")
        return int(line[1]), float(line[2]), float(line[3])


BUSY_S = 2.0
"""How long a busy neighbour launches; the crash comes BUSY_LEAD_S into it."""
BUSY_LEAD_S = 0.5


def crash_latency(idle: int, hold_gb: float, sms: int, busy: int = 0, busy_ms: float = 5.0,
                  crash: str = "crash") -> dict:
    """Launch-to-error milliseconds of an out-of-bounds store (`crash`, one of `CRASHES`), with
    `idle` other processes holding warm contexts, `busy` others launching `busy_ms` kernels back
    to back, and `hold_gb` GB allocated in the crashing one."""
    others = [Child(KERNELS["tiny"]) for _ in range(idle)]
    for o in others:
        o.ready()
    neighbours = [Busy(sms * 8, busy_ms, BUSY_S) for _ in range(busy)]
    for n in neighbours:
        n.ready()
    kernel, per_sm = CRASHES[crash]
    bad = Child(KERNELS[kernel], blocks=sms * per_sm, hold_gb=hold_gb)
    bad.ready()
    for n in neighbours:
        n.go()
    if neighbours:
        time.sleep(BUSY_LEAD_S)
    bad.go()
    assert bad.line() == "launched"
    report = bad.line()
    bad.proc.wait()
    laps = [n.laps() for n in neighbours]
    for o in others:
        o.proc.kill()
        o.proc.wait()
    if not report.startswith("error "):
        raise RuntimeError(f"the out-of-bounds store did not fail: {report!r}")
    row = {"crash": crash, "idle": idle, "hold_gb": hold_gb, "busy": busy, "busy_ms": busy_ms,
           "error_ms": float(report.split()[1]), "report": report}
    if laps:
        row["neighbour_launches"] = sum(n for n, _, _ in laps)
        row["neighbour_median_ms"] = max(m for _, m, _ in laps)
        row["neighbour_longest_ms"] = max(longest for _, _, longest in laps)
    return row


def grid(idles: list[int], holds: list[float], sms: int, out: Path | None,
         busies: tuple[int, ...] = (0,), busy_ms: tuple[float, ...] = (5.0,),
         crashes: tuple[str, ...] = ("crash",)) -> None:
    """The crash-latency grid, one fresh crash per cell; the last line its slowest cell over the first."""
    rows = []
    for crash in crashes:
        for busy in busies:
            for ms in busy_ms if busy else busy_ms[:1]:  # the kernel length of no neighbour is no dimension
                for idle in idles:
                    for hold in holds:
                        rows.append(crash_latency(idle, hold, sms, busy, ms, crash))
                        print(json.dumps(rows[-1]), flush=True)
    if out:
        out.write_text(json.dumps(rows, indent=1))
    print(f"{'crash':>12} {'busy':>4} {'its ms':>7} {'idle contexts':>13} {'held GB':>8} {'error after':>12} "
          f"{'neighbour median':>17} {'neighbour longest':>18}")
    for r in rows:
        near = (f"{r['neighbour_median_ms']:15.1f}ms {r['neighbour_longest_ms']:16.1f}ms"
                if r["busy"] else f"{'-':>17} {'-':>18}")
        print(f"{r.get('crash', 'crash'):>12} {r['busy']:4d} {r['busy_ms'] if r['busy'] else '-':>7} "
              f"{r['idle']:13d} {r['hold_gb']:8g} {r['error_ms']:10.1f}ms {near}")
    base, worst = rows[0], max(rows, key=lambda r: r["error_ms"])
    print(f"ratio, slowest crash ({worst.get('crash', 'crash')}, {worst['busy']} busy, {worst['idle']} idle, "
          f"{worst['hold_gb']:g} GB) / ({base.get('crash', 'crash')}, {base['busy']} busy, {base['idle']} idle, "
          f"{base['hold_gb']:g} GB): "
          f"{worst['error_ms']:.1f} / {base['error_ms']:.1f} ms = "
          f"{worst['error_ms'] / base['error_ms']:.2f}x")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--after", type=float, default=2.0, help="seconds before SIGKILL in the kill scenario")
    ap.add_argument("--scenarios", default="crash,kill")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--idle", help="the crash-latency grid: idle contexts alive beside the crash, e.g. 0,6")
    ap.add_argument("--hold-gb", default="0", help="with --idle: GB held by the crashing process, e.g. 0,20")
    ap.add_argument("--busy", default="0", help="with --idle: neighbours launching kernels back to back, e.g. 0,1")
    ap.add_argument("--busy-ms", default="5", help="with --busy: each neighbour kernel's length in ms, e.g. 5,50 [5]")
    ap.add_argument("--crash", default="crash", help=f"with --idle: the crashing launches, of {','.join(CRASHES)} [crash]")
    args = ap.parse_args()
    unknown = sorted(set(args.crash.split(",")) - set(CRASHES))
    if unknown:
        ap.error(f"--crash {','.join(unknown)}: not one of {','.join(CRASHES)}")
    import torch

    if not torch.cuda.is_available():
        raise SystemExit("bench/hang_recovery.py needs a CUDA GPU: it crashes and hangs real kernels")
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    if args.idle is not None:
        grid([int(v) for v in args.idle.split(",")], [float(v) for v in args.hold_gb.split(",")], sms, args.json,
             tuple(int(v) for v in args.busy.split(",")), tuple(float(v) for v in args.busy_ms.split(",")),
             tuple(args.crash.split(",")))
        return
    rows = []
    for name in args.scenarios.split(","):
        row = scenario(name, args.after, sms)
        rows.append(row)
        print(json.dumps(row), flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    print(f"{'scenario':10} {'bad gone':>9} {'spare kernel':>13} {'cold ready':>11} {'cold kernel':>12}")
    for r in rows:
        print(f"{r['scenario']:10} {r['bad_gone_s']:8.2f}s {r['spare_s']:12.3f}s {r['cold_ready_s']:10.2f}s "
              f"{r['cold_s']:11.3f}s")
    print("ratio, recovery with the warm spare / from a cold start: "
          + "; ".join(f"{r['scenario']} {r['warm_recovery_s']:.2f} s / {r['cold_recovery_s']:.2f} s = "
                      f"{r['warm_recovery_s'] / r['cold_recovery_s']:.2f}x" for r in rows))


if __name__ == "__main__":
    main()
