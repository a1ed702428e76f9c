"""All-pairs gravitational (or Coulomb-like) accelerations with Plummer softening -- the direct-summation force
kernel of GPU Gems 3's "Fast N-Body Simulation with CUDA" (Nyland, Harris, Prins), of the direct N-body codes
of star-cluster and galaxy dynamics (NBODY6++GPU / PhiGPU / Bonsai's direct stage, the "sapporo" GPU library
behind GRAPE-style integrators) and of molecular-dynamics / plasma codes' no-cutoff electrostatics (the
reference all-pairs pass of OpenMM's NoCutoff Coulomb force, particle-in-cell test kernels) -- a bare
@triton.jit kernel + its launcher:

    acc[i] = sum_j w_j (p_j - p_i) / (|p_j - p_i|^2 + eps^2)^(3/2)          (j over all N bodies, i included)

pos: [N, 4] fp32 rows (x, y, z, w) -- the GPU Gems float4 layout: w is the source strength of body j (its mass
G m_j for gravity; for charges the caller passes -k q_j and scales the field by q_i / m_i itself), so one body
is one 16-byte row and a source tile is one coalesced sweep of 16 B a body, where SoA would be four streams
(unit column stride, any row stride: a view of a wider [N, 8] state array with velocities beside positions is
read in place). eps > 0 (the Plummer softening; it also makes the i = j term exactly zero, dx = 0, so no
branch excludes it). acc: [N, 3] fp32, a fresh contiguous tensor. fp32 math throughout: FMAs and one rsqrt a
pair (w * rsqrt(r2)^3), no tensor cores.

Work split: a 2-D grid (cdiv(N, BLOCK_I), SPLIT_J), body tiles on axis 0 (fastest: CTAs running together sweep
the same source range, and pos -- 16 B a body, 1 MiB at N 65536 -- stays L2-resident anyway). A CTA owns
BLOCK_I target bodies, their x, y, z held in registers for the whole kernel, and walks its share of the N
sources BLOCK_J at a time (a runtime loop the pipeliner issues num_stages deep): a step loads one [BLOCK_J]
strip of x, y, z, w -- shared by all BLOCK_I targets, the on-chip reuse that makes the kernel compute-bound --,
evaluates the [BLOCK_I, BLOCK_J] block of interactions (3 subs, 3 FMAs for r2, an rsqrt, 3 muls, 3 FMAs) and
reduces it over j into three [BLOCK_I] fp32 accumulators. SPLIT_J > 1 cuts the source range into SPLIT_J
contiguous chunks of J_PER_SPLIT (a multiple of BLOCK_J) sources, one CTA column each, so a small N still fills
the 132 SMs (N 16384 in 128-body tiles is 128 CTAs without it); the partial accelerations are combined with
three relaxed fp32 atomic adds a body per split into a zero-filled output (torch.zeros: a secondary fill
kernel) rather than through a [SPLIT_J, N, 3] workspace and a second reduction kernel -- SPLIT_J adds onto a
body's 12 bytes is no contention, and it saves a launch; the price is a summation order that varies between
runs (fp32 round-off, ~1e-7 relative). SPLIT_J = 1 stores directly into an uninitialised output. N not a
multiple of BLOCK_J masks the source loads (EVEN_J, a constexpr the launcher derives): a masked source has
w = 0 and contributes exactly 0; targets past N load nothing and store nothing.

How this differs from the closest examples/ kernels: examples/gram_syrk.py and examples/knn_topk.py also
compare every row with every other row in tiles, but their pair term is an inner product, so a tile pair is one
tl.dot on the tensor cores; here the pair term is a 3-vector with an rsqrt (not a dot: D = 3 and a nonlinear
kernel), all on the FP32 and MUFU pipes, and the reduction over j is a sum of vectors instead of a top-K or a
stored matrix. examples/farthest_point_sample.py also walks point clouds of xyz in fp32 but one sequential
argmax chain per cloud (N x npoint, latency-bound, one CTA a batch); here every target is independent and the
work is N^2.

Tunables: BLOCK_I (targets a CTA: 32 / 64 / 128 -- more reuse of each source strip, fewer CTAs), BLOCK_J
(sources a step: 16 / 32 -- the interaction block a step, i.e. the registers, against the j-loop's length and
the per-step reduction's shuffles), SPLIT_J (1 / 2 / 4 / 8 source chunks: CTAs to fill the GPU at small N, against
3 SPLIT_J atomics a body and the zero fill), num_warps (4 / 8). num_stages is held at 1: the j-loop's strided
4-byte source loads are not pipelined by either Triton (num_stages 3 compiled to the same registers and shared
memory), so it is no lever here. The [BLOCK_I, BLOCK_J] block's dx, dy, dz and factors are live together for the
reductions, ~8 registers an element a thread, which bounds the block to 32 elements a thread: 128 x 32 on 4 warps
takes 254 registers; 128 x 64 on 4 warps spills 170 and 256 x 64 on 4 warps 716 (triton 3.9), so BLOCK_I 256 and
BLOCK_J 64 are out of the sweep. On sm_90, every one of the 48 configs compiled at both specializations (N a
multiple of 16: the first two points; N 30000: the third), under triton 3.6.0 and 3.9 alike: no spills,
registers 32-254 (254: 128 x 32 on 4 warps; BASELINE 64 x 32 on 4 warps 128), shared memory 128-512 B (the
reductions' scratch; no pipeline buffers).
Problem parameters (a workload point): N (bodies), model ("plummer": a Plummer sphere of equal masses 1/N;
"salpeter": the same sphere with Salpeter-IMF masses from 0.1 to 100, normalised to total 1; "plasma": a
uniform cube of charges +-1/N, neutral overall), eps (the softening length).
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _kernel(POS, ACC, N, stride_p, J_PER_SPLIT, eps2,
            SPLIT_J: tl.constexpr, EVEN_J: tl.constexpr, BLOCK_I: tl.constexpr, BLOCK_J: tl.constexpr):
    pid_i = tl.program_id(0)
    pid_s = tl.program_id(1)
    ri = pid_i * BLOCK_I + tl.arange(0, BLOCK_I)
    i_ok = ri < N
    pi = POS + ri * stride_p
    xi = tl.load(pi, mask=i_ok, other=0.0)
    yi = tl.load(pi + 1, mask=i_ok, other=0.0)
    zi = tl.load(pi + 2, mask=i_ok, other=0.0)
    ax = tl.zeros([BLOCK_I], dtype=tl.float32)
    ay = tl.zeros([BLOCK_I], dtype=tl.float32)
    az = tl.zeros([BLOCK_I], dtype=tl.float32)
    j_lo = pid_s * J_PER_SPLIT
    j_hi = tl.minimum(j_lo + J_PER_SPLIT, N)
    jj = tl.arange(0, BLOCK_J)
    for j0 in range(j_lo, j_hi, BLOCK_J):
        rj = j0 + jj
        pj = POS + rj * stride_p
        if EVEN_J:
            xj = tl.load(pj)
            yj = tl.load(pj + 1)
            zj = tl.load(pj + 2)
            wj = tl.load(pj + 3)
        else:
            j_ok = rj < N
            xj = tl.load(pj, mask=j_ok, other=0.0)
            yj = tl.load(pj + 1, mask=j_ok, other=0.0)
            zj = tl.load(pj + 2, mask=j_ok, other=0.0)
            wj = tl.load(pj + 3, mask=j_ok, other=0.0)          # a masked source: w = 0, contributes 0
        dx = xj[None, :] - xi[:, None]
        dy = yj[None, :] - yi[:, None]
        dz = zj[None, :] - zi[:, None]
        r2 = dx * dx + dy * dy + dz * dz + eps2
        inv = tl.math.rsqrt(r2)
        s = wj[None, :] * (inv * inv * inv)
        ax += tl.sum(dx * s, axis=1)
        ay += tl.sum(dy * s, axis=1)
        az += tl.sum(dz * s, axis=1)
    po = ACC + ri * 3
    if SPLIT_J == 1:
        tl.store(po, ax, mask=i_ok)
        tl.store(po + 1, ay, mask=i_ok)
        tl.store(po + 2, az, mask=i_ok)
    else:
        tl.atomic_add(po, ax, mask=i_ok, sem="relaxed")
        tl.atomic_add(po + 1, ay, mask=i_ok, sem="relaxed")
        tl.atomic_add(po + 2, az, mask=i_ok, sem="relaxed")


# ---------------------------------------------------------------- launcher
ROLE = "held-out-36"
DTYPES = ("fp32",)
MODELS = ("plummer", "salpeter", "plasma")
TUNABLES = ("BLOCK_I", "BLOCK_J", "SPLIT_J", "num_warps")
# num_stages is held at 1: the j-loop's strided 4-byte source loads are not pipelined by either Triton (num_stages
# 3 compiles to the same registers and shared memory), so it is no lever here
BASELINE = {"BLOCK_I": 64, "BLOCK_J": 32, "SPLIT_J": 1, "num_warps": 4, "num_stages": 1}
SWEEP_AXES = {"BLOCK_I": [32, 64, 128], "BLOCK_J": [16, 32], "SPLIT_J": [1, 2, 4, 8], "num_warps": [4, 8],
              "num_stages": [1]}
FILL_BLOCK = 512            # elements a CTA of torch's vectorised fill kernel (128 threads x 4): the zero fill
MAX_INDEX = 2**31 - 1
FLOPS_PER_PAIR = 20         # GPU Gems 3's count (the rsqrt as 4): 3 subs, 6 for r2 + eps2, rsqrt, 3 muls, 6 FMAs

POINTS = [
    # a galaxy / star-cluster step: a 64k-body Plummer sphere of equal masses (N-body units, G = M = 1),
    # softening 0.01 -- 4.3 G pairs, 85.9 GFLOP: ~1.4 ms at the FP32 pipe's 60 TFLOP/s
    {"N": 65536, "model": "plummer", "eps": 0.01},
    # GPU Gems 3's demo size, a 16k-body open star cluster with Salpeter-IMF masses (0.1-100, a 1000x range),
    # softening 0.002: 128 CTAs of 128 targets without a j split (fewer than the 132 SMs) -- 5.4 GFLOP: ~90 us
    {"N": 16384, "model": "salpeter", "eps": 0.002},
    # a neutral plasma / ion system without a cutoff: 30000 charges +-1/N in a unit cube (N ragged against every
    # tile), softening 0.005 -- 18.0 GFLOP: ~0.3 ms
    {"N": 30000, "model": "plasma", "eps": 0.005},
]


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _pow2(v, lo: int, hi: int) -> bool:
    return _is_int(v) and lo <= v <= hi and not v & (v - 1)


def _check_cfg(cfg) -> None:
    b = cfg["BLOCK_I"]
    if not _pow2(b, 16, 1024):
        raise ValueError(f"BLOCK_I={b!r} must be a power of two from 16 to 1024")
    b = cfg["BLOCK_J"]
    if not _pow2(b, 16, 256):
        raise ValueError(f"BLOCK_J={b!r} must be a power of two from 16 to 256")
    s = cfg["SPLIT_J"]
    if not _is_int(s) or s < 1 or s > 64:
        raise ValueError(f"SPLIT_J={s!r} must be an int from 1 to 64")
    w = cfg["num_warps"]
    if not _is_int(w) or w not in (1, 2, 4, 8, 16):
        raise ValueError(f"num_warps={w!r} must be a power of two from 1 to 16")
    ns = cfg.get("num_stages", 1)
    if not _is_int(ns) or ns < 1 or ns > 8:
        raise ValueError(f"num_stages={ns!r} must be an int from 1 to 8")


def _check_eps(eps) -> float:
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not 0 < eps < 1e18:
        raise ValueError(f"eps={eps!r} must be a finite positive number (the softening length)")
    return float(eps)


def _check_n(N) -> None:
    if not _is_int(N) or N < 1 or 4 * N > MAX_INDEX - 4096:
        raise ValueError(f"N={N!r} must be an int from 1 to {(MAX_INDEX - 4096) // 4} (int32 offsets)")


def _check_point(point) -> dict:
    P = {"model": "plummer", "dtype": "fp32", **point}
    _check_n(P.get("N"))
    if P["model"] not in MODELS:
        raise ValueError(f"model {P['model']!r} is not one of {', '.join(MODELS)}")
    if P["dtype"] not in DTYPES:
        raise ValueError(f"dtype {P['dtype']!r} is not one of {DTYPES}")
    _check_eps(P.get("eps"))
    return P


def plan(cfg, N: int) -> dict:
    """The split of the sources: J_PER_SPLIT (a multiple of BLOCK_J), the tiles each split walks."""
    _check_cfg(cfg)
    _check_n(N)
    bj, sp = cfg["BLOCK_J"], cfg["SPLIT_J"]
    per = triton.cdiv(triton.cdiv(N, sp), bj) * bj
    tiles = [max(0, triton.cdiv(min(per, N - s * per), bj)) if N > s * per else 0 for s in range(sp)]
    return {"J_PER_SPLIT": per, "tiles": tiles, "i_tiles": triton.cdiv(N, cfg["BLOCK_I"])}


# ---------------------------------------------------------------- the kernel's launch
def _grid(N: int, cfg) -> tuple:
    return (triton.cdiv(N, cfg["BLOCK_I"]), cfg["SPLIT_J"])


def _kernel_args(pos, acc, eps: float, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    N = pos.shape[0]
    return dict(POS=pos, ACC=acc, N=N, stride_p=pos.stride(0), J_PER_SPLIT=plan(cfg, N)["J_PER_SPLIT"],
                eps2=float(eps) * float(eps), SPLIT_J=cfg["SPLIT_J"], EVEN_J=int(N % cfg["BLOCK_J"] == 0),
                BLOCK_I=cfg["BLOCK_I"], BLOCK_J=cfg["BLOCK_J"])


def nbody_forces(pos, eps: float, *, BLOCK_I: int = 64, BLOCK_J: int = 32, SPLIT_J: int = 1, num_warps: int = 4,
                 num_stages: int = 1):
    """acc [N, 3] fp32 (module doc): the softened all-pairs accelerations of pos [N, 4] fp32 rows (x, y, z, w),
    unit column stride, any row stride; eps > 0. A fresh contiguous output (zero-filled first when SPLIT_J > 1:
    the splits add into it atomically). The tunables: the module doc."""
    import torch
    cfg = {"BLOCK_I": BLOCK_I, "BLOCK_J": BLOCK_J, "SPLIT_J": SPLIT_J, "num_warps": num_warps,
           "num_stages": num_stages}
    _check_cfg(cfg)
    eps = _check_eps(eps)
    if (not isinstance(pos, torch.Tensor) or pos.dim() != 2 or pos.shape[1] != 4 or pos.dtype != torch.float32):
        raise ValueError(f"pos must be a 2-d torch.float32 tensor [N, 4] (x, y, z, w); got "
                         f"{getattr(pos, 'shape', type(pos).__name__)} {getattr(pos, 'dtype', '')}")
    N = pos.shape[0]
    if N < 1:
        raise ValueError(f"pos must hold N >= 1 bodies; got {tuple(pos.shape)}")
    _check_n(N)
    if pos.stride(1) != 1:
        raise ValueError(f"pos must have a unit stride along its last axis; got strides {pos.stride()}")
    if pos.stride(0) < 4 or (N - 1) * pos.stride(0) + 4 > MAX_INDEX - 4096:
        raise ValueError(f"pos's row stride {pos.stride(0)} must be at least 4 and its span within "
                         f"{MAX_INDEX - 4096} elements")
    if SPLIT_J > 1:
        acc = torch.zeros((N, 3), dtype=torch.float32, device=pos.device)
    else:
        acc = torch.empty((N, 3), dtype=torch.float32, device=pos.device)
    _kernel[_grid(N, cfg)](**_kernel_args(pos, acc, eps, cfg), num_warps=num_warps, num_stages=num_stages)
    return acc


# ---------------------------------------------------------------- the launcher contract
def _plummer(N: int, g, device):
    """[N, 3] fp64 positions of a Plummer sphere (Aarseth, Henon & Wielen 1974; scale a = 3 pi / 16, N-body
    units), radii capped at 20 a (the far tail)."""
    import math
    import torch
    a = 3 * math.pi / 16
    u = torch.rand(N, generator=g, device=device, dtype=torch.float64).clamp(1e-10, 0.999)
    r = a / torch.sqrt(u.pow(-2.0 / 3.0) - 1.0)
    r = r.clamp(max=20 * a)
    v = torch.randn((N, 3), generator=g, device=device, dtype=torch.float64)
    v = v / v.norm(dim=1, keepdim=True).clamp(min=1e-12)
    return v * r[:, None]


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """pos [N, 4] fp32 (x, y, z, w) for the point's model (module doc) and eps, drawn on `device` from a seeded
    generator: "plummer" w = 1 / N; "salpeter" Plummer positions, masses from dN/dm ~ m^-2.35 on [0.1, 100]
    normalised to total 1; "plasma" uniform positions in [-0.5, 0.5]^3, w = +-1 / N (alternating signs, shuffled
    by the positions' draw: neutral for even N)."""
    import torch
    P = _check_point(point)
    N = P["N"]
    dev = torch.device(device)
    g = torch.Generator(device=dev).manual_seed(int(seed))
    pos = torch.empty((N, 4), dtype=torch.float64, device=dev)
    if P["model"] == "plasma":
        pos[:, :3] = torch.rand((N, 3), generator=g, device=dev, dtype=torch.float64) - 0.5
        sign = 1.0 - 2.0 * (torch.arange(N, device=dev) % 2).to(torch.float64)
        pos[:, 3] = sign / N
    else:
        pos[:, :3] = _plummer(N, g, dev)
        if P["model"] == "salpeter":
            # inverse CDF of m^-alpha on [lo, hi], alpha = 2.35
            lo, hi, k = 0.1, 100.0, -1.35
            u = torch.rand(N, generator=g, device=dev, dtype=torch.float64)
            m = (lo ** k + u * (hi ** k - lo ** k)).pow(1.0 / k)
            pos[:, 3] = m / m.sum()
        else:
            pos[:, 3] = 1.0 / N
    return {"pos": pos.to(torch.float32), "eps": P["eps"]}


def launch(inputs, cfg):
    """acc [N, 3] fp32."""
    return nbody_forces(inputs["pos"], inputs["eps"], BLOCK_I=cfg["BLOCK_I"], BLOCK_J=cfg["BLOCK_J"],
                        SPLIT_J=cfg["SPLIT_J"], num_warps=cfg["num_warps"], num_stages=cfg.get("num_stages", 1))


def _direct(pos, eps: float, dtype, chunk: int):
    import torch
    p = pos.to(dtype)
    xyz, w = p[:, :3], p[:, 3]
    out = torch.empty((p.shape[0], 3), dtype=dtype, device=p.device)
    e2 = float(eps) ** 2
    for i0 in range(0, p.shape[0], chunk):
        d = xyz[None, :, :] - xyz[i0:i0 + chunk, None, :]                   # [chunk, N, 3]: p_j - p_i
        r2 = (d * d).sum(-1) + e2
        s = w[None, :] * r2.pow(-1.5)
        out[i0:i0 + chunk] = (d * s[..., None]).sum(1)
    return out


def reference(inputs):
    """acc [N, 3] in float64 from the fp32 positions, i-chunks of ~2^25 pairs."""
    N = inputs["pos"].shape[0]
    import torch
    return _direct(inputs["pos"], inputs["eps"], torch.float64, max(1, (1 << 25) // N))


def torch_baseline(inputs):
    """What a PyTorch user writes: the same direct sum in fp32 eager ops over chunks of targets ([chunk, N, 3]
    differences through memory, ~2^25 pairs a chunk)."""
    import torch
    N = inputs["pos"].shape[0]
    return _direct(inputs["pos"], inputs["eps"], torch.float32, max(1, (1 << 25) // N))


def bytes_moved(point) -> int:
    """pos read once (16 B a body), acc written once (12 B a body); a SPLIT_J > 1 config also zero-fills acc and
    re-reads it in its atomics (config-dependent, in secondary_kernels, not here)."""
    P = _check_point(point)
    return 16 * P["N"] + 12 * P["N"]


def flops(point) -> int:
    """FLOPS_PER_PAIR (20, GPU Gems 3's count) x N^2 pairs (the i = j pair included, as the kernel runs it)."""
    P = _check_point(point)
    return FLOPS_PER_PAIR * P["N"] * P["N"]


def grid(cfg, point) -> tuple:
    """The launch grid (cdiv(N, BLOCK_I), SPLIT_J): target tiles fastest."""
    P = _check_point(point)
    _check_cfg(cfg)
    return _grid(P["N"], cfg)


def loop_iterations(cfg, point) -> int:
    """Source tiles a CTA walks: cdiv(J_PER_SPLIT, BLOCK_J) (the last split may walk fewer: cta_iterations)."""
    P = _check_point(point)
    return plan(cfg, P["N"])["J_PER_SPLIT"] // cfg["BLOCK_J"]


def cta_iterations(cfg, point) -> list:
    """Each CTA's source tiles in launch order (target tiles fastest): split s walks
    cdiv(min(J_PER_SPLIT, N - s J_PER_SPLIT), BLOCK_J), >= 0."""
    P = _check_point(point)
    pl = plan(cfg, P["N"])
    out = []
    for t in pl["tiles"]:
        out += [t] * pl["i_tiles"]
    return out


def secondary_kernels(cfg, point) -> list:
    """torch.zeros of the [N, 3] fp32 output before `_kernel` when SPLIT_J > 1 (a store-only fill): FILL_BLOCK
    elements a CTA, tile_bytes = dram_bytes = its 4 FILL_BLOCK bytes written."""
    P = _check_point(point)
    _check_cfg(cfg)
    if cfg["SPLIT_J"] == 1:
        return []
    return [{"name": "zero_fill", "grid": triton.cdiv(3 * P["N"], FILL_BLOCK), "iterations": 1,
             "tile_bytes": 4 * FILL_BLOCK, "dram_bytes": 4 * FILL_BLOCK}]


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`: pos [N, 4] and acc [N, 3] fp32 contiguous on the
    meta device (nothing but N decides the work)."""
    import torch
    P = _check_point(point)
    _check_cfg(cfg)
    N = P["N"]
    pos = torch.empty((N, 4), dtype=torch.float32, device="meta")
    acc = torch.empty((N, 3), dtype=torch.float32, device="meta")
    return _kernel_args(pos, acc, P["eps"], cfg)
