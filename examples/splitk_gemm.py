"""Split-K GEMM, C = A @ B, a bare @triton.jit kernel + a reduction kernel + the launcher.

A: [M, K], B: [K, N], fp16 / bf16 (fp32 runs the dots as tf32 on a GPU); C: [M, N] in
A's dtype. Made for shapes with few output tiles and a long K (a projection of a small
batch, a weight-gradient GEMM): one launch of ``_kernel`` runs tiles_m x tiles_n x
SPLIT_K CTAs; CTA (tile, s) walks its own contiguous share of the K tiles and writes
its fp32 partial tile to a workspace [SPLIT_K, M, N]; ``_reduce_kernel`` then sums the
SPLIT_K partials of each element (in a fixed order: deterministic, unlike atomics) and
casts to C's dtype. With SPLIT_K=1 the GEMM kernel stores C directly and the reduction
is skipped, so SPLIT_K=1 is the plain GEMM the split is measured against.

Tunables: BLOCK_M, BLOCK_N, BLOCK_K (powers of two >= 16), SPLIT_K, num_warps, num_stages.
Problem parameters (a workload point): M, N, K, dtype.
Timing covers both kernels; grid / loop_iterations describe ``_kernel``.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _kernel(A, B, OUT, M, N, K,
            stride_am, stride_ak, stride_bk, stride_bn, stride_os, stride_om,
            BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, SPLIT_K: tl.constexpr):
    tile = tl.program_id(0)
    split = tl.program_id(1)
    tiles_n = tl.cdiv(N, BLOCK_N)
    tile_m = tile // tiles_n
    tile_n = tile % tiles_n

    rows = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    ks = tl.arange(0, BLOCK_K)
    row_ok = rows < M
    col_ok = cols < N

    # this split's share of the K tiles: [k_first, k_last)
    k_tiles = tl.cdiv(K, BLOCK_K)
    per_split = tl.cdiv(k_tiles, SPLIT_K)
    k_first = split * per_split
    k_last = tl.minimum(k_first + per_split, k_tiles)

    a_ptr = A + rows[:, None].to(tl.int64) * stride_am + (k_first * BLOCK_K + ks)[None, :] * stride_ak
    b_ptr = B + (k_first * BLOCK_K + ks)[:, None].to(tl.int64) * stride_bk + cols[None, :] * stride_bn
    acc = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
    for kt in range(k_first, k_last):
        k_ok = kt * BLOCK_K + ks < K
        a = tl.load(a_ptr, mask=row_ok[:, None] & k_ok[None, :], other=0.0)
        b = tl.load(b_ptr, mask=k_ok[:, None] & col_ok[None, :], other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptr += BLOCK_K * stride_ak
        b_ptr += BLOCK_K * stride_bk

    # OUT is C itself (SPLIT_K == 1) or the fp32 workspace; columns are contiguous
    o_ptr = OUT + split.to(tl.int64) * stride_os + rows[:, None].to(tl.int64) * stride_om + cols[None, :]
    tl.store(o_ptr, acc.to(OUT.dtype.element_ty), mask=row_ok[:, None] & col_ok[None, :])


@triton.jit
def _reduce_kernel(WS, C, numel, stride_ws, SPLIT_K: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < numel
    acc = tl.zeros([BLOCK], tl.float32)
    for s in range(SPLIT_K):
        acc += tl.load(WS + s * stride_ws + offs, mask=ok, other=0.0)
    tl.store(C + offs, acc.to(C.dtype.element_ty), mask=ok)


# ---------------------------------------------------------------- launcher
DTYPES = ("fp16", "bf16", "fp32")
TUNABLES = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "SPLIT_K", "num_warps", "num_stages")
BASELINE = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "SPLIT_K": 4, "num_warps": 4, "num_stages": 3}
REDUCE_BLOCK = 1024

# Few output tiles, long K: 64-256 tiles of 128 x 128 on 132 SMs, so the split decides
# how full the machine is. A and B: 256-544 MiB per launch (5-10x the H200's 50 MB L2),
# 0.14-0.27 TFLOP: 0.2-0.5 ms on an H200.
POINTS = [
    {"M": 1024, "N": 1024, "K": 65536, "dtype": "bf16"},    # 256 MiB, 137 GFLOP, 64 tiles of 128^2
    {"M": 2048, "N": 2048, "K": 32768, "dtype": "fp16"},    # 256 MiB, 275 GFLOP, 256 tiles
    {"M": 256, "N": 4096, "K": 65536, "dtype": "bf16"},     # 544 MiB (B dominates), 137 GFLOP, 64 tiles
]


def _torch_dtype(name: str):
    import torch
    try:
        return {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}") from None


def _elem_bytes(name: str) -> int:
    return 4 if name == "fp32" else 2


def _check_cfg(cfg) -> None:
    for name in ("BLOCK_M", "BLOCK_N", "BLOCK_K"):
        v = cfg[name]
        if v < 16 or v & (v - 1):
            raise ValueError(f"{name}={v} must be a power of two >= 16 (a tl.dot operand side)")
    if cfg["SPLIT_K"] < 1:
        raise ValueError(f"SPLIT_K={cfg['SPLIT_K']} must be >= 1")


def _kernel_args(a, b, out, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it).
    `out` is C [M, N] when SPLIT_K == 1, else the workspace [SPLIT_K, M, N]."""
    stride_os = out.stride(0) if out.dim() == 3 else 0
    return dict(A=a, B=b, OUT=out, M=a.shape[0], N=b.shape[1], K=a.shape[1],
                stride_am=a.stride(0), stride_ak=a.stride(1), stride_bk=b.stride(0), stride_bn=b.stride(1),
                stride_os=stride_os, stride_om=out.stride(-2),
                BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"], BLOCK_K=cfg["BLOCK_K"], SPLIT_K=cfg["SPLIT_K"])


def _out_buffer(a, b, split_k: int, empty):
    M, N = a.shape[0], b.shape[1]
    if split_k == 1:
        return empty((M, N), a.dtype)
    import torch
    return empty((split_k, M, N), torch.float32)


def splitk_gemm(a, b, *, BLOCK_M: int = 128, BLOCK_N: int = 128, BLOCK_K: int = 64, SPLIT_K: int = 4,
                num_warps: int = 4, num_stages: int = 3):
    """C = A @ B. a: [M, K], b: [K, N], one dtype; any strides. Returns [M, N] in a's dtype."""
    import torch
    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"expected a [M, K] and b [K, N]; got {tuple(a.shape)}, {tuple(b.shape)}")
    if a.dtype != b.dtype:
        raise ValueError(f"a and b dtypes differ: {a.dtype}, {b.dtype}")
    cfg = {"BLOCK_M": BLOCK_M, "BLOCK_N": BLOCK_N, "BLOCK_K": BLOCK_K, "SPLIT_K": SPLIT_K}
    _check_cfg(cfg)
    M, K = a.shape
    N = b.shape[1]
    out = _out_buffer(a, b, SPLIT_K, lambda shape, dt: torch.empty(shape, dtype=dt, device=a.device))
    tiles = triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N)
    _kernel[(tiles, SPLIT_K)](**_kernel_args(a, b, out, cfg), num_warps=num_warps, num_stages=num_stages)
    if SPLIT_K == 1:
        return out
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    _reduce_kernel[(triton.cdiv(M * N, REDUCE_BLOCK),)](out, c, M * N, out.stride(0), SPLIT_K=SPLIT_K,
                                                        BLOCK=REDUCE_BLOCK, num_warps=4)
    return c


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    import torch
    gen = torch.Generator(device=device).manual_seed(seed)
    dt = _torch_dtype(point.get("dtype", "bf16"))
    # scaled so C's entries are O(1) whatever K is
    scale = point["K"] ** -0.25
    a = (torch.randn((point["M"], point["K"]), generator=gen, device=device) * scale).to(dt)
    b = (torch.randn((point["K"], point["N"]), generator=gen, device=device) * scale).to(dt)
    return {"a": a, "b": b}


