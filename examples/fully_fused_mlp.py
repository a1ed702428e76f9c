"""tiny-cuda-nn's FullyFusedMLP forward (instant-ngp, nerfstudio's nerfacto, NeuS2 / instant-nsr-pl and
the 3D-generation pipelines built on them): a narrow MLP applied to millions of rows with every layer
chained on chip, a bare @triton.jit kernel + its launcher.

    h_1     = relu(x W_in^T)                       x [N, D_in], W_in [W, D_in]
    h_{l+1} = relu(h_l W_hid[l]^T)                 W_hid [H - 1, W, W]  (H = tcnn's n_hidden_layers)
    y       = act(h_H W_out^T)                     W_out [D_out, W], act: none / relu / sigmoid / exp

No biases (tcnn's FullyFusedMLP has none: a bias is learnt through a constant-1 input column, which the
caller's encoding supplies). x: [N, D_in] fp16 (or bf16) with unit column stride and any row pitch (a
column slice of a wider encoding buffer is read in place); the weights in x's dtype in nn.Linear's
[out, in] convention, any strides (tcnn's packed parameter buffer seen as per-layer views works as
is); y: a fresh contiguous [N, D_out] tensor in x's dtype. The width W is 16 / 32 / 64 / 128 (tcnn's
set); D_in and D_out are padded on chip to K_IN = max(16, next_pow2(D_in)) and N_OUT = max(16,
next_pow2(D_out)) -- tl.dot needs 16; tcnn pads to multiples of 16 likewise --, W_in's pad columns and
W_out's pad rows loaded as zeros, and only the D_out real output columns stored.

Accumulation: per point / call, fp32 (the default: what the torch path's cuBLAS does) or fp16 (what
tcnn's wmma fragments do: `acc` fp16, fp16 inputs only, half the accumulator registers). Either way
each hidden activation is rounded to x's dtype after its ReLU, as tcnn keeps it, and is the next
layer's A operand straight from registers; the output activation is applied in fp32, rounded once.

Work split (persistent over row blocks): rows are cut into tiles of BLOCK_N; program p of the grid
G = cdiv(tiles, TILES) loads every weight matrix once -- W_in^T [K_IN, W], the H - 1 hidden W x W
(a tuple built by a static loop), W_out^T [W, N_OUT]: they stay in shared memory as the B operands of
all the program's dots (6-52 KB at the points) -- then walks tiles p, p + G, p + 2G, ... (programs that
run together stream neighbouring rows). A tile: one [BLOCK_N, K_IN] load of x, H + 1 chained tl.dot
(wgmma on sm_90: a warp group owns 64 rows; two warp groups split the width at 64 rows on 8 warps),
the ReLUs and roundings in registers, the output activation and one store of the real columns.
TILES 1 is the plain one-tile-a-program launch (every tile's program re-reads the weights from L2);
TILES 2-16 amortise them and let the tile loop prefetch x (num_stages: cp.async into a ring in shared
memory, when x's rows are read as aligned 16-byte vectors: X_MODE 0 / 2 below).

x's load (X_MODE, from the launcher): 0: D_in = K_IN, whole rows; 2: a ragged D_in in a row pitch
>= K_IN (and every row's pad inside x's storage): whole K_IN-wide rows are read as vectors and the pad
columns zeroed in registers (NaN there cannot leak); 1: else -- the pad columns masked, every element
its own 2-byte load (a contiguous [N, 63] row is 126 bytes: no vector divides it), which Triton does
not pipeline (num_stages then compiles to the same kernel). The row pitch X_PITCH and D_in / D_out are
compile-time constants (a network's shapes are fixed): every element's address is a per-thread base
plus an immediate -- with a runtime pitch the 64 per-element offsets a thread stayed live across the
tile loop at the ragged point (223 registers at BASELINE instead of 122).

Masks: rows past N (EVEN_N = 0: BLOCK_N does not divide N) are masked on the x load (zeros) and the
store; D_in / D_out pads as above (EVEN_OUT = 0: D_out < N_OUT). EVEN_N, X_MODE, EVEN_OUT, N_HID
(= H - 1), OUT_ACT and ACC_F16 are constexprs the launcher sets. Offsets: a tile's first row's offset
int64 (N x pitch passes 2^31 at 2^25 rows of 64), the offsets inside a tile int32 (checked:
BLOCK_N x pitch < 2^31).

Not the same kind as examples/gated_mlp.py (one wide GEMM tile of a SwiGLU MLP, K looped over a weight
streamed from memory) or bias_gelu.py: here the whole network's weights are resident a program and the
activations never leave the chip between layers; the work is many tiny dots a row block (K and N of
16-128): memory-bound on x and y at width 64, tensor-core-bound at 128.

Tunables: BLOCK_N (64 / 128: rows a tile, one or two wgmma row groups, the accumulator registers
BLOCK_N W / (32 num_warps); 32 works -- mma.sync -- but its warps split the rows only and the 128-wide
B operands spilled on 8 warps, so the sweep leaves it out); TILES (1 / 2 / 4 / 16: row blocks a
program, above); num_warps (4 / 8: one or two warp groups); num_stages (1 / 2 / 3: the x prefetch
depth). On sm_90 every config of the sweep compiles at every point without spills: 58-212 registers
under triton 3.6.0, 58-192 under 3.9.0 (the most for 128 rows of the 128-wide point on 4 warps);
shared memory 10-100 KiB (the weights, the x ring, and at X_MODE 2 the zeroed tile's copy). On sm_120
(mma.sync) the same configs compile without spills too (56-216 registers under 3.6, 56-222 under 3.9);
the 3-stage ones at the 128-wide point take 100 KiB, past its 99 KiB a block. Problem
parameters (a workload point): N, d_in, width, hidden (tcnn's n_hidden_layers >= 1), d_out, out_act,
dtype, acc, x_pitch (x's row pitch, default d_in).
"""
from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _mm(a, b, ACC_F16: tl.constexpr):
    """a @ b: fp16 accumulation (tcnn's) or fp32."""
    if ACC_F16:
        r = tl.dot(a, b, out_dtype=tl.float16)
    else:
        r = tl.dot(a, b)
    return r


