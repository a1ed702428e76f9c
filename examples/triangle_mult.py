"""The core of the triangle multiplicative update of AlphaFold2 / OpenFold / AlphaFold3 / Protenix /
Boltz (Algorithms 11 and 12 of AlphaFold2's supplement): the N^3 contraction of the projected and
gated pair activations, channel-last, a bare @triton.jit kernel + its launcher.

    outgoing:  out[b, i, j, c] = sum_k keep[b, k] a[b, i, k, c] b[b, j, k, c]
    incoming:  out[b, i, j, c] = sum_k keep[b, k] a[b, k, i, c] b[b, k, j, c]

a, b: [B, N, N, C] fp16 / bf16 (one dtype), channel-last as the models keep the pair representation:
unit channel stride, any batch and row strides each -- a fused projection's two halves (Uni-Fold's /
OpenFold's fused `linear_ab_p`, Boltz's `p_in`: a = ab[..., :C], b = ab[..., C:] of one [B, N, N, 2C]
tensor) are read in place. keep: an optional residue mask [B, N] over k (bool, or any dtype with
nonzero = keep): the padding of a batch of sequences padded to its longest, which then adds nothing
even where a and b are not zero there. out: a fresh contiguous [B, N, N, C] tensor in a's dtype, fp32
accumulation, one rounding at the store. C = 128 in the models above (c_hidden_mul); any C works.

It is a batched matmul with the channel as its batch -- out[b, :, :, c] = A_bc B_bc^T -- whose operands
have the channel innermost in memory: the elements of one channel's matrices are 2 bytes each, 2 C
bytes apart. Eager torch (the models' einsum) copies a and b to channel-first layouts, runs a bmm
and permutes the result back; this kernel reads and writes the channel-last tensors in place,
BLOCK_C channels a program, so every global access is a BLOCK_C x 2-byte vector.

Work split: program (t, g, bat) of the grid (cdiv(N, BLOCK_I) cdiv(N, BLOCK_J), cdiv(C, BLOCK_C), B)
computes the [BLOCK_C, BLOCK_I, BLOCK_J] output block of output tile t = (ti, tj) (row-major over
the tile grid: tj = t mod cdiv(N, BLOCK_J)), channels g BLOCK_C .. of sequence bat. The tile is
fastest in launch order, so the programs that run together work on one channel group: the 32-byte
sectors that hold its slices of a and b (2 x 19 MB at N 768) stay in L2 while all of its tiles read
them, and the next groups' channels share those sectors.

The k loop (cdiv(N, BLOCK_K) steps) loads a [BLOCK_C, BLOCK_I, BLOCK_K] block of a (rows i, columns
k: a's dims 1, 2 outgoing, 2, 1 incoming -- INCOMING swaps the strides, nothing else) and a
[BLOCK_C, BLOCK_K, BLOCK_J] block of b, one BLOCK_C-channel vector a (row, k) pair, and accumulates
one batched tl.dot (3-d, the channel its batch dim) into the fp32 [BLOCK_C, BLOCK_I, BLOCK_J]
accumulator. Triton lowers a batched dot to mma.sync (m16n8k16; no wgmma for a 3-d dot on sm_90) with
the warps along the batch dim, so BLOCK_C = num_warps (the launcher's default: one channel a warp,
each warp a channel's whole BLOCK_I x BLOCK_J tile; `triangle_mult` takes another BLOCK_C). The
channel-innermost operands must be transposed on their way to the tensor cores, and that is the
kernel's price: Triton loads the blocks to registers (LDG of BLOCK_C x 2 bytes), stores them to shared
memory one 16-bit element at a time in the i- / k-major layouts ldmatrix reads (STS.U16, a warp's 32
lanes on 64 contiguous bytes; PRMT to take each element out of its vector) and reads them back with
ldmatrix (.trans for a; b with 64-bit LDS at the ragged point): one shared store an operand element
and program, against BLOCK_I BLOCK_J / (BLOCK_I + BLOCK_J) multiply-adds an element (11-21 at the
sweep's tiles). cp.async cannot transpose, so num_stages 2 double-buffers in registers: the next
step's blocks are loaded before this step's dot; num_stages 1 loads them at the top of each step.
(Two channels a warp -- BLOCK_C 8 on 4 warps -- spilled at 64 x 32 tiles; BLOCK_C 16 on 8 warps
made Triton keep the channel innermost in shared memory, cp.async-pipelined, and read every operand
element with a 16-bit LDS, 8-way bank-conflicted; hence one channel a warp.)

Masks: rows i, j past N (EVEN_IJ = 0: BLOCK_I or BLOCK_J does not divide N) are clamped to row N - 1
for the loads (in bounds, unmasked: they only feed output rows that are not stored) and masked on
the store; k past N (EVEN_K = 0: BLOCK_K does not divide N, the last step short) is masked to zero
on the loads of a and b (it enters the dot); channels past C (EVEN_C = 0) are masked to zero on the
loads and on the store; with the residue mask (HAS_MASK), a's loads are also masked to zero at the
k the mask drops (a [BLOCK_K] byte vector a step: a predicate, no multiply). Every mask is uniform
along the channel vector. INCOMING, HAS_MASK, EVEN_K, EVEN_IJ and EVEN_C are constexprs the launcher
sets. Offsets: the sequence's and the tile's first row's offsets int64 (B N^2 C passes 2^31 elements
at N 4096), the offsets inside a block (rows, k, channels) int32 (checked: (max(BLOCK_I, BLOCK_J) +
BLOCK_K) x the largest row stride < 2^31).

Tunables: BLOCK_I (32 / 64), BLOCK_J (16 / 32): each channel's output tile, its mma.sync work against
the one transposing store an operand element; BLOCK_K (16 / 32: the k step, the blocks held in
registers); num_warps (2 / 4 / 8 = BLOCK_C, the channels a program: 4- / 8- / 16-byte vectors, an
eighth to a half of each 32-byte sector a load touches, and programs of 64 to 256 threads);
num_stages (1 / 2: the register double buffer). On sm_90 every config of the sweep compiles at every
point: 48-248 registers under triton 3.6.0, none spilled (48-255 under 3.9, the 64 x 32 x 32 tile
double-buffered on 2 warps spilling 8 at the ragged ESMFold point: 4-byte vectors need twice the
address registers of 8-byte ones); the most for that tile at num_stages 2 (220-255 on 2-8 warps);
shared memory 2-48 KiB, the operand blocks (BLOCK_C (BLOCK_I + BLOCK_J) BLOCK_K x 2 bytes) or the
epilogue's staging of the output block (BLOCK_C BLOCK_I BLOCK_J x 2 bytes), whichever is larger.
On sm_120 (triton 3.6, the Protenix and ESMFold points) the same 2-48 KiB, 48-254 registers, and
ptxas spills 2 at one config (32 x 32 x 32, 2 warps, one stage, ESMFold). 64 x 64 tiles (k steps of
32) and 16-row tiles (num_stages 2: ptxas spilled 4-12 loop-invariant registers) are left out.
Problem parameters (a workload point): B, N, C, dtype, incoming (0 / 1), mask (0 / 1: a residue
mask with padding), fused (0 / 1: a and b the two halves of one [B, N, N, 2C] projection).
"""
from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _kernel(A, Bm, MASK, O, N, C,
            stride_ab, stride_a1, stride_a2, stride_bb, stride_b1, stride_b2, stride_mb,
            stride_ob, stride_oi, stride_oj,
            INCOMING: tl.constexpr, HAS_MASK: tl.constexpr, EVEN_K: tl.constexpr, EVEN_IJ: tl.constexpr,
            EVEN_C: tl.constexpr, BLOCK_I: tl.constexpr, BLOCK_J: tl.constexpr, BLOCK_K: tl.constexpr,
            BLOCK_C: tl.constexpr):
    pid_t = tl.program_id(0)
    pid_c = tl.program_id(1)
    bat = tl.program_id(2).to(tl.int64)
    tiles_j = tl.cdiv(N, BLOCK_J)
    ti = pid_t // tiles_j
    tj = pid_t - ti * tiles_j
    # (row, k) strides of a and b: outgoing a[b, i, k, c] b[b, j, k, c], incoming a[b, k, i, c] b[b, k, j, c]
    if INCOMING:
        s_ai = stride_a2
        s_ak = stride_a1
        s_bj = stride_b2
        s_bk = stride_b1
    else:
        s_ai = stride_a1
        s_ak = stride_a2
        s_bj = stride_b1
        s_bk = stride_b2
    ri = ti * BLOCK_I + tl.arange(0, BLOCK_I)
    rj = tj * BLOCK_J + tl.arange(0, BLOCK_J)
    rc = pid_c * BLOCK_C + tl.arange(0, BLOCK_C)
    rk = tl.arange(0, BLOCK_K)
    if EVEN_IJ:
        li = ri
        lj = rj
    else:                                   # rows past N read row N - 1 (never stored)
        li = tl.minimum(ri, N - 1)
        lj = tl.minimum(rj, N - 1)
    c_ok = (rc < C)[:, None, None]
    # int64 bases (the sequence and the tile's first row), int32 offsets inside the tile's rows
    a_base = A + bat * stride_ab + (ti * BLOCK_I).to(tl.int64) * s_ai
    b_base = Bm + bat * stride_bb + (tj * BLOCK_J).to(tl.int64) * s_bj
    a_off = (rc[:, None, None] + ((li - ti * BLOCK_I) * s_ai)[None, :, None]
             + (rk * s_ak)[None, None, :])                      # [BLOCK_C, BLOCK_I, BLOCK_K]
    b_off = (rc[:, None, None] + (rk * s_bk)[None, :, None]
             + ((lj - tj * BLOCK_J) * s_bj)[None, None, :])     # [BLOCK_C, BLOCK_K, BLOCK_J]
    m_ptrs = MASK + bat * stride_mb + rk
    acc = tl.zeros((BLOCK_C, BLOCK_I, BLOCK_J), dtype=tl.float32)
    for k0 in range(0, N, BLOCK_K):
        if EVEN_K:
            if HAS_MASK:                    # the residue mask: a zero where it drops k
                keep = (tl.load(m_ptrs) != 0)[None, None, :]
                if EVEN_C:
                    a = tl.load(a_base + a_off, mask=keep, other=0.0)
                else:
                    a = tl.load(a_base + a_off, mask=keep & c_ok, other=0.0)
            else:
                if EVEN_C:
                    a = tl.load(a_base + a_off)
                else:
                    a = tl.load(a_base + a_off, mask=c_ok, other=0.0)
            if EVEN_C:
                b = tl.load(b_base + b_off)
            else:
                b = tl.load(b_base + b_off, mask=c_ok, other=0.0)
        else:                               # k past N zero in both (the short last step)
            k_ok = (k0 + rk) < N
            if HAS_MASK:
                ka = k_ok & (tl.load(m_ptrs, mask=k_ok, other=0) != 0)
            else:
                ka = k_ok
            if EVEN_C:
                a = tl.load(a_base + a_off, mask=ka[None, None, :], other=0.0)
                b = tl.load(b_base + b_off, mask=k_ok[None, :, None], other=0.0)
            else:
                a = tl.load(a_base + a_off, mask=ka[None, None, :] & c_ok, other=0.0)
                b = tl.load(b_base + b_off, mask=k_ok[None, :, None] & c_ok, other=0.0)
        acc = tl.dot(a, b, acc)             # batched over the channels: mma.sync, a warp a channel
        a_base += BLOCK_K * s_ak
        b_base += BLOCK_K * s_bk
        m_ptrs += BLOCK_K

    o_ptrs = (O + bat * stride_ob + rc[:, None, None] + (ri.to(tl.int64) * stride_oi)[None, :, None]
              + (rj * stride_oj)[None, None, :])
    out = acc.to(O.dtype.element_ty)
    if EVEN_IJ and EVEN_C:
        tl.store(o_ptrs, out)
    else:
        tl.store(o_ptrs, out, mask=(ri < N)[None, :, None] & (rj < N)[None, None, :] & c_ok)


