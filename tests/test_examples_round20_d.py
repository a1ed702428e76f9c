"""examples/stencil2d.py (a 5x5 radius-2 stencil with generic fp32 weights over a batch of planes,
zero / replicate / reflect borders, a five-row accumulator ring walked down each band) against its
fp64 torch reference on the CPU through Triton's interpreter, its launcher hooks against the shapes,
its study sweep against the points, and a compile for sm_90 and sm_120 from its own ``example_args``.

As in test_examples_round19_d.py the interpreter cases run in a subprocess (this file run as a
script: ``python tests/test_examples_round20_d.py stencil2d``) that prints one JSON line.
Shapes are small, odd and ragged: H not a multiple of BLOCK_H * ROWS (a band group cut by the
plane's end, whole bands past it), W not a multiple of BLOCK_W (masked column tails), planes
smaller than the halo (1 x 2, 2 x 3: every tap a border tap; reflect at its 3 x 3 minimum), every
border (zero masks; replicate clamps; reflect mirrors and clamps bands past the end), every dtype
(fp32 / fp16 / bf16), rows with a pitch wider than W, columns with a stride of 2, a 4-D NCHW input
(planes flattened), every named filter and random weights, BLOCK_H 1 / 2 / 4, BLOCK_W 4-64,
ROWS 2-32 (3 and 5: not powers of two).

Tolerance (x max|ref|, absolute, per element): the reference is fp64 on the same rounded inputs;
the kernel sums 25 fp32 products (~25 * 2^-24 of sum |w x|, at most ~5x max|ref| for the random
weights: < 1e-5 relative), then one rounding to the output dtype: half an ulp on the GPU, up to one
ulp with the interpreter's truncating cast; an ulp is at most 2^-7 (bf16) / 2^-10 (fp16) of an
element <= max|ref|. The harness's defaults (fp32 1e-4, fp16 2e-3, bf16 1e-2) bound that.
torch_baseline (F.pad + F.conv2d in the input dtype) stays inside them too on the CPU.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
KERNEL = "stencil2d"
ROLE = "held-out-20"
H200_SMS = 132
H200_SMEM_PER_BLOCK = 227 * 1024
SM120_SMEM_PER_BLOCK = 99 * 1024


def _cfg(bh, bw, rows, w=4, st=1):
    return {"BLOCK_H": bh, "BLOCK_W": bw, "ROWS": rows, "num_warps": w, "num_stages": st}


def _pt(P, Hh, W, dtype="fp32", border="zero", filt="random", pitch=None):
    p = {"P": P, "H": Hh, "W": W, "dtype": dtype, "border": border, "filter": filt}
    if pitch is not None:
        p["pitch"] = pitch
    return p


# case -> (point, cfg); comments: band groups x column tiles
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        # 2 groups of 2 x 4 rows (the second cut at 13) x 2 column tiles (tail 5 of 16)
        "zero_ragged_fp32": (_pt(2, 13, 21), _cfg(2, 16, 4)),
        # rows pitched 25 > W 21; 5 bands of 3 rows, 3 column tiles of 8 (tail 5); Gaussian
        "replicate_pitched_fp16": (_pt(2, 13, 21, "fp16", "replicate", "gauss5", pitch=25), _cfg(1, 8, 3, 2)),
        # the 3 x 4 minimum for reflect: one group of 4 bands x 8 rows, bands 1-3 wholly past the end
        "reflect_tiny_bf16": (_pt(3, 3, 4, "bf16", "reflect"), _cfg(4, 16, 8, 8, 2)),
        # a 1 x 2 plane (every tap replicated), 2 bands of 2 rows
        "replicate_under_halo_fp32": (_pt(2, 1, 2, "fp32", "replicate"), _cfg(2, 8, 2)),
        # a 2 x 3 plane with zero padding, one 4-wide tile, one 5-row band
        "zero_under_halo_bf16": (_pt(3, 2, 3, "bf16", "zero", "box5"), _cfg(1, 4, 5, 2)),
        # fourth-order Laplacian with reflect, 19 x 37: 2 groups of 2 x 8 rows (the second cut), tiles of 32
        "reflect_laplace_fp32": (_pt(1, 19, 37, "fp32", "reflect", "laplace4"), _cfg(2, 32, 8, 8)),
        # x a [:, :, ::2] view (stride_w 2), binomial blur, one group of 4 x 4 rows cut at 11
        "zero_colstrided_bf16": (_pt(2, 11, 9, "bf16", "zero", "binomial5"), _cfg(4, 16, 4, 4, 2)),
        # a 4-D [2, 3, H, W] NCHW input (6 planes), replicate, one band of 32 rows past H 10, 64-wide tile
        "replicate_nchw_fp16": (_pt(6, 10, 17, "fp16", "replicate"), _cfg(1, 64, 32)),
    },
}
COLSTRIDED = "zero_colstrided_bf16"
NCHW = "replicate_nchw_fp16"

# configs compiled at the module's first POINT (sm_90: BASELINE first)
COMPILE_CFGS = [_cfg(2, 256, 16, 4), _cfg(4, 256, 32, 4), _cfg(1, 64, 8, 8), _cfg(4, 128, 16, 8)]
SM120_CFGS = [_cfg(2, 256, 16, 4), _cfg(4, 256, 8, 8)]


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """COLSTRIDED: x becomes the even columns of a [P, H, 2W] buffer; NCHW: x viewed as [2, 3, H, W]."""
    import torch

    x = inputs["x"]
    if name == COLSTRIDED:
        wide = torch.full(x.shape[:-1] + (2 * x.shape[-1],), 7.0, dtype=x.dtype)
        wide[..., ::2] = x
        inputs["x"] = wide[..., ::2]
    elif name == NCHW:
        inputs["x"] = x.reshape(2, 3, x.shape[-2], x.shape[-1])


# ----------------------------------------------------------------- the pytest side
def _results() -> dict:
    return H.interpreter_results(HERE, KERNEL)


@pytest.mark.parametrize("name", list(CASES[KERNEL]))
def test_example_matches_reference(name):
    res = _results()[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    p = CASES[KERNEL][name][0]
    want = [2, 3, p["H"], p["W"]] if name == NCHW else [p["P"], p["H"], p["W"]]
    assert res["shape"] == want and res["contiguous"] is True
    for what, r in (("kernel", res), ("torch_baseline", res["baseline"])):
        assert r["n_bad"] == 0, H.mismatch(r, f"{name} {what}")


def test_strided_inputs_are_read_in_place():
    """The column-strided and pitched views reach the kernel as views (stride_w 2 / stride_h 25), not copies."""
    mod = load_example(KERNEL)
    import torch

    x = torch.zeros(2, 5, 18)[..., ::2]
    args = mod._kernel_args(x, torch.zeros(5, 5), torch.empty(2, 5, 9), 0, _cfg(1, 16, 4))
    assert (args["stride_xp"], args["stride_xh"], args["stride_xw"]) == (90, 18, 2)
    p = CASES[KERNEL]["replicate_pitched_fp16"][0]
    x = mod.make_inputs(p, device="cpu")["x"]
    assert x.shape == (2, 13, 21) and x.stride() == (13 * 25, 25, 1)


def test_cases_cover_every_code_path():
    """Every tunable at >= 2 values; every border, dtype and filter; H and W tails; planes smaller
    than the halo (zero and replicate) and at reflect's minimum; bands wholly past the plane; a
    pitch; a column stride; a 4-D input."""
    H.assert_tunables_covered(CASES)
    mod = load_example(KERNEL)
    cases = list(CASES[KERNEL].values())
    assert {p["border"] for p, _ in cases} == set(mod.BORDERS)
    assert {p["dtype"] for p, _ in cases} == set(mod.DTYPES)
    assert {p["filter"] for p, _ in cases} == set(mod.FILTERS)
    assert any(p["H"] % (c["BLOCK_H"] * c["ROWS"]) for p, c in cases)
    assert any(p["W"] % c["BLOCK_W"] for p, c in cases)
    assert {p["border"] for p, _ in cases if min(p["H"], p["W"]) <= mod.RADIUS} == {"zero", "replicate"}
    assert any(p["border"] == "reflect" and min(p["H"], p["W"]) == mod.RADIUS + 1 for p, _ in cases)
    assert any(p["H"] <= (c["BLOCK_H"] - 1) * c["ROWS"] for p, c in cases)      # a band starting past H
    assert any(p.get("pitch", p["W"]) > p["W"] for p, _ in cases)
    assert any(c["ROWS"] & (c["ROWS"] - 1) for _, c in cases)
    assert COLSTRIDED in CASES[KERNEL] and NCHW in CASES[KERNEL]


def test_launcher_hooks_agree_with_shapes():
    """At every point and sweep-ish config: example_args on meta with the launch's shapes and
    strides, the grid and the walk length, bytes_moved / flops, inputs < 4 GB."""
    import torch

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "example_args", "torch_baseline", "stencil2d", "filter_weights"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert not hasattr(mod, "secondary_kernels") and not hasattr(mod, "cta_iterations")
    assert len(mod.POINTS) == 3 and mod.BASELINE["num_stages"] == 1
    dts = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}
    for cfg in [mod.BASELINE] + COMPILE_CFGS:
        for p in mod.POINTS:
            P, Hh, W = p["P"], p["H"], p["W"]
            pitch = p.get("pitch", W)
            args = mod.example_args(cfg, p)
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for v in args.values())
            assert args["X"].shape == (P, Hh, W) and args["X"].dtype == dts[p["dtype"]]
            assert args["OUT"].shape == (P, Hh, W) and args["OUT"].dtype == dts[p["dtype"]]
            assert args["Wt"].shape == (5, 5) and args["Wt"].dtype == torch.float32
            assert (args["stride_xp"], args["stride_xh"], args["stride_xw"]) == (Hh * pitch, pitch, 1)
            assert (args["stride_op"], args["stride_oh"]) == (Hh * W, W)
            assert (args["H"], args["W"], args["BORDER"]) == (Hh, W, mod.BORDERS[p["border"]])
            assert {k: args[k] for k in ("BLOCK_H", "BLOCK_W", "ROWS")} == \
                {k: cfg[k] for k in ("BLOCK_H", "BLOCK_W", "ROWS")}
            g = mod.grid(cfg, p)
            assert g == P * -(-Hh // (cfg["BLOCK_H"] * cfg["ROWS"])) * -(-W // cfg["BLOCK_W"])
            assert mod.loop_iterations(cfg, p) == cfg["ROWS"] + 4
            e = 4 if p["dtype"] == "fp32" else 2
            assert mod.bytes_moved(p) == 2 * e * P * Hh * W + 100
            assert mod.flops(p) == 50 * P * Hh * W
            # the pitched buffer make_inputs allocates, plus the output: < 4 GB
            assert e * P * Hh * (pitch + W) < 4 * 2**30
            assert Hh * pitch < 2**31


def test_hooks_on_small_points_and_inputs():
    """make_inputs: shapes, dtypes, the pitched view, the named filters' weights, the seed's values;
    reference's and the baseline's shapes and dtypes."""
    import torch

    mod = load_example(KERNEL)
    p = _pt(3, 7, 9, "bf16", "replicate", "gauss5", pitch=12)
    inp = mod.make_inputs(p, seed=1, device="cpu")
    x = inp["x"]
    assert x.shape == (3, 7, 9) and x.dtype == torch.bfloat16 and x.stride() == (84, 12, 1)
    assert float(x.float().std()) > 0.5 and inp["border"] == "replicate"
    w = inp["weight"]
    assert w.shape == (5, 5) and w.dtype == torch.float32 and abs(float(w.sum()) - 1) < 1e-6
    assert torch.allclose(w, w.t()) and float(w[2, 2]) == float(w.max())
    assert abs(float(mod.filter_weights("binomial5").sum()) - 1) < 1e-6
    assert abs(float(mod.filter_weights("box5").sum()) - 1) < 1e-6
    lap = mod.filter_weights("laplace4")
    assert abs(float(lap.sum())) < 1e-6 and float(lap[0, 0]) == 0.0 and abs(float(lap[2, 2]) + 5) < 1e-6
    assert not torch.equal(mod.filter_weights("random", 1), mod.filter_weights("random", 2))
    ref = mod.reference(inp)
    assert ref.shape == (3, 7, 9) and ref.dtype == torch.float32
    assert mod.torch_baseline(inp).dtype == torch.bfloat16
    # a constant plane stays constant under a normalised blur with replicate borders
    const = {"x": torch.full((1, 4, 6), 2.0), "weight": w, "border": "replicate"}
    assert torch.allclose(mod.reference(const), torch.full((1, 4, 6), 2.0), atol=1e-6)
    assert torch.equal(mod.make_inputs(p, seed=1, device="cpu")["x"], x)
    assert not torch.equal(mod.make_inputs(p, seed=2, device="cpu")["x"], x)


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    x = torch.ones(2, 6, 7)
    w = torch.ones(5, 5)
    with pytest.raises(ValueError, match="BLOCK_W=48"):
        mod.stencil2d(x, w, BLOCK_W=48)
    with pytest.raises(ValueError, match="BLOCK_H=3"):
        mod.stencil2d(x, w, BLOCK_H=3)
    with pytest.raises(ValueError, match="ROWS=0"):
        mod.stencil2d(x, w, ROWS=0)
    with pytest.raises(ValueError, match="border 'wrap'"):
        mod.stencil2d(x, w, "wrap")
    with pytest.raises(ValueError, match="weight must be"):
        mod.stencil2d(x, torch.ones(3, 3))
    with pytest.raises(ValueError, match="fp16 / bf16 / fp32"):
        mod.stencil2d(x.double(), w)
    with pytest.raises(ValueError, match=r"\[..., H, W\]"):
        mod.stencil2d(torch.ones(7), w)
    with pytest.raises(ValueError, match="empty"):
        mod.stencil2d(torch.ones(0, 6, 7), w)
    with pytest.raises(ValueError, match="reflect' needs"):
        mod.stencil2d(torch.ones(2, 2, 7), w, "reflect")
    with pytest.raises(ValueError, match="dtype 'fp64'"):
        mod.make_inputs(_pt(1, 4, 4, "fp64"), device="cpu")
    with pytest.raises(ValueError, match="filter 'sobel'"):
        mod.make_inputs(_pt(1, 4, 4, filt="sobel"), device="cpu")
    with pytest.raises(ValueError, match="pitch=3"):
        mod.make_inputs(_pt(1, 4, 4, pitch=3), device="cpu")
    with pytest.raises(ValueError, match="border 'mirror'"):
        mod.bytes_moved(_pt(1, 4, 4, border="mirror"))


def test_sweep_fits_the_points():
    """The study sweep: 54 configs (BLOCK_H 1 / 2 / 4 x BLOCK_W 64-256 x ROWS 8-32 x 4 / 8 warps,
    num_stages 1) with BASELINE among them; at every point each config is valid and launches
    >= 132 CTAs, and its shared memory (only the store's layout conversion: <= 4 bytes a tile
    element) fits 227 KiB. (Every config was compiled for sm_90 with triton 3.6.0 and 3.9.0 at every
    point, 162 compiles each, ~0.2-1 s apiece: all compile, none spills; triton 3.6: 56-168
    registers, 0-4 KiB shared memory (the 16-bit and fp32 points' store conversion; none at the
    zero-border point); 168 registers only at BLOCK_H 4 x BLOCK_W 256 on 4 warps (8 elements a
    thread). num_stages 1, 2 and 3 gave the same registers and shared memory: the row walk holds
    no dot and its loads are not pipelined, hence the one value.)"""
    configs, points, axes = H.study_sweeps([KERNEL], ROLE)[KERNEL]
    mod = load_example(KERNEL)
    assert set(axes) == set(mod.TUNABLES)
    assert sum(len(v) >= 2 for v in axes.values()) >= len(axes) - 1
    cfgs = [dict(zip(axes, v)) for v in itertools.product(*axes.values())]
    assert 40 <= len(cfgs) <= 72 and len(configs) == len(cfgs) and mod.BASELINE in cfgs
    for p in mod.POINTS:
        for c in cfgs:
            mod._check_cfg(c)
            assert mod.grid(c, p) >= H200_SMS, (p, c)
            assert 4 * c["BLOCK_H"] * c["BLOCK_W"] <= H200_SMEM_PER_BLOCK
            # at most 8 tile elements a thread (5 accumulators + 5 loaded rows of them): no spills
            assert c["BLOCK_H"] * c["BLOCK_W"] <= 8 * 32 * c["num_warps"]
    # the points differ in character: plane count, plane size, dtype, border
    assert len({(p["P"], p["H"], p["W"]) for p in mod.POINTS}) == 3
    assert {p["dtype"] for p in mod.POINTS} == set(mod.DTYPES)
    assert {p["border"] for p in mod.POINTS} == set(mod.BORDERS)


def test_examples_import_without_torch():
    proc = H.imports_without_torch(CASES)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr[-2000:]


@pytest.mark.slow
def test_example_compiles_sm90(shared_cache):
    """On sm_90: BASELINE and three more (1-4 bands, 64-256 columns, 4 / 8 warps) compile without
    spills, a little shared memory; and the other two points (zero border bf16, reflect fp32)."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    assert COMPILE_CFGS[0] == mod.BASELINE
    for cfg, res in H.compile_results(KERNEL, COMPILE_CFGS, "sm_90"):
        assert res.status == "ok", f"{cfg} on sm_90: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.shared <= 16 * 1024 and res.n_spills == 0, (cfg, res.n_regs, res.shared)
    cfg = COMPILE_CFGS[1]
    for p in mod.POINTS[1:]:
        res = compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch="sm_90",
                             num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
        assert res.status == "ok" and res.n_spills == 0, res.message


