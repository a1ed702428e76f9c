"""examples/delta_kkt_solve.py ((Gated) DeltaNet's chunked-prefill preparation: per chunk of 64 tokens
of one head, A = strict_lower(beta k k^T [* exp(g_i - g_j)]) and Ai = (I + A)^{-1}, k [B, T, H, K]
bf16 / fp16, Ai [B, T, H, 64] in k's dtype or fp32; the K loop one tl.dot a step, the diagonal
BLOCK_D x BLOCK_D blocks inverted by forward substitution, then merged pairwise with tl.dot) against
its torch reference on the CPU through Triton's interpreter, its launcher hooks against the shapes,
its study sweep against the points, and a compile for sm_90 and sm_120 from its own
``example_args``.

As in test_examples_round25_a.py the interpreter cases run in a subprocess (this file run as a
script: ``python tests/test_examples_round26_a.py delta_kkt_solve``) that prints one JSON line. The
subprocess installs the harness's interpreter fixes (bf16 rounding; triton 3.6's runtime loop
bounds under numpy >= 2.3; bf16 dot operands widened to fp32).

Shapes are small, odd and ragged: one chunk shorter than 64 (T 40) and a last chunk of 1, 2, 6, 36
rows; T a multiple of 64 (EVEN_T); K 32-256, a K step that does not divide K (96 at 64) and one
longer than K (48 at 128: a single masked step); plain DeltaNet and the gated form, the four
GATED x EVEN_T variants; BLOCK_D 16 (two merge levels), 32 (one) and 64 (the substitution alone);
a strong decay (g falling by ~3 a token: exp(g_i - g_j) underflows within a chunk, and rows past
T would overflow exp(0 - g_j) without the kernel's mask); strongly coupled keys with beta up to 2
(inverse entries of order 1); k a slice of a fused qkv projection, beta a strided slice and g a
transposed [B, H, T] buffer (all read in place); beta in fp32; bf16 and fp16 inputs, Ai in the input
dtype and in fp32; BLOCK_K 32-128, 4 and 8 warps, num_stages 1-3.

Per case: launch's output within the dtype's tolerance of the fp64-computed reference (the harness's
per-element check) and each element within about one ulp of Ai's dtype of its own value; exact 1 on
the diagonal and exact 0 above it (the zero blocks of the merges and the substitution's untouched
upper triangles); finite; its shape, dtype and strides; the inputs unchanged; torch_baseline within
tolerance.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
KERNEL = "delta_kkt_solve"
ROLE = "held-out-26"
H200_SMS = 132
SM90_SMEM_PER_BLOCK = 227 * 1024
SM120_SMEM_PER_BLOCK = 99 * 1024
BT = 64

# the study's sweep (scripts/rank_study.py SWEEPS["delta_kkt_solve"] once the lead adds it)
SWEEP_AXES = {"BLOCK_K": [32, 64, 128], "BLOCK_D": [16, 32, 64], "num_warps": [4, 8], "num_stages": [1, 2, 3]}


def _cfg(bk, bd, w=4, st=2):
    return {"BLOCK_K": bk, "BLOCK_D": bd, "num_warps": w, "num_stages": st}


def _pt(b, t, h, k, dtype="bf16", gated=0, out_dtype=None):
    p = {"B": b, "T": t, "H": h, "K": k, "dtype": dtype, "gated": gated}
    if out_dtype is not None:
        p["out_dtype"] = out_dtype
    return p


# case -> (point, cfg); comments: chunks (rows of the last), EVEN_T / EVEN_K, K steps
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        # one chunk of 40 rows (EVEN_T 0), gated; K 64 in 2 steps of 32; three heads
        "one_chunk_gated_bf16": (_pt(1, 40, 3, 64, "bf16", 1), _cfg(32, 16, 4, 2)),
        # no mask at all: 2 chunks, K 128 in 2 steps; plain DeltaNet, Ai in fp32; 8 warps, 3 stages
        "even_plain_fp32_out_bf16": (_pt(2, 128, 2, 128, "bf16", 0, "fp32"), _cfg(64, 32, 8, 3)),
        # K 96 at BLOCK_K 64: 2 steps, the second 32 columns (EVEN_K 0); 3 chunks, the last 2 rows;
        # gated; num_stages 1
        "ragged_k_gated_fp16": (_pt(1, 130, 2, 96, "fp16", 1), _cfg(64, 16, 4, 1)),
        # K 48 shorter than BLOCK_K 128: one masked step; 2 chunks, the last 6 rows; plain; BLOCK_D 64
        # (the substitution alone, 63 steps)
        "k_below_step_plain_bf16": (_pt(2, 70, 1, 48, "bf16", 0), _cfg(128, 64, 4, 2)),
        # head dim 256 in 2 steps of 128, EVEN_T 1, gated, Ai in fp32; 8 warps, 3 stages
        "head_dim_256_fp32_out_fp16": (_pt(1, 64, 3, 256, "fp16", 1, "fp32"), _cfg(128, 32, 8, 3)),
        # k the middle third of a fused [B, T, 3 H K] qkv projection, beta the second half of a
        # [B, T, 2 H] buffer, g a [B, H, T] buffer seen transposed: 2 chunks, the last 36 rows; gated
        "strided_inputs_gated_bf16": (_pt(2, 100, 2, 32, "bf16", 1), _cfg(32, 16, 4, 2)),
        # a last chunk of one row; beta in fp32; gated with BLOCK_D 64; 8 warps
        "last_row_beta_fp32_fp16": (_pt(1, 65, 2, 64, "fp16", 1), _cfg(32, 64, 8, 2)),
        # g falling by ~3 a token (to ~-190 within a chunk): exp(g_i - g_j) underflows; the last chunk
        # 36 rows, whose padded rows (g 0) would give exp(0 - g_j) = inf without the mask
        "strong_decay_ragged_bf16": (_pt(1, 100, 2, 64, "bf16", 1), _cfg(64, 32, 4, 3)),
        # keys at a cosine of ~0.8 and beta in (0, 2) (the negative-eigenvalue variant): inverse entries
        # of order 1 that alternate in sign; 3 even chunks; Ai in fp32; 8 warps, num_stages 1
        "strong_coupling_fp32_out_bf16": (_pt(1, 192, 1, 64, "bf16", 0, "fp32"), _cfg(32, 16, 8, 1)),
    },
}
STRIDED, BETA32, DECAY, COUPLED = ("strided_inputs_gated_bf16", "last_row_beta_fp32_fp16", "strong_decay_ragged_bf16",
                                   "strong_coupling_fp32_out_bf16")

# configs compiled at the module's first POINT on sm_90 (BASELINE first): the most registers (BLOCK_D
# 16, K steps of 64 on 4 warps is BASELINE itself), the most shared memory (8 warps: the merges'
# operand buffers), the widest K step at the deepest pipeline, the substitution alone
COMPILE_CFGS = [_cfg(64, 16, 4, 2), _cfg(64, 16, 8, 2), _cfg(128, 32, 4, 3), _cfg(128, 64, 8, 3)]
# sm_120 (mma.sync, no wgmma): one merge level on 4 and on 8 warps, the substitution alone. BLOCK_D 16
# (two merge levels) spills there: BASELINE 22 registers under triton 3.9 (none under 3.6), 8 warps 6
# under 3.6
SM120_CFGS = [_cfg(64, 32, 4, 2), _cfg(128, 32, 8, 3), _cfg(128, 64, 4, 3)]


def _smem_pipeline(cfg) -> int:
    """The K loop's buffers: num_stages [64, BLOCK_K] 16-bit key tiles (one at num_stages 1)."""
    return max(cfg["num_stages"], 1) * BT * cfg["BLOCK_K"] * 2


