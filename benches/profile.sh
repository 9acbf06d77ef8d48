#!/usr/bin/env bash
# Reproduces the "where the time goes" figures in BENCHMARKS.md: user-space instructions per
# request (callgrind) and system calls per request (strace -c) for `bakeoff load`, and the
# system calls of wrk on the same nginx. Installs valgrind/strace/wrk when missing.
#   REQUESTS=20000 CLIENTS=16 benches/profile.sh
set -euo pipefail
cd "$(dirname "$0")/.."
REQUESTS=${REQUESTS:-20000}
CLIENTS=${CLIENTS:-16}
need=()
for t in valgrind strace wrk; do command -v "$t" >/dev/null || need+=("$t"); done
if [ ${#need[@]} -gt 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || scripts/install-test-deps.sh
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
cargo build --release --quiet
B=target/release/bakeoff
dir=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; rm -rf "$dir"' EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
mkdir -p "$dir/www"; echo "hello from nginx for bakeoff" > "$dir/www/index.html"
cat > "$dir/nginx.conf" <<CONF
daemon off; master_process off; worker_processes 1; pid $dir/nginx.pid; error_log $dir/error.log;
events { worker_connections 1024; }
http { access_log off; keepalive_requests 100000000; client_body_temp_path $dir; proxy_temp_path $dir;
  fastcgi_temp_path $dir; uwsgi_temp_path $dir; scgi_temp_path $dir;
  server { listen 127.0.0.1:$port; root $dir/www; } }
CONF
taskset -c 1 "$NGINX" -p "$dir" -c "$dir/nginx.conf" -e "$dir/error.log" & pid=$!
for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.05; done
URL="http://127.0.0.1:$port/index.html"

valgrind --tool=callgrind --callgrind-out-file="$dir/cg.out" \
    "$B" load -n "$REQUESTS" -c "$CLIENTS" -t 1 "$URL" >/dev/null 2>"$dir/cg.log"
ir=$(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$dir/cg.log")
echo "bakeoff user-space instructions: $ir total, $((ir / REQUESTS)) per request ($REQUESTS requests, $CLIENTS clients)"
echo "largest self costs:"
callgrind_annotate --inclusive=no "$dir/cg.out" 2>/dev/null | grep -E '^ *[0-9,]+ \(' | sed -n '2,8p' | cut -c1-150

per_request() { # strace -c summary file, requests
    awk -v n="$2" '$NF ~ /^(sendto|recvfrom|write|read|epoll_ctl|epoll_wait)$/ {
        printf "  %-11s %8d calls  %.3f per request\n", $NF, $4, $4 / n }' "$1"
}
strace -c -f -o "$dir/st.bakeoff" "$B" load -n "$REQUESTS" -c "$CLIENTS" -t 1 "$URL" >/dev/null
echo "bakeoff system calls ($REQUESTS requests):"
per_request "$dir/st.bakeoff" "$REQUESTS"
out=$(strace -c -f -o "$dir/st.wrk" wrk -t1 -c"$CLIENTS" -d1s "$URL")
n=$(echo "$out" | sed -n 's/^ *\([0-9]*\) requests in.*/\1/p')
echo "wrk system calls ($n requests in 1 s):"
per_request "$dir/st.wrk" "$n"
