"""FP8 scaled GEMM (the "scaled_mm" of FP8 inference), a bare @triton.jit kernel + its launcher.

    c[m, n] = (sum_k a[m, k] * w[n, k]) * scale_a[m] * scale_b[n] (+ bias[n])

a: [M, K] float8_e4m3fn activations (unit stride along K, any row stride), quantised per
token (scale_a: fp32, M of them, or one per-tensor scale); w: [N, K] float8_e4m3fn, the
weight as a checkpoint stores it (K contiguous, any row stride), quantised per output
channel (scale_b: fp32, N of them, or one per-tensor scale); bias: optional [N] in the
output dtype; c: [M, N] bf16 or fp16, fp32 accumulation. The products run on the fp8
tensor cores (tl.dot of two fp8 tiles: wgmma on sm_90); the scales are applied once, in
the epilogue, to the fp32 accumulator (a rank-1 rescale commutes with the K sum).

One CTA per (BLOCK_M, BLOCK_N) output tile. The weight tile is loaded as [BLOCK_K, BLOCK_N]
straight from the [N, K] layout, K contiguous: that is the K-major B operand fp8 wgmma
wants, so no transpose is ever materialised. Rows and columns past M and N are wrapped
(index mod M / N) so the operand loads need no M / N mask (the store is masked); the K
tail is masked only when K % BLOCK_K != 0 (EVEN_K, set by the launcher). CTAs are
launched in groups of GROUP_M tile rows walked column by column, so the CTAs resident
together share a few A row panels and B column panels in L2 (GROUP_M=1: plain row-major
tile order, each A panel reused across N, every B panel re-read from L2 or DRAM).

Tunables: BLOCK_M, BLOCK_N (powers of two >= 16), BLOCK_K (power of two >= 32, the fp8
dot's K granule), GROUP_M (>= 1), num_warps, num_stages.
Problem parameters (a workload point): M, N, K, dtype (the output's: bf16 / fp16), bias
(whether a bias row is added).
"""

from __future__ import annotations

import triton
import triton.language as tl

FP8_MAX = 448.0     # largest finite float8_e4m3fn


@triton.jit
def _kernel(A, B, SA, SB, BIAS, C, M, N, K, stride_am, stride_bn, stride_cm,
            A_PER_TOKEN: tl.constexpr, B_PER_CHANNEL: tl.constexpr, HAS_BIAS: tl.constexpr,
            EVEN_K: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
            GROUP_M: tl.constexpr):
    # grouped tile order: GROUP_M tile rows at a time, tile rows fastest within a group
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    per_group = GROUP_M * tiles_n
    first_m = (pid // per_group) * GROUP_M
    rows_in_group = tl.minimum(tiles_m - first_m, GROUP_M)
    tile_m = first_m + (pid % per_group) % rows_in_group
    tile_n = (pid % per_group) // rows_in_group

    rows = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rows_ld = rows % M          # wrapped: in-bounds addresses, so the loads need no row / column mask
    cols_ld = cols % N
    ks = tl.arange(0, BLOCK_K)

    a_ptr = A + rows_ld.to(tl.int64)[:, None] * stride_am + ks[None, :]
    b_ptr = B + cols_ld.to(tl.int64)[None, :] * stride_bn + ks[:, None]      # [BLOCK_K, BLOCK_N], K-major
    acc = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
    for k0 in range(0, K, BLOCK_K):
        if EVEN_K:
            a = tl.load(a_ptr)
            b = tl.load(b_ptr)
        else:
            k_ok = ks < K - k0
            a = tl.load(a_ptr, mask=k_ok[None, :], other=0.0)
            b = tl.load(b_ptr, mask=k_ok[:, None], other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptr += BLOCK_K
        b_ptr += BLOCK_K

    # epilogue: per-token x per-channel rescale, bias, one rounding to the output dtype
    if A_PER_TOKEN:
        acc = acc * tl.load(SA + rows_ld)[:, None]
    else:
        acc = acc * tl.load(SA)
    if B_PER_CHANNEL:
        acc = acc * tl.load(SB + cols_ld)[None, :]
    else:
        acc = acc * tl.load(SB)
    if HAS_BIAS:
        acc = acc + tl.load(BIAS + cols_ld)[None, :].to(tl.float32)
    c_ptr = C + rows.to(tl.int64)[:, None] * stride_cm + cols[None, :]
    tl.store(c_ptr, acc.to(C.dtype.element_ty), mask=(rows < M)[:, None] & (cols < N)[None, :])


# ---------------------------------------------------------------- launcher
DTYPES = ("bf16", "fp16")       # the output's; a and w are always float8_e4m3fn
TUNABLES = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "num_warps", "num_stages")
BASELINE = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 128, "GROUP_M": 8, "num_warps": 4, "num_stages": 4}

