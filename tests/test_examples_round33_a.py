"""examples/pq_adc_scan.py (the list scan of an IVF-PQ index: asymmetric distance computation, out[q, i] =
bias[q] + sum_m LUT[q, m, codes[i, m]] over uint8 PQ codes and an fp32 / fp16 lookup table; a program scores
BLOCK_N vectors against BLOCK_Q queries, M_STEP sub-quantizers a step, its lookups gathered from global memory
(STAGE 0) or from the step's LUT slice staged on chip (STAGE 1)) against its torch reference on the CPU through
Triton's interpreter, its launcher hooks against the shapes, its study sweep against the points, and a compile
for sm_90 and sm_120 from its own ``example_args``.

As in test_examples_round32_b.py the interpreter cases run in a subprocess (this file run as a script:
``python tests/test_examples_round33_a.py pq_adc_scan``) that prints one JSON line. The subprocess installs
the harness's interpreter fixes.

Shapes are small, odd and ragged: both LUT dtypes x STAGE 0 / 1, with and without the bias; M of 1, 7, 10,
12, 13 (the last step partly past M), 16, 24, 32, 64, 96; n from 1 to 777, ragged against BLOCK_N and below
it; nq from 1 to 9, ragged against BLOCK_Q and below it; codes with padded rows (row stride M + 5), the LUT a
query- and sub-quantizer-strided slice of a NaN-filled buffer, out a view into a wider NaN-filled distance
buffer; every sweep value of every tunable, num_stages 2.

Per case: launch's output within 1e-5 x max|ref| of the float64 reference (fp32 sums of exactly widened
entries), and of an independent per-element recomputation at 64 sampled (query, vector) pairs; the output
fp32 in [nq, n], fresh and contiguous (or the caller's view, its padding untouched); the inputs unchanged;
torch_baseline within tolerance too.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
KERNEL = "pq_adc_scan"
ROLE = "held-out-33"
H100_SMS = 132
SM90_SMEM_PER_BLOCK = 227 * 1024
SM120_SMEM_PER_BLOCK = 99 * 1024
TOL = {"fp32": 1e-5, "fp16": 1e-5}        # out is an fp32 sum of exactly widened entries, whatever the LUT dtype
MAX_INDEX_ELEMS = 30_000_000              # the codes example_args carries

# the study's sweep (scripts/rank_study.py SWEEPS["pq_adc_scan"] once the lead adds it)
SWEEP_AXES = {"BLOCK_N": [64, 128, 256], "BLOCK_Q": [1, 2, 4], "M_STEP": [2, 4], "STAGE": [0, 1],
              "num_warps": [4, 8], "num_stages": [1]}


def _cfg(bn, bq=2, ms=4, stage=0, w=4, st=1):
    return {"BLOCK_N": bn, "BLOCK_Q": bq, "M_STEP": ms, "STAGE": stage, "num_warps": w, "num_stages": st}


def _pt(nq, n, M, dtype="fp32", bias=0):
    return {"nq": nq, "n": n, "M": M, "dtype": dtype, "bias": bias}


# case -> (point, cfg)
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        # the SIFT1B PQ32 point scaled down: 5 queries (3 blocks of 2, the last half empty) x 777 vectors, bias
        "sift_pq32_fp32_bias": (_pt(5, 777, 32, "fp32", 1), _cfg(128, 2, 4, 0, 4)),
        # the Deep1B PQ64 point scaled down: fp16 LUT, bias, staged; 3 queries in a block of 4, 500 in 2 x 256
        "deep_pq64_fp16_staged": (_pt(3, 500, 64, "fp16", 1), _cfg(256, 4, 2, 1, 8)),
        # the text PQ96 point scaled down: 4 queries in one block, no bias, staged, blocks of 64 vectors
        "text_pq96_fp32_staged": (_pt(4, 300, 96, "fp32", 0), _cfg(64, 4, 4, 1, 4)),
        # M 13 in steps of 4 (the last step holds one sub-quantizer), fp16 gathered, one query a program
        "ragged_m13_fp16": (_pt(7, 201, 13, "fp16", 0), _cfg(64, 1, 4, 0, 8)),
        # M 7 in steps of 4 staged (the last step 3 of 4), bias, 129 vectors in 2 blocks of 128
        "ragged_m7_staged_bias": (_pt(3, 129, 7, "fp32", 1), _cfg(128, 2, 4, 1, 4)),
        # one query, one sub-quantizer, 50 vectors: a block of 4 queries, 64 vectors and 2 sub-quantizers over
        # them (n < BLOCK_N, nq < BLOCK_Q, M < M_STEP), staged fp16 with the bias
        "one_query_m1_fp16": (_pt(1, 50, 1, "fp16", 1), _cfg(64, 4, 2, 1, 4)),
        # strided: codes rows padded to M + 5 bytes, the LUT a strided slice, out a view into a wider buffer
        "strided_fp32_bias": (_pt(6, 333, 16, "fp32", 1), _cfg(128, 4, 2, 0, 4)),
        # strided, staged, fp16, no bias, 256 vectors on 8 warps, one query a program
        "strided_fp16_staged": (_pt(5, 260, 12, "fp16", 0), _cfg(256, 1, 4, 1, 8)),
        # num_stages 2 (nothing to pipeline: the same result), M 10 in steps of 2
        "stages2_m10": (_pt(2, 90, 10, "fp32", 0), _cfg(64, 2, 2, 0, 4, 2)),
        # a single database vector against 9 queries (3 blocks of 4, the last with one), M 24, bias
        "single_vector_9q": (_pt(9, 1, 24, "fp32", 1), _cfg(256, 4, 4, 0, 8)),
        # fp16 gathered with the bias: 2 queries a program, 256 vectors on 4 warps over 300
        "fp16_bias_gathered": (_pt(4, 300, 32, "fp16", 1), _cfg(256, 2, 2, 0, 4)),
    },
}
STRIDED = ("strided_fp32_bias", "strided_fp16_staged")
CODE_PAD, OUT_PAD, OUT_OFF = 5, 37, 5

# configs compiled on sm_90: at each point BASELINE, the most registers (256 vectors x 4 queries x 4
# sub-quantizers staged on 4 warps), the most lookups gathered (the same on 8 warps, STAGE 0) and the fewest
COMPILE_CFGS = {0: [_cfg(128, 2, 4, 0, 4), _cfg(256, 4, 4, 1, 4), _cfg(64, 1, 2, 0, 8)],
                1: [_cfg(256, 4, 4, 1, 4), _cfg(256, 4, 4, 0, 8)],
                2: [_cfg(64, 4, 4, 1, 4), _cfg(128, 1, 2, 1, 8)]}
SM120_CFGS = [_cfg(128, 2, 4, 0, 4), _cfg(256, 4, 4, 1, 4), _cfg(64, 4, 2, 1, 8)]


def _smem_bound(cfg) -> int:
    """An upper bound of a config's shared memory (layout conversions only, no staging buffer): STAGE 0 the
    [BLOCK_Q, BLOCK_N] fp32 accumulator converted for the store (16 x BLOCK_N bytes at 4 queries), STAGE 1 the
    code tile's transpose and the gather's layout changes, 1 KiB a warp; at least the driver's reserve."""
    if cfg["STAGE"]:
        return 1024 * cfg["num_warps"]
    return max(1024, 16 * cfg["BLOCK_N"])


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """The strided variants (module doc), then copies of the inputs."""
    import torch

    if name in STRIDED:
        c = inputs["codes"]
        n, M = c.shape
        big = torch.full((n, M + CODE_PAD), 255, dtype=torch.uint8)
        big[:, :M] = c
        inputs["codes"] = big[:, :M]
        lut = inputs["lut"]
        nq = lut.shape[0]
        bl = torch.full((2 * nq, M + 3, 256), float("nan"), dtype=lut.dtype)
        bl[::2, 1:M + 1] = lut
        inputs["lut"] = bl[::2, 1:M + 1]
        ob = torch.full((nq, n + OUT_PAD), float("nan"), dtype=torch.float32)
        inputs["out_buf"] = ob
        inputs["out"] = ob[:, OUT_OFF:OUT_OFF + n]
    for k in ("codes", "lut", "bias"):
        if inputs[k] is not None:
            inputs[k + "0"] = inputs[k].clone()


