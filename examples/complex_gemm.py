"""Planar complex GEMM on the tensor cores -- cuBLAS's cgemm / CUTLASS's planar-complex GEMM (GemmPlanarComplex),
the product at the heart of tied-array beamformers (ASTRON's Tensor-Core Beamformer, phased-array radar), radio
correlators' X-engines (the xGPU / TCC cross-correlation C = X X^H), quantum-circuit state contraction and the
pointwise-product stage of FFT convolutions -- a bare @triton.jit kernel + its launcher:

    C_re = A_re B_re - A_im B_im,        C_im = A_re B_im + A_im B_re          (C = A @ B)
    C_re = A_re B_re + A_im B_im,        C_im = A_im B_re - A_re B_im          (CONJ_B: C = A @ conj(B))

A: [batch, M, K], B: [batch, K, N] complex, each stored as two real planes (A_re, A_im, B_re, B_im: fp16 or bf16,
one dtype, any strides -- a plane may be a transposed view); fp32 accumulation; C_re, C_im: [batch, M, N],
the two planes of one contiguous [2, batch, M, N] tensor in the inputs' dtype (as cuBLAS's CUDA_C_16F output;
widen them yourself for fp32 visibilities). The conjugate flag is what a correlator needs: with B_re, B_im
the transposed views of A's planes (B = A^T as strides, nothing copied) and CONJ_B, C = A A^H, the visibility
matrix of every channel.

Work split: the classic tiled GEMM. One program per [BLOCK_M, BLOCK_N] complex output tile of one batch entry
(grid axis 1: the batch); axis 0 walks the tiles of a matrix in GROUP_M swizzled order (GROUP_M row tiles
side by side down a column of tiles, so a wave of programs shares its A rows and B columns in L2). A program
runs a K loop of BLOCK_K steps: each step loads the four [BLOCK_M, BLOCK_K] / [BLOCK_K, BLOCK_N] plane tiles
(software-pipelined num_stages deep through shared memory) and issues four tl.dot on them into two fp32
accumulators (C_re, C_im). The minus sign is applied to an operand, not to an accumulator: the A_im tile
(A_re under CONJ_B) is negated in registers before its dot, its sign bits flipped with an integer xor (exact
in fp16 / bf16) -- CUTLASS's planar complex negates the fragment the same way. K not a multiple of BLOCK_K
masks the last step's loads (EVEN_K, a constexpr the launcher derives); rows and columns past M / N read a
wrapped row / column (in bounds, never stored), so the loads carry no M / N masks.

How this differs from the closest examples: examples/bmm.py is the same batched tiled GEMM with one operand
pair and one accumulator (no swizzle); here every step loads two planes of each operand and runs four dots
into two accumulators sharing the loaded tiles, so a complex tile holds twice a real tile's accumulators and
shared memory (a 128 x 64 complex tile costs what a 128 x 128 real one does), and each loaded byte feeds two
dots. examples/gated_mlp.py shares one A tile between two B operands (gate and up: two dots, two accumulators,
then a gating epilogue); here both operands come in pairs and the dots cross (A_re with B_im, A_im with B_re).
examples/grouped_gemm.py runs a list of GEMMs of different shapes through a tile scheduler; here the batch is
uniform (one grid axis) and the only per-tile work split is the swizzle.

Not implemented: the 3-multiplication (Gauss) form (T1 = A_re B_re, T2 = A_im B_im, T3 = (A_re + A_im)(B_re +
B_im)) saves a quarter of the dots but needs three accumulators (a third more than the two here, which
already take a 128 x 64 tile on 4 warps to 234-239 registers) and rounds A_re + A_im, B_re + B_im to 16 bits
before the dot: an error of C_im of about 2^-8 relative under bf16 (2^-11 under fp16), amplified where C_im is
small against T3. cuBLAS offers its 3M path (cublasCgemm3m) for single-precision complex only.

Tunables: BLOCK_M (64 / 128 rows), BLOCK_N (32 / 64 complex columns), BLOCK_K (32 / 64), GROUP_M (1: row-major
tile order, 8: swizzled), num_warps (4 / 8), num_stages (2 / 4: the K loop's loads in flight). BLOCK_M x
BLOCK_N stays at 8192 complex outputs at most (two accumulators: 128 fp32 registers a thread on 4 warps; a
128 x 128 complex tile needs 256 and spills on 4 warps), shared memory num_stages x (BLOCK_M + BLOCK_N) x
BLOCK_K x 2 planes x 2 bytes: 192 KiB at most (128 x 64 x 64, 4 stages). On sm_90 every config of the sweep
compiles at every point without spills under triton 3.6.0 and 3.9: registers 63-234 (3.6) and 63-239 (3.9),
the most for 128 x 64 on 4 warps (two 128-register accumulators a thread: close to the limit, hence no larger
tile on 4 warps); shared memory 20-176 KiB under both (the pipeline's buffers: 176 KiB for 128 x 64 x 64 at 4
stages).
Problem parameters (a workload point): batch, M, N, K, dtype ("fp16" / "bf16"), op ("nn": C = A @ B with
independent A [batch, M, K] and B [batch, K, N]; "herm": C = A @ A^H, a correlator: B's planes are the
transposed views of A's, N = M, CONJ_B).
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _neg(x):
    """-x for a 16-bit float tile: its sign bits flipped (exact, one integer op a pair on the GPU)."""
    return (x.to(tl.int16, bitcast=True) ^ -32768).to(x.dtype, bitcast=True)


@triton.jit
def _kernel(AR, AI, BR, BI, CR, CI, M, N, K,
            stride_ab, stride_am, stride_ak, stride_bb, stride_bk, stride_bn, stride_cb, stride_cm, stride_cn,
            CONJ_B: tl.constexpr, EVEN_K: tl.constexpr,
            BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    batch = tl.program_id(1).to(tl.int64)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    in_group = GROUP_M * tiles_n
    first_m = (pid // in_group) * GROUP_M
    group_m = tl.minimum(tiles_m - first_m, GROUP_M)
    pid_m = first_m + (pid % in_group) % group_m
    pid_n = (pid % in_group) // group_m

    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    rm_c = rm % M                                       # rows / columns past M / N wrap (never stored)
    rn_c = rn % N
    a_off = batch * stride_ab + rm_c[:, None] * stride_am + rk[None, :] * stride_ak
    b_off = batch * stride_bb + rk[:, None] * stride_bk + rn_c[None, :] * stride_bn
    acc_re = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    acc_im = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        if EVEN_K:
            ar = tl.load(AR + a_off)
            ai = tl.load(AI + a_off)
            br = tl.load(BR + b_off)
            bi = tl.load(BI + b_off)
        else:
            k_ok = rk < K - k * BLOCK_K
            ar = tl.load(AR + a_off, mask=k_ok[None, :], other=0.0)
            ai = tl.load(AI + a_off, mask=k_ok[None, :], other=0.0)
            br = tl.load(BR + b_off, mask=k_ok[:, None], other=0.0)
            bi = tl.load(BI + b_off, mask=k_ok[:, None], other=0.0)
        if CONJ_B:
            acc_re = tl.dot(ar, br, acc_re)
            acc_re = tl.dot(ai, bi, acc_re)
            acc_im = tl.dot(ai, br, acc_im)
            acc_im = tl.dot(_neg(ar), bi, acc_im)
        else:
            acc_re = tl.dot(ar, br, acc_re)
            acc_re = tl.dot(_neg(ai), bi, acc_re)
            acc_im = tl.dot(ar, bi, acc_im)
            acc_im = tl.dot(ai, br, acc_im)
        a_off += BLOCK_K * stride_ak
        b_off += BLOCK_K * stride_bk

    c_off = batch * stride_cb + rm[:, None] * stride_cm + rn[None, :] * stride_cn
    c_ok = (rm < M)[:, None] & (rn < N)[None, :]
    tl.store(CR + c_off, acc_re.to(CR.dtype.element_ty), mask=c_ok)
    tl.store(CI + c_off, acc_im.to(CI.dtype.element_ty), mask=c_ok)


# ---------------------------------------------------------------- launcher
ROLE = "held-out-34"
DTYPES = ("fp16", "bf16")
OPS = ("nn", "herm")
TUNABLES = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "num_warps", "num_stages")
BASELINE = {"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 64, "GROUP_M": 8, "num_warps": 4, "num_stages": 4}
# the study's sweep: 2 x 2 x 2 x 2 x 2 x 2 = 64 configs (64 / 128 rows x 32 / 64 complex columns a tile, K steps
# of 32 / 64, row-major or swizzled tile order, 4 / 8 warps, 2 / 4 loads in flight). Complex tiles of 128 x 128
# are left out: their two accumulators need 256 fp32 registers a thread on 4 warps (spills); at 4 stages with
# BLOCK_K 64 they would also need 256 KiB of shared memory, past sm_90's 227 KiB.
SWEEP_AXES = {"BLOCK_M": [64, 128], "BLOCK_N": [32, 64], "BLOCK_K": [32, 64], "GROUP_M": [1, 8],
              "num_warps": [4, 8], "num_stages": [2, 4]}
MAX_PLANE = 2**31 - 1                     # elements of one batch entry's plane: offsets within int32

POINTS = [
    # a square complex GEMM, 4096^3 in bf16 (cuBLAS cgemm's benchmark size; a quantum-circuit simulator's
    # contraction of two 12-qubit blocks): planes 32 MiB each, 192 MiB moved, 550 GFLOP real: ~0.6-0.9 ms
    {"batch": 1, "M": 4096, "N": 4096, "K": 4096, "dtype": "bf16", "op": "nn"},
    # a tied-array beamformer (ASTRON's Tensor-Core Beamformer, fp16): 128 beams formed from 2048 antenna
    # inputs (1024 dual-pol elements) over 131072 time samples; weights [128, 2048], samples [2048, 131072]
    # (1 GiB, read once), beams out [128, 131072]: 1.2 GB moved, 275 GFLOP: ~0.3-0.5 ms
    {"batch": 1, "M": 128, "N": 131072, "K": 2048, "dtype": "fp16", "op": "nn"},
    # a correlator X-engine (xGPU / the Tensor-Core Correlator, fp16): 128 frequency channels, 512 inputs
    # (256 dual-pol stations), 2048 time samples an integration; C = X X^H per channel (B the conjugate
    # transpose of X, a view): X 512 MiB read once, visibilities [128, 512, 512] x 2 planes 128 MiB out;
    # 550 GFLOP: ~0.6-0.9 ms
    {"batch": 128, "M": 512, "N": 512, "K": 2048, "dtype": "fp16", "op": "herm"},
]


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _check_cfg(cfg) -> None:
    for name, lo, hi in (("BLOCK_M", 16, 256), ("BLOCK_N", 16, 256), ("BLOCK_K", 16, 256)):
        v = cfg[name]
        if not _is_int(v) or v < lo or v > hi or v & (v - 1):
            raise ValueError(f"{name}={v!r} must be a power of two from {lo} to {hi} (a tl.dot operand side)")
    g = cfg["GROUP_M"]
    if not _is_int(g) or g < 1 or g > 64:
        raise ValueError(f"GROUP_M={g!r} must be an int from 1 to 64")
    w = cfg["num_warps"]
    if not _is_int(w) or w not in (1, 2, 4, 8, 16):
        raise ValueError(f"num_warps={w!r} must be a power of two from 1 to 16")
    ns = cfg.get("num_stages", 2)
    if not _is_int(ns) or ns < 1:
        raise ValueError(f"num_stages={ns!r} must be a positive int")


def _check_point(point) -> dict:
    """The point's fields, checked (defaults: batch 1, dtype fp16, op nn)."""
    P = {"batch": 1, "dtype": "fp16", "op": "nn", **point}
    for name in ("batch", "M", "N", "K"):
        v = P[name]
        if not _is_int(v) or v < 1 or (name == "batch" and v > 65535):
            raise ValueError(f"{name}={v!r} must be a positive int" + (" up to 65535" if name == "batch" else ""))
    if P["dtype"] not in DTYPES:
        raise ValueError(f"dtype {P['dtype']!r} is not one of {DTYPES}")
    if P["op"] not in OPS:
        raise ValueError(f"op {P['op']!r} is not one of {OPS}")
    if P["op"] == "herm" and P["N"] != P["M"]:
        raise ValueError(f"op 'herm' (C = A A^H) needs N == M; got M={P['M']}, N={P['N']}")
    for name, n in (("M x K", P["M"] * P["K"]), ("K x N", P["K"] * P["N"]), ("M x N", P["M"] * P["N"])):
        if n > MAX_PLANE:
            raise ValueError(f"a plane of {name} = {n} elements exceeds {MAX_PLANE}")
    return P


