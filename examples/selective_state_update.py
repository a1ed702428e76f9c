"""The single-token (decode) step of a Mamba / Mamba-2 selective SSM on a continuous-batching state
cache -- mamba_ssm's selective_state_update, as vLLM's and SGLang's Mamba decode paths call it -- a
bare @triton.jit kernel + its launcher. Per batch row b (one request's new token), head h of group
g = h // (H / G) and head-dim row p:

    dt     = softplus(dt[b, h(, p)] + dt_bias[h(, p)])          (bias and softplus optional)
    s      = state[src[b], h, p, :]                              (zero when src[b] is the pad slot)
    s      = s * exp(dt A[h(, p, :)]) + (dt x[b, h, p]) B[b, g, :]
    state[dst[b], h, p, :] = s                                   (not when dst[b] is the pad slot)
    out[b, h, p] = (sum_n s[n] C[b, g, n] + D[h(, p)] x[b, h, p]) (* silu(z[b, h, p]))

Two forms of the parameters (TIE):
  Mamba-2 (TIE 1): one scalar A, dt, dt_bias, D a head (A [H], dt [B, H], dt_bias / D [H]); nheads
     heads of head dim P, B / C shared by the H / G heads of a group (Mamba-2 2.7B: H 80, P 64, G 1;
     Codestral Mamba 7B / Nemotron-H: H 128, P 64, G 8; N 128). mamba_ssm's own call form -- A
     expanded to [H, P, N], dt to [B, H, P], D / dt_bias to [H, P] with stride 0 along the
     expansion, as vLLM's MambaMixer2 passes them -- is recognised and read as the scalars.
  Mamba-1 (TIE 0): per-channel A [D, N], dt [B, D], D / dt_bias [D] (Jamba, Falcon-Mamba: N 16):
     the head form with H = 1 and P = D channels; A is a [BLOCK_P, BLOCK_N] tile like the state's.
state: the cache [slots, H, P, N] (Mamba-1: [slots, D, N]) fp32 / bf16 / fp16, any strides (vLLM V1
keeps it as a view of a per-layer page that also holds the conv state: the slot stride is larger
than H P N); updated in place. src = state_batch_indices [B] (int32 / int64; None: slot b), rows
equal to pad_slot_id (vLLM's PAD_SLOT_ID -1: CUDA-graph padding) read a zero state and write
nothing; dst = dst_state_batch_indices (vLLM's prefix caching: read one slot, write another;
None: dst = src). x, z, out [B, H, P], B, C [B, G, N] (Mamba-1: [B, D] and [B, N]), fp16 / bf16 /
fp32, any strides (the points read them in place from vLLM's projection output). out (fresh, or
given) in x's dtype. fp32 math; the state is rounded to its dtype once, when stored, and y uses the
unrounded fp32 state (as mamba_ssm's kernel does).

Work split: program (pb, h, b) of the grid (cdiv(P, BLOCK_P), H, B) owns rows pb BLOCK_P ..
+ BLOCK_P of head h of batch row b: the [BLOCK_P, N] slab of state[src[b], h] (contiguous in the
cache: rows N apart) read once and written once -- the kernel is a stream of the batch's state
through the SM, ~2 x state bytes per step and a handful of FLOPs a byte. The launch order puts a
slot's heads and row blocks next to each other (the whole H P N state of one request is streamed by
consecutive programs). Per program the slot index (one dependent load before the state's address is
known), then x, dt, dt_bias, D, z (a row vector or a scalar each) and the B / C rows of the group.
The pad slot is masked, never branched on, so padded rows cost a program's prologue only.

How the N axis is held (N_SPLIT): BLOCK_N = next_pow2(cdiv(N, N_SPLIT)) state columns at a time.
N_SPLIT 1 holds the whole [BLOCK_P, N] slab in registers at once (every load of the program in
flight together; the most registers). N_SPLIT 2 / 4 walk N in a runtime loop of cdiv(N, BLOCK_N)
chunks: each chunk's state (and Mamba-1's A) is loaded, updated, stored and its products with C
summed along the chunk into y's fp32 row accumulator. Fewer registers and the same DRAM traffic, at
the price of one chunk's loads in flight at a time and a cross-lane reduction a chunk (the loop's
loads feed nothing in the next iteration and there is no tl.dot: Triton does not software-pipeline
them, so num_stages is held at 1). In a chunk y's products are formed before the state is stored
(the other order left ptxas at 96 registers with 2 spilled for BLOCK_P 32 x N 128 of a bf16 cache on
2 warps under triton 3.9). Masks: rows past P (EVEN_P 0) and columns past N (EVEN_N 0) only where the
tile does not divide them, the pad slots folded into the row masks; a row mask is uniform along N,
so the state's 16-byte vectors survive it (B and C, [N] vectors, Triton loads one element a thread
and moves to the slab's layout through shared memory: with the cross-warp reductions of y the
kernel's only shared memory, <= 512 bytes). Offsets: the slot's and the batch row's base int64, offsets inside a slot / row int32
(checked).

How this differs from the other SSM examples: examples/selective_scan.py is Mamba-1's prefill scan
(a sequence of L steps from a zero state, state in registers, no cache); examples/ssd_chunk_state.py
/ ssd_chunk_scan.py are Mamba-2's chunked prefill (tensor-core dots over chunks of tokens). This is
the decode step: one token a request, the state read from and written back to a slot-indexed cache
(pad slots, separate destination slots), both the per-head-scalar (Mamba-2) and per-channel
(Mamba-1) forms, with the D skip, the z gate and dt's bias and softplus fused.

Tunables: BLOCK_P (4 / 8 / 16 / 32: the head-dim rows a program; mamba_ssm's and vLLM's heuristic
picks 4 at N 128 and 32 at N 16, on 4 warps), N_SPLIT (1 / 2 / 4: above), num_warps (1 / 2 / 4 / 8);
num_stages held at 1 (nothing to pipeline). On sm_90 every config of the sweep (48) compiles at every
point without spills: 28-255 registers under triton 3.6.0 and 28-254 under 3.9.0 (the most for
BLOCK_P 32 holding N 128 of the fp32 cache on one warp: 128 state values a thread; 22-64 at Jamba's
N 16), shared memory 0-256 bytes (3.6) / 0-512 bytes (3.9). On sm_120 (99 KiB a block) all 48
compile at every point without spills as well (26-255 registers under 3.6, 26-254 under 3.9).
Problem parameters (a workload point): mamba (1 / 2), batch (rows, CUDA-graph padding included),
slots (the cache's rows; 0: no slot indices, state row b for batch row b), pad_rows (trailing rows
with the pad slot), dst (0 / 1: separate destination slots), heads / head_dim / groups (Mamba-2) or
channels (Mamba-1), dstate (N), gate (z), skip (D), dt_bias, softplus (default 1 each but gate),
page (1: vLLM V1's page layout of the cache, the slot stride padded by the conv state; default 1),
layout ("vllm": x / z / dt / B / C read in place from the projection output, as vLLM passes them;
"contiguous"), dtype (x / z / dt / B / C / out) and state_dtype.
"""
from __future__ import annotations

