"""examples/gat_edge_softmax.py (graph attention, GAT / GATv2 as PyG's and DGL's GATConv / GATv2Conv: the
per-edge leaky_relu scores, their softmax over each destination node's in-edges and the attention-weighted
sum of the gathered source features, fused in one pass over a destination-sorted CSR graph; x [N, H, F]
fp32 / bf16 / fp16, fp32 softmax and accumulation; a program per NODES nodes x HEADS heads, BLOCK_E edges a
step, the online softmax or a max-sum walk first) against its torch reference on the CPU through Triton's
interpreter, its launcher hooks and synthetic graphs against the shapes, its study sweep against the
points, and a compile for sm_90 and sm_120 from its own ``example_args``.

As in test_examples_round25_a.py the interpreter cases run in a subprocess (this file run as a script:
``python tests/test_examples_round26_b.py gat_edge_softmax``) that prints one JSON line. The subprocess
installs the harness's interpreter fixes (bf16 rounding; triton 3.6's runtime loop bounds under numpy
>= 2.3: the edge loops run from rowptr[v] to rowptr[v + 1]).

Shapes are small, odd and ragged: power-law degrees with nodes of no edge (out 0), of one masked step
and hubs of many steps (up to 200 edges at BLOCK_E 8-32); a last node group past N (NODES 4 over N 37);
H not a multiple of HEADS (EVEN_H 0: a last head group of one real head, HEADS 4 over H 3) and F not a
power of two (EVEN_F 0: F 12, 5, 24); F 5-64, H 2-8; GAT and GATv2, fp32 / bf16 / fp16, int32 and int64 ids;
both softmax schedules; logits 50x the usual (the online max moving over a hub's steps: exp would
overflow without it); a graph without edges; x, xr and a_src read in place from wider buffers
(row and head strides past H F and F) on a bipartite graph (fewer destinations than sources); BLOCK_E
8-32, HEADS 1-4, NODES 1-4, 2-8 warps, num_stages 1 / 2.

Per case: launch's output within the dtype's tolerance of the fp32 reference (the harness's per-element
check) and each element within a few ulp of out's dtype of its own value; out's shape, dtype,
contiguity; nodes without edges exactly 0; the inputs unchanged; torch_baseline within tolerance.
"""

from __future__ import annotations

import itertools
import math
import time
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
KERNEL = "gat_edge_softmax"
ROLE = "held-out-26"
H200_SMS = 132
SM90_SMEM_PER_BLOCK = 227 * 1024
SM120_SMEM_PER_BLOCK = 99 * 1024

# the study's sweep (scripts/rank_study.py SWEEPS["gat_edge_softmax"] once the lead adds it)
SWEEP_AXES = {"BLOCK_E": [8, 16, 32], "HEADS": [1, 2, 4], "NODES": [1, 4], "TWO_PASS": [0, 1],
              "num_warps": [4, 8], "num_stages": [1]}


def _cfg(be, heads, nodes=1, two=0, w=4, st=1):
    return {"BLOCK_E": be, "HEADS": heads, "NODES": nodes, "TWO_PASS": two, "num_warps": w, "num_stages": st}


def _pt(N, E, H_, F, variant="gat", dtype="bf16", index="int32", empty=0.0, max_deg=None):
    p = {"N": N, "E": E, "H": H_, "F": F, "variant": variant, "dtype": dtype, "index": index, "empty": empty}
    if max_deg is not None:
        p["max_deg"] = max_deg
    return p


