"""examples/conv_transpose2d_nhwc.py (2-D transposed convolution as S x S sub-pixel implicit GEMMs on NHWC
activations: x [N, Cin, H, W] channels_last fp16 / bf16, the ConvTranspose2d weight [Cin, Cout, KH, KW]
stored with unit Cout stride, optional bias, one stride S, per-axis padding and output_padding; each
program one (BLOCK_M, BLOCK_N) tile of one output phase's GEMM over that phase's taps only, fp32
accumulation through tl.dot, out [N, Cout, OH, OW] written through per-axis strides) against its torch
reference on the CPU through Triton's interpreter, its launcher hooks against the shapes, its study sweep
against the points, and a compile for sm_90 and sm_120 from its own ``example_args``.

As in test_examples_round30_d.py the interpreter cases run in a subprocess (this file run as a script:
``python tests/test_examples_round33_b.py conv_transpose2d_nhwc``) that prints one JSON line. The
subprocess installs the harness's interpreter fixes (bf16 dot operands widened to fp32; bf16 rounding;
under triton 3.6 with numpy >= 2.3 the runtime loop bounds read as ints).

Shapes are small, odd and ragged: filters 4x4 s2 p1 (every phase 2 x 2 taps), 2x2 s2 p0 (one tap), 3x3 s2
p1 with and without output_padding (phases of 4 / 2 / 2 / 1 taps; an odd OH whose last phase rows are
masked), 1x1 s2 with output_padding (phases with no tap at all: bias only), 3x3 s1 p1 (one phase), 5x5 s3
(nine phases, S not dividing 5), a 4x2 filter with pad (1, 2) and output_padding (0, 1); EVEN_C both ways
(C 8-64 against BLOCK_K 16-64); rows past M and an even M; output channels past Cout and an even Cout;
batches whose samples a row tile straddles; with and without bias; fp16 and bf16. Strided: x and the
weight channel slices of NaN-padded wider buffers and out written into the channel slice of a NaN-filled
U-Net concatenation buffer (a stray read or write shows); x NCHW and the weight in torch's default
layout (copied by the launcher). BLOCK_M 16-128, BLOCK_N 16-128, BLOCK_K 16-64, 4 / 8 warps, num_stages
2-4.

Per case: launch's output within the dtype's tolerance of the fp64 reference (the harness's per-element
check) and each element within half an ulp of its own value plus n 2^-23 of the magnitude sum |x| |w| (+
|bias|) (n = Cin KH KW terms: fp32 accumulation, one rounding); the output in x's dtype, channels_last (or
the given slice, its other channels untouched); the inputs unchanged; the bias changing the result where
present; torch_baseline (F.conv_transpose2d in the inputs' dtype) within tolerance.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
KERNEL = "conv_transpose2d_nhwc"
ROLE = "held-out-33"
H100_SMS = 132
SM90_SMEM_PER_BLOCK = 227 * 1024
SM120_SMEM_PER_BLOCK = 99 * 1024

# the study's sweep (scripts/rank_study.py SWEEPS["conv_transpose2d_nhwc"] once the lead adds it)
SWEEP_AXES = {"BLOCK_M": [64, 128], "BLOCK_N": [64, 128], "BLOCK_K": [32, 64], "num_warps": [4, 8],
              "num_stages": [2, 3, 4]}


def _cfg(bm, bn, bk, w=4, st=3):
    return {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "num_warps": w, "num_stages": st}


def _pt(N, C, Hh, W, K, k=(4, 4), stride=2, pad=1, out_pad=0, bias=1, dtype="fp16"):
    return {"N": N, "C": C, "H": Hh, "W": W, "K": K, "KH": k[0], "KW": k[1], "stride": stride, "pad": pad,
            "out_pad": out_pad, "bias": bias, "dtype": dtype}


def _cfgs():
    return [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]


# case -> (point, cfg); comments: filter / stride, EVEN_C, M (rows a phase) vs BLOCK_M, Cout vs BLOCK_N
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        # DCGAN / pix2pix k4 s2 p1: 2 x 2 taps every phase; C 32 = BLOCK_K (EVEN_C); M 30 < 64; K 24 < 64
        "k4s2p1_bf16": (_pt(1, 32, 5, 6, 24, dtype="bf16"), _cfg(64, 64, 32, 4, 3)),
        # U-Net k2 s2 p0: one tap; C 24 at BLOCK_K 16 (EVEN_C 0: a ragged second block); N 2, M 42; K 20
        "k2s2_ragged_c_fp16": (_pt(2, 24, 3, 7, 20, k=(2, 2), pad=0), _cfg(32, 16, 16, 8, 2)),
        # ERFNet k3 s2 p1 op1: phases of 4 / 2 / 2 / 1 taps; C 16 (EVEN_C); M 20; K 16 = BLOCK_N
        "k3s2p1_outpad_fp16": (_pt(1, 16, 4, 5, 16, k=(3, 3), out_pad=1), _cfg(16, 16, 16, 4, 4)),
        # k3 s2 p1 without output_padding: OH 5, OW 7 odd (the phases' last rows / columns masked); C 40
        # at BLOCK_K 32 (EVEN_C 0); no bias; N 2, M 24 < 128; K 32 = BLOCK_N
        "k3s2p1_odd_out_bf16": (_pt(2, 40, 3, 4, 32, k=(3, 3), bias=0, dtype="bf16"), _cfg(128, 32, 32, 4, 2)),
        # 1x1 s2 op1: the odd phases have no tap (zero loop steps: bias only); C 16; M 12; K 8
        "k1s2_tapless_phases_fp16": (_pt(1, 16, 3, 4, 8, k=(1, 1), pad=0, out_pad=1), _cfg(16, 64, 16, 4, 2)),
        # S 1 (one phase, a flipped 3x3 conv); C 16; M 20; K 12
        "k3s1p1_fp16": (_pt(1, 16, 4, 5, 12, k=(3, 3), stride=1), _cfg(32, 32, 16, 8, 3)),
        # S 3, 5x5, pad 1, op 2: nine phases of 1-4 taps; C 8 < BLOCK_K 16 (EVEN_C 0); M 30; K 16
        "k5s3_outpad2_bf16": (_pt(1, 8, 3, 4, 16, k=(5, 5), stride=3, pad=1, out_pad=2, dtype="bf16"),
                              _cfg(16, 16, 16, 4, 2)),
        # a 4x2 filter, pad (1, 2), output_padding (0, 1); C 64 = BLOCK_K; K 128 = BLOCK_N; M 24
        "k42_pad_pair_bf16": (_pt(1, 64, 4, 5, 128, k=(4, 2), pad=(1, 2), out_pad=(0, 1), dtype="bf16"),
                              _cfg(64, 128, 64, 4, 2)),
        # N 3 of 6 rows a phase each: a 128-row tile straddles the samples; C 32 (EVEN_C); K 64 = BLOCK_N
        "batch3_straddle_bf16": (_pt(3, 32, 2, 3, 64, dtype="bf16"), _cfg(128, 64, 32, 8, 4)),
        # k2 s2, even M (2 x 16 = 32 = BLOCK_M) and Cout 64 = BLOCK_N; no bias; C 64 = BLOCK_K
        "even_m_fp16": (_pt(2, 64, 4, 4, 64, k=(2, 2), pad=0, bias=0), _cfg(32, 64, 64, 8, 2)),
        # x and the weight channel slices of NaN-padded buffers, out written into channels 2 .. 14 of a
        # NaN-filled [N, 12 + 5, OH, OW] concatenation buffer; C 16 at BLOCK_K 32 (EVEN_C 0); K 12
        "strided_nan_concat_fp16": (_pt(1, 16, 3, 5, 12), _cfg(64, 64, 32, 4, 2)),
        # x NCHW and the weight in torch's default [Cin, Cout, KH, KW] layout (both copied); BASELINE
        "nchw_copied_bf16": (_pt(2, 16, 3, 3, 16, k=(2, 2), pad=0, dtype="bf16"), _cfg(128, 128, 64, 4, 3)),
    },
}
STRIDED, NCHW = "strided_nan_concat_fp16", "nchw_copied_bf16"
PAD_X, PAD_W, PAD_O, O_COL0 = 8, 8, 5, 2

# configs compiled on sm_90 at each point: BASELINE, the largest tile on 8 warps with 4 stages (128 KiB of
# shared memory), 128 x 128 x 32 on 4 warps with 4 stages; the smallest tile
COMPILE_CFGS = [_cfg(128, 128, 64, 4, 3), _cfg(128, 128, 64, 8, 4), _cfg(128, 128, 32, 4, 4), _cfg(64, 64, 32, 4, 2)]
SM120_CFGS = [_cfg(128, 128, 64, 4, 3), _cfg(128, 128, 32, 8, 2), _cfg(64, 64, 64, 4, 4)]


def _flags(p, c):
    """(S divides the filter, EVEN_C, HAS_BIAS, EVEN_M, EVEN_K, a tapless phase) of a case."""
    mod = load_example(KERNEL)
    P = mod._check_point(p)
    S = P["stride"]
    return (int(p["KH"] % S == 0 and p["KW"] % S == 0), int(p["C"] % c["BLOCK_K"] == 0), p["bias"],
            int(P["M"] % c["BLOCK_M"] == 0), int(p["K"] % c["BLOCK_N"] == 0), int(0 in mod._phase_steps(P, c)))


def _smem_bound(cfg) -> int:
    """The pipeline's shared memory: num_stages buffers of the [BLOCK_M, BLOCK_K] A and [BLOCK_K, BLOCK_N]
    B tiles, 2 bytes an element."""
    return cfg["num_stages"] * (cfg["BLOCK_M"] + cfg["BLOCK_N"]) * cfg["BLOCK_K"] * 2


def _nan_slice(t, pad: int, col0: int = 0):
    """t [A, B, h, w] (channels_last: dim 1 unit stride) copied into dim-1 entries col0 .. col0 + B of a
    NaN-filled channels_last buffer with `pad` more of them; that slice."""
    import torch

    shape = (t.shape[0], t.shape[1] + pad) + tuple(t.shape[2:])
    buf = torch.full(shape, float("nan"), dtype=t.dtype).contiguous(memory_format=torch.channels_last)
    buf[:, col0:col0 + t.shape[1]] = t
    return buf[:, col0:col0 + t.shape[1]]


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """STRIDED: x and the weight NaN-padded channel slices, out a slice of a NaN buffer; NCHW: x and the
    weight contiguous (torch's default layouts). Then copies."""
    import torch

    mod = load_example(KERNEL)
    if name == STRIDED:
        inputs["x"] = _nan_slice(inputs["x"], PAD_X, 3)
        inputs["weight"] = _nan_slice(inputs["weight"], PAD_W, 1)
        P = mod._check_point(point)
        shape = (point["N"], point["K"] + PAD_O, P["OH"], P["OW"])
        buf = torch.full(shape, float("nan"), dtype=inputs["x"].dtype).contiguous(memory_format=torch.channels_last)
        inputs["out_buf"] = buf
        inputs["out"] = buf[:, O_COL0:O_COL0 + point["K"]]
    if name == NCHW:
        inputs["x"] = inputs["x"].contiguous()
        inputs["weight"] = inputs["weight"].contiguous()
    for k in ("x", "weight", "bias"):
        inputs[k + "0"] = None if inputs.get(k) is None else inputs[k].clone()


# ----------------------------------------------------------------- the pytest side
def _results() -> dict:
    return H.interpreter_results(HERE, KERNEL)


@pytest.mark.parametrize("name", list(CASES[KERNEL]))
def test_example_matches_reference(name):
    res = _results()[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    p = CASES[KERNEL][name][0]
    P = load_example(KERNEL)._check_point(p)
    OH, OW, K = P["OH"], P["OW"], p["K"]
    assert res["n_bad"] == 0, H.mismatch(res, f"{name} launch")
    assert res["shape"] == [p["N"], K, OH, OW] and res["dtype"] == p["dtype"], res
    assert res["n_loose"] == 0, res            # half an ulp + n 2^-23 of sum |x| |w| (+ |bias|)
    assert res["inputs_unchanged"] is True and res["nonzero"] is True, res
    assert res["baseline"]["n_bad"] == 0, H.mismatch(res["baseline"], f"{name} torch_baseline")
    if p["bias"]:
        assert res["bias_matters"] is True, res
    if name == STRIDED:
        pitch = K + PAD_O
        assert res["out_strides"] == [OH * OW * pitch, 1, OW * pitch, pitch], res
        assert res["wrote_in_place"] is True and res["pad_channels_nan"] is True, res
        cx = p["C"] + PAD_X
        assert res["x_strides"] == [p["H"] * p["W"] * cx, 1, p["W"] * cx, cx], res
    else:
        assert res["out_strides"] == [OH * OW * K, 1, OW * K, K], res
    if name == NCHW:
        assert res["x_strides"] == [p["C"] * p["H"] * p["W"], p["H"] * p["W"], p["W"], 1], res


def test_cases_cover_every_code_path():
    """S dividing the filter or not, a phase without taps; EVEN_C both ways, with S dividing the filter and
    not; bias or not; ragged and even M and Cout; both dtypes; strides 1 / 2 / 3, output_padding, an odd
    output; every sweep value of every tunable and smaller blocks."""
    H.assert_tunables_covered(CASES)
    mod = load_example(KERNEL)
    cases = list(CASES[KERNEL].values())
    assert {p["dtype"] for p, _ in cases} == set(mod.DTYPES)
    fl = [_flags(p, c) for p, c in cases]
    for i in range(6):
        assert {f[i] for f in fl} == {0, 1}, i
    assert {(0, 0), (0, 1), (1, 0), (1, 1)} <= {f[:2] for f in fl}
    assert {p["stride"] for p, _ in cases} == {1, 2, 3}
    assert any(mod._check_point(p)["OH"] % p["stride"] for p, _ in cases)        # a phase's last row masked
    assert any(p["out_pad"] != 0 for p, _ in cases) and any(not isinstance(p["pad"], int) for p, _ in cases)
    # a row tile straddling samples
    assert any(p["N"] > 1 and c["BLOCK_M"] > mod._check_point(p)["M"] // p["N"] for p, c in cases)
    for k, vals in SWEEP_AXES.items():
        assert {c[k] for _, c in cases} >= set(vals), k
    assert {16, 32} <= {c["BLOCK_M"] for _, c in cases} and {16, 32} <= {c["BLOCK_N"] for _, c in cases}
    assert 16 in {c["BLOCK_K"] for _, c in cases}


def test_launcher_hooks_agree_with_shapes():
    """At every point and sweep config: example_args on meta with the launch's shapes, dtypes and strides
    (channels_last x and out, the weight with unit Cout stride), the flags and the geometry; the grid (row
    tiles x phases x column tiles), loop_iterations the longest phase's steps and cta_iterations each
    program's; bytes_moved / flops by formula; 0.09-0.5 GB moved and 38-140 GFLOP a point, 50 us - 20 ms
    at 3 TB/s and 700 TFLOP/s."""
    import torch

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "cta_iterations", "example_args", "torch_baseline", "conv_transpose2d_nhwc"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert not hasattr(mod, "secondary_kernels")
    assert len(mod.POINTS) == 3 and mod.ROLE == ROLE and mod.SWEEP_AXES == SWEEP_AXES
    dts = {"fp16": torch.float16, "bf16": torch.bfloat16}
    for p in mod.POINTS:
        Nb, C, Hh, W, K, KH, KW, S = (p[k] for k in ("N", "C", "H", "W", "K", "KH", "KW", "stride"))
        ph = pw = p["pad"]
        OH, OW = (Hh - 1) * S - 2 * ph + KH + p["out_pad"], (W - 1) * S - 2 * pw + KW + p["out_pad"]
        QH, QW = -(-OH // S), -(-OW // S)
        M = Nb * QH * QW
        taps = [len(range((r + ph) % S, KH, S)) for r in range(S)]
        for cfg in _cfgs():
            a = mod.example_args(cfg, p)
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for v in a.values())
            x = a["X"]
            assert x.shape == (Nb, C, Hh, W) and x.dtype == dts[p["dtype"]]
            assert x.stride() == (Hh * W * C, 1, W * C, C)
            assert a["Wt"].shape == (C, K, KH, KW) and a["Wt"].stride() == (KH * KW * K, 1, KW * K, K)
            assert a["OUT"].shape == (Nb, K, OH, OW) and a["OUT"].dtype == x.dtype
            assert a["OUT"].stride() == (OH * OW * K, 1, OW * K, K)
            assert a["BIAS"].shape == (K,) and a["BIAS"].dtype == x.dtype and a["HAS_BIAS"] == 1
            assert (a["M"], a["C"], a["H"], a["W"], a["K"], a["OH"], a["OW"], a["QH"], a["QW"]) == (
                M, C, Hh, W, K, OH, OW, QH, QW)
            assert (a["pad_h"], a["pad_w"], a["KH"], a["KW"], a["S"]) == (ph, pw, KH, KW, S)
            assert (a["stride_xn"], a["stride_xh"], a["stride_xw"]) == x.stride()[:1] + x.stride()[2:]
            assert (a["stride_wc"], a["stride_wh"], a["stride_ww"]) == (KH * KW * K, KW * K, K)
            assert (a["stride_on"], a["stride_oh"], a["stride_ow"]) == (OH * OW * K, OW * K, K)
            assert a["EVEN_C"] == int(C % cfg["BLOCK_K"] == 0)
            assert (a["BLOCK_M"], a["BLOCK_N"], a["BLOCK_K"]) == (cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["BLOCK_K"])
            tiles_n = -(-K // cfg["BLOCK_N"])
            assert mod.grid(cfg, p) == (-(-M // cfg["BLOCK_M"]) * S * S * tiles_n,)
            ct = -(-C // cfg["BLOCK_K"])
            steps = [ty * tx * ct for ty in taps for tx in taps]
            assert mod.loop_iterations(cfg, p) == max(steps)
            it = mod.cta_iterations(cfg, p)
            assert len(it) == mod.grid(cfg, p)[0]
            assert it[:S * S * tiles_n] == [s for s in steps for _ in range(tiles_n)] and it[-1] == steps[-1]
            assert H.meta_nbytes({id(v): v for v in a.values() if hasattr(v, "element_size")}) < 2**30
        assert mod.bytes_moved(p) == 2 * (Nb * C * Hh * W + C * K * KH * KW + K + Nb * K * OH * OW)
        assert mod.flops(p) == 2 * Nb * C * K * OH * OW * sum(ty * tx for ty in taps for tx in taps) // (S * S)
        assert 0.09e9 <= mod.bytes_moved(p) <= 0.5e9 and 38e9 <= mod.flops(p) <= 140e9, p
        assert 50e-6 <= max(mod.bytes_moved(p) / 3e12, mod.flops(p) / 700e12) <= 20e-3, p
    # the points differ: k4 s2 p1 (4 taps a phase) bf16 512 channels, k2 s2 (1 tap) fp16, k3 s2 op1 (ragged)
    assert [(p["KH"], p["pad"], p["out_pad"]) for p in mod.POINTS] == [(4, 1, 0), (2, 0, 0), (3, 1, 1)]
    assert [p["dtype"] for p in mod.POINTS] == ["bf16", "fp16", "fp16"] and [p["K"] for p in mod.POINTS] == [512, 64, 64]
    assert len(set(mod.cta_iterations(mod.BASELINE, mod.POINTS[2]))) == 3          # ERFNet: 4 / 2 / 1 taps


def test_hooks_on_small_points_and_inputs():
    """make_inputs: shapes, dtypes, strides, the seed; reference by hand (a 1-channel k2 s2 all-ones
    upsampler: nearest-neighbour 2x; a k3 s2 p1 op1 sum by hand); torch_baseline's dtype and layout; grid /
    loop / cta_iterations; bytes / flops by hand."""
    import torch

    mod = load_example(KERNEL)
    cl = torch.channels_last
    p = _pt(2, 8, 3, 4, 6, k=(3, 3), out_pad=1, dtype="bf16")
    inp = mod.make_inputs(p, seed=1, device="cpu")
    x, w = inp["x"], inp["weight"]
    assert x.shape == (2, 8, 3, 4) and x.dtype == torch.bfloat16 and x.is_contiguous(memory_format=cl)
    assert w.shape == (8, 6, 3, 3) and w.dtype == torch.bfloat16 and w.stride()[1] == 1
    assert inp["bias"].shape == (6,) and (inp["stride"], inp["padding"], inp["output_padding"]) == (2, (1, 1), (1, 1))
    assert torch.equal(mod.make_inputs(p, seed=1, device="cpu")["x"], x)
    assert not torch.equal(mod.make_inputs(p, seed=2, device="cpu")["x"], x)
    assert 0.8 < float(x.float().std()) < 1.2 and abs(float(w.float().std()) * (8 * 9 / 4) ** 0.5 - 1) < 0.2
    assert mod.make_inputs(_pt(1, 8, 3, 4, 6, bias=0), device="cpu")["bias"] is None

    def ref(xv, wv, stride=2, pad=0, op=0, b=None):
        return mod.reference({"x": xv, "weight": wv, "bias": b, "stride": stride, "padding": pad,
                              "output_padding": op})

    v = torch.arange(1.0, 7.0).view(1, 1, 2, 3)
    r = ref(v, torch.ones(1, 1, 2, 2))
    assert r.dtype == torch.float32 and r.shape == (1, 1, 4, 6)
    assert torch.equal(r[0, 0], v[0, 0].repeat_interleave(2, 0).repeat_interleave(2, 1))   # k2 s2: nearest 2x
    # k3 s2 p1 op1 on a 1 x 2 row of ones, one channel: 1-D along w, out[ox] = sum of x[ix] w[kx], ox = 2 ix - 1 + kx
    r3 = ref(torch.tensor([[[[1.0, 10.0]]]]), torch.tensor([[[[0.0, 0.0, 0.0], [1.0, 2.0, 3.0], [0.0, 0.0, 0.0]]]]),
             pad=1, op=1)
    assert r3.shape == (1, 1, 2, 4) and r3[0, 0, 0].tolist() == [2, 3 + 10, 20, 30] and r3[0, 0, 1].abs().sum() == 0
    b2 = torch.tensor([0.5, -1.0])
    r2 = ref(torch.ones(1, 3, 1, 1), torch.ones(3, 2, 1, 1), stride=2, op=1, b=b2)
    assert r2.shape == (1, 2, 2, 2) and r2[0, :, 0, 0].tolist() == [3.5, 2.0] and r2[0, :, 1, 1].tolist() == [0.5, -1.0]
    base = mod.torch_baseline(inp)
    assert base.dtype == torch.bfloat16 and base.shape == (2, 6, 6, 8)
    assert torch.allclose(base.float(), mod.reference(inp), atol=0.05)
    cfg = _cfg(16, 16, 16)
    # p: OH 6, OW 8, QH 3, QW 4, M 24; taps (ph 1): phase 0 -> by 1 -> 1 tap, phase 1 -> by 0 -> 2 taps
    assert mod.grid(cfg, p) == (2 * 4 * 1,)
    assert mod.cta_iterations(cfg, p) == [1, 2, 2, 4] * 2 and mod.loop_iterations(cfg, p) == 4
    it = mod.cta_iterations(_cfg(64, 16, 16), _pt(1, 40, 3, 4, 20))          # k4 s2: 4 taps x 3 blocks
    assert it == [12] * (1 * 4 * 2)
    assert mod.bytes_moved(p) == 2 * (2 * 8 * 12 + 8 * 6 * 9 + 6 + 2 * 6 * 48)
    assert mod.flops(p) == 2 * 2 * 8 * 6 * (12 * (1 + 2 + 2 + 4))


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    cl = torch.channels_last
    x = torch.ones(1, 16, 3, 4, dtype=torch.float16).contiguous(memory_format=cl)
    w = torch.ones(16, 8, 4, 4, dtype=torch.float16).contiguous(memory_format=cl)
    with pytest.raises(ValueError, match="BLOCK_M=48"):
        mod.conv_transpose2d_nhwc(x, w, BLOCK_M=48)
    with pytest.raises(ValueError, match="BLOCK_K=8"):
        mod.conv_transpose2d_nhwc(x, w, BLOCK_K=8)
    with pytest.raises(ValueError, match="num_warps=3"):
        mod.conv_transpose2d_nhwc(x, w, num_warps=3)
    with pytest.raises(ValueError, match="num_stages=0"):
        mod.conv_transpose2d_nhwc(x, w, num_stages=0)
    with pytest.raises(ValueError, match=r"expected x \[N, Cin, H, W\]"):
        mod.conv_transpose2d_nhwc(x[0], w)
    with pytest.raises(ValueError, match=r"expected x \[N, Cin, H, W\]"):
        mod.conv_transpose2d_nhwc(x, w[:8])
    with pytest.raises(ValueError, match="fp16 / bf16"):
        mod.conv_transpose2d_nhwc(x.float(), w.float())
    with pytest.raises(ValueError, match="fp16 / bf16"):
        mod.conv_transpose2d_nhwc(x, w.bfloat16())
    with pytest.raises(ValueError, match="bias must be"):
        mod.conv_transpose2d_nhwc(x, w, torch.zeros(7, dtype=torch.float16))
    with pytest.raises(ValueError, match="bias must be"):
        mod.conv_transpose2d_nhwc(x, w, torch.zeros(8))
    with pytest.raises(ValueError, match="stride=0"):
        mod.conv_transpose2d_nhwc(x, w, stride=0)
    with pytest.raises(ValueError, match=r"stride=\(2, 2\)"):
        mod.conv_transpose2d_nhwc(x, w, stride=(2, 2))
    with pytest.raises(ValueError, match="padding=.*pair"):
        mod.conv_transpose2d_nhwc(x, w, padding=(1, 1, 1))
    with pytest.raises(ValueError, match="padding=.*>= 0"):
        mod.conv_transpose2d_nhwc(x, w, padding=-1)
    with pytest.raises(ValueError, match=r"output_padding=\(2, 2\).*< stride 2"):
        mod.conv_transpose2d_nhwc(x, w, output_padding=2)
    with pytest.raises(ValueError, match="crops the whole output"):
        mod.conv_transpose2d_nhwc(x[:, :, :1, :1], w[:, :, :1, :1], padding=1)
    with pytest.raises(ValueError, match="weight must be on"):
        mod.conv_transpose2d_nhwc(x, w.to("meta"))
    with pytest.raises(ValueError, match=r"out must be torch.float16 \[1, 8, 6, 8\]"):
        mod.conv_transpose2d_nhwc(x, w, padding=1, out=torch.empty(1, 8, 6, 7, dtype=torch.float16))
    with pytest.raises(ValueError, match="unit channel stride"):
        mod.conv_transpose2d_nhwc(x, w, padding=1, out=torch.empty(1, 8, 6, 8, dtype=torch.float16))
    huge = torch.empty_strided((1, 16, 3, 4), (2**33, 1, 2**29, 2**27), dtype=torch.float16, device="meta")
    with pytest.raises(ValueError, match="int32 in-sample offsets"):          # meta: never launched
        mod.conv_transpose2d_nhwc(huge, w.to("meta"), padding=1)
    with pytest.raises(ValueError, match="dtype 'fp32'"):
        mod.make_inputs(_pt(1, 8, 3, 4, 6, dtype="fp32"), device="cpu")
    with pytest.raises(ValueError, match="C=0"):
        mod.bytes_moved(_pt(1, 0, 3, 4, 6))
    with pytest.raises(ValueError, match="bias=2"):
        mod.flops(_pt(1, 8, 3, 4, 6, bias=2))
    with pytest.raises(ValueError, match="stride=2.5"):
        mod.grid(mod.BASELINE, _pt(1, 8, 3, 4, 6, stride=2.5))
    with pytest.raises(ValueError, match="output_padding"):
        mod.grid(mod.BASELINE, _pt(1, 8, 3, 4, 6, out_pad=(0, 3)))
    with pytest.raises(ValueError, match="BLOCK_N=24"):
        mod.grid(dict(mod.BASELINE, BLOCK_N=24), mod.POINTS[0])
    with pytest.raises(ValueError, match="num_warps=6"):
        mod.loop_iterations(dict(mod.BASELINE, num_warps=6), mod.POINTS[0])
    with pytest.raises(ValueError, match="num_stages=9"):
        mod.cta_iterations(dict(mod.BASELINE, num_stages=9), mod.POINTS[0])
    # an empty batch: nothing launched, an empty output
    e = mod.conv_transpose2d_nhwc(x[:0], w, padding=1)
    assert e.shape == (0, 8, 6, 8) and e.dtype == torch.float16


def test_sweep_fits_the_points():
    """The study sweep: 48 configs (BLOCK_M 64 / 128, BLOCK_N 64 / 128, BLOCK_K 32 / 64, 4 / 8 warps,
    num_stages 2 / 3 / 4) with BASELINE among them; at every point each config is valid, launches >= 4
    waves of programs on an H100 (2048 at the fewest: the SD-shaped point's 16384 rows a phase in tiles of
    128 x 4 phases x 4 column tiles of 128) and its pipeline's shared memory (num_stages (BLOCK_M + BLOCK_N)
    BLOCK_K 2 bytes) fits sm_90's (at most 128 KiB). (Every config was compiled for sm_90 at every point
    with triton 3.6.0 and 3.9.0: all 144 compile, none spills; registers 47-240 under both, the most for 128
    x 128 on 4 warps (the 64 KiB fp32 accumulator: 192-240, 240 at ERFNet's masked Cout 64 columns), 47-64
    for 64 x 64 on 8 warps; shared memory 16-128 KiB under both, exactly the pipeline's buffers at every
    config and point (A and B both through cp.async). Clamping the weight columns past Cout (min(cols, Cout
    - 1)) instead of masking them hid their contiguity: B loaded 2 bytes a lane into registers, unpipelined,
    and 128 x 128 x 64 on 4 warps spilled 74-78 registers; the output rows are decoded again after the loop
    rather than kept live through it.)"""
    mod = load_example(KERNEL)
    axes = SWEEP_AXES
    assert set(axes) == set(mod.TUNABLES) and mod.SWEEP_AXES == axes
    assert all(len(v) >= 2 for v in axes.values())
    cfgs = _cfgs()
    assert 48 <= len(cfgs) <= 72 and mod.BASELINE in cfgs
    fewest = min(mod.grid(c, p)[0] for p in mod.POINTS for c in cfgs)
    assert fewest == 2048
    for p in mod.POINTS:
        for c in cfgs:
            mod._check_cfg(c)
            (g,) = mod.grid(c, p)
            assert 4 * H100_SMS <= g < 2**31, (p, c)
            assert _smem_bound(c) <= 128 * 1024 <= SM90_SMEM_PER_BLOCK, (p, c)


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
    """On sm_90 at each point: BASELINE, 128 x 128 x 64 on 8 warps with 4 stages (128 KiB), 128 x 128 x 32
    on 4 warps with 4 stages (the most registers) and 64 x 64 x 32 compile without spills, their shared
    memory within the pipeline's bound."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    assert COMPILE_CFGS[0] == mod.BASELINE
    for p in mod.POINTS:
        for cfg in COMPILE_CFGS:
            res = compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch="sm_90",
                                 num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
            assert res.status == "ok", f"{cfg} at {p} on sm_90: {res.status}: {res.message}"
            assert 0 < res.n_regs <= 255 and res.n_spills == 0, (cfg, p, res.n_regs, res.n_spills)
            assert 0 < res.shared <= _smem_bound(cfg), (cfg, p, res.shared)


@pytest.mark.slow
def test_example_compiles_sm120(shared_cache):
    """On sm_120 (99 KiB a block, no wgmma: mma.sync): BASELINE (242 registers), 128 x 128 x 32 on 8 warps
    and 64 x 64 x 64 with 4 stages compile at the first point without spills within its shared memory.
    (There 128 x 64 x 64 on 8 warps with 2 stages spills 2 registers at 128 under triton 3.6, none under
    3.9.)"""
    for cfg, res in H.compile_results(KERNEL, SM120_CFGS, "sm_120"):
        assert res.status == "ok", f"{cfg} on sm_120: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.n_spills == 0, (cfg, res.n_regs, res.n_spills)
        assert 0 < res.shared <= min(_smem_bound(cfg), SM120_SMEM_PER_BLOCK), (cfg, res.shared)


# ----------------------------------------------------------------- the subprocess side
def _run() -> None:
    """Every case through launch against reference (the harness's tolerance) and against half an ulp of
    each element plus n 2^-23 of the magnitude sum; torch_baseline against reference; the output's strides,
    the inputs unchanged, the bias's effect; one JSON line."""
    import torch

    H.patch_interpreter_bf16_rounding()
    H.patch_interpreter_index()
    mod = load_example(KERNEL)
    names = {torch.float16: "fp16", torch.bfloat16: "bf16", torch.float32: "fp32"}

    def same(a, b):
        if a is None:
            return b is None
        return torch.equal(a.isnan(), b.isnan()) and torch.equal(a.nan_to_num(7.0), b.nan_to_num(7.0))

    def extra(name, point, inputs, out, ref):
        x = inputs["x"]
        u = {torch.bfloat16: 2.0 ** -8, torch.float16: 2.0 ** -11}[out.dtype]
        b = inputs["bias"]
        mag = mod.reference(dict(inputs, x=x.abs(), weight=inputs["weight"].abs(), bias=None if b is None else b.abs()))
        n = point["C"] * point["KH"] * point["KW"]
        loose = (out.float() - ref).abs() > u * ref.abs() + n * 2.0 ** -23 * mag + 1e-7
        unchanged = all(same(inputs[k], inputs[k + "0"]) for k in ("x", "weight", "bias"))
        res = {"dtype": names.get(out.dtype), "out_strides": list(out.stride()), "n_loose": int(loose.sum()),
               "inputs_unchanged": bool(unchanged), "nonzero": bool((ref != 0).any()),
               "x_strides": list(x.stride()),
               "baseline": H.compare(mod.torch_baseline(inputs), ref, point["dtype"])}
        if b is not None:
            res["bias_matters"] = bool((mod.reference(dict(inputs, bias=None)) - ref).abs().max() > 0.05)
        if "out_buf" in inputs:
            buf, K = inputs["out_buf"], point["K"]
            res["wrote_in_place"] = bool(out.data_ptr() == inputs["out"].data_ptr())
            res["pad_channels_nan"] = bool(buf[:, :O_COL0].isnan().all() and buf[:, O_COL0 + K:].isnan().all())
        return res

    H.run_cases(KERNEL, CASES[KERNEL], prepare=_prepare, extra=extra)


if __name__ == "__main__":
    _run()