import triton
import triton.language as tl

SOFTPLUS_THRESHOLD = tl.constexpr(20.0)   # torch.nn.functional.softplus's: v itself above it


@triton.jit
def _softplus(v):
    """log(1 + e^v), v above 20 (torch's threshold); log1p by Kahan's trick (log(u) e / (u - 1),
    u = 1 + e: accurate where 1 + e rounds), as tl has no log1p."""
    e = tl.exp(v)
    u = 1.0 + e
    lp = tl.where(u == 1.0, e, tl.log(u) * (e / (u - 1.0)))
    return tl.where(v > SOFTPLUS_THRESHOLD, v, lp)


@triton.jit
def _update(src_ptr, dst_ptr, a_ptr, b_ptr, c_ptr, rp, rn, p_ok, p_ld, p_st, n_ok, dA_or_dt, dtx,
            s_sp, s_sn, s_ap, s_an, s_bn, s_cn, TIE: tl.constexpr):
    """One [BLOCK_P, BLOCK_N] chunk: the state read (zero where masked: rows past P, columns past N,
    a pad source slot), decayed, given dt x B, stored (not to a pad destination slot); returns its
    products with C summed along the chunk ([BLOCK_P] fp32), formed from the unrounded state."""
    off = rp[:, None] * s_sp + rn[None, :] * s_sn
    s = tl.load(src_ptr + off, mask=p_ld[:, None] & n_ok[None, :], other=0.0).to(tl.float32)
    bv = tl.load(b_ptr + rn * s_bn, mask=n_ok, other=0.0).to(tl.float32)
    cv = tl.load(c_ptr + rn * s_cn, mask=n_ok, other=0.0).to(tl.float32)
    if TIE:                                 # Mamba-2: one decay a (batch row, head)
        s = s * dA_or_dt + dtx[:, None] * bv[None, :]
    else:                                   # Mamba-1: exp(dt A) per (row, column)
        a = tl.load(a_ptr + rp[:, None] * s_ap + rn[None, :] * s_an, mask=p_ok[:, None] & n_ok[None, :],
                    other=0.0).to(tl.float32)
        s = s * tl.exp(dA_or_dt[:, None] * a) + dtx[:, None] * bv[None, :]
    y = tl.sum(s * cv[None, :], 1)
    tl.store(dst_ptr + off, s.to(dst_ptr.dtype.element_ty), mask=p_st[:, None] & n_ok[None, :])
    return y


@triton.jit
def _kernel(STATE, X, DT, A, Bm, Cm, Dp, Z, DTB, SRC, DST, OUT,
            P, N, heads_per_group, pad_slot,
            s_ss, s_sh, s_sp, s_sn,
            s_xb, s_xh, s_xp,
            s_tb, s_th, s_tp,
            s_ah, s_ap, s_an,
            s_bb, s_bg, s_bn,
            s_cb, s_cg, s_cn,
            s_dh, s_dp,
            s_zb, s_zh, s_zp,
            s_eh, s_ep,
            s_src, s_dst,
            s_ob, s_oh, s_op,
            TIE: tl.constexpr, HAS_SLOTS: tl.constexpr, HAS_DST: tl.constexpr, HAS_D: tl.constexpr,
            HAS_Z: tl.constexpr, HAS_DT_BIAS: tl.constexpr, SOFTPLUS: tl.constexpr,
            EVEN_P: tl.constexpr, EVEN_N: tl.constexpr, N_LOOP: tl.constexpr,
            BLOCK_P: tl.constexpr, BLOCK_N: tl.constexpr):
    pid_p = tl.program_id(0)
    h = tl.program_id(1)
    b = tl.program_id(2).to(tl.int64)
    rp = pid_p * BLOCK_P + tl.arange(0, BLOCK_P)
    if EVEN_P:
        p_ok = tl.full([BLOCK_P], 1, tl.int1)
    else:
        p_ok = rp < P
    # the slots: a dependent load ahead of every state address; a pad slot folds into the row masks
    # (as a row vector: a scalar int1 and-ed into a 2-d mask reads back as an int array in Triton's
    # interpreter, which then refuses it as a mask)
    if HAS_SLOTS:
        src = tl.load(SRC + b * s_src).to(tl.int64)
        p_ld = p_ok & ((rp * 0 + src) != pad_slot)
        src = tl.where(src != pad_slot, src, 0)
        if HAS_DST:
            dst = tl.load(DST + b * s_dst).to(tl.int64)
            p_st = p_ok & ((rp * 0 + dst) != pad_slot)
            dst = tl.where(dst != pad_slot, dst, 0)
        else:
            dst = src
            p_st = p_ld
    else:
        src = b
        dst = b
        p_ld = p_ok
        p_st = p_ok
    src_ptr = STATE + src * s_ss + h * s_sh
    dst_ptr = STATE + dst * s_ss + h * s_sh
    g = h // heads_per_group
    b_ptr = Bm + b * s_bb + g * s_bg
    c_ptr = Cm + b * s_cb + g * s_cg
    a_ptr = A + h * s_ah
    # the row vectors (and Mamba-2's per-head scalars)
    x = tl.load(X + b * s_xb + h * s_xh + rp * s_xp, mask=p_ok, other=0.0).to(tl.float32)
    if TIE:
        dt = tl.load(DT + b * s_tb + h * s_th).to(tl.float32)
        if HAS_DT_BIAS:
            dt += tl.load(DTB + h * s_eh).to(tl.float32)
        if SOFTPLUS:
            dt = _softplus(dt)
        dA_or_dt = tl.exp(dt * tl.load(A + h * s_ah).to(tl.float32))
        if HAS_D:
            dsk = tl.load(Dp + h * s_dh).to(tl.float32)
    else:
        dt = tl.load(DT + b * s_tb + h * s_th + rp * s_tp, mask=p_ok, other=0.0).to(tl.float32)
        if HAS_DT_BIAS:
            dt += tl.load(DTB + h * s_eh + rp * s_ep, mask=p_ok, other=0.0).to(tl.float32)
        if SOFTPLUS:
            dt = _softplus(dt)
        dA_or_dt = dt
        if HAS_D:
            dsk = tl.load(Dp + h * s_dh + rp * s_dp, mask=p_ok, other=0.0).to(tl.float32)
    dtx = dt * x
    rn0 = tl.arange(0, BLOCK_N)
    if N_LOOP:                              # N in chunks of BLOCK_N, y accumulated a chunk at a time
        y = tl.zeros([BLOCK_P], tl.float32)
        for n0 in range(0, N, BLOCK_N):
            rn = n0 + rn0
            if EVEN_N:
                n_ok = tl.full([BLOCK_N], 1, tl.int1)
            else:
                n_ok = rn < N
            y += _update(src_ptr, dst_ptr, a_ptr, b_ptr, c_ptr, rp, rn, p_ok, p_ld, p_st, n_ok, dA_or_dt, dtx,
                         s_sp, s_sn, s_ap, s_an, s_bn, s_cn, TIE)
    else:                                   # the whole row of N at once
        if EVEN_N:
            n_ok = tl.full([BLOCK_N], 1, tl.int1)
        else:
            n_ok = rn0 < N
        y = _update(src_ptr, dst_ptr, a_ptr, b_ptr, c_ptr, rp, rn0, p_ok, p_ld, p_st, n_ok, dA_or_dt, dtx,
                    s_sp, s_sn, s_ap, s_an, s_bn, s_cn, TIE)
    if HAS_D:
        y += dsk * x
    if HAS_Z:
        z = tl.load(Z + b * s_zb + h * s_zh + rp * s_zp, mask=p_ok, other=0.0).to(tl.float32)
        y *= z * tl.sigmoid(z)
    tl.store(OUT + b * s_ob + h * s_oh + rp * s_op, y.to(OUT.dtype.element_ty), mask=p_ok)


