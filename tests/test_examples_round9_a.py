"""examples/conv2d_nhwc.py against its fp32 torch reference on the CPU through Triton's
interpreter, its launcher hooks against the shapes, its study sweep against the points, and
a compile for sm_90 and sm_120 from its own ``example_args``.

As in test_examples_round5_a.py, the interpreter must be chosen before triton is imported,
so the cases run in a subprocess (this file run as a script:
``python tests/test_examples_round9_a.py conv2d_nhwc``) that prints one JSON line; the tests
assert per case. A second subprocess (``... layout``) checks what the value comparison does
not see: the output is a channels_last [N, K, P, Q] tensor (a contiguous NHWC buffer), int
and (h, w) pair arguments give the same result, and inputs that are not channels_last are
taken (copied) without changing the result.

Shapes are small and odd: M = N P Q not a multiple of BLOCK_M (and smaller than it), K not
a multiple of BLOCK_N (and smaller), C not a multiple of BLOCK_K (the masked channel tail,
C = 3 and 5 among them) and a multiple (EVEN_C), stride 2, padding 1-3 and a padding wider
than the filter's halo, dilation 2, 1x1 / 1x3 / 3x3 / 5x5 / 7x7 filters, per-axis stride and
padding, a bias, x as a channel slice of a wider NHWC tensor (row strides != C) and a weight
slice (stride_wk != R S C), and NCHW-contiguous inputs.

Tolerance (x max|ref|, absolute, per element): the reference is torch's fp32 conv of the
same (rounded) inputs, so only the summation order and the one rounding to the output dtype
differ. bf16 1.5e-2: the interpreter's fp32 -> bf16 cast truncates (up to one bf16 ulp,
2^-7 relative); fp16 2e-3 (an fp16 ulp is 2^-10 relative).
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
KERNEL = "conv2d_nhwc"
TOL = {"bf16": 1.5e-2, "fp16": 2e-3}

# the GPU study's sweep (72 configs x the 3 POINTS); the integrator moves it into the study's registry


def _cfg(bm, bn, bk, w, s):
    return {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "num_warps": w, "num_stages": s}


def _pt(N, C, H, W, K, R, S, stride, pad, dtype, dilation=1, bias=False):
    return {"N": N, "C": C, "H": H, "W": W, "K": K, "R": R, "S": S, "stride": stride, "pad": pad,
            "dilation": dilation, "bias": bias, "dtype": dtype}


# kernel module -> case name -> (point, cfg)
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        "resnet_3x3_ragged_c_bf16": (_pt(2, 20, 9, 9, 24, 3, 3, 1, 1, "bf16"), _cfg(32, 16, 16, 4, 2)),
        "stride2_rect_image_bias_fp16": (_pt(3, 16, 11, 7, 40, 3, 3, 2, 1, "fp16", bias=True),
                                         _cfg(16, 32, 16, 4, 3)),
        "proj_1x1_blocks_wider_bf16": (_pt(2, 64, 6, 5, 48, 1, 1, 1, 0, "bf16"), _cfg(64, 64, 32, 8, 3)),
        "downsample_1x1_stride2_fp16": (_pt(2, 32, 9, 9, 20, 1, 1, 2, 0, "fp16"), _cfg(16, 16, 32, 2, 1)),
        "dilated_3x3_bias_bf16": (_pt(1, 24, 10, 13, 16, 3, 3, 1, 2, "bf16", dilation=2, bias=True),
                                  _cfg(32, 16, 16, 4, 2)),
        "stem_7x7_c3_stride2_fp16": (_pt(2, 3, 15, 15, 16, 7, 7, 2, 3, "fp16"), _cfg(64, 16, 16, 4, 1)),
        "asym_1x3_per_axis_bf16": (_pt(2, 16, 5, 12, 33, 1, 3, (1, 2), (0, 1), "bf16", bias=True),
                                   _cfg(16, 64, 16, 2, 2)),
        "everything_smaller_than_blocks_fp16": (_pt(1, 5, 3, 3, 7, 3, 3, 1, 1, "fp16", bias=True),
                                                _cfg(64, 64, 64, 8, 3)),
        "exact_tiles_5x5_no_pad_bf16": (_pt(2, 32, 8, 8, 32, 5, 5, 1, 0, "bf16"), _cfg(32, 32, 32, 4, 3)),
        "pad_beyond_halo_fp16": (_pt(1, 16, 4, 6, 16, 3, 3, 1, 2, "fp16"), _cfg(16, 16, 16, 2, 2)),
        "channel_slice_views_bf16": (_pt(2, 24, 7, 7, 20, 3, 3, 1, 1, "bf16", bias=True), _cfg(32, 32, 16, 4, 2)),
        "nchw_contiguous_inputs_fp16": (_pt(2, 16, 6, 6, 16, 3, 3, 1, 1, "fp16"), _cfg(16, 32, 16, 4, 1)),
    },
}

# configs compiled for each arch at the module's first POINT (BASELINE first)
COMPILE_CFGS: dict[str, list[dict]] = {
    KERNEL: [_cfg(128, 128, 64, 4, 3), _cfg(256, 128, 64, 8, 4), _cfg(64, 64, 32, 4, 2)],
}


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """Edit a case's inputs: x and weight as channel slices of wider channels_last tensors; or
    both NCHW-contiguous."""
    import torch

    cl = torch.channels_last
    if name == "channel_slice_views_bf16":
        x, w = inputs["x"], inputs["weight"]
        xw = torch.randn((x.shape[0], x.shape[1] + 8) + tuple(x.shape[2:])).to(x.dtype).contiguous(memory_format=cl)
        xw[:, :x.shape[1]] = x
        ww = torch.randn((w.shape[0], w.shape[1] + 16) + tuple(w.shape[2:])).to(w.dtype).contiguous(memory_format=cl)
        ww[:, 8:8 + w.shape[1]] = w
        inputs["x"], inputs["weight"] = xw[:, :x.shape[1]], ww[:, 8:8 + w.shape[1]]
        assert inputs["x"].stride(1) == 1 and inputs["x"].stride(3) == x.shape[1] + 8
        assert inputs["weight"].stride(1) == 1 and inputs["weight"].stride(0) != w[0].numel()
    if name == "nchw_contiguous_inputs_fp16":
        inputs["x"], inputs["weight"] = inputs["x"].contiguous(), inputs["weight"].contiguous()
        assert inputs["x"].stride(1) != 1 and inputs["weight"].stride(1) != 1


# ----------------------------------------------------------------- the pytest side
def _results(kernel: str) -> dict:
    return H.interpreter_results(HERE, kernel)


@pytest.mark.parametrize("kernel,name", [(k, n) for k, cases in CASES.items() for n in cases])
def test_example_matches_reference(kernel, name):
    res = _results(kernel)[name]
    assert "error" not in res, f"{kernel}/{name}: {res.get('error')}"
    mod = load_example(kernel)
    point = CASES[kernel][name][0]
    P, Q = mod._geometry(point)[:2]
    assert res["shape"] == [point["N"], point["K"], P, Q]
    for what, r in (("kernel", res), ("torch_baseline", res["baseline"])):
        assert r["n_bad"] == 0, H.mismatch(r, f"{kernel}/{name} {what}")


def test_output_layout_and_argument_forms():
    res = _results("layout")
    assert "error" not in res, res.get("error")
    assert res["channels_last"] and res["nhwc_strides"], res
    assert res["pair_args_same"] and res["nchw_inputs_same"], res


def test_cases_cover_every_tunable_value():
    """Each tunable takes at least two values over the cases; the tails, the halo, strides,
    dilation, both dtypes and both bias settings are hit."""
    mod = load_example(KERNEL)
    H.assert_tunables_covered(CASES)
    cases = list(CASES[KERNEL].values())
    geo = [(p, c, mod._geometry(p)) for p, c in cases]
    M = [(p["N"] * g[0] * g[1], c) for p, c, g in geo]
    assert any(m % c["BLOCK_M"] for m, c in M) and any(m < c["BLOCK_M"] for m, c in M)
    assert any(m % c["BLOCK_M"] == 0 for m, c in M)
    assert any(p["K"] % c["BLOCK_N"] for p, c in cases) and any(p["K"] < c["BLOCK_N"] for p, c in cases)
    assert any(p["C"] % c["BLOCK_K"] for p, c in cases) and any(p["C"] < c["BLOCK_K"] for p, c in cases)
    assert any(p["C"] % c["BLOCK_K"] == 0 for p, c in cases)          # EVEN_C: the unmasked channel loads
    assert any(g[2] != (1, 1) for _, _, g in geo) and any(g[2][0] != g[2][1] for _, _, g in geo)   # strides
    assert any(g[3] == (0, 0) for _, _, g in geo) and any(g[3][0] != g[3][1] for _, _, g in geo)   # padding
    assert any(g[3][0] > (p["R"] - 1) // 2 for p, _, g in geo)         # padding wider than the halo
    assert any(g[4] != (1, 1) for _, _, g in geo)                     # dilation
    assert {(p["R"], p["S"]) for p, _ in cases} >= {(1, 1), (1, 3), (3, 3), (5, 5), (7, 7)}
    assert {p["dtype"] for p, _ in cases} == set(mod.DTYPES)
    assert {p["bias"] for p, _ in cases} == {True, False}


def test_sweep_fits_the_points():
    """The study sweep: the TUNABLES, each over >= 2 values, 72 configs with BASELINE among them;
    at every POINT each config is valid, runs the unmasked channel loads (EVEN_C), fills the
    132 SMs at least once over, and its pipeline buffers (num_stages x the A and B tiles) fit an
    H200's 227 KiB of shared memory per block. (Every config was compiled for sm_90 with
    triton 3.6.0 at every point: all compile, 42-255 registers, 16-192 KiB of shared memory;
    the 6 configs of BLOCK_M 256 x BLOCK_N 128 at 4 warps spill, 128-182 words a thread: their
    fp32 accumulator alone is 256 registers a thread.)"""
    mod = load_example(KERNEL)
    SWEEP_AXES = H.study_sweeps([KERNEL], "held-out-9")[KERNEL][2]     # the study's sweep (scripts/rank_study.py SWEEPS)
    assert set(SWEEP_AXES) == set(mod.TUNABLES) and all(len(v) >= 2 for v in SWEEP_AXES.values())
    cfgs = [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]
    assert len(cfgs) == 72 and mod.BASELINE in cfgs
    for p in mod.POINTS:
        for c in cfgs:
            mod._check_cfg(c)
            args = mod.example_args(c, p)
            assert args["EVEN_C"] and mod.grid(c, p) >= 132, (p, c)
            assert c["num_stages"] * (c["BLOCK_M"] + c["BLOCK_N"]) * c["BLOCK_K"] * 2 <= 227 * 1024


def test_launcher_hooks_agree_with_shapes():
    """At every default point: the meta tensors of example_args are exactly the bytes
    bytes_moved counts (x, weight, bias read once, out written once), with the channels_last
    strides of a real launch; grid and loop_iterations are the tiling of the implicit GEMM."""
    import torch
    import triton

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "example_args", "torch_baseline", "conv2d_nhwc"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert len(mod.POINTS) == 3 and {p["dtype"] for p in mod.POINTS} == set(mod.DTYPES)
    assert any(p["bias"] for p in mod.POINTS) and any(p["R"] == p["S"] == 1 for p in mod.POINTS)
    assert any(p["stride"] == 2 for p in mod.POINTS)
    for cfg in [mod.BASELINE] + COMPILE_CFGS[KERNEL]:
        for p in mod.POINTS:
            Nb, C, Hh, W, K, R, S = (p[k] for k in ("N", "C", "H", "W", "K", "R", "S"))
            P, Q = mod._geometry(p)[:2]
            args = mod.example_args(cfg, p)
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for v in args.values())
            assert H.meta_nbytes(args) == mod.bytes_moved(p), p
            assert 2 * Nb * C * Hh * W > 50 * 2**20 and mod.bytes_moved(p) > 100 * 2**20
            assert args["X"].shape == (Nb, C, Hh, W) and args["X"].stride() == (Hh * W * C, 1, W * C, C)
            assert args["Wt"].shape == (K, C, R, S) and args["Wt"].stride() == (R * S * C, 1, S * C, C)
            assert args["OUT"].shape == (Nb, K, P, Q) and args["OUT"].stride() == (P * Q * K, 1, Q * K, K)
            assert args["X"].dtype == args["Wt"].dtype == args["OUT"].dtype == mod._torch_dtype(p["dtype"])
            assert (args["BIAS"] is not None) == p["bias"] == args["HAS_BIAS"]
            assert (args["M"], args["C"], args["K"], args["P"], args["Q"], args["R"], args["S"]) == \
                (Nb * P * Q, C, K, P, Q, R, S)
            assert (args["stride_xn"], args["stride_xh"], args["stride_xw"]) == (Hh * W * C, W * C, C)
            assert (args["stride_wk"], args["stride_wr"], args["stride_ws"], args["stride_om"]) == \
                (R * S * C, S * C, C, K)
            assert (args["stride_h"], args["pad_h"], args["dil_h"]) == (p["stride"], p["pad"], p["dilation"])
            assert args["EVEN_C"] == (C % cfg["BLOCK_K"] == 0)
            e = 2
            assert mod.bytes_moved(p) == e * (Nb * C * Hh * W + K * C * R * S + (K if p["bias"] else 0) +
                                              Nb * K * P * Q)
            assert mod.grid(cfg, p) == triton.cdiv(Nb * P * Q, cfg["BLOCK_M"]) * triton.cdiv(K, cfg["BLOCK_N"])
            assert mod.loop_iterations(cfg, p) == R * S * triton.cdiv(C, cfg["BLOCK_K"])
            assert mod.flops(p) == 2 * Nb * P * Q * K * C * R * S >= 5 * 10**10
    assert mod.example_args(mod.BASELINE, mod.POINTS[0])["OUT"].dtype == torch.bfloat16


def test_hooks_on_small_points_and_inputs():
    import torch

    mod = load_example(KERNEL)
    p = _pt(3, 16, 11, 7, 40, 3, 3, 2, 1, "fp16", bias=True)
    c = _cfg(16, 32, 16, 4, 3)
    assert mod._geometry(p) == (6, 4, (2, 2), (1, 1), (1, 1))
    assert mod.grid(c, p) == 5 * 2 and mod.loop_iterations(c, p) == 9
    assert mod.loop_iterations(_cfg(16, 32, 64, 4, 3), _pt(2, 20, 9, 9, 24, 3, 3, 1, 1, "bf16")) == 9
    assert mod.loop_iterations(_cfg(16, 32, 16, 4, 3), _pt(2, 20, 9, 9, 24, 3, 3, 1, 1, "bf16")) == 18
    assert mod.bytes_moved(p) == 2 * (3 * 16 * 11 * 7 + 40 * 16 * 9 + 40 + 3 * 40 * 6 * 4)
    assert mod.flops(p) == 2 * 72 * 40 * 144
    q = _pt(2, 16, 5, 12, 33, 1, 3, (1, 2), (0, 1), "bf16")
    assert mod._geometry(q)[:2] == (5, 6)
    args = mod.example_args(c, q)
    assert args["EVEN_C"] and (args["stride_h"], args["stride_w"], args["pad_h"], args["pad_w"]) == \
        (1, 2, 0, 1)
    assert not mod.example_args(c, _pt(2, 20, 9, 9, 24, 3, 3, 1, 1, "bf16"))["EVEN_C"]
    inputs = mod.make_inputs(p, device="cpu")
    x, w = inputs["x"], inputs["weight"]
    cl = torch.channels_last
    assert x.shape == (3, 16, 11, 7) and x.is_contiguous(memory_format=cl) and x.dtype == torch.float16
    assert w.shape == (40, 16, 3, 3) and w.is_contiguous(memory_format=cl) and inputs["bias"].shape == (40,)
    assert (inputs["stride"], inputs["padding"], inputs["dilation"]) == ((2, 2), (1, 1), (1, 1))
    ref = mod.reference(inputs)
    assert ref.shape == (3, 40, 6, 4) and ref.dtype == torch.float32 and 0.3 < float(ref.std()) < 3
    base = mod.torch_baseline(inputs)
    assert base.shape == (3, 40, 6, 4) and base.dtype == torch.float16
    assert mod.make_inputs(_pt(1, 4, 3, 3, 4, 1, 1, 1, 0, "bf16"), device="cpu")["bias"] is None


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    inputs = mod.make_inputs(_pt(2, 8, 6, 6, 16, 3, 3, 1, 1, "fp16", bias=True), device="cpu")
    x, w, b = inputs["x"], inputs["weight"], inputs["bias"]
    with pytest.raises(ValueError, match="BLOCK_N=48"):
        mod.conv2d_nhwc(x, w, b, BLOCK_N=48)
    with pytest.raises(ValueError, match="BLOCK_K=8"):
        mod.conv2d_nhwc(x, w, b, BLOCK_K=8)
    with pytest.raises(ValueError, match="groups = 1"):
        mod.conv2d_nhwc(x, w[:, :4], b)
    with pytest.raises(ValueError, match="groups = 1"):
        mod.conv2d_nhwc(x[0], w, b)
    with pytest.raises(ValueError, match="one fp16 / bf16 dtype"):
        mod.conv2d_nhwc(x.float(), w.float())
    with pytest.raises(ValueError, match="one fp16 / bf16 dtype"):
        mod.conv2d_nhwc(x, w.bfloat16())
    with pytest.raises(ValueError, match=r"bias must be torch.float16 \[16\]"):
        mod.conv2d_nhwc(x, w, b[:8])
    with pytest.raises(ValueError, match="stride >= 1"):
        mod.conv2d_nhwc(x, w, b, stride=0)
    with pytest.raises(ValueError, match="padding must be an int or an"):
        mod.conv2d_nhwc(x, w, b, padding="same")
    with pytest.raises(ValueError, match="empty convolution"):
        mod.conv2d_nhwc(x[:, :, :2], w, b)              # a 3x3 filter on 2 rows, no padding
    with pytest.raises(ValueError, match="fp32"):
        mod.make_inputs(_pt(1, 4, 3, 3, 4, 1, 1, 1, 0, "fp32"), device="cpu")
    with pytest.raises(ValueError, match="fp8"):
        mod.bytes_moved(_pt(1, 4, 3, 3, 4, 1, 1, 1, 0, "fp8"))
    assert torch.equal(x, inputs["x"])


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
    """The second point (a bias, fp16) and the third (a 1x1 filter) through `_kernel` at BASELINE."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    cfg = mod.BASELINE
    for p in mod.POINTS[1:]:
        res = compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch=arch, num_warps=cfg["num_warps"],
                             num_stages=cfg["num_stages"])
        assert res.status == "ok", f"{p} on {arch}: {res.status}: {res.message}"


