"""The weight and bias gradient of the causal depthwise conv1d of Mamba / Mamba-2 / Hyena blocks
(what the conv's backward computes as dweight / dbias; the conv's dx is another kernel), a bare
@triton.jit kernel + a small slab-reduce kernel + their launcher.

    dW[d, t] = sum_{b, l} dy[b, l, d] x[b, l - (W - 1) + t, d]     (x[b, s, d] = 0 for s < 0)
    db[d]    = sum_{b, l} dy[b, l, d]                               t = 0 .. W - 1

x (the conv's saved input) and dy (the gradient of its output): [B, L, D] fp16 / bf16 (one dtype),
channel-last: D contiguous (unit stride), any row pitch and batch stride each -- Mamba-2's x is the
xBC slice of the in-projection's output zxbcdt [B, L, d_in_proj], read in place. W (the conv width,
2-4 taps: Mamba's 4, Hyena's short filter 3) is a constexpr. Causal padding: every sequence starts
at zero (no initial states, no packed-sequence seq_idx). dW [D, W] and db [D]: fp32 (the weight
and bias are fp32 parameters under AMP), contiguous.

It is a column reduction over the B L rows of every channel with W row-shifted reads of x: with
the shift s = W - 1 - t, tap t pairs dy row l with x row l - s.

Work split: a slab is L_STEPS x BLOCK_L consecutive rows of one sequence (slabs never cross a
sequence: the causal zero padding is a per-row test l - s >= 0 and nothing else); the last slab of
a sequence is short when L_STEPS BLOCK_L does not divide L. Grid (cdiv(D, BLOCK_D), B n_ls), n_ls
= cdiv(L, L_STEPS BLOCK_L) slabs a sequence: program (i, j) takes channels i BLOCK_D .. and slab j
(sequence j // n_ls, slab j % n_ls of it); the channel block is fastest in launch order, so the
programs that run together read whole rows of x and dy between them.

The loop (runtime bounds: from the slab's first row to min(its end, L), BLOCK_L rows a step) loads
one [BLOCK_L, BLOCK_D] tile of dy and W tiles of x, rows l .. l + BLOCK_L shifted up by s = 0 ..
W - 1 (one load each: the W tiles overlap but for W - 1 halo rows, re-read from L1 / L2;
each x byte comes from DRAM about once), upcasts them to fp32 and accumulates W + 1 fp32 tiles in
registers, acc_s += dy x_s (one multiply-add a tap an element) and acc_b += dy. The rows are
reduced once after the loop (tl.sum over axis 0: shuffles and a pass through shared memory), and
the program writes its W + 1 partial sums [W + 1, BLOCK_D] to row j of an fp32 workspace WS
[B n_ls, W + 1, D] (taps 0 .. W - 1, then the bias sum), every partial written once. A workspace
rather than tl.atomic_add into fp32 dW / db: the gradient is deterministic (run to run, the same
bits for one config: fp32 atomics land in arrival order), and its cost is bounded -- the workspace
is B n_ls (W + 1) D 4 bytes, (W + 1) / (slab rows) of the inputs: 0.4-16 % over the sweep at the
points, which L_STEPS trades against the programs' count.

`_reduce_kernel` (grid (cdiv(D, RBLOCK_D), W + 1): one channel block and one tap a program) sums
the B n_ls slabs of WS, RBLOCK_S at a time, in a fixed order, and writes dW[:, t] (t < W) or db
(t = W). Deterministic: the same result at every run of one config.

Masks: channels past D (EVEN_D = 0: BLOCK_D does not divide D) on every load and the workspace
stores; rows past L (EVEN_L = 0: BLOCK_L does not divide L, so a sequence's last step is short) on
every load; the causal head l - s >= 0 on the W - 1 shifted loads of x (always: a row compare a
step). All three row / channel masks are uniform along the vectorised channel axis. Offsets: the
sequence bases int64 (B L pitch passes 2^31 elements), the rows' offsets inside one sequence and the
channels' int32 ((L + BLOCK_L) x row pitch < 2^31, checked: 64-bit row offsets took the 128 x 16
tile on 2 warps at W 4 past 255 registers, spilling 6-10).

Tunables: BLOCK_D (channels a program: 32-128, the vectors' width along D and the partials'
row), BLOCK_L (rows a step: 8 / 16), L_STEPS (steps a slab: 4 / 16 / 64 -- the grid's slab count
and the workspace's size), num_warps (2 / 4 / 8: with the tile, the fp32 elements a thread, 1-32
per accumulator); num_stages held at 1 (no dot: the loop's loads are not pipelined). Every config of
the sweep compiles for sm_90 at every point with triton 3.6 and 3.9 without spills: 32-253
registers (32-252 under 3.9), the most for the 128 x 16 tile on 2 warps at W 4 (5 accumulator tiles
of 32 fp32 registers a thread; 219 / 174 at W 3); shared memory 256 B - 4 KiB (128 B - 4 KiB under
3.9), the row reductions' cross-warp partials.
Problem parameters (a workload point): B, L, D, W, dtype; optional x_pitch and x_col0 (x the columns
x_col0 .. x_col0 + D of a [B, L, x_pitch] buffer: Mamba-2's xBC inside zxbcdt).
"""

