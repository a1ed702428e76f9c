"""Batched Viterbi decoding of a linear-chain CRF / HMM -- the inference of the CRF taggers (pytorch-crf's
CRF.decode, AllenNLP's ConditionalRandomField.viterbi_tags, torchcrf / BiLSTM-CRF and BERT-CRF NER / POS models),
of speech forced alignment (Kaldi / Montreal Forced Aligner-style HMM decoding of an utterance's state graph) and
of genomics profile / gene-finding HMMs -- a bare @triton.jit kernel + its launcher. Per sequence b of length L_b:

    score_0[j] = start[j] + emit[b, 0, j]
    score_t[j] = max_i (score_(t-1)[i] + trans[i, j]) + emit[b, t, j],   bp[b, t, j] = argmax_i (...)   (1 <= t < L_b)
    best[b]    = max_j (score_(L_b - 1)[j] + end[j]),  tag[L_b - 1] = its argmax,  tag[t - 1] = bp[b, t, tag[t]]

emissions [B, T, S] fp16 / bf16 / fp32 (a tagger's logits or an acoustic model's log-likelihoods; unit S stride,
any B / T strides: a time-major [T, B, S] encoder output is read through its transpose), transitions [S, S] fp32
(row i: from state i), start / end [S] fp32 (pytorch-crf's start_transitions / end_transitions), lengths [B] int32
(ragged: trusted 1 <= L_b <= T -- checking them would synchronise with the device -- clamped into range). Outputs
(fresh tensors): the best path's score [B] fp32 (what `launch` returns and the correctness gate compares), the
decoded tags [B, T] int32 (the Viterbi path, -1 past each length: pytorch-crf's lists, padded) and the
backpointers [B, T, S] **int16** (S <= 256; rows t = 0 and t >= L_b are not written). fp32 max-plus arithmetic on
the emissions as stored (widened exactly): the score differs from a float64 decode only by fp32 rounding of the
running sums, and ties go to the lowest source state (torch.max's choice on distinct values; exact ties have
probability zero with continuous scores).

Work split: a 1-D grid of cdiv(B, BLOCK_B) programs, program p owning sequences p BLOCK_B .. (p + 1) BLOCK_B - 1,
BLOCK_B = max(1, BLOCK // S_PAD) (S_PAD = S padded to a power of two, at least 16; BLOCK, the score elements a
program holds, is the tunable, so one sweep gives 4-16 sentences a program at the NER point and 1-4 sequences at
the 64-state ones). The program keeps the [BLOCK_B, S_PAD] fp32 score vectors in registers and walks t from 1 to
its longest sequence's length (tl.range with the launch's num_stages: the emission rows of the next steps do not
depend on the scores, so the pipeliner issues them -- and, with chunks, the transition rows -- ahead through
shared memory). A step reduces over the source states in S_PAD / BLOCK_I chunks: for chunk c it extracts the
chunk's scores from the register-resident vector (reshape to [BLOCK_B, S_PAD / BLOCK_I, BLOCK_I], masked max over
the chunk axis: no round trip through memory), loads the chunk's [BLOCK_I, S_PAD] rows of the transition table
(L1 / shared-memory resident: 16 KiB at S 64, 64 KiB at S 128), forms the [BLOCK_B, BLOCK_I, S_PAD] broadcast sum
and takes its max and argmax over i, merging into the running best / argmax (strictly greater: the earliest chunk
keeps a tie).
With one chunk (BLOCK_I >= S_PAD) the table is loaded once before the loop and held in registers. Then the
emissions are added, the backpointer row stored as int16 and a sequence past its length keeps its score (masked).
After the loop the end scores give best and the last tag; a CTA barrier (every thread's backpointer stores done)
and the backtrace walks t from the longest length down to 0: each step loads the whole backpointer row
[BLOCK_B, S] of every sequence (.cg: read at L2, which holds what the same program just wrote; independent of the
tag, so the rows pipeline too), selects the current tag's entry in registers and stores the tag; a short loop
then writes -1 tags from the program's longest length to T (PAD_T = 64 a step). Padded states carry -inf (never a
max); rows past B are masked. No atomics; one launch (no secondary kernels). Per-program work is ragged:
cta_iterations gives each program 2 tmax - 1 steps (tmax - 1 forward, tmax backtrace).

How this differs from the closest examples/ kernels: examples/ctc_loss_fwd.py also walks t serially over ragged
samples with the state vectors in registers, but its recurrence is a log-sum-exp over at most three neighbouring
states (a banded, shift-by-one dependency over the extended label sequence) and it writes no per-step history;
here every state depends on every state (a dense S x S max-plus product a step, the tropical-semiring GEMV), the
argmax is kept as a backpointer table and a second, backward walk decodes the path. examples/fused_recurrent_gla.py
carries a [K, V] fp32 state through t with a rank-1 update and a contraction against q a step (sum-product, one
sequence-head a program, its state tiled across programs); here the state is a vector per sequence, several
sequences a program, the update a max-plus matrix-vector product whose (i, j) operand (the transitions) is shared
by every sequence and step, and the source states are tiled inside the program (chunks) instead of across
programs, since the max over i must be complete before the next step. examples/selective_scan.py parallelises a
first-order linear recurrence along t by an associative scan over chunks; Viterbi's max-plus recurrence is
associative too, but only as S x S matrix products (S^3 a combine), so this kernel is the serial walk that
pytorch-crf and HMM decoders run.

Tunables: BLOCK (score elements a program: 64 / 128 / 256 -- BLOCK_B = 4 / 8 / 16 sentences at S_PAD 16, 1 / 2 / 4
sequences at 64: more sequences share a program's issue slots and transition loads, fewer programs), BLOCK_I (source
states a chunk: 8 / 16 / 32, clamped to S_PAD -- the [BLOCK_B, BLOCK_I, S_PAD] cube a chunk step holds, against the
chunk extraction and transition reloads of small chunks: 8 chunks a step at S 64 and BLOCK_I 8; at S_PAD 16 BLOCK_I
16 and 32 are the same one-chunk program, the table in registers), num_warps (4), num_stages (1-5: the t loops'
emission, transition and backpointer rows in flight; 1 = no pipelining). The cube sets the registers
(at most 64 fp32 values a thread over the sweep); the pipelined transition chunks set the shared memory
(num_stages - 1 copies of the 16 KiB table at S 64). On sm_90, every config of the sweep at every point
(the 45 x 3 compiled in full under both Tritons): no spills; registers 48-204 under triton 3.6.0 and 47-165 under
3.9 (the most: BLOCK 256 x BLOCK_I 32 at the POS point, 4 sequences of 64 padded states; by point, 3.6.0 / 3.9: NER
48-96 / 47-96, POS 145-204 / 113-165, DNA 72-159 / 70-152); shared memory 1-72 KiB under both (the most: BLOCK_I 8
at 5 stages at the 64-state points, 68-72 KiB; at the NER point the one-chunk configs hold the table in registers:
at most 12 KiB under 3.6.0, 6 KiB under 3.9).
Left out: 8 warps (under triton 3.6.0 several configs spill 2 registers at 80 on 8 warps: at the 64-state point
BLOCK 128 with BLOCK_I 8 at 1 stage and 16 at 3-4 stages, BLOCK 256 with BLOCK_I 8 / 16 at 1-2 stages; at the NER
point BLOCK 512 with BLOCK_I 8; none under 3.9), 2 warps (under 3.6.0: BLOCK 128 x BLOCK_I 32 spills 6-8 at 255
registers at the POS point, BLOCK_I 4 spills 4 there, 2 at 80 registers at the NER point, BLOCK_I 8 at 3 stages 2
at the 64-state point), BLOCK 512 (4 warps under 3.6.0: 4 spills at the POS point, BLOCK_B 8, with BLOCK_I 8 at 1
stage, 255 registers with BLOCK_I 16), BLOCK_I 4 (16 chunks a step at S 64; on 4 warps under 3.6.0: 2-4 spills at
168 registers for BLOCK 256 at the POS point at 2-4 stages, 2 at 96 for BLOCK 64 at the 64-state point), BLOCK
1024 (a 16384-element cube on 4 warps: 6 spills under 3.9 at S 9).
A 128-state point (a forced-alignment HMM) was the first choice of the third point: under triton 3.6.0 four of the
first sweep's configs spilled there (2-4 registers at 128 on 8 warps and 168 on 4; none under 3.9), so the third
point has 64 states (the kernel takes S up to 256; the tests run 128). Triton 3.6.0's spills here come in small
counts at register totals well under the cap, config by config rather than along an axis.
Problem parameters (a workload point): B (sequences), T (padded length), S (states, at most 256), min_len (the
lengths are drawn U[min_len, T], the first sequence T long), dtype (the emissions': "fp16" / "bf16" / "fp32").
"""

