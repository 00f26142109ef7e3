# The two commands of the README: `make demo` and `make test`. Everything else supports them.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
SKYPILOT_EXTRACT ?= catalogs/sources
SKYPILOT_AS_OF ?= 2026-12-02

.PHONY: demo test soak bench install system-deps labextension catalogs sources validate clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# The editable install builds the JupyterLab extension (labextension/, with jlpm) when it is not built yet.
$(STAMP): $(BIN)/python pyproject.toml labextension/package.json
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

# Rebuild the JupyterLab extension after editing labextension/src.
labextension: install
	cd labextension && PATH=$(CURDIR)/$(BIN):$$PATH $(CURDIR)/$(BIN)/jlpm install && PATH=$(CURDIR)/$(BIN):$$PATH $(CURDIR)/$(BIN)/jlpm build:prod

install: system-deps $(STAMP)

demo: install
	$(BIN)/gpu-assist quote 8xA100 72h

# Debian packages: Node.js (builds the JupyterLab extension at install), PostgreSQL (multi-replica tests),
# Chromium (JupyterLab e2e).
DEB_PACKAGES := $(if $(shell command -v node),,nodejs) $(if $(wildcard /usr/lib/postgresql/*/bin/initdb),,postgresql) \
	$(if $(wildcard /usr/bin/chromium),,chromium)
system-deps:
	@if [ -n "$(strip $(DEB_PACKAGES))" ]; then \
		if [ "$$(id -u)" = 0 ]; then \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(DEB_PACKAGES); \
		else echo "note: $(DEB_PACKAGES) missing and this is not root: those tests will be skipped"; fi; \
	fi

test: install
	$(BIN)/python -m pytest -q

# The long variants of the reliability suite: 1,000 clicks over 2 replicas, ≥ 100,000 fuzz examples.
soak: install
	GPU_ASSIST_SOAK=1 $(BIN)/python -m pytest -q tests/reliability

# Figures, not tests: writes bench/results/latest.{json,md} (SkyPilot side by side in .venv-skypilot).
bench: install
	$(BIN)/python bench/run.py

# Rerunnable: regenerate the committed catalogs from the shared extracts and the ECB rates.
catalogs: install
	$(BIN)/gpu-assist catalog import-skypilot $(SKYPILOT_EXTRACT) --as-of $(SKYPILOT_AS_OF)
	$(BIN)/gpu-assist catalog import-fx
	$(BIN)/gpu-assist catalog validate

# Maintainers only: copy a newer drop of the raw extracts, seed articles and recorded API responses from a
# ../shared folder beside the clone into the repository (nothing at run or test time reads ../shared).
SHARED ?= ../shared
sources:
	@test -d $(SHARED)/catalog-data || { echo "error: $(SHARED)/catalog-data not found — example: make sources SHARED=/path/to/shared"; exit 2; }
	cp $(SHARED)/catalog-data/* catalogs/sources/
	cp $(SHARED)/seeds/* catalogs/sources/seeds/
	cp -r $(SHARED)/fixtures/* tests/fixtures/

validate: install
	$(BIN)/gpu-assist catalog validate

clean:
	rm -rf $(VENV) build dist *.egg-info gpu_assist/labextension labextension/lib labextension/node_modules
