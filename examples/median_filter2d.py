"""A 2-D median filter (salt-and-pepper / impulse denoising) over a batch of image planes -- OpenCV's
cv2.medianBlur (ksize 3 / 5), scipy.ndimage.median_filter, kornia.filters.median_blur and NPP's
nppiFilterMedian do the same job -- a bare @triton.jit kernel + its launcher:

    out[n, c, y, x] = median{ xb[n, c, y + dy, x + dx] : dy, dx in -R .. R },   K = 2 R + 1 in {3, 5}

with replicate (clamp) borders: xb[.., y, x] = x[.., clamp(y, 0, H - 1), clamp(x, 0, W - 1)] -- OpenCV's
BORDER_REPLICATE, the border cv2.medianBlur uses (kornia pads with zeros, scipy reflects; the reference here
clamps too). K x K = 9 or 25 values a window: the median is the 5th / 13th smallest, always one of the window's
own values, so the output is exact (no rounding) in every dtype.

x: [N, C, H, W] uint8 / fp16 / fp32, NCHW contiguous (each of the N x C planes filtered on its own); out: a
fresh contiguous [N, C, H, W] tensor in x's dtype. fp16 / fp32 are compared in their own dtype; uint8 taps are
widened to int32 as they are loaded and narrowed at the store (compared as 8-bit values, ptxas spilled at 64-96
registers: 26-98 spilled registers for 1024-2048-pixel tiles under triton 3.9; widened, none spills).

Work split: a 1-D grid, one program per BLOCK_Y x BLOCK_X output tile of one plane; program id -> column tile
fastest, then the row tile, then the plane (the programs in flight are neighbours along a band of the same
plane, so a tile's halo rows / columns are still in L2). A program computes its row and column indices once,
clamped into the plane (replicate border; rows / columns past the plane's end clamp too, so no load is masked
or out of bounds; only the store is masked), then loads the K x K shifted [BLOCK_Y, BLOCK_X] windows of the
tile -- the shifted loads of neighbouring outputs hit the same lines: one DRAM read of each input pixel, the
other K^2 - 1 touches from L1 / L2 -- and selects each pixel's median in registers, fully unrolled:
  K = 3: the classic 19-exchange median-of-9 network (Paeth, Graphics Gems; Devillard's opt_med9), the nine
         taps loaded up front;
  K = 5: forgetful selection (the small-radius GPU median of McGuire, ShaderX6): the first 14 taps
         (25 // 2 + 2) are loaded, a min / max pass drops the set's min and max (neither can be the median),
         then each of the remaining 11 taps is loaded into the freed slot and the pass repeats on the shrinking
         set (13, 12, ..., 3 values): 132 exchanges, at most 14 live values a pixel instead of 25, the later
         taps' loads interleaved with the exchanges.
An exchange is a tl.minimum and a tl.maximum; outputs no later step reads are dead code the compiler drops. No
loop, no shared memory beyond what the compiler picks for layouts, no atomics: each output is written once.

How it differs from the closest examples/ kernels: examples/stencil2d.py is a linear 5x5 filter (25 FMAs a
pixel) that walks bands of rows and keeps the vertical reuse in a ring of accumulators; a median is not
separable or linear, so here every pixel keeps its own window's values in registers and runs a comparison
network (38 / 264 min-max a pixel), one tile a program, no row walk. examples/pool2d_nhwc.py reduces windows
by max / mean with the channels innermost (NHWC: BLOCK_C channels a load); here the planes are NCHW, the
window taps are shifted loads along the contiguous x axis, and the reduction is a rank selection, not an
associative fold. examples/depthwise_conv2d.py is a per-channel weighted sum over a K x K window (weights a
tile, fp32 accumulation); here there are no weights and no accumulation, only order statistics in the data's
own dtype.

Tunables: BLOCK_Y (rows a tile: 2 / 4 / 8), BLOCK_X (columns a tile: 32 / 64 / 128), ROWS (tiles a program,
walked down the plane in a loop: 1 / 2 / 4 -- fewer programs, the column indices clamped once, the previous
tile's bottom rows L1 hits as the next tile's top halo; a band past the plane's end computes clamped rows and
stores nothing), num_warps (4 / 8; the tile's pixels over the CTA's threads set the pixels a thread: 0.5-8 here,
each with its window's live values in registers -- 8 warps on the 2 x 32 or 4 x 32 tile leave threads holding
copies, a clearly poor choice a tuner would still try), num_stages (1: the tile loop's loads feed only their own
tile's network; unpipelined).
Registers / shared memory on sm_90 over the sweep (test_example_compiles_sm90 compiles the extremes):
  triton 3.6.0: registers 28-96 (uint8 3 x 3), 32-255 (fp32 and uint8 5 x 5; 255 with no spill for 8 x 128
  tiles, 2-4 a program, on 4 warps: the sweep's edge), shared memory 0-4096 bytes (layout conversions only);
  triton 3.9: registers 32-64 (3 x 3), 32-128 (5 x 5), no shared memory. All 54 configs at all 3 points compile
  under both without spills.
Problem parameters (a workload point): N (images / frames / stack slices), C (channels: planes an image), H, W,
K (window side: 3 / 5), dtype ("uint8" / "fp16" / "fp32").
"""

