# Two commands on a fresh machine: `make demo` and `make test`. Each builds what it needs.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-test

.PHONY: demo test lint typecheck pytest ui serve bench bench-all fuzz clean chromium notebooks notebooks-run lab

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/nsframe demo

test: lint typecheck pytest ui notebooks

lint: $(STAMP)
	$(VENV)/bin/ruff check nsframe tests benchmarks tools

typecheck: $(STAMP)
	$(VENV)/bin/mypy

# Everything but the browser (tests/server, tests/client); `make ui` runs the rest.
pytest: $(STAMP)
	$(VENV)/bin/pytest -m 'not ui'

# The real-browser test (tests/ui, marker `ui`) drives Debian's chromium; nothing downloads
# a browser.
ui: $(STAMP) chromium
	$(VENV)/bin/pytest -m ui

chromium:
	@test -x /usr/bin/chromium || { SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
	  $$SUDO apt-get update && $$SUDO env DEBIAN_FRONTEND=noninteractive \
	    apt-get install -y --no-install-recommends chromium; }

# The notebooks are tests too: nbval runs each in a fresh kernel of this venv and compares the
# outputs of the cells marked NBVAL_CHECK_OUTPUT (notebooks/conftest.py, notebooks/sanitize.cfg).
NBVAL := --nbval-lax --nbval-current-env --nbval-sanitize-with notebooks/sanitize.cfg
notebooks: $(STAMP)
	$(VENV)/bin/pytest -p no:cacheprovider $(NBVAL) notebooks/

# Re-run every notebook and save its outputs, after a change that alters what they show.
notebooks-run: $(STAMP)
	$(VENV)/bin/jupyter nbconvert --to notebook --execute --inplace notebooks/*.ipynb

lab: $(STAMP)
	$(VENV)/bin/jupyter lab notebooks/

serve: $(STAMP)
	$(VENV)/bin/nsframe serve

# The performance issue's table in one run: in-process pylance, nsframe through its own
# client (HTTP and embedded) and pylance's reference server, ratios next to the targets
# (results in benchmarks/results/). `make bench BENCH_ARGS=--quick`: 100k-row insert, fewer
# rounds, about 5 minutes. `make bench-all` runs the detailed scripts one after another.
BENCH_ARGS ?=
bench: $(STAMP)
	$(PY) benchmarks/bench_issue.py $(BENCH_ARGS)

BENCHMARKS := bench_insert bench_query bench_client bench_accessors
bench-all: $(STAMP)
	for b in $(BENCHMARKS); do $(PY) benchmarks/$$b.py || exit 1; done

# Fuzz the service with schemathesis from upstream's OpenAPI document (../shared/spec):
# never a 5xx, whatever a client sends (minutes; not part of `make test`).
FUZZ_SECONDS ?= 300
fuzz: $(STAMP)
	$(PY) -m pip install --quiet -e '.[fuzz]'
	$(PY) tests/fuzz/fuzz_api.py --seconds $(FUZZ_SECONDS)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