def _torch_dtype(name: str):
    import torch
    return {"fp16": torch.float16, "bf16": torch.bfloat16}[name]


# ---------------------------------------------------------------- the kernel's launch
def _grid(M: int, N: int, batch: int, cfg) -> tuple:
    return (triton.cdiv(M, cfg["BLOCK_M"]) * triton.cdiv(N, cfg["BLOCK_N"]), batch)


def _kernel_args(ar, ai, br, bi, cr, ci, conj_b: bool, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it). The planes are
    [batch, M, K] / [batch, K, N] / [batch, M, N]; each pair (ar, ai), (br, bi) shares its strides."""
    _, M, K = ar.shape
    N = br.shape[2]
    return dict(AR=ar, AI=ai, BR=br, BI=bi, CR=cr, CI=ci, M=M, N=N, K=K,
                stride_ab=ar.stride(0), stride_am=ar.stride(1), stride_ak=ar.stride(2),
                stride_bb=br.stride(0), stride_bk=br.stride(1), stride_bn=br.stride(2),
                stride_cb=cr.stride(0), stride_cm=cr.stride(1), stride_cn=cr.stride(2),
                CONJ_B=int(bool(conj_b)), EVEN_K=int(K % cfg["BLOCK_K"] == 0),
                BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"], BLOCK_K=cfg["BLOCK_K"], GROUP_M=cfg["GROUP_M"])


def complex_gemm(a_re, a_im, b_re, b_im, *, conj_b: bool = False, BLOCK_M: int = 128, BLOCK_N: int = 64,
                 BLOCK_K: int = 64, GROUP_M: int = 8, num_warps: int = 4, num_stages: int = 4, out=None):
    """(c_re, c_im): C = A @ B (conj_b: A @ conj(B)) in planar form. a_re, a_im: [batch, M, K] (or [M, K]);
    b_re, b_im: [batch, K, N] (or [K, N]); fp16 / bf16, one dtype and device; the planes of an operand share
    their shape and strides (any strides: a transposed view is read in place). Returns (c_re, c_im), [batch, M, N]
    each (2-d inputs: [M, N]) in the inputs' dtype: out[0], out[1] of `out`, a contiguous [2, batch, M, N]
    ([2, M, N]) tensor of that dtype and device written in place, or of a fresh one. The tunables: the module doc."""
    import torch
    cfg = {"BLOCK_M": BLOCK_M, "BLOCK_N": BLOCK_N, "BLOCK_K": BLOCK_K, "GROUP_M": GROUP_M,
           "num_warps": num_warps, "num_stages": num_stages}
    _check_cfg(cfg)
    planes = (a_re, a_im, b_re, b_im)
    names = ("a_re", "a_im", "b_re", "b_im")
    for nm, t in zip(names, planes):
        if not isinstance(t, torch.Tensor) or t.dim() not in (2, 3) or t.dtype not in (torch.float16,
                                                                                         torch.bfloat16):
            raise ValueError(f"{nm} must be a 2-d or 3-d fp16 / bf16 tensor; got "
                             f"{getattr(t, 'shape', type(t).__name__)} {getattr(t, 'dtype', '')}")
    if len({t.dtype for t in planes}) != 1 or len({t.device for t in planes}) != 1:
        raise ValueError(f"the four planes must share one dtype and device; got "
                         f"{[str(t.dtype) for t in planes]} on {[str(t.device) for t in planes]}")
    if len({t.dim() for t in planes}) != 1:
        raise ValueError(f"the four planes must all be 2-d or all 3-d; got dims {[t.dim() for t in planes]}")
    squeeze = a_re.dim() == 2
    if squeeze:
        a_re, a_im, b_re, b_im = (t.unsqueeze(0) for t in planes)
    if a_re.shape != a_im.shape or a_re.stride() != a_im.stride():
        raise ValueError(f"a_re and a_im must share shape and strides; got {tuple(a_re.shape)} "
                         f"{a_re.stride()} and {tuple(a_im.shape)} {a_im.stride()}")
    if b_re.shape != b_im.shape or b_re.stride() != b_im.stride():
        raise ValueError(f"b_re and b_im must share shape and strides; got {tuple(b_re.shape)} "
                         f"{b_re.stride()} and {tuple(b_im.shape)} {b_im.stride()}")
    batch, M, K = a_re.shape
    if b_re.shape[0] != batch or b_re.shape[1] != K:
        raise ValueError(f"B must be [batch={batch}, K={K}, N]; got {tuple(b_re.shape)} for A "
                         f"{tuple(a_re.shape)}")
    N = b_re.shape[2]
    if min(batch, M, N, K) < 1:
        raise ValueError(f"empty problem: batch={batch}, M={M}, N={N}, K={K}")
    if batch > 65535:
        raise ValueError(f"batch={batch} exceeds 65535 (grid axis 1)")
    for nm, t in (("a", a_re), ("b", b_re)):
        if min(t.stride()) < 0:
            raise ValueError(f"{nm}'s planes must have non-negative strides; got {t.stride()}")
        span = sum((s - 1) * st for s, st in zip(t.shape[1:], t.stride()[1:])) + 1
        if span > MAX_PLANE:
            raise ValueError(f"one batch entry of {nm} spans {span} elements; at most {MAX_PLANE}")
    if M * N > MAX_PLANE:
        raise ValueError(f"M x N = {M * N} output elements a plane; at most {MAX_PLANE}")
    oshape = (2, M, N) if squeeze else (2, batch, M, N)
    if out is None:
        out = torch.empty(oshape, dtype=a_re.dtype, device=a_re.device)
    elif (not isinstance(out, torch.Tensor) or tuple(out.shape) != oshape or out.dtype != a_re.dtype
          or out.device != a_re.device or not out.is_contiguous()):
        raise ValueError(f"out must be a contiguous {a_re.dtype} {list(oshape)} tensor on {a_re.device}; "
                         f"got {getattr(out, 'shape', type(out).__name__)} {getattr(out, 'dtype', '')}")
    c_re, c_im = (out[0], out[1]) if not squeeze else (out[0].unsqueeze(0), out[1].unsqueeze(0))
    _kernel[_grid(M, N, batch, cfg)](**_kernel_args(a_re, a_im, b_re, b_im, c_re, c_im, conj_b, cfg),
                                     num_warps=num_warps, num_stages=num_stages)
    return out[0], out[1]


# ---------------------------------------------------------------- the launcher contract
def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """A's planes [batch, M, K] and (op nn) B's planes [batch, K, N], normal entries scaled by K^-1/4 each (C's
    entries O(1) whatever K is), drawn on `device` from a seeded generator. op herm: B's planes are A's
    transposed views (B = A^T; conj_b set: C = A A^H)."""
    import torch
    P = _check_point(point)
    dt = _torch_dtype(P["dtype"])
    g = torch.Generator(device=device).manual_seed(int(seed))
    batch, M, N, K = P["batch"], P["M"], P["N"], P["K"]
    s = K ** -0.25

    def draw(shape):
        return (torch.randn(shape, generator=g, device=device) * s).to(dt)

    a_re, a_im = draw((batch, M, K)), draw((batch, M, K))
    if P["op"] == "herm":
        return {"a_re": a_re, "a_im": a_im, "b_re": a_re.transpose(1, 2), "b_im": a_im.transpose(1, 2),
                "conj_b": True}
    return {"a_re": a_re, "a_im": a_im, "b_re": draw((batch, K, N)), "b_im": draw((batch, K, N)),
            "conj_b": False}


def launch(inputs, cfg):
    """[2, batch, M, N] ([2, M, N] for 2-d planes): C_re and C_im, the two planes of one buffer the kernel
    writes."""
    import torch
    a = inputs["a_re"]
    out = torch.empty((2, *a.shape[:-1], inputs["b_re"].shape[-1]), dtype=a.dtype, device=a.device)
    complex_gemm(inputs["a_re"], inputs["a_im"], inputs["b_re"], inputs["b_im"], conj_b=inputs["conj_b"],
                 BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"], BLOCK_K=cfg["BLOCK_K"], GROUP_M=cfg["GROUP_M"],
                 num_warps=cfg["num_warps"], num_stages=cfg["num_stages"], out=out)
    return out


def reference(inputs):
    """[2, batch, M, N] in float64: the complex product of the widened planes (complex128 matmul)."""
    import torch
    a = torch.complex(inputs["a_re"].double(), inputs["a_im"].double())
    b = torch.complex(inputs["b_re"].double(), inputs["b_im"].double())
    if inputs["conj_b"]:
        b = b.conj()
    c = torch.matmul(a, b)
    return torch.stack((c.real, c.imag))


def torch_baseline(inputs):
    """What a torch user writes without a complex-half GEMM: four real matmuls in the inputs' dtype (cuBLAS),
    combined -- [2, batch, M, N]."""
    import torch
    ar, ai, br, bi = inputs["a_re"], inputs["a_im"], inputs["b_re"], inputs["b_im"]
    if inputs["conj_b"]:
        bi = -bi
    return torch.stack((ar @ br - ai @ bi, ar @ bi + ai @ br))


def bytes_moved(point) -> int:
    """A's two planes read once, B's two planes read once (op herm: B is A, already counted), C's two planes
    written once."""
    P = _check_point(point)
    e = 2                                                           # fp16 / bf16
    b, M, N, K = P["batch"], P["M"], P["N"], P["K"]
    reads = M * K + (0 if P["op"] == "herm" else K * N)
    return 2 * e * b * (reads + M * N)


def flops(point) -> int:
    """Four real multiply-adds a complex one: 8 x batch x M x N x K."""
    P = _check_point(point)
    return 8 * P["batch"] * P["M"] * P["N"] * P["K"]


def grid(cfg, point) -> tuple:
    """The launch grid (tiles of one matrix in GROUP_M order, batch)."""
    P = _check_point(point)
    _check_cfg(cfg)
    return _grid(P["M"], P["N"], P["batch"], cfg)


def loop_iterations(cfg, point) -> int:
    """cdiv(K, BLOCK_K) steps a program (four dots a step)."""
    grid(cfg, point)
    P = _check_point(point)
    return triton.cdiv(P["K"], cfg["BLOCK_K"])


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, every tensor on the meta device (as make_inputs
    lays them out: op herm's B planes are A's transposed views)."""
    import torch
    P = _check_point(point)
    grid(cfg, P)
    dt = _torch_dtype(P["dtype"])
    b, M, N, K = P["batch"], P["M"], P["N"], P["K"]
    ar = torch.empty((b, M, K), dtype=dt, device="meta")
    ai = torch.empty((b, M, K), dtype=dt, device="meta")
    if P["op"] == "herm":
        br, bi = ar.transpose(1, 2), ai.transpose(1, 2)
    else:
        br = torch.empty((b, K, N), dtype=dt, device="meta")
        bi = torch.empty((b, K, N), dtype=dt, device="meta")
    cr = torch.empty((b, M, N), dtype=dt, device="meta")
    ci = torch.empty((b, M, N), dtype=dt, device="meta")
    return _kernel_args(ar, ai, br, bi, cr, ci, P["op"] == "herm", cfg)
