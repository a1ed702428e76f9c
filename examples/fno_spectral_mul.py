"""The Fourier Neural Operator's spectral convolution core (the per-mode complex channel mixing of an
FNO layer, "bixy,ioxy->boxy" after the rfft2), a bare @triton.jit kernel + its launcher.

    Y[b, o, m] = sum_i X[b, i, m] * W[i, o, m]      (complex; fp32 accumulation)

for each retained Fourier mode m of M = 2 x modes1 x modes2 (the two corner blocks of the rfft2's
half spectrum, rows [0, modes1) and [H - modes1, H), columns [0, modes2), flattened corner-major,
then row, then column): every mode is its own tiny complex GEMM [B, I] x [I, O] with its own weights.

Layout (torch.view_as_real: interleaved real / imaginary pairs, the mode axis innermost):
  X: [B, I, M, 2] (a complex [B, I, M] viewed as real), strides (stride_xb, stride_xi, 2, 1): each
     (b, i) row of modes is 2 M contiguous reals; any batch / channel pitch (the modes of a wider
     buffer read in place);
  W: [I, O, M, 2], strides (stride_wi, stride_wo, 2, 1): FNO's two corner weights [I, O, modes1,
     modes2] stacked on a corner axis, [I, O, 2, modes1, modes2] complex, contiguous by default;
  Y: [B, O, M, 2], strides (stride_yb, stride_yo, 2, 1), X's dtype.
Element types: fp32 (complex64), fp16 (complex32, a half-precision FNO block) or bf16 pairs (no
torch complex type: the real view is the storage); X, W and Y share one; products and sums in fp32,
one rounding at the store.

Work split: a 1-D grid of cdiv(M, BLOCK_M) x cdiv(O, BLOCK_O) x cdiv(B, BLOCK_B) programs, the batch
tile fastest, then the output-channel tile, the mode tile slowest: a program owns the output block
Y[b-tile, o-tile, m-tile] ([BLOCK_B, BLOCK_O, BLOCK_M] complex), and the programs that run together
share one W block [I, BLOCK_O, BLOCK_M] (read once from DRAM, then from L2 by the cdiv(B, BLOCK_B)
batch tiles) and one X block [BLOCK_B, I, BLOCK_M] (read by the cdiv(O, BLOCK_O) channel tiles).

Loop: over the input channels, cdiv(I, BLOCK_I) steps of BLOCK_I channels (a runtime loop, the
pointers advanced BLOCK_I channels a step); inside a step a static unroll over the BLOCK_I channels
(their loads issued together: BLOCK_I is the loop's memory-level parallelism). One channel i loads
the X rows [BLOCK_B, 2 BLOCK_M] and the W rows [BLOCK_O, 2 BLOCK_M] as flat contiguous runs (16-byte
vectors), reshapes each to [.., BLOCK_M, 2] and splits the pair (in registers) into real and
imaginary planes, upcast to fp32, and accumulates the broadcast complex product into two fp32
accumulators [BLOCK_B, BLOCK_O, BLOCK_M]:
    acc_re += x_re w_re;  acc_re -= x_im w_im;  acc_im += x_re w_im;  acc_im += x_im w_re
4 FFMAs a complex multiply-add (8 flops). Gauss's 3-multiply trick is not used: on FFMA it saves
nothing -- each accumulator still takes two products (acc_re += k1 - k3, acc_im += k1 + k2 with
k1 = w_re (x_re + x_im), k2 = x_re (w_im - w_re), k3 = x_im (w_re + w_im)): 4 FFMAs, or 1 FMUL +
4 FADD/FFMA with k1 shared, plus the operands' pre-sums; it pays only where a multiply is a matrix
product.
No tl.dot: the operands are mode-contiguous (the rfft's spectral axes are innermost), a mode's GEMM
has no contiguous axis, so tensor cores would need every tile transposed through shared memory and
a 3-D (per-mode batched) dot, which sm_90 runs on mma.sync rather than wgmma, with its M side >= 16
batch rows (half idle at small batches) and, in fp32, tf32 rounding that the complex einsum does not
have. The FMA form keeps fp32 exact; its intensity is the register tile's: per channel a program
loads (BLOCK_B + BLOCK_O) x BLOCK_M complex values for 4 BLOCK_B BLOCK_O BLOCK_M FFMAs. The compiler
gives the accumulator a layout with the lanes along the modes and each thread a set of (b, o) pairs
of one mode; the loaded rows (a coalesced layout along the modes) reach the product's broadcast
layouts through shared memory, every step (a convert_layout of one channel's X and W rows,
(BLOCK_B + BLOCK_O) x BLOCK_M complex values; ldmatrix / stmatrix for the 16-bit types), and the
epilogue's joined (re, im) tile once more to the store's coalesced layout.

Masks: batch rows past B (EVEN_B False) and output channels past O (EVEN_O False) are clamped to
the last row / channel for the loads (in bounds, no mask: they only feed rows that are not stored)
and masked on the store; modes past M (EVEN_M False: BLOCK_M does not divide M) are masked on the
loads (zero) and the store (on the flat offsets, f < 2 M: with M a multiple of 16, Triton's
divisibility specialisation, the mask is constant over a 16-byte vector and the loads stay 128-bit);
input channels past I (EVEN_I False: BLOCK_I does not divide I, only the last step) load zero
(the unrolled channel's test splat to a [1, 2 BLOCK_M] mask: uniform, but a tensor -- a scalar
mask, or a tensor mask & a scalar, reaches triton 3.9's interpreter as an integer array, which its
load refuses). EVEN_* are constexprs the launcher sets. Offsets: the batch-row and output-channel
offsets int64 (B x I x M reach 2^31 reals at large batches), the mode offsets int32, the channel
steps by pointer increments.

Tunables: BLOCK_B (batch rows a program: the reuse of every W value loaded, and the W re-reads from
L2, cdiv(B, BLOCK_B)), BLOCK_O (output channels a program: the reuse of every X value, and the X
re-reads, cdiv(O, BLOCK_O)), BLOCK_M (modes a program: the lanes and vector width along the
contiguous axis), BLOCK_I (channels unrolled a step: loads in flight), num_warps (4 / 8: the
accumulator's 2 BLOCK_B BLOCK_O BLOCK_M fp32 values spread over 128 / 256 threads, 4-128 a thread
over the sweep); num_stages held at 1 (no dot: the loop's loads are not pipelined). Every config
of the sweep compiles for sm_90 at every point with triton 3.6 and 3.9 without spills (31-255
registers, 2-32 KiB of shared memory: SWEEP_AXES' comment). (Off the points, a ragged I together
with a ragged M -- the loads' two-mask branch -- spills 48-68 words at the 8 x 16 x 64 tile on 4
warps; every point's I is a multiple of BLOCK_I.)
Problem parameters (a workload point): B, I, O, modes1, modes2 (M = 2 modes1 modes2), dtype.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _kernel(X, W, Y, B, I, O, M, n_bt, n_ot,
            stride_xb, stride_xi, stride_wi, stride_wo, stride_yb, stride_yo,
            EVEN_B: tl.constexpr, EVEN_O: tl.constexpr, EVEN_M: tl.constexpr, EVEN_I: tl.constexpr,
            BLOCK_B: tl.constexpr, BLOCK_O: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_I: tl.constexpr):
    pid = tl.program_id(0)
    pid_b = pid % n_bt                                   # batch tile fastest, then channel, then mode
    t = pid // n_bt
    pid_o = t % n_ot
    pid_m = t // n_ot

    rb = pid_b * BLOCK_B + tl.arange(0, BLOCK_B)
    ro = pid_o * BLOCK_O + tl.arange(0, BLOCK_O)
    rf = pid_m * (2 * BLOCK_M) + tl.arange(0, 2 * BLOCK_M)     # flat (mode, re / im) offsets
    if EVEN_B:
        lb = rb
    else:
        lb = tl.minimum(rb, B - 1)                       # rows past B: load row B - 1
    if EVEN_O:
        lo = ro
    else:
        lo = tl.minimum(ro, O - 1)                       # channels past O: load channel O - 1
    x_ptrs = X + lb.to(tl.int64)[:, None] * stride_xb + rf[None, :]        # [BLOCK_B, 2 BLOCK_M]
    w_ptrs = W + lo.to(tl.int64)[:, None] * stride_wo + rf[None, :]        # [BLOCK_O, 2 BLOCK_M]
    if not EVEN_M:
        f_ok = (rf < 2 * M)[None, :]

    acc_re = tl.zeros((BLOCK_B, BLOCK_O, BLOCK_M), dtype=tl.float32)
    acc_im = tl.zeros((BLOCK_B, BLOCK_O, BLOCK_M), dtype=tl.float32)
    for i0 in range(0, I, BLOCK_I):
        for ii in tl.static_range(BLOCK_I):
            if EVEN_I and EVEN_M:
                x = tl.load(x_ptrs + ii * stride_xi)
                w = tl.load(w_ptrs + ii * stride_wi)
            elif EVEN_I:
                x = tl.load(x_ptrs + ii * stride_xi, mask=f_ok, other=0.0)
                w = tl.load(w_ptrs + ii * stride_wi, mask=f_ok, other=0.0)
            elif EVEN_M:
                i_ok = (i0 + ii + tl.zeros((1, 2 * BLOCK_M), dtype=tl.int32)) < I
                x = tl.load(x_ptrs + ii * stride_xi, mask=i_ok, other=0.0)
                w = tl.load(w_ptrs + ii * stride_wi, mask=i_ok, other=0.0)
            else:
                ok = f_ok & ((i0 + ii + tl.zeros((1, 2 * BLOCK_M), dtype=tl.int32)) < I)
                x = tl.load(x_ptrs + ii * stride_xi, mask=ok, other=0.0)
                w = tl.load(w_ptrs + ii * stride_wi, mask=ok, other=0.0)
            x_re, x_im = tl.split(tl.reshape(x.to(tl.float32), (BLOCK_B, BLOCK_M, 2)))
            w_re, w_im = tl.split(tl.reshape(w.to(tl.float32), (BLOCK_O, BLOCK_M, 2)))
            x_re = x_re[:, None, :]
            x_im = x_im[:, None, :]
            w_re = w_re[None, :, :]
            w_im = w_im[None, :, :]
            acc_re += x_re * w_re                        # 4 FFMAs a complex multiply-add
            acc_re -= x_im * w_im
            acc_im += x_re * w_im
            acc_im += x_im * w_re
        x_ptrs += BLOCK_I * stride_xi
        w_ptrs += BLOCK_I * stride_wi

    y = tl.reshape(tl.join(acc_re, acc_im), (BLOCK_B, BLOCK_O, 2 * BLOCK_M)).to(Y.dtype.element_ty)
    y_ptrs = Y + (rb.to(tl.int64)[:, None, None] * stride_yb + ro.to(tl.int64)[None, :, None] * stride_yo
                  + rf[None, None, :])
    if EVEN_B and EVEN_O and EVEN_M:
        tl.store(y_ptrs, y)
    else:
        tl.store(y_ptrs, y, mask=(rb < B)[:, None, None] & (ro < O)[None, :, None] & (rf < 2 * M)[None, None, :])


# ---------------------------------------------------------------- launcher
ROLE = "held-out-26"
DTYPES = ("fp32", "bf16", "fp16")
TUNABLES = ("BLOCK_B", "BLOCK_O", "BLOCK_M", "BLOCK_I", "num_warps", "num_stages")
BASELINE = {"BLOCK_B": 8, "BLOCK_O": 16, "BLOCK_M": 32, "BLOCK_I": 2, "num_warps": 4, "num_stages": 1}
# the study's sweep: 2 x 2 x 3 x 2 x 2 = 48 configs; register tiles of 4 x 8 x 16 to 8 x 16 x 64
# complex (the two fp32 accumulators 8-128 values a thread at 4 warps, 4-64 at 8). Compiled for
# sm_90 at every point: triton 3.6, 32-255 registers, no spill, shared memory 2-32 KiB (the fp32
# point's conversions; 2-8 KiB at the 16-bit ones); triton 3.9, 31-254 registers, no spill, 2-8 KiB.
# The most registers (233-255) for the 8 x 16 x 64 tile on 4 warps with BLOCK_I 2; BLOCK_I 4 there
# spills 14 words at the fp32 point (both tritons), hence BLOCK_I stops at 2; a 16 x 32 x 32 tile
# (256 accumulator registers a thread at 4 warps) spills ~600 words, hence the batch x channel tile
# stops at 8 x 16.
SWEEP_AXES = {"BLOCK_B": [4, 8], "BLOCK_O": [8, 16], "BLOCK_M": [16, 32, 64], "BLOCK_I": [1, 2],
              "num_warps": [4, 8], "num_stages": [1]}

# Real FNO spectral layers, 4.7-6.4 GFLOP of complex multiply-adds (8 flops each) over 150-430 MB
# of operands: roughly 100-250 us on an H200 on its fp32 FMA pipes and L2. They differ in the dtype
# (fp32 / bf16 / fp16), which operand dominates the traffic (X and Y at a large batch of a narrow
# FNO; W at a wide one with a small batch), and the ragged block (M = 288 against BLOCK_M 64; B = 20
# against BLOCK_B 8).
POINTS = [
    # FNO-2D on the 64 x 64 Navier-Stokes data of Li et al. 2021 (12 modes a direction kept: M = 2 x
    # 12 x 12 = 288, a ragged last mode tile at BLOCK_M 64) at 64 hidden channels, fp32 (complex64),
    # one spectral layer over a 500-trajectory evaluation / rollout batch (training's batch of 20 is
    # far under 100 us): X, Y 74 MB each, W 9.4 MB; 4.7 GFLOP
    {"B": 500, "I": 64, "O": 64, "modes1": 12, "modes2": 12, "dtype": "fp32"},
    # a wide FNO on Darcy flow (Li et al. 2021's 421 x 421 Darcy, batch 20) at 128 hidden channels and
    # 32 modes a direction (M = 2048) with bf16 storage, fp32 accumulation: W 134 MB, X, Y 21 MB each;
    # B = 20 leaves a ragged batch tile at BLOCK_B 8; 5.4 GFLOP
    {"B": 20, "I": 128, "O": 128, "modes1": 32, "modes2": 32, "dtype": "bf16"},
    # FourCastNet-like channel count (256, the small SFNO configs of FourCastNet v2) on its 0.25 deg
    # ERA5 grid patched 8 x 8 (90 x 180 tokens, rfft2 90 x 91): 24 x 32 modes kept (M = 1536), an
    # 8-member ensemble step, fp16 (complex32: a half-precision FNO block): W 403 MB dominates, X, Y
    # 12.6 MB each; 6.4 GFLOP
    {"B": 8, "I": 256, "O": 256, "modes1": 24, "modes2": 32, "dtype": "fp16"},
]


def _torch_dtype(name: str):
    import torch
    try:
        return {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}") from None


def _elem_bytes(name: str) -> int:
    if name not in DTYPES:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}")
    return 4 if name == "fp32" else 2


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _check_point(point) -> tuple[int, int, int, int, str]:
    """(B, I, O, M, dtype), every field checked."""
    for k in ("B", "I", "O", "modes1", "modes2"):
        v = point[k]
        if not _is_int(v) or v < 1:
            raise ValueError(f"{k}={v!r} must be a positive int")
    dt = point.get("dtype", "fp32")
    _elem_bytes(dt)
    return point["B"], point["I"], point["O"], 2 * point["modes1"] * point["modes2"], dt


def _check_cfg(cfg) -> None:
    for k in ("BLOCK_B", "BLOCK_O", "BLOCK_M", "BLOCK_I"):
        v = cfg[k]
        if not _is_int(v) or v < 1 or v & (v - 1) or v > 256:
            raise ValueError(f"{k}={v!r} must be a power of two from 1 to 256")
    if cfg["num_warps"] not in (1, 2, 4, 8, 16) or not _is_int(cfg["num_warps"]):
        raise ValueError(f"num_warps={cfg['num_warps']!r} must be a power of two from 1 to 16")
    st = cfg.get("num_stages", 1)
    if not _is_int(st) or st < 1:
        raise ValueError(f"num_stages={st!r} must be a positive int")


def _tiles(B: int, O: int, M: int, cfg) -> tuple[int, int, int]:
    """(batch tiles, channel tiles, mode tiles)."""
    return triton.cdiv(B, cfg["BLOCK_B"]), triton.cdiv(O, cfg["BLOCK_O"]), triton.cdiv(M, cfg["BLOCK_M"])


def _grid(B: int, O: int, M: int, cfg) -> tuple[int]:
    _check_cfg(cfg)
    n_bt, n_ot, n_mt = _tiles(B, O, M, cfg)
    return (n_bt * n_ot * n_mt,)


def _kernel_args(x, w, y, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it); x, w, y
    the real views [B, I, M, 2], [I, O, M, 2], [B, O, M, 2]."""
    B, I, M, _ = x.shape
    O = w.shape[1]
    n_bt, n_ot, _ = _tiles(B, O, M, cfg)
    return dict(X=x, W=w, Y=y, B=B, I=I, O=O, M=M, n_bt=n_bt, n_ot=n_ot,
                stride_xb=x.stride(0), stride_xi=x.stride(1), stride_wi=w.stride(0), stride_wo=w.stride(1),
                stride_yb=y.stride(0), stride_yo=y.stride(1),
                EVEN_B=int(B % cfg["BLOCK_B"] == 0), EVEN_O=int(O % cfg["BLOCK_O"] == 0),
                EVEN_M=int(M % cfg["BLOCK_M"] == 0), EVEN_I=int(I % cfg["BLOCK_I"] == 0),
                BLOCK_B=cfg["BLOCK_B"], BLOCK_O=cfg["BLOCK_O"], BLOCK_M=cfg["BLOCK_M"], BLOCK_I=cfg["BLOCK_I"])


