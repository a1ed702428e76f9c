"""examples/paged_prefill_attn.py (chunked-prefill attention over a paged KV cache: ragged chunks
of new query tokens over ragged cached prefixes, causal within the chunk, K / V gathered through a
block table, GQA, optionally the G heads of a K/V head packed into one CTA's rows) against its
fp64 torch reference on the CPU through Triton's interpreter, its program -> (sequence, block)
map and per-CTA tile counts mirrored in Python, its launcher hooks against the shapes, its study
sweep against the points, and a compile for sm_90 and sm_120 from its own ``example_args``.

As in test_examples_round15_a.py, the interpreter must be chosen before triton is imported, so
the cases run in a subprocess (this file run as a script: ``python
tests/test_examples_round16_a.py paged_prefill_attn``) that prints one JSON line; the tests
assert per case. A second subprocess (``... prefilled``) runs some cases into an ``out=`` buffer
filled with NaN (a strided view of a wider one for one case): an output row no CTA writes is a
NaN mismatch rather than whatever memory held. In every case the block table's unused entries
(past a sequence's last page) hold 2^30, a page far outside the pool: a lookup past the context
would read out of bounds rather than page 0's valid data.

Shapes are small, odd and ragged: chunks of 1-140 tokens over prefixes of 0-150, so there are
CTAs with unmasked tiles before the diagonal and CTAs whose every tile is masked (prefix 0, or
a prefix shorter than BLOCK_N), slots past a chunk's end (idle CTAs), decode rows (q_len 1,
context 1 included), tiles spanning several pages (BLOCK_N > PAGE) and part of one (BLOCK_N <
PAGE), GQA with G = 1, 2, 3, 4 (G = 3 packed: BLOCK_M not a multiple of G, padding rows), q as
a strided view of a fused QKV buffer, both dtypes, BLOCK_M 16-128 and BLOCK_N 16-64.

Tolerance (x max|ref|, absolute, per element): the reference is fp64 on the same bf16 / fp16
inputs. The kernel's scores, softmax sums and P @ V accumulate in fp32 (errors ~2^-24 sqrt(n),
negligible); P is rounded to the input dtype for the second dot (relative 2^-9 bf16 / 2^-12
fp16 per weight, so the output, a convex combination of V rows, moves by at most that times
max|v| and typically far less, the roundings being independent), and the output is rounded once
(half an ulp on the GPU, up to one with the interpreter's truncating cast: 2^-7 = 7.8e-3 bf16,
2^-10 = 9.8e-4 fp16 of an element <= max|ref|). bf16 1e-2 and fp16 2e-3 (the harness's
defaults) bound the sum; torch_baseline (SDPA in the input dtype) stays inside them too.
Measured: kernel max error <= 0.71 % (bf16) and 0.05 % (fp16) of max|ref|, the baseline
<= 0.26 % / 0.04 %.
"""

from __future__ import annotations

import itertools
import json
import os
import sys
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
KERNEL = "paged_prefill_attn"
TOL = {"bf16": 1e-2, "fp16": 2e-3}
H200_SMS = 132
H200_SMEM_PER_BLOCK = 227 * 1024
SM120_SMEM_PER_BLOCK = 99 * 1024
TABLE_PAD = 2 ** 30


def _cfg(bm, bn, pack, w, st):
    return {"BLOCK_M": bm, "BLOCK_N": bn, "PACK_GQA": pack, "num_warps": w, "num_stages": st}


def _pt(B, q, prefix, h_q, h_kv, d, page, dtype, long=None, seed=0):
    p = {"B": B, "q_min": q[0], "q_max": q[1], "prefix_min": prefix[0], "prefix_max": prefix[1],
         "len_seed": seed, "H_q": h_q, "H_kv": h_kv, "D": d, "PAGE": page, "dtype": dtype}
    if long is not None:
        p.update(B_long=long[0], long_q=long[1], long_prefix_min=long[2], long_prefix_max=long[3])
    return p


