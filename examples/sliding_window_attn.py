"""Sliding-window causal attention forward (Mistral / Starcoder2 / GPT-OSS local layers) with
grouped-query attention, a bare @triton.jit kernel + its launcher.

    out[b, i, h] = softmax_j(q[b, i, h] . k[b, j, h // G] * sm_scale) @ v[b, j, h // G],
                   over the keys  i - WINDOW < j <= i  (the WINDOW most recent, itself included)

as Mistral's `sliding_window` / flash-attn's window_size=(WINDOW - 1, 0) define it; WINDOW >= S
is plain causal attention. Layouts: q, out [B, S, H_q, D] and k, v [B, S, H_kv, D] (the
"bshd" layout of a projection's output: any batch / token / head strides, the head dim
contiguous, so q, k and v may be views of one fused QKV tensor), fp16 / bf16, H_q = G x H_kv.
Online softmax in fp32 and log2 units (exp2): a running max m and row sum l, the fp32
[BLOCK_M, D] accumulator rescaled by exp2(m_old - m_new) before P @ V (P rounded to the input
dtype for that dot) is added; one division at the end.

Grid: (cdiv(S, BLOCK_M), B x H_q), program_id(0) the query block (fastest: the CTAs in flight
are neighbouring blocks of one head, whose windows overlap in L2), program_id(1) = b x H_q + h
(the G query heads of one K/V head are neighbouring planes). A CTA keeps its [BLOCK_M, D] Q
tile in registers and walks the keys lo .. end in BLOCK_N tiles, lo = the window's first key of
its first query rounded down to a tile, end = min(S, m0 + BLOCK_M) (keys past the block's last
query are skipped), in three phases:
  1. the window's lower edge [lo, mid): tiles holding a key some row of the block no longer
     sees (j <= i - WINDOW): the window mask only (every key < m0 < S, no load mask); a row
     whose keys are all masked in such a tile leaves its running state untouched (its max is
     kept at -inf and the exponentials taken against 0 instead, no NaN);
  2. the interior [mid, full_hi): keys every row sees (m0 + BLOCK_M - WINDOW <= j < m0):
     no mask at all, the steady state of a long sequence;
  3. the causal diagonal [full_hi, end): the causal and window masks, K/V loads masked past S.
A block sees cdiv(end - lo, BLOCK_N) tiles: about (WINDOW + BLOCK_M) / BLOCK_N once the window
is full, fewer for the blocks of the first WINDOW queries (a causal triangle), so CTAs near the
sequence start do less work (cta_iterations). With WINDOW < BLOCK_M + BLOCK_N there is no
interior: every tile is an edge tile.

Tunables: BLOCK_M, BLOCK_N (powers of two >= 16), num_warps, num_stages (the K/V tile
pipelining depth of the three loops).
Problem parameters (a workload point): B, S, H_q, H_kv, D (the head dim, a power of two
16..256, a constexpr), WINDOW (keys a query sees), dtype (bf16 / fp16).
"""

from __future__ import annotations

import math

import triton
import triton.language as tl

LOG2E = 1.4426950408889634


