"""What the demo server's `--work` reads as in a bake-off: one paired plan of the demo server
(`demo-server v2`) against itself made dearer several ways at once — shares of its own cost
(`--work 1%`, `2%`, `10%`: spent on every answer, sized from its thread's CPU clock) and a
fixed amount (`--work 0.26us` on every answer) — each against the plain one, so all see the
same minutes. The server spends exactly the share asked of its own CPU time (the unit test
`a_share_costs_that_share_of_the_answers_own_time`); this prints what a bake-off then
*measures* per request, which is more, and the plain server's cost, which says what share the
fixed amount is.

    python3 benches/work_share.py
    WORKS="1% 2% 0.26us" REPETITIONS=6 NEIGHBOURS=2 python3 benches/work_share.py

Uses benches/calibrate.py's plan (one point of 4 clients, 1 s) and neighbours; prints one
Markdown row per dearer server for BENCHMARKS.md.
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import calibrate as c  # noqa: E402

WORKS = os.environ.get("WORKS", "1% 2% 10% 0.26us").split()


def main():
    if not os.path.exists(c.B):
        sys.exit("build first: cargo build --release")
    c.start_neighbours()
    names = [f"w{i}" for i in range(len(WORKS))]
    text = c.plan("paired", 0.0, reps=c.REPS)
    # The plan's b is the plain server again; the dearer ones follow it, each against "a".
    for name, work in zip(names, WORKS):
        text = text.replace("[[scenario]]", c.contender(name, work).lstrip() + "\n[[scenario]]", 1)
    started = time.time()
    results, report = c.run(text)
    t = next(t for t in report["tables"] if t["id"].startswith("serving-"))
    pts = [p for r in results["runs"] if r["contender"] == "a" for p in r["points"] if p.get("cost") and p.get("load")]
    plain = sum(p["cost"]["cpu_s"] for p in pts) * 1e6 / sum(p["load"]["requests"] for p in pts)
    print(f"\n{c.REPS} repetitions, one point, {c.CLIENTS} clients, {c.DURATION}; {c.NEIGHBOURS} neighbours; plain server {plain:.2f} µs of CPU per request; {time.time() - started:.0f} s\n")
    print("| `--work` | spends | CPU per request × the plain server (the report's cell) |")
    print("|---|---|---|")
    cells = {r[t["head"].index("contender")]: r[t["head"].index("CPU per request ×")] for r in t["rows"]}
    for name, work in [("b", "(none: A/A)")] + list(zip(names, WORKS)):
        if work.endswith("us"):
            spends = f"{float(work[:-2]) / plain:.1%} of the plain server's cost"
        elif work.endswith("%"):
            spends = f"{work} of its own CPU time"
        else:
            spends = "nothing"
        print(f"| {work} | {spends} | {cells[name]} |")


if __name__ == "__main__":
    main()