# Prefill linear layers, per-token fp8 activations x per-channel fp8 weights: 0.27-1.4 TFLOP
# each (~0.15-1 ms on an H200's ~2 PFLOP/s of dense fp8), compute-bound; operands 48-144 MiB,
# outputs 64-224 MiB.
POINTS = [
    {"M": 8192, "N": 4096, "K": 4096, "dtype": "bf16", "bias": False},     # Llama-3-8B o_proj, 8k tokens: 0.27 TFLOP
    {"M": 4096, "N": 28672, "K": 4096, "dtype": "fp16", "bias": False},    # Llama-3-8B gate_up_proj, 4k tokens: 0.96 TFLOP
    {"M": 8192, "N": 10240, "K": 8192, "dtype": "bf16", "bias": True},     # Qwen2.5-72B qkv_proj (has a bias), 8k tokens: 1.4 TFLOP
]


def _torch_dtype(name: str):
    import torch
    try:
        return {"bf16": torch.bfloat16, "fp16": torch.float16}[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)} (the output dtype)") from None


def _check_cfg(cfg) -> None:
    for name, least in (("BLOCK_M", 16), ("BLOCK_N", 16), ("BLOCK_K", 32)):
        v = cfg[name]
        if v < least or v & (v - 1):
            raise ValueError(f"{name}={v} must be a power of two >= {least} (an fp8 tl.dot operand side)")
    if cfg["GROUP_M"] < 1:
        raise ValueError(f"GROUP_M={cfg['GROUP_M']} must be >= 1")


