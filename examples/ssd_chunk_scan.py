"""Mamba-2's SSD "chunk scan" output kernel (the last of the chunked scan's kernels: the output
once the state entering each chunk is known), a bare @triton.jit kernel + its launcher.

    y[t] = exp(dA_cs[t]) * (C[t] @ prev_states[c]^T)                      (the inter-chunk term)
         + sum_{s <= t, s in chunk c} (C[t] . B[s]) * exp(dA_cs[t] - dA_cs[s]) * dt[s] * x[s]
         (+ D[h] * x[t])                                                   (the skip, optional)

per batch b, chunk c (tokens c*CHUNK .. c*CHUNK + CHUNK - 1, fewer in a ragged last chunk), head
h of group g = h // (H / G). x: [B, L, H, P] bf16 / fp16 (P = head dim, unit stride along P, any
other strides); C, B: [B, L, G, N] (N = state size, unit stride along N, x's dtype; G groups
of H / G heads share one C and B); dt: [B, H, nchunks, CHUNK] fp32 (the softplus'ed, biased
step) and dA_cs: [B, H, nchunks, CHUNK] fp32 (the within-chunk inclusive cumsum of dt * A),
both with the same strides and a unit stride along the chunk; prev_states: [B, nchunks, H, P,
N] fp32 / bf16 / fp16 (unit stride along N), the state entering each chunk (what the
state-passing kernel wrote); D: [H] fp32 (optional). y: [B, L, H, P] in x's dtype,
accumulated in fp32.

A CTA owns (b, c, h, a BLOCK_M block of the chunk's rows t, a BLOCK_P block of P). It loads its
C rows [BLOCK_M, N] once (N padded to BLOCK_N = next power of two, masked), computes the state
term with one tl.dot (C @ prev_state^T, the state rounded to x's dtype first, as mamba_ssm
does) scaled per row by exp(dA_cs[t]), then walks the chunk's tokens s in BLOCK_K steps up to
the end of its diagonal block (causal: a CTA of row block m walks cdiv(min((m + 1) BLOCK_M,
chunk_len), BLOCK_K) steps): per step a C.B^T tile [BLOCK_M, BLOCK_K] on the tensor cores,
the decay exp(min(dA_cs[t] - dA_cs[s], 0)) * dt[s] with the causal mask s <= t, rounded to x's
dtype, and a tl.dot with the x tile [BLOCK_K, BLOCK_P]. C.B^T is recomputed by every head
of a group and every P block (the price of fusing mamba_ssm's separate bmm_chunk kernel).
Masks: rows / tokens past the chunk's end (only a ragged last chunk has any), p >= P, n >= N.
A CTA whose row block starts past a ragged last chunk's end returns at once.

Grid: (cdiv(CHUNK, BLOCK_M) * cdiv(P, BLOCK_P), B * nchunks, H), as mamba_ssm launches it: the
(row block, P block) tiles of one (batch-chunk, head) fastest (they share the chunk's B / x
strips in L2), then the chunks, then the heads (the heads of a group read the same C / B
again, from L2 when G is small).

Tunables: BLOCK_M (rows t per CTA), BLOCK_P (head-dim columns per CTA), BLOCK_K (tokens s per
step; all powers of two >= 16), num_warps, num_stages (the causal loop's software-pipeline
depth).
Problem parameters (a workload point): B, L, H, G, P, N, CHUNK, dtype ("bf16" / "fp16": x, C,
B, y), state_dtype ("fp32" / "bf16" / "fp16": prev_states), has_D (the skip term).
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _kernel(X, C, Bm, DT, DA, S, D, Y, L, H, P, N, nchunks, CHUNK, heads_per_group,
            stride_x_b, stride_x_l, stride_x_h, stride_c_b, stride_c_l, stride_c_g,
            stride_b_b, stride_b_l, stride_b_g, stride_dt_b, stride_dt_h, stride_dt_c,
            stride_s_b, stride_s_c, stride_s_h, stride_s_p, stride_y_b, stride_y_l, stride_y_h,
            HAS_D: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_P: tl.constexpr,
            BLOCK_K: tl.constexpr):
    pid_mp = tl.program_id(0)
    pid_bc = tl.program_id(1)
    pid_h = tl.program_id(2)
    n_pblk = tl.cdiv(P, BLOCK_P)
    pid_m = pid_mp // n_pblk
    pid_p = pid_mp % n_pblk
    b = pid_bc // nchunks
    c = pid_bc % nchunks
    chunk_start = c * CHUNK
    chunk_len = tl.minimum(CHUNK, L - chunk_start)
    if pid_m * BLOCK_M >= chunk_len:
        return
    g = pid_h // heads_per_group

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_p = pid_p * BLOCK_P + tl.arange(0, BLOCK_P)
    offs_n = tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    m_ok = offs_m < chunk_len
    p_ok = offs_p < P
    n_ok = offs_n < N

    b64 = b.to(tl.int64)
    tok0 = b64 * stride_x_b + chunk_start.to(tl.int64) * stride_x_l + pid_h * stride_x_h
    X_blk = X + tok0
    C_blk = C + b64 * stride_c_b + chunk_start.to(tl.int64) * stride_c_l + g * stride_c_g
    B_blk = Bm + b64 * stride_b_b + chunk_start.to(tl.int64) * stride_b_l + g * stride_b_g
    dt_off = b64 * stride_dt_b + pid_h * stride_dt_h + c * stride_dt_c
    S_blk = S + b64 * stride_s_b + c.to(tl.int64) * stride_s_c + pid_h * stride_s_h

    dA_m = tl.load(DA + dt_off + offs_m, mask=m_ok, other=0.0)
    c_tile = tl.load(C_blk + offs_m[:, None] * stride_c_l + offs_n[None, :],
                     mask=m_ok[:, None] & n_ok[None, :], other=0.0)                       # [BLOCK_M, BLOCK_N]

    # inter-chunk term: C[t] @ prev_state^T, scaled by exp(dA_cs[t])
    st = tl.load(S_blk + offs_p[None, :] * stride_s_p + offs_n[:, None],
                 mask=n_ok[:, None] & p_ok[None, :], other=0.0)                            # [BLOCK_N, BLOCK_P]
    acc = tl.dot(c_tile, st.to(c_tile.dtype)) * tl.exp(dA_m)[:, None]

    # intra-chunk term: the causal walk over s up to the end of this row block's diagonal
    hi = tl.minimum((pid_m + 1) * BLOCK_M, chunk_len)
    for k0 in range(0, hi, BLOCK_K):
        ks = k0 + offs_k
        k_ok = ks < hi
        b_tile = tl.load(B_blk + ks[None, :] * stride_b_l + offs_n[:, None],
                         mask=n_ok[:, None] & k_ok[None, :], other=0.0)                    # [BLOCK_N, BLOCK_K]
        cb = tl.dot(c_tile, b_tile)                                                        # [BLOCK_M, BLOCK_K]
        dA_k = tl.load(DA + dt_off + ks, mask=k_ok, other=0.0)
        dt_k = tl.load(DT + dt_off + ks, mask=k_ok, other=0.0)
        w = cb * tl.exp(tl.minimum(dA_m[:, None] - dA_k[None, :], 0.0)) * dt_k[None, :]
        w = tl.where(offs_m[:, None] >= ks[None, :], w, 0.0)
        x_tile = tl.load(X_blk + ks[:, None] * stride_x_l + offs_p[None, :],
                         mask=k_ok[:, None] & p_ok[None, :], other=0.0)                    # [BLOCK_K, BLOCK_P]
        acc = tl.dot(w.to(x_tile.dtype), x_tile, acc)

    out_mask = m_ok[:, None] & p_ok[None, :]
    if HAS_D:
        x_own = tl.load(X_blk + offs_m[:, None] * stride_x_l + offs_p[None, :], mask=out_mask, other=0.0)
        acc += tl.load(D + pid_h) * x_own.to(tl.float32)
    y_ptr = (Y + b64 * stride_y_b + chunk_start.to(tl.int64) * stride_y_l + pid_h * stride_y_h
             + offs_m[:, None] * stride_y_l + offs_p[None, :])
    tl.store(y_ptr, acc.to(Y.dtype.element_ty), mask=out_mask)


# ---------------------------------------------------------------- launcher
DTYPES = ("bf16", "fp16")                   # x, C, B and y
STATE_DTYPES = ("fp32", "bf16", "fp16")     # prev_states
TUNABLES = ("BLOCK_M", "BLOCK_P", "BLOCK_K", "num_warps", "num_stages")
BASELINE = {"BLOCK_M": 64, "BLOCK_P": 64, "BLOCK_K": 64, "num_warps": 4, "num_stages": 2}

# Mamba-2 prefill, P 64, N 128 (every point: x, states, y each 50-135 MB, past the 50 MB L2):
POINTS = [
    # Mamba-2 2.7B (80 heads, 1 group), 2 x 4096-token prefill, chunk 256, fp32 states: x 84 MB,
    # states 84 MB, y 84 MB; ~43 GFLOP as the fused kernel does it (C.B^T per head)
    {"B": 2, "L": 4096, "H": 80, "G": 1, "P": 64, "N": 128, "CHUNK": 256, "dtype": "bf16",
     "state_dtype": "fp32", "has_D": False},
    # a smaller model (24 heads), 8 x 2000-token batch: a ragged last chunk of 208 tokens, bf16
    # states, the D skip: x 49 MB, states 25 MB, y 49 MB
    {"B": 8, "L": 2000, "H": 24, "G": 1, "P": 64, "N": 128, "CHUNK": 256, "dtype": "bf16",
     "state_dtype": "bf16", "has_D": True},
    # Nemotron-H / Codestral-style: 128 heads in 8 groups, one 8192-token prompt, chunk 128, fp16,
    # the D skip: x 134 MB, fp32 states 268 MB, y 134 MB
    {"B": 1, "L": 8192, "H": 128, "G": 8, "P": 64, "N": 128, "CHUNK": 128, "dtype": "fp16",
     "state_dtype": "fp32", "has_D": True},
]

_TORCH = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}


def _torch_dtype(name: str, allowed=DTYPES, what: str = "dtype"):
    import torch
    if name not in allowed:
        raise ValueError(f"{what} {name!r} is not one of {', '.join(allowed)}")
    return getattr(torch, _TORCH[name])


def _check_cfg(cfg) -> None:
    for name in ("BLOCK_M", "BLOCK_P", "BLOCK_K"):
        v = cfg[name]
        if v < 16 or v & (v - 1):
            raise ValueError(f"{name}={v} must be a power of two >= 16 (a tl.dot operand side)")


def _block_n(N: int) -> int:
    return max(16, triton.next_power_of_2(N))


def _nchunks(point) -> int:
    return triton.cdiv(point["L"], point["CHUNK"])


def _kernel_args(x, C, Bm, dt, dA_cs, states, D, y, chunk, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    _, L, H, P = x.shape
    G, N = C.shape[2], C.shape[3]
    return dict(X=x, C=C, Bm=Bm, DT=dt, DA=dA_cs, S=states, D=D, Y=y, L=L, H=H, P=P, N=N,
                nchunks=dt.shape[2], CHUNK=chunk, heads_per_group=H // G,
                stride_x_b=x.stride(0), stride_x_l=x.stride(1), stride_x_h=x.stride(2),
                stride_c_b=C.stride(0), stride_c_l=C.stride(1), stride_c_g=C.stride(2),
                stride_b_b=Bm.stride(0), stride_b_l=Bm.stride(1), stride_b_g=Bm.stride(2),
                stride_dt_b=dt.stride(0), stride_dt_h=dt.stride(1), stride_dt_c=dt.stride(2),
                stride_s_b=states.stride(0), stride_s_c=states.stride(1), stride_s_h=states.stride(2),
                stride_s_p=states.stride(3), stride_y_b=y.stride(0), stride_y_l=y.stride(1),
                stride_y_h=y.stride(2), HAS_D=D is not None, BLOCK_N=_block_n(N),
                BLOCK_M=cfg["BLOCK_M"], BLOCK_P=cfg["BLOCK_P"], BLOCK_K=cfg["BLOCK_K"])


def _grid(chunk, P, Bsz, nchunks, H, cfg):
    return (triton.cdiv(chunk, cfg["BLOCK_M"]) * triton.cdiv(P, cfg["BLOCK_P"]), Bsz * nchunks, H)


def ssd_chunk_scan(x, C, Bm, dt, dA_cs, prev_states, D=None, *, out=None, BLOCK_M=64, BLOCK_P=64, BLOCK_K=64,
                   num_warps=4, num_stages=2):
    """y = the SSD chunk-scan output for x [B, L, H, P], C / Bm [B, L, G, N], dt / dA_cs [B, H,
    nchunks, CHUNK] fp32, prev_states [B, nchunks, H, P, N], D [H] fp32 or None. Returns y [B,
    L, H, P] in x's dtype (into `out` if given: unit stride along P)."""
    import torch
    if x.dtype not in (torch.bfloat16, torch.float16):
        raise ValueError(f"x must be bf16 / fp16; got {x.dtype}")
    if C.dtype != x.dtype or Bm.dtype != x.dtype:
        raise ValueError(f"C and B must be x's dtype {x.dtype}; got {C.dtype}, {Bm.dtype}")
    if x.dim() != 4 or C.dim() != 4 or Bm.shape != C.shape or dt.dim() != 4 or prev_states.dim() != 5:
        raise ValueError(f"expected x [B, L, H, P], C / B [B, L, G, N], dt / dA_cs [B, H, nchunks, CHUNK], "
                         f"prev_states [B, nchunks, H, P, N]; got {tuple(x.shape)}, {tuple(C.shape)}, "
                         f"{tuple(Bm.shape)}, {tuple(dt.shape)}, {tuple(prev_states.shape)}")
    Bsz, L, H, P = x.shape
    G, N = C.shape[2], C.shape[3]
    nchunks, chunk = dt.shape[2], dt.shape[3]
    if C.shape[:2] != (Bsz, L) or H % G:
        raise ValueError(f"C / B {tuple(C.shape)} do not fit x {tuple(x.shape)} (G must divide H)")
    if tuple(dt.shape) != (Bsz, H, nchunks, chunk) or dA_cs.shape != dt.shape or nchunks != -(-L // chunk):
        raise ValueError(f"dt / dA_cs must be [B={Bsz}, H={H}, cdiv(L, CHUNK), CHUNK]; got {tuple(dt.shape)}, "
                         f"{tuple(dA_cs.shape)}")
    if dt.dtype != torch.float32 or dA_cs.dtype != torch.float32 or dt.stride() != dA_cs.stride():
        raise ValueError("dt and dA_cs must be fp32 with the same strides")
    if tuple(prev_states.shape) != (Bsz, nchunks, H, P, N):
        raise ValueError(f"prev_states must be [{Bsz}, {nchunks}, {H}, {P}, {N}]; got {tuple(prev_states.shape)}")
    if prev_states.dtype not in (torch.float32, torch.bfloat16, torch.float16):
        raise ValueError(f"prev_states must be fp32 / bf16 / fp16; got {prev_states.dtype}")
    if x.stride(3) != 1 or C.stride(3) != 1 or Bm.stride(3) != 1 or dt.stride(3) != 1 or prev_states.stride(4) != 1:
        raise ValueError("x (along P), C / B (along N), dt / dA_cs (along the chunk) and prev_states (along N) "
                         "need a unit innermost stride")
    if D is not None:
        if D.dtype != torch.float32 or D.numel() != H:
            raise ValueError(f"D must be fp32 of H={H} elements; got {D.dtype} {tuple(D.shape)}")
        D = D.reshape(-1).contiguous()
    if out is None:
        out = torch.empty((Bsz, L, H, P), dtype=x.dtype, device=x.device)
    elif tuple(out.shape) != (Bsz, L, H, P) or out.dtype != x.dtype or out.stride(3) != 1:
        raise ValueError(f"out must be {x.dtype} [{Bsz}, {L}, {H}, {P}] with unit stride along P")
    cfg = {"BLOCK_M": BLOCK_M, "BLOCK_P": BLOCK_P, "BLOCK_K": BLOCK_K}
    _check_cfg(cfg)
    if out.numel() == 0:
        return out
    args = _kernel_args(x, C, Bm, dt, dA_cs, prev_states, D, out, chunk, cfg)
    _kernel[_grid(chunk, P, Bsz, nchunks, H, cfg)](**args, num_warps=num_warps, num_stages=num_stages)
    return out


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """Random inputs drawn on the CPU (reproducible per seed), moved to `device`: x ~ N(0, 1); C, B
    ~ N(0, 1) N^-1/4 (C.B ~ O(1)); dt = softplus(N(0, 1) - 2) (~0.05-1); A = -exp(U(0, 2)) per
    head; dA_cs = the within-chunk cumsum of dt * A (decreasing, <= 0); prev_states ~ N(0, 1)
    N^-1/2; D ~ U(0.5, 1.5). dt / dA_cs past L (the ragged last chunk's tail) hold the padding's
    values, which the kernel never reads."""
    import torch
    gen = torch.Generator().manual_seed(seed)
    dt_x = _torch_dtype(point.get("dtype", "bf16"))
    dt_s = _torch_dtype(point.get("state_dtype", "fp32"), STATE_DTYPES, "state_dtype")
    Bsz, L, H, G, P, N, Q = (point[k] for k in ("B", "L", "H", "G", "P", "N", "CHUNK"))
    if H % G:
        raise ValueError(f"G={G} must divide H={H}")
    nc = _nchunks(point)
    x = torch.randn((Bsz, L, H, P), generator=gen).to(dt_x)
    C = (torch.randn((Bsz, L, G, N), generator=gen) * N ** -0.25).to(dt_x)
    Bm = (torch.randn((Bsz, L, G, N), generator=gen) * N ** -0.25).to(dt_x)
    dt = torch.nn.functional.softplus(torch.randn((Bsz, H, nc * Q), generator=gen) - 2.0)
    A = -torch.exp(torch.rand((H,), generator=gen) * 2.0)
    dt = dt.view(Bsz, H, nc, Q).contiguous()
    dA_cs = torch.cumsum(dt * A.view(1, H, 1, 1), dim=-1)
    states = (torch.randn((Bsz, nc, H, P, N), generator=gen) * N ** -0.5).to(dt_s)
    D = (torch.rand((H,), generator=gen) + 0.5) if point.get("has_D", False) else None
    out = {"x": x, "C": C, "Bm": Bm, "dt": dt, "dA_cs": dA_cs, "prev_states": states, "D": D}
    return {k: (v.to(device) if v is not None else None) for k, v in out.items()}


def launch(inputs, cfg):
    return ssd_chunk_scan(inputs["x"], inputs["C"], inputs["Bm"], inputs["dt"], inputs["dA_cs"],
                          inputs["prev_states"], inputs["D"], BLOCK_M=cfg["BLOCK_M"], BLOCK_P=cfg["BLOCK_P"],
                          BLOCK_K=cfg["BLOCK_K"], num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])


