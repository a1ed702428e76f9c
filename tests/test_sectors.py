"""The 32-byte sectors a main-loop iteration moves (occmodel.sectors), on real compiles: a tile read
along its rows uses every byte of each sector; the same tile read across 2-element columns of a
row-major matrix pulls a sector for every 4 useful bytes; a gather through loaded indices cannot be
counted. And the round-22 kernel that showed the effect: bilinear_resize at NCHW (measured 7.5x slower
at BLOCK_C 128 than at 8, reports/h200/rank_study_round22_h100.json)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

triton = pytest.importorskip("triton")
import triton.language as tl  # noqa: E402

from occmodel.compile import compile_kernel  # noqa: E402
from occmodel.pipeline import analyze  # noqa: E402
from occmodel.sectors import SECTOR, StoreLines, instruction_ids, store_lines, traffic  # noqa: E402


@triton.jit
def tile_sum(X, Y, M, N, stride_m, stride_n, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """Y[m] = sum_n X[m, n] over a [BLOCK_M, BLOCK_N] tile a trip, any strides."""
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    acc = tl.zeros([BLOCK_M], tl.float32)
    for n0 in range(0, N, BLOCK_N):
        cols = n0 + tl.arange(0, BLOCK_N)
        x = tl.load(X + rows[:, None] * stride_m + cols[None, :] * stride_n, mask=cols[None, :] < N, other=0.0)
        acc += tl.sum(x.to(tl.float32), 1)
    tl.store(Y + rows, acc, mask=rows < M)


@triton.jit
def row_gather(X, IDX, Y, N, BLOCK_N: tl.constexpr):
    """Y[i, :] = X[IDX[i], :], N columns BLOCK_N at a time."""
    i = tl.program_id(0)
    r = tl.load(IDX + i)
    for n0 in range(0, N, BLOCK_N):
        cols = n0 + tl.arange(0, BLOCK_N)
        tl.store(Y + i * N + cols, tl.load(X + r * N + cols))


@triton.jit
def row_pieces(X, IDX, OUT, n_rows, WIDTH: tl.constexpr, PIECE: tl.constexpr, BLOCK: tl.constexpr,
               PIECE_MAJOR: tl.constexpr):
    """OUT[r, :] (WIDTH fp16) = X[IDX[c]] + column, PIECE columns a store. PIECE_MAJOR 1: the piece index is
    the grid's outer one, a program writes one piece of each of its rows (the rest of a row comes from
    programs a whole row sweep later); 2: the inner one (the next program writes the next piece); 0: a
    program walks its rows' pieces in its loop."""
    pid = tl.program_id(0)
    n_blocks = tl.cdiv(n_rows, BLOCK)
    if PIECE_MAJOR == 1:
        blk, c0, c_hi = pid % n_blocks, pid // n_blocks, pid // n_blocks + 1
    elif PIECE_MAJOR == 2:
        blk, c0, c_hi = pid // (WIDTH // PIECE), pid % (WIDTH // PIECE), pid % (WIDTH // PIECE) + 1
    else:
        blk, c0, c_hi = pid, 0, WIDTH // PIECE
    rows = blk * BLOCK + tl.arange(0, BLOCK)
    for c in range(c0, c_hi):
        cols = c * PIECE + tl.arange(0, PIECE)
        x = tl.load(X + tl.load(IDX + rows * 0 + c))          # a gather: the walk leaves loads out
        tl.store(OUT + rows[:, None] * WIDTH + cols[None, :], x[:, None] + cols[None, :].to(tl.float16),
                 mask=rows[:, None] < n_rows)


