"""Generalized Jensen-Shannon divergence distillation loss, forward + the gradient with respect
to the student logits in one launch (the "JSD" loss of Liger's distillation kernels, written
here over raw logits), a bare @triton.jit kernel + its launcher.

For one row r (a token) with student logits s[r, :] and teacher logits t[r, :] over a
vocabulary of V entries, and beta in [0, 1]:

    log q = log_softmax(s),  log p = log_softmax(t)            (student Q, teacher P)
    m     = beta p + (1 - beta) q                               (the mixture M)
    loss_row = beta KL(P || M) + (1 - beta) KL(Q || M)
             = beta sum_j p_j (log p_j - log m_j) + (1 - beta) sum_j q_j (log q_j - log m_j)
    loss  = sum_r loss_row / n,     n = the rows not ignored (labels[r] != -100; all BT rows
                                    when no labels are given), an ignored row's loss_row = 0
    grad[r, j] = d loss / d s[r, j] = (1 - beta) / n * q_j ((log q_j - log m_j) - KL(Q || M)),
                 0 on an ignored row.

(The gradient: with the teacher fixed, d loss_row / d q_j = (1 - beta)(log q_j - log m_j) --
the two 1 / m_j terms cancel against the 1 of d(q log q) -- and the softmax Jacobian
q_j (g_j - sum_i q_i g_i) turns it into the above; sum_i q_i g_i = (1 - beta) KL(Q || M).
beta = 0 or 1 gives M = Q or M = P and a loss of 0: the endpoints are degenerate here, unlike
Liger's special-cased forward / reverse KL.)

Layouts: student, teacher: [BT, V] bf16 / fp16 / fp32 (one dtype for both), unit stride along
V, any row stride; labels: optional [BT] int64; outputs: loss_rows [BT] fp32 (each row's
loss_row, unscaled; the wrapper sums and divides by n), grad [BT, V] in the student's dtype.

One CTA per row, three walks over the row in BLOCK_V chunks (all work in log2 units: exp2 is
one MUFU.EX2 on the special-function unit; log2 lowers to an FMA polynomial, ~20 instructions):
  1. online log-sum-exp of both rows: running max and sum of exp2 (rescaled when the max
     grows), one exp2 per element per tensor, a max and a sum reduction per tensor per chunk;
  2. the loss: q, p (two exp2), log2 m (one log2) per element, the two KL sums accumulated
     per lane and reduced once after the loop; the row's KL(Q || M) is then known;
  3. the gradient, which needs that full-row KL(Q || M) (hence a third walk). GRAD_FIXUP=0
     recomputes q, p and log2 m from both rows (2 exp2 + 1 log2 per element, reads s and t);
     GRAD_FIXUP=1 has walk 2 also store the partial h_j = (1 - beta)/n q_j (log q_j - log m_j)
     into grad and walk 3 read it back with the student row only: grad = h - (1-beta)/n KL q
     (1 exp2 per element, but grad written twice and read once more). The trade: 6 exp2 +
     2 log2 vs 5 exp2 + 1 log2 per element against 7 vs 8 row-sized transfers (the rows
     re-read in walks 2 and 3 come from L2 only while the resident rows fit in it).
An ignored row (labels given, labels[r] == -100) stores loss 0 and walks its grad row once,
storing zeros, without reading the logits.

The three walks are tl.range(num_stages=LOOP_STAGES): 1 = plain loads; >= 2 = the next
LOOP_STAGES - 1 chunks' loads (s and t, or s and the stored partial) copied ahead into shared
memory with cp.async (Triton pipelines a loop without a dot only on an explicit stage count).

Tunables: BLOCK_V (power of two >= 16, the chunk), GRAD_FIXUP (0 / 1, above), LOOP_STAGES
(>= 1), num_warps, num_stages (the launch's: no dot, the loops carry their own stage count,
so it changes nothing in the cubin).
Problem parameters (a workload point): BT (rows), V (vocabulary), dtype (bf16 / fp16 / fp32),
beta, ignore (optional: the fraction of rows whose label is -100; with the key present the
kernel reads labels, default: no labels).
"""

from __future__ import annotations

import triton
import triton.language as tl

IGNORE_INDEX = -100


