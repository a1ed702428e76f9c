"""The gather-GEMM-scatter core of a 3-D sparse convolution -- the submanifold and generalized sparse
convs of spconv, MinkowskiEngine and TorchSparse in LiDAR and indoor backbones (SECOND / CenterPoint,
MinkUNet / SPVCNN, Mask3D's Res16UNet34C, Point Transformer V3's xCPE) -- as an output-stationary
implicit GEMM, a bare @triton.jit kernel + its launcher.

    out[order[i], :] = sum over k with nbr[i, k] >= 0 of x[nbr[i, k], :] @ weight[k]      (i < N_out)

x [N_in, C_in] fp16 / bf16: the active voxels' features (unit channel stride, any row stride: a
channel slice of a concatenated feature buffer is read in place); weight [K_vol, C_in, C_out] in x's
dtype, any strides (TorchSparse's contiguous [K_vol, C_in, C_out], or spconv 2.x's KRSC [C_out, K_vol,
C_in] seen as .permute(1, 2, 0)); nbr [N_out, K_vol] int32, the kernel map as a neighbour table:
nbr[i, k] the input row of row i's neighbour at offset k, -1 where that voxel is empty (K_vol 27 for
3x3x3); order: None, or [N_out] int32, the output row of each row of nbr. out: a fresh contiguous
[N_out, C_out] in x's dtype, fp32 accumulation, one rounding at the store.

The map's layout is TorchSparse++'s implicit-GEMM one (kmap["out_in_map"]: [N_out, K_vol] int32, -1
for a missing neighbour; sorted: "reorder_out_in_map", the table's rows sorted by their neighbour
bitmask, with "reorder_loc", the output row of each -- here nbr and order). spconv 2.x's implicit-GEMM
pair table (pair_fwd [K_vol, N_out], rows in mask_argsort order) is the same table stored offset-major
and is read in place through its transpose's strides. Sorting puts rows with alike neighbourhoods
side by side, so that a tile of rows has neighbours at few offsets: at the KITTI point (5.2 neighbours
a voxel) the 128-row tiles of the sorted map have neighbours at 8.8 of the 27 offsets on average
(21.7 unsorted); the dense indoor map (13.6 a voxel) has all 27 in every tile, sorted or not (17.4).

Work split: program p of the 1-D grid (cdiv(N_out, BLOCK_M) row tiles x cdiv(C_out, BLOCK_N) column
tiles, the column tile fastest: the programs of one row tile run side by side and share its gathers
in L2) owns rows tm BLOCK_M .. of the map and output columns tn BLOCK_N ..: each output element is
summed in one program's registers and stored once (no atomics, no zero fill). The tile's active
offsets -- those at which some row of the tile has a neighbour -- come compacted in TOFF[tm, :TCNT[tm]]
(tile_offsets: what TorchSparse++'s reduced_sorted_mask holds as a bitmask, here a list, so that the
loop has no branch), and one flat loop runs TCNT[tm] x cdiv(C_in, BLOCK_K) steps, offset-major with
the C_in chunks inside: step t loads its offset k (a scalar), the tile's BLOCK_M neighbour rows
nbr[rows, k] (an int32 each), gathers the [BLOCK_M, BLOCK_K] A block from x (a BLOCK_K x 2-byte
vector a row; a row without a neighbour masked to zero: no memory access), loads the [BLOCK_K,
BLOCK_N] B block of weight[k] and accumulates tl.dot (wgmma on sm_90) into the fp32 [BLOCK_M,
BLOCK_N] accumulator. A missing neighbour at an active offset costs tensor-core work on a zero row,
no memory traffic.

Pipelining: the loop's loads form a chain (the offset -> the neighbour rows -> the gathered rows; the
offset -> the weight block), and Triton's pipeliner (3.6 and 3.9 alike) gives the A and B blocks two
shared-memory buffers at every num_stages >= 2 (cp.async: the next step's blocks in flight during
this step's wgmma). num_stages sets how far ahead the chain's head runs: 2 loads the next step's
offset and neighbour rows synchronously before its copies issue; 3 brings the neighbour rows by
cp.async a step further ahead; 4 the offset as well; 1 does not pipeline (the loads to registers,
stored to shared memory before each wgmma: the most registers).

Masks: rows past N_out (the last row tile) read row N_out - 1's map (clamped, in bounds) and are not
stored; channels past C_in (EVEN_K = 0: BLOCK_K does not divide C_in, the last chunk short) are masked
to zero in A and B; columns past C_out (EVEN_N = 0) masked to zero in B and on the store. Masks, not
clamped indices: a clamped channel index loses its contiguity and Triton then loads B with 2-byte
synchronous loads, unpipelined. SORTED (order given: the store goes to order's rows), EVEN_K and
EVEN_N are constexprs the launcher sets. Offsets are int32 (the wrapper checks that x, the map, the
weight and out each span < 2^31 elements).

Tunables: BLOCK_M (64 / 128: the rows a tile -- a larger tile reuses each B block over more rows, but
its union of active offsets grows: 7.9 -> 8.8 offsets at KITTI, 12.3 -> 13.9 at Waymo), BLOCK_N (64 /
128: the output columns a program -- C_out 96 in one 128-wide tile is a quarter masked, in two 64-wide
ones every A block is gathered twice), BLOCK_K (32 / 64: the channels a step -- C_in 96 in chunks of 64
wastes a third of the second), num_warps (4 / 8), num_stages (1-4, above). On sm_90 every config of
the sweep compiles at every point: 42-241 registers under triton 3.9, 42-244 under 3.6.0, none
spilled (the most: 128 x 128 x 64 on 4 warps, one stage); shared memory 8-64.5 KiB (the two buffers of
the A and B blocks: 64 KiB at 128 x 128 x 64, half of it at one stage).
Problem parameters (a workload point): scene (kitti / waymo: a LiDAR sweep; indoor: a room), voxel
(m), N (voxels; N_in = N_out: a submanifold map), K (the kernel size: K^3 offsets), C_in, C_out,
dtype, layout (torchsparse / spconv), sorted (0 / 1).

make_inputs builds real voxel sets on the CPU: a spinning LiDAR (KITTI's HDL-64E or Waymo's top
LiDAR: its beams, elevations and azimuth steps) ray-cast onto a street (ground, facades, parked cars,
poles and trunks), voxelized, the N voxels nearest the sensor kept (a range crop); or a ScanNet-like
room (floor, walls, furniture; surfaces sampled densely with depth noise) voxelized, the N nearest a
centre kept (a sphere crop); then the submanifold map by a sorted-key lookup (a hash table's answer),
sorted by bitmask with `sorted`, and the tile lists of every BLOCK_M in TILE_ROWS (kept with the map:
the launch reads them).

Closest examples: conv2d_nhwc (a dense implicit GEMM: every tap's row computed, none missing) and
fused_moe_gemm (gathered rows, but one weight a row block and one row list for the whole k loop); here
each offset has its own weight and its own gathered rows, and which offsets a tile visits is data.
"""
from __future__ import annotations

