"""examples/ctc_loss_fwd.py (the CTC loss forward: the alpha recursion in log space over log_probs [T, B, C]
fp32 / bf16 / fp16 with any strides, padded or concatenated int32 / int64 targets, per-sample input and
target lengths, any blank -> the per-sample nll [B] fp32, torch's zero_infinity, optionally aten's alpha
table [B, T, 2 S + 1]; SAMPLES whole samples a program, the states' shift a tl.gather, the emissions
prefetched PF steps ahead in named register slots) against torch's ctc_loss on the CPU through Triton's
interpreter, its launcher hooks against the shapes, its study sweep against the points, and a compile for
sm_90 and sm_120 from its own ``example_args``.

As in test_examples_round27_d.py the interpreter cases run in a subprocess (this file run as a script:
``python tests/test_examples_round28_b.py ctc_loss_fwd``) that prints one JSON line. The subprocess installs
the harness's interpreter fixes (bf16 rounding; triton 3.6's runtime loop bounds under numpy >= 2.3). The
interpreter runs the FAST 0 log2 (tl.log2: it cannot run the GPU's inline lg2.approx); the compile tests
take FAST 1.

Shapes are small, odd and ragged: BLOCK_K 1 (every target empty), 8, 16, 32 and 64, S_max = BLOCK_K - 1
(every state of the row in use); one sample a program and 2, 4, 8, 32 and 64 (batches the samples a
program do not divide: samples past B masked); more threads than states (replicated layouts) and 2 states
a thread; T from 7 to 150 with PF 1 / 2 / 4 / 8 (T not a multiple
of PF, PF beyond T); input lengths that differ within a program (finished samples keep their column);
edge samples: T_b = 0 with an empty target (loss 0) and with a target (inf), S_b = 0 (the all-blank
path), T_b one short of the target plus its repeats (inf) and exactly enough (finite), a target of one
label repeated (every label state skips its skip transition); zero_infinity on and off; the blank 0, C - 1
and in the middle; small vocabularies (repeated labels often) and a 300-wide one; log_probs contiguous
[T, B, C], a transposed [B, T, C], a C-slice of a wider buffer (the other columns NaN: a stray read
poisons the result) and a view with C not unit-stride; targets padded int64 / int32 (the padding past S_b
set to -1: never read), a transposed padded view, concatenated int64 / int32; the wrapper's own host
checks and offsets (max_target_length not given) and launch's sync-free path; the alpha table with a
padded width beyond the longest target; 1-8 warps, num_stages 1 / 2.

Per case: launch's nll against the float64 reference (the harness's check: its infinite entries counted
there, exactly the reference's) and each finite element within 4e-6 (T_b + 1) (1 + |ref|) of torch's
float64 aten._ctc_loss, infinite exactly where it is; fp32, [B], contiguous; a second launch equal bit
for bit; the inputs unchanged; the wrapper with return_alpha: the same nll bits, the table [B, T, 2 S_alloc
+ 1] within the same bound of aten's float64 log_alpha in each sample's valid region (-inf exactly where
it is) and -inf everywhere else; aten._ctc_loss_backward fed this table and the raw nll (a launch with
zero_infinity off, +inf kept: zero_infinity's nll is that with the infinities zeroed, bit for bit) gives
torch's own gradient (fp32, within 2e-6 T: two fp32 tables' roundings, exponentiated); torch_baseline
(torch's fp32 ctc_loss) within 1e-4 (1 + |ref|), infinite where the reference is.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
KERNEL = "ctc_loss_fwd"
ROLE = "held-out-28"
H200_SMS = 132
SM90_SMEM_PER_BLOCK = 227 * 1024
SM120_SMEM_PER_BLOCK = 99 * 1024

# the study's sweep (scripts/rank_study.py SWEEPS["ctc_loss_fwd"] once the lead adds it)
SWEEP_AXES = {"TILE": [64, 128, 256], "PF": [1, 2, 4, 8], "num_warps": [1, 2, 4, 8], "num_stages": [1]}


def _cfg(tile, pf, w=4, st=1):
    return {"TILE": tile, "PF": pf, "num_warps": w, "num_stages": st}


def _pt(B, T, C, S, dtype="fp32", **kw):
    return {"B": B, "T": T, "C": C, "S": S, "dtype": dtype, **kw}


# case -> (point, cfg); comments: BLOCK_K, SAMPLES = max(1, min(TILE, 64 num_warps) // BLOCK_K), programs
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        # wav2vec2-like: a transposed [B, T, C] fp32 view, concatenated int64 targets over 5 labels (repeats
        # often), zero_infinity; BLOCK_K 16, TILE 16: one sample a program (3 programs), one warp (the shift
        # warp-local), PF 4; launch's sync-free path (max_target_length and offsets from make_inputs)
        "w2v_concat_fp32": (_pt(3, 29, 6, 12, "fp32", layout="btc", targets="concat", zero_infinity=1),
                            _cfg(16, 4, 1)),
        # NeMo-like: bf16 transposed view, padded int64 targets (the padding -1), blank C - 1, the alpha table;
        # BLOCK_K 8, SAMPLES 4 (TILE 32, 2 warps): 2 programs, the second 3 samples past B; PF 2
        "nemo_padded_alpha_bf16": (_pt(7, 23, 11, 6, "bf16", layout="btc", blank=10, alpha=1), _cfg(32, 2, 2)),
        # CRNN-like: fp16 [T, B, C] contiguous over 300 classes, padded int32 targets, zero_infinity; BLOCK_K
        # 8, TILE 8: one sample a program on 4 warps (128 threads over 8 states: replicated), PF 8 (> T / 2)
        "crnn_int32_fp16": (_pt(9, 14, 300, 5, "fp16", target_dtype="int32", zero_infinity=1), _cfg(8, 8, 4)),
        # edge samples (set in _prepare), zero_infinity off: inf losses; BLOCK_K 8, SAMPLES 8 (TILE 64, 8
        # warps): one program; PF 1
        "edges_inf_fp32": (_pt(8, 10, 5, 4, "fp32"), _cfg(64, 1, 8)),
        # the same edges in bf16 with zero_infinity, the blank in the middle (2), padded int32 targets, the
        # alpha table; BLOCK_K 8, SAMPLES 2 (TILE 16, 1 warp): 4 programs, PF 2
        "edges_zero_inf_alpha_bf16": (_pt(8, 10, 5, 4, "bf16", layout="btc", target_dtype="int32", blank=2,
                                          zero_infinity=1, alpha=1), _cfg(16, 2, 1)),
        # S_max = BLOCK_K - 1 = 15 (every label state of the row used: the rotation's source at k = 0 is the
        # padding label state only just), padded int64 targets as a transposed [S, B] view (target stride B);
        # SAMPLES 8 (TILE 128, 2 warps): one program, 5 samples past B; PF 4
        "full_row_fp16": (_pt(3, 40, 20, 15, "fp16"), _cfg(128, 4, 2)),
        # log_probs the first C = 9 columns of a [T, B, 14] buffer (the rest NaN), concatenated int32 targets,
        # the blank 4, zero_infinity; BLOCK_K 8, SAMPLES 8 (TILE 64, 2 warps): 1 program; PF 8
        "slice_concat_fp32": (_pt(4, 19, 9, 6, "fp32", targets="concat", target_dtype="int32", blank=4,
                                  zero_infinity=1), _cfg(64, 8, 2)),
        # log_probs with C not unit-stride (a [C, B, T] buffer permuted), bf16; BLOCK_K 8, SAMPLES 32 (TILE
        # 256, 4 warps): one program, 27 samples past B; PF 1; the wrapper's own host checks (no
        # max_target_length given)
        "strided_c_bf16": (_pt(5, 21, 7, 5, "bf16"), _cfg(256, 1, 4)),
        # a long T (150 steps, 18 trips of PF 8 + a ragged one), fp32 transposed view, concatenated int64;
        # BLOCK_K 32, SAMPLES 2 (TILE 64, 1 warp: 2 states a thread, warp-local): 1 program
        "long_T_fp32": (_pt(2, 150, 12, 20, "fp32", layout="btc", targets="concat"), _cfg(64, 8, 1)),
        # BLOCK_K 64 (S 40), one sample a program on 8 warps (256 threads over 64 states), num_stages 2; PF 4
        "wide_states_fp16": (_pt(3, 61, 45, 40, "fp16", layout="btc", zero_infinity=1), _cfg(64, 4, 8, 2)),
        # the alpha table with padded targets 9 wide and the longest target 5 (BLOCK_K from the width: 16,
        # all 19 columns written), fp16; SAMPLES 4 (TILE 64, 4 warps): 1 program; PF 4, num_stages 2
        "alpha_wide_pad_fp16": (_pt(3, 12, 6, 9, "fp16", alpha=1), _cfg(64, 4, 4, 2)),
        # every target empty: S 0, BLOCK_K 1 (the all-blank path only), fp16, zero_infinity; SAMPLES 64
        # (TILE 64, 2 warps): one program; PF 2
        "empty_targets_fp16": (_pt(3, 7, 4, 0, "fp16", zero_infinity=1), _cfg(64, 2, 2)),
    },
}
EDGES = ("edges_inf_fp32", "edges_zero_inf_alpha_bf16")
PAD_GARBAGE = ("nemo_padded_alpha_bf16", "crnn_int32_fp16", "edges_inf_fp32", "strided_c_bf16")
SLICE, STRIDED_C, FULL_ROW, WIDE_PAD = ("slice_concat_fp32", "strided_c_bf16", "full_row_fp16",
                                        "alpha_wide_pad_fp16")
HOST_CHECKS = ("strided_c_bf16", "edges_inf_fp32", "alpha_wide_pad_fp16")   # max_target_length not given
# the edge samples (T_b, S_b, labels): T_b = S_b = 0 (0); T_b 0 with a target (inf); the all-blank path;
# one frame short (inf); a repeat fitting exactly; a repeat one short (inf); one label 4 times (7 frames)
EDGE_SAMPLES = [(10, 4, None), (0, 0, ()), (0, 2, None), (3, 0, ()), (2, 3, None), (4, 3, "xxy"), (3, 3, "xxy"),
                (10, 4, "xxxx")]
# configs compiled at the module's first POINT on sm_90 (BASELINE first): one warp and PF 8 (the most
# registers: 8 states a thread, 8 slots), 2 warps, 8 warps; at the other two points BASELINE and OTHER_CFG
# (several samples a program where BLOCK_K is small)
COMPILE_CFGS = [_cfg(64, 4, 4), _cfg(64, 8, 1), _cfg(128, 2, 2), _cfg(256, 1, 8)]
OTHER_CFG = _cfg(256, 8, 4)
SM120_CFGS = [_cfg(64, 4, 4), _cfg(64, 8, 1), _cfg(256, 2, 8)]


def _flags(p, c):
    """(BLOCK_K, SAMPLES, programs) of a case: BLOCK_K from the padded width when the table is written."""
    bk = 1 << p["S"].bit_length() if p["S"] else 1
    s = max(1, min(c["TILE"], 64 * c["num_warps"]) // bk)
    return bk, s, -(-p["B"] // s)


def _set_lengths(inputs, point, il, tl_, labels=None):
    """The inputs' lengths set to il / tl_ (and the given labels' rows), the targets rebuilt in the point's
    form (concatenated ones re-packed), launch's host facts refreshed."""
    import torch

    blank = inputs["blank"]
    filler = (blank + 1) % inputs["log_probs"].shape[2]     # a label for the positions a new length uncovers
    tgt = inputs["targets"]
    B = len(il)
    S = point["S"]
    if tgt.dim() == 1:                     # unpack the concatenated targets into a padded matrix
        old = inputs["target_lengths"].tolist()
        rows = torch.full((B, max(S, 1)), filler, dtype=torch.int64)
        off = 0
        for b in range(B):
            rows[b, :old[b]] = tgt[off:off + old[b]].long()
            off += old[b]
    else:                                  # make_inputs pads with the blank, never a label
        rows = tgt.long().clone()
        rows[rows == blank] = filler
    for b, lab in (labels or {}).items():
        rows[b, :len(lab)] = torch.tensor(lab)
    if tgt.dim() == 1:
        inputs["targets"] = torch.cat([rows[b, :tl_[b]] for b in range(B)]).to(tgt.dtype)
        t = torch.tensor(tl_, dtype=torch.int64)
        inputs["target_offsets"] = torch.cumsum(t, 0) - t
    else:
        inputs["targets"] = rows[:, :S].to(tgt.dtype).contiguous()
    inputs["input_lengths"] = torch.tensor(il, dtype=torch.int64)
    inputs["target_lengths"] = torch.tensor(tl_, dtype=torch.int64)
    inputs["max_target_length"] = max(tl_, default=0)


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """EDGES: the edge samples; WIDE_PAD: targets of 5 / 3 / 4 labels in a 9-wide padding; PAD_GARBAGE: the
    padding past S_b set to -1; SLICE: log_probs a C-slice of a
    NaN-filled wider buffer; STRIDED_C: log_probs with C not unit-stride; FULL_ROW: the targets a transposed
    view; HOST_CHECKS: no max_target_length / offsets (the wrapper reads the lengths). Then the inputs'
    copies, to check they are left alone."""
    import torch

    lp = inputs["log_probs"]
    T, B, C = lp.shape
    blank = inputs["blank"]
    if name in EDGES:
        x, y = [c for c in range(C) if c != blank][:2]
        il = [e[0] for e in EDGE_SAMPLES]
        tl_ = [e[1] for e in EDGE_SAMPLES]
        labels = {b: [{"x": x, "y": y}[ch] for ch in e[2]] for b, e in enumerate(EDGE_SAMPLES) if e[2]}
        _set_lengths(inputs, point, il, tl_, labels)
    if name == WIDE_PAD:
        _set_lengths(inputs, point, inputs["input_lengths"].tolist(), [5, 3, 4])
    if name in PAD_GARBAGE:
        t = inputs["targets"].clone()
        S = t.shape[1]
        pad = torch.arange(S)[None, :] >= inputs["target_lengths"][:, None]
        inputs["targets"] = t.masked_fill(pad, -1)
    if name == SLICE:
        buf = torch.full((T, B, C + 5), float("nan"), dtype=lp.dtype)
        buf[:, :, :C] = lp
        inputs["log_probs"] = buf[:, :, :C]
    if name == STRIDED_C:
        inputs["log_probs"] = lp.permute(2, 1, 0).contiguous().permute(2, 1, 0)
    if name == FULL_ROW:
        inputs["targets"] = inputs["targets"].t().contiguous().t()
    if name in HOST_CHECKS:
        inputs["max_target_length"] = None
        inputs["target_offsets"] = None
    inputs["lp0"] = inputs["log_probs"].clone()
    inputs["t0"] = inputs["targets"].clone()
    inputs["il0"] = inputs["input_lengths"].clone()
    inputs["tl0"] = inputs["target_lengths"].clone()


