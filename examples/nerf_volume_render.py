"""NeRF volume-rendering compositing, forward -- the per-ray quadrature of NeRF (Mildenhall et al.
2020), as nerfacc's `rendering` / `render_weight_from_density` + `accumulate_along_rays`, NeRFStudio's
`RaySamples.get_weights` + RGB / accumulation / depth renderers and Instant-NGP's compositing loop
compute it -- a bare @triton.jit kernel + its launcher.

Per ray r, its S samples i = 0 .. S-1 (intervals [t0_i, t1_i], front to back) with density sigma_i
and colour c_i = (r, g, b):

    delta_i = t1_i - t0_i,   tau_i = sum_{j < i} sigma_j delta_j        (the optical depth before i)
    T_i     = exp(-tau_i),   alpha_i = 1 - exp(-sigma_i delta_i),   w_i = T_i alpha_i
    early termination (eps > 0, Instant-NGP's `if (T < EPSILON) break`): w_i = 0 where T_i < eps --
    the composited samples are the prefix with tau_i <= -ln(eps), nothing after the first that fails
    rgb[r] = sum_i w_i c_i,   opacity[r] = sum_i w_i,   depth[r] = sum_i w_i (t0_i + t1_i) / 2
    (optionally) weights[r, i] = w_i          (the proposal / distortion losses, the hierarchical sampler)

depth is nerfacc's expected depth (the weighted sum of the interval midpoints, not divided by the
opacity); the background is the caller's (rgb + (1 - opacity) bg).

Inputs, as the systems hold them: sigma [R, S] (or NeRFStudio's [R, S, 1]) and rgb [R, S, 3] in
one dtype, fp32 or fp16 (a half-precision field's outputs), rgb interleaved (array of structures:
the three channels of a sample adjacent, samples 3 elements apart); t_starts / t_ends [R, S] (or
[R, S, 1]) fp32. All four with any strides: NeRFStudio's frustums.starts / ends are the views
bins[:, :-1] / bins[:, 1:] of one [R, S + 1] array of interval edges (the ends 4 bytes off a 16-byte
boundary, so their loads are scalar), nerfacc's t_starts / t_ends separate contiguous arrays, and the
colour and density may be column views of one rgba buffer. Outputs: rgb [R, 3], opacity [R], depth
[R] fp32, contiguous; weights [R, S] fp32 when asked for.

How it differs from gs_rasterize_fwd (3DGS's alpha compositing, the closest kernel here): that one
gathers a tile's depth-sorted Gaussians by id and evaluates a 2-D quadratic form per (pixel,
Gaussian) -- compute-bound, the transmittance a running product; this one streams each ray's own
dense sample arrays (no gather, no geometry: memory-bound, 12-24 bytes a sample) and forms the
transmittance in the log domain, a scan (tl.cumsum) of sigma delta along the samples carried across
chunks.

Work split: a program owns BLOCK_R consecutive rays (a 1-D grid of cdiv(R, BLOCK_R)) and walks their
samples CHUNK at a time. A step loads the [BLOCK_R, CHUNK] tiles of sigma, t0, t1 and the three
colour planes (rgb read in place as three strided [BLOCK_R, CHUNK] loads: the second and third hit
the sectors the first brought into L1; one [BLOCK_R, CHUNK, 4] AoS tile was tried and cost 2-3x the
registers, shared memory for the weights' layout change, and spills at 16 samples a thread), forms
sd = sigma delta, its inclusive scan along the chunk (tl.cumsum: in-thread runs, then lane shuffles;
warps split rays, not samples, at the sweep's tiles), tau = carry + scan - sd, w = exp2(-log2e tau)
(1 - exp2(-log2e sd)) (two MUFU.EX2 a sample), the five row sums (colour, opacity, depth), and the
carry += the scan's last column. Triton's layout puts the lanes along the samples first, the rest of
the warp and the warps along the rays; a thread's run of samples is one vector load (up to 16 bytes)
where the rows start 16-byte aligned -- sigma at S = 48 and 192, both t arrays at 192 (pairs), the
bins' starts at 1039 (rows of 1040) -- and scalar elsewhere (the colour planes, the bins' ends, rows
of 49 edges, fp16 sigma at 1039).

Early termination (EARLY_STOP = 1, eps > 0): the walk is a `while` loop that stops once every ray
of the block has tau > -ln(eps) (a block-wide max reduction a step); a ray already past it loads
nothing (its lanes' loads are predicated off: no sectors fetched), and its samples past the cut
inside the step composite nothing. Without it (eps = 0) the walk is a plain `for` loop over the
full chunks. In both the full chunks load unmasked (rows past R read row R - 1 instead -- never
stored) and the last, partial chunk (S % CHUNK samples) is peeled and masked, so the main loop's
loads keep their vectors. With weights and early termination, the steps a block skips get their
zeros by a store-only loop (no zero-fill pass by the caller).

PREFETCH = 1: the next step's sigma / t0 / t1 tiles (what the scan needs first) are loaded one step
ahead into registers (a register double buffer), the colour planes at the top of the step, their
latency behind the scan and the exponentials. The last full step re-reads its own chunk (an L1 hit,
never used) rather than masking its prefetch: the masked form made ptxas 13.4 (triton 3.9) cap three
8-samples-a-thread configs at 80 registers and spill 8 bytes. With early termination the prefetch
runs under the current step's liveness (a ray that dies in this step fetches one step of sigma / t
more; the cut discards it). Triton's own pipeliner leaves these loads alone (no dot: num_stages 1 and
3 gave the same binary), hence the manual one. Prefetching the colour planes too was tried: 254
registers and 20 spilled at 16 samples a thread.

Masks and offsets: EVEN_R = 0 (BLOCK_R does not divide R) clamps rows and masks the stores; the
peeled tail masks samples >= S; early termination masks dead rays. Rays' offsets int64 (3 R S passes
2^31 at a 4K frame of 192 samples a ray), offsets inside a row int32 (checked: (S - 1) |stride_s| +
2 |stride_c| < 2^31).

Numerics: fp32 throughout (fp16 inputs widened at the load). The scan's exclusive prefix is formed
as carry + (inclusive - own), a few ulps of the running optical depth from the float64 cumsum (an
opaque wall's opacity lands within 2e-6 of 1, either side); exp2 of the pre-scaled exponent. A
sample whose tau lies within ~1e-6 relative of -ln(eps) may be cut or composited the other way (its
weight is < eps, so opacity moves by < eps); everything else matches the float64 reference to fp32
rounding.

Tunables: BLOCK_R (rays a program: 4 / 8 / 16), CHUNK (samples a step: 16 / 32 / 64 -- the scan's
length, the masked tail's waste at S = 48, the early exit's granularity), PREFETCH (0 / 1: above),
num_warps (2 / 4 / 8: 0.25-16 samples a thread over the sweep, from a replicated tile to 16-byte
vectors); num_stages held at 1 (see PREFETCH). On sm_90 every config of the sweep (54) compiles at
every point without spills. Triton 3.9 (ptxas 13.4): 32-254 registers (168 at most at the fp32
points, the 16 x 64 tile on 2 warps; at the fp16 marching point that tile takes 227, 254 with the
prefetch), BASELINE 40 / 48 / 56, shared memory 16-64 B (the row sums' cross-warp scratch). Triton
3.6 (ptxas 12.8): 32-255 registers (the 16 x 64 tile on 2 warps 168-255), BASELINE 64 / 56 / 72, shared
memory 16 B - 4 KiB: 3.6's coalescing breaks the tie between two dims of equal (unit) contiguity
toward the first, so the colour planes (no unit stride anywhere) get a rays-fastest layout and the
[BLOCK_R, CHUNK] weights are converted to it through shared memory once a step (3.9 breaks it toward
the last dim: one layout, no conversion). On sm_120 (99 KiB a block) BASELINE, the 16 x 64 tile with
the prefetch on 2 warps and the 4 x 16 tile on 8 warps compile without spills.
The hooks read the seed-0 scene of an early-terminating point (make_scene without colours, cached a
point): bytes_moved and flops count its composited samples, cta_iterations each program's steps (the
most over its rays of cdiv(composited, CHUNK)): at the marching point 80 % of the samples are
composited, and programs of 4 / 8 / 16 rays stop early in 29 / 28 / 25 % of cases, a launch's mean
steps 82-84 % of the full walk.
Problem parameters (a workload point): R, S, dtype (sigma's and rgb's: fp32 / fp16), t_layout
("bins": starts / ends views of one [R, S + 1] array; "pairs": two contiguous [R, S] arrays), eps
(the early-termination threshold: 0 = none), weights (0 / 1: write w), scene ("unbounded" /
"object"), sampling ("proposal" / "uniform"), W (the image width the rays come from, raster order).
make_scene draws the rays' samples from a seed.
"""

