"""GroupNorm forward (torch.nn.GroupNorm, as in diffusion UNets and VAEs), a bare @triton.jit
kernel + its launcher.

    mean_g, var_g over the C/G channels x HW positions of group g of sample n (biased var)
    y[n, c, s] = (x[n, c, s] - mean_g) * rsqrt(var_g + eps) * weight[c] + bias[c]

x: [N, C, HW] fp16 / bf16 / fp32, contiguous (HW = H*W of an NCHW activation, so a group's
C/G channels are one contiguous run of C/G * HW elements); weight, bias: [C] in x's dtype;
y: [N, C, HW] in x's dtype. fp32 statistics, eps 1e-5. One CTA per (n, group), two passes
over the group (the layout of Liger-Kernel's group_norm forward):
  pass 1 walks the group's contiguous C/G * HW elements flat, in BLOCK_SIZE chunks, and
    accumulates per-lane fp32 sums of (x - p) and (x - p)^2, p = the group's first element
    (a shift against cancellation when |mean| >> std); one tree reduction after the loop;
  pass 2 re-reads x channel by channel (an outer loop over the C/G channels, an inner one
    over HW in BLOCK_SIZE chunks), with the channel's affine folded into one scale and
    shift (a = weight * rstd, b = bias - mean * a, y = x * a + b): no per-element channel
    index, weight and bias are two scalar loads per channel.
The re-read of pass 2 comes from L2 when the group (C/G * HW * elem bytes, 80 KiB - 2 MiB
here) x the resident CTAs fits; otherwise from DRAM again.

Tunables: BLOCK_SIZE (a power of two), num_warps, num_stages (no dot: the loads are not
pipelined, so num_stages may change nothing in the cubin).
Problem parameters (a workload point): N, C, HW, dtype; optional G (default 32, must
divide C).
"""

from __future__ import annotations

import triton
import triton.language as tl

EPS = 1e-5


