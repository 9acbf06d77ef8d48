#!/usr/bin/env bash
# A bake-off of real servers in one command: examples/nginx/plan.toml (nginx with sendfile off
# vs on, 3 repetitions from fresh state), the summary printed. Installs nginx when missing.
# Uses `bakeoff` from PATH when there is one, else builds it; nothing is written into the
# checkout (the build and the results go under $TMPDIR), so it runs from a read-only one.
# Extra arguments go to `bakeoff run` (e.g. --smoke).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
tmp="${TMPDIR:-/tmp}/bakeoff-quickstart"
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || "$here/scripts/install-test-deps.sh"
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
export NGINX
if command -v bakeoff >/dev/null 2>&1; then
    bakeoff=bakeoff
else
    CARGO_TARGET_DIR="$tmp/target" cargo build --release --quiet --manifest-path "$here/Cargo.toml"
    bakeoff="$tmp/target/release/bakeoff"
fi
out="$tmp/results-$(date -u +%Y%m%dT%H%M%SZ)"
"$bakeoff" run "$here/examples/nginx/plan.toml" --out "$out" "$@"
echo "results: $out"