from __future__ import annotations

import triton
import triton.language as tl

RBLOCK_D = 64           # _reduce_kernel: channels a program
RBLOCK_S = 32           # _reduce_kernel: slabs summed a step


@triton.jit
def _tile(ptrs, rows, stride_l, L, d_ok, SHIFT: tl.constexpr, EVEN_D: tl.constexpr, EVEN_L: tl.constexpr):
    """The [BLOCK_L, BLOCK_D] tile of rows `rows - SHIFT` of one sequence (ptrs: rows `rows`, the
    channels' offsets added), fp32, zero where the row is < 0 (causal padding) or past L, or the
    channel past D."""
    if SHIFT > 0:
        ok = rows >= SHIFT
        if not EVEN_L:
            ok = ok & (rows < L)
        if EVEN_D:
            v = tl.load(ptrs - SHIFT * stride_l, mask=ok[:, None], other=0.0)
        else:
            v = tl.load(ptrs - SHIFT * stride_l, mask=ok[:, None] & d_ok, other=0.0)
    else:
        if EVEN_L:
            if EVEN_D:
                v = tl.load(ptrs)
            else:
                v = tl.load(ptrs, mask=d_ok, other=0.0)
        else:
            if EVEN_D:
                v = tl.load(ptrs, mask=(rows < L)[:, None], other=0.0)
            else:
                v = tl.load(ptrs, mask=(rows < L)[:, None] & d_ok, other=0.0)
    return v.to(tl.float32)


@triton.jit
def _store_row(ptrs, v, d_ok, EVEN_D: tl.constexpr):
    if EVEN_D:
        tl.store(ptrs, v)
    else:
        tl.store(ptrs, v, mask=d_ok)


