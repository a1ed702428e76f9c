"""examples/maxpool_bwd_scatter.py (the backward of a 3 x 3 stride-2 max pool from its saved argmax
indices, NCHW or NHWC, an fp32 atomic scatter or an atomic-free gather by the constexpr GATHER)
against its fp64 torch reference on the CPU through Triton's interpreter, its launcher hooks against
the shapes, its study sweep against the points, and a compile for sm_90 and sm_120 from its own
``example_args``.

As in test_examples_round20_d.py the interpreter cases run in a subprocess (this file run as a
script: ``python tests/test_examples_round21_d.py maxpool_bwd_scatter``) that prints one JSON line.
Shapes are small, odd and ragged: output / input pixel counts not a multiple of BLOCK_P (masked pixel
tails, whole tiles past nothing), C not a multiple of BLOCK_C (masked channel tails), both layouts,
every dtype (fp32 / fp16 / bf16; bf16 only through the scatter's fp32 workspace and the gather's
fp32 accumulator, never a 16-bit atomic), int64 and int32 indices, pad 0 and 1, windows that do not
overlap (kernel 2 stride 2) and that overlap more (3 x 3 stride 1: up to 9 windows a pixel), an input
whose last rows / columns no window reaches (floor division), a 3 x 3 plane pooled to one pixel,
grad_out given as a non-contiguous view (copied), both formulations at BLOCK_P 4-64, BLOCK_C 1-16.

Tolerance (x max|ref|, absolute, per element): the reference is the fp64 scatter of the same rounded
grad_out; the kernel adds at most 4 (9 at stride 1) values in fp32 (a few 2^-24 relative) and rounds
once to the output dtype (up to an ulp with the interpreter's truncating cast: 2^-7 bf16, 2^-10 fp16
of an element <= max|ref|): the harness's defaults (fp32 1e-4, fp16 2e-3, bf16 1e-2) bound that.
torch_baseline (aten's max_pool2d_with_indices_backward on the CPU) stays inside them too.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
KERNEL = "maxpool_bwd_scatter"
ROLE = "held-out-21"
H200_SMS = 132
SM120_SMEM_PER_BLOCK = 99 * 1024

# the study sweep (scripts/rank_study.py's SWEEPS entry, when the lead has added it, must match)
SWEEP_AXES = {"GATHER": [0, 1], "BLOCK_P": [32, 64, 128, 256], "BLOCK_C": [4, 8, 16], "num_warps": [4, 8],
              "num_stages": [1]}


def _cfg(gather, bp, bc, w=4, st=1):
    return {"GATHER": gather, "BLOCK_P": bp, "BLOCK_C": bc, "num_warps": w, "num_stages": st}


def _pt(N, C, Hh, W, layout="nchw", dtype="fp32", idx="int64", pad=0, kernel=3, stride=2):
    return {"N": N, "C": C, "H": Hh, "W": W, "kernel": kernel, "stride": stride, "pad": pad, "layout": layout,
            "dtype": dtype, "idx": idx}


# case -> (point, cfg)
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        # 2 x 5 x 9 x 11 -> 5 x 6 (pad 1): 30 output pixels in tiles of 16 (tail 14), channels 5 in chunks of 4
        "scatter_nchw_fp32": (_pt(2, 5, 9, 11, pad=1), _cfg(0, 16, 4)),
        # NHWC bf16 through the fp32 workspace + cast; 13 x 10 -> 6 x 4, int32 indices; BLOCK_C 8 > C 3
        "scatter_nhwc_bf16_i32": (_pt(3, 3, 13, 10, "nhwc", "bf16", "int32"), _cfg(0, 8, 8, 8, 2)),
        # NHWC fp16 scatter, pad 1, 7 channels in chunks of 2 (tail 1), BLOCK_P 64 > 20 pixels
        "scatter_nhwc_fp16_pad": (_pt(2, 7, 8, 9, "nhwc", "fp16", pad=1), _cfg(0, 64, 2)),
        # the gather on NCHW fp32: 99 input pixels in tiles of 32 (tail 3), 5 channels in chunks of 2
        "gather_nchw_fp32": (_pt(2, 5, 9, 11, pad=1), _cfg(1, 32, 2, 4, 2)),
        # the gather on NHWC bf16, int32 indices, 12 x 12 (last row / column reached by no window), C 6 / 4
        "gather_nhwc_bf16_i32": (_pt(2, 6, 12, 12, "nhwc", "bf16", "int32"), _cfg(1, 16, 4, 8)),
        # the gather in fp16 NCHW with 3 x 3 stride 1 pad 1 (9 windows a pixel), one channel a chunk
        "gather_nchw_fp16_s1": (_pt(1, 3, 7, 6, "nchw", "fp16", pad=1, stride=1), _cfg(1, 64, 1, 2)),
        # 2 x 2 stride 2 (no overlap) scatter, NCHW fp16, int32 indices, odd 7 x 5 (last row / column unread)
        "scatter_nchw_fp16_k2": (_pt(2, 4, 7, 5, "nchw", "fp16", "int32", kernel=2), _cfg(0, 4, 16)),
        # a 3 x 3 plane pooled to 1 x 1 (gather: 9 pixels, one window each), NHWC fp32, C 16 in one chunk
        "gather_nhwc_fp32_1x1": (_pt(4, 16, 3, 3, "nhwc", "fp32"), _cfg(1, 4, 16)),
        # grad_out a non-contiguous view (a [:, ::2] channel slice, copied by the launcher), scatter fp32
        "scatter_strided_view_fp32": (_pt(2, 6, 9, 9, "nchw", "fp32"), _cfg(0, 32, 8)),
    },
}
STRIDED = "scatter_strided_view_fp32"

# configs compiled at the module's first POINT (sm_90: BASELINE first)
COMPILE_CFGS = [_cfg(0, 64, 16, 4), _cfg(1, 64, 16, 4), _cfg(0, 256, 4, 8), _cfg(1, 128, 8, 8)]
SM120_CFGS = [_cfg(0, 64, 16, 4), _cfg(1, 128, 16, 8)]


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """STRIDED: grad_out and indices become the even channels of [N, 2C, OH, OW] buffers."""
    import torch

    if name == STRIDED:
        for key in ("grad_out", "indices"):
            t = inputs[key]
            wide = torch.zeros((t.shape[0], 2 * t.shape[1]) + tuple(t.shape[2:]), dtype=t.dtype)
            wide[:, ::2] = t
            inputs[key] = wide[:, ::2]
        assert not inputs["grad_out"].is_contiguous()


# ----------------------------------------------------------------- the pytest side
def mod_out_pixels(p) -> int:
    mod = load_example(KERNEL)
    return (mod.out_size(p["H"], p["kernel"], p["stride"], p["pad"])
            * mod.out_size(p["W"], p["kernel"], p["stride"], p["pad"]))


def _results() -> dict:
    return H.interpreter_results(HERE, KERNEL)


@pytest.mark.parametrize("name", list(CASES[KERNEL]))
def test_example_matches_reference(name):
    res = _results()[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    p = CASES[KERNEL][name][0]
    assert res["shape"] == [p["N"], p["C"], p["H"], p["W"]]
    assert res["dtype"] == {"fp32": "torch.float32", "fp16": "torch.float16", "bf16": "torch.bfloat16"}[p["dtype"]]
    # channels_last out when grad_out is unambiguously so (C > 1 and more than one output pixel)
    pooled = mod_out_pixels(p)
    assert res["channels_last"] is (p["layout"] == "nhwc" and p["C"] > 1 and pooled > 1)
    for what, r in (("kernel", res), ("torch_baseline", res["baseline"])):
        assert r["n_bad"] == 0, H.mismatch(r, f"{name} {what}")


def test_cases_cover_every_code_path():
    """Both formulations in both layouts; every dtype and index dtype; pixel and channel tails;
    pad 0 / 1; no overlap, overlap 2 and overlap 3; a strided grad_out."""
    H.assert_tunables_covered({KERNEL: {n: (p, c) for n, (p, c) in CASES[KERNEL].items()}}, baseline=True)
    mod = load_example(KERNEL)
    cases = list(CASES[KERNEL].values())
    assert {(p["layout"], c["GATHER"]) for p, c in cases} == {(lay, g) for lay in mod.LAYOUTS for g in (0, 1)}
    assert {(p["dtype"], c["GATHER"]) for p, c in cases} == {(d, g) for d in mod.DTYPES for g in (0, 1)}
    assert {p["idx"] for p, _ in cases} == set(mod.IDX_DTYPES)
    assert {p["pad"] for p, _ in cases} == {0, 1} and {p["stride"] for p, _ in cases} == {1, 2}
    assert {p["kernel"] for p, _ in cases} == {2, 3}
    for g in (0, 1):
        npix = [(p["H"] * p["W"]) if g else (mod.out_size(p["H"], p["kernel"], p["stride"], p["pad"])
                * mod.out_size(p["W"], p["kernel"], p["stride"], p["pad"])) for p, c in cases if c["GATHER"] == g]
        bps = [c["BLOCK_P"] for p, c in cases if c["GATHER"] == g]
        assert any(n % b for n, b in zip(npix, bps)) and any(b > n for n, b in zip(npix, bps))
        assert any(p["C"] % c["BLOCK_C"] for p, c in cases if c["GATHER"] == g)
    assert STRIDED in CASES[KERNEL]


def test_launcher_hooks_agree_with_shapes():
    """At every point and config of COMPILE_CFGS: example_args on meta with the launch's shapes,
    dtypes and the layout's strides; grid, channel walk, bytes_moved / flops, secondary kernels."""
    import torch

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "example_args", "torch_baseline", "secondary_kernels", "maxpool2d_backward"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert not hasattr(mod, "cta_iterations")
    assert len(mod.POINTS) == 3 and mod.BASELINE["num_stages"] == 1 and set(mod.BASELINE) == set(mod.TUNABLES)
    dts = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}
    for cfg in [mod.BASELINE] + COMPILE_CFGS:
        for p in mod.POINTS:
            N, C, Hh, W = p["N"], p["C"], p["H"], p["W"]
            OH, OW = mod.out_size(Hh, 3, 2, p["pad"]), mod.out_size(W, 3, 2, p["pad"])
            args = mod.example_args(cfg, p)
            # the argmax indices with data (make_inputs' seed-0 draw: rank reads the scatter from them), the
            # rest on meta
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for k, v in args.items()
                       if k != "IDX")
            assert args["IDX"].device.type == "cpu" and args["IDX"].shape == (N, C, OH, OW)
            assert int(args["IDX"].min()) >= 0 and int(args["IDX"].max()) < Hh * W
            assert args["GO"].shape == (N, C, OH, OW) and args["GO"].dtype == dts[p["dtype"]]
            assert args["IDX"].dtype == (torch.int64 if p["idx"] == "int64" else torch.int32)
            assert args["GI"].shape == (N, C, Hh, W)
            assert args["GI"].dtype == (dts[p["dtype"]] if cfg["GATHER"] else torch.float32)
            for key, t, (h, w) in (("o", args["GO"], (OH, OW)), ("i", args["GI"], (Hh, W))):
                got = (args[f"stride_{key}n"], args[f"stride_{key}c"], args[f"stride_{key}p"])
                assert got == ((t.stride(0), t.stride(1), t.stride(3)))
                assert got == ((C * h * w, 1, C) if p["layout"] == "nhwc" else (C * h * w, h * w, 1))
            assert (args["C"], args["H"], args["W"], args["OH"], args["OW"]) == (C, Hh, W, OH, OW)
            assert (args["KH"], args["SH"], args["PH"], args["GATHER"]) == (3, 2, p["pad"], cfg["GATHER"])
            npix = Hh * W if cfg["GATHER"] else OH * OW
            assert mod.grid(cfg, p) == N * -(-npix // cfg["BLOCK_P"])
            assert mod.loop_iterations(cfg, p) == -(-C // cfg["BLOCK_C"])
            e, ie = (4 if p["dtype"] == "fp32" else 2), (8 if p["idx"] == "int64" else 4)
            assert mod.bytes_moved(p) == N * C * (OH * OW * (e + ie) + Hh * W * e)
            assert mod.flops(p) == N * C * OH * OW
            sec = mod.secondary_kernels(cfg, p)
            if cfg["GATHER"]:
                assert sec == []
            else:
                assert [s["name"] for s in sec] == ["zero_fill"] + ([] if e == 4 else [f"cast_to_{p['dtype']}"])
                # per CTA, as docs/launcher.md asks: the grid's CTAs together cover the whole target
                assert sec[0]["dram_bytes"] == sec[0]["tile_bytes"] == 4 * mod.FILL_BLOCK
                assert sec[0]["grid"] * mod.FILL_BLOCK >= N * C * Hh * W > (sec[0]["grid"] - 1) * mod.FILL_BLOCK
                if e == 2:
                    assert sec[1]["dram_bytes"] == sec[1]["tile_bytes"] == 6 * mod.FILL_BLOCK
            # make_inputs holds x, grad_out, indices (and launch a grad_in and a workspace): < 4 GB
            assert N * C * (Hh * W * (3 * e + 4) + OH * OW * (e + ie)) < 4 * 2**30


def test_sweep_configs_resolve_and_fit():
    """The study sweep: 48 configs (GATHER 0 / 1 x BLOCK_P 32-256 x BLOCK_C 4-16 x 4 / 8 warps,
    num_stages 1), BASELINE among them; each resolves on the bare kernel with this launcher and at
    every point launches >= 132 CTAs. (Every config was compiled for sm_90 with triton 3.6.0 and
    3.9.0 at every point, 144 compiles each: all compile; 26-255 registers, 0-32 KiB shared memory
    (layout conversions); one spill: GATHER 1 x BLOCK_P 256 x BLOCK_C 16 on 4 warps at the fp32 point,
    triton 3.9: 255 registers, 60 spills; 3.6: 251, none.) If scripts/rank_study.py holds the entry, its axes are these."""
    from occmodel.bare import bare_kernel
    from occmodel.launcher import Launcher

    mod = load_example(KERNEL)
    axes = SWEEP_AXES
    assert set(axes) == set(mod.TUNABLES)
    cfgs = [dict(zip(axes, v)) for v in itertools.product(*axes.values())]
    assert 40 <= len(cfgs) <= 72 and mod.BASELINE in cfgs
    kernel = bare_kernel(mod._kernel, launcher=Launcher(make_inputs=mod.make_inputs, launch=mod.launch,
                                                        example_args=mod.example_args, points=tuple(mod.POINTS),
                                                        baseline=mod.BASELINE))
    for c in cfgs:
        r = kernel.resolve(c)
        assert all(r[k] == v for k, v in c.items()), (c, r)
        for p in mod.POINTS:
            assert mod.grid(c, p) >= H200_SMS, (p, c)
            mod.example_args(c, p)
    # the points differ in character: layout, dtype, index dtype, pad, sizes
    assert {p["layout"] for p in mod.POINTS} == set(mod.LAYOUTS)
    assert {p["dtype"] for p in mod.POINTS} == set(mod.DTYPES)
    assert {p["idx"] for p in mod.POINTS} == set(mod.IDX_DTYPES)
    assert len({(p["N"], p["C"], p["H"], p["W"]) for p in mod.POINTS}) == 3


def test_study_sweep_entry_matches():
    """scripts/rank_study.py's SWEEPS entry (role held-out-21), once added, holds SWEEP_AXES."""
    try:
        sweeps = H.study_sweeps([KERNEL], ROLE)
    except KeyError:
        pytest.skip("scripts/rank_study.py has no SWEEPS entry for maxpool_bwd_scatter yet")
    configs, _, got_axes = sweeps[KERNEL]
    assert got_axes == SWEEP_AXES and len(configs) == 48


def test_hooks_on_small_points_and_inputs():
    """make_inputs: shapes, dtypes, layouts, the indices are the pool's argmax; reference and baseline."""
    import torch
    import torch.nn.functional as F

    mod = load_example(KERNEL)
    p = _pt(2, 3, 9, 7, "nhwc", "bf16", "int32", pad=1)
    inp = mod.make_inputs(p, seed=1, device="cpu")
    x, g, ix = inp["x"], inp["grad_out"], inp["indices"]
    assert x.shape == (2, 3, 9, 7) and x.dtype == torch.bfloat16
    assert x.is_contiguous(memory_format=torch.channels_last) and not x.is_contiguous()
    assert g.shape == ix.shape == (2, 3, 5, 4) and g.dtype == torch.bfloat16 and ix.dtype == torch.int32
    assert g.is_contiguous(memory_format=torch.channels_last) and ix.stride() == g.stride()
    assert float(g.float().std()) > 0.5
    pooled = F.max_pool2d(x.float(), 3, 2, 1)
    assert torch.equal(x.float().reshape(2, 3, -1).gather(2, ix.long().reshape(2, 3, -1)).reshape(2, 3, 5, 4), pooled)
    ref = mod.reference(inp)
    assert ref.shape == (2, 3, 9, 7) and ref.dtype == torch.float32
    assert abs(float(ref.double().sum()) - float(g.double().sum())) < 1e-3
    assert mod.torch_baseline(inp).dtype == torch.bfloat16
    assert torch.equal(mod.make_inputs(p, seed=1, device="cpu")["grad_out"], g)
    assert not torch.equal(mod.make_inputs(p, seed=2, device="cpu")["grad_out"], g)


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    g = torch.ones(1, 2, 4, 5)
    ix = torch.zeros(1, 2, 4, 5, dtype=torch.int64)
    with pytest.raises(ValueError, match="BLOCK_P=48"):
        mod.maxpool2d_backward(g, ix, (9, 11), BLOCK_P=48)
    with pytest.raises(ValueError, match="GATHER=2"):
        mod.maxpool2d_backward(g, ix, (9, 11), GATHER=2)
    with pytest.raises(ValueError, match="pooled size"):
        mod.maxpool2d_backward(g, ix, (9, 14))
    with pytest.raises(ValueError, match="same"):
        mod.maxpool2d_backward(g, ix[:, :1], (9, 11))
    with pytest.raises(ValueError, match="int64 / int32"):
        mod.maxpool2d_backward(g, ix.short(), (9, 11))
    with pytest.raises(ValueError, match="fp16 / bf16 / fp32"):
        mod.maxpool2d_backward(g.double(), ix, (9, 11))
    with pytest.raises(ValueError, match="padding"):
        mod.maxpool2d_backward(g, ix, (9, 11), padding=2)
    with pytest.raises(ValueError, match="dtype 'fp64'"):
        mod.make_inputs(_pt(1, 1, 5, 5, dtype="fp64"), device="cpu")
    with pytest.raises(ValueError, match="idx 'int16'"):
        mod.bytes_moved(_pt(1, 1, 5, 5, idx="int16"))
    with pytest.raises(ValueError, match="layout 'nwhc'"):
        mod.grid(mod.BASELINE, _pt(1, 1, 5, 5, layout="nwhc"))
    with pytest.raises(ValueError, match="smaller than"):
        mod.make_inputs(_pt(1, 1, 2, 5), device="cpu")


def test_examples_import_without_torch():
    proc = H.imports_without_torch(CASES)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr[-2000:]


@pytest.mark.slow
def test_example_compiles_sm90(shared_cache):
    """On sm_90: BASELINE and three more (both formulations, 64-256 pixels, 4 / 8 warps) compile
    without spills or shared memory at the first point; and BASELINE at the other two points."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    assert COMPILE_CFGS[0] == mod.BASELINE
    for cfg, res in H.compile_results(KERNEL, COMPILE_CFGS, "sm_90"):
        assert res.status == "ok", f"{cfg} on sm_90: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.n_spills == 0, (cfg, res.n_regs, res.shared)
    cfg = COMPILE_CFGS[0]
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
    """H.run_cases with the strided preparation, plus the output's dtype and memory format."""
    import json
    import os

    import torch

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
            results[name]["dtype"] = str(out.dtype)
            results[name]["channels_last"] = bool(out.is_contiguous(memory_format=torch.channels_last)
                                                  and not out.is_contiguous())
            results[name]["baseline"] = H.compare(mod.torch_baseline(inputs), ref, point["dtype"])
        except Exception as exc:          # reported per case by the test
            results[name] = {"error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(results))


if __name__ == "__main__":
    _run()
