"""Per-row sampler statistics over a large vocabulary (max, argmax, logsumexp and a target's
log-prob of logits / temperature) in one read of the logits, a bare @triton.jit kernel + a
merge kernel + the launcher.

    y[r, :] = logits[r, :] / temperature[r]
    row_max[r] = max(y[r, :])              argmax[r] = the first index of it (int64)
    lse[r] = logsumexp(y[r, :])            logprob[r] = y[r, target[r]] - lse[r]   (optional)

logits: [M, V] fp32 / bf16 / fp16 (an LM head's output, the vocabulary V need not be a power
of two; rows may be strided, columns contiguous); temperature: [M] fp32, a value <= 0 (a
greedy row) is taken as 1 (the argmax does not depend on it); targets: [M] int64 or none, a
negative target (padding) gives logprob 0. Outputs: one fp32 buffer stats [P, M] (stats[0] =
row_max, stats[1] = lse, stats[2] = logprob when targets are given: P = 3, else P = 2) and
argmax [M] int64. Logits may hold -inf (banned / masked tokens; a row of -inf only gives
row_max = lse = -inf, argmax 0); NaN and +inf are not handled.

``_kernel`` runs M x SPLIT_V CTAs: CTA (row, split) walks its contiguous share of the row's
ceil(V / BLOCK_V) column chunks with an online (single-pass, rescaled) logsumexp: per chunk
one max-with-index reduction of the raw logits (tie-break left: the first index, and a later
chunk replaces the running argmax only if its max is strictly larger), a running raw max m
and a running sum s of exp((x - m) / T) rescaled by exp((m_old - m_new) / T) when the max
grows; each element pays one FMA and one exp2 (x * c - m * c, c = log2(e) / T), so the
temperature costs nothing per element (max(x / T) = max(x) / T for T > 0: a positive scale
keeps the order). The row is read exactly once.
  SPLIT_V == 1: the CTA finishes its row itself (lse = m / T + log(s), the target's logit is one
    scalar load) and stores the outputs; the merge is skipped.
  SPLIT_V > 1: each CTA stores its partial (raw max, its first argmax, the sum of exp rescaled
    to its own max) to a workspace ([2, M, SPLIT_V] fp32, [M, SPLIT_V] int64), and
    ``_merge_kernel`` (one CTA per MERGE_ROWS rows) combines a row's SPLIT_V partials in a
    fixed order (deterministic): the max, the smallest argmax among the splits that hold it,
    sum_i s_i * exp((m_i - max) / T), and loads the target's logit. A split past the last
    chunk (SPLIT_V > chunks) has max -inf, sum 0 and drops out of the merge.
The split lever is for few rows (a decode batch): M CTAs alone may not fill 132 SMs with
enough loads in flight.

Tunables: BLOCK_V (a power of two), SPLIT_V (>= 1), num_warps, num_stages (no dot: the
loads are not pipelined; with triton 3.6 for sm_90, num_stages 1-3 give the same SASS).
Problem parameters (a workload point): M, V, dtype, target (bool: are target log-probs asked).
Timing covers both kernels; grid / loop_iterations describe ``_kernel``.
"""

from __future__ import annotations

import triton
import triton.language as tl

MERGE_ROWS = 64         # rows per CTA of _merge_kernel
_NO_ARG = 2**62         # larger than any column: masked partials never win the argmax


