"""examples/layernorm2d_nchw.py (the channels-first LayerNorm2d of ConvNeXt / SAM's neck / detection
backbones on an NCHW tensor: fp32 statistics over the strided channel dimension, per-channel affine)
against its fp64 torch reference on the CPU through Triton's interpreter, its launcher hooks against
the shapes, its study sweep against the points, and a compile for sm_90 and sm_120 from its own
``example_args``.

As in test_examples_round22_d.py the interpreter cases run in a subprocess (this file run as a
script: ``python tests/test_examples_round23_d.py layernorm2d_nchw``) that prints one JSON line. The
interpreter's fp32 -> bf16 conversion truncates; the subprocess replaces it with torch's
round-to-nearest-even one (the GPU's cvt.rn), and under triton 3.6 with numpy >= 2.3 it lets the
channel loops' runtime bound be read as an int (example_harness.patch_interpreter_index).

Shapes are small, odd and ragged: C from 3 to 2000 (a tile wider than C, TILE_C not dividing C:
EVEN_C 0, and dividing it), planes H*W of 1 (a 1x1 head norm), 63, 120, 196 and 256 pixels (HW_ALIGN
1, 8, 4, 16: the rebuilt plane size's divisibility), several pixel tiles with a partial last one, more
than one image; BLOCK_P 16-256, BLOCK_C 2-32, 1-8 warps, num_stages 1 / 2; fp32, bf16 and fp16 x;
weight / bias fp32 (make_inputs) or in x's dtype; a channels_last x (made contiguous by the
launcher); a mean offset of 300 against a spread of ~1 (fp32: the plain sum / sum-of-squares
variance would be off by percents there, the shifted sums are not).

Per case: (1) launch's output against reference as the GPU study's gate sees it (the harness's
tolerance x max|ref|); (2) the output [N, C, H, W], contiguous, in x's dtype; (3) tighter: every
element within half an ulp of the output dtype (the one rounding of y) + 2e-5 x max|ref| (the fp32
statistics); (4) torch_baseline against the reference too.
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
KERNEL = "layernorm2d_nchw"
ROLE = "held-out-23"
H200_SMS = 132
SM120_SMEM_PER_BLOCK = 99 * 1024

# the study's sweep (scripts/rank_study.py SWEEPS["layernorm2d_nchw"] once the lead adds it)
SWEEP_AXES = {"BLOCK_P": [32, 64, 128, 256], "BLOCK_C": [2, 4, 8, 16], "num_warps": [2, 4, 8], "num_stages": [1]}


def _cfg(bp, bc, w=4, st=1):
    return {"BLOCK_P": bp, "BLOCK_C": bc, "num_warps": w, "num_stages": st}


def _pt(n, c, h, w, dtype="fp32"):
    return {"N": n, "C": c, "H": h, "W": w, "dtype": dtype}


# case -> (point, cfg); comments: TILE_C x TILE_P, EVEN_C, HW_ALIGN, grid
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        # 4 x 32 tile over C 5 (EVEN_C 0: the second step 1 channel of 4), 63-pixel planes (HW_ALIGN 1),
        # grid (2, 2): the second tile 31 pixels
        "ragged_c5_fp32": (_pt(2, 5, 7, 9, "fp32"), _cfg(32, 4, 2)),
        # ConvNeXt's 14x14 plane (196, HW_ALIGN 4): 16 x 64 tiles, C 48 (EVEN_C 1), grid (4, 2),
        # the last tile 4 pixels
        "convnext_plane_bf16": (_pt(2, 48, 14, 14, "bf16"), _cfg(64, 16, 4)),
        # C 2000 (the production limit), 32 x 16 tiles (EVEN_C 0: 2000 = 62 x 32 + 16), 15-pixel planes
        "wide_c2000_fp16": (_pt(1, 2000, 3, 5, "fp16"), _cfg(16, 32, 8)),
        # C 3 under a BLOCK_C of 16: TILE_C 4 (EVEN_C 0); 8x8 planes (HW_ALIGN 16) under BLOCK_P 256:
        # TILE_P 64, grid (1, 3)
        "clamped_tiles_c3_fp32": (_pt(3, 3, 8, 8, "fp32"), _cfg(256, 16, 4)),
        # a 1x1 head norm: TILE_P 1, C 256 in 2-channel steps (128 iterations a pass), 4 images
        "head_1x1_bf16": (_pt(4, 256, 1, 1, "bf16"), _cfg(128, 2, 1)),
        # 10x12 planes (HW_ALIGN 8), 8 x 128 tiles, 8 warps, C 24: one tile an image, 56 % masked
        "align8_fp16": (_pt(2, 24, 10, 12, "fp16"), _cfg(128, 8, 8, 2)),
        # mean offset 300 against a spread ~1 (fp32): the shifted sums' case; 8 x 64 tiles, 2 warps
        "offset300_fp32": (_pt(2, 40, 6, 11, "fp32"), _cfg(64, 8, 2)),
        # x channels_last (the launcher makes it contiguous), weight / bias bf16 (x's dtype);
        # 16x16 planes, 4 x 32 tiles, C 12, grid (8, 2)
        "channels_last_bf16_params_bf16": (_pt(2, 12, 16, 16, "bf16"), _cfg(32, 4, 2, 2)),
    },
}

# configs compiled at the module's first POINT (sm_90: BASELINE first); the sweep's corners
COMPILE_CFGS = [_cfg(128, 8, 4), _cfg(256, 16, 2), _cfg(32, 2, 8), _cfg(64, 4, 2)]
SM120_CFGS = [_cfg(128, 8, 4), _cfg(256, 16, 8)]


# ----------------------------------------------------------------- the pytest side
def _results() -> dict:
    return H.interpreter_results(HERE, KERNEL)


@pytest.mark.parametrize("name", list(CASES[KERNEL]))
def test_example_matches_reference(name):
    res = _results()[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    p = CASES[KERNEL][name][0]
    assert res["shape"] == [p["N"], p["C"], p["H"], p["W"]] and res["contiguous"] is True
    assert res["dtype"] == p["dtype"]
    for what, r in (("kernel", res), ("torch_baseline", res["baseline"])):
        assert r["n_bad"] == 0, H.mismatch(r, f"{name} {what}")
    assert res["ulp_ratio"] <= 1.0, (name, res["ulp_ratio"])


def test_cases_cover_every_code_path():
    """Every tunable at >= 2 values (over the sweep's range and beyond); every dtype; EVEN_C 0 and 1;
    HW_ALIGN 1, 4, 8 and 16; both clamps (TILE_C < BLOCK_C, TILE_P < BLOCK_P); a partial last pixel
    tile; more than one image; C up to 2000."""
    H.assert_tunables_covered(CASES)
    mod = load_example(KERNEL)
    cases = list(CASES[KERNEL].values())
    assert {p["dtype"] for p, _ in cases} == set(mod.DTYPES)
    tiles = [(mod._tile(p["C"], p["H"] * p["W"], c), p, c) for p, c in cases]
    assert {p["C"] % tc == 0 for (tc, _), p, _ in tiles} == {True, False}
    assert {mod.hw_align(p["H"] * p["W"]) for p, _ in cases} >= {1, 4, 8, 16}
    assert any(tc < c["BLOCK_C"] for (tc, _), _, c in tiles)
    assert any(tp < c["BLOCK_P"] for (_, tp), _, c in tiles)
    assert any(p["H"] * p["W"] % tp and p["H"] * p["W"] > tp for (_, tp), p, _ in tiles)
    assert any(p["N"] > 1 for p, _ in cases) and max(p["C"] for p, _ in cases) >= 2000
    for k in ("BLOCK_P", "BLOCK_C", "num_warps"):
        tested = {c[k] for _, c in cases}
        assert min(tested) <= min(SWEEP_AXES[k]) and max(tested) >= max(SWEEP_AXES[k]), (k, tested)


def test_launcher_hooks_agree_with_shapes():
    """At every point and sweep config: example_args on meta with the launch's shapes and dtypes,
    the constexprs, the grid and the loop count; bytes_moved / flops; inputs < 4 GB; roughly
    20 us - 5 ms at 3.35-4.8 TB/s."""
    import torch

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "example_args", "torch_baseline", "layernorm2d"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert not hasattr(mod, "secondary_kernels") and not hasattr(mod, "cta_iterations")
    assert len(mod.POINTS) == 3 and mod.BASELINE["num_stages"] == 1 and mod.ROLE == ROLE
    dts = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}
    cfgs = [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]
    for p in mod.POINTS:
        Nb, C, HW = p["N"], p["C"], p["H"] * p["W"]
        e = 4 if p["dtype"] == "fp32" else 2
        for cfg in cfgs:
            a = mod.example_args(cfg, p)
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for v in a.values())
            for k in ("X", "Y"):
                assert a[k].shape == (Nb, C, p["H"], p["W"]) and a[k].dtype == dts[p["dtype"]]
                assert a[k].is_contiguous()
            for k in ("Wt", "Bs"):
                assert a[k].shape == (C,) and a[k].dtype == torch.float32
            assert (a["C"], a["HW"], a["eps"]) == (C, HW, 1e-6)
            # the sweep never clamps at the points: every config is its own kernel there
            assert (a["TILE_P"], a["TILE_C"]) == (cfg["BLOCK_P"], cfg["BLOCK_C"])
            assert a["EVEN_C"] == int(C % cfg["BLOCK_C"] == 0) and a["HW_ALIGN"] == math.gcd(HW, 16)
            assert mod.grid(cfg, p) == (-(-HW // cfg["BLOCK_P"]), Nb)
            assert mod.loop_iterations(cfg, p) == 2 * -(-C // cfg["BLOCK_C"])
        n = Nb * C * HW
        assert mod.bytes_moved(p) == 2 * n * e + 8 * C
        assert mod.flops(p) == 8 * n
        assert n * e < 4 * 2**30 and C * HW < 2**31
        assert 20e-6 < mod.bytes_moved(p) / 4.8e12 and mod.bytes_moved(p) / 3.35e12 < 5e-3
        assert 100e6 <= mod.bytes_moved(p) <= 2e9


def test_hooks_on_small_points_and_inputs():
    """make_inputs: shapes, dtypes, the seed; reference's and the baseline's shapes and dtypes; the
    clamps in grid / loop_iterations; a hand-computed pixel."""
    import torch

    mod = load_example(KERNEL)
    p = _pt(2, 6, 3, 5, "bf16")
    inp = mod.make_inputs(p, seed=1, device="cpu")
    assert inp["x"].shape == (2, 6, 3, 5) and inp["x"].dtype == torch.bfloat16 and inp["x"].is_contiguous()
    assert inp["weight"].shape == (6,) and inp["weight"].dtype == torch.float32
    assert inp["bias"].shape == (6,) and inp["bias"].dtype == torch.float32 and inp["eps"] == 1e-6
    assert torch.equal(mod.make_inputs(p, seed=1, device="cpu")["x"], inp["x"])
    assert not torch.equal(mod.make_inputs(p, seed=2, device="cpu")["x"], inp["x"])
    assert mod.make_inputs({**p, "eps": 1e-5}, device="cpu")["eps"] == 1e-5
    ref = mod.reference(inp)
    assert ref.shape == (2, 6, 3, 5) and ref.dtype == torch.float32
    base = mod.torch_baseline(inp)
    assert base.dtype == torch.bfloat16 and base.shape == (2, 6, 3, 5)
    # per pixel, the reference's channel mean is bias's mean-ish and its spread is weight's
    y = (ref - inp["bias"][:, None, None]) / inp["weight"][:, None, None]
    assert float(y.mean(1).abs().max()) < 1e-4 and float((y.pow(2).mean(1) - 1).abs().max()) < 1e-3
    # hand: one pixel, channels [1, 3]: mean 2, var 1 -> [-1, 1] / sqrt(1 + eps), w [2, 1], b [0, 5]
    hand = {"x": torch.tensor([1.0, 3.0]).view(1, 2, 1, 1), "weight": torch.tensor([2.0, 1.0]),
            "bias": torch.tensor([0.0, 5.0]), "eps": 0.0}
    assert mod.reference(hand).flatten().tolist() == [-2.0, 6.0]
    # clamps: C 3 -> TILE_C 4, a 1x1 plane -> TILE_P 1
    cfg = _cfg(128, 16, 4)
    assert mod.grid(cfg, _pt(5, 3, 1, 1)) == (1, 5) and mod.loop_iterations(cfg, _pt(5, 3, 1, 1)) == 2
    assert mod.grid(cfg, _pt(1, 100, 20, 20)) == (4, 1) and mod.loop_iterations(cfg, _pt(1, 100, 20, 20)) == 14
    a = mod.example_args(cfg, _pt(5, 3, 1, 1, "fp16"))
    assert (a["TILE_C"], a["TILE_P"], a["EVEN_C"], a["HW_ALIGN"]) == (4, 1, 0, 1)
    assert [mod.hw_align(v) for v in (196, 49, 4096, 120, 67200, 1)] == [4, 1, 16, 8, 16, 1]


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    x = torch.zeros(1, 4, 2, 2)
    w = torch.ones(4)
    with pytest.raises(ValueError, match="BLOCK_P=48"):
        mod.layernorm2d(x, w, w, BLOCK_P=48)
    with pytest.raises(ValueError, match="BLOCK_C=0"):
        mod.layernorm2d(x, w, w, BLOCK_C=0)
    with pytest.raises(ValueError, match="num_warps=3"):
        mod.layernorm2d(x, w, w, num_warps=3)
    with pytest.raises(ValueError, match=r"expected x \[N, C, H, W\]"):
        mod.layernorm2d(x[0], w, w)
    with pytest.raises(ValueError, match="x must be fp16"):
        mod.layernorm2d(x.double(), w, w)
    with pytest.raises(ValueError, match=r"weight must be a float tensor \[4\]"):
        mod.layernorm2d(x, torch.ones(5), w)
    with pytest.raises(ValueError, match="bias must be"):
        mod.layernorm2d(x, w, torch.ones(4, dtype=torch.int32))
    with pytest.raises(ValueError, match="eps=0"):
        mod.layernorm2d(x, w, w, eps=0.0)
    with pytest.raises(ValueError, match="dtype 'fp8'"):
        mod.make_inputs(_pt(1, 2, 2, 2, "fp8"), device="cpu")
    with pytest.raises(ValueError, match="C=0"):
        mod.grid(mod.BASELINE, _pt(1, 0, 2, 2))
    # an empty batch needs no launch
    assert mod.layernorm2d(torch.zeros(0, 4, 2, 2), w, w).shape == (0, 4, 2, 2)


def _sweep_checks(mod, axes, configs=None):
    assert axes == SWEEP_AXES
    assert set(axes) == set(mod.TUNABLES)
    assert all(len(v) >= 2 for k, v in axes.items() if k != "num_stages") and axes["num_stages"] == [1]
    cfgs = [dict(zip(axes, v)) for v in itertools.product(*axes.values())]
    assert 45 <= len(cfgs) <= 72 and mod.BASELINE in cfgs
    assert configs is None or len(configs) == len(cfgs)
    for p in mod.POINTS:
        for c in cfgs:
            mod._check_cfg(c)
            # no config is clamped to another at any point (distinct kernels), and each launch has
            # at least 2 CTAs an SM
            assert mod._tile(p["C"], p["H"] * p["W"], c) == (c["BLOCK_C"], c["BLOCK_P"]), (p, c)
            gx, gy = mod.grid(c, p)
            assert gx * gy >= 2 * H200_SMS, (p, c)
    # the points differ in character: dtype, C, plane size and its alignment
    assert {p["dtype"] for p in mod.POINTS} == {"fp32", "bf16", "fp16"}
    assert len({p["C"] for p in mod.POINTS}) == 3
    assert {mod.hw_align(p["H"] * p["W"]) for p in mod.POINTS} == {4, 16}


def test_sweep_fits_the_points():
    """The study sweep: 48 configs (BLOCK_P 32-256 pixels x BLOCK_C 2-16 channels a step x 2 / 4 / 8
    warps, num_stages 1: the loops hold no dot) with BASELINE among them; at every point each config
    is valid, unclamped, and launches >= 2 CTAs an SM. (Every config was compiled for sm_90 with
    triton 3.6.0 at every point, 144 compiles: all compile and fit, none spills; 32-182 registers,
    the most at BLOCK_P 256 x BLOCK_C 16 x 2 warps -- 64 tile elements a thread in each of the two
    fp32 accumulator tiles; 0-8 KiB of shared memory for the final cross-warp channel reduction;
    4-32 blocks an SM. triton 3.9.0 likewise: 31-184 registers, 0-4 KiB, no spills. BLOCK_C 32 was
    left out: at BLOCK_P 256 x 2 warps, 128 elements a thread, it spills. HW_ALIGN works: at the
    14x14 point the bf16 tiles load and store 8-byte vectors (scalar 2-byte stores without it).)"""
    _sweep_checks(load_example(KERNEL), SWEEP_AXES)


def test_sweep_matches_study_entry():
    configs, points, axes = H.study_sweeps([KERNEL], ROLE)[KERNEL]
    mod = load_example(KERNEL)
    _sweep_checks(mod, axes, configs)
    assert list(points) == list(mod.POINTS)


def test_examples_import_without_torch():
    proc = H.imports_without_torch(CASES)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr[-2000:]


@pytest.mark.slow
def test_example_compiles_sm90(shared_cache):
    """On sm_90: BASELINE and three sweep corners at the first point, BASELINE at the other two, and
    the ragged specialization (EVEN_C 0, HW_ALIGN 1, clamped tiles) compile without spills, in at
    most 8 KiB of shared memory."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    assert COMPILE_CFGS[0] == mod.BASELINE
    for cfg, res in H.compile_results(KERNEL, COMPILE_CFGS, "sm_90"):
        assert res.status == "ok", f"{cfg} on sm_90: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.shared <= 8 * 1024 and res.n_spills == 0, (cfg, res.n_regs, res.shared)
    cfg = mod.BASELINE
    for p in mod.POINTS[1:] + [_pt(3, 5, 7, 9, "fp16")]:
        args = mod.example_args(cfg, p)
        res = compile_kernel(mod._kernel, args=args, arch="sm_90", num_warps=cfg["num_warps"],
                             num_stages=cfg["num_stages"])
        assert res.status == "ok" and res.n_spills == 0 and res.shared <= 8 * 1024, res.message


@pytest.mark.slow
def test_example_compiles_sm120(shared_cache):
    for cfg, res in H.compile_results(KERNEL, SM120_CFGS, "sm_120"):
        assert res.status == "ok", f"{cfg} on sm_120: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.shared <= SM120_SMEM_PER_BLOCK and res.n_spills == 0


# ----------------------------------------------------------------- the subprocess side
MANT_BITS = {"fp32": 23, "bf16": 7, "fp16": 10}


def _run() -> None:
    """Every case through launch, against reference and torch_baseline; one JSON line."""
    import torch

    H.patch_interpreter_index()
    H.patch_interpreter_bf16_rounding()
    mod = load_example(KERNEL)

    def prepare(name, point, inputs):
        if name.startswith("offset300"):
            inputs["x"] = inputs["x"] + 300.0
        if name.startswith("channels_last"):
            inputs["x"] = inputs["x"].contiguous(memory_format=torch.channels_last)
            inputs["weight"] = inputs["weight"].to(inputs["x"].dtype)
            inputs["bias"] = inputs["bias"].to(inputs["x"].dtype)

    def extra(name, point, inputs, out, ref):
        o = out.float()
        big = torch.maximum(o.abs(), ref.abs()).clamp_min(1e-30)
        _, ex = torch.frexp(big)                                 # big = m 2^ex, m in [0.5, 1)
        half_ulp = torch.ldexp(torch.ones_like(big), ex - 2 - MANT_BITS[point["dtype"]])
        bound = half_ulp + 2e-5 * float(ref.abs().max())
        return {"contiguous": bool(out.is_contiguous()),
                "dtype": {"torch.float16": "fp16", "torch.bfloat16": "bf16",
                          "torch.float32": "fp32"}.get(str(out.dtype)),
                "baseline": H.compare(mod.torch_baseline(inputs), ref, point["dtype"]),
                "ulp_ratio": float(((o - ref).abs() / bound).max())}

    H.run_cases(KERNEL, CASES[KERNEL], prepare=prepare, extra=extra)


if __name__ == "__main__":
    _run()