@triton.jit
def flat_pieces(X, Y, n_rows, PIECE: tl.constexpr, BLOCK: tl.constexpr):
    """Y = 2 X over [n_rows, 128] fp16, one [BLOCK, PIECE] tile a program and no loop; the piece index is the
    grid's outer one (the rest of a row comes a row sweep later)."""
    pid = tl.program_id(0)
    n_blocks = tl.cdiv(n_rows, BLOCK)
    rows = (pid % n_blocks) * BLOCK + tl.arange(0, BLOCK)
    cols = (pid // n_blocks) * PIECE + tl.arange(0, PIECE)
    off = rows[:, None] * 128 + cols[None, :]
    tl.store(Y + off, tl.load(X + off, mask=rows[:, None] < n_rows) * 2, mask=rows[:, None] < n_rows)


@triton.jit
def lane_gather(X, IDX, Y, n, BLOCK: tl.constexpr):
    """Y[i] = X[IDX[i]] over the program's n elements, BLOCK a trip: each lane's address is data."""
    base = tl.program_id(0) * n
    for i0 in range(0, n, BLOCK):
        offs = base + i0 + tl.arange(0, BLOCK)
        tl.store(Y + offs, tl.load(X + tl.load(IDX + offs)))


@triton.jit
def lane_scatter_add(X, IDX, Y, n, BLOCK: tl.constexpr):
    """Y[IDX[i]] += X[i] (fp32 atomics) over the program's n elements, BLOCK a trip."""
    base = tl.program_id(0) * n
    for i0 in range(0, n, BLOCK):
        offs = base + i0 + tl.arange(0, BLOCK)
        tl.atomic_add(Y + tl.load(IDX + offs), tl.load(X + offs), sem="relaxed")


TILE_SIG = {"X": "*fp16", "Y": "*fp32", "M": "i32", "N": "i32", "stride_m": "i32", "stride_n": "i32"}


def _traffic(fn, sig, consts, args, grid, warps=4, data=None):
    res = compile_kernel(fn, sig, consts, arch="sm_90", num_warps=warps, num_stages=1, keep_ir=True)
    assert res.status == "ok", res.message
    return traffic(res.ttgir, analyze(res), args, grid, data=data)


def test_a_row_major_tile_uses_every_sector_byte():
    # 32 rows x 64 fp16 = 128 contiguous bytes a row: 4 full sectors a row, nothing wasted
    tr = _traffic(tile_sum, TILE_SIG, {"BLOCK_M": 32, "BLOCK_N": 64},
                  {"M": 4096, "N": 4096, "stride_m": 4096, "stride_n": 1}, (128,))
    assert tr.load_bytes == 32 * 64 * 2 and tr.load_sectors == 32 * 64 * 2 / SECTOR
    assert tr.store_sectors == 0 and tr.efficiency == 1.0      # the store is after the loop
    assert tr.request_bytes == tr.sector_bytes == tr.load_bytes      # 32 whole lines
    assert tr.waste_bytes == 0                                        # term (c) charges the tile alone


def test_narrow_columns_of_a_row_major_matrix_waste_sectors():
    # the same sum over X's transpose: a trip reads 2 consecutive elements (4 B) of 64 rows 8 KB apart
    tr = _traffic(tile_sum, TILE_SIG, {"BLOCK_M": 2, "BLOCK_N": 64},
                  {"M": 4096, "N": 4096, "stride_m": 1, "stride_n": 4096}, (2048,))
    assert tr.load_bytes == 2 * 64 * 2 and tr.load_sectors == 64 and tr.load_lines == 64
    assert tr.efficiency == pytest.approx(4 / 32)
    # each sector is its own L2 request, which costs a whole line's time
    assert tr.request_bytes == 64 * 128 == 4 * tr.sector_bytes
    assert tr.waste_bytes == 64 * 128 - 2 * 64 * 2                   # what term (c) adds to the tile


def test_masked_lanes_move_nothing():
    # N = 40 < BLOCK_N: the first trip reads 40 of 64 columns (80 B a row: 3 sectors)
    tr = _traffic(tile_sum, TILE_SIG, {"BLOCK_M": 32, "BLOCK_N": 64},
                  {"M": 4096, "N": 40, "stride_m": 40, "stride_n": 1}, (128,))
    assert tr.load_bytes == 32 * 40 * 2


def test_instruction_ids_group_what_one_warp_instruction_moves():
    # [4, 64] fp16, 2 x 8 elements a thread along dim 1 (16 B: one vector), 4 x 8 lanes, 1 warp
    ids = instruction_ids((4, 64), ((1, 8), (4, 8), (1, 1), (1, 0)), 2)
    assert len(set(ids.ravel())) == 1                   # one instruction covers the whole tile
    # the same tile with 8 elements of 4 bytes: 32 B a thread -> two 16-byte vectors
    assert len(set(instruction_ids((4, 64), ((1, 8), (4, 8), (1, 1), (1, 0)), 4).ravel())) == 2
    # [256, 8], 32 lanes down dim 0, 8 warps: each warp's 8 channels are 8 instructions
    ids = instruction_ids((256, 8), ((1, 1), (32, 1), (8, 1), (0, 1)), 2)
    assert len(set(ids.ravel())) == 64 and len(set(ids[:32, 0])) == 1 and ids[0, 0] != ids[32, 0]


def test_a_gather_through_loaded_indices_is_not_counted():
    sig = {"X": "*fp16", "IDX": "*i32", "Y": "*fp16", "N": "i32"}
    assert _traffic(row_gather, sig, {"BLOCK_N": 256}, {"N": 4096}, (1024,)) is None


def test_a_gather_through_index_data_is_counted_from_the_indices():
    """Given the index tensor's values (what rank takes from example_args' CPU tensors), the gather's lanes
    have addresses: ids in order read X's lines whole; ids 32 elements apart put every lane on its own
    line; the same kernel without the data is not counted at all."""
    sig = {"X": "*fp32", "IDX": "*i32", "Y": "*fp32", "n": "i32"}
    n, block = 1024, 256
    count = lambda ids: _traffic(lane_gather, sig, {"BLOCK": block}, {"n": n}, (64,),
                                 data={"IDX": ids} if ids is not None else None)
    assert count(None) is None
    in_order = count(np.arange(64 * n))
    assert in_order.load_lines == 2 * block * 4 / 128 and in_order.waste_bytes == 0   # IDX's and X's lines
    apart = count(np.arange(64 * n) * 32)
    assert apart.load_lines == block * 4 / 128 + block          # IDX whole, then a line a lane of X
    assert apart.waste_bytes == block * (128 - 4)


def test_a_scatter_of_atomics_counts_its_lines_per_warp_instruction():
    """Atomics count as stores do (each warp instruction's lines a request; GPU_NOTES 38 measured them at
    about a store's cost): ids in order add into whole lines; ids 32 apart send each lane's add to its own
    line. Without the ids the scatter's addresses are unknown and nothing is counted."""
    sig = {"X": "*fp32", "IDX": "*i32", "Y": "*fp32", "n": "i32"}
    n, block = 1024, 256
    count = lambda ids: _traffic(lane_scatter_add, sig, {"BLOCK": block}, {"n": n}, (64,),
                                 data={"IDX": ids} if ids is not None else None)
    assert count(None) is None
    in_order, apart = count(np.arange(64 * n)), count(np.arange(64 * n) * 32)
    assert in_order.store_bytes == apart.store_bytes == block * 4
    assert in_order.store_requests == block * 4 / 128 and in_order.waste_bytes == 0
    assert apart.store_requests == block and apart.waste_bytes == block * (128 - 4)


@triton.jit
def row_scatter_add(G, IDX, W, D, BLOCK_T: tl.constexpr, BLOCK_D: tl.constexpr):
    """W[IDX[t], :] += G[t, :] for a [BLOCK_T, BLOCK_D] tile a program, no loop (Liger's embedding backward)."""
    ts = tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)
    cs = tl.program_id(1) * BLOCK_D + tl.arange(0, BLOCK_D)
    ids = tl.load(IDX + ts)
    g = tl.load(G + ts[:, None] * D + cs[None, :])
    tl.atomic_add(W + ids[:, None] * D + cs[None, :], g)


