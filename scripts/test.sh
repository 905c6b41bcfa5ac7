#!/usr/bin/env bash
# `make test`'s tests, after its set-up, in phases:
#  - the unit and browser tests on every CPU (pytest-xdist: they share nothing of the
#    host; a browser test reads files a fake run wrote);
#  - the guest host (tests/hosts), alone: its emulated CPUs take both of the host's (beside
#    the unit tests, each phase took twice its time: 733 s and 514 s, against 397 and 260);
#  - then the integration tests one at a time: they share dockerd, cgroups and bridges,
#    and time what runs on the host, so nothing else runs beside them.
# Each phase is timed; at the end, passed or not, every phase of this `make test` is
# listed with its time, then the 20 slowest tests.
# Usage: scripts/test.sh [PYTEST_ARG...]   (as `make test` calls it)
set -u
cd "$(dirname "$0")/.."
marks="not long and not hosts"
export VIRTBENCH_STRICT=1 VB_DURATIONS=${VB_DURATIONS:-.stamps/durations.tsv}
mkdir -p .stamps
: >"$VB_DURATIONS"
trap 'scripts/phases --tests' EXIT

phase() { # NAME PYTEST_ARG...: a timed pytest run, where none selected is no failure
  local name=$1
  shift
  scripts/timed "$name" sh -c \
    '.venv/bin/python -m pytest "$@"; rc=$?; [ "$rc" -eq 5 ] && exit 0; exit "$rc"' \
    pytest "$@"
}

rc=0
phase "unit and browser tests" -m "$marks" -n auto tests/unit tests/browser "$@" || rc=1
phase "guest host" -m "$marks" tests/hosts "$@" || rc=1
phase "integration tests" -m "$marks" tests/integration "$@" || rc=1
exit "$rc"
