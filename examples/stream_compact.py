"""Stream compaction by predicate with atomic tickets -- the filter step of torch.masked_select, of a
detector's score-threshold pre-filter before NMS (Ultralytics YOLO's non_max_suppression: `xc = conf >
conf_thres`, then `x[xc]`) and of a point cloud's range filter before voxelization (mmdet3d's
PointsRangeFilter / OpenPCDet's mask_points_by_range) or a Gaussian-splat crop box -- a bare @triton.jit
kernel + its launcher. For records [n, W] (W 1-16 fields: xyz + intensity, a box + score + class, a
Gaussian's parameters) in fp32 / fp16 / bf16:

    keep[i] = rec[i, SCORE_COL] > thr                                  (MODE 0: score threshold)
    keep[i] = lo_a < rec[i, a] < hi_a  for a = 0, 1, 2                  (MODE 1: range box on x, y, z)
    out[j, :] = rec[i_j, :],  idx[j] = i_j,  count = #kept             (j < count; i_j the kept records)

The predicate is evaluated in fp32 on the stored values (fp16 / bf16 widened exactly; NaN never kept; the
box is open on both sides, as mmdet3d's in_range_3d). out [n, W] (the records' dtype, contiguous), idx [n]
int64 and count [1] int32 are fresh buffers of capacity n, as CUB's DeviceSelect::If writes them: only the
first count rows / entries are defined; the wrapper returns them with count still on the device (no host
sync). `launch` is the study's and the correctness gate's entry. Under CUDA-graph capture (the study's timing)
it only zeroes the counter and runs the kernel, returning the raw out buffer (no host read, nothing else
timed); run eagerly (the correctness check) it reads count once and returns the kept rows in input order
(`in_input_order`), or NaN rows when the order the kernel wrote is not a legal one -- so `reference` is
plain masked_select order and the gate fails on a wrong set, a duplicate or a broken chunk run.

ORDER: unordered across CTAs, ordered within one. Each CTA owns a chunk of CHUNK = BLOCK x STEPS
consecutive records, takes its output range with ONE atomic_add of its kept count on a global counter (a
ticket: whichever CTA gets there first writes first), and writes its kept records in their input order
(an in-CTA exclusive prefix sum, tl.cumsum, gives each kept record its slot). So out[:count] is the kept
records as a concatenation of per-chunk runs, each run in input order, the runs in ticket order -- the
same multiset (and the same within-chunk order) as masked_select's, not its global order. A legal order
(legal_order): exactly the kept records, each once; each chunk's records one contiguous run in input order.

Work split: a 1-d grid of cdiv(n, CHUNK) programs. STEPS == 1 (one pass): the program loads its BLOCK
records' predicate fields, counts (tl.sum), takes its ticket, and then loads only its kept rows (the row
load masked by the predicate: a masked-off lane fetches nothing) and stores them at ticket + cumsum - 1,
with their indices. STEPS > 1 (two passes): a first loop over the STEPS steps of BLOCK records loads the
predicate fields and counts (kept in L2 for the second pass: evict_last), one ticket for the whole chunk,
and a second loop re-reads the predicate fields, cumsums them per step onto a running offset and stores
the kept rows -- fewer atomics and longer output runs per ticket, for a second read of the predicate
fields (from L2 at best). BLOCK = TILE // next_pow2(W) records a step: TILE elements of the [BLOCK, WP]
row tile whatever the width. Rows are [BLOCK, WP] tiles, the columns masked only where W is not a power
of two (EVEN_W 0); W is a constexpr, so output rows of 4 fp32 / 8 fp16 are single 16-byte stores. Input
addresses are int64 (n row_stride may pass 2^31); output offsets int32 (n W < 2^31 is checked).

How this differs from examples/lookback_scan.py: that is an ORDERED device-wide prefix sum (CUB's
decoupled look-back: every tile waits for its predecessors' published prefixes, the output a dense [N] of
running sums in global order). This kernel never waits on another CTA: a CTA's output range is a ticket
from one atomic_add (any order across CTAs, no look-back, no status words, no spinning), its outputs are
the selected records themselves (rows of W fields, data-dependent count) and their indices.

Tunables: TILE (row-tile elements a step: 512 / 1024 / 2048 / 4096 -> BLOCK = TILE / WP records),
STEPS (1 / 2 / 4 / 8: one pass per tile, or a chunk of STEPS tiles counted first and written second under
one ticket), num_warps (2 / 4 / 8), num_stages held at 1 (see SWEEP_AXES). At TILE 8192 on 2 warps (128
elements a thread) both Tritons spilled at 254-255 registers, hence the sweep's 4096 at most. On sm_90
every config of the sweep (48) compiles at every point without spills: 21-229 registers under triton 3.6.0
and 21-174 under 3.9.0 (the most for TILE 4096 on 2 warps), shared memory 16-2048 bytes under 3.6 and
4-2048 under 3.9. (An exclusive prefix sum written tl.cumsum(k) - k made ptxas of triton 3.9 spill 2
registers at 72 for the YOLO point's TILE 4096 on 4 warps; tl.cumsum(k) - 1, the same slots for the kept
records, does not.) Problem parameters (a workload
point): n (records), W (fields), dtype (fp32 / fp16 / bf16), mode ("score" / "box"), keep (the designed
keep ratio), score_col (the score's column in mode "score"), pad (extra columns of the buffer the records
are a column slice of: the row stride W + pad, default 0).
"""