@triton.jit
def _kernel(X, DY, WS, D, L, n_ls, stride_xb, stride_xl, stride_yb, stride_yl, stride_ws,
            KW: tl.constexpr, EVEN_D: tl.constexpr, EVEN_L: tl.constexpr,
            BLOCK_D: tl.constexpr, BLOCK_L: tl.constexpr, L_STEPS: tl.constexpr):
    tl.static_assert(KW >= 2 and KW <= 4, "width 2..4")
    pid_d = tl.program_id(0)
    pid_s = tl.program_id(1)
    b = pid_s // n_ls
    l_lo = (pid_s - b * n_ls) * (L_STEPS * BLOCK_L)
    l_hi = tl.minimum(l_lo + L_STEPS * BLOCK_L, L)

    ds = pid_d * BLOCK_D + tl.arange(0, BLOCK_D)
    d_ok = (ds < D)[None, :]
    rl = tl.arange(0, BLOCK_L)
    x_seq = X + b.to(tl.int64) * stride_xb + ds[None, :]
    y_seq = DY + b.to(tl.int64) * stride_yb + ds[None, :]

    # acc_s pairs dy row l with x row l - s: tap t = KW - 1 - s
    acc_b = tl.zeros((BLOCK_L, BLOCK_D), dtype=tl.float32)
    acc_0 = tl.zeros((BLOCK_L, BLOCK_D), dtype=tl.float32)
    acc_1 = tl.zeros((BLOCK_L, BLOCK_D), dtype=tl.float32)
    if KW >= 3:
        acc_2 = tl.zeros((BLOCK_L, BLOCK_D), dtype=tl.float32)
    if KW >= 4:
        acc_3 = tl.zeros((BLOCK_L, BLOCK_D), dtype=tl.float32)
    for l0 in range(l_lo, l_hi, BLOCK_L):
        rows = l0 + rl
        y_ptrs = y_seq + (rows * stride_yl)[:, None]
        x_ptrs = x_seq + (rows * stride_xl)[:, None]           # the shifted tiles: minus s rows
        dy = _tile(y_ptrs, rows, stride_yl, L, d_ok, 0, EVEN_D, EVEN_L)
        acc_b += dy
        acc_0 += dy * _tile(x_ptrs, rows, stride_xl, L, d_ok, 0, EVEN_D, EVEN_L)
        acc_1 += dy * _tile(x_ptrs, rows, stride_xl, L, d_ok, 1, EVEN_D, EVEN_L)
        if KW >= 3:
            acc_2 += dy * _tile(x_ptrs, rows, stride_xl, L, d_ok, 2, EVEN_D, EVEN_L)
        if KW >= 4:
            acc_3 += dy * _tile(x_ptrs, rows, stride_xl, L, d_ok, 3, EVEN_D, EVEN_L)

    # the slab's partials: WS[pid_s, t, ds] for the taps t = 0 .. KW - 1, then the bias sum at t = KW
    ws = WS + pid_s.to(tl.int64) * stride_ws + ds
    dm = ds < D
    _store_row(ws + (KW - 1) * D, tl.sum(acc_0, axis=0), dm, EVEN_D)
    _store_row(ws + (KW - 2) * D, tl.sum(acc_1, axis=0), dm, EVEN_D)
    if KW >= 3:
        _store_row(ws + (KW - 3) * D, tl.sum(acc_2, axis=0), dm, EVEN_D)
    if KW >= 4:
        _store_row(ws + (KW - 4) * D, tl.sum(acc_3, axis=0), dm, EVEN_D)
    _store_row(ws + KW * D, tl.sum(acc_b, axis=0), dm, EVEN_D)


@triton.jit
def _reduce_kernel(WS, DW, DB, D, n_slabs, stride_ws, KW: tl.constexpr, RBLOCK_D: tl.constexpr,
                   RBLOCK_S: tl.constexpr):
    pid_d = tl.program_id(0)
    t = tl.program_id(1)
    ds = pid_d * RBLOCK_D + tl.arange(0, RBLOCK_D)
    d_ok = ds < D
    ss = tl.arange(0, RBLOCK_S)
    base = WS + t * D + ds[None, :]
    acc = tl.zeros((RBLOCK_S, RBLOCK_D), dtype=tl.float32)
    for s0 in range(0, n_slabs, RBLOCK_S):
        s = s0 + ss
        acc += tl.load(base + (s.to(tl.int64) * stride_ws)[:, None], mask=(s < n_slabs)[:, None] & d_ok[None, :],
                       other=0.0)
    tot = tl.sum(acc, axis=0)
    if t < KW:
        tl.store(DW + ds * KW + t, tot, mask=d_ok)
    else:
        tl.store(DB + ds, tot, mask=d_ok)


