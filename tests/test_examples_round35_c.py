"""examples/batchnorm_bwd_nhwc.py (BatchNorm2d backward in training mode over a channels_last activation:
dbeta = sum dy, dgamma = sum dy xhat, dx = gamma invstd (dy - dbeta / M - xhat dgamma / M); a statistics kernel
writing per-row-block partials to an fp32 workspace, a fixed-order finalize, an elementwise dx kernel) against its
float64 reference on the CPU through Triton's interpreter, its launcher hooks against the shapes, its study sweep
against the points, and a compile for sm_90 (every sweep config at every point, both tunable kernels) and sm_120
from its own ``example_args``.

As in test_examples_round34_c.py the interpreter cases run in a subprocess (this file run as a script:
``python tests/test_examples_round35_c.py batchnorm_bwd_nhwc``) that prints one JSON line; the subprocess
installs the harness's interpreter fixes (bf16 rounding; the runtime loop bounds of the row walks).

Shapes are small and odd: C 5-300 (a partial channel block; 1-3 blocks), M = N H W from 2 to 105 rows (one row
block; several with a short last one and a partial last tile), fp16 / bf16. A strided case: x and dy channel
slices of NaN-padded NHWC buffers of 37 and 29 channels (a stray read past the slice shows as NaN).

Per case: launch's dx against the module's reference (the harness's tolerance); dgamma and dbeta against
reference_grads; a second run bitwise equal (no atomics); shape, dtype, channels_last contiguity of dx; the
inputs unchanged (their whole buffers); torch's native_batch_norm_backward within tolerance.
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
KERNEL = "batchnorm_bwd_nhwc"
ROLE = "held-out-35"
H200_SMS = 132
SM90_SMEM_PER_BLOCK = 227 * 1024
SM120_SMEM_PER_BLOCK = 99 * 1024

# the study's sweep (scripts/rank_study.py SWEEPS["batchnorm_bwd_nhwc"] once the lead adds it)
SWEEP_AXES = {"BLOCK_C": [32, 64, 128], "BLOCK_M": [8, 16, 32], "ROWS_PER_CTA": [512, 2048], "LOOP_STAGES": [1, 3],
              "num_warps": [4, 8], "num_stages": [1]}


def _cfg(bc, bm, rows, ls=3, w=4, st=1):
    return {"BLOCK_C": bc, "BLOCK_M": bm, "ROWS_PER_CTA": rows, "LOOP_STAGES": ls, "num_warps": w,
            "num_stages": st}


def _pt(N, C, H_, W, dtype="fp16"):
    return {"N": N, "C": C, "H": H_, "W": W, "dtype": dtype}


def _cfgs():
    return [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]


CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        # BASELINE: M 30 in one row block (one partial 32-row tile), C 70 in two 64-channel blocks (one partial)
        "baseline_fp16": (_pt(2, 70, 3, 5, "fp16"), _cfg(64, 32, 512, 3, 4)),
        # M 105 in 5 row blocks of 24 (the last 9 rows: a full and a partial 8-row tile), plain loads, 8 warps
        "multi_block_bf16": (_pt(3, 40, 5, 7, "bf16"), _cfg(32, 8, 24, 1, 8)),
        # C 300 in three 128-channel blocks, M 24 in two row blocks of 16 (the second 8 rows), num_stages 2
        "wide_c_fp16": (_pt(1, 300, 4, 6, "fp16"), _cfg(128, 16, 16, 3, 4, 2)),
        # x, dy channel slices of NaN-padded NHWC buffers (pixel strides 37 and 29), M 24 in two row blocks
        "strided_nan_bf16": (_pt(2, 24, 3, 4, "bf16"), _cfg(32, 16, 16, 1, 4)),
        # M 2 rows (one partial tile), C 5, 8 warps
        "two_rows_fp16": (_pt(1, 5, 1, 2, "fp16"), _cfg(32, 16, 32, 3, 8)),
        # M 90 walked 8 rows a step in one row block of 512 (12 steps, the last partial), C 33
        "long_walk_bf16": (_pt(2, 33, 5, 9, "bf16"), _cfg(64, 8, 512, 3, 4)),
    },
}
STRIDED = "strided_nan_bf16"
S_X, S_DY, OFF_X, OFF_DY = 37, 29, 7, 3             # the strided case's pixel strides and channel offsets

SM120_CFGS = [_cfg(64, 32, 512, 3, 4), _cfg(128, 32, 2048, 3, 4), _cfg(32, 8, 512, 1, 8)]
SPILLED = _cfg(128, 64, 512, 3, 8)                   # BLOCK_M 64, left out of the sweep


def _root(t):
    """The whole buffer under a view, 1-d."""
    return t.as_strided((t.untyped_storage().nbytes() // t.element_size(),), (1,), 0)


def _strided(t, S, off):
    """t [N, C, H, W] copied into channels off .. off + C of a NaN-filled [N, H, W, S] buffer, as a view."""
    import torch

    N, C, H_, W = t.shape
    buf = torch.full((N, H_, W, S), float("nan"), dtype=t.dtype)
    buf[..., off:off + C] = t.permute(0, 2, 3, 1)
    return buf[..., off:off + C].permute(0, 3, 1, 2)


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """The strided variant (module doc), then copies of the inputs' buffers."""
    if name == STRIDED:
        inputs["x"] = _strided(inputs["x"], S_X, OFF_X)
        inputs["dy"] = _strided(inputs["dy"], S_DY, OFF_DY)
    for k in ("x", "dy", "mean", "invstd", "gamma"):
        inputs[k + "_root0"] = _root(inputs[k]).clone()


