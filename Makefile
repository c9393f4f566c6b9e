# specsim: `make run` and `make test` work on a fresh machine (they create .venv first).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
SCENARIO ?= scenarios/kimi-k25-8xpcie-eagle3.toml

.PHONY: run test test-slow test-all test-blas test-latest lock lint bench validate coverage clean

RUN_STAMP := $(VENV)/.installed-run-stamp

# `make run` installs only what running needs; `make test` (and the rest) the dev extra.
# Both install the versions in constraints.txt (the set the suite last passed with);
# pyproject.toml keeps ranges for users. `make test-latest` tries the newest releases.
$(RUN_STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e .
	touch $(RUN_STAMP)

$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[dev]'
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

# The tests whose results pass through BLAS, optimisers, quantile tables, root finding or
# the engines' seeded streams, run under several OpenBLAS kernels: a tolerance that holds
# only on one CPU's last bits fails here on any host (CI runs it).
NUMERICS_TESTS := tests/model/test_profile_fit.py tests/model/test_beta_quantile.py \
	tests/model/test_roots.py tests/model/test_quadrature.py tests/model/test_renewal.py \
	tests/binding/test_priors.py tests/binding/test_prior_fits.py \
	tests/binding/test_cross_run.py tests/calibration tests/simulation/test_engines_fast.py \
	tests/simulation/test_seeding.py tests/simulation/test_simulate.py \
	tests/test_seed_scenario.py tests/studies/test_search.py tests/uncertainty/test_answers.py

test-blas: $(STAMP)
	@for core in unset Haswell Prescott; do \
	  echo "OPENBLAS_CORETYPE=$$core"; \
	  if [ $$core = unset ]; then env -u OPENBLAS_CORETYPE $(BIN)/python -m pytest -q -m "not slow" -n 2 $(NUMERICS_TESTS) || exit 1; \
	  else OPENBLAS_CORETYPE=$$core $(BIN)/python -m pytest -q -m "not slow" -n 2 $(NUMERICS_TESTS) || exit 1; fi; \
	done

# The suite against the newest releases pyproject.toml admits (a scheduled job's target);
# `make lock` then records that environment in constraints.txt.
LATEST := .venv-latest
test-latest:
	test -x $(LATEST)/bin/python || $(PYTHON) -m venv $(LATEST)
	$(LATEST)/bin/python -m pip install --quiet --upgrade pip
	$(LATEST)/bin/python -m pip install --quiet --upgrade --upgrade-strategy eager -e '.[dev]'
	$(LATEST)/bin/python -m pytest -q -m "not slow" -n 2 --dist worksteal

lock: test-latest
	{ sed -n '1,3p' constraints.txt; $(LATEST)/bin/python -m pip freeze --exclude-editable; } > constraints.txt.tmp
	mv constraints.txt.tmp constraints.txt

bench: $(STAMP)
	$(BIN)/python benchmarks/bench.py
	$(BIN)/python benchmarks/bench_serving.py
	$(BIN)/python benchmarks/bench_studies.py
	$(BIN)/python benchmarks/bench_parsers.py
	$(BIN)/python benchmarks/cluster_bench.py

# Rebuild docs/validation.md: published cases (calibrated on some figures, scored on others)
# and closed-form checks; fails if a closed-form check fails.
validate: $(STAMP)
	$(BIN)/python -m sim.validation

# Coverage of the serving answers' 90% intervals (docs/serving-intervals.md): on synthetic
# truths drawn from the model's own ranges, then on the public serving curves (slow).
coverage: $(STAMP)
	$(BIN)/python -m sim.validation.interval_coverage
	$(BIN)/python -m sim.validation.interval_public

lint: $(STAMP)
	$(BIN)/ruff check sim tests
	$(BIN)/ruff format --check sim tests
	$(BIN)/mypy sim

clean:
	rm -rf $(VENV) $(LATEST) .pytest_cache build *.egg-info
