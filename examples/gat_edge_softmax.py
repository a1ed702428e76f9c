"""Graph attention (GAT / GATv2, as PyG's GATConv / GATv2Conv and DGL's GATConv / GATv2Conv compute
it): the per-edge attention score, its softmax over each destination node's incoming edges and the
attention-weighted aggregation of the source nodes' features, fused into one pass over a CSR graph
sorted by destination, a bare @triton.jit kernel + its launcher.

    for each destination node v, edges e in rowptr[v] .. rowptr[v + 1] - 1, source j = col[e], head h:
      GAT:    s[e, h] = leaky_relu(a_src[j, h] + a_dst[v, h])
      GATv2:  s[e, h] = sum_f att[h, f] * leaky_relu(x[j, h, f] + xr[v, h, f])
      alpha[e, h] = exp(s[e, h]) / sum_{e' of v} exp(s[e', h])          (the edge softmax)
      out[v, h, :] = sum_{e of v} alpha[e, h] * x[j, h, :]              (0 for a node without edges)

rowptr [N_dst + 1] and col [E] in one index dtype, int32 (DGL's g.int()) or int64 (PyG, DGL's default):
the destination-sorted CSR (PyG's SparseTensor / CSR of edge_index, DGL's in-edge CSC), rowptr trusted
(rowptr[0] = 0, nondecreasing), source ids not range-checked, their order within a node free.
x [N_src, H, F] (the linear layer's output viewed per head: PyG's x_j / DGL's feat_src) in fp32 / bf16 /
fp16, unit F stride (any head and row stride). GAT: a_src [N_src, H], a_dst [N_dst, H] (the per-node
logit halves (x * att_src).sum(-1), (x_dst * att_dst).sum(-1): PyG's alpha_src / alpha_dst, DGL's
el / er), fp32 or x's dtype. GATv2: xr [N_dst, H, F] (lin_r's output, x_i; x itself with
share_weights) in x's dtype, unit F stride, and att [H, F] (PyG's att[0], DGL's attn), fp32 or x's
dtype, contiguous. negative_slope 0.2 as both libraries' default. out [N_dst, H, F] in x's dtype,
contiguous (PyG's concat=True output [N, H F]). fp32 scores, softmax and accumulation, one rounding
at the store.

Work split: one program per (group of NODES consecutive destination nodes, group of HEADS heads), a
1-D grid of cdiv(N_dst, NODES) x cdiv(H, HEADS) programs, the head group fastest (the programs that
run together read the same rowptr / col ranges: one node group's index traffic through L2 once). A
program walks its NODES nodes one after another (a node past N_dst skips); per node it loads the two
rowptr entries and the node's own terms (GAT: a_dst[v, heads], HEADS floats; GATv2: xr[v, heads, :],
a [HEADS, BLOCK_F] tile), then walks the node's edges BLOCK_E at a time. One step: a coalesced load of
BLOCK_E source ids; GAT: a gather of the [BLOCK_E, HEADS] a_src entries (HEADS contiguous floats a
source) and the scores; GATv2: the scores from the gathered feature tile itself (F contiguous a head);
both: the gather of the [BLOCK_E, HEADS, BLOCK_F] feature tile x[col, heads, :] (HEADS F contiguous
elements a source when x is contiguous: one 32-512-byte run a source row) and its fp32 reduction over
the step's edges into the node's [HEADS, BLOCK_F] accumulator. Every row offset of x is int64 (a
source id times the row stride).

The softmax, in base 2 (scores times log2(e), exp2), two schedules chosen by TWO_PASS:

* TWO_PASS = 0 (online): each step updates the running max m[h] and sum l[h] and rescales the
  accumulator by exp2(m_old - m_new) before adding p = exp2(s - m_new): one walk over the edges.
* TWO_PASS = 1 (max-sum first): a first walk over the node's edges computes m and l only (the online
  max-sum: GAT reads the ids and a_src entries, GATv2 gathers the feature tiles too, for its scores);
  the second walk adds p = exp2(s - m) times the tiles with no rescaling. The node's second walk
  re-reads its ids and gathers (L1 / L2 hits for a short node, L2 or DRAM for a hub's).

Both end with out = acc / l (l = 0 only for a node without edges, whose acc is 0: out 0). The edge
loops are runtime-bounded (range(rowptr[v], rowptr[v + 1], BLOCK_E)); a node of d edges takes
cdiv(d, BLOCK_E) steps a walk, the last masked; a node without edges none.

Masks: the edge mask on every step (e < rowptr[v + 1]: the ids, the gathers, and the masked edges'
scores set to -inf, p = 0); the head mask (EVEN_H = 0 when HEADS does not divide H: the last head
group's heads past H) and the feature mask (EVEN_F = 0 when F is not a power of two: BLOCK_F =
next_pow2(F) lanes, those past F) on the gathers and the store; EVEN_H, EVEN_F and BLOCK_F set by
the launcher.

Degrees are data (power-law: a few hub nodes thousands of edges, most a handful, some none), so the
programs' work is uneven; NODES > 1 puts several nodes in one program (fewer, longer programs: the
per-node and per-program overhead amortized, a hub's neighbours share its program's time). The
gathered feature rows are the traffic: E x H x F elements through L2 (x itself from DRAM once when it
fits the L2, else the gathers' re-reads too); BLOCK_E x HEADS x BLOCK_F elements in flight a step is
the memory-level parallelism a program offers, against its registers (the tile in fp32, GATv2 a
second one for the scores).

Tunables: BLOCK_E (edges a step), HEADS (heads a program: 1 / 2 / 4), NODES (destination nodes a
program), TWO_PASS (0 / 1), num_warps; num_stages held at 1 (no dot: the edge loops' loads are not
pipelined). Every config of the sweep compiles for sm_90 at every point with triton 3.6 and 3.9. Shared
memory: the reductions' scratch only, 64 B - 8 KiB (3.6) / 4 KiB (3.9), far within sm_90's 227 KiB.
Registers: 31-255 under 3.6, 26-168 under 3.9, the most for GATv2's 32 x 4 x 64 tile on 4 warps at the
products point (the fp32 tile, its leaky_relu scores, and xr / att held a thread beside it). Spills:
none from the tiles; under 3.6 (ptxas 12.8) 14 of the 216 (config, point) pairs keep a 32- / 48- / 64-
register step by spilling 2-4 words (8-16 bytes: a node's loop-invariant pointer saved across the edge
loop), under 3.9 one pair (2 words). BLOCK_E 64 is not swept: 64 x 4 x 64 on 4 warps (128 tile elements
a thread) spills 8 registers at the products point.
Problem parameters (a workload point): N (nodes: N_src = N_dst), E (edges), H (heads), F (features a
head), variant ("gat" / "gatv2"), dtype (x's), index ("int32" / "int64": rowptr's and col's), empty
(the share of nodes without in-edges, default 0), max_deg (the largest in-degree, default E). The
graph is synthetic, drawn on the CPU from the seed (make_inputs): the real graph's node and edge
counts, a power-law in-degree sequence, power-law source popularity.
"""

