"""examples/trilinear_devoxelize.py (trilinear devoxelization, PVCNN's voxel-to-point step: a channels-last grid
[B, R, R, R, C] read at the 8 corners of each point's cell, fp32 weights and accumulation; a 2-d grid of
BLOCK_N-point programs walking the channels TILE_C at a time, 8 gathers a step) against its float64 reference on
the CPU through Triton's interpreter, against a point-by-point transcription of PVCNN's formulas here, its
launcher hooks against the shapes, its sweep against the points, and a compile for sm_90 and sm_120 from its own
``example_args``.

As in test_examples_round35_d.py the interpreter cases run in a subprocess (this file run as a script:
``python tests/test_examples_round36_d.py trilinear_devoxelize``) that prints one JSON line; the subprocess
installs the harness's interpreter fixes (bf16 rounding; the runtime loop bound -- the channel loop's trip count
is the runtime C).

Shapes are small and odd: grids of R 2 (one cell) to 16, C 5 / 20 (ragged last channel step: the masked gathers)
and 32 / 48 / 64 / 96 (whole steps: the unmasked ones), N 33-300 (a last program past N), B 1-3 (the batch
offsets); the three scenes; coordinates pushed onto the faces, exactly on integers and outside [0, R - 1] (the
clamping) in two cases; fp16 / bf16 / fp32; every sweep value of every tunable.
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
KERNEL = "trilinear_devoxelize"
ROLE = "held-out-36"
H200_SMS = 132
SM90_SMEM_PER_BLOCK = 227 * 1024
SM120_SMEM_PER_BLOCK = 99 * 1024

# the study's sweep (scripts/rank_study.py SWEEPS["trilinear_devoxelize"] once the lead adds it)
SWEEP_AXES = {"BLOCK_N": [16, 32, 64], "BLOCK_C": [8, 16, 32], "num_warps": [4, 8], "num_stages": [1, 2, 3]}
ESIZE = {"fp32": 4, "fp16": 2, "bf16": 2}

_MOD = None


def _mod():
    """One module object for the whole file: its per-point caches (the seed-0 coordinates) are kept."""
    global _MOD
    if _MOD is None:
        _MOD = load_example(KERNEL)
    return _MOD


def _cfg(bn=32, bc=32, w=4, st=2):
    return {"BLOCK_N": bn, "BLOCK_C": bc, "num_warps": w, "num_stages": st}


def _pt(B, N, R, C, dtype="fp16", scene="indoor"):
    return {"B": B, "N": N, "R": R, "C": C, "dtype": dtype, "scene": scene}


def _cfgs():
    return [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]


# case -> (point, cfg); comments: programs, channel steps
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        # BASELINE: 2 scans of 200 points on an 8^3 x 64 grid, 7 programs a scan (the last 8 points past N), 2 steps
        "baseline_indoor_fp16": (_pt(2, 200, 8, 64), _cfg()),
        # a LiDAR sweep on 16^3 x 20 channels, fp32: TILE_C 8 with a ragged last step (masked gathers), 3 scans
        "lidar_ragged_fp32": (_pt(3, 77, 16, 20, "fp32", "lidar"), _cfg(16, 8, 8, 1)),
        # ray samples on 12^3 x 48, bf16, 64 points a program, 16 channels a step, 3 stages
        "rays_bf16": (_pt(1, 300, 12, 48, "bf16", "rays"), _cfg(64, 16, 4, 3)),
        # R 2 (a single cell) and C 5: TILE_C = next_pow2(5) = 8 < BLOCK_C, masked; coordinates clamped
        "edge_r2_c5_fp32": (_pt(2, 50, 2, 5, "fp32"), _cfg(64, 32, 8, 2)),
        # 7^3 x 32 fp16, coordinates on the faces, on integers and outside the grid; 16 points x 16 channels
        "clamp_lidar_fp16": (_pt(2, 130, 7, 32, "fp16", "lidar"), _cfg(16, 16, 4, 3)),
        # 9^3 x 96 bf16, 32 channels a step (3 steps), one program past N, 8 warps unpipelined
        "wide_c_bf16": (_pt(2, 33, 9, 96, "bf16"), _cfg(32, 32, 8, 1)),
        # fp32 rays on 5^3 x 64, 64 points x 8 channels (8 steps), 8 warps, 3 stages
        "rays_narrow_fp32": (_pt(2, 90, 5, 64, "fp32", "rays"), _cfg(64, 8, 8, 3)),
    },
}
EDGE_CASES = ("edge_r2_c5_fp32", "clamp_lidar_fp16")


def _edge_coords(coords, R):
    """Coordinates the scenes never draw, written over the first 12 points of every batch element: the top face
    (x = R - 1), the origin, integers inside, values below 0 and above R - 1, a cell's upper face."""
    import torch

    top = float(R - 1)
    special = torch.tensor([[top, top, top], [0.0, 0.0, 0.0], [1.0, 0.0, top], [-3.0, 0.5, top + 2.0],
                            [top + 0.25, -0.01, 0.5], [0.5, top, 0.999], [top - 0.5, top - 0.5, top - 0.5],
                            [-1e6, 1e6, 0.25], [0.0, top, 0.0], [top, 0.0, top], [0.25, 0.75, 0.5],
                            [top - 1e-3, 1e-3, 0.5]], dtype=torch.float32)
    n = min(coords.shape[1], special.shape[0])
    coords[:, :n] = special[:n]


