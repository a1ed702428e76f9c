"""Weight-only int8 GEMM (W8A16), a bare @triton.jit kernel + its launcher.

    out[m, n] = sum_k x[m, k] * (wq[k, n] * scales[k // 128, n])

x: [M, K] fp16 / bf16 activations (unit stride along K); wq: [K, N] int8, N contiguous;
scales: [cdiv(K, 128), N] in x's dtype, one per (group of 128 K rows, output column) --
the AWQ / GPTQ per-group layout; out: [M, N] in x's dtype, fp32 accumulation. wq is
K-major with N contiguous (as GPTQ's / AWQ's packed qweight) so a weight tile and its
group's scale row share the contiguous N axis: the dequant is a broadcast multiply of a
[BLOCK_N] scale row over the [BLOCK_K, BLOCK_N] tile, which is tl.dot's B operand as
is, no transpose. Per K step a CTA loads the x tile, the int8 tile and the scale row,
dequantises in fp32 (int8 -> fp32 exact, times the scale, one rounding to x's dtype)
and feeds tl.dot: the dequant sits INSIDE the K loop. BLOCK_K is 64 or 128, a divisor of
the group size, so a K tile never straddles two groups (one scale row per step).
CTAs are ordered M-fastest: those running together share a weight column panel, so
each int8 weight byte comes from DRAM once and x is re-read from L2.

Tunables: BLOCK_M, BLOCK_N (powers of two >= 16), BLOCK_K (64 or 128), num_warps,
num_stages. Problem parameters (a workload point): M, N, K, dtype.
"""

from __future__ import annotations

import triton
import triton.language as tl

GROUP_SIZE = 128