def _as_pairs(t, name: str, dims: int):
    """A complex tensor (complex64 / complex32) as its real view, or a real-pair tensor as is."""
    import torch
    if t.is_complex():
        if t.dtype not in (torch.complex64, torch.complex32):
            raise ValueError(f"{name} must be complex64 / complex32 or fp32 / bf16 / fp16 pairs; got {t.dtype}")
        if t.dim() != dims:
            raise ValueError(f"expected complex {name} of {dims} dims; got {tuple(t.shape)}")
        return torch.view_as_real(t)
    if t.dtype not in (torch.float32, torch.bfloat16, torch.float16):
        raise ValueError(f"{name} must be complex64 / complex32 or fp32 / bf16 / fp16 pairs; got {t.dtype}")
    if t.dim() != dims + 1 or t.shape[-1] != 2:
        raise ValueError(f"expected {name} of real pairs [..., 2] with {dims + 1} dims; got {tuple(t.shape)}")
    return t


def _pairs_contiguous(t) -> bool:
    """Unit stride between a pair's reals and 2 between modes (a mode row 2 M contiguous reals)."""
    return (t.shape[-2] <= 1 or t.stride(-2) == 2) and t.stride(-1) == 1


def spectral_mul(x, w, *, out=None, BLOCK_B: int = 8, BLOCK_O: int = 16, BLOCK_M: int = 32, BLOCK_I: int = 4,
                 num_warps: int = 4, num_stages: int = 1):
    """Y[b, o, m] = sum_i x[b, i, m] w[i, o, m], complex, fp32 accumulation.

    x: [B, I, M] complex64 / complex32, or its real view [B, I, M, 2] (fp32 / fp16, or bf16 pairs);
    w: [I, O, M] (or [I, O, M, 2]) of the same element type. Each mode row contiguous (pairs
    adjacent, modes 2 reals apart); any batch / channel strides. Returns Y [B, O, M] complex when x
    is complex, else [B, O, M, 2] pairs, in x's element type; out: optional such tensor (the same
    layout rules), written in place and returned."""
    import torch
    x_c = x.is_complex()
    xr = _as_pairs(x, "x", 3)
    wr = _as_pairs(w, "w", 3)
    if wr.dtype != xr.dtype:
        raise ValueError(f"w's element type {wr.dtype} differs from x's {xr.dtype}")
    cfg = {"BLOCK_B": BLOCK_B, "BLOCK_O": BLOCK_O, "BLOCK_M": BLOCK_M, "BLOCK_I": BLOCK_I, "num_warps": num_warps,
           "num_stages": num_stages}
    _check_cfg(cfg)
    B, I, M, _ = xr.shape
    if wr.shape[0] != I or wr.shape[2] != M:
        raise ValueError(f"w must be [I={I}, O, M={M}]; got {tuple(w.shape)}")
    O = wr.shape[1]
    for name, t in (("x", xr), ("w", wr)):
        if not _pairs_contiguous(t):
            raise ValueError(f"{name} must have contiguous mode rows (pair stride 1, mode stride 2 reals); got "
                             f"strides {tuple(t.stride())}")
    if out is None:
        yr = torch.empty((B, O, M, 2), dtype=xr.dtype, device=xr.device)
        out = torch.view_as_complex(yr) if x_c else yr
    else:
        yr = _as_pairs(out, "out", 3)
        if tuple(yr.shape) != (B, O, M, 2) or yr.dtype != xr.dtype or yr.device != xr.device:
            raise ValueError(f"out must be [{B}, {O}, {M}] of x's element type {xr.dtype} on {xr.device}; got "
                             f"{tuple(out.shape)} {out.dtype} on {out.device}")
        if not _pairs_contiguous(yr):
            raise ValueError(f"out must have contiguous mode rows; got strides {tuple(yr.stride())}")
    if B == 0 or O == 0 or M == 0:
        return out
    if I == 0:
        yr.zero_()
        return out
    if BLOCK_I * (abs(xr.stride(1)) + abs(wr.stride(0))) >= 2**31 or 2 * (M + BLOCK_M) >= 2**31:
        raise ValueError(f"a channel step of x / w strides {xr.stride(1)} / {wr.stride(0)} (or M={M}) exceeds "
                         f"the kernel's int32 offsets")
    (n,) = _grid(B, O, M, cfg)
    if n >= 2**31:
        raise ValueError(f"B={B}, O={O}, M={M} needs {n} programs, past a 1-D grid")
    _kernel[(n,)](**_kernel_args(xr, wr, yr, cfg), num_warps=num_warps, num_stages=num_stages)
    return out


