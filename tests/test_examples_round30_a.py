"""examples/grid_sample_bilinear.py (torch.nn.functional.grid_sample forward, bilinear, zeros padding,
align_corners False / True: input [N, C, H, W] NCHW or channels_last, grid [N, Ho, Wo, 2] of loaded
normalized positions, out [N, C, Ho, Wo] in the input's memory format; per program BLOCK_P output pixels'
four taps, weights and in-image predicates computed once and reused over a channel group walked TILE_C
channels a step; masked gathers, dead blocks skipped) against its torch reference on the CPU through
Triton's interpreter, its launcher hooks against the shapes, its study sweep against the points, and a
compile for sm_90 and sm_120 from its own ``example_args``.

As in test_examples_round29_d.py the interpreter cases run in a subprocess (this file run as a script:
``python tests/test_examples_round30_a.py grid_sample_bilinear``) that prints one JSON line. The
subprocess installs the harness's interpreter fixes (bf16 rounding; under triton 3.6 with numpy >= 2.3
the runtime loop bounds read as ints).

Shapes are small, odd and ragged: both layouts with both align_corners; the three grid kinds the module
draws (flow warps, resampling flow at another output size, a 6-camera BEV voxel grid with most blocks off
every image, EG3D-style ray samples on tri-planes, one row of 96); image sizes 1-13 (a one-column image,
Wo 1), pixel counts ragged against BLOCK_P 16-256 and blocks straddling output rows; C 1-32 against tiles
of 1-16 (EVEN_C both ways in both layouts, a padded tile), channel groups 1 / 2 / 2 uneven (3 tiles), one
group asked for two; the grid non-flat (a column slice of a NaN-padded wider grid), in torch's flow layout
([N, 2, Ho, Wo] permuted: the coordinate stride Ho Wo), in bf16 (torch's same-dtype call); the input a
channel and column slice of a NaN-filled buffer (NCHW), a channel slice of a NaN-padded channels_last
buffer (NHWC, 4-byte aligned rows), expanded over N (stride 0); positions on exact pixel centres and image
edges, just outside, far outside (1e9), NaN and +-inf; a grid entirely off the image (every block dead);
fp16, bf16, fp32; BLOCK_P 16-256, BLOCK_C 2-16, C_SPLIT 1 / 2, 4 / 8 warps, num_stages 1 / 2.

Per case: launch's output within the dtype's tolerance of the fp64 reference (the harness's per-element
check; no NaN from the poisoned buffers) and each element within half an ulp of its dtype of its own value
plus (4e-7 (H + W) + 1e-6) times the summed magnitude of its taps on the image (fp32 coordinates: the
weights' error multiplies every tap, however small its weight; fp32 blend); exact zeros where
every tap is off the image; out fresh, in the input's dtype and memory format; the inputs unchanged; the
flags the launch used (layout, grid walk, EVEN_C, the groups) as the case intends; live and dead blocks
where the case has them; align_corners changing the result; torch_baseline (torch's kernel, autocast-style
for an fp32 grid with a 16-bit input) within tolerance where torch's CPU kernel is defined (not at the
non-finite positions, where it returns NaN; with a bf16 grid it unnormalizes in bf16: within 0.1).
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
KERNEL = "grid_sample_bilinear"
ROLE = "held-out-30"
H200_SMS = 132
SM90_SMEM_PER_BLOCK = 227 * 1024
SM120_SMEM_PER_BLOCK = 99 * 1024

# the study's sweep (scripts/rank_study.py SWEEPS["grid_sample_bilinear"] once the lead adds it)
SWEEP_AXES = {"BLOCK_P": [64, 128, 256], "BLOCK_C": [2, 4, 8, 16], "C_SPLIT": [1, 2], "num_warps": [4, 8],
              "num_stages": [1]}


def _cfg(bp, bc, split=1, w=4, st=1):
    return {"BLOCK_P": bp, "BLOCK_C": bc, "C_SPLIT": split, "num_warps": w, "num_stages": st}


def _pt(N, C, H_, W, Ho, Wo, align=0, layout="NCHW", dtype="fp32", field="flow"):
    return {"N": N, "C": C, "H": H_, "W": W, "Ho": Ho, "Wo": Wo, "align_corners": align, "layout": layout,
            "dtype": dtype, "field": field}


# case -> (point, cfg); comments: ALIGN, layout, GRID_FLAT, EVEN_C, TILE_C x tiles -> groups (iters)
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        # a flow warp (BasicVSR++'s flow_warp): align 1, NCHW, flat, EVEN_C 0 (C 5: tiles of 4, the second
        # padded) -> 2 groups of 1; 117 pixels in blocks of 64 (ragged, straddling rows)
        "flow_nchw_fp16": (_pt(2, 5, 9, 13, 9, 13, 1, "NCHW", "fp16"), _cfg(64, 4, 2, 4)),
        # resampling flow (out 11 x 6 from 7 x 10): align 0, NHWC, flat, EVEN_C 0 (C 24, tiles of 16) -> 2
        # groups; BLOCK_P 16 (5 blocks, the last ragged)
        "resample_nhwc_bf16": (_pt(2, 24, 7, 10, 11, 6, 0, "NHWC", "bf16"), _cfg(16, 16, 2, 4, 2)),
        # Simple-BEV lifting scaled down: 6 cameras, 2 x 8 x 20 voxels; align 0, NHWC, EVEN_C 1 (C 16, tiles
        # of 8) -> one group of 2; dead blocks (behind every camera) and live ones
        "bev_nhwc_fp16": (_pt(6, 16, 5, 9, 16, 20, 0, "NHWC", "fp16", "bev"), _cfg(32, 8, 1, 8)),
        # EG3D-style: 1 scene x 3 planes, 2 rays x 48 samples (Ho 1); align 0, NCHW, EVEN_C 0 (C 6: one tile
        # of 8, 2 padded planes)
        "rays_nchw_fp32": (_pt(3, 6, 12, 12, 1, 96, 0, "NCHW", "fp32", "rays"), _cfg(64, 8, 1, 4)),
        # the grid a column slice of a NaN-padded wider grid (GRID_FLAT 0: (i, j) decoded); align 1, NCHW,
        # EVEN_C 1 (C 8: one tile), C_SPLIT 2 asked for one tile -> one group; 8 warps
        "grid_slice_bf16": (_pt(2, 8, 10, 11, 7, 13, 1, "NCHW", "bf16"), _cfg(128, 8, 2, 8, 2)),
        # the grid in torch's flow layout [N, 2, Ho, Wo] permuted (flat, coordinate stride Ho Wo); align 1,
        # NHWC fp32, EVEN_C 1 (C 12: 3 tiles of 4) -> groups of 2 and 1
        "flow_layout_nhwc_fp32": (_pt(2, 12, 8, 9, 8, 9, 1, "NHWC", "fp32"), _cfg(64, 4, 2, 4)),
        # input a channel and column slice of a NaN buffer (row pitch W + 5); align 0, NCHW, EVEN_C 0 (C 3 in
        # one tile of 4); one block of 256 over 63 pixels; positions up to ~4 pixels off the image
        "strided_nan_fp16": (_pt(2, 3, 7, 8, 7, 9, 0, "NCHW", "fp16"), _cfg(256, 16, 1, 8)),
        # input a channel slice of a NaN-padded channels_last buffer (pixel pitch C + 4); align 1, NHWC,
        # EVEN_C 1 (C 8: 4 tiles of 2) -> 2 groups of 2
        "nhwc_slice_nan_bf16": (_pt(2, 8, 6, 7, 9, 5, 1, "NHWC", "bf16"), _cfg(128, 2, 2, 4)),
        # a one-column image (W 1), Wo 1, C 1 (TILE_C 1): exact pixel centres, edges, just outside, 1e9,
        # NaN, +-inf; align 0, NCHW
        "nonfinite_fp32": (_pt(2, 1, 7, 1, 24, 1, 0, "NCHW", "fp32"), _cfg(16, 4, 1, 4)),
        # bf16 grid (torch's same-dtype call); align 1, NCHW, EVEN_C 1 (C 16, one tile of 16)
        "grid_bf16_bf16": (_pt(2, 16, 9, 12, 9, 12, 1, "NCHW", "bf16"), _cfg(128, 16, 1, 4)),
        # one image expanded over N 3 (stride 0), each sampled by its own flow; align 0, NHWC, EVEN_C 1
        # (C 32: 2 tiles of 16) -> one group of 2; 8 warps
        "expanded_nhwc_fp16": (_pt(3, 32, 6, 9, 6, 9, 0, "NHWC", "fp16"), _cfg(64, 16, 1, 8)),
        # every position far off the image: every block dead (zeros, no gathers); align 0, NCHW, EVEN_C 1
        # (C 16: 2 tiles of 8) -> 2 groups
        "all_dead_bf16": (_pt(2, 16, 5, 6, 5, 7, 0, "NCHW", "bf16"), _cfg(64, 8, 2, 4)),
    },
}
FLOW_LAYOUT, GRID_SLICE, STRIDED, NHWC_SLICE, NONFINITE, GRID_BF16, EXPANDED, DEAD, BEV = (
    "flow_layout_nhwc_fp32", "grid_slice_bf16", "strided_nan_fp16", "nhwc_slice_nan_bf16", "nonfinite_fp32",
    "grid_bf16_bf16", "expanded_nhwc_fp16", "all_dead_bf16", "bev_nhwc_fp16")
PAD_W, PAD_C, PAD_G = 5, 4, 3
# the one-column image's positions (gy; gx 0): pixel centres and edges (align 0: centre k at (2k + 1) / 7 - 1),
# just outside, 1e9, NaN / +-inf in either coordinate
NONFINITE_GY = [-1.0, -1.0 + 1 / 7, 0.0, 1 / 7, 1.0 - 1 / 7, 1.0, -1.2, 1.2, -1.3, 1.3, 0.35, -0.6,
                1e9, -1e9, math.nan, math.inf, -math.inf, 0.5, 0.5, 0.5, 0.999, -0.999, 1.0001, -1.0001]
NONFINITE_GX = [0.0] * 17 + [math.nan, math.inf, -math.inf, 0.0, 0.0, 0.0, 0.0]

# configs compiled on sm_90: at each point BASELINE-like and the most registers (256 pixels, 16 planes,
# 2 groups on 4 warps), plus the 8-warp corners
COMPILE_CFGS = {0: [_cfg(128, 8, 1, 4), _cfg(256, 16, 2, 4), _cfg(64, 4, 1, 8)],
                1: [_cfg(256, 16, 1, 4), _cfg(128, 8, 2, 8)],
                2: [_cfg(256, 16, 2, 4), _cfg(64, 16, 2, 8)]}
SM120_CFGS = [_cfg(128, 8, 1, 4), _cfg(256, 16, 2, 4), _cfg(64, 4, 2, 8)]


def _smem_bound(cfg) -> int:
    """An upper bound of a config's shared memory: the 1-d -> 2-d redistribution of the pixels' state
    (4 bytes a pixel) plus the CTA-wide max's scratch."""
    return 4 * cfg["BLOCK_P"] + 256


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """The strided / dtype / value variants (module doc), then copies of the inputs."""
    import torch

    x, g = inputs["input"], inputs["grid"]
    Nb, C, Hh, W = x.shape
    _, Ho, Wo, _ = g.shape
    nan = float("nan")
    if name == FLOW_LAYOUT:
        inputs["grid"] = g.permute(0, 3, 1, 2).contiguous().permute(0, 2, 3, 1)
    if name == GRID_SLICE:
        buf = torch.full((Nb, Ho, Wo + PAD_G, 2), nan, dtype=g.dtype)
        buf[:, :, :Wo] = g
        inputs["grid"] = buf[:, :, :Wo]
    if name == STRIDED:
        buf = torch.full((Nb, C + 3, Hh, W + PAD_W), nan, dtype=x.dtype)
        buf[:, 1:1 + C, :, :W] = x
        inputs["input"] = buf[:, 1:1 + C, :, :W]
        # positions up to ~4 pixels past the borders: taps next to the image would read NaN if unmasked
        inputs["grid"] = g * (1 + 6 / min(Hh, W))
    if name == NHWC_SLICE:
        buf = torch.full((Nb, Hh, W, C + PAD_C), nan, dtype=x.dtype)
        buf[..., 2:2 + C] = x.permute(0, 2, 3, 1)
        inputs["input"] = buf[..., 2:2 + C].permute(0, 3, 1, 2)
    if name == NONFINITE:
        gg = torch.tensor([NONFINITE_GX, NONFINITE_GY], dtype=torch.float32).t().reshape(1, Ho, 1, 2)
        inputs["grid"] = gg.repeat(Nb, 1, 1, 1).contiguous()
    if name == GRID_BF16:
        inputs["grid"] = g.to(torch.bfloat16)
    if name == EXPANDED:
        inputs["input"] = x[:1].expand(Nb, C, Hh, W)
    if name == DEAD:
        inputs["grid"] = torch.full_like(g, 3.0)
    for k in ("input", "grid"):
        inputs[k + "0"] = inputs[k].clone()


