"""examples/lstm_cell.py (one fused LSTM step: gates = h_prev @ W_hh^T + xg by four tl.dot accumulators, one per
gate block of PyTorch's weight_hh, over K = H; the sigmoid / tanh cell update in the epilogue; h in the inputs'
dtype, c fp32) against its torch reference on the CPU through Triton's interpreter, its launcher hooks against
the shapes, its sweep against the points, and a compile for sm_90 and sm_120 from its own ``example_args``.

As in test_examples_round34_d.py the interpreter cases run in a subprocess (this file run as a script:
``python tests/test_examples_round35_a.py lstm_cell``) that prints one JSON line; the subprocess installs the
harness's interpreter fixes (bf16 rounding; bf16 dots; the loop bounds).

Shapes are small, odd and ragged: B from 3 to 130 against batch tiles of 16 / 64 / 128 (B below a tile, a last
tile partly past B), H from 1 to 128 against 32 / 64 hidden units a tile and K steps of 32 / 64 (EVEN_K both
ways: a last K step partly past H, H below one step, H = 1); fp16 and bf16; inputs that are column slices of
NaN-padded buffers (row strides past the row length; the padding never read) and outputs written into views of
NaN-filled buffers (their padding untouched); every sweep value of every tunable.

Per case: launch's h against the module's float64 reference (the harness's tolerance), c (from the wrapper)
against the reference's c; NaN-prefilled h / c buffers written everywhere and equal to launch's h; the inputs
unchanged; the flags the launch used; torch_baseline within a looser tolerance (its gates are rounded to 16
bits).
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
KERNEL = "lstm_cell"
ROLE = "held-out-35"
H200_SMS = 132
SM90_SMEM_PER_BLOCK = 227 * 1024
SM120_SMEM_PER_BLOCK = 99 * 1024
BASE_TOL = {"fp16": 1e-2, "bf16": 5e-2}         # torch_baseline: gates rounded to 16 bits before the cell

SWEEP_AXES = {"BLOCK_B": [16, 64], "BLOCK_H": [32, 64], "BLOCK_K": [32, 64], "num_warps": [8, 16],
              "num_stages": [2, 3, 4]}
FLAG_KEYS = ("B", "H", "EVEN_K", "stride_hb", "stride_wr", "stride_xb", "stride_cpb", "stride_hob",
             "stride_cob", "BLOCK_B", "BLOCK_H", "BLOCK_K")
PAD = {"h_prev": 8, "w_hh": 16, "xg": 24, "c_prev": 3}
OUT_PAD = 5


def _cfg(bb=64, bh=64, bk=64, w=8, st=3):
    return {"BLOCK_B": bb, "BLOCK_H": bh, "BLOCK_K": bk, "num_warps": w, "num_stages": st}


def _pt(B, Hd, dtype="fp16"):
    return {"B": B, "H": Hd, "dtype": dtype}


def _cfgs():
    return [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]


# case -> (point, cfg); comments: EVEN_K, tiles
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        # EVEN_K 0: BASELINE, 70 rows in 64s (the second tile 6 rows), 96 units in 64s, K 96 = 64 + 32 masked
        "baseline_fp16": (_pt(70, 96, "fp16"), _cfg()),
        # EVEN_K 1: a decode batch of 5 rows (one 16-row tile), 128 units in 4 x 32, K in 4 steps of 32; bf16
        "decode_bf16": (_pt(5, 128, "bf16"), _cfg(16, 32, 32, 8, 2)),
        # EVEN_K 1: 130 rows in 32s (the last tile holds 2), 64 units in one tile, K 2 x 32; 16 warps, 4 stages
        "big_tile_fp16": (_pt(130, 64, "fp16"), _cfg(32, 64, 32, 16, 4)),
        # EVEN_K 0: H 45 below one K step of 64, 2 hidden tiles of 32 (the second 13), 33 rows in 64; bf16
        "odd_bf16": (_pt(33, 45, "bf16"), _cfg(64, 32, 64, 16, 3)),
        # EVEN_K 0: a single hidden unit (H 1: W_hh [4, 1]), 3 rows
        "one_unit_fp16": (_pt(3, 1, "fp16"), _cfg(16, 32, 32, 8, 4)),
        # strided inputs and outputs (NaN-padded buffers), EVEN_K 0 (80 = 2 x 32 + 16), 40 rows in 32s; bf16
        "strided_bf16": (_pt(40, 80, "bf16"), _cfg(32, 32, 32, 8, 2)),
        # strided, fp16, EVEN_K 1 (H 64 = one step), 3 batch tiles of 16 (the last 3 rows)
        "strided_fp16": (_pt(35, 64, "fp16"), _cfg(16, 64, 64, 16, 2)),
    },
}
STRIDED = ("strided_bf16", "strided_fp16")

# configs compiled on sm_90 at each point: BASELINE, the largest tile (128 x 64 x 64 on 8 warps, 4 stages: the
# most shared memory), 64 x 64 x 32 and 32 x 32 x 32 on 8 warps (the most registers) and the smallest
COMPILE_CFGS = {0: [_cfg(), _cfg(64, 64, 64, 8, 4), _cfg(16, 32, 32, 16, 2)],
                1: [_cfg(), _cfg(64, 64, 32, 8, 2), _cfg(32, 32, 32, 8, 2)],
                2: [_cfg(), _cfg(16, 64, 64, 8, 4)]}
# sm_120 (99 KiB a block, mma.sync: the four accumulators and the operand fragments in registers): configs whose
# stages fit its shared memory; 64 x 64 tiles spill there (26 spills on 8 warps, 228 on 16 under triton 3.6.0)
SM120_CFGS = [_cfg(64, 32, 32, 8, 2), _cfg(16, 32, 32, 8, 3), _cfg(32, 64, 32, 8, 2)]


def _smem(cfg) -> int:
    """The K loop's pipeline buffers: num_stages x (h_prev tile + four weight tiles), 2-byte elements."""
    return cfg["num_stages"] * (cfg["BLOCK_B"] + 4 * cfg["BLOCK_H"]) * cfg["BLOCK_K"] * 2


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """The strided variants: each input a column slice of a NaN-padded buffer; NaN-filled output buffers; then
    copies of the inputs."""
    import torch

    if name in STRIDED:
        for k, pad in PAD.items():
            t = inputs[k]
            buf = torch.full((t.shape[0], t.shape[1] + pad), float("nan"), dtype=t.dtype)
            buf[:, 1:1 + t.shape[1]] = t
            inputs[k] = buf[:, 1:1 + t.shape[1]]
    inputs["_copies"] = {k: inputs[k].clone() for k in ("h_prev", "c_prev", "w_hh", "xg")}