# ---------------------------------------------------------------- launcher
ROLE = "held-out-26"
DTYPES = ("bf16", "fp16")
TUNABLES = ("BLOCK_D", "BLOCK_L", "L_STEPS", "num_warps", "num_stages")
BASELINE = {"BLOCK_D": 64, "BLOCK_L": 16, "L_STEPS": 16, "num_warps": 4, "num_stages": 1}
# the study's sweep: 3 x 2 x 3 x 3 = 54 configs: tiles of 256-2048 elements (1-32 a thread a
# tile, W + 1 fp32 accumulator tiles live across the loop), slabs of 32-1024 rows
SWEEP_AXES = {"BLOCK_D": [32, 64, 128], "BLOCK_L": [8, 16], "L_STEPS": [4, 16, 64], "num_warps": [2, 4, 8],
              "num_stages": [1]}
L2_BYTES = 50 * 2**20       # the H100 / H200 L2

# The conv backward's dweight / dbias of one layer in a training step, 0.60-0.70 GB of x and dy
# read (bytes_moved), HBM-bound at roughly 130-170 us on an H200. They differ in the width D (5376 /
# 1536 / 12288: narrow D leaves few channel blocks, the slabs carry the parallelism), x's row pitch
# (a slice of a wider buffer or contiguous), W (4 / 3), L (a multiple of every BLOCK_L or not: the
# row-masked path) and the dtype.
POINTS = [
    # Mamba-2 2.7B (d_model 2560, d_inner 5120, ngroups 1, d_state 128, 80 heads: conv channels D =
    # 5120 + 2 x 128 = 5376, W 4), a micro-batch of 16 x 2048 tokens in bf16; x is the xBC slice
    # (columns 5120 .. 10496) of zxbcdt [B, L, d_in_proj = 2 x 5120 + 256 + 80 = 10576], read in
    # place: 352 + 352 MB read
    {"B": 16, "L": 2048, "D": 5376, "W": 4, "dtype": "bf16", "x_pitch": 10576, "x_col0": 5120},
    # Mamba-1 130M (d_model 768, d_inner D = 1536, d_conv W 4), a micro-batch of 48 x 2048 tokens
    # under fp16 AMP: x contiguous, 302 + 302 MB read
    {"B": 48, "L": 2048, "D": 1536, "W": 4, "dtype": "fp16"},
    # StripedHyena-7B's hyena blocks (hidden 4096: the short causal conv, filter length W 3, runs
    # over the q, k, v projections together, D = 3 x 4096 = 12288), a fine-tuning batch of 3
    # sequences padded to its longest sample, L 4500 (4 rows past a multiple of 8 and 16), bf16:
    # 332 + 332 MB read
    {"B": 3, "L": 4500, "D": 12288, "W": 3, "dtype": "bf16"},
]


def _torch_dtype(name: str):
    import torch
    try:
        return {"bf16": torch.bfloat16, "fp16": torch.float16}[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}") from None


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _check_point(point) -> tuple[int, int, int, int, str, int, int]:
    """(B, L, D, W, dtype, x_pitch, x_col0), every field checked."""
    for k in ("B", "L", "D"):
        v = point[k]
        if not _is_int(v) or v < 1:
            raise ValueError(f"{k}={v!r} must be a positive int")
    W = point.get("W", 4)
    if not _is_int(W) or not 2 <= W <= 4:
        raise ValueError(f"W={W!r} must be 2, 3 or 4 (the conv width)")
    dt = point.get("dtype", "bf16")
    if dt not in DTYPES:
        raise ValueError(f"dtype {dt!r} is not one of {', '.join(DTYPES)}")
    D = point["D"]
    pitch, col0 = point.get("x_pitch", D), point.get("x_col0", 0)
    if not _is_int(col0) or col0 < 0 or not _is_int(pitch) or pitch < col0 + D:
        raise ValueError(f"x_pitch={pitch!r}, x_col0={col0!r}: x's columns x_col0 .. x_col0 + D = {D} must lie "
                         f"inside a row of x_pitch")
    return point["B"], point["L"], D, W, dt, pitch, col0


