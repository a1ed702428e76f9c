"""Fused per-head q / k RMSNorm + NeoX rotary embedding, in place on the packed qkv projection
output (the "qk_norm -> rope" pair of Qwen3 / Gemma-3 attention, fused as SGLang / vLLM fuse it),
a bare @triton.jit kernel + its launcher.

    for every token t and every q head and k head h (v heads untouched):
        x = qkv[t, h*D:(h+1)*D] (fp32)
        y = x * rsqrt(mean(x^2) + eps) * w            (w = q_w for q heads, k_w for k heads)
        y1, y2 = y[:D/2], y[D/2:];  c, s = cos_sin[pos[t], :D/2], cos_sin[pos[t], D/2:]
        qkv[t, h*D:(h+1)*D] = bf16([y1 c - y2 s, y2 c + y1 s])

qkv: [T, (Hq + 2 Hkv) D] bf16 / fp16 (q heads first, then k's, then v's; heads contiguous within a row,
any row stride); q_w, k_w: [D] in qkv's dtype; positions: [T] int64 (each token's position in its
sequence, any order: a batch of several sequences); cos_sin: [max_pos, D] fp32 (cos in the first
half of a row, sin in the second, as vLLM's cos_sin_cache). fp32 math, one rounding to qkv's dtype at
the store. D is a power of two (128 and 256 in the models, 64 tested).

Grid: (cdiv(T, BLOCK_T), G). A CTA owns BLOCK_T tokens: it loads their positions and their
[BLOCK_T, D/2] cos and sin rows once, and the two weight vectors, then walks the q + k heads of
those tokens in "head chunks" of HEADS_PER_CTA heads: cdiv(Hq, HEADS_PER_CTA) q chunks, then
cdiv(Hkv, HEADS_PER_CTA) k chunks (a chunk never mixes q and k heads, so the tails are masked:
Hkv = 4 with HEADS_PER_CTA 8 leaves half a chunk idle). Per chunk the halves x1, x2 are two
[BLOCK_T, HEADS_PER_CTA, D/2] loads (D/2 contiguous bf16 a row), one row reduction, the rotation,
two stores. SPLIT_HEADS chooses the grid: 0, the per-token grid (G = 1: a CTA loops over all of
its tokens' chunks, its cos / sin reused for every head); 1, the per-head-chunk grid (G = the
chunk count: one chunk a CTA, no loop, G times the CTAs, each reloading the cos / sin rows from
L1 / L2). Token tails are masked (rows past T load nothing and store nothing).

Tunables: BLOCK_T, HEADS_PER_CTA (powers of two), SPLIT_HEADS (0 / 1), num_warps, num_stages
(the chunk loop holds no dot; Triton's pipeliner leaves its loads alone, see the sweep's note).
Problem parameters (a workload point): T, Hq, Hkv, D, dtype (bf16 / fp16), seqs (sequences in the batch: T // seqs
consecutive positions each, from a random start; seqs = T is a decode batch, one token each),
max_pos (rows of the cos_sin cache).
"""

from __future__ import annotations

import triton
import triton.language as tl

EPS = 1e-6
ROPE_BASE = 1_000_000.0         # Qwen3's rope_theta


