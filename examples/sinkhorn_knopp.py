"""Batched log-domain Sinkhorn-Knopp normalization (entropic optimal transport / balanced assignment),
a bare @triton.jit kernel + its launcher: per matrix b of the batch, from logits X[b] [N, M],

    L = alpha X[b]                                    (alpha: a runtime scale; -1 / eps for a cost)
    f = 0, g = 0, then ITERS times:
        f_i = log a_i - log sum_j exp(L_ij + g_j)     (the row pass: every row's mass becomes a_i)
        g_j = log b_j - log sum_i exp(L_ij + f_i)     (the column pass: every column's mass b_j)
    P[b] = exp(L + f[:, None] + g[None, :])           (the transport plan, in the input's dtype)

as used by DeepSeek's manifold-constrained hyper-connections (mHC: each token's n x n residual mixing
matrix projected onto the doubly stochastic set, n = 4, 20 iterations), S-BASE's balanced
token-to-expert routing (rows tokens, columns experts, every expert the same share of a group's
tokens) and entropic OT losses and metrics (a cost C, L = -C / eps, histograms a and b as marginals).
After the last iteration the columns hold their marginals exactly and the rows approximately (the
usual Sinkhorn convention; ITERS = 0 gives P = exp(alpha X)).

X: [Bt, N, M] fp32 / bf16 / fp16 with any strides (a column slice of a wider projection output, read
in place; batch stride 0 for one cost matrix shared by the batch; a transposed view). Marginals,
optional, fp32 >= 0: a [N] or [Bt, N], b [M] or [Bt, M] (shared by the batch or one a matrix; any
strides); without them every row sums to 1 and every column to N / M (doubly stochastic when
N = M). P: a fresh contiguous [Bt, N, M] tensor in X's dtype. Optionally the potentials f [Bt, N],
g [Bt, M] (fp32, natural log: P = exp(alpha X + f + g)), e.g. for an OT loss's dual or gradient. A
row (column) whose logits are all -inf -- padding, a fully masked token -- gets potential -inf and
zeros in P, and so does one whose marginal is 0.

Work split: one program holds MATS whole matrices in registers -- a [MATS, BLOCK_N, BLOCK_M] fp32
tile, BLOCK_N / BLOCK_M = N / M padded to powers of two -- loads them once, runs all ITERS iterations
on them (no memory traffic in the loop: per element and pass an add, a max, an add or two, an exp2
and an add, plus the reductions' shuffles and, across warps, shared memory and barriers) and writes P
(and the potentials) once. MATS = max(1, TILE // (BLOCK_N BLOCK_M)): the launcher knob TILE is the
program's element budget (4 x 4 mHC matrices go 128-256 a program, S-BASE's 32 x 64 groups 1-2,
DeepEMD's 25 x 25 (32 x 32) 2-4). Grid cdiv(Bt, MATS), matrices in order. The work is in base 2 (the
logits scaled by alpha log2(e) once, exp2 / log2 in the loop; the potentials converted back on the
way out). In the exact pass the exponent is x + (h - max) rather than (x + h) - max, so the sums
x + h are not held from the max to the exp2 (a tile of registers for one more add an element).

Two layouts of the tile (LAYOUT):
  0: Triton's coalesced layout: vectors along a row (X_VEC elements when the column stride is 1 and
     the rows start aligned, checked by the launcher and told with tl.multiple_of), lanes along the
     columns, then the rows and the matrices. A row pass reduces inside a thread and across the lanes
     holding the row, a column pass across lanes and, for tall matrices, warps (shared memory and a
     barrier). For mHC's 4 x 4 fp32 one 16-byte vector is a row and a thread holds whole matrices
     (no shuffle at all).
  1: the column stride kept from the compiler's contiguity analysis (do_not_specialize: scalar
     accesses), so the lanes go along the matrices, then the rows: a thread holds whole matrices
     (4 x 4) or whole rows / row segments (the warps split the columns of wider ones): a row pass
     mostly inside a thread, a column pass across the lanes; the column potentials are replicated
     in every thread of a row (registers, and a log2 each).

Two ways to shift the log-sum-exps (SHIFT):
  0: the exact max of every row / column, every pass.
  1: the first iteration exact, then the bound left by the previous pass: after a column pass every
     P_ij <= b_j, so max_j (L_ij + g_j) <= max b - f_i, and from the second iteration on, after a
     row pass, max_i (L_ij + f_i) <= max a - g_j. No max reduction and no max shuffles. The shifted
     sums stay >= 2^-(log2 N + spread) (a column pass keeps at least min b / total a of a row's mass,
     a row pass likewise), the largest term >= 2^-(log2 N + log2 M + spread): safe while the
     marginals' spread log2(max a / min a) + log2(max b / min b) <= SAFE_SPREAD = 86 -- always for
     the defaults; a program with a matrix past it (a zero marginal included) takes the exact loop,
     decided once before the loop.

Masks: rows past N and columns past M (EVEN_N / EVEN_M = 0) load as -inf (after the scale: a
negative alpha would turn a masked 0 into +inf otherwise) and get potential -inf; the matrices' and
rows' masks are uniform along a row (vectorization kept), the column mask only where EVEN_M = 0;
matrices past Bt are masked on every load and store. A pass writes -inf where its sum is 0 or NaN
(no finite entry: its max is -inf and the shifted terms NaN), so padding never makes a NaN. The
stores' masks are rebuilt after the loop in another form (<= N - 1): the loads' own, merged with them
by the compiler, stayed live through the loop (a predicate an element: 10-18 registers spilled at the
DeepEMD point on 4 warps). Offsets: the matrices' bases int64 (Bt N M passes 2^31 at a few times
the points' sizes), the offsets inside one matrix int32 (checked: (N - 1) |stride_n| + (M - 1)
|stride_m| < 2^31).

The limit: a program holds whole matrices, at most 16384 padded elements (128 x 128) and at most 128
fp32 elements a thread (BLOCK_N BLOCK_M <= 4096 num_warps); a larger matrix (S-BASE's whole
[tokens, experts] batch, say) is refused with a ValueError naming the remedy: split it into groups of
tokens (the per-group form at the second point) -- an exact split of one matrix over programs would
need a grid-wide reduction every pass.

Tunables: TILE (2048 / 4096: the program's element budget, hence MATS and the fp32 elements a
thread, 4-32), num_warps (4 / 8 / 16), LAYOUT (0 / 1: above), SHIFT (0 / 1: above), UNROLL (1 / 2:
tl.range's loop_unroll_factor on the iteration loop, a remainder loop beside it); num_stages held at
1 (the loop loads nothing). Every config of the sweep (48) compiles for sm_90 at every point. Triton
3.6 (ptxas 12.8): 31-247 registers (mHC 31-96, S-BASE 31-247: the whole-rows layout on 4 warps with
SHIFT and UNROLL, its column potentials replicated along the 64-wide rows; DeepEMD 32-164), no
spills; shared memory 0-8 KiB (the cross-warp reductions' partials: none for mHC where a program's
128-256 matrices fill its lanes, a thread holding whole matrices; 4-8 KiB where they don't, 8 warps
with TILE 2048 and 16 warps). Triton 3.9 (ptxas 12.9): 29-249 registers (mHC 29-249, S-BASE 31-128,
DeepEMD 32-128), shared memory 0-8 KiB (none at all for mHC), and 8 of the 144 (config, point)
compiles spill 2-4 registers where ptxas settled on an occupancy step (80 / 96 / 128 / 168
registers: 6 / 5 / 4 / 3 blocks of 128 threads an SM), 6 of them at the DeepEMD point with SHIFT 1.
On sm_120 (99 KiB a block) the configs tried compile without spills, 0-8 KiB of shared memory.
Problem parameters (a workload point): Bt, N, M, iters, dtype (fp32 / bf16 / fp16), alpha (default
1), marginals (0: none; 1: a [Bt, N] and b [Bt, M]), potentials (0 / 1: f and g written), x_pitch /
x_col0 (X the columns x_col0 .. x_col0 + N M of a [Bt, x_pitch] buffer), shared_cost (1: one [N, M]
matrix, batch stride 0).
"""

