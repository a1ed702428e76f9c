"""(Gated) DeltaNet's chunked-prefill preparation, fused: per chunk of 64 tokens of one head, the scaled
key Gram matrix A and the unit lower triangular inverse (I + A)^{-1} that the chunked delta rule's WY
representation (w = Ai (beta k), u = Ai (beta v)) is built from, a bare @triton.jit kernel + its
launcher.

    per chunk [t0, t0 + 64) of one (batch, head), rows i, columns j of the chunk:
    A[i, j] = beta[i] (k[i] . k[j]) [* exp(g[i] - g[j])]    for j < i, else 0   (strictly lower)
    Ai      = (I + A)^{-1}                                  (unit lower triangular)
    out[b, t0 + i, h, j] = Ai[i, j]                         ([B, T, H, 64])

k: [B, T, H, K] fp16 / bf16 with unit K stride (any batch, time and head strides: a slice of a fused
qkv projection is read in place); K the head dim (128 and 256 at the points; any K >= 1 works).
beta: [B, T, H] fp16 / bf16 / fp32, any strides. g: [B, T, H] fp32, any strides, or None (plain
DeltaNet): Gated DeltaNet's log-decay already cumulated within each chunk (g[t] = the sum of the
per-step log-decays from the chunk's first token to t, a chunk-local cumsum: `chunk_local_cumsum`),
so exp(g[i] - g[j]) is the decay from token j to token i. out: a fresh contiguous [B, T, H, 64]
tensor in k's dtype or fp32 (`out_dtype`); row t0 + i holds row i of its chunk's inverse in columns
0..63 (the chunk-local j): exactly 1 on the diagonal and exactly 0 above it (in a ragged last chunk
too, whose columns past T are above every real row's diagonal).

Work split: one program a (head, chunk, batch): grid (H, cdiv(T, 64), B), the heads fastest in
launch order (the programs that run together read the same tokens' rows of adjacent heads: a token's
key rows of all heads are contiguous, and so are its output rows). Per program:

  1. The K loop (cdiv(K, BLOCK_K) steps): one [64, BLOCK_K] tile of the chunk's key rows a step,
     acc += kt kt^T (one tl.dot, fp32 accumulation; on sm_90 a wgmma with both operands in the
     pipelined shared-memory buffer, the transpose the B operand's view of it; mma.sync on sm_120).
     The whole 64 x 64 product, its upper half computed and dropped: the price of one 64-row dot.
     Triton pipelines the loads (num_stages).
  2. A = acc times beta of its rows [times exp(g_i - g_j)], seen as [NB, BLOCK_D, NB, BLOCK_D]
     (p, i, q, j: row BLOCK_D p + i, column BLOCK_D q + j; NB = 64 / BLOCK_D) -- a reshape the
     compiler makes without moving data, p landing on the warps -- and masked there to its strict
     lower triangle by [NB, 1, NB, 1] block masks and a [1, BLOCK_D, 1, BLOCK_D] in-block one (small
     broadcast operands rather than one [64, 64] mask); gated, the mask sets the exponent to -inf
     first (no overflow above the diagonal, where g_i - g_j > 0).
  3. The NB diagonal blocks [NB, BLOCK_D, BLOCK_D] (a masked sum over q) inverted by forward
     substitution, all blocks at once: BLOCK_D - 1 steps of a runtime loop, right-looking -- at step
     j row j of each block's inverse X is final, and A[:, j] times it is taken off the rows below
     (column j of A and row j of X by masked reductions, then a [NB, BLOCK_D, BLOCK_D]
     multiply-subtract). With BLOCK_D 16 on 4 warps each warp owns one block and both reductions
     stay within it; with 32 or 64 a block spans 2 or 4 warps and the row reduction crosses them
     (through shared memory, every step).
  4. The merges with tl.dot (fp32 operands, input_precision "tf32x3": three tf32 products a dot,
     about fp32's accuracy -- one tf32 pass leaves ~2e-4 errors, past bf16's rounding of the small
     entries): X, embedded back into [64, 64] as the block diagonal inverse, absorbs pairs of blocks,
     [[P, 0], [N, Q]]^-1 = [[P^-1, 0], [-Q^-1 N P^-1, Q^-1]], i.e. X <- X - (X N) X with N the
     pairs' lower-left blocks of A (a masked copy): 16 -> 32 (blocks (1, 0) and (3, 2)) for
     BLOCK_D 16, then 32 -> 64 (the lower-left 32 x 32) for BLOCK_D 16 and 32, none for 64. Two
     64 x 64 x 64 dots a level. Exact zeros stay exact: the diagonal is exactly 1, the upper
     triangle exactly 0.
  5. One store of the [64, 64] result in the output dtype (rows of 64 contiguous elements).

Masks: a ragged last chunk (EVEN_T = 0: 64 does not divide T) loads its key rows past T clamped to
row T - 1 (in bounds, no mask), beta there masked to 0 and, gated, g to 0 with the exponent of those
rows set to -inf (else exp(0 - g_j) overflows for a strong decay): A's rows past T are zero, identity
rows of I + A that leave the real rows' inverse alone (rows past T come after them); the store is
masked to rows < T. A K that BLOCK_K does not divide (EVEN_K = 0) masks the columns of every step's
key loads to 0 (they enter the dot). GATED, EVEN_T and EVEN_K are constexprs the launcher sets.
Offsets: the batch, head and row offsets int64 (B T H K passes 2^31 elements at long prefill), the
K offsets and columns int32.

Tunables: BLOCK_K (32 / 64 / 128: the K step -- 1-8 steps at head dim 128-256 -- and the pipeline's
num_stages x 64 x BLOCK_K x 2 B of shared memory), BLOCK_D (16 / 32 / 64: the substitution's block,
15 / 31 / 63 serial steps, against 2 / 1 / 0 merge levels of tensor-core work and their registers
and shared memory), num_warps (4: one warpgroup, a block row of 16 a warp; 8: two warpgroups -- the
K loop's dot splits its columns, the merges' 64-row dots are duplicated), num_stages (1-3: the K
loop's pipeline). On sm_90 (triton 3.6 and 3.9, every config of the sweep at every point): shared
memory the larger of the K pipeline's and the merges' (each dot's B operand as a tf32 hi / lo pair:
64 KiB on 4 warps, 96 KiB on 8), 8-96 KiB; registers 61-225 under 3.6 (64-213 under 3.9), none
spilled: the most for BLOCK_D 16 on 4 warps (170-225; the fp32-output point the most), the fewest for
BLOCK_D 64 on 8 warps (61-80). On sm_120 (mma.sync; 99 KiB a block) the configs tried fit (the
merges' buffers 64 KiB on 4 and on 8 warps), but BLOCK_D 16 spills a few registers there (BASELINE
22 under triton 3.9). Heads a program (a runtime loop over HEADS heads) was tried as a lever: the
loop kept ~90 registers of hoisted address arithmetic live beside the tf32x3 merges and spilled, so
a program takes one head.
Problem parameters (a workload point): B, T, H, K, dtype (bf16 / fp16), gated (0 / 1), out_dtype
(optional: fp32, or the input's dtype when absent).
"""

