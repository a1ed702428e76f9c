"""Swin Transformer (v1 / v2) window multi-head self-attention forward, a bare @triton.jit kernel + its
launcher: for every window b_ of B_ = B nW windows (B images, nW windows an image) and head h,

    v1:  s = q k^T scale                         + bias[h] (+ mask[b_ mod nW])
    v2:  s = cos(q, k) exp(min(logit_scale[h], ln 100)) + bias[h] (+ mask[b_ mod nW])
         out[b_, :, h D:(h + 1) D] = softmax(s) v

over the N = M x M tokens of a window (M 7: N 49; M 12: 144; SwinV2's M 8 / 12 / 16: 64 / 144 / 256),
with q, k, v [N, D] of (b_, h) read in place from the packed projection qkv [B_, N, 3, H, D] -- the
`qkv(x).reshape(B_, N, 3, H, D)` view the module makes of its Linear's output: the token rows 3 H D
apart, q / k / v H D apart, the heads D apart, the head dim contiguous (any of those strides works,
the head dim's must be 1). The bias is Swin's relative position bias: bias[h][i, j] =
table[index[i, j], h], the table [(2M - 1)^2, H] (v1: the learned `relative_position_bias_table`;
v2: the continuous-position-bias MLP's output already through 16 sigmoid, which commutes with the
gather), the index [N, N] the module's `relative_position_index` (any integer dtype). mask [nW, N, N]
(fp32, 0 / -100 in the models) is the shifted-window attention mask of the shifted blocks, window
b_ mod nW of every image; None in the regular blocks. v2's cosine is F.normalize's: q_i . k_j /
(max(|q_i|, 1e-12) max(|k_j|, 1e-12)). out: a fresh contiguous [B_, N, H D] tensor in qkv's dtype
(the `(attn @ v).transpose(1, 2).reshape(B_, N, C)` the projection reads), fp16 / bf16.

Each (window, head) is a tiny attention problem -- a whole window's keys fit one program -- so there
is no online softmax: a program holds a [BLOCK_M, KEYS] score tile of BLOCK_M queries against ALL
the window's keys, takes the exact row max and sum once, and does P @ V once. The keys are padded to
powers of two for tl.dot in one of two ways the launcher picks from N (`_keys`): one block of
next_pow2(N) keys (49 -> 64, 64, 256), or, where it is smaller, a head block of the largest power of
two <= N plus a tail block of the next power of two >= the rest (144 = 128 + 16 exactly, instead of
256: 44% fewer scores, exp2s and P @ V work; 36 = 32 + 16, 81 = 64 + 32); the two score tiles share
one row max and sum and the tail's P @ V accumulates into the head's. Queries past N (rows of the
last query block) and keys past N (of the padded block or tail) are clamped to row N - 1 for every
load (no load masks: their scores are not stored / are -inf, so their exp2 is exactly 0 and the
clamped v rows add nothing); the output store is masked when BLOCK_M does not divide N. fp32 scores,
fp32 accumulation of both dots (q k^T on the fp16 / bf16 operands; P rounded to the input dtype for
P @ V, as flash attention does), exp2 in log2 units, one division by the row sum at the end.

Work split: program (h qblocks + qb, w, g) of the grid (H cdiv(N, BLOCK_M), nW, cdiv(B, WINDOWS)) does
query block qb of head h for window position w of images g WINDOWS .. g WINDOWS + WINDOWS - 1
(windows b_ = img nW + w), in a loop over those images; a regular block (no mask) is launched as B_
one-window images (grid (H cdiv(N, BLOCK_M), 1, cdiv(B_, WINDOWS)): WINDOWS consecutive windows a
program). Every window of a program adds the same term -- the relative position bias of head h plus
the mask of position w -- so the prologue builds it once as a [BLOCK_M, KEYS] fp32 register tile, in
log2 units with -inf at the keys past N, and the loop body is one FMA a score (q k^T scale log2(e) +
term), the row max, exp2, the row sum and P @ V. The tile's gather (BLOCK_M x KEYS loads from L2,
4-8 bytes each, against (BLOCK_M + 2 KEYS) D 2 bytes of q, k, v a window from DRAM) is paid once for
WINDOWS windows; the loop's q / k / v loads are the only DRAM traffic and, each window's independent
of the last's, num_stages 2 software-pipelines them (cp.async: the next window's q, k, v in flight
during this window's dots and softmax). The query blocks of one head are the neighbouring programs
(launch order), all heads of one window group next: they read the same windows' token rows (k and v
re-read from L2 by each of a window's cdiv(N, BLOCK_M) query blocks). On sm_90 BLOCK_M 64 on 4 warps
runs both dots as one warpgroup's wgmma from shared memory; BLOCK_M 16 puts the warps on the keys
(mma.sync, the row max and sum across warps through shared memory).

The bias two ways (EXPANDED), both once a program:
  0: gathered in the kernel: the [BLOCK_M, KEYS] slice of the index (int32: 4 bytes an element, from
     L2) and table[index, h] (the table is a few KiB, L1-resident), plus the mask tile (fp32, 4 bytes);
  1: read from the pre-expanded term [nW, H, N, N] fp32, relative position bias plus mask (`expand_bias`,
     [1, H, N, N] without a mask): one 4-byte load an element. It is a per-layer constant (weights and
     resolution) computed once ahead of the forward, as deployment runtimes (FasterTransformer's Swin)
     expand the bias at load time; nW H N^2 4 bytes to keep (1.8 MB for Swin-T's shifted stage-1
     block, 1.3 MB for Swin-B/384's regular stage-3 block, 4.2 MB for SwinV2-B's stage 1).

How this differs from the other attention examples: examples/sliding_window_attn.py is a 1-d causal
band over a long sequence with online softmax over K/V tiles, and examples/block_sparse_attn.py walks
a per-query-block list of selected key blocks of a long sequence; both are flash-attention loops over
keys with no additive bias. Here every problem is a whole 2-d window of <= 256 tokens, non-causal,
done in one shot (no key loop, no rescaling), the loop is over windows (the bias / mask tile held in
registers across problems, their q / k / v pipelined), and the scores carry an additive relative
position bias gathered through an index (or pre-expanded), the per-window-position shifted mask,
SwinV2's cosine attention with a per-head clamped logit scale, and the keys split into a power-of-two
head and tail.

Tunables: BLOCK_M (16 / 64: the query rows a program, the [BLOCK_M, KEYS] score and bias tiles),
WINDOWS (2 / 4 / 8: windows a program loops over, the bias tile's reuse), EXPANDED (0 / 1, above),
num_warps (4 / 8), num_stages (1 / 2: the q / k / v pipelining across the window loop). On sm_90
every config of the sweep compiles at every point without spills: 48-247 registers under triton
3.6.0, 45-243 under 3.9.0 (the most for BLOCK_M 64 at N 144: the 64 x 144 score and bias tiles held
together, 220-247; 45-71 for BLOCK_M 16 at N 49 / 64), shared memory 6-64 KiB (3.6) / 6-48 KiB (3.9):
the q / k / v tiles of num_stages windows and the bias tile's layout conversion. Left out: BLOCK_M 32
(at N 144 Triton's mma.sync layout puts all 4-8 warps on the 32 rows -- half of them duplicates --
each holding the whole k tile: 2-14 registers spilled), 2 warps (BLOCK_M 64 spilled at N 144), and
SwinV2's window 16 (N 256: a 256-key row tile spills at every BLOCK_M but 16; the kernel runs it
correctly, BLOCK_M 16 on 8 warps without spills). On sm_120 (mma.sync, no wgmma) BLOCK_M 64 on 4
warps spills 8-12 registers at N 144; every config fits at N 49 / 64.
Problem parameters (a workload point): B (images), res (the stage's tokens a side), window (M), heads
(H), head_dim (D), shift (0 / 1: a shifted block, with the mask), cosine (0: Swin v1's scaled dot
product; 1: SwinV2's cosine attention), dtype (fp16 / bf16).
"""
from __future__ import annotations

