"""examples/rmsnorm_bwd.py against its fp64 torch reference on the CPU through Triton's
interpreter, its launcher hooks against the shapes, its study sweep against the points, and
a compile for sm_90 and sm_120 from its own ``example_args``.

As in test_examples_round12_a.py, the interpreter must be chosen before triton is imported,
so the cases run in a subprocess (this file run as a script:
``python tests/test_examples_round13_b.py rmsnorm_bwd``) that prints one JSON line; the tests
assert per case. Each case checks both outputs of the backward: dx (what ``launch`` returns,
the study's correctness gate) and dw (the second kernel's column sums of the programs'
partial rows, against ``reference_grads``), and torch_baseline's dx. A second subprocess
(``... api``) checks what the cases do not see: an empty batch, bitwise-repeatable results
(no atomics: the partials are summed in a fixed order), a column-strided x copied first, dx
independent of the number of programs, the device-less default SM count, output dtypes.

The cases set the point's ``sms`` (the SM count the persistent grid is sized for) to 1-8, so
programs walk several row tiles. Shapes are small and odd: M not a multiple of BLOCK_M (the
masked last tile) and smaller than it; N not a power of two (the masked lanes), a power of two,
and 3 (N = 1 is left out: its dx = rstd g (1 - x^2 rstd^2) is all cancellation, ~eps / x^2);
a row tile count that P does not divide (programs one tile apart); a grid capped by the tile
count (PROGRAMS_PER_SM x sms > tiles); one program walking 25 tiles; Gemma's (1 + w) offset;
an fp32 weight under bf16 activations; rows as views of wider buffers; a BLOCK_N wider than
next_power_of_2(N). Every tunable takes >= 2 values and the cases bracket each swept value
(LOOP_STAGES 1, 2, 3: plain and pipelined loops).

Tolerance (x max|ref|, absolute, per element): the reference is fp64 from the same rounded
inputs and the same saved fp32 rstd; the kernel works in fp32 (a row sum of <= 256 products:
relative error ~1e-6) and rounds once to the output's dtype, dx to x's and dw to w's. bf16
1.5e-2: the interpreter's fp32 -> bf16 cast truncates (up to one bf16 ulp, 2^-7 relative,
where the GPU rounds to nearest, half that); fp16 2e-3 (an fp16 ulp is 2^-10 relative); fp32
1e-4 (fp32 arithmetic only: dx = rstd g - c x subtracts terms no larger than a few x max|dx|).
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
KERNEL = "rmsnorm_bwd"
ROLE = "held-out-13"
TOL = {"fp32": 1e-4, "bf16": 1.5e-2, "fp16": 2e-3}


def _cfg(bm, pps, ls, w, s=1, block_n=None):
    c = {"BLOCK_M": bm, "PROGRAMS_PER_SM": pps, "LOOP_STAGES": ls, "num_warps": w, "num_stages": s}
    if block_n is not None:
        c["BLOCK_N"] = block_n
    return c


def _pt(M, N, dtype, offset=0.0, sms=2, w_dtype=None):
    p = {"M": M, "N": N, "dtype": dtype, "offset": offset, "sms": sms}
    if w_dtype is not None:
        p["w_dtype"] = w_dtype
    return p


# kernel module -> case name -> (point, cfg)
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        "ragged_m_n_uneven_programs_bf16": (_pt(37, 100, "bf16", sms=3), _cfg(2, 2, 2, 4)),
        "gemma_offset_fp16": (_pt(45, 72, "fp16", 1.0, sms=2), _cfg(4, 1, 3, 2, 2)),
        "exact_pow2_fp32": (_pt(32, 64, "fp32", sms=2), _cfg(1, 2, 1, 2)),
        "rows_fewer_than_block_bf16": (_pt(3, 40, "bf16", sms=4), _cfg(4, 1, 2, 4, 3)),
        "single_row_fp32": (_pt(1, 33, "fp32", sms=4), _cfg(1, 4, 1, 1)),
        "grid_capped_by_tiles_bf16": (_pt(9, 256, "bf16", sms=8), _cfg(1, 8, 3, 8)),
        "fp32_weight_bf16_x": (_pt(50, 96, "bf16", sms=2, w_dtype="fp32"), _cfg(2, 3, 1, 4, 2)),
        "strided_rows_fp16": (_pt(29, 48, "fp16", sms=3), _cfg(2, 1, 2, 2)),
        "wide_block_n_bf16": (_pt(20, 50, "bf16", 1.0, sms=2), _cfg(1, 1, 1, 4, block_n=128)),
        "one_program_long_loop_fp32": (_pt(200, 128, "fp32", 1.0, sms=1), _cfg(8, 1, 3, 16)),
        "three_columns_fp16": (_pt(11, 3, "fp16", sms=2), _cfg(2, 1, 2, 1)),
        "wide_rows_few_programs_bf16": (_pt(17, 200, "bf16", sms=1), _cfg(1, 2, 2, 8, 3)),
    },
}

# configs compiled for each arch at the module's first POINT (BASELINE first); all fit sm_120's
# 99 KiB of shared memory at N = 3584
COMPILE_CFGS: dict[str, list[dict]] = {
    KERNEL: [_cfg(1, 1, 1, 8), _cfg(2, 2, 3, 8), _cfg(1, 4, 2, 16), _cfg(2, 8, 3, 16)],
}


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """Edit a case's inputs: x and dy as row views of wider buffers."""
    import torch

    if name == "strided_rows_fp16":
        for key, pad in (("x", 8), ("dy", 24)):
            t = inputs[key]
            wide = torch.zeros((t.shape[0], t.shape[1] + pad), dtype=t.dtype)
            wide[:, :t.shape[1]] = t
            inputs[key] = wide[:, :t.shape[1]]
            assert inputs[key].stride() == (t.shape[1] + pad, 1)


