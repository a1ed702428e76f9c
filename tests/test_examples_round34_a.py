"""examples/tridiag_solve.py (a batched tridiagonal solver: S interleaved systems [N, S], system index fastest, as
cuSPARSE's gtsvInterleavedBatch, solved by the Thomas algorithm -- a lane a system, a program BLOCK_S systems,
the forward sweep ROWS rows a step storing c' / d', the backward sweep reading them back) against its torch
reference on the CPU through Triton's interpreter, its launcher hooks against the shapes, its sweep against the
points, and a compile for sm_90 and sm_120 from its own ``example_args``.

As in test_examples_round33_a.py the interpreter cases run in a subprocess (this file run as a script:
``python tests/test_examples_round34_a.py tridiag_solve``) that prints one JSON line. The subprocess installs
the harness's interpreter fixes.

Shapes are small, odd and ragged: both dtypes x the three coefficient kinds (ADI, spline, AOS); N of 1, 2, 3
(below ROWS), 7, 13, 29, 40 (ragged against ROWS and a multiple of it); S from 1 to 300, ragged against BLOCK_S
and below it; the coefficients rows of NaN-padded buffers (row pitch S + 7, a[0] and c[N-1] NaN: never read),
out a view into a wider NaN-filled buffer; every sweep value of every tunable, num_stages 2.

Per case: launch's output within TOL x max|ref| of the float64 Thomas reference (the harness's float32
comparison) and within TOL64 x max|ref| in float64 (1e-12 for fp64), the residual A x - d of the output and of
the reference (float64, an independent check of the reference) within 4 x TOL64 x max|d|; the output in the inputs'
dtype, [N, S], fresh and contiguous (or the caller's view, its padding untouched); the inputs unchanged;
torch_baseline within tolerance too.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
KERNEL = "tridiag_solve"
ROLE = "held-out-34"
H100_SMS = 132
SM90_SMEM_PER_BLOCK = 227 * 1024
SM120_SMEM_PER_BLOCK = 99 * 1024
TOL = {"fp32": 2e-5, "fp64": 2e-7}        # x max|ref|; the harness compares in float32 (fp64 output rounded)
TOL64 = {"fp32": 2e-5, "fp64": 1e-12}     # in float64: diagonally dominant Thomas, a few ulps x a small growth

SWEEP_AXES = {"BLOCK_S": [32, 64, 128, 256], "ROWS": [1, 2, 4], "EVICT": [0, 1], "num_warps": [2, 4],
              "num_stages": [1]}


def _cfg(bs, rows=2, evict=0, w=4, st=1):
    return {"BLOCK_S": bs, "ROWS": rows, "EVICT": evict, "num_warps": w, "num_stages": st}


def _pt(N, S, dtype="fp32", kind="adi"):
    return {"N": N, "S": S, "dtype": dtype, "kind": kind}


# case -> (point, cfg)
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        # the 3-D ADI point scaled down: 29 rows in steps of 4 (the last step 1 of 4), 300 systems in 3 x 128
        "adi_fp32": (_pt(29, 300, "fp32", "adi"), _cfg(128, 4, 0, 4)),
        # the spline point scaled down: fp64, 40 rows in steps of 2, 200 systems in 64s on 2 warps, streaming hints
        "spline_fp64": (_pt(40, 200, "fp64", "spline"), _cfg(64, 2, 1, 2)),
        # the AOS image point scaled down: 13 rows one at a time, 257 systems in 256s (the second holds one)
        "aos_fp32_rows1": (_pt(13, 257, "fp32", "aos"), _cfg(256, 1, 1, 8)),
        # fp64 ADI, 7 rows in steps of 4, 100 systems in one block of 256 on 4 warps
        "adi_fp64_rows4": (_pt(7, 100, "fp64", "adi"), _cfg(256, 4, 0, 4)),
        # a single row (x = d / b), 70 systems in 2 x 64
        "one_row": (_pt(1, 70, "fp32", "spline"), _cfg(32, 4, 1, 4)),
        # two rows (no interior row), fp64, a single system
        "two_rows_one_system": (_pt(2, 1, "fp64", "aos"), _cfg(128, 2, 0, 2)),
        # three rows below ROWS 4, fp32 spline, 130 systems in 128s on 2 warps
        "three_rows": (_pt(3, 130, "fp32", "spline"), _cfg(128, 4, 1, 2)),
        # strided: coefficient rows with pitch S + 7 in NaN-filled buffers, out a view into a wider buffer
        "strided_fp32": (_pt(13, 90, "fp32", "aos"), _cfg(64, 2, 0, 8)),
        "strided_fp64": (_pt(16, 150, "fp64", "adi"), _cfg(32, 1, 1, 2)),
        # num_stages 2 (nothing to pipeline: the same result), N a multiple of ROWS
        "stages2": (_pt(16, 96, "fp32", "adi"), _cfg(64, 4, 0, 2, 2)),
        # fp64 spline, 256 systems on 2 warps, ROWS 1
        "spline_fp64_wide": (_pt(11, 260, "fp64", "spline"), _cfg(256, 1, 0, 2)),
    },
}
STRIDED = ("strided_fp32", "strided_fp64")
ROW_PAD, OUT_PAD, OUT_OFF = 7, 37, 5

# configs compiled on sm_90 at each point (the full sweep was compiled by hand, see test_sweep_fits_the_points):
# BASELINE, the most registers (fp64: 256 systems x 4 rows on 2 warps; fp32: 128 x 4 on 2 warps, 256 x 4 on 4)
# and the fewest (32 x 1 on 4 warps)
COMPILE_CFGS = {0: [_cfg(128, 2, 0, 4), _cfg(256, 4, 1, 4), _cfg(32, 1, 0, 4)],
                1: [_cfg(256, 4, 0, 2), _cfg(128, 4, 1, 2), _cfg(32, 4, 1, 2)],
                2: [_cfg(128, 4, 1, 2), _cfg(64, 4, 0, 4)]}
SM120_CFGS = [_cfg(128, 2, 0, 4), _cfg(256, 4, 1, 2), _cfg(32, 4, 1, 4)]


def _smem_bound(cfg, dtype="fp64") -> int:
    """An upper bound of a config's shared memory: layout conversions / cross-warp reductions of one
    [ROWS, BLOCK_S] tile (no pipelined buffers), at least 1 KiB a warp."""
    e = 8 if dtype == "fp64" else 4
    return max(1024 * cfg["num_warps"], cfg["ROWS"] * cfg["BLOCK_S"] * e)


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """The strided variants (module doc); a[0] and c[N-1] set to NaN everywhere (never read); then copies."""
    import torch

    N, S = inputs["b"].shape
    inputs["a"][0] = float("nan")
    inputs["c"][N - 1] = float("nan")
    if name in STRIDED:
        for k in ("a", "b", "c", "d"):
            t = inputs[k]
            big = torch.full((N, S + ROW_PAD), float("nan"), dtype=t.dtype)
            big[:, :S] = t
            inputs[k] = big[:, :S]
        ob = torch.full((N, S + OUT_PAD), float("nan"), dtype=inputs["b"].dtype)
        inputs["out_buf"] = ob
        inputs["out"] = ob[:, OUT_OFF:OUT_OFF + S]
    for k in ("a", "b", "c", "d"):
        inputs[k + "0"] = inputs[k].clone()


# ----------------------------------------------------------------- the pytest side
def _results() -> dict:
    return H.interpreter_results(HERE, KERNEL)


@pytest.mark.parametrize("name", list(CASES[KERNEL]))
def test_example_matches_reference(name):
    res = _results()[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    p, cfg = CASES[KERNEL][name]
    assert res["n_bad"] == 0, H.mismatch(res, f"{name} launch")
    assert res["shape"] == [p["N"], p["S"]] and res["dtype"] == p["dtype"], res
    assert res["err64"] <= TOL64[p["dtype"]] * res["scale"], res
    assert res["residual"] <= 4 * TOL64[p["dtype"]] * res["d_scale"], res
    assert res["ref_residual"] <= 4 * TOL64["fp64"] * res["d_scale"], res
    assert res["inputs_unchanged"] is True, res
    assert res["baseline_bad"] == 0, res
    if name in STRIDED:
        assert res["is_view"] is True and res["pad_untouched"] is True, res
        assert res["in_stride"] == p["S"] + ROW_PAD and res["out_stride"] == p["S"] + OUT_PAD, res
    else:
        assert res["contiguous"] is True, res
    if p["N"] * p["S"] > 1:
        assert res["n_distinct"] > 1, res


def test_cases_cover_every_code_path():
    """Both dtypes, every kind; N of 1 and 2, N below ROWS, N ragged against ROWS and a multiple of it; S below
    BLOCK_S and ragged above it; strided inputs / out at both dtypes; every sweep value of every tunable,
    num_stages 2."""
    H.assert_tunables_covered(CASES)
    mod = load_example(KERNEL)
    cases = CASES[KERNEL]
    assert {p["dtype"] for p, _ in cases.values()} == set(mod.DTYPES)
    assert {p["kind"] for p, _ in cases.values()} == set(mod.KINDS)
    assert {(p["dtype"], c["EVICT"]) for p, c in cases.values()} == set(itertools.product(mod.DTYPES, (0, 1)))
    assert {p["N"] for p, _ in cases.values()} >= {1, 2}
    assert any(p["N"] < c["ROWS"] for p, c in cases.values())
    assert any(p["N"] % c["ROWS"] and p["N"] > c["ROWS"] for p, c in cases.values())
    assert any(p["N"] % c["ROWS"] == 0 and c["ROWS"] > 1 for p, c in cases.values())
    assert any(p["S"] < c["BLOCK_S"] for p, c in cases.values())
    assert any(p["S"] % c["BLOCK_S"] and p["S"] > c["BLOCK_S"] for p, c in cases.values())
    assert {cases[s][0]["dtype"] for s in STRIDED} == set(mod.DTYPES)
    for k, vals in SWEEP_AXES.items():
        assert {c[k] for _, c in cases.values()} >= set(vals), k
    assert 2 in {c["num_stages"] for _, c in cases.values()}


def test_launcher_hooks_agree_with_shapes():
    """At every point and sweep config: example_args -- a, b, c, d, x and the c' scratch on meta, contiguous --
    with the launch's shapes, dtypes, strides and constants; the 1-D grid and the loop length; bytes_moved /
    flops; 0.6-2.5 GB moved a point."""
    import torch

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "example_args", "torch_baseline", "tridiag_solve"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert not hasattr(mod, "secondary_kernels") and not hasattr(mod, "cta_iterations")
    assert len(mod.POINTS) == 3 and mod.ROLE == ROLE and mod.SWEEP_AXES == SWEEP_AXES
    dts = {"fp32": torch.float32, "fp64": torch.float64}
    cfgs = [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]
    for p in mod.POINTS:
        N, S = p["N"], p["S"]
        for cfg in cfgs:
            a = mod.example_args(cfg, p)
            for k in ("A", "B", "C", "D", "X", "CP"):
                t = a[k]
                assert t.device.type == "meta" and t.shape == (N, S) and t.dtype == dts[p["dtype"]], k
            assert (a["N"], a["S"]) == (N, S)
            assert all(a[f"stride_{k}"] == S for k in ("a", "b", "c", "d", "x", "cp"))
            assert (a["BLOCK_S"], a["ROWS"], a["EVICT"]) == (cfg["BLOCK_S"], cfg["ROWS"], cfg["EVICT"])
            assert mod.grid(cfg, p) == (-(-S // cfg["BLOCK_S"]),)
            assert mod.loop_iterations(cfg, p) == 2 * -(-N // cfg["ROWS"])
        e = 4 if p["dtype"] == "fp32" else 8
        assert mod.bytes_moved(p) == 9 * N * S * e
        assert 0.5e9 < mod.bytes_moved(p) < 2.5e9
        assert mod.flops(p) == 10 * N * S
    P = mod.POINTS
    assert [(p["N"], p["S"], p["dtype"], p["kind"]) for p in P] == [
        (256, 65_536, "fp32", "adi"), (1024, 32_768, "fp64", "spline"), (2160, 11_520, "fp32", "aos")]


def test_hooks_on_small_points_and_inputs():
    """reference and torch_baseline by hand; make_inputs' seed, dtypes and diagonal dominance; grid / loop;
    bytes / flops; the wrapper's empty batch and its out argument."""
    import torch

    mod = load_example(KERNEL)
    # by hand: [[2, 1, 0], [1, 3, 1], [0, 1, 2]] x = [4, 10, 8] -> x = [1, 2, 3]; a[0], c[2] ignored
    a = torch.tensor([[99.0], [1.0], [1.0]], dtype=torch.float64)
    b = torch.tensor([[2.0], [3.0], [2.0]], dtype=torch.float64)
    c = torch.tensor([[1.0], [1.0], [-99.0]], dtype=torch.float64)
    d = torch.tensor([[4.0], [10.0], [8.0]], dtype=torch.float64)
    inp = {"a": a, "b": b, "c": c, "d": d}
    assert torch.allclose(mod.reference(inp), torch.tensor([[1.0], [2.0], [3.0]], dtype=torch.float64))
    assert torch.allclose(mod.torch_baseline(inp), torch.tensor([[1.0], [2.0], [3.0]], dtype=torch.float64))
    one = {k: v[:1] for k, v in inp.items()}
    assert mod.reference(one).tolist() == [[2.0]]
    # make_inputs: seeded, dtypes, strictly diagonally dominant
    for kind in mod.KINDS:
        p = _pt(50, 40, "fp64", kind)
        x = mod.make_inputs(p, seed=1, device="cpu")
        assert all(x[k].dtype == torch.float64 and x[k].shape == (50, 40) for k in "abcd")
        dom = x["b"].abs() - x["a"].abs() * (torch.arange(50) > 0)[:, None] - x["c"].abs() * (torch.arange(50) < 49)[:, None]
        assert float(dom.min()) > 0.01, kind
        assert x["d"].unique().numel() > 1000 and x["a"].unique().numel() > 1000
        assert torch.equal(mod.make_inputs(p, seed=1, device="cpu")["d"], x["d"])
        assert not torch.equal(mod.make_inputs(p, seed=2, device="cpu")["d"], x["d"])
    assert mod.make_inputs(_pt(3, 4), device="cpu")["b"].dtype == torch.float32
    # grid / loop, bytes / flops
    cfg = _cfg(128, 4)
    assert mod.grid(cfg, _pt(10, 300)) == (3,) and mod.grid(cfg, _pt(10, 128)) == (1,)
    assert mod.loop_iterations(cfg, _pt(10, 300)) == 6 and mod.loop_iterations(cfg, _pt(1, 5)) == 2
    assert mod.bytes_moved(_pt(10, 300, "fp64")) == 9 * 3000 * 8
    assert mod.flops(_pt(10, 300)) == 30_000
    # nothing to solve: an empty [N, 0] result, nothing launched
    x = mod.make_inputs(_pt(5, 3), device="cpu")
    e = mod.tridiag_solve(*(x[k][:, :0] for k in "abcd"))
    assert e.shape == (5, 0) and e.dtype == torch.float32


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    inp = mod.make_inputs(_pt(6, 20), device="cpu")
    a, b, c, d = (inp[k] for k in "abcd")
    with pytest.raises(ValueError, match="BLOCK_S=100"):
        mod.tridiag_solve(a, b, c, d, BLOCK_S=100)
    with pytest.raises(ValueError, match="ROWS=3"):
        mod.tridiag_solve(a, b, c, d, ROWS=3)
    with pytest.raises(ValueError, match="EVICT=2"):
        mod.tridiag_solve(a, b, c, d, EVICT=2)
    with pytest.raises(ValueError, match="num_warps=3"):
        mod.tridiag_solve(a, b, c, d, num_warps=3)
    with pytest.raises(ValueError, match="num_stages=0"):
        mod.tridiag_solve(a, b, c, d, num_stages=0)
    with pytest.raises(ValueError, match="b must be a 2-d float32"):
        mod.tridiag_solve(a, b.half(), c, d)
    with pytest.raises(ValueError, match="b must be a 2-d float32"):
        mod.tridiag_solve(a, b[0], c, d)
    with pytest.raises(ValueError, match="a must be a torch.float32"):
        mod.tridiag_solve(a.double(), b, c, d)
    with pytest.raises(ValueError, match="d must be a torch.float32"):
        mod.tridiag_solve(a, b, c, d[:5])
    with pytest.raises(ValueError, match="c must have a unit system stride"):
        mod.tridiag_solve(a, b, torch.zeros((20, 6)).t(), d)
    with pytest.raises(ValueError, match="a must be on b's device"):
        mod.tridiag_solve(a.to("meta"), b, c, d)
    with pytest.raises(ValueError, match="out must be a torch.float32"):
        mod.tridiag_solve(a, b, c, d, out=torch.empty((6, 19)))
    with pytest.raises(ValueError, match="out must be a torch.float32"):
        mod.tridiag_solve(a, b, c, d, out=torch.empty((20, 6)).t())
    with pytest.raises(ValueError, match="b must be \\[N, S\\]"):
        mod.tridiag_solve(a[:0], b[:0], c[:0], d[:0])
    with pytest.raises(ValueError, match="dtype 'bf16'"):
        mod.make_inputs(_pt(2, 10, "bf16"), device="cpu")
    with pytest.raises(ValueError, match="kind 'fft'"):
        mod.bytes_moved(_pt(2, 10, "fp32", "fft"))
    with pytest.raises(ValueError, match="N=0"):
        mod.grid(mod.BASELINE, _pt(0, 10))
    with pytest.raises(ValueError, match="S=0"):
        mod.flops(_pt(4, 0))
    with pytest.raises(ValueError, match="S=2.5"):
        mod.example_args(mod.BASELINE, _pt(2, 2.5))
    with pytest.raises(ValueError, match="ROWS=3"):
        mod.loop_iterations(dict(mod.BASELINE, ROWS=3), mod.POINTS[0])
    with pytest.raises(ValueError, match="BLOCK_S='abc'"):
        mod.grid(dict(mod.BASELINE, BLOCK_S="abc"), mod.POINTS[0])


