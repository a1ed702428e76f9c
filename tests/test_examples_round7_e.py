"""examples/fused_add_rmsnorm.py against its fp32 torch reference on the CPU through Triton's
interpreter, its launcher hooks against the shapes, and a compile for sm_90 and sm_120 from
its own ``example_args``.

As in test_examples_round5_a.py, the interpreter must be chosen before triton is imported,
so the cases run in a subprocess (this file run as a script:
``python tests/test_examples_round7_e.py fused_add_rmsnorm``) that prints one JSON line; the
tests assert per case. A second subprocess (``... parts``) checks the two halves of the
[2, M, N] output on their own: the new residual bit-exact against x + residual in the input
dtype (for bf16, or its truncation: the interpreter's fp32 -> bf16 cast truncates), y against the reference's y with y's own scale (the whole-buffer comparison takes
its scale from r, which is larger).

Shapes are small and odd: M not a multiple of BLOCK_M (a partial last CTA), N not a multiple
of BLOCK_N, a block wider than the row, one row per CTA, exact tiles, x and residual as
strided row views of wider buffers, a large residual. Tolerances relative to the largest
reference magnitude, per dtype.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
TOL = {"fp32": 1e-4, "bf16": 1.5e-2, "fp16": 2e-3}     # x max|ref|, absolute, per element
KERNEL = "fused_add_rmsnorm"


def _cfg(bm, bn, w, s):
    return {"BLOCK_M": bm, "BLOCK_N": bn, "num_warps": w, "num_stages": s}


# kernel module -> case name -> (point, cfg)
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        "ragged_m_and_n_bf16": ({"M": 7, "N": 300, "dtype": "bf16"}, _cfg(2, 128, 4, 1)),
        "block_wider_than_row_fp16": ({"M": 5, "N": 100, "dtype": "fp16"}, _cfg(4, 256, 2, 2)),
        "one_row_per_cta_fp16": ({"M": 3, "N": 513, "dtype": "fp16"}, _cfg(1, 64, 1, 1)),
        "exact_tiles_bf16": ({"M": 8, "N": 256, "dtype": "bf16"}, _cfg(4, 64, 8, 2)),
        "strided_rows_bf16": ({"M": 9, "N": 96, "dtype": "bf16"}, _cfg(2, 32, 4, 1)),
        "large_residual_fp16": ({"M": 6, "N": 200, "dtype": "fp16"}, _cfg(1, 128, 4, 2)),
    },
}

# configs compiled for each arch at the module's first POINT (BASELINE first)
COMPILE_CFGS: dict[str, list[dict]] = {
    KERNEL: [_cfg(1, 1024, 4, 1), _cfg(4, 4096, 8, 2), _cfg(2, 512, 4, 2)],
}

SWEEP_SIZES = {KERNEL: (48, 3)}


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """Edit a case's inputs: strided row views; a large residual stream."""
    import torch

    if name == "strided_rows_bf16":
        for key, pad in (("x", 8), ("residual", 40)):
            t = inputs[key]
            wide = torch.zeros((t.shape[0], t.shape[1] + pad), dtype=t.dtype)
            wide[:, :t.shape[1]] = t
            inputs[key] = wide[:, :t.shape[1]]
            assert not inputs[key].is_contiguous() and inputs[key].stride(1) == 1
    if name == "large_residual_fp16":
        inputs["residual"] = inputs["residual"] * 40.0


# ----------------------------------------------------------------- the pytest side
def _results(kernel: str) -> dict:
    return H.interpreter_results(HERE, kernel)


@pytest.mark.parametrize("kernel,name", [(k, n) for k, cases in CASES.items() for n in cases])
def test_example_matches_reference(kernel, name):
    res = _results(kernel)[name]
    assert "error" not in res, f"{kernel}/{name}: {res.get('error')}"
    assert res["shape"][0] == 2
    for what, r in (("kernel", res), ("torch_baseline", res["baseline"])):
        assert r["n_bad"] == 0, H.mismatch(r, f"{kernel}/{name} {what}")