def _check_cfg(cfg) -> None:
    for k in ("BLOCK_D", "BLOCK_L", "num_warps"):
        v = cfg[k]
        if not _is_int(v) or v < 1 or v & (v - 1):
            raise ValueError(f"{k}={v!r} must be a power of two")
    if cfg["num_warps"] > 16:
        raise ValueError(f"num_warps={cfg['num_warps']} must be at most 16")
    if cfg["BLOCK_D"] * cfg["BLOCK_L"] > 8192:
        raise ValueError(f"BLOCK_D x BLOCK_L = {cfg['BLOCK_D'] * cfg['BLOCK_L']} > 8192 (W + 1 fp32 tile "
                         f"accumulators live in registers)")
    if not _is_int(cfg["L_STEPS"]) or cfg["L_STEPS"] < 1:
        raise ValueError(f"L_STEPS={cfg['L_STEPS']!r} must be a positive int")
    st = cfg.get("num_stages", 1)
    if not _is_int(st) or st < 1:
        raise ValueError(f"num_stages={st!r} must be a positive int")


def _slabs_per_seq(L: int, cfg) -> int:
    """n_ls = cdiv(L, L_STEPS x BLOCK_L): the slabs of one sequence."""
    return triton.cdiv(L, cfg["L_STEPS"] * cfg["BLOCK_L"])


def _grid(B: int, L: int, D: int, cfg) -> tuple[int, int]:
    _check_cfg(cfg)
    return (triton.cdiv(D, cfg["BLOCK_D"]), B * _slabs_per_seq(L, cfg))