# ----------------------------------------------------------------- the pytest side
def _results() -> dict:
    return H.interpreter_results(HERE, KERNEL)


@pytest.mark.parametrize("name", list(CASES[KERNEL]))
def test_example_matches_reference(name):
    res = _results()[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    p, cfg = CASES[KERNEL][name]
    assert res["n_bad"] == 0, H.mismatch(res, f"{name} launch")
    assert res["shape"] == [p["nq"], p["n"]] and res["dtype"] == "fp32", res
    assert res["sample_max_err"] <= 1e-5 * res["scale"], res
    assert res["inputs_unchanged"] is True, res
    assert res["baseline_bad"] == 0, res
    if name in STRIDED:
        assert res["is_view"] is True and res["pad_untouched"] is True, res
        assert res["code_stride"] == p["M"] + CODE_PAD and res["out_stride"] == p["n"] + OUT_PAD, res
    else:
        assert res["contiguous"] is True, res
    # distances less the bias: sums of M uniform 0-4 entries (mean 2 M, sd 1.155 sqrt(M)): 5 standard errors
    assert abs(res["mean_less_bias"] - 2 * p["M"]) < 0.05 + 5 * 1.155 * (p["M"] / (p["nq"] * p["n"])) ** 0.5, res
    if p["n"] * p["nq"] > 1:
        assert res["n_distinct"] > 1, res


def test_cases_cover_every_code_path():
    """STAGE 0 / 1 at both dtypes, HAS_BIAS 0 / 1 at both STAGEs, a last step partly past M and M below
    M_STEP, n below BLOCK_N and ragged above it, nq below BLOCK_Q and ragged above it, strided codes / LUT /
    out at both STAGEs; every sweep value of every tunable, num_stages 2."""
    H.assert_tunables_covered(CASES)
    mod = load_example(KERNEL)
    cases = CASES[KERNEL]
    assert {p["dtype"] for p, _ in cases.values()} == set(mod.DTYPES)
    assert {(p["dtype"], c["STAGE"]) for p, c in cases.values()} == set(itertools.product(mod.DTYPES, (0, 1)))
    assert {(p["bias"], c["STAGE"]) for p, c in cases.values()} == set(itertools.product((0, 1), (0, 1)))
    assert any(p["M"] % c["M_STEP"] and p["M"] > c["M_STEP"] for p, c in cases.values())
    assert any(p["M"] < c["M_STEP"] for p, c in cases.values())
    assert any(p["n"] < c["BLOCK_N"] for p, c in cases.values())
    assert any(p["n"] % c["BLOCK_N"] and p["n"] > c["BLOCK_N"] for p, c in cases.values())
    assert any(p["nq"] < c["BLOCK_Q"] for p, c in cases.values())
    assert any(p["nq"] % c["BLOCK_Q"] and p["nq"] > c["BLOCK_Q"] for p, c in cases.values())
    assert {cases[s][1]["STAGE"] for s in STRIDED} == {0, 1}
    assert {p["M"] for p, _ in cases.values()} >= {1, 32, 64, 96}
    for k, vals in SWEEP_AXES.items():
        assert {c[k] for _, c in cases.values()} >= set(vals), k
    assert 2 in {c["num_stages"] for _, c in cases.values()}


def test_launcher_hooks_agree_with_shapes():
    """At every point and sweep config: example_args -- the codes with data on the CPU (make_inputs' seed-0
    draw, at most 30M bytes), the LUT, bias and out on meta -- with the launch's shapes, dtypes, strides and
    constants; the 2-D grid and the loop length; bytes_moved / flops; 34-262 MB moved a point."""
    import torch

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "example_args", "torch_baseline", "pq_adc_scan"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert not hasattr(mod, "secondary_kernels") and not hasattr(mod, "cta_iterations")
    assert len(mod.POINTS) == 3 and mod.ROLE == ROLE and mod.SWEEP_AXES == SWEEP_AXES
    dts = {"fp32": torch.float32, "fp16": torch.float16}
    cfgs = [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]
    for p in mod.POINTS:
        nq, n, M = p["nq"], p["n"], p["M"]
        assert n * M <= MAX_INDEX_ELEMS, p
        inp = mod.make_inputs(p, seed=0, device="cpu")
        for cfg in cfgs:
            a = mod.example_args(cfg, p)
            c, lut, b, o = a["CODES"], a["LUT"], a["BIAS"], a["OUT"]
            assert c.device.type == "cpu" and c.dtype == torch.uint8 and c.shape == (n, M)
            assert lut.device.type == "meta" and lut.shape == (nq, M, 256) and lut.dtype == dts[p["dtype"]]
            assert o.device.type == "meta" and o.shape == (nq, n) and o.dtype == torch.float32
            assert b.device.type == "meta" and b.dtype == torch.float32 and (b.shape == (nq,) if p["bias"] else b is o)
            assert (a["n"], a["nq"], a["M"]) == (n, nq, M)
            assert (a["stride_cn"], a["stride_lq"], a["stride_lm"], a["stride_oq"]) == (M, M * 256, 256, n)
            assert (a["HAS_BIAS"], a["STAGE"]) == (p["bias"], cfg["STAGE"])
            assert (a["BLOCK_N"], a["BLOCK_Q"], a["M_STEP"]) == (cfg["BLOCK_N"], cfg["BLOCK_Q"], cfg["M_STEP"])
            assert mod.grid(cfg, p) == (-(-n // cfg["BLOCK_N"]), -(-nq // cfg["BLOCK_Q"]))
            assert mod.loop_iterations(cfg, p) == -(-M // cfg["M_STEP"])
        assert torch.equal(mod.example_args(mod.BASELINE, p)["CODES"], inp["codes"])
        e = 4 if p["dtype"] == "fp32" else 2
        assert mod.bytes_moved(p) == n * M + nq * M * 256 * e + 4 * nq * p["bias"] + 4 * nq * n
        assert 30e6 < mod.bytes_moved(p) < 0.3e9
        assert mod.flops(p) == nq * n * (M + p["bias"])
    # the points differ: batch, codes, sub-quantizers, dtype, bias
    P = mod.POINTS
    assert [(p["nq"], p["n"], p["M"], p["dtype"], p["bias"]) for p in P] == [
        (64, 900_000, 32, "fp32", 1), (16, 400_000, 64, "fp16", 1), (4, 300_000, 96, "fp32", 0)]


def test_hooks_on_small_points_and_inputs():
    """reference and torch_baseline by hand; make_inputs' seed, dtypes and spread; grid / loop; bytes / flops;
    the wrapper's empty scan and its out argument."""
    import torch

    mod = load_example(KERNEL)
    # by hand: 2 queries, M 2, 3 vectors
    lut = torch.zeros((2, 2, 256))
    lut[0, 0, 5], lut[0, 1, 7], lut[0, 0, 0], lut[0, 1, 255] = 1.5, 2.0, 0.25, 8.0
    lut[1, 0, 5], lut[1, 1, 7], lut[1, 0, 0], lut[1, 1, 255] = -1.0, 3.0, 4.0, 0.5
    codes = torch.tensor([[5, 7], [0, 255], [5, 255]], dtype=torch.uint8)
    bias = torch.tensor([10.0, 20.0])
    inp = {"codes": codes, "lut": lut, "bias": bias}
    want = [[13.5, 18.25, 19.5], [22.0, 24.5, 19.5]]
    assert mod.reference(inp).tolist() == want
    assert mod.torch_baseline(inp).tolist() == want
    assert mod.reference(dict(inp, bias=None)).tolist() == [[3.5, 8.25, 9.5], [2.0, 4.5, -0.5]]
    base = mod.torch_baseline(dict(inp, lut=lut.half()))
    assert base.dtype == torch.float32 and base.shape == (2, 3)
    # make_inputs: seeded, dtypes, spread
    p = _pt(3, 1000, 12, "fp16", 1)
    a = mod.make_inputs(p, seed=1, device="cpu")
    assert a["codes"].dtype == torch.uint8 and a["codes"].shape == (1000, 12)
    assert a["codes"].unique().numel() == 256
    assert a["lut"].dtype == torch.float16 and a["lut"].shape == (3, 12, 256)
    assert 0 <= float(a["lut"].min()) and float(a["lut"].max()) <= 4 and a["lut"].unique().numel() > 1000
    assert a["bias"].dtype == torch.float32 and a["bias"].shape == (3,)
    assert torch.equal(mod.make_inputs(p, seed=1, device="cpu")["codes"], a["codes"])
    assert not torch.equal(mod.make_inputs(p, seed=2, device="cpu")["codes"], a["codes"])
    assert mod.make_inputs(_pt(2, 10, 4), device="cpu")["bias"] is None
    # grid / loop, bytes / flops
    c = _cfg(128, 2, 4)
    assert mod.grid(c, p) == (8, 2) and mod.grid(c, _pt(4, 128, 12)) == (1, 2)
    assert mod.loop_iterations(c, p) == 3 and mod.loop_iterations(c, _pt(1, 5, 13)) == 4
    assert mod.bytes_moved(p) == 12_000 + 3 * 12 * 256 * 2 + 12 + 12_000
    assert mod.flops(p) == 3 * 1000 * 13
    # nothing to scan: an empty [nq, 0] result, nothing launched
    e = mod.pq_adc_scan(a["codes"][:0], a["lut"])
    assert e.shape == (3, 0) and e.dtype == torch.float32


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    inp = mod.make_inputs(_pt(3, 100, 8, "fp32", 1), device="cpu")
    c, lut, b = inp["codes"], inp["lut"], inp["bias"]
    with pytest.raises(ValueError, match="BLOCK_N=100"):
        mod.pq_adc_scan(c, lut, b, BLOCK_N=100)
    with pytest.raises(ValueError, match="BLOCK_Q=3"):
        mod.pq_adc_scan(c, lut, b, BLOCK_Q=3)
    with pytest.raises(ValueError, match="M_STEP=0"):
        mod.pq_adc_scan(c, lut, b, M_STEP=0)
    with pytest.raises(ValueError, match="STAGE=2"):
        mod.pq_adc_scan(c, lut, b, STAGE=2)
    with pytest.raises(ValueError, match="num_warps=3"):
        mod.pq_adc_scan(c, lut, b, num_warps=3)
    with pytest.raises(ValueError, match="num_stages=0"):
        mod.pq_adc_scan(c, lut, b, num_stages=0)
    with pytest.raises(ValueError, match="codes must be a 2-d uint8"):
        mod.pq_adc_scan(c.to(torch.int32), lut, b)
    with pytest.raises(ValueError, match="unit M stride"):
        mod.pq_adc_scan(torch.zeros((8, 100), dtype=torch.uint8).t(), lut, b)
    with pytest.raises(ValueError, match="lut must be a 3-d float32"):
        mod.pq_adc_scan(c, lut.to(torch.bfloat16), b)
    with pytest.raises(ValueError, match="M=8"):
        mod.pq_adc_scan(c, lut[:, :7], b)
    with pytest.raises(ValueError, match="unit centroid stride"):
        mod.pq_adc_scan(c, torch.zeros((3, 8, 512))[:, :, ::2], b)
    with pytest.raises(ValueError, match="bias must be a 1-d float32"):
        mod.pq_adc_scan(c, lut, b[:2])
    with pytest.raises(ValueError, match="bias must be a 1-d float32"):
        mod.pq_adc_scan(c, lut, b.double())
    with pytest.raises(ValueError, match="out must be a float32"):
        mod.pq_adc_scan(c, lut, b, out=torch.empty((3, 99)))
    with pytest.raises(ValueError, match="out must be a float32"):
        mod.pq_adc_scan(c, lut, b, out=torch.empty((100, 3)).t())
    with pytest.raises(ValueError, match="codes' device"):
        mod.pq_adc_scan(c, lut.to("meta"), b)
    with pytest.raises(ValueError, match="dtype 'bf16'"):
        mod.make_inputs(_pt(2, 10, 4, "bf16"), device="cpu")
    with pytest.raises(ValueError, match="bias=2"):
        mod.bytes_moved(_pt(2, 10, 4, "fp32", 2))
    with pytest.raises(ValueError, match="n=0"):
        mod.grid(mod.BASELINE, _pt(2, 0, 4))
    with pytest.raises(ValueError, match="nq=0"):
        mod.flops(_pt(0, 10, 4))
    with pytest.raises(ValueError, match="M=2.5"):
        mod.example_args(mod.BASELINE, _pt(2, 10, 2.5))
    with pytest.raises(ValueError, match="M_STEP=3"):
        mod.loop_iterations(dict(mod.BASELINE, M_STEP=3), mod.POINTS[0])
    with pytest.raises(ValueError, match="BLOCK_N='abc'"):
        mod.grid(dict(mod.BASELINE, BLOCK_N="abc"), mod.POINTS[0])


def test_sweep_fits_the_points():
    """The study sweep: 72 configs (BLOCK_N 64 / 128 / 256, BLOCK_Q 1 / 2 / 4, M_STEP 2 / 4, STAGE 0 / 1, 4 / 8
    warps, num_stages 1) with BASELINE among them; at every point each config is valid, launches >= 4 waves of
    programs on an H100 (1172 at the fewest: 256 vectors x 4 queries a program at the 4-query PQ96 point) and
    fits the shared-memory bound. (Every config was compiled for sm_90 at every point with triton 3.6.0 and
    3.9.0: all compile, none spills. Registers 25-168 under 3.9 (STAGE 0: 25-96, STAGE 1: 48-168, the most for
    256 vectors x 4 queries x 4 sub-quantizers staged on 4 warps), 25-128 under 3.6 (STAGE 0: 25-40, STAGE 1:
    48-128); shared memory 256-8192 bytes under 3.9 and 0-8192 under 3.6, layout conversions only (STAGE 0 at
    most 16 x BLOCK_N, STAGE 1 at most 1 KiB a warp). M_STEP 8 with 4 queries staged spilled (2-4 spills under
    3.6, 2 under 3.9 at 64 vectors on 8 warps): the sweep stops at M_STEP 4.)"""
    mod = load_example(KERNEL)
    axes = SWEEP_AXES
    assert set(axes) == set(mod.TUNABLES) and mod.SWEEP_AXES == axes
    assert all(len(v) >= 2 for k, v in axes.items() if k != "num_stages") and axes["num_stages"] == [1]
    cfgs = [dict(zip(axes, v)) for v in itertools.product(*axes.values())]
    assert 48 <= len(cfgs) <= 72 and mod.BASELINE in cfgs
    fewest = min(x * y for p in mod.POINTS for c in cfgs for x, y in [mod.grid(c, p)])
    assert fewest == 1172
    for p in mod.POINTS:
        for c in cfgs:
            mod._check_cfg(c)
            gx, gy = mod.grid(c, p)
            assert gx * gy >= 4 * H100_SMS, (p, c)
            assert _smem_bound(c) <= SM90_SMEM_PER_BLOCK, (p, c)
            assert mod.loop_iterations(c, p) == -(-p["M"] // c["M_STEP"])


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
    """On sm_90 at each point: BASELINE, the most registers (256 x 4 x 4 staged on 4 warps), the most lookups
    gathered (the same on 8 warps, STAGE 0) and the fewest compile without spills within the shared bound."""
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
    """On sm_120 (99 KiB a block): BASELINE, 256 x 4 x 4 staged on 4 warps and 64 x 4 x 2 staged on 8 warps
    compile at the first point (SIFT1B PQ32, fp32) without spills within its shared memory."""
    for cfg, res in H.compile_results(KERNEL, SM120_CFGS, "sm_120"):
        assert res.status == "ok", f"{cfg} on sm_120: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.n_spills == 0, (cfg, res.n_regs, res.n_spills)
        assert 0 <= res.shared <= min(_smem_bound(cfg), SM120_SMEM_PER_BLOCK), (cfg, res.shared)


# ----------------------------------------------------------------- the subprocess side
def _run() -> None:
    """Every case through launch against reference, and against a per-element recomputation at 64 sampled
    (query, vector) pairs; torch_baseline against reference; the inputs unchanged; one JSON line."""
    import torch

    H.patch_interpreter_bf16_rounding()
    H.patch_interpreter_index()
    mod = load_example(KERNEL)

    def extra(name, point, inputs, out, ref):
        codes, lut, bias = inputs["codes"], inputs["lut"], inputs["bias"]
        nq, n = out.shape
        g = torch.Generator().manual_seed(7)
        qs = torch.randint(0, nq, (64,), generator=g).tolist()
        vs = torch.randint(0, n, (64,), generator=g).tolist()
        err = 0.0
        for q, i in zip(qs, vs):
            d = sum(float(lut[q, m, int(codes[i, m])]) for m in range(codes.shape[1]))
            d += float(bias[q]) if bias is not None else 0.0
            err = max(err, abs(float(out[q, i]) - d))
        unchanged = all(torch.equal(inputs[k], inputs[k + "0"]) if inputs[k].dtype == torch.uint8
                        else torch.equal(inputs[k].nan_to_num(), inputs[k + "0"].nan_to_num())
                        for k in ("codes", "lut", "bias") if inputs[k] is not None)
        base = H.compare(mod.torch_baseline(inputs), ref, point["dtype"], TOL)
        res = {"dtype": "fp32" if out.dtype == torch.float32 else str(out.dtype),
               "contiguous": out.is_contiguous(), "sample_max_err": err, "inputs_unchanged": unchanged,
               "baseline_bad": base["n_bad"],
               "mean_less_bias": float((out.double() - (0 if bias is None else bias.double()[:, None])).mean()),
               "n_distinct": int(out.unique().numel())}
        if name in STRIDED:
            ob = inputs["out_buf"]
            pad = torch.ones_like(ob, dtype=torch.bool)
            pad[:, OUT_OFF:OUT_OFF + n] = False
            res.update(is_view=out.data_ptr() == inputs["out"].data_ptr(),
                       pad_untouched=bool(ob[pad].isnan().all()) and bool(torch.equal(ob[:, OUT_OFF:OUT_OFF + n], out)),
                       code_stride=codes.stride(0), out_stride=out.stride(0))
        return res

    H.run_cases(KERNEL, CASES[KERNEL], tol_table=TOL, prepare=_prepare, extra=extra)


if __name__ == "__main__":
    _run()
