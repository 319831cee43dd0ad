"""Chapter 02: blocks stage tiles of A and B in shared memory."""
from .tiled import tiled_spec

SPEC = tiled_spec("02_smem_tiling", 2, "02 shared-memory tiling",
                  "blocks stage TILE x TILE tiles of A and B in shared memory; threads still map to C naively",
                  lanes_along_rows=True)
