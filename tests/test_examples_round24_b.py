"""examples/roi_align.py (RoIAlign forward on an NHWC feature map: Detectron2's ROIAlignV2 / torchvision's
roi_align, adaptive or fixed sampling, aligned or not; out [R, PH, PW, C]; a program per RoI x TILE_B bins
x TILE_C channels running the data-dependent sample loops over four [TILE_B, TILE_C] gathers) against its
torch reference on the CPU through Triton's interpreter, the torch reference against a scalar transcription
of torchvision's CUDA kernel, its launcher hooks against the shapes, its study sweep against the points,
and a compile for sm_90 and sm_120 from its own ``example_args``.

As in test_examples_round23_a.py the interpreter cases run in a subprocess (this file run as a script:
``python tests/test_examples_round24_b.py roi_align``) that prints one JSON line. The interpreter's fp32 ->
bf16 conversion truncates; the subprocess replaces it with torch's round-to-nearest-even (the GPU's cvt.rn),
and under triton 3.6 with numpy >= 2.3 it lets the sample loops' runtime bounds (gh, gw: computed from the
box when sampling is adaptive) be read as ints (see example_harness.patch_interpreter_index).

torchvision is not installed here (nor in the GPU machine's environment, as far as this file knows): the
launcher's reference is then its own roi_align_torch, which test_reference_matches_torchvision_kernel checks
against a one-output-at-a-time transcription of torchvision's roi_align_forward_kernel_impl (and against
torchvision itself where it imports).

Shapes are small, odd and ragged: PH != PW (3x5, 2x3), 7x7 bins in blocks of 8 (the last block one real
bin and seven padding lanes), bins a multiple of the block (EVEN) and not; C = 8, 16, 24, 32, 40, 256
(TILE_C clamped to next_pow2(C), the channel tail masked or not); adaptive sampling (gh, gw from 1 to 4)
and fixed 1 / 2 / 3; aligned and not (tiny boxes whose size is clamped to 1); boxes partly or wholly off
the map (samples past -1 / H / W: masked, contributing 0), reaching the last row / column (the clamp to
H - 1 / W - 1 with zero high weight), degenerate (x2 < x1 with aligned: no samples, zeros); feat a channel
slice of a wider map (read in place) and a channel-strided one (made contiguous); every dtype; BLOCK_B 1-8,
BLOCK_C 16-256, 4-16 warps, num_stages 1 / 2.

Per case: launch's output against the fp32 reference as the GPU study's gate sees it (the harness's
tolerance x max|ref|), its shape, dtype and contiguity, the degenerate box's zero rows, and torch_baseline
against the reference too.
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
KERNEL = "roi_align"
ROLE = "held-out-24"
H200_SMS = 132
SM120_SMEM_PER_BLOCK = 99 * 1024

# the study's sweep (scripts/rank_study.py SWEEPS["roi_align"] once the lead adds it)
SWEEP_AXES = {"BLOCK_B": [1, 2, 4, 8], "BLOCK_C": [32, 64, 128, 256], "num_warps": [4, 8, 16], "num_stages": [1]}


def _cfg(bb, bc, w=4, st=1):
    return {"BLOCK_B": bb, "BLOCK_C": bc, "num_warps": w, "num_stages": st}


def _pt(N, Hh, Ww, C, R, PH, PW, stride, sr, aligned, dtype, lo, hi):
    return {"N": N, "H": Hh, "W": Ww, "C": C, "R": R, "PH": PH, "PW": PW, "stride": stride, "sampling_ratio": sr,
            "aligned": aligned, "dtype": dtype, "box_min": lo, "box_max": hi}


# case -> (point, cfg); comments: bins / TILE_B -> bin blocks, C / TILE_C -> channel blocks, programs
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        # adaptive + aligned, fp32; 3x5 = 15 bins / 4 -> 4 blocks (the last with one padding lane), C 24 / 16
        # -> 2 blocks (the tail masked): 6 x 4 x 2 = 48 programs; EDGES puts boxes off the map, over its
        # bottom-right corner, a degenerate one (x2 < x1) and the whole image (gh = gw = 3)
        "adaptive_aligned_fp32_edges": (_pt(2, 9, 11, 24, 6, 3, 5, 4, 0, True, "fp32", 4, 48), _cfg(4, 16, 4)),
        # fixed 2x2 sampling, not aligned, fp16; boxes of 0.5-6 map pixels (the roi size clamped to 1);
        # 16 bins / 8 (EVEN), C 32 / 32: 5 x 2 programs, 8 warps, num_stages 2
        "fixed2_unaligned_fp16": (_pt(2, 8, 8, 32, 5, 4, 4, 2, 2, False, "fp16", 1, 12), _cfg(8, 32, 8, 2)),
        # adaptive, bf16, one bin a program (TILE_B 1), C 40 -> TILE_C 64 (clamped, the tail masked), 16
        # warps; boxes of 1-8 map pixels on 2x2 bins (gh, gw 1-4): 5 x 4 programs
        "adaptive_bf16_one_bin": (_pt(3, 6, 7, 40, 5, 2, 2, 8, 0, True, "bf16", 8, 64), _cfg(1, 64, 16)),
        # fixed 1x1 sampling (the bin centre), fp32, feat the channels 3:19 of a 24-channel map (read in
        # place: strides (7 9 24, 9 24, 24, 1)); 2x3 bins / 2 (EVEN), C 16: 6 x 3 programs
        "fixed1_sliced_fp32": (_pt(2, 7, 9, 16, 6, 2, 3, 4, 1, True, "fp32", 4, 40), _cfg(2, 32, 4)),
        # fixed 3x3 sampling, fp16, 7x7 bins / 8 -> 7 blocks (the last one real bin, seven padding lanes
        # redoing it), C 16 < BLOCK_C 128; BIG adds a box reaching far below the map (samples past H,
        # masked) and one over the whole map: 3 x 7 programs of 9 samples
        "fixed3_fp16_big": (_pt(1, 10, 6, 16, 3, 7, 7, 4, 3, True, "fp16", 20, 80), _cfg(8, 128, 4)),
        # adaptive, not aligned, bf16, feat channel-strided (an NCHW tensor's permute: made contiguous);
        # C 8 -> TILE_C 8, 3x3 bins / 2 -> 5 blocks: 4 x 5 programs, 16 warps, num_stages 2
        "adaptive_unaligned_strided_bf16": (_pt(2, 5, 6, 8, 4, 3, 3, 4, 0, False, "bf16", 2, 30), _cfg(2, 32, 16, 2)),
        # the FPN width: C 256 in one TILE_C 256 block, fixed 2x2, fp32, 2x2 bins / 4: 2 programs, 16 warps
        "c256_fixed2_fp32": (_pt(1, 4, 5, 256, 2, 2, 2, 4, 2, True, "fp32", 4, 16), _cfg(4, 256, 16)),
    },
}
EDGES, BIG = "adaptive_aligned_fp32_edges", "fixed3_fp16_big"
SLICED, STRIDED = "fixed1_sliced_fp32", "adaptive_unaligned_strided_bf16"
DEGENERATE = 2                       # EDGES's box with x2 < x1

# configs compiled at the module's first POINT (sm_90: BASELINE first)
COMPILE_CFGS = [_cfg(8, 128, 4), _cfg(8, 256, 4), _cfg(1, 32, 16), _cfg(4, 64, 8), _cfg(1, 256, 4)]
SM120_CFGS = [_cfg(8, 128, 4), _cfg(8, 256, 4), _cfg(1, 32, 16)]


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """EDGES: boxes 0-3 replaced by edge cases (image 44 x 36 px at stride 4); BIG: box 0 reaches far below
    the map, box 1 covers it all; SLICED: feat the channels 3:3+C of a wider map; STRIDED: feat an NCHW
    tensor's NHWC view (channel stride H W)."""
    import torch

    if name == EDGES:
        inputs["boxes"][:4] = torch.tensor([[0.0, -10.0, -8.0, 5.0, 3.0],       # partly off the top-left
                                            [1.0, 30.0, 20.0, 60.0, 50.0],      # over the bottom-right
                                            [0.0, 20.0, 10.0, 12.0, 18.0],      # x2 < x1: no samples
                                            [1.0, 0.0, 0.0, 44.0, 36.0]])       # the whole image
    if name == BIG:
        inputs["boxes"][:2] = torch.tensor([[0.0, 2.0, 30.0, 20.0, 90.0], [0.0, 0.0, 0.0, 24.0, 40.0]])
    x = inputs["feat"]
    N, Hh, Ww, C = x.shape
    if name == SLICED:
        wide = torch.full((N, Hh, Ww, C + 8), 7.0, dtype=x.dtype)
        wide[..., 3:3 + C] = x
        inputs["feat"] = wide[..., 3:3 + C]
    if name == STRIDED:
        inputs["feat"] = x.permute(0, 3, 1, 2).contiguous().permute(0, 2, 3, 1)


