"""examples/ell_spmv.py (sparse matrix x vector with the matrix in sliced ELLPACK, SELL-C-sigma: slices of C rows
padded to their widest row, slot-major, column -1 in a padded slot, rows optionally sorted by length in windows
of sigma with a perm; a 1-d grid of BLOCK_R-row programs each walking its slices' slots BLOCK_K at a time, fp32
accumulation, one store a row, through perm when sorted) against its float64 reference on the CPU through
Triton's interpreter, against a dense matrix rebuilt here from the storage, its launcher hooks against the
shapes, its sweep against the points, and a compile for sm_90 (every sweep config at every point) and sm_120
from its own ``example_args``.

As in test_examples_round34_c.py the interpreter cases run in a subprocess (this file run as a script:
``python tests/test_examples_round35_d.py ell_spmv``) that prints one JSON line; the subprocess installs the
harness's interpreter fixes (bf16 rounding; the runtime loop bound -- the slot walk's trip count is the widest
slice's width, loaded).

Shapes are small and odd: 7- and 27-point stencils on 3^3-6^3 grids (boundary rows shorter: padded slots inside
a slice), power-law graphs of 77-300 nodes (slices of very different widths, a program's slices of different
widths: the per-row width mask), slice heights 1 (one row a slice), 4, 8, 16, 32, 64 and 256 (one slice longer
than the matrix: plain ELLPACK); programs of 32-256 rows above and below the slice height, a last program past
n_rows; sigma 1 (natural order) and 8 / 64 (sorted: the scattered store through perm); fp32 / fp16 / bf16.

Per case: launch's output against the module's reference (the harness's tolerance) and against a dense matrix
rebuilt here slot by slot from the storage (float64 matmul); a stencil's pattern against its grid neighbours;
shape and dtype; the inputs unchanged; the grid; torch_baseline (torch's CSR SpMV) within tolerance.
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
KERNEL = "ell_spmv"
ROLE = "held-out-35"
H200_SMS = 132
SM90_SMEM_PER_BLOCK = 227 * 1024
SM120_SMEM_PER_BLOCK = 99 * 1024

# the study's sweep (scripts/rank_study.py SWEEPS["ell_spmv"] once the lead adds it)
SWEEP_AXES = {"BLOCK_R": [32, 64, 128], "BLOCK_K": [4, 8, 16], "num_warps": [4, 8], "num_stages": [1, 2, 3]}
ESIZE = {"fp32": 4, "fp16": 2, "bf16": 2}

_MOD = None


def _mod():
    """One module object for the whole file: its per-point caches (the seed-0 matrices) are kept."""
    global _MOD
    if _MOD is None:
        _MOD = load_example(KERNEL)
    return _MOD


def _cfg(br=128, bk=8, w=4, st=1):
    return {"BLOCK_R": br, "BLOCK_K": bk, "num_warps": w, "num_stages": st}


def _lap(kind, nx, C, sigma=1, dtype="fp32"):
    return {"matrix": kind, "nx": nx, "C": C, "sigma": sigma, "dtype": dtype}


def _graph(n, deg, kmax, C, sigma=1, dtype="fp32"):
    return {"matrix": "powerlaw", "n": n, "deg": deg, "kmax": kmax, "C": C, "sigma": sigma, "dtype": dtype}


def _cfgs():
    return [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]


# case -> (point, cfg); comments: rows, programs vs slices
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        # 27-point on 5^3 (125 rows), SELL-32, BASELINE: one program of 128 rows over 4 slices (3 rows past n)
        "baseline_lap27_fp32": (_lap("lap27", 5, 32), _cfg()),
        # 7-point on 6^3 (216 rows), 64-row slices, programs of 32 rows (half a slice), 2 stages
        "lap7_subslice_bf16": (_lap("lap7", 6, 64, dtype="bf16"), _cfg(32, 4, 4, 2)),
        # a power-law graph, 300 nodes, SELL-8-64 (sorted: perm), 16 slots a step, 8 warps, 3 stages
        "graph_sorted_fp16": (_graph(300, 4, 40, 8, 64, "fp16"), _cfg(32, 16, 8, 3)),
        # a graph of 77 nodes in natural order, 16-row slices of different widths under one 64-row program
        "graph_natural_fp32": (_graph(77, 5, 30, 16), _cfg(64, 8, 4, 1)),
        # 7-point on 3^3 (27 rows), SELL-4-8 (a sorted stencil), one 256-row program, 8 warps, 3 stages
        "lap7_sorted_fp16": (_lap("lap7", 3, 4, 8, "fp16"), _cfg(256, 4, 8, 3)),
        # 27-point on 4^3, C = 1 (one row a slice: every row its own width), 16 slots a step, 2 stages
        "lap27_c1_bf16": (_lap("lap27", 4, 1, dtype="bf16"), _cfg(64, 16, 8, 2)),
        # a 200-node graph in one 256-row slice (plain ELLPACK: every row padded to the longest), 2 programs
        "graph_ellpack_bf16": (_graph(200, 3, 25, 256, dtype="bf16"), _cfg(128, 8, 4, 1)),
    },
}


def _dense(inputs):
    """[n_rows, n_rows] float64 rebuilt slot by slot from the storage (a transcription of the format)."""
    import torch

    col, val, ptr = inputs["col"].tolist(), inputs["val"].double().tolist(), inputs["slice_ptr"].tolist()
    C, n = inputs["C"], inputs["n_rows"]
    perm = inputs["perm"].tolist() if inputs["perm"] is not None else list(range(n))
    A = torch.zeros((n, n), dtype=torch.float64)
    for s in range(len(ptr) - 1):
        w = (ptr[s + 1] - ptr[s]) // C
        for lane in range(C):
            q = s * C + lane
            for j in range(w):
                e = ptr[s] + j * C + lane
                if col[e] >= 0:
                    assert q < n, (s, lane, j)
                    A[perm[q], col[e]] += val[e]
                else:
                    assert val[e] == 0.0, (s, lane, j)
    return A


def _stencil_pattern(kind, nx):
    """[n, n] bool: the grid neighbours (and self) of each point, straight from the coordinates."""
    import torch

    n = nx ** 3
    P = torch.zeros((n, n), dtype=torch.bool)
    for z, y, x in itertools.product(range(nx), repeat=3):
        for dz, dy, dx in itertools.product((-1, 0, 1), repeat=3):
            if kind == "lap7" and abs(dz) + abs(dy) + abs(dx) > 1:
                continue
            if 0 <= z + dz < nx and 0 <= y + dy < nx and 0 <= x + dx < nx:
                P[(z * nx + y) * nx + x, ((z + dz) * nx + y + dy) * nx + x + dx] = True
    return P


def _prepare(name: str, point: dict, inputs: dict) -> None:
    inputs["_copies"] = {k: inputs[k].clone() for k in ("col", "val", "x", "slice_ptr", "perm")
                         if inputs[k] is not None}


# ----------------------------------------------------------------- the pytest side
def _results() -> dict:
    return H.interpreter_results(HERE, KERNEL)


@pytest.mark.parametrize("name", list(CASES[KERNEL]))
def test_example_matches_reference(name):
    res = _results()[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    p, cfg = CASES[KERNEL][name]
    n = p["nx"] ** 3 if "nx" in p else p["n"]
    assert res["n_bad"] == 0, H.mismatch(res, f"{name} launch")
    assert res["baseline"]["n_bad"] == 0, H.mismatch(res["baseline"], f"{name} torch_baseline")
    assert res["shape"] == [n] and res["dtype"] == p["dtype"], res
    tol = H.TOL[p["dtype"]] * res["scale"]
    assert res["dense_err"] <= tol and res["ref_vs_dense"] <= 1e-9 * max(res["scale"], 1.0), res
    assert res["inputs_unchanged"] is True, res
    assert res["has_perm"] == (p["sigma"] > 1), res
    if "nx" in p:
        assert res["pattern_ok"] is True, res
    assert res["grid"] == [math.ceil(n / cfg["BLOCK_R"])], res
    assert res["n_slices"] == math.ceil(n / p["C"]), res


def test_cases_cover_every_code_path():
    """Every tunable's every sweep value; fp32 / fp16 / bf16; each matrix kind; with and without perm; programs
    wider and narrower than a slice; a last program past n_rows; a slice taller than the matrix."""
    H.assert_tunables_covered(CASES)
    cases = CASES[KERNEL]
    mod = _mod()
    for k, vals in SWEEP_AXES.items():
        assert {c[k] for _, c in cases.values()} >= set(vals), k
    assert {p["dtype"] for p, _ in cases.values()} == set(mod.DTYPES)
    assert {p["matrix"] for p, _ in cases.values()} == set(mod.MATRICES)
    assert {p["sigma"] > 1 for p, _ in cases.values()} == {True, False}
    rows = {nm: (p["nx"] ** 3 if "nx" in p else p["n"]) for nm, (p, _) in cases.items()}
    assert any(c["BLOCK_R"] > p["C"] for p, c in cases.values())
    assert any(c["BLOCK_R"] < p["C"] for p, c in cases.values())
    assert any(rows[nm] % c["BLOCK_R"] for nm, (_, c) in cases.items())
    assert any(p["C"] > rows[nm] for nm, (p, _) in cases.items())


def test_launcher_hooks_agree_with_shapes():
    """At every point and sweep config: example_args (col, slice_ptr, perm with data on the CPU; val, x, y on
    meta) with the launch's shapes and flags; the grid; cta_iterations against the slice widths; bytes_moved
    and flops; each point >= 50 us at 4.8 TB/s and memory-bound on an H200's FMA units."""
    import torch

    mod = _mod()
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "cta_iterations", "example_args", "torch_baseline", "ell_spmv", "build_sell"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert not hasattr(mod, "secondary_kernels")
    assert len(mod.POINTS) == 3 and mod.ROLE == ROLE and mod.SWEEP_AXES == SWEEP_AXES
    dts = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
    for p in mod.POINTS:
        n = p["nx"] ** 3 if "nx" in p else p["n"]
        C = p["C"]
        a0 = mod.example_args(mod.BASELINE, p)
        ptr = a0["SLICE_PTR"]
        widths = (ptr[1:].long() - ptr[:-1].long()) // C
        assert ptr.device.type == "cpu" and ptr.dtype == torch.int32 and ptr.numel() == math.ceil(n / C) + 1
        assert int(ptr[0]) == 0 and bool((ptr % C == 0).all()) and bool((widths >= 1).all())
        col = a0["COL"]
        assert col.device.type == "cpu" and col.dtype == torch.int32 and col.numel() == int(ptr[-1])
        assert int(col.max()) < n and int(col.min()) >= -1
        if p["sigma"] > 1:
            assert a0["PERM"].device.type == "cpu" and a0["PERM"].dtype == torch.int32 and a0["HAS_PERM"]
        else:
            assert a0["PERM"] is None and not a0["HAS_PERM"]
        slots = int(ptr[-1])
        e = ESIZE[p["dtype"]]
        want = slots * (4 + e) + 4 * (ptr.numel()) + 2 * e * n + (4 * n if p["sigma"] > 1 else 0)
        assert mod.bytes_moved(p) == want
        nnz = int((col >= 0).sum())
        assert mod.flops(p) == 2 * nnz
        assert want / 4.8e12 >= 50e-6 and mod.flops(p) / 60e12 < want / 4.8e12, p
        assert nnz <= slots < 1.5 * nnz, p                                   # padding below 50 %
        for cfg in _cfgs():
            a = mod.example_args(cfg, p)
            for k in ("VAL", "X", "Y"):
                assert a[k].device.type == "meta" and a[k].dtype == dts[p["dtype"]]
            assert a["VAL"].shape == col.shape and a["X"].shape == (n,) and a["Y"].shape == (n,)
            assert a["COL"] is col and a["SLICE_PTR"] is ptr
            assert (a["n_rows"], a["SLICE"], a["NUM_STAGES"]) == (n, C, cfg["num_stages"])
            assert (a["BLOCK_R"], a["BLOCK_K"]) == (cfg["BLOCK_R"], cfg["BLOCK_K"])
            g = mod.grid(cfg, p)
            assert g == (math.ceil(n / cfg["BLOCK_R"]),)
            it = mod.cta_iterations(cfg, p)
            assert len(it) == g[0] and min(it) >= 1
            assert max(it) == math.ceil(int(widths.max()) / cfg["BLOCK_K"])
            assert mod.loop_iterations(cfg, p) == math.ceil(sum(it) / len(it))
    P = mod.POINTS
    assert {p["dtype"] for p in P} == {"fp32", "fp16"} and {p["matrix"] for p in P} == set(mod.MATRICES)


