"""BEV pooling of lift-splat-shoot camera detectors: BEVDet's bev_pool_v2 (HuangJunJie2017/BEVDet,
mmdet3d/ops/bev_pool_v2; BEVDet-v2 / BEVDet4D / BEVDepth / BEVStereo) and BEVFusion's bev_pool
(mit-han-lab/bevfusion, its camera vtransform), the step that splats every camera frustum point's
feature into the bird's-eye-view grid, a bare @triton.jit kernel + its launcher. For each interval i
(one per occupied BEV cell) of the points sorted by cell:

    out[cell_i, :] = sum over p in [start_i, start_i + len_i) of  feat[ranks_feat[p], :] * depth[ranks_depth[p]]

and every unoccupied cell 0 (the launcher zero-fills a fresh out first, as bev_pool_v2 does). The frustum
point p is (sample b, camera n, depth bin d, feature row h, column w): its feature row ranks_feat[p] =
((b N + n) fH + h) fW + w of feat [B N fH fW, C] (the image feature, shared by the point's D depth bins),
its depth weight ranks_depth[p] = (((b N + n) D + d) fH + h) fW + w of depth [B, N, D, fH, fW] (the
depth net's softmax: BEVDet-v2's "depth x feature" outer product, never materialised). The host sorts
the points by BEV rank and run-length encodes them (interval_starts / interval_lengths / interval_cells,
BEVDet's prepare_bev_feat); the kernel is given those. fp32 accumulation, one rounding at the store.

depth: any shape, contiguous (read flat); feat: [N_feat, C] fp32 / fp16 / bf16 (depth's dtype), unit
column stride, any row stride (a channel slice of a channel-last depth-net output [.., D + C] whose first
D channels are the depth logits); ranks_depth, ranks_feat [N_pts] int32, interval_starts /
interval_lengths / interval_cells [N_int] int32 (any strides; trusted: in range, lengths >= 1, not
checked); out: a fresh contiguous [B, Y, X, C] in feat's dtype -- channel-last, BEVDet's [B, Z, Y, X, C]
with Z = 1, the cell index (b Y + y) X + x.

Work split: a 1-d grid of cdiv(N_int, INTS) x N_CB programs, the C chunk fastest (the N_CB programs of
one interval group read the same ranks, side by side): program (g, cb) owns intervals g INTS .. + INTS
and columns cb BLOCK_C .. + BLOCK_C, BLOCK_C = next_pow2(cdiv(C, C_SPLIT)). For each of its intervals it
loads the interval's start, length and cell (three scalars) and walks the interval's points BLOCK_P a
step (a runtime trip count, cdiv(len, BLOCK_P): intervals of 4 to 960 points at the POINTS -- near-range
cells collect several depth bins of several pixel columns, every feature row of each, far ones a few
rows of one column): each step loads BLOCK_P
feature and depth indices (contiguous, evict-first), gathers BLOCK_P depth weights (scalars) and the
BLOCK_P x BLOCK_C feature tile (one row of C contiguous elements a point, masked past the interval's
end and past C unless BLOCK_C divides C: EVEN_C), and adds feature x weight into a [BLOCK_P, BLOCK_C]
fp32 accumulator; after the walk one reduction along the points and one store of the cell's chunk.
Intervals past N_int (the last group's) run nothing.

How this differs from examples/jagged_sum.py: that kernel sums contiguous row ranges of one values
tensor into out[b] in segment order. Here every row is gathered through a per-point feature index,
scaled by a second gathered per-point weight (the depth probability, a second index), and the sum is
stored to a data-dependent cell of a mostly-zero grid (the interval's cell index: a scatter of whole
rows). From examples/gnn_scatter_add.py: no atomics -- the points are pre-sorted into intervals, so
each cell is written once by one program, deterministic; its work per program is ragged (interval
lengths), not fixed edge groups.

Tunables: BLOCK_P (points a step: 4 / 8 / 16 / 32), C_SPLIT (1 / 2: the C chunk -- the whole row, or
halves: at C 80 one 128-wide masked chunk or 64 + 16), INTS (intervals a program: 1 / 4 -- fewer,
longer programs, the short far-range intervals batched), num_warps (2 / 4 / 8); num_stages held at 1
(the step's loads feed only that step's accumulate; no tl.dot, nothing for the pipeliner).
On sm_90 every config of the sweep (48) compiles at every point without spills: 31-128 registers under
triton 3.6.0 and 32-128 under 3.9.0 (the most for 32 points of a 128-wide chunk on 2 warps: a 64-element
fp32 accumulator a thread plus the gathered tile), shared memory 256 B - 4 KiB under both (the reduction
along the points' scratch).

Problem parameters (a workload point): B (samples), cams (cameras), D (depth bins over [1, 60) m),
fH, fW (the image feature map), C, X (the square grid's cells a side over [-51.2, 51.2] m), dtype (fp32 /
fp16 / bf16). make_inputs draws the frustum geometry (draw_geometry): `cams` pinhole cameras of 70 degrees
horizontal field of view in a ring around the ego (1.5 m high, yaw and position jittered per sample by
the seed), each feature pixel's ray sampled at the D bin centres, points outside the grid or the height
band [-5, 3) m dropped, the rest sorted by BEV rank (stable) and run-length encoded -- intervals from
a few to ~1000 points, as in the real system (1 at tiny test grids); depth is a softmax over the bins, feat N(0, 1).
"""

