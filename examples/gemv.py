"""Matrix-vector product, y = W @ x, a bare @triton.jit kernel + its launcher.

    y[n] = sum_k W[n, k] * x[k]

W: [N, K] row-major (unit stride along K), x: [K], y: [N]; fp16 / bf16 / fp32, one
dtype for all three, fp32 accumulation, y rounded to W's dtype. One CTA owns BLOCK_N
rows and walks K in BLOCK_K chunks: per chunk it loads a [BLOCK_N, BLOCK_K] tile of
W and the matching [BLOCK_K] slice of x, and folds the chunk into a [BLOCK_N] fp32
accumulator with one row reduction (tl.sum over K inside the loop). No tensor cores:
one multiply-add per element of W, read exactly once. The batch-1 decode GEMV of an
LLM: purely memory-bound; x (<= 56 KiB) stays in L2 and is re-read by every CTA.

Tunables: BLOCK_N, BLOCK_K (powers of two), num_warps, num_stages (no dot: Triton 3.9
leaves both loads unpipelined, so num_stages changes nothing in the cubin).
Problem parameters (a workload point): N, K, dtype.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _kernel(W, X, Y, N, K, stride_wn, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    row_ok = rows < N
    ks = tl.arange(0, BLOCK_K)

    w_ptr = W + rows.to(tl.int64)[:, None] * stride_wn + ks[None, :]
    x_ptr = X + ks
    acc = tl.zeros([BLOCK_N], tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k_ok = k0 + ks < K
        w = tl.load(w_ptr, mask=row_ok[:, None] & k_ok[None, :], other=0.0)
        x = tl.load(x_ptr, mask=k_ok, other=0.0)
        acc += tl.sum(w.to(tl.float32) * x.to(tl.float32)[None, :], axis=1)
        w_ptr += BLOCK_K
        x_ptr += BLOCK_K

    tl.store(Y + rows, acc.to(Y.dtype.element_ty), mask=row_ok)


# ---------------------------------------------------------------- launcher
DTYPES = ("fp16", "bf16", "fp32")
TUNABLES = ("BLOCK_N", "BLOCK_K", "num_warps", "num_stages")
BASELINE = {"BLOCK_N": 16, "BLOCK_K": 256, "num_warps": 4, "num_stages": 2}

# W dominates: 128-224 MiB per launch (2.7-4.7x the H200's 50 MB L2), 28-47 us at
# 4.8 TB/s. x and y together are at most 72 KiB.
POINTS = [
    {"N": 8192, "K": 8192, "dtype": "bf16"},      # W 128 MiB (a square projection, 8k hidden)
    {"N": 28672, "K": 4096, "dtype": "fp16"},     # W 224 MiB (Llama-3-8B's fused gate/up proj at batch 1): 28,672 rows
    {"N": 4096, "K": 14336, "dtype": "fp32"},     # W 224 MiB (Llama-3-8B's down-proj, fp32: long rows, few CTAs)
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
    for name in ("BLOCK_N", "BLOCK_K"):
        v = cfg[name]
        if v < 1 or v & (v - 1):
            raise ValueError(f"{name}={v} must be a power of two")


def _kernel_args(w, x, y, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    return dict(W=w, X=x, Y=y, N=w.shape[0], K=w.shape[1], stride_wn=w.stride(0),
                BLOCK_N=cfg["BLOCK_N"], BLOCK_K=cfg["BLOCK_K"])


def gemv(w, x, *, BLOCK_N: int = 16, BLOCK_K: int = 256, num_warps: int = 4, num_stages: int = 2):
    """W @ x for w [N, K] (rows may be strided) and x [K], one dtype. Returns [N] in w's dtype."""
    import torch
    if w.dim() != 2 or x.dim() != 1 or x.shape[0] != w.shape[1]:
        raise ValueError(f"expected w [N, K] and x [K]; got {tuple(w.shape)}, {tuple(x.shape)}")
    if w.dtype != x.dtype:
        raise ValueError(f"w and x dtypes differ: {w.dtype}, {x.dtype}")
    cfg = {"BLOCK_N": BLOCK_N, "BLOCK_K": BLOCK_K}
    _check_cfg(cfg)
    if w.stride(1) != 1:
        w = w.contiguous()
    x = x.contiguous()
    y = torch.empty((w.shape[0],), dtype=w.dtype, device=w.device)
    _kernel[(triton.cdiv(w.shape[0], BLOCK_N),)](**_kernel_args(w, x, y, cfg), num_warps=num_warps,
                                                 num_stages=num_stages)
    return y


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    import torch
    gen = torch.Generator(device=device).manual_seed(seed)
    dt = _torch_dtype(point.get("dtype", "bf16"))
    # W scaled by K^-1/2 so y's entries are O(1) whatever K is
    w = (torch.randn((point["N"], point["K"]), generator=gen, device=device) * point["K"] ** -0.5).to(dt)
    x = torch.randn((point["K"],), generator=gen, device=device).to(dt)
    return {"w": w, "x": x}


def launch(inputs, cfg):
    return gemv(inputs["w"], inputs["x"], BLOCK_N=cfg["BLOCK_N"], BLOCK_K=cfg["BLOCK_K"],
                num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])


def reference(inputs):
    return inputs["w"].float() @ inputs["x"].float()


def torch_baseline(inputs):
    """cuBLAS's GEMV through torch, in the inputs' dtype."""
    return inputs["w"] @ inputs["x"]


def bytes_moved(point) -> int:
    """W and x read once, y written once."""
    N, K = point["N"], point["K"]
    return (N * K + K + N) * _elem_bytes(point.get("dtype", "bf16"))


def flops(point) -> int:
    return 2 * point["N"] * point["K"]


def grid(cfg, point) -> int:
    """One CTA per BLOCK_N rows."""
    return triton.cdiv(point["N"], cfg["BLOCK_N"])


def loop_iterations(cfg, point) -> int:
    """K chunks per CTA."""
    return triton.cdiv(point["K"], cfg["BLOCK_K"])


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory)."""
    import torch
    dt = _torch_dtype(point.get("dtype", "bf16"))
    w = torch.empty((point["N"], point["K"]), dtype=dt, device="meta")
    x = torch.empty((point["K"],), dtype=dt, device="meta")
    y = torch.empty((point["N"],), dtype=dt, device="meta")
    return _kernel_args(w, x, y, cfg)