def _mode_wavenumbers(m1: int, m2: int):
    """(k1, k2) of the M = 2 m1 m2 retained modes, corner-major: corner 0 rows k1 = 0..m1-1,
    corner 1 rows k1 = -m1..-1 (the rfft2's negative frequencies), columns k2 = 0..m2-1."""
    import torch
    k1 = torch.cat([torch.arange(m1), torch.arange(-m1, 0)]).repeat_interleave(m2)
    k2 = torch.arange(m2).repeat(2 * m1)
    return k1, k2


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """x: the retained rfft2 coefficients of smooth fields, complex N(0, 1) scaled by 1 / (1 + |k|)
    (|k| the mode's wavenumber) and by a per-(b, i) amplitude in [0.5, 2); w: neuraloperator-style
    spectral weights, complex N(0, 2 / (I + O)); both as real pairs [.., M, 2] in the point's dtype,
    contiguous, drawn on the CPU from a seeded torch.Generator and moved."""
    import torch
    B, I, O, M, dt = _check_point(point)
    gen = torch.Generator(device="cpu").manual_seed(seed)
    k1, k2 = _mode_wavenumbers(point["modes1"], point["modes2"])
    decay = 1.0 / (1.0 + torch.sqrt((k1 * k1 + k2 * k2).float()))
    amp = 0.5 + 1.5 * torch.rand((B, I, 1, 1), generator=gen)
    x = torch.randn((B, I, M, 2), generator=gen) * (decay[:, None] * 0.5 ** 0.5) * amp
    w = torch.randn((I, O, M, 2), generator=gen) * (1.0 / (I + O)) ** 0.5
    return {"x": x.to(_torch_dtype(dt)).to(device), "w": w.to(_torch_dtype(dt)).to(device)}