def _sweep_axes() -> dict:
    return H.study_sweeps([KERNEL], ROLE)[KERNEL][2]      # the study's sweep (scripts/rank_study.py SWEEPS)


# ----------------------------------------------------------------- the pytest side
def _results(kernel: str) -> dict:
    return H.interpreter_results(HERE, kernel)


@pytest.mark.parametrize("kernel,name", [(k, n) for k, cases in CASES.items() for n in cases])
def test_example_matches_reference(kernel, name):
    res = _results(kernel)[name]
    assert "error" not in res, f"{kernel}/{name}: {res.get('error')}"
    point = CASES[kernel][name][0]
    assert res["shape"] == [point["M"], point["N"]] and res["dw"]["shape"] == [point["N"]]
    assert res["dtype"] == point["dtype"] and res["dw_dtype"] == point.get("w_dtype", point["dtype"])
    for what, r in (("dx", res), ("dw", res["dw"]), ("torch_baseline dx", res["baseline"])):
        assert r["n_bad"] == 0, H.mismatch(r, f"{kernel}/{name} {what}")
    assert res["programs"] == load_example(kernel).grid(CASES[kernel][name][1], point)


def test_api_edges():
    env = dict(os.environ, TRITON_INTERPRET="1", PYTHONWARNINGS="ignore")
    env.pop("CUDA_VISIBLE_DEVICES", None)
    proc = subprocess.run([sys.executable, str(HERE), "api"], env=env, capture_output=True, text=True, timeout=300,
                          cwd=HERE.parent.parent)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    assert proc.returncode == 0 and lines, proc.stderr[-3000:]
    res = json.loads(lines[-1])
    assert "error" not in res, res["error"]
    assert all(res.values()), res


def test_cases_cover_every_tunable_value():
    """Each tunable takes at least two values over the cases and the cases bracket each swept
    value; the M tail, M < BLOCK_M, the N tail, N a power of two and N = 3, uneven and equal
    tile counts per program, a grid capped by the tiles, a long loop, both offsets, every
    dtype and a weight dtype unlike x's are hit."""
    import triton

    mod = load_example(KERNEL)
    H.assert_tunables_covered(CASES)
    cases = list(CASES[KERNEL].values())
    for k, vals in _sweep_axes().items():
        tested = {c[k] for _, c in cases}
        assert min(tested) <= min(vals) and max(tested) >= max(vals), (k, tested)
    assert {c["LOOP_STAGES"] for _, c in cases} >= {1, 2, 3}
    assert any(p["M"] % c["BLOCK_M"] for p, c in cases) and any(p["M"] < c["BLOCK_M"] for p, c in cases)
    assert any(p["N"] & (p["N"] - 1) for p, _ in cases) and any(p["N"] == triton.next_power_of_2(p["N"]) > 1
                                                                for p, _ in cases)
    assert any(p["N"] < 4 for p, _ in cases) and any(c.get("BLOCK_N", 0) > triton.next_power_of_2(p["N"])
                                                      for p, c in cases)
    iters = [mod.cta_iterations(c, p) for p, c in cases]
    assert any(len(set(it)) == 2 for it in iters) and any(len(it) > 1 and len(set(it)) == 1 and it[0] > 1
                                                         for it in iters)
    assert any(max(it) >= 20 for it in iters)
    assert any(mod.grid(c, p) == triton.cdiv(p["M"], c["BLOCK_M"]) < c["PROGRAMS_PER_SM"] * p["sms"] for p, c in cases)
    assert {p["offset"] for p, _ in cases} == {0.0, 1.0}
    assert {p["dtype"] for p, _ in cases} == set(mod.DTYPES)
    assert any(p.get("w_dtype", p["dtype"]) != p["dtype"] for p, _ in cases)


