"""examples/nbody_forces.py (all-pairs softened gravitational / Coulomb accelerations: a CTA's BLOCK_I targets in
registers, the sources walked BLOCK_J at a time, the [BLOCK_I, BLOCK_J] interaction block reduced over j each
step; SPLIT_J source chunks combined by fp32 atomics into a zero-filled output) against its float64 torch
reference on the CPU through Triton's interpreter, its launcher hooks against the shapes, its sweep against the
points, and a compile for sm_90 and sm_120 from its own ``example_args``.

As in test_examples_round35_a.py the interpreter cases run in a subprocess (this file run as a script:
``python tests/test_examples_round36_a.py nbody_forces``) that prints one JSON line; the subprocess installs the
harness's interpreter fixes (the loop bounds).

Shapes are small, odd and ragged: N from 1 to 100 against target tiles of 32 / 64 / 128 (N below a tile, a last
tile partly past N) and source steps of 16 / 32 (EVEN_J both ways), SPLIT_J 1 / 2 / 4 / 8 (a last split shorter
than the others, splits past N walking nothing); the three body models (equal masses, Salpeter masses, charges
of both signs); positions that are the first four columns of a NaN-padded [N, 8] state array (row stride 8, the
padding never read); every sweep value of every tunable.

Per case: launch's acc against the module's float64 reference (the harness's tolerance); the output fresh,
contiguous, [N, 3] fp32; the inputs unchanged; the launch's flags; torch_baseline (fp32 eager) within the same
tolerance.
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
KERNEL = "nbody_forces"
ROLE = "held-out-36"
H200_SMS = 132
H200_FP32_FLOPS = 60e12
SM90_SMEM_PER_BLOCK = 227 * 1024
SM120_SMEM_PER_BLOCK = 99 * 1024

SWEEP_AXES = {"BLOCK_I": [32, 64, 128], "BLOCK_J": [16, 32], "SPLIT_J": [1, 2, 4, 8], "num_warps": [4, 8],
              "num_stages": [1]}
FLAG_KEYS = ("N", "stride_p", "J_PER_SPLIT", "EVEN_J", "SPLIT_J", "BLOCK_I", "BLOCK_J")
ROW = 8                     # the strided cases' state array: [N, 8] (x, y, z, w, then NaN)


def _cfg(bi=64, bj=32, sp=1, w=4, st=1):
    return {"BLOCK_I": bi, "BLOCK_J": bj, "SPLIT_J": sp, "num_warps": w, "num_stages": st}


def _pt(N, model="plummer", eps=0.01):
    return {"N": N, "model": model, "eps": eps}


def _cfgs():
    return [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]


# case -> (point, cfg); comments: EVEN_J, tiles, splits
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        # EVEN_J 0: BASELINE, 100 bodies in 2 target tiles of 64 (the second 36), 4 source steps of 32 (the last 4)
        "baseline_plummer": (_pt(100), _cfg()),
        # EVEN_J 1: 64 bodies, 2 target tiles of 32, 4 steps of 16; 8 warps (a tile smaller than the CTA)
        "even_plummer": (_pt(64, "plummer", 0.05), _cfg(32, 16, 1, 8)),
        # EVEN_J 0: 77 Salpeter bodies in one 128-target tile, SPLIT_J 2 (J_PER_SPLIT 64: 2 steps, then 1 of 13)
        "split2_salpeter": (_pt(77, "salpeter", 0.002), _cfg(128, 32, 2, 8)),
        # EVEN_J 0: 100 charges of both signs, SPLIT_J 4 of 32 sources (the last split 4), 4 target tiles of 32
        "split4_plasma": (_pt(100, "plasma", 0.005), _cfg(32, 16, 4, 4)),
        # EVEN_J 0: 40 bodies, SPLIT_J 8 of 16 sources: splits 3..7 start past N and walk nothing
        "split8_empty": (_pt(40, "salpeter", 0.01), _cfg(64, 16, 8, 4)),
        # a single body: acc exactly 0 (the i = j term vanishes), SPLIT_J 2 (split 1 empty)
        "one_body": (_pt(1), _cfg(32, 16, 2, 8)),
        # strided (row stride 8), EVEN_J 0: 50 plasma charges, 1 target tile of 128, 4 steps of 16 (the last 2)
        "strided_plasma": (_pt(50, "plasma", 0.02), _cfg(128, 16, 1, 4)),
        # strided, EVEN_J 1: 96 bodies, 3 target tiles of 32, SPLIT_J 8 of 32 sources (splits 3..7 empty)
        "strided_even": (_pt(96, "plummer", 0.01), _cfg(32, 32, 8, 8)),
    },
}
STRIDED = ("strided_plasma", "strided_even")

# configs compiled on sm_90 at each point: BASELINE, the largest interaction block on the fewest warps (128 x 32
# on 4: the most registers), the smallest on 8 warps, a split config
COMPILE_CFGS = {0: [_cfg(), _cfg(128, 32, 1, 4), _cfg(32, 16, 8, 8)],
                1: [_cfg(), _cfg(128, 16, 2, 4)],
                2: [_cfg(), _cfg(128, 32, 4, 4), _cfg(64, 16, 8, 8)]}
SM120_CFGS = [_cfg(), _cfg(128, 32, 1, 4), _cfg(32, 16, 4, 8)]


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """The strided variants: pos the first 4 columns of a NaN-padded [N, 8] buffer; then a copy of pos."""
    import torch

    if name in STRIDED:
        p = inputs["pos"]
        buf = torch.full((p.shape[0], ROW), float("nan"), dtype=p.dtype)
        buf[:, :4] = p
        inputs["pos"] = buf[:, :4]
    inputs["_copy"] = inputs["pos"].clone()


# ----------------------------------------------------------------- the pytest side
def _results() -> dict:
    return H.interpreter_results(HERE, KERNEL)


@pytest.mark.parametrize("name", list(CASES[KERNEL]))
def test_example_matches_reference(name):
    res = _results()[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    p, cfg = CASES[KERNEL][name]
    N = p["N"]
    assert res["n_bad"] == 0, H.mismatch(res, f"{name} launch")
    assert res["baseline"]["n_bad"] == 0, H.mismatch(res["baseline"], f"{name} torch_baseline")
    assert res["shape"] == [N, 3] and res["dtype"] == "fp32" and res["contiguous"] is True, res
    assert res["inputs_unchanged"] is True, res
    fl = res["flags"]
    per = -(-(-(-N // cfg["SPLIT_J"])) // cfg["BLOCK_J"]) * cfg["BLOCK_J"]
    assert (fl["N"], fl["J_PER_SPLIT"], fl["EVEN_J"]) == (N, per, int(N % cfg["BLOCK_J"] == 0)), fl
    assert fl["stride_p"] == (ROW if name in STRIDED else 4), fl
    assert all(fl[k] == cfg[k] for k in ("SPLIT_J", "BLOCK_I", "BLOCK_J")), fl
    if N > 1:
        assert res["n_distinct"] > 1 and res["scale"] > 0, res
    else:
        assert res["all_zero"] is True, res


def test_cases_cover_every_code_path():
    """EVEN_J both ways; SPLIT_J 1 (stores) and > 1 (atomics), with empty splits; N below a target tile and
    ragged above one; N = 1; every model; strided positions both ways of EVEN_J; every sweep value of every
    tunable."""
    H.assert_tunables_covered(CASES, baseline=False)
    mod = load_example(KERNEL)
    assert set(mod.BASELINE) == set(mod.TUNABLES) | {"num_stages"}
    cases = CASES[KERNEL]
    assert {int(p["N"] % c["BLOCK_J"] == 0) for p, c in cases.values()} == {0, 1}
    assert {int(c["SPLIT_J"] > 1) for _, c in cases.values()} == {0, 1}
    assert any(0 in mod.plan(c, p["N"])["tiles"] for p, c in cases.values())
    assert any(p["N"] < c["BLOCK_I"] for p, c in cases.values())
    assert any(p["N"] % c["BLOCK_I"] and p["N"] > c["BLOCK_I"] for p, c in cases.values())
    assert any(p["N"] == 1 for p, _ in cases.values())
    assert {p["model"] for p, _ in cases.values()} == set(mod.MODELS)
    assert {int(cases[s][0]["N"] % cases[s][1]["BLOCK_J"] == 0) for s in STRIDED} == {0, 1}
    for k, vals in SWEEP_AXES.items():
        assert {c[k] for _, c in cases.values()} >= set(vals), k


def test_launcher_hooks_agree_with_shapes():
    """At every point and sweep config: example_args (meta, contiguous) with the launch's shapes and flags; the
    grid; the loop length and each CTA's; the zero fill; bytes_moved and flops; each point >= 50 us on an H200's
    FP32 pipe (60 TFLOP/s)."""
    import torch

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "cta_iterations", "secondary_kernels", "example_args", "torch_baseline", "nbody_forces", "plan"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert len(mod.POINTS) == 3 and mod.ROLE == ROLE and mod.SWEEP_AXES == SWEEP_AXES
    for p in mod.POINTS:
        N = p["N"]
        for cfg in _cfgs():
            a = mod.example_args(cfg, p)
            assert all(v.device.type == "meta" for v in a.values() if isinstance(v, torch.Tensor))
            assert a["POS"].shape == (N, 4) and a["POS"].dtype == torch.float32 and a["POS"].is_contiguous()
            assert a["ACC"].shape == (N, 3) and a["ACC"].dtype == torch.float32 and a["ACC"].is_contiguous()
            per = a["J_PER_SPLIT"]
            assert per % cfg["BLOCK_J"] == 0 and per * cfg["SPLIT_J"] >= N > per * (cfg["SPLIT_J"] - 1) - cfg["BLOCK_J"]
            assert (a["N"], a["stride_p"], a["EVEN_J"]) == (N, 4, int(N % cfg["BLOCK_J"] == 0))
            assert a["eps2"] == pytest.approx(p["eps"] ** 2, rel=1e-12)
            assert all(a[k] == cfg[k] for k in ("SPLIT_J", "BLOCK_I", "BLOCK_J"))
            g = mod.grid(cfg, p)
            assert g == (-(-N // cfg["BLOCK_I"]), cfg["SPLIT_J"])
            assert mod.loop_iterations(cfg, p) == per // cfg["BLOCK_J"]
            it = mod.cta_iterations(cfg, p)
            assert len(it) == g[0] * g[1] and max(it) == mod.loop_iterations(cfg, p)
            assert sum(it) == g[0] * -(-N // cfg["BLOCK_J"])
            sk = mod.secondary_kernels(cfg, p)
            if cfg["SPLIT_J"] == 1:
                assert sk == []
            else:
                assert sk == [{"name": "zero_fill", "grid": -(-3 * N // 512), "iterations": 1, "tile_bytes": 2048,
                               "dram_bytes": 2048}]
        assert mod.bytes_moved(p) == 28 * N
        assert mod.flops(p) == 20 * N * N
        assert mod.flops(p) / H200_FP32_FLOPS >= 50e-6, p
    P = mod.POINTS
    assert [(p["N"], p["model"], p["eps"]) for p in P] == [(65536, "plummer", 0.01), (16384, "salpeter", 0.002),
                                                         (30000, "plasma", 0.005)]


def test_hooks_on_small_points_and_inputs():
    """make_inputs: shapes, the seed, each model's strengths; reference by hand (two bodies); torch_baseline;
    plan / grid / loops."""
    import torch

    mod = load_example(KERNEL)
    inp = mod.make_inputs(_pt(200), seed=1, device="cpu")
    pos = inp["pos"]
    assert pos.shape == (200, 4) and pos.dtype == torch.float32 and inp["eps"] == 0.01
    assert torch.allclose(pos[:, 3], torch.full((200,), 1 / 200))
    r = pos[:, :3].norm(dim=1)
    assert float(r.max()) <= 20 * 3 * math.pi / 16 * 1.001 and 0.2 < float(r.median()) < 1.5
    assert torch.equal(mod.make_inputs(_pt(200), seed=1, device="cpu")["pos"], pos)
    assert not torch.equal(mod.make_inputs(_pt(200), seed=2, device="cpu")["pos"], pos)
    sal = mod.make_inputs(_pt(400, "salpeter"), device="cpu")["pos"][:, 3].double()
    assert abs(float(sal.sum()) - 1) < 1e-5 and float(sal.max() / sal.min()) > 20 and float(sal.min()) > 0
    pl = mod.make_inputs(_pt(300, "plasma"), device="cpu")["pos"]
    assert float(pl[:, :3].abs().max()) <= 0.5 and abs(float(pl[:, 3].double().sum())) < 1e-9
    assert set(pl[:, 3].sign().tolist()) == {-1.0, 1.0}
    # two bodies on the x axis, distance 2, strengths 3 and 5, eps 1: |a| = w / (4 + 1)^1.5
    hand = {"pos": torch.tensor([[0.0, 0.0, 0.0, 3.0], [2.0, 0.0, 0.0, 5.0]]), "eps": 1.0}
    ref = mod.reference(hand)
    k = 2 / 5 ** 1.5
    assert torch.allclose(ref, torch.tensor([[5 * k, 0, 0], [-3 * k, 0, 0]], dtype=torch.float64), atol=1e-14)
    assert torch.allclose(mod.torch_baseline(hand).double(), ref, atol=1e-6)
    q = _pt(900)
    c = _cfg(64, 32, 4, 4)
    assert mod.plan(c, 900) == {"J_PER_SPLIT": 256, "tiles": [8, 8, 8, 5], "i_tiles": 15}
    assert mod.grid(c, q) == (15, 4) and mod.loop_iterations(c, q) == 8
    assert mod.cta_iterations(c, q) == [8] * 45 + [5] * 15
    assert mod.plan(_cfg(64, 16, 8), 40)["tiles"] == [1, 1, 1, 0, 0, 0, 0, 0]
    assert mod.example_args(_cfg(bj=16), _pt(48))["EVEN_J"] == 1
    assert mod.example_args(_cfg(bj=32), _pt(48))["EVEN_J"] == 0


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    pos = mod.make_inputs(_pt(10), device="cpu")["pos"]
    f = mod.nbody_forces
    with pytest.raises(ValueError, match="BLOCK_I=48"):
        f(pos, 0.01, BLOCK_I=48)
    with pytest.raises(ValueError, match="BLOCK_J=8"):
        f(pos, 0.01, BLOCK_J=8)
    with pytest.raises(ValueError, match="SPLIT_J=0"):
        f(pos, 0.01, SPLIT_J=0)
    with pytest.raises(ValueError, match="num_warps=3"):
        f(pos, 0.01, num_warps=3)
    with pytest.raises(ValueError, match="num_stages=0"):
        f(pos, 0.01, num_stages=0)
    with pytest.raises(ValueError, match="eps=0"):
        f(pos, 0)
    with pytest.raises(ValueError, match="eps=nan"):
        f(pos, float("nan"))
    with pytest.raises(ValueError, match="eps=-0.1"):
        f(pos, -0.1)
    with pytest.raises(ValueError, match="pos must be a 2-d torch.float32 tensor \\[N, 4\\]"):
        f(pos.double(), 0.01)
    with pytest.raises(ValueError, match="pos must be a 2-d torch.float32 tensor \\[N, 4\\]"):
        f(pos[:, :3], 0.01)
    with pytest.raises(ValueError, match="pos must be a 2-d torch.float32 tensor"):
        f(pos[0], 0.01)
    with pytest.raises(ValueError, match="pos must hold N >= 1"):
        f(pos[:0], 0.01)
    with pytest.raises(ValueError, match="unit stride"):
        f(pos.t().contiguous().t(), 0.01)
    with pytest.raises(ValueError, match="row stride 2"):
        f(torch.empty(64).as_strided((10, 4), (2, 1)), 0.01)
    with pytest.raises(ValueError, match="model 'disk'"):
        mod.make_inputs(_pt(10, "disk"), device="cpu")
    with pytest.raises(ValueError, match="dtype 'fp16'"):
        mod.make_inputs(dict(_pt(10), dtype="fp16"), device="cpu")
    with pytest.raises(ValueError, match="N=0"):
        mod.grid(mod.BASELINE, _pt(0))
    with pytest.raises(ValueError, match="N=2.5"):
        mod.example_args(mod.BASELINE, _pt(2.5))
    with pytest.raises(ValueError, match="N=1000000000"):
        mod.flops(_pt(1_000_000_000))
    with pytest.raises(ValueError, match="eps=None"):
        mod.bytes_moved({"N": 10})
    with pytest.raises(ValueError, match="BLOCK_J=100"):
        mod.loop_iterations(dict(mod.BASELINE, BLOCK_J=100), mod.POINTS[0])
    with pytest.raises(ValueError, match="BLOCK_I='abc'"):
        mod.grid(dict(mod.BASELINE, BLOCK_I="abc"), mod.POINTS[0])
    with pytest.raises(ValueError, match="SPLIT_J=100"):
        mod.cta_iterations(dict(mod.BASELINE, SPLIT_J=100), mod.POINTS[0])
    with pytest.raises(ValueError, match="SPLIT_J=1.5"):
        mod.secondary_kernels(dict(mod.BASELINE, SPLIT_J=1.5), mod.POINTS[0])


def test_sweep_fits_the_points():
    """The sweep: 48 configs (BLOCK_I 32 / 64 / 128 targets x BLOCK_J 16 / 32 sources a step x SPLIT_J 1 / 2 / 4 /
    8 x 4 / 8 warps; num_stages 1) with BASELINE among them; at every point each config is valid, its interaction
    block at most 32 elements a thread (128 x 32 on 4 warps: ~254 registers, no spills; 64 elements a thread --
    128 x 64 or 256 x 32 on 4 warps -- spills), every split walks at least one source tile, and the small point
    in 128-target tiles without a split underfills the 132 SMs."""
    mod = load_example(KERNEL)
    axes = SWEEP_AXES
    assert set(axes) == set(mod.TUNABLES) | {"num_stages"} and mod.SWEEP_AXES == axes
    assert all(len(v) >= 2 for k, v in axes.items() if k != "num_stages")
    cfgs = _cfgs()
    assert 40 <= len(cfgs) <= 72 and mod.BASELINE in cfgs
    for p in mod.POINTS:
        for c in cfgs:
            mod._check_cfg(c)
            assert c["BLOCK_I"] * c["BLOCK_J"] <= 32 * 32 * c["num_warps"], c
            assert min(mod.cta_iterations(c, p)) >= 1, (p, c)
            assert math.prod(mod.grid(c, p)) >= 100, (p, c)
    assert math.prod(mod.grid(_cfg(128, 32, 1), mod.POINTS[1])) < H200_SMS


def test_sweep_matches_the_study():
    configs, points, axes = H.study_sweeps([KERNEL], ROLE)[KERNEL]
    assert axes == SWEEP_AXES
    assert len(configs) == len(list(itertools.product(*SWEEP_AXES.values())))
    assert points == load_example(KERNEL).POINTS


def test_examples_import_without_torch():
    proc = H.imports_without_torch(CASES)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr[-2000:]


@pytest.mark.slow
def test_example_compiles_sm90(shared_cache):
    """On sm_90 at each point (N 65536, 16384, ragged 30000): BASELINE, the largest interaction block on 4 warps,
    small and split configs compile without spills; shared memory only the reduction's scratch (a few KiB)."""
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
            assert 0 <= res.shared <= 8192, (pi, cfg, res.shared)