@pytest.mark.parametrize("name", list(CASES[KERNEL]))
def test_outputs_each_half(name):
    """out[1] is x + residual in the input dtype, bit for bit (for bf16 the interpreter's
    truncating fp32 -> bf16 cast is accepted too: the GPU rounds to nearest); out[0] is y within tolerance of
    the reference's y scaled by y's own magnitude."""
    res = _results("parts")[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    assert res["residual_n_bad"] == 0, res
    assert res["y"]["n_bad"] == 0, H.mismatch(res["y"], f"{name} y")


def test_cases_cover_every_tunable_value():
    """Each tunable takes at least two values over the cases; masked tails are hit."""
    mod = load_example(KERNEL)
    assert set(mod.BASELINE) == set(mod.TUNABLES)
    cases = CASES[KERNEL].values()
    for name in mod.TUNABLES:
        tested = {cfg[name] for _, cfg in cases}
        assert len(tested) >= 2, (name, tested)
    assert any(p["M"] % c["BLOCK_M"] for p, c in cases) and any(p["M"] % 2 for p, _ in cases)
    assert any(p["N"] % c["BLOCK_N"] for p, c in cases) and any(p["N"] % 2 for p, _ in cases)
    assert any(p["N"] < c["BLOCK_N"] for p, c in cases)
    assert any(p["N"] % c["BLOCK_N"] == 0 and p["M"] % c["BLOCK_M"] == 0 for p, c in cases)
    assert {p["dtype"] for p, _ in cases} == set(mod.DTYPES)



def test_launcher_hooks_agree_with_shapes():
    """At every default point: the meta tensors of example_args are exactly the bytes
    bytes_moved counts (each read or written once), grid and loop_iterations are the
    tiling of those shapes."""
    import triton

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "example_args", "torch_baseline"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert len(mod.POINTS) == 3 and {p["dtype"] for p in mod.POINTS} == set(mod.DTYPES)
    for cfg in [mod.BASELINE] + COMPILE_CFGS[KERNEL]:
        for p in mod.POINTS:
            args = mod.example_args(cfg, p)
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for v in args.values())
            assert H.meta_nbytes(args) == mod.bytes_moved(p) > 50 * 2**20, p
            M, N = p["M"], p["N"]
            assert args["X"].shape == args["Res"].shape == args["Y"].shape == args["RO"].shape == (M, N)
            assert args["W"].shape == (N,) and args["X"].element_size() == 2
            assert args["Y"].stride(0) == args["RO"].stride(0) == N
            assert (args["M"], args["N"], args["stride_xm"], args["stride_rm"]) == (M, N, N, N)
            assert args["eps"] == 1e-6 and (args["BLOCK_M"], args["BLOCK_N"]) == (cfg["BLOCK_M"], cfg["BLOCK_N"])
            assert mod.bytes_moved(p) == (4 * M * N + N) * 2
            assert mod.grid(cfg, p) == triton.cdiv(M, cfg["BLOCK_M"])
            assert mod.loop_iterations(cfg, p) == 2 * triton.cdiv(N, cfg["BLOCK_N"])
            assert mod.flops(p) == 5 * M * N


