"""examples/deform_attn.py (multi-scale deformable attention sampling, the MSDeformAttn forward of
Deformable DETR / DINO / RT-DETR) against its fp64 grid_sample reference on the CPU through
Triton's interpreter, its launcher hooks against the shapes, its study sweep against the points,
and a compile for sm_90 and sm_120 from its own ``example_args``.

As in test_examples_round15_a.py, the interpreter must be chosen before triton is imported, so
the cases run in a subprocess (this file run as a script: ``python tests/test_examples_round16_b.py
deform_attn``) that prints one JSON line; the tests assert per case.

Shapes are small, odd and ragged: Q not a multiple of BLOCK_Q (a masked last query block, and
BLOCK_Q larger than Q), L P not a multiple of BLOCK_P (EVEN_P=False: a masked tail step whose
points past L P look up no level) and a multiple (EVEN_P=True), 1-5 levels of odd, non-square
maps (1 x 1 and 1-wide maps included), 1-3 heads, B 1-3; the locations spread a few pixels
around each query's reference point so a share of the corners fall outside their map (zero
padding) -- one case puts every location on a map's edge or corner, exactly at 0 and 1, or
outside [0, 1] altogether. Both CTA orders (HEADS_FASTEST 0 / 1), all three dtypes, num_warps
1-8 and num_stages 1-2 are run.

Tolerance (x max|ref|, absolute, per element): the reference is grid_sample in fp64 on the same
rounded value / location / weight tensors. The kernel computes the pixel coordinates, the
bilinear weights and the products in fp32 (the coordinate x W - 0.5 is exact to ~2^-24 W px, the
corner weights to ~2^-23) and sums L P 4 products of |w| <= 1 in fp32: ~1e-6 of max|ref| for
fp32 (harness tolerance 1e-4), then one rounding to the output dtype for fp16 / bf16 -- half an
ulp on the GPU, up to one ulp with the interpreter's truncating cast: 2^-10 (fp16) / 2^-7 (bf16)
of an element <= max|ref|, inside 2e-3 / 1e-2. torch_baseline (grid_sample in fp32, rounded once)
stays within them too. Measured: kernel max error ~3e-7 (fp32), 0.03 % (fp16), 0.5 % (bf16) of
max|ref|.
"""

from __future__ import annotations

import itertools
import os
import sys
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
KERNEL = "deform_attn"
ROLE = "held-out-16"
TOL = {"fp32": 1e-4, "fp16": 2e-3, "bf16": 1e-2}
H200_SMS = 132
H200_SMEM_PER_BLOCK = 227 * 1024
SM120_SMEM_PER_BLOCK = 99 * 1024


def _cfg(bq, bp, hf, w, st):
    return {"BLOCK_Q": bq, "BLOCK_P": bp, "HEADS_FASTEST": hf, "num_warps": w, "num_stages": st}


def _pt(B, Q, H, P, levels, dtype, D=32):
    return {"B": B, "Q": Q, "H": H, "D": D, "P": P, "levels": levels, "dtype": dtype}


CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        # 4 levels, L P = 12, BLOCK_P 8: a full step and a half-masked one; Q 13 over blocks of 8
        "ragged_4lvl_fp32": (_pt(2, 13, 3, 3, [[7, 9], [4, 5], [2, 3], [1, 1]], "fp32"), _cfg(8, 8, 1, 4, 1)),
        # L P = 6, BLOCK_P 2 (even), Q 21 over blocks of 4, heads slowest
        "even_p_heads_slow_fp16": (_pt(1, 21, 2, 2, [[6, 5], [3, 3], [2, 1]], "fp16"), _cfg(4, 2, 0, 2, 2)),
        # one level, L P = 4 in one step of 4; BLOCK_Q 16 > Q = 7 (one block, 9 masked queries)
        "one_level_block_gt_q_bf16": (_pt(3, 7, 2, 4, [[5, 11]], "bf16"), _cfg(16, 4, 1, 1, 1)),
        # 5 levels (DINO-5scale-like), L P = 20, BLOCK_P 8: 3 steps, the last half masked
        "five_levels_bf16": (_pt(1, 10, 2, 4, [[9, 12], [5, 6], [3, 3], [2, 2], [1, 1]], "bf16"),
                             _cfg(4, 8, 0, 8, 2)),
        # BLOCK_P 16 > L P = 6 (one step, 10 points masked), 1-wide maps
        "wide_step_fp32": (_pt(2, 9, 1, 3, [[5, 1], [1, 4]], "fp32"), _cfg(8, 16, 1, 2, 1)),
        # edge locations: 0, 1, exact pixel corners, and outside [0, 1]
        "edges_fp16": (_pt(1, 11, 2, 3, [[4, 6], [3, 2]], "fp16"), _cfg(8, 4, 0, 4, 1)),
    },
}

