"""Where a screened night's noise comes from (docs/history.md, "A screen instead"): for each
kept paired run (a folder `nightly.py` kept with KEEP=…, or any `run --out` of two contenders,
`server` beside `reference`), each repetition's CPU-per-request ratio, the spread between the
repetitions, and the standard error of a repetition's ratio from its own rounds (the spread of
the rounds' log ratios over the root of their count).

    python3 benches/slice_noise.py /tmp/nightly/*/screen-run-*

Where the two agree, the repetitions differ by what their slices read, not by their starts.
"""
import glob
import json
import math
import statistics as st
import sys


def cpu_per_request(s):
    return s["cost"]["cpu_s"] / s["requests"] if s.get("cost") and s["requests"] else None


def one(folder):
    r = json.load(open(f"{folder}/results.json"))
    reps = {}
    for run in r["runs"]:
        reps.setdefault(run["repetition"], {})[run["contender"]] = run["points"][0]["slices"]
    ratios, within = [], []
    for _, c in sorted(reps.items()):
        a, b = ({s["round"]: s for s in c[k]} for k in ("reference", "server"))
        pairs = [(cpu_per_request(a[k]), cpu_per_request(b[k])) for k in a if k in b]
        logs = [math.log(y / x) for x, y in pairs if x and y]
        total = lambda ss: sum(s["cost"]["cpu_s"] for s in ss if s.get("cost")) / sum(s["requests"] for s in ss)  # noqa: E731
        ratios.append(math.log(total(c["server"]) / total(c["reference"])))
        within.append(st.stdev(logs) / math.sqrt(len(logs)))
    print(f"{folder}: repetitions {' '.join(f'{math.exp(x):.3f}' for x in ratios)}; "
          f"between {st.stdev(ratios):.3f}, within {st.mean(within):.3f} ({len(logs)} rounds)")


if __name__ == "__main__":
    for pattern in sys.argv[1:]:
        for folder in sorted(glob.glob(pattern)):
            one(folder)