import math

import triton
import triton.language as tl

LOG2E = tl.constexpr(1.4426950408889634)
LN_MAX_LOGIT = tl.constexpr(math.log(100.0))    # SwinV2 clamps the logit scale at max=log(1 / 0.01)
NORM_EPS = tl.constexpr(1e-12)                  # F.normalize's eps


@triton.jit
def _bias_tile(TABLE, INDEX, BIAS, MASK, h, w, lm, rk, N,
               stride_tt, stride_th, stride_ii, stride_ij, stride_bw, stride_bh, stride_bi, stride_bj,
               stride_mw, stride_mi, stride_mj,
               HAS_MASK: tl.constexpr, EXPANDED: tl.constexpr, PAD: tl.constexpr):
    """The additive term of query rows lm (clamped) and keys rk, in log2 units: (bias + mask) log2(e),
    -inf at keys past N (PAD: the block may hold some); [BLOCK_M, KEYS] fp32."""
    if PAD:                                 # keys past N read key N - 1 (then set to -inf)
        lk = tl.minimum(rk, N - 1)
    else:
        lk = rk
    if EXPANDED:                            # the pre-expanded bias (+ mask) of window w, head h
        t = tl.load(BIAS + w * stride_bw + h * stride_bh + lm[:, None] * stride_bi
                    + lk[None, :] * stride_bj).to(tl.float32)
    else:                                   # gathered: table[index[i, j], h] (+ mask[w, i, j])
        idx = tl.load(INDEX + lm[:, None] * stride_ii + lk[None, :] * stride_ij)
        t = tl.load(TABLE + h * stride_th + idx.to(tl.int32) * stride_tt).to(tl.float32)
        if HAS_MASK:
            t += tl.load(MASK + w * stride_mw + lm[:, None] * stride_mi + lk[None, :] * stride_mj).to(tl.float32)
    t = t * LOG2E
    if PAD:
        t = tl.where((rk < N)[None, :], t, float("-inf"))
    return t


