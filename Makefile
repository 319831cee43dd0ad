# gemmlab: two commands on a fresh machine.
#   make lab    creates the environment if missing, then opens JupyterLab on notebooks/ (.lab/ holds its settings)
#   make test   creates the environment if missing, then runs the whole test suite
#
# Knobs (all optional):
#   CUDA=12|13|none   which CUDA build to install; found from the driver (nvidia-smi) if unset
#   WHEELHOUSE=dir    install offline from a folder of wheels (no package index)
#   REUSE_SYSTEM=1    let the environment see the packages of $(PYTHON) (e.g. a CuPy already
#                     installed system-wide); used on GPU boxes with no internet
#   PYTHON=python3    the interpreter the environment is made from

comma  := ,
PYTHON ?= python3
VENV   ?= .venv
PY      = $(VENV)/bin/python
PIP     = $(PY) -m pip

# The CUDA major version the driver supports, empty with no driver.
CUDA ?= $(shell nvidia-smi 2>/dev/null | sed -n 's/.*CUDA Version: *\([0-9][0-9]*\).*/\1/p' | head -n 1)
ifeq ($(CUDA),12)
  EXTRAS = cuda12,gpu12
else ifeq ($(CUDA),13)
  EXTRAS = cuda13,gpu13
else
  # No driver: compile-only toolchain, no CuPy. Recorded H100 results stand in for timings.
  EXTRAS = cuda13
endif
ifeq ($(REUSE_SYSTEM),1)
  # A CuPy the system already has is used as it is: skip the gpu extra if it imports.
  ifneq ($(shell $(PYTHON) -c 'import cupy' 2>/dev/null && echo yes),)
    EXTRAS := $(subst $(comma)gpu12,,$(subst $(comma)gpu13,,$(EXTRAS)))
  endif
endif
PIP_SOURCE = $(if $(WHEELHOUSE),--no-index --find-links $(abspath $(WHEELHOUSE)),)
STAMP = $(VENV)/.gemmlab-$(subst $(comma),-,$(EXTRAS))$(if $(REUSE_SYSTEM),-system,)

.PHONY: lab test test-slow test-widgets7 test-cuda12 test-py310 env env-lab env-browser clean-env gpu-session

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
ifeq ($(REUSE_SYSTEM),1)
	@# Put the interpreter's own site-packages (a venv's too) behind ours.
	$(PY) -c 'import sys,site,pathlib; p=pathlib.Path(site.getsitepackages()[0])/"_gemmlab_system.pth"; p.write_text(sys.argv[1]+"\n")' \
	  "$$($(PYTHON) -c 'import site; print(chr(10).join(site.getsitepackages()))')"
endif
	$(PIP) install -q $(PIP_SOURCE) -e ".[$(EXTRAS),test]"
	@rm -f $(VENV)/.gemmlab-* && touch $@

env: $(STAMP)

env-lab: env
	@$(PY) -c 'import jupyterlab' 2>/dev/null || $(PIP) install -q $(PIP_SOURCE) -e ".[$(EXTRAS),test,lab]"

# JupyterLab and Playwright, for the browser test (CI runs it; it skips without them)
env-browser: env-lab
	@$(PY) -c 'import playwright' 2>/dev/null || $(PIP) install -q $(PIP_SOURCE) -e ".[$(EXTRAS),test,lab,browser]"

# The lab's settings (127.0.0.1 with a token, notebooks/ served, no pop-ups, terminals in this environment)
# are in .lab/jupyter_lab_config.py.
lab: env-lab
	$(VENV)/bin/jupyter lab --config=.lab/jupyter_lab_config.py $(if $(filter 0,$(shell id -u)),--allow-root,)

# PYTEST_ARGS: more pytest options, e.g. "-n 8 --dist loadfile" (pytest-xdist: one file or notebook per
# worker, whole) where there are cores to spare, as .ci/gpu-session does on the GPU machine.
# make test: what a contributor runs after every change. The heavy tier (tests marked slow: every
# architecture, every extreme configuration, refits; and the browser tests) is make test-slow, which CI
# runs too.
# WORKERS: pytest-xdist processes, one test file or notebook each at a time (default: one per core; 0: none,
# as for tests that time something and need the GPU to themselves).
WORKERS ?= $(shell nproc 2>/dev/null || echo 2)
XDIST = $(if $(filter 0,$(WORKERS)),,-n $(WORKERS) --dist loadfile)
# The notebooks first: pytest-xdist hands out files in the order given, and the longest first leaves the
# short test files to even out the workers at the end.
test: env
	$(PY) -m pytest --nbval --nbval-current-env -m "not slow and not browser" $(XDIST) $(PYTEST_ARGS) notebooks tests

