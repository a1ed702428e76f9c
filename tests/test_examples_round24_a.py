"""examples/cast_transpose_fp8.py (FP8 training's fused cast + transpose under per-tensor delayed
scaling: y = e4m3(clamp(x * scale, +-448)) [M, N] and yt = y transposed [N, M], the amax of x
max-reduced into a running fp32 buffer with one atomic per CTA, scale_inv = 1 / scale; a strip of
TILES [BLOCK_M, BLOCK_N] tiles a CTA) against torch's cast on the CPU through Triton's interpreter,
its launcher hooks against the shapes, its study sweep against the points, and a compile for sm_90
and sm_120 from its own ``example_args``.

As in test_examples_round23_a.py the interpreter cases run in a subprocess (this file run as a
script: ``python tests/test_examples_round24_a.py cast_transpose_fp8``) that prints one JSON line.
Both Tritons' interpreters (3.6 and 3.9 alike) convert fp32 -> float8e4nv wrongly: a rounding carry
out of the mantissa is lost (127.9 -> 64, 7.9 -> 4), ties round away from zero (1.0625 -> 1.125,
17 -> 18) and subnormals are off (0.00146 -> 0, torch's 0.00195); without a fix 9 of these 10 cases
differ from torch. The subprocess replaces that one conversion with torch's round to nearest even
(the GPU's cvt.rn.satfinite), as test_examples_round11_d.py does, so the kernel's fp32 multiply,
clamp and rounding are compared with torch's byte for byte. Under triton 3.6 with
numpy >= 2.3 it also lets runtime loop bounds be read as ints (example_harness.patch_interpreter_index;
this kernel's loop bound is a constexpr, so it is a guard only).

Shapes are small, odd and ragged: the mask-free path (M a multiple of BLOCK_M, N of BLOCK_N x
TILES), the M tail alone, the N tail alone (a last strip with a partial tile and tiles wholly past
N), both tails, M = 1 and N = 5 (one live row and a 5-column tile), a tile larger than the whole
tensor; x bf16 / fp16 / fp32, x a column slice of a wider buffer padded with 1e4 (read in place:
a read past the slice would show in y and in the amax) and x a transposed view (made contiguous);
the amax reached by a negative value, a running amax larger than max|x| (kept) and smaller (raised);
values that saturate at +-448 and e4m3 subnormals; BLOCK_M and BLOCK_N 16-128, TILES 1-4 (3 too),
1-8 warps, num_stages 1 / 2.

Per case: (1) launch's flat buffer (y then yt) against reference through occmodel's own correctness
gate (occmodel.gpu.compare) and exactly (no element off); (2) y's bytes equal torch's
(x.float() * scale).clamp(-448, 448).to(float8_e4m3fn) and yt's bytes equal y's transposed; (3)
amax equals max(prior, max|x|) exactly (max is order-free, the atomics exact); (4) scale_inv
equals torch's 1 / scale exactly (div_rn); (5) torch_baseline's buffer and amax equal the kernel's.
"""

from __future__ import annotations

import itertools
import json
import os
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
KERNEL = "cast_transpose_fp8"
ROLE = "held-out-24"
H200_SMS = 132
SM120_SMEM_PER_BLOCK = 99 * 1024

# the study's sweep (scripts/rank_study.py SWEEPS["cast_transpose_fp8"] once the lead adds it)
SWEEP_AXES = {"BLOCK_M": [32, 64, 128], "BLOCK_N": [32, 64, 128], "TILES": [1, 2, 4], "num_warps": [4, 8],
              "num_stages": [1]}
EXACT = {"bf16": 0.0, "fp16": 0.0, "fp32": 0.0}      # harness compare tolerance: no element may differ


def _cfg(bm, bn, tiles, w=4, st=1):
    return {"BLOCK_M": bm, "BLOCK_N": bn, "TILES": tiles, "num_warps": w, "num_stages": st}


def _pt(M, N, dtype="bf16"):
    return {"M": M, "N": N, "dtype": dtype}