def test_hooks_on_small_points_and_inputs():
    """make_inputs: the format, dtypes, the seed, not constant; the stencil's values (negative off-diagonals,
    a dominant diagonal); reference by hand on a 3-row matrix; cta_iterations by hand."""
    import torch

    mod = _mod()
    p = _lap("lap7", 4, 16, dtype="fp16")
    inp = mod.make_inputs(p, seed=1, device="cpu")
    col, val, ptr = inp["col"], inp["val"], inp["slice_ptr"]
    assert inp["n_rows"] == 64 and inp["C"] == 16 and inp["perm"] is None and inp["x"].dtype == torch.float16
    assert ptr.tolist() == [0, 16 * 6, 16 * 13, 16 * 20, 16 * 26]      # the z planes' widest rows: 6, 7, 7, 6
    assert val.dtype == torch.float16 and col.numel() == val.numel() == 16 * 26
    assert float(inp["x"].float().std()) > 0.5 and float(val.float().std()) > 1.0
    A = mod.reference({**inp, "x": torch.eye(64, dtype=torch.float64)[5]})    # column 5 of A
    assert A.shape == (64,) and float(A[5]) > 2.0 and float(A[4]) < -0.4 and float(A[6]) < -0.4 and float(A[0]) == 0
    again = mod.make_inputs(p, seed=1, device="cpu")
    assert torch.equal(again["val"], val) and torch.equal(again["x"], inp["x"])
    assert not torch.equal(mod.make_inputs(p, seed=2, device="cpu")["val"], val)
    g = mod.make_inputs(_graph(500, 6, 60, 32, 128, "fp32"), seed=0, device="cpu")
    assert g["perm"] is not None and sorted(g["perm"].tolist()) == list(range(500))
    # by hand: 3 rows, C 2, slices [rows 0, 1: widths 2] [row 2 and a pad row: width 1], perm [2, 0, 1]
    hand = {"col": torch.tensor([0, 2, 1, -1, 2, -1], dtype=torch.int32),
            "val": torch.tensor([1.0, 2.0, 3.0, 0.0, 4.0, 0.0]), "slice_ptr": torch.tensor([0, 4, 6], dtype=torch.int32),
            "perm": torch.tensor([2, 0, 1], dtype=torch.int32), "n_rows": 3, "C": 2,
            "x": torch.tensor([10.0, 100.0, 1000.0])}
    # stored row 0: 1 x[0] + 3 x[1] = 310 -> y[2]; stored 1: 2 x[2] = 2000 -> y[0]; stored 2: 4 x[2] -> y[1]
    assert mod.reference(hand).tolist() == [2000.0, 4000.0, 310.0]
    hand["csr"] = mod._to_csr(hand)
    assert mod.torch_baseline(hand).tolist() == [2000.0, 4000.0, 310.0]
    # cta_iterations: 27-point on 5^3 with C 32: slice widths [27, 27, 27, 18] (row 31 = (1, 1, 1) is interior)
    q = _lap("lap27", 5, 32)
    assert mod.cta_iterations(_cfg(32, 8), q) == [4, 4, 4, 3]
    assert mod.cta_iterations(_cfg(64, 16), q) == [2, 2] and mod.cta_iterations(_cfg(128, 4), q) == [7]
    assert mod.cta_iterations(_cfg(32, 4), _lap("lap7", 4, 64)) == [2, 2]
    assert mod.flops(q) == 2 * 13 ** 3                                      # (5 + 4 + 4)^3 nonzeros
    a = mod.example_args(_cfg(64, 16), q)
    assert a["SLICE_PTR"].tolist() == [0, 32 * 27, 32 * 54, 32 * 81, 32 * 99] and a["PERM"] is None