from __future__ import annotations

import functools
import math

import triton
import triton.language as tl


@triton.jit
def _kernel(DEPTH, FEAT, RANKS_DEPTH, RANKS_FEAT, STARTS, LENGTHS, CELLS, OUT, n_intervals, C,
            stride_rd, stride_rf, stride_st, stride_len, stride_cell_id, stride_feat, stride_out,
            EVEN_C: tl.constexpr, N_CB: tl.constexpr, BLOCK_P: tl.constexpr, BLOCK_C: tl.constexpr,
            INTS: tl.constexpr):
    pid = tl.program_id(0)
    cb = pid % N_CB
    g = pid // N_CB
    cols = cb * BLOCK_C + tl.arange(0, BLOCK_C)
    cmask = cols < C
    offs_p = tl.arange(0, BLOCK_P)
    for k in tl.static_range(INTS):
        i = g * INTS + k
        if i < n_intervals:
            start = tl.load(STARTS + i * stride_st)
            n = tl.load(LENGTHS + i * stride_len)
            cell = tl.load(CELLS + i * stride_cell_id).to(tl.int64)
            acc = tl.zeros([BLOCK_P, BLOCK_C], dtype=tl.float32)
            for p0 in range(0, n, BLOCK_P):
                pm = (p0 + offs_p) < n
                pt = (start + p0 + offs_p).to(tl.int64)
                rd = tl.load(RANKS_DEPTH + pt * stride_rd, mask=pm, other=0, eviction_policy="evict_first")
                rf = tl.load(RANKS_FEAT + pt * stride_rf, mask=pm, other=0, eviction_policy="evict_first")
                w = tl.load(DEPTH + rd.to(tl.int64), mask=pm, other=0.0).to(tl.float32)
                fptr = FEAT + (rf.to(tl.int64) * stride_feat)[:, None] + cols[None, :]
                if EVEN_C:
                    f = tl.load(fptr, mask=pm[:, None], other=0.0)
                else:
                    f = tl.load(fptr, mask=pm[:, None] & cmask[None, :], other=0.0)
                acc += f.to(tl.float32) * w[:, None]
            s = tl.sum(acc, axis=0)
            optr = OUT + cell * stride_out + cols
            if EVEN_C:
                tl.store(optr, s.to(OUT.dtype.element_ty))
            else:
                tl.store(optr, s.to(OUT.dtype.element_ty), mask=cmask)


# ---------------------------------------------------------------- launcher
ROLE = "held-out-33"
DTYPES = ("fp32", "fp16", "bf16")
TUNABLES = ("BLOCK_P", "C_SPLIT", "INTS", "num_warps", "num_stages")
BASELINE = {"BLOCK_P": 8, "C_SPLIT": 1, "INTS": 1, "num_warps": 4, "num_stages": 1}
# the study's sweep: 4 x 2 x 2 x 3 x 1 = 48 configs. 4-32 points a step, the row in one chunk or two,
# 1 or 4 intervals a program, 2-8 warps; num_stages 1 (nothing loop-carried to pipeline)
SWEEP_AXES = {"BLOCK_P": [4, 8, 16, 32], "C_SPLIT": [1, 2], "INTS": [1, 4], "num_warps": [2, 4, 8],
              "num_stages": [1]}
