"""examples/chunk_cumsum.py and examples/bias_gelu.py against their torch references on the
CPU through Triton's interpreter, their launcher hooks against the shapes, and a compile for
sm_90 and sm_120 from their own ``example_args``.

As in test_examples_round5_a.py, the interpreter must be chosen before triton is imported,
so each kernel's cases run in a subprocess (this file run as a script:
``python tests/test_examples_round6_d.py chunk_cumsum``) that prints one JSON line; the
tests assert per case.

Shapes are small and odd: L (N) not a multiple of BLOCK_L (BLOCK_N), R (M) not a multiple
of BLOCK_R (BLOCK_M), a block wider than the whole row, one row, several chunks per row
(the carried prefix), strided row views. chunk_cumsum's output is fp32 whatever x's dtype,
so its tolerance is one for all dtypes and relative to each row's magnitude (max |ref|
over the row): a cumsum's values grow along the row, and a global scale would hide errors
in the short or small rows. bias_gelu's tolerances are per dtype, relative to the largest
reference magnitude.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
TOL = {"fp32": 1e-4, "bf16": 1.5e-2, "fp16": 2e-3}     # bias_gelu: x max|ref|, absolute, per element
CUMSUM_RTOL = 1e-5                                     # chunk_cumsum (fp32 out): x each row's max|ref|


def _cs(br, bl, w, s):
    return {"BLOCK_R": br, "BLOCK_L": bl, "num_warps": w, "num_stages": s}


def _bg(bm, bn, w, s):
    return {"BLOCK_M": bm, "BLOCK_N": bn, "num_warps": w, "num_stages": s}


# kernel module -> case name -> (point, cfg)
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    "chunk_cumsum": {
        "ragged_rows_and_cols_bf16": ({"R": 13, "L": 300, "dtype": "bf16"}, _cs(4, 64, 4, 1)),
        "many_chunks_fp32": ({"R": 5, "L": 1000, "dtype": "fp32"}, _cs(2, 32, 2, 2)),
        "block_wider_than_row_fp16": ({"R": 7, "L": 45, "dtype": "fp16"}, _cs(8, 128, 8, 1)),
        "one_row_fp32": ({"R": 1, "L": 517, "dtype": "fp32"}, _cs(1, 256, 4, 3)),
        "exact_tiles_bf16": ({"R": 8, "L": 256, "dtype": "bf16"}, _cs(4, 64, 1, 1)),
        "mixed_sign_strided_fp32": ({"R": 6, "L": 200, "dtype": "fp32"}, _cs(2, 64, 4, 2)),
    },
    "bias_gelu": {
        "ragged_m_and_n_bf16": ({"M": 13, "N": 300, "dtype": "bf16"}, _bg(4, 128, 4, 1)),
        "many_chunks_fp32": ({"M": 5, "N": 1000, "dtype": "fp32"}, _bg(2, 64, 2, 2)),
        "block_wider_than_row_fp16": ({"M": 7, "N": 45, "dtype": "fp16"}, _bg(8, 256, 8, 1)),
        "one_row_fp32": ({"M": 1, "N": 517, "dtype": "fp32"}, _bg(1, 256, 4, 3)),
        "exact_tiles_fp16": ({"M": 8, "N": 512, "dtype": "fp16"}, _bg(4, 128, 1, 1)),
        "large_values_strided_fp32": ({"M": 6, "N": 200, "dtype": "fp32"}, _bg(2, 64, 4, 2)),
    },
}

# kernel module -> configs compiled for each arch at the module's first POINT (BASELINE first)
COMPILE_CFGS: dict[str, list[dict]] = {
    "chunk_cumsum": [_cs(4, 512, 4, 1), _cs(8, 2048, 8, 2), _cs(1, 256, 4, 1)],
    "bias_gelu": [_bg(4, 1024, 4, 1), _bg(8, 2048, 8, 2), _bg(1, 256, 4, 1)],
}

SWEEP_SIZES = {"chunk_cumsum": (64, 3), "bias_gelu": (64, 3)}


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """Edit a case's inputs: mixed-sign and large values; x as a strided view of a wider buffer."""
    import torch

    x = inputs["x"]
    if name == "mixed_sign_strided_fp32":
        x = torch.randn(x.shape, dtype=x.dtype) * 3.0
    if name == "large_values_strided_fp32":
        x = torch.randn(x.shape, dtype=x.dtype) * 30.0      # exp2 overflows to inf for h << 0
    if name.endswith("strided_fp32"):
        wide = torch.zeros((x.shape[0], x.shape[1] + 24), dtype=x.dtype)
        wide[:, 7:7 + x.shape[1]] = x
        x = wide[:, 7:7 + x.shape[1]]
        assert not x.is_contiguous() and x.stride(1) == 1
    inputs["x"] = x