from __future__ import annotations

import math

import triton
import triton.language as tl

LOG2E = 1.4426950408889634
MAX_ELEMS = 16384               # padded elements of one matrix: 128 x 128
MAX_PER_THREAD = 128            # fp32 tile elements a thread
SAFE_SPREAD = tl.constexpr(86.0)  # log2 spread of the marginals up to which SHIFT 1 takes its bounds


@triton.jit
def _lse_exact(x, h, lm, H_AX: tl.constexpr, R_AX: tl.constexpr):
    """lm - log2 sum over axis R_AX of 2^(x + h) (h broadcast along H_AX), the exact max as shift;
    -inf where the sum is 0 or NaN (no finite term)."""
    hb = tl.expand_dims(h, H_AX)
    m = tl.max(x + hb, axis=R_AX)
    # x + (h - m) rather than (x + h) - m: the sums x + h are not kept from the max to the exp2 (a
    # tile's worth of registers for one more add an element)
    s = tl.sum(tl.exp2(x + (hb - tl.expand_dims(m, R_AX))), axis=R_AX)
    return tl.where(s > 0, lm - m - tl.log2(s), float("-inf"))


@triton.jit
def _lse_bound(x, h, own, lm, om_max, H_AX: tl.constexpr, R_AX: tl.constexpr):
    """The same with the previous pass's bound as shift: m = max(other marginal) - own potential."""
    m = om_max - own
    s = tl.sum(tl.exp2(x + tl.expand_dims(h, H_AX) - tl.expand_dims(m, R_AX)), axis=R_AX)
    return tl.where(s > 0, lm - m - tl.log2(s), float("-inf"))


