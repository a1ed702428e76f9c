"""What the example-kernel tests (tests/test_examples_*.py) share: loading an examples/ file,
running its cases under Triton's interpreter in a subprocess, comparing with the reference,
and the launcher-contract checks that need no kernel-specific knowledge.

The interpreter must be chosen before triton is imported, so a test file runs its own cases
as a script (``python tests/test_examples_round4.py w8a16_gemm``): its ``__main__`` calls
:func:`run_cases`, which prints one JSON line; the pytest side reads it with
:func:`interpreter_results` and asserts per case. bf16 dot operands are widened to fp32
inside the interpreter only (its tl.dot multiplies bf16 bit patterns; see
test_kernels_interpret.py).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable, Mapping

TESTS = Path(__file__).resolve().parent
EXAMPLES = TESTS.parent / "examples"
TOL = {"fp32": 1e-4, "bf16": 1e-2, "fp16": 2e-3}     # x max|ref|, absolute, per element
GROUP_TIMEOUT_S = 300


def load_example(name: str):
    """An examples/ file as a module (examples/ is not a package)."""
    spec = importlib.util.spec_from_file_location(f"occmodel_example_{name}", EXAMPLES / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# ----------------------------------------------------------------- the subprocess side
def compare(out, ref, dtype: str, tol_table: Mapping[str, float] = TOL) -> dict:
    """Elements of `out` farther from `ref` than tol x max|ref| (or not finite), and the figures."""
    import torch

    out = out.float()
    scale = float(ref.abs().max())
    tol = tol_table[dtype] * max(scale, 1e-6)
    diff = (out - ref).abs()
    bad = (diff > tol) | ~torch.isfinite(out)
    return {"n_bad": int(bad.sum()), "numel": out.numel(), "max_err": float(diff.max()), "tol": tol,
            "scale": scale, "shape": list(out.shape)}


def run_cases(kernel: str, cases: Mapping[str, tuple[dict, dict]], tol_table: Mapping[str, float] = TOL,
              prepare: Callable[[str, dict, dict], None] | None = None, baseline: bool = False,
              extra: Callable[[str, dict, dict, Any, Any], Mapping[str, Any]] | None = None) -> None:
    """Under TRITON_INTERPRET=1: launch each case of `kernel`, compare with its reference (and
    torch_baseline's output too when `baseline`), print the results as one JSON line.
    `prepare(name, point, inputs)` may edit the inputs before the launch; `extra(name, point, inputs,
    out, ref)` returns further fields of a case's result (the output's dtype, a mean, ...)."""
    assert os.environ.get("TRITON_INTERPRET") == "1", "run with TRITON_INTERPRET=1"
    sys.path.insert(0, str(TESTS))
    from test_kernels_interpret import _patch_interpreter_bf16_dot
    _patch_interpreter_bf16_dot()
    mod = load_example(kernel)
    results = {}
    for name, (point, cfg) in cases.items():
        try:
            inputs = mod.make_inputs(point, seed=len(name), device="cpu")
            if prepare is not None:
                prepare(name, point, inputs)
            out = mod.launch(inputs, cfg)
            ref = mod.reference(inputs)
            results[name] = compare(out, ref, point["dtype"], tol_table)
            if baseline:
                results[name]["baseline"] = compare(mod.torch_baseline(inputs), ref, point["dtype"], tol_table)
            if extra is not None:
                results[name].update(extra(name, point, inputs, out, ref))
        except Exception as exc:          # reported per case by the test
            results[name] = {"error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(results))


# ----------------------------------------------------------------- the pytest side
_RESULTS: dict[tuple[str, str], dict] = {}


def interpreter_results(script: str | Path, kernel: str) -> dict:
    """`script kernel` run under the interpreter (once per pytest process): case -> result."""
    import pytest

    key = (str(script), kernel)
    if key not in _RESULTS:
        env = dict(os.environ, TRITON_INTERPRET="1", PYTHONWARNINGS="ignore",
                   TRITON_DEFAULT_FP_FUSION=os.environ.get("TRITON_DEFAULT_FP_FUSION", "1"))
        env.pop("CUDA_VISIBLE_DEVICES", None)
        proc = subprocess.run([sys.executable, str(script), kernel], env=env, capture_output=True, text=True,
                              timeout=GROUP_TIMEOUT_S, cwd=TESTS.parent)
        lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
        if proc.returncode != 0 or not lines:
            pytest.fail(f"interpreter subprocess for {kernel!r} failed (rc {proc.returncode}):\n"
                        f"{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
        _RESULTS[key] = json.loads(lines[-1])
    return _RESULTS[key]


def mismatch(res: Mapping[str, Any], label: str) -> str:
    """The assertion message for a case whose output differs from the reference."""
    return (f"{label}: {res['n_bad']} of {res['numel']} elements differ from the reference by more than "
            f"{res['tol']:.3g} (max error {res['max_err']:.3g}, max |ref| {res['scale']:.3g})")


def imports_without_torch(names) -> subprocess.CompletedProcess:
    """Import each examples/ module with torch made unimportable (the launcher contract imports it
    inside the functions); prints 'ok' when all import."""
    code = ("import sys; sys.modules['torch'] = None\n"
            "import importlib.util\n"
            f"for name in {list(names)!r}:\n"
            f"    spec = importlib.util.spec_from_file_location(name, {str(EXAMPLES)!r} + '/' + name + '.py')\n"
            "    spec.loader.exec_module(importlib.util.module_from_spec(spec))\n"
            "print('ok')\n")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


def compile_results(kernel: str, cfgs, arch: str):
    """(cfg, CompileResult) for each config of `kernel` compiled for `arch` at its first POINT."""
    from occmodel import compile_kernel

    mod = load_example(kernel)
    for cfg in cfgs:
        args = mod.example_args(cfg, mod.POINTS[0])
        yield cfg, compile_kernel(mod._kernel, args=args, arch=arch, num_warps=cfg["num_warps"],
                                  num_stages=cfg["num_stages"])


def meta_nbytes(args: Mapping[str, Any]) -> int:
    """Bytes of the tensors among a launcher's example_args (meta tensors: shapes only)."""
    return sum(v.numel() * v.element_size() for v in args.values() if hasattr(v, "element_size"))


