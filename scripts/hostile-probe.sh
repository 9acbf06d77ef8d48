#!/bin/bash
# The hostile probes of issues 25 and 47: files that are devices or FIFOs, absurd numbers,
# PIDs and folders that are not bakeoff's, plan mistakes, servers that never stop sending;
# contenders built from source (refs and URLs that are options, trees with links to devices),
# and results and shards from another machine (figures out of range, histograms that lie
# about their size).
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

# Contenders built from source: refs and repositories that are options or remote helpers,
# working trees and folders holding links to devices and FIFOs. The cache is the probe's own.
export XDG_CACHE_HOME="$D/cache"
git init -q -b main repo && (cd repo && echo 'int main(void){return 0;}' > s.c && git add s.c \
  && git -c user.email=p@p -c user.name=p commit -qm one)
src_plan() {  # NAME SOURCE: a plan whose contender is built from SOURCE
  printf 'name = "t"\n[[contender]]\nname = "a"\nsource = %s\nbuild = [["true"]]\ncommand = ["{source}/s"]\n' "$2" > "$1.toml"
}
src_plan ref-dots '{ git = "repo", ref = "main..main" }'
case_ "source ref main..main" $B plan check ref-dots.toml
src_plan ref-opt '{ git = "repo", ref = "--output=/tmp/x" }'
case_ "source ref --output=" $B plan check ref-opt.toml
src_plan git-opt '{ git = "--upload-pack=touch /tmp/probe-pwned", ref = "main" }'
case_ "source git --upload-pack" $B plan check git-opt.toml
src_plan git-ext '{ git = "ext::sh -c touch% /tmp/probe-pwned", ref = "main" }'
case_ "source git ext::" $B plan check git-ext.toml
src_plan git-pw '{ git = "http://u:secretpw@127.0.0.1:1/r.git", ref = "main" }'
case_ "source git URL with password" $B plan check git-pw.toml
src_plan git-silent "{ git = \"http://127.0.0.1:$P/none.git\", ref = \"main\" }"
case_ "source git URL not a repository" $B plan check git-silent.toml
ln -s /dev/zero repo/zero && mkfifo repo/fifo
src_plan tree '{ git = "repo", worktree = true }'
case_ "worktree: links to /dev/zero, a FIFO" $B plan check tree.toml
mkdir -p folder && ln -s /dev/zero folder/zero && mkfifo folder/fifo
src_plan folder '{ path = "folder" }'
case_ "source path: /dev/zero, a FIFO" $B plan check folder.toml
ls /tmp/probe-pwned 2>/dev/null && echo "!! a source ran a command: /tmp/probe-pwned"

# Results and shards from another machine: a real run's results, then figures out of range
# and a histogram whose header says it is 2 GB.
printf 'name = "r"\nrepetitions = 2\n[[contender]]\nname = "a"\ncommand = ["python3", "-m", "http.server", "{port}", "--bind", "127.0.0.1"]\nready = { http = "http://127.0.0.1:{port}/", timeout = "20s" }\n[[scenario]]\nname = "s"\nhttp = "/"\nclients = [1]\nrequests = 50\n' > r.toml
timeout 120 $B run r.toml --shard 1/2 --out real > /dev/null 2>&1
timeout 120 $B run r.toml --shard 2/2 --out real2 > /dev/null 2>&1
python3 - <<'PY'
import base64, json, struct, shutil, os
r = json.load(open("real/results.json"))
r2 = json.load(open("real2/results.json"))
def doctor(name, edit):  # the second shard, doctored
    shutil.copytree("real2", name)
    d = json.loads(json.dumps(r2)); walk(d, edit)
    json.dump(d, open(f"{name}/results.json", "w"))
def walk(x, edit):  # every object in the results, wherever it is
    if isinstance(x, dict):
        edit(x); [walk(v, edit) for v in x.values()]
    elif isinstance(x, list):
        [walk(v, edit) for v in x]
def rps(v):
    def edit(o):
        if "requests_per_s" in o: o["requests_per_s"] = v
    return edit
def lying(o):
    if isinstance(o.get("histogram"), str):
        raw = bytearray(base64.b64decode(o["histogram"]))
        raw[4:8] = struct.pack(">I", 2_000_000_000)
        o["histogram"] = base64.b64encode(bytes(raw)).decode()
doctor("negative", rps(-100)); doctor("huge", rps(1e308)); doctor("lying", lying)
PY
case_ "report: requests_per_s -100" $B report negative
case_ "report: requests_per_s 1e308" $B report huge
case_ "report: histogram says 2 GB" $B report lying
case_ "merge: the two shards as run" $B merge real real2 --out m0
case_ "merge: a shard with -100 req/s" $B merge real negative --out m1
case_ "merge: a shard whose histogram lies" $B merge real lying --out m2

# The edge-delay proxy: while a run slows the edge to a cluster's back member, something
# else on the machine opens 3,000 idle connections to the proxy and 120 that send a megabyte
# each. The run must finish, its peak memory and threads bounded (128 links at most, 1 MiB
# held each).
cat > flood.py <<'PY'
import os, re, socket, sys, time
pid = int(sys.argv[1])
def listening():  # the TCP ports bakeoff itself listens on: the proxy's
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            m = re.match(r"socket:\[(\d+)\]", os.readlink(f"/proc/{pid}/fd/{fd}"))
        except OSError:
            continue
        if m:
            inodes.add(m.group(1))
    ports = []
    for line in open("/proc/net/tcp").read().splitlines()[1:]:
        f = line.split()
        if f[3] == "0A" and f[9] in inodes:
            ports.append(int(f[1].split(":")[1], 16))
    return ports
