"""Test tiers: everything runs on the CPU except tests marked `requires_gpu`, which
skip cleanly where no CUDA GPU is visible (CI never has one)."""

import pytest


def _gpu_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def pytest_collection_modifyitems(config, items):
    if _gpu_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (none visible)")
    for item in items:
        if "requires_gpu" in item.keywords:
            item.add_marker(skip)