from __future__ import annotations

import triton
import triton.language as tl

BT = 64          # the chunk: tokens a block of the inverse (fla's chunk size)


@triton.jit
def _kernel(Kp, BETA, G, AI, T, K,
            stride_kb, stride_kt, stride_kh, stride_bb, stride_bt, stride_bh,
            stride_gb, stride_gt, stride_gh, stride_ob, stride_ot, stride_oh,
            GATED: tl.constexpr, EVEN_T: tl.constexpr, EVEN_K: tl.constexpr,
            BLOCK_K: tl.constexpr, BLOCK_D: tl.constexpr):
    h = tl.program_id(0).to(tl.int64)
    n = tl.program_id(1)
    b = tl.program_id(2).to(tl.int64)

    r = tl.arange(0, 64)
    rk = tl.arange(0, BLOCK_K)
    t = n * 64 + r                                              # the chunk's rows
    ok = t < T
    if EVEN_T:
        lt = t
    else:
        lt = tl.minimum(t, T - 1)                               # rows past T: load row T - 1
    t64 = t.to(tl.int64)

    # the K loop: acc = k k^T of the chunk's 64 key rows
    kp = Kp + b * stride_kb + h * stride_kh + (lt.to(tl.int64) * stride_kt)[:, None] + rk[None, :]
    acc = tl.zeros((64, 64), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        if EVEN_K:
            kt = tl.load(kp + k0)
        else:
            kt = tl.load(kp + k0, mask=(k0 + rk < K)[None, :], other=0.0)
        acc = tl.dot(kt, tl.trans(kt), acc)

    # A = beta_i acc [* exp(g_i - g_j)], strictly lower, seen as [NB, BLOCK_D, NB, BLOCK_D] (p, i, q, j):
    # row BLOCK_D p + i, column BLOCK_D q + j (a free reshape of the dot's layout: p on the warps)
    NB: tl.constexpr = 64 // BLOCK_D
    p4 = tl.arange(0, NB)[:, None, None, None]
    q4 = tl.arange(0, NB)[None, None, :, None]
    i4 = tl.arange(0, BLOCK_D)[None, :, None, None]
    j4 = tl.arange(0, BLOCK_D)[None, None, None, :]
    blk_lower = p4 > q4                                         # [NB, 1, NB, 1]
    blk_diag = p4 == q4
    in_lower = i4 > j4                                          # [1, BLOCK_D, 1, BLOCK_D]
    be_p = BETA + b * stride_bb + h * stride_bh + t64 * stride_bt
    if EVEN_T:
        be = tl.load(be_p).to(tl.float32)
    else:
        be = tl.load(be_p, mask=ok, other=0.0).to(tl.float32)   # rows past T: beta 0
    a4 = tl.reshape(acc * be[:, None], (NB, BLOCK_D, NB, BLOCK_D))
    if GATED:
        g_p = G + b * stride_gb + h * stride_gh + t64 * stride_gt
        if EVEN_T:
            gv = tl.load(g_p)
        else:
            gv = tl.load(g_p, mask=ok, other=0.0)
        e4 = tl.reshape(gv[:, None] - gv[None, :], (NB, BLOCK_D, NB, BLOCK_D))
        e4 = tl.where(blk_lower, e4, tl.where(blk_diag, tl.where(in_lower, e4, float("-inf")), float("-inf")))
        if not EVEN_T:                                          # rows past T: no exp(0 - g_j) overflow
            e4 = tl.where(n * 64 + BLOCK_D * p4 + i4 < T, e4, float("-inf"))
        a4 = a4 * tl.exp(e4)
    else:
        a4 = tl.where(blk_lower, a4, tl.where(blk_diag, tl.where(in_lower, a4, 0.0), 0.0))

    # the NB diagonal blocks [NB, BLOCK_D, BLOCK_D], inverted by forward substitution, right-looking:
    # once row j of a block's inverse is final, A[:, j] times it is taken off the rows below
    ad = tl.sum(tl.where(blk_diag, a4, 0.0), axis=2)
    ri = tl.arange(0, BLOCK_D)[None, :, None]
    ci = tl.arange(0, BLOCK_D)[None, None, :]
    x = tl.where(ri == ci, 1.0, 0.0) + tl.zeros((NB, BLOCK_D, BLOCK_D), dtype=tl.float32)
    for j in range(0, BLOCK_D - 1):
        a_col = tl.sum(tl.where(ci == j, ad, 0.0), axis=2)         # [NB, BLOCK_D]: ad[p, :, j]
        x_row = tl.sum(tl.where(ri == j, x, 0.0), axis=1)          # [NB, BLOCK_D]: x[p, j, :]
        x = x - a_col[:, :, None] * x_row[:, None, :]
    ai = tl.reshape(tl.where(blk_diag, x[:, :, None, :], 0.0), (64, 64))     # block diagonal

    # the merges with tl.dot: [[X, 0], [N, Y]]^-1 = [[X^-1, 0], [-Y^-1 N X^-1, Y^-1]], two blocks of
    # the block diagonal inverse at a time: Ai <- Ai - Ai N Ai (N the pairs' lower-left blocks of A)
    if BLOCK_D == 16:                                           # 16 -> 32: blocks (1, 0), (3, 2)
        n1 = tl.reshape(tl.where((p4 == q4 + 1) & (p4 % 2 == 1), a4, 0.0), (64, 64))
        m1 = tl.dot(ai, n1, input_precision="tf32x3")
        ai = ai - tl.dot(m1, ai, input_precision="tf32x3")
    if BLOCK_D <= 32:                                           # 32 -> 64: the lower-left 32 x 32
        n2 = tl.reshape(tl.where((p4 >= NB // 2) & (q4 < NB // 2), a4, 0.0), (64, 64))
        m2 = tl.dot(ai, n2, input_precision="tf32x3")
        ai = ai - tl.dot(m2, ai, input_precision="tf32x3")

    op = AI + b * stride_ob + h * stride_oh + (t64 * stride_ot)[:, None] + r[None, :]
    if EVEN_T:
        tl.store(op, ai.to(AI.dtype.element_ty))
    else:
        tl.store(op, ai.to(AI.dtype.element_ty), mask=ok[:, None])


# ---------------------------------------------------------------- launcher
ROLE = "held-out-26"
DTYPES = ("bf16", "fp16")
OUT_DTYPES = ("bf16", "fp16", "fp32")
TUNABLES = ("BLOCK_K", "BLOCK_D", "num_warps", "num_stages")
BASELINE = {"BLOCK_K": 64, "BLOCK_D": 16, "num_warps": 4, "num_stages": 2}
SWEEP_AXES = {"BLOCK_K": [32, 64, 128], "BLOCK_D": [16, 32, 64], "num_warps": [4, 8], "num_stages": [1, 2, 3]}

POINTS = [
    # Qwen3-Next-80B-A3B's Gated DeltaNet layers at a 64K-token prefill: 32 value heads, keys of head
    # dim 128 (its 16 key heads repeated to the 32 value heads, L2-normalized), beta = sigmoid(b) in
    # bf16, g the chunk-local cumsum of -exp(A_log) softplus(a + dt_bias); Ai in k's dtype (bf16)
    # for the WY step: k 537 MB read, Ai 268 MB written
    {"B": 1, "T": 65536, "H": 32, "K": 128, "dtype": "bf16", "gated": 1},
    # fla's DeltaNet-1.3B (hidden 2048, 16 heads of dim 128, no gate) on a training micro-batch of
    # 16 x 4096 tokens, Ai in fp32 (out_dtype): k 268 MB read, Ai 268 MB written
    {"B": 16, "T": 4096, "H": 16, "K": 128, "dtype": "bf16", "gated": 0, "out_dtype": "fp32"},
    # fla's Gated DeltaNet-1.3B (its layer's defaults: 6 heads of dim 256) in fp16 on 4 prompts of
    # 33000 tokens, ragged: 33000 = 515 x 64 + 40, the last chunk of each 40 rows: k 406 MB read,
    # Ai 101 MB written
    {"B": 4, "T": 33000, "H": 6, "K": 256, "dtype": "fp16", "gated": 1},
]


def _torch_dtype(name: str):
    import torch
    try:
        return {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(OUT_DTYPES)}") from None


def _elem_bytes(name: str, allowed=DTYPES) -> int:
    if name not in allowed:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(allowed)}")
    return 4 if name == "fp32" else 2


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _check_point(point) -> tuple[int, int, int, int, str, bool, str]:
    """(B, T, H, K, dtype, gated, out_dtype), every field checked."""
    for k in ("B", "T", "H", "K"):
        v = point[k]
        if not _is_int(v) or v < 1:
            raise ValueError(f"{k}={v!r} must be a positive int")
    dt = point.get("dtype", "bf16")
    _elem_bytes(dt)
    odt = point.get("out_dtype") or dt
    _elem_bytes(odt, OUT_DTYPES)
    if odt not in (dt, "fp32"):
        raise ValueError(f"out_dtype {odt!r} must be fp32 or the input's {dt!r}")
    gated = point.get("gated", 0)
    if gated not in (0, 1) or not isinstance(gated, (int, bool)):
        raise ValueError(f"gated={gated!r} must be 0 or 1")
    return point["B"], point["T"], point["H"], point["K"], dt, bool(gated), odt


def _check_cfg(cfg) -> None:
    if cfg["BLOCK_K"] not in (16, 32, 64, 128, 256) or not _is_int(cfg["BLOCK_K"]):
        raise ValueError(f"BLOCK_K={cfg['BLOCK_K']!r} must be one of 16, 32, 64, 128, 256")
    if cfg["BLOCK_D"] not in (16, 32, 64) or not _is_int(cfg["BLOCK_D"]):
        raise ValueError(f"BLOCK_D={cfg['BLOCK_D']!r} must be one of 16, 32, 64")
    if cfg["num_warps"] not in (1, 2, 4, 8, 16) or not _is_int(cfg["num_warps"]):
        raise ValueError(f"num_warps={cfg['num_warps']!r} must be a power of two from 1 to 16")
    st = cfg.get("num_stages", 1)
    if not _is_int(st) or st < 1:
        raise ValueError(f"num_stages={st!r} must be a positive int")


def _grid(B: int, T: int, H: int, cfg) -> tuple[int, int, int]:
    _check_cfg(cfg)
    return (H, triton.cdiv(T, BT), B)


def _kernel_args(k, beta, g, out, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it); without g
    beta stands in for it (never read: GATED 0)."""
    B, T, H, K = k.shape
    gg = beta if g is None else g
    return dict(Kp=k, BETA=beta, G=gg, AI=out, T=T, K=K,
                stride_kb=k.stride(0), stride_kt=k.stride(1), stride_kh=k.stride(2),
                stride_bb=beta.stride(0), stride_bt=beta.stride(1), stride_bh=beta.stride(2),
                stride_gb=gg.stride(0), stride_gt=gg.stride(1), stride_gh=gg.stride(2),
                stride_ob=out.stride(0), stride_ot=out.stride(1), stride_oh=out.stride(2),
                GATED=int(g is not None), EVEN_T=int(T % BT == 0), EVEN_K=int(K % cfg["BLOCK_K"] == 0),
                BLOCK_K=cfg["BLOCK_K"], BLOCK_D=cfg["BLOCK_D"])


def kkt_solve(k, beta, g=None, *, out_dtype=None, BLOCK_K: int = 64, BLOCK_D: int = 16, num_warps: int = 4,
              num_stages: int = 2):
    """k [B, T, H, K] (fp16 / bf16, unit K stride), beta [B, T, H] (fp16 / bf16 / fp32), g [B, T, H]
    fp32 chunk-local cumulative log-decays or None -> Ai [B, T, H, 64], per chunk of 64 tokens
    (I + strict_lower(beta k k^T [* exp(g_i - g_j)]))^{-1}, in k's dtype or `out_dtype`
    (torch.float32 or k's dtype), a fresh contiguous tensor."""
    import torch
    if k.dim() != 4:
        raise ValueError(f"expected k [B, T, H, K]; got {tuple(k.shape)}")
    if k.dtype not in (torch.float16, torch.bfloat16):
        raise ValueError(f"k must be fp16 / bf16; got {k.dtype}")
    B, T, H, K = k.shape
    if tuple(beta.shape) != (B, T, H):
        raise ValueError(f"beta must be [B, T, H] = {[B, T, H]}; got {list(beta.shape)}")
    if beta.dtype not in (torch.float16, torch.bfloat16, torch.float32) or beta.device != k.device:
        raise ValueError(f"beta must be fp16 / bf16 / fp32 on {k.device}; got {beta.dtype} on {beta.device}")
    if g is not None:
        if tuple(g.shape) != (B, T, H):
            raise ValueError(f"g must be [B, T, H] = {[B, T, H]}; got {list(g.shape)}")
        if g.dtype != torch.float32 or g.device != k.device:
            raise ValueError(f"g must be fp32 on {k.device}; got {g.dtype} on {g.device}")
    odt = k.dtype if out_dtype is None else out_dtype
    if odt not in (k.dtype, torch.float32):
        raise ValueError(f"out_dtype must be torch.float32 or k's {k.dtype}; got {odt}")
    cfg = {"BLOCK_K": BLOCK_K, "BLOCK_D": BLOCK_D, "num_warps": num_warps, "num_stages": num_stages}
    _check_cfg(cfg)
    if K < 1:
        raise ValueError(f"K={K}: k has no head dim")
    if K > 1 and k.stride(3) != 1:
        raise ValueError(f"k must have unit K stride; got strides {tuple(k.stride())}")
    out = torch.empty((B, T, H, BT), dtype=odt, device=k.device)
    if out.numel() == 0:
        return out
    if B > 65535:
        raise ValueError(f"B={B} exceeds the grid's 65535 batch rows")
    if triton.cdiv(T, BT) > 65535:
        raise ValueError(f"T={T} gives {triton.cdiv(T, BT)} chunks, past the grid's 65535")
    if K + BLOCK_K >= 2**31:
        raise ValueError(f"K={K} exceeds the kernel's int32 K offsets")
    _kernel[_grid(B, T, H, cfg)](**_kernel_args(k, beta, g, out, cfg), num_warps=num_warps, num_stages=num_stages)
    return out


def chunk_local_cumsum(x, chunk: int = BT):
    """The cumulative sum of x [B, T, H] along T restarting at every chunk of `chunk` tokens (the g
    that kkt_solve takes, from per-step log-decays), in fp32."""
    import torch
    B, T, H = x.shape
    n = triton.cdiv(T, chunk)
    xp = torch.nn.functional.pad(x.float(), (0, 0, 0, n * chunk - T))
    return xp.view(B, n, chunk, H).cumsum(2).view(B, n * chunk, H)[:, :T].contiguous()


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """k: L2-normalized keys (each the normalized sum of N(0, 1 / K) noise and half a direction of its
    own (batch, head): pairs at a cosine of about 0.2, as related tokens' keys are) in the point's
    dtype, contiguous [B, T, H, K]; beta = sigmoid(N(0, 1)) in the same dtype; with `gated`, g the
    chunk-local cumsum of -A dt (A ~ U(1, 16) a head, dt log-uniform in [1e-3, 1e-1] a token and
    head: Mamba-2 / Gated DeltaNet's decay parametrization), fp32, else None; the output dtype. Drawn
    on the CPU from a seeded torch.Generator and moved."""
    import torch
    B, T, H, K, dt, gated, odt = _check_point(point)
    gen = torch.Generator(device="cpu").manual_seed(seed)
    d = torch.nn.functional.normalize(torch.randn((B, 1, H, K), generator=gen), dim=-1)
    k = torch.randn((B, T, H, K), generator=gen) / K ** 0.5 + 0.5 * d
    k = torch.nn.functional.normalize(k, dim=-1)
    beta = torch.sigmoid(torch.randn((B, T, H), generator=gen))
    g = None
    if gated:
        a = 1.0 + 15.0 * torch.rand((1, 1, H), generator=gen)
        step = torch.exp(torch.empty((B, T, H)).uniform_(-6.9078, -2.3026, generator=gen))
        g = chunk_local_cumsum(-a * step).to(device)
    tdt = _torch_dtype(dt)
    return {"k": k.to(tdt).to(device), "beta": beta.to(tdt).to(device), "g": g, "out_dtype": _torch_dtype(odt)}


def launch(inputs, cfg):
    """Ai of inputs["k"], ["beta"], ["g"] (None: plain DeltaNet) in inputs["out_dtype"] (k's dtype when
    absent)."""
    return kkt_solve(inputs["k"], inputs["beta"], inputs.get("g"), out_dtype=inputs.get("out_dtype"),
                     BLOCK_K=cfg["BLOCK_K"], BLOCK_D=cfg["BLOCK_D"], num_warps=cfg["num_warps"],
                     num_stages=cfg["num_stages"])


def _chunked(k, beta, g):
    """k [B, H, N, 64, K], beta [B, H, N, 64], g (or None) [B, H, N, 64], the rows past T zero, and
    the [B, H, N, 64] mask of real rows."""
    import torch
    F = torch.nn.functional
    B, T, H, K = k.shape
    n = triton.cdiv(T, BT)
    pad = n * BT - T
    kc = F.pad(k, (0, 0, 0, 0, 0, pad)).view(B, n, BT, H, K).permute(0, 3, 1, 2, 4)
    bc = F.pad(beta, (0, 0, 0, pad)).view(B, n, BT, H).permute(0, 3, 1, 2)
    gc = None if g is None else F.pad(g, (0, 0, 0, pad)).view(B, n, BT, H).permute(0, 3, 1, 2)
    real = (torch.arange(n * BT, device=k.device) < T).view(n, BT)
    return kc, bc, gc, real


def _solve(A, gc, real):
    """Gate A [B, H, N, 64, 64] (with gc), keep its strict lower triangle in real rows, return
    (I + A)^{-1} (forward substitution: torch.linalg.solve_triangular)."""
    import torch
    eye = torch.eye(BT, dtype=A.dtype, device=A.device)
    lower = torch.ones(BT, BT, dtype=torch.bool, device=A.device).tril(-1) & real[..., :, None]
    if gc is not None:
        e = (gc[..., :, None] - gc[..., None, :]).masked_fill(~lower, float("-inf"))
        A = A * torch.exp(e)
    A = A.masked_fill(~lower, 0.0)
    return torch.linalg.solve_triangular(eye + A, eye.expand_as(A), upper=False, unitriangular=True)


def _unchunk(ai, T):
    B, H, n = ai.shape[:3]
    return ai.permute(0, 2, 3, 1, 4).reshape(B, n * BT, H, BT)[:, :T]


def reference(inputs):
    """fp32 (computed in fp64): per chunk A from the upcast k and beta, gated, its strict lower
    triangle, and (I + A)^{-1} by a triangular solve; rows past T dropped."""
    k = inputs["k"].double()
    g = inputs.get("g")
    kc, bc, gc, real = _chunked(k, inputs["beta"].double(), None if g is None else g.double())
    A = (kc * bc[..., None]) @ kc.transpose(-1, -2)
    return _unchunk(_solve(A, gc, real), k.shape[1]).float()


def torch_baseline(inputs):
    """What eager torch runs: per chunk (beta k) k^T as a batched GEMM in k's dtype, then the gate,
    the mask and a triangular solve in fp32 (torch.linalg.solve_triangular), cast to the output
    dtype."""
    k = inputs["k"]
    odt = inputs.get("out_dtype") or k.dtype
    g = inputs.get("g")
    kc, bc, gc, real = _chunked(k, inputs["beta"].to(k.dtype), g)
    A = ((kc * bc[..., None]) @ kc.transpose(-1, -2)).float()
    return _unchunk(_solve(A, gc, real), k.shape[1]).to(odt)


def bytes_moved(point) -> int:
    """k read once, beta once (k's dtype) and g once (fp32, gated), Ai written once (64 columns a row)."""
    B, T, H, K, dt, gated, odt = _check_point(point)
    rows = B * T * H
    return rows * (K * _elem_bytes(dt) + _elem_bytes(dt) + 4 * gated + BT * _elem_bytes(odt, OUT_DTYPES))


def flops(point) -> int:
    """Per chunk of n rows (64, or the ragged last chunk's T mod 64): the strict lower triangle of
    k k^T, n (n - 1) / 2 dot products of length K (n (n - 1) K flops), and the unit lower triangular
    inverse, (n - 2)(n - 1) n / 6 multiply-adds ((n - 2)(n - 1) n / 3 flops); B H times over the
    chunks. (The kernel computes the whole 64 x 64 k k^T of a chunk, padding rows included, and two
    64 x 64 x 64 dots of three tf32 passes a merge level.)"""
    B, T, H, K, _, _, _ = _check_point(point)

    def chunk(n):
        return n * (n - 1) * K + (n - 2) * (n - 1) * n // 3

    full, last = divmod(T, BT)
    return B * H * (full * chunk(BT) + (chunk(last) if last else 0))


def grid(cfg, point) -> tuple[int, int, int]:
    """(H heads, cdiv(T, 64) chunks, B): the launch grid, heads fastest."""
    B, T, H, _, _, _, _ = _check_point(point)
    return _grid(B, T, H, cfg)


def loop_iterations(cfg, point) -> int:
    """K steps a CTA: cdiv(K, BLOCK_K), every CTA alike (the substitution's BLOCK_D - 1 steps after
    it are a second, load-free loop)."""
    _, _, _, K, _, _, _ = _check_point(point)
    _check_cfg(cfg)
    return triton.cdiv(K, cfg["BLOCK_K"])


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory): k
    contiguous [B, T, H, K] and beta [B, T, H] in the point's dtype, g [B, T, H] fp32 when gated, Ai
    contiguous [B, T, H, 64] in its output dtype."""
    import torch
    B, T, H, K, dt, gated, odt = _check_point(point)
    _check_cfg(cfg)
    k = torch.empty((B, T, H, K), dtype=_torch_dtype(dt), device="meta")
    beta = torch.empty((B, T, H), dtype=_torch_dtype(dt), device="meta")
    g = torch.empty((B, T, H), dtype=torch.float32, device="meta") if gated else None
    out = torch.empty((B, T, H, BT), dtype=_torch_dtype(odt), device="meta")
    return _kernel_args(k, beta, g, out, cfg)