def _scan(inputs, dtype):
    """The chunk scan in torch, every operand cast to `dtype` (fp64: the reference)."""
    import torch
    x, C, Bm, dt, dA = (inputs[k].to(dtype) for k in ("x", "C", "Bm", "dt", "dA_cs"))
    S = inputs["prev_states"].to(dtype)
    Bsz, L, H, P = x.shape
    G, N = C.shape[2], C.shape[3]
    nc, Q = dt.shape[2], dt.shape[3]
    pad = nc * Q - L
    heads = torch.arange(H, device=x.device) // (H // G)

    def chunks(t):
        t = torch.nn.functional.pad(t, (0, 0, 0, 0, 0, pad))
        return t.view(Bsz, nc, Q, *t.shape[2:])

    xc = chunks(x)                                   # [B, nc, Q, H, P]
    Cc = chunks(C)[:, :, :, heads]                   # [B, nc, Q, H, N]
    Bc = chunks(Bm)[:, :, :, heads]
    y = torch.einsum("bcqhn,bchpn->bcqhp", Cc, S) * torch.exp(dA).permute(0, 2, 3, 1)[..., None]
    cb = torch.einsum("bcqhn,bcshn->bchqs", Cc, Bc)
    dAp = dA.permute(0, 2, 1, 3)                     # [B, nc, H, Q]
    causal = torch.ones(Q, Q, dtype=torch.bool, device=x.device).tril()
    decay = torch.exp(torch.where(causal, dAp[..., :, None] - dAp[..., None, :], float("-inf")))
    w = cb * decay * dt.permute(0, 2, 1, 3)[..., None, :]
    y = y + torch.einsum("bchqs,bcshp->bcqhp", w, xc)
    y = y.reshape(Bsz, nc * Q, H, P)[:, :L]
    if inputs["D"] is not None:
        y = y + inputs["D"].to(dtype).view(1, 1, H, 1) * x
    return y


