"""Fused MoE expert GEMM (the "fused_moe_kernel" of vLLM-style MoE inference), a bare
@triton.jit kernel + its launcher.

    out[t * topk + s, :] = (A[row(t, s)] @ W[e(t, s)]^T) (* topk_weights[t, s])

Each of T tokens is routed to its topk experts (topk_ids: [T, topk] int32, topk_weights:
[T, topk] fp32). A: the activations, K contiguous, in bf16 / fp16: either the hidden states
[T, K] (the gate_up projection: every one of a token's topk slots reads the token's row,
row(t, s) = t) or the per-slot activations [T * topk, K] (the down projection: row(t, s) =
t * topk + s). W: [E, N, K] the experts' weights as checkpoints store them (K contiguous);
out: [T * topk, N] in A's dtype (one row per (token, slot): vLLM's intermediate cache, summed
over the slots by a later moe_sum). fp32 accumulation; with MUL_ROUTED_WEIGHT the routing
weight scales each row in fp32 before the one rounding to the output dtype.

Alignment (moe_align_block_size, done in torch by the launcher, in make_inputs: outside the
timed kernel, as vLLM runs it once per batch for all the layer's GEMMs): the T * topk
(token, slot) ids t * topk + s are sorted by expert (stable), each expert's group is padded
to a multiple of BLOCK_M with the sentinel T * topk, and the groups are laid end to end in
sorted_ids; expert_ids[b] names the expert of block b (each BLOCK_M block holds one expert's
rows); num_post_padded (one int32 on the device) is the padded total. sorted_ids is
allocated at its upper bound, T * topk + E * (BLOCK_M - 1) rounded up to a BLOCK_M multiple,
so the grid never depends on the routing (no host sync, graph-capturable, as vLLM's):
blocks at or past num_post_padded return at once. The launcher keeps one alignment per
BLOCK_M (16 ... 256) in the inputs; another BLOCK_M is aligned in launch.

Grid: 1-D, one CTA per (BLOCK_M block of sorted rows, BLOCK_N column tile of N), launched in
groups of GROUP_M row blocks walked column by column (the Triton matmul order): the CTAs
resident together read the same few W[e] column tiles (consecutive row blocks mostly belong
to one expert) while they are in L2 (GROUP_M = 1: each row block walks all of W[e]'s
columns, and a W[e] larger than the L2 is read from DRAM once per row block). A CTA gathers
its BLOCK_M rows of A through sorted_ids (padding rows masked off), walks K in BLOCK_K steps
(tl.dot into fp32; the K tail masked only when K % BLOCK_K != 0, EVEN_K set by the
launcher), optionally scales by the rows' routing weights and scatters the tile to the
rows' (token, slot) rows of out (padding rows and columns past N masked off). Columns past
N are wrapped (index mod N) so the weight loads need no column mask.

Tunables: BLOCK_M (power of two >= 16: 16 fits decode's few rows per expert, 64 / 128 the
wgmma tiles of prefill), BLOCK_N, BLOCK_K (powers of two >= 16), GROUP_M (>= 1), num_warps,
num_stages.
Problem parameters (a workload point): T (tokens), E (experts), topk, N, K, dtype (bf16 /
fp16), proj ("gate_up": A is [T, K], one row per token; "down": A is [T * topk, K], one row
per (token, slot)), mul_routed_weight (scale the output rows by the routing weights, as the
down projection does), skew (optional, default 0.5: the std of a per-expert bias added to the
router logits, some experts hotter than others).
"""

from __future__ import annotations

import functools

import triton
import triton.language as tl


