# Two commands for a fresh machine with Python 3.11+: `make run` and `make test`.
# Both create (or reuse) .venv and install meshnode with the pinned versions
# in constraints.txt: `make run` what a node needs and nothing more, `make test`
# the test and bench tools on top. An install is redone when pyproject.toml or
# constraints.txt change.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
BASE   := $(VENV)/.installed-base
TOOLS  := $(VENV)/.installed-test

.PHONY: run test soak bench system-deps browser clean

run: $(BASE)
	$(BIN)/meshnode --home . init --exist-ok
	$(BIN)/meshnode --home . run

# one pytest worker per core, each test file on one worker (its module-scoped nodes stay shared), in
# the order tests/conftest.py collects them (files that start processes first). One worker more (3 on
# 2 cores) was ~15% faster, but in two of four fresh-clone runs tests that wait on nodes' timing
# failed under the extra load: `make test JOBS=3` runs it that way.
# `make test JOBS=0` runs everything in this one process
JOBS ?= auto

test: $(TOOLS) browser
	$(BIN)/python -m pytest $(if $(filter 0,$(JOBS)),,-n $(JOBS) --dist loadfile --no-loadscope-reorder)

soak: $(TOOLS)
	$(BIN)/python -m pytest -m soak --timeout=0

bench: $(TOOLS)
	for script in bench/*.py; do $(BIN)/python $$script || exit 1; done

# the node itself: what `make run` needs
$(BASE): pyproject.toml constraints.txt
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || \
	  { echo "meshnode needs Python 3.11 or newer (found $$($(PYTHON) --version))"; exit 1; }
	@$(MAKE) --no-print-directory system-deps
	@test -x $(BIN)/pip || { rm -rf $(VENV) && $(PYTHON) -m venv $(VENV); }
	$(BIN)/python -m pip install --quiet -c constraints.txt -e .
	@touch $(BASE)

# the test and bench tools on top (redone whenever the base install is)
$(TOOLS): $(BASE)
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[test,bench,web-test]'
	@touch $(TOOLS)

# py-libp2p's fastecdsa has no wheel for every Python: it compiles against
# libgmp and the Python headers. Install what is missing (and only that):
# a compiler, libgmp's header, Python's headers, and venv support.
system-deps:
	@missing=""; \
	command -v cc >/dev/null 2>&1 || missing="$$missing gcc"; \
	printf '#include <gmp.h>\n' | cc -E -x c - >/dev/null 2>&1 || missing="$$missing libgmp-dev"; \
	$(PYTHON) -c 'import os, sys, sysconfig; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' \
	  || missing="$$missing python3-dev"; \
	$(PYTHON) -c 'import ensurepip' >/dev/null 2>&1 || missing="$$missing python3-venv"; \
	if [ -n "$$missing" ]; then \
	  echo "installing system packages:$$missing"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi; \
	  $$SUDO apt-get update -q && $$SUDO apt-get install -y -q $$missing; \
	fi

# the web notebook's browser tests (tests/web) drive Debian's chromium through Playwright;
# `playwright install` is never used (it downloads a browser build of its own)
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "installing Debian's chromium for the browser tests"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi; \
	  $$SUDO apt-get update -q && $$SUDO apt-get install -y -q chromium; \
	}

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis .artifacts
