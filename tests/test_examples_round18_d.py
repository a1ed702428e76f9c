"""examples/lora_expand.py (the multi-LoRA expand: y[t] += scale * x[t] @ B[lora_id[s]] in place,
one CTA per (BLOCK_M tokens of one segment, BLOCK_N columns), the rank walked by tl.dot in 16-wide
steps or by FMA rank-1 updates) against its fp64 torch reference on the CPU through Triton's
interpreter, its launcher hooks against the shapes, its study sweep against the points, and a
compile for sm_90 and sm_120 from its own ``example_args``.

As in test_examples_round15_a.py, the interpreter must be chosen before triton is imported, so the
cases run in a subprocess (this file run as a script: ``python tests/test_examples_round18_d.py
lora_expand``) that prints one JSON line; the tests assert per case.

Shapes are small, odd and ragged: N not a multiple of BLOCK_N (EVEN_N off) and a multiple (on),
ranks 8 and 24 (the dot path's masked rank step, EVEN_K off) and 16 / 32 (on), segments shorter
and longer than BLOCK_M (several row blocks, a masked last one, programs past a short segment's
end), base-model segments (lora_id -1: their rows must come back unchanged), and, through
_prepare, an empty segment and segments that leave rows uncovered (unchanged too), y as a column
slice of a wider fused-output buffer (row stride > N), x as a row-strided view, B a rank slice of
a buffer padded to a larger max rank (adapter stride > R N), both dtypes, both USE_DOT values,
BLOCK_M 16 / 32 / 64, BLOCK_N 16 / 32 / 64 / 128, 4 and 8 warps, 2 and 3 stages.

Tolerance (x max|ref|, absolute, per element): the reference is fp64 from the same bf16 / fp16
x, B and y0; the kernel forms x @ B in fp32 (each product of two 8- or 11-bit mantissas exact in
fp32, R <= 64 terms: ~R 2^-24 relative, < 1e-5), adds y0 and scale * acc in fp32 and rounds once
to the output dtype: half an ulp on the GPU, up to one ulp with the interpreter's truncating cast;
an ulp is at most 2^-7 = 7.8e-3 (bf16) / 2^-10 = 9.8e-4 (fp16) of an element <= max|ref|. bf16
1e-2 and fp16 2e-3 (the harness's defaults) bound that; torch_baseline (the product rounded to
the dtype, then the sum: two half-ulp roundings, <= 2^-7 / 2^-10 of max|ref|) stays inside too.
"""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
KERNEL = "lora_expand"
TOL = {"bf16": 1e-2, "fp16": 2e-3}
H200_SMS = 132
H200_SMEM_PER_BLOCK = 227 * 1024
SM120_SMEM_PER_BLOCK = 99 * 1024


def _cfg(bm, bn, dot, w, st):
    return {"BLOCK_M": bm, "BLOCK_N": bn, "USE_DOT": dot, "num_warps": w, "num_stages": st}


def _pt(T, S, L, R, N, dtype, sigma=0.8, base=0):
    return {"T": T, "S": S, "L": L, "R": R, "N": N, "dtype": dtype, "sigma": sigma, "base": base}


CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        # R 8 (dot: one half-masked rank step), N 70 (ragged columns), a base segment
        "dot_r8_ragged_fp16": (_pt(37, 5, 3, 8, 70, "fp16", base=1), _cfg(16, 32, 1, 4, 2)),
        # the same through FMA (8 rank-1 updates)
        "fma_r8_ragged_fp16": (_pt(37, 5, 3, 8, 70, "fp16", base=1), _cfg(16, 32, 0, 4, 3)),
        # R 32: two even rank steps; N 96 with BLOCK_N 32 (EVEN_N); segments of up to ~30 > BLOCK_M 16
        "dot_r32_even_bf16": (_pt(61, 3, 4, 32, 96, "bf16"), _cfg(16, 32, 1, 8, 3)),
        # R 24: two steps, the second half masked; BLOCK_M 32 over segments longer than it
        "dot_r24_long_segments_bf16": (_pt(90, 2, 2, 24, 50, "bf16", sigma=0.3), _cfg(32, 16, 1, 4, 2)),
        # FMA over R 24, 64-row blocks, 8 warps, N a multiple of BLOCK_N (EVEN_N)
        "fma_r24_bf16": (_pt(90, 3, 2, 24, 128, "bf16"), _cfg(64, 64, 0, 8, 2)),
        # many one-to-few-token segments (decode-like), two base ones, BLOCK_N 128 over N 130
        "dot_decode_like_fp16": (_pt(23, 12, 5, 16, 130, "fp16", sigma=0.5, base=2), _cfg(16, 128, 1, 4, 3)),
        # y as a column slice of a wider fused buffer, x row-strided, B a rank slice of a padded buffer
        "strided_views_bf16": (_pt(41, 4, 3, 16, 72, "bf16"), _cfg(32, 64, 1, 8, 2)),
        # FMA with the same strided views
        "fma_strided_views_fp16": (_pt(41, 4, 3, 16, 72, "fp16"), _cfg(32, 32, 0, 4, 2)),
        # an empty segment and rows that no segment covers (left unchanged)
        "gaps_and_empty_bf16": (_pt(50, 6, 4, 8, 48, "bf16"), _cfg(16, 16, 1, 4, 2)),
        # R 64 (four dot steps), 64-row blocks, 8 warps, 3 stages
        "dot_r64_fp16": (_pt(80, 2, 2, 64, 40, "fp16", sigma=0.2), _cfg(64, 32, 1, 8, 3)),
    },
}
STRIDED = ("strided_views_bf16", "fma_strided_views_fp16")
GAPS = ("gaps_and_empty_bf16",)

