"""examples/w8a8_gemm.py against its exact-integer torch reference on the CPU through Triton's
interpreter, its launcher hooks against the shapes, its study sweep against the points, and
a compile for sm_90 and sm_120 from its own ``example_args``.

As in test_examples_round5_a.py, the interpreter must be chosen before triton is imported,
so the cases run in a subprocess (this file run as a script:
``python tests/test_examples_round12_a.py w8a8_gemm``) that prints one JSON line; the tests
assert per case. A second subprocess (``... prefilled_out``) runs cases into an ``out=``
buffer filled with NaN first, so a tile that the grouped order never visits is a mismatch
rather than whatever torch.empty held.

Shapes are small and odd: M, N and K not multiples of the blocks and smaller than them (the
wrapped row / column loads, the masked store, the masked K tail), exact tiles (EVEN_K), a
last GROUP_M group of fewer tile rows, one token, both weight layouts (an [N, K] weight's
transposed view, K contiguous; a row-major [K, N] weight, N contiguous), per-tensor and
per-token / per-channel scales, a bias, a as a row view of a wider buffer, b as a row- or
column-strided view of a wider buffer, and saturated operands (every value +-127, the
largest int32 partial sums the accumulator meets).

Tolerance (x max|ref|, absolute, per element): the reference is the exact integer product
(an fp64 matmul of int8 values is exact) scaled in fp64, and the kernel's int32 sum is exact
too, so only the fp32 epilogue (int32 -> fp32, two multiplies, the bias) and the one rounding
to the output dtype differ. bf16 1.5e-2: the interpreter's fp32 -> bf16 cast truncates (up
to one bf16 ulp, 2^-7 relative, where the GPU rounds to nearest, half that); fp16 2e-3 (an
fp16 ulp is 2^-10 relative).
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
KERNEL = "w8a8_gemm"
TOL = {"bf16": 1.5e-2, "fp16": 2e-3}



def _cfg(bm, bn, bk, g, w, s):
    return {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": g, "num_warps": w, "num_stages": s}


def _pt(M, N, K, dtype, bias=False, b_layout="nk"):
    return {"M": M, "N": N, "K": K, "dtype": dtype, "bias": bias, "b_layout": b_layout}


# kernel module -> case name -> (point, cfg)
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        "ragged_mnk_bias_bf16": (_pt(37, 50, 100, "bf16", True), _cfg(16, 32, 32, 2, 4, 2)),
        "ragged_mnk_kn_weight_fp16": (_pt(45, 70, 90, "fp16", False, "kn"), _cfg(32, 32, 64, 1, 4, 3)),
        "exact_tiles_fp16": (_pt(64, 64, 128, "fp16"), _cfg(32, 32, 64, 1, 4, 3)),
        "exact_tiles_kn_bias_bf16": (_pt(32, 96, 192, "bf16", True, "kn"), _cfg(16, 32, 64, 8, 2, 4)),
        "blocks_wider_than_problem_fp16": (_pt(5, 9, 40, "fp16", True), _cfg(32, 64, 64, 8, 8, 1)),
        "last_group_short_kn_bf16": (_pt(70, 48, 96, "bf16", True, "kn"), _cfg(16, 16, 32, 3, 2, 2)),
        "per_tensor_scales_fp16": (_pt(33, 40, 64, "fp16"), _cfg(16, 16, 64, 2, 4, 3)),
        "per_tensor_a_per_channel_b_bf16": (_pt(24, 72, 96, "bf16", False, "kn"), _cfg(16, 32, 32, 1, 2, 2)),
        "strided_rows_bf16": (_pt(29, 35, 160, "bf16", True), _cfg(16, 32, 64, 4, 4, 2)),
        "strided_kn_weight_fp16": (_pt(19, 40, 72, "fp16", False, "kn"), _cfg(16, 16, 32, 2, 4, 3)),
        "single_token_bf16": (_pt(1, 100, 256, "bf16"), _cfg(16, 64, 128, 8, 4, 3)),
        "long_ragged_k_fp16": (_pt(20, 24, 1000, "fp16", True), _cfg(16, 16, 128, 1, 8, 3)),
        "saturated_operands_bf16": (_pt(17, 33, 1200, "bf16", False, "kn"), _cfg(16, 32, 128, 2, 4, 4)),
    },
}

# prefilled_out: cases run into a NaN-filled out= buffer (the grouped tile order must cover every tile)
PREFILLED = ("ragged_mnk_bias_bf16", "last_group_short_kn_bf16", "blocks_wider_than_problem_fp16",
             "exact_tiles_fp16", "ragged_mnk_kn_weight_fp16")

# configs compiled for each arch at the module's first POINT (BASELINE first)
COMPILE_CFGS: dict[str, list[dict]] = {
    KERNEL: [_cfg(128, 128, 128, 8, 4, 4), _cfg(128, 256, 128, 8, 8, 3), _cfg(64, 128, 64, 1, 4, 3),
             _cfg(64, 256, 128, 8, 8, 4)],
}


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """Edit a case's inputs: per-tensor scales; a and b as views of wider buffers; saturated
    operands."""
    import torch

    if name == "per_tensor_scales_fp16":
        inputs["scale_a"] = inputs["scale_a"].max().reshape(1)
        inputs["scale_b"] = inputs["scale_b"].max().reshape(())
    if name == "per_tensor_a_per_channel_b_bf16":
        inputs["scale_a"] = torch.tensor([0.75], dtype=torch.float32) * inputs["scale_a"].mean()
        inputs["scale_b"] = inputs["scale_b"].reshape(-1, 1)         # [N, 1], as compressed-tensors stores it
    if name == "strided_rows_bf16":
        a = inputs["a"]
        wide = torch.zeros((a.shape[0], a.shape[1] + 16), dtype=torch.int8)
        wide[:, :a.shape[1]] = a
        inputs["a"] = wide[:, :a.shape[1]]
        b = inputs["b"]                                  # w.t() of an [N, K] weight: a view of [N, K + 48]
        wt = torch.zeros((b.shape[1], b.shape[0] + 48), dtype=torch.int8)
        wt[:, :b.shape[0]] = b.t()
        inputs["b"] = wt[:, :b.shape[0]].t()
        assert not inputs["a"].is_contiguous() and inputs["a"].stride(1) == 1
        assert inputs["b"].stride() == (1, b.shape[0] + 48)
    if name == "strided_kn_weight_fp16":
        b = inputs["b"]                                  # a [K, N] view of [K, N + 24]
        wide = torch.zeros((b.shape[0], b.shape[1] + 24), dtype=torch.int8)
        wide[:, :b.shape[1]] = b
        inputs["b"] = wide[:, :b.shape[1]]
        assert inputs["b"].stride() == (b.shape[1] + 24, 1)
    if name == "saturated_operands_bf16":
        a, b = inputs["a"], inputs["b"]
        inputs["a"] = torch.where(a >= 0, 127, -127).to(torch.int8)
        inputs["b"] = torch.where(b >= 0, 127, -127).to(torch.int8)
        inputs["a"][0] = 127                             # row 0 x column 0: 127^2 K, the largest sum
        inputs["b"][:, 0] = 127


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


@pytest.mark.parametrize("name", PREFILLED)
def test_every_tile_written(name):
    """Into a NaN-filled out= buffer: every element written (no NaN left) and right."""
    res = _results("prefilled_out")[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    assert res["same_buffer"] and res["n_bad"] == 0, H.mismatch(res, f"{name} prefilled out")


def test_cases_cover_every_tunable_value():
    """Each tunable takes at least two values over the cases; masked tails, short groups, both
    weight layouts and both scale granularities are hit."""
    import triton

    H.assert_tunables_covered(CASES)
    cases = CASES[KERNEL].values()
    assert any(p["M"] % c["BLOCK_M"] for p, c in cases) and any(p["M"] < c["BLOCK_M"] for p, c in cases)
    assert any(p["N"] % c["BLOCK_N"] for p, c in cases) and any(p["N"] < c["BLOCK_N"] for p, c in cases)
    assert any(p["K"] % c["BLOCK_K"] for p, c in cases) and any(p["K"] < c["BLOCK_K"] for p, c in cases)
    assert any(p["K"] % c["BLOCK_K"] == 0 for p, c in cases)        # EVEN_K: the unmasked loop
    for lay in ("nk", "kn"):
        assert any(p["b_layout"] == lay and p["K"] % c["BLOCK_K"] for p, c in cases)
        assert any(p["b_layout"] == lay and p["K"] % c["BLOCK_K"] == 0 for p, c in cases)
    # a last group of fewer than GROUP_M tile rows, with more than one group
    assert any(1 < c["GROUP_M"] < triton.cdiv(p["M"], c["BLOCK_M"]) and triton.cdiv(p["M"], c["BLOCK_M"]) % c["GROUP_M"]
               for p, c in cases)
    assert any(p["bias"] for p, _ in cases) and any(not p["bias"] for p, _ in cases)
    assert {p["dtype"] for p, _ in cases} == set(load_example(KERNEL).DTYPES)


def test_sweep_fits_the_points():
    """The study sweep: the TUNABLES, each over 2 values, 64 configs with BASELINE among them; at
    every POINT each config is valid, runs the unmasked K loop (EVEN_K), fills the 132 SMs at
    least once over, and its pipeline buffers (num_stages x the int8 A and B tiles) fit an H200's
    227 KiB of shared memory per block. (Every config was compiled for sm_90 with triton 3.6.0 at
    every point: all 192 compile in <= 3.3 s each, none spills, 45-243 registers, 16-128 KiB of shared
    memory; the [K, N] weight point (N contiguous) takes 16-80 KiB where the K-contiguous points take
    24-128 KiB: BASELINE's 80 KiB there is A's 4 stages and one B tile, so B's transposed int8 tile
    is not multi-buffered.)"""
    SWEEP_AXES = H.study_sweeps([KERNEL], "held-out-12")[KERNEL][2]     # the study's sweep (scripts/rank_study.py SWEEPS)
    mod = load_example(KERNEL)
    assert set(SWEEP_AXES) == set(mod.TUNABLES) and all(len(v) >= 2 for v in SWEEP_AXES.values())
    cfgs = [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]
    assert len(cfgs) == 64 and mod.BASELINE in cfgs
    for p in mod.POINTS:
        for c in cfgs:
            mod._check_cfg(c)
            assert mod.example_args(c, p)["EVEN_K"] and mod.grid(c, p) >= 132, (p, c)
            assert c["num_stages"] * (c["BLOCK_M"] + c["BLOCK_N"]) * c["BLOCK_K"] <= 227 * 1024


def test_launcher_hooks_agree_with_shapes():
    """At every default point: the meta tensors of example_args are exactly the bytes
    bytes_moved counts (each read or written once), b has the strides of its layout, grid and
    loop_iterations are the tiling of those shapes."""
    import torch
    import triton

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "example_args", "torch_baseline", "w8a8_gemm"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert len(mod.POINTS) == 3 and {p["dtype"] for p in mod.POINTS} == set(mod.DTYPES)
    assert any(p["bias"] for p in mod.POINTS) and {p["b_layout"] for p in mod.POINTS} == {"nk", "kn"}
    for cfg in [mod.BASELINE] + COMPILE_CFGS[KERNEL]:
        for p in mod.POINTS:
            args = mod.example_args(cfg, p)
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for v in args.values())
            assert H.meta_nbytes(args) == mod.bytes_moved(p) > 100 * 2**20, p
            M, N, K = p["M"], p["N"], p["K"]
            assert N * K > 50 * 2**20                    # the weight alone exceeds the L2
            assert args["A"].shape == (M, K) and args["B"].shape == (K, N)
            assert args["A"].dtype == args["B"].dtype == torch.int8
            assert args["SA"].shape == (M,) and args["SB"].shape == (N,) and args["SA"].dtype == torch.float32
            assert args["C"].shape == (M, N) and args["C"].element_size() == 2
            assert (args["BIAS"] is not None) == p["bias"] == args["HAS_BIAS"]
            assert args["A_PER_TOKEN"] and args["B_PER_CHANNEL"]
            b_strides = (1, K) if p["b_layout"] == "nk" else (N, 1)
            assert (args["stride_bk"], args["stride_bn"]) == b_strides
            assert (args["M"], args["N"], args["K"], args["stride_am"], args["stride_cm"]) == (M, N, K, K, N)
            assert mod.bytes_moved(p) == M * K + N * K + 4 * (M + N) + 2 * M * N + (2 * N if p["bias"] else 0)
            assert mod.grid(cfg, p) == triton.cdiv(M, cfg["BLOCK_M"]) * triton.cdiv(N, cfg["BLOCK_N"])
            assert mod.loop_iterations(cfg, p) == triton.cdiv(K, cfg["BLOCK_K"])
            assert mod.flops(p) == 2 * M * N * K >= 5 * 10**9


def test_hooks_on_small_points_and_inputs():
    import torch

    mod = load_example(KERNEL)
    p = _pt(37, 50, 100, "bf16", True)
    c = _cfg(16, 32, 32, 2, 4, 2)
    assert mod.grid(c, p) == 3 * 2 and mod.loop_iterations(c, p) == 4
    assert mod.bytes_moved(p) == 37 * 100 + 50 * 100 + 4 * 87 + 2 * 50 + 2 * 37 * 50
    args = mod.example_args(c, p)
    assert not args["EVEN_K"] and args["C"].dtype == torch.bfloat16 and args["BIAS"].dtype == torch.bfloat16
    assert mod.example_args(_cfg(16, 32, 32, 2, 4, 2), _pt(16, 16, 96, "fp16"))["EVEN_K"]
    assert mod.example_args(c, _pt(16, 16, 96, "fp16"))["BIAS"] is None
    for lay, strides in (("nk", (1, 100)), ("kn", (50, 1))):
        inputs = mod.make_inputs(_pt(37, 50, 100, "bf16", True, lay), device="cpu")
        a, b = inputs["a"], inputs["b"]
        assert a.dtype == b.dtype == torch.int8 and a.shape == (37, 100) and b.shape == (100, 50)
        assert b.stride() == strides
        assert inputs["scale_a"].shape == (37, 1) and inputs["scale_b"].shape == (1, 50)
        # symmetric per-row quantisation uses the whole int8 range: each row's amax is 127
        assert torch.all(a.abs().amax(1) == 127) and torch.all(b.abs().amax(0) == 127)
        assert int(a.min()) >= -127 and int(b.min()) >= -127
        ref = mod.reference(inputs)
        assert ref.shape == (37, 50) and ref.dtype == torch.float32 and 0.3 < float(ref.std()) < 3
        base = mod.torch_baseline(inputs)
        assert base.shape == (37, 50) and base.dtype == torch.bfloat16
    # the reference's integer product is exact: fp64 sums of int8 products equal the int64 ones
    inputs = mod.make_inputs(_pt(8, 16, 1024, "fp16"), device="cpu")
    exact = inputs["a"].long() @ inputs["b"].long()
    assert torch.equal((inputs["a"].double() @ inputs["b"].double()).long(), exact)
    assert mod.make_inputs(_pt(4, 8, 32, "fp16"), device="cpu")["bias"] is None


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    inputs = mod.make_inputs(_pt(8, 16, 64, "fp16", True), device="cpu")
    a, w, sa, sb, b = inputs["a"], inputs["b"], inputs["scale_a"], inputs["scale_b"], inputs["bias"]
    f16 = torch.float16
    with pytest.raises(ValueError, match="BLOCK_N=48"):
        mod.w8a8_gemm(a, w, sa, sb, f16, b, BLOCK_N=48)
    with pytest.raises(ValueError, match="BLOCK_K=16"):
        mod.w8a8_gemm(a, w, sa, sb, f16, b, BLOCK_K=16)
    with pytest.raises(ValueError, match="GROUP_M=0"):
        mod.w8a8_gemm(a, w, sa, sb, f16, b, GROUP_M=0)
    with pytest.raises(ValueError, match=r"a \[M, K\] and b \[K, N\]"):
        mod.w8a8_gemm(a, w[:32], sa, sb, f16, b)
    with pytest.raises(ValueError, match="torch.int8"):
        mod.w8a8_gemm(a.to(f16), w, sa, sb, f16, b)
    with pytest.raises(ValueError, match="torch.int8"):
        mod.w8a8_gemm(a, w.to(torch.uint8), sa, sb, f16, b)
    with pytest.raises(ValueError, match="out_dtype"):
        mod.w8a8_gemm(a, w, sa, sb, torch.float32)
    with pytest.raises(ValueError, match="K contiguous"):
        mod.w8a8_gemm(a.T.contiguous().T, w, sa, sb, f16, b)
    with pytest.raises(ValueError, match="scale_a .* M=8"):
        mod.w8a8_gemm(a, w, sa[:4], sb, f16, b)
    with pytest.raises(ValueError, match="scale_b must be an fp32"):
        mod.w8a8_gemm(a, w, sa, sb.to(f16), f16, b)
    with pytest.raises(ValueError, match="bias must be torch.float16"):
        mod.w8a8_gemm(a, w, sa, sb, f16, b.bfloat16())
    with pytest.raises(ValueError, match=r"out must be torch.float16 \[8, 16\]"):
        mod.w8a8_gemm(a, w, sa, sb, f16, b, out=torch.empty(8, 15, dtype=f16))
    with pytest.raises(ValueError, match="empty GEMM"):
        mod.w8a8_gemm(a[:0], w, sa[:0], sb, f16, b)
    with pytest.raises(ValueError, match="int32 accumulator"):
        big = torch.zeros((1, 2**17), dtype=torch.int8)
        mod.w8a8_gemm(big, torch.zeros((2**17, 1), dtype=torch.int8), sa[:1], sb[..., :1], f16)
    with pytest.raises(ValueError, match="fp32"):
        mod.make_inputs(_pt(4, 8, 32, "fp32"), device="cpu")
    with pytest.raises(ValueError, match="b_layout"):
        mod.make_inputs(_pt(4, 8, 32, "fp16", b_layout="kk"), device="cpu")
    with pytest.raises(ValueError, match="int8"):
        mod.bytes_moved(_pt(4, 8, 32, "int8"))


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


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["sm_120", "sm_90"])
def test_other_points_compile(shared_cache, arch):
    """The second point (a [K, N] weight, a bias, fp16) and the third (decode M) at BASELINE."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    cfg = mod.BASELINE
    for p in mod.POINTS[1:]:
        res = compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch=arch, num_warps=cfg["num_warps"],
                             num_stages=cfg["num_stages"])
        assert res.status == "ok", f"{p} on {arch}: {res.status}: {res.message}"