@triton.jit
def _kernel(S, T, LABELS, LOSS, G, stride_s, stride_t, stride_g, n_cols, beta, grad_scale, ignore_index,
            HAS_LABELS: tl.constexpr, GRAD_FIXUP: tl.constexpr, BLOCK_V: tl.constexpr,
            LOOP_STAGES: tl.constexpr):
    LOG2E: tl.constexpr = 1.4426950408889634
    LN2: tl.constexpr = 0.6931471805599453
    TINY: tl.constexpr = 1e-30          # keeps log2 m finite where p and q both underflow to 0
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK_V)
    g_row = G + row * stride_g
    if HAS_LABELS:
        if tl.load(LABELS + row) == ignore_index:
            zero = tl.zeros([BLOCK_V], G.dtype.element_ty)
            for c0 in range(0, n_cols, BLOCK_V):
                cols = c0 + offs
                tl.store(g_row + cols, zero, mask=cols < n_cols)
            tl.store(LOSS + row, 0.0)
            return
    s_row = S + row * stride_s
    t_row = T + row * stride_t

    # walk 1: online log-sum-exp of both rows (log2 units)
    m_s = -float("inf")
    z_s = 0.0
    m_t = -float("inf")
    z_t = 0.0
    for c0 in tl.range(0, n_cols, BLOCK_V, num_stages=LOOP_STAGES):
        cols = c0 + offs
        mask = cols < n_cols
        a = tl.load(s_row + cols, mask=mask, other=-float("inf")).to(tl.float32) * LOG2E
        b = tl.load(t_row + cols, mask=mask, other=-float("inf")).to(tl.float32) * LOG2E
        ms_new = tl.maximum(m_s, tl.max(a, 0))       # finite: every chunk holds a column
        mt_new = tl.maximum(m_t, tl.max(b, 0))
        z_s = z_s * tl.exp2(m_s - ms_new) + tl.sum(tl.exp2(a - ms_new), 0)
        z_t = z_t * tl.exp2(m_t - mt_new) + tl.sum(tl.exp2(b - mt_new), 0)
        m_s = ms_new
        m_t = mt_new
    lse_s = m_s + tl.log2(z_s)
    lse_t = m_t + tl.log2(z_t)
    w_q = 1.0 - beta
    coef = w_q * grad_scale * LN2           # d loss / d s = coef * q * (log2 q - log2 m - KL_q)

    # walk 2: the two KL sums (log2 units), per lane, reduced once
    acc_q = tl.zeros([BLOCK_V], tl.float32)
    acc_p = tl.zeros([BLOCK_V], tl.float32)
    for c0 in tl.range(0, n_cols, BLOCK_V, num_stages=LOOP_STAGES):
        cols = c0 + offs
        mask = cols < n_cols
        lq = tl.load(s_row + cols, mask=mask, other=0.0).to(tl.float32) * LOG2E - lse_s
        lp = tl.load(t_row + cols, mask=mask, other=0.0).to(tl.float32) * LOG2E - lse_t
        q = tl.where(mask, tl.exp2(lq), 0.0)
        p = tl.where(mask, tl.exp2(lp), 0.0)
        lm = tl.log2(beta * p + w_q * q + TINY)
        dq = q * (lq - lm)
        acc_q += dq
        acc_p += p * (lp - lm)
        if GRAD_FIXUP:
            tl.store(g_row + cols, (coef * dq).to(G.dtype.element_ty), mask=mask)
    kl_q = tl.sum(acc_q, 0)
    kl_p = tl.sum(acc_p, 0)
    tl.store(LOSS + row, (beta * kl_p + w_q * kl_q) * LN2)

    # walk 3: the gradient, now that the row's KL(Q || M) is known
    for c0 in tl.range(0, n_cols, BLOCK_V, num_stages=LOOP_STAGES):
        cols = c0 + offs
        mask = cols < n_cols
        lq = tl.load(s_row + cols, mask=mask, other=0.0).to(tl.float32) * LOG2E - lse_s
        q = tl.exp2(lq)
        if GRAD_FIXUP:
            h = tl.load(g_row + cols, mask=mask, other=0.0).to(tl.float32)
            g = h - (coef * kl_q) * q
        else:
            lp = tl.load(t_row + cols, mask=mask, other=0.0).to(tl.float32) * LOG2E - lse_t
            lm = tl.log2(beta * tl.exp2(lp) + w_q * q + TINY)
            g = coef * q * (lq - lm - kl_q)
        tl.store(g_row + cols, g.to(G.dtype.element_ty), mask=mask)


