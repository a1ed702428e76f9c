"""Fused linear + cross-entropy forward (an LM head and its loss without the [T, V] logits, as
Liger-Kernel's fused linear cross entropy), a bare @triton.jit kernel + its launcher (and a
small merge kernel for the vocabulary split).

    z[t, v]  = h[t, :] . W[v, :]                                  (fp32, never stored)
    loss[t]  = logsumexp_v z[t, v] - z[t, target[t]]             (0 where target[t] == ignore_index)

h: [T, D] fp16 / bf16 hidden states (the final norm's output; D contiguous, any row stride),
W: [V, D] the LM-head weight in h's dtype (D contiguous), targets: [T] int64 with
ignore_index (-100) on tokens that carry no loss (prompt, padding). loss: [T] fp32. The
wrapper can also return the mean over the non-ignored tokens (torch, from loss).

Work split: CTA (pid_t, pid_s) of a (cdiv(T, BLOCK_T), SPLIT_V) grid owns BLOCK_T tokens and
the pid_s-th of SPLIT_V contiguous vocabulary ranges of V_PER_SPLIT (a multiple of BLOCK_V:
cdiv(cdiv(V, BLOCK_V), SPLIT_V) tiles; the last splits may get fewer tiles, or none). It walks
its range in [BLOCK_T, BLOCK_V] logit tiles; each tile is a small GEMM whose inner loop steps
over D in BLOCK_D slices (tl.dot, fp32 accumulate; the inner loop is the one num_stages
pipelines). After a tile, in registers: the logits in log2 units (x log2 e), columns past V set
to -inf, a running row max m and a running sum s of 2^(x - m) (s rescaled by 2^(m_old - m_new)),
and the target logit picked out where the column equals the token's target (summed: it matches
at most once). pid_t is the fastest grid index, so the CTAs resident together share W's vocab
slices (W, the big operand -- 1-1.2 GB -- is read from DRAM about once) while h stays in L2.

Each CTA stores its (m, s) per token into a [2, SPLIT_V, T] fp32 workspace and, for the tokens
whose target lies in its range, the raw fp32 target logit into a [T] buffer (exactly one CTA
writes each non-ignored token's). `_merge_kernel` (one CTA per MERGE_BLOCK tokens, the SPLIT_V
partials combined in a fixed order: deterministic) gives loss = ln 2 (M + log2 S) - z_target,
0 for ignored tokens (declared in secondary_kernels).

Tails: token rows past T are wrapped (row mod T: in-bounds loads, masked stores); vocab rows
past V are wrapped and their logits masked to -inf; a D tail (D not a multiple of BLOCK_D) is
masked only when present (EVEN_D). Ignored tokens are computed with their tile (their rows are
part of the GEMM) and zeroed by the merge.

Tunables: BLOCK_T (tokens a CTA, the GEMM's M tile), BLOCK_V (vocab a tile, its N tile),
BLOCK_D (the K step), SPLIT_V (vocab ranges: the grid's second axis), num_warps, num_stages.
Problem parameters (a workload point): T, D, V, dtype (fp16 / bf16), ignore (the fraction of
tokens whose target is ignore_index, default 0.1).
"""

from __future__ import annotations

import triton
import triton.language as tl

IGNORE_INDEX = -100
MERGE_BLOCK = 256     # tokens per CTA of the merge
MERGE_WARPS = 4
LN2 = 0.6931471805599453


