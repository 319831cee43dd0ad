"""gemmlab: compile, validate, time and explain SGEMM kernels, one technique at a time."""
from .registry import KERNELS, get  # noqa: F401
from .spec import IllegalConfig, Problem, UnsupportedShape  # noqa: F401

__version__ = "0.1.0"
