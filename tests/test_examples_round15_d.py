"""examples/dropout_add_layernorm.py (training-time dropout + residual add + LayerNorm, Philox
dropout) against its torch reference on the CPU through Triton's interpreter, its Philox
against Random123's known answers, its launcher hooks against the shapes, its study sweep
against the points, and a compile for sm_90 and sm_120 from its own ``example_args``.

As in test_examples_round14_d.py, the interpreter must be chosen before triton is imported, so
the cases run in a subprocess (this file run as a script: ``python tests/test_examples_round15_d.py
dropout_add_layernorm``) that prints one JSON line; the tests assert per case. Each case runs
into an out= buffer filled with NaN (an element no CTA writes stays NaN); the inputs are
checked to be left as they were.

The mask is checked bit for bit: the reference regenerates it in torch (philox_keep_mask:
integer Philox 4x32-10, the same fp32 uniform and compare), independently of the kernel; every
case also checks the kept fraction against 1 - p (5 sigma), and one case runs the same inputs
under a second config (one tile instead of the chunk loop) and must give the same mask and the
same stored residual bit for bit (the mask depends on (seed, row, column) only).

Shapes are small, odd and ragged: rows not a multiple of BLOCK_M (a last CTA with 1 of 4 / 8
rows), fewer rows than BLOCK_M; one tile with masked columns (N < BLOCK_N), exactly full
(N == BLOCK_N), BLOCK_N clamped to next_power_of_2(N) (N = 5: a partial Philox quad, BLOCK_N
4096 -> 16); the two-pass loop with a ragged last chunk, exact chunks, two chunks (a loop of
one iteration) whose second holds 2 columns, many chunks; x and residual as row-strided views;
p 0 (all kept), 0.1-0.5 and 0.9; a seed >= 2^32 (Philox's high key word); rows whose mean is
~116x their spread (residual + 300 in fp16), where fp32 E[r^2] - mean^2 without the kernel's
shift would put rstd off by ~4e-4 (40x the 1e-5 below); both dtypes, with and without the
stored mask. The tunables take 2-5 values each (num_warps and num_stages are nominal under
the interpreter; the compiles below check them).

Tolerance (y and r, x max|ref|, absolute, per element: bf16 2e-2, fp16 3e-3). The reference
rounds r = residual + keep * x / (1 - p) (fp32) to x's dtype with round-to-nearest; the
interpreter's fp32 -> bf16 / fp16 cast truncates, so the stored r may be one ulp lower (2^-7
relative in bf16, 2^-10 in fp16), which moves y by up to ~one ulp of |r - mean| x rstd |w|,
and y's own cast truncates again (another ulp of |y|): <= ~2 x 2^-7 = 1.6 % of max|y| in bf16
(measured <= 0.9 %), <= ~0.2 % in fp16 (measured <= 0.05 %). On the GPU both casts round to
nearest and the reference matches to an fp32 FMA contraction. The statistics against the
reference: mean within 2^-7 (bf16) / 2^-10 (fp16) x max|r|, rstd within 2 x that relative.
Against the kernel's own stored r (fp64 statistics of it), the reductions are checked tightly:
mean within 2e-6 x (|mean| + std), rstd within 1e-5 relative (fp32 sums of <= 2051 terms,
shifted; measured <= 3e-8 and 1.4e-7), and y within one output ulp of |y| + 1e-4 x max|y|.
"""

from __future__ import annotations

import itertools
import json
import math
import os
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
KERNEL = "dropout_add_layernorm"
TOL = {"bf16": 2e-2, "fp16": 3e-3}
ULP = {"bf16": 2.0 ** -7, "fp16": 2.0 ** -10}       # one ulp, relative (truncation's worst case)
H200_SMS = 132
H200_SMEM_PER_BLOCK = 227 * 1024
SM120_SMEM_PER_BLOCK = 99 * 1024


def _cfg(bm, bn, ls, w, s):
    return {"BLOCK_M": bm, "BLOCK_N": bn, "LOOP_STAGES": ls, "num_warps": w, "num_stages": s}


def _pt(M, N, dtype, p, store_mask):
    return {"M": M, "N": N, "dtype": dtype, "p": p, "store_mask": store_mask}