@pytest.mark.slow
def test_example_compiles_sm120(shared_cache):
    for cfg, res in H.compile_results(KERNEL, SM120_CFGS, "sm_120"):
        assert res.status == "ok", f"{cfg} on sm_120: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.shared <= SM120_SMEM_PER_BLOCK and res.n_spills == 0


# ----------------------------------------------------------------- the subprocess side
def _run() -> None:
    """H.run_cases with the strided / 4-D preparation, plus the output's contiguity."""
    import json
    import os

    assert os.environ.get("TRITON_INTERPRET") == "1", "run with TRITON_INTERPRET=1"
    mod = load_example(KERNEL)
    results = {}
    for name, (point, cfg) in CASES[KERNEL].items():
        try:
            inputs = mod.make_inputs(point, seed=len(name), device="cpu")
            _prepare(name, point, inputs)
            out = mod.launch(inputs, cfg)
            ref = mod.reference(inputs)
            results[name] = H.compare(out, ref, point["dtype"])
            results[name]["contiguous"] = bool(out.is_contiguous())
            results[name]["baseline"] = H.compare(mod.torch_baseline(inputs), ref, point["dtype"])
        except Exception as exc:          # reported per case by the test
            results[name] = {"error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(results))


if __name__ == "__main__":
    _run()
