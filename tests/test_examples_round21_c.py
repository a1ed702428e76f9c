"""examples/rmsnorm_fp8_quant.py (fused residual add + RMSNorm + per-token dynamic FP8 e4m3
quantization: a register-resident single pass when the row fits one BLOCK_N chunk, else two
walks of the row) against its fp64 torch reference on the CPU through Triton's interpreter, its
launcher hooks against the shapes, its study sweep against the points, and a compile for sm_90
and sm_120 from its own ``example_args``.

As in test_examples_round20_d.py the interpreter cases run in a subprocess (this file run as a
script: ``python tests/test_examples_round21_c.py rmsnorm_fp8_quant``) that prints one JSON line.
The interpreter's fp32 -> float8e4nv conversion is wrong (a rounding carry into the exponent,
ties away from zero; see test_examples_round11_d.py) and its fp32 -> bf16 conversion truncates;
the subprocess replaces both with torch's round-to-nearest-even conversions (the GPU's cvt.rn),
so the stored bf16 residual, and the statistics the kernel takes from it, are the reference's.

Shapes are small, odd and ragged: M not a multiple of ROWS (a CTA's last rows past M) and
smaller than ROWS (a CTA with one live row), N below BLOCK_N and not a power of two (the
register path's masked tail), N == BLOCK_N, N a multiple of BLOCK_N and not one (the two-pass
path's full and masked last chunks), N = 5; every dtype (bf16 / fp16 / fp32), with and without
the residual, x with a row stride wider than N (read in place) and with a column stride (copied),
all-zero rows (the least-scale path), outlier channels; BLOCK_N 16-512, ROWS 1-8 (3: not a power of two), 2-8 warps,
num_stages 1 / 2.

Per case: (1) launch's y against reference as the GPU study's gate sees it, the tolerance one
e4m3 step at 448 (x max|ref| = 448): the kernel's fp32 arithmetic and the fp64 reference may put
a value within ~1e-6 of an fp8 tie on either side; (2) at most one e4m3 step apart anywhere and
at most 1 % of the values differ (with the RNE conversions none do); (3) the scales within 1e-5
relative of the reference's; (4) y * s within half an e4m3 ulp of the fp64 normalised value v:
|y s - v| <= (2^-4 |v| + 2^-10 s)(1 + 1e-5); (5) the new residual bit-equal to x + residual
rounded to x's dtype; (6) torch_baseline's y (fp32, a divide per element) within one step of the
reference and within the same dequantised bound.
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
KERNEL = "rmsnorm_fp8_quant"
ROLE = "held-out-21"
H200_SMS = 132
SM120_SMEM_PER_BLOCK = 99 * 1024
STEP = 32.0 / 448.0                       # one e4m3 step at 448 (the row's max), x max|ref|
TOL = {"bf16": STEP * 1.001, "fp16": STEP * 1.001, "fp32": STEP * 1.001}

# the study's sweep (scripts/rank_study.py SWEEPS["rmsnorm_fp8_quant"] once the lead adds it)
SWEEP_AXES = {"BLOCK_N": [1024, 2048, 4096, 8192], "ROWS": [1, 2, 4, 8], "num_warps": [4, 8, 16],
              "num_stages": [1]}


def _cfg(bn, rows, w=4, st=1):
    return {"BLOCK_N": bn, "ROWS": rows, "num_warps": w, "num_stages": st}


def _pt(M, N, dtype="bf16", residual=False, stride=None):
    p = {"M": M, "N": N, "dtype": dtype, "residual": residual}
    if stride is not None:
        p["stride"] = stride
    return p


# case -> (point, cfg); comments: the path, CTAs x rows
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        # register path, N 300 < BLOCK_N 512 (masked tail), 3 CTAs of 3 rows, the last 2 rows past M
        "single_residual_bf16": (_pt(7, 300, "bf16", True), _cfg(512, 3)),
        # two-pass, 5 chunks of 64 (the last cut at 300), x rows pitched 320, 4 CTAs of 2 rows (tail 1)
        "twopass_strided_fp16": (_pt(7, 300, "fp16", False, stride=320), _cfg(64, 2, 2, 2)),
        # two-pass with the residual: N 384 = 3 x 128 (no tail chunk), 2 CTAs of 4 rows (tail 1)
        "twopass_residual_fp32": (_pt(5, 384, "fp32", True), _cfg(128, 4, 8)),
        # register path, N == BLOCK_N 256, one row a CTA, an all-zero row (the least scale)
        "single_exact_fp32": (_pt(6, 256, "fp32"), _cfg(256, 1, 2, 2)),
        # two-pass with the residual, M 2 < ROWS 8 (one CTA, 6 rows past M), chunks of 32 (tail 13 of 77)
        "twopass_short_bf16": (_pt(2, 77, "bf16", True), _cfg(32, 8, 4, 2)),
        # register path, N 5 in a 16-wide chunk, x a [:, ::2] view (copied by the wrapper), zero rows
        "single_tiny_colstrided_fp16": (_pt(9, 5, "fp16", True), _cfg(16, 2, 2)),
        # two-pass without residual, bf16, N 1000: 2 chunks of 512 (tail 488), 3 CTAs of 4 rows
        "twopass_wide_bf16": (_pt(11, 1000, "bf16"), _cfg(512, 4, 8)),
    },
}
ZERO_ROWS = ("single_exact_fp32", "single_tiny_colstrided_fp16", "twopass_short_bf16")
COLSTRIDED = "single_tiny_colstrided_fp16"

# configs compiled at the module's first POINT (sm_90: BASELINE first): both paths at N 4096
COMPILE_CFGS = [_cfg(4096, 2, 8), _cfg(8192, 8, 4), _cfg(1024, 4, 4), _cfg(2048, 1, 16)]
SM120_CFGS = [_cfg(4096, 2, 8), _cfg(1024, 8, 4)]


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """ZERO_ROWS: row 1 of x (and residual) all zero; COLSTRIDED: x the even columns of an [M, 2N] buffer."""
    import torch

    if name in ZERO_ROWS:
        inputs["x"][1] = 0.0
        if inputs["residual"] is not None:
            inputs["residual"][1] = 0.0
    if name == COLSTRIDED:
        x = inputs["x"]
        wide = torch.full((x.shape[0], 2 * x.shape[1]), 7.0, dtype=x.dtype)
        wide[:, ::2] = x
        inputs["x"] = wide[:, ::2]


def _patch_interpreter_casts() -> None:
    """fp32 -> float8e4nv and fp32 -> bf16 in Triton's interpreter: torch's round-to-nearest-even
    conversions (the interpreter's fp8 one carries wrongly, its bf16 one truncates)."""
    import numpy as np
    import torch
    import triton.language as tl
    import triton.runtime.interpreter as interp

    orig = interp._convert_float

    def convert(data, src, dst, rounding):
        if src == tl.float32 and dst in (tl.float8e4nv, tl.bfloat16):
            t = torch.from_numpy(np.ascontiguousarray(data).view(np.float32))
            if dst == tl.float8e4nv:
                return t.to(torch.float8_e4m3fn).view(torch.uint8).numpy().reshape(data.shape)
            return t.to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16).reshape(data.shape)
        return orig(data, src, dst, rounding)

    interp._convert_float = convert


