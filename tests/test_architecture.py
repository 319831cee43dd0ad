"""The package's shape: no import circles, no module importing one above it, no private names used
across modules, kernel names only in the specs, and no public lesson that no notebook calls."""
import ast
import json
import re
from pathlib import Path

import pytest

from gemmlab import lessons, registry

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "gemmlab"

# The three parts (docs/architecture.md): the course (what notebooks import: the kernel contract and
# specs, build, measure, results, lessons, plots and pictures, widgets, exercises), the library (gemmlab.matmul:
# gemmlab/library/) and research (fitting, training, the recorder, the prose checkers, the notebook
# runner: gemmlab/research/). Dependencies point one way: the library uses the course, research uses
# both; the course imports neither, the library not research. The command line (__main__) and the
# package's root (gemmlab.matmul, on first use) join them.
ENTRY = {"__main__", "__init__"}


def part(module: str) -> str:
    top = module.split(".")[0]
    return "entry" if module in ENTRY else top if top in ("library", "research") else "course"


# Within the course, top to bottom: a module may import only modules on lower lines (or on its own
# line, within a package).
LAYERS = [
    ["__main__"],
    ["research"],
    ["library"],
    ["cli_args"],
    ["lessons"],
    ["widgets"],
    ["campaigns", "launch"],
    ["results"],
    ["tune", "exercises"],
    ["cpu_check"],
    ["verdict"],
    ["cpu"],
    ["bench", "probes", "support"],
    ["records"],
    ["compile_aside"],
    ["compile"],
    ["registry"],
    ["pictures", "config_plots"],
    ["plots", "roofline", "sass"],
    ["specs"],
    ["kernel_model"],
    ["spec"],
    ["legal_configs"],
    ["course", "identity", "device", "cubin", "toolchain", "files", "prebuilt", "progress"],
    ["arch"],
]
LEVEL = {name: i for i, names in enumerate(LAYERS) for name in names}


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    return ".".join(p for p in parts if p != "__init__") or "__init__"


def _top(name: str) -> str:
    return name.split(".")[0]


