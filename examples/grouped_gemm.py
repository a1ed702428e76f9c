"""MoE expert GEMM over expert-sorted tokens, a bare @triton.jit kernel + its launcher.

    out[offs[e]:offs[e+1], :] = x[offs[e]:offs[e+1], :] @ w[e]      for each expert e

x: [T, K] fp16 / bf16, the routed tokens (topk already expanded) sorted by expert; offs:
[E + 1] int32 row offsets (expert e owns rows offs[e]:offs[e+1], possibly none); w:
[E, K, N] the experts' weights; out: [T, N] in x's dtype, fp32 accumulation. As in
vLLM's / SGLang's fused_moe, the launcher first builds a tile map (their
moe_align_block_size): each expert's rows are cut into BLOCK_M row tiles, the last
one padded, so no tile straddles two experts; tile i -> (expert, first row, end row).
The grid is 1D over (row tile, N tile) pairs, swizzled in groups of GROUP_M row tiles
(the Triton matmul order) so CTAs running together share w[e] column tiles in L2; each
CTA reads its three map entries (scalar loads) and walks K in BLOCK_K steps with tl.dot.
The map depends only on offs and BLOCK_M: launch builds it once per input set and
BLOCK_M and keeps it in the inputs dict (a MoE layer builds it once per batch).

Tunables: BLOCK_M, BLOCK_N, BLOCK_K (powers of two >= 16), GROUP_M, num_warps, num_stages.
Problem parameters (a workload point): T (rows), E, K, N, dtype; optional hot (fraction
of the rows on expert 0, the rest split evenly) and idle (experts 1..idle get no rows).
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _kernel(X, W, OUT, TILES, n_tiles_m, N, K,
            stride_xm, stride_xk, stride_we, stride_wk, stride_wn, stride_om, stride_on,
            BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    tiles_n = tl.cdiv(N, BLOCK_N)
    per_group = GROUP_M * tiles_n
    first_m = (pid // per_group) * GROUP_M
    group_m = tl.minimum(n_tiles_m - first_m, GROUP_M)
    tile_m = first_m + (pid % per_group) % group_m
    tile_n = (pid % per_group) // group_m

    expert = tl.load(TILES + 3 * tile_m).to(tl.int64)
    row0 = tl.load(TILES + 3 * tile_m + 1)
    row_end = tl.load(TILES + 3 * tile_m + 2)

    rows = row0 + tl.arange(0, BLOCK_M)
    cols = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    ks = tl.arange(0, BLOCK_K)
    row_ok = rows < row_end
    col_ok = cols < N

    x_ptr = X + rows[:, None] * stride_xm + ks[None, :] * stride_xk
    w_ptr = W + expert * stride_we + ks[:, None] * stride_wk + cols[None, :] * stride_wn
    acc = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k_ok = k0 + ks < K
        a = tl.load(x_ptr, mask=row_ok[:, None] & k_ok[None, :], other=0.0)
        b = tl.load(w_ptr, mask=k_ok[:, None] & col_ok[None, :], other=0.0)
        acc = tl.dot(a, b, acc)
        x_ptr += BLOCK_K * stride_xk
        w_ptr += BLOCK_K * stride_wk

    o_ptr = OUT + rows[:, None] * stride_om + cols[None, :] * stride_on
    tl.store(o_ptr, acc.to(OUT.dtype.element_ty), mask=row_ok[:, None] & col_ok[None, :])


# ---------------------------------------------------------------- launcher
DTYPES = ("fp16", "bf16")
TUNABLES = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "num_warps", "num_stages")
BASELINE = {"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8, "num_warps": 4, "num_stages": 3}

# w dominates the bytes (each expert's weights read once, re-read from L2 by its row
# tiles): 460 MiB - 1.2 GiB per launch (9-25x the H200's 50 MB L2), 94-962 GFLOP.
POINTS = [
    {"T": 8192, "E": 8, "K": 4096, "N": 14336, "dtype": "bf16"},            # 1,184 MiB, 962 GFLOP (Mixtral up-proj)
    {"T": 16384, "E": 64, "K": 2048, "N": 1408, "dtype": "fp16"},           # 460 MiB, 94 GFLOP (256 rows/expert)
    {"T": 4096, "E": 16, "K": 4096, "N": 4096, "hot": 0.4, "dtype": "bf16"},  # 576 MiB, 137 GFLOP (1,638 rows on e0)
]


def _torch_dtype(name: str):
    import torch
    try:
        return {"fp16": torch.float16, "bf16": torch.bfloat16}[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}") from None


def expert_counts(point) -> list[int]:
    """Rows per expert at `point`: experts 1..idle get none; expert 0 gets round(hot * T)
    when hot is given; the other rows are split evenly (the remainder to the first)."""
    T, E, hot, idle = point["T"], point["E"], point.get("hot", 0.0), point.get("idle", 0)
    if E < 1 or not 0 <= idle < E:
        raise ValueError(f"E={E}, idle={idle}: need E >= 1 and 0 <= idle < E")
    if not 0.0 <= hot <= 1.0:
        raise ValueError(f"hot={hot} is not a fraction in [0, 1]")
    counts = [0] * E
    rest = [0] + list(range(idle + 1, E))
    if hot and len(rest) > 1:
        counts[0], rest = round(hot * T), rest[1:]
    left = T - counts[0]
    for i, e in enumerate(rest):
        counts[e] = left // len(rest) + (i < left % len(rest))
    return counts


def tile_map(counts, BLOCK_M: int):
    """int32 [n_tiles, 3]: (expert, first row, end row) of every BLOCK_M row tile."""
    import torch
    out, row = [], 0
    for e, c in enumerate(counts):
        out += [(e, r, row + c) for r in range(row, row + c, BLOCK_M)]
        row += c
    return torch.tensor(out, dtype=torch.int32).reshape(-1, 3)


def _check_cfg(cfg) -> None:
    for name in ("BLOCK_M", "BLOCK_N", "BLOCK_K"):
        v = cfg[name]
        if v < 16 or v & (v - 1):
            raise ValueError(f"{name}={v} must be a power of two >= 16 (a tl.dot operand side)")
    if cfg["GROUP_M"] < 1:
        raise ValueError(f"GROUP_M={cfg['GROUP_M']} must be >= 1")


def _kernel_args(x, w, out, tiles, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    return dict(X=x, W=w, OUT=out, TILES=tiles, n_tiles_m=tiles.shape[0], N=w.shape[2], K=x.shape[1],
                stride_xm=x.stride(0), stride_xk=x.stride(1),
                stride_we=w.stride(0), stride_wk=w.stride(1), stride_wn=w.stride(2),
                stride_om=out.stride(0), stride_on=out.stride(1),
                BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"], BLOCK_K=cfg["BLOCK_K"], GROUP_M=cfg["GROUP_M"])


def grouped_gemm(x, w, tiles, *, BLOCK_M=64, BLOCK_N=128, BLOCK_K=64, GROUP_M=8, num_warps=4, num_stages=3):
    """out[rows of e] = x[rows of e] @ w[e]. x: [T, K], w: [E, K, N], tiles: tile_map(counts,
    BLOCK_M) on x's device, covering every row. Returns [T, N] in x's dtype."""
    import torch
    if x.dim() != 2 or w.dim() != 3 or x.shape[1] != w.shape[1]:
        raise ValueError(f"expected x [T, K] and w [E, K, N]; got {tuple(x.shape)}, {tuple(w.shape)}")
    if x.dtype != w.dtype:
        raise ValueError(f"x and w dtypes differ: {x.dtype}, {w.dtype}")
    if x.shape[0] * max(x.shape[1], w.shape[2]) >= 2**31:
        raise ValueError(f"T={x.shape[0]} rows of K={x.shape[1]} / N={w.shape[2]}: row offsets overflow int32")
    cfg = {"BLOCK_M": BLOCK_M, "BLOCK_N": BLOCK_N, "BLOCK_K": BLOCK_K, "GROUP_M": GROUP_M}
    _check_cfg(cfg)
    out = torch.empty((x.shape[0], w.shape[2]), dtype=x.dtype, device=x.device)
    grid = (tiles.shape[0] * triton.cdiv(w.shape[2], BLOCK_N),)
    if grid[0]:
        _kernel[grid](**_kernel_args(x, w, out, tiles, cfg), num_warps=num_warps, num_stages=num_stages)
    return out


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    import torch
    gen = torch.Generator(device=device).manual_seed(seed)
    dt = _torch_dtype(point.get("dtype", "bf16"))
    counts = expert_counts(point)
    offs = torch.tensor([0] + counts, dtype=torch.int64).cumsum(0).to(torch.int32)
    scale = point["K"] ** -0.25          # out entries O(1) whatever K is
    x = (torch.randn((point["T"], point["K"]), generator=gen, device=device) * scale).to(dt)
    w = (torch.randn((point["E"], point["K"], point["N"]), generator=gen, device=device) * scale).to(dt)
    return {"x": x, "w": w, "offs": offs.to(device), "counts": counts, "tile_maps": {}}


def launch(inputs, cfg):
    BLOCK_M = cfg["BLOCK_M"]
    if BLOCK_M not in inputs["tile_maps"]:          # the routing step, once per input set
        inputs["tile_maps"][BLOCK_M] = tile_map(inputs["counts"], BLOCK_M).to(inputs["x"].device)
    return grouped_gemm(inputs["x"], inputs["w"], inputs["tile_maps"][BLOCK_M], BLOCK_M=BLOCK_M,
                        BLOCK_N=cfg["BLOCK_N"], BLOCK_K=cfg["BLOCK_K"], GROUP_M=cfg["GROUP_M"],
                        num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])


def reference(inputs):
    import torch
    x, w, offs = inputs["x"].float(), inputs["w"].float(), inputs["offs"].tolist()
    out = torch.empty((x.shape[0], w.shape[2]), dtype=torch.float32, device=x.device)
    for e in range(w.shape[0]):
        out[offs[e]:offs[e + 1]] = x[offs[e]:offs[e + 1]] @ w[e]
    return out


def torch_baseline(inputs):
    """One cuBLAS GEMM per expert with rows, in the inputs' dtype (the eager MoE loop)."""
    import torch
    x, w, offs = inputs["x"], inputs["w"], inputs["offs"].tolist()
    return torch.cat([x[offs[e]:offs[e + 1]] @ w[e] for e in range(w.shape[0])])


