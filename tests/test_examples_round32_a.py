"""examples/sddmm_edge_scores.py (SDDMM over a graph's edge list: score[e, h] = scale x <q[row[e], h, :],
k[col[e], h, :]>, the per-edge attention logits of a graph transformer / DGL's u_dot_v, and an SpMM's
gradient w.r.t. its values; fp32 products and accumulation, a [BLOCK_E, TILE_H, TILE_D] pair of gathered
tiles a step, TILE_H = min(HEADS, next_pow2(H)), TILE_D = min(BLOCK_D, next_pow2(D))) against its torch
reference on the CPU through Triton's interpreter, its launcher hooks against the shapes, its study sweep
against the points, and a compile for sm_90 and sm_120 from its own ``example_args``.

As in test_examples_round30_b.py the interpreter cases run in a subprocess (this file run as a script:
``python tests/test_examples_round32_a.py sddmm_edge_scores``) that prints one JSON line. The subprocess
installs the harness's interpreter fixes (bf16 rounding; under triton 3.6 with numpy >= 2.3 the runtime
loop bounds read as ints).

Shapes are small, odd and ragged: EVEN_H x EVEN_D all four ways; H of 1, 2, 3 (a head group of 2 with its
second head past H), 4, 8; a head group clamped to next_pow2(H) (HEADS 2 over H 1); D of 1, 7, 24, 32, 40,
64, 100 (64 + 36: a short last step), 128 in 1-8 feature steps; E of 5 (one partial block), 129 to 900 with
a partial last block; both edge orders, int32 and int64 ids, fp32, bf16, fp16; q and k read in place from a
fused [N, 3, H, D] qkv buffer, edge_index stored as [E, 2] pairs (stride-2 rows), q a head-padded slice
of a NaN-filled buffer (a stray read poisons the result); scale 1 / sqrt(D) and 1; BLOCK_E 8-64, BLOCK_D
8-64, HEADS 1 / 2 / 4, 2-8 warps, num_stages 1 / 2.

Per case: launch's output within the dtype's tolerance of the fp64 reference (the harness's per-element
check) and each element within the rounding bound of any fp32 summation order plus the output's one
rounding (D u32 S + u_out |ref|, S the fp64 sum of |q k| x scale); fresh, contiguous [E, H] in q's dtype;
the inputs unchanged; the wrapper on 2-d [N, D] operands (one head) and with scale None (1 / sqrt(D));
torch_baseline (PyG's index_select, multiply, sum) within tolerance.
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
KERNEL = "sddmm_edge_scores"
ROLE = "held-out-32"
H100_SMS = 132
SM90_SMEM_PER_BLOCK = 227 * 1024
SM120_SMEM_PER_BLOCK = 99 * 1024
U32 = 2.0 ** -24
U_OUT = {"fp32": 2.0 ** -24, "bf16": 2.0 ** -8, "fp16": 2.0 ** -11}

# the study's sweep (scripts/rank_study.py SWEEPS["sddmm_edge_scores"] once the lead adds it)
SWEEP_AXES = {"BLOCK_E": [16, 32, 64], "BLOCK_D": [16, 64], "HEADS": [1, 2], "num_warps": [4, 8],
              "num_stages": [1, 2]}


def _cfg(be, bd, hs=1, w=4, ns=1):
    return {"BLOCK_E": be, "BLOCK_D": bd, "HEADS": hs, "num_warps": w, "num_stages": ns}


def _pt(N, E, H_, D, dtype="fp32", ids="int64", order="dst", zipf=0.5, scale=1, qkv=0):
    return {"N": N, "E": E, "H": H_, "D": D, "dtype": dtype, "ids": ids, "order": order, "zipf": zipf,
            "scale": scale, "qkv": qkv}


# case -> (point, cfg); comments: (EVEN_H, EVEN_D), TILE_H x head groups, TILE_D x steps
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        # (1, 1): arxiv-like TransformerConv, 8 heads of 32 in fp32, 2 heads a program, 2 steps of 16; prefetched
        "arxiv_like_fp32": (_pt(61, 700, 8, 32, "fp32", "int64", "dst", 0.65, 1), _cfg(32, 16, 2, 4, 2)),
        # (1, 1): Yelp-like SpMM gradient, one head of 128 in bf16, int32 ids, random order, 2 steps of 64
        "spmm_grad_bf16": (_pt(90, 900, 1, 128, "bf16", "int32", "random", 0.4, 0), _cfg(64, 64, 2, 8, 1)),
        # (1, 1): products-like fused qkv in fp16 (q, k slices of [N, 3, 4, 64]), one step of 64
        "qkv_fp16": (_pt(77, 513, 4, 64, "fp16", "int64", "dst", 0.5, 1, 1), _cfg(16, 64, 2, 4, 2)),
        # (0, 1): H 3 in head groups of 2 (the second group's second head past H), D 24 -> 8-wide steps x 3
        "h3_fp32": (_pt(40, 333, 3, 24, "fp32", "int32", "random", 0.8, 1), _cfg(32, 8, 2, 2, 1)),
        # (1, 0): D 100 in 64 + 36 (a short last step), bf16, 2 heads, prefetched
        "d100_bf16": (_pt(33, 300, 2, 100, "bf16", "int64", "random", 0.6, 1), _cfg(16, 64, 1, 4, 2)),
        # (0, 0): H 3 in a group of 4 (one program), D 7 (TILE_D 8, masked), fp16, 8 warps
        "h3_d7_fp16": (_pt(25, 129, 3, 7, "fp16", "int32", "dst", 0.9, 0), _cfg(64, 16, 4, 8, 2)),
        # (1, 1): HEADS 2 clamped to 1 over H 1; D 1 (TILE_D 1): a scalar product an edge
        "scalar_d1_fp32": (_pt(37, 301, 1, 1, "fp32", "int64", "random", 0.9, 0), _cfg(32, 64, 2, 4, 1)),
        # (1, 0): D 40 in 32 + 8, edge_index as [E, 2] pairs (stride-2 rows), q a slice of a NaN-padded buffer
        "strided_pairs_fp16": (_pt(23, 211, 2, 40, "fp16", "int64", "dst", 0.7, 1), _cfg(8, 32, 1, 2, 1)),
        # (1, 1): 5 edges: one partial block of 64; D 128 in 8 steps of 16
        "tiny_bf16": (_pt(3, 5, 2, 128, "bf16", "int64", "random", 0.5, 1), _cfg(64, 16, 2, 4, 2)),
        # (1, 1): a hub (zipf 1.3) over 17 nodes: edges share rows; 8 heads of 32 in groups of 1, 16 edges
        "hub_fp32": (_pt(17, 400, 8, 32, "fp32", "int32", "dst", 1.3, 1), _cfg(16, 32, 1, 8, 2)),
    },
}
STRIDED, QKV, TINY = "strided_pairs_fp16", "qkv_fp16", "tiny_bf16"
PAD_H = 2

# configs compiled on sm_90 at each point (BASELINE first): the largest tiles prefetched on 4 warps (the
# most registers and shared memory), the narrowest steps on 8 warps
COMPILE_CFGS = {0: [_cfg(32, 64, 1, 4, 1), _cfg(64, 64, 2, 4, 2), _cfg(16, 16, 1, 8, 2)],
                1: [_cfg(32, 64, 1, 4, 1), _cfg(64, 64, 2, 4, 2)],
                2: [_cfg(32, 64, 1, 4, 1), _cfg(64, 64, 2, 4, 2), _cfg(64, 16, 2, 8, 1)]}
SM120_CFGS = [_cfg(32, 64, 1, 4, 1), _cfg(64, 64, 1, 4, 2), _cfg(16, 16, 2, 8, 2)]


def _pow2(v: int) -> int:
    return 1 << max(0, (v - 1).bit_length())


def _flags(p, c):
    """(EVEN_H, EVEN_D, TILE_H, head groups, TILE_D, feature steps, edge blocks) of a case."""
    th = min(c["HEADS"], _pow2(p["H"]))
    td = min(c["BLOCK_D"], _pow2(p["D"]))
    return (int(p["H"] % th == 0), int(p["D"] % td == 0), th, -(-p["H"] // th), td, -(-p["D"] // td),
            -(-p["E"] // c["BLOCK_E"]))


def _smem_bound(cfg, p) -> int:
    """An upper bound of a config's shared memory: num_stages - 1 prefetched steps of the two gathered tiles
    (BLOCK_E x TILE_H x TILE_D elements each) plus one fp32 [BLOCK_E, TILE_H] reduction scratch tile and the
    ids (16 B an edge)."""
    th = min(cfg["HEADS"], _pow2(p["H"]))
    td = min(cfg["BLOCK_D"], _pow2(p["D"]))
    e = 4 if p["dtype"] == "fp32" else 2
    return (cfg["num_stages"] - 1) * 2 * cfg["BLOCK_E"] * th * td * e + cfg["BLOCK_E"] * (4 * th + 16)


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """STRIDED: edge_index stored as [E, 2] pairs, q a head slice of a NaN-filled [N, H + PAD_H, D + 3]
    buffer. Then copies of the inputs, to check they are left alone."""
    import torch

    if name == STRIDED:
        inputs["edge_index"] = inputs["edge_index"].t().contiguous().t()
        q = inputs["q"]
        N, Hh, D = q.shape
        buf = torch.full((N, Hh + PAD_H, D + 3), float("nan"), dtype=q.dtype)
        buf[:, 1:1 + Hh, 2:2 + D] = q
        inputs["q"] = buf[:, 1:1 + Hh, 2:2 + D]
    for k in ("edge_index", "q", "k"):
        inputs[k + "0"] = inputs[k].clone()


# ----------------------------------------------------------------- the pytest side
def _results() -> dict:
    return H.interpreter_results(HERE, KERNEL)


@pytest.mark.parametrize("name", list(CASES[KERNEL]))
def test_example_matches_reference(name):
    res = _results()[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    p = CASES[KERNEL][name][0]
    E, Hh, D = p["E"], p["H"], p["D"]
    assert res["n_bad"] == 0, H.mismatch(res, f"{name} launch")
    assert res["shape"] == [E, Hh] and res["dtype"] == p["dtype"] and res["out_strides"] == [Hh, 1], res
    assert res["n_loose"] == 0, res                 # D u S + the output's rounding: any summation order
    assert res["inputs_unchanged"] is True and res["nonzero"] is True, res
    assert res["scale"] == pytest.approx(1 / math.sqrt(D) if p["scale"] else 1.0), res
    assert res["baseline"]["n_bad"] == 0, H.mismatch(res["baseline"], f"{name} torch_baseline")
    assert res["default_scale_ok"] is True, res
    if Hh == 1:
        assert res["two_d_ok"] is True, res
    if name == STRIDED:
        assert res["ei_strides"] == [1, 2] and res["q_strides"] == [(Hh + PAD_H) * (D + 3), D + 3, 1], res
    if name == QKV:
        assert res["q_strides"] == [3 * Hh * D, D, 1] and res["k_strides"] == [3 * Hh * D, D, 1], res
    if name == "hub_fp32":
        assert res["top_share"] > 0.2, res


def test_cases_cover_every_code_path():
    """EVEN_H x EVEN_D all four ways, every dtype, both id dtypes and edge orders; a clamped head group, a
    head group with heads past H, several feature steps with a short last one, one step; E below one block
    and a partial last block; D 1, H 1; fused qkv and strided ids; scale on / off; every sweep value of
    every tunable, and BLOCK_E 8, BLOCK_D 8 / 32, HEADS 4, 2 warps."""
    H.assert_tunables_covered(CASES)
    mod = load_example(KERNEL)
    cases = list(CASES[KERNEL].values())
    assert {p["dtype"] for p, _ in cases} == set(mod.DTYPES)
    assert {p["ids"] for p, _ in cases} == set(mod.ID_DTYPES) and {p["order"] for p, _ in cases} == set(mod.ORDERS)
    fl = [(p, c, _flags(p, c)) for p, c in cases]
    assert {f[:2] for _, _, f in fl} == set(itertools.product((0, 1), repeat=2))
    assert any(c["HEADS"] > f[2] for _, c, f in fl)                            # clamped to next_pow2(H)
    assert any(f[3] * f[2] > p["H"] for p, _, f in fl)                         # heads past H in a group
    assert any(f[5] > 1 and p["D"] % f[4] for p, _, f in fl) and any(f[5] == 1 for _, _, f in fl)
    assert any(f[5] >= 8 for _, _, f in fl)
    assert any(p["E"] < c["BLOCK_E"] for p, c in cases)
    assert any(f[6] > 1 and p["E"] % c["BLOCK_E"] for p, c, f in fl)
    assert any(p["D"] == 1 for p, _ in cases) and any(p["H"] == 1 for p, _ in cases)
    assert {p["qkv"] for p, _ in cases} == {0, 1} and {p["scale"] for p, _ in cases} == {0, 1}
    for k, vals in SWEEP_AXES.items():
        assert {c[k] for _, c in cases} >= set(vals), k
    assert 8 in {c["BLOCK_E"] for _, c in cases} and {8, 32} <= {c["BLOCK_D"] for _, c in cases}
    assert 4 in {c["HEADS"] for _, c in cases} and 2 in {c["num_warps"] for _, c in cases}


def _cfgs():
    return [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]


def test_launcher_hooks_agree_with_shapes():
    """At every point and sweep config: example_args (ROW and COL with data on the CPU -- the rows of
    make_inputs' seed-0 edge_index --, q, k and out on meta) with the launch's shapes, dtypes and strides, the
    flags, TILE_H and TILE_D; the grid (edge blocks x head groups) and the loop length; bytes_moved / flops;
    the index data under 30M elements; 0.3-7.5 GB of gathered rows a point."""
    import torch

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "example_args", "torch_baseline", "sddmm_edge_scores", "zipf_nodes", "tile_h", "tile_d"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert not hasattr(mod, "cta_iterations") and not hasattr(mod, "secondary_kernels")
    assert len(mod.POINTS) == 3 and mod.ROLE == ROLE and mod.SWEEP_AXES == SWEEP_AXES
    dts = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
    its = {"int32": torch.int32, "int64": torch.int64}
    for p in mod.POINTS:
        N, E, Hh, D = p["N"], p["E"], p["H"], p["D"]
        ei = mod._edges(mod._items(mod._check_point(p)), 0)
        assert ei.shape == (2, E) and ei.dtype == its[p["ids"]] and ei.device.type == "cpu"
        assert 0 <= int(ei.min()) and int(ei.max()) < N
        assert 2 * E <= 30_000_000
        ns = 3 * Hh * D if p["qkv"] else Hh * D
        for cfg in _cfgs():
            a = mod.example_args(cfg, p)
            data = {k for k, v in a.items() if getattr(v, "device", None) is not None and v.device.type == "cpu"}
            assert data == {"ROW", "COL"}, data
            assert all(v.device.type == "meta" for k, v in a.items() if hasattr(v, "device") and k not in data)
            assert torch.equal(a["ROW"], ei[0]) and torch.equal(a["COL"], ei[1])
            assert a["ROW"].dtype == its[p["ids"]] and (a["stride_row"], a["stride_col"]) == (1, 1)
            for t in ("Q", "K"):
                assert a[t].shape == (N, Hh, D) and a[t].dtype == dts[p["dtype"]]
                assert a[t].stride() == (ns, D, 1)
            assert (a["sq_n"], a["sq_h"], a["sk_n"], a["sk_h"]) == (ns, D, ns, D)
            assert a["OUT"].shape == (E, Hh) and a["OUT"].dtype == dts[p["dtype"]]
            assert a["scale"] == pytest.approx(1 / math.sqrt(D) if p["scale"] else 1.0)
            th, td = min(cfg["HEADS"], _pow2(Hh)), min(cfg["BLOCK_D"], _pow2(D))
            assert (a["TILE_H"], a["TILE_D"]) == (th, td) == (mod.tile_h(Hh, cfg["HEADS"]),
                                                               mod.tile_d(D, cfg["BLOCK_D"]))
            assert (a["EVEN_H"], a["EVEN_D"]) == (int(Hh % th == 0), int(D % td == 0))
            assert (a["E"], a["H"], a["D"], a["BLOCK_E"], a["NUM_STAGES"]) == (E, Hh, D, cfg["BLOCK_E"],
                                                                              cfg["num_stages"])
            assert mod.grid(cfg, p) == -(-E // cfg["BLOCK_E"]) * -(-Hh // th)
            assert mod.loop_iterations(cfg, p) == -(-D // td)
        ib, e = (4 if p["ids"] == "int32" else 8), (4 if p["dtype"] == "fp32" else 2)
        assert mod.bytes_moved(p) == 2 * E * ib + 2 * N * Hh * D * e + E * Hh * e
        assert mod.flops(p) == 2 * E * Hh * D + E * Hh
        gathered = 2 * E * Hh * D * e
        assert 0.3e9 <= gathered <= 7.5e9, (p, gathered)
        assert 50e-6 <= max(gathered / 10e12, mod.bytes_moved(p) / 3.0e12) <= 20e-3
    # the points differ: fp32 8 x 32 sorted, bf16 1 x 128 random (int32 ids), fp16 4 x 64 fused qkv
    P = mod.POINTS
    assert [(p["H"], p["D"]) for p in P] == [(8, 32), (1, 128), (4, 64)]
    assert [p["dtype"] for p in P] == ["fp32", "bf16", "fp16"] and {p["ids"] for p in P} == set(mod.ID_DTYPES)
    assert {p["order"] for p in P} == set(mod.ORDERS) and [p["qkv"] for p in P] == [0, 0, 1]


def test_hooks_on_small_points_and_inputs():
    """make_inputs: shapes, dtypes, the seed, the order, the power law, the fused qkv slices; reference and
    torch_baseline by hand on a 3-node graph; the wrapper's 2-d form, empty inputs; tile_h / tile_d; grid /
    loop / bytes / flops by hand."""
    import torch

    mod = load_example(KERNEL)
    p = _pt(40, 500, 2, 12, "bf16", "int32", "dst", 0.8, 1, 0)
    inp = mod.make_inputs(p, seed=1, device="cpu")
    ei, q, k = inp["edge_index"], inp["q"], inp["k"]
    assert ei.shape == (2, 500) and ei.dtype == torch.int32 and ei.is_contiguous()
    assert q.shape == k.shape == (40, 2, 12) and q.dtype == k.dtype == torch.bfloat16 and q.is_contiguous()
    assert inp["scale"] == pytest.approx(1 / math.sqrt(12))
    assert int(ei.min()) >= 0 and int(ei.max()) < 40
    key = ei[0].long() * 40 + ei[1].long()
    assert bool((key[1:] >= key[:-1]).all())                               # sorted by (row, col)
    assert torch.equal(mod.make_inputs(p, seed=1, device="cpu")["edge_index"], ei)
    assert not torch.equal(mod.make_inputs(p, seed=2, device="cpu")["edge_index"], ei)
    assert 0.8 < float(q.float().std()) < 1.2 and not torch.equal(q, k)
    r = mod.make_inputs(_pt(30, 4000, 4, 8, "fp16", "int64", "random", 0.0, 0, 1), seed=3, device="cpu")
    assert r["scale"] == 1.0 and r["edge_index"].dtype == torch.int64
    assert r["q"].shape == (30, 4, 8) and r["q"].stride() == (96, 8, 1) and r["k"].stride() == (96, 8, 1)
    assert r["k"].data_ptr() - r["q"].data_ptr() == 32 * 2                  # the next slice of one qkv buffer
    k2 = r["edge_index"][0] * 30 + r["edge_index"][1]
    assert not bool((k2[1:] >= k2[:-1]).all())                             # random order: not sorted
    counts = torch.bincount(r["edge_index"][0], minlength=30)
    assert int(counts.min()) > 60                                          # zipf 0: uniform
    # the power law: zipf_nodes at s = 1 over 2 ranks: p(rank 0) = log(2) / log(3), mapped through perm
    import numpy as np
    rng = np.random.Generator(np.random.PCG64(0))
    ids = mod.zipf_nodes(20000, 2, 1.0, rng, np.array([1, 0]))
    assert abs(float((ids == 1).mean()) - math.log(2) / math.log(3)) < 0.02
    ids = mod.zipf_nodes(20000, 4, 0.0, rng, np.arange(4))
    assert int(np.bincount(ids, minlength=4).min()) > 4500
    # by hand: edges (row, col) 0-1, 2-1, 1-1, 2-0; 2 heads of 2
    q = torch.tensor([[[1.0, 2.0], [0.0, 1.0]], [[3.0, -1.0], [2.0, 2.0]], [[0.5, 0.5], [-1.0, 4.0]]])
    k = torch.tensor([[[2.0, 0.0], [1.0, 1.0]], [[1.0, 1.0], [3.0, -2.0]], [[9.0, 9.0], [9.0, 9.0]]])
    ei = torch.tensor([[0, 2, 1, 2], [1, 1, 1, 0]])
    small = {"edge_index": ei, "q": q, "k": k, "scale": 0.5}
    want = torch.tensor([[3.0, -2.0], [1.0, -11.0], [2.0, 2.0], [1.0, 3.0]]) * 0.5
    assert torch.equal(mod.reference(small), want) and mod.reference(small).dtype == torch.float32
    assert torch.equal(mod.torch_baseline(small), want)
    # the wrapper on no edges: an empty [0, H]; tile clamps
    e0 = mod.sddmm_edge_scores(q, k, ei[0, :0], ei[1, :0])
    assert e0.shape == (0, 2) and e0.dtype == torch.float32
    assert [mod.tile_h(Hh, 2) for Hh in (1, 2, 3, 8)] == [1, 2, 2, 2] and mod.tile_h(3, 8) == 4
    assert [mod.tile_d(D, 64) for D in (1, 7, 24, 64, 100, 128)] == [1, 8, 32, 64, 64, 64]
    assert mod.tile_d(32, 16) == 16
    # hooks by hand: E 1000 in blocks of 32 (32 blocks) x H 3 in groups of 2 (2); D 100 in 64-wide steps (2)
    hp = _pt(70, 1000, 3, 100, "fp16", "int32", "random", 0.5, 1, 0)
    assert mod.grid(_cfg(32, 64, 2), hp) == 32 * 2 and mod.grid(_cfg(32, 64, 1), hp) == 32 * 3
    assert mod.grid(_cfg(64, 16, 4), hp) == 16 and mod.loop_iterations(_cfg(64, 16, 4), hp) == 7
    assert mod.loop_iterations(_cfg(32, 64), hp) == 2
    # ids 2 x 1000 x 4, q and k 2 x 70 x 3 x 100 x 2, out 1000 x 3 x 2
    assert mod.bytes_moved(hp) == 8000 + 84000 + 6000
    assert mod.bytes_moved(dict(hp, ids="int64", dtype="fp32")) == 16000 + 168000 + 12000
    assert mod.flops(hp) == 2 * 1000 * 3 * 100 + 3000


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    q = torch.ones(10, 2, 8)
    k = torch.ones(10, 2, 8)
    ids = torch.zeros(20, dtype=torch.int64)
    with pytest.raises(ValueError, match="BLOCK_E=48"):
        mod.sddmm_edge_scores(q, k, ids, ids, BLOCK_E=48)
    with pytest.raises(ValueError, match="BLOCK_D=0"):
        mod.sddmm_edge_scores(q, k, ids, ids, BLOCK_D=0)
    with pytest.raises(ValueError, match="HEADS=3"):
        mod.sddmm_edge_scores(q, k, ids, ids, HEADS=3)
    with pytest.raises(ValueError, match="8192"):
        mod.sddmm_edge_scores(q, k, ids, ids, BLOCK_E=128, BLOCK_D=64, HEADS=2)
    with pytest.raises(ValueError, match="num_warps=3"):
        mod.sddmm_edge_scores(q, k, ids, ids, num_warps=3)
    with pytest.raises(ValueError, match="num_stages=0"):
        mod.sddmm_edge_scores(q, k, ids, ids, num_stages=0)
    with pytest.raises(ValueError, match=r"expected q \[N_q, H, D\]"):
        mod.sddmm_edge_scores(q[0, 0], k, ids, ids)
    with pytest.raises(ValueError, match="fp32 / bf16 / fp16"):
        mod.sddmm_edge_scores(q.double(), k.double(), ids, ids)
    with pytest.raises(ValueError, match="one dtype"):
        mod.sddmm_edge_scores(q, k.half(), ids, ids)
    with pytest.raises(ValueError, match="same heads and head dim"):
        mod.sddmm_edge_scores(q, k[:, :, :4], ids, ids)
    with pytest.raises(ValueError, match="row must be a 1-d int32 / int64"):
        mod.sddmm_edge_scores(q, k, ids.float(), ids)
    with pytest.raises(ValueError, match="col must be a 1-d int32 / int64"):
        mod.sddmm_edge_scores(q, k, ids, ids[:, None])
    with pytest.raises(ValueError, match="same E edges"):
        mod.sddmm_edge_scores(q, k, ids, ids[:5])
    with pytest.raises(ValueError, match="scale=nan"):
        mod.sddmm_edge_scores(q, k, ids, ids, float("nan"))
    with pytest.raises(ValueError, match="col must be on"):
        mod.sddmm_edge_scores(q, k, ids, ids.to("meta"))
    big = torch.empty((2**31,), dtype=torch.int32, device="meta")
    with pytest.raises(ValueError, match="int32 edge offsets"):
        mod.sddmm_edge_scores(q.to("meta"), k.to("meta"), big, big)
    base = _pt(4, 8, 2, 4)
    with pytest.raises(ValueError, match="dtype 'fp64'"):
        mod.make_inputs(dict(base, dtype="fp64"), device="cpu")
    with pytest.raises(ValueError, match="ids 'int16'"):
        mod.bytes_moved(dict(base, ids="int16"))
    with pytest.raises(ValueError, match="E=0"):
        mod.grid(mod.BASELINE, dict(base, E=0))
    with pytest.raises(ValueError, match="H=2.0"):
        mod.flops(dict(base, H=2.0))
    with pytest.raises(ValueError, match="qkv=2"):
        mod.flops(dict(base, qkv=2))
    with pytest.raises(ValueError, match="scale=-1"):
        mod.bytes_moved(dict(base, scale=-1))
    with pytest.raises(ValueError, match="order 'src'"):
        mod.example_args(mod.BASELINE, dict(base, order="src"))
    with pytest.raises(ValueError, match="zipf=-1"):
        mod.make_inputs(dict(base, zipf=-1), device="cpu")
    with pytest.raises(ValueError, match="E=3000000000"):
        mod.bytes_moved(dict(base, E=3000000000))
    with pytest.raises(ValueError, match="BLOCK_D=96"):
        mod.grid(dict(mod.BASELINE, BLOCK_D=96), mod.POINTS[0])
    with pytest.raises(ValueError, match="HEADS=0"):
        mod.loop_iterations(dict(mod.BASELINE, HEADS=0), mod.POINTS[0])


def test_sweep_fits_the_points():
    """The study sweep: 48 configs (BLOCK_E 16 / 32 / 64 x BLOCK_D 16 / 64 x HEADS 1 / 2 x 4 / 8 warps x
    num_stages 1 / 2: tiles of 256-8192 elements, 1-64 a thread) with BASELINE among them; at every point
    each config is valid, launches >= 4 waves of programs on an H100 (29,376 at the fewest: 940k products
    edges in blocks of 64 x 2 head groups) and its shared-memory bound (num_stages - 1 prefetched steps of
    the two tiles plus the reduction scratch, at most 33.5 KiB) fits sm_90's 227 KiB. (Every config was
    compiled for sm_90 at every point with triton 3.6.0 and 3.9.0: all compile; none spills under 3.9, one under 3.6 (64 x 2 x 32 fp32 at arxiv, 8 warps, num_stages 1: 2 spills at 48 registers); registers
    25-80 under 3.6 and 24-78 under 3.9; shared memory 0-32 KiB under 3.6 and 32 B-32 KiB under 3.9, the most for
    the prefetched 64 x 2 x 32 fp32 tiles at arxiv and 64 x 2 x 64 fp16 tiles at products.)"""
    mod = load_example(KERNEL)
    axes = SWEEP_AXES
    assert set(axes) == set(mod.TUNABLES) and mod.SWEEP_AXES == axes
    assert all(len(v) >= 2 for v in axes.values())
    cfgs = _cfgs()
    assert 48 <= len(cfgs) <= 72 and mod.BASELINE in cfgs
    fewest = min(mod.grid(c, p) for p in mod.POINTS for c in cfgs)
    assert fewest == 29376
    for p in mod.POINTS:
        for c in cfgs:
            mod._check_cfg(c)
            th, td = mod.tile_h(p["H"], c["HEADS"]), mod.tile_d(p["D"], c["BLOCK_D"])
            assert 1 <= c["BLOCK_E"] * th * td // (32 * c["num_warps"]) <= 64, (p, c)
            assert 4 * H100_SMS <= mod.grid(c, p) < 2**31, (p, c)
            assert _smem_bound(c, p) <= 34 * 1024 <= SM90_SMEM_PER_BLOCK, (p, c)


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
    """On sm_90 at each point: BASELINE, the largest tiles prefetched on 4 warps (the most registers and
    shared memory) and narrow steps on 8 warps compile without spills, their shared memory within the bound;
    the prefetched steps stage both gathered tiles in shared memory."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    assert COMPILE_CFGS[0][0] == mod.BASELINE
    for pi, cfgs in COMPILE_CFGS.items():
        p = mod.POINTS[pi]
        for cfg in cfgs:
            res = compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch="sm_90",
                                 num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
            assert res.status == "ok", f"{cfg} at point {pi} on sm_90: {res.status}: {res.message}"
            assert 0 < res.n_regs <= 255 and res.n_spills == 0, (pi, cfg, res.n_regs, res.n_spills)
            assert res.shared <= _smem_bound(cfg, p), (pi, cfg, res.shared)
            if cfg["num_stages"] > 1:
                th, td = mod.tile_h(p["H"], cfg["HEADS"]), mod.tile_d(p["D"], cfg["BLOCK_D"])
                e = 4 if p["dtype"] == "fp32" else 2
                assert res.shared >= 2 * cfg["BLOCK_E"] * th * td * e, (pi, cfg, res.shared)