test-slow: env
	$(PY) -m pytest -m "slow or browser" $(XDIST) $(PYTEST_ARGS) tests

# $(call borrowing_env,DIR,PACKAGES): a second small environment in DIR that holds only PACKAGES and
# borrows everything else from $(VENV) (a path line, so $(VENV)'s editable gemmlab is not used there:
# the targets below set PYTHONPATH).
PURELIB = -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])'
define borrowing_env
@test -x $(1)/bin/python || $(PYTHON) -m venv --without-pip $(1)
@site=$$($(1)/bin/python $(PURELIB)); $(PY) $(PURELIB) > $$site/borrowed.pth; \
  $(PIP) install -q $(PIP_SOURCE) --no-deps --ignore-installed --prefix $(1) $(2)
endef

# The notebooks and the widget test again under ipywidgets 7.7, the major Colab's front end supports; and the
# browser test's learner's loop in JupyterLab 3.6 with it (JupyterLab 4's widget manager loads ipywidgets 8's
# models only), lab and kernel from this environment.
WIDGETS7 = .venv-widgets7
WIDGETS7_PKGS = "ipywidgets==7.7.5" "widgetsnbextension~=3.6.0" "jupyterlab-widgets>=1,<3" "ipython-genutils~=0.2.0" \
                "jupyterlab~=3.6.8" "nbclassic~=1.3"
test-widgets7: env
	$(call borrowing_env,$(WIDGETS7),$(WIDGETS7_PKGS))
	PYTHONPATH=$(CURDIR) GEMMLAB_EXPECT_IPYWIDGETS=7 $(WIDGETS7)/bin/python -m pytest -p no:cacheprovider --nbval --nbval-current-env \
	  $(XDIST) tests/test_widgets.py notebooks
	GEMMLAB_BROWSER_LAB_PYTHON=$(abspath $(WIDGETS7))/bin/python $(PY) -m pytest -p no:cacheprovider \
	  tests/test_browser.py -k "learners_loop or quietly"

# The compile and architecture tests again with the CUDA 12 toolchain (NVRTC 12.9 through cuda-bindings
# 12.9), a learner's with a CUDA 12 driver: every default and extreme configuration on the two architectures
# whose resources are cross-checked (sm_80, sm_90); the whole matrix of every architecture is CUDA 13's, in
# test-slow.
CUDA12 = .venv-cuda12
CUDA12_PKGS = "nvidia-cuda-nvrtc-cu12==12.9.86" "cuda-bindings>=12.9,<13"
test-cuda12: env
	$(call borrowing_env,$(CUDA12),$(CUDA12_PKGS))
	PYTHONPATH=$(CURDIR) GEMMLAB_EXPECT_NVRTC=12. $(CUDA12)/bin/python -m pytest -p no:cacheprovider $(XDIST) \
	  -k "not test_compiles_at_default_and_extreme_configs or sm_80 or sm_90" \
	  tests/test_compile.py tests/test_compile_matrix.py tests/test_arch.py

# The fast tier's tests again on the oldest Python gemmlab supports, 3.10, in an environment of its own,
# where one is installed (pyenv's, or python3.10 on the PATH); elsewhere it says so and passes. The
# notebooks are left out there: they call the same lessons the tests call, and make test runs them.
PY310 := $(shell for p in $(wildcard $(HOME)/.pyenv/versions/3.10*/bin/python3.10) python3.10; do \
           $$p -c 'import sys; assert sys.version_info[:2] == (3, 10)' 2>/dev/null && echo $$p && break; done)
test-py310:
	@if [ -z "$(PY310)" ]; then echo "test-py310: no Python 3.10 here, skipped"; \
	 else $(MAKE) --no-print-directory env VENV=.venv-py310 PYTHON=$(PY310) && \
	      .venv-py310/bin/python -m pytest -m "not slow and not browser" $(XDIST) $(PYTEST_ARGS) tests; fi

# On a GPU box: tests, records and executed notebooks in one go (see .ci/gpu-session).
gpu-session:
	bash .ci/gpu-session

clean-env:
	rm -rf $(VENV) $(WIDGETS7) $(CUDA12)