# ----------------------------------------------------------------- a scalar transcription of torchvision
def _torchvision_kernel(feat, boxes, PH, PW, scale, sr, aligned):
    """torchvision's roi_align_forward_kernel_impl one output bin at a time (fp32 scalars), feat [N, H, W, C]."""
    import torch

    f = lambda v: torch.tensor(v, dtype=torch.float32)        # noqa: E731
    N, Hh, Ww, C = feat.shape
    out = torch.zeros((boxes.shape[0], PH, PW, C))
    for r, b in enumerate(boxes.float()):
        n = int(b[0])
        off, s = f(0.5 if aligned else 0.0), f(scale)
        xs, ys = b[1] * s - off, b[2] * s - off
        rw, rh = b[3] * s - off - xs, b[4] * s - off - ys
        if not aligned:
            rw, rh = torch.maximum(rw, f(1.0)), torch.maximum(rh, f(1.0))
        bh, bw = rh / PH, rw / PW
        gh = sr if sr > 0 else math.ceil(float(rh / PH))
        gw = sr if sr > 0 else math.ceil(float(rw / PW))
        for ph in range(PH):
            for pw in range(PW):
                acc = torch.zeros(C)
                for iy in range(gh):
                    y = ys + ph * bh + f(iy + 0.5) * bh / f(gh)
                    for ix in range(gw):
                        x = xs + pw * bw + f(ix + 0.5) * bw / f(gw)
                        if y < -1.0 or y > Hh or x < -1.0 or x > Ww:
                            continue
                        yy, xx = torch.clamp(y, min=0.0), torch.clamp(x, min=0.0)
                        yl, xl = int(yy), int(xx)
                        if yl >= Hh - 1:
                            yh = yl = Hh - 1
                            yy = f(yl)
                        else:
                            yh = yl + 1
                        if xl >= Ww - 1:
                            xh = xl = Ww - 1
                            xx = f(xl)
                        else:
                            xh = xl + 1
                        ly, lx = yy - yl, xx - xl
                        hy, hx = 1 - ly, 1 - lx
                        acc += (hy * hx * feat[n, yl, xl] + hy * lx * feat[n, yl, xh] + ly * hx * feat[n, yh, xl]
                                + ly * lx * feat[n, yh, xh])
                out[r, ph, pw] = acc / max(gh * gw, 1)
    return out


