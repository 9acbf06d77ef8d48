#!/usr/bin/env bash
# The whole test suite: installs the real servers the tests need when missing (nginx,
# etcd 3.4.23, etcd 3.5.1), then runs every test. With CI=true a missing server fails.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-test-deps.sh
# The tests of other features run their plans' repetitions, as they were written to: with the
# default budget (10 minutes) a paired plan still inconclusive would measure on. The tests of
# the budget name theirs (a plan's `budget` and `--budget` come before this).
export BAKEOFF_BUDGET="${BAKEOFF_BUDGET:-off}"
# --no-fail-fast: one failing test binary must not hide the others.
cargo test --no-fail-fast "$@"