# configs compiled for sm_90 at every POINT (BASELINE first), and for sm_120
COMPILE_CFGS = [_cfg(32, 128, 1, 4, 2), _cfg(64, 128, 1, 8, 3), _cfg(16, 64, 0, 4, 2), _cfg(64, 64, 0, 8, 3)]
SM120_CFGS = [_cfg(32, 128, 1, 4, 2), _cfg(64, 64, 1, 8, 3), _cfg(16, 128, 0, 4, 2)]


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """Edit a case's inputs: strided views (y inside a wider buffer, x row-strided, B rank-padded);
    an empty segment and uncovered rows."""
    import torch

    if name in STRIDED:
        x, b, y = inputs["x"], inputs["lora_b"], inputs["y"]
        T, R = x.shape
        L, _, N = b.shape
        xw = torch.randn((T, R + 8), dtype=x.dtype)
        xw[:, 3:3 + R] = x
        inputs["x"] = xw[:, 3:3 + R]
        bw = torch.randn((L, R + 16, N), dtype=b.dtype)
        bw[:, :R] = b
        inputs["lora_b"] = bw[:, :R]
        yw = torch.randn((T, N + 40), dtype=y.dtype)
        yw[:, 24:24 + N] = y
        inputs["y"] = yw[:, 24:24 + N]
        inputs["y_wide"] = yw
        assert inputs["x"].stride() == (R + 8, 1) and inputs["lora_b"].stride(0) == (R + 16) * N
        assert inputs["y"].stride() == (N + 40, 1)
    if name in GAPS:
        lens = inputs["seg_len"]
        live = (inputs["lora_id"] >= 0).nonzero().squeeze(1).tolist()
        lens[live[0]] = 0                         # an empty segment
        big = int(torch.argmax(lens))
        lens[big] -= 3                            # its last 3 rows are in no segment
        assert int(lens[big]) > 0


# ----------------------------------------------------------------- the pytest side
def _results(kernel: str) -> dict:
    return H.interpreter_results(HERE, kernel)


@pytest.mark.parametrize("kernel,name", [(k, n) for k, cases in CASES.items() for n in cases])
def test_example_matches_reference(kernel, name):
    res = _results(kernel)[name]
    assert "error" not in res, f"{kernel}/{name}: {res.get('error')}"
    point = CASES[kernel][name][0]
    assert res["shape"] == [point["T"], point["N"]]
    for what, r in (("kernel", res), ("torch_baseline", res["baseline"])):
        assert r["n_bad"] == 0, H.mismatch(r, f"{kernel}/{name} {what}")


def test_untouched_rows_and_buffer():
    """Rows of base-model segments, of the empty segment and past a shortened one come back bitwise
    as y0; y's wider buffer keeps its other columns; launch returns the caller's y."""
    res = _results("extras")
    assert "error" not in res, res.get("error")
    assert res["untouched_equal"] and res["n_untouched"] > 0, res
    assert res["wide_outside_equal"] and res["same_buffer"], res