# configs compiled for sm_90 at the module's first POINT (BASELINE first), and for sm_120
COMPILE_CFGS: dict[str, list[dict]] = {
    KERNEL: [_cfg(16, 4, 1, 8, 1), _cfg(16, 8, 0, 8, 1), _cfg(4, 2, 1, 4, 1), _cfg(16, 8, 1, 4, 1), _cfg(8, 8, 1, 16, 1)],
}
SM120_CFGS = [_cfg(16, 4, 1, 8, 1), _cfg(8, 8, 0, 4, 1)]


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """The edge case: locations on the edges / corners of the maps, at 0 and 1 and outside [0, 1]."""
    import torch

    if name == "edges_fp16":
        loc = inputs["sampling_locations"]
        g = torch.Generator().manual_seed(7)
        cand = torch.tensor([-0.3, -0.01, 0.0, 0.5 / 6, 0.25, 0.5, 1.0 / 3, 0.75, 1.0, 1.01, 1.4])
        idx = torch.randint(0, len(cand), loc.shape, generator=g)
        inputs["sampling_locations"] = cand[idx].to(loc.dtype)


# ----------------------------------------------------------------- the pytest side
def _results(kernel: str) -> dict:
    return H.interpreter_results(HERE, kernel)


def _sweep():
    return H.study_sweeps([KERNEL], ROLE)[KERNEL]      # (configs, points, axes) of scripts/rank_study.py SWEEPS


@pytest.mark.parametrize("kernel,name", [(k, n) for k, cases in CASES.items() for n in cases])
def test_example_matches_reference(kernel, name):
    res = _results(kernel)[name]
    assert "error" not in res, f"{kernel}/{name}: {res.get('error')}"
    p = CASES[kernel][name][0]
    assert res["shape"] == [p["B"], p["Q"], p["H"], p["D"]]
    for what, r in (("kernel", res), ("torch_baseline", res["baseline"])):
        assert r["n_bad"] == 0, H.mismatch(r, f"{kernel}/{name} {what}")
    assert res["scale"] > 0.05                      # a non-trivial output (zero padding not everywhere)


def test_cases_cover_every_code_path():
    """Each tunable takes >= 2 values; all dtypes; EVEN_P on and off; a ragged query block and
    BLOCK_Q > Q; BLOCK_P > L P; 1 and >= 4 levels; both CTA orders."""
    H.assert_tunables_covered(CASES)
    mod = load_example(KERNEL)
    cases = list(CASES[KERNEL].values())
    assert {p["dtype"] for p, _ in cases} == set(mod.DTYPES)
    lp = [(len(p["levels"]) * p["P"], c["BLOCK_P"]) for p, c in cases]
    assert {n % bp == 0 for n, bp in lp} == {True, False} and any(bp > n for n, bp in lp)
    assert any(p["Q"] % c["BLOCK_Q"] and p["Q"] > c["BLOCK_Q"] for p, c in cases)
    assert any(c["BLOCK_Q"] > p["Q"] for p, c in cases)
    assert {len(p["levels"]) for p, _ in cases} >= {1, 4, 5}
    assert any(c["num_warps"] >= 8 for _, c in cases)


