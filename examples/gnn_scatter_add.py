"""Message-passing aggregation of a graph neural network over an unsorted COO edge list (PyG's
gather-then-scatter, `scatter(msg, edge_index[1], dim=0, reduce="sum")` / torch_scatter's scatter_add;
DGL's update_all(copy_u / copy_e, sum) on a COO graph), a bare @triton.jit kernel + its launcher:

    for every edge e (src[e] -> dst[e]):
        out[dst[e], :] += msg_e * w[e]                         (fp32, w[e] = 1 without edge weights)
        msg_e = x[src[e], :]   GATHER = 1: node features gathered at the source (PyG's x_j, DGL's copy_u)
        msg_e = msg[e, :]      GATHER = 0: per-edge messages [E, F] (a message MLP's output, DGL's copy_e)

src, dst: [E] int32 / int64 (usually the two rows of PyG's edge_index [2, E]; any strides: an [E, 2]
pair list's columns are stride-2 views; trusted: 0 <= id < N, not range-checked); x: [N_src, F] or msg:
[E, F] in fp32 / bf16 / fp16 with unit column stride (any row stride: a column slice of a wider
buffer); w: None or [E] fp32 / bf16 / fp16, any stride (GCN's symmetric normalisation deg^-1/2[src]
deg^-1/2[dst], an attention coefficient, NGCF's 1 / sqrt(|N_u| |N_i|)); out: [N, F] fp32, unit column
stride, any row stride. The launcher zero-fills a fresh out (torch.zeros: a second kernel, declared in
secondary_kernels) unless the caller passes one to accumulate into. Products w x msg in fp32 (the
message upcast exactly), one fp32 atomic add per (edge, column).

The edges are NOT sorted by destination -- COO as PyG holds it (coalesced: sorted by source, so dst is
in arbitrary order) or in any order at all -- so two edges into one node may sit in any CTAs, and the
adds are fp32 global atomics (tl.atomic_add, relaxed: only the sum matters; the result is unused, so
they compile to fire-and-forget `red` operations done in L2, `red.v4.f32` where a thread holds 4
contiguous aligned columns). The sum over a node's edges is the exact one up to fp32 reassociation,
not bit-reproducible from run to run. Degrees are power-law (a few hubs take thousands of edges), so
hub rows collide often, from many CTAs at once.

Work split: the edge list is cut into groups of E_STEPS x BLOCK_E consecutive edges and the F columns
into column blocks of TILE_F = min(BLOCK_F, next_pow2(F)) (an engineer's clamp: no column block wider
than the row; at F 41 BLOCK_F 64 and 128 both give TILE_F 64); one CTA per (edge group, column
block), a 1-D grid with the column block fastest, so the CTAs that read one edge group's ids run side
by side (the ids re-read from L2). The CTA walks its group in E_STEPS steps of BLOCK_E edges
(tl.range, num_stages the launch's: with num_stages 2 Triton prefetches the next step's ids and --
where the rows are 4-byte-aligned runs -- its gathered message tile into shared memory with cp.async
while this step's atomics go out). One step: a coalesced load of BLOCK_E dst ids (and src ids, and
weights), widened to int64 row offsets; the [BLOCK_E, TILE_F] message tile (BLOCK_E rows of TILE_F
contiguous elements: x rows anywhere in x, or msg's own rows), upcast to fp32 and scaled by the
weights; one [BLOCK_E, TILE_F] atomic add into the dst rows of out. Edges past E (the last group) are
masked off; the column mask is dropped when TILE_F divides F (EVEN_F). ids and per-edge messages are
streamed once (loaded evict-first); the gathered x rows are left to L2 (a hub's row is read by
thousands of edges).

How this differs from the other examples: csr_spmm reduces a destination-sorted CSR row by row in
registers (no atomics: a row's sum belongs to one CTA); gat_edge_softmax works on that CSR too;
embedding_bwd scatters token rows (an identity "gather", no weight) into a given gradient with atomics.
Here the graph is an unsorted COO edge list: the gather goes through one index (src), the scatter
through another (dst), with an optional per-edge weight, the fresh output zero-filled by a second
kernel, and the per-edge or per-node message source a constexpr (GATHER).

make_inputs draws dst and src independently from one Zipf(s) law over the nodes' ranks (p(rank r) ~
r^-s; the ranks scattered over the node ids by one random permutation, so a node's in- and
out-degree are alike, as in an undirected graph); s is the point's `zipf`, chosen so the top node's
expected in-degree is about the graph's largest (arxiv ~13.2k, Reddit ~21.7k, the statistics as
usually quoted; not refitted to the real degree sequences). order "src" sorts the edges by (src,
dst) as PyG's coalesce does (multi-edges kept), "random" leaves them in draw order. Edge weights, where the point has them, are
gcn_norm's: (deg + 1)^-1/2 at both ends, deg the drawn in-degree (+1: its self-loop).

Tunables: BLOCK_E (edges a step: 32 / 64), BLOCK_F (columns a CTA: 32 / 64 / 128, clamped as above),
E_STEPS (steps a CTA: 2 / 8; edges a CTA = BLOCK_E x E_STEPS), num_warps (4 / 8), num_stages (1 / 2: the
step loop's prefetch depth). On sm_90 every config of the sweep compiles at every point without
spills: 26-168 registers under triton 3.6.0 and 26-141 under 3.9.0, the most for 64 x 128 fp32 tiles
on 4 warps at arxiv (126-168) and 64 x 64 tiles on 4 warps at Reddit's F 41 (128-159: the 82-byte bf16
rows are scalar loads and atomics, a 64-bit address an element); shared memory 0-33.3 KiB under both:
the prefetched message tile and ids at num_stages 2 (32 KiB + 1.3 KiB for 64 x 128 fp32; at F 41 only
the ids, 0.5 KiB: the unaligned rows are not cp.async-able) and 4 KiB of layout conversion for fp16
messages. The clamp of BLOCK_F to next_pow2(F) is what keeps F 41 spill-free: an unclamped 64 x 128
tile there (87 of 128 columns masked) reached 255 registers and spilled on 4 warps.
Problem parameters (a workload point): N (nodes), E (edges), F (features), dtype (of x / msg), ids
("int32" / "int64"), gather (1: x[src]; 0: msg [E, F]), weight (0 / 1), order ("src" / "random"),
zipf (the degree law's exponent).
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _kernel(SRC, DST, W, MSG, OUT, E, F, stride_src, stride_dst, stride_w, stride_m, stride_o,
            GATHER: tl.constexpr, HAS_W: tl.constexpr, EVEN_F: tl.constexpr,
            BLOCK_E: tl.constexpr, TILE_F: tl.constexpr, E_STEPS: tl.constexpr, NUM_STAGES: tl.constexpr):
    pid = tl.program_id(0)
    n_fb = tl.cdiv(F, TILE_F)
    pid_f = pid % n_fb
    pid_e = pid // n_fb
    cols = pid_f * TILE_F + tl.arange(0, TILE_F)
    col_ok = cols < F
    lanes = tl.arange(0, BLOCK_E)
    e0 = pid_e * (E_STEPS * BLOCK_E)
    for s in tl.range(0, E_STEPS, num_stages=NUM_STAGES):
        e = e0 + s * BLOCK_E + lanes
        e_ok = e < E
        d = tl.load(DST + e * stride_dst, mask=e_ok, other=0, eviction_policy="evict_first")
        if EVEN_F:
            ok = e_ok[:, None]
        else:
            ok = e_ok[:, None] & col_ok[None, :]
        if GATHER:
            r = tl.load(SRC + e * stride_src, mask=e_ok, other=0, eviction_policy="evict_first")
            v = tl.load(MSG + r.to(tl.int64)[:, None] * stride_m + cols[None, :], mask=ok, other=0.0)
        else:
            v = tl.load(MSG + e.to(tl.int64)[:, None] * stride_m + cols[None, :], mask=ok, other=0.0,
                        eviction_policy="evict_first")
        v = v.to(tl.float32)
        if HAS_W:
            w = tl.load(W + e * stride_w, mask=e_ok, other=0.0, eviction_policy="evict_first")
            v = v * w.to(tl.float32)[:, None]
        tl.atomic_add(OUT + d.to(tl.int64)[:, None] * stride_o + cols[None, :], v, mask=ok, sem="relaxed")


# ---------------------------------------------------------------- launcher
ROLE = "held-out-30"
DTYPES = ("fp32", "bf16", "fp16")
ID_DTYPES = ("int32", "int64")
ORDERS = ("src", "random")
TUNABLES = ("BLOCK_E", "BLOCK_F", "E_STEPS", "num_warps", "num_stages")
BASELINE = {"BLOCK_E": 32, "BLOCK_F": 64, "E_STEPS": 2, "num_warps": 4, "num_stages": 1}
# the study's sweep: 2 x 3 x 2 x 2 x 2 = 48 configs. Tiles of 32-64 edges x 32-128 columns (8-64 elements
# a thread), 64-512 edges a CTA, the step loop prefetched (num_stages 2) or not
SWEEP_AXES = {"BLOCK_E": [32, 64], "BLOCK_F": [32, 64, 128], "E_STEPS": [2, 8], "num_warps": [4, 8],
              "num_stages": [1, 2]}
FILL_BLOCK = 512            # elements a CTA of torch's vectorised fill kernel (128 threads x 4): the zero-fill
MAX_E = 2**31 - 2**21       # int32 edge offsets in the kernel (edge group starts included)

POINTS = [
    # ogbn-arxiv, a GCNConv layer of OGB's full-batch GCN (hidden 256, fp32) on PyG's edge_index: the
    # 1,166,243 citations made symmetric (2,315,598) plus gcn_norm's 169,343 self loops, coalesced (sorted
    # by source), int64 ids, gcn_norm weights; x[src] gathered. zipf 0.65: the top in-degree ~13k
    # (about arxiv's largest). x and out 173 MB each (3.5x the 50 MB L2); 2.5 GB of fp32 atomics
    {"N": 169343, "E": 2484941, "F": 256, "dtype": "fp32", "ids": "int64", "gather": 1, "weight": 1,
     "order": "src", "zipf": 0.65},
    # Reddit (DGL's RedditDataset: 232,965 posts, 114,615,892 edges), full-graph GCN as DGL's GraphConv
    # computes its output layer: h W first (41 classes), then update_all(copy_u, sum), unweighted (the
    # norms are applied per node around it); bf16 (autocast), int32 ids (g.int()), edges in no order.
    # zipf 0.34: the top in-degree ~21k (about Reddit's largest). x 19 MB and out 38 MB: L2-sized; 82-byte
    # rows (2-byte aligned: scalar loads and atomics); 18.8 GB of fp32 atomics
    {"N": 232965, "E": 114615892, "F": 41, "dtype": "bf16", "ids": "int32", "gather": 1, "weight": 0,
     "order": "random", "zipf": 0.34},
    # Amazon-Book (the LightGCN / NGCF split: 52,643 users + 91,599 items, 2,984,108 interactions, both
    # directions), NGCF's aggregation of its per-edge messages m_{u<-i} = W1 e_i + W2 (e_i * e_u) [E, 64]
    # (fp16, AMP) with the weights 1 / sqrt(|N_u| |N_i|), coalesced by source, int64 ids. zipf 0.35 (chosen:
    # a hub of ~1.7k interactions). msg 764 MB streamed once; 1.5 GB of fp32 atomics
    {"N": 144242, "E": 5968216, "F": 64, "dtype": "fp16", "ids": "int64", "gather": 0, "weight": 1,
     "order": "src", "zipf": 0.35},
]


def _torch_dtype(name: str):
    import torch
    try:
        return {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}") from None


def _id_dtype(name: str):
    import torch
    try:
        return {"int32": torch.int32, "int64": torch.int64}[name]
    except KeyError:
        raise ValueError(f"ids {name!r} is not one of {', '.join(ID_DTYPES)}") from None


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
    """The point's fields, checked (defaults: ids int64, gather 1, weight 0, order "src", zipf 0.5)."""
    for k in ("N", "E", "F"):
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
    order = point.get("order", "src")
    if order not in ORDERS:
        raise ValueError(f"order {order!r} is not one of {', '.join(ORDERS)}")
    s = point.get("zipf", 0.5)
    if isinstance(s, bool) or not isinstance(s, (int, float)) or not 0 <= s <= 4:
        raise ValueError(f"zipf={s!r} must be a number from 0 to 4")
    return {"N": point["N"], "E": point["E"], "F": point["F"], "dtype": dt, "ids": ids,
            "gather": _flag(point, "gather", 1), "weight": _flag(point, "weight", 0), "order": order,
            "zipf": float(s)}