# kernel module -> case name -> (point, cfg)
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        # 3 chunks of 20-40 over 0-60 cached tokens, G = 2, 16-key tiles over 8-token pages
        "prefill_chunks_bf16": (_pt(3, (20, 40), (0, 60), 4, 2, 32, 8, "bf16", seed=1), _cfg(16, 16, 0, 4, 2)),
        # 6 decode / verify rows (1-5 tokens) + one 30-token chunk, G = 4 packed: 4 tokens a CTA
        "decode_mixed_packed_fp16": (_pt(6, (1, 5), (10, 70), 8, 2, 16, 16, "fp16", long=(1, 30, 5, 20), seed=2),
                                     _cfg(16, 32, 1, 8, 3)),
        # G = 3 packed into 16 rows: 5 tokens, row 15 padding; 16-key tiles inside 32-token pages
        "packed_g3_bf16": (_pt(4, (3, 17), (0, 90), 6, 2, 16, 32, "bf16", seed=3), _cfg(16, 16, 1, 4, 3)),
        # MHA (G = 1) with PACK_GQA: the same as unpacked; 4-token pages, 32-key tiles over 8 pages
        "mha_packed_fp16": (_pt(3, (5, 40), (3, 50), 3, 3, 16, 4, "fp16", seed=4), _cfg(32, 32, 1, 4, 2)),
        # no cached prefix: plain causal prefill over the chunk, every early tile masked
        "pure_prefill_bf16": (_pt(3, (33, 70), (0, 0), 4, 1, 16, 16, "bf16", seed=5), _cfg(32, 16, 0, 8, 2)),
        # 64 x 64 tiles packed (G = 2: 32 tokens), longer prefixes: unmasked tiles, idle slots
        "big_tiles_fp16": (_pt(3, (10, 100), (50, 150), 4, 2, 32, 16, "fp16", seed=6), _cfg(64, 64, 1, 8, 3)),
        # 128-row tiles, 2 chunks of 100-140 over 0-40 tokens
        "block128_bf16": (_pt(2, (100, 140), (0, 40), 2, 1, 16, 16, "bf16", seed=7), _cfg(128, 32, 0, 4, 3)),
        # q a view of a fused [T, H_q + 2 H_kv, D] QKV buffer; 64-key tiles over 8-token pages
        "strided_q_fp16": (_pt(3, (9, 30), (20, 80), 4, 2, 16, 8, "fp16", seed=8), _cfg(16, 64, 0, 8, 2)),
        # decode only: q_len 1 over contexts of 1-40 (a context of one token included)
        "decode_only_bf16": (_pt(7, (1, 1), (0, 39), 4, 2, 16, 8, "bf16", seed=2), _cfg(16, 32, 0, 4, 2)),
    },
}
STRIDED_Q = "strided_q_fp16"
# prefilled: cases run into a NaN-filled out= buffer
PREFILLED = ("prefill_chunks_bf16", "decode_mixed_packed_fp16", "packed_g3_bf16", "big_tiles_fp16")
STRIDED_OUT = "packed_g3_bf16"       # its out= is a view of a [T, H_q + 3, D] buffer

