"""Recurrent (token-by-token) gated linear attention forward, the "fused_recurrent" form GLA /
RWKV-6-style layers run at prefill and small-batch training, a bare @triton.jit kernel + its
launcher.

For each (batch b, head h), with a state S [K, V] (fp32, S_0 = h0[b, h] or zeros):

    S_t = S_{t-1} * exp(g_t)[:, None] + k_t[:, None] * v_t[None, :]
    o_t = sum_k (q_t[k] * scale) * S_t[k, :]                 scale = K ** -0.5 by default

q, k: [B, T, H, K], v: [B, T, H, V] (bf16 / fp16, contiguous); g: [B, T, H, K] per-key log-space
decay (g <= 0; fp32 or the input dtype); h0: optional [B, H, K, V] fp32 initial state; hT:
optional [B, H, K, V] fp32 final state; o: [B, T, H, V] in the input dtype.

One CTA per (V block, K block, b * H + h): grid (cdiv(V, BLOCK_V), cdiv(K, BLOCK_K), B H). The
CTA keeps its S[BLOCK_K, BLOCK_V] tile in fp32 registers and walks t = 0 .. T-1 sequentially
(each step depends on the previous state: a latency-bound walk of T steps, each loading four
short rows -- q, k, g of BLOCK_K and v of BLOCK_V elements -- decaying and updating the tile,
reducing it against q over the K axis and storing one BLOCK_V row of output). Rows past K / V
are masked (loads give 0, g 0: those state rows stay 0 and add nothing). With one K block
(BLOCK_K >= K) the CTA writes o directly in the input dtype; with NK = cdiv(K, BLOCK_K) > 1 the
K blocks write fp32 partial outputs [NK, B, T, H, V] into a workspace, and a second kernel
(`_sum_kernel`, one CTA per 1024 outputs, NK loads each) adds them in fp32 and rounds once.
Small tiles buy parallelism (more CTAs on the same serial walk, shorter per-step reductions)
at the price of re-reading q / k / g (NV times) and v (NK times) -- L2 hits -- and, when the K
axis is split, of the fp32 workspace round trip.

Tunables: BLOCK_K, BLOCK_V (powers of two >= 16), LOOP_STAGES (>= 1), num_warps, num_stages.
LOOP_STAGES is the walk's software-pipelining depth: the loads of the next steps do not depend
on the state, so with LOOP_STAGES = s > 1 the pipeliner issues step t + s - 1's q / k / g / v
rows (cp.async into a ring of shared-memory buffers) while step t computes; 1 is the plain
loop, every step waiting out its own load latency. A loop without a dot is not pipelined from
the launch's num_stages (Triton 3.6 leaves it alone: the same binary for 1-3), hence the explicit
tl.range stages; num_stages is kept as the launch option for completeness (1 in the sweep).
Problem parameters (a workload point): B, T, H, K, V, dtype (bf16 / fp16, of q / k / v / o),
g_dtype ("fp32" or "input"), h0 (an initial state is read), store_ht (the final state is
written).
"""

from __future__ import annotations

import triton
import triton.language as tl

SUM_BLOCK = 1024        # outputs per CTA of the partial-sum kernel
SUM_WARPS = 4


