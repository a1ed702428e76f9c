"""bitsandbytes-style NF4 dequantization (QLoRA's 4-bit NormalFloat weights back to a 16-bit
[rows, cols] matrix, what `bnb.functional.dequantize_4bit` does before every cuBLAS GEMM of a
4-bit model that is not fused), a bare @triton.jit kernel + its launcher.

The weight W [rows, cols] is quantized in flat blocks of BLOCKSIZE (64 or 128) consecutive
elements of its row-major order; element e has the 4-bit code c[e] and the block's absmax:

    W.flat[e] = NF4[c[e]] * absmax[e // BLOCKSIZE]          (fp32 product, rounded once)

packed: uint8 [cdiv(numel, 2)], byte i holds c[2 i] in its high nibble and c[2 i + 1] in its
low one (bitsandbytes' order); NF4: the 16 NormalFloat4 values (fp32, a tensor: the same
kernel takes any 16-entry code book, FP4's too); absmax: fp32 [n_blocks] -- or, double-quantized
(QLoRA's nested quantization), uint8 codes into the 256-entry dynamic map CODE2 with one fp32
scale per group of 256 blocks (absmax2) and one fp32 offset (the mean subtracted before):

    absmax[b] = CODE2[qabsmax[b]] * absmax2[b // 256] + offset

Output: [rows, cols] fp16 / bf16, contiguous.

Each CTA takes ITEMS steps of BLOCK packed bytes (2 BLOCK elements, BLOCK / (BLOCKSIZE / 2)
whole quantization blocks), consecutive: a step loads its bytes as a [blocks, BLOCKSIZE / 2]
tile, 4 contiguous bytes a thread (their 8 outputs are one 16-byte store, so the interleave
needs no layout conversion), the blocks' absmax once each (and, double-quantized, their code
byte, its table entry and the group's scale: per block, not per element), looks up both nibbles
in the code book (a 64-byte table: one L1 line, so a warp's gather is one wavefront), scales
in fp32, interleaves high and low (tl.join + reshape: each thread's outputs contiguous) and
stores 2 BLOCK elements. Masks give the tail: per block when numel is a multiple of BLOCKSIZE
(FULL, a constexpr the launcher sets: every real weight; the mask is constant over a thread's
bytes, the accesses stay vectorized), else per element (a last partial block, odd numel).

Tunables: VEC (packed bytes a thread a step, a power of two >= 4: the kernel's BLOCK is
VEC x 32 x num_warps, so every thread owns whole 4-byte chunks and none holds a replica),
ITEMS (steps a CTA: fewer, larger CTAs), num_warps, num_stages (no dot: the step loop's loads
are not pipelined, the cubin is the same for 1 and 3; held at 1).
Problem parameters (a workload point): rows, cols, blocksize (64 / 128), double_quant (bool),
dtype (the output's: fp16 / bf16).
"""

from __future__ import annotations

import triton
import triton.language as tl

# bitsandbytes' NF4 code book (functional.get_4bit_type("nf4")), fp32
NF4 = (-1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453, -0.28444138169288635,
       -0.18477343022823334, -0.09105003625154495, 0.0, 0.07958029955625534, 0.16093020141124725,
       0.24611230194568634, 0.33791524171829224, 0.44070982933044434, 0.5626170039176941,
       0.7229568362236023, 1.0)
DQ_GROUP = 256            # blocks of absmax sharing one absmax2 (bitsandbytes' nested blocksize)
BLOCKSIZES = (64, 128)


