# The README's two commands: `make play` and `make test`. Each does all set-up it needs.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.kgagent-installed
ARCH := $(shell uname -m)
# torch/torchvision pairs that import together (2.13.0 + PyPI torchvision does not).
ifeq ($(ARCH),aarch64)
TORCH := torch==2.9.1 torchvision==0.24.1
else
TORCH := torch==2.14.1 torchvision==0.29.1
endif
# On x86-64 the package versions behind docs/benchmarks.md's figures (a pip freeze): the
# README's commands install them, so that a run reproduces the published numbers and a new
# release upstream changes nothing until the file is updated (opencv-python 5.1 draws the
# built-in games' text a few pixels wider, and every trajectory differs). Others: the newest.
ifeq ($(ARCH),x86_64)
CONSTRAINTS := -c benchmarks/constraints.txt
endif
# Debian packages the tests use: a real X server, X tools, a small window manager, programs
# no one here wrote, a headless browser for `kgagent view`, and the sandbox docs/games.md advises.
APT_PACKAGES := xvfb x11-apps x11-utils xterm evilwm chromium chromium-driver bubblewrap locales

.PHONY: play test setup system-deps lint format bench docs-screenshots clean

play: $(STAMP)
	$(BIN)/kgagent play

test: system-deps $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/python -m pytest
	KGAGENT_ENGINE=kuzu $(BIN)/python -m pytest -q -m "not slow"

setup: $(STAMP)

# A new environment takes about 7 GB (torch's wheels bring the CUDA libraries), and pip's
# temporary files ($TMPDIR, often the same disk) more while it installs: set-up refuses to
# start with less than this free where the environment goes, rather than leave a
# half-written one behind. SETUP_FREE_GB=0 skips the check.
SETUP_FREE_GB ?= 10
# An install that failed half-way (a full disk) can leave files pip will not replace.
REBUILD := run \`make clean setup\` to rebuild it

$(STAMP): pyproject.toml benchmarks/constraints.txt
	@if ! test -x "$(BIN)/python"; then \
	  if [ "$(SETUP_FREE_GB)" != 0 ]; then \
	    d=$$(dirname -- "$(VENV)"); while [ ! -d "$$d" ]; do d=$$(dirname -- "$$d"); done; d=$$(cd -- "$$d" && pwd); \
	    free=$$(df -Pk -- "$$d" 2>/dev/null | awk 'NR == 2 { print int($$4 / 1048576) }'); \
	    if [ -z "$$free" ]; then \
	      echo "error: cannot tell how much space is free in $$d for $(VENV) (make SETUP_FREE_GB=0 skips the check)" >&2; \
	      exit 1; \
	    fi; \
	    if [ "$$free" -lt "$(SETUP_FREE_GB)" ]; then \
	      echo "error: setting up $(VENV) needs about $(SETUP_FREE_GB) GB free in $$d; $$free GB are free (make SETUP_FREE_GB=N to change the check)" >&2; \
	      exit 1; \
	    fi; \
	  fi; \
	  $(PYTHON) -m venv "$(VENV)"; \
	fi
	set -o pipefail; $(BIN)/python -m pip install -q --disable-pip-version-check $(CONSTRAINTS) $(TORCH) 2>&1 | { grep -v "^WARNING: Location" || true; } \
	  || { echo "error: pip could not install torch into $(VENV) (above); $(REBUILD)" >&2; exit 1; }
	set -o pipefail; $(BIN)/python -m pip install -q --disable-pip-version-check $(CONSTRAINTS) -e '.[dev,models,games,bench]' 2>&1 | { grep -v "^WARNING: Location" || true; } \
	  || { echo "error: pip could not install kgagent into $(VENV) (above); $(REBUILD)" >&2; exit 1; }
	$(BIN)/python -c "import kgagent, torch, torchvision, open_clip, lancedb, gymnasium, crafter, pygame, dash, rapidocr_onnxruntime, ray, matplotlib" \
	  || { echo "error: the packages in $(VENV) do not import (above); $(REBUILD)" >&2; exit 1; }
	touch $(STAMP)

system-deps:
	@missing=0; for b in Xvfb xcalc xterm xwininfo evilwm chromium chromedriver bwrap; do command -v $$b >/dev/null || missing=1; done; [ -f /usr/share/i18n/locales/tr_TR ] || missing=1; \
	if [ $$missing = 1 ]; then \
	  SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
	  echo "installing Debian packages: $(APT_PACKAGES)"; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $(APT_PACKAGES) >/dev/null; \
	fi

# Screenshots of `kgagent view` in docs/img/, taken by the browser tests.
docs-screenshots: system-deps $(STAMP)
	KGAGENT_DOCS_SCREENSHOTS=1 $(BIN)/python -m pytest -q tests/view/test_browser.py

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

bench: $(STAMP)
	$(BIN)/python benchmarks/memory_scale.py
	$(BIN)/python benchmarks/random_baseline.py
	$(BIN)/python benchmarks/perception.py
	$(BIN)/python benchmarks/learning.py

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .ruff_cache