def _touched_brute(point) -> int:
    """Map pixels the taps of the seed-0 boxes' valid samples touch, one sample at a time."""
    import torch

    mod = load_example(KERNEL)
    boxes = mod.make_boxes(point, 0)
    N, Hh, Ww, PH, PW = (point[k] for k in ("N", "H", "W", "PH", "PW"))
    f = lambda v: torch.tensor(v, dtype=torch.float32)        # noqa: E731
    off, s = f(0.5 if point["aligned"] else 0.0), f(1.0 / point["stride"])
    seen = set()
    for b in boxes:
        n = int(b[0])
        xs, ys = b[1] * s - off, b[2] * s - off
        rw, rh = b[3] * s - off - xs, b[4] * s - off - ys
        if not point["aligned"]:
            rw, rh = torch.maximum(rw, f(1.0)), torch.maximum(rh, f(1.0))
        bh, bw = rh / PH, rw / PW
        sr = point["sampling_ratio"]
        gh = sr if sr > 0 else math.ceil(float(rh / PH))
        gw = sr if sr > 0 else math.ceil(float(rw / PW))
        for ph, pw, iy, ix in itertools.product(range(PH), range(PW), range(gh), range(gw)):
            y = float(ys + ph * bh + f(iy + 0.5) * bh / f(gh))
            x = float(xs + pw * bw + f(ix + 0.5) * bw / f(gw))
            if y < -1.0 or y > Hh or x < -1.0 or x > Ww:
                continue
            yl, xl = min(int(max(y, 0.0)), Hh - 1), min(int(max(x, 0.0)), Ww - 1)
            for yy, xx in itertools.product((yl, min(yl + 1, Hh - 1)), (xl, min(xl + 1, Ww - 1))):
                seen.add((n, yy, xx))
    return len(seen)