# case -> (point, cfg); comments: EVEN_M / EVEN_N, CTAs (row blocks x column strips)
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        # 64 x 128, 32 x (32 x 2): EVEN_M and EVEN_N, the mask-free path; 2 x 2 CTAs
        "even_bf16": (_pt(64, 128, "bf16"), _cfg(32, 32, 2, 4)),
        # 45 x 70, 16 x (32 x 1): both tails; 3 x 3 CTAs, the last row block 13 rows, the last strip 6 columns
        "ragged_both_bf16": (_pt(45, 70, "bf16"), _cfg(16, 32, 1, 2)),
        # 96 x 100, 32 x (16 x 4): the N tail alone; 3 x 2 CTAs, the second strip's tiles 64-79 and 80-95
        # whole, 96-111 partial (4 columns), 112-127 wholly past N
        "n_tail_tiles_past_end_fp16": (_pt(96, 100, "fp16"), _cfg(32, 16, 4, 4)),
        # 50 x 256, 64 x (128 x 2): the M tail alone (one row block of 50 live rows), EVEN_N; 8 warps
        "m_tail_fp32": (_pt(50, 256, "fp32"), _cfg(64, 128, 2, 8)),
        # 200 x 136, 128 x (128 x 1): both tails with the largest tile, 4 warps, num_stages 2; 2 x 2 CTAs
        "big_tile_fp16": (_pt(200, 136, "fp16"), _cfg(128, 128, 1, 4, 2)),
        # 1 x 5, 16 x (16 x 1), one warp: one live row, five live columns, one CTA
        "one_row_bf16": (_pt(1, 5, "bf16"), _cfg(16, 16, 1, 1)),
        # x the columns 8:56 of a 72-wide buffer padded with 1e4 (row stride 72, read in place), 40 x 48,
        # 16 x (16 x 3): TILES 3 (a strip of 48: EVEN_N), M tail; 3 x 1 CTAs, 8 warps
        "sliced_bf16": (_pt(40, 48, "bf16"), _cfg(16, 16, 3, 8)),
        # x a transposed view (column stride M: the wrapper makes it contiguous), 33 x 64, 32 x (64 x 1);
        # the amax at a negative value planted at (20, 17)
        "transposed_neg_amax_fp16": (_pt(33, 64, "fp16"), _cfg(32, 64, 1, 2, 2)),
        # a running amax of 1e4 (larger than max|x|: kept), 64 x 64, 64 x (32 x 2), EVEN both, 8 warps
        "prior_amax_kept_fp32": (_pt(64, 64, "fp32"), _cfg(64, 32, 2, 8)),
        # a running amax of 0.5 (smaller: raised), 70 x 96, 32 x (32 x 3): M tail, EVEN_N
        "prior_amax_raised_bf16": (_pt(70, 96, "bf16"), _cfg(32, 32, 3, 4)),
    },
}
SLICED, TRANSPOSED, NEG = "sliced_bf16", "transposed_neg_amax_fp16", "transposed_neg_amax_fp16"
PRIOR = {"prior_amax_kept_fp32": 1e4, "prior_amax_raised_bf16": 0.5}
FRESH = "ragged_both_bf16"                   # also run through the wrapper without given buffers

# configs compiled at the module's first POINT (sm_90: BASELINE first); see test_sweep_fits_the_points
COMPILE_CFGS = [_cfg(64, 64, 2, 4), _cfg(32, 32, 1, 8), _cfg(128, 128, 4, 8), _cfg(32, 128, 4, 4),
                _cfg(128, 32, 2, 4)]
SM120_CFGS = [_cfg(64, 64, 2, 4), _cfg(128, 128, 4, 8), _cfg(128, 64, 4, 4)]


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """SLICED: x the columns 8:8+N of a buffer padded with 1e4; TRANSPOSED: x a transposed view of a
    contiguous [N, M] tensor, with -2 max|x| planted at (20, 17) (NEG); PRIOR: the running amax."""
    import torch

    x = inputs["x"]
    M, N = x.shape
    if name == SLICED:
        wide = torch.full((M, N + 24), 1e4, dtype=x.dtype)
        wide[:, 8:8 + N] = x
        inputs["x"] = wide[:, 8:8 + N]
    if name == NEG:
        x = x.clone()
        x[20, 17] = -2.0 * float(x.float().abs().max())
        inputs["x"] = x
    if name == TRANSPOSED:
        inputs["x"] = inputs["x"].t().contiguous().t()
    if name in PRIOR:
        inputs["amax"].fill_(PRIOR[name])


# ----------------------------------------------------------------- the pytest side
def _results() -> dict:
    return H.interpreter_results(HERE, KERNEL)