def test_sweep_fits_the_points():
    """The study sweep: the TUNABLES, each but num_stages over >= 2 values, 48 configs with
    BASELINE among them; at every POINT each config is valid, launches >= 132 programs (every SM busy) that
    each walk >= 2 row tiles, holds <= 64 elements of a tile and <= 32 of a row a thread
    (BLOCK_M x BLOCK_N / 32 num_warps of x and of dy, BLOCK_N / 32 num_warps of w and of the dw
    accumulator: one warp count less, 128 and 64, spills), and its pipelined loop's shared memory
    ((LOOP_STAGES - 1) x (BLOCK_M rows of x and dy + one row of w), plus the dw accumulator's
    layout conversion) fits an H200's 227 KiB per block. (Every config was compiled for sm_90
    with triton 3.6.0 at every point: all 144 compile, each in <= 3.2 s, 32-254 registers,
    32 B - 160 KiB of shared memory (LOOP_STAGES 1: 32 B - 16 KiB, the reductions' scratch;
    2: 12-80 KiB; 3: 24-160 KiB); no spills but BLOCK_M 2 x 16 warps with LOOP_STAGES 2 or 3
    at N = 8192, 4 words (8 configs). num_warps 4 and BLOCK_M 4 were left out: at N = 8192 they
    spill 26-1,850 words. num_stages is held at 1: the loop names its own stage count, so the
    launch's changes nothing, see test_stages_levers.)"""
    import triton

    axes = _sweep_axes()
    mod = load_example(KERNEL)
    assert set(axes) == set(mod.TUNABLES) and axes["num_stages"] == [1]
    assert all(len(v) >= 2 for k, v in axes.items() if k != "num_stages")
    cfgs = [dict(zip(axes, v)) for v in itertools.product(*axes.values())]
    assert len(cfgs) == 48 and mod.BASELINE in cfgs
    assert H.study_sweeps([KERNEL], ROLE)[KERNEL][0] == cfgs
    for p in mod.POINTS:
        bn = triton.next_power_of_2(p["N"])
        e = 4 if p["dtype"] == "fp32" else 2
        for c in cfgs:
            mod._check_cfg(c)
            args = mod.example_args(c, p)
            assert args["BLOCK_N"] == bn and args["LOOP_STAGES"] == c["LOOP_STAGES"] and args["NUM_SMS"] == 132
            assert args["PROGRAMS_PER_SM"] == c["PROGRAMS_PER_SM"]
            assert mod.grid(c, p) >= 132 and mod.loop_iterations(c, p) >= 2, (p, c)
            assert c["BLOCK_M"] * bn <= 64 * 32 * c["num_warps"] and bn <= 32 * 32 * c["num_warps"], (p, c)
            smem = (c["LOOP_STAGES"] - 1) * (c["BLOCK_M"] * bn * 2 * e + bn * e) + 4 * bn
            assert smem <= 227 * 1024, (p, c)


