"""A kernel card written in a user's own file: `occmodel ... --kernel examples/user_card.py:CARD`.

The kernel is a row softmax; the card states what occmodel needs: parameters,
the launch specialization, a shared-memory and register model, and the GPU side
(inputs, launch, torch reference, bytes moved).
"""

from typing import Any, Mapping

import sympy
import triton
import triton.language as tl

from occmodel.card import KernelCard, Param


@triton.jit
def _softmax_kernel(X, Y, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(X + row * stride + cols, mask=cols < n_cols, other=-float("inf")).to(tl.float32)
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    tl.store(Y + row * stride + cols, (e / tl.sum(e, axis=0)).to(Y.dtype.element_ty), mask=cols < n_cols)


class SoftmaxCard(KernelCard):
    def shared_memory(self, cc, cfg):
        s = self.symbols()
        # the two cross-warp reductions (max, sum) go through shared memory: 4 B per warp each
        return sympy.Piecewise((0, sympy.Eq(s["num_warps"], 1)), (4 * s["num_warps"], True))

    def registers(self, cc, cfg):
        s = self.symbols()
        return s["BLOCK"] / (32 * s["num_warps"]) * 2 + 16      # x and e per thread, plus indexing

    def signature(self, cfg):
        return {"X": "*fp32:16", "Y": "*fp32:16", "n_cols": "i32", "stride": "i32:16"}

    def constexprs(self, cfg):
        return {"BLOCK": cfg["BLOCK"]}

    def grid(self, cfg, point):
        return point["rows"]

    def loop_iterations(self, cfg, point):
        return 1

    def bytes_moved(self, cfg, point):
        return 2 * 4 * point["rows"] * point["cols"]

    def flops(self, cfg, point):
        return 4 * point["rows"] * point["cols"]

    def make_inputs(self, cfg, point, device="cpu", seed=0):
        import torch
        g = torch.Generator(device="cpu").manual_seed(seed)
        x = torch.randn((point["rows"], point["cols"]), generator=g).to(device)
        return {"x": x}

    def launch(self, inputs: dict, cfg):
        import torch
        x = inputs["x"]
        y = torch.empty_like(x)
        _softmax_kernel[(x.shape[0],)](x, y, x.shape[1], x.stride(0), BLOCK=cfg["BLOCK"],
                                       num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
        return y

    def reference(self, inputs: dict):
        import torch
        return torch.softmax(inputs["x"].float(), dim=-1)

    def work_units(self, point: Mapping[str, Any]) -> float:
        return point["rows"]


CARD = SoftmaxCard(
    name="softmax_example",
    summary="row softmax, one row per CTA (a user's card)",
    params=(Param("BLOCK", 1024, "columns per row (>= cols, a power of two)", power_of_two=True),),
    baseline={"BLOCK": 1024, "num_warps": 4, "num_stages": 1},
    kernel=_softmax_kernel,
    pipelined_loads="none (no loop)",
    specialization="X, Y 16-byte aligned; row stride a multiple of 16",
    workload_params=(Param("rows", 4096, "rows", tunable=False), Param("cols", 1000, "columns", tunable=False)),
    default_points=({"rows": 4096, "cols": 1000},),
    throughput_unit="rows/s",
)