def test_corners_outside_maps_are_exercised():
    """The random locations put a share of the bilinear corners outside their maps (the zero padding
    is exercised), the edge case many; make_inputs is reproducible per seed and varies with it."""
    import torch

    mod = load_example(KERNEL)
    p, _ = CASES[KERNEL]["ragged_4lvl_fp32"]
    inp = mod.make_inputs(p, seed=3, device="cpu")
    assert torch.equal(inp["value"], mod.make_inputs(p, seed=3, device="cpu")["value"])
    assert not torch.equal(inp["value"], mod.make_inputs(p, seed=4, device="cpu")["value"])
    loc = inp["sampling_locations"]
    wh = inp["spatial_shapes"].flip(1).float().reshape(1, 1, 1, -1, 1, 2)
    pix = loc * wh - 0.5
    out = ((pix < 0) | (pix > wh - 1)).any(-1).float().mean()
    assert 0.05 < float(out) < 0.95, float(out)
    w = inp["attention_weights"]
    assert torch.allclose(w.reshape(*w.shape[:3], -1).sum(-1), torch.ones(()), atol=1e-5)
    assert float(inp["value"].std()) > 0.5


def test_sweep_fits_the_points():
    """The study sweep: 54 configs over the TUNABLES (num_stages held at 1: 1 and 2 compile to the
    same code), BASELINE among them; at every POINT each config is valid, launches >= 132 CTAs (the
    fewest: 64 x cdiv(900, 16) = 3648 at the decoder point) and needs a few KiB of shared memory (the
    cross-warp reduction over BLOCK_P). Compiled for sm_90 with triton 3.6.0 at every point (162
    compiles, ~0.5-4 s each, ~1.8 min in all): all compile; registers 32-182 (the most at the fp32
    point, 16 x 8 samples on 4 warps; 32-128 at the fp16 point, 32-167 at the bf16 one), shared
    memory 0-16 KiB; two keep 2 words in local memory: (8, 8, heads slowest, 16 warps) at the fp32
    point and (16, 4, heads fastest, 4 warps) at the fp16 point."""
    cfgs, points, axes = _sweep()
    mod = load_example(KERNEL)
    assert set(axes) == set(mod.TUNABLES)
    assert 40 <= len(cfgs) <= 72 and mod.BASELINE in cfgs
    assert len(cfgs) == len(list(itertools.product(*axes.values())))
    assert points == mod.POINTS or points is None or len(points) == 3
    for p in mod.POINTS:
        for c in cfgs:
            mod._check_cfg(c)
            gx, gy = mod.grid(c, p)
            assert gx * gy >= H200_SMS, (p, c)
            # the registers a step's gathers need (4 corners x D fp32 a sample) fit 255 a thread
            assert c["BLOCK_Q"] * c["BLOCK_P"] <= 32 * c["num_warps"], c
            assert 4 * c["BLOCK_P"] * p["D"] * c["num_warps"] <= H200_SMEM_PER_BLOCK