@triton.jit
def _kernel(X, W_IN, W_HID, W_OUT, O, N,
            stride_wi_o, stride_wi_i, stride_wh_l, stride_wh_o, stride_wh_i, stride_wo_o, stride_wo_i,
            X_PITCH: tl.constexpr, D_IN: tl.constexpr, D_OUT: tl.constexpr, K_IN: tl.constexpr,
            WIDTH: tl.constexpr, N_OUT: tl.constexpr, N_HID: tl.constexpr, OUT_ACT: tl.constexpr,
            ACC_F16: tl.constexpr, EVEN_N: tl.constexpr, X_MODE: tl.constexpr, EVEN_OUT: tl.constexpr,
            BLOCK_N: tl.constexpr):
    pid = tl.program_id(0)
    n_progs = tl.num_programs(0)
    n_tiles = tl.cdiv(N, BLOCK_N)
    dt = X.dtype.element_ty
    rk = tl.arange(0, K_IN)
    rw = tl.arange(0, WIDTH)
    ro = tl.arange(0, N_OUT)
    rn = tl.arange(0, BLOCK_N)

    # ---- the weights, once a program: the dots' B operands, [in, out] views of the [out, in] matrices
    wi_ptrs = W_IN + rk[:, None] * stride_wi_i + rw[None, :] * stride_wi_o
    if X_MODE == 0:
        w_in = tl.load(wi_ptrs)
    else:
        w_in = tl.load(wi_ptrs, mask=(rk < D_IN)[:, None], other=0.0)
    w_hid = ()
    for l in tl.static_range(N_HID):
        w_hid = w_hid + (tl.load(W_HID + l * stride_wh_l + rw[:, None] * stride_wh_i + rw[None, :] * stride_wh_o),)
    wo_ptrs = W_OUT + rw[:, None] * stride_wo_i + ro[None, :] * stride_wo_o
    if EVEN_OUT:
        w_out = tl.load(wo_ptrs)
    else:
        w_out = tl.load(wo_ptrs, mask=(ro < D_OUT)[None, :], other=0.0)

    x_off = rn[:, None] * X_PITCH + rk[None, :]               # int32 inside a tile
    o_off = rn[:, None] * D_OUT + ro[None, :]                 # y is contiguous
    for tile in range(pid, n_tiles, n_progs):
        row0 = tile * BLOCK_N
        x_base = X + row0.to(tl.int64) * X_PITCH
        o_base = O + row0.to(tl.int64) * D_OUT
        if X_MODE == 1:                        # ragged D_in: the pad columns masked (one load an element)
            if EVEN_N:
                x = tl.load(x_base + x_off, mask=(rk < D_IN)[None, :], other=0.0)
            else:
                x = tl.load(x_base + x_off, mask=(rn < N - row0)[:, None] & (rk < D_IN)[None, :], other=0.0)
        else:                                  # whole K_IN-wide rows: aligned vectors, cp.async
            if EVEN_N:
                x = tl.load(x_base + x_off)
            else:
                x = tl.load(x_base + x_off, mask=(rn < N - row0)[:, None], other=0.0)
            if X_MODE == 2:                    # the row pitch's pad columns read, zeroed here
                x = tl.where((rk < D_IN)[None, :], x, 0.0)
        h = tl.maximum(_mm(x, w_in, ACC_F16), 0.0).to(dt)
        for l in tl.static_range(N_HID):
            h = tl.maximum(_mm(h, w_hid[l], ACC_F16), 0.0).to(dt)
        z = _mm(h, w_out, ACC_F16).to(tl.float32)
        if OUT_ACT == 1:
            z = tl.maximum(z, 0.0)
        elif OUT_ACT == 2:
            z = 1.0 / (1.0 + tl.exp(-z))
        elif OUT_ACT == 3:
            z = tl.exp(z)
        y = z.to(dt)
        if EVEN_N:
            if EVEN_OUT:
                tl.store(o_base + o_off, y)
            else:
                tl.store(o_base + o_off, y, mask=(ro < D_OUT)[None, :])
        else:
            if EVEN_OUT:
                tl.store(o_base + o_off, y, mask=(rn < N - row0)[:, None])
            else:
                tl.store(o_base + o_off, y, mask=(rn < N - row0)[:, None] & (ro < D_OUT)[None, :])