# ---------------------------------------------------------------- launcher
ROLE = "held-out-27"
DTYPES = ("bf16", "fp16")
TUNABLES = ("BLOCK_I", "BLOCK_J", "BLOCK_K", "num_warps", "num_stages")
BASELINE = {"BLOCK_I": 64, "BLOCK_J": 32, "BLOCK_K": 16, "num_warps": 8, "num_stages": 2}
# the study's sweep: 2 x 2 x 2 x 3 x 2 = 48 configs. A program's channels BLOCK_C = num_warps (one a
# warp, derived: 2 / 4 / 8 channels, 4- / 8- / 16-byte accesses); each channel's output tile 32 x 16 ..
# 64 x 32 (16-64 fp32 accumulators a thread)
SWEEP_AXES = {"BLOCK_I": [32, 64], "BLOCK_J": [16, 32], "BLOCK_K": [16, 32], "num_warps": [2, 4, 8],
              "num_stages": [1, 2]}

POINTS = [
    # AlphaFold3's second fine-tuning stage (crop 768 tokens) as Protenix trains it: the pair
    # representation c_z 128, the triangle multiplication's hidden c 128 (separate a / b projections:
    # contiguous), outgoing, bf16, one crop a GPU. a, b 151 + 151 MB read, out 151 MB written;
    # 116 GFLOP
    {"B": 1, "N": 768, "C": 128, "dtype": "bf16", "incoming": 0, "mask": 0, "fused": 0},
    # Uni-Fold's AlphaFold-Multimer in fp16 (Uni-Core's half-precision mode) on a 640-residue complex:
    # its fused linear_ab_p (128 -> 2 x 128) gives a and b as the two channel halves of one
    # [1, 640, 640, 256] tensor, read in place (row pitch 256); the incoming update. 105 + 105 MB
    # read, 105 MB written; 67 GFLOP
    {"B": 1, "N": 640, "C": 128, "dtype": "fp16", "incoming": 1, "mask": 0, "fused": 1},
    # ESMFold's folding trunk (pairwise_state_dim 128 = the triangle multiplication's hidden) on a
    # batch of 8 sequences padded to the longest, 300 residues (ragged: 300 is no multiple of 16),
    # the residue mask over k; outgoing, in bf16 (ESMFold's trunk runs in fp32 by default; bf16 is
    # the serving choice). 184 + 184 MB read, 184 MB written; 55 GFLOP
    {"B": 8, "N": 300, "C": 128, "dtype": "bf16", "incoming": 0, "mask": 1, "fused": 0},
]


