"""examples/fused_linear_ce.py (fused LM head + cross-entropy forward: [BLOCK_T, BLOCK_V] logit
tiles by tl.dot over D, an online max / sum-exp in fp32, the vocabulary split over SPLIT_V CTAs
and merged by a second kernel; the [T, V] logits never exist) against its fp64 torch reference
on the CPU through Triton's interpreter, its launcher hooks against the shapes, its study sweep
against the points, and a compile for sm_90 and sm_120 from its own ``example_args``.

As in test_examples_round21_b.py the interpreter cases run in a subprocess (this file run as a
script: ``python tests/test_examples_round22_c.py fused_linear_ce``) that prints one JSON line;
bf16 dot operands are widened to fp32 inside the interpreter only, and under triton 3.6 with
numpy >= 2.3 the runtime loop bounds are read as ints (see example_harness.patch_interpreter_index).

Shapes are small, odd and ragged: T below one token tile (wrapped rows, masked stores) and not
a multiple of BLOCK_T, D not a multiple of BLOCK_D (the masked EVEN_D=False walk), V not a
multiple of BLOCK_V (the last tile's columns masked to -inf, EVEN_V=False), SPLIT_V 1 (one
range) and 2-5 with splits that get fewer tiles and a split past V (no tiles: it stores m =
-1e30, s = 0, which the merge must absorb), h a column slice of a wider buffer (its row stride
read in place), all tokens ignored, logits of |z| ~ 100+ (an exp without the max would
overflow), targets on the vocabulary's and the splits' edges; fp16 and bf16.

Tolerance (x max|ref|, absolute, per token): the reference is fp64 on the same rounded h and W;
the kernel's logits are fp32 dot products of D <= 200 terms (~1e-6 relative) and the
logsumexp is fp32, so 1e-5 bounds it. torch_baseline (logits rounded to h's dtype, then fp32
cross-entropy) is held to the harness's dtype tolerances (bf16 1e-2, fp16 2e-3).
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
KERNEL = "fused_linear_ce"
ROLE = "held-out-22"
SM120_SMEM_PER_BLOCK = 99 * 1024
H200_SMEM_PER_BLOCK = 227 * 1024
H200_SMS = 132
TOL = {"bf16": 1e-5, "fp16": 1e-5}

# the study sweep (scripts/rank_study.py's SWEEPS entry, added by the lead, must equal it)
SWEEP_AXES = {"BLOCK_T": [64, 128], "BLOCK_V": [64, 128], "BLOCK_D": [32, 64], "SPLIT_V": [16, 64],
              "num_warps": [4, 8], "num_stages": [3, 4]}


def _cfg(bt, bv, bd, split, w=4, st=3):
    return {"BLOCK_T": bt, "BLOCK_V": bv, "BLOCK_D": bd, "SPLIT_V": split, "num_warps": w, "num_stages": st}


def _pt(T, D, V, dtype="bf16", ignore=0.2):
    return {"T": T, "D": D, "V": V, "dtype": dtype, "ignore": ignore}


# case -> (point, cfg); comments: token tiles x vocab tiles (per split) x D steps
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        # all even: 2 token tiles of 16, 4 vocab tiles of 32 in 2 splits of 2, 2 D steps of 32
        "even_bf16": (_pt(32, 64, 128), _cfg(16, 32, 32, 2)),
        # T 13 < one tile of 16 (3 wrapped rows); V 300: 5 tiles of 64 (tail 44), SPLIT 3: 2 / 2 / 1;
        # D 80: 3 steps of 32 (tail 16)
        "ragged_fp16": (_pt(13, 80, 300, "fp16"), _cfg(16, 64, 32, 3, 8, 4)),
        # 2 token tiles of 32 (tail 8); V 100: 7 tiles of 16 (tail 4), SPLIT 5: 2 / 2 / 2 / 1 / 0 (a split
        # past V); D 48: 3 steps of 16; half the tokens ignored
        "empty_split_bf16": (_pt(40, 48, 100, "bf16", 0.5), _cfg(32, 16, 16, 5)),
        # SPLIT_V 1: one vocab tile of 64 == V; D 64 in one step; 2 token tiles of 16 (tail 5)
        "one_split_fp16": (_pt(21, 64, 64, "fp16"), _cfg(16, 64, 64, 1, 8)),
        # h the first 40 columns of a [17, 64] buffer (row stride 64); V 90: 3 tiles of 32 (tail 26),
        # SPLIT 2: 2 / 1; D 40: 2 steps of 32 (tail 8)
        "strided_h_bf16": (_pt(17, 40, 90), _cfg(32, 32, 32, 2, 8, 4)),
        # every token ignored: the loss is all zero
        "all_ignored_fp16": (_pt(9, 32, 48, "fp16", 0.0), _cfg(16, 16, 32, 2)),
        # logits of |z| ~ 100+ (W x 50), targets on the edges of V and of the splits
        "large_logits_bf16": (_pt(24, 64, 200), _cfg(16, 32, 16, 3, 4, 4)),
    },
}
STRIDED = "strided_h_bf16"
ALL_IGNORED = "all_ignored_fp16"
LARGE = "large_logits_bf16"


def _prepare(name: str, point: dict, inputs: dict) -> None:
    import torch

    if name == STRIDED:
        h = inputs["h"]
        wide = torch.full((h.shape[0], h.shape[1] + 24), 5.0, dtype=h.dtype)
        wide[:, : h.shape[1]] = h
        inputs["h"] = wide[:, : h.shape[1]]
    if name == ALL_IGNORED:
        inputs["targets"][:] = -100
    if name == LARGE:
        inputs["weight"] = (inputs["weight"].float() * 50.0).to(inputs["weight"].dtype)
        V = point["V"]
        vps = load_example(KERNEL).plan(CASES[KERNEL][name][1], point)["V_PER_SPLIT"]
        edges = [0, V - 1, vps - 1, vps, 2 * vps - 1, 2 * vps, 31, 32]
        inputs["targets"][: len(edges)] = torch.tensor(edges, dtype=torch.int64)


# ----------------------------------------------------------------- the pytest side
def _results() -> dict:
    return H.interpreter_results(HERE, KERNEL)


@pytest.mark.parametrize("name", list(CASES[KERNEL]))
def test_example_matches_reference(name):
    res = _results()[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    p = CASES[KERNEL][name][0]
    assert res["shape"] == [p["T"]] and res["dtype"] == "torch.float32" and res["contiguous"]
    assert res["n_bad"] == 0, H.mismatch(res, f"{name} launch")
    assert res["ignored_zero"], f"{name}: an ignored token's loss is not 0"
    assert abs(res["mean"] - res["ref_mean"]) <= 1e-5 * max(1.0, abs(res["ref_mean"])), res
    assert res["baseline"]["n_bad"] == 0, H.mismatch(res["baseline"], f"{name} torch_baseline")
    if name == ALL_IGNORED:
        assert res["scale"] == 0.0 and res["max_err"] == 0.0 and res["mean"] == 0.0
    if name == LARGE:
        assert res["scale"] > 50.0, res            # logits big enough that exp() without the max overflows


def test_cases_cover_every_code_path():
    """Every tunable at >= 2 values; both dtypes; EVEN_D / EVEN_V both ways; T below and not a
    multiple of BLOCK_T; SPLIT_V 1 and > 1; a split with no tiles, splits of unequal tiles; a strided h."""
    H.assert_tunables_covered(CASES)
    mod = load_example(KERNEL)
    cases = list(CASES[KERNEL].values())
    plans = [(p, c, mod.plan(c, p)) for p, c in cases]
    assert {p["dtype"] for p, _ in cases} == set(mod.DTYPES)
    assert {pl["EVEN_D"] for _, _, pl in plans} == {True, False}
    assert {pl["EVEN_V"] for _, _, pl in plans} == {True, False}
    assert any(p["T"] < c["BLOCK_T"] for p, c in cases) and any(p["T"] % c["BLOCK_T"] for p, c in cases)
    assert any(p["T"] % c["BLOCK_T"] == 0 for p, c in cases)
    assert {c["SPLIT_V"] == 1 for _, c in cases} == {True, False}
    assert any(0 in mod.cta_iterations(c, p) for p, c in cases)
    assert any(0 not in mod.cta_iterations(c, p) and len(set(mod.cta_iterations(c, p))) > 1 for p, c in cases)
    assert all(n in CASES[KERNEL] for n in (STRIDED, ALL_IGNORED, LARGE))


def test_strided_h_is_read_in_place():
    import torch

    mod = load_example(KERNEL)
    h = torch.zeros(17, 64, dtype=torch.bfloat16)[:, :40]
    w = torch.zeros(90, 40, dtype=torch.bfloat16)
    part = torch.empty(2, 2, 17)
    args = mod._kernel_args(h, w, torch.zeros(17, dtype=torch.int64), part, torch.empty(17), _cfg(32, 32, 32, 2))
    assert (args["stride_ht"], args["stride_wv"], args["stride_pp"], args["stride_ps"]) == (64, 40, 34, 17)
    assert (args["V_PER_SPLIT"], args["EVEN_D"], args["EVEN_V"]) == (64, False, False)


def _sweep_cfgs():
    return [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]


def test_launcher_hooks_agree_with_shapes():
    """At every point and sweep config: example_args on meta with the launch's shapes, dtypes and
    strides, the grid, the walks per CTA, the merge, bytes_moved / flops, inputs < 4 GB."""
    import torch

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "cta_iterations", "secondary_kernels", "example_args", "torch_baseline",
               "fused_linear_cross_entropy", "merge_example_args"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert len(mod.POINTS) == 3 and set(mod.BASELINE) == set(mod.TUNABLES)
    dts = {"fp16": torch.float16, "bf16": torch.bfloat16}
    for cfg in _sweep_cfgs():
        for p in mod.POINTS:
            T, D, V = p["T"], p["D"], p["V"]
            bt, bv, bd, sp = cfg["BLOCK_T"], cfg["BLOCK_V"], cfg["BLOCK_D"], cfg["SPLIT_V"]
            args = mod.example_args(cfg, p)
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for v in args.values())
            assert args["H"].shape == (T, D) and args["H"].dtype == dts[p["dtype"]] and args["H"].stride() == (D, 1)
            assert args["W"].shape == (V, D) and args["W"].dtype == dts[p["dtype"]]
            assert args["TGT"].shape == (T,) and args["TGT"].dtype == torch.int64
            assert args["PART"].shape == (2, sp, T) and args["PART"].dtype == torch.float32
            assert args["ZT"].shape == (T,) and args["ZT"].dtype == torch.float32
            assert (args["T"], args["V"], args["D"], args["stride_ht"], args["stride_wv"]) == (T, V, D, D, D)
            assert (args["stride_pp"], args["stride_ps"]) == (sp * T, T)
            tiles_v = -(-V // bv)
            per = -(-tiles_v // sp)
            ks = -(-D // bd)
            assert args["V_PER_SPLIT"] == per * bv
            assert (args["BLOCK_T"], args["BLOCK_V"], args["BLOCK_D"]) == (bt, bv, bd)
            assert args["EVEN_D"] == (D % bd == 0) and args["EVEN_V"] == (V % bv == 0)
            assert mod.grid(cfg, p) == (-(-T // bt), sp)
            assert mod.loop_iterations(cfg, p) == per * ks
            its = mod.cta_iterations(cfg, p)
            assert len(its) == -(-T // bt) * sp and sum(its) == tiles_v * ks * -(-T // bt) and max(its) == per * ks
            sec = mod.secondary_kernels(cfg, p)
            assert [s["name"] for s in sec] == ["_merge_kernel"] and sec[0]["iterations"] == sp
            assert sec[0]["grid"] == -(-T // mod.MERGE_BLOCK) and sec[0]["dram_bytes"] == 0
            margs = mod.merge_example_args(cfg, p)
            assert margs["PART"].shape == (2, sp, T) and margs["SPLIT_V"] == sp
    for p in mod.POINTS:
        T, D, V = p["T"], p["D"], p["V"]
        assert mod.bytes_moved(p) == 2 * V * D + 2 * T * D + 12 * T
        assert mod.flops(p) == 2 * T * V * D
        assert H.meta_nbytes(mod.example_args(mod.BASELINE, p)) < 4 * 2**30


def test_hooks_on_small_points_and_inputs():
    """make_inputs: shapes, dtypes, the ignored fraction, the seed; reference / baseline shapes; the
    reference against a hand-computed loss."""
    import math

    import torch

    mod = load_example(KERNEL)
    p = _pt(200, 32, 50, "fp16", 0.3)
    inp = mod.make_inputs(p, seed=1, device="cpu")
    assert inp["h"].shape == (200, 32) and inp["h"].dtype == torch.float16
    assert inp["weight"].shape == (50, 32) and inp["weight"].dtype == torch.float16
    t = inp["targets"]
    assert t.shape == (200,) and t.dtype == torch.int64 and int(t.max()) < 50
    n_ign = int((t == mod.IGNORE_INDEX).sum())
    assert 30 < n_ign < 90 and int(t[t != mod.IGNORE_INDEX].min()) >= 0
    ref = mod.reference(inp)
    assert ref.shape == (200,) and ref.dtype == torch.float32 and bool((ref[t == mod.IGNORE_INDEX] == 0).all())
    assert bool((ref[t != mod.IGNORE_INDEX] > 0).all())
    assert mod.torch_baseline(inp).shape == (200,)
    assert torch.equal(mod.make_inputs(p, seed=1, device="cpu")["h"], inp["h"])
    assert not torch.equal(mod.make_inputs(p, seed=2, device="cpu")["h"], inp["h"])
    hand = {"h": torch.tensor([[1.0, 0.0], [0.0, 2.0]]), "weight": torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]),
            "targets": torch.tensor([2, -100])}
    want = math.log(math.e + 1 + math.e) - 1.0
    assert abs(float(mod.reference(hand)[0]) - want) < 1e-6 and float(mod.reference(hand)[1]) == 0.0


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    h = torch.ones(4, 32, dtype=torch.float16)
    w = torch.ones(40, 32, dtype=torch.float16)
    t = torch.zeros(4, dtype=torch.int64)
    with pytest.raises(ValueError, match="BLOCK_V=48"):
        mod.fused_linear_cross_entropy(h, w, t, BLOCK_V=48)
    with pytest.raises(ValueError, match="BLOCK_T=8"):
        mod.fused_linear_cross_entropy(h, w, t, BLOCK_T=8)
    with pytest.raises(ValueError, match="SPLIT_V=0"):
        mod.fused_linear_cross_entropy(h, w, t, SPLIT_V=0)
    with pytest.raises(ValueError, match="fp16 / bf16"):
        mod.fused_linear_cross_entropy(h.float(), w.float(), t)
    with pytest.raises(ValueError, match="dtypes differ"):
        mod.fused_linear_cross_entropy(h, w.bfloat16(), t)
    with pytest.raises(ValueError, match="expected h"):
        mod.fused_linear_cross_entropy(h, w[:, :16], t)
    with pytest.raises(ValueError, match="expected targets"):
        mod.fused_linear_cross_entropy(h, w, t.int())
    with pytest.raises(ValueError, match="reduction"):
        mod.fused_linear_cross_entropy(h, w, t, reduction="sum")
    with pytest.raises(ValueError, match="dtype 'fp32'"):
        mod.make_inputs(_pt(2, 8, 8, "fp32"), device="cpu")
    with pytest.raises(ValueError, match="V=0"):
        mod.bytes_moved(_pt(2, 8, 0))
    with pytest.raises(ValueError, match="ignore"):
        mod.grid(mod.BASELINE, _pt(2, 8, 8, ignore=1.0))


def test_sweep_fits_the_points():
    """The study sweep: 64 configs (BLOCK_T 64 / 128 x BLOCK_V 64 / 128 x BLOCK_D 32 / 64 x SPLIT_V
    16 / 64 x 4 / 8 warps x num_stages 3 / 4) with BASELINE among them; at every point each config
    is valid, fills the H200 with CTAs, and its pipelined h / W tiles fit shared memory.
    (Every config was compiled for sm_90 at every point, 192 compiles each. triton 3.6.0: all
    compile, none spills, 64-255 registers (255 at BLOCK_T x BLOCK_V 128 x 128 on 4 warps), 24-128
    KiB shared memory; BASELINE 173 registers, 96 KiB. triton 3.9.0: the same ranges, but 128 x 128
    x BLOCK_D 64 on 4 warps spills 6 registers (12 of the 192). 128 x 256 tiles are left out: on 4
    warps they spill hundreds of registers, and on 8 they sit at 255. The points give identical
    resources: every D and V is a multiple of every tile.)"""
    mod = load_example(KERNEL)
    axes = SWEEP_AXES
    assert set(axes) == set(mod.TUNABLES)
    assert all(len(v) >= 2 for v in axes.values())
    cfgs = _sweep_cfgs()
    assert 40 <= len(cfgs) <= 72 and mod.BASELINE in cfgs
    for p in mod.POINTS:
        for c in cfgs:
            pl = mod.plan(c, p)
            assert pl["EVEN_D"] and pl["EVEN_V"], (p, c)
            assert pl["tiles_t"] * c["SPLIT_V"] >= H200_SMS, (p, c)
            assert pl["TILES_PER_SPLIT"] >= 4
            assert c["num_stages"] * 2 * (c["BLOCK_T"] + c["BLOCK_V"]) * c["BLOCK_D"] <= H200_SMEM_PER_BLOCK
    # the points differ in character: D a power of two or not, V, T, both dtypes
    assert {p["dtype"] for p in mod.POINTS} == set(mod.DTYPES)
    assert len({p["D"] for p in mod.POINTS}) == 3 and any(p["D"] & (p["D"] - 1) for p in mod.POINTS)
    for p in mod.POINTS:
        # 1.1-2.4 TFLOP: ~1-5 ms at 500-990 TFLOP/s; W 1-1.2 GB
        assert 20e-6 < mod.flops(p) / 990e12 and mod.flops(p) / 500e12 < 5e-3, p
        assert mod.bytes_moved(p) < 4 * 2**30


def test_study_sweep_entry_matches():
    """scripts/rank_study.py's SWEEPS entry (once added) is this file's sweep."""
    try:
        configs, points, axes = H.study_sweeps([KERNEL], ROLE)[KERNEL]
    except KeyError:
        pytest.skip("no SWEEPS entry for fused_linear_ce yet")
    assert axes == SWEEP_AXES and len(configs) == len(_sweep_cfgs())


def test_examples_import_without_torch():
    proc = H.imports_without_torch(CASES)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr[-2000:]


# configs compiled at the module's first POINT (sm_90: BASELINE first)
COMPILE_CFGS = [None, _cfg(64, 64, 32, 16, 4, 4), _cfg(128, 128, 64, 16, 4, 3), _cfg(64, 128, 64, 64, 8, 4)]


@pytest.mark.slow
def test_example_compiles_sm90(shared_cache):
    """On sm_90: BASELINE (at every point) and three more configs compile without spills inside
    shared memory; the merge kernel too."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    cfgs = [mod.BASELINE] + COMPILE_CFGS[1:]
    for cfg, res in H.compile_results(KERNEL, cfgs, "sm_90"):
        assert res.status == "ok", f"{cfg} on sm_90: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.shared <= H200_SMEM_PER_BLOCK, (cfg, res.n_regs, res.shared)
        if cfg["BLOCK_T"] * cfg["BLOCK_V"] < 128 * 128 or cfg["num_warps"] == 8:
            assert res.n_spills == 0, (cfg, res.n_regs, res.n_spills)
    cfg = mod.BASELINE
    for p in mod.POINTS[1:]:
        res = compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch="sm_90",
                             num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
        assert res.status == "ok" and res.n_spills == 0, res.message
    res = compile_kernel(mod._merge_kernel, args=mod.merge_example_args(cfg, mod.POINTS[0]), arch="sm_90",
                         num_warps=mod.MERGE_WARPS, num_stages=1)
    assert res.status == "ok" and res.n_spills == 0, res.message


