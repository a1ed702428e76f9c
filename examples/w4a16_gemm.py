"""Weight-only int4 GEMM (W4A16, AWQ / GPTQ-style asymmetric per-group int4), a bare
@triton.jit kernel + its launcher.

    out[m, n] = sum_k x[m, k] * (q[k, n] - z[k // 128, n]) * s[k // 128, n]

x: [M, K] fp16 / bf16 activations (K contiguous, any row stride); q: the unsigned int4 weight
codes (0..15), z: unsigned int4 zero points, s: scales, one (z, s) per (group of 128 K rows,
output column). out: [M, N] in x's dtype (N contiguous, any row stride), fp32 accumulation.

Packing (the GPTQ checkpoint layout, 8 nibbles per int32, the low nibble first):

    qweight [K / 8, N] int32:       bits 4j..4j+3 of qweight[r, n] = q[8 r + j, n]     (along K)
    qzeros  [cdiv(K, 128), cdiv(N, 8)] int32:  bits 4j..4j+3 of qzeros[g, c] = z[g, 8 c + j]   (along N)
    scales  [cdiv(K, 128), N] in x's dtype

The stored zero point is the zero point (no GPTQ-v1 "+1" offset), and groups are contiguous
K ranges (no act-order g_idx); K must be a multiple of 8 (a whole int32 per 8 K rows). An
AWQ checkpoint (qweight packed along N with its interleaved nibble order) is repacked to
this layout once at load time. Packing along K keeps N the contiguous axis of every operand
of the B side: a packed weight tile [BLOCK_K / 8, BLOCK_N] is BLOCK_N consecutive int32 per
row (coalesced 16-byte loads), and the scale and zero rows of a group broadcast over it.

One CTA per (BLOCK_M, BLOCK_N) output tile walks K in BLOCK_K steps. Per step it loads the
x tile, the packed weight tile and its group's scale row and packed zero row, unpacks the
weight tile as [BLOCK_K / 8, 8, BLOCK_N] (an arithmetic shift by 4j and a mask) and reshapes
it to the [BLOCK_K, BLOCK_N] B operand of tl.dot (fp32 accumulation): the dequant sits INSIDE
the K loop. The nibble -> float conversion takes no int -> float instruction: q | 0x4B000000
read as fp32 is exactly 2^23 + q, and the zero is converted the same way, so their difference
is q - z exactly; times the scale in fp32 and one rounding to x's dtype (the same value as
rounding (q - z) * s computed exactly). BLOCK_K (32, 64 or 128) divides the group size, so a
K tile never straddles two groups (one scale / zero row per step); the K tail (K not a
multiple of BLOCK_K) is masked only when present (EVEN_K, set by the launcher). Rows and
columns past M and N are wrapped (index mod M / N) so the loads need no M / N mask; the
store is masked.

CTAs are launched in bands of GROUP_M = 8 tile rows walked column by column (fixed, not
tuned): at a decode batch (one or a few tile rows) the CTAs running together cover the whole
batch for a few weight column panels, so each packed weight byte comes from DRAM once; at a
prefill the resident CTAs share 8 x row panels and a few weight panels in L2.

Tunables: BLOCK_M, BLOCK_N (powers of two >= 16), BLOCK_K (32, 64 or 128), num_warps,
num_stages. Problem parameters (a workload point): M, N, K, dtype (x's: fp16 / bf16).
"""

from __future__ import annotations

import triton
import triton.language as tl

GROUP_SIZE = 128    # K rows per scale / zero point (the checkpoint's)
PACK = 8            # int4 values per int32
GROUP_M = 8         # tile rows per band of the launch order