@triton.jit
def _kernel(QKV, TABLE, INDEX, BIAS, MASK, LSCALE, O,
            N, n_win, n_img, qk_scale,
            stride_qb, stride_qn, stride_qs, stride_qh,
            stride_ob, stride_on, stride_oh,
            stride_tt, stride_th, stride_ii, stride_ij,
            stride_bw, stride_bh, stride_bi, stride_bj,
            stride_mw, stride_mi, stride_mj, stride_ls,
            COSINE: tl.constexpr, HAS_MASK: tl.constexpr, EXPANDED: tl.constexpr,
            EVEN_M: tl.constexpr, EVEN_K: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr,
            KEYS_A: tl.constexpr, KEYS_B: tl.constexpr, WINDOWS: tl.constexpr):
    pid = tl.program_id(0)
    w = tl.program_id(1)
    g = tl.program_id(2)
    n_qb = tl.cdiv(N, BLOCK_M)
    h = pid // n_qb
    qb = pid - h * n_qb
    rm = qb * BLOCK_M + tl.arange(0, BLOCK_M)
    rd = tl.arange(0, HEAD_DIM)
    ka = tl.arange(0, KEYS_A)
    if EVEN_M:
        lm = rm
    else:                                   # query rows past N read row N - 1 (never stored)
        lm = tl.minimum(rm, N - 1)
    # keys past N: only in the tail when there is one (the head KEYS_A <= N), else in the one block
    PAD_A: tl.constexpr = (not EVEN_K) and KEYS_B == 0
    if PAD_A:
        la = tl.minimum(ka, N - 1)
    else:
        la = ka
    # the program's bias (+ mask) tile, once: every window of the loop adds the same one
    bm_a = _bias_tile(TABLE, INDEX, BIAS, MASK, h, w, lm, ka, N, stride_tt, stride_th, stride_ii, stride_ij,
                      stride_bw, stride_bh, stride_bi, stride_bj, stride_mw, stride_mi, stride_mj,
                      HAS_MASK, EXPANDED, PAD_A)
    q_off = lm[:, None] * stride_qn + rd[None, :]                  # [BLOCK_M, D], int32 in the window
    ka_off = la[:, None] * stride_qn + rd[None, :]
    if KEYS_B > 0:                          # the tail block: keys KEYS_A .. KEYS_A + KEYS_B
        kb = KEYS_A + tl.arange(0, KEYS_B)
        bm_b = _bias_tile(TABLE, INDEX, BIAS, MASK, h, w, lm, kb, N, stride_tt, stride_th, stride_ii, stride_ij,
                          stride_bw, stride_bh, stride_bi, stride_bj, stride_mw, stride_mi, stride_mj,
                          HAS_MASK, EXPANDED, not EVEN_K)
        if EVEN_K:
            lb = kb
        else:
            lb = tl.minimum(kb, N - 1)
        kb_off = lb[:, None] * stride_qn + rd[None, :]
    if COSINE:                              # SwinV2: exp(min(logit_scale[h], ln 100)), log2 units
        ls = tl.exp(tl.minimum(tl.load(LSCALE + h * stride_ls).to(tl.float32), LN_MAX_LOGIT)) * LOG2E
    else:
        sc = qk_scale * LOG2E
    o_off = rm[:, None] * stride_on + rd[None, :]
    img0 = g * WINDOWS
    img1 = tl.minimum(img0 + WINDOWS, n_img)
    for img in range(img0, img1):
        b_ = (img * n_win + w).to(tl.int64)
        base = QKV + b_ * stride_qb + h * stride_qh
        q = tl.load(base + q_off)
        k_a = tl.load(base + stride_qs + ka_off)
        v_a = tl.load(base + 2 * stride_qs + ka_off)
        s_a = tl.dot(q, tl.trans(k_a))
        if COSINE:                          # q_i . k_j / (|q_i| |k_j|), F.normalize's eps
            qf = q.to(tl.float32)
            rq = ls / tl.maximum(tl.sqrt(tl.sum(qf * qf, 1)), NORM_EPS)
            kf = k_a.to(tl.float32)
            rk_a = 1.0 / tl.maximum(tl.sqrt(tl.sum(kf * kf, 1)), NORM_EPS)
            s_a = s_a * rq[:, None] * rk_a[None, :] + bm_a
        else:
            s_a = s_a * sc + bm_a
        m = tl.max(s_a, 1)
        if KEYS_B > 0:
            k_b = tl.load(base + stride_qs + kb_off)
            v_b = tl.load(base + 2 * stride_qs + kb_off)
            s_b = tl.dot(q, tl.trans(k_b))
            if COSINE:
                kf_b = k_b.to(tl.float32)
                rk_b = 1.0 / tl.maximum(tl.sqrt(tl.sum(kf_b * kf_b, 1)), NORM_EPS)
                s_b = s_b * rq[:, None] * rk_b[None, :] + bm_b
            else:
                s_b = s_b * sc + bm_b
            m = tl.maximum(m, tl.max(s_b, 1))
        p_a = tl.exp2(s_a - m[:, None])
        l_sum = tl.sum(p_a, 1)
        acc = tl.dot(p_a.to(v_a.dtype), v_a)
        if KEYS_B > 0:
            p_b = tl.exp2(s_b - m[:, None])
            l_sum += tl.sum(p_b, 1)
            acc = tl.dot(p_b.to(v_b.dtype), v_b, acc)
        out = (acc / l_sum[:, None]).to(O.dtype.element_ty)
        o_ptrs = O + b_ * stride_ob + h * stride_oh + o_off
        if EVEN_M:
            tl.store(o_ptrs, out)
        else:
            tl.store(o_ptrs, out, mask=(rm < N)[:, None])