@triton.jit(do_not_specialize=["stride_xm", "stride_an", "stride_bm", "stride_pm"])
def _kernel(X, P, A, B, F, G, Bt, N, M, ITERS,
            stride_xb, stride_xn, stride_xm, stride_ab, stride_an, stride_bb, stride_bm, stride_pm,
            scale, la0, lb0,
            HAS_A: tl.constexpr, HAS_B: tl.constexpr, WRITE_POT: tl.constexpr,
            EVEN_N: tl.constexpr, EVEN_M: tl.constexpr, X_VEC: tl.constexpr, P_VEC: tl.constexpr,
            LAYOUT: tl.constexpr, SHIFT: tl.constexpr, UNROLL: tl.constexpr,
            MATS: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_M: tl.constexpr):
    pid = tl.program_id(0)
    mats = pid * MATS + tl.arange(0, MATS)
    rows = tl.arange(0, BLOCK_N)
    cols = tl.arange(0, BLOCK_M)
    m3 = mats[:, None, None]                    # the tile [MATS, BLOCK_N, BLOCK_M]: i axis 1, j axis 2
    r3 = rows[None, :, None]
    c3 = cols[None, None, :]
    m2 = mats[:, None]                          # potentials and marginals [MATS, BLOCK_*]
    r2 = rows[None, :]
    c2 = cols[None, :]
    if LAYOUT == 1:
        # no unit stride the compiler can see: lanes along the matrices, then the rows (whole rows a
        # thread), scalar accesses
        xc = c3 * stride_xm
        pc = c3 * stride_pm
        pr = r2 * stride_pm
        pcol = c2 * stride_pm
    else:
        if X_VEC > 0:
            xc = c3                             # unit column stride: vectors along a row
        else:
            xc = c3 * stride_xm
        pc = c3
        pr = r2
        pcol = c2
    ok3 = m3 < Bt                               # uniform along a row
    if not EVEN_N:
        ok3 = ok3 & (r3 < N)
    if not EVEN_M:
        ok3 = ok3 & (c3 < M)
    xo = m3.to(tl.int64) * stride_xb + (r3 * stride_xn + xc)
    if LAYOUT == 0 and X_VEC > 1:              # rows start on X_VEC-element boundaries (launcher-checked)
        xo = tl.multiple_of(xo, [1, 1, X_VEC])
    x = tl.load(X + xo, mask=ok3, other=0.0)
    x = x.to(tl.float32) * scale                # base 2: alpha log2(e) X
    if not (EVEN_N and EVEN_M):
        x = tl.where((r3 < N) & (c3 < M), x, float("-inf"))

    mat2 = m2 < Bt
    if HAS_A:
        a = tl.load(A + (m2.to(tl.int64) * stride_ab + r2 * stride_an), mask=mat2 & (r2 < N), other=1.0)
        la = tl.log2(a)
        la_max = tl.max(tl.where(r2 < N, la, float("-inf")), axis=1)
        la_min = tl.min(tl.where(r2 < N, la, float("inf")), axis=1)
        la_hi = la_max[:, None]
    else:
        la = la0
        la_hi = la0
    if HAS_B:
        b = tl.load(B + (m2.to(tl.int64) * stride_bb + c2 * stride_bm), mask=mat2 & (c2 < M), other=1.0)
        lb = tl.log2(b)
        lb_max = tl.max(tl.where(c2 < M, lb, float("-inf")), axis=1)
        lb_min = tl.min(tl.where(c2 < M, lb, float("inf")), axis=1)
        lb_hi = lb_max[:, None]
    else:
        lb = lb0
        lb_hi = lb0

    f = tl.zeros((MATS, BLOCK_N), dtype=tl.float32)
    g = tl.zeros((MATS, BLOCK_M), dtype=tl.float32)

    # the row pass reduces over j (g broadcast along i), the column pass over i (f along j)
    if SHIFT:
        if HAS_A and HAS_B:
            safe = tl.max((la_max - la_min) + (lb_max - lb_min), axis=0) <= SAFE_SPREAD
        elif HAS_A:
            safe = tl.max(la_max - la_min, axis=0) <= SAFE_SPREAD
        elif HAS_B:
            safe = tl.max(lb_max - lb_min, axis=0) <= SAFE_SPREAD
        else:
            safe = True
        if safe:
            if ITERS > 0:
                f = _lse_exact(x, g, la, 1, 2)
                g = _lse_exact(x, f, lb, 2, 1)
            for _ in tl.range(1, ITERS, loop_unroll_factor=UNROLL):
                f = _lse_bound(x, g, f, la, lb_hi, 1, 2)
                g = _lse_bound(x, f, g, lb, la_hi, 2, 1)
        else:
            for _ in tl.range(0, ITERS, loop_unroll_factor=UNROLL):
                f = _lse_exact(x, g, la, 1, 2)
                g = _lse_exact(x, f, lb, 2, 1)
    else:
        for _ in tl.range(0, ITERS, loop_unroll_factor=UNROLL):
            f = _lse_exact(x, g, la, 1, 2)
            g = _lse_exact(x, f, lb, 2, 1)

    p = tl.exp2(x + f[:, :, None] + g[:, None, :])
    po = m3.to(tl.int64) * N * M + (r3 * M + pc)
    if LAYOUT == 0 and P_VEC > 1:
        po = tl.multiple_of(po, [1, 1, P_VEC])
    # the stores' masks are rebuilt here in another form (<= N - 1): the loads' own, merged with them by
    # the compiler, would stay live through the loop (a predicate an element: 10-18 spilled registers
    # at the DeepEMD point on 4 warps)
    ok3 = m3 <= Bt - 1
    if not EVEN_N:
        ok3 = ok3 & (r3 <= N - 1)
    if not EVEN_M:
        ok3 = ok3 & (c3 <= M - 1)
    tl.store(P + po, p.to(P.dtype.element_ty), mask=ok3)
    if WRITE_POT:
        LN2: tl.constexpr = 0.6931471805599453
        mat2 = m2 <= Bt - 1
        tl.store(F + (m2.to(tl.int64) * N + pr), f * LN2, mask=mat2 & (r2 <= N - 1))
        tl.store(G + (m2.to(tl.int64) * M + pcol), g * LN2, mask=mat2 & (c2 <= M - 1))


