"""A main loop with a loop inside it (rank.nest_trips): the inner loop's body, which the SASS
holds once, is costed as often as the source runs it -- on a hand-worked listing and on a
real top-k-style kernel (a chunk loop that loads, k selection passes over each chunk) compiled
here for sm_90 (no GPU)."""

from __future__ import annotations

import pytest
import triton
import triton.language as tl

from occmodel import pipeline as P
from occmodel import rank as R
from occmodel import sass as S
from occmodel import tile_order as T

# cuobjdump's layout: an outer loop (0x10..0x90) that loads one 32-bit word per thread, and inside
# it a loop (0x40..0x70) with no load: a max, a barrier, a shared store and the backward branch.
NESTED = """
        /*0000*/                   S2R R0, SR_TID.X ;
        /*0010*/                   LDG.E R2, desc[UR4][R4.64] ;
        /*0020*/                   IADD3 R4, R4, 0x4, RZ ;
        /*0030*/                   MOV R6, RZ ;
        /*0040*/                   IMNMX R7, R2, R7, !PT ;
        /*0050*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;
        /*0060*/                   STS [R8], R7 ;
        /*0070*/              @!P0 BRA 0x40 ;
        /*0080*/                   ISETP.GE.AND P1, PT, R4, R9, PT ;
        /*0090*/              @!P1 BRA 0x10 ;
        /*00a0*/                   EXIT ;
        /*00b0*/                   BRA 0xb0;
"""


def test_the_loop_that_loads_is_the_main_loop():
    loops = S.sass_loops(NESTED)
    inner, outer = loops                          # innermost first
    assert (inner.start, inner.end, inner.instructions) == (0x40, 0x70, 4)
    assert (outer.start, outer.end, outer.instructions) == (0x10, 0x90, 9)
    assert inner.global_loads == 0 and outer.global_loads == 1
    # the innermost loop neither loads nor multiplies: the loop around it that loads carries the work
    assert S.main_loop(loops) is outer
    assert S.nested(loops, outer) == [inner]


def test_inner_trips_multiply_the_inner_body():
    loops = S.sass_loops(NESTED)
    outer = S.main_loop(loops)
    # 50 trips: 9 + 49 x 4 = 205 instructions, 1 + 49 x 1 = 50 barriers and shared stores; 1 load
    lp = R.nest_trips(outer, S.nested(loops, outer), (50.0,))
    assert (lp.instructions, lp.barriers, lp.shared_ops, lp.global_loads) == (205, 50, 50, 1)
    # trips unknown (no launch arguments) or unpaired: the listing as it is
    assert R.nest_trips(outer, S.nested(loops, outer), None) is outer
    assert R.nest_trips(outer, S.nested(loops, outer), (None,)) is outer
    assert R.nest_trips(outer, S.nested(loops, outer), (3.0, 4.0)) is outer


def test_one_source_loop_compiled_to_two_is_costed_once_per_trip():
    # ptxas's unrolled body (16 instructions) and its remainder loop (4): t trips at 4 each, 0 x 16
    big = S.SassLoop(0x100, 0x200, 16, 0, 0, 0, 0, 0, True, barriers=4)
    rest = S.SassLoop(0x210, 0x250, 4, 0, 0, 0, 0, 0, True, barriers=1)
    outer = S.SassLoop(0x0, 0x300, 30, 64, 4, 0, 0, 0, False, barriers=5)
    lp = R.nest_trips(outer, [big, rest], (10.0,))
    assert lp.instructions == 30 - 16 + 9 * 4 and lp.barriers == 5 - 4 + 9 * 1


