import os
import re
import tempfile

import pytest

# Compile for real in a test session: a fresh compile cache unless the caller chose one.
os.environ.setdefault("GEMMLAB_CACHE", tempfile.mkdtemp(prefix="gemmlab-test-cache-"))

from gemmlab import device  # noqa: E402


_MODULE_MARK = re.compile(r"^pytestmark = pytest\.mark\.(\w+)$", re.M)


def pytest_ignore_collect(collection_path, config):
    """A module whose every test carries a mark the run deselects (`-m "not slow"`) is not even imported: the
    heavy tier's modules work out their matrices as they are imported (test_compile_matrix.py: every kernel's
    extreme configurations, seconds in each worker)."""
    if collection_path.suffix != ".py" or not collection_path.name.startswith("test_"):
        return None
    expression = config.getoption("markexpr") or ""
    found = _MODULE_MARK.search(collection_path.read_text())
    return True if found and f"not {found.group(1)}" in expression else None


def pytest_collection_modifyitems(config, items):
    if device.available():
        return
    skip = pytest.mark.skip(reason=f"needs an NVIDIA GPU: {device.why_unavailable()}")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
