# The rc file of a JupyterLab terminal started by `make lab` (.lab/jupyter_lab_config.py): the user's own
# settings first, then the course's environment on top, so `python` is the one the chapters run in.
[ -f "$HOME/.bashrc" ] && . "$HOME/.bashrc"
if [ -n "$GEMMLAB_LAB_ENV" ] && [ -f "$GEMMLAB_LAB_ENV/bin/activate" ]; then
    . "$GEMMLAB_LAB_ENV/bin/activate"
fi
