"""torch.nn.functional.grid_sample forward, mode="bilinear", padding_mode="zeros", align_corners False or
True, a bare @triton.jit kernel + its launcher:

    out[n, c, i, j] = sum over the four taps (y, x) of  w(y, x) input[n, c, y, x]   (taps off the image: 0)
    (gx, gy) = grid[n, i, j]  (normalized, -1 .. 1 spans the image),
    ix = (gx + 1) / 2 (W - 1)            align_corners=True   (-1 / +1: the corner pixels' centres)
    ix = ((gx + 1) W - 1) / 2            align_corners=False  (-1 / +1: the corner pixels' outer edges)
    x0 = floor(ix), x1 = x0 + 1, wx1 = ix - x0, wx0 = x1 - ix    (iy, y0, y1, wy0, wy1 likewise from gy, H)
    w(y_a, x_b) = wy_a wx_b, and a tap contributes only when 0 <= x_b < W and 0 <= y_a < H

-- torch's grid_sampler_2d arithmetic (its unnormalization, floor and weights, in that order; fp32 here).
Real uses: optical-flow backward warping (the flow_warp of BasicSR / MMagic's BasicVSR++ and of PWC-Net /
ARFlow: identity + flow, align_corners=True), BEV lifting (Simple-BEV's unprojection of camera features
onto a voxel grid: every voxel centre projected into every camera, most of them out of view -> zeros),
tri-plane sampling in 3-D-aware generators / NeRFs (EG3D's sample_from_planes: the ray samples projected
onto each feature plane, align_corners=False) and spatial transformer networks.

input: [N, C, H, W] fp16 / bf16 / fp32 in torch's logical shape, any strides (read in place): the layout the
kernel tiles for is channels_last (NHWC) where the channel stride is the smaller of the channel and column
strides (C > 1; torch's suggest_memory_format), else NCHW. grid: [N, Ho, Wo, 2] fp32 or the input's dtype
(what torch itself requires), any strides; the coordinates are fp32 in the kernel either way. A bf16
coordinate near the edge of a 100-pixel-wide map is good to 0.4 pixel only, so make_inputs draws the grid
fp32, as the systems run it (autocast runs grid_sample in fp32: it is on its fp32 list). out: [N, C, Ho,
Wo] in the input's dtype, a fresh tensor in the input's memory format; fp32 blend, rounded once.

The sampling positions are data: each output pixel's four taps are gathers whose addresses come from a
load. One program owns BLOCK_P consecutive output pixels of one image (flattened over (i, j): no lanes
wasted on a ragged row end; EG3D's [N, 1, M] ray-sample grids and Simple-BEV's [N, Z Y, X] voxel grids
are one long row) and a group of channels: it loads its pixels' (gx, gy) once (two 4-byte loads a pixel;
past Ho Wo the `other` value puts the pixel off the image), unnormalizes them, and keeps per pixel the four
taps' in-image offsets (int32; the image base int64), the four weights and the four in-image predicates --
then walks its channels TILE_C at a time: per step four masked gathers of TILE_C BLOCK_P elements (a tap
off the image is never read: zeros padding costs no traffic), the blend in fp32 (a multiply and three
FMAs an element), one [BLOCK_P, TILE_C] store. The thread mapping is the layout's (CHANNELS_LAST):
  NCHW: one pixel a lane (BLOCK_P / (32 num_warps) pixels a thread), each thread all TILE_C channels of
    its pixels. A channel plane is its own [BLOCK_P] gather -- for a smooth field the taps of a warp's 32
    neighbouring pixels are neighbouring (or equal) columns of one or two rows, so they share sectors --
    and the TILE_C planes' gathers (4 TILE_C loads a pixel in flight) all issue before the step's one
    store (which could alias them), each placed into the tile's column k by a select the compiler
    resolves (a thread holds all TILE_C columns). The store's runs of pixels are hidden from Triton's
    coalescing (tl.multiple_of(p, 1)): vector stores would regroup several consecutive pixels onto a
    thread, and with them the gathers (a warp's loads then spread over 8x the columns) and 8x the
    per-pixel state. (Written as one 2-d [BLOCK_P, TILE_C] gather instead, the thread order of a load
    whose addresses are all data is a tie that triton 3.6 and 3.9 break on opposite axes.)
  NHWC: channels across the lanes -- each tap a TILE_C-wide contiguous run of one pixel's channels (16-B
    vectors when C is a multiple of 8 / 4 elements; TILE_C 16 bf16: one 32-B sector a tap, 2 lanes a pixel),
    the store likewise; the four taps' [BLOCK_P, TILE_C] gathers issue together.
The unnormalized coordinate is clamped to [-2, W + 1] before the floor (NaN to -2): every tap of a far-off,
infinite or NaN position stays off the image (zeros), and the float -> int conversion never overflows.
A program whose pixels all have every tap off the image (a BEV voxel row behind the camera, ray samples
past the tri-plane box) skips the gathers and stores zeros (`live`, a CTA-wide max of the predicates).

Work split: program (pb C_SPLIT + g, n) does pixel block pb, channel group g of image n; a group is a
whole number of TILE_C tiles (cdiv(cdiv(C, TILE_C), C_SPLIT) of them, the last group's possibly fewer; the
launcher drops groups that would be empty), so every tile starts at a multiple of TILE_C (the NHWC vectors
stay aligned). C_SPLIT 2 trades the per-pixel work's reuse over the channels (each group reloads the
pixels' grid entries -- from L2: the groups of one pixel block are neighbouring programs -- and redoes
their coordinates) for twice the programs and half the channel loop.

How this differs from examples/bilinear_resize.py (interpolate, bilinear): there the source coordinates
are an affine function of the output pixel (computed, never loaded), clamped at the border (no zeros
padding, no masked gathers), one 2-d tile for both layouts whose thread mapping Triton's coalescing
picks, all channels in one program. Here they are loaded from the grid (per-pixel data: flow fields,
camera projections, ray samples), taps off the image are masked out (zeros), the thread mapping is the
kernel's per layout (NCHW: per-plane gathers, one pixel a lane), whole dead blocks skip their gathers,
and the channels can be split over programs. From
examples/deform_attn.py (multi-scale deformable attention): there a query's samples over levels and points
are reduced with attention weights into one head-dim vector; here every output pixel is one sample, no
reduction over samples. From examples/roi_align.py: bins averaging a box's grid of samples; here one
sample a pixel at a loaded position.

Tunables: BLOCK_P (output pixels a program, 64 / 128 / 256: with num_warps the pixels a thread, 1/4 to 2 --
the gathers in flight and the per-pixel state -- 4 offsets, 4 weights, 4 predicates -- held over the
channel loop; 64 pixels on 8 warps replicate the NCHW gathers 4x, the bad corner), BLOCK_C (channels a step,
2 / 4 / 8 / 16; the kernel's TILE_C = min(BLOCK_C, next_pow2(C)): NCHW the planes gathered a step, 8-64
gathers a pixel in flight; NHWC the run a tap reads, 4-32 bytes of 16-bit data), C_SPLIT (1 / 2 channel
groups a pixel block, above), num_warps (4 / 8), num_stages (gathers and no dot: nothing for the
compiler to pipeline -- the cubin is the same -- held at 1).
On sm_90 every config of the sweep compiles at every point without spills (registers and shared memory:
see the test file's test_sweep_fits_the_points); BLOCK_C 32 with 256-512 pixels on 4 warps spills.
Problem parameters (a workload point): N, C, H, W (the input), Ho, Wo (the grid / output), align_corners
(0 / 1), layout (NCHW / NHWC), dtype (fp16 / bf16 / fp32), field (how make_inputs draws the grid: "flow"
identity + a smooth flow field, "bev" a voxel grid projected into N cameras ringed around the ego vehicle,
"rays" EG3D-style ray samples projected onto N / 3 tri-planes).
"""