def test_launcher_hooks_agree_with_shapes():
    """At every default point: example_args has the shapes, dtypes and constexprs of a launch (meta
    tensors), grid / loop_iterations the kernel's, bytes_moved / flops the formulas; inputs < 4 GB;
    the points differ (dtype, levels, L P vs BLOCK_P evenness, CTA count)."""
    import torch

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "example_args", "torch_baseline", "ms_deform_attn"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert not hasattr(mod, "secondary_kernels") and not hasattr(mod, "cta_iterations")
    assert len(mod.POINTS) == 3 and {p["dtype"] for p in mod.POINTS} == set(mod.DTYPES)
    dts = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
    for cfg in [mod.BASELINE] + COMPILE_CFGS[KERNEL]:
        for p in mod.POINTS:
            args = mod.example_args(cfg, p)
            # value and out on meta; the level table, locations and weights with data (rank reads the gathers
            # from them)
            assert args["VALUE"].device.type == args["OUT"].device.type == "meta"
            assert all(args[k].device.type == "cpu" for k in ("SHAPES", "LSI", "LOC", "ATTW"))
            B, Q, Hh, D, P = p["B"], p["Q"], p["H"], p["D"], p["P"]
            L = len(p["levels"])
            S = sum(a * b for a, b in p["levels"])
            dt = dts[p["dtype"]]
            assert args["VALUE"].shape == (B, S, Hh, D) and args["LOC"].shape == (B, Q, Hh, L, P, 2)
            assert args["ATTW"].shape == (B, Q, Hh, L, P) and args["OUT"].shape == (B, Q, Hh, D)
            assert args["VALUE"].dtype == args["LOC"].dtype == args["ATTW"].dtype == args["OUT"].dtype == dt
            assert args["SHAPES"].shape == (L, 2) and args["LSI"].shape == (L,)
            assert args["SHAPES"].tolist() == [list(hw) for hw in p["levels"]] and args["LSI"].dtype == torch.int32
            assert (args["Q"], args["S_V"], args["N_HEADS"], args["N_LEVELS"], args["N_POINTS"], args["D"]) == \
                (Q, S, Hh, L, P, D)
            assert {k: args[k] for k in ("BLOCK_Q", "BLOCK_P", "HEADS_FASTEST")} == \
                {k: cfg[k] for k in ("BLOCK_Q", "BLOCK_P", "HEADS_FASTEST")}
            assert H.meta_nbytes(args) < 4 * 2**30
            assert mod.grid(cfg, p) == (Hh * -(-Q // cfg["BLOCK_Q"]), B)
            assert mod.loop_iterations(cfg, p) == -(-L * P // cfg["BLOCK_P"])
            e = args["VALUE"].element_size()
            n = B * Q * Hh * L * P
            assert mod.bytes_moved(p) == 3 * n * e + min(B * S * Hh * D * e, 4 * n * D * e) + B * Q * Hh * D * e
            assert mod.flops(p) == 8 * D * n
    # encoder points: Q = S_v; the decoder's value exceeds L2 and is only partly gathered
    p0, p1, p2 = mod.POINTS
    assert p0["Q"] == sum(a * b for a, b in p0["levels"]) and p2["Q"] == sum(a * b for a, b in p2["levels"])
    assert p1["B"] * sum(a * b for a, b in p1["levels"]) * p1["H"] * p1["D"] * 2 > 50e6
    assert (len(p2["levels"]) * p2["P"]) % 8 != 0 and (len(p0["levels"]) * p0["P"]) % 8 == 0


def test_small_launch_hooks_and_outputs():
    """reference / baseline shapes and dtypes; an empty batch returns without a launch."""
    import torch

    mod = load_example(KERNEL)
    p, _ = CASES[KERNEL]["even_p_heads_slow_fp16"]
    inp = mod.make_inputs(p, seed=1, device="cpu")
    ref = mod.reference(inp)
    assert ref.shape == (1, 21, 2, 32) and ref.dtype == torch.float32
    base = mod.torch_baseline(inp)
    assert base.shape == (1, 21, 2, 32) and base.dtype == torch.float16
    e = mod.ms_deform_attn(inp["value"][:0], inp["spatial_shapes"], inp["level_start_index"],
                           inp["sampling_locations"][:0], inp["attention_weights"][:0])
    assert e.shape == (0, 21, 2, 32)


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    p, _ = CASES[KERNEL]["even_p_heads_slow_fp16"]
    inp = mod.make_inputs(p, seed=1, device="cpu")
    args = (inp["value"], inp["spatial_shapes"], inp["level_start_index"], inp["sampling_locations"],
            inp["attention_weights"])
    with pytest.raises(ValueError, match="BLOCK_Q=12"):
        mod.ms_deform_attn(*args, BLOCK_Q=12)
    with pytest.raises(ValueError, match="BLOCK_P=3"):
        mod.ms_deform_attn(*args, BLOCK_P=3)
    with pytest.raises(ValueError, match="HEADS_FASTEST=2"):
        mod.ms_deform_attn(*args, HEADS_FASTEST=2)
    with pytest.raises(ValueError, match="fp32 / fp16 / bf16"):
        mod.ms_deform_attn(inp["value"].double(), *args[1:])
    with pytest.raises(ValueError, match="expected value"):
        mod.ms_deform_attn(inp["value"][0], *args[1:])
    with pytest.raises(ValueError, match="sum to"):
        mod.ms_deform_attn(inp["value"][:, :-1], *args[1:])
    with pytest.raises(ValueError, match="attention_weights must hold"):
        mod.ms_deform_attn(*args[:4], inp["attention_weights"][..., :1])
    with pytest.raises(ValueError, match="spatial_shapes must be"):
        mod.ms_deform_attn(args[0], args[1][:2], *args[2:])
    with pytest.raises(ValueError, match="dtype 'fp8'"):
        mod.make_inputs(dict(p, dtype="fp8"), device="cpu")
    with pytest.raises(ValueError, match="dtype 'int8'"):
        mod.bytes_moved(dict(p, dtype="int8"))
    with pytest.raises(ValueError, match="does not match"):
        mod.ms_deform_attn(inp["value"], *args[1:3], torch.cat([args[3]] * 2, dim=2), args[4])


def test_examples_import_without_torch():
    """The launcher contract: a module imports with no torch (it is imported inside the functions)."""
    proc = H.imports_without_torch(CASES)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr[-2000:]


@pytest.mark.slow
@pytest.mark.parametrize("kernel", list(COMPILE_CFGS))
def test_example_compiles_sm90(shared_cache, kernel):
    """On sm_90 at the fp32 encoder point: BASELINE and three more (both CTA orders, 4 / 8 / 16
    warps, 8 to 128 samples a step) compile without spills, in a few KiB of shared memory; the
    gathers are vectorised (128-bit global loads of 4 fp32)."""
    from occmodel import compile_kernel

    mod = load_example(kernel)
    assert COMPILE_CFGS[kernel][0] == mod.BASELINE
    for cfg, res in H.compile_results(kernel, COMPILE_CFGS[kernel], "sm_90"):
        assert res.status == "ok", f"{kernel} {cfg} on sm_90: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.shared <= 16 * 1024 and res.n_spills == 0, (cfg, res.n_regs, res.n_spills)
    res = compile_kernel(mod._kernel, args=mod.example_args(mod.BASELINE, mod.POINTS[0]), arch="sm_90",
                         num_warps=4, num_stages=1, keep_ir=True)
    assert res.status == "ok", res.message
    assert "ld.global" in res.ptx and ".v4" in res.ptx


@pytest.mark.slow
def test_example_compiles_sm120(shared_cache):
    """On sm_120 (99 KiB a block) the baseline and an 8-warp config compile and fit."""
    for cfg, res in H.compile_results(KERNEL, SM120_CFGS, "sm_120"):
        assert res.status == "ok", f"{cfg} on sm_120: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.shared <= SM120_SMEM_PER_BLOCK and res.n_spills == 0


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["sm_120", "sm_90"])
def test_other_points_compile(shared_cache, arch):
    """The fp16 decoder point and the bf16 5-level point (EVEN_P=False at BLOCK_P 8)."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    cfg = _cfg(8, 8, 1, 8, 1)
    for p in mod.POINTS[1:]:
        res = compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch=arch, num_warps=cfg["num_warps"],
                             num_stages=cfg["num_stages"])
        assert res.status == "ok" and res.n_spills == 0, f"{p} on {arch}: {res.status}: {res.message}"
        assert res.shared <= (H200_SMEM_PER_BLOCK if arch == "sm_90" else SM120_SMEM_PER_BLOCK)


if __name__ == "__main__":
    H.run_cases(sys.argv[1], CASES[sys.argv[1]], TOL, prepare=_prepare, baseline=True)