from __future__ import annotations

import functools
import math

import triton
import triton.language as tl

MAX_INT32 = 2**31 - 1


@triton.jit
def _load_scan(sig_p, t0_p, t1_p, k, s_ss, t0_ss, t1_ss, m, MASKED: tl.constexpr, CHUNK: tl.constexpr):
    """One step's [BLOCK_R, CHUNK] tiles of sigma (its dtype), t0 and t1 (fp32); masked (0) where
    m is false when MASKED."""
    so = (k + tl.arange(0, CHUNK))[None, :]
    if MASKED:
        sig = tl.load(sig_p[:, None] + so * s_ss, mask=m, other=0.0)
        a = tl.load(t0_p[:, None] + so * t0_ss, mask=m, other=0.0)
        b = tl.load(t1_p[:, None] + so * t1_ss, mask=m, other=0.0)
    else:
        sig = tl.load(sig_p[:, None] + so * s_ss)
        a = tl.load(t0_p[:, None] + so * t0_ss)
        b = tl.load(t1_p[:, None] + so * t1_ss)
    return sig, a, b


@triton.jit
def _load_rgb(c_p, k, c_ss, c_sc, m, MASKED: tl.constexpr, CHUNK: tl.constexpr):
    """One step's three colour planes, read in place from the interleaved rgb (channel stride c_sc)."""
    co = (k + tl.arange(0, CHUNK))[None, :] * c_ss
    if MASKED:
        cr = tl.load(c_p[:, None] + co, mask=m, other=0.0)
        cg = tl.load(c_p[:, None] + (co + c_sc), mask=m, other=0.0)
        cb = tl.load(c_p[:, None] + (co + 2 * c_sc), mask=m, other=0.0)
    else:
        cr = tl.load(c_p[:, None] + co)
        cg = tl.load(c_p[:, None] + (co + c_sc))
        cb = tl.load(c_p[:, None] + (co + 2 * c_sc))
    return cr, cg, cb


@triton.jit
def _step(sig, a, b, cr, cg, cb, w_p, k, S, w_ss, tau, acc, sr, sg, sb, dep, row_ok, tau_max,
          MASK_S: tl.constexpr, EARLY_STOP: tl.constexpr, WRITE_WEIGHTS: tl.constexpr, EVEN_R: tl.constexpr,
          CHUNK: tl.constexpr):
    """Composite one step: the scan, the weights, the five row sums, the carried optical depth."""
    LOG2E: tl.constexpr = 1.4426950408889634
    cols = tl.arange(0, CHUNK)
    sd = sig.to(tl.float32) * (b - a)
    incl = tl.cumsum(sd, axis=1)
    ex = tau[:, None] + (incl - sd)                          # the optical depth before each sample
    w = tl.exp2(-LOG2E * ex) * (1.0 - tl.exp2(-LOG2E * sd))
    if EARLY_STOP:
        w = tl.where(ex <= tau_max, w, 0.0)                  # T >= eps: a prefix of the ray
    acc += tl.sum(w, axis=1)
    sr += tl.sum(w * cr.to(tl.float32), axis=1)
    sg += tl.sum(w * cg.to(tl.float32), axis=1)
    sb += tl.sum(w * cb.to(tl.float32), axis=1)
    dep += tl.sum(w * (0.5 * (a + b)), axis=1)
    tau += tl.sum(tl.where((cols == CHUNK - 1)[None, :], incl, 0.0), axis=1)   # the scan's last column
    if WRITE_WEIGHTS:
        wo = w_p[:, None] + (k + cols)[None, :] * w_ss
        if MASK_S:
            if EVEN_R:
                tl.store(wo, w, mask=(k + cols)[None, :] < S)
            else:
                tl.store(wo, w, mask=((k + cols)[None, :] < S) & row_ok[:, None])
        else:
            if EVEN_R:
                tl.store(wo, w)
            else:
                tl.store(wo, w, mask=row_ok[:, None])
    return tau, acc, sr, sg, sb, dep


