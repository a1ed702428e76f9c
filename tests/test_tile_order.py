"""Which operand strip each CTA streams (occmodel.tile_order) and rank's charge for strips read
again after they left L2 -- on hand-worked replays and on a real grouped-order GEMM compiled
here for sm_90 (no GPU)."""

from __future__ import annotations

import numpy as np
import pytest

from occmodel import rank as R
from occmodel import tile_order as T

from test_rank import CAL, CARD, CFG, PEAK


# ----------------------------------------------------------- the replay, by hand
def _two_strips() -> T.Strips:
    # 8 CTAs in 2 tile rows x 4 tile columns, row-major (GROUP_M = 1): A strip = the tile row
    # (100 B over the loop), B strip = the tile column (10 B)
    a = T.Strip("A", np.array([0, 0, 0, 0, 1, 1, 1, 1]), 100.0)
    b = T.Strip("B", np.array([0, 1, 2, 3, 0, 1, 2, 3]), 10.0)
    return T.Strips((a, b), 8)


def test_distinct_bytes_per_argument():
    """What each argument brings from DRAM at least once: its distinct strips x a strip's bytes."""
    s = T.Strips((T.Strip("A", np.array([0, 0, 1, 1]), 100.0), T.Strip("B", np.array([0, 1, 0, 1]), 10.0),
                  T.Strip("B", np.array([5, 5, 5, 5]), 1.0)), grid=4)
    assert s.distinct_bytes() == {"A": 200.0, "B": 21.0}


def test_revisits_of_a_row_major_order_by_hand():
    rv = _two_strips().revisits(wave_ctas=4)
    # wave 0 = CTAs 0-3: A {0}, B {0,1,2,3} -> streams 100 + 4 x 10 = 140 B; wave 1 the same with A {1}
    assert rv.distinct == (2, 4)
    assert rv.streamed[0].size == 0                       # each A strip is read in one wave only
    # every B column is read again in wave 1, after wave 0's 140 B went through
    assert rv.streamed[1].tolist() == [140.0] * 4


def test_overlapping_windows_share_their_tiles():
    """A sliding window: CTA j reads key rows [j, j + 4) of 100 B each, one row an iteration (its pointer
    advances 100 B). Neighbours share 3 of their 4 tiles -- one strip each, but 7 distinct tiles in all, and
    a later wave finds the tiles the earlier one read (not 4 disjoint strips, as keys alone would say)."""
    win = T.Strip("K", np.array([0, 100, 200, 300]), 400.0, advance=100, trips=4)
    assert T.Strips((win,), 4).distinct_bytes() == {"K": 700.0}
    rv = T.Strips((win,), 4).revisits(wave_ctas=2)
    # wave 0 = CTAs 0-1: rows 0-4 (5 x 100 B); wave 1 = CTAs 2-3: rows 2-6, of which 2, 3, 4 again
    assert rv.nbytes == (100.0,) and rv.distinct == (7,)
    assert rv.streamed[0].tolist() == [500.0] * 3
    # the pointer's advance unknown: four strips, none shared, nothing read again
    whole = T.Strips((T.Strip("K", np.array([0, 100, 200, 300]), 400.0),), 4)
    assert whole.distinct_bytes() == {"K": 1600.0} and whole.revisits(2).streamed[0].size == 0
    # a tile larger than the advance (a run of 400 B sliding 10 B an iteration: a window sum's elements)
    # overlaps the next tile of its own strip: its first element cannot stand for it, kept whole
    run = T.Strip("X", np.array([0, 10, 20, 30]), 1600.0, advance=10, trips=4)
    assert T.Strips((run,), 4).distinct_bytes() == {"X": 6400.0}


def test_one_wave_has_no_revisits():
    rv = _two_strips().revisits(wave_ctas=8)
    assert rv.distinct == (2, 4) and all(s.size == 0 for s in rv.streamed)