# ---------------------------------------------------------------- launcher
ROLE = "held-out-28"
DTYPES = ("fp16", "bf16")
ACTIVATIONS = ("none", "relu", "sigmoid", "exp")      # OUT_ACT 0-3: tcnn's None / ReLU / Sigmoid / Exponential
WIDTHS = (16, 32, 64, 128)                            # tcnn's FullyFusedMLP widths
MAX_IO = 256                                          # D_in, D_out padded at most this
MAX_WEIGHT_BYTES = 160 * 1024                         # the resident weights (shared memory) a program
TUNABLES = ("BLOCK_N", "TILES", "num_warps", "num_stages")
BASELINE = {"BLOCK_N": 128, "TILES": 4, "num_warps": 4, "num_stages": 2}
# the study's sweep: 2 x 4 x 2 x 3 = 48 configs
SWEEP_AXES = {"BLOCK_N": [64, 128], "TILES": [1, 2, 4, 16], "num_warps": [4, 8], "num_stages": [1, 2, 3]}

# Every point is one launch of one network of a real NeRF system, the rows its sample points. They
# differ in the width (64 / 64 / 128), the depth (no / one / one hidden W x W matrix, the 128 one 4x
# the work of a 64 one), the input (X_MODE 0 / 1 / 2: 32 aligned columns, vector loads, cp.async;
# 63 ragged columns of a 126-byte row, one 2-byte load an element, no pipelining; 63 of a 64-pitched
# buffer, vector loads of whole rows, the pad zeroed), the output (16 columns, 32-byte rows, unmasked;
# 3 of a 16-padded dot, 6-byte rows), the output activation and the accumulation (fp32 / fp32 / fp16).
POINTS = [
    # instant-ngp's (and nerfacto's) density network: the hash encoding's 16 levels x 2 features = 32
    # inputs -> 64 -> 16 outputs (log-density + 15 geometry features), tcnn n_hidden_layers 1 (no W x W
    # matrix), no output activation (the renderer applies exp); evaluated on one cascade of the
    # 128^3 occupancy grid as instant-ngp's density-grid update does (2^21 cells). x 134 MB read,
    # y 67 MB written; 12.9 GFLOP
    {"N": 2097152, "d_in": 32, "width": 64, "hidden": 1, "d_out": 16, "out_act": "none", "dtype": "fp16",
     "acc": "fp32", "x_pitch": 32},
    # nerfacto's colour head at render time: one eval chunk of 32768 rays x 48 samples; inputs the SH
    # degree-4 direction encoding (16) + the 15 geometry features + the 32-wide appearance embedding,
    # torch.cat'ed = 63 columns (contiguous, 126-byte rows), -> 64 -> 64 -> 3 RGB with a sigmoid, tcnn
    # n_hidden_layers 2. x 198 MB read, y 9.4 MB written; 29 GFLOP
    {"N": 1572864, "d_in": 63, "width": 64, "hidden": 2, "d_out": 3, "out_act": "sigmoid", "dtype": "fp16",
     "acc": "fp32", "x_pitch": 63},
    # nerfacto-big's colour head (hidden_dim_color 128) on one eval chunk of 32768 rays x 128 samples,
    # accumulating in fp16 as tcnn's FullyFusedMLP does: 63 -> 128 -> 128 -> 3 sigmoid; the 63 input
    # columns written into a [N, 64] fp16 staging buffer (the layout tcnn's own input encoding pads
    # them to), x its first 63 columns. x 537 MB read, y 25 MB written; 223 GFLOP (tensor-core-bound)
    {"N": 4194304, "d_in": 63, "width": 128, "hidden": 2, "d_out": 3, "out_act": "sigmoid", "dtype": "fp16",
     "acc": "fp16", "x_pitch": 64},
]