from __future__ import annotations

import math

import triton
import triton.language as tl


@triton.jit
def _keep(REC, rows, stride_r, stride_c, n, lo0, hi0, lo1, hi1, lo2, hi2, thr,
          MODE: tl.constexpr, SCORE_COL: tl.constexpr, POLICY: tl.constexpr):
    """The predicate of records `rows` (int64), False past n."""
    in_n = rows < n
    rp = REC + rows * stride_r
    if MODE == 0:
        s = tl.load(rp + SCORE_COL * stride_c, mask=in_n, other=0.0, eviction_policy=POLICY).to(tl.float32)
        k = (s > thr) & in_n
    else:
        x = tl.load(rp, mask=in_n, other=0.0, eviction_policy=POLICY).to(tl.float32)
        y = tl.load(rp + stride_c, mask=in_n, other=0.0, eviction_policy=POLICY).to(tl.float32)
        z = tl.load(rp + 2 * stride_c, mask=in_n, other=0.0, eviction_policy=POLICY).to(tl.float32)
        k = (x > lo0) & (x < hi0) & (y > lo1) & (y < hi1) & (z > lo2) & (z < hi2) & in_n
    return k


@triton.jit
def _write(REC, OUT, IDX, rows, k, slot0, stride_r, stride_c,
           W: tl.constexpr, WP: tl.constexpr, EVEN_W: tl.constexpr):
    """Store the kept records of `rows` (predicate k) at slot0, slot0 + 1, ... in their input order; returns
    how many were kept."""
    ki = k.to(tl.int32)
    pos = slot0 + tl.cumsum(ki, 0) - 1                  # inclusive prefix sum - 1: each kept record's slot
    cols = tl.arange(0, WP)
    if EVEN_W:
        m = k[:, None]
    else:
        m = k[:, None] & (cols < W)[None, :]
    x = tl.load(REC + (rows * stride_r)[:, None] + (cols * stride_c)[None, :], mask=m,
                eviction_policy="evict_first")
    tl.store(OUT + (pos * W)[:, None] + cols[None, :], x, mask=m)
    tl.store(IDX + pos, rows, mask=k)
    return tl.sum(ki, 0)