@triton.jit
def _kernel(SIGMA, RGB, T0, T1, OUT_RGB, OUT_ACC, OUT_DEPTH, WEIGHTS, R, S,
            s_sr, s_ss, c_sr, c_ss, c_sc, t0_sr, t0_ss, t1_sr, t1_ss, w_sr, tau_max,
            EARLY_STOP: tl.constexpr, WRITE_WEIGHTS: tl.constexpr, EVEN_R: tl.constexpr,
            BLOCK_R: tl.constexpr, CHUNK: tl.constexpr, PREFETCH: tl.constexpr):
    pid = tl.program_id(0)
    rows = pid * BLOCK_R + tl.arange(0, BLOCK_R)
    row_ok = rows < R
    if EVEN_R:
        rl = rows.to(tl.int64)
    else:
        rl = tl.minimum(rows, R - 1).to(tl.int64)          # rows past R read row R - 1, never stored
    sig_p = SIGMA + rl * s_sr
    c_p = RGB + rl * c_sr
    t0_p = T0 + rl * t0_sr
    t1_p = T1 + rl * t1_sr
    w_p = WEIGHTS + rl * w_sr
    tau = tl.zeros((BLOCK_R,), tl.float32)
    acc = tl.zeros((BLOCK_R,), tl.float32)
    sr = tl.zeros((BLOCK_R,), tl.float32)
    sg = tl.zeros((BLOCK_R,), tl.float32)
    sb = tl.zeros((BLOCK_R,), tl.float32)
    dep = tl.zeros((BLOCK_R,), tl.float32)
    s_full = S - S % CHUNK                                   # the full chunks; the tail is peeled
    # the prefetch prologue's "is there a full chunk" as a [BLOCK_R] vector: a scalar compare & a
    # vector mask makes a mask Triton 3.9's interpreter rejects
    zr = tl.zeros((BLOCK_R,), tl.int32)
    k = 0
    if EARLY_STOP:
        live = tau <= tau_max
        any_live = tl.max(live.to(tl.int32), axis=0) > 0
        if PREFETCH:
            sig, a, b = _load_scan(sig_p, t0_p, t1_p, 0, s_ss, t0_ss, t1_ss, (live & (zr < s_full))[:, None],
                                   True, CHUNK)
            while (k < s_full) & any_live:
                # the next full chunk (the last step re-reads its own: an L1 hit, never used)
                nsig, na, nb = _load_scan(sig_p, t0_p, t1_p, tl.minimum(k + CHUNK, s_full - CHUNK), s_ss, t0_ss,
                                          t1_ss, live[:, None], True, CHUNK)
                cr, cg, cb = _load_rgb(c_p, k, c_ss, c_sc, live[:, None], True, CHUNK)
                tau, acc, sr, sg, sb, dep = _step(sig, a, b, cr, cg, cb, w_p, k, S, 1, tau, acc, sr, sg, sb, dep,
                                                  row_ok, tau_max, False, True, WRITE_WEIGHTS, EVEN_R, CHUNK)
                sig, a, b = nsig, na, nb
                live = tau <= tau_max
                any_live = tl.max(live.to(tl.int32), axis=0) > 0
                k += CHUNK
        else:
            while (k < s_full) & any_live:
                sig, a, b = _load_scan(sig_p, t0_p, t1_p, k, s_ss, t0_ss, t1_ss, live[:, None], True, CHUNK)
                cr, cg, cb = _load_rgb(c_p, k, c_ss, c_sc, live[:, None], True, CHUNK)
                tau, acc, sr, sg, sb, dep = _step(sig, a, b, cr, cg, cb, w_p, k, S, 1, tau, acc, sr, sg, sb, dep,
                                                  row_ok, tau_max, False, True, WRITE_WEIGHTS, EVEN_R, CHUNK)
                live = tau <= tau_max
                any_live = tl.max(live.to(tl.int32), axis=0) > 0
                k += CHUNK
        if any_live & (k < S):                               # the partial last chunk
            m = ((k + tl.arange(0, CHUNK))[None, :] < S) & live[:, None]
            sig, a, b = _load_scan(sig_p, t0_p, t1_p, k, s_ss, t0_ss, t1_ss, m, True, CHUNK)
            cr, cg, cb = _load_rgb(c_p, k, c_ss, c_sc, m, True, CHUNK)
            tau, acc, sr, sg, sb, dep = _step(sig, a, b, cr, cg, cb, w_p, k, S, 1, tau, acc, sr, sg, sb, dep,
                                              row_ok, tau_max, True, True, WRITE_WEIGHTS, EVEN_R, CHUNK)
            k += CHUNK
        if WRITE_WEIGHTS:                                    # the steps the exit skipped: zeros
            zero = tl.zeros((BLOCK_R, CHUNK), tl.float32)
            while k < S:
                so = (k + tl.arange(0, CHUNK))[None, :]
                if EVEN_R:
                    tl.store(w_p[:, None] + so, zero, mask=so < S)
                else:
                    tl.store(w_p[:, None] + so, zero, mask=(so < S) & row_ok[:, None])
                k += CHUNK
    else:
        if PREFETCH:
            sig, a, b = _load_scan(sig_p, t0_p, t1_p, 0, s_ss, t0_ss, t1_ss, (row_ok & (zr < s_full))[:, None],
                                   True, CHUNK)
            for k in tl.range(0, s_full, CHUNK):
                # the next full chunk; the last step re-reads its own (an L1 hit, never used): unmasked
                nsig, na, nb = _load_scan(sig_p, t0_p, t1_p, tl.minimum(k + CHUNK, s_full - CHUNK), s_ss, t0_ss, t1_ss,
                                          None, False, CHUNK)
                cr, cg, cb = _load_rgb(c_p, k, c_ss, c_sc, None, False, CHUNK)
                tau, acc, sr, sg, sb, dep = _step(sig, a, b, cr, cg, cb, w_p, k, S, 1, tau, acc, sr, sg, sb, dep,
                                                  row_ok, tau_max, False, False, WRITE_WEIGHTS, EVEN_R, CHUNK)
                sig, a, b = nsig, na, nb
        else:
            for k in tl.range(0, s_full, CHUNK):
                sig, a, b = _load_scan(sig_p, t0_p, t1_p, k, s_ss, t0_ss, t1_ss, None, False, CHUNK)
                cr, cg, cb = _load_rgb(c_p, k, c_ss, c_sc, None, False, CHUNK)
                tau, acc, sr, sg, sb, dep = _step(sig, a, b, cr, cg, cb, w_p, k, S, 1, tau, acc, sr, sg, sb, dep,
                                                  row_ok, tau_max, False, False, WRITE_WEIGHTS, EVEN_R, CHUNK)
        if s_full < S:                                       # the partial last chunk
            m = (s_full + tl.arange(0, CHUNK))[None, :] < S
            sig, a, b = _load_scan(sig_p, t0_p, t1_p, s_full, s_ss, t0_ss, t1_ss, m, True, CHUNK)
            cr, cg, cb = _load_rgb(c_p, s_full, c_ss, c_sc, m, True, CHUNK)
            tau, acc, sr, sg, sb, dep = _step(sig, a, b, cr, cg, cb, w_p, s_full, S, 1, tau, acc, sr, sg, sb, dep,
                                              row_ok, tau_max, True, False, WRITE_WEIGHTS, EVEN_R, CHUNK)
    o = rows.to(tl.int64)
    if EVEN_R:
        tl.store(OUT_RGB + 3 * o, sr)
        tl.store(OUT_RGB + 3 * o + 1, sg)
        tl.store(OUT_RGB + 3 * o + 2, sb)
        tl.store(OUT_ACC + o, acc)
        tl.store(OUT_DEPTH + o, dep)
    else:
        tl.store(OUT_RGB + 3 * o, sr, mask=row_ok)
        tl.store(OUT_RGB + 3 * o + 1, sg, mask=row_ok)
        tl.store(OUT_RGB + 3 * o + 2, sb, mask=row_ok)
        tl.store(OUT_ACC + o, acc, mask=row_ok)
        tl.store(OUT_DEPTH + o, dep, mask=row_ok)