def _kernel_args(x, dy, ws, W: int, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    B, L, D = x.shape
    return dict(X=x, DY=dy, WS=ws, D=D, L=L, n_ls=_slabs_per_seq(L, cfg), stride_xb=x.stride(0),
                stride_xl=x.stride(1), stride_yb=dy.stride(0), stride_yl=dy.stride(1), stride_ws=(W + 1) * D,
                KW=W, EVEN_D=int(D % cfg["BLOCK_D"] == 0), EVEN_L=int(L % cfg["BLOCK_L"] == 0),
                BLOCK_D=cfg["BLOCK_D"], BLOCK_L=cfg["BLOCK_L"], L_STEPS=cfg["L_STEPS"])


def conv1d_wgrad(x, dy, width: int, *, BLOCK_D: int = 64, BLOCK_L: int = 16, L_STEPS: int = 16, num_warps: int = 4,
                 num_stages: int = 1):
    """x, dy [B, L, D] (one dtype, fp16 / bf16, unit D stride, any row pitch and batch stride) of a
    causal depthwise conv1d of `width` taps (2-4) -> (dweight [D, width], dbias [D]), both fp32 and
    contiguous: dweight[d, t] = sum_{b, l} dy[b, l, d] x[b, l - (width - 1) + t, d] (x zero before
    each sequence's start), dbias[d] = sum_{b, l} dy[b, l, d]. Deterministic."""
    import torch
    if x.dim() != 3 or dy.dim() != 3:
        raise ValueError(f"expected x and dy [B, L, D]; got {tuple(x.shape)} and {tuple(dy.shape)}")
    if tuple(x.shape) != tuple(dy.shape):
        raise ValueError(f"x {tuple(x.shape)} and dy {tuple(dy.shape)} must have one shape")
    if x.dtype not in (torch.float16, torch.bfloat16) or dy.dtype != x.dtype:
        raise ValueError(f"x and dy must be fp16 / bf16 of one dtype; got {x.dtype} and {dy.dtype}")
    if x.device != dy.device:
        raise ValueError(f"x and dy must be on one device; got {x.device} and {dy.device}")
    if not _is_int(width) or not 2 <= width <= 4:
        raise ValueError(f"width={width!r} must be 2, 3 or 4")
    cfg = {"BLOCK_D": BLOCK_D, "BLOCK_L": BLOCK_L, "L_STEPS": L_STEPS, "num_warps": num_warps,
           "num_stages": num_stages}
    _check_cfg(cfg)
    B, L, D = x.shape
    if D > 1 and (x.stride(2) != 1 or dy.stride(2) != 1):
        raise ValueError(f"x and dy must have unit D stride (channel-last); got strides {tuple(x.stride())} and "
                         f"{tuple(dy.stride())}")
    dweight = torch.zeros((D, width), dtype=torch.float32, device=x.device)
    dbias = torch.zeros((D,), dtype=torch.float32, device=x.device)
    if B == 0 or L == 0 or D == 0:
        return dweight, dbias
    gx, gy = _grid(B, L, D, cfg)
    if gy > 65535:
        raise ValueError(f"B={B} x {_slabs_per_seq(L, cfg)} slabs a sequence = {gy} slabs exceeds the grid's "
                         f"65535: raise L_STEPS or BLOCK_L")
    if (L + BLOCK_L) * max(x.stride(1), dy.stride(1), D) >= 2**31:
        raise ValueError(f"one sequence of L={L} rows {max(x.stride(1), dy.stride(1))} apart exceeds the kernel's "
                         f"int32 row offsets")
    ws = torch.empty((gy, width + 1, D), dtype=torch.float32, device=x.device)
    _kernel[(gx, gy)](**_kernel_args(x, dy, ws, width, cfg), num_warps=num_warps, num_stages=num_stages)
    _reduce_kernel[(triton.cdiv(D, RBLOCK_D), width + 1)](ws, dweight, dbias, D, gy, (width + 1) * D, KW=width,
                                                          RBLOCK_D=RBLOCK_D, RBLOCK_S=RBLOCK_S, num_warps=4)
    return dweight, dbias


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """x: activation-like (N(0, 1) times a per-channel scale in [0.5, 2)), dy: gradient-like (1e-2 N(0, 1),
    times a per-row scale in [0.5, 1.5)), both in the point's dtype, drawn on the CPU from a seeded
    torch.Generator and moved; with x_pitch, x is the columns x_col0 .. x_col0 + D of a zeroed
    [B, L, x_pitch] buffer (read in place); dy contiguous; the width W."""
    import torch
    B, L, D, W, dt, pitch, col0 = _check_point(point)
    gen = torch.Generator(device="cpu").manual_seed(seed)
    x = torch.randn((B, L, D), generator=gen) * (0.5 + 1.5 * torch.rand((D,), generator=gen))
    dy = 1e-2 * torch.randn((B, L, D), generator=gen) * (0.5 + torch.rand((B, L, 1), generator=gen))
    tdt = _torch_dtype(dt)
    x = x.to(tdt).to(device)
    if pitch != D or col0:
        buf = torch.zeros((B, L, pitch), dtype=tdt, device=device)
        buf[:, :, col0:col0 + D] = x
        x = buf[:, :, col0:col0 + D]
    return {"x": x, "dy": dy.to(tdt).to(device), "W": W}


def launch(inputs, cfg):
    """[D, W + 1] fp32: dweight's W columns, then dbias (the wrapper returns them apart)."""
    import torch
    dw, db = conv1d_wgrad(inputs["x"], inputs["dy"], inputs["W"], BLOCK_D=cfg["BLOCK_D"], BLOCK_L=cfg["BLOCK_L"],
                          L_STEPS=cfg["L_STEPS"], num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
    return torch.cat([dw, db[:, None]], dim=1)


def reference(inputs):
    """fp32 [D, W + 1]: x zero-padded by W - 1 rows at each sequence's start, tap t the sum of dy
    times x's rows t .. t + L of the padded sequence; the last column dy's sum."""
    import torch
    x, dy, W = inputs["x"].float(), inputs["dy"].float(), inputs["W"]
    L = x.shape[1]
    xp = torch.nn.functional.pad(x, (0, 0, W - 1, 0))
    cols = [(dy * xp[:, t:t + L]).sum(dim=(0, 1)) for t in range(W)]
    return torch.stack(cols + [dy.sum(dim=(0, 1))], dim=1)


def torch_baseline(inputs):
    """What eager torch runs (F.conv1d's autograd in Mamba's / Hyena's reference path): the
    convolution backward of the depthwise conv (groups = D, padding W - 1) on the [B, D, L] views,
    dy padded by the W - 1 outputs the causal conv drops, weight and bias gradients only, in the
    inputs' dtype; [D, W + 1] in fp32."""
    import torch
    x, dy, W = inputs["x"], inputs["dy"], inputs["W"]
    D = x.shape[2]
    g = torch.nn.functional.pad(dy.transpose(1, 2), (0, W - 1))
    w = torch.empty((D, 1, W), dtype=x.dtype, device=x.device)
    _, dw, db = torch.ops.aten.convolution_backward(g, x.transpose(1, 2), w, [D], [1], [W - 1], [1], False, [0], D,
                                                    [False, True, True])
    return torch.cat([dw[:, 0].float(), db.float()[:, None]], dim=1)


def bytes_moved(point) -> int:
    """x and dy read once (x's used columns only), dW and db written once in fp32."""
    B, L, D, W, _, _, _ = _check_point(point)
    return 2 * B * L * D * 2 + D * (W + 1) * 4


def flops(point) -> int:
    """A multiply-add a tap and an add for the bias a (b, l, d): (2 W + 1) B L D."""
    B, L, D, W, _, _, _ = _check_point(point)
    return (2 * W + 1) * B * L * D


def grid(cfg, point) -> tuple[int, int]:
    """(channel blocks, B x slabs a sequence): the launch grid, the channel block fastest."""
    B, L, D, _, _, _, _ = _check_point(point)
    return _grid(B, L, D, cfg)


def loop_iterations(cfg, point) -> int:
    """BLOCK_L steps of a full slab: L_STEPS, or all of L's steps when one slab holds L."""
    _, L, _, _, _, _, _ = _check_point(point)
    _check_cfg(cfg)
    return min(cfg["L_STEPS"], triton.cdiv(L, cfg["BLOCK_L"]))


def cta_iterations(cfg, point) -> list[int]:
    """Each program's BLOCK_L steps in launch order (channel block fastest, then slab): a sequence's
    last slab takes what is left of L."""
    B, L, D, _, _, _, _ = _check_point(point)
    gx, _ = _grid(B, L, D, cfg)
    slab = cfg["L_STEPS"] * cfg["BLOCK_L"]
    per = [triton.cdiv(min(slab, L - k * slab), cfg["BLOCK_L"]) for k in range(_slabs_per_seq(L, cfg))]
    return [it for _ in range(B) for it in per for _ in range(gx)]


def secondary_kernels(cfg, point) -> list[dict]:
    """`_reduce_kernel`: one program per RBLOCK_D channels and tap (W + 1 rows), B n_ls / RBLOCK_S
    steps each of [RBLOCK_S, RBLOCK_D] fp32 partials. The workspace is written over the whole of
    `_kernel` while 0.4-0.7 GB of x and dy stream through the L2, so all but its last-written part
    comes back from DRAM (dram_bytes = tile_bytes). Its dW / db stores are in bytes_moved."""
    B, L, D, W, _, _, _ = _check_point(point)
    _, n_slabs = _grid(B, L, D, cfg)
    tile = RBLOCK_S * RBLOCK_D * 4
    return [{"name": "_reduce_kernel", "grid": triton.cdiv(D, RBLOCK_D) * (W + 1),
             "iterations": triton.cdiv(n_slabs, RBLOCK_S), "tile_bytes": tile, "dram_bytes": tile,
             "blocks_per_sm": 8}]


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory): x
    [B, L, D] in the point's dtype (a column slice of a [B, L, x_pitch] buffer with x_pitch), dy
    contiguous, the fp32 workspace [B n_ls, W + 1, D]."""
    import torch
    B, L, D, W, dt, pitch, col0 = _check_point(point)
    _check_cfg(cfg)
    tdt = _torch_dtype(dt)
    x = torch.empty((B, L, pitch), dtype=tdt, device="meta")[:, :, col0:col0 + D]
    dy = torch.empty((B, L, D), dtype=tdt, device="meta")
    ws = torch.empty((_grid(B, L, D, cfg)[1], W + 1, D), dtype=torch.float32, device="meta")
    return _kernel_args(x, dy, ws, W, cfg)
