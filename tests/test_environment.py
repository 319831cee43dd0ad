"""environment.yml (conda) and pyproject.toml list the same dependencies."""
import re
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent


def _name(req: str) -> str:
    return re.split(r"[<>=!\[; ]", req.strip(), maxsplit=1)[0].lower().replace("_", "-")


def _pins(reqs):
    return {_name(r): re.sub(r"\[.*?\]", "", r).replace(" ", "")[len(_name(r)):] for r in reqs}


def test_environment_yml_matches_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    # conda users get the CUDA 13 toolchain, CuPy for CUDA 13, the tests and JupyterLab
    wanted = project["dependencies"] + extras["cuda13"] + extras["gpu13"] + extras["test"] + extras["lab"]
    wanted = [r for r in wanted if "python_version" not in r]
    listed = []
    text = (ROOT / "environment.yml").read_text()
    for line in text[text.index("dependencies:"):].splitlines():
        m = re.match(r"\s+- (?!pip$)(?!python[ =<>])([A-Za-z].*)$", line)
        if m and not m.group(1).startswith("pip:"):
            listed.append(m.group(1).strip())
    assert _pins(listed) == _pins(wanted)
