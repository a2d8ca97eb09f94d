# Two commands on a fresh machine: `make demo` and `make test`.
# Both create .venv, install the project (and Debian's graphviz when missing), and run.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
PYTEST := $(BIN)/python -m pytest
PACKAGES := metis_trace metis_model metis_check metis_proofs metis_witness metis_runtime metis_cli metis_studies

.PHONY: setup system-deps claude-code test lint typecheck unit demo exhaustive fuzz bench schema layout explore mutate study multitool clean

$(STAMP): pyproject.toml pytest-metis/pyproject.toml
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "error: $(PYTHON) is not installed: metis needs Python 3.11 or later (apt-get install python3 python3-venv)"; exit 1; }
	@$(PYTHON) -m venv $(VENV) >/dev/null 2>&1 || { rm -rf $(VENV); echo "error: $(PYTHON) -m venv failed: the venv module is missing (apt-get install python3-venv)"; exit 1; }
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]' -e ./pytest-metis
	touch $(STAMP)

# graphviz's `dot` renders counterexample graphs; tests render for real.
# strace lets the witness (specs/witness.md) observe process execution.
# chromium (headless) loads `metis conform --report`'s page in the browser test.
# .ci/system-deps: `apt-get install` first, `apt-get update` only when that
# fails (then install again); one line for whatever is still missing, and why.
system-deps:
	@bash .ci/system-deps

# The real Claude Code CLI (npm's @anthropic-ai/claude-code, in .venv/claude-code)
# for the hook's end-to-end test (tests/cli/test_hook_claude_code.py, which
# installs it itself or skips, saying why, when npm cannot).
CLAUDE_CODE := $(VENV)/claude-code/node_modules/.bin/claude
claude-code: $(STAMP)
	@test -x $(CLAUDE_CODE) || { \
	  if ! command -v npm >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null) \
	      || echo "warning: could not install nodejs and npm"; fi; \
	  if command -v npm >/dev/null 2>&1; then \
	    npm install --no-audit --no-fund --fetch-retries=1 --prefix $(VENV)/claude-code @anthropic-ai/claude-code >/dev/null 2>&1 \
	      || echo "warning: could not install the Claude Code CLI; its end-to-end test will skip"; \
	  else echo "warning: npm is not installed; the Claude Code end-to-end test will skip"; fi; }

setup: $(STAMP) system-deps claude-code

lint: setup
	$(BIN)/ruff check $(PACKAGES) tests benchmarks pytest-metis
	$(BIN)/ruff format --check $(PACKAGES) tests pytest-metis

typecheck: setup
	$(BIN)/mypy

# --metis-require-coverage: the suite's runs must reach every invariant ID and
# model transition (the pytest-metis plugin names what they never reached).
unit: setup
	CI=$${CI:-true} $(PYTEST) -q -p no:cacheprovider -n 2 --metis-require-coverage tests

test: lint typecheck unit

# The main job: a replay task through the runtime, its trace checked against the
# model, then the whole story in one table (`metis demo`).
demo: setup
	rm -rf demo-out && mkdir -p demo-out/workspace
	$(BIN)/metis run "Fix the greeting format and record what changed" \
	  --workspace demo-out/workspace --mode acceptEdits --headless --trace demo-out/run.jsonl --witness
	$(BIN)/metis conform demo-out/run.jsonl
	$(BIN)/metis demo --out demo-out/story
	$(MAKE) --no-print-directory demo-plan