def test_hooks_on_small_points_and_inputs():
    import torch

    mod = load_example(KERNEL)
    p = {"M": 7, "N": 300, "dtype": "bf16"}
    assert mod.grid(_cfg(2, 128, 4, 1), p) == 4 and mod.grid(_cfg(1, 128, 4, 1), p) == 7
    assert mod.loop_iterations(_cfg(2, 128, 4, 1), p) == 2 * 3
    assert mod.loop_iterations(_cfg(2, 512, 4, 1), p) == 2
    assert mod.bytes_moved(p) == 2 * (4 * 7 * 300 + 300) and mod.flops(p) == 5 * 7 * 300
    args = mod.example_args(_cfg(2, 128, 4, 1), p)
    assert args["BLOCK_M"] == 2 and args["BLOCK_N"] == 128 and args["X"].dtype == torch.bfloat16
    inputs = mod.make_inputs(p, device="cpu")
    assert inputs["x"].shape == inputs["residual"].shape == (7, 300) and inputs["weight"].shape == (300,)
    ref = mod.reference(inputs)
    assert ref.shape == (2, 7, 300) and ref.dtype == torch.float32
    assert torch.allclose(ref[1], inputs["x"].float() + inputs["residual"].float())
    # y / weight has unit rms per row
    rms = (ref[0] / inputs["weight"].float()).pow(2).mean(-1).sqrt()
    assert torch.allclose(rms, torch.ones(7), atol=1e-3)
    base = mod.torch_baseline(inputs)
    assert base.shape == (2, 7, 300) and base.dtype == torch.bfloat16


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    inputs = mod.make_inputs({"M": 4, "N": 16, "dtype": "fp16"}, device="cpu")
    x, r, w = inputs["x"], inputs["residual"], inputs["weight"]
    with pytest.raises(ValueError, match="BLOCK_N=100"):
        mod.fused_add_rms_norm(x, r, w, BLOCK_N=100)
    with pytest.raises(ValueError, match="BLOCK_M=3"):
        mod.fused_add_rms_norm(x, r, w, BLOCK_M=3)
    with pytest.raises(ValueError, match="torch.bfloat16"):
        mod.fused_add_rms_norm(x, r.bfloat16(), w)
    with pytest.raises(ValueError, match=r"\(4, 16\), \(4, 15\), \(16,\)"):
        mod.fused_add_rms_norm(x, r[:, :15], w)
    with pytest.raises(ValueError, match="not fp16 or bf16"):
        mod.fused_add_rms_norm(x.float(), r.float(), w.float())
    with pytest.raises(ValueError, match=r"\[2, 4, 16\]"):
        mod.fused_add_rms_norm(x, r, w, out=torch.empty(2, 4, 15, dtype=torch.float16))
    with pytest.raises(ValueError, match="fp32"):
        mod.make_inputs({"M": 1, "N": 8, "dtype": "fp32"}, device="cpu")
    with pytest.raises(ValueError, match="fp8"):
        mod.bytes_moved({"M": 1, "N": 8, "dtype": "fp8"})


def test_study_sweeps_declare_round7_e():
    """scripts/rank_study.py's SWEEPS: held-out-7, >= 40 configs x the 3 POINTS (every config
    checked to compile and fit for sm_90 at every point with triton 3.6.0)."""
    sizes = {}
    for name, (cfgs, points, _) in H.study_sweeps(CASES, "held-out-7").items():
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


# ----------------------------------------------------------------- the subprocess side
def _run_parts() -> None:
    """Under TRITON_INTERPRET=1: each case's out[1] against x + residual in the input dtype
    (max |diff|), out[0] against the reference's y (its own scale); one JSON line."""
    import torch

    assert os.environ.get("TRITON_INTERPRET") == "1", "run with TRITON_INTERPRET=1"
    mod = load_example(KERNEL)
    results = {}
    for name, (point, cfg) in CASES[KERNEL].items():
        try:
            inputs = mod.make_inputs(point, seed=len(name), device="cpu")
            _prepare(name, point, inputs)
            out = mod.launch(inputs, cfg)
            r32 = inputs["x"].float() + inputs["residual"].float()
            ok = out[1] == (inputs["x"] + inputs["residual"])
            if point["dtype"] == "bf16":      # the interpreter truncates fp32 -> bf16 (the GPU rounds)
                ok |= out[1] == (r32.view(torch.int32) & ~0xFFFF).view(torch.float32).bfloat16()
            results[name] = {
                "residual_n_bad": int((~ok).sum()),
                "y": H.compare(out[0], mod.reference(inputs)[0], point["dtype"], TOL),
            }
        except Exception as exc:          # reported per case by the test
            results[name] = {"error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(results))


if __name__ == "__main__":
    if sys.argv[1] == "parts":
        _run_parts()
    else:
        H.run_cases(sys.argv[1], CASES[sys.argv[1]], TOL, prepare=_prepare, baseline=True)
