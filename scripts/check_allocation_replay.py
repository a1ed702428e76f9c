"""Check, with the installed triton, that occmodel.allocation reads and replays Triton's
shared-memory allocator exactly, and that stopping a compile after allocation gives the
full compile's shared memory.

    python scripts/check_allocation_replay.py [--arch sm_120] [--every 6]

For every --every-th config of each built-in card's sweep: compile (IR kept), run the
allocator on the TTGIR, parse, replay; compare offsets and totals with the compile, and
time occmodel.derive.shared_after_allocation against it. Exit 1 on any mismatch.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--arch", default="sm_120")
    ap.add_argument("--every", type=int, default=6)
    a = ap.parse_args()
    os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
    import triton
    from occmodel import triton_compat as tc
    from occmodel.allocation import check, parse_allocated
    from occmodel.compile import compile_kernel, parse_arch
    from occmodel.compile_pool import CompileJob
    from occmodel.derive import shared_after_allocation
    cc = parse_arch(a.arch)
    bad = 0
    for name in ("decode_attention", "decode_attention_nopipe", "matmul"):
        card = __import__(f"occmodel.kernels.{name}", fromlist=["CARD"]).CARD
        for cfg in card.sweep()[:: a.every]:
            kw = dict(signature=card.signature(cfg), constexprs=card.constexprs(cfg), arch=a.arch,
                      num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
            t = time.perf_counter()
            res = compile_kernel(card.kernel, keep_ir=True, cache=False, **kw)
            t_full = time.perf_counter() - t
            alloc = parse_allocated(tc.allocate_shared(res.ttgir, cc))
            t = time.perf_counter()
            cheap = shared_after_allocation(CompileJob(card.kernel, **kw))
            t_cheap = time.perf_counter() - t
            msg = check(alloc) or ("" if alloc.shared == res.shared == cheap else
                                   f"ttg.shared {alloc.shared}, compile {res.shared}, after allocation {cheap}")
            bad += bool(msg)
            print(f"{name} {dict((k, cfg[k]) for k in cfg if k.isupper() and k.startswith('BLOCK'))} "
                  f"w={cfg['num_warps']} s={cfg['num_stages']}: {res.total_shared} B, {len(alloc.buffers)} buffers, "
                  f"full {t_full:.2f} s, after allocation {t_cheap:.2f} s  {msg or 'OK'}", flush=True)
    print(f"triton {triton.__version__}: {'all exact' if not bad else f'{bad} mismatches'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
