"""Slice length against the verdicts (docs/verdicts.md, "How long a slice is"): the same small
paired bake-offs of the demo server (`demo-server v2` against itself, and against itself made
5 % dearer per request with `--work`), run alternately with each `paired` setting in SETTINGS,
so every setting sees the same minutes of the machine's life. Prints, per setting and
comparison, how often each verdict came out on CPU per request, the median half-width of the
interval, the median repetitions the point got (more than the plan's with
`max_repetitions`), and the median seconds a comparison took.

    N=8 python3 benches/slice_ab.py
    SLICE_SD="20ms 400ms" python3 benches/slice_ab.py
        instead: the demo server against itself, 2 repetitions × 30 rounds at 1 and 4 clients
        with each fixed slice length, and per repetition and point the SD of one slice's log
        CPU per request (each side), of a round's log ratio, and the correlation of the two
        slices of a round
    N=8 REPETITIONS=5 SETTINGS='slice = "100ms", max_rounds = 30|' python3 benches/slice_ab.py
    N=10 SECOND=2 SETTINGS='|max_repetitions = 10|repetitions = 6;' python3 benches/slice_ab.py
        the second comparison +2 % dearer instead of +5 % (WORK5=µs / WORK2=µs reuse an
        amount an earlier run scaled, as calibrate.py; WORK2=2% a share of the server's own
        cost, `demo-server --work 2%`, which stays 2 % however the host's speed moves)

NEIGHBOURS=K runs K bursty CPU neighbours throughout (calibrate.py). ROWS="+2 % CPU" (or
"A/A") runs that comparison alone. SETTINGS is a list of `paired = { … }` bodies separated by `|` (empty: the defaults), each
optionally led by `repetitions = N;` for a plan of N repetitions instead of 3. Uses
benches/calibrate.py's plan and --work scaling (3 repetitions, one point of 4 clients, 1 s).
"""
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import calibrate as c  # noqa: E402

N = int(os.environ.get("N", "8"))
SETTINGS = os.environ.get("SETTINGS", 'slice = "100ms", max_rounds = 30|').split("|")


def half_width(cell):
    """The ± of a cell: `(±4.7%)` when inconclusive, else half the interval's log width."""
    m = re.search(r"\(([÷\d.]+)×?–([÷\d.]+)×?\)", cell)
    if not m:
        return None
    v = [1 / float(x[1:]) if x.startswith("÷") else float(x) for x in m.groups()]
    return (v[1] / v[0]) ** 0.5 - 1


def slice_sd(lengths):
    import json
    import math
    import statistics as st
    import subprocess
    import tempfile

    print("| slice | repetition | clients | rounds | SD a | SD b | SD of b/a | correlation |")
    print("|---|---|---|---|---|---|---|---|")
    for length in lengths:
        text = c.plan("paired", 0.0, reps=2).replace(
            'order = "paired"\n', f'order = "paired"\npaired = {{ slice = "{length}", rounds = 30 }}\n'
        ).replace(f"clients = {c.CLIENTS}", "clients = [1, 4]")
        with tempfile.TemporaryDirectory() as d:
            open(os.path.join(d, "plan.toml"), "w").write(text)
            subprocess.run([c.B, "run", os.path.join(d, "plan.toml"), "--out", os.path.join(d, "out")],
                           capture_output=True, check=True)
            r = json.load(open(os.path.join(d, "out", "results.json")))
        by = {}
        for run in r["runs"]:
            for p in run["points"]:
                by.setdefault((run["repetition"], p["clients"]), {})[run["contender"]] = p["slices"]
        for (rep, clients), cs in sorted(by.items()):
            a = {s["round"]: s for s in cs["a"]}
            b = {s["round"]: s for s in cs["b"]}
            log = lambda s: math.log(s["cost"]["cpu_s"] / s["requests"])
            ks = [k for k in a if k in b and a[k]["requests"] and b[k]["requests"]]
            la, lb = [log(a[k]) for k in ks], [log(b[k]) for k in ks]
            d = [y - x for x, y in zip(la, lb)]
            print(f"| {length} | {rep} | {clients} | {len(ks)} | {st.stdev(la):.1%} | {st.stdev(lb):.1%} | {st.stdev(d):.1%} | {st.correlation(la, lb):.2f} |")


def main():
    if not os.path.exists(c.B):
        sys.exit("build first: cargo build --release")
    if os.environ.get("SLICE_SD"):
        return slice_sd(os.environ["SLICE_SD"].split())
    started = time.time()
    c.start_neighbours()
    cost = c.base_cost()
    second = int(os.environ.get("SECOND", "5"))
    given = os.environ.get(f"WORK{second}")
    work = c.given_work(given) if given else c.work_for(second / 100, cost * second / 100)
    print(f"demo-server v2: {cost:.2f} µs of CPU per request; --work {c.work_arg(work)} for +{second} %", file=sys.stderr)
    rows = {}
    for i in range(N):
        for label, extra in [("A/A", 0.0), (f"+{second} % CPU", work)]:
            if os.environ.get("ROWS") and label not in os.environ["ROWS"].split(","):
                continue
            for s in SETTINGS:
                reps, body = c.REPS, s
                m = re.match(r"\s*repetitions\s*=\s*(\d+)\s*;\s*(.*)", s)
                if m:
                    reps, body = int(m.group(1)), m.group(2)
                c.PAIRED = body
                t0 = time.time()
                results, report = c.run(c.plan("paired", extra, reps=reps))
                secs = time.time() - t0
                cell = c.cell(report, "CPU per request ×")
                word = next(v for f, v, _ in c.words(report) if f == "CPU_per_request")
                reps = sum(1 for r in results["runs"] if r["contender"] == "b" and r["points"])
                rows.setdefault((s, label), []).append((word, half_width(cell), secs, reps, c.estimate(report)))
                print(f"#{i + 1} {label} [{s or 'defaults'}] {secs:.0f} s, {reps} repetitions: {cell}", file=sys.stderr)
    minutes = (time.time() - started) / 60
    print(f"\n{N} comparisons per row, alternating settings; {c.REPS} repetitions, one point, {c.CLIENTS} clients, {c.DURATION}; {c.NEIGHBOURS} neighbours; --work {c.work_arg(work)}; {minutes:.0f} min in all\n")
    print("| paired | comparison | different | equivalent (±2 %) | inconclusive | median ratio | median ± | median repetitions | median s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for (s, label), xs in rows.items():
        n = len(xs)
        count = lambda w: f"{sum(1 for x in xs if x[0] == w)}/{n}"
        hw = sorted(x[1] for x in xs if x[1] is not None)
        secs = sorted(x[2] for x in xs)
        med = f"±{hw[len(hw) // 2] * 100:.1f}%" if hw else "—"
        reps = sorted(x[3] for x in xs)
        ratios = sorted(x[4] for x in xs)
        print(f"| `{s or 'defaults'}` | {label} | {count('different')} | {count('equivalent')} | {count('inconclusive')} | {ratios[n // 2]:.3f}× | {med} | {reps[len(reps) // 2]} | {secs[len(secs) // 2]:.0f} |")
    for label in dict.fromkeys(lab for _, lab in rows):
        pooled = sorted(x[4] for (_, lab), xs in rows.items() if lab == label for x in xs)
        print(f"\n{label}: median estimate over all {len(pooled)} comparisons {pooled[len(pooled) // 2]:.4f}×")


if __name__ == "__main__":
    main()
