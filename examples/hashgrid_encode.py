"""Instant-NGP's multiresolution hash encoding, forward -- tiny-cuda-nn's GridEncoding (HashGrid) as
instant-ngp, nerfstudio's nerfacto, torch-ngp / HashNeRF, neuralangelo and threestudio run it -- a bare
@triton.jit kernel + its launcher.

    x [N, D] fp32 coordinates in [0, 1]^D (D = 2 or 3; any row and column strides: instant-ngp hands
    the encoding the first 3 floats of its 7-float NerfCoordinate rows), embeddings [L, T, F] fp16 /
    fp32 (L levels, T = 2^log2_hashmap_size entries a level, F = 1 / 2 / 4 / 8 features an entry,
    contiguous). Level l (tcnn's grid_scale / grid_resolution, torch-ngp's get_grid_index):
        s_l   = fp32(base_resolution b^l - 1)          (b the per-level scale; computed on the host)
        res_l = ceil(s_l) + 1,  R_l = res_l + 1 grid vertices a side
        pos_d = fmaf(s_l, clamp(x_d, 0, 1), 0.5)  (fp32, one rounding),  g_d = floor(pos_d),
        w_d   = pos_d - g_d
        corner c in {0, 1}^D:  v = g + c,  weight prod_d (c_d ? w_d : 1 - w_d)
        index = v_0 + R v_1 (+ R^2 v_2)                      if R^D <= T   (a dense level)
              = (v_0 1 ^ v_1 2654435761 ^ v_2 805459861) mod T  (uint32)  otherwise (hashed)
        out[n, l F + f] = sum_c weight_c embeddings[l, index_c, f]       (fp32 accumulation)
    The output is [N, L F] in the embeddings' dtype (tcnn's encoding returns its parameters'
    precision: fp16 tables give fp16 features, fp32 tables fp32), contiguous, row-major.
Conventions: the half-cell offset (align_corners off) and the (res + 1)-vertex dense stride are
torch-ngp's (tcnn strides by res, aliasing the last vertex row); every level stores T entries
([L, T, F], as HashNeRF / nerfacc-style pure-torch encoders keep one embedding table a level): a
dense level uses its first R^D rows, tcnn's packed layout would store only those. Coordinates outside
[0, 1] are clamped (the kernel's loads then stay in bounds whatever x holds). x is read as given, the
table once a corner: no copies.
Closest in examples/: deform_attn (multi-level bilinear sampling of dense feature maps, the samples
weighted and summed into 32 channels) and embedding_gather / embedding_bag (rows gathered by given
ids). Here the rows come from a spatial hash or a dense index computed from the coordinates, 2^D = 4
/ 8 corners of tiny entries (F = 1-8 features, 2-32 bytes), and every level's result is kept
(concatenated into L F features), not summed.

Work split: a program owns BLOCK_N points (consecutive rows) and walks levels LEVELS at a time, the
step's LEVELS levels vectorised next to its points ([BLOCK_N, LEVELS, 1] positions, weights and
indices, [BLOCK_N, LEVELS, F] gathers: each thread holds whole F-feature entries, one vector load an
entry of up to 16 bytes -- fp16 F = 8 -- two for fp32 F = 8). Per step: the LEVELS scales and
vertex counts (two small per-level tables, L2-resident), the positions, floors and fractions, both
candidate indices per dimension (the dense row offsets v_d R^d and the hash products v_d pi_d in
uint32, the +1 corners by one add), then the 2^D corners unrolled: the index selected by the level's
kind, the weight from the fractions, one gather and an fp32 multiply-add into the [BLOCK_N, LEVELS,
F] accumulator; finally the step's LEVELS x F contiguous outputs a point are stored (converted to the
output dtype).
LEVEL_MAJOR picks the grid: 0 -- one program a point block, its loop over all L levels (the
coordinates loaded once, each output row written whole by one program, L / LEVELS loop steps); 1 --
one program a (level step, point block), tcnn's and torch-ngp's grid with the level outermost
(blockIdx.y = level): the programs resident together gather from one level's table only (the L2
working set is one level, not L), at the cost of re-reading the coordinates L / LEVELS times and
storing each row in LEVELS x F pieces from different programs.
STREAM_OUT stores the output with the streaming cache hint (st.global.cs: evict-first in L2), so the
write-once output (17-550 MB at the points) does not evict the tables' lines that later gathers
reuse; 0 stores it write-back.

Masks: points past N (EVEN_N 0: BLOCK_N does not divide N) load coordinate 0 (their gathers stay in
bounds) and are not stored; levels past L in the last step (EVEN_L 0: LEVELS does not divide L) read
level L - 1's table (clamped base) with scale 0 and are not stored. The gathers need no mask: a
clamped coordinate gives an index below T. Offsets: int32 throughout -- the wrapper checks L T F, N L F
and x's largest offset below 2^31 (the points' largest: 2^29 table elements). With int64 row offsets
triton 3.9's ptxas parked a loop invariant in local memory on the 256-point 2-level 4-warp configs of
the 2-D point (a 64-register target) and the worst config took 64 more registers.

Numerics: positions as tcnn's fmaf(scale, x, 0.5f) (tl.fma: one rounding), fractions exact, weights
and accumulation fp32, one rounding to the output dtype. On the finest gigapixel levels (s up to
2^19) an fp32 position resolves 1/16 of a cell -- the library's own resolution, reproduced exactly
since the reference encodes from the same fp32 positions.

Tunables: BLOCK_N (points a program: 64 / 128 / 256), LEVELS (levels a step: 1 / 2 / 4 -- gathers in
flight a thread, 2^D LEVELS entries, against registers: the fp32 accumulator is BLOCK_N LEVELS F /
(32 num_warps) a thread), LEVEL_MAJOR (0 / 1, above), STREAM_OUT (0 / 1, above), num_warps (4 / 8);
num_stages held at 1 (the loop's gathers depend on nothing from the previous step and feed no dot:
nothing for the pipeliner; the same binary at every num_stages, checked for 1-3). On sm_90 every
config of the sweep compiles at every point without spills: 20-105 registers under triton 3.6 and
21-188 under 3.9 (the most for neuralangelo's F 8 at 256 points x 4 levels on 4 warps: 3.9 hoists all
2^D LEVELS gathers of a step, 3.6 keeps fewer in flight); shared memory 0 under 3.6, 0-1 KiB under
3.9 (the coordinates' layout change, 4 BLOCK_N bytes once a program). On sm_120 the configs tried
compile too; triton 3.9's ptxas gives BASELINE at the neuralangelo point 64 registers and 8 bytes of
local memory there (a 64-register target; none on sm_90).
Problem parameters (a workload point): N, D, L, F, log2_T, base_res, max_res (the finest level's
nominal resolution: b = exp(ln(max_res / base_res) / (L - 1)), as instant-ngp and neuralangelo derive
it), dtype (the table's: fp16 / fp32), coords (how make_inputs draws x: "rays", "lattice",
"uniform"), optional x_pitch (x the first D columns of an [N, x_pitch] buffer) and spacing (the
lattice's, default 1/4096).
"""