@triton.jit
def _kernel(H, W, TGT, PART, ZT, T, V, D, V_PER_SPLIT, stride_ht, stride_wv, stride_pp, stride_ps,
            BLOCK_T: tl.constexpr, BLOCK_V: tl.constexpr, BLOCK_D: tl.constexpr, EVEN_D: tl.constexpr,
            EVEN_V: tl.constexpr):
    LOG2E: tl.constexpr = 1.4426950408889634
    pid_t = tl.program_id(0)
    pid_s = tl.program_id(1)

    offs_t = pid_t * BLOCK_T + tl.arange(0, BLOCK_T)
    t_ld = offs_t % T                       # wrapped: rows past T load in bounds, are not stored
    tgt = tl.load(TGT + t_ld).to(tl.int32)  # V < 2^31; ignore_index stays negative
    offs_d = tl.arange(0, BLOCK_D)
    h_base = H + t_ld.to(tl.int64)[:, None] * stride_ht + offs_d[None, :]

    v_start = pid_s * V_PER_SPLIT
    v_end = tl.minimum(V, v_start + V_PER_SPLIT)
    n_tiles = tl.cdiv(v_end - v_start, BLOCK_V)          # <= 0 for a split past V

    m = tl.full([BLOCK_T], -1.0e30, tl.float32)          # running max (log2 units), finite
    s = tl.zeros([BLOCK_T], tl.float32)                  # running sum of 2^(x - m)
    zt = tl.zeros([BLOCK_T], tl.float32)                 # the target's raw logit (where in range)
    offs_v = tl.arange(0, BLOCK_V)
    for vt in range(0, n_tiles):
        v0 = v_start + vt * BLOCK_V
        cols = v0 + offs_v
        c_ld = cols % V
        w_ptr = W + c_ld.to(tl.int64)[:, None] * stride_wv + offs_d[None, :]
        h_ptr = h_base
        acc = tl.zeros([BLOCK_T, BLOCK_V], tl.float32)
        for k in range(0, D, BLOCK_D):
            if EVEN_D:
                a = tl.load(h_ptr)
                b = tl.load(w_ptr)
            else:
                dm = (k + offs_d < D)[None, :]
                a = tl.load(h_ptr, mask=dm, other=0.0)
                b = tl.load(w_ptr, mask=dm, other=0.0)
            acc = tl.dot(a, tl.trans(b), acc)
            h_ptr += BLOCK_D
            w_ptr += BLOCK_D
        if EVEN_V:
            x = acc * LOG2E
        else:
            x = tl.where((cols < V)[None, :], acc * LOG2E, float("-inf"))
        m_new = tl.maximum(m, tl.max(x, axis=1))
        s = s * tl.math.exp2(m - m_new) + tl.sum(tl.math.exp2(x - m_new[:, None]), axis=1)
        m = m_new
        # the target's column in this tile (per row, int32): one compare a logit against a constant
        zt += tl.sum(tl.where(offs_v[None, :] == (tgt - v0)[:, None], acc, 0.0), axis=1)

    ok = offs_t < T
    p_ptr = PART + pid_s * stride_ps + offs_t
    tl.store(p_ptr, m, mask=ok)
    tl.store(p_ptr + stride_pp, s, mask=ok)
    tl.store(ZT + offs_t, zt, mask=ok & (tgt >= v_start) & (tgt < v_end))


@triton.jit
def _merge_kernel(PART, ZT, TGT, LOSS, T, stride_pp, stride_ps, ignore_index,
                  SPLIT_V: tl.constexpr, BLOCK: tl.constexpr):
    """loss[t] = ln2 (M + log2 S) - z_target over the SPLIT_V partials (m, s), in split order."""
    LN2_C: tl.constexpr = 0.6931471805599453
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < T
    mx = tl.full([BLOCK], -1.0e30, tl.float32)
    sm = tl.zeros([BLOCK], tl.float32)
    for sp in range(SPLIT_V):
        mi = tl.load(PART + sp * stride_ps + offs, mask=ok, other=-1.0e30)
        si = tl.load(PART + stride_pp + sp * stride_ps + offs, mask=ok, other=0.0)
        m_new = tl.maximum(mx, mi)
        sm = sm * tl.math.exp2(mx - m_new) + si * tl.math.exp2(mi - m_new)
        mx = m_new
    tgt = tl.load(TGT + offs, mask=ok, other=ignore_index)
    live = ok & (tgt != ignore_index)
    zt = tl.load(ZT + offs, mask=live, other=0.0)
    lse = (mx + tl.log2(tl.where(live, sm, 1.0))) * LN2_C
    tl.store(LOSS + offs, tl.where(live, lse - zt, 0.0), mask=ok)


# ---------------------------------------------------------------- launcher
DTYPES = ("fp16", "bf16")
TUNABLES = ("BLOCK_T", "BLOCK_V", "BLOCK_D", "SPLIT_V", "num_warps", "num_stages")
BASELINE = {"BLOCK_T": 128, "BLOCK_V": 128, "BLOCK_D": 64, "SPLIT_V": 64, "num_warps": 8, "num_stages": 3}

