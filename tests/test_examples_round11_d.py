"""examples/group_quant_fp8.py against its torch reference on the CPU through Triton's
interpreter, its launcher hooks against the shapes, its study sweep against the points, and
a compile for sm_90 and sm_120 from its own ``example_args``.

As in test_examples_round5_a.py, the interpreter must be chosen before triton is imported,
so the cases run in a subprocess (this file run as a script:
``python tests/test_examples_round11_d.py group_quant_fp8``) that prints one JSON line; the
tests assert per case. The interpreter's own fp32 -> fp8 conversion is wrong (its rounding
carry overflows the mantissa into the exponent's low bit, so 127.9 becomes 64, and it rounds
ties away from zero), so the subprocess replaces it, for float8e4nv only, with torch's
conversion (round to nearest even, as cvt.rn.satfinite on the GPU).

Per case, four checks: (1) y, the fp8 values, equal the reference's bit for bit (the kernel
and the reference do the same correctly rounded fp32 operations in the same order; the
launch / reference pair is also compared as the GPU study's gate sees it); (2) the scales
equal max(amax, eps) / 448 within 1e-6 relative, in the requested layout (row-major, or
token-contiguous with 16-byte aligned columns); (3) dequantised, y * s is within e4m3's
rounding of x: |y s - x| <= (2^-4 |x| + 2^-10 s) (1 + 1e-6) (half an ulp: 3 mantissa bits,
subnormal step 2^-9); (4) torch_baseline's y (a divide per element instead of the
reciprocal's multiply) within the same bound.

Shapes are small and odd: T not a multiple of BLOCK_T and smaller than it, H / GROUP not a
multiple of BLOCK_G and smaller than it as well as multiples, GROUP 128, 64 and 32, all-zero
rows and groups (the eps path), values that saturate nothing but sit at the group max, x as
a column slice of a wider buffer (row stride != H) and x with a unit token stride (copied),
both scale layouts and every dtype.
"""

from __future__ import annotations

import itertools
import json
import os
import sys
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
KERNEL = "group_quant_fp8"
TOL = {"bf16": 1e-6, "fp16": 1e-6, "fp32": 1e-6}      # y against the reference: equal (x 448)



def _cfg(bt, bg, w, s):
    return {"BLOCK_T": bt, "BLOCK_G": bg, "num_warps": w, "num_stages": s}


def _pt(T, Hd, group, dtype, col_major=False):
    return {"T": T, "H": Hd, "GROUP": group, "col_major": col_major, "dtype": dtype}


# kernel module -> case name -> (point, cfg)
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        "ragged_tokens_and_groups_bf16": (_pt(37, 384, 128, "bf16"), _cfg(4, 2, 4, 1)),
        "group64_col_major_fp32": (_pt(21, 320, 64, "fp32", col_major=True), _cfg(8, 4, 2, 1)),
        "one_token_blocks_wider_fp16": (_pt(1, 1024, 128, "fp16"), _cfg(8, 16, 8, 1)),
        "exact_tiles_bf16": (_pt(16, 512, 128, "bf16"), _cfg(2, 4, 2, 2)),
        "group_per_step_col_major_bf16": (_pt(13, 256, 128, "bf16", col_major=True), _cfg(1, 1, 4, 1)),
        "strided_rows_fp16": (_pt(9, 384, 128, "fp16"), _cfg(2, 2, 8, 1)),
        "group32_seven_groups_fp32": (_pt(6, 224, 32, "fp32"), _cfg(4, 8, 4, 2)),
        "zero_rows_and_groups_col_major_fp16": (_pt(11, 640, 128, "fp16", col_major=True), _cfg(4, 4, 4, 1)),
        "token_major_input_fp32": (_pt(10, 256, 64, "fp32"), _cfg(2, 1, 2, 1)),
        "deepseek_width_bf16": (_pt(5, 7168, 128, "bf16"), _cfg(2, 8, 4, 1)),
    },
}