def bytes_moved(point) -> int:
    """x read once, the weights of every expert with rows read once, out written once."""
    T, K, N = point["T"], point["K"], point["N"]
    active = sum(c > 0 for c in expert_counts(point))
    return (T * K + active * K * N + T * N) * 2


def flops(point) -> int:
    return 2 * point["T"] * point["K"] * point["N"]


def grid(cfg, point) -> int:
    """CTAs of one launch: row tiles (each expert's rows padded to BLOCK_M) x N tiles."""
    tiles_m = sum(triton.cdiv(c, cfg["BLOCK_M"]) for c in expert_counts(point))
    return tiles_m * triton.cdiv(point["N"], cfg["BLOCK_N"])


def loop_iterations(cfg, point) -> int:
    """K tiles per CTA."""
    return triton.cdiv(point["K"], cfg["BLOCK_K"])


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory)."""
    import torch
    dt = _torch_dtype(point.get("dtype", "bf16"))
    T, E, K, N = point["T"], point["E"], point["K"], point["N"]
    tiles_m = sum(triton.cdiv(c, cfg["BLOCK_M"]) for c in expert_counts(point))
    x = torch.empty((T, K), dtype=dt, device="meta")
    w = torch.empty((E, K, N), dtype=dt, device="meta")
    out = torch.empty((T, N), dtype=dt, device="meta")
    tiles = torch.empty((tiles_m, 3), dtype=torch.int32, device="meta")
    return _kernel_args(x, w, out, tiles, cfg)
