"""FlashAttention-2 backward, the dQ kernel: a bare @triton.jit kernel + its launcher.

For one (batch, head), with S = q k^T * sm_scale (causal: S[i, j] = -inf for key j > query i),
P = softmax(S) row-wise and the forward's O = P v, the gradient of the queries is

    dP = dO v^T,      dS = P * (dP - Delta[:, None]),      dQ = dS k * sm_scale

with lse[i] = logsumexp_j S[i, j] in the NATURAL log (what the forward saves: torch SDPA's and
FlashAttention-2's softmax_lse) and Delta[i] = rowsum(dO[i] * O[i]). Both are inputs, fp32,
precomputed: in a full backward the tiny preprocessing kernel of FlashAttention-2 computes Delta
once and the dK / dV kernel (examples/attn_bwd_dkdv.py) and this dQ kernel both read it, so
`launch` runs this one kernel only (no secondary kernel).

q, do: [B, H, S, D]; k, v: [B, HKV, S, D] with H % HKV == 0 (grouped-query attention: query
head h reads kv head h // (H / HKV); HKV = H is plain multi-head attention); fp16 / bf16, one
dtype, D contiguous (any batch / head / time strides: views of a fused projection are fine);
lse, delta: [B, H, S] fp32 contiguous. dq: [B, H, S, D] in q's dtype (fp32 accumulation, one
rounding at the store), fresh and contiguous. D need not be a power of two (padded to BLOCK_D =
next power of two >= 16 and masked), D <= 256.

Grid (cdiv(S, BLOCK_M), B * H), query tiles fastest so the CTAs resident together read one kv
head's K and V (from L2 after the first). A CTA owns BLOCK_M query rows of one (b, h): it loads
q, dO, lse and Delta once, keeps the dQ accumulator [BLOCK_M, BLOCK_D] fp32 in registers and walks
the keys in BLOCK_N tiles. Per key tile: S = q k^T (tl.dot), P = exp2(S * scale * log2 e - lse *
log2 e) (recomputed from the saved lse: no running max), dP = dO v^T (tl.dot), dS = P * (dP -
Delta), dQ += dS k (tl.dot, dS rounded to the inputs' dtype as FlashAttention-2 does): three dots
a tile. The walk is split in two loops, as Triton's fused-attention tutorial splits it: the key
tiles no query row of the CTA masks (no mask, no bounds check), then the few tiles that need one
(causal: the tiles on the diagonal, keys <= the CTA's last row; non-causal: a ragged key tail).
Causal CTAs walk cdiv(min(m0 + BLOCK_M, S), BLOCK_N) tiles (m0 = the tile's first row), so the
launch reverses the query tiles of a head (program 0 takes the last, longest one): the long walks
start first and the short ones fill the tail of the launch. Query rows past S load q = dO = 0 and
lse = +inf, so their P is exactly 0; they are not stored.

Tunables: BLOCK_M (query tile), BLOCK_N (key tile; powers of two >= 16), num_warps, num_stages
(the k / v loads of both loops feed tl.dot and are software-pipelined num_stages deep).
Problem parameters (a workload point): B, H, HKV, S, D, causal, dtype.
"""

from __future__ import annotations

import math

import triton
import triton.language as tl

LOG2E = 1.4426950408889634


@triton.jit
def _dq_walk(dq, q, do, lse2, delta, rows, k_base, v_base, stride_ks, stride_vs, lo, hi, S, qk_scale,
             HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_N: tl.constexpr,
             MASKED: tl.constexpr, CAUSAL: tl.constexpr):
    """dq += dS k over the key tiles [lo, hi) (steps of BLOCK_N). MASKED: keys past S and (causal)
    keys after a query row are masked; otherwise every key of every tile is in range and visible."""
    ds = tl.arange(0, BLOCK_D)
    ns = tl.arange(0, BLOCK_N)
    for n0 in range(lo, hi, BLOCK_N):
        keys = n0 + ns
        k_ptrs = k_base + keys[:, None] * stride_ks + ds[None, :]
        v_ptrs = v_base + keys[:, None] * stride_vs + ds[None, :]
        if MASKED:
            kd_ok = keys[:, None] < S
            if BLOCK_D != HEAD_DIM:
                kd_ok = kd_ok & (ds < HEAD_DIM)[None, :]
            k = tl.load(k_ptrs, mask=kd_ok, other=0.0)
            v = tl.load(v_ptrs, mask=kd_ok, other=0.0)
        elif BLOCK_D != HEAD_DIM:
            d_ok = (ds < HEAD_DIM)[None, :]
            k = tl.load(k_ptrs, mask=d_ok, other=0.0)
            v = tl.load(v_ptrs, mask=d_ok, other=0.0)
        else:
            k = tl.load(k_ptrs)
            v = tl.load(v_ptrs)
        s = tl.dot(q, tl.trans(k))                                   # [BLOCK_M, BLOCK_N] fp32
        p = tl.exp2(s * qk_scale - lse2[:, None])
        if MASKED:
            keep = keys[None, :] < S
            if CAUSAL:
                keep = keep & (keys[None, :] <= rows[:, None])
            p = tl.where(keep, p, 0.0)
        dp = tl.dot(do, tl.trans(v))                                 # [BLOCK_M, BLOCK_N] fp32
        dsc = p * (dp - delta[:, None])
        dq = tl.dot(dsc.to(k.dtype), k, dq)
    return dq


