#!/usr/bin/env bash
# The one-command tour: a whole bake-off (examples/nginx/plan.toml: nginx with sendfile off vs
# on, 3 repetitions from fresh state) with the summary printed and results kept under
# bakeoff-results/. Installs nginx when missing. `bakeoff demo` will take its place.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || scripts/install-test-deps.sh
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
export NGINX
cargo build --release --quiet
target/release/bakeoff run examples/nginx/plan.toml "$@"