@triton.jit
def _kernel(A, W, OUT, TOPK_WEIGHTS, SORTED_IDS, EXPERT_IDS, NUM_POST_PADDED,
            N, K, EM, num_valid, stride_am, stride_we, stride_wn, stride_om,
            TOP_K: tl.constexpr, MUL_ROUTED_WEIGHT: tl.constexpr, EVEN_K: tl.constexpr,
            BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    # grouped order over (row block, column tile): GROUP_M row blocks at a time, row blocks fastest
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(EM, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    per_group = GROUP_M * tiles_n
    first_m = (pid // per_group) * GROUP_M
    rows_in_group = tl.minimum(tiles_m - first_m, GROUP_M)
    tile_m = first_m + (pid % per_group) % rows_in_group
    tile_n = (pid % per_group) // rows_in_group

    # the grid covers the upper bound of the padded rows; blocks past the routing's end return
    num_post_padded = tl.load(NUM_POST_PADDED)
    if tile_m * BLOCK_M >= num_post_padded:
        return

    # this block's (token, slot) ids (sentinel num_valid = padding) and its expert
    ids = tl.load(SORTED_IDS + tile_m * BLOCK_M + tl.arange(0, BLOCK_M))
    row_ok = ids < num_valid
    expert = tl.load(EXPERT_IDS + tile_m).to(tl.int64)

    cols = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    cols_ld = cols % N          # wrapped: in-bounds weight rows, no column mask on the loads
    ks = tl.arange(0, BLOCK_K)
    a_ptr = A + (ids // TOP_K).to(tl.int64)[:, None] * stride_am + ks[None, :]
    w_ptr = W + expert * stride_we + cols_ld.to(tl.int64)[None, :] * stride_wn + ks[:, None]

    acc = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
    for k0 in range(0, K, BLOCK_K):
        if EVEN_K:
            a = tl.load(a_ptr, mask=row_ok[:, None], other=0.0)
            b = tl.load(w_ptr)
        else:
            k_ok = ks < K - k0
            a = tl.load(a_ptr, mask=row_ok[:, None] & k_ok[None, :], other=0.0)
            b = tl.load(w_ptr, mask=k_ok[:, None], other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptr += BLOCK_K
        w_ptr += BLOCK_K

    if MUL_ROUTED_WEIGHT:
        rw = tl.load(TOPK_WEIGHTS + ids, mask=row_ok, other=0.0)
        acc = acc * rw[:, None]
    o_ptr = OUT + ids.to(tl.int64)[:, None] * stride_om + cols[None, :]
    tl.store(o_ptr, acc.to(OUT.dtype.element_ty), mask=row_ok[:, None] & (cols < N)[None, :])


# ---------------------------------------------------------------- launcher
DTYPES = ("bf16", "fp16")
PROJS = ("gate_up", "down")
ALIGNED_BLOCK_M = (16, 32, 64, 128, 256)       # the alignments make_inputs precomputes
TUNABLES = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "num_warps", "num_stages")
BASELINE = {"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 16, "num_warps": 4, "num_stages": 4}

# Three MoE layers of real models (every weight exceeds the 50 MB L2). Times: one H200 spot check of 10 configs
# (triton 3.6.0, do_bench with L2 flush), all matching the reference.
POINTS = [
    # Mixtral-8x7B gate_up_proj at TP=2 (2 x 7168 per rank), a 2048-token prefill chunk: 4096 (token, slot)
    # rows, ~512 per expert; 481 GFLOP, compute-bound: 0.98 ms at 128 x 128 (490 TFLOP/s), 5.9-6.3 ms at BLOCK_M 16;
    # W 940 MB, A 17 MB, out 117 MB
    {"T": 2048, "E": 8, "topk": 2, "N": 14336, "K": 4096, "dtype": "bf16", "proj": "gate_up",
     "mul_routed_weight": False},
    # DeepSeek-V2-Lite down_proj (64 routed experts of 1408, top-6, hidden 2048), a 4096-token prefill in
    # fp16, routing weights applied: 24576 rows, ~384 per expert (ragged: 19 % padding at BLOCK_M 128);
    # 142 GFLOP: 0.33 ms at 128 x 128, 1.0-1.5 ms at BLOCK_M 16; W 369 MB, A 69 MB, out 101 MB
    {"T": 4096, "E": 64, "topk": 6, "N": 2048, "K": 1408, "dtype": "fp16", "proj": "down",
     "mul_routed_weight": True},
    # Qwen3-30B-A3B gate_up_proj (128 experts of 768, top-8, hidden 2048), a 64-sequence decode step: 512
    # rows over 108 of the 128 experts (seed 0), ~5 rows each: weight streaming (680 MB of W: 0.17-0.26 ms, 3.9 TB/s)
    {"T": 64, "E": 128, "topk": 8, "N": 1536, "K": 2048, "dtype": "bf16", "proj": "gate_up",
     "mul_routed_weight": False},
]


def _torch_dtype(name: str):
    import torch
    try:
        return {"bf16": torch.bfloat16, "fp16": torch.float16}[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}") from None


def _proj(point) -> str:
    proj = point.get("proj", "gate_up")
    if proj not in PROJS:
        raise ValueError(f"proj {proj!r} is not 'gate_up' (A: [T, K]) or 'down' (A: [T * topk, K])")
    return proj


def _check_point(point) -> None:
    T, E, topk, N, K = (int(point[k]) for k in ("T", "E", "topk", "N", "K"))
    if min(T, E, topk, N, K) < 1 or topk > E:
        raise ValueError(f"need T, E, topk, N, K >= 1 and topk <= E; got T={T} E={E} topk={topk} N={N} K={K}")
    _torch_dtype(point.get("dtype", "bf16"))
    _proj(point)


def _check_cfg(cfg) -> None:
    for name in ("BLOCK_M", "BLOCK_N", "BLOCK_K"):
        v = cfg[name]
        if v < 16 or v & (v - 1):
            raise ValueError(f"{name}={v} must be a power of two >= 16 (a tl.dot operand side)")
    if cfg["GROUP_M"] < 1:
        raise ValueError(f"GROUP_M={cfg['GROUP_M']} must be >= 1")


def _padded_len(n_valid: int, E: int, block_m: int) -> int:
    """The length of sorted_ids: the upper bound of the padded rows, n_valid + E (BLOCK_M - 1),
    rounded up to a BLOCK_M multiple (every row block is then wholly inside the buffer)."""
    return triton.cdiv(n_valid + E * (block_m - 1), block_m) * block_m


def align_block_size(topk_ids, E: int, block_m: int):
    """moe_align_block_size in torch: (sorted_ids int32 [EM], expert_ids int32 [EM / BLOCK_M],
    num_post_padded int32 [1]) for topk_ids [T, topk] (ids in 0..E-1) on topk_ids' device.
    Each expert's (token, slot) ids in ascending order, padded with T * topk to a BLOCK_M
    multiple; expert_ids of the blocks past num_post_padded are -1 (never read)."""
    import torch
    dev = topk_ids.device
    flat = topk_ids.reshape(-1).to(torch.int64)
    n = flat.numel()
    counts = torch.bincount(flat, minlength=E)
    if counts.numel() != E:
        raise ValueError(f"topk_ids hold an expert id >= E={E}")
    padded = (counts + block_m - 1) // block_m * block_m
    starts = torch.cumsum(padded, 0) - padded
    firsts = torch.cumsum(counts, 0) - counts
    order = torch.sort(flat, stable=True).indices
    sorted_e = flat[order]
    pos = starts[sorted_e] + torch.arange(n, device=dev) - firsts[sorted_e]
    EM = _padded_len(n, E, block_m)
    sorted_ids = torch.full((EM,), n, dtype=torch.int32, device=dev)
    sorted_ids[pos] = order.to(torch.int32)
    expert_ids = torch.full((EM // block_m,), -1, dtype=torch.int32, device=dev)
    blocks = torch.repeat_interleave(torch.arange(E, device=dev), padded // block_m)
    expert_ids[:blocks.numel()] = blocks.to(torch.int32)
    num_post = padded.sum().reshape(1).to(torch.int32)
    return sorted_ids, expert_ids, num_post


def fused_moe_gemm(a, w, topk_weights, topk_ids, *, aligned=None, mul_routed_weight=False, out=None,
                   BLOCK_M=64, BLOCK_N=128, BLOCK_K=64, GROUP_M=16, num_warps=4, num_stages=4):
    """The expert GEMM of a MoE layer: out[t * topk + s] = a[row] @ w[topk_ids[t, s]]^T (* topk_weights[t, s]),
    row = t when a is [T, K] (gate_up) or t * topk + s when a is [T * topk, K] (down). a: bf16 / fp16, K
    contiguous; w: [E, N, K] of a's dtype, K contiguous; topk_weights [T, topk] fp32; topk_ids [T, topk]
    integer. `aligned`: align_block_size(topk_ids, E, BLOCK_M)'s output, built here when not given.
    Returns out [T * topk, N] of a's dtype (into `out` if given: unit column stride)."""
    import torch
    cfg = {"BLOCK_M": BLOCK_M, "BLOCK_N": BLOCK_N, "BLOCK_K": BLOCK_K, "GROUP_M": GROUP_M}
    _check_cfg(cfg)
    if a.dtype not in (torch.bfloat16, torch.float16) or w.dtype != a.dtype:
        raise ValueError(f"a and w must both be torch.bfloat16 or torch.float16; got {a.dtype}, {w.dtype}")
    if a.dim() != 2 or w.dim() != 3 or a.shape[1] != w.shape[2]:
        raise ValueError(f"expected a [T or T * topk, K] and w [E, N, K]; got {tuple(a.shape)}, {tuple(w.shape)}")
    if topk_ids.dim() != 2 or tuple(topk_weights.shape) != tuple(topk_ids.shape):
        raise ValueError(f"topk_ids and topk_weights must both be [T, topk]; got {tuple(topk_ids.shape)}, "
                         f"{tuple(topk_weights.shape)}")
    if topk_weights.dtype != torch.float32 or topk_ids.dtype not in (torch.int32, torch.int64):
        raise ValueError(f"topk_weights must be fp32 and topk_ids int32 / int64; got {topk_weights.dtype}, "
                         f"{topk_ids.dtype}")
    T, topk = topk_ids.shape
    E, N, K = w.shape
    if a.shape[0] not in (T, T * topk):
        raise ValueError(f"a has {a.shape[0]} rows: T={T} (gate_up) or T * topk={T * topk} (down)")
    if T == 0 or N == 0 or K == 0:
        raise ValueError(f"empty GEMM: T={T}, N={N}, K={K}")
    if a.stride(1) != 1 or w.stride(2) != 1:
        raise ValueError(f"a and w need K contiguous (unit stride along K); got strides {a.stride()}, {w.stride()}")
    top_k = 1 if a.shape[0] == T * topk and topk > 1 else topk
    if aligned is None:
        aligned = align_block_size(topk_ids, E, BLOCK_M)
    sorted_ids, expert_ids, num_post = aligned
    if sorted_ids.numel() != _padded_len(T * topk, E, BLOCK_M) or expert_ids.numel() * BLOCK_M != sorted_ids.numel():
        raise ValueError(f"aligned was built for another BLOCK_M than {BLOCK_M} (sorted_ids {sorted_ids.numel()}, "
                         f"expert_ids {expert_ids.numel()})")
    if out is None:
        out = torch.empty((T * topk, N), dtype=a.dtype, device=a.device)
    elif tuple(out.shape) != (T * topk, N) or out.dtype != a.dtype or out.stride(1) != 1:
        raise ValueError(f"out must be {a.dtype} [{T * topk}, {N}] with unit column stride; got {out.dtype} "
                         f"{tuple(out.shape)} strides {out.stride()}")
    args = _kernel_args(a, w, out, topk_weights.reshape(-1), sorted_ids, expert_ids, num_post, top_k,
                        mul_routed_weight, cfg)
    grid = (_grid_size(sorted_ids.numel(), N, cfg),)
    _kernel[grid](**args, num_warps=num_warps, num_stages=num_stages)
    return out


def _kernel_args(a, w, out, topk_weights, sorted_ids, expert_ids, num_post, top_k, mul_routed_weight, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    E, N, K = w.shape
    return dict(A=a, W=w, OUT=out, TOPK_WEIGHTS=topk_weights, SORTED_IDS=sorted_ids, EXPERT_IDS=expert_ids,
                NUM_POST_PADDED=num_post, N=N, K=K, EM=sorted_ids.shape[0], num_valid=topk_weights.numel(),
                stride_am=a.stride(0), stride_we=w.stride(0), stride_wn=w.stride(1), stride_om=out.stride(0),
                TOP_K=top_k, MUL_ROUTED_WEIGHT=bool(mul_routed_weight), EVEN_K=K % cfg["BLOCK_K"] == 0,
                BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"], BLOCK_K=cfg["BLOCK_K"], GROUP_M=cfg["GROUP_M"])


def _grid_size(em: int, N: int, cfg) -> int:
    return (em // cfg["BLOCK_M"]) * triton.cdiv(N, cfg["BLOCK_N"])


@functools.lru_cache(maxsize=16)
def _routing_cpu(T: int, E: int, topk: int, skew: float, seed: int):
    """(topk_weights fp32 [T, topk], topk_ids int32 [T, topk]) on the CPU, drawn from a CPU
    generator: router logits N(0, 1) plus a per-expert bias N(0, skew^2), softmax, top-k,
    the k weights renormalised to sum 1 (Mixtral's / Qwen's norm_topk_prob)."""
    import torch
    gen = torch.Generator().manual_seed(seed)
    bias = torch.randn((E,), generator=gen) * skew
    logits = torch.randn((T, E), generator=gen) + bias
    probs = torch.softmax(logits, dim=1)
    weights, ids = torch.topk(probs, topk, dim=1)
    weights = weights / weights.sum(dim=1, keepdim=True)
    return weights.contiguous(), ids.to(torch.int32).contiguous()


@functools.lru_cache(maxsize=32)
def _aligned_cpu(T: int, E: int, topk: int, skew: float, block_m: int):
    """align_block_size of the seed-0 routing, on the CPU (example_args' index data)."""
    return align_block_size(_routing_cpu(T, E, topk, skew, 0)[1], E, block_m)


def _routing(point, seed: int):
    return _routing_cpu(int(point["T"]), int(point["E"]), int(point["topk"]), float(point.get("skew", 0.5)), seed)


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """Random activations (N(0, 1)), weights (~K^-1/2, so the output is O(1) whatever K is),
    routing drawn on the CPU (reproducible per seed) then moved, and the alignment for each
    BLOCK_M of ALIGNED_BLOCK_M (moe_align_block_size: here, outside the timed launch)."""
    import torch
    _check_point(point)
    dt = _torch_dtype(point.get("dtype", "bf16"))
    T, E, topk, N, K = (int(point[k]) for k in ("T", "E", "topk", "N", "K"))
    weights, ids = _routing(point, seed)
    rows = T if _proj(point) == "gate_up" else T * topk
    gen = torch.Generator(device=device).manual_seed(seed)
    a = torch.randn((rows, K), generator=gen, device=device).to(dt)
    w = torch.empty((E, N, K), dtype=dt, device=device)
    for e in range(E):             # one expert at a time: no fp32 copy of the whole weight
        w[e] = (torch.randn((N, K), generator=gen, device=device) * K ** -0.5).to(dt)
    aligned = {bm: tuple(x.to(device) for x in align_block_size(ids, E, bm)) for bm in ALIGNED_BLOCK_M}
    return {"a": a, "w": w, "topk_weights": weights.to(device), "topk_ids": ids.to(device), "aligned": aligned,
            "mul_routed_weight": bool(point.get("mul_routed_weight", False))}


def launch(inputs, cfg):
    bm = cfg["BLOCK_M"]
    aligned = inputs["aligned"].get(bm)
    if aligned is None:            # a BLOCK_M make_inputs did not align for: align once, keep it
        aligned = inputs["aligned"][bm] = align_block_size(inputs["topk_ids"], inputs["w"].shape[0], bm)
    return fused_moe_gemm(inputs["a"], inputs["w"], inputs["topk_weights"], inputs["topk_ids"], aligned=aligned,
                          mul_routed_weight=inputs["mul_routed_weight"], BLOCK_M=bm, BLOCK_N=cfg["BLOCK_N"],
                          BLOCK_K=cfg["BLOCK_K"], GROUP_M=cfg["GROUP_M"], num_warps=cfg["num_warps"],
                          num_stages=cfg["num_stages"])


def _a_rows(inputs):
    """Row index of A for each (token, slot) row of out."""
    import torch
    T, topk = inputs["topk_ids"].shape
    idx = torch.arange(T * topk, device=inputs["a"].device)
    return idx // topk if inputs["a"].shape[0] == T else idx


def reference(inputs):
    """fp32 out [T * topk, N]: per expert, its rows of A (fp32) times W[e]^T (fp32), scaled by
    the routing weights (fp32) when the point multiplies them in."""
    import torch
    a, w = inputs["a"], inputs["w"]
    ids = inputs["topk_ids"].reshape(-1).long()
    rows = _a_rows(inputs)
    out = torch.zeros((ids.numel(), w.shape[1]), dtype=torch.float32, device=a.device)
    for e in torch.unique(ids).tolist():
        sel = torch.nonzero(ids == e).reshape(-1)
        out[sel] = a[rows[sel]].float() @ w[e].float().t()
    if inputs["mul_routed_weight"]:
        out *= inputs["topk_weights"].reshape(-1, 1).float()
    return out


def torch_baseline(inputs):
    """The loop over experts a torch user writes: gather the expert's rows, one matmul in the
    input dtype (cuBLAS on a GPU), scale, scatter."""
    import torch
    a, w = inputs["a"], inputs["w"]
    ids = inputs["topk_ids"].reshape(-1).long()
    rows = _a_rows(inputs)
    out = torch.empty((ids.numel(), w.shape[1]), dtype=a.dtype, device=a.device)
    for e in torch.unique(ids).tolist():
        sel = torch.nonzero(ids == e).reshape(-1)
        y = a[rows[sel]] @ w[e].t()
        if inputs["mul_routed_weight"]:
            y = (y.float() * inputs["topk_weights"].reshape(-1)[sel, None]).to(a.dtype)
        out[sel] = y
    return out


def experts_hit(point, seed: int = 0) -> int:
    """Experts that receive at least one (token, slot) at the point's seed-`seed` routing."""
    import torch
    return int(torch.unique(_routing(point, seed)[1]).numel())


def bytes_moved(point) -> int:
    """A read once, the weights of the experts the (seed-0) routing hits read once, out written
    once; the routing's unavoidable part: the T * topk (token, slot) ids (int32), and the fp32
    routing weights when they are multiplied in (the padding and the per-block expert ids,
    which depend on BLOCK_M, not counted)."""
    _check_point(point)
    T, topk, N, K = (int(point[k]) for k in ("T", "topk", "N", "K"))
    rows = T if _proj(point) == "gate_up" else T * topk
    weights = 4 * T * topk if point.get("mul_routed_weight", False) else 0
    return 2 * (rows * K + experts_hit(point) * N * K + T * topk * N) + 4 * T * topk + weights


def flops(point) -> int:
    """The useful multiply-adds: each (token, slot) row times its expert's [N, K] weight
    (padding rows not counted)."""
    return 2 * int(point["T"]) * int(point["topk"]) * int(point["N"]) * int(point["K"])


def grid(cfg, point) -> int:
    """CTAs of one launch: (upper bound of the padded rows / BLOCK_M) x (N / BLOCK_N) tiles."""
    _check_cfg(cfg)
    T, E, topk = int(point["T"]), int(point["E"]), int(point["topk"])
    return _grid_size(_padded_len(T * topk, E, cfg["BLOCK_M"]), int(point["N"]), cfg)


def loop_iterations(cfg, point) -> int:
    """K tiles per CTA that works (every row block before num_post_padded)."""
    return triton.cdiv(int(point["K"]), cfg["BLOCK_K"])


def cta_iterations(cfg, point) -> list[int]:
    """K tiles each CTA of grid(cfg, point) runs, in launch order (the kernel's GROUP_M order):
    loop_iterations for a row block before num_post_padded of the seed-0 routing, 0 for one
    at or past it (it returns at once)."""
    import torch
    bm = cfg["BLOCK_M"]
    T, E, topk, N = int(point["T"]), int(point["E"]), int(point["topk"]), int(point["N"])
    counts = torch.bincount(_routing(point, 0)[1].reshape(-1).long(), minlength=E)
    live_blocks = int(((counts + bm - 1) // bm).sum())
    tiles_m = _padded_len(T * topk, E, bm) // bm
    tiles_n = triton.cdiv(N, cfg["BLOCK_N"])
    g = cfg["GROUP_M"]
    pid = torch.arange(tiles_m * tiles_n)
    per_group = g * tiles_n
    first_m = (pid // per_group) * g
    rows_in_group = torch.clamp(tiles_m - first_m, max=g)
    tile_m = first_m + (pid % per_group) % rows_in_group
    k_tiles = loop_iterations(cfg, point)
    return torch.where(tile_m < live_blocks, k_tiles, 0).tolist()


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`: tensors on the meta device (no memory)
    but the routing's index tensors, which hold the seed-0 routing's values on the CPU."""
    import torch
    _check_point(point)
    _check_cfg(cfg)
    dt = _torch_dtype(point.get("dtype", "bf16"))
    T, E, topk, N, K = (int(point[k]) for k in ("T", "E", "topk", "N", "K"))
    gate_up = _proj(point) == "gate_up"
    a = torch.empty((T if gate_up else T * topk, K), dtype=dt, device="meta")
    w = torch.empty((E, N, K), dtype=dt, device="meta")
    out = torch.empty((T * topk, N), dtype=dt, device="meta")
    topk_weights = torch.empty((T * topk,), dtype=torch.float32, device="meta")
    # the routing's index tensors with their (seed-0) data, on the CPU: rank reads each block's expert id
    # from them (which weight strip a CTA streams); the same values make_inputs aligns
    sorted_ids, expert_ids, num_post = _aligned_cpu(T, E, topk, float(point.get("skew", 0.5)), cfg["BLOCK_M"])
    top_k = topk if gate_up else 1
    return _kernel_args(a, w, out, topk_weights, sorted_ids, expert_ids, num_post, top_k,
                        point.get("mul_routed_weight", False), cfg)
