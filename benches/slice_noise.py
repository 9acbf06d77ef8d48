"""Where a screened night's noise comes from (docs/history.md, "A screen instead"): for each
kept paired run (a folder `nightly.py` kept with KEEP=…, or any `run --out` of two contenders,
`server` beside `reference`), each repetition's CPU-per-request ratio, the spread between the
repetitions, and the standard error of a repetition's ratio from its own rounds (the spread of
the rounds' log ratios over the root of their count).

    python3 benches/slice_noise.py /tmp/nightly/*/screen-run-*

Where the two agree, the repetitions differ by what their slices read, not by their starts.

Then, over every run read: the medians, and the nights as a history reads them — the spread
of the repetitions within a night against the spread of the nights' own ratios (runs in one
folder are one history's nights, as KEEP lays them out: where the second is no more than the
first over the root of the repetitions, the nights differ by their repetitions alone), and
what that allows: the share of +5 % steps any rule could find the night they land against
four nights before them, holding false candidates to 1 in 100 nights (a two-sided normal
test on the night's mean against theirs), and how much longer a night would have to measure
for 9 in 10 at that rate. Read that line over histories with no step (an A/A row).
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
    return ratios, st.mean(within), len(logs)


def normal_cdf(z):
    return 0.5 * (1 + math.erf(z / math.sqrt(2)))


def summary(read):
    """`read`: (folder, repetitions' log ratios, within, rounds) of every run."""
    med = lambda f: st.median(f(r) for r in read)  # noqa: E731
    print(f"{len(read)} runs: repetitions {med(lambda r: st.stdev(r[1])):.3f} apart (median), "
          f"a repetition ±{med(lambda r: r[2]):.3f} from {med(lambda r: r[3]):.0f} pairs, "
          f"a pair ±{med(lambda r: r[2] * math.sqrt(r[3])):.3f}")
    histories = {}
    for folder, ratios, _, _ in read:
        histories.setdefault(folder.rstrip("/").rsplit("/", 1)[0], []).append(ratios)
    histories = {h: n for h, n in histories.items() if len(n) >= 3}
    if not histories:
        return
    reps = st.median(len(r) for n in histories.values() for r in n)
    within = math.sqrt(st.mean(st.variance(r) for n in histories.values() for r in n))
    nights = math.sqrt(st.mean(st.variance([st.mean(r) for r in n]) for n in histories.values()))
    z = math.log(1.05) / (nights * math.sqrt(1 + 1 / 4))
    print(f"{len(histories)} histories: within a night ±{within:.3f} (root mean square), so a "
          f"night's ratio ±{within / math.sqrt(reps):.3f}; the nights' ratios ±{nights:.3f}; "
          f"+5 % found the night it lands at most {normal_cdf(z - 2.576):.0%} of the time "
          f"({normal_cdf(z - 2.326):.0%} watching regressions alone); "
          f"9 in 10 would take {((2.576 + 1.282) / z) ** 2:.1f}× the measuring")


if __name__ == "__main__":
    read = []
    for pattern in sys.argv[1:]:
        for folder in sorted(glob.glob(pattern)):
            read.append((folder, *one(folder)))
    if read:
        summary(read)