# kernel module -> case name -> (point, cfg)
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        # one tile, 28 masked columns, 13 rows in CTAs of 4 (a last CTA of one row)
        "one_tile_ragged_bf16": (_pt(13, 100, "bf16", 0.1, True), _cfg(4, 128, 1, 4, 1)),
        # one tile exactly full, no stored mask
        "one_tile_exact_fp16": (_pt(8, 256, "fp16", 0.25, False), _cfg(2, 256, 2, 2, 2)),
        # BLOCK_N 4096 clamped to 16 for 5 columns (one full and one partial Philox quad); 9 rows, CTAs of 8
        "one_tile_clamped_tiny_bf16": (_pt(9, 5, "bf16", 0.5, True), _cfg(8, 4096, 1, 1, 1)),
        # two-pass: 7 full chunks of 128 and one of 104, two stages
        "two_pass_ragged_bf16": (_pt(6, 1000, "bf16", 0.1, True), _cfg(2, 128, 2, 4, 1)),
        # two-pass: 8 exact chunks, three stages, one row a CTA
        "two_pass_exact_fp16": (_pt(5, 512, "fp16", 0.2, True), _cfg(1, 64, 3, 2, 1)),
        # two chunks (the loop runs once), the second 2 columns wide; p 0.9; 11 rows in CTAs of 8
        "two_pass_two_chunks_fp16": (_pt(11, 130, "fp16", 0.9, False), _cfg(8, 128, 1, 4, 2)),
        # rows with |mean| ~ 100 x std: the shifted accumulation (set up in _prepare)
        "two_pass_offset_rows_fp16": (_pt(4, 700, "fp16", 0.1, True), _cfg(2, 64, 2, 4, 1)),
        # x and residual row-strided views of wider buffers
        "strided_rows_bf16": (_pt(7, 200, "bf16", 0.3, True), _cfg(2, 64, 1, 2, 1)),
        # p = 0: everything kept (x / 1 added), two chunks of 32 + 16, no stored mask
        "p_zero_bf16": (_pt(3, 48, "bf16", 0.0, False), _cfg(1, 32, 2, 1, 2)),
        # a seed >= 2^32 (set in _prepare): Philox's high key word is not 0
        "big_seed_fp16": (_pt(4, 96, "fp16", 0.3, True), _cfg(4, 32, 1, 2, 1)),
        # one row of 2051 columns: 4 chunks of 512 and one of 3, 8 warps, three stages
        "one_row_wide_bf16": (_pt(1, 2051, "bf16", 0.15, True), _cfg(1, 512, 3, 8, 1)),
    },
}
# the case run again under a second config: one tile instead of 8 chunks
SECOND_CFG = ("two_pass_ragged_bf16", _cfg(4, 1024, 1, 4, 1))
BIG_SEED = 2**40 + 987654321

# configs compiled for each arch at the module's first POINT (sm_90: BASELINE first)
COMPILE_CFGS: dict[str, list[dict]] = {
    KERNEL: [_cfg(1, 4096, 1, 8, 1), _cfg(2, 1024, 2, 4, 1), _cfg(2, 2048, 3, 8, 1), _cfg(1, 4096, 1, 16, 1)],
}
SM120_CFGS = [_cfg(1, 4096, 1, 8, 1), _cfg(2, 2048, 2, 8, 1), _cfg(1, 1024, 3, 4, 1)]


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """Edit a case's inputs: strided views, row offsets, a large seed."""
    import torch

    if name == "strided_rows_bf16":
        for key, extra in (("x", 24), ("residual", 40)):
            t = inputs[key]
            M, N = t.shape
            wide = torch.zeros((M, N + extra), dtype=t.dtype)
            wide[:, :N] = t
            inputs[key] = wide[:, :N]
            assert inputs[key].stride() == (N + extra, 1)
    elif name == "two_pass_offset_rows_fp16":
        inputs["residual"] = (inputs["residual"].float() + 300.0).to(inputs["residual"].dtype)
    elif name == "big_seed_fp16":
        inputs["seed"] = BIG_SEED


# ----------------------------------------------------------------- the subprocess side
def _own_stats(r, w, b, eps):
    """fp64 mean, rstd and y of the kernel's own stored r."""
    r = r.double()
    mean = r.mean(dim=1)
    var = (r - mean[:, None]).pow(2).mean(dim=1)
    rstd = (var + eps).rsqrt()
    y = (r - mean[:, None]) * rstd[:, None] * w.double() + b.double()
    return mean, var.sqrt(), rstd, y