def test_bad_inputs_are_value_errors():
    import torch

    mod = _mod()
    col = torch.tensor([0, 1, -1, 1], dtype=torch.int32)
    val = torch.ones(4)
    x = torch.ones(2)
    ptr = torch.tensor([0, 4], dtype=torch.int32)

    def call(*a, **kw):
        a = a or (col, val, x, ptr, 2, 2)
        return mod.ell_spmv(*a, **kw)

    with pytest.raises(ValueError, match="BLOCK_R=48"):
        call(BLOCK_R=48)
    with pytest.raises(ValueError, match="BLOCK_K=3"):
        call(BLOCK_K=3)
    with pytest.raises(ValueError, match="4096 x 8"):
        call(BLOCK_R=4096, BLOCK_K=8)
    with pytest.raises(ValueError, match="num_warps=3"):
        call(num_warps=3)
    with pytest.raises(ValueError, match="num_stages=0"):
        call(num_stages=0)
    with pytest.raises(ValueError, match="x must be a contiguous 1-d"):
        call(col, val, x.double(), ptr, 2, 2)
    with pytest.raises(ValueError, match="x must be a contiguous 1-d"):
        call(col, val, torch.ones(4)[::2], ptr, 2, 2)
    with pytest.raises(ValueError, match="col must be a contiguous 1-d int32"):
        call(col.long(), val, x, ptr, 2, 2)
    with pytest.raises(ValueError, match="val must be a contiguous torch.float32"):
        call(col, val.half(), x, ptr, 2, 2)
    with pytest.raises(ValueError, match="C=3"):
        call(col, val, x, ptr, 2, 3)
    with pytest.raises(ValueError, match="n_rows=0"):
        call(col, val, x, ptr, 0, 2)
    with pytest.raises(ValueError, match=r"slice_ptr must be a contiguous int32 \[cdiv\(n_rows, C\) \+ 1 = 3\]"):
        call(col, val, x, ptr, 3, 2)
    with pytest.raises(ValueError, match="perm must be None or a contiguous int32"):
        call(col, val, x, ptr, 2, 2, torch.tensor([1, 0]))
    with pytest.raises(ValueError, match="col must be on x's device"):
        call(col.to("meta"), val, x, ptr, 2, 2)
    with pytest.raises(ValueError, match="dtype 'fp8'"):
        mod.make_inputs(_lap("lap7", 3, 4, dtype="fp8"), device="cpu")
    with pytest.raises(ValueError, match="matrix 'lap5'"):
        mod.bytes_moved(_lap("lap5", 3, 4))
    with pytest.raises(ValueError, match="C=24"):
        mod.flops(_lap("lap7", 3, 24))
    with pytest.raises(ValueError, match="sigma=0"):
        mod.grid(mod.BASELINE, _lap("lap7", 3, 4, 0))
    with pytest.raises(ValueError, match="nx=2000"):
        mod.example_args(mod.BASELINE, _lap("lap7", 2000, 32))
    with pytest.raises(ValueError, match="deg=100"):
        mod.bytes_moved(_graph(100, 100, 50, 32))
    with pytest.raises(ValueError, match="n=0"):
        mod.grid(mod.BASELINE, _graph(0, 2, 50, 32))
    with pytest.raises(ValueError, match="slots could exceed"):
        mod.grid(mod.BASELINE, _graph(2**30, 8, 256, 32))
    with pytest.raises(ValueError, match="BLOCK_R=None"):
        mod.grid(dict(mod.BASELINE, BLOCK_R=None), mod.POINTS[0])
    with pytest.raises(ValueError, match="BLOCK_K=12"):
        mod.cta_iterations(dict(mod.BASELINE, BLOCK_K=12), mod.POINTS[0])


