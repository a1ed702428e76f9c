"""examples/fp8_blockscale_gemm.py against its fp32 torch reference on the CPU through Triton's
interpreter, its launcher hooks against the shapes, its study sweep against the points, and a
compile for sm_90 and sm_120 from its own ``example_args``.

As in test_examples_round8_a.py, the interpreter must be chosen before triton is imported,
so the cases run in a subprocess (this file run as a script:
``python tests/test_examples_round9_b.py fp8_blockscale_gemm``) that prints one JSON line;
the tests assert per case. A second subprocess (``... prefilled_out``) runs cases into an
``out=`` buffer filled with NaN first, so an output tile that no CTA writes (a hole in the
banded tile order) is a mismatch rather than whatever torch.empty held.

The interpreter's tl.dot takes float8_e4m3fn operands as they are (fp8 values are exact in
fp32, so its products are exact). The GPU kernel runs the same dot on the fp8 tensor cores
(wgmma ... e4m3.e4m3 on sm_90, checked from the PTX below).

Shapes are small and odd: M, N, K not multiples of the blocks (wrapped row / column loads,
masked stores), K not a multiple of 128 (a partial last scale group: the masked K loop) and
K < 128, N tails that end inside a 128-row scale block, BLOCK_N = 256 over two scale blocks
(the vector b scale) and BLOCK_N < 128 inside one (the scalar b scale), a last GROUP_M band
with fewer tile rows, M = 1, both a_scale layouts (M-contiguous and row-major), a b_scale
transposed view, and a, b as row views of wider buffers. make_inputs gives every (token,
group) and every weight block its own magnitude, so a scale read from the wrong group or
block is a wrong result.

Tolerance (x max|ref|, absolute, per element): the reference dequantises in fp32 and runs one
fp32 matmul, so only the summation order, the per-group rescale's roundings and the one
rounding to the output dtype differ. bf16 1.5e-2: the interpreter's fp32 -> bf16 cast
truncates (up to one bf16 ulp, 2^-7 relative, where the GPU rounds to nearest); fp16 2e-3
(an fp16 ulp is 2^-10 relative).
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
KERNEL = "fp8_blockscale_gemm"
TOL = {"bf16": 1.5e-2, "fp16": 2e-3}

# The GPU study's sweep (the integrator moves it into the study's registry): 2 x 3 x 2 x 2 x 2
# = 48 configs, each compiled for sm_90 with triton 3.6.0 at every POINT: all ok, 48-193 KiB
# of shared memory. 16 of the 48 spill (255 registers; the group's dot result and the
# accumulator are both live, 2 x BLOCK_M x BLOCK_N fp32 per CTA): 64 x 256 and 128 x 128 at 4
# warps (76 / 60 spilled registers), 128 x 256 at 4 warps (346) and at 8 (52).
SM90_MAX_SHARED = 232448        # bytes of shared memory one CTA may use on sm_90 (227 KiB)


def _cfg(bm, bn, g, w, s):
    return {"BLOCK_M": bm, "BLOCK_N": bn, "GROUP_M": g, "num_warps": w, "num_stages": s}


def _pt(M, N, K, dtype):
    return {"M": M, "N": N, "K": K, "dtype": dtype}


# kernel module -> case name -> (point, cfg)
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        "ragged_mnk_bf16": (_pt(37, 200, 300, "bf16"), _cfg(16, 64, 2, 4, 2)),
        "exact_tiles_fp16": (_pt(64, 256, 256, "fp16"), _cfg(32, 128, 1, 4, 3)),
        "block_n_256_two_scale_blocks_bf16": (_pt(40, 300, 384, "bf16"), _cfg(16, 256, 2, 8, 3)),
        "blocks_wider_than_problem_fp16": (_pt(5, 9, 40, "fp16"), _cfg(32, 64, 8, 8, 1)),
        "last_band_short_bf16": (_pt(70, 96, 256, "bf16"), _cfg(16, 32, 3, 2, 2)),
        "row_major_a_scale_fp16": (_pt(33, 130, 520, "fp16"), _cfg(16, 16, 2, 4, 2)),
        "strided_rows_bf16": (_pt(29, 160, 384, "bf16"), _cfg(16, 64, 4, 4, 2)),
        "single_token_bf16": (_pt(1, 384, 1024, "bf16"), _cfg(16, 128, 8, 4, 3)),
        "long_ragged_k_fp16": (_pt(20, 48, 1000, "fp16"), _cfg(16, 16, 1, 8, 3)),
        "wide_tiles_exact_fp16": (_pt(64, 512, 256, "fp16"), _cfg(64, 256, 1, 8, 4)),
    },
}

# prefilled_out: cases run into a NaN-filled out= buffer (the banded tile order must cover every tile)
PREFILLED = ("ragged_mnk_bf16", "last_band_short_bf16", "blocks_wider_than_problem_fp16",
             "block_n_256_two_scale_blocks_bf16")

# configs compiled for each arch at the module's first POINT (BASELINE first)
COMPILE_CFGS: dict[str, list[dict]] = {
    KERNEL: [_cfg(64, 128, 8, 4, 3), _cfg(128, 128, 8, 8, 4), _cfg(64, 256, 1, 8, 3), _cfg(64, 64, 1, 4, 4)],
}


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """Edit a case's inputs: a row-major a_scale; a, b as row views of wider buffers and b_scale
    as a transposed view."""
    import torch

    if name == "row_major_a_scale_fp16":
        inputs["a_scale"] = inputs["a_scale"].contiguous()
        assert inputs["a_scale"].stride(1) == 1
    if name == "strided_rows_bf16":
        for key, pad in (("a", 16), ("b", 48)):
            t = inputs[key]
            wide = torch.zeros((t.shape[0], t.shape[1] + pad), dtype=torch.float32).to(t.dtype)
            wide[:, :t.shape[1]] = t
            inputs[key] = wide[:, :t.shape[1]]
            assert not inputs[key].is_contiguous() and inputs[key].stride(1) == 1
        inputs["b_scale"] = inputs["b_scale"].t().contiguous().t()
        assert inputs["b_scale"].stride(0) == 1


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
    """Each tunable takes at least two values over the cases; masked tails, partial scale
    groups, both b-scale paths, short bands and both output dtypes are hit."""
    import triton

    H.assert_tunables_covered(CASES)
    cases = CASES[KERNEL].values()
    assert any(p["M"] % c["BLOCK_M"] for p, c in cases) and any(p["M"] < c["BLOCK_M"] for p, c in cases)
    assert any(p["N"] % c["BLOCK_N"] for p, c in cases) and any(p["N"] < c["BLOCK_N"] for p, c in cases)
    assert any(p["K"] % 128 for p, _ in cases) and any(p["K"] < 128 for p, _ in cases)
    assert any(p["K"] % 128 == 0 for p, _ in cases)                      # EVEN_K: the unmasked loop
    assert any(p["N"] % 128 and p["N"] > 128 for p, _ in cases)          # a last scale block cut short
    assert {c["BLOCK_N"] > 128 for _, c in cases} == {True, False}       # vector and scalar b scales
    assert any(c["BLOCK_N"] == 256 and p["N"] % 256 for p, c in cases)  # a 256-wide tile cut by N
    # a last band of fewer than GROUP_M tile rows, with more than one band
    assert any(1 < c["GROUP_M"] < triton.cdiv(p["M"], c["BLOCK_M"]) and triton.cdiv(p["M"], c["BLOCK_M"]) % c["GROUP_M"]
               for p, c in cases)
    assert {p["dtype"] for p, _ in cases} == set(load_example(KERNEL).DTYPES)


def test_sweep_fits_the_points():
    """The study sweep: 48 configs, its axes the TUNABLES, every tunable over >= 2 values,
    BASELINE among them; every config valid at every POINT: its K is a multiple of 128 (the
    unmasked loop), >= 132 tiles fill the GPU, and the pipelined A and B tiles fit sm_90's
    shared memory."""
    mod = load_example(KERNEL)
    SWEEP_AXES = H.study_sweeps([KERNEL], "held-out-9")[KERNEL][2]     # the study's sweep (scripts/rank_study.py SWEEPS)
    assert set(SWEEP_AXES) == set(mod.TUNABLES) and all(len(v) >= 2 for v in SWEEP_AXES.values())
    cfgs = [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]
    assert len(cfgs) == 48 and mod.BASELINE in cfgs
    for c in cfgs:
        mod._check_cfg(c)
        assert (c["BLOCK_M"] + c["BLOCK_N"]) * 128 * c["num_stages"] <= SM90_MAX_SHARED, c
        for p in mod.POINTS:
            args = mod.example_args(c, p)
            assert args["EVEN_K"] and mod.grid(c, p) >= 132, (c, p)


def test_launcher_hooks_agree_with_shapes():
    """At every default point: the meta tensors of example_args are exactly the bytes
    bytes_moved counts (each read or written once), grid and loop_iterations are the
    tiling of those shapes."""
    import torch
    import triton

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "example_args", "torch_baseline", "fp8_blockscale_gemm"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert len(mod.POINTS) == 3 and {p["dtype"] for p in mod.POINTS} == set(mod.DTYPES)
    for cfg in [mod.BASELINE] + COMPILE_CFGS[KERNEL]:
        for p in mod.POINTS:
            M, N, K = p["M"], p["N"], p["K"]
            G, NB = triton.cdiv(K, 128), triton.cdiv(N, 128)
            args = mod.example_args(cfg, p)
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for v in args.values())
            assert H.meta_nbytes(args) == mod.bytes_moved(p) > 250 * 2**20, p
            assert args["A"].shape == (M, K) and args["B"].shape == (N, K)
            assert args["A"].dtype == args["B"].dtype == torch.float8_e4m3fn
            assert args["AS"].shape == (M, G) and args["BS"].shape == (NB, G)
            assert args["AS"].dtype == args["BS"].dtype == torch.float32
            assert args["C"].shape == (M, N) and args["C"].element_size() == 2
            assert (args["M"], args["N"], args["K"], args["stride_am"], args["stride_bn"], args["stride_cm"]) == \
                (M, N, K, K, K, N)
            # a_scale M-contiguous, b_scale row-major, as make_inputs lays them out
            assert (args["stride_asm"], args["stride_asg"], args["stride_bsn"], args["stride_bsg"]) == (1, M, G, 1)
            assert (args["BLOCK_K"], args["GROUP_N"]) == (128, 128)
            assert mod.bytes_moved(p) == M * K + N * K + 4 * (M * G + NB * G) + 2 * M * N
            assert mod.grid(cfg, p) == triton.cdiv(M, cfg["BLOCK_M"]) * triton.cdiv(N, cfg["BLOCK_N"])
            assert mod.loop_iterations(cfg, p) == G
            assert mod.flops(p) == 2 * M * N * K >= 6 * 10**10
    # the decode point's fp8 weight alone is over 5x the H200's 50 MB L2
    assert min(p["N"] * p["K"] for p in mod.POINTS if p["M"] <= 256) > 5 * 50e6


def test_hooks_on_small_points_and_inputs():
    import torch

    mod = load_example(KERNEL)
    p = _pt(37, 200, 300, "bf16")
    c = _cfg(16, 64, 2, 4, 2)
    assert mod.grid(c, p) == 3 * 4 and mod.loop_iterations(c, p) == 3
    assert mod.bytes_moved(p) == 37 * 300 + 200 * 300 + 4 * (37 * 3 + 2 * 3) + 2 * 37 * 200
    args = mod.example_args(c, p)
    assert not args["EVEN_K"] and args["C"].dtype == torch.bfloat16
    assert mod.example_args(c, _pt(16, 16, 256, "fp16"))["EVEN_K"]
    inputs = mod.make_inputs(p, device="cpu")
    a, b, sa, sb = inputs["a"], inputs["b"], inputs["a_scale"], inputs["b_scale"]
    assert a.dtype == b.dtype == torch.float8_e4m3fn and a.shape == (37, 300) and b.shape == (200, 300)
    assert sa.shape == (37, 3) and sa.stride() == (1, 37) and sb.shape == (2, 3) and sb.is_contiguous()
    assert sa.dtype == sb.dtype == torch.float32 and inputs["out_dtype"] == torch.bfloat16
    # every quantisation block uses the whole fp8 range: its amax is 448
    assert torch.all(a.float().abs()[:, :256].reshape(37, 2, 128).amax(2) == mod.FP8_MAX)
    assert torch.all(a.float().abs()[:, 256:].amax(1) == mod.FP8_MAX)
    assert torch.all(b.float().abs()[:128, :128].amax() == mod.FP8_MAX)
    assert torch.all(b.float().abs()[128:, 256:].amax() == mod.FP8_MAX)
    # the scales differ from block to block and matter: one scale per operand averaged is far off
    assert float(sa.max() / sa.min()) > 3 and float(sb.max() / sb.min()) > 3
    ref = mod.reference(inputs)
    assert ref.shape == (37, 200) and ref.dtype == torch.float32 and 0.3 < float(ref.std()) < 10
    flat = dict(inputs, a_scale=torch.full_like(sa, float(sa.mean())), b_scale=torch.full_like(sb, float(sb.mean())))
    assert float((mod.reference(flat) - ref).abs().max()) > 0.1 * float(ref.abs().max())
    assert torch.equal(mod.dequant(b, sb, 128)[130, 260], b[130, 260].float() * sb[1, 2])
    base = mod.torch_baseline(inputs)
    assert base.shape == (37, 200) and base.dtype == torch.bfloat16
    assert mod.make_inputs(_pt(4, 8, 32, "fp16"), device="cpu")["out_dtype"] == torch.float16


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    inputs = mod.make_inputs(_pt(8, 16, 256, "fp16"), device="cpu")
    a, b, sa, sb = inputs["a"], inputs["b"], inputs["a_scale"], inputs["b_scale"]
    f16 = torch.float16
    with pytest.raises(ValueError, match="BLOCK_N=48"):
        mod.fp8_blockscale_gemm(a, b, sa, sb, f16, BLOCK_N=48)
    with pytest.raises(ValueError, match="BLOCK_M=8"):
        mod.fp8_blockscale_gemm(a, b, sa, sb, f16, BLOCK_M=8)
    with pytest.raises(ValueError, match="GROUP_M=0"):
        mod.fp8_blockscale_gemm(a, b, sa, sb, f16, GROUP_M=0)
    with pytest.raises(ValueError, match=r"a \[M, K\] and b \[N, K\]"):
        mod.fp8_blockscale_gemm(a, b[:, :128], sa, sb, f16)
    with pytest.raises(ValueError, match="float8_e4m3fn"):
        mod.fp8_blockscale_gemm(a.to(f16), b, sa, sb, f16)
    with pytest.raises(ValueError, match="out_dtype"):
        mod.fp8_blockscale_gemm(a, b, sa, sb, torch.float32)
    with pytest.raises(ValueError, match="K contiguous"):
        mod.fp8_blockscale_gemm(a.T.contiguous().T, b, sa, sb, f16)
    with pytest.raises(ValueError, match=r"a_scale must be fp32 \[8, 2\]"):
        mod.fp8_blockscale_gemm(a, b, sa[:, :1], sb, f16)
    with pytest.raises(ValueError, match=r"b_scale must be fp32 \[1, 2\]"):
        mod.fp8_blockscale_gemm(a, b, sa, sb.to(f16), f16)
    with pytest.raises(ValueError, match=r"b_scale must be fp32 \[1, 2\]"):
        mod.fp8_blockscale_gemm(a, b, sa, sb.t(), f16)
    with pytest.raises(ValueError, match=r"out must be torch.float16 \[8, 16\]"):
        mod.fp8_blockscale_gemm(a, b, sa, sb, f16, out=torch.empty(8, 15, dtype=f16))
    with pytest.raises(ValueError, match="empty GEMM"):
        mod.fp8_blockscale_gemm(a[:0], b, sa[:0], sb, f16)
    with pytest.raises(ValueError, match="fp32"):
        mod.make_inputs(_pt(4, 8, 32, "fp32"), device="cpu")
    with pytest.raises(ValueError, match="fp8"):
        mod.bytes_moved(_pt(4, 8, 32, "fp8"))


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
def test_fp8_dot_runs_on_fp8_tensor_cores(shared_cache):
    """On sm_90 the group's dot is an fp8 wgmma (e4m3 x e4m3 -> f32), not an upcast to fp16 /
    bf16; the masked K loop (K % 128 != 0) with the vector b scale (BLOCK_N = 256) compiles too."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    res = compile_kernel(mod._kernel, args=mod.example_args(mod.BASELINE, mod.POINTS[0]), arch="sm_90",
                         num_warps=4, num_stages=3, keep_ir=True)
    assert res.status == "ok", res.message
    assert ".f32.e4m3.e4m3" in res.ptx and "wgmma.mma_async" in res.ptx
    cfg = _cfg(64, 256, 8, 8, 3)
    args = mod.example_args(cfg, _pt(1000, 2000, 7000, "fp16"))
    assert not args["EVEN_K"]
    res = compile_kernel(mod._kernel, args=args, arch="sm_90", num_warps=8, num_stages=3)
    assert res.status == "ok", res.message


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
            got = mod.fp8_blockscale_gemm(inputs["a"], inputs["b"], inputs["a_scale"], inputs["b_scale"],
                                          inputs["out_dtype"], out=out, **cfg)
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