# ----------------------------------------------------------------- the pytest side
def _results() -> dict:
    return H.interpreter_results(HERE, KERNEL)


@pytest.mark.parametrize("name", list(CASES[KERNEL]))
def test_example_matches_reference(name):
    res = _results()[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    p = CASES[KERNEL][name][0]
    assert res["shape"] == [p["M"], p["N"]] and res["y_dtype"] == "torch.float8_e4m3fn"
    assert res["n_bad"] == 0, H.mismatch(res, f"{name} launch")
    assert res["max_steps"] <= 1 and res["n_differ"] <= max(1, res["numel"] // 100), res
    assert res["s_shape"] == [p["M"], 1] and res["s_bad"] == 0, res
    assert res["deq_bad"] == 0, f"{name}: {res['deq_bad']} dequantised values off (max {res['deq_err']})"
    if p["residual"]:
        assert res["r_differ"] == 0 and res["r_dtype"] == res["x_dtype"], res
    else:
        assert res["r_differ"] is None
    assert res["baseline_deq_bad"] == 0 and res["baseline_steps"] <= 1, res
    if name in ZERO_ROWS:
        assert res["zero_row_ok"], res


def test_cases_cover_every_code_path():
    """Every tunable at >= 2 values (each swept value bracketed but BLOCK_N's, kept small under the
    interpreter); both paths with and without the residual; every dtype; M and N tails; a CTA with
    rows past M only; a row stride; a column stride; zero rows."""
    H.assert_tunables_covered(CASES)
    mod = load_example(KERNEL)
    cases = list(CASES[KERNEL].values())
    paths = {(mod._single(p["N"], c), p["residual"]) for p, c in cases}
    assert paths == {(True, True), (True, False), (False, True), (False, False)}
    assert {p["dtype"] for p, _ in cases} == set(mod.DTYPES)
    assert any(p["M"] % c["ROWS"] for p, c in cases) and any(p["M"] < c["ROWS"] for p, c in cases)
    assert any(p["N"] < c["BLOCK_N"] for p, c in cases) and any(p["N"] == c["BLOCK_N"] for p, c in cases)
    two = [(p, c) for p, c in cases if not mod._single(p["N"], c)]
    assert any(p["N"] % c["BLOCK_N"] for p, c in two) and any(p["N"] % c["BLOCK_N"] == 0 for p, c in two)
    assert any(p.get("stride", p["N"]) > p["N"] for p, _ in cases)
    assert COLSTRIDED in CASES[KERNEL] and all(n in CASES[KERNEL] for n in ZERO_ROWS)
    for k in ("ROWS", "num_warps"):
        tested = {c[k] for _, c in cases}
        assert min(tested) <= min(SWEEP_AXES[k]) and max(tested) >= min(max(SWEEP_AXES[k]), 8), (k, tested)


def test_launcher_hooks_agree_with_shapes():
    """At every point and sweep config: example_args on meta with the launch's shapes, dtypes and
    strides (Res / RO stand in for x without a residual), SINGLE = N <= BLOCK_N, the grid and the
    walk length; bytes_moved / flops; inputs < 4 GB."""
    import torch

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "example_args", "torch_baseline", "rms_norm_dynamic_per_token_quant", "reference_scales",
               "reference_norm", "dequantize"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert not hasattr(mod, "secondary_kernels") and not hasattr(mod, "cta_iterations")
    assert len(mod.POINTS) == 3 and mod.BASELINE["num_stages"] == 1
    dts = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}
    cfgs = [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]
    for p in mod.POINTS:
        M, N, dt, has_res = p["M"], p["N"], dts[p["dtype"]], p["residual"]
        e = 4 if p["dtype"] == "fp32" else 2
        for cfg in cfgs:
            args = mod.example_args(cfg, p)
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for v in args.values())
            assert args["X"].shape == (M, N) and args["X"].dtype == dt and args["X"].stride() == (p.get("stride", N), 1)
            assert args["W"].shape == (N,) and args["W"].dtype == dt
            assert args["Y"].shape == (M, N) and args["Y"].dtype == torch.float8_e4m3fn
            assert args["S"].shape == (M, 1) and args["S"].dtype == torch.float32
            for k in ("Res", "RO"):
                assert args[k].shape == (M, N) and args[k].dtype == dt
                assert (args[k] is args["X"]) == (not has_res)
            assert (args["M"], args["N"], args["HAS_RESIDUAL"]) == (M, N, int(has_res))
            assert (args["stride_ym"], args["stride_om"]) == (N, p.get("stride", N) if not has_res else N)
            assert args["SINGLE"] == int(N <= cfg["BLOCK_N"])
            assert (args["ROWS"], args["BLOCK_N"]) == (cfg["ROWS"], cfg["BLOCK_N"])
            assert mod.grid(cfg, p) == -(-M // cfg["ROWS"])
            chunks = -(-N // cfg["BLOCK_N"])
            assert mod.loop_iterations(cfg, p) == cfg["ROWS"] * (1 if chunks == 1 else 2 * chunks)
        assert mod.bytes_moved(p) == M * N * ((3 if has_res else 1) * e + 1) + 4 * M + e * N
        assert mod.flops(p) == (8 if has_res else 7) * M * N + 3 * M
        assert M * N * ((3 if has_res else 1) * e + 1) < 4 * 2**30
        # roughly 20 us - 10 ms at the H200's ~4.8 TB/s
        assert 20e-6 < mod.bytes_moved(p) / 4.8e12 < 10e-3


def test_hooks_on_small_points_and_inputs():
    """make_inputs: shapes, dtypes, the strided view, the weight's range, the seed; reference's,
    the scales' and the baseline's shapes and dtypes; a constant row quantizes to 448."""
    import torch

    mod = load_example(KERNEL)
    p = _pt(5, 12, "bf16", True, stride=16)
    inp = mod.make_inputs(p, seed=1, device="cpu")
    x, r, w = inp["x"], inp["residual"], inp["weight"]
    assert x.shape == (5, 12) and x.dtype == torch.bfloat16 and x.stride() == (16, 1)
    assert r.shape == (5, 12) and r.dtype == torch.bfloat16 and r.is_contiguous()
    assert w.shape == (12,) and w.dtype == torch.bfloat16 and 0.5 <= float(w.min()) and float(w.max()) <= 1.5
    assert mod.make_inputs(_pt(5, 12), device="cpu")["residual"] is None
    ref = mod.reference(inp)
    assert ref.shape == (5, 12) and ref.dtype == torch.float32 and float(ref.abs().max()) == 448.0
    assert mod.reference_scales(inp).shape == (5, 1)
    assert mod.torch_baseline(inp).dtype == torch.float8_e4m3fn
    const = {"x": torch.full((2, 8), 3.0), "weight": torch.ones(8), "residual": None}
    assert torch.equal(mod.reference(const), torch.full((2, 8), 448.0))
    assert torch.equal(mod.make_inputs(p, seed=1, device="cpu")["x"], x)
    assert not torch.equal(mod.make_inputs(p, seed=2, device="cpu")["x"], x)


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    x = torch.ones(3, 32)
    w = torch.ones(32)
    with pytest.raises(ValueError, match="BLOCK_N=48"):
        mod.rms_norm_dynamic_per_token_quant(x, w, BLOCK_N=48)
    with pytest.raises(ValueError, match="ROWS=0"):
        mod.rms_norm_dynamic_per_token_quant(x, w, ROWS=0)
    with pytest.raises(ValueError, match="expected x"):
        mod.rms_norm_dynamic_per_token_quant(x, torch.ones(16))
    with pytest.raises(ValueError, match="expected x"):
        mod.rms_norm_dynamic_per_token_quant(x, w, residual=torch.ones(3, 16))
    with pytest.raises(ValueError, match="dtypes differ"):
        mod.rms_norm_dynamic_per_token_quant(x, w.half())
    with pytest.raises(ValueError, match="fp16 / bf16 / fp32"):
        mod.rms_norm_dynamic_per_token_quant(x.double(), w.double())
    with pytest.raises(ValueError, match="eps"):
        mod.rms_norm_dynamic_per_token_quant(x, w, 0.0)
    with pytest.raises(ValueError, match="dtype 'fp8'"):
        mod.make_inputs(_pt(2, 8, "fp8"), device="cpu")
    with pytest.raises(ValueError, match="stride=4"):
        mod.bytes_moved(_pt(2, 8, stride=4))
    with pytest.raises(ValueError, match="M=0"):
        mod.grid(mod.BASELINE, _pt(0, 8))


def test_sweep_fits_the_points():
    """The study sweep: 48 configs (BLOCK_N 1024-8192 x ROWS 1-8 x 4 / 8 / 16 warps, num_stages 1)
    with BASELINE among them, the same as scripts/rank_study.py's entry once it is there; at every
    point each config is valid, launches >= 132 CTAs, and both paths are swept (the register path
    at BLOCK_N >= N, the two-pass one below); a [BLOCK_N] chunk is at most 64 elements a thread.
    (Every config was compiled for sm_90 with triton 3.6.0 and 3.9.0 at every point, 144 compiles
    each: all compile, none spills; 30-230 registers (3.9; 30-224 with 3.6), the most on the register
    path at BLOCK_N 8192 on 4 warps with the residual; 16 B-16 KiB shared memory (the reductions'
    scratch, the residual store's layout conversion). num_stages 1, 2 and 3 give the same sm_90
    cubin: the loops hold no dot and their loads are not pipelined, hence the one value.)"""
    mod = load_example(KERNEL)
    try:
        configs, points, axes = H.study_sweeps([KERNEL], ROLE)[KERNEL]
    except KeyError:                      # the entry is not in SWEEPS yet
        configs, axes = None, SWEEP_AXES
    assert axes == SWEEP_AXES
    assert set(axes) == set(mod.TUNABLES)
    assert all(len(v) >= 2 for k, v in axes.items() if k != "num_stages") and axes["num_stages"] == [1]
    cfgs = [dict(zip(axes, v)) for v in itertools.product(*axes.values())]
    assert 40 <= len(cfgs) <= 72 and mod.BASELINE in cfgs
    assert configs is None or len(configs) == len(cfgs)
    for p in mod.POINTS:
        assert {mod._single(p["N"], c) for c in cfgs} == {True, False}
        for c in cfgs:
            mod._check_cfg(c)
            assert mod.grid(c, p) >= 4 * H200_SMS, (p, c)
            assert c["BLOCK_N"] <= 64 * 32 * c["num_warps"]
    # the points differ in character: hidden size (a power of two or not), dtype, the residual
    assert len({p["N"] for p in mod.POINTS}) == 3 and any(p["N"] & (p["N"] - 1) for p in mod.POINTS)
    assert {p["dtype"] for p in mod.POINTS} >= {"bf16", "fp16"}
    assert {p["residual"] for p in mod.POINTS} == {True, False}


def test_examples_import_without_torch():
    proc = H.imports_without_torch(CASES)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr[-2000:]


@pytest.mark.slow
def test_example_compiles_sm90(shared_cache):
    """On sm_90: BASELINE (register path at N 4096) and three more (register path at 8192 x 8
    rows, two-pass at 1024 / 2048) compile without spills; and BASELINE at the other two points
    (two-pass at N 8192 fp16 without residual, 7168 bf16 with)."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    assert COMPILE_CFGS[0] == mod.BASELINE
    for cfg, res in H.compile_results(KERNEL, COMPILE_CFGS, "sm_90"):
        assert res.status == "ok", f"{cfg} on sm_90: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.shared <= 32 * 1024 and res.n_spills == 0, (cfg, res.n_regs, res.shared)
    cfg = COMPILE_CFGS[0]
    for p in mod.POINTS[1:]:
        res = compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch="sm_90",
                             num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
        assert res.status == "ok" and res.n_spills == 0, res.message


@pytest.mark.slow
def test_example_compiles_sm120(shared_cache):
    for cfg, res in H.compile_results(KERNEL, SM120_CFGS, "sm_120"):
        assert res.status == "ok", f"{cfg} on sm_120: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.shared <= SM120_SMEM_PER_BLOCK and res.n_spills == 0


# ----------------------------------------------------------------- the subprocess side
def _steps(a, b):
    """Largest distance in e4m3 steps between two float8_e4m3fn tensors (codes are sign-magnitude)."""
    import torch

    def key(t):
        c = t.view(torch.uint8).int()
        return torch.where(c >= 128, -(c - 128), c)

    return int((key(a) - key(b)).abs().max())


def _run() -> None:
    """Every case through launch (against reference, as the GPU study's gate) and through the
    wrapper (y, the scales, the dequantised bound, the new residual), and torch_baseline; one JSON line."""
    import torch

    assert os.environ.get("TRITON_INTERPRET") == "1", "run with TRITON_INTERPRET=1"
    _patch_interpreter_casts()
    mod = load_example(KERNEL)
    results = {}
    for name, (point, cfg) in CASES[KERNEL].items():
        try:
            inputs = mod.make_inputs(point, seed=len(name), device="cpu")
            _prepare(name, point, inputs)
            ref = mod.reference(inputs)
            res = H.compare(mod.launch(inputs, cfg), ref, point["dtype"], TOL)
            y, s, r = mod.rms_norm_dynamic_per_token_quant(inputs["x"], inputs["weight"], mod.EPS,
                                                           inputs["residual"], **cfg)
            ref8 = ref.to(torch.float8_e4m3fn)
            v, rref = mod.reference_norm(inputs)
            rs = mod.reference_scales(inputs)
            res["y_dtype"], res["x_dtype"] = str(y.dtype), str(inputs["x"].dtype)
            res["n_differ"] = int((y.float() != ref).sum())
            res["max_steps"] = _steps(y, ref8)
            res["s_shape"] = list(s.shape)
            res["s_bad"] = int(((s - rs).abs() > 1e-5 * rs).sum())

            def deq_bad(q, sc):
                bound = (2.0 ** -4 * v.abs() + 2.0 ** -10 * sc.double()) * (1 + 1e-5)
                err = (mod.dequantize(q, sc).double() - v).abs()
                return int(((err > bound) | ~torch.isfinite(err)).sum()), float(err.max())

            res["deq_bad"], res["deq_err"] = deq_bad(y, s)
            if r is None:
                res["r_differ"] = None
            else:
                res["r_differ"] = int((r.float() != rref.float()).sum())
                res["r_dtype"] = str(r.dtype)
            if name in ZERO_ROWS:
                res["zero_row_ok"] = bool((y[1].float() == 0).all()) and abs(float(s[1]) - mod.MIN_SCALE) < 1e-12
            base = mod.torch_baseline(inputs)
            res["baseline_deq_bad"] = deq_bad(base, rs)[0]
            res["baseline_steps"] = _steps(base, ref8)
            results[name] = res
        except Exception as exc:          # reported per case by the test
            results[name] = {"error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(results))


if __name__ == "__main__":
    _run()