@triton.jit
def _kernel(X, Wt, Bias, Y, C, HW, CPG, eps, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    groups = C // CPG
    n = pid // groups
    g = pid % groups
    c0 = g * CPG
    group_numel = CPG * HW
    base = (n.to(tl.int64) * C + c0) * HW
    x_grp = X + base
    y_grp = Y + base
    offs = tl.arange(0, BLOCK_SIZE)

    # pass 1: shifted sums over the group, flat
    pivot = tl.load(x_grp).to(tl.float32)
    acc = tl.zeros([BLOCK_SIZE], tl.float32)
    acc2 = tl.zeros([BLOCK_SIZE], tl.float32)
    for start in range(0, group_numel, BLOCK_SIZE):
        idx = start + offs
        m = idx < group_numel
        d = tl.where(m, tl.load(x_grp + idx, mask=m, other=0.0).to(tl.float32) - pivot, 0.0)
        acc += d
        acc2 += d * d
    mean_d = tl.sum(acc, axis=0) / group_numel
    var = tl.maximum(tl.sum(acc2, axis=0) / group_numel - mean_d * mean_d, 0.0)
    rstd = tl.rsqrt(var + eps)
    mean = pivot + mean_d

    # pass 2: per channel, y = x * a + b
    for c in range(0, CPG):
        w = tl.load(Wt + c0 + c).to(tl.float32)
        a = w * rstd
        b = tl.load(Bias + c0 + c).to(tl.float32) - mean * a
        x_row = x_grp + c * HW
        y_row = y_grp + c * HW
        for s0 in range(0, HW, BLOCK_SIZE):
            s = s0 + offs
            m = s < HW
            x = tl.load(x_row + s, mask=m, other=0.0).to(tl.float32)
            tl.store(y_row + s, (x * a + b).to(Y.dtype.element_ty), mask=m)


# ---------------------------------------------------------------- launcher
DTYPES = ("fp16", "bf16", "fp32")
TUNABLES = ("BLOCK_SIZE", "num_warps", "num_stages")
BASELINE = {"BLOCK_SIZE": 1024, "num_warps": 4, "num_stages": 1}

# x 80-256 MiB, y the same (1.7-5.4x the H200's 50 MB L2); 512, 1024 and 128 CTAs.
POINTS = [
    {"N": 16, "C": 640, "HW": 4096, "G": 32, "dtype": "bf16"},    # x 80 MiB: SDXL UNet 64x64 stage, batch 16; group 80K elems
    {"N": 32, "C": 320, "HW": 4096, "G": 32, "dtype": "fp16"},    # x 80 MiB: SD-1.5 UNet 64x64 stage (C/G = 10), batch 32
    {"N": 4, "C": 256, "HW": 65536, "G": 32, "dtype": "fp32"},    # x 256 MiB: SDXL VAE decoder 256x256 stage, fp32, batch 4
]


def _torch_dtype(name: str):
    import torch
    try:
        return {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}") from None


def _elem_bytes(name: str) -> int:
    return 4 if name == "fp32" else 2


def _check_cfg(cfg) -> None:
    v = cfg["BLOCK_SIZE"]
    if v < 1 or v & (v - 1):
        raise ValueError(f"BLOCK_SIZE={v} must be a power of two")


def _kernel_args(x, weight, bias, y, num_groups, eps, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    C = x.shape[1]
    return dict(X=x, Wt=weight, Bias=bias, Y=y, C=C, HW=x.shape[2], CPG=C // num_groups, eps=eps,
                BLOCK_SIZE=cfg["BLOCK_SIZE"])


def group_norm(x, num_groups, weight, bias, eps=EPS, *, BLOCK_SIZE=1024, num_warps=4, num_stages=1):
    """torch.nn.functional.group_norm(x, num_groups, weight, bias, eps) for x [N, C, *] (the
    trailing dims are flattened to HW), weight and bias [C] in x's dtype. Returns x's shape and dtype."""
    import torch
    if x.dim() < 3 or weight.shape != (x.shape[1],) or bias.shape != (x.shape[1],):
        raise ValueError(f"expected x [N, C, HW...], weight [C], bias [C]; got {tuple(x.shape)}, "
                         f"{tuple(weight.shape)}, {tuple(bias.shape)}")
    if num_groups < 1 or x.shape[1] % num_groups:
        raise ValueError(f"G={num_groups} groups must divide C={x.shape[1]}")
    if not x.dtype == weight.dtype == bias.dtype:
        raise ValueError(f"x, weight, bias dtypes differ: {x.dtype}, {weight.dtype}, {bias.dtype}")
    cfg = {"BLOCK_SIZE": BLOCK_SIZE}
    _check_cfg(cfg)
    shape = x.shape
    x3 = x.reshape(shape[0], shape[1], -1).contiguous()
    if x3.numel() == 0:
        return torch.empty(shape, dtype=x.dtype, device=x.device)
    weight, bias = weight.contiguous(), bias.contiguous()
    y = torch.empty(x3.shape, dtype=x.dtype, device=x.device)
    _kernel[(shape[0] * num_groups,)](**_kernel_args(x3, weight, bias, y, num_groups, eps, cfg),
                                      num_warps=num_warps, num_stages=num_stages)
    return y.view(shape)


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    import torch
    gen = torch.Generator(device=device).manual_seed(seed)
    dt = _torch_dtype(point.get("dtype", "bf16"))
    N, C, HW = point["N"], point["C"], point["HW"]
    # activations with a per-channel offset (a mean the shift in pass 1 has to cope with)
    x = torch.randn((N, C, HW), generator=gen, device=device) * 1.5
    x += torch.randn((1, C, 1), generator=gen, device=device) * 2.0
    weight = 1.0 + 0.3 * torch.randn((C,), generator=gen, device=device)
    bias = 0.3 * torch.randn((C,), generator=gen, device=device)
    return {"x": x.to(dt), "weight": weight.to(dt), "bias": bias.to(dt), "G": point.get("G", 32)}


def launch(inputs, cfg):
    return group_norm(inputs["x"], inputs["G"], inputs["weight"], inputs["bias"], EPS,
                      BLOCK_SIZE=cfg["BLOCK_SIZE"], num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])


def reference(inputs):
    import torch.nn.functional as F
    return F.group_norm(inputs["x"].float(), inputs["G"], inputs["weight"].float(), inputs["bias"].float(), EPS)


def torch_baseline(inputs):
    """Eager torch.nn.functional.group_norm in x's dtype."""
    import torch.nn.functional as F
    return F.group_norm(inputs["x"], inputs["G"], inputs["weight"], inputs["bias"], EPS)


def bytes_moved(point) -> int:
    """x read once, y written once, weight and bias read once. Pass 2's re-read of x is NOT
    counted (it is the kernel's choice, and an L2 hit when the group stays resident)."""
    N, C, HW = point["N"], point["C"], point["HW"]
    return (2 * N * C * HW + 2 * C) * _elem_bytes(point.get("dtype", "bf16"))


def flops(point) -> int:
    """Per element: pass 1's shift, add and square's multiply-add (4), pass 2's multiply-add (2).
    The per-group and per-channel scalars are not counted."""
    return 6 * point["N"] * point["C"] * point["HW"]


def grid(cfg, point) -> int:
    """One CTA per (sample, group)."""
    return point["N"] * point.get("G", 32)


def loop_iterations(cfg, point) -> int:
    """Both passes together: pass 1's flat chunks of the group (C/G * HW elements) plus pass 2's
    C/G channels x HW chunks each (the inner loop's iterations)."""
    cpg = point["C"] // point.get("G", 32)
    HW, bs = point["HW"], cfg["BLOCK_SIZE"]
    return triton.cdiv(cpg * HW, bs) + cpg * triton.cdiv(HW, bs)


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory)."""
    import torch
    dt = _torch_dtype(point.get("dtype", "bf16"))
    N, C, HW = point["N"], point["C"], point["HW"]
    x = torch.empty((N, C, HW), dtype=dt, device="meta")
    weight = torch.empty((C,), dtype=dt, device="meta")
    bias = torch.empty((C,), dtype=dt, device="meta")
    y = torch.empty((N, C, HW), dtype=dt, device="meta")
    return _kernel_args(x, weight, bias, y, point.get("G", 32), EPS, cfg)
