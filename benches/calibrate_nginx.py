"""Calibration of bakeoff's verdicts on a real server (issue 48): nginx, built twice from the
same source, at bakeoff's defaults (3 repetitions, the budget, the plan's paired settings).

    NGINX_SRC=/tmp/nginx-src/nginx_1.22.1.orig.tar.gz N=20 python3 -u benches/calibrate_nginx.py
    NEIGHBOURS=2 ROWS="A/A" N=10 … python3 -u benches/calibrate_nginx.py
    OLD=3 … python3 -u benches/calibrate_nginx.py    (also 3 comparisons a row at the old
                                                       defaults: BAKEOFF_BUDGET=off)

NGINX_SRC is nginx's source tarball; on Debian, with a deb-src line in apt's sources,
`apt-get source --download-only nginx` fetches it. The script builds it twice, in two folders
(`./configure --without-http_rewrite_module --without-http_gzip_module && make`, kept under
NGINX_BUILDS, default /tmp/bakeoff-nginx-builds), and runs two rows of N comparisons each:

- **A/A**: build 1 against build 2, both with `access_log off` — two builds of one source;
- **access log**: build 1 with `access_log off` against build 1 writing its access log to a
  file in its state folder (one `write` a request).

Each comparison is a small real bake-off: GET /index.html at 1, 4 and 16 clients, 1 s a point
(DURATION), the contenders pinned to CPU 1 and the load to CPU 0. The table counts, per point,
how often server CPU per request reads *different*, *equivalent* (within the plan's ±2 %) or
*inconclusive*, with 95 % Wilson intervals, and gives the median seconds a comparison took.
NEIGHBOURS=K runs K bursty CPU neighbours throughout, as benches/calibrate.py does.
"""
import os
import statistics
import subprocess
import sys
import tarfile
import time

import calibrate as cal

N = int(os.environ.get("N", "20"))
OLD = int(os.environ.get("OLD", "0"))
ROWS = os.environ.get("ROWS", "A/A,access log").split(",")
DURATION = os.environ.get("DURATION", "1s")
CLIENTS = [1, 4, 16]
BUILDS = os.environ.get("NGINX_BUILDS", "/tmp/bakeoff-nginx-builds")
# The budget the "defaults" rows run with: the environment's as this script started (unset:
# bakeoff's default), read once — the old-defaults rows set BAKEOFF_BUDGET=off as they run.
BUDGET = os.environ.get("BAKEOFF_BUDGET")


def build(i):
    """nginx built from NGINX_SRC in its own folder; the binary's path."""
    d = os.path.join(BUILDS, f"build{i}")
    binary = os.path.join(d, "objs", "nginx")
    if os.path.exists(binary):
        return binary
    src = os.environ.get("NGINX_SRC")
    if not src:
        sys.exit("NGINX_SRC: nginx's source tarball (see this script's doc)")
    os.makedirs(d, exist_ok=True)
    with tarfile.open(src) as t:
        top = t.getnames()[0].split("/")[0]
        t.extractall(d)
    tree = os.path.join(d, top)
    configure = ["./configure", "--without-http_rewrite_module", "--without-http_gzip_module"]
    subprocess.run(configure, cwd=tree, check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["make", "-j2"], cwd=tree, check=True, stdout=subprocess.DEVNULL)
    os.makedirs(os.path.dirname(binary), exist_ok=True)
    os.rename(os.path.join(tree, "objs", "nginx"), binary)
    return binary


CONF = """daemon off; master_process off; worker_processes 1;
pid @STATE@/nginx.pid; error_log stderr;
events { worker_connections 1024; }
http {
  access_log @LOG@; keepalive_requests 1000000;
  client_body_temp_path @STATE@; proxy_temp_path @STATE@; fastcgi_temp_path @STATE@;
  uwsgi_temp_path @STATE@; scgi_temp_path @STATE@;
  server { listen 127.0.0.1:@PORT@; root @STATE@; }
}
"""


