"""Decode-time weight-only int4 GEMV / skinny GEMM (W4A16, M = 1-16 tokens) with split-K,
a bare @triton.jit kernel + its launcher (and a deterministic split-K reduce kernel).

    out[m, n] = sum_k x[m, k] * (q[n, k] - z[n, k // 128]) * s[n, k // 128]

x: [M, K] fp16 / bf16 activations (K contiguous, any row stride), M = 1-16 (the decode batch,
or the draft tokens of a speculative step); q: unsigned int4 weight codes (0..15) of the
[N, K] nn.Linear weight; s, z: per-(output row, group of 128 K) scales and zero points, both
[N, cdiv(K, 128)] in x's dtype (an AWQ / HQQ-style asymmetric group quantisation whose zero
point is a float: w = (q - z) * s). out: [M, N] contiguous in x's dtype, fp32 accumulation.

Packing (K-major, 8 nibbles per int32 along K, the low nibble first):

    qweight [N, K / 8] int32:   bits 4j..4j+3 of qweight[n, r] = q[n, 8 r + j]

K must be a multiple of 8 (whole int32 words); the last group may be partial. This is the
layout a GEMV wants (an AWQ checkpoint, packed along N with its interleaved nibble order, is
repacked to it once at load time): one weight row is K / 2 contiguous bytes, a CTA's
[BLOCK_N, BLOCK_K / 8] word tile is BLOCK_N runs of BLOCK_K / 2 bytes (16-byte vector loads),
and a step needs one scale and one zero per row.

Work split: CTA (pid_n, pid_s) of a (cdiv(N, BLOCK_N), SPLIT) grid owns BLOCK_N output
columns for all M rows and the pid_s-th of SPLIT contiguous K ranges of K_SPLIT (a multiple
of BLOCK_K: cdiv(cdiv(K, BLOCK_K), SPLIT) tiles; the last splits may get fewer tiles, or
none, and store zeros). Every packed weight byte is read from DRAM exactly once; x (M x K,
tiny) is re-read by every column tile from L2. Split-K gives a long-K / narrow-N layer (a
down_proj at batch 1: 8192 columns = 128 CTAs of 64) enough CTAs and loads in flight to
saturate HBM.

Per K step (BLOCK_K elements, inside one group: BLOCK_K divides 128) the CTA loads the
[BLOCK_N, BLOCK_K / 8] packed tile, the x tile and one scale and zero per row, unpacks the
tile as [BLOCK_N, BLOCK_K / 8, 8] (a shift by 4j, a mask) and turns each nibble into fp32
with no int -> float instruction (q | 0x4B000000 read as fp32 is 2^23 + q, minus 2^23: q
exactly). The zero point and scale are not applied per weight but once per row and step,
since the step lies in one group:

    sum_k x[m, k] (q[n, k] - z[n]) s[n] = (sum_k x[m, k] q[n, k] - z[n] sum_k x[m, k]) s[n]

so a weight costs a shift, a mask-or, a subtract and its multiply-adds. The raw-code product
t = x q^T is, by the batch (BLOCK_M, a constexpr the launcher derives from M):
    M <= 4  (BLOCK_M = next power of two 1 / 2 / 4): CUDA-core fp32 FMAs, one x row at a
            time (a static loop; rows past M skipped) loaded as [BLOCK_K / 8, 8] and multiplied
            into the same unpacked tile, its [BLOCK_N] sum added to its accumulator row: the
            live state is the tile, not a [BLOCK_M, BLOCK_N, BLOCK_K] product;
    M 5-16  (BLOCK_M = 16, USE_DOT): the codes cast to x's dtype (exact: 0..15), reshaped to
            [BLOCK_N, BLOCK_K] and fed to tl.dot (mma, fp32) as the transposed B operand:
            16 x fewer CUDA-core FMAs; x rows past M are padding.
then acc += (t - z sum_k x) s in fp32 (no rounding of a dequantised weight on either path).
x rows past M (tl.dot padding) and weight rows past N are wrapped (index mod M / N) so
their loads need no mask; the K tail (K not a multiple of BLOCK_K) is masked only when present (EVEN_K).

Output: SPLIT == 1 stores the tile in x's dtype straight into out. SPLIT > 1 stores each
split's fp32 partial tile into a [SPLIT, M, N] workspace and `_reduce_kernel` (one CTA per
REDUCE_BLOCK outputs, the SPLIT partials summed in a fixed order, one rounding to x's dtype)
writes out: deterministic, run-to-run bit-identical, unlike fp32 atomics (declared in
secondary_kernels).

Tunables: BLOCK_N (output columns a CTA, a power of two >= 16), BLOCK_K (K a step: 32, 64 or
128, a divisor of the group size), SPLIT (K ranges, >= 1), num_warps, num_stages (pipelines
the tl.dot path's loads; the FMA path's walk is not pipelined).
Problem parameters (a workload point): M (1-16), N, K (a multiple of 8), dtype (fp16 / bf16).
"""