@triton.jit
def _select_kernel(X, OUT, V, K, BLOCK: tl.constexpr, CHUNKS: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    best = tl.full([], -1.0e30, tl.float32)
    for c in range(0, CHUNKS):
        x = tl.load(X + row * V + c * BLOCK + offs, mask=c * BLOCK + offs < V, other=-1.0e30)
        prev = tl.full([], 3.0e38, tl.float32)
        for j in range(0, K):                   # k passes: the next largest below the previous pick
            cur = tl.max(tl.where(x < prev, x, -1.0e30))
            best = tl.maximum(best, cur)
            prev = cur
    tl.store(OUT + row, best)


SIG = {"X": "*fp32:16", "OUT": "*fp32:16", "V": "i32", "K": "i32"}


@pytest.fixture(scope="module")
def compiled(shared_cache):
    from occmodel.compile import compile_kernel
    res = compile_kernel(_select_kernel, SIG, {"BLOCK": 1024, "CHUNKS": 4}, arch="sm_90", num_warps=4,
                         num_stages=1, keep_ir=True)
    assert res.ok, res.message
    return res


def test_trips_of_the_selection_loop_come_from_the_launch_arguments(compiled):
    rep = P.analyze(compiled)
    assert rep.main is not None and rep.main.loads            # the chunk loop, which loads
    assert T.nested_trips(compiled.ttgir, rep, {"V": 4096, "K": 50}, (64,)) == (50.0,)
    assert T.nested_trips(compiled.ttgir, rep, {"V": 4096, "K": 8}, (64,)) == (8.0,)
    assert T.nested_trips(compiled.ttgir, rep, {"V": 4096}, (64,)) == (None,)      # K unknown


def test_issue_per_iteration_grows_with_k(compiled):
    rep = P.analyze(compiled)
    loops = S.sass_loops(compiled.sass)
    outer = S.main_loop(loops)
    inner = S.nested(loops, outer)
    assert outer.global_loads and inner and not any(lp.global_loads for lp in inner)
    once = R._sass_loop(compiled, 128, rep, None).issue
    k8 = R._sass_loop(compiled, 128, rep, (8.0,)).issue
    k50 = R._sass_loop(compiled, 128, rep, (50.0,)).issue
    body = min(S.issue_slots(lp) for lp in inner)
    assert k8 == pytest.approx(once + 7 * body) and k50 == pytest.approx(once + 49 * body)


# A segment loop (0x10..0xa0) around a row loop that loads (0x30..0x50); after the row loop the segment
# loop sums across warps (a barrier and two shared accesses) and stores; after it, the CTA's epilogue
# sums across warps once more (a barrier, one shared store) before it exits.
SEGMENTS = """
        /*0000*/                   S2R R0, SR_TID.X ;
        /*0010*/                   LDG.E R2, desc[UR4][R4.64] ;
        /*0020*/                   MOV R6, RZ ;
        /*0030*/                   LDG.E R7, desc[UR4][R8.64] ;
        /*0040*/                   FADD R6, R6, R7 ;
        /*0050*/              @!P0 BRA 0x30 ;
        /*0060*/                   STS [R9], R6 ;
        /*0070*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;
        /*0080*/                   LDS R6, [R9] ;
        /*0090*/                   STG.E desc[UR4][R10.64], R6 ;
        /*00a0*/              @!P1 BRA 0x10 ;
        /*00b0*/                   STS [R9], R6 ;
        /*00c0*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;
        /*00d0*/                   EXIT ;
        /*00e0*/                   BRA 0xe0;
"""


def test_a_segment_loops_own_work_and_the_epilogue():
    loops = S.sass_loops(SEGMENTS)
    row = S.main_loop(loops)
    seg = S.enclosing(loops, row)
    assert (row.start, row.end) == (0x30, 0x50) and (seg.start, seg.end) == (0x10, 0xa0)
    own = S.own(seg, loops)                                 # 10 instructions less the row loop's 3
    assert (own.instructions, own.barriers, own.shared_ops, own.global_loads) == (7, 1, 2, 1)
    out = S.outside(SEGMENTS)                               # 15 (the exit trap's too) less the segment loop's 10
    assert (out.instructions, out.barriers, out.shared_ops) == (5, 1, 1)


class _Info:
    def __init__(self, exchange_elements=0.0, parent=-1):
        self.exchange_elements, self.parent, self.loads, self.unroll = exchange_elements, parent, (), 1


class _Report:
    def __init__(self):
        self.loops = (_Info(exchange_elements=4.0), _Info(parent=0))  # the segment loop sums a vector
        self.main, self.ahead, self.exchange_elements = self.loops[1], 0, 1.0

    def passes(self):
        return P.Passes(1, 0, 0)                                # one walk over the rows


class _Result:
    sass = SEGMENTS


def test_segment_work_is_shared_over_the_row_iterations():
    rep = _Report()
    _, issue, barriers, cycles, *_ = R._sass_loop(_Result(), 128, rep)
    assert (issue, barriers, cycles) == (3.0, 0, 0.0)       # the row loop alone: no barrier, no exchange
    # 2 row iterations per segment trip (share 1/2), 4 per CTA (1/4): the segment's 7 slots / 2; its 2
    # shared accesses at the vector rate (9.5 cycles) / 2; the epilogue's 1 access at 1 cycle / 4, its
    # issue slots not charged (EPILOGUE_ISSUE)
    _, issue, barriers, cycles, *_ = R._sass_loop(_Result(), 128, rep, None, (0.5, 0.25))
    assert issue == pytest.approx(3.0 + 7 / 2)
    assert cycles == pytest.approx(2 * R.EXCHANGE_CYCLES_PER_OP / 2 + 1 / 4)
    assert barriers == round(1 / 2 + 1 / 4)


@triton.jit
def _segment_sum_kernel(X, OFFSETS, OUT, B, D, SEGS: tl.constexpr, BLOCK_L: tl.constexpr, BLOCK_D: tl.constexpr):
    ds = tl.arange(0, BLOCK_D)
    ls = tl.arange(0, BLOCK_L)
    for i in range(SEGS):                                   # the segment loop around the row loop
        b = tl.program_id(0) * SEGS + i
        if b < B:
            start = tl.load(OFFSETS + b)
            end = tl.load(OFFSETS + b + 1)
            acc = tl.zeros([BLOCK_L, BLOCK_D], tl.float32)
            for l0 in range(start, end, BLOCK_L):
                rows = l0 + ls
                acc += tl.load(X + rows[:, None] * D + ds[None, :], mask=(rows < end)[:, None], other=0.0)
            tl.store(OUT + b * D + ds, tl.sum(acc, axis=0))


def test_the_segment_loops_trips_come_from_its_bounds(shared_cache):
    from occmodel.compile import compile_kernel
    sig = {"X": "*fp32:16", "OFFSETS": "*i32:16", "OUT": "*fp32:16", "B": "i32", "D": "i32"}
    res = compile_kernel(_segment_sum_kernel, sig, {"SEGS": 4, "BLOCK_L": 16, "BLOCK_D": 64}, arch="sm_90",
                         num_warps=8, num_stages=1, keep_ir=True)
    assert res.ok, res.message
    rep = P.analyze(res)
    assert rep.main is not None and rep.main.parent >= 0
    assert T.enclosing_trips(res.ttgir, rep, {"B": 1024, "D": 64}, (256,)) == 4.0
    # the sum over the rows, which 8 warps share, goes through shared memory in the segment loop
    assert rep.loops[rep.main.parent].exchange_elements > 0 and rep.exchange_elements == 0


@triton.jit
def _row_sum_kernel(X, OUT, L, D, BLOCK_L: tl.constexpr, BLOCK_D: tl.constexpr):
    ds = tl.arange(0, BLOCK_D)
    acc = tl.zeros([BLOCK_L, BLOCK_D], tl.float32)
    for l0 in range(0, L, BLOCK_L):                          # its bound is an argument, not loaded
        rows = l0 + tl.arange(0, BLOCK_L)
        acc += tl.load(X + rows[:, None] * D + ds[None, :], mask=(rows < L)[:, None], other=0.0)
    tl.store(OUT + tl.program_id(0) * D + ds, tl.sum(acc, axis=0))


def test_a_row_loop_whose_bounds_are_loaded_waits_for_them(shared_cache):
    """The segment kernel's row loop runs from offsets[b] to offsets[b + 1]: it cannot start before those
    loads return -- one latency per segment, SEGS a CTA (rank.bound_waits). A loop to an argument waits
    for nothing."""
    from occmodel.compile import compile_kernel
    sig = {"X": "*fp32:16", "OFFSETS": "*i32:16", "OUT": "*fp32:16", "B": "i32", "D": "i32"}
    res = compile_kernel(_segment_sum_kernel, sig, {"SEGS": 4, "BLOCK_L": 16, "BLOCK_D": 64}, arch="sm_90",
                         num_warps=8, num_stages=1, keep_ir=True)
    assert res.ok, res.message
    rep = P.analyze(res)
    assert T.loaded_bounds(res.ttgir, rep) == rep.main.parent == 0      # the offsets load sits in the segment loop
    # 4 segment trips a CTA over 12 row iterations a CTA: loop_nest's shares 4 / 12 and 1 / 12 -> 4 waits
    assert R.bound_waits(res, rep, (4 / 12, 1 / 12)) == pytest.approx(4.0)
    plain = compile_kernel(_row_sum_kernel, {"X": "*fp32:16", "OUT": "*fp32:16", "L": "i32", "D": "i32"},
                           {"BLOCK_L": 16, "BLOCK_D": 64}, arch="sm_90", num_warps=4, num_stages=1, keep_ir=True)
    assert plain.ok, plain.message
    prep = P.analyze(plain)
    assert prep.main is not None and T.loaded_bounds(plain.ttgir, prep) is None
    assert R.bound_waits(plain, prep, (None, 1 / 12)) == 0.0


@triton.jit
def _len_once_kernel(X, LEN, OUT, D, SEGS: tl.constexpr, BLOCK_L: tl.constexpr, BLOCK_D: tl.constexpr):
    n = tl.load(LEN + tl.program_id(0))                    # one length a CTA, loaded before the segment loop
    ds = tl.arange(0, BLOCK_D)
    for i in range(SEGS):
        acc = tl.zeros([BLOCK_L, BLOCK_D], tl.float32)
        for l0 in range(0, n, BLOCK_L):
            rows = l0 + tl.arange(0, BLOCK_L)
            acc += tl.load(X + (i * 4096 + rows)[:, None] * D + ds[None, :], mask=(rows < n)[:, None], other=0.0)
        tl.store(OUT + (tl.program_id(0) * SEGS + i) * D + ds, tl.sum(acc, axis=0))


@triton.jit
def _len_if_kernel(X, LEN, OUT, B, D, BLOCK_L: tl.constexpr, BLOCK_D: tl.constexpr):
    pid = tl.program_id(0)
    n = 0
    if pid < B:                                            # the length comes out of an scf.if
        n = tl.load(LEN + pid)
    ds = tl.arange(0, BLOCK_D)
    acc = tl.zeros([BLOCK_L, BLOCK_D], tl.float32)
    for l0 in range(0, n, BLOCK_L):
        rows = l0 + tl.arange(0, BLOCK_L)
        acc += tl.load(X + rows[:, None] * D + ds[None, :], mask=(rows < n)[:, None], other=0.0)
    tl.store(OUT + pid * D + ds, tl.sum(acc, axis=0))


@triton.jit
def _len_carried_kernel(X, OFFSETS, OUT, D, SEGS: tl.constexpr, BLOCK_L: tl.constexpr, BLOCK_D: tl.constexpr):
    start = tl.load(OFFSETS + tl.program_id(0) * SEGS)      # each segment starts where the last one ended
    ds = tl.arange(0, BLOCK_D)
    for i in range(SEGS):
        end = start + 64
        acc = tl.zeros([BLOCK_L, BLOCK_D], tl.float32)
        for l0 in range(start, end, BLOCK_L):
            rows = l0 + tl.arange(0, BLOCK_L)
            acc += tl.load(X + rows[:, None] * D + ds[None, :])
        tl.store(OUT + (tl.program_id(0) * SEGS + i) * D + ds, tl.sum(acc, axis=0))
        start = end


def test_where_the_loaded_bound_comes_from(shared_cache):
    """A length loaded once before the segment loop is one wait a CTA, not one a segment; a length that
    comes out of an `if` (an scf.if's yield) or a start carried from segment to segment (the segment
    loop's iter_args) is still traced back to its load."""
    from occmodel.compile import compile_kernel
    sig = {"X": "*fp32:16", "LEN": "*i32:16", "OUT": "*fp32:16", "D": "i32"}
    const = {"SEGS": 4, "BLOCK_L": 16, "BLOCK_D": 64}
    once = compile_kernel(_len_once_kernel, sig, const, arch="sm_90", num_warps=4, num_stages=1, keep_ir=True)
    rep = P.analyze(once)
    assert rep.main.parent == 0 and T.loaded_bounds(once.ttgir, rep) == -1
    assert R.bound_waits(once, rep, (4 / 12, 1 / 12)) == 1.0
    guarded = compile_kernel(_len_if_kernel, {**sig, "B": "i32"}, {"BLOCK_L": 16, "BLOCK_D": 64}, arch="sm_90",
                             num_warps=4, num_stages=1, keep_ir=True)
    assert "scf.if" in guarded.ttgir and T.loaded_bounds(guarded.ttgir, P.analyze(guarded)) == -1
    carried = compile_kernel(_len_carried_kernel, {"X": "*fp32:16", "OFFSETS": "*i32:16", "OUT": "*fp32:16", "D": "i32"},
                             const, arch="sm_90", num_warps=4, num_stages=1, keep_ir=True)
    crep = P.analyze(carried)
    assert "iter_args" in carried.ttgir and T.loaded_bounds(carried.ttgir, crep) == -1
    assert R.bound_waits(carried, crep, (4 / 12, 1 / 12)) == 1.0


def test_each_cta_pays_its_bound_waits_once():
    """cta(c) = n x step(c) + L (pipelined) + w x L: 2 waves of 100 SMs x 1 CTA, 4 unpipelined iterations of
    a latency-bound step; w = 2 adds 2 x L to each wave's CTAs."""
    r = R._Rates(sms=100, bw=4e12, l2=1e13, smem=2.56e13, peak=1e15, lat=1e-6, l2_lat=3e-7, clock=2e9)
    lp = R._Loop(d=64, t=64, s=0, f=0, k=0)
    base = R._kernel(r, 200, 1, 4, lp)
    waited = R._kernel(r, 200, 1, 4, R._Loop(d=64, t=64, s=0, f=0, k=0, bound_waits=2.0))
    assert waited.total_s == pytest.approx(base.total_s + 2 * 2 * 1e-6)
    # a ragged launch: each CTA with rows pays them too; one with none reads its bounds and returns (1 x L,
    # or its waits when more)
    rag = R._ragged(r, [4, 0, 4], 1, lp)
    rag_w = R._ragged(r, [4, 0, 4], 1, R._Loop(d=64, t=64, s=0, f=0, k=0, bound_waits=2.0))
    assert rag_w.total_s == pytest.approx(rag.total_s + 2 * 1e-6)
    idle_w = R._Loop(d=64, t=64, s=0, f=0, k=0, bound_waits=2.0)
    assert R._ragged(r, [0], 1, idle_w).total_s == pytest.approx(2 * 1e-6)     # no rows: its 2 waits alone
    assert R._ragged(r, [0], 1, lp).total_s == pytest.approx(1e-6)             # no loaded bounds: L
