"""examples/depthwise_conv2d.py against its fp32 torch reference on the CPU through Triton's
interpreter, its launcher hooks against the shapes, its study sweep against the points, and
a compile for sm_90 and sm_120 from its own ``example_args``.

As in test_examples_round5_a.py, the interpreter must be chosen before triton is imported,
so the cases run in a subprocess (this file run as a script:
``python tests/test_examples_round10_d.py depthwise_conv2d``) that prints one JSON line; the
tests assert per case. A second subprocess (``... layout``) checks what the value comparison
does not see: the output is a channels_last [N, C, P, Q] tensor (a contiguous NHWC buffer),
int and (h, w) pair arguments give the same result, and NCHW-contiguous x with torch's own
[C, 1, R, S] weight layout are taken (copied) without changing the result, bit for bit.

Shapes are small and odd: output rows / columns not multiples of BLOCK_P / BLOCK_Q (and
smaller than them), C not a multiple of BLOCK_C (the masked channel tail, C = 5, 20, 24,
40 among them) and a multiple (EVEN_C), stride 2 and per-axis strides, padding 0 to wider
than the filter's halo, 1x1 / 3x3 / 3x5 / 5x5 / 7x7 filters, a bias and none, x as a
channel slice of a wider NHWC tensor (row strides != C) with the weight a slice of a wider
[R, S, C'] buffer (tap strides != S C, C), and NCHW-contiguous inputs with torch's weight.

Tolerance (x max|ref|, absolute, per element): the reference is torch's fp32 grouped conv of
the same (rounded) inputs, so only the summation order and the one rounding to the output
dtype differ. bf16 1.5e-2: the interpreter's fp32 -> bf16 cast truncates (up to one bf16
ulp, 2^-7 relative); fp16 2e-3 (an fp16 ulp is 2^-10 relative).
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
KERNEL = "depthwise_conv2d"
TOL = {"bf16": 1.5e-2, "fp16": 2e-3}

# the GPU study's sweep: 4 x 2 x 2 x 3 = 48 configs x the 3 POINTS (the integrator moves it
# into the study's registry). num_stages has one value: the tap loop has no dot and Triton
# does not pipeline its loads (1, 2 and 3 give the same cubin, checked below).


def _cfg(bp, bq, bc, w, s):
    return {"BLOCK_P": bp, "BLOCK_Q": bq, "BLOCK_C": bc, "num_warps": w, "num_stages": s}


def _pt(N, C, H, W, R, S, stride, pad, dtype, bias=False):
    return {"N": N, "C": C, "H": H, "W": W, "R": R, "S": S, "stride": stride, "pad": pad, "bias": bias,
            "dtype": dtype}


# kernel module -> case name -> (point, cfg)
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        "convnext_7x7_ragged_c_bias_bf16": (_pt(2, 40, 9, 9, 7, 7, 1, 3, "bf16", bias=True), _cfg(2, 8, 32, 4, 1)),
        "mobilenet_3x3_stride2_fp16": (_pt(3, 24, 11, 13, 3, 3, 2, 1, "fp16"), _cfg(4, 8, 16, 2, 1)),
        "even_c_5x5_bias_bf16": (_pt(2, 64, 10, 10, 5, 5, 1, 2, "bf16", bias=True), _cfg(8, 16, 32, 8, 2)),
        "everything_smaller_than_blocks_fp16": (_pt(1, 5, 3, 3, 3, 3, 1, 1, "fp16", bias=True),
                                                _cfg(8, 16, 64, 8, 1)),
        "valid_no_pad_row_tiles_bf16": (_pt(2, 48, 7, 10, 3, 3, 1, 0, "bf16"), _cfg(1, 8, 16, 2, 1)),
        "pad_beyond_halo_fp16": (_pt(1, 16, 4, 6, 3, 3, 1, 3, "fp16"), _cfg(2, 16, 16, 4, 2)),
        "asym_3x5_per_axis_bias_bf16": (_pt(2, 20, 9, 11, 3, 5, (2, 1), (1, 2), "bf16", bias=True),
                                        _cfg(4, 4, 32, 4, 1)),
        "stride2_7x7_even_c_fp16": (_pt(2, 32, 13, 13, 7, 7, 2, 3, "fp16", bias=True), _cfg(2, 8, 32, 2, 1)),
        "pointwise_1x1_bf16": (_pt(2, 12, 5, 7, 1, 1, 1, 0, "bf16"), _cfg(2, 4, 16, 4, 1)),
        "channel_slice_views_bf16": (_pt(2, 24, 7, 7, 3, 3, 1, 1, "bf16", bias=True), _cfg(4, 8, 16, 4, 1)),
        "nchw_x_torch_weight_fp16": (_pt(2, 16, 6, 6, 3, 3, 1, 1, "fp16"), _cfg(2, 8, 16, 4, 1)),
    },
}

# configs compiled for each arch at the module's first POINT (BASELINE first)
COMPILE_CFGS: dict[str, list[dict]] = {
    KERNEL: [_cfg(4, 16, 32, 4, 1), _cfg(8, 16, 64, 8, 1), _cfg(1, 8, 32, 2, 1)],
}


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """Edit a case's inputs: x a channel slice of a wider channels_last tensor and the weight a
    channel slice of a wider [R, S, C'] buffer; or x NCHW-contiguous and the weight in torch's
    own [C, 1, R, S] contiguous layout."""
    import torch

    if name == "channel_slice_views_bf16":
        x, w = inputs["x"], inputs["weight"]
        C = x.shape[1]
        xw = torch.randn((x.shape[0], C + 8) + tuple(x.shape[2:])).to(x.dtype).contiguous(
            memory_format=torch.channels_last)
        xw[:, 3:3 + C] = x
        R, S = w.shape[2:]
        ww = torch.randn((R, S, C + 16)).to(w.dtype)           # an [R, S, C'] buffer
        ww[:, :, 8:8 + C] = w[:, 0].permute(1, 2, 0)
        inputs["x"] = xw[:, 3:3 + C]
        inputs["weight"] = ww[:, :, 8:8 + C].permute(2, 0, 1).unsqueeze(1)
        assert inputs["x"].stride(1) == 1 and inputs["x"].stride(3) == C + 8
        st = inputs["weight"].stride()
        assert (st[0], st[2], st[3]) == (1, S * (C + 16), C + 16)
        assert torch.equal(inputs["weight"], w)
    if name == "nchw_x_torch_weight_fp16":
        inputs["x"], inputs["weight"] = inputs["x"].contiguous(), inputs["weight"].contiguous()
        assert inputs["x"].stride(1) != 1 and inputs["weight"].stride(0) != 1


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
    assert res["shape"] == [point["N"], point["C"], P, Q]
    for what, r in (("kernel", res), ("torch_baseline", res["baseline"])):
        assert r["n_bad"] == 0, H.mismatch(r, f"{kernel}/{name} {what}")


def test_output_layout_and_argument_forms():
    res = _results("layout")
    assert "error" not in res, res.get("error")
    assert res["channels_last"] and res["nhwc_strides"], res
    assert res["pair_args_same"] and res["nchw_inputs_same"] and res["torch_weight_same"], res


def test_cases_cover_every_tunable_value():
    """Each tunable takes at least two values over the cases; the pixel and channel tails, the
    halo, strides, every filter size, both dtypes and both bias settings are hit."""
    SWEEP_AXES = H.study_sweeps([KERNEL], "held-out-10")[KERNEL][2]     # the study's sweep (scripts/rank_study.py SWEEPS)
    mod = load_example(KERNEL)
    H.assert_tunables_covered(CASES)
    cases = list(CASES[KERNEL].values())
    geo = [(p, c, mod._geometry(p)) for p, c in cases]
    assert any(g[0] % c["BLOCK_P"] for _, c, g in geo) and any(g[0] < c["BLOCK_P"] for _, c, g in geo)
    assert any(g[1] % c["BLOCK_Q"] for _, c, g in geo) and any(g[1] < c["BLOCK_Q"] for _, c, g in geo)
    assert any(g[0] % c["BLOCK_P"] == 0 and g[1] % c["BLOCK_Q"] == 0 for _, c, g in geo)
    assert any(p["C"] % c["BLOCK_C"] for p, c in cases) and any(p["C"] < c["BLOCK_C"] for p, c in cases)
    assert any(p["C"] % c["BLOCK_C"] == 0 for p, c in cases)          # EVEN_C: the unmasked channel loads
    assert any(g[2] != (1, 1) for _, _, g in geo) and any(g[2][0] != g[2][1] for _, _, g in geo)   # strides
    assert any(g[3] == (0, 0) for _, _, g in geo) and any(g[3][0] != g[3][1] for _, _, g in geo)   # padding
    assert any(g[3][0] > (p["R"] - 1) // 2 for p, _, g in geo)         # padding wider than the halo
    assert {(p["R"], p["S"]) for p, _ in cases} >= {(1, 1), (3, 3), (3, 5), (5, 5), (7, 7)}
    assert {p["dtype"] for p, _ in cases} == set(mod.DTYPES)
    assert {p["bias"] for p, _ in cases} == {True, False}
    # the sweep's values of each tunable are all among the tested ones or bracketed by them
    for k, vals in SWEEP_AXES.items():
        tested = {c[k] for _, c in cases}
        assert min(tested) <= min(vals) and max(tested) >= max(vals), (k, tested)


def test_sweep_fits_the_points():
    """The study sweep: the TUNABLES, each but num_stages over >= 2 values, 48 configs with
    BASELINE among them; at every POINT each config is valid, its example_args are the point's
    bytes, it fills the 132 SMs many times over, and its tap loop is R steps of S unrolled taps.
    (Every config was compiled for sm_90 with triton 3.6.0 at every point: all 144 compile, 32-255
    registers, 0 or 128 B of shared memory: the 128 B at BLOCK_C 64 with 2 warps, where the
    weight vector's load gets a layout of its own and a convert through shared memory. Spills:
    BLOCK_C 64 at 2 warps with tiles of >= 4096 elements, 96-126 words a thread (8 x 16 x 64 at
    the two 7x7 points 1404-1514 words, ptxas down to 32 registers), and 2 words at 64 registers
    for three BLOCK_C 64 configs at 4 / 8 warps at the 3x3 point.)"""
    SWEEP_AXES = H.study_sweeps([KERNEL], "held-out-10")[KERNEL][2]     # the study's sweep (scripts/rank_study.py SWEEPS)
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
            assert mod.grid(c, p) >= 4 * 132, (p, c)
            assert mod.loop_iterations(c, p) == p["R"] * p["S"]
            assert args["EVEN_C"] == (p["C"] % c["BLOCK_C"] == 0)


def test_launcher_hooks_agree_with_shapes():
    """At every default point: the meta tensors of example_args are exactly the bytes
    bytes_moved counts (x, weight, bias read once, out written once), with the channels_last
    strides of a real launch and the [R, S, C]-stored weight; grid is the tiling of the
    output; the points are real layers bigger than the L2."""
    import torch
    import triton

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "example_args", "torch_baseline", "depthwise_conv2d", "prepare_weight"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert len(mod.POINTS) == 3 and {p["dtype"] for p in mod.POINTS} == set(mod.DTYPES)
    assert {p["bias"] for p in mod.POINTS} == {True, False}
    assert any(p["stride"] == 2 for p in mod.POINTS) and {(p["R"], p["S"]) for p in mod.POINTS} == {(7, 7), (3, 3)}
    for cfg in [mod.BASELINE] + COMPILE_CFGS[KERNEL]:
        for p in mod.POINTS:
            Nb, C, Hh, W, R, S = (p[k] for k in ("N", "C", "H", "W", "R", "S"))
            P, Q = mod._geometry(p)[:2]
            args = mod.example_args(cfg, p)
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for v in args.values())
            assert H.meta_nbytes(args) == mod.bytes_moved(p), p
            assert 2 * Nb * C * Hh * W > 50 * 2**20 and mod.bytes_moved(p) > 140 * 2**20
            assert args["X"].shape == (Nb, C, Hh, W) and args["X"].stride() == (Hh * W * C, 1, W * C, C)
            assert args["Wt"].shape == (C, 1, R, S) and args["Wt"].stride()[::2] == (1, S * C)
            assert args["Wt"].stride(3) == C
            assert args["OUT"].shape == (Nb, C, P, Q) and args["OUT"].stride() == (P * Q * C, 1, Q * C, C)
            assert args["X"].dtype == args["Wt"].dtype == args["OUT"].dtype == mod._torch_dtype(p["dtype"])
            assert (args["BIAS"] is not None) == p["bias"] == args["HAS_BIAS"]
            assert (args["C"], args["H"], args["W"], args["P"], args["Q"], args["R"], args["S"]) == \
                (C, Hh, W, P, Q, R, S)
            assert (args["stride_xn"], args["stride_xh"], args["stride_xw"]) == (Hh * W * C, W * C, C)
            assert (args["stride_wr"], args["stride_ws"]) == (S * C, C)
            assert (args["stride_on"], args["stride_oh"], args["stride_ow"]) == (P * Q * C, Q * C, C)
            assert (args["stride_h"], args["stride_w"], args["pad_h"], args["pad_w"]) == \
                (p["stride"], p["stride"], p["pad"], p["pad"])
            assert args["EVEN_C"] == (C % cfg["BLOCK_C"] == 0)
            assert mod.bytes_moved(p) == 2 * (Nb * C * Hh * W + C * R * S + (C if p["bias"] else 0) +
                                              Nb * C * P * Q)
            assert mod.grid(cfg, p) == Nb * triton.cdiv(P, cfg["BLOCK_P"]) * triton.cdiv(Q, cfg["BLOCK_Q"]) * \
                triton.cdiv(C, cfg["BLOCK_C"])
            assert mod.loop_iterations(cfg, p) == R * S
            assert mod.flops(p) == 2 * Nb * C * P * Q * R * S >= 5 * 10**8
    assert mod.example_args(mod.BASELINE, mod.POINTS[0])["OUT"].dtype == torch.bfloat16


def test_hooks_on_small_points_and_inputs():
    import torch

    mod = load_example(KERNEL)
    p = _pt(3, 24, 11, 13, 3, 3, 2, 1, "fp16", bias=True)
    c = _cfg(4, 8, 16, 2, 1)
    assert mod._geometry(p) == (6, 7, (2, 2), (1, 1))
    assert mod.grid(c, p) == 3 * 2 * 1 * 2 and mod.loop_iterations(c, p) == 9
    assert mod.bytes_moved(p) == 2 * (3 * 24 * 11 * 13 + 24 * 9 + 24 + 3 * 24 * 6 * 7)
    assert mod.flops(p) == 2 * 3 * 24 * 42 * 9
    q = _pt(2, 20, 9, 11, 3, 5, (2, 1), (1, 2), "bf16")
    assert mod._geometry(q)[:2] == (5, 11)
    args = mod.example_args(c, q)
    assert not args["EVEN_C"] and not args["HAS_BIAS"]
    assert (args["stride_h"], args["stride_w"], args["pad_h"], args["pad_w"]) == (2, 1, 1, 2)
    assert mod.example_args(_cfg(4, 8, 32, 2, 1), _pt(1, 64, 8, 8, 7, 7, 1, 3, "bf16"))["EVEN_C"]
    inputs = mod.make_inputs(p, device="cpu")
    x, w = inputs["x"], inputs["weight"]
    assert x.shape == (3, 24, 11, 13) and x.is_contiguous(memory_format=torch.channels_last)
    assert x.dtype == w.dtype == torch.float16
    assert w.shape == (24, 1, 3, 3) and (w.stride(0), w.stride(2), w.stride(3)) == (1, 3 * 24, 24) and inputs["bias"].shape == (24,)
    assert (inputs["stride"], inputs["padding"]) == ((2, 2), (1, 1))
    tw = w.contiguous()
    assert torch.equal(mod.prepare_weight(tw), w) and mod.prepare_weight(tw).stride() == w.stride()
    ref = mod.reference(inputs)
    assert ref.shape == (3, 24, 6, 7) and ref.dtype == torch.float32 and 0.3 < float(ref.std()) < 3
    base = mod.torch_baseline(inputs)
    assert base.shape == (3, 24, 6, 7) and base.dtype == torch.float16
    assert mod.make_inputs(_pt(1, 4, 3, 3, 1, 1, 1, 0, "bf16"), device="cpu")["bias"] is None


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    inputs = mod.make_inputs(_pt(2, 8, 6, 6, 3, 3, 1, 1, "fp16", bias=True), device="cpu")
    x, w, b = inputs["x"], inputs["weight"], inputs["bias"]
    with pytest.raises(ValueError, match="BLOCK_C=48"):
        mod.depthwise_conv2d(x, w, b, BLOCK_C=48)
    with pytest.raises(ValueError, match="BLOCK_P=3"):
        mod.depthwise_conv2d(x, w, b, BLOCK_P=3)
    with pytest.raises(ValueError, match="BLOCK_Q=0"):
        mod.depthwise_conv2d(x, w, b, BLOCK_Q=0)
    with pytest.raises(ValueError, match=r"depthwise weight \[C, 1, R, S\]"):
        mod.depthwise_conv2d(x, w[:4], b)
    with pytest.raises(ValueError, match=r"depthwise weight \[C, 1, R, S\]"):
        mod.depthwise_conv2d(x, w.expand(8, 2, 3, 3), b)
    with pytest.raises(ValueError, match=r"depthwise weight \[C, 1, R, S\]"):
        mod.depthwise_conv2d(x[0], w, b)
    with pytest.raises(ValueError, match="one fp16 / bf16 dtype"):
        mod.depthwise_conv2d(x.float(), w.float())
    with pytest.raises(ValueError, match="one fp16 / bf16 dtype"):
        mod.depthwise_conv2d(x, w.bfloat16())
    with pytest.raises(ValueError, match=r"bias must be torch.float16 \[8\]"):
        mod.depthwise_conv2d(x, w, b[:4])
    with pytest.raises(ValueError, match=r"bias must be torch.float16 \[8\]"):
        mod.depthwise_conv2d(x, w, b.float())
    with pytest.raises(ValueError, match="stride >= 1"):
        mod.depthwise_conv2d(x, w, b, stride=0)
    with pytest.raises(ValueError, match="padding >= 0"):
        mod.depthwise_conv2d(x, w, b, padding=(1, -1))
    with pytest.raises(ValueError, match="padding must be an int or an"):
        mod.depthwise_conv2d(x, w, b, padding="same")
    with pytest.raises(ValueError, match="empty convolution"):
        mod.depthwise_conv2d(x[:, :, :2], w, b)              # a 3x3 filter on 2 rows, no padding
    with pytest.raises(ValueError, match="fp32"):
        mod.make_inputs(_pt(1, 4, 3, 3, 1, 1, 1, 0, "fp32"), device="cpu")
    with pytest.raises(ValueError, match="fp8"):
        mod.bytes_moved(_pt(1, 4, 3, 3, 1, 1, 1, 0, "fp8"))
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
    """BASELINE at the second point (fp16, 192 channels) and the third (3x3 stride 2, no bias), and
    a channel tail (EVEN_C false) at the first."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    cfg = mod.BASELINE
    tail = _cfg(4, 16, 64, 4, 1)
    for p, c in [(q, cfg) for q in mod.POINTS[1:]] + [(mod.POINTS[0], tail)]:
        args = mod.example_args(c, p)
        assert args["EVEN_C"] == (c is cfg)
        res = compile_kernel(mod._kernel, args=args, arch=arch, num_warps=c["num_warps"], num_stages=c["num_stages"])
        assert res.status == "ok", f"{p} {c} on {arch}: {res.status}: {res.message}"


@pytest.mark.slow
def test_num_stages_leaves_the_cubin_alone(shared_cache):
    """No dot and no pipelined load: num_stages 1, 2, 3 compile to the same cubin for sm_90 (why
    SWEEP_AXES holds num_stages at 1)."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    p = mod.POINTS[0]
    cfg = mod.BASELINE
    cubins = {compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch="sm_90", num_warps=cfg["num_warps"],
                             num_stages=s, keep_ir=True).cubin for s in (1, 2, 3)}
    assert len(cubins) == 1 and None not in cubins


# ----------------------------------------------------------------- the subprocess side
def _run_layout() -> None:
    """Under TRITON_INTERPRET=1: the output's memory layout, int vs (h, w) pair arguments, and
    NCHW-contiguous x / torch's weight layout against channels_last x / the prepared weight
    (the same values, bit for bit). One JSON line."""
    import torch

    assert os.environ.get("TRITON_INTERPRET") == "1", "run with TRITON_INTERPRET=1"
    mod = load_example(KERNEL)
    try:
        inputs = mod.make_inputs(_pt(2, 16, 7, 5, 3, 3, 2, 1, "bf16", bias=True), seed=5, device="cpu")
        x, w, b = inputs["x"], inputs["weight"], inputs["bias"]
        kw = dict(BLOCK_P=2, BLOCK_Q=4, BLOCK_C=16, num_warps=4, num_stages=1)
        out = mod.depthwise_conv2d(x, w, b, 2, 1, **kw)
        out_pair = mod.depthwise_conv2d(x, w, b, (2, 2), (1, 1), **kw)
        out_nchw = mod.depthwise_conv2d(x.contiguous(), w, b, stride=2, padding=1, **kw)
        out_tw = mod.depthwise_conv2d(x, w.contiguous(), b, stride=2, padding=1, **kw)
        res = {"channels_last": out.is_contiguous(memory_format=torch.channels_last) and out.shape == (2, 16, 4, 3),
               "nhwc_strides": out.stride() == (4 * 3 * 16, 1, 3 * 16, 16),
               "pair_args_same": torch.equal(out, out_pair), "nchw_inputs_same": torch.equal(out, out_nchw),
               "torch_weight_same": torch.equal(out, out_tw)}
    except Exception as exc:          # reported by the test
        res = {"error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(res))


if __name__ == "__main__":
    if sys.argv[1] == "layout":
        _run_layout()
    else:
        H.run_cases(sys.argv[1], CASES[sys.argv[1]], TOL, prepare=_prepare, baseline=True)