def _kernel_args(a, w, scale_a, scale_b, bias, out, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it).
    scale_a, scale_b: 1-D fp32 (numel M or N: per token / per channel; numel 1: per tensor)."""
    M, K = a.shape
    N = w.shape[0]
    return dict(A=a, B=w, SA=scale_a, SB=scale_b, BIAS=bias, C=out, M=M, N=N, K=K,
                stride_am=a.stride(0), stride_bn=w.stride(0), stride_cm=out.stride(0),
                A_PER_TOKEN=scale_a.numel() != 1, B_PER_CHANNEL=scale_b.numel() != 1, HAS_BIAS=bias is not None,
                EVEN_K=K % cfg["BLOCK_K"] == 0, BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"],
                BLOCK_K=cfg["BLOCK_K"], GROUP_M=cfg["GROUP_M"])


def _flat_scale(s, n: int, what: str, count: str):
    import torch
    if not isinstance(s, torch.Tensor) or s.dtype != torch.float32 or s.numel() not in (1, n):
        got = f"{s.dtype} {tuple(s.shape)}" if isinstance(s, torch.Tensor) else type(s).__name__
        raise ValueError(f"{what} must be an fp32 tensor of 1 (per tensor) or {count}={n} elements; got {got}")
    return s.reshape(-1).contiguous()


def fp8_scaled_mm(a, w, scale_a, scale_b, out_dtype=None, bias=None, *, out=None, BLOCK_M=128, BLOCK_N=128,
                  BLOCK_K=128, GROUP_M=8, num_warps=4, num_stages=4):
    """(a @ w.T) * scale_a * scale_b (+ bias) for a [M, K] and w [N, K] float8_e4m3fn (K
    contiguous), scale_a fp32 [M, 1] / [M] / one element, scale_b fp32 [N, 1] / [1, N] / [N] /
    one element, bias [N] in out_dtype (bf16, the default, or fp16). Returns [M, N] (into
    `out` if given: [M, N] of out_dtype, unit column stride)."""
    import torch
    if out_dtype is None:
        out_dtype = out.dtype if out is not None else torch.bfloat16
    if out_dtype not in (torch.bfloat16, torch.float16):
        raise ValueError(f"out_dtype must be torch.bfloat16 or torch.float16; got {out_dtype}")
    if a.dim() != 2 or w.dim() != 2 or a.shape[1] != w.shape[1]:
        raise ValueError(f"expected a [M, K] and w [N, K]; got {tuple(a.shape)}, {tuple(w.shape)}")
    if a.dtype != torch.float8_e4m3fn or w.dtype != torch.float8_e4m3fn:
        raise ValueError(f"a and w must be torch.float8_e4m3fn; got {a.dtype}, {w.dtype}")
    M, K = a.shape
    N = w.shape[0]
    if M == 0 or N == 0 or K == 0:
        raise ValueError(f"empty GEMM: M={M}, N={N}, K={K}")
    if a.stride(1) != 1 or w.stride(1) != 1:
        raise ValueError(f"a and w need K contiguous (unit stride along K); got strides {a.stride()}, {w.stride()}")
    scale_a = _flat_scale(scale_a, M, "scale_a", "M")
    scale_b = _flat_scale(scale_b, N, "scale_b", "N")
    if bias is not None:
        if bias.dtype != out_dtype or bias.numel() != N:
            raise ValueError(f"bias must be {out_dtype} of N={N} elements; got {bias.dtype} {tuple(bias.shape)}")
        bias = bias.reshape(-1).contiguous()
    if out is None:
        out = torch.empty((M, N), dtype=out_dtype, device=a.device)
    elif tuple(out.shape) != (M, N) or out.dtype != out_dtype or out.stride(1) != 1:
        raise ValueError(f"out must be {out_dtype} [{M}, {N}] with unit column stride; got {out.dtype} "
                         f"{tuple(out.shape)} strides {out.stride()}")
    cfg = {"BLOCK_M": BLOCK_M, "BLOCK_N": BLOCK_N, "BLOCK_K": BLOCK_K, "GROUP_M": GROUP_M}
    _check_cfg(cfg)
    grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N),)
    _kernel[grid](**_kernel_args(a, w, scale_a, scale_b, bias, out, cfg), num_warps=num_warps,
                  num_stages=num_stages)
    return out


def quantize_rows(x):
    """x [R, K] (any float) -> (float8_e4m3fn [R, K], fp32 [R, 1]): one scale per row, amax / 448."""
    import torch
    xf = x.float()
    scale = (xf.abs().amax(dim=1, keepdim=True) / FP8_MAX).clamp(min=1e-12)
    return (xf / scale).clamp(-FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn), scale


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """Dynamic per-token quantised activations, per-channel quantised weights (~K^-1/2, so the
    output is O(1) whatever K is), a bias of O(1) when the point has one."""
    import torch
    gen = torch.Generator(device=device).manual_seed(seed)
    dt = _torch_dtype(point.get("dtype", "bf16"))
    M, N, K = point["M"], point["N"], point["K"]
    a, scale_a = quantize_rows(torch.randn((M, K), generator=gen, device=device))
    w, scale_b = quantize_rows(torch.randn((N, K), generator=gen, device=device) * K ** -0.5)
    bias = torch.randn((N,), generator=gen, device=device).to(dt) if point.get("bias", False) else None
    return {"a": a, "w": w, "scale_a": scale_a, "scale_b": scale_b.reshape(1, N), "bias": bias, "out_dtype": dt}


def launch(inputs, cfg):
    return fp8_scaled_mm(inputs["a"], inputs["w"], inputs["scale_a"], inputs["scale_b"], inputs["out_dtype"],
                         inputs["bias"], BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"], BLOCK_K=cfg["BLOCK_K"],
                         GROUP_M=cfg["GROUP_M"], num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])


def reference(inputs):
    """In fp32: the fp8 operands upcast (exact), matmul, both scales, the bias."""
    sa = inputs["scale_a"].float().reshape(-1, 1)
    sb = inputs["scale_b"].float().reshape(1, -1)
    ref = (inputs["a"].float() @ inputs["w"].float().T) * sa * sb
    if inputs["bias"] is not None:
        ref = ref + inputs["bias"].float()
    return ref


def torch_baseline(inputs):
    """torch._scaled_mm (cuBLASLt's fp8 GEMM on a GPU) with row-wise scales and the bias."""
    import torch
    a, w = inputs["a"], inputs["w"]
    M, N = a.shape[0], w.shape[0]
    sa = inputs["scale_a"].float().reshape(-1, 1).expand(M, 1).contiguous()
    sb = inputs["scale_b"].float().reshape(1, -1).expand(1, N).contiguous()
    return torch._scaled_mm(a, w.T, scale_a=sa, scale_b=sb, bias=inputs["bias"], out_dtype=inputs["out_dtype"])


def bytes_moved(point) -> int:
    """a and w (1 byte each), the fp32 scales and the bias read once, c written once."""
    M, N, K = point["M"], point["N"], point["K"]
    _torch_dtype(point.get("dtype", "bf16"))        # rejects a dtype that is not an output dtype
    bias = 2 * N if point.get("bias", False) else 0
    return M * K + N * K + 4 * (M + N) + bias + 2 * M * N


def flops(point) -> int:
    """The GEMM's multiply-adds (the epilogue's few per output element not counted)."""
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
    a = torch.empty((M, K), dtype=torch.float8_e4m3fn, device="meta")
    w = torch.empty((N, K), dtype=torch.float8_e4m3fn, device="meta")
    scale_a = torch.empty((M,), dtype=torch.float32, device="meta")
    scale_b = torch.empty((N,), dtype=torch.float32, device="meta")
    bias = torch.empty((N,), dtype=dt, device="meta") if point.get("bias", False) else None
    out = torch.empty((M, N), dtype=dt, device="meta")
    return _kernel_args(a, w, scale_a, scale_b, bias, out, cfg)