MAX_TILE = 8192                             # elements of the [BLOCK_P, BLOCK_C] accumulator
MAX_PROGRAMS = 2**31 - 1                    # the grid's x dimension
FILL_BLOCK = 4096                           # elements a CTA of the zero-fill (torch.zeros)
DEPTH_MIN, DEPTH_MAX = 1.0, 60.0            # the depth bins' range (m): BEVDet's / BEVFusion's dbound
GRID_HALF = 51.2                            # the grid's half extent (m): [-51.2, 51.2] both ways
Z_MIN, Z_MAX = -5.0, 3.0                    # the height band kept (m)
HFOV_DEG = 70.0                             # a camera's horizontal field of view
CAM_HEIGHT = 1.5                            # m above the ground plane
CAM_RADIUS = 1.0                            # cameras on a ring of this radius (m) around the ego
VALUES_SEED = 0x5EED                        # make_inputs' depth / feat generator: seed + VALUES_SEED

POINTS = [
    # BEVDet-R50 (configs/bevdet/bevdet-r50.py): 6 nuScenes cameras at 256 x 704 -> 16 x 44 features (stride
    # 16), 59 depth bins (dbound [1, 60, 1]), numC_Trans 64, a 128 x 128 grid (0.8 m), fp32, 8 samples a GPU.
    # 2.0 M frustum points, 1.0 M kept in 78 k intervals (4-304 points); 75 MB of DRAM (25 us at 3 TB/s) but
    # 0.26 GB of gathered feature rows through L2 (a row is shared by its pixel's depth bins): ~0.1 ms
    {"B": 8, "cams": 6, "D": 59, "fH": 16, "fW": 44, "C": 64, "X": 128, "dtype": "fp32"},
    # BEVFusion's camera branch (LSS vtransform): 32 x 88 features (stride 8), 118 bins (dbound [1, 60, 0.5]),
    # 80 channels, fp16, 4 samples, pooled into a 200 x 200 grid (0.512 m). 8.0 M frustum points,
    # 4.1 M kept in 129 k intervals (9-960 points); 99 MB of DRAM, 0.65 GB of gathered rows: ~0.2 ms
    {"B": 4, "cams": 6, "D": 118, "fH": 32, "fW": 88, "C": 80, "X": 200, "dtype": "fp16"},
    # a BEVDepth-style depth head (112 bins of ~0.5 m, its d_bound) at its 512 x 1408 input (32 x 88 features,
    # stride 16) on a 200 x 200 grid with C 128 in bf16 (autocast), 4 samples: 7.6 M frustum points,
    # 3.9 M kept in 126 k intervals (9-960 points); 131 MB of DRAM, 0.99 GB of gathered rows: ~0.3 ms
    {"B": 4, "cams": 6, "D": 112, "fH": 32, "fW": 88, "C": 128, "X": 200, "dtype": "bf16"},
]


def _torch_dtype(name: str):
    import torch
    try:
        return {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[name]
    except (KeyError, TypeError):
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}") from None


def _elem_bytes(name: str) -> int:
    return 4 if name == "fp32" else 2


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _pow2(v: int) -> int:
    return 1 << max(0, (v - 1).bit_length())


def _check_point(point) -> dict:
    """The point's fields, checked (default dtype fp32)."""
    P = {}
    for k in ("B", "cams", "D", "fH", "fW", "C", "X"):
        v = point[k]
        if not _is_int(v) or v < 1:
            raise ValueError(f"{k}={v!r} must be a positive int")
        P[k] = v
    P["dtype"] = point.get("dtype", "fp32")
    if P["dtype"] not in DTYPES:
        raise ValueError(f"dtype {P['dtype']!r} is not one of {', '.join(DTYPES)}")
    n_all = P["B"] * P["cams"] * P["D"] * P["fH"] * P["fW"]
    if n_all >= 2**31:
        raise ValueError(f"B cams D fH fW = {n_all} frustum points; the int32 ranks hold fewer than 2^31")
    return P


