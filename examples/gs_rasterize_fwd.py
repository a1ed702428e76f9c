"""3D Gaussian Splatting's forward rasterization -- the alpha-compositing stage of the reference
diff-gaussian-rasterization (`renderCUDA`) and of gsplat's `rasterize_to_pixels` -- a bare
@triton.jit kernel + its launcher.

The image is cut into 16 x 16-pixel tiles (tiles_x = cdiv(W, 16) by tiles_y = cdiv(H, 16), tile t =
ty tiles_x + tx). An earlier pass (projection, then the sort: `bin_gaussians` here) has produced, for
every tile, a range [start, end) into point_list, the ids of the Gaussians whose 3-sigma rectangle
touches the tile, sorted front to back. Per pixel (x, y) of a tile (pixel centres at integer
coordinates, as the reference's pixf = (x, y)), with T = 1 and C = 0, for the tile's Gaussians in order
(position j = 0, 1, ...):

    d      = mean2d[g] - (x, y)
    power  = -0.5 (conic_xx d.x^2 + conic_yy d.y^2) - conic_xy d.x d.y
    alpha  = min(0.99, opacity[g] exp(power))              skipped if power > 0 or alpha < 1/255
    test_T = T (1 - alpha)                                  if test_T < 1e-4: the pixel is done, Gaussian j
                                                            not composited and nothing after it
    C     += colour[g] alpha T;  T = test_T;  n_contrib = j + 1

    out[c, y, x] = C[c] + T background[c];  final_T[y, x] = T;  n_contrib[y, x] (int32: 1 + the list
    position of the last Gaussian composited, 0 if none -- the reference's last_contributor)

Inputs (the reference's buffers): means2d [N, 2] fp32, conic_opacity [N, 4] fp32 (conic xx, xy, yy and
the opacity: the reference's float4), colours [N, 3] fp32 -- or fp16 / bf16 (a viewer that keeps its
SH-evaluated colours in half precision) -- all with contiguous rows; N is the model's Gaussian count:
the projection writes every slot, the lists only reference the visible ones. ranges [tiles, 2] int32,
point_list [n_pairs] int32, background [3] fp32. Outputs: out [3, H, W], final_T [H, W] fp32 and
n_contrib [H, W] int32, contiguous (the reference's CHW layout).

Work split: a program owns a SUB_W x SUB_H block of one tile's pixels (the whole tile at 16 x 16;
PARTS = (16 / SUB_W)(16 / SUB_H) blocks a tile). A 1-D grid of tiles PARTS programs, a tile's blocks
adjacent in launch order (they read the same list, from L1 / L2), tiles in row-major order. The
program loads its tile's range and walks the list BATCH Gaussians a step (a `while` loop with
data-dependent bounds):

  1. the gather: BATCH ids (one vector load), then each Gaussian's mean, conic, opacity and colour
     at id x 2 / 4 / 3 (scattered 4-byte loads; the slots past the range's end load Gaussian 0's
     fields with the opacity masked to 0, so they composite nothing);
  2. a [BATCH, SUB_W SUB_H] tile of the quadratic form (the -0.5 and log2(e) folded into per-Gaussian
     coefficients, one ex2 per element), alpha and its two skip tests: a = alpha (0 if skipped),
     om = 1 - a;
  3. the compositing without a sequential loop: A_j = om_0 ... om_j, one in-register cumulative
     product along the step's Gaussians, so the transmittance after j is T A_j; j is composited iff
     A_j >= thr = 1e-4 / T (the products only fall: those j are a prefix of the step, as the
     sequential rule stops at the first failing one), with the weight alpha_j T_before = T a_j A_j /
     om_j (om >= 0.01);
  4. reductions along the step: C += T sum_j w_j colour_j (3), T *= the last composited A_j (a min),
     the pixel is done if the step's last product A falls below thr (a min), n_contrib = the max of j
     + 1 over the composited j with alpha > 0 (an integer max). A done pixel keeps -T (thr = +inf:
     nothing composites again), so "done" costs no register of its own;
  5. the early exit: the block's max T > 0 (a cross-warp reduction: the reference's
     __syncthreads_count); the loop stops once every pixel of the block is done or the list ends.
Finally C + T background, T and n_contrib are stored (rows of SUB_W contiguous pixels; the offsets
recomputed from the pixels' float coordinates, so no integer copy of them stays live across the loop:
without that, ptxas parked a few of them in local memory on the 2-warp 16 x 16 blocks).

The default layout puts the pixels on the lanes and warps and a step's Gaussians in each thread's
registers (one thread holds all BATCH Gaussians' 9 fields for its pixels: the scan and the
reductions are sequential in the thread, no shuffles). Where the block has fewer pixels than
threads (8 x 4 on 2-8 warps, 8 x 8 or 16 x 4 on 4-8, 16 x 8 or 8 x 16 on 8) the step's Gaussians are
split over warps instead: the scan and the step reductions cross warps through shared memory.

Masks: pixels past the image (EVEN_HW = 0: 16 does not divide H or W) start done (T = -1) -- they
never composite or hold the program alive -- and are masked at the store; a block entirely past the
image runs no step. The list's tail inside a step is masked by opacity 0. Offsets: int32 throughout
-- the wrapper checks 3 H W, 4 N and n_pairs + 64 below 2^31 (a 16K x 16K image holds 805 M output
words).

Numerics: fp32, alpha as the reference's (exp2 of the pre-scaled quadratic: a few ulps from expf);
the products T are formed by the scan a step at a time rather than one by one, and T A >= 1e-4 is
tested as A >= 1e-4 / T (a few ulps each), so a pixel whose T lands within ~1e-6 of 1e-4 (or an alpha
within ~1e-6 of 1/255) may decide the other way; anything else matches the sequential reference to
fp32 rounding. A flip at 1/255 moves its pixel by up to alpha T colour < 0.004 T: at the fp32 point
(garden) torch_baseline's fp32 differs from the float64 reference by at most 4.8e-4 / 6e-5 / 8e-5
(seeds 0 / 1 / 2: zero to four such pixels a render; relative L2 1e-7 - 5e-7), within the fp32
gate's 1e-3 an element, and the kernel's fp32 is expected to flip as rarely.

Tunables: SUB_W x SUB_H (the program's block: 8 or 16 by 4, 8 or 16 -- 32 to 256 pixels; smaller
blocks re-walk the list PARTS times but each stops when its own pixels are done), BATCH (4 / 8 / 16
Gaussians a step: the gather's loads in flight and the loop's per-step overhead against registers --
9 fields a Gaussian a thread -- and the overshoot past the exit and the list's end), num_warps (2 / 4
/ 8: pixels a thread, or the step split over warps, above), num_stages held at 1 (the step's gathers
are replicated per thread and the loop is a data-dependent `while`: nothing for the pipeliner; the
same binary at every num_stages). On sm_90 (triton 3.6 and 3.9) every config of the sweep compiles at
every point without spills: 32-188 registers under 3.6 (32-228 under 3.9), the most for the 16 x 16
block on 2 warps with 16 a step (4 pixels x 16 Gaussians a thread; 147-149 with 8 a step), BASELINE
64-72 (53-59); shared memory 8-32 B where the pixels cover the threads (the block-wide reductions'
partials), 512 B - 8 KiB where the step is split over warps (the scan's and reductions' exchange).
On sm_120 (99 KiB a block) BASELINE, the 2-warp 16 x 16 block with 16 a step and the 8 x 4 block on 8
warps compile without spills too (152-255 registers for the second).
The hooks read the seed-0 scene of a point (make_scene, then tile_counts -- no sort; cached a point):
grid, bytes_moved, flops, example_args' ranges (on the CPU: each program's scalar loads) and
cta_iterations, each program's cdiv(its list's length, BATCH) -- an upper bound of its walk: a block
whose pixels all saturate stops early, and where depends on the render itself (a CPU replay of a
point takes minutes). Replays of reduced copies of the scenes (a quarter of the area at the same
density for garden and truck, a sixteenth for bicycle) leave 62 / 45 / 75 % of the pixels
unsaturated, and their blocks walk 77 / 51 / 89 % of their lists as whole tiles, 70 / 43 / 86 % as
8 x 4 blocks: the bound overstates a launch's steps 1.1-2.3x, the smaller blocks' the most.
Problem parameters (a workload point): H, W (the image), N (the model's Gaussians: the attribute
arrays' length), visible (the fraction of N inside the view, in the tiles' lists), sigma (the median
screen-space standard deviation of the scene's Gaussians in pixels, before the reference's 0.3 px^2
low-pass), dtype (the colours': fp32 / fp16 / bf16). make_scene draws the scene from a seed.
"""

