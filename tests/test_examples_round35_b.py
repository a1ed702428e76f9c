"""examples/median_filter2d.py (a 2-D median filter over NCHW planes, K 3 / 5, replicate border, as cv2.medianBlur:
one program per BLOCK_Y x BLOCK_X tile, ROWS tiles a program down the plane, the 19-exchange median-of-9 network
for 3 x 3 and forgetful selection for 5 x 5, in registers) against its float64 torch reference on the CPU through
Triton's interpreter, its launcher hooks against the shapes, its sweep against the points, and a compile for sm_90
and sm_120 from its own ``example_args``.

As in test_examples_round34_a.py the interpreter cases run in a subprocess (this file run as a script:
``python tests/test_examples_round35_b.py median_filter2d``) that prints one JSON line. The subprocess installs
the harness's interpreter fixes.

Shapes are small, odd and ragged: every dtype (uint8 / fp16 / fp32) x both window sizes; H and W of 1 and 2
(every tap clamped onto the plane), below the tile and ragged against it; bands past the plane's last row (ROWS
tiles a program whose last tiles are all clamped rows); several planes (the plane offset); every sweep value of
every tunable, num_stages 2.

Per case: launch's output equal to the float64 reference exactly (a median is one of the window's values: no
rounding in any dtype), and within the harness's tolerance; the output in x's dtype, [N, C, H, W], fresh and
contiguous; the input unchanged; torch_baseline equal to the reference too.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
KERNEL = "median_filter2d"
ROLE = "held-out-35"
H100_SMS = 132
SM90_SMEM_PER_BLOCK = 227 * 1024
SM120_SMEM_PER_BLOCK = 99 * 1024
TOL = {"uint8": 1e-6, "fp16": 1e-6, "fp32": 1e-6}   # x max|ref|; a median is exact (the test asserts equality too)

SWEEP_AXES = {"BLOCK_Y": [2, 4, 8], "BLOCK_X": [32, 64, 128], "ROWS": [1, 2, 4], "num_warps": [4, 8],
              "num_stages": [1]}


def _cfg(by=8, bx=64, rows=2, w=4, st=1):
    return {"BLOCK_Y": by, "BLOCK_X": bx, "ROWS": rows, "num_warps": w, "num_stages": st}


def _pt(N, C, Hh, W, K=3, dtype="uint8"):
    return {"N": N, "C": C, "H": Hh, "W": W, "K": K, "dtype": dtype}


# case -> (point, cfg)
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        # the 1080p RGB point scaled down: 2 x 3 planes of 21 x 70 (70 ragged against 64), 3 x 3 uint8, BASELINE
        "rgb_uint8_3x3": (_pt(2, 3, 21, 70, 3, "uint8"), _cfg(8, 64, 2, 4)),
        # the microscopy point scaled down: fp32 5 x 5, 2 slices of 37 x 45, 2 x 32 tiles one a program
        "stack_fp32_5x5": (_pt(2, 1, 37, 45, 5, "fp32"), _cfg(2, 32, 1, 8)),
        # the 4K luma point scaled down: uint8 5 x 5, 3 frames of 19 x 130 (130 = 128 + 2), 4 x 128 tiles, 4 a band
        "luma_uint8_5x5": (_pt(3, 1, 19, 130, 5, "uint8"), _cfg(4, 128, 4, 4)),
        # fp16 at both window sizes
        "fp16_3x3": (_pt(1, 2, 17, 33, 3, "fp16"), _cfg(4, 32, 4, 8)),
        "fp16_5x5": (_pt(1, 3, 11, 66, 5, "fp16"), _cfg(8, 128, 1, 4)),
        # fp32 3 x 3 on 8 warps: 2 x 64 tiles, 2 a band
        "fp32_3x3": (_pt(2, 2, 23, 61, 3, "fp32"), _cfg(2, 64, 2, 8)),
        # one-pixel planes: every tap clamps onto the pixel (the median is the pixel)
        "one_pixel_5x5": (_pt(2, 2, 1, 1, 5, "fp32"), _cfg(4, 32, 1, 4)),
        # one row / two columns: the window's rows all clamp onto one row, columns onto two
        "one_row_3x3": (_pt(1, 1, 1, 40, 3, "uint8"), _cfg(8, 32, 4, 4)),
        "two_cols_5x5": (_pt(1, 2, 9, 2, 5, "uint8"), _cfg(4, 64, 2, 8)),
        # num_stages 2 (no loop to pipeline: the same result), H a multiple of the band, W of the tile
        "stages2": (_pt(1, 1, 32, 64, 5, "fp16"), _cfg(8, 32, 2, 4, 2)),
    },
}


def _smem_bound(cfg) -> int:
    """An upper bound of a config's shared memory: layout conversions of a [BLOCK_Y, BLOCK_X] tile of 4-byte
    values (no pipelined buffers), at least 1 KiB a warp."""
    return max(1024 * cfg["num_warps"], 4 * cfg["BLOCK_Y"] * cfg["BLOCK_X"])


# configs compiled on sm_90 at each point (the full sweep was compiled by hand, see test_sweep_fits_the_points):
# BASELINE, the most registers (8 x 128 tiles on 4 warps: 8 pixels a thread) and the fewest (2 x 32 on 8 warps)
COMPILE_CFGS = {0: [_cfg(8, 64, 2, 4), _cfg(8, 128, 4, 4), _cfg(2, 32, 1, 8)],
                1: [_cfg(8, 128, 2, 4), _cfg(8, 128, 4, 4), _cfg(2, 32, 1, 8)],
                2: [_cfg(8, 128, 1, 4), _cfg(8, 128, 4, 4), _cfg(4, 128, 2, 8)]}
SM120_CFGS = [_cfg(8, 64, 2, 4), _cfg(8, 128, 4, 4), _cfg(2, 32, 1, 8)]


# ----------------------------------------------------------------- the pytest side
def _results() -> dict:
    return H.interpreter_results(HERE, KERNEL)


@pytest.mark.parametrize("name", list(CASES[KERNEL]))
def test_example_matches_reference(name):
    res = _results()[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    p, cfg = CASES[KERNEL][name]
    assert res["n_bad"] == 0, H.mismatch(res, f"{name} launch")
    assert res["exact"] is True, res
    assert res["shape"] == [p["N"], p["C"], p["H"], p["W"]] and res["dtype"] == p["dtype"], res
    assert res["contiguous"] is True and res["fresh"] is True, res
    assert res["inputs_unchanged"] is True, res
    assert res["baseline_exact"] is True, res
    if p["H"] * p["W"] > 1:
        assert res["n_distinct"] > 1, res
    else:
        assert res["identity"] is True, res


def test_cases_cover_every_code_path():
    """Every dtype at both window sizes; H and W of 1 / 2, below the tile, ragged against it and a multiple of
    it; bands past the plane's end; several planes; every sweep value of every tunable, num_stages 2."""
    H.assert_tunables_covered(CASES)
    mod = load_example(KERNEL)
    cases = CASES[KERNEL]
    assert {(p["dtype"], p["K"]) for p, _ in cases.values()} == set(itertools.product(mod.DTYPES, mod.KSIZES))
    assert {p["H"] for p, _ in cases.values()} >= {1} and {p["W"] for p, _ in cases.values()} >= {1, 2}
    assert any(p["H"] < c["BLOCK_Y"] for p, c in cases.values())
    assert any(p["W"] < c["BLOCK_X"] for p, c in cases.values())
    assert any(p["W"] % c["BLOCK_X"] and p["W"] > c["BLOCK_X"] for p, c in cases.values())
    assert any(p["H"] % (c["BLOCK_Y"] * c["ROWS"]) and p["H"] > c["BLOCK_Y"] * c["ROWS"] for p, c in cases.values())
    assert any(p["H"] % (c["BLOCK_Y"] * c["ROWS"]) == 0 and p["W"] % c["BLOCK_X"] == 0 for p, c in cases.values())
    # a band whose last tile holds only clamped rows (nothing stored)
    assert any((-(-p["H"] // c["BLOCK_Y"])) % c["ROWS"] for p, c in cases.values())
    assert any(p["N"] * p["C"] > 1 for p, _ in cases.values())
    for k, vals in SWEEP_AXES.items():
        assert {c[k] for _, c in cases.values()} >= set(vals), k
    assert 2 in {c["num_stages"] for _, c in cases.values()}


def test_launcher_hooks_agree_with_shapes():
    """At every point and sweep config: example_args -- x and out on meta, contiguous -- with the launch's shapes,
    dtypes and constants; the 1-D grid and the loop length; bytes_moved / flops; 130-540 MB moved a point."""
    import torch

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "example_args", "torch_baseline", "median_filter2d"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert not hasattr(mod, "secondary_kernels") and not hasattr(mod, "cta_iterations")
    assert len(mod.POINTS) == 3 and mod.ROLE == ROLE and mod.SWEEP_AXES == SWEEP_AXES
    dts = {"uint8": torch.uint8, "fp16": torch.float16, "fp32": torch.float32}
    es = {"uint8": 1, "fp16": 2, "fp32": 4}
    cfgs = [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]
    for p in mod.POINTS:
        N, C, Hh, W = p["N"], p["C"], p["H"], p["W"]
        for cfg in cfgs:
            a = mod.example_args(cfg, p)
            for k in ("X", "OUT"):
                t = a[k]
                assert t.device.type == "meta" and t.shape == (N, C, Hh, W) and t.dtype == dts[p["dtype"]], k
                assert t.is_contiguous(), k
            assert (a["H"], a["W"], a["KSIZE"]) == (Hh, W, p["K"])
            assert (a["BLOCK_Y"], a["BLOCK_X"], a["ROWS"]) == (cfg["BLOCK_Y"], cfg["BLOCK_X"], cfg["ROWS"])
            bands = -(-Hh // (cfg["BLOCK_Y"] * cfg["ROWS"]))
            assert mod.grid(cfg, p) == (N * C * bands * -(-W // cfg["BLOCK_X"]),)
            assert mod.loop_iterations(cfg, p) == cfg["ROWS"]
        assert mod.bytes_moved(p) == 2 * N * C * Hh * W * es[p["dtype"]]
        assert 1.3e8 < mod.bytes_moved(p) < 5.4e8
        assert mod.flops(p) == 2 * {3: 19, 5: 132}[p["K"]] * N * C * Hh * W
    assert [(p["N"], p["C"], p["H"], p["W"], p["K"], p["dtype"]) for p in mod.POINTS] == [
        (16, 3, 1080, 1920, 3, "uint8"), (16, 1, 2048, 2048, 5, "fp32"), (8, 1, 2160, 3840, 5, "uint8")]


def test_hooks_on_small_points_and_inputs():
    """reference and torch_baseline by hand; make_inputs' seed, dtypes, impulses and spread; grid / loop;
    bytes / flops; the wrapper's empty batch."""
    import torch

    mod = load_example(KERNEL)
    # by hand: a 3 x 3 plane, replicate border
    x = torch.tensor([[[[1.0, 9.0, 2.0], [8.0, 3.0, 7.0], [4.0, 6.0, 5.0]]]])
    inp = {"x": x, "K": 3}
    # (0, 0): window rows [1 1 9] [1 1 9] [8 8 3] -> sorted 1 1 1 1 3 8 8 9 9 -> 3
    # (1, 1): all nine values 1..9 -> 5
    ref = mod.reference(inp)
    assert ref.dtype == torch.float64 and float(ref[0, 0, 0, 0]) == 3.0 and float(ref[0, 0, 1, 1]) == 5.0
    assert torch.equal(mod.torch_baseline(inp).double(), ref)
    one = {"x": torch.tensor([[[[7]]]], dtype=torch.uint8), "K": 5}
    assert mod.reference(one).tolist() == [[[[7.0]]]]
    assert mod.torch_baseline(one).dtype == torch.uint8
    # make_inputs: seeded, dtypes, salt-and-pepper impulses, not constant
    for dt in mod.DTYPES:
        p = _pt(2, 3, 40, 50, 5, dt)
        a = mod.make_inputs(p, seed=1, device="cpu")
        xx = a["x"]
        assert a["K"] == 5 and xx.shape == (2, 3, 40, 50) and str(xx.dtype).endswith({"uint8": "uint8",
                                                                                    "fp16": "float16",
                                                                                    "fp32": "float32"}[dt])
        hi = 255 if dt == "uint8" else 1.0
        lo_frac = float((xx == 0).float().mean())
        hi_frac = float((xx == hi).float().mean())
        assert 0.03 < lo_frac < 0.12 and 0.03 < hi_frac < 0.12, (dt, lo_frac, hi_frac)
        assert xx.unique().numel() > 100
        assert torch.equal(mod.make_inputs(p, seed=1, device="cpu")["x"], xx)
        assert not torch.equal(mod.make_inputs(p, seed=2, device="cpu")["x"], xx)
    assert mod.make_inputs({"N": 1, "C": 1, "H": 3, "W": 4, "K": 3}, device="cpu")["x"].dtype == torch.uint8
    # grid / loop, bytes / flops
    cfg = _cfg(8, 64, 2, 4)
    assert mod.grid(cfg, _pt(2, 3, 17, 65)) == (2 * 3 * 2 * 2,) and mod.grid(cfg, _pt(1, 1, 16, 64)) == (1,)
    assert mod.loop_iterations(cfg, _pt(1, 1, 5, 5)) == 2
    assert mod.bytes_moved(_pt(1, 2, 10, 30, 5, "fp16")) == 2 * 2 * 600
    assert mod.flops(_pt(1, 2, 10, 30, 5)) == 264 * 600 and mod.flops(_pt(1, 1, 10, 30, 3)) == 38 * 300
    # nothing to filter: an empty result of x's shape, nothing launched
    e = mod.median_filter2d(torch.zeros((0, 3, 5, 7), dtype=torch.uint8), 3)
    assert e.shape == (0, 3, 5, 7) and e.dtype == torch.uint8


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    x = mod.make_inputs(_pt(1, 2, 6, 20), device="cpu")["x"]
    with pytest.raises(ValueError, match="BLOCK_Y=3"):
        mod.median_filter2d(x, 3, BLOCK_Y=3)
    with pytest.raises(ValueError, match="BLOCK_X=100"):
        mod.median_filter2d(x, 3, BLOCK_X=100)
    with pytest.raises(ValueError, match="ROWS=0"):
        mod.median_filter2d(x, 3, ROWS=0)
    with pytest.raises(ValueError, match="num_warps=3"):
        mod.median_filter2d(x, 3, num_warps=3)
    with pytest.raises(ValueError, match="num_stages=0"):
        mod.median_filter2d(x, 3, num_stages=0)
    with pytest.raises(ValueError, match="ksize=7"):
        mod.median_filter2d(x, 7)
    with pytest.raises(ValueError, match="x must be a 4-d"):
        mod.median_filter2d(x.double(), 3)
    with pytest.raises(ValueError, match="x must be a 4-d"):
        mod.median_filter2d(x[0], 3)
    with pytest.raises(ValueError, match="x must be NCHW contiguous"):
        mod.median_filter2d(x.transpose(2, 3), 3)
    with pytest.raises(ValueError, match="dtype 'bf16'"):
        mod.make_inputs(_pt(1, 1, 2, 10, 3, "bf16"), device="cpu")
    with pytest.raises(ValueError, match="K=7"):
        mod.bytes_moved(_pt(1, 1, 2, 10, 7))
    with pytest.raises(ValueError, match="H=0"):
        mod.grid(mod.BASELINE, _pt(1, 1, 0, 10))
    with pytest.raises(ValueError, match="W=2.5"):
        mod.example_args(mod.BASELINE, _pt(1, 1, 2, 2.5))
    with pytest.raises(ValueError, match="too large a plane"):
        mod.flops(_pt(1, 1, 2**16, 2**16))
    with pytest.raises(ValueError, match="ROWS=3.5"):
        mod.loop_iterations(dict(mod.BASELINE, ROWS=3.5), mod.POINTS[0])
    with pytest.raises(ValueError, match="BLOCK_X='abc'"):
        mod.grid(dict(mod.BASELINE, BLOCK_X="abc"), mod.POINTS[0])


def test_sweep_fits_the_points():
    """The sweep: 54 configs (BLOCK_Y 2 / 4 / 8, BLOCK_X 32 / 64 / 128, ROWS 1 / 2 / 4, 4 / 8 warps, num_stages 1)
    with BASELINE among them; at every point each config is valid and fits the shared-memory bound; every point
    has at least 4 programs per SM of an H100 at every config. (Every config was compiled for sm_90 at every point
    with triton 3.6.0 and 3.9.0: the figures are in the module doc.)"""
    mod = load_example(KERNEL)
    axes = SWEEP_AXES
    assert set(axes) == set(mod.TUNABLES) and mod.SWEEP_AXES == axes
    assert all(len(v) >= 2 for k, v in axes.items() if k != "num_stages") and axes["num_stages"] == [1]
    cfgs = [dict(zip(axes, v)) for v in itertools.product(*axes.values())]
    assert 40 <= len(cfgs) <= 72 and mod.BASELINE in cfgs
    for p in mod.POINTS:
        for c in cfgs:
            mod._check_cfg(c)
            (g,) = mod.grid(c, p)
            assert g >= 4 * H100_SMS, (p, c, g)
            assert _smem_bound(c) <= SM90_SMEM_PER_BLOCK, (p, c)
            assert mod.loop_iterations(c, p) == c["ROWS"]
            # at most 8 pixels a thread: the register budget of the 5 x 5 network (module doc)
            assert c["BLOCK_Y"] * c["BLOCK_X"] <= 8 * 32 * c["num_warps"], c


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
    """On sm_90 at each point: BASELINE, the most registers (8 x 128 tiles on 4 warps, 8 pixels a thread, 1-4
    tiles a program) and the fewest compile without spills within the shared bound."""
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


@pytest.mark.slow
def test_example_compiles_sm120(shared_cache):
    """On sm_120 (99 KiB a block): BASELINE, 8 x 128 x 4 on 4 warps and 2 x 32 on 8 warps compile at the first
    point (1080p RGB, uint8 3 x 3) without spills within its shared memory."""
    for cfg, res in H.compile_results(KERNEL, SM120_CFGS, "sm_120"):
        assert res.status == "ok", f"{cfg} on sm_120: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.n_spills == 0, (cfg, res.n_regs, res.n_spills)
        assert 0 <= res.shared <= min(_smem_bound(cfg), SM120_SMEM_PER_BLOCK), (cfg, res.shared)


# ----------------------------------------------------------------- the subprocess side
def _run() -> None:
    """Every case through launch against reference (exact equality besides the harness's comparison);
    torch_baseline against reference; the input unchanged; one JSON line."""
    import torch

    H.patch_interpreter_index()
    mod = load_example(KERNEL)
    names = {torch.uint8: "uint8", torch.float16: "fp16", torch.float32: "fp32"}

    def prepare(name, point, inputs):
        inputs["x0"] = inputs["x"].clone()

    def extra(name, point, inputs, out, ref):
        x = inputs["x"]
        return {"dtype": names.get(out.dtype, str(out.dtype)), "contiguous": out.is_contiguous(),
                "fresh": out.data_ptr() != x.data_ptr(), "exact": bool(torch.equal(out.double(), ref)),
                "inputs_unchanged": bool(torch.equal(x, inputs["x0"])),
                "baseline_exact": bool(torch.equal(mod.torch_baseline(inputs).double(), ref)),
                "identity": bool(torch.equal(out, x)), "n_distinct": int(out.unique().numel())}

    H.run_cases(KERNEL, CASES[KERNEL], tol_table=TOL, prepare=prepare, extra=extra)


if __name__ == "__main__":
    _run()