from __future__ import annotations

import math

import triton
import triton.language as tl


@triton.jit
def _s2(a, b):
    """A compare-exchange: (min, max)."""
    return tl.minimum(a, b), tl.maximum(a, b)


@triton.jit
def _clamp(i, n):
    """Replicate border: indices of an axis of length n clamped into [0, n)."""
    return tl.minimum(tl.maximum(i, 0), n - 1)


@triton.jit
def _tap(x_plane, ro, co):
    """One shifted [BLOCK_Y, BLOCK_X] tap of the windows: row offsets ro (clamped rows x W), columns co
    (clamped); always inside the plane, so unmasked."""
    v = tl.load(x_plane + (ro[:, None] + co[None, :]))
    if v.dtype.is_int():
        v = v.to(tl.int32)                         # uint8 compared in 32-bit registers (module doc)
    return v


@triton.jit
def _median3x3(x_plane, rows, H, W, co0, co1, co2):
    """The median of each pixel's 3 x 3 window: the 19-exchange median-of-9 network (Paeth, Graphics Gems;
    Devillard's opt_med9) on the nine taps; p4 is the median."""
    ro0 = _clamp(rows - 1, H) * W
    ro1 = _clamp(rows, H) * W
    ro2 = _clamp(rows + 1, H) * W
    p0 = _tap(x_plane, ro0, co0)
    p1 = _tap(x_plane, ro0, co1)
    p2 = _tap(x_plane, ro0, co2)
    p3 = _tap(x_plane, ro1, co0)
    p4 = _tap(x_plane, ro1, co1)
    p5 = _tap(x_plane, ro1, co2)
    p6 = _tap(x_plane, ro2, co0)
    p7 = _tap(x_plane, ro2, co1)
    p8 = _tap(x_plane, ro2, co2)
    p1, p2 = _s2(p1, p2)
    p4, p5 = _s2(p4, p5)
    p7, p8 = _s2(p7, p8)
    p0, p1 = _s2(p0, p1)
    p3, p4 = _s2(p3, p4)
    p6, p7 = _s2(p6, p7)
    p1, p2 = _s2(p1, p2)
    p4, p5 = _s2(p4, p5)
    p7, p8 = _s2(p7, p8)
    p0, p3 = _s2(p0, p3)
    p5, p8 = _s2(p5, p8)
    p4, p7 = _s2(p4, p7)
    p3, p6 = _s2(p3, p6)
    p1, p4 = _s2(p1, p4)
    p2, p5 = _s2(p2, p5)
    p4, p7 = _s2(p4, p7)
    p4, p2 = _s2(p4, p2)
    p6, p4 = _s2(p6, p4)
    p4, p2 = _s2(p4, p2)
    return p4