from __future__ import annotations

import functools

import triton
import triton.language as tl


@triton.jit
def _kernel(EMIT, TRANS, START, END, LENS, BP, TAGS, SCORE, B, T, S,
            stride_eb, stride_et, stride_bb, stride_bt, stride_tb,
            S_PAD: tl.constexpr, BLOCK_B: tl.constexpr, BLOCK_I: tl.constexpr, NUM_STAGES: tl.constexpr,
            PAD_T: tl.constexpr):
    NC: tl.constexpr = S_PAD // BLOCK_I                      # source-state chunks of a step
    pid = tl.program_id(0)
    rb = pid * BLOCK_B + tl.arange(0, BLOCK_B)
    b_ok = rb < B
    rb64 = rb.to(tl.int64)
    jj = tl.arange(0, S_PAD)
    j_ok = jj < S
    ii = tl.arange(0, BLOCK_I)
    ln = tl.load(LENS + rb, mask=b_ok, other=0)
    ln = tl.where(b_ok, tl.minimum(tl.maximum(ln, 1), T), 0)    # trusted 1..T; clamped to stay in bounds
    tmax = tl.max(ln, axis=0)                                  # the program's longest sequence

    # t = 0: start transitions + the first emissions; padded states -inf (never the max)
    e_ptr = EMIT + rb64[:, None] * stride_eb + jj[None, :]
    ok0 = b_ok[:, None] & j_ok[None, :]
    e0 = tl.load(e_ptr, mask=ok0, other=0.0).to(tl.float32)
    st = tl.load(START + jj, mask=j_ok, other=0.0)
    score = tl.where(j_ok[None, :], st[None, :] + e0, float("-inf"))
    if NC == 1:                                                # the whole [S_PAD, S_PAD] table in registers
        tr = tl.load(TRANS + ii[:, None] * S + jj[None, :], mask=(ii[:, None] < S) & j_ok[None, :],
                     other=float("-inf"))
    bp_ptr = BP + rb64[:, None] * stride_bb + jj[None, :]

    # the forward max-plus recurrence, t = 1 .. tmax - 1 (a sequence past its length keeps its score)
    for t in tl.range(1, tmax, num_stages=NUM_STAGES):
        live = t < ln
        ok = live[:, None] & j_ok[None, :]
        e = tl.load(e_ptr + t * stride_et, mask=ok, other=0.0).to(tl.float32)
        if NC == 1:
            best, arg = tl.max(score[:, :, None] + tr[None, :, :], axis=1, return_indices=True)
        else:
            s3 = tl.reshape(score, [BLOCK_B, NC, BLOCK_I])
            cc = tl.arange(0, NC)
            best = tl.full([BLOCK_B, S_PAD], float("-inf"), tl.float32)
            arg = tl.zeros([BLOCK_B, S_PAD], tl.int32)
            for c in tl.static_range(NC):
                sc = tl.max(tl.where(cc[None, :, None] == c, s3, float("-inf")), axis=1)   # [BLOCK_B, BLOCK_I]
                rows = c * BLOCK_I + ii
                trc = tl.load(TRANS + rows[:, None] * S + jj[None, :], mask=(rows[:, None] < S) & j_ok[None, :],
                              other=float("-inf"))
                m, a = tl.max(sc[:, :, None] + trc[None, :, :], axis=1, return_indices=True)
                upd = m > best                                 # strict: the earliest chunk keeps a tie
                best = tl.where(upd, m, best)
                arg = tl.where(upd, a + c * BLOCK_I, arg)
        tl.store(bp_ptr + t * stride_bt, arg.to(tl.int16), mask=ok)
        score = tl.where(live[:, None], best + e, score)

    fin = score + tl.load(END + jj, mask=j_ok, other=0.0)[None, :]
    best_s, last = tl.max(fin, axis=1, return_indices=True)
    tl.store(SCORE + rb, best_s, mask=b_ok)

    # the backtrace: every thread's backpointer stores done and visible to the CTA; rows are read at L2 (.cg)
    tl.debug_barrier()
    tag = last.to(tl.int32)
    t_ptr = TAGS + rb64 * stride_tb
    for s in tl.range(0, tmax, num_stages=NUM_STAGES):
        t = tmax - 1 - s
        live = t < ln
        tl.store(t_ptr + t, tl.where(live, tag, -1), mask=b_ok)
        step = live & (tl.zeros_like(ln) + t > 0)
        row = tl.load(bp_ptr + t * stride_bt, mask=step[:, None] & j_ok[None, :], other=0, cache_modifier=".cg")
        prev = tl.sum(tl.where(jj[None, :] == tag[:, None], row.to(tl.int32), 0), axis=1)
        tag = tl.where(step, prev, tag)
    # the tags past the program's longest sequence: -1
    pt = tl.arange(0, PAD_T)
    for t0 in range(tmax, T, PAD_T):
        tt = t0 + pt
        tl.store(t_ptr[:, None] + tt[None, :], tl.full([BLOCK_B, PAD_T], -1, tl.int32),
                 mask=b_ok[:, None] & (tt[None, :] < T))


