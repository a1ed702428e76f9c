"""What a CTA costs beyond its work (rank's CTA_OVERHEAD_S): one fixed job -- a streaming read of
`tiles` fp32 tiles of BLOCK elements, summed per CTA -- split into CTAs of ITERS tiles each (ITERS 1 ..
256: the same bytes, the same loads, 256x as many CTAs at ITERS 1), timed on the GPU. Once the launch is
several waves deep, the time over the waves' count gives a CTA's fixed cost to its slot: launch,
prologue, epilogue and retire. Two buffers: one that stays in L2 (the overhead exposed) and 1 GiB
(DRAM-bound: does streaming hide it?).

    python3 scripts/cta_overhead_probe.py [--out FILE.json]

Needs a GPU (torch + triton); prints one line per run and a JSON summary. Medians of
triton.testing.do_bench (warm-up, L2 not flushed: the L2 buffer is meant to stay there).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="write the JSON summary here too")
    args = ap.parse_args(argv)
    import torch
    import triton
    import triton.language as tl
    from triton.testing import do_bench

    @triton.jit
    def stream(X, OUT, n_tiles, ITERS: tl.constexpr, BLOCK: tl.constexpr):
        pid = tl.program_id(0)
        offs = tl.arange(0, BLOCK)
        acc = tl.zeros([BLOCK], tl.float32)
        for i in range(ITERS):
            tile = (pid * ITERS + i) % n_tiles
            acc += tl.load(X + tile.to(tl.int64) * BLOCK + offs)
        tl.store(OUT + pid * BLOCK + offs, acc)

    props = torch.cuda.get_device_properties(0)
    sms = props.multi_processor_count
    block, warps = 1024, 4
    runs = []
    for label, nbytes in (("L2 (16 MiB)", 16 * 2**20), ("DRAM (1 GiB)", 2**30)):
        x = torch.rand(nbytes // 4, device="cuda")
        n_tiles = x.numel() // block
        total = 2**16 if nbytes < 2**30 else n_tiles          # tiles read per launch: 256 MiB / 1 GiB
        for iters in (1, 2, 4, 16, 64, 256):
            ctas = total // iters
            out = torch.empty(ctas * block, device="cuda")
            k = stream[(ctas,)](x, out, n_tiles, ITERS=iters, BLOCK=block, num_warps=warps, num_stages=1)
            t = do_bench(lambda: stream[(ctas,)](x, out, n_tiles, ITERS=iters, BLOCK=block, num_warps=warps,
                                                 num_stages=1), warmup=50, rep=300, return_mode="median") * 1e-3
            regs = getattr(k, "n_regs", None)
            runs.append({"buffer": label, "iters": iters, "ctas": ctas, "regs": regs, "s": t,
                         "gbs": total * block * 4 / t / 1e9})
            print(f"{label}: ITERS {iters:4d}, {ctas:8d} CTAs, regs {regs}: {t * 1e6:9.2f} us, "
                  f"{runs[-1]['gbs']:7.1f} GB/s", flush=True)
    # per buffer: extra time per extra CTA per SM over the 64-tile CTAs (the slots run CTAs back to back)
    fits = {}
    for label in {r["buffer"] for r in runs}:
        rs = {r["iters"]: r for r in runs if r["buffer"] == label}
        base = rs[64]
        fits[label] = {str(i): (rs[i]["s"] - base["s"]) / ((rs[i]["ctas"] - base["ctas"]) / sms)
                       for i in (1, 2, 4, 16) if rs[i]["ctas"] > base["ctas"]}
        print(f"{label}: seconds per extra CTA per SM against ITERS 64: "
              + ", ".join(f"ITERS {i}: {v * 1e9:.0f} ns" for i, v in fits[label].items()), flush=True)
    doc = {"gpu": props.name, "sms": sms, "torch": torch.__version__, "triton": triton.__version__,
           "block": block, "num_warps": warps, "runs": runs, "per_extra_cta_per_sm_s": fits}
    print(json.dumps(doc))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(doc, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