@triton.jit
def _kernel(X, QW, S, QZ, OUT, M, N, K, stride_xm, stride_qk, stride_sg, stride_zg, stride_om,
            GROUP: tl.constexpr, EVEN_K: tl.constexpr, GROUP_M: tl.constexpr,
            BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    tl.static_assert(GROUP % BLOCK_K == 0, "a K tile must not straddle two quantisation groups")
    tl.static_assert(BLOCK_K % 8 == 0, "a K tile must hold whole packed int32 rows")
    PK: tl.constexpr = BLOCK_K // 8
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
    pr = tl.arange(0, PK)
    shifts = tl.arange(0, 8) * 4                                   # nibble j of an int32 is K row 8r + j
    z_shift = (cols_ld % 8) * 4                                    # nibble of column n in its zero word

    x_ptr = X + rows_ld.to(tl.int64)[:, None] * stride_xm + ks[None, :]
    w_ptr = QW + pr.to(tl.int64)[:, None] * stride_qk + cols_ld[None, :]      # [BLOCK_K / 8, BLOCK_N]
    s_ptr = S + cols_ld
    z_ptr = QZ + cols_ld // 8

    acc = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
    for k0 in range(0, K, BLOCK_K):
        if EVEN_K:
            a = tl.load(x_ptr)
            p = tl.load(w_ptr)
        else:
            a = tl.load(x_ptr, mask=(ks < K - k0)[None, :], other=0.0)
            p = tl.load(w_ptr, mask=(pr * 8 < K - k0)[:, None], other=0)
        g = k0 // GROUP
        s = tl.load(s_ptr + g * stride_sg).to(tl.float32)
        zw = tl.load(z_ptr + g * stride_zg)
        # 2^23 + z and 2^23 + q as fp32 bit patterns: their difference is q - z, exactly
        zf = (((zw >> z_shift) & 0xF) | 0x4B000000).to(tl.float32, bitcast=True)
        q = ((p[:, None, :] >> shifts[None, :, None]) & 0xF) | 0x4B000000       # [BLOCK_K / 8, 8, BLOCK_N]
        w = (q.to(tl.float32, bitcast=True) - zf[None, None, :]) * s[None, None, :]
        b = tl.reshape(w.to(X.dtype.element_ty), (BLOCK_K, BLOCK_N))
        acc = tl.dot(a, b, acc)
        x_ptr += BLOCK_K
        w_ptr += PK * stride_qk

    o_ptr = OUT + rows.to(tl.int64)[:, None] * stride_om + cols[None, :]
    tl.store(o_ptr, acc.to(OUT.dtype.element_ty), mask=(rows < M)[:, None] & (cols < N)[None, :])


# ---------------------------------------------------------------- launcher
DTYPES = ("fp16", "bf16")
TUNABLES = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "num_warps", "num_stages")
BASELINE = {"BLOCK_M": 16, "BLOCK_N": 128, "BLOCK_K": 128, "num_warps": 4, "num_stages": 3}

# 70B-class int4 decode through the widest layer (the fused MLP gate_up_proj, 224-231 MiB of
# packed weights, 4.5x the H200's 50 MB L2: memory-bound, >= 51 us at 4.8 TB/s), and an 8B
# prefill chunk through the MLP down_proj (481 GFLOP: compute-bound; x alone 112 MiB).
POINTS = [
    {"M": 16, "N": 57344, "K": 8192, "dtype": "fp16"},     # Llama-3-70B gate_up (2 x 28672), AWQ, batch-16 decode: W 224 MiB
    {"M": 64, "N": 59136, "K": 8192, "dtype": "bf16"},     # Qwen2.5-72B gate_up (2 x 29568), GPTQ, batch-64 decode: W 231 MiB
    {"M": 4096, "N": 4096, "K": 14336, "dtype": "fp16"},   # Llama-3-8B down_proj, 4096-token prefill chunk: 481 GFLOP
]


def _torch_dtype(name: str):
    import torch
    try:
        return {"fp16": torch.float16, "bf16": torch.bfloat16}[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}") from None


def _elem_bytes(name: str) -> int:
    if name not in DTYPES:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}")
    return 2


def _check_cfg(cfg) -> None:
    for name in ("BLOCK_M", "BLOCK_N"):
        v = cfg[name]
        if v < 16 or v & (v - 1):
            raise ValueError(f"{name}={v} must be a power of two >= 16 (a tl.dot operand side)")
    if cfg["BLOCK_K"] not in (32, 64, 128):
        raise ValueError(f"BLOCK_K={cfg['BLOCK_K']} must be 32, 64 or 128 (whole packed int32 rows, a tl.dot "
                         f"K >= 16, and a divisor of the group size {GROUP_SIZE})")