def test_launcher_hooks_agree_with_shapes():
    """At every default point: the meta tensors of example_args are the bytes bytes_moved
    counts (x, dy read and dx written once, w, rstd; the workspace stand-in is dw's [N] in
    fp32 where dw itself is written in w's dtype), their shapes and the launch's strides;
    grid, cta_iterations and loop_iterations are the persistent tiling; the points are real
    models' hidden sizes with activations several times the L2."""
    import torch
    import triton

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "reference_grads", "bytes_moved", "flops", "grid",
               "loop_iterations", "cta_iterations", "example_args", "torch_baseline", "secondary_kernels",
               "rms_norm_backward"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert len(mod.POINTS) == 3 and {p["dtype"] for p in mod.POINTS} == {"bf16", "fp32"}
    assert {p["N"] for p in mod.POINTS} == {3584, 8192, 1024} and {p["offset"] for p in mod.POINTS} == {0.0, 1.0}
    sweep = [dict(zip(_sweep_axes(), v)) for v in itertools.product(*_sweep_axes().values())]
    for cfg in [mod.BASELINE] + COMPILE_CFGS[KERNEL] + sweep[::7]:
        for p in mod.POINTS:
            M, N = p["M"], p["N"]
            e = 4 if p["dtype"] == "fp32" else 2
            dt = torch.float32 if e == 4 else torch.bfloat16
            args = mod.example_args(cfg, p)
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for v in args.values())
            assert H.meta_nbytes(args) == mod.bytes_moved(p) - N * e + 4 * N
            assert mod.bytes_moved(p) == 3 * M * N * e + 2 * N * e + 4 * M
            assert 3 * M * N * e > 3 * 50 * 2**20 and M * N * e * 3 < 4 * 2**30   # > 3x the L2; inputs < 4 GB
            for k in ("X", "DY", "DX"):
                assert args[k].shape == (M, N) and args[k].dtype == dt
            assert args["W"].shape == (N,) and args["W"].dtype == dt
            assert args["RSTD"].shape == (M,) and args["RSTD"].dtype == torch.float32
            assert args["DWP"].dtype == torch.float32
            assert (args["M"], args["N"], args["stride_xm"], args["stride_dym"], args["stride_dxm"],
                    args["stride_p"]) == (M, N, N, N, N, N)
            assert args["offset"] == p["offset"] and args["BLOCK_M"] == cfg["BLOCK_M"]
            tiles = triton.cdiv(M, cfg["BLOCK_M"])
            P = mod.grid(cfg, p)
            assert P == min(cfg["PROGRAMS_PER_SM"] * 132, tiles)
            its = mod.cta_iterations(cfg, p)
            assert len(its) == P and sum(its) == tiles and max(its) - min(its) <= 1
            assert mod.loop_iterations(cfg, p) == max(its) == triton.cdiv(tiles, P)
            assert mod.flops(p) == 9 * M * N
            (sec,) = mod.secondary_kernels(cfg, p)
            assert sec["grid"] == triton.cdiv(N, mod.REDUCE_BLOCK_N)
            assert sec["iterations"] == triton.cdiv(P, mod.REDUCE_BLOCK_P)
            assert sec["tile_bytes"] == 4 * mod.REDUCE_BLOCK_P * mod.REDUCE_BLOCK_N and sec["dram_bytes"] == 0
            assert P * N * 4 <= 35 * 10**6                      # the workspace stays in the 50 MB L2


