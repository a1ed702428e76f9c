"""A single-pass device-wide inclusive prefix sum with decoupled look-back (Merrill & Garland, "Single-pass
Parallel Prefix Scan with Decoupled Look-back", NVIDIA 2016: what CUB's DeviceScan runs, hence torch.cumsum /
torch.masked_select / torch.nonzero on CUDA), a bare @triton.jit kernel + its launcher:

    y[i] = sum_{k <= i} x[k]          x: [N] int32 -> y int64 (offsets), or fp32 -> fp32 (a CDF)

x: [N] int32 or fp32, any stride (a column of a wider table is a strided view); y: [N] int64 for int32 input
(torch.cumsum's promotion: offsets of up to 2^30 int32 counts cannot overflow) or fp32, fresh and contiguous,
or a given 1-D buffer of that dtype with any stride (for fp32 it may be x itself: an in-place scan is safe,
each tile is read before it is written and by its own CTA only). Integer sums are exact; fp32 sums are
accumulated in fp32 (Triton's tree scans within a tile, the look-back's sums across tiles): within the
reassociation bound of any order, and -- as CUB's -- not bit-reproducible from run to run (which
predecessors had published their inclusive prefix changes the order of the adds).

One launch of `_kernel`, one CTA a tile of TILE = ITEMS x 32 x num_warps elements, grid cdiv(N, TILE):
  1. tile id: an atomic add on a global counter (not the program id), so tiles are handed out in the
     order CTAs start running: a CTA only ever waits on tiles owned by CTAs already resident or done,
     which never wait on it -- no deadlock whatever the scheduler does, with any number of CTAs resident.
  2. the tile, as a row-major [32 x num_warps, ITEMS] block: one coalesced load (16-byte vectors when x is
     contiguous; the mask only where TILE does not divide N, EVEN_N), widened to the accumulator (int64 /
     fp32), scanned in registers: tl.cumsum along each row (a few threads' contiguous elements: in-thread
     adds and 1-3 shuffles), the rows' totals (each row's last inclusive element) scanned down the rows
     (shuffles and one cross-warp step through shared memory), the tile's aggregate the last of those.
     (A flat 1-D tl.cumsum over the tile took up to 2x the instructions at the int64 points -- a warp scan
     for every 4-element chunk a thread holds, the scan duplicated in two layouts -- and spilled at 32
     items a thread on 16 warps.)
  3. publish: the tile's status word (one int64: value << 2 | flag, so flag and value are published by
     one 64-bit atomic exchange, relaxed, gpu scope -- no fence, no torn reads): AGGREGATE_AVAILABLE (1)
     with the aggregate, or at once PREFIX_AVAILABLE (2) for tile 0. int64 values keep 62 bits (exact:
     |prefix| <= 2^30 x 2^31); fp32 values their 32 bits, sign-extended.
  4. look-back: the exclusive prefix from the predecessors' status words, LOOKBACK words at once (one
     vector of volatile loads: tiles j - LOOKBACK .. j - 1); while any of them has published nothing (flag
     0: the zero-filled workspace) the same window is read again (spinning, no back-off); once all have
     published, the window's values are summed from its last PREFIX_AVAILABLE word on (that word's
     inclusive prefix plus the aggregates after it) and the look-back stops there, or, with none, all
     LOOKBACK aggregates are added and the window moves LOOKBACK tiles down. Lanes before tile 0 read as
     PREFIX_AVAILABLE 0. Every warp of the CTA looks back on its own: LOOKBACK <= 32 keeps the window's
     reductions inside a warp (redux / shuffles, no barrier in the spin loop -- checked in the PTX of every
     swept config), so warps that saw different states cannot deadlock on a barrier; integer prefixes agree
     exactly, and for fp32 warp 0's value is handed to all warps by one reduction after the loop.
  5. publish PREFIX_AVAILABLE with exclusive + aggregate; store y = row scan + row offset + exclusive.
Under Triton's interpreter the programs run one after another (program 0 first): every predecessor is done,
so each look-back stops at the first word it reads; the tests reach the AGGREGATE_AVAILABLE path by
launching `_kernel` on a workspace whose first tiles were published by hand (aggregates and prefixes mixed).

The secondary kernel: the launcher zero-fills the int64 workspace -- the tiles' status words and, on its
own 128-byte line after them, the tile counter -- with one fill kernel (zero_()) before `_kernel` (CUB's
DeviceScanInitKernel; declared in secondary_kernels). Workspace words: 16 x cdiv(tiles, 16) + 1.

How this differs from the other examples: chunk_cumsum scans each row of a [R, L] tensor inside one CTA
(a carried per-row prefix, no inter-CTA communication); expert_histogram / moe_align count and offset a
few hundred experts. Here one 1-D array of 16-90 M elements is scanned by thousands of CTAs that pass their
prefixes to each other through global memory while running (a dynamic tile id, flag + value status words,
a spinning look-back).

Tunables: ITEMS (4 / 8 / 16: elements a thread, CUB's ITEMS_PER_THREAD), LOOKBACK (1 / 4 / 16 / 32: status
words a look-back step reads at once; CUB reads a warp's 32), num_warps (2 / 4 / 8 / 16); TILE = ITEMS x 32 x
num_warps: 256-8192 elements. num_stages held at 1 (the spin loop is a while loop: Triton does not pipeline
it, and there is no other loop). BASELINE is CUB's sm_60+ scan policy: 256 threads x ~15 items (nominal for
4-byte items), a 32-word look-back window.
On sm_90 every config of the sweep (48) compiles at every point without spills: 24-94 registers under
triton 3.6.0 and 24-82 under 3.9.0 (the most for 16 items a thread on 16 warps at the int64 points), shared
memory 8 B - 16 KiB under both (the int64 tile's layout conversion for the 16-byte stores and the scans'
cross-warp step: 1 KiB a warp at the int64 points, at most 128 B a warp for fp32).
Problem parameters (a workload point): N, dtype ("int32" / "fp32"), data (how make_inputs draws x:
"routing" -- an expert-major [experts, N / experts] 0/1 routing map, topk ones a token; "counts" -- sparse
int32 counts, `density` of them 1..max_count; "probs" -- `rows` softmax rows of N / rows logits, fp32;
"signed" -- uniform in [-scale, scale] (int32) or N(0, 1) (fp32)).
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _pack(v, flag):
    """A status word: the value's bits (int64, or fp32's 32 bits sign-extended) << 2 | flag."""
    if v.dtype == tl.float32:
        bits = v.to(tl.int32, bitcast=True).to(tl.int64)
    else:
        bits = v.to(tl.int64)
    return (bits << 2) | flag


@triton.jit
def _unpack(w, ACC: tl.constexpr):
    """The value of status words w (flag bits shifted out; arithmetic shift keeps the sign)."""
    bits = w >> 2
    if ACC == tl.float32:
        return bits.to(tl.int32).to(tl.float32, bitcast=True)
    else:
        return bits


@triton.jit
def _kernel(X, Y, STATUS, COUNTER, N, stride_x, stride_y,
            ROWS: tl.constexpr, ITEMS: tl.constexpr, LOOKBACK: tl.constexpr, EVEN_N: tl.constexpr):
    ACC: tl.constexpr = Y.dtype.element_ty
    TILE: tl.constexpr = ROWS * ITEMS
    # 1. the tile id, in CTA start order (one thread's atomic, handed to all through shared memory)
    tile = tl.atomic_add(COUNTER, 1, sem="relaxed", scope="gpu").to(tl.int32)
    base = tile.to(tl.int64) * TILE
    rows = tl.arange(0, ROWS)
    cols = tl.arange(0, ITEMS)
    e = rows[:, None] * ITEMS + cols[None, :]                 # the tile as [ROWS, ITEMS], row-major
    x_ptr = X + base * stride_x + e * stride_x
    # 2. the tile, scanned in registers: each row, then the rows' totals
    if EVEN_N:
        x = tl.load(x_ptr, eviction_policy="evict_first")
    else:
        rem = tl.minimum(N - base, TILE).to(tl.int32)
        x = tl.load(x_ptr, mask=e < rem, other=0, eviction_policy="evict_first")
    row_incl = tl.cumsum(x.to(ACC), axis=1)
    row_tot = tl.sum(tl.where(cols[None, :] == ITEMS - 1, row_incl, 0), axis=1)
    row_end = tl.cumsum(row_tot, axis=0)
    agg = tl.sum(tl.where(rows == ROWS - 1, row_end, 0), axis=0)
    # 3. publish the aggregate (tile 0: its inclusive prefix at once)
    tl.atomic_xchg(STATUS + tile, _pack(agg, tl.where(tile == 0, 2, 1)), sem="relaxed", scope="gpu")
    # 4. look back over the predecessors, LOOKBACK status words a step
    win = tl.arange(0, LOOKBACK)
    excl = tl.sum(tl.where(win < 0, agg, 0), axis=0)        # a zero of the accumulator's type
    j = tile
    while j > 0:
        idx = j - LOOKBACK + win
        w = tl.load(STATUS + idx, mask=idx >= 0, other=2, volatile=True)
        flag = w & 3
        ready = tl.min(flag, axis=0) > 0
        last_p = tl.max(tl.where(flag == 2, win, -1), axis=0)
        part = tl.sum(tl.where(win >= last_p, _unpack(w, ACC), 0), axis=0)
        excl += tl.where(ready, part, 0)
        j = tl.where(ready, tl.where(last_p >= 0, 0, j - LOOKBACK), j)
    if ACC == tl.float32:
        excl = tl.sum(tl.where(rows == 0, excl, 0.0), axis=0)    # warp 0's prefix for every warp
    # 5. publish the inclusive prefix; the outputs
    if tile > 0:
        tl.atomic_xchg(STATUS + tile, _pack(excl + agg, 2), sem="relaxed", scope="gpu")
    y = (row_incl + (row_end - row_tot + excl)[:, None]).to(Y.dtype.element_ty)
    y_ptr = Y + base * stride_y + e * stride_y
    if EVEN_N:
        tl.store(y_ptr, y)
    else:
        tl.store(y_ptr, y, mask=e < rem)


# ---------------------------------------------------------------- launcher
ROLE = "held-out-31"
DTYPES = ("int32", "fp32")
DATA = ("routing", "counts", "probs", "signed")
TUNABLES = ("ITEMS", "LOOKBACK", "num_warps", "num_stages")
BASELINE = {"ITEMS": 16, "LOOKBACK": 32, "num_warps": 8, "num_stages": 1}
# the study's sweep: 3 x 4 x 4 x 1 = 48 configs. Tiles of 256-8192 elements (4-16 a thread, 64-512 threads),
# look-back windows of 1-32 status words
SWEEP_AXES = {"ITEMS": [4, 8, 16], "LOOKBACK": [1, 4, 16, 32], "num_warps": [2, 4, 8, 16], "num_stages": [1]}
MAX_N = 2**30               # int32 counts: |prefix| <= 2^30 x 2^31 fits the status word's 62 bits
FILL_BLOCK = 512            # elements a CTA of torch's vectorised fill kernel (128 threads x 4): the zero-fill
LINE_WORDS = 16             # int64 words of a 128-byte line: the counter sits on its own line

# DRAM-bound: x read once, y written once (12 or 8 bytes an element: 0.2-1.1 GB, ~70-360 us on an H100 at
# ~3 TB/s); one add an element.
POINTS = [
    # DeepSeek-V3's MoE token permutation (256 routed experts, top-8) as Megatron-Core's permute runs it:
    # routing_map [tokens, experts] transposed to expert-major [256, 65536] (a 16 x 4096-token
    # micro-batch), contiguous, then masked_select, whose stream compaction scans the 0/1 map (here as
    # int32 -> int64): y[e, t] - 1 is token t's row in the expert-sorted buffer. 16.8 M elements, 8 / 256
    # ones; 201 MB
    {"N": 256 * 65536, "dtype": "int32", "data": "routing", "experts": 256, "topk": 8},
    # a dense-grid counting-sort voxeliser on CenterPoint's Waymo grid (voxel 0.1 x 0.1 x 0.15 m over
    # [-75.2, 75.2]^2 x [-2, 4] m: 1504 x 1504 x 40): the points-per-voxel counts (int32) scanned to int64
    # offsets, each voxel's first point in the voxel-sorted list; ~340 k points of a 2-sweep frame (~170 k
    # a sweep) in 0.15 % of the voxels. 90.5 M elements; 1.09 GB
    {"N": 1504 * 1504 * 40, "dtype": "int32", "data": "counts", "density": 0.0015, "max_count": 4},
    # a sampling CDF over a serving batch's vocabulary rows, flattened: 200 running requests (one of vLLM's
    # CUDA-graph batch sizes) x Llama-3's 128256-token vocabulary, softmax probabilities, fp32 -> fp32 (a
    # row's CDF is the flat CDF minus the row's start: one global searchsorted samples every row). 25.7 M
    # elements (tiles of 4096 and 8192 do not divide it: the masked last tile); 205 MB
    {"N": 200 * 128256, "dtype": "fp32", "data": "probs", "rows": 200},
]


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_num(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _check_point(point) -> dict:
    """The point's fields, checked (defaults: data "signed", experts 256 / topk 8, density 0.01 / max_count
    8, rows 1, scale 1000)."""
    n = point.get("N")
    if not _is_int(n) or not 1 <= n <= MAX_N:
        raise ValueError(f"N={n!r} must be an int from 1 to {MAX_N}")
    dt = point.get("dtype")
    if dt not in DTYPES:
        raise ValueError(f"dtype {dt!r} is not one of {', '.join(DTYPES)}")
    data = point.get("data", "signed")
    if data not in DATA:
        raise ValueError(f"data {data!r} is not one of {', '.join(DATA)}")
    want = {"routing": "int32", "counts": "int32", "probs": "fp32"}.get(data, dt)
    if dt != want:
        raise ValueError(f"data {data!r} is drawn as {want}, not dtype {dt!r}")
    P = {"N": n, "dtype": dt, "data": data}
    if data == "routing":
        e, k = point.get("experts", 256), point.get("topk", 8)
        if not _is_int(e) or e < 1 or n % e:
            raise ValueError(f"experts={e!r} must be a positive int dividing N={n}")
        if not _is_int(k) or not 1 <= k <= e:
            raise ValueError(f"topk={k!r} must be an int from 1 to experts={e}")
        P.update(experts=e, topk=k)
    elif data == "counts":
        d, m = point.get("density", 0.01), point.get("max_count", 8)
        if not _is_num(d) or not 0 <= d <= 1:
            raise ValueError(f"density={d!r} must be a number from 0 to 1")
        if not _is_int(m) or not 1 <= m < 2**31:
            raise ValueError(f"max_count={m!r} must be a positive int32")
        P.update(density=float(d), max_count=m)
    elif data == "probs":
        r = point.get("rows", 1)
        if not _is_int(r) or r < 1 or n % r:
            raise ValueError(f"rows={r!r} must be a positive int dividing N={n}")
        P.update(rows=r)
    else:
        s = point.get("scale", 1000)
        if not _is_int(s) or not 0 <= s < 2**31:
            raise ValueError(f"scale={s!r} must be an int from 0 to 2^31 - 1")
        P.update(scale=s)
    return P


def _check_cfg(cfg) -> None:
    it = cfg["ITEMS"]
    if not _is_int(it) or it < 1 or it > 64 or it & (it - 1):
        raise ValueError(f"ITEMS={it!r} must be a power of two from 1 to 64")
    lb = cfg["LOOKBACK"]
    if not _is_int(lb) or lb < 1 or lb > 32 or lb & (lb - 1):
        raise ValueError(f"LOOKBACK={lb!r} must be a power of two from 1 to 32 (a warp's worth of words: the "
                         f"look-back's reductions stay inside a warp)")
    w = cfg["num_warps"]
    if not _is_int(w) or w not in (1, 2, 4, 8, 16, 32):
        raise ValueError(f"num_warps={w!r} must be a power of two from 1 to 32")
    ns = cfg.get("num_stages", 1)
    if not _is_int(ns) or ns < 1:
        raise ValueError(f"num_stages={ns!r} must be a positive int")


def tile_size(cfg) -> int:
    """Elements a CTA: ITEMS x 32 x num_warps."""
    _check_cfg(cfg)
    return cfg["ITEMS"] * 32 * cfg["num_warps"]


def workspace_words(n: int, cfg) -> int:
    """int64 words of the workspace for n elements: the tiles' status words, then the counter on its own
    128-byte line (16 x cdiv(tiles, 16) + 1)."""
    tiles = triton.cdiv(n, tile_size(cfg))
    return LINE_WORDS * triton.cdiv(tiles, LINE_WORDS) + 1


def _split(ws, n: int, cfg):
    """(status [tiles], counter [1]) views of a workspace of workspace_words(n, cfg) int64 words."""
    tiles = triton.cdiv(n, tile_size(cfg))
    c = LINE_WORDS * triton.cdiv(tiles, LINE_WORDS)
    return ws[:tiles], ws[c:c + 1]


def _kernel_args(x, y, status, counter, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    n = x.shape[0]
    tile = tile_size(cfg)
    return dict(X=x, Y=y, STATUS=status, COUNTER=counter, N=n, stride_x=x.stride(0), stride_y=y.stride(0),
                ROWS=32 * cfg["num_warps"], ITEMS=cfg["ITEMS"], LOOKBACK=cfg["LOOKBACK"],
                EVEN_N=int(n % tile == 0))


def lookback_scan(x, out=None, *, workspace=None, ITEMS: int = 16, LOOKBACK: int = 32, num_warps: int = 8,
                  num_stages: int = 1):
    """The inclusive prefix sum of a 1-D x: int32 -> int64, fp32 -> fp32 (torch.cumsum(x, 0)'s dtypes),
    one pass with decoupled look-back. x any stride, at most 2^30 elements. out None: a fresh contiguous
    [N]; else a 1-D [N] buffer of the output dtype, any stride (fp32: x itself for an in-place scan),
    written and returned. workspace None: allocated; else an int64 tensor of at least
    workspace_words(N, cfg) contiguous words (reused across calls: the status words are left in it). It is
    zero-filled here before every launch (a second kernel). ITEMS, LOOKBACK, num_warps, num_stages: the
    tunables (module doc)."""
    import torch
    cfg = {"ITEMS": ITEMS, "LOOKBACK": LOOKBACK, "num_warps": num_warps, "num_stages": num_stages}
    _check_cfg(cfg)
    if x.dim() != 1:
        raise ValueError(f"expected a 1-d x [N]; got shape {tuple(x.shape)}")
    odt = {torch.int32: torch.int64, torch.float32: torch.float32}.get(x.dtype)
    if odt is None:
        raise ValueError(f"x must be int32 (-> int64 offsets) or fp32 (-> fp32); got {x.dtype}")
    n = x.shape[0]
    if n > MAX_N:
        raise ValueError(f"N={n} elements exceed {MAX_N} (int32 sums must fit the 62-bit status words)")
    if out is None:
        out = torch.empty((n,), dtype=odt, device=x.device)
    else:
        if out.dim() != 1 or out.shape[0] != n or out.dtype != odt:
            raise ValueError(f"out must be a 1-d {odt} [N={n}]; got {tuple(out.shape)} {out.dtype}")
        if out.device != x.device:
            raise ValueError(f"out must be on x's device {x.device}; got {out.device}")
        if out.stride(0) == 0 and n > 1:
            raise ValueError("out must not have stride 0 (its elements would overlap)")
    if n == 0:
        return out
    need = workspace_words(n, cfg)
    if workspace is None:
        workspace = torch.empty((need,), dtype=torch.int64, device=x.device)
    elif (workspace.dtype != torch.int64 or workspace.dim() != 1 or workspace.shape[0] < need
          or workspace.stride(0) != 1 or workspace.device != x.device):
        raise ValueError(f"workspace must be a contiguous 1-d int64 tensor of at least {need} words on "
                         f"{x.device}; got {tuple(workspace.shape)} {workspace.dtype} on {workspace.device}")
    tile = tile_size(cfg)
    # int32 offsets inside a tile: a stride that would overflow them is copied out first
    if tile * abs(x.stride(0)) >= 2**31:
        x = x.contiguous()
    y = out if tile * abs(out.stride(0)) < 2**31 else torch.empty((n,), dtype=odt, device=x.device)
    ws = workspace[:need]
    ws.zero_()
    status, counter = _split(ws, n, cfg)
    _kernel[(triton.cdiv(n, tile),)](**_kernel_args(x, y, status, counter, cfg), num_warps=num_warps,
                                     num_stages=num_stages)
    if y is not out:
        out.copy_(y)
    return out


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """x [N] drawn on `device` from a seeded generator as the point's `data` says (module doc): "routing" the
    expert-major [experts, tokens] 0/1 map of each token's top-k of random scores (int32), "counts" int32
    in 1..max_count at a `density` of the positions, else 0; "probs" fp32 softmax rows of N(0, 1.5^2)
    logits; "signed" int32 uniform in [-scale, scale] or fp32 N(0, 1)."""
    import torch
    P = _check_point(point)
    gen = torch.Generator(device=device).manual_seed(seed)
    n, data = P["N"], P["data"]
    if data == "routing":
        e, k = P["experts"], P["topk"]
        scores = torch.rand((n // e, e), generator=gen, device=device)
        top = scores.topk(k, dim=1).indices
        del scores
        rmap = torch.zeros((n // e, e), dtype=torch.int32, device=device)
        rmap.scatter_(1, top, 1)
        x = rmap.t().contiguous().view(-1)
    elif data == "counts":
        hit = torch.rand((n,), generator=gen, device=device) < P["density"]
        c = torch.randint(1, P["max_count"] + 1, (n,), generator=gen, device=device, dtype=torch.int32)
        x = torch.where(hit, c, torch.zeros((), dtype=torch.int32, device=device))
    elif data == "probs":
        r = P["rows"]
        logits = torch.randn((r, n // r), generator=gen, device=device) * 1.5
        x = torch.softmax(logits, dim=1).view(-1)
    elif P["dtype"] == "int32":
        s = P["scale"]
        x = torch.randint(-s, s + 1, (n,), generator=gen, device=device, dtype=torch.int64).to(torch.int32)
    else:
        x = torch.randn((n,), generator=gen, device=device)
    return {"x": x}


def launch(inputs, cfg):
    """y = the inclusive prefix sum of inputs["x"] (fresh, contiguous; int64 for int32, fp32 for fp32)."""
    return lookback_scan(inputs["x"], ITEMS=cfg["ITEMS"], LOOKBACK=cfg["LOOKBACK"], num_warps=cfg["num_warps"],
                         num_stages=cfg["num_stages"])


def reference(inputs):
    """torch.cumsum in int64 (exact) or fp64 rounded once to fp32."""
    import torch
    x = inputs["x"]
    if x.dtype == torch.int32:
        return torch.cumsum(x.long(), 0)
    return torch.cumsum(x.double(), 0).float()


def torch_baseline(inputs):
    """torch.cumsum(x, 0): CUB's DeviceScan on CUDA (int32 promoted to int64, as here)."""
    import torch
    return torch.cumsum(inputs["x"], 0)


def _out_bytes(dt: str) -> int:
    return 8 if dt == "int32" else 4


def bytes_moved(point) -> int:
    """x read once (4 B an element) and y written once (8 B int64 / 4 B fp32). The workspace (8 B a tile: the
    fill's write, the kernel's exchanges and the look-backs' reads in L2, one write-back) depends on the
    config and is left out, as splitk_gemm leaves out its workspace: <= 0.8 % of these bytes at the points
    (16 B of DRAM a tile at the smallest, 256 fp32 elements; secondary_kernels declares the fill)."""
    P = _check_point(point)
    return P["N"] * (4 + _out_bytes(P["dtype"]))


def flops(point) -> int:
    """One add an element (the look-back's adds, a few a tile, not counted)."""
    return _check_point(point)["N"]


def grid(cfg, point) -> int:
    """One CTA a tile of ITEMS x 32 x num_warps elements (the tile a CTA scans is its atomic ticket, not
    its program id)."""
    P = _check_point(point)
    return triton.cdiv(P["N"], tile_size(cfg))


def loop_iterations(cfg, point) -> int:
    """1: one tile a CTA, no main loop (the look-back's steps depend on timing: one when the predecessor has
    published its inclusive prefix, more while only aggregates are out)."""
    _check_point(point)
    _check_cfg(cfg)
    return 1


def secondary_kernels(cfg, point) -> list[dict]:
    """torch's zero-fill of the int64 workspace before `_kernel` (status words + counter): FILL_BLOCK
    elements a CTA, tile_bytes = dram_bytes = its 8 FILL_BLOCK bytes written (one CTA's)."""
    P = _check_point(point)
    return [{"name": "status_zero_fill", "grid": triton.cdiv(workspace_words(P["N"], cfg), FILL_BLOCK),
             "iterations": 1, "tile_bytes": 8 * FILL_BLOCK, "dram_bytes": 8 * FILL_BLOCK}]


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, all on the meta device (no tensor carries
    data: the kernel loads nothing through loaded indices -- its tile is an atomic ticket and its
    look-back reads the status words at offsets from that ticket): x [N] contiguous in the point's dtype,
    y [N] int64 / fp32 contiguous, the workspace's status [tiles] and counter [1] views."""
    import torch
    P = _check_point(point)
    _check_cfg(cfg)
    n = P["N"]
    x = torch.empty((n,), dtype=torch.int32 if P["dtype"] == "int32" else torch.float32, device="meta")
    y = torch.empty((n,), dtype=torch.int64 if P["dtype"] == "int32" else torch.float32, device="meta")
    ws = torch.empty((workspace_words(n, cfg),), dtype=torch.int64, device="meta")
    status, counter = _split(ws, n, cfg)
    return _kernel_args(x, y, status, counter, cfg)