@triton.jit
def _kernel(QKV, QW, KW, POS, COS_SIN, T, HQ, HKV, stride_t, stride_cs, eps,
            HEAD_DIM: tl.constexpr, BLOCK_T: tl.constexpr, HEADS_PER_CTA: tl.constexpr,
            SPLIT_HEADS: tl.constexpr):
    HALF: tl.constexpr = HEAD_DIM // 2
    pid_t = tl.program_id(0)
    ts = pid_t * BLOCK_T + tl.arange(0, BLOCK_T)
    t_ok = ts < T
    hs = tl.arange(0, HEADS_PER_CTA)
    ds = tl.arange(0, HALF)

    # this CTA's tokens: positions, their cos / sin rows ([BLOCK_T, 1, HALF], fp32), kept for every chunk
    pos = tl.load(POS + ts, mask=t_ok, other=0)
    cs_row = COS_SIN + pos[:, None, None] * stride_cs + ds[None, None, :]
    t_ok3 = t_ok[:, None, None]
    cos = tl.load(cs_row, mask=t_ok3, other=0.0)
    sin = tl.load(cs_row + HALF, mask=t_ok3, other=0.0)

    # both weight vectors (D bf16 each), as [1, 1, HALF] halves
    qw1 = tl.load(QW + ds).to(tl.float32)[None, None, :]
    qw2 = tl.load(QW + HALF + ds).to(tl.float32)[None, None, :]
    kw1 = tl.load(KW + ds).to(tl.float32)[None, None, :]
    kw2 = tl.load(KW + HALF + ds).to(tl.float32)[None, None, :]

    row = QKV + ts.to(tl.int64)[:, None, None] * stride_t + ds[None, None, :]
    q_chunks = tl.cdiv(HQ, HEADS_PER_CTA)
    n_chunks = q_chunks + tl.cdiv(HKV, HEADS_PER_CTA)
    if SPLIT_HEADS:
        c_lo = tl.program_id(1)
        c_hi = c_lo + 1
    else:
        c_lo = 0
        c_hi = n_chunks
    for c in range(c_lo, c_hi):
        is_k = c >= q_chunks
        # first head of the chunk (a column block of qkv) and the end of its q or k heads
        h0 = tl.where(is_k, HQ + (c - q_chunks) * HEADS_PER_CTA, c * HEADS_PER_CTA)
        h_end = tl.where(is_k, HQ + HKV, HQ)
        h = h0 + hs
        m = t_ok3 & (h < h_end)[None, :, None]
        p1 = row + (h * HEAD_DIM)[None, :, None]
        x1 = tl.load(p1, mask=m, other=0.0).to(tl.float32)
        x2 = tl.load(p1 + HALF, mask=m, other=0.0).to(tl.float32)
        ms = (tl.sum(x1 * x1, axis=2) + tl.sum(x2 * x2, axis=2)) / HEAD_DIM
        r = tl.rsqrt(ms + eps)[:, :, None]
        w1 = tl.where(is_k, kw1, qw1)
        w2 = tl.where(is_k, kw2, qw2)
        y1 = x1 * r * w1
        y2 = x2 * r * w2
        o1 = y1 * cos - y2 * sin
        o2 = y2 * cos + y1 * sin
        tl.store(p1, o1.to(QKV.dtype.element_ty), mask=m)
        tl.store(p1 + HALF, o2.to(QKV.dtype.element_ty), mask=m)


# ---------------------------------------------------------------- launcher
TUNABLES = ("BLOCK_T", "HEADS_PER_CTA", "SPLIT_HEADS", "num_warps", "num_stages")
BASELINE = {"BLOCK_T": 4, "HEADS_PER_CTA": 4, "SPLIT_HEADS": 0, "num_warps": 4, "num_stages": 1}

# All bandwidth-bound: each q / k element is read and written once (2 x 2 bytes), ~10 flops of
# fp32 a element. q + k bytes below are read + write.
POINTS = [
    # Qwen3-8B prefill, 4 sequences of 4096 tokens: 40 q+k heads, qkv 201 MB, q+k r+w 336 MB (~70 us at 4.8 TB/s)
    {"T": 16384, "Hq": 32, "Hkv": 8, "D": 128, "seqs": 4, "max_pos": 40960, "dtype": "bf16"},
    # Qwen3-235B-A22B decode batch of 2048 sequences, one token each at a random position:
    # 68 q+k heads (64:4 GQA, the k chunk half empty at 8 heads a chunk), q+k r+w 71 MB (~15 us)
    {"T": 2048, "Hq": 64, "Hkv": 4, "D": 128, "seqs": 2048, "max_pos": 40960, "dtype": "bf16"},
    # Gemma-3-style D 256 prefill (16 q / 8 kv heads), 2 sequences of 4096: q+k r+w 201 MB (~42 us)
    {"T": 8192, "Hq": 16, "Hkv": 8, "D": 256, "seqs": 2, "max_pos": 32768, "dtype": "bf16"},
]


