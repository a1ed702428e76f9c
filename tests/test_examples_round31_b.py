"""examples/nv12_to_rgb.py (NV12 -> RGB after NVDEC: y [N, H, W] and interleaved uv [N, H/2, W/2, 2] uint8
views of pitched decoder surfaces, BT.601 / BT.709, limited / full range, chroma nearest or type-0 sited
bilinear, out [N, 3, H, W] or [N, H, W, 3] normalized fp16 / bf16 / fp32 or rounded uint8; a program
walks STEPS steps of ROWS luma rows x BLOCK_W columns, the chroma bytes split into U / V in registers)
against its torch reference on the CPU through Triton's interpreter, its launcher hooks against the
shapes, its study sweep against the points, and a compile for sm_90 and sm_120 from its own
``example_args``.

As in test_examples_round30_a.py the interpreter cases run in a subprocess (this file run as a script:
``python tests/test_examples_round31_b.py nv12_to_rgb``) that prints one JSON line. The subprocess
installs the harness's interpreter fixes (bf16 rounding; under triton 3.6 with numpy >= 2.3 the runtime
loop bounds read as ints).

Shapes are small, odd and ragged: BILINEAR x NORMALIZE x layout all eight ways; H 1-13 and W 1-70, odd
H and odd W (the last chroma row / column covering one luma row / column), a 1 x 1 frame (one chroma
sample), one row pair; several column blocks (bilinear's next sample across a tile edge) and a block
wider than the frame; row blocks ragged against ROWS x STEPS, whole steps past H; the decoder surfaces'
pitch and padding bytes random (a stray read of them shows), every other frame of a surface pool (frame
stride doubled), luma and chroma in separate allocations of different pitches, all-extreme bytes (every
channel clamped at 0 or 255); BT.601 / BT.709, limited / full, ImageNet and unit normalization; fp16,
bf16, fp32, uint8; BLOCK_W 16-512, ROWS 2-8, STEPS 1-4, 4 / 8 warps, num_stages 1 / 2.

Per case: launch's output within the dtype's tolerance of the fp64 reference (the harness's per-element
check) and, tighter, each float element within half an ulp of its dtype plus 1e-4 RGB levels (fp32 math)
of the reference, each uint8 element within 0.5 + 1e-3 levels of the unrounded fp64 RGB (rounded right
but for fp32 ties); the output fresh, contiguous, in the point's dtype and shape; the inputs unchanged;
the flags the launch used (BILINEAR, NORMALIZE, VEC); the chroma mode, the matrix and the range each
changing the result; torch_baseline (the eager torch pipeline in fp32) within tolerance.
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
KERNEL = "nv12_to_rgb"
ROLE = "held-out-31"
H100_SMS = 132
SM90_SMEM_PER_BLOCK = 227 * 1024
SM120_SMEM_PER_BLOCK = 99 * 1024
TOL = dict(H.TOL, u8=1e-2)          # uint8: the gate's default (an off-by-one at a tie); the strict check below

# the study's sweep (scripts/rank_study.py SWEEPS["nv12_to_rgb"] once the lead adds it)
SWEEP_AXES = {"BLOCK_W": [128, 256, 512], "ROWS": [2, 4, 8], "STEPS": [1, 2, 4], "num_warps": [4, 8],
              "num_stages": [1]}


def _cfg(bw, rows, steps=1, w=4, st=1):
    return {"BLOCK_W": bw, "ROWS": rows, "STEPS": steps, "num_warps": w, "num_stages": st}


def _pt(N, H_, W, pitch, matrix="bt709", rng="limited", chroma="nearest", layout="NCHW", dtype="fp32",
        norm=None):
    norm = norm or ("none" if dtype == "u8" else "imagenet")
    return {"N": N, "H": H_, "W": W, "pitch": pitch, "matrix": matrix, "range": rng, "chroma": chroma,
            "layout": layout, "dtype": dtype, "norm": norm}


# case -> (point, cfg); comments: (BILINEAR, NORMALIZE, layout), column blocks, row blocks x steps
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        # the 1080p clip point scaled down: (0, 1, NCHW) fp16 ImageNet, BT.709 limited; 40 columns in 3 blocks
        # of 16 (ragged), odd H 9 in 3 row blocks of 4 (the last one row)
        "hd_nearest_fp16": (_pt(2, 9, 40, 64, dtype="fp16"), _cfg(16, 4, 1, 4)),
        # the 4K point scaled down: (1, 0, NHWC) uint8, BT.709 limited; odd W 37 in 3 blocks (the next sample
        # across both tile edges, the last column its own chroma sample); H 10 in 2 row blocks of 2 x 4
        # (the second: one step of rows, three steps past H); 8 warps
        "uhd_bilinear_u8_nhwc": (_pt(2, 10, 37, 48, chroma="bilinear", layout="NHWC", dtype="u8"),
                                 _cfg(16, 2, 4, 8)),
        # the camera-crowd point scaled down: (1, 1, NCHW) fp32 x / 255, BT.601 full; one column block of
        # 128 over 24; H 12 in one row block of 8 x 2 (the second step half past H)
        "cams_bilinear_fp32": (_pt(3, 12, 24, 32, "bt601", "full", "bilinear", dtype="fp32", norm="unit"),
                               _cfg(128, 8, 2, 4)),
        # (0, 1, NHWC) bf16, BT.601 limited; odd H and W (7 x 19); a block of 256 over 19 columns; 8 warps,
        # num_stages 2
        "bf16_nhwc_nearest": (_pt(2, 7, 19, 32, "bt601", dtype="bf16", layout="NHWC"), _cfg(256, 2, 2, 8, 2)),
        # torchvision's decoder output: (0, 0, NCHW) uint8 [N, 3, H, W] (VEC 16), BT.709 full; W 33 (odd)
        # in 2 blocks of 32 (the second one column); H 6 in one block of 8 (one pair past H)
        "u8_nchw_nearest": (_pt(2, 6, 33, 48, rng="full", dtype="u8"), _cfg(32, 8, 1, 4)),
        # (1, 1, NHWC) fp16 ImageNet, BT.601 limited; odd H 13, W 50 in one block of 512; 8 warps
        "fp16_nhwc_bilinear": (_pt(1, 13, 50, 64, "bt601", chroma="bilinear", layout="NHWC", dtype="fp16"),
                               _cfg(512, 4, 2, 8)),
        # a 1 x 1 frame (one chroma sample: every neighbour clamped onto it), (1, 1, NCHW) fp32, 3 frames
        "one_pixel_bilinear": (_pt(3, 1, 1, 16, chroma="bilinear", dtype="fp32"), _cfg(16, 2, 1, 4)),
        # one row pair (H 2), W 70 in 2 blocks of 64: (0, 0, NHWC) uint8 BT.601 full; steps 2-4 past H
        "one_pair_nearest_u8": (_pt(1, 2, 70, 96, "bt601", "full", layout="NHWC", dtype="u8"), _cfg(64, 2, 4, 4)),
        # every other frame of a 4-surface pool (frame stride doubled) and the chroma planes moved into their
        # own allocation of pitch 40 (luma pitch 32): (1, 1, NCHW) fp16 ImageNet BT.709 limited; W 30 in 2
        # blocks of 16, H 11 in 2 row blocks of 4 x 2
        "pool_slice_bilinear_fp16": (_pt(4, 11, 30, 32, chroma="bilinear", dtype="fp16"), _cfg(16, 4, 2, 4)),
        # every byte 0 or 255 (every channel clamped somewhere), (0, 1, NCHW) fp32 BT.709 limited ImageNet;
        # 8 warps over one block of 128; H 5 in 3 row blocks of 2
        "extremes_nearest_fp32": (_pt(2, 5, 21, 32, dtype="fp32"), _cfg(128, 2, 1, 8)),
        # (1, 0, NCHW) uint8, BT.601 limited; W 44 in 3 blocks of 16, H 8 in one block of 4 x 2
        "u8_nchw_bilinear": (_pt(2, 8, 44, 64, "bt601", chroma="bilinear", dtype="u8"), _cfg(16, 4, 2, 4)),
        # (0, 0, NHWC) uint8 BT.709 limited at the sweep's block sizes: W 67 in one block of 128 (8 warps:
        # under a pixel a thread), H 9 in 2 row blocks of 8
        "rgb24_nearest_u8": (_pt(2, 9, 67, 96, layout="NHWC", dtype="u8"), _cfg(128, 8, 1, 8)),
    },
}
POOL, EXTREMES = "pool_slice_bilinear_fp16", "extremes_nearest_fp32"
POOL_UV_PITCH = 40

# configs compiled on sm_90: at each point BASELINE-like, the register-heaviest (512 x 8 rows on 4 warps,
# 32 pixels a thread) and an 8-warp corner under a pixel a thread
COMPILE_CFGS = {0: [_cfg(256, 4, 1, 4), _cfg(512, 8, 4, 4), _cfg(128, 2, 2, 8)],
                1: [_cfg(512, 8, 4, 4), _cfg(256, 2, 1, 8)],
                2: [_cfg(512, 8, 1, 4), _cfg(128, 4, 2, 8)]}
SM120_CFGS = [_cfg(256, 4, 1, 4), _cfg(512, 8, 4, 4), _cfg(128, 2, 2, 8)]


def _smem_bound(cfg) -> int:
    """An upper bound of a config's shared memory: a layout conversion of one [ROWS / 2, BLOCK_W] fp32 tile
    (the split's pairs, a store's layout), plus the driver's reserve."""
    return 4 * (cfg["ROWS"] // 2) * cfg["BLOCK_W"] + 1024


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """The strided / value variants (module doc), then copies of the inputs."""
    import torch

    y, uv = inputs["y"], inputs["uv"]
    if name == POOL:
        # frames 0 and 2 of the 4-surface pool; their chroma copied into a separate pitched buffer
        y, uv = y[::2], uv[::2]
        N, Hc, Wc, _ = uv.shape
        gen = torch.Generator().manual_seed(7)
        buf = torch.randint(0, 256, (N * Hc * POOL_UV_PITCH + 5,), generator=gen, dtype=torch.uint8)
        fresh = torch.as_strided(buf, (N, Hc, Wc, 2), (Hc * POOL_UV_PITCH, POOL_UV_PITCH, 2, 1), 5)
        fresh.copy_(uv)
        inputs["y"], inputs["uv"] = y, fresh
    if name == EXTREMES:
        y.copy_(torch.where(y >= 128, 255, 0).to(torch.uint8))
        uv.copy_(torch.where(uv >= 128, 255, 0).to(torch.uint8))
    for k in ("y", "uv"):
        inputs[k + "0"] = inputs[k].clone()


# ----------------------------------------------------------------- the pytest side
def _results() -> dict:
    return H.interpreter_results(HERE, KERNEL)


@pytest.mark.parametrize("name", list(CASES[KERNEL]))
def test_example_matches_reference(name):
    res = _results()[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    p, cfg = CASES[KERNEL][name]
    N, Hh, W = p["N"], p["H"], p["W"]
    if name == POOL:
        N //= 2
    assert res["n_bad"] == 0, H.mismatch(res, f"{name} launch")
    shape = [N, 3, Hh, W] if p["layout"] == "NCHW" else [N, Hh, W, 3]
    assert res["shape"] == shape and res["dtype"] == p["dtype"] and res["contiguous"] is True, res
    assert res["n_loose"] == 0, res             # half an ulp + 1e-4 levels; uint8 0.5 + 1e-3 levels
    assert res["inputs_unchanged"] is True, res
    fl = res["flags"]
    assert fl["BILINEAR"] == int(p["chroma"] == "bilinear") and fl["NORMALIZE"] == int(p["dtype"] != "u8"), fl
    e = {"fp16": 2, "bf16": 2, "fp32": 4, "u8": 1}[p["dtype"]]
    assert fl["VEC"] == (16 // e if p["layout"] == "NCHW" else 4), fl
    assert res["baseline"]["n_bad"] == 0, H.mismatch(res["baseline"], f"{name} torch_baseline")
    assert res["matrix_matters"] is True and res["range_matters"] is True, res
    if Hh > 2 and W > 2:
        assert res["chroma_matters"] is True, res
    if name == EXTREMES:
        assert res["clamped"] > 0.3, res
    if name == POOL:
        assert res["y_strides"] == [2 * 32 * 24, 32, 1], res         # frame of 16 + 8 rows, pitch 32
        assert res["uv_strides"] == [6 * POOL_UV_PITCH, POOL_UV_PITCH, 2, 1], res


def test_cases_cover_every_code_path():
    """BILINEAR x NORMALIZE x layout all eight ways, every dtype, matrix, range and norm; odd H and W, a 1 x 1
    frame, several column blocks with bilinear chroma, whole steps past H; every sweep value of every
    tunable, BLOCK_W 16-64, num_stages 2."""
    H.assert_tunables_covered(CASES)
    mod = load_example(KERNEL)
    res = _results()
    cases = CASES[KERNEL]
    fl = {n: r["flags"] for n, r in res.items()}
    combos = {(f["BILINEAR"], f["NORMALIZE"], cases[n][0]["layout"]) for n, f in fl.items()}
    assert combos == set(itertools.product((0, 1), (0, 1), mod.LAYOUTS))
    for key, allowed in (("dtype", mod.DTYPES), ("matrix", mod.MATRICES), ("range", mod.RANGES),
                         ("chroma", mod.CHROMAS), ("norm", mod.NORMS)):
        assert {p[key] for p, _ in cases.values()} == set(allowed), key
    assert any(p["H"] % 2 and p["W"] % 2 for p, _ in cases.values())
    assert any(p["H"] == 1 and p["W"] == 1 for p, _ in cases.values())
    assert any(p["chroma"] == "bilinear" and -(-p["W"] // c["BLOCK_W"]) >= 3 for p, c in cases.values())
    # a row block whose last step(s) lie wholly past H
    assert any(-(-p["H"] // (c["ROWS"] * c["STEPS"])) * c["ROWS"] * c["STEPS"] - p["H"] >= c["ROWS"]
               for p, c in cases.values())
    assert any(p["W"] % c["BLOCK_W"] and p["W"] > c["BLOCK_W"] for p, c in cases.values())
    for k, vals in SWEEP_AXES.items():
        assert {c[k] for _, c in cases.values()} >= set(vals), k
    assert {16, 32, 64} <= {c["BLOCK_W"] for _, c in cases.values()}
    assert 2 in {c["num_stages"] for _, c in cases.values()}
    assert {r["flags"]["VEC"] for r in res.values()} == {4, 8, 16}


def test_launcher_hooks_agree_with_shapes():
    """At every point and sweep config: example_args (all on meta) with the launch's shapes, dtypes, strides
    (y and uv views of the pitched surfaces, the chroma plane after the coded height's rows; out fresh in
    the point's layout), flags and constants; the grid and the loop length; bytes_moved / flops; 0.29-0.8
    GB moved a point."""
    import torch

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "example_args", "torch_baseline", "nv12_to_rgb"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert not hasattr(mod, "secondary_kernels") and not hasattr(mod, "cta_iterations")
    assert len(mod.POINTS) == 3 and mod.ROLE == ROLE and mod.SWEEP_AXES == SWEEP_AXES
    dts = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32, "u8": torch.uint8}
    cfgs = [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]
    for p in mod.POINTS:
        N, Hh, W, pitch = p["N"], p["H"], p["W"], p["pitch"]
        Hs = -(-Hh // 16) * 16
        frame = pitch * Hs * 3 // 2
        e = {"fp16": 2, "bf16": 2, "fp32": 4, "u8": 1}[p["dtype"]]
        nchw = p["layout"] == "NCHW"
        for cfg in cfgs:
            a = mod.example_args(cfg, p)
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for v in a.values())
            y, uv, o = a["Y"], a["UV"], a["O"]
            assert y.shape == (N, Hh, W) and y.stride() == (frame, pitch, 1) and y.dtype == torch.uint8
            assert uv.shape == (N, Hh // 2, W // 2, 2) and uv.stride() == (frame, pitch, 2, 1)
            assert uv.storage_offset() == pitch * Hs and uv.dtype == torch.uint8
            assert o.dtype == dts[p["dtype"]] and o.is_contiguous()
            assert o.shape == ((N, 3, Hh, W) if nchw else (N, Hh, W, 3))
            strides = (3 * Hh * W, Hh * W, W, 1) if nchw else (3 * Hh * W, 1, 3 * W, 3)
            assert (a["stride_on"], a["stride_oc"], a["stride_oh"], a["stride_ow"]) == strides
            assert (a["stride_yn"], a["stride_yh"], a["stride_un"], a["stride_uh"]) == (frame, pitch, frame, pitch)
            assert (a["H"], a["W"], a["Hc"], a["Wc"]) == (Hh, W, Hh // 2, W // 2)
            assert a["BILINEAR"] == int(p["chroma"] == "bilinear") and a["NORMALIZE"] == int(p["dtype"] != "u8")
            assert a["VEC"] == (16 // e if nchw else 4)
            assert (a["BLOCK_W"], a["ROWS"], a["STEPS"]) == (cfg["BLOCK_W"], cfg["ROWS"], cfg["STEPS"])
            assert mod.grid(cfg, p) == (-(-W // cfg["BLOCK_W"]), -(-Hh // (cfg["ROWS"] * cfg["STEPS"])), N)
            assert mod.loop_iterations(cfg, p) == cfg["STEPS"]
            assert H.meta_nbytes(a) < 2**30
        assert mod.bytes_moved(p) == N * Hh * W * (1 + 0.5 + 3 * e)
        assert mod.flops(p) == N * Hh * W * (12 + 6 * (p["dtype"] != "u8") + 10 * (p["chroma"] == "bilinear"))
        assert 0.29e9 <= mod.bytes_moved(p) <= 0.8e9, p
    # the points differ: layout, dtype, matrix, range, chroma, frame size and batch
    P = mod.POINTS
    assert {p["layout"] for p in P} == set(mod.LAYOUTS) and {p["dtype"] for p in P} == {"fp16", "u8", "fp32"}
    assert {p["matrix"] for p in P} == set(mod.MATRICES) and {p["range"] for p in P} == set(mod.RANGES)
    assert {p["chroma"] for p in P} == set(mod.CHROMAS)
    assert [(p["N"], p["H"], p["W"]) for p in P] == [(32, 1080, 1920), (8, 2160, 3840), (64, 720, 1280)]
    assert all(p["pitch"] > p["W"] and p["pitch"] % 256 == 0 for p in P)
    # the constants the launch passes: BT.709 limited, ImageNet
    a = mod.example_args(mod.BASELINE, P[0])
    assert math.isclose(a["ys"], 255 / 219) and math.isclose(a["rv"], 1.7927, abs_tol=1e-4)
    assert math.isclose(a["gu"], -0.2132, abs_tol=1e-4) and math.isclose(a["gv"], -0.5329, abs_tol=1e-4)
    assert math.isclose(a["bu"], 2.1124, abs_tol=1e-4)
    assert math.isclose(a["sr"], 1 / (255 * 0.229)) and math.isclose(a["tb"], -0.406 / 0.225)


def test_hooks_on_small_points_and_inputs():
    """make_inputs: the surface views (pitch, coded height, one buffer), the seed, the byte spread;
    reference by hand (grey, black / white levels, primaries, BT.601 / BT.709 textbook coefficients,
    the sited bilinear chroma, ImageNet normalization, uint8 rounding, NHWC); grid / loop; bytes / flops;
    torch_baseline's dtype."""
    import torch

    mod = load_example(KERNEL)
    p = _pt(2, 7, 11, 32, chroma="bilinear", layout="NHWC", dtype="bf16")
    inp = mod.make_inputs(p, seed=1, device="cpu")
    y, uv = inp["y"], inp["uv"]
    assert y.shape == (2, 7, 11) and y.dtype == torch.uint8 and y.stride() == (32 * 24, 32, 1)
    assert uv.shape == (2, 4, 6, 2) and uv.stride() == (32 * 24, 32, 2, 1) and uv.storage_offset() == 32 * 16
    assert y.untyped_storage().data_ptr() == uv.untyped_storage().data_ptr()
    assert (inp["matrix"], inp["color_range"], inp["chroma"], inp["layout"], inp["dtype"]) == (
        "bt709", "limited", "bilinear", "NHWC", "bf16")
    assert inp["mean"] == (0.485, 0.456, 0.406) and inp["std"] == (0.229, 0.224, 0.225)
    assert torch.equal(mod.make_inputs(p, seed=1, device="cpu")["uv"], uv)
    assert not torch.equal(mod.make_inputs(p, seed=2, device="cpu")["y"], y)
    assert int(y.min()) < 30 and int(y.max()) > 225 and 100 < float(uv.float().mean()) < 155
    assert mod.make_inputs(_pt(1, 4, 4, 16, dtype="u8"), device="cpu")["mean"] == (0.0, 0.0, 0.0)

    def conv(Y, U, V, matrix="bt709", rng="limited", chroma="nearest", dtype="u8", layout="NCHW",
             norm="unit"):
        yy = torch.tensor(Y, dtype=torch.uint8).view(1, *torch.tensor(Y).shape)
        uu = torch.stack((torch.tensor(U), torch.tensor(V)), -1).to(torch.uint8)[None]
        mean, std = mod.MEAN_STD.get(norm, mod.MEAN_STD["unit"])
        return mod.reference({"y": yy, "uv": uu, "matrix": matrix, "color_range": rng, "chroma": chroma,
                              "layout": layout, "dtype": dtype, "mean": mean, "std": std})

    # grey, black and white levels (limited 16 / 235, full 0 / 255)
    assert conv([[16, 235]] * 2, [[128]], [[128]]).view(3, 2, 2)[:, 0].tolist() == [[0, 255]] * 3
    assert conv([[0, 255]] * 2, [[128]], [[128]], rng="full").view(3, 2, 2)[:, 1].tolist() == [[0, 255]] * 3
    assert conv([[128, 128]] * 2, [[128]], [[128]], "bt601", "full").view(-1).tolist() == [128.0] * 12
    # textbook coefficients: BT.601 limited R = 1.164 (Y - 16) + 1.596 (V - 128), G = ... - 0.392 U' - 0.813 V',
    # B = ... + 2.017 U'; BT.709 limited 1.793 / -0.213 / -0.533 / 2.112 (float output: no rounding)
    for matrix, (rv, gu, gv, bu) in (("bt601", (1.596, -0.392, -0.813, 2.017)),
                                     ("bt709", (1.793, -0.213, -0.533, 2.112))):
        Y, U, V = 100, 140, 110
        out = conv([[Y, Y]] * 2, [[U]], [[V]], matrix, dtype="fp32").view(3, 4)[:, 0] * 255
        want = [1.164 * (Y - 16) + rv * (V - 128), 1.164 * (Y - 16) + gu * (U - 128) + gv * (V - 128),
                1.164 * (Y - 16) + bu * (U - 128)]
        assert torch.allclose(out.double(), torch.tensor(want, dtype=torch.float64), atol=0.05), (matrix, out, want)
    # full-range BT.601 (JFIF): pure red (255, 0, 0) is Y 76.245, Cb 84.97, Cr 255.5 -- stored 76, 85, 255:
    # R 76 + 1.402 x 127 = 254.05, G and B just below 0 (clamped)
    red = conv([[76, 76]] * 2, [[85]], [[255]], "bt601", "full").view(3, 4)[:, 0]
    assert red.tolist() == [254.0, 0.0, 0.0]
    # uint8 rounds half up; NHWC is the NCHW result permuted; ImageNet normalization
    o = conv([[50, 60], [70, 80]], [[90]], [[200]], "bt601", "full", dtype="fp32")
    o8 = conv([[50, 60], [70, 80]], [[90]], [[200]], "bt601", "full", dtype="u8", layout="NHWC")
    assert torch.equal(o8, torch.floor(o * 255 + 0.5).permute(0, 2, 3, 1))
    on = conv([[50, 60], [70, 80]], [[90]], [[200]], "bt601", "full", dtype="fp32", norm="imagenet")
    m = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)
    s = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1)
    assert torch.allclose(on, (o - m) / s, atol=1e-6)
    # the sited bilinear upsampling by hand: samples c[a, m] of a 2 x 2 chroma plane over 4 x 3 luma
    c = torch.tensor([[[0.0, 8.0], [16.0, 32.0]]], dtype=torch.float64)
    up = mod._upsample(c, 4, 3, "bilinear")[0]
    row0 = torch.tensor([0.0, 4.0, 8.0])                  # columns: sample 0, mean(0, 1), sample 1
    row1 = torch.tensor([16.0, 24.0, 32.0])
    assert torch.allclose(up[0], row0.double())            # row 0: 3/4 row 0 + 1/4 row 0 (clamped)
    assert torch.allclose(up[1], (0.75 * row0 + 0.25 * row1).double())
    assert torch.allclose(up[2], (0.75 * row1 + 0.25 * row0).double())
    assert torch.allclose(up[3], row1.double())            # row 3: 3/4 row 1 + 1/4 row 1 (clamped)
    assert mod._upsample(c, 3, 3, "nearest")[0].tolist() == [[0, 0, 8], [0, 0, 8], [16, 16, 32]]
    # grid / loop, bytes / flops, the baseline's dtype
    c = _cfg(16, 4, 2)
    assert mod.grid(c, p) == (1, 1, 2) and mod.grid(c, _pt(3, 17, 40, 64)) == (3, 3, 3)
    assert mod.loop_iterations(c, p) == 2
    assert mod.bytes_moved(p) == 2 * (7 * 11 + 4 * 12 + 3 * 7 * 11 * 2)
    assert mod.flops(p) == 28 * 2 * 7 * 11 and mod.flops(_pt(1, 2, 2, 16, dtype="u8")) == 12 * 4
    base = mod.torch_baseline(inp)
    assert base.dtype == torch.bfloat16 and base.shape == (2, 7, 11, 3)


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    inp = mod.make_inputs(_pt(2, 6, 10, 16), device="cpu")
    y, uv = inp["y"], inp["uv"]
    with pytest.raises(ValueError, match="BLOCK_W=100"):
        mod.nv12_to_rgb(y, uv, BLOCK_W=100)
    with pytest.raises(ValueError, match="BLOCK_W=8"):
        mod.nv12_to_rgb(y, uv, BLOCK_W=8)
    with pytest.raises(ValueError, match="ROWS=3"):
        mod.nv12_to_rgb(y, uv, ROWS=3)
    with pytest.raises(ValueError, match="ROWS=1"):
        mod.nv12_to_rgb(y, uv, ROWS=1)
    with pytest.raises(ValueError, match="16384"):
        mod.nv12_to_rgb(y, uv, BLOCK_W=2048, ROWS=16)
    with pytest.raises(ValueError, match="STEPS=0"):
        mod.nv12_to_rgb(y, uv, STEPS=0)
    with pytest.raises(ValueError, match="num_warps=3"):
        mod.nv12_to_rgb(y, uv, num_warps=3)
    with pytest.raises(ValueError, match="num_stages=0"):
        mod.nv12_to_rgb(y, uv, num_stages=0)
    with pytest.raises(ValueError, match="matrix 'bt2020'"):
        mod.nv12_to_rgb(y, uv, "bt2020")
    with pytest.raises(ValueError, match="color_range 'tv'"):
        mod.nv12_to_rgb(y, uv, color_range="tv")
    with pytest.raises(ValueError, match="chroma 'bicubic'"):
        mod.nv12_to_rgb(y, uv, chroma="bicubic")
    with pytest.raises(ValueError, match="layout 'CHW'"):
        mod.nv12_to_rgb(y, uv, layout="CHW")
    with pytest.raises(ValueError, match="torch.float64"):
        mod.nv12_to_rgb(y, uv, dtype=torch.float64)
    with pytest.raises(ValueError, match="not normalized"):
        mod.nv12_to_rgb(y, uv, dtype=torch.uint8, mean=(0.5, 0.5, 0.5))
    with pytest.raises(ValueError, match="3 values"):
        mod.nv12_to_rgb(y, uv, mean=(0.5,))
    with pytest.raises(ValueError, match="positive"):
        mod.nv12_to_rgb(y, uv, std=(1.0, 0.0, 1.0))
    with pytest.raises(ValueError, match=r"expected y \[N, H, W\] uint8"):
        mod.nv12_to_rgb(y.float(), uv)
    with pytest.raises(ValueError, match=r"expected uv .*\(2, 3, 5, 2\)"):
        mod.nv12_to_rgb(y, uv[:, :2])
    with pytest.raises(ValueError, match="uv must be on y's device"):
        mod.nv12_to_rgb(y, uv.to("meta"))
    with pytest.raises(ValueError, match="unit column stride"):
        mod.nv12_to_rgb(torch.zeros(2, 6, 20, dtype=torch.uint8)[:, :, ::2], uv)
    with pytest.raises(ValueError, match="interleaved NV12"):
        mod.nv12_to_rgb(y, torch.zeros(2, 2, 3, 5, dtype=torch.uint8).permute(0, 2, 3, 1)[..., :2])
    big = torch.empty_strided((1, 40000, 40000), (0, 60000, 1), dtype=torch.uint8, device="meta")
    with pytest.raises(ValueError, match="int32 offsets"):
        mod.nv12_to_rgb(big, torch.empty((1, 20000, 20000, 2), dtype=torch.uint8, device="meta"))
    many = torch.empty((70000, 2, 2), dtype=torch.uint8, device="meta")
    with pytest.raises(ValueError, match="65535"):
        mod.nv12_to_rgb(many, torch.empty((70000, 1, 1, 2), dtype=torch.uint8, device="meta"))
    with pytest.raises(ValueError, match="dtype 'int8'"):
        mod.make_inputs(_pt(1, 4, 4, 16, dtype="int8", norm="unit"), device="cpu")
    with pytest.raises(ValueError, match="pitch=10"):
        mod.bytes_moved(_pt(1, 4, 11, 10))
    with pytest.raises(ValueError, match="norm 'imagenet' with dtype 'u8'"):
        mod.flops(_pt(1, 4, 4, 16, dtype="u8", norm="imagenet"))
    with pytest.raises(ValueError, match="norm 'none' with dtype 'fp16'"):
        mod.flops(_pt(1, 4, 4, 16, dtype="fp16", norm="none"))
    with pytest.raises(ValueError, match="W=0"):
        mod.grid(mod.BASELINE, _pt(1, 4, 0, 16))
    with pytest.raises(ValueError, match="range 'studio'"):
        mod.grid(mod.BASELINE, _pt(1, 4, 4, 16, rng="studio"))
    with pytest.raises(ValueError, match="STEPS=3.5"):
        mod.loop_iterations(dict(mod.BASELINE, STEPS=3.5), mod.POINTS[0])
    # nothing to convert: an empty output, nothing launched
    e = mod.nv12_to_rgb(y[:, :0], uv[:, :0], layout="NHWC", dtype=torch.uint8)
    assert e.shape == (2, 0, 10, 3) and e.dtype == torch.uint8


def test_sweep_fits_the_points():
    """The study sweep: 54 configs (BLOCK_W 128 / 256 / 512, ROWS 2 / 4 / 8, STEPS 1 / 2 / 4, 4 / 8 warps,
    num_stages 1) with BASELINE among them; at every point each config is valid, launches >= 4 waves of
    programs on an H100 (4352 at the fewest: 512 x 32 pixels a program, 4 x 34 x 32 at the 1080p point
    and 8 x 68 x 8 at the 4K point) and its shared-memory bound (4 ROWS / 2 BLOCK_W + 1024 bytes) fits
    sm_90's. (Every config was compiled for sm_90 at every point with triton 3.6.0 and 3.9.0: all compile,
    none spills; registers 26-242 under 3.6 and 26-149 under 3.9, the most for 512 x 8 rows on 4 warps (32
    pixels a thread) at the 4K bilinear uint8 NHWC point (208-242 under 3.6, 112-149 under 3.9; 26-80 at
    the 1080p nearest fp16 point, 31-128 at the 720p bilinear fp32 point); shared memory 0-2048 bytes under
    both: NCHW 0 where a [ROWS / 2, BLOCK_W] tile has two or more pixels a thread (the loads in the stores'
    VEC runs, the U / V pairs in-thread), 512-1024 below that (the split's layout conversion); NHWC
    256-2048 (the pixel-strided stores' own layout). A runtime step count -- min(STEPS, cdiv(H - r0,
    ROWS)) -- made triton 3.6's ptxas spill 2 registers at 128 x 4 rows x 2-4 steps on 8 warps (fp32
    bilinear), hence the fixed STEPS loop; for sm_120, 3.6 still spills 6 at 128 x 4 x 4 steps on 8 warps
    there, 3.9 none.)"""
    mod = load_example(KERNEL)
    axes = SWEEP_AXES
    assert set(axes) == set(mod.TUNABLES) and mod.SWEEP_AXES == axes
    assert all(len(v) >= 2 for k, v in axes.items() if k != "num_stages") and axes["num_stages"] == [1]
    cfgs = [dict(zip(axes, v)) for v in itertools.product(*axes.values())]
    assert 48 <= len(cfgs) <= 72 and mod.BASELINE in cfgs
    fewest = min(math.prod(mod.grid(c, p)) for p in mod.POINTS for c in cfgs)
    assert fewest == 4352
    for p in mod.POINTS:
        for c in cfgs:
            mod._check_cfg(c)
            gx, gy, gz = mod.grid(c, p)
            assert gx * gy * gz >= 4 * H100_SMS and gy <= 65535 and gz <= 65535, (p, c)
            assert _smem_bound(c) <= SM90_SMEM_PER_BLOCK, (p, c)
            assert mod.loop_iterations(c, p) == c["STEPS"]


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
    """On sm_90 at each point: BASELINE-like, the register-heaviest (512 x 8 rows on 4 warps) and 8-warp
    corners under a pixel a thread compile without spills, their shared memory within the bound."""
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
            assert 0 <= res.shared <= _smem_bound(cfg), (pi, cfg, res.shared)
            if p["layout"] == "NCHW" and (cfg["ROWS"] // 2) * cfg["BLOCK_W"] >= 2 * 32 * cfg["num_warps"]:
                assert res.shared == 0, (pi, cfg, res.shared)      # VEC runs, U / V pairs in-thread: no conversion


@pytest.mark.slow
def test_example_compiles_sm120(shared_cache):
    """On sm_120 (99 KiB a block): BASELINE, the register-heaviest config and 128 x 2 rows on 8 warps compile
    at the first point (the 1080p clip, nearest, NCHW fp16) without spills within its shared memory. (All
    54 sweep configs compile there at every point: 25-142 registers, none spilling, under triton 3.9.0;
    25-228 under 3.6.0, where 128 x 4 rows x 4 steps on 8 warps at the fp32 bilinear point spills 6.)"""
    for cfg, res in H.compile_results(KERNEL, SM120_CFGS, "sm_120"):
        assert res.status == "ok", f"{cfg} on sm_120: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.n_spills == 0, (cfg, res.n_regs, res.n_spills)
        assert 0 <= res.shared <= min(_smem_bound(cfg), SM120_SMEM_PER_BLOCK), (cfg, res.shared)


# ----------------------------------------------------------------- the subprocess side
def _run() -> None:
    """Every case through launch against reference (the harness's tolerance) and against half an ulp +
    1e-4 levels (float) / 0.5 + 1e-3 levels of the unrounded RGB (uint8); torch_baseline against
    reference; the flags the launch used; the inputs unchanged; one JSON line."""
    import torch

    H.patch_interpreter_bf16_rounding()
    H.patch_interpreter_index()
    mod = load_example(KERNEL)
    names = {torch.float16: "fp16", torch.bfloat16: "bf16", torch.float32: "fp32", torch.uint8: "u8"}

    def differs(inputs, ref, **change):
        return bool((mod.reference(dict(inputs, **change)) - ref).abs().max() > 1e-3)

    def extra(name, point, inputs, out, ref):
        cfg = CASES[KERNEL][name][1]
        y, uv = inputs["y"], inputs["uv"]
        rgb = mod._rgb(inputs, torch.float64)                          # [N, 3, H, W], unrounded
        if inputs["layout"] == "NHWC":
            rgb = rgb.permute(0, 2, 3, 1)
        if out.dtype == torch.uint8:
            loose = (out.double() - rgb).abs() > 0.5 + 1e-3
        else:
            u = {torch.bfloat16: 2.0 ** -8, torch.float16: 2.0 ** -11, torch.float32: 2.0 ** -24}[out.dtype]
            smax = 1.0 / (255.0 * min(inputs["std"]))
            loose = (out.double() - ref.double()).abs() > u * ref.double().abs() + 1e-4 * smax + 1e-30
        a = mod._kernel_args(y, uv, out, inputs["matrix"], inputs["color_range"], inputs["chroma"],
                             inputs["layout"], inputs["mean"], inputs["std"], cfg)
        other = {"nearest": "bilinear", "bilinear": "nearest"}
        return {"dtype": names.get(out.dtype), "contiguous": out.is_contiguous(), "n_loose": int(loose.sum()),
                "inputs_unchanged": bool(torch.equal(y, inputs["y0"]) and torch.equal(uv, inputs["uv0"])),
                "flags": {k: a[k] for k in ("BILINEAR", "NORMALIZE", "VEC")},
                "chroma_matters": differs(inputs, ref, chroma=other[inputs["chroma"]]),
                "matrix_matters": differs(inputs, ref, matrix="bt601" if inputs["matrix"] == "bt709" else "bt709"),
                "range_matters": differs(inputs, ref,
                                         color_range="full" if inputs["color_range"] == "limited" else "limited"),
                "clamped": float(((rgb == 0) | (rgb == 255)).double().mean()),
                "y_strides": list(y.stride()), "uv_strides": list(uv.stride()),
                "baseline": H.compare(mod.torch_baseline(inputs), ref, point["dtype"], TOL)}

    H.run_cases(KERNEL, CASES[KERNEL], tol_table=TOL, prepare=_prepare, extra=extra)


if __name__ == "__main__":
    _run()