# ---------------------------------------------------------------- launcher
ROLE = "held-out-36"
DTYPES = ("fp16", "bf16", "fp32")
TUNABLES = ("BLOCK", "BLOCK_I", "num_warps", "num_stages")
BASELINE = {"BLOCK": 128, "BLOCK_I": 16, "num_warps": 4, "num_stages": 2}
# 3 x 3 x 1 x 5 = 45 configs: 64 / 128 / 256 score elements a program (BLOCK_B = BLOCK // S_PAD sequences), 8 / 16 /
# 32 source states a chunk, 4 warps, 1-5 stages of the t loops. Left out (module doc): 2 and 8 warps, BLOCK 512 and
# BLOCK_I 4 (each spills somewhere under triton 3.6.0)
SWEEP_AXES = {"BLOCK": [64, 128, 256], "BLOCK_I": [8, 16, 32], "num_warps": [4], "num_stages": [1, 2, 3, 4, 5]}
MAX_S = 256
MAX_ELEMS = 2**31 - 1
PAD_T = 64                    # tags a row a step of the -1 fill past a program's longest sequence

POINTS = [
    # CoNLL-2003 NER with BIO tags (9 states, padded to 16), a BiLSTM-CRF / BERT-CRF tagger's decode over a
    # corpus-sized batch: 32768 sentences padded to 128 tokens, lengths U[4, 128], fp16 emissions
    {"B": 32768, "T": 128, "S": 9, "min_len": 4, "dtype": "fp16"},
    # Penn Treebank POS tagging (45 tags, padded to 64), 8192 sentences padded to 96 tokens, lengths U[8, 96],
    # bf16 emissions (a bf16 encoder's logits)
    {"B": 8192, "T": 96, "S": 45, "min_len": 8, "dtype": "bf16"},
    # a DNA sequence HMM with 64 states (the 4^3 trinucleotide contexts of a k-mer / nanopore-signal or
    # codon-position gene-finding model) decoding long reads: 1024 reads of 512-1024 positions, fp32 emission
    # log-likelihoods (S = S_PAD = 64: no padded states)
    {"B": 1024, "T": 1024, "S": 64, "min_len": 512, "dtype": "fp32"},
]

