"""Mamba-1's selective scan, forward (mamba_ssm's selective_scan_fn: the recurrent scan of the
selective SSM), a bare @triton.jit kernel + its launcher.

    dt[t]    = softplus(delta[b, d, t] + delta_bias[d])          (softplus, bias optional)
    h[n]     = exp(dt[t] * A[d, n]) * h[n] + dt[t] * B[b, n, t] * u[b, d, t]      h[n] = 0 at t = -1
    y[b,d,t] = (sum_n C[b, n, t] * h[n] + D[d] * u[b, d, t]) * silu(z[b, d, t])   (D, z optional)

for every batch row b and channel d, with N states h[0..N) per channel (Mamba's d_state, 16).
u, delta, z: [B, D, L] fp16 / bf16 / fp32, L contiguous (batch and channel strides free, so u
and z may be the two halves of in_proj's [B, 2D, L] output); B, C: [B, N, L] in u's dtype, L
contiguous; A: [D, N] fp32 (Mamba's -exp(A_log)); D, delta_bias: [D] fp32. out: [B, D, L] in
u's dtype; optionally the state after the last step, [B, D, N] fp32 (what a prefill hands to
the decode steps). fp32 math throughout.

One CTA owns BLOCK_D channels of one batch row (grid (cdiv(D, BLOCK_D), B): the CTAs of one
batch row run side by side and share its B and C rows in L2) and walks L in BLOCK_L-step
chunks with the state h [BLOCK_D, N] in registers. Per chunk it loads the [BLOCK_D, BLOCK_L]
tiles of u, delta (and z) and the [N, BLOCK_L] tiles of B and C (all coalesced along L), forms
the per-step transition of every state, dA = exp2(dt A log2(e)) and dBu = dt u B, as
[BLOCK_D, N, BLOCK_L] tensors, and scans them along the chunk with tl.associative_scan over
the first-order recurrence's composition (a1, b1) . (a2, b2) = (a1 a2, a2 b1 + b2): step t
then holds the chunk's product of decays P[t] and its input sum S[t], so h at t is
P[t] h_in + S[t]. y's contraction with C runs along N; the state carried into the next chunk
is the chunk's last column (tail steps past L have dt = 0: decay 1 and no input, so the last
column is the state after the last real step). A chunk's loads, decays and scan do not depend
on the state carried in: only P h_in + S and the pick of the last column chain the chunks.

Tunables: BLOCK_D (channels per CTA), BLOCK_L (steps scanned at once; the scan's
[BLOCK_D, N, BLOCK_L] tensors live in registers), powers of two, num_warps, num_stages (no
dot: the loads are not pipelined, so num_stages may change nothing in the cubin).
Problem parameters (a workload point): B, D, L, N (d_state), dtype; optional flags z,
delta_bias, softplus (default True each: Mamba's call) and D_skip (default True: the D u
skip term).
"""

from __future__ import annotations

import triton
import triton.language as tl

REF_CHUNK_ELEMS = 2**24      # scan_torch's time chunk: at most this many B D T N elements


@triton.jit
def _compose(a_l, b_l, a_r, b_r):
    """Step (a_l, b_l) then (a_r, b_r): h -> a_r (a_l h + b_l) + b_r."""
    return a_l * a_r, a_r * b_l + b_r


