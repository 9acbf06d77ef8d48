"""A nightly over injected histories (issue 69, docs/history.md "Over time, side by side"):
does a step get caught the night it lands, its culprit named, and no false alert raised?

Each history is 32 commits of the small C server (tests/fixtures/fromsource/server.c), each
changing a line the answers do not depend on, with one change at a random commit between 12
and 24 (seeded):

- "A/A": none (any alert is false);
- "+2 %", "+5 %", "+10 %": every answer that much dearer in server CPU from that commit on;
- "creep": +1 % on each of 6 consecutive commits from it.

The server's CPU per answer is about (24000 + WORK) units (benches/bisect.py's calibration:
WORK 24400 is +10 %); the measured size of every confirmed step is printed beside it.

A night every 4 commits (commits 3, 7, …, 31: 8 nights). Three methods meet the same history
on the same machine, night by night in turn:

- **paired**: the plan pairs each night's build with the server at commit 0
  (`[history] reference`), `run --ref server=<night> --record`, then `history detect
  --confirm --bisect`: the band rule on the ratio series, E-divisive, a confirmation against
  --min-magnitude 2 %, a bisection of a confirmed step across the skipped commits;
- **screen**: as paired, each night a screen (`[history] night = "screen"`: each build
  measured for the plan's durations only, no second stage; a candidate is measured in full
  by its confirmation);
- **absolute**: the same plan without a reference (one build a night, absolute series), the
  same `detect --confirm --bisect` — what a history had before issue 69, with today's
  confirmation;
- **otava**: Apache Otava (`analyze`, default settings) over the absolute history's
  `export --csv`, CPU per request, after each night: a change point is an alert (no
  confirmation, no culprit: Otava names the first night after the step).

Per row: nights from the step's night to the first confirmed alert, culprit right / a range
holding it / wrong, false alerts (an alert on A/A, or a culprit that is not the step's
commit), and machine seconds per night and per alert.

    cargo build --release
    python3 benches/nightly.py                          # every row, quiet and beside neighbours
    ROWS="A/A,+10 %" N=2 CONDITIONS=quiet python3 benches/nightly.py
    KEEP=/tmp/nightly ...                               # keep each history's folder

N is the histories a row (default: 10 for A/A and +5 %, 5 for the others); SEED the first
seed; NIGHT_BUDGET the paired and screened nights' `run --budget` (`off`: the plan's repetitions only);
METHODS which of `paired,screen,absolute` to run (default `paired,absolute`) (Otava reads the absolute history). Every history's line is printed as it ends, so a run cut short keeps what it measured.
"""
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from calibrate import start_neighbours  # noqa: E402


def _bisect_bench():
    """benches/bisect.py, loaded by its path: its name is also the standard library's."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("bisect_bench", os.path.join(os.path.dirname(__file__), "bisect.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_BISECT = _bisect_bench()
git = _BISECT.git
B = _BISECT.B
SERVER = _BISECT.SERVER
ROWS = os.environ.get("ROWS", "A/A,+2 %,+5 %,+10 %,creep").split(",")
CONDITIONS = os.environ.get("CONDITIONS", "quiet,neighbours").split(",")
NEIGHBOURS = int(os.environ.get("NEIGHBOURS", "2"))
SEED = int(os.environ.get("SEED", "1"))
# The paired and screened nights' `run --budget` (unset: the plan's, 10 min here; a screen none).
NIGHT_BUDGET = os.environ.get("NIGHT_BUDGET")
METHODS = os.environ.get("METHODS", "paired,absolute").split(",")
OTAVA = os.path.expanduser(os.environ.get("OTAVA", "~/.cache/bakeoff-otava/bin/otava"))
COMMITS = 32
NIGHTS = list(range(3, COMMITS, 4))
BASE = 20000
# CPU per answer ∝ OVERHEAD + WORK.
OVERHEAD = 24000

# bisect.py's plan (one point, 2 clients, 1 s, 3 repetitions), renamed, with room for a
# `[history]` table.
PLAN = _BISECT.PLAN.replace('name = "bisect-bench"\nrepetitions = 3\n', 'name = "nightly-bench"\nrepetitions = 3\nHEAD\n')
assert "HEAD" in PLAN


def works(row, at):
    """Each commit's WORK for a row whose change is at commit `at`."""
    grow = lambda share: round((OVERHEAD + BASE) * share)  # noqa: E731
    out = []
    for k in range(COMMITS):
        if row == "creep":
            steps = max(0, min(6, k - at + 1))
            out.append(BASE + steps * grow(0.01))
        elif row == "A/A" or k < at:
            out.append(BASE)
        else:
            out.append(BASE + grow(float(row.strip("+ %")) / 100))
    return out


def history(root, row, at):
    """The row's 32 commits of the server under ROOT/repo: their ids."""
    return _BISECT.commits(root, works(row, at))[1]


