"""examples/conv3d_ndhwc.py (3-D convolution forward as an implicit GEMM on channels-last-3d
activations: x [N, C, T, H, W] NDHWC fp16 / bf16, weight [K, C, KT, KR, KS] stored KTRSC, optional
bias, per-axis stride, symmetric or causal (front-only) time padding whose taps read zeros, replicated
edge frames or the previous chunk's cached frames from a second tensor, zero or replicated spatial
padding; fp32 accumulation through tl.dot over one flat tap x channel-block loop, packed per-row tap
bits, out [N To Ho Wo, K] rows at any pitch) against its torch reference on the CPU through Triton's
interpreter, its launcher hooks against the shapes, its study sweep against the points, and a compile
for sm_90 and sm_120 from its own ``example_args``.

As in test_examples_round29_d.py the interpreter cases run in a subprocess (this file run as a
script: ``python tests/test_examples_round30_d.py conv3d_ndhwc``) that prints one JSON line. The
subprocess installs the harness's interpreter fixes (bf16 dot operands widened to fp32; bf16
rounding; under triton 3.6 with numpy >= 2.3 the runtime loop bounds read as ints).

Shapes are small, odd and ragged: every (TIME_MODE, SPACE_REPL) pair (time zeros / replicate /
cache x space zeros / replicate), the unmasked A load (every axis replicated, C filling the channel
blocks) and its masked twin with a channel tail; EVEN_C both ways (C 8-48 against BLOCK_K 16-64: C
below one block, a ragged last block); rows past M (M 20-840 against BLOCK_M 16-128) and an even M;
output channels past K and an even K; batches whose samples a row tile straddles (N 3, 24 voxels a
sample); filters 3x3x3, 1x3x3 (spatial only), 3x1x1 (temporal only), 1x1x1 and 5x5x5 (pad 2: more
tap bits); stride 1, 2 and mixed ((2, 1, 1), (1, 2, 2)); causal and symmetric time padding, the
replicated back frames of a symmetric replicate pad, one-frame inputs (every causal tap frame 0 or
cached), a cache longer than the front pad; with and without bias; fp16 and bf16. Strided: x, the
cache and the weight channel slices of NaN-padded wider buffers and out written into the channel slice
of a NaN-filled concatenation buffer (a stray read or write shows); x and weight given NCDHW (copied
by the launcher). BLOCK_M 16-128, BLOCK_N 16-128, BLOCK_K 16-64, 4 / 8 warps, num_stages 2-4.

Per case: launch's output within the dtype's tolerance of the fp64 reference (the harness's
per-element check) and each element within half an ulp of its own value plus n 2^-23 of the
magnitude sum |x| |w| (+ |bias|) (n = C KT KR KS terms: fp32 accumulation, one rounding); the output
in x's dtype, channels_last_3d (or the given slice, its other channels untouched); the inputs
unchanged; the padding mode, the cache and the bias each changing the result where present;
torch_baseline (the models' torch.cat / F.pad + F.conv3d in the inputs' dtype) within tolerance.
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
KERNEL = "conv3d_ndhwc"
ROLE = "held-out-30"
H200_SMS = 132
SM90_SMEM_PER_BLOCK = 227 * 1024
SM120_SMEM_PER_BLOCK = 99 * 1024

# the study's sweep (scripts/rank_study.py SWEEPS["conv3d_ndhwc"] once the lead adds it)
SWEEP_AXES = {"BLOCK_M": [64, 128], "BLOCK_N": [64, 128], "BLOCK_K": [32, 64], "num_warps": [4, 8],
              "num_stages": [2, 3, 4]}


def _cfg(bm, bn, bk, w=4, st=3):
    return {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "num_warps": w, "num_stages": st}


def _pt(N, C, T, Hh, W, K, k=(3, 3, 3), stride=1, pad=1, causal=0, tp="zeros", sp="zeros", bias=1, dtype="fp16"):
    return {"N": N, "C": C, "T": T, "H": Hh, "W": W, "K": K, "KT": k[0], "KR": k[1], "KS": k[2], "stride": stride,
            "pad": pad, "causal": causal, "time_pad": tp, "space_pad": sp, "bias": bias, "dtype": dtype}


# case -> (point, cfg); comments: (TIME_MODE, SPACE_REPL), EVEN_C, M vs BLOCK_M, K vs BLOCK_N
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        # CogVideoX's first chunk: (1, 0); C 32 = BLOCK_K (EVEN_C); M 210 (ragged vs 64); K 24 < 64
        "cogvideox_replicate_bf16": (_pt(1, 32, 5, 6, 7, 24, causal=1, tp="replicate", dtype="bf16"),
                                     _cfg(64, 64, 32, 4, 3)),
        # Wan's later chunk: (2, 0); C 24 (EVEN_C 0 at BLOCK_K 16: a ragged second block); M 90; K 20
        "wan_cache_ragged_c_bf16": (_pt(1, 24, 3, 5, 6, 20, causal=1, tp="cache", dtype="bf16"),
                                    _cfg(32, 16, 16, 8, 2)),
        # nnU-Net's stride-2 conv: (0, 0), symmetric pad; C 16 < BLOCK_K 32 (EVEN_C 0); N 2, M 160; K 24
        "nnunet_stride2_fp16": (_pt(2, 16, 7, 8, 9, 24, stride=2), _cfg(128, 128, 32, 8, 4)),
        # HunyuanVideo: (1, 1), EVEN_C 1: the unmasked A load; no bias; M 140; K 16 = BLOCK_N
        "hunyuan_replicate_all_fp16": (_pt(1, 32, 4, 5, 7, 16, causal=1, tp="replicate", sp="replicate", bias=0),
                                       _cfg(64, 16, 32, 4, 2)),
        # (1, 1) with a channel tail: C 40 at BLOCK_K 32 (EVEN_C 0; the halo-free mask); M 84; K 40
        "hunyuan_replicate_ragged_c_bf16": (_pt(1, 40, 3, 4, 7, 40, causal=1, tp="replicate", sp="replicate",
                                                dtype="bf16"), _cfg(32, 32, 32, 4, 2)),
        # (2, 1): a cache with replicated space; C 16 (EVEN_C 1 at 16); K 32 = BLOCK_N; M 60
        "cache_replicate_space_fp16": (_pt(1, 16, 3, 4, 5, 32, causal=1, tp="cache", sp="replicate"),
                                       _cfg(16, 32, 16, 4, 3)),
        # (0, 1): zero time, replicated space, symmetric; stride (1, 2, 2); C 32, BLOCK_K 64 (EVEN_C 0)
        "zeros_time_replicate_space_bf16": (_pt(1, 32, 3, 7, 6, 24, stride=(1, 2, 2), sp="replicate", dtype="bf16"),
                                            _cfg(64, 64, 64, 8, 3)),
        # (1, 0) symmetric: the back frame replicated too; stride (2, 1, 1) (Wan's time_conv stride)
        "replicate_back_frames_fp16": (_pt(1, 16, 5, 4, 5, 16, stride=(2, 1, 1), tp="replicate"),
                                       _cfg(32, 16, 16, 4, 4)),
        # a 1x3x3 spatial-only conv (pad (0, 1, 1)); C 64 = BLOCK_K; K 128 = BLOCK_N; M 42
        "spatial_133_bf16": (_pt(1, 64, 2, 3, 7, 128, k=(1, 3, 3), pad=(0, 1, 1), dtype="bf16"),
                             _cfg(64, 128, 64, 4, 2)),
        # a 1x1x1 pointwise conv, no padding, no bias; C 48 at BLOCK_K 32 (EVEN_C 0); M 64 = BLOCK_M even
        "pointwise_111_fp16": (_pt(2, 48, 2, 4, 4, 40, k=(1, 1, 1), pad=0, bias=0), _cfg(64, 64, 32, 8, 2)),
        # a 3x1x1 temporal conv, causal, cached (the cache 3 frames: one more than the front pad)
        "temporal_311_long_cache_bf16": (_pt(1, 16, 4, 3, 5, 16, k=(3, 1, 1), pad=(1, 0, 0), causal=1, tp="cache",
                                             dtype="bf16"), _cfg(16, 16, 16, 4, 2)),
        # 5x5x5, pad 2 (2 KT + KR + KS = 20 tap bits), causal zeros (Wan's first chunk style); M 20
        "filter_555_fp16": (_pt(1, 16, 2, 2, 5, 16, k=(5, 5, 5), pad=2, causal=1), _cfg(32, 16, 16, 4, 2)),
        # one frame, causal replicate: every tap frame is frame 0; N 3 (24 voxels a sample: tiles of
        # 64 rows straddle samples); K 8
        "one_frame_batch3_bf16": (_pt(3, 16, 1, 4, 6, 8, causal=1, tp="replicate", dtype="bf16"),
                                  _cfg(64, 16, 16, 4, 2)),
        # Wan's first chunk (1 frame, causal zeros): x and weight given NCDHW (copied); M 35
        "ncdhw_first_chunk_fp16": (_pt(1, 16, 1, 5, 7, 16, causal=1), _cfg(128, 64, 16, 4, 3)),
        # (2, 0): x, the cache and the weight channel slices of NaN-padded buffers, out written into the
        # channel slice of a NaN-filled [N, K + 5, ...] buffer; M 60, K 12
        "strided_nan_cache_fp16": (_pt(1, 16, 3, 4, 5, 12, causal=1, tp="cache"), _cfg(32, 64, 16, 4, 2)),
    },
}
STRIDED, NCDHW, LONG_CACHE = "strided_nan_cache_fp16", "ncdhw_first_chunk_fp16", "temporal_311_long_cache_bf16"
PAD_X, PAD_W, PAD_O, O_COL0 = 8, 8, 5, 2

# configs compiled at the module's first POINT (CogVideoX, time replicated) on sm_90: BASELINE first,
# the largest tile on 8 warps 4 stages (the most shared memory: 128 KiB), the smallest tile; at the
# Wan point (the cache select, C 96 ragged at BLOCK_K 64: the most registers) BASELINE, the 8-warp
# 128 x 128 x 64 and 64 x 128 x 32
COMPILE_CFGS = [_cfg(128, 128, 64, 4, 3), _cfg(128, 128, 64, 8, 4), _cfg(64, 64, 32, 4, 2)]
P1_CFGS = [_cfg(128, 128, 64, 4, 3), _cfg(128, 128, 64, 8, 4), _cfg(64, 128, 32, 4, 2)]
SM120_CFGS = [_cfg(128, 128, 64, 4, 3), _cfg(128, 64, 64, 8, 2), _cfg(64, 64, 64, 4, 4)]


def _flags(p, c):
    """(TIME_MODE, SPACE_REPL, EVEN_C, HAS_BIAS, EVEN_M, EVEN_K) of a case."""
    mod = load_example(KERNEL)
    P = mod._check_point(p)
    return (P["TIME_MODE"], P["SPACE_REPL"], int(p["C"] % c["BLOCK_K"] == 0), p["bias"],
            int(P["M"] % c["BLOCK_M"] == 0), int(p["K"] % c["BLOCK_N"] == 0))


def _smem_bound(cfg) -> int:
    """The pipeline's shared memory: num_stages buffers of the [BLOCK_M, BLOCK_K] A and [BLOCK_K, BLOCK_N]
    B tiles, 2 bytes an element."""
    return cfg["num_stages"] * (cfg["BLOCK_M"] + cfg["BLOCK_N"]) * cfg["BLOCK_K"] * 2


def _nan_slice(t, pad: int, col0: int = 0):
    """t [N, C, ...] (channels_last_3d) copied into channels col0 .. col0 + C of a NaN-filled channels_last_3d
    buffer with `pad` more channels; that slice."""
    import torch

    shape = (t.shape[0], t.shape[1] + pad) + tuple(t.shape[2:])
    buf = torch.full(shape, float("nan"), dtype=t.dtype).contiguous(memory_format=torch.channels_last_3d)
    buf[:, col0:col0 + t.shape[1]] = t
    return buf[:, col0:col0 + t.shape[1]]


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """STRIDED: x, cache, weight NaN-padded channel slices, out a slice of a NaN buffer; NCDHW: x and the
    weight contiguous NCDHW; LONG_CACHE: one more (leading) cache frame. Then copies."""
    import torch

    mod = load_example(KERNEL)
    if name == STRIDED:
        inputs["x"] = _nan_slice(inputs["x"], PAD_X, 3)
        inputs["cache"] = _nan_slice(inputs["cache"], PAD_X)
        inputs["weight"] = _nan_slice(inputs["weight"], PAD_W, 1)
        P = mod._check_point(point)
        shape = (point["N"], point["K"] + PAD_O) + P["out_size"]
        buf = torch.full(shape, float("nan"), dtype=inputs["x"].dtype).contiguous(memory_format=torch.channels_last_3d)
        inputs["out_buf"] = buf
        inputs["out"] = buf[:, O_COL0:O_COL0 + point["K"]]
    if name == NCDHW:
        inputs["x"] = inputs["x"].contiguous()
        inputs["weight"] = inputs["weight"].contiguous()
    if name == LONG_CACHE:
        c = inputs["cache"]
        extra = torch.randn(c.shape[:2] + (1,) + c.shape[3:], generator=torch.Generator().manual_seed(3)).to(c.dtype)
        inputs["cache"] = torch.cat([extra, c], 2).contiguous(memory_format=torch.channels_last_3d)
    for k in ("x", "weight", "bias", "cache"):
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
    To, Ho, Wo = P["out_size"]
    K = p["K"]
    assert res["n_bad"] == 0, H.mismatch(res, f"{name} launch")
    assert res["shape"] == [p["N"], K, To, Ho, Wo] and res["dtype"] == p["dtype"], res
    assert res["n_loose"] == 0, res            # half an ulp + n 2^-23 of sum |x| |w| (+ |bias|)
    assert res["inputs_unchanged"] is True and res["nonzero"] is True, res
    assert res["baseline"]["n_bad"] == 0, H.mismatch(res["baseline"], f"{name} torch_baseline")
    if p["bias"]:
        assert res["bias_matters"] is True, res
    if P["TIME_MODE"] or P["SPACE_REPL"]:
        assert res["mode_matters"] is True, res        # against the all-zeros padding
    if P["TIME_MODE"] == 2:
        assert res["cache_matters"] is True, res
    if name == STRIDED:
        pitch = K + PAD_O
        assert res["out_strides"] == [To * Ho * Wo * pitch, 1, Ho * Wo * pitch, Wo * pitch, pitch], res
        assert res["wrote_in_place"] is True and res["pad_channels_nan"] is True, res
        cx = p["C"] + PAD_X
        assert res["x_strides"] == [p["T"] * p["H"] * p["W"] * cx, 1, p["H"] * p["W"] * cx, p["W"] * cx, cx], res
    else:
        assert res["out_strides"] == [To * Ho * Wo * K, 1, Ho * Wo * K, Wo * K, K], res
    if name == NCDHW:
        assert res["x_strides"] == [p["C"] * p["T"] * p["H"] * p["W"], p["T"] * p["H"] * p["W"], p["H"] * p["W"],
                                    p["W"], 1], res
    if name == LONG_CACHE:
        assert res["cache_frames"] == 3, res


def test_cases_cover_every_code_path():
    """Every (TIME_MODE, SPACE_REPL) pair; the unmasked A load (1, 1, EVEN_C 1) and (1, 1, EVEN_C 0); EVEN_C
    both ways under the zero and the cache modes; bias or not; ragged and even M and K; both dtypes;
    the filters, strides, causal / symmetric; every sweep value of every tunable and smaller blocks."""
    H.assert_tunables_covered(CASES)
    mod = load_example(KERNEL)
    cases = list(CASES[KERNEL].values())
    assert {p["dtype"] for p, _ in cases} == set(mod.DTYPES)
    fl = [_flags(p, c) for p, c in cases]
    assert {f[:2] for f in fl} == set(itertools.product((0, 1, 2), (0, 1)))
    assert {(1, 1, 1), (1, 1, 0)} <= {f[:3] for f in fl}
    assert {(0, 0), (0, 1), (2, 0), (2, 1)} <= {(f[0], f[2]) for f in fl}
    for i in (3, 4, 5):
        assert {f[i] for f in fl} == {0, 1}, i
    assert {(p["KT"], p["KR"], p["KS"]) for p, _ in cases} >= {(3, 3, 3), (1, 3, 3), (3, 1, 1), (1, 1, 1), (5, 5, 5)}
    strides = {mod._triple(p["stride"], "stride") for p, _ in cases}
    assert strides >= {(1, 1, 1), (2, 2, 2), (2, 1, 1), (1, 2, 2)}
    assert {p["causal"] for p, _ in cases} == {0, 1} and any(p["T"] == 1 for p, _ in cases)
    # a row tile straddling samples
    assert any(p["N"] > 1 and c["BLOCK_M"] > mod._check_point(p)["M"] // p["N"] for p, c in cases)
    for k, vals in SWEEP_AXES.items():
        assert {c[k] for _, c in cases} >= set(vals), k
    assert {16, 32} <= {c["BLOCK_M"] for _, c in cases} and {16, 32} <= {c["BLOCK_N"] for _, c in cases}
    assert 16 in {c["BLOCK_K"] for _, c in cases}


def test_launcher_hooks_agree_with_shapes():
    """At every point and sweep config: example_args on meta with the launch's shapes, dtypes and
    strides (channels_last_3d x, weight, cache, out), the flags, the geometry, the grid (row tiles x
    column tiles) and the loop length; bytes_moved / flops by formula; 0.3-0.8 GB moved and 50-800
    GFLOP a point; inputs under 1 GB."""
    import torch

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "example_args", "torch_baseline", "conv3d_ndhwc", "pad_input"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert not hasattr(mod, "secondary_kernels") and not hasattr(mod, "cta_iterations")
    assert len(mod.POINTS) == 3 and mod.ROLE == ROLE and mod.SWEEP_AXES == SWEEP_AXES
    dts = {"fp16": torch.float16, "bf16": torch.bfloat16}
    cfgs = [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]
    for p in mod.POINTS:
        Nb, C, T, Hh, W, K = (p[k] for k in ("N", "C", "T", "H", "W", "K"))
        KT, KR, KS = p["KT"], p["KR"], p["KS"]
        st = mod._triple(p["stride"], "stride")
        pt, ph, pw = mod._triple(p["pad"], "pad")
        front = (2 * pt if p["causal"] else pt, ph, pw)
        back = (0 if p["causal"] else pt, ph, pw)
        To, Ho, Wo = ((s + f + b - k) // d + 1 for s, f, b, k, d in zip((T, Hh, W), front, back, (KT, KR, KS), st))
        M = Nb * To * Ho * Wo
        tm = mod.TIME_PADS.index(p["time_pad"])
        Tc = front[0] if tm == 2 else 0
        for cfg in cfgs:
            a = mod.example_args(cfg, p)
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for v in a.values())
            x = a["X"]
            assert x.shape == (Nb, C, T, Hh, W) and x.dtype == dts[p["dtype"]]
            assert x.stride() == (T * Hh * W * C, 1, Hh * W * C, W * C, C)
            assert a["Wt"].shape == (K, C, KT, KR, KS) and a["Wt"].stride() == (KT * KR * KS * C, 1, KR * KS * C,
                                                                                   KS * C, C)
            assert a["OUT"].shape == (Nb, K, To, Ho, Wo) and a["OUT"].dtype == x.dtype
            assert a["OUT"].stride() == (To * Ho * Wo * K, 1, Ho * Wo * K, Wo * K, K) and a["stride_om"] == K
            if p["bias"]:
                assert a["BIAS"].shape == (K,) and a["BIAS"].dtype == x.dtype and a["HAS_BIAS"] == 1
            else:
                assert a["BIAS"] is x and a["HAS_BIAS"] == 0
            if tm == 2:
                assert a["CACHE"].shape == (Nb, C, Tc, Hh, W) and a["CACHE"].stride()[1] == 1 and a["Tc"] == Tc
                assert (a["stride_cn"], a["stride_ct"], a["stride_ch"], a["stride_cw"]) == (
                    Tc * Hh * W * C, Hh * W * C, W * C, C)
            else:
                assert a["CACHE"] is x and a["Tc"] == 0
            assert (a["M"], a["C"], a["T"], a["H"], a["W"], a["K"]) == (M, C, T, Hh, W, K)
            assert (a["To"], a["Ho"], a["Wo"]) == (To, Ho, Wo)
            assert (a["stride_xn"], a["stride_xt"], a["stride_xh"], a["stride_xw"]) == x.stride()[:1] + x.stride()[2:]
            assert (a["stride_wk"], a["stride_wt"], a["stride_wr"], a["stride_ws"]) == (
                KT * KR * KS * C, KR * KS * C, KS * C, C)
            assert (a["st_t"], a["st_h"], a["st_w"]) == st and (a["pad_t"], a["pad_h"], a["pad_w"]) == front
            assert (a["KT"], a["KR"], a["KS"]) == (KT, KR, KS)
            assert (a["TIME_MODE"], a["SPACE_REPL"]) == (tm, mod.SPACE_PADS.index(p["space_pad"]))
            assert a["EVEN_C"] == int(C % cfg["BLOCK_K"] == 0)
            assert (a["BLOCK_M"], a["BLOCK_N"], a["BLOCK_K"]) == (cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["BLOCK_K"])
            assert mod.grid(cfg, p) == (-(-M // cfg["BLOCK_M"]) * -(-K // cfg["BLOCK_N"]),)
            assert mod.loop_iterations(cfg, p) == KT * KR * KS * -(-C // cfg["BLOCK_K"])
            distinct = {id(v): v for v in a.values() if hasattr(v, "element_size")}   # stand-ins are x
            assert H.meta_nbytes(distinct) < 2**30
        assert mod.bytes_moved(p) == 2 * (Nb * C * (T + Tc) * Hh * W + K * C * KT * KR * KS + K * p["bias"] + M * K)
        assert mod.flops(p) == 2 * M * K * C * KT * KR * KS
        assert 0.3e9 <= mod.bytes_moved(p) <= 0.8e9 and 50e9 <= mod.flops(p) <= 800e9, p
    # the points differ: the three time modes' two real ones plus zeros, C 128 / 96 / 32, stride 1 / 2
    assert [p["time_pad"] for p in mod.POINTS] == ["replicate", "cache", "zeros"]
    assert {p["dtype"] for p in mod.POINTS} == set(mod.DTYPES) and [p["C"] for p in mod.POINTS] == [128, 96, 32]
    assert [p["causal"] for p in mod.POINTS] == [1, 1, 0] and [p["stride"] for p in mod.POINTS] == [1, 1, 2]


def test_hooks_on_small_points_and_inputs():
    """make_inputs: shapes, dtypes, strides, the seed, the cache; pad_input and reference by hand (a
    temporal 3x1x1 sum of ones under the three time modes, a 1x1x1 channel mix, replicated space);
    torch_baseline's dtype and layout; grid / loop; bytes / flops by hand."""
    import torch
    import torch.nn.functional as F

    mod = load_example(KERNEL)
    cl = torch.channels_last_3d
    p = _pt(2, 8, 3, 4, 5, 6, causal=1, tp="cache", dtype="bf16")
    inp = mod.make_inputs(p, seed=1, device="cpu")
    x, w, c = inp["x"], inp["weight"], inp["cache"]
    assert x.shape == (2, 8, 3, 4, 5) and x.dtype == torch.bfloat16 and x.is_contiguous(memory_format=cl)
    assert w.shape == (6, 8, 3, 3, 3) and w.dtype == torch.bfloat16 and w.is_contiguous(memory_format=cl)
    assert c.shape == (2, 8, 2, 4, 5) and c.is_contiguous(memory_format=cl) and inp["bias"].shape == (6,)
    assert inp["stride"] == (1, 1, 1) and inp["padding"] == (1, 1, 1) and inp["causal"] is True
    assert torch.equal(mod.make_inputs(p, seed=1, device="cpu")["x"], x)
    assert not torch.equal(mod.make_inputs(p, seed=2, device="cpu")["x"], x)
    assert 0.8 < float(x.float().std()) < 1.2 and abs(float(w.float().std()) * (8 * 27) ** 0.5 - 1) < 0.2
    z = mod.make_inputs(_pt(1, 8, 3, 4, 5, 6, bias=0), device="cpu")
    assert z["cache"] is None and z["bias"] is None and z["causal"] is False
    # by hand: a 3x1x1 all-ones filter over one channel: out[t] = sum of padded frames t .. t + 2
    v = torch.arange(1.0, 5.0).view(1, 1, 4, 1, 1)
    cache = torch.tensor([10.0, 20.0, 30.0]).view(1, 1, 3, 1, 1)
    ones = torch.ones(1, 1, 3, 1, 1)

    def ref(tp, causal=True, sp="zeros", wt=ones, xv=v, pad=(1, 0, 0), stride=1):
        return mod.reference({"x": xv, "weight": wt, "bias": None, "cache": cache if tp == "cache" else None,
                              "stride": stride, "padding": pad, "causal": causal, "time_pad": tp, "space_pad": sp})

    assert ref("zeros").flatten().tolist() == [1, 3, 6, 9]                  # 0 + 0 + 1, 0 + 1 + 2, ...
    assert ref("replicate").flatten().tolist() == [3, 4, 6, 9]              # 1 + 1 + 1, 1 + 1 + 2, ...
    assert ref("cache").flatten().tolist() == [51, 33, 6, 9]                # 20 + 30 + 1, 30 + 1 + 2, ...
    assert ref("zeros", causal=False).flatten().tolist() == [3, 6, 9, 7]    # symmetric: 0 + 1 + 2 ... 3 + 4 + 0
    assert ref("replicate", causal=False).flatten().tolist() == [4, 6, 9, 11]
    assert ref("zeros", stride=(2, 1, 1)).flatten().tolist() == [1, 6]
    xp = mod.pad_input(v, (1, 1, 0), True, "cache", "replicate", cache)
    assert xp.shape == (1, 1, 6, 3, 1) and xp[0, 0, :, 0, 0].tolist() == [20, 30, 1, 2, 3, 4]
    assert torch.equal(xp[:, :, :, 0], xp[:, :, :, 1]) and torch.equal(xp[:, :, :, 2], xp[:, :, :, 1])
    # 1x1x1: a channel mix plus the bias
    x2 = torch.randn(1, 3, 2, 2, 2)
    w2 = torch.randn(4, 3, 1, 1, 1)
    b2 = torch.randn(4)
    r2 = mod.reference({"x": x2, "weight": w2, "bias": b2, "cache": None, "stride": 1, "padding": 0,
                        "causal": False, "time_pad": "zeros", "space_pad": "zeros"})
    assert r2.dtype == torch.float32
    mix = torch.einsum("kc,nctyx->nktyx", w2[:, :, 0, 0, 0], x2) + b2.view(1, 4, 1, 1, 1)
    assert torch.allclose(r2, mix, atol=1e-5)
    # replicated space on a 3x3: the corner's taps read the edge pixels
    x3 = torch.arange(4.0).view(1, 1, 1, 2, 2)
    r3 = ref("zeros", causal=False, sp="replicate", wt=torch.ones(1, 1, 1, 3, 3), xv=x3, pad=(0, 1, 1))
    assert r3.flatten().tolist() == [9 * 0 + 2 * 1 + 2 * 2 + 3, 0 * 2 + 1 * 4 + 2 + 3 * 2,   # by F.pad replicate
                                     0 * 2 + 1 + 2 * 4 + 3 * 2, 0 + 1 * 2 + 2 * 2 + 3 * 4]
    assert torch.allclose(r3, F.conv3d(F.pad(x3, (1, 1, 1, 1, 0, 0), mode="replicate"), torch.ones(1, 1, 1, 3, 3)))
    base = mod.torch_baseline(inp)
    assert base.dtype == torch.bfloat16 and base.shape == (2, 6, 3, 4, 5)
    assert torch.allclose(base.float(), mod.reference(inp), atol=0.05)
    cfg = _cfg(64, 64, 32)
    assert mod.grid(cfg, p) == (-(-2 * 3 * 4 * 5 // 64) * 1,)
    assert mod.grid(_cfg(16, 4 * 4, 16), _pt(1, 8, 3, 4, 5, 20, stride=2)) == (-(-2 * 2 * 3 // 16) * 2,)
    assert mod.loop_iterations(cfg, p) == 27 and mod.loop_iterations(_cfg(64, 64, 32), _pt(1, 40, 3, 4, 5, 6)) == 54
    assert mod.bytes_moved(p) == 2 * (2 * 8 * 5 * 20 + 6 * 8 * 27 + 6 + 120 * 6)
    assert mod.flops(p) == 2 * 120 * 6 * 8 * 27


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    cl = torch.channels_last_3d
    x = torch.ones(1, 16, 3, 4, 5, dtype=torch.float16).contiguous(memory_format=cl)
    w = torch.ones(8, 16, 3, 3, 3, dtype=torch.float16).contiguous(memory_format=cl)
    with pytest.raises(ValueError, match="BLOCK_M=48"):
        mod.conv3d_ndhwc(x, w, BLOCK_M=48)
    with pytest.raises(ValueError, match="BLOCK_K=8"):
        mod.conv3d_ndhwc(x, w, BLOCK_K=8)
    with pytest.raises(ValueError, match="num_warps=3"):
        mod.conv3d_ndhwc(x, w, num_warps=3)
    with pytest.raises(ValueError, match="num_stages=0"):
        mod.conv3d_ndhwc(x, w, num_stages=0)
    with pytest.raises(ValueError, match=r"expected x \[N, C, T, H, W\]"):
        mod.conv3d_ndhwc(x[0], w)
    with pytest.raises(ValueError, match=r"expected x \[N, C, T, H, W\]"):
        mod.conv3d_ndhwc(x, w[:, :8])
    with pytest.raises(ValueError, match="fp16 / bf16"):
        mod.conv3d_ndhwc(x.float(), w.float())
    with pytest.raises(ValueError, match="fp16 / bf16"):
        mod.conv3d_ndhwc(x, w.bfloat16())
    with pytest.raises(ValueError, match="bias must be"):
        mod.conv3d_ndhwc(x, w, torch.zeros(7, dtype=torch.float16))
    with pytest.raises(ValueError, match="bias must be"):
        mod.conv3d_ndhwc(x, w, torch.zeros(8))
    with pytest.raises(ValueError, match="stride=.*must be >= 1"):
        mod.conv3d_ndhwc(x, w, stride=(1, 0, 1))
    with pytest.raises(ValueError, match="padding=.*triple"):
        mod.conv3d_ndhwc(x, w, padding=(1, 1))
    with pytest.raises(ValueError, match="padding=.*>= 0"):
        mod.conv3d_ndhwc(x, w, padding=-1)
    with pytest.raises(ValueError, match="time_pad='reflect'"):
        mod.conv3d_ndhwc(x, w, padding=1, time_pad="reflect")
    with pytest.raises(ValueError, match="space_pad='circular'"):
        mod.conv3d_ndhwc(x, w, padding=1, space_pad="circular")
    with pytest.raises(ValueError, match="needs a front time padding"):
        mod.conv3d_ndhwc(x, w, padding=(0, 1, 1), causal=True, time_pad="cache", cache=x)
    with pytest.raises(ValueError, match="needs the cache tensor"):
        mod.conv3d_ndhwc(x, w, padding=1, causal=True, time_pad="cache")
    with pytest.raises(ValueError, match=r"cache must be .*Tc >= 2"):
        mod.conv3d_ndhwc(x, w, padding=1, causal=True, time_pad="cache", cache=x[:, :, :1])
    with pytest.raises(ValueError, match="cache must be"):
        mod.conv3d_ndhwc(x, w, padding=1, causal=True, time_pad="cache", cache=x[:, :8])
    with pytest.raises(ValueError, match="a cache is read only with time_pad='cache'"):
        mod.conv3d_ndhwc(x, w, padding=1, causal=True, cache=x)
    with pytest.raises(ValueError, match="does not fit the padded input"):
        mod.conv3d_ndhwc(x[:, :, :2], w)
    with pytest.raises(ValueError, match="packed tap bits"):
        mod.conv3d_ndhwc(torch.ones(1, 16, 9, 9, 9, dtype=torch.float16), torch.ones(8, 16, 9, 9, 9,
                                                                                    dtype=torch.float16))
    with pytest.raises(ValueError, match="weight must be on"):
        mod.conv3d_ndhwc(x, w.to("meta"))
    with pytest.raises(ValueError, match=r"out must be torch.float16 \[1, 8, 3, 4, 5\]"):
        mod.conv3d_ndhwc(x, w, padding=1, out=torch.empty(1, 8, 3, 4, 4, dtype=torch.float16))
    with pytest.raises(ValueError, match="unit channel stride"):
        mod.conv3d_ndhwc(x, w, padding=1, out=torch.empty(1, 8, 3, 4, 5, dtype=torch.float16))
    big = torch.empty(1, 8, 3, 4, 6, dtype=torch.float16).contiguous(memory_format=cl)
    with pytest.raises(ValueError, match="one pitch >= K apart"):                  # rows 6 voxels apart, not 5
        mod.conv3d_ndhwc(x, w, padding=1, out=big[..., :5])
    huge = torch.empty_strided((1, 16, 3, 4, 5), (2**33, 1, 2**29, 2**27, 16), dtype=torch.float16, device="meta")
    with pytest.raises(ValueError, match="int32 in-sample offsets"):          # meta: never launched
        mod.conv3d_ndhwc(huge, w.to("meta"), padding=1)
    with pytest.raises(ValueError, match="dtype 'fp32'"):
        mod.make_inputs(_pt(1, 8, 3, 4, 5, 6, dtype="fp32"), device="cpu")
    with pytest.raises(ValueError, match="C=0"):
        mod.bytes_moved(_pt(1, 0, 3, 4, 5, 6))
    with pytest.raises(ValueError, match="causal=2"):
        mod.flops(_pt(1, 8, 3, 4, 5, 6, causal=2))
    with pytest.raises(ValueError, match="time_pad='cache' needs a front"):
        mod.grid(mod.BASELINE, _pt(1, 8, 3, 4, 5, 6, pad=(0, 1, 1), tp="cache"))
    with pytest.raises(ValueError, match="bias=2"):
        mod.grid(mod.BASELINE, _pt(1, 8, 3, 4, 5, 6, bias=2))
    with pytest.raises(ValueError, match="stride=2.5"):
        mod.grid(mod.BASELINE, _pt(1, 8, 3, 4, 5, 6, stride=2.5))
    with pytest.raises(ValueError, match="does not fit"):
        mod.grid(mod.BASELINE, _pt(1, 8, 1, 4, 5, 6, pad=0))
    with pytest.raises(ValueError, match="BLOCK_N=24"):
        mod.grid(dict(mod.BASELINE, BLOCK_N=24), mod.POINTS[0])
    with pytest.raises(ValueError, match="num_warps=6"):
        mod.loop_iterations(dict(mod.BASELINE, num_warps=6), mod.POINTS[0])
    # an empty batch: nothing launched, an empty output
    e = mod.conv3d_ndhwc(x[:0], w, padding=1)
    assert e.shape == (0, 8, 3, 4, 5) and e.dtype == torch.float16


def test_sweep_fits_the_points():
    """The study sweep: 48 configs (BLOCK_M 64 / 128, BLOCK_N 64 / 128, BLOCK_K 32 / 64, 4 / 8 warps,
    num_stages 2 / 3 / 4) with BASELINE among them; at every point each config is valid, launches >= 4
    waves of programs on an H200 (4096 at the fewest: nnU-Net's 524288 output voxels in rows of 128, its
    64 channels one column tile), and its pipeline's shared memory (num_stages (BLOCK_M + BLOCK_N)
    BLOCK_K 2 bytes) fits sm_90's (at most 128 KiB). (Every config was compiled for sm_90 at every point
    with triton 3.6.0 and 3.9.0: all compile, none spills; registers 42-239 under 3.6 and 42-237 under
    3.9, the most for 128 x 128 on 4 warps (the 64 KiB fp32 accumulator: 197-239), 42-62 for 64 x 64 on
    8 warps; shared memory 16-128 KiB under both, exactly the pipeline's buffers (the gathered A tile
    goes through cp.async like B at every config and point). A per-row pointer select for the cached
    frames hid the channels' contiguity from Triton's axis analysis (16-bit scalar loads, not
    pipelined: 4-664 registers spilled at the Wan point), hence the per-element select; the packed tap
    bits and the store through the row index keep 128 x 128 on 4 warps under 240 registers.)"""
    mod = load_example(KERNEL)
    axes = SWEEP_AXES
    assert set(axes) == set(mod.TUNABLES) and mod.SWEEP_AXES == axes
    assert all(len(v) >= 2 for v in axes.values())
    cfgs = [dict(zip(axes, v)) for v in itertools.product(*axes.values())]
    assert 48 <= len(cfgs) <= 72 and mod.BASELINE in cfgs
    fewest = min(math.prod(mod.grid(c, p)) for p in mod.POINTS for c in cfgs)
    assert fewest == 4096
    for p in mod.POINTS:
        for c in cfgs:
            mod._check_cfg(c)
            (g,) = mod.grid(c, p)
            assert g >= 4 * H200_SMS and g < 2**31, (p, c)
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
    """On sm_90: BASELINE, 128 x 128 x 64 on 8 warps with 4 stages (128 KiB) and 64 x 64 x 32 at the
    first point (CogVideoX, the replicated time axis), and BASELINE, 128 x 128 x 64 on 8 warps and 64 x
    128 x 32 at the Wan point (the cache select, C 96) compile without spills, their shared memory
    within the pipeline's bound."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    assert COMPILE_CFGS[0] == mod.BASELINE
    for cfg, res in H.compile_results(KERNEL, COMPILE_CFGS, "sm_90"):
        assert res.status == "ok", f"{cfg} on sm_90: {res.status}: {res.message}"
        assert 0 < res.n_regs <= 255 and res.n_spills == 0, (cfg, res.n_regs, res.n_spills)
        assert 0 < res.shared <= _smem_bound(cfg), (cfg, res.shared)
    p = mod.POINTS[1]
    for cfg in P1_CFGS:
        res = compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch="sm_90",
                             num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
        assert res.status == "ok" and res.n_spills == 0, (cfg, p, res.n_regs, res.n_spills, res.message)
        assert 0 < res.shared <= _smem_bound(cfg), (cfg, res.shared)


@pytest.mark.slow
def test_example_compiles_sm120(shared_cache):
    """On sm_120 (99 KiB a block, no wgmma: mma.sync): BASELINE, 128 x 64 x 64 on 8 warps and 64 x 64 x 64
    with 4 stages compile at the first point without spills within its shared memory. (There 64 x 64 x 32
    on 4 warps with 3 / 4 stages spills 2 registers under triton 3.6, 128 x 64 x 64 on 4 warps with 4
    stages 2 under 3.9.)"""
    for cfg, res in H.compile_results(KERNEL, SM120_CFGS, "sm_120"):
        assert res.status == "ok", f"{cfg} on sm_120: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.n_spills == 0, (cfg, res.n_regs, res.n_spills)
        assert 0 < res.shared <= min(_smem_bound(cfg), SM120_SMEM_PER_BLOCK), (cfg, res.shared)


# ----------------------------------------------------------------- the subprocess side
def _run() -> None:
    """Every case through launch against reference (the harness's tolerance) and against half an ulp
    of each element plus n 2^-23 of the magnitude sum; torch_baseline against reference; the output's
    strides, the inputs unchanged, the modes' / cache's / bias's effect; one JSON line."""
    import torch

    H.patch_interpreter_bf16_rounding()
    H.patch_interpreter_index()
    mod = load_example(KERNEL)
    names = {torch.float16: "fp16", torch.bfloat16: "bf16", torch.float32: "fp32"}

    def ref_with(inputs, **kw):
        return mod.reference(dict(inputs, **kw))

    def same(a, b):
        if a is None:
            return b is None
        return torch.equal(a.isnan(), b.isnan()) and torch.equal(a.nan_to_num(7.0), b.nan_to_num(7.0))

    def extra(name, point, inputs, out, ref):
        x = inputs["x"]
        u = {torch.bfloat16: 2.0 ** -8, torch.float16: 2.0 ** -11}[out.dtype]
        ab = (lambda t: None if t is None else t.abs())
        mag = ref_with(inputs, x=x.abs(), weight=inputs["weight"].abs(), bias=ab(inputs["bias"]),
                       cache=ab(inputs["cache"]))
        n = point["C"] * point["KT"] * point["KR"] * point["KS"]
        loose = (out.float() - ref).abs() > u * ref.abs() + n * 2.0 ** -23 * mag + 1e-7
        unchanged = all(same(inputs[k], inputs[k + "0"]) for k in ("x", "weight", "bias", "cache"))
        res = {"dtype": names.get(out.dtype), "out_strides": list(out.stride()), "n_loose": int(loose.sum()),
               "inputs_unchanged": bool(unchanged), "nonzero": bool((ref != 0).any()),
               "x_strides": list(x.stride()),
               "cache_frames": None if inputs["cache"] is None else inputs["cache"].shape[2],
               "baseline": H.compare(mod.torch_baseline(inputs), ref, point["dtype"])}
        if inputs["bias"] is not None:
            res["bias_matters"] = bool((ref_with(inputs, bias=None) - ref).abs().max() > 0.05)
        if inputs["time_pad"] != "zeros" or inputs["space_pad"] != "zeros":
            res["mode_matters"] = bool((ref_with(inputs, time_pad="zeros", space_pad="zeros", cache=None)
                                        - ref).abs().max() > 0.05)
        if inputs["cache"] is not None:
            res["cache_matters"] = bool((ref_with(inputs, cache=torch.zeros_like(inputs["cache"])) - ref).abs().max()
                                        > 0.05)
        if "out_buf" in inputs:
            buf, K = inputs["out_buf"], point["K"]
            res["wrote_in_place"] = bool(out.data_ptr() == inputs["out"].data_ptr())
            res["pad_channels_nan"] = bool(buf[:, :O_COL0].isnan().all() and buf[:, O_COL0 + K:].isnan().all())
        return res

    H.run_cases(KERNEL, CASES[KERNEL], prepare=_prepare, extra=extra)


if __name__ == "__main__":
    _run()
