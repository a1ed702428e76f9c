"""Derive time vs compiling the whole sweep, same machine, same run.

    python benchmarks/bench_derive.py [--kernel decode_attention] [--arch sm_120] [--json out.json]

Three ways to know the shared memory of every config of a card's sweep, each from a cold
cache (fresh occmodel and Triton cache directories, so every compile is real):
  full:    compile every config (occmodel.compile_pool.compile_many: LLVM and ptxas included);
  derive:  occmodel.derive.derive_model on the sweep (the designed sample's compiles included),
           then predict every config;
  alloc:   stop each compile after Triton's shared-memory allocation
           (occmodel.derive.shared_after_allocation), one after another in this process.
Prints seconds, the ratios, and how many configs each got exactly right.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kernel", default="decode_attention")
    ap.add_argument("--arch", default="sm_120")
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="occmodel-bench-derive-")
    os.environ["OCCMODEL_CACHE_DIR"] = os.path.join(tmp, "occmodel")
    os.environ["TRITON_CACHE_DIR"] = os.path.join(tmp, "triton")
    os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
    from occmodel.compile_pool import CompileJob, compile_many
    from occmodel.derive import derive_model, shared_after_allocation
    card = __import__(f"occmodel.kernels.{a.kernel}", fromlist=["CARD"]).CARD
    sweep = card.sweep()

    def job(c):
        return CompileJob(card.kernel, signature=card.signature(c), constexprs=card.constexprs(c), arch=a.arch,
                          num_warps=c["num_warps"], num_stages=c["num_stages"])

    t = time.perf_counter()
    dm = derive_model(job, sweep, arch=a.arch, fraction=0.3)
    pred = [dm.shared(c) for c in sweep]
    t_derive = time.perf_counter() - t
    os.environ["OCCMODEL_CACHE_DIR"] = os.path.join(tmp, "occmodel-full")      # cold again for the full sweep
    os.environ["TRITON_CACHE_DIR"] = os.path.join(tmp, "triton-full")
    t = time.perf_counter()
    full = compile_many([job(c) for c in sweep], progress=False)
    t_full = time.perf_counter() - t
    t = time.perf_counter()
    alloc = [shared_after_allocation(job(c)) for c in sweep]
    t_alloc = time.perf_counter() - t
    truth = [r.total_shared for r in full]
    out = {"kernel": a.kernel, "arch": a.arch, "configs": len(sweep), "cpus": len(os.sched_getaffinity(0)),
           "full_s": round(t_full, 1), "derive_s": round(t_derive, 1), "alloc_s": round(t_alloc, 1),
           "derive_sampled": len(dm.sample_index),
           "full_over_derive": round(t_full / t_derive, 2), "full_over_alloc": round(t_full / t_alloc, 2),
           "derive_exact": sum(p == s for p, s in zip(pred, truth)), "derive_refused": sum(p is None for p in pred),
           "alloc_exact": sum(p == s for p, s in zip(alloc, truth))}
    for k, v in out.items():
        print(f"{k:18s} {v}")
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