@triton.jit
def _median5x5(x_plane, rows, H, W, co0, co1, co2, co3, co4):
    """The median of each pixel's 5 x 5 window by forgetful selection (module doc): taps v0 .. v13 (row-major)
    loaded, then rounds of [pair exchanges; the min chain into the first slot; the max chain into the last slot;
    both dropped; the next tap into the set] over 14, 13, ..., 3 live values (132 exchanges). v12 is the median."""
    ro0 = _clamp(rows - 2, H) * W
    ro1 = _clamp(rows - 1, H) * W
    ro2 = _clamp(rows, H) * W
    ro3 = _clamp(rows + 1, H) * W
    ro4 = _clamp(rows + 2, H) * W
    v0 = _tap(x_plane, ro0, co0)
    v1 = _tap(x_plane, ro0, co1)
    v2 = _tap(x_plane, ro0, co2)
    v3 = _tap(x_plane, ro0, co3)
    v4 = _tap(x_plane, ro0, co4)
    v5 = _tap(x_plane, ro1, co0)
    v6 = _tap(x_plane, ro1, co1)
    v7 = _tap(x_plane, ro1, co2)
    v8 = _tap(x_plane, ro1, co3)
    v9 = _tap(x_plane, ro1, co4)
    v10 = _tap(x_plane, ro2, co0)
    v11 = _tap(x_plane, ro2, co1)
    v12 = _tap(x_plane, ro2, co2)
    v13 = _tap(x_plane, ro2, co3)
    v0, v1 = _s2(v0, v1)
    v2, v3 = _s2(v2, v3)
    v4, v5 = _s2(v4, v5)
    v6, v7 = _s2(v6, v7)
    v8, v9 = _s2(v8, v9)
    v10, v11 = _s2(v10, v11)
    v12, v13 = _s2(v12, v13)
    v0, v2 = _s2(v0, v2)
    v0, v4 = _s2(v0, v4)
    v0, v6 = _s2(v0, v6)
    v0, v8 = _s2(v0, v8)
    v0, v10 = _s2(v0, v10)
    v0, v12 = _s2(v0, v12)
    v1, v13 = _s2(v1, v13)
    v3, v13 = _s2(v3, v13)
    v5, v13 = _s2(v5, v13)
    v7, v13 = _s2(v7, v13)
    v9, v13 = _s2(v9, v13)
    v11, v13 = _s2(v11, v13)
    v14 = _tap(x_plane, ro2, co4)
    v1, v2 = _s2(v1, v2)
    v3, v4 = _s2(v3, v4)
    v5, v6 = _s2(v5, v6)
    v7, v8 = _s2(v7, v8)
    v9, v10 = _s2(v9, v10)
    v11, v12 = _s2(v11, v12)
    v1, v3 = _s2(v1, v3)
    v1, v5 = _s2(v1, v5)
    v1, v7 = _s2(v1, v7)
    v1, v9 = _s2(v1, v9)
    v1, v11 = _s2(v1, v11)
    v1, v14 = _s2(v1, v14)
    v2, v14 = _s2(v2, v14)
    v4, v14 = _s2(v4, v14)
    v6, v14 = _s2(v6, v14)
    v8, v14 = _s2(v8, v14)
    v10, v14 = _s2(v10, v14)
    v12, v14 = _s2(v12, v14)
    v15 = _tap(x_plane, ro3, co0)
    v2, v3 = _s2(v2, v3)
    v4, v5 = _s2(v4, v5)
    v6, v7 = _s2(v6, v7)
    v8, v9 = _s2(v8, v9)
    v10, v11 = _s2(v10, v11)
    v12, v15 = _s2(v12, v15)
    v2, v4 = _s2(v2, v4)
    v2, v6 = _s2(v2, v6)
    v2, v8 = _s2(v2, v8)
    v2, v10 = _s2(v2, v10)
    v2, v12 = _s2(v2, v12)
    v3, v15 = _s2(v3, v15)
    v5, v15 = _s2(v5, v15)
    v7, v15 = _s2(v7, v15)
    v9, v15 = _s2(v9, v15)
    v11, v15 = _s2(v11, v15)
    v16 = _tap(x_plane, ro3, co1)
    v3, v4 = _s2(v3, v4)
    v5, v6 = _s2(v5, v6)
    v7, v8 = _s2(v7, v8)
    v9, v10 = _s2(v9, v10)
    v11, v12 = _s2(v11, v12)
    v3, v5 = _s2(v3, v5)
    v3, v7 = _s2(v3, v7)
    v3, v9 = _s2(v3, v9)
    v3, v11 = _s2(v3, v11)
    v3, v16 = _s2(v3, v16)
    v4, v16 = _s2(v4, v16)
    v6, v16 = _s2(v6, v16)
    v8, v16 = _s2(v8, v16)
    v10, v16 = _s2(v10, v16)
    v12, v16 = _s2(v12, v16)
    v17 = _tap(x_plane, ro3, co2)
    v4, v5 = _s2(v4, v5)
    v6, v7 = _s2(v6, v7)
    v8, v9 = _s2(v8, v9)
    v10, v11 = _s2(v10, v11)
    v12, v17 = _s2(v12, v17)
    v4, v6 = _s2(v4, v6)
    v4, v8 = _s2(v4, v8)
    v4, v10 = _s2(v4, v10)
    v4, v12 = _s2(v4, v12)
    v5, v17 = _s2(v5, v17)
    v7, v17 = _s2(v7, v17)
    v9, v17 = _s2(v9, v17)
    v11, v17 = _s2(v11, v17)
    v18 = _tap(x_plane, ro3, co3)
    v5, v6 = _s2(v5, v6)
    v7, v8 = _s2(v7, v8)
    v9, v10 = _s2(v9, v10)
    v11, v12 = _s2(v11, v12)
    v5, v7 = _s2(v5, v7)
    v5, v9 = _s2(v5, v9)
    v5, v11 = _s2(v5, v11)
    v5, v18 = _s2(v5, v18)
    v6, v18 = _s2(v6, v18)
    v8, v18 = _s2(v8, v18)
    v10, v18 = _s2(v10, v18)
    v12, v18 = _s2(v12, v18)
    v19 = _tap(x_plane, ro3, co4)
    v6, v7 = _s2(v6, v7)
    v8, v9 = _s2(v8, v9)
    v10, v11 = _s2(v10, v11)
    v12, v19 = _s2(v12, v19)
    v6, v8 = _s2(v6, v8)
    v6, v10 = _s2(v6, v10)
    v6, v12 = _s2(v6, v12)
    v7, v19 = _s2(v7, v19)
    v9, v19 = _s2(v9, v19)
    v11, v19 = _s2(v11, v19)
    v20 = _tap(x_plane, ro4, co0)
    v7, v8 = _s2(v7, v8)
    v9, v10 = _s2(v9, v10)
    v11, v12 = _s2(v11, v12)
    v7, v9 = _s2(v7, v9)
    v7, v11 = _s2(v7, v11)
    v7, v20 = _s2(v7, v20)
    v8, v20 = _s2(v8, v20)
    v10, v20 = _s2(v10, v20)
    v12, v20 = _s2(v12, v20)
    v21 = _tap(x_plane, ro4, co1)
    v8, v9 = _s2(v8, v9)
    v10, v11 = _s2(v10, v11)
    v12, v21 = _s2(v12, v21)
    v8, v10 = _s2(v8, v10)
    v8, v12 = _s2(v8, v12)
    v9, v21 = _s2(v9, v21)
    v11, v21 = _s2(v11, v21)
    v22 = _tap(x_plane, ro4, co2)
    v9, v10 = _s2(v9, v10)
    v11, v12 = _s2(v11, v12)
    v9, v11 = _s2(v9, v11)
    v9, v22 = _s2(v9, v22)
    v10, v22 = _s2(v10, v22)
    v12, v22 = _s2(v12, v22)
    v23 = _tap(x_plane, ro4, co3)
    v10, v11 = _s2(v10, v11)
    v12, v23 = _s2(v12, v23)
    v10, v12 = _s2(v10, v12)
    v11, v23 = _s2(v11, v23)
    v24 = _tap(x_plane, ro4, co4)
    v11, v12 = _s2(v11, v12)
    v11, v24 = _s2(v11, v24)
    v12, v24 = _s2(v12, v24)
    return v12


