"""examples/csr_spmm.py against its fp64 torch reference on the CPU through Triton's
interpreter, its sparsity structure and launcher hooks against the shapes, its study sweep
against the points, and a compile for sm_90 and sm_120 from its own ``example_args``.

As in test_examples_round13_a.py, the interpreter must be chosen before triton is imported,
so the cases run in a subprocess (this file run as a script:
``python tests/test_examples_round14_b.py csr_spmm``) that prints one JSON line; the tests
assert per case (the kernel through ``launch`` and torch_baseline). A second subprocess
(``... api``) checks what the cases do not see: every element of a NaN-filled ``out=``
buffer written (empty rows too), bitwise-repeatable results, the row-by-row schedule
bitwise independent of BLOCK_ROWS, the two schedules agreeing, a column-strided b copied,
no nonzeros at all, M = 0, output dtypes.

Shapes are small, odd and ragged, and cover both schedules (DOT 0: row by row; DOT 1: the
row group's nonzeros merged, reduced by a segment-matrix tl.dot) in every dtype: M not a
multiple of BLOCK_ROWS (the last row group short) and smaller than it; N not a multiple of
BLOCK_N (the masked tail), N = 3, N a multiple (EVEN_N); rows shorter than BLOCK_NNZ and hub
rows many BLOCK_NNZ steps long; empty rows, a whole row group empty; BLOCK_ROWS 32 (the
segment matrix's M side 32, not 16); int32 and int64 indptr; M != K; unsorted column ids and
duplicates; b's and out's rows as views of wider buffers. Every tunable takes >= 2 values and
the cases bracket each swept value.

Tolerance (x max|ref|, absolute, per element): the reference sums the same rounded values and
b in fp64; the kernel multiplies and adds in fp32 (rows of <= ~300 nonzeros: ~1e-6 relative;
DOT 1 on fp32 goes through 3xTF32, ~1e-6 relative too on a GPU, plain fp32 in the interpreter)
and rounds once to the output's dtype. bf16 1.5e-2: the interpreter's fp32 -> bf16 cast
truncates (up to one bf16 ulp, 2^-7 relative; the GPU rounds to nearest, half that), and
torch_baseline's bf16 SpMM on the CPU may round partial sums; fp16 2e-3 (an fp16 ulp is 2^-10
relative); fp32 1e-4.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
KERNEL = "csr_spmm"
ROLE = "held-out-14"
TOL = {"fp32": 1e-4, "bf16": 1.5e-2, "fp16": 2e-3}
H200_SMS = 132
H200_SMEM_PER_BLOCK = 227 * 1024


def _cfg(br, bnnz, bn, dot, w, s):
    return {"BLOCK_ROWS": br, "BLOCK_NNZ": bnnz, "BLOCK_N": bn, "DOT": dot, "num_warps": w, "num_stages": s}


def _pt(M, K, N, deg, dtype, law="powerlaw", out=None, index="int32", empty=0.0):
    p = {"M": M, "K": K, "N": N, "deg": deg, "law": law, "dtype": dtype, "index": index}
    if out is not None:
        p["out"] = out
    if empty:
        p["empty"] = empty
    return p


# kernel module -> case name -> (point, cfg)
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        "rows_ragged_n_tail_fp32": (_pt(37, 29, 40, 5, "fp32", index="int64"), _cfg(2, 16, 32, 0, 4, 1)),
        "merged_ragged_n_tail_fp32": (_pt(37, 29, 40, 5, "fp32", index="int64"), _cfg(16, 16, 32, 1, 4, 3)),
        "rows_uniform_exact_n_bf16": (_pt(45, 60, 64, 9, "bf16", "uniform"), _cfg(1, 32, 64, 0, 8, 3)),
        "merged_uniform_short_group_bf16": (_pt(45, 60, 64, 9, "bf16", "uniform", empty=0.2), _cfg(4, 16, 64, 1, 4, 2)),
        "merged_32_rows_fp32_out_bf16": (_pt(70, 50, 48, 7, "bf16", out="fp32"), _cfg(32, 32, 16, 1, 2, 1)),
        "rows_fewer_than_block_fp16": (_pt(3, 20, 24, 6, "fp16", "uniform"), _cfg(16, 16, 32, 0, 1, 2)),
        "merged_fewer_than_block_fp16": (_pt(5, 20, 24, 6, "fp16", empty=0.3), _cfg(16, 64, 32, 1, 4, 3)),
        "rows_three_columns_bf16": (_pt(30, 40, 3, 12, "bf16", index="int64"), _cfg(4, 32, 16, 0, 2, 1)),
        "merged_three_columns_fp32": (_pt(30, 40, 3, 12, "fp32", "uniform"), _cfg(1, 16, 16, 1, 1, 2)),
        "rows_hubs_long_loop_fp32": (_pt(60, 60, 33, 10, "fp32"), _cfg(1, 16, 64, 0, 4, 3)),
        "merged_hubs_long_loop_bf16": (_pt(60, 60, 33, 10, "bf16", out="fp32", index="int64"), _cfg(2, 16, 64, 1, 8, 1)),
        "rows_empty_groups_fp16": (_pt(50, 31, 20, 4, "fp16", empty=0.6, index="int64"), _cfg(2, 64, 32, 0, 4, 2)),
        "merged_empty_groups_bf16": (_pt(50, 31, 20, 4, "bf16", empty=0.6), _cfg(16, 32, 32, 1, 4, 3)),
        "rows_unsorted_duplicates_bf16": (_pt(26, 9, 50, 8, "bf16", "uniform"), _cfg(8, 16, 128, 0, 4, 1)),
        "merged_unsorted_duplicates_fp32": (_pt(26, 9, 50, 8, "fp32", "uniform"), _cfg(8, 16, 64, 1, 2, 3)),
        "rows_strided_views_fp32": (_pt(33, 21, 36, 6, "fp32", out="fp32"), _cfg(2, 32, 32, 0, 2, 3)),
        "merged_strided_views_fp16": (_pt(33, 21, 36, 6, "fp16", out="fp32", index="int64"), _cfg(16, 32, 16, 1, 4, 2)),
    },
}

# configs compiled for each arch at the module's first POINT (BASELINE first; all fit sm_120's 99 KiB)
COMPILE_CFGS: dict[str, list[dict]] = {
    KERNEL: [_cfg(1, 32, 128, 0, 4, 1), _cfg(1, 16, 64, 0, 8, 3), _cfg(16, 32, 128, 1, 8, 3),
             _cfg(16, 16, 64, 1, 4, 1)],
}


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """Edit a case's inputs: column ids shuffled within each row and duplicated; b and out's rows
    as views of wider buffers (out through the api run only: launch allocates its own)."""
    import torch

    if "unsorted_duplicates" in name:
        indptr, idx, val = inputs["indptr"].long(), inputs["indices"], inputs["values"]
        gen = torch.Generator().manual_seed(5)
        rows = torch.repeat_interleave(torch.arange(indptr.numel() - 1), indptr[1:] - indptr[:-1])
        perm = torch.argsort(rows.double() + 0.5 * torch.rand(rows.numel(), generator=gen, dtype=torch.float64))
        idx, val = idx[perm].clone(), val[perm]
        idx[1::3] = idx[0:-1:3][:idx[1::3].numel()]           # duplicates (inside a row or across a boundary)
        inputs["indices"], inputs["values"] = idx, val
    if "strided_views" in name:
        b = inputs["b"]
        wide = torch.zeros((b.shape[0], b.shape[1] + 12), dtype=b.dtype)
        wide[:, :b.shape[1]] = b
        inputs["b"] = wide[:, :b.shape[1]]
        assert inputs["b"].stride() == (b.shape[1] + 12, 1)


def _sweep() -> tuple[list, list, dict]:
    return H.study_sweeps([KERNEL], ROLE)[KERNEL]      # (configs, points, axes) of scripts/rank_study.py SWEEPS


# ----------------------------------------------------------------- the pytest side
def _results(kernel: str) -> dict:
    return H.interpreter_results(HERE, kernel)


@pytest.mark.parametrize("kernel,name", [(k, n) for k, cases in CASES.items() for n in cases])
def test_example_matches_reference(kernel, name):
    res = _results(kernel)[name]
    assert "error" not in res, f"{kernel}/{name}: {res.get('error')}"
    point = CASES[kernel][name][0]
    assert res["shape"] == [point["M"], point["N"]]
    for what, r in (("kernel", res), ("torch_baseline", res["baseline"])):
        assert r["n_bad"] == 0, H.mismatch(r, f"{kernel}/{name} {what}")


def test_api_edges():
    env = dict(os.environ, TRITON_INTERPRET="1", PYTHONWARNINGS="ignore")
    env.pop("CUDA_VISIBLE_DEVICES", None)
    proc = subprocess.run([sys.executable, str(HERE), "api"], env=env, capture_output=True, text=True, timeout=300,
                          cwd=HERE.parent.parent)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    assert proc.returncode == 0 and lines, proc.stderr[-3000:]
    res = json.loads(lines[-1])
    assert "error" not in res, res["error"]
    assert all(res.values()), res


def _case_structure(name: str):
    """(indptr int64, degrees) of a case as run_cases draws it (seed = len(name))."""
    mod = load_example(KERNEL)
    p = CASES[KERNEL][name][0]
    indptr, _ = mod._point_structure(p, len(name))
    return indptr, indptr[1:] - indptr[:-1]


def test_cases_cover_every_tunable_value():
    """Each tunable takes at least two values over the cases and the cases bracket each swept
    value; both schedules meet every dtype, a short last row group, M < BLOCK_ROWS, the N tail,
    EVEN_N, N = 3, hub rows of >= 4 BLOCK_NNZ steps, empty rows and a wholly empty row group,
    both indptr dtypes; a segment matrix of 32 rows; M != K."""
    import triton

    H.assert_tunables_covered(CASES)
    mod = load_example(KERNEL)
    cases = CASES[KERNEL]
    for k, vals in _sweep()[2].items():
        tested = {c[k] for _, c in cases.values()}
        assert min(tested) <= min(vals) and max(tested) >= max(vals), (k, tested)
    assert any(mod._seg_m(c) == 32 for _, c in cases.values() if c["DOT"])
    for dot in (0, 1):
        sel = {n: pc for n, pc in cases.items() if pc[1]["DOT"] == dot}
        assert {p["dtype"] for p, _ in sel.values()} == set(mod.DTYPES)
        assert {p["index"] for p, _ in sel.values()} == set(mod.INDEX_DTYPES)
        assert {p["law"] for p, _ in sel.values()} == set(mod.LAWS)
        assert any(p["M"] % c["BLOCK_ROWS"] and p["M"] > c["BLOCK_ROWS"] for p, c in sel.values())
        assert any(p["M"] < c["BLOCK_ROWS"] for p, c in sel.values())
        assert any(p["N"] % c["BLOCK_N"] for p, c in sel.values())
        assert any(p["N"] % c["BLOCK_N"] == 0 for p, c in sel.values())
        assert any(p["N"] == 3 for p, _ in sel.values())
        assert any(p["M"] != p["K"] for p, _ in sel.values())
        hub = empty_row = empty_group = False
        for name, (p, c) in sel.items():
            indptr, deg = _case_structure(name)
            assert int(deg.sum()) == p["M"] * p["deg"]
            hub |= int(deg.max()) >= 4 * c["BLOCK_NNZ"]
            empty_row |= bool((deg == 0).any())
            groups = [int(deg[g:g + c["BLOCK_ROWS"]].sum()) for g in range(0, p["M"], c["BLOCK_ROWS"])]
            empty_group |= 0 in groups
            its = mod.cta_iterations(c, p)
            assert len(its) == mod.grid(c, p) == triton.cdiv(p["M"], c["BLOCK_ROWS"]) * triton.cdiv(p["N"], c["BLOCK_N"])
        assert hub and empty_row and empty_group, (dot, hub, empty_row, empty_group)


def test_structure_laws():
    """row_degrees: exactly M deg nonzeros, the power law skewed (median < 0.7 mean, a hub row at
    >= 20 x the mean, none above DEG_CAP x it, none empty without `empty`), the uniform law in
    [deg / 2, 3 deg / 2]; csr_structure's column ids in range and sorted in each row, the
    Chung-Lu columns skewed to the hub nodes, one seed one structure."""
    import torch

    mod = load_example(KERNEL)
    M, deg = 5000, 16
    d = mod.row_degrees(M, deg, "powerlaw", seed=1)
    assert int(d.sum()) == M * deg and int(d.min()) >= 1 and int(d.max()) <= mod.DEG_CAP * deg
    assert float(d.double().median()) < 0.7 * deg and int(d.max()) >= 20 * deg
    u = mod.row_degrees(M, deg, "uniform", seed=1)
    assert int(u.sum()) == M * deg and int(u.min()) >= deg // 2 and int(u.max()) <= deg + deg // 2 + 1
    e = mod.row_degrees(M, deg, "uniform", empty=0.25, seed=1)
    assert int(e.sum()) == M * deg and 0.2 < float((e == 0).double().mean()) < 0.3
    indptr, idx = mod.csr_structure(M, M, deg, "powerlaw", seed=1)
    assert indptr.dtype == torch.int64 and idx.dtype == torch.int32 and idx.numel() == M * deg
    assert torch.equal(indptr[1:] - indptr[:-1], d) and int(idx.min()) >= 0 and int(idx.max()) < M
    rows = torch.repeat_interleave(torch.arange(M), d)
    key = rows * M + idx.long()
    assert bool((key[1:] >= key[:-1]).all())
    hubs = torch.topk(d, 50).indices
    share = float(torch.isin(idx.long(), hubs).double().mean())
    hub_share = float(d[hubs].sum()) / (M * deg)         # the 1 % hub rows' share of the nonzeros, ~29 %
    assert abs(share - hub_share) < 0.2 * hub_share and share > 10 * 50 / M      # columns drawn ~ degree
    indptr2, idx2 = mod.csr_structure(300, 77, 5, "powerlaw", seed=2)
    assert int(idx2.max()) < 77 and indptr2.numel() == 301
    i1, x1 = mod.csr_structure(300, 77, 5, "uniform", seed=3)
    i2, x2 = mod.csr_structure(300, 77, 5, "uniform", seed=3)
    assert torch.equal(i1, i2) and torch.equal(x1, x2)
    assert not torch.equal(mod.csr_structure(300, 77, 5, "uniform", seed=4)[1], x1)


def test_sweep_fits_the_points():
    """The study sweep: the TUNABLES over two values each, 64 configs with BASELINE among them; at
    every POINT each config is valid, launches >= 8 CTAs an SM (every SM busy through the ragged
    tail), the row-by-row schedule's accumulator holds <= 32 fp32 elements a thread
    (BLOCK_NNZ x BLOCK_N / 32 num_warps) and the pipelined gathers ((num_stages - 1) x
    BLOCK_NNZ x BLOCK_N elements of b, plus the DOT schedule's dot-operand tiles) fit an H200's
    227 KiB per block. (Every config was compiled for sm_90 with triton 3.6.0 at every point:
    all 192 compile, each in <= 3.4 s (most < 1 s), none spills; 30-168 registers (the fp32
    point's 3xTF32 dot the most: 58-168), 1-33 KiB of shared memory (DOT 0: 1-4 KiB at
    num_stages 1, 4-33 KiB at 3, the staged b tiles; DOT 1: 2.5-16 KiB of dot operands at 1,
    2.6-18 KiB at 3). BLOCK_N 256
    and BLOCK_NNZ 64 were left out: 64 x 256 tiles spill on 4 warps (16-192 words) and at the
    first point's N = 128 half of a 256-wide tile would be masked.)"""
    import triton

    cfgs_valid, points, axes = _sweep()
    mod = load_example(KERNEL)
    assert set(axes) == set(mod.TUNABLES) and all(len(v) >= 2 for v in axes.values())
    cfgs = [dict(zip(axes, v)) for v in itertools.product(*axes.values())]
    assert len(cfgs) == 64 and cfgs_valid == cfgs and mod.BASELINE in cfgs
    assert points == mod.POINTS
    for p in mod.POINTS:
        e = 4 if p["dtype"] == "fp32" else 2
        for c in cfgs:
            mod._check_cfg(c)
            args = mod.example_args(c, p)
            assert args["EVEN_N"] and args["NUM_STAGES"] == c["num_stages"] and args["SEG_M"] == max(16, c["BLOCK_ROWS"])
            assert mod.grid(c, p) >= 8 * H200_SMS, (p, c)
            assert c["BLOCK_NNZ"] * c["BLOCK_N"] <= 32 * 32 * c["num_warps"], (p, c)
            smem = (c["num_stages"] - 1) * c["BLOCK_NNZ"] * c["BLOCK_N"] * e
            smem += c["DOT"] * (c["BLOCK_NNZ"] * c["BLOCK_N"] + mod._seg_m(c) * c["BLOCK_NNZ"]) * 4
            assert smem <= H200_SMEM_PER_BLOCK, (p, c)


def test_launcher_hooks_agree_with_shapes():
    """At every default point: the meta tensors of example_args have the shapes and dtypes of a
    launch (indptr [M + 1] in the point's index dtype, indices / values [M deg], b [K, N], out
    [M, N]) and the launch's strides; bytes_moved counts indptr, indices, values and out once
    and the referenced b rows once (>= 98 % of K rows at the points); grid, cta_iterations and
    loop_iterations are the tiling of the seed-0 degrees; the points are real sizes with inputs
    < 4 GB, one with b above the 50 MB L2 and a per-point character of its own."""
    import torch
    import triton

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "cta_iterations", "example_args", "torch_baseline", "csr_spmm", "csr_structure", "row_degrees"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert len(mod.POINTS) == 3
    assert {p["dtype"] for p in mod.POINTS} == {"fp32", "bf16"} and {p["law"] for p in mod.POINTS} == set(mod.LAWS)
    assert {p["index"] for p in mod.POINTS} == set(mod.INDEX_DTYPES) and {p["N"] for p in mod.POINTS} == {128, 256, 1024}
    cfgs = [dict(zip(_sweep()[2], v)) for v in itertools.product(*_sweep()[2].values())]
    for p in mod.POINTS:
        M, K, N, deg = p["M"], p["K"], p["N"], p["deg"]
        e, eo = (4 if p["dtype"] == "fp32" else 2), (4 if p.get("out", p["dtype"]) == "fp32" else 2)
        ei = 8 if p["index"] == "int64" else 4
        nnz = M * deg
        assert ei * (M + 1) + nnz * (4 + e) + K * N * e + M * N * eo < 4 * 2**30
        cols = mod._distinct_columns(M, K, deg, p["law"], 0.0)
        assert 0.98 * K <= cols <= K
        assert mod.bytes_moved(p) == (M + 1) * ei + nnz * (4 + e) + cols * N * e + M * N * eo
        assert mod.flops(p) == 2 * nnz * N
        sizes = mod.row_degrees(M, deg, p["law"])
        for c in [mod.BASELINE] + COMPILE_CFGS[KERNEL] + cfgs[::9]:
            args = mod.example_args(c, p)
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for v in args.values())
            assert args["INDPTR"].shape == (M + 1,) and args["INDPTR"].dtype == (torch.int64 if ei == 8 else torch.int32)
            assert args["INDICES"].shape == (nnz,) and args["INDICES"].dtype == torch.int32
            assert args["VALUES"].shape == (nnz,) and args["VALUES"].dtype == args["B"].dtype
            assert args["B"].shape == (K, N) and args["OUT"].shape == (M, N) and args["OUT"].element_size() == eo
            assert (args["M"], args["N"], args["stride_bk"], args["stride_om"]) == (M, N, N, N)
            assert H.meta_nbytes(args) == (M + 1) * ei + nnz * (4 + e) + K * N * e + M * N * eo
            br, bz = c["BLOCK_ROWS"], c["BLOCK_NNZ"]
            groups = triton.cdiv(M, br)
            its = mod.cta_iterations(c, p)
            assert len(its) == mod.grid(c, p) == groups * triton.cdiv(N, c["BLOCK_N"])
            first = [int(s) for s in sizes[:br]]
            want0 = -(-sum(first) // bz) if c["DOT"] else sum(-(-s // bz) for s in first)
            assert its[0] == want0
            steps = its[::triton.cdiv(N, c["BLOCK_N"])]
            assert mod.loop_iterations(c, p) == -(-sum(steps) // groups)
            if c["DOT"]:
                assert sum(steps) < nnz / bz + groups
            else:
                assert sum(steps) == int(((sizes + bz - 1) // bz).sum())
    big = [p for p in mod.POINTS if p["K"] * p["N"] * (4 if p["dtype"] == "fp32" else 2) > 50 * 2**20]
    assert len(big) == 1 and big[0]["law"] == "powerlaw"


def test_hooks_on_small_points_and_inputs():
    """The hooks on a small point by hand; make_inputs' tensors (the point's dtypes, indptr from
    csr_structure, values ~ deg^-1/2, one seed one set); the reference against a dense fp64
    matmul; torch_baseline close to it."""
    import torch

    mod = load_example(KERNEL)
    p = _pt(10, 12, 40, 3, "fp32", "uniform")
    sizes = mod.row_degrees(10, 3, "uniform")
    c = _cfg(4, 16, 32, 0, 4, 1)
    assert mod.grid(c, p) == 3 * 2
    per_group = [sum(-(-int(s) // 16) for s in sizes[g:g + 4]) for g in (0, 4, 8)]
    assert mod.cta_iterations(c, p) == [n for n in per_group for _ in range(2)]
    cd = _cfg(4, 16, 32, 1, 4, 1)
    assert mod.cta_iterations(cd, p) == [n for g in (0, 4, 8) for n in [-(-int(sizes[g:g + 4].sum()) // 16)] * 2]
    assert mod.example_args(cd, p)["SEG_M"] == 16 and mod.example_args(_cfg(32, 16, 32, 1, 4, 1), p)["SEG_M"] == 32
    assert not mod.example_args(c, p)["EVEN_N"]
    assert mod.example_args(_cfg(1, 16, 16, 0, 4, 1), _pt(4, 4, 32, 2, "bf16"))["EVEN_N"]
    for pt in (_pt(24, 31, 20, 5, "bf16", out="fp32", index="int64", empty=0.2), _pt(17, 17, 8, 4, "fp16", "uniform")):
        inputs = mod.make_inputs(pt, seed=3, device="cpu")
        indptr, idx, val, b = inputs["indptr"], inputs["indices"], inputs["values"], inputs["b"]
        assert indptr.dtype == (torch.int64 if pt["index"] == "int64" else torch.int32) and idx.dtype == torch.int32
        assert val.dtype == b.dtype == mod._torch_dtype(pt["dtype"]) and b.shape == (pt["K"], pt["N"])
        assert inputs["out_dtype"] == mod._torch_dtype(pt.get("out", pt["dtype"]))
        ref_ip, ref_idx = mod.csr_structure(pt["M"], pt["K"], pt["deg"], pt["law"], pt.get("empty", 0.0), seed=3)
        assert torch.equal(indptr.long(), ref_ip) and torch.equal(idx, ref_idx)
        assert 0.3 < float(val.float().std()) * pt["deg"] ** 0.5 < 3 and bool((val != 0).all())
        assert torch.equal(mod.make_inputs(pt, seed=3, device="cpu")["b"], b)
        assert not torch.equal(mod.make_inputs(pt, seed=4, device="cpu")["b"], b)
        dense = torch.zeros((pt["M"], pt["K"]), dtype=torch.float64)
        rows = torch.repeat_interleave(torch.arange(pt["M"]), indptr.long()[1:] - indptr.long()[:-1])
        dense.index_put_((rows, idx.long()), val.double(), accumulate=True)
        want = dense @ b.double()
        ref = mod.reference(inputs)
        assert ref.dtype == torch.float32 and torch.allclose(ref.double(), want, rtol=1e-5, atol=1e-6)
        base = mod.torch_baseline(inputs)
        assert base.dtype == inputs["out_dtype"]
        assert float((base.double() - want).abs().max()) <= 1.5e-2 * float(want.abs().max())


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    inputs = mod.make_inputs(_pt(8, 10, 16, 3, "bf16"), device="cpu")
    ip, idx, val, b = inputs["indptr"], inputs["indices"], inputs["values"], inputs["b"]
    with pytest.raises(ValueError, match="BLOCK_ROWS=3"):
        mod.csr_spmm(ip, idx, val, b, BLOCK_ROWS=3)
    with pytest.raises(ValueError, match="BLOCK_NNZ=8"):
        mod.csr_spmm(ip, idx, val, b, BLOCK_NNZ=8)
    with pytest.raises(ValueError, match="BLOCK_N=48"):
        mod.csr_spmm(ip, idx, val, b, BLOCK_N=48)
    with pytest.raises(ValueError, match="DOT=2"):
        mod.csr_spmm(ip, idx, val, b, DOT=2)
    with pytest.raises(ValueError, match="b must be a 2-D"):
        mod.csr_spmm(ip, idx, val, b[0])
    with pytest.raises(ValueError, match="b must be a 2-D"):
        mod.csr_spmm(ip, idx, val.double(), b.double())
    with pytest.raises(ValueError, match="indptr must be"):
        mod.csr_spmm(ip.short(), idx, val, b)
    with pytest.raises(ValueError, match="indices must be 1-D int32"):
        mod.csr_spmm(ip, idx.long(), val, b)
    with pytest.raises(ValueError, match="values must be"):
        mod.csr_spmm(ip, idx, val.float(), b)
    with pytest.raises(ValueError, match="values must be"):
        mod.csr_spmm(ip, idx, val[:-1], b)
    with pytest.raises(ValueError, match="out_dtype"):
        mod.csr_spmm(ip, idx, val, b, out_dtype=torch.float16)
    with pytest.raises(ValueError, match=r"out must be a \[8, 16\]"):
        mod.csr_spmm(ip, idx, val, b, out=torch.empty((8, 15), dtype=torch.bfloat16))
    with pytest.raises(ValueError, match="int16"):
        mod.make_inputs(_pt(4, 4, 8, 2, "bf16", index="int16"), device="cpu")
    with pytest.raises(ValueError, match="fp64"):
        mod.bytes_moved(_pt(4, 4, 8, 2, "fp64"))
    with pytest.raises(ValueError, match="out 'fp16'"):
        mod.bytes_moved(_pt(4, 4, 8, 2, "bf16", out="fp16"))
    with pytest.raises(ValueError, match="law 'zipf'"):
        mod.row_degrees(4, 2, "zipf")
    with pytest.raises(ValueError, match="empty=1.0"):
        mod.row_degrees(4, 2, "uniform", empty=1.0)


def test_examples_import_without_torch():
    """The launcher contract: the module imports with no torch (it is imported inside the functions)."""
    proc = H.imports_without_torch(CASES)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr[-2000:]


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["sm_120", "sm_90"])
@pytest.mark.parametrize("kernel", list(COMPILE_CFGS))
def test_example_compiles(shared_cache, kernel, arch):
    mod = load_example(kernel)
    assert COMPILE_CFGS[kernel][0] == mod.BASELINE
    for cfg, res in H.compile_results(kernel, COMPILE_CFGS[kernel], arch):
        assert res.status == "ok", f"{kernel} {cfg} on {arch}: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.shared >= 0 and res.n_spills == 0


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["sm_120", "sm_90"])
def test_other_points_compile(shared_cache, arch):
    """BASELINE and a DOT config at the bf16 points (out bf16 / fp32), and both schedules at an odd
    shape (M, N and K not 16-divisible, int64 indptr, fp16)."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    odd = _pt(37, 29, 40, 5, "fp16", out="fp32", index="int64")
    dot = _cfg(16, 32, 64, 1, 4, 3)
    runs = [(c, p) for p in mod.POINTS[1:] for c in (mod.BASELINE, dot)] + [(mod.BASELINE, odd), (dot, odd)]
    for cfg, p in runs:
        res = compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch=arch, num_warps=cfg["num_warps"],
                             num_stages=cfg["num_stages"])
        assert res.status == "ok", f"{p} {cfg} on {arch}: {res.status}: {res.message}"
        assert res.shared <= H200_SMEM_PER_BLOCK and res.n_spills == 0


@pytest.mark.slow
def test_levers_change_the_cubin(shared_cache):
    """On sm_90 at the first point: the DOT schedule's segment reduction is an mma.sync (3xTF32 on
    fp32: tf32 mmas) and at the bf16 point a bf16 one; num_stages 1 and 3 give two cubins in each
    schedule, 3 staging the gathered b tile in shared memory (cp.async) for the row-by-row loop."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)

    def build(cfg, p):
        res = compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch="sm_90", num_warps=cfg["num_warps"],
                             num_stages=cfg["num_stages"], keep_ir=True)
        assert res.status == "ok", res.message
        return res

    d1 = build(_cfg(16, 32, 64, 1, 4, 1), mod.POINTS[0])
    assert "mma.sync" in d1.ptx and ".tf32" in d1.ptx
    d2 = build(_cfg(16, 32, 64, 1, 4, 1), mod.POINTS[1])
    assert "mma.sync" in d2.ptx and ".bf16" in d2.ptx
    d3 = build(_cfg(16, 32, 64, 1, 4, 3), mod.POINTS[1])
    assert d3.cubin != d2.cubin and "cp.async" in d3.ptx
    r1 = build(mod.BASELINE, mod.POINTS[0])
    r3 = build(mod.BASELINE | {"num_stages": 3}, mod.POINTS[0])
    assert "mma" not in r1.ptx and r1.cubin != r3.cubin and "cp.async" in r3.ptx
    assert r3.shared >= 2 * 32 * 128 * 4 > r1.shared


# ----------------------------------------------------------------- the subprocess side
def _run_api() -> None:
    """Under TRITON_INTERPRET=1: the wrapper's edges; one JSON line of named booleans."""
    import torch

    assert os.environ.get("TRITON_INTERPRET") == "1", "run with TRITON_INTERPRET=1"
    sys.path.insert(0, str(H.TESTS))
    from test_kernels_interpret import _patch_interpreter_bf16_dot
    _patch_interpreter_bf16_dot()
    mod = load_example(KERNEL)
    try:
        p = _pt(29, 23, 36, 6, "fp32", empty=0.25)
        inputs = mod.make_inputs(p, seed=9, device="cpu")
        ip, idx, val, b = inputs["indptr"], inputs["indices"], inputs["values"], inputs["b"]
        ref = mod.reference(inputs)
        kw = dict(BLOCK_ROWS=2, BLOCK_NNZ=16, BLOCK_N=32, DOT=0, num_warps=4, num_stages=1)
        o1 = mod.csr_spmm(ip, idx, val, b, **kw)
        o2 = mod.csr_spmm(ip, idx, val, b, **kw)
        o_rows = mod.csr_spmm(ip, idx, val, b, **{**kw, "BLOCK_ROWS": 8})
        o_dot = mod.csr_spmm(ip, idx, val, b, **{**kw, "DOT": 1})
        o_dot2 = mod.csr_spmm(ip, idx, val, b, **{**kw, "DOT": 1})
        bt = b.t().contiguous().t()                                 # [K, N] with unit row stride: copied
        o_t = mod.csr_spmm(ip, idx, val, bt, **kw)
        wide = torch.full((29, 50), float("nan"))
        o_view = wide[:, 5:41]
        got = mod.csr_spmm(ip, idx, val, b, out=o_view, **kw)
        wide_d = torch.full((29, 50), float("nan"))
        got_d = mod.csr_spmm(ip, idx, val, b, out=wide_d[:, 5:41], **{**kw, "DOT": 1, "BLOCK_ROWS": 4})
        empty_rows = (ip[1:] == ip[:-1])
        no_nnz = mod.csr_spmm(torch.zeros(6, dtype=torch.int32), idx[:0], val[:0], b, **kw)
        no_rows = mod.csr_spmm(torch.zeros(1, dtype=torch.int64), idx, val, b, **kw)
        ib = mod.make_inputs(_pt(12, 9, 20, 3, "bf16"), seed=2, device="cpu")
        ob = mod.csr_spmm(ib["indptr"], ib["indices"], ib["values"], ib["b"], **kw)
        ob32 = mod.csr_spmm(ib["indptr"], ib["indices"], ib["values"], ib["b"], out_dtype=torch.float32, **kw)
        res = {"repeat_bitwise": bool(torch.equal(o1, o2) and torch.equal(o_dot, o_dot2)),
               "rows_bitwise_any_block_rows": bool(torch.equal(o_rows, o1)),
               "schedules_agree": float((o_dot - o1).abs().max()) <= 1e-5 * float(ref.abs().max()),
               "matches_ref": float((o1 - ref).abs().max()) <= 1e-5 * float(ref.abs().max()),
               "column_strided_b_same": bt.stride(1) != 1 and bool(torch.equal(o_t, o1)),
               "every_element_written": got.data_ptr() == o_view.data_ptr() and bool(torch.isfinite(o_view).all())
               and bool(torch.equal(o_view, o1)) and bool(torch.isnan(wide[:, :5]).all())
               and bool(torch.isnan(wide[:, 41:]).all()),
               "every_element_written_dot": bool(torch.isfinite(got_d).all()) and bool(torch.isnan(wide_d[:, 41:]).all())
               and float((got_d - ref).abs().max()) <= 1e-5 * float(ref.abs().max()),
               "empty_rows_zero": bool(empty_rows.any()) and bool((o1[empty_rows] == 0).all())
               and bool((got_d[empty_rows] == 0).all()),
               "no_nonzeros_zero": no_nnz.shape == (5, 36) and bool((no_nnz == 0).all()),
               "no_rows": no_rows.shape == (0, 36),
               "dtypes": o1.dtype == torch.float32 and ob.dtype == torch.bfloat16 and ob32.dtype == torch.float32
               and float((ob.float() - ob32).abs().max()) <= 1e-2 * float(ob32.abs().max())}
    except Exception as exc:          # reported by the test
        res = {"error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(res))


if __name__ == "__main__":
    if sys.argv[1] == "api":
        _run_api()
    else:
        H.run_cases(sys.argv[1], CASES[sys.argv[1]], TOL, prepare=_prepare, baseline=True)