@triton.jit
def _kernel(X, WQ, S, OUT, M, N, K, stride_xm, stride_wk, stride_sg, stride_om,
            GROUP: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    tl.static_assert(GROUP % BLOCK_K == 0, "a K tile must not straddle two scale groups")
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    rows = (pid % tiles_m) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = (pid // tiles_m) * BLOCK_N + tl.arange(0, BLOCK_N)
    ks = tl.arange(0, BLOCK_K)
    row_ok = rows < M
    col_ok = cols < N

    x_ptr = X + rows.to(tl.int64)[:, None] * stride_xm + ks[None, :]
    w_ptr = WQ + ks.to(tl.int64)[:, None] * stride_wk + cols[None, :]
    s_ptr = S + cols
    acc = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k_ok = k0 + ks < K
        a = tl.load(x_ptr, mask=row_ok[:, None] & k_ok[None, :], other=0.0)
        wq = tl.load(w_ptr, mask=k_ok[:, None] & col_ok[None, :], other=0)
        s = tl.load(s_ptr + (k0 // GROUP) * stride_sg, mask=col_ok, other=0.0)
        b = (wq.to(tl.float32) * s.to(tl.float32)[None, :]).to(X.dtype.element_ty)
        acc = tl.dot(a, b, acc)
        x_ptr += BLOCK_K
        w_ptr += BLOCK_K * stride_wk

    o_ptr = OUT + rows.to(tl.int64)[:, None] * stride_om + cols[None, :]
    tl.store(o_ptr, acc.to(OUT.dtype.element_ty), mask=row_ok[:, None] & col_ok[None, :])


# ---------------------------------------------------------------- launcher
DTYPES = ("fp16", "bf16")
TUNABLES = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "num_warps", "num_stages")
BASELINE = {"BLOCK_M": 16, "BLOCK_N": 128, "BLOCK_K": 128, "num_warps": 4, "num_stages": 3}

# int8 weights 56-112 MiB (1.2-2.3x the H200's 50 MB L2); scales 1/64 of them at 2 bytes.
POINTS = [
    {"M": 16, "N": 28672, "K": 4096, "dtype": "fp16"},    # W 112 MiB, 3.8 GFLOP: decode batch, memory-bound
    {"M": 128, "N": 8192, "K": 8192, "dtype": "bf16"},    # W 64 MiB (+x, out 2 MiB each), 17 GFLOP
    {"M": 2048, "N": 4096, "K": 14336, "dtype": "bf16"},  # W 56 MiB, x 56 MiB, 240 GFLOP: prefill, compute-bound
]


def _torch_dtype(name: str):
    import torch
    try:
        return {"fp16": torch.float16, "bf16": torch.bfloat16}[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}") from None


def _check_cfg(cfg) -> None:
    for name in ("BLOCK_M", "BLOCK_N"):
        v = cfg[name]
        if v < 16 or v & (v - 1):
            raise ValueError(f"{name}={v} must be a power of two >= 16 (a tl.dot operand side)")
    if cfg["BLOCK_K"] not in (64, 128):
        raise ValueError(f"BLOCK_K={cfg['BLOCK_K']} must be 64 or 128 (a divisor of the group size "
                         f"{GROUP_SIZE}, so a K tile never straddles two groups)")


def _kernel_args(x, wq, scales, out, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    return dict(X=x, WQ=wq, S=scales, OUT=out, M=x.shape[0], N=wq.shape[1], K=x.shape[1],
                stride_xm=x.stride(0), stride_wk=wq.stride(0), stride_sg=scales.stride(0), stride_om=out.stride(0),
                GROUP=GROUP_SIZE, BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"], BLOCK_K=cfg["BLOCK_K"])


def w8a16_gemm(x, wq, scales, *, BLOCK_M=16, BLOCK_N=128, BLOCK_K=128, num_warps=4, num_stages=3):
    """x @ dequant(wq, scales) for x [M, K] fp16/bf16, wq [K, N] int8, scales [cdiv(K, 128), N]
    in x's dtype. Returns [M, N] in x's dtype."""
    import torch
    if x.dim() != 2 or wq.dim() != 2 or x.shape[1] != wq.shape[0]:
        raise ValueError(f"expected x [M, K] and wq [K, N]; got {tuple(x.shape)}, {tuple(wq.shape)}")
    if x.dtype not in (torch.float16, torch.bfloat16) or wq.dtype != torch.int8:
        raise ValueError(f"need fp16/bf16 x and int8 wq; got {x.dtype}, {wq.dtype}")
    groups = triton.cdiv(x.shape[1], GROUP_SIZE)
    if tuple(scales.shape) != (groups, wq.shape[1]) or scales.dtype != x.dtype:
        raise ValueError(f"scales must be {x.dtype} [{groups}, {wq.shape[1]}]; got {scales.dtype} "
                         f"{tuple(scales.shape)}")
    cfg = {"BLOCK_M": BLOCK_M, "BLOCK_N": BLOCK_N, "BLOCK_K": BLOCK_K}
    _check_cfg(cfg)
    x, wq, scales = x.contiguous(), wq.contiguous(), scales.contiguous()
    out = torch.empty((x.shape[0], wq.shape[1]), dtype=x.dtype, device=x.device)
    grid = (triton.cdiv(x.shape[0], BLOCK_M) * triton.cdiv(wq.shape[1], BLOCK_N),)
    _kernel[grid](**_kernel_args(x, wq, scales, out, cfg), num_warps=num_warps, num_stages=num_stages)
    return out


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    import torch
    gen = torch.Generator(device=device).manual_seed(seed)
    dt = _torch_dtype(point.get("dtype", "bf16"))
    M, N, K = point["M"], point["N"], point["K"]
    x = torch.randn((M, K), generator=gen, device=device).to(dt)
    wq = torch.randint(-127, 128, (K, N), generator=gen, device=device, dtype=torch.int8)
    # scales in [0.5, 1.5] / (73 sqrt(K)): dequantised weights ~ K^-1/2 (int8 std ~73), out O(1)
    s = (0.5 + torch.rand((triton.cdiv(K, GROUP_SIZE), N), generator=gen, device=device)) / (73 * K ** 0.5)
    return {"x": x, "wq": wq, "scales": s.to(dt)}


def launch(inputs, cfg):
    return w8a16_gemm(inputs["x"], inputs["wq"], inputs["scales"], BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"],
                      BLOCK_K=cfg["BLOCK_K"], num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])


def dequant(wq, scales):
    """wq [K, N] * the scale of each row's group, in fp32."""
    return wq.float() * scales.float().repeat_interleave(GROUP_SIZE, dim=0)[: wq.shape[0]]


def reference(inputs):
    return inputs["x"].float() @ dequant(inputs["wq"], inputs["scales"])


def torch_baseline(inputs):
    """Eager dequant (one [K, N] weight in x's dtype) then cuBLAS's GEMM, in the inputs' dtype."""
    x, wq, s = inputs["x"], inputs["wq"], inputs["scales"]
    return x @ (wq.to(x.dtype) * s.repeat_interleave(GROUP_SIZE, dim=0)[: wq.shape[0]])


def bytes_moved(point) -> int:
    """x, the int8 weights and the scales read once, out written once."""
    M, N, K = point["M"], point["N"], point["K"]
    return K * N + 2 * (M * K + triton.cdiv(K, GROUP_SIZE) * N + M * N)


def flops(point) -> int:
    """The GEMM's multiply-adds (the dequant's K N multiplies per CTA row tile not counted)."""
    return 2 * point["M"] * point["N"] * point["K"]


def grid(cfg, point) -> int:
    """One CTA per (BLOCK_M, BLOCK_N) output tile."""
    return triton.cdiv(point["M"], cfg["BLOCK_M"]) * triton.cdiv(point["N"], cfg["BLOCK_N"])


def loop_iterations(cfg, point) -> int:
    """K tiles per CTA."""
    return triton.cdiv(point["K"], cfg["BLOCK_K"])


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory)."""
    import torch
    dt = _torch_dtype(point.get("dtype", "bf16"))
    M, N, K = point["M"], point["N"], point["K"]
    x = torch.empty((M, K), dtype=dt, device="meta")
    wq = torch.empty((K, N), dtype=torch.int8, device="meta")
    scales = torch.empty((triton.cdiv(K, GROUP_SIZE), N), dtype=dt, device="meta")
    out = torch.empty((M, N), dtype=dt, device="meta")
    return _kernel_args(x, wq, scales, out, cfg)