def _check_cfg(cfg) -> None:
    be = cfg["BLOCK_E"]
    if not _is_int(be) or be < 1 or be > 1024 or be & (be - 1):
        raise ValueError(f"BLOCK_E={be!r} must be a power of two from 1 to 1024")
    bf = cfg["BLOCK_F"]
    if not _is_int(bf) or bf < 1 or bf > 1024 or bf & (bf - 1):
        raise ValueError(f"BLOCK_F={bf!r} must be a power of two from 1 to 1024")
    if be * bf > 16384:
        raise ValueError(f"BLOCK_E x BLOCK_F = {be} x {bf} = {be * bf} elements a step; at most 16384")
    st = cfg["E_STEPS"]
    if not _is_int(st) or st < 1 or st > 1024:
        raise ValueError(f"E_STEPS={st!r} must be an int from 1 to 1024")
    w = cfg["num_warps"]
    if not _is_int(w) or w not in (1, 2, 4, 8, 16):
        raise ValueError(f"num_warps={w!r} must be a power of two from 1 to 16")
    ns = cfg.get("num_stages", 1)
    if not _is_int(ns) or ns < 1:
        raise ValueError(f"num_stages={ns!r} must be a positive int")


def tile_f(F: int, BLOCK_F: int) -> int:
    """The column block the kernel runs: BLOCK_F, but no wider than F rounded up to a power of two."""
    return min(BLOCK_F, _pow2(max(F, 1)))