import functools
import itertools
import math

import triton
import triton.language as tl


@triton.jit
def _kernel(X, W, NBR, ORDER, TOFF, TCNT, OUT, N_out, C_in, C_out, K_vol,
            stride_xm, stride_wk, stride_wc, stride_wn, stride_nm, stride_nk, stride_om,
            SORTED: tl.constexpr, EVEN_K: tl.constexpr, EVEN_N: tl.constexpr,
            BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid = tl.program_id(0)
    tiles_n = tl.cdiv(C_out, BLOCK_N)
    tm = pid // tiles_n                      # the row tile: the column tiles of one row tile adjacent
    tn = pid - tm * tiles_n
    rm = tm * BLOCK_M + tl.arange(0, BLOCK_M)
    lm = tl.minimum(rm, N_out - 1)           # rows past N_out read the last row's map (never stored)
    rn = tn * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    n_c = tl.cdiv(C_in, BLOCK_K)
    # the tile's active offsets (those some row of the tile has a neighbour at), compacted: the loop
    # runs cnt x n_c steps, offset-major, C_in chunks inside an offset
    steps = tl.load(TCNT + tm) * n_c
    toff = TOFF + tm * K_vol
    nbr_rows = NBR + lm * stride_nm
    w_cols = W + (rn * stride_wn)[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for t in range(0, steps):
        j = t // n_c
        c0 = (t - j * n_c) * BLOCK_K
        k = tl.load(toff + j)                                 # the offset (a scalar)
        src = tl.load(nbr_rows + k * stride_nk)               # [BLOCK_M] input rows, -1: no neighbour
        ok = (src >= 0)[:, None]
        a_ptrs = X + (src * stride_xm)[:, None] + (c0 + rk)[None, :]
        b_ptrs = w_cols + k * stride_wk + ((c0 + rk) * stride_wc)[:, None]
        # masks, not clamped indices, on the channels: they keep the loads vectorized (cp.async)
        if EVEN_K:
            a = tl.load(a_ptrs, mask=ok, other=0.0)
            if EVEN_N:
                b = tl.load(b_ptrs)
            else:                            # columns past C_out zero (never stored)
                b = tl.load(b_ptrs, mask=(rn < C_out)[None, :], other=0.0)
        else:                                # the last chunk short: channels past C_in zero in a and b
            k_in = (c0 + rk) < C_in
            a = tl.load(a_ptrs, mask=ok & k_in[None, :], other=0.0)
            if EVEN_N:
                b = tl.load(b_ptrs, mask=k_in[:, None], other=0.0)
            else:
                b = tl.load(b_ptrs, mask=k_in[:, None] & (rn < C_out)[None, :], other=0.0)
        acc = tl.dot(a, b, acc)
    if SORTED:                               # row i of the sorted map is output row ORDER[i]
        dst = tl.load(ORDER + lm)
    else:
        dst = lm
    o_ptrs = OUT + (dst * stride_om)[:, None] + rn[None, :]
    out = acc.to(OUT.dtype.element_ty)
    if EVEN_N:
        tl.store(o_ptrs, out, mask=(rm < N_out)[:, None])
    else:
        tl.store(o_ptrs, out, mask=(rm < N_out)[:, None] & (rn < C_out)[None, :])


# ---------------------------------------------------------------- launcher
ROLE = "held-out-28"
DTYPES = ("fp16", "bf16")
TUNABLES = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "num_warps", "num_stages")
BASELINE = {"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 32, "num_warps": 4, "num_stages": 3}
SWEEP_AXES = {"BLOCK_M": [64, 128], "BLOCK_N": [64, 128], "BLOCK_K": [32, 64], "num_warps": [4, 8],
              "num_stages": [1, 2, 3, 4]}

POINTS = [
    # SemanticKITTI through TorchSparse's MinkUNet (cr 1.0; SPVCNN alike): one HDL-64E scan (64 beams,
    # -24.9 .. +2 deg, 2048 azimuth steps: ~129k returns) voxelized at 5 cm, 90k voxels, 5.2 neighbours
    # a voxel; the last decoder stage's submanifold 3x3x3 conv 96 -> 96 at stride 1, fp16 (TorchSparse's
    # AMP). TorchSparse++ layouts (out_in_map [N, 27], weight [27, C_in, C_out]), rows sorted by
    # neighbour bitmask (8.8 of 27 offsets a 128-row tile). 465k pairs: 8.6 GFLOP useful (15-19 GFLOP
    # of tensor-core work with the tiles' zero rows and masked columns), 45 MB moved
    {"scene": "kitti", "voxel": 0.05, "N": 90000, "K": 3, "C_in": 96, "C_out": 96, "dtype": "fp16",
     "layout": "torchsparse", "sorted": 1},
    # ScanNet through MinkowskiEngine's Res16UNet34C (Mask3D's backbone): a room at 2 cm, 140k voxels
    # (a sphere crop), 13.6 neighbours a voxel; block8's first conv, 3x3x3 128 (96 upsampled + 32 skip)
    # -> 96 at stride 1, bf16; the map in voxel order (unsorted: dense surfaces put all 27 offsets in
    # every tile). 1.9M pairs: 47 GFLOP useful, 93 GFLOP of tensor-core work, 79 MB moved
    {"scene": "indoor", "voxel": 0.02, "N": 140000, "K": 3, "C_in": 128, "C_out": 96, "dtype": "bf16",
     "layout": "torchsparse", "sorted": 0},
    # Waymo through Pointcept's Point Transformer V3 (grid 0.05 m): one top-LiDAR frame (64 beams,
    # -17.6 .. +2.4 deg, 2650 azimuth steps), the 130k voxels nearest the car, 6.4 neighbours a voxel;
    # the decoder's stride-1 stage's xCPE, spconv.SubMConv3d(64, 64, 3), fp16 (AMP). spconv 2.x layouts:
    # the implicit-GEMM pair table [27, N] (pair_fwd) and the weight [C_out, 27, C_in] (KRSC), rows
    # sorted by mask (13.9 offsets a 128-row tile). 832k pairs: 6.8 GFLOP useful, 15 GFLOP of
    # tensor-core work, 48 MB moved
    {"scene": "waymo", "voxel": 0.05, "N": 130000, "K": 3, "C_in": 64, "C_out": 64, "dtype": "fp16",
     "layout": "spconv", "sorted": 1},
]
SCENES = ("kitti", "waymo", "indoor")
LAYOUTS = ("torchsparse", "spconv")
TILE_ROWS = (16, 32, 64, 128, 256)          # the BLOCK_M values make_inputs precomputes tile lists for

# the LiDARs: beams, lowest and highest elevation (deg), azimuth steps, sensor height above ground (m)
_LIDARS = {"kitti": (64, -24.9, 2.0, 2048, 1.73), "waymo": (64, -17.6, 2.4, 2650, 2.1)}


def _torch_dtype(name: str):
    import torch
    try:
        return {"bf16": torch.bfloat16, "fp16": torch.float16}[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}") from None


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _check_point(point) -> tuple:
    """(scene, voxel, N, K, C_in, C_out, dtype, layout, sorted), every field checked."""
    scene = point.get("scene")
    if scene not in SCENES:
        raise ValueError(f"scene {scene!r} is not one of {', '.join(SCENES)}")
    voxel = point.get("voxel")
    if not isinstance(voxel, (int, float)) or isinstance(voxel, bool) or not 0.005 <= voxel <= 1.0:
        raise ValueError(f"voxel={voxel!r} must be a size in metres from 0.005 to 1")
    for k in ("N", "C_in", "C_out"):
        v = point.get(k)
        if not _is_int(v) or v < 1:
            raise ValueError(f"{k}={v!r} must be a positive int")
    K = point.get("K", 3)
    if K not in (1, 3, 5) or not _is_int(K):
        raise ValueError(f"K={K!r} (the kernel size) must be 1, 3 or 5")
    dt = point.get("dtype", "fp16")
    if dt not in DTYPES:
        raise ValueError(f"dtype {dt!r} is not one of {', '.join(DTYPES)}")
    layout = point.get("layout", "torchsparse")
    if layout not in LAYOUTS:
        raise ValueError(f"layout {layout!r} is not one of {', '.join(LAYOUTS)}")
    srt = point.get("sorted", 0)
    if srt not in (0, 1) or not isinstance(srt, (int, bool)):
        raise ValueError(f"sorted={srt!r} must be 0 or 1")
    return scene, float(voxel), point["N"], K, point["C_in"], point["C_out"], dt, layout, int(srt)


def _check_cfg(cfg) -> None:
    for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K"):
        v = cfg[k]
        if not _is_int(v) or v < 16 or v > 256 or v & (v - 1):
            raise ValueError(f"{k}={v!r} must be a power of two from 16 to 256 (tl.dot's minimum is 16)")
    w = cfg["num_warps"]
    if not _is_int(w) or w not in (1, 2, 4, 8, 16):
        raise ValueError(f"num_warps={w!r} must be a power of two from 1 to 16")
    if cfg["BLOCK_M"] * cfg["BLOCK_N"] > 128 * 32 * w:
        raise ValueError(f"BLOCK_M x BLOCK_N = {cfg['BLOCK_M'] * cfg['BLOCK_N']} fp32 accumulators exceed 128 a "
                         f"thread on {w} warps")
    st = cfg.get("num_stages", 1)
    if not _is_int(st) or st < 1:
        raise ValueError(f"num_stages={st!r} must be a positive int")


# ---------------------------------------------------------------- the voxel sets and their kernel maps
def _lidar_points(gen, beams: int, lo: float, hi: float, n_az: int, height: float, sensor_x: float, scene):
    """One sweep of a spinning LiDAR at (sensor_x, 0, 0) ray-cast onto the ground (z = -height), box
    obstacles (facades, cars) and vertical cylinders (poles, trunks): [P, 3] fp32 returns within 80 m,
    2 cm range noise."""
    import torch
    el = torch.linspace(math.radians(lo), math.radians(hi), beams)
    az = torch.arange(n_az, dtype=torch.float32) * (2 * math.pi / n_az)
    el, az = torch.meshgrid(el, az, indexing="ij")
    d = torch.stack([torch.cos(el) * torch.cos(az), torch.cos(el) * torch.sin(az), torch.sin(el)], -1).reshape(-1, 3)
    inf = torch.tensor(float("inf"))
    t = torch.where(d[:, 2] < 0, -height / d[:, 2].clamp(max=-1e-6), inf)
    boxes, cyls = scene
    for chunk in torch.split(boxes, 16):                # slab test in each box's frame, 16 boxes at a time
        cx, cy, z0, lx, ly, lz, yaw = (chunk[:, i][:, None] for i in range(7))
        c, s = torch.cos(-yaw), torch.sin(-yaw)
        ox, oy = sensor_x - cx, -cy
        org = torch.stack([c * ox - s * oy, s * ox + c * oy, torch.zeros_like(cx)], -1)        # [b, 1, 3]
        dd = torch.stack([c * d[:, 0] - s * d[:, 1], s * d[:, 0] + c * d[:, 1], d[:, 2].expand_as(c * d[:, 0])], -1)
        dd = torch.where(dd.abs() < 1e-9, torch.full_like(dd, 1e-9), dd)
        lo3 = torch.stack([-lx / 2, -ly / 2, z0 - height], -1)
        hi3 = torch.stack([lx / 2, ly / 2, z0 + lz - height], -1)
        t1, t2 = (lo3 - org) / dd, (hi3 - org) / dd
        tn, tf = torch.minimum(t1, t2).amax(-1), torch.maximum(t1, t2).amin(-1)
        hit = (tn <= tf) & (tn > 0)
        t = torch.minimum(t, torch.where(hit, tn, inf).amin(0))
    for chunk in torch.split(cyls, 16):
        cx, cy, r, hz = (chunk[:, i][:, None] for i in range(4))
        ox, oy = sensor_x - cx, -cy
        a = (d[:, 0] ** 2 + d[:, 1] ** 2).clamp(min=1e-9)
        bq = 2 * (ox * d[:, 0] + oy * d[:, 1])
        disc = bq * bq - 4 * a * (ox * ox + oy * oy - r * r)
        tc = (-bq - disc.clamp(min=0).sqrt()) / (2 * a)
        z = tc * d[:, 2]
        hit = (disc > 0) & (tc > 0) & (z > -height) & (z < hz - height)
        t = torch.minimum(t, torch.where(hit, tc, inf).amin(0))
    keep = t < 80.0
    t = t[keep] + torch.randn(int(keep.sum()), generator=gen) * 0.02
    return d[keep] * t[:, None] + torch.tensor([sensor_x, 0.0, 0.0])


def _street(gen):
    """A street along x: facades on both sides (boxes 6-16 m tall), 30 cars in four lanes, 40 poles
    and trunks along the kerbs. (boxes [B, 7]: cx, cy, bottom z, lx, ly, lz, yaw; cylinders [C, 4]: cx,
    cy, radius, height)."""
    import torch

    def u():
        return float(torch.rand(1, generator=gen))

    half = 9.0 + 4.0 * u()
    boxes, cyls = [], []
    for side in (-1.0, 1.0):
        x = -80.0
        while x < 80.0:
            length = 8.0 + 20.0 * u()
            boxes.append([x + length / 2, side * (half + 5.0 + 2.0 * u()), 0.0, length, 10.0, 6.0 + 10.0 * u(), 0.0])
            x += length + 3.0 * u()
    lanes = (-half + 1.5, -2.0, 2.0, half - 1.5)
    while len(boxes) < 30 + 24:
        cx, lane = -50.0 + 100.0 * u(), lanes[int(4 * u()) % 4]
        if abs(cx) < 6.0 and abs(lane) < 3.0:
            continue                                     # not on the sensor's car
        boxes.append([cx, lane + 0.3 * (u() - 0.5), 0.0, 4.2, 1.8, 1.5, 0.2 * (u() - 0.5)])
    for _ in range(40):
        side = 1.0 if u() < 0.5 else -1.0
        cyls.append([-60.0 + 120.0 * u(), side * (half + 0.5), 0.1 + 0.4 * u(), 3.0 + 5.0 * u()])
    return torch.tensor(boxes), torch.tensor(cyls)


def _indoor_points(gen, voxel: float, scale: float):
    """An RGB-D-fused room as ScanNet's meshes give it: floor and four walls (6 x 5 x 2.6 m times
    `scale`), 12 pieces of furniture (tables, beds, chairs, cabinets, sofas, stools: boxes standing on
    the floor, their five visible faces), every surface sampled at half the voxel pitch with jitter and
    0.15 voxel of noise along its normal."""
    import torch

    def u():
        return float(torch.rand(1, generator=gen))

    def vec(*a):
        return torch.tensor(a, dtype=torch.float32)

    W, L, H = 6.0 * scale, 5.0 * scale, 2.6 * scale
    faces = [(vec(0, 0, 0), vec(W, 0, 0), vec(0, L, 0)), (vec(0, 0, 0), vec(W, 0, 0), vec(0, 0, H)),
             (vec(0, L, 0), vec(W, 0, 0), vec(0, 0, H)), (vec(0, 0, 0), vec(0, L, 0), vec(0, 0, H)),
             (vec(W, 0, 0), vec(0, L, 0), vec(0, 0, H))]
    kinds = ((1.2, 0.8, 0.75), (2.0, 1.6, 0.5), (0.5, 0.5, 0.9), (0.6, 0.5, 1.8), (1.8, 0.9, 0.8), (0.4, 0.4, 0.45))
    for _ in range(12):
        lx, ly, lz = (v * scale for v in kinds[int(len(kinds) * u()) % len(kinds)])
        x0, y0 = u() * (W - lx), u() * (L - ly)
        faces += [(vec(x0, y0, lz), vec(lx, 0, 0), vec(0, ly, 0)),
                  (vec(x0, y0, 0), vec(lx, 0, 0), vec(0, 0, lz)), (vec(x0, y0 + ly, 0), vec(lx, 0, 0), vec(0, 0, lz)),
                  (vec(x0, y0, 0), vec(0, ly, 0), vec(0, 0, lz)), (vec(x0 + lx, y0, 0), vec(0, ly, 0), vec(0, 0, lz))]
    pts = []
    step = voxel * 0.5
    for o, eu, ev in faces:
        nu, nv = max(1, int(float(eu.norm()) / step)), max(1, int(float(ev.norm()) / step))
        a = (torch.arange(nu, dtype=torch.float32)[:, None] + torch.rand(nu, nv, generator=gen)) / nu
        b = (torch.arange(nv, dtype=torch.float32)[None, :] + torch.rand(nu, nv, generator=gen)) / nv
        normal = torch.linalg.cross(eu, ev)
        normal = normal / normal.norm()
        p = o + a.reshape(-1, 1) * eu + b.reshape(-1, 1) * ev
        pts.append(p + torch.randn(p.shape[0], 1, generator=gen) * (0.15 * voxel) * normal)
    return torch.cat(pts)


def _unique_voxels(p, voxel: float):
    """The distinct voxels [V, 3] int64 (>= 0) of points p [P, 3] (through one int64 key a voxel: torch's
    unique over rows is slow)."""
    import torch
    v = torch.floor(p / voxel).long()
    v = v - v.amin(0)
    dims = v.amax(0) + 1
    key = torch.unique((v[:, 0] * dims[1] + v[:, 1]) * dims[2] + v[:, 2])
    return torch.stack([key // (dims[1] * dims[2]), key // dims[2] % dims[1], key % dims[2]], 1)


def _voxels(scene: str, voxel: float, n: int, seed: int):
    """[n, 3] int64 voxel coordinates (>= 1): the scene's points voxelized, the n nearest the sensor
    (LiDAR: a range crop; sweeps of a moving sensor, 1.5 m apart, added until there are n) or nearest
    a random centre (indoor: a sphere crop; the room grown until it holds n)."""
    import torch
    gen = torch.Generator().manual_seed(1000 + seed)
    if scene in _LIDARS:
        beams, lo, hi, n_az, height = _LIDARS[scene]
        world = _street(gen)
        pts, sweep = [], 0
        while True:
            pts.append(_lidar_points(gen, beams, lo, hi, n_az, height, 1.5 * sweep, world))
            sweep += 1
            p = torch.cat(pts)
            if _unique_voxels(p, voxel).shape[0] >= n:
                break
            if sweep >= 40:
                raise ValueError(f"N={n} voxels at {voxel} m is more than 40 sweeps of {scene!r} give")
        centre = torch.zeros(3)
    else:
        scale = min(1.0, max(0.05, math.sqrt(n * voxel * voxel / 60.0)))
        while True:
            # the room at a random sub-voxel position: its planes fall anywhere inside their voxels
            p = _indoor_points(gen, voxel, scale) + torch.rand(3, generator=gen) * voxel
            if _unique_voxels(p, voxel).shape[0] >= n:
                break
            scale *= 1.4
            if scale > 20:
                raise ValueError(f"N={n} voxels at {voxel} m: no room found that holds them")
        centre = torch.tensor([3.0 * scale, 2.5 * scale, 0.0]) + (torch.rand(3, generator=gen) - 0.5) * scale
    shift = torch.floor(p / voxel).long().amin(0)
    v = _unique_voxels(p, voxel)
    dist = ((v + shift).float() * voxel + 0.5 * voxel - centre).norm(dim=1)
    v = v[torch.sort(dist, stable=True)[1][:n]]
    return v - v.amin(0) + 1


def _offsets(K: int):
    """[K^3, 3] int64 kernel offsets (dx, dy, dz), dz fastest: offset k = ((dx + r) K + dy + r) K + dz + r."""
    import torch
    r = K // 2
    return torch.tensor(list(itertools.product(range(-r, r + 1), repeat=3)), dtype=torch.int64).reshape(-1, 3)


def _submanifold_map(coords, K: int):
    """coords [N, 3] (>= 1) -> (coords sorted by (x, y, z), nbr [N, K^3] int32): nbr[o, k] the row of
    the voxel at coords[o] + offset k, -1 where none (a sorted-key lookup, as a hash table would give;
    dims = max + K keeps every key of coords + offset apart, so an offset is a constant key step)."""
    import torch
    dims = coords.amax(0) + K
    key, perm = torch.sort((coords[:, 0] * dims[1] + coords[:, 1]) * dims[2] + coords[:, 2])
    offs = _offsets(K)
    steps = ((offs[:, 0] * dims[1] + offs[:, 1]) * dims[2] + offs[:, 2]).tolist()
    nbr = torch.empty((coords.shape[0], len(steps)), dtype=torch.int32)
    last = key.numel() - 1
    for k, step in enumerate(steps):
        q = key + step
        pos = torch.searchsorted(key, q).clamp_(max=last)
        nbr[:, k] = torch.where(key[pos] == q, pos, -1).to(torch.int32)
    return coords[perm], nbr


def neighbour_order(nbr):
    """The rows of nbr [N, K_vol] sorted by their neighbour bitmask (bit k: a neighbour at offset k),
    descending, stable (TorchSparse++'s reorder_loc / spconv's mask_argsort): [N] int64."""
    import torch
    if nbr.shape[1] > 62:
        raise ValueError(f"K_vol={nbr.shape[1]} offsets do not fit a 63-bit mask")
    bits = ((nbr >= 0).to(torch.int64) << torch.arange(nbr.shape[1], device=nbr.device)).sum(1)
    return torch.sort(bits, descending=True, stable=True)[1]


@functools.lru_cache(maxsize=8)
def _structure(scene: str, voxel: float, n: int, K: int, srt: int, seed: int):
    """The CPU kernel map of a point: (coords [N, 3] int32 in voxel order, nbr [N, K^3] int32 in
    processing order -- sorted by bitmask with `srt` --, order [N] int32 or None: the output row of
    each processing row)."""
    import torch
    coords, nbr = _submanifold_map(_voxels(scene, voxel, n, seed), K)
    coords = coords.to(torch.int32)
    if not srt:
        return coords, nbr, None
    order = neighbour_order(nbr)
    return coords, nbr[order].contiguous(), order.to(torch.int32)


def tile_offsets(nbr, block_m: int):
    """Per tile of block_m processing rows of nbr [N, K_vol] (-1: no neighbour): (offs [T, K_vol] int32,
    the offsets some row of the tile has a neighbour at first, ascending, then the others; cnt [T] int32,
    how many are active), T = cdiv(N, block_m). What TorchSparse++'s reduced_sorted_mask encodes as a
    bitmask, here as a list so that the kernel's loop runs over the active offsets only."""
    import torch
    N, kv = nbr.shape
    T = -(-N // block_m)
    valid = torch.zeros((T * block_m, kv), dtype=torch.bool, device=nbr.device)
    valid[:N] = nbr >= 0
    active = valid.view(T, block_m, kv).any(1)
    offs = torch.sort((~active).to(torch.int8), dim=1, stable=True)[1].to(torch.int32).contiguous()
    return offs, active.sum(1).to(torch.int32)


def _pairs(nbr, order):
    """The explicit kernel map (spconv 1.x / MinkowskiEngine's in/out pair lists): per offset k, the
    (input rows, output rows) int64 of every neighbour, output rows in the natural order."""
    import torch
    out_rows = torch.arange(nbr.shape[0], device=nbr.device) if order is None else order.long()
    pairs = []
    for k in range(nbr.shape[1]):
        sel = nbr[:, k] >= 0
        pairs.append((nbr[sel, k].long(), out_rows[sel]))
    return pairs


# ---------------------------------------------------------------- the wrapper
def _kernel_args(x, weight, nbr, order, offs, cnt, out, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it); without
    `order` x stands in for it (never read: SORTED 0)."""
    n_out, kv = nbr.shape
    c_in, c_out = weight.shape[1], weight.shape[2]
    return dict(X=x, W=weight, NBR=nbr, ORDER=x if order is None else order, TOFF=offs, TCNT=cnt, OUT=out,
                N_out=n_out, C_in=c_in, C_out=c_out, K_vol=kv, stride_xm=x.stride(0),
                stride_wk=weight.stride(0), stride_wc=weight.stride(1), stride_wn=weight.stride(2),
                stride_nm=nbr.stride(0), stride_nk=nbr.stride(1), stride_om=out.stride(0),
                SORTED=int(order is not None), EVEN_K=int(c_in % cfg["BLOCK_K"] == 0),
                EVEN_N=int(c_out % cfg["BLOCK_N"] == 0), BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"],
                BLOCK_K=cfg["BLOCK_K"])


def _grid(n_out: int, c_out: int, cfg) -> int:
    _check_cfg(cfg)
    return triton.cdiv(n_out, cfg["BLOCK_M"]) * triton.cdiv(c_out, cfg["BLOCK_N"])


def sparse_conv_gemm(x, weight, nbr, order=None, tiles=None, *, BLOCK_M: int = 128, BLOCK_N: int = 64,
                     BLOCK_K: int = 32, num_warps: int = 4, num_stages: int = 3):
    """x [N_in, C_in] fp16 / bf16 (unit channel stride), weight [K_vol, C_in, C_out] in x's dtype (any
    strides: TorchSparse's contiguous [K_vol, C_in, C_out], or spconv's [C_out, K_vol, C_in] seen as
    .permute(1, 2, 0)), nbr [N_out, K_vol] int32 (any strides: TorchSparse++'s out_in_map, or spconv's
    [K_vol, N_out] pair table seen as .t()): nbr[i, k] the input row of row i's neighbour at offset k, -1
    where it has none (trusted: -1 or < N_in); order None (row i is output row i) or [N_out] int32, the
    output row of each row of nbr (nbr sorted by neighbour bitmask, order = its permutation);
    tiles: tile_offsets(nbr, BLOCK_M) if the caller keeps it with the map, else computed here ->
    out [N_out, C_out] in x's dtype, contiguous:
    out[order[i]] = sum_k sum over nbr[i, k] >= 0 of x[nbr[i, k]] @ weight[k], fp32 accumulation."""
    import torch
    if x.dim() != 2 or weight.dim() != 3 or nbr.dim() != 2:
        raise ValueError(f"expected x [N_in, C_in], weight [K_vol, C_in, C_out], nbr [N_out, K_vol]; got "
                         f"{tuple(x.shape)}, {tuple(weight.shape)}, {tuple(nbr.shape)}")
    n_in, c_in = x.shape
    kv, c_in_w, c_out = weight.shape
    n_out = nbr.shape[0]
    if c_in_w != c_in or nbr.shape[1] != kv:
        raise ValueError(f"weight {tuple(weight.shape)} and nbr {tuple(nbr.shape)} do not match x {tuple(x.shape)}: "
                         f"weight must be [K_vol, {c_in}, C_out] and nbr [N_out, K_vol]")
    if x.dtype not in (torch.float16, torch.bfloat16) or weight.dtype != x.dtype:
        raise ValueError(f"x and weight must be fp16 / bf16 of one dtype; got {x.dtype} and {weight.dtype}")
    if nbr.dtype != torch.int32 or (order is not None and order.dtype != torch.int32):
        raise ValueError(f"nbr and order must be int32; got {nbr.dtype} and "
                         f"{None if order is None else order.dtype}")
    devs = {t.device for t in (x, weight, nbr) + (() if order is None else (order,))}
    if len(devs) != 1:
        raise ValueError("x, weight, nbr and order must be on one device")
    cfg = {"BLOCK_M": BLOCK_M, "BLOCK_N": BLOCK_N, "BLOCK_K": BLOCK_K, "num_warps": num_warps,
           "num_stages": num_stages}
    _check_cfg(cfg)
    if c_in > 1 and x.stride(1) != 1:
        raise ValueError(f"x must have unit channel stride; got strides {tuple(x.stride())}")
    if order is not None and (order.dim() != 1 or order.shape[0] != n_out):
        raise ValueError(f"order must be [N_out] = [{n_out}]; got {tuple(order.shape)}")
    if order is not None and n_out > 1 and order.stride(0) != 1:
        order = order.contiguous()
    out = torch.empty((n_out, c_out), dtype=x.dtype, device=x.device)
    if n_out == 0 or c_out == 0:
        return out
    if n_in == 0 or c_in == 0 or kv == 0:
        return out.zero_()
    T = triton.cdiv(n_out, BLOCK_M)
    if tiles is None:
        tiles = tile_offsets(nbr, BLOCK_M)
    offs, cnt = tiles
    if tuple(offs.shape) != (T, kv) or tuple(cnt.shape) != (T,) or offs.dtype != torch.int32 \
            or cnt.dtype != torch.int32:
        raise ValueError(f"tiles must be tile_offsets(nbr, BLOCK_M={BLOCK_M}): int32 [{T}, {kv}] and [{T}]; got "
                         f"{offs.dtype} {tuple(offs.shape)} and {cnt.dtype} {tuple(cnt.shape)}")
    offs, cnt = offs.contiguous(), cnt.contiguous()
    # int32 offsets inside the kernel: the gathered rows, the map, the weight, the output
    limits = {"x": (n_in - 1) * x.stride(0) + c_in, "nbr": (n_out - 1) * nbr.stride(0) + (kv - 1) * nbr.stride(1),
              "weight": sum((s - 1) * st for s, st in zip(weight.shape, weight.stride())),
              "out": n_out * c_out}
    for name, v in limits.items():
        if v >= 2**31:
            raise ValueError(f"{name} spans {v} elements, past the kernel's int32 offsets (2^31)")
    grid = _grid(n_out, c_out, cfg)
    _kernel[(grid,)](**_kernel_args(x, weight, nbr, order, offs, cnt, out, cfg), num_warps=num_warps,
                     num_stages=num_stages)
    return out


# ---------------------------------------------------------------- the launcher hooks
def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """The point's voxel set (seeded: the street or room, the sweeps' noise) and its submanifold KxKxK
    kernel map, built on the CPU and moved: coords [N, 3] int32 (the voxels, in voxel order: the output
    rows); nbr [N, K^3] int32 in processing order (sorted by bitmask with `sorted`, order [N] int32 its
    output rows; else None), in the point's layout (spconv: the [K^3, N] table seen transposed); tiles:
    {BLOCK_M: tile_offsets} for BLOCK_M in TILE_ROWS (kept with the map, as TorchSparse++ keeps
    reduced_sorted_mask); pairs: the explicit per-offset (in, out) lists that torch_baseline scatters
    by. x [N, C_in] ~ N(0, 1), the weight ~ N(0, 1 / (K^3 C_in)) in the point's dtype and layout
    (spconv: [C_out, K^3, C_in] seen as [K^3, C_in, C_out])."""
    import torch
    scene, voxel, n, K, c_in, c_out, dt, layout, srt = _check_point(point)
    coords, nbr, order = (None if t is None else t.clone() for t in _structure(scene, voxel, n, K, srt, seed))
    kv = K ** 3
    gen = torch.Generator(device="cpu").manual_seed(seed)
    tdt = _torch_dtype(dt)
    x = torch.randn((n, c_in), generator=gen).to(tdt)
    w = torch.randn((kv, c_in, c_out), generator=gen) / math.sqrt(kv * c_in)
    if layout == "spconv":
        weight = w.permute(2, 0, 1).contiguous().to(tdt).to(device).permute(1, 2, 0)
        nbr_dev = nbr.t().contiguous().to(device).t()
    else:
        weight = w.to(tdt).to(device)
        nbr_dev = nbr.to(device)
    order_dev = None if order is None else order.to(device)
    tiles = {bm: tuple(t.to(device) for t in tile_offsets(nbr, bm)) for bm in TILE_ROWS}
    return {"x": x.to(device), "weight": weight, "nbr": nbr_dev, "order": order_dev, "tiles": tiles,
            "coords": coords.to(device),
            "pairs": [(i.to(device), o.to(device)) for i, o in _pairs(nbr, order)]}


def launch(inputs, cfg):
    """out [N_out, C_out] of inputs["x"], ["weight"], ["nbr"], ["order"], the tile lists of cfg's
    BLOCK_M from inputs["tiles"] (computed when missing)."""
    tiles = inputs.get("tiles", {}).get(cfg["BLOCK_M"])
    return sparse_conv_gemm(inputs["x"], inputs["weight"], inputs["nbr"], inputs.get("order"), tiles,
                            BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"], BLOCK_K=cfg["BLOCK_K"],
                            num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])


def reference(inputs):
    """fp32 [N_out, C_out]: per offset the gathered rows (upcast: fp64 on the CPU, fp32 on a GPU) times
    the offset's weight, summed, then scattered to the output rows by `order`."""
    import torch
    x, w, nbr, order = inputs["x"], inputs["weight"], inputs["nbr"], inputs.get("order")
    wide = torch.float64 if x.device.type == "cpu" else torch.float32
    xw, ww = x.to(wide), w.to(wide)
    acc = torch.zeros((nbr.shape[0], w.shape[2]), dtype=wide, device=x.device)
    for k in range(nbr.shape[1]):
        src = nbr[:, k].long()
        ok = src >= 0
        acc[ok] += xw[src[ok]] @ ww[k]
    if order is not None:
        out = torch.empty_like(acc)
        out[order.long()] = acc
        acc = out
    return acc.float()


def torch_baseline(inputs):
    """The explicit gather-GEMM-scatter of spconv 1.x / MinkowskiEngine / TorchSparse 1.x: per offset,
    gather its input rows, one matmul with the offset's weight in the inputs' dtype, index_add the
    products into an fp32 output at the pairs' output rows; the output cast to x's dtype."""
    import torch
    x, w = inputs["x"], inputs["weight"]
    out = torch.zeros((inputs["nbr"].shape[0], w.shape[2]), dtype=torch.float32, device=x.device)
    for k, (src, dst) in enumerate(inputs["pairs"]):
        if src.numel():
            out.index_add_(0, dst, (x[src] @ w[k]).float())
    return out.to(x.dtype)


def kernel_map_pairs(point, seed: int = 0) -> int:
    """The (input, output) pairs of the point's kernel map (seed 0's voxel set unless told)."""
    scene, voxel, n, K, _, _, _, _, srt = _check_point(point)
    _, nbr, _ = _structure(scene, voxel, n, K, srt, seed)
    return int((nbr >= 0).sum())


def bytes_moved(point) -> int:
    """x read once (every voxel is some output's neighbour: its centre), the weight once, the map
    (N K^3 int32) and with `sorted` the order (N int32) once, out written once. The tile lists (a few
    KB) and the gathers' re-reads of x (the L2's: x is 11-36 MB here) not counted."""
    _, _, n, K, c_in, c_out, dt, _, srt = _check_point(point)
    return 2 * (n * c_in + K ** 3 * c_in * c_out + n * c_out) + 4 * n * K ** 3 + 4 * n * srt


def flops(point) -> int:
    """The useful multiply-adds: 2 C_in C_out a pair of seed 0's kernel map (the kernel's tensor cores
    also multiply the zero rows of missing neighbours at the tiles' active offsets: see cta_iterations)."""
    _, _, _, _, c_in, c_out, _, _, _ = _check_point(point)
    return 2 * kernel_map_pairs(point) * c_in * c_out


def grid(cfg, point) -> int:
    """Programs of one launch: cdiv(N, BLOCK_M) row tiles x cdiv(C_out, BLOCK_N) column tiles."""
    _, _, n, _, _, c_out, _, _, _ = _check_point(point)
    return _grid(n, c_out, cfg)


@functools.lru_cache(maxsize=64)
def _tile_counts(scene, voxel, n, K, srt, block_m):
    _, nbr, _ = _structure(scene, voxel, n, K, srt, 0)
    return tile_offsets(nbr, block_m)[1]


def cta_iterations(cfg, point) -> list[int]:
    """Loop steps of each program in launch order (row tile major, column tiles fastest): its tile's
    active offsets (seed 0's map) x cdiv(C_in, BLOCK_K)."""
    scene, voxel, n, K, c_in, c_out, _, _, srt = _check_point(point)
    _check_cfg(cfg)
    cnt = _tile_counts(scene, voxel, n, K, srt, cfg["BLOCK_M"])
    steps = cnt.long() * triton.cdiv(c_in, cfg["BLOCK_K"])
    return steps.repeat_interleave(triton.cdiv(c_out, cfg["BLOCK_N"])).tolist()


def loop_iterations(cfg, point) -> int:
    """Loop steps a program, the mean over the row tiles rounded up (seed 0's map): active offsets x
    cdiv(C_in, BLOCK_K); at most K^3 cdiv(C_in, BLOCK_K)."""
    scene, voxel, n, K, c_in, _, _, _, srt = _check_point(point)
    _check_cfg(cfg)
    cnt = _tile_counts(scene, voxel, n, K, srt, cfg["BLOCK_M"])
    return -(-int(cnt.long().sum()) * triton.cdiv(c_in, cfg["BLOCK_K"]) // cnt.numel())


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory): x [N, C_in]
    and the weight in the point's dtype and layout, nbr int32 (torchsparse [N, K^3]; spconv the
    transpose of a [K^3, N] table), order int32 [N] with `sorted`, the tile lists int32, out contiguous."""
    import torch
    _, _, n, K, c_in, c_out, dt, layout, srt = _check_point(point)
    _check_cfg(cfg)
    tdt = _torch_dtype(dt)
    kv = K ** 3
    x = torch.empty((n, c_in), dtype=tdt, device="meta")
    if layout == "spconv":
        weight = torch.empty((c_out, kv, c_in), dtype=tdt, device="meta").permute(1, 2, 0)
        nbr = torch.empty((kv, n), dtype=torch.int32, device="meta").t()
    else:
        weight = torch.empty((kv, c_in, c_out), dtype=tdt, device="meta")
        nbr = torch.empty((n, kv), dtype=torch.int32, device="meta")
    order = torch.empty((n,), dtype=torch.int32, device="meta") if srt else None
    T = triton.cdiv(n, cfg["BLOCK_M"])
    offs = torch.empty((T, kv), dtype=torch.int32, device="meta")
    cnt = torch.empty((T,), dtype=torch.int32, device="meta")
    out = torch.empty((n, c_out), dtype=tdt, device="meta")
    return _kernel_args(x, weight, nbr, order, offs, cnt, out, cfg)
