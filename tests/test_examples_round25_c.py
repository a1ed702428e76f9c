"""examples/spec_rejection_sample.py (speculative decoding's rejection sampler, vLLM v1's random path
fused into one launch: per request the K drafts' acceptance test, the first rejection r, the recovered
token argmax max(p - q, 0) / e (or the bonus token argmax p_K / e) over V in BLOCK_V chunks, ROWS
positions of a request a program) against an eager torch version on the CPU through Triton's
interpreter, its launcher hooks against the shapes, its study sweep against the points, and a
compile for sm_90 and sm_120 from its own ``example_args``.

As in test_examples_round24_c.py the interpreter cases run in a subprocess (this file run as a
script: ``python tests/test_examples_round25_c.py spec_rejection_sample``) that prints one JSON line;
under triton 3.6 with numpy >= 2.3 the V loop's runtime bound reads as an int
(example_harness.patch_interpreter_index).

Shapes are small, odd and ragged: V a multiple of BLOCK_V (EVEN_V, no column mask) and not, V = 97
(rows not 16-byte aligned), one chunk wider than V, several chunks; K = 1 (specialized to a constant),
3, 4, 5, 8 (KP = K and a padded acceptance vector); ROWS 1 / 2 / 4 / 8: dividing K + 1 (no padded
row), not (the request's last group padded), wider than K + 1 (one group); int32 and int64 draft ids;
probabilities and noise read in place from pitched buffers, ids and uniforms through transposed
views; every acceptance outcome: a rejection at position 0, in the middle, after all K (the bonus
token), a draft probability of 0 at the draft token (rejected, vLLM's NaN guard); score ties across
chunks and a constant bonus row (the first maximal index wins, torch.argmax's rule); BLOCK_V 16 - 2048,
1 - 16 warps, num_stages 1 / 2.

Per case: launch's tokens equal the torch version's exactly (int32, -1 after the first rejection),
through the GPU study's gate too; the accepted flags equal, each row a prefix; the torch baseline's
tokens equal.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
KERNEL = "spec_rejection_sample"
ROLE = "held-out-25"
SM120_SMEM_PER_BLOCK = 99 * 1024
EXACT = {"fp32": 0.0}      # harness compare tolerance: token ids, no element may differ

# the study's sweep (scripts/rank_study.py SWEEPS["spec_rejection_sample"] once the lead adds it)
SWEEP_AXES = {"BLOCK_V": [256, 512, 1024, 2048], "ROWS": [1, 2, 4], "num_warps": [4, 8, 16], "num_stages": [1]}


def _cfg(bv, rows, w=4, st=1):
    return {"BLOCK_V": bv, "ROWS": rows, "num_warps": w, "num_stages": st}


def _pt(B, K, V, ids="int32"):
    return {"B": B, "K": K, "V": V, "ids": ids, "dtype": "fp32"}


# case -> (point, cfg); comments: EVEN_V, V steps, programs (groups x requests), the forced outcomes
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        # V 300 in 5 steps of 64 (EVEN_V 0), one position a program: 5 x 3 programs; as drawn
        "k4_rows1_ragged_int32": (_pt(3, 4, 300), _cfg(64, 1, 4)),
        # V 256 in 4 steps of 64 (EVEN_V 1), K + 1 = 6 in 3 groups of 2 (no padded row), int64 ids;
        # request 0 all accepted (the bonus token), request 1 rejected at position 0
        "k5_rows2_even_int64": (_pt(2, 5, 256, "int64"), _cfg(64, 2, 2)),
        # K + 1 = 9 in 3 groups of 4 (the last group 1 live row + 3 padded), V 200 in 2 steps of 128;
        # 8 warps; request 0 rejected at position 5 (the middle of the second group)
        "k8_rows4_padded_group": (_pt(2, 8, 200), _cfg(128, 4, 8)),
        # K = 1 (a constant), ROWS 8 > K + 1: one group of 8 rows, 6 padded; V 97 (odd rows: no
        # 16-byte alignment) in 4 steps of 32, 1 warp; int64 ids; request 2 all accepted
        "k1_rows8_odd_v_int64": (_pt(3, 1, 97, "int64"), _cfg(32, 8, 1)),
        # V 2500 in 2 steps of 2048 (EVEN_V 0), K + 1 = 4 in one group of 4 rows, 16 warps; all
        # accepted (uniform 0): every request's bonus token
        "all_accepted_bonus_wide_chunk": (_pt(2, 3, 2500), _cfg(2048, 4, 16)),
        # the draft token's draft probability 0 in request 0 at position 1 and request 2 at 0 (rejected
        # there whatever u), uniform 0 elsewhere; V 320 in one chunk of 512 (wider than V)
        "draft_prob_zero": (_pt(3, 3, 320), _cfg(512, 2, 4)),
        # target / draft / noise rows in pitched buffers (row stride V + 24, the pad 7.0: a read past V
        # would win the argmax), ids and uniform transposed views; V 150 in 10 steps of 16 (EVEN_V 0);
        # num_stages 2
        "pitched_views": (_pt(3, 4, 150), _cfg(16, 1, 2, 2)),
        # ties: the bonus rows all accepted (uniform 0) and noise 1: request 0's bonus row constant
        # (every column ties: token 0), request 1's maximum at columns 5, 5 + 128 and 5 + 256 (three
        # chunks of 128: token 5); V 384 (EVEN_V 1)
        "ties_first_index": (_pt(2, 2, 384), _cfg(128, 2, 4, 2)),
    },
}
PITCH = 24


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """Force the acceptance outcomes and layouts named in CASES."""
    import torch

    B, K, V = point["B"], point["K"], point["V"]
    ids, dp, tp = inputs["draft_token_ids"], inputs["draft_probs"], inputs["target_probs"]
    u = inputs["uniform"]
    if name == "k5_rows2_even_int64":
        u[0] = 0.0                                          # every ratio >= 0: all accepted
        u[1, 0] = 1.0
        t, d = int(ids[1, 0]), 1 * K + 0
        tp[1 * (K + 1) + 0, t] = 0.5 * dp[d, t]             # ratio 0.5 < 1: rejected at 0
    if name == "k8_rows4_padded_group":
        u[0] = 0.0
        u[0, 5] = 1.0
        t = int(ids[0, 5])
        tp[5, t] = 0.25 * dp[5, t]
    if name == "k1_rows8_odd_v_int64":
        u[2] = 0.0
    if name == "all_accepted_bonus_wide_chunk":
        u.zero_()
    if name == "draft_prob_zero":
        u.zero_()
        dp[0 * K + 1, int(ids[0, 1])] = 0.0
        dp[2 * K + 0, int(ids[2, 0])] = 0.0
    if name == "pitched_views":
        def pitched(x):
            buf = torch.full((x.shape[0], V + PITCH), 7.0)
            buf[:, :V] = x
            return buf[:, :V]
        for k in ("draft_probs", "target_probs", "noise"):
            inputs[k] = pitched(inputs[k])
        inputs["draft_token_ids"] = ids.t().contiguous().t()
        inputs["uniform"] = u.t().contiguous().t()
    if name == "ties_first_index":
        u.zero_()
        inputs["noise"].fill_(1.0)
        tp[0 * (K + 1) + K].fill_(1.0 / V)
        row = tp[1 * (K + 1) + K]
        row.fill_(0.5 / V)
        row[[5, 5 + 128, 5 + 256]] = 0.25


# ----------------------------------------------------------------- the pytest side
def _results() -> dict:
    return H.interpreter_results(HERE, KERNEL)


def _rejections(res) -> list[int]:
    return res["r"]


@pytest.mark.parametrize("name", list(CASES[KERNEL]))
def test_example_matches_reference(name):
    res = _results()[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    p = CASES[KERNEL][name][0]
    B, K = p["B"], p["K"]
    assert res["shape"] == [B, K + 1] and res["dtype"] == "int32", res
    assert res["n_bad"] == 0, H.mismatch(res, f"{name} launch")
    assert res["n_differ_ref"] == 0, res                      # token ids: exact
    assert res["acc_equal"] is True and res["acc_prefix"] is True, res
    assert res["n_differ_baseline"] == 0, res
    r = res["r"]
    assert res["n_minus_one"] == sum(K - x for x in r), res     # -1 after each rejection only
    if name == "k5_rows2_even_int64":
        assert r == [K, 0], r
    if name == "k8_rows4_padded_group":
        assert r[0] == 5, r
    if name == "k1_rows8_odd_v_int64":
        assert r[2] == 1, r
    if name == "all_accepted_bonus_wide_chunk":
        assert r == [K] * B, r
    if name == "draft_prob_zero":
        assert r == [1, K, 0], r
    if name == "ties_first_index":
        assert r == [K, K] and res["bonus"] == [0, 5], res
    if name == "pitched_views":
        assert res["probs_row_stride"] == p["V"] + PITCH and res["ids_strides"] == [1, B], res


def test_cases_cover_every_code_path():
    """Every tunable at >= 2 values bracketing the sweep; EVEN_V 0 and 1; ROWS dividing K + 1, not,
    and wider than it; K = 1 and KP > K; both id dtypes; one chunk and several, a chunk wider than V;
    rejections at 0, in the middle and none."""
    H.assert_tunables_covered(CASES)
    mod = load_example(KERNEL)
    cases = list(CASES[KERNEL].values())
    assert {p["ids"] for p, _ in cases} == set(mod.IDS)
    assert {p["V"] % c["BLOCK_V"] == 0 for p, c in cases} == {True, False}
    assert {(p["K"] + 1) % c["ROWS"] == 0 for p, c in cases} == {True, False}
    assert any(c["ROWS"] > p["K"] + 1 for p, c in cases)
    assert any(p["K"] == 1 for p, _ in cases) and any(p["K"] & (p["K"] - 1) for p, _ in cases)
    steps = {-(-p["V"] // c["BLOCK_V"]) for p, c in cases}
    assert 1 in steps and max(steps) >= 4
    assert any(c["BLOCK_V"] > p["V"] for p, c in cases) and any(p["V"] % 16 for p, _ in cases)
    for k in ("BLOCK_V", "ROWS", "num_warps"):
        tested = {c[k] for _, c in cases}
        assert min(tested) <= min(SWEEP_AXES[k]) and max(tested) >= max(SWEEP_AXES[k]), (k, tested)
    assert {c["num_stages"] for _, c in cases} == {1, 2}
    rs = {(x, CASES[KERNEL][n][0]["K"]) for n, res in _results().items() for x in res["r"]}
    assert any(x == 0 for x, _ in rs) and any(0 < x < k for x, k in rs) and any(x == k for x, k in rs)


def test_launcher_hooks_agree_with_shapes():
    """At every point and sweep config: example_args on meta with the launch's shapes, dtypes and
    strides, KP / EVEN_V, the grid and the V steps; bytes_moved / flops; 100 MB - 2 GB of traffic."""
    import torch

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "example_args", "torch_baseline", "rejection_sample", "torch_rejection_sample"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert not hasattr(mod, "secondary_kernels") and not hasattr(mod, "cta_iterations")
    assert len(mod.POINTS) == 3 and mod.BASELINE["num_stages"] == 1 and mod.ROLE == ROLE
    assert mod.SWEEP_AXES == SWEEP_AXES
    cfgs = [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]
    for p in mod.POINTS:
        B, K, V = p["B"], p["K"], p["V"]
        idt = torch.int64 if p["ids"] == "int64" else torch.int32
        for cfg in cfgs:
            a = mod.example_args(cfg, p)
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for v in a.values())
            assert a["DRAFT_IDS"].shape == (B, K) and a["DRAFT_IDS"].dtype == idt
            assert a["DRAFT_P"].shape == (B * K, V) and a["TARGET_P"].shape == (B * (K + 1), V)
            assert a["NOISE"].shape == (B, V) and a["UNIF"].shape == (B, K)
            assert all(a[k].dtype == torch.float32 for k in ("DRAFT_P", "TARGET_P", "NOISE", "UNIF"))
            assert a["OUT"].shape == (B, K + 1) and a["OUT"].dtype == torch.int32
            assert a["ACC"].shape == (B, K) and a["ACC"].dtype == torch.bool
            assert (a["K"], a["V"], a["stride_ib"], a["stride_ik"], a["stride_d"], a["stride_t"], a["stride_ub"],
                    a["stride_uk"], a["stride_e"]) == (K, V, K, 1, V, V, K, 1, V)
            assert a["KP"] == 1 << (K - 1).bit_length() and a["KP"] >= K
            assert (a["ROWS"], a["BLOCK_V"], a["EVEN_V"]) == (cfg["ROWS"], cfg["BLOCK_V"], int(V % cfg["BLOCK_V"] == 0))
            assert mod.grid(cfg, p) == (-(-(K + 1) // cfg["ROWS"]), B)
            assert mod.loop_iterations(cfg, p) == -(-V // cfg["BLOCK_V"])
        ib = 8 if p["ids"] == "int64" else 4
        assert mod.bytes_moved(p) == 4 * V * (B * (2 * K + 2)) + B * K * (ib + 5) + B * (K + 1) * 4
        assert mod.flops(p) == 4 * B * (K + 1) * V
        assert 100e6 <= mod.bytes_moved(p) <= 2e9
        assert H.meta_nbytes(mod.example_args(mod.BASELINE, p)) < 4 * 2**30
    # the points differ: vocabulary, K, batch, id dtype; V never a multiple of the wider chunks
    assert sorted(p["V"] for p in mod.POINTS) == [32000, 128256, 151936]
    assert sorted(p["K"] for p in mod.POINTS) == [4, 5, 8]
    assert {p["ids"] for p in mod.POINTS} == set(mod.IDS)


def test_hooks_on_small_points_and_inputs():
    """make_inputs: shapes, dtypes, the seed, probability rows, ids in range, a realistic acceptance
    rate; the torch version against a hand-worked request; torch_baseline's dtype."""
    import torch

    mod = load_example(KERNEL)
    p = _pt(8, 4, 4096, "int64")
    inp = mod.make_inputs(p, seed=1, device="cpu")
    ids = inp["draft_token_ids"]
    assert ids.shape == (8, 4) and ids.dtype == torch.int64 and 0 <= int(ids.min()) and int(ids.max()) < 4096
    assert inp["draft_probs"].shape == (32, 4096) and inp["target_probs"].shape == (40, 4096)
    assert inp["uniform"].shape == (8, 4) and inp["noise"].shape == (8, 4096)
    assert all(t.dtype == torch.float32 for k, t in inp.items() if k != "draft_token_ids")
    assert torch.allclose(inp["target_probs"].sum(-1), torch.ones(40), atol=1e-4)
    assert torch.allclose(inp["draft_probs"].sum(-1), torch.ones(32), atol=1e-4)
    assert float(inp["noise"].min()) > 0 and abs(float(inp["noise"].mean()) - 1.0) < 0.05
    assert torch.equal(mod.make_inputs(p, seed=1, device="cpu")["draft_probs"], inp["draft_probs"])
    assert not torch.equal(mod.make_inputs(p, seed=2, device="cpu")["draft_probs"], inp["draft_probs"])
    assert mod.make_inputs(_pt(2, 3, 64), device="cpu")["draft_token_ids"].dtype == torch.int32
    out, acc = mod.torch_rejection_sample(inp)
    assert 0.3 <= float(acc.float().mean()) <= 0.9             # a draft that roughly agrees
    assert out.dtype == torch.int32 and torch.equal(mod.reference(inp), out.float())
    assert torch.equal(mod.torch_baseline(inp), out)
    # one request, K = 2, V = 4, by hand
    hand = {"draft_token_ids": torch.tensor([[1, 2]]),
            "draft_probs": torch.tensor([[0.1, 0.4, 0.3, 0.2], [0.25, 0.25, 0.25, 0.25]]),
            "target_probs": torch.tensor([[0.1, 0.3, 0.3, 0.3], [0.5, 0.1, 0.1, 0.3], [0.7, 0.1, 0.1, 0.1]]),
            "uniform": torch.tensor([[0.7, 0.5]]), "noise": torch.tensor([[1.0, 2.0, 1.0, 0.5]])}
    # position 0: 0.3 / 0.4 = 0.75 >= 0.7, accepted; position 1: 0.1 / 0.25 = 0.4 < 0.5, rejected;
    # recovered: max(p - q, 0) = [0.25, 0, 0, 0.05] / e = [0.25, 0, 0, 0.1]: token 0
    out, acc = mod.torch_rejection_sample(hand)
    assert out.tolist() == [[1, 0, -1]] and acc.tolist() == [[True, False]]
    hand["uniform"] = torch.tensor([[0.7, 0.3]])                # both accepted: bonus argmax p_2 / e = token 0 ...
    hand["noise"] = torch.tensor([[1.0, 2.0, 1.0, 0.1]])        # ... unless noise makes token 3 win (0.1 / 0.1)
    out, acc = mod.torch_rejection_sample(hand)
    assert out.tolist() == [[1, 2, 3]] and acc.tolist() == [[True, True]]
    assert mod.bytes_moved(_pt(1, 1, 100)) == 4 * 100 * 4 + 1 * 9 + 2 * 4


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    B, K, V = 2, 3, 64
    inp = mod.make_inputs(_pt(B, K, V), device="cpu")
    args = [inp[k] for k in ("draft_token_ids", "draft_probs", "target_probs", "uniform", "noise")]

    def call(*a, **kw):
        return mod.rejection_sample(*a, **kw)

    with pytest.raises(ValueError, match="BLOCK_V=48"):
        call(*args, BLOCK_V=48)
    with pytest.raises(ValueError, match="BLOCK_V=8"):
        call(*args, BLOCK_V=8)
    with pytest.raises(ValueError, match="ROWS=3"):
        call(*args, ROWS=3)
    with pytest.raises(ValueError, match="num_warps=6"):
        call(*args, num_warps=6)
    with pytest.raises(ValueError, match="draft_token_ids must be int32 / int64"):
        call(args[0].float(), *args[1:])
    with pytest.raises(ValueError, match="draft_token_ids must be int32 / int64"):
        call(args[0].reshape(-1), *args[1:])
    with pytest.raises(ValueError, match=r"B, K >= 1"):
        call(args[0][:, :0], *args[1:])
    with pytest.raises(ValueError, match=r"target_probs must be \[B\*\(K\+1\)=8, V\]"):
        call(args[0], args[1], args[2][:6], *args[3:])
    with pytest.raises(ValueError, match=r"draft_probs must be \[6, 64\]"):
        call(args[0], args[1][:, :63], *args[2:])
    with pytest.raises(ValueError, match=r"noise must be \[2, 64\]"):
        call(*args[:4], args[4][:1])
    with pytest.raises(ValueError, match="uniform must be float32"):
        call(*args[:3], args[3].double(), args[4])
    with pytest.raises(ValueError, match="noise must be float32"):
        call(*args[:4], args[4].half())
    with pytest.raises(ValueError, match="target_probs must have unit column stride"):
        call(args[0], args[1], torch.empty(V, B * (K + 1)).t(), *args[3:])
    with pytest.raises(ValueError, match="ids 'int16'"):
        mod.make_inputs(_pt(1, 1, 16, "int16"), device="cpu")
    with pytest.raises(ValueError, match="dtype 'bf16'"):
        mod.bytes_moved({**_pt(1, 1, 16), "dtype": "bf16"})
    with pytest.raises(ValueError, match="K=0"):
        mod.grid(mod.BASELINE, _pt(1, 0, 16))
    with pytest.raises(ValueError, match="V=-5"):
        mod.bytes_moved(_pt(1, 2, -5))