@triton.jit
def _kernel(REC, OUT, IDX, COUNT, n, stride_r, stride_c, lo0, hi0, lo1, hi1, lo2, hi2, thr,
            MODE: tl.constexpr, SCORE_COL: tl.constexpr, W: tl.constexpr, WP: tl.constexpr,
            EVEN_W: tl.constexpr, BLOCK: tl.constexpr, STEPS: tl.constexpr):
    start = tl.program_id(0).to(tl.int64) * (BLOCK * STEPS)
    r = tl.arange(0, BLOCK)
    if STEPS == 1:
        rows = start + r
        k = _keep(REC, rows, stride_r, stride_c, n, lo0, hi0, lo1, hi1, lo2, hi2, thr, MODE, SCORE_COL,
                  "evict_first")
        total = tl.sum(k.to(tl.int32), 0)
        base = tl.atomic_add(COUNT, total, sem="relaxed")           # the ticket: this CTA's output range
        _write(REC, OUT, IDX, rows, k, base, stride_r, stride_c, W, WP, EVEN_W)
    else:
        total = 0
        for s in range(STEPS):                                       # pass 1: count the chunk
            rows = start + s * BLOCK + r
            k = _keep(REC, rows, stride_r, stride_c, n, lo0, hi0, lo1, hi1, lo2, hi2, thr, MODE, SCORE_COL,
                      "evict_last")
            total += tl.sum(k.to(tl.int32), 0)
        run = tl.atomic_add(COUNT, total, sem="relaxed")            # one ticket for the chunk
        for s in range(STEPS):                                       # pass 2: write it in input order
            rows = start + s * BLOCK + r
            k = _keep(REC, rows, stride_r, stride_c, n, lo0, hi0, lo1, hi1, lo2, hi2, thr, MODE, SCORE_COL,
                      "evict_first")
            run += _write(REC, OUT, IDX, rows, k, run, stride_r, stride_c, W, WP, EVEN_W)


# ---------------------------------------------------------------- launcher
ROLE = "held-out-33"
DTYPES = ("fp32", "fp16", "bf16")
MODES = ("score", "box")
TUNABLES = ("TILE", "STEPS", "num_warps", "num_stages")
BASELINE = {"TILE": 2048, "STEPS": 1, "num_warps": 4, "num_stages": 1}
# the study's sweep: 4 x 4 x 3 x 1 = 48 configs. 512-4096 elements a row tile, chunks of 1-8 tiles under one
# ticket, 2-8 warps; num_stages 1: the count loop's loads feed only a sum and the write loop's only stores
# (compiled at num_stages 3 the kernel keeps the same registers and shared memory: nothing is pipelined)
SWEEP_AXES = {"TILE": [512, 1024, 2048, 4096], "STEPS": [1, 2, 4, 8], "num_warps": [2, 4, 8], "num_stages": [1]}
MAX_W = 16
MAX_TILE = 16384
MAX_N = 2**31 - 1
BOX_SPAN = (160.0, 160.0, 10.0)           # box mode: x, y, z drawn over these spans (metres), centred at 0
VALUES_SEED = 0x5C0

POINTS = [
    # a LiDAR range filter before voxelization (mmdet3d PointsRangeFilter / OpenPCDet mask_points_by_range):
    # 16.8 M points of x, y, z, intensity fp32 (a batch of 96 Waymo top-LiDAR frames of ~175 k points), 60 %
    # inside the box. 268 MB read + 10 M kept x 24 B written: ~0.17 ms at 3 TB/s
    {"n": 16_777_216, "W": 4, "dtype": "fp32", "mode": "box", "keep": 0.6},
    # YOLO's confidence pre-filter before NMS (Ultralytics non_max_suppression, conf_thres 0.25): 512 images
    # at 1280 x 1280 (33600 anchors each) = 17.2 M rows of x, y, w, h, conf, cls in fp16, 1 % above the
    # threshold. 206 MB read, ~3.4 MB written: ~0.07 ms
    {"n": 17_203_200, "W": 6, "dtype": "fp16", "mode": "score", "keep": 0.01, "score_col": 4},
    # a Gaussian-splat scene cropped to a box (a 3DGS editor's crop / a tile's export): 6 M Gaussians of 14
    # fp32 parameters (mean 3, scale 3, rotation 4, opacity 1, DC colour 3), 30 % inside.
    # 336 MB read + 1.8 M x 64 B written: ~0.15 ms
    {"n": 6_000_000, "W": 14, "dtype": "fp32", "mode": "box", "keep": 0.3},
]


def _torch_dtype(name: str):
    import torch
    try:
        return {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[name]
    except (KeyError, TypeError):
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}") from None


def _elem_bytes(name: str) -> int:
    return 4 if name == "fp32" else 2


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _pow2(v: int) -> int:
    return 1 << max(0, (v - 1).bit_length())