# configs compiled for each arch at the module's first POINT (sm_90: BASELINE first)
COMPILE_CFGS: dict[str, list[dict]] = {
    KERNEL: [_cfg(64, 64, 0, 4, 2), _cfg(128, 64, 0, 8, 3), _cfg(16, 32, 1, 4, 2), _cfg(64, 32, 1, 8, 3)],
}
SM120_CFGS = [_cfg(64, 64, 0, 8, 2), _cfg(128, 32, 1, 8, 2), _cfg(16, 64, 1, 4, 3)]


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """Fill the block table's unused entries with a page far outside the pool; for STRIDED_Q, q as a
    view of a fused QKV buffer."""
    import torch

    table, ctx = inputs["block_table"], inputs["ctx_lens"]
    page = inputs["k_cache"].shape[1]
    for s in range(table.shape[0]):
        table[s, (int(ctx[s]) + page - 1) // page:] = TABLE_PAD
    if name == STRIDED_Q:
        q = inputs["q"]
        T, h_q, d = q.shape
        h_kv = inputs["k_cache"].shape[2]
        fused = torch.randn((T, h_q + 2 * h_kv, d)).to(q.dtype)
        fused[:, :h_q] = q
        inputs["q"] = fused[:, :h_q]
        assert inputs["q"].stride() == ((h_q + 2 * h_kv) * d, d, 1)


# ----------------------------------------------------------------- Python mirrors of the kernel
def _toks(cfg, G):
    return cfg["BLOCK_M"] // (G if cfg["PACK_GQA"] else 1)


def _cta_blocks(q_lens, toks):
    """Per program_id(0): (seq, m0) by the kernel's binary search (the last s with cu[s] // toks + s
    <= pid), or None for a slot past its chunk."""
    cu = [0]
    for n in q_lens:
        cu.append(cu[-1] + n)
    B = len(q_lens)
    out = []
    for pid in range(cu[-1] // toks + B):
        lo, hi = 0, B
        while lo < hi:
            mid = (lo + hi) // 2
            if cu[mid] // toks + mid <= pid:
                lo = mid + 1
            else:
                hi = mid
        s = lo - 1
        m0 = (pid - (cu[s] // toks + s)) * toks
        out.append((s, m0) if m0 < q_lens[s] else None)
    return out


def _tiles(q_len, ctx, m0, toks, bn):
    """(unmasked tiles, masked tiles) of a CTA at chunk token m0."""
    prefix = ctx - q_len
    full = (prefix + m0) // bn
    end = min(ctx, prefix + m0 + toks)
    return full, -(-end // bn) - full


# ----------------------------------------------------------------- the pytest side
def _results(kernel: str) -> dict:
    return H.interpreter_results(HERE, kernel)


@pytest.mark.parametrize("kernel,name", [(k, n) for k, cases in CASES.items() for n in cases])
def test_example_matches_reference(kernel, name):
    res = _results(kernel)[name]
    assert "error" not in res, f"{kernel}/{name}: {res.get('error')}"
    mod = load_example(kernel)
    point = CASES[kernel][name][0]
    q_lens, _ = mod.seq_lengths(point)
    assert res["shape"] == [int(q_lens.sum()), point["H_q"], point["D"]]
    for what, r in (("kernel", res), ("torch_baseline", res["baseline"])):
        assert r["n_bad"] == 0, H.mismatch(r, f"{kernel}/{name} {what}")


@pytest.mark.parametrize("name", PREFILLED)
def test_every_row_written(name):
    """Into a NaN-filled out= buffer: every element written (no NaN left), right, into the caller's
    buffer (a strided view for STRIDED_OUT)."""
    res = _results("prefilled")[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    assert res["same_buffer"] and res["n_bad"] == 0, H.mismatch(res, f"{name} prefilled")


def test_cases_cover_every_code_path():
    """Each tunable takes at least two values; both dtypes; G = 1..4 and a packed G that does not
    divide BLOCK_M; CTAs with unmasked tiles and CTAs with only masked ones, idle slots, decode
    rows with a context of one token, tiles spanning several pages and part of one, a strided q."""
    H.assert_tunables_covered(CASES)
    mod = load_example(KERNEL)
    seen = set()
    for p, c in CASES[KERNEL].values():
        G = p["H_q"] // p["H_kv"]
        seen.add(("G", G))
        seen.add(("dtype", p["dtype"]))
        if c["PACK_GQA"] and c["BLOCK_M"] % G:
            seen.add("pack_padding_rows")
        seen.add("multi_page_tile" if c["BLOCK_N"] > p["PAGE"] else "part_page_tile"
                 if c["BLOCK_N"] < p["PAGE"] else "one_page_tile")
        q_lens, ctx_lens = (t.tolist() for t in mod.seq_lengths(p))
        toks = _toks(c, G)
        for blk in _cta_blocks(q_lens, toks):
            if blk is None:
                seen.add("idle")
                continue
            s, m0 = blk
            full, masked = _tiles(q_lens[s], ctx_lens[s], m0, toks, c["BLOCK_N"])
            seen.add("unmasked" if full else "masked_only")
            assert masked >= 1
            if q_lens[s] == 1:
                seen.add("decode_ctx1" if ctx_lens[s] == 1 else "decode")
    assert seen >= {("G", 1), ("G", 2), ("G", 3), ("G", 4), ("dtype", "bf16"), ("dtype", "fp16"),
                    "pack_padding_rows", "multi_page_tile", "part_page_tile", "one_page_tile", "idle",
                    "unmasked", "masked_only", "decode", "decode_ctx1"}, seen


def test_program_map_and_iterations():
    """The kernel's program -> (sequence, block) map (mirrored) covers every chunk token of every
    sequence exactly once, with at most one idle slot per sequence, in a grid of total_q // TOKS + B;
    cta_iterations is that map's tile count per CTA, repeated over the head planes;
    loop_iterations the mean over working CTAs, rounded up."""
    mod = load_example(KERNEL)
    points = [p for p, _ in CASES[KERNEL].values()] + list(mod.POINTS)
    for p in points:
        q_lens, ctx_lens = (t.tolist() for t in mod.seq_lengths(p))
        G = p["H_q"] // p["H_kv"]
        for bm, bn, pack in itertools.product((16, 64, 128), (32, 64), (0, 1)):
            c = _cfg(bm, bn, pack, 4, 2)
            toks = _toks(c, G)
            blocks = _cta_blocks(q_lens, toks)
            gx, gy = mod.grid(c, p)
            assert gx == len(blocks) == sum(q_lens) // toks + len(q_lens)
            assert gy == (p["H_kv"] if pack else p["H_q"])
            covered = {}
            for blk in blocks:
                if blk is not None:
                    s, m0 = blk
                    for t in range(m0, min(m0 + toks, q_lens[s])):
                        assert (s, t) not in covered
                        covered[(s, t)] = 1
            assert len(covered) == sum(q_lens)
            assert sum(b is None for b in blocks) <= len(q_lens)
            its = [sum(_tiles(q_lens[b[0]], ctx_lens[b[0]], b[1], toks, bn)) if b else 0 for b in blocks]
            assert mod.cta_iterations(c, p) == its * gy
            work = [i for i in its if i]
            assert mod.loop_iterations(c, p) == -(-sum(work) // len(work))


def test_flops_and_bytes():
    """flops counts the visible (query, key) pairs one by one on small points; bytes_moved is q,
    out, each context's K and V once per K/V head, the used table entries and the lengths."""
    mod = load_example(KERNEL)
    for p, _ in CASES[KERNEL].values():
        q_lens, ctx_lens = (t.tolist() for t in mod.seq_lengths(p))
        pairs = sum(sum(c - n + i + 1 for i in range(n)) for n, c in zip(q_lens, ctx_lens))
        assert mod.flops(p) == 4 * pairs * p["H_q"] * p["D"]
        T, C = sum(q_lens), sum(ctx_lens)
        pages = sum(-(-c // p["PAGE"]) for c in ctx_lens)
        assert mod.bytes_moved(p) == 4 * T * p["H_q"] * p["D"] + 4 * C * p["H_kv"] * p["D"] + 4 * pages \
            + 4 * (2 * len(q_lens) + 1)


def _smem_bound(cfg, d=128) -> int:
    """Shared memory of a config, an upper bound of every sm_90 compile of the sweep: the Q tile
    and four [BLOCK_N, D] K / V tiles, 2 bytes an element, plus 1 KiB (what the compiles showed:
    21-38 KiB at BLOCK_M 16, 48-81 at 64, 64-96.25 at 128; num_stages moves it by <= 256 B, the
    K / V addresses hang off the page lookup)."""
    return 2 * d * (cfg["BLOCK_M"] + 4 * cfg["BLOCK_N"]) + 1024


def test_sweep_fits_the_points():
    """The study sweep: 48 configs over the TUNABLES with BASELINE among them; at every POINT each
    config is valid and launches >= 132 working CTAs (the fewest: 924 a launch at the third point,
    128 packed rows = 18 tokens of G = 7 over 4 K/V heads), whose buffers fit an H200's 227 KiB.
    (Every config was compiled for sm_90 with triton 3.6.0 at every point: all 144 compile, in
    ~0.5-8 s each (~3.5 min in all); 21-96.25 KiB of shared memory; registers 79-255: BLOCK_M 16
    79-164, 64 on 8 warps 98-149, on 4 warps 154-242, 128 on 8 warps 142-202, on 4 warps 255.
    Spills: BLOCK_M 128 on 4 warps spills at every point, 4-18 words with BLOCK_N 32 and 74-114
    with BLOCK_N 64 (the fp32 128 x 128 accumulator alone is 128 registers a thread there); 16 x 64
    on 8 warps with 2 stages 2 words at the first two points; the other 38 configs none.)"""
    SWEEP_AXES = H.study_sweeps([KERNEL], "held-out-16")[KERNEL][2]     # scripts/rank_study.py SWEEPS
    mod = load_example(KERNEL)
    assert set(SWEEP_AXES) == set(mod.TUNABLES)
    assert sum(len(v) >= 2 for v in SWEEP_AXES.values()) == len(SWEEP_AXES)
    cfgs = [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]
    assert 40 <= len(cfgs) <= 72 and mod.BASELINE in cfgs
    for p in mod.POINTS:
        G = p["H_q"] // p["H_kv"]
        for c in cfgs:
            mod._check_cfg(c, G)
            assert sum(1 for it in mod.cta_iterations(c, p) if it) >= H200_SMS, (p, c)
            assert _smem_bound(c, p["D"]) <= H200_SMEM_PER_BLOCK, (p, c)
    # the points differ in character: a prefill point, a decode-heavy one, a long-context one
    q = [mod.seq_lengths(p)[0] for p in mod.POINTS]
    assert float(q[1].float().median()) <= 8 and int(q[1].max()) >= 1024
    assert int(mod.seq_lengths(mod.POINTS[2])[1].max()) > 4 * int(mod.seq_lengths(mod.POINTS[0])[0].max())


def test_launcher_hooks_agree_with_shapes():
    """At every default point: example_args has the shapes and types of a launch (q / caches / out
    meta tensors; the block table and the lengths CPU int32 tensors with data, the table a
    scatter of distinct pages inside the pool), the constexprs of the cfg and the point; inputs
    < 4 GB; make_inputs' table at seed 0 is example_args'."""
    import torch

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "cta_iterations", "example_args", "torch_baseline", "paged_prefill_attn"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert not hasattr(mod, "secondary_kernels")                 # one kernel a launch
    assert len(mod.POINTS) == 3 and {p["dtype"] for p in mod.POINTS} == {"bf16", "fp16"}
    assert {p["PAGE"] for p in mod.POINTS} == {16, 32}
    for cfg in [mod.BASELINE] + COMPILE_CFGS[KERNEL]:
        for p in mod.POINTS:
            args = mod.example_args(cfg, p)
            q_lens, ctx_lens = mod.seq_lengths(p)
            T, B = int(q_lens.sum()), len(q_lens)
            dt = {"bf16": torch.bfloat16, "fp16": torch.float16}[p["dtype"]]
            for name in ("Q", "O", "K_cache", "V_cache"):
                assert args[name].device.type == "meta" and args[name].dtype == dt
            for name in ("block_table", "cu_q_lens", "ctx_lens"):
                assert args[name].device.type == "cpu" and args[name].dtype == torch.int32
            assert args["Q"].shape == args["O"].shape == (T, p["H_q"], p["D"])
            nb = args["K_cache"].shape[0]
            assert args["K_cache"].shape == args["V_cache"].shape == (nb, p["PAGE"], p["H_kv"], p["D"])
            assert args["cu_q_lens"].tolist() == [0] + torch.cumsum(q_lens, 0).tolist()
            assert args["ctx_lens"].tolist() == ctx_lens.tolist() and bool((ctx_lens > q_lens).all())
            table = args["block_table"]
            used = torch.cat([table[s, :-(-int(c) // p["PAGE"])] for s, c in enumerate(ctx_lens)])
            assert len(set(used.tolist())) == used.numel() and int(used.max()) < nb and int(used.min()) >= 0
            assert args["num_seqs"] == B and args["stride_bt"] == table.shape[1]
            assert (args["stride_kp"], args["stride_ks"], args["stride_kh"]) == \
                (p["PAGE"] * p["H_kv"] * p["D"], p["H_kv"] * p["D"], p["D"])
            assert (args["G"], args["HEAD_DIM"], args["PAGE"]) == (p["H_q"] // p["H_kv"], p["D"], p["PAGE"])
            assert {k: args[k] for k in ("BLOCK_M", "BLOCK_N", "PACK_GQA")} == \
                {k: cfg[k] for k in ("BLOCK_M", "BLOCK_N", "PACK_GQA")}
            assert H.meta_nbytes(args) < 4 * 2**30
            assert len(mod.cta_iterations(cfg, p)) == mod.grid(cfg, p)[0] * mod.grid(cfg, p)[1]
    p = CASES[KERNEL]["decode_mixed_packed_fp16"][0]
    inputs = mod.make_inputs(p, seed=0, device="cpu")
    assert torch.equal(inputs["block_table"], mod.example_args(mod.BASELINE, p)["block_table"])


def test_hooks_on_small_inputs():
    """make_inputs' tensors (shapes, O(1), the seed's page scatter, the point's lengths whatever the
    seed), the reference's and the baseline's shapes and dtypes."""
    import torch

    mod = load_example(KERNEL)
    p = CASES[KERNEL]["decode_mixed_packed_fp16"][0]
    a, b = mod.make_inputs(p, seed=1, device="cpu"), mod.make_inputs(p, seed=2, device="cpu")
    q_lens, ctx_lens = mod.seq_lengths(p)
    assert a["q"].shape == (int(q_lens.sum()), 8, 16) and a["q"].dtype == torch.float16
    assert a["k_cache"].shape[1:] == (16, 2, 16) and 0.5 < float(a["k_cache"].float().std()) < 2
    assert torch.equal(a["cu_q_lens"], b["cu_q_lens"]) and torch.equal(a["ctx_lens"], b["ctx_lens"])
    assert not torch.equal(a["block_table"], b["block_table"]) and not torch.equal(a["q"], b["q"])
    assert torch.equal(mod.make_inputs(p, seed=1, device="cpu")["q"], a["q"])
    ref = mod.reference(a)
    assert ref.shape == a["q"].shape and ref.dtype == torch.float32 and 0.05 < float(ref.std()) < 2
    base = mod.torch_baseline(a)
    assert base.shape == a["q"].shape and base.dtype == torch.float16


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    inp = mod.make_inputs(CASES[KERNEL]["prefill_chunks_bf16"][0], device="cpu")
    args = (inp["q"], inp["k_cache"], inp["v_cache"], inp["block_table"], inp["cu_q_lens"], inp["ctx_lens"])
    with pytest.raises(ValueError, match="BLOCK_M=48"):
        mod.paged_prefill_attn(*args, BLOCK_M=48)
    with pytest.raises(ValueError, match="BLOCK_N=8"):
        mod.paged_prefill_attn(*args, BLOCK_N=8)
    with pytest.raises(ValueError, match="PACK_GQA=2"):
        mod.paged_prefill_attn(*args, PACK_GQA=2)
    with pytest.raises(ValueError, match="one dtype"):
        mod.paged_prefill_attn(inp["q"].half(), *args[1:])
    with pytest.raises(ValueError, match="int32"):
        mod.paged_prefill_attn(*args[:3], inp["block_table"].long(), *args[4:])
    with pytest.raises(ValueError, match="cu_q_lens"):
        mod.paged_prefill_attn(*args[:4], inp["cu_q_lens"][:-1], inp["ctx_lens"])
    with pytest.raises(ValueError, match="out must be"):
        mod.paged_prefill_attn(*args, out=torch.empty(1, 4, 32, dtype=torch.bfloat16))
    with pytest.raises(ValueError, match="BLOCK_M=16 with PACK_GQA"):
        mod._check_cfg(_cfg(16, 32, 1, 4, 2), 32)
    bad = dict(CASES[KERNEL]["prefill_chunks_bf16"][0])
    with pytest.raises(ValueError, match="H_q=4 must be a positive multiple of H_kv=3"):
        mod.example_args(mod.BASELINE, dict(bad, H_kv=3))
    with pytest.raises(ValueError, match="PAGE=12"):
        mod.example_args(mod.BASELINE, dict(bad, PAGE=12))
    with pytest.raises(ValueError, match="dtype 'fp32'"):
        mod.make_inputs(dict(bad, dtype="fp32"), device="cpu")


def test_examples_import_without_torch():
    """The launcher contract: the module imports with no torch (it is imported inside the functions)."""
    proc = H.imports_without_torch([KERNEL])
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr[-2000:]


@pytest.mark.slow
@pytest.mark.parametrize("kernel", list(COMPILE_CFGS))
def test_example_compiles_sm90(shared_cache, kernel):
    """On sm_90: BASELINE and three more (16 / 64 / 128 rows, packed and not, 4 and 8 warps)
    compile without spills inside 227 KiB and the bound; the dots of 64-row tiles run as wgmma."""
    from occmodel import compile_kernel

    mod = load_example(kernel)
    assert COMPILE_CFGS[kernel][0] == mod.BASELINE
    for cfg, res in H.compile_results(kernel, COMPILE_CFGS[kernel], "sm_90"):
        assert res.status == "ok", f"{kernel} {cfg} on sm_90: {res.status}: {res.message}"
        assert res.n_regs > 0 and 0 < res.shared <= H200_SMEM_PER_BLOCK and res.n_spills == 0
        assert res.shared <= _smem_bound(cfg), cfg
    res = compile_kernel(mod._kernel, args=mod.example_args(mod.BASELINE, mod.POINTS[0]), arch="sm_90",
                         num_warps=4, num_stages=2, keep_ir=True)
    assert res.status == "ok", res.message
    assert "wgmma.mma_async" in res.ptx and ".bf16" in res.ptx


@pytest.mark.slow
def test_example_compiles_sm120(shared_cache):
    """On sm_120 (99 KiB a block) configs of 16 / 64 / 128 rows compile and fit."""
    for cfg, res in H.compile_results(KERNEL, SM120_CFGS, "sm_120"):
        assert res.status == "ok", f"{cfg} on sm_120: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.shared <= SM120_SMEM_PER_BLOCK and res.n_spills == 0


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["sm_120", "sm_90"])
def test_other_points_compile(shared_cache, arch):
    """The second point (fp16, 98 sequences) and the third (G = 7, PAGE 32) at a config fitting both
    archs, packed and not."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    for cfg in (_cfg(64, 32, 1, 4, 2), _cfg(64, 64, 0, 8, 3)):
        for p in mod.POINTS[1:]:
            res = compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch=arch,
                                 num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
            assert res.status == "ok" and res.n_spills == 0, f"{p} on {arch}: {res.status}: {res.message}"
            assert res.shared <= (H200_SMEM_PER_BLOCK if arch == "sm_90" else SM120_SMEM_PER_BLOCK)


# ----------------------------------------------------------------- the subprocess side
def _run_prefilled() -> None:
    """Under TRITON_INTERPRET=1: the PREFILLED cases into a NaN-filled out= buffer; one JSON line."""
    import torch

    assert os.environ.get("TRITON_INTERPRET") == "1", "run with TRITON_INTERPRET=1"
    sys.path.insert(0, str(H.TESTS))
    from test_kernels_interpret import _patch_interpreter_bf16_dot
    _patch_interpreter_bf16_dot()
    mod = load_example(KERNEL)
    results = {}
    for name in PREFILLED:
        point, cfg = CASES[KERNEL][name]
        try:
            inputs = mod.make_inputs(point, seed=len(name), device="cpu")
            _prepare(name, point, inputs)
            q = inputs["q"]
            T, h_q, d = q.shape
            if name == STRIDED_OUT:
                out = torch.full((T, h_q + 3, d), float("nan"), dtype=q.dtype)[:, 1:h_q + 1]
            else:
                out = torch.full((T, h_q, d), float("nan"), dtype=q.dtype)
            got = mod.paged_prefill_attn(q, inputs["k_cache"], inputs["v_cache"], inputs["block_table"],
                                         inputs["cu_q_lens"], inputs["ctx_lens"], inputs["sm_scale"], out=out,
                                         **cfg)
            results[name] = H.compare(got, mod.reference(inputs), point["dtype"], TOL)
            results[name]["same_buffer"] = got.data_ptr() == out.data_ptr()
        except Exception as exc:          # reported per case by the test
            results[name] = {"error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(results))


if __name__ == "__main__":
    if sys.argv[1] == "prefilled":
        _run_prefilled()
    else:
        H.run_cases(sys.argv[1], CASES[sys.argv[1]], TOL, prepare=_prepare, baseline=True)