# ---------------------------------------------------------------- launcher
ROLE = "held-out-30"
DTYPES = ("fp32", "bf16", "fp16")
TUNABLES = ("BLOCK_P", "N_SPLIT", "num_warps", "num_stages")
BASELINE = {"BLOCK_P": 4, "N_SPLIT": 1, "num_warps": 4, "num_stages": 1}
# the study's sweep: 4 x 3 x 4 x 1 = 48 configs. BASELINE is mamba_ssm's / vLLM's pick at N 128
# (BLOCK_SIZE_M 4 on 4 warps, the whole N held)
SWEEP_AXES = {"BLOCK_P": [4, 8, 16, 32], "N_SPLIT": [1, 2, 4], "num_warps": [1, 2, 4, 8], "num_stages": [1]}

# One decode step of one layer over a serving batch: the state of every request read and written
# once (DRAM-bound: 0.3-1.3 GB a launch, ~90-450 us on an H100 at ~3 TB/s; ~1.3 FLOP a byte). They
# differ in the form (Mamba-2's per-head scalars, groups 1 / 8; Mamba-1's per-channel A and the z
# gate), N (128 / 16), the state dtype (fp32 / bf16 / fp32) and the activations' (fp16 / bf16 /
# bf16), the batch (256 / 256 / 512 with 12 CUDA-graph pad rows).
POINTS = [
    # Mamba-2 2.7B (state-spaces/mamba2-2.7b: d_model 2560, expand 2, headdim 64 -> 80 heads, ngroups
    # 1, d_state 128), fp16 activations, the ssm cache in fp32 (vLLM's --mamba-ssm-cache-dtype
    # float32), batch 256 in a 320-slot cache, no z (Mamba-2 gates in its RMSNorm). State 2.6 MB a
    # request: 1.34 GB read + written
    {"mamba": 2, "batch": 256, "slots": 320, "heads": 80, "head_dim": 64, "groups": 1, "dstate": 128,
     "gate": 0, "dtype": "fp16", "state_dtype": "fp32"},
    # Codestral Mamba 7B (mistralai/Mamba-Codestral-7B-v0.1: hidden 4096, 128 heads of 64, 8 groups,
    # d_state 128; Nemotron-H 8B's Mamba layers have the same shape), bf16 activations and bf16 cache
    # (vLLM's default: the model dtype), batch 256 in a 320-slot cache. State 2.1 MB a request:
    # 1.07 GB read + written
    {"mamba": 2, "batch": 256, "slots": 320, "heads": 128, "head_dim": 64, "groups": 8, "dstate": 128,
     "gate": 0, "dtype": "bf16", "state_dtype": "bf16"},
    # Jamba-1.5-Mini's Mamba-1 layers (hidden 4096, expand 2 -> 8192 channels, d_state 16, dt_rank 256)
    # at tensor parallel 2 (4096 channels a GPU), with the z gate, bf16 activations, fp32 cache,
    # a CUDA-graph batch of 512 with 12 pad rows in a 640-slot cache. State 262 KB a request:
    # 262 MB read + written, 17 MB of x / z / dt / out
    {"mamba": 1, "batch": 512, "slots": 640, "pad_rows": 12, "channels": 4096, "dstate": 16, "gate": 1,
     "dtype": "bf16", "state_dtype": "fp32"},
]

PAD_SLOT_ID = -1
MAX_N = 256
CONV_WIDTH = 4                  # Mamba's d_conv: the conv state beside the ssm state in vLLM's page
JAMBA_DT_RANK = 256


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


def _flag(point, key, default):
    v = point.get(key, default)
    if v not in (0, 1) or not isinstance(v, (int, bool)):
        raise ValueError(f"{key}={v!r} must be 0 or 1")
    return int(v)