@pytest.mark.slow
def test_example_compiles_sm120(shared_cache):
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    for cfg in (mod.BASELINE, _cfg(64, 64, 32, 16, 4, 4)):
        res = compile_kernel(mod._kernel, args=mod.example_args(cfg, mod.POINTS[1]), arch="sm_120",
                             num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
        assert res.status == "ok", f"{cfg} on sm_120: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.shared <= SM120_SMEM_PER_BLOCK and res.n_spills == 0


# ----------------------------------------------------------------- the subprocess side
def _run() -> None:
    """Each case through launch (against reference), the wrapper's mean, and torch_baseline."""
    H.patch_interpreter_index()
    mod = load_example(KERNEL)

    def extra(name, point, inputs, out, ref):
        ign = inputs["targets"] == mod.IGNORE_INDEX
        mean = mod.fused_linear_cross_entropy(inputs["h"], inputs["weight"], inputs["targets"], reduction="mean",
                                              **CASES[KERNEL][name][1])
        return {"dtype": str(out.dtype), "contiguous": bool(out.is_contiguous()),
                "ignored_zero": bool((out[ign] == 0).all()), "mean": float(mean),
                "ref_mean": float(ref.double().sum() / max(1, int((~ign).sum()))),
                "baseline": H.compare(mod.torch_baseline(inputs), ref, point["dtype"])}

    H.run_cases(KERNEL, CASES[KERNEL], TOL, prepare=_prepare, extra=extra)


if __name__ == "__main__":
    _run()