def contender(name, binary, log):
    """A contender whose setup writes its configuration (from a template kept beside the
    builds) and its page into the fresh state folder."""
    template = os.path.join(BUILDS, f"{name}-{'log' if log != 'off' else 'nolog'}.conf.in")
    with open(template, "w") as f:
        f.write(CONF.replace("@LOG@", log))
    setup = (
        f'sed -e \\"s#@STATE@#$1#g\\" -e \\"s/@PORT@/$2/\\" {template} > \\"$1/nginx.conf\\"'
        ' && echo hello from nginx for bakeoff > \\"$1/index.html\\"'
    )
    return f"""
[[contender]]
name = "{name}"
setup = [["sh", "-c", "{setup}", "sh", "{{state}}", "{{port}}"]]
command = ["{binary}", "-p", "{{state}}", "-c", "{{state}}/nginx.conf", "-e", "stderr"]
ready = {{ http = "http://127.0.0.1:{{port}}/index.html", timeout = "10s" }}
"""


def plan(b_binary, b_log):
    a = contender("a", build(1), "off")
    b = contender("b", b_binary, b_log)
    return f"""name = "nginx calibration"
baseline = "a"
cores = {{ contender = [1], load = [0] }}
{a}{b}
[[scenario]]
name = "index"
http = "GET /index.html"
clients = {CLIENTS}
duration = "{DURATION}"
warmup = "200ms"
"""


def row_plan(label):
    if label == "A/A":
        return plan(build(2), "off")
    return plan(build(1), "@STATE@/access.log")


def compare(text, budget):
    """One comparison at `budget` (None: bakeoff's default): its CPU-per-request verdicts,
    one a point, and its seconds."""
    if budget is not None:
        os.environ["BAKEOFF_BUDGET"] = budget
    else:
        os.environ.pop("BAKEOFF_BUDGET", None)
    start = time.monotonic()
    _, report = cal.run(text)
    seconds = time.monotonic() - start
    verdicts = [v for f, v, _ in cal.words(report) if f == "CPU_per_request"]
    return verdicts, seconds


def measure(label, n, budget):
    tally = {"different": 0, "equivalent": 0, "inconclusive": 0}
    seconds = []
    all_different = 0
    for i in range(n):
        verdicts, s = compare(row_plan(label), budget)
        for v in verdicts:
            tally[v] = tally.get(v, 0) + 1
        all_different += all(v == "different" for v in verdicts) and len(verdicts) == len(CLIENTS)
        seconds.append(s)
        print(f"{label} {i + 1}/{n}: {', '.join(verdicts)} in {s:.0f} s", file=sys.stderr)
    return tally, seconds, all_different


def share(k, n):
    lo, hi = cal.wilson(k, n)
    return f"{k} of {n} ({lo:.0%}–{hi:.0%})"


def main():
    if not os.path.exists(cal.B):
        sys.exit("build first: cargo build --release")
    build(1), build(2)
    cal.start_neighbours()
    started = time.monotonic()
    lines = []
    for label in [r.strip() for r in ROWS]:
        for name, n, budget in [("defaults", N, BUDGET), ("old defaults", OLD, "off")]:
            if n == 0:
                continue
            tally, seconds, every = measure(label, n, budget)
            points = n * len(CLIENTS)
            lines.append(
                f"| {label} | {name} | {share(tally['different'], points)} | {share(tally['equivalent'], points)} "
                f"| {share(tally['inconclusive'], points)} | {every} of {n} | {statistics.median(seconds):.0f} |"
            )
    minutes = (time.monotonic() - started) / 60
    print(f"\n{N} comparisons a row (OLD={OLD} at the old defaults), points at {CLIENTS} clients, "
          f"{DURATION} a point, {cal.NEIGHBOURS} neighbours; {minutes:.0f} min in all\n")
    print("| comparison | settings | *different* (points) | *equivalent* (points) | *inconclusive* (points) "
          "| every point *different* | median s a comparison |")
    print("|---|---|---|---|---|---|---|")
    for line in lines:
        print(line)


if __name__ == "__main__":
    main()