# The plan path (specs/plan.md), keyless: a request planned by the engine, paused
# for consent and resumed; repeated and served from L0 (consent asked again); a
# changed executor manifest, re-signed, makes the next one a miss. Then every turn
# log and trace is checked against the model.
PLAN_WS := demo-out/plan
PLAN_ASK := "Summarize my notes into Reports/notes-summary.md"
.PHONY: demo-plan
demo-plan: setup
	rm -rf $(PLAN_WS) && mkdir -p $(PLAN_WS)
	$(BIN)/metis plan run $(PLAN_ASK) --workspace $(PLAN_WS) --owner demo
	$(BIN)/metis plan resume last --workspace $(PLAN_WS) --owner demo --approve
	$(BIN)/metis plan run $(PLAN_ASK) --workspace $(PLAN_WS) --owner demo
	$(BIN)/metis plan resume last --workspace $(PLAN_WS) --owner demo --approve
	sed -i 's/^version: 1$$/version: 2/' $(PLAN_WS)/.metis/executors/read_notes.yaml
	$(BIN)/metis plan digest $(PLAN_WS)/.metis/executors/read_notes.yaml --write
	$(BIN)/metis plan run $(PLAN_ASK) --workspace $(PLAN_WS) --owner demo
	$(BIN)/metis plan resume last --workspace $(PLAN_WS) --owner demo --approve
	$(BIN)/metis plan cache --workspace $(PLAN_WS)
	$(BIN)/metis conform $(PLAN_WS)/.metis/plan/turns

exhaustive: setup
	HYPOTHESIS_PROFILE=exhaustive $(PYTEST) -q -m exhaustive tests

# The fuzz suite of `make test` with 50x the examples (about 15 minutes on 2 cores).
fuzz: setup
	METIS_FUZZ_EXAMPLES=2000 HYPOTHESIS_PROFILE=dev $(PYTEST) -q -n 2 -p no:cacheprovider tests/fuzz

# A long exploration of the runtime (make test runs the bounded sweep in tests/explore).
explore: setup
	$(BIN)/metis explore --budget $${BUDGET:-600} --seed $${SEED:-0} --out $${OUT:-explore-out}

# Every research study's tables, raw samples and figures (PNG and SVG), at the
# paper's sizes (`metis study`, metis_studies/); the README shows two figures.
study: setup
	$(BIN)/metis study all --out $${OUT:-notebooks/results}

# The mutation score: every seeded fault of tests/mutants/ through the conformance channel
# alone (metis explore with a fixed budget + metis conform on the studies' traces).
mutate: setup
	$(BIN)/python -m metis_studies.mutate --baseline --budget $${BUDGET:-60} --json $${OUT:-mutate.json}

# Microsoft's SARIF Multitool (npm's @microsoft/sarif-multitool, MIT; the Linux package
# ships the .NET binary) validates both SARIF outputs (tests/cli/test_sarif_multitool.py).
MULTITOOL := $(VENV)/sarif-multitool/node_modules/@microsoft/sarif-multitool-linux/Sarif.Multitool
multitool: setup
	@test -x $(MULTITOOL) || { \
	  npm install --no-audit --no-fund --fetch-retries=1 --prefix $(VENV)/sarif-multitool @microsoft/sarif-multitool@5.7.0 >/dev/null \
	    && chmod u+x $(MULTITOOL); } || { echo "error: npm could not install @microsoft/sarif-multitool"; exit 1; }
	METIS_SARIF_MULTITOOL=$(MULTITOOL) $(PYTEST) -q -p no:cacheprovider -m multitool tests/cli/test_sarif_multitool.py

bench: setup
	$(PYTEST) -q benchmarks --benchmark-enable --benchmark-only -p no:cacheprovider

schema: setup
	$(BIN)/python -c "import json; from metis_trace import trace_json_schema; \
	  open('specs/trace-schema.json','w').write(json.dumps(trace_json_schema(), indent=2, sort_keys=True)+'\n')"
	$(BIN)/python -c "import json; from metis_trace import witness_json_schema; \
	  open('specs/witness-schema.json','w').write(json.dumps(witness_json_schema(), indent=2, sort_keys=True)+'\n')"

# The README's drawing of the packages, from the import table the architecture test checks.
layout: setup
	$(BIN)/python -m tests._layout

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis .benchmarks