def _row_compare(out, ref, dtype, tol_table=None) -> dict:
    """Elements of `out` farther from `ref` than CUMSUM_RTOL x their row's max|ref| (or not finite)."""
    import torch

    out = out.float()
    scale = ref.abs().amax(dim=-1, keepdim=True).clamp_min(1e-6)
    tol = CUMSUM_RTOL * scale
    diff = (out - ref).abs()
    bad = (diff > tol) | ~torch.isfinite(out)
    return {"n_bad": int(bad.sum()), "numel": out.numel(), "max_err": float(diff.max()),
            "tol": float(tol.min()), "scale": float(scale.max()), "shape": list(out.shape),
            "dtype_out": str(out.dtype)}


# ----------------------------------------------------------------- the pytest side
def _results(kernel: str) -> dict:
    return H.interpreter_results(HERE, kernel)


@pytest.mark.parametrize("kernel,name", [(k, n) for k, cases in CASES.items() for n in cases])
def test_example_matches_reference(kernel, name):
    res = _results(kernel)[name]
    assert "error" not in res, f"{kernel}/{name}: {res.get('error')}"
    for what, r in (("kernel", res), ("torch_baseline", res["baseline"])):
        assert r["n_bad"] == 0, H.mismatch(r, f"{kernel}/{name} {what}")


def test_cases_cover_every_tunable_value():
    """Each tunable takes at least two values over a kernel's cases; masked tails are hit."""
    H.assert_tunables_covered(CASES)
    for kernel, (r, l, br, bl) in (("chunk_cumsum", ("R", "L", "BLOCK_R", "BLOCK_L")),
                                   ("bias_gelu", ("M", "N", "BLOCK_M", "BLOCK_N"))):
        cs = CASES[kernel].values()
        assert any(p[l] % c[bl] for p, c in cs) and any(p[r] % c[br] for p, c in cs)
        assert any(p[l] < c[bl] for p, c in cs) and any(p[r] < c[br] for p, c in cs)
        assert any(p[l] // c[bl] >= 8 for p, c in cs)                   # many chunks: the carried prefix
        assert any(p[l] % c[bl] == 0 and p[r] % c[br] == 0 for p, c in cs)



@pytest.mark.parametrize("kernel", list(CASES))
def test_launcher_hooks_agree_with_shapes(kernel):
    """At every default point: the meta tensors of example_args are exactly the bytes
    bytes_moved counts (each read or written once), grid and loop_iterations are the
    tiling of those shapes."""
    import torch
    import triton

    mod = load_example(kernel)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "example_args", "torch_baseline"):
        assert callable(getattr(mod, fn, None)), f"{kernel} lacks {fn}"
    assert len(mod.POINTS) == 3 and {p["dtype"] for p in mod.POINTS} == set(mod.DTYPES)
    for cfg in [mod.BASELINE] + COMPILE_CFGS[kernel]:
        for p in mod.POINTS:
            args = mod.example_args(cfg, p)
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for v in args.values())
            assert H.meta_nbytes(args) == mod.bytes_moved(p) > 50 * 2**20, (kernel, p)
            e = 4 if p["dtype"] == "fp32" else 2
            if kernel == "chunk_cumsum":
                R, L = p["R"], p["L"]
                assert args["X"].shape == args["Y"].shape == (R, L) and args["Y"].dtype == torch.float32
                assert args["X"].element_size() == e
                assert (args["R"], args["L"], args["stride_xr"], args["stride_yr"]) == (R, L, L, L)
                assert (args["BLOCK_R"], args["BLOCK_L"]) == (cfg["BLOCK_R"], cfg["BLOCK_L"])
                assert mod.bytes_moved(p) == R * L * (e + 4)
                assert mod.grid(cfg, p) == triton.cdiv(R, cfg["BLOCK_R"])
                assert mod.loop_iterations(cfg, p) == triton.cdiv(L, cfg["BLOCK_L"])
                assert mod.flops(p) == 3 * R * L
            else:
                M, N = p["M"], p["N"]
                assert args["X"].shape == args["Y"].shape == (M, N) and args["Bias"].shape == (N,)
                assert args["X"].element_size() == args["Y"].element_size() == args["Bias"].element_size() == e
                assert (args["M"], args["N"], args["stride_xm"], args["stride_ym"]) == (M, N, N, N)
                assert (args["BLOCK_M"], args["BLOCK_N"]) == (cfg["BLOCK_M"], cfg["BLOCK_N"])
                assert mod.bytes_moved(p) == (2 * M * N + N) * e
                assert mod.grid(cfg, p) == triton.cdiv(M, cfg["BLOCK_M"])
                assert mod.loop_iterations(cfg, p) == triton.cdiv(N, cfg["BLOCK_N"])
                assert mod.flops(p) == 10 * M * N


