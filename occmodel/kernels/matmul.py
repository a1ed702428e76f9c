"""A tiled fp16/bf16 GEMM, C = A @ B, with grouped tile order.

Each CTA computes one BLOCK_M x BLOCK_N tile of C, walking K in BLOCK_K steps; tiles
are handed out GROUP_M rows of tiles at a time so that CTAs running together share
A rows and B columns in L2. Accumulation is fp32, the store casts to C's dtype.

What Triton does with it (triton 3.9, measured on the card's sweep):

* the A and B tile loads in the K loop are software-pipelined (cp.async on
  mma.sync archs; on sm_90 with wgmma and sm_100 with tcgen05 too, as async copies
  into an S-deep ring);
* the dot is mma.sync (sm_80, sm_86, sm_89, sm_120; and sm_90 / sm_100 when
  BLOCK_M < 64 or fewer than 4 warps), wgmma on sm_90 (BLOCK_M >= 64, num_warps a
  multiple of 4) and tcgen05 on sm_100 (BLOCK_M >= 64, 4 or 8 warps; the accumulator
  lives in tensor memory, and two 8-byte mbarriers sit in shared memory);
* after the loop the accumulator is converted to the store layout through shared
  memory; that scratch reuses the ring's space (liveness), so the total is a Max().
"""

from __future__ import annotations

from typing import Any, Mapping

from .._lazy import sympy
import triton
import triton.language as tl

from ..card import Config, KernelCard, Param


