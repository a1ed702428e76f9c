"""examples/top_p_renorm.py (top-p / nucleus renormalization of sampling probabilities without a
sort: one CTA per row, a pivot search on the probability value by repeated walks over the row,
then a renormalizing walk) against its fp64 sort-based torch reference on the CPU through
Triton's interpreter, the search's round counts against the launcher's Python replay
(search_rounds, which cta_iterations uses), its launcher hooks against the shapes, its study
sweep against the points, and a compile for sm_90 and sm_120 from its own ``example_args``.

As in test_examples_round15_a.py, the interpreter must be chosen before triton is imported, so
the cases run in a subprocess (this file run as a script: ``python tests/test_examples_round18_b.py
top_p_renorm``) that prints one JSON line; the tests assert per case. Per case the subprocess
checks the output against the reference, each row's search rounds (the kernel's ROUNDS output)
against search_rounds, the kept mass (>= top_p) and the row sums (1), and torch_baseline's output
where the semantics agree (no ties).

Shapes are small, odd and ragged: V not a multiple of BLOCK_V (a masked tail chunk: padded lanes
load -1, below every pivot), V a multiple (no tail), V below BLOCK_V (one masked chunk); PIVOTS
1 / 2 / 4, LOOP_STAGES 1-3, 4 / 8 / 16 warps; per-row top_p from 0.5 to 0.95, top_p = 1 (every
nonzero kept), rows so peaked that the max alone reaches top_p (a nucleus of one), probabilities
with exact ties at the threshold (softmax of integer logits: the whole tie group kept), rows with
exact zeros (underflowed probabilities), probs and out as row-strided views of wider buffers, a
tolerance tol > 0 (the early exit: a superset of the nucleus, every extra element within tol of
t*), and the round cap (MAX_ROUNDS patched to 2: lo still a valid threshold).

Tolerance (x max|ref|, absolute, per element): the reference is fp64 on the same fp32 inputs.
When the kernel keeps the same set, each output element is p * (1 / mass) in fp32: two roundings
(~1.2e-7 relative) plus the error of the fp32 mass, a per-lane sequential sum over <= V / BLOCK_V
chunks then a tree over BLOCK_V lanes: <= (V / BLOCK_V + log2 BLOCK_V) 2^-24 < 3e-6 relative
here. 1e-5 x max|ref| bounds that with margin. A different kept set would be an error of t* /
mass, far above it; it can only happen when the fp32 mass of a pivot ties top_p x the row sum
within that 3e-6 (not at these seeds: the search's rounds also agree exactly with the fp64
replay, except at top_p = 1, where the target is the row sum itself: there dropping an element
below 2^-24 of the sum leaves the fp32 mass equal to it, so the kernel may stop a few rounds
early with those elements dropped, an error below 2^-24 absolute). Measured: max error <= 6e-8 absolute (< 2e-7 of max|ref|).
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
KERNEL = "top_p_renorm"
TOL = {"fp32": 1e-5}
BASELINE_TOL = {"fp32": 1e-4}
H200_SMS = 132
H200_SMEM_PER_BLOCK = 227 * 1024
SM120_SMEM_PER_BLOCK = 99 * 1024


def _cfg(bv, piv, ls, w, st=1):
    return {"BLOCK_V": bv, "PIVOTS": piv, "LOOP_STAGES": ls, "num_warps": w, "num_stages": st}


def _pt(B, V, p_lo, p_hi, s_lo, s_hi, tol=None):
    p = {"B": B, "V": V, "top_p_min": p_lo, "top_p_max": p_hi, "scale_min": s_lo, "scale_max": s_hi,
         "dtype": "fp32"}
    if tol is not None:
        p["tol"] = tol
    return p


# case name -> (point, cfg); comments: chunks a walk (tail)
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        # 8 chunks of 128, tail 105; bisection, mixed top_p, peaked to diffuse rows
        "ragged_bisect": (_pt(5, 1001, 0.5, 0.95, 1.0, 5.0), _cfg(128, 1, 1, 4)),
        # 6 chunks of 256, tail 229; two pivots, cp.async 2 stages
        "ragged_two_pivots": (_pt(6, 1509, 0.6, 0.9, 2.0, 4.0), _cfg(256, 2, 2, 8, 2)),
        # 4 chunks of 512 (no tail); four pivots, 3 stages, 16 warps
        "even_four_pivots": (_pt(4, 2048, 0.9, 0.9, 1.5, 3.0), _cfg(512, 4, 3, 16)),
        # V < BLOCK_V: one masked chunk; four pivots on 4 warps
        "one_chunk": (_pt(4, 300, 0.5, 0.95, 1.0, 4.0), _cfg(512, 4, 1, 4, 2)),
        # top_p 1: all nonzero kept; 2 pivots
        "top_p_one": (_pt(3, 700, 1.0, 1.0, 1.0, 2.0), _cfg(128, 2, 2, 4)),
        # scale 20-25: the max alone reaches top_p 0.5-0.7 (a nucleus of one), many exact zeros
        "peaked_zeros": (_pt(4, 900, 0.5, 0.7, 20.0, 25.0), _cfg(256, 1, 3, 8)),
        # integer logits: ties at the threshold, the whole tie group kept
        "ties": (_pt(5, 640, 0.5, 0.95, 1.0, 1.0), _cfg(64, 2, 1, 8)),
        # probs and out as row-strided views of wider buffers
        "strided": (_pt(4, 777, 0.7, 0.95, 2.0, 3.0), _cfg(128, 4, 2, 16)),
    },
}
STRIDED = "strided"
TIES = "ties"
# property-checked cases (not exact against the reference)
TOL_CASE = ("tol", _pt(5, 1200, 0.8, 0.95, 1.0, 2.0, tol=0.05), _cfg(256, 2, 2, 4))
CAP_CASE = ("cap", _pt(5, 1200, 0.8, 0.95, 1.0, 2.0), _cfg(256, 1, 1, 8))

# configs compiled for each arch at the module's first POINT (sm_90: BASELINE first)
COMPILE_CFGS: dict[str, list[dict]] = {
    KERNEL: [_cfg(2048, 2, 2, 8), _cfg(4096, 4, 2, 8), _cfg(1024, 1, 1, 4), _cfg(4096, 2, 1, 16)],
}
SM120_CFGS = [_cfg(2048, 2, 2, 8), _cfg(4096, 1, 2, 16), _cfg(1024, 4, 1, 4)]


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """Edit a case's inputs: integer-logit (tied) probabilities; row-strided probs."""
    import torch

    B, V = point["B"], point["V"]
    if name == TIES:
        gen = torch.Generator().manual_seed(7)
        logits = torch.randint(0, 8, (B, V), generator=gen).float()
        inputs["probs"] = torch.softmax(logits, dim=1)
    if name == STRIDED:
        wide = torch.zeros((B, V + 13))
        wide[:, :V] = inputs["probs"]
        inputs["probs"] = wide[:, :V]
        assert inputs["probs"].stride() == (V + 13, 1)


