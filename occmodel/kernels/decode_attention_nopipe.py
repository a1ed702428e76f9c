"""``decode_attention`` with the usual per-token page lookup -- and why num_stages
then does nothing.

The split-KV stage below differs from :mod:`.decode_attention` in one line: the
page of every token of a tile is looked up in the loop body, as a vector
(``block_table[seq, t // PAGE_SIZE]`` for the BLOCK_T tokens), which is how the
paged decode kernels of the serving engines do it and lets a tile straddle pages.

Triton's pipeliner (``AssignLatencies``) sees that block-table load feeding the
addresses of the KV loads and ranks it one *indirection level* above them. Loads at
level >= num_stages - 1 are dropped, and the rest get latency
``(num_stages - 1) // (max_level + 1)``:

  num_stages 2: the table load is dropped, the KV loads get latency 1;
  num_stages 3: both are pipelined, latency 2 // 2 = 1;
  num_stages 4: latency 3 // 2 = 1.

So the KV ring is one tile deep for num_stages 2, 3 and 4 (5 would give 2):
shared memory stays flat -- 37,376 B at S=2 and 37,504 B at S=3 and 4 on sm_120 for
BLOCK_T = BLOCK_H = 16 (the extra bytes are the page-id vector, staged in shared
memory once per layout that consumes it) -- and a premise "num_stages=3 prefetches
deeper and hides the gather latency" is refuted before anything runs: the
mechanism does not happen. Kept as a card for exactly that lesson.
"""

from __future__ import annotations

from .._lazy import sympy
import triton
import triton.language as tl

from ..card import Config
from .decode_attention import (
    PARAMS,
    SPECIALIZATION,
    WORKLOAD,
    DecodeAttentionCard,
    _launch,
)


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
    q_row = Q + seq * stride_qb + heads[:, None] * stride_qh
    q_lat = tl.load(q_row + d_lat[None, :], mask=head_ok[:, None], other=0.0)
    q_rope = tl.load(q_row + D_LATENT + d_rope[None, :], mask=head_ok[:, None], other=0.0)

    seq_len = tl.load(SEQ_LENS + seq)
    start = split * tokens_per_split
    end = tl.minimum(start + tokens_per_split, seq_len)
    qk_scale = sm_scale * 1.4426950408889634

    m_i = tl.full([BLOCK_H], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_H], tl.float32)
    acc = tl.zeros([BLOCK_H, D_LATENT], tl.float32)
    bt_row = BLOCK_TABLE + seq * stride_bt
    for t0 in range(start, end, BLOCK_T):
        tok = t0 + tl.arange(0, BLOCK_T)
        t_ok = tok < end
        page = tl.load(bt_row + tok // PAGE_SIZE, mask=t_ok, other=0).to(tl.int64)   # per token: indirect
        rows = page * PAGE_SIZE + tok % PAGE_SIZE
        kv_row = KV + rows[:, None] * stride_kv
        k_lat = tl.load(kv_row + d_lat[None, :], mask=t_ok[:, None], other=0.0)
        k_rope = tl.load(kv_row + D_LATENT + d_rope[None, :], mask=t_ok[:, None], other=0.0)

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


def decode_attention_nopipe(q, kv_cache, block_table, seq_lens, sm_scale: float | None = None, *,
                            BLOCK_T: int = 16, BLOCK_H: int = 16, num_warps: int = 4, num_stages: int = 2,
                            target_ctas: int = 512, max_seq_len: int | None = None, d_rope: int = 64):
    """:func:`.decode_attention.decode_attention` through this module's kernel (same
    arguments and result; BLOCK_T need not divide the page size)."""
    return _launch(_kernel, False, q, kv_cache, block_table, seq_lens, sm_scale, BLOCK_T=BLOCK_T,
                   BLOCK_H=BLOCK_H, num_warps=num_warps, num_stages=num_stages, target_ctas=target_ctas,
                   max_seq_len=max_seq_len, d_rope=d_rope)


class NoPipeDecodeCard(DecodeAttentionCard):
    """Same inputs and reference as ``decode_attention``; its own kernel and ring depth."""

    tiles_within_pages = False

    def kv_ring_depth(self, cc: tuple[int, int]) -> sympy.Expr:
        """KV tiles resident when num_stages >= 2: latency (S-1) // 2, at least 1."""
        S = self.symbols()["num_stages"]
        return sympy.Max(1, sympy.floor((S - 1) / 2))

    def check(self, cfg: Config) -> None:
        pass                       # per-token lookups: a tile may straddle pages

    def extra_loop_bytes(self, cc: tuple[int, int]) -> sympy.Expr:
        """The page-id vector once it is pipelined too (S >= 3): BLOCK_T int32 per ring
        slot, staged once for each layout that consumes it: the k_lat and k_rope
        address tensors (two layouts; one when BLOCK_T >= 32 x num_warps, where the
        two row distributions coincide -- measured, sm_80..sm_120)."""
        s = self.symbols()
        T, S, W = s["BLOCK_T"], s["num_stages"], s["num_warps"]
        layouts = sympy.Piecewise((1, T >= 32 * W), (2, True))
        return sympy.Piecewise((layouts * self.kv_ring_depth(cc) * T * 4, S >= 3), (0, True))


CARD = NoPipeDecodeCard(
    name="decode_attention_nopipe",
    summary="decode_attention with per-token page lookups in the loop body: the KV loads become "
            "indirect for Triton's pipeliner and num_stages 2-4 all give a one-tile KV ring",
    params=PARAMS,
    baseline={"BLOCK_T": 16, "BLOCK_H": 16, "num_warps": 4, "num_stages": 2, "TARGET_CTAS": 512},
    kernel=_kernel,
    pipelined_loads=("k_lat/k_rope tiles of the paged cache, but only (num_stages-1)//2 deep: the per-token "
                     "block-table load in the loop body is an indirection level above them "
                     "(AssignLatencies: latency = (S-1) // (levels+1)); it is itself pipelined from "
                     "num_stages=3 on. So num_stages 2, 3 and 4 all keep one KV tile in flight."),
    specialization=SPECIALIZATION,
    workload_params=WORKLOAD,
    default_points=tuple({"C": c, "ctx": n} for n in (4096, 8192) for c in (1, 8, 48, 64, 96)),
    throughput_unit="tokens/s",
)
