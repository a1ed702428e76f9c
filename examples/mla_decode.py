"""Multi-head latent attention (MLA) decode over a paged latent KV cache, DeepSeek-V2 / V3
style with the weights absorbed (the decode path of vLLM's / SGLang's MLA backends), split
along the sequence (flash-decoding): a bare @triton.jit kernel, its merge kernel, and the
launcher.

    s[b, h, t]  = (q_lat[b, h] . c[b, t] + q_rope[b, h] . k_rope[b, t]) * sm_scale
    out[b, h]   = softmax_t(s[b, h, :len_b]) @ c[b, :len_b]

Every token t of sequence b stores one shared latent vector c (LATENT = 512 values: the
compressed KV, the key of the latent part and the value at once) and one rope key k_rope
(ROPE = 64), concatenated: kv_cache [num_pages, PAGE_SIZE, LATENT + ROPE] (bf16 / fp16, the
last dim contiguous), token t at page page_table[b, t // PAGE_SIZE], slot t % PAGE_SIZE
(page_table int32 [B, max_pages], entries past cdiv(len_b, PAGE_SIZE) never read; lengths
int32 [B], each >= 1: a ragged batch). q [B, H, LATENT + ROPE] holds each head's absorbed
latent query (q_nope @ W_UK) followed by its rope part; out [B, H, LATENT] in q's dtype (the
caller applies W_UV). sm_scale is DeepSeek's 1 / sqrt(qk_nope + qk_rope = 192) by default.

Stage 1, `_kernel`, grid (cdiv(H, BLOCK_H), NUM_SPLITS, B), program id 0 fastest, so the head
groups of one (sequence, split) run side by side and share its KV tiles in L2: a CTA owns
BLOCK_H heads of one sequence (the M side of every tensor-core dot; heads past H are zero
query rows, masked at the store) and split `sp` of its tokens: split_len = cdiv(cdiv(len,
NUM_SPLITS), BLOCK_N) * BLOCK_N tokens (a BLOCK_N multiple, so only a sequence's last tile is
partial), tokens sp * split_len .. min(len, (sp + 1) * split_len); a split that starts past
len returns at once (short sequences leave trailing splits empty). It keeps q_lat
[BLOCK_H, LATENT] and q_rope [BLOCK_H, ROPE] in registers and walks its tokens in BLOCK_N
steps: each step gathers the BLOCK_N cache rows through the page table (one page index per
token: a step may span pages when BLOCK_N > PAGE_SIZE, or sit inside one), loads the latent
tile [BLOCK_N, LATENT] ONCE and uses it for both dots -- scores = q_lat @ c^T + q_rope @
k_rope^T (fp32), online softmax in log2 units (exp2, running max m and sum l), acc[BLOCK_H,
LATENT] = acc * alpha + p @ c (p rounded to the cache dtype). With NUM_SPLITS == 1 it writes
acc / l straight to out (one kernel, no workspace); otherwise acc / l to the fp32 workspace
o_part [B, H, NUM_SPLITS, LATENT] and m + log2(l) to lse [B, H, NUM_SPLITS].

Stage 2, `_merge_kernel` (only when NUM_SPLITS > 1), grid (H, B): one CTA per (sequence,
head) walks that sequence's non-empty splits (cdiv(len, split_len) of them, recomputed from
lengths: no flags) and combines them with the log-sum-exp weights, one [LATENT] fp32 row per
split, into out.

Tunables: BLOCK_H (heads per CTA, a power of two >= 16: the dot's M; 64 feeds a warpgroup
wgmma on sm_90, 16 / 32 run mma.sync), BLOCK_N (tokens per step, a power of two >= 16),
NUM_SPLITS (sequence splits >= 1: parallelism for few long sequences against the workspace
round trip and the merge launch), num_warps, num_stages (the KV gather's pipelining depth; a
stage is BLOCK_N x (LATENT + ROPE) x 2 B of shared memory: 72 KiB at BLOCK_N 64).
Problem parameters (a workload point): B, H, min_len, max_len (each sequence's length drawn
uniformly between them from a CPU generator seeded with len_seed, so the batch does not
depend on the input seed), PAGE (page size, tokens), LATENT, ROPE (512 / 64 for DeepSeek),
dtype (bf16 / fp16).
"""

from __future__ import annotations

import math
from functools import lru_cache

import triton
import triton.language as tl

LOG2E = 1.4426950408889634
MERGE_WARPS = 4


