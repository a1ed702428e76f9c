"""A kernel that walks its data in several passes (rank.pass_issue): every declared iteration is
costed at the mean of the passes' SASS loops, each per source iteration (its trip over its unroll),
not at the main loop's rate alone -- on a hand-worked listing and on a real three-pass softmax
compiled here for sm_90 (no GPU)."""

from __future__ import annotations

import pytest
import triton
import triton.language as tl

from occmodel import pipeline as P
from occmodel import rank as R
from occmodel import sass as S

# Three sibling loops, as cuobjdump lays out a three-pass row kernel:
#   0x10..0x40  pass 1 (a row max): one 32-bit load per trip, 4 instructions;
#   0x50..0xa0  pass 2 (a sum of exponentials): one load and one MUFU.EX2, 6 instructions;
#   0xb0..0x120 pass 3 (the output) unrolled twice by ptxas: two loads, two stores, 8 instructions.
THREE_PASSES = """
        /*0000*/                   S2R R0, SR_TID.X ;
        /*0010*/                   LDG.E R2, desc[UR4][R4.64] ;
        /*0020*/                   FMNMX R7, R2, R7, !PT ;
        /*0030*/                   FADD R4, R4, 1 ;
        /*0040*/              @!P0 BRA 0x10 ;
        /*0050*/                   LDG.E R2, desc[UR4][R4.64] ;
        /*0060*/                   FADD R3, R2, -R7 ;
        /*0070*/                   MUFU.EX2 R3, R3 ;
        /*0080*/                   FADD R8, R8, R3 ;
        /*0090*/                   FADD R4, R4, 1 ;
        /*00a0*/              @!P1 BRA 0x50 ;
        /*00b0*/                   LDG.E R2, desc[UR4][R4.64] ;
        /*00c0*/                   LDG.E R3, desc[UR4][R4.64+0x200] ;
        /*00d0*/                   FMUL R2, R2, R9 ;
        /*00e0*/                   FMUL R3, R3, R9 ;
        /*00f0*/                   STG.E desc[UR4][R6.64], R2 ;
        /*0100*/                   STG.E desc[UR4][R6.64+0x200], R3 ;
        /*0110*/                   FADD R4, R4, 1 ;
        /*0120*/              @!P2 BRA 0xb0 ;
        /*0130*/                   EXIT ;
        /*0140*/                   BRA 0x140;
"""


def test_each_pass_costs_its_own_loop_per_iteration():
    loops = S.sass_loops(THREE_PASSES)
    # one source iteration loads 4 bytes per thread in every pass (pipeline.Passes.thread_bytes)
    passes = P.Passes(3, 0, 0, (4.0, 4.0, 4.0), (0.0, 0.0, 0.0))
    issue, cycles, *_ = R.pass_issue(loops, passes, 128)
    # pass 1: 4 slots; pass 2: 6 + 7 (the MUFU op takes 8 slots); pass 3: 8 slots a trip over 2 iterations
    assert issue == pytest.approx((4 + 13 + 8 / 2) / 3)
    assert cycles == 0.0                                    # no barrier: no exchange
    # the main loop alone (the one that loads the most a trip: pass 3) would cost 4 slots an iteration
    main = S.main_loop(loops)
    assert (main.start, S.issue_slots(main) / 2) == (0xB0, 4.0)


def test_it_declines_when_the_loops_do_not_pair_with_the_passes():
    loops = S.sass_loops(THREE_PASSES)
    assert R.pass_issue(loops, P.Passes(2, 0, 0, (4.0, 4.0)), 128) is None   # 3 loops, 2 passes
    assert R.pass_issue(loops, P.Passes(1, 0, 0, (4.0,)), 128) is None       # one pass: the main loop's rate
    assert R.pass_issue(loops, None, 128) is None


@triton.jit
def _softmax_three_pass(X, Y, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = tl.full([BLOCK], float("-inf"), tl.float32)
    for c in range(0, N, BLOCK):                            # pass 1: the row max
        x = tl.load(X + row * N + c + cols, mask=c + cols < N, other=float("-inf"))
        m = tl.maximum(m, x)
    mx = tl.max(m, axis=0)
    s = tl.zeros([BLOCK], tl.float32)
    for c in range(0, N, BLOCK):                            # pass 2: the sum of exponentials
        x = tl.load(X + row * N + c + cols, mask=c + cols < N, other=float("-inf"))
        s += tl.exp(x - mx)
    inv = 1.0 / tl.sum(s, axis=0)
    for c in range(0, N, BLOCK):                            # pass 3: the output
        x = tl.load(X + row * N + c + cols, mask=c + cols < N, other=float("-inf"))
        tl.store(Y + row * N + c + cols, tl.exp(x - mx) * inv, mask=c + cols < N)


def test_a_real_three_pass_softmax_pairs_its_loops(shared_cache):
    from occmodel.compile import compile_kernel
    res = compile_kernel(_softmax_three_pass, {"X": "*fp32:16", "Y": "*fp32:16", "N": "i32"}, {"BLOCK": 1024},
                         arch="sm_90", num_warps=4, num_stages=1, keep_ir=True)
    assert res.ok, res.message
    rep = P.analyze(res)
    passes = rep.passes()
    assert passes.count == 3 and passes.thread_bytes == (32.0, 32.0, 32.0)   # 1024 fp32 over 128 threads
    loops = S.sass_loops(res.sass)
    walks = sorted((lp for lp in loops if lp.inner and lp.global_loads), key=lambda lp: lp.start)
    assert len(walks) == 3
    # the exp passes issue more than the max pass; the cost is their mean per source iteration
    per_iter = [S.issue_slots(lp) / max(1, round(lp.global_load_bytes / 32)) for lp in walks]
    assert per_iter[1] > per_iter[0] and per_iter[2] > per_iter[0]
    issue, *_ = R.pass_issue(loops, passes, 128)
    assert issue == pytest.approx(sum(per_iter) / 3)
    costed = R._sass_loop(res, 128, rep).issue
    assert costed == pytest.approx(issue)
