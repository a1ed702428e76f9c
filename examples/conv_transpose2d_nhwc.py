"""2-D transposed convolution (deconvolution, groups = 1, dilation 1) on NHWC activations as S x S
sub-pixel implicit GEMMs, a bare @triton.jit kernel + its launcher.

    out[n, co, oy, ox] = sum_{ci, iy, ix, ky, kx : oy = iy S - ph + ky, ox = ix S - pw + kx} x[n, ci, iy, ix] w[ci, co, ky, kx]
                         (+ bias[co])

i.e. torch.nn.functional.conv_transpose2d(x, w, bias, stride=S, padding=(ph, pw), output_padding=(oph,
opw)), OH = (H - 1) S - 2 ph + KH + oph (OW likewise): the learned 2x upsampler of image decoders --
ConvTranspose2d(k4, s2, p1) in DCGAN / pix2pix-style generators and decoders, k2 s2 p0 in U-Net / nnU-Net
decoders, k3 s2 p1 with output_padding 1 in ERFNet / ENet / LinkNet segmentation decoders.

Sub-pixel (phase) decomposition, not a gather over the zero-stuffed input: output pixel (oy, ox) with
oy = qy S + ry, ox = qx S + rx belongs to output phase (ry, rx) in [0, S)^2, and every pixel of one phase
sees the same sub-kernel: with ry + ph = ay S + by, the taps are ky = by + S ty (ty = 0 .. nty - 1, nty =
cdiv(KH - by, S)) reading input row iy = qy + ay - ty (likewise x). So each phase is a dense,
stride-1 convolution of x with an nty x ntx sub-kernel -- a GEMM with M = N QH QW rows (QH = cdiv(OH, S),
QW = cdiv(OW, S): one row a pixel of that phase), N_gemm = Cout, K_gemm = nty ntx Cin -- and no
multiply-add is spent on the zeros a zero-stuffed (gather-style) transposed conv would multiply (3 of 4
taps for S = 2). Where S does not divide KH (k3 s2) the phases have different tap counts (2 x 2, 2 x 1,
1 x 2, 1 x 1): each program loops over its own phase's taps only (a runtime loop bound), so its
iterations differ per program (cta_iterations).

x: torch's logical [N, Cin, H, W] fp16 / bf16 with unit channel stride (channels_last memory, i.e. NHWC;
any n / h / w strides, a channel slice of a wider buffer read in place; anything else is copied to
channels_last). weight: torch's ConvTranspose2d layout [Cin, Cout, KH, KW] in x's dtype, stored with unit
Cout stride ([Cin, KH, KW, Cout] in memory: what .contiguous(memory_format=torch.channels_last) gives;
others are copied once): a [BLOCK_K, BLOCK_N] weight tile is BLOCK_K rows of BLOCK_N contiguous output
channels (wgmma's N-major B operand). bias [Cout] or None. out [N, Cout, OH, OW] in x's dtype with unit
channel stride and any other strides: a fresh channels_last tensor or the caller's `out`, e.g. the first
Cout channels of a U-Net decoder's torch.cat([up(x), skip], 1) buffer, written in place (the concat's
copy saved). fp32 accumulation through tl.dot, one rounding at the store.

Program -> work: a 1-D grid of cdiv(M, BLOCK_M) row tiles x S^2 phases x cdiv(Cout, BLOCK_N) column
tiles, the column tile fastest, then the phase: the S^2 cdiv(Cout, BLOCK_N) programs that read the same
input panel (every input pixel feeds all S^2 phases) run together and take it from L2; the weight (0.07-8
MB at the points) stays in L2. A program decodes its BLOCK_M rows (n, qy, qx) once (rows past M clamped
to the last row: loads in bounds, the store masked), keeps each row's input origin (iy0, ix0) and its
pointer, and runs ONE flat loop of nty ntx cdiv(Cin, BLOCK_K) steps, tap-major with the channel blocks
inside a tap, so Triton's pipeliner keeps num_stages A / B tiles in flight across taps. At a step the tap
(ty, tx) and the channel offset c0 are scalars; the A tile is the row origins plus one scalar offset
(BLOCK_K contiguous channels a row: 16-byte vectors), its halo the per-row compare 0 <= iy0 - ty < H,
0 <= ix0 - tx < W (zero fill); the B tile is one 2-D load at one scalar offset. The channel tail (Cin %
BLOCK_K != 0) is masked only where it exists (EVEN_C, set by the launcher), and so are the weight columns
past Cout (EVEN_N: Cout % BLOCK_N != 0, masked -- not clamped, which would hide their contiguity and leave
the B tile unpipelined); the store is masked there and at the rows of a phase past OH / OW (an odd OH).
Offsets inside one sample are int32 (the launcher checks they fit), the sample bases int64.

How this differs from examples/conv2d_nhwc.py, im2col_conv.py and conv3d_ndhwc.py: those are forward
(strided-gather) convolutions, output pixel p reading input p S - pad + tap with every tap live; here the
input is *upsampled*: the output is split into S^2 phase sub-GEMMs chosen by program id, each with its own
sub-kernel (taps by + S ty of a [Cin, Cout, KH, KW] ConvTranspose weight, Cout contiguous -- an N-major B,
not their K-major KRSC weight), input rows read at qy + ay - ty (a backward-sliding window), a
per-program loop length when S does not divide the kernel, and the output written phase-interleaved
(rows S apart) through per-axis strides into any unit-channel-stride tensor. im2col_conv materializes a
column matrix without tl.dot at all.

Tunables: BLOCK_M (64 / 128 output pixels of one phase), BLOCK_N (64 / 128 output channels), BLOCK_K (32 /
64 input channels a step), num_warps (4 / 8), num_stages (2 / 3 / 4: the gathered A and the B tiles of
the dot loop are cp.async-pipelined into num_stages shared-memory buffers). On sm_90 every config of the
sweep compiles at every point without spills under triton 3.6.0 and 3.9.0: 47-240 registers (192-240 for
128 x 128 on 4 warps, the 64 KiB fp32 accumulator; 47-64 for 64 x 64 on 8 warps), shared memory 16-128
KiB, exactly the num_stages (BLOCK_M + BLOCK_N) BLOCK_K 2 bytes of the pipeline's buffers.
Problem parameters (a workload point): N, C (Cin), H, W (the input), K (Cout), KH, KW (the filter), stride
(S, an int), pad and out_pad (an int or an (h, w) pair each; 0 <= out_pad < S), bias (0 / 1), dtype
(fp16 / bf16).
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _kernel(X, Wt, BIAS, OUT,
            M, C, H, W, K, OH, OW, QH, QW, pad_h, pad_w,
            stride_xn, stride_xh, stride_xw, stride_wc, stride_wh, stride_ww,
            stride_on, stride_oh, stride_ow,
            KH: tl.constexpr, KW: tl.constexpr, S: tl.constexpr, HAS_BIAS: tl.constexpr, EVEN_C: tl.constexpr,
            EVEN_N: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    PHASES: tl.constexpr = S * S
    pid = tl.program_id(0)
    tiles_n = tl.cdiv(K, BLOCK_N)
    tile_n = pid % tiles_n
    q = pid // tiles_n
    phase = q % PHASES
    tile_m = q // PHASES
    # output phase (ry, rx): oy % S == ry; its sub-kernel's first taps (by, bx) and row offsets (ay, ax)
    ry = phase // S
    rx = phase - ry * S
    ay = (ry + pad_h) // S
    by = (ry + pad_h) - ay * S
    ax = (rx + pad_w) // S
    bx = (rx + pad_w) - ax * S
    nty = (KH - by + S - 1) // S                # this phase's taps per axis (all equal when S divides KH)
    ntx = (KW - bx + S - 1) // S

    rows = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rows_ld = tl.minimum(rows, M - 1)           # rows past M: the last row (in bounds, never stored)
    # columns past Cout are masked, not clamped: a clamp hides the columns' contiguity from Triton's axis
    # analysis (2-byte B loads, no cp.async: the B tile would not be pipelined)
    col_ok = cols < K
    qx = rows_ld % QW
    t = rows_ld // QW
    qy = t % QH
    n = (t // QH).to(tl.int64)
    iy0 = qy + ay                               # tap ty reads input row iy0 - ty
    ix0 = qx + ax
    x_row = X + n * stride_xn + (iy0 * stride_xh + ix0 * stride_xw)

    ks = tl.arange(0, BLOCK_K)
    w_ptr = Wt + (by * stride_wh + bx * stride_ww) + ks[:, None] * stride_wc + cols[None, :]   # N-major B

    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    c_tiles = tl.cdiv(C, BLOCK_K)
    for i in range(0, nty * ntx * c_tiles):
        tap = i // c_tiles
        c0 = (i - tap * c_tiles) * BLOCK_K
        ty = tap // ntx
        tx = tap - ty * ntx
        a_ptrs = x_row[:, None] + (c0 - ty * stride_xh - tx * stride_xw) + ks[None, :]
        iy = iy0 - ty
        ix = ix0 - tx
        ok = (iy >= 0) & (iy < H) & (ix >= 0) & (ix < W)
        b_ptrs = w_ptr + (ty * (S * stride_wh) + tx * (S * stride_ww) + c0 * stride_wc)
        if EVEN_C:
            a = tl.load(a_ptrs, mask=ok[:, None], other=0.0)
            if EVEN_N:
                b = tl.load(b_ptrs)
            else:
                b = tl.load(b_ptrs, mask=col_ok[None, :], other=0.0)
        else:
            c_ok = ks < C - c0
            a = tl.load(a_ptrs, mask=ok[:, None] & c_ok[None, :], other=0.0)
            b = tl.load(b_ptrs, mask=c_ok[:, None] & col_ok[None, :], other=0.0)
        acc = tl.dot(a, b, acc)

    if HAS_BIAS:
        acc = acc + tl.load(BIAS + cols, mask=col_ok, other=0.0).to(tl.float32)[None, :]
    # the output rows are decoded again here, not kept live through the loop (registers)
    rows = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rows_ld = tl.minimum(rows, M - 1)
    qx = rows_ld % QW
    t = rows_ld // QW
    qy = t % QH
    n = (t // QH).to(tl.int64)
    oy = qy * S + ry
    ox = qx * S + rx
    o_row = OUT + n * stride_on + (oy * stride_oh + ox * stride_ow)
    row_ok = (rows < M) & (oy < OH) & (ox < OW)
    tl.store(o_row[:, None] + cols[None, :], acc.to(OUT.dtype.element_ty),
             mask=row_ok[:, None] & col_ok[None, :])


# ---------------------------------------------------------------- launcher
ROLE = "held-out-33"
DTYPES = ("fp16", "bf16")
TUNABLES = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "num_warps", "num_stages")
BASELINE = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "num_warps": 4, "num_stages": 3}
# the study's sweep: 2 x 2 x 2 x 2 x 3 = 48 configs. BLOCK_M 64 (one warpgroup's wgmma rows) / 128,
# BLOCK_N 64 / 128 (Cout 64 at two points: 128 half-wastes the tile; 512 at the SD-shaped one), BLOCK_K 32
# / 64 (four / eight 16-byte vectors a gathered row), 4 / 8 warps, 2-4 pipeline stages
SWEEP_AXES = {"BLOCK_M": [64, 128], "BLOCK_N": [64, 128], "BLOCK_K": [32, 64], "num_warps": [4, 8],
              "num_stages": [2, 3, 4]}

POINTS = [
    # a learned ConvTranspose2d(512, 512, k4, s2, p1) upsampler at the Stable Diffusion VAE decoder's
    # first upsampling shape (up_blocks.0: 64 x 64 x 512 -> 128 x 128 x 512, a 512 x 512 image), batch 4,
    # bf16 (SDXL's VAE runs in bf16), with bias -- SD's own VAE upsamples by nearest + 3x3 conv; the k4 s2
    # p1 deconv is the DCGAN / pix2pix decoders' learned upsampler. 2 x 2 taps a phase: M = 4 x 64 x 64
    # rows a phase, K_gemm = 2048; 137 GFLOP, x 17 MB + out 67 MB + w 8 MB: compute-bound
    {"N": 4, "C": 512, "H": 64, "W": 64, "K": 512, "KH": 4, "KW": 4, "stride": 2, "pad": 1, "out_pad": 0,
     "bias": 1, "dtype": "bf16"},
    # milesial/Pytorch-UNet (UNet(n_channels=3, n_classes=2, bilinear=False), the Carvana model, fp16 AMP
    # as its train.py runs it) at scale 0.5 (959 x 640 images), batch 4: the last Up block's up =
    # ConvTranspose2d(128, 64, k2, s2, bias) 320 x 479 -> 640 x 958, then padded to the skip and
    # torch.cat'ed with it. One tap a phase: K_gemm = 128 (2-4 steps); M = 612880 rows a phase (not a
    # multiple of any BLOCK_M); 40 GFLOP, x 157 MB + out 314 MB: memory-bound, Cout 64 (BLOCK_N 128
    # half-masked)
    {"N": 4, "C": 128, "H": 320, "W": 479, "K": 64, "KH": 2, "KW": 2, "stride": 2, "pad": 0, "out_pad": 0,
     "bias": 1, "dtype": "fp16"},
    # ERFNet's decoder (Cityscapes 2048 x 1024 inference, batch 8, fp16): the first UpsamplerBlock
    # ConvTranspose2d(128, 64, k3, s2, p1, output_padding 1, bias) 128 x 256 -> 256 x 512. S does not
    # divide 3: the phases have 4, 2, 2 and 1 taps (ragged per-program loops); 39 GFLOP, x 67 MB + out
    # 134 MB
    {"N": 8, "C": 128, "H": 128, "W": 256, "K": 64, "KH": 3, "KW": 3, "stride": 2, "pad": 1, "out_pad": 1,
     "bias": 1, "dtype": "fp16"},
]


def _torch_dtype(name: str):
    import torch
    try:
        return {"fp16": torch.float16, "bf16": torch.bfloat16}[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}") from None


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _pair(v, what: str) -> tuple[int, int]:
    """An int or an (h, w) pair of ints -> (h, w)."""
    if _is_int(v):
        return v, v
    try:
        h, w = v
    except (TypeError, ValueError):
        raise ValueError(f"{what}={v!r} must be an int or an (h, w) pair") from None
    if not (_is_int(h) and _is_int(w)):
        raise ValueError(f"{what}={v!r} must be an int or an (h, w) pair of ints")
    return h, w


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


def _check_geometry(H: int, W: int, KH: int, KW: int, stride, pad, out_pad):
    """(S, (ph, pw), (oph, opw), (OH, OW)) checked: S an int 1-4, pads >= 0, 0 <= out_pad < S, OH, OW >= 1."""
    if not _is_int(stride) or not 1 <= stride <= 4:
        raise ValueError(f"stride={stride!r} must be an int from 1 to 4 (the same on both axes)")
    ph, pw = _pair(pad, "padding")
    oph, opw = _pair(out_pad, "output_padding")
    if min(ph, pw) < 0:
        raise ValueError(f"padding={(ph, pw)} must be >= 0")
    if not (0 <= oph < stride and 0 <= opw < stride):
        raise ValueError(f"output_padding={(oph, opw)} must be >= 0 and < stride {stride}")
    OH = (H - 1) * stride - 2 * ph + KH + oph
    OW = (W - 1) * stride - 2 * pw + KW + opw
    if min(OH, OW) < 1:
        raise ValueError(f"the padding {(ph, pw)} crops the whole output ({OH} x {OW}) of the {KH}x{KW} filter "
                         f"on a {H} x {W} input")
    return stride, (ph, pw), (oph, opw), (OH, OW)


def _check_point(point) -> dict:
    """The point's fields, checked, plus S, the pads, the output size, QH, QW and M (rows a phase)."""
    for k in ("N", "C", "H", "W", "K", "KH", "KW"):
        v = point[k]
        if not _is_int(v) or v < 1:
            raise ValueError(f"{k}={v!r} must be a positive int")
    S, pad, opad, (OH, OW) = _check_geometry(point["H"], point["W"], point["KH"], point["KW"],
                                             point.get("stride", 2), point.get("pad", 0), point.get("out_pad", 0))
    bias = point.get("bias", 0)
    if bias not in (0, 1) or not isinstance(bias, (int, bool)):
        raise ValueError(f"bias={bias!r} must be 0 or 1")
    dt = point.get("dtype", "bf16")
    if dt not in DTYPES:
        raise ValueError(f"dtype {dt!r} is not one of {', '.join(DTYPES)}")
    QH, QW = -(-OH // S), -(-OW // S)
    P = dict(point)
    P.update(stride=S, pad=pad, out_pad=opad, bias=int(bias), dtype=dt, OH=OH, OW=OW, QH=QH, QW=QW,
             M=point["N"] * QH * QW)
    return P


def _phase_taps(r: int, pad: int, k: int, S: int) -> int:
    """Taps along one axis of output phase r: cdiv(k - (r + pad) % S, S)."""
    return max(0, -(-(k - (r + pad) % S) // S))


def _grid(M: int, K: int, S: int, cfg) -> tuple[int]:
    _check_cfg(cfg)
    return (triton.cdiv(M, cfg["BLOCK_M"]) * S * S * triton.cdiv(K, cfg["BLOCK_N"]),)


def _kernel_args(x, weight, bias, out, S: int, pad, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it). x [N, Cin, H, W],
    weight [Cin, Cout, KH, KW], out [N, Cout, OH, OW], all with unit channel stride (weight: unit Cout
    stride); x stands in for a missing bias (never read)."""
    Nb, C, H, W = x.shape
    _, K, KH, KW = weight.shape
    OH, OW = out.shape[2:]
    QH, QW = -(-OH // S), -(-OW // S)
    return dict(X=x, Wt=weight, BIAS=x if bias is None else bias, OUT=out,
                M=Nb * QH * QW, C=C, H=H, W=W, K=K, OH=OH, OW=OW, QH=QH, QW=QW, pad_h=pad[0], pad_w=pad[1],
                stride_xn=x.stride(0), stride_xh=x.stride(2), stride_xw=x.stride(3),
                stride_wc=weight.stride(0), stride_wh=weight.stride(2), stride_ww=weight.stride(3),
                stride_on=out.stride(0), stride_oh=out.stride(2), stride_ow=out.stride(3),
                KH=KH, KW=KW, S=S, HAS_BIAS=int(bias is not None), EVEN_C=int(C % cfg["BLOCK_K"] == 0),
                EVEN_N=int(K % cfg["BLOCK_N"] == 0),
                BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"], BLOCK_K=cfg["BLOCK_K"])


def _span(t) -> int:
    """A bound of the |offsets| (elements) inside one sample of a 4-D tensor (int32 in the kernel)."""
    return sum(t.shape[d] * abs(t.stride(d)) for d in (1, 2, 3))


def conv_transpose2d_nhwc(x, weight, bias=None, stride: int = 2, padding=0, output_padding=0, *, out=None,
                          BLOCK_M: int = 128, BLOCK_N: int = 128, BLOCK_K: int = 64, num_warps: int = 4,
                          num_stages: int = 3):
    """torch.nn.functional.conv_transpose2d(x, weight, bias, stride, padding, output_padding) with groups
    = 1, dilation 1, one stride S (an int 1-4) on both axes. x [N, Cin, H, W] and weight [Cin, Cout, KH, KW]
    fp16 / bf16 in one dtype (x with unit channel stride -- channels_last -- and the weight with unit Cout
    stride are read in place; others are copied), bias [Cout] in x's dtype or None. Returns [N, Cout, OH,
    OW] in x's dtype: a fresh channels_last tensor, or `out` (that shape and dtype, unit channel stride,
    any other strides: e.g. a channel slice of a concatenation buffer) written in place. BLOCK_M, BLOCK_N,
    BLOCK_K, num_warps, num_stages: the tunables (module doc)."""
    import torch
    if x.dim() != 4 or weight.dim() != 4 or x.shape[1] != weight.shape[0]:
        raise ValueError(f"expected x [N, Cin, H, W] and weight [Cin, Cout, KH, KW] (groups = 1); got "
                         f"{tuple(x.shape)}, {tuple(weight.shape)}")
    if x.dtype not in (torch.float16, torch.bfloat16) or weight.dtype != x.dtype:
        raise ValueError(f"x and weight must share one fp16 / bf16 dtype; got {x.dtype}, {weight.dtype}")
    Nb, C, H, W = x.shape
    _, K, KH, KW = weight.shape
    if bias is not None and (bias.dtype != x.dtype or tuple(bias.shape) != (K,)):
        raise ValueError(f"bias must be {x.dtype} [{K}]; got {bias.dtype} {tuple(bias.shape)}")
    cfg = {"BLOCK_M": BLOCK_M, "BLOCK_N": BLOCK_N, "BLOCK_K": BLOCK_K, "num_warps": num_warps,
           "num_stages": num_stages}
    _check_cfg(cfg)
    if C == 0 or K == 0 or min(H, W, KH, KW) == 0:
        raise ValueError(f"empty convolution: Cin={C}, Cout={K}, input {H}x{W}, filter {KH}x{KW}")
    S, pad, _, (OH, OW) = _check_geometry(H, W, KH, KW, stride, padding, output_padding)
    dev = x.device
    for name, t in (("weight", weight), ("bias", bias), ("out", out)):
        if t is not None and t.device != dev:
            raise ValueError(f"{name} must be on x's device {dev}; got {t.device}")
    oshape = (Nb, K, OH, OW)
    if out is None:
        out = torch.empty(oshape, dtype=x.dtype, device=dev, memory_format=torch.channels_last)
    elif tuple(out.shape) != oshape or out.dtype != x.dtype:
        raise ValueError(f"out must be {x.dtype} {list(oshape)}; got {out.dtype} {tuple(out.shape)}")
    elif out.stride(1) != 1 and K > 1:
        raise ValueError(f"out must have unit channel stride (channels_last or a channel slice of one); got "
                         f"strides {tuple(out.stride())}")
    if Nb == 0:
        return out
    if x.stride(1) != 1 and C > 1:
        x = x.contiguous(memory_format=torch.channels_last)
    if weight.stride(1) != 1 and K > 1:
        weight = weight.contiguous(memory_format=torch.channels_last)
    QH, QW = -(-OH // S), -(-OW // S)
    if max(_span(x), _span(out), _span(weight) + weight.shape[0] * abs(weight.stride(0))) >= 2**31 \
            or Nb * QH * QW >= 2**31 - 256:
        raise ValueError("a sample's offsets exceed the kernel's int32 in-sample offsets")
    _kernel[_grid(Nb * QH * QW, K, S, cfg)](**_kernel_args(x, weight, bias, out, S, pad, cfg),
                                           num_warps=num_warps, num_stages=num_stages)
    return out


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """x ~ N(0, 1) channels_last, weight [Cin, Cout, KH, KW] ~ N(0, 1) / sqrt(Cin KH KW / S^2) (the taps a
    phase sees: the output O(1)) with unit Cout stride, bias ~ N(0, 0.5^2) when the point has one; drawn on
    the CPU from a seeded torch.Generator and moved. Also the geometry: stride, padding, output_padding."""
    import torch
    P = _check_point(point)
    gen = torch.Generator(device="cpu").manual_seed(seed)
    dt = _torch_dtype(P["dtype"])
    Nb, C, H, W, K, KH, KW, S = (P[k] for k in ("N", "C", "H", "W", "K", "KH", "KW", "stride"))
    cl = torch.channels_last
    x = torch.randn((Nb, C, H, W), generator=gen).to(dt).to(device).contiguous(memory_format=cl)
    w = (torch.randn((C, K, KH, KW), generator=gen) * max(1.0, C * KH * KW / S ** 2) ** -0.5).to(dt)
    bias = (0.5 * torch.randn((K,), generator=gen)).to(dt).to(device) if P["bias"] else None
    return {"x": x, "weight": w.to(device).contiguous(memory_format=cl), "bias": bias, "stride": S,
            "padding": P["pad"], "output_padding": P["out_pad"]}


def launch(inputs, cfg):
    """out [N, Cout, OH, OW] of inputs["x"], ["weight"], ["bias"] with the geometry of inputs (and
    inputs["out"], when given, written in place)."""
    return conv_transpose2d_nhwc(inputs["x"], inputs["weight"], inputs.get("bias"), inputs["stride"],
                                 inputs["padding"], inputs["output_padding"], out=inputs.get("out"),
                                 BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"], BLOCK_K=cfg["BLOCK_K"],
                                 num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])


def reference(inputs):
    """fp32 [N, Cout, OH, OW]: F.conv_transpose2d on the upcast (fp64 on the CPU, fp32 on a GPU) x, weight
    and bias."""
    import torch
    import torch.nn.functional as F
    x = inputs["x"]
    wide = torch.float64 if x.device.type == "cpu" else torch.float32
    b = inputs.get("bias")
    return F.conv_transpose2d(x.to(wide), inputs["weight"].to(wide), None if b is None else b.to(wide),
                              inputs["stride"], inputs["padding"], inputs["output_padding"]).float()


def torch_baseline(inputs):
    """What the models run: nn.ConvTranspose2d's F.conv_transpose2d in the inputs' dtype on channels_last
    tensors (cuDNN's NHWC dgrad-style kernels on a GPU). Returns [N, Cout, OH, OW]."""
    import torch.nn.functional as F
    return F.conv_transpose2d(inputs["x"], inputs["weight"], inputs.get("bias"), inputs["stride"],
                              inputs["padding"], inputs["output_padding"])


def _phase_work(P) -> int:
    """Sum over the S^2 output phases of (that phase's real output pixels) x (its taps), one sample."""
    S, (ph, pw) = P["stride"], P["pad"]
    tot = 0
    for ry in range(S):
        rows = len(range(ry, P["OH"], S)) * _phase_taps(ry, ph, P["KH"], S)
        for rx in range(S):
            tot += rows * len(range(rx, P["OW"], S)) * _phase_taps(rx, pw, P["KW"], S)
    return tot


def bytes_moved(point) -> int:
    """x read once, the weight and bias read once, out written once, 2-byte elements. The re-reads of x
    (by its S^2 phases, taps and column tiles) are L1 / L2 traffic, not counted."""
    P = _check_point(point)
    Nb, C, H, W, K = (P[k] for k in ("N", "C", "H", "W", "K"))
    return 2 * (Nb * C * H * W + C * K * P["KH"] * P["KW"] + (K if P["bias"] else 0) + Nb * K * P["OH"] * P["OW"])


def flops(point) -> int:
    """The phase GEMMs' multiply-adds over the real output pixels: 2 N Cin Cout sum_phases pixels x taps
    (halo taps included: they are computed; no zero-stuffed taps; the bias adds not counted)."""
    P = _check_point(point)
    return 2 * P["N"] * P["C"] * P["K"] * _phase_work(P)


def grid(cfg, point) -> tuple[int]:
    """(cdiv(M, BLOCK_M) S^2 cdiv(Cout, BLOCK_N),): one program a (BLOCK_M, BLOCK_N) tile of one phase's
    [N QH QW, Cout] GEMM, the column tiles fastest, then the phases."""
    P = _check_point(point)
    return _grid(P["M"], P["K"], P["stride"], cfg)


def _phase_steps(P, cfg) -> list[int]:
    """K-loop steps of a program of each phase (ry, rx) in phase order: nty ntx cdiv(Cin, BLOCK_K)."""
    S, (ph, pw) = P["stride"], P["pad"]
    ct = triton.cdiv(P["C"], cfg["BLOCK_K"])
    return [_phase_taps(ry, ph, P["KH"], S) * _phase_taps(rx, pw, P["KW"], S) * ct
            for ry in range(S) for rx in range(S)]


def loop_iterations(cfg, point) -> int:
    """K-loop steps of the longest program: the most taps of a phase x cdiv(Cin, BLOCK_K) (every program's
    count when S divides the filter; cta_iterations gives each program's)."""
    P = _check_point(point)
    _check_cfg(cfg)
    return max(_phase_steps(P, cfg))


def cta_iterations(cfg, point) -> list[int]:
    """Each program's K-loop steps in launch order (pid = (tile_m S^2 + phase) tiles_n + tile_n): its
    phase's taps x cdiv(Cin, BLOCK_K)."""
    P = _check_point(point)
    _check_cfg(cfg)
    steps = _phase_steps(P, cfg)
    tiles_n = triton.cdiv(P["K"], cfg["BLOCK_N"])
    one_m = [s for s in steps for _ in range(tiles_n)]
    return one_m * triton.cdiv(P["M"], cfg["BLOCK_M"])


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, all on the meta device (no tensor carries
    data: the kernel loads no indices): x and out channels_last, the weight [Cin, Cout, KH, KW] with unit
    Cout stride, the bias [Cout] when the point has one."""
    import torch
    P = _check_point(point)
    _check_cfg(cfg)
    dt = _torch_dtype(P["dtype"])
    Nb, C, H, W, K, KH, KW = (P[k] for k in ("N", "C", "H", "W", "K", "KH", "KW"))
    cl = torch.channels_last
    x = torch.empty((Nb, C, H, W), dtype=dt, device="meta", memory_format=cl)
    w = torch.empty((C, K, KH, KW), dtype=dt, device="meta", memory_format=cl)
    bias = torch.empty((K,), dtype=dt, device="meta") if P["bias"] else None
    out = torch.empty((Nb, K, P["OH"], P["OW"]), dtype=dt, device="meta", memory_format=cl)
    return _kernel_args(x, w, bias, out, P["stride"], P["pad"], cfg)