from __future__ import annotations

import functools
import math

import triton
import triton.language as tl

TILE = 16                    # the rasterizer's tile (BLOCK_X = BLOCK_Y = 16)
T_MIN = 1e-4                 # a pixel is done once its transmittance would fall below this
ALPHA_MIN = 1.0 / 255.0      # a Gaussian fainter than this at the pixel is skipped
ALPHA_MAX = 0.99             # alpha's clamp
MAX_INT32 = 2**31 - 1


@triton.jit
def _kernel(MEANS, CONIC_OP, COLORS, BG, RANGES, IDS, OUT, FINAL_T, N_CONTRIB, H, W, tiles_x,
            EVEN_HW: tl.constexpr, SUB_W: tl.constexpr, SUB_H: tl.constexpr, BATCH: tl.constexpr):
    PARTS_X: tl.constexpr = 16 // SUB_W
    PARTS: tl.constexpr = PARTS_X * (16 // SUB_H)
    PIX: tl.constexpr = SUB_W * SUB_H
    LOG2E: tl.constexpr = 1.4426950408889634
    T_MIN_: tl.constexpr = 0.0001                         # T_MIN, ALPHA_MIN, ALPHA_MAX
    ALPHA_MIN_: tl.constexpr = 1.0 / 255.0
    ALPHA_MAX_: tl.constexpr = 0.99
    pid = tl.program_id(0)
    tile = pid // PARTS                                  # a tile's blocks adjacent in launch order
    part = pid - tile * PARTS
    ty = tile // tiles_x
    tx = tile - ty * tiles_x
    r = tl.arange(0, PIX)
    x = tx * 16 + (part % PARTS_X) * SUB_W + r % SUB_W
    y = ty * 16 + (part // PARTS_X) * SUB_H + r // SUB_W
    if EVEN_HW:
        inside = r < PIX
    else:
        inside = (x < W) & (y < H)
    pxf = x.to(tl.float32)
    pyf = y.to(tl.float32)
    start = tl.load(RANGES + 2 * tile)
    end = tl.load(RANGES + 2 * tile + 1)

    # T < 0 marks a done pixel (past the image, or saturated): T A <= 0 then, below every threshold
    T = tl.where(inside, 1.0, -1.0)
    c0 = tl.zeros((PIX,), tl.float32)
    c1 = tl.zeros((PIX,), tl.float32)
    c2 = tl.zeros((PIX,), tl.float32)
    last = tl.zeros((PIX,), tl.int32)
    thr = tl.where(inside, T_MIN_, float("inf"))          # T_MIN / T: a done pixel composites nothing
    live = tl.max(T, axis=0) > 0.0
    jj = tl.arange(0, BATCH)
    k = start
    while (k < end) & live:
        offs = k + jj
        gm = offs < end
        gid = tl.load(IDS + offs, mask=gm, other=0)
        mx = tl.load(MEANS + 2 * gid)
        my = tl.load(MEANS + 2 * gid + 1)
        ca = tl.load(CONIC_OP + 4 * gid)
        cb = tl.load(CONIC_OP + 4 * gid + 1)
        cc = tl.load(CONIC_OP + 4 * gid + 2)
        op = tl.load(CONIC_OP + 4 * gid + 3, mask=gm, other=0.0)   # the tail composites nothing
        cr = tl.load(COLORS + 3 * gid).to(tl.float32)
        cg = tl.load(COLORS + 3 * gid + 1).to(tl.float32)
        cbl = tl.load(COLORS + 3 * gid + 2).to(tl.float32)
        # the quadratic form in log2 units: power log2(e)
        qa = (-0.5 * LOG2E) * ca
        qb = -LOG2E * cb
        qc = (-0.5 * LOG2E) * cc
        dx = mx[:, None] - pxf[None, :]                  # [BATCH, PIX]
        dy = my[:, None] - pyf[None, :]
        p2 = dx * (qa[:, None] * dx + qb[:, None] * dy) + qc[:, None] * (dy * dy)
        alpha = tl.minimum(op[:, None] * tl.math.exp2(p2), ALPHA_MAX_)
        a = tl.where((p2 > 0.0) | (alpha < ALPHA_MIN_), 0.0, alpha)
        om = 1.0 - a
        A = tl.cumprod(om, axis=0)                       # prod_{i <= j} om_i over the step
        inc = A >= thr[None, :]                          # T A >= 1e-4: a prefix of the step
        w = tl.where(inc, a * (A / om), 0.0)             # alpha_j prod_{i < j} om_i
        c0 += T * tl.sum(w * cr[:, None], axis=0)
        c1 += T * tl.sum(w * cg[:, None], axis=0)
        c2 += T * tl.sum(w * cbl[:, None], axis=0)
        pos = offs - start + 1
        last = tl.maximum(last, tl.max(tl.where(w > 0.0, pos[:, None], 0), axis=0))
        t_new = T * tl.min(tl.where(inc, A, 1.0), axis=0)
        T = tl.where(tl.min(A, axis=0) < thr, -tl.abs(t_new), t_new)
        thr = tl.where(T > 0.0, T_MIN_ / T, float("inf"))
        live = tl.max(T, axis=0) > 0.0
        k += BATCH
    T = tl.abs(T)

    # the store's offsets from the float coordinates (the loop keeps no integer copy of them live)
    xs = pxf.to(tl.int32)
    ys = pyf.to(tl.int32)
    HW = H * W
    o = ys * W + xs
    b0 = tl.load(BG)
    b1 = tl.load(BG + 1)
    b2 = tl.load(BG + 2)
    if EVEN_HW:
        tl.store(OUT + o, c0 + T * b0)
        tl.store(OUT + HW + o, c1 + T * b1)
        tl.store(OUT + 2 * HW + o, c2 + T * b2)
        tl.store(FINAL_T + o, T)
        tl.store(N_CONTRIB + o, last)
    else:
        ok = (xs < W) & (ys < H)
        tl.store(OUT + o, c0 + T * b0, mask=ok)
        tl.store(OUT + HW + o, c1 + T * b1, mask=ok)
        tl.store(OUT + 2 * HW + o, c2 + T * b2, mask=ok)
        tl.store(FINAL_T + o, T, mask=ok)
        tl.store(N_CONTRIB + o, last, mask=ok)


# ---------------------------------------------------------------- launcher
ROLE = "held-out-27"
DTYPES = ("fp32", "fp16", "bf16")            # the colours'; the geometry is fp32 always
TUNABLES = ("SUB_W", "SUB_H", "BATCH", "num_warps", "num_stages")
BASELINE = {"SUB_W": 16, "SUB_H": 16, "BATCH": 8, "num_warps": 8, "num_stages": 1}
# the study's sweep: 2 x 3 x 3 x 3 = 54 configs -- blocks of 32-256 pixels, 4-16 Gaussians a step,
# 2-8 warps (from 32 pixels a thread-row of 4-16 registers each down to the step split over warps)
SWEEP_AXES = {"SUB_W": [8, 16], "SUB_H": [4, 8, 16], "BATCH": [4, 8, 16], "num_warps": [2, 4, 8],
              "num_stages": [1]}

# Views of real captures at their real sizes. The scene is synthetic (make_scene): clusters of
# mostly opaque Gaussians below a horizon (objects, ground) with a heavy-tailed density, and a
# sparse band of large faint ones above it (sky, distant background), so that pixels in dense regions
# saturate early, sky pixels never do, and the tiles' list lengths have a heavy tail.
POINTS = [
    # Mip-NeRF 360 garden at its evaluation scale (images_4: 1297 x 840), a trained model of 5.8 M
    # Gaussians, 32 % of them in this view: 5.0 M tile-Gaussian pairs over 82 x 53 = 4346 tiles (list
    # lengths 225-11273, median 1015); fp32 colours (the training forward); 16 divides neither side
    {"H": 840, "W": 1297, "N": 5_800_000, "visible": 0.32, "sigma": 0.6, "dtype": "fp32"},
    # Mip-NeRF 360 bicycle (6.1 M Gaussians, half in view) in a viewer at 4K UHD (3840 x 2160: 3.1x
    # the training scale, so every splat 3.1x wider): 26.5 M pairs over 240 x 135 = 32400 tiles
    # (120-7678, median 746); fp16 colours; 16 divides both sides (no pixel mask)
    {"H": 2160, "W": 3840, "N": 6_100_000, "visible": 0.5, "sigma": 1.8, "dtype": "fp16"},
    # Tanks and Temples truck (1957 x 1091), 2.5 M Gaussians, 60 % in view: 5.2 M pairs over 123 x 69
    # = 8487 tiles (63-5785, median 559); bf16 colours; 16 divides neither side
    {"H": 1091, "W": 1957, "N": 2_500_000, "visible": 0.6, "sigma": 0.8, "dtype": "bf16"},
]


def _torch_dtype(name: str):
    import torch
    try:
        return {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}") from None


def _esize(name: str) -> int:
    if name not in DTYPES:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}")
    return 4 if name == "fp32" else 2


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _check_point(point) -> tuple[int, int, int, float, float, str]:
    """(H, W, N, visible, sigma, dtype), every field checked."""
    for k in ("H", "W", "N"):
        v = point[k]
        if not _is_int(v) or v < 1:
            raise ValueError(f"{k}={v!r} must be a positive int")
    vis = point.get("visible", 1.0)
    if not isinstance(vis, (int, float)) or isinstance(vis, bool) or not 0.0 < vis <= 1.0:
        raise ValueError(f"visible={vis!r} must be a fraction in (0, 1]")
    sig = point.get("sigma", 1.0)
    if not isinstance(sig, (int, float)) or isinstance(sig, bool) or not 0.0 < sig <= 64.0:
        raise ValueError(f"sigma={sig!r} must be a positive number of pixels (at most 64)")
    dt = point.get("dtype", "fp32")
    _esize(dt)
    H, W, N = point["H"], point["W"], point["N"]
    if 3 * H * W > MAX_INT32 or 4 * N > MAX_INT32:
        raise ValueError(f"H={H}, W={W}, N={N}: 3 H W and 4 N must stay below 2^31 (int32 offsets)")
    return H, W, N, float(vis), float(sig), dt


def _check_cfg(cfg) -> None:
    if cfg["SUB_W"] not in (4, 8, 16) or not _is_int(cfg["SUB_W"]):
        raise ValueError(f"SUB_W={cfg['SUB_W']!r} must be 4, 8 or 16 (a divisor of the 16-pixel tile)")
    if cfg["SUB_H"] not in (1, 2, 4, 8, 16) or not _is_int(cfg["SUB_H"]):
        raise ValueError(f"SUB_H={cfg['SUB_H']!r} must be 1, 2, 4, 8 or 16 (a divisor of the 16-pixel tile)")
    if cfg["BATCH"] not in (2, 4, 8, 16, 32, 64) or not _is_int(cfg["BATCH"]):
        raise ValueError(f"BATCH={cfg['BATCH']!r} must be a power of two from 2 to 64")
    if cfg["num_warps"] not in (1, 2, 4, 8, 16) or not _is_int(cfg["num_warps"]):
        raise ValueError(f"num_warps={cfg['num_warps']!r} must be a power of two from 1 to 16")
    st = cfg.get("num_stages", 1)
    if not _is_int(st) or st < 1:
        raise ValueError(f"num_stages={st!r} must be a positive int")


def _parts(cfg) -> int:
    """Programs a tile: (16 / SUB_W)(16 / SUB_H)."""
    return (TILE // cfg["SUB_W"]) * (TILE // cfg["SUB_H"])


def _tiles(H: int, W: int) -> tuple[int, int]:
    """(tiles_x, tiles_y)."""
    return triton.cdiv(W, TILE), triton.cdiv(H, TILE)


def _kernel_args(means2d, conic_opacity, colors, bg, ranges, point_list, out, final_t, n_contrib, H, W, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    return dict(MEANS=means2d, CONIC_OP=conic_opacity, COLORS=colors, BG=bg, RANGES=ranges, IDS=point_list,
                OUT=out, FINAL_T=final_t, N_CONTRIB=n_contrib, H=H, W=W, tiles_x=_tiles(H, W)[0],
                EVEN_HW=int(H % TILE == 0 and W % TILE == 0), SUB_W=cfg["SUB_W"], SUB_H=cfg["SUB_H"],
                BATCH=cfg["BATCH"])


def rasterize_gaussians(means2d, conic_opacity, colors, ranges, point_list, image_height: int, image_width: int,
                        background=None, *, SUB_W: int = 16, SUB_H: int = 16, BATCH: int = 8, num_warps: int = 8,
                        num_stages: int = 1):
    """Alpha-composite the tiles' depth-sorted Gaussians (the reference's renderCUDA).

    means2d [N, 2] fp32 (pixel coordinates), conic_opacity [N, 4] fp32 (conic xx, xy, yy, opacity),
    colors [N, 3] fp32 / fp16 / bf16, ranges [tiles_y tiles_x, 2] int32 (or [tiles_y, tiles_x, 2]:
    each tile's [start, end) in point_list, tiles of 16 x 16 pixels in row-major order), point_list
    [n_pairs] int32 (Gaussian ids, front to back within each tile's range), background [3] fp32 (None:
    black). Returns (out [3, H, W] fp32 = colour + final_T x background, final_T [H, W] fp32,
    n_contrib [H, W] int32), contiguous. Rows of the Gaussian arrays are made contiguous if they are
    not; the ids and ranges are trusted (ids < N, ranges inside point_list, as the sort produced them)."""
    import torch
    H, W = image_height, image_width
    if not _is_int(H) or not _is_int(W) or H < 0 or W < 0:
        raise ValueError(f"image size {H!r} x {W!r} must be non-negative ints")
    cfg = {"SUB_W": SUB_W, "SUB_H": SUB_H, "BATCH": BATCH, "num_warps": num_warps, "num_stages": num_stages}
    _check_cfg(cfg)
    if means2d.dim() != 2 or means2d.shape[1] != 2 or means2d.dtype != torch.float32:
        raise ValueError(f"means2d must be [N, 2] fp32; got {tuple(means2d.shape)} {means2d.dtype}")
    N = means2d.shape[0]
    if tuple(conic_opacity.shape) != (N, 4) or conic_opacity.dtype != torch.float32:
        raise ValueError(f"conic_opacity must be [N={N}, 4] fp32; got {tuple(conic_opacity.shape)} "
                         f"{conic_opacity.dtype}")
    if tuple(colors.shape) != (N, 3) or colors.dtype not in (torch.float32, torch.float16, torch.bfloat16):
        raise ValueError(f"colors must be [N={N}, 3] fp32 / fp16 / bf16; got {tuple(colors.shape)} {colors.dtype}")
    tx, ty = _tiles(H, W)
    if ranges.dtype != torch.int32 or ranges.shape[-1] != 2 or ranges.numel() != 2 * tx * ty:
        raise ValueError(f"ranges must be int32 [{ty} x {tx} tiles, 2] for a {H} x {W} image; got "
                         f"{tuple(ranges.shape)} {ranges.dtype}")
    if point_list.dim() != 1 or point_list.dtype != torch.int32:
        raise ValueError(f"point_list must be a 1-D int32 tensor; got {tuple(point_list.shape)} {point_list.dtype}")
    if background is None:
        background = torch.zeros(3, dtype=torch.float32, device=means2d.device)
    if tuple(background.shape) != (3,) or background.dtype != torch.float32:
        raise ValueError(f"background must be [3] fp32; got {tuple(background.shape)} {background.dtype}")
    devs = {t.device for t in (means2d, conic_opacity, colors, ranges, point_list, background)}
    if len(devs) != 1:
        raise ValueError(f"all tensors must be on one device; got {sorted(str(d) for d in devs)}")
    if 3 * H * W > MAX_INT32 or 4 * N > MAX_INT32 or point_list.numel() + 64 > MAX_INT32:
        raise ValueError(f"3 H W = {3 * H * W}, 4 N = {4 * N} and n_pairs + 64 = {point_list.numel() + 64} must stay "
                         f"below 2^31 (the kernel's int32 offsets)")
    dev = means2d.device
    out = torch.empty((3, H, W), dtype=torch.float32, device=dev)
    final_t = torch.empty((H, W), dtype=torch.float32, device=dev)
    n_contrib = torch.empty((H, W), dtype=torch.int32, device=dev)
    if H == 0 or W == 0:
        return out, final_t, n_contrib
    if N == 0:                                   # no Gaussian: every range must be empty
        means2d = torch.zeros((1, 2), dtype=torch.float32, device=dev)
        conic_opacity = torch.zeros((1, 4), dtype=torch.float32, device=dev)
        colors = torch.zeros((1, 3), dtype=colors.dtype, device=dev)
    if point_list.numel() == 0:
        point_list = torch.zeros((1,), dtype=torch.int32, device=dev)
    args = _kernel_args(means2d.contiguous(), conic_opacity.contiguous(), colors.contiguous(), background.contiguous(),
                        ranges.contiguous(), point_list.contiguous(), out, final_t, n_contrib, H, W, cfg)
    _kernel[(tx * ty * _parts(cfg),)](**args, num_warps=num_warps, num_stages=num_stages)
    return out, final_t, n_contrib


# ---------------------------------------------------------------- the scene and the sort
def make_scene(point, seed: int = 0) -> dict:
    """A projected scene in screen space, drawn on the CPU from a seeded torch.Generator (float32):
    of the model's N Gaussians, n = round(visible N) sit at random slots of the arrays (the others are
    culled: radius 0, in no list; their fields finite). 90 % of the visible ones form K = max(16, n /
    10000) clusters below a horizon at 0.3 H (objects, ground: centre uniform, extent log-uniform in
    2-30 % of min(H, W), wider than tall, member count ~ extent^1.6 x a lognormal -- a heavy-tailed
    density), near (depth 1-31 by cluster, 3 % jitter); 80 % of them opaque (0.6-1, skewed to 1),
    20 % faint (0.02-0.32); colour the cluster's, jittered. 10 % are sky: uniform over the top 45 %,
    4x wider, faint (0.02-0.27), far (depth 50-100). Screen-space std: sigma x lognormal(0.6) (capped at
    10 % of min(H, W)), anisotropic (axis ratio exp(0.8 |N(0, 1)|)) at a uniform angle; the covariance
    gets the reference's 0.3 px^2 low-pass before its inverse (the conic) and the radius (ceil(3 sqrt(the
    larger eigenvalue)), its max(0.1, .) in the discriminant). Means inside the image. Returns
    means2d [N, 2], conic_opacity [N, 4], colors [N, 3] (fp32), depths [N], radii [N] int32, bg [3]."""
    import torch
    H, W, N, vis, sigma, _ = _check_point(point)
    gen = torch.Generator(device="cpu").manual_seed(seed)

    def U(n):
        return torch.rand(n, generator=gen)

    def G(n):
        return torch.randn(n, generator=gen)

    n = max(1, int(round(vis * N)))
    n_sky = n // 10
    n_obj = n - n_sky
    K = max(16, n // 10000)
    side = float(min(H, W))
    cx = U(K) * W
    cy = (0.3 + 0.7 * U(K)) * H
    ext = 0.02 * side * torch.exp(math.log(15.0) * U(K))
    wgt = ext ** 1.6 * torch.exp(0.8 * G(K))
    cl = torch.multinomial(wgt / wgt.sum(), n_obj, replacement=True, generator=gen)
    mx = torch.cat([cx[cl] + ext[cl] * G(n_obj), U(n_sky) * W]).clamp_(0.0, W - 1.0)
    my = torch.cat([cy[cl] + 0.5 * ext[cl] * G(n_obj), U(n_sky) * (0.45 * H)]).clamp_(0.0, H - 1.0)
    depth = torch.cat([(1.0 + 30.0 * U(K))[cl] * torch.exp(0.03 * G(n_obj)), 50.0 + 50.0 * U(n_sky)])
    s = sigma * torch.exp(0.6 * G(n))
    s[n_obj:] *= 4.0
    s.clamp_(max=0.1 * side)
    e = 0.8 * G(n).abs()
    s1, s2 = s * torch.exp(0.5 * e), s * torch.exp(-0.5 * e)
    th = math.pi * U(n)
    c, sn = torch.cos(th), torch.sin(th)
    a = c * c * s1 * s1 + sn * sn * s2 * s2 + 0.3
    b = c * sn * (s1 * s1 - s2 * s2)
    d = sn * sn * s1 * s1 + c * c * s2 * s2 + 0.3
    det = a * d - b * b
    mid = 0.5 * (a + d)
    radius = torch.ceil(3.0 * torch.sqrt(mid + torch.sqrt(torch.clamp(mid * mid - det, min=0.1))))
    op = torch.cat([torch.where(U(n_obj) < 0.8, 0.6 + 0.4 * U(n_obj) ** 0.25, 0.02 + 0.3 * U(n_obj)),
                    0.02 + 0.25 * U(n_sky)])
    base = U((K, 3))
    sky = torch.tensor([0.55, 0.7, 0.9])
    col = torch.cat([base[cl] + 0.12 * G((n_obj, 3)), sky + 0.08 * G((n_sky, 3))]).clamp_(0.0, 1.0)
    bg = U(3)

    slots = torch.randperm(N, generator=gen)[:n]
    means2d = torch.zeros((N, 2))
    means2d[:, 0] = 0.5 * W
    means2d[:, 1] = 0.5 * H
    conic_opacity = torch.zeros((N, 4))
    conic_opacity[:, 0] = 1.0
    conic_opacity[:, 2] = 1.0
    colors = torch.zeros((N, 3))
    depths = torch.ones((N,))
    radii = torch.zeros((N,), dtype=torch.int32)
    means2d[slots] = torch.stack([mx, my], 1)
    conic_opacity[slots] = torch.stack([d / det, -b / det, a / det, op], 1)
    colors[slots] = col
    depths[slots] = depth
    radii[slots] = radius.to(torch.int32)
    return {"means2d": means2d, "conic_opacity": conic_opacity, "colors": colors, "depths": depths, "radii": radii,
            "bg": bg}


def _rects(means2d, radii, H: int, W: int):
    """The tiles each Gaussian touches (the reference's getRect): [x0, x1) x [y0, y1), clamped to the
    grid; empty for radius 0."""
    import torch
    tx, ty = _tiles(H, W)
    r = radii.to(torch.float32)
    mx, my = means2d[:, 0], means2d[:, 1]
    x0 = torch.floor((mx - r) / TILE).clamp(0, tx).long()
    x1 = torch.floor((mx + r + (TILE - 1)) / TILE).clamp(0, tx).long()
    y0 = torch.floor((my - r) / TILE).clamp(0, ty).long()
    y1 = torch.floor((my + r + (TILE - 1)) / TILE).clamp(0, ty).long()
    on = radii > 0
    x1 = torch.where(on, torch.maximum(x1, x0), x0)
    y1 = torch.where(on, torch.maximum(y1, y0), y0)
    return x0, x1, y0, y1


def bin_gaussians(means2d, radii, depths, image_height: int, image_width: int):
    """The sort before the rasterizer (the reference's duplicateWithKeys, radix sort and
    identifyTileRanges, in torch): one (tile, depth) key a tile a Gaussian touches, sorted (stable:
    equal depths keep the id order), then each tile's [start, end). depths > 0 (their fp32 bits sort
    as ints). Returns (ranges [tiles, 2] int32, point_list [n_pairs] int32), on the inputs' device."""
    import torch
    H, W = image_height, image_width
    tx, ty = _tiles(H, W)
    x0, x1, y0, y1 = _rects(means2d, radii, H, W)
    wx = x1 - x0
    cnt = wx * (y1 - y0)
    dev = means2d.device
    gid = torch.repeat_interleave(torch.arange(means2d.shape[0], device=dev), cnt)
    first = torch.cumsum(cnt, 0) - cnt
    loc = torch.arange(gid.numel(), device=dev) - first[gid]
    w = wx[gid]
    tile = (y0[gid] + loc // w) * tx + x0[gid] + loc % w
    key = (tile << 32) | depths.to(torch.float32).view(torch.int32)[gid].to(torch.int64)
    _, order = torch.sort(key, stable=True)
    point_list = gid[order].to(torch.int32)
    n_per = torch.bincount(tile, minlength=tx * ty)
    end = torch.cumsum(n_per, 0)
    ranges = torch.stack([end - n_per, end], 1).to(torch.int32)
    return ranges, point_list


def tile_counts(means2d, radii, image_height: int, image_width: int):
    """Each tile's list length, [tiles_y, tiles_x] int64, without the sort: the rectangles summed on a
    2-D difference array (equal to bin_gaussians' range lengths)."""
    import torch
    H, W = image_height, image_width
    tx, ty = _tiles(H, W)
    x0, x1, y0, y1 = _rects(means2d, radii, H, W)
    keep = (x1 > x0) & (y1 > y0)
    x0, x1, y0, y1 = x0[keep], x1[keep], y0[keep], y1[keep]
    d = torch.zeros(((ty + 1) * (tx + 1),), dtype=torch.int64)
    for yy, xx, sgn in ((y0, x0, 1), (y0, x1, -1), (y1, x0, -1), (y1, x1, 1)):
        d.index_add_(0, (yy * (tx + 1) + xx).cpu(), torch.full((yy.numel(),), sgn, dtype=torch.int64))
    return d.view(ty + 1, tx + 1).cumsum(0).cumsum(1)[:ty, :tx]


def _key(point) -> tuple:
    return tuple(sorted(point.items()))


@functools.lru_cache(maxsize=8)
def _plan(key: tuple) -> tuple:
    """For the seed-0 scene of a point: (per-tile list lengths, row-major, as a tuple; visible
    Gaussians)."""
    point = dict(key)
    H, W, _, _, _, _ = _check_point(point)
    sc = make_scene(point, 0)
    cnt = tile_counts(sc["means2d"], sc["radii"], H, W)
    return tuple(cnt.flatten().tolist()), int((sc["radii"] > 0).sum())


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """make_scene(point, seed) moved to `device`, colours cast to the point's dtype, then binned there
    (bin_gaussians: the same lists on any device); the image size."""
    import torch
    H, W, _, _, _, dt = _check_point(point)
    sc = make_scene(point, seed)
    sc = {k: v.to(device) for k, v in sc.items()}
    sc["colors"] = sc["colors"].to(_torch_dtype(dt))
    ranges, point_list = bin_gaussians(sc["means2d"], sc["radii"], sc["depths"], H, W)
    return dict(sc, ranges=ranges, point_list=point_list, H=H, W=W)


def launch(inputs, cfg):
    """[4, H, W] fp32: the image's 3 channels (background included), then final_T (n_contrib is
    rasterize_gaussians' third output; the tests compare it apart, exactly)."""
    import torch
    out, final_t, _ = rasterize_gaussians(inputs["means2d"], inputs["conic_opacity"], inputs["colors"],
                                          inputs["ranges"], inputs["point_list"], inputs["H"], inputs["W"],
                                          inputs["bg"], SUB_W=cfg["SUB_W"], SUB_H=cfg["SUB_H"], BATCH=cfg["BATCH"],
                                          num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
    return torch.cat([out, final_t[None]], 0)


def _tile_pixels(H: int, W: int, device):
    """Per tile (row-major) its 256 pixels' x, y (row-major in the tile) and whether they lie inside."""
    import torch
    tx, ty = _tiles(H, W)
    t = torch.arange(tx * ty, device=device)
    r = torch.arange(TILE * TILE, device=device)
    x = (t % tx)[:, None] * TILE + (r % TILE)[None, :]
    y = (t // tx)[:, None] * TILE + (r // TILE)[None, :]
    return x, y, (x < W) & (y < H)


def _to_image(v, H: int, W: int):
    """[tiles, 256, ...] per-tile pixels -> [..., H, W]."""
    tx, ty = _tiles(H, W)
    rest = v.shape[2:]
    img = v.reshape(ty, tx, TILE, TILE, *rest).permute(*range(4, 4 + len(rest)), 0, 2, 1, 3)
    return img.reshape(*rest, ty * TILE, tx * TILE)[..., :H, :W]


def composite_reference(inputs, dtype=None):
    """The reference's per-pixel loop, sequential along each tile's list (vectorised over tiles and
    pixels), in float64 by default: (out [3, H, W], final_T [H, W], n_contrib [H, W] int32, margin
    [H, W], stop [H, W] int32) -- margin the smallest relative distance of any decision the pixel took
    (alpha against 1/255, test_T against 1e-4) from its threshold: a pixel with margin below ~1e-5 may
    decide the other way in fp32; stop the list position at which the pixel became done (-1: never).
    The tiles still walking are compacted as the others finish."""
    import torch
    dt = dtype or torch.float64
    H, W = inputs["H"], inputs["W"]
    dev = inputs["means2d"].device
    x, y, inside = _tile_pixels(H, W, dev)
    rng = inputs["ranges"].reshape(-1, 2).long()
    ids = inputs["point_list"].long()
    top = max(ids.numel() - 1, 0)
    means = inputs["means2d"].to(dt)
    co = inputs["conic_opacity"].to(dt)
    col = inputs["colors"].to(dt)
    nt, npx = rng.shape[0], TILE * TILE
    T = torch.ones((nt, npx), dtype=dt, device=dev)
    C = torch.zeros((nt, npx, 3), dtype=dt, device=dev)
    last = torch.zeros((nt, npx), dtype=torch.int32, device=dev)
    margin = torch.full((nt, npx), float("inf"), dtype=dt, device=dev)
    stop_at = torch.full((nt, npx), -1, dtype=torch.int32, device=dev)
    act = torch.nonzero((rng[:, 1] > rng[:, 0]) & inside.any(1)).flatten()
    st, cnt = rng[act, 0], rng[act, 1] - rng[act, 0]
    px, py, done = x[act].to(dt), y[act].to(dt), ~inside[act]
    wT, wC, wl, wm, ws = T[act], C[act], last[act], margin[act], stop_at[act]
    j = 0
    while act.numel():
        valid = (j < cnt)[:, None]
        g = ids[(st + j).clamp(max=top)]
        dx = means[g, 0][:, None] - px
        dy = means[g, 1][:, None] - py
        c = co[g]
        power = -0.5 * (c[:, 0, None] * dx * dx + c[:, 2, None] * dy * dy) - c[:, 1, None] * dx * dy
        alpha = torch.clamp(c[:, 3, None] * torch.exp(power), max=ALPHA_MAX)
        live = valid & ~done & (power <= 0)
        wm = torch.where(live, torch.minimum(wm, (alpha / ALPHA_MIN - 1.0).abs()), wm)
        use = live & (alpha >= ALPHA_MIN)
        test = wT * (1.0 - alpha)
        wm = torch.where(use, torch.minimum(wm, (test / T_MIN - 1.0).abs()), wm)
        stop = use & (test < T_MIN)
        comp = use & ~stop
        wC = wC + torch.where(comp[:, :, None], col[g][:, None, :] * (alpha * wT)[:, :, None], 0.0)
        wT = torch.where(comp, test, wT)
        wl = torch.where(comp, j + 1, wl)
        ws = torch.where(stop, j, ws)
        done = done | stop
        j += 1
        alive = (j < cnt) & ~done.all(1)
        if int(alive.sum()) * 2 <= alive.numel():           # compact: write the finished tiles back
            fin = act[~alive]
            keep = ~alive
            T[fin], C[fin], last[fin], margin[fin], stop_at[fin] = wT[keep], wC[keep], wl[keep], wm[keep], ws[keep]
            act, st, cnt, px, py, done = act[alive], st[alive], cnt[alive], px[alive], py[alive], done[alive]
            wT, wC, wl, wm, ws = wT[alive], wC[alive], wl[alive], wm[alive], ws[alive]
    out = C + T[:, :, None] * inputs["bg"].to(dt)
    return (_to_image(out, H, W), _to_image(T, H, W), _to_image(last, H, W), _to_image(margin, H, W),
            _to_image(stop_at, H, W))


def reference(inputs):
    """fp32 [4, H, W] (computed in float64, one Gaussian at a time in each tile's order): the image
    (background included), then final_T."""
    import torch
    out, t, _, _, _ = composite_reference(inputs)
    return torch.cat([out, t[None]], 0).float()


def torch_baseline(inputs):
    """What eager torch runs without a custom kernel: every tile at once, CH list positions a step
    (CH such that a [tiles, CH, 256] fp32 temporary stays near 512 MB): the [tiles, CH, 256] alphas,
    their cumulative product for the transmittance, the compositing and done masks, the colour sums;
    tiles whose pixels are all done (or whose lists ended) leave the batch. fp32; [4, H, W]."""
    import torch
    H, W = inputs["H"], inputs["W"]
    dev = inputs["means2d"].device
    x, y, inside = _tile_pixels(H, W, dev)
    px, py = x.float(), y.float()
    rng = inputs["ranges"].reshape(-1, 2).long()
    st, cnt = rng[:, 0], rng[:, 1] - rng[:, 0]
    ids = inputs["point_list"].long()
    means, co, col = inputs["means2d"], inputs["conic_opacity"], inputs["colors"].float()
    nt = st.numel()
    CH = int(max(1, min(64, 2**27 // max(1, nt * TILE * TILE))))
    T = torch.ones((nt, TILE * TILE), device=dev)
    C = torch.zeros((nt, TILE * TILE, 3), device=dev)
    done = ~inside
    act = torch.nonzero((cnt > 0) & inside.any(1)).flatten()
    j0 = 0
    jj = torch.arange(CH, device=dev)
    while act.numel():
        pos = j0 + jj
        valid = pos[None, :] < cnt[act][:, None]                                  # [A, CH]
        g = ids[(st[act][:, None] + pos[None, :]).clamp(max=max(ids.numel() - 1, 0))]
        dx = means[g, 0][:, :, None] - px[act][:, None, :]                        # [A, CH, 256]
        dy = means[g, 1][:, :, None] - py[act][:, None, :]
        c = co[g]
        power = -0.5 * (c[..., 0, None] * dx * dx + c[..., 2, None] * dy * dy) - c[..., 1, None] * dx * dy
        alpha = torch.clamp(c[..., 3, None] * torch.exp(power), max=ALPHA_MAX)
        alpha = torch.where((power > 0) | (alpha < ALPHA_MIN) | ~valid[:, :, None], 0.0, alpha)
        Ta = T[act]
        t_after = Ta[:, None, :] * torch.cumprod(1.0 - alpha, 1)
        comp = (t_after >= T_MIN) & ~done[act][:, None, :]
        w = torch.where(comp, alpha * t_after / (1.0 - alpha), 0.0)
        C[act] += torch.einsum("acp,acq->apq", w, col[g])
        T[act] = torch.where(comp, t_after, Ta[:, None, :]).amin(1)
        done[act] = done[act] | (t_after[:, -1, :] < T_MIN)
        j0 += CH
        act = act[(j0 < cnt[act]) & ~done[act].all(1)]
    out = C + T[:, :, None] * inputs["bg"]
    return torch.cat([_to_image(out, H, W), _to_image(T, H, W)[None]], 0)


def bytes_moved(point) -> int:
    """The seed-0 scene's lists: the ranges (8 B a tile) and every id (4 B a pair) read once, each
    visible Gaussian's fields once (mean 8 B, conic + opacity 16 B, colour 3 x the dtype), the
    background, and out, final_T and n_contrib written (20 B a pixel). The lists' re-reads of a
    Gaussian by the tiles it touches (L1 / L2) are not counted, nor the early exit's unread tails."""
    H, W, _, _, _, dt = _check_point(point)
    counts, n_vis = _plan(_key(point))
    tx, ty = _tiles(H, W)
    return 8 * tx * ty + 4 * sum(counts) + n_vis * (8 + 16 + 3 * _esize(dt)) + 12 + 20 * H * W


def flops(point) -> int:
    """Nominal: every tile-Gaussian pair at each of the tile's 256 pixels, 21 flops -- the offsets (2),
    the quadratic form (8), the exponential (1), times the opacity (1), 1 - alpha (1), the
    transmittance product (1), alpha T (1), the colour multiply-adds (6) -- early exit ignored."""
    _check_point(point)
    counts, _ = _plan(_key(point))
    return 21 * TILE * TILE * sum(counts)


def grid(cfg, point) -> tuple[int]:
    """(tiles x PARTS,): one program a SUB_W x SUB_H block, a tile's blocks adjacent."""
    H, W, _, _, _, _ = _check_point(point)
    _check_cfg(cfg)
    tx, ty = _tiles(H, W)
    return (tx * ty * _parts(cfg),)


def cta_iterations(cfg, point) -> list[int]:
    """Each program's BATCH steps in launch order: cdiv(its tile's list length, BATCH) on the seed-0
    scene, 0 for a block wholly past the image (or an empty list). An upper bound: a block whose pixels
    all saturate stops at the step after the last one does (where depends on the render itself)."""
    import torch
    H, W, _, _, _, _ = _check_point(point)
    _check_cfg(cfg)
    counts, _ = _plan(_key(point))
    tx, ty = _tiles(H, W)
    sw, sh, bt = cfg["SUB_W"], cfg["SUB_H"], cfg["BATCH"]
    px = TILE // sw
    steps = torch.div(torch.tensor(counts, dtype=torch.int64) + (bt - 1), bt, rounding_mode="floor")
    t = torch.arange(tx * ty)
    p = torch.arange(_parts(cfg))
    x0 = (t % tx)[:, None] * TILE + (p % px)[None, :] * sw                   # each block's first pixel
    y0 = (t // tx)[:, None] * TILE + (p // px)[None, :] * sh
    return torch.where((x0 < W) & (y0 < H), steps[:, None], 0).flatten().tolist()


def loop_iterations(cfg, point) -> int:
    """A program's mean BATCH steps (cta_iterations' mean, rounded; at least 1)."""
    its = cta_iterations(cfg, point)
    return max(1, round(sum(its) / len(its)))


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`: the tensors on the meta device (no
    memory) in the launch's shapes and dtypes, except RANGES, the seed-0 scene's [tiles, 2] int32
    ranges on the CPU (the scalars each program loads at its tile's offset)."""
    import torch
    H, W, N, _, _, dt = _check_point(point)
    _check_cfg(cfg)
    counts, _ = _plan(_key(point))
    n = torch.tensor(counts, dtype=torch.int64)
    end = torch.cumsum(n, 0)
    ranges = torch.stack([end - n, end], 1).to(torch.int32)
    m = functools.partial(torch.empty, device="meta")
    return _kernel_args(m((N, 2), dtype=torch.float32), m((N, 4), dtype=torch.float32),
                        m((N, 3), dtype=_torch_dtype(dt)), m((3,), dtype=torch.float32), ranges,
                        m((max(1, int(end[-1])),), dtype=torch.int32), m((3, H, W), dtype=torch.float32),
                        m((H, W), dtype=torch.float32), m((H, W), dtype=torch.int32), H, W, cfg)
