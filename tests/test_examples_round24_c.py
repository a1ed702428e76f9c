"""examples/im2col_conv.py (im2col for a 2-D convolution lowered to a GEMM: x [N, C, H, W] ->
col [N OH OW, C KH KW] row-major, F.unfold's numbers in the token-major layout, zero for padded
taps; a [BLOCK_P pixels, BLOCK_K columns] tile a step, K_STEPS steps a CTA) against torch's
F.unfold on the CPU through Triton's interpreter, its launcher hooks against the shapes, its study
sweep against the points, and a compile for sm_90 and sm_120 from its own ``example_args``.

As in test_examples_round23_a.py the interpreter cases run in a subprocess (this file run as a
script: ``python tests/test_examples_round24_c.py im2col_conv``) that prints one JSON line. The
subprocess installs the harness's interpreter fixes (bf16 rounding; under triton 3.6 with numpy >=
2.3 the K loop's runtime bounds read as ints, see example_harness.patch_interpreter_index).

Shapes are small, odd and ragged: a 7x7 stride-2 pad-3 stem window (K = 147), 3x3 stride 1 and 2,
a dilated 3x3 (dilation 2, pad 2), an asymmetric 2x5 window (stride (1, 3), pad (0, 2), dilation
(2, 1)), a 5x5, a 1x1 stride-2 projection; with and without padding (HAS_PAD: the halo mask or none);
the four store-mask variants (EVEN_P x EVEN_K); a K chunk past K (its loop runs only the real
steps), several K chunks with a ragged last one, a pixel tile wider than N L, tiles straddling
images; x channels_last, a channel slice of a wider tensor with wider rows, a transposed view (all
read in place through their strides); col into a caller's buffer with a wider row pitch (the pad
columns untouched); fp16, bf16, fp32; BLOCK_P 16-128, BLOCK_K 4-32, K_STEPS 1-64, 1-8 warps,
num_stages 1 / 2.

Per case: launch's output equal to the fp32 reference bit for bit (im2col is a copy; the GPU
study's gate, the harness's tolerance, is also checked), its shape, dtype and row pitch; and bit
for bit equal to torch_baseline (eager F.unfold in x's dtype, transposed).
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
KERNEL = "im2col_conv"
ROLE = "held-out-24"
H200_SMS = 132
SM120_SMEM_PER_BLOCK = 99 * 1024

# the study's sweep (scripts/rank_study.py SWEEPS["im2col_conv"] once the lead adds it)
SWEEP_AXES = {"BLOCK_P": [16, 32, 64], "BLOCK_K": [8, 16, 32], "K_STEPS": [1, 4, 16, 64], "num_warps": [4, 8],
              "num_stages": [1]}


def _cfg(bp, bk, ks, w=4, st=1):
    return {"BLOCK_P": bp, "BLOCK_K": bk, "K_STEPS": ks, "num_warps": w, "num_stages": st}


def _pt(n, c, h, w, kh, kw, stride=1, pad=0, dilation=1, dtype="fp32"):
    return {"N": n, "C": c, "H": h, "W": w, "KH": kh, "KW": kw, "stride": stride, "pad": pad, "dilation": dilation,
            "dtype": dtype}


# case -> (point, cfg); comments: OH x OW, N L x K, EVEN_P / EVEN_K, grid (pixel tiles, K chunks)
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        # the stem's window on a 13x11 image: 7 x 6, 84 x 147; EVEN_P 0 (84 = 2 x 32 + 20), EVEN_K 0;
        # chunks of 4 x 32: grid (3, 2), the second chunk 19 columns (1 step of 4)
        "stem7x7_s2_p3_bf16": (_pt(2, 3, 13, 11, 7, 7, 2, 3, 1, "bf16"), _cfg(32, 32, 4)),
        # 3x3 without padding (HAS_PAD 0): 4 x 8, 64 x 36; EVEN_P 1, EVEN_K 1: no mask at all;
        # grid (4, 9), one 4-column step a CTA, 2 warps
        "s1_nopad_even_fp16": (_pt(2, 4, 6, 10, 3, 3, 1, 0, 1, "fp16"), _cfg(16, 4, 1, 2)),
        # dilation 2, pad 2 (a 5x5 footprint): 9 x 9, 81 x 45; one 128-pixel tile past N L (EVEN_P 0),
        # one chunk of 64 x 4 past K: its loop runs 12 steps, the last 1 of 4 columns (EVEN_K 0); 8 warps
        "dilated2_fp32": (_pt(1, 5, 9, 9, 3, 3, 1, 2, 2, "fp32"), _cfg(128, 4, 64, 8)),
        # the stride-2 downsample: 4 x 4 planes, 48 x 72; EVEN_P 1 (a tile an image), EVEN_K 1;
        # chunks of 4 x 8: grid (3, 3), the last chunk one step
        "s2_down_even_fp16": (_pt(3, 8, 8, 8, 3, 3, 2, 1, 1, "fp16"), _cfg(16, 8, 4)),
        # a 2x5 window, stride (1, 3), pad (0, 2), dilation (2, 1): 5 x 4, 40 x 20; EVEN_P 0 (a tile
        # straddling the images), EVEN_K 1; chunks of 4 x 4: grid (2, 2); 1 warp, num_stages 2
        "asym_window_bf16": (_pt(2, 2, 7, 12, 2, 5, (1, 3), (0, 2), (2, 1), "bf16"), _cfg(32, 4, 4, 1, 2)),
        # a 1x1 stride-2 projection on channels_last x (channel stride 1, read in place): 4 x 4,
        # 32 x 24; HAS_PAD 0, EVEN_P 1, EVEN_K 0 (24 = 16 + 8); one chunk of 16 x 16: grid (2, 1)
        "pointwise_s2_channels_last_fp32": (_pt(2, 24, 7, 7, 1, 1, 2, 0, 1, "fp32"), _cfg(16, 16, 16)),
        # x the channels 1:4 of a 5-channel tensor with rows 13 wide (read in place), col written into
        # the first 27 columns of a [144, 32] buffer (row pitch 32, the last 5 columns untouched):
        # 8 x 9, 144 x 27; EVEN_P 0 (144 = 2 x 64 + 16), EVEN_K 0; grid (3, 2), 8 warps
        "sliced_x_pitched_out_fp16": (_pt(2, 3, 8, 9, 3, 3, 1, 1, 1, "fp16"), _cfg(64, 16, 1, 8)),
        # a 5x5 pad 2 on a transposed view of x (column stride H: read in place): 10 x 6, 60 x 50;
        # EVEN_P 0, EVEN_K 0; grid (2, 2)
        "transposed_x_5x5_bf16": (_pt(1, 2, 10, 6, 5, 5, 1, 2, 1, "bf16"), _cfg(32, 32, 1, 4, 2)),
    },
}
CHANNELS_LAST, SLICED = "pointwise_s2_channels_last_fp32", "sliced_x_pitched_out_fp16"
TRANSPOSED = "transposed_x_5x5_bf16"
PITCH, SENTINEL = 32, -7.0

# configs compiled at the module's first POINT (sm_90: BASELINE first)
COMPILE_CFGS = [_cfg(64, 32, 4), _cfg(64, 32, 64, 4), _cfg(16, 8, 1, 8), _cfg(32, 16, 16, 4)]
SM120_CFGS = [_cfg(64, 32, 4), _cfg(64, 32, 1, 4)]


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """CHANNELS_LAST: x in channels_last memory; SLICED: x the channels 1:1+C of a 5-channel tensor
    whose rows are 13 wide, and a [N L, 32] output buffer filled with SENTINEL whose first K
    columns are col; TRANSPOSED: x the transpose of a contiguous [N, C, W, H] tensor."""
    import torch

    x = inputs["x"]
    Nb, C, Hh, Ww = x.shape
    if name == CHANNELS_LAST:
        inputs["x"] = x.contiguous(memory_format=torch.channels_last)
    if name == SLICED:
        wide = torch.full((Nb, C + 2, Hh, 13), 9.0, dtype=x.dtype)
        wide[:, 1:1 + C, :, :Ww] = x
        inputs["x"] = wide[:, 1:1 + C, :, :Ww]
        NL, K = Nb * Hh * Ww, C * 9
        inputs["out"] = torch.full((NL, PITCH), SENTINEL, dtype=x.dtype)[:, :K]
    if name == TRANSPOSED:
        inputs["x"] = x.transpose(2, 3).contiguous().transpose(2, 3)


# ----------------------------------------------------------------- the pytest side
def _results() -> dict:
    return H.interpreter_results(HERE, KERNEL)


def _geometry(p):
    def pair(v):
        return tuple(v) if isinstance(v, (tuple, list)) else (v, v)
    (sh, sw), (ph, pw), (dh, dw) = pair(p["stride"]), pair(p["pad"]), pair(p["dilation"])
    OH = (p["H"] + 2 * ph - dh * (p["KH"] - 1) - 1) // sh + 1
    OW = (p["W"] + 2 * pw - dw * (p["KW"] - 1) - 1) // sw + 1
    return OH, OW, (sh, sw), (ph, pw), (dh, dw)


def _sizes(p):
    OH, OW = _geometry(p)[:2]
    return p["N"] * OH * OW, p["C"] * p["KH"] * p["KW"]


def _flags(p, c):
    """(HAS_PAD, EVEN_P, EVEN_K, K chunks, steps in the last chunk) of a case."""
    NL, K = _sizes(p)
    ph, pw = _geometry(p)[3]
    chunk = c["BLOCK_K"] * c["K_STEPS"]
    last = K - (-(-K // chunk) - 1) * chunk
    return (int(ph > 0 or pw > 0), int(NL % c["BLOCK_P"] == 0), int(K % c["BLOCK_K"] == 0), -(-K // chunk),
            -(-last // c["BLOCK_K"]))


def _straddles(p, c) -> bool:
    """Whether one of the case's full pixel tiles holds pixels of two images."""
    NL, _ = _sizes(p)
    L = NL // p["N"]
    bp = c["BLOCK_P"]
    return any(t // L != (min(t + bp, NL) - 1) // L for t in range(0, NL, bp))


@pytest.mark.parametrize("name", list(CASES[KERNEL]))
def test_example_matches_reference(name):
    res = _results()[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    p = CASES[KERNEL][name][0]
    NL, K = _sizes(p)
    assert res["shape"] == [NL, K] and res["dtype"] == p["dtype"], res
    assert res["n_bad"] == 0, H.mismatch(res, f"{name} launch")
    assert res["n_differ_ref"] == 0, res                   # a copy: bit for bit
    assert res["n_zero_ref"] > 0 or not _flags(p, CASES[KERNEL][name][1])[0], res   # padded taps exist
    assert res["n_differ_baseline"] == 0, res
    assert res["baseline"]["n_bad"] == 0, H.mismatch(res["baseline"], f"{name} torch_baseline")
    if name == SLICED:
        assert res["x_strides"] == [5 * 8 * 13, 8 * 13, 13, 1], res
        assert res["out_strides"] == [PITCH, 1] and res["pad_columns_untouched"] is True, res
    else:
        assert res["out_strides"] == [K, 1], res
    if name == CHANNELS_LAST:
        assert res["x_strides"][1] == 1, res
    if name == TRANSPOSED:
        assert res["x_strides"][3] == p["H"], res


def test_cases_cover_every_code_path():
    """Every tunable at >= 2 values bracketing the sweep; every dtype; HAS_PAD 0 and 1; the four
    EVEN_P x EVEN_K store variants; one K chunk and several; a ragged last chunk (fewer steps) and a
    chunk wider than K; a pixel tile wider than N L and tiles straddling images; stride, padding
    and dilation each at 1 and more, asymmetric too; KH != KW."""
    H.assert_tunables_covered(CASES)
    mod = load_example(KERNEL)
    cases = list(CASES[KERNEL].values())
    assert {p["dtype"] for p, _ in cases} == set(mod.DTYPES)
    fl = [(p, c, _flags(p, c)) for p, c in cases]
    assert {f[0] for _, _, f in fl} == {0, 1}
    assert {(f[1], f[2]) for _, _, f in fl} == {(0, 0), (0, 1), (1, 0), (1, 1)}
    assert {f[3] == 1 for _, _, f in fl} == {True, False}
    assert any(f[3] > 1 and f[4] < c["K_STEPS"] for _, c, f in fl)            # a ragged last chunk
    assert any(c["BLOCK_K"] * c["K_STEPS"] > _sizes(p)[1] for p, c, _ in fl)    # a chunk past K
    assert any(c["BLOCK_P"] > _sizes(p)[0] for p, c, _ in fl)
    assert any(_straddles(p, c) for p, c in cases)
    for i, lo in ((2, 1), (3, 0), (4, 1)):                      # stride, padding, dilation
        vals = {v for p, _ in cases for v in _geometry(p)[i]}
        assert lo in vals and max(vals) >= 2, (i, vals)
        assert any(len(set(_geometry(p)[i])) == 2 for p, _ in cases), i
    assert any(p["KH"] != p["KW"] for p, _ in cases) and {1, 7} <= {p["KH"] for p, _ in cases}
    for k in ("BLOCK_P", "BLOCK_K", "K_STEPS", "num_warps"):
        tested = {c[k] for _, c in cases}
        assert min(tested) <= min(SWEEP_AXES[k]) and max(tested) >= max(SWEEP_AXES[k]), (k, tested)
    assert {c["num_stages"] for _, c in cases} == {1, 2}


def test_launcher_hooks_agree_with_shapes():
    """At every point and sweep config: example_args on meta with the launch's shapes, dtypes and
    strides, the geometry, the derived HAS_PAD / EVEN_P / EVEN_K, the grid and the K steps;
    bytes_moved / flops; inputs < 4 GB; 100 MB - 2 GB of traffic (roughly 20 us - 1 ms)."""
    import torch

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "example_args", "torch_baseline", "im2col"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert not hasattr(mod, "secondary_kernels") and not hasattr(mod, "cta_iterations")
    assert len(mod.POINTS) == 3 and mod.BASELINE["num_stages"] == 1 and mod.ROLE == ROLE
    assert mod.SWEEP_AXES == SWEEP_AXES
    dts = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}
    size = {"fp16": 2, "bf16": 2, "fp32": 4}
    cfgs = [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]
    for p in mod.POINTS:
        Nb, C, Hh, Ww = p["N"], p["C"], p["H"], p["W"]
        OH, OW, (sh, sw), (ph, pw), (dh, dw) = _geometry(p)
        NL, K = _sizes(p)
        for cfg in cfgs:
            a = mod.example_args(cfg, p)
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for v in a.values())
            assert a["X"].shape == (Nb, C, Hh, Ww) and a["X"].dtype == dts[p["dtype"]] and a["X"].is_contiguous()
            assert a["OUT"].shape == (NL, K) and a["OUT"].dtype == dts[p["dtype"]] and a["OUT"].is_contiguous()
            assert (a["NL"], a["L"], a["OW"], a["K"], a["H"], a["W"]) == (NL, OH * OW, OW, K, Hh, Ww)
            assert (a["stride_xn"], a["stride_xc"], a["stride_xh"], a["stride_xw"], a["stride_om"]) == (
                C * Hh * Ww, Hh * Ww, Ww, 1, K)
            assert (a["stride_h"], a["stride_w"], a["pad_h"], a["pad_w"], a["dil_h"], a["dil_w"]) == (sh, sw, ph, pw,
                                                                                                      dh, dw)
            assert (a["KH"], a["KW"], a["HAS_PAD"]) == (p["KH"], p["KW"], int(ph > 0 or pw > 0))
            assert (a["EVEN_P"], a["EVEN_K"]) == (int(NL % cfg["BLOCK_P"] == 0), int(K % cfg["BLOCK_K"] == 0))
            assert (a["BLOCK_P"], a["BLOCK_K"], a["K_STEPS"]) == (cfg["BLOCK_P"], cfg["BLOCK_K"], cfg["K_STEPS"])
            assert mod.grid(cfg, p) == (-(-NL // cfg["BLOCK_P"]), -(-K // (cfg["BLOCK_K"] * cfg["K_STEPS"])))
            assert mod.loop_iterations(cfg, p) == min(cfg["K_STEPS"], -(-K // cfg["BLOCK_K"]))
        e = size[p["dtype"]]
        assert mod.bytes_moved(p) == (NL * K + Nb * C * Hh * Ww) * e
        assert mod.flops(p) == 0
        assert e * (Nb * C * Hh * Ww + NL * K) < 4 * 2**30
        assert 100e6 <= mod.bytes_moved(p) <= 2e9
    # the points differ: window, stride, dilation, C, K's alignment, plane size, dtype
    assert {(p["KH"], p["stride"], p["dilation"]) for p in mod.POINTS} == {(7, 2, 1), (3, 2, 1), (3, 1, 4)}
    assert {p["dtype"] for p in mod.POINTS} == set(mod.DTYPES)
    assert sorted(_sizes(p)[1] for p in mod.POINTS) == [147, 2304, 4608]
    assert any(_sizes(p)[1] % 16 for p in mod.POINTS) and any(_sizes(p)[1] % 16 == 0 for p in mod.POINTS)
    # a BLOCK_K dividing K and not, a BLOCK_P dividing N L and not, somewhere in the sweep
    flags = {(mod.example_args(c, p)["EVEN_P"], mod.example_args(c, p)["EVEN_K"]) for p in mod.POINTS for c in cfgs}
    assert {f[0] for f in flags} == {0, 1} and {f[1] for f in flags} == {0, 1}


def test_hooks_on_small_points_and_inputs():
    """make_inputs: shape, dtype, the seed; reference equals F.unfold transposed and a hand-checked
    element (inside the image and on the padding); torch_baseline's dtype and layout."""
    import torch

    mod = load_example(KERNEL)
    p = _pt(2, 3, 6, 7, 3, 2, (2, 1), (1, 0), (1, 2), "bf16")
    inp = mod.make_inputs(p, seed=1, device="cpu")
    x = inp["x"]
    assert x.shape == (2, 3, 6, 7) and x.dtype == torch.bfloat16 and x.is_contiguous()
    assert inp["kernel_size"] == (3, 2) and inp["stride"] == (2, 1) and inp["padding"] == (1, 0)
    assert inp["dilation"] == (1, 2)
    assert torch.equal(mod.make_inputs(p, seed=1, device="cpu")["x"], x)
    assert not torch.equal(mod.make_inputs(p, seed=2, device="cpu")["x"], x)
    assert float(x.float().std()) > 0.5
    ref = mod.reference(inp)
    OH, OW = (6 + 2 - 2 - 1) // 2 + 1, (7 - 2 - 1) // 1 + 1                   # 3, 5
    assert ref.shape == (2 * OH * OW, 3 * 3 * 2) and ref.dtype == torch.float32 and ref.is_contiguous()
    unf = torch.nn.functional.unfold(x.float(), (3, 2), dilation=(1, 2), padding=(1, 0), stride=(2, 1))
    assert torch.equal(ref.view(2, OH * OW, 18), unf.transpose(1, 2))
    # image 1, output (oh 2, ow 3), channel 2, tap (kh 1, kw 1): x[1, 2, 2*2 - 1 + 1, 3 + 1*2]
    row, col = 1 * OH * OW + 2 * OW + 3, (2 * 3 + 1) * 2 + 1
    assert float(ref[row, col]) == float(x[1, 2, 4, 5])
    # output (oh 0, ow 0), kernel row 0: input row -1, the padding
    assert float(ref[0, 0]) == 0.0 and float(ref[0, 1]) == 0.0 and float(ref[0, 2]) == float(x[0, 0, 0, 0])
    base = mod.torch_baseline(inp)
    assert base.dtype == torch.bfloat16 and base.shape == ref.shape and base.is_contiguous()
    assert torch.equal(base.float(), ref)
    assert mod.bytes_moved(_pt(1, 3, 224, 224, 7, 7, 2, 3, 1, "bf16")) == (112 * 112 * 147 + 3 * 224 * 224) * 2


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    x = torch.ones(1, 3, 8, 8)
    with pytest.raises(ValueError, match="BLOCK_P=3"):
        mod.im2col(x, 3, BLOCK_P=3)
    with pytest.raises(ValueError, match="BLOCK_K=1"):
        mod.im2col(x, 3, BLOCK_K=1)
    with pytest.raises(ValueError, match="num_warps=6"):
        mod.im2col(x, 3, num_warps=6)
    with pytest.raises(ValueError, match="K_STEPS=0"):
        mod.im2col(x, 3, K_STEPS=0)
    with pytest.raises(ValueError, match="does not fit"):
        mod.im2col(x, 9)
    with pytest.raises(ValueError, match="does not fit"):
        mod.im2col(x, 3, dilation=4)
    with pytest.raises(ValueError, match="stride=0"):
        mod.im2col(x, 3, stride=0)
    with pytest.raises(ValueError, match="padding=-1"):
        mod.im2col(x, 3, padding=-1)
    with pytest.raises(ValueError, match=r"dilation=\(1, 2, 3\)"):
        mod.im2col(x, 3, dilation=(1, 2, 3))
    with pytest.raises(ValueError, match="kernel_size=2.5"):
        mod.im2col(x, 2.5)
    with pytest.raises(ValueError, match="expected x"):
        mod.im2col(torch.ones(3, 8, 8), 3)
    with pytest.raises(ValueError, match="fp16 / bf16 / fp32"):
        mod.im2col(x.double(), 3)
    with pytest.raises(ValueError, match=r"out must be \[36, 27\]"):
        mod.im2col(x, 3, out=torch.empty(36, 28))
    with pytest.raises(ValueError, match="out must be torch.float32"):
        mod.im2col(x, 3, out=torch.empty(36, 27, dtype=torch.float16))
    with pytest.raises(ValueError, match="unit column stride"):
        mod.im2col(x, 3, out=torch.empty(27, 36).t())
    with pytest.raises(ValueError, match="dtype 'fp8'"):
        mod.make_inputs(_pt(1, 1, 4, 4, 2, 2, dtype="fp8"), device="cpu")
    with pytest.raises(ValueError, match="C=0"):
        mod.grid(mod.BASELINE, _pt(1, 0, 4, 4, 2, 2))
    with pytest.raises(ValueError, match="does not fit"):
        mod.bytes_moved(_pt(1, 3, 4, 40, 5, 5))


def test_sweep_fits_the_points():
    """The study sweep: 72 configs (BLOCK_P 16-64 pixels x BLOCK_K 8-32 columns x K_STEPS 1 / 4 /
    16 / 64 x 4 / 8 warps, num_stages 1: tiles of 128-2048 elements, 0.5-16 a thread) with BASELINE
    among them; at every point each config is valid and launches >= 4 waves of CTAs on an H200 (1568
    CTAs at the fewest). (Every config was compiled for sm_90 at every point with triton 3.6.0, and
    for sm_90 and sm_120 at the first point with 3.6.0 and 3.9: all compile, none spills; 18-110
    registers under 3.6 (16-148 under 3.9), the most at 64 x 32 on 4 warps at the stem point, whose
    unaligned K = 147 gets no 16-byte store vectors; shared memory 0-8 KiB under 3.6, the tile's
    layout conversion between the gather and the store, none under 3.9. A step of 32 elements a
    thread, 128 x 32 on 4 warps, took 255 registers and spilled on sm_120 under 3.9: the sweep stops
    at 16. num_stages: no dot, the K loop's loads are not pipelined, hence the one value.)"""
    mod = load_example(KERNEL)
    axes = SWEEP_AXES
    assert set(axes) == set(mod.TUNABLES) and mod.SWEEP_AXES == axes
    assert all(len(v) >= 2 for k, v in axes.items() if k != "num_stages") and axes["num_stages"] == [1]
    cfgs = [dict(zip(axes, v)) for v in itertools.product(*axes.values())]
    assert 45 <= len(cfgs) <= 72 and mod.BASELINE in cfgs
    for p in mod.POINTS:
        for c in cfgs:
            mod._check_cfg(c)
            gx, gy = mod.grid(c, p)
            assert gx * gy >= 4 * H200_SMS and gy <= 65535, (p, c)
            assert c["BLOCK_P"] * c["BLOCK_K"] <= 32 * 16 * c["num_warps"]     # <= 16 elements a thread


def test_sweep_matches_the_study():
    """scripts/rank_study.py's SWEEPS entry: the same axes, every config valid at the points."""
    configs, points, axes = H.study_sweeps([KERNEL], ROLE)[KERNEL]
    assert axes == SWEEP_AXES
    assert len(configs) == len(list(itertools.product(*SWEEP_AXES.values())))
    assert points == load_example(KERNEL).POINTS


def test_examples_import_without_torch():
    proc = H.imports_without_torch(CASES)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr[-2000:]


def _tile_bytes(cfg, point) -> int:
    return cfg["BLOCK_P"] * cfg["BLOCK_K"] * (4 if point["dtype"] == "fp32" else 2)


@pytest.mark.slow
def test_example_compiles_sm90(shared_cache):
    """On sm_90: BASELINE and three more at the first point (the bf16 stem, K = 147 unaligned: the
    most registers), the widest tile on 4 warps with the longest chunk among them, compile without
    spills; and BASELINE and
    the widest tile at the other two (fp16 stride 2, fp32 dilated: 16-byte stores). Shared memory: at
    most one tile -- triton 3.6 gives the gather a pixel-major layout and passes the tile through
    shared memory to the store's K-major one (a convert_layout); triton 3.9 loads in the store's
    layout (none)."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    assert COMPILE_CFGS[0] == mod.BASELINE
    p0 = mod.POINTS[0]
    for cfg, res in H.compile_results(KERNEL, COMPILE_CFGS, "sm_90"):
        assert res.status == "ok", f"{cfg} on sm_90: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.n_spills == 0 and res.shared <= _tile_bytes(cfg, p0), (
            cfg, res.n_regs, res.n_spills, res.shared)
    for p in mod.POINTS[1:]:
        for cfg in (COMPILE_CFGS[0], COMPILE_CFGS[1]):
            res = compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch="sm_90",
                                 num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
            assert res.status == "ok" and res.n_spills == 0, res.message
            assert res.n_regs > 0 and res.shared <= _tile_bytes(cfg, p), (cfg, res.n_regs, res.shared)


@pytest.mark.slow
def test_example_compiles_sm120(shared_cache):
    p0 = load_example(KERNEL).POINTS[0]
    for cfg, res in H.compile_results(KERNEL, SM120_CFGS, "sm_120"):
        assert res.status == "ok", f"{cfg} on sm_120: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.n_spills == 0
        assert res.shared <= min(_tile_bytes(cfg, p0), SM120_SMEM_PER_BLOCK), (cfg, res.shared)


# ----------------------------------------------------------------- the subprocess side
def _run() -> None:
    """Every case through launch against reference (as the GPU study's gate, and bit for bit) and
    bit for bit against torch_baseline; the output's dtype and strides, x's strides, the pitched
    buffer's pad columns; one JSON line."""
    import torch

    H.patch_interpreter_bf16_rounding()
    H.patch_interpreter_index()
    mod = load_example(KERNEL)
    names = {torch.float16: "fp16", torch.bfloat16: "bf16", torch.float32: "fp32"}

    def extra(name, point, inputs, out, ref):
        base = mod.torch_baseline(inputs)
        same = base.dtype == out.dtype and base.shape == out.shape and bool(torch.equal(base, out))
        res = {"dtype": names.get(out.dtype), "out_strides": list(out.stride()),
               "x_strides": list(inputs["x"].stride()),
               "n_differ_ref": int((out.float() != ref).sum()), "n_zero_ref": int((ref == 0).sum()),
               "baseline": H.compare(base, ref, point["dtype"]),
               "n_differ_baseline": 0 if same else int((base.float() != out.float()).sum()) or -1}
        if name == SLICED:
            full = out.as_strided((out.shape[0], PITCH), (PITCH, 1))
            res["pad_columns_untouched"] = bool((full[:, out.shape[1]:] == SENTINEL).all())
        return res

    H.run_cases(KERNEL, CASES[KERNEL], prepare=_prepare, extra=extra)


if __name__ == "__main__":
    _run()