# ---------------------------------------------------------------- launcher
ROLE = "held-out-29"
DTYPES = ("fp16", "bf16")
TUNABLES = ("BLOCK_M", "WINDOWS", "EXPANDED", "num_warps", "num_stages")
BASELINE = {"BLOCK_M": 64, "WINDOWS": 4, "EXPANDED": 0, "num_warps": 4, "num_stages": 2}
# the study's sweep: 2 x 3 x 2 x 2 x 2 = 48 configs. BLOCK_M 16 (one mma row tile, the warps split the
# keys) or 64 (one warpgroup's wgmma rows on 4 warps); windows a program 2 / 4 / 8
SWEEP_AXES = {"BLOCK_M": [16, 64], "WINDOWS": [2, 4, 8], "EXPANDED": [0, 1], "num_warps": [4, 8],
              "num_stages": [1, 2]}

POINTS = [
    # Swin-T (timm swin_tiny_patch4_window7_224) stage 1 at 224: 56 x 56 tokens, window 7 (N 49 -> 64
    # keys, 64 nW), 3 heads of 32, a shifted block (the -100 mask), fp16 inference at batch 128. qkv
    # 231 MB read, out 77 MB written; 7.6 GFLOP
    {"B": 128, "res": 56, "window": 7, "heads": 3, "head_dim": 32, "shift": 1, "cosine": 0, "dtype": "fp16"},
    # Swin-B at 384 (swin_base_patch4_window12_384) stage 3: 24 x 24 tokens, window 12 (N 144 = 128 +
    # 16 keys, 4 nW), 16 heads of 32, a regular block (no mask), bf16 at batch 128. qkv 226 MB read,
    # out 75 MB written; 21.7 GFLOP
    {"B": 128, "res": 24, "window": 12, "heads": 16, "head_dim": 32, "shift": 0, "cosine": 0, "dtype": "bf16"},
    # SwinV2-B (swinv2_base_window8_256) stage 1 at 256: 64 x 64 tokens, window 8 (N 64, 64 nW), 4 heads
    # of 32, cosine attention with the CPB bias, a shifted block, fp16 at batch 64. qkv 201 MB read,
    # out 67 MB written; 8.6 GFLOP
    {"B": 64, "res": 64, "window": 8, "heads": 4, "head_dim": 32, "shift": 1, "cosine": 1, "dtype": "fp16"},
]


def _torch_dtype(name: str):
    import torch
    try:
        return {"bf16": torch.bfloat16, "fp16": torch.float16}[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}") from None


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _pow2(v: int) -> int:
    return 1 << max(0, (v - 1).bit_length())


def _keys(N: int) -> tuple[int, int]:
    """(KEYS_A, KEYS_B): one block of next_pow2(N) keys (at least 16, tl.dot's minimum), KEYS_B 0; or,
    where smaller, the largest power of two <= N and a tail of the next power of two >= the rest."""
    full = max(16, _pow2(N))
    if N <= 16:
        return full, 0
    a = 1 << (N.bit_length() - 1)
    if a == N:
        return a, 0
    b = max(16, _pow2(N - a))
    return (a, b) if a + b < full else (full, 0)