def reference(inputs):
    """The chunk scan in fp64 on the same inputs (fp32 out)."""
    import torch
    return _scan(inputs, torch.float64).float()


def torch_baseline(inputs):
    """The same chunk scan in eager torch fp32 (einsums over padded chunks), rounded to x's dtype."""
    import torch
    return _scan(inputs, torch.float32).to(inputs["x"].dtype)


def bytes_moved(point) -> int:
    """x, C, B, dt, dA_cs, prev_states and D read once, y written once (C / B once per group, not
    per head: the heads of a group re-read them from L2)."""
    Bsz, L, H, G, P, N, Q = (point[k] for k in ("B", "L", "H", "G", "P", "N", "CHUNK"))
    ex = 2
    _torch_dtype(point.get("dtype", "bf16"))
    es = {"fp32": 4, "bf16": 2, "fp16": 2}[point.get("state_dtype", "fp32")]
    nc = _nchunks(point)
    d = 4 * H if point.get("has_D", False) else 0
    return (2 * Bsz * L * H * P * ex + 2 * Bsz * L * G * N * ex + 2 * Bsz * H * nc * Q * 4
            + Bsz * nc * H * P * N * es + d)


def flops(point) -> int:
    """The fused kernel's multiply-adds on the causal triangle: per (b, chunk, head) of length l,
    C @ state^T (2 l N P), C.B^T (N l (l + 1)) and W @ x (P l (l + 1)); C.B^T counted per head,
    as the kernel computes it."""
    Bsz, L, H, P, N, Q = (point[k] for k in ("B", "L", "H", "P", "N", "CHUNK"))
    total = 0
    for c in range(_nchunks(point)):
        ln = min(Q, L - c * Q)
        total += 2 * ln * N * P + (N + P) * ln * (ln + 1)
    return Bsz * H * total


