"""The built-in cards' shared-memory model against real Triton compiles (no GPU).

For a representative subset of each card's sweep, compile the kernel for sm_120 and
sm_90 exactly as the card's launcher specialises it, and require the predicted
shared memory to equal Triton's ``metadata.shared``. The whole sweep, on sm_80 and
sm_100 too, is ``scripts/check_shared_model.py`` (minutes; not CI).

Golden numbers, worked out by hand next to the assertions, pin the rules themselves:
the decode kernel's KV ring grows one tile per stage (the seed story's num_stages
lever), the per-token-lookup variant stays flat.
"""

from __future__ import annotations

import pytest
import sympy

from occmodel.compile import compile_kernel
from occmodel.errors import ConfigError
from occmodel.kernels import decode_attention, decode_attention_nopipe, matmul
from occmodel.model import predict
from occmodel.spec import load_spec

pytestmark = pytest.mark.slow

DEC = decode_attention.CARD
NOPIPE = decode_attention_nopipe.CARD
MM = matmul.CARD

# (BLOCK_T, BLOCK_H, num_warps, num_stages): every BLOCK_T and BLOCK_H, every num_warps,
# S=1 (unpipelined, conversion scratch capped by num_warps) through S=4.
DECODE_SUBSET = [(16, 16, 4, 1), (16, 16, 4, 2), (16, 16, 4, 3), (16, 16, 4, 4), (16, 16, 8, 2), (16, 16, 2, 3),
                 (32, 16, 4, 2), (32, 16, 2, 1), (16, 32, 4, 3), (32, 32, 8, 1), (64, 16, 8, 1), (64, 16, 4, 2),
                 (64, 32, 2, 4), (32, 32, 4, 4)]
# (BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages): mma.sync (BLOCK_M=32) and
# wgmma (BLOCK_M >= 64 on sm_90) sides, every tile size, both warp counts.
MATMUL_SUBSET = [(32, 32, 32, 4, 2), (32, 128, 64, 8, 3), (32, 64, 32, 8, 4), (64, 32, 32, 4, 2),
                 (64, 64, 64, 8, 4), (64, 128, 32, 4, 3), (64, 64, 32, 4, 2), (128, 32, 64, 8, 2),
                 (128, 32, 32, 4, 3), (128, 64, 32, 4, 4), (128, 128, 32, 8, 2), (128, 128, 64, 4, 3)]