@triton.jit
def _kernel(Q, KV, PAGE_TABLE, LENGTHS, O_PART, LSE, O, sm_scale, H,
            stride_qb, stride_qh, stride_kvp, stride_kvt, stride_ptb,
            stride_pb, stride_ph, stride_ps, stride_lb, stride_lh, stride_ob, stride_oh,
            LATENT: tl.constexpr, ROPE: tl.constexpr, PAGE_SIZE: tl.constexpr, NUM_SPLITS: tl.constexpr,
            BLOCK_H: tl.constexpr, BLOCK_N: tl.constexpr):
    hg = tl.program_id(0)
    sp = tl.program_id(1)
    b = tl.program_id(2)

    seq_len = tl.load(LENGTHS + b)
    split_len = tl.cdiv(tl.cdiv(seq_len, NUM_SPLITS), BLOCK_N) * BLOCK_N
    start = sp * split_len
    end = tl.minimum(start + split_len, seq_len)
    if start >= end:                               # an empty trailing split: the merge skips it
        return

    heads = hg * BLOCK_H + tl.arange(0, BLOCK_H)
    h_ok = heads < H
    offs_c = tl.arange(0, LATENT)
    offs_r = tl.arange(0, ROPE)
    offs_n = tl.arange(0, BLOCK_N)

    q_row = Q + b.to(tl.int64) * stride_qb + heads[:, None] * stride_qh
    q_lat = tl.load(q_row + offs_c[None, :], mask=h_ok[:, None], other=0.0)       # padded heads: zero rows
    q_rope = tl.load(q_row + LATENT + offs_r[None, :], mask=h_ok[:, None], other=0.0)
    qk_scale = sm_scale * 1.4426950408889634       # log2(e): softmax with exp2
    pt_row = PAGE_TABLE + b.to(tl.int64) * stride_ptb

    m_i = tl.full([BLOCK_H], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_H], tl.float32)
    acc = tl.zeros([BLOCK_H, LATENT], tl.float32)
    for t0 in range(start, end, BLOCK_N):
        t = t0 + offs_n
        t_ok = t < end
        page = tl.load(pt_row + t // PAGE_SIZE, mask=t_ok, other=0).to(tl.int64)
        row = KV + page * stride_kvp + (t % PAGE_SIZE).to(tl.int64) * stride_kvt
        c = tl.load(row[:, None] + offs_c[None, :], mask=t_ok[:, None], other=0.0)          # [BLOCK_N, LATENT]
        kr = tl.load(row[:, None] + LATENT + offs_r[None, :], mask=t_ok[:, None], other=0.0)  # [BLOCK_N, ROPE]

        s = tl.dot(q_lat, tl.trans(c))
        s = tl.dot(q_rope, tl.trans(kr), s)
        s = tl.where(t_ok[None, :], s * qk_scale, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))      # finite: token t0 is always < end
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None] + tl.dot(p.to(c.dtype), c)       # the latent tile is the value too
        m_i = m_new

    out = acc / l_i[:, None]
    if NUM_SPLITS == 1:
        o_ptr = O + b.to(tl.int64) * stride_ob + heads[:, None] * stride_oh + offs_c[None, :]
        tl.store(o_ptr, out.to(O.dtype.element_ty), mask=h_ok[:, None])
    else:
        base = b.to(tl.int64) * stride_pb + heads * stride_ph + sp * stride_ps
        tl.store(O_PART + base[:, None] + offs_c[None, :], out, mask=h_ok[:, None])
        tl.store(LSE + b.to(tl.int64) * stride_lb + heads * stride_lh + sp, m_i + tl.log2(l_i), mask=h_ok)


@triton.jit
def _merge_kernel(O_PART, LSE, LENGTHS, O, stride_pb, stride_ph, stride_ps, stride_lb, stride_lh,
                  stride_ob, stride_oh, LATENT: tl.constexpr, NUM_SPLITS: tl.constexpr, BLOCK_N: tl.constexpr):
    h = tl.program_id(0)
    b = tl.program_id(1)
    seq_len = tl.load(LENGTHS + b)
    split_len = tl.cdiv(tl.cdiv(seq_len, NUM_SPLITS), BLOCK_N) * BLOCK_N
    live = tl.cdiv(seq_len, split_len)              # the splits stage 1 wrote (>= 1)
    offs_c = tl.arange(0, LATENT)
    part = O_PART + b.to(tl.int64) * stride_pb + h * stride_ph
    lse_row = LSE + b.to(tl.int64) * stride_lb + h * stride_lh

    m = tl.load(lse_row)
    acc = tl.load(part + offs_c)
    total = 1.0
    for sp in range(1, live):
        lse = tl.load(lse_row + sp)
        o = tl.load(part + sp * stride_ps + offs_c)
        m_new = tl.maximum(m, lse)
        old = tl.exp2(m - m_new)
        w = tl.exp2(lse - m_new)
        acc = acc * old + o * w
        total = total * old + w
        m = m_new
    tl.store(O + b.to(tl.int64) * stride_ob + h * stride_oh + offs_c, (acc / total).to(O.dtype.element_ty))


