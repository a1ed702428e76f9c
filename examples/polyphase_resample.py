"""Audio sample-rate conversion by a polyphase windowed-sinc FIR filter -- torchaudio.functional.resample
(resampling_method "sinc_interp_hann", lowpass_filter_width 6, rolloff 0.99, torchaudio.transforms.Resample),
julius.resample_frac and scipy.signal.resample_poly do the same job -- a bare @triton.jit kernel + its launcher.
For a rational ratio L / M (up L, down M: new_freq / orig_freq reduced by their gcd), output sample t of each
channel c is

    y[c, t] = sum_{j=0}^{T-1} h[t mod L, j] * x[c, (t * M) // L + j - pad]      (x = 0 outside [0, n_in))

for t = 0 .. n_out - 1, n_out = ceil(n_in * L / M) (torchaudio's target length). The filter bank h [L, T]
(fp32, built by `filter_bank` in float64 and rounded once) is torchaudio's Hann-windowed sinc written in compact
polyphase form: with base = rolloff * min(L, M), pad = ceil(width * M / base) (torchaudio's `width`),
T = 2 pad + 1 and frac_p = (p * M) mod L,

    u = base * ((j - pad) - frac_p / L) / M,   u clamped to [-width, width]
    h[p, j] = sinc(u) * cos(pi u / (2 width))^2 * base / M           (sinc(0) = 1, sinc(u) = sin(pi u) / (pi u))

-- the same value torchaudio's kernel holds at the input sample i = s + j - pad of output t (its kernel is
sampled at i / M - t / L, exactly this u / base). torchaudio's conv1d walks T_ta = 2 pad + M taps a phase (161
for 44.1 -> 48 kHz), most of them multiplied by its window's zero tail; the compact bank keeps only the
2 pad + 1 taps around each output's own input position s = (t * M) // L, every nonzero tap of torchaudio's
included, so the outputs agree with torchaudio's to fp32 rounding. (T = 15 up-sampling with width 6,
39 for 48 -> 16 kHz.)

x: [C, n_in] fp32 / fp16 / bf16 with unit time stride and any channel stride (the channels of a [B, 2, n] batch
flattened, a slice of a padded buffer); out: a fresh contiguous [C, n_out] tensor in x's dtype, fp32
accumulation, one rounding at the store. h: [L, T] fp32 contiguous, on x's device (the launcher takes the bank
as an argument -- built once per ratio, like torchaudio.transforms.Resample's cached kernel -- so launch copies
nothing from the host and is CUDA-graph capturable).

Work split: a 2-D grid, (cdiv(n_out, BLOCK_T), cdiv(C, BLOCK_C)), output tiles on axis 0 (fastest: the programs
running together cover neighbouring stretches of the same channels, whose input windows overlap). A program
computes BLOCK_T consecutive outputs of BLOCK_C channels: once, the outputs' phases p = t mod L and input
positions s = (t // L) M + (p M) // L (no t * M product: no int32 overflow for long signals); then it walks the
T taps BLOCK_J at a time: a [BLOCK_T, BLOCK_J] gather of the taps h[p, j] (the bank is a few KB: L1 / L2
resident), reused by all BLOCK_C channels, times a [BLOCK_C, BLOCK_T, BLOCK_J] gather of the input windows
x[c, s + j - pad] (neighbouring outputs' windows overlap: an input sample is read by about T L / M outputs, from
L1 / L2 after its first DRAM read), summed along the taps into a [BLOCK_C, BLOCK_T] fp32 accumulator. Masks give
the zero padding at both ends of the signal, the last step's taps past T (BLOCK_J not dividing T) and the tails
of the outputs and channels. No branch per phase, no atomics: each output is written once.

How it differs from the closest examples/ kernels: examples/causal_conv1d.py is a depthwise FIR too, but with a
stride of one input a output, W <= 4 taps held in registers and one tap vector a channel; here the stride is the
fractional M / L, the taps are chosen per output by its phase (a gather from an [L, T] bank shared by every
channel, 15-39 taps walked in steps) and the input positions come from integer division. examples/
istft_overlap_add.py scatters overlapping frames into a signal (a sum over the frames covering an output, a
window-square normalization); here each output gathers its own input window -- a fixed-length dot, no envelope.
examples/bilinear_resize.py resamples images with 2 taps an axis whose weights are computed from the coordinate;
here the weights are a 15-39 tap windowed sinc read from a precomputed polyphase table (a true anti-aliasing
low-pass when down-sampling, which bilinear's 2 taps are not).

Tunables: BLOCK_T (outputs a program: 32 / 64 / 128), BLOCK_J (taps a step: 4 / 8 / 16 -- the step's loads in
flight against registers; 16 leaves 1 of 16 taps masked at T 15, 9 of 48 at T 39), BLOCK_C (channels a
program: 1 / 2 -- the tap gather and index math shared by two channels -- a stereo clip's pair --, against the gather's
registers), num_warps (4 / 8 / 16), num_stages (1: the tap loop's loads feed only their own step's sum; Triton's
pipeliner leaves the loop alone -- num_stages 2 and 3 compile to the same registers and shared memory -- held at
1). On sm_90 every config of the sweep compiles at every point without spills under triton 3.6.0 and 3.9 (the
test file's test_example_compiles_sm90): registers 20-168 under 3.6.0 and 20-158 under 3.9 (the most for 128
outputs x 16 taps x 2 channels on 4 warps), shared memory 64 B - 8 KiB under both (layout conversions between
the tap gather and the reduction; 8 KiB for 128 outputs x 16 taps on 16 warps). Left out: 4 channels a program (128 outputs x 16 taps x
4 channels on 4 warps spills 12 registers under triton 3.6.0) and BLOCK_T 256 (256 outputs x 16 taps spill under
3.9: 4 channels on 4 warps 144 spills, one channel on 8 warps 2).
Problem parameters (a workload point): C (channels: clips x their channels), n_in (input samples a channel),
orig / new (the sample rates in Hz; L / M their reduced ratio), dtype ("fp32" / "fp16" / "bf16", x's and out's).
"""