@triton.jit
def _kernel(Q, K, V, DO, LSE, DELTA, DQ, sm_scale,
            stride_qb, stride_qh, stride_qs, stride_kb, stride_kh, stride_ks,
            stride_vb, stride_vh, stride_vs, stride_dob, stride_doh, stride_dos,
            stride_dqb, stride_dqh, stride_dqs,
            H, GROUP, S, HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr,
            BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr):
    if CAUSAL:
        tile_m = tl.num_programs(0) - 1 - tl.program_id(0)     # the longest walks first
    else:
        tile_m = tl.program_id(0)
    bh = tl.program_id(1)
    b = (bh // H).to(tl.int64)
    h = (bh % H).to(tl.int64)
    hk = h // GROUP

    m0 = tile_m * BLOCK_M
    rows = m0 + tl.arange(0, BLOCK_M)
    ds = tl.arange(0, BLOCK_D)
    row_ok = rows < S
    if BLOCK_D == HEAD_DIM:
        rd_ok = row_ok[:, None]
    else:
        rd_ok = row_ok[:, None] & (ds < HEAD_DIM)[None, :]

    q = tl.load(Q + b * stride_qb + h * stride_qh + rows[:, None] * stride_qs + ds[None, :], mask=rd_ok, other=0.0)
    do = tl.load(DO + b * stride_dob + h * stride_doh + rows[:, None] * stride_dos + ds[None, :], mask=rd_ok,
                 other=0.0)
    row_base = bh.to(tl.int64) * S                              # lse, delta: [B, H, S] contiguous
    lse2 = tl.load(LSE + row_base + rows, mask=row_ok, other=float("inf")) * 1.4426950408889634
    delta = tl.load(DELTA + row_base + rows, mask=row_ok, other=0.0)
    qk_scale = sm_scale * 1.4426950408889634                    # exp2 instead of exp

    k_base = K + b * stride_kb + hk * stride_kh
    v_base = V + b * stride_vb + hk * stride_vh
    if CAUSAL:
        full_end = (m0 // BLOCK_N) * BLOCK_N                    # tiles wholly before the CTA's first row
        hi = tl.minimum(m0 + BLOCK_M, S)                        # keys after its last row: none visible
    else:
        full_end = (S // BLOCK_N) * BLOCK_N
        hi = S
    dq = tl.zeros([BLOCK_M, BLOCK_D], tl.float32)
    dq = _dq_walk(dq, q, do, lse2, delta, rows, k_base, v_base, stride_ks, stride_vs, 0, full_end, S, qk_scale,
                  HEAD_DIM, BLOCK_D, BLOCK_N, False, CAUSAL)
    dq = _dq_walk(dq, q, do, lse2, delta, rows, k_base, v_base, stride_ks, stride_vs, full_end, hi, S, qk_scale,
                  HEAD_DIM, BLOCK_D, BLOCK_N, True, CAUSAL)

    dq = dq * sm_scale
    out = DQ + b * stride_dqb + h * stride_dqh + rows[:, None] * stride_dqs + ds[None, :]
    tl.store(out, dq.to(DQ.dtype.element_ty), mask=rd_ok)


# ---------------------------------------------------------------- launcher
DTYPES = ("bf16", "fp16")
TUNABLES = ("BLOCK_M", "BLOCK_N", "num_warps", "num_stages")
BASELINE = {"BLOCK_M": 128, "BLOCK_N": 64, "num_warps": 8, "num_stages": 3}

# q, k, v, dO, lse, delta read and dQ written: 276-675 MB per launch (5-13x the H200's 50 MB L2; k
# and v are re-read by every query tile of a head, from L2), 0.7-3.3 TFLOP of dots: compute-bound,
# ~1-8 ms at a few hundred TFLOP/s.
POINTS = [
    # Llama-2-7B training step, 4k context (MHA, 32 heads of 128)
    {"B": 4, "H": 32, "HKV": 32, "S": 4096, "D": 128, "causal": 1, "dtype": "bf16"},
    # SD3-medium MMDiT joint attention at 1024 px: 4096 image + 333 text tokens (S ragged), 24 heads of 64, non-causal
    {"B": 4, "H": 24, "HKV": 24, "S": 4429, "D": 64, "causal": 0, "dtype": "fp16"},
    # Llama-3-8B long-context fine-tune, 16k, GQA 32 query heads : 8 kv heads
    {"B": 1, "H": 32, "HKV": 8, "S": 16384, "D": 128, "causal": 1, "dtype": "bf16"},
]


def _torch_dtype(name: str):
    import torch
    try:
        return {"fp16": torch.float16, "bf16": torch.bfloat16}[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}") from None


def _elem_bytes(name: str) -> int:
    if name not in DTYPES:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}")
    return 2


def _check_cfg(cfg) -> None:
    for name in ("BLOCK_M", "BLOCK_N"):
        v = cfg[name]
        if not isinstance(v, int) or v < 16 or v & (v - 1):
            raise ValueError(f"{name}={v!r} must be a power of two >= 16 (a tl.dot operand side)")


def _check_point(point) -> None:
    H, HKV = point["H"], point.get("HKV", point["H"])
    if HKV < 1 or H % HKV:
        raise ValueError(f"H={H} query heads must be a multiple of HKV={HKV} kv heads")
    _elem_bytes(point.get("dtype", "bf16"))


def _block_d(head_dim: int) -> int:
    return max(16, triton.next_power_of_2(head_dim))


def _kernel_args(q, k, v, do, lse, delta, dq, sm_scale: float, causal: bool, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    return dict(Q=q, K=k, V=v, DO=do, LSE=lse, DELTA=delta, DQ=dq, sm_scale=float(sm_scale),
                stride_qb=q.stride(0), stride_qh=q.stride(1), stride_qs=q.stride(2),
                stride_kb=k.stride(0), stride_kh=k.stride(1), stride_ks=k.stride(2),
                stride_vb=v.stride(0), stride_vh=v.stride(1), stride_vs=v.stride(2),
                stride_dob=do.stride(0), stride_doh=do.stride(1), stride_dos=do.stride(2),
                stride_dqb=dq.stride(0), stride_dqh=dq.stride(1), stride_dqs=dq.stride(2),
                H=q.shape[1], GROUP=q.shape[1] // k.shape[1], S=q.shape[2], HEAD_DIM=q.shape[3],
                BLOCK_D=_block_d(q.shape[3]), BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"], CAUSAL=bool(causal))


def attn_bwd_dq(q, k, v, do, lse, delta, causal: bool = False, sm_scale: float | None = None, *,
                BLOCK_M: int = 128, BLOCK_N: int = 64, num_warps: int = 8, num_stages: int = 3):
    """dQ of attention. q, do: [B, H, S, D]; k, v: [B, HKV, S, D] (H % HKV == 0); fp16 / bf16, one
    dtype. lse (natural-log logsumexp of the scaled, masked scores) and delta (rowsum(dO * O)):
    [B, H, S] fp32, from the forward pass / the backward's preprocessing. sm_scale defaults to
    D^-0.5. Returns dq, a fresh contiguous [B, H, S, D] in q's dtype."""
    import torch
    if q.dim() != 4 or k.dim() != 4 or do.shape != q.shape or v.shape != k.shape:
        raise ValueError(f"expected q, do of one shape [B, H, S, D] and k, v of one shape [B, HKV, S, D]; got "
                         f"q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)}, do {tuple(do.shape)}")
    B, H, S, D = q.shape
    HKV = k.shape[1]
    if k.shape[0] != B or k.shape[2] != S or k.shape[3] != D:
        raise ValueError(f"k, v {tuple(k.shape)} must be [B={B}, HKV, S={S}, D={D}] like q {tuple(q.shape)}")
    if HKV < 1 or H % HKV:
        raise ValueError(f"H={H} query heads must be a multiple of HKV={HKV} kv heads (grouped-query attention)")
    if not (q.dtype == k.dtype == v.dtype == do.dtype) or q.dtype not in (torch.float16, torch.bfloat16):
        raise ValueError(f"q, k, v, do must share one fp16 / bf16 dtype; got {q.dtype}, {k.dtype}, "
                         f"{v.dtype}, {do.dtype}")
    for name, t in (("lse", lse), ("delta", delta)):
        if t.dtype != torch.float32 or tuple(t.shape) != (B, H, S):
            raise ValueError(f"{name} must be fp32 [{B}, {H}, {S}]; got {t.dtype} {tuple(t.shape)}")
    if D > 256:
        raise ValueError(f"head dim D={D} > 256 is not supported (q, dO and the fp32 dQ tile live in registers)")
    cfg = {"BLOCK_M": BLOCK_M, "BLOCK_N": BLOCK_N}
    _check_cfg(cfg)
    q, k, v, do = (t if t.stride(3) == 1 else t.contiguous() for t in (q, k, v, do))
    lse, delta = lse.contiguous(), delta.contiguous()
    if sm_scale is None:
        sm_scale = 1.0 / math.sqrt(D)
    dq = torch.empty((B, H, S, D), dtype=q.dtype, device=q.device)
    if B * H * S * D > 0:
        _kernel[(triton.cdiv(S, BLOCK_M), B * H)](**_kernel_args(q, k, v, do, lse, delta, dq, sm_scale, causal, cfg),
                                                  num_warps=num_warps, num_stages=num_stages)
    return dq


def _expand_kv(t, H: int):
    """[B, HKV, S, D] -> [B, H, S, D]: each kv head repeated for its H / HKV query heads."""
    return t if t.shape[1] == H else t.repeat_interleave(H // t.shape[1], dim=1)


def forward_stats(q, k, v, do, causal: bool, sm_scale: float, rows_per_step: int = 2048):
    """(lse, delta) [B, H, S] fp32 from an fp32 forward of the given (rounded) inputs, one
    (batch, head) and up to `rows_per_step` queries at a time: lse = natural-log logsumexp of
    the scaled (causally masked) scores, delta = rowsum(dO * O) -- what the forward saves and
    FlashAttention-2's preprocessing kernel computes."""
    import torch
    B, H, S, _ = q.shape
    group = H // k.shape[1]
    lse = torch.empty((B, H, S), dtype=torch.float32, device=q.device)
    delta = torch.empty((B, H, S), dtype=torch.float32, device=q.device)
    keys = torch.arange(S, device=q.device)
    for b in range(B):
        for h in range(H):
            kk, vv = k[b, h // group].float(), v[b, h // group].float()
            for r0 in range(0, S, rows_per_step):
                qq = q[b, h, r0:r0 + rows_per_step].float()
                s = (qq @ kk.T) * sm_scale
                if causal:
                    rows = torch.arange(r0, r0 + qq.shape[0], device=q.device)
                    s = s.masked_fill(keys[None, :] > rows[:, None], float("-inf"))
                m = torch.logsumexp(s, dim=-1)
                o = torch.exp(s - m[:, None]) @ vv
                lse[b, h, r0:r0 + qq.shape[0]] = m
                delta[b, h, r0:r0 + qq.shape[0]] = (do[b, h, r0:r0 + qq.shape[0]].float() * o).sum(-1)
    return lse, delta


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """q, k, v, do ~ N(0, 1) in the point's dtype; lse, delta from forward_stats of those."""
    import torch
    _check_point(point)
    B, H, S, D = point["B"], point["H"], point["S"], point["D"]
    HKV = point.get("HKV", H)
    gen = torch.Generator(device=device).manual_seed(seed)
    dt = _torch_dtype(point.get("dtype", "bf16"))

    def randn(shape):
        return torch.randn(shape, generator=gen, device=device, dtype=torch.float32).to(dt)

    q, k, v, do = randn((B, H, S, D)), randn((B, HKV, S, D)), randn((B, HKV, S, D)), randn((B, H, S, D))
    causal = bool(point.get("causal", 0))
    sm_scale = 1.0 / math.sqrt(D)
    lse, delta = forward_stats(q, k, v, do, causal, sm_scale)
    return {"q": q, "k": k, "v": v, "do": do, "lse": lse, "delta": delta, "causal": causal, "sm_scale": sm_scale}


def launch(inputs, cfg):
    """dq: [B, H, S, D] in q's dtype."""
    return attn_bwd_dq(inputs["q"], inputs["k"], inputs["v"], inputs["do"], inputs["lse"], inputs["delta"],
                       inputs["causal"], inputs["sm_scale"], BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"],
                       num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])


def reference(inputs, max_scores: int = 1 << 28):
    """[B, H, S, D] fp32: dQ by torch autograd of fp32 softmax attention (plain softmax, not the
    saved lse) of the same rounded q, k, v, backpropagating dO; a few heads at a time (at most
    `max_scores` score elements per step: 1 GiB of fp32 scores)."""
    import torch
    q, do = inputs["q"], inputs["do"]
    B, H, S, D = q.shape
    k, v = _expand_kv(inputs["k"], H), _expand_kv(inputs["v"], H)
    out = torch.empty((B, H, S, D), dtype=torch.float32, device=q.device)
    qf, kf, vf, dof = (t.reshape(B * H, S, D) for t in (q, k, v, do))
    dq = out.view(B * H, S, D)
    step = max(1, max_scores // max(1, S * S))
    for i in range(0, B * H, step):
        with torch.enable_grad():
            qq = qf[i:i + step].float().requires_grad_(True)
            s = (qq @ kf[i:i + step].float().transpose(-1, -2)) * inputs["sm_scale"]
            if inputs["causal"]:
                s = s.masked_fill(torch.ones((S, S), dtype=torch.bool, device=q.device).triu(1), float("-inf"))
            o = torch.softmax(s, dim=-1) @ vf[i:i + step].float()
            (g,) = torch.autograd.grad(o, (qq,), dof[i:i + step].float())
        dq[i:i + step] = g
    return out


def torch_baseline(inputs):
    """What one would run without a kernel: autograd through torch's fused attention in the
    inputs' dtype, dQ only (its backward recomputes from the stats its forward saved; kv heads
    repeated for GQA); [B, H, S, D]."""
    import torch
    import torch.nn.functional as F
    H = inputs["q"].shape[1]
    with torch.enable_grad():
        q = inputs["q"].detach().requires_grad_(True)
        o = F.scaled_dot_product_attention(q, _expand_kv(inputs["k"], H), _expand_kv(inputs["v"], H),
                                           is_causal=inputs["causal"], scale=inputs["sm_scale"])
        (gq,) = torch.autograd.grad(o, (q,), inputs["do"])
    return gq


def bytes_moved(point) -> int:
    """q, dO read once and dQ written once ([B, H, S, D]); k, v read once ([B, HKV, S, D]; each
    query tile of a head re-reads them from L2: not counted); lse and delta (fp32) read once."""
    _check_point(point)
    e = _elem_bytes(point.get("dtype", "bf16"))
    nq = point["B"] * point["H"] * point["S"]
    nk = point["B"] * point.get("HKV", point["H"]) * point["S"]
    return (3 * nq + 2 * nk) * point["D"] * e + 2 * 4 * nq


def flops(point) -> int:
    """Three dots per (query, key) pair kept (S, dP, dQ): 3 x 2 x D flops; causal keeps S(S+1)/2
    pairs of a head."""
    S = point["S"]
    pairs = S * (S + 1) // 2 if point.get("causal", 0) else S * S
    return 6 * point["B"] * point["H"] * pairs * point["D"]


def grid(cfg, point) -> tuple[int, int]:
    """The launch grid: (query tiles, batch x heads)."""
    return triton.cdiv(point["S"], cfg["BLOCK_M"]), point["B"] * point["H"]


def _tile_walks(cfg, point) -> list[int]:
    """Key tiles walked by each query tile of a head, in program-id order (causal: reversed)."""
    S, bm, bn = point["S"], cfg["BLOCK_M"], cfg["BLOCK_N"]
    n_m = triton.cdiv(S, bm)
    if not point.get("causal", 0):
        return [triton.cdiv(S, bn)] * n_m
    return [triton.cdiv(min(t * bm + bm, S), bn) for t in reversed(range(n_m))]


def cta_iterations(cfg, point) -> list[int]:
    """Each CTA's key tiles (both loops), in launch order (query tile fastest): causal CTAs walk
    cdiv(min(m0 + BLOCK_M, S), BLOCK_N), the longest first in each head; non-causal all cdiv(S, BLOCK_N)."""
    return _tile_walks(cfg, point) * (point["B"] * point["H"])


def loop_iterations(cfg, point) -> int:
    """Key tiles per CTA (both loops); causal: the mean over a head's query tiles, rounded up."""
    its = _tile_walks(cfg, point)
    return -(-sum(its) // len(its))


def example_args(cfg, point) -> dict:
    """The launch arguments for `cfg` at `point`, on the meta device (no memory)."""
    import torch
    _check_point(point)
    B, H, S, D = point["B"], point["H"], point["S"], point["D"]
    HKV = point.get("HKV", H)
    dt = _torch_dtype(point.get("dtype", "bf16"))
    q, do, dq = (torch.empty((B, H, S, D), dtype=dt, device="meta") for _ in range(3))
    k, v = (torch.empty((B, HKV, S, D), dtype=dt, device="meta") for _ in range(2))
    lse, delta = (torch.empty((B, H, S), dtype=torch.float32, device="meta") for _ in range(2))
    return _kernel_args(q, k, v, do, lse, delta, dq, 1.0 / math.sqrt(D), bool(point.get("causal", 0)), cfg)