from __future__ import annotations

import functools
import math

import triton
import triton.language as tl


@triton.jit
def _taps(G, n, p, p_ok, H, W, Wo, stride_gn, stride_gh, stride_gw, stride_gc, stride_xh, stride_xw,
          ALIGN: tl.constexpr, GRID_FLAT: tl.constexpr):
    """Per output pixel p (a [BLOCK_P] vector): the four taps' in-image offsets (int32), weights (fp32) and
    in-image predicates, in the order (y0, x0), (y0, x1), (y1, x0), (y1, x1)."""
    if GRID_FLAT:                           # the grid's (i, j) is one flattened index
        g_off = p * stride_gw
    else:
        pi = p // Wo
        g_off = pi * stride_gh + (p - pi * Wo) * stride_gw
    gp = G + n.to(tl.int64) * stride_gn + g_off
    gx = tl.load(gp, mask=p_ok, other=-4.0).to(tl.float32)          # past Ho Wo: far off the image
    gy = tl.load(gp + stride_gc, mask=p_ok, other=-4.0).to(tl.float32)
    Wf = W.to(tl.float32)
    Hf = H.to(tl.float32)
    if ALIGN:
        ix = (gx + 1.0) * 0.5 * (Wf - 1.0)
        iy = (gy + 1.0) * 0.5 * (Hf - 1.0)
    else:
        ix = ((gx + 1.0) * Wf - 1.0) * 0.5
        iy = ((gy + 1.0) * Hf - 1.0) * 0.5
    # far off (or NaN) -> just off the image: the same zeros, and the int conversion cannot overflow
    ix = tl.minimum(tl.where(ix > -2.0, ix, -2.0), Wf + 1.0)
    iy = tl.minimum(tl.where(iy > -2.0, iy, -2.0), Hf + 1.0)
    x0f = tl.floor(ix)
    y0f = tl.floor(iy)
    wx1 = ix - x0f
    wx0 = (x0f + 1.0) - ix
    wy1 = iy - y0f
    wy0 = (y0f + 1.0) - iy
    x0 = x0f.to(tl.int32)
    y0 = y0f.to(tl.int32)
    vx0 = (x0 >= 0) & (x0 < W)
    vx1 = (x0 >= -1) & (x0 < W - 1)
    vy0 = (y0 >= 0) & (y0 < H)
    vy1 = (y0 >= -1) & (y0 < H - 1)
    r0 = y0 * stride_xh
    k0 = x0 * stride_xw
    o00 = r0 + k0
    o01 = o00 + stride_xw
    o10 = o00 + stride_xh
    o11 = o10 + stride_xw
    return (o00, o01, o10, o11, wy0 * wx0, wy0 * wx1, wy1 * wx0, wy1 * wx1,
            vy0 & vx0, vy0 & vx1, vy1 & vx0, vy1 & vx1)