def test_hooks_on_small_points_and_inputs():
    """The hooks on a small point; make_inputs' tensors (rstd is the forward's, the weight is
    Gemma's w - 1 under an offset, one seed gives one set); the reference formula against torch
    autograd through the RMSNorm forward in fp64 (rstd recomputed from x, so its dependence on
    x is differentiated too)."""
    import torch

    mod = load_example(KERNEL)
    p = _pt(37, 100, "bf16", sms=3)
    c = _cfg(2, 2, 2, 4)
    assert mod.grid(c, p) == 6 and mod.cta_iterations(c, p) == [4, 3, 3, 3, 3, 3] and mod.loop_iterations(c, p) == 4
    assert mod.grid(_cfg(4, 1, 2, 4), _pt(3, 40, "bf16", sms=4)) == 1
    assert mod.cta_iterations(_cfg(1, 8, 3, 8), _pt(9, 256, "bf16", sms=8)) == [1] * 9
    assert mod.bytes_moved(p) == 3 * 37 * 100 * 2 + 2 * 100 * 2 + 4 * 37
    assert mod.bytes_moved(_pt(37, 100, "bf16", w_dtype="fp32")) == 3 * 37 * 100 * 2 + 2 * 100 * 4 + 4 * 37
    args = mod.example_args(c, p)
    assert args["BLOCK_N"] == 128 and args["LOOP_STAGES"] == 2 and args["W"].dtype == torch.bfloat16
    assert (args["PROGRAMS_PER_SM"], args["NUM_SMS"]) == (2, 3)
    assert mod.example_args(_cfg(1, 1, 1, 4, block_n=256), p)["BLOCK_N"] == 256
    assert mod.example_args(c, _pt(5, 64, "fp16", w_dtype="fp32"))["W"].dtype == torch.float32
    for offset in (0.0, 1.0):
        pt = _pt(24, 80, "fp32", offset)
        inputs = mod.make_inputs(pt, seed=3, device="cpu")
        x, dy, w, rstd = inputs["x"], inputs["dy"], inputs["weight"], inputs["rstd"]
        assert x.shape == dy.shape == (24, 80) and w.shape == (80,) and rstd.shape == (24,)
        assert rstd.dtype == torch.float32 and inputs["offset"] == offset and inputs["num_sms"] == 2
        assert torch.allclose(rstd, torch.rsqrt(x.square().mean(1) + mod.EPS))
        assert float(rstd.max() / rstd.min()) > 1.5                   # rows of different spread
        assert abs(float((w + offset).mean()) - 1.0) < 0.1 and float(w.std()) > 0.03
        assert torch.equal(mod.make_inputs(pt, seed=3, device="cpu")["x"], x)
        assert not torch.equal(mod.make_inputs(pt, seed=4, device="cpu")["x"], x)
        xr = x.double().requires_grad_()
        wr = w.double().requires_grad_()
        y = xr * torch.rsqrt(xr.square().mean(1, keepdim=True) + mod.EPS) * (wr + offset)
        y.backward(dy.double())
        ref, ref_w = mod.reference(inputs), mod.reference_grads(inputs)
        assert ref.dtype == ref_w.dtype == torch.float32
        assert torch.allclose(ref.double(), xr.grad, rtol=1e-5, atol=1e-6 * float(xr.grad.abs().max()))
        assert torch.allclose(ref_w.double(), wr.grad, rtol=1e-5, atol=1e-6 * float(wr.grad.abs().max()))
        base = mod.torch_baseline(inputs)
        assert base.dtype == torch.float32 and torch.allclose(base, ref, rtol=1e-4, atol=1e-5)
    big = mod.make_inputs(mod.POINTS[0] | {"M": 4}, device="cpu")
    assert big["x"].dtype == torch.bfloat16 and big["weight"].dtype == torch.bfloat16 and big["num_sms"] == 132


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    inputs = mod.make_inputs(_pt(8, 40, "bf16"), device="cpu")
    x, dy, w, rstd = inputs["x"], inputs["dy"], inputs["weight"], inputs["rstd"]
    with pytest.raises(ValueError, match="BLOCK_M=3"):
        mod.rms_norm_backward(dy, x, w, rstd, BLOCK_M=3)
    with pytest.raises(ValueError, match="PROGRAMS_PER_SM=0"):
        mod.rms_norm_backward(dy, x, w, rstd, PROGRAMS_PER_SM=0)
    with pytest.raises(ValueError, match="LOOP_STAGES=0"):
        mod.rms_norm_backward(dy, x, w, rstd, LOOP_STAGES=0)
    with pytest.raises(ValueError, match="num_sms=0"):
        mod.rms_norm_backward(dy, x, w, rstd, num_sms=0)
    with pytest.raises(ValueError, match=r"BLOCK_N=32 must be a power of two >= N=40"):
        mod.rms_norm_backward(dy, x, w, rstd, BLOCK_N=32)
    with pytest.raises(ValueError, match="BLOCK_N=96"):
        mod.rms_norm_backward(dy, x, w, rstd, BLOCK_N=96)
    with pytest.raises(ValueError, match="rows wider than 16384"):
        big = torch.zeros((1, 16385), dtype=torch.bfloat16)
        mod.rms_norm_backward(big, big, torch.ones(16385, dtype=torch.bfloat16), torch.ones(1))
    with pytest.raises(ValueError, match=r"expected dy \[M, N\], x \[M, N\], weight \[N\]"):
        mod.rms_norm_backward(dy[:4], x, w, rstd)
    with pytest.raises(ValueError, match=r"expected dy \[M, N\]"):
        mod.rms_norm_backward(dy, x, w[:39], rstd)
    with pytest.raises(ValueError, match=r"rstd must be fp32 \[8\]"):
        mod.rms_norm_backward(dy, x, w, rstd.double())
    with pytest.raises(ValueError, match=r"rstd must be fp32 \[8\]"):
        mod.rms_norm_backward(dy, x, w, rstd[:7])
    with pytest.raises(ValueError, match="share one fp16 / bf16 / fp32 dtype"):
        mod.rms_norm_backward(dy.half(), x, w, rstd)
    with pytest.raises(ValueError, match="share one"):
        mod.rms_norm_backward(dy.double(), x.double(), w, rstd)
    with pytest.raises(ValueError, match="weight dtype torch.float64"):
        mod.rms_norm_backward(dy, x, w.double(), rstd)
    with pytest.raises(ValueError, match="int8"):
        mod.make_inputs(_pt(4, 8, "int8"), device="cpu")
    with pytest.raises(ValueError, match="fp64"):
        mod.bytes_moved(_pt(4, 8, "bf16", w_dtype="fp64"))