from __future__ import annotations

import functools
import math

import triton
import triton.language as tl


@triton.jit
def _kernel(X, H, OUT, C, n_in, n_out, T, PAD, L, M, stride_xc, stride_oc,
            BLOCK_T: tl.constexpr, BLOCK_J: tl.constexpr, BLOCK_C: tl.constexpr):
    pid_t = tl.program_id(0)
    pid_c = tl.program_id(1)
    rt = pid_t * BLOCK_T + tl.arange(0, BLOCK_T)
    rc = pid_c * BLOCK_C + tl.arange(0, BLOCK_C)
    rj = tl.arange(0, BLOCK_J)
    t_ok = rt < n_out
    c_ok = rc < C
    k = rt // L
    p = rt - k * L                                              # the output's phase
    s = k * M + (p * M) // L - PAD                              # its first tap's input position
    h_row = H + p * T                                           # [BLOCK_T] the phase's taps
    x_row = X + rc.to(tl.int64) * stride_xc                     # [BLOCK_C] the channels' signals
    ok_ct = c_ok[:, None] & t_ok[None, :]
    acc = tl.zeros([BLOCK_C, BLOCK_T], dtype=tl.float32)
    for j0 in range(0, T, BLOCK_J):
        jj = j0 + rj
        j_ok = jj < T
        hv = tl.load(h_row[:, None] + jj[None, :], mask=j_ok[None, :], other=0.0)        # [T_, J]
        idx = s[:, None] + jj[None, :]                                                     # [T_, J]
        i_ok = (idx >= 0) & (idx < n_in) & j_ok[None, :]
        xv = tl.load(x_row[:, None, None] + idx[None, :, :],
                     mask=ok_ct[:, :, None] & i_ok[None, :, :], other=0.0)                # [C_, T_, J]
        acc += tl.sum(xv.to(tl.float32) * hv[None, :, :], axis=2)
    out_ptr = OUT + rc.to(tl.int64)[:, None] * stride_oc + rt[None, :]
    tl.store(out_ptr, acc.to(OUT.dtype.element_ty), mask=ok_ct)


