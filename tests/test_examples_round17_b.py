"""examples/channel_stats.py (BatchNorm2d training statistics: per-channel mean and rstd of an
[N, C, H, W] activation, NCHW or channels_last, by a split reduction writing (mean, M2) partials and
a Chan's-Welford combine kernel) against its fp64 torch reference on the CPU through Triton's
interpreter, its split arithmetic and launcher hooks against the shapes, its study sweep against
the points, and a compile for sm_90 and sm_120 from its own ``example_args``.

As in test_examples_round15_a.py, the interpreter must be chosen before triton is imported, so
the cases run in a subprocess (this file run as a script: ``python tests/test_examples_round17_b.py
channel_stats``) that prints one JSON line; the tests assert per case. Each case compares launch()'s
[2, C] output (mean; rstd) with the reference, and the rstd row alone against its own scale (so a
variance lost to cancellation cannot hide behind a large mean), and torch_baseline's output too.

Shapes are small, odd and ragged and cover every code path: channels_last (EVEN_C on / off, EVEN_R
on / off), NCHW with rows a multiple of BLOCK_R (ALIGNED_ROWS: HW = BLOCK_R and HW = 2 BLOCK_R) and
NCHW with ragged / short rows (HW = 25, 6, 290: a step crossing one or two sample boundaries, the
carry), C below BLOCK_C, SPLIT 1 (one CTA row, the combine's single partial), a short last chunk
(unequal counts in Chan's merge), SPLIT > COMBINE_BLOCK_S (the combine's loop takes two steps),
all three dtypes, and a channel offset of 100 x std (fp32: the shifted sums under test).

Tolerance (x max|ref|, absolute, per element; the rstd row also x its own max): the reference is
fp64 two-pass statistics of the same rounded inputs, so the input dtype adds no error; the kernel
works in fp32 throughout: per lane sums of x - k_c (k_c a sample of the channel, within a few std
of its mean), a tree sum over the tile, Chan's merge. The relative error of mean and variance is
~ (log2 of the summed count) x 2^-24 x (|mean - k| / std + 1)^2: < 1e-5 here even for the offset
case (|mean - k| ~ 3 std), so 1e-4 for every dtype. A plain fp32 (sum, sumsq) would likely fail
the offset case's rstd row (sumsq ~ 1e4 x var: ~1e-3 of the variance left to rounding; not run).
torch_baseline (var_mean in fp32) stays inside too. Measured: <= 1.1e-7 of max|ref| (the rstd
row of the offset case 5.8e-7 of its own max), torch_baseline <= 1.1e-7.
"""

from __future__ import annotations

import itertools
import json
import os
import sys
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
KERNEL = "channel_stats"
TOL = {"fp16": 1e-4, "bf16": 1e-4, "fp32": 1e-4}
H200_SMS = 132
H200_SMEM_PER_BLOCK = 227 * 1024
SM120_SMEM_PER_BLOCK = 99 * 1024


def _cfg(bc, br, cps, ls, w, st=1):
    return {"BLOCK_C": bc, "BLOCK_R": br, "CTAS_PER_SM": cps, "LOOP_STAGES": ls, "num_warps": w, "num_stages": st}


def _pt(N, C, H_, W, dtype, layout, sms):
    return {"N": N, "C": C, "H": H_, "W": W, "dtype": dtype, "layout": layout, "eps": 1e-5, "sms": sms}