# ---------------------------------------------------------------- launcher
DTYPES = ("bf16", "fp16")
TUNABLES = ("BLOCK_H", "BLOCK_N", "NUM_SPLITS", "num_warps", "num_stages")
BASELINE = {"BLOCK_H": 64, "BLOCK_N": 16, "NUM_SPLITS": 4, "num_warps": 8, "num_stages": 2}
QK_HEAD_DIM = 192          # DeepSeek-V2/V3 qk_nope_head_dim 128 + qk_rope_head_dim 64: the softmax scale's dim

# DeepSeek-V3 (kv_lora_rank 512, rope 64, 128 heads) decode steps, 64-token pages, bf16. Each
# point moves 0.32-0.35 GB (the cache rows 0.31-0.34 GB: 6-7x the 50 MB L2): ~70 us at 4.8 TB/s;
# the 128-head points add 80-83 GFLOP of score / value dots (~0.1 ms at ~700 TFLOP/s dense bf16),
# so they sit at or past the ridge, while the 16-head point (9.5 GFLOP) is bandwidth-bound.
POINTS = [
    # TP1 (all 128 heads on one GPU), 64 sequences of 1-7k tokens: 128 (head group x sequence)
    # units at BLOCK_H 64 before any split; ~1 wave, so few splits, the heads packed 64 to a wgmma
    {"B": 64, "H": 128, "min_len": 1024, "max_len": 7168, "len_seed": 0, "PAGE": 64, "LATENT": 512, "ROPE": 64,
     "dtype": "bf16"},
    # TP8 (16 heads a GPU), a large batch of 256 short-context sequences: heads fill one 16-row
    # tile; BLOCK_H 32 / 64 only pad; 256 units, bandwidth-bound
    {"B": 256, "H": 16, "min_len": 256, "max_len": 1792, "len_seed": 0, "PAGE": 64, "LATENT": 512, "ROPE": 64,
     "dtype": "bf16"},
    # TP1, 8 long-context sequences (16k-48k tokens): 16 units at BLOCK_H 64, so the split
    # count decides how many of the 132 SMs stream the cache
    {"B": 8, "H": 128, "min_len": 16384, "max_len": 49152, "len_seed": 0, "PAGE": 64, "LATENT": 512, "ROPE": 64,
     "dtype": "bf16"},
]


def _torch_dtype(name: str):
    import torch
    try:
        return {"bf16": torch.bfloat16, "fp16": torch.float16}[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}") from None


def _pow2(v) -> bool:
    return v >= 1 and not v & (v - 1)


def _check_cfg(cfg) -> None:
    for name in ("BLOCK_H", "BLOCK_N"):
        v = cfg[name]
        if v < 16 or not _pow2(v):
            raise ValueError(f"{name}={v} must be a power of two >= 16 (a tl.dot operand side)")
    if cfg["NUM_SPLITS"] < 1:
        raise ValueError(f"NUM_SPLITS={cfg['NUM_SPLITS']} must be >= 1")


def _check_dims(latent: int, rope: int, page: int) -> None:
    for name, v in (("LATENT", latent), ("ROPE", rope)):
        if v < 16 or not _pow2(v):
            raise ValueError(f"{name}={v} must be a power of two >= 16 (a tl.dot reduction side)")
    if not _pow2(page):
        raise ValueError(f"PAGE={page} must be a power of two (tokens per page)")


@lru_cache(maxsize=32)
def _lengths_cached(B: int, lo: int, hi: int, seed: int):
    import torch
    if B < 1 or lo < 1 or hi < lo:
        raise ValueError(f"need B >= 1 and 1 <= min_len <= max_len; got B={B}, min_len={lo}, max_len={hi}")
    gen = torch.Generator().manual_seed(seed)
    return torch.randint(lo, hi + 1, (B,), generator=gen, dtype=torch.int64)