def _smem_merges(cfg) -> int:
    """The merges' tf32x3 operand buffers (BLOCK_D 16 / 32; none for 64), as triton 3.6 / 3.9 allocate
    them on sm_90: 64 KiB on 4 warps, 96 KiB on 8."""
    if cfg["BLOCK_D"] == 64:
        return 0
    return (64 if cfg["num_warps"] == 4 else 96) * 1024


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """STRIDED: k, beta, g views of wider buffers; BETA32: beta in fp32; DECAY: g the chunk-local
    cumsum of steps near -3; COUPLED: keys sharing most of one direction, beta in (0, 2). Then the
    inputs' copies, to check they are left alone."""
    import torch

    mod = load_example(KERNEL)
    k, beta, g = inputs["k"], inputs["beta"], inputs["g"]
    B, T, Hh, K = k.shape
    gen = torch.Generator().manual_seed(11)
    if name == STRIDED:
        qkv = torch.full((B, T, 3 * Hh * K), 5.0, dtype=k.dtype)
        qkv[..., Hh * K:2 * Hh * K] = k.reshape(B, T, Hh * K)
        inputs["k"] = qkv[..., Hh * K:2 * Hh * K].view(B, T, Hh, K)
        ba = torch.full((B, T, 2 * Hh), 0.25, dtype=beta.dtype)
        ba[..., Hh:] = beta
        inputs["beta"] = ba[..., Hh:]
        inputs["g"] = g.transpose(1, 2).contiguous().transpose(1, 2)
    if name == BETA32:
        inputs["beta"] = torch.sigmoid(torch.randn((B, T, Hh), generator=gen))
    if name == DECAY:
        step = -3.0 * (0.5 + torch.rand((B, T, Hh), generator=gen))
        inputs["g"] = mod.chunk_local_cumsum(step)
    if name == COUPLED:
        d = torch.nn.functional.normalize(torch.randn((1, 1, Hh, K), generator=gen), dim=-1)
        kk = torch.randn((B, T, Hh, K), generator=gen) / K ** 0.5 + 2.0 * d
        inputs["k"] = torch.nn.functional.normalize(kk, dim=-1).to(k.dtype)
        inputs["beta"] = (2.0 * torch.rand((B, T, Hh), generator=gen)).to(beta.dtype)
    inputs["k0"] = inputs["k"].clone()
    inputs["beta0"] = inputs["beta"].clone()
    inputs["g0"] = None if inputs["g"] is None else inputs["g"].clone()


