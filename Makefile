# Two commands do all set-up on a fresh machine (see README.md):
#   make book   install, execute every chapter with papermill (profile "book"), render _build/html
#   make test   install, run the tests
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python

# Some images (CI's, this project's machines) set PYTHONDONTWRITEBYTECODE: then no .pyc is ever
# cached and every chapter kernel and pool worker recompiles torch's Python files on import (a
# kernel importing torch, nhtlab and altair: ~10 s instead of ~5). Here bytecode is written once,
# on first import, into .venv and the ignored __pycache__ folders.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: book test install clean reproduce format measurements kernel-paths

# What the install honours (uv reads no pip configuration):
#   TORCH_INDEX_URL   an extra index for torch and torchvision, e.g. PyTorch's CPU wheels
#                     (https://download.pytorch.org/whl/cpu, as the workflows set it): ~200 MB
#                     instead of the CUDA build's several GB; unset, torch comes from PyPI.
#   PIP_CONSTRAINT_FILE  pip's constraints handed to uv; by default /etc/xdg/pip/constraints.txt
#                     where a machine caps its torch there (this project's machines do).
#   RESOLUTION        uv's --resolution: highest (default) or lowest-direct (each declared minimum;
#                     .github/workflows/drift.yml).
TORCH_INDEX_URL     ?=
PIP_CONSTRAINT_FILE ?= $(wildcard /etc/xdg/pip/constraints.txt)
RESOLUTION          ?= highest
UV_ARGS := --resolution $(RESOLUTION) \
	$(if $(PIP_CONSTRAINT_FILE),--constraint $(PIP_CONSTRAINT_FILE)) \
	$(if $(TORCH_INDEX_URL),--extra-index-url $(TORCH_INDEX_URL) --index-strategy unsafe-best-match)

# uv from the package index into the venv, then uv resolves and installs everything (in parallel,
# hard-linked from its cache when warm). Like pip --no-compile, uv compiles no bytecode: Python
# writes it on first import (see above).
# When make started (install is the first thing `make book` and `make test` do): the install's time, printed apart.
MAKE_START := $(shell date +%s)

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade uv
	$(PY) -m uv pip install --python $(PY) $(UV_ARGS) -e ".[book,test]"
	touch $@
	@echo "install: $$(( $$(date +%s) - $(MAKE_START) )) s (apart from the build and the tests)"

install: $(VENV)/.installed

book: install
	$(PY) tools/build_book.py --profile book --jobs 2

test: install
	$(PY) -m pytest $(PYTEST_ARGS)

# The chapters' code in book/ruff.toml's style (lines fit the page's code column), then their
# notebooks brought level with the text form. Long strings and comments are wrapped by hand:
# ruff format does not split them (tests/test_chapter_format.py finds any).
format: install
	$(VENV)/bin/ruff format book/*.py
	$(VENV)/bin/jupytext --sync book/*.py

# The companion paper's λ sweep (Table 3) on this machine: about 300k training steps.
reproduce: install
	$(PY) scripts/reproduce_table3.py $(REPRODUCE_ARGS)

# book/measurements.md, rendered from the JSON records the benchmarks write
# (benchmarks/_record: CPU model, cores, torch version, date, the measured numbers).
measurements: install
	$(PY) tools/measurements_page.py

# The book's closing checks under a second CPU kernel path (ATEN_CPU_CAPABILITY=default) beside
# `make book`'s native build: book/data/kernel_paths.json and the How to run fragment
# book/across_machines.md. Two builds of the book; a release's check, not CI's.
kernel-paths: install
	$(PY) tools/kernel_paths.py

clean:
	rm -rf _build