# configs compiled for each arch at the module's first POINT (BASELINE first)
COMPILE_CFGS: dict[str, list[dict]] = {
    KERNEL: [_cfg(4, 2, 4, 1), _cfg(8, 8, 2, 1), _cfg(1, 1, 8, 1), _cfg(8, 4, 8, 1)],
}


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """Edit a case's inputs: x a column slice of a wider buffer; x stored token-major (unit
    token stride); all-zero rows and groups and a group whose max sits on an element."""
    import torch

    x = inputs["x"]
    if name == "strided_rows_fp16":
        T, Hd = x.shape
        wide = torch.randn((T, Hd + 40)).to(x.dtype)
        wide[:, 8:8 + Hd] = x
        inputs["x"] = wide[:, 8:8 + Hd]
        assert inputs["x"].stride() == (Hd + 40, 1)
    if name == "token_major_input_fp32":
        inputs["x"] = x.t().contiguous().t()
        assert inputs["x"].stride() == (1, x.shape[0])
    if name == "zero_rows_and_groups_col_major_fp16":
        g = point["GROUP"]
        x[0] = 0.0
        x[7] = 0.0
        x[3, 2 * g:3 * g] = 0.0
        x[4, g:2 * g] = -0.0
        x[5, :g] = 0.25                            # every element of the group is its amax
        x[6, 3 * g + 5] = 60000.0                   # one huge outlier: the rest of its group underflows


def _patch_interpreter_fp8_cast() -> None:
    """Triton's interpreter converts fp32 -> float8e4nv with a broken rounding carry; use
    torch's round-to-nearest-even conversion for that one pair (the GPU's cvt.rn)."""
    import numpy as np
    import torch
    import triton.language as tl
    import triton.runtime.interpreter as interp

    orig = interp._convert_float

    def convert(data, src, dst, rounding):
        if dst == tl.float8e4nv and src == tl.float32:
            t = torch.from_numpy(np.ascontiguousarray(data).view(np.float32))
            return t.to(torch.float8_e4m3fn).view(torch.uint8).numpy().reshape(data.shape)
        return orig(data, src, dst, rounding)

    interp._convert_float = convert


# ----------------------------------------------------------------- the pytest side
def _results(kernel: str) -> dict:
    return H.interpreter_results(HERE, kernel)