from __future__ import annotations

import triton
import triton.language as tl

GROUP_SIZE = 128      # K elements per scale / zero point (the checkpoint's)
PACK = 8              # int4 values per int32
MAX_M = 16            # the batch this kernel serves (one tl.dot row tile); prefill goes to a GEMM
FMA_MAX_M = 4         # M <= 4: CUDA-core FMAs; 5-16: tl.dot
REDUCE_BLOCK = 1024   # outputs per CTA of the split-K reduce
REDUCE_WARPS = 4


@triton.jit
def _kernel(X, QW, S, Z, OUT, M, N, K, K_SPLIT, stride_xm, stride_qn, stride_sn, stride_zn,
            stride_om, stride_os,
            GROUP: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
            USE_DOT: tl.constexpr, EVEN_K: tl.constexpr, PARTIAL: tl.constexpr):
    tl.static_assert(BLOCK_K % 8 == 0, "a K tile must hold whole packed int32 words")
    tl.static_assert(GROUP % BLOCK_K == 0, "a K tile must not straddle two quantisation groups")
    PK: tl.constexpr = BLOCK_K // 8
    pid_n = tl.program_id(0)
    pid_s = tl.program_id(1)

    offs_m = tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    m_ld = offs_m % M               # wrapped: in-bounds addresses, no M / N mask on the loads
    n_ld = offs_n % N
    pr = tl.arange(0, PK)
    jj = tl.arange(0, 8)
    shifts = jj * 4                 # nibble j of word r is K element 8 r + j

    k_start = pid_s * K_SPLIT
    k_end = tl.minimum(K, k_start + K_SPLIT)
    n_iter = tl.cdiv(k_end - k_start, BLOCK_K)     # <= 0 for a split past K: it stores zeros

    w_ptr = QW + n_ld.to(tl.int64)[:, None] * stride_qn + (k_start // 8 + pr)[None, :]      # [BLOCK_N, PK]
    s_ptr = S + n_ld.to(tl.int64) * stride_sn
    z_ptr = Z + n_ld.to(tl.int64) * stride_zn
    x_row = X + m_ld.to(tl.int64) * stride_xm
    kk = tl.arange(0, BLOCK_K)
    if USE_DOT:
        x_ptr = x_row[:, None] + (k_start + kk)[None, :]                                     # [BLOCK_M, BLOCK_K]
    else:
        x_ptr = X + (k_start + pr[:, None] * 8 + jj[None, :])                                 # row 0's [PK, 8]

    acc = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
    for it in range(0, n_iter):
        k0 = k_start + it * BLOCK_K
        g = k0 // GROUP                                   # the tile's one group (GROUP % BLOCK_K == 0)
        s = tl.load(s_ptr + g).to(tl.float32)
        z = tl.load(z_ptr + g).to(tl.float32)
        if EVEN_K:
            p = tl.load(w_ptr)
        else:
            p = tl.load(w_ptr, mask=(k0 + pr * 8 < k_end)[None, :], other=0)
        # 2^23 + q as an fp32 bit pattern, minus 2^23: q exactly, no I2F
        q = (((p[:, :, None] >> shifts[None, None, :]) & 0xF) | 0x4B000000).to(tl.float32, bitcast=True)
        q = q - 8388608.0                                                   # [BLOCK_N, PK, 8]
        # sum_k x (q - z) s = (sum_k x q - z sum_k x) s over the group: the zero and scale once a step
        if USE_DOT:
            if EVEN_K:
                a = tl.load(x_ptr)
            else:
                a = tl.load(x_ptr, mask=(k0 + kk < k_end)[None, :], other=0.0)
            b = tl.trans(tl.reshape(q.to(X.dtype.element_ty), (BLOCK_N, BLOCK_K)))    # exact: q <= 15
            t = tl.dot(a, b)
            xs = tl.sum(a.to(tl.float32), axis=1)
            acc += (t - xs[:, None] * z[None, :]) * s[None, :]
        else:
            # one x row at a time against the same unpacked tile: live state is the tile, one
            # [BLOCK_K] row and a [BLOCK_N] sum (not a [BLOCK_M, BLOCK_N, BLOCK_K] product)
            for mi in tl.static_range(BLOCK_M):
                if mi < M:
                    if EVEN_K:
                        a = tl.load(x_ptr + mi * stride_xm).to(tl.float32)
                    else:
                        a = tl.load(x_ptr + mi * stride_xm, mask=(k0 + pr * 8 < k_end)[:, None],
                                    other=0.0).to(tl.float32)
                    t = tl.sum(tl.sum(a[None, :, :] * q, axis=2), axis=1)            # [BLOCK_N]
                    xs = tl.sum(tl.sum(a, axis=1), axis=0)
                    part = (t - xs * z) * s
                    acc = tl.where((offs_m == mi)[:, None], acc + part[None, :], acc)
        x_ptr += BLOCK_K
        w_ptr += PK

    o_ptr = OUT + offs_m.to(tl.int64)[:, None] * stride_om + offs_n[None, :]
    o_mask = (offs_m < M)[:, None] & (offs_n < N)[None, :]
    if PARTIAL:
        tl.store(o_ptr + pid_s.to(tl.int64) * stride_os, acc, mask=o_mask)
    else:
        tl.store(o_ptr, acc.to(OUT.dtype.element_ty), mask=o_mask)


@triton.jit
def _reduce_kernel(WS, OUT, MN, stride_ws, SPLIT: tl.constexpr, BLOCK: tl.constexpr):
    """out.flat[i] = sum over s (in order) of WS[s].flat[i], rounded once to out's dtype."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < MN
    acc = tl.zeros([BLOCK], tl.float32)
    for s in range(SPLIT):
        acc += tl.load(WS + s * stride_ws + offs, mask=ok, other=0.0)
    tl.store(OUT + offs, acc.to(OUT.dtype.element_ty), mask=ok)


# ---------------------------------------------------------------- launcher
DTYPES = ("fp16", "bf16")
TUNABLES = ("BLOCK_N", "BLOCK_K", "SPLIT", "num_warps", "num_stages")
BASELINE = {"BLOCK_N": 64, "BLOCK_K": 128, "SPLIT": 4, "num_warps": 4, "num_stages": 1}

# Int4 decode of 70B-405B models through one layer each (weights 117-436 MB, 2.3-8.7x the
# H200's 50 MB L2: memory-bound, ~27-100 us at 4.8 TB/s), one per code path:
POINTS = [
    # Llama-3-70B down_proj, batch-1 decode (FMA path, BLOCK_M 1): narrow N, long K (split-K's case); W 112 MiB
    {"M": 1, "N": 8192, "K": 28672, "dtype": "fp16"},
    # Qwen2.5-72B gate_up (2 x 29568), 4 draft tokens of a speculative step (FMA path, BLOCK_M 4):
    # wide N, short K; W 231 MiB
    {"M": 4, "N": 59136, "K": 8192, "dtype": "bf16"},
    # Llama-3.1-405B down_proj, batch-16 decode (tl.dot path): N 16384, very long K; W 416 MiB
    {"M": 16, "N": 16384, "K": 53248, "dtype": "fp16"},
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
    bn, bk, sp = cfg["BLOCK_N"], cfg["BLOCK_K"], cfg["SPLIT"]
    if not isinstance(bn, int) or bn < 16 or bn & (bn - 1):
        raise ValueError(f"BLOCK_N={bn!r} must be a power of two >= 16 (a tl.dot operand side)")
    if bk not in (32, 64, 128):
        raise ValueError(f"BLOCK_K={bk!r} must be 32, 64 or 128 (whole packed words, a divisor of the group "
                         f"size {GROUP_SIZE}: one scale / zero a row a step)")
    if not isinstance(sp, int) or sp < 1:
        raise ValueError(f"SPLIT={sp!r} must be an int >= 1")


def _check_point(point) -> None:
    M, N, K = point["M"], point["N"], point["K"]
    for name, v in (("M", M), ("N", N), ("K", K)):
        if not isinstance(v, int) or v < 1:
            raise ValueError(f"{name}={v!r} must be a positive int")
    if M > MAX_M:
        raise ValueError(f"M={M} exceeds {MAX_M} (a skinny-GEMM kernel; use a GEMM for prefill)")
    if K % PACK:
        raise ValueError(f"K={K} must be a multiple of {PACK} (whole packed int32 words)")
    _elem_bytes(point.get("dtype", "fp16"))


def block_m(M: int) -> int:
    """The row tile: the next power of two for the FMA path (M <= 4), 16 (a tl.dot tile) above."""
    return 1 << (M - 1).bit_length() if M <= FMA_MAX_M else MAX_M


def plan(cfg, point) -> dict:
    """What the launcher derives from a config at a point (constexprs and the split)."""
    _check_cfg(cfg)
    _check_point(point)
    M, N, K = point["M"], point["N"], point["K"]
    tiles_k = -(-K // cfg["BLOCK_K"])
    per = -(-tiles_k // cfg["SPLIT"])
    bm = block_m(M)
    return {"BLOCK_M": bm, "USE_DOT": bm >= 16, "EVEN_K": K % cfg["BLOCK_K"] == 0, "PARTIAL": cfg["SPLIT"] > 1,
            "tiles_n": -(-N // cfg["BLOCK_N"]), "tiles_k": tiles_k, "TILES_PER_SPLIT": per,
            "K_SPLIT": per * cfg["BLOCK_K"]}


def _kernel_args(x, qweight, scales, zeros, out, cfg) -> dict:
    """`out` is [M, N] in x's dtype (SPLIT 1) or the [SPLIT, M, N] fp32 workspace."""
    M, K = x.shape
    N = qweight.shape[0]
    pl = plan(cfg, {"M": M, "N": N, "K": K, "dtype": "fp16"})
    return {"X": x, "QW": qweight, "S": scales, "Z": zeros, "OUT": out, "M": M, "N": N, "K": K,
            "K_SPLIT": pl["K_SPLIT"], "stride_xm": x.stride(0), "stride_qn": qweight.stride(0),
            "stride_sn": scales.stride(0), "stride_zn": zeros.stride(0), "stride_om": out.stride(-2),
            "stride_os": M * N, "GROUP": GROUP_SIZE, "BLOCK_M": pl["BLOCK_M"], "BLOCK_N": cfg["BLOCK_N"],
            "BLOCK_K": cfg["BLOCK_K"], "USE_DOT": pl["USE_DOT"], "EVEN_K": pl["EVEN_K"],
            "PARTIAL": pl["PARTIAL"]}


def w4a16_gemv(x, qweight, scales, zeros, *, BLOCK_N=64, BLOCK_K=128, SPLIT=4, num_warps=4, num_stages=1):
    """x [M, K] (M <= 16) @ dequant(qweight [N, K/8] int32, scales / zeros [N, cdiv(K, 128)])^T:
    [M, N] contiguous in x's dtype."""
    import torch
    if x.dim() != 2 or qweight.dim() != 2:
        raise ValueError(f"x must be [M, K] and qweight [N, K/8]; got {tuple(x.shape)}, {tuple(qweight.shape)}")
    if x.dtype not in (torch.float16, torch.bfloat16):
        raise ValueError(f"x must be fp16 / bf16; got {x.dtype}")
    if qweight.dtype != torch.int32:
        raise ValueError(f"qweight must be int32; got {qweight.dtype}")
    M, K = x.shape
    N = qweight.shape[0]
    _check_point({"M": M, "N": N, "K": K})
    G = -(-K // GROUP_SIZE)
    if qweight.shape[1] != K // PACK:
        raise ValueError(f"qweight must be [N, K/8] = [{N}, {K // PACK}]; got {tuple(qweight.shape)}")
    for name, t in (("scales", scales), ("zeros", zeros)):
        if tuple(t.shape) != (N, G) or t.dtype != x.dtype:
            raise ValueError(f"{name} must be [{N}, {G}] {x.dtype}; got {tuple(t.shape)} {t.dtype}")
    if x.stride(1) != 1:
        x = x.contiguous()
    qweight, scales, zeros = (t if t.stride(1) == 1 else t.contiguous() for t in (qweight, scales, zeros))
    cfg = {"BLOCK_N": BLOCK_N, "BLOCK_K": BLOCK_K, "SPLIT": SPLIT}
    pl = plan(cfg, {"M": M, "N": N, "K": K})
    out = torch.empty((M, N), dtype=x.dtype, device=x.device)
    dst = torch.empty((SPLIT, M, N), dtype=torch.float32, device=x.device) if SPLIT > 1 else out
    _kernel[(pl["tiles_n"], SPLIT)](**_kernel_args(x, qweight, scales, zeros, dst, cfg), num_warps=num_warps,
                                    num_stages=num_stages)
    if SPLIT > 1:
        _reduce_kernel[(-(-M * N // REDUCE_BLOCK),)](dst, out, M * N, M * N, SPLIT=SPLIT, BLOCK=REDUCE_BLOCK,
                                                     num_warps=REDUCE_WARPS)
    return out


def pack_int4(q):
    """q [N, K] codes 0..15 (K a multiple of 8) -> [N, K/8] int32, nibble j of word r = q[:, 8 r + j]."""
    import torch
    N, K = q.shape
    q = q.to(torch.int64).reshape(N, K // PACK, PACK)
    words = (q << (4 * torch.arange(PACK, device=q.device))).sum(-1)
    return (words - ((words >> 31) << 32)).to(torch.int32)     # two's complement of the top nibble


def unpack_int4(words):
    """[N, K/8] int32 -> [N, K] int64 codes 0..15."""
    import torch
    w = words.to(torch.int64)
    return ((w[..., None] >> (4 * torch.arange(PACK, device=w.device))) & 0xF).reshape(w.shape[0], -1)


def dequant(qweight, scales, zeros, dtype=None):
    """The [N, K] weight (q - z) * s, in `dtype` (default: fp64, exact)."""
    import torch
    q = unpack_int4(qweight).to(torch.float64)
    K = q.shape[1]
    s = scales.to(torch.float64).repeat_interleave(GROUP_SIZE, dim=1)[:, :K]
    z = zeros.to(torch.float64).repeat_interleave(GROUP_SIZE, dim=1)[:, :K]
    w = (q - z) * s
    return w if dtype is None else w.to(dtype)


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """x ~ N(0, 1); random codes; scales ~ 0.01-0.03 (a Linear's |w| ~ 0.1), zeros in [7, 9]
    (AWQ's min/max zero points of a roughly symmetric group, not integer)."""
    import torch
    _check_point(point)
    gen = torch.Generator(device=device).manual_seed(seed)
    dt = _torch_dtype(point.get("dtype", "fp16"))
    M, N, K = point["M"], point["N"], point["K"]
    G = -(-K // GROUP_SIZE)
    x = torch.randn((M, K), generator=gen, device=device).to(dt)
    q = torch.randint(0, 16, (N, K), generator=gen, device=device, dtype=torch.int32)
    scales = (0.01 + 0.02 * torch.rand((N, G), generator=gen, device=device)).to(dt)
    zeros = (7.0 + 2.0 * torch.rand((N, G), generator=gen, device=device)).to(dt)
    return {"x": x, "qweight": pack_int4(q), "scales": scales, "zeros": zeros}


def launch(inputs, cfg):
    return w4a16_gemv(inputs["x"], inputs["qweight"], inputs["scales"], inputs["zeros"],
                      BLOCK_N=cfg["BLOCK_N"], BLOCK_K=cfg["BLOCK_K"], SPLIT=cfg["SPLIT"],
                      num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])


def reference(inputs):
    """fp64 torch: x (as given) @ the exact dequantised weight^T -> [M, N] fp32."""
    import torch
    w = dequant(inputs["qweight"], inputs["scales"], inputs["zeros"])
    return (inputs["x"].to(torch.float64) @ w.t()).float()


def torch_baseline(inputs):
    """Dequantise to x's dtype, then F.linear (cuBLAS): what a framework without a fused kernel does."""
    import torch.nn.functional as F
    x = inputs["x"]
    return F.linear(x, dequant(inputs["qweight"], inputs["scales"], inputs["zeros"], x.dtype))


def bytes_moved(point) -> int:
    """Packed weights, scales and zeros, x and out once; with split-K the fp32 partials the
    reduce reads back (from L2) are not counted, as they need not reach DRAM."""
    _check_point(point)
    e = _elem_bytes(point.get("dtype", "fp16"))
    M, N, K = point["M"], point["N"], point["K"]
    G = -(-K // GROUP_SIZE)
    return N * K // 2 + 2 * e * N * G + e * M * K + e * M * N


def flops(point) -> int:
    _check_point(point)
    return 2 * point["M"] * point["N"] * point["K"]


def grid(cfg, point) -> tuple:
    """(column tiles, SPLIT): pid_n fastest."""
    pl = plan(cfg, point)
    return (pl["tiles_n"], cfg["SPLIT"])


def loop_iterations(cfg, point) -> int:
    """K tiles of the fullest split: cdiv(cdiv(K, BLOCK_K), SPLIT)."""
    return plan(cfg, point)["TILES_PER_SPLIT"]


def cta_iterations(cfg, point) -> list:
    """Each CTA's K tiles in launch order (column tile fastest): split s walks
    min(TILES_PER_SPLIT, tiles_k - s TILES_PER_SPLIT), >= 0."""
    pl = plan(cfg, point)
    per, n = pl["TILES_PER_SPLIT"], pl["tiles_k"]
    out = []
    for s in range(cfg["SPLIT"]):
        out += [max(0, min(per, n - s * per))] * pl["tiles_n"]
    return out


def secondary_kernels(cfg, point) -> list:
    """The split-K reduce when SPLIT > 1: cdiv(M N, REDUCE_BLOCK) CTAs, SPLIT steps each of a
    [REDUCE_BLOCK] fp32 partial just written (L2: dram_bytes 0)."""
    if cfg["SPLIT"] == 1:
        return []
    _check_point(point)
    mn = point["M"] * point["N"]
    return [{"name": "_reduce_kernel", "grid": -(-mn // REDUCE_BLOCK), "iterations": cfg["SPLIT"],
             "tile_bytes": 4 * REDUCE_BLOCK, "dram_bytes": 0, "blocks_per_sm": 8}]


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory)."""
    import torch
    _check_point(point)
    dt = _torch_dtype(point.get("dtype", "fp16"))
    M, N, K = point["M"], point["N"], point["K"]
    G = -(-K // GROUP_SIZE)
    x = torch.empty((M, K), dtype=dt, device="meta")
    qw = torch.empty((N, K // PACK), dtype=torch.int32, device="meta")
    s = torch.empty((N, G), dtype=dt, device="meta")
    z = torch.empty((N, G), dtype=dt, device="meta")
    if cfg["SPLIT"] > 1:
        out = torch.empty((cfg["SPLIT"], M, N), dtype=torch.float32, device="meta")
    else:
        out = torch.empty((M, N), dtype=dt, device="meta")
    return _kernel_args(x, qw, s, z, out, cfg)