@triton.jit
def _kernel(Q, K, V, G, O, H0, HT, T, H, scale,
            K_DIM: tl.constexpr, V_DIM: tl.constexpr, USE_H0: tl.constexpr, STORE_HT: tl.constexpr,
            BLOCK_K: tl.constexpr, BLOCK_V: tl.constexpr, LOOP_STAGES: tl.constexpr):
    i_v = tl.program_id(0)
    i_k = tl.program_id(1)
    i_bh = tl.program_id(2)
    n_bh = tl.num_programs(2)
    i_b = i_bh // H
    i_h = i_bh - i_b * H

    ok = i_k * BLOCK_K + tl.arange(0, BLOCK_K)
    ov = i_v * BLOCK_V + tl.arange(0, BLOCK_V)
    mk = ok < K_DIM
    mv = ov < V_DIM
    mkv = mk[:, None] & mv[None, :]

    row = i_b.to(tl.int64) * T * H + i_h            # the (b, t = 0, h) row of the [B, T, H, *] tensors
    p_q = Q + row * K_DIM + ok
    p_k = K + row * K_DIM + ok
    p_g = G + row * K_DIM + ok
    p_v = V + row * V_DIM + ov
    # o ([B, T, H, V]) or the K block's slice of the fp32 partials ([NK, B, T, H, V])
    p_o = O + (i_k.to(tl.int64) * n_bh * T + row) * V_DIM + ov

    S = tl.zeros([BLOCK_K, BLOCK_V], dtype=tl.float32)
    if USE_H0:
        p_h0 = H0 + i_bh.to(tl.int64) * K_DIM * V_DIM + ok[:, None] * V_DIM + ov[None, :]
        S += tl.load(p_h0, mask=mkv, other=0.0)

    # the loads of step t + 1.. do not depend on S: the pipeliner prefetches them LOOP_STAGES - 1
    # steps ahead (cp.async into shared memory), leaving the state's FMA chain and the reduction
    for _ in tl.range(0, T, num_stages=LOOP_STAGES):
        q = tl.load(p_q, mask=mk, other=0.0).to(tl.float32) * scale
        k = tl.load(p_k, mask=mk, other=0.0).to(tl.float32)
        g = tl.load(p_g, mask=mk, other=0.0).to(tl.float32)
        v = tl.load(p_v, mask=mv, other=0.0).to(tl.float32)
        S = S * tl.exp(g)[:, None] + k[:, None] * v[None, :]
        o = tl.sum(S * q[:, None], axis=0)
        tl.store(p_o, o.to(O.dtype.element_ty), mask=mv)
        p_q += H * K_DIM
        p_k += H * K_DIM
        p_g += H * K_DIM
        p_v += H * V_DIM
        p_o += H * V_DIM

    if STORE_HT:
        p_ht = HT + i_bh.to(tl.int64) * K_DIM * V_DIM + ok[:, None] * V_DIM + ov[None, :]
        tl.store(p_ht, S, mask=mkv)