def _check_point(point) -> dict:
    """The point's fields, checked and completed: H, P, G (Mamba-1: 1, channels, 1), N, the flags."""
    m = point.get("mamba")
    if m not in (1, 2) or not _is_int(m):
        raise ValueError(f"mamba={m!r} must be 1 (per-channel A) or 2 (per-head scalars)")
    ints = ("batch", "dstate") + (("heads", "head_dim", "groups") if m == 2 else ("channels",))
    for k in ints:
        v = point.get(k)
        if not _is_int(v) or v < 1:
            raise ValueError(f"{k}={v!r} must be a positive int")
    for k in ("slots", "pad_rows"):
        v = point.get(k, 0)
        if not _is_int(v) or v < 0:
            raise ValueError(f"{k}={v!r} must be a non-negative int")
    if m == 2:
        H, P, G = point["heads"], point["head_dim"], point["groups"]
        if H % G:
            raise ValueError(f"heads={H} must be a multiple of groups={G}")
    else:
        H, P, G = 1, point["channels"], 1
    Bt, N, S, pad = point["batch"], point["dstate"], point.get("slots", 0), point.get("pad_rows", 0)
    if N > MAX_N:
        raise ValueError(f"dstate={N} must be at most {MAX_N}")
    dst = _flag(point, "dst", 0)
    if S == 0 and (pad or dst):
        raise ValueError("pad_rows / dst need slot indices (slots > 0)")
    if pad > Bt:
        raise ValueError(f"pad_rows={pad} exceeds batch={Bt}")
    need = (Bt - pad) * (2 if dst else 1)
    if S and S < need:
        raise ValueError(f"slots={S} must hold the batch's {need} distinct slots (batch - pad_rows, twice "
                         f"with dst)")
    if H > 65535 or Bt > 65535:
        raise ValueError(f"heads={H} / batch={Bt} exceed the grid's 65535")
    layout = point.get("layout", "vllm")
    if layout not in ("vllm", "contiguous"):
        raise ValueError(f"layout={layout!r} must be 'vllm' or 'contiguous'")
    dt, sdt = point.get("dtype"), point.get("state_dtype")
    for k, v in (("dtype", dt), ("state_dtype", sdt)):
        if v not in DTYPES:
            raise ValueError(f"{k} {v!r} is not one of {', '.join(DTYPES)}")
    return {"mamba": m, "B": Bt, "S": S, "pad": pad, "dst": dst, "H": H, "P": P, "G": G, "N": N,
            "gate": _flag(point, "gate", 0), "skip": _flag(point, "skip", 1),
            "dt_bias": _flag(point, "dt_bias", 1), "softplus": _flag(point, "softplus", 1),
            "page": _flag(point, "page", 1), "layout": layout, "dtype": dt, "state_dtype": sdt}


def _check_cfg(cfg) -> None:
    bp = cfg["BLOCK_P"]
    if not _is_int(bp) or bp < 1 or bp > 128 or bp & (bp - 1):
        raise ValueError(f"BLOCK_P={bp!r} must be a power of two from 1 to 128")
    ns = cfg["N_SPLIT"]
    if not _is_int(ns) or ns < 1 or ns > 16 or ns & (ns - 1):
        raise ValueError(f"N_SPLIT={ns!r} must be a power of two from 1 to 16")
    w = cfg["num_warps"]
    if not _is_int(w) or w not in (1, 2, 4, 8, 16):
        raise ValueError(f"num_warps={w!r} must be a power of two from 1 to 16")
    st = cfg.get("num_stages", 1)
    if not _is_int(st) or st < 1:
        raise ValueError(f"num_stages={st!r} must be a positive int")


def _block_n(N: int, n_split: int) -> int:
    """The columns a chunk: next_pow2(cdiv(N, N_SPLIT))."""
    return triton.next_power_of_2(triton.cdiv(N, n_split))


def _grid(P: int, H: int, Bt: int, cfg) -> tuple[int, int, int]:
    _check_cfg(cfg)
    return (triton.cdiv(P, cfg["BLOCK_P"]), H, Bt)


def _st(t, i):
    return 0 if t is None else t.stride(i)