def _check_cfg(cfg) -> None:
    bp = cfg["BLOCK_P"]
    if not _is_int(bp) or bp < 1 or bp > 256 or bp & (bp - 1):
        raise ValueError(f"BLOCK_P={bp!r} must be a power of two from 1 to 256")
    cs = cfg["C_SPLIT"]
    if not _is_int(cs) or cs < 1 or cs > 64:
        raise ValueError(f"C_SPLIT={cs!r} must be an int from 1 to 64")
    it = cfg["INTS"]
    if not _is_int(it) or it < 1 or it > 64:
        raise ValueError(f"INTS={it!r} must be an int from 1 to 64")
    w = cfg["num_warps"]
    if not _is_int(w) or w not in (1, 2, 4, 8, 16):
        raise ValueError(f"num_warps={w!r} must be a power of two from 1 to 16")
    st = cfg.get("num_stages", 1)
    if not _is_int(st) or st < 1 or st > 8:
        raise ValueError(f"num_stages={st!r} must be an int from 1 to 8")


def block_c(C: int, C_SPLIT: int) -> int:
    """The column chunk: next_pow2(cdiv(C, C_SPLIT)) columns (>= C: the row in one chunk)."""
    return _pow2(triton.cdiv(C, C_SPLIT))


def _plan(C: int, cfg) -> tuple[int, int]:
    """(BLOCK_C, chunks a row) of a config at C; the accumulator tile checked."""
    _check_cfg(cfg)
    bc = block_c(C, cfg["C_SPLIT"])
    if cfg["BLOCK_P"] * bc > MAX_TILE:
        raise ValueError(f"BLOCK_P x BLOCK_C = {cfg['BLOCK_P']} x {bc} = {cfg['BLOCK_P'] * bc} accumulator "
                         f"elements (C={C}, C_SPLIT={cfg['C_SPLIT']}); at most {MAX_TILE}: raise C_SPLIT or "
                         f"lower BLOCK_P")
    return bc, triton.cdiv(C, bc)


def _grid(n_int: int, C: int, cfg) -> int:
    _, n_cb = _plan(C, cfg)
    g = triton.cdiv(n_int, cfg["INTS"]) * n_cb
    if g > MAX_PROGRAMS:
        raise ValueError(f"{g} programs exceed the grid's {MAX_PROGRAMS}: raise INTS")
    return g