def _torch_dtype(name: str):
    import torch
    try:
        return {"fp16": torch.float16, "bf16": torch.bfloat16}[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}") from None


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _pad(d: int) -> int:
    """A width padded for tl.dot: the next power of two, at least 16."""
    return max(16, triton.next_power_of_2(d))


def _check_net(d_in, width, hidden, d_out, act, dtype, acc) -> None:
    for k, v in (("d_in", d_in), ("d_out", d_out)):
        if not _is_int(v) or v < 1 or v > MAX_IO:
            raise ValueError(f"{k}={v!r} must be an int from 1 to {MAX_IO}")
    if width not in WIDTHS or not _is_int(width):
        raise ValueError(f"width={width!r} is not one of {', '.join(map(str, WIDTHS))} (tcnn's FullyFusedMLP widths)")
    if not _is_int(hidden) or hidden < 1:
        raise ValueError(f"hidden={hidden!r} (tcnn's n_hidden_layers) must be an int >= 1")
    if act not in ACTIVATIONS:
        raise ValueError(f"out_act {act!r} is not one of {', '.join(ACTIVATIONS)}")
    if dtype not in DTYPES:
        raise ValueError(f"dtype {dtype!r} is not one of {', '.join(DTYPES)}")
    if acc not in ("fp32", "fp16"):
        raise ValueError(f"acc {acc!r} is not one of fp32, fp16")
    if acc == "fp16" and dtype != "fp16":
        raise ValueError(f"acc 'fp16' needs dtype fp16 (tl.dot accumulates {dtype} in fp32 only)")
    wbytes = 2 * (_pad(d_in) * width + (hidden - 1) * width * width + width * _pad(d_out))
    if wbytes > MAX_WEIGHT_BYTES:
        raise ValueError(f"the padded weights take {wbytes} bytes, past the {MAX_WEIGHT_BYTES} a program keeps "
                         f"resident: fewer hidden layers (hidden={hidden}) or a narrower width")