def _kernel_args(state, x, dt, A, B, C, D, z, dt_bias, src, dst, out, softplus: bool, pad_slot: int, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it), from the
    head form: state [S, H, P, N], x / z / out [B, H, P], B / C [B, G, N]; Mamba-2 (A 1-d): A [H],
    dt [B, H], D / dt_bias [H]; Mamba-1: A [H, P, N], dt [B, H, P], D / dt_bias [H, P]. Absent
    tensors (D, z, dt_bias, src, dst) are passed as None (their code compiled out)."""
    _check_cfg(cfg)
    tie = A.dim() == 1
    H, P, N = state.shape[1], state.shape[2], state.shape[3]
    G = B.shape[1]
    bn = _block_n(N, cfg["N_SPLIT"])
    return dict(STATE=state, X=x, DT=dt, A=A, Bm=B, Cm=C, Dp=D, Z=z, DTB=dt_bias, SRC=src, DST=dst, OUT=out,
                P=P, N=N, heads_per_group=H // G, pad_slot=int(pad_slot),
                s_ss=state.stride(0), s_sh=state.stride(1), s_sp=state.stride(2), s_sn=state.stride(3),
                s_xb=x.stride(0), s_xh=x.stride(1), s_xp=x.stride(2),
                s_tb=dt.stride(0), s_th=dt.stride(1), s_tp=0 if tie else dt.stride(2),
                s_ah=A.stride(0), s_ap=0 if tie else A.stride(1), s_an=0 if tie else A.stride(2),
                s_bb=B.stride(0), s_bg=B.stride(1), s_bn=B.stride(2),
                s_cb=C.stride(0), s_cg=C.stride(1), s_cn=C.stride(2),
                s_dh=_st(D, 0), s_dp=0 if (tie or D is None) else D.stride(1),
                s_zb=_st(z, 0), s_zh=_st(z, 1), s_zp=_st(z, 2),
                s_eh=_st(dt_bias, 0), s_ep=0 if (tie or dt_bias is None) else dt_bias.stride(1),
                s_src=_st(src, 0), s_dst=_st(dst, 0),
                s_ob=out.stride(0), s_oh=out.stride(1), s_op=out.stride(2),
                TIE=int(tie), HAS_SLOTS=int(src is not None), HAS_DST=int(dst is not None),
                HAS_D=int(D is not None), HAS_Z=int(z is not None), HAS_DT_BIAS=int(dt_bias is not None),
                SOFTPLUS=int(bool(softplus)), EVEN_P=int(P % cfg["BLOCK_P"] == 0), EVEN_N=int(N % bn == 0),
                N_LOOP=int(bn < N), BLOCK_P=cfg["BLOCK_P"], BLOCK_N=bn)


def _tied_view(t, n_trailing: int):
    """t with its n_trailing last dims of stride 0 (an expand) -> t[..., 0, ..., 0]; None if not so."""
    if t is None:
        return None
    if any(t.stride(-1 - i) != 0 for i in range(n_trailing) if t.shape[-1 - i] > 1):
        return None
    idx = (Ellipsis,) + (0,) * n_trailing
    return t[idx]


def _head_form(state, x, dt, A, B, C, D, z, dt_bias, out):
    """The head form (see _kernel_args) of either call form: Mamba-1's 2-d tensors get a unit head
    dim; mamba_ssm's expanded Mamba-2 parameters (A [H, P, N] stride 0 along P and N, dt [B, H, P],
    D / dt_bias [H, P] stride 0 along P) become the per-head scalars."""
    if x.dim() == 2:                        # Mamba-1: [B, D] / state [S, D, N] / A [D, N] / B, C [B, N]
        def one(t, d):
            return None if t is None else t.unsqueeze(d)
        if state.dim() != 3 or A.dim() != 2 or B.dim() != 2 or C.dim() != 2 or dt.dim() != 2:
            raise ValueError(f"Mamba-1 form: expected state [S, D, N], x / dt [B, D], A [D, N], B / C [B, N]; "
                             f"got state {tuple(state.shape)}, dt {tuple(dt.shape)}, A {tuple(A.shape)}, "
                             f"B {tuple(B.shape)}, C {tuple(C.shape)}")
        state, x, dt, A, B, C, z, out = (one(t, d) for t, d in ((state, 1), (x, 1), (dt, 1), (A, 0), (B, 1),
                                                                (C, 1), (z, 1), (out, 1)))
        D, dt_bias = one(D, 0), one(dt_bias, 0)
        return state, x, dt, A, B, C, D, z, dt_bias, out
    if x.dim() != 3 or state.dim() != 4 or B.dim() != 3 or C.dim() != 3:
        raise ValueError(f"expected state [S, H, P, N], x [B, H, P], B / C [B, G, N] (or Mamba-1's 2-d x); got "
                         f"state {tuple(state.shape)}, x {tuple(x.shape)}, B {tuple(B.shape)}, C {tuple(C.shape)}")
    if A.dim() == 3:                        # mamba_ssm's form: tied when every per-row tensor is an expand
        tA, tdt = _tied_view(A, 2), (_tied_view(dt, 1) if dt.dim() == 3 else None)
        tD, tb = _tied_view(D, 1), _tied_view(dt_bias, 1)
        if tA is not None and tdt is not None and (D is None or tD is not None) and (dt_bias is None or tb is not None):
            A, dt, D, dt_bias = tA, tdt, tD, tb
    return state, x, dt, A, B, C, D, z, dt_bias, out


def selective_state_update(state, x, dt, A, B, C, D=None, z=None, dt_bias=None, dt_softplus: bool = False,
                           state_batch_indices=None, dst_state_batch_indices=None, pad_slot_id: int = PAD_SLOT_ID,
                           out=None, *, BLOCK_P: int = 4, N_SPLIT: int = 1, num_warps: int = 4, num_stages: int = 1):
    """One decode step of a selective SSM, the cache `state` updated in place; returns out.

    Mamba-2 form: state [S, H, P, N]; x, z, out [B, H, P]; dt [B, H]; A, D, dt_bias [H]; B, C [B, G, N]
    (G divides H). mamba_ssm's / vLLM's expanded form (A [H, P, N], dt [B, H, P], D / dt_bias [H, P],
    stride 0 along the expansion) is read as those scalars; without stride 0 it is the per-channel
    form (A [H, P, N], dt [B, H, P], D / dt_bias [H, P]). Mamba-1 form: state [S, D, N]; x, dt, z,
    out [B, D]; A [D, N]; D, dt_bias [D]; B, C [B, N]. Any strides; x / z / dt / B / C / out fp16 /
    bf16 / fp32, the state fp32 / bf16 / fp16, A / D / dt_bias any float (read as fp32).
    state_batch_indices [B] (int32 / int64): the slot of each batch row (None: slot b, S >= B);
    rows equal to pad_slot_id read a zero state and write none. dst_state_batch_indices [B]: write
    the new state there instead (pad_slot_id: not at all). The indices must be in [0, S) or the pad
    id (not checked on the device). out: a fresh tensor shaped like x in x's dtype, or given (any
    strides, x's shape and dtype). BLOCK_P, N_SPLIT, num_warps, num_stages: the tunables (module doc)."""
    import torch
    cfg = {"BLOCK_P": BLOCK_P, "N_SPLIT": N_SPLIT, "num_warps": num_warps, "num_stages": num_stages}
    _check_cfg(cfg)
    fdt = (torch.float32, torch.bfloat16, torch.float16)
    if x.dtype not in fdt or state.dtype not in fdt:
        raise ValueError(f"x and state must be fp32 / bf16 / fp16; got {x.dtype}, {state.dtype}")
    user_out = out
    if out is not None and (tuple(out.shape) != tuple(x.shape) or out.dtype != x.dtype):
        raise ValueError(f"out must be {x.dtype} {list(x.shape)} like x; got {out.dtype} {list(out.shape)}")
    state_h, x_h, dt_h, A_h, B_h, C_h, D_h, z_h, db_h, out_h = _head_form(state, x, dt, A, B, C, D, z, dt_bias, out)
    S, H, P, N = state_h.shape
    Bt = x_h.shape[0]
    tie = A_h.dim() == 1
    if tuple(x_h.shape) != (Bt, H, P):
        raise ValueError(f"x must be [B, H={H}, P={P}] like the state's heads; got {tuple(x.shape)}")
    if not 1 <= N <= MAX_N:
        raise ValueError(f"dstate N={N} must be 1 .. {MAX_N}")
    if B_h.shape[0] != Bt or B_h.shape[2] != N or tuple(C_h.shape) != tuple(B_h.shape):
        raise ValueError(f"B and C must both be [B={Bt}, G, N={N}]; got {tuple(B.shape)}, {tuple(C.shape)}")
    G = B_h.shape[1]
    if G < 1 or H % G:
        raise ValueError(f"groups G={G} must divide heads H={H}")
    if tie:
        shapes = {"A": (A_h, (H,)), "dt": (dt_h, (Bt, H)), "D": (D_h, (H,)), "dt_bias": (db_h, (H,))}
    else:
        shapes = {"A": (A_h, (H, P, N)), "dt": (dt_h, (Bt, H, P)), "D": (D_h, (H, P)), "dt_bias": (db_h, (H, P))}
    shapes["z"] = (z_h, (Bt, H, P))
    for name, (t, shp) in shapes.items():
        if t is not None and tuple(t.shape) != shp:
            form = "Mamba-2 (per-head scalars)" if tie else "per-channel"
            raise ValueError(f"{name} must be {list(shp)} in the {form} form; got {list(t.shape)}")
    for name, t in (("dt", dt_h), ("A", A_h), ("B", B_h), ("C", C_h), ("D", D_h), ("z", z_h), ("dt_bias", db_h)):
        if t is not None and not t.is_floating_point():
            raise ValueError(f"{name} must be a float tensor; got {t.dtype}")
    for name, idx in (("state_batch_indices", state_batch_indices), ("dst_state_batch_indices",
                                                                     dst_state_batch_indices)):
        if idx is None:
            continue
        if idx.dim() != 1 or idx.shape[0] != Bt or idx.dtype not in (torch.int32, torch.int64):
            raise ValueError(f"{name} must be int32 / int64 [B={Bt}]; got {idx.dtype} {list(idx.shape)}")
    if dst_state_batch_indices is not None and state_batch_indices is None:
        raise ValueError("dst_state_batch_indices needs state_batch_indices")
    if state_batch_indices is None and S < Bt:
        raise ValueError(f"without state_batch_indices the state needs a slot a batch row: S={S} < B={Bt}")
    if not _is_int(pad_slot_id) or not -2**31 <= pad_slot_id < 2**31:
        raise ValueError(f"pad_slot_id={pad_slot_id!r} must be an int32")
    dev = x.device
    for name, t in (("state", state), ("dt", dt), ("A", A), ("B", B), ("C", C), ("D", D), ("z", z),
                    ("dt_bias", dt_bias), ("state_batch_indices", state_batch_indices),
                    ("dst_state_batch_indices", dst_state_batch_indices), ("out", out)):
        if t is not None and t.device != dev:
            raise ValueError(f"{name} must be on x's device {dev}; got {t.device}")
    # int32 offsets inside one slot / batch row: the extent of every tensor past its leading dim
    for name, t in (("state", state_h), ("x", x_h), ("dt", dt_h), ("A", A_h), ("B", B_h), ("C", C_h),
                    ("z", z_h), ("out", out_h)):
        if t is None:
            continue
        lead = 0 if name == "A" else 1
        ext = sum((n - 1) * abs(s) for n, s in zip(t.shape[lead:], t.stride()[lead:]))
        if ext >= 2**31:
            raise ValueError(f"{name}'s offsets inside a slot / row exceed the kernel's int32 ({ext})")
    if H > 65535 or Bt > 65535:
        raise ValueError(f"heads H={H} / batch B={Bt} exceed the grid's 65535")
    if out is None:
        out = torch.empty(x.shape, dtype=x.dtype, device=dev)
        out_h = out.unsqueeze(1) if x.dim() == 2 else out
    if Bt == 0 or H * P == 0:
        return out
    grid = _grid(P, H, Bt, cfg)
    _kernel[grid](**_kernel_args(state_h, x_h, dt_h, A_h, B_h, C_h, D_h, z_h, db_h, state_batch_indices,
                                 dst_state_batch_indices, out_h, dt_softplus, pad_slot_id, cfg),
                  num_warps=num_warps, num_stages=num_stages)
    return out if user_out is None else user_out


