"""Sampled dense-dense matrix multiplication (SDDMM) over a graph's edge list: the per-edge, per-head
attention logits of a graph transformer (PyG's TransformerConv / UniMP, DGL's `u_dot_v` / `e_dot_v`,
the QK^T step of sparse attention masked to a graph), and the gradient of an SpMM w.r.t. its sparse
values (dA[e] = <dOut[row[e], :], B[col[e], :]>, H = 1), a bare @triton.jit kernel + its launcher:

    score[e, h] = scale * sum_d q[row[e], h, d] * k[col[e], h, d]          (fp32 products and sum)

row, col: [E] int32 / int64 node ids (row: the node whose query row is read -- the edge's destination in
message-passing attention, PyG's index i / edge_index[1]; col: the key's node, the source j /
edge_index[0]), any stride (the two rows of a [2, E] edge_index, or the columns of an [E, 2] pair list:
stride-2 views), trusted (0 <= id < N, not range-checked), in any order (sorted by destination as a CSR /
DGL in-edge CSC walks them, or the unsorted COO a sampler emits). q [N_q, H, D], k [N_k, H, D] in fp32 /
bf16 / fp16 with unit D stride and any node and head strides (q and k column slices of one fused
[N, 3, H, D] qkv projection are read in place). scale: a float (1 / sqrt(D) for scaled dot-product
attention; 1.0 for u_dot_v and the SpMM gradient). out [E, H] in q's dtype, fresh and contiguous: fp32
products and accumulation (the 16-bit operands widened exactly), one multiply by scale and one rounding
at the store.

Work split: one program per (block of BLOCK_E consecutive edges, group of TILE_H heads), TILE_H =
min(HEADS, next_pow2(H)) (an engineer's clamp: no head group wider than the heads), a 1-D grid with the
head group fastest (the programs that load one edge block's ids run side by side: the ids re-read from
L2). A program loads its BLOCK_E row and col ids once (coalesced, evict-first: streamed once), widens
them to int64 row offsets, then walks the head dimension in steps of TILE_D = min(BLOCK_D,
next_pow2(D)) features (tl.range, num_stages the launch's: with num_stages 2 Triton prefetches the next
step's two gathered tiles into shared memory with cp.async): one step gathers the [BLOCK_E, TILE_H,
TILE_D] tiles of q at the rows and k at the cols (TILE_D contiguous elements a (node, head): one
32-256-byte run), multiplies them in fp32 and reduces the step's features into the [BLOCK_E, TILE_H]
fp32 accumulator (a per-step reduction: the tiles die every step, so only the two in-flight tiles
occupy registers). Then one store of the [BLOCK_E, TILE_H] scores. An edge past E reads node 0's rows
(its id loaded as 0: valid memory) and is not stored, so the gathers carry no edge mask; the head mask
(EVEN_H 0: the last head group's heads past H) and the feature mask (EVEN_D 0: TILE_D does not divide D)
are constexpr branches that drop out where the tile divides the shape. q / k rows are left to L2 (a hub
node's rows are read by thousands of edges).

The gathered rows are the traffic: 2 E H D elements through L2 (q and k themselves from DRAM once when
they fit the 50 MB L2, else the gathers' re-reads too -- an edge order sorted by destination reuses the
query row across a node's consecutive edges, a random order does not); BLOCK_E x TILE_H x TILE_D x 2
elements in flight a step is the memory-level parallelism a program offers, against its registers.

How this differs from the other examples: examples/gat_edge_softmax.py scores edges from per-node
scalars (GAT: a_src + a_dst) or a per-edge leaky_relu MLP (GATv2), then softmaxes and aggregates over a
destination-sorted CSR in the same pass -- one program per destination node; here the score is a
D-long dot product of two gathered rows per head, the graph a plain edge list in any order (no CSR, no
per-node program, no softmax, no aggregation: the [E, H] logits are the output, for a separate edge
softmax or an SpMM). examples/csr_spmm.py multiplies a sparse matrix by a dense one (sparse x dense ->
dense rows, a reduction over each row's nonzeros); SDDMM is its transpose-side dual (dense x dense
sampled at the nonzeros -> one value a nonzero, a reduction over the feature dimension), and the
gradient of its sparse values.

Tunables: BLOCK_E (edges a program: 16 / 32 / 64), BLOCK_D (features a step: 16 / 64, clamped to
next_pow2(D): more steps with narrow 32-64-byte runs vs. one or two wide steps), HEADS (heads a program:
1 / 2, clamped to next_pow2(H)), num_warps (4 / 8), num_stages (1 / 2: the feature loop's prefetch
depth). On sm_90 every config of the sweep compiles at every point; none spills under triton 3.9, one (of 144) under 3.6
(2 spills at 48 registers, 64 x 2 x 32 fp32 on 8 warps; registers and shared memory: the test file's test_sweep_fits_the_points).
Problem parameters (a workload point): N (nodes: q and k both [N, H, D]), E (edges), H (heads), D (head
dim), dtype (of q, k and out), ids ("int32" / "int64"), order ("dst": sorted by (row, col) as a
CSR / in-edge CSC holds them; "random": the draw's order), zipf (the exponent of the nodes' degree law),
scale (1: 1 / sqrt(D), 0: 1.0), qkv (1: q and k slices of one fused [N, 3, H, D] projection, node stride
3 H D; 0: separate contiguous [N, H, D]).
"""

