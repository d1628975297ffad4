# gieok — `make run` sets everything up and starts the server; `make test` sets everything up and runs the suite.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
export OMP_NUM_THREADS ?= 1
SHELL := /bin/bash

.PHONY: run test lint bench bench-ingest bench-search bench-locomo install install-test node clean shim unshim

GIEOK_BIN := $(abspath $(BIN))/gieok

$(BIN)/python:
	@echo "==> creating the virtualenv $(VENV) with $(PYTHON)"
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# Reinstall when pyproject.toml changes. Not --quiet: the first install takes about a minute, and pip's
# "Collecting …" lines are the progress.
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	@echo "==> installing gieok and its dependencies into $(VENV) (about a minute the first time)"
	@set -o pipefail; $(BIN)/python -m pip install --disable-pip-version-check --progress-bar on -e . \
		| { grep -v '^Requirement already satisfied' || true; }
	@echo "==> installed $(GIEOK_BIN)"
	@touch $@

$(VENV)/.installed-test: pyproject.toml $(VENV)/.installed
	$(BIN)/python -m pip install --quiet -e '.[test]'
	@touch $@

install: $(VENV)/.installed
install-test: $(VENV)/.installed-test node

# The MCP Inspector CLI for the end-to-end tests (pinned in tests/node/package-lock.json).
tests/node/node_modules/.installed: tests/node/package.json
	cd tests/node && npm install --no-audit --no-fund --loglevel=error
	@touch $@
node: tests/node/node_modules/.installed

# `gieok serve` checks the port first and says what holds it; the tip says how to reach bare `gieok` commands.
run: install
	@if [ "$$(readlink -f "$$(command -v gieok)" 2>/dev/null)" != "$$(readlink -f $(GIEOK_BIN))" ]; then \
		echo "tip: gieok is $(GIEOK_BIN); for bare gieok commands in another terminal:"; \
		echo "       export PATH=\"$(abspath $(BIN)):\$$PATH\"    (or once for good: make shim)"; fi
	$(BIN)/gieok serve --transport http

# Asked for by name only: links ~/.local/bin/gieok to this checkout's gieok (`make unshim` removes it).
shim: install
	@mkdir -p "$(HOME)/.local/bin"
	@ln -sfn "$(GIEOK_BIN)" "$(HOME)/.local/bin/gieok"
	@echo "linked $(HOME)/.local/bin/gieok -> $(GIEOK_BIN)"
	@case ":$$PATH:" in *":$(HOME)/.local/bin:"*) ;; *) \
		echo "$(HOME)/.local/bin is not on your PATH: add  export PATH=\"\$$HOME/.local/bin:\$$PATH\"  to ~/.bashrc or ~/.zshrc";; esac

unshim:
	@if [ "$$(readlink "$(HOME)/.local/bin/gieok")" = "$(GIEOK_BIN)" ]; then \
		rm "$(HOME)/.local/bin/gieok" && echo "removed $(HOME)/.local/bin/gieok"; \
	else echo "$(HOME)/.local/bin/gieok is not this checkout's link; left alone"; fi

lint: install-test
	$(BIN)/ruff check src tests
	$(BIN)/mypy

test: install-test lint
	$(BIN)/python -m pytest -q

bench: bench-ingest

bench-ingest: install
	$(BIN)/gieok bench ingest

bench-search: install
	$(BIN)/gieok bench search

bench-locomo: install
	$(BIN)/gieok bench locomo --data ../shared/eval/locomo-dev

clean:
	rm -rf $(VENV) tests/node/node_modules .pytest_cache .mypy_cache .ruff_cache