# ----------------------------------------------------------------- the pytest side
def _results() -> dict:
    return H.interpreter_results(HERE, KERNEL)


def _flags(p, c):
    """(chunks, rows of the last chunk, EVEN_T, EVEN_K, K steps) of a case."""
    T, K = p["T"], p["K"]
    return -(-T // BT), T - (-(-T // BT) - 1) * BT, int(T % BT == 0), int(K % c["BLOCK_K"] == 0), -(-K // c["BLOCK_K"])


@pytest.mark.parametrize("name", list(CASES[KERNEL]))
def test_example_matches_reference(name):
    res = _results()[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    p = CASES[KERNEL][name][0]
    B, T, Hh = p["B"], p["T"], p["H"]
    assert res["n_bad"] == 0, H.mismatch(res, f"{name} launch")
    assert res["dtype"] == p.get("out_dtype", p["dtype"]), res
    assert res["shape"] == [B, T, Hh, BT] and res["out_strides"] == [T * Hh * BT, Hh * BT, BT, 1], res
    assert res["n_loose"] == 0, res                       # each element within ~1 ulp of its own value
    assert res["n_not_unit_diag"] == 0 and res["n_upper_nonzero"] == 0, res
    assert res["n_nonfinite"] == 0, res
    assert res["inputs_unchanged"] is True, res
    if name == COUPLED:
        # torch_baseline rounds A to bf16 (its GEMM's output dtype) and this inverse amplifies it
        assert res["baseline"]["max_err"] <= 0.05 * res["baseline"]["scale"], res["baseline"]
    else:
        assert res["baseline"]["n_bad"] == 0, H.mismatch(res["baseline"], f"{name} torch_baseline")
    if name == STRIDED:
        K = p["K"]
        assert res["k_strides"] == [T * 3 * Hh * K, 3 * Hh * K, K, 1], res
        assert res["beta_strides"] == [T * 2 * Hh, 2 * Hh, 1] and res["g_strides"] == [Hh * T, 1, T], res
    if name == BETA32:
        assert res["beta_dtype"] == "fp32", res
    if name == DECAY:
        assert res["min_g"] < -90.0 and res["n_ref_tiny"] > 0, res       # exp(g_i - g_j) underflows
    if name == COUPLED:
        assert res["max_offdiag"] > 0.5, res


def test_cases_cover_every_code_path():
    """Every tunable at each of its sweep values; both input dtypes, Ai in each and in fp32; the four
    GATED x EVEN_T variants and both EVEN_K; a single ragged chunk, a last chunk of one row, several
    chunks; one K step and several, a K shorter than one step; a batch of one and of two."""
    H.assert_tunables_covered(CASES)
    mod = load_example(KERNEL)
    cases = list(CASES[KERNEL].values())
    assert {p["dtype"] for p, _ in cases} == set(mod.DTYPES)
    assert {(p["dtype"], p.get("out_dtype", p["dtype"])) for p, _ in cases} == {
        ("bf16", "bf16"), ("fp16", "fp16"), ("bf16", "fp32"), ("fp16", "fp32")}
    fl = [(p, c, _flags(p, c)) for p, c in cases]
    assert {(p["gated"], f[2]) for p, _, f in fl} == {(0, 0), (0, 1), (1, 0), (1, 1)}
    assert {f[3] for _, _, f in fl} == {0, 1}
    assert {(p["gated"], c["BLOCK_D"]) for p, c in cases} == {(g, d) for g in (0, 1) for d in (16, 32, 64)}
    assert 1 in {f[0] for _, _, f in fl} and max(f[0] for _, _, f in fl) >= 3
    assert 1 in {f[1] for _, _, f in fl if not f[2]}
    assert {f[4] == 1 for _, _, f in fl} == {True, False}
    assert any(p["K"] < c["BLOCK_K"] for p, c in cases)
    assert {p["B"] for p, _ in cases} == {1, 2} and max(p["H"] for p, _ in cases) >= 3
    for k, vals in SWEEP_AXES.items():
        assert {c[k] for _, c in cases} >= set(vals), k


def test_launcher_hooks_agree_with_shapes():
    """At every point and sweep config: example_args on meta with the launch's shapes, dtypes and
    strides, GATED / EVEN_T / EVEN_K; the grid (H, chunks, B) and the K steps; bytes_moved / flops;
    inputs < 4 GB; at least 0.4 GB of DRAM traffic a point (roughly 100 us or more at an H200's
    4.8 TB/s)."""
    import torch

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "example_args", "torch_baseline", "kkt_solve", "chunk_local_cumsum"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert not hasattr(mod, "secondary_kernels") and not hasattr(mod, "cta_iterations")
    assert len(mod.POINTS) == 3 and mod.ROLE == ROLE and mod.SWEEP_AXES == SWEEP_AXES
    dts = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}
    size = {"fp16": 2, "bf16": 2, "fp32": 4}
    cfgs = [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]
    for p in mod.POINTS:
        B, T, Hh, K, gated = p["B"], p["T"], p["H"], p["K"], p["gated"]
        odt = p.get("out_dtype", p["dtype"])
        for cfg in cfgs:
            a = mod.example_args(cfg, p)
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for v in a.values())
            assert a["Kp"].shape == (B, T, Hh, K) and a["Kp"].dtype == dts[p["dtype"]] and a["Kp"].is_contiguous()
            assert a["BETA"].shape == (B, T, Hh) and a["BETA"].dtype == dts[p["dtype"]]
            assert a["AI"].shape == (B, T, Hh, BT) and a["AI"].dtype == dts[odt] and a["AI"].is_contiguous()
            if gated:
                assert a["G"].shape == (B, T, Hh) and a["G"].dtype == torch.float32
            else:
                assert a["G"] is a["BETA"]
            assert (a["T"], a["K"], a["stride_kb"], a["stride_kt"], a["stride_kh"]) == (T, K, T * Hh * K, Hh * K, K)
            assert (a["stride_bb"], a["stride_bt"], a["stride_bh"]) == (T * Hh, Hh, 1)
            assert (a["stride_ob"], a["stride_ot"], a["stride_oh"]) == (T * Hh * BT, Hh * BT, BT)
            assert (a["GATED"], a["EVEN_T"], a["EVEN_K"]) == (gated, int(T % BT == 0), int(K % cfg["BLOCK_K"] == 0))
            assert (a["BLOCK_K"], a["BLOCK_D"]) == (cfg["BLOCK_K"], cfg["BLOCK_D"])
            assert mod.grid(cfg, p) == (Hh, -(-T // BT), B)
            assert mod.loop_iterations(cfg, p) == -(-K // cfg["BLOCK_K"])
        rows = B * T * Hh
        assert mod.bytes_moved(p) == rows * (K * size[p["dtype"]] + size[p["dtype"]] + 4 * gated + BT * size[odt])
        full, last = divmod(T, BT)
        per = [BT] * full + ([last] if last else [])
        assert mod.flops(p) == B * Hh * sum(n * (n - 1) * K + n * (n - 1) * (n - 2) // 3 for n in per)
        assert mod.bytes_moved(p) < 4 * 2**30 and mod.bytes_moved(p) >= 0.4e9, p
    # the points differ: gated or not, head dim 128 / 256, T ragged or not, the dtypes, Ai's dtype
    assert sorted(p["K"] for p in mod.POINTS) == [128, 128, 256]
    assert {p["gated"] for p in mod.POINTS} == {0, 1}
    assert {p["dtype"] for p in mod.POINTS} == set(mod.DTYPES)
    assert {p.get("out_dtype", p["dtype"]) for p in mod.POINTS} == {"bf16", "fp16", "fp32"}
    assert [p["T"] % BT != 0 for p in mod.POINTS] == [False, False, True]
    flags = {(mod.example_args(c, p)["EVEN_T"], mod.example_args(c, p)["EVEN_K"]) for p in mod.POINTS for c in cfgs}
    assert {f[0] for f in flags} == {0, 1} and {f[1] for f in flags} == {1}      # every K a multiple of 128


def test_hooks_on_small_points_and_inputs():
    """make_inputs: shapes, dtypes, the seed, unit-norm keys, beta in (0, 1), g the chunk-local
    cumsum of negative steps; reference: unit lower triangular and (I + A) Ai = I for an A built by
    hand (loops over the chunk); torch_baseline's dtype; bytes / flops by hand."""
    import torch

    mod = load_example(KERNEL)
    p = _pt(2, 70, 3, 16, "fp16", 1, "fp32")
    inp = mod.make_inputs(p, seed=1, device="cpu")
    k, beta, g = inp["k"], inp["beta"], inp["g"]
    assert k.shape == (2, 70, 3, 16) and k.dtype == torch.float16 and k.is_contiguous()
    assert beta.shape == (2, 70, 3) and beta.dtype == torch.float16
    assert g.shape == (2, 70, 3) and g.dtype == torch.float32 and inp["out_dtype"] == torch.float32
    assert mod.make_inputs(_pt(1, 3, 1, 4, "bf16"), device="cpu")["g"] is None
    assert torch.equal(mod.make_inputs(p, seed=1, device="cpu")["k"], k)
    assert not torch.equal(mod.make_inputs(p, seed=2, device="cpu")["k"], k)
    assert torch.allclose(k.float().norm(dim=-1), torch.ones(2, 70, 3), atol=2e-3)
    assert float(beta.min()) > 0 and float(beta.max()) < 1
    step = torch.cat([g[:, :1], g[:, 1:] - g[:, :-1]], 1)
    step[:, 64] = g[:, 64]                                    # the second chunk restarts the sum
    assert float(step.max()) < 0 and float(step.min()) > -2
    assert torch.allclose(mod.chunk_local_cumsum(step), g, atol=1e-5)
    ref = mod.reference(inp)
    assert ref.shape == (2, 70, 3, 64) and ref.dtype == torch.float32
    # chunk 1 of batch 1, head 2: its 6 rows
    kc, bc, gc = k[1, 64:, 2].double(), beta[1, 64:, 2].double(), g[1, 64:, 2].double()
    A = torch.zeros(6, 6, dtype=torch.float64)
    for i in range(6):
        for j in range(i):
            A[i, j] = bc[i] * (kc[i] @ kc[j]) * torch.exp(gc[i] - gc[j])
    blk = ref[1, 64:, 2, :6].double()
    assert torch.allclose((torch.eye(6, dtype=torch.float64) + A) @ blk, torch.eye(6, dtype=torch.float64), atol=1e-5)
    assert torch.equal(ref[1, 64:, 2, 6:], torch.zeros(6, 58))
    assert torch.equal(torch.diagonal(ref[0, :64, 0], 0), torch.ones(64))
    assert torch.equal(torch.triu(ref[0, :64, 0], 1), torch.zeros(64, 64))
    base = mod.torch_baseline(inp)
    assert base.dtype == torch.float32 and base.shape == (2, 70, 3, 64)
    assert mod.bytes_moved(p) == 2 * 70 * 3 * (16 * 2 + 2 + 4 + 64 * 4)
    assert mod.bytes_moved(_pt(1, 64, 1, 128, "bf16")) == 64 * (128 * 2 + 2 + 64 * 2)
    assert mod.flops(_pt(1, 70, 1, 16)) == 64 * 63 * 16 + 64 * 63 * 62 // 3 + 6 * 5 * 16 + 6 * 5 * 4 // 3
    assert mod.grid(_cfg(32, 16), _pt(3, 129, 5, 8)) == (5, 3, 3)
    assert mod.loop_iterations(_cfg(32, 16), _pt(3, 50, 2, 70)) == 3


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    k = torch.ones(1, 8, 2, 16, dtype=torch.bfloat16)
    beta = torch.ones(1, 8, 2, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="BLOCK_K=48"):
        mod.kkt_solve(k, beta, BLOCK_K=48)
    with pytest.raises(ValueError, match="BLOCK_D=8"):
        mod.kkt_solve(k, beta, BLOCK_D=8)
    with pytest.raises(ValueError, match="num_warps=3"):
        mod.kkt_solve(k, beta, num_warps=3)
    with pytest.raises(ValueError, match="num_stages=0"):
        mod.kkt_solve(k, beta, num_stages=0)
    with pytest.raises(ValueError, match="expected k"):
        mod.kkt_solve(k[0], beta)
    with pytest.raises(ValueError, match="fp16 / bf16"):
        mod.kkt_solve(k.float(), beta)
    with pytest.raises(ValueError, match=r"beta must be \[B, T, H\]"):
        mod.kkt_solve(k, beta[:, :7])
    with pytest.raises(ValueError, match="beta must be fp16 / bf16 / fp32"):
        mod.kkt_solve(k, beta.to(torch.float64))
    with pytest.raises(ValueError, match=r"g must be \[B, T, H\]"):
        mod.kkt_solve(k, beta, torch.zeros(1, 8, 3))
    with pytest.raises(ValueError, match="g must be fp32"):
        mod.kkt_solve(k, beta, torch.zeros(1, 8, 2, dtype=torch.bfloat16))
    with pytest.raises(ValueError, match="out_dtype must be"):
        mod.kkt_solve(k, beta, out_dtype=torch.float16)
    with pytest.raises(ValueError, match="unit K stride"):
        mod.kkt_solve(torch.ones(1, 8, 16, 2, dtype=torch.bfloat16).transpose(2, 3), beta)
    with pytest.raises(ValueError, match="dtype 'fp8'"):
        mod.make_inputs(_pt(1, 4, 1, 4, "fp8"), device="cpu")
    with pytest.raises(ValueError, match="dtype 'fp32'"):
        mod.make_inputs(_pt(1, 4, 1, 4, "fp32"), device="cpu")
    with pytest.raises(ValueError, match="out_dtype 'fp16'"):
        mod.bytes_moved(_pt(1, 4, 1, 4, "bf16", 0, "fp16"))
    with pytest.raises(ValueError, match="gated=2"):
        mod.flops(_pt(1, 4, 1, 4, "bf16", 2))
    with pytest.raises(ValueError, match="T=0"):
        mod.grid(mod.BASELINE, _pt(1, 0, 1, 4))
    with pytest.raises(ValueError, match="K=-1"):
        mod.flops(_pt(1, 4, 1, -1))
    with pytest.raises(ValueError, match="BLOCK_D=128"):
        mod.grid(dict(mod.BASELINE, BLOCK_D=128), mod.POINTS[0])
    # nothing to do: an empty Ai
    assert mod.kkt_solve(torch.ones(0, 8, 2, 16, dtype=torch.bfloat16), torch.ones(0, 8, 2)).shape == (0, 8, 2, 64)
    assert mod.kkt_solve(torch.ones(1, 0, 2, 16, dtype=torch.float16), torch.ones(1, 0, 2)).shape == (1, 0, 2, 64)


def test_sweep_fits_the_points():
    """The study sweep: 54 configs (BLOCK_K 32 / 64 / 128 x BLOCK_D 16 / 32 / 64 x 4 / 8 warps x
    num_stages 1-3) with BASELINE among them; at every point each config is valid, its shared memory
    (the larger of the K pipeline's, 4-48 KiB, and the merges' operand buffers, 64 / 96 KiB) within
    sm_90's 227 KiB, and it launches >= 4 waves of CTAs on an H200 (12384 at the fewest: the ragged
    head-dim-256 point). (Every config was compiled for sm_90 at every point with triton 3.6.0 and
    3.9: see the module doc for the registers and shared memory; none spills.)"""
    mod = load_example(KERNEL)
    axes = SWEEP_AXES
    assert set(axes) == set(mod.TUNABLES) and mod.SWEEP_AXES == axes
    assert all(len(v) >= 2 for v in axes.values())
    cfgs = [dict(zip(axes, v)) for v in itertools.product(*axes.values())]
    assert 40 <= len(cfgs) <= 72 and mod.BASELINE in cfgs
    for p in mod.POINTS:
        for c in cfgs:
            mod._check_cfg(c)
            gx, gy, gz = mod.grid(c, p)
            assert gx * gy * gz >= 4 * H200_SMS and gy <= 65535 and gz <= 65535, (p, c)
            assert max(_smem_pipeline(c), _smem_merges(c)) <= SM90_SMEM_PER_BLOCK, c


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
    """On sm_90: BASELINE and three more at the first point (Qwen3-Next, gated, bf16) compile without
    spills, their shared memory the larger of the K pipeline's and the merges' buffers; and BASELINE
    and the 8-warp BLOCK_D 16 config at the other two (plain DeltaNet with Ai in fp32; the ragged
    head-dim-256 fp16 point)."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    assert COMPILE_CFGS[0] == mod.BASELINE
    for cfg, res in H.compile_results(KERNEL, COMPILE_CFGS, "sm_90"):
        assert res.status == "ok", f"{cfg} on sm_90: {res.status}: {res.message}"
        assert 0 < res.n_regs <= 255 and res.n_spills == 0, (cfg, res.n_regs, res.n_spills)
        assert max(_smem_pipeline(cfg), _smem_merges(cfg)) <= res.shared <= SM90_SMEM_PER_BLOCK, (cfg, res.shared)
    for p in mod.POINTS[1:]:
        for cfg in (COMPILE_CFGS[0], COMPILE_CFGS[1]):
            res = compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch="sm_90",
                                 num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
            assert res.status == "ok" and res.n_spills == 0, (cfg, p, res.n_regs, res.n_spills, res.message)
            assert max(_smem_pipeline(cfg), _smem_merges(cfg)) <= res.shared <= SM90_SMEM_PER_BLOCK, (cfg, res.shared)


@pytest.mark.slow
def test_example_compiles_sm120(shared_cache):
    """On sm_120 (mma.sync, no wgmma; 99 KiB a block): one merge level (BLOCK_D 32) on 4 and on 8 warps
    and the substitution alone compile without spills within its shared memory (BLOCK_D 16's two
    levels spill a few registers there)."""
    for cfg, res in H.compile_results(KERNEL, SM120_CFGS, "sm_120"):
        assert res.status == "ok", f"{cfg} on sm_120: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.n_spills == 0, (cfg, res.n_regs, res.n_spills)
        assert 0 < res.shared <= SM120_SMEM_PER_BLOCK, (cfg, res.shared)


# ----------------------------------------------------------------- the subprocess side
def _run() -> None:
    """Every case through launch against reference (the harness's tolerance) and torch_baseline
    against reference; the unit diagonal and zero upper triangle (exact); each element within about
    an ulp of Ai's dtype; shapes, dtypes, strides; the inputs unchanged; one JSON line."""
    import torch

    H.patch_interpreter_bf16_rounding()
    H.patch_interpreter_index()
    mod = load_example(KERNEL)
    names = {torch.float16: "fp16", torch.bfloat16: "bf16", torch.float32: "fp32"}

    def extra(name, point, inputs, out, ref):
        T = out.shape[1]
        loc = torch.arange(T) % BT                               # each row's chunk-local index
        cols = torch.arange(BT)
        diag = (loc[:, None] == cols[None, :])[None, :, None, :]
        upper = (cols[None, :] > loc[:, None])[None, :, None, :]
        o = out.float()
        rtol = {torch.bfloat16: 2.0 ** -8, torch.float16: 2.0 ** -11, torch.float32: 2.0 ** -18}[out.dtype]
        loose = (o - ref).abs() > rtol * ref.abs() + 1e-5 * float(ref.abs().max())
        g, g0 = inputs["g"], inputs["g0"]
        same = (torch.equal(inputs["k"], inputs["k0"]) and torch.equal(inputs["beta"], inputs["beta0"])
                and (g is None or torch.equal(g, g0)))
        res = {"dtype": names.get(out.dtype), "out_strides": list(out.stride()), "n_loose": int(loose.sum()),
               "n_not_unit_diag": int(((o != 1.0) & diag).sum()), "n_upper_nonzero": int(((o != 0.0) & upper).sum()),
               "n_nonfinite": int((~torch.isfinite(o)).sum()), "inputs_unchanged": bool(same),
               "k_strides": list(inputs["k"].stride()), "beta_strides": list(inputs["beta"].stride()),
               "g_strides": None if g is None else list(g.stride()), "beta_dtype": names.get(inputs["beta"].dtype),
               "min_g": None if g is None else float(g.min()),
               "n_ref_tiny": int(((ref.abs() < 1e-30) & ~upper).sum()),
               "max_offdiag": float(ref.masked_fill(diag | upper, 0.0).abs().max()),
               "baseline": H.compare(mod.torch_baseline(inputs), ref, point["dtype"])}
        return res

    H.run_cases(KERNEL, CASES[KERNEL], prepare=_prepare, extra=extra)


if __name__ == "__main__":
    _run()
