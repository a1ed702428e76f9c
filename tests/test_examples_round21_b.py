"""examples/w4a16_splitk_gemv.py (a decode-time W4A16 GEMV / skinny GEMM, int4 packed 8 per int32
along K, per-(row, group of 128) fp16 / bf16 scales and float zero points, split-K with a
deterministic fp32 reduce kernel) against its fp64 torch reference on the CPU through Triton's
interpreter, its launcher hooks against the shapes, its study sweep against the points, and a
compile for sm_90 and sm_120 from its own ``example_args``.

As in test_examples_round20_d.py the interpreter cases run in a subprocess (this file run as a
script: ``python tests/test_examples_round21_b.py w4a16_splitk_gemv``) that prints one JSON line.
Shapes are small, odd and ragged: every code path by M (1, 2 and 3-4: the FMA path with
BLOCK_M 1 / 2 / 4, its row loop skipping row 3 at M 3; 5, 9 and 16: the tl.dot path with 11, 7
and 0 wrapped padding rows), N not a multiple of BLOCK_N (wrapped weight rows, masked stores)
and N below one tile, K not a multiple of BLOCK_K (the masked EVEN_K=False walk) and not of
the group size (a partial last group), SPLIT 1 (direct store in x's dtype) and 2-5 (fp32 partials + the reduce) with
splits that get fewer tiles and a split past K (zero tiles: it stores zeros), BLOCK_K 32 / 64 /
128 (4 / 2 / 1 steps a group), fp16 and bf16, and x a column slice of a wider buffer (a row
stride > K read in place).

Tolerance (x max|ref|, absolute, per element): the reference is fp64 on the same rounded x,
scales and zeros. The kernel's codes are exact in fp32 (and in fp16 / bf16 for tl.dot), the
per-group sums sum x q are fp32 (K <= 600 terms of |x q| <= ~60: ~1e-5 relative), the zero and
scale are applied once per group in fp32, and the output is rounded once to x's dtype (half an
ulp on the GPU, up to one with the interpreter's truncating cast: 2^-10 fp16, 2^-7 bf16 of an
element <= max|ref|). The harness's defaults (fp16 2e-3, bf16 1e-2) bound that. torch_baseline
(dequantise to x's dtype, F.linear in it) stays inside them too on the CPU.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
KERNEL = "w4a16_splitk_gemv"
ROLE = "held-out-21"
SM120_SMEM_PER_BLOCK = 99 * 1024
H200_SMEM_PER_BLOCK = 227 * 1024

# the study sweep (scripts/rank_study.py's SWEEPS entry, added by the lead, must equal it)
SWEEP_AXES = {"BLOCK_N": [16, 32, 64], "BLOCK_K": [64, 128], "SPLIT": [1, 4, 16], "num_warps": [4, 8],
              "num_stages": [1, 3]}


def _cfg(bn, bk, split, w=4, st=1):
    return {"BLOCK_N": bn, "BLOCK_K": bk, "SPLIT": split, "num_warps": w, "num_stages": st}


def _pt(M, N, K, dtype="fp16"):
    return {"M": M, "N": N, "K": K, "dtype": dtype}


# case -> (point, cfg); comments: column tiles x K tiles (per split)
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        # BLOCK_M 1; 3 column tiles (tail 5 of 16); 9 K tiles of 32 (K tail 8), SPLIT 4: 3 / 3 / 3 / 0
        "m1_ragged_splits_fp16": (_pt(1, 37, 264), _cfg(16, 32, 4)),
        # BLOCK_M 2; one tile of 32 over N 20; 4 K tiles of 128, SPLIT 1 (direct bf16 store), EVEN_K
        "m2_even_bf16": (_pt(2, 20, 512, "bf16"), _cfg(32, 128, 1, 8)),
        # BLOCK_M 4 (row 3 skipped); 2 column tiles of 64 (tail 6); 7 K tiles of 64 (K 392: tail 8,
        # last group 8 wide), SPLIT 2: 4 / 3
        "m3_skipped_row_fp16": (_pt(3, 70, 392), _cfg(64, 64, 2, 4, 3)),
        # BLOCK_M 4 full; x a column slice of a [4, 600] buffer; 4 K tiles of 128 (K 456, tail 72), SPLIT 3: 2 / 2 / 0
        "m4_strided_x_bf16": (_pt(4, 48, 456, "bf16"), _cfg(16, 128, 3)),
        # tl.dot, 11 wrapped rows; N 13 < one tile of 16; 17 K tiles of 32 (K 536), SPLIT 5: 4 / 4 / 4 / 4 / 1
        "m5_dot_ragged_fp16": (_pt(5, 13, 536), _cfg(16, 32, 5)),
        # tl.dot, 7 wrapped rows; 2 column tiles of 32 (tail 8); K 200 (one full group + 72), tiles of 64, SPLIT 1
        "m9_dot_partial_group_bf16": (_pt(9, 40, 200, "bf16"), _cfg(32, 64, 1, 4, 3)),
        # tl.dot, BLOCK_M 16 full; 3 column tiles of 64 (N 131: tail 3); 4 K tiles of 128, SPLIT 2, EVEN_K
        "m16_dot_even_fp16": (_pt(16, 131, 512), _cfg(64, 128, 2, 8, 3)),
        # tl.dot, bf16, K 384 in 6 tiles of 64, SPLIT 4: 2 / 2 / 2 / 0
        "m16_dot_splits_bf16": (_pt(16, 24, 384, "bf16"), _cfg(32, 64, 4, 8)),
    },
}
STRIDED = "m4_strided_x_bf16"


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """STRIDED: x becomes the first K columns of a [M, K + 144] buffer (row stride K + 144)."""
    import torch

    if name == STRIDED:
        x = inputs["x"]
        wide = torch.full((x.shape[0], x.shape[1] + 144), 3.0, dtype=x.dtype)
        wide[:, : x.shape[1]] = x
        inputs["x"] = wide[:, : x.shape[1]]


# ----------------------------------------------------------------- the pytest side
def _results() -> dict:
    return H.interpreter_results(HERE, KERNEL)


@pytest.mark.parametrize("name", list(CASES[KERNEL]))
def test_example_matches_reference(name):
    res = _results()[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    p = CASES[KERNEL][name][0]
    assert res["shape"] == [p["M"], p["N"]] and res["contiguous"] is True and res["dtype"] == p["dtype"]
    for what, r in (("kernel", res), ("torch_baseline", res["baseline"])):
        assert r["n_bad"] == 0, H.mismatch(r, f"{name} {what}")


def test_cases_cover_every_code_path():
    """Every tunable at >= 2 values; both dtypes; BLOCK_M 1 / 2 / 4 / 16 (both paths); rows past M;
    N and K tails; a partial last group; SPLIT 1 and > 1; a split with no tiles; a strided x."""
    H.assert_tunables_covered(CASES)
    mod = load_example(KERNEL)
    cases = list(CASES[KERNEL].values())
    plans = [(p, c, mod.plan(c, p)) for p, c in cases]
    assert {p["dtype"] for p, _ in cases} == set(mod.DTYPES)
    assert {pl["BLOCK_M"] for _, _, pl in plans} == {1, 2, 4, 16}
    assert any(pl["USE_DOT"] and pl["EVEN_K"] for _, _, pl in plans)
    assert any(pl["USE_DOT"] and not pl["EVEN_K"] for _, _, pl in plans)
    assert any(not pl["USE_DOT"] and pl["EVEN_K"] for _, _, pl in plans)
    assert any(not pl["USE_DOT"] and not pl["EVEN_K"] for _, _, pl in plans)
    assert any(p["M"] < pl["BLOCK_M"] for p, _, pl in plans if pl["USE_DOT"])
    assert any(p["M"] < pl["BLOCK_M"] for p, _, pl in plans if not pl["USE_DOT"])
    assert any(p["N"] % c["BLOCK_N"] for p, c in cases) and any(p["N"] < c["BLOCK_N"] for p, c in cases)
    assert any(p["K"] % mod.GROUP_SIZE for p, _ in cases)
    assert {c["SPLIT"] == 1 for _, c in cases} == {True, False}
    assert any(0 in mod.cta_iterations(c, p) for p, c in cases)
    assert any(c["SPLIT"] > 1 and 0 not in set(mod.cta_iterations(c, p)) and
               len(set(mod.cta_iterations(c, p))) > 1 for p, c in cases)
    assert STRIDED in CASES[KERNEL]


def test_strided_x_is_read_in_place():
    """A column slice of x reaches the kernel as a view (its row stride), not a copy."""
    import torch

    mod = load_example(KERNEL)
    x = torch.zeros(4, 600, dtype=torch.bfloat16)[:, :456]
    qw = torch.zeros(48, 57, dtype=torch.int32)
    s = torch.zeros(48, 4, dtype=torch.bfloat16)
    args = mod._kernel_args(x, qw, s, s, torch.empty(3, 4, 48), _cfg(16, 128, 3))
    assert (args["stride_xm"], args["stride_qn"], args["stride_sn"], args["stride_zn"]) == (600, 57, 4, 4)
    assert (args["stride_om"], args["stride_os"], args["K_SPLIT"]) == (48, 4 * 48, 256)


def test_launcher_hooks_agree_with_shapes():
    """At every point and sweep config: example_args on meta with the launch's shapes and strides,
    the grid, the walk lengths per CTA, the reduce, bytes_moved / flops."""
    import torch

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "cta_iterations", "secondary_kernels", "example_args", "torch_baseline", "w4a16_gemv"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert len(mod.POINTS) == 3 and set(mod.BASELINE) == set(mod.TUNABLES)
    dts = {"fp16": torch.float16, "bf16": torch.bfloat16}
    cfgs = [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]
    for cfg in cfgs:
        for p in mod.POINTS:
            M, N, K = p["M"], p["N"], p["K"]
            G = -(-K // 128)
            sp, bn, bk = cfg["SPLIT"], cfg["BLOCK_N"], cfg["BLOCK_K"]
            args = mod.example_args(cfg, p)
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for v in args.values())
            assert args["X"].shape == (M, K) and args["X"].dtype == dts[p["dtype"]]
            assert args["QW"].shape == (N, K // 8) and args["QW"].dtype == torch.int32
            assert args["S"].shape == args["Z"].shape == (N, G) and args["S"].dtype == dts[p["dtype"]]
            if sp == 1:
                assert args["OUT"].shape == (M, N) and args["OUT"].dtype == dts[p["dtype"]]
            else:
                assert args["OUT"].shape == (sp, M, N) and args["OUT"].dtype == torch.float32
            assert (args["M"], args["N"], args["K"], args["stride_xm"], args["stride_qn"]) == (M, N, K, K, K // 8)
            assert (args["stride_sn"], args["stride_zn"], args["stride_om"], args["stride_os"]) == (G, G, N, M * N)
            assert args["BLOCK_M"] == (16 if M > 4 else 1 << (M - 1).bit_length())
            assert args["USE_DOT"] == (M > 4) and args["EVEN_K"] == (K % bk == 0) and args["PARTIAL"] == (sp > 1)
            tiles_k = -(-K // bk)
            per = -(-tiles_k // sp)
            assert args["K_SPLIT"] == per * bk
            assert mod.grid(cfg, p) == (-(-N // bn), sp)
            assert mod.loop_iterations(cfg, p) == per
            its = mod.cta_iterations(cfg, p)
            assert len(its) == -(-N // bn) * sp and sum(its) == tiles_k * -(-N // bn) and max(its) == per
            sec = mod.secondary_kernels(cfg, p)
            if sp == 1:
                assert sec == []
            else:
                assert [s["name"] for s in sec] == ["_reduce_kernel"] and sec[0]["iterations"] == sp
                assert sec[0]["grid"] == -(-M * N // mod.REDUCE_BLOCK) and sec[0]["dram_bytes"] == 0
            assert mod.bytes_moved(p) == N * K // 2 + 4 * N * G + 2 * M * K + 2 * M * N
            assert mod.flops(p) == 2 * M * N * K
            assert H.meta_nbytes(args) < 2**31


def test_hooks_on_small_points_and_inputs():
    """make_inputs: shapes, dtypes, value ranges, the seed; pack / unpack round trip; the
    reference's and the baseline's shapes and dtypes; SPLIT 1 and 4 give the same output."""
    import torch

    mod = load_example(KERNEL)
    p = _pt(3, 10, 200, "bf16")
    inp = mod.make_inputs(p, seed=1, device="cpu")
    assert inp["x"].shape == (3, 200) and inp["x"].dtype == torch.bfloat16
    assert inp["qweight"].shape == (10, 25) and inp["qweight"].dtype == torch.int32
    assert inp["scales"].shape == inp["zeros"].shape == (10, 2) and inp["zeros"].dtype == torch.bfloat16
    assert 0.009 < float(inp["scales"].float().min()) and float(inp["scales"].float().max()) < 0.031
    assert 6.9 < float(inp["zeros"].float().min()) and float(inp["zeros"].float().max()) < 9.1
    q = mod.unpack_int4(inp["qweight"])
    assert q.shape == (10, 200) and int(q.min()) == 0 and int(q.max()) == 15
    assert torch.equal(mod.pack_int4(q), inp["qweight"])
    assert (inp["qweight"] < 0).any()                       # the top nibble set: two's complement words
    w = mod.dequant(inp["qweight"], inp["scales"], inp["zeros"])
    assert w.dtype == torch.float64 and abs(float(w[0, 130]) - (int(q[0, 130]) - float(inp["zeros"][0, 1])) *
                                            float(inp["scales"][0, 1])) < 1e-12
    ref = mod.reference(inp)
    assert ref.shape == (3, 10) and ref.dtype == torch.float32
    assert mod.torch_baseline(inp).dtype == torch.bfloat16
    assert torch.equal(mod.make_inputs(p, seed=1, device="cpu")["qweight"], inp["qweight"])
    assert not torch.equal(mod.make_inputs(p, seed=2, device="cpu")["x"], inp["x"])


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    x = torch.ones(2, 256, dtype=torch.float16)
    qw = torch.zeros(8, 32, dtype=torch.int32)
    s = torch.ones(8, 2, dtype=torch.float16)
    with pytest.raises(ValueError, match="BLOCK_N=48"):
        mod.w4a16_gemv(x, qw, s, s, BLOCK_N=48)
    with pytest.raises(ValueError, match="BLOCK_K=256"):
        mod.w4a16_gemv(x, qw, s, s, BLOCK_K=256)
    with pytest.raises(ValueError, match="SPLIT=0"):
        mod.w4a16_gemv(x, qw, s, s, SPLIT=0)
    with pytest.raises(ValueError, match="fp16 / bf16"):
        mod.w4a16_gemv(x.float(), qw, s, s)
    with pytest.raises(ValueError, match="int32"):
        mod.w4a16_gemv(x, qw.long(), s, s)
    with pytest.raises(ValueError, match="M=17"):
        mod.w4a16_gemv(torch.ones(17, 256, dtype=torch.float16), qw, s, s)
    with pytest.raises(ValueError, match="K=250"):
        mod.w4a16_gemv(torch.ones(2, 250, dtype=torch.float16), qw, s, s)
    with pytest.raises(ValueError, match=r"qweight must be \[N, K/8\]"):
        mod.w4a16_gemv(x, qw[:, :31], s, s)
    with pytest.raises(ValueError, match="scales must be"):
        mod.w4a16_gemv(x, qw, s[:, :1], s)
    with pytest.raises(ValueError, match="zeros must be"):
        mod.w4a16_gemv(x, qw, s, s.bfloat16())
    with pytest.raises(ValueError, match="dtype 'fp32'"):
        mod.make_inputs(_pt(1, 4, 128, "fp32"), device="cpu")
    with pytest.raises(ValueError, match="N=0"):
        mod.bytes_moved(_pt(1, 0, 128))


def test_sweep_fits_the_points():
    """The study sweep: 72 configs (BLOCK_N 16-64 x BLOCK_K 64 / 128 x SPLIT 1 / 4 / 16 x 4 / 8 warps
    x num_stages 1 / 3) with BASELINE among them; at every point each config is valid, its K splits
    all get tiles, and its pipelined operand tiles fit shared memory. (Every config was compiled for
    sm_90 with triton 3.6.0 and 3.9.0 at every point, 216 compiles each: all compile, none spills;
    triton 3.9: 32-125 / 40-128 / 62-168 registers at the M 1 / 4 / 16 points, 0.5-4 KiB shared
    memory at the FMA points, 4-32 KiB at the tl.dot one; triton 3.6: 40-126 / 40-128 / 56-168.
    num_stages changes only the tl.dot point: the FMA walks' loads are not pipelined, 1 and 3 give
    the same registers and shared memory there. A per-row FMA loop replaced a [BLOCK_M, BLOCK_N,
    BLOCK_K] product that took 255 registers and spilled at BLOCK_M 4 x BLOCK_N 64 on 4 warps.)"""
    mod = load_example(KERNEL)
    axes = SWEEP_AXES
    assert set(axes) == set(mod.TUNABLES)
    assert all(len(v) >= 2 for v in axes.values())
    cfgs = [dict(zip(axes, v)) for v in itertools.product(*axes.values())]
    assert 40 <= len(cfgs) <= 72 and mod.BASELINE in cfgs
    for p in mod.POINTS:
        for c in cfgs:
            pl = mod.plan(c, p)
            assert pl["EVEN_K"] and pl["tiles_k"] % c["SPLIT"] == 0, (p, c)
            assert min(mod.cta_iterations(c, p)) == pl["TILES_PER_SPLIT"] >= 4
            # x + packed weight tile a stage (the dot path's B operand staged through shared memory)
            tile = 2 * 16 * c["BLOCK_K"] + c["BLOCK_N"] * c["BLOCK_K"] // 2 + 2 * c["BLOCK_N"] * c["BLOCK_K"]
            assert max(c["num_stages"], 1) * tile <= H200_SMEM_PER_BLOCK
    # the points differ in character: one per code path (BLOCK_M 1, 4, 16), both dtypes, N / K shape
    assert sorted(mod.plan(mod.BASELINE, p)["BLOCK_M"] for p in mod.POINTS) == [1, 4, 16]
    assert {p["dtype"] for p in mod.POINTS} == set(mod.DTYPES)
    assert len({p["N"] > p["K"] for p in mod.POINTS}) == 2
    # weights 117-436 MB: 2-9 x the H200's L2, memory-bound launches of ~25-100 us at 4.8 TB/s
    for p in mod.POINTS:
        assert 100e6 < mod.bytes_moved(p) < 500e6


def test_study_sweep_entry_matches():
    """scripts/rank_study.py's SWEEPS entry (once added) is this file's sweep."""
    try:
        configs, points, axes = H.study_sweeps([KERNEL], ROLE)[KERNEL]
    except KeyError:
        pytest.skip("no SWEEPS entry for w4a16_splitk_gemv yet")
    assert axes == SWEEP_AXES and len(configs) == 72


def test_examples_import_without_torch():
    proc = H.imports_without_torch(CASES)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr[-2000:]


# configs compiled at the module's first POINT (sm_90: BASELINE first)
COMPILE_CFGS = [None, _cfg(16, 64, 16, 4, 1), _cfg(64, 128, 1, 8, 3)]


@pytest.mark.slow
def test_example_compiles_sm90(shared_cache):
    """On sm_90: BASELINE (at every point: the three code paths) and two more configs compile without
    spills; the dot point's pipelined tiles stay well inside shared memory."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    cfgs = [mod.BASELINE] + COMPILE_CFGS[1:]
    for cfg, res in H.compile_results(KERNEL, cfgs, "sm_90"):
        assert res.status == "ok", f"{cfg} on sm_90: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.n_spills == 0 and res.shared <= 16 * 1024, (cfg, res.n_regs, res.shared)
    cfg = mod.BASELINE
    for p in mod.POINTS[1:]:
        res = compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch="sm_90",
                             num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
        assert res.status == "ok" and res.n_spills == 0 and res.shared <= 64 * 1024, res.message
    # the split-K reduce, as w4a16_gemv launches it at the dot point with SPLIT 16
    import torch

    p = mod.POINTS[2]
    mn = p["M"] * p["N"]
    args = {"WS": torch.empty((16, mn), dtype=torch.float32, device="meta"),
            "OUT": torch.empty((mn,), dtype=torch.float16, device="meta"), "MN": mn, "stride_ws": mn,
            "SPLIT": 16, "BLOCK": mod.REDUCE_BLOCK}
    res = compile_kernel(mod._reduce_kernel, args=args, arch="sm_90", num_warps=mod.REDUCE_WARPS, num_stages=1)
    assert res.status == "ok" and res.n_spills == 0 and res.shared == 0, res.message