def _check_case(mod, name, point, cfg, inputs) -> dict:
    import torch

    dt = point["dtype"]
    M, N = point["M"], point["N"]
    before = {k: v.clone() for k, v in inputs.items() if isinstance(v, torch.Tensor)}
    out = torch.full((2, M, N), float("nan"), dtype=inputs["x"].dtype)
    y, r, mask, mean, rstd = mod.dropout_add_layer_norm(
        inputs["x"], inputs["residual"], inputs["weight"], inputs["bias"], inputs["p"], inputs["seed"], inputs["eps"],
        store_mask=inputs["store_mask"], out=out, **cfg)
    y_ref, r_ref, keep, mean_ref, rstd_ref = mod.reference_all(inputs)
    res = {"y": H.compare(y, y_ref, dt, TOL), "r": H.compare(r, r_ref, dt, TOL),
           "same_buffer": y.data_ptr() == out[0].data_ptr() and r.data_ptr() == out[1].data_ptr(),
           "inputs_untouched": all(torch.equal(before[k], inputs[k]) for k in before),
           "mask_none": mask is None, "keep_frac": float(keep.float().mean()), "numel": M * N}
    if mask is not None:
        res["mask_dtype"] = str(mask.dtype)
        res["mask_equal"] = bool(torch.equal(mask.bool(), keep)) and set(mask.unique().tolist()) <= {0, 1}
    # the stored r is exactly residual where dropped (residual + 0, one rounding of an exact value)
    res["dropped_is_residual"] = bool(torch.equal(r[~keep], inputs["residual"][~keep]))
    rmax = float(r_ref.abs().max())
    res["mean_err"] = float((mean - mean_ref).abs().max())
    res["mean_tol"] = ULP[dt] * rmax
    res["rstd_rel_err"] = float(((rstd - rstd_ref).abs() / rstd_ref).max())
    res["rstd_rel_tol"] = 2 * ULP[dt]
    own_mean, own_std, own_rstd, own_y = _own_stats(r, inputs["weight"], inputs["bias"], inputs["eps"])
    res["own_mean_rel"] = float(((mean.double() - own_mean).abs() / (own_mean.abs() + own_std)).max())
    res["own_rstd_rel"] = float(((rstd.double() - own_rstd).abs() / own_rstd).max())
    lim = ULP[dt] * own_y.abs() + 1e-4 * float(own_y.abs().max())
    res["own_y_bad"] = int(((y.double() - own_y).abs() > lim).sum() + (~torch.isfinite(y)).sum())
    res["mean_spread"] = float((own_mean.abs() / own_std).max())
    return res