def grid(cfg, point):
    """(row blocks x P blocks, B x nchunks, H)."""
    return _grid(point["CHUNK"], point["P"], point["B"], _nchunks(point), point["H"], cfg)


def _iters_of_chunk(cfg, point, chunk_len) -> list[int]:
    """Causal-loop steps of each row block of a chunk of chunk_len tokens (0: it returns at once)."""
    bm, bk = cfg["BLOCK_M"], cfg["BLOCK_K"]
    out = []
    for m in range(triton.cdiv(point["CHUNK"], bm)):
        out.append(0 if m * bm >= chunk_len else triton.cdiv(min((m + 1) * bm, chunk_len), bk))
    return out


def cta_iterations(cfg, point) -> list[int]:
    """Each CTA's causal-loop steps in launch order (axis 0 fastest): row block m walks
    cdiv(min((m + 1) BLOCK_M, chunk_len), BLOCK_K) steps; row blocks past a ragged last chunk 0."""
    Q, L = point["CHUNK"], point["L"]
    nc = _nchunks(point)
    n_p = triton.cdiv(point["P"], cfg["BLOCK_P"])
    full = [it for it in _iters_of_chunk(cfg, point, Q) for _ in range(n_p)]
    last = [it for it in _iters_of_chunk(cfg, point, L - (nc - 1) * Q) for _ in range(n_p)]
    per_b = full * (nc - 1) + last
    return per_b * (point["B"] * point["H"])