def test_sweep_fits_the_points():
    """The study sweep: 54 configs (BLOCK_R 32-128 rows, BLOCK_K 4 / 8 / 16 slots a step, 4 / 8 warps, 1-3 stages
    of the slot loop) with BASELINE among them; at every point each config is valid and launches >= 10 waves of
    programs on an H200. (Every config was compiled for sm_90 at every point with triton 3.6.0 and 3.9, none
    spills -- the register and shared-memory ranges are in the module doc. Left out: BLOCK_R 256 -- 256 x 16 on 8
    warps at 2 stages spills 10 under 3.9 at the fp16 graph point.)"""
    mod = _mod()
    axes = SWEEP_AXES
    assert set(axes) == set(mod.TUNABLES) and mod.SWEEP_AXES == axes
    assert all(len(v) >= 2 for v in axes.values()) and "num_warps" in axes
    cfgs = _cfgs()
    assert 40 <= len(cfgs) <= 72 and mod.BASELINE in cfgs
    for p in mod.POINTS:
        for c in cfgs:
            mod._check_cfg(c)
            assert mod.grid(c, p)[0] >= 10 * H200_SMS, (p, c)


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
@pytest.mark.parametrize("pi", [0, 1, 2])
def test_example_compiles_sm90(shared_cache, pi):
    """On sm_90 at each point: BASELINE, the heaviest config (128 rows x 16 slots, 4 warps, 3 stages) and a small
    one compile from example_args without spills, within sm_90's shared memory (the pipelined steps' tiles: at
    most num_stages x BLOCK_K x BLOCK_R x 12 bytes, plus the reduction's). (Every config of the sweep was
    compiled at every point under both Tritons when the kernel was written: the module doc's figures; CI
    compiles these three.)"""
    from occmodel import compile_kernel

    mod = _mod()
    p = mod.POINTS[pi]
    for cfg in (_cfg(), _cfg(128, 16, 4, 3), _cfg(32, 4, 8, 1)):
        assert cfg in _cfgs()
        res = compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch="sm_90",
                             num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
        assert res.status == "ok", f"{cfg} at point {pi} on sm_90: {res.status}: {res.message}"
        assert 0 < res.n_regs <= 255 and res.n_spills == 0, (pi, cfg, res.n_regs, res.n_spills)
        buf = cfg["num_stages"] * cfg["BLOCK_K"] * cfg["BLOCK_R"] * 12 + 8192
        assert res.shared <= min(buf, SM90_SMEM_PER_BLOCK), (pi, cfg, res.shared)