from __future__ import annotations

import functools
import math

import triton
import triton.language as tl

FEATURE_RANK = 32       # x = x_in W: a linear layer's output from FEATURE_RANK input features
NEG_SLOPE = 0.2         # leaky_relu's negative slope, PyG's and DGL's default


@triton.jit
def _kernel(ROWPTR, COL, X, XR, A_SRC, A_DST, ATT, OUT, N, H, F, n_hg,
            stride_xn, stride_xh, stride_rn, stride_rh, stride_an, stride_dn, stride_on, stride_oh, slope,
            V2: tl.constexpr, TWO_PASS: tl.constexpr, EVEN_H: tl.constexpr, EVEN_F: tl.constexpr,
            NODES: tl.constexpr, HEADS: tl.constexpr, BLOCK_E: tl.constexpr, BLOCK_F: tl.constexpr):
    LOG2E: tl.constexpr = 1.4426950408889634
    pid = tl.program_id(0)
    ng = pid // n_hg                                    # the node group
    hg = pid - ng * n_hg                                # the head group (fastest)
    h = hg * HEADS + tl.arange(0, HEADS)
    f = tl.arange(0, BLOCK_F)
    ee = tl.arange(0, BLOCK_E)
    if EVEN_H:
        h_ok = tl.full([HEADS], 1, tl.int1)
    else:
        h_ok = h < H
    if EVEN_F:
        f_ok = tl.full([BLOCK_F], 1, tl.int1)
    else:
        f_ok = f < F
    hf_ok = h_ok[:, None] & f_ok[None, :]               # [HEADS, BLOCK_F]
    x_hf = (h * stride_xh)[:, None] + f[None, :]        # a source row's [HEADS, BLOCK_F] offsets
    if V2:
        att = tl.load(ATT + h[:, None] * F + f[None, :], mask=hf_ok, other=0.0).to(tl.float32) * LOG2E

    for i in range(NODES):
        v = ng * NODES + i
        if v < N:
            v64 = v.to(tl.int64)
            start = tl.load(ROWPTR + v)
            end = tl.load(ROWPTR + v + 1)
            if V2:
                xr = tl.load(XR + v64 * stride_rn + (h * stride_rh)[:, None] + f[None, :], mask=hf_ok,
                             other=0.0).to(tl.float32)
            else:
                ad = tl.load(A_DST + v64 * stride_dn + h, mask=h_ok, other=0.0).to(tl.float32)
            m = tl.full([HEADS], float("-inf"), tl.float32)
            l = tl.zeros([HEADS], tl.float32)
            if TWO_PASS:
                # first walk: the running max and sum of the node's scores
                for p0 in range(start, end, BLOCK_E):
                    e = p0 + ee
                    ok = e < end
                    src = tl.load(COL + e, mask=ok, other=0).to(tl.int64)
                    if V2:
                        xt = tl.load(X + src[:, None, None] * stride_xn + x_hf[None, :, :],
                                     mask=ok[:, None, None] & hf_ok[None, :, :], other=0.0).to(tl.float32)
                        z = xt + xr[None, :, :]
                        z = tl.where(z > 0, z, z * slope)
                        s = tl.sum(z * att[None, :, :], axis=2)
                    else:
                        a = tl.load(A_SRC + src[:, None] * stride_an + h[None, :], mask=ok[:, None] & h_ok[None, :],
                                    other=0.0).to(tl.float32)
                        z = a + ad[None, :]
                        s = tl.where(z > 0, z, z * slope) * LOG2E
                    s = tl.where(ok[:, None], s, float("-inf"))
                    m_new = tl.maximum(m, tl.max(s, axis=0))
                    l = l * tl.exp2(m - m_new) + tl.sum(tl.exp2(s - m_new[None, :]), axis=0)
                    m = m_new
            acc = tl.zeros([HEADS, BLOCK_F], tl.float32)
            for p0 in range(start, end, BLOCK_E):
                e = p0 + ee
                ok = e < end
                src = tl.load(COL + e, mask=ok, other=0).to(tl.int64)
                xt = tl.load(X + src[:, None, None] * stride_xn + x_hf[None, :, :],
                             mask=ok[:, None, None] & hf_ok[None, :, :], other=0.0).to(tl.float32)
                if V2:
                    z = xt + xr[None, :, :]
                    z = tl.where(z > 0, z, z * slope)
                    s = tl.sum(z * att[None, :, :], axis=2)
                else:
                    a = tl.load(A_SRC + src[:, None] * stride_an + h[None, :], mask=ok[:, None] & h_ok[None, :],
                                other=0.0).to(tl.float32)
                    z = a + ad[None, :]
                    s = tl.where(z > 0, z, z * slope) * LOG2E
                s = tl.where(ok[:, None], s, float("-inf"))
                if TWO_PASS:
                    p = tl.exp2(s - m[None, :])
                else:
                    m_new = tl.maximum(m, tl.max(s, axis=0))
                    corr = tl.exp2(m - m_new)
                    p = tl.exp2(s - m_new[None, :])
                    l = l * corr + tl.sum(p, axis=0)
                    acc = acc * corr[:, None]
                    m = m_new
                acc += tl.sum(p[:, :, None] * xt, axis=0)
            o = acc / tl.where(l > 0, l, 1.0)[:, None]    # a node without edges: acc 0, out 0
            tl.store(OUT + v64 * stride_on + (h * stride_oh)[:, None] + f[None, :], o.to(OUT.dtype.element_ty),
                     mask=hf_ok)


