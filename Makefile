# The two commands of the README: `make run` (the scenario catalog on the twin, with reports)
# and `make test` (the project's own tests). Both create the virtualenv and install on first use.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# The four passes of the test plan: Path B/A (stub workers / planners) × NVML/DCGM.
WORLDS ?= path-b path-b-dcgm path-a path-a-dcgm

.PHONY: run test bench clean

$(STAMP): pyproject.toml setup.py
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/stepgraph run --reports reports $(WORLDS:%=--world %) -- --gherkin-terminal-reporter -vv

test: $(STAMP)
	$(BIN)/lint-imports
	$(BIN)/ruff check .
	$(BIN)/pytest tests -q -p no:cacheprovider

bench: $(STAMP)
	$(BIN)/python bench/bench_ratios.py

clean:
	rm -rf $(VENV) reports build *.egg-info
