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

.PHONY: book test install clean reproduce format

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --upgrade pip
	# pip resolves once, then one pip process per core installs the resolved wheels (torch's ~4.5 GB unpack on one
	# core left the other idle; tools/install.py). --no-compile inside: Python compiles what is imported on first
	# use (see above); pip would compile all ~12,000 files (~30 s)
	$(PY) tools/install.py ".[book,test]"
	touch $@

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

clean:
	rm -rf _build