@triton.jit
def _kernel(LOGITS, TEMP, TARGETS, PF, PI, V, stride_row, stride_plane,
            BLOCK_V: tl.constexpr, SPLIT_V: tl.constexpr, HAS_TARGET: tl.constexpr):
    pid = tl.program_id(0)
    row = (pid // SPLIT_V).to(tl.int64)
    split = pid % SPLIT_V
    LOG2E: tl.constexpr = 1.4426950408889634

    t = tl.load(TEMP + row)
    inv_t = tl.where(t > 0.0, 1.0 / t, 1.0)
    c = inv_t * LOG2E                       # exp((x - m) / T) = exp2(x * c - m * c)

    # this split's share of the column chunks: [c_first, c_last)
    n_chunks = tl.cdiv(V, BLOCK_V)
    per_split = tl.cdiv(n_chunks, SPLIT_V)
    c_first = split * per_split
    c_last = tl.minimum(c_first + per_split, n_chunks)

    x_row = LOGITS + row * stride_row
    offs = tl.arange(0, BLOCK_V)
    m = -float("inf")                       # running max of the raw logits
    s = 0.0                                 # running sum of exp((x - m) / T)
    arg = c_first * BLOCK_V                 # stays (the split's first column) if every x is -inf
    for ci in range(c_first, c_last):
        cols = ci * BLOCK_V + offs
        x = tl.load(x_row + cols, mask=cols < V, other=-float("inf")).to(tl.float32)
        cm, cidx = tl.max(x, 0, return_indices=True, return_indices_tie_break_left=True)
        arg = tl.where(cm > m, ci * BLOCK_V + cidx, arg)
        m_new = tl.maximum(m, cm)
        mc = tl.where(m_new == -float("inf"), 0.0, m_new) * c      # finite: no -inf - -inf
        s = s * tl.exp2(m * c - mc) + tl.sum(tl.exp2(x * c - mc), 0)
        m = m_new

    if SPLIT_V == 1:
        # PF is stats [P, M], PI argmax [M]
        lse = m * inv_t + tl.log(s)
        tl.store(PF + row, m * inv_t)
        tl.store(PF + stride_plane + row, lse)
        tl.store(PI + row, arg.to(tl.int64))
        if HAS_TARGET:
            tgt = tl.load(TARGETS + row)
            ok = tgt >= 0
            xt = tl.load(x_row + tl.where(ok, tgt, 0)).to(tl.float32)
            tl.store(PF + 2 * stride_plane + row, tl.where(ok, xt * inv_t - lse, 0.0))
    else:
        # PF is the workspace [2, M, SPLIT_V] (raw max, sum), PI [M, SPLIT_V]
        slot = row * SPLIT_V + split
        tl.store(PF + slot, m)
        tl.store(PF + stride_plane + slot, s)
        tl.store(PI + slot, arg.to(tl.int64))


@triton.jit
def _merge_kernel(PF, PI, LOGITS, TEMP, TARGETS, OUT, OUT_ARG, M, stride_row, stride_plane, stride_out,
                  SPLIT_V: tl.constexpr, SPLIT_P: tl.constexpr, BLOCK_R: tl.constexpr,
                  HAS_TARGET: tl.constexpr, NO_ARG: tl.constexpr):
    LOG2E: tl.constexpr = 1.4426950408889634
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    r_ok = rows < M
    rows64 = rows.to(tl.int64)
    sp = tl.arange(0, SPLIT_P)
    ok = r_ok[:, None] & (sp < SPLIT_V)[None, :]
    slot = rows64[:, None] * SPLIT_V + sp[None, :]
    pm = tl.load(PF + slot, mask=ok, other=-float("inf"))
    ps = tl.load(PF + stride_plane + slot, mask=ok, other=0.0)
    pa = tl.load(PI + slot, mask=ok, other=NO_ARG)

    t = tl.load(TEMP + rows, mask=r_ok, other=1.0)
    inv_t = tl.where(t > 0.0, 1.0 / t, 1.0)
    m = tl.max(pm, 1)
    arg = tl.min(tl.where(pm == m[:, None], pa, NO_ARG), 1)      # the first split holding the max
    m_ref = tl.where(m == -float("inf"), 0.0, m)
    s = tl.sum(ps * tl.exp2((pm - m_ref[:, None]) * (inv_t * LOG2E)[:, None]), 1)
    lse = m * inv_t + tl.log(s)
    tl.store(OUT + rows, m * inv_t, mask=r_ok)
    tl.store(OUT + stride_out + rows, lse, mask=r_ok)
    tl.store(OUT_ARG + rows, arg, mask=r_ok)
    if HAS_TARGET:
        tgt = tl.load(TARGETS + rows, mask=r_ok, other=-1)
        t_ok = tgt >= 0
        xt = tl.load(LOGITS + rows64 * stride_row + tl.where(t_ok, tgt, 0), mask=t_ok, other=0.0).to(tl.float32)
        tl.store(OUT + 2 * stride_out + rows, tl.where(t_ok, xt * inv_t - lse, 0.0), mask=r_ok)


# ---------------------------------------------------------------- launcher
DTYPES = ("fp32", "bf16", "fp16")
TUNABLES = ("BLOCK_V", "SPLIT_V", "num_warps", "num_stages")
BASELINE = {"BLOCK_V": 4096, "SPLIT_V": 1, "num_warps": 8, "num_stages": 1}

# The logits read once (temperature, targets and the outputs: 20-28 B a row): 263-1,051 MB
# per launch (5-21x the H200's 50 MB L2), 0.055-0.22 ms at 4.8 TB/s. 512 and 1,024 rows are
# 3.9 and 7.8 rows per SM: there the split decides how many loads are in flight.
#   Llama-3 decode batch of 512, fp32 logits (vLLM's sampler casts them): 263 MB
#   Llama-3 scoring 4k tokens (prompt log-probs, an RL policy's log-probs), bf16 logits: 1,051 MB
#   Qwen2 (fp16, as its AWQ checkpoints run), 1k rows with the sampled tokens' log-probs: 311 MB
POINTS = [
    {"M": 512, "V": 128256, "target": False, "dtype": "fp32"},
    {"M": 4096, "V": 128256, "target": True, "dtype": "bf16"},
    {"M": 1024, "V": 152064, "target": True, "dtype": "fp16"},
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


def _check_cfg(cfg) -> None:
    v = cfg["BLOCK_V"]
    if v < 1 or v & (v - 1):
        raise ValueError(f"BLOCK_V={v} must be a power of two")
    if not isinstance(cfg["SPLIT_V"], int) or cfg["SPLIT_V"] < 1:
        raise ValueError(f"SPLIT_V={cfg['SPLIT_V']} must be an int >= 1")


def _planes(has_target: bool) -> int:
    return 3 if has_target else 2


def _buffers(M: int, split_v: int, has_target: bool, empty):
    """(pf, pi) that `_kernel` writes: the outputs stats [P, M] fp32 and argmax [M] int64 when
    split_v == 1, else the workspace [2, M, split_v] fp32 and [M, split_v] int64."""
    import torch
    if split_v == 1:
        return empty((_planes(has_target), M), torch.float32), empty((M,), torch.int64)
    return empty((2, M, split_v), torch.float32), empty((M, split_v), torch.int64)


def _kernel_args(logits, temperature, targets, pf, pi, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it).
    pf, pi: the outputs (SPLIT_V == 1) or the workspace (SPLIT_V > 1), from `_buffers`."""
    return dict(LOGITS=logits, TEMP=temperature, TARGETS=targets, PF=pf, PI=pi, V=logits.shape[1],
                stride_row=logits.stride(0), stride_plane=pf.stride(0), BLOCK_V=cfg["BLOCK_V"],
                SPLIT_V=cfg["SPLIT_V"], HAS_TARGET=targets is not None)


def _merge_kernel_args(pf, pi, logits, temperature, targets, stats, arg, cfg) -> dict:
    """Every argument of one `_merge_kernel` launch, by name: the workspace pf [2, M, SPLIT_V],
    pi [M, SPLIT_V] in, the outputs stats [P, M], arg [M] out."""
    split_v = cfg["SPLIT_V"]
    return dict(PF=pf, PI=pi, LOGITS=logits, TEMP=temperature, TARGETS=targets, OUT=stats, OUT_ARG=arg,
                M=logits.shape[0], stride_row=logits.stride(0), stride_plane=pf.stride(0),
                stride_out=stats.stride(0), SPLIT_V=split_v, SPLIT_P=triton.next_power_of_2(split_v),
                BLOCK_R=MERGE_ROWS, HAS_TARGET=targets is not None, NO_ARG=_NO_ARG)


def _run(logits, temperature, targets, cfg, num_warps: int, num_stages: int):
    """Both kernels (the merge only when SPLIT_V > 1): (stats [P, M] fp32, argmax [M] int64)."""
    import torch
    M, V = logits.shape
    split_v = cfg["SPLIT_V"]
    has_target = targets is not None
    empty = lambda shape, dt: torch.empty(shape, dtype=dt, device=logits.device)      # noqa: E731
    pf, pi = _buffers(M, split_v, has_target, empty)
    if M == 0:
        return (pf, pi) if split_v == 1 else _buffers(M, 1, has_target, empty)
    _kernel[(M * split_v,)](**_kernel_args(logits, temperature, targets, pf, pi, cfg),
                            num_warps=num_warps, num_stages=num_stages)
    if split_v == 1:
        return pf, pi
    stats, arg = _buffers(M, 1, has_target, empty)
    _merge_kernel[(triton.cdiv(M, MERGE_ROWS),)](**_merge_kernel_args(pf, pi, logits, temperature, targets, stats,
                                                                      arg, cfg), num_warps=4)
    return stats, arg


def _check_inputs(logits, temperature, targets):
    import torch
    if logits.dim() != 2:
        raise ValueError(f"expected logits [M, V]; got {tuple(logits.shape)}")
    M, V = logits.shape
    if logits.dtype not in (torch.float32, torch.bfloat16, torch.float16):
        raise ValueError(f"logits dtype {logits.dtype} is not fp32, bf16 or fp16")
    if V < 1:
        raise ValueError("the vocabulary is empty (V = 0)")
    if temperature is not None and (temperature.shape != (M,) or temperature.dtype != torch.float32):
        raise ValueError(f"temperature must be fp32 [{M}]; got {temperature.dtype} {tuple(temperature.shape)}")
    if targets is not None and (targets.shape != (M,) or targets.dtype != torch.int64):
        raise ValueError(f"targets must be int64 [{M}]; got {targets.dtype} {tuple(targets.shape)}")


def vocab_sample_stats_buffers(logits, temperature=None, targets=None, *, BLOCK_V: int = 4096,
                               SPLIT_V: int = 1, num_warps: int = 8, num_stages: int = 1):
    """vocab_sample_stats's outputs as its two buffers: (stats [P, M] fp32, argmax [M] int64)."""
    import torch
    _check_inputs(logits, temperature, targets)
    cfg = {"BLOCK_V": BLOCK_V, "SPLIT_V": SPLIT_V}
    _check_cfg(cfg)
    if logits.stride(1) != 1:
        logits = logits.contiguous()
    if temperature is None:
        temperature = torch.ones(logits.shape[0], dtype=torch.float32, device=logits.device)
    temperature = temperature.contiguous()
    if targets is not None:
        targets = targets.contiguous()
    return _run(logits, temperature, targets, cfg, num_warps, num_stages)


def vocab_sample_stats(logits, temperature=None, targets=None, *, BLOCK_V: int = 4096, SPLIT_V: int = 1,
                       num_warps: int = 8, num_stages: int = 1):
    """Per-row statistics of y = logits / temperature[:, None] for logits [M, V] (fp32 / bf16 /
    fp16), temperature [M] fp32 (None: all 1; <= 0 taken as 1), targets [M] int64 (None: no
    log-probs; a negative target gives 0; others must lie in [0, V)).
    Returns (row_max [M] fp32, argmax [M] int64 (first index on ties), lse [M] fp32,
    logprob [M] fp32 or None); row_max, lse and logprob are rows of one [P, M] buffer."""
    stats, arg = vocab_sample_stats_buffers(logits, temperature, targets, BLOCK_V=BLOCK_V, SPLIT_V=SPLIT_V,
                                            num_warps=num_warps, num_stages=num_stages)
    return stats[0], arg, stats[1], (stats[2] if targets is not None else None)


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """logits with an LM head's spread (std 3) and a per-row offset (+-4); temperature per row
    in [0.5, 1.5); targets (when the point asks for them) uniform over the vocabulary."""
    import torch
    gen = torch.Generator(device=device).manual_seed(seed)
    dt = _torch_dtype(point.get("dtype", "bf16"))
    M, V = point["M"], point["V"]
    logits = 3.0 * torch.randn((M, V), generator=gen, device=device)
    logits += 8.0 * torch.rand((M, 1), generator=gen, device=device) - 4.0
    temperature = 0.5 + torch.rand((M,), generator=gen, device=device)
    targets = torch.randint(0, V, (M,), generator=gen, device=device) if point.get("target", False) else None
    return {"logits": logits.to(dt), "temperature": temperature, "targets": targets}


def launch(inputs, cfg):
    """stats [P, M] fp32: row_max, lse (and the target log-probs); argmax, the other output,
    is checked by the tests (tests/test_examples_round8_d.py)."""
    stats, _ = vocab_sample_stats_buffers(inputs["logits"], inputs["temperature"], inputs.get("targets"),
                                          BLOCK_V=cfg["BLOCK_V"], SPLIT_V=cfg["SPLIT_V"],
                                          num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
    return stats


def _scaled(inputs):
    import torch
    t = inputs["temperature"]
    t = torch.where(t > 0, t, torch.ones_like(t))
    return inputs["logits"].float() / t[:, None]


def reference_argmax(inputs):
    """argmax [M] int64 of the logits (= of logits / T for T > 0), the first index on ties."""
    return inputs["logits"].float().argmax(dim=1)


def reference(inputs):
    """fp32 stats [P, M]: max and logsumexp of y = logits / T, and y[target] - lse (0 for a
    negative target) when targets are given."""
    import torch
    y = _scaled(inputs)
    lse = torch.logsumexp(y, dim=1)
    out = [y.amax(dim=1), lse]
    tg = inputs.get("targets")
    if tg is not None:
        ok = tg >= 0
        yt = y.gather(1, torch.where(ok, tg, 0)[:, None])[:, 0]
        out.append(torch.where(ok, yt - lse, torch.zeros_like(lse)))
    return torch.stack(out)


def torch_baseline(inputs):
    """Eager torch, as vLLM's sampler does it: an fp32 copy of the logits divided by the
    temperature, then max (values and indices), logsumexp and the target gather. Returns the
    stats [P, M] like launch."""
    import torch
    t = inputs["temperature"]
    y = inputs["logits"].float().div_(torch.where(t > 0, t, torch.ones_like(t))[:, None])
    mx, _ = y.max(dim=1)
    lse = torch.logsumexp(y, dim=1)
    out = [mx, lse]
    tg = inputs.get("targets")
    if tg is not None:
        ok = tg >= 0
        out.append(torch.where(ok, y.gather(1, tg.clamp(min=0)[:, None])[:, 0] - lse, torch.zeros_like(lse)))
    return torch.stack(out)


def bytes_moved(point) -> int:
    """The logits read once, temperature (4 B) and targets (8 B, when given) read once a row,
    the outputs written once (stats 4 B x P and argmax 8 B a row). Not counted: the split's
    workspace round trip (16 B a row and split) and the target logit's re-read (one element
    a row)."""
    M, V = point["M"], point["V"]
    has_target = bool(point.get("target", False))
    return M * V * _elem_bytes(point.get("dtype", "bf16")) + M * (4 + (8 if has_target else 0)
                                                                 + 4 * _planes(has_target) + 8)


def flops(point) -> int:
    """Per logit: the max (with its index), the FMA x * c - m * c (2), exp2, the add. Per-row
    and per-chunk tails are not counted."""
    return 5 * point["M"] * point["V"]


def grid(cfg, point) -> int:
    """`_kernel`: one CTA per (row, split)."""
    return point["M"] * cfg["SPLIT_V"]


def loop_iterations(cfg, point) -> int:
    """Column chunks per CTA (a split's share, ceil(ceil(V / BLOCK_V) / SPLIT_V))."""
    return triton.cdiv(triton.cdiv(point["V"], cfg["BLOCK_V"]), cfg["SPLIT_V"])


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory):
    with SPLIT_V == 1 its outputs are the final stats and argmax (the tensors' bytes are
    bytes_moved), with SPLIT_V > 1 the workspace."""
    import torch
    dt = _torch_dtype(point.get("dtype", "bf16"))
    M, V = point["M"], point["V"]
    has_target = bool(point.get("target", False))
    logits = torch.empty((M, V), dtype=dt, device="meta")
    temperature = torch.empty((M,), dtype=torch.float32, device="meta")
    targets = torch.empty((M,), dtype=torch.int64, device="meta") if has_target else None
    pf, pi = _buffers(M, cfg["SPLIT_V"], has_target, lambda shape, d: torch.empty(shape, dtype=d, device="meta"))
    return _kernel_args(logits, temperature, targets, pf, pi, cfg)


def merge_example_args(cfg, point) -> dict:
    """The launch arguments of `_merge_kernel` (run when SPLIT_V > 1) for `cfg` at `point`, on
    the meta device; launched with num_warps=4, one CTA per MERGE_ROWS rows."""
    import torch
    if cfg["SPLIT_V"] < 2:
        raise ValueError("SPLIT_V == 1 runs no merge")
    dt = _torch_dtype(point.get("dtype", "bf16"))
    M, V = point["M"], point["V"]
    has_target = bool(point.get("target", False))
    meta = lambda shape, d: torch.empty(shape, dtype=d, device="meta")      # noqa: E731
    logits = meta((M, V), dt)
    temperature = meta((M,), torch.float32)
    targets = meta((M,), torch.int64) if has_target else None
    pf, pi = _buffers(M, cfg["SPLIT_V"], has_target, meta)
    stats, arg = _buffers(M, 1, has_target, meta)
    return _merge_kernel_args(pf, pi, logits, temperature, targets, stats, arg, cfg)


def secondary_kernels(cfg, point) -> list[dict]:
    """The merge (run when SPLIT_V > 1), for rank: one CTA per MERGE_ROWS rows, one step that reads
    its rows' SPLIT_V partials (max, sum and argmax: 16 B a split) just written, so from L2."""
    if cfg["SPLIT_V"] < 2:
        return []
    return [{"name": "_merge_kernel", "grid": -(-point["M"] // MERGE_ROWS), "iterations": 1,
             "tile_bytes": MERGE_ROWS * cfg["SPLIT_V"] * 16, "blocks_per_sm": 8}]