@triton.jit
def _sum_kernel(P, O, N, NK, BLOCK: tl.constexpr):
    """o[i] = sum_j P[j, i] for j < NK (fp32), rounded once to o's dtype."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    p = P + offs
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for _ in range(0, NK):
        acc += tl.load(p, mask=m, other=0.0)
        p += N
    tl.store(O + offs, acc.to(O.dtype.element_ty), mask=m)


# ---------------------------------------------------------------- launcher
DTYPES = ("bf16", "fp16")
TUNABLES = ("BLOCK_K", "BLOCK_V", "LOOP_STAGES", "num_warps", "num_stages")
BASELINE = {"BLOCK_K": 64, "BLOCK_V": 64, "LOOP_STAGES": 2, "num_warps": 2, "num_stages": 1}

# Each point is a serial walk of T steps per CTA; the grid (B H NK NV CTAs) decides how much of
# the GPU the walk fills. Inputs (q, k, g, v) and o are read / written once from DRAM.
POINTS = [
    # GLA-1.3B layer at prefill (d_model 2048, 4 heads, K = d/2 = 256 per head, V = d = 512),
    # 4 sequences of 2048, fp32 gates: 16 (b, h) walks of a 256 x 512 state -- the state must be
    # split over K and V blocks to fill 132 SMs (K split -> partial sums). Inputs 117 MB, o 34 MB.
    {"B": 4, "T": 2048, "H": 4, "K": 256, "V": 512, "dtype": "bf16", "g_dtype": "fp32",
     "h0": False, "store_ht": False},
    # RWKV-6-like (d_model 2048 = 32 heads x 64), 8 sequences of 1024 carrying a state in and out:
    # 256 walks of a 64 x 64 state, bf16 decay. Inputs 67 MB + h0 4 MB; o 34 MB + hT 4 MB.
    {"B": 8, "T": 1024, "H": 32, "K": 64, "V": 64, "dtype": "bf16", "g_dtype": "input",
     "h0": True, "store_ht": True},
    # one long sequence (16 heads x 128, fp16, fp32 gates, final state kept): only 16 walks of
    # 4096 steps, so the tiles must be small to occupy the GPU. Inputs 67 MB, o 17 MB.
    {"B": 1, "T": 4096, "H": 16, "K": 128, "V": 128, "dtype": "fp16", "g_dtype": "fp32",
     "h0": False, "store_ht": True},
]


def _torch_dtype(name: str):
    import torch
    try:
        return {"bf16": torch.bfloat16, "fp16": torch.float16}[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}") from None


def _g_dtype(point):
    import torch
    gd = point.get("g_dtype", "fp32")
    if gd == "fp32":
        return torch.float32
    if gd == "input":
        return _torch_dtype(point.get("dtype", "bf16"))
    raise ValueError(f"g_dtype {gd!r} is not 'fp32' or 'input' (the dtype of q / k / v)")


def _check_cfg(cfg) -> None:
    for name in ("BLOCK_K", "BLOCK_V"):
        v = cfg[name]
        if v < 16 or v & (v - 1):
            raise ValueError(f"{name}={v} must be a power of two >= 16")
    if cfg.get("num_warps", 1) not in (1, 2, 4, 8, 16):
        raise ValueError(f"num_warps={cfg['num_warps']} must be 1, 2, 4, 8 or 16")
    if cfg.get("LOOP_STAGES", 1) < 1:
        raise ValueError(f"LOOP_STAGES={cfg['LOOP_STAGES']} must be >= 1 (1: no prefetch)")


def _splits(cfg, K: int, V: int) -> tuple[int, int]:
    """(NK, NV): K blocks and V blocks of one (b, h) state."""
    return triton.cdiv(K, cfg["BLOCK_K"]), triton.cdiv(V, cfg["BLOCK_V"])


def _kernel_args(q, k, v, g, o_or_partials, h0, ht, scale, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    B, T, H, K = q.shape
    V = v.shape[-1]
    return dict(Q=q, K=k, V=v, G=g, O=o_or_partials, H0=h0, HT=ht, T=T, H=H, scale=float(scale),
                K_DIM=K, V_DIM=V, USE_H0=h0 is not None, STORE_HT=ht is not None,
                BLOCK_K=cfg["BLOCK_K"], BLOCK_V=cfg["BLOCK_V"], LOOP_STAGES=cfg["LOOP_STAGES"])


def fused_recurrent_gla(q, k, v, g, scale=None, initial_state=None, output_final_state=False, *,
                        BLOCK_K=64, BLOCK_V=64, LOOP_STAGES=2, num_warps=2, num_stages=1):
    """o [B, T, H, V] (q's dtype) and the final state [B, H, K, V] fp32 (None unless
    output_final_state) of the gated recurrence above. q, k, g: [B, T, H, K]; v: [B, T, H, V];
    q / k / v bf16 or fp16 (one dtype), g fp32 or that dtype; initial_state fp32 [B, H, K, V]."""
    import torch
    if q.dim() != 4 or k.shape != q.shape or g.shape != q.shape or v.dim() != 4 or v.shape[:3] != q.shape[:3]:
        raise ValueError(f"expected q, k, g [B, T, H, K] and v [B, T, H, V]; got {tuple(q.shape)}, "
                         f"{tuple(k.shape)}, {tuple(g.shape)}, {tuple(v.shape)}")
    if q.dtype not in (torch.bfloat16, torch.float16) or k.dtype != q.dtype or v.dtype != q.dtype:
        raise ValueError(f"q, k, v must share one dtype, bf16 or fp16; got {q.dtype}, {k.dtype}, {v.dtype}")
    if g.dtype not in (torch.float32, q.dtype):
        raise ValueError(f"g must be fp32 or {q.dtype}; got {g.dtype}")
    B, T, H, K = q.shape
    V = v.shape[-1]
    if min(B, H, K, V) == 0:
        raise ValueError(f"empty problem: B={B}, H={H}, K={K}, V={V}")
    cfg = {"BLOCK_K": BLOCK_K, "BLOCK_V": BLOCK_V, "LOOP_STAGES": LOOP_STAGES, "num_warps": num_warps}
    _check_cfg(cfg)
    if initial_state is not None:
        if initial_state.shape != (B, H, K, V) or initial_state.dtype != torch.float32:
            raise ValueError(f"initial_state must be fp32 [{B}, {H}, {K}, {V}]; got {initial_state.dtype} "
                             f"{tuple(initial_state.shape)}")
        initial_state = initial_state.contiguous()
    if scale is None:
        scale = K ** -0.5
    q, k, v, g = (x.contiguous() for x in (q, k, v, g))
    o = torch.empty((B, T, H, V), dtype=q.dtype, device=q.device)
    ht = torch.empty((B, H, K, V), dtype=torch.float32, device=q.device) if output_final_state else None
    if T == 0:
        if ht is not None:
            ht.copy_(initial_state if initial_state is not None else torch.zeros_like(ht))
        return o, ht
    NK, NV = _splits(cfg, K, V)
    target = o if NK == 1 else torch.empty((NK, B, T, H, V), dtype=torch.float32, device=q.device)
    _kernel[(NV, NK, B * H)](**_kernel_args(q, k, v, g, target, initial_state, ht, scale, cfg),
                             num_warps=num_warps, num_stages=num_stages)
    if NK > 1:
        n = o.numel()
        _sum_kernel[(triton.cdiv(n, SUM_BLOCK),)](target, o, n, NK, BLOCK=SUM_BLOCK, num_warps=SUM_WARPS)
    return o, ht


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """q, k, v ~ N(0, 1) in the point's dtype; g = logsigmoid(N(0, 1) + 2) / 4 (GLA's gate
    logsigmoid(x) / normaliser: decays exp(g) in ~(0.5, 1), mostly > 0.95, so the state remembers
    tens of steps); h0 ~ N(0, 1) fp32 when the point has one. Drawn on the CPU from the seed."""
    import torch
    gen = torch.Generator().manual_seed(seed)
    dt = _torch_dtype(point.get("dtype", "bf16"))
    gdt = _g_dtype(point)
    B, T, H, K, V = (point[n] for n in ("B", "T", "H", "K", "V"))
    q = torch.randn((B, T, H, K), generator=gen).to(dt)
    k = torch.randn((B, T, H, K), generator=gen).to(dt)
    v = torch.randn((B, T, H, V), generator=gen).to(dt)
    g = (torch.nn.functional.logsigmoid(torch.randn((B, T, H, K), generator=gen) + 2.0) / 4).to(gdt)
    h0 = torch.randn((B, H, K, V), generator=gen) if point.get("h0", False) else None
    out = {"q": q.to(device), "k": k.to(device), "v": v.to(device), "g": g.to(device),
           "h0": h0.to(device) if h0 is not None else None, "store_ht": bool(point.get("store_ht", False))}
    return out


def _pack(o, ht):
    """launch's / reference's output: o alone, or o and hT flattened into one fp32 vector."""
    import torch
    if ht is None:
        return o
    return torch.cat((o.float().reshape(-1), ht.float().reshape(-1)))


def launch(inputs, cfg):
    """o (or o and hT, flattened, fp32, when the point stores the final state)."""
    o, ht = fused_recurrent_gla(inputs["q"], inputs["k"], inputs["v"], inputs["g"], None, inputs["h0"],
                                inputs["store_ht"], BLOCK_K=cfg["BLOCK_K"], BLOCK_V=cfg["BLOCK_V"],
                                LOOP_STAGES=cfg["LOOP_STAGES"], num_warps=cfg["num_warps"],
                                num_stages=cfg["num_stages"])
    return _pack(o, ht)


def _recurrence(inputs, dtype):
    import torch
    q, k, v, g = (inputs[n].to(dtype) for n in ("q", "k", "v", "g"))
    B, T, H, K = q.shape
    V = v.shape[-1]
    S = inputs["h0"].to(dtype) if inputs["h0"] is not None else torch.zeros((B, H, K, V), dtype=dtype,
                                                                              device=q.device)
    q = q * K ** -0.5
    decay = g.exp()
    o = torch.empty((B, T, H, V), dtype=dtype, device=q.device)
    for t in range(T):
        S = S * decay[:, t, :, :, None] + k[:, t, :, :, None] * v[:, t, :, None, :]
        o[:, t] = torch.einsum("bhk,bhkv->bhv", q[:, t], S)
    return o, (S if inputs["store_ht"] else None)


def reference(inputs):
    """The recurrence step by step in fp64 on the same (rounded) inputs; fp32 out."""
    o, ht = _recurrence(inputs, __import__("torch").float64)
    return _pack(o.float(), ht)


def torch_baseline(inputs):
    """The same step loop in eager fp32 (T small kernels a step, as a torch user writes it), o rounded
    to the input dtype."""
    import torch
    o, ht = _recurrence(inputs, torch.float32)
    return _pack(o.to(inputs["q"].dtype), ht)


def bytes_moved(point) -> int:
    """q, k, g, v read once, o written once, h0 read and hT written when the point has them. The
    fp32 partials of a split K axis (config-dependent) are not counted."""
    B, T, H, K, V = (point[n] for n in ("B", "T", "H", "K", "V"))
    e = _torch_dtype(point.get("dtype", "bf16")).itemsize
    ge = _g_dtype(point).itemsize
    state = 4 * B * H * K * V
    return (B * T * H * (2 * K * e + K * ge + 2 * V * e) + (state if point.get("h0", False) else 0)
            + (state if point.get("store_ht", False) else 0))


def flops(point) -> int:
    """Per step and state element: the decay multiply, the k v FMA (2) and the q readout FMA (2)."""
    B, T, H, K, V = (point[n] for n in ("B", "T", "H", "K", "V"))
    return 5 * B * T * H * K * V


def grid(cfg, point) -> tuple[int, int, int]:
    """(V blocks, K blocks, B H), as launch passes it."""
    NK, NV = _splits(cfg, point["K"], point["V"])
    return (NV, NK, point["B"] * point["H"])


def loop_iterations(cfg, point) -> int:
    """Every CTA walks all T steps."""
    return point["T"]


def secondary_kernels(cfg, point) -> list[dict]:
    """`_sum_kernel` when the K axis is split (NK > 1): one CTA (4 warps) per 1024 outputs, NK
    steps of 1024 fp32 partials each. The partials were just written by `_kernel`; what of them
    still sits in L2 depends on their size: dram_bytes 0 when the workspace fits in half the
    50 MB L2, else every byte from DRAM."""
    NK, _ = _splits(cfg, point["K"], point["V"])
    if NK == 1:
        return []
    n = point["B"] * point["T"] * point["H"] * point["V"]
    tile = 4 * SUM_BLOCK
    return [{"name": "_sum_kernel", "grid": triton.cdiv(n, SUM_BLOCK), "iterations": NK, "tile_bytes": tile,
             "dram_bytes": 0 if 4 * NK * n <= 25 * 2**20 else tile, "ahead": 0, "blocks_per_sm": 16}]


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory)."""
    import torch
    _check_cfg(cfg)
    dt = _torch_dtype(point.get("dtype", "bf16"))
    gdt = _g_dtype(point)
    B, T, H, K, V = (point[n] for n in ("B", "T", "H", "K", "V"))
    q = torch.empty((B, T, H, K), dtype=dt, device="meta")
    k = torch.empty((B, T, H, K), dtype=dt, device="meta")
    g = torch.empty((B, T, H, K), dtype=gdt, device="meta")
    v = torch.empty((B, T, H, V), dtype=dt, device="meta")
    NK, _ = _splits(cfg, K, V)
    if NK == 1:
        o = torch.empty((B, T, H, V), dtype=dt, device="meta")
    else:
        o = torch.empty((NK, B, T, H, V), dtype=torch.float32, device="meta")
    h0 = torch.empty((B, H, K, V), dtype=torch.float32, device="meta") if point.get("h0", False) else None
    ht = torch.empty((B, H, K, V), dtype=torch.float32, device="meta") if point.get("store_ht", False) else None
    return _kernel_args(q, k, v, g, o, h0, ht, K ** -0.5, cfg)
