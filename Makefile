# Two set-up commands, each creates .venv if missing: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STORE := .demo-store

.PHONY: demo test test-slow bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed-test: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[test]'
	$(BIN)/python -m compileall -q arena_cli  # an editable install does not; with PYTHONDONTWRITEBYTECODE nothing would
	touch $@

demo: $(VENV)/.installed-test
	rm -rf $(STORE)
	$(BIN)/arena ingest sample_data/battles.jsonl.gz --store $(STORE)
	$(BIN)/arena info --store $(STORE)
	$(BIN)/arena features --store $(STORE)
	$(BIN)/arena fit --store $(STORE) --style none
	$(BIN)/arena fit --store $(STORE) --style both
	$(BIN)/arena diff --store $(STORE)

test: $(VENV)/.installed-test
	$(BIN)/mypy
	$(BIN)/python -m pytest -q -n auto

test-slow: $(VENV)/.installed-test
	$(BIN)/python -m pytest -q -m slow || [ $$? -eq 5 ]

clean:
	rm -rf $(VENV) $(STORE) .pytest_cache