def test_sweep_fits_the_points():
    """The study sweep: 36 configs (BLOCK_V 256-2048 x ROWS 1 / 2 / 4 x 4 / 8 / 16 warps, num_stages
    1: a step of 0.5-64 fp32 elements a thread a tile) with BASELINE among them; at every point each
    config is valid and launches 96-2304 programs. (Every config was compiled for sm_90 at every point
    with triton 3.6.0 and 3.9: all compile, none spills; 24-176 registers under 3.6 (21-184 under
    3.9), the most for the 4 x 2048 tile on 4 warps (64 elements a thread); shared memory 32-512
    bytes, the reductions' scratch (the noise is loaded in the tiles' layout: no convert_layout).
    The same tile at 4096 columns took 255 registers and spilled under 3.6: the sweep stops at
    2048.)"""
    mod = load_example(KERNEL)
    axes = SWEEP_AXES
    assert set(axes) == set(mod.TUNABLES) and mod.SWEEP_AXES == axes
    assert all(len(v) >= 2 for k, v in axes.items() if k != "num_stages") and axes["num_stages"] == [1]
    cfgs = [dict(zip(axes, v)) for v in itertools.product(*axes.values())]
    assert 36 <= len(cfgs) <= 72 and mod.BASELINE in cfgs
    for p in mod.POINTS:
        for c in cfgs:
            mod._check_cfg(c)
            gx, gy = mod.grid(c, p)
            assert 96 <= gx * gy <= 2304 and gy <= 65535, (p, c)
            assert c["ROWS"] * c["BLOCK_V"] <= 64 * 32 * c["num_warps"]          # <= 64 elements a thread
            assert mod.loop_iterations(c, p) >= 16