# ----------------------------------------------------------------- the pytest side
def _results() -> dict:
    return H.interpreter_results(HERE, KERNEL)


@pytest.mark.parametrize("name", list(CASES[KERNEL]))
def test_example_matches_reference(name):
    res = _results()[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    p = CASES[KERNEL][name][0]
    assert res["shape"] == [p["R"], p["PH"], p["PW"], p["C"]]
    assert res["dtype"] == p["dtype"] and res["contiguous"] is True, res
    assert res["n_bad"] == 0, H.mismatch(res, f"{name} launch")
    assert res["baseline"]["n_bad"] == 0, H.mismatch(res["baseline"], f"{name} torch_baseline")
    assert res["ref_nonzero"] > 0.5, res          # the reference is not trivially zero
    if name == EDGES:
        assert res["zero_boxes"] == [DEGENERATE] and res["ref_zero_boxes"] == [DEGENERATE], res
    else:
        assert res["zero_boxes"] == [], res
    if name == SLICED:
        assert res["feat_strides"] == [7 * 9 * 24, 9 * 24, 24, 1], res
    if name == STRIDED:
        assert res["feat_strides"][3] == p["H"] * p["W"], res


def test_cases_cover_every_code_path():
    """Every tunable at >= 2 values (the swept ranges bracketed); every dtype; adaptive and fixed sampling;
    aligned and not; bins a multiple of TILE_B and not (a block with padding lanes only past its first);
    the channel tail masked and not (TILE_C clamped to next_pow2(C) too); several programs a case."""
    H.assert_tunables_covered(CASES)
    mod = load_example(KERNEL)
    cases = list(CASES[KERNEL].values())
    assert {p["dtype"] for p, _ in cases} == set(mod.DTYPES)
    assert {p["sampling_ratio"] for p, _ in cases} >= {0, 1, 2, 3}
    assert {(p["sampling_ratio"] == 0, p["aligned"]) for p, _ in cases} == {(True, True), (True, False),
                                                                             (False, True), (False, False)}
    derived = [mod.example_args(c, p) for p, c in cases]
    assert {(p["PH"] * p["PW"]) % a["TILE_B"] == 0 for (p, _), a in zip(cases, derived)} == {True, False}
    assert any(p["PH"] * p["PW"] % a["TILE_B"] == 1 and a["TILE_B"] == 8 for (p, _), a in zip(cases, derived))
    assert {a["EVEN_C"] for a in derived} == {0, 1}
    assert any(a["TILE_C"] < c["BLOCK_C"] for (_, c), a in zip(cases, derived))
    assert any(a["TILE_C"] == 256 for a in derived) and any(a["TILE_B"] == 1 for a in derived)
    assert any(p["PH"] != p["PW"] for p, _ in cases)
    assert all(mod.grid(c, p)[0] > 1 for p, c in cases)
    for k in ("BLOCK_B", "BLOCK_C", "num_warps"):
        tested = {c[k] for _, c in cases}
        assert min(tested) <= min(SWEEP_AXES[k]) and max(tested) >= max(SWEEP_AXES[k]), (k, tested)


def test_reference_matches_torchvision_kernel():
    """roi_align_torch (the reference without torchvision) equals the scalar transcription of torchvision's
    kernel to fp32 rounding, on boxes off the map, over its corner, degenerate, tiny (clamped) and huge, for
    adaptive and fixed 1 / 2 / 3 sampling, aligned or not; and torchvision itself where it imports."""
    import torch

    mod = load_example(KERNEL)
    g = torch.Generator().manual_seed(0)
    feat = torch.randn(2, 7, 9, 5, generator=g)
    boxes = torch.tensor([[0, 1.0, 2.0, 20.0, 15.0], [1, -10.0, -8.0, 5.0, 3.0], [1, 30.0, 20.0, 45.0, 40.0],
                          [0, 5.0, 5.0, 3.0, 4.0], [1, 0.0, 0.0, 36.0, 28.0], [0, 10.0, 10.0, 10.5, 10.2],
                          [1, -20.0, 5.0, -6.0, 9.0], [0, 2.0, 3.0, 60.0, 50.0], [1, 3.3, 7.1, 29.9, 12.4]])
    tv = mod._torchvision()
    for sr, aligned in itertools.product((0, 1, 2, 3), (True, False)):
        want = _torchvision_kernel(feat, boxes, 3, 4, 0.25, sr, aligned)
        got = mod.roi_align_torch(feat, boxes, (3, 4), 0.25, sr, aligned)
        assert got.shape == (9, 3, 4, 5) and got.dtype == torch.float32
        assert torch.allclose(got, want, rtol=0, atol=2e-6), (sr, aligned, float((got - want).abs().max()))
        assert float(want[6].abs().max()) == 0.0                     # wholly left of the map: every sample off it
        # x2 < x1: adaptive + aligned gives gw <= 0, no samples; a fixed grid samples the reversed box
        assert (float(want[3].abs().max()) == 0.0) == (aligned and sr == 0)
        if tv is not None:
            ref = tv.roi_align(feat.permute(0, 3, 1, 2), boxes, (3, 4), 0.25, sr, aligned).permute(0, 2, 3, 1)
            assert torch.allclose(got, ref, rtol=0, atol=2e-6)
    # the degenerate box (x2 < x1) pools to zeros when aligned; the box wholly left of the map too
    out = mod.roi_align_torch(feat, boxes, 2, 0.25, 0, True)
    assert float(out[3].abs().max()) == 0.0 and float(out[6].abs().max()) == 0.0
    assert float(out[0].abs().max()) > 0.1


def test_launcher_hooks_agree_with_shapes():
    """At every point and sweep config: example_args on meta with the launch's shapes, dtypes and strides,
    the derived tiles, blocks, SAMPLING / ALIGNED / EVEN_C, the grid (>= 4 waves on an H200) and the sample
    loops' trips; bytes_moved / flops from the seed-0 boxes; inputs < 4 GB; 100 MB - 2 GB of traffic."""
    import torch

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "example_args", "torch_baseline", "roi_align", "roi_align_torch", "make_boxes"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert not hasattr(mod, "secondary_kernels") and not hasattr(mod, "cta_iterations")
    assert mod.ROLE == ROLE and mod.SWEEP_AXES == SWEEP_AXES
    assert len(mod.POINTS) == 3 and mod.BASELINE["num_stages"] == 1
    dts = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}
    size = {"fp16": 2, "bf16": 2, "fp32": 4}
    cfgs = [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]
    for p in mod.POINTS:
        N, Hh, Ww, C, R, PH, PW = (p[k] for k in ("N", "H", "W", "C", "R", "PH", "PW"))
        e = size[p["dtype"]]
        # the sample grid of each seed-0 box, computed here directly (fp32, as torchvision)
        b = mod.make_boxes(p, 0)
        assert b.shape == (R, 5) and b.dtype == torch.float32
        off = 0.5 if p["aligned"] else 0.0
        s = 1.0 / p["stride"]
        rw, rh = (b[:, 3] * s - off) - (b[:, 1] * s - off), (b[:, 4] * s - off) - (b[:, 2] * s - off)
        if not p["aligned"]:
            rw, rh = rw.clamp(min=1.0), rh.clamp(min=1.0)
        if p["sampling_ratio"]:
            trips = torch.full((R,), p["sampling_ratio"] ** 2)
        else:
            trips = (torch.ceil(rh / PH) * torch.ceil(rw / PW)).clamp(min=0)
        for cfg in cfgs:
            a = mod.example_args(cfg, p)
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for v in a.values())
            assert a["FEAT"].shape == (N, Hh, Ww, C) and a["FEAT"].dtype == dts[p["dtype"]]
            assert a["FEAT"].is_contiguous()
            assert a["BOXES"].shape == (R, 5) and a["BOXES"].dtype == torch.float32
            assert a["OUT"].shape == (R, PH, PW, C) and a["OUT"].dtype == dts[p["dtype"]]
            assert (a["H"], a["W"], a["C"], a["PH"], a["PW"]) == (Hh, Ww, C, PH, PW)
            assert (a["stride_fn"], a["stride_fh"], a["stride_fw"]) == (Hh * Ww * C, Ww * C, C)
            assert a["spatial_scale"] == 1.0 / p["stride"]
            assert (a["SAMPLING"], a["ALIGNED"]) == (p["sampling_ratio"], int(p["aligned"]))
            assert (a["TILE_B"], a["TILE_C"]) == (cfg["BLOCK_B"], cfg["BLOCK_C"])      # nothing clamps here
            nbb, ncb = -(-PH * PW // cfg["BLOCK_B"]), C // cfg["BLOCK_C"]
            assert (a["n_bin_blocks"], a["n_c_blocks"], a["EVEN_C"]) == (nbb, ncb, 1)
            assert mod.grid(cfg, p) == (R * nbb * ncb,)
            assert mod.grid(cfg, p)[0] >= 4 * H200_SMS
            assert mod.loop_iterations(cfg, p) == max(1, round(float(trips.sum()) / R))
        touched = mod._plan(mod._key(p))[0]
        assert 0.5 * N * Hh * Ww <= touched <= N * Hh * Ww
        assert mod.bytes_moved(p) == touched * C * e + 20 * R + R * PH * PW * C * e
        assert mod.flops(p) == 8 * int(trips.sum()) * PH * PW * C + R * PH * PW * C
        assert e * N * Hh * Ww * C + 20 * R + e * R * PH * PW * C < 4 * 2**30
        assert 100e6 <= mod.bytes_moved(p) <= 2e9
    # the points differ: pooled size, sampling, alignment, dtype, reads against writes
    pts = mod.POINTS
    assert {(p["PH"], p["PW"]) for p in pts} == {(7, 7), (14, 14)}
    assert {p["sampling_ratio"] for p in pts} == {0, 2} and {p["aligned"] for p in pts} == {True, False}
    assert {p["dtype"] for p in pts} == set(mod.DTYPES)
    assert [mod.loop_iterations(mod.BASELINE, p) for p in pts] == [6, 4, 3]
    reads = [mod._plan(mod._key(p))[0] * p["C"] * size[p["dtype"]] for p in pts]
    writes = [p["R"] * p["PH"] * p["PW"] * p["C"] * size[p["dtype"]] for p in pts]
    assert reads[0] > 2 * writes[0] and reads[2] < 0.25 * writes[2]


def test_hooks_on_small_points_and_inputs():
    """make_inputs / make_boxes: shapes, dtypes, the seed, boxes inside the image, sorted batch indices, box
    sizes in the point's band; _plan's touched pixels against a one-sample-at-a-time count; launch's
    wrapper returns an empty [0, PH, PW, C] for no boxes; reference == roi_align_torch here."""
    import torch

    mod = load_example(KERNEL)
    p = _pt(3, 10, 12, 8, 40, 3, 2, 4, 0, True, "bf16", 8, 32)
    inp = mod.make_inputs(p, seed=1, device="cpu")
    feat, boxes = inp["feat"], inp["boxes"]
    assert feat.shape == (3, 10, 12, 8) and feat.dtype == torch.bfloat16 and feat.is_contiguous()
    assert boxes.shape == (40, 5) and boxes.dtype == torch.float32
    assert inp["output_size"] == (3, 2) and inp["spatial_scale"] == 0.25
    assert inp["sampling_ratio"] == 0 and inp["aligned"] is True
    assert torch.equal(boxes[:, 0], torch.tensor([0.0] * 14 + [1.0] * 13 + [2.0] * 13))
    assert float(boxes[:, 1:].min()) >= 0.0 and float(boxes[:, [1, 3]].max()) <= 48.0
    assert float(boxes[:, [2, 4]].max()) <= 40.0
    assert bool((boxes[:, 3] >= boxes[:, 1]).all() and (boxes[:, 4] >= boxes[:, 2]).all())
    area = ((boxes[:, 3] - boxes[:, 1]) * (boxes[:, 4] - boxes[:, 2])).sqrt()
    assert float(area.max()) < 32.0 and float(area.median()) > 8.0
    assert torch.equal(mod.make_inputs(p, seed=1, device="cpu")["feat"], feat)
    assert torch.equal(mod.make_boxes(p, 1), boxes) and not torch.equal(mod.make_boxes(p, 2), boxes)
    assert not torch.equal(mod.make_inputs(p, seed=2, device="cpu")["feat"], feat)
    assert torch.equal(mod.reference(inp), mod.roi_align_torch(feat.float(), boxes, (3, 2), 0.25, 0, True))
    assert mod.torch_baseline(inp).dtype == torch.bfloat16
    # adaptive; fixed 2x2 unaligned; 7x7 bins of boxes larger than the 5x5 map (most samples off it)
    smalls = (p, _pt(2, 6, 9, 4, 12, 2, 2, 8, 2, False, "fp32", 4, 40), _pt(1, 5, 5, 4, 6, 7, 7, 2, 0, True, "fp16", 20, 40))
    for q in smalls:
        assert mod._plan(mod._key(q))[0] == _touched_brute(q), q
    out = mod.roi_align(feat, boxes[:0], (7, 7), 0.25)
    assert out.shape == (0, 7, 7, 8) and out.dtype == torch.bfloat16


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    x = torch.ones(1, 4, 4, 8)
    b = torch.tensor([[0.0, 0.0, 0.0, 8.0, 8.0]])
    with pytest.raises(ValueError, match="BLOCK_B=3"):
        mod.roi_align(x, b, 2, 0.5, BLOCK_B=3)
    with pytest.raises(ValueError, match="BLOCK_C=48"):
        mod.roi_align(x, b, 2, 0.5, BLOCK_C=48)
    with pytest.raises(ValueError, match="num_warps=6"):
        mod.roi_align(x, b, 2, 0.5, num_warps=6)
    with pytest.raises(ValueError, match="num_stages=0"):
        mod.roi_align(x, b, 2, 0.5, num_stages=0)
    with pytest.raises(ValueError, match="output_size=0"):
        mod.roi_align(x, b, 0, 0.5)
    with pytest.raises(ValueError, match=r"output_size=\(7, 7, 7\)"):
        mod.roi_align(x, b, (7, 7, 7), 0.5)
    with pytest.raises(ValueError, match="spatial_scale=0"):
        mod.roi_align(x, b, 2, 0)
    with pytest.raises(ValueError, match="sampling_ratio=-1"):
        mod.roi_align(x, b, 2, 0.5, sampling_ratio=-1)
    with pytest.raises(ValueError, match="expected feat"):
        mod.roi_align(torch.ones(4, 4, 8), b, 2, 0.5)
    with pytest.raises(ValueError, match="fp16 / bf16 / fp32"):
        mod.roi_align(x.double(), b, 2, 0.5)
    with pytest.raises(ValueError, match=r"boxes must be a float tensor \[R, 5\]"):
        mod.roi_align(x, b[:, :4], 2, 0.5)
    with pytest.raises(ValueError, match=r"boxes must be a float tensor \[R, 5\]"):
        mod.roi_align(x, b.long(), 2, 0.5)
    with pytest.raises(ValueError, match="is empty"):
        mod.roi_align(torch.ones(0, 4, 4, 8), b, 2, 0.5)
    with pytest.raises(ValueError, match="dtype 'fp8'"):
        mod.make_inputs(_pt(1, 4, 4, 8, 2, 2, 2, 4, 0, True, "fp8", 4, 8), device="cpu")
    with pytest.raises(ValueError, match="R=0"):
        mod.grid(mod.BASELINE, _pt(1, 4, 4, 8, 0, 2, 2, 4, 0, True, "fp16", 4, 8))
    with pytest.raises(ValueError, match="sampling_ratio=-2"):
        mod.bytes_moved(_pt(1, 4, 4, 8, 2, 2, 2, 4, -2, True, "fp16", 4, 8))
    with pytest.raises(ValueError, match="box_min=9"):
        mod.loop_iterations(mod.BASELINE, _pt(1, 4, 4, 8, 2, 2, 2, 4, 0, True, "fp16", 9, 8))


def test_sweep_fits_the_points():
    """The study sweep: 48 configs (BLOCK_B 1-8 bins x BLOCK_C 32-256 channels x 4 / 8 / 16 warps, num_stages
    1: 1/16 to 16 outputs a thread) with BASELINE among them; at every point each config is valid and
    launches >= 4 waves of programs on an H200 (51 thousand to 10 million programs). (Every config was
    compiled with triton 3.6.0 at every point for sm_90 and sm_120, 288 compiles: all compile, none spills,
    no shared memory, 32-96 registers. Under triton 3.9 the fp32 point's BLOCK_B 4 x BLOCK_C 256 x 4 warps
    keeps 8 bytes on the stack (ptxas squeezing to 56 registers); the first point is clean there too.
    num_stages: gathers and no dot, nothing pipelined, hence the one value.)"""
    mod = load_example(KERNEL)
    axes = SWEEP_AXES
    assert set(axes) == set(mod.TUNABLES)
    assert all(len(v) >= 2 for k, v in axes.items() if k != "num_stages") and axes["num_stages"] == [1]
    cfgs = [dict(zip(axes, v)) for v in itertools.product(*axes.values())]
    assert 45 <= len(cfgs) <= 72 and mod.BASELINE in cfgs
    for p in mod.POINTS:
        for c in cfgs:
            mod._check_cfg(c)
            assert mod.grid(c, p)[0] >= 4 * H200_SMS, (p, c)
            assert mod.loop_iterations(c, p) >= 1


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
    """On sm_90: BASELINE and four more at the first point (the fp16 7x7 box head, adaptive sampling)
    compile without spills or shared memory; and BASELINE and the widest tile at the other two points (the
    fp32 fixed-sampling and the bf16 adaptive 14x14 heads)."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    assert COMPILE_CFGS[0] == mod.BASELINE
    for cfg, res in H.compile_results(KERNEL, COMPILE_CFGS, "sm_90"):
        assert res.status == "ok", f"{cfg} on sm_90: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.shared == 0 and res.n_spills == 0, (cfg, res.n_regs, res.n_spills, res.shared)
    for p in mod.POINTS[1:]:
        for cfg in COMPILE_CFGS[:2]:
            res = compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch="sm_90",
                                 num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
            assert res.status == "ok" and res.n_spills == 0 and res.shared == 0, (cfg, res.message, res.n_spills)


@pytest.mark.slow
def test_example_compiles_sm120(shared_cache):
    for cfg, res in H.compile_results(KERNEL, SM120_CFGS, "sm_120"):
        assert res.status == "ok", f"{cfg} on sm_120: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.shared <= SM120_SMEM_PER_BLOCK and res.n_spills == 0, (cfg, res.n_spills)


# ----------------------------------------------------------------- the subprocess side
def _run() -> None:
    """Every case through launch against reference (as the GPU study's gate) and torch_baseline against it;
    the output's dtype and contiguity, feat's strides, the boxes pooled to all zeros; one JSON line."""
    import torch

    H.patch_interpreter_bf16_rounding()
    H.patch_interpreter_index()
    mod = load_example(KERNEL)
    names = {torch.float16: "fp16", torch.bfloat16: "bf16", torch.float32: "fp32"}

    def zero_boxes(t):
        return [int(i) for i in torch.nonzero(t.float().abs().amax(dim=(1, 2, 3)) == 0).flatten()]

    def extra(name, point, inputs, out, ref):
        return {"dtype": names.get(out.dtype), "contiguous": bool(out.is_contiguous()),
                "feat_strides": list(inputs["feat"].stride()), "zero_boxes": zero_boxes(out),
                "ref_zero_boxes": zero_boxes(ref), "ref_nonzero": float((ref != 0).float().mean())}

    H.run_cases(KERNEL, CASES[KERNEL], prepare=_prepare, baseline=True, extra=extra)


if __name__ == "__main__":
    _run()