def launch(inputs, cfg):
    return splitk_gemm(inputs["a"], inputs["b"], BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"],
                       BLOCK_K=cfg["BLOCK_K"], SPLIT_K=cfg["SPLIT_K"],
                       num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])


def reference(inputs):
    return inputs["a"].float() @ inputs["b"].float()


def torch_baseline(inputs):
    """cuBLAS through torch, in the inputs' dtype."""
    return inputs["a"] @ inputs["b"]


def bytes_moved(point) -> int:
    """A and B read once, C written once (the fp32 workspace round trip is the split's cost, not counted)."""
    M, N, K = point["M"], point["N"], point["K"]
    return (M * K + K * N + M * N) * _elem_bytes(point.get("dtype", "bf16"))


def flops(point) -> int:
    return 2 * point["M"] * point["N"] * point["K"]


def grid(cfg, point) -> tuple[int, int]:
    """The launch grid of ``_kernel``: (output tiles, SPLIT_K)."""
    return triton.cdiv(point["M"], cfg["BLOCK_M"]) * triton.cdiv(point["N"], cfg["BLOCK_N"]), cfg["SPLIT_K"]


def loop_iterations(cfg, point) -> int:
    """K tiles per CTA (the longest split's share)."""
    return triton.cdiv(triton.cdiv(point["K"], cfg["BLOCK_K"]), cfg["SPLIT_K"])


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory)."""
    import torch
    dt = _torch_dtype(point.get("dtype", "bf16"))
    a = torch.empty((point["M"], point["K"]), dtype=dt, device="meta")
    b = torch.empty((point["K"], point["N"]), dtype=dt, device="meta")
    out = _out_buffer(a, b, cfg["SPLIT_K"], lambda shape, d: torch.empty(shape, dtype=d, device="meta"))
    return _kernel_args(a, b, out, cfg)