def test_hooks_on_small_points_and_inputs():
    import torch

    cs, bg = load_example("chunk_cumsum"), load_example("bias_gelu")
    p = {"R": 13, "L": 300, "dtype": "bf16"}
    assert cs.grid(_cs(4, 64, 4, 1), p) == 4 and cs.loop_iterations(_cs(4, 64, 4, 1), p) == 5
    assert cs.bytes_moved(p) == 13 * 300 * 6
    inputs = cs.make_inputs(p, device="cpu")
    assert inputs["x"].dtype == torch.bfloat16 and float(inputs["x"].float().max()) <= 0.0
    ref = cs.reference(inputs)
    assert ref.dtype == torch.float32 and torch.all(ref[:, 1:] <= ref[:, :-1])    # log-decays: monotone
    assert cs.torch_baseline(inputs).dtype == torch.float32
    p = {"M": 7, "N": 45, "dtype": "fp16"}
    assert bg.grid(_bg(8, 256, 8, 1), p) == 1 and bg.loop_iterations(_bg(8, 16, 8, 1), p) == 3
    assert bg.bytes_moved(p) == 2 * (2 * 7 * 45 + 45)
    inputs = bg.make_inputs(p, device="cpu")
    assert inputs["bias"].shape == (45,) and inputs["x"].dtype == torch.float16
    h = torch.tensor([-30.0, -3.0, 0.0, 1.0, 30.0])
    y = bg.reference({"x": h, "bias": torch.zeros(())})
    assert torch.allclose(y, 0.5 * h * (1 + torch.tanh(0.7978845608 * (h + 0.044715 * h ** 3))), atol=1e-6)


def test_bad_inputs_are_value_errors():
    import torch

    cs, bg = load_example("chunk_cumsum"), load_example("bias_gelu")
    x = torch.randn(4, 16)
    with pytest.raises(ValueError, match="BLOCK_L=100"):
        cs.chunk_cumsum(x, BLOCK_L=100)
    with pytest.raises(ValueError, match=r"\[R, L\]"):
        cs.chunk_cumsum(x[0])
    with pytest.raises(ValueError, match="int32"):
        cs.chunk_cumsum(x.int())
    with pytest.raises(ValueError, match="fp8"):
        cs.make_inputs({"R": 1, "L": 8, "dtype": "fp8"}, device="cpu")
    b = torch.randn(16)
    with pytest.raises(ValueError, match="BLOCK_M=3"):
        bg.bias_gelu(x, b, BLOCK_M=3)
    with pytest.raises(ValueError, match=r"\(4, 16\), \(15,\)"):
        bg.bias_gelu(x, b[:15])
    with pytest.raises(ValueError, match="torch.float16"):
        bg.bias_gelu(x, b.half())


def test_study_sweeps_declare_round6_d():
    """scripts/rank_study.py's SWEEPS: both kernels held-out-6, >= 40 configs x the 3 POINTS each
    (every config checked to compile and fit for sm_90 at every point with triton 3.6.0)."""
    sizes = {}
    for name, (cfgs, points, _) in H.study_sweeps(CASES, "held-out-6").items():
        sizes[name] = (len(cfgs), len(points))
        assert load_example(name).BASELINE in cfgs
        assert points == load_example(name).POINTS
    assert sizes == SWEEP_SIZES and all(n >= 40 for n, _ in sizes.values())


def test_examples_import_without_torch():
    """The launcher contract: a module imports with no torch (it is imported inside the functions)."""
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
        assert res.n_regs > 0 and res.shared >= 0


if __name__ == "__main__":
    if sys.argv[1] == "chunk_cumsum":
        H.compare = _row_compare          # run_cases looks compare up at call time: per-row tolerance
    H.run_cases(sys.argv[1], CASES[sys.argv[1]], TOL, prepare=_prepare, baseline=True)