def _prepare(name: str, point: dict, inputs: dict) -> None:
    if name in EDGE_CASES:
        _edge_coords(inputs["coords"], point["R"])
    inputs["_copies"] = {k: inputs[k].clone() for k in ("feat", "coords")}


def _by_hand(inputs, b: int, n: int):
    """out[b, n] [C] float64, PVCNN's formulas point by point in plain Python (a transcription, not the module's)."""
    import torch

    feat, coords = inputs["feat"], inputs["coords"]
    R = feat.shape[1]
    p = [min(max(float(v), 0.0), R - 1.0) for v in coords[b, n].tolist()]
    lo = [min(math.floor(v), R - 2) for v in p]
    f = [v - l for v, l in zip(p, lo)]
    acc = torch.zeros(feat.shape[-1], dtype=torch.float64)
    for a, bb, c in itertools.product((0, 1), repeat=3):
        w = (f[0] if a else 1 - f[0]) * (f[1] if bb else 1 - f[1]) * (f[2] if c else 1 - f[2])
        acc += w * feat[b, lo[0] + a, lo[1] + bb, lo[2] + c].double()
    return acc


# ----------------------------------------------------------------- the pytest side
def _results() -> dict:
    return H.interpreter_results(HERE, KERNEL)


@pytest.mark.parametrize("name", list(CASES[KERNEL]))
def test_example_matches_reference(name):
    res = _results()[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    p, cfg = CASES[KERNEL][name]
    assert res["n_bad"] == 0, H.mismatch(res, f"{name} launch")
    assert res["baseline"]["n_bad"] == 0, H.mismatch(res["baseline"], f"{name} torch_baseline")
    assert res["shape"] == [p["B"], p["N"], p["C"]] and res["dtype"] == p["dtype"], res
    assert res["hand_err"] <= 1e-9 * max(res["scale"], 1.0), res
    assert res["inputs_unchanged"] is True, res
    assert res["coords_in_grid"] is True, res
    assert res["grid"] == [math.ceil(p["N"] / cfg["BLOCK_N"]), p["B"]], res
    assert res["even_c"] == (p["C"] % min(cfg["BLOCK_C"], 1 << (p["C"] - 1).bit_length()) == 0), res
    assert res["feat_std"] > 0.5, res


def test_cases_cover_every_code_path():
    """Every tunable's every sweep value; fp16 / bf16 / fp32; each scene; ragged and whole channel steps; a last
    program past N; TILE_C below BLOCK_C; more than one channel step; coordinates outside the grid."""
    H.assert_tunables_covered(CASES)
    cases = CASES[KERNEL]
    mod = _mod()
    for k, vals in SWEEP_AXES.items():
        assert {c[k] for _, c in cases.values()} >= set(vals), k
    assert {p["dtype"] for p, _ in cases.values()} == set(mod.DTYPES)
    assert {p["scene"] for p, _ in cases.values()} == set(mod.SCENES)
    tiles = {nm: min(c["BLOCK_C"], 1 << (p["C"] - 1).bit_length()) for nm, (p, c) in cases.items()}
    assert {cases[nm][0]["C"] % t == 0 for nm, t in tiles.items()} == {True, False}
    assert any(t < cases[nm][1]["BLOCK_C"] for nm, t in tiles.items())
    assert any(cases[nm][0]["C"] > 2 * t for nm, t in tiles.items())
    assert any(p["N"] % c["BLOCK_N"] for p, c in cases.values())
    assert any(p["B"] > 1 for p, _ in cases.values()) and any(p["R"] == 2 for p, _ in cases.values())
    assert all(nm in cases for nm in EDGE_CASES)


def _touched_here(coords, R: int) -> int:
    """Distinct (batch, voxel) corner rows of the points, recomputed here from the coordinates."""
    import torch

    x = coords.double().clamp(0, R - 1)
    lo = torch.floor(x).clamp(max=R - 2).long()
    rows = []
    for a, b, c in itertools.product((0, 1), repeat=3):
        rows.append(((lo[..., 0] + a) * R + lo[..., 1] + b) * R + lo[..., 2] + c)
    r = torch.stack(rows, -1) + torch.arange(coords.shape[0])[:, None, None] * R ** 3
    return int(torch.unique(r).numel())


def test_launcher_hooks_agree_with_shapes():
    """At every point and sweep config: example_args (coords with data on the CPU, feat and out on meta) with the
    launch's shapes and flags; the grid; loop_iterations; bytes_moved against the corner rows recomputed here;
    flops; each point >= 50 us at 4.8 TB/s and memory-bound on an H200's FMA units."""
    import torch

    mod = _mod()
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "example_args", "torch_baseline", "trilinear_devoxelize"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert not hasattr(mod, "secondary_kernels") and not hasattr(mod, "cta_iterations")
    assert len(mod.POINTS) == 3 and mod.ROLE == ROLE and mod.SWEEP_AXES == SWEEP_AXES
    dts = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
    for p in mod.POINTS:
        B, N, R, C = p["B"], p["N"], p["R"], p["C"]
        e = ESIZE[p["dtype"]]
        a0 = mod.example_args(mod.BASELINE, p)
        xyz = a0["XYZ"]
        assert xyz.device.type == "cpu" and xyz.dtype == torch.float32 and tuple(xyz.shape) == (B, N, 3)
        assert xyz.is_contiguous() and float(xyz.min()) >= 0.0 and float(xyz.max()) <= R - 1
        assert float(xyz.std()) > 0.05 * R
        want = 12 * B * N + e * B * N * C + e * C * _touched_here(xyz, R)
        assert mod.bytes_moved(p) == want
        assert mod.flops(p) == 16 * B * N * C
        assert want / 4.8e12 >= 50e-6 and mod.flops(p) / 60e12 < want / 4.8e12, p
        for cfg in _cfgs():
            a = mod.example_args(cfg, p)
            assert a["XYZ"] is xyz
            for k, shape in (("F", (B, R, R, R, C)), ("O", (B, N, C))):
                assert a[k].device.type == "meta" and a[k].dtype == dts[p["dtype"]] and tuple(a[k].shape) == shape
            tc = min(cfg["BLOCK_C"], C)
            assert (a["N"], a["C"], a["R"]) == (N, C, R)
            assert (a["stride_fb"], a["stride_xb"], a["stride_ob"]) == (R ** 3 * C, 3 * N, N * C)
            assert (a["BLOCK_N"], a["TILE_C"], a["NUM_STAGES"], a["EVEN_C"]) == (cfg["BLOCK_N"], tc,
                                                                                 cfg["num_stages"], 1)
            assert mod.grid(cfg, p) == (math.ceil(N / cfg["BLOCK_N"]), B)
            assert mod.loop_iterations(cfg, p) == math.ceil(C / tc)
    P = mod.POINTS
    assert {p["scene"] for p in P} == set(mod.SCENES) and len({p["dtype"] for p in P}) == 3


def test_hooks_on_small_points_and_inputs():
    """make_inputs: shapes, dtypes, the seed, not constant, coordinates in the grid; reference by hand on a
    2-cell grid; torch_baseline against it; the three scenes' character (clustered, not sorted)."""
    import torch

    mod = _mod()
    p = _pt(2, 100, 6, 24, "bf16", "indoor")
    inp = mod.make_inputs(p, seed=1, device="cpu")
    feat, xyz = inp["feat"], inp["coords"]
    assert feat.shape == (2, 6, 6, 6, 24) and feat.dtype == torch.bfloat16 and feat.is_contiguous()
    assert xyz.shape == (2, 100, 3) and xyz.dtype == torch.float32 and xyz.is_contiguous()
    assert float(feat.float().std()) > 0.5 and float(xyz.min()) >= 0 and float(xyz.max()) <= 5
    again = mod.make_inputs(p, seed=1, device="cpu")
    assert torch.equal(again["feat"], feat) and torch.equal(again["coords"], xyz)
    other = mod.make_inputs(p, seed=2, device="cpu")
    assert not torch.equal(other["feat"], feat) and not torch.equal(other["coords"], xyz)
    for scene in mod.SCENES:
        c = mod.make_inputs(_pt(1, 4096, 32, 4, "fp32", scene), seed=0, device="cpu")["coords"][0]
        step = (c[1:] - c[:-1]).norm(dim=1)
        jump = (c[torch.randperm(4096, generator=torch.Generator().manual_seed(0))] - c).norm(dim=1)
        assert float(step.median()) < 0.25 * float(jump.median()), scene       # clustered along the order
        key = (c[:, 0].floor() * 32 + c[:, 1].floor()) * 32 + c[:, 2].floor()
        assert not bool((key[1:] >= key[:-1]).all()), scene                     # not sorted by voxel
    # by hand: R 2 (one cell), C 2, feat[x, y, z] = (100 x + 10 y + z, -1): trilinear of a linear function
    f = torch.zeros((1, 2, 2, 2, 2))
    for x, y, z in itertools.product((0, 1), repeat=3):
        f[0, x, y, z] = torch.tensor([100.0 * x + 10 * y + z, -1.0])
    pts = torch.tensor([[[0.25, 0.5, 0.75], [1.0, 1.0, 1.0], [-2.0, 0.0, 5.0]]])
    hand = {"feat": f, "coords": pts}
    ref = mod.reference(hand)
    assert ref.dtype == torch.float64
    assert torch.allclose(ref[0], torch.tensor([[30.75, -1.0], [111.0, -1.0], [1.0, -1.0]], dtype=torch.float64))
    assert torch.allclose(mod.torch_baseline(hand)[0].double(), ref[0])
    assert mod.grid(_cfg(16, 8), _pt(3, 33, 4, 8)) == (3, 3)
    assert mod.loop_iterations(_cfg(16, 8), _pt(3, 33, 4, 20)) == 3
    assert mod.loop_iterations(_cfg(16, 32), _pt(3, 33, 4, 5)) == 1
    a = mod.example_args(_cfg(16, 32), _pt(3, 33, 4, 5, "fp32"))
    assert a["TILE_C"] == 8 and a["EVEN_C"] == 0 and a["XYZ"].shape == (3, 33, 3)


def test_bad_inputs_are_value_errors():
    import torch

    mod = _mod()
    feat = torch.randn(2, 4, 4, 4, 8)
    xyz = torch.rand(2, 10, 3) * 3

    def call(*a, **kw):
        a = a or (feat, xyz)
        return mod.trilinear_devoxelize(*a, **kw)

    with pytest.raises(ValueError, match="BLOCK_N=48"):
        call(BLOCK_N=48)
    with pytest.raises(ValueError, match="BLOCK_C=3"):
        call(BLOCK_C=3)
    with pytest.raises(ValueError, match="1024 x 256"):
        call(BLOCK_N=1024, BLOCK_C=256)
    with pytest.raises(ValueError, match="num_warps=3"):
        call(num_warps=3)
    with pytest.raises(ValueError, match="num_stages=0"):
        call(num_stages=0)
    with pytest.raises(ValueError, match="feat must be a 5-d"):
        call(feat.double(), xyz)
    with pytest.raises(ValueError, match="feat must be a 5-d"):
        call(feat[0], xyz)
    with pytest.raises(ValueError, match="cubic grid"):
        call(torch.randn(2, 4, 4, 3, 8), xyz)
    with pytest.raises(ValueError, match="feat must be contiguous"):
        call(torch.randn(2, 8, 4, 4, 4).permute(0, 2, 3, 4, 1), xyz)
    with pytest.raises(ValueError, match="R=1"):
        call(torch.randn(2, 1, 1, 1, 8), xyz)
    with pytest.raises(ValueError, match=r"coords must be a contiguous fp32 tensor \[B=2, N, 3\]"):
        call(feat, xyz.double())
    with pytest.raises(ValueError, match=r"coords must be a contiguous fp32 tensor \[B=2, N, 3\]"):
        call(feat, xyz[:1])
    with pytest.raises(ValueError, match=r"coords must be a contiguous fp32 tensor \[B=2, N, 3\]"):
        call(feat, torch.rand(2, 3, 10).transpose(1, 2))
    with pytest.raises(ValueError, match=r"coords must be a contiguous fp32 tensor \[B=2, N, 3\] on cpu"):
        call(feat, xyz.to("meta"))
    with pytest.raises(ValueError, match="out must be a contiguous"):
        call(out=torch.empty(2, 10, 8, dtype=torch.float16))
    with pytest.raises(ValueError, match="dtype 'fp8'"):
        mod.make_inputs(_pt(1, 10, 4, 8, "fp8"), device="cpu")
    with pytest.raises(ValueError, match="scene 'outdoor'"):
        mod.bytes_moved(_pt(1, 10, 4, 8, "fp16", "outdoor"))
    with pytest.raises(ValueError, match="R=1"):
        mod.flops(_pt(1, 10, 1, 8))
    with pytest.raises(ValueError, match="N=0"):
        mod.grid(mod.BASELINE, _pt(1, 0, 4, 8))
    with pytest.raises(ValueError, match="C=2.5"):
        mod.grid(mod.BASELINE, _pt(1, 10, 4, 2.5))
    with pytest.raises(ValueError, match="R=1300"):
        mod.example_args(mod.BASELINE, _pt(1, 10, 1300, 8))
    with pytest.raises(ValueError, match="N=2000000000"):
        mod.loop_iterations(mod.BASELINE, _pt(1, 2_000_000_000, 4, 8))
    with pytest.raises(ValueError, match="B=70000"):
        mod.grid(mod.BASELINE, _pt(70000, 10, 4, 8))
    with pytest.raises(ValueError, match="BLOCK_N=None"):
        mod.grid(dict(mod.BASELINE, BLOCK_N=None), mod.POINTS[0])
    with pytest.raises(ValueError, match="BLOCK_C=12"):
        mod.loop_iterations(dict(mod.BASELINE, BLOCK_C=12), mod.POINTS[0])


def _smem_bound(cfg, p) -> int:
    """The pipelined channel loop's buffers: num_stages - 1 steps of 8 [BLOCK_N, TILE_C] gathers, plus slack."""
    tc = min(cfg["BLOCK_C"], 1 << (p["C"] - 1).bit_length())
    return (cfg["num_stages"] - 1) * 8 * cfg["BLOCK_N"] * tc * ESIZE[p["dtype"]] + 4096


def test_sweep_fits_the_points():
    """The study sweep: 54 configs (16-64 points x 8-32 channels a step, 4 / 8 warps, 1-3 stages of the channel
    loop) with BASELINE among them; at every point each config is valid, launches >= 10 waves of programs on an
    H200 and its pipelined gathers fit sm_90's shared memory. (Every config was compiled for sm_90 at every point
    with triton 3.6.0 and 3.9, none spills -- the register and shared-memory ranges are in the module doc. Left
    out: tiles of 4096-16384 elements -- 128 x 64 and 256 x 32 at 2-3 stages need 256 KiB - 1 MiB of shared
    memory at the fp32 point, and 256 x 64 / 128 x 64 on 4 warps spill.)"""
    mod = _mod()
    axes = SWEEP_AXES
    assert set(axes) == set(mod.TUNABLES) and mod.SWEEP_AXES == axes
    assert all(len(v) >= 2 for v in axes.values()) and "num_warps" in axes
    cfgs = _cfgs()
    assert 40 <= len(cfgs) <= 72 and mod.BASELINE in cfgs
    for p in mod.POINTS:
        for c in cfgs:
            mod._check_cfg(c)
            g = mod.grid(c, p)
            assert g[0] * g[1] >= 10 * H200_SMS, (p, c)
            assert _smem_bound(c, p) <= SM90_SMEM_PER_BLOCK, (p, c)


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
@pytest.mark.parametrize("pi", [0, 1, 2])
def test_example_compiles_sm90(shared_cache, pi):
    """On sm_90 at each point: BASELINE, the heaviest config (64 points x 32 channels, 4 warps, 3 stages) and a
    small one compile from example_args without spills, within sm_90's shared memory (the pipelined gathers'
    buffers). (Every config of the sweep was compiled at every point under both Tritons when the kernel was
    written: the module doc's figures; CI compiles these three.)"""
    from occmodel import compile_kernel

    mod = _mod()
    p = mod.POINTS[pi]
    for cfg in (_cfg(), _cfg(64, 32, 4, 3), _cfg(16, 8, 8, 1)):
        assert cfg in _cfgs()
        res = compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch="sm_90",
                             num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
        assert res.status == "ok", f"{cfg} at point {pi} on sm_90: {res.status}: {res.message}"
        assert 0 < res.n_regs <= 255 and res.n_spills == 0, (pi, cfg, res.n_regs, res.n_spills)
        assert res.shared <= min(_smem_bound(cfg, p), SM90_SMEM_PER_BLOCK), (pi, cfg, res.shared)


SM120_CFGS = [_cfg(), _cfg(64, 32, 8, 2), _cfg(16, 8, 4, 1), _cfg(32, 16, 8, 3)]


@pytest.mark.slow
def test_example_compiles_sm120(shared_cache):
    """On sm_120 (99 KiB a block): BASELINE, the largest step at 2 stages, a small one and a 3-stage one at the
    fp32 LiDAR point compile without spills within its shared memory."""
    from occmodel import compile_kernel

    mod = _mod()
    p = mod.POINTS[1]
    for cfg in SM120_CFGS:
        res = compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch="sm_120",
                             num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
        assert res.status == "ok", f"{cfg} on sm_120: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.n_spills == 0, (cfg, res.n_regs, res.n_spills)
        assert 0 <= res.shared <= SM120_SMEM_PER_BLOCK, (cfg, res.shared)


# ----------------------------------------------------------------- the subprocess side
def _run() -> None:
    """Every case through launch against reference (the harness's tolerance), a few points by hand, the inputs
    unchanged, the grid, torch_baseline; one JSON line."""
    import torch

    H.patch_interpreter_bf16_rounding()
    H.patch_interpreter_index()
    mod = load_example(KERNEL)
    names = {torch.float16: "fp16", torch.bfloat16: "bf16", torch.float32: "fp32"}

    def extra(name, point, inputs, out, ref):
        cfg = CASES[KERNEL][name][1]
        B, N = point["B"], point["N"]
        picks = [(b, n) for b in range(B) for n in (0, 1, 2, 5, 11, N // 2, N - 1) if n < N]
        hand = max(float((_by_hand(inputs, b, n) - ref[b, n]).abs().max()) for b, n in picks)
        xyz = inputs["_copies"]["coords"]
        args = mod._kernel_args(inputs["feat"], inputs["coords"], out, cfg)
        return {"dtype": names.get(out.dtype), "hand_err": hand,
                "inputs_unchanged": all(torch.equal(inputs[k], v) for k, v in inputs["_copies"].items()),
                "coords_in_grid": (name in EDGE_CASES) or bool(((xyz >= 0) & (xyz <= point["R"] - 1)).all()),
                "grid": list(mod._grid(B, N, cfg)), "even_c": bool(args["EVEN_C"]),
                "feat_std": float(inputs["feat"].float().std()),
                "baseline": H.compare(mod.torch_baseline(inputs), ref, point["dtype"])}

    H.run_cases(KERNEL, CASES[KERNEL], prepare=_prepare, extra=extra)


if __name__ == "__main__":
    _run()
