"""occmodel: will this Triton config fit, what occupancy will it get, and did
the occupancy change buy throughput?

Public contract (see DESIGN.md):

    spec = load_spec("sm_120")
    occ = occupancy(spec, threads=128, regs=96, smem=61440, carveout=None)
    res = compile_kernel(fn, signature={...}, constexprs={...}, arch="sm_120",
                         num_warps=4, num_stages=2)

Your own kernel, no card (docs/launcher.md):

    kernel = load_source("attn.py:_fwd", launcher="attn.py")   # or bare_kernel(fn, launcher=Launcher(...))
    evs = gather(kernel, spec, [kernel.resolve({"num_stages": s}) for s in (2, 3)])
"""

from .errors import OccmodelError
from .occupancy import Occupancy, occupancy, occupancy_grid
from .spec import HardwareSpec, known_specs, load_spec

__version__ = "0.1.0"


def __getattr__(name):
    # compile_kernel imports triton; keep `import occmodel` light for the pure core.
    if name in ("compile_kernel", "CompileResult"):
        from . import compile as _compile
        return getattr(_compile, name)
    lazy = {"load_source": "source", "bare_kernel": "bare", "Launcher": "launcher", "gather": "evidence",
            "Evidence": "evidence"}
    if name in lazy:
        import importlib
        return getattr(importlib.import_module(f".{lazy[name]}", __name__), name)
    raise AttributeError(f"module 'occmodel' has no attribute {name!r}")


__all__ = ["OccmodelError", "HardwareSpec", "Occupancy", "occupancy", "occupancy_grid",
           "known_specs", "load_spec", "compile_kernel", "CompileResult", "load_source", "bare_kernel", "Launcher",
           "gather", "Evidence", "__version__"]