def _grid(E: int, F: int, cfg) -> int:
    _check_cfg(cfg)
    return triton.cdiv(E, cfg["BLOCK_E"] * cfg["E_STEPS"]) * triton.cdiv(F, tile_f(F, cfg["BLOCK_F"]))


def _kernel_args(src, dst, weight, msg, out, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it). src None:
    msg holds per-edge messages (GATHER 0) and dst stands in for SRC (never read); weight None: dst
    stands in for W (never read)."""
    E, F = dst.shape[0], out.shape[1]
    tf = tile_f(F, cfg["BLOCK_F"])
    return dict(SRC=dst if src is None else src, DST=dst, W=dst if weight is None else weight, MSG=msg, OUT=out,
                E=E, F=F, stride_src=0 if src is None else src.stride(0), stride_dst=dst.stride(0),
                stride_w=0 if weight is None else weight.stride(0), stride_m=msg.stride(0),
                stride_o=out.stride(0), GATHER=int(src is not None), HAS_W=int(weight is not None),
                EVEN_F=int(F % tf == 0), BLOCK_E=cfg["BLOCK_E"], TILE_F=tf, E_STEPS=cfg["E_STEPS"],
                NUM_STAGES=cfg["num_stages"])


def gnn_scatter_add(msg, index, num_nodes: int | None = None, src=None, edge_weight=None, *, out=None,
                    BLOCK_E: int = 32, BLOCK_F: int = 64, E_STEPS: int = 2, num_warps: int = 4,
                    num_stages: int = 1):
    """out[index[e], :] += m_e * edge_weight[e] over the edges e, fp32 atomics; returns out [N, F] fp32.
    With src: msg is node features x [N_src, F] and m_e = x[src[e]] (PyG's gather-then-scatter, fused);
    without: msg is [E, F] per-edge messages and m_e = msg[e]. index (the destinations, PyG's
    edge_index[1]) and src: [E] int32 / int64, any stride (not range-checked); msg fp32 / bf16 / fp16
    with unit column stride; edge_weight None or [E] float. out None: a fresh zeroed [num_nodes, F]
    (num_nodes required); else an fp32 [N, F] buffer (unit column stride) that is accumulated into, in
    place. BLOCK_E, BLOCK_F, E_STEPS, num_warps, num_stages: the tunables (module doc)."""
    import torch
    cfg = {"BLOCK_E": BLOCK_E, "BLOCK_F": BLOCK_F, "E_STEPS": E_STEPS, "num_warps": num_warps,
           "num_stages": num_stages}
    _check_cfg(cfg)
    if msg.dim() != 2:
        raise ValueError(f"expected msg [N_src, F] (with src) or [E, F]; got {tuple(msg.shape)}")
    if msg.dtype not in (torch.float32, torch.bfloat16, torch.float16):
        raise ValueError(f"msg must be fp32 / bf16 / fp16; got {msg.dtype}")
    F = msg.shape[1]
    if index.dim() != 1 or index.dtype not in (torch.int32, torch.int64):
        raise ValueError(f"index must be a 1-d int32 / int64 tensor [E]; got {tuple(index.shape)} {index.dtype}")
    E = index.shape[0]
    if E > MAX_E:
        raise ValueError(f"E={E} edges exceed the kernel's int32 edge offsets (at most {MAX_E})")
    if src is not None:
        if src.dim() != 1 or src.dtype not in (torch.int32, torch.int64) or src.shape[0] != E:
            raise ValueError(f"src must be a 1-d int32 / int64 tensor of E={E} ids; got {tuple(src.shape)} "
                             f"{src.dtype}")
    elif msg.shape[0] != E:
        raise ValueError(f"without src, msg must hold one row an edge: [E={E}, F]; got {tuple(msg.shape)}")
    if edge_weight is not None:
        if edge_weight.dim() != 1 or edge_weight.shape[0] != E or \
                edge_weight.dtype not in (torch.float32, torch.bfloat16, torch.float16):
            raise ValueError(f"edge_weight must be a float [E={E}] (fp32 / bf16 / fp16); got "
                             f"{tuple(edge_weight.shape)} {edge_weight.dtype}")
    if out is None:
        if num_nodes is None or not _is_int(num_nodes) or num_nodes < 0:
            raise ValueError(f"num_nodes={num_nodes!r} must be an int >= 0 when out is not given")
    else:
        if out.dim() != 2 or out.dtype != torch.float32 or out.shape[1] != F:
            raise ValueError(f"out must be an fp32 [N, F={F}]; got {tuple(out.shape)} {out.dtype}")
        if num_nodes is not None and num_nodes != out.shape[0]:
            raise ValueError(f"num_nodes={num_nodes} differs from out's {out.shape[0]} rows")
        if out.stride(1) != 1 and F > 1:
            raise ValueError(f"out must have unit column stride (it is accumulated in place); got strides "
                             f"{tuple(out.stride())}")
    dev = msg.device
    for name, t in (("index", index), ("src", src), ("edge_weight", edge_weight), ("out", out)):
        if t is not None and t.device != dev:
            raise ValueError(f"{name} must be on msg's device {dev}; got {t.device}")
    if out is None:
        out = torch.zeros((num_nodes, F), dtype=torch.float32, device=dev)
    if E == 0 or F == 0:
        return out
    if msg.stride(1) != 1 and F > 1:
        msg = msg.contiguous()
    # int32 edge offsets in the kernel: a stride that would overflow them is copied out first
    if (E - 1) * abs(index.stride(0)) >= 2**31:
        index = index.contiguous()
    if src is not None and (E - 1) * abs(src.stride(0)) >= 2**31:
        src = src.contiguous()
    if edge_weight is not None and (E - 1) * abs(edge_weight.stride(0)) >= 2**31:
        edge_weight = edge_weight.contiguous()
    _kernel[(_grid(E, F, cfg),)](**_kernel_args(src, index, edge_weight, msg, out, cfg), num_warps=num_warps,
                                 num_stages=num_stages)
    return out


def zipf_nodes(n: int, N: int, s: float, gen, perm, device="cuda"):
    """[n] int64 node ids: ranks drawn from p(r) ~ r^-s over N ranks (inverse CDF), mapped by perm."""
    import torch
    p = torch.arange(1, N + 1, device=device, dtype=torch.float64).pow_(-s)
    cdf = torch.cumsum(p, 0)
    u = torch.rand((n,), generator=gen, device=device, dtype=torch.float64).mul_(cdf[-1])
    rank = torch.searchsorted(cdf, u).clamp_(max=N - 1)
    return perm[rank]


def gcn_weights(src, dst, N: int):
    """gcn_norm's edge weights (fp32): (deg[src] + 1)^-1/2 (deg[dst] + 1)^-1/2, deg the in-degree (+1 for
    the self loop gcn_norm adds)."""
    import torch
    deg = torch.bincount(dst.long(), minlength=N).to(torch.float32) + 1.0
    dis = deg.rsqrt()
    return dis[src.long()] * dis[dst.long()]


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """dst, src: zipf_nodes (independent draws, one permutation), sorted by (src, dst) for order "src";
    in the point's id dtype, as the two rows of one [2, E] edge_index. x [N, F] (gather) or msg [E, F],
    N(0, 1) in the point's dtype; weight: gcn_weights (fp32) or None. Drawn on `device` from a seeded
    generator."""
    import torch
    P = _check_point(point)
    gen = torch.Generator(device=device).manual_seed(seed)
    N, E, F = P["N"], P["E"], P["F"]
    perm = torch.randperm(N, generator=gen, device=device)
    dst = zipf_nodes(E, N, P["zipf"], gen, perm, device)
    src = zipf_nodes(E, N, P["zipf"], gen, perm, device)
    if P["order"] == "src":
        key = src * N + dst
        order = torch.sort(key, stable=True).indices
        del key
        src, dst = src[order], dst[order]
        del order
    it = _id_dtype(P["ids"])
    edge_index = torch.stack((src.to(it), dst.to(it)))
    del src, dst
    rows = N if P["gather"] else E
    feats = torch.randn((rows, F), generator=gen, device=device, dtype=torch.float32).to(_torch_dtype(P["dtype"]))
    weight = gcn_weights(edge_index[0], edge_index[1], N) if P["weight"] else None
    return {"edge_index": edge_index, "x": feats if P["gather"] else None, "msg": None if P["gather"] else feats,
            "weight": weight, "num_nodes": N}


def launch(inputs, cfg):
    """out [N, F] fp32, a fresh zero-filled buffer each call, of inputs["edge_index"] ([2, E]: src, dst),
    ["x"] (gathered at src) or ["msg"] (per edge), ["weight"] (None: unweighted), ["num_nodes"]."""
    ei = inputs["edge_index"]
    x = inputs.get("x")
    return gnn_scatter_add(inputs["msg"] if x is None else x, ei[1], inputs["num_nodes"],
                           src=None if x is None else ei[0], edge_weight=inputs.get("weight"),
                           BLOCK_E=cfg["BLOCK_E"], BLOCK_F=cfg["BLOCK_F"], E_STEPS=cfg["E_STEPS"],
                           num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])


def _messages(inputs, wide):
    """The per-edge messages [E, F] in dtype `wide`, weighted."""
    ei = inputs["edge_index"]
    x = inputs.get("x")
    m = inputs["msg"].to(wide) if x is None else x.to(wide).index_select(0, ei[0].long())
    w = inputs.get("weight")
    return m if w is None else m * w.to(wide)[:, None]


def reference(inputs):
    """fp32 [N, F]: the fp64 index_add of the weighted messages at dst (a deterministic order), rounded
    once (fp64 on the CPU, fp32 on a GPU)."""
    import torch
    ei = inputs["edge_index"]
    feats = inputs["msg"] if inputs.get("x") is None else inputs["x"]
    wide = torch.float64 if feats.device.type == "cpu" else torch.float32
    m = _messages(inputs, wide)
    out = torch.zeros((inputs["num_nodes"], feats.shape[1]), dtype=wide, device=feats.device)
    out.index_add_(0, ei[1].long(), m)
    return out.float()


def torch_baseline(inputs):
    """What PyG's MessagePassing runs for it (eager): x_j = x.index_select(0, src) (materialised [E, F]),
    times edge_weight.view(-1, 1), then scatter(..., dst, reduce="sum") -- a zeroed [N, F] and
    scatter_add_ with the broadcast index (CUDA atomics). The messages upcast to fp32 first so the output
    is fp32 like ours (PyG would add 16-bit messages in their own dtype)."""
    import torch
    ei = inputs["edge_index"]
    x = inputs.get("x")
    m = inputs["msg"] if x is None else x.index_select(0, ei[0])
    m = m.float()
    if inputs.get("weight") is not None:
        m = m * inputs["weight"].float().view(-1, 1)
    out = torch.zeros((inputs["num_nodes"], m.shape[1]), dtype=torch.float32, device=m.device)
    return out.scatter_add_(0, ei[1].long().view(-1, 1).expand_as(m), m)


def _elem_bytes(name: str) -> int:
    return 4 if name == "fp32" else 2


def bytes_moved(point) -> int:
    """ids (dst, and src for a gather: E x 4 / 8 B each) and weights (E x 4 B) read once; the messages:
    msg [E, F] read once (GATHER 0), or x read once (N F elements, GATHER 1: every node is some edge's
    source at the POINTS; the repeat reads of hub rows are L2 hits or DRAM re-reads, not counted); one
    fp32 add per (edge, column) sent to out (E F x 4 B, the atomic's payload: the read-modify-write
    happens in L2; DRAM's fill and write-back of out's lines, once per line while it stays in L2 and
    again when evicted between collisions, not counted apart); and the zero-fill's N F x 4 B
    (secondary_kernels)."""
    P = _check_point(point)
    N, E, F = P["N"], P["E"], P["F"]
    ib, e = (4 if P["ids"] == "int32" else 8), _elem_bytes(P["dtype"])
    ids = E * ib * (2 if P["gather"] else 1) + (E * 4 if P["weight"] else 0)
    feats = (N if P["gather"] else E) * F * e
    return ids + feats + E * F * 4 + N * F * 4


def flops(point) -> int:
    """One add per (edge, column) (the atomic's), and one multiply with edge weights."""
    P = _check_point(point)
    return P["E"] * P["F"] * (2 if P["weight"] else 1)


def grid(cfg, point) -> int:
    """(edge groups of BLOCK_E x E_STEPS edges) x (column blocks of TILE_F), column block fastest."""
    P = _check_point(point)
    return _grid(P["E"], P["F"], cfg)


def loop_iterations(cfg, point) -> int:
    """Steps of BLOCK_E edges a CTA: E_STEPS (the last edge group's steps past E are masked off, no
    traffic)."""
    _check_point(point)
    _check_cfg(cfg)
    return cfg["E_STEPS"]


def secondary_kernels(cfg, point) -> list[dict]:
    """torch.zeros of the fresh [N, F] fp32 out before `_kernel` (a store-only fill): FILL_BLOCK elements
    a CTA, tile_bytes = dram_bytes = its 4 FILL_BLOCK bytes written (one CTA's bytes, as
    docs/launcher.md asks)."""
    P = _check_point(point)
    _check_cfg(cfg)
    return [{"name": "zero_fill", "grid": triton.cdiv(P["N"] * P["F"], FILL_BLOCK), "iterations": 1,
             "tile_bytes": 4 * FILL_BLOCK, "dram_bytes": 4 * FILL_BLOCK}]


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory): src and dst
    the two rows of a contiguous [2, E] edge_index in the point's id dtype, x [N, F] (gather) or msg
    [E, F] contiguous in the point's dtype, the weights [E] fp32 (or dst standing in), out [N, F] fp32
    contiguous."""
    import torch
    P = _check_point(point)
    _check_cfg(cfg)
    N, E, F = P["N"], P["E"], P["F"]
    ei = torch.empty((2, E), dtype=_id_dtype(P["ids"]), device="meta")
    feats = torch.empty((N if P["gather"] else E, F), dtype=_torch_dtype(P["dtype"]), device="meta")
    w = torch.empty((E,), dtype=torch.float32, device="meta") if P["weight"] else None
    out = torch.empty((N, F), dtype=torch.float32, device="meta")
    return _kernel_args(ei[0] if P["gather"] else None, ei[1], w, feats, out, cfg)