def _torch_dtype(name: str):
    import torch
    try:
        return {"bf16": torch.bfloat16, "fp16": torch.float16}[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}") from None


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _check_point(point) -> tuple[int, int, int, str, int, int, int]:
    """(B, N, C, dtype, incoming, mask, fused), every field checked."""
    for k in ("B", "N", "C"):
        v = point[k]
        if not _is_int(v) or v < 1:
            raise ValueError(f"{k}={v!r} must be a positive int")
    dt = point.get("dtype", "bf16")
    if dt not in DTYPES:
        raise ValueError(f"dtype {dt!r} is not one of {', '.join(DTYPES)}")
    flags = []
    for k in ("incoming", "mask", "fused"):
        v = point.get(k, 0)
        if v not in (0, 1) or not isinstance(v, (int, bool)):
            raise ValueError(f"{k}={v!r} must be 0 or 1")
        flags.append(int(v))
    return point["B"], point["N"], point["C"], dt, flags[0], flags[1], flags[2]


def _block_c(cfg) -> int:
    """The channels a program: cfg's BLOCK_C, by default num_warps (one channel a warp)."""
    return cfg.get("BLOCK_C") or cfg["num_warps"]


def _check_cfg(cfg) -> None:
    for k in ("BLOCK_I", "BLOCK_J", "BLOCK_K"):
        v = cfg[k]
        if not _is_int(v) or v < 16 or v > 256 or v & (v - 1):
            raise ValueError(f"{k}={v!r} must be a power of two from 16 to 256 (tl.dot's minimum is 16)")
    w = cfg["num_warps"]
    if not _is_int(w) or w not in (1, 2, 4, 8, 16):
        raise ValueError(f"num_warps={w!r} must be a power of two from 1 to 16")
    bc = _block_c(cfg)
    if not _is_int(bc) or bc < 1 or bc > 64 or bc & (bc - 1):
        raise ValueError(f"BLOCK_C={bc!r} must be a power of two from 1 to 64")
    if bc * cfg["BLOCK_I"] * cfg["BLOCK_J"] > 128 * 32 * w:
        raise ValueError(f"BLOCK_C x BLOCK_I x BLOCK_J = {bc * cfg['BLOCK_I'] * cfg['BLOCK_J']} fp32 accumulators "
                         f"exceed 128 a thread on {w} warps")
    st = cfg.get("num_stages", 1)
    if not _is_int(st) or st < 1:
        raise ValueError(f"num_stages={st!r} must be a positive int")


