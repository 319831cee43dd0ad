"""gemmlab: compile, validate, time and explain SGEMM kernels, one technique at a time.

`gemmlab.matmul(A, B, out=None, alpha=1.0, beta=0.0)` multiplies CuPy float32 matrices of any shape
with the course's kernels, each shape with the kernel its plan picks (`gemmlab.matmul.plan(M, N, K)`).
"""
from .registry import KERNELS, get  # noqa: F401
from .spec import IllegalConfig, Problem, UnsupportedShape  # noqa: F401

__version__ = "0.1.0"


def __getattr__(name: str):
    # matmul on first use: `import gemmlab` stays light (no numpy launch code, no CuPy)
    if name == "matmul":
        from .library import matmul
        return matmul
    raise AttributeError(f"module 'gemmlab' has no attribute {name!r}")
