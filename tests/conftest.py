import os
import tempfile

import pytest

# Compile for real in a test session: a fresh compile cache unless the caller chose one.
os.environ.setdefault("GEMMLAB_CACHE", tempfile.mkdtemp(prefix="gemmlab-test-cache-"))

from gemmlab import device  # noqa: E402


def pytest_collection_modifyitems(config, items):
    if device.available():
        return
    skip = pytest.mark.skip(reason=f"needs an NVIDIA GPU: {device.why_unavailable()}")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