@triton.jit
def _kernel(U, DELTA, A, Bm, Cm, Dskip, Z, DBIAS, OUT, HLAST, D, L, N,
            stride_ub, stride_ud, stride_db, stride_dd, stride_ad, stride_bb, stride_bn,
            stride_cb, stride_cn, stride_zb, stride_zd, stride_ob, stride_od,
            BLOCK_N: tl.constexpr, HAS_D: tl.constexpr, HAS_Z: tl.constexpr, HAS_DBIAS: tl.constexpr,
            SOFTPLUS: tl.constexpr, STORE_STATE: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_L: tl.constexpr):
    pid_d = tl.program_id(0)
    b = tl.program_id(1).to(tl.int64)
    ds = pid_d * BLOCK_D + tl.arange(0, BLOCK_D)
    d_ok = ds < D
    ns = tl.arange(0, BLOCK_N)
    n_ok = ns < N
    ls = tl.arange(0, BLOCK_L)
    last = (ls == BLOCK_L - 1)[None, None, :]

    # per-channel constants: A in log2 units, so the decay is one exp2
    a2 = tl.load(A + ds[:, None].to(tl.int64) * stride_ad + ns[None, :], mask=d_ok[:, None] & n_ok[None, :],
                 other=0.0).to(tl.float32) * 1.4426950408889634
    a2 = a2[:, :, None]
    if HAS_D:
        dskip = tl.load(Dskip + ds, mask=d_ok, other=0.0).to(tl.float32)[:, None]
    if HAS_DBIAS:
        dbias = tl.load(DBIAS + ds, mask=d_ok, other=0.0).to(tl.float32)[:, None]

    d64 = ds.to(tl.int64)[:, None]
    u_row = U + b * stride_ub + d64 * stride_ud
    dt_row = DELTA + b * stride_db + d64 * stride_dd
    o_row = OUT + b * stride_ob + d64 * stride_od
    if HAS_Z:
        z_row = Z + b * stride_zb + d64 * stride_zd
    b_row = Bm + b * stride_bb + ns[:, None] * stride_bn
    c_row = Cm + b * stride_cb + ns[:, None] * stride_cn

    h = tl.zeros([BLOCK_D, BLOCK_N], tl.float32)
    for l0 in range(0, L, BLOCK_L):
        t = l0 + ls
        t_ok = (t < L)[None, :]
        m = d_ok[:, None] & t_ok
        u = tl.load(u_row + t[None, :], mask=m, other=0.0).to(tl.float32)
        dt = tl.load(dt_row + t[None, :], mask=m, other=0.0).to(tl.float32)
        if HAS_DBIAS:
            dt += dbias
        if SOFTPLUS:
            # log1p(exp(dt)) to fp32 accuracy (log(p) x / (p - 1) corrects p = 1 + x's rounding),
            # dt itself above 20 (as Mamba's kernel)
            ex = tl.exp(dt)
            p = 1.0 + ex
            sp = tl.where(p == 1.0, ex, tl.log(p) * (ex / (p - 1.0)))
            dt = tl.where(dt <= 20.0, sp, dt)
        dt = tl.where(m, dt, 0.0)                 # tail steps: decay 1, no input
        nm = n_ok[:, None] & t_ok
        bt = tl.load(b_row + t[None, :], mask=nm, other=0.0).to(tl.float32)
        ct = tl.load(c_row + t[None, :], mask=nm, other=0.0).to(tl.float32)

        dA = tl.exp2(dt[:, None, :] * a2)                       # [BLOCK_D, BLOCK_N, BLOCK_L]
        dBu = (dt * u)[:, None, :] * bt[None, :, :]
        pa, sb = tl.associative_scan((dA, dBu), axis=2, combine_fn=_compose)
        hs = pa * h[:, :, None] + sb                            # the state after every step
        y = tl.sum(hs * ct[None, :, :], axis=1)                 # [BLOCK_D, BLOCK_L]
        h = tl.sum(tl.where(last, hs, 0.0), axis=2)

        if HAS_D:
            y += dskip * u
        if HAS_Z:
            z = tl.load(z_row + t[None, :], mask=m, other=0.0).to(tl.float32)
            y *= z / (1.0 + tl.exp(-z))
        tl.store(o_row + t[None, :], y.to(OUT.dtype.element_ty), mask=m)

    if STORE_STATE:
        hp = HLAST + (b * D + ds.to(tl.int64))[:, None] * N + ns[None, :]
        tl.store(hp, h, mask=d_ok[:, None] & n_ok[None, :])


# ---------------------------------------------------------------- launcher
DTYPES = ("fp16", "bf16", "fp32")
TUNABLES = ("BLOCK_D", "BLOCK_L", "num_warps", "num_stages")
BASELINE = {"BLOCK_D": 8, "BLOCK_L": 32, "num_warps": 4, "num_stages": 1}

# u, delta, z read and out written: 4 x B D L x 2-4 bytes = 512 MiB-1 GiB (10-21x the H200's
# 50 MB L2); B and C (B N L each) are small beside them. The scan does ~10 fp32 operations, its
# shuffles and an exp2 per (b, d, n, t) element (1.1-1.3 G of them): compute, not DRAM, sets
# the pace.
POINTS = [
    {"B": 8, "D": 5120, "L": 2048, "N": 16, "dtype": "bf16"},     # Mamba-2.8B (d_model 2560), 8 x 2k-token prefill
    {"B": 1, "D": 8192, "L": 8192, "N": 16, "dtype": "fp32"},     # Falcon-Mamba-7B (d_model 4096), one 8k sequence, fp32
    {"B": 2, "D": 8192, "L": 4096, "N": 16, "dtype": "fp16"},     # Falcon-Mamba-7B, 2 x 4k tokens, fp16
]


def _torch_dtype(name: str):
    import torch
    try:
        return {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}") from None


def _elem_bytes(name: str) -> int:
    if name not in DTYPES:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}")
    return 4 if name == "fp32" else 2


