#!/bin/bash
# The second hostile probe of issue 25: files that are devices or FIFOs, absurd numbers,
# PIDs and folders that are not bakeoff's, plan mistakes, servers that never stop sending.
# Each case runs with a 60 s wall-clock limit and its peak memory measured; one line per
# case: exit code, seconds, peak MiB, whether it panicked, and the first line it said.
# Loopback only; it starts its own small servers and stops them.
#
#   cargo build && scripts/hostile-probe.sh        (BAKEOFF=path to use another build)
#
# What to look for: no rc=124 (a hang), no peak far above 100 MiB, panic=0 everywhere, and an
# error that names the flag or the file. tests/hostile.rs holds each finding as a test.
B=$(realpath "${BAKEOFF:-target/debug/bakeoff}")
D=$(mktemp -d /tmp/probe2.XXXX)
cd "$D"
python3 -m http.server 0 --bind 127.0.0.1 > srv.log 2>&1 &
SRV=$!
for _ in $(seq 50); do P=$(grep -o 'port [0-9]*' srv.log | grep -o '[0-9]*'); [ -n "$P" ] && break; sleep 0.1; done
U="http://127.0.0.1:$P/"
mkfifo fifo
printf 'name = "t"\n[[contender]]\nname = "a"\ncommand = ["sleep", "1"]\n' > ok.toml
case_() {
  local name=$1; shift
  local start=$(date +%s.%N)
  /usr/bin/time -f %M -o mem timeout 60 "$@" > out 2> err
  local rc=$?
  local secs=$(echo "$(date +%s.%N) - $start" | bc)
  local mib=$(( $(tail -1 mem) / 1024 ))
  local panic=$(grep -c panicked err out | awk -F: '{s+=$2} END {print s}')
  printf '%-44s rc=%-3s %6.1fs %5s MiB panic=%s | %s\n' "$name" "$rc" "$secs" "$mib" "$panic" "$(grep -v '^$' err | head -1 | cut -c1-150)"
}
case_ "clients 2^32" $B load -c 4294967296 -n 1 $U
case_ "clients 1e6 at -n 1" $B load -c 1000000 -n 1 $U
case_ "cacert /dev/zero" $B call --cacert /dev/zero https://127.0.0.1:$P/
case_ "cacert /dev/urandom" $B call --cacert /dev/urandom https://127.0.0.1:$P/
case_ "cacert fifo" $B call --cacert fifo https://127.0.0.1:$P/
case_ "proto /dev/zero" $B call --grpc $U --proto /dev/zero --call a.B/C
case_ "cases fifo" $B diff --cases fifo $U $U
case_ "cases /dev/urandom" $B diff --cases /dev/urandom $U $U
case_ "plan /dev/zero" $B run /dev/zero
case_ "plan fifo" $B plan check fifo
case_ "cleanup /" $B cleanup /
case_ "cleanup missing" $B cleanup /nonexistent/x
case_ "cleanup /proc" $B cleanup /proc
case_ "what-if pid 1" $B load --what-if nodelay --pid 1 -n 1 $U
case_ "what-if pid self-parent" $B load --what-if nodelay --pid $$ -n 1 $U
case_ "header injection" $B load -n 1 -H $'X: a\r\nY: b' $U
case_ "url with password" $B load -n 1 http://u:secretpw@127.0.0.1:$P/
case_ "rate 1 for 3s" $B load -q 1 -z 3s $U
case_ "rate 1e12" $B load -q 1e12 -z 1s $U
case_ "rate 0.001 for 1s" $B load -q 0.001 -z 1s $U
case_ "duration 1e30s" $B load -z 1000000000000000000000000000000s $U
case_ "fill huge" $B call -d '{fill:99999999999999:x}' -m POST $U
case_ "max-body 0" $B call --max-body 0 $U
case_ "timeout 0" $B call --timeout 0s $U
case_ "out is /proc/1" $B run ok.toml --out /proc/1/x
case_ "resume not results" $B run ok.toml --resume /etc
printf 'name = "t"\n[[contender]]\nname = "a"\nmembers = 1000\n[[contender.member]]\ncommand = ["s"]\n' > m.toml
case_ "members 1000" $B plan check m.toml
printf 'name = "t"\n[[contender]]\nname = "a"\nmembers = 2\n[[contender.member]]\ncommand = ["s", "{join:,:{join:;:{member}}}"]\n' > j.toml
case_ "nested join" $B plan check j.toml
printf 'name = "t"\n[[contender]]\nname = "a"\ncommand = ["s", "{port}"]\n[[scenario]]\nname = "s"\nhttp = "/"\ntls = { insecure = true }\n' > t.toml
case_ "tls on http" $B plan check t.toml
printf 'name = "t"\n[[contender]]\nname = "a"\ncommand = ["s", "{prot:x}"]\n' > k.toml
case_ "unknown {kind:}" $B plan check k.toml
mkdir -p res && echo '{"schema_version": 99}' > res/results.json
case_ "report schema 99" $B report res
case_ "merge A A --out A" $B merge res res --out res
# Servers that never stop sending: an endless head, an endless chunked body.
cat > endless.py <<'PY'
import socket, sys, threading
kind = sys.argv[1]
l = socket.socket(); l.bind(("127.0.0.1", 0)); l.listen(16)
print(l.getsockname()[1], flush=True)
def serve(s):
    try:
        s.recv(65536)
        if kind == "head":
            s.sendall(b"HTTP/1.1 200 OK\r\n")
            while True: s.sendall(b"X-Pad: " + b"a" * 4000 + b"\r\n")
        else:
            s.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
            while True: s.sendall(b"1000\r\n" + b"y" * 4096 + b"\r\n")
    except OSError:
        pass
while True:
    c, _ = l.accept(); threading.Thread(target=serve, args=(c,), daemon=True).start()
PY
for kind in head body; do
  python3 endless.py $kind > $kind.port & PIDS="$PIDS $!"
done
sleep 0.5
case_ "endless response head" $B call http://127.0.0.1:$(cat head.port)/
case_ "endless chunked body (call)" $B call http://127.0.0.1:$(cat body.port)/
case_ "endless chunked body (load -z 2s)" $B load -z 2s -c 2 http://127.0.0.1:$(cat body.port)/
kill $SRV $PIDS
echo "in $D"