# ----------------------------------------------------------------- the pytest side
def _results() -> dict:
    return H.interpreter_results(HERE, KERNEL)


@pytest.mark.parametrize("name", list(CASES[KERNEL]))
def test_example_matches_reference(name):
    res = _results()[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    p, cfg = CASES[KERNEL][name]
    B, Hd = p["B"], p["H"]
    assert res["n_bad"] == 0, H.mismatch(res, f"{name} launch (h)")
    assert res["c"]["n_bad"] == 0, H.mismatch(res["c"], f"{name} c")
    assert res["baseline"]["n_bad"] == 0, H.mismatch(res["baseline"], f"{name} torch_baseline")
    assert res["shape"] == [B, Hd] and res["dtype"] == p["dtype"] and res["c_dtype"] == "fp32", res
    assert res["contiguous"] is True, res
    assert res["nan_out_written"] is True and res["same_as_launch"] is True, res
    assert res["pad_untouched"] is True, res
    assert res["inputs_unchanged"] is True, res
    fl = res["flags"]
    assert (fl["B"], fl["H"]) == (B, Hd) and fl["EVEN_K"] == int(Hd % cfg["BLOCK_K"] == 0), fl
    assert all(fl[k] == cfg[k] for k in ("BLOCK_B", "BLOCK_H", "BLOCK_K")), fl
    if name in STRIDED:
        assert (fl["stride_hb"], fl["stride_wr"], fl["stride_xb"], fl["stride_cpb"]) == (
            Hd + PAD["h_prev"], Hd + PAD["w_hh"], 4 * Hd + PAD["xg"], Hd + PAD["c_prev"]), fl
        assert (fl["stride_hob"], fl["stride_cob"]) == (Hd + OUT_PAD, Hd + OUT_PAD), fl
    else:
        assert (fl["stride_hb"], fl["stride_wr"], fl["stride_xb"], fl["stride_cpb"]) == (Hd, Hd, 4 * Hd, Hd), fl
    if B * Hd > 1:
        assert res["n_distinct"] > 1, res


def test_cases_cover_every_code_path():
    """Both dtypes, EVEN_K both ways in both dtypes; B below a batch tile and ragged above one; H ragged against
    BLOCK_H; H below a K step and ragged above one; H = 1; strided inputs / outputs in both dtypes; every sweep
    value of every tunable."""
    H.assert_tunables_covered(CASES)
    mod = load_example(KERNEL)
    cases = CASES[KERNEL]
    assert {(p["dtype"], int(p["H"] % c["BLOCK_K"] == 0)) for p, c in cases.values()} == set(
        itertools.product(mod.DTYPES, (0, 1)))
    assert any(p["B"] < c["BLOCK_B"] for p, c in cases.values())
    assert any(p["B"] % c["BLOCK_B"] and p["B"] > c["BLOCK_B"] for p, c in cases.values())
    assert any(p["H"] % c["BLOCK_H"] and p["H"] > c["BLOCK_H"] for p, c in cases.values())
    assert any(p["H"] < c["BLOCK_K"] for p, c in cases.values())
    assert any(p["H"] % c["BLOCK_K"] and p["H"] > c["BLOCK_K"] for p, c in cases.values())
    assert any(p["H"] == 1 for p, _ in cases.values())
    assert {cases[s][0]["dtype"] for s in STRIDED} == set(mod.DTYPES)
    for k, vals in SWEEP_AXES.items():
        assert {c[k] for _, c in cases.values()} >= set(vals), k


def test_launcher_hooks_agree_with_shapes():
    """At every point and sweep config: example_args (every tensor on meta, contiguous) with the launch's
    shapes, dtypes, strides and flags; the grid; the loop length; bytes_moved and flops; each point >= 50 us on
    an H200 at 4.8 TB/s or 990 TFLOP/s."""
    import torch

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "reference_hc", "bytes_moved", "flops", "grid",
               "loop_iterations", "example_args", "torch_baseline", "lstm_cell"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert not hasattr(mod, "secondary_kernels") and not hasattr(mod, "cta_iterations")
    assert len(mod.POINTS) == 3 and mod.ROLE == ROLE and mod.SWEEP_AXES == SWEEP_AXES
    dts = {"fp16": torch.float16, "bf16": torch.bfloat16}
    for p in mod.POINTS:
        B, Hd, dt = p["B"], p["H"], dts[p["dtype"]]
        for cfg in _cfgs():
            a = mod.example_args(cfg, p)
            assert all(v.device.type == "meta" for v in a.values() if isinstance(v, torch.Tensor))
            shapes = {"HP": ((B, Hd), dt), "W": ((4 * Hd, Hd), dt), "XG": ((B, 4 * Hd), dt),
                      "CP": ((B, Hd), torch.float32), "HO": ((B, Hd), dt), "CO": ((B, Hd), torch.float32)}
            for k, (shape, d) in shapes.items():
                assert a[k].shape == shape and a[k].dtype == d and a[k].is_contiguous(), k
            assert (a["B"], a["H"], a["EVEN_K"]) == (B, Hd, 1)
            assert (a["stride_hb"], a["stride_wr"], a["stride_xb"], a["stride_cpb"], a["stride_hob"],
                    a["stride_cob"]) == (Hd, Hd, 4 * Hd, Hd, Hd, Hd)
            assert all(a[k] == cfg[k] for k in ("BLOCK_B", "BLOCK_H", "BLOCK_K"))
            assert mod.grid(cfg, p) == (-(-Hd // cfg["BLOCK_H"]), -(-B // cfg["BLOCK_B"]))
            assert mod.loop_iterations(cfg, p) == Hd // cfg["BLOCK_K"]
        assert mod.bytes_moved(p) == 2 * (4 * Hd * Hd + 6 * B * Hd) + 8 * B * Hd
        assert mod.flops(p) == 8 * B * Hd * Hd
        assert max(mod.bytes_moved(p) / 4.8e12, mod.flops(p) / 990e12) >= 50e-6, p
    P = mod.POINTS
    assert [(p["B"], p["H"], p["dtype"]) for p in P] == [(2048, 2048, "fp16"), (32768, 512, "bf16"),
                                                         (16, 8192, "fp16")]


def test_hooks_on_small_points_and_inputs():
    """make_inputs: shapes, dtypes, the seed, the ranges; reference by hand (H = 1); torch_baseline; grid /
    loop; bytes / flops; the wrapper's out arguments."""
    import torch

    mod = load_example(KERNEL)
    p = _pt(30, 64, "bf16")
    inp = mod.make_inputs(p, seed=1, device="cpu")
    assert inp["h_prev"].shape == (30, 64) and inp["h_prev"].dtype == torch.bfloat16
    assert inp["w_hh"].shape == (256, 64) and inp["w_hh"].dtype == torch.bfloat16
    assert inp["xg"].shape == (30, 256) and inp["xg"].dtype == torch.bfloat16
    assert inp["c_prev"].shape == (30, 64) and inp["c_prev"].dtype == torch.float32
    assert float(inp["h_prev"].float().abs().max()) < 0.96
    assert float(inp["w_hh"].float().abs().max()) <= (3 / 64) ** 0.5 * 1.01
    assert 0.7 < float(inp["xg"][:, 64:128].float().mean()) < 1.3 and abs(float(inp["xg"][:, :64].float().mean())) < 0.3
    assert torch.equal(mod.make_inputs(p, seed=1, device="cpu")["w_hh"], inp["w_hh"])
    assert not torch.equal(mod.make_inputs(p, seed=2, device="cpu")["w_hh"], inp["w_hh"])
    # reference by hand, H = 1: gates = h w + xg
    t = lambda *v: torch.tensor([list(v)], dtype=torch.float16)                      # noqa: E731
    hand = {"h_prev": t(0.5), "w_hh": torch.tensor([[1.0], [2.0], [-1.0], [0.5]], dtype=torch.float16),
            "xg": t(0.0, -1.0, 1.0, 0.25), "c_prev": torch.tensor([[2.0]])}
    sig = lambda x: 1 / (1 + math.exp(-x))                                             # noqa: E731
    c = sig(0.0) * 2.0 + sig(0.5) * math.tanh(0.5)
    h = sig(0.5) * math.tanh(c)
    rh, rc = mod.reference_hc(hand)
    assert abs(float(rc) - c) < 1e-12 and abs(float(rh) - h) < 1e-12 and float(mod.reference(hand)) == float(rh)
    assert abs(float(mod.torch_baseline(hand)) - h) < 2e-3
    q = _pt(1000, 300, "fp16")
    assert mod.grid(_cfg(64, 64), q) == (5, 16) and mod.grid(_cfg(16, 32), q) == (10, 63)
    assert mod.loop_iterations(_cfg(bk=64), q) == 5 and mod.loop_iterations(_cfg(bk=32), q) == 10
    assert mod.flops(q) == 2 * 1000 * 1200 * 300
    assert mod.bytes_moved(q) == 2 * (1200 * 300 + 6 * 1000 * 300) + 8 * 1000 * 300
    assert mod.example_args(_cfg(bk=64), _pt(16, 96))["EVEN_K"] == 0
    # the caller's buffers, written in place
    x = mod.make_inputs(_pt(4, 8), device="cpu")
    ho, co = torch.empty((4, 8), dtype=torch.float16), torch.empty((4, 8))
    with pytest.raises(ValueError, match="h_out must be"):
        mod.lstm_cell(x["h_prev"], x["c_prev"], x["w_hh"], x["xg"], h_out=co, c_out=co)
    with pytest.raises(ValueError, match="c_out must be"):
        mod.lstm_cell(x["h_prev"], x["c_prev"], x["w_hh"], x["xg"], h_out=ho, c_out=ho)


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    x = mod.make_inputs(_pt(3, 8), device="cpu")
    hp, cp, w, xg = x["h_prev"], x["c_prev"], x["w_hh"], x["xg"]
    f = mod.lstm_cell
    with pytest.raises(ValueError, match="BLOCK_B=48"):
        f(hp, cp, w, xg, BLOCK_B=48)
    with pytest.raises(ValueError, match="BLOCK_H=8"):
        f(hp, cp, w, xg, BLOCK_H=8)
    with pytest.raises(ValueError, match="BLOCK_K=512"):
        f(hp, cp, w, xg, BLOCK_K=512)
    with pytest.raises(ValueError, match="num_warps=3"):
        f(hp, cp, w, xg, num_warps=3)
    with pytest.raises(ValueError, match="num_stages=0"):
        f(hp, cp, w, xg, num_stages=0)
    with pytest.raises(ValueError, match="h_prev must be a 2-d fp16 / bf16"):
        f(hp.float(), cp, w, xg)
    with pytest.raises(ValueError, match="h_prev must be a 2-d fp16 / bf16"):
        f(hp[0], cp, w, xg)
    with pytest.raises(ValueError, match="c_prev must be a 2-d torch.float32"):
        f(hp, cp.half(), w, xg)
    with pytest.raises(ValueError, match="w_hh must be a 2-d torch.float16 tensor \\[32, 8\\]"):
        f(hp, cp, w[:31], xg)
    with pytest.raises(ValueError, match="xg must be a 2-d torch.float16"):
        f(hp, cp, w, xg.bfloat16())
    with pytest.raises(ValueError, match="xg must have a unit stride"):
        f(hp, cp, w, xg.t().contiguous().t())
    with pytest.raises(ValueError, match="c_prev must be a 2-d .* on cpu"):
        f(hp, cp.to("meta"), w, xg)
    with pytest.raises(ValueError, match="h_prev must be \\[B >= 1, H >= 1\\]"):
        f(hp[:0], cp[:0], w, xg[:0])
    with pytest.raises(ValueError, match="dtype 'fp32'"):
        mod.make_inputs(_pt(3, 8, "fp32"), device="cpu")
    with pytest.raises(ValueError, match="H=0"):
        mod.grid(mod.BASELINE, _pt(3, 0))
    with pytest.raises(ValueError, match="B=2.5"):
        mod.example_args(mod.BASELINE, _pt(2.5, 16))
    with pytest.raises(ValueError, match="B=1, H=30000"):
        mod.flops(_pt(1, 30000))
    with pytest.raises(ValueError, match="B=2000000"):
        mod.bytes_moved(_pt(2_000_000, 16))
    with pytest.raises(ValueError, match="BLOCK_K=100"):
        mod.loop_iterations(dict(mod.BASELINE, BLOCK_K=100), mod.POINTS[0])
    with pytest.raises(ValueError, match="BLOCK_B='abc'"):
        mod.grid(dict(mod.BASELINE, BLOCK_B="abc"), mod.POINTS[0])


def test_sweep_fits_the_points():
    """The sweep: 48 configs (BLOCK_B 16 / 64 x BLOCK_H 32 / 64 units a tile, BLOCK_K 32 / 64, 8 / 16
    warps, 2 / 3 / 4 stages) with BASELINE among them; at every point each config is valid and its pipeline
    buffers fit sm_90's shared memory (160 KiB at most: 64 x 64 x 64, 4 stages); H a multiple of every BLOCK_K
    and BLOCK_H. (Compiled for sm_90: the figures in the module doc; 4 warps are left out -- 64 x 64 and
    128 x 32 tiles spill there --, BLOCK_B 128 -- 128 x 64 on 16 warps spills under 3.9 -- and BLOCK_B 32 -- 32 x 32 tiles on 16
    warps spill 14-24 registers under triton 3.6.0.)"""
    mod = load_example(KERNEL)
    axes = SWEEP_AXES
    assert set(axes) == set(mod.TUNABLES) and mod.SWEEP_AXES == axes
    assert all(len(v) >= 2 for v in axes.values())
    cfgs = _cfgs()
    assert 40 <= len(cfgs) <= 72 and mod.BASELINE in cfgs
    for p in mod.POINTS:
        for c in cfgs:
            mod._check_cfg(c)
            assert math.prod(mod.grid(c, p)) >= 32, (p, c)
            assert _smem(c) <= 160 * 1024 < SM90_SMEM_PER_BLOCK, (p, c)
            assert p["H"] % c["BLOCK_K"] == 0 and p["H"] % c["BLOCK_H"] == 0
    assert min(math.prod(mod.grid(c, mod.POINTS[0])) for c in cfgs) >= 2 * H200_SMS


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
def test_example_compiles_sm90(shared_cache):
    """On sm_90 at each point (fp16 encoder, bf16 time series, fp16 decode): BASELINE, the largest tile and the
    smallest compile without spills, shared memory within sm_90's and near the pipeline's buffers."""
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
            assert 0 < res.shared <= SM90_SMEM_PER_BLOCK and res.shared <= _smem(cfg) + 16384, (pi, cfg, res.shared)


@pytest.mark.slow
def test_example_compiles_sm120(shared_cache):
    """On sm_120 (99 KiB a block): configs whose stages fit compile without spills within its shared memory
    (at the first point)."""
    for cfg, res in H.compile_results(KERNEL, SM120_CFGS, "sm_120"):
        assert res.status == "ok", f"{cfg} on sm_120: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.n_spills == 0, (cfg, res.n_regs, res.n_spills)
        assert 0 < res.shared <= SM120_SMEM_PER_BLOCK, (cfg, res.shared)


# ----------------------------------------------------------------- the subprocess side
def _run() -> None:
    """Every case through launch against reference (h), the wrapper's c against reference_hc's, NaN-prefilled
    output buffers, the inputs' buffers, torch_baseline; one JSON line."""
    import torch

    H.patch_interpreter_bf16_rounding()
    H.patch_interpreter_index()
    mod = load_example(KERNEL)
    names = {torch.float16: "fp16", torch.bfloat16: "bf16", torch.float32: "fp32"}

    def same(a, b):
        return torch.equal(a.isnan(), b.isnan()) and torch.equal(a.nan_to_num(7.0), b.nan_to_num(7.0))

    def extra(name, point, inputs, out, ref):
        cfg = CASES[KERNEL][name][1]
        B, Hd = out.shape
        hbuf = torch.full((B, Hd + OUT_PAD), float("nan"), dtype=out.dtype)
        cbuf = torch.full((B, Hd + OUT_PAD), float("nan"), dtype=torch.float32)
        if name in STRIDED:
            ho, co = hbuf[:, 2:2 + Hd], cbuf[:, 2:2 + Hd]
        else:
            hbuf, cbuf = hbuf[:, :Hd].contiguous(), cbuf[:, :Hd].contiguous()
            ho, co = hbuf, cbuf
        h2, c2 = mod.lstm_cell(inputs["h_prev"], inputs["c_prev"], inputs["w_hh"], inputs["xg"], h_out=ho,
                               c_out=co, **cfg)
        assert h2.data_ptr() == ho.data_ptr() and c2.data_ptr() == co.data_ptr()
        pad = torch.ones_like(hbuf, dtype=torch.bool)
        if name in STRIDED:
            pad[:, 2:2 + Hd] = False
        else:
            pad[:] = False
        _, rc = mod.reference_hc(inputs)
        a = mod._kernel_args(inputs["h_prev"], inputs["w_hh"], inputs["xg"], inputs["c_prev"], ho, co, cfg)
        return {"dtype": names.get(out.dtype), "c_dtype": names.get(c2.dtype), "contiguous": out.is_contiguous(),
                "c": H.compare(c2, rc, point["dtype"]),
                "nan_out_written": not bool(h2.isnan().any() or c2.isnan().any()),
                "same_as_launch": torch.equal(h2, out),
                "pad_untouched": bool(hbuf[pad].isnan().all()) and bool(cbuf[pad].isnan().all()),
                "inputs_unchanged": all(same(inputs[k], inputs["_copies"][k]) for k in inputs["_copies"]),
                "baseline": H.compare(mod.torch_baseline(inputs), ref, point["dtype"], BASE_TOL),
                "flags": {k: a[k] for k in FLAG_KEYS}, "n_distinct": int(out.unique().numel())}

    H.run_cases(KERNEL, CASES[KERNEL], prepare=_prepare, extra=extra)


if __name__ == "__main__":
    _run()
