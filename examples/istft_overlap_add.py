"""The overlap-add stage of an inverse STFT (torch.istft's last step; Vocos's ISTFT head, iSTFT vocoders,
Demucs's spectral branch), a bare @triton.jit kernel + its launcher: from the frames x [B, n_frames,
n_fft] (already inverse-FFT'd), a synthesis window w [n_fft] and the hop,

    s[b, t]  = sum_f w[t - f hop] x[b, f, t - f hop]          (the frames windowed and overlap-added)
    e[t]     = sum_f w[t - f hop]^2                            (the window-square envelope)
    y[b, u]  = s[b, pad + u] / e[pad + u]   where e > eps,     u = 0 .. length - 1
               s[b, pad + u]                 elsewhere        (librosa's guard; torch.istft raises)

(the sums over the frames f = 0 .. n_frames - 1 with 0 <= t - f hop < n_fft; s = e = 0 past the
frames' span n_fft + (n_frames - 1) hop, so a longer `length` ends in zeros, as torch.istft pads). pad
trims the center padding: n_fft // 2 for torch.istft(center=True), (win - hop) // 2 for Vocos's "same"
padding, 0 for center=False; length defaults to the span minus 2 pad.

x: fp32 / bf16 / fp16 with any strides: frames-major [B, n_frames, n_fft] (irfft over the last dim, a
GEMM's output) or bins-major (Vocos's torch.fft.irfft(spec, dim=1): [B, n_fft, n_frames] in memory,
seen as its transpose -- the frame index has the unit stride). w: [n_fft] fp32 / bf16 / fp16, any
stride (a win_length window zero-padded to n_fft, as torch.istft pads it). y: a fresh contiguous
[B, length] tensor in x's dtype; fp32 accumulation, one rounding at the store.

Next to the other kernels here: im2col_conv is the opposite direction (unfold: a strided copy, no
sum) and maxpool_bwd_scatter overlaps windows but scatters by saved index with colliding adds; this
is the 1-D fold (col2im) with a fixed stride written as a gather -- every output sample summed by the
one program that owns it, in a fixed order, so y is deterministic -- fused with the window multiply,
the envelope normalization and the trim.

Work split (a gather, no atomics): the padded signal's samples t = q hop + r are laid out as rows q
(one hop of samples each: frame slot q) and columns r (0 <= r < hop). Output sample (q, r) takes,
at overlap k = 0 .. K - 1 (K = cdiv(n_fft, hop)), element r + k hop of frame q - k: a program owns a
[BLOCK_F, BLOCK_R] tile of (q, r) -- BLOCK_F consecutive rows, BLOCK_R consecutive columns of one
batch row -- and loads, per overlap, the tile x[b, q - k, r + k hop] (one [BLOCK_F, BLOCK_R] load:
row q's samples contiguous in a frames-major x, column r's frames contiguous in a bins-major one) and
the window's [BLOCK_R] slice w[r + k hop], accumulating s += x w (fp32) and the column sums of w^2.
No division by the hop anywhere; no frame element is read twice (each lands in exactly one output
sample). Grid: B cdiv(rows, BLOCK_F) cdiv(hop, BLOCK_R) programs, 1-D, the column chunk fastest,
then the row block, then the batch row (the programs that run together read neighbouring frames);
rows: the slots q0 = pad // hop .. (pad + length - 1) // hop that hold output samples (1875, 3001
and 336 a batch row at the points).

The envelope: in an inner row block (every row has all K frames: q0 + rb BLOCK_F >= K - 1 and the
block's last slot < n_frames; a runtime branch, all but the first and last blocks of a batch row) it is
the column sum of w^2 -- one reciprocal a column, one multiply an output sample. An edge block
reloads the window (no frame data) in a second loop over the overlaps and sums w^2 row by row over
the frames that exist, then divides element by element (e at the signal's ends counts the frames
that are there). Where the envelope is <= eps the sample is stored undivided.

How the overlap loop is arranged (LOOP):
  0: a rolled loop, K a runtime bound: one tile of loads in flight a warp at a time (nothing
     depends across iterations but the accumulator, yet in-order issue puts the next iteration's
     loads behind this one's adds, which wait for its loads), any K.
  1: fully unrolled (tl.static_range over K, a constexpr): the K tiles' loads issued together, K
     times the bytes in flight a thread and up to K times the loaded registers; K <= 16.
  2: two overlaps an iteration (tl.range's loop_unroll_factor 2, a remainder loop for odd K: the
     Whisper point's K = 3 runs one pair and one single): two tiles in flight.

Layouts: the tile's layout follows the frames' unit stride. Frames-major: the columns fastest, vectors
of X_VEC elements along a row where the launcher finds the row starts aligned (X_VEC: the largest
power of two <= 16 bytes dividing the batch and frame strides, the hop and the base; tl.multiple_of
tells the compiler, which otherwise knows only divisibility by 16), the store likewise (Y_VEC: divides
length, hop and pad: 8 bytes at the Demucs point, whose length 343980 is 4 x an odd number, against
16-byte loads, so its accumulators reach the store through shared memory). Bins-major (the frame
stride 1): the loads run down the rows (a warp's lanes on consecutive frames of one sample, scalar
loads: the runs start at q - k, unaligned), the accumulators converted to the store's row-major
layout through shared memory once at the end (BLOCK_F BLOCK_R x 4 bytes at most).

Masks: the frame q - k exists and q is an output row (a [BLOCK_F] predicate); columns past the hop
(EVEN_R = 0: BLOCK_R does not divide hop) and frame samples past n_fft (J_TAIL = 1: hop does not
divide n_fft, so the last overlap reaches past the frame's end) are masked on the window's and the
frames' loads (a [BLOCK_R] predicate). The store's bounds are per row (r in [pad - q hop, pad + length
- q hop)), multiples of Y_VEC, so the masked edge rows keep their vectors. Offsets: the batch row's
base int64 (B n_frames n_fft passes 2^31 at a few times the points), those inside one batch row int32
(checked: the frames' extent in a batch row and pad + length + 2 hop < 2^31).

Tunables: BLOCK_F (rows a program: 8 / 16 / 32), BLOCK_R (columns: 32 / 64 / 128; the output samples a
program, 256-4096, and, against a hop of 160, the masked lanes: 160 = 5 x 32, but 3 x 64 and 2 x 128
leave 32 and 96 of the last chunk's lanes idle), LOOP (0 / 1 / 2, above), num_warps (4 / 8); num_stages
held at 1 (the loop's loads feed only adds: nothing for the pipeliner). 1-32 tile elements a thread.
Every config of the sweep (54) compiles for sm_90 at every point without spills. Triton 3.6 (ptxas
12.8): 24-237 registers (Vocos 27-237, the most for 32 x 128 on 4 warps with LOOP 2: 32 scalar loads
a tile, two tiles' 64-bit addresses; Whisper 27-168; Demucs 24-165); shared memory 1-16 KiB at the
Vocos point (the bins-major accumulators' conversion), 0-8 KiB at the frames-major ones (the edge
blocks' envelope and, at Demucs, the 8-byte store's layout). Triton 3.9 (ptxas 12.9): 24-208
registers (Vocos 28-208, Whisper 26-168, Demucs 24-166), the same shared memory. 64 elements a
thread (32 x 128 on 2 warps) takes 177-255 registers at every point and, fully unrolled at the Vocos
point, spills 210-214 (four tiles of 64 scalar loads, each with its 64-bit address): hence 4 / 8
warps. On sm_120 (99 KiB a block) every config compiles, 25-168 registers (ptxas caps the kernel at
168 there) and 0-16 KiB of shared memory, none spilling under 3.6; under 3.9 the largest tile in pairs
(32 x 128, LOOP 2, 4 warps) spills 4 registers at the Vocos point.
Problem parameters (a workload point): B, n_frames, n_fft, hop, dtype (fp32 / bf16 / fp16), layout
("frames": [B, n_frames, n_fft] contiguous; "bins": [B, n_fft, n_frames] in memory, transposed), pad
(default n_fft // 2), length (default n_fft + (n_frames - 1) hop - 2 pad), win_length (the Hann
window's length, zero-padded centered to n_fft; default n_fft).
"""

