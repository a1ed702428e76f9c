"""examples/sinkhorn_knopp.py (batched log-domain Sinkhorn-Knopp: logits [Bt, N, M] fp32 / bf16 / fp16,
any strides -> ITERS alternating row / column log-sum-exp normalizations towards optional marginals ->
the plan P = exp(alpha X + f + g) in the logits' dtype and optionally the potentials f, g in fp32;
MATS whole matrices a program in registers, two tile layouts, the exact max or the previous pass's
bound as the log-sum-exp's shift) against its torch reference on the CPU through Triton's interpreter,
its launcher hooks against the shapes, its study sweep against the points, and a compile for sm_90 and
sm_120 from its own ``example_args``.

As in test_examples_round26_c.py the interpreter cases run in a subprocess (this file run as a script:
``python tests/test_examples_round27_d.py sinkhorn_knopp``) that prints one JSON line. The subprocess
installs the harness's interpreter fixes (bf16 rounding; triton 3.6's runtime loop bounds under numpy
>= 2.3).

Shapes are small, odd and ragged: 4 x 4 matrices many a program (an mHC block read in place from a
[Bt, 24] buffer whose other columns are NaN: a stray read poisons the result), rectangular 32 x 64
and 45 x 12 / 6 x 10 / 5 x 3 / 3 x 1 / 1 x 7 ones, 25 x 25 (DeepEMD's, padded to 32 x 32) and 128 x
128 (the largest a program holds, bigger than TILE: one matrix a program); EVEN_N x EVEN_M all four
ways; a batch that MATS does not divide and one smaller than MATS; the column stride 1 with rows
aligned to the vector (X_VEC > 1), unaligned (X_VEC 1) and not 1 (a transposed view: X_VEC 0); one
cost matrix shared by the batch (batch stride 0); marginals none / rows only ([N], shared) / columns
only ([M], shared, one of them 0) / both per matrix, one matrix's spread past SAFE_SPREAD (SHIFT 1's
programs then take the exact loop, the others not); rows and columns of -inf logits; alpha negative
(costs); ITERS 0, 1 and up to 20; the potentials written or not; fp32, bf16, fp16; TILE 64-4096,
LAYOUT 0 / 1, SHIFT 0 / 1, UNROLL 1 / 2, 4-16 warps, num_stages 1 / 2.

Per case: launch's P against the float64 reference within the dtype's tolerance (the harness's
per-element check) and each element within a few ulps of its dtype of its own value; exact zeros
where a logit is -inf or a row / column is infeasible; the potentials within 1e-4 (1 + |ref|) of the
reference's and -inf exactly where the reference's are (through the wrapper with the potentials
written: P the same bits as launch's); P's shape, dtype and strides; a second launch equal bit for
bit; the inputs unchanged; torch_baseline (the eager fp32 loop) within tolerance. With SHIFT 1, the
matrices whose P and potentials equal SHIFT 0's bit for bit: all of them where a zero marginal
forces the exact loop, the far-spread matrix's program's, and not all elsewhere (the bound loop ran).
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
KERNEL = "sinkhorn_knopp"
ROLE = "held-out-27"
H200_SMS = 132
SM90_SMEM_PER_BLOCK = 227 * 1024
SM120_SMEM_PER_BLOCK = 99 * 1024

# the study's sweep (scripts/rank_study.py SWEEPS["sinkhorn_knopp"] once the lead adds it)
SWEEP_AXES = {"TILE": [2048, 4096], "LAYOUT": [0, 1], "SHIFT": [0, 1], "UNROLL": [1, 2], "num_warps": [4, 8, 16],
              "num_stages": [1]}


def _cfg(tile, layout=0, shift=0, unroll=1, w=4, st=1):
    return {"TILE": tile, "LAYOUT": layout, "SHIFT": shift, "UNROLL": unroll, "num_warps": w, "num_stages": st}


def _pt(Bt, N, M, iters, dtype="fp32", **kw):
    return {"Bt": Bt, "N": N, "M": M, "iters": iters, "dtype": dtype, **kw}


# case -> (point, cfg); comments: padded blocks, MATS = max(1, TILE // (BLOCK_N BLOCK_M)), programs
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        # mHC: 4 x 4 blocks at column 8 of a [37, 24] buffer (NaN elsewhere), rows aligned to 4 fp32
        # (X_VEC 4); MATS 4: 10 programs, the last one matrix; 20 iterations, SHIFT 1, UNROLL 2
        "mhc_slice_fp32": (_pt(37, 4, 4, 20, "fp32", x_pitch=24, x_col0=8), _cfg(64, 0, 1, 2, 4)),
        # the same blocks contiguous in bf16, the whole-rows layout: MATS 8, 3 programs (19 = 2 x 8 + 3);
        # 8 warps, num_stages 2
        "mhc_layout1_bf16": (_pt(19, 4, 4, 7, "bf16"), _cfg(128, 1, 0, 1, 8, 2)),
        # S-BASE's per-group routing: [32, 64] bf16 (X_VEC 8), MATS 1 (TILE 2048 = one matrix): 3 programs;
        # rows 1, columns 0.5; SHIFT 1 on 16 warps
        "sbase_group_bf16": (_pt(3, 32, 64, 9, "bf16"), _cfg(2048, 0, 1, 1, 16)),
        # tall and ragged: 45 x 12 padded to 64 x 16 (EVEN_N 0, EVEN_M 0), rows 12 fp16 apart (X_VEC 4);
        # MATS 2, 3 programs (5 = 2 x 2 + 1); the whole-rows layout, SHIFT 1, UNROLL 2
        "tall_ragged_fp16": (_pt(5, 45, 12, 6, "fp16"), _cfg(2048, 1, 1, 2, 4)),
        # DeepEMD's 25 x 25 (padded 32 x 32), fp16, alpha -20, per-pair marginals, potentials written;
        # rows 25 apart (X_VEC 1: unit stride, unaligned); MATS 4: 2 programs, the second 3 matrices
        "deepemd_marginals_fp16": (_pt(7, 25, 25, 15, "fp16", alpha=-20.0, marginals=1, potentials=1),
                                   _cfg(4096, 0, 1, 2, 8)),
        # one 16 x 16 grid cost shared by the batch (batch stride 0), alpha -10, per-matrix marginals,
        # potentials; MATS 2, 3 programs; the whole-rows layout on 16 warps, SHIFT 1
        "shared_cost_fp32": (_pt(6, 16, 16, 12, "fp32", alpha=-10.0, marginals=1, potentials=1, shared_cost=1),
                             _cfg(512, 1, 1, 1, 16)),
        # X a transposed view (column stride 6: X_VEC 0), 6 x 10 padded to 8 x 16 (EVEN_N 0, EVEN_M 0);
        # a row marginal shared by the batch ([N]), no column marginal; potentials; MATS 2: 2 programs
        "transposed_rowmarg_fp32": (_pt(4, 6, 10, 10, "fp32", potentials=1), _cfg(256, 0, 1, 1, 4)),
        # rows and columns of -inf logits and a shared column marginal [M] with one 0 (SHIFT 1 falls back
        # to the exact loop: infinite spread); 8 x 8 (EVEN both), MATS 4: 3 programs (9 = 2 x 4 + 1)
        "inf_rows_zero_marg_bf16": (_pt(9, 8, 8, 10, "bf16", potentials=1), _cfg(256, 0, 1, 2, 4)),
        # per-matrix marginals, matrix 3's spread ~116 bits (> SAFE_SPREAD): its program (matrices 2, 3)
        # takes the exact loop, the other three the bound; 5 x 3 padded to 8 x 4; MATS 2, 4 programs
        "wide_spread_fp32": (_pt(8, 5, 3, 8, "fp32", marginals=1, potentials=1), _cfg(64, 1, 1, 1, 8)),
        # ITERS 0: P = exp(alpha X), f = g = 0; a column vector 3 x 1 (4 x 1 padded), MATS 16 over Bt 5
        # (one program, eleven matrices masked)
        "zero_iters_fp16": (_pt(5, 3, 1, 0, "fp16", alpha=0.5, potentials=1), _cfg(64, 0, 0, 2, 8)),
        # ITERS 1 under SHIFT 1 (the peeled first iteration only: the bound loop runs 0 times); a row
        # vector 1 x 7 (N 1: rows sum 1, the one row's columns 1 / 7); MATS 4, 2 programs
        "one_iter_rowvec_bf16": (_pt(6, 1, 7, 1, "bf16"), _cfg(32, 1, 1, 2, 4)),
        # the largest matrix a program holds: 128 x 128 = 16384 elements, past TILE 2048 (MATS 1, 32
        # elements a thread on 16 warps); 2 programs, 3 iterations, SHIFT 0, UNROLL 2
        "max_matrix_fp32": (_pt(2, 128, 128, 3, "fp32"), _cfg(2048, 0, 0, 2, 16)),
    },
}
MHC, TRANSPOSED, INF, SPREAD = ("mhc_slice_fp32", "transposed_rowmarg_fp32", "inf_rows_zero_marg_bf16",
                                "wide_spread_fp32")
# configs compiled at the module's first POINT on sm_90 (BASELINE first): the whole-rows layout with
# SHIFT and UNROLL (the most code; the most registers there under triton 3.9), the coalesced one with
# SHIFT and UNROLL, 16 warps; at the other two points BASELINE and OTHER_CFG (the whole-rows layout with
# SHIFT and UNROLL on 4 warps and the smaller TILE: spill-free under 3.6 and 3.9, unlike TILE 4096 at the
# DeepEMD point under 3.9, whose ptxas spills 2 registers for an occupancy step)
COMPILE_CFGS = [_cfg(4096), _cfg(4096, 1, 1, 2, 4), _cfg(4096, 0, 1, 2, 4), _cfg(2048, 1, 1, 2, 16)]
OTHER_CFG = _cfg(2048, 1, 1, 2, 4)
SM120_CFGS = [_cfg(4096), _cfg(4096, 1, 1, 2, 8), _cfg(2048, 0, 1, 1, 16)]


def _flags(p, c):
    """(BLOCK_N, BLOCK_M, MATS, programs, EVEN_N, EVEN_M) of a case."""
    bn, bm = 1 << (p["N"] - 1).bit_length(), 1 << (p["M"] - 1).bit_length()
    mats = max(1, c["TILE"] // (bn * bm))
    return bn, bm, mats, -(-p["Bt"] // mats), int(p["N"] == bn), int(p["M"] == bm)


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """MHC: the [Bt, 24] buffer's other columns NaN; TRANSPOSED: X a transposed copy, a shared [N] row
    marginal; INF: -inf rows and columns, a shared [M] column marginal with a 0; SPREAD: matrix 3's row
    marginal 1e-35 at row 0. Then the inputs' copies, to check they are left alone."""
    import torch

    x = inputs["x"]
    Bt, N, M = x.shape
    gen = torch.Generator().manual_seed(5)
    if name == MHC:
        buf = x.as_strided((Bt, point["x_pitch"]), (point["x_pitch"], 1), x.storage_offset() - point["x_col0"])
        keep = buf[:, point["x_col0"]:point["x_col0"] + N * M].clone()
        buf.fill_(float("nan"))
        buf[:, point["x_col0"]:point["x_col0"] + N * M] = keep
    if name == TRANSPOSED:
        inputs["x"] = x.transpose(1, 2).contiguous().transpose(1, 2)
        inputs["a"] = 0.5 + torch.rand((N,), generator=gen)
    if name == INF:
        x = x.clone()
        x[1, 3, :] = float("-inf")                  # a row of -inf: f -inf, P's row 0
        x[4, :, 6] = float("-inf")                  # a column of -inf: g -inf
        x[8, 0, 0] = x[8, 5, 2] = float("-inf")     # single entries
        inputs["x"] = x
        b = 0.5 + torch.rand((M,), generator=gen)
        b[2] = 0.0                                  # an empty column: g -inf everywhere
        inputs["b"] = b
    if name == SPREAD:
        inputs["a"][3, 0] = 1e-35
    inputs["x0"] = inputs["x"].clone()
    inputs["a0"] = None if inputs["a"] is None else inputs["a"].clone()
    inputs["b0"] = None if inputs["b"] is None else inputs["b"].clone()


