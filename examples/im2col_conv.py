"""im2col for a 2-D convolution lowered to a GEMM (torch.nn.functional.unfold's numbers in the
token-major layout a GEMM's A operand wants), a bare @triton.jit kernel + its launcher.

    x [N, C, H, W]  ->  col [N OH OW, C KH KW]  (row-major: one output pixel a row, K contiguous)
    col[(n * OH + oh) * OW + ow, (c * KH + kh) * KW + kw] = x[n, c, ih, iw]   (0 where (ih, iw) is off the image)
    ih = oh * sh - ph + kh * dh,  iw = ow * sw - pw + kw * dw
    OH = (H + 2 ph - dh (KH - 1) - 1) // sh + 1,  OW likewise

i.e. F.unfold(x, (KH, KW), dilation, padding, stride) [N, K, L] transposed to [N, L, K] and
flattened to [N L, K] (L = OH OW, K = C KH KW): the column matrix that a conv = col @ weight.view(Cout,
K).T GEMM consumes, its K the GEMM's reduction dimension, contiguous.

x: fp16 / bf16 / fp32, read in place with any strides (NCHW, channels_last, a channel slice);
col: in x's dtype (im2col is a copy: every element is one of x's or zero), a fresh contiguous
[N L, K] tensor, or `out` given by the caller: [N L, K] with unit column stride and any row pitch
(the K columns of a GEMM operand whose rows are padded to an aligned width, written in place).

Work split: the N L output pixels (col's rows) in tiles of BLOCK_P, program_id(0) the pixel tile
(fastest in launch order: the CTAs that run together read the same channels of neighbouring
pixels, whose halos overlap in L2); K in chunks of K_STEPS x BLOCK_K columns, program_id(1) the
chunk. A CTA decodes its BLOCK_P pixels once -- n, oh, ow by two runtime divisions, then each
pixel's int64 base offset in x (n, and the window's top-left corner oh sh - ph, ow sw - pw) -- and
walks its chunk BLOCK_K columns a step (a runtime-bounded loop, so the last chunk of a K that
K_STEPS x BLOCK_K does not divide runs only its real steps). One step is a [BLOCK_P, BLOCK_K] tile:
the BLOCK_K columns are decoded to (c, kh, kw) by divisions by the constexprs KH KW and KW
(multiply-shifts), each column's in-image offset c sxc + kh dh sxh + kw dw sxw (x's strides
sxc, sxh, sxw) added to each pixel's base:
a gather (within a column the pixels are sw apart along a row of x, jumping at the ends of
output rows and images; along a row of the tile the columns walk KW taps dw apart, then the next
kernel row, then the next channel) -- then one store of the tile, BLOCK_P runs of BLOCK_K
contiguous elements (16-byte vectors when col's row pitch is a multiple of 16 elements, what
Triton's integer specialization can tell; the stem's K = 147 gets scalar stores, and a thread's
elements then lie in different col rows, each row's bases held in registers). No index analysis
can see the gather's pixels contiguous (output rows wrap), so its layout is the compiler's
choice: triton 3.6 gives the load a pixel-major layout (a warp's lanes along 32 pixels: one
contiguous run of x's row for a stride-1 window) and passes the tile through shared memory to the
store's K-major layout; triton 3.9 loads in the store's layout. Larger K_STEPS: fewer, longer
CTAs, the pixel decode amortized over more steps, and each CTA's reads walk consecutive channels
of the same pixels (its window rows stay in L1 / L2 between steps).

Masks: the padding halo (0 <= ih < H, 0 <= iw < W, zero fill) only when there is padding
(HAS_PAD: without it every tap of a valid output pixel is on the image). Pixels past N L and
columns past K are clamped to the last real one for the load (their addresses stay in bounds,
so the load needs no mask of its own) and masked on the store -- only when BLOCK_P does not
divide N L (EVEN_P) or BLOCK_K does not divide K (EVEN_K), constexprs the launcher sets.
Offsets: pixel bases and col's row offsets int64, the in-image column offsets int32.

Tunables: BLOCK_P (pixels a tile: col rows a CTA, the gather's run along a row of x), BLOCK_K
(columns a step: the store's contiguous run, 16-128 B), K_STEPS (steps a CTA: the grid's K
chunks), num_warps; num_stages (no dot: the loop's loads are not pipelined, held at 1). The
study's sweep keeps a step at <= 16 elements a thread: at 32 the stem's unaligned tile takes all
255 registers under triton 3.9 (each thread's 32 elements in 32 rows, every row's int64 bases
held across the loop) and spills on sm_120.
Problem parameters (a workload point): N, C, H, W, KH, KW, stride, pad, dilation (an int or an
(h, w) pair each), dtype.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _kernel(X, OUT, NL, L, OW, K, H, W,
            stride_xn, stride_xc, stride_xh, stride_xw, stride_om,
            stride_h, stride_w, pad_h, pad_w, dil_h, dil_w,
            KH: tl.constexpr, KW: tl.constexpr, HAS_PAD: tl.constexpr, EVEN_P: tl.constexpr,
            EVEN_K: tl.constexpr, BLOCK_P: tl.constexpr, BLOCK_K: tl.constexpr, K_STEPS: tl.constexpr):
    KHW: tl.constexpr = KH * KW
    pid_p = tl.program_id(0)
    pid_k = tl.program_id(1)

    # the tile's pixels (col rows), decoded once: image, output row, output column
    p = pid_p * BLOCK_P + tl.arange(0, BLOCK_P)
    if EVEN_P:
        pl = p
    else:
        pl = tl.minimum(p, NL - 1)                       # rows past N L: load the last pixel's taps
    n = pl // L
    r = pl - n * L
    oh = r // OW
    ow = r - oh * OW
    ih0 = oh * stride_h - pad_h                          # the window's top-left corner
    iw0 = ow * stride_w - pad_w
    x_row = n.to(tl.int64) * stride_xn + ih0.to(tl.int64) * stride_xh + iw0.to(tl.int64) * stride_xw
    o_row = p.to(tl.int64) * stride_om
    x_rows = X + x_row[:, None]                          # [BLOCK_P, 1]
    o_rows = OUT + o_row[:, None]
    if HAS_PAD:
        ih0c = ih0[:, None]
        iw0c = iw0[:, None]
    if not EVEN_P:
        p_ok = (p < NL)[:, None]

    # this CTA's chunk of K: K_STEPS steps of BLOCK_K columns (fewer in a ragged last chunk)
    k_lo = pid_k * (K_STEPS * BLOCK_K)
    k_hi = tl.minimum(k_lo + K_STEPS * BLOCK_K, K)
    rk = tl.arange(0, BLOCK_K)
    for k0 in range(k_lo, k_hi, BLOCK_K):
        k = k0 + rk
        if EVEN_K:
            kl = k
        else:
            kl = tl.minimum(k, K - 1)                    # columns past K: load the last column's tap
        c = kl // KHW
        t = kl - c * KHW
        kh = t // KW
        kw = t - kh * KW
        dh = kh * dil_h
        dw = kw * dil_w
        x_col = c * stride_xc + dh * stride_xh + dw * stride_xw          # int32, inside one image
        ptrs = x_rows + x_col[None, :]
        if HAS_PAD:
            ih = ih0c + dh[None, :]
            iw = iw0c + dw[None, :]
            on = (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
            v = tl.load(ptrs, mask=on, other=0.0)
        else:
            v = tl.load(ptrs)
        optrs = o_rows + k[None, :]
        if EVEN_P and EVEN_K:
            tl.store(optrs, v)
        elif EVEN_P:
            tl.store(optrs, v, mask=(k < K)[None, :])
        elif EVEN_K:
            tl.store(optrs, v, mask=p_ok)
        else:
            tl.store(optrs, v, mask=p_ok & (k < K)[None, :])


# ---------------------------------------------------------------- launcher
ROLE = "held-out-24"
DTYPES = ("bf16", "fp16", "fp32")
TUNABLES = ("BLOCK_P", "BLOCK_K", "K_STEPS", "num_warps", "num_stages")
BASELINE = {"BLOCK_P": 64, "BLOCK_K": 32, "K_STEPS": 4, "num_warps": 4, "num_stages": 1}
# the study's sweep: 3 x 3 x 4 x 2 = 72 configs (tiles of 128-2048 elements, 0.5-16 a thread; K chunks
# of 8-2048 columns: 1-576 a col row, the stem's 147 columns one chunk from 256 up)
SWEEP_AXES = {"BLOCK_P": [16, 32, 64], "BLOCK_K": [8, 16, 32], "K_STEPS": [1, 4, 16, 64], "num_warps": [4, 8],
              "num_stages": [1]}

# Convolutions of real models lowered to a GEMM, each 0.33-0.69 GB of traffic (col written once, x
# read once; 7-14x the H200's 50 MB L2), HBM-bound at roughly 80-180 us on an H200. They differ in
# the window (7x7 stride 2 / 3x3 stride 2 / 3x3 dilated 4), C (3 / 256 / 512: K 147 ragged and
# unaligned, 2304, 4608), the output plane (112x112, 14x14, 65x65) and the dtype.
POINTS = [
    # ResNet-50's stem conv (7x7, stride 2, pad 3, C 3) at 224x224, batch 128, bf16 (AMP training):
    # 128 x 112 x 112 = 1.6 M rows of K = 147 (odd: col rows 294 B apart, no 16-B alignment):
    # col 472 MB written, x 39 MB read
    {"N": 128, "C": 3, "H": 224, "W": 224, "KH": 7, "KW": 7, "stride": 2, "pad": 3, "dilation": 1, "dtype": "bf16"},
    # ResNet-50 v1.5's stage-3 downsample (the first bottleneck's 3x3, stride 2, pad 1) on the 28x28
    # stage-2 output, C 256, batch 256, fp16: 50176 rows of K = 2304 (14x14 output planes): col 231 MB
    # written, x 103 MB read
    {"N": 256, "C": 256, "H": 28, "W": 28, "KH": 3, "KW": 3, "stride": 2, "pad": 1, "dilation": 1, "dtype": "fp16"},
    # DeepLabV3 (ResNet-101, output stride 8) on 513x513 crops: stage 4's 3x3 conv, dilation 4, pad
    # 4, C 512 on 65x65, batch 8, fp32: 33800 rows of K = 4608 (a pixel tile straddles images):
    # col 623 MB written, x 69 MB read
    {"N": 8, "C": 512, "H": 65, "W": 65, "KH": 3, "KW": 3, "stride": 1, "pad": 4, "dilation": 4, "dtype": "fp32"},
]


def _torch_dtype(name: str):
    import torch
    try:
        return {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}") from None


def _elem_bytes(name: str) -> int:
    if name not in DTYPES:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}")
    return 4 if name == "fp32" else 2


def _pair(name: str, v, lo: int) -> tuple[int, int]:
    """An int or an (h, w) pair of ints >= lo, as (h, w)."""
    t = tuple(v) if isinstance(v, (tuple, list)) else (v, v)
    if len(t) != 2 or not all(isinstance(e, int) and not isinstance(e, bool) and e >= lo for e in t):
        raise ValueError(f"{name}={v!r} must be an int >= {lo} or a pair of them")
    return t


def _geometry(H: int, W: int, kernel_size, stride, padding, dilation) -> tuple:
    """((KH, KW), (sh, sw), (ph, pw), (dh, dw), OH, OW), checked: an output of at least 1x1."""
    (KH, KW), (sh, sw) = _pair("kernel_size", kernel_size, 1), _pair("stride", stride, 1)
    (ph, pw), (dh, dw) = _pair("padding", padding, 0), _pair("dilation", dilation, 1)
    OH = (H + 2 * ph - dh * (KH - 1) - 1) // sh + 1
    OW = (W + 2 * pw - dw * (KW - 1) - 1) // sw + 1
    if OH < 1 or OW < 1:
        raise ValueError(f"a {KH}x{KW} window (dilation {dh}x{dw}, padding {ph}x{pw}) does not fit "
                         f"the {H}x{W} input: output {OH}x{OW}")
    return (KH, KW), (sh, sw), (ph, pw), (dh, dw), OH, OW


def _check_point(point) -> tuple:
    """The point's geometry (see _geometry), every field checked."""
    for k in ("N", "C", "H", "W", "KH", "KW"):
        v = point[k]
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise ValueError(f"{k}={v!r} must be a positive int")
    _elem_bytes(point.get("dtype", "fp32"))
    return _geometry(point["H"], point["W"], (point["KH"], point["KW"]), point.get("stride", 1),
                     point.get("pad", 0), point.get("dilation", 1))