for _ in range(300):
    try:
        ports = listening()
    except OSError:
        sys.exit(0)
    if ports:
        break
    time.sleep(0.1)
else:
    print("no proxy seen"); sys.exit(0)
held = []
for i in range(3120):
    try:
        s = socket.create_connection(("127.0.0.1", ports[0]), timeout=1)
        if i >= 3000:
            s.setblocking(False)
            try:
                s.send(b"x" * (1 << 20))
            except OSError:
                pass
        held.append(s)
    except OSError:
        pass
threads = len(os.listdir(f"/proc/{pid}/task"))
print(f"proxy port {ports[0]}: {len(held)} connections made, bakeoff then had {threads} threads")
time.sleep(3)
PY
FIX=$(realpath "$(dirname "$B")/../../tests/fixtures")
printf 'name = "edge"\nrepetitions = 1\norder = "sequential"\n[[contender]]\nname = "c"\ndir = "%s"\nwhat_if = [{ delay = "back", by = ["1ms"] }]\n[[contender.member]]\nname = "front"\nafter = ["back"]\nendpoint = "http://127.0.0.1:{port:front}"\ncommand = ["python3", "edge_servers.py", "front", "{port:front}", "{port:back}", "1", "seq"]\nready = { http = "http://127.0.0.1:{port:front}/", timeout = "30s" }\n[[contender.member]]\nname = "back"\nendpoint = "http://127.0.0.1:{port:back}"\ncommand = ["python3", "edge_servers.py", "back", "{port:back}"]\nready = { tcp = "127.0.0.1:{port:back}", timeout = "30s" }\n[[scenario]]\nname = "get"\nhttp = "/"\nduration = "8s"\n' "$FIX" > edge.toml
edge_run() {  # the run, with the flood against its proxy
  $B run edge.toml --out edge-out > edge.log 2>&1 &
  local pid=$!
  python3 flood.py $pid > flood.log 2>&1
  wait $pid
}
export -f edge_run 2>/dev/null
case_ "edge proxy: 3,000 idle, 120 senders" bash -c "B=$B; $(declare -f edge_run); edge_run; tail -1 edge.log"
echo "   the flood: $(tail -1 flood.log)"

# Round four (issue 68): the history store, bisect's record, check's exit codes, the
# dashboard's links and the launchers' escaping. Each line's rc and first words say whether
# it held: a refusal names the file or flag, nothing panics, and no file is written where a
# hostile value pointed.
git init -q h4 && (cd h4 && git -c user.email=p@e -c user.name=p commit -q --allow-empty -m one)
case_ "import --commit=--output=FILE" bash -c "cd h4 && $B history import ../res --commit=--output=$D/owned --history ../h4.sqlite; test ! -e $D/owned"
case_ "detect --window 1e9" $B history detect --window 1000000000 --history h4.sqlite
case_ "detect --max-p NaN" $B history detect --max-p NaN --history h4.sqlite
case_ "detect --fdr 200%" $B history detect --fdr 200% --history h4.sqlite
printf 'not a history' > h4-text.sqlite
case_ "history list of a text file" $B history list --history h4-text.sqlite
: > h4-empty.sqlite
case_ "history list of an empty file" $B history list --history h4-empty.sqlite
mkdir -p tamper && printf '{"schema": 1, "bakeoff": "x", "started_at": "", "status": "interrupted", "plan": "p", "plan_name": "p", "contender": "c", "good": "a", "bad": "b", "figure": null, "scenarios": [], "effect": null, "ways": 2, "budget": null, "commits": [], "builds": [], "steps": [], "hunt": null, "answer": null}' > tamper/bisect.json
case_ "bisect --resume of no commits" $B bisect --resume tamper
case_ "check --figur p99 (exit 128)" $B check ok.toml --contender a --against HEAD --figur p99
case_ "bisect --nope (exit 1)" $B bisect ok.toml --nope
printf 'name = "y"\n[[contender]]\nname = "a"\ncommand = ["s", "{port}"]\n[[scenario]]\nname = "g"\nhttp = "/"\n[ci]\nsetup = ["echo one\\n\u2028permissions: write-all"]\n' > y.toml
case_ "ci github: U+2028 in a setup" bash -c "$B ci github y.toml | python3 -c 'import sys, yaml; w = yaml.safe_load(sys.stdin); assert \"permissions\" not in w or w[\"permissions\"] != \"write-all\", w'"
printf 'name = "y"\n[[contender]]\nname = "a"\ncommand = ["s", "{port}"]\n[[scenario]]\nname = "g"\nhttp = "/"\n[ci]\nsetup = ["echo ${{ github.event.pull_request.title }}"]\n' > x.toml
case_ "ci github: \${{ }} in a setup" $B ci github x.toml
case_ "man to a closed stdout" bash -c "$B man >&-"

kill $SRV $PIDS
echo "in $D"
