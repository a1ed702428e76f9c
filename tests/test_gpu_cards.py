"""GPU tier: the built-in cards launched for real, compared with the AOT compile.

For each config the card's kernel is launched through Triton's own JIT launcher
(which applies its real specialization to the real arguments); the CompiledKernel
it produced must report the same n_regs, n_spills and shared memory as
compile_kernel() with the card's declared signature, and the driver's occupancy
for it must equal ours. This checks the cubin reader and that each card's
declared specialization is the one its launches really get.
"""

import pytest

from occmodel import load_spec, occupancy
from occmodel.card import load_card
from occmodel.compile import compile_kernel

pytestmark = pytest.mark.requires_gpu

CASES = [
    ("decode_attention", {}, {"C": 8, "ctx": 1000}),
    ("decode_attention", {"num_warps": 8}, {"C": 8, "ctx": 1000}),
    ("decode_attention", {"num_stages": 3, "BLOCK_T": 32}, {"C": 3, "ctx": 700}),
    ("matmul", {}, {"M": 512, "N": 384, "K": 256}),
    ("matmul", {"num_warps": 8, "num_stages": 4}, {"M": 512, "N": 512, "K": 512}),
]


def _compiled_kernels(jit_fn):
    """Every CompiledKernel in a JITFunction's in-memory cache (triton 3.6 and 3.9 layouts)."""
    out = []
    for entry in jit_fn.device_caches.values():
        cache = entry[0] if isinstance(entry, tuple) else entry
        out += list(cache.values())
    return out


@pytest.mark.parametrize("name, overrides, point", CASES)
def test_launched_kernel_equals_aot_compile(name, overrides, point):
    import torch
    card = load_card(name)
    cfg = card.resolve(overrides)
    major, minor = torch.cuda.get_device_capability()
    spec = load_spec(f"sm_{major}{minor}")
    for entry in card.kernel.device_caches.values():
        (entry[0] if isinstance(entry, tuple) else entry).clear()
    inputs = card.make_inputs(cfg, card.resolve_point(point), device="cuda", seed=1)
    card.launch(inputs, cfg)
    torch.cuda.synchronize()
    launched = _compiled_kernels(card.kernel)
    assert len(launched) == 1
    k = launched[0]
    k._init_handles()
    aot = compile_kernel(card.kernel, card.signature(cfg), card.constexprs(cfg), arch=spec.arch,
                         num_warps=cfg["num_warps"], num_stages=cfg["num_stages"], cache=False)
    assert aot.status == "ok", aot.message
    assert (k.n_regs, k.n_spills, k.metadata.shared) == (aot.n_regs, aot.n_spills, aot.shared), \
        f"{name} {overrides}: launched {(k.n_regs, k.n_spills, k.metadata.shared)} vs AOT {aot.as_dict()}"
    # the driver's occupancy for the launched kernel equals ours
    import ctypes
    cuda = ctypes.CDLL("libcuda.so.1")
    blocks = ctypes.c_int()
    assert cuda.cuOccupancyMaxActiveBlocksPerMultiprocessor(
        ctypes.byref(blocks), ctypes.c_void_p(k.function), 32 * cfg["num_warps"],
        ctypes.c_size_t(k.metadata.shared)) == 0
    ours = occupancy(spec, 32 * cfg["num_warps"], aot.n_regs, aot.total_shared)
    assert ours.blocks_per_sm == blocks.value