def _kernel_args(x, qweight, scales, qzeros, out, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    M, K = x.shape
    N = qweight.shape[1]
    return dict(X=x, QW=qweight, S=scales, QZ=qzeros, OUT=out, M=M, N=N, K=K,
                stride_xm=x.stride(0), stride_qk=qweight.stride(0), stride_sg=scales.stride(0),
                stride_zg=qzeros.stride(0), stride_om=out.stride(0),
                GROUP=GROUP_SIZE, EVEN_K=K % cfg["BLOCK_K"] == 0, GROUP_M=GROUP_M,
                BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"], BLOCK_K=cfg["BLOCK_K"])


def w4a16_gemm(x, qweight, scales, qzeros, *, out=None, BLOCK_M=16, BLOCK_N=128, BLOCK_K=128, num_warps=4,
               num_stages=3):
    """x @ dequant(qweight, scales, qzeros) for x [M, K] fp16 / bf16 (K contiguous), qweight
    int32 [K / 8, N] (int4 packed along K), scales [cdiv(K, 128), N] in x's dtype and qzeros
    int32 [cdiv(K, 128), cdiv(N, 8)] (int4 packed along N); see the module doc for the
    layout. Returns [M, N] in x's dtype, into `out` if given (unit column stride)."""
    import torch
    if x.dim() != 2 or qweight.dim() != 2:
        raise ValueError(f"expected x [M, K] and qweight [K / 8, N]; got {tuple(x.shape)}, {tuple(qweight.shape)}")
    M, K = x.shape
    N = qweight.shape[1]
    if K % PACK or qweight.shape[0] * PACK != K:
        raise ValueError(f"K={K} must be a multiple of {PACK} and qweight [K / 8, N] = [{K // PACK}, N]; "
                         f"got {tuple(qweight.shape)}")
    if x.dtype not in (torch.float16, torch.bfloat16) or qweight.dtype != torch.int32:
        raise ValueError(f"need fp16 / bf16 x and int32 qweight; got {x.dtype}, {qweight.dtype}")
    G = triton.cdiv(K, GROUP_SIZE)
    if tuple(scales.shape) != (G, N) or scales.dtype != x.dtype:
        raise ValueError(f"scales must be {x.dtype} [{G}, {N}]; got {scales.dtype} {tuple(scales.shape)}")
    if tuple(qzeros.shape) != (G, triton.cdiv(N, PACK)) or qzeros.dtype != torch.int32:
        raise ValueError(f"qzeros must be torch.int32 [{G}, {triton.cdiv(N, PACK)}]; got {qzeros.dtype} "
                         f"{tuple(qzeros.shape)}")
    for what, t in (("qweight", qweight), ("scales", scales), ("qzeros", qzeros)):
        if t.stride(1) != 1 and t.shape[1] > 1:
            raise ValueError(f"{what} needs a contiguous last axis; got strides {t.stride()}")
    cfg = {"BLOCK_M": BLOCK_M, "BLOCK_N": BLOCK_N, "BLOCK_K": BLOCK_K}
    _check_cfg(cfg)
    if x.stride(1) != 1:
        x = x.contiguous()
    if out is None:
        out = torch.empty((M, N), dtype=x.dtype, device=x.device)
    elif tuple(out.shape) != (M, N) or out.dtype != x.dtype or (out.stride(1) != 1 and N > 1):
        raise ValueError(f"out must be {x.dtype} [{M}, {N}] with unit column stride; got {out.dtype} "
                         f"{tuple(out.shape)} strides {out.stride()}")
    if M == 0 or N == 0:
        return out
    if K == 0:
        return out.zero_()
    grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N),)
    _kernel[grid](**_kernel_args(x, qweight, scales, qzeros, out, cfg), num_warps=num_warps, num_stages=num_stages)
    return out


# ---------------------------------------------------------------- packing
def pack_int4(q, dim: int):
    """Unsigned int4 codes q (integers 0..15, any int dtype) -> int32, 8 per word along `dim`
    (0: along K, the qweight layout; 1: along N, the qzeros layout), the low nibble first; a
    ragged last word along `dim` is padded with zero nibbles."""
    import torch
    q = q.to(torch.int64)
    if q.dim() != 2 or (q.numel() and (int(q.min()) < 0 or int(q.max()) > 15)):
        raise ValueError("pack_int4 takes a 2-D tensor of integers 0..15")
    q = q if dim == 0 else q.t()
    rows = triton.cdiv(q.shape[0], PACK)
    pad = torch.zeros((rows * PACK, q.shape[1]), dtype=torch.int64, device=q.device)
    pad[:q.shape[0]] = q
    shifts = (torch.arange(PACK, device=q.device, dtype=torch.int64) * 4)[None, :, None]
    words = (pad.view(rows, PACK, -1) << shifts).sum(1)               # 0 .. 2^32 - 1
    words = torch.where(words >= 2**31, words - 2**32, words).to(torch.int32)
    return words if dim == 0 else words.t().contiguous()


