"""Chapters 02-04 share one shape: square TILE x TILE tiles, OUTPUTS elements of C per thread."""
from __future__ import annotations

from ..kernel_model import KernelModel
from ..spec import KernelSpec, Param, Rule
from .shared import block_size_rule

TILE = Param("TILE", (8, 16, 32, 64), 32, "edge of the square tile of C a block owns, and the K step")
OUTPUTS = Param("OUTPUTS", (1, 2, 4, 8), 4,
                "elements of C each thread computes (the block has TILE*TILE/OUTPUTS threads)")


def threads(p) -> int:
    return p["TILE"] * p["TILE"] // p["OUTPUTS"]


def tiled_spec(name: str, chapter: int, title: str, technique: str, **fields) -> KernelSpec:
    return KernelSpec(**{
        "name": name, "chapter": chapter, "title": title, "technique": technique,
        "params": (TILE, OUTPUTS),
        "threads": threads,
        "tile": lambda p: (p["TILE"], p["TILE"]),
        "rules": (
            Rule("outputs-divide-tile", lambda p: p["TILE"] % p["OUTPUTS"] == 0,
                 lambda p: f"OUTPUTS={p['OUTPUTS']} must divide TILE={p['TILE']} so every thread gets whole rows"),
            block_size_rule(threads),
        ),
        "k_tile": lambda p: p["TILE"],
        "static_smem": lambda p: 2 * p["TILE"] * p["TILE"] * 4,
        **fields})


def tiled_model(lanes_along_rows: bool, **fields) -> KernelModel:
    """The model of a tiled kernel's code: its thread mapping of C (and `fields`, e.g. 04's bank_words)."""
    rows_of_threads = lambda p: p["TILE"] // p["OUTPUTS"]
    if lanes_along_rows:   # 02: fast index f = row, slow index s = column % (TILE / OUTPUTS)
        owner = lambda p, r, c: r + (c % rows_of_threads(p)) * p["TILE"]
    else:                  # 03: fast index f = column, slow index s = row % (TILE / OUTPUTS)
        owner = lambda p, r, c: c + (r % rows_of_threads(p)) * p["TILE"]
    return KernelModel(owner=owner, **fields)