SM120_CFGS = [_cfg(), _cfg(128, 16, 4, 1), _cfg(32, 4, 8, 2), _cfg(128, 16, 8, 3)]


@pytest.mark.slow
def test_example_compiles_sm120(shared_cache):
    """On sm_120 (99 KiB a block): BASELINE, the largest step unpipelined, a small one and a 3-stage one at the
    first point (27-point, fp32) compile without spills within its shared memory."""
    from occmodel import compile_kernel

    mod = _mod()
    for cfg in SM120_CFGS:
        res = compile_kernel(mod._kernel, args=mod.example_args(cfg, mod.POINTS[0]), arch="sm_120",
                             num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
        assert res.status == "ok", f"{cfg} on sm_120: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.n_spills == 0, (cfg, res.n_regs, res.n_spills)
        assert 0 <= res.shared <= SM120_SMEM_PER_BLOCK, (cfg, res.shared)


# ----------------------------------------------------------------- the subprocess side
def _run() -> None:
    """Every case through launch against reference (the harness's tolerance), the dense rebuild, the stencil
    pattern, the inputs' buffers, the grid, torch_baseline; one JSON line."""
    import torch

    H.patch_interpreter_bf16_rounding()
    H.patch_interpreter_index()
    mod = load_example(KERNEL)
    names = {torch.float16: "fp16", torch.bfloat16: "bf16", torch.float32: "fp32"}

    def extra(name, point, inputs, out, ref):
        cfg = CASES[KERNEL][name][1]
        A = _dense(inputs)
        dense = A @ inputs["x"].double()
        pattern = None
        if "nx" in point:
            pattern = bool(torch.equal(A != 0, _stencil_pattern(point["matrix"], point["nx"])))
        return {"dtype": names.get(out.dtype), "dense_err": float((out.double() - dense).abs().max()),
                "ref_vs_dense": float((ref - dense).abs().max()), "pattern_ok": pattern,
                "inputs_unchanged": all(torch.equal(inputs[k], v) for k, v in inputs["_copies"].items()),
                "has_perm": inputs["perm"] is not None, "grid": list(mod._grid(inputs["n_rows"], cfg)),
                "n_slices": inputs["slice_ptr"].numel() - 1,
                "baseline": H.compare(mod.torch_baseline(inputs), ref, point["dtype"])}

    H.run_cases(KERNEL, CASES[KERNEL], prepare=_prepare, extra=extra)


if __name__ == "__main__":
    _run()