# ---------------------------------------------------------------- launcher
ROLE = "held-out-26"
DTYPES = ("fp32", "bf16", "fp16")
VARIANTS = ("gat", "gatv2")
INDEX_DTYPES = ("int32", "int64")
TUNABLES = ("BLOCK_E", "HEADS", "NODES", "TWO_PASS", "num_warps", "num_stages")
BASELINE = {"BLOCK_E": 32, "HEADS": 2, "NODES": 1, "TWO_PASS": 0, "num_warps": 4, "num_stages": 1}
# the study's sweep: 3 x 3 x 2 x 2 x 2 = 72 configs (edge tiles of 8-32 edges x 1-4 heads: 8-128
# source rows' head slices a step; one or four nodes a program; online or two-pass softmax)
SWEEP_AXES = {"BLOCK_E": [8, 16, 32], "HEADS": [1, 2, 4], "NODES": [1, 4], "TWO_PASS": [0, 1],
              "num_warps": [4, 8], "num_stages": [1]}

# Three real graphs at their real node and edge counts (the graphs themselves synthetic: make_inputs'
# power-law degrees and sources), one GAT / GATv2 layer's attention + aggregation each. They differ in
# the variant (GAT's gathered a_src scores / GATv2's scores from the gathered features), the dtype
# (fp32 / bf16 / fp16), the head width F (32 / 64 / 8: 128-byte, 128-byte and 16-byte head slices), the
# mean degree (6.9 / 25 / 492: one masked step a node vs. long edge loops), nodes without edges (only
# the first), the index dtype, and whether x fits the H200's 50 MB L2 (only Reddit's).
POINTS = [
    # ogbn-arxiv (169,343 papers, 1,166,243 citation edges, as OGB ships it: directed, cited <- citing),
    # a GAT layer of 8 heads x 32 features (hidden 256, the OGB arxiv baselines' width) in fp32, DGL's
    # GATConv(allow_zero_in_degree=True) with int64 ids; a share of the papers never cited (0.3, an
    # assumption: no in-edges, out 0), the most cited ~13k times (the real graph's order). x 173 MB,
    # 1.2 GB of source rows gathered; ~0.3-0.6 ms on an H200
    {"N": 169343, "E": 1166243, "H": 8, "F": 32, "variant": "gat", "dtype": "fp32", "index": "int64",
     "empty": 0.3, "max_deg": 13000},
    # ogbn-products (2,449,029 products, 61,859,140 co-purchase edges: OGB's count, one direction of
    # each; PyG's symmetric edge_index holds both), a GATv2 layer of 4 heads x 64 features in bf16 with
    # int32 ids (DGL's g.int()), the largest in-degree ~17k: x and xr 1.25 GB each, 31.7 GB of source
    # rows gathered (x far past the L2); several ms on an H200
    {"N": 2449029, "E": 61859140, "H": 4, "F": 64, "variant": "gatv2", "dtype": "bf16", "index": "int32",
     "max_deg": 17000},
    # Reddit (232,965 posts, 114,615,892 edges: mean degree 492, the largest ~21k; PyG's / DGL's Reddit
    # dataset), the original GAT layer shape of 8 heads x 8 features in fp16 (mixed-precision
    # training), int32 ids: x 30 MB (L2-resident), 14.7 GB of 16-byte head slices gathered, 458 MB of
    # source ids streamed; a few ms on an H200
    {"N": 232965, "E": 114615892, "H": 8, "F": 8, "variant": "gat", "dtype": "fp16", "index": "int32",
     "max_deg": 21000},
]


