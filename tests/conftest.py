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


@pytest.fixture(scope="module")
def fresh_cache(tmp_path_factory, monkeypatch_module):
    """A compile cache of this module's own (the user's ~/.cache is never touched)."""
    path = tmp_path_factory.mktemp("occmodel-cache")
    monkeypatch_module.setenv("OCCMODEL_CACHE_DIR", str(path))
    return str(path)


@pytest.fixture(scope="module")
def shared_cache(tmp_path_factory, monkeypatch_module):
    """The session's shared compile cache: modules that compile the same configs reuse it."""
    path = tmp_path_factory.getbasetemp() / "occmodel-cache"
    path.mkdir(exist_ok=True)
    monkeypatch_module.setenv("OCCMODEL_CACHE_DIR", str(path))
    return str(path)


@pytest.fixture(scope="module")
def monkeypatch_module():
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()
