"""CTC loss, forward (the alpha recursion in log space, as torch.nn.functional.ctc_loss / warp-ctc / cuDNN
compute it), a bare @triton.jit kernel + its launcher: per sample b, with log_probs lp [T, B, C] (log-softmax
outputs), its target l = l_0 .. l_(S_b - 1), input length T_b and the blank index,

    l' = blank l_0 blank l_1 ... blank l_(S_b - 1) blank                  (2 S_b + 1 extended states)
    alpha_0(0) = lp[0, b, blank],  alpha_0(1) = lp[0, b, l_0],  alpha_0(s) = -inf for s >= 2
    alpha_t(s) = lse(alpha_(t-1)(s), alpha_(t-1)(s - 1), [alpha_(t-1)(s - 2)]) + lp[t, b, l'_s]
                 (the third term only for a label state whose label differs from the one two states back:
                 the repeated-label rule)
    nll[b] = -lse(alpha_(T_b - 1)(2 S_b), alpha_(T_b - 1)(2 S_b - 1))                       [B] fp32

as wav2vec2 / HuBERT character CTC fine-tuning (HF Wav2Vec2ForCTC), NeMo's Citrinet / Conformer BPE CTC
models and CRNN text recognizers train with (reduction 'none': the caller sums or averages). An infeasible
sample (T_b too short for its target and its repeats) gets +inf, or 0 with zero_infinity (torch's rule);
T_b = 0 gives 0 for an empty target and +inf otherwise (torch's); S_b = 0 gives the all-blank path's cost.
Optionally the alpha table log_alpha [B, T, 2 S_alloc + 1] fp32 (natural log, aten._ctc_loss's layout; -inf
outside each sample's rows t < T_b and states s < 2 S_b + 1), what aten's _ctc_loss returns beside the nll
and its _ctc_loss_backward consumes: a training step can run this forward and torch's own backward,
torch.ops.aten._ctc_loss_backward(grad, log_probs, targets, input_lengths, target_lengths, nll, log_alpha,
blank, zero_infinity), with the raw nll (this forward with zero_infinity off: torch's own forward node keeps
+inf and zeroes only the loss it returns; the backward applies zero_infinity). The table is a need of
training, not a speed lever (B T (2 S + 1) 4 bytes more of writes); the beta recursion is not this kernel.

Inputs: log_probs [T, B, C] fp32 / bf16 / fp16 with any strides (typically the transpose of a [B, T, C]
log_softmax output, read in place: HF and NeMo pass exactly that view; a CRNN head emits [T, B, C]
contiguous); targets padded [B, S_alloc] (int32 / int64, any strides) or concatenated 1-D (the samples'
targets back to back, as HF's masked_select builds them; a sample's offset is the exclusive cumsum of
target_lengths); input_lengths, target_lengths [B] int32 / int64; blank in [0, C).

Work split: one program owns SAMPLES whole samples and walks t from 0 to the longest T_b among them. A sample's
2 S + 1 states are two fp32 rows of BLOCK_K (the batch's longest target + 1, padded to a power of two): the
blank states ab[k] = alpha(2 k), k = 0 .. S_b, and the label states al[k] = alpha(2 k + 1), k < S_b; a
program holds [SAMPLES, BLOCK_K] of each (per-sample values -- T_b, S_b, the blank's emission -- as
[SAMPLES, 1] columns). A step is

    prev[k] = al[k - 1]                            (the one cross-state dependency: a shift by one)
    ab[k]   = lse2(ab[k], prev[k]) + e_blank[t]
    al[k]   = lse3(al[k], ab[k], skip[k] ? prev[k] : -inf) + e_label[t, k]

in base 2 (the emissions scaled by log2(e) as they are used, exp2 / log2 on the MUFU, the loss back in nats).
The start is folded into the recursion: before t = 0 a program holds the virtual column ab[0] = 0, all else
-inf, so step 0 gives alpha_0 exactly (lse(0, -inf) = 0 + log2(1)) and T_b = 0 leaves it (torch's losses).
prev at k = 0 is the sample's own label state BLOCK_K - 1, always -inf (S_b <= BLOCK_K - 1): the shift is a
rotation within each sample's row, no mask. Label states past S_b get emission -inf (their loads masked off)
and blank states past S_b never see a finite neighbour, so the padding stays -inf with no select; a sample
whose T_b is passed keeps its column (one select a state a step). The loss is read after the loop at k = S_b:
lse2(ab[S_b], prev[S_b]) -- state 2 S_b and state 2 S_b - 1 = al[S_b - 1] -- and stored by that one element.

The shift is a tl.gather over the flattened [SAMPLES BLOCK_K] states (a reshape on each side: the 2-D
[SAMPLES, BLOCK_K] layout and the 1-D one are the same registers, no conversion; Triton leaves a 1-D gather
in its operand's layout). Its cost is the lever num_warps sets: when a program's states sit in one warp
(num_warps 1) the gather is warp shuffles (~3 a state: the source lane is the neighbour, its register one of
two) and no barrier; across warps it is a shared-memory round trip, a store, a bar.sync, a load and the
bar.sync before the next step's store (N 4 bytes of shared memory under triton 3.9, up to twice that under
3.6) -- against fewer states a thread (1-8 at the points) and so a shorter step.

The emissions of a step, lp[t, b, blank] (one a sample) and lp[t, b, l_k] (a gather from the C-wide row:
for C = 32 a sector or two, for C = 6625 a sector a label), do not depend on the recursion: they are
prefetched PF steps ahead into registers. The time loop is unrolled by PF with one named register slot a
step (slot j holds step t0 + j; after step t0 + j uses it, it is refilled with step t0 + PF + j), so PF
steps' gathers are in flight while the recursion runs and no moves rotate the slots. A slot costs a register
a state (and one a sample) a thread. The gathers are scattered 2- and 4-byte elements, not cp.async-able:
Triton's pipeliner leaves them alone, num_stages changes nothing in the cubin (checked at the points) and
is held at 1.

SAMPLES = max(1, min(TILE, 64 num_warps) // BLOCK_K): TILE is a program's budget of states (blank states of
all its samples), and a program of several samples holds at most 2 states a thread (at 4-8, with PF 4-8,
ptxas settles on an occupancy step, 128 or 168 registers, and spills a few). One sample a program is the
natural unit where B is small; several share a program's fixed costs (the per-step barriers, the prologue)
where B is large and BLOCK_K small.

Masks and offsets: lp's sample base int64 (b stride_b) and the time offset int64 (t stride_t: T B C passes
2^31 at a few times the CRNN point's size), the in-row label offset int32 (checked: (C - 1) |stride_c| < 2^31); the
targets' sample offsets int64, the in-target offsets int32 (checked). The alpha table (WRITE_ALPHA) is
written a step -- rows t < T_b the values, -inf past T_b and past the valid states, columns clipped to
2 S_alloc + 1 -- and rows past the program's last step -inf in a tail loop, so every entry is defined.
(Triton's interpreter turns a scalar bool & a vector bool into int32, which its masked store refuses: the
masks are single comparisons.)

Log2: on the GPU the lse's log2 is the MUFU's lg2.approx.ftz (the sum it takes is in [1, 3]: ~2^-22 relative
error, against ~25 instructions of libdevice's precise log2f that tl.log2 compiles to); Triton's interpreter
cannot run inline PTX, so the launcher sets FAST 0 there (tl.log2) -- the one constexpr the interpreter
tests take one way only (example_args and the compile tests take FAST 1).

The limit: BLOCK_K <= 4096 (targets up to 4095 labels) and at most 16 states of a kind a thread, else a
ValueError names the remedy (raise num_warps).

Tunables: TILE (64 / 128 / 256: SAMPLES 1 / 1-2 / 1-4 at BLOCK_K 64, up to 2 at 128, 1 at 256), PF (1 / 2 /
4 / 8 steps of emissions in flight), num_warps (1 / 2 / 4 / 8: the shift warp-local or through shared
memory, 1-8 states a thread); num_stages held at 1. 48 configs, every one valid at every point; compiled
for sm_90 at every point with triton 3.6 and 3.9 without spills (registers and shared memory: the test
file's test_sweep_fits_the_points).

The grid is cdiv(B, SAMPLES) programs: 32, 128-256 and 128-512 at the points, all below 4 x 132 = 528.
That is the workload: CTC's forward is a recursion over T within a sample, B is the batch, and a sample
does not split across programs without a grid-wide barrier a step.

Problem parameters (a workload point): B, T, C, S (the padded target width = the longest target), dtype,
layout ('tbc': [T, B, C] contiguous; 'btc': the transpose of a contiguous [B, T, C]), targets ('padded' /
'concat'), target_dtype ('int64' / 'int32'), blank, zero_infinity (0 / 1), alpha (0 / 1: the table
written). The lengths are a fixed function of (B, T, S) (_lengths: T_b from T down to ~3/4 T, S_b from S
down to ~2/3 S, sample 0 the longest of both), so bytes_moved and flops are exact.
"""

