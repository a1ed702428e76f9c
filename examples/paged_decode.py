"""Single-token decode attention over a paged KV cache (vLLM-style), a bare @triton.jit
kernel + its launcher.

    out[b, h] = softmax(q[b, h] . K[b, :, h // G]^T * D^-1/2) @ V[b, :, h // G]

q, out: [B, H, D]; k_cache, v_cache: [num_blocks, PAGE, Hkv, D] (fp16 / bf16); the keys
of sequence b, token t live at page block_table[b, t // PAGE], slot t % PAGE
(block_table [B, max_pages] int32); seq_lens [B] int32 (>= 1). GQA: H = Hkv * G.

One CTA per (kv head, batch) serves the G query heads that share that kv head, as a
[G_P2, D] tile kept in registers, and walks the sequence in BLOCK_N-token chunks: a
chunk gathers its token rows through the block table (it may span several pages, or
part of one), scores with one tl.dot, online softmax in fp32 (exp2, running max and
sum), and a second tl.dot adds P @ V. Why tl.dot with G padded to G_P2 = max(16,
next_pow2(G)) rows rather than elementwise math: the elementwise form needs a
[G, BLOCK_N, D] product in registers (8 x 64 x 128 fp32 = 256 KiB per CTA), while
the padded dot runs on the tensor cores from a [BLOCK_N, D] tile; the wasted rows
(4x at G = 4) cost nothing in a kernel bound by the KV stream. Each K/V byte of a
kv head is read once for all G heads.

Tunables: BLOCK_N (a power of two >= 16), num_warps, num_stages. The K/V addresses hang
off the block-table load, so Triton 3.9 prefetches K/V one chunk ahead into a single
buffer at any num_stages >= 2; 3 and 4 only move the page-index load a chunk earlier.
Problem parameters (a workload point): B, H, Hkv, D, ctx (every seq_len), PAGE, dtype.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _kernel(Q, K_cache, V_cache, O, block_table, seq_lens, sm_scale,
            stride_qb, stride_qh, stride_kp, stride_ks, stride_kh, stride_vp, stride_vs, stride_vh,
            stride_ob, stride_oh, stride_bt,
            G: tl.constexpr, G_P2: tl.constexpr, HEAD_DIM: tl.constexpr, PAGE: tl.constexpr,
            BLOCK_N: tl.constexpr):
    kvh = tl.program_id(0)
    b = tl.program_id(1)
    offs_g = tl.arange(0, G_P2)
    offs_d = tl.arange(0, HEAD_DIM)
    offs_n = tl.arange(0, BLOCK_N)
    g_ok = offs_g < G
    heads = kvh * G + offs_g

    q_ptr = Q + b.to(tl.int64) * stride_qb + heads[:, None] * stride_qh + offs_d[None, :]
    q = tl.load(q_ptr, mask=g_ok[:, None], other=0.0)     # padded heads: zero rows, finite scores
    qk_scale = sm_scale * 1.4426950408889634              # log2(e): softmax with exp2
    seq_len = tl.load(seq_lens + b)
    bt_row = block_table + b.to(tl.int64) * stride_bt
    k_head = K_cache + kvh * stride_kh
    v_head = V_cache + kvh * stride_vh

    m_i = tl.full([G_P2], float("-inf"), tl.float32)
    l_i = tl.zeros([G_P2], tl.float32)
    acc = tl.zeros([G_P2, HEAD_DIM], tl.float32)
    for start in range(0, seq_len, BLOCK_N):
        t = start + offs_n
        t_ok = t < seq_len
        page = tl.load(bt_row + t // PAGE, mask=t_ok, other=0).to(tl.int64)
        slot = t % PAGE
        k = tl.load(k_head + (page * stride_kp + slot * stride_ks)[:, None] + offs_d[None, :],
                    mask=t_ok[:, None], other=0.0)
        v = tl.load(v_head + (page * stride_vp + slot * stride_vs)[:, None] + offs_d[None, :],
                    mask=t_ok[:, None], other=0.0)

        s = tl.dot(q, tl.trans(k)) * qk_scale
        s = tl.where(t_ok[None, :], s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))              # finite: token `start` is always valid
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new

    out = acc / l_i[:, None]
    o_ptr = O + b.to(tl.int64) * stride_ob + heads[:, None] * stride_oh + offs_d[None, :]
    tl.store(o_ptr, out.to(O.dtype.element_ty), mask=g_ok[:, None])


# ---------------------------------------------------------------- launcher
DTYPES = ("fp16", "bf16")
TUNABLES = ("BLOCK_N", "num_warps", "num_stages")
BASELINE = {"BLOCK_N": 64, "num_warps": 4, "num_stages": 2}

# K + V dominate: 0.5-1 GiB per launch (10-20x the H200's 50 MB L2), 0.11-0.22 ms at
# 4.8 TB/s. The block table is a random permutation of the pages: every page is a gather.
POINTS = [
    {"B": 64, "H": 32, "Hkv": 8, "D": 128, "ctx": 4096, "PAGE": 16, "dtype": "bf16"},   # KV 1 GiB, G=4, 512 CTAs
    {"B": 16, "H": 64, "Hkv": 8, "D": 128, "ctx": 16384, "PAGE": 16, "dtype": "fp16"},  # KV 1 GiB, G=8, 128 CTAs
    {"B": 128, "H": 32, "Hkv": 4, "D": 128, "ctx": 2048, "PAGE": 32, "dtype": "bf16"},  # KV 512 MiB, G=8, 512 CTAs
]


def _torch_dtype(name: str):
    import torch
    try:
        return {"fp16": torch.float16, "bf16": torch.bfloat16}[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}") from None


def _elem_bytes(name: str) -> int:
    return 2


def _kernel_args(q, k_cache, v_cache, out, block_table, seq_lens, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    B, H, D = q.shape
    _, page, hkv, _ = k_cache.shape
    G = H // hkv
    return dict(Q=q, K_cache=k_cache, V_cache=v_cache, O=out, block_table=block_table, seq_lens=seq_lens,
                sm_scale=D ** -0.5, stride_qb=q.stride(0), stride_qh=q.stride(1),
                stride_kp=k_cache.stride(0), stride_ks=k_cache.stride(1), stride_kh=k_cache.stride(2),
                stride_vp=v_cache.stride(0), stride_vs=v_cache.stride(1), stride_vh=v_cache.stride(2),
                stride_ob=out.stride(0), stride_oh=out.stride(1), stride_bt=block_table.stride(0),
                G=G, G_P2=max(16, triton.next_power_of_2(G)), HEAD_DIM=D, PAGE=page, BLOCK_N=cfg["BLOCK_N"])


def paged_decode(q, k_cache, v_cache, block_table, seq_lens, *, BLOCK_N: int = 64, num_warps: int = 4,
                 num_stages: int = 2):
    """Decode attention for q [B, H, D] over pages k_cache/v_cache [num_blocks, PAGE, Hkv, D]
    addressed by block_table [B, max_pages] (int32) up to seq_lens [B] (int32, each in
    1..max_pages * PAGE, not checked: that would sync). Returns [B, H, D] in q's dtype."""
    import torch
    if q.dim() != 3 or k_cache.dim() != 4 or k_cache.shape != v_cache.shape or k_cache.shape[3] != q.shape[2]:
        raise ValueError(f"expected q [B, H, D], k_cache and v_cache [num_blocks, PAGE, Hkv, D]; got "
                         f"{tuple(q.shape)}, {tuple(k_cache.shape)}, {tuple(v_cache.shape)}")
    B, H, D = q.shape
    hkv = k_cache.shape[2]
    if H % hkv:
        raise ValueError(f"H={H} is not a multiple of Hkv={hkv}")
    if D < 16 or D & (D - 1):
        raise ValueError(f"D={D} must be a power of two >= 16")
    if BLOCK_N < 16 or BLOCK_N & (BLOCK_N - 1):
        raise ValueError(f"BLOCK_N={BLOCK_N} must be a power of two >= 16 (a tl.dot operand side)")
    if not (q.dtype == k_cache.dtype == v_cache.dtype) or q.dtype not in (torch.float16, torch.bfloat16):
        raise ValueError(f"q, k_cache, v_cache must share one dtype, fp16 or bf16; got "
                         f"{q.dtype}, {k_cache.dtype}, {v_cache.dtype}")
    for name, t, shape in (("block_table", block_table, (B, block_table.shape[-1])), ("seq_lens", seq_lens, (B,))):
        if t.dtype != torch.int32 or tuple(t.shape) != shape:
            raise ValueError(f"{name} must be int32 {list(shape)}; got {t.dtype} {list(t.shape)}")
    q, block_table = q.contiguous(), block_table.contiguous()
    if k_cache.stride(3) != 1 or v_cache.stride(3) != 1:
        k_cache, v_cache = k_cache.contiguous(), v_cache.contiguous()
    out = torch.empty_like(q)
    _kernel[(hkv, B)](**_kernel_args(q, k_cache, v_cache, out, block_table, seq_lens, {"BLOCK_N": BLOCK_N}),
                      num_warps=num_warps, num_stages=num_stages)
    return out


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    import torch
    gen = torch.Generator(device=device).manual_seed(seed)
    dt = _torch_dtype(point.get("dtype", "bf16"))
    B, H, hkv, D, ctx, page = (point[k] for k in ("B", "H", "Hkv", "D", "ctx", "PAGE"))
    pages = triton.cdiv(ctx, page)
    q = torch.randn((B, H, D), generator=gen, device=device).to(dt)
    k_cache = torch.randn((B * pages, page, hkv, D), generator=gen, device=device).to(dt)
    v_cache = torch.randn((B * pages, page, hkv, D), generator=gen, device=device).to(dt)
    # every page used once, in random order: each sequence's pages are scattered over the cache
    block_table = torch.randperm(B * pages, generator=gen, device=device).to(torch.int32).view(B, pages)
    seq_lens = torch.full((B,), ctx, dtype=torch.int32, device=device)
    return {"q": q, "k_cache": k_cache, "v_cache": v_cache, "block_table": block_table, "seq_lens": seq_lens}


