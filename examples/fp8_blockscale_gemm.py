"""Block-scaled FP8 GEMM (the DeepSeek-V3 FP8 recipe, "w8a8 block fp8"), a bare @triton.jit
kernel + its launcher.

    c[m, n] = sum_g (sum_{k in group g} a[m, k] * b[n, k]) * a_scale[m, g] * b_scale[n // 128, g]

with g = k // 128. a: [M, K] float8_e4m3fn activations, quantised per token and 128-wide K
group (a_scale: fp32 [M, cdiv(K, 128)], any strides: row-major as a per-token-group quant
kernel writes it, or M-contiguous as DeepGEMM and cuBLASLt want it); b: [N, K]
float8_e4m3fn, the weight as a checkpoint stores it (K contiguous, any row stride), quantised
per 128 x 128 block (b_scale: fp32 [cdiv(N, 128), cdiv(K, 128)], the checkpoint's
weight_scale_inv, any strides); c: [M, N] bf16 or fp16. The scales are dequantisation
multipliers (x ~= q * scale).

One CTA per (BLOCK_M, BLOCK_N) output tile; it walks K in steps of one scale group,
BLOCK_K = 128, fixed by the format rather than tuned: per step a fresh tl.dot of the two fp8
tiles (fp8 tensor cores: four k32 wgmma on sm_90, into a zeroed fp32 accumulator) gives that
group's partial sums, which are rescaled by a_scale[rows, g] x b_scale[tile's block, g] and
added to the fp32 accumulator in registers (one FMA per element per group). A step of 128
is the largest that keeps one scale pair per step and is also DeepSeek's promotion interval
(Hopper's fp8 wgmma keeps fewer accumulator bits than fp32, so the partial sums are moved to
fp32 every 128 K); a divisor (64) would double the per-element rescale FMAs and halve the
bytes per pipeline stage for nothing. The price of the recipe is that the group's dot result
and the accumulator are both live: 2 x BLOCK_M x BLOCK_N fp32 values per CTA in registers.

BLOCK_N <= 128 (a power of two) lies inside one 128-row block of b, so its b scale is one
scalar per step; BLOCK_N = 256 spans two blocks and loads a [BLOCK_N] vector of b scales
(col // 128). The weight tile is loaded as [BLOCK_K, BLOCK_N] straight from the [N, K]
layout, K contiguous: the K-major B operand fp8 wgmma wants, no transpose materialised.
Rows and columns past M and N are wrapped (index mod M / N) so the operand and scale loads
need no M / N mask (the store is masked); the K tail (K % 128 != 0, a partial last group)
is masked only when present (EVEN_K, set by the launcher). CTAs are launched in bands of
GROUP_M tile rows walked column by column, so the CTAs resident together share a few A row
panels and B column panels in L2 (GROUP_M = 1: row-major tile order, each B panel re-read
from DRAM once per tile row when B does not fit in L2).

Tunables: BLOCK_M, BLOCK_N (powers of two >= 16: a BLOCK_N above 128 is a multiple of it),
GROUP_M (>= 1), num_warps, num_stages.
Problem parameters (a workload point): M, N, K, dtype (the output's: bf16 / fp16).
"""

from __future__ import annotations

import triton
import triton.language as tl

FP8_MAX = 448.0     # largest finite float8_e4m3fn
GROUP_K = 128       # K elements per scale, both operands (the format's)
GROUP_N = 128       # weight rows (output columns) per b scale (the format's)