from __future__ import annotations

import triton
import triton.language as tl

MAX_BLOCK_K = 4096               # states of one kind (blank / label) a sample: targets up to 4095 labels
MAX_PER_THREAD = 16              # states of one kind a thread


@triton.jit
def _log2(x, FAST: tl.constexpr):
    """log2 of a sum in [1, 3] (or 0 / NaN, where the caller's select takes over): the MUFU's approximate
    lg2 on the GPU, tl.log2 in the interpreter."""
    if FAST:
        return tl.inline_asm_elementwise("lg2.approx.ftz.f32 $0, $1;", "=f,f", [x], dtype=tl.float32,
                                         is_pure=True, pack=1)
    else:
        return tl.log2(x)


@triton.jit
def _lse2(a, b, FAST: tl.constexpr):
    """log2(2^a + 2^b), -inf when both are -inf: max + log2(1 + 2^(min - max))."""
    m = tl.maximum(a, b)
    d = tl.minimum(a, b) - m
    return tl.where(m == float("-inf"), float("-inf"), m + _log2(1.0 + tl.exp2(d), FAST))


@triton.jit
def _lse3(a, b, c, FAST: tl.constexpr):
    """log2(2^a + 2^b + 2^c), -inf when all are -inf (the shift is 0 then, and log2(0) = -inf)."""
    m = tl.maximum(tl.maximum(a, b), c)
    ms = tl.where(m == float("-inf"), 0.0, m)
    return ms + _log2(tl.exp2(a - ms) + tl.exp2(b - ms) + tl.exp2(c - ms), FAST)


@triton.jit
def _emit(pl, pb, k, Sb, Tb, t, stride_lt):
    """Step t's emissions as stored: the label states' [SAMPLES, BLOCK_K] (-inf where the label is padding)
    and the blank's [SAMPLES, 1]; both masked off past T_b (no traffic). (The masks are single comparisons:
    Triton's interpreter turns a scalar bool & a vector bool into int32.)"""
    live = t < Tb
    o = t.to(tl.int64) * stride_lt
    el = tl.load(pl + o, mask=k < tl.where(live, Sb, 0), other=float("-inf"))
    eb = tl.load(pb + o, mask=live, other=0.0)
    return el, eb