# case -> (point, cfg); comments: EVEN_H / EVEN_F, grid, the steps of the largest node
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        # GAT fp32, int64 ids, 30 % of the nodes without edges, a hub of 60 (8 steps of 8); H 3 at HEADS
        # 2 (EVEN_H 0: the second head group one real head), F 12 (EVEN_F 0: BLOCK_F 16); NODES 4 over
        # N 37 (the last group one node, three past N)
        "gat_fp32_ragged": (_pt(37, 260, 3, 12, "gat", "fp32", "int64", 0.3, 60), _cfg(8, 2, 4, 0, 4)),
        # GATv2 bf16, int32, no mask but the edges' (EVEN_H 1, EVEN_F 1); the max-sum walk first;
        # BLOCK_E 16, a hub of 50 (4 steps)
        "gatv2_bf16_two_pass": (_pt(29, 240, 4, 8, "gatv2", "bf16", "int32", 0.0, 50), _cfg(16, 2, 1, 1, 4)),
        # GAT fp16, 8 heads x 8 (the Reddit point's shape), a hub of 200 edges (7 steps of 32), HEADS 4
        # on 8 warps, NODES 2, online
        "gat_fp16_hub": (_pt(20, 600, 8, 8, "gat", "fp16", "int32", 0.0, 200), _cfg(32, 4, 2, 0, 8)),
        # GATv2 fp32, int64; H 3 under HEADS 4 (one head group, its fourth head masked), F 5 (BLOCK_F
        # 8); two-pass, NODES 2, 2 warps
        "gatv2_fp32_masked_hf": (_pt(23, 150, 3, 5, "gatv2", "fp32", "int64", 0.2, 40), _cfg(8, 4, 2, 1, 2)),
        # GAT bf16, F 64 (the products point's head width), HEADS 1: two head groups; two-pass, NODES 4,
        # 8 warps, num_stages 2
        "gat_bf16_wide_f": (_pt(31, 200, 2, 64, "gat", "bf16", "int64", 0.1, 45), _cfg(16, 1, 4, 1, 8, 2)),
        # GATv2 fp16, 40 % of the nodes without edges, HEADS 1 over 4 heads (EVEN_H 1), F 24 (EVEN_F 0:
        # BLOCK_F 32), NODES 4, BLOCK_E 32: every node one masked step
        "gatv2_fp16_sparse": (_pt(17, 60, 4, 24, "gatv2", "fp16", "int32", 0.4, 20), _cfg(32, 1, 4, 0, 4)),
        # logits 50x larger (a_src and a_dst scaled: scores past 88, where exp overflows fp32): the online
        # max rises step after step along a hub of 90 edges (12 steps of 8); fp32
        "gat_large_logits_online": (_pt(12, 200, 2, 16, "gat", "fp32", "int32", 0.0, 90), _cfg(8, 2, 1, 0, 4)),
        # the same scaled logits through GATv2's att (x 50), the max-sum walk first; bf16
        "gatv2_large_logits_two_pass": (_pt(12, 200, 2, 16, "gatv2", "bf16", "int64", 0.0, 90),
                                        _cfg(8, 2, 1, 1, 4)),
        # a graph without edges: every node's loop empty, out all 0
        "no_edges_fp16": (_pt(9, 0, 2, 8, "gat", "fp16", "int32"), _cfg(16, 2, 4, 0, 4)),
        # bipartite GAT: the first 19 of 33 nodes as destinations (rowptr cut), x, a_src and a_dst read in
        # place from wider buffers (x's head stride 10 > F 8, row stride 34 > H x 10; a_src's row stride
        # 5 > H 3); bf16, HEADS 2 (EVEN_H 0)
        "strided_bipartite_gat": (_pt(33, 300, 3, 8, "gat", "bf16", "int32", 0.1, 50), _cfg(16, 2, 1, 0, 4)),
        # GATv2 with x and xr from wider buffers (head stride 20 > F 16, row stride 90 > H x 20); fp16
        "strided_gatv2": (_pt(21, 160, 4, 16, "gatv2", "fp16", "int64", 0.1, 40), _cfg(8, 2, 1, 1, 8)),
    },
}
LARGE = ("gat_large_logits_online", "gatv2_large_logits_two_pass")
NO_EDGES, BIPARTITE, STRIDED_V2 = "no_edges_fp16", "strided_bipartite_gat", "strided_gatv2"
N_DST_BIPARTITE = 19
X_PAD_F, X_PAD_ROW, A_PAD = 2, 4, 2          # extra features a head, extra elements a row, extra heads
LOGIT_SCALE = 50.0

# configs compiled at the module's first POINT (sm_90: BASELINE first), then the products GATv2 point's
# heaviest tile (32 x 4 heads x 64 features on 4 warps, both schedules: the most registers)
COMPILE_CFGS = [_cfg(32, 2, 1, 0, 4), _cfg(32, 4, 4, 0, 4), _cfg(8, 1, 1, 1, 8), _cfg(16, 4, 4, 1, 8)]
HEAVY_CFGS = [_cfg(32, 4, 1, 0, 4), _cfg(32, 4, 4, 1, 4)]
SM120_CFGS = [_cfg(32, 2, 1, 0, 4), _cfg(32, 4, 4, 1, 8)]


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """LARGE: the logits scaled by LOGIT_SCALE (a_src and a_dst, or att); BIPARTITE: the destinations cut
    to the first N_DST_BIPARTITE nodes, x / a_src / a_dst copied into wider buffers and read in place;
    STRIDED_V2: x and xr likewise."""
    import torch

    if name in LARGE:
        for k in ("a_src", "a_dst", "att"):
            if k in inputs:
                inputs[k] = inputs[k] * LOGIT_SCALE

    def wide3(t):
        n, h, f = t.shape
        buf = torch.full((n, h * (f + X_PAD_F) + X_PAD_ROW), 7.0, dtype=t.dtype)
        view = buf[:, :h * (f + X_PAD_F)].view(n, h, f + X_PAD_F)[:, :, :f]
        view.copy_(t)
        return view

    def wide2(t):
        n, h = t.shape
        buf = torch.full((n, h + A_PAD), -9.0, dtype=t.dtype)
        buf[:, :h] = t
        return buf[:, :h]

    if name == BIPARTITE:
        m = N_DST_BIPARTITE
        e = int(inputs["rowptr"][m])
        inputs["rowptr"] = inputs["rowptr"][:m + 1].clone()
        inputs["col"] = inputs["col"][:e].clone()
        inputs["x"] = wide3(inputs["x"])
        inputs["a_src"] = wide2(inputs["a_src"])
        inputs["a_dst"] = wide2(inputs["a_dst"][:m].contiguous())
    if name == STRIDED_V2:
        inputs["x"] = wide3(inputs["x"])
        inputs["xr"] = wide3(inputs["xr"])