def _check_point(point) -> dict:
    """The point's fields, checked, defaults filled in."""
    n = point["N"]
    if not _is_int(n) or n < 1:
        raise ValueError(f"N={n!r} must be a positive int")
    if n > 2**31 - 1024:
        raise ValueError(f"N={n} must stay below 2^31 - 1024 (int32 row indices)")
    p = dict(N=n, d_in=point["d_in"], width=point["width"], hidden=point.get("hidden", 1), d_out=point["d_out"],
             out_act=point.get("out_act", "none"), dtype=point.get("dtype", "fp16"), acc=point.get("acc", "fp32"))
    _check_net(p["d_in"], p["width"], p["hidden"], p["d_out"], p["out_act"], p["dtype"], p["acc"])
    pitch = point.get("x_pitch", p["d_in"])
    if not _is_int(pitch) or pitch < p["d_in"]:
        raise ValueError(f"x_pitch={pitch!r} must be an int >= d_in={p['d_in']} (x's row pitch in elements)")
    p["x_pitch"] = pitch
    return p


def _check_cfg(cfg, width: int | None = None, acc: str = "fp32") -> None:
    bn = cfg["BLOCK_N"]
    if not _is_int(bn) or bn not in (16, 32, 64, 128, 256):
        raise ValueError(f"BLOCK_N={bn!r} must be a power of two from 16 to 256 (tl.dot's minimum is 16)")
    t = cfg["TILES"]
    if not _is_int(t) or t < 1 or t > 1024:
        raise ValueError(f"TILES={t!r} must be an int from 1 to 1024 (row blocks a program)")
    w = cfg["num_warps"]
    if not _is_int(w) or w not in (1, 2, 4, 8, 16):
        raise ValueError(f"num_warps={w!r} must be a power of two from 1 to 16")
    st = cfg.get("num_stages", 1)
    if not _is_int(st) or st < 1 or st > 8:
        raise ValueError(f"num_stages={st!r} must be an int from 1 to 8")
    if width is not None:
        regs = bn * width * (2 if acc == "fp16" else 4) // (4 * 32 * w)
        if regs > 128:
            raise ValueError(f"BLOCK_N={bn} x width {width} {acc} accumulators take {regs} registers a thread on "
                             f"num_warps={w}, past 128: lower BLOCK_N or raise num_warps")


def _tiles(N: int, cfg) -> int:
    return triton.cdiv(N, cfg["BLOCK_N"])


def _grid(N: int, cfg) -> tuple[int]:
    return (triton.cdiv(_tiles(N, cfg), cfg["TILES"]),)


def _x_mode(x, k_in: int) -> int:
    """How the kernel reads x: 0 whole rows (D_in = K_IN); 2 whole K_IN-wide rows of a wider row pitch,
    the pad columns zeroed in registers (every row's pad lies inside x's storage: aligned vector
    loads); 1 else (the pad columns masked: one 2-byte load an element)."""
    N, d_in = x.shape
    if d_in == k_in:
        return 0
    pitch = x.stride(0) if N > 1 else d_in
    need = x.storage_offset() + (N - 1) * pitch + k_in
    if N > 1 and pitch >= k_in and x.untyped_storage().nbytes() >= need * x.element_size():
        return 2
    return 1


