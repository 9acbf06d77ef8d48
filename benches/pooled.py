"""The band rule with the nights' spread pooled (issue 69, docs/history.md "A screen
instead"), tried offline on the nights `benches/nightly.py` kept (KEEP=…): does a
screened night find a step the night it lands once its interval is read with the spread
of every night of its stretch, and how often does an A/A night become a candidate?

A screened night reads its ratio over three repetitions, so its interval rests on
Student's t at 2 degrees of freedom (4.3). The spread between repetitions is the machine's
and the server's, much the same from night to night: pooled over the nights of a stretch
(those since the last step, against one reference) it has 2 × nights degrees of freedom,
and t falls to about 2.1. Each night's repetition ratios are read from its results.json
(CPU per request as the history records it per repetition: the contender's over the
reference's).

Rules, each a candidate where a night's interval lies wholly outside the band the nights
before it span (band.rs):

- **own**: each night's interval from its own repetitions, t(n − 1) — about today's rule;
- **pooled**: the same centre, the spread pooled over the stretch so far (this night
  included), t(Σ (n − 1)), from 6 degrees of freedom on — `history::band`'s rule since
  2595659, re-read here on nights recorded before it.

    KEEP=/tmp/keep python3 benches/nightly.py …    # first: keep the histories
    python3 benches/pooled.py /tmp/keep [METHOD]    # METHOD: screen (default) or paired

Prints a line per history (the first candidate night of each rule, counted from the night
the step landed; the candidates raised on nights before it, which are false) and a total.
"""
import json
import math
import os
import random
import sys

NIGHTS = list(range(3, 32, 4))
T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
        2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064]


def t975(df):
    return T975[df - 1] if df <= len(T975) else 1.96 + 2.4 / df


def reps(results):
    """Each repetition's log ratio of CPU per request, contender over reference."""
    per = {}
    for run in results["runs"]:
        for p in run.get("points") or []:
            cpu = (p.get("cost") or {}).get("cpu_s")
            n = (p.get("load") or {}).get("requests")
            if cpu and n:
                per.setdefault(run["repetition"], {})[run["contender"]] = cpu / n
    return [math.log(v["server"] / v["reference"]) for _, v in sorted(per.items())
            if "server" in v and "reference" in v]


def interval(xs, sd, df):
    m = sum(xs) / len(xs)
    half = t975(df) * sd / math.sqrt(len(xs))
    return m, m - half, m + half


def sd_of(xs):
    m = sum(xs) / len(xs)
    return math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1))


def candidates(nights, pooled):
    """The indices of the nights the band rule raises, each night's interval its own or read
    with the spread pooled over the stretch up to the night being judged (the nights of the
    band read with it too)."""
    out, start = [], 0
    for i in range(1, len(nights)):
        stretch = nights[start:i + 1]
        df = sum(len(n) - 1 for n in stretch)
        if pooled and df >= 6:  # band.rs' POOLED_DF
            ss = sum(sum((x - sum(n) / len(n)) ** 2 for x in n) for n in stretch)
            ivs = [interval(n, math.sqrt(ss / df), df) for n in stretch]
        else:
            ivs = [interval(n, sd_of(n), len(n) - 1) for n in stretch]
        lo, hi = min(b[1] for b in ivs[:-1]), max(b[2] for b in ivs[:-1])
        if ivs[-1][1] > hi or ivs[-1][2] < lo:
            out.append(i)
            start = i
    return out


def main():
    keep = sys.argv[1]
    method = sys.argv[2] if len(sys.argv) > 2 else "screen"
    total = {}
    for name in sorted(os.listdir(keep)):
        row, condition, seed = name.rsplit("-", 2)
        at = random.Random(int(seed)).randint(12, 24)
        landed = next(k for k, n in enumerate(NIGHTS) if n >= at)
        nights = []
        for n in NIGHTS:
            path = os.path.join(keep, name, f"{method}-run-{n}", "results.json")
            if not os.path.exists(path):
                break
            xs = reps(json.load(open(path)))
            if len(xs) < 2:
                break
            nights.append(xs)
        line = {"history": name, "nights": len(nights), "landed": None if row == "AA" else landed}
        for rule in ("own", "pooled"):
            got = candidates(nights, rule == "pooled")
            early = [g for g in got if row == "AA" or g < landed]
            later = [g - landed for g in got if row != "AA" and g >= landed]
            line[rule] = {"first": later[0] if later else None, "false": len(early)}
            t = total.setdefault((row, condition, rule), {"histories": 0, "nights": 0, "at_once": 0, "false": 0})
            t["histories"] += 1
            t["nights"] += len(nights)
            t["at_once"] += int(bool(later) and later[0] == 0)
            t["false"] += len(early)
        print(json.dumps(line))
    for (row, condition, rule), t in sorted(total.items()):
        print(f"{row} {condition} {rule}: {t}")


if __name__ == "__main__":
    main()
