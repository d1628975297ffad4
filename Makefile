# gieok — `make run` sets everything up and starts the server; `make test` sets everything up and runs the suite.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
export OMP_NUM_THREADS ?= 1

.PHONY: run test lint bench bench-ingest bench-search bench-locomo install install-test node browser clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# Reinstall when pyproject.toml changes.
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	@touch $@

$(VENV)/.installed-test: pyproject.toml $(VENV)/.installed
	$(BIN)/python -m pip install --quiet -e '.[test]'
	@touch $@

install: $(VENV)/.installed
install-test: $(VENV)/.installed-test node browser

# The MCP Inspector CLI for the end-to-end tests (pinned in tests/node/package-lock.json).
tests/node/node_modules/.installed: tests/node/package.json
	cd tests/node && npm install --no-audit --no-fund --loglevel=error
	@touch $@
node: tests/node/node_modules/.installed

# The dashboard's browser tests drive Debian's headless Chromium through chromedriver; fonts-noto-cjk renders
# Korean in their screenshots (docs/dashboard.png). Installed with apt-get when missing (as root, as CI runs).
BROWSER_PKGS := chromium chromium-driver fonts-noto-cjk
browser:
	@missing=""; for p in $(BROWSER_PKGS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing$$missing for the dashboard's browser tests"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	fi

run: install
	$(BIN)/gieok serve --transport http

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
