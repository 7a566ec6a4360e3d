# The two commands of the README: `make run` (the scenario catalog on the twin, with reports)
# and `make test` (the project's own tests). Both create the virtualenv and install on first use.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# The four passes of the test plan: Path B/A (stub workers / planners) × NVML/DCGM.
WORLDS ?= path-b path-b-dcgm path-a path-a-dcgm
LINKS  := $(VENV)/.linked
FILES  := build/package-files.txt
MYPY   := $(BIN)/mypy -p stepgraph.command -p stepgraph.dsl -p stepgraph.steps -p stepgraph.targets -p stepgraph.twin

.PHONY: run run-process test test-code test-pytest typecheck wheel-smoke bench clean FORCE

# A strict editable install (see setup.py): build/__editable__… links every file of the packages
# into the wheel's layout, so every tool resolves stepgraph.* the same way. A file added or removed
# needs new links, so the list of package files is a prerequisite, rewritten only when it changes.
# .ci/pip-install fails on any warning the build or the install prints.
$(STAMP): pyproject.toml setup.py
	$(PYTHON) -m venv $(VENV)
	.ci/pip-install $(BIN)/pip --upgrade pip
	.ci/pip-install $(BIN)/pip -e '.[dev]' --config-settings editable_mode=strict
	touch $(STAMP)

$(FILES): FORCE
	@mkdir -p build
	@git ls-files --cached --others --exclude-standard command dsl steps targets twin examples | sort > $@.new
	@if cmp -s $@.new $@; then rm $@.new; else mv $@.new $@; fi

$(LINKS): $(STAMP) $(FILES)
	.ci/pip-install $(BIN)/pip --no-deps -e . --config-settings editable_mode=strict
	touch $(LINKS)

# Python keeps compiled modules (and pytest its assertion-rewritten ones) in __pycache__ unless
# told not to: a shell that sets PYTHONDONTWRITEBYTECODE makes every run compile every module of
# the package and of each pytest plugin again. The catalog run, the tests and the benchmarks keep
# the default.
run bench test: export PYTHONDONTWRITEBYTECODE :=

run: $(LINKS)
	$(BIN)/stepgraph run --reports reports $(WORLDS:%=--world %) -- --gherkin-terminal-reporter -vv

# The same catalog with the agent DaemonSet's container run as a real process (our reference
# agent; AGENT=PATH runs another checkout's deploy/power-agent) on the scaled clock: waits pass
# RATE times faster (RATE=75: a 15 s tick's wait in 0.2 s), the program's work in real time.
AGENT ?= reference
RATE  ?= 25
run-process: $(LINKS)
	$(BIN)/stepgraph run --reports reports-process $(WORLDS:%=--world %) -- --target-option agent=$(AGENT) \
		--target-option clock=scaled:$(RATE) --gherkin-terminal-reporter -vv

# The code checks, the tests and the wheel smoke run side by side (none reads what another writes),
# and the tests on every core through pytest-xdist: the tests are most of the time and CPU-bound,
# the wheel smoke waits mostly on pip. Each part's output is printed whole when it ends
# (--output-sync), and --keep-going lets every part finish, so one failure hides no other.
test: $(LINKS)
	@$(MAKE) --no-print-directory --jobs=3 --output-sync=target --keep-going test-code test-pytest wheel-smoke

test-code: $(LINKS)
	$(BIN)/lint-imports
	$(BIN)/ruff check .
	$(BIN)/deptry .
	$(MYPY)

# Two workers more than cores: the world runs' tests wait on the twin's real clock and on programs
# they start, and the extra workers use a core while others wait (on 2 cores, `make test` took
# 86-89 s with 4 workers, 92 s with 3, 91 s with 5).
test-pytest: $(LINKS)
	$(BIN)/pytest tests -q -p no:cacheprovider -n $$(( $$(nproc) + 2 )) --dist loadgroup

# mypy (with the pydantic plugin, configured in pyproject.toml) over the four packages, as the
# strict editable install lays them out; `test` runs it with the other code checks.
typecheck: $(LINKS)
	$(MYPY)

# The built wheel in a fresh virtualenv, run from a scratch project outside the checkout.
wheel-smoke:
	.ci/wheel-smoke

bench: $(LINKS)
	$(BIN)/python bench/bench_ratios.py

clean:
	rm -rf $(VENV) reports reports-process build *.egg-info