DTYPES = ("bf16", "fp16")       # qkv's and the weights'


def _torch_dtype(name: str):
    import torch
    try:
        return {"bf16": torch.bfloat16, "fp16": torch.float16}[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)} (qkv's)") from None


def _check_cfg(cfg) -> None:
    for name in ("BLOCK_T", "HEADS_PER_CTA"):
        v = cfg[name]
        if v < 1 or v & (v - 1):
            raise ValueError(f"{name}={v} must be a power of two >= 1")
    if cfg["SPLIT_HEADS"] not in (0, 1):
        raise ValueError(f"SPLIT_HEADS={cfg['SPLIT_HEADS']} must be 0 (per-token grid) or 1 (per-head-chunk grid)")


def _chunks(Hq: int, Hkv: int, hpc: int) -> int:
    return triton.cdiv(Hq, hpc) + triton.cdiv(Hkv, hpc)


def _grid(T: int, Hq: int, Hkv: int, cfg) -> tuple[int, int]:
    return (triton.cdiv(T, cfg["BLOCK_T"]), _chunks(Hq, Hkv, cfg["HEADS_PER_CTA"]) if cfg["SPLIT_HEADS"] else 1)


def _kernel_args(qkv, q_w, k_w, positions, cos_sin, Hq, Hkv, D, eps, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    return dict(QKV=qkv, QW=q_w, KW=k_w, POS=positions, COS_SIN=cos_sin, T=qkv.shape[0], HQ=Hq, HKV=Hkv,
                stride_t=qkv.stride(0), stride_cs=cos_sin.stride(0), eps=eps, HEAD_DIM=D,
                BLOCK_T=cfg["BLOCK_T"], HEADS_PER_CTA=cfg["HEADS_PER_CTA"], SPLIT_HEADS=cfg["SPLIT_HEADS"])


def qk_norm_rope(qkv, q_w, k_w, positions, cos_sin, num_q_heads: int, num_kv_heads: int, eps: float = EPS, *,
                 BLOCK_T=4, HEADS_PER_CTA=4, SPLIT_HEADS=0, num_warps=4, num_stages=1):
    """In place on qkv [T, (Hq + 2 Hkv) D] (bf16 / fp16, unit column stride): RMSNorm of every q
    and k head with q_w / k_w [D], then NeoX RoPE at positions [T] (int64) from cos_sin [max_pos, D]
    fp32 (cos | sin). Returns qkv."""
    import torch
    if qkv.dim() != 2 or qkv.stride(1) != 1:
        raise ValueError(f"qkv must be 2-D [T, (Hq + 2 Hkv) D] with unit column stride; got {tuple(qkv.shape)} "
                         f"strides {qkv.stride()}")
    if qkv.dtype not in (torch.bfloat16, torch.float16):
        raise ValueError(f"qkv must be bf16 / fp16; got {qkv.dtype}")
    Hq, Hkv = num_q_heads, num_kv_heads
    if Hq < 1 or Hkv < 1 or qkv.shape[1] % (Hq + 2 * Hkv):
        raise ValueError(f"qkv width {qkv.shape[1]} is not (Hq + 2 Hkv) D for Hq={Hq}, Hkv={Hkv}")
    D = qkv.shape[1] // (Hq + 2 * Hkv)
    if D < 2 or D & (D - 1):
        raise ValueError(f"head size D={D} must be a power of two >= 2")
    if q_w.shape != (D,) or k_w.shape != (D,):
        raise ValueError(f"q_w and k_w must be [D={D}]; got {tuple(q_w.shape)}, {tuple(k_w.shape)}")
    T = qkv.shape[0]
    if positions.shape != (T,) or positions.dtype != torch.int64:
        raise ValueError(f"positions must be int64 [T={T}]; got {positions.dtype} {tuple(positions.shape)}")
    if cos_sin.dim() != 2 or cos_sin.shape[1] != D or cos_sin.dtype != torch.float32 or cos_sin.stride(1) != 1:
        raise ValueError(f"cos_sin must be fp32 [max_pos, D={D}] with unit column stride; got {cos_sin.dtype} "
                         f"{tuple(cos_sin.shape)}")
    cfg = {"BLOCK_T": BLOCK_T, "HEADS_PER_CTA": HEADS_PER_CTA, "SPLIT_HEADS": SPLIT_HEADS}
    _check_cfg(cfg)
    if T == 0:
        return qkv
    _kernel[_grid(T, Hq, Hkv, cfg)](**_kernel_args(qkv, q_w.contiguous(), k_w.contiguous(), positions.contiguous(),
                                                   cos_sin, Hq, Hkv, D, eps, cfg),
                                    num_warps=num_warps, num_stages=num_stages)
    return qkv


def cos_sin_cache(max_pos: int, D: int, base: float = ROPE_BASE, device: str = "cuda"):
    """[max_pos, D] fp32: cos(p f_i) | sin(p f_i), f_i = base^(-2i/D), built in fp64."""
    import torch
    inv = base ** (-torch.arange(0, D, 2, dtype=torch.float64) / D)
    ang = torch.arange(max_pos, dtype=torch.float64)[:, None] * inv[None, :]
    return torch.cat((ang.cos(), ang.sin()), dim=1).float().to(device)


def make_positions(T: int, seqs: int, max_pos: int, gen):
    """int64 [T]: `seqs` sequences of T // seqs consecutive positions (the last takes the
    remainder), each from a random start (a prefix already cached), drawn with `gen` on the CPU."""
    import torch
    if not 1 <= seqs <= T:
        raise ValueError(f"seqs={seqs} must be in [1, T={T}]")
    L = T // seqs
    lens = [L] * (seqs - 1) + [T - L * (seqs - 1)]
    if max(lens) > max_pos:
        raise ValueError(f"a sequence of {max(lens)} tokens does not fit max_pos={max_pos}")
    starts = torch.randint(0, max_pos - max(lens) + 1, (seqs,), generator=gen)
    return torch.cat([s + torch.arange(n) for s, n in zip(starts.tolist(), lens)])


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """Random bf16 qkv (N(0, 1), so RMS ~ 1; every element drawn on the CPU from the seed), weights
    around 1 (as trained q_norm / k_norm weights are), positions of `seqs` sequences, Qwen3's
    cos_sin table; qkv0 a pristine copy (launch writes qkv)."""
    import torch
    gen = torch.Generator().manual_seed(seed)
    dt = _torch_dtype(point.get("dtype", "bf16"))
    T, Hq, Hkv, D = point["T"], point["Hq"], point["Hkv"], point["D"]
    qkv = torch.randn((T, (Hq + 2 * Hkv) * D), generator=gen).to(dt)
    q_w = (1.0 + 0.3 * torch.randn((D,), generator=gen)).to(dt)
    k_w = (1.0 + 0.3 * torch.randn((D,), generator=gen)).to(dt)
    positions = make_positions(T, point.get("seqs", 1), point["max_pos"], gen)
    return {"qkv": qkv.to(device), "qkv0": qkv.clone().to(device), "q_w": q_w.to(device), "k_w": k_w.to(device),
            "positions": positions.to(device), "cos_sin": cos_sin_cache(point["max_pos"], D, device=device),
            "Hq": Hq, "Hkv": Hkv}


def launch(inputs, cfg):
    """Writes inputs["qkv"] in place (each repeat normalises and rotates it once more) and returns it."""
    return qk_norm_rope(inputs["qkv"], inputs["q_w"], inputs["k_w"], inputs["positions"], inputs["cos_sin"],
                        inputs["Hq"], inputs["Hkv"], BLOCK_T=cfg["BLOCK_T"], HEADS_PER_CTA=cfg["HEADS_PER_CTA"],
                        SPLIT_HEADS=cfg["SPLIT_HEADS"], num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])


def _norm_rope(x, w, cos, sin, eps):
    import torch
    half = x.shape[-1] // 2
    y = x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps) * w
    y1, y2 = y[..., :half], y[..., half:]
    return torch.cat((y1 * cos - y2 * sin, y2 * cos + y1 * sin), dim=-1)