# ---------------------------------------------------------------- launcher
ROLE = "held-out-27"
DTYPES = ("fp32", "bf16", "fp16")
TUNABLES = ("TILE", "LAYOUT", "SHIFT", "UNROLL", "num_warps", "num_stages")
BASELINE = {"TILE": 4096, "LAYOUT": 0, "SHIFT": 0, "UNROLL": 1, "num_warps": 4, "num_stages": 1}
# the study's sweep: 2 x 2 x 2 x 2 x 3 = 48 configs, 4-32 fp32 tile elements a thread
SWEEP_AXES = {"TILE": [2048, 4096], "LAYOUT": [0, 1], "SHIFT": [0, 1], "UNROLL": [1, 2], "num_warps": [4, 8, 16],
              "num_stages": [1]}

# One launch each, compute-bound: 0.27-0.94 G exp2 of real elements (two an element an iteration;
# 1.5 G at DeepEMD with its padding), at the H100's 16 MUFU results a clock an SM 75-410 us of exp2
# alone, against 17-134 MB of DRAM traffic. They differ
# in the matrices (4 x 4, 32 x 64, 25 x 25 padded to 32 x 32: 128-256, 1-2 and 2-4 a program), the
# dtype (fp32 / bf16 / fp16), the iterations (20 / 32 / 50), X's layout (a column slice of a wider
# buffer, rows 96 bytes apart; contiguous; 25-element rows, unaligned), the marginals (default /
# default / per pair) and the potentials (written at the DeepEMD point only).
POINTS = [
    # DeepSeek's mHC (manifold-constrained hyper-connections) with n = 4 residual streams: every
    # token's H_res logits (a 4 x 4 block of the fused mapping projection [T, n^2 + 2n = 24], e.g.
    # H_pre, H_post, H_res at columns 0 / 4 / 8, read in place) projected onto the doubly stochastic
    # set by t_max = 20 Sinkhorn-Knopp iterations, fp32, over a micro-batch of 256 x 4096 = 2^20
    # tokens: X 67 MB read (of a 101 MB buffer), P 67 MB written
    {"Bt": 1048576, "N": 4, "M": 4, "iters": 20, "dtype": "fp32", "x_pitch": 24, "x_col0": 8},
    # S-BASE balanced routing (Clark et al. 2022) of a 65536-token batch (16 x 4096) to 64 experts in
    # the per-group form: 2048 groups of 32 tokens, each group's bf16 router logits [32, 64] balanced
    # to 1 per token and 32 / 64 = 0.5 per expert, a fixed budget of 32 iterations (in place of
    # Megatron-LM's tolerance loop): 8.4 + 8.4 MB
    {"Bt": 2048, "N": 32, "M": 64, "iters": 32, "dtype": "bf16"},
    # DeepEMD's few-shot metric (Zhang et al. 2020) solved entropically: the 25 nodes of two 5 x 5
    # ResNet-12 feature maps, cost 1 - cosine [25, 25] per (query, support) pair in fp16 (AMP),
    # cross-reference node weights as per-pair marginals, eps = 0.05 (alpha = -20), 50 iterations,
    # the potentials written (the EMD's dual); 40 5-way 1-shot test episodes at once: 40 x 75
    # queries x 5 supports = 15000 pairs. Ragged: 25 x 25 padded to 32 x 32 (EVEN_N = EVEN_M = 0), the
    # rows 50 bytes apart (unit stride, unaligned: X_VEC 1). 18.8 + 18.8 MB, marginals and potentials
    # 6 MB
    {"Bt": 15000, "N": 25, "M": 25, "iters": 50, "dtype": "fp16", "alpha": -20.0, "marginals": 1, "potentials": 1},
]