def _taps(inputs):
    """The fp64 taps of every position: (x0, y0, finite) [N, Ho, Wo] (floor of the unnormalized coordinate,
    clamped to [-3, size + 2]; a non-finite coordinate's position is off the image)."""
    import torch

    x, g = inputs["input"], inputs["grid"].double()
    Hh, W = x.shape[2:]
    gx, gy = g[..., 0], g[..., 1]
    if inputs["align_corners"]:
        ix, iy = (gx + 1) / 2 * (W - 1), (gy + 1) / 2 * (Hh - 1)
    else:
        ix, iy = ((gx + 1) * W - 1) / 2, ((gy + 1) * Hh - 1) / 2
    fin = torch.isfinite(gx) & torch.isfinite(gy)
    x0 = torch.nan_to_num(ix, 0.0).clamp(-3, W + 2).floor().long()
    y0 = torch.nan_to_num(iy, 0.0).clamp(-3, Hh + 2).floor().long()
    return x0, y0, fin


def _all_off(inputs):
    """[N, Ho, Wo] bool: every tap of the position off the image."""
    x0, y0, fin = _taps(inputs)
    Hh, W = inputs["input"].shape[2:]
    return ~(fin & (x0 >= -1) & (x0 <= W - 1) & (y0 >= -1) & (y0 <= Hh - 1))


