# The two commands of the README: `make demo` and `make test`. Everything else supports them.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
SKYPILOT_EXTRACT ?= catalogs/sources
SKYPILOT_IMPORTED ?= 2026-12-02

.PHONY: demo test test-moved test-time test-fast test-alone lint typecheck golden docs site screenshots soak bench install install-test build-deps test-deps labextension catalogs sources validate clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# What each command needs, no more: `make demo` the package alone (and Node.js only while the JupyterLab extension
# is not built yet: the editable install builds labextension/ with jlpm then); `make test` adds the test extras and
# the Debian packages the tests start; `make catalogs` the ECB rates package.
$(STAMP): $(BIN)/python pyproject.toml labextension/package.json
	$(BIN)/pip install --quiet -e .
	touch $(STAMP)

$(STAMP)-test: $(STAMP)
	$(BIN)/pip install --quiet -e '.[test]'
	touch $@

$(STAMP)-catalog: $(STAMP)
	$(BIN)/pip install --quiet -e '.[catalog]'
	touch $@

# Rebuild the JupyterLab extension after editing labextension/src. The install copied the extension into the
# virtual environment; a link to gpu_assist/labextension takes the copy's place, so JupyterLab serves each build.
LABEXTENSIONS := $(VENV)/share/jupyter/labextensions
labextension: install
	cd labextension && PATH=$(CURDIR)/$(BIN):$$PATH $(CURDIR)/$(BIN)/jlpm install && PATH=$(CURDIR)/$(BIN):$$PATH $(CURDIR)/$(BIN)/jlpm build:prod
	cp labextension/install.json gpu_assist/labextension/
	rm -rf $(LABEXTENSIONS)/gpu-assist && ln -s $(CURDIR)/gpu_assist/labextension $(LABEXTENSIONS)/gpu-assist

install: build-deps $(STAMP)

install-test: test-deps $(STAMP)-test

demo: install
	$(BIN)/gpu-assist quote 8xA100 72h