def test_the_atomics_line_requests_are_counted_per_target_and_the_pipeline_names_the_target():
    """sectors.atomic_lines: each warp instruction's distinct lines, per CTA per iteration, per argument the
    atomics update (what rank.atomic_fill_bytes caps a target's read-back with) -- a loop-less kernel's body
    as the one iteration; without the ids the addresses are unknown (None). PipelineReport.atomic_roots names
    the target either way; a kernel without atomics has none."""
    from occmodel.sectors import atomic_lines
    sig = {"X": "*fp32", "IDX": "*i32", "Y": "*fp32", "n": "i32"}
    res = compile_kernel(lane_scatter_add, sig, {"BLOCK": 256}, arch="sm_90", num_warps=4, num_stages=1, keep_ir=True)
    rep = analyze(res)
    assert rep.atomic_roots == ("Y",)
    assert atomic_lines(res.ttgir, rep, {"n": 1024}, (64,), data={"IDX": np.arange(64 * 1024) * 32}) == {"Y": 256.0}
    assert atomic_lines(res.ttgir, rep, {"n": 1024}, (64,), data={"IDX": np.arange(64 * 1024)}) == {"Y": 8.0}
    assert atomic_lines(res.ttgir, rep, {"n": 1024}, (64,)) is None
    rows = compile_kernel(row_scatter_add, {"G": "*fp32", "IDX": "*i64", "W": "*fp32", "D": "i32"},
                          {"BLOCK_T": 32, "BLOCK_D": 128}, arch="sm_90", num_warps=4, num_stages=1, keep_ir=True)
    rrep = analyze(rows)
    assert rrep.main is None and rrep.atomic_roots == ("W",)
    # 32 token rows of 128 fp32 columns: 4 lines a row, whatever rows the ids pick
    assert atomic_lines(rows.ttgir, rrep, {"D": 4096}, (512, 32), data={"IDX": np.arange(16384) * 7 % 1000}) == {"W": 128.0}
    plain = compile_kernel(tile_sum, TILE_SIG, {"BLOCK_M": 64, "BLOCK_N": 64}, arch="sm_90", num_warps=4, num_stages=1,
                           keep_ir=True)
    assert analyze(plain).atomic_roots == ()