def _check_cfg(cfg) -> None:
    for k in ("BLOCK_P", "BLOCK_K", "num_warps"):
        v = cfg[k]
        if not isinstance(v, int) or isinstance(v, bool) or v < 1 or v & (v - 1):
            raise ValueError(f"{k}={v!r} must be a power of two")
    if cfg["BLOCK_P"] < 2 or cfg["BLOCK_K"] < 2:
        raise ValueError(f"BLOCK_P={cfg['BLOCK_P']} and BLOCK_K={cfg['BLOCK_K']} must be at least 2")
    if not isinstance(cfg["K_STEPS"], int) or isinstance(cfg["K_STEPS"], bool) or cfg["K_STEPS"] < 1:
        raise ValueError(f"K_STEPS={cfg['K_STEPS']!r} must be a positive int")


def _sizes(point) -> tuple[int, int]:
    """(N L: col's rows, K: its columns)."""
    _, _, _, _, OH, OW = _check_point(point)
    return point["N"] * OH * OW, point["C"] * point["KH"] * point["KW"]


def _grid(NL: int, K: int, cfg) -> tuple[int, int]:
    _check_cfg(cfg)
    return (triton.cdiv(NL, cfg["BLOCK_P"]), triton.cdiv(K, cfg["K_STEPS"] * cfg["BLOCK_K"]))