@triton.jit
def _shift(al, rot, SAMPLES: tl.constexpr, BLOCK_K: tl.constexpr):
    """prev[s, k] = al[s, k - 1] (al[s, BLOCK_K - 1], always -inf, at k = 0): a tl.gather on the flattened
    states (Triton keeps a 1-D gather in the tensor's own layout: warp shuffles when the states sit in one
    warp, else a shared-memory round trip with a barrier on each side)."""
    N: tl.constexpr = SAMPLES * BLOCK_K
    return tl.reshape(tl.gather(tl.reshape(al, [N]), rot, axis=0), [SAMPLES, BLOCK_K])


@triton.jit
def _step(ab, al, el, eb, t, Tb, rot, skip, PA, W, wl, T_alloc, kk2, WRITE_ALPHA: tl.constexpr,
          FAST: tl.constexpr, SAMPLES: tl.constexpr, BLOCK_K: tl.constexpr):
    """One step of the recursion (t < T_b; the columns of finished samples kept), and its alpha-table row."""
    LOG2E_: tl.constexpr = 1.4426950408889634
    LN2: tl.constexpr = 0.6931471805599453
    prev = _shift(al, rot, SAMPLES, BLOCK_K)
    nab = _lse2(ab, prev, FAST) + eb.to(tl.float32) * LOG2E_
    nal = _lse3(al, ab, tl.where(skip, prev, float("-inf")), FAST) + el.to(tl.float32) * LOG2E_
    live = t < Tb
    ab = tl.where(live, nab, ab)
    al = tl.where(live, nal, al)
    if WRITE_ALPHA:
        pa = PA + t.to(tl.int64) * W
        wt = tl.where(t < T_alloc, wl, 0)               # wl: the row's width, 0 for a sample past B
        tl.store(pa + kk2, tl.where(live, ab * LN2, float("-inf")), mask=kk2 < wt)
        tl.store(pa + kk2 + 1, tl.where(live, al * LN2, float("-inf")), mask=kk2 + 1 < wt)
    return ab, al


@triton.jit
def _slot(ab, al, el, eb, t0, J: tl.constexpr, pl, pb, k, Sb, Tb, rot, skip, stride_lt, PA, W, wl, T_alloc, kk2,
          PF: tl.constexpr, WRITE_ALPHA: tl.constexpr, FAST: tl.constexpr, SAMPLES: tl.constexpr,
          BLOCK_K: tl.constexpr):
    """Step t0 + J from slot J, then the slot refilled with step t0 + PF + J."""
    ab, al = _step(ab, al, el, eb, t0 + J, Tb, rot, skip, PA, W, wl, T_alloc, kk2, WRITE_ALPHA, FAST, SAMPLES,
                   BLOCK_K)
    el, eb = _emit(pl, pb, k, Sb, Tb, t0 + (PF + J), stride_lt)
    return ab, al, el, eb


