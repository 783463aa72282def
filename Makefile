# Two commands for a fresh machine (Python 3.11+ only): `make demo` and `make test`.
# Everything installs into .venv; install output goes to .venv/install.log.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: install demo lint types test fuzz generate check bench release-check clean

install: $(STAMP)

# torch comes first and pinned: trl needs it, and any other spec downloads gigabytes.
# The suite needs both halves: the generator's pinned toolchain ([generate]) and TRL ([train]),
# and Debian's chromium, in which tests/test_eval_report.py opens an eval's report.html.
$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@echo "installing into $(VENV) (log: $(VENV)/install.log)"
	@{ $(PY) -m pip install --upgrade pip \
	  && $(PY) -m pip install torch==2.13.0 \
	  && $(PY) -m pip install -e '.[generate,train,dev]' ; } > $(VENV)/install.log 2>&1 \
	  || { tail -n 30 $(VENV)/install.log; exit 1; }
	@command -v chromium >/dev/null 2>&1 || { apt-get update && apt-get install -y chromium ; } >> $(VENV)/install.log 2>&1 \
	  || echo "chromium could not be installed (see $(VENV)/install.log): the report's browser test will be skipped"
	@touch $@

demo: install
	@$(PY) examples/demo.py

# orlgen's own source: the pinned ruff, black and mypy (generated modules are checked by the tests).
lint: install
	@$(PY) -m ruff check --quiet orlgen tests bench examples
	@$(PY) -m black --check --quiet orlgen tests bench examples
	@$(PY) -m mypy --cache-dir .mypy_cache/lint orlgen > $(VENV)/mypy.log 2>&1 || { cat $(VENV)/mypy.log; exit 1; }

# The runtime and the checked-in generated modules, as strictly as a user's CI may check them
# (config: pyproject's [tool.mypy]); silent on success. Each mypy run keeps its own cache: one
# shared by the two (other options) would be rebuilt by each, and `make test` runs them at once.
types: install
	@$(PY) -m mypy --strict --no-error-summary --cache-dir .mypy_cache/types orlgen/runtime generated

# lint and types together (each mostly mypy reading torch's and transformers' typed sources), then
# the suite on two workers, a file each at a time: one process spends half the suite waiting on
# servers and child processes, so two fill a 2-core machine. TEST_WORKERS=0 runs in one process.
TEST_WORKERS ?= 2

test: install
	@$(MAKE) --no-print-directory -j2 lint types
	@$(PY) -m pytest -n $(TEST_WORKERS) --dist loadfile

# `make test` fuzzes from a fixed seed; this from a random one, printed first (replay a run with
# `ORLGEN_FUZZ_SEED=N make fuzz`).
fuzz: install
	@seed=$${ORLGEN_FUZZ_SEED:-$$($(PY) -c 'import random; print(random.randrange(2**32))')}; \
	echo "fuzz seed: $$seed (replay: ORLGEN_FUZZ_SEED=$$seed make fuzz)"; \
	ORLGEN_FUZZ_SEED=$$seed ORLGEN_FUZZ_EXAMPLES=$${ORLGEN_FUZZ_EXAMPLES:-2000} $(PY) -m pytest tests/test_fuzz.py

generate: install
	@$(VENV)/bin/orlgen generate

check: install
	@$(VENV)/bin/orlgen check

# orlgen vs TRL's OpenRewardSpec on loopback ORS servers, the slow-env throughput table included;
# table on stdout, numbers in bench/results*.json (see docs/benchmarks.md).
bench: install
	@$(PY) -m bench

# The release as users will get it: `python -m build` (the sdist, then the wheel from it), the
# wheel's contents and metadata, a fresh `[generate]` venv running `orlgen --version`, the demo
# and `check` from the wheel and rendering what the source renders, and the GitHub Action in a
# throwaway repository (tests/test_release.py, tests/test_action.py); then the sizes and each
# install shape's time and venv size (bench/release.py). Venvs install offline from wheelhouses
# cached in ~/.cache/orlgen-test-venvs (the first run fills them from PyPI).
release-check: install
	@$(PY) -m pytest tests/test_release.py tests/test_action.py
	@$(PY) -m bench.release

clean:
	rm -rf $(VENV) build