@triton.jit
def _kernel(A, B, C, M, N, K,
            stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
            BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    # Grouped order: GROUP_M rows of tiles, column by column.
    per_group = GROUP_M * tiles_n
    first_m = (pid // per_group) * GROUP_M
    group_rows = tl.minimum(tiles_m - first_m, GROUP_M)
    pid_m = first_m + (pid % per_group) % group_rows
    pid_n = (pid % per_group) // group_rows

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    # Rows / columns past the edge are wrapped (their results are not stored), so
    # only the K tail needs a mask inside the loop.
    a_ptr = A + (offs_m % M)[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptr = B + offs_k[:, None] * stride_bk + (offs_n % N)[None, :] * stride_bn
    acc = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - k * BLOCK_K
        a = tl.load(a_ptr, mask=offs_k[None, :] < k_left, other=0.0)
        b = tl.load(b_ptr, mask=offs_k[:, None] < k_left, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptr += BLOCK_K * stride_ak
        b_ptr += BLOCK_K * stride_bk
    c_ptr = C + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptr, acc.to(C.dtype.element_ty), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def matmul(a, b, *, BLOCK_M: int = 128, BLOCK_N: int = 128, BLOCK_K: int = 32, GROUP_M: int = 8,
           num_warps: int = 4, num_stages: int = 3, out=None):
    """C = A @ B for A [M, K] and B [K, N], both fp16 or both bf16 (fp32 accumulation)."""
    import torch

    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"expected A [M, K] and B [K, N]; got {tuple(a.shape)} and {tuple(b.shape)}")
    if a.dtype not in (torch.float16, torch.bfloat16) or b.dtype != a.dtype:
        raise ValueError(f"A and B must both be fp16 or both bf16; got {a.dtype} and {b.dtype}")
    M, K = a.shape
    N = b.shape[1]
    if min(M, N, K) < 1:
        raise ValueError(f"empty problem M={M} N={N} K={K}")
    if out is None:
        out = torch.empty((M, N), dtype=a.dtype, device=a.device)
    elif out.shape != (M, N) or out.dtype != a.dtype:
        raise ValueError(f"out must be [{M}, {N}] {a.dtype}; got {tuple(out.shape)} {out.dtype}")
    grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N),)
    _kernel[grid](a, b, out, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                  out.stride(0), out.stride(1), BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
                  GROUP_M=GROUP_M, num_warps=num_warps, num_stages=num_stages)
    return out


def reference(a, b):
    """float32 torch product."""
    return a.float() @ b.float()


# ---------------------------------------------------------------- the card
DTYPE_BYTES = {"fp16": 2, "bf16": 2}

# Epilogue scratch (bytes): the accumulator tile converted from the MMA layout to the
# store layout goes through shared memory in rounds; Triton's swizzled conversion
# picks the round size from both layouts (lib/Tools/GenericSwizzling.cpp) -- not a
# closed form we could honestly state, so it is *measured* here (triton 3.9, fp16 C,
# BLOCK_K and num_stages do not change it) for the sweep's tiles, keyed
# (BLOCK_M, BLOCK_N, num_warps). Outside the table the model uses the whole tile,
# BLOCK_M x BLOCK_N x 2 bytes, an upper bound.
#   "mma_ampere": mma.sync without stmatrix (sm_80, sm_86, sm_89)
#   "mma":        mma.sync on sm_90, sm_100, sm_120 (stmatrix-capable)
#   "wgmma":      sm_90 warpgroup MMA;  "tcgen05": sm_100 tensor-memory MMA
_EPILOGUE = {
    "mma_ampere": {(32, 32, 4): 2048, (32, 32, 8): 2048, (32, 64, 4): 4096, (32, 64, 8): 4096,
                   (32, 128, 4): 8192, (32, 128, 8): 8192, (64, 32, 4): 4096, (64, 32, 8): 4096,
                   (64, 64, 4): 8192, (64, 64, 8): 8192, (64, 128, 4): 8192, (64, 128, 8): 16384,
                   (128, 32, 4): 4096, (128, 32, 8): 8192, (128, 64, 4): 16384, (128, 64, 8): 16384,
                   (128, 128, 4): 16384, (128, 128, 8): 32768},
    "mma": {(32, 32, 4): 2048, (32, 32, 8): 2048, (32, 64, 4): 2048, (32, 64, 8): 4096,
            (32, 128, 4): 2048, (32, 128, 8): 4096, (64, 32, 4): 2048, (64, 32, 8): 4096,
            (64, 64, 4): 4096, (64, 64, 8): 4096, (64, 128, 4): 2048, (64, 128, 8): 8192,
            (128, 32, 4): 4096, (128, 32, 8): 4096, (128, 64, 4): 4096, (128, 64, 8): 8192,
            (128, 128, 4): 4096, (128, 128, 8): 8192},
    "wgmma": {(64, 32, 4): 4096, (64, 32, 8): 4096, (64, 64, 4): 8192, (64, 64, 8): 8192,
              (64, 128, 4): 8192, (64, 128, 8): 16384, (128, 32, 4): 4096, (128, 32, 8): 8192,
              (128, 64, 4): 8192, (128, 64, 8): 16384, (128, 128, 4): 8192, (128, 128, 8): 32768},
    "tcgen05": {(64, 32, 4): 4096, (64, 32, 8): 4096, (64, 64, 4): 2048, (64, 64, 8): 8192,
                (64, 128, 4): 4096, (64, 128, 8): 4096, (128, 32, 4): 2048, (128, 32, 8): 8192,
                (128, 64, 4): 4096, (128, 64, 8): 4096, (128, 128, 4): 8192, (128, 128, 8): 8192},
}


def _table_expr(table: Mapping[tuple[int, int, int], int], BM, BN, W, fallback) -> sympy.Expr:
    """A Piecewise lookup of (BLOCK_M, BLOCK_N, num_warps) -> bytes, `fallback` elsewhere."""
    pieces = [(val, sympy.And(sympy.Eq(BM, m), sympy.Eq(BN, n), sympy.Eq(W, w)))
              for (m, n, w), val in sorted(table.items())]
    return sympy.Piecewise(*pieces, (fallback, True))


class MatmulCard(KernelCard):
    # ------------------------------------------------------------ config
    def sweep(self) -> list[Config]:
        """The configs the shared-memory model is checked on (scripts/check_shared_model.py)."""
        return [self.resolve({"BLOCK_M": m, "BLOCK_N": n, "BLOCK_K": k, "num_warps": w, "num_stages": s})
                for m in (32, 64, 128) for n in (32, 64, 128) for k in (32, 64) for w in (4, 8)
                for s in (2, 3, 4)]

    # ------------------------------------------------------------- model
    @staticmethod
    def engine(cc: tuple[int, int]) -> str:
        """The MMA family a BLOCK_M >= 64, 4/8-warp config gets on this arch."""
        major = cc[0]
        if major == 9:
            return "wgmma"
        if major == 10:
            return "tcgen05"
        return "mma"

    def _async_mma(self, cc: tuple[int, int]) -> sympy.Expr:
        """Condition (over the symbols) under which the dot is wgmma / tcgen05."""
        s = self.symbols()
        BM, W = s["BLOCK_M"], s["num_warps"]
        eng = self.engine(cc)
        if eng == "wgmma":
            return sympy.And(BM >= 64, sympy.Eq(sympy.Mod(W, 4), 0))
        if eng == "tcgen05":
            return sympy.And(BM >= 64, sympy.Or(sympy.Eq(W, 4), sympy.Eq(W, 8)))
        return sympy.false

    def shared_memory(self, cc: tuple[int, int], cfg: Config) -> sympy.Expr:
        """Max(operand ring (+ barriers), epilogue scratch).

        operand ring: depth x (BLOCK_M x BLOCK_K + BLOCK_K x BLOCK_N) x 2, where depth is
          1 at num_stages=1 (not pipelined; both tiles still staged in shared),
          num_stages-1 for mma.sync (cp.async ring, the dot reads the oldest slot into
          registers while S-1 copies are in flight... and the slot being read is reused),
          num_stages for wgmma / tcgen05 (the MMA reads shared memory asynchronously, so
          the slot it reads stays reserved).
        barriers: tcgen05 only, one 8-byte mbarrier at num_stages=1, two otherwise.
        """
        s = self.symbols()
        BM, BN, BK, W, S = s["BLOCK_M"], s["BLOCK_N"], s["BLOCK_K"], s["num_warps"], s["num_stages"]
        e = DTYPE_BYTES[cfg["dtype"]]
        tile = (BM * BK + BK * BN) * e
        async_mma = self._async_mma(cc)
        depth = sympy.Piecewise((1, sympy.Eq(S, 1)), (S, async_mma), (S - 1, True))
        barriers = (sympy.Piecewise((sympy.Piecewise((8, sympy.Eq(S, 1)), (16, True)), async_mma), (0, True))
                    if self.engine(cc) == "tcgen05" else sympy.Integer(0))
        full = BM * BN * e
        sync_table = _EPILOGUE["mma_ampere" if cc[0] < 9 else "mma"]
        epilogue = _table_expr(sync_table, BM, BN, W, full)
        if self.engine(cc) != "mma":
            epilogue = sympy.Piecewise((_table_expr(_EPILOGUE[self.engine(cc)], BM, BN, W, full), async_mma),
                                       (epilogue, True))
        return sympy.Max(depth * tile + barriers, epilogue)

    def registers(self, cc: tuple[int, int], cfg: Config) -> sympy.Expr:
        return _matmul_registers(self.symbols(), self.engine(cc), self._async_mma(cc))

    # ----------------------------------------------------------- compile
    def signature(self, cfg: Config) -> dict[str, str]:
        t = cfg["dtype"]
        return {"A": f"*{t}:16", "B": f"*{t}:16", "C": f"*{t}:16", "M": "i32:16", "N": "i32:16", "K": "i32:16",
                "stride_am": "i32:16", "stride_ak": "i32:1", "stride_bk": "i32:16", "stride_bn": "i32:1",
                "stride_cm": "i32:16", "stride_cn": "i32:1"}

    def constexprs(self, cfg: Config) -> dict[str, Any]:
        return {k: cfg[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M")}

    # ---------------------------------------------------------- workload
    def grid(self, cfg: Config, point: Mapping[str, Any]) -> int:
        return -(-point["M"] // cfg["BLOCK_M"]) * -(-point["N"] // cfg["BLOCK_N"])

    def loop_iterations(self, cfg: Config, point: Mapping[str, Any]) -> int:
        return -(-point["K"] // cfg["BLOCK_K"])

    def scalar_args(self, cfg: Config, point: Mapping[str, Any]) -> dict[str, int]:
        """matmul()'s integer arguments for contiguous row-major A [M, K], B [K, N], C [M, N]."""
        M, N, K = point["M"], point["N"], point["K"]
        return {"M": M, "N": N, "K": K, "stride_am": K, "stride_ak": 1, "stride_bk": N, "stride_bn": 1,
                "stride_cm": N, "stride_cn": 1}

    def bytes_moved(self, cfg: Config, point: Mapping[str, Any]) -> int:
        """A, B read once and C written once (the ideal; L2 reuse decides the rest)."""
        e = DTYPE_BYTES[cfg["dtype"]]
        M, N, K = point["M"], point["N"], point["K"]
        return (M * K + K * N + M * N) * e

    def loop_tile_bytes(self, cfg: Config) -> int:
        """One K step: a BLOCK_M x BLOCK_K tile of A and a BLOCK_K x BLOCK_N tile of B."""
        return (cfg["BLOCK_M"] + cfg["BLOCK_N"]) * cfg["BLOCK_K"] * (2 if cfg.get("dtype") in ("fp16", "bf16") else 4)

    def flops(self, cfg: Config, point: Mapping[str, Any]) -> int:
        return 2 * point["M"] * point["N"] * point["K"]

    def make_inputs(self, cfg: Config, point: Mapping[str, Any], device: str = "cpu", seed: int = 0) -> dict:
        import torch

        dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}[cfg["dtype"]]
        gen = torch.Generator(device="cpu").manual_seed(seed)
        M, N, K = point["M"], point["N"], point["K"]
        a = torch.randn((M, K), generator=gen) / K ** 0.25
        b = torch.randn((K, N), generator=gen) / K ** 0.25
        return {"a": a.to(device=device, dtype=dtype), "b": b.to(device=device, dtype=dtype)}

    def launch(self, inputs: dict, cfg: Config):
        return matmul(inputs["a"], inputs["b"], BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"],
                      BLOCK_K=cfg["BLOCK_K"], GROUP_M=cfg["GROUP_M"], num_warps=cfg["num_warps"],
                      num_stages=cfg["num_stages"])

    def reference(self, inputs: dict):
        return reference(inputs["a"], inputs["b"])

    def torch_baseline(self, inputs: dict):
        return inputs["a"] @ inputs["b"]

    def work_units(self, point: Mapping[str, Any]) -> float:
        return 2.0 * point["M"] * point["N"] * point["K"]


def _matmul_registers(s: Mapping[str, sympy.Symbol], engine: str, async_mma) -> sympy.Expr:
    """Registers per thread: a structural estimate with one soft factor (wgmma's 1.5),
    set on sm_120 / sm_90 compiles; sm_80 / sm_100 are out of sample.

    acc      BLOCK_M x BLOCK_N fp32 over 32 x num_warps threads
    operands mma.sync: the fragments of one BLOCK_K slice of A and B. For a warp tile
             of side L = sqrt(BLOCK_M x BLOCK_N / num_warps), that is
             2 x L x BLOCK_K halves over 32 lanes = L x BLOCK_K / 32 registers
    wgmma    operands come from shared memory; the accumulator counts about 1.5 times
             (measured, not derived: the fp32 registers plus what the epilogue and the
             in-flight wgmma keep alongside)
    tcgen05  the accumulator lives in tensor memory but is read back whole into
             registers for the epilogue: acc
    overhead pointers, masks, loop state: 24
    """
    BM, BN, BK, W = s["BLOCK_M"], s["BLOCK_N"], s["BLOCK_K"], s["num_warps"]
    acc = BM * BN / (32 * W)
    operands = sympy.sqrt(BM * BN / W) * BK / 32
    async_acc = sympy.Rational(3, 2) * acc if engine == "wgmma" else acc
    return sympy.Piecewise((async_acc + 24, async_mma), (acc + operands + 24, True))


CARD = MatmulCard(
    name="matmul",
    summary="tiled fp16/bf16 GEMM C = A @ B with grouped tile order and fp32 accumulation",
    params=(
        Param("BLOCK_M", 128, "rows of C per CTA", choices=(16, 32, 64, 128, 256)),
        Param("BLOCK_N", 128, "columns of C per CTA", choices=(16, 32, 64, 128, 256)),
        Param("BLOCK_K", 32, "K step of the main loop", choices=(16, 32, 64, 128)),
        Param("GROUP_M", 8, "rows of tiles handed out together (L2 reuse)", minimum=1),
        Param("dtype", "fp16", "A, B and C element type", choices=("fp16", "bf16"), tunable=False),
    ),
    baseline={"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32, "GROUP_M": 8, "num_warps": 4, "num_stages": 3},
    kernel=_kernel,
    pipelined_loads=("the A [BLOCK_M, BLOCK_K] and B [BLOCK_K, BLOCK_N] tiles of the K loop: a ring "
                     "num_stages-1 deep for mma.sync (sm_80/86/89/120, and sm_90/100 below 64 rows or 4 "
                     "warps), num_stages deep for wgmma (sm_90) and tcgen05 (sm_100); num_stages=1: none"),
    specialization=("A, B, C 16-byte aligned (:16); M, N, K and the leading strides multiples of 16 (:16); "
                    "the unit strides stride_ak, stride_bn, stride_cn equal to 1 (:1, a constexpr to "
                    "Triton): row-major A, B, C with sizes that are multiples of 16"),
    workload_params=(
        Param("M", 4096, "rows of A and C", tunable=False),
        Param("N", 4096, "columns of B and C", tunable=False),
        Param("K", 4096, "columns of A, rows of B", tunable=False),
    ),
    default_points=({"M": 4096, "N": 4096, "K": 4096}, {"M": 8192, "N": 8192, "K": 8192},
                    {"M": 128, "N": 8192, "K": 8192}),
    throughput_unit="FLOP/s",
)