def _torch_dtype(name: str):
    import torch
    try:
        return {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}") from None


def _elem_bytes(name: str) -> int:
    if name not in DTYPES:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}")
    return 4 if name == "fp32" else 2


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _blocks(N: int, M: int) -> tuple[int, int]:
    """(BLOCK_N, BLOCK_M): N and M padded to powers of two, checked against one program's limit."""
    bn, bm = triton.next_power_of_2(N), triton.next_power_of_2(M)
    if bn * bm > MAX_ELEMS:
        raise ValueError(f"an N x M = {N} x {M} matrix (padded {bn} x {bm} = {bn * bm} elements) exceeds one "
                         f"program's {MAX_ELEMS}-element register tile (128 x 128): split it into groups of rows "
                         f"(per-group Sinkhorn) -- the kernel holds whole matrices")
    return bn, bm


def _check_point(point) -> dict:
    """The point's fields, checked, defaults filled in."""
    for k in ("Bt", "N", "M"):
        v = point[k]
        if not _is_int(v) or v < 1:
            raise ValueError(f"{k}={v!r} must be a positive int")
    it = point.get("iters", 20)
    if not _is_int(it) or it < 0:
        raise ValueError(f"iters={it!r} must be a non-negative int")
    dt = point.get("dtype", "fp32")
    _elem_bytes(dt)
    alpha = point.get("alpha", 1.0)
    if not isinstance(alpha, (int, float)) or isinstance(alpha, bool) or not math.isfinite(alpha) or alpha == 0:
        raise ValueError(f"alpha={alpha!r} must be a finite non-zero number")
    flags = {}
    for k in ("marginals", "potentials", "shared_cost"):
        v = point.get(k, 0)
        if v not in (0, 1) or isinstance(v, float):
            raise ValueError(f"{k}={v!r} must be 0 or 1")
        flags[k] = int(v)
    N, M = point["N"], point["M"]
    pitch, col0 = point.get("x_pitch", N * M), point.get("x_col0", 0)
    if not _is_int(col0) or col0 < 0 or not _is_int(pitch) or pitch < col0 + N * M:
        raise ValueError(f"x_pitch={pitch!r}, x_col0={col0!r}: X's N M = {N * M} columns from x_col0 must lie inside "
                         f"a row of x_pitch")
    if flags["shared_cost"] and (pitch != N * M or col0):
        raise ValueError("shared_cost=1 takes no x_pitch / x_col0 (one contiguous [N, M] matrix)")
    _blocks(N, M)
    return dict(Bt=point["Bt"], N=N, M=M, iters=it, dtype=dt, alpha=float(alpha), pitch=pitch, col0=col0, **flags)