@pytest.mark.slow
def test_int8_dot_runs_on_int8_tensor_cores(shared_cache):
    """On sm_90 the dot is an int8 wgmma (s8 x s8 -> s32), not an upcast to a float type."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    res = compile_kernel(mod._kernel, args=mod.example_args(mod.BASELINE, mod.POINTS[0]), arch="sm_90",
                         num_warps=4, num_stages=4, keep_ir=True)
    assert res.status == "ok", res.message
    assert ".s32.s8.s8" in res.ptx and "wgmma.mma_async" in res.ptx


# ----------------------------------------------------------------- the subprocess side
def _run_prefilled() -> None:
    """Under TRITON_INTERPRET=1: the PREFILLED cases into a NaN-filled out= buffer; one JSON line."""
    import torch

    assert os.environ.get("TRITON_INTERPRET") == "1", "run with TRITON_INTERPRET=1"
    mod = load_example(KERNEL)
    results = {}
    for name in PREFILLED:
        point, cfg = CASES[KERNEL][name]
        try:
            inputs = mod.make_inputs(point, seed=len(name), device="cpu")
            _prepare(name, point, inputs)
            out = torch.full((point["M"], point["N"]), float("nan"), dtype=inputs["out_dtype"])
            got = mod.w8a8_gemm(inputs["a"], inputs["b"], inputs["scale_a"], inputs["scale_b"],
                                inputs["out_dtype"], inputs["bias"], out=out, **cfg)
            results[name] = H.compare(got, mod.reference(inputs), point["dtype"], TOL)
            results[name]["same_buffer"] = got.data_ptr() == out.data_ptr()
        except Exception as exc:          # reported per case by the test
            results[name] = {"error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(results))


if __name__ == "__main__":
    if sys.argv[1] == "prefilled_out":
        _run_prefilled()
    else:
        H.run_cases(sys.argv[1], CASES[sys.argv[1]], TOL, prepare=_prepare, baseline=True)