def _flags(point) -> tuple[bool, bool, bool, bool]:
    """(z, delta_bias, softplus, D_skip) of a point: Mamba's call (all True) unless it says otherwise."""
    return (bool(point.get("z", True)), bool(point.get("delta_bias", True)), bool(point.get("softplus", True)),
            bool(point.get("D_skip", True)))


def _check_cfg(cfg) -> None:
    for name in ("BLOCK_D", "BLOCK_L"):
        v = cfg[name]
        if v < 1 or v & (v - 1):
            raise ValueError(f"{name}={v} must be a power of two")


def _kernel_args(u, delta, A, B, C, D, z, delta_bias, delta_softplus, out, last_state, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it). D, z,
    delta_bias and last_state may be None (their terms are compiled out)."""
    zs = z.stride()[:2] if z is not None else (0, 0)
    return dict(U=u, DELTA=delta, A=A, Bm=B, Cm=C, Dskip=D, Z=z, DBIAS=delta_bias, OUT=out, HLAST=last_state,
                D=u.shape[1], L=u.shape[2], N=A.shape[1],
                stride_ub=u.stride(0), stride_ud=u.stride(1), stride_db=delta.stride(0), stride_dd=delta.stride(1),
                stride_ad=A.stride(0), stride_bb=B.stride(0), stride_bn=B.stride(1),
                stride_cb=C.stride(0), stride_cn=C.stride(1), stride_zb=zs[0], stride_zd=zs[1],
                stride_ob=out.stride(0), stride_od=out.stride(1),
                BLOCK_N=triton.next_power_of_2(A.shape[1]), HAS_D=D is not None, HAS_Z=z is not None,
                HAS_DBIAS=delta_bias is not None, SOFTPLUS=bool(delta_softplus),
                STORE_STATE=last_state is not None, BLOCK_D=cfg["BLOCK_D"], BLOCK_L=cfg["BLOCK_L"])


def selective_scan(u, delta, A, B, C, D=None, z=None, delta_bias=None, delta_softplus=False,
                   return_last_state=False, *, out=None, BLOCK_D=8, BLOCK_L=32, num_warps=4, num_stages=1):
    """Mamba-1's selective scan (mamba_ssm's selective_scan_fn, forward; one B and C group).
    u, delta, z: [B, D, L]; B, C: [B, N, L], in u's dtype (fp16 / bf16 / fp32); A: [D, N] fp32;
    D, delta_bias: [D] fp32. Returns out [B, D, L] in u's dtype (into `out` if given: a
    [B, D, L] tensor of u's dtype with L contiguous), and with return_last_state also the
    state after the last step, [B, D, N] fp32."""
    import torch
    if u.dim() != 3 or delta.shape != u.shape:
        raise ValueError(f"expected u, delta [B, D, L]; got {tuple(u.shape)}, {tuple(delta.shape)}")
    Bsz, Dm, L = u.shape
    if A.dim() != 2 or A.shape[0] != Dm:
        raise ValueError(f"expected A [{Dm}, N]; got {tuple(A.shape)}")
    N = A.shape[1]
    if not 1 <= N <= 256:
        raise ValueError(f"d_state N={N}: the kernel takes 1..256")
    if u.dtype not in (torch.float16, torch.bfloat16, torch.float32):
        raise ValueError(f"u dtype {u.dtype} is not fp16, bf16 or fp32")
    for name, t, shape in (("delta", delta, (Bsz, Dm, L)), ("B", B, (Bsz, N, L)), ("C", C, (Bsz, N, L)),
                           ("z", z, (Bsz, Dm, L))):
        if t is not None and (tuple(t.shape) != shape or t.dtype != u.dtype):
            raise ValueError(f"{name} must be {u.dtype} {list(shape)}; got {t.dtype} {list(t.shape)}")
    if A.dtype != torch.float32:
        raise ValueError(f"A must be fp32; got {A.dtype}")
    for name, t in (("D", D), ("delta_bias", delta_bias)):
        if t is not None and (tuple(t.shape) != (Dm,) or t.dtype != torch.float32):
            raise ValueError(f"{name} must be fp32 [{Dm}]; got {t.dtype} {list(t.shape)}")
    cfg = {"BLOCK_D": BLOCK_D, "BLOCK_L": BLOCK_L}
    _check_cfg(cfg)
    if out is None:
        out = torch.empty((Bsz, Dm, L), dtype=u.dtype, device=u.device)
    elif tuple(out.shape) != (Bsz, Dm, L) or out.dtype != u.dtype or (L > 1 and out.stride(2) != 1):
        raise ValueError(f"out must be a [{Bsz}, {Dm}, {L}] {u.dtype} tensor with L contiguous; got "
                         f"{list(out.shape)} {out.dtype} strides {out.stride()}")
    last = torch.empty((Bsz, Dm, N), dtype=torch.float32, device=u.device) if return_last_state else None
    if u.numel() == 0:
        if last is not None:
            last.zero_()
        return (out, last) if return_last_state else out

    def _lc(t):          # L contiguous (batch / channel strides kept)
        return t if t is None or t.stride(2) == 1 or t.shape[2] == 1 else t.contiguous()

    u, delta, B, C, z = _lc(u), _lc(delta), _lc(B), _lc(C), _lc(z)
    A = A.contiguous() if A.stride(1) != 1 else A
    D = D.contiguous() if D is not None else None
    delta_bias = delta_bias.contiguous() if delta_bias is not None else None
    grid = (triton.cdiv(Dm, BLOCK_D), Bsz)
    _kernel[grid](**_kernel_args(u, delta, A, B, C, D, z, delta_bias, delta_softplus, out, last, cfg),
                  num_warps=num_warps, num_stages=num_stages)
    return (out, last) if return_last_state else out


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """Mamba-1's initialisation at its scales: u, z, B, C ~ N(0, 1) in the point's dtype; A =
    -(n + 1) x a per-(d, n) factor in [0.5, 1.5) (S4D-real, then trained apart); D ~ 1 + 0.1
    N(0, 1); with softplus, delta ~ 0.5 N(0, 1) (dt_proj's output) and delta_bias = softplus^-1
    of a step log-uniform in [1e-3, 1e-1] (dt_proj's bias init); without, delta itself is such a
    step (and delta_bias, if any, a small positive shift)."""
    import math
    import torch
    gen = torch.Generator(device=device).manual_seed(seed)
    dt = _torch_dtype(point.get("dtype", "bf16"))
    Bsz, Dm, L, N = point["B"], point["D"], point["L"], point.get("N", 16)
    has_z, has_bias, softplus, has_d = _flags(point)

    def rn(*shape):
        return torch.randn(shape, generator=gen, device=device)

    def log_uniform(*shape):
        r = torch.rand(shape, generator=gen, device=device)
        return torch.exp(math.log(1e-3) + r * (math.log(1e-1) - math.log(1e-3)))

    u = rn(Bsz, Dm, L).to(dt)
    A = -(torch.arange(1, N + 1, device=device, dtype=torch.float32)[None, :]
          * (0.5 + torch.rand((Dm, N), generator=gen, device=device)))
    Bm = rn(Bsz, N, L).to(dt)
    Cm = rn(Bsz, N, L).to(dt)
    if softplus:
        delta = (0.5 * rn(Bsz, Dm, L)).to(dt)
        step = log_uniform(Dm)
        bias = step + torch.log(-torch.expm1(-step))          # softplus^-1(step)
    else:
        delta = log_uniform(Bsz, Dm, L).to(dt)
        bias = 0.01 * torch.rand((Dm,), generator=gen, device=device)
    return {"u": u, "delta": delta, "A": A, "B": Bm, "C": Cm,
            "D": (1.0 + 0.1 * rn(Dm)) if has_d else None,
            "z": rn(Bsz, Dm, L).to(dt) if has_z else None,
            "delta_bias": bias if has_bias else None, "delta_softplus": softplus}


def launch(inputs, cfg):
    """out [B, D, L] in u's dtype."""
    return selective_scan(inputs["u"], inputs["delta"], inputs["A"], inputs["B"], inputs["C"], inputs["D"],
                          inputs["z"], inputs["delta_bias"], inputs["delta_softplus"], BLOCK_D=cfg["BLOCK_D"],
                          BLOCK_L=cfg["BLOCK_L"], num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])


def scan_torch(inputs, dtype, return_last_state: bool = False):
    """The scan in torch at `dtype` (fp64 for the reference, fp32 for the baseline), on the
    inputs' device: vectorised over b, d, n and sequential over t. Time is taken in chunks of T
    steps (B D T N elements a chunk, at most REF_CHUNK_ELEMS): one exp over the chunk's decays and one
    product for its inputs, then the T steps as one in-place multiply-add each, h[t] = dA[t]
    h[t-1] + dBu[t], over the chunk's buffer, and y's contraction with C as one einsum.
    Returns y [B, D, L] at `dtype` (and the last state [B, D, N])."""
    import torch
    import torch.nn.functional as F
    u = inputs["u"].to(dtype)
    delta = inputs["delta"].to(dtype)
    A = inputs["A"].to(dtype)
    Bm, Cm = inputs["B"].to(dtype), inputs["C"].to(dtype)
    if inputs.get("delta_bias") is not None:
        delta = delta + inputs["delta_bias"].to(dtype)[:, None]
    if inputs.get("delta_softplus"):
        delta = F.softplus(delta)                # threshold 20, as Mamba's
    Bsz, Dm, L = u.shape
    N = A.shape[1]
    h = torch.zeros((Bsz, Dm, N), dtype=dtype, device=u.device)
    y = torch.empty((Bsz, Dm, L), dtype=dtype, device=u.device)
    T = max(1, min(L, REF_CHUNK_ELEMS // max(1, Bsz * Dm * N)))
    for l0 in range(0, L, T):
        sl = slice(l0, min(L, l0 + T))
        dl = delta[:, :, sl]                                             # [B, D, T]
        dA = torch.exp(dl[..., None] * A[None, :, None, :])              # [B, D, T, N]
        hs = (dl * u[:, :, sl])[..., None] * Bm[:, None, :, sl].transpose(-1, -2)
        for i in range(hs.shape[2]):
            hs[:, :, i].addcmul_(dA[:, :, i], h)
            h = hs[:, :, i]
        y[:, :, sl] = torch.einsum("bdtn,btn->bdt", hs, Cm[:, :, sl].transpose(-1, -2))
        h = h.clone()
    if inputs.get("D") is not None:
        y += inputs["D"].to(dtype)[:, None] * u
    if inputs.get("z") is not None:
        y *= F.silu(inputs["z"].to(dtype))
    return (y, h) if return_last_state else y


def reference(inputs):
    """fp64 from the same (rounded) inputs, the sequential recurrence (scan_torch)."""
    import torch
    return scan_torch(inputs, torch.float64)


def torch_baseline(inputs):
    """Eager torch in fp32 (the recurrence as mamba_ssm's selective_scan_ref runs it: sequential
    over t, vectorised over b, d, n; here chunked in t so the decays fit in memory), cast to u's
    dtype."""
    import torch
    return scan_torch(inputs, torch.float32).to(inputs["u"].dtype)


def bytes_moved(point) -> int:
    """u and delta (and z) read once, out written once, B and C read once (every CTA of a batch
    row reads them, from L2 after the first), A, D and delta_bias (fp32) read once."""
    Bsz, Dm, L, N = point["B"], point["D"], point["L"], point.get("N", 16)
    has_z, has_bias, _, has_d = _flags(point)
    e = _elem_bytes(point.get("dtype", "bf16"))
    return (e * ((3 + has_z) * Bsz * Dm * L + 2 * Bsz * N * L)
            + 4 * (Dm * N + (Dm if has_d else 0) + (Dm if has_bias else 0)))


def flops(point) -> int:
    """Per (b, d, t, n): the decay's product dt A, its exp, dt u times B, the recurrence's
    multiply-add and y's multiply-add with C (7). Per (b, d, t): dt u, D u + y and silu(z)'s
    product (4, or fewer without D or z). The chunked scan's extra compositions, softplus and
    the sigmoid are not counted."""
    Bsz, Dm, L, N = point["B"], point["D"], point["L"], point.get("N", 16)
    has_z, _, _, has_d = _flags(point)
    return Bsz * Dm * L * (7 * N + 1 + 2 * has_d + has_z)


def grid(cfg, point) -> tuple[int, int]:
    """The launch grid: (channel blocks, batch rows); program_id(0) the channel block."""
    return (triton.cdiv(point["D"], cfg["BLOCK_D"]), point["B"])


def loop_iterations(cfg, point) -> int:
    """L chunks per CTA."""
    return triton.cdiv(point["L"], cfg["BLOCK_L"])


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory)."""
    import torch
    dt = _torch_dtype(point.get("dtype", "bf16"))
    Bsz, Dm, L, N = point["B"], point["D"], point["L"], point.get("N", 16)
    has_z, has_bias, softplus, has_d = _flags(point)

    def t(*shape, dtype=dt):
        return torch.empty(shape, dtype=dtype, device="meta")

    f32 = torch.float32
    return _kernel_args(t(Bsz, Dm, L), t(Bsz, Dm, L), t(Dm, N, dtype=f32), t(Bsz, N, L), t(Bsz, N, L),
                        t(Dm, dtype=f32) if has_d else None, t(Bsz, Dm, L) if has_z else None,
                        t(Dm, dtype=f32) if has_bias else None, softplus, t(Bsz, Dm, L), None, cfg)