def test_atomics_into_a_target_larger_than_the_l2_read_it_back_and_write_it_again():
    """rank.atomic_fill_bytes: a 354 MB target the launch zero-filled (maxpool_bwd_scatter's NCHW grad_in)
    is read back and written again, all of it, when the atomics touch every line; under 0.2 x the L2 it
    stays in the L2 and costs nothing; atomics that touch fewer lines than the target spans (counted
    requests x 128 B over the launch's CTA-iterations) cost only those lines; a target no kernel of the
    launch wrote (an accumulation into the caller's gradient) is the launcher's to count."""
    from occmodel import rank as R

    l2 = 50 * 2**20
    big = 354e6
    assert R.atomic_fill_bytes([(big, None)], 10_000, l2, big) == 2 * big          # lines not counted: all of it
    assert R.atomic_fill_bytes([(big, 64.0)], 100_000, l2, big) == 2 * big         # 819 MB of requests: every line
    assert R.atomic_fill_bytes([(big, 1.0)], 100_000, l2, big) == 2 * 128 * 100_000  # 12.8 MB of lines touched
    assert R.atomic_fill_bytes([(0.1 * l2, None)], 10_000, l2, big) == 0.0
    assert R.atomic_fill_bytes([(big, None)], 10_000, l2, 0.0) == 0.0               # not written by the launch
    assert R.atomic_fill_bytes([], 10_000, l2, big) == 0.0


def test_bilinear_nchw_gathers_waste_sectors_and_a_pixel_major_tile_does_not():
    """Round 22's bilinear_resize: NCHW fp16 (DeepLabV3+, 49 x 49 -> 193 x 193, a float scale) at BLOCK_C
    128 / 4 elements a thread / 2 warps is a 2-pixel x 128-channel tile: each channel plane gives 2 useful
    bytes of each sector. At BLOCK_C 8 / 8 / 8 warps the warp runs along 256 neighbouring pixels."""
    from occmodel.evidence import gather
    from occmodel.rank import l2_waste_bytes
    from occmodel.source import load_source
    from occmodel.spec import load_spec
    path = str(Path(__file__).resolve().parent.parent / "examples" / "bilinear_resize.py")
    spec_ = importlib.util.spec_from_file_location("bilinear_resize", path)
    mod = importlib.util.module_from_spec(spec_)
    spec_.loader.exec_module(mod)
    kernel = load_source(f"{path}:_kernel", launcher=path).at_point(mod.POINTS[1])
    wide, narrow = (kernel.resolve({"BLOCK_C": c, "ELEMS_PER_THREAD": e, "num_warps": w, "num_stages": 1})
                    for c, e, w in ((128, 4, 2), (8, 8, 8)))
    assert set(kernel.float_args(wide, mod.POINTS[1])) == {"scale_h", "scale_w"}
    evs = gather(kernel, load_spec("sm_90"), [wide, narrow], compile=True, progress=False)
    tr = [traffic(ev.result.ttgir, ev.pipeline, kernel.scalar_args(c, mod.POINTS[1]),
                  kernel.launch_grid(c, mod.POINTS[1]), kernel.float_args(c, mod.POINTS[1]))
          for ev, c in zip(evs, (wide, narrow))]
    assert tr[0].efficiency < 0.15 and tr[1].efficiency > 0.85
    # the stores' L2 requests, each warp instruction's lines, against Nsight Compute's
    # lts__t_requests_srcunit_tex_op_write per CTA-iteration (H100, reports/GPU_NOTES.md 31): 130 and 86.2
    assert tr[0].store_requests == pytest.approx(77_467_598 / (18625 * 16 * 2), rel=0.03)
    assert tr[1].store_requests == pytest.approx(6_437_931 / (146 * 16 * 32), rel=0.03)
    assert tr[1].store_requests > 2 * tr[1].store_lines      # 8 warps write parts of the same lines
    # what rank's term (c) adds to the tile's bytes per iteration: the lines' bytes not asked for
    assert l2_waste_bytes(kernel, wide, mod.POINTS[1], evs[0], evs[0].pipeline) == tr[0].waste_bytes > 10_000


