import pytest

from gemmlab import device


def pytest_collection_modifyitems(config, items):
    if device.available():
        return
    skip = pytest.mark.skip(reason=f"needs an NVIDIA GPU: {device.why_unavailable()}")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
