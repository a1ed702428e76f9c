"""Sweep compile time: 48 configs of decode_attention for one arch, cold and warm.

    python benchmarks/bench_compile_sweep.py [--arch sm_120] [--processes N]

48 configs = num_warps {2,4,8} x num_stages {1,2,3,4} x BLOCK_T {16,32} x BLOCK_H {16,32}.
* cold: fresh temporary OCCMODEL_CACHE_DIR and TRITON_CACHE_DIR, compile_many over
  spawn workers (what the first `occmodel accuracy` / `table --compiled` costs);
* warm: the same sweep again (every result an occmodel cache hit: no worker starts);
* triton-warm: a fresh occmodel cache over Triton's now-warm cache (cubins are
  reused, occmodel still reads each one and its worker processes start).
Prints one line per phase: seconds, configs/s, and how many came from the cache.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arch", default="sm_120")
    ap.add_argument("--processes", type=int, default=None, help="workers (default: the usable CPUs)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="occ-bench-") as tmp:
        os.environ["OCCMODEL_CACHE_DIR"] = os.path.join(tmp, "occmodel")
        os.environ["TRITON_CACHE_DIR"] = os.path.join(tmp, "triton")
        os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
        from occmodel.compile_pool import CompileJob, _cpu_count, compile_many
        from occmodel.kernels.decode_attention import CARD

        cfgs = [CARD.resolve({"num_warps": w, "num_stages": s, "BLOCK_T": t, "BLOCK_H": h})
                for w in (2, 4, 8) for s in (1, 2, 3, 4) for t in (16, 32) for h in (16, 32)]
        jobs = [CompileJob(CARD.kernel, CARD.signature(c), CARD.constexprs(c), arch=args.arch,
                           num_warps=c["num_warps"], num_stages=c["num_stages"]) for c in cfgs]
        procs = args.processes or _cpu_count()
        print(f"decode_attention, {len(jobs)} configs for {args.arch}, {procs} worker process(es), "
              f"{_cpu_count()} usable CPU(s)")

        def phase(name: str) -> list:
            t0 = time.perf_counter()
            res = compile_many(jobs, processes=procs, progress=False)
            dt = time.perf_counter() - t0
            cached = sum(r.cached for r in res)
            failed = sum(not r.ok for r in res)
            print(f"  {name:<12} {dt:8.2f} s  {len(res) / dt:7.1f} configs/s  cached {cached}/{len(res)}  "
                  f"failed {failed}  (sum of per-compile times {sum(r.compile_seconds for r in res):.1f} s)")
            return res

        phase("cold")
        phase("warm")
        os.environ["OCCMODEL_CACHE_DIR"] = os.path.join(tmp, "occmodel-2")
        phase("triton-warm")
    return 0


if __name__ == "__main__":
    sys.exit(main())
