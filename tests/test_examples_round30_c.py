"""examples/selective_state_update.py (the single-token decode step of a Mamba / Mamba-2 selective SSM on
a continuous-batching state cache: per batch row, head and head-dim row the state read from its slot,
decayed by exp(dt A), given dt x B, written back (to its own or a separate destination slot; a pad slot
reads zero and writes nothing), y = state . C (+ D x) (* silu(z)), dt through its bias and softplus;
Mamba-2's per-head scalars with B / C per group, or Mamba-1's per-channel A; one [BLOCK_P, N] slab of a
head a program, N held whole or walked in N_SPLIT chunks) against its torch reference on the CPU through
Triton's interpreter, its launcher hooks against the shapes, its study sweep against the points, and a
compile for sm_90 and sm_120 from its own ``example_args``.

As in test_examples_round29_d.py the interpreter cases run in a subprocess (this file run as a script:
``python tests/test_examples_round30_c.py selective_state_update``) that prints one JSON line. The
subprocess installs the harness's interpreter fixes (bf16 rounding; under triton 3.6 with numpy >= 2.3
the runtime loop bounds read as ints).

Shapes are small, odd and ragged: head dims 8, 12, 16, 24 and Mamba-1 channel counts 8, 12, 40 against
BLOCK_P 4-32 (rows past P masked: EVEN_P 0, and BLOCK_P past P), N 12 (a 16-column block, masked), 16,
32, 48 (two 32-column chunks, the second ragged), 64 and 128 in 1, 2 or 4 chunks (every (N_LOOP,
EVEN_N) pair); Mamba-2 (per-head scalars, groups 1-3 of 1-2 heads), Mamba-1 (per-channel A, the 2-d
call form), the per-channel form with several heads and groups, and mamba_ssm's expanded call form
(A [H, P, N], dt [B, H, P], D / dt_bias [H, P] expanded with stride 0: read as the scalars); every
constexpr flag both ways (TIE, HAS_SLOTS, HAS_DST, HAS_D, HAS_Z, HAS_DT_BIAS, SOFTPLUS, EVEN_P, EVEN_N,
N_LOOP); slot indices a random subset of a larger cache (int32, and int64), trailing pad rows, a batch of
only pad rows, separate destination slots (with pads); the cache in vLLM V1's page layout (the slot
stride padded by the conv state) and contiguous; x / z / dt / B / C read in place from the projection
buffers (vLLM's layout) and contiguous; a case whose cache gaps, unused slots (slot 0 among them: a pad
row's clamped address), unused projection columns and output padding are NaN (a stray read or write
shows); out given as a strided view; fp32 / bf16 / fp16 activations and states; BLOCK_P 4 / 8 / 16 /
32, N_SPLIT 1 / 2 / 4, 1 / 2 / 4 / 8 warps, num_stages 1 / 2.

Per case: launch's out against the fp64 reference within the dtype's tolerance (the harness's per-element
check), each element within half an ulp of its dtype plus (N + 16) fp32 unit roundoffs of its magnitude
(sum |state| |C| + |D x|, times |silu z|); the cache after the step: every written element within half an
ulp of the state dtype plus 16 fp32 roundoffs of |s dA| + |dt x B| of the fp64 new state, every other
element (unused slots, the pad rows' would-be slots, the page's conv part) the same bits as before; the
module's reference equal to an independent row-by-row fp64 computation here; out fresh and shaped like x
in x's dtype (or the given view, its padding untouched); the inputs unchanged; the slot indices
mattering; torch_baseline (the eager gather / update / scatter) within tolerance.
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
KERNEL = "selective_state_update"
ROLE = "held-out-30"
H200_SMS = 132
SM90_SMEM_PER_BLOCK = 227 * 1024
SM120_SMEM_PER_BLOCK = 99 * 1024
SMEM_BOUND = 4 * 1024            # the kernel's only shared memory: reductions and layout conversions

# the study's sweep (scripts/rank_study.py SWEEPS["selective_state_update"] once the lead adds it)
SWEEP_AXES = {"BLOCK_P": [4, 8, 16, 32], "N_SPLIT": [1, 2, 4], "num_warps": [1, 2, 4, 8], "num_stages": [1]}
FLAG_KEYS = ("TIE", "HAS_SLOTS", "HAS_DST", "HAS_D", "HAS_Z", "HAS_DT_BIAS", "SOFTPLUS", "EVEN_P", "EVEN_N",
             "N_LOOP")


def _cfg(bp, ns, w=4, st=1):
    return {"BLOCK_P": bp, "N_SPLIT": ns, "num_warps": w, "num_stages": st}


def _m2(batch, slots, heads, P, G, N, dtype, sdt, **kw):
    return {"mamba": 2, "batch": batch, "slots": slots, "heads": heads, "head_dim": P, "groups": G, "dstate": N,
            "dtype": dtype, "state_dtype": sdt, **kw}


def _m1(batch, slots, D, N, dtype, sdt, **kw):
    return {"mamba": 1, "batch": batch, "slots": slots, "channels": D, "dstate": N, "dtype": dtype,
            "state_dtype": sdt, **kw}


# case -> (point, cfg); comments: BLOCK_N x chunks, EVEN_P / EVEN_N, the flags that differ from the defaults
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        # Mamba-2, 4 heads of 24 in 2 groups, N 16 held whole (16 x 1), EVEN_P 0 (24 = 16 + 8); 5 rows
        # in a 9-slot cache, the last a pad row; fp16 activations, fp32 cache in the page layout
        "m2_pad_ragged_p_fp16": (_m2(5, 9, 4, 24, 2, 16, "fp16", "fp32", pad_rows=1), _cfg(16, 1, 4)),
        # Mamba-2 with the z gate and separate destination slots; N 48 in 2 chunks of 32 (EVEN_N 0);
        # bf16 activations and cache; num_stages 2
        "m2_dst_gate_ragged_n_bf16": (_m2(3, 8, 2, 8, 1, 48, "bf16", "bf16", dst=1, gate=1), _cfg(8, 2, 2, 2)),
        # Mamba-1 (Jamba's form: per-channel A, z, x / z halves of in_proj's row, B / C in x_proj's row),
        # 40 channels in blocks of 32 (EVEN_P 0), N 16 in 4 chunks of 4; bf16 activations, fp32 cache
        "m1_jamba_like_bf16": (_m1(4, 6, 40, 16, "bf16", "fp32", gate=1), _cfg(32, 4, 4)),
        # Mamba-1 without slot indices (state row b), contiguous tensors and cache, N 12 in one 16-column
        # block (EVEN_N 0), dt without softplus (the step itself, plus a small bias); fp32 throughout
        "m1_no_slots_fp32": (_m1(3, 0, 12, 12, "fp32", "fp32", softplus=0, page=0, layout="contiguous"),
                             _cfg(4, 1, 1)),
        # mamba_ssm's expanded Mamba-2 form (A [H, P, N], dt [B, H, P] expanded with stride 0), without D
        # or dt_bias, no slot indices; N 64 in 4 chunks of 16; bf16 activations, fp16 cache; 8 warps
        "m2_expanded_no_skip_fp16_state": (_m2(3, 0, 4, 16, 2, 64, "bf16", "fp16", skip=0, dt_bias=0, page=0,
                                               layout="contiguous"), _cfg(8, 4, 8)),
        # NaN poisoning: the page's conv part, the unused slots (slot 0 among them), the projection's unused
        # z columns and out's padding NaN; out given as a strided view; int64 slot indices with a pad row;
        # 6 heads of 12 in 3 groups, N 32 in 2 chunks of 16; fp32 activations, bf16 cache; 1 warp
        "m2_nan_strided_out_fp32": (_m2(4, 10, 6, 12, 3, 32, "fp32", "bf16", pad_rows=1), _cfg(4, 2, 1)),
        # the per-channel form with heads (A [H, P, N], dt [B, H, P], D / dt_bias [H, P] all genuine), 4
        # heads of 8 in 2 groups, BLOCK_P 16 past P (EVEN_P 0); fp16 activations and cache
        "per_channel_heads_fp16": (_m2(3, 7, 4, 8, 2, 16, "fp16", "fp16"), _cfg(16, 1, 2)),
        # every row a pad row: the cache untouched, y from a zero state; Mamba-1, 8 channels, N 16 in
        # 2 chunks of 8; fp16
        "all_pad_fp16": (_m1(3, 4, 8, 16, "fp16", "fp16", pad_rows=3), _cfg(8, 2, 8)),
        # separate destination slots with 2 pad rows, z, N 128 in 4 chunks of 32, BLOCK_P 32 past P 16;
        # fp32
        "m2_dst_pad_n128_fp32": (_m2(6, 12, 2, 16, 2, 128, "fp32", "fp32", pad_rows=2, dst=1, gate=1),
                                 _cfg(32, 4, 4)),
    },
}
EXPANDED, NAN, PER_CHANNEL = "m2_expanded_no_skip_fp16_state", "m2_nan_strided_out_fp32", "per_channel_heads_fp16"
OUT_PAD = 3

# configs compiled at the module's first POINT (Mamba-2 2.7B, fp32 cache) on sm_90: BASELINE first, the
# most registers (BLOCK_P 32 holding N 128 on one warp: 254-255), N in 4 chunks on 8 warps; and at the
# other points BASELINE and the largest slab on 2 warps
COMPILE_CFGS = [_cfg(4, 1, 4), _cfg(32, 1, 1), _cfg(16, 4, 8)]
OTHER_CFGS = [_cfg(4, 1, 4), _cfg(32, 1, 2), _cfg(32, 2, 1)]
SM120_CFGS = [_cfg(4, 1, 4), _cfg(32, 2, 2), _cfg(8, 4, 1)]


def _flags(name: str) -> dict:
    """The constexpr flags of a case's launch (example_args at its point; the per-channel case's
    prepared tensors make it TIE 0, the expanded one's are read as TIE 1)."""
    mod = load_example(KERNEL)
    p, c = CASES[KERNEL][name]
    a = mod.example_args(c, p)
    f = {k: int(a[k]) for k in FLAG_KEYS}
    if name == PER_CHANNEL:
        f["TIE"] = 0
    return f