def _run_cases() -> None:
    """Under TRITON_INTERPRET=1: every case into a NaN-filled out= buffer, its mask, statistics and
    both outputs against the reference; the second-config run; launch() and torch_baseline on
    the first case. One JSON line."""
    import torch

    assert os.environ.get("TRITON_INTERPRET") == "1", "run with TRITON_INTERPRET=1"
    mod = load_example(KERNEL)
    results = {}
    for name, (point, cfg) in CASES[KERNEL].items():
        try:
            inputs = mod.make_inputs(point, seed=len(name), device="cpu")
            _prepare(name, point, inputs)
            results[name] = _check_case(mod, name, point, cfg, inputs)
        except Exception as exc:          # reported per case by the test
            results[name] = {"error": f"{type(exc).__name__}: {exc}"}
    # the same inputs under another config: the same mask and r bit for bit, y within the tolerance
    name, cfg2 = SECOND_CFG
    point, cfg1 = CASES[KERNEL][name]
    try:
        inputs = mod.make_inputs(point, seed=len(name), device="cpu")
        _prepare(name, point, inputs)
        args = (inputs["x"], inputs["residual"], inputs["weight"], inputs["bias"], inputs["p"], inputs["seed"])
        y1, r1, m1, mean1, rstd1 = mod.dropout_add_layer_norm(*args, **cfg1)
        y2, r2, m2, mean2, rstd2 = mod.dropout_add_layer_norm(*args, **cfg2)
        results["second_config"] = {
            "one_tile": [mod.block_n(c, point["N"]) >= point["N"] for c in (cfg1, cfg2)],
            "mask_equal": bool(torch.equal(m1, m2)), "r_equal": bool(torch.equal(r1, r2)),
            "y": H.compare(y2, y1.float(), point["dtype"], TOL),
            "mean_err": float((mean1 - mean2).abs().max()), "rstd_rel": float(((rstd1 - rstd2) / rstd1).abs().max())}
    except Exception as exc:
        results["second_config"] = {"error": f"{type(exc).__name__}: {exc}"}
    # launch() (the hook validate calls) and the eager baseline on the first case
    name = "one_tile_ragged_bf16"
    point, cfg = CASES[KERNEL][name]
    try:
        inputs = mod.make_inputs(point, seed=len(name), device="cpu")
        out = mod.launch(inputs, cfg)
        ref = mod.reference(inputs)
        base = mod.torch_baseline(inputs)
        b_keep = base[1] != inputs["residual"]                 # the baseline's own mask, from its residual
        _, _, _, b_y = _own_stats(base[1], inputs["weight"], inputs["bias"], inputs["eps"])
        results["hooks"] = {"launch": H.compare(out, ref, point["dtype"], TOL), "launch_shape": list(out.shape),
                            "ref_shape": list(ref.shape), "ref_dtype": str(ref.dtype),
                            "baseline_shape": list(base.shape), "baseline_dtype": str(base.dtype),
                            "baseline_keep_frac": float(b_keep.float().mean()),
                            "baseline_y": H.compare(base[0], b_y.float(), point["dtype"], TOL)}
    except Exception as exc:
        results["hooks"] = {"error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(results))


# ----------------------------------------------------------------- the pytest side
def _results() -> dict:
    return H.interpreter_results(HERE, KERNEL)


def _five_sigma(frac: float, p: float, n: int) -> bool:
    return abs(frac - (1 - p)) <= 5 * math.sqrt(max(p * (1 - p), 1e-12) / n) + 1e-9


@pytest.mark.parametrize("name", list(CASES[KERNEL]))
def test_example_matches_reference(name):
    """y and r within the tolerance of the reference, every element written (no NaN left), into
    the caller's buffer, the inputs untouched; the mask bit-exact (or not returned without
    store_mask); the statistics against the reference and, tightly, against the kernel's own r."""
    res = _results()[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    point = CASES[KERNEL][name][0]
    assert res["y"]["shape"] == res["r"]["shape"] == [point["M"], point["N"]]
    assert res["y"]["n_bad"] == 0, H.mismatch(res["y"], f"{name} y")
    assert res["r"]["n_bad"] == 0, H.mismatch(res["r"], f"{name} r")
    assert res["same_buffer"] and res["inputs_untouched"] and res["dropped_is_residual"]
    if point["store_mask"]:
        assert not res["mask_none"] and res["mask_dtype"] == "torch.uint8" and res["mask_equal"], res
    else:
        assert res["mask_none"]
    assert _five_sigma(res["keep_frac"], point["p"], res["numel"]), (res["keep_frac"], point["p"])
    assert res["mean_err"] <= res["mean_tol"] and res["rstd_rel_err"] <= res["rstd_rel_tol"], res
    assert res["own_mean_rel"] <= 2e-6 and res["own_rstd_rel"] <= 1e-5, res
    assert res["own_y_bad"] == 0, res


def test_offset_rows_are_what_the_shift_is_for():
    """The offset case's rows have |mean| > 60 x std (116 here: unshifted fp32 sums of squares would
    put rstd off by ~4e-4), and its rstd still agrees with fp64 statistics of the kernel's r to 1e-5."""
    res = _results()["two_pass_offset_rows_fp16"]
    assert "error" not in res, res.get("error")
    assert res["mean_spread"] > 60 and res["own_rstd_rel"] <= 1e-5, res


def test_mask_does_not_depend_on_the_config():
    """The same inputs through the chunk loop (8 chunks of 128) and one tile (1024): the same mask and
    stored residual bit for bit, y and the statistics within fp32 reduction-order noise."""
    res = _results()["second_config"]
    assert "error" not in res, res.get("error")
    assert res["one_tile"] == [False, True]
    assert res["mask_equal"] and res["r_equal"], res
    assert res["y"]["n_bad"] == 0, H.mismatch(res["y"], "second config y")
    assert res["mean_err"] <= 1e-5 and res["rstd_rel"] <= 1e-5, res


def test_launch_reference_and_baseline_hooks():
    """launch() returns the [2, M, N] (y, r) buffer the reference's fp32 stack describes; the eager
    baseline (torch's own dropout RNG, so another mask) is a [2, M, N] bf16 buffer whose y is the
    layer norm of its own r, and which keeps ~1 - p of the elements."""
    res = _results()["hooks"]
    assert "error" not in res, res.get("error")
    point = CASES[KERNEL]["one_tile_ragged_bf16"][0]
    shape = [2, point["M"], point["N"]]
    assert res["launch_shape"] == res["ref_shape"] == res["baseline_shape"] == shape
    assert res["ref_dtype"] == "torch.float32" and res["baseline_dtype"] == "torch.bfloat16"
    assert res["launch"]["n_bad"] == 0, H.mismatch(res["launch"], "launch")
    assert res["baseline_y"]["n_bad"] == 0, H.mismatch(res["baseline_y"], "baseline y")
    assert _five_sigma(res["baseline_keep_frac"], point["p"], point["M"] * point["N"])


def test_cases_cover_every_code_path():
    """Each tunable takes >= 2 values; one tile (masked columns, exactly full, clamped BLOCK_N) and the
    chunk loop (ragged and exact last chunks, a loop of one iteration, many iterations); ragged and
    short row blocks; both dtypes with and without the stored mask; p 0 and p >= 0.5."""
    H.assert_tunables_covered(CASES)
    mod = load_example(KERNEL)
    cases = list(CASES[KERNEL].values())
    kinds = set()
    for p, c in cases:
        mod._check_cfg(c)
        bn = mod.block_n(c, p["N"])
        if p["N"] <= bn:
            kinds.add("one_tile_exact" if p["N"] == bn else "one_tile_masked")
            if bn < c["BLOCK_N"]:
                kinds.add("clamped")
        else:
            chunks = -(-p["N"] // bn)
            kinds.add("ragged_chunk" if p["N"] % bn else "exact_chunks")
            kinds.add("two_chunks" if chunks == 2 else "many_chunks" if chunks >= 4 else "three_chunks")
        if p["M"] % c["BLOCK_M"]:
            kinds.add("ragged_rows")
        if p["M"] < c["BLOCK_M"]:
            kinds.add("rows_below_block")
        if p["N"] % 4:
            kinds.add("partial_quad")
    assert kinds >= {"one_tile_exact", "one_tile_masked", "clamped", "ragged_chunk", "exact_chunks", "two_chunks",
                     "many_chunks", "ragged_rows", "partial_quad"}, kinds
    assert {(p["dtype"], p["store_mask"]) for p, _ in cases} == {(d, s) for d in mod.DTYPES for s in (True, False)}
    assert min(p["p"] for p, _ in cases) == 0.0 and max(p["p"] for p, _ in cases) >= 0.5


def test_philox_matches_random123_known_answers():
    """philox4x32 (the reference's torch Philox) against Random123's philox4x32_10 known-answer
    vectors, and the mask helper's counter layout: column 4k + i of row m is output i of counter
    (k, m), so one row's mask is the start of a longer row's."""
    import torch

    mod = load_example(KERNEL)

    def t(v):
        return torch.tensor([v], dtype=torch.int64)

    m = 0xFFFFFFFF
    kat = [((0, 0, 0, 0), 0, (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
           ((m, m, m, m), m | m << 32, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
           ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), 0xA4093822 | 0x299F31D0 << 32,
            (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1))]
    for ctr, key, want in kat:
        got = mod.philox4x32(key, *(t(c) for c in ctr))
        assert [int(g) for g in got] == list(want)
    short = mod.philox_keep_mask(77, 3, 10, 0.5)
    long = mod.philox_keep_mask(77, 3, 37, 0.5, row_chunk=2)
    assert short.shape == (3, 10) and short.dtype == torch.bool and torch.equal(long[:, :10], short)
    outs = mod.philox4x32(77, t(2), t(1))
    u = mod.philox_uniform(torch.cat(outs))
    assert torch.equal(long[1, 8:12], u > 0.5)
    assert 0.0 <= float(u.min()) and float(u.max()) < 1.0
    assert not torch.equal(mod.philox_keep_mask(78, 3, 10, 0.5), short)


def _sweep():
    return H.study_sweeps([KERNEL], "held-out-15")[KERNEL][2]      # scripts/rank_study.py SWEEPS


def _smem_bound(cfg, point) -> int:
    """Shared memory a config may need: the cp.async copies of LOOP_STAGES - 1 chunks of x and
    residual (pass 1) and of r, w, b (pass 2), plus one [BLOCK_M, BLOCK_N] fp32 layout conversion."""
    bn = min(cfg["BLOCK_N"], 1 << (point["N"] - 1).bit_length())
    tile = cfg["BLOCK_M"] * bn
    return (cfg["LOOP_STAGES"] - 1) * (2 * tile + tile + 2 * bn) * 2 + 4 * tile


def test_sweep_fits_the_points():
    """The study sweep: 54 configs (BLOCK_M 2 x BLOCK_N 3 x LOOP_STAGES 3 x num_warps 3; num_stages
    held at 1: no dot and both loops carry their own stage count, so the launch's changes
    nothing) with BASELINE among them; at every POINT each config is valid, gives the 132 SMs >= 15
    CTAs each, and its cp.async buffers fit an H200's 227 KiB per block. (Every config was compiled
    for sm_90 with triton 3.6.0 at every point: all 162 compile, 0.3-2.5 s each (median 0.6 s,
    2 minutes in all); 28-255 registers; 16 B - 80 KiB of shared memory (LOOP_STAGES 1: <= 16 KiB,
    layout conversions only; 2 / 3: one / two chunks of cp.async copies ahead). 6 of 162 spill,
    all BLOCK_M 2 on 4 warps in the chunk loop: 2 x 2048 at 4096 columns keeps 2-4 words (one
    STL.64 / LDL.64 pair at LOOP_STAGES 1), 2 x 4096 at 16384 columns 12-18 words (64 elements a
    thread: x, residual, r and the two fp32 accumulators); none at 5120 columns. BLOCK_M 4 is left
    out: in the chunk loop 4 x 4096 spills 20-292 words on 4-16 warps, 4 x 2048 20-42 on 4 warps.
    num_stages 1 and 3 give the same SASS.)"""
    axes = _sweep()
    mod = load_example(KERNEL)
    assert set(axes) == set(mod.TUNABLES) and axes["num_stages"] == [1]
    assert sum(len(v) >= 2 for v in axes.values()) == len(axes) - 1
    cfgs = [dict(zip(axes, v)) for v in itertools.product(*axes.values())]
    assert 40 <= len(cfgs) <= 72 and mod.BASELINE in cfgs
    for p in mod.POINTS:
        one_tile = 0
        for c in cfgs:
            mod._check_cfg(c)
            assert mod.grid(c, p) >= 15 * H200_SMS, (p, c)
            assert _smem_bound(c, p) <= H200_SMEM_PER_BLOCK, (p, c)
            one_tile += mod.loop_iterations(c, p) == 1
        assert one_tile == (len(cfgs) // 3 if p["N"] == 4096 else 0), (p, one_tile)


def test_launcher_hooks_agree_with_shapes():
    """At every default point: example_args has the shapes and types of a launch (meta tensors, the
    clamped BLOCK_N, N a constexpr, the mask only with store_mask),
    bytes_moved counts x, residual, y, r (and the mask) once, grid / loop_iterations the tiling;
    inputs < 4 GB."""
    import torch

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "example_args", "torch_baseline", "dropout_add_layer_norm", "philox_keep_mask", "reference_all"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert len(mod.POINTS) == 3 and {p["dtype"] for p in mod.POINTS} == set(mod.DTYPES)
    assert {p["store_mask"] for p in mod.POINTS} == {True, False}
    assert len({p["N"] for p in mod.POINTS}) == 3
    for p in mod.POINTS:
        M, N = p["M"], p["N"]
        dt = mod._torch_dtype(p["dtype"])
        mask_b = M * N if p["store_mask"] else 0
        assert mod.bytes_moved(p) == 8 * M * N + 4 * N + mask_b + 8 * M
        assert 0.5e9 < mod.bytes_moved(p) < 0.8e9                    # ~0.12-0.17 ms at ~4.8 TB/s
        assert mod.flops(p) == 10 * M * N
        assert M * N * (2 + 2) + 4 * N < 4 * 10**9 and M * N < 2**31
        for cfg in [mod.BASELINE] + COMPILE_CFGS[KERNEL]:
            args = mod.example_args(cfg, p)
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for v in args.values())
            assert H.meta_nbytes(args) < 4 * 2**30
            for k in ("X", "RES", "Y", "RO"):
                assert args[k].shape == (M, N) and args[k].dtype == dt
            assert args["W"].shape == args["B"].shape == (N,) and args["W"].dtype == dt
            assert args["MEAN"].shape == args["RSTD"].shape == (M,) and args["MEAN"].dtype == torch.float32
            if p["store_mask"]:
                assert args["MASK"].shape == (M, N) and args["MASK"].dtype == torch.uint8 and args["STORE_MASK"]
            else:
                assert args["MASK"] is None and not args["STORE_MASK"]
            bn = mod.block_n(cfg, N)
            assert args["BLOCK_N"] == bn == min(cfg["BLOCK_N"], 1 << (N - 1).bit_length())
            assert args["BLOCK_M"] == cfg["BLOCK_M"]
            assert args["LOOP_STAGES"] == cfg["LOOP_STAGES"] and (args["M"], args["N"]) == (M, N)
            assert set(args) == set(mod._kernel.arg_names)
            assert args["stride_xm"] == args["stride_rm"] == N and args["stride_ym"] == args["stride_om"] == N
            assert math.isclose(args["keep_scale"], 1 / (1 - p["p"])) and args["p"] == p["p"]
            assert mod.grid(cfg, p) == -(-M // cfg["BLOCK_M"])
            chunks = -(-N // bn)
            assert mod.loop_iterations(cfg, p) == (1 if chunks == 1 else 2 * chunks)


def test_hooks_on_small_points_and_inputs():
    """make_inputs (CPU-drawn, reproducible per seed, never zero, rows with their own offsets), the
    reference on hand-computed rows."""
    import torch

    mod = load_example(KERNEL)
    p = _pt(6, 40, "bf16", 0.3, True)
    inputs = mod.make_inputs(p, seed=3, device="cpu")
    x, res, w, b = inputs["x"], inputs["residual"], inputs["weight"], inputs["bias"]
    assert x.shape == res.shape == (6, 40) and w.shape == b.shape == (40,)
    assert x.dtype == res.dtype == w.dtype == b.dtype == torch.bfloat16
    assert int((x == 0).sum()) < 3 and int((res == 0).sum()) < 3 and int((b == 0).sum()) < 3
    assert float(res.float().mean(dim=1).std()) > 0.2 and 0 <= inputs["seed"] < 2**31
    assert inputs["p"] == 0.3 and inputs["store_mask"] and inputs["eps"] == mod.EPS
    again = mod.make_inputs(p, seed=3, device="cpu")
    assert torch.equal(again["x"], x) and again["seed"] == inputs["seed"]
    other = mod.make_inputs(p, seed=4, device="cpu")
    assert not torch.equal(other["x"], x) and other["seed"] != inputs["seed"]
    assert mod.make_inputs(_pt(2, 8, "fp16", 0.1, False), device="cpu")["store_mask"] is False
    # the reference on its own terms, row 2 by hand (fp64)
    y, r, keep, mean, rstd = mod.reference_all(inputs)
    assert torch.equal(keep, mod.philox_keep_mask(inputs["seed"], 6, 40, 0.3))
    k = keep[2].double()
    row = (res[2].double() + k * (x[2].float() * torch.tensor(1 / 0.7, dtype=torch.float32)).double())
    row = row.to(torch.bfloat16).double()
    assert torch.equal(r[2].double(), row)
    mu, var = float(row.mean()), float(((row - row.mean()) ** 2).mean())
    assert float(mean[2]) == pytest.approx(mu, rel=1e-6, abs=1e-6)
    assert float(rstd[2]) == pytest.approx((var + mod.EPS) ** -0.5, rel=1e-6)
    want = (row - mu) * (var + mod.EPS) ** -0.5 * w.double() + b.double()
    assert torch.allclose(y[2].double(), want, rtol=1e-6, atol=1e-6)
    stacked = mod.reference(inputs)
    assert stacked.shape == (2, 6, 40) and torch.equal(stacked[0], y) and torch.equal(stacked[1], r)


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    inp = mod.make_inputs(_pt(4, 64, "fp16", 0.1, True), device="cpu")
    x, res, w, b = inp["x"], inp["residual"], inp["weight"], inp["bias"]
    with pytest.raises(ValueError, match="BLOCK_N=48"):
        mod.dropout_add_layer_norm(x, res, w, b, 0.1, 1, BLOCK_N=48)
    with pytest.raises(ValueError, match="BLOCK_M=3"):
        mod.dropout_add_layer_norm(x, res, w, b, 0.1, 1, BLOCK_M=3)
    with pytest.raises(ValueError, match="LOOP_STAGES=0"):
        mod.dropout_add_layer_norm(x, res, w, b, 0.1, 1, LOOP_STAGES=0)
    with pytest.raises(ValueError, match="p=1.0"):
        mod.dropout_add_layer_norm(x, res, w, b, 1.0, 1)
    with pytest.raises(ValueError, match="seed=-1"):
        mod.dropout_add_layer_norm(x, res, w, b, 0.1, -1)
    with pytest.raises(ValueError, match="dtypes differ"):
        mod.dropout_add_layer_norm(x, res.bfloat16(), w, b, 0.1, 1)
    with pytest.raises(ValueError, match="bf16 / fp16"):
        mod.dropout_add_layer_norm(x.float(), res.float(), w.float(), b.float(), 0.1, 1)
    with pytest.raises(ValueError, match="expected x"):
        mod.dropout_add_layer_norm(x, res[:, :32], w, b, 0.1, 1)
    with pytest.raises(ValueError, match="out must be"):
        mod.dropout_add_layer_norm(x, res, w, b, 0.1, 1, out=torch.empty(2, 4, 32, dtype=torch.float16))
    with pytest.raises(ValueError, match="dtype 'fp32'"):
        mod.make_inputs(_pt(2, 8, "fp32", 0.1, True), device="cpu")
    with pytest.raises(ValueError, match="p=1.5"):
        mod.bytes_moved(_pt(2, 8, "bf16", 1.5, True))


def test_examples_import_without_torch():
    """The launcher contract: a module imports with no torch (it is imported inside the functions)."""
    proc = H.imports_without_torch(CASES)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr[-2000:]


@pytest.mark.slow
@pytest.mark.parametrize("kernel", list(COMPILE_CFGS))
def test_example_compiles_sm90(shared_cache, kernel):
    """On sm_90: BASELINE (one tile of 4096) and three more (the chunk loop with 2 / 3 stages, 16
    warps) compile without spills inside 227 KiB; LOOP_STAGES >= 2 copies the chunks ahead with
    cp.async, LOOP_STAGES 1 does not; the Philox rounds are there (mul.hi.u32)."""
    from occmodel import compile_kernel

    mod = load_example(kernel)
    assert COMPILE_CFGS[kernel][0] == mod.BASELINE
    for cfg, res in H.compile_results(kernel, COMPILE_CFGS[kernel], "sm_90"):
        assert res.status == "ok", f"{kernel} {cfg} on sm_90: {res.status}: {res.message}"
        assert res.n_regs > 0 and 0 <= res.shared <= H200_SMEM_PER_BLOCK and res.n_spills == 0
    p = mod.POINTS[2]                                  # 16384 columns: the chunk loop at any BLOCK_N here
    for ls in (1, 2):
        cfg = _cfg(1, 2048, ls, 8, 1)
        res = compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch="sm_90", num_warps=8, num_stages=1,
                             keep_ir=True)
        assert res.status == "ok", res.message
        assert ("cp.async" in res.ptx) == (ls > 1) and "mul.hi.u32" in res.ptx


@pytest.mark.slow
def test_example_compiles_sm120(shared_cache):
    """On sm_120 (99 KiB a block) a few configs compile and fit."""
    for cfg, res in H.compile_results(KERNEL, SM120_CFGS, "sm_120"):
        assert res.status == "ok", f"{cfg} on sm_120: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.shared <= SM120_SMEM_PER_BLOCK and res.n_spills == 0


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["sm_120", "sm_90"])
def test_other_points_compile(shared_cache, arch):
    """The second point (fp16, 5120 columns, no mask) and the third (16384 columns, mask) at BASELINE."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    cfg = mod.BASELINE
    for p in mod.POINTS[1:]:
        res = compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch=arch, num_warps=cfg["num_warps"],
                             num_stages=cfg["num_stages"])
        assert res.status == "ok" and res.n_spills == 0, f"{p} on {arch}: {res.status}: {res.message}"


if __name__ == "__main__":
    _run_cases()