# ---------------------------------------------------------------- launcher
ROLE = "held-out-34"
DTYPES = ("fp32", "fp16", "bf16")
TUNABLES = ("BLOCK_T", "BLOCK_J", "BLOCK_C", "num_warps", "num_stages")
BASELINE = {"BLOCK_T": 128, "BLOCK_J": 8, "BLOCK_C": 2, "num_warps": 4, "num_stages": 1}
# the study's sweep: 3 x 3 x 2 x 3 = 54 configs (32-128 outputs x 1-2 channels a program, 4-16 taps a step,
# 4 / 8 / 16 warps; the tap loop's loads feed only their own step: num_stages 1). Left out for spills on sm_90:
# BLOCK_C 4 (128 x 16 x 4 on 4 warps under triton 3.6.0) and BLOCK_T 256 (256 x 16 under 3.9)
SWEEP_AXES = {"BLOCK_T": [32, 64, 128], "BLOCK_J": [4, 8, 16], "BLOCK_C": [1, 2], "num_warps": [4, 8, 16],
              "num_stages": [1]}
LOWPASS_WIDTH = 6                          # torchaudio's lowpass_filter_width default
ROLLOFF = 0.99                             # torchaudio's rolloff default
MAX_RATIO = 2**15                          # L and M each; L x M < 2**30 keeps (p * M) within int32
MAX_SAMPLES = 2**31 - 2**20                # n_in and n_out within int32
MAX_TAPS = 1024

POINTS = [
    # music: 44.1 kHz -> 48 kHz (L / M = 160 / 147, T 15) of a batch of 64 ten-second stereo clips (128
    # channels), fp32 as torchaudio / a data loader's Resample runs it. x 226 MB, out 246 MB: ~0.1-0.2 ms
    {"C": 128, "n_in": 441_000, "orig": 44100, "new": 48000, "dtype": "fp32"},
    # ASR front end: 48 kHz recordings down to 16 kHz (1 / 3, T 39: the anti-aliasing low-pass) for a
    # Whisper / wav2vec2 batch of 256 thirty-second mono clips, fp16. x 737 MB, out 246 MB: ~0.2-0.4 ms
    {"C": 256, "n_in": 1_440_000, "orig": 48000, "new": 16000, "dtype": "fp16"},
    # TTS vocoder: 16 kHz -> 24 kHz (3 / 2, T 15) of a batch of 256 twenty-second utterances, bf16 (a
    # bf16 training step's audio). x 164 MB, out 246 MB: ~0.1 ms
    {"C": 256, "n_in": 320_000, "orig": 16000, "new": 24000, "dtype": "bf16"},
]


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _check_cfg(cfg) -> None:
    b = cfg["BLOCK_T"]
    if not _is_int(b) or b < 16 or b > 2048 or b & (b - 1):
        raise ValueError(f"BLOCK_T={b!r} must be a power of two from 16 to 2048")
    j = cfg["BLOCK_J"]
    if not _is_int(j) or j < 1 or j > 64 or j & (j - 1):
        raise ValueError(f"BLOCK_J={j!r} must be a power of two from 1 to 64")
    c = cfg["BLOCK_C"]
    if not _is_int(c) or c < 1 or c > 16 or c & (c - 1):
        raise ValueError(f"BLOCK_C={c!r} must be a power of two from 1 to 16")
    w = cfg["num_warps"]
    if not _is_int(w) or w not in (1, 2, 4, 8, 16):
        raise ValueError(f"num_warps={w!r} must be a power of two from 1 to 16")
    ns = cfg.get("num_stages", 1)
    if not _is_int(ns) or ns < 1:
        raise ValueError(f"num_stages={ns!r} must be a positive int")