def _check_point(point) -> dict:
    """The point's fields, checked (defaults: fp32, mode "score", keep 0.5, score_col W - 1, pad 0)."""
    for k in ("n", "W"):
        v = point[k]
        if not _is_int(v) or v < 1:
            raise ValueError(f"{k}={v!r} must be a positive int")
    P = {"n": point["n"], "W": point["W"], "dtype": point.get("dtype", "fp32"), "mode": point.get("mode", "score"),
         "keep": point.get("keep", 0.5), "score_col": point.get("score_col", point["W"] - 1),
         "pad": point.get("pad", 0)}
    if P["W"] > MAX_W:
        raise ValueError(f"W={P['W']} fields exceed {MAX_W}")
    if P["dtype"] not in DTYPES:
        raise ValueError(f"dtype {P['dtype']!r} is not one of {', '.join(DTYPES)}")
    if P["mode"] not in MODES:
        raise ValueError(f"mode {P['mode']!r} is not one of {', '.join(MODES)}")
    kp = P["keep"]
    if not isinstance(kp, (int, float)) or isinstance(kp, bool) or not 0.0 <= kp <= 1.0:
        raise ValueError(f"keep={kp!r} must be a ratio from 0 to 1")
    sc = P["score_col"]
    if not _is_int(sc) or not 0 <= sc < P["W"]:
        raise ValueError(f"score_col={sc!r} must be a column from 0 to W - 1 = {P['W'] - 1}")
    if P["mode"] == "box" and P["W"] < 3:
        raise ValueError(f"W={P['W']}: mode 'box' needs x, y, z (W >= 3)")
    if not _is_int(P["pad"]) or P["pad"] < 0:
        raise ValueError(f"pad={P['pad']!r} must be an int >= 0")
    if P["n"] * P["W"] > MAX_N or P["n"] * (P["W"] + P["pad"]) > 2**40:
        raise ValueError(f"n={P['n']} x W={P['W']} output elements exceed {MAX_N}")
    return P


def _check_cfg(cfg) -> None:
    t = cfg["TILE"]
    if not _is_int(t) or t < 16 or t > MAX_TILE or t & (t - 1):
        raise ValueError(f"TILE={t!r} must be a power of two from 16 to {MAX_TILE}")
    s = cfg["STEPS"]
    if not _is_int(s) or s < 1 or s > 64:
        raise ValueError(f"STEPS={s!r} must be an int from 1 to 64")
    w = cfg["num_warps"]
    if not _is_int(w) or w not in (1, 2, 4, 8, 16):
        raise ValueError(f"num_warps={w!r} must be a power of two from 1 to 16")
    st = cfg.get("num_stages", 1)
    if not _is_int(st) or st < 1 or st > 8:
        raise ValueError(f"num_stages={st!r} must be an int from 1 to 8")


def _plan(W: int, cfg) -> tuple[int, int]:
    """(WP, BLOCK) of a config at width W: the row tile [BLOCK, WP], BLOCK = TILE // WP records a step."""
    _check_cfg(cfg)
    wp = _pow2(W)
    if cfg["TILE"] < wp:
        raise ValueError(f"TILE={cfg['TILE']} is smaller than one padded row of W={W} ({wp} elements)")
    return wp, cfg["TILE"] // wp


def chunk(W: int, cfg) -> int:
    """Records a program owns (one ticket): BLOCK x STEPS."""
    wp, bl = _plan(W, cfg)
    return bl * cfg["STEPS"]


def _grid(n: int, W: int, cfg) -> tuple[int]:
    return (triton.cdiv(n, chunk(W, cfg)),)


def _pred_params(mode: str, thr, box):
    """(MODE, lo0, hi0, lo1, hi1, lo2, hi2, thr) as the kernel takes them (the unused ones 0)."""
    if mode == "score":
        return 0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, float(thr)
    lo, hi = box
    return 1, float(lo[0]), float(hi[0]), float(lo[1]), float(hi[1]), float(lo[2]), float(hi[2]), 0.0