def _torch_dtype(name: str):
    import torch
    try:
        return {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}") from None


def _elem_bytes(name: str) -> int:
    try:
        return {"fp32": 4, "bf16": 2, "fp16": 2}[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}") from None


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _check_point(point) -> tuple[int, int, int, int, str, str, str]:
    """(N, E, H, F, variant, dtype, index), every field checked (empty and max_deg too)."""
    N, E, H, F = point["N"], point["E"], point["H"], point["F"]
    for k, v, least in (("N", N, 1), ("E", E, 0), ("H", H, 1), ("F", F, 1)):
        if not _is_int(v) or v < least:
            raise ValueError(f"{k}={v!r} must be an int >= {least}")
    if F > 256:
        raise ValueError(f"F={F} exceeds 256 features a head")
    variant = point.get("variant", "gat")
    if variant not in VARIANTS:
        raise ValueError(f"variant {variant!r} is not one of {', '.join(VARIANTS)}")
    dt = point.get("dtype", "bf16")
    _elem_bytes(dt)
    index = point.get("index", "int32")
    if index not in INDEX_DTYPES:
        raise ValueError(f"index {index!r} is not one of {', '.join(INDEX_DTYPES)} (rowptr's and col's dtype)")
    if index == "int32" and E >= 2**31:
        raise ValueError(f"E={E} needs int64 ids")
    empty = point.get("empty", 0.0)
    if not isinstance(empty, (int, float)) or isinstance(empty, bool) or not 0.0 <= empty < 1.0:
        raise ValueError(f"empty={empty!r} must be in [0, 1)")
    md = point.get("max_deg", max(E, 1))
    if not _is_int(md) or md < 1:
        raise ValueError(f"max_deg={md!r} must be a positive int")
    return N, E, H, F, variant, dt, index


def _check_cfg(cfg) -> None:
    for k in ("BLOCK_E", "HEADS", "NODES", "num_warps"):
        v = cfg[k]
        if not _is_int(v) or v < 1 or v & (v - 1):
            raise ValueError(f"{k}={v!r} must be a power of two")
    if cfg["BLOCK_E"] < 2:
        raise ValueError(f"BLOCK_E={cfg['BLOCK_E']} must be at least 2")
    if cfg["num_warps"] > 16:
        raise ValueError(f"num_warps={cfg['num_warps']} must be at most 16")
    if cfg["TWO_PASS"] not in (0, 1) or not _is_int(cfg["TWO_PASS"]):
        raise ValueError(f"TWO_PASS={cfg['TWO_PASS']!r} must be 0 (online softmax) or 1 (max-sum walk first)")
    st = cfg.get("num_stages", 1)
    if not _is_int(st) or st < 1:
        raise ValueError(f"num_stages={st!r} must be a positive int")


def _block_f(F: int) -> int:
    return triton.next_power_of_2(F)


def _grid_n(n_dst: int, H: int, cfg) -> int:
    return triton.cdiv(n_dst, cfg["NODES"]) * triton.cdiv(H, cfg["HEADS"])


