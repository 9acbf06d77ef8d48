"""Calibration of bakeoff's verdicts (issues 11 and 26): how often two identical builds are
called different (A/A false positives, counted per *report*: any different cell at any point
and figure), how often they are proven equivalent (per cell), and how often a build that
spends 5 % or 2 % more CPU per request is found dearer (A/B detection), for the paired order
and the interleaved order side by side. Each comparison is a small real bake-off of the demo
server (`demo-server v2` against itself, or against itself with `--work`), 3 repetitions,
one scenario point — or POINTS=24 (a matrix of 6 values × clients 1, 2, 4, 8).

    N=20 CLIENTS=4 DURATION=1s python3 benches/calibrate.py
    KEEP=/tmp/cal N=10 … python3 benches/calibrate.py     (keeps every comparison's results)
    N=20 POINTS=24 ORDERS=paired ROWS="A/A" python3 benches/calibrate.py
    N=20 ORDERS=paired ROWS="+2 % CPU" PAIRED='precision = "0.5%", max_rounds = 120' python3 benches/calibrate.py
    SHARDS=3 REPETITIONS=6 N=10 ORDERS=paired ROWS="A/A,+5 % CPU" python3 benches/calibrate.py
    GATE=5 N=20 ORDERS=paired ROWS="A/A,+10 % CPU,+2 % CPU" python3 benches/calibrate.py   (the gate's rows)

Paired rows also print how often each of the three words (different, equivalent,
inconclusive) appears per figure, from the report's typed data, and the seconds one
comparison took.

With NEIGHBOURS=K, K neighbour processes run throughout (started before the --work scaling,
stopped at exit): each spins the CPU for 5–50 ms and sleeps 5–50 ms, at random from a fixed
seed — about half a core each, arriving at no time the bake-off could plan around. K = 2 on
this 2-core machine is a busy shared host: the "with neighbours" rows.

With SHARDS=K (root only) each comparison runs as K shards, each in its own network and UTS
namespace (scripts/simulate-shards.sh: K simulated machines, REPETITIONS/K repetitions each),
merged with `bakeoff merge`: the verdicts are then the combined ones across machines
(docs/scale-out.md), and the table also counts "machine disagrees" findings.

Prints a Markdown table (rates with 95 % Wilson intervals) for BENCHMARKS.md. The `--work`
amounts are first scaled until a paired comparison measures the intended difference (the
"median ratio measured" column shows what the comparisons then measured).
"""
import json
import math
import os
import subprocess
import sys
import tempfile
import time

# BAKEOFF names another binary (a copy, so a build may run beside the calibration).
B = os.path.abspath(os.environ.get("BAKEOFF", "target/release/bakeoff"))
N = int(os.environ.get("N", "20"))
CLIENTS = int(os.environ.get("CLIENTS", "4"))
DURATION = os.environ.get("DURATION", "1s")
REPS = int(os.environ.get("REPETITIONS", "3"))
# Which orders and rows to run, and extra paired settings, e.g.
#   ORDERS=paired ROWS="+2 % CPU" PAIRED='precision = "0.5%", max_rounds = 120'
ORDERS = os.environ.get("ORDERS", "paired,interleaved").split(",")
ROWS = os.environ.get("ROWS", "A/A,+5 % CPU,+2 % CPU").split(",")
PAIRED = os.environ.get("PAIRED", "")
# GATE=5: every comparison runs with `--fail-on-regression 5` and the table counts how often
# the gate tripped (exit 4) — issue 48's gate rows.
GATE = os.environ.get("GATE")
SHARDS = int(os.environ.get("SHARDS", "1"))
POINTS = int(os.environ.get("POINTS", "1"))
FIGURES = ["CPU_per_request", "throughput", "p99"]
NEIGHBOURS = int(os.environ.get("NEIGHBOURS", "0"))

NEIGHBOUR = """
import random, sys, time
r = random.Random(int(sys.argv[1]))
while True:
    end = time.perf_counter() + r.uniform(0.005, 0.05)
    while time.perf_counter() < end:
        pass
    time.sleep(r.uniform(0.005, 0.05))
"""