def _kernel_args(records, out, idx, count, mode, thr, box, score_col, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    n, W = records.shape
    wp, bl = _plan(W, cfg)
    m, lo0, hi0, lo1, hi1, lo2, hi2, t = _pred_params(mode, thr, box)
    return dict(REC=records, OUT=out, IDX=idx, COUNT=count, n=n, stride_r=records.stride(0),
                stride_c=records.stride(1), lo0=lo0, hi0=hi0, lo1=lo1, hi1=hi1, lo2=lo2, hi2=hi2, thr=t,
                MODE=m, SCORE_COL=score_col if m == 0 else 0, W=W, WP=wp, EVEN_W=int(W == wp), BLOCK=bl,
                STEPS=cfg["STEPS"])


def _check_box(box) -> None:
    try:
        lo, hi = box
        ok = len(lo) == 3 and len(hi) == 3 and all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                                   and not math.isnan(v) for v in (*lo, *hi))
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise ValueError(f"box={box!r} must be ((x_lo, y_lo, z_lo), (x_hi, y_hi, z_hi)) numbers")


def stream_compact(records, *, threshold=None, score_col: int | None = None, box=None, out=None, idx=None,
                   count=None, TILE: int = 2048, STEPS: int = 1, num_warps: int = 4, num_stages: int = 1):
    """Compact the records [n, W] (fp32 / fp16 / bf16, W <= 16, any strides) that pass the predicate:
    `threshold` (records[:, score_col] > threshold; score_col default W - 1) or `box` ((lo xyz), (hi xyz):
    lo < records[:, a] < hi on columns 0, 1, 2) -- exactly one of them. Returns (out [n, W] records' dtype,
    idx [n] int64, count [1] int32), count on the device: the first count rows of out are the kept records,
    idx their indices, in input order within each chunk of CHUNK records and in any order across chunks
    (module doc). out / idx / count may be given (capacity n; count is zeroed here). TILE, STEPS,
    num_warps, num_stages: the tunables."""
    import torch
    cfg = {"TILE": TILE, "STEPS": STEPS, "num_warps": num_warps, "num_stages": num_stages}
    _check_cfg(cfg)
    if records.dim() != 2 or records.dtype not in (torch.float32, torch.float16, torch.bfloat16):
        raise ValueError(f"records must be a 2-d fp32 / fp16 / bf16 tensor [n, W]; got {tuple(records.shape)} "
                         f"{records.dtype}")
    n, W = records.shape
    if not 1 <= W <= MAX_W:
        raise ValueError(f"W={W} fields: must be from 1 to {MAX_W}")
    if (threshold is None) == (box is None):
        raise ValueError("give exactly one of threshold= (score mode) and box= (range-box mode)")
    if box is not None:
        _check_box(box)
        if W < 3:
            raise ValueError(f"W={W}: box= needs x, y, z columns (W >= 3)")
        mode, sc = "box", 0
    else:
        if not isinstance(threshold, (int, float)) or isinstance(threshold, bool) or math.isnan(threshold):
            raise ValueError(f"threshold={threshold!r} must be a number (not NaN)")
        sc = W - 1 if score_col is None else score_col
        if not _is_int(sc) or not 0 <= sc < W:
            raise ValueError(f"score_col={sc!r} must be a column from 0 to W - 1 = {W - 1}")
        mode = "score"
    if n * W > MAX_N:
        raise ValueError(f"n={n} x W={W} output elements exceed {MAX_N}")
    dev = records.device
    if out is None:
        out = torch.empty((n, W), dtype=records.dtype, device=dev)
    elif out.shape != (n, W) or out.dtype != records.dtype or not out.is_contiguous() or out.device != dev:
        raise ValueError(f"out must be a contiguous {records.dtype} [{n}, {W}] on {dev}; got "
                         f"{tuple(out.shape)} {out.dtype}")
    if idx is None:
        idx = torch.empty((n,), dtype=torch.int64, device=dev)
    elif idx.shape != (n,) or idx.dtype != torch.int64 or not idx.is_contiguous() or idx.device != dev:
        raise ValueError(f"idx must be a contiguous int64 [{n}] on {dev}; got {tuple(idx.shape)} {idx.dtype}")
    if count is None:
        count = torch.zeros((1,), dtype=torch.int32, device=dev)
    elif count.shape != (1,) or count.dtype != torch.int32 or count.device != dev:
        raise ValueError(f"count must be an int32 [1] on {dev}; got {tuple(count.shape)} {count.dtype}")
    else:
        count.zero_()                                        # the ticket counter starts at 0 every launch
    if n == 0:
        return out, idx, count
    _plan(W, cfg)
    _kernel[_grid(n, W, cfg)](**_kernel_args(records, out, idx, count, mode, threshold, box, sc, cfg),
                              num_warps=num_warps, num_stages=num_stages)
    return out, idx, count