def _kernel_args(rowptr, col, x, out, cfg, *, a_src=None, a_dst=None, xr=None, att=None,
                 negative_slope: float = NEG_SLOPE) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it). GAT: xr and
    att absent (x stands in for both, never read); GATv2: a_src and a_dst absent (x stands in)."""
    n_dst = rowptr.shape[0] - 1
    _, H, F = x.shape
    v2 = xr is not None
    return dict(ROWPTR=rowptr, COL=col, X=x, XR=xr if v2 else x, A_SRC=x if v2 else a_src,
                A_DST=x if v2 else a_dst, ATT=att if v2 else x, OUT=out, N=n_dst, H=H, F=F,
                n_hg=triton.cdiv(H, cfg["HEADS"]), stride_xn=x.stride(0), stride_xh=x.stride(1),
                stride_rn=xr.stride(0) if v2 else 0, stride_rh=xr.stride(1) if v2 else 0,
                stride_an=0 if v2 else a_src.stride(0), stride_dn=0 if v2 else a_dst.stride(0),
                stride_on=out.stride(0), stride_oh=out.stride(1), slope=float(negative_slope), V2=int(v2),
                TWO_PASS=int(cfg["TWO_PASS"]), EVEN_H=int(H % cfg["HEADS"] == 0), EVEN_F=int(F == _block_f(F)),
                NODES=cfg["NODES"], HEADS=cfg["HEADS"], BLOCK_E=cfg["BLOCK_E"], BLOCK_F=_block_f(F))


def gat_aggregate(rowptr, col, x, *, a_src=None, a_dst=None, xr=None, att=None, negative_slope: float = NEG_SLOPE,
                  BLOCK_E: int = 32, HEADS: int = 2, NODES: int = 1, TWO_PASS: int = 0, num_warps: int = 4,
                  num_stages: int = 1):
    """The GAT (a_src, a_dst given) or GATv2 (xr, att given) attention softmax and aggregation over the
    destination-sorted CSR graph (rowptr [N_dst + 1], col [E], both int32 or both int64; trusted):
    out [N_dst, H, F] in x's dtype, contiguous. x [N_src, H, F] fp32 / bf16 / fp16 with unit F stride;
    a_src [N_src, H] and a_dst [N_dst, H] (unit head stride), att [H, F] (contiguous): fp32 or x's
    dtype; xr [N_dst, H, F] in x's dtype, unit F stride."""
    import torch
    cfg = {"BLOCK_E": BLOCK_E, "HEADS": HEADS, "NODES": NODES, "TWO_PASS": TWO_PASS, "num_warps": num_warps,
           "num_stages": num_stages}
    _check_cfg(cfg)
    if x.dim() != 3 or x.dtype not in (torch.float32, torch.bfloat16, torch.float16):
        raise ValueError(f"x must be a 3-D fp32 / bf16 / fp16 [N_src, H, F] tensor; got {x.dtype} {tuple(x.shape)}")
    n_src, H, F = x.shape
    if H < 1 or F < 1 or F > 256:
        raise ValueError(f"x [N_src, H, F] needs H >= 1 and 1 <= F <= 256; got {tuple(x.shape)}")
    if F > 1 and x.stride(2) != 1:
        raise ValueError(f"x must have unit F stride; got strides {tuple(x.stride())}")
    if rowptr.dim() != 1 or rowptr.dtype not in (torch.int32, torch.int64) or rowptr.numel() < 1:
        raise ValueError(f"rowptr must be 1-D int32 / int64 [N_dst + 1]; got {rowptr.dtype} {tuple(rowptr.shape)}")
    if col.dim() != 1 or col.dtype != rowptr.dtype:
        raise ValueError(f"col must be 1-D {rowptr.dtype} [E] (rowptr's dtype); got {col.dtype} {tuple(col.shape)}")
    n_dst = rowptr.numel() - 1
    gat, v2 = a_src is not None or a_dst is not None, xr is not None or att is not None
    if gat == v2:
        raise ValueError("pass a_src and a_dst (GAT) or xr and att (GATv2), not both, not neither")
    lo = (torch.float32, x.dtype)
    if gat:
        for name, t, rows in (("a_src", a_src, n_src), ("a_dst", a_dst, n_dst)):
            if t is None or tuple(t.shape) != (rows, H) or t.dtype not in lo:
                raise ValueError(f"{name} must be a [{rows}, {H}] fp32 or {x.dtype} tensor; got "
                                 f"{None if t is None else (t.dtype, tuple(t.shape))}")
            if H > 1 and t.stride(1) != 1:
                raise ValueError(f"{name} must have unit head stride; got strides {tuple(t.stride())}")
    else:
        if xr is None or tuple(xr.shape) != (n_dst, H, F) or xr.dtype != x.dtype:
            raise ValueError(f"xr must be a [{n_dst}, {H}, {F}] {x.dtype} tensor; got "
                             f"{None if xr is None else (xr.dtype, tuple(xr.shape))}")
        if F > 1 and xr.stride(2) != 1:
            raise ValueError(f"xr must have unit F stride; got strides {tuple(xr.stride())}")
        if att is None or tuple(att.shape) != (H, F) or att.dtype not in lo:
            raise ValueError(f"att must be an [{H}, {F}] fp32 or {x.dtype} tensor; got "
                             f"{None if att is None else (att.dtype, tuple(att.shape))}")
        att = att.contiguous()
    out = torch.empty((n_dst, H, F), dtype=x.dtype, device=x.device)
    if n_dst == 0:
        return out
    n = _grid_n(n_dst, H, cfg)
    if n >= 2**31:
        raise ValueError(f"{n_dst} nodes x {H} heads need {n} programs, past a 1-D grid")
    args = _kernel_args(rowptr.contiguous(), col.contiguous(), x, out, cfg, a_src=a_src, a_dst=a_dst, xr=xr, att=att,
                        negative_slope=negative_slope)
    _kernel[(n,)](**args, num_warps=num_warps, num_stages=num_stages)
    return out


# ---------------------------------------------------------------- the synthetic graph
def _tail_index(u, ratio: float) -> float:
    """The Pareto tail index a (draws u^(-1 / a) of the uniforms u) whose largest draw is `ratio` times
    their mean -- the mean over u's first 2^16 (a random sample), the largest exact: bisection over a in
    [1.05, 8] (the bound for a ratio out of range; the ratio falls as a grows)."""
    sub = u[:1 << 16].double()
    umin = float(u.min())

    def r(a):
        return umin ** (-1.0 / a) / float(sub.pow(-1.0 / a).mean())
    lo, hi = 1.05, 8.0
    if ratio >= r(lo):
        return lo
    if ratio <= r(hi):
        return hi
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if r(mid) > ratio else (lo, mid)
    return 0.5 * (lo + hi)