@triton.jit
def _kernel(X, G, O, C, H, W, HWo, Wo, n_tiles, iters,
            stride_xn, stride_xc, stride_xh, stride_xw,
            stride_gn, stride_gh, stride_gw, stride_gc,
            stride_on, stride_oc, stride_op,
            ALIGN: tl.constexpr, CHANNELS_LAST: tl.constexpr, GRID_FLAT: tl.constexpr, EVEN_C: tl.constexpr,
            BLOCK_P: tl.constexpr, TILE_C: tl.constexpr, C_SPLIT: tl.constexpr):
    pid = tl.program_id(0)
    n = tl.program_id(1)
    pb = pid // C_SPLIT
    grp = pid - pb * C_SPLIT
    p = pb * BLOCK_P + tl.arange(0, BLOCK_P)                        # output pixels, flattened (i, j)
    p_ok = p < HWo
    o00, o01, o10, o11, w00, w01, w10, w11, m00, m01, m10, m11 = _taps(
        G, n, p, p_ok, H, W, Wo, stride_gn, stride_gh, stride_gw, stride_gc, stride_xh, stride_xw,
        ALIGN, GRID_FLAT)
    live = tl.max((m00 | m01 | m10 | m11).to(tl.int32), axis=0)     # any tap of the block on the image
    xb = X + n.to(tl.int64) * stride_xn
    ob = O + n.to(tl.int64) * stride_on
    t0 = grp * iters                                                # this group's first channel tile
    my_iters = tl.minimum(iters, n_tiles - t0)
    cc = tl.arange(0, TILE_C)
    if CHANNELS_LAST:                       # [BLOCK_P, TILE_C]: channels across the lanes
        q00, q01, q10, q11 = o00[:, None], o01[:, None], o10[:, None], o11[:, None]
        a00, a01, a10, a11 = w00[:, None], w01[:, None], w10[:, None], w11[:, None]
        k00, k01, k10, k11 = m00[:, None], m01[:, None], m10[:, None], m11[:, None]
        op = ob + (p * stride_op)[:, None]
        sm = p_ok[:, None]
        for it in range(my_iters):
            c = (t0 + it) * TILE_C + cc
            xc = xb + (c * stride_xc)[None, :]
            oc = op + (c * stride_oc)[None, :]
            if EVEN_C:
                smc = sm
            else:
                cm = (c < C)[None, :]
                smc = sm & cm
            if live > 0:
                if EVEN_C:
                    v00 = tl.load(xc + q00, mask=k00, other=0.0)
                    v01 = tl.load(xc + q01, mask=k01, other=0.0)
                    v10 = tl.load(xc + q10, mask=k10, other=0.0)
                    v11 = tl.load(xc + q11, mask=k11, other=0.0)
                else:
                    v00 = tl.load(xc + q00, mask=k00 & cm, other=0.0)
                    v01 = tl.load(xc + q01, mask=k01 & cm, other=0.0)
                    v10 = tl.load(xc + q10, mask=k10 & cm, other=0.0)
                    v11 = tl.load(xc + q11, mask=k11 & cm, other=0.0)
                acc = v00.to(tl.float32) * a00
                acc += v01.to(tl.float32) * a01
                acc += v10.to(tl.float32) * a10
                acc += v11.to(tl.float32) * a11
                tl.store(oc, acc.to(O.dtype.element_ty), mask=smc)
            else:
                tl.store(oc, tl.zeros([BLOCK_P, TILE_C], dtype=O.dtype.element_ty), mask=smc)
    else:                                   # pixels across the lanes, a thread's pixels' TILE_C channels
        # each channel plane is its own [BLOCK_P] gather (one pixel a lane: a warp's taps are ~32
        # neighbouring columns of a row); the TILE_C planes' gathers all issue before the tile's one store
        # (which they could alias), their results placed into the [BLOCK_P, TILE_C] tile's column k (a
        # compile-time select: every thread holds all TILE_C columns of its pixels). The store's runs of
        # pixels are hidden (divisibility 1), so no vector stores regroup the pixels of a thread.
        op = ob + (tl.multiple_of(p, 1) * stride_op)[:, None]
        sm = p_ok[:, None]
        for it in range(my_iters):
            c0 = (t0 + it) * TILE_C
            c = c0 + cc
            oc = op + (c * stride_oc)[None, :]
            if EVEN_C:
                smc = sm
            else:
                smc = sm & (c < C)[None, :]
            if live > 0:
                tile = tl.zeros([BLOCK_P, TILE_C], dtype=tl.float32)
                for k in tl.static_range(TILE_C):
                    if EVEN_C:
                        xc = xb + (c0 + k) * stride_xc
                    else:                   # planes past C re-read plane C - 1 (L1 hits; never stored)
                        xc = xb + tl.minimum(c0 + k, C - 1) * stride_xc
                    v00 = tl.load(xc + o00, mask=m00, other=0.0)
                    v01 = tl.load(xc + o01, mask=m01, other=0.0)
                    v10 = tl.load(xc + o10, mask=m10, other=0.0)
                    v11 = tl.load(xc + o11, mask=m11, other=0.0)
                    acc = v00.to(tl.float32) * w00
                    acc += v01.to(tl.float32) * w01
                    acc += v10.to(tl.float32) * w10
                    acc += v11.to(tl.float32) * w11
                    tile = tl.where((cc == k)[None, :], acc[:, None], tile)
                tl.store(oc, tile.to(O.dtype.element_ty), mask=smc)
            else:
                tl.store(oc, tl.zeros([BLOCK_P, TILE_C], dtype=O.dtype.element_ty), mask=smc)