def _tap_magnitude(inputs):
    """[N, C, Ho, Wo] fp64: the sum of |input| over the four taps on the image (the weights' error
    multiplies each tap's value, however small its weight)."""
    import torch

    x = inputs["input"].double().abs().nan_to_num(0.0)
    Nb, C, Hh, W = x.shape
    x0, y0, fin = _taps(inputs)
    flat = x.reshape(Nb, C, Hh * W)
    s = torch.zeros((Nb, C) + tuple(x0.shape[1:]), dtype=torch.float64)
    for dy in (0, 1):
        for dx in (0, 1):
            xx, yy = x0 + dx, y0 + dy
            ok = fin & (xx >= 0) & (xx < W) & (yy >= 0) & (yy < Hh)
            idx = (yy.clamp(0, Hh - 1) * W + xx.clamp(0, W - 1)).reshape(Nb, 1, -1).expand(Nb, C, -1)
            v = torch.gather(flat, 2, idx).reshape(s.shape)
            s += torch.where(ok[:, None], v, torch.zeros_like(v))
    return s


# ----------------------------------------------------------------- the pytest side
def _results() -> dict:
    return H.interpreter_results(HERE, KERNEL)


@pytest.mark.parametrize("name", list(CASES[KERNEL]))
def test_example_matches_reference(name):
    res = _results()[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    p, cfg = CASES[KERNEL][name]
    N, C, Ho, Wo = p["N"], p["C"], p["Ho"], p["Wo"]
    assert res["n_bad"] == 0, H.mismatch(res, f"{name} launch")
    assert res["shape"] == [N, C, Ho, Wo] and res["dtype"] == p["dtype"], res
    if p["layout"] == "NHWC":
        assert res["out_strides"] == [Ho * Wo * C, 1, Wo * C, C], res
    else:
        assert res["out_strides"] == [C * Ho * Wo, Ho * Wo, Wo, 1], res
    assert res["n_loose"] == 0, res             # half an ulp + (4e-7 (H + W) + 1e-6) sum of |taps|
    assert res["zeros_exact"] is True and res["inputs_unchanged"] is True, res
    fl = res["flags"]
    assert fl["ALIGN"] == p["align_corners"] and fl["CHANNELS_LAST"] == int(p["layout"] == "NHWC"), fl
    assert fl["GRID_FLAT"] == int(name != GRID_SLICE), fl
    tile = min(cfg["BLOCK_C"], 1 << (C - 1).bit_length())
    assert fl["TILE_C"] == tile and fl["EVEN_C"] == int(C % tile == 0), fl
    tiles = -(-C // tile)
    assert fl["n_tiles"] == tiles and fl["iters"] == -(-tiles // cfg["C_SPLIT"]), fl
    assert fl["C_SPLIT"] == -(-tiles // fl["iters"]) <= cfg["C_SPLIT"], fl
    if name == DEAD:
        assert res["blocks"]["live"] == 0 and res["all_zero"] is True, res
    elif name == BEV:
        assert res["blocks"]["live"] > 0 and res["blocks"]["dead"] > 0, res
    else:
        assert res["blocks"]["live"] > 0 and res["nonzero"] is True, res
    if name != DEAD:
        assert res["align_matters"] is True, res
    if name != NONFINITE:
        assert res["baseline"]["n_bad"] == 0, H.mismatch(res["baseline"], f"{name} torch_baseline")
    if name == STRIDED:
        Hh, W = p["H"], p["W"]
        assert res["input_strides"] == [(C + 3) * Hh * (W + PAD_W), Hh * (W + PAD_W), W + PAD_W, 1], res
        assert res["off_image"] > 0, res
    if name == NHWC_SLICE:
        Hh, W = p["H"], p["W"]
        assert res["input_strides"] == [Hh * W * (C + PAD_C), 1, W * (C + PAD_C), C + PAD_C], res
    if name == GRID_SLICE:
        assert res["grid_strides"] == [Ho * (Wo + PAD_G) * 2, (Wo + PAD_G) * 2, 2, 1], res
    if name == FLOW_LAYOUT:
        assert res["grid_strides"] == [2 * Ho * Wo, Wo, 1, Ho * Wo], res
    if name == GRID_BF16:
        assert res["grid_dtype"] == "torch.bfloat16", res
    if name == EXPANDED:
        assert res["input_strides"][0] == 0, res
    if name == NONFINITE:
        # on the one column: centres give the pixel exactly, far / non-finite positions 0
        assert res["nonfinite_zero"] is True and res["centres_exact"] is True, res


def test_cases_cover_every_code_path():
    """Both ALIGN with both layouts, both grid walks, EVEN_C both ways in both layouts, one and two channel
    groups (an uneven pair, one group asked for two), TILE_C 1-16, live and dead blocks, every dtype, an
    input grid in bf16; every sweep value of every tunable and BLOCK_P 16 / 32, num_stages 2."""
    H.assert_tunables_covered(CASES)
    mod = load_example(KERNEL)
    res = _results()
    cases = CASES[KERNEL]
    assert {p["dtype"] for p, _ in cases.values()} == set(mod.DTYPES)
    assert {p["field"] for p, _ in cases.values()} == set(mod.FIELDS)
    fl = {n: r["flags"] for n, r in res.items()}
    assert {(f["ALIGN"], f["CHANNELS_LAST"]) for f in fl.values()} == set(itertools.product((0, 1), repeat=2))
    assert {(f["CHANNELS_LAST"], f["EVEN_C"]) for f in fl.values()} == set(itertools.product((0, 1), repeat=2))
    assert {f["GRID_FLAT"] for f in fl.values()} == {0, 1}
    assert {f["C_SPLIT"] for f in fl.values()} == {1, 2}
    assert any(f["n_tiles"] % f["C_SPLIT"] for f in fl.values())                    # an uneven pair
    assert any(f["C_SPLIT"] < cases[n][1]["C_SPLIT"] for n, f in fl.items())        # fewer groups than asked
    assert {1, 2, 4, 8, 16} <= {f["TILE_C"] for f in fl.values()}
    assert any(r["blocks"]["dead"] for r in res.values()) and all(r["blocks"]["live"] for n, r in res.items()
                                                                    if n != DEAD)
    assert any((p["Ho"] * p["Wo"]) % c["BLOCK_P"] for p, c in cases.values())
    for k, vals in SWEEP_AXES.items():
        assert {c[k] for _, c in cases.values()} >= set(vals), k
    assert {16, 32} <= {c["BLOCK_P"] for _, c in cases.values()}
    assert 2 in {c["num_stages"] for _, c in cases.values()}


def test_launcher_hooks_agree_with_shapes():
    """At every point and sweep config: example_args (on meta but the grid, drawn on the CPU) with the launch's shapes, dtypes, strides
    (input and out in the point's layout, the grid fp32 contiguous), flags and channel plan; the grid
    (pixel blocks x groups, N) and the loop length; bytes_moved / flops; 0.27-0.52 GB moved a point;
    inputs under 1 GB."""
    import torch

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "example_args", "torch_baseline", "grid_sample_bilinear"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert not hasattr(mod, "secondary_kernels") and not hasattr(mod, "cta_iterations")
    assert len(mod.POINTS) == 3 and mod.ROLE == ROLE and mod.SWEEP_AXES == SWEEP_AXES
    dts = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}
    cfgs = [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]
    for p in mod.POINTS:
        N, C, Hh, W, Ho, Wo = (p[k] for k in ("N", "C", "H", "W", "Ho", "Wo"))
        cl = p["layout"] == "NHWC"
        e = 2 if p["dtype"] != "fp32" else 4
        for cfg in cfgs:
            a = mod.example_args(cfg, p)
            # the grid with data on the CPU (rank reads the taps' addresses from it), the rest on meta
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for k, v in a.items() if k != "G")
            x, g, o = a["X"], a["G"], a["O"]
            assert g.device.type == "cpu" and bool(torch.isfinite(g).all())
            assert x.shape == (N, C, Hh, W) and x.dtype == dts[p["dtype"]] and o.dtype == x.dtype
            assert o.shape == (N, C, Ho, Wo) and g.shape == (N, Ho, Wo, 2) and g.dtype == torch.float32
            assert g.is_contiguous()
            if cl:
                assert x.stride() == (Hh * W * C, 1, W * C, C) and o.stride() == (Ho * Wo * C, 1, Wo * C, C)
                assert (a["stride_oc"], a["stride_op"]) == (1, C)
            else:
                assert x.is_contiguous() and o.is_contiguous()
                assert (a["stride_oc"], a["stride_op"]) == (Ho * Wo, 1)
            assert (a["stride_xn"], a["stride_xc"], a["stride_xh"], a["stride_xw"]) == x.stride()
            assert (a["stride_gn"], a["stride_gw"], a["stride_gc"]) == (Ho * Wo * 2, 2, 1)
            assert (a["C"], a["H"], a["W"], a["HWo"], a["Wo"]) == (C, Hh, W, Ho * Wo, Wo)
            assert (a["ALIGN"], a["CHANNELS_LAST"], a["GRID_FLAT"]) == (p["align_corners"], int(cl), 1)
            tile = min(cfg["BLOCK_C"], C)
            tiles = C // tile
            iters = -(-tiles // cfg["C_SPLIT"])
            assert (a["TILE_C"], a["n_tiles"], a["iters"], a["C_SPLIT"]) == (tile, tiles, iters, cfg["C_SPLIT"])
            assert a["EVEN_C"] == 1 and a["BLOCK_P"] == cfg["BLOCK_P"]
            assert mod.grid(cfg, p) == (-(-(Ho * Wo) // cfg["BLOCK_P"]) * cfg["C_SPLIT"], N)
            assert mod.loop_iterations(cfg, p) == iters
            assert H.meta_nbytes(a) < 2**30
        assert mod.bytes_moved(p) == N * (e * C * (Hh * W + Ho * Wo) + 8 * Ho * Wo)
        assert mod.flops(p) == 8 * N * C * Ho * Wo
        assert 0.27e9 <= mod.bytes_moved(p) <= 0.52e9, p
    # the points differ: layout, dtype, align_corners, grid kind, C, channel tiles and shape regime
    P = mod.POINTS
    assert {p["layout"] for p in P} == set(mod.LAYOUTS) and {p["dtype"] for p in P} == set(mod.DTYPES)
    assert {p["align_corners"] for p in P} == {0, 1} and {p["field"] for p in P} == set(mod.FIELDS)
    assert sorted(p["C"] for p in P) == [32, 64, 128] and [p["Ho"] for p in P] == [540, 1600, 1]


def test_hooks_on_small_points_and_inputs():
    """make_inputs: shapes, dtypes, layouts, the seed, the three grid kinds (flow: identity + 1-2 pixels;
    bev: most positions off the image; rays: mostly inside [-1.3, 1.3]); reference by hand (identity,
    half-pixel shifts, an edge tap, align_corners); _normalize; the channel plan; grid / loop; bytes /
    flops; torch_baseline's dtype."""
    import torch

    mod = load_example(KERNEL)
    p = _pt(2, 3, 8, 10, 8, 10, 1, "NHWC", "bf16")
    inp = mod.make_inputs(p, seed=1, device="cpu")
    x, g = inp["input"], inp["grid"]
    assert x.shape == (2, 3, 8, 10) and x.dtype == torch.bfloat16 and x.stride() == (240, 1, 30, 3)
    assert g.shape == (2, 8, 10, 2) and g.dtype == torch.float32 and g.is_contiguous()
    assert inp["align_corners"] == 1
    assert torch.equal(mod.make_inputs(p, seed=1, device="cpu")["grid"], g)
    assert not torch.equal(mod.make_inputs(p, seed=2, device="cpu")["grid"], g)
    assert 0.8 < float(x.float().std()) < 1.2
    # flow: the identity plus 1 .. max(2, W / 60) pixels at most
    ident = torch.stack(torch.meshgrid(torch.arange(8.0), torch.arange(10.0), indexing="ij")[::-1], -1)
    px = (g + 1) / 2 * torch.tensor([9.0, 7.0])
    d = (px - ident).norm(dim=-1)
    assert 0.05 < float(d.max()) < 2 * math.sqrt(2) + 1e-4
    q = mod.make_inputs(_pt(1, 2, 5, 7, 5, 7, 0, "NCHW", "fp16"), device="cpu")
    assert q["input"].is_contiguous() and q["input"].dtype == torch.float16
    # bev: 6 cameras, most voxels out of each view, some in
    b = mod.make_inputs(_pt(6, 4, 56, 100, 40 * 8, 40, 0, "NHWC", "bf16", "bev"), device="cpu")
    off = _all_off(b)
    assert b["grid"].shape == (6, 320, 40, 2) and 0.5 < float(off.float().mean()) < 0.95
    # rays: 3 planes of one scene, samples inside the box mostly
    r = mod.make_inputs(_pt(3, 2, 16, 16, 1, 480, 0, "NCHW", "fp32", "rays"), device="cpu")["grid"]
    assert r.shape == (3, 1, 480, 2) and float((r.abs() <= 1.3).float().mean()) > 0.9
    assert torch.equal(r[0, ..., 0], r[1, ..., 0]) and torch.equal(r[0, ..., 0], r[2, ..., 1])  # x shared
    # reference by hand: the identity (align 1: -1 .. 1 over the pixel centres) reproduces the image
    img = torch.arange(12.0).view(1, 1, 3, 4)
    gi = torch.stack(torch.meshgrid(torch.linspace(-1, 1, 3), torch.linspace(-1, 1, 4), indexing="ij")[::-1], -1)
    ref = mod.reference({"input": img, "grid": gi[None], "align_corners": 1})
    assert torch.allclose(ref, img, atol=1e-6, rtol=0)
    # align 0: pixel k's centre at (2k + 1) / W - 1; half a pixel right of centre 0 -> mean of 0 and 1;
    # half a pixel left of centre 0 -> half of pixel 0 (the other tap off the image: zero)
    pts = torch.tensor([[[[-0.75, -1 + 1 / 3], [-0.5, -1 + 1 / 3], [-1.0, -1 + 1 / 3], [1.5, 0.0]]]])
    ref = mod.reference({"input": img, "grid": pts, "align_corners": 0})
    assert torch.allclose(ref.view(-1), torch.tensor([0.0, 0.5, 0.0, 0.0]), atol=1e-6)
    ref = mod.reference({"input": img + 1, "grid": pts, "align_corners": 0})
    assert torch.allclose(ref.view(-1), torch.tensor([1.0, 1.5, 0.5, 0.0]), atol=1e-6)
    ref = mod.reference({"input": img + 1, "grid": torch.tensor([[[[math.nan, 0.0], [0.0, math.inf]]]]),
                         "align_corners": 0})
    assert torch.equal(ref, torch.zeros(1, 1, 1, 2))
    assert mod._normalize(0.0, 4, 0) == -0.75 and mod._normalize(3.0, 4, 1) == 1.0
    assert mod._normalize(0.0, 1, 1) == -1.0
    # the channel plan: (TILE_C, tiles, iters, groups)
    c = _cfg(128, 8, 2)
    assert [mod._plan(C, c) for C in (1, 5, 8, 12, 20, 24, 64)] == [
        (1, 1, 1, 1), (8, 1, 1, 1), (8, 1, 1, 1), (8, 2, 1, 2), (8, 3, 2, 2), (8, 3, 2, 2), (8, 8, 4, 2)]
    assert mod._plan(20, _cfg(128, 4, 4)) == (4, 5, 2, 3)               # 4 groups asked, 3 non-empty
    assert mod.grid(c, _pt(3, 20, 5, 5, 10, 30)) == (3 * 2, 3)
    assert mod.loop_iterations(c, _pt(3, 20, 5, 5, 10, 30)) == 2
    assert mod.bytes_moved(p) == 2 * (2 * 3 * (80 + 80) + 8 * 80)
    assert mod.flops(p) == 8 * 2 * 3 * 80
    base = mod.torch_baseline(inp)
    assert base.dtype == torch.bfloat16 and base.shape == (2, 3, 8, 10)


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    x = torch.ones(2, 3, 5, 6)
    g = torch.zeros(2, 4, 7, 2)
    with pytest.raises(ValueError, match="BLOCK_P=100"):
        mod.grid_sample_bilinear(x, g, BLOCK_P=100)
    with pytest.raises(ValueError, match="BLOCK_P=2048"):
        mod.grid_sample_bilinear(x, g, BLOCK_P=2048)
    with pytest.raises(ValueError, match="BLOCK_C=3"):
        mod.grid_sample_bilinear(x, g, BLOCK_C=3)
    with pytest.raises(ValueError, match="C_SPLIT=0"):
        mod.grid_sample_bilinear(x, g, C_SPLIT=0)
    with pytest.raises(ValueError, match="num_warps=3"):
        mod.grid_sample_bilinear(x, g, num_warps=3)
    with pytest.raises(ValueError, match="num_stages=0"):
        mod.grid_sample_bilinear(x, g, num_stages=0)
    with pytest.raises(ValueError, match="mode='nearest'"):
        mod.grid_sample_bilinear(x, g, mode="nearest")
    with pytest.raises(ValueError, match="padding_mode='border'"):
        mod.grid_sample_bilinear(x, g, padding_mode="border")
    with pytest.raises(ValueError, match="align_corners=2"):
        mod.grid_sample_bilinear(x, g, 2)
    with pytest.raises(ValueError, match=r"expected input \[N, C, H, W\]"):
        mod.grid_sample_bilinear(x[0], g)
    with pytest.raises(ValueError, match="fp16 / bf16 / fp32"):
        mod.grid_sample_bilinear(x.double(), g)
    with pytest.raises(ValueError, match=r"expected grid \[N, Ho, Wo, 2\]"):
        mod.grid_sample_bilinear(x, torch.zeros(2, 4, 7, 3))
    with pytest.raises(ValueError, match="grid must be fp32 or input's dtype"):
        mod.grid_sample_bilinear(x, g.half())
    with pytest.raises(ValueError, match="grid's N=1 must equal input's N=2"):
        mod.grid_sample_bilinear(x, g[:1])
    with pytest.raises(ValueError, match="grid must be on input's device"):
        mod.grid_sample_bilinear(x, g.to("meta"))
    big = torch.empty_strided((1, 2, 40000, 40000), (0, 2**31, 40000, 1), device="meta")
    with pytest.raises(ValueError, match="int32 offsets"):
        mod.grid_sample_bilinear(big, torch.zeros(1, 2, 2, 2, device="meta"))
    many = torch.empty((70000, 1, 2, 2), device="meta")
    with pytest.raises(ValueError, match="65535"):
        mod.grid_sample_bilinear(many, torch.zeros(70000, 1, 1, 2, device="meta"))
    with pytest.raises(ValueError, match="dtype 'int8'"):
        mod.make_inputs(_pt(1, 2, 4, 4, 4, 4, dtype="int8"), device="cpu")
    with pytest.raises(ValueError, match="layout 'NHCW'"):
        mod.bytes_moved(_pt(1, 2, 4, 4, 4, 4, layout="NHCW"))
    with pytest.raises(ValueError, match="field 'mesh'"):
        mod.flops(_pt(1, 2, 4, 4, 4, 4, field="mesh"))
    with pytest.raises(ValueError, match="align_corners=3"):
        mod.grid(mod.BASELINE, _pt(1, 2, 4, 4, 4, 4, align=3))
    with pytest.raises(ValueError, match="Wo=0"):
        mod.grid(mod.BASELINE, _pt(1, 2, 4, 4, 4, 0))
    with pytest.raises(ValueError, match="Ho=12 a multiple of 8"):
        mod.grid(mod.BASELINE, _pt(1, 2, 4, 4, 12, 4, field="bev"))
    with pytest.raises(ValueError, match="N=2 a multiple of 3"):
        mod.grid(mod.BASELINE, _pt(2, 2, 4, 4, 1, 96, field="rays"))
    with pytest.raises(ValueError, match="BLOCK_C=24"):
        mod.loop_iterations(dict(mod.BASELINE, BLOCK_C=24), mod.POINTS[0])
    # nothing to sample: an empty output, nothing launched
    e = mod.grid_sample_bilinear(x.half(), torch.zeros(2, 0, 7, 2, dtype=torch.float16))
    assert e.shape == (2, 3, 0, 7) and e.dtype == torch.float16


def test_sweep_fits_the_points():
    """The study sweep: 48 configs (BLOCK_P 64 / 128 / 256, BLOCK_C 2 / 4 / 8 / 16, C_SPLIT 1 / 2, 4 / 8
    warps, num_stages 1) with BASELINE among them; at every point each config is valid (two non-empty
    channel groups where asked, whole tiles), launches >= 4 waves of programs on an H200 (4050 at the
    fewest: the BasicVSR++ warp, 256 pixels a program over 2 x 518400) and its shared-memory bound
    (4 BLOCK_P + 256 bytes) fits sm_90's. (Every config was compiled for sm_90 at every point with triton
    3.6.0 and 3.9.0: all compile, none spills; registers 32-218 under 3.6 and 32-168 under 3.9, the most
    for 256 pixels x 16 planes in two groups on 4 warps at the EG3D point (2 pixels a thread, 128 gathers
    in flight; 110-146 at the other two), 32-64 for at most one pixel a thread and 2-8 channels; shared memory
    8-1024 bytes under both (the CTA-wide max's scratch; 512-1024 where the NHWC tile of 16 channels
    redistributes the pixels' state). BLOCK_C 32 at 256 pixels on 4 warps and 512 pixels with 16-32
    channels on 4 warps spill -- hence the axes.)"""
    mod = load_example(KERNEL)
    axes = SWEEP_AXES
    assert set(axes) == set(mod.TUNABLES) and mod.SWEEP_AXES == axes
    assert all(len(v) >= 2 for k, v in axes.items() if k != "num_stages") and axes["num_stages"] == [1]
    cfgs = [dict(zip(axes, v)) for v in itertools.product(*axes.values())]
    assert 48 <= len(cfgs) <= 72 and mod.BASELINE in cfgs
    fewest = min(math.prod(mod.grid(c, p)) for p in mod.POINTS for c in cfgs)
    assert fewest == 4050
    for p in mod.POINTS:
        for c in cfgs:
            mod._check_cfg(c)
            gx, gy = mod.grid(c, p)
            assert gx * gy >= 4 * H200_SMS and gy <= 65535, (p, c)
            assert _smem_bound(c) <= SM90_SMEM_PER_BLOCK, (p, c)
            assert mod._plan(p["C"], c)[3] == c["C_SPLIT"] and p["C"] % mod._plan(p["C"], c)[0] == 0


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
    """On sm_90 at each point: BASELINE-like and the register-heaviest configs (256 pixels, 16 planes,
    2 groups on 4 warps) and 8-warp corners compile without spills, their shared memory within the bound."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    assert COMPILE_CFGS[0][0] == mod.BASELINE
    for pi, cfgs in COMPILE_CFGS.items():
        p = mod.POINTS[pi]
        for cfg in cfgs:
            res = compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch="sm_90",
                                 num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
            assert res.status == "ok", f"{cfg} at point {pi} on sm_90: {res.status}: {res.message}"
            assert 0 < res.n_regs <= 255 and res.n_spills == 0, (pi, cfg, res.n_regs, res.n_spills)
            assert 0 < res.shared <= _smem_bound(cfg), (pi, cfg, res.shared)


@pytest.mark.slow
def test_example_compiles_sm120(shared_cache):
    """On sm_120 (99 KiB a block): BASELINE, the register-heaviest config and 64 pixels on 8 warps in two
    groups compile at the first point (the BasicVSR++ warp, NCHW fp16) without spills within its shared
    memory. (All 48 sweep configs compile there at every point without spills under triton 3.6.0 and
    3.9.0: 33-218 registers, 8-1024 bytes of shared memory.)"""
    for cfg, res in H.compile_results(KERNEL, SM120_CFGS, "sm_120"):
        assert res.status == "ok", f"{cfg} on sm_120: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.n_spills == 0, (cfg, res.n_regs, res.n_spills)
        assert 0 < res.shared <= min(_smem_bound(cfg), SM120_SMEM_PER_BLOCK), (cfg, res.shared)


# ----------------------------------------------------------------- the subprocess side
def _run() -> None:
    """Every case through launch against reference (the harness's tolerance) and against half an ulp of
    each element plus (4e-7 (H + W) + 1e-6) times its four taps' summed magnitudes; torch_baseline against
    reference; exact zeros off the image; the flags the launch used; live / dead blocks; one JSON line."""
    import torch

    H.patch_interpreter_bf16_rounding()
    H.patch_interpreter_index()
    mod = load_example(KERNEL)
    names = {torch.float16: "fp16", torch.bfloat16: "bf16", torch.float32: "fp32"}

    def same(a, b):
        return torch.equal(a.isnan(), b.isnan()) and torch.equal(a.nan_to_num(7.0), b.nan_to_num(7.0))

    def extra(name, point, inputs, out, ref):
        x, g = inputs["input"], inputs["grid"]
        Nb, C, Hh, W = x.shape
        _, Ho, Wo, _ = g.shape
        cfg = CASES[KERNEL][name][1]
        u = {torch.bfloat16: 2.0 ** -8, torch.float16: 2.0 ** -11, torch.float32: 2.0 ** -24}[out.dtype]
        slack = (4e-7 * (Hh + W) + 1e-6) * _tap_magnitude(inputs).float()
        loose = (out.float() - ref).abs() > u * ref.abs() + 1.01 * slack + 1e-30
        off = _all_off(inputs)                                          # [N, Ho, Wo]
        offc = off[:, None].expand(Nb, C, Ho, Wo)
        a = mod._kernel_args(x, g, out, inputs["align_corners"], cfg)
        flags = {k: a[k] for k in ("ALIGN", "CHANNELS_LAST", "GRID_FLAT", "EVEN_C", "TILE_C", "C_SPLIT",
                                   "n_tiles", "iters")}
        # a block (BLOCK_P flattened pixels of one image) is dead when every pixel in it is off the image
        bp = cfg["BLOCK_P"]
        nb = -(-(Ho * Wo) // bp)
        offp = torch.ones((Nb, nb * bp), dtype=torch.bool)
        offp[:, :Ho * Wo] = off.reshape(Nb, -1)
        dead = int(offp.view(Nb, nb, bp).all(-1).sum())
        flip = mod.reference(dict(inputs, align_corners=1 - inputs["align_corners"]))
        res = {"dtype": names.get(out.dtype), "out_strides": list(out.stride()), "n_loose": int(loose.sum()),
               "zeros_exact": bool((out[offc] == 0).all()), "off_image": int(off.sum()),
               "inputs_unchanged": bool(same(x, inputs["input0"]) and same(g, inputs["grid0"])),
               "nonzero": bool((ref != 0).any()), "all_zero": bool((out == 0).all()),
               "flags": flags, "blocks": {"live": Nb * nb - dead, "dead": dead},
               "align_matters": bool((flip - ref).abs().max() > 0.05),
               "input_strides": list(x.stride()), "grid_strides": list(g.stride()), "grid_dtype": str(g.dtype)}
        if name != NONFINITE:
            # torch's CPU kernel with a bf16 grid unnormalizes in bf16 (positions off by up to ~0.02 px here)
            tol = dict(H.TOL, bf16=0.1) if g.dtype == torch.bfloat16 else H.TOL
            res["baseline"] = H.compare(mod.torch_baseline(inputs), ref, point["dtype"], tol)
        else:
            col = x[:, 0, :, 0].float()                                 # [N, 7]
            o = out[:, 0, :, 0]                                         # [N, 24]
            gy = torch.tensor(NONFINITE_GY)
            gx = torch.tensor(NONFINITE_GX)
            bad = ~(torch.isfinite(gy) & torch.isfinite(gx)) | (gy.abs() > 2)
            res["nonfinite_zero"] = bool((o[:, bad] == 0).all())
            # centres of rows 0, 3 and 6 (gy -1 + 1/7, 0, 1 - 1/7): the pixel itself (to fp32 rounding)
            res["centres_exact"] = bool(torch.allclose(o[:, [1, 2, 4]], col[:, [0, 3, 6]], atol=1e-6, rtol=0))
        return res

    H.run_cases(KERNEL, CASES[KERNEL], prepare=_prepare, extra=extra)


if __name__ == "__main__":
    _run()