@functools.lru_cache(maxsize=16)
def _degrees_cached(N: int, E: int, empty: float, max_deg: int, seed: int):
    import torch
    gen = torch.Generator().manual_seed(seed)
    out = torch.zeros(N, dtype=torch.int64)
    if E == 0:
        return out
    live = (torch.rand(N, generator=gen) >= empty).nonzero().flatten()
    if live.numel() == 0:
        live = torch.zeros(1, dtype=torch.int64)
    if live.numel() > E:                                   # fewer edges than nodes: E nodes of one edge
        live = live[torch.randperm(live.numel(), generator=gen)[:E]]
    n = live.numel()
    cap = max(max_deg, -(-E // n))
    extra = E - n                                          # the edges past each live node's first
    # Pareto shares of the extra edges, the tail index such that the largest share is about cap - 1;
    # capped at cap - 1 (water-filled: the cut above the cap goes to the rest in proportion), floored;
    # the floors' loss handed out one edge each to random nodes below the cap
    u = torch.rand(n, generator=gen, dtype=torch.float64).clamp(min=1e-12)
    raw = u.pow(-1.0 / _tail_index(u, (cap - 1) / max(extra / n, 1e-9)))
    w = raw * (extra / float(raw.sum()))
    for _ in range(60):
        w = w.clamp(max=cap - 1)
        short = extra - float(w.sum())
        if short < 0.5:
            break
        free = w < cap - 1
        w[free] += short * raw[free] / float(raw[free].sum())
    sizes = 1 + torch.floor(w.clamp(max=cap - 1)).to(torch.int64)
    short = E - int(sizes.sum())
    while short > 0:
        order = torch.randperm(n, generator=gen)
        room = order[sizes[order] < cap][:short]
        sizes[room] += 1
        short -= room.numel()
    out[live] = sizes
    return out


def in_degrees(N: int, E: int, empty: float = 0.0, max_deg: int | None = None, seed: int = 0):
    """[N] int64 (CPU) in-degrees summing to exactly E: a share `empty` of the nodes (random ones) none,
    the rest 1 + a Pareto share of the remaining edges, the tail index chosen so the largest is about
    max_deg (_tail_index: the draws' own largest over their mean), none above max_deg (or above E / live
    nodes where that is more). Deterministic in the arguments."""
    return _degrees_cached(int(N), int(E), float(empty), int(max_deg or max(E, 1)), int(seed)).clone()


def csr_graph(N: int, E: int, empty: float = 0.0, max_deg: int | None = None, seed: int = 0):
    """(rowptr [N + 1] int64, col [E] int32), CPU: in_degrees' nodes, and each edge's source drawn by a
    power law of popularity: rank r = floor(N u^beta) (u uniform) into the nodes ordered by in-degree
    (largest first, ties in random order), beta = ln N / ln(E / max in-degree) within [1, 4], so the top
    source is drawn about as often as the top node has in-edges -- popular sources are the hubs, as in
    an undirected graph. Node ids are random (no community locality: the gathers' worst case). Sources
    within a node are unsorted (duplicates possible: a drawn multigraph). Vectorized (int32 ids, one
    index_select): ~4 s for Reddit's 115 M edges on one core. Deterministic in the arguments."""
    import torch
    if N >= 2**31:
        raise ValueError(f"N={N} exceeds int32 node ids")
    deg = in_degrees(N, E, empty, max_deg, seed)
    md = int(deg.max()) if E else 1
    rowptr = torch.zeros(N + 1, dtype=torch.int64)
    torch.cumsum(deg, 0, out=rowptr[1:])
    gen = torch.Generator().manual_seed(seed + 7919)
    beta = 1.0 if E <= md or N < 2 else min(4.0, max(1.0, math.log(N) / math.log(E / md)))
    key = deg.double() + torch.rand(N, generator=gen, dtype=torch.float64)
    order = torch.argsort(key, descending=True).to(torch.int32)
    u = torch.rand(E, generator=gen)
    rank = u.pow_(beta).mul_(N).to(torch.int32).clamp_(max=N - 1)
    return rowptr, torch.index_select(order, 0, rank)


def _point_graph(point, seed: int = 0):
    N, E, _, _, _, _, _ = _check_point(point)
    return csr_graph(N, E, float(point.get("empty", 0.0)), point.get("max_deg"), seed)


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """csr_graph's rowptr and col in the point's index dtype; x = x_in W (x_in [N, FEATURE_RANK] and
    W [FEATURE_RANK, H F] N(0, 1) / N(0, 1 / FEATURE_RANK) drawn on the CPU from the seed, multiplied on
    `device`: a linear layer's N(0, 1) output) in the point's dtype as [N, H, F]. GAT: att_src, att_dst
    [H, F] ~ N(0, 1 / F), a_src = (x * att_src).sum(-1), a_dst likewise, fp32 (logits ~ N(0, 2));
    GATv2: xr = x_in W_r likewise, att [H, F] ~ N(0, 1 / F) fp32. negative_slope NEG_SLOPE."""
    import torch
    N, E, H, F, variant, dt, index = _check_point(point)
    rowptr, col = _point_graph(point, seed)
    idx = {"int32": torch.int32, "int64": torch.int64}[index]
    gen = torch.Generator().manual_seed(seed + 1)
    R = FEATURE_RANK
    x_in = torch.randn((N, R), generator=gen).to(device)
    w = (torch.randn((R, H * F), generator=gen) * R ** -0.5).to(device)
    x = (x_in @ w).to(_torch_dtype(dt)).view(N, H, F)
    inputs = {"rowptr": rowptr.to(device=device, dtype=idx), "col": col.to(device=device, dtype=idx), "x": x,
              "negative_slope": NEG_SLOPE}
    if variant == "gat":
        att_src = (torch.randn((H, F), generator=gen) * F ** -0.5).to(device)
        att_dst = (torch.randn((H, F), generator=gen) * F ** -0.5).to(device)
        inputs["a_src"] = (x.float() * att_src).sum(-1)
        inputs["a_dst"] = (x.float() * att_dst).sum(-1)
    else:
        w_r = (torch.randn((R, H * F), generator=gen) * R ** -0.5).to(device)
        inputs["xr"] = (x_in @ w_r).to(_torch_dtype(dt)).view(N, H, F)
        inputs["att"] = (torch.randn((H, F), generator=gen) * F ** -0.5).to(device)
    return inputs


def launch(inputs, cfg):
    """out [N_dst, H, F] in x's dtype."""
    return gat_aggregate(inputs["rowptr"], inputs["col"], inputs["x"], a_src=inputs.get("a_src"),
                         a_dst=inputs.get("a_dst"), xr=inputs.get("xr"), att=inputs.get("att"),
                         negative_slope=inputs.get("negative_slope", NEG_SLOPE), BLOCK_E=cfg["BLOCK_E"],
                         HEADS=cfg["HEADS"], NODES=cfg["NODES"], TWO_PASS=cfg["TWO_PASS"],
                         num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])


def _node_chunks(rowptr_cpu, budget: int):
    """(n0, n1, e0, e1): consecutive destination-node ranges of at most `budget` edges each (a node of
    more edges alone)."""
    import torch
    n_dst = rowptr_cpu.numel() - 1
    n0 = 0
    while n0 < n_dst:
        n1 = int(torch.searchsorted(rowptr_cpu, rowptr_cpu[n0] + budget, right=True)) - 1
        n1 = min(n_dst, max(n1, n0 + 1))
        yield n0, n1, int(rowptr_cpu[n0]), int(rowptr_cpu[n1])
        n0 = n1


def _attend(inputs, acc_dtype, budget_elems: int):
    """out [N_dst, H, F] in acc_dtype: PyG's message passing written out with torch ops over node
    chunks of ~budget_elems gathered elements -- x_j = x[col], the scores (GAT: leaky_relu(a_src[col] +
    a_dst[dst]); GATv2: (leaky_relu(x_j + xr[dst]) * att).sum(-1)), the segment softmax by a scatter
    max and a scatter sum (torch_geometric.utils.softmax), the messages alpha x_j summed by index_add."""
    import torch
    rowptr, col, x = inputs["rowptr"], inputs["col"], inputs["x"]
    slope = inputs.get("negative_slope", NEG_SLOPE)
    dev = x.device
    rp = rowptr.long().cpu()
    n_dst = rp.numel() - 1
    _, H, F = x.shape
    v2 = inputs.get("xr") is not None
    out = torch.zeros((n_dst, H, F), dtype=acc_dtype, device=dev)
    deg = (rp[1:] - rp[:-1]).to(dev)
    if v2:
        att = inputs["att"].to(acc_dtype)
    for n0, n1, e0, e1 in _node_chunks(rp, max(1, budget_elems // (H * F))):
        if e1 == e0:
            continue
        dst = torch.repeat_interleave(torch.arange(n1 - n0, device=dev), deg[n0:n1])
        src = col[e0:e1].long()
        xj = x[src].to(acc_dtype)
        if v2:
            z = xj + inputs["xr"][n0:n1][dst].to(acc_dtype)
            s = (torch.nn.functional.leaky_relu(z, slope) * att).sum(-1)
        else:
            z = inputs["a_src"][src].to(acc_dtype) + inputs["a_dst"][n0:n1][dst].to(acc_dtype)
            s = torch.nn.functional.leaky_relu(z, slope)
        idx = dst[:, None].expand(-1, H)
        mx = torch.full((n1 - n0, H), float("-inf"), dtype=acc_dtype, device=dev)
        mx.scatter_reduce_(0, idx, s, "amax", include_self=True)
        p = torch.exp(s - mx[dst])
        den = torch.zeros((n1 - n0, H), dtype=acc_dtype, device=dev).index_add_(0, dst, p)
        alpha = p / den[dst]
        out[n0:n1].index_add_(0, dst, alpha[:, :, None] * xj)
    return out


def reference(inputs):
    """fp32 [N_dst, H, F]: the scores, softmax and weighted sums in fp64 from the same rounded x (and
    a_src, a_dst / xr, att) the kernel reads, in node chunks of ~2^24 gathered elements."""
    import torch
    return _attend(inputs, torch.float64, 1 << 24).float()


def torch_baseline(inputs):
    """What eager torch runs for it: PyG's GATConv / GATv2Conv message passing as torch ops (the
    per-edge gathers, a scatter max and a scatter sum for the softmax, the weighted messages and an
    index_add), in fp32 (the half-precision messages upcast, as the scatter sums need), cast to x's
    dtype; in node chunks of ~2^26 gathered elements so its per-edge tensors fit the GPU (Reddit's
    whole [E, H, F] message tensor would take 29 GB in fp32)."""
    import torch
    return _attend(inputs, torch.float32, 1 << 26).to(inputs["x"].dtype)


def bytes_moved(point) -> int:
    """rowptr and col read once ((N + 1 + E) ids), x read once (every node a source at the POINTS),
    the node terms (GAT: a_src and a_dst, fp32; GATv2: xr in x's dtype, att), out written once. The
    gathers past the first read of a row are L2 hits when x fits the 50 MB L2 (Reddit's), else
    partly DRAM re-reads, not counted."""
    N, E, H, F, variant, dt, index = _check_point(point)
    e = _elem_bytes(dt)
    ei = 4 if index == "int32" else 8
    terms = N * H * F * e + H * F * 4 if variant == "gatv2" else 2 * N * H * 4
    return (N + 1 + E) * ei + N * H * F * e + terms + N * H * F * e


def flops(point) -> int:
    """Per edge and head: the softmax's max, exp, sum and rescale (4) and, per feature, the weighted
    sum's multiply-add (2); GATv2's scores per feature too: the add, leaky_relu's multiply and the
    multiply-add with att (4). E H (2 F + 4) for GAT, E H (6 F + 4) for GATv2."""
    _, E, H, F, variant, _, _ = _check_point(point)
    return E * H * ((6 if variant == "gatv2" else 2) * F + 4)


def grid(cfg, point) -> tuple[int]:
    """(cdiv(N, NODES) x cdiv(H, HEADS),): the 1-D launch grid, the head group fastest."""
    N, _, H, _, _, _, _ = _check_point(point)
    _check_cfg(cfg)
    return (_grid_n(N, H, cfg),)


def _group_steps(cfg, point):
    """[cdiv(N, NODES)] int64: each node group's edge-loop steps (make_inputs' seed-0 degrees): the sum
    over its nodes of cdiv(deg, BLOCK_E), twice with TWO_PASS."""
    import torch
    N, E, _, _, _, _, _ = _check_point(point)
    _check_cfg(cfg)
    deg = _degrees_cached(N, E, float(point.get("empty", 0.0)), int(point.get("max_deg", max(E, 1))), 0)
    be, nodes = cfg["BLOCK_E"], cfg["NODES"]
    steps = (deg + be - 1) // be * (1 + cfg["TWO_PASS"])
    pad = triton.cdiv(N, nodes) * nodes - N
    return torch.nn.functional.pad(steps, (0, pad)).view(-1, nodes).sum(1)


def loop_iterations(cfg, point) -> int:
    """Edge-loop steps a program, on average (rounded up) over the node groups (make_inputs' seed-0
    degrees; both walks with TWO_PASS). A hub node takes up to max_deg / BLOCK_E steps a walk."""
    steps = _group_steps(cfg, point)
    return -(-int(steps.sum()) // steps.numel())


def cta_iterations(cfg, point) -> list[int]:
    """Edge-loop steps of each program in launch order (program id = node group x head groups, the
    head group fastest): _group_steps of its node group (0 for a group of nodes without edges)."""
    _, _, H, _, _, _, _ = _check_point(point)
    steps = _group_steps(cfg, point)
    return steps.repeat_interleave(triton.cdiv(H, cfg["HEADS"])).tolist()


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory): rowptr
    [N + 1] and col [E] in the index dtype, x (and xr) [N, H, F] contiguous in the point's dtype, a_src /
    a_dst [N, H] or att [H, F] fp32, out [N, H, F] contiguous."""
    import torch
    N, E, H, F, variant, dt, index = _check_point(point)
    _check_cfg(cfg)
    idx = {"int32": torch.int32, "int64": torch.int64}[index]
    t = _torch_dtype(dt)
    rowptr = torch.empty((N + 1,), dtype=idx, device="meta")
    col = torch.empty((E,), dtype=idx, device="meta")
    x = torch.empty((N, H, F), dtype=t, device="meta")
    out = torch.empty((N, H, F), dtype=t, device="meta")
    if variant == "gatv2":
        return _kernel_args(rowptr, col, x, out, cfg, xr=torch.empty((N, H, F), dtype=t, device="meta"),
                            att=torch.empty((H, F), dtype=torch.float32, device="meta"))
    return _kernel_args(rowptr, col, x, out, cfg, a_src=torch.empty((N, H), dtype=torch.float32, device="meta"),
                        a_dst=torch.empty((N, H), dtype=torch.float32, device="meta"))