def unpack_int4(words, dim: int, size: int):
    """The inverse of pack_int4: int32 words -> int64 codes 0..15, `size` of them along `dim`."""
    import torch
    w = (words if dim == 0 else words.t()).to(torch.int64)
    shifts = (torch.arange(PACK, device=w.device, dtype=torch.int64) * 4)[None, :, None]
    q = ((w[:, None, :] >> shifts) & 0xF).reshape(-1, w.shape[1])[:size]
    return q if dim == 0 else q.t()


def dequant(qweight, scales, qzeros, K: int):
    """The [K, N] fp32 weight: (q - z) * s, each K row with its group's zero point and scale."""
    N = qweight.shape[1]
    q = unpack_int4(qweight, 0, K)
    z = unpack_int4(qzeros, 1, N).repeat_interleave(GROUP_SIZE, dim=0)[:K]
    s = scales.float().repeat_interleave(GROUP_SIZE, dim=0)[:K]
    return (q - z).float() * s


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """Random int4 codes and zero points over the whole 0..15 range; scales in [0.5, 1.5] /
    (6.5 sqrt(K)) so the dequantised weights are ~ K^-1/2 (E[(q - z)^2] = 42.5) and out is O(1)."""
    import torch
    gen = torch.Generator(device=device).manual_seed(seed)
    dt = _torch_dtype(point.get("dtype", "fp16"))
    M, N, K = point["M"], point["N"], point["K"]
    if K % PACK:
        raise ValueError(f"K={K} must be a multiple of {PACK}")
    G = triton.cdiv(K, GROUP_SIZE)
    x = torch.randn((M, K), generator=gen, device=device).to(dt)
    # the words straight from random bits: every nibble uniform over 0..15
    qweight = torch.randint(-2**31, 2**31, (K // PACK, N), generator=gen, device=device, dtype=torch.int64)
    qzeros = torch.randint(-2**31, 2**31, (G, triton.cdiv(N, PACK)), generator=gen, device=device,
                           dtype=torch.int64)
    if N % PACK:          # a ragged last zero word: its unused nibbles zero, as pack_int4 writes them
        qzeros[:, -1] &= (1 << (4 * (N % PACK))) - 1
        qzeros[:, -1] = torch.where(qzeros[:, -1] >= 2**31, qzeros[:, -1] - 2**32, qzeros[:, -1])
    s = (0.5 + torch.rand((G, N), generator=gen, device=device)) / (6.5 * K ** 0.5)
    return {"x": x, "qweight": qweight.to(torch.int32), "scales": s.to(dt), "qzeros": qzeros.to(torch.int32)}


def launch(inputs, cfg):
    return w4a16_gemm(inputs["x"], inputs["qweight"], inputs["scales"], inputs["qzeros"],
                      BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"], BLOCK_K=cfg["BLOCK_K"],
                      num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])


def reference(inputs):
    x = inputs["x"]
    return x.float() @ dequant(inputs["qweight"], inputs["scales"], inputs["qzeros"], x.shape[1])


def torch_baseline(inputs):
    """Eager unpack + dequant (one [K, N] weight in x's dtype) then cuBLAS's GEMM, in x's dtype."""
    x = inputs["x"]
    return x @ dequant(inputs["qweight"], inputs["scales"], inputs["qzeros"], x.shape[1]).to(x.dtype)


def bytes_moved(point) -> int:
    """x, the packed weights, the scales and the packed zeros read once, out written once."""
    M, N, K = point["M"], point["N"], point["K"]
    e = _elem_bytes(point.get("dtype", "fp16"))
    G = triton.cdiv(K, GROUP_SIZE)
    return e * (M * K + G * N + M * N) + 4 * (K // PACK * N + G * triton.cdiv(N, PACK))


def flops(point) -> int:
    """The GEMM's multiply-adds (the dequant's per-tile-row unpack and scale not counted)."""
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
    dt = _torch_dtype(point.get("dtype", "fp16"))
    M, N, K = point["M"], point["N"], point["K"]
    G = triton.cdiv(K, GROUP_SIZE)
    x = torch.empty((M, K), dtype=dt, device="meta")
    qweight = torch.empty((K // PACK, N), dtype=torch.int32, device="meta")
    scales = torch.empty((G, N), dtype=dt, device="meta")
    qzeros = torch.empty((G, triton.cdiv(N, PACK)), dtype=torch.int32, device="meta")
    out = torch.empty((M, N), dtype=dt, device="meta")
    return _kernel_args(x, qweight, scales, qzeros, out, cfg)