# ---------------------------------------------------------------- launcher
ROLE = "held-out-30"
DTYPES = ("bf16", "fp16", "fp32")
LAYOUTS = ("NCHW", "NHWC")
FIELDS = ("flow", "bev", "rays")
TUNABLES = ("BLOCK_P", "BLOCK_C", "C_SPLIT", "num_warps", "num_stages")
BASELINE = {"BLOCK_P": 128, "BLOCK_C": 8, "C_SPLIT": 1, "num_warps": 4, "num_stages": 1}
# the study's sweep: 3 x 4 x 2 x 2 = 48 configs (NCHW 1/4 to 2 pixels a thread x 2-16 channel planes;
# NHWC runs of 2-16 channels a tap; the channels in one or two groups; no dot: num_stages 1)
SWEEP_AXES = {"BLOCK_P": [64, 128, 256], "BLOCK_C": [2, 4, 8, 16], "C_SPLIT": [1, 2], "num_warps": [4, 8],
              "num_stages": [1]}

BEV_Y = 8                       # Simple-BEV's vertical voxel bins (a BEV grid's rows are Z x BEV_Y)
RAY_SAMPLES = 48                # EG3D's depth_resolution: coarse samples a ray
POINTS = [
    # BasicVSR++ / RealBasicVSR (BasicSR / MMagic flow_warp: identity + optical flow, align_corners=True,
    # zeros) 4x video super-resolution of 540p clips, fp16 inference, 2 clips: the 64-channel propagated
    # features [2, 64, 540, 960] NCHW warped by the flow to the neighbouring frame. x 133 MB read, grid
    # (fp32) 8.3 MB, out 133 MB written
    {"N": 2, "C": 64, "H": 540, "W": 960, "Ho": 540, "Wo": 960, "align_corners": 1, "layout": "NCHW",
     "dtype": "fp16", "field": "flow"},
    # Simple-BEV's lifting (unproject_image_to_mem: grid_sample, align_corners=False, zeros) of 6 cameras'
    # 128-channel stride-8 features of 448x800 images ([6, 128, 56, 100]) onto the 200 x 8 x 200 voxel
    # grid (Z x Y rows, X columns: [6, 1600, 200] sample positions; most voxels out of a camera's view),
    # channels_last bf16. x 8.6 MB read (L2-resident), grid 15.4 MB, out [6, 128, 1600, 200] 492 MB
    {"N": 6, "C": 128, "H": 56, "W": 100, "Ho": 1600, "Wo": 200, "align_corners": 0, "layout": "NHWC",
     "dtype": "bf16", "field": "bev"},
    # EG3D's sample_from_planes (grid_sample, align_corners=False, zeros) at training resolution: 4 scenes
    # x 3 tri-planes [12, 32, 256, 256] fp32, each sampled at the coarse pass's 64 x 64 rays x 48 depth
    # samples (the [12, 1, 196608] grid of the ray samples projected onto the plane). x 101 MB read,
    # grid 18.9 MB, out [12, 32, 1, 196608] 302 MB
    {"N": 12, "C": 32, "H": 256, "W": 256, "Ho": 1, "Wo": 196608, "align_corners": 0, "layout": "NCHW",
     "dtype": "fp32", "field": "rays"},
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


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _pow2(v: int) -> int:
    return 1 << max(0, (v - 1).bit_length())


def _check_point(point) -> dict:
    """The point's fields, checked (defaults: align_corners 0, NCHW, fp32, flow)."""
    for k in ("N", "C", "H", "W", "Ho", "Wo"):
        v = point[k]
        if not _is_int(v) or v < 1:
            raise ValueError(f"{k}={v!r} must be a positive int")
    al = point.get("align_corners", 0)
    if al not in (0, 1) or not isinstance(al, (int, bool)):
        raise ValueError(f"align_corners={al!r} must be 0 or 1")
    lay = point.get("layout", "NCHW")
    if lay not in LAYOUTS:
        raise ValueError(f"layout {lay!r} is not one of {', '.join(LAYOUTS)}")
    dt = point.get("dtype", "fp32")
    _elem_bytes(dt)
    field = point.get("field", "flow")
    if field not in FIELDS:
        raise ValueError(f"field {field!r} is not one of {', '.join(FIELDS)}")
    P = dict(point, align_corners=int(al), layout=lay, dtype=dt, field=field)
    if field == "bev" and P["Ho"] % BEV_Y:
        raise ValueError(f"field 'bev' needs Ho={P['Ho']} a multiple of {BEV_Y} (Z x {BEV_Y} voxel rows)")
    if field == "rays" and (P["N"] % 3 or P["Ho"] != 1 or P["Wo"] % RAY_SAMPLES):
        raise ValueError(f"field 'rays' needs N={P['N']} a multiple of 3 (tri-planes), Ho={P['Ho']} == 1 and "
                         f"Wo={P['Wo']} a multiple of {RAY_SAMPLES} (samples a ray)")
    return P


def _check_cfg(cfg) -> None:
    bp = cfg["BLOCK_P"]
    if not _is_int(bp) or bp < 16 or bp > 1024 or bp & (bp - 1):
        raise ValueError(f"BLOCK_P={bp!r} must be a power of two from 16 to 1024")
    bc = cfg["BLOCK_C"]
    if not _is_int(bc) or bc < 1 or bc > 128 or bc & (bc - 1):
        raise ValueError(f"BLOCK_C={bc!r} must be a power of two from 1 to 128")
    cs = cfg["C_SPLIT"]
    if not _is_int(cs) or cs < 1 or cs > 64:
        raise ValueError(f"C_SPLIT={cs!r} must be an int from 1 to 64")
    w = cfg["num_warps"]
    if not _is_int(w) or w not in (1, 2, 4, 8, 16):
        raise ValueError(f"num_warps={w!r} must be a power of two from 1 to 16")
    st = cfg.get("num_stages", 1)
    if not _is_int(st) or st < 1:
        raise ValueError(f"num_stages={st!r} must be a positive int")


def _plan(C: int, cfg) -> tuple[int, int, int, int]:
    """(TILE_C, n_tiles, iters, split): the channel tile min(BLOCK_C, next_pow2(C)), the tiles covering
    C, the tiles a channel group walks (cdiv(n_tiles, C_SPLIT)) and the groups that leaves non-empty
    (cdiv(n_tiles, iters) <= C_SPLIT: never an idle program)."""
    _check_cfg(cfg)
    tile_c = min(cfg["BLOCK_C"], _pow2(C))
    n_tiles = triton.cdiv(C, tile_c)
    iters = triton.cdiv(n_tiles, cfg["C_SPLIT"])
    return tile_c, n_tiles, iters, triton.cdiv(n_tiles, iters)


def _grid(Nb: int, HWo: int, C: int, cfg) -> tuple[int, int]:
    split = _plan(C, cfg)[3]
    return (triton.cdiv(HWo, cfg["BLOCK_P"]) * split, Nb)


def _channels_last(x) -> bool:
    """The tile's layout: channels_last where C is the smaller-stride dimension (C > 1)."""
    return x.shape[1] > 1 and x.stride(1) < x.stride(3)


def _grid_walk(g) -> tuple[int, int, int]:
    """(GRID_FLAT, stride_gh, stride_gw) of a grid [N, Ho, Wo, 2]: flat when (i, j) is one index p with
    stride stride_gw (Ho 1, Wo 1 or row pitch Wo stride_gw)."""
    _, Ho, Wo, _ = g.shape
    if Wo == 1:
        return 1, g.stride(1), g.stride(1)
    if Ho == 1 or g.stride(1) == Wo * g.stride(2):
        return 1, g.stride(1), g.stride(2)
    return 0, g.stride(1), g.stride(2)


def _kernel_args(x, g, out, align: int, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it). out is fresh
    in x's memory format: its pixels one flattened index p with stride stride_op."""
    Nb, C, H, W = x.shape
    _, Ho, Wo, _ = g.shape
    tile_c, n_tiles, iters, split = _plan(C, cfg)
    cl = _channels_last(x)
    flat, sgh, sgw = _grid_walk(g)
    return dict(X=x, G=g, O=out, C=C, H=H, W=W, HWo=Ho * Wo, Wo=Wo, n_tiles=n_tiles, iters=iters,
                stride_xn=x.stride(0), stride_xc=x.stride(1), stride_xh=x.stride(2), stride_xw=x.stride(3),
                stride_gn=g.stride(0), stride_gh=sgh, stride_gw=sgw, stride_gc=g.stride(3),
                stride_on=out.stride(0), stride_oc=out.stride(1), stride_op=out.stride(3),
                ALIGN=int(align), CHANNELS_LAST=int(cl), GRID_FLAT=flat, EVEN_C=int(C % tile_c == 0),
                BLOCK_P=cfg["BLOCK_P"], TILE_C=tile_c, C_SPLIT=split)


def grid_sample_bilinear(input, grid, align_corners: bool = False, *, mode: str = "bilinear",
                         padding_mode: str = "zeros", BLOCK_P: int = 128, BLOCK_C: int = 8, C_SPLIT: int = 1,
                         num_warps: int = 4, num_stages: int = 1):
    """F.grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners) of input
    [N, C, H, W] (fp16 / bf16 / fp32, any strides) at grid [N, Ho, Wo, 2] (fp32 or input's dtype, any
    strides; (x, y) normalized to -1 .. 1): out [N, C, Ho, Wo] in input's dtype and memory format
    (channels_last in, channels_last out). BLOCK_P, BLOCK_C, C_SPLIT, num_warps, num_stages: the tunables
    (module doc)."""
    import torch
    if mode != "bilinear":
        raise ValueError(f"mode={mode!r}: only 'bilinear' is implemented")
    if padding_mode != "zeros":
        raise ValueError(f"padding_mode={padding_mode!r}: only 'zeros' is implemented")
    if align_corners not in (0, 1) or not isinstance(align_corners, (int, bool)):
        raise ValueError(f"align_corners={align_corners!r} must be a bool")
    if input.dim() != 4:
        raise ValueError(f"expected input [N, C, H, W]; got {tuple(input.shape)}")
    if input.dtype not in (torch.float16, torch.bfloat16, torch.float32):
        raise ValueError(f"input must be fp16 / bf16 / fp32; got {input.dtype}")
    if grid.dim() != 4 or grid.shape[3] != 2:
        raise ValueError(f"expected grid [N, Ho, Wo, 2]; got {tuple(grid.shape)}")
    if grid.dtype not in (torch.float32, input.dtype):
        raise ValueError(f"grid must be fp32 or input's dtype {input.dtype}; got {grid.dtype}")
    Nb, C, H, W = input.shape
    if grid.shape[0] != Nb:
        raise ValueError(f"grid's N={grid.shape[0]} must equal input's N={Nb}")
    if grid.device != input.device:
        raise ValueError(f"grid must be on input's device {input.device}; got {grid.device}")
    cfg = {"BLOCK_P": BLOCK_P, "BLOCK_C": BLOCK_C, "C_SPLIT": C_SPLIT, "num_warps": num_warps,
           "num_stages": num_stages}
    _check_cfg(cfg)
    if H < 1 or W < 1:
        raise ValueError(f"input's H={H} and W={W} must be positive")
    _, Ho, Wo, _ = grid.shape
    cl = _channels_last(input)
    fmt = torch.channels_last if cl else torch.contiguous_format
    out = torch.empty((Nb, C, Ho, Wo), dtype=input.dtype, device=input.device, memory_format=fmt)
    if out.numel() == 0:
        return out
    sc, sh, sw = (abs(s) for s in input.stride()[1:])
    # the taps' offsets reach (H + 1) rows and (W + 1) columns past the origin (clamped coordinates)
    span = (C - 1) * sc + (H + 2) * sh + (W + 2) * sw + 1
    gspan = sum((d - 1) * s for d, s in zip(grid.shape[1:], grid.stride()[1:])) + 1
    if span >= 2**31 or C * Ho * Wo >= 2**31 or gspan >= 2**31:
        raise ValueError(f"one image of input ({span} elements spanned), grid ({gspan}) or out ({C * Ho * Wo}) "
                         f"exceeds the kernel's int32 offsets")
    if Nb > 65535:
        raise ValueError(f"N={Nb} exceeds the grid's 65535 images")
    _kernel[_grid(Nb, Ho * Wo, C, cfg)](**_kernel_args(input, grid, out, int(align_corners), cfg),
                                        num_warps=num_warps, num_stages=num_stages)
    return out


def _normalize(s, size: int, align: int):
    """Pixel-centre coordinates s (pixel k's centre at k) -> grid_sample's normalized ones."""
    if align:
        return 2.0 * s / max(size - 1, 1) - 1.0
    return (2.0 * s + 1.0) / size - 1.0


def _flow_grid(P, gen):
    """Identity (output pixel centres mapped onto the input) + a smooth flow field: per image three
    plane waves of random direction, wavelength 1/4 .. 2 image sizes and phase, amplitudes summing to
    1 .. max(2, W / 60) pixels (a few pixels of motion between neighbouring frames at 540p), [N, Ho, Wo, 2]."""
    import torch
    Nb, H, W, Ho, Wo = P["N"], P["H"], P["W"], P["Ho"], P["Wo"]
    ii = torch.arange(Ho, dtype=torch.float64).view(1, Ho, 1)
    jj = torch.arange(Wo, dtype=torch.float64).view(1, 1, Wo)
    sy = (ii + 0.5) * (H / Ho) - 0.5
    sx = (jj + 0.5) * (W / Wo) - 0.5
    amp = 1.0 + torch.rand((Nb, 2, 1, 1), generator=gen, dtype=torch.float64) * max(1.0, W / 60.0 - 1.0)
    u = torch.zeros((Nb, 2, Ho, Wo), dtype=torch.float64)
    for _ in range(3):
        ang = torch.rand((Nb, 2, 1, 1), generator=gen, dtype=torch.float64) * 2 * math.pi
        lam = 0.25 + 1.75 * torch.rand((Nb, 2, 1, 1), generator=gen, dtype=torch.float64)
        ph = torch.rand((Nb, 2, 1, 1), generator=gen, dtype=torch.float64) * 2 * math.pi
        arg = (torch.cos(ang) * jj / max(Wo, 1) + torch.sin(ang) * ii / max(Ho, 1)) / lam
        u += torch.sin(2 * math.pi * arg + ph) / 3.0
    u = u * amp
    gx = _normalize(sx + u[:, 0], W, P["align_corners"])
    gy = _normalize(sy + u[:, 1], H, P["align_corners"])
    return torch.stack((gx, gy), dim=-1)


def _bev_grid(P, gen):
    """Simple-BEV-style: voxel centres of a 100 m x 100 m x 10 m box (X across the Wo columns, Z x BEV_Y
    rows: Z slow, height fast) projected into N pinhole cameras ringed around the ego vehicle (yaw 2 pi
    k / N + jitter, 0.8 m out, 1.5 m up; focal 0.79 W: nuScenes' 64-degree field of view at the feature
    map), [N, Ho, Wo, 2]; voxels behind a camera go far off the image (all taps zero)."""
    import torch
    Nb, H, W, Ho, Wo = P["N"], P["H"], P["W"], P["Ho"], P["Wo"]
    Z = Ho // BEV_Y
    xs = -50.0 + (torch.arange(Wo, dtype=torch.float64) + 0.5) * (100.0 / Wo)
    zs = -50.0 + (torch.arange(Z, dtype=torch.float64) + 0.5) * (100.0 / Z)
    ys = -5.0 + (torch.arange(BEV_Y, dtype=torch.float64) + 0.5) * (10.0 / BEV_Y)     # Y down
    Xw = xs.view(1, 1, Wo).expand(Z, BEV_Y, Wo)
    Yw = ys.view(1, BEV_Y, 1).expand(Z, BEV_Y, Wo)
    Zw = zs.view(Z, 1, 1).expand(Z, BEV_Y, Wo)
    f = 0.79 * W
    out = []
    for k in range(Nb):
        th = 2 * math.pi * k / Nb + 0.1 * (float(torch.rand((), generator=gen, dtype=torch.float64)) - 0.5)
        s, c = math.sin(th), math.cos(th)
        vx, vy, vz = Xw - 0.8 * s, Yw + 1.5, Zw - 0.8 * c                # from the camera centre
        xc = vx * c - vz * s                                            # right
        zc = vx * s + vz * c                                            # forward
        front = zc > 0.1
        zsafe = torch.where(front, zc, torch.ones_like(zc))
        u = torch.where(front, f * xc / zsafe + W / 2.0, torch.full_like(zc, -1e4))
        v = torch.where(front, f * vy / zsafe + H / 2.0, torch.full_like(zc, -1e4))
        gx = _normalize(u - 0.5, W, P["align_corners"])
        gy = _normalize(v - 0.5, H, P["align_corners"])
        out.append(torch.stack((gx, gy), dim=-1).reshape(Ho, Wo, 2))
    return torch.stack(out)


def _ray_grid(P, gen):
    """EG3D-style: per scene (N / 3 of them) a camera 2.7 from the origin (yaw, pitch within 0.6 / 0.3
    rad), normalized focal 4.2647, Wo / RAY_SAMPLES rays over a square image (row-major), RAY_SAMPLES
    stratified depths in [2.25, 3.3] a ray (innermost); each sample projected onto the planes xy, xz and
    zx and scaled by 2 / box_warp (box_warp 1): [N, 1, Wo, 2] (plane 3 s + q of scene s)."""
    import torch
    B, Wo = P["N"] // 3, P["Wo"]
    R = Wo // RAY_SAMPLES
    res = max(1, math.isqrt(R - 1) + 1) if R > 1 else 1
    r = torch.arange(R, dtype=torch.float64)
    pu = ((r % res) + 0.5) / res - 0.5
    pv = (torch.div(r, res, rounding_mode="floor") + 0.5) / res - 0.5
    planes = []
    for _ in range(B):
        yaw = 0.6 * (2 * float(torch.rand((), generator=gen, dtype=torch.float64)) - 1)
        pitch = 0.3 * (2 * float(torch.rand((), generator=gen, dtype=torch.float64)) - 1)
        fwd = torch.tensor([-math.sin(yaw) * math.cos(pitch), -math.sin(pitch), -math.cos(yaw) * math.cos(pitch)],
                           dtype=torch.float64)
        o = -2.7 * fwd
        right = torch.linalg.cross(fwd, torch.tensor([0.0, 1.0, 0.0], dtype=torch.float64))
        right = right / right.norm()
        up = torch.linalg.cross(right, fwd)
        d = fwd + (pu / 4.2647)[:, None] * right - (pv / 4.2647)[:, None] * up
        d = d / d.norm(dim=1, keepdim=True)                             # [R, 3]
        t = 2.25 + (torch.arange(RAY_SAMPLES, dtype=torch.float64)
                    + torch.rand((R, RAY_SAMPLES), generator=gen, dtype=torch.float64)) * (1.05 / RAY_SAMPLES)
        pts = (o + t[..., None] * d[:, None, :]).reshape(Wo, 3) * 2.0   # box_warp 1
        x, y, z = pts.unbind(-1)
        planes += [torch.stack((x, y), -1), torch.stack((x, z), -1), torch.stack((z, x), -1)]
    return torch.stack(planes).view(P["N"], 1, Wo, 2)


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """input: N(0, 1) features in the point's dtype and layout (an NHWC buffer permuted to [N, C, H, W]
    for "NHWC"); grid: fp32 contiguous [N, Ho, Wo, 2] drawn by the point's field ("flow", "bev", "rays":
    the helpers above); align_corners. Drawn on the CPU from a seeded torch.Generator, then moved."""
    import torch
    P = _check_point(point)
    gen = torch.Generator(device="cpu").manual_seed(seed)
    dt = _torch_dtype(P["dtype"])
    Nb, C, H, W = P["N"], P["C"], P["H"], P["W"]
    if P["layout"] == "NHWC":
        x = torch.randn((Nb, H, W, C), generator=gen).to(dt).to(device).permute(0, 3, 1, 2)
    else:
        x = torch.randn((Nb, C, H, W), generator=gen).to(dt).to(device)
    g = {"flow": _flow_grid, "bev": _bev_grid, "rays": _ray_grid}[P["field"]](P, gen)
    return {"input": x, "grid": g.to(torch.float32).contiguous().to(device), "align_corners": P["align_corners"]}


def launch(inputs, cfg):
    return grid_sample_bilinear(inputs["input"], inputs["grid"], bool(inputs["align_corners"]),
                                BLOCK_P=cfg["BLOCK_P"], BLOCK_C=cfg["BLOCK_C"], C_SPLIT=cfg["C_SPLIT"],
                                num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])