def _kernel_args(x, out, geo, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    (KH, KW), (sh, sw), (ph, pw), (dh, dw), OH, OW = geo
    Nb, C, H, W = x.shape
    NL, K = Nb * OH * OW, C * KH * KW
    return dict(X=x, OUT=out, NL=NL, L=OH * OW, OW=OW, K=K, H=H, W=W,
                stride_xn=x.stride(0), stride_xc=x.stride(1), stride_xh=x.stride(2), stride_xw=x.stride(3),
                stride_om=out.stride(0), stride_h=sh, stride_w=sw, pad_h=ph, pad_w=pw, dil_h=dh, dil_w=dw,
                KH=KH, KW=KW, HAS_PAD=int(ph > 0 or pw > 0), EVEN_P=int(NL % cfg["BLOCK_P"] == 0),
                EVEN_K=int(K % cfg["BLOCK_K"] == 0), BLOCK_P=cfg["BLOCK_P"], BLOCK_K=cfg["BLOCK_K"],
                K_STEPS=cfg["K_STEPS"])


def im2col(x, kernel_size, stride=1, padding=0, dilation=1, *, out=None, BLOCK_P: int = 64, BLOCK_K: int = 32,
           K_STEPS: int = 4, num_warps: int = 4, num_stages: int = 1):
    """x [N, C, H, W] (fp16 / bf16 / fp32, any strides) -> col [N OH OW, C KH KW] in x's dtype, the
    convolution's input windows as F.unfold takes them (zero where a window hangs over the padding),
    one output pixel a row, K = (c, kh, kw) contiguous. kernel_size, stride, padding, dilation: an int
    or an (h, w) pair each. out: optional [N OH OW, C KH KW] tensor of x's dtype and device with unit
    column stride (any row pitch), written in place and returned."""
    import torch
    if x.dim() != 4:
        raise ValueError(f"expected x [N, C, H, W]; got {tuple(x.shape)}")
    if x.dtype not in (torch.float16, torch.bfloat16, torch.float32):
        raise ValueError(f"x must be fp16 / bf16 / fp32; got {x.dtype}")
    cfg = {"BLOCK_P": BLOCK_P, "BLOCK_K": BLOCK_K, "K_STEPS": K_STEPS, "num_warps": num_warps}
    _check_cfg(cfg)
    Nb, C, H, W = x.shape
    geo = _geometry(H, W, kernel_size, stride, padding, dilation)
    (KH, KW), _, _, _, OH, OW = geo
    NL, K = Nb * OH * OW, C * KH * KW
    if out is None:
        out = torch.empty((NL, K), dtype=x.dtype, device=x.device)
    else:
        if tuple(out.shape) != (NL, K):
            raise ValueError(f"out must be [{NL}, {K}]; got {tuple(out.shape)}")
        if out.dtype != x.dtype or out.device != x.device:
            raise ValueError(f"out must be {x.dtype} on {x.device}; got {out.dtype} on {out.device}")
        if NL > 1 and K > 0 and (out.stride(1) != 1 or out.stride(0) < K):
            raise ValueError(f"out must have unit column stride and a row pitch >= K={K}; got strides {out.stride()}")
    if out.numel() == 0:
        return out
    if NL + BLOCK_P >= 2**31 or K + K_STEPS * BLOCK_K >= 2**31:
        raise ValueError(f"col [{NL}, {K}] exceeds the kernel's int32 row / column numbers")
    span = sum((d - 1) * s for d, s in zip(x.shape[1:], x.stride()[1:])) + 1
    if span >= 2**31:
        raise ValueError(f"one image of x spans {span} elements, past the kernel's int32 in-image offsets")
    _kernel[_grid(NL, K, cfg)](**_kernel_args(x, out, geo, cfg), num_warps=num_warps, num_stages=num_stages)
    return out


def _geo_args(point) -> dict:
    return {"kernel_size": (point["KH"], point["KW"]), "stride": point.get("stride", 1),
            "padding": point.get("pad", 0), "dilation": point.get("dilation", 1)}


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """x: activation-like values (N(0, 1), a per-channel offset N(0, 0.5^2)) in the point's dtype,
    contiguous NCHW, drawn on the CPU from a seeded torch.Generator and moved; the window geometry."""
    import torch
    _check_point(point)
    gen = torch.Generator(device="cpu").manual_seed(seed)
    Nb, C, H, W = (point[k] for k in ("N", "C", "H", "W"))
    x = torch.randn((Nb, C, H, W), generator=gen) + 0.5 * torch.randn((1, C, 1, 1), generator=gen)
    return {"x": x.to(_torch_dtype(point.get("dtype", "fp32"))).to(device), **_geo_args(point)}


def launch(inputs, cfg):
    """im2col of inputs["x"] with the point's geometry, into inputs["out"] when the caller placed a
    (pitched) output buffer there, else into a fresh contiguous col."""
    return im2col(inputs["x"], inputs["kernel_size"], inputs["stride"], inputs["padding"], inputs["dilation"],
                  out=inputs.get("out"), BLOCK_P=cfg["BLOCK_P"], BLOCK_K=cfg["BLOCK_K"], K_STEPS=cfg["K_STEPS"],
                  num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])


