#!/usr/bin/env bash
# `make test`'s tests, after its set-up: the unit tests on every CPU (pytest-xdist: they
# share nothing of the host), then the integration, browser and guest-host tests one at
# a time (they share dockerd, cgroups and bridges, and time what runs on the host). Each
# phase is timed; at the end, passed or not, every phase of this `make test` is listed
# with its time, then the 20 slowest tests.
# Usage: scripts/test.sh [PYTEST_ARG...]   (as `make test` calls it)
set -u
cd "$(dirname "$0")/.."
marks="not long and not hosts"
export VIRTBENCH_STRICT=1 VB_DURATIONS=${VB_DURATIONS:-.stamps/durations.tsv}
: >"$VB_DURATIONS"
trap 'scripts/phases --tests' EXIT
rc=0
scripts/timed "unit tests" .venv/bin/python -m pytest -m "$marks" -n auto tests/unit "$@" || rc=1
scripts/timed "integration tests" .venv/bin/python -m pytest -m "$marks" \
  tests/integration tests/browser tests/hosts "$@" || rc=1
exit "$rc"