# ---------------------------------------------------------------- inputs, reference, baseline
def box_of(keep: float):
    """The range box of mode "box" whose inside holds a `keep` share of the drawn points: each axis the
    centred keep^(1/3) share of its span (x, y, z uniform over BOX_SPAN)."""
    f = keep ** (1.0 / 3.0)
    lo = tuple(-0.5 * f * s for s in BOX_SPAN)
    hi = tuple(0.5 * f * s for s in BOX_SPAN)
    return lo, hi


def threshold_of(keep: float) -> float:
    """Mode "score": scores uniform in [0, 1); a `keep` share above 1 - keep."""
    return 1.0 - keep


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """records [n, W] in the point's dtype (a column slice of an [n, W + pad] buffer when pad > 0): N(0, 1)
    fields, the score column uniform in [0, 1) (mode "score") or x, y, z uniform over BOX_SPAN centred at 0
    (mode "box"); the predicate's threshold / box set for the point's keep ratio; a count buffer."""
    import torch
    P = _check_point(point)
    n, W, pad = P["n"], P["W"], P["pad"]
    gen = torch.Generator(device=device).manual_seed(seed + VALUES_SEED)
    buf = torch.randn((n, W + pad), generator=gen, device=device)
    if P["mode"] == "score":
        buf[:, pad + P["score_col"]] = torch.rand(n, generator=gen, device=device)
    else:
        u = torch.rand((n, 3), generator=gen, device=device)
        buf[:, pad:pad + 3] = (u - 0.5) * torch.tensor(BOX_SPAN, device=device)
    buf = buf.to(_torch_dtype(P["dtype"]))
    rec = buf[:, pad:pad + W] if pad else buf
    inp = {"records": rec, "mode": P["mode"], "count": torch.zeros(1, dtype=torch.int32, device=device)}
    if P["mode"] == "score":
        inp["threshold"], inp["score_col"] = threshold_of(P["keep"]), P["score_col"]
    else:
        inp["box"] = box_of(P["keep"])
    return inp


def _call(inputs, cfg):
    kw = {"threshold": inputs["threshold"], "score_col": inputs["score_col"]} if inputs["mode"] == "score" \
        else {"box": inputs["box"]}
    return stream_compact(inputs["records"], **kw, count=inputs.get("count"), TILE=cfg["TILE"],
                          STEPS=cfg["STEPS"], num_warps=cfg["num_warps"], num_stages=cfg.get("num_stages", 1))


def launch(inputs, cfg):
    """One launch (the counter in inputs["count"] zeroed first, in stream_compact). Under CUDA-graph capture:
    the raw out buffer, nothing read back. Eagerly: out[:count] put back in input order (in_input_order);
    the order the kernel wrote and the chunk are kept in inputs["_order"] (module doc)."""
    import torch
    out, idx, count = _call(inputs, cfg)
    if out.is_cuda and torch.cuda.is_current_stream_capturing():
        return out
    c = int(count[0])                                        # one host read, as masked_select's
    inputs["_order"] = (idx[:c], chunk(inputs["records"].shape[1], cfg))
    return in_input_order(out[:c], idx[:c], kept_mask(inputs).nonzero().squeeze(1), inputs["_order"][1])


def in_input_order(rows, order, kept_idx, chunk_records: int):
    """rows [count, W] written in `order` (their record indices), put back in input order -- masked_select's;
    NaN rows (fp32) when `order` is not a legal compaction of kept_idx (legal_order), so the gate fails."""
    import torch
    if not legal_order(order, kept_idx, chunk_records):
        return torch.full(tuple(rows.shape), float("nan"), device=rows.device)
    return rows[order.to(rows.device).long().argsort()]


