"""Mamba-2's SSD "chunk state" kernel (the second of the chunked scan's five kernels: each
chunk's final state as if it started from zero), a bare @triton.jit kernel + its launcher.

    states[b, c, h, p, n] = sum_{t in chunk c, seq(t) = seq(last)}
                                x[b, t, h, p] * B[b, t, g(h), n] * exp(dA_cs[last] - dA_cs[t]) * dt[b, h, t]

x: [B, L, H, P] bf16 / fp16 (P = head dim; unit stride along P, any other strides: a view of
the in_proj / conv output xBC, as vLLM and mamba_ssm split it, works as it is); B: [B, L, G, N]
(G groups of H / G heads each sharing one B, N = state size; unit stride along N, same dtype
as x); dt: [B, H, L] fp32 (the softplus'ed, biased step; unit stride along L); dA_cumsum:
[B, H, nchunks, CHUNK] fp32, the within-chunk inclusive cumsum of dt * A (unit stride along
the chunk); seq_idx (optional): [B, L] int32, the sequence each token belongs to when several
sequences are packed into one row (vLLM's varlen prefill): a token of another sequence than
the chunk's last token adds nothing. states: [B, nchunks, H, P, N] fp32. "last" is the
chunk's last token: CHUNK - 1, or (L - 1) % CHUNK in a ragged last chunk (L not a multiple of
CHUNK; the kernel reads neither dA_cumsum nor anything else past L).

Per CTA the state tile is a dot on the tensor cores: x^T [BLOCK_M (p), chunk] @ (decay-scaled
B) [chunk, BLOCK_N (n)], accumulated in fp32 over the chunk BLOCK_K tokens at a time. Per step
the decay weights exp(dA_cs[last] - dA_cs[t]) * dt[t] (BLOCK_K of them, fp32, zeroed for
other sequences and for tokens past the chunk) multiply one operand, rounded back to the
input dtype before the dot (as mamba_ssm does): SCALE_X=0 scales the B tile [BLOCK_K,
BLOCK_N] (mamba_ssm's choice; the scaled tile is the dot's B operand, which wgmma reads from
shared memory: a store back to shared memory per step), SCALE_X=1 the x^T tile [BLOCK_M,
BLOCK_K] (the A operand, which wgmma can take from registers). Masks: tokens past the chunk's
end (only the ragged last chunk has any), p >= P and n >= N.

Grid: (cdiv(P, BLOCK_M) * cdiv(N, BLOCK_N), B * nchunks, H), as mamba_ssm launches it: the
(p, n) tiles of one (batch-chunk, head) fastest (they share the x / B strips in L2), then the
chunks of one head, then the heads (the heads of a group read the same B chunk again: from
L2 when B is small, as at G = 1). Every CTA walks its chunk: cdiv(chunk_len, BLOCK_K) steps,
fewer in a ragged last chunk.

Tunables: BLOCK_M (the head-dim tile), BLOCK_N (the state tile), BLOCK_K (tokens per step;
all powers of two >= 16), SCALE_X (0 / 1: which operand carries the decay), num_warps,
num_stages (the loads' software-pipeline depth).
Problem parameters (a workload point): B, L, H, G, P, N, CHUNK, dtype ("bf16" / "fp16"),
n_seqs (0: no seq_idx; k > 0: k packed sequences per row, with a seq_idx tensor), layout
("contiguous": x and B own tensors; "xbc": views of one [B, L, H*P + 2*G*N] conv output).
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _kernel(X, BMAT, DT, DA, SEQ, S, L, P, N, heads_per_group,
            stride_xb, stride_xl, stride_xh, stride_bb, stride_bl, stride_bg,
            stride_dtb, stride_dth, stride_dab, stride_dah, stride_dac, stride_seqb,
            stride_sb, stride_sc, stride_sh, stride_sp,
            CHUNK: tl.constexpr, HAS_SEQ_IDX: tl.constexpr, SCALE_X: tl.constexpr,
            BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_mn = tl.program_id(0)
    pid_bc = tl.program_id(1)
    pid_h = tl.program_id(2)
    nchunks = tl.cdiv(L, CHUNK)
    pid_b = pid_bc // nchunks
    pid_c = pid_bc - pid_b * nchunks
    tiles_n = tl.cdiv(N, BLOCK_N)
    pid_m = pid_mn // tiles_n
    pid_n = pid_mn - pid_m * tiles_n
    pid_g = pid_h // heads_per_group

    t0 = pid_c * CHUNK
    chunk_len = tl.minimum(L - t0, CHUNK)
    t0 = t0.to(tl.int64)
    X += pid_b.to(tl.int64) * stride_xb + t0 * stride_xl + pid_h * stride_xh
    BMAT += pid_b.to(tl.int64) * stride_bb + t0 * stride_bl + pid_g * stride_bg
    DT += pid_b.to(tl.int64) * stride_dtb + pid_h.to(tl.int64) * stride_dth + t0
    DA += pid_b.to(tl.int64) * stride_dab + pid_h.to(tl.int64) * stride_dah + pid_c.to(tl.int64) * stride_dac

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    m_ok = offs_m < P
    n_ok = offs_n < N
    x_ptrs = X + offs_m[:, None] + offs_k[None, :] * stride_xl         # x^T tile [BLOCK_M, BLOCK_K]
    b_ptrs = BMAT + offs_k[:, None] * stride_bl + offs_n[None, :]      # B tile [BLOCK_K, BLOCK_N]
    dt_ptrs = DT + offs_k
    da_ptrs = DA + offs_k

    da_last = tl.load(DA + chunk_len - 1)
    if HAS_SEQ_IDX:
        SEQ += pid_b.to(tl.int64) * stride_seqb + t0
        seq_last = tl.load(SEQ + chunk_len - 1)
        seq_ptrs = SEQ + offs_k

    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k0 in range(0, chunk_len, BLOCK_K):
        k_ok = offs_k < chunk_len - k0
        x = tl.load(x_ptrs, mask=m_ok[:, None] & k_ok[None, :], other=0.0)
        b = tl.load(b_ptrs, mask=k_ok[:, None] & n_ok[None, :], other=0.0)
        # past the chunk: dA = dA_last, dt = 0 -> weight exp(0) * 0 = 0 (never inf * 0)
        da = tl.load(da_ptrs, mask=k_ok, other=da_last)
        dt = tl.load(dt_ptrs, mask=k_ok, other=0.0)
        w = tl.exp(da_last - da) * dt
        if HAS_SEQ_IDX:
            seq = tl.load(seq_ptrs, mask=k_ok, other=-1)
            w = tl.where(seq == seq_last, w, 0.0)
        if SCALE_X:
            x = (x * w[None, :]).to(X.dtype.element_ty)
        else:
            b = (b * w[:, None]).to(BMAT.dtype.element_ty)
        acc = tl.dot(x, b, acc)
        x_ptrs += BLOCK_K * stride_xl
        b_ptrs += BLOCK_K * stride_bl
        dt_ptrs += BLOCK_K
        da_ptrs += BLOCK_K
        if HAS_SEQ_IDX:
            seq_ptrs += BLOCK_K

    S += pid_b.to(tl.int64) * stride_sb + pid_c.to(tl.int64) * stride_sc + pid_h.to(tl.int64) * stride_sh
    s_ptrs = S + offs_m[:, None] * stride_sp + offs_n[None, :]
    tl.store(s_ptrs, acc, mask=m_ok[:, None] & n_ok[None, :])


# ---------------------------------------------------------------- launcher
DTYPES = ("bf16", "fp16")       # x's and B's; dt, dA_cumsum and the states are fp32
LAYOUTS = ("contiguous", "xbc")
TUNABLES = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "SCALE_X", "num_warps", "num_stages")
BASELINE = {"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 64, "SCALE_X": 0, "num_warps": 4, "num_stages": 3}

# Mamba-2 prefills at CHUNK = 256 (P = 64, N = 128 in every released Mamba-2). Each point streams
# x in and the fp32 states out (as many bytes as x: 4 P N per chunk-head vs 2 CHUNK P) plus the
# much smaller B, dt and dA_cumsum: ~60 flop/byte, below the H200's ~200 (bf16 dense), so
# memory-bound at ~0.4-0.7 GB, ~90-150 us at ~4.8 TB/s, while the tensor cores need ~25-45 us.
# Their grids are 6-10 k (chunk, head) pairs x the (p, n) tiles.
POINTS = [
    # Mamba2-2.7B (d_model 2560: 80 heads, one group), one 32k-token sequence: x 336 MB, states 336 MB
    {"B": 1, "L": 32768, "H": 80, "G": 1, "P": 64, "N": 128, "CHUNK": 256, "dtype": "bf16", "n_seqs": 0,
     "layout": "contiguous"},
    # Mamba-Codestral-7B (128 heads, 8 groups), vLLM's packed varlen prefill: 16k tokens of 11
    # sequences in one row with seq_idx, x and B views of the conv output xBC: x 268 MB, B 34 MB, states 268 MB
    {"B": 1, "L": 16384, "H": 128, "G": 8, "P": 64, "N": 128, "CHUNK": 256, "dtype": "bf16", "n_seqs": 11,
     "layout": "xbc"},
    # Mamba2-780m (d_model 1536: 48 heads, one group), a batch of 32 prompts of 1000 tokens in fp16:
    # 4 chunks each, the last one ragged (232 tokens): x 197 MB, states 201 MB
    {"B": 32, "L": 1000, "H": 48, "G": 1, "P": 64, "N": 128, "CHUNK": 256, "dtype": "fp16", "n_seqs": 0,
     "layout": "contiguous"},
]


def _torch_dtype(name: str):
    import torch
    try:
        return {"bf16": torch.bfloat16, "fp16": torch.float16}[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)} (x's and B's)") from None


def _layout(point) -> str:
    lay = point.get("layout", "contiguous")
    if lay not in LAYOUTS:
        raise ValueError(f"layout {lay!r} is not 'contiguous' or 'xbc' (x and B views of one conv output)")
    return lay


def _check_point(point) -> None:
    for k in ("B", "L", "H", "G", "P", "N", "CHUNK"):
        if int(point[k]) < 1:
            raise ValueError(f"{k}={point[k]} must be >= 1")
    if point["H"] % point["G"]:
        raise ValueError(f"H={point['H']} is not a multiple of G={point['G']} (heads per group)")
    if point.get("n_seqs", 0) < 0 or point.get("n_seqs", 0) > point["L"]:
        raise ValueError(f"n_seqs={point.get('n_seqs')} must be 0 (no seq_idx) or 1..L={point['L']}")
    _torch_dtype(point.get("dtype", "bf16"))
    _layout(point)


def _check_cfg(cfg) -> None:
    for name in ("BLOCK_M", "BLOCK_N", "BLOCK_K"):
        v = cfg[name]
        if v < 16 or v & (v - 1):
            raise ValueError(f"{name}={v} must be a power of two >= 16 (a tl.dot operand side)")
    if cfg.get("SCALE_X", 0) not in (0, 1, False, True):
        raise ValueError(f"SCALE_X={cfg['SCALE_X']} must be 0 (scale the B tile) or 1 (scale the x tile)")


def _nchunks(L: int, chunk: int) -> int:
    return -(-L // chunk)


def _kernel_args(x, bmat, dt, dA_cumsum, seq_idx, states, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    Bsz, L, H, P = x.shape
    G, N = bmat.shape[2], bmat.shape[3]
    seq = seq_idx if seq_idx is not None else dt       # any pointer: never read without HAS_SEQ_IDX
    return dict(X=x, BMAT=bmat, DT=dt, DA=dA_cumsum, SEQ=seq, S=states, L=L, P=P, N=N, heads_per_group=H // G,
                stride_xb=x.stride(0), stride_xl=x.stride(1), stride_xh=x.stride(2),
                stride_bb=bmat.stride(0), stride_bl=bmat.stride(1), stride_bg=bmat.stride(2),
                stride_dtb=dt.stride(0), stride_dth=dt.stride(1),
                stride_dab=dA_cumsum.stride(0), stride_dah=dA_cumsum.stride(1), stride_dac=dA_cumsum.stride(2),
                stride_seqb=seq_idx.stride(0) if seq_idx is not None else 0,
                stride_sb=states.stride(0), stride_sc=states.stride(1), stride_sh=states.stride(2),
                stride_sp=states.stride(3),
                CHUNK=dA_cumsum.shape[3], HAS_SEQ_IDX=seq_idx is not None, SCALE_X=int(cfg.get("SCALE_X", 0)),
                BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"], BLOCK_K=cfg["BLOCK_K"])


def ssd_chunk_state(x, B, dt, dA_cumsum, seq_idx=None, *, states=None, BLOCK_M=64, BLOCK_N=128, BLOCK_K=64,
                    SCALE_X=0, num_warps=4, num_stages=3):
    """Each chunk's state from zero: x [B, L, H, P], B [B, L, G, N] (bf16 / fp16, unit last
    stride), dt [B, H, L] fp32, dA_cumsum [B, H, nchunks, CHUNK] fp32 (unit last strides),
    seq_idx [B, L] int32 or None. Returns states [B, nchunks, H, P, N] fp32 (into `states` if
    given: that shape, fp32, unit last stride)."""
    import torch
    if x.dim() != 4 or B.dim() != 4 or dt.dim() != 3 or dA_cumsum.dim() != 4:
        raise ValueError(f"expected x [B, L, H, P], B [B, L, G, N], dt [B, H, L], dA_cumsum [B, H, nchunks, CHUNK]; "
                         f"got {tuple(x.shape)}, {tuple(B.shape)}, {tuple(dt.shape)}, {tuple(dA_cumsum.shape)}")
    Bsz, L, H, P = x.shape
    G, N = B.shape[2], B.shape[3]
    chunk = dA_cumsum.shape[3]
    nchunks = _nchunks(L, chunk) if L > 0 else 0
    if L == 0 or min(H, P, G, N, chunk) == 0 or Bsz == 0:
        raise ValueError(f"empty problem: x {tuple(x.shape)}, B {tuple(B.shape)}")
    if tuple(B.shape[:2]) != (Bsz, L) or H % G:
        raise ValueError(f"B {tuple(B.shape)} must be [{Bsz}, {L}, G, N] with G dividing H={H}")
    if tuple(dt.shape) != (Bsz, H, L) or tuple(dA_cumsum.shape) != (Bsz, H, nchunks, chunk):
        raise ValueError(f"dt must be [{Bsz}, {H}, {L}] and dA_cumsum [{Bsz}, {H}, {nchunks}, {chunk}]; "
                         f"got {tuple(dt.shape)}, {tuple(dA_cumsum.shape)}")
    if x.dtype not in (torch.bfloat16, torch.float16) or B.dtype != x.dtype:
        raise ValueError(f"x and B must both be bf16 / fp16; got {x.dtype}, {B.dtype}")
    if dt.dtype != torch.float32 or dA_cumsum.dtype != torch.float32:
        raise ValueError(f"dt and dA_cumsum must be fp32; got {dt.dtype}, {dA_cumsum.dtype}")
    for name, t in (("x", x), ("B", B), ("dt", dt), ("dA_cumsum", dA_cumsum)):
        if t.stride(-1) != 1:
            raise ValueError(f"{name} needs a unit stride along its last dim; got strides {t.stride()}")
    if seq_idx is not None:
        if seq_idx.dtype != torch.int32 or tuple(seq_idx.shape) != (Bsz, L) or seq_idx.stride(1) != 1:
            raise ValueError(f"seq_idx must be int32 [{Bsz}, {L}] with unit stride along L; got "
                             f"{seq_idx.dtype} {tuple(seq_idx.shape)}")
    shape = (Bsz, nchunks, H, P, N)
    if states is None:
        states = torch.empty(shape, dtype=torch.float32, device=x.device)
    elif tuple(states.shape) != shape or states.dtype != torch.float32 or states.stride(-1) != 1:
        raise ValueError(f"states must be fp32 {list(shape)} with unit last stride; got {states.dtype} "
                         f"{tuple(states.shape)} strides {states.stride()}")
    cfg = {"BLOCK_M": BLOCK_M, "BLOCK_N": BLOCK_N, "BLOCK_K": BLOCK_K, "SCALE_X": SCALE_X}
    _check_cfg(cfg)
    grid = (triton.cdiv(P, BLOCK_M) * triton.cdiv(N, BLOCK_N), Bsz * nchunks, H)
    _kernel[grid](**_kernel_args(x, B, dt, dA_cumsum, seq_idx, states, cfg), num_warps=num_warps,
                  num_stages=num_stages)
    return states


def seq_lengths(point, seed: int = 0):
    """The packed sequences' lengths (n_seqs of them summing to L, each >= 1), drawn on the CPU
    from `seed`; [] without seq_idx."""
    import torch
    n, L = point.get("n_seqs", 0), point["L"]
    if n == 0:
        return []
    gen = torch.Generator().manual_seed(1000 + seed)
    w = torch.rand((n,), generator=gen, dtype=torch.float64) + 0.25
    cuts = (torch.cumsum(w, 0) / w.sum() * L).round().long().tolist()
    ends = [min(max(c, i + 1), L - (n - 1 - i)) for i, c in enumerate(cuts)]
    for i in range(1, n):                          # strictly increasing ends, the last = L
        ends[i] = max(ends[i], ends[i - 1] + 1)
    ends[-1] = L
    return [e - s for s, e in zip([0] + ends[:-1], ends)]


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """x and B ~ N(0, 1); dt = exp(U(ln 1e-3, ln 1e-1)) (Mamba-2's dt range after softplus);
    A = -exp(U(0, ln 16)) per head (its A_log init); dA_cumsum the within-chunk cumsum of dt * A,
    flat past L in a ragged last chunk (what chunk_cumsum writes there); seq_idx from
    seq_lengths(point, seed). The sequence cuts are drawn on the CPU; the bulk on `device`."""
    import math

    import torch
    _check_point(point)
    dtype = _torch_dtype(point.get("dtype", "bf16"))
    Bsz, L, H, G, P, N, chunk = (point[k] for k in ("B", "L", "H", "G", "P", "N", "CHUNK"))
    nchunks = _nchunks(L, chunk)
    gen = torch.Generator(device=device).manual_seed(seed)
    if _layout(point) == "xbc":
        xbc = torch.randn((Bsz, L, H * P + 2 * G * N), generator=gen, device=device).to(dtype)
        x = xbc[..., :H * P].view(Bsz, L, H, P)
        bmat = xbc[..., H * P:H * P + G * N].view(Bsz, L, G, N)
    else:
        x = torch.randn((Bsz, L, H, P), generator=gen, device=device).to(dtype)
        bmat = torch.randn((Bsz, L, G, N), generator=gen, device=device).to(dtype)
    lo, hi = math.log(1e-3), math.log(1e-1)
    dt = torch.exp(torch.rand((Bsz, H, L), generator=gen, device=device) * (hi - lo) + lo)
    A = -torch.exp(torch.rand((H,), generator=gen, device=device) * math.log(16.0))
    dA = torch.zeros((Bsz, H, nchunks * chunk), device=device)
    dA[:, :, :L] = dt * A[None, :, None]
    dA_cumsum = torch.cumsum(dA.view(Bsz, H, nchunks, chunk), dim=-1)
    seq_idx = None
    if point.get("n_seqs", 0):
        lens = seq_lengths(point, seed)
        ids = torch.repeat_interleave(torch.arange(len(lens), dtype=torch.int32), torch.tensor(lens))
        seq_idx = ids[None, :].repeat(Bsz, 1).to(device)
    return {"x": x, "B": bmat, "dt": dt, "dA_cumsum": dA_cumsum, "seq_idx": seq_idx}


def launch(inputs, cfg):
    return ssd_chunk_state(inputs["x"], inputs["B"], inputs["dt"], inputs["dA_cumsum"], inputs["seq_idx"],
                           BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"], BLOCK_K=cfg["BLOCK_K"],
                           SCALE_X=cfg.get("SCALE_X", 0), num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])


def _decay_weights(inputs, dtype):
    """[B, nchunks, CHUNK, H] weights exp(dA_cs[last] - dA_cs[t]) * dt[t] (0 past L and for
    tokens of another sequence than the chunk's last), computed in fp32 (fp64 when `dtype` is),
    then cast to `dtype`."""
    import torch
    x, dt, dA = inputs["x"], inputs["dt"], inputs["dA_cumsum"]
    Bsz, L, H, _ = x.shape
    _, _, nchunks, chunk = dA.shape
    work = torch.float64 if dtype == torch.float64 else torch.float32
    dA, dt = dA.to(work), dt.to(work)
    last = torch.full((nchunks,), chunk - 1, dtype=torch.long, device=dA.device)
    last[-1] = (L - 1) % chunk
    da_last = torch.gather(dA, 3, last.view(1, 1, nchunks, 1).expand(Bsz, H, nchunks, 1))
    pad = nchunks * chunk - L
    dtp = torch.nn.functional.pad(dt, (0, pad)).view(Bsz, H, nchunks, chunk)
    valid = (torch.arange(nchunks * chunk, device=dA.device) < L).view(nchunks, chunk)
    w = torch.where(valid, torch.exp(da_last - dA) * dtp, 0.0)     # past L: 0 (whatever dA_cumsum holds there)
    if inputs["seq_idx"] is not None:
        seq = torch.nn.functional.pad(inputs["seq_idx"].long(), (0, pad), value=-1).view(Bsz, nchunks, chunk)
        seq_last = torch.gather(seq, 2, last.view(1, nchunks, 1).expand(Bsz, nchunks, 1))
        w = w * (seq == seq_last).to(work)[:, None]
    return w.permute(0, 2, 3, 1).to(dtype)


def _chunked(t, chunk: int):
    """[B, L, ...] -> [B, nchunks, CHUNK, ...], zero-padded past L."""
    import torch
    Bsz, L = t.shape[:2]
    nchunks = _nchunks(L, chunk)
    pad = torch.zeros((Bsz, nchunks * chunk - L) + tuple(t.shape[2:]), dtype=t.dtype, device=t.device)
    return torch.cat([t, pad], dim=1).view((Bsz, nchunks, chunk) + tuple(t.shape[2:]))


def reference(inputs):
    """fp64: the weights from the fp32 dt / dA_cumsum, times the bf16 / fp16 x and B, summed
    per chunk, group by group; fp32 out."""
    import torch
    x, bmat = inputs["x"], inputs["B"]
    Bsz, L, H, P = x.shape
    G, N = bmat.shape[2], bmat.shape[3]
    chunk = inputs["dA_cumsum"].shape[3]
    w = _decay_weights(inputs, torch.float64)                        # [B, c, l, H]
    xs = _chunked(x, chunk).double() * w[..., None]                  # [B, c, l, H, P]
    bc = _chunked(bmat, chunk).double()                              # [B, c, l, G, N]
    hpg = H // G
    out = torch.empty((Bsz, xs.shape[1], H, P, N), dtype=torch.float32, device=x.device)
    for g in range(G):
        hs = slice(g * hpg, (g + 1) * hpg)
        out[:, :, hs] = torch.einsum("bclhp,bcln->bchpn", xs[:, :, :, hs], bc[:, :, :, g]).float()
    return out


def torch_baseline(inputs):
    """mamba_ssm's chunk_state_ref as a torch user runs it: B repeated to every head, the decay
    and dt cast to x's dtype, one 4-operand einsum in x's dtype (padded to whole chunks, the
    seq_idx mask folded into the decay); fp32 out."""
    import torch
    x, bmat = inputs["x"], inputs["B"]
    H, G = x.shape[2], bmat.shape[2]
    chunk = inputs["dA_cumsum"].shape[3]
    w = _decay_weights(inputs, x.dtype)                              # decay * dt, x's dtype
    brep = _chunked(bmat, chunk).repeat_interleave(H // G, dim=3)    # [B, c, l, H, N]
    return torch.einsum("bclhn,bclh,bclhp->bchpn", brep, w, _chunked(x, chunk)).float()


def bytes_moved(point) -> int:
    """x and B (2 bytes), dt and dA_cumsum (4 bytes, the L tokens of them the kernel reads),
    seq_idx (4 bytes a token) read once, the fp32 states written once."""
    _check_point(point)
    Bsz, L, H, G, P, N, chunk = (point[k] for k in ("B", "L", "H", "G", "P", "N", "CHUNK"))
    seq = 4 * Bsz * L if point.get("n_seqs", 0) else 0
    return 2 * Bsz * L * (H * P + G * N) + 2 * 4 * Bsz * H * L + seq + 4 * Bsz * _nchunks(L, chunk) * H * P * N


def flops(point) -> int:
    """The dot's multiply-adds (2 B L H P N); the decay weights' few ops per token not counted."""
    return 2 * point["B"] * point["L"] * point["H"] * point["P"] * point["N"]


def grid(cfg, point) -> tuple:
    """(p, n) tiles fastest, then batch x chunk, then heads: the launch grid itself."""
    return (triton.cdiv(point["P"], cfg["BLOCK_M"]) * triton.cdiv(point["N"], cfg["BLOCK_N"]),
            point["B"] * _nchunks(point["L"], point["CHUNK"]), point["H"])


def loop_iterations(cfg, point) -> int:
    """Token steps of a full chunk (every chunk but a ragged last one)."""
    return triton.cdiv(min(point["CHUNK"], point["L"]), cfg["BLOCK_K"])


def cta_iterations(cfg, point) -> list:
    """Each CTA's token steps in launch order (x fastest): a ragged last chunk takes fewer."""
    gx, gy, gz = grid(cfg, point)
    L, chunk = point["L"], point["CHUNK"]
    nchunks = _nchunks(L, chunk)
    per_chunk = [triton.cdiv(min(chunk, L - c * chunk), cfg["BLOCK_K"]) for c in range(nchunks)]
    row = [it for _ in range(point["B"]) for it in per_chunk for _ in range(gx)]
    return row * gz


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory)."""
    import torch
    _check_point(point)
    dtype = _torch_dtype(point.get("dtype", "bf16"))
    Bsz, L, H, G, P, N, chunk = (point[k] for k in ("B", "L", "H", "G", "P", "N", "CHUNK"))
    nchunks = _nchunks(L, chunk)
    if _layout(point) == "xbc":
        xbc = torch.empty((Bsz, L, H * P + 2 * G * N), dtype=dtype, device="meta")
        x = xbc[..., :H * P].view(Bsz, L, H, P)
        bmat = xbc[..., H * P:H * P + G * N].view(Bsz, L, G, N)
    else:
        x = torch.empty((Bsz, L, H, P), dtype=dtype, device="meta")
        bmat = torch.empty((Bsz, L, G, N), dtype=dtype, device="meta")
    dt = torch.empty((Bsz, H, L), dtype=torch.float32, device="meta")
    dA = torch.empty((Bsz, H, nchunks, chunk), dtype=torch.float32, device="meta")
    seq = torch.empty((Bsz, L), dtype=torch.int32, device="meta") if point.get("n_seqs", 0) else None
    states = torch.empty((Bsz, nchunks, H, P, N), dtype=torch.float32, device="meta")
    return _kernel_args(x, bmat, dt, dA, seq, states, cfg)