# case -> (point, cfg); comments: (grid, chunk, the path)
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        # R 105 (ragged tail of 9), C 37 (ragged): grid (3, 2), chunk 64 -> counts 64 / 41
        "nhwc_ragged_fp16": (_pt(3, 37, 5, 7, "fp16", "nhwc", 3), _cfg(16, 32, 2, 1, 4)),
        # EVEN_C and EVEN_R: grid (2, 2), chunk 32
        "nhwc_even_bf16": (_pt(2, 32, 4, 8, "bf16", "nhwc", 4), _cfg(16, 16, 1, 2, 8)),
        # C 16 < BLOCK_C 64, SPLIT 1 (one CTA, 18 elements in one masked step)
        "nhwc_one_cta_fp32": (_pt(2, 16, 3, 3, "fp32", "nhwc", 1), _cfg(64, 32, 1, 3, 4, 2)),
        # HW 25, BLOCK_R 32: a step crosses one sample boundary (d_n 1, d_hw 7, the carry); C 20 ragged
        "nchw_ragged_rows_bf16": (_pt(3, 20, 5, 5, "bf16", "nchw", 2), _cfg(8, 32, 2, 1, 4)),
        # HW 6, BLOCK_R 16: d_n 2, d_hw 4, several samples a step; fp32 so cp.async pipelines it
        "nchw_short_rows_fp32": (_pt(11, 5, 2, 3, "fp32", "nchw", 3), _cfg(4, 16, 1, 3, 8, 2)),
        # HW 290 ragged rows, 37 CTA rows > COMBINE_BLOCK_S: the combine walks two steps; last chunk 8
        "nchw_many_splits_fp16": (_pt(4, 9, 10, 29, "fp16", "nchw", 20), _cfg(16, 16, 2, 2, 4)),
        # HW 64 = 2 BLOCK_R: ALIGNED_ROWS, C 6 ragged, grid (2, 3)
        "nchw_aligned_fp32": (_pt(3, 6, 8, 8, "fp32", "nchw", 4), _cfg(4, 32, 2, 3, 4)),
        # HW 32 = BLOCK_R: ALIGNED_ROWS with one tile a row, EVEN_C, EVEN_R
        "nchw_aligned_fp16": (_pt(5, 16, 4, 8, "fp16", "nchw", 4), _cfg(16, 32, 2, 1, 8, 2)),
        # every channel offset by 100 (std 0.25-2): the shift k_c keeps the variance
        "nhwc_offset_fp32": (_pt(4, 24, 6, 5, "fp32", "nhwc", 2), _cfg(8, 32, 2, 2, 4)),
    },
}
OFFSET = {"nhwc_offset_fp32": 100.0}

# configs compiled for sm_90 at every POINT (BASELINE first) and sm_120
COMPILE_CFGS = [_cfg(64, 64, 4, 3, 4), _cfg(16, 32, 8, 1, 8), _cfg(64, 32, 2, 1, 4), _cfg(16, 64, 2, 3, 8)]
SM120_CFGS = [_cfg(64, 64, 4, 3, 4), _cfg(16, 32, 2, 1, 4)]


def _prepare(name: str, point: dict, inputs: dict) -> None:
    if name in OFFSET:
        inputs["x"] = inputs["x"] + OFFSET[name]


# ----------------------------------------------------------------- the pytest side
def _results() -> dict:
    return H.interpreter_results(HERE, KERNEL)