def ratio(orig_freq: int, new_freq: int) -> tuple:
    """(L, M): new_freq / orig_freq reduced by their gcd (up L, down M)."""
    for name, v in (("orig_freq", orig_freq), ("new_freq", new_freq)):
        if not _is_int(v) or v < 1:
            raise ValueError(f"{name}={v!r} must be a positive int (Hz)")
    g = math.gcd(orig_freq, new_freq)
    L, M = new_freq // g, orig_freq // g
    if L > MAX_RATIO or M > MAX_RATIO or L * M >= 2**30:
        raise ValueError(f"orig_freq={orig_freq} -> new_freq={new_freq} reduces to L/M = {L}/{M}; L and M "
                         f"must be at most {MAX_RATIO} and L x M below 2**30")
    return L, M


def taps(L: int, M: int, lowpass_filter_width: int = LOWPASS_WIDTH, rolloff: float = ROLLOFF) -> tuple:
    """(T, pad): taps a phase and the left padding of the compact bank (pad = torchaudio's `width`)."""
    pad = math.ceil(lowpass_filter_width * M / (rolloff * min(L, M)))
    return 2 * pad + 1, pad


def out_length(n_in: int, L: int, M: int) -> int:
    """ceil(n_in L / M), torchaudio's target length."""
    return (n_in * L + M - 1) // M


@functools.lru_cache(maxsize=16)
def _bank64(L: int, M: int, lowpass_filter_width: int, rolloff: float):
    """The compact filter bank [L, T] in float64 on the CPU (module doc)."""
    import torch
    T, pad = taps(L, M, lowpass_filter_width, rolloff)
    base = rolloff * min(L, M)
    frac = torch.remainder(torch.arange(L, dtype=torch.int64) * M, L).to(torch.float64)[:, None]
    j = torch.arange(T, dtype=torch.float64)[None, :]
    u = (base * ((j - pad) - frac / L) / M).clamp(-lowpass_filter_width, lowpass_filter_width)
    window = torch.cos(u * math.pi / lowpass_filter_width / 2) ** 2
    pu = u * math.pi
    sinc = torch.where(pu == 0, torch.ones_like(pu), torch.sin(pu) / torch.where(pu == 0, torch.ones_like(pu), pu))
    return sinc * window * (base / M)


def filter_bank(orig_freq: int, new_freq: int, lowpass_filter_width: int = LOWPASS_WIDTH,
                rolloff: float = ROLLOFF, device="cpu", dtype=None):
    """(h [L, T] contiguous, pad): the compact polyphase bank of torchaudio's sinc_interp_hann kernel for
    orig_freq -> new_freq (module doc), fp32 unless `dtype` says otherwise (float64 for a reference)."""
    import torch
    L, M = ratio(orig_freq, new_freq)
    if not _is_int(lowpass_filter_width) or lowpass_filter_width < 1:
        raise ValueError(f"lowpass_filter_width={lowpass_filter_width!r} must be a positive int")
    if not isinstance(rolloff, (int, float)) or not 0 < rolloff <= 1:
        raise ValueError(f"rolloff={rolloff!r} must be in (0, 1]")
    T, pad = taps(L, M, lowpass_filter_width, float(rolloff))
    if T > MAX_TAPS:
        raise ValueError(f"the bank needs T={T} taps a phase; at most {MAX_TAPS}")
    h = _bank64(L, M, lowpass_filter_width, float(rolloff))
    return h.to(device=device, dtype=torch.float32 if dtype is None else dtype, copy=True).contiguous(), pad