def _root(t):
    while t._base is not None:
        t = t._base
    return t


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """EXPANDED: mamba_ssm's call form (stride-0 expands of A, dt); PER_CHANNEL: genuine per-row A, dt,
    D, dt_bias; NAN: NaN in the cache's non-state parts and unused slots (slot 0 freed), in the
    projection's unused columns, out a view of a NaN buffer, int64 indices. Then copies of the inputs."""
    import torch

    gen = torch.Generator().manual_seed(7)
    x, st = inputs["x"], inputs["state"]
    if name == EXPANDED:
        Bt, Hh, P = x.shape
        N = st.shape[-1]
        inputs["A"] = inputs["A"][:, None, None].expand(Hh, P, N)
        inputs["dt"] = inputs["dt"][:, :, None].expand(Bt, Hh, P)
    if name == PER_CHANNEL:
        Bt, Hh, P = x.shape
        N = st.shape[-1]
        inputs["A"] = inputs["A"][:, None, None] * torch.empty(Hh, P, N).uniform_(0.5, 1.5, generator=gen)
        inputs["dt"] = (inputs["dt"].float()[:, :, None] + 0.3 * torch.randn(Bt, Hh, P, generator=gen)).to(x.dtype)
        inputs["D"] = inputs["D"][:, None] + 0.1 * torch.randn(Hh, P, generator=gen)
        inputs["dt_bias"] = inputs["dt_bias"][:, None] + 0.2 * torch.randn(Hh, P, generator=gen)
    if name == NAN:
        src = inputs["state_batch_indices"].long()
        S = st.shape[0]
        used = set(src[src >= 0].tolist())
        if 0 in used:                                   # move the row on slot 0 to a free slot
            free = next(s for s in range(S) if s not in used)
            src[src == 0] = free
            used = (used - {0}) | {free}
        inputs["state_batch_indices"] = src              # int64
        nan = float("nan")
        for key in ("state", "state_init"):
            s = inputs[key]
            root = _root(s)
            keep = s.clone()
            root.fill_(nan)
            for slot in used:
                s[slot] = keep[slot]
        proj = _root(x)
        HP = x.shape[1] * x.shape[2]
        proj[:, :HP] = nan                               # the z columns (the point has no gate)
        buf = torch.full((x.shape[0], x.shape[1], x.shape[2] + OUT_PAD), nan, dtype=x.dtype)
        inputs["out"] = buf[..., :x.shape[2]]
    for k in ("x", "dt", "A", "B", "C", "D", "z", "dt_bias", "state_batch_indices", "dst_state_batch_indices"):
        inputs[k + "0"] = None if inputs[k] is None else inputs[k].clone()
    inputs["state_init0"] = _root(inputs["state_init"]).clone()
    inputs["state0"] = _root(inputs["state"]).clone()