from __future__ import annotations

import functools
import math

import triton
import triton.language as tl


@triton.jit
def _kernel(ROW, COL, Q, K, OUT, E, H, D, scale, stride_row, stride_col, sq_n, sq_h, sk_n, sk_h,
            EVEN_H: tl.constexpr, EVEN_D: tl.constexpr, BLOCK_E: tl.constexpr, TILE_H: tl.constexpr,
            TILE_D: tl.constexpr, NUM_STAGES: tl.constexpr):
    pid = tl.program_id(0)
    n_hg = tl.cdiv(H, TILE_H)
    pid_h = pid % n_hg
    pid_e = pid // n_hg
    e = pid_e * BLOCK_E + tl.arange(0, BLOCK_E)
    e_ok = e < E
    # ids streamed once; an edge past E reads node 0 (valid memory) and is never stored
    r = tl.load(ROW + e * stride_row, mask=e_ok, other=0, eviction_policy="evict_first").to(tl.int64)
    c = tl.load(COL + e * stride_col, mask=e_ok, other=0, eviction_policy="evict_first").to(tl.int64)
    h = pid_h * TILE_H + tl.arange(0, TILE_H)
    dd = tl.arange(0, TILE_D)[None, None, :]
    q_row = r[:, None, None] * sq_n + (h * sq_h)[None, :, None]
    k_row = c[:, None, None] * sk_n + (h * sk_h)[None, :, None]
    h_ok = (h < H)[None, :, None]
    acc = tl.zeros([BLOCK_E, TILE_H], dtype=tl.float32)
    for d0 in tl.range(0, D, TILE_D, num_stages=NUM_STAGES):
        q_ptr = Q + q_row + (d0 + dd)
        k_ptr = K + k_row + (d0 + dd)
        if EVEN_D:
            if EVEN_H:
                qt = tl.load(q_ptr)
                kt = tl.load(k_ptr)
            else:
                qt = tl.load(q_ptr, mask=h_ok, other=0.0)
                kt = tl.load(k_ptr, mask=h_ok, other=0.0)
        else:
            m = h_ok & (d0 + dd < D)
            qt = tl.load(q_ptr, mask=m, other=0.0)
            kt = tl.load(k_ptr, mask=m, other=0.0)
        acc += tl.sum(qt.to(tl.float32) * kt.to(tl.float32), axis=2)
    acc = acc * scale
    o_ok = e_ok[:, None] & (h < H)[None, :]
    tl.store(OUT + e.to(tl.int64)[:, None] * H + h[None, :], acc.to(OUT.dtype.element_ty), mask=o_ok)


# ---------------------------------------------------------------- launcher
ROLE = "held-out-32"
DTYPES = ("fp32", "bf16", "fp16")
ID_DTYPES = ("int32", "int64")
ORDERS = ("dst", "random")
TUNABLES = ("BLOCK_E", "BLOCK_D", "HEADS", "num_warps", "num_stages")
BASELINE = {"BLOCK_E": 32, "BLOCK_D": 64, "HEADS": 1, "num_warps": 4, "num_stages": 1}
# the study's sweep: 3 x 2 x 2 x 2 x 2 = 48 configs. Tiles of 16-64 edges x 1-2 heads x 16-64 features
# (256-8192 elements, 1-64 a thread), the feature loop prefetched (num_stages 2) or not
SWEEP_AXES = {"BLOCK_E": [16, 32, 64], "BLOCK_D": [16, 64], "HEADS": [1, 2], "num_warps": [4, 8],
              "num_stages": [1, 2]}
