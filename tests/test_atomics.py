"""Global atomics on shared lines (occmodel.atomics) and rank's floor for them: the line requests a
CTA's layout sends, hand-worked; a histogram and a split-K reduction compiled for sm_90, their
pointers traced per CTA; and a scatter through loaded indices left untraced."""

from __future__ import annotations

import pytest

pytest.importorskip("triton")

import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from occmodel import atomics as A  # noqa: E402
from occmodel import rank as R  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def _cache(shared_cache):
    return shared_cache


def test_line_requests_of_one_ctas_counters_by_hand():
    """256 int32 counters (8 lines of 128 B) take 8 warp instructions. 1 element a thread: each covers
    32 adjacent counters, one line = 8 requests (8 warps; or 2 warps holding 4 copies of the 64-element
    tile: the same). 4 contiguous elements a thread (2 warps): an instruction's lanes sit 4 counters
    apart, 512 B = 4 lines, so 8 x 4 = 32 requests -- four times the queue (expert_histogram compiled
    so by triton 3.6 measured 2.8 ms against 0.74 ms for 8 warps, round 12)."""
    one = "sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [8], order = [0]"
    four = "sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [2], order = [0]"
    assert A.requests_per_cta([256], 4, one) == (8, 8)
    assert A.requests_per_cta([256], 4, one.replace("[8]", "[2]")) == (8, 8)
    assert A.requests_per_cta([256], 4, four) == (32, 8)
    assert A.requests_per_cta([8], 8, one) == (1, 1)          # 8 int64 counters: one instruction, one line


@triton.jit
def histogram_kernel(IDS, COUNTS, N, E: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    ids = tl.load(IDS + offs, mask=offs < N, other=0)
    hist = tl.histogram(ids, E)
    tl.atomic_add(COUNTS + tl.arange(0, E), hist, sem="relaxed")


@triton.jit
def splitk_kernel(A_, C, N, SPLIT: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    tile = pid // SPLIT                         # SPLIT consecutive CTAs add into one output tile
    offs = tile * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(A_ + pid * BLOCK + tl.arange(0, BLOCK))
    tl.atomic_add(C + offs, x, mask=offs < N, sem="relaxed")


@triton.jit
def scatter_kernel(IDX, SRC, DST, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    rows = tl.load(IDX + offs)
    tl.atomic_add(DST + rows, tl.load(SRC + offs), sem="relaxed")


@triton.jit
def channel_sum_kernel(X, DW, C: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    for c in range(C):                          # one scalar atomic per channel, every row's CTA adds in
        x = tl.load(X + (row * C + c) * BLOCK + tl.arange(0, BLOCK))
        tl.atomic_add(DW + c, tl.sum(x))


@triton.jit
def repeated_sum_kernel(X, OUT, T: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    dst = OUT + tl.arange(0, BLOCK)             # computed before the loop: every trip adds into it
    for t in range(T):
        tl.atomic_add(dst, tl.load(X + (pid * T + t) * BLOCK + tl.arange(0, BLOCK)), sem="relaxed")


def _ttgir(fn, sig, consts, warps):
    from occmodel.compile import compile_kernel
    res = compile_kernel(fn, sig, consts, arch="sm_90", num_warps=warps, num_stages=1, keep_ir=True)
    assert res.ok, res.message
    return res.ttgir


def test_every_cta_adds_into_the_same_counters():
    """The histogram's pointer is COUNTS + arange for every CTA: all 1,024 CTAs queue on the same 8 lines
    (the compiler chooses the counters' layout; its requests are requests_per_cta of that layout)."""
    for warps in (2, 8):
        tt = _ttgir(histogram_kernel, "*i32:16,*i32:16,i32", {"E": 256, "BLOCK": 1024}, warps)
        hot = A.contention(tt, {"N": 1024 * 1024}, (1024,))
        per_cta = hot.requests / 1024
        assert (hot.ctas, hot.traced) == (1024, 1) and per_cta in (8, 32)


def test_split_k_partners_share_only_their_tile():
    """4 CTAs per output tile of 256 fp32 (8 lines, 8 warps x 1 element: 8 requests each): the busiest
    tile takes 4 x 8 requests, not the launch's 64 x 8."""
    tt = _ttgir(splitk_kernel, "*fp32:16,*fp32:16,i32", {"SPLIT": 4, "BLOCK": 256}, 8)
    hot = A.contention(tt, {"N": 16 * 256}, (64,))
    assert (hot.ctas, hot.requests) == (4, 32)


def test_an_atomic_in_a_loop_counts_per_trip_only_where_its_pointer_stays():
    """A pointer computed before the loop takes every trip's requests (4 trips x 8 per CTA, 16 CTAs);
    one the loop computes from its counter -- Liger's group-norm backward adds each channel's dW with a
    scalar atomic at DW + c -- may move every trip, so only the first trip counts (128 CTAs x 1: an
    underestimate here, where the 8 channels share one line)."""
    tt = _ttgir(repeated_sum_kernel, "*fp32:16,*fp32:16", {"T": 4, "BLOCK": 256}, 8)
    hot = A.contention(tt, {}, (16,))
    assert (hot.ctas, hot.requests) == (16, 16 * 4 * 8)
    tt = _ttgir(channel_sum_kernel, "*fp32:16,*fp32:16", {"C": 8, "BLOCK": 256}, 4)
    hot = A.contention(tt, {}, (128,))
    assert (hot.ctas, hot.requests) == (128, 128)


def test_a_scatter_through_loaded_indices_is_not_traced():
    tt = _ttgir(scatter_kernel, "*i32:16,*fp32:16,*fp32:16", {"BLOCK": 256}, 4)
    assert A.contention(tt, {}, (64,)) is None
    assert A.contention("", {}, (1,)) is None


def test_rank_floors_the_launch_at_the_atomic_queue():
    """The busiest lines' requests x ATOMIC_REQUEST_S bound the main kernel from below, combined with the
    waves by the smooth maximum; the bound names atomics when the queue is the larger."""
    from test_rank import CAL, CARD, CFG, PEAK
    POINT = {"grid": 40, "n": 10, "bytes": 40 * 10 * 4096, "flops": 0}
    base = R.Resources(blocks_per_sm=2, threads=128, tile_bytes=4096, ahead=1, n_spills=0, source="hand")
    plain = R.estimate(CARD, CAL, CFG, POINT, base, PEAK)
    queued = base.__class__(**{**base.__dict__, "atomic_requests": 10 * plain.waves_s / R.ATOMIC_REQUEST_S})
    est = R.estimate(CARD, CAL, CFG, POINT, queued, PEAK)
    assert est.atomic_s == pytest.approx(10 * plain.waves_s)
    assert est.waves_s == pytest.approx((plain.waves_s ** 4 + est.atomic_s ** 4) ** 0.25)
    assert est.bound == "atomics" and plain.bound != "atomics" and plain.atomic_s == 0.0
