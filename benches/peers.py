#!/usr/bin/env python3
"""Side-by-side benchmark of bakeoff's load engine against wrk, hey, oha and h2load.

All of them load the same small static file from one nginx (one process, pinned to CPU 1);
each generator runs pinned to CPU 0 with one thread. For every tool and connection count it
runs R times and records requests/s and the generator's own CPU time per request (user + sys
of the child, from getrusage). Prints a Markdown table; the medians are what BENCHMARKS.md
shows. Not a test: it needs the peers installed (see benches/peers.sh) and takes minutes.
"""
import json, os, re, resource, shutil, socket, statistics, subprocess, sys, tempfile, time

DURATION = int(os.environ.get("BENCH_DURATION", "4"))
RUNS = int(os.environ.get("BENCH_RUNS", "3"))
CONNS = [int(c) for c in os.environ.get("BENCH_CONNS", "1,16,64").split(",")]
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BAKEOFF = os.path.join(ROOT, "target", "release", "bakeoff")
GEN_CPU, SERVER_CPU = "0", "1"


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def start_nginx(d):
    p1, p2 = free_port(), free_port()
    os.makedirs(f"{d}/www")
    with open(f"{d}/www/index.html", "w") as f:
        f.write("hello from nginx for bakeoff\n")
    with open(f"{d}/nginx.conf", "w") as f:
        f.write(f"""daemon off; master_process off; worker_processes 1;
pid {d}/nginx.pid; error_log {d}/error.log;
events {{ worker_connections 4096; }}
http {{ access_log off; keepalive_requests 100000000; keepalive_timeout 300s;
  
  client_body_temp_path {d}; proxy_temp_path {d}; fastcgi_temp_path {d}; uwsgi_temp_path {d}; scgi_temp_path {d};
  server {{ listen 127.0.0.1:{p1} backlog=4096; listen 127.0.0.1:{p2} http2 backlog=4096; root {d}/www; }} }}
""")
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    proc = subprocess.Popen(["taskset", "-c", SERVER_CPU, nginx, "-p", d, "-c", f"{d}/nginx.conf", "-e", f"{d}/error.log"])
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", p1), timeout=1).close()
            return proc, p1, p2
        except OSError:
            time.sleep(0.05)
    raise SystemExit("nginx did not start")


def run(cmd):
    """Runs cmd pinned to the generator CPU; returns (stdout, child CPU seconds)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(["taskset", "-c", GEN_CPU] + cmd, capture_output=True, text=True, timeout=DURATION * 10 + 30)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if out.returncode != 0:
        raise RuntimeError(f"{cmd[0]} failed: {out.stderr[-500:]}")
    return out.stdout, cpu


def tool_bakeoff(url, c, h2=False):
    cmd = [BAKEOFF, "load", "-z", f"{DURATION}s", "-c", str(c), "-t", "1", "--json", url]
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


def tool_h2load(url, c, h1=False):
    cmd = ["h2load", "-t", "1", "-c", str(c), "-m", "1", "-D", str(int(DURATION)), url]
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
    proc, p1, p2 = start_nginx(d)
    h1, h2 = f"http://127.0.0.1:{p1}/index.html", f"http://127.0.0.1:{p2}/index.html"
    tools = [
        ("bakeoff", "HTTP/1.1", lambda c: tool_bakeoff(h1, c)),
        ("wrk", "HTTP/1.1", lambda c: tool_wrk(h1, c)),
        ("hey", "HTTP/1.1", lambda c: tool_hey(h1, c)),
        ("oha", "HTTP/1.1", lambda c: tool_oha(h1, c)),
        ("h2load --h1", "HTTP/1.1", lambda c: tool_h2load(h1, c, h1=True)),
        ("bakeoff --h2", "h2c", lambda c: tool_bakeoff(h2, c, h2=True)),
        ("h2load", "h2c", lambda c: tool_h2load(h2, c)),
    ]
    have = lambda name: name.startswith("bakeoff") or shutil.which(name.split()[0])
    rows, results = [], {}
    try:
        for c in CONNS:
            for run_i in range(RUNS):  # interleave tools within a run to spread drift
                for name, proto, fn in tools:
                    if not have(name):
                        continue
                    n, rps, cpu = fn(c)
                    results.setdefault((name, proto, c), []).append((rps, cpu * 1e6 / max(n, 1)))
                    print(f"  {name:13} {proto:8} c={c:<3} run {run_i + 1}: {rps:9.0f} req/s {cpu * 1e6 / max(n, 1):6.1f} µs CPU/req", file=sys.stderr)
    finally:
        proc.terminate()
        proc.wait()
        shutil.rmtree(d, ignore_errors=True)

    def med(key, i):
        return statistics.median(v[i] for v in results[key])

    print(f"| tool | protocol | connections | requests/s (median of {RUNS}) | generator CPU µs/request (median) | CPU/request vs wrk | CPU/request vs h2load (h2c) |")
    print("|---|---|---|---|---|---|---|")
    for c in CONNS:
        for name, proto, _ in tools:
            key = (name, proto, c)
            if key not in results:
                continue
            rps, cpu = med(key, 0), med(key, 1)
            vs_wrk = ("wrk", "HTTP/1.1", c)
            vs_h2 = ("h2load", "h2c", c)
            r_wrk = f"{cpu / med(vs_wrk, 1):.2f}×" if vs_wrk in results and proto == "HTTP/1.1" else ""
            r_h2 = f"{cpu / med(vs_h2, 1):.2f}×" if vs_h2 in results and proto == "h2c" else ""
            ranges = f" ({min(v[0] for v in results[key]):.0f}–{max(v[0] for v in results[key]):.0f})"
            print(f"| {name} | {proto} | {c} | {rps:.0f}{ranges} | {cpu:.1f} | {r_wrk} | {r_h2} |")


if __name__ == "__main__":
    main()