def start_neighbours(k=NEIGHBOURS):
    """K bursty CPU neighbours (NEIGHBOURS), stopped when this script exits, however it
    exits (killed too: each asks the kernel for SIGKILL when its parent dies)."""
    import atexit
    import ctypes
    import signal

    def orphan_dies():
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG

    procs = [
        subprocess.Popen([sys.executable, "-c", NEIGHBOUR, str(1000 + i)], preexec_fn=orphan_dies)
        for i in range(k)
    ]

    def stop(*_):
        for p in procs:
            p.kill()
            p.wait()

    atexit.register(stop)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    if k:
        print(f"{k} neighbours running (pids {', '.join(str(p.pid) for p in procs)})", file=sys.stderr)
    return procs


def work_arg(work):
    """`--work`'s value: µs (a float) on every answer, or a share of the server's own cost
    (a string such as "2%", taken as it is)."""
    return work if isinstance(work, str) else f"{work:.3f}us"


def contender(name, work_us):
    extra = f', "--work", "{work_arg(work_us)}"' if work_us else ""
    return f"""
[[contender]]
name = "{name}"
command = ["{B}", "demo-server", "v2", "{{port}}", "{{state}}"{extra}]
ready = {{ http = "http://127.0.0.1:{{port}}/health", status = 200, timeout = "30s" }}
"""


def plan(order, work_us, reps=REPS, single=False):
    head = f'name = "calibrate"\nrepetitions = {reps}\n'
    if not single:
        head += f'baseline = "a"\norder = "{order}"\n'
        if PAIRED and order == "paired":
            head += f"paired = {{ {PAIRED} }}\n"
    body = contender("a", 0) + ("" if single else contender("b", work_us))
    if POINTS == 24 and not single:
        scenario = f"""
[[scenario]]
name = "block"
http = "GET /block/{{k}}{{rand:0..1000}}"
matrix = {{ k = [1, 2, 3, 4, 5, 6] }}
clients = [1, 2, 4, 8]
duration = "{DURATION}"
"""
    else:
        scenario = f"""
[[scenario]]
name = "block"
http = "GET /block/{{rand:0..10000}}"
clients = {CLIENTS}
duration = "{DURATION}"
"""
    return head + body + scenario


def run(text, shards=1):
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "plan.toml")
        open(p, "w").write(text)
        out = os.path.join(d, "out")
        if shards > 1:
            env = dict(os.environ, BAKEOFF=B)
            cmd = ["scripts/simulate-shards.sh", p, str(shards), out]
            r = subprocess.run(cmd, capture_output=True, text=True, env=env)
        else:
            gate = ["--fail-on-regression", GATE] if GATE else []
            r = subprocess.run([B, "run", p, "--out", out, *gate], capture_output=True, text=True)
        if r.returncode != 0 and not (GATE and r.returncode == 4):
            sys.exit(f"bakeoff run failed:\n{r.stderr}")
        global LAST_CODE
        LAST_CODE = r.returncode
        results = json.load(open(os.path.join(out, "results.json")))
        report = json.load(open(os.path.join(out, "report", "report.json")))
        if os.environ.get("KEEP"):
            # KEEP=DIR keeps every comparison's results, so `bakeoff report` can read them again.
            import shutil
            os.makedirs(os.environ["KEEP"], exist_ok=True)
            shutil.copytree(out, os.path.join(os.environ["KEEP"], f"{time.time():.3f}"))
        return results, report


LAST_CODE = 0


def words(report):
    """Contender b's verdicts in the serving table's typed data: [(figure, verdict, call)]
    for every point and figure."""
    t = next(t for t in report["tables"] if t["id"].startswith("serving-"))
    d = t["data"]
    head = d["head"]
    out = []
    for row in d["rows"]:
        if row[head.index("contender")] != "b":
            continue
        for f in FIGURES:
            if f + "_verdict" in head:
                v = row[head.index(f + "_verdict")]
                if v:
                    out.append((f, v, row[head.index(f + "_call")]))
    return out


def estimate(report, figure="CPU_per_request"):
    """Contender b's ratio on `figure` at full precision, from the serving table's typed data
    (the cells round to three digits)."""
    t = next(t for t in report["tables"] if t["id"].startswith("serving-"))
    d = t["data"]
    head = d["head"]
    row = next(r for r in d["rows"] if r[head.index("contender")] == "b")
    return row[head.index(figure + "_ratio")]