def reference(inputs):
    """[T, (Hq + 2 Hkv) D] fp32, in fp64 from qkv0 (the buffer after exactly one launch on fresh
    inputs): v copied, q and k normalised and rotated."""
    qkv = inputs["qkv0"].double()
    Hq, Hkv = inputs["Hq"], inputs["Hkv"]
    T = qkv.shape[0]
    D = qkv.shape[1] // (Hq + 2 * Hkv)
    x = qkv.reshape(T, Hq + 2 * Hkv, D).clone()
    cs = inputs["cos_sin"].double()[inputs["positions"]]
    cos, sin = cs[:, None, : D // 2], cs[:, None, D // 2:]
    x[:, :Hq] = _norm_rope(x[:, :Hq], inputs["q_w"].double(), cos, sin, EPS)
    x[:, Hq:Hq + Hkv] = _norm_rope(x[:, Hq:Hq + Hkv], inputs["k_w"].double(), cos, sin, EPS)
    return x.reshape(T, -1).float()


def torch_baseline(inputs):
    """Eager torch as a model file writes it (Qwen3Attention: q_norm / k_norm on [T, H, D] views in
    fp32, then the rotary module), on a copy of qkv0; bf16 out."""
    import torch
    qkv = inputs["qkv0"].clone()
    Hq, Hkv = inputs["Hq"], inputs["Hkv"]
    T = qkv.shape[0]
    D = qkv.shape[1] // (Hq + 2 * Hkv)
    x = qkv.view(T, Hq + 2 * Hkv, D)
    cs = inputs["cos_sin"][inputs["positions"]]
    cos, sin = cs[:, None, : D // 2], cs[:, None, D // 2:]
    x[:, :Hq] = _norm_rope(x[:, :Hq].float(), inputs["q_w"].float(), cos, sin, EPS).to(qkv.dtype)
    x[:, Hq:Hq + Hkv] = _norm_rope(x[:, Hq:Hq + Hkv].float(), inputs["k_w"].float(), cos, sin, EPS).to(qkv.dtype)
    return qkv


def bytes_moved(point) -> int:
    """q and k read and written once (bf16), the positions, each token's cos_sin row (fp32; an
    upper bound: sequences whose ranges overlap share rows), the two weights."""
    _torch_dtype(point.get("dtype", "bf16"))
    T, Hq, Hkv, D = point["T"], point["Hq"], point["Hkv"], point["D"]
    return 2 * 2 * T * (Hq + Hkv) * D + 8 * T + 4 * T * D + 2 * 2 * D


def flops(point) -> int:
    """Per q / k element: square-add (2), scale by rsqrt and weight (2), the rotation (3)."""
    return 7 * point["T"] * (point["Hq"] + point["Hkv"]) * point["D"]


def grid(cfg, point) -> tuple[int, int]:
    """(token blocks, head chunks if SPLIT_HEADS else 1)."""
    return _grid(point["T"], point["Hq"], point["Hkv"], cfg)


def loop_iterations(cfg, point) -> int:
    """Head chunks a CTA walks: all q + k chunks of its tokens (SPLIT_HEADS 0) or one."""
    return 1 if cfg["SPLIT_HEADS"] else _chunks(point["Hq"], point["Hkv"], cfg["HEADS_PER_CTA"])


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory)."""
    import torch
    dt = _torch_dtype(point.get("dtype", "bf16"))
    T, Hq, Hkv, D = point["T"], point["Hq"], point["Hkv"], point["D"]
    qkv = torch.empty((T, (Hq + 2 * Hkv) * D), dtype=dt, device="meta")
    w = torch.empty((D,), dtype=dt, device="meta")
    positions = torch.empty((T,), dtype=torch.int64, device="meta")
    cos_sin = torch.empty((point["max_pos"], D), dtype=torch.float32, device="meta")
    return _kernel_args(qkv, w, w, positions, cos_sin, Hq, Hkv, D, EPS, cfg)