def reference(inputs):
    """torch's grid_sample (bilinear, zeros) on the upcast input and grid -- fp64 on the CPU, fp32 on a GPU --
    with a position that has a non-finite coordinate sampling nothing (zeros: the kernel's rule; torch's CPU
    kernel returns NaN there); [N, C, Ho, Wo] fp32."""
    import torch
    import torch.nn.functional as F
    x, g = inputs["input"], inputs["grid"]
    wide = torch.float64 if x.device.type == "cpu" else torch.float32
    g = g.to(wide)
    g = torch.where(torch.isfinite(g).all(-1, keepdim=True), g, torch.full_like(g, -4.0))
    return F.grid_sample(x.to(wide), g, mode="bilinear", padding_mode="zeros",
                         align_corners=bool(inputs["align_corners"])).float()


def torch_baseline(inputs):
    """What the systems run: torch's grid_sample kernel; a grid in the input's dtype directly, an fp32 grid
    with an fp16 / bf16 input as autocast runs it (grid_sample on its fp32 list: the input upcast, an fp32
    output, cast back to the input's dtype for the next layer)."""
    import torch.nn.functional as F
    x, g = inputs["input"], inputs["grid"]
    al = bool(inputs["align_corners"])
    if g.dtype == x.dtype:
        return F.grid_sample(x, g, mode="bilinear", padding_mode="zeros", align_corners=al)
    return F.grid_sample(x.float(), g.float(), mode="bilinear", padding_mode="zeros", align_corners=al).to(x.dtype)