def test_cases_cover_every_code_path():
    """Each tunable takes >= 2 values; both dtypes, EVEN_N and EVEN_K on and off (with the dot),
    FMA on a ragged N, base segments, segments longer than BLOCK_M and programs past a segment's end."""
    H.assert_tunables_covered(CASES)
    mod = load_example(KERNEL)
    cases = list(CASES[KERNEL].values())
    assert {p["dtype"] for p, _ in cases} == set(mod.DTYPES)
    assert {p["N"] % c["BLOCK_N"] == 0 for p, c in cases} == {True, False}
    assert {p["R"] % mod.K_STEP == 0 for p, c in cases if c["USE_DOT"]} == {True, False}
    assert {p["N"] % c["BLOCK_N"] == 0 for p, c in cases if not c["USE_DOT"]} == {True, False}
    assert any(p["base"] for p, _ in cases)
    seen = set()
    for p, c in cases:
        lens, _ = mod.segment_plan(p)
        seen |= {"multi_block"} if int(lens.max()) > c["BLOCK_M"] else set()
        seen |= {"past_end"} if 0 in mod.cta_iterations(c, p) else set()
        seen |= {"masked_rows"} if any(int(n) % c["BLOCK_M"] for n in lens) else set()
    assert seen == {"multi_block", "past_end", "masked_rows"}, seen


def _smem_bound(cfg) -> int:
    """Shared memory of a config, an upper bound of every sm_90 compile seen: a [BLOCK_M, BLOCK_N]
    16-bit layout conversion of y's tile plus num_stages buffers of the dot's x [BLOCK_M, 16] and
    B [16, BLOCK_N] tiles."""
    return 2 * cfg["BLOCK_M"] * cfg["BLOCK_N"] + cfg["num_stages"] * (cfg["BLOCK_M"] + cfg["BLOCK_N"]) * 16 * 2


def test_sweep_fits_the_points():
    """The study sweep: 48 configs (BLOCK_M 16 / 32 / 64 x BLOCK_N 64 / 128 x USE_DOT x 4 / 8 warps x
    2 / 3 stages) with BASELINE among them; at every POINT each config is valid, has >= 132 CTAs
    with work, and fits 227 KiB. (All 144 compiles for sm_90 with triton 3.6.0 took < 1.5 s each
    (~25 s in all): 30-255 registers (dot 30-168; FMA 32-255, BLOCK_M x BLOCK_N / threads fp32
    accumulators plus a BLOCK_M column of x per thread), 2.5-18 KiB of shared memory; spills: FMA
    64 x 128 on 4 warps 188 bytes (every point), and two 16-row dot configs on 8 warps 2 bytes at
    the third point (R 8).)"""
    axes = H.study_sweeps([KERNEL], "held-out-18")[KERNEL][2]
    mod = load_example(KERNEL)
    assert set(axes) == set(mod.TUNABLES)
    cfgs = [dict(zip(axes, v)) for v in itertools.product(*axes.values())]
    assert 40 <= len(cfgs) <= 72 and mod.BASELINE in cfgs
    for p in mod.POINTS:
        for c in cfgs:
            mod._check_cfg(c)
            its = mod.cta_iterations(c, p)
            assert sum(1 for i in its if i) >= H200_SMS, (p, c)
            assert _smem_bound(c) <= H200_SMEM_PER_BLOCK, (p, c)
    # the points differ in character: dtype, rank (EVEN_K), the tokens per segment
    assert {p["dtype"] for p in mod.POINTS} == {"bf16", "fp16"}
    assert {p["R"] % mod.K_STEP == 0 for p in mod.POINTS} == {True, False}
    means = sorted(p["T"] / p["S"] for p in mod.POINTS)
    assert means[0] <= 4 and means[-1] >= 1024