# ----------------------------------------------------------------- the pytest side
def _results() -> dict:
    return H.interpreter_results(HERE, KERNEL)


@pytest.mark.parametrize("name", list(CASES[KERNEL]))
def test_example_matches_reference(name):
    res = _results()[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    p = CASES[KERNEL][name][0]
    assert res["n_bad"] == 0, H.mismatch(res, f"{name} launch")
    assert res["n_loose"] == 0, res                  # half an ulp + (N + 16) u32 of the magnitude
    assert res["dtype"] == p["dtype"] and res["out_ok"] is True, res
    assert res["ref_agrees"] is True, res             # the module's reference = the row-by-row one here
    assert res["n_state_written"] == res["expect_written"], res
    assert res["n_state_loose"] == 0, res            # written rows: half an ulp + 16 u32 of |s dA| + |dt x B|
    assert res["state_rest_unchanged"] is True, res   # every other element of the cache: same bits
    assert res["inputs_unchanged"] is True and res["nonzero"] is True, res
    assert res["baseline"]["n_bad"] == 0, H.mismatch(res["baseline"], f"{name} torch_baseline")
    assert res["tie"] == (0 if (p["mamba"] == 1 or name == PER_CHANNEL) else 1), res
    if p.get("slots", 0) and res["expect_written"]:
        assert res["slots_matter"] is True, res
    if name == NAN:
        assert res["out_is_given"] is True and res["out_pad_nan"] is True, res
        assert res["index_dtype"] == "torch.int64", res
    if name == "all_pad_fp16":
        assert res["expect_written"] == 0, res


def test_cases_cover_every_code_path():
    """Every constexpr flag both ways, every (N_LOOP, EVEN_N) pair, the three dtypes for the activations
    and the cache, both layouts and page forms, pad rows, destination slots, an all-pad batch; every
    sweep value of every tunable, and num_stages 2."""
    H.assert_tunables_covered(CASES)
    cases = CASES[KERNEL]
    fl = {name: _flags(name) for name in cases}
    for k in FLAG_KEYS:
        assert {f[k] for f in fl.values()} == {0, 1}, k
    assert {(f["N_LOOP"], f["EVEN_N"]) for f in fl.values()} == set(itertools.product((0, 1), repeat=2))
    pts = [p for p, _ in cases.values()]
    assert {p["dtype"] for p in pts} == {p["state_dtype"] for p in pts} == {"fp32", "bf16", "fp16"}
    assert {p.get("layout", "vllm") for p in pts} == {"vllm", "contiguous"}
    assert {p.get("page", 1) for p in pts} == {0, 1}
    assert {p["mamba"] for p in pts} == {1, 2}
    assert any(p.get("pad_rows", 0) and p.get("dst", 0) for p in pts)
    assert any(p.get("pad_rows", 0) == p["batch"] for p in pts)
    assert any(p["mamba"] == 2 and p["groups"] > 1 and p["heads"] // p["groups"] > 1 for p in pts)
    for k, vals in SWEEP_AXES.items():
        assert {c[k] for _, c in cases.values()} >= set(vals), k
    assert 2 in {c["num_stages"] for _, c in cases.values()}


def test_launcher_hooks_agree_with_shapes():
    """At every point and sweep config: example_args on meta with make_inputs' layouts (the cache in
    vLLM V1's page, x / B / C / dt / z in place in the projection rows), the flags, the chunking, the
    grid (row blocks, heads, batch) and the loop length; bytes_moved / flops by hand; 0.25-1.4 GB moved
    a point (90-450 us at 3 TB/s); the meta tensors under 2 GB."""
    import torch

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "reference_state", "bytes_moved", "flops", "grid",
               "loop_iterations", "example_args", "torch_baseline", "selective_state_update"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert not hasattr(mod, "secondary_kernels") and not hasattr(mod, "cta_iterations")
    assert len(mod.POINTS) == 3 and mod.ROLE == ROLE and mod.SWEEP_AXES == SWEEP_AXES
    dts = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
    cfgs = [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]
    for p in mod.POINTS:
        m2 = p["mamba"] == 2
        Hh, P, G = (p["heads"], p["head_dim"], p["groups"]) if m2 else (1, p["channels"], 1)
        Bt, N, S = p["batch"], p["dstate"], p["slots"]
        ab, sb = (4 if p["dtype"] == "fp32" else 2), (4 if p["state_dtype"] == "fp32" else 2)
        HP = Hh * P
        conv_dim = HP + 2 * G * N if m2 else HP
        page = HP * N + conv_dim * 3 * ab // sb
        for cfg in cfgs:
            a = mod.example_args(cfg, p)
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for v in a.values())
            st = a["STATE"]
            assert st.shape == (S, Hh, P, N) and st.dtype == dts[p["state_dtype"]]
            assert (a["s_ss"], a["s_sh"], a["s_sp"], a["s_sn"]) == (page, P * N, N, 1)
            assert a["X"].shape == (Bt, Hh, P) and a["X"].dtype == dts[p["dtype"]]
            assert a["OUT"].shape == (Bt, Hh, P) and a["OUT"].dtype == a["X"].dtype and a["OUT"].is_contiguous()
            assert a["SRC"].shape == (Bt,) and a["SRC"].dtype == torch.int32 and a["DST"] is None
            if m2:                              # in_proj's row: z | x B C | dt
                W = 2 * HP + 2 * G * N + Hh
                assert (a["s_xb"], a["s_xh"], a["s_xp"]) == (W, P, 1)
                assert (a["s_bb"], a["s_bg"], a["s_bn"]) == (W, N, 1) == (a["s_cb"], a["s_cg"], a["s_cn"])
                assert a["DT"].shape == (Bt, Hh) and (a["s_tb"], a["s_th"]) == (W, 1)
                assert a["A"].shape == (Hh,) and a["Dp"].shape == (Hh,) and a["DTB"].shape == (Hh,)
                assert a["Z"] is None
            else:                               # in_proj's row x | z; dt_proj's output; x_proj's dt | B | C
                assert (a["s_xb"], a["s_xp"]) == (2 * HP, 1) and (a["s_zb"], a["s_zp"]) == (2 * HP, 1)
                assert (a["s_tb"], a["s_tp"]) == (HP, 1)
                assert (a["s_bb"], a["s_bn"]) == (mod.JAMBA_DT_RANK + 2 * N, 1) == (a["s_cb"], a["s_cn"])
                assert a["A"].shape == (1, P, N) and (a["s_ap"], a["s_an"]) == (N, 1)
                assert a["Dp"].shape == (1, P) and a["DTB"].shape == (1, P)
            assert all(a[k].dtype == torch.float32 for k in ("A", "Dp", "DTB"))
            bn = 1 << (-(-N // cfg["N_SPLIT"]) - 1).bit_length()
            want = {"TIE": int(m2), "HAS_SLOTS": 1, "HAS_DST": 0, "HAS_D": 1, "HAS_Z": p.get("gate", 0),
                    "HAS_DT_BIAS": 1, "SOFTPLUS": 1, "EVEN_P": int(P % cfg["BLOCK_P"] == 0),
                    "EVEN_N": int(N % bn == 0), "N_LOOP": int(bn < N)}
            assert {k: a[k] for k in FLAG_KEYS} == want, (p, cfg)
            assert (a["BLOCK_P"], a["BLOCK_N"], a["P"], a["N"]) == (cfg["BLOCK_P"], bn, P, N)
            assert (a["heads_per_group"], a["pad_slot"]) == (Hh // G, -1)
            assert mod.grid(cfg, p) == (-(-P // cfg["BLOCK_P"]), Hh, Bt)
            assert mod.loop_iterations(cfg, p) == -(-N // bn) == min(cfg["N_SPLIT"], N)
            distinct = {id(v): v for v in a.values() if hasattr(v, "element_size")}
            # the cache is a view of the page buffer: count the whole buffer
            assert H.meta_nbytes(distinct) - st.numel() * sb + S * page * sb < 2 * 2**30
        real = Bt - p.get("pad_rows", 0)
        n_par = Hh if m2 else HP
        want_bytes = (2 * real * HP * N * sb + Bt * HP * ab * (2 + p.get("gate", 0)) + Bt * 2 * G * N * ab
                      + Bt * (Hh if m2 else HP) * ab + (n_par if m2 else n_par * N) * 4 + 2 * n_par * 4 + 4 * Bt)
        assert mod.bytes_moved(p) == want_bytes
        assert mod.flops(p) == Bt * HP * (N * (5 if m2 else 7) + 3 + 4 * p.get("gate", 0))
        assert 0.25e9 <= mod.bytes_moved(p) <= 1.4e9, p
        assert mod.flops(p) / mod.bytes_moved(p) < 2           # DRAM-bound
    # the points differ: Mamba-2 groups 1 / 8 and Mamba-1; N 128 / 16; the cache and activation dtypes
    assert [p["mamba"] for p in mod.POINTS] == [2, 2, 1] and [p["dstate"] for p in mod.POINTS] == [128, 128, 16]
    assert {p["state_dtype"] for p in mod.POINTS} == {"fp32", "bf16"} and {p["dtype"] for p in mod.POINTS} == {
        "fp16", "bf16"}
    assert {p.get("groups", 1) for p in mod.POINTS} == {1, 8} and any(p.get("pad_rows") for p in mod.POINTS)


def test_hooks_on_small_points_and_inputs():
    """make_inputs: shapes, dtypes, views into the projection / page buffers, the slot indices
    (distinct, pads last, destinations disjoint), the seed, A / dt_bias at their inits, state_init a
    separate copy; reference by hand (one row, one head, N 2); reference_state; torch_baseline's
    scatter; the head form of the three call forms; grid / loop / bytes / flops by hand."""
    import torch
    import torch.nn.functional as F

    mod = load_example(KERNEL)
    p = _m2(6, 16, 4, 8, 2, 16, "bf16", "fp32", pad_rows=2, dst=1)
    inp = mod.make_inputs(p, seed=3, device="cpu")
    x, st, s0 = inp["x"], inp["state"], inp["state_init"]
    assert x.shape == (6, 4, 8) and x.dtype == torch.bfloat16 and x.stride() == (2 * 32 + 2 * 32 + 4, 8, 1)
    assert _root(x) is _root(inp["B"]) is _root(inp["C"]) is _root(inp["dt"])
    assert inp["dt"].shape == (6, 4) and inp["A"].shape == (4,) and inp["D"].shape == (4,)
    assert inp["z"] is None and inp["dt_softplus"] is True
    conv = (32 + 2 * 2 * 16) * 3 * 2 // 4
    assert st.shape == (16, 4, 8, 16) and st.dtype == torch.float32 and st.stride() == (512 + conv, 128, 16, 1)
    assert st.storage_offset() == conv and torch.equal(st, s0) and _root(st) is not _root(s0)
    src, dst = inp["state_batch_indices"], inp["dst_state_batch_indices"]
    assert src.dtype == torch.int32 and src[4:].tolist() == [-1, -1] and dst[4:].tolist() == [-1, -1]
    real = src[:4].tolist() + dst[0:4:2].tolist()
    assert len(set(real)) == 6 and all(0 <= s < 16 for s in real) and dst[1:4:2].tolist() == src[1:4:2].tolist()
    assert torch.equal(mod.make_inputs(p, seed=3, device="cpu")["x"], x)
    assert not torch.equal(mod.make_inputs(p, seed=4, device="cpu")["x"], x)
    assert (inp["A"] <= -1).all() and (inp["A"] >= -16).all()
    step = F.softplus(inp["dt_bias"])
    assert (step >= 1e-3 * 0.999).all() and (step <= 0.1 * 1.001).all()
    m1 = mod.make_inputs(_m1(3, 5, 8, 4, "fp16", "fp16", gate=1), device="cpu")
    assert m1["x"].shape == (3, 8) and m1["x"].stride() == (16, 1) and m1["z"].stride() == (16, 1)
    assert m1["state"].shape == (5, 8, 4) and m1["A"].shape == (8, 4) and m1["B"].stride() == (mod.JAMBA_DT_RANK + 8, 1)
    assert torch.equal(m1["z"], _root(m1["x"])[:, 8:]) and (m1["A"] < 0).all()
    # by hand: one row, one head of one row, N 2, no softplus, no bias: dA = exp(0.5 * -2) = e^-1
    one = {"x": torch.tensor([[[2.0]]]), "dt": torch.tensor([[0.5]]), "A": torch.tensor([-2.0]),
           "B": torch.tensor([[[1.0, 3.0]]]), "C": torch.tensor([[[1.0, -1.0]]]), "D": torch.tensor([0.25]),
           "z": None, "dt_bias": None, "dt_softplus": False, "state_init": torch.tensor([[[[4.0, 8.0]]]])}
    e = math.exp(-1.0)
    s_new = [4 * e + 1.0, 8 * e + 3.0]
    ref = mod.reference(one)
    assert ref.shape == (1, 1, 1) and abs(float(ref) - (s_new[0] - s_new[1] + 0.5)) < 1e-6
    rs = mod.reference_state(one)
    assert torch.allclose(rs, torch.tensor(s_new, dtype=torch.float64).view(1, 1, 1, 2))
    zg = dict(one, z=torch.tensor([[[1.5]]]))
    assert abs(float(mod.reference(zg)) - float(ref) * 1.5 / (1 + math.exp(-1.5))) < 1e-6
    pad = dict(one, state_batch_indices=torch.tensor([-1]))
    assert abs(float(mod.reference(pad)) - (1.0 - 3.0 + 0.5)) < 1e-6 and torch.equal(mod.reference_state(pad).float(),
                                                                                    one["state_init"])
    base_in = dict(one, state=one["state_init"].clone())
    b = mod.torch_baseline(base_in)
    assert b.dtype == torch.float32 and torch.allclose(b, ref) and torch.allclose(base_in["state"].double(), rs)
    # the head forms: Mamba-1 2-d, mamba_ssm's expanded (read as scalars), genuine per-channel
    hf = mod._head_form(m1["state"], m1["x"], m1["dt"], m1["A"], m1["B"], m1["C"], m1["D"], m1["z"],
                        m1["dt_bias"], None)
    assert hf[0].shape == (5, 1, 8, 4) and hf[3].shape == (1, 8, 4) and hf[4].shape == (3, 1, 4)
    A3 = inp["A"][:, None, None].expand(4, 8, 16)
    hf = mod._head_form(st, x, inp["dt"][:, :, None].expand(6, 4, 8), A3, inp["B"], inp["C"],
                        inp["D"][:, None].expand(4, 8), None, inp["dt_bias"][:, None].expand(4, 8), None)
    assert hf[3].shape == (4,) and hf[2].shape == (6, 4) and hf[6].shape == (4,) and hf[8].shape == (4,)
    hf = mod._head_form(st, x, inp["dt"][:, :, None].expand(6, 4, 8).contiguous(), A3, inp["B"], inp["C"],
                        None, None, None, None)
    assert hf[3].shape == (4, 8, 16)                    # dt not an expand: the per-channel form
    cfg = _cfg(16, 2, 4)
    assert mod.grid(cfg, p) == (1, 4, 6) and mod.grid(_cfg(4, 1), p) == (2, 4, 6)
    assert mod.loop_iterations(cfg, p) == 2 and mod.loop_iterations(_cfg(4, 4), _m2(1, 0, 1, 8, 1, 12, "fp32",
                                                                                     "fp32")) == 3
    # 4 real rows' state read + written, x / out, B / C, dt, A / D / dt_bias, src / dst indices
    assert mod.bytes_moved(p) == (2 * 4 * 32 * 16 * 4 + 6 * 32 * 2 * 2 + 6 * 2 * 2 * 16 * 2 + 6 * 4 * 2 + 3 * 4 * 4
                                  + 4 * 6 * 2)
    assert mod.flops(p) == 6 * 32 * (16 * 5 + 3)


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    st = torch.zeros(4, 2, 8, 16)
    x, dt, A = torch.ones(3, 2, 8, dtype=torch.float16), torch.zeros(3, 2, dtype=torch.float16), -torch.ones(2)
    Bm = torch.ones(3, 1, 16, dtype=torch.float16)
    ssu = mod.selective_state_update
    with pytest.raises(ValueError, match="BLOCK_P=12"):
        ssu(st, x, dt, A, Bm, Bm, BLOCK_P=12)
    with pytest.raises(ValueError, match="N_SPLIT=3"):
        ssu(st, x, dt, A, Bm, Bm, N_SPLIT=3)
    with pytest.raises(ValueError, match="num_warps=3"):
        ssu(st, x, dt, A, Bm, Bm, num_warps=3)
    with pytest.raises(ValueError, match="num_stages=0"):
        ssu(st, x, dt, A, Bm, Bm, num_stages=0)
    with pytest.raises(ValueError, match="x and state must be fp32 / bf16 / fp16"):
        ssu(st, x.double(), dt, A, Bm, Bm)
    with pytest.raises(ValueError, match=r"x must be \[B, H=2, P=8\]"):
        ssu(st, x[:, :, :4], dt, A, Bm, Bm)
    with pytest.raises(ValueError, match="dstate N=300"):
        ssu(torch.zeros(4, 2, 8, 300), x, dt, A, torch.ones(3, 1, 300), torch.ones(3, 1, 300))
    with pytest.raises(ValueError, match=r"B and C must both be \[B=3, G, N=16\]"):
        ssu(st, x, dt, A, Bm, Bm[:, :, :8])
    with pytest.raises(ValueError, match="groups G=3 must divide heads H=2"):
        ssu(st, x, dt, A, torch.ones(3, 3, 16), torch.ones(3, 3, 16))
    with pytest.raises(ValueError, match=r"dt must be \[3, 2\] in the Mamba-2"):
        ssu(st, x, dt[:2], A, Bm, Bm)
    with pytest.raises(ValueError, match=r"D must be \[2, 8\] in the per-channel form"):
        ssu(st, x, torch.zeros(3, 2, 8), -torch.ones(2, 8, 16), Bm, Bm, D=torch.ones(2))
    with pytest.raises(ValueError, match=r"z must be \[3, 2, 8\]"):
        ssu(st, x, dt, A, Bm, Bm, z=x[:2])
    with pytest.raises(ValueError, match="A must be a float tensor"):
        ssu(st, x, dt, -torch.ones(2, dtype=torch.int32), Bm, Bm)
    with pytest.raises(ValueError, match="state_batch_indices must be int32 / int64"):
        ssu(st, x, dt, A, Bm, Bm, state_batch_indices=torch.zeros(3))
    with pytest.raises(ValueError, match="dst_state_batch_indices needs state_batch_indices"):
        ssu(st, x, dt, A, Bm, Bm, dst_state_batch_indices=torch.zeros(3, dtype=torch.int32))
    with pytest.raises(ValueError, match="S=2 < B=3"):
        ssu(st[:2], x, dt, A, Bm, Bm)
    with pytest.raises(ValueError, match="pad_slot_id=2.5"):
        ssu(st, x, dt, A, Bm, Bm, state_batch_indices=torch.zeros(3, dtype=torch.int32), pad_slot_id=2.5)
    with pytest.raises(ValueError, match="out must be"):
        ssu(st, x, dt, A, Bm, Bm, out=torch.empty(3, 2, 8))
    with pytest.raises(ValueError, match="Mamba-1 form"):
        ssu(st, x[:, 0], dt, A, Bm, Bm)
    with pytest.raises(ValueError, match="B must be on"):
        ssu(st, x, dt, A, Bm.to("meta"), Bm)
    big = torch.empty_strided((4, 2, 8, 16), (2**33, 2**31, 16, 1), device="meta")
    with pytest.raises(ValueError, match="exceed the kernel's int32"):
        ssu(big, x.to("meta"), dt.to("meta"), A.to("meta"), Bm.to("meta"), Bm.to("meta"))
    many = torch.empty((70000, 2, 8), dtype=torch.float16, device="meta")
    with pytest.raises(ValueError, match="65535"):                                 # meta: never launched
        ssu(torch.empty(70000, 2, 8, 16, device="meta"), many, torch.empty(70000, 2, device="meta"),
            A.to("meta"), torch.empty(70000, 1, 16, device="meta"), torch.empty(70000, 1, 16, device="meta"))
    p = CASES[KERNEL]["m2_pad_ragged_p_fp16"][0]
    with pytest.raises(ValueError, match="mamba=3"):
        mod.grid(mod.BASELINE, dict(p, mamba=3))
    with pytest.raises(ValueError, match="dtype 'fp64'"):
        mod.make_inputs(dict(p, dtype="fp64"), device="cpu")
    with pytest.raises(ValueError, match="state_dtype 'int8'"):
        mod.bytes_moved(dict(p, state_dtype="int8"))
    with pytest.raises(ValueError, match="heads=5 must be a multiple of groups=2"):
        mod.flops(dict(p, heads=5))
    with pytest.raises(ValueError, match="dstate=512"):
        mod.grid(mod.BASELINE, dict(p, dstate=512))
    with pytest.raises(ValueError, match="pad_rows / dst need slot indices"):
        mod.grid(mod.BASELINE, dict(p, slots=0))
    with pytest.raises(ValueError, match="slots=5 must hold"):
        mod.grid(mod.BASELINE, dict(p, slots=5, dst=1))
    with pytest.raises(ValueError, match="batch=0"):
        mod.grid(mod.BASELINE, dict(p, batch=0))
    with pytest.raises(ValueError, match="gate=2"):
        mod.grid(mod.BASELINE, dict(p, gate=2))
    with pytest.raises(ValueError, match="layout='nhwc'"):
        mod.grid(mod.BASELINE, dict(p, layout="nhwc"))
    with pytest.raises(ValueError, match="BLOCK_P=0"):
        mod.grid(dict(mod.BASELINE, BLOCK_P=0), p)
    # an empty batch: nothing launched, an empty out
    e = ssu(st, x[:0], dt[:0], A, Bm[:0], Bm[:0])
    assert e.shape == (0, 2, 8) and e.dtype == torch.float16


def test_sweep_fits_the_points():
    """The study sweep: 48 configs (BLOCK_P 4 / 8 / 16 / 32, N_SPLIT 1 / 2 / 4, 1 / 2 / 4 / 8 warps,
    num_stages 1) with BASELINE among them; at every point each config is valid and launches >= 4 waves
    of programs on an H200 (40960 at the fewest: Mamba-2 2.7B, BLOCK_P 32 over P 64, 80 heads, 256
    rows). (Every config was compiled for sm_90 at every point with triton 3.6.0 and 3.9.0: all compile,
    none spills; registers 28-255 under 3.6 and 28-254 under 3.9 -- the most for BLOCK_P 32 holding N 128
    of the fp32 cache on one warp, 128 state values a thread (254-255), 22-64 at Jamba's N 16; shared
    memory 0-256 bytes under 3.6 and 0-512 under 3.9, the cross-warp reductions and the B / C vectors'
    layout conversion. An earlier form of the kernel that stored the state before forming y's products
    spilled 2 registers under 3.9 at the bf16-cache point for BLOCK_P 32 on 2 warps (ptxas settling on
    96 registers); the products are now taken first.)"""
    mod = load_example(KERNEL)
    axes = SWEEP_AXES
    assert set(axes) == set(mod.TUNABLES) and mod.SWEEP_AXES == axes
    assert all(len(v) >= 2 for k, v in axes.items() if k != "num_stages") and axes["num_stages"] == [1]
    cfgs = [dict(zip(axes, v)) for v in itertools.product(*axes.values())]
    assert 48 <= len(cfgs) <= 72 and mod.BASELINE in cfgs
    fewest = min(math.prod(mod.grid(c, p)) for p in mod.POINTS for c in cfgs)
    assert fewest == 40960
    for p in mod.POINTS:
        for c in cfgs:
            mod._check_cfg(c)
            gx, gy, gz = mod.grid(c, p)
            assert gx * gy * gz >= 4 * H200_SMS and gy <= 65535 and gz <= 65535, (p, c)
            # the fp32 state values a thread: at most 128 (BLOCK_P 32, N 128 whole, one warp)
            a = mod.example_args(c, p)
            assert c["BLOCK_P"] * a["BLOCK_N"] <= 128 * 32 * c["num_warps"], (p, c)


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
    """On sm_90: BASELINE, BLOCK_P 32 holding N 128 on one warp (the most registers) and BLOCK_P 16 in 4
    N chunks on 8 warps at the first point (Mamba-2 2.7B, fp32 cache), and BASELINE and BLOCK_P 32 on
    2 warps / in 2 chunks on one warp at the bf16-cache and Mamba-1 points compile without spills, their
    shared memory within the bound."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    assert COMPILE_CFGS[0] == mod.BASELINE
    for cfg, res in H.compile_results(KERNEL, COMPILE_CFGS, "sm_90"):
        assert res.status == "ok", f"{cfg} on sm_90: {res.status}: {res.message}"
        assert 0 < res.n_regs <= 255 and res.n_spills == 0, (cfg, res.n_regs, res.n_spills)
        assert 0 <= res.shared <= SMEM_BOUND <= SM90_SMEM_PER_BLOCK, (cfg, res.shared)
    for p in mod.POINTS[1:]:
        for cfg in OTHER_CFGS:
            res = compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch="sm_90",
                                 num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
            assert res.status == "ok" and res.n_spills == 0, (cfg, p, res.n_regs, res.n_spills, res.message)
            assert 0 <= res.shared <= SMEM_BOUND, (cfg, res.shared)


@pytest.mark.slow
def test_example_compiles_sm120(shared_cache):
    """On sm_120 (99 KiB a block): BASELINE, BLOCK_P 32 in 2 chunks on 2 warps and BLOCK_P 8 in 4 chunks
    on one warp compile at the first point without spills within the bound."""
    for cfg, res in H.compile_results(KERNEL, SM120_CFGS, "sm_120"):
        assert res.status == "ok", f"{cfg} on sm_120: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.n_spills == 0, (cfg, res.n_regs, res.n_spills)
        assert 0 <= res.shared <= min(SMEM_BOUND, SM120_SMEM_PER_BLOCK), (cfg, res.shared)


# ----------------------------------------------------------------- the subprocess side
def _independent(mod, inputs):
    """The step row by row in fp64, from the head form: (y [B, H, P], new rows [B, H, P, N] or None for
    a pad source, |s dA| + |dt x B| [B, H, P, N], the y magnitude [B, H, P])."""
    import torch

    st, x, dt, A, Bm, Cm, D, z, db, _ = mod._head_form(inputs["state_init"], inputs["x"], inputs["dt"], inputs["A"],
                                                       inputs["B"], inputs["C"], inputs.get("D"), inputs.get("z"),
                                                       inputs.get("dt_bias"), None)
    Bt, Hh, P = x.shape
    N = st.shape[-1]
    G = Bm.shape[1]
    src = inputs.get("state_batch_indices")
    pad = inputs.get("pad_slot_id", -1)
    y = torch.zeros(Bt, Hh, P, dtype=torch.float64)
    new = torch.zeros(Bt, Hh, P, N, dtype=torch.float64)
    mag_s = torch.zeros_like(new)
    mag_y = torch.zeros_like(y)
    for b in range(Bt):
        slot = b if src is None else int(src[b])
        for h in range(Hh):
            g = h // (Hh // G)
            s0 = torch.zeros(P, N, dtype=torch.float64) if slot == pad else st[slot, h].double()
            d = dt[b, h].double()
            if db is not None:
                d = d + db[h].double()
            if inputs.get("dt_softplus", False):
                d = torch.where(d > 20, d, torch.log1p(torch.exp(d)))
            xr = x[b, h].double()
            a = A[h].double()
            dA = torch.exp(d * a) if A.dim() == 1 else torch.exp(d[:, None] * a)
            dtx = (d * xr)[:, None] * Bm[b, g].double()[None, :]
            decayed = s0 * dA
            sn = decayed + dtx
            new[b, h], mag_s[b, h] = sn, decayed.abs() + dtx.abs()
            c = Cm[b, g].double()
            yr = sn @ c
            my = (sn.abs() + mag_s[b, h]) @ c.abs()
            if D is not None:
                dd = D[h].double()
                yr = yr + dd * xr
                my = my + (dd * xr).abs()
            if z is not None:
                zz = z[b, h].double()
                gate = zz * torch.sigmoid(zz)
                yr, my = yr * gate, my * gate.abs()
            y[b, h], mag_y[b, h] = yr, my
    return y, new, mag_s, mag_y


def _run() -> None:
    """Every case through launch against reference (the harness's tolerance) and the per-element
    bounds; the cache after the step against reference_state and the cache before; the inputs
    unchanged; torch_baseline against reference; one JSON line."""
    import torch

    H.patch_interpreter_bf16_rounding()
    H.patch_interpreter_index()
    mod = load_example(KERNEL)
    names = {torch.float16: "fp16", torch.bfloat16: "bf16", torch.float32: "fp32"}
    U = {torch.float32: 2.0 ** -24, torch.bfloat16: 2.0 ** -8, torch.float16: 2.0 ** -11}
    TINY = {torch.float32: 2.0 ** -150, torch.bfloat16: 2.0 ** -134, torch.float16: 2.0 ** -25}  # half a subnormal
    u32 = 2.0 ** -24

    def same(a, b):
        if a is None:
            return b is None
        if not a.is_floating_point():
            return torch.equal(a, b)
        return torch.equal(a.isnan(), b.isnan()) and torch.equal(a.nan_to_num(7.0), b.nan_to_num(7.0))

    def extra(name, point, inputs, out, ref):
        x = inputs["x"]
        st = inputs["state"]
        y64, new64, mag_s, mag_y = _independent(mod, inputs)
        N = new64.shape[-1]
        ua = U[out.dtype]
        o = out.double().reshape(y64.shape)
        loose = (o - y64).abs() > ua * y64.abs() + (1 + ua) * (N + 16) * u32 * mag_y + TINY[out.dtype]
        ref_agrees = bool(torch.allclose(ref.double().reshape(y64.shape), y64, rtol=1e-6, atol=1e-6))
        # the cache: the written rows against the fp64 new state, the rest the same bits as before
        src = inputs.get("state_batch_indices")
        dst = inputs.get("dst_state_batch_indices")
        Bt = y64.shape[0]
        src_l = torch.arange(Bt) if src is None else src.long()
        dst_l = src_l if dst is None else dst.long()
        wr = dst_l != inputs["pad_slot_id"]
        root = _root(st)
        marker = torch.zeros(root.numel(), dtype=torch.int8)
        mview = marker.as_strided(st.shape, st.stride(), st.storage_offset())
        m4 = mview.unsqueeze(1) if mview.dim() == 3 else mview
        s4 = st.unsqueeze(1) if st.dim() == 3 else st
        m4[dst_l[wr]] = 1
        written = marker.bool()
        us = U[st.dtype]
        got = s4[dst_l[wr]].double()
        want = new64[wr]
        st_loose = (got - want).abs() > us * want.abs() + (1 + us) * 16 * u32 * mag_s[wr] + TINY[st.dtype]
        rest_same = same(root[~written], inputs["state0"][~written])
        unchanged = all(same(inputs[k], inputs[k + "0"]) for k in ("x", "dt", "A", "B", "C", "D", "z", "dt_bias",
                                                                   "state_batch_indices", "dst_state_batch_indices"))
        unchanged = unchanged and same(_root(inputs["state_init"]), inputs["state_init0"])
        given = inputs.get("out")
        res = {"dtype": names.get(out.dtype), "n_loose": int(loose.sum()), "ref_agrees": ref_agrees,
               "n_state_written": int(written.sum()), "expect_written": int(wr.sum()) * y64.shape[1] * y64.shape[2] * N,
               "n_state_loose": int(st_loose.sum()), "state_rest_unchanged": bool(rest_same),
               "inputs_unchanged": bool(unchanged), "nonzero": bool((ref != 0).any()),
               "tie": int(mod._head_form(inputs["state_init"], x, inputs["dt"], inputs["A"], inputs["B"], inputs["C"],
                                         inputs.get("D"), inputs.get("z"), inputs.get("dt_bias"), None)[3].dim() == 1),
               "out_ok": bool(out.shape == x.shape and out.dtype == x.dtype
                              and (given is not None or out.is_contiguous())),
               "index_dtype": None if src is None else str(src.dtype)}
        if given is not None:
            res["out_is_given"] = out is given
            res["out_pad_nan"] = bool(_root(given)[..., x.shape[-1]:].isnan().all())
        if src is not None and int(wr.sum()):
            ident = dict(inputs, state_batch_indices=None, dst_state_batch_indices=None)
            diff = (mod.reference(ident) - ref).abs()
            res["slots_matter"] = bool((diff > 1e-3).any() or diff.isnan().any())
        res["baseline"] = H.compare(mod.torch_baseline(inputs), ref, point["dtype"])
        return res

    H.run_cases(KERNEL, CASES[KERNEL], prepare=_prepare, extra=extra)


if __name__ == "__main__":
    _run()
