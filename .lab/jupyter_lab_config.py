"""JupyterLab as `make lab` starts it (and tests/test_browser.py, so the test sees what a learner sees).

- It listens on 127.0.0.1 only, with a token, and serves notebooks/: the chapters, and beside them the
  workspace/ folder where each exercise's copy lives, so a chapter's link opens the copy in the editor.
- No pop-ups: no news feed and no update check (the course runs offline too).
- Printed lines wrap at spaces (custom/custom.css), not mid-word as JupyterLab's own style breaks them.
- Its terminals are the course's environment: a bash that activates the environment this lab runs in
  after the user's own ~/.bashrc, so `python -m gemmlab check 04` works there as the chapters say.
"""
import os
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
c = get_config()  # noqa: F821 (provided by Jupyter when it loads this file)

c.ServerApp.ip = "127.0.0.1"
c.ServerApp.root_dir = str(HERE.parent / "notebooks")
c.LabApp.news_url = None
c.LabApp.check_for_updates_class = "jupyterlab.NeverCheckForUpdate"
# settings/overrides.json: the lab's defaults for the course; the news question is asked unless fetchNews is set
c.LabApp.app_settings_dir = str(HERE / "settings")
# custom/custom.css: printed lines wrap at spaces, not mid-word. (The folder Jupyter serves it from is not
# configurable as such; the web application's settings, which tornado_settings overrides, carry it.)
def _takes_custom_css() -> bool:
    """JupyterLab 4 does; 3 (the ipywidgets 7 lab) has no such setting, and one it does not know stops it
    loading the lab."""
    try:
        from jupyterlab.labapp import LabApp
    except ImportError:
        return False
    return "custom_css" in LabApp.class_trait_names()


if _takes_custom_css():
    c.LabApp.custom_css = True
    c.ServerApp.tornado_settings = {"static_custom_path": [str(HERE / "custom")]}

# The terminal's shell inherits this process's environment; GEMMLAB_LAB_ENV names the environment to
# activate (a login shell would reset PATH from /etc/profile, hence an rc file of our own).
os.environ["GEMMLAB_LAB_ENV"] = sys.prefix
if shutil.which("bash"):
    c.ServerApp.terminado_settings = {"shell_command": ["bash", "--rcfile", str(HERE / "terminal.bashrc"), "-i"]}