MAX_E = 2**31 - 2**16       # int32 edge offsets in the kernel (block starts included)
MAX_TILE = 8192             # BLOCK_E x HEADS x BLOCK_D elements of one gathered tile

POINTS = [
    # ogbn-arxiv (169,343 papers; 1,166,243 citations made symmetric, 2,315,598, plus 169,343 self loops),
    # a full-graph TransformerConv / UniMP layer (hidden 256 as 8 heads of 32, fp32), the logits
    # (q_i . k_j) / sqrt(32) with edge_index sorted by destination (a CSR's order), int64 ids (PyG). zipf
    # 0.65: the top drawn degree ~10k (arxiv's largest is ~13k). q and k 173 MB each (3.5x the L2); 5.1 GB of
    # gathered rows through L2; ~0.3-1.5 ms on an H100
    {"N": 169343, "E": 2484941, "H": 8, "D": 32, "dtype": "fp32", "ids": "int64", "order": "dst",
     "zipf": 0.65, "scale": 1, "qkv": 0},
    # Yelp (GraphSAINT's: 716,847 nodes, 13,954,819 edges), the SpMM backward of a GCN-style layer with
    # hidden 128 in bf16 (autocast): dA[e] = <dOut[row e], X W[col e]> (one "head", no scale), int32 ids
    # (DGL's g.int()), edges in the sampler's unsorted COO order. zipf 0.4 (chosen: a hub of a few
    # thousand edges). Operands 184 MB each (not L2-resident); 7.1 GB of gathered 256-byte rows, most from
    # DRAM in random order: ~2-8 ms. The index data: 27.9M ids
    {"N": 716847, "E": 13954819, "H": 1, "D": 128, "dtype": "bf16", "ids": "int32", "order": "random",
     "zipf": 0.4, "scale": 0, "qkv": 0},
    # ogbn-products, one neighbour-sampled mini-batch of a 4-head graph transformer (PyG's NeighborLoader,
    # batch 1024, fanout [15, 10, 5]: ~940k sampled edges over ~600k distinct nodes; heads of 64, fp16
    # AMP), the logits / sqrt(64) with q and k read in place from a fused qkv projection [N, 3, 4, 64]
    # (node stride 768), the edges in the sampler's CSR order (by destination), int64 ids. zipf 0.5
    # (chosen). qkv 922 MB (q, k: 2 x 307 MB read); 0.96 GB of gathered 128-byte rows: ~0.2-0.6 ms
    {"N": 600000, "E": 940000, "H": 4, "D": 64, "dtype": "fp16", "ids": "int64", "order": "dst",
     "zipf": 0.5, "scale": 1, "qkv": 1},
]


def _torch_dtype(name: str):
    import torch
    try:
        return {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}") from None


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _pow2(v: int) -> int:
    return 1 << max(0, (v - 1).bit_length())


def _flag(point, key: str, default: int) -> int:
    v = point.get(key, default)
    if v not in (0, 1) or not isinstance(v, (int, bool)):
        raise ValueError(f"{key}={v!r} must be 0 or 1")
    return int(v)


def _check_point(point) -> dict:
    """The point's fields, checked (defaults: dtype fp32, ids int64, order "dst", zipf 0.5, scale 1, qkv 0)."""
    for k in ("N", "E", "H", "D"):
        v = point[k]
        if not _is_int(v) or v < 1:
            raise ValueError(f"{k}={v!r} must be a positive int")
    if point["E"] > MAX_E:
        raise ValueError(f"E={point['E']} edges exceed the kernel's int32 edge offsets (at most {MAX_E})")
    dt = point.get("dtype", "fp32")
    if dt not in DTYPES:
        raise ValueError(f"dtype {dt!r} is not one of {', '.join(DTYPES)}")
    ids = point.get("ids", "int64")
    if ids not in ID_DTYPES:
        raise ValueError(f"ids {ids!r} is not one of {', '.join(ID_DTYPES)}")
    order = point.get("order", "dst")
    if order not in ORDERS:
        raise ValueError(f"order {order!r} is not one of {', '.join(ORDERS)}")
    s = point.get("zipf", 0.5)
    if isinstance(s, bool) or not isinstance(s, (int, float)) or not 0 <= s <= 4:
        raise ValueError(f"zipf={s!r} must be a number from 0 to 4")
    return {"N": point["N"], "E": point["E"], "H": point["H"], "D": point["D"], "dtype": dt, "ids": ids,
            "order": order, "zipf": float(s), "scale": _flag(point, "scale", 1), "qkv": _flag(point, "qkv", 0)}