@triton.jit
def _kernel(LP, TGT, TOFF, IL, TLEN, NLL, ALPHA, B, T_alloc, W, blank,
            stride_lt, stride_lb, stride_lc, stride_tb, stride_ts, stride_ab,
            CONCAT: tl.constexpr, ZERO_INF: tl.constexpr, WRITE_ALPHA: tl.constexpr, FAST: tl.constexpr,
            SAMPLES: tl.constexpr, BLOCK_K: tl.constexpr, PF: tl.constexpr):
    LN2: tl.constexpr = 0.6931471805599453
    N: tl.constexpr = SAMPLES * BLOCK_K
    pid = tl.program_id(0)
    s1 = tl.arange(0, SAMPLES)
    b1 = pid * SAMPLES + s1
    Tb1 = tl.load(IL + b1, mask=b1 < B, other=0).to(tl.int32)
    T_prog = tl.max(Tb1, axis=0)                       # the program's longest input
    # [SAMPLES, 1] per-sample values (broadcast along the states), [1, BLOCK_K] per-state indices
    b = b1[:, None]
    b_ok = b < B
    Tb = Tb1[:, None]
    Sb = tl.load(TLEN + b, mask=b_ok, other=0).to(tl.int32)
    k = tl.arange(0, BLOCK_K)[None, :]
    if CONCAT:
        toff = tl.load(TOFF + b, mask=b_ok, other=0)
    else:
        toff = b.to(tl.int64) * stride_tb
    lab_ok = k < Sb
    tptr = TGT + toff + k * stride_ts
    lab = tl.load(tptr, mask=lab_ok, other=0).to(tl.int32)
    labp = tl.load(tptr - stride_ts, mask=lab_ok & (k > 0), other=-1).to(tl.int32)
    skip = lab_ok & (k > 0) & (lab != labp)           # the repeated-label rule
    lp_b = LP + b.to(tl.int64) * stride_lb
    pl = lp_b + lab * stride_lc                        # [SAMPLES, BLOCK_K]
    pb = lp_b + blank * stride_lc                      # [SAMPLES, 1]
    i = (b - pid * SAMPLES) * BLOCK_K + k              # the flattened state index
    rot = tl.reshape(i - k + (k + (BLOCK_K - 1)) % BLOCK_K, [N])   # k - 1; k = 0 -> the -inf label state K - 1
    kk2 = 2 * k
    pa = ALPHA + b.to(tl.int64) * stride_ab           # the sample's table (WRITE_ALPHA), row stride W
    wl = tl.where(b_ok, W, 0)

    tz = pid * 0
    ab = tl.where(k == 0, 0.0, float("-inf")) + tl.zeros((SAMPLES, BLOCK_K), tl.float32)  # before t = 0
    al = tl.full((SAMPLES, BLOCK_K), float("-inf"), tl.float32)

    # the slots: slot j holds step t0 + j (one register a state each; unused slots are dead code)
    e0l, e0b = _emit(pl, pb, k, Sb, Tb, tz, stride_lt)
    e1l, e1b = e0l, e0b
    e2l, e2b = e0l, e0b
    e3l, e3b = e0l, e0b
    e4l, e4b = e0l, e0b
    e5l, e5b = e0l, e0b
    e6l, e6b = e0l, e0b
    e7l, e7b = e0l, e0b
    if PF > 1:
        e1l, e1b = _emit(pl, pb, k, Sb, Tb, tz + 1, stride_lt)
    if PF > 2:
        e2l, e2b = _emit(pl, pb, k, Sb, Tb, tz + 2, stride_lt)
        e3l, e3b = _emit(pl, pb, k, Sb, Tb, tz + 3, stride_lt)
    if PF > 4:
        e4l, e4b = _emit(pl, pb, k, Sb, Tb, tz + 4, stride_lt)
        e5l, e5b = _emit(pl, pb, k, Sb, Tb, tz + 5, stride_lt)
        e6l, e6b = _emit(pl, pb, k, Sb, Tb, tz + 6, stride_lt)
        e7l, e7b = _emit(pl, pb, k, Sb, Tb, tz + 7, stride_lt)
    for t0 in range(0, T_prog, PF):
        tt = tz + t0                                   # a tensor also in the interpreter (its loop index is an int)
        ab, al, e0l, e0b = _slot(ab, al, e0l, e0b, tt, 0, pl, pb, k, Sb, Tb, rot, skip, stride_lt, pa, W, wl,
                                 T_alloc, kk2, PF, WRITE_ALPHA, FAST, SAMPLES, BLOCK_K)
        if PF > 1:
            ab, al, e1l, e1b = _slot(ab, al, e1l, e1b, tt, 1, pl, pb, k, Sb, Tb, rot, skip, stride_lt, pa, W, wl,
                                     T_alloc, kk2, PF, WRITE_ALPHA, FAST, SAMPLES, BLOCK_K)
        if PF > 2:
            ab, al, e2l, e2b = _slot(ab, al, e2l, e2b, tt, 2, pl, pb, k, Sb, Tb, rot, skip, stride_lt, pa, W, wl,
                                     T_alloc, kk2, PF, WRITE_ALPHA, FAST, SAMPLES, BLOCK_K)
            ab, al, e3l, e3b = _slot(ab, al, e3l, e3b, tt, 3, pl, pb, k, Sb, Tb, rot, skip, stride_lt, pa, W, wl,
                                     T_alloc, kk2, PF, WRITE_ALPHA, FAST, SAMPLES, BLOCK_K)
        if PF > 4:
            ab, al, e4l, e4b = _slot(ab, al, e4l, e4b, tt, 4, pl, pb, k, Sb, Tb, rot, skip, stride_lt, pa, W, wl,
                                     T_alloc, kk2, PF, WRITE_ALPHA, FAST, SAMPLES, BLOCK_K)
            ab, al, e5l, e5b = _slot(ab, al, e5l, e5b, tt, 5, pl, pb, k, Sb, Tb, rot, skip, stride_lt, pa, W, wl,
                                     T_alloc, kk2, PF, WRITE_ALPHA, FAST, SAMPLES, BLOCK_K)
            ab, al, e6l, e6b = _slot(ab, al, e6l, e6b, tt, 6, pl, pb, k, Sb, Tb, rot, skip, stride_lt, pa, W, wl,
                                     T_alloc, kk2, PF, WRITE_ALPHA, FAST, SAMPLES, BLOCK_K)
            ab, al, e7l, e7b = _slot(ab, al, e7l, e7b, tt, 7, pl, pb, k, Sb, Tb, rot, skip, stride_lt, pa, W, wl,
                                     T_alloc, kk2, PF, WRITE_ALPHA, FAST, SAMPLES, BLOCK_K)

    # the loss at k = S_b: states 2 S_b (ab[S_b]) and 2 S_b - 1 (al[S_b - 1], the shifted vector at S_b)
    prev = _shift(al, rot, SAMPLES, BLOCK_K)
    nll = -_lse2(ab, prev, FAST) * LN2
    if ZERO_INF:
        nll = tl.where(nll == float("inf"), 0.0, nll)
    tl.store(NLL + b + k * 0, nll, mask=k == tl.where(b_ok, Sb, -1))
    if WRITE_ALPHA:
        # rows past the program's last step: -inf (every entry of the table defined)
        ninf = tl.full((SAMPLES, BLOCK_K), float("-inf"), tl.float32)
        for t in range(tl.cdiv(T_prog, PF) * PF, T_alloc):
            p = pa + (tz + t).to(tl.int64) * W
            tl.store(p + kk2, ninf, mask=kk2 < wl)
            tl.store(p + kk2 + 1, ninf, mask=kk2 + 1 < wl)


# ---------------------------------------------------------------- launcher
ROLE = "held-out-28"
DTYPES = ("fp32", "bf16", "fp16")
TUNABLES = ("TILE", "PF", "num_warps", "num_stages")
BASELINE = {"TILE": 64, "PF": 4, "num_warps": 4, "num_stages": 1}
# the study's sweep: 3 x 4 x 4 = 48 configs
SWEEP_AXES = {"TILE": [64, 128, 256], "PF": [1, 2, 4, 8], "num_warps": [1, 2, 4, 8], "num_stages": [1]}