# ---------------------------------------------------------------- launcher
ROLE = "held-out-29"
DTYPES = ("fp32", "fp16")                  # sigma's and rgb's; the t-values are fp32 always
TUNABLES = ("BLOCK_R", "CHUNK", "PREFETCH", "num_warps", "num_stages")
BASELINE = {"BLOCK_R": 16, "CHUNK": 32, "PREFETCH": 0, "num_warps": 4, "num_stages": 1}
# the study's sweep: 3 x 3 x 2 x 3 = 54 configs -- tiles of 64-1024 samples on 64-256 threads
# (0.25-16 samples a thread: scalar to 16-byte loads), the scan 16-64 long, prefetch or not
SWEEP_AXES = {"BLOCK_R": [4, 8, 16], "CHUNK": [16, 32, 64], "PREFETCH": [0, 1], "num_warps": [2, 4, 8],
              "num_stages": [1]}

POINTS = [
    # NeRFStudio nerfacto rendering a whole Mip-NeRF 360 evaluation frame (garden, images_4: 1297 x 840
    # = 1,089,480 rays) in one launch: 48 NeRF samples a ray (num_nerf_samples_per_ray), placed by the
    # proposal networks around the surfaces; fp32 field outputs; t as frustums.starts / ends, the views
    # bins[:, :-1] / bins[:, 1:] of one [R, 49] array; no early termination (NeRFStudio composites every
    # sample). 48 fp32 samples x 16 B + 49 x 4 B a ray: 1.05 GB read
    {"R": 1_089_480, "S": 48, "dtype": "fp32", "t_layout": "bins", "eps": 0.0, "weights": 0,
     "scene": "unbounded", "sampling": "proposal", "W": 1297},
    # NeRF (Mildenhall et al.)'s fine network, 64 coarse + 128 importance = 192 samples a ray, over a
    # render chunk of 2^16 rays of a NeRF-synthetic 800 x 800 frame, through nerfacc's interface
    # (t_starts, t_ends: two contiguous arrays); fp32; the weights written (raw2outputs returns them: the
    # hierarchical sampler's pdf, the depth's variance). 65536 x 192 x (16 + 8) B = 302 MB read, 50 MB
    # of weights written
    {"R": 65_536, "S": 192, "dtype": "fp32", "t_layout": "pairs", "eps": 0.0, "weights": 1,
     "scene": "object", "sampling": "proposal", "W": 800},
    # Instant-NGP-style uniform marching over NeRF-synthetic's [-1.5, 1.5]^3 box: its diagonal at a 5e-3
    # render step (nerfacc's render_step_size; TensoRF's 300^3 grid at step_ratio 0.5 gives the same
    # count) is 1039 samples a ray, here laid evenly over the dataset's near / far [2, 6] and kept dense
    # (no occupancy-grid compaction), fp16 field outputs (tiny-cuda-nn's half-precision MLP), early
    # termination at T < 1e-4 (Instant-NGP's EPSILON, nerfacc's early_stop_eps), 2^15 rays of an
    # 800 x 800 frame (NeRFStudio's eval chunk, 1 << 15). Dense 409 MB
    # (12 B a sample); the composited prefix 80 % of it, 326 MB (the opaque objects' rays stop at their
    # surface, the rest -- a miss, a translucent object -- walk all 1039)
    {"R": 32_768, "S": 1039, "dtype": "fp16", "t_layout": "bins", "eps": 1e-4, "weights": 0,
     "scene": "object", "sampling": "uniform", "W": 800},
]

T_LAYOUTS = ("bins", "pairs")
SCENES = ("unbounded", "object")
SAMPLINGS = ("proposal", "uniform")
NEAR_FAR = {"unbounded": (0.05, 1000.0), "object": (2.0, 6.0)}


def _torch_dtype(name: str):
    import torch
    try:
        return {"fp32": torch.float32, "fp16": torch.float16}[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}") from None


def _esize(name: str) -> int:
    if name not in DTYPES:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}")
    return 4 if name == "fp32" else 2


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _check_eps(eps) -> float:
    if not isinstance(eps, (int, float)) or isinstance(eps, bool) or not 0.0 <= eps < 1.0:
        raise ValueError(f"eps={eps!r} must be a number in [0, 1) (0: no early termination)")
    return float(eps)