# ----------------------------------------------------------------- the pytest side
def _results() -> dict:
    return H.interpreter_results(HERE, KERNEL)


@pytest.mark.parametrize("name", list(CASES[KERNEL]))
def test_example_matches_reference(name):
    res = _results()[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    p = CASES[KERNEL][name][0]
    Bt, N, M = p["Bt"], p["N"], p["M"]
    assert res["n_bad"] == 0, H.mismatch(res, f"{name} launch")
    assert res["dtype"] == p["dtype"] and res["shape"] == [Bt, N, M] and res["out_strides"] == [N * M, M, 1], res
    assert res["n_loose"] == 0, res                        # each element within a few ulps of its own value
    assert res["n_zero_mismatch"] == 0 and res["n_nonfinite"] == 0, res
    assert res["deterministic"] is True and res["inputs_unchanged"] is True, res
    assert res["baseline"]["n_bad"] == 0, H.mismatch(res["baseline"], f"{name} torch_baseline")
    # the wrapper's potentials (every case: WRITE_POT 1 beside launch's own setting, P the same bits)
    assert res["pot"]["dtypes"] == ["fp32", "fp32"] and res["pot"]["shapes"] == [[Bt, N], [Bt, M]], res
    assert res["pot"]["n_inf_mismatch"] == 0 and res["pot"]["n_loose"] == 0, res["pot"]
    assert res["p_equal_with_potentials"] is True, res
    if name == MHC:
        assert res["x_strides"] == [24, 4, 1], res
        assert res["col_sum_err"] < 1e-5 and res["row_sum_err"] < 1e-4, res     # doubly stochastic
    if name == TRANSPOSED:
        assert res["x_strides"][2] == N and res["x_strides"][1] == 1, res
    if name == INF:
        assert res["n_ref_zero"] >= N + Bt and res["pot"]["n_inf"] >= Bt + 1, res
    if name == SPREAD:
        # matrix 3's program (matrices 2 and 3) took the exact loop, the others the bound
        assert res["spread_bits"] > 100 and {2, 3} <= set(res["exact_mats"]) != set(range(Bt)), res
    if name == INF:
        assert res["exact_mats"] == list(range(Bt)), res                # a zero marginal: all exact
    if CASES[KERNEL][name][1]["SHIFT"] and p["iters"] >= 2 and name not in (INF, SPREAD):
        assert len(res["exact_mats"]) < Bt, res                         # the bound loop ran
    if p["iters"] == 0:
        assert res["pot"]["max_abs"] == 0.0, res


def test_cases_cover_every_code_path():
    """Every tunable at each of its sweep values; the three dtypes; EVEN_N x EVEN_M all four ways; X_VEC
    0, 1 and > 1; the four (HAS_A, HAS_B) and both WRITE_POT; one program of several matrices and
    matrices past TILE; a batch MATS does not divide; ITERS 0 / 1 / many under both SHIFTs; a shared
    cost, a slice, a transposed view."""
    import torch

    H.assert_tunables_covered(CASES)
    mod = load_example(KERNEL)
    cases = CASES[KERNEL]
    assert {p["dtype"] for p, _ in cases.values()} == set(mod.DTYPES)
    fl = {n: _flags(p, c) for n, (p, c) in cases.items()}
    assert {(f[4], f[5]) for f in fl.values()} == {(0, 0), (0, 1), (1, 0), (1, 1)}
    assert any(f[2] >= 8 for f in fl.values())
    assert any(fl[n][0] * fl[n][1] > c["TILE"] for n, (_, c) in cases.items())
    assert any(p["Bt"] % f[2] for (p, _), f in zip(cases.values(), fl.values()))
    assert any(p["Bt"] < f[2] for (p, _), f in zip(cases.values(), fl.values()))
    # the launch's constexprs, from the wrapper's own argument builder on meta tensors
    seen = set()
    for name, (p, c) in cases.items():
        inp = mod.make_inputs(p, seed=0, device="meta")
        x = inp["x"]
        if name == TRANSPOSED:
            x = torch.empty_strided(x.shape, (x.shape[1] * x.shape[2], 1, x.shape[1]), dtype=x.dtype, device="meta")
        a = torch.empty((p["N"],), device="meta") if name == TRANSPOSED else inp["a"]
        b = torch.empty((p["M"],), device="meta") if name == INF else inp["b"]
        pot = torch.empty((p["Bt"], p["N"]), device="meta") if p.get("potentials") else None
        P = torch.empty(x.shape, dtype=x.dtype, device="meta")
        k = mod._kernel_args(x, P, a, b, pot, pot, p["iters"], p.get("alpha", 1.0), c)
        seen.add((k["X_VEC"] if k["X_VEC"] < 2 else 2, k["HAS_A"], k["HAS_B"], k["WRITE_POT"]))
    assert {s[0] for s in seen} == {0, 1, 2}
    assert {(s[1], s[2]) for s in seen} == {(0, 0), (1, 0), (0, 1), (1, 1)}
    assert {s[3] for s in seen} == {0, 1}
    its = {(p["iters"] if p["iters"] < 2 else 2, c["SHIFT"]) for p, c in cases.values()}
    assert its >= {(0, 0), (1, 1), (2, 0), (2, 1)}
    assert any(p.get("shared_cost") for p, _ in cases.values()) and any("x_pitch" in p for p, _ in cases.values())
    assert any(p.get("alpha", 1.0) < 0 for p, _ in cases.values())
    assert {c["num_stages"] for _, c in cases.values()} == {1, 2}
    for k, vals in SWEEP_AXES.items():
        assert {c[k] for _, c in cases.values()} >= set(vals), k


def test_launcher_hooks_agree_with_shapes():
    """At every point and sweep config: example_args on meta with the launch's shapes, dtypes and strides
    (the mHC block a slice of [Bt, 24], the OT point's per-pair marginals and potentials), MATS and the
    masks' constexprs, the grid and the iterations; bytes_moved / flops; the inputs well under 20 GB;
    every point 0.3-1.7 G exp2 (compute-bound: well over 50 us on an H100)."""
    import torch

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "example_args", "torch_baseline", "sinkhorn", "sinkhorn_reference"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert not hasattr(mod, "secondary_kernels") and not hasattr(mod, "cta_iterations")
    assert len(mod.POINTS) == 3 and mod.ROLE == ROLE and mod.SWEEP_AXES == SWEEP_AXES
    dts = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}
    size = {"fp16": 2, "bf16": 2, "fp32": 4}
    cfgs = [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]
    for p in mod.POINTS:
        Bt, N, M, it = p["Bt"], p["N"], p["M"], p["iters"]
        bn, bm = 1 << (N - 1).bit_length(), 1 << (M - 1).bit_length()
        marg, pot = p.get("marginals", 0), p.get("potentials", 0)
        for cfg in cfgs:
            a = mod.example_args(cfg, p)
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for v in a.values())
            assert a["X"].shape == (Bt, N, M) and a["X"].dtype == dts[p["dtype"]]
            assert a["P"].shape == (Bt, N, M) and a["P"].dtype == dts[p["dtype"]] and a["P"].is_contiguous()
            if "x_pitch" in p:
                assert a["X"].stride() == (p["x_pitch"], M, 1) and a["X"].data_ptr() == 4 * p["x_col0"]
            else:
                assert a["X"].is_contiguous()
            assert (a["stride_xb"], a["stride_xn"], a["stride_xm"]) == a["X"].stride()
            if marg:
                assert a["A"].shape == (Bt, N) and a["B"].shape == (Bt, M) and a["A"].dtype == torch.float32
                assert (a["stride_ab"], a["stride_an"], a["stride_bb"], a["stride_bm"]) == (N, 1, M, 1)
            else:
                assert a["A"] is a["P"] and a["B"] is a["P"]
            if pot:
                assert a["F"].shape == (Bt, N) and a["G"].shape == (Bt, M) and a["F"].dtype == torch.float32
            else:
                assert a["F"] is a["P"] and a["G"] is a["P"]
            mats = max(1, cfg["TILE"] // (bn * bm))
            assert (a["Bt"], a["N"], a["M"], a["ITERS"], a["MATS"], a["BLOCK_N"], a["BLOCK_M"]) == (
                Bt, N, M, it, mats, bn, bm)
            assert (a["HAS_A"], a["HAS_B"], a["WRITE_POT"], a["EVEN_N"], a["EVEN_M"]) == (
                marg, marg, pot, int(N == bn), int(M == bm))
            assert (a["LAYOUT"], a["SHIFT"], a["UNROLL"]) == (cfg["LAYOUT"], cfg["SHIFT"], cfg["UNROLL"])
            assert a["X_VEC"] == {1048576: 4, 2048: 8, 15000: 1}[Bt] and a["P_VEC"] == {4: 4, 64: 8, 25: 1}[M]
            assert math.isclose(a["scale"], p.get("alpha", 1.0) / math.log(2)) and a["lb0"] == math.log2(N / M)
            assert mod.grid(cfg, p) == (-(-Bt // mats),)
            assert mod.loop_iterations(cfg, p) == it
            assert mats * bn * bm // (32 * cfg["num_warps"]) <= 32
        e = size[p["dtype"]]
        assert mod.bytes_moved(p) == 2 * Bt * N * M * e + 4 * Bt * (N + M) * (marg + pot)
        assert mod.flops(p) == Bt * N * M * (10 * it + 4)
        exps = 2 * Bt * N * M * it
        assert 0.25e9 <= exps <= 1.8e9, p
        assert mod.bytes_moved(p) < 0.5e9
    # the points differ: the matrices' shape (tiny / wide / ragged square), the dtype, the layout of X,
    # the marginals, the potentials
    assert [(p["N"], p["M"]) for p in mod.POINTS] == [(4, 4), (32, 64), (25, 25)]
    assert [p["dtype"] for p in mod.POINTS] == ["fp32", "bf16", "fp16"]
    assert [p.get("marginals", 0) for p in mod.POINTS] == [0, 0, 1]
    assert [p.get("potentials", 0) for p in mod.POINTS] == [0, 0, 1]
    assert mod.POINTS[0]["x_pitch"] == 24 and mod.POINTS[2]["alpha"] < 0
    flags = {(mod.example_args(c, p)["EVEN_N"], mod.example_args(c, p)["EVEN_M"]) for p in mod.POINTS for c in cfgs}
    assert flags == {(1, 1), (0, 0)}                                   # DeepEMD's 25 x 25 padded to 32 x 32


def test_hooks_on_small_points_and_inputs():
    """make_inputs: shapes, dtypes, the seed, the slice, the shared cost, the marginals; reference by hand
    on a 2 x 2 case and its invariants (columns exact, rows close, doubly stochastic by default);
    torch_baseline's dtype; bytes / flops by hand."""
    import torch

    mod = load_example(KERNEL)
    p = _pt(3, 4, 4, 5, "bf16", x_pitch=24, x_col0=8)
    inp = mod.make_inputs(p, seed=1, device="cpu")
    x = inp["x"]
    assert x.shape == (3, 4, 4) and x.dtype == torch.bfloat16 and x.stride() == (24, 4, 1)
    assert x.storage_offset() == 8 and inp["a"] is None and inp["b"] is None and inp["iters"] == 5
    assert torch.equal(mod.make_inputs(p, seed=1, device="cpu")["x"], x)
    assert not torch.equal(mod.make_inputs(p, seed=2, device="cpu")["x"], x)
    q = _pt(5, 16, 9, 3, "fp16", alpha=-4.0, marginals=1, potentials=1, shared_cost=1)
    inp = mod.make_inputs(q, seed=0, device="cpu")
    assert inp["x"].stride() == (0, 9, 1) and inp["x"].dtype == torch.float16 and inp["alpha"] == -4.0
    assert float(inp["x"].min()) == 0.0 and float(inp["x"].max()) == 1.0 and inp["potentials"] is True
    assert inp["a"].shape == (5, 16) and inp["b"].shape == (5, 9) and inp["a"].dtype == torch.float32
    assert torch.allclose(inp["a"].sum(1), torch.ones(5)) and float(inp["b"].min()) > 0
    assert torch.allclose(mod._grid_cost(64, 64)[0, 9], torch.tensor(2.0 / 98.0))       # pixel (1, 1) of 8 x 8
    # by hand: X = [[0, 0], [0, log 3]], one iteration, default marginals (rows 1, columns 1)
    X = torch.tensor([[[0.0, 0.0], [0.0, math.log(3.0)]]])
    P, f, g = mod.sinkhorn_reference(X, 1)
    f_ref = torch.tensor([-math.log(2.0), -math.log(4.0)], dtype=torch.float64)
    assert torch.allclose(f[0], f_ref)
    # after the row pass P = [[1/2, 1/2], [1/4, 3/4]]: columns 3/4 and 5/4, scaled to 1
    assert torch.allclose(P[0], torch.tensor([[2 / 3, 2 / 5], [1 / 3, 3 / 5]], dtype=torch.float64))
    r = mod.reference(mod.make_inputs(_pt(4, 6, 6, 40), device="cpu"))
    assert r.dtype == torch.float32 and torch.allclose(r.sum(1), torch.ones(4, 6), atol=1e-5)
    assert torch.allclose(r.sum(2), torch.ones(4, 6), atol=1e-3)
    r = mod.reference(mod.make_inputs(_pt(2, 3, 6, 30), device="cpu"))              # columns N / M = 0.5
    assert torch.allclose(r.sum(1), torch.full((2, 6), 0.5), atol=1e-5)
    inp = mod.make_inputs(_pt(2, 5, 7, 4, "bf16"), device="cpu")
    assert mod.torch_baseline(inp).dtype == torch.bfloat16 and mod.reference(inp).shape == (2, 5, 7)
    assert mod.bytes_moved(_pt(2, 5, 7, 4, "bf16")) == 2 * 2 * 35 * 2
    assert mod.bytes_moved(q) == 16 * 9 * 2 + 5 * 16 * 9 * 2 + 4 * 5 * 25 * 2
    assert mod.flops(_pt(2, 5, 7, 4)) == 70 * 44
    assert mod.grid(_cfg(64), _pt(9, 3, 3, 1)) == (3,)              # 3 x 3 -> 4 x 4: MATS 4
    assert mod.grid(_cfg(64), _pt(9, 30, 3, 1)) == (9,)             # 32 x 4 > TILE: MATS 1


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    x = torch.zeros(2, 4, 4)
    with pytest.raises(ValueError, match="split it into groups"):
        mod.sinkhorn(torch.zeros(1, 129, 128))
    with pytest.raises(ValueError, match="split it into groups"):
        mod.grid(mod.BASELINE, _pt(8, 300, 64, 4))
    with pytest.raises(ValueError, match="raise num_warps"):
        mod.sinkhorn(torch.zeros(1, 128, 128), num_warps=2)
    with pytest.raises(ValueError, match="TILE=3000"):
        mod.sinkhorn(x, TILE=3000)
    with pytest.raises(ValueError, match="LAYOUT=2"):
        mod.sinkhorn(x, LAYOUT=2)
    with pytest.raises(ValueError, match="SHIFT=2"):
        mod.sinkhorn(x, SHIFT=2)
    with pytest.raises(ValueError, match="UNROLL=3"):
        mod.sinkhorn(x, UNROLL=3)
    with pytest.raises(ValueError, match="num_warps=3"):
        mod.sinkhorn(x, num_warps=3)
    with pytest.raises(ValueError, match="num_stages=0"):
        mod.sinkhorn(x, num_stages=0)
    with pytest.raises(ValueError, match="expected logits"):
        mod.sinkhorn(x[0])
    with pytest.raises(ValueError, match="fp32 / bf16 / fp16"):
        mod.sinkhorn(x.double())
    with pytest.raises(ValueError, match="iters=-1"):
        mod.sinkhorn(x, -1)
    with pytest.raises(ValueError, match="alpha=0"):
        mod.sinkhorn(x, alpha=0.0)
    with pytest.raises(ValueError, match="alpha=nan"):
        mod.sinkhorn(x, alpha=float("nan"))
    with pytest.raises(ValueError, match=r"row_marginal must be \[4\] or \[2, 4\]"):
        mod.sinkhorn(x, row_marginal=torch.ones(3))
    with pytest.raises(ValueError, match="col_marginal must be fp32"):
        mod.sinkhorn(x, col_marginal=torch.ones(4, dtype=torch.float16))
    wide = torch.empty((2, 5, 2**29), device="meta")[:, :, :4]      # meta: checked, never launched
    with pytest.raises(ValueError, match="int32 in-matrix offsets"):
        mod.sinkhorn(wide)
    with pytest.raises(ValueError, match="dtype 'fp8'"):
        mod.make_inputs(_pt(1, 4, 4, 1, "fp8"), device="cpu")
    with pytest.raises(ValueError, match="iters=-2"):
        mod.flops(_pt(1, 4, 4, -2))
    with pytest.raises(ValueError, match="Bt=0"):
        mod.grid(mod.BASELINE, _pt(0, 4, 4, 1))
    with pytest.raises(ValueError, match="x_pitch=10"):
        mod.example_args(mod.BASELINE, _pt(2, 4, 4, 1, x_pitch=10))
    with pytest.raises(ValueError, match="shared_cost=1 takes no x_pitch"):
        mod.example_args(mod.BASELINE, _pt(2, 4, 4, 1, x_pitch=24, shared_cost=1))
    with pytest.raises(ValueError, match="marginals=2"):
        mod.bytes_moved(_pt(2, 4, 4, 1, marginals=2))
    with pytest.raises(ValueError, match="TILE=96"):
        mod.grid(dict(mod.BASELINE, TILE=96), mod.POINTS[0])
    # nothing to do: empty outputs, nothing launched
    assert mod.sinkhorn(torch.zeros(0, 4, 4)).shape == (0, 4, 4)
    P, f, g = mod.sinkhorn(torch.zeros(3, 0, 5, dtype=torch.bfloat16), return_potentials=True)
    assert P.shape == (3, 0, 5) and P.dtype == torch.bfloat16 and f.shape == (3, 0) and g.shape == (3, 5)


def test_sweep_fits_the_points():
    """The study sweep: 48 configs (TILE 2048 / 4096 x LAYOUT 0 / 1 x SHIFT 0 / 1 x UNROLL 1 / 2 x 4 / 8 /
    16 warps, num_stages 1: nothing pipelines) with BASELINE among them; at every point each config is
    valid, holds 4-32 fp32 tile elements a thread and launches >= 4 waves of programs on an H200 (1024 at
    the fewest: S-BASE's 2048 groups 2 a program). (Every config was compiled for sm_90 at every point
    with triton 3.6.0 and 3.9: see the module doc for the registers and shared memory; none spills under
    3.6, 8 of the 144 compiles spill 2-4 registers under 3.9, at an occupancy step ptxas 12.9 chose.)"""
    mod = load_example(KERNEL)
    axes = SWEEP_AXES
    assert set(axes) == set(mod.TUNABLES) and mod.SWEEP_AXES == axes
    assert all(len(v) >= 2 for k, v in axes.items() if k != "num_stages") and axes["num_stages"] == [1]
    cfgs = [dict(zip(axes, v)) for v in itertools.product(*axes.values())]
    assert 48 <= len(cfgs) <= 72 and mod.BASELINE in cfgs
    for p in mod.POINTS:
        for c in cfgs:
            mod._check_cfg(c, p["N"], p["M"])
            (g,) = mod.grid(c, p)
            assert g >= 4 * H200_SMS, (p, c)
            bn, bm = 1 << (p["N"] - 1).bit_length(), 1 << (p["M"] - 1).bit_length()
            assert bn * bm <= c["TILE"]                                        # MATS >= 1 whole matrices
            assert 4 <= c["TILE"] // (32 * c["num_warps"]) <= 32


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
    """On sm_90: BASELINE and three more at the first point (mHC, 4 x 4 fp32 from a [T, 24] slice) compile
    without spills, those on 4 warps without shared memory (a thread holds whole matrices: no
    cross-warp reduction); BASELINE and OTHER_CFG at the other two (S-BASE's bf16 [32, 64] groups;
    DeepEMD's ragged fp16 25 x 25 with marginals and potentials), their shared memory the cross-warp
    reductions' partials (0.5-4 KiB)."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    assert COMPILE_CFGS[0] == mod.BASELINE
    for cfg, res in H.compile_results(KERNEL, COMPILE_CFGS, "sm_90"):
        assert res.status == "ok", f"{cfg} on sm_90: {res.status}: {res.message}"
        assert 0 < res.n_regs <= 255 and res.n_spills == 0, (cfg, res.n_regs, res.n_spills)
        if cfg["num_warps"] == 4:
            assert res.shared == 0, (cfg, res.shared)
    for p in mod.POINTS[1:]:
        for cfg in (COMPILE_CFGS[0], OTHER_CFG):
            res = compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch="sm_90",
                                 num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
            assert res.status == "ok" and res.n_spills == 0, (cfg, p, res.n_regs, res.n_spills, res.message)
            assert 0 < res.shared <= 16 * 1024, (cfg, res.shared)


@pytest.mark.slow
def test_example_compiles_sm120(shared_cache):
    """On sm_120 (99 KiB a block): BASELINE, the whole-rows layout with SHIFT and UNROLL on 8 warps and
    16 warps with SHIFT compile at the first point without spills, their shared memory within the
    block's."""
    for cfg, res in H.compile_results(KERNEL, SM120_CFGS, "sm_120"):
        assert res.status == "ok", f"{cfg} on sm_120: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.n_spills == 0, (cfg, res.n_regs, res.n_spills)
        assert res.shared <= SM120_SMEM_PER_BLOCK, (cfg, res.shared)


# ----------------------------------------------------------------- the subprocess side
def _run() -> None:
    """Every case through launch against reference (the harness's tolerance) and element by element
    (a few ulps of the dtype); exact zeros; the potentials through the wrapper against the reference's;
    a second launch bit for bit; the inputs unchanged; torch_baseline; one JSON line."""
    import torch

    H.patch_interpreter_bf16_rounding()
    H.patch_interpreter_index()
    mod = load_example(KERNEL)
    names = {torch.float16: "fp16", torch.bfloat16: "bf16", torch.float32: "fp32"}

    def _amax(v):
        v = v[torch.isfinite(v)]
        return float(v.abs().max()) if v.numel() else 0.0

    def extra(name, point, inputs, out, ref):
        cfg = CASES[KERNEL][name][1]
        x, a, b = inputs["x"], inputs["a"], inputs["b"]
        alpha, it = inputs.get("alpha", 1.0), inputs["iters"]
        o = out.float()
        rt = {torch.bfloat16: 2.0 ** -8, torch.float16: 2.0 ** -10, torch.float32: 1e-4}[out.dtype]
        loose = (o - ref).abs() > rt * ref.abs() + 1e-6 * float(ref.abs().max())
        zero_mismatch = (ref == 0) & (o != 0)          # exact zeros stay zero (tiny values may underflow)
        same = torch.equal(x, inputs["x0"]) and all(
            (v is None and v0 is None) or torch.equal(v, v0) for v, v0 in ((a, inputs["a0"]), (b, inputs["b0"])))
        again = mod.launch(inputs, cfg)
        P2, f, g = mod.sinkhorn(x, it, alpha=alpha, row_marginal=a, col_marginal=b, return_potentials=True,
                                **cfg)
        _, fr, gr = mod.sinkhorn_reference(x, it, alpha, a, b)
        pot = {"dtypes": [names.get(f.dtype), names.get(g.dtype)], "shapes": [list(f.shape), list(g.shape)],
               "n_inf_mismatch": int((torch.isinf(f) != torch.isinf(fr)).sum()
                                     + (torch.isinf(g) != torch.isinf(gr)).sum()),
               "n_inf": int(torch.isinf(f).sum() + torch.isinf(g).sum()),
               "max_abs": max(_amax(f), _amax(g))}
        nl = 0
        for v, vr in ((f, fr), (g, gr)):
            fin = torch.isfinite(vr)
            nl += int(((v.double()[fin] - vr[fin]).abs() > 1e-4 * (1 + vr[fin].abs())).sum())
        pot["n_loose"] = nl
        res = {"dtype": names.get(out.dtype), "out_strides": list(out.stride()), "n_loose": int(loose.sum()),
               "n_zero_mismatch": int(zero_mismatch.sum()), "n_nonfinite": int((~torch.isfinite(o)).sum()),
               "n_ref_zero": int((ref == 0).sum()), "deterministic": bool(torch.equal(again, out)),
               "inputs_unchanged": bool(same), "x_strides": list(x.stride()), "pot": pot,
               "p_equal_with_potentials": bool(torch.equal(P2, out)),
               "col_sum_err": float((o.sum(1) - ref.sum(1)).abs().max()),
               "row_sum_err": float((o.sum(2) - 1.0).abs().max()),
               "baseline": H.compare(mod.torch_baseline(inputs), ref, point["dtype"])}
        if cfg["SHIFT"]:
            # the matrices whose plan and fp32 potentials are the exact loop's bit for bit (SHIFT 0, the
            # same config else)
            P0, f0, g0 = mod.sinkhorn(x, it, alpha=alpha, row_marginal=a, col_marginal=b, return_potentials=True,
                                      **dict(cfg, SHIFT=0))
            res["exact_mats"] = [i for i in range(P0.shape[0]) if torch.equal(P0[i], P2[i])
                                 and torch.equal(f0[i], f[i]) and torch.equal(g0[i], g[i])]
        if a is not None and a.dim() == 2:
            la = torch.log2(a.double())
            res["spread_bits"] = float((la.max(1).values - la.min(1).values).max())
        return res

    H.run_cases(KERNEL, CASES[KERNEL], prepare=_prepare, extra=extra)


if __name__ == "__main__":
    _run()
