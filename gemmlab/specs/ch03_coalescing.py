"""Chapter 03: the same tiles, with consecutive threads on consecutive addresses."""
from .tiled import tiled_spec

SPEC = tiled_spec("03_coalescing", 3, "03 tiling + coalescing",
                  "the same tiles, with consecutive threads on consecutive addresses of A, B and C",
                  lanes_along_rows=False)
