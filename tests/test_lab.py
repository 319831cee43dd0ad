"""The lab `make lab` opens (.lab/jupyter_lab_config.py): on 127.0.0.1 with a token, serving the chapters
and their workspace, with no pop-ups, and terminals in the course's environment. The browser test
starts the lab with the same file and walks it."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from traitlets.config import Config

ROOT = Path(__file__).resolve().parent.parent
LAB = ROOT / ".lab"


@pytest.fixture
def config(monkeypatch):
    monkeypatch.delenv("GEMMLAB_LAB_ENV", raising=False)
    c = Config()
    exec(compile((LAB / "jupyter_lab_config.py").read_text(), "jupyter_lab_config.py", "exec"),
         {"get_config": lambda: c, "__file__": str(LAB / "jupyter_lab_config.py")})
    return c


def test_the_lab_listens_on_this_machine_only_and_serves_the_chapters(config):
    assert config.ServerApp.ip == "127.0.0.1"
    assert "token" not in config.IdentityProvider, "the token is left on (Jupyter makes one)"
    root = Path(config.ServerApp.root_dir)
    assert root == ROOT / "notebooks"
    from gemmlab import exercises
    if not os.environ.get("GEMMLAB_WORKSPACE"):
        assert exercises.workspace().parent == root, "the exercises' copies lie where the lab reaches them"


def test_the_lab_asks_no_news_question_and_checks_no_update(config):
    assert config.LabApp.news_url is None
    assert config.LabApp.check_for_updates_class == "jupyterlab.NeverCheckForUpdate"
    overrides = json.loads((Path(config.LabApp.app_settings_dir) / "overrides.json").read_text())
    notification = overrides["@jupyterlab/apputils-extension:notification"]
    assert notification == {"fetchNews": "false", "checkForUpdates": False}


def test_the_lab_wraps_printed_lines_at_spaces(config):
    """custom.css, served from .lab/custom by the web application's settings, overrides JupyterLab's word-break
    (JupyterLab 4; 3, the ipywidgets 7 lab, has no custom CSS and is given none)."""
    LabApp = pytest.importorskip("jupyterlab.labapp", reason="no JupyterLab here").LabApp
    if "custom_css" not in LabApp.class_trait_names():
        assert "custom_css" not in config.LabApp, "a setting JupyterLab 3 does not know stops it loading the lab"
        return
    assert config.LabApp.custom_css is True
    css = Path(config.ServerApp.tornado_settings["static_custom_path"][0]) / "custom.css"
    assert "word-break: normal" in css.read_text()


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash here: the lab's terminals keep Jupyter's default")
@pytest.mark.skipif(not (Path(sys.prefix) / "bin" / "activate").exists(), reason="not running in a virtual environment")
def test_a_lab_terminal_runs_the_courses_python(config, tmp_path):
    """Even where the login PATH knows nothing of the environment (a login shell resets PATH from
    /etc/profile; this one starts from a bare PATH and an empty home)."""
    shell = config.ServerApp.terminado_settings["shell_command"]
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "GEMMLAB_LAB_ENV": os.environ["GEMMLAB_LAB_ENV"]}
    said = subprocess.run([*shell, "-c", "python -c 'import sys, gemmlab, tqdm; print(sys.prefix)'"],
                          capture_output=True, text=True, env=env, timeout=60)
    assert said.stdout.strip().splitlines()[-1] == sys.prefix, said.stderr