def _smem_bound(cfg) -> int:
    """The walks' cp.async buffers: LOOP_STAGES - 1 chunks of fp32, + the reductions' scratch
    (up to 8 KiB in the sm_90 compiles: 2 KiB at 4 warps, 4 at 8, 8 at 16)."""
    return (cfg["LOOP_STAGES"] - 1) * 4 * cfg["BLOCK_V"] + 8192


# ----------------------------------------------------------------- the pytest side
def _results() -> dict:
    return H.interpreter_results(HERE, KERNEL)


@pytest.mark.parametrize("name", list(CASES[KERNEL]))
def test_example_matches_reference(name):
    res = _results()[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    point = CASES[KERNEL][name][0]
    assert res["shape"] == [point["B"], point["V"]]
    assert res["n_bad"] == 0, H.mismatch(res, name)
    assert res["launch"]["n_bad"] == 0, H.mismatch(res["launch"], f"{name} launch")
    if name == "top_p_one":     # target = the row sum: fp32 masses tie it (below)
        assert all(k <= r for k, r in zip(res["rounds"], res["replay_rounds"])), res
    else:
        assert res["rounds"] == res["replay_rounds"], (name, res["rounds"], res["replay_rounds"])
    assert res["mass_ok"] and res["sums_ok"], res
    if name != TIES:            # the sort-based baseline splits a tie group
        assert res["baseline"]["n_bad"] == 0, H.mismatch(res["baseline"], f"{name} baseline")
    if name == "peaked_zeros":
        assert res["kept_min"] == 1 and res["zeros"] > 0, res
    if name == TIES:
        assert res["tie_kept_whole"], res
    if name == "top_p_one":
        assert res["kept_all_nonzero"], res


@pytest.mark.parametrize("which", ["tol", "cap"])
def test_early_exits_keep_a_valid_superset(which):
    """tol > 0 and the round cap (MAX_ROUNDS 2): the kept set contains the exact nucleus, its mass
    reaches top_p, rows sum to 1; with tol every extra element is within tol of t*; the capped
    rows stop at 2 rounds and tol-exits take fewer rounds than the exact search."""
    res = _results()[which]
    assert "error" not in res, f"{which}: {res.get('error')}"
    assert res["superset"] and res["mass_ok"] and res["sums_ok"], res
    if which == "tol":
        assert res["extra_within_tol"] and sum(res["rounds"]) < sum(res["exact_rounds"]), res
        assert res["rounds"] == res["replay_rounds"], res
    else:
        assert max(res["rounds"]) == 2 and res["extra"] > 0, res


def test_cases_cover_every_code_path():
    """Each tunable takes at least two values; V ragged / a multiple / below BLOCK_V; PIVOTS 1, 2, 4."""
    H.assert_tunables_covered(CASES)
    cases = list(CASES[KERNEL].values())
    assert {p["V"] % c["BLOCK_V"] == 0 for p, c in cases} == {True, False}
    assert any(p["V"] < c["BLOCK_V"] for p, c in cases)
    assert {c["PIVOTS"] for _, c in cases} == {1, 2, 4}
    assert {c["LOOP_STAGES"] for _, c in cases} == {1, 2, 3}


def test_sweep_fits_the_points():
    """The study sweep: 54 configs over the TUNABLES with BASELINE among them; at every POINT each
    config is valid, launches B >= 64 CTAs (one a row) and its cp.async buffers fit an H200's 227
    KiB per block. (Every config was compiled for sm_90 with triton 3.6.0 at every point: all 162
    compile in 0.1-2 s each (~20 s in all, with LOOP_STAGES 3 too); 2-16.3 KiB of shared memory
    ((LOOP_STAGES - 1) fp32 chunks or the reductions' scratch); registers 32-183: BLOCK_V 1024
    32-56, 2048 32-96, 4096 on 16 warps 32-64, on 8 warps 48-108, on 4 warps 80-183 (the most with
    4 pivots, LOOP_STAGES 2).
    2 of the 54 configs keep 4 bytes in local memory at every point: BLOCK_V 4096 / 4 pivots /
    LOOP_STAGES 1 / 4 warps (128 registers) and 4096 / 4 / 2 / 16 warps (64); none other spills.)
    The points differ in character: 64 rows (fewer CTAs than SMs, every row resident and in L2),
    256 rows of 0.6 MB (the resident rows outgrow L2) with mixed top_p, 1024 short rows."""
    SWEEP_AXES = H.study_sweeps([KERNEL], "held-out-18")[KERNEL][2]     # scripts/rank_study.py SWEEPS
    mod = load_example(KERNEL)
    assert set(SWEEP_AXES) == set(mod.TUNABLES)
    assert sum(len(v) >= 2 for v in SWEEP_AXES.values()) >= len(SWEEP_AXES) - 1
    cfgs = [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]
    assert 40 <= len(cfgs) <= 72 and mod.BASELINE in cfgs
    for p in mod.POINTS:
        for c in cfgs:
            mod._check_cfg(c)
            assert mod.grid(c, p) == p["B"] >= 64, (p, c)
            assert _smem_bound(c) <= H200_SMEM_PER_BLOCK, (p, c)
    assert sorted(p["B"] for p in mod.POINTS) == [64, 256, 1024]
    assert any(p["top_p_min"] < p["top_p_max"] for p in mod.POINTS)
    assert 64 * 128256 * 4 < 50e6 < 256 * 151936 * 4              # all rows fit L2 / do not


def test_launcher_hooks_agree_with_shapes():
    """At every default point: example_args has the shapes and types of a launch (meta tensors),
    bytes_moved counts probs and out once, grid / loop_iterations / cta_iterations are the row
    walks (2 + the replayed rounds); inputs < 4 GB; each point's launch stays under ~3 ms at
    4.8 TB/s even if every walk of the median row re-read DRAM."""
    import torch

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "cta_iterations", "example_args", "torch_baseline", "top_p_renorm", "search_rounds"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert not hasattr(mod, "secondary_kernels")                 # one kernel a launch
    assert len(mod.POINTS) == 3
    for cfg in [mod.BASELINE] + COMPILE_CFGS[KERNEL]:
        for p in mod.POINTS:
            args = mod.example_args(cfg, p)
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for v in args.values())
            B, V = p["B"], p["V"]
            assert args["P"].shape == args["OUT"].shape == (B, V)
            assert args["P"].dtype == args["OUT"].dtype == args["TOP_P"].dtype == torch.float32
            assert args["ROUNDS"].dtype == torch.int32 and args["ROUNDS"].shape == args["TOP_P"].shape == (B,)
            assert (args["V"], args["stride_p"], args["stride_o"]) == (V, V, V)
            assert args["tol"] == 0.0 and args["max_rounds"] == mod.MAX_ROUNDS
            assert {k: args[k] for k in ("BLOCK_V", "PIVOTS", "LOOP_STAGES")} == \
                {k: cfg[k] for k in ("BLOCK_V", "PIVOTS", "LOOP_STAGES")}
            assert mod.bytes_moved(p) == 8 * B * V + 8 * B and mod.flops(p) == 150 * B * V
            assert H.meta_nbytes(args) < 4 * 2**30
            chunks = -(-V // cfg["BLOCK_V"])
            its = mod.cta_iterations(cfg, p)
            assert len(its) == B == mod.grid(cfg, p) and all(i % chunks == 0 and i >= 3 * chunks for i in its)
            med = mod.loop_iterations(cfg, p)
            assert med in its and 5 * chunks <= med <= 26 * chunks, (p, cfg, med / chunks)
            assert med / chunks * B * V * 4 / 4.8e12 < 3e-3


def test_hooks_on_small_points_and_inputs():
    """make_inputs' tensors (shapes, rows summing to 1, concentrated not uniform, top_p in range,
    the seed's), search_rounds on a hand-made row, the reference's and baseline's shapes."""
    import torch

    mod = load_example(KERNEL)
    p = _pt(16, 5000, 0.5, 0.95, 2.0, 6.0)
    inp = mod.make_inputs(p, seed=0, device="cpu")
    probs, top_p = inp["probs"], inp["top_p"]
    assert probs.shape == (16, 5000) and probs.dtype == top_p.dtype == torch.float32 and top_p.shape == (16,)
    assert float((probs.sum(1) - 1).abs().max()) < 1e-5 and float(probs.min()) >= 0
    assert float(probs.max(1).values.min()) > 20 / 5000                 # peaked, never uniform
    assert 0.5 <= float(top_p.min()) and float(top_p.max()) <= 0.95 and float(top_p.std()) > 0.05
    assert torch.equal(mod.make_inputs(p, seed=1, device="cpu")["probs"], mod.make_inputs(p, seed=1, device="cpu")["probs"])
    assert not torch.equal(mod.make_inputs(p, seed=2, device="cpu")["probs"], probs)
    ref = mod.reference(inp)
    assert ref.shape == (16, 5000) and ref.dtype == torch.float32
    assert float((ref.sum(1) - 1).abs().max()) < 1e-5
    base = mod.torch_baseline(inp)
    assert base.shape == (16, 5000) and float((base - ref).abs().max()) < 1e-4
    # a hand row: [0.5, 0.3, 0.2] with top_p 0.7 -> {0.5, 0.3}; bisection: pivots 0.25 (ok: lo 0.3),
    # 0.4 (not: hi 0.3) -> 2 rounds; a one-element row one (lo 0 -> the element)
    row = torch.tensor([[0.2, 0.5, 0.3]])
    assert mod.search_rounds(row, torch.tensor([0.7]), 1).tolist() == [2]
    assert mod.search_rounds(torch.tensor([[1.0]]), torch.tensor([0.9]), 2).tolist() == [1]
    out = mod.reference({"probs": row, "top_p": torch.tensor([0.7]), "tol": 0.0})
    assert torch.allclose(out, torch.tensor([[0.0, 0.625, 0.375]]))
    # empty batch: no launch
    assert mod.top_p_renorm(torch.ones(0, 8), 0.9).shape == (0, 8)


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    p = torch.full((4, 16), 1 / 16)
    with pytest.raises(ValueError, match="BLOCK_V=48"):
        mod.top_p_renorm(p, 0.9, BLOCK_V=48)
    with pytest.raises(ValueError, match="PIVOTS=3"):
        mod.top_p_renorm(p, 0.9, PIVOTS=3)
    with pytest.raises(ValueError, match="LOOP_STAGES=0"):
        mod.top_p_renorm(p, 0.9, LOOP_STAGES=0)
    with pytest.raises(ValueError, match="2-D fp32"):
        mod.top_p_renorm(p.half(), 0.9)
    with pytest.raises(ValueError, match="top_p must be"):
        mod.top_p_renorm(p, torch.full((3,), 0.9))
    with pytest.raises(ValueError, match="tol=1.5"):
        mod.top_p_renorm(p, 0.9, tol=1.5)
    with pytest.raises(ValueError, match="out must be"):
        mod.top_p_renorm(p, 0.9, out=torch.empty(4, 17))
    with pytest.raises(ValueError, match="top_p range"):
        mod.make_inputs(_pt(2, 8, 0.9, 0.5, 1.0, 2.0), device="cpu")


def test_examples_import_without_torch():
    """The launcher contract: a module imports with no torch (it is imported inside the functions)."""
    proc = H.imports_without_torch([KERNEL])
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr[-2000:]


@pytest.mark.slow
def test_example_compiles_sm90(shared_cache):
    """On sm_90: BASELINE and three more (1024-4096 chunks, 1-4 pivots, 4-16 warps, 1-2 loop
    stages) compile without spills inside 227 KiB; the walks' loads go through cp.async at
    LOOP_STAGES >= 2."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    assert COMPILE_CFGS[KERNEL][0] == mod.BASELINE
    for cfg, res in H.compile_results(KERNEL, COMPILE_CFGS[KERNEL], "sm_90"):
        assert res.status == "ok", f"{cfg} on sm_90: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.shared <= H200_SMEM_PER_BLOCK and res.n_spills == 0, (cfg, res.n_spills)
        assert res.shared <= _smem_bound(cfg), (cfg, res.shared)
    res = compile_kernel(mod._kernel, args=mod.example_args(mod.BASELINE, mod.POINTS[0]), arch="sm_90",
                         num_warps=8, num_stages=1, keep_ir=True)
    assert res.status == "ok", res.message
    assert "cp.async" in res.ptx


@pytest.mark.slow
def test_example_compiles_sm120(shared_cache):
    """On sm_120 (99 KiB a block) the same kernel compiles and fits."""
    for cfg, res in H.compile_results(KERNEL, SM120_CFGS, "sm_120"):
        assert res.status == "ok", f"{cfg} on sm_120: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.shared <= SM120_SMEM_PER_BLOCK and res.n_spills == 0


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["sm_120", "sm_90"])
def test_other_points_compile(shared_cache, arch):
    """The second and third points (other V, B: the same specialization) at a config fitting both archs."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    cfg = _cfg(2048, 4, 2, 8)
    for p in mod.POINTS[1:]:
        res = compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch=arch, num_warps=cfg["num_warps"],
                             num_stages=cfg["num_stages"])
        assert res.status == "ok" and res.n_spills == 0, f"{p} on {arch}: {res.status}: {res.message}"
        assert res.shared <= (H200_SMEM_PER_BLOCK if arch == "sm_90" else SM120_SMEM_PER_BLOCK)


