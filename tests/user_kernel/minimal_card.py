"""The smallest card a user might write: parameters, baseline, signature, constexprs. No model, no
workload hooks, no launcher -- every command must still answer (compiling) or say in one line what
is missing."""

from mm import mm_kernel

from occmodel.card import KernelCard, Param


class MinimalCard(KernelCard):
    def signature(self, cfg):
        return {"A": "*fp16:16", "B": "*fp16:16", "C": "*fp16:16", "M": "i32:16", "N": "i32:16", "K": "i32:16",
                "stride_am": "i32:16", "stride_bk": "i32:16", "stride_cm": "i32:16"}

    def constexprs(self, cfg):
        return {"BM": cfg["BM"], "BN": cfg["BN"], "BK": cfg["BK"]}


CARD = MinimalCard(name="minimal_mm", summary="a minimal card", kernel=mm_kernel,
                   params=(Param("BM", 64, "tile rows", choices=(32, 64, 128)), Param("BN", 64, "tile cols"),
                           Param("BK", 32, "K step")),
                   baseline={"num_warps": 4, "num_stages": 2})