# ----------------------------------------------------------------- the pytest side
def _results() -> dict:
    return H.interpreter_results(HERE, KERNEL)


def _degrees(p, seed):
    mod = load_example(KERNEL)
    return mod.in_degrees(p["N"], p["E"], p.get("empty", 0.0), p.get("max_deg"), seed)


def _flags(name, p, c):
    """(EVEN_H, EVEN_F, a node group past N, max steps a node, has nodes without edges) of a case
    (make_inputs' seed: len(name))."""
    deg = _degrees(p, len(name))
    if name == BIPARTITE:
        deg = deg[:N_DST_BIPARTITE]
    n = deg.numel()
    return (int(p["H"] % c["HEADS"] == 0), int(p["F"] & (p["F"] - 1) == 0), int(n % c["NODES"] != 0),
            -(-int(deg.max()) // c["BLOCK_E"]), int((deg == 0).any()))


@pytest.mark.parametrize("name", list(CASES[KERNEL]))
def test_example_matches_reference(name):
    res = _results()[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    p = CASES[KERNEL][name][0]
    n_dst = N_DST_BIPARTITE if name == BIPARTITE else p["N"]
    assert res["n_bad"] == 0, H.mismatch(res, f"{name} launch")
    assert res["shape"] == [n_dst, p["H"], p["F"]] and res["dtype"] == p["dtype"], res
    assert res["contiguous"] is True, res
    assert res["n_loose"] == 0, res                       # each element within a few ulp of its own value
    assert res["empty_rows_zero"] is True, res
    assert res["inputs_unchanged"] is True, res
    assert res["baseline"]["n_bad"] == 0, H.mismatch(res["baseline"], f"{name} torch_baseline")
    assert res["finite"] is True, res
    if name == NO_EDGES:
        assert res["scale"] == 0.0 and res["max_err"] == 0.0, res
    if name in LARGE:
        assert res["max_logit"] > 88.0, res               # exp(score) alone would overflow fp32
    if name == BIPARTITE:
        assert res["x_strides"] == [p["H"] * (p["F"] + X_PAD_F) + X_PAD_ROW, p["F"] + X_PAD_F, 1], res
        assert res["a_src_strides"] == [p["H"] + A_PAD, 1], res


def test_cases_cover_every_code_path():
    """Every tunable at >= 2 values bracketing the sweep; GAT and GATv2, each with both schedules; the
    three dtypes and both index dtypes; EVEN_H x EVEN_F all four ways; a node group past N; nodes without
    edges, of one step and of many; strided inputs, a bipartite graph and a graph without edges."""
    H.assert_tunables_covered(CASES)
    mod = load_example(KERNEL)
    cases = list(CASES[KERNEL].items())
    assert {p["dtype"] for _, (p, _) in cases} == set(mod.DTYPES)
    assert {p["index"] for _, (p, _) in cases} == set(mod.INDEX_DTYPES)
    assert {(p["variant"], c["TWO_PASS"]) for _, (p, c) in cases} == {("gat", 0), ("gat", 1), ("gatv2", 0),
                                                                     ("gatv2", 1)}
    fl = [_flags(n, p, c) for n, (p, c) in cases]
    assert {(f[0], f[1]) for f in fl} == {(0, 0), (0, 1), (1, 0), (1, 1)}
    assert {f[2] for f in fl} == {0, 1}
    assert max(f[3] for f in fl) >= 7 and 1 in {f[3] for f in fl}
    assert {f[4] for f in fl} == {0, 1}
    for k in ("BLOCK_E", "HEADS", "NODES", "num_warps"):
        tested = {c[k] for _, (_, c) in cases}
        assert min(tested) <= min(SWEEP_AXES[k]) and max(tested) >= max(SWEEP_AXES[k]), (k, tested)
    assert {c["TWO_PASS"] for _, (_, c) in cases} == {0, 1}
    assert {c["num_stages"] for _, (_, c) in cases} == {1, 2}
    assert any(c["HEADS"] > p["H"] for _, (p, c) in cases)


def test_synthetic_graph():
    """in_degrees: exactly E, none past max_deg, the share of nodes without edges, a power law (the median
    below the mean, the largest within 10 % of max_deg), deterministic in the seed; csr_graph: rowptr its
    cumulative sum, int32 sources in range, the most popular one drawn about max_deg times (within 3x) and
    the hubs among the popular sources; a graph with fewer edges than nodes; the ogbn-arxiv point's graph
    well within 10 s, its largest in-degree max_deg, its share of nodes without edges."""
    import torch

    mod = load_example(KERNEL)
    deg = mod.in_degrees(20000, 500000, 0.25, 3000, 0)
    assert deg.dtype == torch.int64 and int(deg.sum()) == 500000 and int(deg.max()) <= 3000
    assert 0.22 < float((deg == 0).float().mean()) < 0.28
    live = deg[deg > 0].float()
    assert float(live.median()) < 0.8 * float(live.mean()) and int(deg.max()) >= 2700
    assert torch.equal(mod.in_degrees(20000, 500000, 0.25, 3000, 0), deg)
    assert not torch.equal(mod.in_degrees(20000, 500000, 0.25, 3000, 1), deg)
    rowptr, col = mod.csr_graph(20000, 500000, 0.25, 3000, 0)
    assert rowptr.dtype == torch.int64 and col.dtype == torch.int32 and col.numel() == 500000
    assert torch.equal(rowptr[1:] - rowptr[:-1], deg) and int(rowptr[0]) == 0
    assert int(col.min()) >= 0 and int(col.max()) < 20000
    pop = torch.bincount(col.long(), minlength=20000)
    assert 1000 <= int(pop.max()) <= 9000
    top = torch.topk(deg, 20).indices
    assert float(pop[top].float().mean()) > 10 * float(pop.float().mean())
    d = mod.in_degrees(50, 20, 0.0, None, 3)
    assert int(d.sum()) == 20 and int(d.max()) == 1 and int((d == 0).sum()) == 30
    assert int(mod.in_degrees(10, 0).sum()) == 0
    p = mod.POINTS[0]
    t = time.time()
    rowptr, col = mod._point_graph(p, 0)
    assert time.time() - t < 10.0
    assert rowptr.numel() == p["N"] + 1 and int(rowptr[-1]) == col.numel() == p["E"]
    deg = rowptr[1:] - rowptr[:-1]
    assert int(deg.max()) <= p["max_deg"] and abs(float((deg == 0).float().mean()) - p["empty"]) < 0.01


def test_launcher_hooks_agree_with_shapes():
    """At every point and sweep config: example_args on meta with the launch's shapes, dtypes and
    strides, EVEN_H / EVEN_F / BLOCK_F / V2, the grid and the edge steps (from the seed-0 degrees);
    bytes_moved / flops; inputs < 4 GB; the points' mean degrees and their differences."""
    import torch

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "cta_iterations", "example_args", "torch_baseline", "gat_aggregate", "in_degrees", "csr_graph"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert not hasattr(mod, "secondary_kernels")
    assert len(mod.POINTS) == 3 and mod.ROLE == ROLE and mod.SWEEP_AXES == SWEEP_AXES
    assert mod.BASELINE["num_stages"] == 1
    dts = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}
    size = {"fp16": 2, "bf16": 2, "fp32": 4}
    idx = {"int32": torch.int32, "int64": torch.int64}
    cfgs = [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]
    for p in mod.POINTS:
        N, E, H_, F = p["N"], p["E"], p["H"], p["F"]
        v2 = p["variant"] == "gatv2"
        dt = dts[p["dtype"]]
        deg = mod.in_degrees(N, E, p.get("empty", 0.0), p["max_deg"], 0)
        assert int(deg.sum()) == E and int(deg.max()) <= p["max_deg"]
        for cfg in cfgs:
            a = mod.example_args(cfg, p)
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for v in a.values())
            assert a["ROWPTR"].shape == (N + 1,) and a["ROWPTR"].dtype == idx[p["index"]]
            assert a["COL"].shape == (E,) and a["COL"].dtype == idx[p["index"]]
            assert a["X"].shape == (N, H_, F) and a["X"].dtype == dt and a["X"].is_contiguous()
            assert a["OUT"].shape == (N, H_, F) and a["OUT"].dtype == dt and a["OUT"].is_contiguous()
            if v2:
                assert a["XR"].shape == (N, H_, F) and a["XR"].dtype == dt and a["ATT"].shape == (H_, F)
                assert a["A_SRC"] is a["X"] and a["A_DST"] is a["X"]
                assert (a["stride_rn"], a["stride_rh"], a["stride_an"], a["stride_dn"]) == (H_ * F, F, 0, 0)
            else:
                assert a["A_SRC"].shape == (N, H_) and a["A_DST"].shape == (N, H_)
                assert a["XR"] is a["X"] and a["ATT"] is a["X"]
                assert (a["stride_an"], a["stride_dn"], a["stride_rn"]) == (H_, H_, 0)
            assert (a["N"], a["H"], a["F"], a["n_hg"]) == (N, H_, F, -(-H_ // cfg["HEADS"]))
            assert (a["stride_xn"], a["stride_xh"], a["stride_on"], a["stride_oh"]) == (H_ * F, F, H_ * F, F)
            assert (a["V2"], a["TWO_PASS"], a["EVEN_H"], a["EVEN_F"], a["BLOCK_F"]) == (
                int(v2), cfg["TWO_PASS"], int(H_ % cfg["HEADS"] == 0), 1, F)
            assert (a["NODES"], a["HEADS"], a["BLOCK_E"]) == (cfg["NODES"], cfg["HEADS"], cfg["BLOCK_E"])
            assert abs(a["slope"] - 0.2) < 1e-12
            n_groups = -(-N // cfg["NODES"])
            assert mod.grid(cfg, p) == (n_groups * (H_ // cfg["HEADS"]),)
            steps = ((deg + cfg["BLOCK_E"] - 1) // cfg["BLOCK_E"]).sum() * (1 + cfg["TWO_PASS"])
            assert mod.loop_iterations(cfg, p) == -(-int(steps) // n_groups)
        e = size[p["dtype"]]
        ei = 4 if p["index"] == "int32" else 8
        terms = N * H_ * F * e + H_ * F * 4 if v2 else 2 * N * H_ * 4
        assert mod.bytes_moved(p) == (N + 1 + E) * ei + 2 * N * H_ * F * e + terms
        assert mod.flops(p) == E * H_ * ((6 if v2 else 2) * F + 4)
        assert (N + 1 + E) * ei + (3 if v2 else 2) * N * H_ * F * e < 4 * 2**30
        assert E * H_ * F * e >= 1e9                      # >= 1 GB of gathered head slices a point
    # the points differ: GAT and GATv2, the dtype, F, the index dtype, the mean degree, nodes without edges
    assert {p["variant"] for p in mod.POINTS} == set(mod.VARIANTS)
    assert {p["dtype"] for p in mod.POINTS} == set(mod.DTYPES)
    assert sorted(p["F"] for p in mod.POINTS) == [8, 32, 64]
    assert {p["index"] for p in mod.POINTS} == set(mod.INDEX_DTYPES)
    assert sorted(round(p["E"] / p["N"]) for p in mod.POINTS) == [7, 25, 492]
    assert sorted(p.get("empty", 0.0) > 0 for p in mod.POINTS) == [False, False, True]
    assert [(p["N"], p["E"]) for p in mod.POINTS] == [(169343, 1166243), (2449029, 61859140), (232965, 114615892)]


def test_cta_iterations():
    """cta_iterations: one count a program in launch order (the head groups of a node group side by
    side), each node group's sum of cdiv(deg, BLOCK_E) (twice with TWO_PASS), their mean
    loop_iterations; at the arxiv point the programs' steps range from 0 (groups of uncited papers) to
    the hubs' hundreds."""
    mod = load_example(KERNEL)
    p = _pt(10, 50, 3, 8, max_deg=20)
    deg = mod.in_degrees(10, 50, 0.0, 20, 0).tolist()
    c = _cfg(4, 2, 4, 1)
    its = mod.cta_iterations(c, p)
    groups = [sum(-(-d // 4) for d in deg[i:i + 4]) * 2 for i in range(0, 10, 4)]
    assert its == [g for g in groups for _ in range(2)]
    assert len(its) == mod.grid(c, p)[0] == 6
    assert mod.loop_iterations(c, p) == -(-sum(groups) // 3)
    arxiv = mod.POINTS[0]
    its = mod.cta_iterations(mod.BASELINE, arxiv)
    assert len(its) == mod.grid(mod.BASELINE, arxiv)[0] and min(its) == 0 and max(its) >= 300


def test_hooks_on_small_points_and_inputs():
    """make_inputs: shapes, dtypes, the seed, x ~ N(0, 1), the GAT logit halves from the rounded x, GATv2's
    xr and att; reference against a hand-computed node; torch_baseline's dtype; bytes / flops by hand."""
    import torch

    mod = load_example(KERNEL)
    p = _pt(12, 40, 2, 8, "gat", "fp16", "int64", 0.0, 10)
    inp = mod.make_inputs(p, seed=1, device="cpu")
    x = inp["x"]
    assert x.shape == (12, 2, 8) and x.dtype == torch.float16 and x.is_contiguous()
    assert inp["rowptr"].dtype == torch.int64 and inp["col"].dtype == torch.int64 and inp["col"].numel() == 40
    assert inp["a_src"].shape == (12, 2) and inp["a_src"].dtype == torch.float32 and "xr" not in inp
    assert torch.equal(mod.make_inputs(p, seed=1, device="cpu")["x"], x)
    assert not torch.equal(mod.make_inputs(p, seed=2, device="cpu")["x"], x)
    big = mod.make_inputs(_pt(2000, 4000, 4, 16, "gatv2", "bf16"), device="cpu")
    assert 0.8 < float(big["x"].float().std()) < 1.2 and big["xr"].shape == (2000, 4, 16)
    assert big["att"].shape == (4, 16) and big["att"].dtype == torch.float32 and "a_src" not in big
    assert big["rowptr"].dtype == torch.int32 and not torch.equal(big["x"], big["xr"])
    ref = mod.reference(inp)
    assert ref.shape == (12, 2, 8) and ref.dtype == torch.float32
    rp, col = inp["rowptr"], inp["col"]
    v = int(torch.argmax(rp[1:] - rp[:-1]))
    src = col[int(rp[v]):int(rp[v + 1])]
    s = torch.nn.functional.leaky_relu(inp["a_src"][src].double() + inp["a_dst"][v].double(), 0.2)
    want = (torch.softmax(s, 0)[:, :, None] * x[src].double()).sum(0)
    assert torch.allclose(ref[v].double(), want, atol=1e-5)
    base = mod.torch_baseline(inp)
    assert base.dtype == torch.float16 and base.shape == (12, 2, 8)
    assert mod.bytes_moved(p) == 13 * 8 + 40 * 8 + 2 * 12 * 2 * 8 * 2 + 2 * 12 * 2 * 4
    assert mod.flops(p) == 40 * 2 * 20
    assert mod.flops(_pt(12, 40, 2, 8, "gatv2")) == 40 * 2 * 52
    assert mod.grid(_cfg(8, 4, 4), _pt(37, 10, 3, 8)) == (10,)


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    rp = torch.tensor([0, 2, 3], dtype=torch.int32)
    col = torch.tensor([0, 1, 1], dtype=torch.int32)
    x = torch.ones(2, 2, 8, dtype=torch.float16)
    a = torch.zeros(2, 2)
    ok = dict(a_src=a, a_dst=a)
    with pytest.raises(ValueError, match="BLOCK_E=12"):
        mod.gat_aggregate(rp, col, x, BLOCK_E=12, **ok)
    with pytest.raises(ValueError, match="HEADS=3"):
        mod.gat_aggregate(rp, col, x, HEADS=3, **ok)
    with pytest.raises(ValueError, match="num_warps=6"):
        mod.gat_aggregate(rp, col, x, num_warps=6, **ok)
    with pytest.raises(ValueError, match="TWO_PASS=2"):
        mod.gat_aggregate(rp, col, x, TWO_PASS=2, **ok)
    with pytest.raises(ValueError, match="num_stages=0"):
        mod.gat_aggregate(rp, col, x, num_stages=0, **ok)
    with pytest.raises(ValueError, match="not both, not neither"):
        mod.gat_aggregate(rp, col, x)
    with pytest.raises(ValueError, match="not both, not neither"):
        mod.gat_aggregate(rp, col, x, xr=x, att=torch.zeros(2, 8), **ok)
    with pytest.raises(ValueError, match="x must be a 3-D"):
        mod.gat_aggregate(rp, col, x.double(), **ok)
    with pytest.raises(ValueError, match="unit F stride"):
        mod.gat_aggregate(rp, col, torch.ones(2, 8, 2, dtype=torch.float16).transpose(1, 2), **ok)
    with pytest.raises(ValueError, match="col must be"):
        mod.gat_aggregate(rp, col.long(), x, **ok)
    with pytest.raises(ValueError, match="rowptr must be"):
        mod.gat_aggregate(rp.float(), col, x, **ok)
    with pytest.raises(ValueError, match=r"a_dst must be a \[2, 2\]"):
        mod.gat_aggregate(rp, col, x, a_src=a, a_dst=torch.zeros(3, 2))
    with pytest.raises(ValueError, match="unit head stride"):
        mod.gat_aggregate(rp, col, x, a_src=torch.zeros(2, 2).t(), a_dst=a)
    with pytest.raises(ValueError, match=r"xr must be"):
        mod.gat_aggregate(rp, col, x, xr=x.float(), att=torch.zeros(2, 8))
    with pytest.raises(ValueError, match=r"att must be"):
        mod.gat_aggregate(rp, col, x, xr=x, att=torch.zeros(2, 7))
    with pytest.raises(ValueError, match="dtype 'fp8'"):
        mod.make_inputs(_pt(4, 4, 1, 8, dtype="fp8"), device="cpu")
    with pytest.raises(ValueError, match="variant 'gcn'"):
        mod.flops(_pt(4, 4, 1, 8, "gcn"))
    with pytest.raises(ValueError, match="index 'int16'"):
        mod.bytes_moved(_pt(4, 4, 1, 8, index="int16"))
    with pytest.raises(ValueError, match="N=0"):
        mod.grid(mod.BASELINE, _pt(0, 4, 1, 8))
    with pytest.raises(ValueError, match="F=300"):
        mod.example_args(mod.BASELINE, _pt(4, 4, 1, 300))
    with pytest.raises(ValueError, match="empty=1.0"):
        mod.loop_iterations(mod.BASELINE, _pt(4, 4, 1, 8, empty=1.0))
    with pytest.raises(ValueError, match="max_deg=0"):
        mod.grid(mod.BASELINE, _pt(4, 4, 1, 8, max_deg=0))
    with pytest.raises(ValueError, match="NODES=3"):
        mod.grid(dict(mod.BASELINE, NODES=3), mod.POINTS[0])
    # no destination nodes: nothing to launch, an empty out
    assert mod.gat_aggregate(rp[:1], col[:0], x, a_src=a, a_dst=torch.zeros(0, 2)).shape == (0, 2, 8)


def _tile_per_thread(cfg, point) -> int:
    """Feature-tile elements a thread: BLOCK_E x HEADS x BLOCK_F over the program's threads."""
    bf = 1 << (point["F"] - 1).bit_length()
    return cfg["BLOCK_E"] * cfg["HEADS"] * bf // (32 * cfg["num_warps"])


def test_sweep_fits_the_points():
    """The study sweep: 72 configs (BLOCK_E 8-32 x HEADS 1-4 x NODES 1 / 4 x both schedules x 4 / 8 warps,
    num_stages 1) with BASELINE among them; at every point each config is valid, HEADS divides H, and it
    launches >= 4 waves of programs on an H200 (the fewest: arxiv's 169,343 nodes / 4 x 8 / 4 heads =
    84,672); its feature tile <= 64 elements a thread (the products point's 32 x 4 x 64 on 4 warps).
    (Every config was compiled for sm_90 at every point with triton 3.6.0 and 3.9: all compile; registers
    31-255 under 3.6 (26-168 under 3.9), the most for GATv2's 32 x 4 x 64 tile on 4 warps at the products
    point (the tile, its leaky_relu scores and xr / att held a thread); shared memory 64 B - 8 KiB (3.6) /
    4 KiB (3.9), the reductions' scratch. No tile spills; ptxas 12.8 (3.6) keeps 14 of the 216 (config,
    point) pairs at a 32 / 48 / 64-register step by spilling 2-4 words (a node's loop-invariant pointer
    across the edge loop), ptxas 12.9 (3.9) one pair, 2 words. BLOCK_E 64 is not swept: 64 x 4 x 64 on 4
    warps, 128 elements a thread, spills 8 registers at the products point under 3.6. num_stages: no
    dot, the edge loops' loads are not pipelined, hence the one value.)"""
    mod = load_example(KERNEL)
    axes = SWEEP_AXES
    assert set(axes) == set(mod.TUNABLES) and mod.SWEEP_AXES == axes
    assert all(len(v) >= 2 for k, v in axes.items() if k != "num_stages") and axes["num_stages"] == [1]
    cfgs = [dict(zip(axes, v)) for v in itertools.product(*axes.values())]
    assert 40 <= len(cfgs) <= 72 and mod.BASELINE in cfgs
    for p in mod.POINTS:
        for c in cfgs:
            mod._check_cfg(c)
            (n,) = mod.grid(c, p)
            assert 4 * H200_SMS <= n < 2**31, (p, c)
            assert p["H"] % c["HEADS"] == 0, (p, c)
            assert _tile_per_thread(c, p) <= 64, (p, c)


def test_sweep_matches_the_study():
    """scripts/rank_study.py's SWEEPS entry: the same axes, every config valid at the points."""
    configs, points, axes = H.study_sweeps([KERNEL], ROLE)[KERNEL]
    assert axes == SWEEP_AXES
    assert len(configs) == len(list(itertools.product(*SWEEP_AXES.values())))
    assert points == load_example(KERNEL).POINTS


def test_examples_import_without_torch():
    proc = H.imports_without_torch(CASES)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr[-2000:]


@pytest.mark.slow
def test_example_compiles_sm90(shared_cache):
    """On sm_90: BASELINE and three more at the first point (arxiv: GAT, fp32, int64), and the heaviest
    tile (32 edges x 4 heads x 64 features on 4 warps, both schedules) at the products GATv2 point and at
    the Reddit GAT point, compile without spills, shared memory a few KiB (the reductions' scratch)."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    assert COMPILE_CFGS[0] == mod.BASELINE
    for cfg, res in H.compile_results(KERNEL, COMPILE_CFGS, "sm_90"):
        assert res.status == "ok", f"{cfg} on sm_90: {res.status}: {res.message}"
        assert 0 < res.n_regs <= 255 and res.n_spills == 0, (cfg, res.n_regs, res.n_spills)
        assert res.shared <= 16 * 1024, (cfg, res.shared)
    for p in mod.POINTS[1:]:
        for cfg in HEAVY_CFGS:
            res = compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch="sm_90",
                                 num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
            assert res.status == "ok" and res.n_spills == 0, (cfg, p, res.n_regs, res.n_spills, res.message)
            assert res.shared <= 16 * 1024, (cfg, res.shared)


@pytest.mark.slow
def test_example_compiles_sm120(shared_cache):
    for cfg, res in H.compile_results(KERNEL, SM120_CFGS, "sm_120"):
        assert res.status == "ok", f"{cfg} on sm_120: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.n_spills == 0, (cfg, res.n_regs, res.n_spills)
        assert res.shared <= min(16 * 1024, SM120_SMEM_PER_BLOCK), (cfg, res.shared)


# ----------------------------------------------------------------- the subprocess side
def _run() -> None:
    """Every case through launch against reference (the harness's tolerance) and torch_baseline against
    reference; each element against its own value; out's dtype, shape, contiguity; nodes without edges
    exactly 0; the inputs unchanged (against a fresh make_inputs + _prepare); one JSON line."""
    import torch

    H.patch_interpreter_bf16_rounding()
    H.patch_interpreter_index()
    mod = load_example(KERNEL)
    names = {torch.float16: "fp16", torch.bfloat16: "bf16", torch.float32: "fp32"}

    def extra(name, point, inputs, out, ref):
        fresh = mod.make_inputs(point, seed=len(name), device="cpu")
        _prepare(name, point, fresh)
        same = all(torch.equal(inputs[k], fresh[k]) for k in fresh if isinstance(fresh[k], torch.Tensor))
        rp = inputs["rowptr"].long()
        empty = (rp[1:] - rp[:-1]) == 0
        # elementwise: within ~4 ulp of out's dtype of each element's own value (the rounding plus fp32's
        # reordered sums), and a floor of 1e-3 of the largest for the near-zero sums of mixed signs
        rtol = {torch.bfloat16: 2.0 ** -6, torch.float16: 2.0 ** -9, torch.float32: 2.0 ** -18}[out.dtype]
        o = out.float()
        loose = (o - ref).abs() > rtol * ref.abs() + 1e-3 * float(ref.abs().max())
        res = {"dtype": names.get(out.dtype), "contiguous": bool(out.is_contiguous()), "n_loose": int(loose.sum()),
               "empty_rows_zero": bool((o[empty] == 0).all()), "inputs_unchanged": bool(same),
               "finite": bool(torch.isfinite(o).all()), "x_strides": list(inputs["x"].stride()),
               "baseline": H.compare(mod.torch_baseline(inputs), ref, point["dtype"])}
        if "a_src" in inputs:
            res["a_src_strides"] = list(inputs["a_src"].stride())
        if name in LARGE:
            # the largest score in nats (GAT: leaky_relu(a_src + a_dst); GATv2: through att)
            dst = torch.repeat_interleave(torch.arange(rp.numel() - 1), rp[1:] - rp[:-1])
            src = inputs["col"].long()
            if "a_src" in inputs:
                s = torch.nn.functional.leaky_relu(inputs["a_src"][src] + inputs["a_dst"][dst], 0.2)
            else:
                z = torch.nn.functional.leaky_relu(inputs["x"][src].float() + inputs["xr"][dst].float(), 0.2)
                s = (z * inputs["att"]).sum(-1)
            res["max_logit"] = float(s.max())
        return res

    H.run_cases(KERNEL, CASES[KERNEL], prepare=_prepare, extra=extra)


if __name__ == "__main__":
    _run()