def test_sweep_matches_the_study():
    """scripts/rank_study.py's SWEEPS entry: the same axes, every config valid at the points."""
    configs, points, axes = H.study_sweeps([KERNEL], ROLE)[KERNEL]
    assert axes == SWEEP_AXES
    assert len(configs) == len(list(itertools.product(*SWEEP_AXES.values())))
    assert points == load_example(KERNEL).POINTS


def test_examples_import_without_torch():
    proc = H.imports_without_torch(CASES)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr[-2000:]


# configs compiled at the module's first POINT (sm_90: BASELINE first): the largest tile a thread
# (4 x 2048 on 4 warps), the smallest (256 on 16 warps), a middle one
COMPILE_CFGS = [_cfg(2048, 1, 8), _cfg(2048, 4, 4), _cfg(256, 1, 16), _cfg(1024, 2, 8)]
SM120_CFGS = [_cfg(2048, 1, 8), _cfg(2048, 4, 4)]


@pytest.mark.slow
def test_example_compiles_sm90(shared_cache):
    """On sm_90: BASELINE and three more at the first point compile without spills, shared memory
    only the reductions' scratch (< 1 KiB); BASELINE and the largest tile at the other two points
    (int64 ids; V = 32000, K = 8)."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    assert COMPILE_CFGS[0] == mod.BASELINE
    for cfg, res in H.compile_results(KERNEL, COMPILE_CFGS, "sm_90"):
        assert res.status == "ok", f"{cfg} on sm_90: {res.status}: {res.message}"
        assert 0 < res.n_regs <= 255 and res.n_spills == 0 and res.shared < 1024, (
            cfg, res.n_regs, res.n_spills, res.shared)
    for p in mod.POINTS[1:]:
        for cfg in COMPILE_CFGS[:2]:
            res = compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch="sm_90",
                                 num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
            assert res.status == "ok" and res.n_spills == 0, res.message
            assert res.n_regs > 0 and res.shared < 1024, (cfg, res.n_regs, res.shared)


@pytest.mark.slow
def test_example_compiles_sm120(shared_cache):
    for cfg, res in H.compile_results(KERNEL, SM120_CFGS, "sm_120"):
        assert res.status == "ok", f"{cfg} on sm_120: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.n_spills == 0
        assert res.shared < min(1024, SM120_SMEM_PER_BLOCK), (cfg, res.shared)


# ----------------------------------------------------------------- the subprocess side
def _run() -> None:
    """Every case through launch against reference (as the GPU study's gate, and exactly), the
    accepted flags against the torch version's, torch_baseline's tokens; one JSON line."""
    import torch

    H.patch_interpreter_index()
    mod = load_example(KERNEL)

    def extra(name, point, inputs, out, ref):
        K = point["K"]
        _, acc = mod._run(inputs, CASES[KERNEL][name][1])
        _, ref_acc = mod.torch_rejection_sample(inputs)
        base = mod.torch_baseline(inputs)
        r = acc.sum(dim=1)
        prefix = bool(torch.equal(acc, torch.arange(K)[None, :] < r[:, None]))
        return {"dtype": str(out.dtype).replace("torch.", ""),
                "n_differ_ref": int((out.float() != ref).sum()),
                "acc_equal": bool(acc.dtype == torch.bool and torch.equal(acc, ref_acc)), "acc_prefix": prefix,
                "r": r.tolist(), "n_minus_one": int((out == -1).sum()), "bonus": out[:, K].tolist(),
                "n_differ_baseline": int((base != out).sum()) if base.dtype == out.dtype else -1,
                "probs_row_stride": inputs["target_probs"].stride(0),
                "ids_strides": list(inputs["draft_token_ids"].stride())}

    H.run_cases(KERNEL, CASES[KERNEL], tol_table=EXACT, prepare=_prepare, extra=extra)


if __name__ == "__main__":
    _run()
