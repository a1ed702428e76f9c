"""Batched GEMM, C[b] = A[b] @ B[b], a bare @triton.jit kernel + its launcher.

A: [BATCH, M, K], B: [BATCH, K, N], fp16 / bf16 (fp32 runs the dots as tf32 on a GPU);
C: [BATCH, M, N] in A's dtype, fp32 accumulation. The grid is 2D: axis 0 walks the
output tiles of one matrix (tiles_m x tiles_n, row-major), axis 1 the batch; each CTA
computes one BLOCK_M x BLOCK_N tile of one C[b] over the whole K. Made for many small-to-
medium matrices (attention-like batched products, per-expert GEMMs of equal size):
each matrix alone has too few tiles to fill the machine, the batch fills it.

Tunables: BLOCK_M, BLOCK_N, BLOCK_K (powers of two >= 16), num_warps, num_stages.
Problem parameters (a workload point): BATCH, M, N, K, dtype.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _kernel(A, B, C, M, N, K,
            stride_ab, stride_am, stride_ak, stride_bb, stride_bk, stride_bn, stride_cb, stride_cm, stride_cn,
            BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    tile = tl.program_id(0)
    batch = tl.program_id(1).to(tl.int64)
    tiles_n = tl.cdiv(N, BLOCK_N)
    tile_m = tile // tiles_n
    tile_n = tile % tiles_n

    rows = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    ks = tl.arange(0, BLOCK_K)
    row_ok = rows < M
    col_ok = cols < N

    a_ptr = A + batch * stride_ab + rows[:, None] * stride_am + ks[None, :] * stride_ak
    b_ptr = B + batch * stride_bb + ks[:, None] * stride_bk + cols[None, :] * stride_bn
    acc = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k_ok = k0 + ks < K
        a = tl.load(a_ptr, mask=row_ok[:, None] & k_ok[None, :], other=0.0)
        b = tl.load(b_ptr, mask=k_ok[:, None] & col_ok[None, :], other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptr += BLOCK_K * stride_ak
        b_ptr += BLOCK_K * stride_bk

    c_ptr = C + batch * stride_cb + rows[:, None] * stride_cm + cols[None, :] * stride_cn
    tl.store(c_ptr, acc.to(C.dtype.element_ty), mask=row_ok[:, None] & col_ok[None, :])


# ---------------------------------------------------------------- launcher
DTYPES = ("fp16", "bf16", "fp32")
TUNABLES = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "num_warps", "num_stages")
BASELINE = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "num_warps": 4, "num_stages": 3}

# Batch 16-64 of small-to-medium matrices: 16-64 output tiles of 128 x 128 per matrix,
# 512-2,048 such CTAs per launch. A, B and C: 288-320 MiB per launch (6x the H200's
# 50 MB L2), 69-137 GFLOP: 0.1-0.3 ms on an H200.
POINTS = [
    {"BATCH": 64, "M": 512, "N": 512, "K": 2048, "dtype": "bf16"},     # 288 MiB, 69 GFLOP, 16 tiles each
    {"BATCH": 32, "M": 1024, "N": 1024, "K": 2048, "dtype": "fp16"},   # 320 MiB, 137 GFLOP, 64 tiles each
    {"BATCH": 16, "M": 2048, "N": 256, "K": 4096, "dtype": "bf16"},    # 304 MiB (A dominates), 69 GFLOP, 32 tiles
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


def _kernel_args(a, b, c, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    return dict(A=a, B=b, C=c, M=a.shape[1], N=b.shape[2], K=a.shape[2],
                stride_ab=a.stride(0), stride_am=a.stride(1), stride_ak=a.stride(2),
                stride_bb=b.stride(0), stride_bk=b.stride(1), stride_bn=b.stride(2),
                stride_cb=c.stride(0), stride_cm=c.stride(1), stride_cn=c.stride(2),
                BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"], BLOCK_K=cfg["BLOCK_K"])


def bmm(a, b, *, BLOCK_M: int = 128, BLOCK_N: int = 128, BLOCK_K: int = 64, num_warps: int = 4,
        num_stages: int = 3):
    """C = A @ B per batch. a: [BATCH, M, K], b: [BATCH, K, N], one dtype; any strides.
    Returns [BATCH, M, N] in a's dtype."""
    import torch
    if a.dim() != 3 or b.dim() != 3 or a.shape[0] != b.shape[0] or a.shape[2] != b.shape[1]:
        raise ValueError(f"expected a [BATCH, M, K] and b [BATCH, K, N]; got {tuple(a.shape)}, {tuple(b.shape)}")
    if a.dtype != b.dtype:
        raise ValueError(f"a and b dtypes differ: {a.dtype}, {b.dtype}")
    cfg = {"BLOCK_M": BLOCK_M, "BLOCK_N": BLOCK_N, "BLOCK_K": BLOCK_K}
    _check_cfg(cfg)
    batch, M, _ = a.shape
    N = b.shape[2]
    c = torch.empty((batch, M, N), dtype=a.dtype, device=a.device)
    tiles = triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N)
    _kernel[(tiles, batch)](**_kernel_args(a, b, c, cfg), num_warps=num_warps, num_stages=num_stages)
    return c


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    import torch
    gen = torch.Generator(device=device).manual_seed(seed)
    dt = _torch_dtype(point.get("dtype", "bf16"))
    # scaled so C's entries are O(1) whatever K is
    scale = point["K"] ** -0.25
    a = (torch.randn((point["BATCH"], point["M"], point["K"]), generator=gen, device=device) * scale).to(dt)
    b = (torch.randn((point["BATCH"], point["K"], point["N"]), generator=gen, device=device) * scale).to(dt)
    return {"a": a, "b": b}


def launch(inputs, cfg):
    return bmm(inputs["a"], inputs["b"], BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"], BLOCK_K=cfg["BLOCK_K"],
               num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])


def reference(inputs):
    import torch
    return torch.bmm(inputs["a"].float(), inputs["b"].float())


def torch_baseline(inputs):
    """cuBLAS's batched GEMM through torch, in the inputs' dtype."""
    import torch
    return torch.bmm(inputs["a"], inputs["b"])


def bytes_moved(point) -> int:
    """A and B read once, C written once."""
    Bt, M, N, K = point["BATCH"], point["M"], point["N"], point["K"]
    return Bt * (M * K + K * N + M * N) * _elem_bytes(point.get("dtype", "bf16"))


def flops(point) -> int:
    return 2 * point["BATCH"] * point["M"] * point["N"] * point["K"]


def grid(cfg, point) -> tuple[int, int]:
    """The launch grid: (tiles of one matrix, the batch)."""
    return triton.cdiv(point["M"], cfg["BLOCK_M"]) * triton.cdiv(point["N"], cfg["BLOCK_N"]), point["BATCH"]


def loop_iterations(cfg, point) -> int:
    """K tiles per CTA."""
    return triton.cdiv(point["K"], cfg["BLOCK_K"])


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory)."""
    import torch
    dt = _torch_dtype(point.get("dtype", "bf16"))
    Bt, M, N, K = point["BATCH"], point["M"], point["N"], point["K"]
    a = torch.empty((Bt, M, K), dtype=dt, device="meta")
    b = torch.empty((Bt, K, N), dtype=dt, device="meta")
    c = torch.empty((Bt, M, N), dtype=dt, device="meta")
    return _kernel_args(a, b, c, cfg)