# ---------------------------------------------------------------- inputs, reference, baseline
def _layouts(P_: dict):
    """(shapes and element offsets) of the buffers a point's tensors are views of: the vLLM layout
    reads x / z / dt / B / C in place from the projection outputs (Mamba-2: in_proj's [B, z | x B C |
    dt] row, the conv updated in place; Mamba-1: in_proj's [B, x | z] row, dt_proj's [B, D] output,
    x_proj's [B, dt | B | C] row); the page layout puts the conv state (conv_dim x 3 in the
    activations' dtype) before each slot's ssm state."""
    H, P, G, N = P_["H"], P_["P"], P_["G"], P_["N"]
    HP = H * P
    ab, sb = _elem_bytes(P_["dtype"]), _elem_bytes(P_["state_dtype"])
    conv_dim = HP + 2 * G * N if P_["mamba"] == 2 else HP
    conv_elems = -(-conv_dim * (CONV_WIDTH - 1) * ab // sb) if P_["page"] else 0
    return {"HP": HP, "conv_elems": conv_elems, "page": HP * N + conv_elems, "conv_dim": conv_dim}


def _views(P_: dict, bufs: dict) -> dict:
    """The point's tensors as views of `bufs` (see _alloc)."""
    H, P, G, N, Bt = P_["H"], P_["P"], P_["G"], P_["N"], P_["B"]
    L = _layouts(P_)
    HP = L["HP"]
    S = P_["S"] or Bt
    state = bufs["cache"].as_strided((S, H, P, N), (L["page"], P * N, N, 1), L["conv_elems"])
    if P_["layout"] == "contiguous":
        v = {k: bufs[k] for k in ("x", "dt", "B", "C", "z")}
    elif P_["mamba"] == 2:
        proj = bufs["proj"]                                     # [B, HP (z) + conv_dim (x B C) + H (dt)]
        x = proj[:, HP:2 * HP].view(Bt, H, P)
        Bm = proj[:, 2 * HP:2 * HP + G * N].view(Bt, G, N)
        Cm = proj[:, 2 * HP + G * N:2 * HP + 2 * G * N].view(Bt, G, N)
        dt = proj[:, HP + L["conv_dim"]:]
        z = proj[:, :HP].view(Bt, H, P) if P_["gate"] else None
        v = {"x": x, "dt": dt, "B": Bm, "C": Cm, "z": z}
    else:
        proj = bufs["proj"]                                     # in_proj [B, 2D]: x | z
        xp = bufs["xproj"]                                      # x_proj [B, R + 2N]: dt | B | C
        R = JAMBA_DT_RANK
        v = {"x": proj[:, :HP], "z": proj[:, HP:] if P_["gate"] else None, "dt": bufs["dt"],
             "B": xp[:, R:R + N], "C": xp[:, R + N:R + 2 * N]}
    return dict(v, state=state)


def _alloc(P_: dict, make):
    """The buffers of a point's tensors, from make(shape, dtype, what) (torch.empty on meta / a random fill)."""
    H, P, G, N, Bt = P_["H"], P_["P"], P_["G"], P_["N"], P_["B"]
    L = _layouts(P_)
    HP = L["HP"]
    adt, sdt = _torch_dtype(P_["dtype"]), _torch_dtype(P_["state_dtype"])
    S = P_["S"] or Bt
    bufs = {"cache": make((S * L["page"],), sdt, "state")}
    if P_["layout"] == "contiguous":
        bufs["x"] = make((Bt, H, P) if P_["mamba"] == 2 else (Bt, HP), adt, "x")
        bufs["dt"] = make((Bt, H) if P_["mamba"] == 2 else (Bt, HP), adt, "dt")
        bufs["B"] = make((Bt, G, N) if P_["mamba"] == 2 else (Bt, N), adt, "B")
        bufs["C"] = make((Bt, G, N) if P_["mamba"] == 2 else (Bt, N), adt, "C")
        bufs["z"] = make(bufs["x"].shape, adt, "z") if P_["gate"] else None
    elif P_["mamba"] == 2:
        bufs["proj"] = make((Bt, HP + L["conv_dim"] + H), adt, "proj")
    else:
        bufs["proj"] = make((Bt, 2 * HP), adt, "proj")
        bufs["xproj"] = make((Bt, JAMBA_DT_RANK + 2 * N), adt, "B")
        bufs["dt"] = make((Bt, HP), adt, "dt")
    return bufs


def _params_shapes(P_: dict):
    if P_["mamba"] == 2:
        return (P_["H"],), (P_["H"],)
    return (P_["P"], P_["N"]), (P_["P"],)


def _slot_indices(P_: dict, gen):
    """(src, dst) int32 [B] or None: distinct random slots (continuous batching: not 0 .. B - 1), the
    last pad_rows rows the pad slot; with dst, every other row writes to a further unused slot."""
    import torch
    Bt, S, pad = P_["B"], P_["S"], P_["pad"]
    if not S:
        return None, None
    perm = torch.randperm(S, generator=gen)
    real = Bt - pad
    src = torch.full((Bt,), PAD_SLOT_ID, dtype=torch.int32)
    src[:real] = perm[:real].to(torch.int32)
    if not P_["dst"]:
        return src, None
    dst = src.clone()
    dst[0:real:2] = perm[real:real + (real + 1) // 2].to(torch.int32)     # the pad rows keep the pad slot
    return src, dst


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """A decode step at the point, drawn on the CPU from a seeded torch.Generator and moved: x, z,
    B, C ~ N(0, 1) and dt ~ 0.5 N(0, 1) (dt_proj's output, before the bias) in the activations'
    dtype, written into the buffers vLLM reads them from (layout "vllm", the other columns random
    too); A fp32 (Mamba-2: -U[1, 16) a head, -exp(A_log) at A_log's init; Mamba-1: -(n + 1) x a
    factor in [0.5, 1.5) a channel, S4D-real's init trained apart); D ~ 1 + 0.1 N(0, 1) fp32;
    dt_bias = softplus^-1 of a step log-uniform in [1e-3, 1e-1] (without softplus: dt itself such a
    step, the bias a small shift); the cache ~ N(0, 1) (a running state's scale) in the state dtype,
    every slot and the page's conv part; the slot indices (see _slot_indices). "state" is the cache
    the kernel updates; "state_init" a copy of it before the step (what reference and torch_baseline
    read)."""
    import math
    import torch
    P_ = _check_point(point)
    gen = torch.Generator(device="cpu").manual_seed(seed)
    N = P_["N"]

    def make(shape, dtype, what):
        return torch.randn(shape, generator=gen).to(dtype)

    bufs = _alloc(P_, make)
    dt_view = _views(P_, bufs)["dt"]           # a view: written in place into its buffer
    if P_["softplus"]:                       # dt_proj's output, before the bias
        dt_view.copy_(0.5 * dt_view.float())
    else:                                    # dt is the step itself: positive and small
        dt_view.copy_(torch.exp(torch.empty(dt_view.shape).uniform_(math.log(1e-3), math.log(1e-1), generator=gen)))
    a_shape, d_shape = _params_shapes(P_)
    if P_["mamba"] == 2:
        A = -torch.empty(a_shape).uniform_(1.0, 16.0, generator=gen)
    else:
        A = -(torch.arange(1, N + 1, dtype=torch.float32)[None, :]
              * torch.empty(a_shape).uniform_(0.5, 1.5, generator=gen))
    D = 1.0 + 0.1 * torch.randn(d_shape, generator=gen) if P_["skip"] else None
    steps = torch.exp(torch.empty(d_shape).uniform_(math.log(1e-3), math.log(1e-1), generator=gen))
    if P_["dt_bias"]:
        dt_bias = steps + torch.log(-torch.expm1(-steps)) if P_["softplus"] else 0.01 * steps
    else:
        dt_bias = None
    src, dst = _slot_indices(P_, gen)
    bufs = {k: (None if v is None else v.to(device)) for k, v in bufs.items()}
    init = {k: v.clone() for k, v in bufs.items() if k == "cache"}
    views = _views(P_, bufs)
    views_init = _views(P_, dict(bufs, **init))
    out = {"x": views["x"], "dt": views["dt"], "A": A.to(device), "B": views["B"], "C": views["C"],
           "D": None if D is None else D.to(device), "z": views["z"],
           "dt_bias": None if dt_bias is None else dt_bias.to(device), "dt_softplus": bool(P_["softplus"]),
           "state": views["state"], "state_init": views_init["state"],
           "state_batch_indices": None if src is None else src.to(device),
           "dst_state_batch_indices": None if dst is None else dst.to(device), "pad_slot_id": PAD_SLOT_ID}
    if P_["mamba"] == 1:                      # Mamba-1's 2-d state view [S, D, N]
        out["state"] = out["state"][:, 0]
        out["state_init"] = out["state_init"][:, 0]
    return out


def launch(inputs, cfg):
    """One step: inputs["state"] updated in place (so a second launch advances it again); returns out
    (shaped like x, in x's dtype)."""
    return selective_state_update(inputs["state"], inputs["x"], inputs["dt"], inputs["A"], inputs["B"], inputs["C"],
                                  inputs.get("D"), inputs.get("z"), inputs.get("dt_bias"),
                                  dt_softplus=inputs.get("dt_softplus", False),
                                  state_batch_indices=inputs.get("state_batch_indices"),
                                  dst_state_batch_indices=inputs.get("dst_state_batch_indices"),
                                  pad_slot_id=inputs.get("pad_slot_id", PAD_SLOT_ID), out=inputs.get("out"),
                                  BLOCK_P=cfg["BLOCK_P"], N_SPLIT=cfg["N_SPLIT"], num_warps=cfg["num_warps"],
                                  num_stages=cfg.get("num_stages", 1))


def _step(inputs, wide):
    """(y [B, H, P], the new state rows [B, H, P, N], src rows read mask, dst rows, dst write mask) in
    dtype `wide`, from inputs["state_init"], in the head form."""
    import torch
    import torch.nn.functional as F
    st, x, dt, A, Bm, Cm, D, z, db, _ = _head_form(inputs["state_init"], inputs["x"], inputs["dt"], inputs["A"],
                                                   inputs["B"], inputs["C"], inputs.get("D"), inputs.get("z"),
                                                   inputs.get("dt_bias"), None)
    Bt, H, P = x.shape
    N = st.shape[3]
    pad = inputs.get("pad_slot_id", PAD_SLOT_ID)
    src = inputs.get("state_batch_indices")
    dst = inputs.get("dst_state_batch_indices")
    if src is None:
        src = torch.arange(Bt, device=x.device)
    src = src.long()
    dst = src if dst is None else dst.long()
    rd, wr = src != pad, dst != pad
    s = torch.zeros((Bt, H, P, N), dtype=wide, device=x.device)
    s[rd] = st[src[rd]].to(wide)
    dt = dt.to(wide)
    if db is not None:
        dt = dt + db.to(wide)
    if inputs.get("dt_softplus", False):
        dt = F.softplus(dt)
    rep = H // Bm.shape[1]
    Bh = Bm.to(wide).repeat_interleave(rep, dim=1)           # [B, H, N]
    Ch = Cm.to(wide).repeat_interleave(rep, dim=1)
    xw = x.to(wide)
    if A.dim() == 1:
        dA = torch.exp(dt * A.to(wide))[:, :, None, None]
        dtx = dt[:, :, None] * xw
    else:
        dA = torch.exp(dt[..., None] * A.to(wide)[None])
        dtx = dt * xw
    s = s * dA + dtx[..., None] * Bh[:, :, None, :]
    y = (s * Ch[:, :, None, :]).sum(-1)
    if D is not None:
        y = y + (D.to(wide)[None, :, None] if D.dim() == 1 else D.to(wide)[None]) * xw
    if z is not None:
        zw = z.to(wide)
        y = y * zw * torch.sigmoid(zw)
    return y, s, rd, dst, wr


def reference(inputs):
    """out in fp32, shaped like x: the step in fp64 on the CPU (fp32 on a GPU) from the cache before
    the step (inputs["state_init"]), mamba_ssm's selective_state_update_ref with the slot gather /
    scatter. Reads the inputs, never writes them."""
    import torch
    wide = torch.float64 if inputs["x"].device.type == "cpu" else torch.float32
    y = _step(inputs, wide)[0]
    return y.reshape(inputs["x"].shape).float()


def reference_state(inputs):
    """The whole cache after the step, in fp64 (CPU) / fp32, unrounded at the written rows: a copy
    of inputs["state_init"] with the new rows scattered to their destination slots."""
    import torch
    wide = torch.float64 if inputs["x"].device.type == "cpu" else torch.float32
    _, s, _, dst, wr = _step(inputs, wide)
    cache = inputs["state_init"].to(wide).clone()
    c4 = cache.unsqueeze(1) if cache.dim() == 3 else cache
    c4[dst[wr]] = s[wr]
    return cache


def torch_baseline(inputs):
    """What eager PyTorch runs for the step (mamba_ssm's selective_state_update_ref on the gathered
    slots): gather the rows from the cache before the step (state_init), the update in fp32 as
    separate kernels, scatter the new rows into inputs["state"] (rounded to its dtype), y in fp32
    rounded to x's dtype. Returns out."""
    import torch
    y, s, _, dst, wr = _step(inputs, torch.float32)
    st = inputs["state"]
    s4 = st.unsqueeze(1) if st.dim() == 3 else st
    s4[dst[wr]] = s[wr].to(st.dtype)
    return y.reshape(inputs["x"].shape).to(inputs["x"].dtype)


# ---------------------------------------------------------------- hooks
def bytes_moved(point) -> int:
    """The state rows read (batch rows with a real source slot) and written (a real destination), in
    the state dtype; x, dt, B, C (and z) read and out written once in the activations' dtype; A, D
    and dt_bias (fp32, per head or per channel) and the slot indices (int32) once. L2-resident
    re-reads (A's tile by every batch row in Mamba-1, B / C by every head) are not counted."""
    P_ = _check_point(point)
    Bt, H, P, G, N = P_["B"], P_["H"], P_["P"], P_["G"], P_["N"]
    ab, sb = _elem_bytes(P_["dtype"]), _elem_bytes(P_["state_dtype"])
    real = Bt - P_["pad"]
    state = 2 * real * H * P * N * sb
    acts = Bt * H * P * ab * (2 + P_["gate"]) + Bt * 2 * G * N * ab
    acts += Bt * (H if P_["mamba"] == 2 else H * P) * ab
    n_par = H if P_["mamba"] == 2 else H * P
    params = (n_par * N if P_["mamba"] == 1 else n_par) * 4 + n_par * 4 * (P_["skip"] + P_["dt_bias"])
    idx = 4 * Bt * (1 + P_["dst"]) if P_["S"] else 0
    return state + acts + params + idx


def flops(point) -> int:
    """Per state element: the decay, dt x B added (a multiply and an FMA: 3; Mamba-1 also dt A and its
    exp: 5), and y's multiply-add with C (2); per row dt x (1), the D skip (2), the z gate (4). The
    per-head / per-row softplus is not counted."""
    P_ = _check_point(point)
    Bt, H, P, N = P_["B"], P_["H"], P_["P"], P_["N"]
    per_elem = 5 if P_["mamba"] == 2 else 7
    per_row = 1 + 2 * P_["skip"] + 4 * P_["gate"]
    return Bt * H * P * (N * per_elem + per_row)


def grid(cfg, point) -> tuple[int, int, int]:
    """(cdiv(P, BLOCK_P), H, B): row blocks of a head fastest, then the heads, then the batch rows."""
    P_ = _check_point(point)
    return _grid(P_["P"], P_["H"], P_["B"], cfg)


def loop_iterations(cfg, point) -> int:
    """The N chunks a program walks: cdiv(N, BLOCK_N) (1: the whole N held at once)."""
    P_ = _check_point(point)
    _check_cfg(cfg)
    return triton.cdiv(P_["N"], _block_n(P_["N"], cfg["N_SPLIT"]))


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory): the
    views make_inputs builds (the cache's page layout, x / z / dt / B / C in place in the projection
    outputs for layout "vllm"), in the head form; out a fresh tensor like x; the slot indices int32."""
    import torch
    P_ = _check_point(point)
    _check_cfg(cfg)

    def make(shape, dtype, what):
        return torch.empty(shape, dtype=dtype, device="meta")

    v = _views(P_, _alloc(P_, make))
    a_shape, d_shape = _params_shapes(P_)
    A = torch.empty(a_shape, dtype=torch.float32, device="meta")
    D = torch.empty(d_shape, dtype=torch.float32, device="meta") if P_["skip"] else None
    db = torch.empty(d_shape, dtype=torch.float32, device="meta") if P_["dt_bias"] else None
    state = v["state"][:, 0] if P_["mamba"] == 1 else v["state"]
    out = torch.empty(v["x"].shape, dtype=v["x"].dtype, device="meta")
    h = _head_form(state, v["x"], v["dt"], A, v["B"], v["C"], D, v["z"], db, out)
    src = torch.empty((P_["B"],), dtype=torch.int32, device="meta") if P_["S"] else None
    dst = torch.empty((P_["B"],), dtype=torch.int32, device="meta") if P_["dst"] else None
    st, x, dt, A, Bm, Cm, D, z, db, out = h
    return _kernel_args(st, x, dt, A, Bm, Cm, D, z, db, src, dst, out, bool(P_["softplus"]), PAD_SLOT_ID, cfg)