def seq_lengths(point):
    """The point's B context lengths (int64, CPU): uniform in min_len..max_len from a CPU
    generator seeded with len_seed (default 0): the same batch for every hook and input seed."""
    return _lengths_cached(int(point["B"]), int(point["min_len"]), int(point["max_len"]),
                           int(point.get("len_seed", 0))).clone()


def _split_len(n: int, splits: int, block_n: int) -> int:
    return -(-(-(-n // splits)) // block_n) * block_n


def split_tiles(n: int, cfg) -> list[int]:
    """BLOCK_N steps of each of the NUM_SPLITS splits of a sequence of n tokens (0: empty)."""
    bn, s = cfg["BLOCK_N"], cfg["NUM_SPLITS"]
    sl = _split_len(n, s, bn)
    return [max(0, -(-(min(n, (i + 1) * sl) - i * sl) // bn)) for i in range(s)]


def _kernel_args(q, kv_cache, page_table, lengths, o_part, lse, out, sm_scale: float, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    B, H, _ = q.shape
    latent = out.shape[2]
    return dict(Q=q, KV=kv_cache, PAGE_TABLE=page_table, LENGTHS=lengths, O_PART=o_part, LSE=lse, O=out,
                sm_scale=float(sm_scale), H=H, stride_qb=q.stride(0), stride_qh=q.stride(1),
                stride_kvp=kv_cache.stride(0), stride_kvt=kv_cache.stride(1), stride_ptb=page_table.stride(0),
                stride_pb=o_part.stride(0), stride_ph=o_part.stride(1), stride_ps=o_part.stride(2),
                stride_lb=lse.stride(0), stride_lh=lse.stride(1), stride_ob=out.stride(0), stride_oh=out.stride(1),
                LATENT=latent, ROPE=q.shape[2] - latent, PAGE_SIZE=kv_cache.shape[1],
                NUM_SPLITS=cfg["NUM_SPLITS"], BLOCK_H=cfg["BLOCK_H"], BLOCK_N=cfg["BLOCK_N"])


def _workspace(B: int, H: int, latent: int, splits: int, device):
    """o_part [B, H, S, LATENT] fp32 and lse [B, H, S] fp32 (S = NUM_SPLITS; with one split a
    [B, H, 1, 1] / [B, H, 1] stand-in the kernel never touches)."""
    import torch
    if splits == 1:
        return (torch.empty((B, H, 1, 1), dtype=torch.float32, device=device),
                torch.empty((B, H, 1), dtype=torch.float32, device=device))
    return (torch.empty((B, H, splits, latent), dtype=torch.float32, device=device),
            torch.empty((B, H, splits), dtype=torch.float32, device=device))


def mla_decode(q, kv_cache, page_table, lengths, latent: int = 512, sm_scale: float | None = None, *, out=None,
               BLOCK_H: int = 64, BLOCK_N: int = 16, NUM_SPLITS: int = 4, num_warps: int = 8, num_stages: int = 2):
    """Absorbed-MLA decode. q [B, H, latent + rope] (latent query, then rope query; unit last
    stride), kv_cache [num_pages, PAGE_SIZE, latent + rope] (same dtype, bf16 / fp16, unit
    last stride), page_table int32 [B, max_pages], lengths int32 [B] (each in 1..max_pages *
    PAGE_SIZE: not checked, that would sync). Returns [B, H, latent] in q's dtype (into `out`
    if given: that shape and dtype, unit last stride)."""
    import torch
    if q.dim() != 3 or kv_cache.dim() != 3 or q.shape[2] != kv_cache.shape[2]:
        raise ValueError(f"expected q [B, H, latent + rope] and kv_cache [num_pages, PAGE_SIZE, latent + rope]; "
                         f"got {tuple(q.shape)}, {tuple(kv_cache.shape)}")
    if q.dtype != kv_cache.dtype or q.dtype not in (torch.bfloat16, torch.float16):
        raise ValueError(f"q and kv_cache must share one bf16 / fp16 dtype; got {q.dtype}, {kv_cache.dtype}")
    B, H, dim = q.shape
    _check_dims(latent, dim - latent, kv_cache.shape[1])
    for name, t, shape in (("page_table", page_table, (B, page_table.shape[-1])), ("lengths", lengths, (B,))):
        if t.dtype != torch.int32 or tuple(t.shape) != shape:
            raise ValueError(f"{name} must be int32 {list(shape)}; got {t.dtype} {list(t.shape)}")
    cfg = {"BLOCK_H": BLOCK_H, "BLOCK_N": BLOCK_N, "NUM_SPLITS": NUM_SPLITS}
    _check_cfg(cfg)
    if q.stride(2) != 1:
        q = q.contiguous()
    if kv_cache.stride(2) != 1:
        kv_cache = kv_cache.contiguous()
    page_table = page_table.contiguous()
    if sm_scale is None:
        sm_scale = QK_HEAD_DIM ** -0.5
    if out is None:
        out = torch.empty((B, H, latent), dtype=q.dtype, device=q.device)
    elif tuple(out.shape) != (B, H, latent) or out.dtype != q.dtype or out.stride(2) != 1:
        raise ValueError(f"out must be {q.dtype} [{B}, {H}, {latent}] with unit last stride; got {out.dtype} "
                         f"{tuple(out.shape)} strides {out.stride()}")
    o_part, lse = _workspace(B, H, latent, NUM_SPLITS, q.device)
    args = _kernel_args(q, kv_cache, page_table, lengths, o_part, lse, out, sm_scale, cfg)
    _kernel[(triton.cdiv(H, BLOCK_H), NUM_SPLITS, B)](**args, num_warps=num_warps, num_stages=num_stages)
    if NUM_SPLITS > 1:
        _merge_kernel[(H, B)](o_part, lse, lengths, out, o_part.stride(0), o_part.stride(1), o_part.stride(2),
                              lse.stride(0), lse.stride(1), out.stride(0), out.stride(1), LATENT=latent,
                              NUM_SPLITS=NUM_SPLITS, BLOCK_N=BLOCK_N, num_warps=MERGE_WARPS, num_stages=1)
    return out


def _pages(point) -> tuple[list[int], int]:
    """Pages of each sequence, and the page table's width (pages of the longest allowed)."""
    page = point["PAGE"]
    return [-(-n // page) for n in seq_lengths(point).tolist()], -(-point["max_len"] // page)


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """q, cache ~ N(0, 1) (drawn on the CPU for `seed`, then moved); each sequence's pages a
    random subset of the pool (every page used once, scattered); page-table entries past a
    sequence's last page are -1 (never read)."""
    import torch
    dt = _torch_dtype(point.get("dtype", "bf16"))
    B, H, page, latent, rope = (point[k] for k in ("B", "H", "PAGE", "LATENT", "ROPE"))
    _check_dims(latent, rope, page)
    lens = seq_lengths(point)
    per_seq, width = _pages(point)
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn((B, H, latent + rope), generator=gen).to(dt)
    kv = torch.randn((sum(per_seq), page, latent + rope), generator=gen).to(dt)
    perm = torch.randperm(sum(per_seq), generator=gen).to(torch.int32)
    table = torch.full((B, width), -1, dtype=torch.int32)
    at = 0
    for b, n in enumerate(per_seq):
        table[b, :n] = perm[at:at + n]
        at += n
    return {"q": q.to(device), "kv_cache": kv.to(device), "page_table": table.to(device),
            "lengths": lens.to(torch.int32).to(device), "latent": latent, "sm_scale": QK_HEAD_DIM ** -0.5}


def launch(inputs, cfg):
    return mla_decode(inputs["q"], inputs["kv_cache"], inputs["page_table"], inputs["lengths"], inputs["latent"],
                      inputs["sm_scale"], BLOCK_H=cfg["BLOCK_H"], BLOCK_N=cfg["BLOCK_N"],
                      NUM_SPLITS=cfg["NUM_SPLITS"], num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])


def _attend(inputs, dtype):
    """Gather each sequence's cache rows, scores over the full 576 dims, softmax, @ latent;
    in fp32 (dtype None) or in the inputs' dtype."""
    import torch
    q, kv, table, lens = inputs["q"], inputs["kv_cache"], inputs["page_table"], inputs["lengths"]
    latent, scale = inputs["latent"], inputs["sm_scale"]
    B, H, _ = q.shape
    page = kv.shape[1]
    out = torch.empty((B, H, latent), dtype=torch.float32 if dtype is None else dtype, device=q.device)
    for b, n in enumerate(lens.tolist()):
        pages = table[b, :-(-n // page)].long()
        rows = kv[pages].flatten(0, 1)[:n]                        # [n, latent + rope]
        qq = q[b]
        if dtype is None:
            rows, qq = rows.float(), qq.float()
        s = (qq @ rows.T) * scale                                  # [H, n]
        out[b] = torch.softmax(s.float(), -1).to(rows.dtype) @ rows[:, :latent]
    return out


def reference(inputs):
    return _attend(inputs, None)


def torch_baseline(inputs):
    """Eager torch in the inputs' dtype, one sequence at a time (gather, matmul, softmax, matmul)."""
    return _attend(inputs, inputs["q"].dtype)


def bytes_moved(point) -> int:
    """Each sequence's cache rows (latent + rope) read once for all its heads, q read and out
    written once, the page-table entries used and lengths read once. The split workspace
    (B x H x NUM_SPLITS x (LATENT + 1) fp32, written by stage 1 and read by the merge) is not
    counted: it depends on the config and is not unavoidable (NUM_SPLITS 1 has none)."""
    el = _torch_dtype(point.get("dtype", "bf16")).itemsize
    B, H, latent, rope = point["B"], point["H"], point["LATENT"], point["ROPE"]
    per_seq, _ = _pages(point)
    tokens = int(seq_lengths(point).sum())
    return el * (tokens * (latent + rope) + B * H * (2 * latent + rope)) + 4 * sum(per_seq) + 4 * B


def flops(point) -> int:
    """Per (head, token): the score dot over LATENT + ROPE and the value dot over LATENT, 2 flops
    a multiply-add (padded heads not counted)."""
    tokens = int(seq_lengths(point).sum())
    return 2 * point["H"] * tokens * (2 * point["LATENT"] + point["ROPE"])


def grid(cfg, point) -> tuple[int, int, int]:
    """The launch grid of `_kernel`: (head groups, NUM_SPLITS, B)."""
    return triton.cdiv(point["H"], cfg["BLOCK_H"]), cfg["NUM_SPLITS"], point["B"]


def cta_iterations(cfg, point) -> list[int]:
    """BLOCK_N steps of each CTA in launch order (head group fastest, then split, then
    sequence); 0 for an empty trailing split (it returns at once)."""
    groups = triton.cdiv(point["H"], cfg["BLOCK_H"])
    return [it for n in seq_lengths(point).tolist() for it in split_tiles(n, cfg) for _ in range(groups)]


def loop_iterations(cfg, point) -> int:
    """BLOCK_N steps per CTA: the mean over the grid's CTAs (empty splits included), rounded up."""
    its = cta_iterations(cfg, point)
    return -(-sum(its) // len(its))


def secondary_kernels(cfg, point) -> list[dict]:
    """`_merge_kernel` when NUM_SPLITS > 1: one CTA (4 warps) per (sequence, head), each step one
    split's fp32 [LATENT] row and its lse (read back from what stage 1 just wrote: dram_bytes 0,
    as bytes_moved leaves the workspace out); iterations: the mean count of non-empty splits."""
    if cfg["NUM_SPLITS"] == 1:
        return []
    lens = seq_lengths(point).tolist()
    live = sum(sum(1 for it in split_tiles(n, cfg) if it) for n in lens)
    return [{"name": "_merge_kernel", "grid": point["B"] * point["H"], "iterations": -(-live // len(lens)),
             "tile_bytes": 4 * point["LATENT"] + 4, "dram_bytes": 0, "ahead": 0, "blocks_per_sm": 16}]


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`: tensors on the meta device, except
    lengths (the point's own, on the CPU: its values are read one per sequence at a program-id
    offset, so the ragged split sizes are visible)."""
    import torch
    dt = _torch_dtype(point.get("dtype", "bf16"))
    B, H, page, latent, rope = (point[k] for k in ("B", "H", "PAGE", "LATENT", "ROPE"))
    _check_dims(latent, rope, page)
    _check_cfg(cfg)
    per_seq, width = _pages(point)
    q = torch.empty((B, H, latent + rope), dtype=dt, device="meta")
    kv = torch.empty((sum(per_seq), page, latent + rope), dtype=dt, device="meta")
    table = torch.empty((B, width), dtype=torch.int32, device="meta")
    lens = seq_lengths(point).to(torch.int32)
    out = torch.empty((B, H, latent), dtype=dt, device="meta")
    o_part, lse = _workspace(B, H, latent, cfg["NUM_SPLITS"], "meta")
    return _kernel_args(q, kv, table, lens, o_part, lse, out, QK_HEAD_DIM ** -0.5, cfg)