# ---------------------------------------------------------------- launcher
DTYPES = ("bf16", "fp16", "fp32")
TUNABLES = ("BLOCK_V", "GRAD_FIXUP", "LOOP_STAGES", "num_warps", "num_stages")
BASELINE = {"BLOCK_V": 4096, "GRAD_FIXUP": 0, "LOOP_STAGES": 2, "num_warps": 8, "num_stages": 1}

# Distillation losses at real vocabularies. Every point's rows (a student and a teacher row,
# 0.26-0.6 MB a row pair) are re-read twice after walk 1; whether those re-reads stay in L2
# depends on how many rows are resident at once (132 SMs x CTAs a SM), so the points differ in
# how much of the 3 walks is DRAM-bound vs special-function-bound.
POINTS = [
    # Llama-3-8B student from a Llama-3-70B teacher, 4k tokens: 2 x 1.05 GB in, 1.05 GB grad out;
    # 0.5 MB a row pair (many resident rows outgrow L2: walks 2-3 largely re-read DRAM)
    {"BT": 4096, "V": 128256, "dtype": "bf16", "beta": 0.5},
    # Qwen2.5 (vocab 151936) 2k tokens, a 10 % of rows masked (prompt tokens), beta 0.1:
    # 2 x 0.62 GB in, 0.62 GB out; ragged work: ignored rows only store zeros
    {"BT": 2048, "V": 151936, "dtype": "bf16", "beta": 0.1, "ignore": 0.1},
    # fp32 logits at a 32000 vocabulary (Llama-2 / Mistral), 8k tokens: 2 x 1.05 GB in, 1.05 GB out;
    # 0.25 MB a row pair: ~130-260 resident row pairs fit the 50 MB L2, the re-reads can hit it
    {"BT": 8192, "V": 32000, "dtype": "fp32", "beta": 0.5},
]


def _torch_dtype(name: str):
    import torch
    try:
        return {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}") from None


def _elem_bytes(name: str) -> int:
    _torch_dtype(name)
    return 4 if name == "fp32" else 2


def _n_ignored(point) -> int:
    frac = point.get("ignore", 0.0)
    if not 0.0 <= frac <= 1.0:
        raise ValueError(f"ignore={frac} is not a fraction in [0, 1]")
    return round(frac * point["BT"])


def _check_cfg(cfg) -> None:
    v = cfg["BLOCK_V"]
    if v < 16 or v & (v - 1):
        raise ValueError(f"BLOCK_V={v} must be a power of two >= 16")
    if cfg.get("GRAD_FIXUP", 0) not in (0, 1):
        raise ValueError(f"GRAD_FIXUP={cfg['GRAD_FIXUP']} must be 0 or 1")
    if cfg.get("LOOP_STAGES", 1) < 1:
        raise ValueError(f"LOOP_STAGES={cfg['LOOP_STAGES']} must be >= 1")