@pytest.mark.parametrize("name", list(CASES[KERNEL]))
def test_example_matches_reference(name):
    res = _results()[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    p = CASES[KERNEL][name][0]
    M, N = p["M"], p["N"]
    assert res["shape"] == [2 * M * N] and res["out_dtype"] == "torch.float8_e4m3fn", res
    assert res["gate_ok"] is True and res["gate_rel"] == 0.0, res
    assert res["n_bad"] == 0, H.mismatch(res, f"{name} launch")
    assert res["y_differ"] == 0 and res["yt_differ"] == 0, res
    assert res["amax"] == res["amax_ref"], res
    assert res["scale_inv_exact"] is True, res
    assert res["baseline_differ"] == 0 and res["baseline_amax"] == res["amax_ref"], res
    assert res["n_nonzero"] > 0, res
    if name == SLICED:
        assert res["x_strides"] == [N + 24, 1], res
    if name == TRANSPOSED:
        assert res["x_strides"] == [1, M], res
    if name == NEG:
        assert res["amax_from_negative"] is True, res
    if name in PRIOR:
        assert res["amax"] == max(PRIOR[name], res["max_abs_x"]), res
        assert (res["amax"] == PRIOR[name]) == (PRIOR[name] > res["max_abs_x"]), res
    if name == FRESH:
        assert res["fresh_ok"] is True, res


def test_interpreter_cases_exercise_saturation_and_subnormals():
    """make_inputs' stale-amax scale saturates values at +-448 and small values round to e4m3
    subnormals, so both ends of the conversion were compared byte for byte."""
    res = _results()
    assert sum(r.get("n_saturated", 0) for r in res.values()) > 0
    assert sum(r.get("n_subnormal", 0) for r in res.values()) > 0
    assert all(r.get("n_saturated", 0) > 0 for r in res.values())      # max|x| x scale = 448 / 0.8 at least


def test_cases_cover_every_code_path():
    """Every tunable at >= 2 values (the swept ranges bracketed); every dtype; the mask-free path, the
    M tail alone, the N tail alone (a partial tile and tiles wholly past N), both; more than one CTA
    both ways; a sliced and a transposed x; running amax kept and raised."""
    H.assert_tunables_covered(CASES)
    mod = load_example(KERNEL)
    cases = list(CASES[KERNEL].values())
    assert {p["dtype"] for p, _ in cases} == set(mod.DTYPES)
    evens = set()
    for p, c in cases:
        a = mod.example_args(c, p)
        evens.add((a["EVEN_M"], a["EVEN_N"]))
    assert evens == {(0, 0), (0, 1), (1, 0), (1, 1)}
    # a last strip with a partial tile and with a tile wholly past N
    rem = [(p["N"] % (c["BLOCK_N"] * c["TILES"]), c) for p, c in cases]
    assert any(r % c["BLOCK_N"] for r, c in rem)
    assert any(r and c["BLOCK_N"] * c["TILES"] - r >= c["BLOCK_N"] for r, c in rem)
    strips = [(-(-p["M"] // c["BLOCK_M"]), -(-p["N"] // (c["BLOCK_N"] * c["TILES"]))) for p, c in cases]
    assert any(m > 1 and n > 1 for m, n in strips)
    assert any(p["M"] < c["BLOCK_M"] and p["N"] < c["BLOCK_N"] for p, c in cases)
    for k in ("BLOCK_M", "BLOCK_N", "TILES", "num_warps"):
        tested = {c[k] for _, c in cases}
        assert min(tested) <= min(SWEEP_AXES[k]) and max(tested) >= max(SWEEP_AXES[k]), (k, tested)
    assert {SLICED, TRANSPOSED, NEG, FRESH} | set(PRIOR) <= set(CASES[KERNEL])
    assert min(PRIOR.values()) < 1.0 < 1e3 < max(PRIOR.values())


def test_launcher_hooks_agree_with_shapes():
    """At every point and sweep config: example_args on meta with the launch's shapes, dtypes and
    strides, EVEN_M / EVEN_N, the grid and the tiles a CTA; bytes_moved / flops; inputs < 4 GB;
    100 MB - 2 GB of traffic (roughly 20 us - 1 ms)."""
    import torch

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "example_args", "torch_baseline", "cast_transpose_fp8", "reference_amax", "reference_fp8"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert not hasattr(mod, "secondary_kernels") and not hasattr(mod, "cta_iterations")
    assert mod.ROLE == ROLE and mod.SWEEP_AXES == SWEEP_AXES
    assert len(mod.POINTS) == 3 and mod.BASELINE["num_stages"] == 1
    dts = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}
    size = {"fp16": 2, "bf16": 2, "fp32": 4}
    fp8 = torch.float8_e4m3fn
    cfgs = [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]
    for p in mod.POINTS:
        M, N = p["M"], p["N"]
        for cfg in cfgs:
            a = mod.example_args(cfg, p)
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for v in a.values())
            assert a["X"].shape == (M, N) and a["X"].dtype == dts[p["dtype"]] and a["X"].is_contiguous()
            assert a["Y"].shape == (M, N) and a["Y"].dtype == fp8 and a["Y"].is_contiguous()
            assert a["YT"].shape == (N, M) and a["YT"].dtype == fp8 and a["YT"].is_contiguous()
            for k in ("SCALE", "AMAX", "SCALE_INV"):
                assert a[k].shape == (1,) and a[k].dtype == torch.float32
            assert (a["M"], a["N"], a["stride_xm"]) == (M, N, N)
            strip = cfg["BLOCK_N"] * cfg["TILES"]
            assert (a["EVEN_M"], a["EVEN_N"]) == (int(M % cfg["BLOCK_M"] == 0), int(N % strip == 0)) == (1, 1)
            assert (a["BLOCK_M"], a["BLOCK_N"], a["TILES"]) == (cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["TILES"])
            assert mod.grid(cfg, p) == ((M // cfg["BLOCK_M"]) * (N // strip),)
            assert mod.loop_iterations(cfg, p) == cfg["TILES"]
        e = size[p["dtype"]]
        assert mod.bytes_moved(p) == M * N * (e + 2) + 12
        assert mod.flops(p) == 2 * M * N
        assert M * N * (e + 2) < 4 * 2**30
        assert 100e6 <= mod.bytes_moved(p) <= 2e9
    # the points differ: row length, token count, aspect and dtype
    assert [p["N"] for p in mod.POINTS] == [4096, 8192, 14336]
    assert {p["dtype"] for p in mod.POINTS} == {"bf16", "fp16"}
    assert any(p["M"] > p["N"] for p in mod.POINTS) and any(p["M"] < p["N"] for p in mod.POINTS)


def test_hooks_on_small_points_and_inputs():
    """make_inputs: shapes, dtypes, the seed, outlier columns, a scale from a stale amax (values
    saturate); reference = torch's cast then its transpose, a hand-checked element; torch_baseline and
    the wrapper's empty path."""
    import torch

    mod = load_example(KERNEL)
    p = _pt(24, 1030, "fp16")
    inp = mod.make_inputs(p, seed=1, device="cpu")
    x = inp["x"]
    assert x.shape == (24, 1030) and x.dtype == torch.float16 and x.is_contiguous()
    assert set(inp) == {"x", "scale", "amax", "scale_inv"}
    for k in ("scale", "amax", "scale_inv"):
        assert inp[k].shape == (1,) and inp[k].dtype == torch.float32
    assert float(inp["amax"]) == 0.0
    amax = float(x.float().abs().max())
    assert abs(float(inp["scale"]) * 0.8 * amax - 448.0) < 1e-3
    col = x.float().abs().amax(0)
    assert float(col[[7, 519]].min()) > 2 * float(col[:7].max())         # the outlier columns
    assert torch.equal(mod.make_inputs(p, seed=1, device="cpu")["x"], x)
    assert not torch.equal(mod.make_inputs(p, seed=2, device="cpu")["x"], x)
    ref = mod.reference(inp)
    assert ref.shape == (2 * 24 * 1030,) and ref.dtype == torch.float32
    q = ref[:24 * 1030].view(24, 1030)
    assert torch.equal(ref[24 * 1030:].view(1030, 24), q.t())
    assert float(q.abs().max()) == 448.0                                 # saturated
    v = float(x[5, 519]) * float(inp["scale"])                            # a hand-checked element
    assert float(q[5, 519]) == float(torch.tensor(max(-448.0, min(448.0, v))).to(torch.float8_e4m3fn).float())
    assert torch.equal(mod.reference_amax(inp), torch.tensor([amax]))
    prior = dict(inp, amax=inp["amax"].clone())
    base = mod.torch_baseline(prior)
    assert base.dtype == torch.float8_e4m3fn and torch.equal(base.float(), ref)
    assert float(prior["amax"]) == amax and float(prior["scale_inv"]) == float(1.0 / inp["scale"])
    # the wrapper's empty path (no kernel launch): empty outputs, amax untouched, scale_inv written
    y, yt, am, si = mod.cast_transpose_fp8(torch.empty(0, 7, dtype=torch.bfloat16), torch.tensor([2.0]))
    assert y.shape == (0, 7) and yt.shape == (7, 0) and y.dtype == torch.float8_e4m3fn
    assert float(am) == 0.0 and float(si) == 0.5
    assert mod.bytes_moved(_pt(10, 20, "fp32")) == 10 * 20 * 6 + 12


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    x = torch.ones(32, 32, dtype=torch.bfloat16)
    s = torch.tensor([1.0])
    with pytest.raises(ValueError, match="BLOCK_M=48"):
        mod.cast_transpose_fp8(x, s, BLOCK_M=48)
    with pytest.raises(ValueError, match="BLOCK_N=8"):
        mod.cast_transpose_fp8(x, s, BLOCK_N=8)
    with pytest.raises(ValueError, match="num_warps=6"):
        mod.cast_transpose_fp8(x, s, num_warps=6)
    with pytest.raises(ValueError, match="TILES=0"):
        mod.cast_transpose_fp8(x, s, TILES=0)
    with pytest.raises(ValueError, match="expected x"):
        mod.cast_transpose_fp8(torch.ones(2, 3, 4), s)
    with pytest.raises(ValueError, match="bf16 / fp16 / fp32"):
        mod.cast_transpose_fp8(x.double(), s)
    with pytest.raises(ValueError, match="scale must be a one-element fp32"):
        mod.cast_transpose_fp8(x, torch.tensor([1.0, 2.0]))
    with pytest.raises(ValueError, match="scale must be a one-element fp32"):
        mod.cast_transpose_fp8(x, 1.0)
    with pytest.raises(ValueError, match="amax must be a one-element fp32"):
        mod.cast_transpose_fp8(x, s, amax=torch.zeros(1, dtype=torch.float16))
    with pytest.raises(ValueError, match=r"out must be a contiguous float8_e4m3fn tensor \[32, 32\]"):
        mod.cast_transpose_fp8(x, s, out=torch.empty(32, 32, dtype=torch.bfloat16))
    with pytest.raises(ValueError, match=r"out_t must be .*\[32, 32\].*not contiguous"):
        mod.cast_transpose_fp8(x, s, out_t=torch.empty(32, 64, dtype=torch.float8_e4m3fn)[:, ::2])
    with pytest.raises(ValueError, match="dtype 'fp8'"):
        mod.make_inputs(_pt(4, 4, "fp8"), device="cpu")
    with pytest.raises(ValueError, match="M=0"):
        mod.grid(mod.BASELINE, _pt(0, 16))
    with pytest.raises(ValueError, match="BLOCK_N=24"):
        mod.example_args(_cfg(32, 24, 1), _pt(64, 64))


def test_sweep_fits_the_points():
    """The study sweep: 54 configs (BLOCK_M and BLOCK_N 32-128, TILES 1-4, 4 / 8 warps, num_stages 1:
    4-128 elements a thread a step) with BASELINE among them; at every point each config is valid and
    launches >= 4 waves of CTAs on an H200 (>= 1024 CTAs). (Every config was compiled for sm_90 at
    every point and for sm_120 at the first, 216 compiles under each of triton 3.6.0 and 3.9: all
    compile; none spills under 3.9 (27-228 registers, 1-16 KiB of shared memory); under 3.6, which
    converts the bf16 x tile rather than the fp8 one (2-32 KiB) and recomputes the cast on both
    sides, 30-255 registers -- the 128 x 128 tile on 4 warps with TILES 2 or 4 takes 253-255 -- and the one spill is
    that tile with TILES 4 on sm_120 (6 spills); sm_90 none. num_stages: no dot, the tile loop's
    loads are not pipelined, hence the one value. 2 warps were left out: 128 x 128 tiles spill there.)"""
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
    """On sm_90: BASELINE and four more at the first point (bf16 [16384, 4096]) compile without
    spills, in at most 32 KiB of shared memory (the transpose's); and BASELINE and the largest
    tile at the other two (the wider bf16 point, the fp16 one)."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    assert COMPILE_CFGS[0] == mod.BASELINE
    for cfg, res in H.compile_results(KERNEL, COMPILE_CFGS, "sm_90"):
        assert res.status == "ok", f"{cfg} on sm_90: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.n_spills == 0, (cfg, res.n_regs, res.n_spills)
        assert 0 < res.shared <= 2 * cfg["BLOCK_M"] * cfg["BLOCK_N"], (cfg, res.shared)
    for p in mod.POINTS[1:]:
        for cfg in (COMPILE_CFGS[0], COMPILE_CFGS[2]):
            res = compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch="sm_90",
                                 num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
            assert res.status == "ok" and res.n_spills == 0, res.message


@pytest.mark.slow
def test_example_compiles_sm120(shared_cache):
    for cfg, res in H.compile_results(KERNEL, SM120_CFGS, "sm_120"):
        assert res.status == "ok", f"{cfg} on sm_120: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.shared <= SM120_SMEM_PER_BLOCK and res.n_spills == 0


# ----------------------------------------------------------------- the subprocess side
def _patch_interpreter_fp8_cast() -> None:
    """fp32 -> float8e4nv in Triton's interpreter: torch's round-to-nearest-even conversion (the
    interpreter's own carries wrongly and rounds ties away from zero, in 3.6 and 3.9 alike)."""
    import numpy as np
    import torch
    import triton.language as tl
    import triton.runtime.interpreter as interp

    orig = interp._convert_float

    def convert(data, src, dst, rounding):
        if src == tl.float32 and dst == tl.float8e4nv:
            t = torch.from_numpy(np.ascontiguousarray(data).view(np.float32))
            return t.to(torch.float8_e4m3fn).view(torch.uint8).numpy().reshape(data.shape)
        return orig(data, src, dst, rounding)

    interp._convert_float = convert


def _run() -> None:
    """Every case through launch (against reference: occmodel's gate and exactly; y's and yt's bytes;
    the amax; scale_inv) and through torch_baseline; one case through the wrapper with fresh buffers;
    one JSON line."""
    import torch
    from occmodel.gpu import compare as gate

    assert os.environ.get("TRITON_INTERPRET") == "1", "run with TRITON_INTERPRET=1"
    _patch_interpreter_fp8_cast()
    H.patch_interpreter_index()
    mod = load_example(KERNEL)
    u8 = torch.uint8
    results = {}
    for name, (point, cfg) in CASES[KERNEL].items():
        try:
            inputs = mod.make_inputs(point, seed=len(name), device="cpu")
            _prepare(name, point, inputs)
            prior = inputs["amax"].clone()
            amax_ref = mod.reference_amax(inputs)
            ref = mod.reference(inputs)
            out = mod.launch(inputs, cfg)
            M, N = inputs["x"].shape
            res = H.compare(out, ref, point["dtype"], EXACT)
            g = gate(out, ref, cfg, point)
            res["gate_ok"], res["gate_rel"] = bool(g.ok), float(g.rel_error)
            res["out_dtype"] = str(out.dtype)
            q = mod.reference_fp8(inputs).view(u8)
            y, yt = out[:M * N].view(M, N).view(u8), out[M * N:].view(N, M).view(u8)
            res["y_differ"] = int((y != q).sum())
            res["yt_differ"] = int((yt != y.t()).sum())
            res["amax"], res["amax_ref"] = float(inputs["amax"]), float(amax_ref)
            xa = inputs["x"].float()
            res["max_abs_x"] = float(xa.abs().max())
            res["amax_from_negative"] = bool(float(xa.min()) == -res["max_abs_x"])
            res["scale_inv_exact"] = bool(torch.equal(inputs["scale_inv"], 1.0 / inputs["scale"]))
            res["x_strides"] = list(inputs["x"].stride())
            codes = q.int() & 0x7F
            res["n_saturated"] = int((codes == 0x7E).sum())                    # +-448
            res["n_subnormal"] = int(((codes > 0) & (codes < 0x08)).sum())     # exponent field 0
            res["n_nonzero"] = int((codes > 0).sum())
            inputs["amax"] = prior.clone()
            base = mod.torch_baseline(inputs)
            res["baseline_differ"] = int((base.view(u8) != out.view(u8)).sum())
            res["baseline_amax"] = float(inputs["amax"])
            if name == FRESH:
                yf, ytf, af, sif = mod.cast_transpose_fp8(inputs["x"], inputs["scale"], **{
                    k: v for k, v in cfg.items()})
                res["fresh_ok"] = bool(yf.shape == (M, N) and ytf.shape == (N, M) and yf.is_contiguous()
                                       and ytf.is_contiguous() and torch.equal(yf.view(u8), q)
                                       and torch.equal(ytf.view(u8), q.t()) and float(af) == res["max_abs_x"]
                                       and torch.equal(sif, 1.0 / inputs["scale"]))
            results[name] = res
        except Exception as exc:          # reported per case by the test
            results[name] = {"error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(results))


if __name__ == "__main__":
    _run()