# ----------------------------------------------------------------- the pytest side
def _results() -> dict:
    return H.interpreter_results(HERE, KERNEL)


@pytest.mark.parametrize("name", list(CASES[KERNEL]))
def test_example_matches_reference(name):
    res = _results()[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    p, c = CASES[KERNEL][name]
    B = p["B"]
    # the harness's check: every finite element within tolerance; the infinite ones are the reference's
    assert res["n_bad"] == res["n_ref_inf"], H.mismatch(res, f"{name} launch")
    assert res["dtype"] == "fp32" and res["shape"] == [B] and res["out_strides"] == [1], res
    assert res["n_loose"] == 0 and res["n_inf_mismatch"] == 0 and res["n_nan"] == 0, res
    assert res["deterministic"] is True and res["inputs_unchanged"] is True, res
    assert res["baseline_inf_mismatch"] == 0 and res["baseline_n_bad"] == 0, res
    # the alpha table through the wrapper: the same nll, aten's table in the valid region, -inf elsewhere
    a = res["alpha"]
    assert a["nll_equal"] is True and a["dtype"] == "fp32", a
    assert a["shape"] == [B, p["T"], 2 * a["s_alloc"] + 1], a
    assert a["n_loose"] == 0 and a["n_inf_mismatch"] == 0 and a["n_outside_not_ninf"] == 0, a
    assert a["n_valid"] > 0 or p["S"] == 0 or name in EDGES, a
    # torch's backward fed this forward's table and raw nll gives torch's gradient; zero_infinity is the where
    assert a["grad_nan_mismatch"] == 0 and a["grad_max_err"] <= 2e-6 * p["T"], a
    assert a.get("zero_inf_is_where", True) is True and ("zero_inf_is_where" in a) == bool(p.get("zero_infinity")), a
    if name in EDGES:
        zi = p.get("zero_infinity", 0)
        # losses: b1 0, b2 inf, b3 the blank path, b4 inf, b5 finite, b6 inf, b7 finite
        assert res["inf_at"] == ([] if zi else [2, 4, 6]), res
        assert res["zero_at"] == ([1, 2, 4, 6] if zi else [1]), res
    else:
        assert res["n_ref_inf"] == 0 and res["inf_at"] == [], res
    if name == SLICE:
        assert res["lp_strides"][2] == 1 and res["lp_strides"][1] == p["C"] + 5, res
    if name == STRIDED_C:
        assert res["lp_strides"][2] == p["B"] * p["T"], res
    if name == FULL_ROW:
        assert res["tgt_strides"] == [1, B], res
        assert res["max_len"] == p["S"] == _flags(p, c)[0] - 1, res
    if name == WIDE_PAD:
        assert a["s_alloc"] == 9 and res["max_len"] == 5, a


def test_cases_cover_every_code_path():
    """Every tunable at each of its sweep values (and num_stages 1 / 2); the three dtypes; the constexprs
    CONCAT, ZERO_INF, WRITE_ALPHA both ways (WRITE_ALPHA 1 also through every case's wrapper call), SAMPLES 1
    and several, a batch the programs do not divide, more threads than states and up to 8 states a thread,
    one warp and several; PF past T and T not a multiple of PF; BLOCK_K 1-64 and S = BLOCK_K - 1; the blank
    0 / C - 1 / in the middle; the layouts and target forms; the edge lengths."""
    import torch

    H.assert_tunables_covered(CASES)
    mod = load_example(KERNEL)
    cases = CASES[KERNEL]
    assert {p["dtype"] for p, _ in cases.values()} == set(mod.DTYPES)
    for k, vals in SWEEP_AXES.items():
        assert {c[k] for _, c in cases.values()} >= set(vals), k
    assert {c["num_stages"] for _, c in cases.values()} == {1, 2}
    seen = set()
    per_thread = set()
    for name, (p, c) in cases.items():
        inp = mod.make_inputs(p, seed=0, device="meta")
        bk, s, progs = _flags(p, c)
        toff = torch.empty((p["B"],), dtype=torch.int64, device="meta") if inp["targets"].dim() == 1 else None
        alpha = (torch.empty((p["B"], p["T"], 2 * p["S"] + 1), device="meta") if p.get("alpha") else None)
        nll = torch.empty((p["B"],), device="meta")
        k = mod._kernel_args(inp["log_probs"], inp["targets"], toff, inp["input_lengths"], inp["target_lengths"],
                             nll, alpha, bk, inp["blank"], inp["zero_infinity"], False, c)
        assert k["BLOCK_K"] == bk and k["SAMPLES"] == s and mod._grid(p["B"], bk, c) == (progs,), name
        seen.add((k["CONCAT"], k["ZERO_INF"], k["WRITE_ALPHA"], min(k["SAMPLES"], 2)))
        per_thread.add(s * bk / (32 * c["num_warps"]))
    assert {x[0] for x in seen} == {0, 1} and {x[1] for x in seen} == {0, 1} and {x[2] for x in seen} == {0, 1}
    assert {x[3] for x in seen} == {1, 2}
    assert min(per_thread) < 1 and max(per_thread) >= 2          # replicated layouts; several states a thread
    fl = {n: _flags(p, c) for n, (p, c) in cases.items()}
    assert any(p["B"] % f[1] for (p, _), f in zip(cases.values(), fl.values()))
    assert {f[0] for f in fl.values()} >= {1, 8, 16, 32, 64}
    assert any(p["T"] % c["PF"] for p, c in cases.values()) and any(c["PF"] > p["T"] / 2 for p, c in cases.values())
    assert any(c["num_warps"] == 1 and f[0] * f[1] <= 32 * 8 for (p, c), f in zip(cases.values(), fl.values()))
    blanks = {(p.get("blank", 0) == 0, p.get("blank", 0) == p["C"] - 1) for p, _ in cases.values()}
    assert blanks == {(True, False), (False, True), (False, False)}
    assert {p.get("layout", "tbc") for p, _ in cases.values()} == {"tbc", "btc"}
    assert {(p.get("targets", "padded"), p.get("target_dtype", "int64")) for p, _ in cases.values()} == {
        ("padded", "int64"), ("padded", "int32"), ("concat", "int64"), ("concat", "int32")}
    assert any(n in HOST_CHECKS for n in cases) and any(n not in HOST_CHECKS for n in cases)


def test_launcher_hooks_agree_with_shapes():
    """At every point and sweep config: example_args on meta with the launch's shapes, dtypes and strides
    (a transposed [B, T, C] fp32 view with concatenated targets; a bf16 transposed view with padded int64
    targets and the table; [T, B, C] fp16 contiguous with padded int32 targets), the constexprs, the grid
    and the loop trips; bytes_moved / flops by hand; the inputs well under 20 GB; a rough time (T_max steps at
    0.15 us plus the bytes at 3 TB/s) of 40 us - 20 ms (~50 us, ~95 us, ~125 us)."""
    import torch

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "example_args", "torch_baseline", "ctc_loss", "ctc_reference"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert not hasattr(mod, "secondary_kernels") and not hasattr(mod, "cta_iterations")
    assert len(mod.POINTS) == 3 and mod.ROLE == ROLE and mod.SWEEP_AXES == SWEEP_AXES
    dts = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}
    size = {"fp16": 2, "bf16": 2, "fp32": 4}
    cfgs = [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]
    for p in mod.POINTS:
        B, T, C, S = p["B"], p["T"], p["C"], p["S"]
        il, tl_ = mod._lengths(B, T, S)
        assert max(il) == il[0] == T and max(tl_) == tl_[0] == S and min(il) >= 3 * T // 4 and min(tl_) >= 2 * S // 3
        bk = 1 << S.bit_length()
        for c in cfgs:
            a = mod.example_args(c, p)
            lp = a["LP"]
            assert tuple(lp.shape) == (T, B, C) and lp.dtype == dts[p["dtype"]], p
            if p["layout"] == "btc":
                assert lp.stride() == (C, T * C, 1)
            else:
                assert lp.stride() == (B * C, C, 1)
            tdt = torch.int64 if p["target_dtype"] == "int64" else torch.int32
            assert a["TGT"].dtype == tdt
            if p["targets"] == "concat":
                assert tuple(a["TGT"].shape) == (sum(tl_),) and a["CONCAT"] == 1 and tuple(a["TOFF"].shape) == (B,)
            else:
                assert tuple(a["TGT"].shape) == (B, S) and a["CONCAT"] == 0 and a["stride_tb"] == S
            if p["alpha"]:
                assert tuple(a["ALPHA"].shape) == (B, T, 2 * S + 1) and a["W"] == 2 * S + 1
                assert a["stride_ab"] == T * (2 * S + 1)
            assert a["WRITE_ALPHA"] == p["alpha"] and a["ZERO_INF"] == p["zero_infinity"] and a["FAST"] == 1
            assert a["blank"] == p["blank"] and a["BLOCK_K"] == bk and a["PF"] == c["PF"]
            s = max(1, min(c["TILE"], 64 * c["num_warps"]) // bk)
            assert a["SAMPLES"] == s and mod.grid(c, p) == (-(-B // s),)
            assert mod.loop_iterations(c, p) == -(-T // c["PF"])
            assert s * bk // (32 * c["num_warps"]) <= 8
        e = size[p["dtype"]]
        row = -(-C * e // 32)
        te = 8 if p["target_dtype"] == "int64" else 4
        want = sum(t * 32 * min(s + 1, row) for t, s in zip(il, tl_)) + sum(tl_) * 2 * te + B * 20
        want += 8 * B if p["targets"] == "concat" else 0
        want += B * T * (2 * S + 1) * 4 if p["alpha"] else 0
        assert mod.bytes_moved(p) == want
        assert mod.flops(p) == sum(t * (11 * (s + 1) + 17 * s) for t, s in zip(il, tl_))
        assert T * B * C * e < 20e9
        est = T * 0.15e-6 + mod.bytes_moved(p) / 3e12
        assert 40e-6 <= est <= 20e-3, (p, est)
    # the points differ: dtype, vocabulary, T, BLOCK_K, batch, layout, targets, blank, flags
    assert [p["dtype"] for p in mod.POINTS] == ["fp32", "bf16", "fp16"]
    assert [p["C"] for p in mod.POINTS] == [32, 1025, 6625] and [p["blank"] for p in mod.POINTS] == [0, 1024, 0]
    assert [1 << p["S"].bit_length() for p in mod.POINTS] == [256, 128, 64]
    assert [(p["layout"], p["targets"], p["target_dtype"]) for p in mod.POINTS] == [
        ("btc", "concat", "int64"), ("btc", "padded", "int64"), ("tbc", "padded", "int32")]
    assert [p["alpha"] for p in mod.POINTS] == [0, 1, 0] and [p["zero_infinity"] for p in mod.POINTS] == [1, 0, 1]


def test_hooks_on_small_points_and_inputs():
    """make_inputs: shapes, dtypes, layouts, the seed, the blank never a label, the padding, the concatenated
    targets and their offsets; reference against a hand computation (T 2, one label) and torch's own
    conventions (T_b = 0, S_b = 0, infeasible, zero_infinity); torch_baseline's dtype; bytes / flops by
    hand; the grid of several samples a program."""
    import math

    import torch

    mod = load_example(KERNEL)
    p = _pt(4, 9, 7, 5, "bf16", layout="btc", targets="concat", blank=3)
    inp = mod.make_inputs(p, seed=1, device="cpu")
    lp = inp["log_probs"]
    assert lp.shape == (9, 4, 7) and lp.dtype == torch.bfloat16 and lp.stride() == (7, 63, 1)
    assert torch.allclose(lp.float().exp().sum(-1), torch.ones(9, 4), atol=2e-2)
    assert torch.equal(mod.make_inputs(p, seed=1, device="cpu")["log_probs"], lp)
    assert not torch.equal(mod.make_inputs(p, seed=2, device="cpu")["log_probs"], lp)
    il, tl_ = mod._lengths(4, 9, 5)
    assert inp["input_lengths"].tolist() == il and inp["target_lengths"].tolist() == tl_
    assert inp["targets"].dtype == torch.int64 and inp["targets"].shape == (sum(tl_),)
    assert int((inp["targets"] == 3).sum()) == 0 and int(inp["targets"].min()) >= 0 and int(inp["targets"].max()) < 7
    assert inp["target_offsets"].tolist() == [sum(tl_[:b]) for b in range(4)] and inp["max_target_length"] == 5
    q = _pt(3, 6, 5, 4, "fp16", target_dtype="int32", alpha=1, zero_infinity=1)
    inp = mod.make_inputs(q, seed=0, device="cpu")
    assert inp["log_probs"].is_contiguous() and inp["log_probs"].dtype == torch.float16
    assert inp["targets"].shape == (3, 4) and inp["targets"].dtype == torch.int32 and inp["target_offsets"] is None
    tl_ = inp["target_lengths"].tolist()
    assert all(int(inp["targets"][b, tl_[b]:].ne(0).sum()) == 0 for b in range(3))      # padded with the blank
    assert inp["alpha"] is True and inp["zero_infinity"] is True
    # by hand: T 2, C 3, target [1]: paths (1, 1), (0, 1), (1, 0) -> p = y1 y1' + y0 y1' + y1 y0'
    lpm = torch.log_softmax(torch.tensor([[[0.3, -0.2, 0.5]], [[1.0, 0.1, -0.4]]]), -1)
    y = lpm.exp()[:, 0]
    want = -math.log(float(y[0, 1] * y[1, 1] + y[0, 0] * y[1, 1] + y[0, 1] * y[1, 0]))
    hand = {"log_probs": lpm, "targets": torch.tensor([[1]]), "input_lengths": torch.tensor([2]),
            "target_lengths": torch.tensor([1]), "blank": 0, "zero_infinity": False}
    assert abs(float(mod.reference(hand)[0]) - want) < 1e-6
    # torch's conventions the kernel follows: T_b 0 (0 / inf), S_b 0 (the blank path), infeasible (inf)
    lp = torch.log_softmax(torch.randn(4, 4, 5, generator=torch.Generator().manual_seed(0)), -1)
    conv = {"log_probs": lp, "targets": torch.tensor([[1, 2], [1, 2], [1, 2], [1, 1]]),
            "input_lengths": torch.tensor([0, 0, 4, 2]), "target_lengths": torch.tensor([0, 2, 0, 2]), "blank": 0,
            "zero_infinity": False}
    r = mod.reference(conv)
    assert float(r[0]) == 0.0 and math.isinf(float(r[1])) and math.isinf(float(r[3]))
    assert abs(float(r[2]) + float(lp[:, 2, 0].sum())) < 1e-5
    assert mod.reference(dict(conv, zero_infinity=True)).tolist()[1] == 0.0
    assert mod.torch_baseline(mod.make_inputs(q, device="cpu")).dtype == torch.float32
    assert mod.reference(inp).dtype == torch.float32 and mod.reference(inp).shape == (3,)
    # bytes / flops by hand: q's rows are 5 fp16 = 1 sector a step; lengths (6, 5, 6) x (4, 3, 4)
    assert mod._lengths(3, 6, 4) == ([6, 5, 6], [4, 3, 4])
    assert mod.bytes_moved(q) == 32 * 17 + 2 * 11 * 4 + 3 * 20 + 3 * 6 * 9 * 4
    assert mod.flops(q) == 6 * (55 + 68) + 5 * (44 + 51) + 6 * (55 + 68)
    assert mod.grid(_cfg(64, 4, 4), _pt(40, 5, 4, 3)) == (3,)         # BLOCK_K 4, SAMPLES 16
    assert mod.grid(_cfg(64, 4, 1), _pt(9, 5, 4, 40)) == (9,)         # BLOCK_K 64: one a program
    assert mod.grid(_cfg(256, 4, 2), _pt(9, 5, 4, 40)) == (5,)        # min(256, 128) // 64 = 2


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    lp = torch.zeros(6, 2, 5)
    tg = torch.ones(2, 3, dtype=torch.long)
    il = torch.full((2,), 6)
    tl_ = torch.full((2,), 3)
    with pytest.raises(ValueError, match="expected log_probs"):
        mod.ctc_loss(lp[0], tg, il, tl_)
    with pytest.raises(ValueError, match="fp32 / bf16 / fp16"):
        mod.ctc_loss(lp.double(), tg, il, tl_)
    with pytest.raises(ValueError, match="targets must be int32 / int64"):
        mod.ctc_loss(lp, tg.float(), il, tl_)
    with pytest.raises(ValueError, match="input_lengths must be an int32 / int64 tensor"):
        mod.ctc_loss(lp, tg, [6, 6], tl_)
    with pytest.raises(ValueError, match="target_lengths must be an int32 / int64 tensor of shape"):
        mod.ctc_loss(lp, tg, il, torch.full((3,), 3))
    with pytest.raises(ValueError, match="padded targets must be"):
        mod.ctc_loss(lp, torch.ones(3, 3, dtype=torch.long), il, tl_)
    with pytest.raises(ValueError, match="blank=5"):
        mod.ctc_loss(lp, tg, il, tl_, blank=5)
    with pytest.raises(ValueError, match=r"input_lengths must lie in \[0, T=6\]"):
        mod.ctc_loss(lp, tg, torch.tensor([7, 6]), tl_)
    with pytest.raises(ValueError, match="target_lengths need 4 columns"):
        mod.ctc_loss(lp, tg, il, torch.tensor([4, 1]))
    with pytest.raises(ValueError, match="target_lengths need 6 targets"):
        mod.ctc_loss(lp, torch.ones(5, dtype=torch.long), il, tl_)
    with pytest.raises(ValueError, match="target_lengths must be >= 0"):
        mod.ctc_loss(lp, tg, il, torch.tensor([-1, 1]))
    with pytest.raises(ValueError, match="max_target_length=2 is below"):
        mod.ctc_loss(lp, tg, il, tl_, max_target_length=2)
    with pytest.raises(ValueError, match="max_target_length=4 exceeds"):
        mod.ctc_loss(lp, tg, il, tl_, max_target_length=4, validate=False)
    with pytest.raises(ValueError, match="max_target_length=-1"):
        mod.ctc_loss(lp, tg, il, tl_, max_target_length=-1)
    with pytest.raises(ValueError, match="TILE=48"):
        mod.ctc_loss(lp, tg, il, tl_, TILE=48)
    with pytest.raises(ValueError, match="PF=3"):
        mod.ctc_loss(lp, tg, il, tl_, PF=3)
    with pytest.raises(ValueError, match="num_warps=3"):
        mod.ctc_loss(lp, tg, il, tl_, num_warps=3)
    with pytest.raises(ValueError, match="num_stages=0"):
        mod.ctc_loss(lp, tg, il, tl_, num_stages=0)
    with pytest.raises(ValueError, match="raise num_warps"):
        mod.ctc_loss(lp, torch.ones(2, 1500, dtype=torch.long), il, tl_, max_target_length=1500, validate=False,
                     num_warps=1)
    with pytest.raises(ValueError, match="past the kernel's 4096"):
        mod.ctc_loss(lp, torch.ones(2, 5000, dtype=torch.long), il, tl_, max_target_length=4096, validate=False)
    wide = torch.empty((6, 2, 2**29), device="meta").as_strided((6, 2, 5), (1, 6, 2**29))
    with pytest.raises(ValueError, match="int32 in-row offsets"):
        mod.ctc_loss(wide, tg.to("meta"), il.to("meta"), tl_.to("meta"), max_target_length=3, validate=False)
    with pytest.raises(ValueError, match="must be on"):
        mod.ctc_loss(lp, tg.to("meta"), il, tl_)
    with pytest.raises(ValueError, match="dtype 'fp64'"):
        mod.make_inputs(_pt(2, 4, 3, 1, "fp64"), device="cpu")
    with pytest.raises(ValueError, match="layout='bct'"):
        mod.bytes_moved(_pt(2, 4, 3, 1, layout="bct"))
    with pytest.raises(ValueError, match="targets='ragged'"):
        mod.flops(_pt(2, 4, 3, 1, targets="ragged"))
    with pytest.raises(ValueError, match="target_dtype='int16'"):
        mod.grid(mod.BASELINE, _pt(2, 4, 3, 1, target_dtype="int16"))
    with pytest.raises(ValueError, match="blank=3"):
        mod.example_args(mod.BASELINE, _pt(2, 4, 3, 1, blank=3))
    with pytest.raises(ValueError, match="zero_infinity=2"):
        mod.example_args(mod.BASELINE, _pt(2, 4, 3, 1, zero_infinity=2))
    with pytest.raises(ValueError, match="B=0"):
        mod.grid(mod.BASELINE, _pt(0, 4, 3, 1))
    with pytest.raises(ValueError, match="S=-1"):
        mod.loop_iterations(mod.BASELINE, _pt(2, 4, 3, -1))
    with pytest.raises(ValueError, match="C=1"):
        mod.bytes_moved(_pt(2, 4, 1, 0))
    # nothing to do: an empty batch returns empty outputs, nothing launched
    e = mod.ctc_loss(torch.zeros(4, 0, 3), torch.zeros(0, 2, dtype=torch.long), torch.zeros(0, dtype=torch.long),
                     torch.zeros(0, dtype=torch.long), return_alpha=True)
    assert e[0].shape == (0,) and e[1].shape == (0, 4, 5)


def test_sweep_fits_the_points():
    """The study sweep: 48 configs (TILE 64 / 128 / 256 x PF 1 / 2 / 4 / 8 x 1 / 2 / 4 / 8 warps, num_stages 1:
    the gathers do not pipeline, the cubin is the same at any num_stages) with BASELINE among them; at every
    point each config is valid and holds 1-8 states of a kind a thread (a program of several samples at most
    2). The grids: 32 programs at the wav2vec2 point, 128-256 at the Conformer one, 128-512 at the CRNN one --
    all below 4 x 132 = 528: the batch is the workload (a sample's recursion is one program's). (Every config was compiled for sm_90 at every point with triton 3.6.0 and
    3.9: no spills anywhere; triton 3.6 29-168 registers (wav2vec2 29-168, Conformer 29-108, CRNN 32-126),
    shared memory 0-2 KiB; triton 3.9 26-206 registers (wav2vec2 29-206: one warp and PF 8, 8 states and 8
    slots a thread; Conformer 26-168, CRNN 32-119), shared memory 0-1 KiB -- the gather's round trip when the
    states span warps, none at all on one warp.)"""
    mod = load_example(KERNEL)
    axes = SWEEP_AXES
    assert set(axes) == set(mod.TUNABLES) and mod.SWEEP_AXES == axes
    assert all(len(v) >= 2 for k, v in axes.items() if k != "num_stages") and axes["num_stages"] == [1]
    cfgs = [dict(zip(axes, v)) for v in itertools.product(*axes.values())]
    assert 48 <= len(cfgs) <= 72 and mod.BASELINE in cfgs
    grids = []
    for p in mod.POINTS:
        bk = 1 << p["S"].bit_length()
        for c in cfgs:
            mod._check_cfg(c, bk)
            (g,) = mod.grid(c, p)
            s = -(-p["B"] // g)
            grids.append(g)
            assert s * bk / (32 * c["num_warps"]) <= 8, (p, c)
            assert s == 1 or s * bk <= 64 * c["num_warps"], (p, c)
    assert min(grids) == 32 and max(grids) == 512 < 4 * H200_SMS


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
    """On sm_90 (FAST 1: the MUFU's lg2 through inline PTX): BASELINE and three more at the first point
    (wav2vec2: BLOCK_K 256 fp32, a transposed view, concatenated targets) compile without spills, one warp
    without shared memory (the shift in shuffles) and several warps with the gather's round trip (1 KiB:
    256 states x 4 B); BASELINE and OTHER_CFG (several samples a program) at the other two (the bf16 alpha-table
    point; the fp16 CRNN point), their shared memory at most 2 KiB."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    assert COMPILE_CFGS[0] == mod.BASELINE
    for cfg, res in H.compile_results(KERNEL, COMPILE_CFGS, "sm_90"):
        assert res.status == "ok", f"{cfg} on sm_90: {res.status}: {res.message}"
        assert 0 < res.n_regs <= 255 and res.n_spills == 0, (cfg, res.n_regs, res.n_spills)
        if cfg["num_warps"] == 1:
            assert res.shared == 0, (cfg, res.shared)
        else:
            assert 0 < res.shared <= 2048, (cfg, res.shared)
    for p in mod.POINTS[1:]:
        for cfg in (COMPILE_CFGS[0], OTHER_CFG):
            res = compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch="sm_90",
                                 num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
            assert res.status == "ok" and res.n_spills == 0, (cfg, p, res.n_regs, res.n_spills, res.message)
            assert res.shared <= 2048, (cfg, res.shared)


@pytest.mark.slow
def test_example_compiles_sm120(shared_cache):
    """On sm_120 (99 KiB a block): BASELINE, one warp with PF 8 and 8 warps with TILE 256 compile at the first
    point without spills, their shared memory within the block's."""
    for cfg, res in H.compile_results(KERNEL, SM120_CFGS, "sm_120"):
        assert res.status == "ok", f"{cfg} on sm_120: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.n_spills == 0, (cfg, res.n_regs, res.n_spills)
        assert res.shared <= SM120_SMEM_PER_BLOCK, (cfg, res.shared)


# ----------------------------------------------------------------- the subprocess side
def _run() -> None:
    """Every case through launch against reference (the harness's check) and against aten's float64 forward
    element by element; a second launch bit for bit; the inputs unchanged; the wrapper with the alpha table
    (its nll, the table against aten's, aten's backward fed it against torch's own gradient);
    torch_baseline; one JSON line."""
    import torch

    H.patch_interpreter_bf16_rounding()
    H.patch_interpreter_index()
    mod = load_example(KERNEL)
    inf = float("inf")

    def extra(name, point, inputs, out, ref):
        cfg = CASES[KERNEL][name][1]
        lp, tg, il, tl_ = inputs["log_probs"], inputs["targets"], inputs["input_lengths"], inputs["target_lengths"]
        blank, zi = inputs["blank"], inputs["zero_infinity"]
        B, T = lp.shape[1], lp.shape[0]
        r64, la64 = mod.ctc_reference(lp, tg, il, tl_, blank, zi)
        o = out.double()
        ils = il.tolist()
        tls = tl_.tolist()
        steps = torch.tensor([v + 1 for v in ils], dtype=torch.float64)
        fin = torch.isfinite(r64)
        loose = (o - r64).abs() > 4e-6 * steps * (1 + r64.abs())
        res = {"dtype": {torch.float32: "fp32"}.get(out.dtype), "out_strides": list(out.stride()),
               "n_loose": int((loose & fin).sum()), "n_inf_mismatch": int((torch.isinf(o) != torch.isinf(r64)).sum()),
               "n_nan": int(torch.isnan(o).sum()), "n_ref_inf": int(torch.isinf(ref).sum()),
               "inf_at": [b for b in range(B) if o[b] == inf], "zero_at": [b for b in range(B) if o[b] == 0],
               "lp_strides": list(lp.stride()), "tgt_strides": list(tg.stride()), "max_len": max(tls, default=0),
               "max_rel_err": float(((o - r64).abs() / (steps * (1 + r64.abs())))[fin].max()) if fin.any() else 0.0}
        again = mod.launch(inputs, cfg)
        res["deterministic"] = bool(torch.equal(again, out))
        res["inputs_unchanged"] = bool(torch.equal(lp, inputs["lp0"]) and torch.equal(tg, inputs["t0"])
                                       and torch.equal(il, inputs["il0"]) and torch.equal(tl_, inputs["tl0"]))
        base = mod.torch_baseline(inputs)
        bfin = torch.isfinite(r64)
        res["baseline_inf_mismatch"] = int((torch.isinf(base) != torch.isinf(r64)).sum())
        res["baseline_n_bad"] = int(((base.double() - r64).abs() > 1e-4 * (1 + r64.abs()))[bfin].sum())
        # the alpha table through the wrapper (the wrapper's own host checks and offsets)
        nll, la = mod.ctc_loss(lp, tg, il, tl_, blank, zi, return_alpha=True, **cfg)
        a = {"nll_equal": bool(torch.equal(nll, out)), "dtype": {torch.float32: "fp32"}.get(la.dtype),
             "shape": list(la.shape), "s_alloc": (la.shape[2] - 1) // 2}
        n_loose = n_inf = n_out = n_valid = 0
        for b in range(B):
            v = la[b, :ils[b], :2 * tls[b] + 1].double()
            r = la64[b, :ils[b], :2 * tls[b] + 1]
            rf = torch.isfinite(r)
            n_inf += int((torch.isfinite(v) != rf).sum())
            tt = torch.arange(ils[b], dtype=torch.float64)[:, None] + 1
            n_loose += int(((v - r).abs() > 4e-6 * tt * (1 + r.abs()))[rf].sum())
            n_valid += int(rf.sum())
            rest = la[b].clone()
            rest[:ils[b], :2 * tls[b] + 1] = -inf
            n_out += int((rest != -inf).sum())
        a.update(n_loose=n_loose, n_inf_mismatch=n_inf, n_outside_not_ninf=n_out, n_valid=n_valid)
        # aten's backward fed this table and the raw nll (zero_infinity off: +inf kept, as torch's own forward
        # node keeps it; the backward applies zero_infinity) against fed its own fp32 forward's
        raw = nll
        if zi:
            raw = mod.ctc_loss(lp, tg, il, tl_, blank, False, **cfg)
            a["zero_inf_is_where"] = bool(torch.equal(nll, torch.where(torch.isinf(raw), torch.zeros_like(raw), raw)))
        lp32 = lp.float()
        g = torch.ones(B)
        nt, lat = torch.ops.aten._ctc_loss(lp32, tg.long(), ils, tls, blank, zi)
        g_ref = torch.ops.aten._ctc_loss_backward(g, lp32, tg.long(), ils, tls, nt, lat, blank, zi)
        g_our = torch.ops.aten._ctc_loss_backward(g, lp32, tg.long(), ils, tls, raw, la, blank, zi)
        a["grad_nan_mismatch"] = int((torch.isnan(g_ref) != torch.isnan(g_our)).sum())
        both = torch.isfinite(g_ref) & torch.isfinite(g_our)
        a["grad_max_err"] = float((g_ref - g_our).abs()[both].max()) if both.any() else 0.0
        res["alpha"] = a
        return res

    H.run_cases(KERNEL, CASES[KERNEL], prepare=_prepare, extra=extra)


if __name__ == "__main__":
    _run()