def loop_iterations(cfg, point) -> int:
    """The typical CTA's causal-loop steps: the mean over the CTAs of a full chunk, rounded up."""
    its = _iters_of_chunk(cfg, point, point["CHUNK"])
    return -(-sum(its) // len(its))


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory)."""
    import torch
    dt_x = _torch_dtype(point.get("dtype", "bf16"))
    dt_s = _torch_dtype(point.get("state_dtype", "fp32"), STATE_DTYPES, "state_dtype")
    Bsz, L, H, G, P, N, Q = (point[k] for k in ("B", "L", "H", "G", "P", "N", "CHUNK"))
    nc = _nchunks(point)
    meta = "meta"
    x = torch.empty((Bsz, L, H, P), dtype=dt_x, device=meta)
    C = torch.empty((Bsz, L, G, N), dtype=dt_x, device=meta)
    Bm = torch.empty((Bsz, L, G, N), dtype=dt_x, device=meta)
    dt = torch.empty((Bsz, H, nc, Q), dtype=torch.float32, device=meta)
    dA = torch.empty((Bsz, H, nc, Q), dtype=torch.float32, device=meta)
    S = torch.empty((Bsz, nc, H, P, N), dtype=dt_s, device=meta)
    D = torch.empty((H,), dtype=torch.float32, device=meta) if point.get("has_D", False) else None
    y = torch.empty((Bsz, L, H, P), dtype=dt_x, device=meta)
    return _kernel_args(x, C, Bm, dt, dA, S, D, y, Q, cfg)