def test_examples_import_without_torch():
    """The launcher contract: the module imports with no torch (it is imported inside the functions)."""
    proc = H.imports_without_torch(CASES)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr[-2000:]


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["sm_120", "sm_90"])
@pytest.mark.parametrize("kernel", list(COMPILE_CFGS))
def test_example_compiles(shared_cache, kernel, arch):
    mod = load_example(kernel)
    assert COMPILE_CFGS[kernel][0] == mod.BASELINE
    for cfg, res in H.compile_results(kernel, COMPILE_CFGS[kernel], arch):
        assert res.status == "ok", f"{kernel} {cfg} on {arch}: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.shared >= 0


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["sm_120", "sm_90"])
def test_every_point_compiles(shared_cache, arch):
    """BASELINE at the 8192-wide bf16 point and the fp32 point, and at an odd shape (M and N not
    16-divisible, an fp32 weight); on sm_90 also the sweep's largest shared-memory config (2 rows
    x 8192 x 3 stages: ~160 KiB) at the 8192-wide point."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    odd = _pt(37, 100, "bf16", 1.0, w_dtype="fp32")
    runs = [(mod.BASELINE, p) for p in mod.POINTS[1:] + [odd]]
    if arch == "sm_90":
        runs.append((_cfg(2, 1, 3, 8), mod.POINTS[1]))
    for cfg, p in runs:
        res = compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch=arch, num_warps=cfg["num_warps"],
                             num_stages=cfg["num_stages"])
        assert res.status == "ok", f"{p} {cfg} on {arch}: {res.status}: {res.message}"
        assert res.shared <= 227 * 1024


@pytest.mark.slow
def test_stages_levers(shared_cache):
    """The row loop is a tl.range with num_stages=LOOP_STAGES: LOOP_STAGES 1, 2, 3 give three
    cubins for sm_90, the pipelined ones staging x, dy and w in shared memory (why the sweep
    sweeps it); the launch's num_stages 1, 2, 3 at one LOOP_STAGES give one cubin (why the
    sweep holds it at 1)."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    p = mod.POINTS[0]

    def build(ls, s):
        return compile_kernel(mod._kernel, args=mod.example_args(_cfg(1, 1, ls, 8, s), p), arch="sm_90", num_warps=8,
                              num_stages=s, keep_ir=True)

    res = [build(ls, 1) for ls in _sweep_axes()["LOOP_STAGES"]]
    assert all(r.status == "ok" for r in res)
    assert len({r.cubin for r in res}) == 3 and None not in {r.cubin for r in res}
    assert res[0].shared < res[1].shared < res[2].shared
    assert res[2].shared >= 2 * (4096 * 2 * 2 + 4096 * 2)          # two stages of x, dy and w rows
    for ls in (1, 3):
        cubins = {build(ls, s).cubin for s in (1, 2, 3)}
        assert len(cubins) == 1 and None not in cubins, ls


