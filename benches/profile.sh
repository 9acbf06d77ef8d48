#!/usr/bin/env bash
# Reproduces the "where the time goes" figures in BENCHMARKS.md: user-space instructions per
# request (callgrind), calls per request of the hot path's allocations, clock reads,
# histogram records and system-call wrappers (callgrind's call counts, benches/callcounts.py)
# and system calls per request (strace -c), for `bakeoff load` and for its peer on the same
# nginx: wrk for HTTP/1.1, h2load for h2c. Installs valgrind/strace/wrk/h2load when missing.
#   REQUESTS=20000 CLIENTS=16 PROTO=http1 benches/profile.sh      (PROTO=h2c for HTTP/2)
#   KEEP=/tmp/cg.out ... keeps bakeoff's callgrind output
set -euo pipefail
cd "$(dirname "$0")/.."
REQUESTS=${REQUESTS:-20000}
CLIENTS=${CLIENTS:-16}
PROTO=${PROTO:-http1}
need=()
for t in valgrind strace wrk h2load; do command -v "$t" >/dev/null || need+=("$t"); done
if [ ${#need[@]} -gt 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq valgrind strace wrk nghttp2-client >/dev/null
fi
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || scripts/install-test-deps.sh
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
cargo build --release --quiet
B=target/release/bakeoff
dir=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; [ -n "${KEEP:-}" ] && cp "$dir"/cg.out "$KEEP"; rm -rf "$dir"' EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
port2=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
mkdir -p "$dir/www"; echo "hello from nginx for bakeoff" > "$dir/www/index.html"
cat > "$dir/nginx.conf" <<CONF
daemon off; master_process off; worker_processes 1; pid $dir/nginx.pid; error_log $dir/error.log;
events { worker_connections 1024; }
http { access_log off; keepalive_requests 100000000; client_body_temp_path $dir; proxy_temp_path $dir;
  fastcgi_temp_path $dir; uwsgi_temp_path $dir; scgi_temp_path $dir;
  server { listen 127.0.0.1:$port; listen 127.0.0.1:$port2 http2; root $dir/www; } }
CONF
taskset -c 1 "$NGINX" -p "$dir" -c "$dir/nginx.conf" -e "$dir/error.log" & pid=$!
for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.05; done
URL="http://127.0.0.1:$port/index.html"
LOAD=("$B" load -n "$REQUESTS" -c "$CLIENTS" -t 1)
if [ "$PROTO" = h2c ]; then
    URL="http://127.0.0.1:$port2/index.html"
    LOAD+=(--h2)
fi
# The peer: wrk runs for a duration (its count is read from its output), h2load for a count.
peer() { # wrapper..., seconds
    local secs=${*: -1} wrap=("${@:1:$#-1}")
    if [ "$PROTO" = h2c ]; then
        local n=$((REQUESTS * secs / 2))
        "${wrap[@]}" h2load -t 1 -c "$CLIENTS" -m 1 -n "$n" "$URL" >/dev/null 2>&1
        echo "$n"
    else
        "${wrap[@]}" wrk -t1 -c"$CLIENTS" -d"${secs}s" "$URL" 2>/dev/null | sed -n 's/^ *\([0-9]*\) requests in.*/\1/p'
    fi
}
PEER=$([ "$PROTO" = h2c ] && echo h2load || echo wrk)

valgrind --tool=callgrind --callgrind-out-file="$dir/cg.out" \
    "${LOAD[@]}" "$URL" >/dev/null 2>"$dir/cg.log"
ir=$(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$dir/cg.log")
echo "bakeoff user-space instructions ($PROTO): $ir total, $((ir / REQUESTS)) per request ($REQUESTS requests, $CLIENTS clients)"
echo "largest self costs:"
callgrind_annotate --inclusive=no "$dir/cg.out" 2>/dev/null | grep -E '^ *[0-9,]+ \(' | sed -n '2,8p' | cut -c1-150
echo "calls per request (callgrind's call counts):"
python3 benches/callcounts.py "$dir/cg.out" "$REQUESTS"

# Under valgrind the peer is slow: wrk gets 2 s, h2load a tenth of the count.
if [ "$PROTO" = h2c ]; then
    n=$((REQUESTS / 10)); valgrind --tool=callgrind --callgrind-out-file="$dir/cg.peer" --log-file="$dir/cg.peer.log" \
        h2load -t 1 -c "$CLIENTS" -m 1 -n "$n" "$URL" >/dev/null 2>&1
else
    n=$(peer valgrind --tool=callgrind --callgrind-out-file="$dir/cg.peer" --log-file="$dir/cg.peer.log" 2)
fi
ir=$(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$dir/cg.peer.log")
echo "$PEER user-space instructions: $ir total, $((ir / n)) per request ($n requests under valgrind, $CLIENTS clients)"
python3 benches/callcounts.py "$dir/cg.peer" "$n"

per_request() { # strace -c summary file, requests
    awk -v n="$2" '$NF ~ /^(sendto|recvfrom|sendmsg|recvmsg|write|writev|read|readv|epoll_ctl|epoll_wait|io_uring_enter)$/ {
        printf "  %-11s %8d calls  %.3f per request\n", $NF, $4, $4 / n }' "$1"
}
strace -c -f -o "$dir/st.bakeoff" "${LOAD[@]}" "$URL" >/dev/null
echo "bakeoff system calls ($REQUESTS requests):"
per_request "$dir/st.bakeoff" "$REQUESTS"
n=$(peer strace -c -f -o "$dir/st.peer" 2)
echo "$PEER system calls ($n requests):"
per_request "$dir/st.peer" "$n"