def _check_point(point) -> dict:
    P = {"dtype": "fp32", **point}
    C, n = P["C"], P["n_in"]
    if not _is_int(C) or C < 1 or C > 65535 * 16:
        raise ValueError(f"C={C!r} must be an int from 1 to {65535 * 16}")
    if not _is_int(n) or n < 1 or n > MAX_SAMPLES:
        raise ValueError(f"n_in={n!r} must be an int from 1 to {MAX_SAMPLES}")
    L, M = ratio(P["orig"], P["new"])
    if out_length(n, L, M) > MAX_SAMPLES:
        raise ValueError(f"n_in={n} at {L}/{M} gives {out_length(n, L, M)} outputs; at most {MAX_SAMPLES}")
    if P["dtype"] not in DTYPES:
        raise ValueError(f"dtype {P['dtype']!r} is not one of {DTYPES}")
    return P


def _torch_dtype(name: str):
    import torch
    return {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[name]


_ESIZE = {"fp32": 4, "fp16": 2, "bf16": 2}


# ---------------------------------------------------------------- the kernel's launch
def _grid(n_out: int, C: int, cfg) -> tuple:
    return (triton.cdiv(n_out, cfg["BLOCK_T"]), triton.cdiv(C, cfg["BLOCK_C"]))


def _kernel_args(x, h, out, L: int, M: int, pad: int, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    C, n_in = x.shape
    return dict(X=x, H=h, OUT=out, C=C, n_in=n_in, n_out=out.shape[1], T=h.shape[1], PAD=pad, L=L, M=M,
                stride_xc=x.stride(0), stride_oc=out.stride(0), BLOCK_T=cfg["BLOCK_T"], BLOCK_J=cfg["BLOCK_J"],
                BLOCK_C=cfg["BLOCK_C"])


def polyphase_resample(x, h, L: int, M: int, pad: int, *, BLOCK_T: int = 128, BLOCK_J: int = 8, BLOCK_C: int = 2,
                       num_warps: int = 4, num_stages: int = 1):
    """out [C, ceil(n_in L / M)] in x's dtype: x [C, n_in] resampled by L / M through the polyphase bank
    h [L, T] (fp32, contiguous, on x's device; `filter_bank` builds torchaudio's) whose tap j of phase p reads
    x[c, (t M) // L + j - pad]. x: fp32 / fp16 / bf16, unit time stride, any channel stride. The tunables: the
    module doc."""
    import torch
    cfg = {"BLOCK_T": BLOCK_T, "BLOCK_J": BLOCK_J, "BLOCK_C": BLOCK_C, "num_warps": num_warps,
           "num_stages": num_stages}
    _check_cfg(cfg)
    if x.dim() != 2 or x.dtype not in (torch.float32, torch.float16, torch.bfloat16):
        raise ValueError(f"x must be a 2-d fp32 / fp16 / bf16 tensor [C, n_in]; got {tuple(x.shape)} {x.dtype}")
    C, n_in = x.shape
    if C < 1 or n_in < 1 or (n_in > 1 and x.stride(1) != 1) or x.stride(0) < 0:
        raise ValueError(f"x must hold C >= 1 channels of n_in >= 1 samples with unit time stride; got shape "
                         f"{tuple(x.shape)} strides {x.stride()}")
    if n_in > MAX_SAMPLES or C > 65535 * BLOCK_C:
        raise ValueError(f"x of shape {tuple(x.shape)} is too large: n_in at most {MAX_SAMPLES}, C at most "
                         f"{65535 * BLOCK_C} for BLOCK_C={BLOCK_C}")
    for name, v in (("L", L), ("M", M)):
        if not _is_int(v) or v < 1 or v > MAX_RATIO:
            raise ValueError(f"{name}={v!r} must be an int from 1 to {MAX_RATIO}")
    if math.gcd(L, M) != 1 or L * M >= 2**30:
        raise ValueError(f"L/M = {L}/{M} must be reduced (gcd 1) with L x M below 2**30")
    if h.dim() != 2 or h.dtype != torch.float32 or h.shape[0] != L or not h.is_contiguous():
        raise ValueError(f"h must be a contiguous float32 [L={L}, T] bank; got {tuple(h.shape)} {h.dtype} "
                         f"strides {h.stride()}")
    T = h.shape[1]
    if T < 1 or T > MAX_TAPS:
        raise ValueError(f"h has T={T} taps a phase; from 1 to {MAX_TAPS}")
    if not _is_int(pad) or pad < 0 or pad >= T:
        raise ValueError(f"pad={pad!r} must be an int from 0 to T - 1 = {T - 1}")
    if h.device != x.device:
        raise ValueError(f"h must be on x's device {x.device}; got {h.device}")
    n_out = out_length(n_in, L, M)
    if n_out > MAX_SAMPLES:
        raise ValueError(f"n_in={n_in} at {L}/{M} gives {n_out} outputs; at most {MAX_SAMPLES}")
    out = torch.empty((C, n_out), dtype=x.dtype, device=x.device)
    _kernel[_grid(n_out, C, cfg)](**_kernel_args(x, h, out, L, M, pad, cfg), num_warps=num_warps,
                                  num_stages=num_stages)
    return out


# ---------------------------------------------------------------- the launcher contract
def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """x [C, n_in] in the point's dtype: band-limited-ish audio -- a sum of three sines a channel (random
    frequencies below 0.45 of the input's Nyquist, random phases and amplitudes) plus 0.05 white noise, drawn on
    the device from a seeded generator; h [L, T] the torchaudio bank (fp32) on the device; L, M, pad."""
    import torch
    P = _check_point(point)
    L, M = ratio(P["orig"], P["new"])
    C, n = P["C"], P["n_in"]
    dev = torch.device(device)
    g = torch.Generator(device=dev).manual_seed(int(seed))
    f = 0.45 * math.pi * torch.rand((C, 3, 1), generator=g, device=dev)           # rad / sample
    ph = 2 * math.pi * torch.rand((C, 3, 1), generator=g, device=dev)
    a = 0.1 + 0.3 * torch.rand((C, 3, 1), generator=g, device=dev)
    t = torch.arange(n, device=dev, dtype=torch.float32)
    x = 0.05 * torch.randn((C, n), generator=g, device=dev)
    for i in range(3):                                       # one [C, n] temporary at a time
        x += a[:, i] * torch.sin(f[:, i] * t + ph[:, i])
    h, pad = filter_bank(P["orig"], P["new"], device=dev)
    return {"x": x.to(_torch_dtype(P["dtype"])), "h": h, "L": L, "M": M, "pad": pad}


def launch(inputs, cfg):
    """out [C, n_out] in x's dtype."""
    return polyphase_resample(inputs["x"], inputs["h"], inputs["L"], inputs["M"], inputs["pad"],
                              BLOCK_T=cfg["BLOCK_T"], BLOCK_J=cfg["BLOCK_J"], BLOCK_C=cfg["BLOCK_C"],
                              num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])


def reference(inputs):
    """out [C, n_out] in float64: the bank rebuilt in float64 from (L, M, pad) -- no fp32 rounding of the
    taps --, the input widened and zero-padded, and for each tap j one gather of every output's sample
    (t M) // L + j - pad times that tap of every output's phase, summed tap by tap."""
    import torch
    x = inputs["x"]
    L, M, pad = inputs["L"], inputs["M"], inputs["pad"]
    T = inputs["h"].shape[1]
    h = _bank64(L, M, LOWPASS_WIDTH, ROLLOFF)
    if h.shape[1] != T:                                      # a bank of other parameters: its fp32 taps
        h = inputs["h"].double().cpu()
    h = h.to(x.device)
    C, n_in = x.shape
    n_out = out_length(n_in, L, M)
    tt = torch.arange(n_out, device=x.device, dtype=torch.int64)
    s = (tt * M) // L                                        # int64: no overflow
    phase = tt % L
    xp = torch.nn.functional.pad(x.double(), (pad, T))       # x[i] at xp[i + pad]; T zeros past the end
    out = torch.zeros((C, n_out), dtype=torch.float64, device=x.device)
    for j in range(T):
        out += xp[:, s + j] * h[phase, j][None, :]
    return out


def torch_baseline(inputs):
    """What torchaudio.functional.resample does (in fp32): the compact bank placed into its full
    [L, 1, 2 pad + M] kernel (phase p's taps at offset (p M) // L), x zero-padded by (pad, pad + M), one strided
    conv1d (stride M) with L output channels, the frames interleaved and cut to n_out."""
    import torch
    x, h = inputs["x"], inputs["h"]
    L, M, pad = inputs["L"], inputs["M"], inputs["pad"]
    C, n_in = x.shape
    T = h.shape[1]
    full = torch.zeros((L, T - 1 + M), dtype=torch.float32, device=x.device)
    rows = torch.arange(L, device=x.device)
    cols = (rows * M) // L                                                     # phase p's offset
    full[rows[:, None], cols[:, None] + torch.arange(T, device=x.device)[None, :]] = h
    full = full[:, None, :]
    xp = torch.nn.functional.pad(x.float(), (pad, pad + M))
    y = torch.nn.functional.conv1d(xp[:, None, :], full, stride=M)            # [C, L, frames]
    y = y.transpose(1, 2).reshape(C, -1)[:, :out_length(n_in, L, M)]
    return y.to(x.dtype)


def _shape(point) -> tuple:
    """(C, n_in, n_out, T, L, M) of a point."""
    P = _check_point(point)
    L, M = ratio(P["orig"], P["new"])
    T, _ = taps(L, M)
    return P["C"], P["n_in"], out_length(P["n_in"], L, M), T, L, M


def bytes_moved(point) -> int:
    """x read once, out written once (C x (n_in + n_out) elements), the bank once (L x T fp32)."""
    P = _check_point(point)
    C, n_in, n_out, T, L, _ = _shape(P)
    return _ESIZE[P["dtype"]] * C * (n_in + n_out) + 4 * L * T


def flops(point) -> int:
    """One multiply-add a tap of each output: 2 C n_out T."""
    C, _, n_out, T, _, _ = _shape(point)
    return 2 * C * n_out * T


def grid(cfg, point) -> tuple:
    """The launch grid (cdiv(n_out, BLOCK_T), cdiv(C, BLOCK_C)): output tiles fastest."""
    _check_cfg(cfg)
    C, _, n_out, _, _, _ = _shape(point)
    if triton.cdiv(C, cfg["BLOCK_C"]) > 65535:
        raise ValueError(f"C={C} needs {triton.cdiv(C, cfg['BLOCK_C'])} channel blocks; at most 65535")
    return _grid(n_out, C, cfg)


def loop_iterations(cfg, point) -> int:
    """cdiv(T, BLOCK_J) tap steps a program (every program the same)."""
    grid(cfg, point)
    T = _shape(point)[3]
    return triton.cdiv(T, cfg["BLOCK_J"])


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`: the bank h [L, T] with data (fp32, on the CPU:
    the taps each output gathers), x [C, n_in] and out [C, n_out] on the meta device (contiguous, as
    make_inputs draws them)."""
    import torch
    P = _check_point(point)
    grid(cfg, P)
    C, n_in, n_out, T, L, M = _shape(P)
    h, pad = filter_bank(P["orig"], P["new"])
    dt = _torch_dtype(P["dtype"])
    x = torch.empty((C, n_in), dtype=dt, device="meta")
    out = torch.empty((C, n_out), dtype=dt, device="meta")
    return _kernel_args(x, h, out, L, M, pad, cfg)