@triton.jit
def _kernel(A, B, AS, BS, C, M, N, K, stride_am, stride_bn, stride_cm, stride_asm, stride_asg, stride_bsn,
            stride_bsg, EVEN_K: tl.constexpr, GROUP_N: tl.constexpr, BLOCK_K: tl.constexpr,
            BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    tl.static_assert(BLOCK_N <= GROUP_N or BLOCK_N % GROUP_N == 0,
                     "a column tile must lie in one b scale block or cover whole ones")
    # banded tile order: GROUP_M tile rows at a time, tile rows fastest within a band
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    band_size = GROUP_M * tiles_n
    band = pid // band_size
    first_m = band * GROUP_M
    band_rows = tl.minimum(tiles_m - first_m, GROUP_M)
    in_band = pid - band * band_size
    tile_m = first_m + in_band % band_rows
    tile_n = in_band // band_rows

    rows = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rows_ld = rows % M          # wrapped: in-bounds addresses, no row / column mask on the loads
    cols_ld = cols % N
    ks = tl.arange(0, BLOCK_K)

    a_ptr = A + rows_ld.to(tl.int64)[:, None] * stride_am + ks[None, :]
    b_ptr = B + cols_ld.to(tl.int64)[None, :] * stride_bn + ks[:, None]      # [BLOCK_K, BLOCK_N], K-major
    as_ptr = AS + rows_ld * stride_asm
    if BLOCK_N <= GROUP_N:
        bs_ptr = BS + ((tile_n * BLOCK_N) // GROUP_N) * stride_bsn             # one scale block per tile
    else:
        bs_ptr = BS + (cols_ld // GROUP_N) * stride_bsn

    acc = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
    for g in range(0, tl.cdiv(K, BLOCK_K)):
        if EVEN_K:
            a = tl.load(a_ptr)
            b = tl.load(b_ptr)
        else:
            k_ok = ks < K - g * BLOCK_K
            a = tl.load(a_ptr, mask=k_ok[None, :], other=0.0)
            b = tl.load(b_ptr, mask=k_ok[:, None], other=0.0)
        sa = tl.load(as_ptr)
        sb = tl.load(bs_ptr)
        part = tl.dot(a, b)                     # this group's partial sums, fp32
        if BLOCK_N <= GROUP_N:
            acc += part * (sa * sb)[:, None]
        else:
            acc += part * sa[:, None] * sb[None, :]
        a_ptr += BLOCK_K
        b_ptr += BLOCK_K
        as_ptr += stride_asg
        bs_ptr += stride_bsg

    c_ptr = C + rows.to(tl.int64)[:, None] * stride_cm + cols[None, :]
    tl.store(c_ptr, acc.to(C.dtype.element_ty), mask=(rows < M)[:, None] & (cols < N)[None, :])


# ---------------------------------------------------------------- launcher
DTYPES = ("bf16", "fp16")       # the output's; a and b are always float8_e4m3fn, the scales fp32
TUNABLES = ("BLOCK_M", "BLOCK_N", "GROUP_M", "num_warps", "num_stages")
BASELINE = {"BLOCK_M": 64, "BLOCK_N": 128, "GROUP_M": 8, "num_warps": 4, "num_stages": 3}

# DeepSeek-V3 linear layers with its block-scaled FP8 weights. Two prefills (0.62-1.1 TFLOP,
# compute-bound; operands + output 256-432 MiB) and a 128-token decode batch through the
# widest weight (252 MiB of fp8 weights, 5x the H200's 50 MB L2: memory-bound, 68 GFLOP).
POINTS = [
    {"M": 4096, "N": 7168, "K": 18432, "dtype": "bf16"},     # dense MLP down_proj, 4k tokens: 1.1 TFLOP
    {"M": 8192, "N": 24576, "K": 1536, "dtype": "fp16"},     # MLA q_b_proj (q_lora_rank 1536 -> 128 heads x 192), 8k tokens: 0.62 TFLOP, 12 K steps
    {"M": 128, "N": 36864, "K": 7168, "dtype": "bf16"},      # dense MLP gate_up_proj (2 x 18432), 128-token decode batch: W 252 MiB
]


def _torch_dtype(name: str):
    import torch
    try:
        return {"bf16": torch.bfloat16, "fp16": torch.float16}[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)} (the output dtype)") from None


def _check_cfg(cfg) -> None:
    for name in ("BLOCK_M", "BLOCK_N"):
        v = cfg[name]
        if v < 16 or v & (v - 1):
            raise ValueError(f"{name}={v} must be a power of two >= 16 (an fp8 tl.dot operand side)")
    if cfg["GROUP_M"] < 1:
        raise ValueError(f"GROUP_M={cfg['GROUP_M']} must be >= 1")


def _kernel_args(a, b, a_scale, b_scale, out, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    M, K = a.shape
    N = b.shape[0]
    return dict(A=a, B=b, AS=a_scale, BS=b_scale, C=out, M=M, N=N, K=K,
                stride_am=a.stride(0), stride_bn=b.stride(0), stride_cm=out.stride(0),
                stride_asm=a_scale.stride(0), stride_asg=a_scale.stride(1),
                stride_bsn=b_scale.stride(0), stride_bsg=b_scale.stride(1),
                EVEN_K=K % GROUP_K == 0, GROUP_N=GROUP_N, BLOCK_K=GROUP_K,
                BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"], GROUP_M=cfg["GROUP_M"])


def fp8_blockscale_gemm(a, b, a_scale, b_scale, out_dtype=None, *, out=None, BLOCK_M=64, BLOCK_N=128, GROUP_M=8,
                        num_warps=4, num_stages=3):
    """a @ b.T with DeepSeek-V3 block scales, for a [M, K] and b [N, K] float8_e4m3fn (K
    contiguous), a_scale fp32 [M, cdiv(K, 128)] (one per token and 128-wide K group) and
    b_scale fp32 [cdiv(N, 128), cdiv(K, 128)] (one per 128 x 128 weight block), either scale
    in any strides. Returns [M, N] of out_dtype (bf16, the default, or fp16), into `out` if
    given ([M, N] of out_dtype, unit column stride)."""
    import torch
    if out_dtype is None:
        out_dtype = out.dtype if out is not None else torch.bfloat16
    if out_dtype not in (torch.bfloat16, torch.float16):
        raise ValueError(f"out_dtype must be torch.bfloat16 or torch.float16; got {out_dtype}")
    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[1]:
        raise ValueError(f"expected a [M, K] and b [N, K]; got {tuple(a.shape)}, {tuple(b.shape)}")
    if a.dtype != torch.float8_e4m3fn or b.dtype != torch.float8_e4m3fn:
        raise ValueError(f"a and b must be torch.float8_e4m3fn; got {a.dtype}, {b.dtype}")
    M, K = a.shape
    N = b.shape[0]
    if M == 0 or N == 0 or K == 0:
        raise ValueError(f"empty GEMM: M={M}, N={N}, K={K}")
    if a.stride(1) != 1 or b.stride(1) != 1:
        raise ValueError(f"a and b need K contiguous (unit stride along K); got strides {a.stride()}, {b.stride()}")
    G = triton.cdiv(K, GROUP_K)
    for what, s, shape in (("a_scale", a_scale, (M, G)), ("b_scale", b_scale, (triton.cdiv(N, GROUP_N), G))):
        if not isinstance(s, torch.Tensor) or s.dtype != torch.float32 or tuple(s.shape) != shape:
            got = f"{s.dtype} {tuple(s.shape)}" if isinstance(s, torch.Tensor) else type(s).__name__
            raise ValueError(f"{what} must be fp32 [{shape[0]}, {shape[1]}]; got {got}")
    if out is None:
        out = torch.empty((M, N), dtype=out_dtype, device=a.device)
    elif tuple(out.shape) != (M, N) or out.dtype != out_dtype or out.stride(1) != 1:
        raise ValueError(f"out must be {out_dtype} [{M}, {N}] with unit column stride; got {out.dtype} "
                         f"{tuple(out.shape)} strides {out.stride()}")
    cfg = {"BLOCK_M": BLOCK_M, "BLOCK_N": BLOCK_N, "GROUP_M": GROUP_M}
    _check_cfg(cfg)
    grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N),)
    _kernel[grid](**_kernel_args(a, b, a_scale, b_scale, out, cfg), num_warps=num_warps, num_stages=num_stages)
    return out


def quantize_groups(x, rows_per_block: int):
    """x [R, K] (any float) -> (float8_e4m3fn [R, K], fp32 scales [cdiv(R, rows_per_block),
    cdiv(K, 128)]): one scale per (rows_per_block x 128) block, amax / 448 (1 for a per-token
    group quant, 128 for a weight block)."""
    import torch
    R, K = x.shape
    rb, G = triton.cdiv(R, rows_per_block), triton.cdiv(K, GROUP_K)
    xp = torch.zeros((rb * rows_per_block, G * GROUP_K), dtype=torch.float32, device=x.device)
    xp[:R, :K] = x.float()
    blocks = xp.view(rb, rows_per_block, G, GROUP_K)
    scale = (blocks.abs().amax(dim=(1, 3)) / FP8_MAX).clamp(min=1e-12)           # [rb, G]
    q = (blocks / scale[:, None, :, None]).clamp(-FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn)
    return q.view(rb * rows_per_block, G * GROUP_K)[:R, :K].contiguous(), scale


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """Activations ~ N(0, 1) with a random magnitude (0.25-4) per (token, K group) and weights
    ~ K^-1/2 with one (0.25-4) per 128 x 128 block, so every scale differs from its neighbours
    (a misplaced scale is a wrong result) and the output is O(1) whatever K is. Quantised per
    token group / per weight block; a_scale M-contiguous (the [cdiv(K, 128), M] buffer
    transposed, as DeepGEMM and cuBLASLt take it), b_scale row-major as a checkpoint stores it."""
    import torch
    gen = torch.Generator(device=device).manual_seed(seed)
    dt = _torch_dtype(point.get("dtype", "bf16"))
    M, N, K = point["M"], point["N"], point["K"]
    G, NB = triton.cdiv(K, GROUP_K), triton.cdiv(N, GROUP_N)
    x = torch.randn((M, K), generator=gen, device=device)
    x *= (4.0 ** (2 * torch.rand((M, G), generator=gen, device=device) - 1)).repeat_interleave(GROUP_K, 1)[:, :K]
    w = torch.randn((N, K), generator=gen, device=device) * K ** -0.5
    mag = 4.0 ** (2 * torch.rand((NB, G), generator=gen, device=device) - 1)
    w *= mag.repeat_interleave(GROUP_N, 0).repeat_interleave(GROUP_K, 1)[:N, :K]
    a, a_scale = quantize_groups(x, 1)
    b, b_scale = quantize_groups(w, GROUP_N)
    return {"a": a, "b": b, "a_scale": a_scale.t().contiguous().t(), "b_scale": b_scale, "out_dtype": dt}


def launch(inputs, cfg):
    return fp8_blockscale_gemm(inputs["a"], inputs["b"], inputs["a_scale"], inputs["b_scale"], inputs["out_dtype"],
                               BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"], GROUP_M=cfg["GROUP_M"],
                               num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])


def dequant(q, scale, rows_per_block: int):
    """q [R, K] fp8 times its block's scale, in fp32."""
    R, K = q.shape
    s = scale.float().repeat_interleave(rows_per_block, 0).repeat_interleave(GROUP_K, 1)
    return q.float() * s[:R, :K]


def reference(inputs):
    """In fp32: both operands dequantised (exact products of an fp8 value and its scale, up
    to one fp32 rounding), one matmul."""
    return dequant(inputs["a"], inputs["a_scale"], 1) @ dequant(inputs["b"], inputs["b_scale"], GROUP_N).T


def torch_baseline(inputs):
    """torch._scaled_mm with the block-wise scales (1x128 for a, 128x128 for b: cuBLASLt's
    block-scaled FP8 GEMM, on sm_90 with CUDA >= 12.9; checked on an H200, torch 2.11 + CUDA
    13.0, at the three POINTS), a_scale passed M-major and b_scale as its [K / 128, N / 128]
    transpose, the layouts it takes (make_inputs' already: no copy). Where that is not
    available, off CUDA (the CPU tests: _scaled_mm has no block-wise scaling there) or for
    shapes it does not take (K or N not a multiple of 16, K / 128 not a multiple of 4): both
    operands dequantised to the output dtype and one GEMM in it."""
    import torch
    a, b, dt = inputs["a"], inputs["b"], inputs["out_dtype"]
    K, N = a.shape[1], b.shape[0]
    if a.is_cuda and K % 16 == 0 and N % 16 == 0 and triton.cdiv(K, GROUP_K) % 4 == 0:
        return torch._scaled_mm(a, b.t(), scale_a=inputs["a_scale"].t().contiguous().t(),
                                scale_b=inputs["b_scale"].contiguous().t(), out_dtype=dt)
    a = dequant(a, inputs["a_scale"], 1).to(dt)
    b = dequant(b, inputs["b_scale"], GROUP_N).to(dt)
    return a @ b.T


def bytes_moved(point) -> int:
    """a and b (1 byte each) and their fp32 scales read once, c written once."""
    M, N, K = point["M"], point["N"], point["K"]
    _torch_dtype(point.get("dtype", "bf16"))        # rejects a dtype that is not an output dtype
    G = triton.cdiv(K, GROUP_K)
    return M * K + N * K + 4 * (M * G + triton.cdiv(N, GROUP_N) * G) + 2 * M * N


def flops(point) -> int:
    """The GEMM's multiply-adds (the per-group rescale, 2 per output element per group, not counted)."""
    return 2 * point["M"] * point["N"] * point["K"]


def grid(cfg, point) -> int:
    """One CTA per (BLOCK_M, BLOCK_N) output tile."""
    return triton.cdiv(point["M"], cfg["BLOCK_M"]) * triton.cdiv(point["N"], cfg["BLOCK_N"])


def loop_iterations(cfg, point) -> int:
    """K steps per CTA: one per 128-wide scale group."""
    return triton.cdiv(point["K"], GROUP_K)


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory);
    the scales in make_inputs' layouts (a_scale M-contiguous, b_scale row-major)."""
    import torch
    dt = _torch_dtype(point.get("dtype", "bf16"))
    M, N, K = point["M"], point["N"], point["K"]
    G, NB = triton.cdiv(K, GROUP_K), triton.cdiv(N, GROUP_N)
    a = torch.empty((M, K), dtype=torch.float8_e4m3fn, device="meta")
    b = torch.empty((N, K), dtype=torch.float8_e4m3fn, device="meta")
    a_scale = torch.empty((G, M), dtype=torch.float32, device="meta").t()
    b_scale = torch.empty((NB, G), dtype=torch.float32, device="meta")
    out = torch.empty((M, N), dtype=dt, device="meta")
    return _kernel_args(a, b, a_scale, b_scale, out, cfg)
