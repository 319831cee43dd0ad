"""Chapter 04: which shared-memory banks a warp's reads hit."""
from __future__ import annotations

from .. import pictures, registry


def show_banks(name: str, k: int = 0, **params) -> None:
    """The shared-memory banks the 32 lanes of warp 0 hit in the inner loop, and the conflict degree."""
    spec = registry.get(name)
    full = spec.resolve(params)
    words = registry.model(spec).bank_words(full, k)
    per_bank: dict[int, set] = {}
    for w in words:
        per_bank.setdefault(w % 32, set()).add(w)
    degree = max(len(s) for s in per_bank.values())
    verdict = "conflict-free" if degree == 1 else f"{degree}-way bank conflict: the read is replayed {degree} times"
    print(f"{spec.config_label(full)}, step k={k}: the warp's 32 words fall in {len(per_bank)} banks; {verdict}")
    pictures.bank_map(words, f"{spec.title} [{spec.config_label(full)}]: {verdict}",
                   "drawn from the kernel's indexing (registry model)")
