"""One question (issue 27): why a spare's CUDA context takes 1.1 s in the new evaluator's forked
children and 0.46 s in the old one's spawned ones. Times `cell_task.warm_up`'s parts in children
started by spawn and by a fork server holding GPU_PRELOAD, K at once, with the GPU idle or busy."""

import json
import multiprocessing as mp
import statistics
import sys
import time


def child(q, t0):
    entered = time.time()
    from kbm_toolkit.evaluation.cell_task import warm_up
    parts = warm_up()
    q.put({"start": entered - t0, **parts, "total": time.time() - t0})


def busy(stop):
    import torch
    x = torch.randn(8192, 8192, device="cuda")
    while not stop.is_set():
        for _ in range(20):
            x = (x @ x).clamp_(-1, 1)
        torch.cuda.synchronize()


def trial(ctx, k):
    q = ctx.Queue()
    t0 = time.time()
    procs = [ctx.Process(target=child, args=(q, t0)) for _ in range(k)]
    for p in procs:
        p.start()
    rows = [q.get(timeout=120) for _ in procs]
    for p in procs:
        p.join()
    return rows


def main():
    from kbm_toolkit.evaluation.options import GPU_PRELOAD
    results = []
    for busy_gpu in (False, True):
        stop = mp.get_context("spawn").Event()
        hog = None
        if busy_gpu:
            hog = mp.get_context("spawn").Process(target=busy, args=(stop,))
            hog.start()
            time.sleep(8)
        for mode in ("spawn", "forkserver"):
            ctx = mp.get_context(mode)
            if mode == "forkserver":
                ctx.set_forkserver_preload(list(GPU_PRELOAD))
            trial(ctx, 1)  # the server's imports, the page cache: not measured
            for k, tries in ((1, 2), (3, 1)):
                rows = [r for _ in range(tries) for r in trial(ctx, k)]
                med = {key: round(statistics.median(r[key] for r in rows), 3) for key in rows[0]}
                results.append({"busy": busy_gpu, "mode": mode, "k": k, **med})
                print(json.dumps(results[-1]), flush=True)
        if hog:
            stop.set()
            hog.join(timeout=30)
    keys = ["start", "imports", "context", "guard", "handles", "kernel", "total"]
    print("\nbusy  mode        k  " + "  ".join(f"{k:>8}" for k in keys))
    for r in results:
        print(f"{str(r['busy']):5} {r['mode']:10} {r['k']:2}  " + "  ".join(f"{r.get(k, 0):8.3f}" for k in keys))


if __name__ == "__main__":
    sys.exit(main())
