#!/usr/bin/env bash
# Benchmarks `bakeoff load` against wrk, hey, oha and h2load on one pinned nginx (plaintext and
# TLS) and etcd 3.5.1 (gRPC unary, against h2load sending the same frame); prints a
# Markdown table for BENCHMARKS.md; then the steady benchmark (benches/steady.py: the peer and
# bakeoff interleaved in 1 s slices, a ratio with an interval, and a deliberate 3 % slowdown
# it must find). Installs the peers when missing. Takes a few minutes (STEADY=0 skips the
# steady table; ROUNDS sets its rounds).
#   BENCH_DURATION=4 BENCH_RUNS=3 BENCH_CONNS=1,16,64 BENCH_ONLY="gRPC unary,h2c" benches/peers.sh
set -euo pipefail
cd "$(dirname "$0")/.."
missing=()
for t in wrk hey h2load; do command -v "$t" >/dev/null || missing+=("$t"); done
if [ ${#missing[@]} -gt 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk hey nghttp2-client >/dev/null
fi
command -v oha >/dev/null || cargo install oha --locked
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || scripts/install-test-deps.sh
cargo build --release --quiet
python3 benches/peers.py
if [ "${STEADY:-1}" != 0 ]; then
    BENCH_ONLY=${BENCH_ONLY:-HTTP/1.1,h2c,gRPC unary} python3 benches/steady.py
fi