def _grid(B: int, N: int, C: int, cfg) -> tuple[int, int, int]:
    _check_cfg(cfg)
    return (triton.cdiv(N, cfg["BLOCK_I"]) * triton.cdiv(N, cfg["BLOCK_J"]), triton.cdiv(C, _block_c(cfg)), B)


def _kernel_args(a, b, keep, out, incoming: bool, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it); without a
    mask a stands in for it (never read: HAS_MASK 0)."""
    B, N, _, C = a.shape
    m = a if keep is None else keep
    return dict(A=a, Bm=b, MASK=m, O=out, N=N, C=C,
                stride_ab=a.stride(0), stride_a1=a.stride(1), stride_a2=a.stride(2),
                stride_bb=b.stride(0), stride_b1=b.stride(1), stride_b2=b.stride(2),
                stride_mb=0 if keep is None else keep.stride(0),
                stride_ob=out.stride(0), stride_oi=out.stride(1), stride_oj=out.stride(2),
                INCOMING=int(bool(incoming)), HAS_MASK=int(keep is not None),
                EVEN_K=int(N % cfg["BLOCK_K"] == 0), EVEN_IJ=int(N % cfg["BLOCK_I"] == 0 and N % cfg["BLOCK_J"] == 0),
                EVEN_C=int(C % _block_c(cfg) == 0), BLOCK_I=cfg["BLOCK_I"], BLOCK_J=cfg["BLOCK_J"],
                BLOCK_K=cfg["BLOCK_K"], BLOCK_C=_block_c(cfg))


def _keep_bytes(mask, B: int, N: int):
    """The residue mask as a [B, N] uint8 tensor with unit k stride (a view of a bool mask; else
    mask != 0, a new tensor)."""
    import torch
    if mask.dim() != 2 or tuple(mask.shape) != (B, N):
        raise ValueError(f"mask must be [B, N] = {[B, N]}; got {list(mask.shape)}")
    keep = mask if mask.dtype == torch.bool else mask != 0
    if N > 1 and keep.stride(1) != 1:
        keep = keep.contiguous()
    return keep.view(torch.uint8)


def triangle_mult(a, b, mask=None, *, incoming: bool = False, BLOCK_I: int = 64, BLOCK_J: int = 32,
                  BLOCK_K: int = 16, num_warps: int = 8, num_stages: int = 2, BLOCK_C: int | None = None):
    """a, b [B, N, N, C] (fp16 / bf16, one dtype, unit channel stride, any other strides), mask [B, N]
    or None -> out [B, N, N, C] in a's dtype, contiguous: outgoing (incoming=False)
    out[b, i, j, c] = sum_k mask[b, k] a[b, i, k, c] b[b, j, k, c]; incoming
    out[b, i, j, c] = sum_k mask[b, k] a[b, k, i, c] b[b, k, j, c]. The mask (bool, or nonzero = keep)
    drops residue k from the sum. fp32 accumulation. BLOCK_C: the channels a program (default
    num_warps: one a warp)."""
    import torch
    if a.dim() != 4 or b.dim() != 4:
        raise ValueError(f"expected a and b [B, N, N, C]; got {tuple(a.shape)} and {tuple(b.shape)}")
    if tuple(a.shape) != tuple(b.shape):
        raise ValueError(f"a {tuple(a.shape)} and b {tuple(b.shape)} must have one shape")
    B, N, N2, C = a.shape
    if N != N2:
        raise ValueError(f"a must be [B, N, N, C] (square pair dims); got {tuple(a.shape)}")
    if a.dtype not in (torch.float16, torch.bfloat16) or b.dtype != a.dtype:
        raise ValueError(f"a and b must be fp16 / bf16 of one dtype; got {a.dtype} and {b.dtype}")
    if a.device != b.device or (mask is not None and mask.device != a.device):
        raise ValueError("a, b and the mask must be on one device")
    cfg = {"BLOCK_I": BLOCK_I, "BLOCK_J": BLOCK_J, "BLOCK_K": BLOCK_K, "BLOCK_C": BLOCK_C, "num_warps": num_warps,
           "num_stages": num_stages}
    _check_cfg(cfg)
    if C > 1 and (a.stride(3) != 1 or b.stride(3) != 1):
        raise ValueError(f"a and b must have unit channel stride (channel-last); got strides {tuple(a.stride())} "
                         f"and {tuple(b.stride())}")
    keep = None if mask is None else _keep_bytes(mask, B, N)
    out = torch.empty((B, N, N, C), dtype=a.dtype, device=a.device)
    if out.numel() == 0:
        return out
    gx, gy, gz = _grid(B, N, C, cfg)
    if gy > 65535 or gz > 65535:
        raise ValueError(f"{gy} channel groups x B={gz} exceeds the grid's 65535")
    if gx >= 2**31:
        raise ValueError(f"N={N} gives {gx} output tiles, past the grid's 2^31 - 1")
    row = max(a.stride(1), a.stride(2), b.stride(1), b.stride(2))
    if (max(BLOCK_I, BLOCK_J) + BLOCK_K) * row + C >= 2**31 or N * C >= 2**31:
        raise ValueError(f"a block of {max(BLOCK_I, BLOCK_J)} rows and {BLOCK_K} k, {row} elements apart, exceeds "
                         f"the kernel's int32 in-block offsets")
    _kernel[(gx, gy, gz)](**_kernel_args(a, b, keep, out, incoming, cfg), num_warps=num_warps,
                          num_stages=num_stages)
    return out


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """a, b like the update's gated projections, sigmoid(g) p with p ~ N(0, 1) and g ~ N(0, 1) (|a| ~
    0.5), in the point's dtype, drawn on the CPU from a seeded torch.Generator and moved; with
    `fused`, the two channel halves of one [B, N, N, 2C] tensor; with `mask`, per sequence a length
    in [N / 2, N] (the first sequence N long) and keep[b, k] = k < length (bool [B, N]); a and b
    are left nonzero at the padding, which only the mask then drops. The direction (incoming)."""
    import torch
    B, N, C, dt, incoming, masked, fused = _check_point(point)
    gen = torch.Generator(device="cpu").manual_seed(seed)
    tdt = _torch_dtype(dt)

    def gated(shape):
        return (torch.randn(shape, generator=gen) * torch.sigmoid(torch.randn(shape, generator=gen))).to(tdt)

    if fused:
        ab = gated((B, N, N, 2 * C)).to(device)
        a, b = ab[..., :C], ab[..., C:]
    else:
        a, b = gated((B, N, N, C)).to(device), gated((B, N, N, C)).to(device)
    keep = None
    if masked:
        lengths = torch.randint(N // 2 + 1 if N > 1 else 1, N + 1, (B,), generator=gen)
        lengths[0] = N
        keep = (torch.arange(N)[None, :] < lengths[:, None]).to(device)
    return {"a": a, "b": b, "mask": keep, "incoming": bool(incoming)}


def launch(inputs, cfg):
    """out [B, N, N, C] of inputs["a"], ["b"], ["mask"] (None: no mask), ["incoming"]."""
    return triangle_mult(inputs["a"], inputs["b"], inputs.get("mask"), incoming=inputs.get("incoming", False),
                         BLOCK_I=cfg["BLOCK_I"], BLOCK_J=cfg["BLOCK_J"], BLOCK_K=cfg["BLOCK_K"],
                         num_warps=cfg["num_warps"], num_stages=cfg["num_stages"], BLOCK_C=cfg.get("BLOCK_C"))


def _einsum(a, b, mask, incoming: bool):
    import torch
    if mask is not None:
        m = mask.to(a.dtype)
        a = a * (m[:, :, None, None] if incoming else m[:, None, :, None])
    return torch.einsum("bkic,bkjc->bijc" if incoming else "bikc,bjkc->bijc", a, b)


def reference(inputs):
    """fp32 [B, N, N, C]: the einsum of the upcast a and b (fp64 on the CPU, fp32 on a GPU), a's k
    entries zeroed where the mask drops them."""
    import torch
    a, b = inputs["a"], inputs["b"]
    wide = torch.float64 if a.device.type == "cpu" else torch.float32
    mask = inputs.get("mask")
    return _einsum(a.to(wide), b.to(wide), None if mask is None else mask != 0, inputs.get("incoming", False)).float()


def torch_baseline(inputs):
    """What the models run eagerly: a times the mask (the k entries), then torch.einsum in the inputs'
    dtype (channel-first copies of a and b, a bmm, the result permuted back)."""
    mask = inputs.get("mask")
    return _einsum(inputs["a"], inputs["b"], None if mask is None else mask != 0, inputs.get("incoming", False))


def bytes_moved(point) -> int:
    """a and b read once (their C channels), out written once, the mask's B N bytes read."""
    B, N, C, dt, _, masked, _ = _check_point(point)
    return 3 * B * N * N * C * 2 + masked * B * N