def _store_lines(piece: int, piece_major: int, rows: int = 1 << 16, block: int = 64):
    res = compile_kernel(row_pieces, {"X": "*fp16", "IDX": "*i32", "OUT": "*fp16", "n_rows": "i32"},
                         {"WIDTH": 128, "PIECE": piece, "BLOCK": block, "PIECE_MAJOR": piece_major},
                         arch="sm_90", num_warps=4, num_stages=1, keep_ir=True)
    assert res.status == "ok", res.message
    grid = rows // block * (128 // piece if piece_major else 1)
    return store_lines(res.ttgir, analyze(res), {"n_rows": rows}, (grid,))


@pytest.mark.parametrize("piece_major", [0, 1])
def test_a_store_of_16_bytes_of_each_256_byte_row_fills_an_eighth_of_each_line(piece_major):
    # 64 rows x 8 fp16 a store: 16 B of each row's first line; the neighbouring program writes other rows
    sl = _store_lines(8, piece_major)
    assert sl.asked == 64 * 16
    assert sl.fill == sl.fill_near == pytest.approx(16 / 128)
    # the rest of each line: 1 to 7 row sweeps (1024 programs each, of 16384) away with PIECE_MAJOR 1 -- the
    # farthest power of two that adds to it, 4096; never by another program with 0
    assert sl.reach == (4096 / 16384 if piece_major else 1.0)
    # the loop walks on along the same rows only when a program owns its rows' every piece
    assert sl.walks == (piece_major == 0)