def _kernel_args(x, w_in, w_hid, w_out, out, act: str, acc: str, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it); without hidden
    W x W matrices w_in stands in for w_hid (never read: N_HID 0)."""
    N, d_in = x.shape
    d_out, width = w_out.shape
    n_hid = 0 if w_hid is None else w_hid.shape[0]
    wh = w_in if n_hid == 0 else w_hid
    k_in, n_out = _pad(d_in), _pad(d_out)
    return dict(X=x, W_IN=w_in, W_HID=wh, W_OUT=w_out, O=out, N=N,
                stride_wi_o=w_in.stride(0), stride_wi_i=w_in.stride(1),
                stride_wh_l=0 if n_hid == 0 else w_hid.stride(0), stride_wh_o=wh.stride(-2), stride_wh_i=wh.stride(-1),
                stride_wo_o=w_out.stride(0), stride_wo_i=w_out.stride(1),
                X_PITCH=x.stride(0) if N > 1 else d_in, D_IN=d_in, D_OUT=d_out, K_IN=k_in, WIDTH=width,
                N_OUT=n_out, N_HID=n_hid, OUT_ACT=ACTIVATIONS.index(act), ACC_F16=int(acc == "fp16"),
                EVEN_N=int(N % cfg["BLOCK_N"] == 0), X_MODE=_x_mode(x, k_in), EVEN_OUT=int(d_out == n_out),
                BLOCK_N=cfg["BLOCK_N"])


def _acc_name(acc) -> str:
    import torch
    if acc in ("fp32", torch.float32):
        return "fp32"
    if acc in ("fp16", torch.float16):
        return "fp16"
    raise ValueError(f"acc {acc!r} is not one of fp32, fp16")


def fully_fused_mlp(x, w_in, w_hid, w_out, *, out_act: str = "none", acc="fp32", BLOCK_N: int = 128,
                    TILES: int = 4, num_warps: int = 4, num_stages: int = 2):
    """x [N, D_in] (fp16 / bf16, unit column stride, any row pitch: the kernel is specialised on it);
    w_in [W, D_in], w_hid [H - 1, W, W] or None (no hidden W x W matrix: tcnn's n_hidden_layers 1),
    w_out [D_out, W], all in x's dtype, any strides -> y [N, D_out] in x's dtype, contiguous:
    y = act(relu(...relu(x w_in^T) w_hid[l]^T...) w_out^T), each hidden activation rounded to x's
    dtype. out_act: none / relu / sigmoid / exp; acc: "fp32" or "fp16" (tcnn's; fp16 inputs only)."""
    import torch
    if x.dim() != 2:
        raise ValueError(f"expected x [N, D_in]; got {tuple(x.shape)}")
    if w_in.dim() != 2 or w_out.dim() != 2 or (w_hid is not None and w_hid.dim() != 3):
        raise ValueError(f"expected w_in [W, D_in], w_hid [H - 1, W, W] or None, w_out [D_out, W]; got "
                         f"{tuple(w_in.shape)}, {None if w_hid is None else tuple(w_hid.shape)}, {tuple(w_out.shape)}")
    N, d_in = x.shape
    width = w_in.shape[0]
    if w_in.shape[1] != d_in or w_out.shape[1] != width:
        raise ValueError(f"w_in {tuple(w_in.shape)} must be [W, D_in={d_in}] and w_out {tuple(w_out.shape)} [D_out, W]")
    if w_hid is not None and (w_hid.shape[1] != width or w_hid.shape[2] != width):
        raise ValueError(f"w_hid {tuple(w_hid.shape)} must be [H - 1, W={width}, W={width}]")
    if x.dtype not in (torch.float16, torch.bfloat16):
        raise ValueError(f"x must be fp16 / bf16; got {x.dtype}")
    if any(w is not None and w.dtype != x.dtype for w in (w_in, w_hid, w_out)):
        raise ValueError(f"the weights must be in x's dtype {x.dtype}")
    if any(w is not None and w.device != x.device for w in (w_in, w_hid, w_out)):
        raise ValueError("x and the weights must be on one device")
    dt = "fp16" if x.dtype == torch.float16 else "bf16"
    acc = _acc_name(acc)
    hidden = 1 + (0 if w_hid is None else w_hid.shape[0])
    _check_net(d_in, width, hidden, w_out.shape[0], out_act, dt, acc)
    cfg = {"BLOCK_N": BLOCK_N, "TILES": TILES, "num_warps": num_warps, "num_stages": num_stages}
    _check_cfg(cfg, width, acc)
    if d_in > 1 and x.stride(1) != 1:
        raise ValueError(f"x must have unit column stride; got strides {tuple(x.stride())}")
    if N > 2**31 - 1024:
        raise ValueError(f"N={N} must stay below 2^31 - 1024 (int32 row indices)")
    if BLOCK_N * max(x.stride(0), w_out.shape[0]) >= 2**31:
        raise ValueError(f"a tile of {BLOCK_N} rows {x.stride(0)} elements apart exceeds the kernel's int32 "
                         f"in-tile offsets")
    out = torch.empty((N, w_out.shape[0]), dtype=x.dtype, device=x.device)
    if N == 0:
        return out
    if w_hid is not None and w_hid.shape[0] == 0:
        w_hid = None
    _kernel[_grid(N, cfg)](**_kernel_args(x, w_in, w_hid, w_out, out, out_act, acc, cfg), num_warps=num_warps,
                           num_stages=num_stages)
    return out


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """x like a hash / SH encoding's output, U(-1, 1) in the point's dtype (with x_pitch, the first d_in
    columns of a [N, x_pitch] buffer whose other columns are NaN); the weights Kaiming-uniform for
    ReLU, U(+-sqrt(6 / fan_in)) (the activations stay O(1) through the layers); drawn on the CPU from a
    seeded torch.Generator and moved."""
    import torch
    p = _check_point(point)
    gen = torch.Generator(device="cpu").manual_seed(seed)
    tdt = _torch_dtype(p["dtype"])
    N, d_in, W, d_out, H = p["N"], p["d_in"], p["width"], p["d_out"], p["hidden"]

    def unif(shape, fan_in):
        s = (6.0 / fan_in) ** 0.5
        return ((torch.rand(shape, generator=gen) * 2 - 1) * s).to(tdt).to(device)

    x = (torch.rand((N, d_in), generator=gen) * 2 - 1).to(tdt)
    if p["x_pitch"] > d_in:                  # x the first d_in columns of a wider buffer, the rest NaN
        buf = torch.full((N, p["x_pitch"]), float("nan"), dtype=tdt)
        buf[:, :d_in] = x
        x = buf.to(device)[:, :d_in]
    else:
        x = x.to(device)
    w_in = unif((W, d_in), d_in)
    w_hid = unif((H - 1, W, W), W) if H > 1 else None
    w_out = unif((d_out, W), W)
    return {"x": x, "w_in": w_in, "w_hid": w_hid, "w_out": w_out, "out_act": p["out_act"], "acc": p["acc"]}


def launch(inputs, cfg):
    """y [N, D_out] of inputs["x"], ["w_in"], ["w_hid"] (None: none), ["w_out"], ["out_act"], ["acc"]."""
    return fully_fused_mlp(inputs["x"], inputs["w_in"], inputs.get("w_hid"), inputs["w_out"],
                           out_act=inputs.get("out_act", "none"), acc=inputs.get("acc", "fp32"),
                           BLOCK_N=cfg["BLOCK_N"], TILES=cfg["TILES"], num_warps=cfg["num_warps"],
                           num_stages=cfg["num_stages"])


def _act(z, act: str):
    import torch
    if act == "relu":
        return torch.relu(z)
    if act == "sigmoid":
        return torch.sigmoid(z)
    if act == "exp":
        return torch.exp(z)
    return z


def mlp_forward(inputs, wide, round_to=None, pre_act: bool = False):
    """The network in dtype `wide` (x and the weights upcast), each hidden activation rounded to
    `round_to` (a dtype, or None) after its ReLU; with pre_act the output before its activation."""
    x = inputs["x"].to(wide)
    hs = [inputs["w_in"]] + ([] if inputs.get("w_hid") is None else list(inputs["w_hid"].unbind(0)))
    h = x
    for w in hs:
        h = (h @ w.to(wide).t()).clamp_min(0)
        if round_to is not None:
            h = h.to(round_to).to(wide)
    z = h @ inputs["w_out"].to(wide).t()
    return z if pre_act else _act(z, inputs.get("out_act", "none"))


def reference(inputs):
    """fp32 [N, D_out]: the network in fp64 on the CPU (fp32 on a GPU), the hidden activations rounded
    to x's dtype after each ReLU as the kernel (and tcnn) keeps them; the output unrounded."""
    import torch
    x = inputs["x"]
    wide = torch.float64 if x.device.type == "cpu" else torch.float32
    return mlp_forward(inputs, wide, round_to=x.dtype).float()


def torch_baseline(inputs):
    """The same MLP as torch's layers run it eagerly in x's dtype: F.linear (cuBLAS; fp32 accumulation)
    and a ReLU a layer, the output activation in x's dtype -- H + 1 GEMM launches and an activation
    pass each, every activation through memory."""
    import torch
    import torch.nn.functional as F
    h = inputs["x"]
    hs = [inputs["w_in"]] + ([] if inputs.get("w_hid") is None else list(inputs["w_hid"].unbind(0)))
    for w in hs:
        h = torch.relu(F.linear(h, w))
    return _act(F.linear(h, inputs["w_out"]), inputs.get("out_act", "none"))


def bytes_moved(point) -> int:
    """x read once (its D_in columns; K_IN a row where whole padded rows are read, X_MODE 2), y written
    once (D_out columns), the weights read once (their real elements; every program's own reads hit
    L2)."""
    p = _check_point(point)
    W, H, k_in = p["width"], p["hidden"], _pad(p["d_in"])
    weights = p["d_in"] * W + (H - 1) * W * W + W * p["d_out"]
    x_cols = k_in if p["d_in"] < k_in <= p["x_pitch"] and p["N"] > 1 else p["d_in"]
    return 2 * (p["N"] * (x_cols + p["d_out"]) + weights)


def flops(point) -> int:
    """The tensor cores' multiply-adds on the padded operands, 2 a multiply-add: 2 N (K_IN W + (H - 1) W^2
    + W N_OUT)."""
    p = _check_point(point)
    W, H = p["width"], p["hidden"]
    return 2 * p["N"] * (_pad(p["d_in"]) * W + (H - 1) * W * W + W * _pad(p["d_out"]))


def grid(cfg, point) -> tuple[int]:
    """(cdiv(cdiv(N, BLOCK_N), TILES),): a program a TILES row blocks."""
    p = _check_point(point)
    _check_cfg(cfg, p["width"], p["acc"])
    return _grid(p["N"], cfg)


def loop_iterations(cfg, point) -> int:
    """Row blocks a program at most: cdiv(tiles, grid) (<= TILES; the last programs may get one fewer)."""
    p = _check_point(point)
    _check_cfg(cfg, p["width"], p["acc"])
    return triton.cdiv(_tiles(p["N"], cfg), _grid(p["N"], cfg)[0])


def cta_iterations(cfg, point) -> list[int]:
    """Row blocks of each program in launch order: program p takes tiles p, p + G, ... (G the grid):
    cdiv(tiles - p, G), TILES or one fewer."""
    p = _check_point(point)
    _check_cfg(cfg, p["width"], p["acc"])
    t = _tiles(p["N"], cfg)
    g = _grid(p["N"], cfg)[0]
    return [triton.cdiv(t - i, g) for i in range(g)]


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory): x
    contiguous [N, d_in], the weights contiguous in nn.Linear's layout, y contiguous [N, d_out]."""
    import torch
    p = _check_point(point)
    _check_cfg(cfg, p["width"], p["acc"])
    tdt = _torch_dtype(p["dtype"])
    N, d_in, W, d_out, H = p["N"], p["d_in"], p["width"], p["d_out"], p["hidden"]
    x = torch.empty((N, p["x_pitch"]), dtype=tdt, device="meta")[:, :d_in]
    w_in = torch.empty((W, d_in), dtype=tdt, device="meta")
    w_hid = torch.empty((H - 1, W, W), dtype=tdt, device="meta") if H > 1 else None
    w_out = torch.empty((d_out, W), dtype=tdt, device="meta")
    out = torch.empty((N, d_out), dtype=tdt, device="meta")
    return _kernel_args(x, w_in, w_hid, w_out, out, p["out_act"], p["acc"], cfg)