@pytest.mark.parametrize("name", list(CASES[KERNEL]))
def test_example_matches_reference(name):
    res = _results()[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    point = CASES[KERNEL][name][0]
    assert res["shape"] == [2, point["C"]]
    for what in ("all", "rstd", "baseline"):
        assert res[what]["n_bad"] == 0, H.mismatch(res[what], f"{name} {what}")


def test_cases_cover_every_code_path():
    """Each tunable takes >= 2 values; both layouts, all dtypes, ALIGNED_ROWS on / off, EVEN_C and
    EVEN_R on / off, a step over >= 2 sample boundaries, SPLIT 1 and > COMBINE_BLOCK_S, a short last
    chunk, C < BLOCK_C are all hit."""
    H.assert_tunables_covered(CASES)
    mod = load_example(KERNEL)
    seen = set()
    for p, c in CASES[KERNEL].values():
        a = mod.example_args(c, p)
        HW, R, C = p["H"] * p["W"], p["N"] * p["H"] * p["W"], p["C"]
        seen.add(p["layout"])
        seen.add(p["dtype"])
        seen.add(("aligned", a["ALIGNED_ROWS"]))
        seen.add(("even_c", a["EVEN_C"]))
        seen.add(("even_r", a["EVEN_R"]))
        if p["layout"] == "nchw" and not a["ALIGNED_ROWS"] and c["BLOCK_R"] // HW >= 2:
            seen.add("multi_sample_step")
        _, split, chunk = mod.plan(C, R, c, p["sms"])
        seen |= {"split1"} if split == 1 else set()
        seen |= {"split_gt_combine"} if split > mod.COMBINE_BLOCK_S else set()
        seen |= {"short_last"} if split > 1 and R % chunk else set()
        seen |= {"c_lt_block"} if C < c["BLOCK_C"] else set()
    assert seen >= {"nhwc", "nchw", "fp16", "bf16", "fp32", ("aligned", True), ("aligned", False),
                    ("even_c", True), ("even_c", False), ("even_r", True), ("even_r", False), "multi_sample_step",
                    "split1", "split_gt_combine", "short_last", "c_lt_block"}, seen


def _kernel_chunk(C, R, cfg, sms):
    """The kernel's own chunk arithmetic, in Python ints."""
    r_tiles = -(-R // cfg["BLOCK_R"])
    split0 = max(1, min(r_tiles, -(-(cfg["CTAS_PER_SM"] * sms) // -(-C // cfg["BLOCK_C"]))))
    return -(-r_tiles // split0) * cfg["BLOCK_R"]


def test_split_arithmetic():
    """plan(): chunks of a multiple of BLOCK_R tile [0, R) exactly, every CTA row non-empty, the
    kernel's chunk the launcher's, the grid within CTAS_PER_SM x SMs (rounded up to whole channel
    blocks); cta_iterations and loop_iterations agree with it."""
    mod = load_example(KERNEL)
    for C in (1, 5, 64, 2048):
        for R in (1, 49, 1000, 25088, 524288, 1605632):
            for cfg in (_cfg(16, 32, 2, 1, 4), _cfg(64, 64, 8, 3, 8), _cfg(4, 16, 1, 1, 4)):
                for sms in (1, 7, 132):
                    cb, split, chunk = mod.plan(C, R, cfg, sms)
                    assert chunk % cfg["BLOCK_R"] == 0 and chunk == _kernel_chunk(C, R, cfg, sms)
                    assert (split - 1) * chunk < R <= split * chunk
                    assert cb * split <= max(cb, cfg["CTAS_PER_SM"] * sms + cb)
                    p = {"N": 1, "C": C, "H": 1, "W": R, "dtype": "fp16", "layout": "nhwc", "sms": sms}
                    its = mod.cta_iterations(cfg, p)
                    assert len(its) == cb * split and min(its) >= 1
                    assert sum(its) == cb * -(-R // cfg["BLOCK_R"]) and mod.loop_iterations(cfg, p) == max(its)


def test_sweep_fits_the_points():
    """The study sweep: 48 configs over the TUNABLES with BASELINE among them; at every POINT each is
    valid, launches >= 132 CTAs, every one with work, and its buffers fit 227 KiB.
    (Every config was compiled for sm_90 with triton 3.6.0 at every point: all 144 compile without
    spills, ~0.3-1.2 s each (~70 s in all); registers 28-207 (the most at the NCHW short-row point,
    4 warps, 32 elements a thread: a 64-bit address per element; NHWC 28-112, aligned NCHW
    29-128); shared memory 64 B-32 KiB: LOOP_STAGES 3 buffers 2 tiles (32 KiB: fp32 64 x 64), except
    at the bf16 short-row point (<= 1 KiB), where the 2-byte gathers are not cp.async-able and
    LOOP_STAGES changes nothing. 64 x 128 tiles on 4 warps, left out, spill
    164 words there.)"""
    SWEEP_AXES = H.study_sweeps([KERNEL], "held-out-17")[KERNEL][2]
    mod = load_example(KERNEL)
    assert set(SWEEP_AXES) == set(mod.TUNABLES)
    cfgs = [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]
    assert 40 <= len(cfgs) <= 72 and mod.BASELINE in cfgs
    for p in mod.POINTS:
        for c in cfgs:
            mod._check_cfg(c)
            cb, split = mod.grid(c, p)
            assert cb * split >= H200_SMS and min(mod.cta_iterations(c, p)) >= 1, (p, c)
            tile = c["BLOCK_C"] * c["BLOCK_R"] * {"fp16": 2, "bf16": 2, "fp32": 4}[p["dtype"]]
            assert (c["LOOP_STAGES"] - 1) * tile + 8 * c["BLOCK_C"] * c["num_warps"] <= H200_SMEM_PER_BLOCK
            assert split <= 4096 and 2 * split * p["C"] * 4 < 4 * 2**20       # the workspace stays in L2
    # the points differ in character: layout, dtype, the path
    paths = [(p["layout"], mod.example_args(mod.BASELINE, p)["ALIGNED_ROWS"], p["dtype"]) for p in mod.POINTS]
    assert len(set(paths)) == 3


def test_launcher_hooks_agree_with_shapes():
    """At every point: example_args on the meta device with the layout's strides and the constexprs
    of a launch; bytes_moved counts x once plus the outputs; inputs < 4 GB; secondary_kernels names
    the combine."""
    import torch

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "cta_iterations", "example_args", "torch_baseline", "secondary_kernels", "channel_stats"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert len(mod.POINTS) == 3 and {p["layout"] for p in mod.POINTS} == {"nhwc", "nchw"}
    assert {p["dtype"] for p in mod.POINTS} == {"fp16", "bf16", "fp32"}
    for cfg in COMPILE_CFGS:
        for p in mod.POINTS:
            a = mod.example_args(cfg, p)
            N, C, Hh, W = p["N"], p["C"], p["H"], p["W"]
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for v in a.values())
            x = a["X"]
            assert x.shape == (N, C, Hh, W)
            cl = p["layout"] == "nhwc"
            assert x.is_contiguous(memory_format=torch.channels_last) if cl else x.is_contiguous()
            assert a["CHANNELS_LAST"] == cl and a["NUM_SMS"] == H200_SMS
            assert (a["C"], a["HW"], a["R"]) == (C, Hh * W, N * Hh * W)
            cb, split = mod.grid(cfg, p)
            assert a["WS"].shape == (2, split, C) and a["WS"].dtype == torch.float32
            assert {k: a[k] for k in ("BLOCK_C", "BLOCK_R", "CTAS_PER_SM", "LOOP_STAGES")} == \
                {k: cfg[k] for k in ("BLOCK_C", "BLOCK_R", "CTAS_PER_SM", "LOOP_STAGES")}
            e = {"fp16": 2, "bf16": 2, "fp32": 4}[p["dtype"]]
            assert mod.bytes_moved(p) == N * C * Hh * W * e + 8 * C and mod.flops(p) == 4 * N * C * Hh * W
            assert H.meta_nbytes(a) < 4 * 2**30
            (sec,) = mod.secondary_kernels(cfg, p)
            assert sec["name"] == "_combine_kernel" and sec["grid"] == -(-C // mod.COMBINE_BLOCK_C)
            assert sec["iterations"] == -(-split // mod.COMBINE_BLOCK_S) and sec["dram_bytes"] == 0
    # x alone: 205 / 103 / 268 MB, > the 50 MB L2
    assert [mod.bytes_moved(p) // 2**20 for p in mod.POINTS] == [196, 98, 256]


def test_hooks_on_small_points_and_inputs():
    """make_inputs' tensors (layout, dtype, per-channel spread, the seed's), the reference's and
    the baseline's shapes; channel_stats reads a non-contiguous input through a copy."""
    import torch

    mod = load_example(KERNEL)
    p = _pt(3, 5, 4, 6, "bf16", "nhwc", 2)
    inputs = mod.make_inputs(p, seed=1, device="cpu")
    x = inputs["x"]
    assert x.shape == (3, 5, 4, 6) and x.dtype == torch.bfloat16 and inputs["num_sms"] == 2
    assert x.is_contiguous(memory_format=torch.channels_last) and not x.is_contiguous()
    assert mod.make_inputs(_pt(3, 5, 4, 6, "fp32", "nchw", 2), device="cpu")["x"].is_contiguous()
    ref = mod.reference(inputs)
    assert ref.shape == (2, 5) and ref.dtype == torch.float32
    assert float(ref[0].std()) > 0.3 and bool((ref[1] > 0.3).all()) and bool((ref[1] < 5).all())
    assert mod.torch_baseline(inputs).shape == (2, 5)
    assert torch.equal(mod.make_inputs(p, seed=1, device="cpu")["x"], x)
    assert not torch.equal(mod.make_inputs(p, seed=2, device="cpu")["x"], x)


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    x = torch.ones(2, 3, 4, 4)
    with pytest.raises(ValueError, match="BLOCK_C=24"):
        mod.channel_stats(x, BLOCK_C=24)
    with pytest.raises(ValueError, match="16384"):
        mod.channel_stats(x, BLOCK_C=128, BLOCK_R=256)
    with pytest.raises(ValueError, match="CTAS_PER_SM=0"):
        mod.channel_stats(x, CTAS_PER_SM=0)
    with pytest.raises(ValueError, match="num_sms=0"):
        mod.channel_stats(x, num_sms=0)
    with pytest.raises(ValueError, match=r"\[N, C, H, W\]"):
        mod.channel_stats(torch.ones(3, 4))
    with pytest.raises(ValueError, match="fp16 / bf16 / fp32"):
        mod.channel_stats(x.double())
    with pytest.raises(ValueError, match="empty"):
        mod.channel_stats(torch.ones(0, 3, 4, 4))
    with pytest.raises(ValueError, match="dtype 'fp8'"):
        mod.bytes_moved(_pt(1, 1, 1, 1, "fp8", "nchw", 1))
    with pytest.raises(ValueError, match="layout 'nhcw'"):
        mod.example_args(mod.BASELINE, _pt(1, 1, 1, 1, "fp16", "nhcw", 1))


def test_examples_import_without_torch():
    proc = H.imports_without_torch(CASES)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr[-2000:]


@pytest.mark.slow
@pytest.mark.parametrize("pi", [0, 1, 2])
def test_example_compiles_sm90(shared_cache, pi):
    """On sm_90, at every point: BASELINE and three more compile without spills inside 227 KiB; the
    NHWC and aligned-NCHW points load 16-byte vectors (cp.async with LOOP_STAGES 3), the bf16
    short-row point 2-byte gathers."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    assert COMPILE_CFGS[0] == mod.BASELINE
    p = mod.POINTS[pi]
    for cfg in COMPILE_CFGS:
        res = compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch="sm_90", num_warps=cfg["num_warps"],
                             num_stages=cfg["num_stages"], keep_ir=True)
        assert res.status == "ok", f"{cfg} at {p}: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.shared <= H200_SMEM_PER_BLOCK and res.n_spills == 0, (cfg, p)
        if cfg is mod.BASELINE:
            if pi == 1:
                assert "ld.global.b16" in res.ptx and "cp.async" not in res.ptx
            else:
                assert "cp.async.cg.shared.global" in res.ptx


@pytest.mark.slow
def test_example_compiles_sm120(shared_cache):
    for cfg, res in H.compile_results(KERNEL, SM120_CFGS, "sm_120"):
        assert res.status == "ok", f"{cfg} on sm_120: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.shared <= SM120_SMEM_PER_BLOCK and res.n_spills == 0


@pytest.mark.slow
def test_combine_kernel_compiles(shared_cache):
    """The combine kernel, for sm_90, at the C = 2048 point's SPLIT."""
    import torch
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    _, split, chunk = mod.plan(2048, 512 * 49, mod.BASELINE)
    ws = torch.empty((2, split, 2048), dtype=torch.float32, device="meta")
    out = torch.empty((2048,), dtype=torch.float32, device="meta")
    res = compile_kernel(mod._combine_kernel, args=dict(WS=ws, MEAN=out, RSTD=out, C=2048, R=512 * 49, chunk=chunk,
                                                        SPLIT=split, eps=1e-5, BLOCK_C=mod.COMBINE_BLOCK_C,
                                                        BLOCK_S=mod.COMBINE_BLOCK_S),
                         arch="sm_90", num_warps=4, num_stages=1)
    assert res.status == "ok" and res.n_spills == 0, res.message


# ----------------------------------------------------------------- the subprocess side
def _run_cases() -> None:
    assert os.environ.get("TRITON_INTERPRET") == "1", "run with TRITON_INTERPRET=1"
    mod = load_example(KERNEL)
    results = {}
    for name, (point, cfg) in CASES[KERNEL].items():
        try:
            inputs = mod.make_inputs(point, seed=len(name), device="cpu")
            _prepare(name, point, inputs)
            out = mod.launch(inputs, cfg)
            ref = mod.reference(inputs)
            res = H.compare(out, ref, point["dtype"], TOL)
            res["all"] = dict(res)
            res["rstd"] = H.compare(out[1], ref[1], point["dtype"], TOL)
            res["baseline"] = H.compare(mod.torch_baseline(inputs), ref, point["dtype"], TOL)
            results[name] = res
        except Exception as exc:          # reported per case by the test
            results[name] = {"error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(results))


if __name__ == "__main__":
    _run_cases()