def _kernel_args(student, teacher, labels, loss_rows, grad, beta, n, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it).
    labels None: no ignored rows (LABELS gets a dummy pointer, never read)."""
    return dict(S=student, T=teacher, LABELS=labels if labels is not None else loss_rows, LOSS=loss_rows, G=grad,
                stride_s=student.stride(0), stride_t=teacher.stride(0), stride_g=grad.stride(0),
                n_cols=student.shape[1], beta=float(beta), grad_scale=1.0 / max(n, 1), ignore_index=IGNORE_INDEX,
                HAS_LABELS=labels is not None, GRAD_FIXUP=int(cfg["GRAD_FIXUP"]), BLOCK_V=cfg["BLOCK_V"],
                LOOP_STAGES=cfg["LOOP_STAGES"])


def jsd_rows(student, teacher, labels=None, beta: float = 0.5, *, BLOCK_V: int = 4096, GRAD_FIXUP: int = 0,
             LOOP_STAGES: int = 2, num_warps: int = 8, num_stages: int = 1, n=None):
    """One `_kernel` launch: (loss_rows [BT] fp32, grad [BT, V] of the student's dtype) for student /
    teacher logits [BT, V] and optional int64 labels [BT] (-100: ignored). grad is of the mean
    loss over the n rows not ignored (n counted on the host when not given; a sync)."""
    import torch
    if student.dim() != 2 or teacher.shape != student.shape:
        raise ValueError(f"expected student and teacher [BT, V] alike; got {tuple(student.shape)}, "
                         f"{tuple(teacher.shape)}")
    if student.dtype not in (torch.bfloat16, torch.float16, torch.float32) or teacher.dtype != student.dtype:
        raise ValueError(f"student and teacher must share one of bf16 / fp16 / fp32; got {student.dtype}, "
                         f"{teacher.dtype}")
    if not 0.0 <= float(beta) <= 1.0:
        raise ValueError(f"beta={beta} is not in [0, 1]")
    if labels is not None and (labels.dtype != torch.int64 or labels.shape != (student.shape[0],)):
        raise ValueError(f"labels must be int64 [BT={student.shape[0]}]; got {labels.dtype} {tuple(labels.shape)}")
    cfg = {"BLOCK_V": BLOCK_V, "GRAD_FIXUP": GRAD_FIXUP, "LOOP_STAGES": LOOP_STAGES}
    _check_cfg(cfg)
    BT, V = student.shape
    if student.stride(1) != 1:
        student = student.contiguous()
    if teacher.stride(1) != 1:
        teacher = teacher.contiguous()
    if n is None:
        n = BT if labels is None else int((labels != IGNORE_INDEX).sum())
    loss_rows = torch.empty((BT,), dtype=torch.float32, device=student.device)
    grad = torch.empty((BT, V), dtype=student.dtype, device=student.device)
    if BT == 0 or V == 0:
        return loss_rows.zero_(), grad
    labels = labels.contiguous() if labels is not None else None
    _kernel[(BT,)](**_kernel_args(student, teacher, labels, loss_rows, grad, beta, n, cfg), num_warps=num_warps,
                   num_stages=num_stages)
    return loss_rows, grad


def jsd_loss(student, teacher, labels=None, beta: float = 0.5, **cfg):
    """(loss: the mean over the rows not ignored, a 0-d fp32 tensor; grad w.r.t. the student logits)."""
    import torch
    n = student.shape[0] if labels is None else int((labels != IGNORE_INDEX).sum())
    loss_rows, grad = jsd_rows(student, teacher, labels, beta, n=n, **cfg)
    return loss_rows.sum() / max(n, 1) if n else torch.zeros((), device=student.device), grad


def _ignored_rows(point, seed: int):
    """The ignored row ids (a CPU tensor): drawn on the CPU so make_inputs and cta_iterations agree."""
    import torch
    gen = torch.Generator(device="cpu").manual_seed(seed)
    return torch.randperm(point["BT"], generator=gen)[:_n_ignored(point)]


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """Teacher logits with an LM head's spread (std 3); the student a noisy, flatter copy
    (0.8 t + 1.5 noise: a moderate divergence); labels (when the point has `ignore`) uniform token
    ids with the `ignore` fraction of rows (chosen on the CPU, by seed) set to -100."""
    import torch
    dt = _torch_dtype(point.get("dtype", "bf16"))
    BT, V = point["BT"], point["V"]
    beta = float(point.get("beta", 0.5))
    if not 0.0 <= beta <= 1.0:
        raise ValueError(f"beta={beta} is not in [0, 1]")
    labels = None
    if "ignore" in point:
        cpu = torch.Generator(device="cpu").manual_seed(seed + 1)
        labels = torch.randint(0, V, (BT,), generator=cpu)
        labels[_ignored_rows(point, seed)] = IGNORE_INDEX
        labels = labels.to(device)
    gen = torch.Generator(device=device).manual_seed(seed)
    teacher = torch.randn((BT, V), generator=gen, device=device).mul_(3.0)
    student = torch.randn((BT, V), generator=gen, device=device).mul_(1.5).add_(teacher, alpha=0.8).to(dt)
    n = BT - _n_ignored(point) if labels is not None else BT
    return {"student": student, "teacher": teacher.to(dt), "labels": labels, "beta": beta, "n": n}


def launch(inputs, cfg):
    """The gradient w.r.t. the student logits (the launch's large output; the per-row losses of the
    same launch are checked by the tests through jsd_rows)."""
    return jsd_rows(inputs["student"], inputs["teacher"], inputs["labels"], inputs["beta"], n=inputs["n"],
                    BLOCK_V=cfg["BLOCK_V"], GRAD_FIXUP=cfg["GRAD_FIXUP"], LOOP_STAGES=cfg["LOOP_STAGES"],
                    num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])[1]


def _loss_rows_autograd(student, teacher, labels, beta, dtype):
    """Per-row losses from torch's log_softmax in `dtype`, and the mean's gradient by autograd."""
    import torch
    s = student.to(dtype).detach().requires_grad_(True)
    lq = torch.log_softmax(s, dim=-1)
    lp = torch.log_softmax(teacher.to(dtype), dim=-1)
    q, p = lq.exp(), lp.exp()
    lm = torch.log(beta * p + (1.0 - beta) * q)
    rows = beta * (p * (lp - lm)).sum(-1) + (1.0 - beta) * (q * (lq - lm)).sum(-1)
    if labels is not None:
        rows = torch.where(labels != IGNORE_INDEX, rows, torch.zeros_like(rows))
        n = int((labels != IGNORE_INDEX).sum())
    else:
        n = student.shape[0]
    loss = rows.sum() / max(n, 1)
    (grad,) = torch.autograd.grad(loss, s)
    return rows.detach(), grad


def reference_rows(inputs):
    """(loss_rows, grad) in fp64 by autograd through torch's log_softmax (not the closed form above)."""
    import torch
    with torch.enable_grad():
        rows, grad = _loss_rows_autograd(inputs["student"], inputs["teacher"], inputs["labels"], inputs["beta"],
                                         torch.float64)
    return rows.float(), grad.float()


def reference(inputs):
    """The fp64 gradient (fp32 out), as launch returns it."""
    return reference_rows(inputs)[1]


def torch_baseline(inputs):
    """Eager torch as a user writes it: fp32 log_softmax, the mixture, autograd; grad in the input dtype."""
    import torch
    with torch.enable_grad():
        _, grad = _loss_rows_autograd(inputs["student"], inputs["teacher"], inputs["labels"], inputs["beta"],
                                      torch.float32)
    return grad.to(inputs["student"].dtype)


def bytes_moved(point) -> int:
    """The student and teacher rows not ignored read once, grad written for every row, labels read
    (when present) and the per-row loss written (the walks' re-reads are not counted: avoidable
    in principle)."""
    BT, V = point["BT"], point["V"]
    e = _elem_bytes(point.get("dtype", "bf16"))
    labels = 8 * BT if "ignore" in point else 0
    return 2 * (BT - _n_ignored(point)) * V * e + BT * V * e + labels + 4 * BT


def flops(point) -> int:
    """Per element of a row not ignored, counting an exp2 / log2 as one: walk 1 ~10 (scale, max,
    subtract, exp2, add, both tensors), walk 2 ~16, walk 3 ~14 (GRAD_FIXUP=0's recompute)."""
    return 40 * (point["BT"] - _n_ignored(point)) * point["V"]


def grid(cfg, point) -> int:
    """One CTA per row."""
    return point["BT"]


def loop_iterations(cfg, point) -> int:
    """The chunks of a row not ignored: three walks of ceil(V / BLOCK_V) each."""
    return 3 * triton.cdiv(point["V"], cfg["BLOCK_V"])


def cta_iterations(cfg, point) -> list[int]:
    """Per row (program id order): 3 walks of ceil(V / BLOCK_V) chunks, or for a row ignored (make_inputs'
    seed-0 choice) one walk of ceil(V / BLOCK_V) zero stores (no loads)."""
    chunks = triton.cdiv(point["V"], cfg["BLOCK_V"])
    its = [3 * chunks] * point["BT"]
    if _n_ignored(point):
        for r in _ignored_rows(point, 0).tolist():
            its[r] = chunks
    return its


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory)."""
    import torch
    _check_cfg(cfg)
    dt = _torch_dtype(point.get("dtype", "bf16"))
    BT, V = point["BT"], point["V"]
    student = torch.empty((BT, V), dtype=dt, device="meta")
    teacher = torch.empty((BT, V), dtype=dt, device="meta")
    labels = torch.empty((BT,), dtype=torch.int64, device="meta") if "ignore" in point else None
    loss_rows = torch.empty((BT,), dtype=torch.float32, device="meta")
    grad = torch.empty((BT, V), dtype=dt, device="meta")
    return _kernel_args(student, teacher, labels, loss_rows, grad, point.get("beta", 0.5), BT - _n_ignored(point),
                        cfg)