# ----------------------------------------------------------------- the pytest side
def _results() -> dict:
    return H.interpreter_results(HERE, KERNEL)


@pytest.mark.parametrize("name", list(CASES[KERNEL]))
def test_example_matches_reference(name):
    res = _results()[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    p, cfg = CASES[KERNEL][name]
    assert res["n_bad"] == 0, H.mismatch(res, f"{name} launch")
    assert res["shape"] == [p["N"], p["C"], p["H"], p["W"]] and res["dtype"] == p["dtype"], res
    assert res["channels_last"] is True and res["inputs_unchanged"] is True, res
    assert res["dgamma_err"] <= 1e-4 * res["dgamma_scale"], res          # fp32 sums of the rounded inputs
    assert res["dbeta_err"] <= 1e-4 * res["dbeta_scale"], res
    assert res["deterministic"] is True, res
    tol = H.TOL[p["dtype"]]
    assert res["baseline_err"] <= 4 * tol * res["scale"], res
    M = p["N"] * p["H"] * p["W"]
    assert res["grid"] == [math.ceil(p["C"] / cfg["BLOCK_C"]), math.ceil(M / cfg["ROWS_PER_CTA"])], res
    if name == STRIDED:
        assert res["strides"] == [[3 * 4 * S_X, 1, 4 * S_X, S_X], [3 * 4 * S_DY, 1, 4 * S_DY, S_DY]], res


def test_every_tunable_is_covered():
    H.assert_tunables_covered(CASES)


def test_cases_cover_the_paths():
    """Several row blocks with a short last one, a partial last tile, a partial channel block, 1-3 channel
    blocks, both dtypes, each sweep value of BLOCK_C, LOOP_STAGES and num_warps."""
    cases = CASES[KERNEL]
    Ms = [(p["N"] * p["H"] * p["W"], p["C"], c) for p, c in cases.values()]
    assert any(M > c["ROWS_PER_CTA"] and M % c["ROWS_PER_CTA"] for M, _, c in Ms)
    assert any(min(M, c["ROWS_PER_CTA"]) % c["BLOCK_M"] for M, _, c in Ms)
    assert any(C % c["BLOCK_C"] for _, C, c in Ms) and any(C > 2 * c["BLOCK_C"] for _, C, c in Ms)
    assert {p["dtype"] for p, _ in cases.values()} == set(load_example(KERNEL).DTYPES)
    for k in ("BLOCK_C", "BLOCK_M", "LOOP_STAGES", "num_warps"):
        assert {c[k] for _, c in cases.values()} >= set(SWEEP_AXES[k]), k


def test_points_are_realistic():
    """Three points of different character (ResNet-50 stage 1 fp16: 802816 rows of 256 channels; stage 4 at
    batch 512 bf16: 25088 rows of 2048; a YOLO stride-4 stage bf16: 409600 rows of 128), each moving 0.5-2.1 GB
    over the five tensor passes: >= 100 us at 4.8 TB/s; memory-bound on the H200's fp32 units."""
    mod = load_example(KERNEL)
    P = mod.POINTS
    assert len(P) == 3 and {p["dtype"] for p in P} == set(mod.DTYPES)
    assert [(p["N"] * p["H"] * p["W"], p["C"]) for p in P] == [(802816, 256), (25088, 2048), (409600, 128)]
    for p in P:
        M, C = p["N"] * p["H"] * p["W"], p["C"]
        want = 5 * M * C * 2 + 20 * C
        assert mod.bytes_moved(p) == want and mod.flops(p) == 9 * M * C
        assert 0.5e9 <= want <= 2.1e9 and want / 4.8e12 >= 100e-6, p
        assert 2 * M * C * 2 > 2 * 50e6                                     # x + dy far past the L2
        assert mod.flops(p) / 60e12 < want / 4.8e12, p


def test_hooks_on_small_points_and_inputs():
    """make_inputs: shapes, dtypes, layouts, the seed, the saved statistics; reference by hand on a tiny case;
    torch_baseline; grid / loop_iterations / cta_iterations / secondary_kernels / example_args against the
    shapes."""
    import torch

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "reference_grads", "bytes_moved", "flops", "grid",
               "loop_iterations", "cta_iterations", "secondary_kernels", "example_args", "torch_baseline",
               "batch_norm_backward", "stats_example_args"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert mod.ROLE == ROLE and mod.SWEEP_AXES == SWEEP_AXES and set(mod.BASELINE) == set(mod.TUNABLES)
    p = _pt(3, 20, 6, 5, "bf16")
    inp = mod.make_inputs(p, seed=1, device="cpu")
    x, dy = inp["x"], inp["dy"]
    assert x.shape == dy.shape == (3, 20, 6, 5) and x.dtype == dy.dtype == torch.bfloat16
    assert x.is_contiguous(memory_format=torch.channels_last) and dy.is_contiguous(memory_format=torch.channels_last)
    for k in ("mean", "invstd", "gamma"):
        assert inp[k].shape == (20,) and inp[k].dtype == torch.float32 and inp[k].is_contiguous()
    var, mean = torch.var_mean(x.double(), dim=(0, 2, 3), unbiased=False)
    assert torch.allclose(inp["mean"].double(), mean, atol=1e-5)
    assert torch.allclose(inp["invstd"].double(), 1 / torch.sqrt(var + mod.EPS), rtol=1e-4)
    assert float(mean.abs().max()) > 0.5 and float(dy.float().mean(dim=(0, 2, 3)).abs().max()) > 0.1
    again = mod.make_inputs(p, seed=1, device="cpu")
    assert torch.equal(again["x"], x) and torch.equal(again["dy"], dy) and torch.equal(again["gamma"], inp["gamma"])
    assert not torch.equal(mod.make_inputs(p, seed=2, device="cpu")["x"], x)
    # by hand: one channel, 2 rows, x = [1, 3] (mean 2, invstd 1: xhat [-1, 1]), dy = [1, 5], gamma 2:
    # dbeta 6, dgamma 4, dx = 2 (dy - 3 - 2 xhat) = [0, 0] (with 2 rows every dy lies in span(1, xhat))
    hand = {"x": torch.tensor([1.0, 3.0]).view(1, 1, 1, 2), "dy": torch.tensor([1.0, 5.0]).view(1, 1, 1, 2),
            "mean": torch.tensor([2.0]), "invstd": torch.tensor([1.0]), "gamma": torch.tensor([2.0])}
    dx, dg, db = mod.reference_grads(hand)
    assert torch.equal(db, torch.tensor([6.0], dtype=torch.float64))
    assert torch.equal(dg, torch.tensor([4.0], dtype=torch.float64))
    assert torch.equal(dx, torch.zeros(1, 1, 1, 2, dtype=torch.float64))
    hand["dy"] = torch.tensor([1.0, 0.0]).view(1, 1, 1, 2)
    dx, dg, db = mod.reference_grads(hand)                  # dbeta 1, dgamma -1: 2 (dy - 0.5 + 0.5 xhat) = 0
    assert torch.equal(dx.view(-1), torch.tensor([0.0, 0.0], dtype=torch.float64))
    hand["x"] = torch.tensor([1.0, 1.0]).view(1, 1, 1, 2)  # saved stats off the data: xhat [-1, -1]
    dx, dg, db = mod.reference_grads(hand)                  # dgamma -1, dbeta 1: 2 ([1, 0] - 0.5 - 0.5)
    assert torch.equal(dx.view(-1), torch.tensor([0.0, -2.0], dtype=torch.float64))
    ref = mod.reference(inp)
    base = mod.torch_baseline(inp)
    assert base.dtype == torch.bfloat16 and base.shape == ref.shape == (3, 20, 6, 5)
    assert float((base.double() - ref).abs().max()) < 0.03 * float(ref.abs().max())
    # the hooks at a mid-size point: M 3 x 7 x 9 = 189 rows, C 100
    q = _pt(3, 100, 7, 9, "fp16")
    c = _cfg(32, 8, 64, 3, 4)
    assert mod.grid(c, q) == (4, 3) and mod.loop_iterations(c, q) == 8
    assert mod.cta_iterations(c, q) == [8] * 8 + [8] * 4
    c2 = _cfg(64, 16, 80, 1, 8)                                          # 80 + 80 + 29 rows
    assert mod.grid(c2, q) == (2, 3) and mod.loop_iterations(c2, q) == 5
    assert mod.cta_iterations(c2, q) == [5, 5, 5, 5, 2, 2]
    assert mod.loop_iterations(_cfg(32, 16, 512), q) == 12                # one block of all 189 rows
    sk = mod.secondary_kernels(c2, q)
    assert sk == [{"name": "_stats_kernel", "grid": 6, "iterations": 5, "tile_bytes": 2 * 2 * 16 * 64,
                   "dram_bytes": 2 * 2 * 16 * 64, "ahead": 0},
                  {"name": "_finalize_kernel", "grid": 2, "iterations": 1, "tile_bytes": 2 * 4 * 32 * 64,
                   "dram_bytes": 0}]
    assert mod.secondary_kernels(c, q)[0]["ahead"] == 2
    a = mod.example_args(c, q)
    for k in ("X", "DY", "DX"):
        assert a[k].device.type == "meta" and a[k].shape == (3, 100, 7, 9) and a[k].dtype == torch.float16
        assert a[k].is_contiguous(memory_format=torch.channels_last)
    for k in ("MEAN", "INVSTD", "GAMMA", "DGAMMA", "DBETA"):
        assert a[k].device.type == "meta" and a[k].shape == (100,) and a[k].dtype == torch.float32
    assert (a["M"], a["C"], a["stride_xm"], a["stride_dym"], a["stride_dxm"]) == (189, 100, 100, 100, 100)
    assert a["inv_m"] == 1 / 189
    assert (a["ROWS_PER_CTA"], a["BLOCK_M"], a["BLOCK_C"], a["LOOP_STAGES"]) == (64, 8, 32, 3)
    assert H.meta_nbytes(a) == 3 * 2 * 189 * 100 + 5 * 4 * 100
    s = mod.stats_example_args(c, q)
    assert s["WS"].shape == (2, 3, 100) and s["WS"].dtype == torch.float32 and s["stride_ws"] == 300
    assert mod.bytes_moved(q) == 5 * 2 * 189 * 100 + 20 * 100 and mod.flops(q) == 9 * 189 * 100


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    inp = mod.make_inputs(_pt(2, 8, 3, 3), device="cpu")
    x, dy, mean, invstd, gamma = (inp[k] for k in ("x", "dy", "mean", "invstd", "gamma"))

    def call(*a, **kw):
        a = a or (dy, x, mean, invstd, gamma)
        return mod.batch_norm_backward(*a, **kw)

    with pytest.raises(ValueError, match="BLOCK_C=48"):
        call(BLOCK_C=48)
    with pytest.raises(ValueError, match="BLOCK_M=0"):
        call(BLOCK_M=0)
    with pytest.raises(ValueError, match="ROWS_PER_CTA=40 must be a positive multiple of BLOCK_M=32"):
        call(ROWS_PER_CTA=40)
    with pytest.raises(ValueError, match="LOOP_STAGES=0"):
        call(LOOP_STAGES=0)
    with pytest.raises(ValueError, match="num_warps=3"):
        call(num_warps=3)
    with pytest.raises(ValueError, match="num_stages=0"):
        call(num_stages=0)
    with pytest.raises(ValueError, match="BLOCK_C x BLOCK_M = 32768"):
        call(BLOCK_C=256, BLOCK_M=128, ROWS_PER_CTA=512)
    with pytest.raises(ValueError, match=r"x and dy must be \[N, C, H, W\] of one shape"):
        call(dy, x[:, :4], mean, invstd, gamma)
    with pytest.raises(ValueError, match="x and dy must share one fp16 / bf16 dtype"):
        call(dy.float(), x.float(), mean, invstd, gamma)
    with pytest.raises(ValueError, match="x and dy must share"):
        call(dy.bfloat16(), x, mean, invstd, gamma)
    with pytest.raises(ValueError, match="x must be channels_last"):
        call(dy, x.contiguous(), mean, invstd, gamma)
    with pytest.raises(ValueError, match="dy must be channels_last"):
        call(dy.contiguous(), x, mean, invstd, gamma)
    with pytest.raises(ValueError, match=r"mean must be a contiguous fp32 \[8\]"):
        call(dy, x, mean.half(), invstd, gamma)
    with pytest.raises(ValueError, match=r"invstd must be a contiguous fp32 \[8\]"):
        call(dy, x, mean, invstd[:4], gamma)
    with pytest.raises(ValueError, match="gamma must be a contiguous"):
        call(dy, x, mean, invstd, gamma.double())
    with pytest.raises(ValueError, match="invstd must be on x's device"):
        call(dy, x, mean, invstd.to("meta"), gamma)
    with pytest.raises(ValueError, match="is empty"):
        call(dy[:0], x[:0], mean, invstd, gamma)
    with pytest.raises(ValueError, match="dtype 'fp32'"):
        mod.make_inputs(_pt(1, 4, 2, 2, "fp32"), device="cpu")
    with pytest.raises(ValueError, match="C=0"):
        mod.bytes_moved(_pt(1, 0, 2, 2))
    with pytest.raises(ValueError, match="H=2.5"):
        mod.flops(_pt(1, 4, 2.5, 2))
    with pytest.raises(ValueError, match="N=True"):
        mod.example_args(mod.BASELINE, _pt(True, 4, 2, 2))
    with pytest.raises(ValueError, match="BLOCK_C=3"):
        mod.grid(dict(mod.BASELINE, BLOCK_C=3), mod.POINTS[0])
    with pytest.raises(ValueError, match="LOOP_STAGES=None"):
        mod.loop_iterations(dict(mod.BASELINE, LOOP_STAGES=None), mod.POINTS[0])
    with pytest.raises(ValueError, match="ROWS_PER_CTA=24"):
        mod.secondary_kernels(dict(mod.BASELINE, ROWS_PER_CTA=24), mod.POINTS[0])
    with pytest.raises(ValueError, match="row blocks; at most 65535"):
        mod.grid(_cfg(64, 8, 8), mod.POINTS[0])


def test_sweep_fits_the_points():
    """The study sweep: 72 configs (BLOCK_C 32 / 64 / 128, BLOCK_M 8 / 16 / 32, ROWS_PER_CTA 512 / 2048,
    LOOP_STAGES 1 / 3, 4 / 8 warps, num_stages 1) with BASELINE among them; at every point each config is valid,
    its grid within 65535 row blocks and the loop / per-CTA steps consistent. (Every config was compiled for
    sm_90 at every point with triton 3.6.0 and 3.9: none spills -- the register and shared-memory ranges are in
    the module doc. Left out: BLOCK_M 64 -- 128 channels x 64 rows on 8 warps spills in _stats_kernel under 3.9.)"""
    mod = load_example(KERNEL)
    axes = SWEEP_AXES
    assert set(axes) == set(mod.TUNABLES) and mod.SWEEP_AXES == axes
    cfgs = _cfgs()
    assert 40 <= len(cfgs) <= 72 and mod.BASELINE in cfgs
    for p in mod.POINTS:
        M, C = p["N"] * p["H"] * p["W"], p["C"]
        for c in cfgs:
            mod._check_cfg(c)
            gx, gy = mod.grid(c, p)
            assert (gx, gy) == (math.ceil(C / c["BLOCK_C"]), math.ceil(M / c["ROWS_PER_CTA"])) and gy <= 65535
            assert gx * gy >= 200, (p, c)                     # the fewest: 16 x 13 (stage 4), 1 x 200 (YOLO)
            ci = mod.cta_iterations(c, p)
            assert len(ci) == gx * gy and max(ci) == mod.loop_iterations(c, p)
            assert sum(ci) == gx * sum(math.ceil(min(c["ROWS_PER_CTA"], M - i * c["ROWS_PER_CTA"]) / c["BLOCK_M"])
                                       for i in range(gy))
    # clearly worse configs are in: 2048-row CTAs at ResNet stage 4 give under one wave of 132 SMs x 8 CTAs
    assert mod.grid(_cfg(128, 32, 2048), mod.POINTS[1]) == (16, 13)


def test_sweep_matches_the_study():
    """scripts/rank_study.py's SWEEPS entry: the same axes, every config valid at the points."""
    configs, points, axes = H.study_sweeps([KERNEL], ROLE)[KERNEL]
    assert axes == SWEEP_AXES
    assert len(configs) == len(list(itertools.product(*SWEEP_AXES.values())))
    assert points == load_example(KERNEL).POINTS


def test_examples_import_without_torch():
    proc = H.imports_without_torch(CASES)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr[-2000:]


def _compile(mod, kernel, cfg, p, arch="sm_90"):
    from occmodel import compile_kernel

    args = (mod.example_args if kernel == "_kernel" else mod.stats_example_args)(cfg, p)
    return compile_kernel(getattr(mod, kernel), args=args, arch=arch, num_warps=cfg["num_warps"],
                          num_stages=cfg["num_stages"])


@pytest.mark.slow
@pytest.mark.parametrize("pi", [0, 1, 2])
def test_example_compiles_sm90(shared_cache, pi):
    """On sm_90 at each point: BASELINE, the most registers (128 channels x 32 rows on 4 warps, pipelined) and
    the smallest tile compile from example_args without spills, for `_kernel` and `_stats_kernel` alike; shared
    memory the LOOP_STAGES buffers (at most 2 x 2 tiles of x and dy, 32 KiB) plus the reductions' scratch.
    (Every config of the sweep was compiled at every point under both Tritons when the kernel was written: the
    module doc's figures; CI compiles these three.)"""
    mod = load_example(KERNEL)
    p = mod.POINTS[pi]
    base = dict(mod.BASELINE)
    for cfg in (base, dict(base, BLOCK_C=128, BLOCK_M=32, LOOP_STAGES=3, num_warps=4),
                dict(base, BLOCK_C=32, BLOCK_M=8, ROWS_PER_CTA=2048, LOOP_STAGES=1, num_warps=8)):
        assert cfg in _cfgs()
        for kernel in ("_kernel", "_stats_kernel"):
            res = _compile(mod, kernel, cfg, p)
            assert res.status == "ok", f"{kernel} {cfg} at point {pi} on sm_90: {res.status}: {res.message}"
            assert 0 < res.n_regs <= 255 and res.n_spills == 0, (kernel, pi, cfg, res.n_regs, res.n_spills)
            assert res.shared <= min(40 * 1024, SM90_SMEM_PER_BLOCK), (kernel, pi, cfg, res.shared)


@pytest.mark.slow
def test_finalize_compiles_sm90(shared_cache):
    """The fixed `_finalize_kernel` compiles for sm_90 without spills; so do the tunable ones at a 1 x 1 point."""
    import torch
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    ws = torch.empty((2, 1568, 256), dtype=torch.float32, device="meta")
    v = torch.empty((256,), dtype=torch.float32, device="meta")
    res = compile_kernel(mod._finalize_kernel, args=dict(WS=ws, DBETA=v, DGAMMA=v, P=1568, C=256, stride_ws=1568 * 256,
                                                         BLOCK_P=mod.FIN_BLOCK_P, BLOCK_C=mod.FIN_BLOCK_C),
                         arch="sm_90", num_warps=4, num_stages=1)
    assert res.status == "ok" and res.n_regs > 0 and res.n_spills == 0, (res.status, res.message)
    # a one-pixel, one-channel point: M, C, P and the workspace stride equal 1 become constants in Triton's
    # specialization; both tunable kernels still compile
    tiny = _pt(1, 1, 1, 1)
    for kernel in ("_kernel", "_stats_kernel"):
        r = _compile(mod, kernel, mod.BASELINE, tiny)
        assert r.status == "ok" and r.n_spills == 0, (kernel, r.status, r.message)


@pytest.mark.slow
def test_example_compiles_sm120(shared_cache):
    """On sm_120 (99 KiB a block): BASELINE, the largest tile and a small-tile config at the first point
    (ResNet stage 1, fp16) compile without spills within its shared memory."""
    for cfg, res in H.compile_results(KERNEL, SM120_CFGS, "sm_120"):
        assert res.status == "ok", f"{cfg} on sm_120: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.n_spills == 0, (cfg, res.n_regs, res.n_spills)
        assert 0 <= res.shared <= min(40 * 1024, SM120_SMEM_PER_BLOCK), (cfg, res.shared)


# ----------------------------------------------------------------- the subprocess side
def _run() -> None:
    """Every case through launch against reference (the harness's tolerance), the grads against
    reference_grads, a rerun, the inputs' buffers, torch_baseline; one JSON line."""
    import torch

    H.patch_interpreter_bf16_rounding()
    H.patch_interpreter_index()
    mod = load_example(KERNEL)
    names = {torch.float16: "fp16", torch.bfloat16: "bf16", torch.float32: "fp32"}

    def same(a, b):
        return torch.equal(a.isnan(), b.isnan()) and torch.equal(a.nan_to_num(7.0), b.nan_to_num(7.0))

    def extra(name, point, inputs, out, ref):
        cfg = CASES[KERNEL][name][1]
        kw = {k: cfg[k] for k in mod.TUNABLES}
        dx, dg, db = mod.batch_norm_backward(inputs["dy"], inputs["x"], inputs["mean"], inputs["invstd"],
                                             inputs["gamma"], **kw)
        dx2, dg2, db2 = mod.batch_norm_backward(inputs["dy"], inputs["x"], inputs["mean"], inputs["invstd"],
                                                inputs["gamma"], **kw)
        _, rg, rb = mod.reference_grads(inputs)
        base = mod.torch_baseline(inputs).double()
        M = point["N"] * point["H"] * point["W"]
        return {"dtype": names.get(out.dtype), "shape": list(out.shape),
                "channels_last": out.is_contiguous(memory_format=torch.channels_last),
                "dgamma_err": float((dg.double() - rg).abs().max()), "dgamma_scale": float(rg.abs().max()),
                "dbeta_err": float((db.double() - rb).abs().max()), "dbeta_scale": float(rb.abs().max()),
                "deterministic": bool(torch.equal(dx, dx2) and torch.equal(dg, dg2) and torch.equal(db, db2)
                                      and torch.equal(dx, out)),
                "baseline_err": float((base - ref).abs().max()),
                "inputs_unchanged": all(same(_root(inputs[k]), inputs[k + "_root0"])
                                        for k in ("x", "dy", "mean", "invstd", "gamma")),
                "grid": list(mod._plan(M, point["C"], cfg)),
                "strides": [list(inputs["x"].stride()), list(inputs["dy"].stride())]}

    H.run_cases(KERNEL, CASES[KERNEL], prepare=_prepare, extra=extra)


if __name__ == "__main__":
    _run()