@triton.jit
def _kernel(Q, CODE, ABSMAX, CODE2, ABSMAX2, OFFSET, OUT, numel,
            BLOCKSIZE: tl.constexpr, DOUBLE_QUANT: tl.constexpr, DQ_GROUP: tl.constexpr, FULL: tl.constexpr,
            BLOCK: tl.constexpr, ITEMS: tl.constexpr):
    HB: tl.constexpr = BLOCKSIZE // 2            # packed bytes of one quantization block
    NB: tl.constexpr = BLOCK // HB               # quantization blocks of one step
    tl.static_assert(NB * HB == BLOCK, "a step must hold whole quantization blocks")
    pid = tl.program_id(0)
    n_bytes = (numel + 1) // 2
    n_blocks = (numel + BLOCKSIZE - 1) // BLOCKSIZE
    rb = tl.arange(0, NB)
    cb = tl.arange(0, HB)
    ce = tl.arange(0, BLOCKSIZE)
    if DOUBLE_QUANT:
        off = tl.load(OFFSET)
    for it in range(ITEMS):
        blk = (pid.to(tl.int64) * ITEMS + it) * NB + rb                       # [NB] quantization blocks
        b_ok = blk < n_blocks
        if DOUBLE_QUANT:
            qa = tl.load(ABSMAX + blk, mask=b_ok, other=0).to(tl.int32)
            s = tl.load(CODE2 + qa) * tl.load(ABSMAX2 + blk // DQ_GROUP, mask=b_ok, other=0.0) + off
        else:
            s = tl.load(ABSMAX + blk, mask=b_ok, other=0.0)
        byte = blk[:, None] * HB + cb[None, :]                                 # [NB, HB]
        # 4 bytes a thread: their 8 outputs are one 16-byte store, in the load's own layout
        byte = tl.max_contiguous(byte, [1, 4])
        if FULL:
            p = tl.load(Q + byte, mask=b_ok[:, None], other=0).to(tl.int32)
        else:
            p = tl.load(Q + byte, mask=byte < n_bytes, other=0).to(tl.int32)
        hi = tl.load(CODE + (p >> 4)) * s[:, None]
        lo = tl.load(CODE + (p & 0xF)) * s[:, None]
        v = tl.reshape(tl.join(hi, lo), (NB, BLOCKSIZE))                       # element 2 i, 2 i + 1
        e = blk[:, None] * BLOCKSIZE + ce[None, :]
        if FULL:
            tl.store(OUT + e, v.to(OUT.dtype.element_ty), mask=b_ok[:, None])
        else:
            tl.store(OUT + e, v.to(OUT.dtype.element_ty), mask=e < numel)


# ---------------------------------------------------------------- launcher
DTYPES = ("bf16", "fp16")                 # the output's
TUNABLES = ("VEC", "ITEMS", "num_warps", "num_stages")
BASELINE = {"VEC": 8, "ITEMS": 2, "num_warps": 4, "num_stages": 1}

# 4-bit (QLoRA) checkpoints dequantized for a prefill / LoRA-training GEMM; weights 0.1-1.2 GB
# out, 2.3-20x the H200's 50 MB L2 (memory-bound: ~35-300 us at 3.35-4.8 TB/s):
POINTS = [
    # Llama-3-8B gate_proj / up_proj [14336, 4096], QLoRA's defaults: blocksize 64, double-quant,
    # bf16 out: 29 MiB packed + 0.9 MiB absmax codes in, 112 MiB out
    {"rows": 14336, "cols": 4096, "blocksize": 64, "double_quant": True, "dtype": "bf16"},
    # Llama-3-70B down_proj [8192, 28672], blocksize 128, plain fp32 absmax, bf16:
    # 112 MiB packed + 7 MiB absmax in, 448 MiB out
    {"rows": 8192, "cols": 28672, "blocksize": 128, "double_quant": False, "dtype": "bf16"},
    # Mixtral-8x7B's 8 experts' w1 stacked [8 x 14336, 4096], blocksize 128, double-quant, fp16:
    # 224 MiB packed + 3.5 MiB codes in, 896 MiB out
    {"rows": 8 * 14336, "cols": 4096, "blocksize": 128, "double_quant": True, "dtype": "fp16"},
]


def _torch_dtype(name: str):
    import torch
    try:
        return {"bf16": torch.bfloat16, "fp16": torch.float16}[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}") from None


def _elem_bytes(name: str) -> int:
    if name not in DTYPES:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}")
    return 2


def _check_point(point) -> None:
    for k in ("rows", "cols"):
        if not isinstance(point[k], int) or point[k] < 1:
            raise ValueError(f"{k}={point[k]!r} must be a positive int")
    if point["blocksize"] not in BLOCKSIZES:
        raise ValueError(f"blocksize={point['blocksize']!r} must be one of {BLOCKSIZES}")
    _elem_bytes(point.get("dtype", "bf16"))


def block_bytes(cfg) -> int:
    """The kernel's BLOCK: packed bytes a CTA step, VEC a thread."""
    return cfg["VEC"] * 32 * cfg["num_warps"]