def _check_point(point) -> dict:
    """The point's fields, checked, plus nW, N, B_ (windows)."""
    for k in ("B", "res", "window", "heads", "head_dim"):
        v = point[k]
        if not _is_int(v) or v < 1:
            raise ValueError(f"{k}={v!r} must be a positive int")
    B, res, M, H, D = point["B"], point["res"], point["window"], point["heads"], point["head_dim"]
    if res % M:
        raise ValueError(f"res={res} must be a multiple of window={M}")
    if D < 16 or D > 128 or D & (D - 1):
        raise ValueError(f"head_dim={D} must be a power of two from 16 to 128")
    if M * M > 256:
        raise ValueError(f"window={M} gives {M * M} tokens a window; at most 256 (M <= 16)")
    flags = {}
    for k in ("shift", "cosine"):
        v = point.get(k, 0)
        if v not in (0, 1) or not isinstance(v, (int, bool)):
            raise ValueError(f"{k}={v!r} must be 0 or 1")
        flags[k] = int(v)
    if flags["shift"] and (res <= M or M < 2):
        raise ValueError(f"shift=1 needs res > window >= 2 (Swin drops the shift otherwise); got res={res}, "
                         f"window={M}")
    dt = point.get("dtype", "fp16")
    if dt not in DTYPES:
        raise ValueError(f"dtype {dt!r} is not one of {', '.join(DTYPES)}")
    nW = (res // M) ** 2
    return {"B": B, "res": res, "M": M, "H": H, "D": D, "nW": nW, "N": M * M, "Bw": B * nW,
            "shift": flags["shift"], "cosine": flags["cosine"], "dtype": dt}


def _check_cfg(cfg) -> None:
    bm = cfg["BLOCK_M"]
    if not _is_int(bm) or bm not in (16, 32, 64, 128):
        raise ValueError(f"BLOCK_M={bm!r} must be 16, 32, 64 or 128")
    wp = cfg["WINDOWS"]
    if not _is_int(wp) or wp < 1 or wp > 64:
        raise ValueError(f"WINDOWS={wp!r} must be an int from 1 to 64")
    ex = cfg["EXPANDED"]
    if ex not in (0, 1) or not isinstance(ex, (int, bool)):
        raise ValueError(f"EXPANDED={ex!r} must be 0 or 1")
    w = cfg["num_warps"]
    if not _is_int(w) or w not in (1, 2, 4, 8, 16):
        raise ValueError(f"num_warps={w!r} must be a power of two from 1 to 16")
    st = cfg.get("num_stages", 1)
    if not _is_int(st) or st < 1:
        raise ValueError(f"num_stages={st!r} must be a positive int")


def _grid(B: int, N: int, H: int, nW: int, cfg) -> tuple[int, int, int]:
    _check_cfg(cfg)
    return (H * triton.cdiv(N, cfg["BLOCK_M"]), nW, triton.cdiv(B, cfg["WINDOWS"]))


def _kernel_args(qkv, table, index, bias, mask, logit_scale, out, n_img: int, scale: float, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it). With
    EXPANDED 1 `bias` is the pre-expanded [nW, H, N, N] (mask folded in) or [1, H, N, N] term and qkv
    stands in for the table, index and mask (never read); with EXPANDED 0 qkv stands in for `bias`.
    Without a logit scale qkv stands in for it too."""
    Bw, N, _, H, D = qkv.shape
    ka, kb = _keys(N)
    ex = int(cfg["EXPANDED"])
    st = (lambda t, i: 0 if t is None else t.stride(i))
    t, i, m, b = (None, None, None, bias) if ex else (table, index, mask, None)
    return dict(QKV=qkv, TABLE=qkv if t is None else t, INDEX=qkv if i is None else i,
                BIAS=qkv if b is None else b, MASK=qkv if m is None else m,
                LSCALE=qkv if logit_scale is None else logit_scale, O=out,
                N=N, n_win=Bw // n_img, n_img=n_img, qk_scale=float(scale),
                stride_qb=qkv.stride(0), stride_qn=qkv.stride(1), stride_qs=qkv.stride(2), stride_qh=qkv.stride(3),
                stride_ob=out.stride(0), stride_on=out.stride(1), stride_oh=D,
                stride_tt=st(t, 0), stride_th=st(t, 1), stride_ii=st(i, 0), stride_ij=st(i, 1),
                stride_bw=0 if b is None or b.shape[0] == 1 else b.stride(0), stride_bh=st(b, 1),
                stride_bi=st(b, 2), stride_bj=st(b, 3),
                stride_mw=st(m, 0), stride_mi=st(m, 1), stride_mj=st(m, 2),
                stride_ls=0 if logit_scale is None else logit_scale.stride(0),
                COSINE=int(logit_scale is not None), HAS_MASK=int(mask is not None), EXPANDED=ex,
                EVEN_M=int(N % cfg["BLOCK_M"] == 0), EVEN_K=int(ka + kb == N), HEAD_DIM=D,
                BLOCK_M=cfg["BLOCK_M"], KEYS_A=ka, KEYS_B=kb, WINDOWS=cfg["WINDOWS"])


def expand_bias(table, index, mask=None):
    """The scores' additive term, pre-expanded, fp32 contiguous: table[index].permute(2, 0, 1) [H, N, N]
    (the relative position bias) plus, with a mask [nW, N, N], the mask: [nW, H, N, N]; without one
    [1, H, N, N]. A per-layer constant (weights and resolution), computed once."""
    import torch
    N = index.shape[0]
    bias = table.float()[index.reshape(-1).long()].view(N, N, -1).permute(2, 0, 1)
    if mask is None:
        return bias[None].contiguous()
    return (bias[None] + mask.float()[:, None]).contiguous()


def swin_window_attn(qkv, bias_table, bias_index, mask=None, *, scale: float | None = None, logit_scale=None,
                     expanded_bias=None, BLOCK_M: int = 64, WINDOWS: int = 4, EXPANDED: int = 0,
                     num_warps: int = 4, num_stages: int = 2):
    """qkv [B_, N, 3, H, D] (fp16 / bf16, unit head-dim stride, any other strides: the module's
    `qkv(x).reshape(B_, N, 3, H, D)`), bias_table [T, H] (float), bias_index [N, N] (integer, values in
    [0, T)), mask [nW, N, N] (float, window b_ mod nW of each image; B_ a multiple of nW) or None ->
    out [B_, N, H D] in qkv's dtype, contiguous: per window and head softmax(s) v with s = q k^T scale
    + bias (+ mask), scale D^-0.5 by default; with logit_scale ([H] or SwinV2's [H, 1, 1] parameter)
    SwinV2's cosine attention, s = cos(q, k) exp(min(logit_scale, ln 100)) + bias (+ mask), the table
    then being the CPB MLP's output through 16 sigmoid. EXPANDED 1 reads bias + mask from expanded_bias
    ([nW, H, N, N] float, nW 1 without a mask, any strides; expand_bias(bias_table, bias_index, mask)
    when None: a per-layer constant worth keeping) instead of gathering the bias and adding the mask in
    the kernel (the mask then only gives nW). BLOCK_M, WINDOWS, EXPANDED, num_warps, num_stages: the
    tunables (module doc)."""
    import torch
    if qkv.dim() != 5 or qkv.shape[2] != 3:
        raise ValueError(f"expected qkv [B_, N, 3, H, D]; got {tuple(qkv.shape)}")
    Bw, N, _, H, D = qkv.shape
    if qkv.dtype not in (torch.float16, torch.bfloat16):
        raise ValueError(f"qkv must be fp16 / bf16; got {qkv.dtype}")
    if D < 16 or D > 128 or D & (D - 1):
        raise ValueError(f"head dim D={D} must be a power of two from 16 to 128")
    if N < 1 or N > 256:
        raise ValueError(f"N={N} tokens a window must be 1 .. 256")
    if qkv.stride(4) != 1:
        raise ValueError(f"qkv must have unit head-dim stride; got strides {tuple(qkv.stride())}")
    cfg = {"BLOCK_M": BLOCK_M, "WINDOWS": WINDOWS, "EXPANDED": EXPANDED, "num_warps": num_warps,
           "num_stages": num_stages}
    _check_cfg(cfg)
    dev = qkv.device
    if bias_table.dim() != 2 or bias_table.shape[1] != H or not bias_table.is_floating_point():
        raise ValueError(f"bias_table must be a float [T, H={H}]; got {tuple(bias_table.shape)} {bias_table.dtype}")
    if bias_index.dim() != 2 or tuple(bias_index.shape) != (N, N) or bias_index.is_floating_point() \
            or bias_index.dtype == torch.bool:
        raise ValueError(f"bias_index must be an integer [N, N] = {[N, N]}; got {tuple(bias_index.shape)} "
                         f"{bias_index.dtype}")
    if mask is not None:
        if mask.dim() != 3 or tuple(mask.shape[1:]) != (N, N) or not mask.is_floating_point():
            raise ValueError(f"mask must be a float [nW, N, N] with N={N}; got {tuple(mask.shape)} {mask.dtype}")
        if mask.shape[0] < 1 or Bw % mask.shape[0]:
            raise ValueError(f"B_={Bw} windows must be a multiple of the mask's nW={mask.shape[0]}")
    nW = 1 if mask is None else mask.shape[0]
    if logit_scale is not None:
        if logit_scale.numel() != H or not logit_scale.is_floating_point():
            raise ValueError(f"logit_scale must hold H={H} floats; got {tuple(logit_scale.shape)}")
        logit_scale = logit_scale.reshape(H)
    if EXPANDED:
        if expanded_bias is None:
            expanded_bias = expand_bias(bias_table, bias_index, mask)
        if tuple(expanded_bias.shape) != (nW, H, N, N) or not expanded_bias.is_floating_point():
            raise ValueError(f"expanded_bias must be a float [nW, H, N, N] = {[nW, H, N, N]} (nW 1 without a "
                             f"mask); got {tuple(expanded_bias.shape)}")
    for name, t in (("bias_table", bias_table), ("bias_index", bias_index), ("mask", mask),
                    ("logit_scale", logit_scale), ("expanded_bias", expanded_bias if EXPANDED else None)):
        if t is not None and t.device != dev:
            raise ValueError(f"{name} must be on qkv's device {dev}; got {t.device}")
    out = torch.empty((Bw, N, H * D), dtype=qkv.dtype, device=dev)
    if out.numel() == 0:
        return out
    n_img = Bw // nW
    grid = _grid(n_img, N, H, nW, cfg)
    if grid[1] > 65535 or grid[2] > 65535:
        raise ValueError(f"nW={nW} windows an image / {grid[2]} image groups exceed the grid's 65535")
    inner = max(N * max(abs(s) for s in qkv.stride()[1:]) * 3, nW * N * N * H * 4)
    if inner >= 2**31:
        raise ValueError("a window's offsets exceed the kernel's int32 in-window offsets")
    if scale is None:
        scale = D ** -0.5
    _kernel[grid](**_kernel_args(qkv, bias_table, bias_index, expanded_bias, mask, logit_scale, out, n_img,
                                 scale, cfg), num_warps=num_warps, num_stages=num_stages)
    return out


def relative_position_index(M: int):
    """Swin's relative_position_index [M^2, M^2] (int64) of an M x M window: (dh + M - 1) (2M - 1) +
    dw + M - 1 for the token pair's row / column offsets."""
    import torch
    c = torch.stack(torch.meshgrid(torch.arange(M), torch.arange(M), indexing="ij")).flatten(1)
    rel = (c[:, :, None] - c[:, None, :]).permute(1, 2, 0) + (M - 1)
    return rel[:, :, 0] * (2 * M - 1) + rel[:, :, 1]


def shifted_window_mask(res: int, M: int):
    """Swin's attn_mask [nW, M^2, M^2] fp32 of a shifted block (shift M // 2) on a res x res map: the
    map cut into 3 x 3 regions by the cyclic shift, -100 between tokens of different regions, else 0."""
    import torch
    s = M // 2
    img = torch.zeros(res, res)
    cnt = 0
    for hs in (slice(0, -M), slice(-M, -s), slice(-s, None)):
        for ws in (slice(0, -M), slice(-M, -s), slice(-s, None)):
            img[hs, ws] = cnt
            cnt += 1
    win = img.view(res // M, M, res // M, M).permute(0, 2, 1, 3).reshape(-1, M * M)
    diff = win[:, None, :] - win[:, :, None]
    return torch.where(diff != 0, torch.tensor(-100.0), torch.tensor(0.0))


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """qkv like the projection of layer-normed tokens, N(0, 1) entries in the point's dtype, as the
    module's contiguous [B_, N, 3 H D] Linear output viewed [B_, N, 3, H, D]; the bias table (v1: N(0,
    1), a trained table's scale; v2: 16 sigmoid(N(0, 1.5)), the CPB MLP's range) fp32 [(2M - 1)^2, H];
    Swin's relative position index as int32 (the module's int64 buffer cast once); with `shift` Swin's
    shifted-window mask (fp32, 0 / -100); with `cosine` the per-head logit scale ln 10 + N(0, 0.3)
    (SwinV2's parameter, [H, 1, 1]). Also the expanded term [nW or 1, H, N, N] (bias + mask, the
    per-layer constant EXPANDED 1 reads) and the scale D^-0.5. All drawn on the CPU from a seeded
    torch.Generator and moved."""
    import torch
    P = _check_point(point)
    gen = torch.Generator(device="cpu").manual_seed(seed)
    tdt = _torch_dtype(P["dtype"])
    Bw, N, H, D, M = P["Bw"], P["N"], P["H"], P["D"], P["M"]
    qkv = torch.randn((Bw, N, 3 * H * D), generator=gen).to(tdt).to(device).view(Bw, N, 3, H, D)
    T = (2 * M - 1) ** 2
    if P["cosine"]:
        table = 16 * torch.sigmoid(1.5 * torch.randn((T, H), generator=gen))
        ls = (math.log(10.0) + 0.3 * torch.randn((H, 1, 1), generator=gen)).to(device)
    else:
        table = torch.randn((T, H), generator=gen)
        ls = None
    index = relative_position_index(M).to(torch.int32)
    mask = shifted_window_mask(P["res"], M).to(device) if P["shift"] else None
    table, index = table.to(device), index.to(device)
    return {"qkv": qkv, "table": table, "index": index, "mask": mask, "logit_scale": ls,
            "expanded_bias": expand_bias(table, index, mask), "scale": D ** -0.5}


def launch(inputs, cfg):
    """out [B_, N, H D] of inputs["qkv"], ["table"], ["index"], ["mask"] (None: a regular block),
    ["logit_scale"] (None: v1), ["expanded_bias"] (read with EXPANDED 1), ["scale"]."""
    return swin_window_attn(inputs["qkv"], inputs["table"], inputs["index"], inputs.get("mask"),
                            scale=inputs.get("scale"), logit_scale=inputs.get("logit_scale"),
                            expanded_bias=inputs.get("expanded_bias"), BLOCK_M=cfg["BLOCK_M"],
                            WINDOWS=cfg["WINDOWS"], EXPANDED=cfg["EXPANDED"], num_warps=cfg["num_warps"],
                            num_stages=cfg["num_stages"])


def _attention(qkv, table, index, mask, logit_scale, scale, wide):
    """The module's forward on (b_, h, N, D) views, in dtype `wide` (scores and softmax)."""
    import torch
    import torch.nn.functional as F
    Bw, N, _, H, D = qkv.shape
    q, k, v = qkv.to(wide).permute(2, 0, 3, 1, 4).unbind(0)           # [B_, H, N, D]
    if logit_scale is not None:
        ls = torch.clamp(logit_scale.to(wide).reshape(1, H, 1, 1), max=math.log(100.0)).exp()
        s = (F.normalize(q, dim=-1) @ F.normalize(k, dim=-1).transpose(-2, -1)) * ls
    else:
        s = (q * scale) @ k.transpose(-2, -1)
    bias = table.to(wide)[index.reshape(-1).long()].view(N, N, H).permute(2, 0, 1)
    s = s + bias[None]
    if mask is not None:
        nW = mask.shape[0]
        s = (s.view(Bw // nW, nW, H, N, N) + mask.to(wide)[None, :, None]).view(Bw, H, N, N)
    return torch.softmax(s, dim=-1) @ v


def reference(inputs):
    """fp32 [B_, N, H D]: the module's forward on the upcast qkv, table and mask (fp64 on the CPU,
    fp32 on a GPU)."""
    import torch
    qkv = inputs["qkv"]
    wide = torch.float64 if qkv.device.type == "cpu" else torch.float32
    o = _attention(qkv, inputs["table"], inputs["index"], inputs.get("mask"), inputs.get("logit_scale"),
                   inputs.get("scale") or qkv.shape[-1] ** -0.5, wide)
    Bw, N, _, H, D = qkv.shape
    return o.transpose(1, 2).reshape(Bw, N, H * D).float()


def torch_baseline(inputs):
    """What timm runs: v1's fused path, F.scaled_dot_product_attention on the q / k / v views with the
    bias (+ mask) expanded to [B_, H, N, N] as attn_mask (in qkv's dtype); v2's eager path as autocast
    runs it (normalize and the two matmuls in qkv's dtype, the logit scale, bias, mask and softmax in
    fp32); then the transpose-reshape copy."""
    import torch
    import torch.nn.functional as F
    qkv = inputs["qkv"]
    Bw, N, _, H, D = qkv.shape
    table, index, mask = inputs["table"], inputs["index"], inputs.get("mask")
    ls = inputs.get("logit_scale")
    if ls is not None:                  # SwinV2's eager forward under autocast: the matmuls in the
        q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)          # input dtype, the scores fp32
        s = (F.normalize(q, dim=-1) @ F.normalize(k, dim=-1).transpose(-2, -1)).float()
        s = s * torch.clamp(ls.float().reshape(1, H, 1, 1), max=math.log(100.0)).exp()
        s = s + table.float()[index.reshape(-1).long()].view(N, N, H).permute(2, 0, 1)[None]
        if mask is not None:
            nW = mask.shape[0]
            s = (s.view(Bw // nW, nW, H, N, N) + mask.float()[None, :, None]).view(Bw, H, N, N)
        o = torch.softmax(s, dim=-1).to(qkv.dtype) @ v
    else:
        q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)
        bias = table[index.reshape(-1).long()].view(N, N, H).permute(2, 0, 1).contiguous().to(qkv.dtype)
        am = bias[None]
        if mask is not None:
            nW = mask.shape[0]
            am = (am.view(1, 1, H, N, N) + mask.to(qkv.dtype).view(1, nW, 1, N, N)).expand(
                Bw // nW, nW, H, N, N).reshape(Bw, H, N, N)
        else:
            am = am.expand(Bw, H, N, N)
        o = F.scaled_dot_product_attention(q, k, v, attn_mask=am, scale=inputs.get("scale"))
    return o.transpose(1, 2).reshape(Bw, N, H * D)


def bytes_moved(point) -> int:
    """qkv read once (3 B_ N H D elements), out written once (B_ N H D), in the 2-byte dtype; the bias
    table, index, mask and expanded bias are L2-resident constants (not counted)."""
    P = _check_point(point)
    return 4 * P["Bw"] * P["N"] * P["H"] * P["D"] * 2


def flops(point) -> int:
    """q k^T and P v over the real (unpadded) window: 4 B_ H N^2 D."""
    P = _check_point(point)
    return 4 * P["Bw"] * P["H"] * P["N"] ** 2 * P["D"]


def grid(cfg, point) -> tuple[int, int, int]:
    """(H query blocks, nW, image groups): the launch grid, a head's query blocks fastest; a regular
    block (no mask) is launched as B_ one-window images, (H query blocks, 1, cdiv(B_, WINDOWS))."""
    P = _check_point(point)
    if P["shift"]:
        return _grid(P["B"], P["N"], P["H"], P["nW"], cfg)
    return _grid(P["Bw"], P["N"], P["H"], 1, cfg)


def loop_iterations(cfg, point) -> int:
    """Windows a program loops over: WINDOWS (the last image group's programs min(WINDOWS, B mod
    WINDOWS) when WINDOWS does not divide B)."""
    _check_point(point)
    _check_cfg(cfg)
    return cfg["WINDOWS"]


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory): qkv the
    contiguous [B_, N, 3 H D] projection viewed [B_, N, 3, H, D], the fp32 table [(2M - 1)^2, H] and
    int32 index [N, N] and with `shift` the fp32 mask [nW, N, N] (EXPANDED 0), or the fp32 expanded term
    [nW, H, N, N] ([1, H, N, N] without `shift`; EXPANDED 1), the fp32 logit scale [H] with `cosine`, out
    contiguous [B_, N, H D]; a regular block as B_ one-window images."""
    import torch
    P = _check_point(point)
    _check_cfg(cfg)
    tdt = _torch_dtype(P["dtype"])
    Bw, N, H, D, M, nW = P["Bw"], P["N"], P["H"], P["D"], P["M"], P["nW"]
    qkv = torch.empty((Bw, N, 3 * H * D), dtype=tdt, device="meta").view(Bw, N, 3, H, D)
    table = torch.empty(((2 * M - 1) ** 2, H), dtype=torch.float32, device="meta")
    index = torch.empty((N, N), dtype=torch.int32, device="meta")
    bias = torch.empty((nW if P["shift"] else 1, H, N, N), dtype=torch.float32, device="meta")
    mask = torch.empty((nW, N, N), dtype=torch.float32, device="meta") if P["shift"] else None
    ls = torch.empty((H,), dtype=torch.float32, device="meta") if P["cosine"] else None
    out = torch.empty((Bw, N, H * D), dtype=tdt, device="meta")
    return _kernel_args(qkv, table, index, bias, mask, ls, out, P["B"] if P["shift"] else Bw, D ** -0.5, cfg)