# ----------------------------------------------------------------- the subprocess side
def _checks(mod, inputs, out, exact) -> dict:
    """Kept-set properties of an output: its mass reaches top_p, rows sum to 1, the exact nucleus
    is inside it; the extra elements and how close they sit to t*."""
    import torch

    p = inputs["probs"].double()
    kept = out > 0
    mass = torch.where(kept, p, torch.zeros_like(p)).sum(1)
    target = inputs["top_p"].double() * p.sum(1)
    ex = exact > 0
    t_star = torch.where(ex, p, torch.full_like(p, float("inf"))).amin(1)
    extra = kept & ~ex
    tol = inputs.get("tol", 0.0)
    return {"mass_ok": bool((mass >= target * (1 - 1e-6)).all()),
            "sums_ok": bool(((out.double().sum(1) - 1).abs() < 1e-5).all()),
            "superset": bool((kept | ~ex).all()), "extra": int(extra.sum()),
            "extra_within_tol": bool((~extra | (p >= (1 - tol) * t_star[:, None] * (1 - 1e-6))).all())}


def _run_cases() -> None:
    """Under TRITON_INTERPRET=1: each case through top_p_renorm (with its rounds), launch and
    torch_baseline against reference; the two early-exit cases by their properties; one JSON line."""
    import torch

    assert os.environ.get("TRITON_INTERPRET") == "1", "run with TRITON_INTERPRET=1"
    mod = load_example(KERNEL)
    results = {}
    for name, (point, cfg) in CASES[KERNEL].items():
        try:
            inputs = mod.make_inputs(point, seed=len(name), device="cpu")
            _prepare(name, point, inputs)
            probs, top_p = inputs["probs"], inputs["top_p"]
            B, V = probs.shape
            rounds = torch.full((B,), -1, dtype=torch.int32)
            if name == STRIDED:
                wide = torch.full((B, V + 5), float("nan"))
                out = mod.top_p_renorm(probs, top_p, out=wide[:, 2:V + 2], rounds=rounds, **cfg)
                assert out.data_ptr() == wide[:, 2:].data_ptr() and not wide[:, :2].isfinite().any()
            else:
                out = mod.top_p_renorm(probs, top_p, rounds=rounds, **cfg)
            ref = mod.reference(inputs)
            r = H.compare(out, ref, "fp32", TOL)
            r["launch"] = H.compare(mod.launch(inputs, cfg), ref, "fp32", TOL)
            r["baseline"] = H.compare(mod.torch_baseline(inputs), ref, "fp32", BASELINE_TOL)
            r["rounds"] = rounds.tolist()
            r["replay_rounds"] = mod.search_rounds(probs, top_p, cfg["PIVOTS"]).tolist()
            r.update(_checks(mod, inputs, out, ref))
            kept = (out > 0).sum(1)
            r["kept_min"] = int(kept.min())
            r["zeros"] = int((probs == 0).sum())
            r["kept_all_nonzero"] = bool(((out > 0) == (probs > 0)).all())
            if name == TIES:       # every value present in a row is kept for all its copies or none
                same = probs[:, :, None] == probs[:, None, :]
                k = out > 0
                r["tie_kept_whole"] = bool(((k[:, :, None] == k[:, None, :]) | ~same).all())
                r["tie_at_threshold"] = int(sum(int((probs[i] == probs[i][k[i]].min()).sum()) > 1 for i in range(B)))
            results[name] = r
        except Exception as exc:          # reported per case by the test
            results[name] = {"error": f"{type(exc).__name__}: {exc}"}
    for name, point, cfg in (TOL_CASE, CAP_CASE):
        try:
            inputs = mod.make_inputs(point, seed=3, device="cpu")
            probs, top_p = inputs["probs"], inputs["top_p"]
            rounds = torch.full((probs.shape[0],), -1, dtype=torch.int32)
            saved = mod.MAX_ROUNDS
            if name == "cap":
                mod.MAX_ROUNDS = 2
            try:
                out = mod.top_p_renorm(probs, top_p, tol=inputs["tol"], rounds=rounds, **cfg)
            finally:
                mod.MAX_ROUNDS = saved
            r = _checks(mod, inputs, out, mod.reference(inputs))
            r["rounds"] = rounds.tolist()
            r["replay_rounds"] = mod.search_rounds(probs, top_p, cfg["PIVOTS"], inputs["tol"]).tolist()
            r["exact_rounds"] = mod.search_rounds(probs, top_p, cfg["PIVOTS"]).tolist()
            results[name] = r
        except Exception as exc:
            results[name] = {"error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(results))


if __name__ == "__main__":
    _run_cases()
