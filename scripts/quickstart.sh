#!/usr/bin/env bash
# Runs `bakeoff load` against a throw-away nginx on a free loopback port, over HTTP/1.1 and
# h2c, and stops nginx again. Installs nginx when missing. Until `bakeoff demo` exists, this
# is the one-command tour.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || scripts/install-test-deps.sh
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
cargo build --release --quiet
dir=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; rm -rf "$dir"' EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
p1=$(port); p2=$(port)
mkdir -p "$dir/www"; echo "hello from nginx" > "$dir/www/index.html"
cat > "$dir/nginx.conf" <<CONF
daemon off; master_process off; worker_processes 1; pid $dir/nginx.pid; error_log $dir/error.log;
events { worker_connections 1024; }
http { access_log off; keepalive_requests 1000000; client_body_temp_path $dir; proxy_temp_path $dir;
  fastcgi_temp_path $dir; uwsgi_temp_path $dir; scgi_temp_path $dir;
  server { listen 127.0.0.1:$p1; listen 127.0.0.1:$p2 http2; root $dir/www; } }
CONF
"$NGINX" -p "$dir" -c "$dir/nginx.conf" -e "$dir/error.log" & pid=$!
for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$p1) 2>/dev/null && break; sleep 0.05; done
echo "== HTTP/1.1, 16 clients, 3 s"
target/release/bakeoff load -z 3s -c 16 "http://127.0.0.1:$p1/index.html"
echo; echo "== HTTP/2 (h2c), 16 clients, 3 s"
target/release/bakeoff load --h2 -z 3s -c 16 "http://127.0.0.1:$p2/index.html"
echo; echo "== open loop at 2000 req/s, 1 s, a 404 path"
target/release/bakeoff load -q 2000 -z 1s -c 8 "http://127.0.0.1:$p1/missing"
