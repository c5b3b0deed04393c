# ddtriage: everything starts from a fresh checkout with only python3 and make.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install demo test golden bench clean

install: $(STAMP)

# Re-install when the project definition changes. The `fast` extra (hyperscan, isal) is tried
# separately so a platform without those wheels still gets a working (slower) install.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	-$(BIN)/python -m pip install --quiet -e '.[fast]' || echo "note: hyperscan/isal not installed; using the pure-Python path"
	touch $(STAMP)

demo: install
	$(BIN)/ddtriage scan sample_logs/ --fail-on never

test: install
	$(BIN)/python -m pytest -q

# Regenerate the golden reports of sample_logs/ (never edit them by hand).
golden: install
	$(BIN)/python -m pytest -q tests/test_golden.py --update-golden

bench: install
	$(BIN)/python bench/run.py --ddtriage $(BIN)/ddtriage $(BENCH_ARGS)

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