def assert_tunables_covered(cases: Mapping[str, Mapping[str, tuple[dict, dict]]], baseline: bool = True) -> None:
    """Each kernel's tunables take at least two values over its cases (and, with `baseline`, its
    BASELINE names exactly its TUNABLES)."""
    for kernel, kcases in cases.items():
        mod = load_example(kernel)
        if baseline:
            assert set(mod.BASELINE) == set(mod.TUNABLES)
        for name in mod.TUNABLES:
            tested = {cfg[name] for _, cfg in kcases.values()}
            assert len(tested) >= 2, (kernel, name, tested)


def study_sweeps(names, role: str) -> dict[str, tuple[list, list, dict]]:
    """scripts/rank_study.py's SWEEPS entries of `names`, each asserted to carry `role` and its examples/
    file: name -> (its valid configs, its points, its axes)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("rank_study_for_tests", TESTS.parent / "scripts" / "rank_study.py")
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    out = {}
    for name in names:
        entry = m.SWEEPS[name]
        assert entry["role"] == role and entry["file"] == f"examples/{name}.py", (name, entry)
        kernel, points = m.load_kernel(name)
        out[name] = (m.valid_configs(kernel, m.sweep_configs(entry["axes"])), points, entry["axes"])
    return out


# ----------------------------------------------------------------- interpreter fixes (subprocess side)
def patch_interpreter_index() -> None:
    """Runtime loop bounds (``range(0, C, TILE_C)``) in triton 3.6's interpreter: a scalar argument's
    handle is a one-element 1-d array there, which numpy >= 2.3 no longer turns into an int (every
    runtime-bounded loop fails with 'only 0-dimensional arrays can be converted'); read its one
    element instead. Triton 3.9's 0-d handles are read the same."""
    import numpy as np
    import triton.runtime.interpreter as interp

    orig = getattr(interp, "_patch_lang_tensor", None)
    if orig is None:
        return

    def index(self):
        data = np.asarray(self.handle.data)
        if data.size != 1:
            raise TypeError(f"only a one-element tensor is an index, not shape {data.shape}")
        return int(data.reshape(-1)[0])

    def patched(tensor, scope):
        orig(tensor, scope)
        scope.set_attr(tensor, "__index__", index)

    interp._patch_lang_tensor = patched


def patch_interpreter_bf16_rounding() -> None:
    """fp32 -> bf16 in Triton's interpreter: torch's round-to-nearest-even (the interpreter's truncates)."""
    import numpy as np
    import torch
    import triton.language as tl
    import triton.runtime.interpreter as interp

    orig = interp._convert_float

    def convert(data, src, dst, rounding):
        if src == tl.float32 and dst == tl.bfloat16:
            t = torch.from_numpy(np.ascontiguousarray(data).view(np.float32))
            return t.to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16).reshape(data.shape)
        return orig(data, src, dst, rounding)

    interp._convert_float = convert