def launch(inputs, cfg):
    return paged_decode(inputs["q"], inputs["k_cache"], inputs["v_cache"], inputs["block_table"],
                        inputs["seq_lens"], BLOCK_N=cfg["BLOCK_N"], num_warps=cfg["num_warps"],
                        num_stages=cfg["num_stages"])


def _attend(inputs, dtype):
    """The gathered K/V, masked past each seq_len; scores and softmax in `dtype` (None: fp32)."""
    import torch
    q, kc, vc, bt, lens = (inputs[k] for k in ("q", "k_cache", "v_cache", "block_table", "seq_lens"))
    B, H, D = q.shape
    hkv = kc.shape[2]
    k = kc[bt.long()].flatten(1, 2)                 # [B, max_pages * PAGE, Hkv, D]
    v = vc[bt.long()].flatten(1, 2)
    if dtype is None:
        q, k, v = q.float(), k.float(), v.float()
    qg = q.view(B, hkv, H // hkv, D)
    s = torch.einsum("bkgd,btkd->bkgt", qg, k) * D ** -0.5
    past = torch.arange(k.shape[1], device=q.device)[None, :] >= lens.long()[:, None]
    s = s.masked_fill(past[:, None, None, :], float("-inf"))
    return torch.einsum("bkgt,btkd->bkgd", torch.softmax(s, dim=-1), v).reshape(B, H, D)


def reference(inputs):
    return _attend(inputs, None)


def torch_baseline(inputs):
    """Eager torch in the inputs' dtype: gather the pages, two einsums, a softmax."""
    return _attend(inputs, inputs["q"].dtype)


def bytes_moved(point) -> int:
    """K and V of every (sequence, kv head) read once, q read and out written once,
    the block table and seq_lens read once."""
    B, H, hkv, D, ctx = (point[k] for k in ("B", "H", "Hkv", "D", "ctx"))
    e = _elem_bytes(point.get("dtype", "bf16"))
    return 2 * B * ctx * hkv * D * e + 2 * B * H * D * e + 4 * B * triton.cdiv(ctx, point["PAGE"]) + 4 * B


def flops(point) -> int:
    """Q K^T and P V over the real heads (not the padded rows)."""
    return 4 * point["B"] * point["H"] * point["ctx"] * point["D"]


def grid(cfg, point) -> tuple[int, int]:
    """The launch grid: one CTA per (kv head, sequence)."""
    return point["Hkv"], point["B"]


def loop_iterations(cfg, point) -> int:
    """BLOCK_N-token chunks per CTA."""
    return triton.cdiv(point["ctx"], cfg["BLOCK_N"])


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory)."""
    import torch
    dt = _torch_dtype(point.get("dtype", "bf16"))
    B, H, hkv, D, ctx, page = (point[k] for k in ("B", "H", "Hkv", "D", "ctx", "PAGE"))
    pages = triton.cdiv(ctx, page)
    q = torch.empty((B, H, D), dtype=dt, device="meta")
    k_cache = torch.empty((B * pages, page, hkv, D), dtype=dt, device="meta")
    bt = torch.empty((B, pages), dtype=torch.int32, device="meta")
    lens = torch.empty((B,), dtype=torch.int32, device="meta")
    return _kernel_args(q, k_cache, torch.empty_like(k_cache), torch.empty_like(q), bt, lens, cfg)