# LM heads of real models over a training micro-batch (W 1.05-1.18 GB, read ~once; 1.5-2.2
# TFLOP: compute-bound launches of roughly 2-4 ms on an H100 / H200):
POINTS = [
    # Llama-3-8B: D 4096, V 128256, 2 x 1024 tokens, bf16, 10 % ignored (prompt / padding)
    {"T": 2048, "D": 4096, "V": 128256, "dtype": "bf16", "ignore": 0.1},
    # Qwen2.5-7B: D 3584 (not a power of two), V 152064, 1536 tokens, fp16, a third ignored (SFT prompts)
    {"T": 1536, "D": 3584, "V": 152064, "dtype": "fp16", "ignore": 0.33},
    # Gemma-2-2B: narrow D 2304, very wide V 256000 (its final-logit softcap is left out), 1280 tokens, bf16
    {"T": 1280, "D": 2304, "V": 256000, "dtype": "bf16", "ignore": 0.05},
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


def _pow2(v, lo) -> bool:
    return isinstance(v, int) and v >= lo and not v & (v - 1)


def _check_cfg(cfg) -> None:
    for name, lo in (("BLOCK_T", 16), ("BLOCK_V", 16), ("BLOCK_D", 16)):
        if not _pow2(cfg[name], lo):
            raise ValueError(f"{name}={cfg[name]!r} must be a power of two >= {lo} (a tl.dot tile side)")
    sp = cfg["SPLIT_V"]
    if not isinstance(sp, int) or sp < 1:
        raise ValueError(f"SPLIT_V={sp!r} must be an int >= 1")


def _check_point(point) -> None:
    for name in ("T", "D", "V"):
        v = point[name]
        if not isinstance(v, int) or v < 1:
            raise ValueError(f"{name}={v!r} must be a positive int")
    _elem_bytes(point.get("dtype", "bf16"))
    ig = point.get("ignore", 0.1)
    if not 0.0 <= ig < 1.0:
        raise ValueError(f"ignore={ig!r} must be a fraction in [0, 1)")


def plan(cfg, point) -> dict:
    """What the launcher derives from a config at a point."""
    _check_cfg(cfg)
    _check_point(point)
    T, D, V = point["T"], point["D"], point["V"]
    tiles_v = -(-V // cfg["BLOCK_V"])
    per = -(-tiles_v // cfg["SPLIT_V"])
    return {"tiles_t": -(-T // cfg["BLOCK_T"]), "tiles_v": tiles_v, "TILES_PER_SPLIT": per,
            "V_PER_SPLIT": per * cfg["BLOCK_V"], "k_steps": -(-D // cfg["BLOCK_D"]),
            "EVEN_D": D % cfg["BLOCK_D"] == 0, "EVEN_V": V % cfg["BLOCK_V"] == 0}


def _kernel_args(h, w, targets, part, zt, cfg) -> dict:
    T, D = h.shape
    V = w.shape[0]
    pl = plan(cfg, {"T": T, "D": D, "V": V})
    return {"H": h, "W": w, "TGT": targets, "PART": part, "ZT": zt, "T": T, "V": V, "D": D,
            "V_PER_SPLIT": pl["V_PER_SPLIT"], "stride_ht": h.stride(0), "stride_wv": w.stride(0),
            "stride_pp": part.stride(0), "stride_ps": part.stride(1), "BLOCK_T": cfg["BLOCK_T"],
            "BLOCK_V": cfg["BLOCK_V"], "BLOCK_D": cfg["BLOCK_D"], "EVEN_D": pl["EVEN_D"], "EVEN_V": pl["EVEN_V"]}


def fused_linear_cross_entropy(h, weight, targets, *, ignore_index=IGNORE_INDEX, reduction="none",
                               BLOCK_T=128, BLOCK_V=128, BLOCK_D=64, SPLIT_V=64, num_warps=8, num_stages=3):
    """Per-token loss [T] fp32 (reduction 'none') or its mean over the non-ignored tokens ('mean')
    of cross_entropy(h @ weight^T, targets) without the logits."""
    import torch
    if h.dim() != 2 or weight.dim() != 2 or h.shape[1] != weight.shape[1]:
        raise ValueError(f"expected h [T, D] and weight [V, D]; got {tuple(h.shape)}, {tuple(weight.shape)}")
    if h.dtype not in (torch.float16, torch.bfloat16):
        raise ValueError(f"h must be fp16 / bf16; got {h.dtype}")
    if weight.dtype != h.dtype:
        raise ValueError(f"h and weight dtypes differ: {h.dtype} vs {weight.dtype}")
    T, D = h.shape
    V = weight.shape[0]
    if targets.shape != (T,) or targets.dtype != torch.int64:
        raise ValueError(f"expected targets [{T}] int64; got {tuple(targets.shape)} {targets.dtype}")
    if reduction not in ("none", "mean"):
        raise ValueError(f"reduction={reduction!r} must be 'none' or 'mean'")
    if ignore_index >= 0:
        raise ValueError(f"ignore_index={ignore_index} must be negative (never a vocabulary id)")
    cfg = {"BLOCK_T": BLOCK_T, "BLOCK_V": BLOCK_V, "BLOCK_D": BLOCK_D, "SPLIT_V": SPLIT_V}
    pl = plan(cfg, {"T": T, "D": D, "V": V})
    if h.stride(1) != 1:
        h = h.contiguous()
    if weight.stride(1) != 1:
        weight = weight.contiguous()
    targets = targets.contiguous()
    part = torch.empty((2, SPLIT_V, T), dtype=torch.float32, device=h.device)
    zt = torch.empty((T,), dtype=torch.float32, device=h.device)
    loss = torch.empty((T,), dtype=torch.float32, device=h.device)
    _kernel[(pl["tiles_t"], SPLIT_V)](**_kernel_args(h, weight, targets, part, zt, cfg), num_warps=num_warps,
                                      num_stages=num_stages)
    _merge_kernel[(-(-T // MERGE_BLOCK),)](part, zt, targets, loss, T, part.stride(0), part.stride(1), ignore_index,
                                           SPLIT_V=SPLIT_V, BLOCK=MERGE_BLOCK, num_warps=MERGE_WARPS)
    if reduction == "mean":
        return loss.sum() / (targets != ignore_index).sum().clamp(min=1)
    return loss


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """h ~ N(0, 1) (a normed hidden state), W ~ N(0, (2 / sqrt(D))^2) (logits of std ~2, a trained
    head's spread), a few hot vocabulary rows 3x larger (frequent tokens: a max that moves between
    tiles); targets uniform over V, `ignore` of them ignore_index."""
    import torch
    _check_point(point)
    gen = torch.Generator(device=device).manual_seed(seed)
    dt = _torch_dtype(point.get("dtype", "bf16"))
    T, D, V = point["T"], point["D"], point["V"]
    h = torch.randn((T, D), generator=gen, device=device).to(dt)
    w = torch.randn((V, D), generator=gen, device=device)
    w *= 2.0 / D ** 0.5
    hot = torch.randint(0, V, (max(1, V // 1000),), generator=gen, device=device)
    w[hot] *= 3.0
    targets = torch.randint(0, V, (T,), generator=gen, device=device, dtype=torch.int64)
    targets[torch.rand((T,), generator=gen, device=device) < point.get("ignore", 0.1)] = IGNORE_INDEX
    return {"h": h, "weight": w.to(dt), "targets": targets}


def launch(inputs, cfg):
    return fused_linear_cross_entropy(inputs["h"], inputs["weight"], inputs["targets"],
                                      BLOCK_T=cfg["BLOCK_T"], BLOCK_V=cfg["BLOCK_V"], BLOCK_D=cfg["BLOCK_D"],
                                      SPLIT_V=cfg["SPLIT_V"], num_warps=cfg["num_warps"],
                                      num_stages=cfg["num_stages"])


def reference(inputs):
    """fp64 torch on the same rounded h and W: per-token loss [T] fp32, 0 where ignored."""
    import torch
    z = inputs["h"].double() @ inputs["weight"].double().t()
    t = inputs["targets"]
    live = t != IGNORE_INDEX
    zt = z.gather(1, t.clamp(min=0)[:, None])[:, 0]
    return torch.where(live, torch.logsumexp(z, dim=1) - zt, torch.zeros_like(zt)).float()


def torch_baseline(inputs):
    """Eager torch as a model without the fused kernel: the [T, V] logits in h's dtype (cuBLAS),
    upcast to fp32, F.cross_entropy(reduction='none')."""
    import torch.nn.functional as F
    logits = inputs["h"] @ inputs["weight"].t()
    return F.cross_entropy(logits.float(), inputs["targets"], ignore_index=IGNORE_INDEX, reduction="none")


def bytes_moved(point) -> int:
    """W and h read once, targets read once, the loss written once. The [2, SPLIT_V, T] partials
    and the target logits (a few MB, written and read back in L2) and the re-reads of h (L2) are
    not counted."""
    _check_point(point)
    e = _elem_bytes(point.get("dtype", "bf16"))
    T, D, V = point["T"], point["D"], point["V"]
    return e * V * D + e * T * D + 8 * T + 4 * T


def flops(point) -> int:
    """The logits GEMM, 2 T V D (the online softmax's few ops per logit are not counted)."""
    _check_point(point)
    return 2 * point["T"] * point["V"] * point["D"]


def grid(cfg, point) -> tuple:
    """(token tiles, SPLIT_V): pid_t fastest."""
    pl = plan(cfg, point)
    return (pl["tiles_t"], cfg["SPLIT_V"])


def loop_iterations(cfg, point) -> int:
    """Inner (D) steps of the fullest split: vocab tiles x cdiv(D, BLOCK_D)."""
    pl = plan(cfg, point)
    return pl["TILES_PER_SPLIT"] * pl["k_steps"]


def cta_iterations(cfg, point) -> list:
    """Each CTA's inner steps in launch order (token tile fastest): split s walks
    min(TILES_PER_SPLIT, tiles_v - s TILES_PER_SPLIT) >= 0 vocab tiles of k_steps each."""
    pl = plan(cfg, point)
    per, n, ks = pl["TILES_PER_SPLIT"], pl["tiles_v"], pl["k_steps"]
    out = []
    for s in range(cfg["SPLIT_V"]):
        out += [max(0, min(per, n - s * per)) * ks] * pl["tiles_t"]
    return out


def secondary_kernels(cfg, point) -> list:
    """The merge: cdiv(T, MERGE_BLOCK) CTAs, SPLIT_V steps each of a [MERGE_BLOCK] (m, s) pair the
    main kernel just wrote (L2: dram_bytes 0)."""
    _check_cfg(cfg)
    _check_point(point)
    return [{"name": "_merge_kernel", "grid": -(-point["T"] // MERGE_BLOCK), "iterations": cfg["SPLIT_V"],
             "tile_bytes": 8 * MERGE_BLOCK, "dram_bytes": 0, "blocks_per_sm": 8}]


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory)."""
    import torch
    _check_point(point)
    dt = _torch_dtype(point.get("dtype", "bf16"))
    T, D, V = point["T"], point["D"], point["V"]
    h = torch.empty((T, D), dtype=dt, device="meta")
    w = torch.empty((V, D), dtype=dt, device="meta")
    targets = torch.empty((T,), dtype=torch.int64, device="meta")
    part = torch.empty((2, cfg["SPLIT_V"], T), dtype=torch.float32, device="meta")
    zt = torch.empty((T,), dtype=torch.float32, device="meta")
    return _kernel_args(h, w, targets, part, zt, cfg)


def merge_example_args(cfg, point) -> dict:
    """The launch arguments of `_merge_kernel` (meta tensors)."""
    import torch
    _check_point(point)
    T = point["T"]
    part = torch.empty((2, cfg["SPLIT_V"], T), dtype=torch.float32, device="meta")
    f = torch.empty((T,), dtype=torch.float32, device="meta")
    return {"PART": part, "ZT": f, "TGT": torch.empty((T,), dtype=torch.int64, device="meta"), "LOSS": f,
            "T": T, "stride_pp": part.stride(0), "stride_ps": part.stride(1), "ignore_index": IGNORE_INDEX,
            "SPLIT_V": cfg["SPLIT_V"], "BLOCK": MERGE_BLOCK}
