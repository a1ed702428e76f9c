"""GPU experiment: what one 128 x 128 x 64 GEMM tile step costs with 1 or 2 CTAs on an SM (issue 14).

    python3 scripts/gemm_residency_probe.py [--out FILE.json] [--iters 128]

The question (reports/rank_study_h200.md, sessions 18-21): splitk_gemm runs two co-resident CTAs of
128 x 128 x 64 (3 stages) at about 0.50 us a tile, one CTA alone at 0.45 (4 stages, 4 warps) or 0.42
(8 warps), where the rank model estimates the pair faster. Is the pair held back by the tensor cores
(one warpgroup's wgmma issue), or by the operand stream (L2 -> SM)? Two loops of the same tile, timed
side by side at each (num_warps, num_stages, CTAs per SM):
  full  -- the GEMM main loop: load a 128 x 64 and a 64 x 128 bf16 tile (pipelined), one tl.dot;
  dot   -- the same tl.dot on tiles loaded once before the loop: tensor work, no operand stream.
The grid is SMs x c CTAs, c = 1 or 2 (a launch the SM can hold in one wave: the block scheduler spreads
CTAs over idle SMs first; %smid is recorded per CTA and the placement printed, so this is checked, not
assumed). Each CTA runs `--iters` steps of its own K range of A [1024, K] and B [K, 1024] (K = iters x 64
x ceil(grid / 64): 80+ MB per operand, past the 60 MB L2, as in splitk_gemm). Per-tile time per SM =
median time / (iters x c); a config whose shared memory holds only one CTA per SM runs c = 2 as two waves
(shared_bytes says which: Hopper gives a block at most 227 KB of an SM's 228 KB, 1 KB reserved each).
Times: triton.testing.do_bench (warm-up, L2 flushed between runs, median). The full loop's result is
checked against torch at one config before any timing. GPU code; it has run only where
reports/GPU_NOTES.md says so (section 27: an H100, reports/h200/gemm_residency_h100.json).
"""

from __future__ import annotations

import argparse
import json
import sys

import torch
import triton
import triton.language as tl


@triton.jit
def _tile_loop(A, B, C, SMID, K, ITERS, N: tl.constexpr, TILES_N: tl.constexpr, TILES: tl.constexpr,
               BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, DOT_ONLY: tl.constexpr,
               WHERE: tl.constexpr = True):
    pid = tl.program_id(0)
    tile = pid % TILES
    split = pid // TILES
    rm = (tile // TILES_N) * BM + tl.arange(0, BM)
    rn = (tile % TILES_N) * BN + tl.arange(0, BN)
    rk = split * ITERS * BK + tl.arange(0, BK)
    a_ptr = A + rm[:, None] * K + rk[None, :]
    b_ptr = B + rk[:, None] * N + rn[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    if DOT_ONLY:
        a = tl.load(a_ptr)
        b = tl.load(b_ptr)
        for _ in range(0, ITERS):
            acc = tl.dot(a, b, acc)
    else:
        for _ in range(0, ITERS):
            a = tl.load(a_ptr)
            b = tl.load(b_ptr)
            acc = tl.dot(a, b, acc)
            a_ptr += BK
            b_ptr += BK * N
    tl.store(C + pid * BM * BN + tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :], acc)
    if WHERE:  # which SM ran this CTA (off only in Triton's CPU interpreter, which has no %smid)
        smid = tl.inline_asm_elementwise("mov.u32 $0, %smid;", "=r,r", [pid], dtype=tl.int32, is_pure=True, pack=1)
        tl.store(SMID + pid, smid)


M = N = 1024
BM = BN = 128
BK = 64
TILES = (M // BM) * (N // BN)


def launch(a, b, c, smid, grid, iters, warps, stages, dot_only, where=True):
    """One launch of `grid` CTAs; returns Triton's compiled kernel (its metadata: shared bytes)."""
    return _tile_loop[(grid,)](a, b, c, smid, a.shape[1], iters, N=N, TILES_N=N // BN, TILES=TILES, BM=BM,
                               BN=BN, BK=BK, DOT_ONLY=dot_only, WHERE=where, num_warps=warps, num_stages=stages)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None, help="write the rows as JSON here")
    ap.add_argument("--iters", type=int, default=128, help="tile steps per CTA (default 128)")
    args = ap.parse_args()
    if args.iters < 1:
        print(f"gemm_residency_probe: error: --iters {args.iters}: must be a whole number >= 1", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("gemm_residency_probe: error: needs a CUDA GPU", file=sys.stderr)
        return 2
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    grids = {1: sms, 2: 2 * sms}
    splits = -(-max(grids.values()) // TILES)
    K = args.iters * BK * splits
    torch.manual_seed(0)
    a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(K, N, device="cuda", dtype=torch.bfloat16)
    c = torch.empty(max(grids.values()) * BM * BN, device="cuda", dtype=torch.float32)
    smid = torch.empty(max(grids.values()), device="cuda", dtype=torch.int32)
    # correctness of the full loop: CTA 0 computes A[0:128, 0:iters*64] @ B[0:iters*64, 0:128]
    launch(a, b, c, smid, TILES, args.iters, 4, 3, False)
    ref = a[:BM, :args.iters * BK].float() @ b[:args.iters * BK, :BN].float()
    err = ((c[:BM * BN].view(BM, BN) - ref).abs().max() / ref.abs().max()).item()
    print(f"check: CTA 0 of the full loop against torch, max rel error {err:.2e}", flush=True)
    if not err < 1e-2:
        print("gemm_residency_probe: error: the full loop is wrong; no timing", file=sys.stderr)
        return 1
    rows = []
    for dot_only in (False, True):
        for warps in (4, 8):
            for stages in (3, 4):
                for per_sm, grid in grids.items():
                    fn = lambda: launch(a, b, c, smid, grid, args.iters, warps, stages, dot_only)  # noqa: E731
                    compiled = launch(a, b, c, smid, grid, args.iters, warps, stages, dot_only)
                    torch.cuda.synchronize()
                    placed = torch.bincount(smid[:grid].long(), minlength=sms)
                    ms = triton.testing.do_bench(fn, warmup=50, rep=300, return_mode="median")
                    row = {"loop": "dot" if dot_only else "full", "num_warps": warps, "num_stages": stages,
                           "ctas_per_sm": per_sm, "grid": grid, "iters": args.iters, "median_us": round(ms * 1e3, 2),
                           "us_per_tile_per_sm": round(ms * 1e3 / (args.iters * per_sm), 4),
                           "ctas_on_the_busiest_sm": int(placed.max()), "sms_used": int((placed > 0).sum()),
                           "shared_bytes": getattr(getattr(compiled, "metadata", None), "shared", None),
                           "regs": getattr(compiled, "n_regs", None)}
                    rows.append(row)
                    print(json.dumps(row), flush=True)
    env = {"gpu": torch.cuda.get_device_name(0), "sms": sms, "torch": torch.__version__, "triton": triton.__version__}
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"env": env, "M": M, "N": N, "K": K, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