def test_sweep_fits_the_points():
    """The sweep: 48 configs (BLOCK_S 32 / 64 / 128 / 256, ROWS 1 / 2 / 4, EVICT 0 / 1, 2 / 4 warps, num_stages
    1) with BASELINE among them; at every point each config is valid and fits the shared-memory bound; the grid
    is >= 45 programs (the 4K AOS point at 256 systems a program: fewer than the SMs, the systems are the only
    parallelism) and the ADI point has a program for each of 132 SMs at every BLOCK_S. (Every config was compiled
    for sm_90 at the fp32 and the fp64 specializations with triton 3.6.0 and 3.9.0: all compile, none spills;
    registers 28-122 fp32 / 40-180 fp64 under 3.6, 31-118 fp32 / 40-180 fp64 under 3.9, the most for 256
    systems x 4 rows on 2 warps in fp64; shared memory 0-2048 bytes under both, layout conversions and cross-warp
    row picks only. 8 warps and ROWS 8 spilled and are left out: the module doc.)"""
    mod = load_example(KERNEL)
    axes = SWEEP_AXES
    assert set(axes) == set(mod.TUNABLES) and mod.SWEEP_AXES == axes
    assert all(len(v) >= 2 for k, v in axes.items() if k != "num_stages") and axes["num_stages"] == [1]
    cfgs = [dict(zip(axes, v)) for v in itertools.product(*axes.values())]
    assert 40 <= len(cfgs) <= 72 and mod.BASELINE in cfgs
    fewest = min(mod.grid(c, p)[0] for p in mod.POINTS for c in cfgs)
    assert fewest == 45
    for p in mod.POINTS:
        for c in cfgs:
            mod._check_cfg(c)
            (g,) = mod.grid(c, p)
            assert _smem_bound(c, p["dtype"]) <= SM90_SMEM_PER_BLOCK, (p, c)
            assert mod.loop_iterations(c, p) == 2 * -(-p["N"] // c["ROWS"])
    assert min(mod.grid(c, mod.POINTS[0])[0] for c in cfgs) >= H100_SMS


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
    """On sm_90 at each point: BASELINE, the most registers (fp64 256 systems x 4 rows on 2 warps, 180 registers;
    fp32 128 x 4 on 2 warps) and the fewest compile without spills within the shared bound."""
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
            assert 0 <= res.shared <= _smem_bound(cfg, p["dtype"]), (pi, cfg, res.shared)


@pytest.mark.slow
def test_example_compiles_sm120(shared_cache):
    """On sm_120 (99 KiB a block): BASELINE, 256 x 4 on 2 warps and 32 x 4 on 4 warps compile at the first point
    (3-D ADI, fp32) without spills within its shared memory."""
    for cfg, res in H.compile_results(KERNEL, SM120_CFGS, "sm_120"):
        assert res.status == "ok", f"{cfg} on sm_120: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.n_spills == 0, (cfg, res.n_regs, res.n_spills)
        assert 0 <= res.shared <= min(_smem_bound(cfg, "fp32"), SM120_SMEM_PER_BLOCK), (cfg, res.shared)


# ----------------------------------------------------------------- the subprocess side
def _run() -> None:
    """Every case through launch against reference, and the residual A x - d of the output and of the
    reference in float64; torch_baseline against reference; the inputs unchanged; one JSON line."""
    import torch

    H.patch_interpreter_index()
    mod = load_example(KERNEL)

    def residual(inputs, x):
        a, b, c, d = (inputs[k].double() for k in "abcd")
        x = x.double()
        r = b * x - d
        r[1:] += a[1:] * x[:-1]
        r[:-1] += c[:-1] * x[1:]
        return float(r.abs().max())

    def extra(name, point, inputs, out, ref):
        N, S = out.shape
        unchanged = all(torch.equal(inputs[k].nan_to_num(), inputs[k + "0"].nan_to_num()) for k in "abcd")
        base = H.compare(mod.torch_baseline(inputs), ref, point["dtype"], TOL)
        res = {"dtype": {torch.float32: "fp32", torch.float64: "fp64"}.get(out.dtype, str(out.dtype)),
               "contiguous": out.is_contiguous(), "inputs_unchanged": unchanged, "baseline_bad": base["n_bad"],
               "residual": residual(inputs, out), "ref_residual": residual(inputs, ref),
               "d_scale": float(inputs["d"].abs().max()), "err64": float((out.double() - ref).abs().max()), "n_distinct": int(out.unique().numel())}
        if name in STRIDED:
            ob = inputs["out_buf"]
            pad = torch.ones_like(ob, dtype=torch.bool)
            pad[:, OUT_OFF:OUT_OFF + S] = False
            res.update(is_view=out.data_ptr() == inputs["out"].data_ptr(),
                       pad_untouched=bool(ob[pad].isnan().all()) and bool(torch.equal(ob[:, OUT_OFF:OUT_OFF + S], out)),
                       in_stride=inputs["a"].stride(0), out_stride=out.stride(0))
        return res

    H.run_cases(KERNEL, CASES[KERNEL], tol_table=TOL, prepare=_prepare, extra=extra)


if __name__ == "__main__":
    _run()
