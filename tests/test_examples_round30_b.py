"""examples/gnn_scatter_add.py (a GNN's message-passing aggregation over an unsorted COO edge list:
out[dst[e], :] += w[e] x[src[e], :] (PyG's gather-then-scatter, DGL's copy_u + sum) or += w[e] msg[e, :]
(per-edge messages, DGL's copy_e + sum), fp32 atomics into a zero-filled out; a [BLOCK_E, TILE_F] tile a
step, E_STEPS steps a CTA, the column block TILE_F = min(BLOCK_F, next_pow2(F))) against its torch
reference on the CPU through Triton's interpreter, its launcher hooks against the shapes, its study sweep
against the points, and a compile for sm_90 and sm_120 from its own ``example_args``.

As in test_examples_round29_d.py the interpreter cases run in a subprocess (this file run as a script:
``python tests/test_examples_round30_b.py gnn_scatter_add``) that prints one JSON line. The subprocess
installs the harness's interpreter fixes (bf16 rounding; under triton 3.6 with numpy >= 2.3 the runtime
loop bounds read as ints).

Shapes are small, odd and ragged: GATHER x HAS_W x EVEN_F all eight ways; F of 1 (a scalar message: the
weighted in-degree), 24, 32, 41 (Reddit's classes), 48, 64, 72, 100, 128, 256; a column block clamped to
next_pow2(F) (BLOCK_F 128 over F 41 or 72), several column blocks with a short last one (F 100 in 64 +
36), one; E of 5 (one partial step of a 64-edge tile, 7 steps wholly past E), 257, 300 (a last group whose
later steps are wholly past E) to 1000; nodes without edges (zero rows); power-law degrees up to one
node taking most edges (collisions within a tile and across CTAs); both edge orders (sorted by source,
random); int32 and int64 ids; fp32, bf16, fp16; edge_index stored as [E, 2] pairs (its rows stride-2
views), x / msg column slices of NaN-filled buffers, the weight a column of an [E, 3] edge_attr in bf16
(a stray read poisons the result); BLOCK_E 16-128, BLOCK_F 16-128, E_STEPS 1-8, 2-8 warps, num_stages 1
/ 2.

Per case: launch's output within the dtype's tolerance of the fp64 reference (the harness's per-element
check) and each element within cnt u S of it (u = 2^-24, cnt the node's in-edges + 1, S the sum of the
|weighted messages| into it: the bound of any summation order); fresh, contiguous fp32 [N, F]; the rows
of nodes without in-edges exactly 0; the inputs unchanged; the wrapper accumulating into a given strided
out (a fixed pattern, its pad columns NaN) giving pattern + sum within the same bound with the pad
columns untouched; torch_baseline (PyG's index_select, multiply, scatter_add_) within tolerance.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
KERNEL = "gnn_scatter_add"
ROLE = "held-out-30"
H100_SMS = 132
SM90_SMEM_PER_BLOCK = 227 * 1024
SM120_SMEM_PER_BLOCK = 99 * 1024
U32 = 2.0 ** -24

# the study's sweep (scripts/rank_study.py SWEEPS["gnn_scatter_add"] once the lead adds it)
SWEEP_AXES = {"BLOCK_E": [32, 64], "BLOCK_F": [32, 64, 128], "E_STEPS": [2, 8], "num_warps": [4, 8],
              "num_stages": [1, 2]}


def _cfg(be, bf, st=2, w=4, ns=1):
    return {"BLOCK_E": be, "BLOCK_F": bf, "E_STEPS": st, "num_warps": w, "num_stages": ns}


def _pt(N, E, F, dtype="fp32", ids="int64", gather=1, weight=0, order="src", zipf=0.5):
    return {"N": N, "E": E, "F": F, "dtype": dtype, "ids": ids, "gather": gather, "weight": weight, "order": order,
            "zipf": zipf}


# case -> (point, cfg); comments: (GATHER, HAS_W, EVEN_F), TILE_F x column blocks, edges a CTA
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        # (1, 1, 1): arxiv-like GCN, 64 x 2 blocks; 64 edges a CTA over 1000 (a partial last group); prefetched
        "gcn_fp32": (_pt(61, 1000, 128, "fp32", "int64", 1, 1, "src", 0.65), _cfg(32, 64, 2, 4, 2)),
        # (1, 0, 0): Reddit's 41 classes in bf16, int32 ids, random order; BLOCK_F 128 clamped to 64, 1 block
        "copy_u_f41_bf16": (_pt(45, 777, 41, "bf16", "int32", 1, 0, "random", 0.34), _cfg(64, 128, 2, 8, 1)),
        # (0, 1, 1): NGCF-like per-edge fp16 messages, 32 x 2 blocks; 256 edges a CTA over 500
        "ngcf_msg_fp16": (_pt(33, 500, 64, "fp16", "int64", 0, 1, "src", 0.35), _cfg(32, 32, 8, 4, 2)),
        # (0, 0, 0): copy_e in bf16, F 100 in 64 + 36; 256 edges a CTA over 300: steps 3-8 of the second
        # group wholly past E
        "copy_e_f100_bf16": (_pt(29, 300, 100, "bf16", "int64", 0, 0, "random", 0.8), _cfg(32, 64, 8, 8, 2)),
        # (1, 1, 0): F 24 in one 32-column block, 400 nodes for 450 edges (many without edges), int32
        "gather_f24_fp16": (_pt(400, 450, 24, "fp16", "int32", 1, 1, "random", 1.0), _cfg(64, 32, 2, 4, 1)),
        # (0, 1, 0): F 72, BLOCK_F 128 (clamped to next_pow2 72 = 128), int32 ids
        "msg_f72_fp32": (_pt(31, 333, 72, "fp32", "int32", 0, 1, "src", 0.5), _cfg(32, 128, 2, 8, 1)),
        # (0, 0, 1): 17 nodes, zipf 1.2 (a hub takes a third of the edges: collisions in every tile)
        "msg_hub_fp32": (_pt(17, 257, 32, "fp32", "int64", 0, 0, "random", 1.2), _cfg(64, 32, 2, 4, 2)),
        # (1, 0, 1): F 256 in 128-column blocks, bf16, 512 edges a CTA over 640
        "copy_u_f256_bf16": (_pt(50, 640, 256, "bf16", "int32", 1, 0, "src", 0.65), _cfg(64, 128, 8, 4, 2)),
        # (1, 1, 1): edge_index as [E, 2] pairs (stride-2 rows), x a column slice of a NaN buffer, the weight
        # a column of an [E, 3] fp32 edge_attr; 3 blocks of 16 columns, one 16-edge step a CTA, 2 warps
        "strided_pairs_fp32": (_pt(23, 211, 48, "fp32", "int64", 1, 1, "random", 0.7), _cfg(16, 16, 1, 2, 1)),
        # (0, 1, 0): msg a column slice of a NaN buffer, the weight a bf16 column of an [E, 3] edge_attr,
        # edge_index [E, 2] pairs in int32; 128-edge steps
        "strided_msg_fp16": (_pt(19, 300, 40, "fp16", "int32", 0, 1, "src", 0.6), _cfg(128, 64, 1, 8, 1)),
        # (1, 1, 1): F 1 (TILE_F 1): the weighted in-degree of every node
        "scalar_f1_fp32": (_pt(37, 301, 1, "fp32", "int64", 1, 1, "random", 0.9), _cfg(32, 64, 2, 4, 2)),
        # (1, 0, 0): 5 edges, one CTA: a partial first step, 7 steps wholly past E
        "tiny_fp16": (_pt(3, 5, 7, "fp16", "int64", 1, 0, "src", 0.5), _cfg(64, 32, 8, 8, 2)),
    },
}
STRIDED, STRIDED_MSG, TINY, HUB = "strided_pairs_fp32", "strided_msg_fp16", "tiny_fp16", "msg_hub_fp32"
PAD_X, PAD_OUT = 5, 3

# configs compiled on sm_90 at the module's first POINT (ogbn-arxiv, fp32, F 256) (BASELINE first): the
# largest tile prefetched (the most shared memory), 64 x 64 on 4 warps and the smallest on 8; then at
# Reddit's F 41 (scalar rows, the most registers: 64 x 64 on 4 warps) and Amazon-Book's fp16 messages
COMPILE_CFGS = [_cfg(32, 64, 2, 4, 1), _cfg(64, 128, 8, 4, 2), _cfg(64, 64, 2, 4, 1), _cfg(32, 32, 8, 8, 2)]
P1_CFGS = [_cfg(32, 64, 2, 4, 1), _cfg(64, 64, 8, 4, 2), _cfg(64, 128, 8, 4, 1)]
P2_CFGS = [_cfg(32, 64, 2, 4, 1), _cfg(64, 128, 8, 4, 2)]
SM120_CFGS = [_cfg(32, 64, 2, 4, 1), _cfg(64, 128, 8, 4, 2), _cfg(32, 32, 2, 8, 2)]


def _pow2(v: int) -> int:
    return 1 << max(0, (v - 1).bit_length())


def _flags(p, c):
    """(GATHER, HAS_W, EVEN_F, TILE_F, column blocks, edge groups, steps of the last group holding an edge)
    of a case."""
    tf = min(c["BLOCK_F"], _pow2(p["F"]))
    span = c["BLOCK_E"] * c["E_STEPS"]
    groups = -(-p["E"] // span)
    last = -(-(p["E"] - (groups - 1) * span) // c["BLOCK_E"])
    return p["gather"], p["weight"], int(p["F"] % tf == 0), tf, -(-p["F"] // tf), groups, last


def _smem_bound(cfg, p) -> int:
    """An upper bound of a config's shared memory: num_stages - 1 prefetched steps (the message tile, the
    ids and the weights) plus one fp32 tile (a layout conversion of a 16-bit tile to the atomics')."""
    tf = min(cfg["BLOCK_F"], _pow2(p["F"]))
    e = 4 if p["dtype"] == "fp32" else 2
    ib = 4 if p["ids"] == "int32" else 8
    return (cfg["num_stages"] - 1) * cfg["BLOCK_E"] * (tf * e + 2 * ib + 4) + cfg["BLOCK_E"] * tf * 4


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """STRIDED: edge_index stored as [E, 2] pairs, x a column slice of a NaN buffer, the weight column 1 of
    a NaN-filled [E, 3] edge_attr. STRIDED_MSG: the same for msg and edge_index, the weight in bf16. Then
    copies of the inputs, to check they are left alone."""
    import torch

    nan = float("nan")
    if name in (STRIDED, STRIDED_MSG):
        ei = inputs["edge_index"]
        inputs["edge_index"] = ei.t().contiguous().t()
        key = "x" if name == STRIDED else "msg"
        f = inputs[key]
        buf = torch.full((f.shape[0], f.shape[1] + PAD_X), nan, dtype=f.dtype)
        buf[:, 2:2 + f.shape[1]] = f
        inputs[key] = buf[:, 2:2 + f.shape[1]]
        wdt = torch.float32 if name == STRIDED else torch.bfloat16
        attr = torch.full((ei.shape[1], 3), nan, dtype=wdt)
        attr[:, 1] = inputs["weight"].to(wdt)
        inputs["weight"] = attr[:, 1]
    for k in ("edge_index", "x", "msg", "weight"):
        inputs[k + "0"] = None if inputs[k] is None else inputs[k].clone()


# ----------------------------------------------------------------- the pytest side
def _results() -> dict:
    return H.interpreter_results(HERE, KERNEL)


@pytest.mark.parametrize("name", list(CASES[KERNEL]))
def test_example_matches_reference(name):
    res = _results()[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    p = CASES[KERNEL][name][0]
    N, F = p["N"], p["F"]
    assert res["n_bad"] == 0, H.mismatch(res, f"{name} launch")
    assert res["shape"] == [N, F] and res["dtype"] == "fp32" and res["out_strides"] == [F, 1], res
    assert res["n_loose"] == 0, res                 # cnt u S: any summation order's bound
    assert res["inputs_unchanged"] is True and res["nonzero"] is True, res
    assert res["isolated_nonzero"] == 0, res        # nodes without in-edges: exact zeros
    assert res["acc"]["n_loose"] == 0 and res["acc"]["pad_untouched"] is True, res["acc"]
    assert res["acc"]["same_buffer"] is True, res["acc"]
    assert res["baseline"]["n_bad"] == 0, H.mismatch(res["baseline"], f"{name} torch_baseline")
    if name == "gather_f24_fp16":
        assert res["n_isolated"] > 100, res
    if name != TINY:
        assert res["dup_in_step"] is True, res      # two edges of one step into one node: colliding adds
    if name == HUB:
        assert res["top_share"] > 0.25, res
    if name in (STRIDED, STRIDED_MSG):
        assert res["ei_strides"] == [1, 2], res            # edge_index stored as [E, 2] pairs
        assert res["feat_strides"] == [F + PAD_X, 1] and res["w_strides"] == [3], res
        assert res["w_dtype"] == ("torch.float32" if name == STRIDED else "torch.bfloat16"), res


def test_cases_cover_every_code_path():
    """GATHER x HAS_W x EVEN_F all eight ways, every dtype, both id dtypes and edge orders; a clamped column
    block, several column blocks with a short last one, one; a last edge group with steps wholly past E,
    E below one step; F 1; every sweep value of every tunable, and BLOCK_E 16 / 128, BLOCK_F 16,
    E_STEPS 1, 2 warps."""
    H.assert_tunables_covered(CASES)
    mod = load_example(KERNEL)
    cases = list(CASES[KERNEL].values())
    assert {p["dtype"] for p, _ in cases} == set(mod.DTYPES)
    assert {p["ids"] for p, _ in cases} == set(mod.ID_DTYPES) and {p["order"] for p, _ in cases} == set(mod.ORDERS)
    fl = [(p, c, _flags(p, c)) for p, c in cases]
    assert {f[:3] for _, _, f in fl} == set(itertools.product((0, 1), repeat=3))
    assert any(c["BLOCK_F"] > f[3] for _, c, f in fl)                          # clamped to next_pow2(F)
    assert any(f[4] > 1 and p["F"] % f[3] for p, _, f in fl) and any(f[4] == 1 for _, _, f in fl)
    assert any(f[6] < c["E_STEPS"] for _, c, f in fl)                          # steps wholly past E
    assert any(p["E"] < c["BLOCK_E"] for p, c in cases) and any(p["F"] == 1 for p, _ in cases)
    assert any(f[5] > 1 and p["E"] % (c["BLOCK_E"] * c["E_STEPS"]) for p, c, f in fl)
    for k, vals in SWEEP_AXES.items():
        assert {c[k] for _, c in cases} >= set(vals), k
    assert {16, 128} <= {c["BLOCK_E"] for _, c in cases} and 16 in {c["BLOCK_F"] for _, c in cases}
    assert 1 in {c["E_STEPS"] for _, c in cases} and 2 in {c["num_warps"] for _, c in cases}


def _cfgs():
    return [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]


def test_launcher_hooks_agree_with_shapes():
    """At every point and sweep config: example_args on meta with the launch's shapes, dtypes and strides
    (src / dst the rows of a [2, E] edge_index), the flags and TILE_F, the grid (edge groups x column
    blocks), the loop length, the zero-fill; bytes_moved / flops; 2.4-19.8 GB moved a point (0.8-7 ms at
    an H100's ~3 TB/s)."""
    import torch

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "example_args", "torch_baseline", "secondary_kernels", "gnn_scatter_add", "zipf_nodes",
               "gcn_weights", "tile_f"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert not hasattr(mod, "cta_iterations")
    assert len(mod.POINTS) == 3 and mod.ROLE == ROLE and mod.SWEEP_AXES == SWEEP_AXES
    dts = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
    its = {"int32": torch.int32, "int64": torch.int64}
    for p in mod.POINTS:
        N, E, F, g, w = p["N"], p["E"], p["F"], p["gather"], p["weight"]
        for cfg in _cfgs():
            a = mod.example_args(cfg, p)
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for v in a.values())
            assert a["DST"].shape == (E,) and a["DST"].dtype == its[p["ids"]] and a["stride_dst"] == 1
            assert a["MSG"].shape == ((N if g else E), F) and a["MSG"].dtype == dts[p["dtype"]]
            assert a["stride_m"] == F and a["MSG"].stride(1) == 1
            assert a["OUT"].shape == (N, F) and a["OUT"].dtype == torch.float32 and a["stride_o"] == F
            if g:
                assert a["SRC"].shape == (E,) and a["SRC"].dtype == its[p["ids"]] and a["stride_src"] == 1
                assert a["SRC"] is not a["DST"]
            else:
                assert a["SRC"] is a["DST"] and a["stride_src"] == 0
            if w:
                assert a["W"].shape == (E,) and a["W"].dtype == torch.float32 and a["stride_w"] == 1
            else:
                assert a["W"] is a["DST"] and a["stride_w"] == 0
            tf = min(cfg["BLOCK_F"], _pow2(F))
            nfb = -(-F // tf)
            assert (a["GATHER"], a["HAS_W"], a["EVEN_F"]) == (g, w, int(F % tf == 0))
            assert (a["E"], a["F"], a["TILE_F"]) == (E, F, tf) and mod.tile_f(F, cfg["BLOCK_F"]) == tf
            assert (a["BLOCK_E"], a["E_STEPS"], a["NUM_STAGES"]) == (cfg["BLOCK_E"], cfg["E_STEPS"],
                                                                    cfg["num_stages"])
            assert mod.grid(cfg, p) == -(-E // (cfg["BLOCK_E"] * cfg["E_STEPS"])) * nfb
            assert mod.loop_iterations(cfg, p) == cfg["E_STEPS"]
            sec = mod.secondary_kernels(cfg, p)
            assert sec == [{"name": "zero_fill", "grid": -(-N * F // 512), "iterations": 1, "tile_bytes": 2048,
                            "dram_bytes": 2048}]
        ib, e = (4 if p["ids"] == "int32" else 8), (4 if p["dtype"] == "fp32" else 2)
        assert mod.bytes_moved(p) == (E * ib * (2 if g else 1) + (4 * E if w else 0) + (N if g else E) * F * e
                                      + E * F * 4 + N * F * 4)
        assert mod.flops(p) == E * F * (2 if w else 1)
        assert 2.3e9 <= mod.bytes_moved(p) <= 20e9, p
        assert 50e-6 <= mod.bytes_moved(p) / 3.0e12 <= 20e-3
        # the inputs make_inputs holds on a GPU: edge_index, features, weights (and out, fp32) under 2 GB
        held = 2 * E * ib + (N if g else E) * F * e + (4 * E if w else 0) + N * F * 4
        assert held < 2 * 2**30, (p, held)
    # the points differ: F 256 (aligned, gathered, fp32), 41 (unaligned bf16 rows, unweighted, L2-resident
    # x / out, random order), 64 (fp16 per-edge messages); int64 / int32 ids
    assert [p["F"] for p in mod.POINTS] == [256, 41, 64]
    assert {p["dtype"] for p in mod.POINTS} == set(mod.DTYPES) and {p["ids"] for p in mod.POINTS} == {"int32", "int64"}
    assert {p["gather"] for p in mod.POINTS} == {0, 1} and {p["weight"] for p in mod.POINTS} == {0, 1}
    assert {p["order"] for p in mod.POINTS} == set(mod.ORDERS)


def test_hooks_on_small_points_and_inputs():
    """make_inputs: shapes, dtypes, the seed, the order, the power law, the weights by hand; reference and
    torch_baseline by hand on a 4-node graph; the wrapper's accumulation and empty inputs; tile_f; grid /
    loop / zero-fill / bytes / flops by hand."""
    import torch

    mod = load_example(KERNEL)
    p = _pt(40, 500, 12, "bf16", "int32", 1, 1, "src", 0.8)
    inp = mod.make_inputs(p, seed=1, device="cpu")
    ei, x, w = inp["edge_index"], inp["x"], inp["weight"]
    assert ei.shape == (2, 500) and ei.dtype == torch.int32 and ei.is_contiguous()
    assert x.shape == (40, 12) and x.dtype == torch.bfloat16 and inp["msg"] is None and inp["num_nodes"] == 40
    assert w.shape == (500,) and w.dtype == torch.float32
    assert int(ei.min()) >= 0 and int(ei.max()) < 40
    key = ei[0].long() * 40 + ei[1].long()
    assert bool((key[1:] >= key[:-1]).all())                               # coalesced: sorted by (src, dst)
    deg = torch.bincount(ei[1].long(), minlength=40).float() + 1
    assert torch.allclose(w, deg[ei[0].long()].rsqrt() * deg[ei[1].long()].rsqrt())
    assert torch.equal(mod.gcn_weights(ei[0], ei[1], 40), w)
    assert torch.equal(mod.make_inputs(p, seed=1, device="cpu")["edge_index"], ei)
    assert not torch.equal(mod.make_inputs(p, seed=2, device="cpu")["edge_index"], ei)
    assert 0.8 < float(x.float().std()) < 1.2
    # the power law: the top node's in-degree share near 1 / sum r^-0.8 over 40 ranks
    top = float(torch.bincount(ei[1].long()).max()) / 500
    share = 1.0 / sum(r ** -0.8 for r in range(1, 41))
    assert 0.6 * share < top < 1.5 * share, (top, share)
    r = mod.make_inputs(_pt(30, 400, 5, "fp16", "int64", 0, 0, "random", 0.0), seed=3, device="cpu")
    assert r["x"] is None and r["msg"].shape == (400, 5) and r["msg"].dtype == torch.float16
    assert r["weight"] is None and r["edge_index"].dtype == torch.int64
    k2 = r["edge_index"][0] * 30 + r["edge_index"][1]
    assert not bool((k2[1:] >= k2[:-1]).all())                             # random order: not sorted
    # zipf_nodes: uniform at s = 0, mapped through perm
    gen = torch.Generator().manual_seed(0)
    ids = mod.zipf_nodes(20000, 4, 0.0, gen, torch.tensor([3, 2, 1, 0]), device="cpu")
    counts = torch.bincount(ids, minlength=4)
    assert counts.sum() == 20000 and int(counts.min()) > 4500
    ids = mod.zipf_nodes(20000, 2, 1.0, gen, torch.tensor([1, 0]), device="cpu")
    assert 0.63 < float((ids == 1).float().mean()) < 0.70                  # p(rank 1) = 1 / 1.5 -> node 1
    # by hand: 4 nodes, edges 0->1, 2->1, 3->1, 1->0, 1->1 (a self loop), 2->1 again; node 2, 3 get nothing
    src = torch.tensor([0, 2, 3, 1, 1, 2])
    dst = torch.tensor([1, 1, 1, 0, 1, 1])
    xs = torch.tensor([[1.0, 10.0], [2.0, 20.0], [3.0, 30.0], [4.0, 40.0]])
    ws = torch.tensor([0.5, 1.0, 2.0, 3.0, -1.0, 0.25])
    small = {"edge_index": torch.stack((src, dst)), "x": xs, "msg": None, "weight": ws, "num_nodes": 4}
    want = torch.tensor([[6.0, 60.0], [0.5 + 3 + 8 - 2 + 0.75, 5 + 30 + 80 - 20 + 7.5], [0, 0], [0, 0]])
    assert torch.equal(mod.reference(small), want) and mod.reference(small).dtype == torch.float32
    assert torch.equal(mod.torch_baseline(small), want)
    unw = dict(small, weight=None)
    assert torch.equal(mod.reference(unw)[1], torch.tensor([1.0 + 3 + 4 + 2 + 3, 10.0 + 30 + 40 + 20 + 30]))
    per_edge = {"edge_index": small["edge_index"], "x": None, "msg": xs[src], "weight": ws, "num_nodes": 4}
    assert torch.equal(mod.reference(per_edge), want) and torch.equal(mod.torch_baseline(per_edge), want)
    # the wrapper on no edges / no columns: zeros, or the given out untouched
    e0 = mod.gnn_scatter_add(xs, torch.zeros(0, dtype=torch.int64), 4, src=torch.zeros(0, dtype=torch.int64))
    assert e0.shape == (4, 2) and e0.dtype == torch.float32 and int((e0 != 0).sum()) == 0
    given = torch.full((4, 2), 7.0)
    assert mod.gnn_scatter_add(xs[:0], torch.zeros(0, dtype=torch.int32), out=given) is given
    assert bool((given == 7.0).all())
    f0 = mod.gnn_scatter_add(torch.ones(6, 0), dst, 5)
    assert f0.shape == (5, 0)
    # tile_f: BLOCK_F clamped to F rounded up to a power of two
    assert [mod.tile_f(F, 64) for F in (1, 3, 24, 41, 64, 100, 256)] == [1, 4, 32, 64, 64, 64, 64]
    assert mod.tile_f(41, 128) == 64 and mod.tile_f(72, 128) == 128 and mod.tile_f(256, 32) == 32
    # hooks by hand: E 1000 in groups of 32 x 8 = 256 (4 groups), F 100 in 64-column blocks (2)
    q = _pt(70, 1000, 100, "fp16", "int32", 0, 1)
    assert mod.grid(_cfg(32, 128, 8), q) == 4 * 1 and mod.grid(_cfg(32, 64, 8), q) == 4 * 2
    assert mod.grid(_cfg(64, 32, 2), q) == 8 * 4 and mod.loop_iterations(_cfg(64, 32, 2), q) == 2
    assert mod.secondary_kernels(_cfg(32, 64), q) == [{"name": "zero_fill", "grid": 14, "iterations": 1,
                                                       "tile_bytes": 2048, "dram_bytes": 2048}]
    # ids 1000 x 4 (dst only), weights 1000 x 4, msg 1000 x 100 x 2, atomics 1000 x 100 x 4, fill 70 x 100 x 4
    assert mod.bytes_moved(q) == 4000 + 4000 + 200000 + 400000 + 28000
    assert mod.bytes_moved(dict(q, gather=1, weight=0, ids="int64")) == 16000 + 70 * 200 + 400000 + 28000
    assert mod.flops(q) == 200000 and mod.flops(dict(q, weight=0)) == 100000


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    x = torch.ones(10, 8)
    dst = torch.zeros(20, dtype=torch.int64)
    src = torch.zeros(20, dtype=torch.int64)
    with pytest.raises(ValueError, match="BLOCK_E=48"):
        mod.gnn_scatter_add(x, dst, 10, src=src, BLOCK_E=48)
    with pytest.raises(ValueError, match="BLOCK_F=0"):
        mod.gnn_scatter_add(x, dst, 10, src=src, BLOCK_F=0)
    with pytest.raises(ValueError, match="16384"):
        mod.gnn_scatter_add(x, dst, 10, src=src, BLOCK_E=256, BLOCK_F=128)
    with pytest.raises(ValueError, match="E_STEPS=0"):
        mod.gnn_scatter_add(x, dst, 10, src=src, E_STEPS=0)
    with pytest.raises(ValueError, match="num_warps=3"):
        mod.gnn_scatter_add(x, dst, 10, src=src, num_warps=3)
    with pytest.raises(ValueError, match="num_stages=0"):
        mod.gnn_scatter_add(x, dst, 10, src=src, num_stages=0)
    with pytest.raises(ValueError, match=r"expected msg \[N_src, F\]"):
        mod.gnn_scatter_add(x[0], dst, 10, src=src)
    with pytest.raises(ValueError, match="fp32 / bf16 / fp16"):
        mod.gnn_scatter_add(x.double(), dst, 10, src=src)
    with pytest.raises(ValueError, match="index must be a 1-d int32 / int64"):
        mod.gnn_scatter_add(x, dst.float(), 10, src=src)
    with pytest.raises(ValueError, match="src must be a 1-d int32 / int64 tensor of E=20"):
        mod.gnn_scatter_add(x, dst, 10, src=src[:5])
    with pytest.raises(ValueError, match=r"one row an edge: \[E=20, F\]"):
        mod.gnn_scatter_add(x, dst, 10)
    with pytest.raises(ValueError, match=r"edge_weight must be a float \[E=20\]"):
        mod.gnn_scatter_add(x, dst, 10, src=src, edge_weight=torch.ones(19))
    with pytest.raises(ValueError, match=r"edge_weight must be a float \[E=20\]"):
        mod.gnn_scatter_add(x, dst, 10, src=src, edge_weight=torch.ones(20, dtype=torch.int32))
    with pytest.raises(ValueError, match="num_nodes=None"):
        mod.gnn_scatter_add(x, dst, src=src)
    with pytest.raises(ValueError, match=r"out must be an fp32 \[N, F=8\]"):
        mod.gnn_scatter_add(x, dst, src=src, out=torch.zeros(10, 8, dtype=torch.float16))
    with pytest.raises(ValueError, match="num_nodes=9 differs"):
        mod.gnn_scatter_add(x, dst, 9, src=src, out=torch.zeros(10, 8))
    with pytest.raises(ValueError, match="unit column stride"):
        mod.gnn_scatter_add(x, dst, src=src, out=torch.zeros(8, 10).t())
    with pytest.raises(ValueError, match="src must be on"):
        mod.gnn_scatter_add(x, dst, 10, src=src.to("meta"))
    big = torch.empty((2**31,), dtype=torch.int32, device="meta")
    with pytest.raises(ValueError, match="int32 edge offsets"):
        mod.gnn_scatter_add(torch.empty((2**31, 1), device="meta"), big, 4)
    with pytest.raises(ValueError, match="dtype 'fp64'"):
        mod.make_inputs(_pt(4, 8, 2, "fp64"), device="cpu")
    with pytest.raises(ValueError, match="ids 'int16'"):
        mod.bytes_moved(_pt(4, 8, 2, ids="int16"))
    with pytest.raises(ValueError, match="E=0"):
        mod.grid(mod.BASELINE, _pt(4, 0, 2))
    with pytest.raises(ValueError, match="gather=2"):
        mod.flops(_pt(4, 8, 2, gather=2))
    with pytest.raises(ValueError, match="order 'dst'"):
        mod.example_args(mod.BASELINE, _pt(4, 8, 2, order="dst"))
    with pytest.raises(ValueError, match="zipf=-1"):
        mod.make_inputs(_pt(4, 8, 2, zipf=-1), device="cpu")
    with pytest.raises(ValueError, match="E=3000000000"):
        mod.bytes_moved(_pt(4, 3000000000, 2))
    with pytest.raises(ValueError, match="BLOCK_F=96"):
        mod.grid(dict(mod.BASELINE, BLOCK_F=96), mod.POINTS[0])
    with pytest.raises(ValueError, match="E_STEPS=2.5"):
        mod.loop_iterations(dict(mod.BASELINE, E_STEPS=2.5), mod.POINTS[0])


def test_sweep_fits_the_points():
    """The study sweep: 48 configs (BLOCK_E 32 / 64 x BLOCK_F 32 / 64 / 128 x E_STEPS 2 / 8 x 4 / 8 warps x
    num_stages 1 / 2: tiles of 1024-8192 elements, 4-64 a thread) with BASELINE among them; at every point
    each config is valid, launches >= 4 waves of programs on an H100 (9708 at the fewest: arxiv, 512 edges
    x 2 column blocks of 128) and its shared memory bound (num_stages - 1 prefetched steps plus one fp32
    tile, at most 66 KiB) fits sm_90's 227 KiB. (Every config was compiled for sm_90 at every point with
    triton 3.6.0 and 3.9.0: all compile, none spills; registers 26-168 under 3.6 and 26-141 under 3.9,
    the most at Reddit's F 41 (82-byte bf16 rows: scalar loads and atomics, a 64-bit address an element;
    64 x 64 on 4 warps, 128-159) and arxiv's 64 x 128 fp32 tile on 4 warps (126-168); shared memory 0-33.3
    KiB under both (the prefetched 64 x 128 fp32 tile and its ids at num_stages 2; 0.5 KiB at F 41, where
    the unaligned rows are not prefetched, only the ids; up to 8.8 KiB for the fp16 messages). A 64 x 128
    tile at F 41 -- unclamped -- reached 255 registers and spilled on 4 warps: hence the clamp of BLOCK_F
    to next_pow2(F), which also makes BLOCK_F 64 and 128 the same kernel at that point.)"""
    mod = load_example(KERNEL)
    axes = SWEEP_AXES
    assert set(axes) == set(mod.TUNABLES) and mod.SWEEP_AXES == axes
    assert all(len(v) >= 2 for v in axes.values())
    cfgs = _cfgs()
    assert 48 <= len(cfgs) <= 72 and mod.BASELINE in cfgs
    fewest = min(mod.grid(c, p) for p in mod.POINTS for c in cfgs)
    assert fewest == 9708
    for p in mod.POINTS:
        for c in cfgs:
            mod._check_cfg(c)
            tf = mod.tile_f(p["F"], c["BLOCK_F"])
            assert 4 <= c["BLOCK_E"] * tf // (32 * c["num_warps"]) <= 64, (p, c)
            assert 4 * H100_SMS <= mod.grid(c, p) < 2**31, (p, c)
            assert _smem_bound(c, p) <= 66 * 1024 <= SM90_SMEM_PER_BLOCK, (p, c)


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
    """On sm_90: BASELINE, the 64 x 128 tile prefetched (the most shared memory), 64 x 64 on 4 warps and
    32 x 32 on 8 at the first point (ogbn-arxiv, fp32, F 256); BASELINE and the 64 x 64 tile on 4 warps
    (the most registers) at Reddit's F 41, with BLOCK_F 128 clamped to the same 64 columns; BASELINE and
    the largest tile at Amazon-Book's fp16 messages: all compile without spills, their shared memory
    within the bound; the prefetched steps use shared memory where the rows are aligned."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    assert COMPILE_CFGS[0] == mod.BASELINE
    p0 = mod.POINTS[0]
    for cfg, res in H.compile_results(KERNEL, COMPILE_CFGS, "sm_90"):
        assert res.status == "ok", f"{cfg} on sm_90: {res.status}: {res.message}"
        assert 0 < res.n_regs <= 255 and res.n_spills == 0, (cfg, res.n_regs, res.n_spills)
        assert res.shared <= _smem_bound(cfg, p0), (cfg, res.shared)
        if cfg["num_stages"] > 1:                   # the message tile prefetched (cp.async into shared)
            assert res.shared >= cfg["BLOCK_E"] * mod.tile_f(p0["F"], cfg["BLOCK_F"]) * 4, (cfg, res.shared)
    for p, cfgs in ((mod.POINTS[1], P1_CFGS), (mod.POINTS[2], P2_CFGS)):
        for cfg in cfgs:
            res = compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch="sm_90",
                                 num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
            assert res.status == "ok" and res.n_spills == 0, (cfg, p, res.n_regs, res.n_spills, res.message)
            assert 0 < res.n_regs <= 255 and res.shared <= _smem_bound(cfg, p), (cfg, res.n_regs, res.shared)


@pytest.mark.slow
def test_example_compiles_sm120(shared_cache):
    """On sm_120 (99 KiB a block): BASELINE, the 64 x 128 tile prefetched and 32 x 32 on 8 warps compile at
    the first point without spills within their shared memory bound."""
    mod = load_example(KERNEL)
    for cfg, res in H.compile_results(KERNEL, SM120_CFGS, "sm_120"):
        assert res.status == "ok", f"{cfg} on sm_120: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.n_spills == 0, (cfg, res.n_regs, res.n_spills)
        assert res.shared <= min(_smem_bound(cfg, mod.POINTS[0]), SM120_SMEM_PER_BLOCK), (cfg, res.shared)


# ----------------------------------------------------------------- the subprocess side
def _run() -> None:
    """Every case through launch against reference (the harness's tolerance) and against cnt u S; the
    wrapper accumulating into a strided, prefilled out; torch_baseline against reference; the output's
    layout, the inputs unchanged, the nodes without edges, the collisions; one JSON line."""
    import torch

    H.patch_interpreter_bf16_rounding()
    H.patch_interpreter_index()
    mod = load_example(KERNEL)
    nan = float("nan")

    def same(a, b):
        if a is None:
            return True
        if not a.is_floating_point():
            return torch.equal(a, b)
        return torch.equal(a.isnan(), b.isnan()) and torch.equal(a.nan_to_num(7.0), b.nan_to_num(7.0))

    def bound_terms(inputs):
        """(cnt, S): per node the in-edges + 1 and the fp64 sum of the |weighted messages| into it."""
        ei = inputs["edge_index"]
        N = inputs["num_nodes"]
        absm = mod._messages(inputs, torch.float64).abs()
        S = torch.zeros((N, absm.shape[1]), dtype=torch.float64).index_add_(0, ei[1].long(), absm)
        cnt = torch.bincount(ei[1].long(), minlength=N).double() + 1
        return cnt[:, None], S

    def extra(name, point, inputs, out, ref):
        cfg = CASES[KERNEL][name][1]
        ei = inputs["edge_index"]
        N, F = out.shape
        cnt, S = bound_terms(inputs)
        loose = (out.double() - ref.double()).abs() > cnt * U32 * S * 1.0001 + 1e-30
        indeg = torch.bincount(ei[1].long(), minlength=N)
        iso = indeg == 0
        # the wrapper into a given out: a fixed pattern in the first F columns of a NaN-padded buffer
        buf = torch.full((N, F + PAD_OUT), nan)
        pat = ((torch.arange(N)[:, None] * 7 + torch.arange(F)[None, :] * 3) % 11 - 5).float() / 4
        buf[:, :F] = pat
        x = inputs["x"]
        got = mod.gnn_scatter_add(inputs["msg"] if x is None else x, ei[1], src=None if x is None else ei[0],
                                  edge_weight=inputs["weight"], out=buf[:, :F], **cfg)
        acc_loose = (buf[:, :F].double() - pat.double() - ref.double()).abs() > \
            cnt * U32 * (S + pat.double().abs()) * 1.0001 + 1e-30
        # two edges of one BLOCK_E step into the same node
        d = ei[1].long()
        be = cfg["BLOCK_E"]
        dup = any(len(set(d[i:i + be].tolist())) < len(d[i:i + be]) for i in range(0, d.numel(), be))
        feats = inputs["msg"] if x is None else x
        return {"dtype": {torch.float32: "fp32"}.get(out.dtype, str(out.dtype)), "out_strides": list(out.stride()),
                "n_loose": int(loose.sum()), "nonzero": bool((ref != 0).any()),
                "inputs_unchanged": all(same(inputs[k], inputs[k + "0"]) for k in ("edge_index", "x", "msg", "weight")),
                "isolated_nonzero": int((out[iso] != 0).sum()), "n_isolated": int(iso.sum()),
                "acc": {"n_loose": int(acc_loose.sum()), "pad_untouched": bool(buf[:, F:].isnan().all()),
                        "same_buffer": bool(got.data_ptr() == buf.data_ptr() and got.stride() == (F + PAD_OUT, 1))},
                "dup_in_step": bool(dup), "top_share": float(indeg.max()) / max(d.numel(), 1),
                "ei_strides": list(ei.stride()),
                "feat_strides": list(feats.stride()),
                "w_strides": None if inputs["weight"] is None else list(inputs["weight"].stride()),
                "w_dtype": None if inputs["weight"] is None else str(inputs["weight"].dtype)}

    H.run_cases(KERNEL, CASES[KERNEL], prepare=_prepare, baseline=True, extra=extra)


if __name__ == "__main__":
    _run()
