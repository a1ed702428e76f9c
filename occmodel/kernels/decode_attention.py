"""MLA decode attention over a paged latent KV cache, split along the context.

The shape DeepSeek models are served with: every sequence of the batch brings
one new query token for ``NUM_HEADS`` heads (16 per tensor-parallel rank); all
heads attend to one shared *latent* cache whose rows are ``D_LATENT`` (512)
latent values followed by ``D_ROPE`` (64) rotary values. Keys are the whole
576-wide row; values are the 512 latent columns of the same row (MLA's weight
absorption). The cache is paged as in vLLM/SGLang: ``kv_cache[page, slot, :]``,
and ``block_table[seq, i]`` names the page that holds tokens
``i*PAGE_SIZE .. (i+1)*PAGE_SIZE-1`` of a sequence.

Two kernels: ``_kernel`` (split-KV, one CTA per sequence x head group x split,
writing a normalized partial output and its log-sum-exp) and ``_combine_kernel``
(merges the splits). Only ``_kernel`` matters for occupancy; the card models it.

Why the page lookup sits in an ``if`` (the pipelining story)
-------------------------------------------------------------
Triton's software pipeliner (``AssignLatencies``) walks back from each
``tl.dot`` through the ops of the loop body and gives every pipelinable load it
meets an *indirection level*: 0 for a load feeding the dot, 1 for a load that
feeds the address of a level-0 load, and so on. Loads at level >= S-1 are
dropped, and the remaining ones get latency ``(S-1) // (max_level+1)``; the
operand ring of a pipelined dot load is that latency deep (on mma.sync). A
block-table lookup done in the loop body (as a vector of per-token page ids or
as a scalar) is such a level-1 load, so the KV tile gets latency
``(S-1)//2``: one buffer for num_stages 2, 3 *and* 4 -- num_stages is a no-op
(37,376 B on sm_120 at BLOCK_T=BLOCK_H=16, S=2..4; see
``decode_attention_nopipe``). Here the page id is looked up only when the tile
crosses into a new page, inside ``if t0 % PAGE_SIZE == 0``: that load lives in
the ``scf.if`` region, not in the loop body, the pipeliner's walk does not
enter regions, and the KV loads become level 0 with latency S-1. Shared memory
then grows by one KV tile (BLOCK_T x 576 x 2 B = 18,432 B at BLOCK_T=16) per
stage. It also reads the block table once per page instead of once per token.
The price: a tile must not straddle pages, so PAGE_SIZE % BLOCK_T == 0.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

import sympy
import triton
import triton.language as tl

from ..card import Config, KernelCard, Param
from ..errors import ConfigError

LOG2E = 1.4426950408889634


# ---------------------------------------------------------------- kernels
@triton.jit(do_not_specialize=["stride_bt"])
def _kernel(Q, KV, BLOCK_TABLE, SEQ_LENS, O_PART, LSE_PART,
            sm_scale,
            stride_qb, stride_qh, stride_kv, stride_bt,
            stride_ob, stride_oh, stride_os, stride_lb, stride_lh,
            tokens_per_split,
            NUM_HEADS: tl.constexpr, D_LATENT: tl.constexpr, D_ROPE: tl.constexpr,
            PAGE_SIZE: tl.constexpr, BLOCK_T: tl.constexpr, BLOCK_H: tl.constexpr):
    seq = tl.program_id(0)
    head_group = tl.program_id(1)
    split = tl.program_id(2)

    heads = head_group * BLOCK_H + tl.arange(0, BLOCK_H)
    head_ok = heads < NUM_HEADS
    d_lat = tl.arange(0, D_LATENT)
    d_rope = tl.arange(0, D_ROPE)

    # The query tile, latent and rope parts; loop invariant.
    q_row = Q + seq * stride_qb + heads[:, None] * stride_qh
    q_lat = tl.load(q_row + d_lat[None, :], mask=head_ok[:, None], other=0.0)
    q_rope = tl.load(q_row + D_LATENT + d_rope[None, :], mask=head_ok[:, None], other=0.0)

    seq_len = tl.load(SEQ_LENS + seq)
    start = split * tokens_per_split
    end = tl.minimum(start + tokens_per_split, seq_len)
    qk_scale = sm_scale * 1.4426950408889634  # scores in log2 units: exp2 below

    m_i = tl.full([BLOCK_H], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_H], tl.float32)
    acc = tl.zeros([BLOCK_H, D_LATENT], tl.float32)

    bt_row = BLOCK_TABLE + seq * stride_bt
    page = tl.load(bt_row + start // PAGE_SIZE).to(tl.int64)
    for t0 in range(start, end, BLOCK_T):
        # New page: look it up (inside an `if`, so the pipeliner does not count
        # it as an indirection level of the KV loads; see the module doc).
        if t0 % PAGE_SIZE == 0:
            page = tl.load(bt_row + t0 // PAGE_SIZE).to(tl.int64)
        offs_t = tl.arange(0, BLOCK_T)
        t_ok = (t0 + offs_t) < end
        rows = page * PAGE_SIZE + (t0 % PAGE_SIZE) + offs_t          # cache rows, contiguous
        kv_row = KV + rows[:, None] * stride_kv
        k_lat = tl.load(kv_row + d_lat[None, :], mask=t_ok[:, None], other=0.0)            # [T, 512], also V
        k_rope = tl.load(kv_row + D_LATENT + d_rope[None, :], mask=t_ok[:, None], other=0.0)  # [T, 64]

        scores = tl.dot(q_lat, tl.trans(k_lat))
        scores = tl.dot(q_rope, tl.trans(k_rope), scores)
        scores = tl.where(t_ok[None, :], scores * qk_scale, float("-inf"))

        m_new = tl.maximum(m_i, tl.max(scores, 1))
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(scores - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None] + tl.dot(p.to(k_lat.dtype), k_lat)
        m_i = m_new

    has = l_i > 0.0
    out = tl.where(has[:, None], acc / tl.where(has, l_i, 1.0)[:, None], 0.0)
    lse = tl.where(has, m_i + tl.log2(tl.where(has, l_i, 1.0)), float("-inf"))
    o_ptr = O_PART + seq * stride_ob + heads[:, None] * stride_oh + split * stride_os + d_lat[None, :]
    tl.store(o_ptr, out, mask=head_ok[:, None])
    tl.store(LSE_PART + seq * stride_lb + heads * stride_lh + split, lse, mask=head_ok)


@triton.jit
def _combine_kernel(O_PART, LSE_PART, OUT, num_splits,
                    stride_ob, stride_oh, stride_os, stride_lb, stride_lh,
                    stride_outb, stride_outh,
                    D_LATENT: tl.constexpr):
    seq = tl.program_id(0)
    head = tl.program_id(1)
    d = tl.arange(0, D_LATENT)
    m = -1.0e30          # finite: an empty split (lse = -inf) then weighs exp2(-inf) = 0
    weight = 0.0
    acc = tl.zeros([D_LATENT], tl.float32)
    for s in range(0, num_splits):
        lse = tl.load(LSE_PART + seq * stride_lb + head * stride_lh + s)
        part = tl.load(O_PART + seq * stride_ob + head * stride_oh + s * stride_os + d)
        m_new = tl.maximum(m, lse)
        alpha = tl.exp2(m - m_new)
        w = tl.exp2(lse - m_new)
        acc = acc * alpha + w * part
        weight = weight * alpha + w
        m = m_new
    tl.store(OUT + seq * stride_outb + head * stride_outh + d, (acc / weight).to(OUT.dtype.element_ty))


# ---------------------------------------------------------------- launcher
def num_splits(batch: int, num_heads: int, max_ctx: int, block_t: int, block_h: int,
               target_ctas: int) -> tuple[int, int]:
    """(splits, tokens_per_split) for a launch: enough splits that
    batch x head_groups x splits reaches TARGET_CTAS, at most one per BLOCK_T
    tile; tokens_per_split is a multiple of BLOCK_T and no split of the
    longest sequence is empty."""
    head_groups = -(-num_heads // block_h)
    tiles = max(1, -(-max_ctx // block_t))
    splits = min(max(1, -(-target_ctas // (batch * head_groups))), tiles)
    tokens_per_split = -(-tiles // splits) * block_t
    splits = max(1, -(-max_ctx // tokens_per_split))
    return splits, tokens_per_split


def decode_attention(q, kv_cache, block_table, seq_lens, sm_scale: float | None = None, *,
                     BLOCK_T: int = 16, BLOCK_H: int = 16, num_warps: int = 4, num_stages: int = 2,
                     target_ctas: int = 512, max_seq_len: int | None = None):
    """out[b, h, :] = softmax(q[b, h] . K_b^T * sm_scale) . V_b for one decode step.

    q:           [B, H, D_LATENT + D_ROPE]           bf16 or fp16
    kv_cache:    [num_pages, PAGE_SIZE, D_LATENT + D_ROPE], same dtype, contiguous
    block_table: [B, max_pages] int32 (page ids; pages beyond a sequence are ignored)
    seq_lens:    [B] int32, each >= 1
    Returns [B, H, D_LATENT] in q's dtype. D_LATENT is taken as 512 unless the
    row is not 576 wide, then D_ROPE = 64 and D_LATENT = width - 64.
    """
    import torch

    if q.dim() != 3 or kv_cache.dim() != 3 or block_table.dim() != 2 or seq_lens.dim() != 1:
        raise ValueError("expected q [B,H,D], kv_cache [pages,PAGE_SIZE,D], block_table [B,P], seq_lens [B]; "
                         f"got {tuple(q.shape)}, {tuple(kv_cache.shape)}, {tuple(block_table.shape)}, "
                         f"{tuple(seq_lens.shape)}")
    batch, num_heads, width = q.shape
    page_size = kv_cache.shape[1]
    d_rope = 64
    d_latent = width - d_rope
    if kv_cache.shape[2] != width:
        raise ValueError(f"kv_cache rows are {kv_cache.shape[2]} wide, q rows {width}")
    if d_latent <= 0 or d_latent & (d_latent - 1):
        raise ValueError(f"latent width {d_latent} (= {width} - {d_rope}) must be a power of two")
    if block_table.shape[0] != batch or seq_lens.shape[0] != batch:
        raise ValueError(f"block_table has {block_table.shape[0]} rows and seq_lens {seq_lens.shape[0]}; "
                         f"q has batch {batch}")
    if q.dtype not in (torch.bfloat16, torch.float16) or kv_cache.dtype != q.dtype:
        raise ValueError(f"q and kv_cache must both be bf16 or fp16; got {q.dtype}, {kv_cache.dtype}")
    if block_table.dtype != torch.int32 or seq_lens.dtype != torch.int32:
        raise ValueError("block_table and seq_lens must be int32")
    if page_size % BLOCK_T:
        raise ValueError(f"PAGE_SIZE={page_size} must be a multiple of BLOCK_T={BLOCK_T}")
    if not kv_cache.is_contiguous():
        raise ValueError("kv_cache must be contiguous (pages of PAGE_SIZE rows)")
    q = q.contiguous()
    if max_seq_len is None:
        max_seq_len = int(seq_lens.max().item())
    if sm_scale is None:
        sm_scale = 1.0 / math.sqrt(width)

    splits, tokens_per_split = num_splits(batch, num_heads, max_seq_len, BLOCK_T, BLOCK_H, target_ctas)
    head_groups = -(-num_heads // BLOCK_H)
    dev = q.device
    o_part = torch.empty((batch, num_heads, splits, d_latent), dtype=torch.float32, device=dev)
    lse_pad = -(-splits // 16) * 16            # keeps the lse strides multiples of 16
    lse_part = torch.empty((batch, num_heads, lse_pad), dtype=torch.float32, device=dev)
    out = torch.empty((batch, num_heads, d_latent), dtype=q.dtype, device=dev)

    _kernel[(batch, head_groups, splits)](
        q, kv_cache, block_table, seq_lens, o_part, lse_part, sm_scale,
        q.stride(0), q.stride(1), kv_cache.stride(1), block_table.stride(0),
        o_part.stride(0), o_part.stride(1), o_part.stride(2), lse_part.stride(0), lse_part.stride(1),
        tokens_per_split,
        NUM_HEADS=num_heads, D_LATENT=d_latent, D_ROPE=d_rope, PAGE_SIZE=page_size,
        BLOCK_T=BLOCK_T, BLOCK_H=BLOCK_H, num_warps=num_warps, num_stages=num_stages)
    _combine_kernel[(batch, num_heads)](
        o_part, lse_part, out, splits,
        o_part.stride(0), o_part.stride(1), o_part.stride(2), lse_part.stride(0), lse_part.stride(1),
        out.stride(0), out.stride(1), D_LATENT=d_latent, num_warps=4)
    return out


def reference(q, kv_cache, block_table, seq_lens, sm_scale: float | None = None, d_rope: int = 64):
    """The same computation in float32 torch, one sequence at a time."""
    import torch

    batch, num_heads, width = q.shape
    page_size = kv_cache.shape[1]
    d_latent = width - d_rope
    if sm_scale is None:
        sm_scale = 1.0 / math.sqrt(width)
    out = torch.empty((batch, num_heads, d_latent), dtype=torch.float32, device=q.device)
    for b in range(batch):
        n = int(seq_lens[b])
        pages = block_table[b, : -(-n // page_size)].long()
        rows = kv_cache[pages].reshape(-1, width)[:n].float()    # [n, 576] gathered through the table
        keys, values = rows, rows[:, :d_latent]
        scores = (q[b].float() @ keys.T) * sm_scale                # [H, n]
        out[b] = torch.softmax(scores, dim=-1) @ values           # [H, 512]
    return out


# ---------------------------------------------------------------- the card
def _ceil(a, b):
    return -(-a // b)


class DecodeAttentionCard(KernelCard):
    """Card of ``_kernel`` (the split-KV stage; the combine kernel is small)."""

    # ----- model
    def _kv_buffers(self, cc: tuple[int, int], S: sympy.Symbol) -> sympy.Expr:
        # Depth of the KV operand ring: the loads have latency S-1 (level 0,
        # see the module doc), and a mma.sync operand ring is latency deep.
        # No pipelining at S=1 (the S1 branch of shared_memory).
        return sympy.Max(1, S - 1)

    def shared_memory(self, cc: tuple[int, int], cfg: Config) -> sympy.Expr:
        s = self.symbols()
        T, Hb, S, W = s["BLOCK_T"], s["BLOCK_H"], s["num_stages"], s["num_warps"]
        DL, DR = s["D_LATENT"], s["D_ROPE"]
        e = 2  # bf16 / fp16
        q_tiles = Hb * (DL + DR) * e                      # q_lat + q_rope, kept in shared across the loop
        kv_tile = T * (DL + DR) * e                       # k_lat + k_rope of one step
        p_tile = Hb * T * e                               # P goes through shared on its way to the P.V dot
        pipelined = q_tiles + self._kv_buffers(cc, S) * kv_tile + p_tile
        return sympy.Piecewise((self._unpipelined(cc, cfg), sympy.Eq(S, 1)), (pipelined, True))

    def _unpipelined(self, cc, cfg) -> sympy.Expr:
        raise NotImplementedError  # filled in below, once measured

    def registers(self, cc: tuple[int, int], cfg: Config) -> sympy.Expr:
        raise NotImplementedError

    # ----- compile
    def signature(self, cfg: Config) -> dict[str, str]:
        t = cfg["dtype"]
        return {
            "Q": f"*{t}:16", "KV": f"*{t}:16", "BLOCK_TABLE": "*i32:16", "SEQ_LENS": "*i32:16",
            "O_PART": "*fp32:16", "LSE_PART": "*fp32:16", "sm_scale": "fp32",
            "stride_qb": "i32:16", "stride_qh": "i32:16", "stride_kv": "i32:16", "stride_bt": "i32",
            "stride_ob": "i32:16", "stride_oh": "i32:16", "stride_os": "i32:16",
            "stride_lb": "i32:16", "stride_lh": "i32:16", "tokens_per_split": "i32:16",
        }

    def constexprs(self, cfg: Config) -> dict[str, Any]:
        return {k: cfg[k] for k in ("NUM_HEADS", "D_LATENT", "D_ROPE", "PAGE_SIZE", "BLOCK_T", "BLOCK_H")}
