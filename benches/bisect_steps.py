"""What the bisections kept by `KEEP=DIR python3 benches/bisect.py` spent their time on, read
from their folders (BENCHMARKS.md, "Bisection, side by side", quotes it):

- each step's seconds; its repetitions' rounds, how many ran no more than the fewest any
  repetition of their step ran (the point's least, its duration's share, unless every one of
  them needed more) and how many ran to their limit; the spread (standard deviation) of a round's
  CPU-per-request ratio against the step's first commit; each pair's interval (±);
- for the bisections that stopped at the endpoints, the endpoints' repetitions and seconds.

    python3 benches/bisect_steps.py /tmp/keep-quiet /tmp/keep-neighbours
"""
import glob
import json
import math
import os
import statistics
import sys


def rounds(run):
    return run["points"][0]["slices"]


def cpu_per_request(s):
    return s["cost"]["cpu_s"] / s["requests"] if s.get("cost") and s["requests"] else None


def round_spread(runs, base, other):
    """The standard deviation of ln(other / base) over the rounds of each repetition."""
    out = []
    for rep in sorted({r["repetition"] for r in runs}):
        b = next(r for r in runs if r["repetition"] == rep and r["contender"] == base)
        o = next(r for r in runs if r["repetition"] == rep and r["contender"] == other)
        pairs = zip(rounds(b), rounds(o))
        logs = [math.log(y / x) for x, y in ((cpu_per_request(p), cpu_per_request(q)) for p, q in pairs) if x and y]
        if len(logs) > 2:
            out.append(statistics.stdev(logs))
    return out


def main(dirs):
    secs, counts, least, limit, halves, spreads, ends = [], [], 0, 0, [], [], []
    for d in sorted(p for k in dirs for p in glob.glob(os.path.join(k, "*"))):
        rec = json.load(open(os.path.join(d, "bisect.json")))
        for step in rec["steps"]:
            res = json.load(open(os.path.join(d, step["dir"], "results.json")))
            runs = res["runs"]
            first = runs[0]["contender"]
            mine = [r for r in runs if r["contender"] == first]
            if (rec.get("answer") or {}).get("kind") != "culprits" and step["kind"] == "endpoints":
                ends.append((len(mine), step["seconds"]))
            if step["kind"] != "step":
                continue
            secs.append(step["seconds"])
            fewest = min(len(rounds(r)) for r in mine)
            for r in mine:
                counts.append(len(rounds(r)))
                least += len(rounds(r)) == fewest
                limit += r["points"][0].get("round_limit") == len(rounds(r))
            for pair in step["pairs"]:
                halves += [math.sqrt(p["hi"] / p["lo"]) - 1 for p in pair["points"]]
            for other in sorted({r["contender"] for r in runs} - {first}):
                spreads += round_spread(runs, first, other)
    if secs:
        print(f"steps: {len(secs)}, median {statistics.median(secs):.0f} s ({min(secs):.0f}–{max(secs):.0f})")
        print(f"step repetitions: {len(counts)}, a median of {statistics.median(counts):.0f} rounds "
              f"({min(counts)}–{max(counts)}); at their step's fewest {least}, at their round limit {limit}")
        print(f"pairs' intervals: ±{100 * min(halves):.1f}–{100 * max(halves):.1f} %")
        q = statistics.quantiles(spreads, n=10)
        print(f"a round's ratio, sd within a repetition: median {100 * statistics.median(spreads):.0f} %, "
              f"tenth to ninetieth percentile {100 * q[0]:.0f}–{100 * q[-1]:.0f} %")
    for n, s in ends:
        print(f"not reproduced at the endpoints: {n} repetitions, {s:.0f} s")


if __name__ == "__main__":
    main(sys.argv[1:] or sys.exit(__doc__))
