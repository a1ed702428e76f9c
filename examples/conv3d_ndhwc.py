"""3-D convolution forward (groups = 1) as an implicit GEMM on channels-last-3d (NDHWC) activations,
with the causal time padding of video VAEs, a bare @triton.jit kernel + its launcher.

    out[n, k, t, h, w] = sum_{kt, r, s, c} xp[n, c, t st - pt + kt, h sh - ph + r, w sw - pw + s] w[k, c, kt, r, s]
                         (+ bias[k])

xp is x seen through its padding, per axis a front pad (pt, ph, pw) and a back pad: symmetric
(F.conv3d's padding: nnU-Net's 3-D UNets) or, with `causal`, the time axis padded only in front, by
2 pt frames (KT - 1 for the odd kernels these models use), and not at all behind -- the CausalConv3d
of the video VAEs, where output frame t sees input frames <= t only. What the padded taps read:
  time (TIME_MODE): 0 zeros (nnU-Net; Wan 2.1's VAE on its first chunk); 1 replicate, the edge frame
      repeated (CogVideoX's VAE on its first chunk, `[inputs[:, :, :1]] * (k - 1)` concatenated in
      front; HunyuanVideo's VAE, F.pad(mode="replicate")); 2 cache: the front pad's frames are the
      last frames of the previous chunk, `cache` [N, C, Tc, H, W] (Tc >= the front pad: Wan's
      feat_cache, CogVideoX's conv_cache), read in place where those models torch.cat them in front
      of the chunk (a full read and write of the chunk's activations saved per conv);
  space (SPACE_REPL): 0 zeros, 1 replicate (HunyuanVideo pads all three axes by replication).
x: torch's logical [N, C, T, H, W] fp16 / bf16 with unit channel stride (channels_last_3d memory, any
n / t / h / w strides: a channel slice of a wider buffer is read in place; anything else is copied to
channels_last_3d); the cache likewise; weight [K, C, KT, KR, KS] in x's dtype, stored [K, KT, KR, KS,
C] (unit C stride: a channels_last_3d weight, converted once per layer); bias [K] or None; out [N, K,
To, Ho, Wo] in x's dtype, the [N To Ho Wo, K] GEMM output with its voxels one pitch apart: a fresh
channels_last_3d tensor or the caller's `out` (e.g. the channel slice of a UNet's concatenation
buffer, written in place); fp32 accumulation through tl.dot, one rounding at the store.

The GEMM view: M = N To Ho Wo output voxels (GEMM row m = the voxel's NDHWC index), N_gemm = K output
channels, K_gemm = KT KR KS C ordered (kt, r, s, c), c fastest -- the weight's own order, so a
[BLOCK_K, BLOCK_N] weight tile is one 2-D load with the reduction contiguous (wgmma's K-major B). A
program decodes its BLOCK_M rows into (n, t, h, w) once (three runtime divisions a row; rows past M
clamped to the last voxel: every load in bounds, the store masked) and keeps per row only what the
loop needs: the pointer of its window's origin, the packed tap bits -- one int32 holding, per axis,
which of the KT / KR / KS taps land inside the input (plus, with the cache, which time taps land on a
cached frame; 2 KT + KR + KS <= 31) -- and, for the replicated axes, the origin's coordinates. The
voxel itself is not kept: the store addresses row m at m x pitch. ONE flat loop runs KT KR KS
cdiv(C, BLOCK_K) steps, tap-major with the channel blocks inside a tap, so that Triton's pipeliner
keeps num_stages steps of A and B tiles in flight across taps (a nested tap / channel loop would
pipeline only the 1-4 channel steps of one tap). At step i the tap (kt, r, s) and the channel offset
c0 are scalars, and the A tile (BLOCK_K contiguous channels of each row's tap voxel, 16-byte vectors
when C is a multiple of 8) is the origin pointers plus ONE scalar offset; the halo is the mask
(bits >> kt) & (bits >> (KT + r)) & (bits >> (KT + KR + s)) & 1 (zero fill, no memory access). A
replicated axis adds per row the clamp's correction (clamp(i0 + k) - (i0 + k)) x stride, and where
every axis replicates and C fills the channel blocks (HunyuanVideo's convs) the A load has no mask at
all. With the cache each row also has an origin in the cache, and the elements of the rows whose tap
frame is cached take the cache's pointer: the select is per element of the [BLOCK_M, BLOCK_K] tile,
not per row, because a per-row pointer select hides the channels' contiguity from Triton's axis
analysis (16-bit scalar loads, no cp.async: up to 664 registers spilled at the Wan point). The
channel tail (C % BLOCK_K != 0, e.g. Wan's 96 channels in blocks of 64) is masked on A and B only
where it exists (EVEN_C, set by the launcher); output channels past K read a clamped weight column
and are masked on the store. Offsets inside one sample are int32 (the launcher checks they fit), the
sample bases and the output rows int64.

Tile order: a 1-D grid, the cdiv(K, BLOCK_N) column tiles of one row panel adjacent (fastest), so the
programs that gather the same activation panel -- and its KT KR KS-fold re-reads, its halo shared
with the neighbouring panels -- run together and take it from L2; the weights (0.1-0.9 MB at the
points) stay in L2 for the whole launch.

How this differs from examples/conv2d_nhwc.py and examples/im2col_conv.py: conv2d_nhwc is the 2-D
NHWC implicit GEMM with symmetric zero padding and dilation, its halo tested by per-row coordinate
compares each step and its output written through the NHWC row; im2col_conv only materializes the
column matrix for a separate GEMM (no tl.dot, any layout). Here the taps span three axes (a third,
temporal tap axis folded into the flat K loop), the time axis may be causal (front-only padding), the
padded taps read zeros, replicated edge frames / pixels (clamped coordinates) or the previous chunk's
cached frames from a second tensor (a per-element pointer select), the halo comes from per-row packed
tap bits, strides are per axis (Wan's temporal-only stride-2 time_conv, nnU-Net's stride-2
downsampling), and out may be a pitched channel slice. No dilation (none of these models dilates a
3-D conv).

Tunables: BLOCK_M (64 / 128 output voxels), BLOCK_N (64 / 128 output channels), BLOCK_K (32 / 64
channels a step), num_warps (4 / 8), num_stages (2 / 3 / 4: the gathered A and the B tiles of the dot
loop are software-pipelined, cp.async into num_stages shared-memory buffers). On sm_90 every config
of the sweep compiles at every point without spills: 42-239 registers under triton 3.6.0, 42-237
under 3.9.0 (the most for 128 x 128 on 4 warps, the 64 KiB fp32 accumulator: 197-239; 42-62 for 64 x
64 on 8 warps), shared memory 16-128 KiB under both, exactly the num_stages (BLOCK_M + BLOCK_N)
BLOCK_K 2 bytes of the pipeline's buffers at every config and point. On sm_120 (mma.sync) 64 x 64 x 32
on 4 warps with 3 / 4 stages (triton 3.6) and 128 x 64 x 64 on 4 warps with 4 stages (3.9) spill 2
registers at the CogVideoX point; the rest of the sweep compiles there without spills.
Problem parameters (a workload point): N, C, T, H, W (the input), K, KT, KR, KS (the filter), stride
and pad (an int or a (t, h, w) triple each; pad symmetric, or with causal 1 the time pad 2 pt in
front only), causal (0 / 1), time_pad ("zeros" / "replicate" / "cache": Tc = the front pad cached
frames), space_pad ("zeros" / "replicate"), bias (0 / 1), dtype (fp16 / bf16).
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _axis_bits(i0, size, K_AX: tl.constexpr, SHIFT: tl.constexpr, MODE: tl.constexpr):
    """Per row, bit SHIFT + k set where tap k of this axis reads a real input element: MODE 0 (zeros)
    0 <= i0 + k < size; 1 (replicate: clamped, always real) every bit; 2 (cache: i0 + k < 0 reads a
    cached frame) i0 + k < size."""
    bits = tl.zeros_like(i0)
    for k in tl.static_range(K_AX):
        if MODE == 0:
            ok = (i0 + k >= 0) & (i0 + k < size)
        elif MODE == 2:
            ok = i0 + k < size
        else:
            ok = i0 == i0                   # all true
        bits = bits | (ok.to(tl.int32) << (SHIFT + k))
    return bits


@triton.jit
def _clamp_shift(i0, k, size, stride):
    """The offset that moves tap coordinate i0 + k to its replicate-padded (clamped) position."""
    i = i0 + k
    return (tl.minimum(tl.maximum(i, 0), size - 1) - i) * stride


@triton.jit
def _kernel(X, CACHE, Wt, BIAS, OUT,
            M, C, T, H, W, K, To, Ho, Wo, Tc,
            stride_xn, stride_xt, stride_xh, stride_xw,
            stride_cn, stride_ct, stride_ch, stride_cw,
            stride_wk, stride_wt, stride_wr, stride_ws, stride_om,
            st_t, st_h, st_w, pad_t, pad_h, pad_w,
            KT: tl.constexpr, KR: tl.constexpr, KS: tl.constexpr, TIME_MODE: tl.constexpr,
            SPACE_REPL: tl.constexpr, HAS_BIAS: tl.constexpr, EVEN_C: tl.constexpr,
            BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    # the packed per-row tap bits: time [0, KT), h [KT, KT + KR), w [.., + KS), cached frame [.., + KT)
    SH_H: tl.constexpr = KT
    SH_W: tl.constexpr = KT + KR
    SH_C: tl.constexpr = KT + KR + KS
    SPACE_MODE: tl.constexpr = SPACE_REPL
    # no A mask at all: every axis replicates (no halo) and the channel blocks fill C
    A_MASKED: tl.constexpr = not (SPACE_REPL and TIME_MODE == 1 and EVEN_C)
    RS: tl.constexpr = KR * KS
    pid = tl.program_id(0)
    tiles_n = tl.cdiv(K, BLOCK_N)
    tile_m = pid // tiles_n
    tile_n = pid - tile_m * tiles_n
    rows = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rows_ld = tl.minimum(rows, M - 1)           # rows past M: the last voxel (in bounds, never stored)
    cols_ld = tl.minimum(cols, K - 1)

    # each row's output voxel (n, to, ho, wo) -> its window's origin (it0, ih0, iw0) in the input, the
    # origin's pointer (a step adds one scalar) and the packed bits of its valid taps; the voxel itself
    # is not kept (the store addresses rows m of the [M, K] output)
    wo = rows_ld % Wo
    q = rows_ld // Wo
    ho = q % Ho
    q = q // Ho
    to = q % To
    n = (q // To).to(tl.int64)
    it0 = to * st_t - pad_t
    ih0 = ho * st_h - pad_h
    iw0 = wo * st_w - pad_w
    x_row = X + n * stride_xn + (it0 * stride_xt + ih0 * stride_xh + iw0 * stride_xw)
    bits = _axis_bits(it0, T, KT, 0, TIME_MODE) | _axis_bits(ih0, H, KR, SH_H, SPACE_MODE) \
        | _axis_bits(iw0, W, KS, SH_W, SPACE_MODE)
    if TIME_MODE == 2:                          # input frame it < 0 is cache frame Tc + it
        c_row = CACHE + n * stride_cn + ((it0 + Tc) * stride_ct + ih0 * stride_ch + iw0 * stride_cw)
        for k in tl.static_range(KT):
            bits = bits | ((it0 + k < 0).to(tl.int32) << (SH_C + k))
    ks = tl.arange(0, BLOCK_K)
    w_ptr = Wt + cols_ld[None, :] * stride_wk + ks[:, None]                 # [BLOCK_K, BLOCK_N], K-major

    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    c_tiles = tl.cdiv(C, BLOCK_K)
    for i in range(0, KT * RS * c_tiles):
        tap = i // c_tiles
        c0 = (i - tap * c_tiles) * BLOCK_K
        kt = tap // RS
        rs = tap - kt * RS
        r = rs // KS
        s = rs - r * KS
        a_row = x_row + (kt * stride_xt + r * stride_xh + s * stride_xw + c0)
        if TIME_MODE == 1:                      # replicated edge frames: clamp the tap's frame
            a_row += _clamp_shift(it0, kt, T, stride_xt)
        if SPACE_REPL:                          # replicated edge pixels: clamp the tap's pixel
            a_row += _clamp_shift(ih0, r, H, stride_xh) + _clamp_shift(iw0, s, W, stride_xw)
        a_ptrs = a_row[:, None] + ks[None, :]
        if TIME_MODE == 2:                      # the rows whose tap frame is cached read the cache
            c_tap = c_row + (kt * stride_ct + r * stride_ch + s * stride_cw + c0)
            if SPACE_REPL:
                c_tap += _clamp_shift(ih0, r, H, stride_ch) + _clamp_shift(iw0, s, W, stride_cw)
            # selected per element (a per-row pointer select hides the channels' contiguity from
            # Triton's axis analysis: scalar loads, no cp.async pipelining)
            cached = ((bits >> (SH_C + kt)) & 1) != 0
            a_ptrs = tl.where(cached[:, None], c_tap[:, None] + ks[None, :], a_ptrs)
        ok = ((bits >> kt) & (bits >> (SH_H + r)) & (bits >> (SH_W + s)) & 1) != 0
        w_off = kt * stride_wt + r * stride_wr + s * stride_ws + c0
        if EVEN_C:
            if A_MASKED:
                a = tl.load(a_ptrs, mask=ok[:, None], other=0.0)
            else:
                a = tl.load(a_ptrs)
            b = tl.load(w_ptr + w_off)
        else:
            c_ok = ks < C - c0
            a = tl.load(a_ptrs, mask=ok[:, None] & c_ok[None, :], other=0.0)
            b = tl.load(w_ptr + w_off, mask=c_ok[:, None], other=0.0)
        acc = tl.dot(a, b, acc)

    if HAS_BIAS:
        acc = acc + tl.load(BIAS + cols_ld).to(tl.float32)[None, :]
    o_ptr = OUT + rows.to(tl.int64)[:, None] * stride_om + cols[None, :]
    tl.store(o_ptr, acc.to(OUT.dtype.element_ty), mask=(rows < M)[:, None] & (cols < K)[None, :])


# ---------------------------------------------------------------- launcher
ROLE = "held-out-30"
DTYPES = ("fp16", "bf16")
TUNABLES = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "num_warps", "num_stages")
BASELINE = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "num_warps": 4, "num_stages": 3}
# the study's sweep: 2 x 2 x 2 x 2 x 3 = 48 configs. BLOCK_M 64 (one warpgroup's wgmma rows) / 128,
# BLOCK_N 64 / 128 (the points have 64-128 output channels), BLOCK_K 32 / 64 (four / eight 16-byte
# vectors a row of the gathered tile), 4 / 8 warps, 2-4 pipeline stages
SWEEP_AXES = {"BLOCK_M": [64, 128], "BLOCK_N": [64, 128], "BLOCK_K": [32, 64], "num_warps": [4, 8],
              "num_stages": [2, 3, 4]}
TIME_PADS = ("zeros", "replicate", "cache")
SPACE_PADS = ("zeros", "replicate")

POINTS = [
    # CogVideoX-5B's VAE decoder (diffusers AutoencoderKLCogVideoX, bf16), up_blocks.3 (the full-
    # resolution 128-channel stage) resnet conv2, a CogVideoXCausalConv3d 128 -> 128, 3x3x3 with bias,
    # in a tiled 480 x 720 decode: one 240 x 360 sample tile of the first temporal chunk (3 latent
    # frames -> 9 frames after the two temporal upsamplers), the time padded by 2 replicas of frame 0
    # (conv_cache None), the space by zeros. M = 777600 rows, K_gemm = 3456; 688 GFLOP, x 199 MB + out
    # 199 MB: compute-bound
    {"N": 1, "C": 128, "T": 9, "H": 240, "W": 360, "K": 128, "KT": 3, "KR": 3, "KS": 3, "stride": 1, "pad": 1,
     "causal": 1, "time_pad": "replicate", "space_pad": "zeros", "bias": 1, "dtype": "bf16"},
    # Wan 2.1's VAE encoder (WanVAE_, dim 96), the full-resolution stage's ResidualBlock CausalConv3d
    # 96 -> 96, 3x3x3 with bias, on a 4-frame chunk of a 480 x 832 video, its 2 front frames read from
    # the previous chunk's feat_cache (CACHE_T 2, what Wan torch.cat's in front), in bf16 (a bf16
    # deployment; Wan's reference code keeps its VAE in fp32, which this kernel does not take). C 96: a
    # ragged channel block at BLOCK_K 64, a 3/4-full column tile at BLOCK_N 128. M = 1597440 rows,
    # K_gemm = 2592; 795 GFLOP, x 307 MB + cache 153 MB + out 307 MB
    {"N": 1, "C": 96, "T": 4, "H": 480, "W": 832, "K": 96, "KT": 3, "KR": 3, "KS": 3, "stride": 1, "pad": 1,
     "causal": 1, "time_pad": "cache", "space_pad": "zeros", "bias": 1, "dtype": "bf16"},
    # nnU-Net v2 3d_fullres (PlainConvUNet, 128^3 patches, features 32 / 64 / ..., conv bias), batch 2,
    # fp16 (its AMP training): encoder stage 1's first conv, 32 -> 64, 3x3x3, stride 2, pad 1
    # (symmetric, zeros): 128^3 -> 64^3. M = 524288 rows, K_gemm = 864; 58 GFLOP, x 268 MB + out 67 MB:
    # the strided gather's traffic dominates (a BLOCK_K 64 step half masked: C 32)
    {"N": 2, "C": 32, "T": 128, "H": 128, "W": 128, "K": 64, "KT": 3, "KR": 3, "KS": 3, "stride": 2, "pad": 1,
     "causal": 0, "time_pad": "zeros", "space_pad": "zeros", "bias": 1, "dtype": "fp16"},
]


def _torch_dtype(name: str):
    import torch
    try:
        return {"fp16": torch.float16, "bf16": torch.bfloat16}[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}") from None


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _triple(v, what: str) -> tuple[int, int, int]:
    """An int or a (t, h, w) triple of ints -> (t, h, w)."""
    if _is_int(v):
        return v, v, v
    try:
        t, h, w = v
    except (TypeError, ValueError):
        raise ValueError(f"{what}={v!r} must be an int or a (t, h, w) triple") from None
    if not all(_is_int(e) for e in (t, h, w)):
        raise ValueError(f"{what}={v!r} must be an int or a (t, h, w) triple of ints")
    return t, h, w


def _pads(pad, causal: bool) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """(front, back) pads per axis: symmetric, or causal time: 2 pt in front, none behind."""
    pt, ph, pw = pad
    if causal:
        return (2 * pt, ph, pw), (0, ph, pw)
    return (pt, ph, pw), (pt, ph, pw)


def _out_size(size: int, k: int, st: int, front: int, back: int) -> int:
    return (size + front + back - k) // st + 1


def _check_cfg(cfg) -> None:
    for name in ("BLOCK_M", "BLOCK_N", "BLOCK_K"):
        v = cfg[name]
        if not _is_int(v) or v < 16 or v > 256 or v & (v - 1):
            raise ValueError(f"{name}={v!r} must be a power of two from 16 to 256 (a tl.dot operand side)")
    w = cfg["num_warps"]
    if not _is_int(w) or w not in (1, 2, 4, 8, 16):
        raise ValueError(f"num_warps={w!r} must be a power of two from 1 to 16")
    st = cfg.get("num_stages", 1)
    if not _is_int(st) or st < 1 or st > 8:
        raise ValueError(f"num_stages={st!r} must be an int from 1 to 8")


def _check_filter(KT: int, KR: int, KS: int) -> None:
    if 2 * KT + KR + KS > 31:
        raise ValueError(f"the filter {(KT, KR, KS)} needs 2 KT + KR + KS <= 31 (the kernel's packed tap bits)")


def _check_modes(time_pad, space_pad, front_t: int) -> tuple[int, int]:
    """(TIME_MODE, SPACE_REPL) of the padding modes."""
    if time_pad not in TIME_PADS:
        raise ValueError(f"time_pad={time_pad!r} must be one of {', '.join(TIME_PADS)}")
    if space_pad not in SPACE_PADS:
        raise ValueError(f"space_pad={space_pad!r} must be one of {', '.join(SPACE_PADS)}")
    if time_pad == "cache" and front_t < 1:
        raise ValueError("time_pad='cache' needs a front time padding (the cached frames): pad t >= 1")
    return TIME_PADS.index(time_pad), SPACE_PADS.index(space_pad)


def _check_point(point) -> dict:
    """The point's fields, checked, plus the pads, the output size and the modes."""
    for k in ("N", "C", "T", "H", "W", "K", "KT", "KR", "KS"):
        v = point[k]
        if not _is_int(v) or v < 1:
            raise ValueError(f"{k}={v!r} must be a positive int")
    st = _triple(point.get("stride", 1), "stride")
    pad = _triple(point.get("pad", 0), "pad")
    if min(st) < 1 or min(pad) < 0:
        raise ValueError(f"stride={st} must be >= 1 and pad={pad} >= 0 on every axis")
    causal = point.get("causal", 0)
    if causal not in (0, 1) or not isinstance(causal, (int, bool)):
        raise ValueError(f"causal={causal!r} must be 0 or 1")
    _check_filter(point["KT"], point["KR"], point["KS"])
    front, back = _pads(pad, bool(causal))
    tm, sr = _check_modes(point.get("time_pad", "zeros"), point.get("space_pad", "zeros"), front[0])
    bias = point.get("bias", 0)
    if bias not in (0, 1) or not isinstance(bias, (int, bool)):
        raise ValueError(f"bias={bias!r} must be 0 or 1")
    dt = point.get("dtype", "bf16")
    if dt not in DTYPES:
        raise ValueError(f"dtype {dt!r} is not one of {', '.join(DTYPES)}")
    size = (point["T"], point["H"], point["W"])
    kern = (point["KT"], point["KR"], point["KS"])
    outs = tuple(_out_size(size[a], kern[a], st[a], front[a], back[a]) for a in range(3))
    if min(outs) < 1:
        raise ValueError(f"the {kern} filter does not fit the padded input {size} (output {outs})")
    P = dict(point)
    P.update(stride=st, pad=pad, causal=int(causal), bias=int(bias), dtype=dt, front=front, back=back,
             out_size=outs, TIME_MODE=tm, SPACE_REPL=sr, Tc=front[0] if tm == 2 else 0,
             M=point["N"] * outs[0] * outs[1] * outs[2])
    return P