def flops(point) -> int:
    """A multiply-add a (b, i, j, k, c): 2 B N^3 C."""
    B, N, C, _, _, _, _ = _check_point(point)
    return 2 * B * N ** 3 * C


def grid(cfg, point) -> tuple[int, int, int]:
    """(output tiles, channel groups, B): the launch grid, the tile fastest."""
    B, N, C, _, _, _, _ = _check_point(point)
    return _grid(B, N, C, cfg)


def loop_iterations(cfg, point) -> int:
    """k steps a program: cdiv(N, BLOCK_K), every program alike."""
    _, N, _, _, _, _, _ = _check_point(point)
    _check_cfg(cfg)
    return triton.cdiv(N, cfg["BLOCK_K"])


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory): a and b
    [B, N, N, C] in the point's dtype (with `fused` the two halves of one [B, N, N, 2C] tensor, b at
    a 2 C-byte offset), the mask a uint8 [B, N] with `mask`, out contiguous."""
    import torch
    B, N, C, dt, incoming, masked, fused = _check_point(point)
    _check_cfg(cfg)
    tdt = _torch_dtype(dt)
    if fused:
        ab = torch.empty((B, N, N, 2 * C), dtype=tdt, device="meta")
        a, b = ab[..., :C], ab[..., C:]
    else:
        a = torch.empty((B, N, N, C), dtype=tdt, device="meta")
        b = torch.empty((B, N, N, C), dtype=tdt, device="meta")
    keep = torch.empty((B, N), dtype=torch.uint8, device="meta") if masked else None
    out = torch.empty((B, N, N, C), dtype=tdt, device="meta")
    return _kernel_args(a, b, keep, out, bool(incoming), cfg)