def kept_mask(inputs):
    """[n] bool: the predicate on the records (fp32 compares of the stored values)."""
    rec = inputs["records"]
    if inputs["mode"] == "score":
        return rec[:, inputs["score_col"]].float() > float(inputs["threshold"])
    lo, hi = inputs["box"]
    k = None
    for a in range(3):
        v = rec[:, a].float()
        ka = (v > float(lo[a])) & (v < float(hi[a]))
        k = ka if k is None else k & ka
    return k


def legal_order(order, kept_idx, chunk_records: int) -> bool:
    """Whether `order` (int64 indices, as written) is a legal compaction of kept_idx (ascending): the same
    set, each once; each chunk's (index // chunk_records) entries one contiguous run, ascending in it."""
    import torch
    order = order.long()
    kept_idx = kept_idx.long().to(order.device)           # on the order's device: a GPU check stays there
    if order.numel() != kept_idx.numel() or not torch.equal(order.sort().values, kept_idx):
        return False
    if order.numel() <= 1:
        return True
    ch = order // chunk_records
    new_run = torch.ones_like(ch, dtype=torch.bool)
    new_run[1:] = ch[1:] != ch[:-1]
    if int(new_run.sum()) != int(ch.unique().numel()):          # a chunk split in two runs
        return False
    same = ~new_run[1:]
    return bool((order[1:][same] > order[:-1][same]).all())


def reference(inputs):
    """fp32 [count, W]: the kept records in input order (masked_select's), what an eager `launch` returns."""
    return inputs["records"][kept_mask(inputs).nonzero().squeeze(1)].float()


def torch_baseline(inputs):
    """What eager PyTorch runs: the predicate as a bool mask, nonzero (CUB's select, a host sync), a row
    gather -- masked_select's global order. Returns the kept rows."""
    k = kept_mask(inputs)
    idx = k.nonzero().squeeze(1)
    return inputs["records"].index_select(0, idx)


# ---------------------------------------------------------------- hooks
def expected_kept(point) -> int:
    """round(n keep): the draw's expected kept records (the draw keeps each with probability keep)."""
    P = _check_point(point)
    return round(P["n"] * P["keep"])


def bytes_moved(point) -> int:
    """The records read once (n W elements: the predicate fields share the rows' sectors), the kept rows
    written (expected_kept x W elements) with their int64 indices, the 4-byte counter."""
    P = _check_point(point)
    e = _elem_bytes(P["dtype"])
    return P["n"] * P["W"] * e + expected_kept(P) * (P["W"] * e + 8) + 4


def flops(point) -> int:
    """The compares: 1 a record (score) or 6 (box); the prefix sums are integer work."""
    P = _check_point(point)
    return P["n"] * (1 if P["mode"] == "score" else 6)


def grid(cfg, point) -> tuple[int]:
    """(cdiv(n, BLOCK STEPS),): one program a chunk."""
    P = _check_point(point)
    return _grid(P["n"], P["W"], cfg)


def loop_iterations(cfg, point) -> int:
    """Steps of BLOCK records a program walks: 1 at STEPS 1, else 2 STEPS (the count pass, the write pass)."""
    _check_point(point)
    _check_cfg(cfg)
    return 1 if cfg["STEPS"] == 1 else 2 * cfg["STEPS"]


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, every tensor on the meta device: records
    [n, W] (row stride W + pad), out [n, W], idx [n] int64, count [1] int32. No tensor carries data: the
    records are read by position (no address comes from a loaded value); the output slots come from the
    predicate's values and the tickets' run-time order, which no replay of the loads can know -- the
    written bytes are bytes_moved's expected_kept rows."""
    import torch
    P = _check_point(point)
    _plan(P["W"], cfg)
    n, W, pad = P["n"], P["W"], P["pad"]
    dt = _torch_dtype(P["dtype"])
    buf = torch.empty((n, W + pad), dtype=dt, device="meta")
    rec = buf[:, pad:pad + W] if pad else buf
    out = torch.empty((n, W), dtype=dt, device="meta")
    idx = torch.empty((n,), dtype=torch.int64, device="meta")
    count = torch.empty((1,), dtype=torch.int32, device="meta")
    thr = threshold_of(P["keep"]) if P["mode"] == "score" else None
    box = box_of(P["keep"]) if P["mode"] == "box" else None
    return _kernel_args(rec, out, idx, count, P["mode"], thr, box, P["score_col"], cfg)