def cell(report, column):
    """The cell of contender b in the serving table's `column`."""
    t = next(t for t in report["tables"] if t["id"].startswith("serving-"))
    row = next(r for r in t["rows"] if r[t["head"].index("contender")] == "b")
    return row[t["head"].index(column)]


def ratio_of(text):
    """`1.05× (1.02×–1.08×) more …` → 1.05; `≈ 0.998× (…) …` → 0.998."""
    word = text.lstrip("~≈? ").split(" ")[0]
    if word.startswith("÷"):
        return 1 / float(word[1:].rstrip("×"))
    return float(word.rstrip("×"))


def wilson(k, n, z=1.96):
    if n == 0:
        return (0.0, 1.0)
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return (max(0.0, c - h), min(1.0, c + h))


def base_cost():
    results, _ = run(plan("paired", 0, reps=1, single=True))
    p = results["runs"][0]["points"][0]
    return p["cost"]["cpu_s"] * 1e6 / p["load"]["requests"]


def given_work(text):
    """WORK5/WORK2 as given: a share ("2%") as it is, else µs."""
    return text.strip() if text.strip().endswith("%") else float(text)


def work_for(target, guess):
    """The --work (µs) that makes b cost `target` more per request than a, as measured: the
    counted loop is calibrated on its own, but inside a request it costs more (cold caches),
    so the amount is scaled by the median of three paired comparisons of six repetitions
    each (as many seconds as three, a narrower interval: benches/notes/notebook.md, 2026-12-02 18:30 UTC), twice."""
    work = guess
    for _ in range(2):
        measured = []
        for _ in range(3):
            _, report = run(plan("paired", work, reps=6))
            measured.append(ratio_of(cell(report, "CPU per request ×")) - 1)
        got = sorted(measured)[1]
        if got <= 0:
            break
        work *= target / got
    return work