from __future__ import annotations

import functools
import math
import struct

import triton
import triton.language as tl

PRIMES = (1, 2654435761, 805459861)   # tcnn's / torch-ngp's spatial-hash primes, one a dimension
MAX_INT32 = 2**31 - 1
MAX_SCALE = float(2**23)              # beyond this an fp32 position cannot resolve half a cell
RAY_SAMPLES = 64                      # samples a ray in make_inputs' "rays"
RAY_STEP = math.sqrt(3.0) / 1024.0    # instant-ngp's minimum cone step (NERF_MIN_CONE_STEPSIZE)
LATTICE_STEP = 1.0 / 4096.0           # neuralangelo's 2048^3 marching cubes over [-1, 1], range [-2, 2]


@triton.jit
def _store_out(ptrs, vals, mask, MASKED: tl.constexpr, STREAM_OUT: tl.constexpr):
    if STREAM_OUT:
        if MASKED:
            tl.store(ptrs, vals, mask=mask, cache_modifier=".cs")
        else:
            tl.store(ptrs, vals, cache_modifier=".cs")
    else:
        if MASKED:
            tl.store(ptrs, vals, mask=mask)
        else:
            tl.store(ptrs, vals)


@triton.jit
def _kernel(X, EMB, OUT, SCALES, RES1, N, L, n_blocks, stride_xn, stride_xd, stride_on,
            D: tl.constexpr, F: tl.constexpr, LOG2_T: tl.constexpr, EVEN_N: tl.constexpr,
            EVEN_L: tl.constexpr, BLOCK_N: tl.constexpr, LEVELS: tl.constexpr,
            LEVEL_MAJOR: tl.constexpr, STREAM_OUT: tl.constexpr):
    T: tl.constexpr = 1 << LOG2_T
    HMASK: tl.constexpr = T - 1
    P1: tl.constexpr = 2654435761                        # PRIMES[1], PRIMES[2] (uint32 constants)
    P2: tl.constexpr = 805459861
    pid = tl.program_id(0)
    if LEVEL_MAJOR:
        grp = pid // n_blocks                            # the level step outermost (tcnn's grid.y)
        blk = pid - grp * n_blocks
        l_lo = grp * LEVELS
        l_hi = l_lo + LEVELS
    else:
        blk = pid
        l_lo = 0
        l_hi = L
    rn = blk * BLOCK_N + tl.arange(0, BLOCK_N)
    xp = X + rn * stride_xn
    n_ok = rn < N
    if EVEN_N:
        x0 = tl.load(xp)
        x1 = tl.load(xp + stride_xd)
    else:
        x0 = tl.load(xp, mask=n_ok, other=0.0)
        x1 = tl.load(xp + stride_xd, mask=n_ok, other=0.0)
    x0 = tl.minimum(tl.maximum(x0, 0.0), 1.0)[:, None, None]           # [BLOCK_N, 1, 1]
    x1 = tl.minimum(tl.maximum(x1, 0.0), 1.0)[:, None, None]
    if D == 3:
        if EVEN_N:
            x2 = tl.load(xp + 2 * stride_xd)
        else:
            x2 = tl.load(xp + 2 * stride_xd, mask=n_ok, other=0.0)
        x2 = tl.minimum(tl.maximum(x2, 0.0), 1.0)[:, None, None]

    # every per-point-level value is [BLOCK_N, LEVELS, 1], broadcast along F at the gathers and the
    # accumulation: one layout family from the coordinates to the store
    jl = tl.arange(0, LEVELS)
    jf = tl.arange(0, F)[None, None, :]
    n_ok3 = n_ok[:, None, None]
    out_rows = (rn * stride_on)[:, None, None] + jf                        # [BLOCK_N, 1, F]
    for l0 in range(l_lo, l_hi, LEVELS):
        lv = l0 + jl                                     # [LEVELS] the step's levels
        if EVEN_L:
            s = tl.load(SCALES + lv)
            r1 = tl.load(RES1 + lv)
            lvc = lv
        else:
            l_ok = lv < L
            s = tl.load(SCALES + lv, mask=l_ok, other=0.0)
            r1 = tl.load(RES1 + lv, mask=l_ok, other=0)
            lvc = tl.minimum(lv, L - 1)
        tab = EMB + (lvc * (T * F))[None, :, None] + jf                   # [1, LEVELS, F]
        dense = (r1 > 0)[None, :, None]                  # RES1 holds R for a dense level, 0 if hashed
        r1 = r1[None, :, None]
        s = s[None, :, None]

        p0 = tl.fma(x0, s, 0.5)                          # [BLOCK_N, LEVELS, 1]
        g0f = tl.floor(p0)
        w0 = p0 - g0f
        g0 = g0f.to(tl.int32)
        p1 = tl.fma(x1, s, 0.5)
        g1f = tl.floor(p1)
        w1 = p1 - g1f
        g1 = g1f.to(tl.int32)
        # per dimension, the lower corner's dense offset and hash term, and the upper's (one add)
        d1a = g1 * r1
        d1b = d1a + r1
        h0a = g0.to(tl.uint32)
        h1a = g1.to(tl.uint32) * P1
        h1b = h1a + P1
        if D == 3:
            p2 = tl.fma(x2, s, 0.5)
            g2f = tl.floor(p2)
            w2 = p2 - g2f
            g2 = g2f.to(tl.int32)
            rr = r1 * r1
            d2a = g2 * rr
            d2b = d2a + rr
            h2a = g2.to(tl.uint32) * P2
            h2b = h2a + P2

        acc = tl.zeros((BLOCK_N, LEVELS, F), dtype=tl.float32)
        for c in tl.static_range(2 ** D):
            if c & 1:
                wc = w0
                dc = g0 + 1
                hc = h0a + 1
            else:
                wc = 1.0 - w0
                dc = g0
                hc = h0a
            if (c >> 1) & 1:
                wc = wc * w1
                dc = dc + d1b
                hc = hc ^ h1b
            else:
                wc = wc * (1.0 - w1)
                dc = dc + d1a
                hc = hc ^ h1a
            if D == 3:
                if (c >> 2) & 1:
                    wc = wc * w2
                    dc = dc + d2b
                    hc = hc ^ h2b
                else:
                    wc = wc * (1.0 - w2)
                    dc = dc + d2a
                    hc = hc ^ h2a
            idx = tl.where(dense, dc, (hc & HMASK).to(tl.int32))
            v = tl.load(tab + idx * F)                   # [BLOCK_N, LEVELS, F] one entry a vector
            acc += wc * v.to(tl.float32)

        o = acc.to(OUT.dtype.element_ty)
        optr = OUT + (out_rows + (lv * F)[None, :, None])
        if EVEN_L:
            _store_out(optr, o, n_ok3, not EVEN_N, STREAM_OUT)
        elif EVEN_N:
            _store_out(optr, o, l_ok[None, :, None], True, STREAM_OUT)
        else:
            _store_out(optr, o, n_ok3 & l_ok[None, :, None], True, STREAM_OUT)