def _grid(M: int, K: int, cfg) -> tuple[int]:
    _check_cfg(cfg)
    return (triton.cdiv(M, cfg["BLOCK_M"]) * triton.cdiv(K, cfg["BLOCK_N"]),)


def _kernel_args(x, weight, bias, cache, out, stride, front, time_mode: int, space_repl: int, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it). x [N, C, T,
    H, W], weight [K, C, KT, KR, KS], cache [N, C, Tc, H, W] or None, out [N, K, To, Ho, Wo], all with
    unit channel stride; x stands in for a missing cache or bias (never read)."""
    Nb, C, T, H, W = x.shape
    K, _, KT, KR, KS = weight.shape
    To, Ho, Wo = out.shape[2:]
    cs = (lambda i: 0) if cache is None else cache.stride
    return dict(X=x, CACHE=x if cache is None else cache, Wt=weight, BIAS=x if bias is None else bias, OUT=out,
                M=Nb * To * Ho * Wo, C=C, T=T, H=H, W=W, K=K, To=To, Ho=Ho, Wo=Wo,
                Tc=0 if cache is None else cache.shape[2],
                stride_xn=x.stride(0), stride_xt=x.stride(2), stride_xh=x.stride(3), stride_xw=x.stride(4),
                stride_cn=cs(0), stride_ct=cs(2), stride_ch=cs(3), stride_cw=cs(4),
                stride_wk=weight.stride(0), stride_wt=weight.stride(2), stride_wr=weight.stride(3),
                stride_ws=weight.stride(4), stride_om=_row_pitch(out),
                st_t=stride[0], st_h=stride[1], st_w=stride[2], pad_t=front[0], pad_h=front[1], pad_w=front[2],
                KT=KT, KR=KR, KS=KS, TIME_MODE=time_mode, SPACE_REPL=space_repl, HAS_BIAS=int(bias is not None),
                EVEN_C=int(C % cfg["BLOCK_K"] == 0), BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"],
                BLOCK_K=cfg["BLOCK_K"])


def _row_pitch(out) -> int:
    """The pitch of out [N, K, To, Ho, Wo] seen as the [N To Ho Wo, K] GEMM output (unit channel
    stride, the voxels one pitch apart in NDHWC order: channels_last_3d, or the channel slice of a
    wider one); ValueError if it is not one."""
    Nb, K, To, Ho, Wo = out.shape
    if out.stride(1) != 1 and K > 1:
        raise ValueError(f"out must have unit channel stride; got strides {tuple(out.stride())}")
    pitch = out.stride(4) if Wo > 1 else (out.stride(3) if Ho > 1 else (out.stride(2) if To > 1 else
                                                                        max(out.stride(0), K)))
    want = (To * Ho * Wo * pitch, 1, Ho * Wo * pitch, Wo * pitch, pitch)
    if pitch < K or any(sz > 1 and out.stride(d) != want[d] for d, sz in enumerate(out.shape)):
        raise ValueError(f"out must be a channels_last_3d [N, K, To, Ho, Wo] or a channel slice of one (its voxels "
                         f"one pitch >= K apart); got strides {tuple(out.stride())}")
    return pitch


def _in_sample_bound(t, front, back) -> int:
    """A bound of the |offsets| (elements) the kernel forms inside one sample of a 5-D tensor, its
    padded taps included (int32 in the kernel)."""
    return t.shape[1] * abs(t.stride(1)) + sum((t.shape[d] + front[d - 2] + back[d - 2]) * abs(t.stride(d))
                                               for d in (2, 3, 4))


def conv3d_ndhwc(x, weight, bias=None, stride=1, padding=0, *, causal: bool = False, time_pad: str = "zeros",
                 space_pad: str = "zeros", cache=None, out=None, BLOCK_M: int = 128, BLOCK_N: int = 128,
                 BLOCK_K: int = 64, num_warps: int = 4, num_stages: int = 3):
    """torch.nn.functional.conv3d(xp, weight, bias, stride) with groups = 1, dilation 1, where xp is x
    [N, C, T, H, W] padded by `padding` (an int or a (t, h, w) triple): symmetric, or with `causal` the
    time axis by 2 padding[0] frames in front and none behind. time_pad: "zeros", "replicate" (the
    edge frames repeated) or "cache" (the front frames are the last ones of `cache` [N, C, Tc, H, W],
    Tc >= the front pad: the previous chunk's frames, read in place); space_pad: "zeros" or
    "replicate". x, cache and weight [K, C, KT, KR, KS] fp16 / bf16 in one dtype with unit channel
    stride (channels_last_3d memory; others are copied to it), bias [K] or None in x's dtype. Returns
    [N, K, To, Ho, Wo] in x's dtype: a fresh channels_last_3d tensor, or `out` (that shape and dtype,
    unit channel stride, any other strides) written in place. BLOCK_M, BLOCK_N, BLOCK_K, num_warps,
    num_stages: the tunables (module doc)."""
    import torch
    if x.dim() != 5 or weight.dim() != 5 or x.shape[1] != weight.shape[1]:
        raise ValueError(f"expected x [N, C, T, H, W] and weight [K, C, KT, KR, KS] (groups = 1); got "
                         f"{tuple(x.shape)}, {tuple(weight.shape)}")
    if x.dtype not in (torch.float16, torch.bfloat16) or weight.dtype != x.dtype:
        raise ValueError(f"x and weight must share one fp16 / bf16 dtype; got {x.dtype}, {weight.dtype}")
    Nb, C, T, H, W = x.shape
    K, _, KT, KR, KS = weight.shape
    if bias is not None and (bias.dtype != x.dtype or tuple(bias.shape) != (K,)):
        raise ValueError(f"bias must be {x.dtype} [{K}]; got {bias.dtype} {tuple(bias.shape)}")
    st = _triple(stride, "stride")
    pad = _triple(padding, "padding")
    if min(st) < 1 or min(pad) < 0:
        raise ValueError(f"stride={st} must be >= 1 and padding={pad} >= 0 on every axis")
    _check_filter(KT, KR, KS)
    front, back = _pads(pad, bool(causal))
    time_mode, space_repl = _check_modes(time_pad, space_pad, front[0])
    cfg = {"BLOCK_M": BLOCK_M, "BLOCK_N": BLOCK_N, "BLOCK_K": BLOCK_K, "num_warps": num_warps,
           "num_stages": num_stages}
    _check_cfg(cfg)
    if C == 0 or K == 0 or min(T, H, W) == 0:
        raise ValueError(f"empty convolution: C={C}, K={K}, input {T}x{H}x{W}")
    outs = tuple(_out_size((T, H, W)[a], (KT, KR, KS)[a], st[a], front[a], back[a]) for a in range(3))
    if min(outs) < 1:
        raise ValueError(f"the {(KT, KR, KS)} filter does not fit the padded input {(T, H, W)} (output {outs})")
    if time_mode == 2:
        if cache is None:
            raise ValueError("time_pad='cache' needs the cache tensor [N, C, Tc, H, W]")
        if cache.dim() != 5 or cache.shape[:2] != x.shape[:2] or cache.shape[3:] != x.shape[3:] \
                or cache.shape[2] < front[0] or cache.dtype != x.dtype:
            raise ValueError(f"cache must be {x.dtype} [N, C, Tc >= {front[0]}, H, W] = [{Nb}, {C}, >= {front[0]}, "
                             f"{H}, {W}]; got {cache.dtype} {tuple(cache.shape)}")
    elif cache is not None:
        raise ValueError(f"a cache is read only with time_pad='cache'; got time_pad={time_pad!r}")
    dev = x.device
    for name, t in (("weight", weight), ("bias", bias), ("cache", cache), ("out", out)):
        if t is not None and t.device != dev:
            raise ValueError(f"{name} must be on x's device {dev}; got {t.device}")
    oshape = (Nb, K) + outs
    if out is None:
        out = torch.empty(oshape, dtype=x.dtype, device=dev, memory_format=torch.channels_last_3d)
    elif tuple(out.shape) != oshape or out.dtype != x.dtype:
        raise ValueError(f"out must be {x.dtype} {list(oshape)}; got {out.dtype} {tuple(out.shape)}")
    _row_pitch(out)                             # out's voxels one pitch apart (ValueError if not)
    if Nb == 0:
        return out
    cl = torch.channels_last_3d
    if x.stride(1) != 1:
        x = x.contiguous(memory_format=cl)
    if weight.stride(1) != 1:
        weight = weight.contiguous(memory_format=cl)
    if cache is not None and cache.stride(1) != 1:
        cache = cache.contiguous(memory_format=cl)
    M = Nb * outs[0] * outs[1] * outs[2]
    spans = [_in_sample_bound(t, front, back) for t in (x,) + (() if cache is None else (cache,))]
    if max(spans) >= 2**31 or _in_sample_bound(weight, (0, 0, 0), (0, 0, 0)) * K >= 2**31 or M >= 2**31 - 256:
        raise ValueError("a sample's offsets exceed the kernel's int32 in-sample offsets")
    grid = _grid(M, K, cfg)
    _kernel[grid](**_kernel_args(x, weight, bias, cache, out, st, front, time_mode, space_repl, cfg),
                  num_warps=num_warps, num_stages=num_stages)
    return out


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """x ~ N(0, 1) (a normalized, activated feature map), weight ~ N(0, 1) / sqrt(C KT KR KS) (so the
    output is O(1)), bias ~ N(0, 0.5^2) when the point has one, with time_pad "cache" the cache ~ N(0,
    1) of Tc = the front pad frames; x, cache and weight channels_last_3d, drawn on the CPU from a
    seeded torch.Generator and moved. Also the geometry: stride, padding, causal, the modes."""
    import torch
    P = _check_point(point)
    gen = torch.Generator(device="cpu").manual_seed(seed)
    dt = _torch_dtype(P["dtype"])
    Nb, C, T, H, W, K = (P[k] for k in ("N", "C", "T", "H", "W", "K"))
    KT, KR, KS = P["KT"], P["KR"], P["KS"]
    cl = torch.channels_last_3d
    x = torch.randn((Nb, C, T, H, W), generator=gen).to(dt).to(device).contiguous(memory_format=cl)
    w = (torch.randn((K, C, KT, KR, KS), generator=gen) * (C * KT * KR * KS) ** -0.5).to(dt)
    bias = (0.5 * torch.randn((K,), generator=gen)).to(dt).to(device) if P["bias"] else None
    cache = None
    if P["TIME_MODE"] == 2:
        cache = torch.randn((Nb, C, P["Tc"], H, W), generator=gen).to(dt).to(device).contiguous(memory_format=cl)
    return {"x": x, "weight": w.to(device).contiguous(memory_format=cl), "bias": bias, "cache": cache,
            "stride": P["stride"], "padding": P["pad"], "causal": bool(P["causal"]), "time_pad": P["time_pad"],
            "space_pad": P["space_pad"]}


def launch(inputs, cfg):
    """out [N, K, To, Ho, Wo] of inputs["x"], ["weight"], ["bias"], ["cache"] with the geometry and
    padding modes of inputs (and inputs["out"], when given, written in place)."""
    return conv3d_ndhwc(inputs["x"], inputs["weight"], inputs.get("bias"), inputs["stride"], inputs["padding"],
                        causal=inputs["causal"], time_pad=inputs["time_pad"], space_pad=inputs["space_pad"],
                        cache=inputs.get("cache"), out=inputs.get("out"), BLOCK_M=cfg["BLOCK_M"],
                        BLOCK_N=cfg["BLOCK_N"], BLOCK_K=cfg["BLOCK_K"], num_warps=cfg["num_warps"],
                        num_stages=cfg["num_stages"])


def pad_input(x, padding, causal: bool, time_pad: str, space_pad: str, cache=None):
    """x padded as the models pad it before an unpadded conv: the time axis (zeros, replicated edge
    frames, or the cache's last front-pad frames in front and zeros behind), then the space (zeros or
    replicated edge pixels)."""
    import torch
    import torch.nn.functional as F
    front, back = _pads(_triple(padding, "padding"), causal)
    if time_pad == "cache":
        parts = [cache[:, :, cache.shape[2] - front[0]:], x]
        if back[0]:
            parts.append(x.new_zeros(x.shape[:2] + (back[0],) + x.shape[3:]))
        x = torch.cat(parts, dim=2)
    elif front[0] or back[0]:
        x = F.pad(x, (0, 0, 0, 0, front[0], back[0]), mode="replicate" if time_pad == "replicate" else "constant")
    if front[1] or back[1] or front[2] or back[2]:
        x = F.pad(x, (front[2], back[2], front[1], back[1], 0, 0),
                  mode="replicate" if space_pad == "replicate" else "constant")
    return x


def reference(inputs):
    """fp32 [N, K, To, Ho, Wo]: F.conv3d on the upcast (fp64 on the CPU, fp32 on a GPU) padded input,
    weight and bias."""
    import torch
    import torch.nn.functional as F
    x = inputs["x"]
    wide = torch.float64 if x.device.type == "cpu" else torch.float32
    cache = inputs.get("cache")
    xp = pad_input(x.to(wide), inputs["padding"], inputs["causal"], inputs["time_pad"], inputs["space_pad"],
                   None if cache is None else cache.to(wide))
    b = inputs.get("bias")
    return F.conv3d(xp, inputs["weight"].to(wide), None if b is None else b.to(wide), inputs["stride"]).float()


def torch_baseline(inputs):
    """What the models run: the time padding as a tensor (CogVideoX / Wan: torch.cat of the replicated
    first frame or the cached frames in front; F.pad(mode="replicate") for HunyuanVideo's all-axis
    replication), then F.conv3d in the inputs' dtype on channels_last_3d (cuDNN's NDHWC kernels on a
    GPU) with the zero spatial padding in the conv; nnU-Net's symmetric zero padding entirely in the
    conv. Returns [N, K, To, Ho, Wo]."""
    import torch.nn.functional as F
    x, cache = inputs["x"], inputs.get("cache")
    pad = _triple(inputs["padding"], "padding")
    causal, tp, sp = inputs["causal"], inputs["time_pad"], inputs["space_pad"]
    if not causal and tp == "zeros" and sp == "zeros":
        return F.conv3d(x, inputs["weight"], inputs.get("bias"), inputs["stride"], pad)
    if sp == "replicate":
        xp = pad_input(x, pad, causal, tp, sp, cache)
        return F.conv3d(xp, inputs["weight"], inputs.get("bias"), inputs["stride"])
    xp = pad_input(x, (pad[0], 0, 0), causal, tp, sp, cache)
    return F.conv3d(xp, inputs["weight"], inputs.get("bias"), inputs["stride"], (0, pad[1], pad[2]))


def bytes_moved(point) -> int:
    """x (and the cache's front-pad frames) read once, the weight and bias read once, out written once,
    2-byte elements. The im2col re-reads (each input voxel read by up to KT KR KS taps and by the
    cdiv(K, BLOCK_N) column tiles of its panel) are the kernel's L1 / L2 traffic, not counted."""
    P = _check_point(point)
    Nb, C, T, H, W, K = (P[k] for k in ("N", "C", "T", "H", "W", "K"))
    taps = P["KT"] * P["KR"] * P["KS"]
    return 2 * (Nb * C * (T + P["Tc"]) * H * W + K * C * taps + (K if P["bias"] else 0) + P["M"] * K)


def flops(point) -> int:
    """The implicit GEMM's multiply-adds, 2 M K C KT KR KS (padded taps included: they are computed;
    the bias adds not counted)."""
    P = _check_point(point)
    return 2 * P["M"] * P["K"] * P["C"] * P["KT"] * P["KR"] * P["KS"]


def grid(cfg, point) -> tuple[int]:
    """(cdiv(M, BLOCK_M) cdiv(K, BLOCK_N),): one program a (BLOCK_M, BLOCK_N) tile of the [N To Ho Wo, K]
    output, the column tiles of a row panel adjacent."""
    P = _check_point(point)
    return _grid(P["M"], P["K"], cfg)


def loop_iterations(cfg, point) -> int:
    """K-loop steps a program: KT KR KS taps x cdiv(C, BLOCK_K) channel blocks."""
    P = _check_point(point)
    _check_cfg(cfg)
    return P["KT"] * P["KR"] * P["KS"] * triton.cdiv(P["C"], cfg["BLOCK_K"])


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory): x,
    weight, the cache (time_pad "cache": Tc = the front pad frames) and out channels_last_3d, the bias
    [K] when the point has one."""
    import torch
    P = _check_point(point)
    _check_cfg(cfg)
    dt = _torch_dtype(P["dtype"])
    Nb, C, T, H, W, K = (P[k] for k in ("N", "C", "T", "H", "W", "K"))
    cl = torch.channels_last_3d
    x = torch.empty((Nb, C, T, H, W), dtype=dt, device="meta", memory_format=cl)
    w = torch.empty((K, C, P["KT"], P["KR"], P["KS"]), dtype=dt, device="meta", memory_format=cl)
    bias = torch.empty((K,), dtype=dt, device="meta") if P["bias"] else None
    cache = None
    if P["TIME_MODE"] == 2:
        cache = torch.empty((Nb, C, P["Tc"], H, W), dtype=dt, device="meta", memory_format=cl)
    out = torch.empty((Nb, K) + P["out_size"], dtype=dt, device="meta", memory_format=cl)
    return _kernel_args(x, w, bias, cache, out, P["stride"], P["front"], P["TIME_MODE"], P["SPACE_REPL"], cfg)