def _mats(cfg, N: int, M: int) -> int:
    bn, bm = _blocks(N, M)
    return max(1, cfg["TILE"] // (bn * bm))


def _check_cfg(cfg, N: int | None = None, M: int | None = None) -> None:
    t = cfg["TILE"]
    if not _is_int(t) or t < 1 or t & (t - 1):
        raise ValueError(f"TILE={t!r} must be a power of two")
    for k in ("LAYOUT", "SHIFT"):
        if cfg[k] not in (0, 1) or not _is_int(cfg[k]):
            raise ValueError(f"{k}={cfg[k]!r} must be 0 or 1")
    if cfg["UNROLL"] not in (1, 2, 4) or not _is_int(cfg["UNROLL"]):
        raise ValueError(f"UNROLL={cfg['UNROLL']!r} must be 1, 2 or 4")
    w = cfg["num_warps"]
    if w not in (1, 2, 4, 8, 16, 32) or not _is_int(w):
        raise ValueError(f"num_warps={w!r} must be a power of two from 1 to 32")
    st = cfg.get("num_stages", 1)
    if not _is_int(st) or st < 1:
        raise ValueError(f"num_stages={st!r} must be a positive int")
    if N is not None:
        bn, bm = _blocks(N, M)
        per = _mats(cfg, N, M) * bn * bm // (32 * w)
        if per > MAX_PER_THREAD:
            raise ValueError(f"TILE={t} with {bn} x {bm} matrices on num_warps={w} holds {per} fp32 elements a "
                             f"thread, past {MAX_PER_THREAD}: raise num_warps or lower TILE")


def _vec(elem: int, stride_b: int, stride_n: int, bm: int) -> int:
    """The largest power of two v <= min(16 bytes / elem, BLOCK_M) dividing the batch and row strides: with
    a 16-byte aligned base, every row starts on a v-element boundary."""
    v = min(16 // elem, bm)
    while v > 1 and (stride_b % v or stride_n % v):
        v //= 2
    return v


def _grid(Bt: int, N: int, M: int, cfg) -> tuple[int]:
    _check_cfg(cfg, N, M)
    return (triton.cdiv(Bt, _mats(cfg, N, M)),)


def _kernel_args(x, P, a, b, F, G, iters: int, alpha: float, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it); without a / b
    / F / G the output P stands in for them (never read or written)."""
    Bt, N, M = x.shape
    bn, bm = _blocks(N, M)
    elem = x.element_size()
    sxb, sxn, sxm = x.stride()
    if sxm == 1 or M == 1:                      # X_VEC: 0 no unit column stride, 1 unit, v > 1 aligned to v
        xv = _vec(elem, sxb, sxn, bm) if x.data_ptr() % 16 == 0 else 1
    else:
        xv = 0
    pv = _vec(elem, N * M, M, bm)
    A = P if a is None else a
    B = P if b is None else b
    return dict(X=x, P=P, A=A, B=B, F=P if F is None else F, G=P if G is None else G, Bt=Bt, N=N, M=M,
                ITERS=iters, stride_xb=sxb, stride_xn=sxn, stride_xm=1 if M == 1 else sxm,
                stride_ab=0 if a is None or a.dim() == 1 else a.stride(0), stride_an=A.stride(-1),
                stride_bb=0 if b is None or b.dim() == 1 else b.stride(0), stride_bm=B.stride(-1), stride_pm=1,
                scale=alpha * LOG2E, la0=0.0, lb0=math.log2(N / M),
                HAS_A=int(a is not None), HAS_B=int(b is not None), WRITE_POT=int(F is not None),
                EVEN_N=int(N == bn), EVEN_M=int(M == bm), X_VEC=xv, P_VEC=pv, LAYOUT=cfg["LAYOUT"],
                SHIFT=cfg["SHIFT"], UNROLL=cfg["UNROLL"], MATS=_mats(cfg, N, M), BLOCK_N=bn, BLOCK_M=bm)


def _check_marginal(v, name: str, Bt: int, K: int, x):
    import torch
    if v is None:
        return None
    if v.dtype != torch.float32 or v.device != x.device:
        raise ValueError(f"{name} must be fp32 on {x.device}; got {v.dtype} on {v.device}")
    if tuple(v.shape) not in ((K,), (Bt, K)):
        raise ValueError(f"{name} must be [{K}] or [{Bt}, {K}]; got {list(v.shape)}")
    return v


def sinkhorn(logits, iters: int = 20, *, alpha: float = 1.0, row_marginal=None, col_marginal=None,
             return_potentials: bool = False, TILE: int = 4096, LAYOUT: int = 0, SHIFT: int = 0, UNROLL: int = 1,
             num_warps: int = 4, num_stages: int = 1):
    """logits [Bt, N, M] (fp32 / bf16 / fp16, any strides) -> the Sinkhorn plan P [Bt, N, M] in the logits'
    dtype (contiguous): `iters` alternating row / column log-sum-exp normalizations of alpha logits
    towards the marginals (row_marginal [N] or [Bt, N], col_marginal [M] or [Bt, M], fp32, >= 0; by
    default rows 1 and columns N / M). With return_potentials, (P, f, g): f [Bt, N], g [Bt, M] fp32
    with P = exp(alpha logits + f[..., None] + g[..., None, :])."""
    import torch
    if logits.dim() != 3:
        raise ValueError(f"expected logits [Bt, N, M]; got {tuple(logits.shape)}")
    if logits.dtype not in (torch.float32, torch.bfloat16, torch.float16):
        raise ValueError(f"logits must be fp32 / bf16 / fp16; got {logits.dtype}")
    if not _is_int(iters) or iters < 0:
        raise ValueError(f"iters={iters!r} must be a non-negative int")
    if not isinstance(alpha, (int, float)) or isinstance(alpha, bool) or not math.isfinite(alpha) or alpha == 0:
        raise ValueError(f"alpha={alpha!r} must be a finite non-zero number")
    cfg = {"TILE": TILE, "LAYOUT": LAYOUT, "SHIFT": SHIFT, "UNROLL": UNROLL, "num_warps": num_warps,
           "num_stages": num_stages}
    _check_cfg(cfg)
    Bt, N, M = logits.shape
    a = _check_marginal(row_marginal, "row_marginal", Bt, N, logits)
    b = _check_marginal(col_marginal, "col_marginal", Bt, M, logits)
    P = torch.empty((Bt, N, M), dtype=logits.dtype, device=logits.device)
    F = G = None
    if return_potentials:
        F = torch.empty((Bt, N), dtype=torch.float32, device=logits.device)
        G = torch.empty((Bt, M), dtype=torch.float32, device=logits.device)
    if P.numel() == 0:                          # nothing launched (potentials 0)
        return (P, F.zero_(), G.zero_()) if return_potentials else P
    _check_cfg(cfg, N, M)
    if (N - 1) * abs(logits.stride(1)) + (M - 1) * abs(logits.stride(2)) >= 2**31:
        raise ValueError(f"one [{N}, {M}] matrix with strides {tuple(logits.stride()[1:])} exceeds the kernel's "
                         f"int32 in-matrix offsets")
    for v, K, name in ((a, N, "row_marginal"), (b, M, "col_marginal")):
        if v is not None and v.dim() == 2 and (K - 1) * abs(v.stride(1)) >= 2**31:
            raise ValueError(f"{name}'s strides {tuple(v.stride())} exceed the kernel's int32 offsets")
    grid = _grid(Bt, N, M, cfg)
    if grid[0] >= 2**31:
        raise ValueError(f"Bt={Bt} needs {grid[0]} programs, past the grid's 2^31 - 1: raise TILE")
    _kernel[grid](**_kernel_args(logits, P, a, b, F, G, iters, float(alpha), cfg), num_warps=num_warps,
                  num_stages=num_stages)
    return (P, F, G) if return_potentials else P


def _grid_cost(N: int, M: int):
    """An [N, M] cost between two point sets on the unit square: row i at (i // w, i % w) on a w x w grid
    (w = ceil(sqrt(N))), column j likewise, squared distance divided by its largest value (in [0, 1];
    the 8 x 8 digits' pixels for N = M = 64)."""
    import torch

    def pts(K):
        w = max(1, math.isqrt(K - 1) + 1)
        k = torch.arange(K, dtype=torch.float64)
        return torch.stack([torch.div(k, w, rounding_mode="floor"), k % w], 1) / max(w - 1, 1)

    c = torch.cdist(pts(N), pts(M)) ** 2
    return (c / c.max().clamp_min(1e-12)).float()


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """X: with shared_cost, the grid cost (_grid_cost) expanded over the batch (stride 0); else, with a
    negative alpha (a cost), 1 - cosine of random 16-dim features of the rows' and the columns' nodes
    (DeepEMD's cost, in [0, 2]), or N(0, 1) logits plus a per-column bias N(0, 0.5^2) (popular experts /
    streams); in the point's dtype; with x_pitch the columns x_col0 .. x_col0 + N M of a [Bt, x_pitch]
    buffer filled with N(0, 1) (read in place). With marginals, a [Bt, N] and b [Bt, M]: u^4 + 1e-3 for
    u ~ U(0, 1), normalized (skewed node weights, spread ~10 bits). iters, alpha, potentials. Drawn on
    the CPU from a seeded torch.Generator and moved."""
    import torch
    q = _check_point(point)
    Bt, N, M = q["Bt"], q["N"], q["M"]
    gen = torch.Generator(device="cpu").manual_seed(seed)
    tdt = _torch_dtype(q["dtype"])
    if q["shared_cost"]:
        x = _grid_cost(N, M).to(tdt).to(device).expand(Bt, N, M)
    else:
        if q["alpha"] < 0:
            u = torch.nn.functional.normalize(torch.randn((Bt, N, 16), generator=gen), dim=-1)
            v = torch.nn.functional.normalize(torch.randn((Bt, M, 16), generator=gen), dim=-1)
            z = 1.0 - u @ v.transpose(1, 2)
        else:
            z = torch.randn((Bt, N * M), generator=gen).view(Bt, N, M) + 0.5 * torch.randn((1, 1, M), generator=gen)
        if q["pitch"] != N * M or q["col0"]:
            buf = torch.randn((Bt, q["pitch"]), generator=gen)
            buf[:, q["col0"]:q["col0"] + N * M] = z.reshape(Bt, N * M)
            x = buf.to(tdt).to(device)[:, q["col0"]:q["col0"] + N * M].view(Bt, N, M)
        else:
            x = z.to(tdt).to(device)
    a = b = None
    if q["marginals"]:
        a = torch.rand((Bt, N), generator=gen) ** 4 + 1e-3
        b = torch.rand((Bt, M), generator=gen) ** 4 + 1e-3
        a, b = (a / a.sum(1, keepdim=True)).to(device), (b / b.sum(1, keepdim=True)).to(device)
    return {"x": x, "iters": q["iters"], "alpha": q["alpha"], "a": a, "b": b, "potentials": bool(q["potentials"])}


def launch(inputs, cfg):
    """The plan P [Bt, N, M] (the potentials, when the inputs ask for them, are computed and dropped)."""
    out = sinkhorn(inputs["x"], inputs["iters"], alpha=inputs.get("alpha", 1.0), row_marginal=inputs.get("a"),
                   col_marginal=inputs.get("b"), return_potentials=inputs.get("potentials", False),
                   TILE=cfg["TILE"], LAYOUT=cfg["LAYOUT"], SHIFT=cfg["SHIFT"], UNROLL=cfg["UNROLL"],
                   num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
    return out[0] if isinstance(out, tuple) else out


def sinkhorn_reference(x, iters: int, alpha: float = 1.0, a=None, b=None, dtype=None):
    """(P, f, g) by the same iterations in torch (float64 unless `dtype`): torch.logsumexp, -inf
    potentials where a row's / column's log-sum-exp is -inf."""
    import torch
    dt = torch.float64 if dtype is None else dtype
    L = alpha * x.to(dt)
    Bt, N, M = L.shape
    la = torch.zeros((Bt, N), dtype=dt, device=x.device) if a is None else torch.log(a.to(dt)).expand(Bt, N)
    lb = (torch.full((Bt, M), math.log(N / M), dtype=dt, device=x.device) if b is None
          else torch.log(b.to(dt)).expand(Bt, M))
    f = torch.zeros((Bt, N), dtype=dt, device=x.device)
    g = torch.zeros((Bt, M), dtype=dt, device=x.device)
    ninf = torch.tensor(float("-inf"), dtype=dt, device=x.device)
    for _ in range(iters):
        s = torch.logsumexp(L + g[:, None, :], 2)
        f = torch.where(s == float("-inf"), ninf, la - s)
        s = torch.logsumexp(L + f[:, :, None], 1)
        g = torch.where(s == float("-inf"), ninf, lb - s)
    return torch.exp(L + f[:, :, None] + g[:, None, :]), f, g


def reference(inputs):
    """fp32 P (computed in float64 from the inputs as stored)."""
    P, _, _ = sinkhorn_reference(inputs["x"], inputs["iters"], inputs.get("alpha", 1.0), inputs.get("a"),
                                 inputs.get("b"))
    return P.float()


def torch_baseline(inputs):
    """What eager torch runs (a POT / Megatron-style loop in the log domain): the logits upcast to fp32,
    iters x two torch.logsumexp passes over [Bt, N, M], exp, cast back to the logits' dtype."""
    P, _, _ = sinkhorn_reference(inputs["x"], inputs["iters"], inputs.get("alpha", 1.0), inputs.get("a"),
                                 inputs.get("b"), dtype=__import__("torch").float32)
    return P.to(inputs["x"].dtype)


def bytes_moved(point) -> int:
    """X read once (its N M used elements a matrix; once in all with shared_cost), P written once; with
    marginals a and b read (fp32), with potentials f and g written (fp32)."""
    q = _check_point(point)
    Bt, N, M, e = q["Bt"], q["N"], q["M"], _elem_bytes(q["dtype"])
    x = N * M * e * (1 if q["shared_cost"] else Bt)
    return x + Bt * N * M * e + 4 * Bt * (N + M) * (q["marginals"] + q["potentials"])


def flops(point) -> int:
    """Per element: the scale (1), per pass an add, a max, a subtract, an exp2 and an add (5, two passes an
    iteration), the plan's two adds and exp2 (3): Bt N M (10 iters + 4), an exp2 counted as one."""
    q = _check_point(point)
    return q["Bt"] * q["N"] * q["M"] * (10 * q["iters"] + 4)


def grid(cfg, point) -> tuple[int]:
    """(cdiv(Bt, MATS),): MATS = max(1, TILE // (BLOCK_N BLOCK_M)) matrices a program."""
    q = _check_point(point)
    return _grid(q["Bt"], q["N"], q["M"], cfg)


def loop_iterations(cfg, point) -> int:
    """The Sinkhorn iterations: `iters` a program (each a row and a column pass over the tile in
    registers; no loads in the loop). With SHIFT 1 the first is peeled, the loop runs the rest."""
    q = _check_point(point)
    _check_cfg(cfg, q["N"], q["M"])
    return q["iters"]


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory): X as
    make_inputs lays it out (a column slice of [Bt, x_pitch], contiguous, or one [N, M] expanded), P
    contiguous in its dtype, a / b [Bt, N] / [Bt, M] and f / g likewise (fp32) when asked for."""
    import torch
    q = _check_point(point)
    Bt, N, M = q["Bt"], q["N"], q["M"]
    _check_cfg(cfg, N, M)
    tdt = _torch_dtype(q["dtype"])
    if q["shared_cost"]:
        x = torch.empty((N, M), dtype=tdt, device="meta").expand(Bt, N, M)
    else:
        x = torch.empty((Bt, q["pitch"]), dtype=tdt, device="meta")[:, q["col0"]:q["col0"] + N * M].view(Bt, N, M)
    P = torch.empty((Bt, N, M), dtype=tdt, device="meta")
    a = b = F = G = None
    if q["marginals"]:
        a = torch.empty((Bt, N), dtype=torch.float32, device="meta")
        b = torch.empty((Bt, M), dtype=torch.float32, device="meta")
    if q["potentials"]:
        F = torch.empty((Bt, N), dtype=torch.float32, device="meta")
        G = torch.empty((Bt, M), dtype=torch.float32, device="meta")
    return _kernel_args(x, P, a, b, F, G, q["iters"], q["alpha"], cfg)