@pytest.mark.slow
def test_example_compiles_sm120(shared_cache):
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    cfg = mod.BASELINE
    for p in (mod.POINTS[0], mod.POINTS[2]):
        res = compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch="sm_120",
                             num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
        assert res.status == "ok", f"{cfg} on sm_120: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.shared <= SM120_SMEM_PER_BLOCK and res.n_spills == 0


# ----------------------------------------------------------------- the subprocess side
def _run() -> None:
    """H.run_cases with the strided preparation, the output's contiguity and dtype, the baseline."""
    import json
    import os
    import sys

    assert os.environ.get("TRITON_INTERPRET") == "1", "run with TRITON_INTERPRET=1"
    sys.path.insert(0, str(HERE.parent))
    from test_kernels_interpret import _patch_interpreter_bf16_dot
    _patch_interpreter_bf16_dot()
    mod = load_example(KERNEL)
    results = {}
    for name, (point, cfg) in CASES[KERNEL].items():
        try:
            inputs = mod.make_inputs(point, seed=len(name), device="cpu")
            _prepare(name, point, inputs)
            out = mod.launch(inputs, cfg)
            ref = mod.reference(inputs)
            results[name] = H.compare(out, ref, point["dtype"])
            results[name]["contiguous"] = bool(out.is_contiguous())
            results[name]["dtype"] = {"torch.float16": "fp16", "torch.bfloat16": "bf16"}.get(str(out.dtype))
            results[name]["baseline"] = H.compare(mod.torch_baseline(inputs), ref, point["dtype"])
        except Exception as exc:          # reported per case by the test
            results[name] = {"error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(results))


if __name__ == "__main__":
    _run()
