"""What a global fp32 atomic add costs when its addresses are data (a scatter through loaded indices:
maxpool_bwd_scatter's GATHER 0, a GNN's edge-to-node sum, embedding_bwd), against a plain store to the
same addresses. One fixed job -- N elements, each added at target[idx[i]] -- timed for address
patterns that put the 32 lanes of a warp instruction on 1, 2, 4 or 32 lines (and one of random
lines), into a target that stays in L2 (16 MiB) or does not (1 GiB), plus the contiguous case with the
address computed from the program id (Triton then vectorises the atomic: 4 elements a lane).

    python3 scripts/atomic_scatter_probe.py [--out FILE.json]

Needs a GPU (torch + triton); prints one line per run and a JSON summary. Medians of
triton.testing.do_bench (warm-up; the target is not re-zeroed between repeats: adds of small values
into fp32 cost the same whatever is there). The index and value reads are the same bytes in every
pattern, so differences between patterns are the scatter's own.
"""

from __future__ import annotations

import argparse
import json
import sys


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="write the JSON summary here too")
    ap.add_argument("--elements", type=int, default=1 << 25, help="adds a launch (default 2^25)")
    args = ap.parse_args(argv)
    import torch
    import triton
    import triton.language as tl
    from triton.testing import do_bench

    @triton.jit
    def scatter(V, IDX, T, n, ATOMIC: tl.constexpr, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        ok = offs < n
        v = tl.load(V + offs, mask=ok, other=0.0)
        i = tl.load(IDX + offs, mask=ok, other=0)
        if ATOMIC:
            tl.atomic_add(T + i, v, mask=ok, sem="relaxed")
        else:
            tl.store(T + i, v, mask=ok)

    @triton.jit
    def computed(V, T, n, t_elems, ATOMIC: tl.constexpr, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        ok = offs < n
        v = tl.load(V + offs, mask=ok, other=0.0)
        dst = T + (tl.program_id(0) * BLOCK) % t_elems + tl.arange(0, BLOCK)
        if ATOMIC:
            tl.atomic_add(dst, v, mask=ok, sem="relaxed")
        else:
            tl.store(dst, v, mask=ok)

    props = torch.cuda.get_device_properties(0)
    n, block, warps = args.elements, 1024, 4
    gen = torch.Generator(device="cuda").manual_seed(0)
    v = torch.rand(n, device="cuda", generator=gen) * 1e-3
    lane = torch.arange(n, device="cuda", dtype=torch.int64)
    runs = []
    for label, nbytes in (("L2 (16 MiB)", 16 * 2**20), ("DRAM (1 GiB)", 2**30)):
        t_elems = nbytes // 4
        target = torch.zeros(t_elems, device="cuda")
        lines = t_elems // 32
        warp, within = lane // 32, lane % 32
        # element i's target: warp w's instruction covers `per` lines, its lanes `per` words apart
        patterns = {}
        for per in (1, 2, 4, 32):
            patterns[f"{per} line(s) a warp"] = ((warp * per) % lines * 32 + within * per) % t_elems
        patterns["random lines"] = torch.randint(0, t_elems, (n,), device="cuda", generator=gen)
        for name, idx in patterns.items():
            idx = idx.to(torch.int32).contiguous()
            for atomic in (0, 1):
                fn = lambda: scatter[(triton.cdiv(n, block),)](v, idx, target, n, ATOMIC=atomic, BLOCK=block,
                                                               num_warps=warps, num_stages=1)
                fn()
                t = do_bench(fn, warmup=25, rep=200, return_mode="median") * 1e-3
                runs.append({"target": label, "pattern": name, "atomic": atomic, "s": t, "per_element_ns": t / n * 1e9})
                print(f"{label}: {name:20s} {'atomic' if atomic else 'store ':6s} {t * 1e6:9.1f} us, "
                      f"{n / t / 1e9:7.1f} G elements/s", flush=True)
        for atomic in (0, 1):
            fn = lambda: computed[(triton.cdiv(n, block),)](v, target, n, t_elems, ATOMIC=atomic, BLOCK=block,
                                                            num_warps=warps, num_stages=1)
            fn()
            t = do_bench(fn, warmup=25, rep=200, return_mode="median") * 1e-3
            runs.append({"target": label, "pattern": "computed, vectorised", "atomic": atomic, "s": t,
                         "per_element_ns": t / n * 1e9})
            print(f"{label}: {'computed, vectorised':20s} {'atomic' if atomic else 'store ':6s} {t * 1e6:9.1f} us, "
                  f"{n / t / 1e9:7.1f} G elements/s", flush=True)
        del target
    doc = {"gpu": props.name, "sms": props.multi_processor_count, "torch": torch.__version__,
           "triton": triton.__version__, "elements": n, "block": block, "num_warps": warps, "runs": runs}
    print(json.dumps(doc))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(doc, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
