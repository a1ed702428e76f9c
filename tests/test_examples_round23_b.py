"""examples/int8_colwise_quant.py (per-output-channel symmetric int8 quantization of a [K, N] /
[E, K, N] fp16 / bf16 weight, N contiguous: scale[n] = max_k |W[k, n]| / 127, Q = round(W / scale)
clamped to +-127) against its torch reference on the CPU through Triton's interpreter, its
launcher hooks against the shapes, its study sweep against the points, and a compile for sm_90
and sm_120 from its own ``example_args``.

As in test_examples_round22_d.py the interpreter cases run in a subprocess (this file run as a
script: ``python tests/test_examples_round23_b.py int8_colwise_quant``) that prints one JSON line;
under triton 3.6 with numpy >= 2.3 it lets the row loops' runtime bound be read as an int (see
example_harness.patch_interpreter_index).

Shapes are small, odd and ragged: K not a multiple of TILE_K (a masked last row block, which pass
2 takes first) and a multiple (EVEN_K), N not a multiple of TILE_N (a masked last column band) and
N below 16 (TILE_N clamped to 16; odd N, no vector accesses), TILE_K clamped to next_pow2(K), one
row block and ten; a plain weight and stacked experts (E = 2, 3); a row-strided view (the first
N columns of a wider buffer, read in place); an all-zero column (scale 1.0, q 0) and a column with
one non-zero weight; exact .5 quotients (round half to even: 0.5 -> 0, 1.5 -> 2, -2.5 -> -2);
fp16 and bf16; BLOCK_N 16-128, ELEMS_PER_THREAD 8-64, 1-8 warps, num_stages 1 / 2.

Per case: (1) launch's q against reference as the GPU study's gate sees it (the harness's tolerance
x max|ref|: 127 x 2e-3 / 1e-2 < 1.3, so a q one step off fails in fp16); (2) q equal to the
reference element for element and the scales bit-equal to reference_scales (the kernel divides
with IEEE rounding, as the fp64-then-fp32 reference does); (3) q int8 of w's shape, contiguous,
scale fp32 [N] / [E, N]; (4) q * scale within scale / 2 of w (plus the product's rounding); (5) torch_baseline
against the same reference.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
KERNEL = "int8_colwise_quant"
ROLE = "held-out-23"
H200_SMS = 132
SM120_SMEM_PER_BLOCK = 99 * 1024


def _cfg(bn, ept, w=4, st=1):
    return {"BLOCK_N": bn, "ELEMS_PER_THREAD": ept, "num_warps": w, "num_stages": st}


def _pt(K, N, E=1, dtype="bf16", **extra):
    return {"E": E, "K": K, "N": N, "dtype": dtype, **extra}


# case -> (point, cfg); comments: TILE_K x TILE_N, row blocks, column bands
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        # 32 x 16: 2 row blocks (the last of 5 rows), 4 bands (the last of 2 columns)
        "ragged_bf16": (_pt(37, 50, dtype="bf16"), _cfg(16, 8, 2)),
        # 3 experts, 16 x 32 (EVEN_K, EVEN_N: no masks), 4 row blocks, 2 bands
        "stacked_even_fp16": (_pt(64, 64, E=3, dtype="fp16"), _cfg(32, 16, 1)),
        # TILE_N 64 -> 32 (next_pow2(24)), TILE_K 128 -> 64 (next_pow2(40)): 1 masked block; columns 3 and
        # 17 all zero (scale 1.0), column 5 one non-zero weight (its q +-127)
        "zero_columns_bf16": (_pt(40, 24, dtype="bf16", zero_cols=True), _cfg(64, 32, 4, 2)),
        # exact .5 quotients in 4 columns (amax 127/128: scale 2^-7 exactly), TILE_N 128 -> 64,
        # TILE_K 64 -> 64 (next_pow2(33)): 1 block, 1 band
        "ties_fp16": (_pt(33, 40, dtype="fp16", ties=True), _cfg(128, 64, 8)),
        # 32 x 32 (TILE_N clamped to 32 of 24 columns): 10 row blocks, the last of 12 rows
        "tall_k_bf16": (_pt(300, 24, dtype="bf16"), _cfg(32, 8, 4)),
        # the first 36 columns of a [32, 48] buffer (row stride 48, read in place), 32 x 16
        # (TILE_K 64 -> 32, EVEN_K): 1 row block, 3 bands, the last of 4 columns (masked in N only)
        "strided_view_fp16": (_pt(32, 36, dtype="fp16", pitch=48), _cfg(16, 16, 2, 2)),
        # 2 experts of [70, 9]: TILE_N 128 -> 16 (odd N: scalar accesses), TILE_K 128 (= next_pow2(70))
        "stacked_narrow_bf16": (_pt(70, 9, E=2, dtype="bf16"), _cfg(128, 8, 8)),
        # 64 x 64 of a [130, 200] fp16 weight: 3 row blocks (the last of 2 rows), 4 bands (the last of 8)
        "wide_fp16": (_pt(130, 200, dtype="fp16"), _cfg(64, 32, 4)),
    },
}

# configs compiled at the module's first POINT (sm_90: BASELINE first)
COMPILE_CFGS = [_cfg(32, 16, 4), _cfg(16, 64, 8), _cfg(128, 8, 2), _cfg(64, 32, 4)]
SM120_CFGS = [_cfg(32, 16, 4), _cfg(128, 64, 8)]


# ----------------------------------------------------------------- the pytest side
def _results() -> dict:
    return H.interpreter_results(HERE, KERNEL)


@pytest.mark.parametrize("name", list(CASES[KERNEL]))
def test_example_matches_reference(name):
    res = _results()[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    p = CASES[KERNEL][name][0]
    want = [p["K"], p["N"]] if p["E"] == 1 else [p["E"], p["K"], p["N"]]
    assert res["shape"] == want and res["dtype"] == "torch.int8" and res["contiguous"] is True
    assert res["scale_shape"] == want[:-2] + [p["N"]] and res["scale_dtype"] == "torch.float32"
    for what, r in (("kernel", res), ("torch_baseline", res["baseline"])):
        assert r["n_bad"] == 0, H.mismatch(r, f"{name} {what}")
    assert res["n_differ"] == 0 and res["n_scale_differ"] == 0, res
    assert res["dequant_ok"], res
    if p.get("zero_cols"):
        assert res["zero_col_scales"] == [1.0, 1.0] and res["zero_col_q_max"] == 0
        assert res["single_col_q"] in (127, -127)
    if p.get("ties"):
        # (k + 0.5) for k = -4 .. 3 -> -4, -2, -2, 0, 0, 2, 2, 4 (half to even)
        assert res["tie_q"] == [-4.0, -2.0, -2.0, -0.0, 0.0, 2.0, 2.0, 4.0], res["tie_q"]


def test_cases_cover_every_code_path():
    """Every tunable at >= 2 values (BLOCK_N, ELEMS_PER_THREAD and num_warps over the sweep's
    range); both dtypes; plain and stacked; EVEN (no masks) and masked in K and in N; one row block
    and many; TILE_N and TILE_K clamped below the config's."""
    H.assert_tunables_covered(CASES)
    mod = load_example(KERNEL)
    cases = list(CASES[KERNEL].values())
    assert {p["dtype"] for p, _ in cases} == set(mod.DTYPES)
    assert {p["E"] > 1 for p, _ in cases} == {True, False}
    tiles = [(p, c, mod._tile(p["K"], p["N"], c)) for p, c in cases]
    assert {(p["K"] % tk == 0, p["N"] % tn == 0) for p, _, (tk, tn) in tiles} >= {(True, True), (False, False)}
    assert any(p["K"] % tk == 0 and p["N"] % tn for p, _, (tk, tn) in tiles)     # EVEN_K, masked N
    assert {mod.loop_iterations(c, p) // 2 for p, c in cases} >= {1, 2, 10}
    assert any(tn < c["BLOCK_N"] for _, c, (_, tn) in tiles)
    assert any(tk < c["ELEMS_PER_THREAD"] * 32 * c["num_warps"] // tn for _, c, (tk, tn) in tiles)
    for k in ("BLOCK_N", "ELEMS_PER_THREAD", "num_warps"):
        tested = {c[k] for _, c in cases}
        assert min(tested) <= min(mod.SWEEP_AXES[k]) and max(tested) >= max(mod.SWEEP_AXES[k]), (k, tested)


def test_launcher_hooks_agree_with_shapes():
    """At every point and sweep config: example_args on meta with the launch's shapes, strides and
    dtypes, EVEN_K / EVEN_N, TILE_K / TILE_N; the grid and the iterations; bytes_moved / flops;
    roughly 20 us - 5 ms at 3.35-4.8 TB/s."""
    import torch

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "reference_scales", "bytes_moved", "flops", "grid",
               "loop_iterations", "example_args", "torch_baseline", "quantize_int8_colwise", "dequantize"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert not hasattr(mod, "secondary_kernels") and not hasattr(mod, "cta_iterations")
    assert len(mod.POINTS) == 3 and mod.BASELINE["num_stages"] == 1 and mod.ROLE == ROLE
    dts = {"fp16": torch.float16, "bf16": torch.bfloat16}
    axes = mod.SWEEP_AXES
    cfgs = [dict(zip(axes, v)) for v in itertools.product(*axes.values())]
    for p in mod.POINTS:
        E, K, N = p["E"], p["K"], p["N"]
        for cfg in cfgs:
            a = mod.example_args(cfg, p)
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for v in a.values())
            assert a["W"].shape == (E, K, N) and a["W"].dtype == dts[p["dtype"]] and a["W"].is_contiguous()
            assert a["Q"].shape == (E, K, N) and a["Q"].dtype == torch.int8 and a["Q"].is_contiguous()
            assert a["S"].shape == (E, N) and a["S"].dtype == torch.float32
            assert (a["K"], a["N"], a["stride_we"], a["stride_wk"], a["stride_qe"], a["stride_qk"],
                    a["stride_se"]) == (K, N, K * N, N, K * N, N, N)
            tn = min(cfg["BLOCK_N"], N)
            tk = cfg["ELEMS_PER_THREAD"] * 32 * cfg["num_warps"] // tn
            assert (a["TILE_K"], a["TILE_N"]) == (tk, tn)
            assert (a["EVEN_K"], a["EVEN_N"]) == (int(K % tk == 0), int(N % tn == 0)) == (1, 1)
            assert mod.grid(cfg, p) == (-(-N // tn), E)
            assert mod.loop_iterations(cfg, p) == 2 * -(-K // tk)
        assert mod.bytes_moved(p) == E * K * N * 3 + 4 * E * N
        assert mod.flops(p) == 7 * E * K * N + E * N
        assert 100e6 <= mod.bytes_moved(p) <= 2e9
        assert 20e-6 < mod.bytes_moved(p) / 4.8e12 and mod.bytes_moved(p) / 3.35e12 < 5e-3


def test_hooks_on_small_points_and_inputs():
    """make_inputs: shapes, dtypes, the seed; reference's and the baseline's shapes and dtypes; a
    hand-computed column; the wrapper's 2-D / 3-D returns."""
    import torch

    mod = load_example(KERNEL)
    inp = mod.make_inputs(_pt(300, 24, dtype="fp16"), seed=1, device="cpu")
    w = inp["w"]
    assert w.shape == (300, 24) and w.dtype == torch.float16 and w.is_contiguous()
    assert 0.005 < float(w.float().std()) < 0.1 and float(w.float().abs().max()) > 0
    st = mod.make_inputs(_pt(30, 8, E=3), seed=1, device="cpu")["w"]
    assert st.shape == (3, 30, 8) and st.dtype == torch.bfloat16
    assert torch.equal(mod.make_inputs(_pt(300, 24, dtype="fp16"), seed=1, device="cpu")["w"], w)
    assert not torch.equal(mod.make_inputs(_pt(300, 24, dtype="fp16"), seed=2, device="cpu")["w"], w)
    ref = mod.reference(inp)
    assert ref.shape == (300, 24) and ref.dtype == torch.float32 and float(ref.abs().max()) == 127.0
    assert mod.reference_scales(inp).shape == (24,)
    base = mod.torch_baseline(inp)
    assert base.dtype == torch.int8 and base.shape == (300, 24)
    # one column by hand: [0.375, -1.0, 0.25] -> scale 1/127, q [48 (47.625), -127, 32 (31.75)]
    hand = {"w": torch.tensor([[0.375], [-1.0], [0.25]], dtype=torch.bfloat16)}
    assert mod.reference(hand).flatten().tolist() == [48.0, -127.0, 32.0]
    assert mod.reference_scales(hand).tolist() == [float(torch.tensor(1.0 / 127, dtype=torch.float32))]


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    w = torch.ones((4, 8), dtype=torch.float16)
    with pytest.raises(ValueError, match="BLOCK_N=24"):
        mod.quantize_int8_colwise(w, BLOCK_N=24)
    with pytest.raises(ValueError, match="ELEMS_PER_THREAD=3"):
        mod.quantize_int8_colwise(w, ELEMS_PER_THREAD=3)
    with pytest.raises(ValueError, match="num_warps=3"):
        mod.quantize_int8_colwise(w, num_warps=3)
    with pytest.raises(ValueError, match="fp16 or bf16"):
        mod.quantize_int8_colwise(w.float())
    with pytest.raises(ValueError, match=r"\[K, N\] or \[E, K, N\]"):
        mod.quantize_int8_colwise(w.flatten())
    with pytest.raises(ValueError, match="dtype 'fp32'"):
        mod.make_inputs(_pt(2, 8, dtype="fp32"), device="cpu")
    with pytest.raises(ValueError, match="K=0"):
        mod.grid(mod.BASELINE, _pt(0, 8))
    with pytest.raises(ValueError, match="E=0"):
        mod.bytes_moved(_pt(8, 8, E=0))


def test_sweep_fits_the_points():
    """The study sweep: 48 configs (BLOCK_N 16-128 columns a CTA x ELEMS_PER_THREAD 8-64 x 2 / 4 /
    8 warps, num_stages 1: a step of 1-32 KiB of the weight per CTA, TILE_K 4-1024 rows) with
    BASELINE among them; at every point each config is valid, its tiles divide the weight (no
    masks) and it launches at least 60 CTAs (80 at the qkv point's BLOCK_N 128: the parallelism
    BLOCK_N trades for wider rows is part of what the sweep measures). (Every config was compiled
    for sm_90 with triton 3.6.0 at every point, 144 compiles: all compile and fit, none spills;
    34-38 registers at ELEMS_PER_THREAD 8, 55-57 at 16, 80 at 32, 137-138 at 64 (1 block / SM at
    8 warps, 3 at 4, 6 at 2); shared memory 128 B-4 KiB, only the final cross-warp max of pass 1.
    Pass 1's running max is packed 16-bit integer max (VIMNMX.S16x2) on the weight's bits; the
    loads are 16-byte vectors and the int8 stores 8-byte ones in the same layout, no conversion.
    num_stages: the row loops hold no dot, their loads are not pipelined, hence the one value.)"""
    mod = load_example(KERNEL)
    axes = mod.SWEEP_AXES
    assert set(axes) == set(mod.TUNABLES)
    assert all(len(v) >= 2 for k, v in axes.items() if k != "num_stages") and axes["num_stages"] == [1]
    cfgs = [dict(zip(axes, v)) for v in itertools.product(*axes.values())]
    assert 45 <= len(cfgs) <= 72 and mod.BASELINE in cfgs
    for p in mod.POINTS:
        for c in cfgs:
            tk, tn = mod._tile(p["K"], p["N"], c)
            assert p["K"] % tk == 0 and p["N"] % tn == 0
            gx, gy = mod.grid(c, p)
            assert gx * gy >= 60, (p, c)
    # the points differ in character: K, N, experts, dtype
    assert {p["dtype"] for p in mod.POINTS} == {"bf16", "fp16"}
    assert {p["E"] > 1 for p in mod.POINTS} == {True, False}
    assert len({p["K"] for p in mod.POINTS}) == 3 and len({p["N"] for p in mod.POINTS}) == 3


def test_study_sweep_entry():
    mod = load_example(KERNEL)
    configs, points, axes = H.study_sweeps([KERNEL], ROLE)[KERNEL]
    assert axes == mod.SWEEP_AXES and points == mod.POINTS
    assert len(configs) == len(list(itertools.product(*axes.values())))


def test_examples_import_without_torch():
    proc = H.imports_without_torch(CASES)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr[-2000:]


@pytest.mark.slow
def test_example_compiles_sm90(shared_cache):
    """On sm_90: BASELINE and three more at the first point, BASELINE at the other two and at a
    ragged point (the masked specialization) compile without spills, in at most 4 KiB of shared
    memory (only the final cross-warp max goes through it)."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    assert COMPILE_CFGS[0] == mod.BASELINE
    for cfg, res in H.compile_results(KERNEL, COMPILE_CFGS, "sm_90"):
        assert res.status == "ok", f"{cfg} on sm_90: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.shared <= 4 * 1024 and res.n_spills == 0, (cfg, res.n_regs, res.shared)
    cfg = mod.BASELINE
    for p in mod.POINTS[1:] + [_pt(37, 50, E=2, dtype="fp16")]:
        args = mod.example_args(cfg, p)
        res = compile_kernel(mod._kernel, args=args, arch="sm_90", num_warps=cfg["num_warps"],
                             num_stages=cfg["num_stages"])
        assert res.status == "ok" and res.n_spills == 0 and res.shared <= 4 * 1024, res.message


@pytest.mark.slow
def test_example_compiles_sm120(shared_cache):
    for cfg, res in H.compile_results(KERNEL, SM120_CFGS, "sm_120"):
        assert res.status == "ok", f"{cfg} on sm_120: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.shared <= SM120_SMEM_PER_BLOCK and res.n_spills == 0


# ----------------------------------------------------------------- the subprocess side
ZERO_COLS, SINGLE_COL, TIE_COLS = (3, 17), 5, (0, 7, 8, 31)
TIES = [k + 0.5 for k in range(-4, 4)]


def _prepare(name, point, inputs) -> None:
    """Edit the case's weight: zero / single-weight columns, exact .5 quotients, a strided view."""
    import torch

    w = inputs["w"]
    if point.get("zero_cols"):
        for c in ZERO_COLS:
            w[..., c] = 0
        w[..., SINGLE_COL] = 0
        w[..., 11, SINGLE_COL] = -0.03
    if point.get("ties"):
        # amax 127/128 (scale 2^-7 exactly) and w = (k + 0.5) / 128: the quotient is exactly k + 0.5
        for c in TIE_COLS:
            w[..., :, c] = 0.001
            w[..., 0, c] = 127.0 / 128
            w[..., 1:1 + len(TIES), c] = torch.tensor(TIES, dtype=torch.float32).to(w.dtype) / 128
    if point.get("pitch"):
        wide = torch.zeros(w.shape[:-1] + (point["pitch"],), dtype=w.dtype)
        wide[..., : w.shape[-1]] = w
        inputs["w"] = wide[..., : w.shape[-1]]
        assert inputs["w"].stride(-2) == point["pitch"]


def _run() -> None:
    """Every case through launch against reference (as the GPU study's gate) and bit for bit, the
    scales against reference_scales, torch_baseline against the same reference; one JSON line."""
    import torch

    H.patch_interpreter_index()
    mod = load_example(KERNEL)

    def extra(name, point, inputs, out, ref):
        cfg = CASES[KERNEL][name][1]
        q, s = mod.quantize_int8_colwise(inputs["w"], **cfg)
        s_ref = mod.reference_scales(inputs)
        w = inputs["w"].float()
        err = (mod.dequantize(q, s) - w).abs()
        half = s.unsqueeze(-2) / 2
        r = {"dtype": str(out.dtype), "contiguous": bool(out.is_contiguous()),
             "scale_shape": list(s.shape), "scale_dtype": str(s.dtype),
             "n_differ": int((out.float() != ref).sum()) + int((q != out).sum()),
             "n_scale_differ": int((s.view(torch.int32) != s_ref.view(torch.int32)).sum()),
             "dequant_ok": bool((err <= half + s.unsqueeze(-2) * 2**-15).all()),
             "baseline": H.compare(mod.torch_baseline(inputs), ref, point["dtype"])}
        if point.get("zero_cols"):
            r.update(zero_col_scales=[float(s[..., c].flatten()[0]) for c in ZERO_COLS],
                     zero_col_q_max=int(out[..., list(ZERO_COLS)].abs().max()),
                     single_col_q=int(out[..., 11, SINGLE_COL].flatten()[0]))
        if point.get("ties"):
            r["tie_q"] = [float(v) for v in out[1:1 + len(TIES), TIE_COLS[1]]]
        return r

    H.run_cases(KERNEL, CASES[KERNEL], prepare=_prepare, extra=extra)


if __name__ == "__main__":
    _run()