def test_rank_charges_revisits_past_the_l2():
    # the toy card: grid 8, 10 SMs x 1 CTA -> waves of 10 CTAs: one wave, nothing re-read
    point = {"grid": 8, "n": 4, "bytes": 440, "flops": 0}
    base = dict(blocks_per_sm=1, threads=128, tile_bytes=1000, ahead=2, n_spills=0, source="hand")
    one = R.estimate(CARD, CAL, CFG, point, R.Resources(**base, strips=_two_strips()), PEAK, l2_bytes=100.0)
    assert one.revisit_bytes == 0.0
    # 4 SMs' worth: waves of 4 CTAs -> 4 B strips re-read after 140 B streamed. L2 of 100 B: 140 is
    # past REREAD_MISS_ABOVE x 100 = 130 -> all miss: 4 x 10 B = 40 B more DRAM traffic
    cal4 = CAL.__class__(**{**CAL.__dict__, "sms": 4})
    far = R.estimate(CARD, cal4, CFG, point, R.Resources(**base, strips=_two_strips()), PEAK, l2_bytes=100.0)
    assert far.revisit_bytes == pytest.approx(40.0)
    plain = R.estimate(CARD, cal4, CFG, point, R.Resources(**base), PEAK, l2_bytes=100.0)
    assert far.dram_per_iter == pytest.approx(plain.dram_per_iter + 40.0 / (8 * 4))
    # an L2 of 1,000 B: 140 B stays under REREAD_HIT_BELOW x 1,000 = 200 -> every re-read hits
    near = R.estimate(CARD, cal4, CFG, point, R.Resources(**base, strips=_two_strips()), PEAK, l2_bytes=1000.0)
    assert near.revisit_bytes == 0.0


# ------------------------------------------------- a real kernel's TTGIR, evaluated
triton = pytest.importorskip("triton")
tl = pytest.importorskip("triton.language")