# ----------------------------------------------------------------- the subprocess side
def _run_cases(kernel: str) -> None:
    """Under TRITON_INTERPRET=1: every case through the wrapper (dx and dw) and launch (dx,
    the study's gate) against the references, and torch_baseline; one JSON line."""
    import torch

    assert os.environ.get("TRITON_INTERPRET") == "1", "run with TRITON_INTERPRET=1"
    mod = load_example(kernel)
    results = {}
    for name, (point, cfg) in CASES[kernel].items():
        try:
            inputs = mod.make_inputs(point, seed=len(name), device="cpu")
            _prepare(name, point, inputs)
            dx, dw = mod.rms_norm_backward(inputs["dy"], inputs["x"], inputs["weight"], inputs["rstd"],
                                           inputs["offset"], num_sms=inputs["num_sms"], **cfg)
            ref = mod.reference(inputs)
            res = H.compare(dx, ref, point["dtype"], TOL)
            wdt = point.get("w_dtype", point["dtype"])
            res["dw"] = H.compare(dw, mod.reference_grads(inputs), wdt, TOL)
            res["dtype"] = {torch.bfloat16: "bf16", torch.float16: "fp16", torch.float32: "fp32"}[dx.dtype]
            res["dw_dtype"] = {torch.bfloat16: "bf16", torch.float16: "fp16", torch.float32: "fp32"}[dw.dtype]
            res["launch_same"] = bool(torch.equal(mod.launch(inputs, cfg), dx))
            res["baseline"] = H.compare(mod.torch_baseline(inputs), ref, point["dtype"], TOL)
            res["programs"] = mod._programs(point["M"], {**cfg}, inputs["num_sms"])
            if not res["launch_same"]:
                res["n_bad"] = max(res["n_bad"], 1)
            results[name] = res
        except Exception as exc:          # reported per case by the test
            results[name] = {"error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(results))


def _run_api() -> None:
    """Under TRITON_INTERPRET=1: the wrapper's edges; one JSON line of named booleans."""
    import torch

    assert os.environ.get("TRITON_INTERPRET") == "1", "run with TRITON_INTERPRET=1"
    mod = load_example(KERNEL)
    try:
        inputs = mod.make_inputs(_pt(23, 70, "bf16", 1.0), seed=9, device="cpu")
        x, dy, w, rstd = inputs["x"], inputs["dy"], inputs["weight"], inputs["rstd"]
        kw = dict(BLOCK_M=2, PROGRAMS_PER_SM=2, LOOP_STAGES=2, num_warps=4, num_sms=2)
        dx, dw = mod.rms_norm_backward(dy, x, w, rstd, 1.0, **kw)
        dx2, dw2 = mod.rms_norm_backward(dy, x, w, rstd, 1.0, **kw)
        xt = x.t().contiguous().t()                       # [M, N] with unit row stride: copied first
        dxt, dwt = mod.rms_norm_backward(dy, xt, w, rstd, 1.0, **kw)
        dx_p, dw_p = mod.rms_norm_backward(dy, x, w, rstd, 1.0, **{**kw, "PROGRAMS_PER_SM": 5})
        dx_d, dw_d = mod.rms_norm_backward(dy, x, w, rstd, 1.0)          # defaults, NUM_SMS programs on a CPU
        e_dx, e_dw = mod.rms_norm_backward(dy[:0], x[:0], w, rstd[:0], 1.0, **kw)
        ref_w = mod.reference_grads(inputs)
        res = {"repeat_bitwise": bool(torch.equal(dx, dx2) and torch.equal(dw, dw2)),
               "column_strided_same": xt.stride(1) != 1 and bool(torch.equal(dxt, dx) and torch.equal(dwt, dw)),
               "dx_independent_of_programs": bool(torch.equal(dx_p, dx)),
               "dw_close_for_other_programs":
                   float((dw_p.float() - ref_w).abs().max()) <= 1.5e-2 * float(ref_w.abs().max()),
               "defaults_run": bool(torch.equal(dx_d, dx)) and dw_d.shape == (70,),
               "dtypes_kept": dx.dtype == torch.bfloat16 and dw.dtype == torch.bfloat16
               and mod.rms_norm_backward(dy, x, w.float(), rstd, 1.0, **kw)[1].dtype == torch.float32,
               "empty_batch": e_dx.shape == (0, 70) and e_dw.shape == (70,) and bool((e_dw == 0).all()),
               "fresh_outputs": dx.is_contiguous() and dx.data_ptr() not in (x.data_ptr(), dy.data_ptr())}
    except Exception as exc:          # reported by the test
        res = {"error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(res))


if __name__ == "__main__":
    if sys.argv[1] == "api":
        _run_api()
    else:
        _run_cases(sys.argv[1])
