# The two commands of the README: `make demo` and `make test`. Everything else supports them.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
SKYPILOT_EXTRACT ?= ../shared/catalog-data
SKYPILOT_AS_OF ?= 2026-12-02

.PHONY: demo test bench install system-deps catalogs validate clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

demo: install
	$(BIN)/gpu-assist quote 8xA100 72h

# Debian packages the tests start themselves: PostgreSQL (multi-replica tests).
system-deps:
	@if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then \
		if [ "$$(id -u)" = 0 ]; then \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql; \
		else echo "note: PostgreSQL is not installed and this is not root: its tests will be skipped"; fi; \
	fi

test: install system-deps
	$(BIN)/python -m pytest -q

bench: install
	$(BIN)/python bench/run.py

# Rerunnable: regenerate the committed catalogs from the shared extracts and the ECB rates.
catalogs: install
	$(BIN)/gpu-assist catalog import-skypilot $(SKYPILOT_EXTRACT) --as-of $(SKYPILOT_AS_OF)
	$(BIN)/gpu-assist catalog import-fx
	$(BIN)/gpu-assist catalog validate

validate: install
	$(BIN)/gpu-assist catalog validate

clean:
	rm -rf $(VENV) build dist *.egg-info
