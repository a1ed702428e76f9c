"""examples/bilinear_resize.py (interpolate(mode="bilinear", align_corners=False) forward: a
[BLOCK_P pixels, TILE_C channels] four-tap gather per CTA, fp32 weights and blend, walking the
image's channels) against torch's interpolate on the CPU through Triton's interpreter, its
launcher hooks against the shapes, its study sweep against the points, and a compile for sm_90
and sm_120 from its own ``example_args``.

As in test_examples_round21_c.py the interpreter cases run in a subprocess (this file run as a
script: ``python tests/test_examples_round22_a.py bilinear_resize``) that prints one JSON line.
The interpreter's fp32 -> bf16 conversion truncates; the subprocess replaces it with torch's
round-to-nearest-even (the GPU's cvt.rn), and under triton 3.6 with numpy >= 2.3 it lets the
channel loop's runtime bound be read as an int (see example_harness.patch_interpreter_index).

Shapes are small, odd and ragged: OH * OW not a multiple of BLOCK_P (the last tile's pixels past
the image, masked at the store only), C not a multiple of TILE_C (the masked channel tail) and a
multiple (EVEN_C, unmasked loads), C = 3 (TILE_C clamped to 4) and C = 1; upsampling and
downsampling by integer and non-integer factors, an output size given and a scale factor given
(torch maps the coordinates by 1 / scale_factor, not H / OH), a (h, w) factor pair, H = 1 and
OH = 1 (the clamped taps); NCHW and channels_last, a channel slice of a wider channels_last tensor
and a row-strided NCHW view (both read in place); every dtype; BLOCK_C 4-64, ELEMS_PER_THREAD
1-16, 1-8 warps, num_stages 1 / 2.

Per case: launch's output against the fp32 reference (harness tolerance x max|ref|; fp32 within
1e-5: the same fp32 coordinate arithmetic as torch's), its dtype, shape and memory format (the
input's), and torch_baseline against the same reference.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
KERNEL = "bilinear_resize"
ROLE = "held-out-22"
H200_SMS = 132
SM120_SMEM_PER_BLOCK = 99 * 1024

# the study's sweep (scripts/rank_study.py SWEEPS["bilinear_resize"] once the lead adds it)
SWEEP_AXES = {"BLOCK_C": [8, 16, 32, 64, 128], "ELEMS_PER_THREAD": [4, 8, 16], "num_warps": [2, 4, 8],
              "num_stages": [1]}


def _cfg(bc, ept, w=4, st=1):
    return {"BLOCK_C": bc, "ELEMS_PER_THREAD": ept, "num_warps": w, "num_stages": st}


def _pt(N, C, H, W, OH=None, OW=None, layout="NCHW", dtype="fp32", scale_factor=None):
    p = {"N": N, "C": C, "H": H, "W": W, "layout": layout, "dtype": dtype}
    if scale_factor is None:
        p.update(OH=OH, OW=OW)
    else:
        p["scale_factor"] = scale_factor
    return p


# case -> (point, cfg); comments: TILE_C x BLOCK_P, the tails
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        # NHWC 2x upsample, C 20 in tiles of 8 (3 blocks, the last masked), 13 tiles of 16 px (the last 4 of 196)
        "nhwc_up2_fp32": (_pt(2, 20, 7, 7, 14, 14, "NHWC"), _cfg(8, 1, 4)),
        # NCHW RGB downsample 40x36 -> 7x9 (factors 5.7 / 4), C 3 -> TILE_C 4 (masked), one tile of 64 px
        "nchw_down_rgb_fp16": (_pt(3, 3, 40, 36, 7, 9, "NCHW", "fp16"), _cfg(16, 4, 2, 2)),
        # NHWC scale_factor 1.7 (5x6 -> 8x10, coords by 1/1.7), C 16 = 2 x 8 (EVEN_C), 16 px a tile
        "nhwc_sf_bf16": (_pt(2, 16, 5, 6, layout="NHWC", dtype="bf16", scale_factor=1.7), _cfg(8, 2, 2)),
        # NCHW non-integer upsample 9x7 -> 23x19, C 32 = 2 x 16 (EVEN_C), 16 x 8 warps x 32 / 16 px
        "nchw_up_bf16": (_pt(2, 32, 9, 7, 23, 19, "NCHW", "bf16"), _cfg(16, 16, 8)),
        # channels_last slice x[:, 3:13] of a 24-channel tensor (read in place), 13x11 -> 6x17 (down / up),
        # C 10 in one 16-wide tile (TILE_C 16, masked)
        "nhwc_slice_fp16": (_pt(2, 10, 13, 11, 6, 17, "NHWC", "fp16"), _cfg(64, 4, 1)),
        # NCHW view with rows pitched 2W (x[..., :W] of a wider buffer), (h, w) factor pair (2.5, 0.6):
        # H 1 (y1 clamped) -> OH 2, W 15 -> OW 9; C 5 -> TILE_C 8
        "nchw_strided_pair_fp32": (_pt(3, 5, 1, 15, layout="NCHW", scale_factor=(2.5, 0.6)), _cfg(8, 2, 1, 2)),
        # single channel, OH 1 (a row from the middle), 12x30 -> 1x64: TILE_C 1, 64 px, 1 tile
        "c1_row_fp32": (_pt(2, 1, 12, 30, 1, 64, "NCHW"), _cfg(32, 2, 1)),
        # NHWC C 64 (EVEN_C at TILE_C 64, 1 block) identity size 6x6 -> 6x6, 8 px a tile
        "nhwc_identity_bf16": (_pt(1, 64, 6, 6, 6, 6, "NHWC", "bf16"), _cfg(64, 8, 2)),
    },
}
SLICED, STRIDED = "nhwc_slice_fp16", "nchw_strided_pair_fp32"

# configs compiled at the module's first POINT (sm_90: BASELINE first)
COMPILE_CFGS = [_cfg(32, 8, 4), _cfg(8, 16, 8), _cfg(128, 4, 2), _cfg(64, 16, 2)]
SM120_CFGS = [_cfg(32, 8, 4), _cfg(128, 16, 8)]


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """SLICED: x the channels 3:3+C of a 24-channel channels_last tensor; STRIDED: x the first W
    columns of an NCHW buffer 2W wide (both read in place by the kernel)."""
    import torch

    x = inputs["x"]
    Nb, C, Hh, Ww = x.shape
    if name == SLICED:
        wide = torch.full((Nb, Hh, Ww, 24), 9.0, dtype=x.dtype)
        wide[..., 3:3 + C] = x.permute(0, 2, 3, 1)
        inputs["x"] = wide.permute(0, 3, 1, 2)[:, 3:3 + C]
    if name == STRIDED:
        wide = torch.full((Nb, C, Hh, 2 * Ww), 9.0, dtype=x.dtype)
        wide[..., :Ww] = x
        inputs["x"] = wide[..., :Ww]


# ----------------------------------------------------------------- the pytest side
def _results() -> dict:
    return H.interpreter_results(HERE, KERNEL)


@pytest.mark.parametrize("name", list(CASES[KERNEL]))
def test_example_matches_reference(name):
    res = _results()[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    p = CASES[KERNEL][name][0]
    mod = load_example(KERNEL)
    OH, OW, _, _ = mod._geometry(p)
    assert res["shape"] == [p["N"], p["C"], OH, OW]
    assert res["n_bad"] == 0, H.mismatch(res, f"{name} launch")
    if p["dtype"] == "fp32":
        assert res["max_err"] <= 1e-5 * max(res["scale"], 1.0), res
    assert res["dtype"] == res["x_dtype"] and res["channels_last"] == (p["layout"] == "NHWC" and p["C"] > 1), res
    assert res["baseline"]["n_bad"] == 0, H.mismatch(res["baseline"], f"{name} torch_baseline")


def test_cases_cover_every_code_path():
    """Every tunable at >= 2 values (the swept ranges bracketed); both layouts, every dtype; the
    channel tail and EVEN_C; the pixel tail and an exact tile; more than one channel block; TILE_C
    clamped below BLOCK_C; up- and downsampling, size and scale_factor, H = 1, OH = 1; both views."""
    H.assert_tunables_covered(CASES)
    mod = load_example(KERNEL)
    cases = list(CASES[KERNEL].values())
    assert {p["layout"] for p, _ in cases} == set(mod.LAYOUTS)
    assert {p["dtype"] for p, _ in cases} == set(mod.DTYPES)
    tiles = []
    for p, c in cases:
        OH, OW, _, _ = mod._geometry(p)
        tc, bp = mod._tile(p["C"], c)
        tiles.append((p, c, OH, OW, tc, bp))
    assert any(p["C"] % tc for p, *_, tc, _ in tiles) and any(p["C"] % tc == 0 for p, *_, tc, _ in tiles)
    assert any((OH * OW) % bp for _, _, OH, OW, _, bp in tiles)
    assert any(OH * OW == bp for _, _, OH, OW, _, bp in tiles)
    assert any(-(-p["C"] // tc) >= 3 for p, *_, tc, _ in tiles)
    assert any(tc < c["BLOCK_C"] for _, c, *_, tc, _ in tiles)
    assert any(OH > p["H"] for p, _, OH, *_ in tiles) and any(OH < p["H"] for p, _, OH, *_ in tiles)
    assert any("scale_factor" in p for p, _ in cases) and any("OH" in p for p, _ in cases)
    assert any(p["H"] == 1 for p, _ in cases) and any(OH == 1 for _, _, OH, *_ in tiles)
    assert any(p["C"] == 1 for p, _ in cases) and any(p["C"] == 3 for p, _ in cases)
    for k in ("BLOCK_C", "ELEMS_PER_THREAD", "num_warps"):
        tested = {c[k] for _, c in cases}
        assert min(tested) <= min(SWEEP_AXES[k]) and max(tested) >= min(max(SWEEP_AXES[k]), 64), (k, tested)


def test_launcher_hooks_agree_with_shapes():
    """At every point and sweep config: example_args on meta with the launch's shapes, dtypes and
    strides (x and out in the point's layout), the derived TILE_C / BLOCK_P / EVEN_C, the grid and
    the channel walk; bytes_moved / flops; inputs < 4 GB; 20 us - 5 ms of traffic."""
    import torch

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "example_args", "torch_baseline", "bilinear_resize"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert not hasattr(mod, "secondary_kernels") and not hasattr(mod, "cta_iterations")
    assert len(mod.POINTS) == 3 and mod.BASELINE["num_stages"] == 1
    dts = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}
    cfgs = [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]
    for p in mod.POINTS:
        Nb, C, Hh, Ww, OH, OW, dt = p["N"], p["C"], p["H"], p["W"], p["OH"], p["OW"], dts[p["dtype"]]
        cl = p["layout"] == "NHWC"
        xs = (Hh * Ww * C, 1, Ww * C, C) if cl else (C * Hh * Ww, Hh * Ww, Ww, 1)
        ys = (OH * OW * C, 1, OW * C, C) if cl else (C * OH * OW, OH * OW, OW, 1)
        for cfg in cfgs:
            args = mod.example_args(cfg, p)
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for v in args.values())
            assert args["X"].shape == (Nb, C, Hh, Ww) and args["X"].dtype == dt and args["X"].stride() == xs
            assert args["Y"].shape == (Nb, C, OH, OW) and args["Y"].dtype == dt and args["Y"].stride() == ys
            assert (args["C"], args["H"], args["W"], args["OH"], args["OW"]) == (C, Hh, Ww, OH, OW)
            assert (args["scale_h"], args["scale_w"]) == (Hh / OH, Ww / OW)
            assert (args["stride_xn"], args["stride_xc"], args["stride_xh"], args["stride_xw"]) == xs
            assert (args["stride_yn"], args["stride_yc"], args["stride_yq"]) == (ys[0], ys[1], ys[3])
            tc = min(cfg["BLOCK_C"], 1 << (C - 1).bit_length())
            bp = cfg["ELEMS_PER_THREAD"] * 32 * cfg["num_warps"] // tc
            assert (args["TILE_C"], args["BLOCK_P"], args["EVEN_C"]) == (tc, bp, int(C % tc == 0))
            assert tc * bp == cfg["ELEMS_PER_THREAD"] * 32 * cfg["num_warps"]
            assert mod.grid(cfg, p) == (-(-OH * OW // bp), Nb)
            assert mod.loop_iterations(cfg, p) == -(-C // tc)
        e = 4 if p["dtype"] == "fp32" else 2
        ih, iw = mod._taps(Hh, OH, Hh / OH), mod._taps(Ww, OW, Ww / OW)
        assert (ih, iw) == ((Hh, Ww) if OH >= Hh else (896, 896))
        assert mod.bytes_moved(p) == e * Nb * C * (ih * iw + OH * OW)
        assert mod.flops(p) == 9 * Nb * C * OH * OW
        assert e * Nb * C * (Hh * Ww + OH * OW) < 4 * 2**30
        # roughly 20 us - 5 ms at the H100's ~3.35 TB/s / the H200's ~4.8 TB/s
        assert 20e-6 < mod.bytes_moved(p) / 4.8e12 and mod.bytes_moved(p) / 3.35e12 < 5e-3


def test_hooks_on_small_points_and_inputs():
    """make_inputs: shapes, dtypes, layouts, the seed; the geometry of size and scale_factor
    (torch's output size); reference's shape and dtype; a constant image stays constant (to fp32 rounding)."""
    import torch

    mod = load_example(KERNEL)
    p = _pt(2, 5, 7, 9, 4, 11, "NHWC", "bf16")
    inp = mod.make_inputs(p, seed=1, device="cpu")
    x = inp["x"]
    assert x.shape == (2, 5, 7, 9) and x.dtype == torch.bfloat16 and x.is_contiguous(memory_format=torch.channels_last)
    assert inp["size"] == (4, 11) and inp["scale_factor"] is None
    assert mod.make_inputs(_pt(2, 5, 7, 9, 4, 11), device="cpu")["x"].is_contiguous()
    ref = mod.reference(inp)
    assert ref.shape == (2, 5, 4, 11) and ref.dtype == torch.float32
    assert torch.equal(mod.make_inputs(p, seed=1, device="cpu")["x"], x)
    assert not torch.equal(mod.make_inputs(p, seed=2, device="cpu")["x"], x)
    for H_, W_, sf in ((5, 6, 1.7), (7, 9, (2.5, 0.6)), (1024, 1024, 0.4375), (49, 49, 3.94)):
        OH, OW, sh, sw = mod._geometry(_pt(1, 1, H_, W_, scale_factor=sf))
        t = torch.nn.functional.interpolate(torch.zeros(1, 1, H_, W_), scale_factor=sf, mode="bilinear",
                                            align_corners=False)
        assert (OH, OW) == tuple(t.shape[2:])
    assert mod._geometry(_pt(1, 1, 5, 6, scale_factor=1.7))[2:] == (1 / 1.7, 1 / 1.7)
    const = {"x": torch.full((1, 2, 5, 3), 3.0), "size": (8, 7), "scale_factor": None}
    assert torch.allclose(mod.reference(const), torch.full((1, 2, 8, 7), 3.0), rtol=0, atol=1e-6)


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    x = torch.ones(1, 3, 8, 8)
    with pytest.raises(ValueError, match="BLOCK_C=48"):
        mod.bilinear_resize(x, (4, 4), BLOCK_C=48)
    with pytest.raises(ValueError, match="ELEMS_PER_THREAD=0"):
        mod.bilinear_resize(x, (4, 4), ELEMS_PER_THREAD=0)
    with pytest.raises(ValueError, match="exactly one"):
        mod.bilinear_resize(x)
    with pytest.raises(ValueError, match="exactly one"):
        mod.bilinear_resize(x, (4, 4), 2.0)
    with pytest.raises(ValueError, match="expected x"):
        mod.bilinear_resize(torch.ones(3, 8, 8), (4, 4))
    with pytest.raises(ValueError, match="fp16 / bf16 / fp32"):
        mod.bilinear_resize(x.double(), (4, 4))
    with pytest.raises(ValueError, match="empty output"):
        mod.bilinear_resize(x, scale_factor=0.1)
    with pytest.raises(ValueError, match="dtype 'fp8'"):
        mod.make_inputs(_pt(1, 1, 4, 4, 2, 2, dtype="fp8"), device="cpu")
    with pytest.raises(ValueError, match="layout 'NHCW'"):
        mod.bytes_moved(_pt(1, 1, 4, 4, 2, 2, layout="NHCW"))
    with pytest.raises(ValueError, match="not both"):
        mod.grid(mod.BASELINE, {**_pt(1, 1, 4, 4, 2, 2), "scale_factor": 2.0})
    with pytest.raises(ValueError, match="C=0"):
        mod.grid(mod.BASELINE, _pt(1, 0, 4, 4, 2, 2))


def test_sweep_fits_the_points():
    """The study sweep: 45 configs (BLOCK_C 8-128 x ELEMS_PER_THREAD 4-16 x 2 / 4 / 8 warps,
    num_stages 1) with BASELINE among them, the same as scripts/rank_study.py's entry once it is
    there; at every point each config is valid and launches >= 2 waves of CTAs on an H200.
    (Every config was compiled for sm_90 with triton 3.6.0 and 3.9.0 at every point, 135 compiles
    each: all compile, none spills. 3.6.0: 32-100 registers, no shared memory. 3.9.0: 32-255
    registers, 0-16 KiB shared memory -- on the NCHW points 3.9 breaks the tie between the gather's
    two non-contiguous axes the other way (channels fastest) and converts the layout for the
    store through shared memory. num_stages 1 and 3 give the same sm_90 cubin: no dot, and the
    channel loop's gathers are not pipelined, hence the one value.)"""
    mod = load_example(KERNEL)
    try:
        configs, points, axes = H.study_sweeps([KERNEL], ROLE)[KERNEL]
    except KeyError:                      # the entry is not in SWEEPS yet
        configs, axes = None, SWEEP_AXES
    assert axes == SWEEP_AXES
    assert set(axes) == set(mod.TUNABLES)
    assert all(len(v) >= 2 for k, v in axes.items() if k != "num_stages") and axes["num_stages"] == [1]
    cfgs = [dict(zip(axes, v)) for v in itertools.product(*axes.values())]
    assert 40 <= len(cfgs) <= 72 and mod.BASELINE in cfgs
    assert configs is None or len(configs) == len(cfgs)
    for p in mod.POINTS:
        for c in cfgs:
            mod._check_cfg(c)
            gx, gy = mod.grid(c, p)
            assert gx * gy >= 2 * H200_SMS, (p, c)
    # the points differ in character: layout, dtype, up / down, an integer and a non-integer factor
    assert {p["layout"] for p in mod.POINTS} == {"NCHW", "NHWC"}
    assert {p["dtype"] for p in mod.POINTS} == {"bf16", "fp16", "fp32"}
    assert any(p["OH"] < p["H"] for p in mod.POINTS) and any(p["OH"] > p["H"] for p in mod.POINTS)
    assert any(p["OH"] % p["H"] for p in mod.POINTS if p["OH"] > p["H"])


def test_examples_import_without_torch():
    proc = H.imports_without_torch(CASES)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr[-2000:]


@pytest.mark.slow
def test_example_compiles_sm90(shared_cache):
    """On sm_90: BASELINE and three more at the NHWC point (BLOCK_P 16-512, TILE_C 8-128) compile
    without spills; and BASELINE and a 16-elements-a-thread config at the two NCHW points."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    assert COMPILE_CFGS[0] == mod.BASELINE
    for cfg, res in H.compile_results(KERNEL, COMPILE_CFGS, "sm_90"):
        assert res.status == "ok", f"{cfg} on sm_90: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.shared <= 32 * 1024 and res.n_spills == 0, (cfg, res.n_regs, res.shared)
    for p in mod.POINTS[1:]:
        for cfg in (COMPILE_CFGS[0], COMPILE_CFGS[1]):
            res = compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch="sm_90",
                                 num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
            assert res.status == "ok" and res.n_spills == 0 and res.shared <= 32 * 1024, res.message


@pytest.mark.slow
def test_example_compiles_sm120(shared_cache):
    for cfg, res in H.compile_results(KERNEL, SM120_CFGS, "sm_120"):
        assert res.status == "ok", f"{cfg} on sm_120: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.shared <= SM120_SMEM_PER_BLOCK and res.n_spills == 0


# ----------------------------------------------------------------- the subprocess side
def _run() -> None:
    """Every case through launch against reference (as the GPU study's gate) and torch_baseline
    against the same reference; the output's dtype and memory format; one JSON line."""
    H.patch_interpreter_bf16_rounding()
    H.patch_interpreter_index()

    def extra(name, point, inputs, out, ref):
        return {"dtype": str(out.dtype), "x_dtype": str(inputs["x"].dtype),
                "channels_last": bool(out.shape[1] > 1 and out.stride(1) == 1)}

    H.run_cases(KERNEL, CASES[KERNEL], prepare=_prepare, baseline=True, extra=extra)


if __name__ == "__main__":
    _run()