@triton.jit
def _kernel(X, OUT, H, W, KSIZE: tl.constexpr, BLOCK_Y: tl.constexpr, BLOCK_X: tl.constexpr,
            ROWS: tl.constexpr):
    pid = tl.program_id(0)
    tiles_x = tl.cdiv(W, BLOCK_X)
    bands = tl.cdiv(H, BLOCK_Y * ROWS)
    tx = pid % tiles_x
    t = pid // tiles_x
    band = t % bands
    plane = t // bands
    cols = tx * BLOCK_X + tl.arange(0, BLOCK_X)
    col_ok = (cols < W)[None, :]
    plane_off = plane.to(tl.int64) * H * W
    x_plane = X + plane_off
    o_plane = OUT + plane_off
    # the window's column taps, clamped once (replicate border; columns past W clamp too, their outputs unstored)
    co0 = _clamp(cols - KSIZE // 2, W)
    co1 = _clamp(cols - KSIZE // 2 + 1, W)
    co2 = _clamp(cols - KSIZE // 2 + 2, W)
    co3 = _clamp(cols + 1, W)
    co4 = _clamp(cols + 2, W)
    for r in range(ROWS):                          # the band's ROWS tiles, top to bottom
        rows = (band * ROWS + r) * BLOCK_Y + tl.arange(0, BLOCK_Y)
        if KSIZE == 3:
            med = _median3x3(x_plane, rows, H, W, co0, co1, co2)
        else:
            med = _median5x5(x_plane, rows, H, W, co0, co1, co2, co3, co4)
        tl.store(o_plane + (rows[:, None] * W + cols[None, :]), med.to(OUT.dtype.element_ty), mask=(rows < H)[:, None] & col_ok)


# ---------------------------------------------------------------- launcher
ROLE = "held-out-35"
DTYPES = ("uint8", "fp16", "fp32")
KSIZES = (3, 5)
TUNABLES = ("BLOCK_Y", "BLOCK_X", "ROWS", "num_warps", "num_stages")
BASELINE = {"BLOCK_Y": 8, "BLOCK_X": 64, "ROWS": 2, "num_warps": 4, "num_stages": 1}
# the study's sweep: 3 x 3 x 3 x 2 = 54 configs (2-8 x 32-128 tiles, 1-4 tiles a program, 4 / 8 warps: 0.5-8
# pixels a thread; the tile loop's loads feed only their own tile: num_stages 1). Left out for spills on sm_90:
# BLOCK_Y 16 (16 x 128 tiles on 4 warps, 16 pixels a thread: 255 registers and 104 spilled at the fp32 5 x 5
# point under triton 3.6.0), 2 warps and 32-row tiles (32 pixels a thread: 86-514 spilled at 5 x 5)
SWEEP_AXES = {"BLOCK_Y": [2, 4, 8], "BLOCK_X": [32, 64, 128], "ROWS": [1, 2, 4], "num_warps": [4, 8],
              "num_stages": [1]}
MAX_PLANE = 2**31 - 1                      # H x W within int32 (in-plane offsets)

POINTS = [
    # a batch of 16 1080p RGB frames (a video denoising / pre-processing batch, cv2.medianBlur ksize 3 on the
    # decoded uint8 frames): 48 planes of 1080 x 1920, 3 x 3. x 99.5 MB + out 99.5 MB
    {"N": 16, "C": 3, "H": 1080, "W": 1920, "K": 3, "dtype": "uint8"},
    # a microscopy / cryo-EM z-stack of 16 2048 x 2048 fp32 planes (scipy.ndimage.median_filter size 5 per
    # slice: hot-pixel and shot-noise removal). x 268 MB + out 268 MB
    {"N": 16, "C": 1, "H": 2048, "W": 2048, "K": 5, "dtype": "fp32"},
    # a video pipeline's 4K luma planes: 8 UHD frames' Y planes (3840 x 2160 uint8), 5 x 5 (NPP's
    # nppiFilterMedian on the Y plane of NV12). x 66 MB + out 66 MB
    {"N": 8, "C": 1, "H": 2160, "W": 3840, "K": 5, "dtype": "uint8"},
]


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _check_cfg(cfg) -> None:
    by = cfg["BLOCK_Y"]
    if not _is_int(by) or by < 1 or by > 64 or by & (by - 1):
        raise ValueError(f"BLOCK_Y={by!r} must be a power of two from 1 to 64")
    bx = cfg["BLOCK_X"]
    if not _is_int(bx) or bx < 8 or bx > 1024 or bx & (bx - 1):
        raise ValueError(f"BLOCK_X={bx!r} must be a power of two from 8 to 1024")
    r = cfg["ROWS"]
    if not _is_int(r) or r < 1 or r > 64:
        raise ValueError(f"ROWS={r!r} must be an int from 1 to 64")
    w = cfg["num_warps"]
    if not _is_int(w) or w not in (1, 2, 4, 8, 16):
        raise ValueError(f"num_warps={w!r} must be a power of two from 1 to 16")
    ns = cfg.get("num_stages", 1)
    if not _is_int(ns) or ns < 1:
        raise ValueError(f"num_stages={ns!r} must be a positive int")


def _check_point(point) -> dict:
    P = {"dtype": "uint8", **point}
    for k in ("N", "C", "H", "W"):
        v = P[k]
        if not _is_int(v) or v < 1:
            raise ValueError(f"{k}={v!r} must be a positive int")
    if P["H"] * P["W"] > MAX_PLANE:
        raise ValueError(f"H x W = {P['H']} x {P['W']} is too large a plane: at most {MAX_PLANE} pixels")
    if P["K"] not in KSIZES or not _is_int(P["K"]):
        raise ValueError(f"K={P['K']!r} must be one of {KSIZES}")
    if P["dtype"] not in DTYPES:
        raise ValueError(f"dtype {P['dtype']!r} is not one of {DTYPES}")
    return P


def _torch_dtype(name: str):
    import torch
    return {"uint8": torch.uint8, "fp16": torch.float16, "fp32": torch.float32}[name]


_ESIZE = {"uint8": 1, "fp16": 2, "fp32": 4}
EXCHANGES = {3: 19, 5: 132}                # compare-exchanges of the median network a pixel (module doc)


# ---------------------------------------------------------------- the kernel's launch
def _grid(planes: int, H: int, W: int, cfg) -> tuple:
    return (planes * triton.cdiv(H, cfg["BLOCK_Y"] * cfg["ROWS"]) * triton.cdiv(W, cfg["BLOCK_X"]),)


def _kernel_args(x, out, K: int, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    H, W = x.shape[-2:]
    return dict(X=x, OUT=out, H=H, W=W, KSIZE=K, BLOCK_Y=cfg["BLOCK_Y"], BLOCK_X=cfg["BLOCK_X"], ROWS=cfg["ROWS"])


def median_filter2d(x, ksize: int = 3, *, BLOCK_Y: int = 8, BLOCK_X: int = 64, ROWS: int = 2,
                    num_warps: int = 4, num_stages: int = 1):
    """out [N, C, H, W] in x's dtype: the ksize x ksize (3 / 5) median of each pixel's window, replicate
    border (cv2.medianBlur's). x: [N, C, H, W] uint8 / fp16 / fp32, contiguous. The tunables: the module doc."""
    import torch
    cfg = {"BLOCK_Y": BLOCK_Y, "BLOCK_X": BLOCK_X, "ROWS": ROWS, "num_warps": num_warps, "num_stages": num_stages}
    _check_cfg(cfg)
    if not _is_int(ksize) or ksize not in KSIZES:
        raise ValueError(f"ksize={ksize!r} must be one of {KSIZES}")
    if x.dim() != 4 or x.dtype not in (torch.uint8, torch.float16, torch.float32):
        raise ValueError(f"x must be a 4-d uint8 / float16 / float32 tensor [N, C, H, W]; got {tuple(x.shape)} "
                         f"{x.dtype}")
    if not x.is_contiguous():
        raise ValueError(f"x must be NCHW contiguous; got shape {tuple(x.shape)} strides {x.stride()}")
    N, C, H, W = x.shape
    if H * W > MAX_PLANE:
        raise ValueError(f"x's planes of H x W = {H} x {W} are too large: at most {MAX_PLANE} pixels")
    out = torch.empty_like(x, memory_format=torch.contiguous_format)
    if out.numel() == 0:
        return out
    g = _grid(N * C, H, W, cfg)
    if g[0] > 2**31 - 1:
        raise ValueError(f"x of shape {tuple(x.shape)} needs {g[0]} programs; at most 2**31 - 1")
    _kernel[g](**_kernel_args(x, out, ksize, cfg), num_warps=num_warps, num_stages=num_stages)
    return out


# ---------------------------------------------------------------- the launcher contract
def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """x [N, C, H, W] in the point's dtype: a noisy smooth image with salt-and-pepper impulses -- per plane a
    random low-frequency pattern (a product of a sine along x and a cosine along y, random periods 16-256
    pixels and phases) around 0.5, plus 0.04 Gaussian noise, then 12 % of the pixels set to 0 or 1 (half each),
    clamped to [0, 1]; uint8 scaled by 255 and rounded. Drawn on the device from a seeded generator; K."""
    import torch
    P = _check_point(point)
    N, C, H, W = P["N"], P["C"], P["H"], P["W"]
    dev = torch.device(device)
    g = torch.Generator(device=dev).manual_seed(int(seed))
    planes = N * C
    per = lambda lo, hi: lo + (hi - lo) * torch.rand((planes, 1, 1), generator=g, device=dev)
    fx = 2 * math.pi / per(16.0, 256.0)
    fy = 2 * math.pi / per(16.0, 256.0)
    ph = 2 * math.pi * torch.rand((planes, 1, 1), generator=g, device=dev)
    xs = torch.arange(W, device=dev, dtype=torch.float32)[None, None, :]
    ys = torch.arange(H, device=dev, dtype=torch.float32)[None, :, None]
    img = 0.04 * torch.randn((planes, H, W), generator=g, device=dev)
    img += 0.5 + 0.3 * torch.sin(fx * xs + ph) * torch.cos(fy * ys)
    u = torch.rand((planes, H, W), generator=g, device=dev)
    img = torch.where(u < 0.06, 0.0, torch.where(u < 0.12, 1.0, img)).clamp_(0.0, 1.0)
    if P["dtype"] == "uint8":
        x = (img * 255.0).round_().to(torch.uint8)
    else:
        x = img.to(_torch_dtype(P["dtype"]))
    return {"x": x.reshape(N, C, H, W), "K": P["K"]}


def launch(inputs, cfg):
    """out [N, C, H, W] in x's dtype."""
    return median_filter2d(inputs["x"], inputs["K"], BLOCK_Y=cfg["BLOCK_Y"], BLOCK_X=cfg["BLOCK_X"],
                           ROWS=cfg["ROWS"], num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])


def _windows(xp, K: int, H: int, W: int):
    """[K * K, planes, H, W]: the K x K shifted views of the replicate-padded planes xp [planes, H + K - 1,
    W + K - 1], stacked."""
    import torch
    return torch.stack([xp[:, dy:dy + H, dx:dx + W] for dy in range(K) for dx in range(K)])


def _pad_replicate(x, R: int):
    """x [planes, H, W] extended by R pixels each side by repeating the edge (any dtype: an index gather)."""
    import torch
    H, W = x.shape[-2:]
    ri = torch.arange(-R, H + R, device=x.device).clamp_(0, H - 1)
    ci = torch.arange(-R, W + R, device=x.device).clamp_(0, W - 1)
    return x[:, ri][:, :, ci]


def reference(inputs):
    """out [N, C, H, W] in float64: x widened, replicate-padded, its K x K shifted views stacked and
    torch.median taken over them (an odd count: the exact middle value), a few planes at a time."""
    import torch
    x, K = inputs["x"], inputs["K"]
    N, C, H, W = x.shape
    planes = x.reshape(N * C, H, W)
    out = torch.empty((N * C, H, W), dtype=torch.float64, device=x.device)
    step = max(1, 2**26 // max(1, K * K * H * W))
    for p0 in range(0, N * C, step):
        xp = _pad_replicate(planes[p0:p0 + step].double(), K // 2)
        out[p0:p0 + step] = _windows(xp, K, H, W).median(dim=0).values
    return out.reshape(N, C, H, W)


def torch_baseline(inputs):
    """What kornia.filters.median_blur does (with cv2's replicate border instead of its zero padding), in x's
    own dtype: the padded planes unfolded into [.., H, W, K, K] windows, flattened, torch.median over the last
    dimension."""
    x, K = inputs["x"], inputs["K"]
    N, C, H, W = x.shape
    xp = _pad_replicate(x.reshape(N * C, H, W), K // 2)
    win = xp.unfold(1, K, 1).unfold(2, K, 1).reshape(N * C, H, W, K * K)
    return win.median(dim=-1).values.reshape(N, C, H, W)


def bytes_moved(point) -> int:
    """x read once, out written once (2 N C H W elements). The K^2 - 1 other touches of each pixel by
    neighbouring windows (L1 inside a tile, L2 across the halo) are not counted."""
    P = _check_point(point)
    return 2 * _ESIZE[P["dtype"]] * P["N"] * P["C"] * P["H"] * P["W"]


def flops(point) -> int:
    """The comparison network's min / max operations: 2 x 19 (3 x 3) or 2 x 132 (5 x 5) a pixel (the few
    dead outputs the compiler drops counted too)."""
    P = _check_point(point)
    return 2 * EXCHANGES[P["K"]] * P["N"] * P["C"] * P["H"] * P["W"]


def grid(cfg, point) -> tuple:
    """The 1-D launch grid: N C cdiv(H, BLOCK_Y ROWS) cdiv(W, BLOCK_X) programs, column tile fastest, then
    the band of ROWS tiles, then the plane."""
    _check_cfg(cfg)
    P = _check_point(point)
    return _grid(P["N"] * P["C"], P["H"], P["W"], cfg)


def loop_iterations(cfg, point) -> int:
    """ROWS tiles a program (every program the same; a band past the plane's last row computes clamped rows
    and stores nothing)."""
    grid(cfg, point)
    return cfg["ROWS"]


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`: x and out [N, C, H, W] on the meta device
    (contiguous, as make_inputs draws them), H, W, K and the tile constants."""
    import torch
    P = _check_point(point)
    grid(cfg, P)
    x = torch.empty((P["N"], P["C"], P["H"], P["W"]), dtype=_torch_dtype(P["dtype"]), device="meta")
    out = torch.empty_like(x)
    return _kernel_args(x, out, P["K"], cfg)