def test_ctas_past_the_data_store_nothing_and_leave_the_fill_of_the_others():
    # twice the programs the rows need: the second half's stores are all masked off. Their bytes average into a
    # CTA's `asked` (half of 64 x 16), but not into the fill of the lines the first half writes
    res = compile_kernel(row_pieces, {"X": "*fp16", "IDX": "*i32", "OUT": "*fp16", "n_rows": "i32"},
                         {"WIDTH": 128, "PIECE": 8, "BLOCK": 64, "PIECE_MAJOR": 0},
                         arch="sm_90", num_warps=4, num_stages=1, keep_ir=True)
    sl = store_lines(res.ttgir, analyze(res), {"n_rows": 1 << 16}, (2 * (1 << 16) // 64,))
    assert sl.asked == pytest.approx(64 * 16 / 2, rel=0.1)
    assert sl.fill == sl.fill_near == pytest.approx(16 / 128) and sl.reach == 1.0 and sl.walks


def test_partial_lines_cost_dram_only_when_the_l2_lets_them_go_before_the_rest_arrives():
    """rank.partial_store_bytes: 16 of 128 bytes a line, the rest written a launch later: once the launch
    streams more than 1.3 x the L2 between the two writes, the line costs its whole 128 B twice over --
    7 x the asked bytes more; under 0.2 x the L2 it stays whole in the L2 and costs nothing more."""
    from occmodel import rank as R

    l2 = 50 * 2**20
    far = StoreLines(asked=1024, fill=0.125, fill_near=0.125, reach=1.0, walks=False)
    assert R.partial_store_bytes(far, 4096, 2000, 2 * l2, l2) == 1024 * 7
    assert R.partial_store_bytes(far, 4096, 2000, 0.1 * l2, l2) == 0.0
    # completed a tenth of the launch later: a tenth of its bytes pass in between
    soon = StoreLines(asked=1024, fill=0.125, fill_near=0.125, reach=0.1, walks=False)
    assert R.partial_store_bytes(soon, 4096, 2000, 2 * l2, l2) == 0.0
    # walked along by its own CTA: 8 iterations of 2000 CTAs x 5 KB (78 MB) pass before the line is whole
    near = StoreLines(asked=1024, fill=0.125, fill_near=0.125, reach=1.0, walks=True)
    assert R.partial_store_bytes(near, 4096, 2000, 2 * l2, l2) == 1024 * 7 * R.reread_miss(2000 * 5120 * 8, l2)
    assert R.partial_store_bytes(near, 4096, 100, 2 * l2, l2) == 0.0     # 4 MB: the L2 holds it
    whole = StoreLines(asked=1024, fill=0.5, fill_near=1.0, reach=0.001, walks=False)
    assert R.partial_store_bytes(whole, 4096, 2000, 2 * l2, l2) == 0.0


def test_whole_line_pieces_fill_their_lines():
    sl = _store_lines(64, 1)                   # 64 fp16 = 128 B: a line a row a store
    assert sl.fill == sl.fill_near == 1.0 and sl.reach == 0.0


def test_a_neighbour_writing_the_rest_of_the_rows_at_once_fills_the_lines_beside_it():
    # PIECE_MAJOR 2: the piece index is the grid's inner one, so programs pid and pid + 1 write two 64-byte
    # halves of the same rows' first line together
    sl = _store_lines(32, 2)
    assert sl.fill == pytest.approx(0.5) and sl.fill_near == 1.0 and sl.reach == pytest.approx(1 / 4096) and not sl.walks


def test_a_kernel_without_a_loop_is_one_iteration():
    res = compile_kernel(flat_pieces, {"X": "*fp16", "Y": "*fp16", "n_rows": "i32"}, {"PIECE": 8, "BLOCK": 64},
                         arch="sm_90", num_warps=4, num_stages=1, keep_ir=True)
    rep = analyze(res)
    assert res.status == "ok" and rep.main is None
    sl = store_lines(res.ttgir, rep, {"n_rows": 1 << 16}, ((1 << 16) // 64 * 16,))
    # 16 of each 128-byte line, the other seven pieces 1-7 row sweeps (1024 programs each) away: 4096 the farthest
    # power-of-two multiple of the divisor (1024) that adds to the line, of 16384 programs
    assert sl.fill == sl.fill_near == pytest.approx(16 / 128) and sl.reach == 4096 / 16384 and not sl.walks


def test_a_kernel_without_a_loop_counts_its_body_as_one_iteration():
    """traffic on a loop-less kernel (flat_pieces: one [BLOCK, PIECE] tile a program): the body is the one
    iteration. Pieces of 64 fp16 (128 bytes, whole lines) load whole lines (their stores, two warp
    instructions a line, are two requests each); pieces of 8 (16 bytes of each 256-byte row) make every row's
    load and store a whole line's request for 16 bytes of it."""
    sig = {"X": "*fp16", "Y": "*fp16", "n_rows": "i32"}
    whole = _traffic(flat_pieces, sig, {"PIECE": 64, "BLOCK": 32}, {"n_rows": 4096}, (128 * 2,))
    assert whole is not None and whole.load_bytes == whole.store_bytes == 32 * 64 * 2
    assert whole.load_lines == 32 and whole.store_requests == 64
    assert whole.waste_bytes == 64 * 128 - 32 * 64 * 2
    narrow = _traffic(flat_pieces, sig, {"PIECE": 8, "BLOCK": 32}, {"n_rows": 4096}, (128 * 16,))
    assert narrow.load_lines == 32 and narrow.store_requests == 32
    assert narrow.waste_bytes == 2 * 32 * (128 - 16)


def test_the_l1_looks_up_each_warp_instructions_lines():
    """load_requests: each warp instruction's distinct 128-byte lines, summed (rank's term (h)). With the
    unit stride specialized (i32:1) both Tritons compile tile_sum's loads to one element a lane on 2 x 2
    warps. Row-major 32 x 64 fp16, 32 lanes along a row: an instruction reads half a 128-byte row, so each
    of the 32 lines is looked up twice. Its transpose (2 elements of each of 64 rows 8 KB apart), lanes
    paired down the 2 contiguous elements: an instruction meets 16 lines, each once -- 64 lookups, the 64
    lines."""
    whole = _traffic(tile_sum, dict(TILE_SIG, stride_n="i32:1"), {"BLOCK_M": 32, "BLOCK_N": 64},
                     {"M": 4096, "N": 4096, "stride_m": 4096, "stride_n": 1}, (128,))
    assert whole.load_lines == 32 and whole.load_requests == 64
    narrow = _traffic(tile_sum, dict(TILE_SIG, stride_m="i32:1"), {"BLOCK_M": 2, "BLOCK_N": 64},
                      {"M": 4096, "N": 4096, "stride_m": 1, "stride_n": 4096}, (2048,))
    assert narrow.load_lines == 64 and narrow.load_requests == 64


def test_a_trip_of_several_declared_iterations_shares_its_lookups_and_median_8_rows_look_up_8_lines():
    """Two compiled examples. depthwise_conv2d (round 10) loops over the filter's 7 rows with its 7 columns a
    tl.static_range: one trip holds 7 of the 49 taps it declares (loop_iterations), so term (h)'s lookups of a
    trip are shared over 7 (rank.declared_share). median_filter2d (round 35) at 8 x 128 on 8 warps: its
    clamped taps' byte loads run a warp's lanes down 8 rows (threadsPerWarp [8, 4]), 8 lines each of its 32
    instructions a tap, 9 taps: 2,304 lookups a full CTA, and its store 8 (a row a warp instruction); a tap
    shifted by a column now and then straddles two lines. The same 1,024 pixels as 2 x 128 tiles look up
    3.75x fewer (their taps shifted a column straddle lines more often per pixel). Triton 3.9 lays the same
    loads along the rows (threadsPerWarp [2, 16] or [1, 32]), and the 8-row tile is no longer the costly one."""
    from occmodel.evidence import gather
    from occmodel.rank import declared_share, loop_traffic
    from occmodel.source import load_source
    from occmodel.spec import load_spec

    def example(name):
        path = str(Path(__file__).resolve().parent.parent / "examples" / f"{name}.py")
        spec_ = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec_)
        spec_.loader.exec_module(mod)
        return mod, load_source(f"{path}:_kernel", launcher=path).at_point(mod.POINTS[0])

    mod, kernel = example("depthwise_conv2d")
    cfg = kernel.resolve({"BLOCK_P": 8, "BLOCK_Q": 8, "BLOCK_C": 32, "num_warps": 4, "num_stages": 1})
    ev = gather(kernel, load_spec("sm_90"), [cfg], compile=True, progress=False)[0]
    assert kernel.loop_iterations(cfg, mod.POINTS[0]) == 49
    assert declared_share(kernel, cfg, mod.POINTS[0], ev, ev.pipeline) == pytest.approx(7 / 49)
    mod, kernel = example("median_filter2d")
    tall, flat = (kernel.resolve({"BLOCK_Y": y, "BLOCK_X": 128, "ROWS": r, "num_warps": w, "num_stages": 1})
                  for y, r, w in ((8, 1, 8), (2, 4, 4)))
    evs = gather(kernel, load_spec("sm_90"), [tall, flat], compile=True, progress=False)
    q_tall = loop_traffic(kernel, tall, mod.POINTS[0], evs[0], evs[0].pipeline)[1]
    q_flat = loop_traffic(kernel, flat, mod.POINTS[0], evs[1], evs[1].pipeline)[1]
    if "threadsPerWarp = [8, 4]" in evs[0].result.ttgir:             # triton 3.6.0's layout (round 35's timing)
        assert 2304 + 8 <= q_tall <= 1.02 * (2304 + 8)
        assert 3.5 * (q_flat * 4) < q_tall < 4 * (q_flat * 4)       # 4 tiles of 2 x 128 a CTA
    else:                        # triton 3.9 runs the lanes along the rows: 8 rows cost no more than 4 x 2 rows
        assert q_tall <= q_flat * 4