# Debian packages, installed as root (otherwise the tests that need them say they are skipped): Node.js builds the
# JupyterLab extension (only while gpu_assist/labextension is not built), PostgreSQL (multi-replica tests) and
# Chromium (JupyterLab e2e) are for `make test` alone.
NODE_PACKAGE := $(if $(wildcard gpu_assist/labextension/static/style.js),,$(if $(shell command -v node),,nodejs))
TEST_PACKAGES := $(NODE_PACKAGE) $(if $(wildcard /usr/lib/postgresql/*/bin/initdb),,postgresql) \
	$(if $(wildcard /usr/bin/chromium),,chromium)
define apt_install
	@if [ -n "$(strip $(1))" ]; then \
		if [ "$$(id -u)" = 0 ]; then \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(1); \
		else echo "note: $(strip $(1)) missing and this is not root: install them, or the steps needing them fail or skip"; fi; \
	fi
endef
build-deps:
	$(call apt_install,$(NODE_PACKAGE))
test-deps:
	$(call apt_install,$(TEST_PACKAGES))

# Every test once at the real clock, on every core (pytest-xdist: each worker starts its own moto, PostgreSQL, mock
# Slack and Slack server; a file's tests stay on one worker, sharing its module fixtures) and in a random order
# (pytest-randomly prints the seed; `--randomly-seed=N` replays an order), so no test passes only because another
# ran before it; then the tests marked `clock` at each moved clock, so none passes only at the hour or on the date it
# happens to run. A test that reads the clock unmarked fails (tests/conftest.py), so the marked ones are all whose
# outcome the moved clocks can change. The ten slowest are printed; `make test-time` times each step.
TEST_WORKERS ?= auto
PYTEST_PARALLEL := -n $(TEST_WORKERS) --dist loadfile
test: lint
	$(BIN)/python -m pytest -q $(PYTEST_PARALLEL) --durations=10
	for instant in $(MOVED_CLOCKS); do \
		$(BIN)/python -m pytest -q -p no:randomly $(PYTEST_PARALLEL) -m clock --moved-clock $$instant || exit 1; done

# The wall clock moved (`pytest --moved-clock`, tests/conftest.py: in the test process and every Python process it
# starts, ticking): 03:00 UTC on an ordinary weekday, inside the hours where a test's clock once crossed midnight,
# and the last half-minute of a year, a year after the catalogs' dates, when every bundled price is stale. `make
# test` runs the tests marked `clock` there; this runs every test there (before a release, or to check the marks).
MOVED_CLOCKS := 2027-06-15T03:00:00Z 2027-12-31T23:59:30Z
test-moved: install-test
	for instant in $(MOVED_CLOCKS); do \
		$(BIN)/python -m pytest -q -p no:randomly $(PYTEST_PARALLEL) --moved-clock $$instant || exit 1; done

# The test part of `make test` step by step (and `make test-fast`), each step's wall time against the budget
# (15 minutes on 2 cores; the fast suite 45 s), the ten slowest tests and the load average: bench/suite_time.py.
test-time: install-test
	PYTEST_PARALLEL="$(PYTEST_PARALLEL)" MOVED_CLOCKS="$(MOVED_CLOCKS)" $(BIN)/python bench/suite_time.py

# The in-process tests only (no server processes or subprocesses, no moto, PostgreSQL or browser; the mock Slack
# Web API as a thread), in a random order: under 45 s.
test-fast: install-test
	$(BIN)/python -m pytest -q -m "not slow"

# Each test file in a process of its own: a test that needs another file's side effects fails here.
test-alone: install-test
	for file in $$(git ls-files 'tests/**/test_*.py'); do $(BIN)/python -m pytest -q -p no:randomly $$file || exit 1; done

# Rewrite the pinned answers in tests/golden/expected after an intended change of output (say why in the commit).
golden: install-test
	GPU_ASSIST_GOLDEN_UPDATE=1 $(BIN)/python -m pytest -q tests/golden

# What the pages show that the code writes (a test fails when either differs): the request state machine's table and
# the facts' inventory in docs/ARCHITECTURE.md, from gpu_assist/lifecycle/states.py and gpu_assist/facts/; and the outputs the pages mark `<!-- output: make docs
# -->`, as the commands print them at the tests' pinned date (tests/docs/doc_examples.py, which runs every example).
docs: install-test
	$(BIN)/python -m gpu_assist.lifecycle.states docs/ARCHITECTURE.md
	$(BIN)/python -m gpu_assist.facts.inventory docs/ARCHITECTURE.md
	$(BIN)/python tests/docs/doc_examples.py

# The JupyterLab sidebar's screenshots in docs/jupyterlab.md (docs/screenshots/*.png), taken by its browser tests
# (tests/e2e/test_lab_tabs.py); `make test` runs the same tests but keeps their screenshots in temporary folders.
screenshots: install-test
	mkdir -p docs/screenshots
	GPU_ASSIST_SCREENSHOTS=$(CURDIR)/docs/screenshots $(BIN)/python -m pytest -q -p no:randomly tests/e2e/test_lab_tabs.py

# The documentation site (mkdocs.yml, pages in docs/) built into the ignored .site/; `$(BIN)/mkdocs serve` serves it
# while you write. Strict: a broken link or anchor, or a page left out of the nav, fails it (lint runs it too).
MKDOCS := NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir .site
site: install-test
	$(MKDOCS)

# ruff's rules as configured in pyproject.toml, over everything Python in the repository; vulture for dead code in
# gpu_assist/ and slackbot/ ([tool.vulture]: confidence 60 %, the lowest, which is where unused functions and
# attributes show; vulture_whitelist.py names what only a framework calls); mypy over gpu_assist/ and slackbot/ as
# [tool.mypy] configures it (`--strict`, every module); then the documentation site, strict. make test runs it first;
# CI fails on any finding.
lint: install-test
	$(BIN)/ruff check .
	$(BIN)/vulture
	$(BIN)/mypy
	$(MKDOCS)

# mypy alone (lint runs it too).
typecheck: install-test
	$(BIN)/mypy

# The long variants of the reliability suite: 1,000 clicks over 2 replicas, ≥ 100,000 fuzz examples.
soak: install-test
	GPU_ASSIST_SOAK=1 $(BIN)/python -m pytest -q tests/reliability

# Figures, not tests: writes bench/results/latest.{json,md} (SkyPilot side by side, installed in the ignored .bench/).
# BENCH_BASE: the revision whose cold quote runs beside this tree's (before #30 moved imports to the top).
BENCH_BASE ?= 111434c
bench: install
	GPU_ASSIST_BENCH_BASE=$(BENCH_BASE) $(BIN)/python bench/run.py

# Rerunnable: regenerate the committed catalogs from the shared extracts and the ECB rates.
catalogs: install $(STAMP)-catalog
	$(BIN)/gpu-assist catalog import-skypilot $(SKYPILOT_EXTRACT) --imported $(SKYPILOT_IMPORTED)
	$(BIN)/gpu-assist catalog import-china catalogs/sources
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
	rm -rf $(VENV) build dist *.egg-info gpu_assist/labextension labextension/lib labextension/node_modules .bench .site