# ----------------------------------------------------------------- the subprocess side
def _run_layout() -> None:
    """Under TRITON_INTERPRET=1: the output's memory layout, int vs (h, w) pair arguments, and
    NCHW-contiguous inputs against channels_last ones (the same values, bit for bit). One JSON line."""
    import torch

    assert os.environ.get("TRITON_INTERPRET") == "1", "run with TRITON_INTERPRET=1"
    sys.path.insert(0, str(HERE.parent))
    from test_kernels_interpret import _patch_interpreter_bf16_dot
    _patch_interpreter_bf16_dot()
    mod = load_example(KERNEL)
    try:
        inputs = mod.make_inputs(_pt(2, 16, 7, 5, 24, 3, 3, 2, 1, "bf16", bias=True), seed=5, device="cpu")
        x, w, b = inputs["x"], inputs["weight"], inputs["bias"]
        kw = dict(BLOCK_M=16, BLOCK_N=16, BLOCK_K=16, num_warps=4, num_stages=2)
        out = mod.conv2d_nhwc(x, w, b, 2, 1, 1, **kw)
        out_pair = mod.conv2d_nhwc(x, w, b, (2, 2), (1, 1), (1, 1), **kw)
        out_nchw = mod.conv2d_nhwc(x.contiguous(), w.contiguous(), b, stride=2, padding=1, **kw)
        res = {"channels_last": out.is_contiguous(memory_format=torch.channels_last) and out.shape == (2, 24, 4, 3),
               "nhwc_strides": out.stride() == (4 * 3 * 24, 1, 3 * 24, 24),
               "pair_args_same": torch.equal(out, out_pair), "nchw_inputs_same": torch.equal(out, out_nchw)}
    except Exception as exc:          # reported by the test
        res = {"error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(res))


if __name__ == "__main__":
    if sys.argv[1] == "layout":
        _run_layout()
    else:
        H.run_cases(sys.argv[1], CASES[sys.argv[1]], TOL, prepare=_prepare, baseline=True)
