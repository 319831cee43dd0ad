"""Fitting gemmlab.matmul's model to a record (`python -m gemmlab fit`): the constants of
gemmlab/library/time_model.py's model of a launch's time, by least squares on relative error, frozen
into gemmlab/fitted/. The plan reads the frozen file; nothing here runs when a user calls matmul."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .. import files, records, registry
from . import training
from ..compile import compile_kernel
from ..compile_aside import precompile
from ..library.time_model import (STREAMING_REACH, blocks_per_sm, config_key, copy_path, features, fitted_path,
                                  pieces_of, scalar_stores, split_tunables, split_variants, unsplit, waves)
from ..launch import ridge as ridge_of
from ..spec import Problem

# The launch overheads the fit tries (microseconds): one for every configuration, the one that
# leaves the smallest error is kept.
LAUNCH_GRID_US = tuple(np.round(np.arange(0.0, 40.0 + 1e-9, 0.5), 2))
# The shares of a shared SM's time that a block alone on an SM takes, tried likewise.
ALONE_GRID = tuple(np.round(np.arange(0.10, 1.0 + 1e-9, 0.02), 2))
# ... and of `chain`, the time each piece of a split tile adds while the pieces add into C in turn
CHAIN_GRID_US = tuple(np.round(np.arange(0.0, 40.0 + 1e-9, 0.5), 2))
# ... and of `ragged`, how much longer a tile takes on the checked copy path than on the 16-byte one
RAGGED_GRID = tuple(np.round(np.arange(0.0, 2.0 + 1e-9, 0.05), 2))
# ... and of `store`, how much a tile's per-tile cost grows where it stores C 4 bytes at a time
STORE_GRID = tuple(np.round(np.arange(0.0, 6.0 + 1e-9, 0.1), 2))
# A candidate's own `alone` is fitted only where at least this many of its rows have blocks alone on
# an SM or a part-filled last round; with fewer, one row would set it (the model's `alone` is used).
OWN_ALONE_ROWS = 3
# A configuration becomes a candidate when it was among its kernel's fastest few at a recorded shape.
KEEP_PER_SHAPE = 3
# A timing whose cuBLAS run (interleaved with it) took more than this factor longer or shorter than cuBLAS's median
# over the shape's rows was disturbed (the GPU or the host busy elsewhere): both its times are off, and the fit
# uses the kernel's (docs/dispatch-history.md, round 24).
DISTURBED = 1.2
# ... judged only where a shape has at least this many rows to take a median over
DISTURBED_MIN_ROWS = 3


def undisturbed(rows: list[dict]) -> list[dict]:
    """`rows` less those timed while the GPU was disturbed (DISTURBED)."""
    times: dict[tuple, list[float]] = {}
    for r in rows:
        times.setdefault(records.shape_key(r), []).append(r["cublas_ms"])
    median = {shape: float(np.median(t)) for shape, t in times.items() if len(t) >= DISTURBED_MIN_ROWS}
    return [r for r in rows if records.shape_key(r) not in median
            or 1 / DISTURBED <= r["cublas_ms"] / median[records.shape_key(r)] <= DISTURBED]


def training_rows(rec: records.Record, trained: list[dict] | None = None) -> list[dict]:
    """The record's validated timings (the sliders' configurations at three sizes, the final chapter's
    per-shape search, the ladder's eight shapes, and the plan's own training shapes once `record
    --matmul-training` has run) of kernels that stage K tiles (the model's per-step cost needs them),
    leaving out timings of a kernel whose code changed since they were made, and those timed while the GPU was
    disturbed (`undisturbed`). `trained`: the training rows (default: those recorded beside `rec`,
    research/training.rows_of)."""
    rows = [*rec.data["results"], *rec.data.get("final_search", []), *rec.data.get("ladder", []),
            *(training.rows_of(rec) if trained is None else trained)]
    ridge = ridge_of(rec.device)
    return [r for r in undisturbed(rows) if rec.row_is_fresh(r)
            and registry.KERNELS[r["kernel"]].k_tile is not None
            and (not registry.model(r["kernel"]).streams
                 or Problem(*records.shape_key(r)).intensity <= STREAMING_REACH * ridge)]


def candidate_configs(rows: list[dict]) -> list[tuple[str, dict]]:
    """(kernel, unsplit configuration) among the KEEP_PER_SHAPE fastest of their kernel at some shape."""
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["kernel"], records.shape_key(r)), []).append(r)
    keep = {}
    for (kernel, _), group in sorted(groups.items()):
        spec = registry.KERNELS[kernel]
        fastest = {}                            # distinct configurations, fastest first
        for r in sorted(group, key=lambda r: (-r["gflops"], config_key(kernel, r["params"]))):
            params = unsplit(spec, r["params"])
            fastest.setdefault(config_key(kernel, params), (kernel, params))
        keep.update(list(fastest.items())[:KEEP_PER_SHAPE])
    return [keep[k] for k in sorted(keep)]


def _fit_one(waves: np.ndarray, steps: np.ndarray, us: np.ndarray, launch_us: np.ndarray | float,
             tile_scale: np.ndarray | float = 1.0) -> tuple[float, float, float]:
    """(a, b, squared relative error) minimising sum ((launch + w (a s + b k)) / t - 1)^2 with a, b >= 0
    (w and k as features gives them; `launch` per row: the launch, and a split's chain where there is
    one; s, `tile_scale`, per row: 1 + store where a tile stores C 4 bytes at a time)."""
    return _solve(_gram(waves, steps, us, tile_scale), us, launch_us)


def _gram(waves: np.ndarray, steps: np.ndarray, us: np.ndarray, tile_scale: np.ndarray | float = 1.0) -> tuple:
    """The half of _fit_one's least squares that the launch does not change (a grid over the launch reuses it)."""
    u, v = waves * tile_scale / us, waves * steps / us
    return u, v, u @ u, u @ v, v @ v


def _solve(gram: tuple, us: np.ndarray, launch_us: np.ndarray | float) -> tuple[float, float, float]:
    u, v, uu, uv, vv = gram
    r = 1.0 - launch_us / us
    ur, vr = u @ r, v @ r
    det = uu * vv - uv * uv
    a, b = ((vv * ur - uv * vr) / det, (uu * vr - uv * ur) / det) if det > 1e-12 * uu * vv else (-1.0, 0.0)
    if a < 0 or b < 0:                       # the cheapest tile costs nothing beyond its K steps
        a, b = 0.0, max(vr / vv, 0.0)
    err = u * a + v * b - r
    return float(a), float(b), float(err @ err)


@dataclass(frozen=True)
class CandidateRows:
    """One candidate's rows as the model sees them (time_model.features), one array entry per row: whole
    rounds `w`, K steps `k`, blocks alone on an SM `lone`, pieces of split tiles `pieces`, the share of
    tiles on the checked copy path `checked`, the last round's fill `rest`, and the measured times `us`;
    with the blocks per SM of each row's build (a split's own), and where C is stored 4 bytes at a time (`scalar`,
    time_model.scalar_stores)."""
    w: np.ndarray
    k: np.ndarray
    lone: np.ndarray
    pieces: np.ndarray
    checked: np.ndarray
    rest: np.ndarray
    us: np.ndarray
    per_sm: np.ndarray
    scalar: np.ndarray
    occupancy: np.ndarray          # per_sm against the candidate's own build's: what a round of a split's build holds
    grams: dict = field(default_factory=dict, compare=False, repr=False)   # (alone, ragged, store) -> _gram's

    def model_waves(self, alone: float, ragged: float) -> np.ndarray:
        return waves(self.w, self.lone, self.rest, alone, self.per_sm) * self.occupancy * (1 + ragged * self.checked)

    def error(self, launch_us: float, alone: float, chain_us: float, ragged: float, store: float = 0.0) -> float:
        """The squared relative error of the best per-tile and per-step costs for these constants (the
        same numbers _fit_one gives: its launch-free half is kept per alone, ragged and store)."""
        key = (alone, ragged, store)
        if key not in self.grams:
            self.grams[key] = _gram(self.model_waves(alone, ragged), self.k, self.us, 1 + store * self.scalar)
        return _solve(self.grams[key], self.us, launch_us + chain_us * self.pieces)[2]


def _best(grid, error) -> object:
    """The point of `grid` with the smallest `error(point)` (the first of equals)."""
    grid = list(grid)
    return grid[int(np.argmin([error(g) for g in grid]))]


def fit(rec: records.Record, resources: dict[str, tuple[int, int]] | None = None,
        trained: list[dict] | None = None) -> dict:
    """The model, fitted to `rec`: what gemmlab/fitted/ keeps. `resources` maps a configuration's key (a
    candidate's, or one of its splits') to (registers, static shared memory) of its build for the record's GPU;
    compiled where missing."""
    dev = rec.device
    arch = f"sm_{dev['compute_capability'][0]}{dev['compute_capability'][1]}"
    rows = training_rows(rec, trained)
    configs = candidate_configs(rows)
    resources = dict(resources or {})
    # every split of every candidate is a build of its own: its registers set how many blocks an SM holds
    builds = [(kernel, v) for kernel, params in configs for v in split_variants(registry.KERNELS[kernel], params)]
    precompile([(kernel, v, arch) for kernel, v in builds if config_key(kernel, v) not in resources])
    for kernel, v in builds:
        if config_key(kernel, v) not in resources:
            build = compile_kernel(kernel, v, arch)
            resources[config_key(kernel, v)] = (build.resources.registers, build.resources.static_smem)
    data: list[CandidateRows] = []
    best_rates = []             # per candidate: the best rate (TFLOP/s) its rows reached
    for kernel, params in configs:
        spec = registry.KERNELS[kernel]
        mine = [r for r in rows if r["kernel"] == kernel and unsplit(spec, r["params"]) == params]
        best_rates.append(max(Problem(*records.shape_key(r)).flops / (r["ms"] * 1e9) for r in mine))
        per_sm = np.array([blocks_per_sm(spec, r["params"], *resources[config_key(kernel, spec.resolve(r["params"]))],
                                         arch) for r in mine])
        own_per_sm = blocks_per_sm(spec, params, *resources[config_key(kernel, params)], arch)
        feats = [features(spec, r["params"], Problem(*records.shape_key(r)), dev["sm_count"], n)
                 for r, n in zip(mine, per_sm)]
        columns = [np.array([f[i] for f in feats], dtype=float if i in (1, 3) else None) for i in range(6)]
        scalar = np.array([scalar_stores(spec, Problem(*records.shape_key(r))) for r in mine])
        data.append(CandidateRows(*columns, np.array([r["ms"] * 1e3 for r in mine]), per_sm, scalar, per_sm / own_per_sm))

    def total(launch_us: float, alone: float, chain_us: float, ragged: float, of=data) -> float:
        return sum(d.error(launch_us, alone, chain_us, ragged) for d in of)
    # launch and alone on their grid, then chain and ragged each on its own (each moves only some
    # rows: the split ones, the ragged ones), twice over
    launch, alone, chain, ragged = 0.0, 1.0, 0.0, 0.0
    for _ in range(2):
        launch, alone = (float(x) for x in _best(((lu, a) for lu in LAUNCH_GRID_US for a in ALONE_GRID),
                                                 lambda g: total(g[0], g[1], chain, ragged)))
        chain = float(_best(CHAIN_GRID_US, lambda c: total(launch, alone, c, ragged)))
        ragged = float(_best(RAGGED_GRID, lambda r: total(launch, alone, chain, r)))
    # each slow copy path costs what its own code costs (09-11 share 09's checked copies and one rule for
    # which tiles take them; 13 copies B 4 bytes at a time, unchecked): `ragged` per copy path, fitted to the rows
    # of every kernel that shares it, where they take that path at all; kept per kernel
    by_kernel = {}
    for path in sorted({copy_path(registry.KERNELS[kernel]) for kernel, _ in configs} - {None}):
        names = sorted({kernel for kernel, _ in configs if copy_path(registry.KERNELS[kernel]) == path})
        mine = [d for (kernel, _), d in zip(configs, data) if kernel in names]
        if any(np.any(d.checked > 0) for d in mine):
            r_path = float(_best(RAGGED_GRID, lambda r: total(launch, alone, chain, r, of=mine)))
            by_kernel.update({name: r_path for name in names})
    # a chain is a different thing in each kernel that has one (11's pieces add into C in turn, 13's last
    # piece reads the others' partial tiles): `chain` per kernel, fitted to its rows, where it has any
    chain_by_kernel = {}
    for name in sorted({kernel for kernel, _ in configs}):
        mine = [d for (kernel, _), d in zip(configs, data) if kernel == name]
        if any(np.any(d.pieces > 0) for d in mine):
            chain_by_kernel[name] = float(_best(CHAIN_GRID_US, lambda c: total(
                launch, alone, c, by_kernel.get(name, ragged), of=mine)))
    # a kernel that stores C 4 bytes at a time where C's rows are not 16-byte multiples spends longer in its
    # epilogue there, most of a tile's time at a small K: `store` per kernel, fitted to its rows where any has it,
    # for its configurations with too few such rows of their own
    store_by_kernel = {}
    for name in sorted({kernel for kernel, _ in configs}):
        mine = [d for (kernel, _), d in zip(configs, data) if kernel == name]
        if any(np.any(d.scalar > 0) for d in mine):
            store_by_kernel[name] = float(_best(STORE_GRID, lambda s: sum(
                d.error(launch, alone, chain_by_kernel.get(name, chain), by_kernel.get(name, ragged), s) for d in mine)))
    candidates, errors = [], []
    for (kernel, params), d, best_tflops in zip(configs, data, best_rates):
        chain_k = chain_by_kernel.get(kernel, chain)
        ragged_k = by_kernel.get(kernel, ragged)
        store_k = store_by_kernel.get(kernel, 0.0)
        # how fast a block runs on an SM it shares with fewer than a full round depends on the
        # configuration (64 threads alone are latency-bound, 256 are not): each candidate its own
        # `alone`, on the same grid, where enough of its rows have such rounds
        own, own_chain = alone, chain_k
        alones = ALONE_GRID if np.count_nonzero(d.lone | (d.rest > 0)) >= OWN_ALONE_ROWS else (alone,)
        # and its own `chain` where enough of its launches show it: chapter 11's where they split every tile
        # (where only a last wave is split, the chain hides behind the other tiles and says nothing), and
        # a kernel's that cuts every tile along K (its gather ends every launch) wherever it cuts
        spec = registry.KERNELS[kernel]
        gathers = any(pieces_of(spec, v)[1] > 1 for v in split_variants(spec, params))
        shown = (d.pieces > 0) & (d.lone | gathers)
        chains = CHAIN_GRID_US if np.count_nonzero(shown) >= OWN_ALONE_ROWS else (chain_k,)
        if len(alones) > 1 or len(chains) > 1:
            own, own_chain = _best(((x, c) for x in alones for c in chains),
                                   lambda g: d.error(launch, g[0], g[1], ragged_k, store_k))
        # and its own `store` where enough of its rows store C 4 bytes at a time (its kernel's one factor alone had
        # set one configuration's per-tile cost to 0, fitting its few such rows with its many others)
        own_store = None
        if np.count_nonzero(d.scalar) >= OWN_ALONE_ROWS:
            own_store = float(_best(STORE_GRID, lambda s: d.error(launch, own, own_chain, ragged_k, s)))
        store_c = store_k if own_store is None else own_store
        fixed = launch + own_chain * d.pieces
        w = d.model_waves(own, ragged_k)
        a, b, _ = _fit_one(w, d.k, d.us, fixed, 1 + store_c * d.scalar)
        rel = (fixed + w * (a * (1 + store_c * d.scalar) + b * d.k)) / d.us - 1
        errors += list(rel)
        regs, smem = resources[config_key(kernel, params)]
        splits = [{"split": {n: v[n] for n in split_tunables(spec)},
                   **dict(zip(("registers", "static_smem"), resources[config_key(kernel, v)]))}
                  for v in split_variants(spec, params) if v != params]
        candidates.append({"kernel": kernel, "params": params, "registers": regs, "static_smem": smem,
                           "per_tile_us": a, "per_step_us": b, "alone": own, "chain_us": own_chain, "store": own_store,
                           "best_tflops": round(best_tflops, 3), "rows": len(d.us),
                           "worst_error": float(np.abs(rel).max()), **({"split_builds": splits} if splits else {})})
    errors = np.abs(np.array(errors))
    used = sorted({kernel for kernel, _ in configs})
    return {
        "about": "gemmlab.matmul's model of a launch's time (gemmlab/dispatch.py), fitted to the record named "
                 "here by `python -m gemmlab fit`: do not edit by hand",
        "device": {k: dev[k] for k in ("name", "compute_capability", "sm_count", "clock_mhz", "fp32_lanes_per_sm",
                                       "l2_bytes", "peak_fp32_tflops", "dram_gbs", "measured_copy_gbs") if k in dev},
        "record": {"file": rec.path.name, "date": rec.data["date"]},
        "sources": {k: rec.data["sources"][k] for k in used},
        "launch_us": launch,
        "alone": alone,
        "chain_us": chain,
        "ragged": ragged,
        "ragged_by_kernel": by_kernel,
        "chain_by_kernel": chain_by_kernel,
        "store_by_kernel": store_by_kernel,
        "fit": {"rows": int(errors.size), "median_error": float(np.median(errors)),
                "worst_error": float(errors.max())},
        "candidates": candidates,
    }


def write(model: dict, path: Path | None = None) -> Path:
    path = path or fitted_path(model["device"]["name"])
    path.parent.mkdir(parents=True, exist_ok=True)
    files.write_atomic(path, json.dumps(model, indent=1) + "\n")
    return path


