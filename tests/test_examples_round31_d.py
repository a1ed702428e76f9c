"""examples/sparse_rowwise_adagrad.py (the fused sparse optimizer step of an embedding table: FBGEMM's
rowwise (exact) Adagrad on the U deduplicated rows a batch touched -- per row r = ids[u] the momentum
momentum[r] += mean(g^2) (one fp32 a row), weight[r, :] -= lr g / (sqrt(momentum[r]) + eps), g the
aggregated gradient row (+ wd weight with L2 decay; the weight shrunk by 1 - lr wd with decoupled decay),
both tables updated in place; BLOCK_R rows a program, each row in one pass held in registers or in two
passes of D_SPLIT chunks) against its torch reference on the CPU through Triton's interpreter, its
launcher hooks against the shapes, its study sweep against the points, and a compile for sm_90 and
sm_120 from its own ``example_args``.

As in test_examples_round30_c.py the interpreter cases run in a subprocess (this file run as a script:
``python tests/test_examples_round31_d.py sparse_rowwise_adagrad``) that prints one JSON line. The
subprocess installs the harness's interpreter fixes (bf16 rounding; under triton 3.6 with numpy >= 2.3
the runtime loop bounds read as ints).

Shapes are small, odd and ragged: D 1, 16, 24, 32, 40, 48, 64, 100, 130, 256 against chunks of 1-128
columns (one pass with and without a column mask, two passes of 2 or 4 chunks with and without one, a
130-column row in a 128 + 2 split); U 1 (U and D == 1 arrive as constexprs), 6-37 unique rows in blocks
of 2-16 (a ragged last block, one row in a block of 8), every row of a table (U = V), tables of 9-90
rows; the three weight-decay modes in both passes; fp32 / fp16 / bf16 tables with fp32 / fp16 / bf16
grads, int32 and int64 ids; a case whose table is a column slice of a NaN-padded buffer, the momentum a
column of a NaN-filled [V, 3] buffer, the ids a stride-2 view (the gaps other valid rows) and the grad
a column slice of a NaN-padded buffer (a stray read or write shows); zero grad rows, some of them on
rows whose momentum is still 0 (the multiplier lr / eps: the row must stay exactly as it was);
BLOCK_R 2 / 4 / 8 / 16, D_SPLIT 1 / 2 / 4, 2 / 4 / 8 warps, num_stages 1 / 2.

Per case: launch's table against the module's reference (the whole table, fp64, redrawn from the seed)
within the dtype's tolerance (the harness's per-element check); each updated element within half an
ulp of the table's dtype plus (D + 16) fp32 unit roundoffs of |keep w| + |mult g| of an independent
row-by-row fp64 computation here (from copies of the tables taken before the launch); each updated
momentum within (D + 16) fp32 roundoffs of its fp64 value; every element of the table's and the
momentum's buffers outside the updated rows (the other rows, the NaN padding) the same bits as before;
the grad and ids unchanged; the module's reference and reference_momentum equal to the independent
computation; the flags the launch used (WD_MODE, ONE_PASS, EVEN_D, N_CHUNKS, BLOCK_D) as the case
intends; most updated elements actually changed; torch_baseline (the eager index_select / update /
index_copy_) on a fresh copy of the inputs within tolerance, its momentum too.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
KERNEL = "sparse_rowwise_adagrad"
ROLE = "held-out-31"
H200_SMS = 132
SM90_SMEM_PER_BLOCK = 227 * 1024
SM120_SMEM_PER_BLOCK = 99 * 1024

# the study's sweep (scripts/rank_study.py SWEEPS["sparse_rowwise_adagrad"] once the lead adds it)
SWEEP_AXES = {"BLOCK_R": [2, 4, 8, 16], "D_SPLIT": [1, 2, 4], "num_warps": [2, 4, 8], "num_stages": [1, 2]}
FLAG_KEYS = ("WD_MODE", "ONE_PASS", "EVEN_D", "N_CHUNKS", "BLOCK_D", "BLOCK_R", "NUM_STAGES")
ESIZE = {"fp32": 4, "fp16": 2, "bf16": 2}


def _cfg(br, ds, w=4, st=1):
    return {"BLOCK_R": br, "D_SPLIT": ds, "num_warps": w, "num_stages": st}


def _pt(V, U, D, dtype="fp32", gdt="fp32", ids="int64", mode=0, wd=0.0, lr=0.01, eps=1e-8):
    return {"V": V, "U": U, "D": D, "dtype": dtype, "grad_dtype": gdt, "ids": ids, "wd_mode": mode,
            "weight_decay": wd, "lr": lr, "eps": eps}


def _cfgs():
    return [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]


def _pow2(v: int) -> int:
    return 1 << max(0, (v - 1).bit_length())


# case -> (point, cfg); comments: (WD_MODE, ONE_PASS, EVEN_D), BLOCK_D x chunks, programs
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        # (0, 1, 0): D 40 in one 64-column pass; 13 rows in blocks of 4 (the last holds one)
        "one_pass_ragged_fp32": (_pt(57, 13, 40, "fp32", "fp32", "int64"), _cfg(4, 1, 4, 1)),
        # (1, 0, 0): L2 decay, fp16 table and grads, int32 ids; D 100 in 4 chunks of 32 (the last 4 wide);
        # prefetched
        "two_pass_l2_fp16": (_pt(90, 21, 100, "fp16", "fp16", "int32", 1, 0.05), _cfg(8, 4, 2, 2)),
        # (2, 0, 1): decoupled decay 0.5 at lr 0.05, bf16 table with fp32 grads; D 64 in 2 chunks of 32
        "two_pass_decoupled_bf16": (_pt(40, 30, 64, "bf16", "fp32", "int64", 2, 0.5, 0.05), _cfg(2, 2, 4, 1)),
        # (1, 1, 1): L2 decay, bf16 table and bf16 grads, int32 ids; D 32 in one pass, 16-row blocks on
        # 8 warps (num_stages 2: nothing to prefetch in one pass)
        "one_pass_l2_bf16_grads": (_pt(64, 33, 32, "bf16", "bf16", "int32", 1, 0.01), _cfg(16, 1, 8, 2)),
        # (1, 0, 0): the NaN-padded views (module doc of the test); fp16 table, fp32 grads; D 48 in 2
        # chunks of 32; prefetched, 8 warps
        "strided_nan_fp16": (_pt(45, 19, 48, "fp16", "fp32", "int64", 1, 0.02), _cfg(4, 2, 8, 2)),
        # (2, 1, 0): one unique row (U 1: a constexpr) in a block of 8, D 24 in a 32-column pass, 2 warps
        "one_row_fp16": (_pt(9, 1, 24, "fp16", "fp16", "int64", 2, 0.1), _cfg(8, 1, 2, 1)),
        # (0, 0, 1): every row of the table (U = V: consecutive rows), bf16 grads, int32 ids; D 16 in 4
        # chunks of 4; prefetched, 2 warps
        "dense_all_rows_fp32": (_pt(37, 37, 16, "fp32", "bf16", "int32"), _cfg(16, 4, 2, 2)),
        # (0, 0, 0): D 130 in 2 chunks of 128 (the second 2 wide); zero grad rows, on rows with momentum 0
        # among them (multiplier lr / eps = 1e6 times a zero gradient)
        "zero_grad_rows_fp32": (_pt(66, 24, 130, "fp32", "fp32", "int64"), _cfg(4, 2, 4, 1)),
        # (2, 0, 1): D 256 in 4 chunks of 64 (the YouTube-DNN point's shape), bf16 table, fp32 grads
        "wide_rows_bf16": (_pt(30, 10, 256, "bf16", "fp32", "int64", 2, 0.01), _cfg(2, 4, 8, 2)),
        # (1, 1, 1): D 1 (a constexpr; one column a row), fp16 grads
        "d1_l2_fp32": (_pt(11, 6, 1, "fp32", "fp16", "int64", 1, 0.1), _cfg(4, 1, 4, 1)),
    },
}
STRIDED, ZERO = "strided_nan_fp16", "zero_grad_rows_fp32"
PAD_W, PAD_G = 5, 3

# configs compiled on sm_90 at each point: BASELINE, the register-heaviest (16 rows held in one pass on 2
# warps), the most shared memory (16 rows in 2 prefetched chunks) and a 2-row 4-chunk 8-warp corner
COMPILE_CFGS = {0: [_cfg(4, 1, 4, 1), _cfg(16, 1, 2, 1), _cfg(16, 2, 4, 2), _cfg(2, 4, 8, 2)],
                1: [_cfg(16, 1, 2, 1), _cfg(16, 2, 2, 2)],
                2: [_cfg(16, 1, 2, 1), _cfg(16, 2, 4, 2), _cfg(8, 4, 2, 1)]}
SM120_CFGS = [_cfg(4, 1, 4, 1), _cfg(16, 1, 2, 1), _cfg(16, 2, 4, 2)]


def _plan(p, c):
    """(BLOCK_D, chunks, ONE_PASS, EVEN_D) of a case."""
    bd = _pow2(-(-p["D"] // c["D_SPLIT"]))
    return bd, -(-p["D"] // bd), int(bd >= p["D"]), int(p["D"] % bd == 0)


def _smem_bound(cfg, p) -> int:
    """An upper bound of a config's shared memory: num_stages buffered chunks of grad and weight in two
    passes (cp.async's prefetch), plus 512 bytes of the row sums' and layout conversions' scratch."""
    bd, _, one, _ = _plan(p, cfg)
    tiles = 0 if one else cfg["num_stages"] * cfg["BLOCK_R"] * bd * (ESIZE[p["grad_dtype"]] + ESIZE[p["dtype"]])
    return tiles + 512


def _root(t):
    """The whole buffer under a view, 1-d."""
    return t.as_strided((t.untyped_storage().nbytes() // t.element_size(),), (1,), 0)


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """The strided / zero-grad variants (module doc), then copies of the buffers before the launch."""
    import torch

    w, m, ids, g = inputs["weight"], inputs["momentum"], inputs["ids"], inputs["grad"]
    V, D = w.shape
    U = ids.shape[0]
    nan = float("nan")
    if name == STRIDED:
        buf = torch.full((V, D + PAD_W), nan, dtype=w.dtype)
        buf[:, 2:2 + D] = w
        inputs["weight"] = buf[:, 2:2 + D]
        mb = torch.full((V, 3), nan, dtype=torch.float32)
        mb[:, 1] = m
        inputs["momentum"] = mb[:, 1]
        ib = torch.empty((U, 2), dtype=ids.dtype)
        ib[:, 0] = ids
        ib[:, 1] = ids.flip(0)                   # the gaps: other valid rows (a wrong stride updates them)
        inputs["ids"] = ib[:, 0]
        gb = torch.full((U, D + PAD_G), nan, dtype=g.dtype)
        gb[:, :D] = g
        inputs["grad"] = gb[:, :D]
    if name == ZERO:
        fresh = m[ids.long()] == 0
        zero = fresh.clone()
        zero[0] = True
        g[zero] = 0.0
        inputs["zero_rows"] = zero
    for k in ("weight", "momentum", "ids", "grad"):
        inputs[k + "0"] = inputs[k].clone()
        inputs[k + "_root0"] = _root(inputs[k]).clone()


# ----------------------------------------------------------------- the pytest side
def _results() -> dict:
    return H.interpreter_results(HERE, KERNEL)


@pytest.mark.parametrize("name", list(CASES[KERNEL]))
def test_example_matches_reference(name):
    res = _results()[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    p, cfg = CASES[KERNEL][name]
    V, U, D = p["V"], p["U"], p["D"]
    assert res["n_bad"] == 0, H.mismatch(res, f"{name} launch")
    assert res["shape"] == [V, D] and res["dtype"] == p["dtype"] and res["out_is_weight"] is True, res
    assert res["n_loose"] == 0 and res["n_mom_loose"] == 0, res      # the per-element bounds
    assert res["weight_rest_unchanged"] is True and res["momentum_rest_unchanged"] is True, res
    assert res["n_written"] == U * D, res
    assert res["inputs_unchanged"] is True and res["ref_agrees"] is True and res["mom_ref_agrees"] is True, res
    assert res["finite"] is True, res
    assert res["changed"] >= 0.5, res                                  # the step is visible at the dtype
    bd, n, one, even = _plan(p, cfg)
    fl = res["flags"]
    assert (fl["WD_MODE"], fl["ONE_PASS"], fl["EVEN_D"], fl["N_CHUNKS"], fl["BLOCK_D"]) == (p["wd_mode"], one, even,
                                                                                           n, bd), fl
    assert (fl["BLOCK_R"], fl["NUM_STAGES"]) == (cfg["BLOCK_R"], cfg["num_stages"]), fl
    assert res["baseline"]["n_bad"] == 0, H.mismatch(res["baseline"], f"{name} torch_baseline")
    assert res["baseline_mom_loose"] == 0, res
    if name == STRIDED:
        assert res["strides"] == {"weight": [D + PAD_W, 1], "momentum": [3], "ids": [2], "grad": [D + PAD_G, 1]}, res
        assert res["pad_nan"] is True, res
    else:
        assert res["strides"] == {"weight": [D, 1], "momentum": [1], "ids": [1], "grad": [D, 1]}, res
    if name == ZERO:
        # the zero grad rows: weight and momentum exactly as before (momentum-0 rows among them)
        assert res["zero_rows"] >= 2 and res["fresh_zero_rows"] >= 1 and res["zero_rows_exact"] is True, res


def test_cases_cover_every_code_path():
    """Every (WD_MODE, ONE_PASS) pair, EVEN_D both ways in both passes, N_CHUNKS 2 and 4, a ragged last row
    block and a block past U; every table / grad / id dtype; the strided and the U = V cases; every sweep
    value of every tunable."""
    H.assert_tunables_covered(CASES)
    mod = load_example(KERNEL)
    res = _results()
    cases = CASES[KERNEL]
    fl = {n: r["flags"] for n, r in res.items()}
    assert {(f["WD_MODE"], f["ONE_PASS"]) for f in fl.values()} == set(itertools.product((0, 1, 2), (0, 1)))
    assert {(f["ONE_PASS"], f["EVEN_D"]) for f in fl.values()} == set(itertools.product((0, 1), repeat=2))
    assert {f["N_CHUNKS"] for f in fl.values()} == {1, 2, 4}
    assert {p["dtype"] for p, _ in cases.values()} == set(mod.DTYPES)
    assert {p["grad_dtype"] for p, _ in cases.values()} == set(mod.GRAD_DTYPES)
    assert {p["ids"] for p, _ in cases.values()} == set(mod.ID_DTYPES)
    assert {(p["dtype"], p["grad_dtype"]) for p, _ in cases.values() if p["dtype"] != p["grad_dtype"]}
    assert any(p["U"] % c["BLOCK_R"] for p, c in cases.values())                  # a ragged last block
    assert any(p["U"] < c["BLOCK_R"] for p, c in cases.values())                  # a block past U
    assert any(p["U"] == p["V"] for p, _ in cases.values())
    for k, vals in SWEEP_AXES.items():
        assert {c[k] for _, c in cases.values()} >= set(vals), k


def test_launcher_hooks_agree_with_shapes():
    """At every point and sweep config: example_args (the ids with data on the CPU -- make_inputs' seed-0
    draw --, the rest on meta) with the launch's shapes, dtypes, strides and flags; the grid (cdiv(U,
    BLOCK_R)) and the loop length; bytes_moved / flops; 0.2-0.7 GB moved a point (80-210 us at an H100's
    ~3 TB/s); tables of 1-6 GB."""
    import torch

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "reference_momentum", "bytes_moved", "flops", "grid",
               "loop_iterations", "example_args", "torch_baseline", "sparse_rowwise_adagrad", "draw_ids",
               "draw_tables", "block_d"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert not hasattr(mod, "secondary_kernels") and not hasattr(mod, "cta_iterations")
    assert len(mod.POINTS) == 3 and mod.ROLE == ROLE and mod.SWEEP_AXES == SWEEP_AXES
    dts = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
    its = {"int32": torch.int32, "int64": torch.int64}
    for p in mod.POINTS:
        V, U, D = p["V"], p["U"], p["D"]
        ids = None
        for cfg in _cfgs():
            a = mod.example_args(cfg, p)
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for k, v in a.items()
                       if k != "IDS")
            if ids is None:
                ids = a["IDS"]
                assert ids.device.type == "cpu" and ids.dtype == its[p["ids"]] and ids.shape == (U,)
                d = ids.long()
                assert bool((d[1:] > d[:-1]).all()) and int(d[0]) >= 0 and int(d[-1]) < V   # sorted, distinct
                gen = torch.Generator().manual_seed(0)
                assert torch.equal(d, mod.draw_ids(V, U, gen))                         # make_inputs' seed 0
            assert a["IDS"] is ids                                                     # cached per point
            assert a["GRAD"].shape == (U, D) and a["GRAD"].dtype == dts[p["grad_dtype"]]
            assert a["W"].shape == (V, D) and a["W"].dtype == dts[p["dtype"]]
            assert a["MOM"].shape == (V,) and a["MOM"].dtype == torch.float32
            assert (a["stride_i"], a["stride_g"], a["stride_w"], a["stride_m"]) == (1, D, D, 1)
            assert (a["U"], a["D"]) == (U, D)
            assert (a["lr"], a["eps"], a["weight_decay"], a["WD_MODE"]) == (p["lr"], p["eps"], p["weight_decay"],
                                                                             p["wd_mode"])
            bd, n, one, even = _plan(p, cfg)
            assert (a["BLOCK_D"], a["N_CHUNKS"], a["ONE_PASS"], a["EVEN_D"]) == (bd, n, one, 1)
            assert mod.block_d(D, cfg["D_SPLIT"]) == bd == D // cfg["D_SPLIT"]
            assert (a["BLOCK_R"], a["NUM_STAGES"]) == (cfg["BLOCK_R"], cfg["num_stages"])
            assert mod.grid(cfg, p) == -(-U // cfg["BLOCK_R"])
            assert mod.loop_iterations(cfg, p) == (1 if one else 2 * n)
        ib = 4 if p["ids"] == "int32" else 8
        assert mod.bytes_moved(p) == U * (ib + D * ESIZE[p["grad_dtype"]] + 2 * D * ESIZE[p["dtype"]] + 8)
        assert mod.flops(p) == U * D * (4 + 2 * (p["wd_mode"] == 1) + (p["wd_mode"] == 2))
        assert 0.2e9 <= mod.bytes_moved(p) <= 0.7e9, p
        assert 50e-6 <= mod.bytes_moved(p) / 3.0e12 <= 20e-3
        assert 1e9 <= V * D * ESIZE[p["dtype"]] <= 6e9 and U <= 30_000_000
    # the points differ: table dtype, grad dtype, ids, D, weight-decay mode, the touched share
    P = mod.POINTS
    assert {p["dtype"] for p in P} == set(mod.DTYPES) and {p["wd_mode"] for p in P} == set(mod.WD_MODES)
    assert {p["ids"] for p in P} == set(mod.ID_DTYPES) and sorted(p["D"] for p in P) == [64, 128, 256]
    assert {p["grad_dtype"] for p in P} == {"fp32", "fp16"} and [p["U"] for p in P] == [400_000, 600_000, 200_000]


def test_hooks_on_small_points_and_inputs():
    """make_inputs: shapes, dtypes, the seed, the ids (sorted, distinct, in range, both draw paths), the
    tables equal to draw_tables' (what reference redraws), the momentum's zeros and range, the grad rows'
    scales; the update by hand (_step_rows, each weight-decay mode); reference / reference_momentum on a
    small point (untouched rows as drawn); the chunk plan; grid / loop; bytes / flops; torch_baseline in
    place; nothing launched for U 0."""
    import math

    import torch

    mod = load_example(KERNEL)
    p = _pt(100, 17, 24, "bf16", "fp16", "int32", 1, 0.01)
    inp = mod.make_inputs(p, seed=1, device="cpu")
    w, m, ids, g = inp["weight"], inp["momentum"], inp["ids"], inp["grad"]
    assert w.shape == (100, 24) and w.dtype == torch.bfloat16 and w.is_contiguous()
    assert m.shape == (100,) and m.dtype == torch.float32
    assert ids.shape == (17,) and ids.dtype == torch.int32 and g.shape == (17, 24) and g.dtype == torch.float16
    d = ids.long()
    assert bool((d[1:] > d[:-1]).all()) and int(d[0]) >= 0 and int(d[-1]) < 100
    assert (inp["lr"], inp["eps"], inp["weight_decay"], inp["wd_mode"], inp["seed"]) == (0.01, 1e-8, 0.01, 1, 1)
    w1, m1 = mod.draw_tables(p, 1, "cpu")
    assert torch.equal(w1, w) and torch.equal(m1, m)
    again = mod.make_inputs(p, seed=1, device="cpu")
    assert torch.equal(again["ids"], ids) and torch.equal(again["grad"], g)
    other = mod.make_inputs(p, seed=2, device="cpu")
    assert not torch.equal(other["ids"], ids) and not torch.equal(other["weight"], w)
    # the ids: the sparse path (dedup + top-up), the dense path (a permutation), U = V
    gen = torch.Generator().manual_seed(5)
    big = mod.draw_ids(20_000_000, 600_000, gen)
    assert big.shape == (600_000,) and bool((big[1:] > big[:-1]).all()) and int(big[-1]) < 20_000_000
    assert 0.4 < float(big.float().mean()) / 1e7 < 1.6
    dense = mod.draw_ids(40, 30, torch.Generator().manual_seed(1))
    assert dense.shape == (30,) and len(set(dense.tolist())) == 30 and int(dense.max()) < 40
    assert torch.equal(mod.draw_ids(9, 9, torch.Generator().manual_seed(3)), torch.arange(9))
    # the tables: N(0, 0.02^2) weights; momentum log-uniform in [1e-6, 1e-1], ~10 % zeros
    tw, tm = mod.draw_tables(_pt(20000, 1, 8), 0, "cpu")
    assert 0.018 < float(tw.float().std()) < 0.022
    zero = float((tm == 0).float().mean())
    nz = tm[tm > 0]
    assert 0.08 < zero < 0.12 and float(nz.min()) >= 0.99e-6 and float(nz.max()) <= 1.01e-1
    assert abs(float(nz.log10().mean()) + 3.5) < 0.1
    # grad rows: N(0, 1) times a per-row scale in [1e-3, 1e-1]
    gp = mod.make_inputs(_pt(5000, 4000, 64), seed=0, device="cpu")["grad"]
    rms = gp.pow(2).mean(1).sqrt()
    assert float(rms.min()) > 0.5e-3 and float(rms.max()) < 0.15
    assert float(rms.log10().mean()) == pytest.approx(-2, abs=0.1)
    # the update by hand: one row [0.5, -0.25], momentum 0.125, grad [0.3, 0.4] (mean square 0.125 -> 0.25,
    # sqrt 0.5), lr 0.1, eps 0: multiplier 0.2
    w0 = torch.tensor([[0.5, -0.25]], dtype=torch.float64)
    m0 = torch.tensor([0.125], dtype=torch.float64)
    g0 = torch.tensor([[0.3, 0.4]], dtype=torch.float64)
    nw, nm = mod._step_rows(w0, m0, g0, 0.1, 0.0, 0.0, 0)
    assert torch.allclose(nm, torch.tensor([0.25], dtype=torch.float64)) and torch.allclose(
        nw, torch.tensor([[0.44, -0.33]], dtype=torch.float64))
    # L2 decay 1: g' = g + w = [0.8, 0.15] (mean square 0.33125); decoupled 1 at lr 0.1: w shrunk by 0.9
    nw, nm = mod._step_rows(w0, m0, g0, 0.1, 0.0, 1.0, 1)
    mm = 0.125 + (0.64 + 0.0225) / 2
    gl = torch.tensor([[0.8, 0.15]], dtype=torch.float64)
    assert float(nm) == pytest.approx(mm) and torch.allclose(nw, w0 - 0.1 / math.sqrt(mm) * gl)
    nw, nm = mod._step_rows(w0, m0, g0, 0.1, 0.0, 1.0, 2)
    assert float(nm) == pytest.approx(0.25) and torch.allclose(nw, 0.9 * w0 - 0.2 * g0)
    # reference: the updated rows changed, the others exactly as drawn; its momentum likewise
    ref = mod.reference(inp)
    rm = mod.reference_momentum(inp)
    assert ref.dtype == torch.float32 and ref.shape == (100, 24) and rm.dtype == torch.float64
    rest = torch.ones(100, dtype=torch.bool)
    rest[d] = False
    assert torch.equal(ref[rest], w[rest].float()) and torch.equal(rm[rest], m[rest].double())
    assert float((ref[d] != w[d].float()).float().mean()) > 0.9
    assert bool((rm[d] > m[d].double()).all())
    # the chunk plan: BLOCK_D = next_pow2(cdiv(D, D_SPLIT))
    assert [mod.block_d(D, 2) for D in (1, 3, 40, 64, 100, 130, 256)] == [1, 2, 32, 32, 64, 128, 128]
    assert [mod._plan(D, _cfg(4, 4)) for D in (1, 16, 40, 100, 256)] == [(1, 1), (4, 4), (16, 3), (32, 4), (64, 4)]
    q = _pt(1000, 77, 100)
    assert mod.grid(_cfg(8, 1), q) == 10 and mod.grid(_cfg(2, 4), q) == 39
    assert mod.loop_iterations(_cfg(8, 1), q) == 1 and mod.loop_iterations(_cfg(8, 4), q) == 8
    assert mod.loop_iterations(_cfg(8, 2), q) == 2 * 2 and mod.loop_iterations(_cfg(8, 2), _pt(1000, 7, 130)) == 4
    assert mod.bytes_moved(p) == 17 * (4 + 24 * 2 + 2 * 24 * 2 + 8) and mod.flops(p) == 17 * 24 * 6
    assert mod.flops(_pt(9, 3, 5, mode=2, wd=0.1)) == 3 * 5 * 5 and mod.flops(_pt(9, 3, 5)) == 3 * 5 * 4
    # torch_baseline: in place, returns the table
    b = mod.make_inputs(p, seed=1, device="cpu")
    out = mod.torch_baseline(b)
    assert out is b["weight"] and out.dtype == torch.bfloat16
    assert (out.float() - ref).abs().max() <= 2 ** -8 * ref.abs().max()
    assert torch.allclose(b["momentum"].double(), rm, rtol=1e-6, atol=0)
    # nothing to update: U 0 (no launch; CPU tensors are fine then)
    e = mod.sparse_rowwise_adagrad(w, m, torch.empty(0, dtype=torch.int64), torch.empty(0, 24))
    assert e is w


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    w = torch.zeros(10, 8)
    m = torch.zeros(10)
    ids = torch.tensor([1, 4, 7])
    g = torch.ones(3, 8)
    f = mod.sparse_rowwise_adagrad
    with pytest.raises(ValueError, match="BLOCK_R=3"):
        f(w, m, ids, g, BLOCK_R=3)
    with pytest.raises(ValueError, match="BLOCK_R=512"):
        f(w, m, ids, g, BLOCK_R=512)
    with pytest.raises(ValueError, match="D_SPLIT=0"):
        f(w, m, ids, g, D_SPLIT=0)
    with pytest.raises(ValueError, match="num_warps=3"):
        f(w, m, ids, g, num_warps=3)
    with pytest.raises(ValueError, match="num_stages=0"):
        f(w, m, ids, g, num_stages=0)
    with pytest.raises(ValueError, match="wd_mode=3"):
        f(w, m, ids, g, weight_decay_mode=3)
    with pytest.raises(ValueError, match="lr=-0.1"):
        f(w, m, ids, g, lr=-0.1)
    with pytest.raises(ValueError, match="eps=nan"):
        f(w, m, ids, g, eps=float("nan"))
    with pytest.raises(ValueError, match="weight_decay='x'"):
        f(w, m, ids, g, weight_decay="x")
    with pytest.raises(ValueError, match=r"weight must be a 2-d fp32 / fp16 / bf16 table \[V, D\]"):
        f(w[0], m, ids, g)
    with pytest.raises(ValueError, match="weight must be a 2-d"):
        f(w.double(), m, ids, g)
    with pytest.raises(ValueError, match=r"momentum must be fp32 \[V=10\]"):
        f(w, m[:9], ids, g)
    with pytest.raises(ValueError, match="momentum must be fp32"):
        f(w, m.half(), ids, g)
    with pytest.raises(ValueError, match="ids must be a 1-d int32 / int64"):
        f(w, m, ids.float(), g)
    with pytest.raises(ValueError, match="ids must be a 1-d int32 / int64"):
        f(w, m, ids[None], g)
    with pytest.raises(ValueError, match=r"grad must be fp32 / fp16 / bf16 \[U=3, D=8\]"):
        f(w, m, ids, g[:, :7])
    with pytest.raises(ValueError, match="grad must be"):
        f(w, m, ids, g.int())
    with pytest.raises(ValueError, match="U=12 ids exceed the table's V=10 rows"):
        f(w, m, torch.arange(12) % 10, torch.ones(12, 8))
    with pytest.raises(ValueError, match="unit column stride"):
        f(torch.zeros(8, 10).t(), m, ids, g)
    with pytest.raises(ValueError, match="ids must be on weight's device"):
        f(w, m, ids.to("meta"), g)
    with pytest.raises(ValueError, match="at most 16384"):
        f(torch.zeros(300, 128), torch.zeros(300), torch.arange(200), torch.ones(200, 128), BLOCK_R=256)
    with pytest.raises(ValueError, match="dtype 'fp8'"):
        mod.make_inputs(_pt(10, 3, 8, "fp8"), device="cpu")
    with pytest.raises(ValueError, match="grad_dtype 'int8'"):
        mod.bytes_moved(_pt(10, 3, 8, gdt="int8"))
    with pytest.raises(ValueError, match="ids 'int16'"):
        mod.flops(_pt(10, 3, 8, ids="int16"))
    with pytest.raises(ValueError, match="wd_mode=4"):
        mod.grid(mod.BASELINE, _pt(10, 3, 8, mode=4))
    with pytest.raises(ValueError, match="U=11 unique rows exceed the table's V=10 rows"):
        mod.grid(mod.BASELINE, _pt(10, 11, 8))
    with pytest.raises(ValueError, match="V=0"):
        mod.loop_iterations(mod.BASELINE, _pt(0, 1, 8))
    with pytest.raises(ValueError, match="lr=inf"):
        mod.example_args(mod.BASELINE, _pt(10, 3, 8, lr=float("inf")))
    with pytest.raises(ValueError, match="D_SPLIT=1.5"):
        mod.loop_iterations(dict(mod.BASELINE, D_SPLIT=1.5), mod.POINTS[0])
    with pytest.raises(ValueError, match="at most 16384"):
        mod.grid(_cfg(256, 1), mod.POINTS[2])


def test_sweep_fits_the_points():
    """The study sweep: 72 configs (BLOCK_R 2 / 4 / 8 / 16, D_SPLIT 1 / 2 / 4, 2 / 4 / 8 warps, num_stages
    1 / 2) with BASELINE among them; at every point each config is valid (whole chunks: the points' D are
    powers of two), launches >= 4 waves of programs on an H200 (12500 at the fewest: 16 rows a program
    over the YouTube-DNN point's 200K) and its shared-memory bound (num_stages buffered grad + weight
    chunks in two passes, + 512 bytes) fits sm_90's. (Every config was compiled for sm_90 at every point
    with triton 3.6.0 and 3.9.0: all compile, none spills; registers 19-127 under 3.6 and 19-128 under
    3.9 -- the most for 16 rows of D 256 held in one pass on 2 warps at the YouTube-DNN point (64 elements
    a thread of grad and of weight), 78 at the DLRM-DCNv2 point and 54-55 at the fp16 D 64 point for the
    same shape, 19-80 in two passes; shared memory 0-12288 bytes under both (8-64 in one pass: the row
    sums' scratch; the most for 16 rows in two 64-column chunks prefetched: 2 stages of a 4 KB fp32 grad
    and a 2 KB bf16 weight chunk; at the D 64 fp16 point at most 2048, most of its chunks too narrow for
    cp.async). With the chunk count a runtime value instead of a constexpr, triton 3.6 spilled 2 registers
    (at 40) for 8 fp32 elements a thread in two passes at D 128 -- hence the constexpr N_CHUNKS.)"""
    mod = load_example(KERNEL)
    axes = SWEEP_AXES
    assert set(axes) == set(mod.TUNABLES) and mod.SWEEP_AXES == axes
    assert all(len(v) >= 2 for v in axes.values()) and "num_warps" in axes
    cfgs = _cfgs()
    assert 48 <= len(cfgs) <= 72 and mod.BASELINE in cfgs
    fewest = min(mod.grid(c, p) for p in mod.POINTS for c in cfgs)
    assert fewest == 12500
    for p in mod.POINTS:
        for c in cfgs:
            mod._check_cfg(c)
            assert mod.grid(c, p) >= 4 * H200_SMS, (p, c)
            assert _smem_bound(c, p) <= SM90_SMEM_PER_BLOCK, (p, c)
            bd, n = mod._plan(p["D"], c)
            assert p["D"] % bd == 0 and n == c["D_SPLIT"]


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
    """On sm_90 at each point: BASELINE, the register-heaviest config (16 rows in one pass on 2 warps), the
    most shared memory (16 rows in 2 prefetched chunks) and a small-tile corner compile without spills,
    their shared memory within the bound; the prefetched two-pass configs at the fp32 point use
    shared memory (cp.async), the one-pass ones at most 64 bytes."""
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
            assert 0 <= res.shared <= _smem_bound(cfg, p), (pi, cfg, res.shared)
            if cfg["D_SPLIT"] == 1:
                assert res.shared <= 64, (pi, cfg, res.shared)
            elif cfg["num_stages"] == 2 and pi != 1:
                bd = _plan(p, cfg)[0]
                assert res.shared >= cfg["BLOCK_R"] * bd * ESIZE[p["grad_dtype"]], (pi, cfg, res.shared)  # a chunk


@pytest.mark.slow
def test_example_compiles_sm120(shared_cache):
    """On sm_120 (99 KiB a block): BASELINE, the register-heaviest and the most-shared-memory configs at the
    first point (DLRM-DCNv2, fp32 D 128) compile without spills within its shared memory. (Over the whole
    sweep on sm_120: 21-127 registers, 0-12288 bytes of shared memory; no spills under triton 3.6.0; under
    3.9.0 one config spills 2 registers at 72: 16 rows in two unprefetched chunks on 2 warps at the
    YouTube-DNN point.)"""
    for cfg, res in H.compile_results(KERNEL, SM120_CFGS, "sm_120"):
        assert res.status == "ok", f"{cfg} on sm_120: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.n_spills == 0, (cfg, res.n_regs, res.n_spills)
        p = load_example(KERNEL).POINTS[0]
        assert 0 <= res.shared <= min(_smem_bound(cfg, p), SM120_SMEM_PER_BLOCK), (cfg, res.shared)


# ----------------------------------------------------------------- the subprocess side
def _independent(inputs):
    """The step row by row in fp64 from the copies taken before the launch (weight0, momentum0), the
    hyperparameters rounded to fp32 as the launch passes them: (new rows [U, D], new momenta [U], the
    update's magnitude |keep w| + |mult g'| [U, D])."""
    import torch

    f32 = lambda v: float(torch.tensor(v, dtype=torch.float32))          # noqa: E731
    lr, eps, wd = f32(inputs["lr"]), f32(inputs["eps"]), f32(inputs["weight_decay"])
    mode = inputs["wd_mode"]
    ids = inputs["ids0"].long().tolist()
    D = inputs["grad0"].shape[1]
    new = torch.zeros(len(ids), D, dtype=torch.float64)
    mag = torch.zeros_like(new)
    mom = torch.zeros(len(ids), dtype=torch.float64)
    for u, r in enumerate(ids):
        w = inputs["weight0"][r].double()
        g = inputs["grad0"][u].double()
        if mode == 1:
            g = g + wd * w
        m = float(inputs["momentum0"][r]) + float((g * g).sum()) / D
        mult = lr / (m ** 0.5 + eps)
        keep = 1.0 - lr * wd if mode == 2 else 1.0
        new[u] = keep * w - mult * g
        mag[u] = (keep * w).abs() + (mult * g).abs()
        mom[u] = m
    return new, mom, mag


def _run() -> None:
    """Every case through launch against reference (the harness's tolerance) and the per-element bounds;
    the buffers outside the updated rows; reference against the independent computation; torch_baseline
    on fresh inputs; one JSON line."""
    import torch

    H.patch_interpreter_bf16_rounding()
    H.patch_interpreter_index()
    mod = load_example(KERNEL)
    names = {torch.float16: "fp16", torch.bfloat16: "bf16", torch.float32: "fp32"}
    ULP = {torch.float32: 2.0 ** -24, torch.bfloat16: 2.0 ** -8, torch.float16: 2.0 ** -11}
    TINY = {torch.float32: 2.0 ** -150, torch.bfloat16: 2.0 ** -134, torch.float16: 2.0 ** -25}   # half a subnormal
    u32 = 2.0 ** -24

    def same(a, b):
        if not a.is_floating_point():
            return torch.equal(a, b)
        return torch.equal(a.isnan(), b.isnan()) and torch.equal(a.nan_to_num(7.0), b.nan_to_num(7.0))

    def marked(t, ids):
        """[root numel] bool: the elements of t's rows `ids` in its buffer."""
        mark = torch.zeros(_root(t).numel(), dtype=torch.int8)
        view = mark.as_strided(t.shape, t.stride(), t.storage_offset())
        view[ids] = 1
        return mark.bool()

    def extra(name, point, inputs, out, ref):
        w, mom, ids = inputs["weight"], inputs["momentum"], inputs["ids"]
        r = ids.long()
        D = w.shape[1]
        new, m64, mag = _independent(inputs)
        ut = ULP[w.dtype]
        got = w[r].double()
        loose = (got - new).abs() > ut * new.abs() + (1 + ut) * (D + 16) * u32 * mag + TINY[w.dtype]
        got_m = mom[r].double()
        mom_loose = (got_m - m64).abs() > (D + 16) * u32 * m64 + 2.0 ** -140
        wmark, mmark = marked(w, r), marked(mom, r)
        ref_rows = ref[r].double()
        ref_ok = bool(((ref_rows - new).abs() <= u32 * new.abs() + 1e-30).all())
        rest = torch.ones(w.shape[0], dtype=torch.bool)
        rest[r] = False
        ref_ok = ref_ok and torch.equal(ref[rest], inputs["weight0"][rest].float())
        rm = mod.reference_momentum(inputs)
        mom_ref_ok = bool(((rm[r] - m64).abs() <= 1e-12 * m64 + 1e-300).all()) and torch.equal(
            rm[rest], inputs["momentum0"][rest].double())
        old = inputs["weight0"][r]
        live = inputs["grad0"].abs().amax(1) > 0
        a = mod._kernel_args(ids, inputs["grad"], w, mom, inputs["lr"], inputs["eps"], inputs["weight_decay"],
                             inputs["wd_mode"], CASES[KERNEL][name][1])
        res = {"dtype": names.get(out.dtype), "out_is_weight": out is w, "n_loose": int(loose.sum()),
               "n_mom_loose": int(mom_loose.sum()), "n_written": int(wmark.sum()),
               "weight_rest_unchanged": same(_root(w)[~wmark], inputs["weight_root0"][~wmark]),
               "momentum_rest_unchanged": same(_root(mom)[~mmark], inputs["momentum_root0"][~mmark]),
               "inputs_unchanged": same(_root(ids), inputs["ids_root0"]) and same(_root(inputs["grad"]),
                                                                                  inputs["grad_root0"]),
               "ref_agrees": ref_ok, "mom_ref_agrees": mom_ref_ok,
               "finite": bool(torch.isfinite(got).all() and torch.isfinite(got_m).all()),
               "changed": float((w[r][live] != old[live]).float().mean()),
               "flags": {k: a[k] for k in FLAG_KEYS},
               "strides": {"weight": list(w.stride()), "momentum": list(mom.stride()), "ids": list(ids.stride()),
                           "grad": list(inputs["grad"].stride())}}
        if name == STRIDED:
            wr, gr = _root(w).view(w.shape[0], -1), _root(inputs["grad"]).view(ids.shape[0], -1)
            res["pad_nan"] = bool(wr[:, :2].isnan().all() and wr[:, 2 + D:].isnan().all()
                                  and gr[:, D:].isnan().all() and _root(mom).view(-1, 3)[:, [0, 2]].isnan().all())
        if name == ZERO:
            z = inputs["zero_rows"]
            fresh = inputs["momentum0"][r] == 0
            res["zero_rows"] = int(z.sum())
            res["fresh_zero_rows"] = int((z & fresh).sum())
            res["zero_rows_exact"] = bool(torch.equal(w[r][z], old[z]) and torch.equal(mom[r][z],
                                                                                     inputs["momentum0"][r][z]))
        fresh_in = mod.make_inputs(point, seed=inputs["seed"], device="cpu")
        _prepare(name, point, fresh_in)
        base = mod.torch_baseline(fresh_in)
        res["baseline"] = H.compare(base, ref, point["dtype"])
        bm = fresh_in["momentum"][r].double()
        res["baseline_mom_loose"] = int(((bm - m64).abs() > (D + 16) * u32 * m64 + 2.0 ** -140).sum())
        return res

    H.run_cases(KERNEL, CASES[KERNEL], prepare=_prepare, extra=extra)


if __name__ == "__main__":
    _run()
