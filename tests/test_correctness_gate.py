"""The correctness gate (occmodel.gpu.compare) that validate and the rank study share, on CPU
tensors: the tolerance comes from the output's own dtype, before it is upcast."""

import pytest

torch = pytest.importorskip("torch")
from occmodel import gpu  # noqa: E402  (imports torch)


def test_a_bf16_rounding_of_the_reference_passes_and_an_offset_fails():
    ref = torch.linspace(-3, 3, 1000)
    ok = gpu.compare(ref.to(torch.bfloat16), ref, {})
    assert ok.ok and ok.tolerance == 2e-2 and ok.n_bad == 0 and ok.n_total == 1000
    # +1 everywhere: relative L2 error ~ 0.57 > 2e-2, and every element off by more than 10 x tol x 3
    bad = gpu.compare((ref + 1).to(torch.bfloat16), ref, {})
    assert not bad.ok and bad.n_bad == 1000


def test_fp32_output_gets_the_fp32_tolerance_and_one_nan_fails():
    ref = torch.ones(100)
    out = ref.clone()
    out[7] = float("nan")
    res = gpu.compare(out, ref, {})
    assert res.tolerance == 1e-4 and not res.ok and res.n_bad == 1


def test_fp32_output_from_16_bit_inputs_gets_the_inputs_tolerance():
    """An fp32 result computed from bf16 inputs (a launcher's point says dtype bf16: Mamba-2's chunk states)
    carries bf16's error: judged at 2e-2, not fp32's 1e-4; a point in fp32 keeps 1e-4."""
    ref = torch.linspace(-3, 3, 1000)
    out = ref * (1 + 2e-3)                                  # 0.2 % off: bf16-sized, far over 1e-4
    assert not gpu.compare(out, ref, {}).ok
    ok = gpu.compare(out, ref, {}, {"dtype": "bf16"})
    assert ok.ok and ok.tolerance == 2e-2
    assert gpu.compare(out, ref, {}, {"dtype": "fp32"}).tolerance == 1e-4


def test_masked_minus_infinity_must_match_and_is_left_out_of_the_norm():
    """A masked logit (-inf in the reference: lightning_indexer's causal mask) passes when the kernel
    writes -inf there too and fails, counted as bad, when it writes anything else -- a finite value,
    +inf, NaN. Without this every such kernel read rel error NaN (inf - inf)."""
    ref = torch.linspace(1, 2, 100)
    ref[50:] = float("-inf")
    out = ref.clone()
    out[:50] *= 1 + 1e-6
    ok = gpu.compare(out, ref, {})
    assert ok.ok and ok.rel_error < 1e-5 and ok.n_bad == 0
    for wrong in (0.0, float("inf"), float("nan")):
        bad = out.clone()
        bad[70] = wrong
        res = gpu.compare(bad, ref, {})
        assert not res.ok and res.n_bad == 1
    finite_then_inf = out.clone()
    finite_then_inf[3] = float("-inf")                          # -inf where the reference is finite
    res = gpu.compare(finite_then_inf, ref, {})
    assert not res.ok and res.n_bad == 1


def test_fp8_inputs_get_bf16_sized_tolerance():
    ref = torch.linspace(-3, 3, 1000)
    out = ref * (1 + 5e-3)
    assert gpu.compare(out, ref, {}, {"dtype": "fp8"}).ok
    assert not gpu.compare(out * 1.1, ref, {}, {"dtype": "fp8"}).ok