def _check_cfg(cfg) -> None:
    for key, hi in (("BLOCK_E", 1024), ("BLOCK_D", 1024), ("HEADS", 64)):
        v = cfg[key]
        if not _is_int(v) or v < 1 or v > hi or v & (v - 1):
            raise ValueError(f"{key}={v!r} must be a power of two from 1 to {hi}")
    n = cfg["BLOCK_E"] * cfg["HEADS"] * cfg["BLOCK_D"]
    if n > MAX_TILE:
        raise ValueError(f"BLOCK_E x HEADS x BLOCK_D = {cfg['BLOCK_E']} x {cfg['HEADS']} x {cfg['BLOCK_D']} = {n} "
                         f"elements a tile; at most {MAX_TILE}")
    w = cfg["num_warps"]
    if not _is_int(w) or w not in (1, 2, 4, 8, 16):
        raise ValueError(f"num_warps={w!r} must be a power of two from 1 to 16")
    ns = cfg.get("num_stages", 1)
    if not _is_int(ns) or ns < 1:
        raise ValueError(f"num_stages={ns!r} must be a positive int")


def tile_h(H: int, HEADS: int) -> int:
    """The head group the kernel runs: HEADS, but no wider than H rounded up to a power of two."""
    return min(HEADS, _pow2(max(H, 1)))


def tile_d(D: int, BLOCK_D: int) -> int:
    """The features a step: BLOCK_D, but no wider than D rounded up to a power of two."""
    return min(BLOCK_D, _pow2(max(D, 1)))


def _grid(E: int, H: int, cfg) -> int:
    _check_cfg(cfg)
    return triton.cdiv(E, cfg["BLOCK_E"]) * triton.cdiv(H, tile_h(H, cfg["HEADS"]))


