#!/usr/bin/env bash
# How long a paired slice should be (docs/verdicts.md): two identical nginx, paired, pinned
# (contenders on CPU 1, load on CPU 0), 16 clients, a fixed 4 s of slices per contender at
# each slice length; prints the standard deviation of one round's log ratio of CPU per
# request (lower: rounds agree better, fewer are needed), and the mean CPU per request of a
# slice run first in its round against one run second. Takes about a minute.
#   SLICES="50ms 100ms 200ms 300ms" CLIENTS=16 benches/slices.sh
#   UNPINNED=1 SLICES=300ms BAKEOFF=/path/to/bakeoff benches/slices.sh
#     without `cores`, on a build from before paired runs were pinned by default (commit
#     76b4a97): what the scheduler's placement does to a slice
set -euo pipefail
cd "$(dirname "$0")/.."
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || scripts/install-test-deps.sh
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
B=${BAKEOFF:-target/release/bakeoff}
[ -n "${BAKEOFF:-}" ] || cargo build --release --quiet
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
mkdir -p "$dir/www"; echo "hello from nginx for bakeoff" > "$dir/www/index.html"
cat > "$dir/nginx.conf.in" <<CONF
daemon off; master_process off; worker_processes 1;
pid @STATE@/nginx.pid; error_log stderr;
events { worker_connections 1024; }
http { access_log off; keepalive_requests 100000;
  client_body_temp_path @STATE@; proxy_temp_path @STATE@; fastcgi_temp_path @STATE@;
  uwsgi_temp_path @STATE@; scgi_temp_path @STATE@;
  server { listen 127.0.0.1:@PORT@; root $dir/www; } }
CONF
contender() {
    cat <<C
[[contender]]
name = "$1"
setup = [["sh", "-c", "sed -e 's/@PORT@/{port}/' -e 's#@STATE@#{state}#' $dir/nginx.conf.in > {state}/nginx.conf"]]
command = ["$NGINX", "-p", "{state}", "-c", "{state}/nginx.conf", "-e", "stderr"]
ready = { http = "http://127.0.0.1:{port}/index.html", timeout = "10s" }
C
}
for slice in ${SLICES:-50ms 100ms 200ms 300ms}; do
    ms=${slice%ms}
    rounds=$((4000 / ms))
    { echo "name = \"slices $slice\""; echo "repetitions = 1"; echo "baseline = \"a\""
      echo "paired = { slice = \"$slice\", rounds = $rounds }"
      [ "${UNPINNED:-0}" = 1 ] && echo 'order = "paired"' || echo "cores = { contender = [1], load = [0] }"
      contender a; contender b
      printf '[[scenario]]\nname = "index"\nhttp = "GET /index.html"\nclients = %s\nduration = "1s"\n' "${CLIENTS:-16}"
    } > "$dir/plan.toml"
    "$B" run "$dir/plan.toml" --out "$dir/out-$slice" >/dev/null 2>&1
    python3 - "$dir/out-$slice/results.json" "$slice" <<'PY'
import json, math, statistics, sys
r = json.load(open(sys.argv[1]))
a, b = (run["points"][0]["slices"] for run in r["runs"])
cpu = lambda s: s["cost"]["cpu_s"] / s["requests"]
logs = [math.log(cpu(y) / cpu(x)) for x, y in zip(a, b)]
first = statistics.mean(cpu(x) for x in a + b if x["position"] == 0) * 1e6
second = statistics.mean(cpu(x) for x in a + b if x["position"] == 1) * 1e6
print(f"{sys.argv[2]:>6} slices: {len(logs)} rounds, SD of a round's log ratio {statistics.stdev(logs):.3f}; "
      f"CPU/request {first:.1f} µs run first, {second:.1f} µs run second")
PY
done