@triton.jit
def grouped_gemm_kernel(A, B, C, IDX, M, N, K, stride_am, stride_bk, stride_cm,
                        BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                        GROUP_M: tl.constexpr, GATHER: tl.constexpr):
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    per_group = GROUP_M * tiles_n
    first_m = (pid // per_group) * GROUP_M
    rows_in_group = tl.minimum(tiles_m - first_m, GROUP_M)
    tile_m = first_m + (pid % per_group) % rows_in_group
    tile_n = (pid % per_group) // rows_in_group
    rm = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    if GATHER:                                       # A's rows through an index tensor (a gather)
        rm = tl.load(IDX + rm)
    a_ptrs = A + rm[:, None] * stride_am + rk[None, :]
    b_ptrs = B + rk[:, None] * stride_bk + rn[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for _ in range(0, tl.cdiv(K, BLOCK_K)):
        acc += tl.dot(tl.load(a_ptrs), tl.load(b_ptrs))
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * stride_bk
    tl.store(C + rm[:, None] * stride_cm + rn[None, :], acc.to(tl.float16))


SIG = {"A": "*fp16:16", "B": "*fp16:16", "C": "*fp16:16", "IDX": "*i32:16", "M": "i32:16", "N": "i32:16",
       "K": "i32:16", "stride_am": "i32:16", "stride_bk": "i32:16", "stride_cm": "i32:16"}
BM, BN, BK = 64, 64, 32
M, N, K = 512, 384, 256                # 8 x 6 tiles, 8 K steps


def _strips(group_m: int, gather: bool = False) -> T.Strips | None:
    from occmodel import pipeline as P
    from occmodel.compile import compile_kernel
    res = compile_kernel(grouped_gemm_kernel, SIG, {"BLOCK_M": BM, "BLOCK_N": BN, "BLOCK_K": BK, "GROUP_M": group_m,
                                                    "GATHER": gather},
                         arch="sm_90", num_warps=4, num_stages=3, keep_ir=True)
    assert res.ok, res.message
    args = {"M": M, "N": N, "K": K, "stride_am": K, "stride_bk": N, "stride_cm": N}
    return T.strips(res.ttgir, P.analyze(res), args, (48,), K // BK)


def _expected(group_m: int) -> tuple[np.ndarray, np.ndarray]:
    """The kernel's tile mapping written out in numpy: A's and B's first-element byte offsets."""
    pid = np.arange(48)
    per = group_m * 6
    first = (pid // per) * group_m
    rows = np.minimum(8 - first, group_m)
    tm, tn = first + (pid % per) % rows, (pid % per) // rows
    return tm * BM * K * 2, tn * BN * 2


@pytest.mark.parametrize("group_m", [1, 4])
def test_strip_keys_are_the_tiles_first_elements(_cache, group_m):
    s = _strips(group_m)
    by_root = {x.root: x for x in s.strips}
    a, b = _expected(group_m)
    assert set(by_root) == {"A", "B"}
    # the pipelined body loads 2 K steps ahead (3 stages): the keys are the offsets shifted by a constant
    assert np.array_equal(by_root["A"].keys - by_root["A"].keys[0], a - a[0])
    assert np.array_equal(by_root["B"].keys - by_root["B"].keys[0], b - b[0])
    # a strip: the loop's bytes per iteration x 8 iterations (64 x 32 fp16 = 4 KB per step)
    assert by_root["A"].nbytes == by_root["B"].nbytes == 64 * 32 * 2 * 8


def test_grouped_order_reads_fewer_columns_per_wave(_cache):
    # waves of 12 CTAs: row-major covers 2 tile rows x all 6 columns; GROUP_M=4 covers 4 rows x 3
    row = _strips(1).revisits(12)
    grp = _strips(4).revisits(12)
    assert (row.distinct, grp.distinct) == ((8, 6), (8, 6))
    assert [s.size for s in row.streamed] == [0, 18]      # each B column again in waves 1-3
    # GROUP_M=4: waves 0-1 = rows 0-3 x columns 0-2 then 3-5; waves 2-3 = rows 4-7 the same
    assert [s.size for s in grp.streamed] == [8, 6]       # each A row once more, each B column once more
    # the pointers advance one 32-deep K step an iteration, but no two strips share a tile: kept whole
    assert {x.root: x.advance for x in _strips(1).strips} == {"A": BK * 2, "B": BK * N * 2}


def test_a_gathered_operand_has_no_strip(_cache):
    s = _strips(1, gather=True)
    assert [x.root for x in s.strips] == ["B"]            # A's rows come from a load: not traced


@triton.jit
def persistent_gemm_kernel(A, B, C, M, N, K, stride_am, stride_bk, stride_cm,
                           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                           GROUP_M: tl.constexpr):
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    per_group = GROUP_M * tiles_n
    for tile in range(tl.program_id(0), tiles_m * tiles_n, tl.num_programs(0)):
        first_m = (tile // per_group) * GROUP_M
        rows_in_group = tl.minimum(tiles_m - first_m, GROUP_M)
        tile_m = first_m + (tile % per_group) % rows_in_group
        tile_n = (tile % per_group) // rows_in_group
        rm = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
        rn = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
        rk = tl.arange(0, BLOCK_K)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for kt in range(0, tl.cdiv(K, BLOCK_K)):
            a = tl.load(A + rm[:, None] * stride_am + (kt * BLOCK_K + rk)[None, :])
            b = tl.load(B + (kt * BLOCK_K + rk)[:, None] * stride_bk + rn[None, :])
            acc += tl.dot(a, b)
        tl.store(C + rm[:, None] * stride_cm + rn[None, :], acc.to(tl.float16))


def _persistent(group_m: int, programs: int) -> T.Strips | None:
    from occmodel import pipeline as P
    from occmodel.compile import compile_kernel
    sig = {k: v for k, v in SIG.items() if k != "IDX"}
    res = compile_kernel(persistent_gemm_kernel, sig, {"BLOCK_M": BM, "BLOCK_N": BN, "BLOCK_K": BK, "GROUP_M": group_m},
                         arch="sm_90", num_warps=4, num_stages=3, keep_ir=True)
    assert res.ok, res.message
    args = {"M": M, "N": N, "K": K, "stride_am": K, "stride_bk": N, "stride_cm": N}
    return T.strips(res.ttgir, P.analyze(res), args, (programs,), 99)


@pytest.mark.parametrize("group_m", [1, 4])
def test_a_persistent_kernels_trips_are_virtual_ctas(_cache, group_m):
    # 10 programs walk the 48 tiles: program p takes tiles p, p + 10, ...: 5 trips (p < 8) or 4
    s = _persistent(group_m, 10)
    by_root = {x.root: x for x in s.strips}
    a, b = _expected(group_m)                      # tile t's offsets, as for the one-tile-per-CTA kernel
    tiles = s.trip * 10 + s.pid
    assert sorted(tiles.tolist()) == list(range(48))
    assert np.array_equal(by_root["A"].keys - by_root["A"].keys[0], a[tiles] - a[tiles[0]])
    assert np.array_equal(by_root["B"].keys - by_root["B"].keys[0], b[tiles] - b[tiles[0]])
    # a strip: bytes per K step x the main loop's own 8 trips (not the 99 iterations given)
    assert by_root["A"].nbytes == 64 * 32 * 2 * 8
    # trip j of every program is wave j (10 programs fit in one wave of 12) ...
    assert np.array_equal(s.waves(12), s.trip)
    # ... but in waves of 4 CTAs, programs 4-7 start only after programs 0-3 walked all their tiles
    w = s.waves(4)
    assert w[s.pid < 4].max() < w[(s.pid >= 4) & (s.pid < 8)].min()


def test_a_persistent_kernel_replays_like_its_tile_order(_cache):
    # 12 programs = one wave of 12 per trip: the same waves as the one-tile-per-CTA launch in waves of 12
    # (compared in bytes, as rank charges them: a strip cut into tiles charges the same)
    def charged(rv):
        """Per strip kind: distinct bytes, and each re-read's streamed bytes weighted by its bytes."""
        out = []
        for b, d, st in zip(rv.nbytes, rv.distinct, rv.streamed):
            w: dict[float, float] = {}
            for x in st.tolist():
                w[x] = w.get(x, 0.0) + b
            out.append((d * b, sorted(w.items())))
        return out

    for g in (1, 4):
        rv, ref = _persistent(g, 12).revisits(12), _strips(g).revisits(12)
        assert charged(rv) == charged(ref)


def test_an_unplaceable_grid_gives_no_strips():
    text = "tt.func public @k(%A: !tt.ptr<f16>) {\n %p = tt.get_program_id y : i32\n scf.for %i = %a to %b step %c {\n }\n}\n"

    class Rep:
        loops = (type("L", (), {"parent": -1})(),)
        main = loops[0]

    assert T.strips(text, Rep(), {}, (100,), 4) is None   # reads program_id(1), grid known only as a count


@pytest.fixture(scope="module")
def _cache(shared_cache):
    return shared_cache


# ------------------------------------- a gather through index data the launcher gives
@triton.jit
def expert_gemm_kernel(A, W, C, EXPERT_IDS, N, K, stride_am, stride_we, stride_wk, stride_cm,
                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """A MoE block GEMM: row block m multiplies by the weight of expert EXPERT_IDS[m] (a scalar load)."""
    tiles_n = tl.cdiv(N, BLOCK_N)
    tile_m = tl.program_id(0) // tiles_n
    tile_n = tl.program_id(0) % tiles_n
    expert = tl.load(EXPERT_IDS + tile_m).to(tl.int64)
    rm = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = A + rm[:, None] * stride_am + rk[None, :]
    w_ptrs = W + expert * stride_we + rk[:, None] * stride_wk + rn[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for _ in range(0, tl.cdiv(K, BLOCK_K)):
        acc += tl.dot(tl.load(a_ptrs), tl.load(w_ptrs))
        a_ptrs += BLOCK_K
        w_ptrs += BLOCK_K * stride_wk
    tl.store(C + rm[:, None] * stride_cm + rn[None, :], acc.to(tl.float16))


EXPERT_SIG = {"A": "*fp16:16", "W": "*fp16:16", "C": "*fp16:16", "EXPERT_IDS": "*i32:16", "N": "i32:16",
              "K": "i32:16", "stride_am": "i32:16", "stride_we": "i32:16", "stride_wk": "i32:16", "stride_cm": "i32:16"}
EN, EK = 256, 128                       # 4 column tiles of 64, 4 K steps of 32; experts [E, K, N]


def _expert_strips(data, live=None) -> T.Strips | None:
    from occmodel import pipeline as P
    from occmodel.compile import compile_kernel
    res = compile_kernel(expert_gemm_kernel, EXPERT_SIG, {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32},
                         arch="sm_90", num_warps=4, num_stages=3, keep_ir=True)
    assert res.ok, res.message
    args = {"N": EN, "K": EK, "stride_am": EK, "stride_we": EK * EN, "stride_wk": EN, "stride_cm": EN}
    return T.strips(res.ttgir, P.analyze(res), args, (6 * 4,), EK // 32, data, live)


def test_expert_ids_given_as_data_make_the_weight_strips(_cache):
    # 6 row blocks routed to experts 0, 0, 0, 1, 1, 2: blocks of one expert stream the same weight strips
    s = _expert_strips({"EXPERT_IDS": np.array([0, 0, 0, 1, 1, 2])})
    w = next(x for x in s.strips if x.root == "W")
    assert len(w.keys) == 24 and len(np.unique(w.keys)) == 3 * 4          # 3 experts x 4 column tiles
    tile_m, tile_n = np.arange(24) // 4, np.arange(24) % 4
    expert = np.array([0, 0, 0, 1, 1, 2])[tile_m]
    # bytes (fp16), the tile `ahead` iterations on (the pipelined loop's shift, the same for every CTA)
    assert np.array_equal(w.keys - w.keys[0], expert * EK * EN * 2 + tile_n * 64 * 2)
    assert s.distinct_bytes()["W"] == 12 * 64 * EK * 2                        # each strip: BLOCK_N x K fp16
    # without the data the expert is unknown: no weight strip (A's rows are still program-id arithmetic)
    assert [x.root for x in _expert_strips(None).strips] == ["A"]
    # an index past the tensor's end: unknown, not a wrong strip
    assert [x.root for x in _expert_strips({"EXPERT_IDS": np.array([0, 0, 0])}).strips] == ["A"]


def test_ctas_that_return_at_once_take_no_strip_and_no_wave_place(_cache):
    live = [m < 4 for m in np.arange(24) // 4]                               # blocks 4-5 are padding
    s = _expert_strips({"EXPERT_IDS": np.array([0, 0, 0, 1, -1, -1])}, live)
    w = next(x for x in s.strips if x.root == "W")
    assert len(w.keys) == 16 and len(np.unique(w.keys)) == 2 * 4            # experts 0 and 1 only
    assert list(s.waves(8)) == [0] * 8 + [1] * 8                              # 16 live CTAs fill 2 waves of 8


def test_a_sliding_window_attention_shares_its_neighbours_key_tiles(_cache):
    """examples/sliding_window_attn.py at Mistral's 32k prefill (window 4096), 128 x 64 tiles, compiled
    for sm_90: each CTA's K and V pointers advance 64 keys x 256 B an iteration (its scf.yield), and
    neighbouring query blocks' windows share all but two of their ~64 key tiles. Cut into tiles, a wave's
    footprint is the union of its windows (~21k keys of one K/V head, ~10 MB) instead of 132 disjoint
    windows (~265 MB): the re-reads of the next query-head group find them in L2."""
    from test_rank import _study_module
    from occmodel import evidence as E
    from occmodel import pipeline as P
    from occmodel.spec import load_spec
    m = _study_module()
    pt = {"B": 1, "S": 32768, "H_q": 32, "H_kv": 8, "D": 128, "WINDOW": 4096, "dtype": "bf16"}
    kernel = m.point_kernel("sliding_window_attn", pt)
    cfg = kernel.resolve({"BLOCK_M": 128, "BLOCK_N": 64, "num_warps": 8, "num_stages": 3})
    ev = E.gather(kernel, load_spec("sm_90"), [cfg], compile=True, progress=False)[0]
    s = R.operand_strips(kernel, cfg, pt, ev, P.analyze(ev.result))
    by_root = {x.root: x for x in s.strips}
    assert {"K", "V"} <= set(by_root)
    k = by_root["K"]
    assert k.advance == 64 * 8 * 128 * 2                 # BLOCK_N keys x stride_kt (8 heads x 128 dims) x 2 B
    assert k._overlap()
    keys, _, tile = k.tiles()
    # over the launch: 8 K heads x 512 key tiles of 16 KB, against 2,048 distinct 1 MB windows
    assert len(np.unique(keys)) * tile < 0.1 * len(np.unique(k.keys)) * k.nbytes


@triton.jit
def window_rows_kernel(X, Y, W, D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    """Each CTA sums the rows of X in its trailing window [m0 - W, m0 + BM), BN rows an iteration; the
    pointer is recomputed from the loop index each iteration (no carried pointer)."""
    pid = tl.program_id(0)
    m0 = pid * BM
    acc = tl.zeros([BN, D], dtype=tl.float32)
    for s in range(tl.maximum(m0 - W, 0), m0 + BM, BN):
        rows = s + tl.arange(0, BN)
        acc += tl.load(X + rows[:, None] * D + tl.arange(0, D)[None, :])
    tl.store(Y + pid * BN * D + tl.arange(0, BN)[:, None] * D + tl.arange(0, D)[None, :], acc)


def test_a_pointer_recomputed_from_the_loop_index_advances_with_it(_cache):
    """No scf.yield moves the pointer here: the walk takes the loop one step on and reads the difference
    (BN rows x D x 4 B). Neighbouring CTAs' windows (W = 512 rows, BM = 64) overlap: cut into tiles."""
    from occmodel import pipeline as P
    from occmodel.compile import compile_kernel
    res = compile_kernel(window_rows_kernel, {"X": "*fp32:16", "Y": "*fp32:16", "W": "i32:16"},
                         {"D": 64, "BM": 64, "BN": 32}, arch="sm_90", num_warps=4, num_stages=1, keep_ir=True)
    assert res.ok, res.message
    s = T.strips(res.ttgir, P.analyze(res), {"W": 512}, (64,), 18)
    x = {v.root: v for v in s.strips}["X"]
    assert x.advance == 32 * 64 * 4 and x._overlap()
    keys, _, tile = x.tiles()
    assert tile == 32 * 64 * 4
    # 64 windows of up to 18 tiles of 32 rows over 4,096 rows: at most 128 distinct tiles
    assert len(np.unique(keys)) <= 4096 // 32
