"""Small @triton.jit kernels the compile tests build (CPU only: compiled, never launched)."""

import triton
import triton.language as tl


@triton.jit
def add_kernel(X, Y, Z, N, BLOCK: tl.constexpr):
    """Z = X + Y over N elements, BLOCK per program."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < N
    tl.store(Z + offs, tl.load(X + offs, mask=mask) + tl.load(Y + offs, mask=mask), mask=mask)


@triton.jit(do_not_specialize=["N"])
def add_kernel_nospec(X, Y, Z, N, BLOCK: tl.constexpr):
    """add_kernel whose N the launcher never specialises (no ':16', no ':1')."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < N
    tl.store(Z + offs, tl.load(X + offs, mask=mask) + tl.load(Y + offs, mask=mask), mask=mask)


@triton.jit
def matmul_kernel(A, B, C, M, N, K, stride_am, stride_bk, stride_cm,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """C = A @ B for row-major fp16 A (M x K), B (K x N); a K loop, so num_stages pipelines loads.
    Inner strides are 1; the outer strides are arguments, so ':16' on them (and on the
    pointers) decides whether loads vectorise and the loop gets pipelined."""
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a = A + rm[:, None] * stride_am + rk[None, :]
    b = B + rk[:, None] * stride_bk + rn[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        acc += tl.dot(tl.load(a, mask=rk[None, :] < K - k * BK, other=0.0),
                      tl.load(b, mask=rk[:, None] < K - k * BK, other=0.0))
        a += BK
        b += BK * stride_bk
    c = C + rm[:, None] * stride_cm + rn[None, :]
    tl.store(c, acc.to(tl.float16), mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def failing_kernel(X, BLOCK: tl.constexpr):
    """Fails to compile whenever BLOCK > 64 (a compile-time assertion)."""
    tl.static_assert(BLOCK <= 64, "BLOCK must be at most 64")
    tl.store(X + tl.arange(0, BLOCK), tl.zeros((BLOCK,), dtype=tl.float32))


@triton.jit(noinline=True)
def _scale(x, y):
    return tl.exp(x) * tl.log(y) + x / y


@triton.jit
def call_kernel(X, Y, Z, N, BLOCK: tl.constexpr):
    """Reductions, a printf and a non-inlined call: a stack frame without spills."""
    offs = tl.arange(0, BLOCK)
    x = tl.sum(tl.load(X + offs, mask=offs < N, other=0.0), axis=0)
    y = tl.sum(tl.load(Y + offs, mask=offs < N, other=1.0), axis=0)
    tl.device_print("x", x)
    tl.store(Z, _scale(x, y))


ADD_SIG = {"X": "*fp16:16", "Y": "*fp16:16", "Z": "*fp16:16", "N": "i32"}
MM_SIG_HINTED = {"A": "*fp16:16", "B": "*fp16:16", "C": "*fp16:16", "M": "i32", "N": "i32", "K": "i32",
                 "stride_am": "i32:16", "stride_bk": "i32:16", "stride_cm": "i32:16"}
MM_SIG_PLAIN = {name: ty.split(":")[0] for name, ty in MM_SIG_HINTED.items()}
MM_CONSTS = {"BM": 64, "BN": 64, "BK": 32}


@triton.jit(do_not_specialize_on_alignment=["M"])
def annotated_kernel(X, N: tl.int64, M, scale: tl.float32, BLOCK: tl.constexpr):
    """Annotated and alignment-unspecialised parameters (launcher rules beyond the defaults)."""
    offs = tl.arange(0, BLOCK)
    tl.store(X + offs, tl.load(X + offs, mask=offs < N + M) * scale, mask=offs < N + M)


@triton.jit
def typed_kernel(X, N, DTYPE: tl.constexpr, BLOCK: tl.constexpr):
    # "fp16" (a str) and tl.float16 print the same, so Triton's own cache key cannot tell
    # them apart; the two compile to different code (a str never equals a dtype).
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(X + offs, mask=offs < N)
    if DTYPE == "fp16":
        x = x * 3.0
    tl.store(X + offs, x, mask=offs < N)


TYPED_SIG = {"X": "*fp32:16", "N": "i32"}


@triton.jit
def _no_such_method(x):
    return x.nonexistent_method()


@triton.jit
def nested_error_kernel(X, BLOCK: tl.constexpr):
    """Fails in a helper: Triton's CompilationError then ends in a bare '^' line."""
    x = tl.load(X + tl.arange(0, BLOCK))
    tl.store(X + tl.arange(0, BLOCK), _no_such_method(x))


@triton.jit
def flash_attention_fwd(Q, K, V, O, seq_len, stride_qm, stride_kn, stride_vn, stride_om, sm_scale,
                        BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr):
    """One head of causal-free attention forward, online softmax (FlashAttention-2 shape):
    O[m] = softmax(Q[m] K^T * sm_scale) V for a BLOCK_M row tile, looping over BLOCK_N key tiles."""
    start_m = tl.program_id(0) * BLOCK_M
    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(Q + offs_m[:, None] * stride_qm + offs_d[None, :], mask=offs_m[:, None] < seq_len, other=0.0)
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
    for start_n in range(0, seq_len, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        ok = offs_n < seq_len
        k = tl.load(K + offs_n[:, None] * stride_kn + offs_d[None, :], mask=ok[:, None], other=0.0)
        v = tl.load(V + offs_n[:, None] * stride_vn + offs_d[None, :], mask=ok[:, None], other=0.0)
        s = tl.dot(q, tl.trans(k)) * sm_scale
        s = tl.where(ok[None, :], s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        p = tl.exp(s - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    out = acc / l_i[:, None]
    tl.store(O + offs_m[:, None] * stride_om + offs_d[None, :], out.to(O.dtype.element_ty),
             mask=offs_m[:, None] < seq_len)