def bytes_moved(point) -> int:
    """input read once (the taps' re-reads of a pixel by neighbouring output pixels are L1 / L2 hits), the
    fp32 grid read once (8 bytes a pixel), out written once."""
    P = _check_point(point)
    e = _elem_bytes(P["dtype"])
    HWo = P["Ho"] * P["Wo"]
    return P["N"] * (e * P["C"] * (P["H"] * P["W"] + HWo) + 8 * HWo)


def flops(point) -> int:
    """Four multiply-adds an output element (the per-pixel coordinate and weight math, shared by the
    channels, not counted)."""
    P = _check_point(point)
    return 8 * P["N"] * P["C"] * P["Ho"] * P["Wo"]


def grid(cfg, point) -> tuple[int, int]:
    """(pixel blocks x channel groups, images): the launch grid, a pixel block's channel groups adjacent."""
    P = _check_point(point)
    return _grid(P["N"], P["Ho"] * P["Wo"], P["C"], cfg)


def loop_iterations(cfg, point) -> int:
    """The channel tiles a program walks: cdiv(cdiv(C, TILE_C), C_SPLIT) (the last group's fewer when
    C_SPLIT does not divide the tiles)."""
    P = _check_point(point)
    return _plan(P["C"], cfg)[2]


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory): input and
    out in the point's layout, the grid fp32 contiguous."""
    import torch
    P = _check_point(point)
    _check_cfg(cfg)
    dt = _torch_dtype(P["dtype"])
    Nb, C, H, W, Ho, Wo = (P[k] for k in ("N", "C", "H", "W", "Ho", "Wo"))
    fmt = torch.channels_last if P["layout"] == "NHWC" else torch.contiguous_format
    x = torch.empty((Nb, C, H, W), dtype=dt, device="meta", memory_format=fmt)
    g = _grid_data(tuple(sorted(P.items())))
    out = torch.empty((Nb, C, Ho, Wo), dtype=dt, device="meta", memory_format=fmt)
    return _kernel_args(x, g, out, P["align_corners"], cfg)


@functools.lru_cache(maxsize=4)
def _grid_data(items: tuple):
    """The point's sampling grid with data, on the CPU (what rank reads the gathers' addresses from: the
    taps' offsets are computed from these coordinates), drawn as make_inputs draws it (its own generator)."""
    import torch
    P = dict(items)
    gen = torch.Generator(device="cpu").manual_seed(0)
    return {"flow": _flow_grid, "bev": _bev_grid, "rays": _ray_grid}[P["field"]](P, gen).to(torch.float32).contiguous()