def _kernel_args(depth, feat, ranks_depth, ranks_feat, starts, lengths, cells, out, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    C = feat.shape[1]
    bc, n_cb = _plan(C, cfg)
    return dict(DEPTH=depth, FEAT=feat, RANKS_DEPTH=ranks_depth, RANKS_FEAT=ranks_feat, STARTS=starts,
                LENGTHS=lengths, CELLS=cells, OUT=out, n_intervals=starts.shape[0], C=C,
                stride_rd=ranks_depth.stride(0), stride_rf=ranks_feat.stride(0), stride_st=starts.stride(0),
                stride_len=lengths.stride(0), stride_cell_id=cells.stride(0), stride_feat=feat.stride(0),
                stride_out=out.stride(-2), EVEN_C=int(C % bc == 0), N_CB=n_cb, BLOCK_P=cfg["BLOCK_P"],
                BLOCK_C=bc, INTS=cfg["INTS"])


def bev_pool(depth, feat, ranks_depth, ranks_feat, interval_starts, interval_lengths, interval_cells,
             bev_shape, *, BLOCK_P: int = 8, C_SPLIT: int = 1, INTS: int = 1, num_warps: int = 4,
             num_stages: int = 1):
    """The BEV grid [B, Y, X, C] (feat's dtype, contiguous, zero where no interval lands) of bev_pool_v2:
    out[cell_i] = sum over interval i's points p of feat[ranks_feat[p]] * depth.flatten()[ranks_depth[p]].
    depth: contiguous, feat's dtype (fp32 / fp16 / bf16); feat [N_feat, C], unit column stride; the ranks
    [N_pts] and the interval table [N_int] int32, any stride, trusted (in range, lengths >= 1); bev_shape
    (B, Y, X). BLOCK_P, C_SPLIT, INTS, num_warps, num_stages: the tunables (module doc)."""
    import torch
    cfg = {"BLOCK_P": BLOCK_P, "C_SPLIT": C_SPLIT, "INTS": INTS, "num_warps": num_warps,
           "num_stages": num_stages}
    _check_cfg(cfg)
    if (not isinstance(bev_shape, (tuple, list)) or len(bev_shape) != 3
            or not all(_is_int(v) and v >= 0 for v in bev_shape)):
        raise ValueError(f"bev_shape={bev_shape!r} must be three ints >= 0 (B, Y, X)")
    if feat.dim() != 2 or feat.dtype not in (torch.float32, torch.float16, torch.bfloat16):
        raise ValueError(f"feat must be a 2-d fp32 / fp16 / bf16 tensor [N_feat, C]; got {tuple(feat.shape)} "
                         f"{feat.dtype}")
    if depth.dtype != feat.dtype:
        raise ValueError(f"depth must have feat's dtype {feat.dtype}; got {depth.dtype}")
    if not depth.is_contiguous():
        raise ValueError(f"depth must be contiguous (read flat); got strides {tuple(depth.stride())}")
    C = feat.shape[1]
    if feat.stride(1) != 1 and C > 1:
        raise ValueError(f"feat must have unit column stride; got strides {tuple(feat.stride())}")
    names = ("ranks_depth", "ranks_feat", "interval_starts", "interval_lengths", "interval_cells")
    idx = (ranks_depth, ranks_feat, interval_starts, interval_lengths, interval_cells)
    for name, t in zip(names, idx):
        if t.dim() != 1 or t.dtype != torch.int32:
            raise ValueError(f"{name} must be a 1-d int32 tensor; got {tuple(t.shape)} {t.dtype}")
        if t.device != feat.device:
            raise ValueError(f"{name} must be on feat's device {feat.device}; got {t.device}")
    if depth.device != feat.device:
        raise ValueError(f"depth must be on feat's device {feat.device}; got {depth.device}")
    if ranks_depth.shape != ranks_feat.shape:
        raise ValueError(f"ranks_depth {tuple(ranks_depth.shape)} and ranks_feat {tuple(ranks_feat.shape)} "
                         f"must have one length")
    n_int = interval_starts.shape[0]
    if interval_lengths.shape[0] != n_int or interval_cells.shape[0] != n_int:
        raise ValueError(f"the interval table's lengths differ: starts {n_int}, lengths "
                         f"{interval_lengths.shape[0]}, cells {interval_cells.shape[0]}")
    out = torch.zeros((*bev_shape, C), dtype=feat.dtype, device=feat.device)
    if n_int == 0 or C == 0:
        return out
    g = _grid(n_int, C, cfg)
    _kernel[(g,)](**_kernel_args(depth, feat, ranks_depth, ranks_feat, interval_starts, interval_lengths,
                                 interval_cells, out, cfg), num_warps=num_warps, num_stages=num_stages)
    return out


# ---------------------------------------------------------------- inputs, reference, baseline
def draw_geometry(B: int, cams: int, D: int, fH: int, fW: int, X: int, seed: int = 0) -> dict:
    """The frustum points of `cams` ring cameras (module doc) for B samples, dropped outside the grid and
    the height band, sorted by BEV rank (stable: (b, n, d, h, w) order within a cell) and run-length
    encoded: CPU int32 tensors ranks_depth, ranks_feat [N_pts] and interval_starts / interval_lengths /
    interval_cells [N_int] (cells ascending). Deterministic for the seed (per-sample yaw jitter N(0, 0.02)
    rad, position jitter N(0, 0.05) m)."""
    import torch
    g = torch.Generator(device="cpu").manual_seed(seed)
    f = (fW / 2.0) / math.tan(math.radians(HFOV_DEG / 2.0))          # focal length in feature pixels
    dep = DEPTH_MIN + (torch.arange(D, dtype=torch.float64) + 0.5) * (DEPTH_MAX - DEPTH_MIN) / D
    u = (torch.arange(fW, dtype=torch.float64) - (fW - 1) / 2.0) / f
    v = (torch.arange(fH, dtype=torch.float64) - (fH - 1) / 2.0) / f
    yaw = (2.0 * math.pi * torch.arange(cams, dtype=torch.float64) / cams)[None, :] \
        + 0.02 * torch.randn((B, cams), generator=g, dtype=torch.float64)
    px = CAM_RADIUS * torch.cos(yaw) + 0.05 * torch.randn((B, cams), generator=g, dtype=torch.float64)
    py = CAM_RADIUS * torch.sin(yaw) + 0.05 * torch.randn((B, cams), generator=g, dtype=torch.float64)
    fwd = dep[:, None].expand(D, fW)                                  # [D, fW] along the optical axis
    lat = -u[None, :] * dep[:, None]                                  # [D, fW] to the left
    cy, sy = torch.cos(yaw)[:, :, None, None], torch.sin(yaw)[:, :, None, None]
    x = px[:, :, None, None] + cy * fwd - sy * lat                    # [B, cams, D, fW]
    y = py[:, :, None, None] + sy * fwd + cy * lat
    cell_m = 2.0 * GRID_HALF / X
    ix = torch.floor((x + GRID_HALF) / cell_m).long()
    iy = torch.floor((y + GRID_HALF) / cell_m).long()
    ok_xy = (ix >= 0) & (ix < X) & (iy >= 0) & (iy < X)
    z = CAM_HEIGHT - v[None, :] * dep[:, None]                        # [D, fH]
    ok_z = (z >= Z_MIN) & (z < Z_MAX)
    b = torch.arange(B)[:, None, None, None]
    rank_bev = (b * X + iy.clamp(0, X - 1)) * X + ix.clamp(0, X - 1)  # [B, cams, D, fW]
    shape = (B, cams, D, fH, fW)
    keep = (ok_xy[:, :, :, None, :] & ok_z[None, None, :, :, None]).expand(shape).reshape(-1)
    rank = rank_bev[:, :, :, None, :].expand(shape).reshape(-1)
    r_depth = torch.arange(B * cams * D * fH * fW, dtype=torch.int64)
    bn = torch.arange(B * cams).view(B, cams, 1, 1, 1)
    r_feat = ((bn * fH + torch.arange(fH).view(1, 1, 1, fH, 1)) * fW
              + torch.arange(fW).view(1, 1, 1, 1, fW)).expand(shape).reshape(-1)
    rank, r_depth, r_feat = rank[keep], r_depth[keep], r_feat[keep]
    order = torch.sort(rank, stable=True).indices
    rank, r_depth, r_feat = rank[order], r_depth[order], r_feat[order]
    cells, lengths = torch.unique_consecutive(rank, return_counts=True)
    starts = torch.cumsum(lengths, 0) - lengths
    i32 = torch.int32
    return {"ranks_depth": r_depth.to(i32), "ranks_feat": r_feat.to(i32), "interval_starts": starts.to(i32),
            "interval_lengths": lengths.to(i32), "interval_cells": cells.to(i32)}


@functools.lru_cache(maxsize=8)
def _geometry(B: int, cams: int, D: int, fH: int, fW: int, X: int, seed: int = 0) -> dict:
    """draw_geometry, cached per point and seed (the hooks ask once per config)."""
    return draw_geometry(B, cams, D, fH, fW, X, seed)


def _geo(P: dict, seed: int = 0) -> dict:
    return _geometry(P["B"], P["cams"], P["D"], P["fH"], P["fW"], P["X"], seed)


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """The geometry (draw_geometry, seeded, on the CPU, moved); depth [B, cams, D, fH, fW] a softmax over
    the bins of N(0, 2) logits and feat [B cams fH fW, C] N(0, 1), in the point's dtype, drawn on
    `device`; bev_shape (B, X, X)."""
    import torch
    P = _check_point(point)
    geo = {k: v.clone().to(device) for k, v in _geo(P, seed).items()}
    dt = _torch_dtype(P["dtype"])
    gen = torch.Generator(device=device).manual_seed(seed + VALUES_SEED)
    B, N, D, fH, fW, C = P["B"], P["cams"], P["D"], P["fH"], P["fW"], P["C"]
    logits = 2.0 * torch.randn((B, N, D, fH, fW), generator=gen, device=device)
    depth = logits.softmax(dim=2).to(dt)
    feat = torch.randn((B * N * fH * fW, C), generator=gen, device=device).to(dt)
    return {"depth": depth, "feat": feat, **geo, "bev_shape": (B, P["X"], P["X"])}


def launch(inputs, cfg):
    return bev_pool(inputs["depth"], inputs["feat"], inputs["ranks_depth"], inputs["ranks_feat"],
                    inputs["interval_starts"], inputs["interval_lengths"], inputs["interval_cells"],
                    inputs["bev_shape"], BLOCK_P=cfg["BLOCK_P"], C_SPLIT=cfg["C_SPLIT"], INTS=cfg["INTS"],
                    num_warps=cfg["num_warps"], num_stages=cfg.get("num_stages", 1))


def reference(inputs):
    """fp32 [B, Y, X, C]: interval by interval, the float64 sum of its points' feature rows times their
    depth weights (the inputs as given, widened exactly), rounded once to float32; 0 elsewhere."""
    import torch
    feat, depth = inputs["feat"], inputs["depth"].reshape(-1)
    rd, rf = inputs["ranks_depth"].long(), inputs["ranks_feat"].long()
    st, ln = inputs["interval_starts"].long(), inputs["interval_lengths"].long()
    cells = inputs["interval_cells"].long()
    B, Y, X = inputs["bev_shape"]
    C = feat.shape[1]
    out = torch.zeros((B * Y * X, C), dtype=torch.float64, device=feat.device)
    # each interval's point positions, and for every one the interval (cell) it belongs to
    pos = torch.repeat_interleave(st, ln) + (torch.arange(int(ln.sum()), device=feat.device)
                                             - torch.repeat_interleave(torch.cumsum(ln, 0) - ln, ln))
    owner = torch.repeat_interleave(cells, ln)
    contrib = feat[rf[pos]].double() * depth[rd[pos]].double()[:, None]
    out.index_add_(0, owner, contrib)
    return out.float().view(B, Y, X, C)


def torch_baseline(inputs):
    """What eager PyTorch runs without the custom op: the points' feature rows gathered (feat[ranks_feat]),
    scaled by their gathered depth weights, index_add_ into a zero [B Y X, C] at each point's cell (the
    interval table expanded back to per-point cells), in feat's dtype."""
    import torch
    feat, depth = inputs["feat"], inputs["depth"].reshape(-1)
    st, ln = inputs["interval_starts"].long(), inputs["interval_lengths"].long()
    B, Y, X = inputs["bev_shape"]
    C = feat.shape[1]
    pos = torch.repeat_interleave(st, ln) + (torch.arange(int(ln.sum()), device=feat.device)
                                             - torch.repeat_interleave(torch.cumsum(ln, 0) - ln, ln))
    owner = torch.repeat_interleave(inputs["interval_cells"].long(), ln)
    x = feat[inputs["ranks_feat"].long()[pos]] * depth[inputs["ranks_depth"].long()[pos]][:, None]
    out = torch.zeros((B * Y * X, C), dtype=feat.dtype, device=feat.device)
    out.index_add_(0, owner, x)
    return out.view(B, Y, X, C)


# ---------------------------------------------------------------- hooks
@functools.lru_cache(maxsize=8)
def _stats(B: int, cams: int, D: int, fH: int, fW: int, X: int) -> tuple[int, int, int, int]:
    geo = _geometry(B, cams, D, fH, fW, X, 0)
    ln = geo["interval_lengths"]
    return (int(geo["ranks_depth"].shape[0]), int(ln.shape[0]), int(geo["ranks_feat"].unique().numel()),
            int(ln.max()) if ln.numel() else 0)


def geometry_stats(point) -> dict:
    """The seed-0 draw's sizes: kept points, intervals, distinct feature rows, the longest interval (cached
    per point)."""
    P = _check_point(point)
    s = _stats(P["B"], P["cams"], P["D"], P["fH"], P["fW"], P["X"])
    return dict(zip(("n_pts", "n_int", "feat_rows", "max_len"), s))


def bytes_moved(point) -> int:
    """The unavoidable DRAM bytes (seed-0 draw): the two ranks (4 B a kept point) and the interval table
    (12 B an interval) read once; each kept point's depth weight once (distinct per point); each distinct
    feature row once (C elements: a row is shared by its pixel's depth bins, read again from L2); the grid
    zero-filled once (B X X C elements, the secondary kernel) and the occupied cells written once more."""
    P = _check_point(point)
    s = geometry_stats(P)
    e = _elem_bytes(P["dtype"])
    C = P["C"]
    return (8 * s["n_pts"] + 12 * s["n_int"] + e * s["n_pts"] + e * C * s["feat_rows"]
            + e * C * P["B"] * P["X"] * P["X"] + e * C * s["n_int"])


def flops(point) -> int:
    """A multiply and an add per kept point and channel."""
    P = _check_point(point)
    return 2 * geometry_stats(P)["n_pts"] * P["C"]


def grid(cfg, point) -> int:
    """cdiv(N_int, INTS) x N_CB programs (the seed-0 draw's N_int), a 1-d grid, the C chunk fastest."""
    P = _check_point(point)
    return _grid(geometry_stats(P)["n_int"], P["C"], cfg)


def _steps(cfg, P) -> list[int]:
    """Point steps of each interval group: the sum over its INTS intervals of cdiv(len, BLOCK_P)."""
    import torch
    ln = _geo(P)["interval_lengths"].long()
    st = (ln + cfg["BLOCK_P"] - 1) // cfg["BLOCK_P"]
    k = cfg["INTS"]
    pad = (-st.numel()) % k
    st = torch.cat((st, st.new_zeros(pad)))
    return st.view(-1, k).sum(1).tolist()


def loop_iterations(cfg, point) -> int:
    """Point steps a program, on average (rounded up): sum over the intervals of cdiv(len, BLOCK_P) over
    the cdiv(N_int, INTS) interval groups (seed-0 draw). Very uneven: see cta_iterations."""
    P = _check_point(point)
    _plan(P["C"], cfg)
    s = _steps(cfg, P)
    return -(-sum(s) // max(1, len(s)))


def cta_iterations(cfg, point) -> list[int]:
    """Point steps of each program in launch order (program id = interval group x N_CB + chunk): its
    group's steps, the same for each of its N_CB chunks (seed-0 draw)."""
    P = _check_point(point)
    _, n_cb = _plan(P["C"], cfg)
    return [n for n in _steps(cfg, P) for _ in range(n_cb)]


def secondary_kernels(cfg, point) -> list[dict]:
    """torch.zeros of the fresh [B, X, X, C] out before `_kernel` (a store-only fill): FILL_BLOCK elements
    a CTA, tile_bytes = dram_bytes = the bytes one CTA writes."""
    P = _check_point(point)
    _check_cfg(cfg)
    e = _elem_bytes(P["dtype"])
    return [{"name": "zero_fill", "grid": triton.cdiv(P["B"] * P["X"] * P["X"] * P["C"], FILL_BLOCK),
             "iterations": 1, "tile_bytes": e * FILL_BLOCK, "dram_bytes": e * FILL_BLOCK}]


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`. The index data carry data: RANKS_DEPTH,
    RANKS_FEAT, STARTS, LENGTHS, CELLS -- int32 CPU tensors, make_inputs' seed-0 draw (draw_geometry,
    cached per point): they decide which feature rows and depth weights each program gathers, how many
    steps it walks and which cell it writes. Every other tensor is on the meta device: depth [B, cams, D,
    fH, fW], feat [B cams fH fW, C] and out [B, X, X, C], contiguous, in the point's dtype."""
    import torch
    P = _check_point(point)
    _plan(P["C"], cfg)
    geo = _geo(P)
    dt = _torch_dtype(P["dtype"])
    B, N, D, fH, fW, C, X = (P[k] for k in ("B", "cams", "D", "fH", "fW", "C", "X"))
    depth = torch.empty((B, N, D, fH, fW), dtype=dt, device="meta")
    feat = torch.empty((B * N * fH * fW, C), dtype=dt, device="meta")
    out = torch.empty((B, X, X, C), dtype=dt, device="meta")
    return _kernel_args(depth, feat, geo["ranks_depth"], geo["ranks_feat"], geo["interval_starts"],
                        geo["interval_lengths"], geo["interval_cells"], out, cfg)
