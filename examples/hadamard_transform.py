"""Fast Walsh-Hadamard transform along the last dimension (the online rotation of QuaRot /
SpinQuant-style rotated low-bit inference, as Dao's fast-hadamard-transform runs it before a
W4A4 / W8A8 GEMM), a bare @triton.jit kernel + its launcher.

    out[r, :] = (x[r, :] @ H_D) * scale          H_D[i, j] = (-1) ** popcount(i & j)

x: [rows, D] bf16 / fp16 (unit stride along D, any row stride; leading batch dims are flattened
into rows), D a power of two, 16 <= D <= 32768 (what QuaRot needs beyond that -- 14336 = 28 x 512,
a H_28 (x) H_512 Kronecker rotation -- is the caller's: this kernel does the power-of-two factor);
H_D the Sylvester Hadamard matrix, scale = D ** -0.5 by default (an orthonormal rotation). out:
[rows, D] in x's dtype. Arithmetic in fp32, one rounding to the output dtype at the end.

H_D is a Kronecker power of H_2, so the transform is log2(D) radix-2 butterfly stages, stage s
pairing the columns whose index differs in bit s: (a, b) -> (a + b, a - b). The kernel holds its
[ROWS, D] tile in registers and runs the stages on it with tl.reshape / tl.permute / tl.split /
tl.join (the stages on the high bits move data between threads and warps: layout conversions
through shared memory). DOT_H chooses the formulation of the low stages:
  DOT_H = 0:          every stage a butterfly (fp32 adds only);
  DOT_H = 16/32/64:   the low log2(DOT_H) stages as one tensor-core tl.dot of the
                      [ROWS * D / DOT_H, DOT_H] view of the 16-bit input with a +-1 matrix
                      H_DOT_H (fp32 accumulation: exact, the inputs are the original 16-bit
                      values), the remaining stages as butterflies on the fp32 result.

One CTA per ROWS rows; the grid is cdiv(rows, ROWS). The launcher chooses ROWS from the tile
size tunable BLOCK (elements a CTA holds): ROWS = max(1, BLOCK // D), so a small D (a KV-cache
head of 128) gets many rows a CTA and a large one (a 16384-wide MLP activation) one row. The
last CTA's rows past the end are masked (EVEN_ROWS is set when ROWS divides rows). No main loop:
each CTA loads its tile once, transforms it and stores it.

Tunables: BLOCK (power of two >= 16: elements of x a CTA holds, at least one row), DOT_H (0, 16,
32, 64), num_warps, num_stages (no loop to pipeline: it does not change the code).
Problem parameters (a workload point): rows, D, dtype ("bf16" / "fp16").
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _butterfly(y, ROWS: tl.constexpr, D: tl.constexpr, H: tl.constexpr):
    """One radix-2 stage on bit log2(H) of the column index of the fp32 [ROWS, D] tile."""
    if H == 1:
        a, b = tl.split(tl.reshape(y, (ROWS * D // 2, 2)))
        return tl.reshape(tl.join(a + b, a - b), (ROWS, D))
    else:
        z = tl.permute(tl.reshape(y, (ROWS * D // (2 * H), 2, H)), (0, 2, 1))    # [.., H, 2]: the pair last
        a, b = tl.split(z)
        z = tl.permute(tl.join(a + b, a - b), (0, 2, 1))
        return tl.reshape(z, (ROWS, D))


@triton.jit
def _kernel(X, OUT, HMAT, n_rows, stride_x, stride_o, scale,
            D: tl.constexpr, LOG_D: tl.constexpr, ROWS: tl.constexpr, DOT_H: tl.constexpr,
            EVEN_ROWS: tl.constexpr):
    pid = tl.program_id(0)
    rows = pid * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, D)
    x_ptr = X + rows.to(tl.int64)[:, None] * stride_x + cols[None, :]
    if EVEN_ROWS:
        x = tl.load(x_ptr)
    else:
        x = tl.load(x_ptr, mask=(rows < n_rows)[:, None], other=0.0)

    if DOT_H > 0:
        # the low log2(DOT_H) stages at once: [ROWS * D / DOT_H, DOT_H] @ H_DOT_H on the tensor cores
        hi = tl.arange(0, DOT_H)
        h = tl.load(HMAT + hi[:, None] * DOT_H + hi[None, :])
        y = tl.dot(tl.reshape(x, (ROWS * D // DOT_H, DOT_H)), h)
        y = tl.reshape(y, (ROWS, D))
    else:
        y = x.to(tl.float32)

    for s in tl.static_range(LOG_D):
        if (1 << s) >= DOT_H:
            y = _butterfly(y, ROWS, D, 1 << s)

    o_ptr = OUT + rows.to(tl.int64)[:, None] * stride_o + cols[None, :]
    out = (y * scale).to(OUT.dtype.element_ty)
    if EVEN_ROWS:
        tl.store(o_ptr, out)
    else:
        tl.store(o_ptr, out, mask=(rows < n_rows)[:, None])


# ---------------------------------------------------------------- launcher
DTYPES = ("bf16", "fp16")
DOT_HS = (0, 16, 32, 64)
MAX_D = 32768
TUNABLES = ("BLOCK", "DOT_H", "num_warps", "num_stages")
BASELINE = {"BLOCK": 8192, "DOT_H": 16, "num_warps": 8, "num_stages": 1}

# Where rotated-quantisation inference runs the transform (each point's x + out exceed nothing like
# 4 GB: 134-268 MB; every point streams >= 2.7 x the 50 MB L2, so it is a DRAM-bound copy at best:
# ~28-56 us at 4.8 TB/s, unless the stages' shuffles bind first):
POINTS = [
    # KV-cache head rotation (QuaRot's K / V rotation): 32768 tokens x 8 KV heads of 128, bf16
    {"rows": 262144, "D": 128, "dtype": "bf16"},
    # QuaRot hidden-size rotation of a Llama-2-7B / Llama-3-8B activation (4096), 16k tokens, fp16
    {"rows": 16384, "D": 4096, "dtype": "fp16"},
    # Llama-3-8B down_proj input rotation (14336 = 28 x 512: the power-of-two 16384-wide factor of
    # a padded rotation), an 8k-token prefill, bf16
    {"rows": 8192, "D": 16384, "dtype": "bf16"},
]


def _torch_dtype(name: str):
    import torch
    try:
        return {"bf16": torch.bfloat16, "fp16": torch.float16}[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}") from None


def _check_D(D: int) -> None:
    if D < 16 or D > MAX_D or D & (D - 1):
        raise ValueError(f"D={D} must be a power of two in [16, {MAX_D}] (pad, or factor out a non-power-of-two "
                         f"Hadamard block before calling)")


def rows_per_cta(cfg, D: int) -> int:
    """ROWS: the rows a CTA holds, BLOCK elements' worth, at least one."""
    return max(1, cfg["BLOCK"] // D)


def _check_cfg(cfg, D: int) -> None:
    b = cfg["BLOCK"]
    if b < 16 or b & (b - 1):
        raise ValueError(f"BLOCK={b} must be a power of two >= 16")
    if cfg["DOT_H"] not in DOT_HS:
        raise ValueError(f"DOT_H={cfg['DOT_H']} must be one of {DOT_HS} (0: butterflies only)")
    if cfg["DOT_H"] and (cfg["DOT_H"] > D or rows_per_cta(cfg, D) * D // cfg["DOT_H"] < 16):
        raise ValueError(f"DOT_H={cfg['DOT_H']} needs D >= DOT_H and ROWS * D / DOT_H >= 16 (a tl.dot's rows); "
                         f"D={D}, ROWS={rows_per_cta(cfg, D)}")


_HMATS: dict = {}


def hadamard_matrix(n: int, dtype=None, device="cpu"):
    """The Sylvester H_n (+-1 entries), n a power of two, fp32 unless dtype is given."""
    import torch
    h = torch.ones((1, 1), dtype=torch.float32)
    while h.shape[0] < n:
        h = torch.cat([torch.cat([h, h], 1), torch.cat([h, -h], 1)], 0)
    return h.to(device=device, dtype=dtype or torch.float32)


def _hmat(n: int, dtype, device):
    key = (n, dtype, str(device))
    if key not in _HMATS:
        _HMATS[key] = hadamard_matrix(n, dtype, device).contiguous()
    return _HMATS[key]


def _kernel_args(x, out, hmat, scale, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    n_rows, D = x.shape
    rows = rows_per_cta(cfg, D)
    return dict(X=x, OUT=out, HMAT=hmat, n_rows=n_rows, stride_x=x.stride(0), stride_o=out.stride(0),
                scale=float(scale), D=D, LOG_D=D.bit_length() - 1, ROWS=rows, DOT_H=cfg["DOT_H"],
                EVEN_ROWS=n_rows % rows == 0)


def hadamard_transform(x, scale=None, *, out=None, BLOCK=8192, DOT_H=16, num_warps=8, num_stages=1):
    """(x @ H_D) * scale along x's last dimension (D, a power of two in [16, 32768]); scale defaults
    to D ** -0.5. x: bf16 / fp16, unit stride along D (other layouts are copied). Returns a tensor
    of x's shape and dtype (into `out` if given: same shape and dtype, unit stride along D, rows
    flattenable to a 2-D view)."""
    import torch
    if x.dtype not in (torch.bfloat16, torch.float16):
        raise ValueError(f"x must be torch.bfloat16 / torch.float16; got {x.dtype}")
    if x.dim() < 1:
        raise ValueError("x must have at least one dimension (the transformed one)")
    D = x.shape[-1]
    _check_D(D)
    cfg = {"BLOCK": BLOCK, "DOT_H": DOT_H}
    _check_cfg(cfg, D)
    shape = x.shape
    x2 = x.reshape(-1, D)
    if x2.stride(1) != 1:
        x2 = x2.contiguous()
    if out is None:
        out = torch.empty(shape, dtype=x.dtype, device=x.device)
    elif tuple(out.shape) != tuple(shape) or out.dtype != x.dtype or out.stride(-1) != 1:
        raise ValueError(f"out must be {x.dtype} {tuple(shape)} with unit stride along D; got {out.dtype} "
                         f"{tuple(out.shape)} strides {out.stride()}")
    o2 = out.view(-1, D)
    n_rows = x2.shape[0]
    if n_rows == 0:
        return out
    scale = D ** -0.5 if scale is None else scale
    hmat = _hmat(DOT_H if DOT_H else 16, x.dtype, x.device)
    grid = (triton.cdiv(n_rows, rows_per_cta(cfg, D)),)
    _kernel[grid](**_kernel_args(x2, o2, hmat, scale, cfg), num_warps=num_warps, num_stages=num_stages)
    return out


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """Activation-like rows: N(0, 1) with a few outlier channels (x 20, what the rotation is for),
    drawn on the CPU from the seed, then moved."""
    import torch
    dt = _torch_dtype(point.get("dtype", "bf16"))
    rows, D = point["rows"], point["D"]
    _check_D(D)
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn((rows, D), generator=gen)
    outliers = torch.randperm(D, generator=gen)[:max(1, D // 256)]
    x[:, outliers] *= 20.0
    return {"x": x.to(device=device, dtype=dt), "scale": point.get("scale", None)}


def launch(inputs, cfg):
    return hadamard_transform(inputs["x"], inputs["scale"], out=inputs.get("out"), BLOCK=cfg["BLOCK"],
                              DOT_H=cfg["DOT_H"], num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])


def reference(inputs):
    """x (exact in fp64) @ the fp64 Sylvester matrix, times the scale; fp32 out."""
    x = inputs["x"]
    D = x.shape[-1]
    scale = D ** -0.5 if inputs["scale"] is None else inputs["scale"]
    h = hadamard_matrix(D).double().to(x.device)
    return ((x.double() @ h) * scale).float()


def torch_baseline(inputs):
    """A dense fp32 matmul with H_D (what a torch user writes without a fast transform), rounded once."""
    x = inputs["x"]
    D = x.shape[-1]
    scale = D ** -0.5 if inputs["scale"] is None else inputs["scale"]
    return ((x.float() @ _hmat(D, None, x.device)) * scale).to(x.dtype)


def bytes_moved(point) -> int:
    """x read once and out written once (the small H_DOT_H is an L2 hit after the first CTAs)."""
    _torch_dtype(point.get("dtype", "bf16"))
    _check_D(point["D"])
    return 2 * 2 * point["rows"] * point["D"]


def flops(point) -> int:
    """The fast transform's adds: D log2(D) a row (a butterfly is two), plus the scale's D."""
    D = point["D"]
    return point["rows"] * (D * (D.bit_length() - 1) + D)


def grid(cfg, point) -> int:
    """One CTA per ROWS rows."""
    return triton.cdiv(point["rows"], rows_per_cta(cfg, point["D"]))


def loop_iterations(cfg, point) -> int:
    """No main loop: one tile a CTA."""
    return 1


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory)."""
    import torch
    dt = _torch_dtype(point.get("dtype", "bf16"))
    rows, D = point["rows"], point["D"]
    _check_D(D)
    _check_cfg(cfg, D)
    x = torch.empty((rows, D), dtype=dt, device="meta")
    out = torch.empty((rows, D), dtype=dt, device="meta")
    hmat = torch.empty((cfg["DOT_H"] or 16,) * 2, dtype=dt, device="meta")
    return _kernel_args(x, out, hmat, D ** -0.5, cfg)