@pytest.mark.slow
def test_example_compiles_sm120(shared_cache):
    """On sm_120 (99 KiB a block): BASELINE, the largest tile prefetched and narrow steps on 8 warps compile
    at the first point (ogbn-arxiv, fp32, 8 heads of 32) without spills within the shared-memory bound."""
    mod = load_example(KERNEL)
    for cfg, res in H.compile_results(KERNEL, SM120_CFGS, "sm_120"):
        assert res.status == "ok", f"{cfg} on sm_120: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.n_spills == 0, (cfg, res.n_regs, res.n_spills)
        assert res.shared <= min(_smem_bound(cfg, mod.POINTS[0]), SM120_SMEM_PER_BLOCK), (cfg, res.shared)


# ----------------------------------------------------------------- the subprocess side
def _run() -> None:
    """Every case through launch against reference (the harness's tolerance) and against the summation
    bound; the wrapper's 2-d form and default scale; torch_baseline against reference; the output's layout,
    the inputs unchanged; one JSON line."""
    import torch

    H.patch_interpreter_bf16_rounding()
    H.patch_interpreter_index()
    mod = load_example(KERNEL)

    def same(a, b):
        if not a.is_floating_point():
            return torch.equal(a, b)
        return torch.equal(a.isnan(), b.isnan()) and torch.equal(a.nan_to_num(7.0), b.nan_to_num(7.0))

    def extra(name, point, inputs, out, ref):
        cfg = CASES[KERNEL][name][1]
        ei, q, k, sc = inputs["edge_index"], inputs["q"], inputs["k"], inputs["scale"]
        D = q.shape[2]
        S = (q.double()[ei[0].long()] * k.double()[ei[1].long()]).abs().sum(-1) * sc
        bound = D * U32 * S * 1.0001 + U_OUT[point["dtype"]] * ref.double().abs() + 1e-30
        loose = (out.double() - ref.double()).abs() > bound
        # scale None: 1 / sqrt(D)
        dflt = mod.sddmm_edge_scores(q, k, ei[0], ei[1], **cfg)
        want = mod.reference(dict(inputs, scale=1 / math.sqrt(D)))
        dflt_ok = H.compare(dflt, want, point["dtype"])["n_bad"] == 0
        two_d = None
        if q.shape[1] == 1:
            o2 = mod.sddmm_edge_scores(q[:, 0], k[:, 0], ei[0], ei[1], sc, **cfg)
            two_d = bool(o2.shape == out.shape and torch.equal(o2, out))
        dt = {torch.float32: "fp32", torch.bfloat16: "bf16", torch.float16: "fp16"}.get(out.dtype, str(out.dtype))
        top = int(torch.bincount(ei[0].long()).max()) / max(ei.shape[1], 1)
        return {"dtype": dt, "out_strides": list(out.stride()), "n_loose": int(loose.sum()),
                "nonzero": bool((ref != 0).any()), "scale": sc,
                "inputs_unchanged": all(same(inputs[k_], inputs[k_ + "0"]) for k_ in ("edge_index", "q", "k")),
                "default_scale_ok": bool(dflt_ok), "two_d_ok": two_d, "top_share": top,
                "ei_strides": list(ei.stride()), "q_strides": list(q.stride()), "k_strides": list(k.stride())}

    H.run_cases(KERNEL, CASES[KERNEL], prepare=_prepare, baseline=True, extra=extra)


if __name__ == "__main__":
    _run()