# A latency-bound recursion: T_b serial steps a program, each a shift across the states, two lse's (6 MUFU
# a state pair) and the gathers of the step PF ahead; time ~ T x a step's latency (~0.1-0.3 us) or the
# emission gathers' DRAM sectors (one a label a step where C is wide), whichever is longer: ~50-250 us at the
# points. They differ in the dtype (fp32 / bf16 / fp16), the vocabulary (32 / 1025 / 6625: the gather's
# sectors), T (824 / 250 / 128), the states a sample (BLOCK_K 256 / 128 / 64), the batch (32 / 256 / 512),
# the layout (a transposed
# view / a transposed view / contiguous [T, B, C]), the targets (concatenated int64 / padded int64 / padded
# int32), the blank (0 / C - 1 / 0), zero_infinity (on / off / on) and the alpha table (the second only).
POINTS = [
    # wav2vec2 / HuBERT character CTC fine-tuning (HF Wav2Vec2ForCTC on LibriSpeech): 32 utterances of up to
    # 16.5 s at 50 frames a second (T 824), the 32-symbol character vocabulary (blank = pad = 0), transcripts
    # of up to 250 characters; log_softmax(..., dtype=float32).transpose(0, 1) -- a strided view of [B, T, C]
    # fp32 -- and the labels flattened by masked_select (concatenated int64), ctc_zero_infinity on (as the
    # fine-tuning recipes set it). BLOCK_K 256: one sample a program, 32 programs of 824 steps.
    {"B": 32, "T": 824, "C": 32, "S": 250, "dtype": "fp32", "layout": "btc", "targets": "concat",
     "target_dtype": "int64", "blank": 0, "zero_infinity": 1, "alpha": 0},
    # NeMo Citrinet / Conformer-CTC with a 1024-token SentencePiece vocabulary (C 1025, blank = C - 1, NeMo's
    # convention) and 8x subsampling (80 ms frames): 20 s utterances, T 250, up to 100 BPE tokens, a batch of
    # 256 in bf16 (a bf16-true run's decoder output, which torch's ctc_loss takes only as an fp32 copy), NeMo's
    # log_probs.transpose(1, 0) view, padded int64 targets; the alpha table written for aten's backward
    # (51 MB). BLOCK_K 128: 256 or 128 programs of 250 steps.
    {"B": 256, "T": 250, "C": 1025, "S": 100, "dtype": "bf16", "layout": "btc", "targets": "padded",
     "target_dtype": "int64", "blank": 1024, "zero_infinity": 0, "alpha": 1},
    # CRNN text-line recognition (PaddleOCR's 6623-character Chinese dictionary + space + blank: C 6625,
    # blank 0) under fp16 AMP: 512 line crops 32 x 512 px at 4x downsampling (T 128), up to 48 characters;
    # the sequence head emits [T, B, C] contiguous (868 MB, of which the kernel touches ~49 of a row's 415
    # sectors a step: ~90 MB); padded int32 targets, zero_infinity. BLOCK_K 64: 512, 256 or 128 programs of
    # 128 steps.
    {"B": 512, "T": 128, "C": 6625, "S": 48, "dtype": "fp16", "layout": "tbc", "targets": "padded",
     "target_dtype": "int32", "blank": 0, "zero_infinity": 1, "alpha": 0},
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


def _block_k(S: int) -> int:
    """BLOCK_K: the longest target + 1 (the blank states 0 .. S), padded to a power of two."""
    bk = triton.next_power_of_2(S + 1)
    if bk > MAX_BLOCK_K:
        raise ValueError(f"a target of {S} labels needs BLOCK_K = {bk} states, past the kernel's {MAX_BLOCK_K} "
                         f"(targets up to {MAX_BLOCK_K - 1} labels)")
    return bk


def _samples(cfg, bk: int) -> int:
    """Samples a program: TILE states, at most 2 a thread when that takes several samples."""
    return max(1, min(cfg["TILE"], 64 * cfg["num_warps"]) // bk)


def _check_cfg(cfg, bk: int | None = None) -> None:
    t = cfg["TILE"]
    if not _is_int(t) or t < 1 or t & (t - 1):
        raise ValueError(f"TILE={t!r} must be a power of two")
    if cfg["PF"] not in (1, 2, 4, 8) or not _is_int(cfg["PF"]):
        raise ValueError(f"PF={cfg['PF']!r} must be 1, 2, 4 or 8")
    w = cfg["num_warps"]
    if w not in (1, 2, 4, 8, 16) or not _is_int(w):
        raise ValueError(f"num_warps={w!r} must be 1, 2, 4, 8 or 16")
    st = cfg.get("num_stages", 1)
    if not _is_int(st) or st < 1:
        raise ValueError(f"num_stages={st!r} must be a positive int")
    if bk is not None:
        per = _samples(cfg, bk) * bk // (32 * w)
        if per > MAX_PER_THREAD:
            raise ValueError(f"BLOCK_K={bk} on num_warps={w} holds {per} states of each kind a thread, past "
                             f"{MAX_PER_THREAD}: raise num_warps")


def _lengths(B: int, T: int, S: int) -> tuple[list[int], list[int]]:
    """The point's lengths, a fixed function of (B, T, S): T_b from T down by up to T // 4, S_b from S down by
    up to S // 3, spread by two strides (sample 0 the longest of both)."""
    il = [T - (b * 37) % (T // 4 + 1) for b in range(B)]
    tl_ = [S - (b * 13) % (S // 3 + 1) for b in range(B)]
    return il, tl_


def _check_point(point) -> dict:
    """The point's fields, checked, defaults filled in."""
    for k in ("B", "T", "C"):
        v = point[k]
        if not _is_int(v) or v < 1:
            raise ValueError(f"{k}={v!r} must be a positive int")
    S = point["S"]
    if not _is_int(S) or S < 0:
        raise ValueError(f"S={S!r} must be a non-negative int")
    C = point["C"]
    if C < 2:
        raise ValueError(f"C={C} must be >= 2 (the blank and a label)")
    dt = point.get("dtype", "fp32")
    _elem_bytes(dt)
    layout = point.get("layout", "tbc")
    if layout not in ("tbc", "btc"):
        raise ValueError(f"layout={layout!r} must be 'tbc' ([T, B, C] contiguous) or 'btc' (a [B, T, C] "
                         f"transposed)")
    targets = point.get("targets", "padded")
    if targets not in ("padded", "concat"):
        raise ValueError(f"targets={targets!r} must be 'padded' or 'concat'")
    tdt = point.get("target_dtype", "int64")
    if tdt not in ("int64", "int32"):
        raise ValueError(f"target_dtype={tdt!r} must be 'int64' or 'int32'")
    blank = point.get("blank", 0)
    if not _is_int(blank) or not 0 <= blank < C:
        raise ValueError(f"blank={blank!r} must be an int in [0, C={C})")
    flags = {}
    for k in ("zero_infinity", "alpha"):
        v = point.get(k, 0)
        if v not in (0, 1) or isinstance(v, float):
            raise ValueError(f"{k}={v!r} must be 0 or 1")
        flags[k] = int(v)
    _block_k(S)
    return dict(B=point["B"], T=point["T"], C=C, S=S, dtype=dt, layout=layout, targets=targets, target_dtype=tdt,
                blank=blank, **flags)


def _grid(B: int, bk: int, cfg) -> tuple[int]:
    _check_cfg(cfg, bk)
    return (triton.cdiv(B, _samples(cfg, bk)),)


def _kernel_args(lp, targets, toff, il, tlen, nll, alpha, bk: int, blank: int, zero_infinity: bool, fast: bool,
                 cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (the wrapper and example_args share it); without the
    table / the offsets the output nll stands in for them (never read or written)."""
    T, B, _ = lp.shape
    concat = targets.dim() == 1
    return dict(LP=lp, TGT=targets, TOFF=nll if toff is None else toff, IL=il, TLEN=tlen, NLL=nll,
                ALPHA=nll if alpha is None else alpha, B=B, T_alloc=T, W=1 if alpha is None else alpha.shape[2],
                blank=blank, stride_lt=lp.stride(0), stride_lb=lp.stride(1), stride_lc=lp.stride(2),
                stride_tb=0 if concat else targets.stride(0), stride_ts=targets.stride(-1),
                stride_ab=0 if alpha is None else alpha.stride(0),
                CONCAT=int(concat), ZERO_INF=int(bool(zero_infinity)), WRITE_ALPHA=int(alpha is not None),
                FAST=int(fast), SAMPLES=_samples(cfg, bk), BLOCK_K=bk, PF=cfg["PF"])


def _interpreting() -> bool:
    import os
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank: int = 0, zero_infinity: bool = False, *,
             return_alpha: bool = False, max_target_length: int | None = None, target_offsets=None,
             validate: bool = True, TILE: int = 64, PF: int = 4, num_warps: int = 4, num_stages: int = 1):
    """torch.nn.functional.ctc_loss(..., reduction='none')'s forward: log_probs [T, B, C] (fp32 / bf16 /
    fp16, any strides), targets padded [B, S_alloc] or concatenated 1-D (int32 / int64), input_lengths and
    target_lengths [B] int32 / int64 tensors on log_probs' device -> nll [B] fp32. With return_alpha, (nll,
    log_alpha [B, T, 2 S_alloc + 1] fp32) in aten._ctc_loss's layout (S_alloc: the padded width, or the
    longest target when concatenated), -inf outside each sample's valid region.

    BLOCK_K comes from the longest target: max_target_length if given, else read from target_lengths (one
    device-to-host copy, as torch's own ctc_loss makes). validate (the default) reads the lengths to check
    0 <= input_length <= T and the targets' extent; validate=False with max_target_length (and, for
    concatenated targets, target_offsets: the exclusive cumsum of target_lengths, int64) launches without a
    host sync. Target values must lie in [0, C) (not checked, as torch's CUDA path does not)."""
    import torch
    if log_probs.dim() != 3:
        raise ValueError(f"expected log_probs [T, B, C]; got {tuple(log_probs.shape)}")
    if log_probs.dtype not in (torch.float32, torch.bfloat16, torch.float16):
        raise ValueError(f"log_probs must be fp32 / bf16 / fp16; got {log_probs.dtype}")
    T, B, C = log_probs.shape
    dev = log_probs.device
    if targets.dtype not in (torch.int32, torch.int64) or targets.dim() not in (1, 2):
        raise ValueError(f"targets must be int32 / int64, padded [B, S] or concatenated 1-D; got {targets.dtype} "
                         f"{tuple(targets.shape)}")
    for name, v in (("input_lengths", input_lengths), ("target_lengths", target_lengths)):
        if not hasattr(v, "dtype") or v.dtype not in (torch.int32, torch.int64) or tuple(v.shape) != (B,):
            raise ValueError(f"{name} must be an int32 / int64 tensor of shape [{B}]; got "
                             f"{getattr(v, 'dtype', type(v).__name__)} {tuple(getattr(v, 'shape', ()))}")
    for name, v in (("targets", targets), ("input_lengths", input_lengths), ("target_lengths", target_lengths)):
        if v.device != dev:
            raise ValueError(f"{name} must be on {dev}; got {v.device}")
    if targets.dim() == 2 and targets.shape[0] != B:
        raise ValueError(f"padded targets must be [B={B}, S]; got {tuple(targets.shape)}")
    if not _is_int(blank) or not 0 <= blank < C:
        raise ValueError(f"blank={blank!r} must be an int in [0, C={C})")
    cfg = {"TILE": TILE, "PF": PF, "num_warps": num_warps, "num_stages": num_stages}
    _check_cfg(cfg)
    concat = targets.dim() == 1
    if max_target_length is not None and (not _is_int(max_target_length) or max_target_length < 0):
        raise ValueError(f"max_target_length={max_target_length!r} must be a non-negative int")
    if max_target_length is None or validate:
        tls = target_lengths.tolist()
        s_max = max(tls, default=0)
        if max_target_length is not None:
            if max_target_length < s_max:
                raise ValueError(f"max_target_length={max_target_length} is below the longest target ({s_max})")
            s_max = max_target_length
    else:
        s_max = max_target_length
    if validate:
        ils = input_lengths.tolist()
        if any(v < 0 or v > T for v in ils):
            raise ValueError(f"input_lengths must lie in [0, T={T}]; got {min(ils)} .. {max(ils)}")
        if any(v < 0 for v in tls):
            raise ValueError(f"target_lengths must be >= 0; got {min(tls)}")
        extent = sum(tls) if concat else max(tls, default=0)
        room = targets.numel() if concat else targets.shape[1]
        if extent > room:
            raise ValueError(f"target_lengths need {extent} {'targets' if concat else 'columns'}; targets has "
                             f"{room}")
    s_alloc = s_max if concat else targets.shape[1]
    if s_max > s_alloc:
        raise ValueError(f"max_target_length={s_max} exceeds the padded targets' width {s_alloc}")
    if (C - 1) * log_probs.stride(2) >= 2**31:
        raise ValueError(f"a row of C={C} with stride {log_probs.stride(2)} exceeds the kernel's int32 in-row "
                         f"offsets")
    if max(s_alloc - 1, 0) * targets.stride(-1) >= 2**31:
        raise ValueError(f"a target row with stride {targets.stride(-1)} exceeds the kernel's int32 offsets")
    # with the table, BLOCK_K covers all S_alloc + 1 blank states: every column of it is written
    bk = _block_k(s_alloc if return_alpha else s_max)
    _check_cfg(cfg, bk)
    nll = torch.empty((B,), dtype=torch.float32, device=dev)
    alpha = torch.empty((B, T, 2 * s_alloc + 1), dtype=torch.float32, device=dev) if return_alpha else None
    if B == 0:                                         # nothing launched
        return (nll, alpha) if return_alpha else nll
    toff = None
    if concat:
        toff = target_offsets
        if toff is None:
            toff = torch.cumsum(target_lengths, 0, dtype=torch.int64) - target_lengths.to(torch.int64)
    _kernel[_grid(B, bk, cfg)](**_kernel_args(log_probs, targets, toff, input_lengths, target_lengths, nll, alpha,
                                              bk, blank, zero_infinity, not _interpreting(), cfg),
                               num_warps=num_warps, num_stages=num_stages)
    return (nll, alpha) if return_alpha else nll


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """log_probs: log_softmax of N(0, 2^2) logits with the blank's raised by 2 (a CTC model's blank-heavy
    posteriors), in the point's dtype, laid out as the point says ('btc': a [B, T, C] buffer transposed);
    targets: labels uniform over the C - 1 non-blank classes (for C 32 the draws hit the repeated-label rule
    often, as a character model's letters do), padded with the blank (never read past S_b) or concatenated;
    the lengths from _lengths, int64. Drawn on the CPU from a seeded torch.Generator and moved. Also the
    launch's host-side facts (max_target_length; the concatenated targets' offsets) so launch does not sync."""
    import torch
    q = _check_point(point)
    B, T, C, S = q["B"], q["T"], q["C"], q["S"]
    gen = torch.Generator(device="cpu").manual_seed(seed)
    logits = 2.0 * torch.randn((B, T, C), generator=gen)
    logits[:, :, q["blank"]] += 2.0
    lp = torch.log_softmax(logits, dim=-1).to(_torch_dtype(q["dtype"]))
    if q["layout"] == "btc":
        lp = lp.to(device).transpose(0, 1)
    else:
        lp = lp.transpose(0, 1).contiguous().to(device)
    il, tl_ = _lengths(B, T, S)
    lab = torch.randint(0, C - 1, (B, max(S, 1)), generator=gen)
    lab = lab + (lab >= q["blank"]).long()                     # skip the blank
    tdt = torch.int64 if q["target_dtype"] == "int64" else torch.int32
    if q["targets"] == "concat":
        targets = torch.cat([lab[b, :tl_[b]] for b in range(B)]).to(tdt)
    else:
        pad = torch.arange(max(S, 1))[None, :] >= torch.tensor(tl_)[:, None]
        targets = lab.masked_fill(pad, q["blank"])[:, :S].to(tdt)
    il_t = torch.tensor(il, dtype=torch.int64)
    tl_t = torch.tensor(tl_, dtype=torch.int64)
    offs = (torch.cumsum(tl_t, 0) - tl_t) if q["targets"] == "concat" else None
    return {"log_probs": lp, "targets": targets.to(device), "input_lengths": il_t.to(device),
            "target_lengths": tl_t.to(device), "blank": q["blank"], "zero_infinity": bool(q["zero_infinity"]),
            "alpha": bool(q["alpha"]), "max_target_length": max(tl_, default=0),
            "target_offsets": None if offs is None else offs.to(device)}


def launch(inputs, cfg):
    """The nll [B] fp32 (the alpha table, when the inputs ask for it, computed and dropped); no host sync."""
    out = ctc_loss(inputs["log_probs"], inputs["targets"], inputs["input_lengths"], inputs["target_lengths"],
                   inputs["blank"], inputs["zero_infinity"], return_alpha=inputs.get("alpha", False),
                   max_target_length=inputs.get("max_target_length"), target_offsets=inputs.get("target_offsets"),
                   validate=inputs.get("max_target_length") is None, TILE=cfg["TILE"], PF=cfg["PF"],
                   num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
    return out[0] if isinstance(out, tuple) else out


def ctc_reference(log_probs, targets, input_lengths, target_lengths, blank: int = 0, zero_infinity: bool = False):
    """(nll, log_alpha) from aten._ctc_loss in float64 on the inputs' device (log_alpha valid at rows t < T_b,
    states s < 2 S_b + 1 only); zero_infinity applied to the nll."""
    import torch
    nll, la = torch.ops.aten._ctc_loss(log_probs.double(), targets.long(), input_lengths.long(),
                                       target_lengths.long(), blank, False)
    if zero_infinity:
        nll = torch.where(nll == float("inf"), torch.zeros_like(nll), nll)
    return nll, la


def reference(inputs):
    """fp32 nll: torch's ctc_loss in float64 from the inputs as stored."""
    import torch
    nll = torch.nn.functional.ctc_loss(inputs["log_probs"].double(), inputs["targets"].long(),
                                       inputs["input_lengths"], inputs["target_lengths"], blank=inputs["blank"],
                                       reduction="none", zero_infinity=inputs["zero_infinity"])
    return nll.float()


def torch_baseline(inputs):
    """What eager torch runs: F.ctc_loss(reduction='none') on log_probs upcast to fp32 (its CUDA kernel takes
    fp32 / fp64 only: autocast makes this cast), the same targets and lengths."""
    import torch
    return torch.nn.functional.ctc_loss(inputs["log_probs"].float(), inputs["targets"], inputs["input_lengths"],
                                        inputs["target_lengths"], blank=inputs["blank"], reduction="none",
                                        zero_infinity=inputs["zero_infinity"])


def bytes_moved(point) -> int:
    """The emissions the recursion reads, in DRAM sectors: a step of sample b touches the 32-byte sectors of
    its S_b + 1 columns (its labels' and the blank's) in one row of C elements -- at most S_b + 1 sectors and
    at most the row's cdiv(C e, 32) (C 32 fp32: 4; C 6625 fp16: 415) -- for T_b steps; the targets (S_b
    labels and the S_b neighbours the repeat rule compares: 2 S_b elements) and the lengths (and offsets when
    concatenated, 8 B each) read; the nll written (4 B a sample); with alpha the table, B T (2 S + 1) fp32,
    written."""
    q = _check_point(point)
    B, T, S, e = q["B"], q["T"], q["S"], _elem_bytes(q["dtype"])
    il, tl_ = _lengths(B, T, S)
    te = 8 if q["target_dtype"] == "int64" else 4
    row = -(-q["C"] * e // 32)
    n = sum(t * 32 * min(s + 1, row) for t, s in zip(il, tl_))
    n += sum(2 * s for s in tl_) * te + B * (16 + (8 if q["targets"] == "concat" else 0)) + 4 * B
    if q["alpha"]:
        n += B * T * (2 * S + 1) * 4
    return n


def flops(point) -> int:
    """Per valid state and step: lse2 (max, min, sub, exp2, add, log2, add, select: 8) for a blank state, lse3
    (2 max, compare, select, 3 sub, 3 exp2, 2 add, log2, add: 14) for a label state, the emission's scale and
    add (2 each) and the keep-select (1 each): 11 and 17, an exp2 / log2 counted as one; summed over the
    S_b + 1 blank and S_b label states of T_b steps."""
    q = _check_point(point)
    il, tl_ = _lengths(q["B"], q["T"], q["S"])
    return sum(t * (11 * (s + 1) + 17 * s) for t, s in zip(il, tl_))


def grid(cfg, point) -> tuple[int]:
    """(cdiv(B, SAMPLES),): SAMPLES = max(1, min(TILE, 64 num_warps) // BLOCK_K) whole samples a program."""
    q = _check_point(point)
    return _grid(q["B"], _block_k(q["S"]), cfg)


def loop_iterations(cfg, point) -> int:
    """The time loop's trips in the longest program: cdiv(T, PF) (PF steps a trip, unrolled; sample 0, in
    the first program, has T_b = T). The alpha table's tail loop (rows from cdiv(T_prog, PF) PF to T, stores
    only) adds none there."""
    q = _check_point(point)
    _check_cfg(cfg, _block_k(q["S"]))
    return triton.cdiv(q["T"], cfg["PF"])


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point` (the GPU's FAST log2), on the meta device (no
    memory): log_probs as make_inputs lays it out, the targets padded [B, S] or concatenated (sum S_b) with
    their offsets, the lengths int64, the nll, the table [B, T, 2 S + 1] fp32 when asked for."""
    import torch
    q = _check_point(point)
    B, T, C, S = q["B"], q["T"], q["C"], q["S"]
    bk = _block_k(S)
    _check_cfg(cfg, bk)
    tdt = _torch_dtype(q["dtype"])
    if q["layout"] == "btc":
        lp = torch.empty((B, T, C), dtype=tdt, device="meta").transpose(0, 1)
    else:
        lp = torch.empty((T, B, C), dtype=tdt, device="meta")
    idt = torch.int64 if q["target_dtype"] == "int64" else torch.int32
    _, tl_ = _lengths(B, T, S)
    if q["targets"] == "concat":
        targets = torch.empty((sum(tl_),), dtype=idt, device="meta")
        toff = torch.empty((B,), dtype=torch.int64, device="meta")
    else:
        targets = torch.empty((B, S), dtype=idt, device="meta")
        toff = None
    lens = torch.empty((B,), dtype=torch.int64, device="meta")
    nll = torch.empty((B,), dtype=torch.float32, device="meta")
    alpha = torch.empty((B, T, 2 * S + 1), dtype=torch.float32, device="meta") if q["alpha"] else None
    return _kernel_args(lp, targets, toff, lens, lens, nll, alpha, bk, q["blank"], q["zero_infinity"], True, cfg)