@pytest.mark.parametrize("kernel,name", [(k, n) for k, cases in CASES.items() for n in cases])
def test_example_matches_reference(kernel, name):
    res = _results(kernel)[name]
    assert "error" not in res, f"{kernel}/{name}: {res.get('error')}"
    point = CASES[kernel][name][0]
    T, Hd, g = point["T"], point["H"], point["GROUP"]
    assert res["shape"] == [T, Hd] and res["y_dtype"] == "torch.float8_e4m3fn"
    assert res["n_bad"] == 0, H.mismatch(res, f"{kernel}/{name} launch")
    assert res["y_differ"] == 0, f"{kernel}/{name}: {res['y_differ']} fp8 values differ from the reference"
    assert res["s_shape"] == [T, Hd // g] and res["s_bad"] == 0, res
    Tp = -(-T // 4) * 4
    assert res["s_stride"] == ([1, Tp] if point["col_major"] else [Hd // g, 1]), res
    assert res["deq_bad"] == 0, f"{kernel}/{name}: {res['deq_bad']} dequantised values off (max {res['deq_err']})"
    assert res["baseline_deq_bad"] == 0 and res["baseline_ulps"] <= 1, res


def test_cases_cover_every_tunable_value():
    """Each tunable takes at least two values over the cases (each swept value among them or
    bracketed by them); the token and group tails, every group size, both scale layouts and
    every dtype are hit."""
    SWEEP_AXES = H.study_sweeps([KERNEL], "held-out-11")[KERNEL][2]     # the study's sweep (scripts/rank_study.py SWEEPS)
    mod = load_example(KERNEL)
    H.assert_tunables_covered(CASES)
    cases = list(CASES[KERNEL].values())
    ng = [(p["H"] // p["GROUP"], c) for p, c in cases]
    assert any(p["T"] % c["BLOCK_T"] for p, c in cases) and any(p["T"] < c["BLOCK_T"] for p, c in cases)
    assert any(p["T"] % c["BLOCK_T"] == 0 and p["T"] > c["BLOCK_T"] for p, c in cases)
    assert any(n % c["BLOCK_G"] for n, c in ng) and any(n < c["BLOCK_G"] for n, c in ng)
    assert any(n % c["BLOCK_G"] == 0 and n > c["BLOCK_G"] for n, c in ng)
    assert {p["GROUP"] for p, _ in cases} >= {128, 64, 32}
    assert {p["col_major"] for p, _ in cases} == {True, False}
    assert {p["dtype"] for p, _ in cases} == set(mod.DTYPES)
    assert any(p["col_major"] and p["T"] % mod.SCALE_ALIGN for p, _ in cases)     # padded scale columns
    for k, vals in SWEEP_AXES.items():
        tested = {c[k] for _, c in cases}
        assert min(tested) <= min(vals) and max(tested) >= max(vals), (k, tested)


def test_sweep_fits_the_points():
    """The study sweep: the TUNABLES, each but num_stages over >= 2 values, 48 configs with
    BASELINE among them; at every POINT each config is valid, its example_args are the point's
    bytes, it fills the 132 SMs many times over and walks the groups without a tail; no tile
    holds more than 128 elements a thread. (Every config was compiled for sm_90 with triton
    3.6.0 at every point: all 144 compile in < 20 s, 26-175 registers, no spills, 8-256 B of
    shared memory: the cross-warp scratch of the group max / the scales' layout conversion.)"""
    SWEEP_AXES = H.study_sweeps([KERNEL], "held-out-11")[KERNEL][2]     # the study's sweep (scripts/rank_study.py SWEEPS)
    mod = load_example(KERNEL)
    assert set(SWEEP_AXES) == set(mod.TUNABLES)
    assert all(len(v) >= 2 for k, v in SWEEP_AXES.items() if k != "num_stages") and SWEEP_AXES["num_stages"] == [1]
    cfgs = [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]
    assert len(cfgs) == 48 and mod.BASELINE in cfgs
    for p in mod.POINTS:
        for c in cfgs:
            mod._check_cfg(c)
            args = mod.example_args(c, p)
            assert H.meta_nbytes(args) == mod.bytes_moved(p)
            assert mod.grid(c, p) >= 8 * 132, (p, c)
            NG = p["H"] // p["GROUP"]
            assert NG % c["BLOCK_G"] == 0 and mod.loop_iterations(c, p) == NG // c["BLOCK_G"] >= 2
            assert c["BLOCK_T"] * c["BLOCK_G"] * p["GROUP"] <= 128 * 32 * c["num_warps"]


def test_launcher_hooks_agree_with_shapes():
    """At every default point: the meta tensors of example_args are exactly the bytes
    bytes_moved counts (x read once, y and the scales written once), with a real launch's
    strides (the scales row-major, or the transpose of an [NG, T'] buffer); grid and
    loop_iterations are the tiling; the points are DeepSeek-V3 shapes bigger than the L2."""
    import torch
    import triton

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "example_args", "torch_baseline", "per_token_group_quant_fp8", "reference_scales", "dequantize"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert len(mod.POINTS) == 3 and {p["dtype"] for p in mod.POINTS} == set(mod.DTYPES)
    assert {p["col_major"] for p in mod.POINTS} == {True, False} and {p["GROUP"] for p in mod.POINTS} == {128}
    assert {p["H"] for p in mod.POINTS} == {7168, 2048}
    for cfg in [mod.BASELINE] + COMPILE_CFGS[KERNEL]:
        for p in mod.POINTS:
            T, Hd, g = p["T"], p["H"], p["GROUP"]
            e = 4 if p["dtype"] == "fp32" else 2
            NG = Hd // g
            assert 16384 <= T <= 65536
            args = mod.example_args(cfg, p)
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for v in args.values())
            assert H.meta_nbytes(args) == mod.bytes_moved(p) == T * Hd * (e + 1) + 4 * T * NG
            assert T * Hd * e > 5 * 50 * 10**6                    # x alone > 5x the 50 MB L2
            assert args["X"].shape == (T, Hd) and args["X"].dtype == mod._torch_dtype(p["dtype"])
            assert args["Y"].shape == (T, Hd) and args["Y"].dtype == torch.float8_e4m3fn
            assert args["S"].shape == (T, NG) and args["S"].dtype == torch.float32
            Tp = triton.cdiv(T, 4) * 4
            assert (args["stride_st"], args["stride_sg"]) == ((1, Tp) if p["col_major"] else (NG, 1))
            assert (args["T"], args["NG"], args["stride_xt"], args["stride_yt"]) == (T, NG, Hd, Hd)
            assert (args["GROUP"], args["BLOCK_T"], args["BLOCK_G"]) == (g, cfg["BLOCK_T"], cfg["BLOCK_G"])
            assert args["eps"] == mod.EPS
            assert mod.grid(cfg, p) == triton.cdiv(T, cfg["BLOCK_T"])
            assert mod.loop_iterations(cfg, p) == triton.cdiv(NG, cfg["BLOCK_G"])
            assert mod.flops(p) == 5 * T * Hd + 2 * T * NG
    assert mod.example_args(mod.BASELINE, mod.POINTS[0])["X"].dtype == torch.bfloat16


def test_hooks_on_small_points_and_inputs():
    import torch

    mod = load_example(KERNEL)
    p = _pt(37, 384, 128, "bf16")
    c = _cfg(4, 2, 4, 1)
    assert mod.grid(c, p) == 10 and mod.loop_iterations(c, p) == 2
    assert mod.bytes_moved(p) == 37 * 384 * 3 + 4 * 37 * 3
    assert mod.bytes_moved(_pt(21, 320, 64, "fp32", True)) == 21 * 320 * 5 + 4 * 21 * 5
    assert mod.flops(p) == 5 * 37 * 384 + 2 * 37 * 3
    args = mod.example_args(c, _pt(21, 320, 64, "fp32", True))
    assert args["S"].stride() == (1, 24) and args["NG"] == 5 and args["GROUP"] == 64
    inputs = mod.make_inputs(p, device="cpu")
    assert inputs["x"].shape == (37, 384) and inputs["x"].dtype == torch.bfloat16
    assert inputs["group"] == 128 and inputs["col_major"] is False
    big = mod.make_inputs(_pt(2000, 256, 128, "fp16", True), device="cpu")
    x = big["x"].float()
    zero_rows = int((x.abs().amax(dim=1) == 0).sum())
    assert 5 <= zero_rows <= 50 and big["col_major"] is True
    amax = x.abs().amax(dim=0)
    assert float(amax.max()) > 4 * float(amax.median())                  # outlier channels
    ref = mod.reference(inputs)
    s = mod.reference_scales(inputs)
    assert ref.shape == (37, 384) and ref.dtype == torch.float32 and float(ref.abs().max()) == 448.0
    assert s.shape == (37, 3) and s.dtype == torch.float32
    deq = mod.dequantize(ref.to(torch.float8_e4m3fn), s, 128)
    assert torch.allclose(deq, inputs["x"].float(), rtol=0.07, atol=float(s.max()) * 2**-9)
    base = mod.torch_baseline(inputs)
    assert base.shape == (37, 384) and base.dtype == torch.float8_e4m3fn


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    x = mod.make_inputs(_pt(6, 256, 128, "fp16"), device="cpu")["x"]
    with pytest.raises(ValueError, match="BLOCK_T=3"):
        mod.per_token_group_quant_fp8(x, BLOCK_T=3)
    with pytest.raises(ValueError, match="BLOCK_G=0"):
        mod.per_token_group_quant_fp8(x, BLOCK_G=0)
    with pytest.raises(ValueError, match="hidden size 200 is not a multiple of group_size=64"):
        mod.per_token_group_quant_fp8(x[:, :200], 64)
    with pytest.raises(ValueError, match="group_size=96 must be a power of two"):
        mod.per_token_group_quant_fp8(x[:, :192], 96)
    with pytest.raises(ValueError, match="group_size=8 must be a power of two"):
        mod.per_token_group_quant_fp8(x, 8)
    with pytest.raises(ValueError, match=r"expected x \[T, H\]"):
        mod.per_token_group_quant_fp8(x[0])
    with pytest.raises(ValueError, match="fp16, bf16 or fp32"):
        mod.per_token_group_quant_fp8(x.double())
    with pytest.raises(ValueError, match="eps=0"):
        mod.per_token_group_quant_fp8(x, eps=0)
    with pytest.raises(ValueError, match="fp8"):
        mod.make_inputs(_pt(4, 128, 128, "fp8"), device="cpu")
    with pytest.raises(ValueError, match="fp8"):
        mod.bytes_moved(_pt(4, 128, 128, "fp8"))
    with pytest.raises(ValueError, match="not a multiple"):
        mod.example_args(mod.BASELINE, _pt(4, 200, 128, "bf16"))
    assert x.dtype == torch.float16


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
        assert res.n_regs > 0 and res.shared >= 0


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["sm_120", "sm_90"])
def test_other_points_compile(shared_cache, arch):
    """BASELINE at the second point (fp16, column-major scales: a unit token stride) and the third
    (fp32), and a group of 64 with a token-major x (unit token stride, H not 16-divisible rows)."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    cfg = mod.BASELINE
    odd = _pt(1000, 320, 64, "bf16", True)
    for p in mod.POINTS[1:] + [odd]:
        args = mod.example_args(cfg, p)
        assert (args["stride_st"] == 1) == p["col_major"]
        res = compile_kernel(mod._kernel, args=args, arch=arch, num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
        assert res.status == "ok", f"{p} on {arch}: {res.status}: {res.message}"


@pytest.mark.slow
def test_num_stages_leaves_the_cubin_alone(shared_cache):
    """No dot and no pipelined load: num_stages 1, 2, 3 compile to the same cubin for sm_90 (why
    SWEEP_AXES holds num_stages at 1)."""
    SWEEP_AXES = H.study_sweeps([KERNEL], "held-out-11")[KERNEL][2]     # the study's sweep (scripts/rank_study.py SWEEPS)
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    p = mod.POINTS[0]
    for cfg in (mod.BASELINE, _cfg(2, 8, 8, 1)):
        cubins = {compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch="sm_90", num_warps=cfg["num_warps"],
                                 num_stages=s, keep_ir=True).cubin for s in (1, 2, 3)}
        assert len(cubins) == 1 and None not in cubins, cfg


# ----------------------------------------------------------------- the subprocess side
def _run_cases(kernel: str) -> None:
    """Under TRITON_INTERPRET=1: every case through launch (against reference, as the GPU study's
    gate) and through the wrapper (y, the scales and their layout, the dequantised bound), and
    torch_baseline's y; one JSON line."""
    import torch

    assert os.environ.get("TRITON_INTERPRET") == "1", "run with TRITON_INTERPRET=1"
    _patch_interpreter_fp8_cast()
    mod = load_example(kernel)
    results = {}
    for name, (point, cfg) in CASES[kernel].items():
        try:
            inputs = mod.make_inputs(point, seed=len(name), device="cpu")
            _prepare(name, point, inputs)
            ref = mod.reference(inputs)
            res = H.compare(mod.launch(inputs, cfg), ref, point["dtype"], TOL)
            y, s = mod.per_token_group_quant_fp8(inputs["x"], inputs["group"], mod.EPS, inputs["col_major"], **cfg)
            g = inputs["group"]
            x = inputs["x"].float()
            rs = mod.reference_scales(inputs)
            res["y_dtype"] = str(y.dtype)
            res["y_differ"] = int((y.float() != ref).sum())
            res["s_shape"], res["s_stride"] = list(s.shape), list(s.stride())
            res["s_bad"] = int(((s - rs).abs() > 1e-6 * rs).sum())

            def deq_bad(q, sc):
                sfull = sc.repeat_interleave(g, dim=1)
                bound = (2.0 ** -4 * x.abs() + 2.0 ** -10 * sfull) * (1 + 1e-6)
                err = (mod.dequantize(q, sc, g) - x).abs()
                return int(((err > bound) | ~torch.isfinite(err)).sum()), float(err.max())

            res["deq_bad"], res["deq_err"] = deq_bad(y, s)
            base = mod.torch_baseline(inputs)
            res["baseline_deq_bad"] = deq_bad(base, rs)[0]
            # the baseline's divide may round a near-tie the other way: at most one fp8 step
            bi, ri = base.view(torch.uint8).int(), ref.to(torch.float8_e4m3fn).view(torch.uint8).int()
            res["baseline_ulps"] = int((bi - ri).abs().max())
            results[name] = res
        except Exception as exc:          # reported per case by the test
            results[name] = {"error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(results))


if __name__ == "__main__":
    _run_cases(sys.argv[1])