def test_launcher_hooks_agree_with_shapes():
    """At every default point: example_args has the launch's shapes and types (meta tensors, the
    segment arrays as CPU int32 with the plan's data), bytes_moved counts y's RMW for LoRA rows, x,
    the adapters used and the segment arrays once; grid / cta_iterations agree; inputs < 4 GB."""
    import torch

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "cta_iterations", "example_args", "torch_baseline", "lora_expand", "segment_plan"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert not hasattr(mod, "secondary_kernels")
    assert len(mod.POINTS) == 3
    for cfg in [mod.BASELINE] + COMPILE_CFGS:
        for p in mod.POINTS:
            args = mod.example_args(cfg, p)
            T, S, L, R, N = p["T"], p["S"], p["L"], p["R"], p["N"]
            dt = {"bf16": torch.bfloat16, "fp16": torch.float16}[p["dtype"]]
            for k in ("X", "B", "Y"):
                assert args[k].device.type == "meta" and args[k].dtype == dt
            assert args["X"].shape == (T, R) and args["B"].shape == (L, R, N) and args["Y"].shape == (T, N)
            lens, ids = mod.segment_plan(p)
            for k in ("SEG_START", "SEG_LEN", "LORA_ID"):
                assert args[k].device.type == "cpu" and args[k].dtype == torch.int32 and args[k].numel() == S
            assert args["SEG_LEN"].tolist() == lens.tolist() and args["LORA_ID"].tolist() == ids.tolist()
            assert args["SEG_START"][0] == 0 and int(args["SEG_START"][-1] + lens[-1]) == T
            assert (args["stride_xt"], args["stride_bl"], args["stride_br"], args["stride_yt"]) == (R, R * N, N, N)
            assert args["EVEN_N"] == (N % cfg["BLOCK_N"] == 0) and args["EVEN_K"] == (R % 16 == 0)
            assert args["K_STEP"] == mod.K_STEP == 16 and args["USE_DOT"] == cfg["USE_DOT"]
            assert H.meta_nbytes(args) < 4 * 2**30
            live = ids >= 0
            tl_ = int(lens[live].sum())
            used = int(ids[live].unique().numel())
            assert mod.bytes_moved(p) == 4 * tl_ * N + 2 * tl_ * R + 2 * used * R * N + 12 * S
            assert mod.flops(p) == 2 * tl_ * R * N
            gx, gy, gz = mod.grid(cfg, p)
            assert (gx, gy, gz) == (-(-N // cfg["BLOCK_N"]), -(-int(lens.max()) // cfg["BLOCK_M"]), S)
            its = mod.cta_iterations(cfg, p)
            it = mod.loop_iterations(cfg, p)
            assert it == (-(-R // 16) if cfg["USE_DOT"] else R)
            work = sum(-(-int(n) // cfg["BLOCK_M"]) for n, i in zip(lens, ids) if i >= 0) * gx
            assert len(its) == gx * gy * gz and set(its) <= {0, it} and its.count(it) == work


def test_hooks_on_small_points_and_inputs():
    """make_inputs' tensors (shapes, O(1) values, the seed's), the plan (sums to T, base count), the
    reference's and baseline's shapes; lora_expand's empty shapes launch nothing."""
    import torch

    mod = load_example(KERNEL)
    p = _pt(37, 5, 3, 8, 70, "fp16", base=1)
    inp = mod.make_inputs(p, seed=1, device="cpu")
    assert inp["x"].shape == (37, 8) and inp["lora_b"].shape == (3, 8, 70) and inp["y"].shape == (37, 70)
    assert inp["y"].dtype == torch.float16 and torch.equal(inp["y"], inp["y0"])
    assert inp["y"].data_ptr() != inp["y0"].data_ptr()
    lens, ids = mod.segment_plan(p)
    assert int(lens.sum()) == 37 and int(lens.min()) >= 1 and int((ids < 0).sum()) == 1
    assert inp["seg_len"].tolist() == lens.tolist() and inp["max_seg_len"] == int(lens.max())
    ref = mod.reference(inp)
    assert ref.shape == (37, 70) and ref.dtype == torch.float32 and 0.5 < float((ref - inp["y0"].float()).std()) * 2 < 3
    assert mod.torch_baseline(inp).shape == (37, 70)
    assert torch.equal(mod.make_inputs(p, seed=1, device="cpu")["x"], inp["x"])
    assert not torch.equal(mod.make_inputs(p, seed=2, device="cpu")["x"], inp["x"])
    x = torch.ones(0, 8, dtype=torch.float16)
    b = torch.ones(2, 8, 16, dtype=torch.float16)
    y = torch.ones(0, 16, dtype=torch.float16)
    z = torch.zeros(0, dtype=torch.int32)
    assert mod.lora_expand(x, b, y, z, z, z) is y


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    x = torch.ones(8, 16, dtype=torch.bfloat16)
    b = torch.ones(2, 16, 32, dtype=torch.bfloat16)
    y = torch.ones(8, 32, dtype=torch.bfloat16)
    s = torch.zeros(1, dtype=torch.int32)
    n = torch.full((1,), 8, dtype=torch.int32)
    with pytest.raises(ValueError, match="BLOCK_M=48"):
        mod.lora_expand(x, b, y, s, n, s, BLOCK_M=48)
    with pytest.raises(ValueError, match="BLOCK_N=8"):
        mod.lora_expand(x, b, y, s, n, s, BLOCK_N=8)
    with pytest.raises(ValueError, match="USE_DOT=2"):
        mod.lora_expand(x, b, y, s, n, s, USE_DOT=2)
    with pytest.raises(ValueError, match="fp16 / bf16"):
        mod.lora_expand(x.half(), b, y, s, n, s)
    with pytest.raises(ValueError, match="expected x"):
        mod.lora_expand(x, b[:, :8], y, s, n, s)
    with pytest.raises(ValueError, match="y must be"):
        mod.lora_expand(x, b, y[:4], s, n, s)
    with pytest.raises(ValueError, match="N contiguous"):
        mod.lora_expand(x, b, torch.ones(32, 8, dtype=torch.bfloat16).t(), s, n, s)
    with pytest.raises(ValueError, match="lora_id must be"):
        mod.lora_expand(x, b, y, s, n, s.float())
    with pytest.raises(ValueError, match="dtype 'fp32'"):
        mod.make_inputs(_pt(4, 1, 1, 8, 16, "fp32"), device="cpu")
    with pytest.raises(ValueError, match="T=3, S=4"):
        mod.segment_plan(_pt(3, 4, 1, 8, 16, "bf16"))


def test_examples_import_without_torch():
    proc = H.imports_without_torch(CASES)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr[-2000:]


@pytest.mark.slow
def test_example_compiles_sm90(shared_cache):
    """On sm_90, at every point: BASELINE and three more (dot and FMA, 16-64 rows, 4 and 8 warps)
    compile without spills inside the bound; the dot path runs on the tensor cores (mma / wgmma in
    the PTX), the FMA path has none."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    assert COMPILE_CFGS[0] == mod.BASELINE
    for p in mod.POINTS:
        for cfg in COMPILE_CFGS:
            res = compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch="sm_90", num_warps=cfg["num_warps"],
                                 num_stages=cfg["num_stages"], keep_ir=True)
            assert res.status == "ok", f"{cfg} at {p}: {res.status}: {res.message}"
            assert res.n_regs > 0 and res.n_spills == 0 and 0 < res.shared <= _smem_bound(cfg), (cfg, p)
            assert ("mma" in res.ptx) == bool(cfg["USE_DOT"]), (cfg, p)


@pytest.mark.slow
def test_example_compiles_sm120(shared_cache):
    """On sm_120 (99 KiB a block) dot and FMA configs compile and fit."""
    for cfg, res in H.compile_results(KERNEL, SM120_CFGS, "sm_120"):
        assert res.status == "ok", f"{cfg} on sm_120: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.shared <= SM120_SMEM_PER_BLOCK and res.n_spills == 0


# ----------------------------------------------------------------- the subprocess side
def _run_extras() -> None:
    """Under TRITON_INTERPRET=1: the gaps case and a strided case, checking the rows no live segment
    covers are bitwise y0 and the wide buffer's other columns are untouched; one JSON line."""
    import os

    import torch

    assert os.environ.get("TRITON_INTERPRET") == "1", "run with TRITON_INTERPRET=1"
    sys.path.insert(0, str(H.TESTS))
    from test_kernels_interpret import _patch_interpreter_bf16_dot
    _patch_interpreter_bf16_dot()
    mod = load_example(KERNEL)
    out = {}
    try:
        name = GAPS[0]
        point, cfg = CASES[KERNEL][name]
        inp = mod.make_inputs(point, seed=5, device="cpu")
        _prepare(name, point, inp)
        got = mod.launch(inp, cfg)
        covered = torch.zeros(point["T"], dtype=torch.bool)
        for s0, n, ad in zip(inp["seg_start"].tolist(), inp["seg_len"].tolist(), inp["lora_id"].tolist()):
            if ad >= 0:
                covered[s0:s0 + n] = True
        out["n_untouched"] = int((~covered).sum())
        out["untouched_equal"] = bool(torch.equal(got[~covered], inp["y0"][~covered]))
        out["same_buffer"] = got.data_ptr() == inp["y"].data_ptr()
        name = STRIDED[0]
        point, cfg = CASES[KERNEL][name]
        inp = mod.make_inputs(point, seed=6, device="cpu")
        _prepare(name, point, inp)
        before = inp["y_wide"].clone()
        mod.launch(inp, cfg)
        N = point["N"]
        keep = torch.ones(before.shape[1], dtype=torch.bool)
        keep[24:24 + N] = False
        out["wide_outside_equal"] = bool(torch.equal(inp["y_wide"][:, keep], before[:, keep]))
    except Exception as exc:          # reported by the test
        out = {"error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(out))


if __name__ == "__main__":
    if sys.argv[1] == "extras":
        _run_extras()
    else:
        H.run_cases(sys.argv[1], CASES[sys.argv[1]], TOL, prepare=_prepare, baseline=True)
