"""examples/fused_recurrent_gla.py (recurrent gated linear attention forward, the fused_recurrent
kernel of GLA / RWKV-6-style layers: a fp32 [BLOCK_K, BLOCK_V] state walked token by token, K
blocks summed by a second kernel) against its fp64 step-by-step torch reference on the CPU
through Triton's interpreter, its launcher hooks against the shapes, its study sweep against the
points, and a compile for sm_90 and sm_120 from its own ``example_args``.

As in test_examples_round15_a.py, the interpreter must be chosen before triton is imported, so
the cases run in a subprocess (this file run as a script: ``python tests/test_examples_round17_a.py
fused_recurrent_gla``) that prints one JSON line; the tests assert per case.

Shapes are small, odd and ragged: K and V not multiples of the blocks (masked state rows /
columns), BLOCK_K larger than K (one masked K block), K split into 2-4 blocks (fp32 partials
summed by `_sum_kernel`) and not split (o written directly), T = 1 and walks of 5-40 steps, B
and H 1-3, with and without an initial state, with and without the final state, fp32 and
input-dtype gates, both dtypes, BLOCK_K 16-64, BLOCK_V 16-64, LOOP_STAGES 1-3, num_warps 1-4
and num_stages 1-2.

Tolerance (x max|ref|, absolute, per element): the reference is the recurrence in fp64 on the
same rounded q / k / v / g / h0. The kernel keeps the state in fp32: each step's decay (exp of
an fp32 g, ~2^-23 relative) and FMA err ~2^-24 relative, and the state forgets its past
geometrically (exp(g) <= ~0.97 for most keys here), so the state's error stays ~1e-6 of its
size (the final state, compared in fp32, far inside either tolerance); o is a K-term fp32 dot
of the state (~sqrt(K) 2^-24) -- with a split K axis NK fp32 partials added in fp32 -- then
rounded once to the output dtype: half an ulp on the GPU, up to one ulp with the interpreter's
truncating cast, 2^-7 = 7.8e-3 (bf16) / 2^-10 = 9.8e-4 (fp16) of an element <= max|ref|. bf16
1e-2 and fp16 2e-3 (the harness's defaults) bound that; torch_baseline (the same loop in fp32,
rounded once) stays inside them too. When the final state is stored, the compared vector is o
and hT flattened together (max|ref| is then the larger of the two; hT's elements are O(10)).
Measured: kernel max error <= 0.47 % (bf16) and 0.024 % (fp16) of max|ref|, the baseline <= 0.23 % /
0.024 %.
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
KERNEL = "fused_recurrent_gla"
ROLE = "held-out-17"
TOL = {"bf16": 1e-2, "fp16": 2e-3}
H200_SMS = 132
H200_SMEM_PER_BLOCK = 227 * 1024
SM120_SMEM_PER_BLOCK = 99 * 1024


def _cfg(bk, bv, ls, w, st=1):
    return {"BLOCK_K": bk, "BLOCK_V": bv, "LOOP_STAGES": ls, "num_warps": w, "num_stages": st}


def _pt(B, T, H_, K, V, dtype, g_dtype="fp32", h0=False, store_ht=False):
    return {"B": B, "T": T, "H": H_, "K": K, "V": V, "dtype": dtype, "g_dtype": g_dtype, "h0": h0,
            "store_ht": store_ht}


# case -> (point, cfg); comments: (NV, NK, B H) grid x T steps
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        # (2, 3, 2) x 7: K 40 in three 16-blocks (the last 8 masked), V 24 in two 16s, h0 in, hT out
        "split_k_h0_ht_bf16": (_pt(1, 7, 2, 40, 24, "bf16", "fp32", True, True), _cfg(16, 16, 1, 1, 1)),
        # (2, 1, 2) x 11: BLOCK_K 32 > K 20, o written directly, fp16 gates
        "single_k_block_fp16": (_pt(2, 11, 1, 20, 36, "fp16", "input"), _cfg(32, 32, 2, 2, 2)),
        # (1, 1, 3) x 9: exact 64 x 64 state, no masks, bf16 gates, hT out
        "full_tile_ht_bf16": (_pt(1, 9, 3, 64, 64, "bf16", "input", False, True), _cfg(64, 64, 3, 4, 1)),
        # (1, 4, 4) x 5: K 100 in four 32-blocks, V 50 in one masked 64-block, h0 in
        "split_k_h0_fp16": (_pt(2, 5, 2, 100, 50, "fp16", "fp32", True, False), _cfg(32, 64, 3, 2, 2)),
        # (2, 1, 3) x 1: a single step from h0 (T = 1), hT out
        "one_step_bf16": (_pt(3, 1, 1, 16, 40, "bf16", "fp32", True, True), _cfg(16, 32, 2, 4, 1)),
        # (2, 1, 1) x 40: a longer walk (the state's memory and the pipelined loads wrap around)
        "long_walk_fp16": (_pt(1, 40, 1, 33, 17, "fp16", "input", False, True), _cfg(64, 16, 3, 1, 1)),
        # (1, 2, 2) x 12: K 128 split in two 64-blocks, V 30
        "split_k2_bf16": (_pt(2, 12, 1, 128, 30, "bf16", "fp32"), _cfg(64, 32, 1, 4, 2)),
    },
}

# configs compiled for sm_90 at the first POINT (BASELINE first), and for sm_120
COMPILE_CFGS: dict[str, list[dict]] = {
    KERNEL: [_cfg(64, 64, 2, 2), _cfg(16, 32, 1, 1), _cfg(32, 64, 3, 4), _cfg(64, 32, 2, 1)],
}
SM120_CFGS = [_cfg(64, 64, 2, 2), _cfg(32, 32, 3, 1), _cfg(16, 64, 1, 4)]


def _sweep():
    return H.study_sweeps([KERNEL], ROLE)[KERNEL]      # (configs, points, axes) of scripts/rank_study.py SWEEPS


# ----------------------------------------------------------------- the pytest side
@pytest.mark.parametrize("kernel,name", [(k, n) for k, cases in CASES.items() for n in cases])
def test_example_matches_reference(kernel, name):
    res = H.interpreter_results(HERE, kernel)[name]
    assert "error" not in res, f"{kernel}/{name}: {res.get('error')}"
    p = CASES[kernel][name][0]
    n_o = p["B"] * p["T"] * p["H"] * p["V"]
    numel = n_o + (p["B"] * p["H"] * p["K"] * p["V"] if p["store_ht"] else 0)
    assert res["numel"] == numel
    for what, r in (("kernel", res), ("torch_baseline", res["baseline"])):
        assert r["n_bad"] == 0, H.mismatch(r, f"{kernel}/{name} {what}")


def test_cases_cover_every_code_path():
    """Each tunable takes >= 2 values; both dtypes, both gate dtypes, h0 and hT each on and off, a
    split K axis (partial sums) and a single K block, K and V ragged against their blocks, BLOCK_K
    larger than K, T = 1."""
    H.assert_tunables_covered(CASES)
    mod = load_example(KERNEL)
    cases = list(CASES[KERNEL].values())
    assert {p["dtype"] for p, _ in cases} == set(mod.DTYPES)
    assert {p["g_dtype"] for p, _ in cases} == {"fp32", "input"}
    assert {p["h0"] for p, _ in cases} == {p["store_ht"] for p, _ in cases} == {True, False}
    nk = {mod._splits(c, p["K"], p["V"])[0] for p, c in cases}
    assert 1 in nk and max(nk) >= 3
    assert any(p["K"] % c["BLOCK_K"] for p, c in cases) and any(p["V"] % c["BLOCK_V"] for p, c in cases)
    assert any(c["BLOCK_K"] > p["K"] for p, c in cases)
    assert any(p["K"] % c["BLOCK_K"] == 0 and p["V"] % c["BLOCK_V"] == 0 for p, c in cases)
    assert min(p["T"] for p, _ in cases) == 1
    for p, c in cases:
        assert len(mod.secondary_kernels(c, p)) == (mod._splits(c, p["K"], p["V"])[0] > 1)


def test_sweep_fits_the_points():
    """The study sweep: 54 configs (BLOCK_K 16 / 32 / 64 x BLOCK_V 32 / 64 x LOOP_STAGES 1 / 2 / 3 x
    1 / 2 / 4 warps, num_stages 1) with BASELINE among them; at every POINT each config is valid,
    launches >= 64 CTAs (the fewest: 64 at the third point's 64 x 64 tiles, 16 walks of a 128 x 128
    state; 512-4096 at the first, 256-2048 at the second) and its shared memory (the prefetch
    ring, at most 2 x (3 BLOCK_K + BLOCK_V) x 4 bytes, plus the reduction's scratch) is far inside
    227 KiB. (Every config was compiled for sm_90 with triton 3.6.0 at every point: all 162
    compile, in ~0.2-4.6 s each (~1.6 min in all); shared memory 0-2 KiB; registers 32-255:
    BLOCK_K 16 32-92, 32 x 32 40-96, 32 x 64 56-162, 64 x 32 56-168, 64 x 64 on 1 warp 161-255, on
    2 warps 123-168, on 4 warps 96-189. Spills (ptxas' spill bytes, all small): 64 x 64 on 1 warp
    with the prefetch on at the first point (LOOP_STAGES 2: 8, 3: 2), and at the third point three
    LOOP_STAGES-1 configs held at 72 registers (32 x 32 on 2 warps, 32 x 64 and 64 x 32 on 4
    warps: 6 each); the other 157 none. The same binaries as with num_stages = LOOP_STAGES.)"""
    cfgs, points, axes = _sweep()
    mod = load_example(KERNEL)
    assert set(axes) == set(mod.TUNABLES)
    assert all(len(v) >= 2 for k, v in axes.items() if k != "num_stages") and axes["num_stages"] == [1]
    full = [dict(zip(axes, v)) for v in itertools.product(*axes.values())]
    assert 40 <= len(full) <= 72 and len(cfgs) == len(full) and mod.BASELINE in full
    assert points == mod.POINTS or len(points) == 3
    for p in mod.POINTS:
        for c in full:
            mod._check_cfg(c)
            nv, nk, bh = mod.grid(c, p)
            assert nv * nk * bh >= 64, (p, c)
            assert 2 * 4 * (3 * c["BLOCK_K"] + c["BLOCK_V"]) + 4 * 1024 <= H200_SMEM_PER_BLOCK
            assert mod.loop_iterations(c, p) == p["T"]
    # the points differ in character: a wide split state, many small walks, few long walks
    assert [p["B"] * p["H"] for p in mod.POINTS] == [16, 256, 16]
    assert mod.POINTS[2]["T"] == max(p["T"] for p in mod.POINTS)
    assert mod.POINTS[0]["K"] // min(axes["BLOCK_K"]) > 1 and mod.POINTS[1]["K"] == max(axes["BLOCK_K"])


def test_launcher_hooks_agree_with_shapes():
    """At every default point and a few configs: example_args has the shapes and dtypes of a launch
    (meta tensors; o or the fp32 partials; h0 / hT only when the point has them), the constexprs
    of the cfg and the point; grid is (NV, NK, B H); the secondary sum only with a split K axis;
    bytes_moved counts q, k, g, v, o (and the states) once; inputs < 4 GB."""
    import torch

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "example_args", "torch_baseline", "secondary_kernels", "fused_recurrent_gla"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert len(mod.POINTS) == 3 and {p["dtype"] for p in mod.POINTS} == {"bf16", "fp16"}
    assert {p["g_dtype"] for p in mod.POINTS} == {"fp32", "input"}
    for cfg in [mod.BASELINE] + COMPILE_CFGS[KERNEL]:
        for p in mod.POINTS:
            B, T, Hh, K, V = (p[n] for n in ("B", "T", "H", "K", "V"))
            dt = {"bf16": torch.bfloat16, "fp16": torch.float16}[p["dtype"]]
            args = mod.example_args(cfg, p)
            nk, nv = -(-K // cfg["BLOCK_K"]), -(-V // cfg["BLOCK_V"])
            assert mod.grid(cfg, p) == (nv, nk, B * Hh)
            for n in ("Q", "K", "G"):
                assert args[n].device.type == "meta" and args[n].shape == (B, T, Hh, K)
            assert args["Q"].dtype == args["K"].dtype == args["V"].dtype == dt
            assert args["G"].dtype == (torch.float32 if p["g_dtype"] == "fp32" else dt)
            assert args["V"].shape == (B, T, Hh, V)
            if nk == 1:
                assert args["O"].shape == (B, T, Hh, V) and args["O"].dtype == dt
            else:
                assert args["O"].shape == (nk, B, T, Hh, V) and args["O"].dtype == torch.float32
            assert (args["H0"] is not None) == p["h0"] == args["USE_H0"]
            assert (args["HT"] is not None) == p["store_ht"] == args["STORE_HT"]
            for n in ("H0", "HT"):
                if args[n] is not None:
                    assert args[n].shape == (B, Hh, K, V) and args[n].dtype == torch.float32
            assert (args["T"], args["H"], args["K_DIM"], args["V_DIM"]) == (T, Hh, K, V)
            assert abs(args["scale"] - K ** -0.5) < 1e-12
            assert (args["BLOCK_K"], args["BLOCK_V"], args["LOOP_STAGES"]) == \
                (cfg["BLOCK_K"], cfg["BLOCK_V"], cfg["LOOP_STAGES"])
            assert H.meta_nbytes(args) < 4 * 2**30
            sec = mod.secondary_kernels(cfg, p)
            if nk == 1:
                assert sec == []
            else:
                (s,) = sec
                n = B * T * Hh * V
                assert s["grid"] == -(-n // mod.SUM_BLOCK) and s["iterations"] == nk
                assert s["tile_bytes"] == 4 * mod.SUM_BLOCK and s["dram_bytes"] in (0, s["tile_bytes"])
            e = dt.itemsize
            ge = 4 if p["g_dtype"] == "fp32" else e
            states = 4 * B * Hh * K * V * (int(p["h0"]) + int(p["store_ht"]))
            assert mod.bytes_moved(p) == B * T * Hh * (2 * K * e + K * ge + 2 * V * e) + states
            assert mod.flops(p) == 5 * B * T * Hh * K * V
            # inputs (q, k, g, v, h0) under 4 GB
            ins = sum(args[n].numel() * args[n].element_size() for n in ("Q", "K", "V", "G", "H0")
                      if args[n] is not None)
            assert ins < 4 * 2**30


def test_hooks_on_small_inputs():
    """make_inputs' tensors (shapes, dtypes, g <= 0, the seed's), the reference's and baseline's
    shapes; T = 0 returns an empty o and hT = h0 without a launch."""
    import torch

    mod = load_example(KERNEL)
    p = _pt(2, 5, 3, 20, 12, "fp16", "input", True, True)
    inputs = mod.make_inputs(p, seed=1, device="cpu")
    assert inputs["q"].shape == inputs["k"].shape == inputs["g"].shape == (2, 5, 3, 20)
    assert inputs["v"].shape == (2, 5, 3, 12) and inputs["h0"].shape == (2, 3, 20, 12)
    assert inputs["q"].dtype == inputs["g"].dtype == torch.float16 and inputs["h0"].dtype == torch.float32
    assert bool((inputs["g"] <= 0).all()) and float(inputs["g"].float().min()) > -2
    assert float(inputs["k"].float().std()) > 0.5 and float(inputs["h0"].std()) > 0.5
    assert torch.equal(mod.make_inputs(p, seed=1, device="cpu")["q"], inputs["q"])
    assert not torch.equal(mod.make_inputs(p, seed=2, device="cpu")["q"], inputs["q"])
    p32 = _pt(1, 3, 1, 8, 8, "bf16")
    i32 = mod.make_inputs(p32, device="cpu")
    assert i32["g"].dtype == torch.float32 and i32["h0"] is None and not i32["store_ht"]
    ref = mod.reference(inputs)
    assert ref.shape == (2 * 5 * 3 * 12 + 2 * 3 * 20 * 12,) and ref.dtype == torch.float32
    assert mod.reference(i32).shape == (1, 3, 1, 8)
    assert mod.torch_baseline(i32).dtype == torch.bfloat16
    z = dict(inputs, q=inputs["q"][:, :0], k=inputs["k"][:, :0], v=inputs["v"][:, :0], g=inputs["g"][:, :0])
    o, ht = mod.fused_recurrent_gla(z["q"], z["k"], z["v"], z["g"], None, z["h0"], True)
    assert o.shape == (2, 0, 3, 12) and torch.equal(ht, inputs["h0"])


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    q = torch.randn(1, 4, 2, 8).to(torch.bfloat16)
    v = torch.randn(1, 4, 2, 6).to(torch.bfloat16)
    g = torch.zeros(1, 4, 2, 8)
    with pytest.raises(ValueError, match="BLOCK_K=24"):
        mod.fused_recurrent_gla(q, q, v, g, BLOCK_K=24)
    with pytest.raises(ValueError, match="BLOCK_V=8"):
        mod.fused_recurrent_gla(q, q, v, g, BLOCK_V=8)
    with pytest.raises(ValueError, match="LOOP_STAGES=0"):
        mod.fused_recurrent_gla(q, q, v, g, LOOP_STAGES=0)
    with pytest.raises(ValueError, match="one dtype"):
        mod.fused_recurrent_gla(q, q.half(), v, g)
    with pytest.raises(ValueError, match="g must be"):
        mod.fused_recurrent_gla(q, q, v, g.double())
    with pytest.raises(ValueError, match="expected q"):
        mod.fused_recurrent_gla(q, q, v[:, :3], g)
    with pytest.raises(ValueError, match="initial_state"):
        mod.fused_recurrent_gla(q, q, v, g, initial_state=torch.zeros(1, 2, 8, 5))
    with pytest.raises(ValueError, match="dtype 'fp32'"):
        mod.make_inputs(_pt(1, 2, 1, 4, 4, "fp32"), device="cpu")
    with pytest.raises(ValueError, match="g_dtype 'fp8'"):
        mod.example_args(mod.BASELINE, _pt(1, 2, 1, 4, 4, "bf16", "fp8"))


def test_examples_import_without_torch():
    """The launcher contract: the module imports with no torch (it is imported inside the functions)."""
    proc = H.imports_without_torch([KERNEL])
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr[-2000:]


@pytest.mark.slow
@pytest.mark.parametrize("kernel", list(COMPILE_CFGS))
def test_example_compiles_sm90(shared_cache, kernel):
    """On sm_90: BASELINE and three more (16 / 32 / 64-row tiles, 1-4 warps, LOOP_STAGES 1-3)
    compile without spills in a few KiB of shared memory; with LOOP_STAGES > 1 the walk's loads
    are prefetched with cp.async, with 1 they are not (and the launch's num_stages alone changes
    nothing); the partial-sum kernel compiles too."""
    from occmodel import compile_kernel

    mod = load_example(kernel)
    assert COMPILE_CFGS[kernel][0] == mod.BASELINE
    for cfg, res in H.compile_results(kernel, COMPILE_CFGS[kernel], "sm_90"):
        assert res.status == "ok", f"{kernel} {cfg} on sm_90: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.shared <= 4096 and res.n_spills == 0, (cfg, res.n_regs, res.shared)
    for ls, st, cp in ((1, 1, False), (1, 3, False), (3, 1, True)):
        cfg = _cfg(32, 64, ls, 2, st)
        res = compile_kernel(mod._kernel, args=mod.example_args(cfg, mod.POINTS[0]), arch="sm_90",
                             num_warps=2, num_stages=st, keep_ir=True)
        assert res.status == "ok", res.message
        assert ("cp.async" in res.ptx) == cp, (ls, st)
    n = 4 * 2048 * 4 * 512
    import torch
    res = compile_kernel(mod._sum_kernel, args=dict(P=torch.empty((4 * n,), device="meta"),
                                                    O=torch.empty((n,), dtype=torch.bfloat16, device="meta"),
                                                    N=n, NK=4, BLOCK=mod.SUM_BLOCK),
                         arch="sm_90", num_warps=mod.SUM_WARPS, num_stages=1)
    assert res.status == "ok" and res.n_spills == 0, res.message


@pytest.mark.slow
def test_example_compiles_sm120(shared_cache):
    """On sm_120 (99 KiB a block) the same tiles compile and fit."""
    for cfg, res in H.compile_results(KERNEL, SM120_CFGS, "sm_120"):
        assert res.status == "ok", f"{cfg} on sm_120: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.shared <= SM120_SMEM_PER_BLOCK and res.n_spills == 0


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["sm_120", "sm_90"])
def test_other_points_compile(shared_cache, arch):
    """The second point (h0 in, hT out, bf16 gates, K = 64: one K block at BLOCK_K 64) and the third
    (fp16, hT out) at two configs."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    for cfg in (_cfg(64, 64, 2, 2), _cfg(16, 32, 3, 1)):
        for p in mod.POINTS[1:]:
            res = compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch=arch,
                                 num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
            assert res.status == "ok" and res.n_spills == 0, f"{p} on {arch}: {res.status}: {res.message}"
            assert res.shared <= (H200_SMEM_PER_BLOCK if arch == "sm_90" else SM120_SMEM_PER_BLOCK)


# ----------------------------------------------------------------- the subprocess side
if __name__ == "__main__":
    H.run_cases(sys.argv[1], CASES[sys.argv[1]], TOL, baseline=True)