def _check_point(point) -> dict:
    """The point's fields, checked, with their defaults."""
    for k in ("R", "S"):
        v = point[k]
        if not _is_int(v) or v < 1:
            raise ValueError(f"{k}={v!r} must be a positive int")
    q = {"R": point["R"], "S": point["S"]}
    q["dtype"] = point.get("dtype", "fp32")
    _esize(q["dtype"])
    q["t_layout"] = point.get("t_layout", "bins")
    if q["t_layout"] not in T_LAYOUTS:
        raise ValueError(f"t_layout={q['t_layout']!r} must be one of {', '.join(T_LAYOUTS)}")
    q["eps"] = _check_eps(point.get("eps", 0.0))
    w = point.get("weights", 0)
    if w not in (0, 1) or isinstance(w, float):
        raise ValueError(f"weights={w!r} must be 0 or 1")
    q["weights"] = int(w)
    q["scene"] = point.get("scene", "object")
    if q["scene"] not in SCENES:
        raise ValueError(f"scene={q['scene']!r} must be one of {', '.join(SCENES)}")
    q["sampling"] = point.get("sampling", "proposal")
    if q["sampling"] not in SAMPLINGS:
        raise ValueError(f"sampling={q['sampling']!r} must be one of {', '.join(SAMPLINGS)}")
    W = point.get("W", 64)
    if not _is_int(W) or W < 1:
        raise ValueError(f"W={W!r} must be a positive int (the image width the rays come from)")
    q["W"] = W
    if 3 * q["S"] > MAX_INT32:
        raise ValueError(f"S={q['S']}: 3 S must stay below 2^31 (the kernel's in-row int32 offsets)")
    return q


def _check_cfg(cfg) -> None:
    if cfg["BLOCK_R"] not in (1, 2, 4, 8, 16, 32, 64) or not _is_int(cfg["BLOCK_R"]):
        raise ValueError(f"BLOCK_R={cfg['BLOCK_R']!r} must be a power of two from 1 to 64")
    if cfg["CHUNK"] not in (8, 16, 32, 64, 128, 256) or not _is_int(cfg["CHUNK"]):
        raise ValueError(f"CHUNK={cfg['CHUNK']!r} must be a power of two from 8 to 256")
    if cfg["PREFETCH"] not in (0, 1) or not _is_int(cfg["PREFETCH"]):
        raise ValueError(f"PREFETCH={cfg['PREFETCH']!r} must be 0 or 1")
    if cfg["num_warps"] not in (1, 2, 4, 8, 16) or not _is_int(cfg["num_warps"]):
        raise ValueError(f"num_warps={cfg['num_warps']!r} must be a power of two from 1 to 16")
    st = cfg.get("num_stages", 1)
    if not _is_int(st) or st < 1:
        raise ValueError(f"num_stages={st!r} must be a positive int")
    per = cfg["BLOCK_R"] * cfg["CHUNK"] // (32 * cfg["num_warps"])
    if per > 32:
        raise ValueError(f"BLOCK_R={cfg['BLOCK_R']} x CHUNK={cfg['CHUNK']} on num_warps={cfg['num_warps']} holds "
                         f"{per} samples a thread, past 32: raise num_warps or shrink the tile")


def _tau_max(eps: float) -> float:
    """-ln(eps): the optical depth past which a sample is cut (0 unused without early termination)."""
    return -math.log(eps) if eps > 0 else 0.0