@triton.jit
def _tiles(acc, l_i, m_i, q, k_ptrs, v_ptrs, qpos, offs_n, lo, hi, seq_len, window, qk_scale,
           stride_kt, stride_vt, BLOCK_N: tl.constexpr, MODE: tl.constexpr):
    """Keys lo .. hi (k_ptrs, v_ptrs at key lo) into the running (acc, l_i, m_i).
    MODE 0: interior, no mask; 1: the window's lower edge (window mask); 2: the causal
    diagonal (causal + window masks, K/V loads masked past seq_len)."""
    for start in range(lo, hi, BLOCK_N):
        keys = start + offs_n
        if MODE == 2:
            k_ok = keys < seq_len
            k = tl.load(k_ptrs, mask=k_ok[:, None], other=0.0)
            v = tl.load(v_ptrs, mask=k_ok[:, None], other=0.0)
        else:
            k = tl.load(k_ptrs)
            v = tl.load(v_ptrs)
        s = tl.dot(q, tl.trans(k)) * qk_scale
        if MODE == 0:
            m_new = tl.maximum(m_i, tl.max(s, 1))
            m_use = m_new
        else:
            keep = keys[None, :] > (qpos - window)[:, None]
            if MODE == 2:
                # keys <= qpos < seq_len for every stored row: the loads' zeros never count
                keep = keep & (keys[None, :] <= qpos[:, None])
            s = tl.where(keep, s, float("-inf"))
            m_new = tl.maximum(m_i, tl.max(s, 1))
            # a row with no key yet (a lower-edge tile wholly below its window): -inf kept in
            # m_i, the exponentials against 0 (p = alpha = 0, no inf - inf)
            m_use = tl.where(m_new == float("-inf"), 0.0, m_new)
        alpha = tl.exp2(m_i - m_use)
        p = tl.exp2(s - m_use[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
        k_ptrs += BLOCK_N * stride_kt
        v_ptrs += BLOCK_N * stride_vt
    return acc, l_i, m_i


@triton.jit
def _kernel(Q, K, V, O, sm_scale, seq_len, window, num_heads,
            stride_qb, stride_qt, stride_qh, stride_kb, stride_kt, stride_kh,
            stride_vb, stride_vt, stride_vh, stride_ob, stride_ot, stride_oh,
            GROUP: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_bh = tl.program_id(1)
    b = pid_bh // num_heads
    h = pid_bh % num_heads
    kv_h = h // GROUP
    m0 = pid_m * BLOCK_M

    offs_m = tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    qpos = m0 + offs_m                                  # query positions
    m_ok = qpos < seq_len
    b64 = b.to(tl.int64)
    q = tl.load(Q + b64 * stride_qb + h * stride_qh + qpos[:, None] * stride_qt + offs_d[None, :],
                mask=m_ok[:, None], other=0.0)
    qk_scale = sm_scale * 1.4426950408889634           # log2(e): softmax with exp2

    # the key ranges: [lo, mid) lower edge, [mid, full_hi) interior, [full_hi, end) diagonal
    lo = (tl.maximum(m0 - window + 1, 0) // BLOCK_N) * BLOCK_N
    full_hi = (m0 // BLOCK_N) * BLOCK_N                  # keys < full_hi are <= every row's position
    first_all = tl.maximum(m0 + BLOCK_M - window, 0)     # keys >= first_all are in every row's window
    mid = tl.minimum(tl.maximum(((first_all + BLOCK_N - 1) // BLOCK_N) * BLOCK_N, lo), full_hi)
    end = tl.minimum(seq_len, m0 + BLOCK_M)

    k_base = K + b64 * stride_kb + kv_h * stride_kh + offs_d[None, :]
    v_base = V + b64 * stride_vb + kv_h * stride_vh + offs_d[None, :]
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)

    keys = (lo + offs_n).to(tl.int64)
    acc, l_i, m_i = _tiles(acc, l_i, m_i, q, k_base + keys[:, None] * stride_kt, v_base + keys[:, None] * stride_vt,
                           qpos, offs_n, lo, mid, seq_len, window, qk_scale, stride_kt, stride_vt, BLOCK_N, 1)
    keys = (mid + offs_n).to(tl.int64)
    acc, l_i, m_i = _tiles(acc, l_i, m_i, q, k_base + keys[:, None] * stride_kt, v_base + keys[:, None] * stride_vt,
                           qpos, offs_n, mid, full_hi, seq_len, window, qk_scale, stride_kt, stride_vt, BLOCK_N, 0)
    keys = (full_hi + offs_n).to(tl.int64)
    acc, l_i, m_i = _tiles(acc, l_i, m_i, q, k_base + keys[:, None] * stride_kt, v_base + keys[:, None] * stride_vt,
                           qpos, offs_n, full_hi, end, seq_len, window, qk_scale, stride_kt, stride_vt, BLOCK_N, 2)

    # every stored row saw its own key: l_i > 0 there (rows past seq_len are not stored)
    out = acc / tl.where(l_i > 0, l_i, 1.0)[:, None]
    tl.store(O + b64 * stride_ob + h * stride_oh + qpos[:, None] * stride_ot + offs_d[None, :],
             out.to(O.dtype.element_ty), mask=m_ok[:, None])


# ---------------------------------------------------------------- launcher
DTYPES = ("bf16", "fp16")
TUNABLES = ("BLOCK_M", "BLOCK_N", "num_warps", "num_stages")
BASELINE = {"BLOCK_M": 128, "BLOCK_N": 64, "num_warps": 8, "num_stages": 2}

POINTS = [
    # Mistral-7B (32 q heads, 8 K/V heads, D 128, sliding_window 4096) long-context prefill: one
    # 32k-token prompt, bf16. 7/8 of the query blocks see a full window (~66 tiles of 64 keys, the
    # unmasked interior dominating), the first 4k queries a causal triangle: 4.0 G (query, key)
    # pairs over the heads, 2.06 TFLOP, q/k/v/out 0.67 GB: compute-bound, ~4-6 ms
    {"B": 1, "S": 32768, "H_q": 32, "H_kv": 8, "D": 128, "WINDOW": 4096, "dtype": "bf16"},
    # the same model serving a batch of 16 prompts of 2048 tokens, fp16: the window (4096) never
    # binds, so every CTA is in the causal start-up region (2-32 tiles of 64 keys, a triangle over
    # the 16 query blocks of a sequence); 1.07 G pairs, 0.55 TFLOP, 0.67 GB: ~1-2 ms
    {"B": 16, "S": 2048, "H_q": 32, "H_kv": 8, "D": 128, "WINDOW": 4096, "dtype": "fp16"},
    # GPT-OSS-20B's sliding layers (64 q heads, 8 K/V heads, D 64, a 128-token window): 4 x 8192
    # tokens, bf16. Every tile is an edge tile (no interior), 2-4 tiles per block: 0.27 G pairs,
    # 68 GFLOP against q/out 0.54 GB + k/v 0.07 GB: bandwidth-bound, ~0.15-0.3 ms
    {"B": 4, "S": 8192, "H_q": 64, "H_kv": 8, "D": 64, "WINDOW": 128, "dtype": "bf16"},
]


def _torch_dtype(name: str):
    import torch
    try:
        return {"bf16": torch.bfloat16, "fp16": torch.float16}[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}") from None


def _check_cfg(cfg) -> None:
    for name in ("BLOCK_M", "BLOCK_N"):
        v = cfg[name]
        if not isinstance(v, int) or v < 16 or v & (v - 1):
            raise ValueError(f"{name}={v} must be a power of two >= 16 (a tl.dot operand side)")


def _check_shape(B: int, S: int, h_q: int, h_kv: int, d: int, window: int) -> None:
    if B < 1 or S < 1:
        raise ValueError(f"need B >= 1 and S >= 1; got B={B}, S={S}")
    if h_q < 1 or h_kv < 1 or h_q % h_kv:
        raise ValueError(f"H_q={h_q} must be a positive multiple of H_kv={h_kv} (grouped-query attention)")
    if d < 16 or d > 256 or d & (d - 1):
        raise ValueError(f"D={d} must be a power of two in 16..256 (the head dim, a constexpr)")
    if not isinstance(window, int) or window < 1:
        raise ValueError(f"WINDOW={window!r} must be a positive int (keys a query sees, itself included)")


def _check_point(point) -> None:
    _check_shape(point["B"], point["S"], point["H_q"], point["H_kv"], point["D"], point["WINDOW"])
    _torch_dtype(point.get("dtype", "bf16"))


def _kernel_args(q, k, v, o, sm_scale: float, window: int, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it).
    q, o [B, S, H_q, D]; k, v [B, S, H_kv, D]; the head dim contiguous."""
    return dict(Q=q, K=k, V=v, O=o, sm_scale=float(sm_scale), seq_len=q.shape[1], window=int(window),
                num_heads=q.shape[2],
                stride_qb=q.stride(0), stride_qt=q.stride(1), stride_qh=q.stride(2),
                stride_kb=k.stride(0), stride_kt=k.stride(1), stride_kh=k.stride(2),
                stride_vb=v.stride(0), stride_vt=v.stride(1), stride_vh=v.stride(2),
                stride_ob=o.stride(0), stride_ot=o.stride(1), stride_oh=o.stride(2),
                GROUP=q.shape[2] // k.shape[2], HEAD_DIM=q.shape[3], BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"])


def _grid(B: int, S: int, h_q: int, cfg) -> tuple[int, int]:
    return triton.cdiv(S, cfg["BLOCK_M"]), B * h_q


def sliding_window_attn(q, k, v, window: int, sm_scale: float | None = None, *, out=None,
                        BLOCK_M: int = 128, BLOCK_N: int = 64, num_warps: int = 8, num_stages: int = 2):
    """Causal attention of q [B, S, H_q, D] over k, v [B, S, H_kv, D] (one fp16 / bf16 dtype,
    the head dim contiguous, any other strides) where query i sees keys i - window < j <= i.
    H_q a multiple of H_kv; D a power of two 16..256. Returns [B, S, H_q, D] in q's dtype (into
    `out` if given: that shape and dtype, the head dim contiguous)."""
    import torch
    if q.dim() != 4 or k.dim() != 4 or v.shape != k.shape or q.shape[:2] != k.shape[:2] or q.shape[3] != k.shape[3]:
        raise ValueError(f"expected q [B, S, H_q, D] and k, v [B, S, H_kv, D]; got {tuple(q.shape)}, "
                         f"{tuple(k.shape)}, {tuple(v.shape)}")
    if not (q.dtype == k.dtype == v.dtype) or q.dtype not in (torch.float16, torch.bfloat16):
        raise ValueError(f"q, k, v must share one fp16 / bf16 dtype; got {q.dtype}, {k.dtype}, {v.dtype}")
    B, S, h_q, d = q.shape
    if B == 0 or S == 0:
        raise ValueError(f"empty input: q {tuple(q.shape)}")
    _check_shape(B, S, h_q, k.shape[2], d, window)
    cfg = {"BLOCK_M": BLOCK_M, "BLOCK_N": BLOCK_N}
    _check_cfg(cfg)
    q, k, v = (t if t.stride(3) == 1 else t.contiguous() for t in (q, k, v))
    if sm_scale is None:
        sm_scale = 1.0 / math.sqrt(d)
    if out is None:
        out = torch.empty((B, S, h_q, d), dtype=q.dtype, device=q.device)
    elif tuple(out.shape) != (B, S, h_q, d) or out.dtype != q.dtype or out.stride(3) != 1:
        raise ValueError(f"out must be {q.dtype} [{B}, {S}, {h_q}, {d}] with the head dim contiguous; got "
                         f"{out.dtype} {tuple(out.shape)} strides {out.stride()}")
    _kernel[_grid(B, S, h_q, cfg)](**_kernel_args(q, k, v, out, sm_scale, window, cfg),
                                   num_warps=num_warps, num_stages=num_stages)
    return out


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """q, k, v ~ N(0, 1) [B, S, H, D] (drawn on the CPU for `seed`, then moved), the window."""
    import torch
    _check_point(point)
    dt = _torch_dtype(point.get("dtype", "bf16"))
    B, S, d = point["B"], point["S"], point["D"]
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn((B, S, point["H_q"], d), generator=gen).to(dt).to(device)
    k = torch.randn((B, S, point["H_kv"], d), generator=gen).to(dt).to(device)
    v = torch.randn((B, S, point["H_kv"], d), generator=gen).to(dt).to(device)
    return {"q": q, "k": k, "v": v, "window": int(point["WINDOW"]), "sm_scale": 1.0 / math.sqrt(d)}


def launch(inputs, cfg):
    return sliding_window_attn(inputs["q"], inputs["k"], inputs["v"], inputs["window"], inputs["sm_scale"],
                               BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"], num_warps=cfg["num_warps"],
                               num_stages=cfg["num_stages"])


def _band(r0: int, r1: int, window: int, device):
    """Query rows r0 .. r1 (one chunk): the keys k0 .. r1 they can see and the [rows, keys]
    bool mask of i - window < j <= i."""
    import torch
    k0 = max(0, r0 - window + 1)
    qi = torch.arange(r0, r1, device=device)[:, None]
    kj = torch.arange(k0, r1, device=device)[None, :]
    return k0, (kj <= qi) & (kj > qi - window)


def reference(inputs, rows: int = 1024):
    """fp64 torch per batch entry and chunk of `rows` queries over the keys the chunk can see
    (K/V heads repeated for GQA): scores, the band mask, softmax, @ V; fp32 [B, S, H_q, D]."""
    import torch
    q, k, v, window = inputs["q"], inputs["k"], inputs["v"], inputs["window"]
    B, S, h_q, d = q.shape
    group = h_q // k.shape[2]
    out = torch.empty((B, S, h_q, d), dtype=torch.float32, device=q.device)
    for b in range(B):
        for r0 in range(0, S, rows):
            r1 = min(S, r0 + rows)
            k0, keep = _band(r0, r1, window, q.device)
            qq = q[b, r0:r1].to(torch.float64).transpose(0, 1)                             # [H_q, r, D]
            kk = k[b, k0:r1].to(torch.float64).repeat_interleave(group, 1).transpose(0, 1)  # [H_q, n, D]
            vv = v[b, k0:r1].to(torch.float64).repeat_interleave(group, 1).transpose(0, 1)
            sc = (qq @ kk.transpose(1, 2)) * inputs["sm_scale"]
            sc = sc.masked_fill(~keep[None], float("-inf"))
            out[b, r0:r1] = (torch.softmax(sc, -1) @ vv).transpose(0, 1).float()
    return out


def torch_baseline(inputs, rows: int = 2048):
    """What a torch user writes without a windowed kernel: scaled_dot_product_attention in the
    inputs' dtype per chunk of `rows` queries over the keys it can see, with the band as a
    boolean mask (GQA by enable_gqa)."""
    import torch
    import torch.nn.functional as F
    q, k, v, window = inputs["q"], inputs["k"], inputs["v"], inputs["window"]
    S = q.shape[1]
    out = torch.empty_like(q)
    for r0 in range(0, S, rows):
        r1 = min(S, r0 + rows)
        k0, keep = _band(r0, r1, window, q.device)
        o = F.scaled_dot_product_attention(q[:, r0:r1].transpose(1, 2), k[:, k0:r1].transpose(1, 2),
                                           v[:, k0:r1].transpose(1, 2), attn_mask=keep, scale=inputs["sm_scale"],
                                           enable_gqa=True)
        out[:, r0:r1] = o.transpose(1, 2)
    return out


def _pairs(S: int, window: int) -> int:
    """(query, key) pairs one head keeps: query i sees min(i + 1, window) keys."""
    w = min(S, window)
    return w * (w + 1) // 2 + (S - w) * window


def bytes_moved(point) -> int:
    """q read and out written once ([B, S, H_q, D]); k, v read once ([B, S, H_kv, D]: the G
    query heads of a K/V head and the overlapping windows of neighbouring blocks share them)."""
    _check_point(point)
    return 2 * point["B"] * point["S"] * point["D"] * (2 * point["H_q"] + 2 * point["H_kv"])


def flops(point) -> int:
    """Two dots per kept (query, key) pair, 2 x 2 x D flops each, per query head."""
    _check_point(point)
    return 4 * point["D"] * point["B"] * point["H_q"] * _pairs(point["S"], point["WINDOW"])


def grid(cfg, point) -> tuple[int, int]:
    """The launch grid: (cdiv(S, BLOCK_M) query blocks, B x H_q planes)."""
    _check_point(point)
    return _grid(point["B"], point["S"], point["H_q"], cfg)


def _plane_iterations(cfg, point) -> list[int]:
    """K/V tiles of each query block of one plane: cdiv(end - lo, BLOCK_N), lo = the first
    window key of the block rounded down to a tile, end = min(S, m0 + BLOCK_M)."""
    S, window = point["S"], point["WINDOW"]
    bm, bn = cfg["BLOCK_M"], cfg["BLOCK_N"]
    its = []
    for m0 in range(0, S, bm):
        lo = (max(m0 - window + 1, 0) // bn) * bn
        its.append(-(-(min(S, m0 + bm) - lo) // bn))
    return its


def cta_iterations(cfg, point) -> list[int]:
    """K/V tiles of each CTA in launch order (program_id(0), the query block, fastest; then the
    B x H_q planes): fewer for the blocks of the first WINDOW queries."""
    _check_point(point)
    return _plane_iterations(cfg, point) * (point["B"] * point["H_q"])


def loop_iterations(cfg, point) -> int:
    """K/V tiles per CTA: the mean over the plane's query blocks, rounded up."""
    _check_point(point)
    its = _plane_iterations(cfg, point)
    return -(-sum(its) // len(its))


def example_args(cfg, point) -> dict:
    """The launch arguments for `cfg` at `point`, on the meta device (no memory), contiguous
    [B, S, H, D] tensors as make_inputs builds them."""
    import torch
    _check_point(point)
    dt = _torch_dtype(point.get("dtype", "bf16"))
    B, S, d = point["B"], point["S"], point["D"]
    q, o = (torch.empty((B, S, point["H_q"], d), dtype=dt, device="meta") for _ in range(2))
    k, v = (torch.empty((B, S, point["H_kv"], d), dtype=dt, device="meta") for _ in range(2))
    return _kernel_args(q, k, v, o, 1.0 / math.sqrt(d), point["WINDOW"], cfg)