def imports() -> dict[str, set[str]]:
    """module -> the gemmlab modules it imports anywhere in its body (functions included)."""
    graph = {}
    for path in PACKAGE.rglob("*.py"):
        name = _module_name(path)
        directory = list(path.relative_to(PACKAGE).parent.parts)   # the package a relative import starts from
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = directory[:len(directory) - (node.level - 1)]
                    target = ".".join(base + ([node.module] if node.module else []))
                    # `from .x import y`: y may be a submodule of x, or a name in it
                    targets = [target] + [f"{target}.{a.name}" if target else a.name for a in node.names]
                elif node.module and node.module.startswith("gemmlab"):
                    targets = [node.module[len("gemmlab."):] or "__init__"]
                else:
                    continue
                found.update(t for t in targets if t)
            elif isinstance(node, ast.Import):
                found.update(a.name[len("gemmlab."):] for a in node.names if a.name.startswith("gemmlab."))
        modules = {_module_name(p) for p in PACKAGE.rglob("*.py")}
        graph[name] = {t for t in found if t in modules and t != name}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A path that comes back to where it started, or None."""
    state = {}

    def visit(node, trail):
        state[node] = "open"
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                return trail[trail.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt, trail + [nxt])
                if found:
                    return found
        state[node] = "done"
        return None
    for node in sorted(graph):
        if node not in state:
            found = visit(node, [node])
            if found:
                return found
    return None


def test_the_parts_depend_one_way():
    """The course imports neither the library nor research; the library does not import research."""
    graph = imports()
    assert "library.dispatch" in graph["library"] and "bench" in graph["library"], "the walk finds imports"
    allowed = {"course": {"course"}, "library": {"course", "library"}, "research": {"course", "library", "research"},
               "entry": {"course", "library", "research", "entry"}}
    wrong = sorted((m, t) for m, targets in graph.items() for t in targets if part(t) not in allowed[part(m)])
    assert not wrong, f"imports against the parts' direction: {wrong}"


def test_the_parts_test_sees_a_wrong_import():
    assert part("lessons.common") == "course" and part("library.dispatch") == "library"
    assert part("research.fit") == "research" and part("__main__") == "entry"


def test_the_package_has_no_import_circle():
    graph = imports()
    assert {"records", "tune"} <= graph["results"] and "results" in graph["lessons.common"], "the walk finds imports"
    cycle = find_cycle(graph)
    assert cycle is None, "import circle: " + " -> ".join(cycle or [])


def test_the_circle_finder_finds_circles():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


def test_no_module_imports_one_above_it():
    graph = imports()
    unplaced = {_top(m) for m in graph} - set(LEVEL) - {"__init__"}
    assert not unplaced, f"modules missing from LAYERS: {unplaced}"
    wrong = [(m, t) for m, targets in graph.items() for t in targets
             if _top(m) != "__init__" and _top(t) != "__init__" and LEVEL[_top(t)] < LEVEL[_top(m)]]
    assert not wrong, f"imports of a module above: {wrong}"


def test_no_private_name_is_used_across_modules():
    modules = {_module_name(p).split(".")[-1] for p in PACKAGE.rglob("*.py")} | {"compiler"}
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")
                    and isinstance(node.value, ast.Name) and node.value.id in modules):
                offenders.append(f"{path.name}: {node.value.id}.{node.attr}")
            if isinstance(node, ast.ImportFrom) and node.level:
                offenders += [f"{path.name}: from {node.module} import {a.name}" for a in node.names
                              if a.name.startswith("_") and not a.name.startswith("__")]
    assert not offenders, offenders


def test_only_the_specs_name_a_kernel():
    """Kernel names and their .cu files are written in gemmlab/specs/ and nowhere else in the package."""
    names = "|".join(re.escape(n) for n in registry.KERNELS)
    pattern = re.compile(rf"\b({names})\b")
    offenders = [f"{p.relative_to(ROOT)}:{i}" for p in PACKAGE.rglob("*.py") if "specs" not in p.parts
                 for i, line in enumerate(p.read_text().splitlines(), 1) if pattern.search(line)]
    assert not offenders, offenders


def _notebook_calls() -> set[str]:
    """Lessons a notebook's code calls, and those its prose tells the learner to call (hints and
    solutions are run on demand, so no committed output gives them away)."""
    called = set()
    for path in (ROOT / "notebooks").glob("*.ipynb"):
        for cell in json.loads(path.read_text())["cells"]:
            source = "".join(cell["source"])
            if cell["cell_type"] == "code":
                called.update(re.findall(r"\bgl\.(\w+)\(", source))
            else:
                called.update(re.findall(r"`gl\.(\w+)\(", source))
    return called


def test_every_public_lesson_is_called_by_a_notebook():
    public = {n for n in dir(lessons) if not n.startswith("_") and callable(getattr(lessons, n))}
    assert public - _notebook_calls() == set(), "lessons no notebook calls"


# The exercise cells ask the learner to act; their names are the verbs the chapters teach.
EXERCISE_VERBS = {"exercise", "check", "hint", "solution", "progress"}


def test_lesson_functions_are_named_for_what_they_do():
    public = [n for n in dir(lessons) if not n.startswith("_") and callable(getattr(lessons, n))]
    odd = [n for n in public if not n.startswith("show_") and n not in EXERCISE_VERBS]
    assert not odd, odd


def shortest_path(graph: dict[str, set[str]], start: str, goal: str) -> list[str] | None:
    """The fewest modules from `start` to `goal` along imports, both ends counted, or None."""
    trails, frontier = {start: [start]}, [start]
    while frontier:
        nxt = []
        for node in frontier:
            if node == goal:
                return trails[node]
            for target in sorted(graph.get(node, ())):
                if target not in trails:
                    trails[target] = trails[node] + [target]
                    nxt.append(target)
        frontier = nxt
    return None


# Where a cell's number comes from: the registry turns a name into the kernel's spec and its .cu file (spec.path),
# and bench builds, launches, validates and times it.
KERNEL_ENDS = ("registry", "bench")


def test_a_cell_is_at_most_three_modules_from_its_kernel():
    """From the lesson a notebook cell calls, the registry (the kernel's spec and .cu) and bench (its build,
    launch, validation and timing) are each at most three modules away, the lesson's own module counted."""
    import gemmlab.library.lessons as library_lessons
    graph = imports()
    called = [(lessons, n) for n in _notebook_calls() if hasattr(lessons, n)]
    called += [(library_lessons, n) for n in dir(library_lessons) if not n.startswith("_")
               and callable(getattr(library_lessons, n)) and getattr(library_lessons, n).__module__.startswith("gemmlab")]
    far = []
    for package, name in called:
        fn = getattr(package, name)
        module = getattr(fn, "__wrapped__", fn).__module__[len("gemmlab."):]
        for end in KERNEL_ENDS:
            trail = shortest_path(graph, module, end)
            if trail is not None and len(trail) > 3:
                far.append(f"{name}: {' -> '.join(trail)}")
    assert called and not far, far


def test_the_path_finder_counts_modules():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"d"}}
    assert shortest_path(graph, "a", "c") == ["a", "b", "c"]
    assert shortest_path(graph, "a", "d") == ["a", "b", "c", "d"]
    assert shortest_path(graph, "d", "a") is None


MODULE_LINES = 450


def test_every_module_is_at_most_450_lines():
    long = [f"{p.relative_to(ROOT)}: {n}" for p in PACKAGE.rglob("*.py")
            if (n := len(p.read_text().splitlines())) > MODULE_LINES]
    assert not long, long
