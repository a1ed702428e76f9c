"""examples/searchsorted.py (batched torch.searchsorted / bucketize: a uniform branchless binary
search per query, optionally after a coarse compare-count pass over COARSE sampled splitters)
against torch.searchsorted on the CPU through Triton's interpreter, its search arithmetic
mirrored in Python against bisect, its launcher hooks against the shapes, its study sweep
against the points, and a compile for sm_90 and sm_120 from its own ``example_args``.

As in test_examples_round15_a.py, the interpreter must be chosen before triton is imported, so
the cases run in a subprocess (this file run as a script: ``python tests/test_examples_round18_c.py
searchsorted``) that prints one JSON line; the tests assert per case.

Shapes are small, odd and ragged: N not a multiple of BLOCK (masked tail CTAs) and N < BLOCK, B
of 1-4 rows, M from 1 to 5000, row strides wider than M / N (views of wider buffers), every
dtype (fp32, int64, int32 keys), both RIGHT values, int32 and int64 outputs, queries beyond
both ends of a row, many ties (int keys over a narrow range, and every tenth query equal to a
boundary). Paths: COARSE 0 (the plain search, 1 to 13 steps, TOP = 1 specialized to a
constant when M = 1); COARSE > 0 with one and with several splitter chunks (CHUNK < COARSE),
with W = 1 (COARSE >= M: the coarse pass alone decides, no gather, splitters past M masked),
with W = 2 (one fine step) and wide buckets (up to 5 fine steps).

Tolerance: none -- the outputs are integer indices and must equal torch.searchsorted's
exactly (the harness compares them as floats; indices < 2^24 are exact there). Every
comparison the kernel makes is one exact compare of two values of the keys' dtype, the same
predicate (< for right=False, <= for right=True) torch's binary search applies, and a sorted row
makes "how many boundaries satisfy it" a unique answer however the search walks.
"""

from __future__ import annotations

import bisect
import itertools
import random
import sys
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
KERNEL = "searchsorted"
TOL = {"fp32": 0.0, "int64": 0.0, "int32": 0.0}
H200_SMS = 132
H200_SMEM_PER_BLOCK = 227 * 1024
SM120_SMEM_PER_BLOCK = 99 * 1024


def _cfg(block, coarse, w, st):
    return {"BLOCK": block, "COARSE": coarse, "num_warps": w, "num_stages": st}


def _pt(B, M, N, dtype, right, out_int32=0, key_range=None):
    p = {"B": B, "M": M, "N": N, "dtype": dtype, "right": right, "out_int32": out_int32}
    if key_range is not None:
        p["key_range"] = key_range
    return p


# case -> (point, cfg); comments: (W, fine STEPS, coarse iterations = COARSE / CHUNK)
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        # plain search, 6 steps, N tail (100 = 3 x 32 + 4)
        "plain_fp32_left": (_pt(3, 37, 100, "fp32", 0), _cfg(32, 0, 1, 1)),
        # plain search, 8 steps, keys over 50 values: many ties, right=True
        "plain_int64_right_ties": (_pt(2, 200, 150, "int64", 1, key_range=50), _cfg(64, 0, 4, 3)),
        # plain search over a long row: 13 steps, N < BLOCK
        "plain_fp32_long_row": (_pt(1, 5000, 50, "fp32", 0), _cfg(64, 0, 2, 1)),
        # M = 1: STEPS = TOP = 1 (both specialized to constants), int32 out
        "single_boundary_int32": (_pt(2, 1, 33, "int32", 0, out_int32=1, key_range=3), _cfg(16, 0, 1, 3)),
        # W = 63, 6 fine steps, 4 chunks of 4 splitters (CHUNK = 1024 / 256), ties
        "coarse_multichunk_int32": (_pt(3, 1000, 90, "int32", 0, key_range=300), _cfg(256, 16, 1, 1)),
        # the histogram case: W = 1, no fine step, 8 chunks of 32; int32 out, right=True
        "coarse_all_compare_hist": (_pt(1, 255, 300, "fp32", 1, out_int32=1), _cfg(128, 256, 4, 1)),
        # COARSE 64 > M = 40: W = 1, splitters 40-63 masked
        "coarse_past_m_int64": (_pt(2, 40, 77, "int64", 0, key_range=30), _cfg(32, 64, 2, 3)),
        # W = 2: one fine step (TOP = 1 specialized), right=True
        "coarse_one_step_fp32": (_pt(2, 30, 40, "fp32", 1), _cfg(16, 16, 2, 1)),
        # strided rows (views of [4, 140] / [4, 80] buffers): W = 3, 2 steps, one chunk of 64
        "coarse_strided_rows": (_pt(4, 129, 65, "fp32", 0), _cfg(64, 64, 8, 1)),
        # M = 1 under COARSE: W = 1, one valid splitter
        "coarse_single_boundary": (_pt(3, 1, 20, "int64", 1, key_range=2), _cfg(16, 16, 4, 3)),
        # wide buckets: W = 12, 4 steps; int64 right=True, 256 splitters in chunks of 128
        "coarse_256_int64_right": (_pt(2, 3000, 50, "int64", 1, key_range=4000), _cfg(64, 256, 8, 1)),
    },
}