def launch(inputs, cfg):
    """Y [B, O, M, 2] (real pairs; the real view when the inputs are complex) of inputs["x"],
    inputs["w"], into inputs["out"] when the caller placed an output buffer there."""
    import torch
    y = spectral_mul(inputs["x"], inputs["w"], out=inputs.get("out"), BLOCK_B=cfg["BLOCK_B"],
                     BLOCK_O=cfg["BLOCK_O"], BLOCK_M=cfg["BLOCK_M"], BLOCK_I=cfg["BLOCK_I"],
                     num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
    return torch.view_as_real(y) if y.is_complex() else y


def _complex64(t):
    import torch
    t = t.float() if not t.is_complex() else torch.view_as_real(t).float()
    return torch.view_as_complex(t.contiguous())


def reference(inputs):
    """fp32: the upcast operands as complex64, torch.einsum("bim,iom->bom"), as real pairs [B, O, M, 2]."""
    import torch
    y = torch.einsum("bim,iom->bom", _complex64(inputs["x"]), _complex64(inputs["w"]))
    return torch.view_as_real(y)


def torch_baseline(inputs):
    """What eager torch runs (FNO's compl_mul2d): the complex einsum "bim,iom->bom" in complex64 (torch
    has no bf16 complex type and no complex32 batched matmul: the half inputs are upcast), the
    result cast back to the input's element type, as real pairs."""
    import torch
    x = inputs["x"]
    y = torch.einsum("bim,iom->bom", _complex64(x), _complex64(inputs["w"]))
    return torch.view_as_real(y).to(x.dtype if not x.is_complex() else torch.view_as_real(x).dtype)


def bytes_moved(point) -> int:
    """X and W read once, Y written once (X is re-read by the cdiv(O, BLOCK_O) channel tiles and W by
    the cdiv(B, BLOCK_B) batch tiles; all but the first from L2)."""
    B, I, O, M, dt = _check_point(point)
    return 2 * _elem_bytes(dt) * M * (B * I + I * O + B * O)


def flops(point) -> int:
    """8 real flops a complex multiply-add (4 multiplies, 4 adds; the kernel's 4 FFMAs): 8 B I O M."""
    B, I, O, M, _ = _check_point(point)
    return 8 * B * I * O * M


def grid(cfg, point) -> tuple[int]:
    """(mode tiles x channel tiles x batch tiles,): the 1-D launch grid, batch tiles fastest."""
    B, _, O, M, _ = _check_point(point)
    return _grid(B, O, M, cfg)


def loop_iterations(cfg, point) -> int:
    """Channel steps a program: cdiv(I, BLOCK_I), every program alike (BLOCK_I channels unrolled a step)."""
    _, I, _, _, _ = _check_point(point)
    _check_cfg(cfg)
    return triton.cdiv(I, cfg["BLOCK_I"])


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory): x, w, y
    contiguous real pairs [B, I, M, 2], [I, O, M, 2], [B, O, M, 2] in the point's dtype."""
    import torch
    B, I, O, M, dt = _check_point(point)
    _check_cfg(cfg)
    t = _torch_dtype(dt)
    x = torch.empty((B, I, M, 2), dtype=t, device="meta")
    w = torch.empty((I, O, M, 2), dtype=t, device="meta")
    y = torch.empty((B, O, M, 2), dtype=t, device="meta")
    return _kernel_args(x, w, y, cfg)