def night(root, method, ids, k):
    """One night of `method` at commit `k`: its seconds and the alerts it confirmed."""
    env = dict(os.environ, BAKEOFF_CACHE=os.path.join(root, "cache"), BAKEOFF_BUDGET="10m")
    hist = os.path.join(root, f"{method}.sqlite")
    plan = os.path.join(root, f"{method}.toml")
    start = time.time()
    quiet = dict(cwd=root, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    budget = ["--budget", NIGHT_BUDGET] if NIGHT_BUDGET and method != "absolute" else []
    subprocess.run([B, "run", plan, "--ref", f"server={ids[k]}", "--record", "--history", hist,
                    "--out", os.path.join(root, f"{method}-run-{k}")] + budget, **quiet)
    out = os.path.join(root, f"{method}-confirm-{k}")
    subprocess.run([B, "history", "detect", "--confirm", "--bisect", "--plan", plan, "--out", out,
                    "--history", hist], **quiet)
    seconds = time.time() - start
    alerts = []
    try:
        alerts = json.load(open(os.path.join(out, "alerts.json")))["alerts"]
    except (OSError, ValueError, KeyError):
        pass
    return seconds, alerts


def otava_alerts(root, ids):
    """Otava's change points in CPU per request over the absolute history, as commit indices."""
    if not os.path.exists(OTAVA):
        return None
    csv = subprocess.run([B, "history", "export", "--csv", "--history", os.path.join(root, "absolute.sqlite")],
                         capture_output=True, text=True).stdout
    lines = csv.splitlines()
    if len(lines) < 3:
        return []
    head = lines[0].split(",")
    col = next((i for i, h in enumerate(head) if ".server.get [clients=2].cpu_per_request." in h), None)
    if col is None:
        return []
    path = os.path.join(root, "otava.csv")
    with open(path, "w") as f:
        f.write(f"time,commit,cpu\n")
        for line in lines[1:]:
            cells = line.split(",")
            if cells[col]:
                f.write(f"{cells[0]},{cells[1]},{cells[col]}\n")
    config = os.path.join(root, "otava.yaml")
    with open(config, "w") as f:
        f.write(f"tests:\n  s:\n    type: csv\n    file: {path}\n    time_column: time\n"
                "    attributes: [commit]\n    metrics: [cpu]\n")
    o = subprocess.run([OTAVA, "analyze", "s", "--output", "json"], capture_output=True, text=True,
                       env=dict(os.environ, OTAVA_CONFIG=config))
    try:
        groups = json.loads(o.stdout)["s"]
    except (ValueError, KeyError):
        return []
    return [ids.index(g["attributes"]["commit"]) for g in groups if g.get("changes") and g["attributes"]["commit"] in ids]


def judge(alerts, ids, at, row):
    """The first regression alert: (its culprit's reading, whether it is false)."""
    for a in alerts:
        if not a.get("regression"):
            continue
        c = a["culprit"]
        if row == "A/A":
            return "false", True
        if c["kind"] == "commit":
            k = ids.index(c["id"]) if c["id"] in ids else -1
            right = k == at or (row == "creep" and at <= k < at + 6)
            return ("right" if right else f"wrong ({k})"), not right
        lo, hi = ids.index(c["after"]) + 1, ids.index(c["to"])
        holds = lo <= at <= hi or (row == "creep" and lo < at + 6 and hi >= at)
        return (f"range {lo}-{hi}" if holds else f"wrong range {lo}-{hi}"), not holds
    return None, False


def one(row, seed, condition):
    rng = random.Random(seed)
    at = rng.randint(12, 24)
    root = tempfile.mkdtemp(prefix="nightly-")
    ids = history(root, row, at)
    reference = f'[history]\nreference = "{ids[0]}"\n'
    heads = [("paired", reference), ("screen", reference + 'night = "screen"\n'), ("absolute", "")]
    for method, head in heads:
        with open(os.path.join(root, f"{method}.toml"), "w") as f:
            f.write(PLAN.replace("HEAD", head))
    landed = next(n for n in NIGHTS if n >= at)
    result = {m: {"seconds": [], "caught": None, "culprit": None, "false": 0, "ratio": None} for m in METHODS}
    otava_first = None
    otava_false = 0
    for k in NIGHTS:
        for method in METHODS:
            seconds, alerts = night(root, method, ids, k)
            r = result[method]
            r["seconds"].append(seconds)
            reading, false = judge(alerts, ids, at, row)
            r["false"] += int(false)
            if reading and r["caught"] is None and not false:
                r["caught"] = NIGHTS.index(k) - NIGHTS.index(landed)
                r["culprit"] = reading
                r["ratio"] = next(a["ratio"] for a in alerts if a.get("regression"))
        found = otava_alerts(root, ids) if "absolute" in METHODS else None
        if found is not None:
            # A change point is right at the first night after the change (for a creep, any
            # night from it to the first after its last commit), else false.
            last = next(n for n in NIGHTS if n >= at + (5 if row == "creep" else 0))
            right = [c for c in found if row != "A/A" and landed <= c <= last]
            if otava_first is None and right:
                otava_first = NIGHTS.index(k) - NIGHTS.index(landed)
            otava_false = max(otava_false, len(found) - len(right))
    line = {"row": row, "condition": condition, "seed": seed, "at": at, "landed_night": NIGHTS.index(landed) + 1,
            "otava_nights": otava_first, "otava_false": otava_false}
    for m, r in result.items():
        line[m] = {"nights": r["caught"], "culprit": r["culprit"], "false": r["false"],
                   "ratio": r["ratio"], "s_per_night": round(sum(r["seconds"]) / len(r["seconds"]), 1),
                   "s_total": round(sum(r["seconds"]))}
    print(json.dumps(line), flush=True)
    if os.environ.get("KEEP"):
        os.makedirs(os.environ["KEEP"], exist_ok=True)
        shutil.copytree(root, os.path.join(os.environ["KEEP"], f"{row.replace(' ', '').replace('/', '')}-{condition}-{seed}"),
                        ignore=shutil.ignore_patterns("cache"))
    shutil.rmtree(root, ignore_errors=True)
    return line


def main():
    default_n = {"A/A": 10, "+5 %": 10}
    for condition in CONDITIONS:
        procs = start_neighbours(NEIGHBOURS) if condition == "neighbours" else []
        for row in ROWS:
            n = int(os.environ.get("N", default_n.get(row, 5)))
            for seed in range(SEED, SEED + n):
                one(row, seed, condition)
        for p in procs:
            p.kill()
            p.wait()


if __name__ == "__main__":
    main()