STRIDED = "coarse_strided_rows"


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """Edit a case's inputs: boundaries and queries as row views of wider buffers."""
    import torch

    if name == STRIDED:
        b, q = inputs["boundaries"], inputs["queries"]
        B, M = b.shape
        N = q.shape[1]
        wb = torch.full((B, M + 11), float("nan"))
        wb[:, :M] = b
        wq = torch.full((B, N + 15), float("nan"))
        wq[:, :N] = q
        inputs["boundaries"], inputs["queries"] = wb[:, :M], wq[:, :N]
        assert inputs["boundaries"].stride() == (M + 11, 1) and inputs["queries"].stride() == (N + 15, 1)


# configs compiled: BASELINE first, then the sweep's extremes
COMPILE_CFGS = [_cfg(1024, 0, 4, 1), _cfg(2048, 256, 2, 1), _cfg(256, 16, 8, 1), _cfg(512, 64, 4, 1)]


# ----------------------------------------------------------------- the pytest side
def _results() -> dict:
    return H.interpreter_results(HERE, KERNEL)


@pytest.mark.parametrize("name", list(CASES[KERNEL]))
def test_example_matches_reference(name):
    res = _results()[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    point = CASES[KERNEL][name][0]
    assert res["shape"] == [point["B"], point["N"]]
    for what, r in (("kernel", res), ("torch_baseline", res["baseline"])):
        assert r["n_bad"] == 0, H.mismatch(r, f"{name} {what}")


def test_cases_cover_every_code_path():
    """Each tunable takes >= 2 values; every dtype, both RIGHT values, both output dtypes; the
    plain search and the coarse one with W = 1, W = 2 and wider buckets, one and several chunks,
    splitters masked past M, an N tail and N < BLOCK; TOP = 1 in both methods."""
    H.assert_tunables_covered(CASES)
    mod = load_example(KERNEL)
    cases = list(CASES[KERNEL].values())
    assert {p["dtype"] for p, _ in cases} == set(mod.DTYPES)
    assert {p["right"] for p, _ in cases} == {0, 1} and {p["out_int32"] for p, _ in cases} == {0, 1}
    seen = set()
    for p, c in cases:
        W, steps, top = mod.search_plan(p["M"], c)
        seen |= {"n_tail"} if p["N"] % c["BLOCK"] and p["N"] > c["BLOCK"] else set()
        seen |= {"n_lt_block"} if p["N"] < c["BLOCK"] else set()
        if c["COARSE"] == 0:
            seen |= {"plain_top1"} if top == 1 else {"plain"}
            continue
        chunk = mod._chunk(c)
        seen |= {"one_chunk"} if chunk == c["COARSE"] else {"multichunk"}
        seen |= {"masked_splitters"} if c["COARSE"] * W > p["M"] else set()
        seen |= {"w1"} if W == 1 else ({"w2_top1"} if top == 1 else {"wide"})
    assert seen == {"n_tail", "n_lt_block", "plain", "plain_top1", "one_chunk", "multichunk",
                    "masked_splitters", "w1", "w2_top1", "wide"}, seen


def _mirror(row, v, right, cfg) -> int:
    """The kernel's search for one query, in Python: the coarse count, then the fine steps."""
    mod = load_example(KERNEL)
    M = len(row)
    W, steps, top = mod.search_plan(M, cfg)
    below = (lambda b: b <= v) if right else (lambda b: b < v)
    if cfg["COARSE"]:
        c = sum(1 for j in range(cfg["COARSE"]) if (j + 1) * W - 1 < M and below(row[(j + 1) * W - 1]))
        pos, hi = c * W, min(c * W + W - 1, M)
    else:
        pos, hi = 0, M
    for k in range(steps):
        step = top >> k
        idx = pos + step - 1
        if idx < hi and below(row[idx]):
            pos += step
    return pos


def test_search_arithmetic_matches_bisect():
    """The plan (W, STEPS, TOP) and the two formulations, walked in Python, give bisect's answer
    for M from 1 to 3000 (powers of two and their neighbours), every COARSE of the sweep, ties,
    both sides; the steps are enough: 2^STEPS - 1 >= the searched range."""
    mod = load_example(KERNEL)
    rng = random.Random(7)
    for M in (1, 2, 3, 15, 16, 17, 63, 64, 65, 255, 256, 257, 1000, 3000):
        row = sorted(rng.randrange(0, max(2, M // 2)) for _ in range(M))
        qs = [rng.randrange(-2, M // 2 + 2) for _ in range(40)] + row[:: max(1, M // 10)]
        for coarse in (0, 16, 64, 256):
            cfg = _cfg(256, coarse, 4, 1)
            W, steps, top = mod.search_plan(M, cfg)
            span = M if coarse == 0 else W - 1
            assert (1 << steps) - 1 >= span and (steps == 0 or top == 1 << (steps - 1))
            assert coarse == 0 or coarse * W >= M
            for right in (0, 1):
                want = bisect.bisect_right if right else bisect.bisect_left
                for v in qs:
                    assert _mirror(row, v, right, cfg) == want(row, v), (M, coarse, right, v)


def test_sweep_fits_the_points():
    """The study sweep: 48 configs (BLOCK 256-2048 x COARSE 0 / 16 / 64 / 256 x 2 / 4 / 8 warps,
    num_stages 1), BASELINE among them; at every POINT each config is valid, launches >= 4 x 132
    CTAs, and its shared memory (<= 8 BLOCK bytes: the coarse count's reduction / the int64
    store's layout conversion) fits 227 KiB. (All 144 config-point pairs compiled for sm_90 with
    triton 3.6.0 in ~32 s: none spills; 16-218 registers (the most: int64 keys, BLOCK 2048 on 2
    warps, 32 queries a thread); shared memory 0-8 KiB; num_stages 1 and 3 gave identical PTX,
    so the sweep keeps 1.)"""
    SWEEP_AXES = H.study_sweeps([KERNEL], "held-out-18")[KERNEL][2]     # scripts/rank_study.py SWEEPS
    mod = load_example(KERNEL)
    assert set(SWEEP_AXES) == set(mod.TUNABLES)
    cfgs = [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]
    assert 40 <= len(cfgs) <= 72 and mod.BASELINE in cfgs
    for p in mod.POINTS:
        for c in cfgs:
            mod._check_cfg(c)
            gx, gy = mod.grid(c, p)
            assert gx * gy >= 4 * H200_SMS, (p, c)
            assert 8 * c["BLOCK"] <= H200_SMEM_PER_BLOCK
            assert 1 <= mod.loop_iterations(c, p) <= 256 + 25
    # the points differ in character: dtypes, sides, output widths, and the search depth
    assert {p["dtype"] for p in mod.POINTS} == {"fp32", "int64"}
    assert {p["right"] for p in mod.POINTS} == {0, 1}
    assert sorted(mod.search_plan(p["M"], mod.BASELINE)[1] for p in mod.POINTS) == [8, 13, 25]


def test_launcher_hooks_agree_with_shapes():
    """At every default point: example_args has the launch's shapes, dtypes, strides and plan
    (meta tensors), grid is (cdiv(N, BLOCK), B), bytes_moved counts the rows, queries and out
    once; inputs < 4 GB."""
    import torch

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "example_args", "torch_baseline", "searchsorted", "search_plan"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert not hasattr(mod, "secondary_kernels") and not hasattr(mod, "cta_iterations")   # uniform CTAs
    assert len(mod.POINTS) == 3
    for cfg in [mod.BASELINE] + COMPILE_CFGS:
        for p in mod.POINTS:
            args = mod.example_args(cfg, p)
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for v in args.values())
            B, M, N = p["B"], p["M"], p["N"]
            dt = {"fp32": torch.float32, "int64": torch.int64, "int32": torch.int32}[p["dtype"]]
            assert args["BND"].shape == (B, M) and args["Q"].shape == (B, N) and args["OUT"].shape == (B, N)
            assert args["BND"].dtype == args["Q"].dtype == dt
            assert args["OUT"].dtype == (torch.int32 if p["out_int32"] else torch.int64)
            assert (args["M"], args["N"], args["stride_bb"], args["stride_qb"], args["stride_ob"]) == (M, N, M, N, N)
            assert (args["W"], args["STEPS"], args["TOP"]) == mod.search_plan(M, cfg)
            assert args["RIGHT"] == bool(p["right"]) and args["CHUNK"] == mod._chunk(cfg)
            assert (args["BLOCK"], args["COARSE"]) == (cfg["BLOCK"], cfg["COARSE"])
            assert mod.grid(cfg, p) == (-(-N // cfg["BLOCK"]), B)
            e, ob = (8 if p["dtype"] == "int64" else 4), (4 if p["out_int32"] else 8)
            assert mod.bytes_moved(p) == B * M * e + B * N * (e + ob)
            assert mod.flops(p) == B * N * M.bit_length()
            assert H.meta_nbytes(args) < 4 * 2**30
            coarse_its = cfg["COARSE"] // mod._chunk(cfg) if cfg["COARSE"] else 0
            assert mod.loop_iterations(cfg, p) == coarse_its + args["STEPS"]


def test_hooks_on_small_points_and_inputs():
    """make_inputs (sorted rows, the seed's, exact hits), the reference's and the baseline's
    dtypes, 1-D inputs, empty queries."""
    import torch

    mod = load_example(KERNEL)
    p = _pt(3, 50, 70, "int64", 1, key_range=40)
    inputs = mod.make_inputs(p, seed=1, device="cpu")
    b, q = inputs["boundaries"], inputs["queries"]
    assert b.shape == (3, 50) and q.shape == (3, 70) and b.dtype == q.dtype == torch.int64
    assert bool((b[:, 1:] >= b[:, :-1]).all()) and inputs["right"] is True and inputs["out_int32"] is False
    assert bool((q[:, ::10, None] == b[:, None, :]).any(-1).all())           # every tenth query is a boundary
    assert torch.equal(mod.make_inputs(p, seed=1, device="cpu")["queries"], q)
    assert not torch.equal(mod.make_inputs(p, seed=2, device="cpu")["queries"], q)
    f = mod.make_inputs(_pt(1, 255, 40, "fp32", 0, out_int32=1), device="cpu")
    assert f["boundaries"].dtype == torch.float32 and float(f["queries"].std()) > 0.5
    ref = mod.reference(inputs)
    assert ref.shape == (3, 70) and ref.dtype == torch.int64
    assert mod.torch_baseline(f).dtype == torch.int32
    e = mod.searchsorted(torch.arange(5.0), torch.ones(0))
    assert e.shape == (0,) and e.dtype == torch.int64


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    b = torch.arange(8.0)[None]
    q = torch.ones(1, 4)
    with pytest.raises(ValueError, match="BLOCK=48"):
        mod.searchsorted(b, q, BLOCK=48)
    with pytest.raises(ValueError, match="COARSE=8"):
        mod.searchsorted(b, q, COARSE=8)
    with pytest.raises(ValueError, match="num_warps=3"):
        mod.searchsorted(b, q, num_warps=3)
    with pytest.raises(ValueError, match="share one dtype"):
        mod.searchsorted(b, q.double())
    with pytest.raises(ValueError, match="share one dtype"):
        mod.searchsorted(b.half(), q.half())
    with pytest.raises(ValueError, match="expected boundaries"):
        mod.searchsorted(b, torch.ones(2, 4))
    with pytest.raises(ValueError, match="M=0"):
        mod.searchsorted(torch.ones(1, 0), q)
    with pytest.raises(ValueError, match="dtype 'fp16'"):
        mod.make_inputs(_pt(1, 4, 4, "fp16", 0), device="cpu")


def test_examples_import_without_torch():
    """The launcher contract: the module imports with no torch (it is imported inside the functions)."""
    proc = H.imports_without_torch(CASES)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr[-2000:]


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["sm_90", "sm_120"])
def test_example_compiles(shared_cache, arch):
    """BASELINE and three more (BLOCK 256-2048, every COARSE formulation, 2-8 warps) compile at
    every point without spills, within 8 BLOCK bytes of shared memory (and the arch's limit)."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    assert COMPILE_CFGS[0] == mod.BASELINE
    limit = H200_SMEM_PER_BLOCK if arch == "sm_90" else SM120_SMEM_PER_BLOCK
    for p in mod.POINTS:
        for cfg in COMPILE_CFGS:
            res = compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch=arch,
                                 num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
            assert res.status == "ok", f"{cfg} at {p} on {arch}: {res.status}: {res.message}"
            assert res.n_regs > 0 and res.n_spills == 0 and res.shared <= min(8 * cfg["BLOCK"], limit), (cfg, p)


# ----------------------------------------------------------------- the subprocess side
if __name__ == "__main__":
    H.run_cases(sys.argv[1], CASES[sys.argv[1]], TOL, prepare=_prepare, baseline=True)
