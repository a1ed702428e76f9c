"""One compile sweep through the local process pool vs a Dask cluster of two local workers.

    python benchmarks/bench_engine.py [--arch sm_120] [--rounds 2]

The sweep: decode_attention, num_warps {2,4} x num_stages {1,2,3} x BLOCK_T {16,32} (12 configs).
Both sides compile every config cold: each phase gets a fresh OCCMODEL_CACHE_DIR (so a fresh
Triton cache for the pool's workers) and the Dask workers' Triton cache is emptied before each
phase. Pool: compile_many(processes=2), which spawns its 2 workers per sweep. Engine: a scheduler
and two `dask worker --nthreads 1` processes on 127.0.0.1 (started once, before the first round),
compile_many(executor=...); results come back and are cached here. Phases interleave (pool,
engine, engine, pool, ...) in the same run so both see the same machine load. Prints each
phase and the ratio engine / pool of the medians (below 1: the engine is faster).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arch", default="sm_120")
    ap.add_argument("--rounds", type=int, default=2, help="pairs of phases (default 2: pool, engine, engine, pool)")
    args = ap.parse_args()
    os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
    from occmodel.compile_pool import CompileJob, _cpu_count, compile_many
    from occmodel.engine import LocalCluster
    from occmodel.kernels.decode_attention import CARD

    cfgs = [CARD.resolve({"num_warps": w, "num_stages": s, "BLOCK_T": t})
            for w in (2, 4) for s in (1, 2, 3) for t in (16, 32)]
    jobs = [CompileJob(CARD.kernel, CARD.signature(c), CARD.constexprs(c), arch=args.arch,
                       num_warps=c["num_warps"], num_stages=c["num_stages"]) for c in cfgs]
    with tempfile.TemporaryDirectory(prefix="occ-bench-engine-") as tmp:
        worker_cache = os.path.join(tmp, "workers")
        t0 = time.perf_counter()
        cluster = LocalCluster(2, env={"OCCMODEL_CACHE_DIR": worker_cache}, folder=tmp).start()
        print(f"decode_attention, {len(jobs)} configs for {args.arch}; {_cpu_count()} usable CPU(s); "
              f"Dask scheduler + 2 workers on 127.0.0.1 started in {time.perf_counter() - t0:.1f} s "
              f"(not counted below)")
        times: dict[str, list[float]] = {"pool": [], "engine": []}
        try:
            order = []
            for r in range(args.rounds):
                order += ["pool", "engine"] if r % 2 == 0 else ["engine", "pool"]
            for n, side in enumerate(order):
                os.environ["OCCMODEL_CACHE_DIR"] = os.path.join(tmp, f"here-{n}")
                shutil.rmtree(os.path.join(worker_cache, "triton"), ignore_errors=True)
                t = time.perf_counter()
                if side == "pool":
                    res = compile_many(jobs, processes=2, progress=False)
                else:
                    res = compile_many(jobs, executor=cluster.executor(), progress=False)
                dt = time.perf_counter() - t
                times[side].append(dt)
                bad = sum(not r.ok for r in res) + sum(r.cached for r in res)
                print(f"  {side:<6} {dt:7.2f} s  {len(jobs) / dt:5.2f} configs/s"
                      + (f"  ({bad} not ok or cached!)" if bad else ""))
        finally:
            cluster.stop()
    pool, engine = statistics.median(times["pool"]), statistics.median(times["engine"])
    print(f"median: pool {pool:.2f} s, engine {engine:.2f} s; engine / pool = {engine / pool:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
