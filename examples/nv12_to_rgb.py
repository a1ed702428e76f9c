"""NV12 -> RGB colour conversion after a hardware video decoder (NVDEC), fused with a vision model's
input normalization, a bare @triton.jit kernel + its launcher:

    Y' = (Y - y_off) / y_span,  Pb = (U - 128) / c_span,  Pr = (V - 128) / c_span
         limited ("TV") range: y_off 16, y_span 219, c_span 224;  full ("PC" / JPEG) range: 0, 255, 255
    R = Y' + 2 (1 - Kr) Pr,   B = Y' + 2 (1 - Kb) Pb,   G = Y' - (2 Kb (1 - Kb) Pb + 2 Kr (1 - Kr) Pr) / Kg
         BT.601: Kr 0.299, Kb 0.114;  BT.709: Kr 0.2126, Kb 0.0722;  Kg = 1 - Kr - Kb
    rgb = clamp(255 (R, G, B), 0, 255)
    out = (rgb / 255 - mean) / std       (fp16 / bf16 / fp32: what the model's preprocessing wants)
    out = round(rgb)                     (uint8: half up, the decoders' RGB frames)

-- in fp32, the matrix folded on the host into six multiply-adds a pixel and a constant per channel
(ys Y + rv V + k_r, ys Y + gu U + gv V + k_g, ys Y + bu U + k_b), the normalization into one
multiply-add a channel ((1 / (255 std), -mean / std)); no uint8 intermediate (the float outputs keep the
conversion's fractions).
Real uses: the colour-space conversion every GPU video-decode -> DNN pipeline runs on NVDEC's NV12
surfaces -- NVIDIA DALI's video readers (fn.readers.video / fn.experimental.decoders.video: RGB frames,
then crop_mirror_normalize), DeepStream's nvvideoconvert + nvinfer preprocessing (net-scale-factor,
offsets: planar fp32 / fp16 for the TensorRT engine), torchvision's / TorchCodec's CUDA decoder (NV12 ->
RGB uint8 [N, 3, H, W]) and TensorRT preprocessing plugins in video analytics.

y: [N, H, W] uint8, unit column stride, any row pitch and frame stride; uv: [N, ceil(H / 2), ceil(W / 2),
2] uint8 (U, V interleaved: the NV12 chroma plane; unit stride between U and V, 2 between chroma columns,
any row pitch and frame stride). A decoder surface is pitch-aligned (NVDEC: 2048 bytes a row for a
1920-wide frame, 4096 for 3840) and its chroma plane starts after the coded height's luma rows (1088 for
1080p): make_inputs hands out y and uv as such views of one surface buffer a frame, the padding bytes
random (a stray read of them shows). Odd H / W: the last chroma row / column covers one luma row / column.
out: [N, 3, H, W] ("NCHW", planar: what a CNN takes) or [N, H, W, 3] ("NHWC", interleaved RGB24), fp16 /
bf16 / fp32 (normalized) or uint8 (rounded RGB), fresh and contiguous.

Chroma upsampling (the point's / call's `chroma`):
  nearest:  each UV pair shared by its 2 x 2 luma block (what NPP's NV12ToRGB and most decoder SDK
    samples do). The chroma terms (rv V + k_r, gu U + gv V + k_g, bu U + k_b) are computed once a
    chroma sample -- on the half-resolution tile -- and shared by its four pixels.
  bilinear: MPEG-2 / H.264 / HEVC's default chroma siting (chroma_sample_loc_type 0): a chroma sample
    co-sited with the even luma column, midway between its two luma rows. Luma column 2m takes sample
    m, column 2m + 1 the mean of m and m + 1; luma row 2a takes 3/4 of chroma row a + 1/4 of row a - 1,
    row 2a + 1 3/4 of row a + 1/4 of row a + 1; edge samples replicated (every weight a multiple of 1/8:
    exact in fp32).

How the bytes are laid out for the loads: a step of a program covers ROWS luma rows (ROWS / 2 row pairs,
each pair sharing one chroma row) x BLOCK_W columns from an even column col0, as two [ROWS / 2, BLOCK_W]
tiles -- the pairs' even rows, then their odd rows -- in one layout with the pairs' chroma tile. The
chroma bytes a row pair needs are exactly the BLOCK_W contiguous bytes of its UV row from byte col0 (U V U
V ...: the same byte offsets as the luma columns), so luma and chroma are both plain contiguous row loads
(up to 16-byte vectors where the pitch and W allow); the bytes are split into U and V in registers
(reshape [.., BLOCK_W / 2, 2] + split: a thread's consecutive bytes stay in the thread) and the
half-resolution chroma terms widened back to BLOCK_W columns by a join (nearest) -- no per-pixel gathers,
no duplicated addresses; the even and the odd rows use the same chroma tile. Bilinear loads, per step,
the three chroma rows a - 1, a, a + 1 of every row pair (clamped into the plane) at byte col0 and col0 + 2
(the next sample, for the odd columns: the neighbour of the tile's last sample lies in the next tile;
2-byte aligned, so narrower vectors) -- six [ROWS / 2, BLOCK_W] loads, all but about one row of them L1 /
L2 hits, fewer per row pair as ROWS grows -- and blends in fp32; row a + 1 is loaded after the even rows
are stored (fewer live registers).
The outputs are three plane-wise stores: NCHW three contiguous row stores (16-byte vectors: 8 fp16 /
4 fp32 / 16 uint8 pixels a thread), NHWC three byte- / element-strided stores (pixel stride 3) that
together fill the RGB24 rows.

The thread mapping is pinned by VEC (host-derived, not tuned): the column vector's runs are declared
VEC long (tl.max_contiguous), VEC the output's 16-byte vector for NCHW (8 fp16 / bf16, 4 fp32, 16 uint8
pixels), 4 for NHWC -- so the luma / chroma loads take the stores' layout (Triton would otherwise give
the uint8 loads 16-byte runs and convert every fp16 / fp32 channel tile through shared memory before its
store); NHWC's pixel-strided stores still take a layout of their own (a conversion a channel).

Work split: program (column block, row block, frame); a row block is ROWS x STEPS luma rows, walked
ROWS rows a step, STEPS steps whatever H (steps past H load and store nothing: every access masked off;
a runtime trip count min(STEPS, cdiv(H - r0, ROWS)) made triton 3.6's ptxas spill at 8 warps). STEPS > 1
amortizes the per-program column work (offsets, masks, the next-sample test) and gives the scheduler
fewer, longer programs.

How this differs from examples/bilinear_resize.py (interpolate, bilinear) and
examples/grid_sample_bilinear.py: those resample one multi-channel tensor at computed or loaded
positions with four-tap gathers of the same dtype; here two uint8 planes of different resolutions (luma
full, interleaved chroma at half) are combined pixel-wise by a colour matrix, the chroma upsampling a
fixed 2x (nearest or the sited 3/4-1/4 filter) done in registers from contiguous row loads, the output a
3-channel float or uint8 image in either memory format, with per-channel normalization.

Tunables: BLOCK_W (luma columns a step, 128 / 256 / 512: with ROWS and num_warps the pixels a thread,
1-32 -- the loads and stores in flight and the registers; under two a thread in a [ROWS / 2, BLOCK_W]
tile and the U / V pairs leave the thread: a layout conversion through shared memory), ROWS (luma rows a
step, 2 / 4 / 8: 1 / 2 / 4 row pairs; a chroma row loaded once per row pair, bilinear's three shifted
chroma rows re-read less per pixel as ROWS grows), STEPS (row steps a program walks, 1 / 2 / 4: the
programs' count and length), num_warps (4 / 8), num_stages (no dot, and no load feeds a later step:
nothing for the compiler to pipeline -- held at 1).
On sm_90 every config of the sweep compiles at every point without spills (registers and shared memory:
see the test file's test_sweep_fits_the_points).
Problem parameters (a workload point): N, H, W (frames and their size), pitch (the surface's row pitch in
bytes, luma and chroma), matrix ("bt601" / "bt709"), range ("limited" / "full"), chroma ("nearest" /
"bilinear"), layout ("NCHW" / "NHWC"), dtype (the output's: fp16 / bf16 / fp32 / u8), norm ("imagenet":
mean (0.485, 0.456, 0.406), std (0.229, 0.224, 0.225); "unit": x / 255; "none": uint8 output).
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _split_uv(c, RP: tl.constexpr, BLOCK_W: tl.constexpr):
    """[RP, BLOCK_W] interleaved chroma bytes (U V U V ...) -> U, V [RP, BLOCK_W // 2] in fp32."""
    u, v = tl.split(tl.reshape(c, [RP, BLOCK_W // 2, 2]))
    return u.to(tl.float32), v.to(tl.float32)


@triton.jit
def _interleave(a, b, RP: tl.constexpr, BLOCK_W: tl.constexpr):
    """Two [RP, BLOCK_W // 2] tiles -> [RP, BLOCK_W]: a at the even columns, b at the odd ones."""
    return tl.reshape(tl.join(a, b), [RP, BLOCK_W])


@triton.jit
def _chroma_row_sited(UVrow, col, uv_ok, nxt_ok, RP: tl.constexpr, BLOCK_W: tl.constexpr):
    """One chroma row of each row pair (UVrow [RP, 1] pointers) upsampled horizontally to the tile's BLOCK_W
    luma columns, co-sited: even column 2m sample m, odd column 2m + 1 the mean of m and m + 1 (m + 1 past
    the last sample: m). U, V [RP, BLOCK_W] fp32."""
    c0 = tl.load(UVrow + col[None, :], mask=uv_ok[None, :], other=128)
    c1 = tl.load(UVrow + (col + 2)[None, :], mask=nxt_ok[None, :], other=0)
    c1 = tl.where(nxt_ok[None, :], c1, c0)          # the same component of the sample (bytes 2 apart)
    u0, v0 = _split_uv(c0, RP, BLOCK_W)
    u1, v1 = _split_uv(c1, RP, BLOCK_W)
    return (_interleave(u0, (u0 + u1) * 0.5, RP, BLOCK_W),
            _interleave(v0, (v0 + v1) * 0.5, RP, BLOCK_W))


@triton.jit
def _rows_out(yb, ob, row, col, col_ok, H, stride_yh, stride_oc, stride_oh, stride_ow, ys, cr, cg, cb,
              sr, sg, sb, tr, tg, tb, NORMALIZE: tl.constexpr):
    """One luma row of each row pair (row [RP]): Y loaded, + the chroma terms cr, cg, cb [RP, BLOCK_W],
    clamped, normalized (float out) or rounded (uint8), stored as three channel tiles."""
    m = (row < H)[:, None] & col_ok[None, :]
    yv = tl.load(yb + (row * stride_yh)[:, None] + col[None, :], mask=m, other=0).to(tl.float32) * ys
    r = tl.minimum(tl.maximum(yv + cr, 0.0), 255.0)
    g = tl.minimum(tl.maximum(yv + cg, 0.0), 255.0)
    b = tl.minimum(tl.maximum(yv + cb, 0.0), 255.0)
    op = ob + (row * stride_oh)[:, None] + (col * stride_ow)[None, :]
    if NORMALIZE:
        tl.store(op, (r * sr + tr).to(ob.dtype.element_ty), mask=m)
        tl.store(op + stride_oc, (g * sg + tg).to(ob.dtype.element_ty), mask=m)
        tl.store(op + 2 * stride_oc, (b * sb + tb).to(ob.dtype.element_ty), mask=m)
    else:                                           # uint8: round half up (the values are >= 0)
        tl.store(op, (r + 0.5).to(ob.dtype.element_ty), mask=m)
        tl.store(op + stride_oc, (g + 0.5).to(ob.dtype.element_ty), mask=m)
        tl.store(op + 2 * stride_oc, (b + 0.5).to(ob.dtype.element_ty), mask=m)


@triton.jit
def _kernel(Y, UV, O, H, W, Hc, Wc,
            stride_yn, stride_yh, stride_un, stride_uh,
            stride_on, stride_oc, stride_oh, stride_ow,
            ys, rv, gu, gv, bu, kr, kg, kb, sr, sg, sb, tr, tg, tb,
            BILINEAR: tl.constexpr, NORMALIZE: tl.constexpr,
            BLOCK_W: tl.constexpr, ROWS: tl.constexpr, STEPS: tl.constexpr, VEC: tl.constexpr):
    RP: tl.constexpr = ROWS // 2
    pid_w = tl.program_id(0)
    pid_h = tl.program_id(1)
    n = tl.program_id(2).to(tl.int64)
    col0 = pid_w * BLOCK_W                          # even: a chroma pair's first byte
    # luma column = byte offset in the chroma row; runs of VEC a thread (the output's vector)
    col = tl.max_contiguous(col0 + tl.arange(0, BLOCK_W), VEC)
    col_ok = col < W
    uv_ok = col < 2 * Wc
    rp = tl.arange(0, RP)
    yb = Y + n * stride_yn
    ub = UV + n * stride_un
    ob = O + n * stride_on
    if BILINEAR:
        # the next sample (byte col + 2) exists: chroma column m + 1 < Wc (else m is replicated)
        nxt_ok = col + 2 < 2 * Wc
    r0 = pid_h * (ROWS * STEPS)
    for s in range(STEPS):                          # steps past H: every load and store masked off
        a = r0 // 2 + s * RP + rp                   # the step's chroma rows [RP]: luma rows 2a, 2a + 1
        ac = tl.minimum(a, Hc - 1)                  # a pair wholly past H reads the last row (never stored)
        if BILINEAR:
            # row 2a: 3/4 chroma row a + 1/4 row a - 1; row 2a + 1: 3/4 row a + 1/4 row a + 1 (clamped)
            uc, vc = _chroma_row_sited(ub + (ac * stride_uh)[:, None], col, uv_ok, nxt_ok, RP, BLOCK_W)
            ap = tl.maximum(ac - 1, 0)
            up, vp = _chroma_row_sited(ub + (ap * stride_uh)[:, None], col, uv_ok, nxt_ok, RP, BLOCK_W)
            u = 0.75 * uc + 0.25 * up
            v = 0.75 * vc + 0.25 * vp
            _rows_out(yb, ob, 2 * a, col, col_ok, H, stride_yh, stride_oc, stride_oh, stride_ow, ys,
                      rv * v + kr, gu * u + gv * v + kg, bu * u + kb, sr, sg, sb, tr, tg, tb, NORMALIZE)
            an = tl.minimum(ac + 1, Hc - 1)
            un, vn = _chroma_row_sited(ub + (an * stride_uh)[:, None], col, uv_ok, nxt_ok, RP, BLOCK_W)
            u = 0.75 * uc + 0.25 * un
            v = 0.75 * vc + 0.25 * vn
            _rows_out(yb, ob, 2 * a + 1, col, col_ok, H, stride_yh, stride_oc, stride_oh, stride_ow, ys,
                      rv * v + kr, gu * u + gv * v + kg, bu * u + kb, sr, sg, sb, tr, tg, tb, NORMALIZE)
        else:
            c = tl.load(ub + (ac * stride_uh)[:, None] + col[None, :], mask=uv_ok[None, :], other=128)
            uh, vh = _split_uv(c, RP, BLOCK_W)
            # the chroma terms once a sample, widened to both its luma columns, shared by both rows
            tr_h = rv * vh + kr
            tg_h = gu * uh + gv * vh + kg
            tb_h = bu * uh + kb
            cr = _interleave(tr_h, tr_h, RP, BLOCK_W)
            cg = _interleave(tg_h, tg_h, RP, BLOCK_W)
            cb = _interleave(tb_h, tb_h, RP, BLOCK_W)
            _rows_out(yb, ob, 2 * a, col, col_ok, H, stride_yh, stride_oc, stride_oh, stride_ow, ys,
                      cr, cg, cb, sr, sg, sb, tr, tg, tb, NORMALIZE)
            _rows_out(yb, ob, 2 * a + 1, col, col_ok, H, stride_yh, stride_oc, stride_oh, stride_ow, ys,
                      cr, cg, cb, sr, sg, sb, tr, tg, tb, NORMALIZE)


ROLE = "held-out-31"
DTYPES = ("fp16", "bf16", "fp32", "u8")
MATRICES = ("bt601", "bt709")
RANGES = ("limited", "full")
CHROMAS = ("nearest", "bilinear")
LAYOUTS = ("NCHW", "NHWC")
NORMS = ("imagenet", "unit", "none")
TUNABLES = ("BLOCK_W", "ROWS", "STEPS", "num_warps", "num_stages")
BASELINE = {"BLOCK_W": 256, "ROWS": 4, "STEPS": 1, "num_warps": 4, "num_stages": 1}
# the study's sweep: 3 x 3 x 3 x 2 = 54 configs (1-32 pixels a thread; 1-4 row pairs a step; 1-4 steps
# a program; no dot and no load feeding a later step: num_stages 1)
SWEEP_AXES = {"BLOCK_W": [128, 256, 512], "ROWS": [2, 4, 8], "STEPS": [1, 2, 4], "num_warps": [4, 8],
              "num_stages": [1]}

KR_KB = {"bt601": (0.299, 0.114), "bt709": (0.2126, 0.0722)}
MEAN_STD = {"imagenet": ((0.485, 0.456, 0.406), (0.229, 0.224, 0.225)),
            "unit": ((0.0, 0.0, 0.0), (1.0, 1.0, 1.0))}
SURFACE_ROW_ALIGN = 16          # NVDEC's coded height: 1080 -> 1088 luma rows before the chroma plane
POINTS = [
    # Video action recognition over decoded 1080p clips (DALI's video reader -> a SlowFast / VideoMAE-style
    # model, or a TensorRT video-analytics engine): 32 H.264 frames 1920 x 1080, BT.709 limited range
    # (HD broadcast / camera default), nearest chroma (NPP's NV12ToRGB), NVDEC surfaces pitch 2048 with
    # 1088 coded rows; ImageNet-normalized planar fp16 [32, 3, 1080, 1920]. y 66 MB + uv 33 MB read,
    # out 398 MB written (~0.17 ms at 3 TB/s)
    {"N": 32, "H": 1080, "W": 1920, "pitch": 2048, "matrix": "bt709", "range": "limited", "chroma": "nearest",
     "layout": "NCHW", "dtype": "fp16", "norm": "imagenet"},
    # 4K frames to interleaved RGB24 (a 4K video super-resolution / enhancement model's uint8 input, the
    # RGB frames DALI / TorchCodec hand out): 8 HEVC frames 3840 x 2160, BT.709 limited, the standard's
    # chroma siting (bilinear, type 0), pitch 4096; [8, 2160, 3840, 3] uint8. y 66 MB + uv 33 MB read,
    # out 199 MB written (~0.1 ms)
    {"N": 8, "H": 2160, "W": 3840, "pitch": 4096, "matrix": "bt709", "range": "limited", "chroma": "bilinear",
     "layout": "NHWC", "dtype": "u8", "norm": "none"},
    # A crowd of 720p camera streams (DeepStream: 64 IP-camera RTSP streams batched by nvstreammux into a
    # YOLO-style detector's TensorRT engine at 1280 x 720): IP cameras' full-range ("yuvj420p") BT.601,
    # bilinear chroma, pitch 1536; x / 255 planar fp32 [64, 3, 720, 1280]. y 59 MB + uv 29 MB read,
    # out 708 MB written (~0.27 ms)
    {"N": 64, "H": 720, "W": 1280, "pitch": 1536, "matrix": "bt601", "range": "full", "chroma": "bilinear",
     "layout": "NCHW", "dtype": "fp32", "norm": "unit"},
]


def _torch_dtype(name: str):
    import torch
    try:
        return {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32, "u8": torch.uint8}[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}") from None


def _elem_bytes(name: str) -> int:
    if name not in DTYPES:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}")
    return {"fp16": 2, "bf16": 2, "fp32": 4, "u8": 1}[name]


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _align(v: int, a: int) -> int:
    return -(-v // a) * a


def _choice(name: str, v, allowed) -> None:
    if v not in allowed:
        raise ValueError(f"{name} {v!r} is not one of {', '.join(allowed)}")


def _check_point(point) -> dict:
    """The point's fields, checked (defaults: pitch W rounded up to 256, bt709, limited, nearest, NCHW,
    fp32, imagenet -- "none" for u8)."""
    for k in ("N", "H", "W"):
        v = point[k]
        if not _is_int(v) or v < 1:
            raise ValueError(f"{k}={v!r} must be a positive int")
    W = point["W"]
    row_bytes = 2 * ((W + 1) // 2)                  # luma W, chroma ceil(W / 2) pairs
    pitch = point.get("pitch", _align(row_bytes, 256))
    if not _is_int(pitch) or pitch < row_bytes:
        raise ValueError(f"pitch={pitch!r} must be an int >= {row_bytes} (W={W} luma bytes, "
                         f"{row_bytes // 2} chroma pairs a row)")
    P = dict(point, pitch=pitch)
    for key, allowed, default in (("matrix", MATRICES, "bt709"), ("range", RANGES, "limited"),
                                  ("chroma", CHROMAS, "nearest"), ("layout", LAYOUTS, "NCHW"),
                                  ("dtype", DTYPES, "fp32")):
        P[key] = point.get(key, default)
        _choice(key, P[key], allowed)
    P["norm"] = point.get("norm", "none" if P["dtype"] == "u8" else "imagenet")
    _choice("norm", P["norm"], NORMS)
    if (P["dtype"] == "u8") != (P["norm"] == "none"):
        raise ValueError(f"norm {P['norm']!r} with dtype {P['dtype']!r}: uint8 output takes norm 'none' "
                         f"(rounded RGB), a float output 'imagenet' or 'unit'")
    return P


def _check_cfg(cfg) -> None:
    bw = cfg["BLOCK_W"]
    if not _is_int(bw) or bw < 16 or bw > 2048 or bw & (bw - 1):
        raise ValueError(f"BLOCK_W={bw!r} must be a power of two from 16 to 2048")
    rows = cfg["ROWS"]
    if not _is_int(rows) or rows < 2 or rows > 32 or rows & (rows - 1):
        raise ValueError(f"ROWS={rows!r} must be a power of two from 2 to 32 (whole row pairs)")
    if bw * rows > 16384:
        raise ValueError(f"BLOCK_W x ROWS = {bw * rows} > 16384 (a step's tile lives in registers)")
    st = cfg["STEPS"]
    if not _is_int(st) or st < 1 or st > 64:
        raise ValueError(f"STEPS={st!r} must be an int from 1 to 64")
    w = cfg["num_warps"]
    if not _is_int(w) or w not in (1, 2, 4, 8, 16):
        raise ValueError(f"num_warps={w!r} must be a power of two from 1 to 16")
    ns = cfg.get("num_stages", 1)
    if not _is_int(ns) or ns < 1:
        raise ValueError(f"num_stages={ns!r} must be a positive int")


def _grid(N: int, H: int, W: int, cfg) -> tuple[int, int, int]:
    _check_cfg(cfg)
    return (triton.cdiv(W, cfg["BLOCK_W"]), triton.cdiv(H, cfg["ROWS"] * cfg["STEPS"]), N)


def _coefficients(matrix: str, color_range: str, mean, std) -> dict:
    """The kernel's folded constants: ys (luma scale), rv, gu, gv, bu (chroma), kr, kg, kb (each
    channel's constant: -ys y_off - 128 x its chroma coefficients), sr, sg, sb / tr, tg, tb (the
    normalization: 1 / (255 std), -mean / std)."""
    Kr, Kb = KR_KB[matrix]
    Kg = 1.0 - Kr - Kb
    if color_range == "limited":
        ys, cs, yo = 255.0 / 219.0, 255.0 / 224.0, 16.0
    else:
        ys, cs, yo = 1.0, 1.0, 0.0
    rv = cs * 2.0 * (1.0 - Kr)
    bu = cs * 2.0 * (1.0 - Kb)
    gu = -cs * 2.0 * Kb * (1.0 - Kb) / Kg
    gv = -cs * 2.0 * Kr * (1.0 - Kr) / Kg
    y0 = -ys * yo
    co = dict(ys=ys, rv=rv, gu=gu, gv=gv, bu=bu, kr=y0 - 128.0 * rv, kg=y0 - 128.0 * (gu + gv),
              kb=y0 - 128.0 * bu)
    for ch, m, s in zip("rgb", mean, std):
        co["s" + ch] = 1.0 / (255.0 * s)
        co["t" + ch] = -m / s
    return co


def _out_strides(N: int, H: int, W: int, layout: str) -> tuple[int, int, int, int]:
    """(frame, channel, row, pixel) strides of the fresh output."""
    if layout == "NCHW":
        return 3 * H * W, H * W, W, 1
    return 3 * H * W, 1, 3 * W, 3


def _vec(out_bytes: int, layout: str) -> int:
    """The pixels a thread holds in a run (the kernel's VEC): NCHW one 16-byte store a channel (8 fp16 /
    bf16, 4 fp32, 16 uint8); NHWC 4 (pixel-strided stores, whatever the run: 4-byte luma / chroma loads)."""
    return 16 // out_bytes if layout == "NCHW" else 4


def _kernel_args(y, uv, out, matrix: str, color_range: str, chroma: str, layout: str, mean, std, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    N, H, W = y.shape
    _, Hc, Wc, _ = uv.shape
    son, soc, soh, sow = _out_strides(N, H, W, layout)
    co = _coefficients(matrix, color_range, mean, std)
    return dict(Y=y, UV=uv, O=out, H=H, W=W, Hc=Hc, Wc=Wc,
                stride_yn=y.stride(0), stride_yh=y.stride(1), stride_un=uv.stride(0), stride_uh=uv.stride(1),
                stride_on=son, stride_oc=soc, stride_oh=soh, stride_ow=sow, **co,
                BILINEAR=int(chroma == "bilinear"), NORMALIZE=int(out.dtype.is_floating_point),
                BLOCK_W=cfg["BLOCK_W"], ROWS=cfg["ROWS"], STEPS=cfg["STEPS"], VEC=_vec(out.dtype.itemsize, layout))


def nv12_to_rgb(y, uv, matrix: str = "bt709", color_range: str = "limited", chroma: str = "nearest",
                layout: str = "NCHW", dtype=None, mean=(0.0, 0.0, 0.0), std=(1.0, 1.0, 1.0), *,
                BLOCK_W: int = 256, ROWS: int = 4, STEPS: int = 1, num_warps: int = 4, num_stages: int = 1):
    """NV12 frames -> RGB: y [N, H, W] uint8 (unit column stride, any row pitch), uv [N, ceil(H / 2),
    ceil(W / 2), 2] uint8 (U, V interleaved; strides (any, any, 2, 1)), colour matrix "bt601" / "bt709",
    color_range "limited" / "full", chroma "nearest" / "bilinear" (type-0 siting), layout "NCHW" ([N, 3, H,
    W]) / "NHWC" ([N, H, W, 3]), dtype torch.float16 / bfloat16 / float32 (default: (rgb / 255 - mean) /
    std) or torch.uint8 (rounded RGB; mean / std left at their defaults). BLOCK_W, ROWS, STEPS, num_warps,
    num_stages: the tunables (module doc)."""
    import torch
    _choice("matrix", matrix, MATRICES)
    _choice("color_range", color_range, RANGES)
    _choice("chroma", chroma, CHROMAS)
    _choice("layout", layout, LAYOUTS)
    dtype = torch.float32 if dtype is None else dtype
    if dtype not in (torch.float16, torch.bfloat16, torch.float32, torch.uint8):
        raise ValueError(f"dtype must be torch.float16 / bfloat16 / float32 / uint8; got {dtype}")
    mean, std = tuple(float(m) for m in mean), tuple(float(s) for s in std)
    if len(mean) != 3 or len(std) != 3:
        raise ValueError(f"mean and std need 3 values (R, G, B); got {len(mean)} and {len(std)}")
    if not all(s > 0 for s in std):
        raise ValueError(f"std={std} must be positive")
    if dtype == torch.uint8 and (mean != (0.0, 0.0, 0.0) or std != (1.0, 1.0, 1.0)):
        raise ValueError(f"uint8 output is rounded RGB, not normalized: mean={mean}, std={std} need a float dtype")
    cfg = {"BLOCK_W": BLOCK_W, "ROWS": ROWS, "STEPS": STEPS, "num_warps": num_warps, "num_stages": num_stages}
    _check_cfg(cfg)
    if y.dim() != 3 or y.dtype != torch.uint8:
        raise ValueError(f"expected y [N, H, W] uint8; got {tuple(y.shape)} {y.dtype}")
    N, H, W = y.shape
    Hc, Wc = (H + 1) // 2, (W + 1) // 2
    if uv.dim() != 4 or uv.dtype != torch.uint8 or tuple(uv.shape) != (N, Hc, Wc, 2):
        raise ValueError(f"expected uv [N, ceil(H / 2), ceil(W / 2), 2] = {(N, Hc, Wc, 2)} uint8; "
                         f"got {tuple(uv.shape)} {uv.dtype}")
    if uv.device != y.device:
        raise ValueError(f"uv must be on y's device {y.device}; got {uv.device}")
    shape = (N, 3, H, W) if layout == "NCHW" else (N, H, W, 3)
    out = torch.empty(shape, dtype=dtype, device=y.device)
    if out.numel() == 0:
        return out
    if W > 1 and y.stride(2) != 1:
        raise ValueError(f"y must have unit column stride; got strides {tuple(y.stride())}")
    if uv.stride(3) != 1 or (Wc > 1 and uv.stride(2) != 2):
        raise ValueError(f"uv must be interleaved NV12 (strides (.., .., 2, 1)); got {tuple(uv.stride())}")
    if min(y.stride()[:2] + uv.stride()[:2]) < 0:
        raise ValueError("y and uv need non-negative strides")
    yspan = (H - 1) * y.stride(1) + W
    uspan = (Hc - 1) * uv.stride(1) + 2 * Wc
    if max(yspan, uspan, 3 * H * W) >= 2**31:
        raise ValueError(f"one frame of y ({yspan} bytes spanned), uv ({uspan}) or out ({3 * H * W}) exceeds "
                         f"the kernel's int32 offsets")
    gx, gy, gz = _grid(N, H, W, cfg)
    if gy > 65535 or gz > 65535:
        raise ValueError(f"the grid's {gy} row blocks or N={N} frames exceed 65535")
    _kernel[(gx, gy, gz)](**_kernel_args(y, uv, out, matrix, color_range, chroma, layout, mean, std, cfg),
                          num_warps=num_warps, num_stages=num_stages)
    return out


def _surface(point, seed: int):
    """One decoder surface a frame, as NVDEC lays it out (pitch-aligned rows; the coded height's luma rows,
    then the interleaved chroma plane), random bytes everywhere (padding included), drawn on the CPU from
    a seeded generator: (buffer [N frame_bytes], frame_bytes, chroma plane offset)."""
    import torch
    P = _check_point(point)
    N, H, pitch = P["N"], P["H"], P["pitch"]
    Hs = _align(H, SURFACE_ROW_ALIGN)
    frame = pitch * (Hs + Hs // 2)
    gen = torch.Generator(device="cpu").manual_seed(seed)
    buf = torch.randint(0, 256, (N * frame,), generator=gen, dtype=torch.uint8)
    return buf, frame, pitch * Hs


def _planes(buf, P, frame: int, uv_off: int):
    """y [N, H, W] and uv [N, Hc, Wc, 2] as views of the surfaces' buffer."""
    import torch
    N, H, W, pitch = P["N"], P["H"], P["W"], P["pitch"]
    y = torch.as_strided(buf, (N, H, W), (frame, pitch, 1), 0)
    uv = torch.as_strided(buf, (N, (H + 1) // 2, (W + 1) // 2, 2), (frame, pitch, 2, 1), uv_off)
    return y, uv


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """y and uv: views of N decoder surfaces of random bytes (pitch P["pitch"], the chroma plane after the
    coded height's luma rows, H rounded up to 16), drawn on the CPU from a seeded torch.Generator, then
    moved; and the point's conversion (matrix, range, chroma, layout, dtype, mean / std)."""
    P = _check_point(point)
    buf, frame, uv_off = _surface(P, seed)
    y, uv = _planes(buf.to(device), P, frame, uv_off)
    mean, std = MEAN_STD.get(P["norm"], MEAN_STD["unit"])
    return {"y": y, "uv": uv, "matrix": P["matrix"], "color_range": P["range"], "chroma": P["chroma"],
            "layout": P["layout"], "dtype": P["dtype"], "mean": mean, "std": std}


def launch(inputs, cfg):
    return nv12_to_rgb(inputs["y"], inputs["uv"], inputs["matrix"], inputs["color_range"], inputs["chroma"],
                       inputs["layout"], _torch_dtype(inputs["dtype"]), inputs["mean"], inputs["std"],
                       BLOCK_W=cfg["BLOCK_W"], ROWS=cfg["ROWS"], STEPS=cfg["STEPS"], num_warps=cfg["num_warps"],
                       num_stages=cfg["num_stages"])


def _upsample(c, H: int, W: int, chroma: str):
    """Chroma planes c [N, Hc, Wc] (float) -> [N, H, W]: nearest (each sample its 2 x 2 block) or type-0
    sited bilinear (module doc), by index arithmetic on the full-resolution grid."""
    import torch
    Hc, Wc = c.shape[1:]
    i = torch.arange(H, device=c.device)
    j = torch.arange(W, device=c.device)
    if chroma == "nearest":
        return c[:, i // 2][:, :, j // 2]
    m = j // 2
    mn = torch.clamp(m + (j % 2), max=Wc - 1)                 # odd columns: the next sample too
    h = 0.5 * (c[:, :, m] + c[:, :, mn])                      # [N, Hc, W]
    a = i // 2
    nb = torch.where(i % 2 == 0, torch.clamp(a - 1, min=0), torch.clamp(a + 1, max=Hc - 1))
    return 0.75 * h[:, a] + 0.25 * h[:, nb]


def _rgb(inputs, wide):
    """The clamped RGB in 0..255 before rounding / normalization, [N, 3, H, W] in `wide`: the standard's
    YCbCr -> RGB (the inverse of the RGB -> Y'PbPr matrix built from Kr, Kb) on the upsampled chroma."""
    import torch
    y, uv = inputs["y"], inputs["uv"]
    N, H, W = y.shape
    Kr, Kb = KR_KB[inputs["matrix"]]
    Kg = 1.0 - Kr - Kb
    fwd = torch.tensor([[Kr, Kg, Kb],
                        [-Kr / (2 * (1 - Kb)), -Kg / (2 * (1 - Kb)), (1 - Kb) / (2 * (1 - Kb))],
                        [(1 - Kr) / (2 * (1 - Kr)), -Kg / (2 * (1 - Kr)), -Kb / (2 * (1 - Kr))]],
                       dtype=torch.float64)
    inv = torch.linalg.inv(fwd).to(wide).to(y.device)
    yo, yspan, cspan = (16.0, 219.0, 224.0) if inputs["color_range"] == "limited" else (0.0, 255.0, 255.0)
    yy = (y.to(wide) - yo) / yspan
    pb = (_upsample(uv[..., 0].to(wide), H, W, inputs["chroma"]) - 128.0) / cspan
    pr = (_upsample(uv[..., 1].to(wide), H, W, inputs["chroma"]) - 128.0) / cspan
    ypp = torch.stack((yy, pb, pr), dim=1)                     # [N, 3, H, W]
    rgb = torch.einsum("ck,nkhw->nchw", inv, ypp) * 255.0
    return rgb.clamp(0.0, 255.0)


def _finish(rgb, inputs):
    """Normalize (float) or round (u8) [N, 3, H, W] RGB and lay it out as the point's layout."""
    import torch
    if inputs["dtype"] == "u8":
        out = torch.floor(rgb + 0.5)
    else:
        m = torch.tensor(inputs["mean"], dtype=rgb.dtype, device=rgb.device).view(1, 3, 1, 1)
        s = torch.tensor(inputs["std"], dtype=rgb.dtype, device=rgb.device).view(1, 3, 1, 1)
        out = (rgb / 255.0 - m) / s
    return out if inputs["layout"] == "NCHW" else out.permute(0, 2, 3, 1)


def reference(inputs):
    """The conversion in fp64 on the CPU (fp32 on a GPU) from the standard's matrix: [N, 3, H, W] or
    [N, H, W, 3] fp32 (uint8 outputs: the rounded values)."""
    import torch
    wide = torch.float64 if inputs["y"].device.type == "cpu" else torch.float32
    return _finish(_rgb(inputs, wide), inputs).float().contiguous()


def torch_baseline(inputs):
    """What a pipeline without the fused kernel runs: the same steps as torch ops in fp32 (chroma planes
    upsampled by indexing, the matrix as an einsum, clamp, normalize or round), cast to the output dtype."""
    import torch
    out = _finish(_rgb(inputs, torch.float32), inputs)
    return out.to(_torch_dtype(inputs["dtype"])).contiguous()


def bytes_moved(point) -> int:
    """y read once (W of each pitched row), uv read once (bilinear's re-reads of neighbouring rows and
    samples are L1 / L2 hits), out written once (3 channels)."""
    P = _check_point(point)
    N, H, W = P["N"], P["H"], P["W"]
    return N * (H * W + ((H + 1) // 2) * 2 * ((W + 1) // 2) + 3 * H * W * _elem_bytes(P["dtype"]))


def flops(point) -> int:
    """A pixel: the matrix's six multiply-adds (12), the normalization's three (6; float outputs), and
    bilinear's chroma filter (two samples, three weights a plane: 10)."""
    P = _check_point(point)
    per = 12 + (6 if P["dtype"] != "u8" else 0) + (10 if P["chroma"] == "bilinear" else 0)
    return per * P["N"] * P["H"] * P["W"]


def grid(cfg, point) -> tuple[int, int, int]:
    """(column blocks, row blocks of ROWS x STEPS rows, frames): the launch grid."""
    P = _check_point(point)
    return _grid(P["N"], P["H"], P["W"], cfg)


def loop_iterations(cfg, point) -> int:
    """The row steps every program walks: STEPS (in the last row block those past H are masked off)."""
    _check_point(point)
    _check_cfg(cfg)
    return cfg["STEPS"]


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, every tensor on the meta device (no data:
    the kernel loads through no indices or coordinates -- its addresses are affine in the program ids):
    y and uv as views of the pitched surfaces (make_inputs' strides), out fresh in the point's layout."""
    import torch
    P = _check_point(point)
    _check_cfg(cfg)
    N, H, W, pitch = P["N"], P["H"], P["W"], P["pitch"]
    Hs = _align(H, SURFACE_ROW_ALIGN)
    frame = pitch * (Hs + Hs // 2)
    buf = torch.empty((N * frame,), dtype=torch.uint8, device="meta")
    y, uv = _planes(buf, P, frame, pitch * Hs)
    shape = (N, 3, H, W) if P["layout"] == "NCHW" else (N, H, W, 3)
    out = torch.empty(shape, dtype=_torch_dtype(P["dtype"]), device="meta")
    mean, std = MEAN_STD.get(P["norm"], MEAN_STD["unit"])
    return _kernel_args(y, uv, out, P["matrix"], P["range"], P["chroma"], P["layout"], mean, std, cfg)