# ---------------------------------------------------------------- launcher
ROLE = "held-out-28"
DTYPES = ("fp16", "fp32")                # the table's (and the output's); coordinates are fp32
TUNABLES = ("BLOCK_N", "LEVELS", "LEVEL_MAJOR", "STREAM_OUT", "num_warps", "num_stages")
BASELINE = {"BLOCK_N": 128, "LEVELS": 2, "LEVEL_MAJOR": 0, "STREAM_OUT": 0, "num_warps": 4, "num_stages": 1}
# the study's sweep: 3 x 3 x 2 x 2 x 2 = 72 configs -- 64-256 points x 1-4 levels a step (1/4 to 8
# point-levels a thread: below 1 the block's entries are replicated over the threads), the level loop
# inside a program or the level-major grid, write-back or streaming output stores, 4 / 8 warps
SWEEP_AXES = {"BLOCK_N": [64, 128, 256], "LEVELS": [1, 2, 4], "LEVEL_MAJOR": [0, 1], "STREAM_OUT": [0, 1],
              "num_warps": [4, 8], "num_stages": [1]}

# Three production encodings at their real batch sizes: different tables (4 B fp16 entries in a
# 32 MiB L2-resident table, 16 B fp16 entries in a 1 GiB one, 8 B fp32 entries in a 2 GiB one),
# dimensions, output widths and access patterns (rays, a dense lattice, uniform samples).
POINTS = [
    # instant-ngp NeRF training step (the paper's NeRF encoding: L 16, F 2, T 2^19, N_min 16, N_max
    # 2048 for aabb_scale 1 -> b = 1.3819; levels 0-4 dense, 5-15 hashed): its ~2^18-sample target
    # batch (4096 rays x 64 samples, ray-major, steps of sqrt(3)/1024 in runs where the occupancy grid
    # lets them through); the positions the first 3 floats of instant-ngp's 7-float NerfCoordinate rows
    # (x_pitch 7: a strided view); fp16 tables and output [2^18, 32]. 44 MB of unique traffic, but
    # 2^18 x 16 x 8 = 33.5 M 4-byte gathers from the L2-resident tables (up to 1 GB of 32-byte sectors):
    # roughly 0.1-0.2 ms on an H100
    {"N": 262144, "D": 3, "L": 16, "F": 2, "log2_T": 19, "base_res": 16, "max_res": 2048, "dtype": "fp16",
     "coords": "rays", "x_pitch": 7},
    # neuralangelo's SDF hash grid (levels 16, dim 8, dict_size 22, min / max logres 5 / 11: N_min 32,
    # N_max 2048, b = 2^0.4; levels 0-5 dense, 6-15 hashed) at mesh extraction (extract_mesh.py with
    # the README's --resolution=2048 --block_res=128): one block's 129^3 lattice (spacing 1/4096 after
    # the range [-2, 2] normalisation) a call, z fastest; tcnn's default fp16 table (1 GiB) and output
    # [2146689, 128]; N ragged against every BLOCK_N. A coherent regime: the block touches 5 MB of
    # table, its 275 M 16-byte gathers mostly hit L1 / L2, the 550 MB output dominates DRAM: roughly
    # 0.3-1 ms
    {"N": 2146689, "D": 3, "L": 16, "F": 8, "log2_T": 22, "base_res": 32, "max_res": 2048, "dtype": "fp16",
     "coords": "lattice"},
    # instant-ngp's gigapixel image config (configs/image/base.json: L 16, F 2, T 2^24, N_min 16,
    # tcnn's default per_level_scale 2 -> N_max 524288; levels 0-7 dense, 8-15 hashed) as a training
    # batch of 2^18 uniform random image positions (tcnn's image-learning batch), with the table in fp32
    # (tcnn.Encoding(..., dtype=torch.float32), the precision threestudio's encoders choose): 2 GiB of
    # table, fp32 output [2^18, 32]. The 8 hashed levels' 8-byte gathers land at random in 128 MiB
    # tables (DRAM, a 32-byte sector each): roughly 0.1-0.3 ms
    {"N": 262144, "D": 2, "L": 16, "F": 2, "log2_T": 24, "base_res": 16, "max_res": 524288, "dtype": "fp32",
     "coords": "uniform"},
]