@pytest.mark.slow
def test_example_compiles_sm120(shared_cache):
    """On sm_120 (99 KiB a block): BASELINE, the largest block and a split config compile without spills (at the
    first point)."""
    for cfg, res in H.compile_results(KERNEL, SM120_CFGS, "sm_120"):
        assert res.status == "ok", f"{cfg} on sm_120: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.n_spills == 0, (cfg, res.n_regs, res.n_spills)
        assert 0 <= res.shared <= SM120_SMEM_PER_BLOCK, (cfg, res.shared)


# ----------------------------------------------------------------- the subprocess side
def _run() -> None:
    """Every case through launch against reference, torch_baseline, the inputs unchanged, the flags; one JSON
    line."""
    import torch

    H.patch_interpreter_index()
    mod = load_example(KERNEL)

    def same(a, b):
        return torch.equal(a.isnan(), b.isnan()) and torch.equal(a.nan_to_num(7.0), b.nan_to_num(7.0))

    def extra(name, point, inputs, out, ref):
        cfg = CASES[KERNEL][name][1]
        a = mod._kernel_args(inputs["pos"], out, inputs["eps"], cfg)
        return {"dtype": {torch.float32: "fp32"}.get(out.dtype, str(out.dtype)), "contiguous": out.is_contiguous(),
                "inputs_unchanged": same(inputs["pos"], inputs["_copy"]),
                "baseline": H.compare(mod.torch_baseline(inputs), ref, point["dtype"] if "dtype" in point else "fp32"),
                "flags": {k: a[k] for k in FLAG_KEYS}, "n_distinct": int(out.unique().numel()),
                "all_zero": bool((out == 0).all())}

    cases = {k: ({"dtype": "fp32", **p}, c) for k, (p, c) in CASES[KERNEL].items()}
    H.run_cases(KERNEL, cases, prepare=_prepare, extra=extra)


if __name__ == "__main__":
    _run()