def _kernel_args(row, col, q, k, out, scale: float, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    E = row.shape[0]
    _, H, D = q.shape
    th, td = tile_h(H, cfg["HEADS"]), tile_d(D, cfg["BLOCK_D"])
    return dict(ROW=row, COL=col, Q=q, K=k, OUT=out, E=E, H=H, D=D, scale=float(scale),
                stride_row=row.stride(0), stride_col=col.stride(0), sq_n=q.stride(0), sq_h=q.stride(1),
                sk_n=k.stride(0), sk_h=k.stride(1), EVEN_H=int(H % th == 0), EVEN_D=int(D % td == 0),
                BLOCK_E=cfg["BLOCK_E"], TILE_H=th, TILE_D=td, NUM_STAGES=cfg["num_stages"])


def sddmm_edge_scores(q, k, row, col, scale: float | None = None, *, BLOCK_E: int = 32, BLOCK_D: int = 64,
                      HEADS: int = 1, num_warps: int = 4, num_stages: int = 1):
    """score [E, H] in q's dtype: scale x <q[row[e], h, :], k[col[e], h, :]> for every edge e and head h
    (fp32 products and accumulation). q [N_q, H, D], k [N_k, H, D] (2-d [N, D]: one head, out [E, 1]), fp32 /
    bf16 / fp16, the same dtype, unit D stride (any node / head stride); row, col: [E] int32 / int64, any
    stride, not range-checked. scale None: 1 / sqrt(D). BLOCK_E, BLOCK_D, HEADS, num_warps, num_stages: the
    tunables (module doc)."""
    import torch
    cfg = {"BLOCK_E": BLOCK_E, "BLOCK_D": BLOCK_D, "HEADS": HEADS, "num_warps": num_warps,
           "num_stages": num_stages}
    _check_cfg(cfg)
    if q.dim() == 2 and k.dim() == 2:
        q, k = q[:, None, :], k[:, None, :]
    if q.dim() != 3 or k.dim() != 3:
        raise ValueError(f"expected q [N_q, H, D] and k [N_k, H, D]; got {tuple(q.shape)} and {tuple(k.shape)}")
    if q.dtype not in (torch.float32, torch.bfloat16, torch.float16) or k.dtype != q.dtype:
        raise ValueError(f"q and k must share one dtype of fp32 / bf16 / fp16; got {q.dtype} and {k.dtype}")
    if q.shape[1:] != k.shape[1:]:
        raise ValueError(f"q and k must have the same heads and head dim [*, H, D]; got {tuple(q.shape)} and "
                         f"{tuple(k.shape)}")
    _, H, D = q.shape
    for name, t in (("row", row), ("col", col)):
        if t.dim() != 1 or t.dtype not in (torch.int32, torch.int64):
            raise ValueError(f"{name} must be a 1-d int32 / int64 tensor [E]; got {tuple(t.shape)} {t.dtype}")
    E = row.shape[0]
    if col.shape[0] != E:
        raise ValueError(f"row and col must hold the same E edges; got {row.shape[0]} and {col.shape[0]}")
    if E > MAX_E:
        raise ValueError(f"E={E} edges exceed the kernel's int32 edge offsets (at most {MAX_E})")
    if scale is None:
        scale = 1.0 / math.sqrt(D) if D else 1.0
    if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not math.isfinite(scale):
        raise ValueError(f"scale={scale!r} must be a finite number (or None: 1 / sqrt(D))")
    dev = q.device
    for name, t in (("k", k), ("row", row), ("col", col)):
        if t.device != dev:
            raise ValueError(f"{name} must be on q's device {dev}; got {t.device}")
    out = torch.empty((E, H), dtype=q.dtype, device=dev)
    if E == 0 or H == 0:
        return out
    if D == 0:
        return out.zero_()
    if q.stride(2) != 1 and D > 1:
        q = q.contiguous()
    if k.stride(2) != 1 and D > 1:
        k = k.contiguous()
    # int32 edge offsets in the kernel: an id stride that would overflow them is copied out first
    if (E - 1) * abs(row.stride(0)) >= 2**31:
        row = row.contiguous()
    if (E - 1) * abs(col.stride(0)) >= 2**31:
        col = col.contiguous()
    _kernel[(_grid(E, H, cfg),)](**_kernel_args(row, col, q, k, out, scale, cfg), num_warps=num_warps,
                                 num_stages=num_stages)
    return out


# ---------------------------------------------------------------- the drawn graph
def zipf_nodes(n: int, N: int, s: float, rng, perm):
    """[n] int64 node ids (numpy): ranks r in 0 .. N - 1 drawn from the continuous power law p(x) ~ x^-s on
    [1, N + 1) (inverse CDF, x -> rank floor(x) - 1: about p(rank r) ~ (r + 1)^-s, O(1) a draw), mapped by
    perm."""
    import numpy as np
    u = rng.random(n)
    if abs(s - 1.0) < 1e-9:
        x = np.exp(u * np.log(N + 1.0))
    else:
        a = 1.0 - s
        x = (1.0 + u * ((N + 1.0) ** a - 1.0)) ** (1.0 / a)
    return perm[(x.astype(np.int64) - 1).clip(0, N - 1)]


@functools.lru_cache(maxsize=4)
def _edges(items: tuple, seed: int):
    """The point's edge_index [2, E] (row, col) in its id dtype on the CPU -- make_inputs' and example_args'
    one source: row and col drawn independently from one Zipf(zipf) law over the nodes (one random
    permutation of the ranks), sorted by (row, col) for order "dst"; a seeded numpy Generator."""
    import numpy as np
    import torch
    P = dict(items)
    N, E = P["N"], P["E"]
    rng = np.random.Generator(np.random.PCG64(seed))
    perm = rng.permutation(N)
    row = zipf_nodes(E, N, P["zipf"], rng, perm)
    col = zipf_nodes(E, N, P["zipf"], rng, perm)
    if P["order"] == "dst":
        o = np.argsort(row * N + col, kind="stable")
        row, col = row[o], col[o]
    it = {"int32": torch.int32, "int64": torch.int64}[P["ids"]]
    return torch.from_numpy(np.stack((row, col))).to(it)


def _items(P: dict) -> tuple:
    return tuple(sorted(P.items()))


# ---------------------------------------------------------------- the launcher contract
def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """edge_index [2, E] (row, col: _edges, the seeded draw), q and k [N, H, D] N(0, 1) in the point's dtype
    (qkv 1: the q and k slices of one [N, 3, H, D] projection, v the third, unused), scale (1 / sqrt(D) or
    1.0); copied to / drawn on `device`."""
    import torch
    P = _check_point(point)
    N, H, D = P["N"], P["H"], P["D"]
    ei = _edges(_items(P), int(seed)).to(device, copy=True)
    gen = torch.Generator(device=device).manual_seed(int(seed))
    dt = _torch_dtype(P["dtype"])
    if P["qkv"]:
        qkv = torch.randn((N, 3, H, D), generator=gen, device=device, dtype=torch.float32).to(dt)
        q, k = qkv[:, 0], qkv[:, 1]
    else:
        q = torch.randn((N, H, D), generator=gen, device=device, dtype=torch.float32).to(dt)
        k = torch.randn((N, H, D), generator=gen, device=device, dtype=torch.float32).to(dt)
    return {"edge_index": ei, "q": q, "k": k, "scale": 1.0 / math.sqrt(D) if P["scale"] else 1.0}


def launch(inputs, cfg):
    """score [E, H] in q's dtype of inputs["q"], ["k"], ["edge_index"] ([2, E]: row, col), ["scale"]."""
    ei = inputs["edge_index"]
    return sddmm_edge_scores(inputs["q"], inputs["k"], ei[0], ei[1], inputs["scale"], BLOCK_E=cfg["BLOCK_E"],
                             BLOCK_D=cfg["BLOCK_D"], HEADS=cfg["HEADS"], num_warps=cfg["num_warps"],
                             num_stages=cfg["num_stages"])


def reference(inputs):
    """fp32 [E, H]: the gathered rows' products summed in fp64 (on the CPU; fp32 on a GPU), times scale,
    rounded once."""
    import torch
    ei, q, k = inputs["edge_index"], inputs["q"], inputs["k"]
    wide = torch.float64 if q.device.type == "cpu" else torch.float32
    qi = q.to(wide).index_select(0, ei[0].long())
    kj = k.to(wide).index_select(0, ei[1].long())
    return ((qi * kj).sum(-1) * inputs["scale"]).float()


def torch_baseline(inputs):
    """What PyG's TransformerConv runs for it (eager): query_i = q.index_select(0, row), key_j =
    k.index_select(0, col) (both materialised [E, H, D]), (query_i * key_j).sum(-1) * scale, in q's dtype."""
    ei, q, k = inputs["edge_index"], inputs["q"], inputs["k"]
    return (q.index_select(0, ei[0]) * k.index_select(0, ei[1])).sum(-1) * inputs["scale"]


def _elem_bytes(name: str) -> int:
    return 4 if name == "fp32" else 2


def bytes_moved(point) -> int:
    """The ids read once (2 E x 4 / 8 B), q and k read once (2 N H D elements: every node is some edge's
    endpoint at the POINTS; the repeat reads of a node's rows are L2 hits or DRAM re-reads, not counted; at
    qkv 1 only the q and k slices' elements), the scores written once (E H elements)."""
    P = _check_point(point)
    N, E, H, D = P["N"], P["E"], P["H"], P["D"]
    ib, e = (4 if P["ids"] == "int32" else 8), _elem_bytes(P["dtype"])
    return 2 * E * ib + 2 * N * H * D * e + E * H * e


def flops(point) -> int:
    """A multiply and an add per (edge, head, feature), and the scale's multiply per score."""
    P = _check_point(point)
    return 2 * P["E"] * P["H"] * P["D"] + P["E"] * P["H"]


def grid(cfg, point) -> int:
    """(edge blocks of BLOCK_E) x (head groups of TILE_H), head group fastest."""
    P = _check_point(point)
    return _grid(P["E"], P["H"], cfg)


def loop_iterations(cfg, point) -> int:
    """Steps of TILE_D features a program: cdiv(D, TILE_D) (every program the same)."""
    P = _check_point(point)
    _check_cfg(cfg)
    return triton.cdiv(P["D"], tile_d(P["D"], cfg["BLOCK_D"]))


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`. ROW and COL carry data, on the CPU: the two
    rows of make_inputs' seed-0 edge_index [2, E] (the gathered rows' addresses come from them); q, k (the
    [N, 3, H, D] qkv slices or contiguous [N, H, D]) and out [E, H] are on the meta device."""
    import torch
    P = _check_point(point)
    _check_cfg(cfg)
    N, H, D = P["N"], P["H"], P["D"]
    ei = _edges(_items(P), 0)
    dt = _torch_dtype(P["dtype"])
    if P["qkv"]:
        qkv = torch.empty((N, 3, H, D), dtype=dt, device="meta")
        q, k = qkv[:, 0], qkv[:, 1]
    else:
        q = torch.empty((N, H, D), dtype=dt, device="meta")
        k = torch.empty((N, H, D), dtype=dt, device="meta")
    out = torch.empty((P["E"], H), dtype=dt, device="meta")
    return _kernel_args(ei[0], ei[1], q, k, out, 1.0 / math.sqrt(D) if P["scale"] else 1.0, cfg)