from __future__ import annotations

import triton
import triton.language as tl

MAX_UNROLL = 16                 # LOOP 1 unrolls the K overlaps
MAX_PER_THREAD = 32             # tile elements a thread (fp32 accumulators and envelope: 2 registers each)
EPS = 1e-11                     # the envelope below which a sample is left undivided (torch.istft's NOLA bound)


@triton.jit
def _window(WIN, r, j, n_fft, hop, stride_w, EVEN_R: tl.constexpr, J_TAIL: tl.constexpr):
    """w[j] as fp32, 0 in the columns past the hop (EVEN_R 0) and the samples past n_fft (J_TAIL 1)."""
    if EVEN_R and not J_TAIL:
        w = tl.load(WIN + j * stride_w)
    else:
        w = tl.load(WIN + j * stride_w, mask=_cols_ok(r, j, n_fft, hop, EVEN_R, J_TAIL), other=0.0)
    return w.to(tl.float32)


@triton.jit
def _cols_ok(r, j, n_fft, hop, EVEN_R: tl.constexpr, J_TAIL: tl.constexpr):
    if EVEN_R:
        ok = j < n_fft
    elif J_TAIL:
        ok = (r < hop) & (j < n_fft)
    else:
        ok = r < hop
    return ok


@triton.jit
def _overlap(acc, wsum, FR, WIN, fb, q, q_hi, r, k, n_frames, n_fft, hop, stride_ff, stride_fj, stride_w,
             EVEN_R: tl.constexpr, J_TAIL: tl.constexpr, X_VEC: tl.constexpr):
    """Overlap k of the tile: frame q - k's samples r + k hop, windowed, into acc; w^2 into wsum."""
    f = q - k                                   # [BLOCK_F] the frame each row takes
    f_ok = (f >= 0) & (f < n_frames) & (q < q_hi)
    j = r + k * hop                             # [BLOCK_R] the sample of that frame
    w = _window(WIN, r, j, n_fft, hop, stride_w, EVEN_R, J_TAIL)
    if EVEN_R and not J_TAIL:
        m = f_ok[:, None]
    else:
        m = f_ok[:, None] & _cols_ok(r, j, n_fft, hop, EVEN_R, J_TAIL)[None, :]
    if X_VEC > 0:                               # unit sample stride: a row's samples contiguous
        rows = fb + (f * stride_ff + k * hop)
        off = rows[:, None] + r[None, :]
        if X_VEC > 1:                           # every row starts on an X_VEC boundary (launcher-checked)
            off = tl.multiple_of(off, [1, X_VEC])
    else:
        off = fb + (f[:, None] * stride_ff + j[None, :] * stride_fj)
    x = tl.load(FR + off, mask=m, other=0.0).to(tl.float32)
    return acc + x * w[None, :], wsum + (w * w)[None, :]