def _unfold_rows(y, inputs):
    import torch.nn.functional as F
    u = F.unfold(y, inputs["kernel_size"], dilation=inputs["dilation"], padding=inputs["padding"],
                 stride=inputs["stride"])                                       # [N, K, L]
    return u.transpose(1, 2).reshape(-1, u.shape[1])                            # [N L, K], a copy


def reference(inputs):
    """fp32: F.unfold of the upcast x, [N, K, L] transposed and flattened to [N L, K]."""
    return _unfold_rows(inputs["x"].float(), inputs)


def torch_baseline(inputs):
    """What eager torch runs: F.unfold in x's dtype (its im2col kernel, [N, K, L]) and the transpose
    made contiguous (a second pass over the column matrix)."""
    return _unfold_rows(inputs["x"], inputs)


def bytes_moved(point) -> int:
    """col written once, x read once (every element of x some window reads; the windows' overlaps --
    KH KW / (sh sw) reads an element for a 3x3 stride 1 -- come from L1 / L2)."""
    NL, K = _sizes(point)
    e = _elem_bytes(point.get("dtype", "fp32"))
    return (NL * K + point["N"] * point["C"] * point["H"] * point["W"]) * e


def flops(point) -> int:
    """A copy: no arithmetic on the data."""
    _check_point(point)
    return 0


def grid(cfg, point) -> tuple[int, int]:
    """(pixel tiles, K chunks): the launch grid, pixel tiles fastest."""
    NL, K = _sizes(point)
    return _grid(NL, K, cfg)


def loop_iterations(cfg, point) -> int:
    """BLOCK_K steps a CTA: K_STEPS, or all of K's steps when one chunk holds K (a ragged last chunk
    runs fewer)."""
    _, K = _sizes(point)
    _check_cfg(cfg)
    return min(cfg["K_STEPS"], triton.cdiv(K, cfg["BLOCK_K"]))


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory): x
    contiguous NCHW in the point's dtype, col [N L, K] contiguous."""
    import torch
    geo = _check_point(point)
    _check_cfg(cfg)
    NL, K = _sizes(point)
    dt = _torch_dtype(point.get("dtype", "fp32"))
    x = torch.empty((point["N"], point["C"], point["H"], point["W"]), dtype=dt, device="meta")
    out = torch.empty((NL, K), dtype=dt, device="meta")
    return _kernel_args(x, out, geo, cfg)
