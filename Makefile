# ddtriage: everything starts from a fresh checkout with only python3 and make.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
CORE_STAMP := $(VENV)/.core-installed
CORE_SRC := core/pyproject.toml core/Cargo.toml core/Cargo.lock $(wildcard core/src/*.rs) $(wildcard core/tests/*.rs)

.PHONY: install demo test lint golden bench clean

# A CJK font for the HTML report's Chinese in headless chromium (Debian's fonts-noto-cjk, beside the
# chromium the browser tests use); checked on every install, so an existing .venv gets it too.
# Then the package is byte-compiled: an editable install compiles nothing, and where .pyc files are
# never written on import (PYTHONDONTWRITEBYTECODE=1, a read-only checkout) every `ddtriage` run
# would compile its modules again, ~0.1 s of its start-up (issue #17). On every install, so sources
# changed by a pull are compiled again (compileall skips the files whose .pyc is current).
install: $(STAMP) $(CORE_STAMP)
	$(BIN)/python -m compileall -q analyzer
	-@fc-list 2>/dev/null | grep -q "Noto Sans CJK" || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
	  { apt-get update -qq; DEBIAN_FRONTEND=noninteractive apt-get install -y -qq fonts-noto-cjk >/dev/null; }; } || \
	  echo "note: fonts-noto-cjk not installed; the CJK screenshot test will skip (apt-get install fonts-noto-cjk)"

# The compiled core (core/, the `ddtriage-core` distribution; issue #17): pip builds it with maturin
# (from PyPI) and cargo (crates from crates.io), in release mode. Optional: without cargo the note
# says so and ddtriage runs on its Python engine (tests/core then skip, except under CI).
$(CORE_STAMP): $(STAMP) $(CORE_SRC)
	@if command -v cargo >/dev/null 2>&1; then \
	  $(BIN)/python -m pip install --quiet ./core && \
	  (cd core && cargo test --release --quiet --no-run --test props) && touch $(CORE_STAMP); \
	else echo "note: cargo not found; the compiled core is not built (DDTRIAGE_ENGINE=auto uses the Python engine)"; fi

# Re-install when the project definition changes. The `fast` extra (hyperscan, isal) is tried
# separately so a platform without those wheels still gets a working (slower) install.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,fleet,live,frames]'
	-$(BIN)/python -m pip install --quiet -e '.[fast]' || echo "note: hyperscan/isal not installed; using the pure-Python path"
	-@command -v chromium >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } || \
	  echo "note: chromium not installed; the HTML browser test will skip (apt-get install chromium)"
	touch $(STAMP)

# The language follows the locale (LANG=zh_CN.UTF-8 make demo: the report in Chinese), or --lang.
demo: install
	$(BIN)/ddtriage scan sample_logs/ --fail-on never

test: install
	$(BIN)/python -m pytest -q -n auto --dist worksteal --durations=15

# Style, complexity and types; configured in pyproject.toml ([tool.ruff], [tool.mypy]).
lint: install
	$(BIN)/ruff check analyzer tests bench
	$(BIN)/mypy
	$(BIN)/lint-imports
	@if command -v cargo >/dev/null 2>&1; then \
	  cd core && cargo fmt --check && cargo clippy --quiet --release --all-targets -- -D warnings; \
	else echo "note: cargo not found; the core's fmt and clippy checks are skipped"; fi

# Regenerate the golden reports of sample_logs/ (never edit them by hand).
golden: install
	$(BIN)/python -m pytest -q tests/writers/test_writers.py -k golden --update-golden

# Full benchmark with the targets of issue #8 (~8 min, ~5 once cached; 6.4 GB in bench/.cache/); not in CI.
# rg (Debian's ripgrep) is installed when missing; without it the bench skips the rg column and says so.
# Then the fleet bench of issue #12 (bench/fleet.py: 500 bundles, local pool vs --dask local:N vs merge;
# ~5 min, 1.1 GB more cache; FLEET_ARGS="--bundles 50 --noise 1M --repeat 1" for a quick run).
# Then bench/frames.py (issue #21): the findings frame of a 1,000,000-finding storm, time and peak RSS
# (168 MiB more cache; FRAMES_ARGS="--findings 100000" for a quick run).
# Each ddtriage row runs under both engines (the core judged against the targets of issue #17).
BENCH_ENGINES ?= $(if $(wildcard $(CORE_STAMP)),rust$(comma)python,python)
comma := ,
bench: install
	@command -v rg >/dev/null 2>&1 || { SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo -n ); \
	  echo "rg not found: installing Debian's ripgrep"; \
	  { $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq ripgrep >/dev/null; } \
	  || echo "note: could not install ripgrep (apt-get failed); the bench runs without rg"; }
	@status=0; $(BIN)/python bench/run.py --ddtriage $(BIN)/ddtriage --engines $(BENCH_ENGINES) $(BENCH_ARGS) || status=1; \
	  $(BIN)/python bench/fleet.py --ddtriage $(BIN)/ddtriage $(FLEET_ARGS) || status=1; \
	  $(BIN)/python bench/frames.py $(FRAMES_ARGS) || status=1; exit $$status

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .mypy_cache .ruff_cache core/target