def _check_cfg(cfg, blocksize: int = 128) -> None:
    v, it, w = cfg["VEC"], cfg["ITEMS"], cfg["num_warps"]
    if not isinstance(v, int) or v < 4 or v & (v - 1):
        raise ValueError(f"VEC={v!r} must be a power of two >= 4 (whole 4-byte chunks a thread)")
    if not isinstance(w, int) or w < 1 or w & (w - 1):
        raise ValueError(f"num_warps={w!r} must be a power of two")
    if not isinstance(it, int) or it < 1:
        raise ValueError(f"ITEMS={it!r} must be a positive int")
    if block_bytes(cfg) < blocksize // 2:
        raise ValueError(f"BLOCK=VEC x 32 x num_warps={block_bytes(cfg)} holds no whole block of {blocksize}")


def _sizes(point) -> tuple[int, int, int, int]:
    """(numel, packed bytes, absmax blocks, absmax2 groups)."""
    _check_point(point)
    numel = point["rows"] * point["cols"]
    n_blocks = -(-numel // point["blocksize"])
    return numel, -(-numel // 2), n_blocks, -(-n_blocks // DQ_GROUP)


def _kernel_args(packed, code, absmax, out, blocksize, cfg, code2=None, absmax2=None, offset=None) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it). Without
    double quantization CODE2 / ABSMAX2 / OFFSET are absmax (never read: DOUBLE_QUANT is 0)."""
    dq = code2 is not None
    return dict(Q=packed, CODE=code, ABSMAX=absmax, CODE2=code2 if dq else absmax,
                ABSMAX2=absmax2 if dq else absmax, OFFSET=offset if dq else absmax, OUT=out,
                numel=out.numel(), BLOCKSIZE=blocksize, DOUBLE_QUANT=int(dq), DQ_GROUP=DQ_GROUP,
                FULL=int(out.numel() % blocksize == 0),
                BLOCK=block_bytes(cfg), ITEMS=cfg["ITEMS"])


def dequantize_nf4(packed, absmax, shape, code=None, blocksize=64, dtype=None, *, code2=None, absmax2=None,
                   offset=None, VEC=8, ITEMS=2, num_warps=4, num_stages=1):
    """The [rows, cols] weight from packed NF4 codes (uint8 [cdiv(numel, 2)], any shape, contiguous)
    and absmax (fp32 [n_blocks]; with code2 / absmax2 / offset: uint8 codes, double-quantized),
    in `dtype` (torch.bfloat16 default, or torch.float16)."""
    import torch
    dtype = torch.bfloat16 if dtype is None else dtype
    rows, cols = shape
    _check_point({"rows": rows, "cols": cols, "blocksize": blocksize, "dtype": "bf16"})
    if dtype not in (torch.float16, torch.bfloat16):
        raise ValueError(f"dtype must be torch.float16 / torch.bfloat16; got {dtype}")
    numel = rows * cols
    n_blocks = -(-numel // blocksize)
    if packed.dtype != torch.uint8 or packed.numel() != -(-numel // 2):
        raise ValueError(f"packed must be uint8 with {-(-numel // 2)} bytes; got {packed.dtype} {packed.numel()}")
    code = (torch.tensor(NF4, dtype=torch.float32, device=packed.device) if code is None
            else code.to(torch.float32).contiguous())
    if code.numel() != 16:
        raise ValueError(f"code must have 16 entries; got {code.numel()}")
    dq = code2 is not None
    if dq != (absmax2 is not None) or dq != (offset is not None):
        raise ValueError("double quantization needs code2, absmax2 and offset together")
    want = torch.uint8 if dq else torch.float32
    if absmax.dtype != want or absmax.numel() != n_blocks:
        raise ValueError(f"absmax must be {want} with {n_blocks} entries; got {absmax.dtype} {absmax.numel()}")
    if dq:
        groups = -(-n_blocks // DQ_GROUP)
        if code2.numel() != 256 or absmax2.numel() != groups or offset.numel() != 1:
            raise ValueError(f"code2 must have 256 entries, absmax2 {groups}, offset 1; got "
                             f"{code2.numel()}, {absmax2.numel()}, {offset.numel()}")
        code2, absmax2, offset = (t.to(torch.float32).contiguous().reshape(-1) for t in (code2, absmax2, offset))
    cfg = {"VEC": VEC, "ITEMS": ITEMS, "num_warps": num_warps}
    _check_cfg(cfg, blocksize)
    packed, absmax = packed.contiguous().reshape(-1), absmax.contiguous().reshape(-1)
    out = torch.empty((rows, cols), dtype=dtype, device=packed.device)
    per_cta = block_bytes(cfg) // (blocksize // 2) * ITEMS
    _kernel[(triton.cdiv(n_blocks, per_cta),)](**_kernel_args(packed, code, absmax, out, blocksize, cfg, code2,
                                                               absmax2, offset),
                                               num_warps=num_warps, num_stages=num_stages)
    return out


def create_dynamic_map(signed: bool = True, max_exponent_bits: int = 7, total_bits: int = 8):
    """bitsandbytes' dynamic (tree) quantization map, the 256-entry CODE2 of nested absmax."""
    import torch
    data = []
    non_sign_bits = total_bits - (1 if signed else 0)
    for i in range(max_exponent_bits):
        items = int(2 ** (i + non_sign_bits - max_exponent_bits) + 1 if signed
                    else 2 ** (i + non_sign_bits - max_exponent_bits + 1) + 1)
        bounds = torch.linspace(0.1, 1, items, dtype=torch.float64)
        means = (bounds[:-1] + bounds[1:]) / 2.0
        data += ((10 ** (-(max_exponent_bits - 1) + i)) * means).tolist()
        if signed:
            data += (-(10 ** (-(max_exponent_bits - 1) + i)) * means).tolist()
    data += [0.0, 1.0]
    data += [0.0] * (2 ** total_bits - len(data))
    return torch.tensor(sorted(data), dtype=torch.float32)


def quantize_absmax(absmax, code2):
    """bitsandbytes' nested quantization of fp32 absmax: (uint8 codes, absmax2 [groups], offset [1])."""
    import torch
    offset = absmax.mean().reshape(1)
    a = absmax - offset
    n = a.numel()
    groups = -(-n // DQ_GROUP)
    padded = torch.zeros(groups * DQ_GROUP, dtype=torch.float32, device=a.device)
    padded[:n] = a
    absmax2 = padded.view(groups, DQ_GROUP).abs().amax(1).clamp_min(1e-12)
    norm = (padded.view(groups, DQ_GROUP) / absmax2[:, None]).reshape(-1)[:n]
    # the nearest entry of the (sorted) map
    c = code2.to(a.device)
    hi = torch.bucketize(norm, c).clamp(1, c.numel() - 1)
    lo = hi - 1
    idx = torch.where((norm - c[lo]).abs() <= (c[hi] - norm).abs(), lo, hi)
    return idx.to(torch.uint8), absmax2, offset


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """Random NF4 codes (the per-code frequencies a normal weight gives roughly uniform:
    NF4's bins are quantiles of N(0, 1)); block absmax of a Linear's weight, 0.02-0.12
    (std 0.01-0.03 times ~3-4 for a block's max); double-quantized as bitsandbytes does it."""
    import torch
    numel, n_bytes, n_blocks, _ = _sizes(point)
    gen = torch.Generator(device=device).manual_seed(seed)
    packed = torch.randint(0, 256, (n_bytes,), generator=gen, device=device, dtype=torch.int32).to(torch.uint8)
    absmax = 0.02 + 0.1 * torch.rand((n_blocks,), generator=gen, device=device) ** 2
    inputs = {"packed": packed, "code": torch.tensor(NF4, dtype=torch.float32, device=device),
              "shape": (point["rows"], point["cols"]), "blocksize": point["blocksize"],
              "dtype": _torch_dtype(point.get("dtype", "bf16")), "absmax": absmax,
              "code2": None, "absmax2": None, "offset": None}
    if point["double_quant"]:
        code2 = create_dynamic_map().to(device)
        q, absmax2, offset = quantize_absmax(absmax, code2)
        inputs.update(absmax=q, code2=code2, absmax2=absmax2, offset=offset)
    return inputs


def launch(inputs, cfg):
    return dequantize_nf4(inputs["packed"], inputs["absmax"], inputs["shape"], inputs["code"], inputs["blocksize"],
                          inputs["dtype"], code2=inputs["code2"], absmax2=inputs["absmax2"],
                          offset=inputs["offset"], VEC=cfg["VEC"], ITEMS=cfg["ITEMS"],
                          num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])


def unpack_codes(packed, numel: int):
    """uint8 [cdiv(numel, 2)] -> int64 [numel] codes (high nibble first)."""
    import torch
    p = packed.reshape(-1).to(torch.int64)
    return torch.stack((p >> 4, p & 0xF), dim=1).reshape(-1)[:numel]


def block_absmax(inputs):
    """The fp64 absmax of each block (nested dequantization done in fp64 on the stored tables)."""
    import torch
    if inputs["code2"] is None:
        return inputs["absmax"].to(torch.float64)
    b = torch.arange(inputs["absmax"].numel(), device=inputs["absmax"].device)
    return (inputs["code2"].to(torch.float64)[inputs["absmax"].long()]
            * inputs["absmax2"].to(torch.float64)[b // DQ_GROUP] + inputs["offset"].to(torch.float64))


def reference(inputs):
    """fp64 torch: code[c] * absmax per element -> [rows, cols] fp32."""
    import torch
    rows, cols = inputs["shape"]
    numel = rows * cols
    c = unpack_codes(inputs["packed"], numel)
    a = block_absmax(inputs).repeat_interleave(inputs["blocksize"])[:numel]
    return (inputs["code"].to(torch.float64)[c] * a).reshape(rows, cols).float()


def torch_baseline(inputs):
    """Unpack, look up, scale in fp32 with torch ops (what a framework without the kernel does)."""
    import torch
    rows, cols = inputs["shape"]
    numel = rows * cols
    c = unpack_codes(inputs["packed"], numel)
    if inputs["code2"] is None:
        a = inputs["absmax"]
    else:
        b = torch.arange(inputs["absmax"].numel(), device=inputs["absmax"].device)
        a = inputs["code2"][inputs["absmax"].long()] * inputs["absmax2"][b // DQ_GROUP] + inputs["offset"]
    a = a.repeat_interleave(inputs["blocksize"])[:numel]
    return (inputs["code"][c] * a).to(inputs["dtype"]).reshape(rows, cols)


def bytes_moved(point) -> int:
    """Packed codes read, the absmax (fp32, or the uint8 codes + absmax2 + the 1 KiB map and the
    offset) and the 64-byte code book once, the 16-bit output written."""
    numel, n_bytes, n_blocks, groups = _sizes(point)
    e = _elem_bytes(point.get("dtype", "bf16"))
    absmax = n_blocks + 4 * groups + 4 * 256 + 4 if point["double_quant"] else 4 * n_blocks
    return n_bytes + absmax + 4 * 16 + e * numel


def flops(point) -> int:
    """One multiply an element; double-quantized, one fma a block more."""
    numel, _, n_blocks, _ = _sizes(point)
    return numel + (2 * n_blocks if point["double_quant"] else 0)


def blocks_per_cta(cfg, point) -> int:
    _check_cfg(cfg, point["blocksize"])
    return block_bytes(cfg) // (point["blocksize"] // 2) * cfg["ITEMS"]


def grid(cfg, point) -> tuple:
    """One CTA per ITEMS x BLOCK packed bytes (BLOCK = VEC x 32 x num_warps: whole quantization blocks)."""
    _, _, n_blocks, _ = _sizes(point)
    return (-(-n_blocks // blocks_per_cta(cfg, point)),)


def loop_iterations(cfg, point) -> int:
    """ITEMS steps a CTA (the last CTA's past the end are masked, not skipped)."""
    _check_cfg(cfg, point["blocksize"])
    return cfg["ITEMS"]


def example_args(cfg, point) -> dict:
    """The launch's arguments on the meta device."""
    import torch
    numel, n_bytes, n_blocks, groups = _sizes(point)
    _check_cfg(cfg, point["blocksize"])
    meta = "meta"
    packed = torch.empty((n_bytes,), dtype=torch.uint8, device=meta)
    code = torch.empty((16,), dtype=torch.float32, device=meta)
    out = torch.empty((point["rows"], point["cols"]), dtype=_torch_dtype(point.get("dtype", "bf16")), device=meta)
    if point["double_quant"]:
        absmax = torch.empty((n_blocks,), dtype=torch.uint8, device=meta)
        code2 = torch.empty((256,), dtype=torch.float32, device=meta)
        absmax2 = torch.empty((groups,), dtype=torch.float32, device=meta)
        offset = torch.empty((1,), dtype=torch.float32, device=meta)
        return _kernel_args(packed, code, absmax, out, point["blocksize"], cfg, code2, absmax2, offset)
    absmax = torch.empty((n_blocks,), dtype=torch.float32, device=meta)
    return _kernel_args(packed, code, absmax, out, point["blocksize"], cfg)