@triton.jit
def _edge_env(env, WIN, q, r, k, n_frames, n_fft, hop, stride_w, EVEN_R: tl.constexpr, J_TAIL: tl.constexpr):
    """env + w[r + k hop]^2 in the rows whose frame q - k exists."""
    f = q - k
    w = _window(WIN, r, r + k * hop, n_fft, hop, stride_w, EVEN_R, J_TAIL)
    return env + tl.where(((f >= 0) & (f < n_frames))[:, None], (w * w)[None, :], 0.0)


@triton.jit
def _kernel(FR, WIN, Y, n_frames, n_fft, hop, pad, L, q0, q_hi, n_rb, n_rc, n_ovl,
            stride_fb, stride_ff, stride_fj, stride_w, eps,
            EVEN_R: tl.constexpr, J_TAIL: tl.constexpr, X_VEC: tl.constexpr, Y_VEC: tl.constexpr,
            LOOP: tl.constexpr, K_OVL: tl.constexpr, BLOCK_F: tl.constexpr, BLOCK_R: tl.constexpr):
    pid = tl.program_id(0)
    rc = pid % n_rc                             # the column chunk fastest, then the row block, the batch row
    rest = pid // n_rc
    rb = rest % n_rb
    b = (rest // n_rb).to(tl.int64)
    first = q0 + rb * BLOCK_F
    q = first + tl.arange(0, BLOCK_F)           # frame slots (rows of hop samples)
    r = rc * BLOCK_R + tl.arange(0, BLOCK_R)    # the samples of a slot
    fb = b * stride_fb
    acc = tl.zeros((BLOCK_F, BLOCK_R), dtype=tl.float32)
    wsum = tl.zeros((1, BLOCK_R), dtype=tl.float32)     # sum over the K overlaps of w^2: an inner row's envelope
    if LOOP == 1:
        for k in tl.static_range(K_OVL):
            acc, wsum = _overlap(acc, wsum, FR, WIN, fb, q, q_hi, r, k, n_frames, n_fft, hop, stride_ff,
                                 stride_fj, stride_w, EVEN_R, J_TAIL, X_VEC)
    else:
        for k in tl.range(0, n_ovl, loop_unroll_factor=LOOP):
            acc, wsum = _overlap(acc, wsum, FR, WIN, fb, q, q_hi, r, k, n_frames, n_fft, hop, stride_ff,
                                 stride_fj, stride_w, EVEN_R, J_TAIL, X_VEC)
    if (first >= n_ovl - 1) & (first + BLOCK_F <= n_frames):
        # an inner block: every row has all K frames, the envelope a function of r alone (one reciprocal a
        # column); undivided where it is (near) zero
        y = acc * (1.0 / tl.where(wsum > eps, wsum, 1.0))
    else:
        # an edge block (the signal's first / last K - 1 slots in it): the envelope counts the frames
        # that exist, row by row (the window reloaded: no frame data)
        env = tl.zeros((BLOCK_F, BLOCK_R), dtype=tl.float32)
        if LOOP == 1:
            for k in tl.static_range(K_OVL):
                env = _edge_env(env, WIN, q, r, k, n_frames, n_fft, hop, stride_w, EVEN_R, J_TAIL)
        else:
            for k in tl.range(0, n_ovl, loop_unroll_factor=LOOP):
                env = _edge_env(env, WIN, q, r, k, n_frames, n_fft, hop, stride_w, EVEN_R, J_TAIL)
        y = acc / tl.where(env > eps, env, 1.0)

    # row q holds output samples u = q hop + r - pad for r in [lo, hi): per-row bounds, multiples of Y_VEC
    lo = pad - q * hop
    hi = lo + L
    if not EVEN_R:
        hi = tl.minimum(hi, hop)
    yrow = b * L - lo                           # [BLOCK_F] int64: row q's sample 0 in y
    if Y_VEC > 1:
        lo = tl.multiple_of(lo, Y_VEC)
        hi = tl.multiple_of(hi, Y_VEC)
    yo = yrow[:, None] + r[None, :]
    if Y_VEC > 1:
        yo = tl.multiple_of(yo, [1, Y_VEC])
    ok = (r[None, :] >= lo[:, None]) & (r[None, :] < hi[:, None])
    tl.store(Y + yo, y.to(Y.dtype.element_ty), mask=ok)


# ---------------------------------------------------------------- launcher
ROLE = "held-out-29"
DTYPES = ("fp32", "bf16", "fp16")
TUNABLES = ("BLOCK_F", "BLOCK_R", "LOOP", "num_warps", "num_stages")
BASELINE = {"BLOCK_F": 16, "BLOCK_R": 64, "LOOP": 1, "num_warps": 4, "num_stages": 1}
# the study's sweep: 3 x 3 x 2 x 3 = 54 configs, tiles of 256-4096 output samples, 1-64 a thread
SWEEP_AXES = {"BLOCK_F": [8, 16, 32], "BLOCK_R": [32, 64, 128], "LOOP": [0, 1, 2], "num_warps": [4, 8],
              "num_stages": [1]}

# One call each, HBM-bound: K = n_fft / hop reads of every output sample's frames plus the write,
# 215-307 MB, roughly 70-100 us at an H100's ~3 TB/s. They differ in the overlap (K 4, 3 with a
# ragged last overlap, 4), the hop (256; 160, which no power of two above 32 divides; 1024), the dtype
# (fp32 / bf16 / fp16), the frames' layout (bins-major: the frame index contiguous; frames-major) and
# the trim (Vocos's "same" pad; center; center with an explicit length that ends mid-row and leaves y's
# rows 8-byte aligned only).
POINTS = [
    # Vocos (gemelo-ai/vocos, charactr/vocos-mel-24khz: n_fft 1024, hop 256, Hann 1024, "same" padding,
    # pad (1024 - 256) / 2 = 384): its ISTFT head after torch.fft.irfft(spec, 1024, dim=1), whose fp32
    # output is [B, n_fft, T] -- the frames read in place through the transposed view. A serving batch
    # of 32 utterances of 20 s at 24 kHz: T = 1875 frames, y [32, 480000] fp32. 246 MB read, 61 MB
    # written
    {"B": 32, "n_frames": 1875, "n_fft": 1024, "hop": 256, "dtype": "fp32", "layout": "bins", "pad": 384},
    # A 16 kHz iSTFT vocoder with Whisper's STFT (n_fft 400, hop 160, Hann 400, center=True: pad 200)
    # whose head computes the frames as a bf16 GEMM with the inverse-DFT basis (the ONNX / TensorRT
    # exports' irfft-free form): frames-major [B, T, 400] bf16. 64 clips of 30 s (Whisper's window):
    # 3001 frames, y [64, 480000] bf16. K = 3 overlaps, the last reaching past n_fft for r >= 80.
    # 154 MB read, 61 MB written
    {"B": 64, "n_frames": 3001, "n_fft": 400, "hop": 160, "dtype": "bf16", "layout": "frames", "pad": 200},
    # HTDemucs (facebookresearch/demucs: n_fft 4096, hop 1024, Hann, center, the istft's length the
    # segment's) on 44.1 kHz music: 8 segments of 7.8 s x 4 stems x 2 channels = 64 rows of 340
    # frames, fp16 frames-major (an fp16 serving path's half-precision cuFFT irfft: n_fft a power of
    # two), length 343980: y's rows 8 bytes aligned (343980 = 4 x 85995). 178 MB read, 44 MB written
    {"B": 64, "n_frames": 340, "n_fft": 4096, "hop": 1024, "dtype": "fp16", "layout": "frames", "pad": 2048,
     "length": 343980},
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


def _span(n_frames: int, n_fft: int, hop: int) -> int:
    """Samples the frames cover: n_fft + (n_frames - 1) hop."""
    return n_fft + (n_frames - 1) * hop


def _check_geometry(n_frames: int, n_fft: int, hop: int, pad: int, length: int) -> None:
    for k, v in (("n_frames", n_frames), ("n_fft", n_fft), ("hop", hop)):
        if not _is_int(v) or v < 1:
            raise ValueError(f"{k}={v!r} must be a positive int")
    if hop > n_fft:
        raise ValueError(f"hop={hop} must be <= n_fft={n_fft} (frames that do not overlap leave gaps)")
    if not _is_int(pad) or pad < 0:
        raise ValueError(f"pad={pad!r} must be a non-negative int")
    if not _is_int(length) or length < 0:
        raise ValueError(f"length={length!r} must be a non-negative int")
    if pad + length + 2 * hop >= 2**31 or _span(n_frames, n_fft, hop) >= 2**31:
        raise ValueError(f"pad + length = {pad + length} samples exceed the kernel's int32 sample indices")


def _check_point(point) -> dict:
    """The point's fields, checked, defaults filled in."""
    for k in ("B", "n_frames", "n_fft", "hop"):
        v = point[k]
        if not _is_int(v) or v < 1:
            raise ValueError(f"{k}={v!r} must be a positive int")
    B, nf, n_fft, hop = point["B"], point["n_frames"], point["n_fft"], point["hop"]
    dt = point.get("dtype", "fp32")
    _elem_bytes(dt)
    lay = point.get("layout", "frames")
    if lay not in ("frames", "bins"):
        raise ValueError(f"layout={lay!r} must be 'frames' ([B, n_frames, n_fft]) or 'bins' ([B, n_fft, n_frames])")
    pad = point.get("pad", n_fft // 2)
    if not _is_int(pad) or pad < 0:
        raise ValueError(f"pad={pad!r} must be a non-negative int")
    length = point.get("length", max(0, _span(nf, n_fft, hop) - 2 * pad))
    wl = point.get("win_length", n_fft)
    if not _is_int(wl) or not 1 <= wl <= n_fft:
        raise ValueError(f"win_length={wl!r} must be an int from 1 to n_fft={n_fft}")
    _check_geometry(nf, n_fft, hop, pad, length)
    return dict(B=B, n_frames=nf, n_fft=n_fft, hop=hop, dtype=dt, layout=lay, pad=pad, length=length, win_length=wl)


def _check_cfg(cfg, K: int | None = None) -> None:
    for k in ("BLOCK_F", "BLOCK_R"):
        v = cfg[k]
        if not _is_int(v) or v < 1 or v > 1024 or v & (v - 1):
            raise ValueError(f"{k}={v!r} must be a power of two from 1 to 1024")
    if cfg["LOOP"] not in (0, 1, 2) or not _is_int(cfg["LOOP"]):
        raise ValueError(f"LOOP={cfg['LOOP']!r} must be 0 (a rolled overlap loop), 1 (fully unrolled) or 2 (two "
                         f"overlaps an iteration)")
    w = cfg["num_warps"]
    if not _is_int(w) or w not in (1, 2, 4, 8, 16, 32):
        raise ValueError(f"num_warps={w!r} must be a power of two from 1 to 32")
    st = cfg.get("num_stages", 1)
    if not _is_int(st) or st < 1:
        raise ValueError(f"num_stages={st!r} must be a positive int")
    per = cfg["BLOCK_F"] * cfg["BLOCK_R"] // (32 * w)
    if per > MAX_PER_THREAD:
        raise ValueError(f"BLOCK_F x BLOCK_R = {cfg['BLOCK_F'] * cfg['BLOCK_R']} on num_warps={w} is {per} tile "
                         f"elements a thread, past {MAX_PER_THREAD}: raise num_warps or shrink the tile")
    if K is not None and cfg["LOOP"] == 1 and K > MAX_UNROLL:
        raise ValueError(f"LOOP=1 unrolls the K = cdiv(n_fft, hop) = {K} overlaps, past {MAX_UNROLL}: take LOOP=0")


def _rows(hop: int, pad: int, length: int) -> tuple[int, int]:
    """(q0, q_hi): the frame slots (rows of hop samples) that hold output samples, q0 <= q < q_hi."""
    if length == 0:
        return 0, 0
    return pad // hop, (pad + length - 1) // hop + 1


def _grid_dims(B: int, hop: int, pad: int, length: int, cfg) -> tuple[int, int, int]:
    """(B, n_rb, n_rc): batch rows, row blocks of BLOCK_F slots, column chunks of BLOCK_R samples."""
    q0, q_hi = _rows(hop, pad, length)
    return B, triton.cdiv(q_hi - q0, cfg["BLOCK_F"]), triton.cdiv(hop, cfg["BLOCK_R"])


def _vec(ptr: int, elem: int, cap: int, *ints: int) -> int:
    """The largest power of two v <= min(16 bytes / elem, cap) dividing every int and the base
    address in elements."""
    v = max(1, min(16 // elem, cap))
    while v > 1 and (ptr % (v * elem) or any(i % v for i in ints)):
        v //= 2
    return v


def _kernel_args(frames, window, y, hop: int, pad: int, eps: float, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    B, nf, n_fft = frames.shape
    L = y.shape[1]
    K = triton.cdiv(n_fft, hop)
    q0, q_hi = _rows(hop, pad, L)
    _, n_rb, n_rc = _grid_dims(B, hop, pad, L, cfg)
    elem = frames.element_size()
    sfb, sff, sfj = frames.stride()
    if B == 1:
        sfb = 0
    if nf == 1:
        sff = 0
    if n_fft == 1:
        sfj = 1
    xv = _vec(frames.data_ptr(), elem, cfg["BLOCK_R"], sfb, sff, hop) if sfj == 1 else 0
    yv = _vec(y.data_ptr(), elem, cfg["BLOCK_R"], L, hop, pad)
    return dict(FR=frames, WIN=window, Y=y, n_frames=nf, n_fft=n_fft, hop=hop, pad=pad, L=L, q0=q0, q_hi=q_hi,
                n_rb=n_rb, n_rc=n_rc, n_ovl=K, stride_fb=sfb, stride_ff=sff, stride_fj=sfj,
                stride_w=window.stride(0), eps=float(eps),
                EVEN_R=int(hop % cfg["BLOCK_R"] == 0), J_TAIL=int(n_fft % hop != 0), X_VEC=xv, Y_VEC=yv,
                LOOP=cfg["LOOP"], K_OVL=K if cfg["LOOP"] == 1 else 0,
                BLOCK_F=cfg["BLOCK_F"], BLOCK_R=cfg["BLOCK_R"])


def istft_overlap_add(frames, window, hop_length: int, *, center: bool = True, pad: int | None = None,
                      length: int | None = None, eps: float = EPS, BLOCK_F: int = 16, BLOCK_R: int = 64,
                      LOOP: int = 1, num_warps: int = 4, num_stages: int = 1):
    """frames [B, n_frames, n_fft] (fp32 / bf16 / fp16, any strides: e.g. irfft(spec, dim=1).transpose(1, 2)),
    window [n_fft] (fp32 / bf16 / fp16, any stride; None: rectangular) -> y [B, length] in the frames'
    dtype: the windowed frames overlap-added at hop_length, divided by the window-square envelope where
    it exceeds eps, the first `pad` samples trimmed (default n_fft // 2 with center, else 0; Vocos's
    "same": (n_fft - hop) // 2), `length` samples kept (default n_fft + (n_frames - 1) hop - 2 pad;
    past the frames' span zeros)."""
    import torch
    if frames.dim() != 3:
        raise ValueError(f"expected frames [B, n_frames, n_fft]; got {tuple(frames.shape)}")
    if frames.dtype not in (torch.float32, torch.bfloat16, torch.float16):
        raise ValueError(f"frames must be fp32 / bf16 / fp16; got {frames.dtype}")
    B, nf, n_fft = frames.shape
    if window is None:
        window = torch.ones((n_fft,), dtype=torch.float32, device=frames.device)
    if window.dim() != 1 or window.shape[0] != n_fft:
        raise ValueError(f"window must be [{n_fft}] (n_fft); got {tuple(window.shape)}")
    if window.dtype not in (torch.float32, torch.bfloat16, torch.float16) or window.device != frames.device:
        raise ValueError(f"window must be fp32 / bf16 / fp16 on {frames.device}; got {window.dtype} on {window.device}")
    if not _is_int(hop_length) or hop_length < 1:
        raise ValueError(f"hop_length={hop_length!r} must be a positive int")
    if not isinstance(eps, (int, float)) or isinstance(eps, bool) or not eps >= 0 or eps == float("inf"):
        raise ValueError(f"eps={eps!r} must be a finite number >= 0")
    if pad is None:
        pad = n_fft // 2 if center else 0
    if not _is_int(pad) or pad < 0:
        raise ValueError(f"pad={pad!r} must be a non-negative int")
    if length is None:
        length = max(0, _span(nf, n_fft, hop_length) - 2 * pad)
    if nf == 0 or B == 0:                         # no frames: nothing overlaps, the output all zeros
        if not _is_int(length) or length < 0:
            raise ValueError(f"length={length!r} must be a non-negative int")
        return torch.zeros((B, length), dtype=frames.dtype, device=frames.device)
    _check_geometry(nf, n_fft, hop_length, pad, length)
    cfg = {"BLOCK_F": BLOCK_F, "BLOCK_R": BLOCK_R, "LOOP": LOOP, "num_warps": num_warps, "num_stages": num_stages}
    K = triton.cdiv(n_fft, hop_length)
    _check_cfg(cfg, K)
    y = torch.empty((B, length), dtype=frames.dtype, device=frames.device)
    if y.numel() == 0:
        return y
    sf = frames.stride()
    if (nf - 1) * abs(sf[1]) + (n_fft - 1) * abs(sf[2]) >= 2**31:
        raise ValueError(f"one batch row of frames with strides {tuple(sf)} exceeds the kernel's int32 offsets")
    n_b, n_rb, n_rc = _grid_dims(B, hop_length, pad, length, cfg)
    if n_b * n_rb * n_rc >= 2**31:
        raise ValueError(f"{n_b} x {n_rb} x {n_rc} programs exceed the grid's 2^31 - 1: raise BLOCK_F")
    _kernel[(n_b * n_rb * n_rc,)](**_kernel_args(frames, window, y, hop_length, pad, eps, cfg),
                                  num_warps=num_warps, num_stages=num_stages)
    return y


def hann_window(n_fft: int, win_length: int | None = None, device="cpu"):
    """torch.istft's window: a periodic Hann of win_length, zero-padded centered to n_fft (fp32)."""
    import torch
    wl = n_fft if win_length is None else win_length
    w = torch.hann_window(wl, periodic=True, dtype=torch.float32, device=device)
    left = (n_fft - wl) // 2
    return torch.nn.functional.pad(w, (left, n_fft - wl - left))


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """frames: a white signal x ~ N(0, 0.3^2) over the frames' span, cut into frames at the hop and
    windowed (a consistent STFT analysis, what the overlap-add inverts) plus N(0, 0.05^2) frame noise
    (a vocoder's frames are not consistent), in the point's dtype and layout (bins-major: a contiguous
    [B, n_fft, n_frames] tensor transposed). window: the periodic Hann (hann_window). hop, pad,
    length. Drawn on the device from a seeded generator."""
    import torch
    q = _check_point(point)
    B, nf, n_fft, hop = q["B"], q["n_frames"], q["n_fft"], q["hop"]
    gen = torch.Generator(device=device).manual_seed(seed)
    w = hann_window(n_fft, q["win_length"], device=device)
    x = 0.3 * torch.randn((B, _span(nf, n_fft, hop)), generator=gen, device=device)
    fr = x.unfold(1, n_fft, hop) * w + 0.05 * torch.randn((B, nf, n_fft), generator=gen, device=device)
    tdt = _torch_dtype(q["dtype"])
    if q["layout"] == "bins":
        frames = fr.transpose(1, 2).to(tdt).contiguous().transpose(1, 2)
    else:
        frames = fr.to(tdt).contiguous()
    return {"frames": frames, "window": w, "hop": hop, "pad": q["pad"], "length": q["length"]}


def launch(inputs, cfg):
    """y [B, length] in the frames' dtype."""
    return istft_overlap_add(inputs["frames"], inputs["window"], inputs["hop"], pad=inputs["pad"],
                             length=inputs["length"], eps=inputs.get("eps", EPS), BLOCK_F=cfg["BLOCK_F"],
                             BLOCK_R=cfg["BLOCK_R"], LOOP=cfg["LOOP"], num_warps=cfg["num_warps"],
                             num_stages=cfg["num_stages"])


def ola_reference(frames, window, hop: int, pad: int, length: int, eps: float = EPS, dtype=None):
    """(y [B, length], the envelope [length]) by index_add over the padded span in torch (float64 unless
    `dtype`): sum of w x, sum of w^2, trimmed and zero-extended to [pad, pad + length), divided where the
    envelope exceeds eps (window None: rectangular)."""
    import torch
    dt = torch.float64 if dtype is None else dtype
    B, nf, n_fft = frames.shape
    span = _span(nf, n_fft, hop)
    dev = frames.device
    idx = (torch.arange(nf, device=dev)[:, None] * hop + torch.arange(n_fft, device=dev)[None, :]).reshape(-1)
    w = torch.ones((n_fft,), dtype=dt, device=dev) if window is None else window.to(dt)
    s = torch.zeros((B, span), dtype=dt, device=dev).index_add_(1, idx, (frames.to(dt) * w).reshape(B, -1))
    e = torch.zeros((span,), dtype=dt, device=dev).index_add_(0, idx, (w * w).expand(nf, n_fft).reshape(-1))
    ys = torch.zeros((B, length), dtype=dt, device=dev)
    es = torch.zeros((length,), dtype=dt, device=dev)
    n = max(0, min(length, span - pad))
    ys[:, :n] = s[:, pad:pad + n]
    es[:n] = e[pad:pad + n]
    return torch.where(es > eps, ys / torch.where(es > eps, es, torch.ones_like(es)), ys), es


def reference(inputs):
    """fp32 y (computed in float64 from the inputs as stored)."""
    y, _ = ola_reference(inputs["frames"], inputs["window"], inputs["hop"], inputs["pad"], inputs["length"],
                         inputs.get("eps", EPS))
    return y.float()


def torch_baseline(inputs):
    """What eager torch runs (Vocos's ISTFT after its irfft): the frames upcast to fp32 and windowed,
    torch.nn.functional.fold over [B, n_fft, n_frames] for the sum and again for the window-square
    envelope, the trim, the guarded division, the cast back to the frames' dtype."""
    import torch
    fr, hop, pad, L = inputs["frames"], inputs["hop"], inputs["pad"], inputs["length"]
    eps = inputs.get("eps", EPS)
    B, nf, n_fft = fr.shape
    w = torch.ones((n_fft,), device=fr.device) if inputs["window"] is None else inputs["window"].float()
    span = _span(nf, n_fft, hop)
    fold = dict(output_size=(1, span), kernel_size=(1, n_fft), stride=(1, hop))
    s = torch.nn.functional.fold((fr.float() * w).transpose(1, 2), **fold)[:, 0, 0]
    e = torch.nn.functional.fold((w * w).expand(1, nf, n_fft).transpose(1, 2), **fold)[0, 0, 0]
    n = max(0, min(L, span - pad))
    s = torch.nn.functional.pad(s[:, pad:pad + n], (0, L - n))
    e = torch.nn.functional.pad(e[pad:pad + n], (0, L - n))
    return torch.where(e > eps, s / torch.where(e > eps, e, 1.0), s).to(fr.dtype)


def _frame_elems_read(n_frames: int, n_fft: int, hop: int, pad: int, length: int) -> int:
    """Frame elements a batch row's programs load: for each overlap k, the slots q0 <= q < q_hi whose
    frame q - k exists, times the samples r < hop with r + k hop < n_fft (whole slots: the edge slots'
    samples outside the output are loaded too)."""
    q0, q_hi = _rows(hop, pad, length)
    n = 0
    for k in range(triton.cdiv(n_fft, hop)):
        slots = max(0, min(q_hi, n_frames + k) - max(q0, k))
        n += slots * min(hop, n_fft - k * hop)
    return n


def bytes_moved(point) -> int:
    """The frame elements the kernel loads (each once: _frame_elems_read), y written once, the window
    read once (fp32)."""
    q = _check_point(point)
    e = _elem_bytes(q["dtype"])
    rd = _frame_elems_read(q["n_frames"], q["n_fft"], q["hop"], q["pad"], q["length"])
    return q["B"] * (rd + q["length"]) * e + 4 * q["n_fft"]


def flops(point) -> int:
    """Per frame element loaded: the window's multiply-add (2) and the envelope's add (1); per output
    sample the division (1)."""
    q = _check_point(point)
    rd = _frame_elems_read(q["n_frames"], q["n_fft"], q["hop"], q["pad"], q["length"])
    return q["B"] * (3 * rd + q["length"])


def grid(cfg, point) -> tuple[int]:
    """(B cdiv(rows, BLOCK_F) cdiv(hop, BLOCK_R),): rows the frame slots holding output samples."""
    q = _check_point(point)
    _check_cfg(cfg, triton.cdiv(q["n_fft"], q["hop"]))
    b, n_rb, n_rc = _grid_dims(q["B"], q["hop"], q["pad"], q["length"], cfg)
    return (b * n_rb * n_rc,)


def loop_iterations(cfg, point) -> int:
    """The overlaps a program accumulates: K = cdiv(n_fft, hop), one [BLOCK_F, BLOCK_R] tile load each (a
    rolled loop with LOOP 0, unrolled at compile time with LOOP 1)."""
    q = _check_point(point)
    K = triton.cdiv(q["n_fft"], q["hop"])
    _check_cfg(cfg, K)
    return K


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory): the frames
    as make_inputs lays them out (contiguous, or a contiguous [B, n_fft, n_frames] transposed), the
    window fp32 [n_fft], y [B, length] contiguous in the frames' dtype."""
    import torch
    q = _check_point(point)
    B, nf, n_fft, hop = q["B"], q["n_frames"], q["n_fft"], q["hop"]
    _check_cfg(cfg, triton.cdiv(n_fft, hop))
    tdt = _torch_dtype(q["dtype"])
    if q["layout"] == "bins":
        frames = torch.empty((B, n_fft, nf), dtype=tdt, device="meta").transpose(1, 2)
    else:
        frames = torch.empty((B, nf, n_fft), dtype=tdt, device="meta")
    window = torch.empty((n_fft,), dtype=torch.float32, device="meta")
    y = torch.empty((B, q["length"]), dtype=tdt, device="meta")
    return _kernel_args(frames, window, y, hop, q["pad"], EPS, cfg)