def main():
    if not os.path.exists(B):
        sys.exit("build first: cargo build --release")
    start_neighbours()
    cost = base_cost()
    print(f"demo-server v2 at {CLIENTS} clients: {cost:.2f} µs of CPU per request here", file=sys.stderr)
    rows_wanted = [(label, extra) for label, extra in [("A/A", 0.0), ("+10 % CPU", 0.10), ("+5 % CPU", 0.05), ("+2 % CPU", 0.02)] if label in ROWS]
    # WORK5=µs / WORK2=µs reuse an amount an earlier run scaled (it prints them), skipping
    # the six comparisons of the scaling; WORK2=2% asks the server for that share of its own
    # cost instead (demo-server's `--work 2%`), which needs no scaling.
    given = {0.10: os.environ.get("WORK10"), 0.05: os.environ.get("WORK5"), 0.02: os.environ.get("WORK2")}
    work = {
        x: given_work(given[x]) if given[x] else work_for(x, cost * x) if x in [e for _, e in rows_wanted] else 0.0
        for x in (0.10, 0.05, 0.02)
    }
    print(f"--work for +10 %: {work_arg(work[0.10])}, for +5 %: {work_arg(work[0.05])}, for +2 %: {work_arg(work[0.02])}", file=sys.stderr)
    rows = []
    started = time.time()
    for order in ORDERS:
        for label, extra in rows_wanted:
            hits, thr_hits, ratios, blamed, trips = 0, 0, [], 0, 0
            tally = {f: {"different": 0, "equivalent": 0, "inconclusive": 0} for f in FIGURES}
            seconds = []
            for i in range(N):
                t0 = time.time()
                _, report = run(plan(order, work.get(extra, 0.0)), SHARDS)
                seconds.append(time.time() - t0)
                trips += LAST_CODE == 4
                blamed += any(f.get("kind") == "machine_disagrees" for f in report["findings"])
                if order == "paired":
                    w = words(report)
                    for f, v, _ in w:
                        tally[f][v] += 1
                    if POINTS == 1:
                        ratios.append(ratio_of(cell(report, "CPU per request ×")))
                    if extra == 0:
                        # A/A: the whole report counts, every point and figure.
                        hits += any(v == "different" for _, v, _ in w)
                        thr_hits += any(f == "throughput" and v == "different" for f, v, _ in w)
                    else:
                        cpu = [(v, c) for f, v, c in w if f == "CPU_per_request"]
                        hits += all(v == "different" and c == "higher" for v, c in cpu)
                        thr_hits += all(v == "different" and c == "lower" for f, v, c in w if f == "throughput")
                else:
                    v = cell(report, "verdict")
                    called = v in ("faster", "slower")
                    hits += called if extra == 0 else v == "slower"
                print(f"{order} {label} #{i + 1} ({seconds[-1]:.0f} s, exit {LAST_CODE}): {[x for x in report['summary'] if 'Serving' in x or 'Error control' in x]}"[:300], file=sys.stderr)
            rows.append((order, label, hits, thr_hits, ratios, blamed, tally, seconds, trips))
    minutes = (time.time() - started) / 60
    settings = f"; paired = {{ {PAIRED} }}" if PAIRED else ""
    if SHARDS > 1:
        settings += f"; as {SHARDS} shards on simulated machines (network + UTS namespaces), merged"
    points = "24 points (6 matrix values × clients 1, 2, 4, 8)" if POINTS == 24 else f"one point, {CLIENTS} clients"
    print(f"\n{N} comparisons per row, {REPS} repetitions each, {points}, {DURATION} per point{settings}; {minutes:.0f} min in all; base cost {cost:.2f} µs/request; --work {work_arg(work[0.05])} for +5 %, {work_arg(work[0.02])} for +2 %\n")
    print("| order | comparison | verdict on | called different | rate (95% Wilson) | median ratio measured | seconds per comparison |")
    print("|---|---|---|---|---|---|---|")
    for order, label, hits, thr_hits, ratios, blamed, tally, seconds, trips in rows:
        lo, hi = wilson(hits, N)
        what = "CPU per request" if order == "paired" else "throughput (U test)"
        if order == "paired" and extra_of(label) == 0:
            what = "any figure, any point (the whole report)"
        med = sorted(ratios)[len(ratios) // 2] if ratios else None
        secs = sorted(seconds)[len(seconds) // 2]
        print(f"| {order} | {label} | {what} | {hits}/{N} | {hits / N:.0%} ({lo:.0%}–{hi:.0%}) | {'%.3f×' % med if med else '—'} | {secs:.0f} |")
        if order == "paired":
            lo, hi = wilson(thr_hits, N)
            what = "throughput, any point" if extra_of(label) == 0 else "throughput"
            print(f"| {order} | {label} | {what} | {thr_hits}/{N} | {thr_hits / N:.0%} ({lo:.0%}–{hi:.0%}) | | |")
        if GATE:
            lo, hi = wilson(trips, N)
            print(f"| {order} | {label} | `--fail-on-regression {GATE}` tripped (exit 4) | {trips}/{N} | {trips / N:.0%} ({lo:.0%}–{hi:.0%}) | | |")
        if SHARDS > 1:
            lo, hi = wilson(blamed, N)
            print(f"| {order} | {label} | a machine disagrees (finding) | {blamed}/{N} | {blamed / N:.0%} ({lo:.0%}–{hi:.0%}) | | |")
    if "paired" in ORDERS:
        print("\nHow often each word appears, per cell (contender b's verdicts at every point):\n")
        print("| comparison | figure | cells | different | equivalent (±2 %) | inconclusive |")
        print("|---|---|---|---|---|---|")
        for order, label, _, _, _, _, tally, _, _ in rows:
            if order != "paired":
                continue
            for f, t in tally.items():
                n = sum(t.values())
                if n == 0:
                    continue
                share = lambda k: f"{t[k]} ({t[k] / n:.0%})"
                print(f"| {label} | {f.replace('_', ' ')} | {n} | {share('different')} | {share('equivalent')} | {share('inconclusive')} |")


def extra_of(label):
    return {"A/A": 0.0, "+10 % CPU": 0.10, "+5 % CPU": 0.05, "+2 % CPU": 0.02}[label]

if __name__ == "__main__":
    main()