_ESIZE = {"fp32": 4, "fp16": 2, "bf16": 2}


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _pow2(v, lo: int, hi: int) -> bool:
    return _is_int(v) and lo <= v <= hi and not v & (v - 1)


def _s_pad(S: int) -> int:
    """The states padded to a power of two, at least 16."""
    return max(16, triton.next_power_of_2(S))


def _check_cfg(cfg) -> None:
    b = cfg["BLOCK"]
    if not _pow2(b, 16, 4096):
        raise ValueError(f"BLOCK={b!r} must be a power of two from 16 to 4096 (score elements a program)")
    bi = cfg["BLOCK_I"]
    if not _pow2(bi, 1, 256):
        raise ValueError(f"BLOCK_I={bi!r} must be a power of two from 1 to 256 (source states a chunk)")
    w = cfg["num_warps"]
    if not _is_int(w) or w not in (1, 2, 4, 8, 16):
        raise ValueError(f"num_warps={w!r} must be a power of two from 1 to 16")
    ns = cfg.get("num_stages", 2)
    if not _is_int(ns) or ns < 1 or ns > 8:
        raise ValueError(f"num_stages={ns!r} must be an int from 1 to 8")


def _block_b(cfg, S: int) -> int:
    return max(1, cfg["BLOCK"] // _s_pad(S))


def _block_i(cfg, S: int) -> int:
    return min(cfg["BLOCK_I"], _s_pad(S))


def _check_point(point) -> dict:
    """The point's fields, checked (defaults: min_len 1, dtype fp16)."""
    P = {"dtype": "fp16", "min_len": 1, **point}
    for name in ("B", "T", "S"):
        v = P.get(name)
        if not _is_int(v) or v < 1:
            raise ValueError(f"{name}={v!r} must be a positive int")
    if P["S"] > MAX_S:
        raise ValueError(f"S={P['S']} states: at most {MAX_S}")
    if P["dtype"] not in DTYPES:
        raise ValueError(f"dtype {P['dtype']!r} is not one of {DTYPES}")
    ml = P["min_len"]
    if not _is_int(ml) or not 1 <= ml <= P["T"]:
        raise ValueError(f"min_len={ml!r} must be an int from 1 to T={P['T']}")
    if P["B"] * P["T"] * P["S"] > MAX_ELEMS:
        raise ValueError(f"B x T x S = {P['B'] * P['T'] * P['S']} elements: at most {MAX_ELEMS}")
    return P


def _torch_dtype(name: str):
    import torch
    return {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[name]


# ---------------------------------------------------------------- the kernel's launch
def _grid(B: int, S: int, cfg) -> tuple:
    return (triton.cdiv(B, _block_b(cfg, S)),)


def _kernel_args(emissions, transitions, start, end, lengths, bp, tags, score, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    B, T, S = emissions.shape
    return dict(EMIT=emissions, TRANS=transitions, START=start, END=end, LENS=lengths, BP=bp, TAGS=tags,
                SCORE=score, B=B, T=T, S=S, stride_eb=emissions.stride(0), stride_et=emissions.stride(1),
                stride_bb=bp.stride(0), stride_bt=bp.stride(1), stride_tb=tags.stride(0), S_PAD=_s_pad(S),
                BLOCK_B=_block_b(cfg, S), BLOCK_I=_block_i(cfg, S), NUM_STAGES=cfg["num_stages"], PAD_T=PAD_T)


def crf_viterbi(emissions, transitions, start, end, lengths, *, BLOCK: int = 128, BLOCK_I: int = 16,
                num_warps: int = 4, num_stages: int = 2):
    """(score [B] fp32, tags [B, T] int32, backpointers [B, T, S] int16): Viterbi decoding (module doc).
    emissions [B, T, S] fp16 / bf16 / fp32 with a unit S stride (any B / T strides); transitions [S, S] fp32
    (from state i to j: row i), start / end [S] fp32, all contiguous; lengths [B] int32 contiguous (trusted:
    1 <= len <= T, not checked -- that would synchronise with the device; values outside are clamped). tags
    past a sequence's length are -1; backpointer rows t = 0 and t >= len are not written."""
    import torch
    cfg = {"BLOCK": BLOCK, "BLOCK_I": BLOCK_I, "num_warps": num_warps, "num_stages": num_stages}
    _check_cfg(cfg)
    if (not isinstance(emissions, torch.Tensor) or emissions.dim() != 3
            or emissions.dtype not in (torch.float16, torch.bfloat16, torch.float32)):
        raise ValueError(f"emissions must be a 3-d fp16 / bf16 / fp32 tensor [B, T, S]; got "
                         f"{getattr(emissions, 'shape', type(emissions).__name__)} "
                         f"{getattr(emissions, 'dtype', '')}")
    B, T, S = emissions.shape
    if S < 1 or S > MAX_S:
        raise ValueError(f"S={S} states: must be from 1 to {MAX_S}")
    if S > 1 and emissions.stride(2) != 1:
        raise ValueError(f"emissions must have a unit stride along S; got strides {emissions.stride()}")
    if min(emissions.stride()) < 0 or B * T * S > MAX_ELEMS or (
            (B - 1) * emissions.stride(0) + (T - 1) * emissions.stride(1) + S > MAX_ELEMS):
        raise ValueError(f"emissions {tuple(emissions.shape)} with strides {emissions.stride()}: span above "
                         f"{MAX_ELEMS} elements")
    dev = emissions.device
    for name, t, shape in (("transitions", transitions, (S, S)), ("start", start, (S,)), ("end", end, (S,))):
        if (not isinstance(t, torch.Tensor) or tuple(t.shape) != shape or t.dtype != torch.float32
                or not t.is_contiguous() or t.device != dev):
            raise ValueError(f"{name} must be a contiguous fp32 tensor {list(shape)} on {dev}; got "
                             f"{getattr(t, 'shape', type(t).__name__)} {getattr(t, 'dtype', '')}")
    if (not isinstance(lengths, torch.Tensor) or tuple(lengths.shape) != (B,) or lengths.dtype != torch.int32
            or not lengths.is_contiguous() or lengths.device != dev):
        raise ValueError(f"lengths must be a contiguous int32 tensor [{B}] on {dev}; got "
                         f"{getattr(lengths, 'shape', type(lengths).__name__)} {getattr(lengths, 'dtype', '')}")
    score = torch.empty((B,), dtype=torch.float32, device=dev)
    tags = torch.empty((B, T), dtype=torch.int32, device=dev)
    bp = torch.empty((B, T, S), dtype=torch.int16, device=dev)
    if B == 0 or T == 0:
        return score.fill_(float("-inf")) if T == 0 else score, tags, bp
    _kernel[_grid(B, S, cfg)](**_kernel_args(emissions, transitions, start, end, lengths, bp, tags, score, cfg),
                              num_warps=num_warps, num_stages=num_stages)
    return score, tags, bp


# ---------------------------------------------------------------- the launcher contract
@functools.lru_cache(maxsize=8)
def _cpu_lengths(B: int, T: int, min_len: int, seed: int):
    """[B] int32 (CPU): U[min_len, T], the first sequence T long (the batch padded to its longest)."""
    import torch
    g = torch.Generator().manual_seed(int(seed) + 4099)
    ln = torch.randint(min_len, T + 1, (B,), generator=g, dtype=torch.int64)
    ln[0] = T
    return ln.to(torch.int32)


def _point_lengths(point, seed: int = 0):
    P = _check_point(point)
    return _cpu_lengths(P["B"], P["T"], P["min_len"], int(seed))


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """emissions ~ 2 N(0, 1) (a tagger's logits) in the point's dtype, transitions ~ 0.5 N(0, 1) fp32 (a
    trained CRF's scores are O(1)), start / end ~ 0.5 N(0, 1) fp32, drawn on `device` from a seeded generator;
    lengths U[min_len, T] int32 (drawn on the CPU, the first sequence T long) moved to `device`."""
    import torch
    P = _check_point(point)
    B, T, S = P["B"], P["T"], P["S"]
    g = torch.Generator(device=device).manual_seed(int(seed))
    em = (2.0 * torch.randn((B, T, S), generator=g, device=device)).to(_torch_dtype(P["dtype"]))
    tr = 0.5 * torch.randn((S, S), generator=g, device=device)
    st = 0.5 * torch.randn((S,), generator=g, device=device)
    en = 0.5 * torch.randn((S,), generator=g, device=device)
    ln = _point_lengths(P, seed).to(device)
    return {"emissions": em, "transitions": tr, "start": st, "end": en, "lengths": ln}


def launch(inputs, cfg):
    """The best path's score [B] fp32 (the tags [B, T] and backpointers are written beside it)."""
    score, _, _ = crf_viterbi(inputs["emissions"], inputs["transitions"], inputs["start"], inputs["end"],
                              inputs["lengths"], BLOCK=cfg["BLOCK"], BLOCK_I=cfg["BLOCK_I"],
                              num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
    return score


def reference_decode(inputs):
    """(score [B] float64, tags [B, T] int64 with -1 past each length): Viterbi in float64 on the inputs'
    device, pytorch-crf's _viterbi_decode with a lengths mask (the max over i takes torch's index; ties are
    measure-zero with these inputs), the backtrace by gathers."""
    import torch
    em = inputs["emissions"].double()
    tr = inputs["transitions"].double()
    ln = inputs["lengths"].long()
    B, T, S = em.shape
    score = inputs["start"].double()[None, :] + em[:, 0]
    hist = []
    for t in range(1, T):
        best, arg = (score[:, :, None] + tr[None]).max(dim=1)
        live = (t < ln)[:, None]
        score = torch.where(live, best + em[:, t], score)
        hist.append(arg)
    fin, tag = (score + inputs["end"].double()[None, :]).max(dim=1)
    tags = torch.full((B, T), -1, dtype=torch.int64, device=em.device)
    for t in range(T - 1, -1, -1):
        live = t < ln
        tags[:, t] = torch.where(live, tag, -1)
        if t > 0:
            prev = hist[t - 1].gather(1, tag[:, None])[:, 0]
            tag = torch.where(live, prev, tag)
    return fin, tags


def reference(inputs):
    """The best path's score [B] in float64 (reference_decode's)."""
    return reference_decode(inputs)[0]


def torch_baseline(inputs):
    """What pytorch-crf / AllenNLP run on a GPU, batched and masked: the forward recurrence as one broadcast
    [B, S, S] add and max over i a step in fp32 (T - 1 steps of eager ops, the history [T - 1, B, S] int64
    kept), then the backtrace by gathers on the device (pytorch-crf walks it on the host); the score [B] fp32."""
    import torch
    em = inputs["emissions"].float()
    tr = inputs["transitions"]
    ln = inputs["lengths"].long()
    B, T, S = em.shape
    score = inputs["start"][None, :] + em[:, 0]
    hist = []
    for t in range(1, T):
        best, arg = (score[:, :, None] + tr[None]).max(dim=1)
        score = torch.where((t < ln)[:, None], best + em[:, t], score)
        hist.append(arg)
    fin, tag = (score + inputs["end"][None, :]).max(dim=1)
    tags = torch.full((B, T), -1, dtype=torch.int64, device=em.device)
    for t in range(T - 1, -1, -1):
        live = t < ln
        tags[:, t] = torch.where(live, tag, -1)
        if t > 0:
            tag = torch.where(live, hist[t - 1].gather(1, tag[:, None])[:, 0], tag)
    return fin


def bytes_moved(point) -> int:
    """The emissions of every live step read once (sum(len) S elements), the backpointer rows 1 <= t < len
    written once (int16) and read once by the backtrace (they outgrow L2 at the points: counted again), the
    tags [B, T] int32 written, lengths read, scores written (4 B each), the transitions and start / end read
    once (seed-0 lengths)."""
    P = _check_point(point)
    B, T, S = P["B"], P["T"], P["S"]
    tot = int(_point_lengths(P).long().sum())
    return tot * S * _ESIZE[P["dtype"]] + 2 * 2 * (tot - B) * S + 4 * B * T + 4 * 2 * B + 4 * (S * S + 2 * S)


def flops(point) -> int:
    """A live step (1 <= t < len) of a sequence: S^2 adds and S^2 max-compares over the (i, j) pairs, S adds of
    the emissions: (sum(len) - B) (2 S^2 + S) (seed-0 lengths; the argmax selects and the backtrace are not
    counted)."""
    P = _check_point(point)
    S = P["S"]
    tot = int(_point_lengths(P).long().sum())
    return (tot - P["B"]) * (2 * S * S + S)


def grid(cfg, point) -> tuple:
    """(cdiv(B, BLOCK_B),), BLOCK_B = max(1, BLOCK // S_PAD) sequences a program."""
    P = _check_point(point)
    _check_cfg(cfg)
    return _grid(P["B"], P["S"], cfg)


def cta_iterations(cfg, point) -> list:
    """Each program's loop steps, in program order: its longest sequence's tmax - 1 forward steps and tmax
    backtrace steps, 2 tmax - 1 (seed-0 lengths; the -1 fill past tmax, at most cdiv(T, 64) stores, is not
    counted)."""
    import torch
    P = _check_point(point)
    (n,) = grid(cfg, P)
    bb = _block_b(cfg, P["S"])
    ln = _point_lengths(P).long()
    per = torch.nn.functional.pad(ln, (0, n * bb - ln.numel())).view(n, bb).amax(1)
    return (2 * per - 1).tolist()


def loop_iterations(cfg, point) -> int:
    """Loop steps a program, on average (rounded up) over the programs (cta_iterations')."""
    it = cta_iterations(cfg, point)
    return -(-sum(it) // len(it))


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`: lengths with data (CPU, the seed-0 lengths: each
    program's loop bound), every other tensor on the meta device, contiguous (as make_inputs and launch lay
    them out)."""
    import torch
    P = _check_point(point)
    grid(cfg, P)
    B, T, S = P["B"], P["T"], P["S"]
    f32 = torch.float32
    em = torch.empty((B, T, S), dtype=_torch_dtype(P["dtype"]), device="meta")
    tr = torch.empty((S, S), dtype=f32, device="meta")
    st = torch.empty((S,), dtype=f32, device="meta")
    en = torch.empty((S,), dtype=f32, device="meta")
    bp = torch.empty((B, T, S), dtype=torch.int16, device="meta")
    tags = torch.empty((B, T), dtype=torch.int32, device="meta")
    score = torch.empty((B,), dtype=f32, device="meta")
    return _kernel_args(em, tr, st, en, _point_lengths(P), bp, tags, score, cfg)