def _kernel_args(sigma, rgb, t0, t1, out_rgb, out_acc, out_depth, weights, eps: float, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it); without
    weights out_acc stands in for them (never written: WRITE_WEIGHTS 0)."""
    R, S = sigma.shape
    w = out_acc if weights is None else weights
    return dict(SIGMA=sigma, RGB=rgb, T0=t0, T1=t1, OUT_RGB=out_rgb, OUT_ACC=out_acc, OUT_DEPTH=out_depth, WEIGHTS=w,
                R=R, S=S, s_sr=sigma.stride(0), s_ss=sigma.stride(1), c_sr=rgb.stride(0), c_ss=rgb.stride(1),
                c_sc=rgb.stride(2), t0_sr=t0.stride(0), t0_ss=t0.stride(1), t1_sr=t1.stride(0), t1_ss=t1.stride(1),
                w_sr=S if weights is not None else 0, tau_max=_tau_max(eps),
                EARLY_STOP=int(eps > 0), WRITE_WEIGHTS=int(weights is not None),
                EVEN_R=int(R % cfg["BLOCK_R"] == 0), BLOCK_R=cfg["BLOCK_R"], CHUNK=cfg["CHUNK"],
                PREFETCH=cfg["PREFETCH"])


def _as_rs(t, name: str, R: int | None = None, S: int | None = None):
    """[R, S] or [R, S, 1] -> an [R, S] view."""
    if t.dim() == 3 and t.shape[2] == 1:
        t = t[:, :, 0]
    if t.dim() != 2 or (R is not None and tuple(t.shape) != (R, S)):
        want = "[R, S] or [R, S, 1]" if R is None else f"[{R}, {S}] or [{R}, {S}, 1]"
        raise ValueError(f"{name} must be {want}; got {tuple(t.shape)}")
    return t


def volume_render(sigma, rgb, t_starts, t_ends, *, early_stop_eps: float = 0.0, return_weights: bool = False,
                  BLOCK_R: int = 16, CHUNK: int = 32, PREFETCH: int = 0, num_warps: int = 4, num_stages: int = 1):
    """Composite R rays of S samples each, front to back (nerfacc's rendering with
    render_weight_from_density; NeRFStudio's get_weights + renderers).

    sigma [R, S] or [R, S, 1] (density >= 0) and rgb [R, S, 3] (interleaved), one dtype: fp32 / fp16;
    t_starts, t_ends [R, S] or [R, S, 1] fp32 (t_ends >= t_starts: the intervals, front to back). Any
    strides. early_stop_eps: 0, or a transmittance below which a ray stops (samples with T < eps
    composite nothing). Returns (rgb [R, 3], opacity [R], depth [R]) fp32 -- depth the weighted sum of
    the interval midpoints -- and, with return_weights, the weights [R, S] fp32 last."""
    import torch
    eps = _check_eps(early_stop_eps)
    cfg = {"BLOCK_R": BLOCK_R, "CHUNK": CHUNK, "PREFETCH": PREFETCH, "num_warps": num_warps,
           "num_stages": num_stages}
    _check_cfg(cfg)
    sigma = _as_rs(sigma, "sigma")
    R, S = sigma.shape
    if sigma.dtype not in (torch.float32, torch.float16):
        raise ValueError(f"sigma must be fp32 / fp16; got {sigma.dtype}")
    if rgb.dim() != 3 or tuple(rgb.shape) != (R, S, 3) or rgb.dtype != sigma.dtype:
        raise ValueError(f"rgb must be [{R}, {S}, 3] in sigma's dtype {sigma.dtype}; got {tuple(rgb.shape)} "
                         f"{rgb.dtype}")
    t0 = _as_rs(t_starts, "t_starts", R, S)
    t1 = _as_rs(t_ends, "t_ends", R, S)
    if t0.dtype != torch.float32 or t1.dtype != torch.float32:
        raise ValueError(f"t_starts and t_ends must be fp32; got {t0.dtype} and {t1.dtype}")
    devs = {t.device for t in (sigma, rgb, t0, t1)}
    if len(devs) != 1:
        raise ValueError(f"all tensors must be on one device; got {sorted(str(d) for d in devs)}")
    dev = sigma.device
    row = (S - 1) * max(abs(sigma.stride(1)), abs(rgb.stride(1)), abs(t0.stride(1)), abs(t1.stride(1))) \
        + 2 * abs(rgb.stride(2))
    if row > MAX_INT32:
        raise ValueError(f"S={S} samples with strides {sigma.stride()} / {rgb.stride()} / {t0.stride()} / "
                         f"{t1.stride()} exceed the kernel's int32 in-row offsets (2^31)")
    new = torch.empty if S else torch.zeros                # no samples: nothing composited (no launch)
    out_rgb = new((R, 3), dtype=torch.float32, device=dev)
    out_acc = new((R,), dtype=torch.float32, device=dev)
    out_depth = new((R,), dtype=torch.float32, device=dev)
    weights = new((R, S), dtype=torch.float32, device=dev) if return_weights else None
    if R and S:
        if triton.cdiv(R, BLOCK_R) > MAX_INT32:
            raise ValueError(f"R={R} rays need {triton.cdiv(R, BLOCK_R)} programs, past the grid's 2^31 - 1")
        args = _kernel_args(sigma, rgb, t0, t1, out_rgb, out_acc, out_depth, weights, eps, cfg)
        _kernel[(triton.cdiv(R, BLOCK_R),)](**args, num_warps=num_warps, num_stages=num_stages)
    out = (out_rgb, out_acc, out_depth)
    return out + (weights,) if return_weights else out


# ---------------------------------------------------------------- the scene
def _blobs(gen, q, n_rows: int):
    """The scene's objects as ellipses on the image (pixel units) with a depth bulge: centre, radii,
    centre depth, bulge, optical depth (80 % opaque 6-30, 20 % translucent 0.3-3) and colour."""
    import torch
    W = q["W"]
    K = max(2, round(30.0 * (n_rows + 0.3 * W) / W))        # about half the image covered
    U = lambda *s: torch.rand(s, generator=gen)             # noqa: E731
    cx = U(K) * W
    cy = -0.15 * W + U(K) * (n_rows + 0.3 * W)
    rx = W * (0.02 + 0.13 * U(K))
    ry = W * (0.02 + 0.13 * U(K))
    if q["scene"] == "object":
        d, z = 3.4 + 1.2 * U(K), 0.2 + 0.6 * U(K)
    else:
        d, z = 1.5 + 3.5 * U(K), 0.2 + 0.8 * U(K)
    od = torch.where(U(K) < 0.8, 6.0 + 24.0 * U(K), 0.3 + 2.7 * U(K))
    return cx, cy, rx, ry, d, z, od, U(K, 3)


def _lin_disp(u, near: float, far: float):
    """NeRFStudio's UniformLinDispPiecewiseSampler spacing: u < 1/2 linear over [near, 1], above
    uniform in disparity over [1, far]."""
    import torch
    lin = near + 2.0 * u * (1.0 - near)
    disp = 1.0 / (1.0 - (2.0 * u - 1.0) * (1.0 - 1.0 / far))
    return torch.where(u < 0.5, lin, disp)


def make_scene(point, seed: int = 0, colours: bool = True) -> dict:
    """A synthetic batch of R rays, drawn on the CPU from a seeded torch.Generator (float32). Ray r is
    pixel (r mod W, r div W) of an image W wide (raster order: neighbouring rays see the same surface).
    Objects: ellipses on the image (about half of it covered, _blobs) with a depth bulge; a ray inside
    one sees the nearest surface at t_s with optical depth od (80 % of the objects opaque, 6-30, 20 %
    translucent, 0.3-3; x U(0.7, 1.3) a ray) spread as a Gaussian of std 0.006 t_s along the ray.
    Scene "object" (NeRF-synthetic: near 2, far 6): the rays outside the objects see only haze (0.01 a
    unit); "unbounded" (Mip-NeRF 360: near 0.05, far 1000): every ray also meets a background at t 10-60
    (optical depth 30), haze 0.005. Sampling "uniform": S equal steps from near (a random offset under
    one step a ray: Instant-NGP's jitter); "proposal": S / 2 + 1 stratified coarse edges (uniform for an
    object scene, NeRFStudio's linear-then-disparity spacing unbounded) and the rest N(t_s, 2 std) around
    the first surface the ray meets (the proposal networks' / importance sampling's concentration),
    sorted, the first edge near and the last far. sigma at the intervals' midpoints x lognormal(0.2)
    noise. Colour: the surface's (an object's, the background's, grey for a miss) + N(0, 0.05) a sample,
    clipped to [0, 1]. Returns bins [R, S + 1], sigma [R, S] and (colours) rgb [R, S, 3], float32."""
    import torch
    q = _check_point(point)
    R, S, W = q["R"], q["S"], q["W"]
    near, far = NEAR_FAR[q["scene"]]
    gen = torch.Generator(device="cpu").manual_seed(seed)
    n_rows = -(-R // W)
    cx, cy, rx, ry, d, z, od_k, col_k = _blobs(gen, q, n_rows)
    r = torch.arange(R)
    x = (r % W).float() + 0.5
    y = torch.div(r, W, rounding_mode="floor").float() + 0.5
    t_s = torch.full((R,), float("inf"))
    od = torch.zeros((R,))
    base = torch.full((R, 3), 0.5)
    for k in range(cx.numel()):
        qq = ((x - cx[k]) / rx[k]) ** 2 + ((y - cy[k]) / ry[k]) ** 2
        ts = d[k] - z[k] * torch.sqrt(torch.clamp(1.0 - qq, min=0.0))
        nearer = (qq < 1.0) & (ts < t_s)
        t_s = torch.where(nearer, ts, t_s)
        od = torch.where(nearer, od_k[k], od)
        base = torch.where(nearer[:, None], col_k[k], base)
    hit = torch.isfinite(t_s)
    od = od * (0.7 + 0.6 * torch.rand((R,), generator=gen))
    if q["scene"] == "unbounded":
        ph = 2 * math.pi * torch.rand((2,), generator=gen)
        t_bg = 10.0 * torch.exp(1.8 * (0.5 + 0.5 * torch.sin(2 * math.pi * 1.7 * x / W + ph[0])
                                       * torch.cos(2 * math.pi * 1.1 * y / W + ph[1])))
        bg_col = torch.stack([0.35 + 0.4 * y / max(n_rows, 1), torch.full((R,), 0.6), torch.full((R,), 0.8)], 1)
        base = torch.where(hit[:, None], base, bg_col)
        first = torch.where(hit, t_s, t_bg)
        haze = 0.005
    else:
        t_bg = None
        first = t_s
        haze = 0.01
    if q["sampling"] == "uniform":
        dt = (far - near) / S
        off = near + dt * torch.rand((R, 1), generator=gen)
        bins = off + dt * torch.arange(S + 1, dtype=torch.float32)[None, :]
    else:
        nu = S // 2 + 1
        u = (torch.arange(nu, dtype=torch.float32)[None, :] + torch.rand((R, nu), generator=gen)) / nu
        coarse = _lin_disp(u, near, far) if q["scene"] == "unbounded" else near + (far - near) * u
        nf = S + 1 - nu
        aim = torch.where(torch.isfinite(first), first, 0.5 * (near + far))
        fine = aim[:, None] + (0.012 * aim)[:, None] * torch.randn((R, nf), generator=gen)
        spread = near + (far - near) * torch.rand((R, nf), generator=gen)
        fine = torch.where(torch.isfinite(first)[:, None], fine, spread).clamp_(near, far)
        bins = torch.sort(torch.cat([coarse, fine], 1), 1).values
        bins[:, 0] = near
        bins[:, -1] = far
    mid = 0.5 * (bins[:, :-1] + bins[:, 1:])
    def bump(depth, width, odepth):                         # a Gaussian along t of optical depth odepth
        g = torch.exp(-0.5 * ((mid - depth[:, None]) / width[:, None]) ** 2)
        return (odepth / (width * math.sqrt(2 * math.pi)))[:, None] * g

    sd = 0.006 * torch.where(hit, t_s, 1.0)
    sigma = haze + torch.where(hit[:, None], bump(torch.where(hit, t_s, 0.0), sd, od), 0.0)
    if t_bg is not None:
        sigma += bump(t_bg, 0.006 * t_bg, torch.full_like(t_bg, 30.0))
    del mid
    sigma *= torch.exp(0.2 * torch.randn((R, S), generator=gen))
    out = {"bins": bins, "sigma": sigma}
    if colours:
        rgb = base[:, None, :] + 0.05 * torch.randn((R, S, 3), generator=gen)
        out["rgb"] = rgb.clamp_(0.0, 1.0)
    return out


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """make_scene(point, seed) on `device`: sigma [R, S] and rgb [R, S, 3] in the point's dtype; with
    t_layout "bins" the [R, S + 1] edges and t_starts / t_ends their views bins[:, :-1] / bins[:, 1:],
    with "pairs" two contiguous [R, S] copies; eps and weights as the point says."""
    import torch
    q = _check_point(point)
    sc = make_scene(point, seed)
    dt = _torch_dtype(q["dtype"])
    out = {"sigma": sc["sigma"].to(dt).to(device), "rgb": sc["rgb"].to(dt).to(device),
           "eps": q["eps"], "weights": bool(q["weights"])}
    bins = sc["bins"].to(device)
    if q["t_layout"] == "bins":
        out.update(bins=bins, t_starts=bins[:, :-1], t_ends=bins[:, 1:])
    else:
        out.update(t_starts=bins[:, :-1].contiguous(), t_ends=bins[:, 1:].contiguous())
    return out


def launch(inputs, cfg):
    """[R, 5] fp32 (rgb, opacity, depth), or [R, 5 + S] with the weights after them."""
    import torch
    out = volume_render(inputs["sigma"], inputs["rgb"], inputs["t_starts"], inputs["t_ends"],
                        early_stop_eps=inputs.get("eps", 0.0), return_weights=inputs.get("weights", False),
                        BLOCK_R=cfg["BLOCK_R"], CHUNK=cfg["CHUNK"], PREFETCH=cfg["PREFETCH"],
                        num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
    cols = [out[0], out[1][:, None], out[2][:, None]] + ([out[3]] if len(out) == 4 else [])
    return torch.cat(cols, 1)


def render_reference(sigma, rgb, t_starts, t_ends, eps: float = 0.0, dtype=None):
    """The quadrature in torch (float64 unless `dtype`): (rgb [R, 3], opacity [R], depth [R], weights
    [R, S], margin [R]) -- margin the smallest |tau_i + ln eps| over the ray's samples, relative to
    max(1, -ln eps) (inf without early termination): a ray whose margin is below ~1e-6 may be cut at
    another sample in fp32."""
    import torch
    dt = dtype or torch.float64
    sig = _as_rs(sigma, "sigma").to(dt)
    t0 = _as_rs(t_starts, "t_starts").to(dt)
    t1 = _as_rs(t_ends, "t_ends").to(dt)
    sd = sig * (t1 - t0)
    tau = torch.cumsum(sd, 1) - sd
    w = torch.exp(-tau) * -torch.expm1(-sd)
    if eps > 0:
        tm = -math.log(eps)
        w = torch.where(tau <= tm, w, 0.0)
        margin = ((tau - tm).abs() / max(1.0, tm)).amin(1) if tau.shape[1] else torch.full((tau.shape[0],),
                                                                                          float("inf"), dtype=dt)
    else:
        margin = torch.full((sd.shape[0],), float("inf"), dtype=dt, device=sd.device)
    col = torch.einsum("rs,rsc->rc", w, rgb.to(dt))
    return col, w.sum(1), (w * (0.5 * (t0 + t1))).sum(1), w, margin


def reference(inputs):
    """fp32 [R, 5] (or [R, 5 + S] with weights), computed in float64."""
    import torch
    col, acc, dep, w, _ = render_reference(inputs["sigma"], inputs["rgb"], inputs["t_starts"], inputs["t_ends"],
                                           inputs.get("eps", 0.0))
    cols = [col, acc[:, None], dep[:, None]] + ([w] if inputs.get("weights", False) else [])
    return torch.cat(cols, 1).float()


def torch_baseline(inputs):
    """What eager torch runs (nerfacc's render_weight_from_density + accumulate_along_rays, NeRFStudio's
    get_weights + renderers): sigma delta, an exclusive cumsum, exp, the weights (x (T >= eps) with
    early termination -- the samples are all evaluated), three weighted sums; fp32. [R, 5 (+ S)]."""
    import torch
    sig = _as_rs(inputs["sigma"], "sigma").float()
    t0, t1 = _as_rs(inputs["t_starts"], "t_starts"), _as_rs(inputs["t_ends"], "t_ends")
    sd = sig * (t1 - t0)
    trans = torch.exp(-torch.cat([torch.zeros_like(sd[:, :1]), torch.cumsum(sd, 1)[:, :-1]], 1))
    w = trans * (1.0 - torch.exp(-sd))
    eps = inputs.get("eps", 0.0)
    if eps > 0:
        w = w * (trans >= eps)
    col = (w[:, :, None] * inputs["rgb"].float()).sum(1)
    cols = [col, w.sum(1, keepdim=True), (w * (0.5 * (t0 + t1))).sum(1, keepdim=True)]
    return torch.cat(cols + ([w] if inputs.get("weights", False) else []), 1)


# ---------------------------------------------------------------- the hooks
def _key(point) -> tuple:
    return tuple(sorted(point.items()))


@functools.lru_cache(maxsize=8)
def _plan(key: tuple) -> tuple:
    """Each ray's composited samples (the prefix with tau <= -ln eps) on the seed-0 scene (float64);
    S for every ray without early termination (no scene drawn)."""
    import torch
    q = _check_point(dict(key))
    if q["eps"] == 0:
        return (q["S"],) * q["R"]
    sc = make_scene(dict(key), 0, colours=False)
    # tau_i = the inclusive sum to i - 1: sample i is composited iff i == 0 or incl[i - 1] <= -ln eps
    incl = torch.cumsum(sc["sigma"] * (sc["bins"][:, 1:] - sc["bins"][:, :-1]), 1, dtype=torch.float64)
    tm = torch.full((q["R"], 1), -math.log(q["eps"]), dtype=torch.float64)
    n = torch.searchsorted(incl, tm, right=True)[:, 0] + 1
    return tuple(n.clamp_(max=q["S"]).tolist())


def _sample_bytes(q) -> int:
    """sigma, rgb and the pair of t-values of one sample (a bins array counted once a sample)."""
    e = _esize(q["dtype"])
    return 4 * e + (4 if q["t_layout"] == "bins" else 8)


def bytes_moved(point) -> int:
    """The composited samples' sigma, rgb and t (each ray's prefix on the seed-0 scene under early
    termination, all R S without): 4 x the dtype + 8 B (pairs) or 4 B (bins, + 4 B a ray for the last
    edge); the outputs (20 B a ray) and the weights (4 R S) written. A step reads whole chunks: up to
    CHUNK - 1 samples a ray past its cut are not counted."""
    q = _check_point(point)
    n = sum(_plan(_key(point)))
    R, S = q["R"], q["S"]
    return n * _sample_bytes(q) + (4 * R if q["t_layout"] == "bins" else 0) + 20 * R + 4 * R * S * q["weights"]


def flops(point) -> int:
    """20 a composited sample: delta and sigma delta (2), the scan (1), the prefix (2), the two
    exponentials, 1 - and the weight (4), the opacity (1), colour (6) and depth (4) sums."""
    _check_point(point)
    return 20 * sum(_plan(_key(point)))


def grid(cfg, point) -> tuple[int]:
    """(cdiv(R, BLOCK_R),): BLOCK_R consecutive rays a program."""
    q = _check_point(point)
    _check_cfg(cfg)
    return (triton.cdiv(q["R"], cfg["BLOCK_R"]),)


def cta_iterations(cfg, point) -> list[int]:
    """Each program's steps in launch order: cdiv(S, CHUNK) without early termination; with it the
    most over the program's rays of cdiv(composited samples, CHUNK) on the seed-0 scene (a ray is alive
    at a step's start iff that step's first sample is composited; the program stops when none is)."""
    import torch
    q = _check_point(point)
    _check_cfg(cfg)
    R, S, B, C = q["R"], q["S"], cfg["BLOCK_R"], cfg["CHUNK"]
    g = triton.cdiv(R, B)
    if q["eps"] == 0:
        return [triton.cdiv(S, C)] * g
    n = torch.tensor(_plan(_key(point)), dtype=torch.int64)
    steps = torch.div(n + (C - 1), C, rounding_mode="floor")
    pad = torch.cat([steps, steps[-1:].expand(g * B - R)])          # rows past R: row R - 1 again
    return pad.view(g, B).amax(1).tolist()


def loop_iterations(cfg, point) -> int:
    """A program's mean steps (cta_iterations' mean, rounded; at least 1)."""
    its = cta_iterations(cfg, point)
    return max(1, round(sum(its) / len(its)))


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory), laid
    out as make_inputs lays them: sigma [R, S] and rgb [R, S, 3] contiguous in the dtype, t_starts /
    t_ends views of one [R, S + 1] array (bins) or two contiguous arrays (pairs), the outputs
    contiguous fp32, the weights [R, S] fp32 when the point writes them."""
    import torch
    q = _check_point(point)
    _check_cfg(cfg)
    R, S = q["R"], q["S"]
    m = functools.partial(torch.empty, device="meta")
    dt = _torch_dtype(q["dtype"])
    if q["t_layout"] == "bins":
        bins = m((R, S + 1), dtype=torch.float32)
        t0, t1 = bins[:, :-1], bins[:, 1:]
    else:
        t0, t1 = m((R, S), dtype=torch.float32), m((R, S), dtype=torch.float32)
    w = m((R, S), dtype=torch.float32) if q["weights"] else None
    return _kernel_args(m((R, S), dtype=dt), m((R, S, 3), dtype=dt), t0, t1, m((R, 3), dtype=torch.float32),
                        m((R,), dtype=torch.float32), m((R,), dtype=torch.float32), w, q["eps"], cfg)
