# specsim: `make run` and `make test` work on a fresh machine (they create .venv first).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
SCENARIO ?= scenarios/kimi-k25-8xpcie-eagle3.toml

.PHONY: run test test-slow test-all lint bench validate clean

RUN_STAMP := $(VENV)/.installed-run-stamp

# `make run` installs only what running needs; `make test` (and the rest) the dev extra.
$(RUN_STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e .
	touch $(RUN_STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP) $(RUN_STAMP)

run: $(RUN_STAMP)
	$(BIN)/specsim run $(SCENARIO)

test: $(STAMP)
	$(BIN)/python -m pytest -q -m "not slow" -n 2 --dist worksteal

# exit status 5 means "no test selected": not a failure for this subset.
test-slow: $(STAMP)
	$(BIN)/python -m pytest -q -m slow -n 2 --dist worksteal || [ $$? -eq 5 ]

test-all: $(STAMP)
	$(BIN)/python -m pytest -q

bench: $(STAMP)
	$(BIN)/python benchmarks/bench.py
	$(BIN)/python benchmarks/bench_serving.py
	$(BIN)/python benchmarks/bench_parsers.py

# Rebuild docs/validation.md: published cases (calibrated on some figures, scored on others)
# and closed-form checks; fails if a closed-form check fails.
validate: $(STAMP)
	$(BIN)/python -m sim.validation

lint: $(STAMP)
	$(BIN)/ruff check sim tests
	$(BIN)/ruff format --check sim tests

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info