def _torch_dtype(name: str):
    import torch
    try:
        return {"fp16": torch.float16, "fp32": torch.float32}[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}") from None


def _esize(name: str) -> int:
    if name not in DTYPES:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}")
    return 2 if name == "fp16" else 4


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_num(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _f32(v: float) -> float:
    """v rounded to the nearest fp32 (as a Python float)."""
    return struct.unpack("f", struct.pack("f", v))[0]


def _check_point(point) -> tuple:
    """(N, D, L, F, log2_T, base_res, per_level_scale, dtype, coords, x_pitch), every field checked."""
    for k in ("N", "L", "log2_T"):
        v = point[k]
        if not _is_int(v) or v < 1:
            raise ValueError(f"{k}={v!r} must be a positive int")
    N, L, lt = point["N"], point["L"], point["log2_T"]
    D = point["D"]
    if D not in (2, 3) or not _is_int(D):
        raise ValueError(f"D={D!r} must be 2 or 3")
    F = point["F"]
    if F not in (1, 2, 4, 8) or not _is_int(F):
        raise ValueError(f"F={F!r} must be 1, 2, 4 or 8 (features an entry)")
    if lt > 24:
        raise ValueError(f"log2_T={lt} must be at most 24")
    base, top = point["base_res"], point.get("max_res", point["base_res"])
    if not _is_num(base) or base < 1:
        raise ValueError(f"base_res={base!r} must be a number >= 1")
    if not _is_num(top) or top < base:
        raise ValueError(f"max_res={top!r} must be a number >= base_res={base}")
    pls = math.exp(math.log(top / base) / (L - 1)) if L > 1 else 1.0
    dt = point.get("dtype", "fp16")
    _esize(dt)
    coords = point.get("coords", "uniform")
    if coords not in ("rays", "lattice", "uniform"):
        raise ValueError(f"coords={coords!r} must be 'rays', 'lattice' or 'uniform'")
    if coords == "lattice":
        k = round(N ** (1.0 / D))
        if k ** D != N or k < 2:
            raise ValueError(f"N={N} must be k^{D} (k >= 2) for coords 'lattice'")
        sp = point.get("spacing", LATTICE_STEP)
        if not _is_num(sp) or not 0.0 < sp * (k - 1) <= 0.5:
            raise ValueError(f"spacing={sp!r} must be positive with (k - 1) spacing <= 0.5 (k = {k})")
    pitch = point.get("x_pitch", D)
    if not _is_int(pitch) or pitch < D:
        raise ValueError(f"x_pitch={pitch!r} must be an int >= D={D}")
    if L * (1 << lt) * F > MAX_INT32 or N * max(pitch, L * F) > MAX_INT32:
        raise ValueError(f"L T F = {L * (1 << lt) * F} and N x max(x_pitch, L F) must stay below 2^31")
    _level_table(L, D, lt, float(base), pls)             # the scales' range
    return N, D, L, F, lt, float(base), pls, dt, coords, pitch


def _check_cfg(cfg) -> None:
    bn, lv, lm, so, nw = cfg["BLOCK_N"], cfg["LEVELS"], cfg["LEVEL_MAJOR"], cfg["STREAM_OUT"], cfg["num_warps"]
    if not _is_int(bn) or bn < 16 or bn > 1024 or bn & (bn - 1):
        raise ValueError(f"BLOCK_N={bn!r} must be a power of two from 16 to 1024")
    if not _is_int(lv) or lv < 1 or lv > 16 or lv & (lv - 1):
        raise ValueError(f"LEVELS={lv!r} must be a power of two from 1 to 16")
    if bn * lv > 4096:
        raise ValueError(f"BLOCK_N x LEVELS = {bn * lv} > 4096 (the step's point-levels live in registers)")
    if lm not in (0, 1) or not isinstance(lm, (int, bool)):
        raise ValueError(f"LEVEL_MAJOR={lm!r} must be 0 or 1")
    if so not in (0, 1) or not isinstance(so, (int, bool)):
        raise ValueError(f"STREAM_OUT={so!r} must be 0 or 1")
    if not _is_int(nw) or nw < 1 or nw > 16 or nw & (nw - 1):
        raise ValueError(f"num_warps={nw!r} must be a power of two from 1 to 16")
    st = cfg.get("num_stages", 1)
    if not _is_int(st) or st < 1:
        raise ValueError(f"num_stages={st!r} must be a positive int")


@functools.lru_cache(maxsize=64)
def _level_table(L: int, D: int, log2_T: int, base_res: float, per_level_scale: float) -> tuple:
    """Per level (scale s_l (an fp32 value), res_l, R_l = res_l + 1, dense): s_l = fp32(base b^l - 1),
    res_l = ceil(s_l) + 1, dense iff R_l^D <= T. ValueError if a scale leaves [0, 2^23]."""
    T = 1 << log2_T
    out = []
    for lvl in range(L):
        s = _f32(base_res * per_level_scale ** lvl - 1.0)
        if not 0.0 <= s <= MAX_SCALE:
            raise ValueError(f"level {lvl}: scale {s} must lie in [0, 2^23] (base_res={base_res}, "
                             f"per_level_scale={per_level_scale})")
        res = math.ceil(s) + 1
        out.append((s, res, res + 1, (res + 1) ** D <= T))
    return tuple(out)


def level_table(L: int, D: int, log2_T: int, base_res: float, per_level_scale: float) -> list[tuple]:
    """The encoding's levels: [(scale, res, vertices a side R, dense)] (see _level_table)."""
    return list(_level_table(L, D, log2_T, float(base_res), float(per_level_scale)))


@functools.lru_cache(maxsize=32)
def _level_tensors(L: int, D: int, log2_T: int, base_res: float, per_level_scale: float, device: str):
    """(SCALES fp32 [L], RES1 int32 [L]: R for a dense level, 0 for a hashed one) on `device`, cached."""
    import torch
    tab = _level_table(L, D, log2_T, base_res, per_level_scale)
    scales = torch.tensor([t[0] for t in tab], dtype=torch.float32, device=device)
    res1 = torch.tensor([t[2] if t[3] else 0 for t in tab], dtype=torch.int32, device=device)
    return scales, res1


def _kernel_args(x, emb, out, scales, res1, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (the wrapper and example_args share it)."""
    N, D = x.shape
    L, T, F = emb.shape
    n_blocks = triton.cdiv(N, cfg["BLOCK_N"])
    return dict(X=x, EMB=emb, OUT=out, SCALES=scales, RES1=res1, N=N, L=L, n_blocks=n_blocks,
                stride_xn=x.stride(0), stride_xd=x.stride(1), stride_on=out.stride(0), D=D, F=F,
                LOG2_T=T.bit_length() - 1, EVEN_N=int(N % cfg["BLOCK_N"] == 0),
                EVEN_L=int(L % cfg["LEVELS"] == 0), BLOCK_N=cfg["BLOCK_N"], LEVELS=cfg["LEVELS"],
                LEVEL_MAJOR=int(cfg["LEVEL_MAJOR"]), STREAM_OUT=int(cfg["STREAM_OUT"]))


def _grid_size(N: int, L: int, cfg) -> int:
    n_blocks = triton.cdiv(N, cfg["BLOCK_N"])
    return n_blocks * (triton.cdiv(L, cfg["LEVELS"]) if cfg["LEVEL_MAJOR"] else 1)


def hashgrid_encode(x, embeddings, base_resolution: float = 16.0, per_level_scale: float = 2.0, *,
                    BLOCK_N: int = 128, LEVELS: int = 2, LEVEL_MAJOR: int = 0, STREAM_OUT: int = 0,
                    num_warps: int = 4, num_stages: int = 1):
    """The multiresolution hash encoding of x [N, D] fp32 (D = 2 or 3, coordinates in [0, 1]: others
    are clamped; any strides) with embeddings [L, T, F] fp16 / fp32 (contiguous, T a power of two up to
    2^24, F 1 / 2 / 4 / 8) -> [N, L F] in the embeddings' dtype, contiguous. base_resolution and
    per_level_scale as tcnn's HashGrid config: level l's scale base b^l - 1."""
    import torch
    cfg = {"BLOCK_N": BLOCK_N, "LEVELS": LEVELS, "LEVEL_MAJOR": LEVEL_MAJOR, "STREAM_OUT": STREAM_OUT,
           "num_warps": num_warps, "num_stages": num_stages}
    _check_cfg(cfg)
    if x.dim() != 2 or x.shape[1] not in (2, 3) or x.dtype != torch.float32:
        raise ValueError(f"x must be [N, 2 or 3] fp32; got {tuple(x.shape)} {x.dtype}")
    if embeddings.dim() != 3 or embeddings.dtype not in (torch.float16, torch.float32):
        raise ValueError(f"embeddings must be [L, T, F] fp16 / fp32; got {tuple(embeddings.shape)} "
                         f"{embeddings.dtype}")
    L, T, F = embeddings.shape
    if L < 1 or T < 1 or T & (T - 1) or T > 2**24 or F not in (1, 2, 4, 8):
        raise ValueError(f"embeddings must be [L >= 1, T a power of two <= 2^24, F in 1 / 2 / 4 / 8]; got "
                         f"{tuple(embeddings.shape)}")
    if not embeddings.is_contiguous():
        raise ValueError("embeddings must be contiguous ([L, T, F] row-major)")
    if x.device != embeddings.device:
        raise ValueError(f"x and embeddings must be on one device; got {x.device} and {embeddings.device}")
    if not _is_num(base_resolution) or base_resolution < 1 or not _is_num(per_level_scale) or per_level_scale < 1:
        raise ValueError(f"base_resolution={base_resolution!r} and per_level_scale={per_level_scale!r} must be "
                         f"numbers >= 1")
    N, D = x.shape
    top = (N - 1) * x.stride(0) + (D - 1) * x.stride(1) if N else 0
    if L * T * F > MAX_INT32 or N * L * F > MAX_INT32 or top > MAX_INT32:
        raise ValueError(f"L T F = {L * T * F}, N L F = {N * L * F} and x's largest offset {top} must stay below "
                         f"2^31 (the kernel's int32 offsets)")
    out = torch.empty((N, L * F), dtype=embeddings.dtype, device=x.device)
    if N == 0:
        return out
    lt = T.bit_length() - 1
    scales, res1 = _level_tensors(L, D, lt, float(base_resolution), float(per_level_scale), str(x.device))
    args = _kernel_args(x, embeddings, out, scales, res1, cfg)
    _kernel[(_grid_size(N, L, cfg),)](**args, num_warps=num_warps, num_stages=num_stages)
    return out


# ---------------------------------------------------------------- inputs, reference, baseline
def make_coords(point, seed: int = 0):
    """x for `point`, drawn on the CPU from a seeded torch.Generator: an [N, x_pitch] fp32 buffer whose
    first D columns are the coordinates (instant-ngp's NerfCoordinate rows with x_pitch 7: position,
    dt, direction). coords "rays": cdiv(N, 64) rays from a sphere of radius 1.2 around the cube's
    centre towards targets in [0.3, 0.7]^D, each with 64 samples (ray-major) in two runs of 32
    consecutive steps of sqrt(3)/1024 (jittered by a per-ray offset) placed along the ray's chord of
    the unit cube; "lattice": a k^D lattice (k = N^(1/D), the last axis fastest) of spacing 1/4096
    (or the point's "spacing") at a block position inside [0.25, 0.75]^D (the bounding sphere's cube);
    "uniform": U[0, 1)^D."""
    import torch
    N, D, _, _, _, _, _, _, coords, pitch = _check_point(point)
    gen = torch.Generator(device="cpu").manual_seed(seed)
    if coords == "uniform":
        pos = torch.rand((N, D), generator=gen)
        extra = torch.rand((N, pitch - D), generator=gen)
    elif coords == "lattice":
        k = round(N ** (1.0 / D))
        step = float(point.get("spacing", LATTICE_STEP))
        span = (k - 1) * step
        nblk = max(1, int(0.5 // span))
        org = 0.25 + torch.randint(0, nblk, (D,), generator=gen).double() * span
        ax = [org[d] + torch.arange(k, dtype=torch.float64) * step for d in range(D)]
        pos = torch.stack(torch.meshgrid(*ax, indexing="ij"), -1).reshape(N, D).float()
        extra = torch.zeros((N, pitch - D))
    else:
        R = -(-N // RAY_SAMPLES)
        c = torch.full((D,), 0.5, dtype=torch.float64)
        o = torch.randn((R, D), generator=gen, dtype=torch.float64)
        o = c + 1.2 * o / o.norm(dim=1, keepdim=True)
        tgt = 0.3 + 0.4 * torch.rand((R, D), generator=gen, dtype=torch.float64)
        dr = tgt - o
        dr = dr / dr.norm(dim=1, keepdim=True)
        inv = 1.0 / torch.where(dr.abs() < 1e-12, torch.full_like(dr, 1e-12), dr)
        ta, tb = (0.0 - o) * inv, (1.0 - o) * inv
        t_in = torch.minimum(ta, tb).amax(1)
        t_out = torch.maximum(ta, tb).amin(1)
        run = RAY_SAMPLES // 2
        room = (t_out - t_in - run * RAY_STEP).clamp(min=0.0)
        k = torch.arange(run, dtype=torch.float64)
        jit = torch.rand((R, 1), generator=gen, dtype=torch.float64)
        starts = t_in[:, None] + room[:, None] * torch.rand((R, 2), generator=gen, dtype=torch.float64)
        t = (starts[:, :, None] + (k + jit[:, :, None]) * RAY_STEP).reshape(R, RAY_SAMPLES)
        t = torch.minimum(t, t_out[:, None])
        p = (o[:, None, :] + t[:, :, None] * dr[:, None, :]).clamp(0.0, 1.0)
        pos = p.reshape(R * RAY_SAMPLES, D)[:N].float()
        dirs = dr[:, None, :].expand(R, RAY_SAMPLES, D).reshape(R * RAY_SAMPLES, D)[:N].float()
        extra = torch.cat([torch.full((N, 1), RAY_STEP), dirs], 1)[:, :pitch - D]
        if extra.shape[1] < pitch - D:
            extra = torch.cat([extra, torch.zeros((N, pitch - D - extra.shape[1]))], 1)
    return torch.cat([pos, extra], 1).contiguous()


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """x (make_coords moved to `device`, its first D columns: a strided view with x_pitch > D), the
    table [L, T, F] U(-1, 1) in the point's dtype drawn on the device from a seeded generator (a trained
    table's magnitudes; tcnn initialises U(-1e-4, 1e-4)), base_res and the per-level scale."""
    import torch
    N, D, L, F, lt, base, pls, dt, _, pitch = _check_point(point)
    buf = make_coords(point, seed).to(device)
    gen = torch.Generator(device=device).manual_seed(seed + 1)
    emb = torch.rand((L, 1 << lt, F), generator=gen, device=device, dtype=_torch_dtype(dt)) * 2 - 1
    return {"x": buf[:, :D], "embeddings": emb, "base_res": base, "per_level_scale": pls}


def launch(inputs, cfg):
    """[N, L F] in the table's dtype."""
    return hashgrid_encode(inputs["x"], inputs["embeddings"], inputs["base_res"], inputs["per_level_scale"],
                           BLOCK_N=cfg["BLOCK_N"], LEVELS=cfg["LEVELS"], LEVEL_MAJOR=cfg["LEVEL_MAJOR"],
                           STREAM_OUT=cfg["STREAM_OUT"], num_warps=cfg["num_warps"],
                           num_stages=cfg["num_stages"])


def corner_indices(g, level, T: int):
    """The table rows of integer grid vertices g [..., D] (int64) at `level` (a level_table entry):
    v_0 + R v_1 + R^2 v_2 if dense, else the uint32 XOR of v_d pi_d mod T."""
    import torch
    _, _, R, dense = level
    D = g.shape[-1]
    if dense:
        idx = torch.zeros_like(g[..., 0])
        for d in range(D):
            idx = idx + g[..., d] * (R ** d)
        return idx
    idx = torch.zeros_like(g[..., 0])
    for d in range(D):
        idx = torch.bitwise_xor(idx, (g[..., d] * PRIMES[d]) & 0xFFFFFFFF)
    return idx & (T - 1)


def encode_reference(x, embeddings, base_res: float, per_level_scale: float, dtype=None):
    """The encoding in float64 (or `dtype`) from the fp32 positions the library forms (fmaf: the exact
    product x s + 0.5 rounded once to fp32), level by level: [N, L, F]."""
    import torch
    dt = dtype or torch.float64
    L, T, F = embeddings.shape
    N, D = x.shape
    levels = _level_table(L, D, T.bit_length() - 1, float(base_res), float(per_level_scale))
    xd = x.double().clamp(0.0, 1.0)
    corners = torch.tensor([[(c >> d) & 1 for d in range(D)] for c in range(2 ** D)], device=x.device)
    out = torch.empty((N, L, F), dtype=dt, device=x.device)
    for lvl, lev in enumerate(levels):
        pos = (xd * lev[0] + 0.5).float().double()
        g = torch.floor(pos)
        w = pos - g
        gc = g.long()[:, None, :] + corners[None]                      # [N, 2^D, D]
        idx = corner_indices(gc, lev, T)
        wt = torch.where(corners[None].bool(), w[:, None, :], 1.0 - w[:, None, :]).prod(-1)    # [N, 2^D]
        vals = embeddings[lvl][idx].to(dt)                             # [N, 2^D, F]
        out[:, lvl] = (wt.to(dt)[..., None] * vals).sum(1)
    return out


def reference(inputs):
    """fp32 [N, L F] (computed in float64 from the library's fp32 positions)."""
    ref = encode_reference(inputs["x"], inputs["embeddings"], inputs["base_res"], inputs["per_level_scale"])
    return ref.reshape(ref.shape[0], -1).float()


def torch_baseline(inputs):
    """What eager torch runs without a custom kernel (torch-ngp's / HashNeRF's pure-torch encoder,
    vectorised over points): per level, the positions (formed in float64 and rounded once to fp32, as
    fmaf), floors and fractions, the 2^D corners' dense or hashed rows (int64), one [N, 2^D, F] gather,
    the fp32 weights and the weighted sum; [N, L F] in the table's dtype."""
    import torch
    x, emb = inputs["x"], inputs["embeddings"]
    L, T, F = emb.shape
    N, D = x.shape
    levels = _level_table(L, D, T.bit_length() - 1, float(inputs["base_res"]), float(inputs["per_level_scale"]))
    xd = x.double().clamp(0.0, 1.0)
    corners = torch.tensor([[(c >> d) & 1 for d in range(D)] for c in range(2 ** D)], device=x.device)
    cb = corners.bool()
    out = torch.empty((N, L, F), dtype=emb.dtype, device=x.device)
    for lvl, lev in enumerate(levels):
        pos = (xd * lev[0] + 0.5).float()
        g = torch.floor(pos)
        w = pos - g
        idx = corner_indices(g.long()[:, None, :] + corners[None], lev, T)
        wt = torch.where(cb[None], w[:, None, :], 1.0 - w[:, None, :]).prod(-1)
        out[:, lvl] = (wt[..., None] * emb[lvl][idx].float()).sum(1).to(emb.dtype)
    return out.reshape(N, L * F)


# ---------------------------------------------------------------- hooks
def _key(point) -> tuple:
    return tuple(sorted(point.items()))


@functools.lru_cache(maxsize=8)
def _bbox(key: tuple) -> tuple:
    """The seed-0 coordinates' per-dimension (min, max), clamped to [0, 1]."""
    x = make_coords(dict(key), 0)
    D = dict(key)["D"]
    pos = x[:, :D].clamp(0.0, 1.0)
    return tuple(float(v) for v in pos.amin(0)), tuple(float(v) for v in pos.amax(0))


def touched_entries(point) -> list[int]:
    """Per level, a bound on the table rows the seed-0 coordinates gather: the grid vertices of their
    bounding box, at most 2^D per point, at most the level's rows (R^D dense, T hashed)."""
    N, D, L, F, lt, base, pls, _, _, _ = _check_point(point)
    lo, hi = _bbox(_key(point))
    out = []
    for s, _, R, dense in _level_table(L, D, lt, base, pls):
        box = 1
        for d in range(D):
            box *= math.floor(_f32(hi[d] * s + 0.5)) - math.floor(_f32(lo[d] * s + 0.5)) + 2
        out.append(min(box, N * 2 ** D, R ** D if dense else 1 << lt))
    return out


def bytes_moved(point) -> int:
    """The coordinates (D fp32 a point), the output (N L F in the dtype) once, and the table rows the
    gathers touch once each (touched_entries: F in the dtype a row); the per-level tables (8 B a level).
    Re-reads of a row by other points (L1 / L2) and the sectors' unused bytes are not counted."""
    N, D, L, F, _, _, _, dt, _, _ = _check_point(point)
    e = _esize(dt)
    return N * D * 4 + N * L * F * e + sum(touched_entries(point)) * F * e + 8 * L


def flops(point) -> int:
    """Per point and level: the positions, floors and fractions (3 D), per corner the D - 1 weight
    products and F multiply-adds (2 F)."""
    N, D, L, F, _, _, _, _, _, _ = _check_point(point)
    return N * L * (2 ** D * (2 * F + D - 1) + 3 * D)


def grid(cfg, point) -> tuple[int]:
    """(cdiv(N, BLOCK_N),) with the level loop inside; x cdiv(L, LEVELS) with LEVEL_MAJOR."""
    N, _, L, _, _, _, _, _, _, _ = _check_point(point)
    _check_cfg(cfg)
    return (_grid_size(N, L, cfg),)


def loop_iterations(cfg, point) -> int:
    """Level steps a program: cdiv(L, LEVELS), 1 with LEVEL_MAJOR."""
    _, _, L, _, _, _, _, _, _, _ = _check_point(point)
    _check_cfg(cfg)
    return 1 if cfg["LEVEL_MAJOR"] else triton.cdiv(L, cfg["LEVELS"])


def cta_iterations(cfg, point) -> list[int]:
    """Each program's level steps in launch order (all equal)."""
    return [loop_iterations(cfg, point)] * grid(cfg, point)[0]


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory): x the
    first D columns of an [N, x_pitch] fp32 buffer, the [L, T, F] table and [N, L F] output in the
    point's dtype, the two per-level tables."""
    import torch
    N, D, L, F, lt, _, _, dt, _, pitch = _check_point(point)
    _check_cfg(cfg)
    m = functools.partial(torch.empty, device="meta")
    x = m((N, pitch), dtype=torch.float32)[:, :D]
    emb = m((L, 1 << lt, F), dtype=_torch_dtype(dt))
    out = m((N, L * F), dtype=_torch_dtype(dt))
    return _kernel_args(x, emb, out, m((L,), dtype=torch.float32), m((L,), dtype=torch.int32), cfg)