def _compiled(card, cfg, arch):
    res = compile_kernel(card.kernel, signature=card.signature(cfg), constexprs=card.constexprs(cfg), arch=arch,
                         num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
    assert res.ok, f"{card.name} {cfg} on {arch}: {res.status}: {res.message}"
    return res


def _predicted(card, cfg, arch) -> int:
    return predict(card, load_spec(arch), cfg).shared


def _decode_cfg(card, t, h, w, s):
    return card.resolve({"BLOCK_T": t, "BLOCK_H": h, "num_warps": w, "num_stages": s})


@pytest.mark.parametrize("arch", ["sm_120", "sm_90"])
@pytest.mark.parametrize("t,h,w,s", DECODE_SUBSET)
def test_decode_shared_exact(arch, t, h, w, s):
    cfg = _decode_cfg(DEC, t, h, w, s)
    assert _predicted(DEC, cfg, arch) == _compiled(DEC, cfg, arch).shared


@pytest.mark.parametrize("arch", ["sm_120", "sm_90"])
@pytest.mark.parametrize("bm,bn,bk,w,s", MATMUL_SUBSET)
def test_matmul_shared_exact(arch, bm, bn, bk, w, s):
    cfg = MM.resolve({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "num_warps": w, "num_stages": s})
    assert _predicted(MM, cfg, arch) == _compiled(MM, cfg, arch).shared


@pytest.mark.parametrize("bm,bn,bk,w,s,expected", [
    # sm_80 has no stmatrix: the accumulator's trip to the store layout takes the whole
    # 128x128 fp16 tile, 32768 B, more than the one-deep ring (128x32 + 32x128) x 2 = 16384 B
    (128, 128, 32, 8, 2, 32768),
    # 128x64 at 4 warps: 16384 B of epilogue scratch > ring (128x32 + 32x64) x 2 = 12288 B
    (128, 64, 32, 4, 2, 16384),
    # 32x128: the ring (32x32 + 32x128) x 2 = 10240 B beats the 8192 B epilogue
    (32, 128, 32, 4, 2, 10240),
])
def test_matmul_epilogue_decides_on_sm80(bm, bn, bk, w, s, expected):
    cfg = MM.resolve({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "num_warps": w, "num_stages": s})
    assert _predicted(MM, cfg, "sm_80") == expected
    assert _compiled(MM, cfg, "sm_80").shared == expected


def test_decode_num_stages_grows_one_kv_tile_per_stage():
    # BLOCK_T = BLOCK_H = 16, bf16, 576-wide rows. Pipelined (S >= 2):
    #   q tiles 16 x 576 x 2 = 18432, P tile 16 x 16 x 2 = 512, KV tile 16 x 576 x 2 = 18432
    #   S=2: 18432 + 1 x 18432 + 512 = 37376;  S=3: + 18432 = 55808;  S=4: 74240
    # S=1 (nothing pipelined): q 18432 + k_lat staged 16384 + conversion scratch 16384 = 51200
    expected = {1: 51200, 2: 37376, 3: 55808, 4: 74240}
    for s, shared in expected.items():
        cfg = _decode_cfg(DEC, 16, 16, 4, s)
        assert _predicted(DEC, cfg, "sm_120") == shared
        assert _compiled(DEC, cfg, "sm_120").shared == shared, f"num_stages={s}"


def test_decode_nopipe_num_stages_is_a_no_op():
    # Per-token page lookups: the KV loads are indirection level 0 under a level-1
    # table load, latency (S-1)//2 = 1 for S = 2, 3, 4: one KV tile throughout.
    # S=3, 4 add the page-id vector, pipelined too: 16 int32 x 2 layouts = 128 B.
    expected = {2: 37376, 3: 37504, 4: 37504}
    for s, shared in expected.items():
        cfg = _decode_cfg(NOPIPE, 16, 16, 4, s)
        assert _predicted(NOPIPE, cfg, "sm_120") == shared
        assert _compiled(NOPIPE, cfg, "sm_120").shared == shared, f"num_stages={s}"


@pytest.mark.parametrize("arch", ["sm_120", "sm_90"])
def test_decode_nopipe_subset_exact(arch):
    for t, h, w, s in [(32, 16, 4, 3), (64, 16, 2, 4), (16, 32, 8, 2)]:
        cfg = _decode_cfg(NOPIPE, t, h, w, s)
        assert _predicted(NOPIPE, cfg, arch) == _compiled(NOPIPE, cfg, arch).shared, cfg


# ------------------------------------------------------------------ no compiles
def test_models_are_sympy_over_the_card_symbols():
    for card in (DEC, NOPIPE, MM):
        cfg = card.resolve()
        names = set(card.symbols())
        for cc in ((12, 0), (9, 0), (8, 0), (10, 0)):
            for expr in (card.shared_memory(cc, cfg), card.registers(cc, cfg)):
                assert isinstance(expr, sympy.Expr)
                assert {str(x) for x in expr.free_symbols} <= names


def test_sweeps_have_the_documented_size():
    assert len(DEC.sweep()) == 3 * 2 * 3 * 4        # BLOCK_T x BLOCK_H x num_warps x num_stages
    assert len(NOPIPE.sweep()) == 72
    assert len(MM.sweep()) == 3 * 3 * 2 * 2 * 3     # BLOCK_M x BLOCK_N x BLOCK_K x num_warps x num_stages


def test_decode_rejects_tiles_that_straddle_pages():
    with pytest.raises(ConfigError, match="PAGE_SIZE=16 is not a multiple of BLOCK_T=32"):
        DEC.resolve({"BLOCK_T": 32, "PAGE_SIZE": 16})
    NOPIPE.resolve({"BLOCK_T": 32, "PAGE_SIZE": 16})          # the per-token variant allows it


def test_decode_workload_arithmetic():
    cfg = DEC.resolve()
    point = {"C": 64, "ctx": 8192}
    # 16 heads / BLOCK_H 16 = 1 head group; 512 // 64 = 8 splits of 8192 / 8 = 1024 tokens
    assert DEC.grid(cfg, point) == 64 * 1 * 8
    assert DEC.loop_iterations(cfg, point) == 1024 // 16
    assert DEC.flops(cfg, point) == 2 * 64 * 16 * 8192 * (512 + 576)
    assert DEC.work_units(point) == 64
    # C=96: 512 // 96 = 5 splits (480 CTAs, rounding down: no tail of a second wave)
    assert DEC.grid(cfg, {"C": 96, "ctx": 8192}) == 480
    # C=1: 512 splits wanted, capped at 8192 / 16 = 512 tiles // 4 tiles per split = 128 splits
    assert DEC.grid(cfg, {"C": 1, "ctx": 8192}) == 128
    assert DEC.loop_iterations(cfg, {"C": 1, "ctx": 8192}) == 4
