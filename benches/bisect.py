"""Bisection, side by side (issue 49): `bakeoff bisect` against the unpaired per-commit rule
Chromium's Pinpoint uses, on the same machine in the same run, over histories of a small C
server made here: 64 commits after the good one, each changing a line the answers do not
depend on, and

- "+10 %": commit 37 makes every answer about 10 % dearer in server CPU (WORK scaled);
- "A/A": every commit as fast (any culprit named is wrong).

Each bisection runs REPEATS times (default 10) for each history, quiet and with NEIGHBOURS
bursty CPU neighbours (default 2: about a core's worth on this 2-core machine, as
benches/calibrate.py's), alternating bakeoff and the unpaired rule so both meet the same
machine. Printed: how often the right culprit is named, how often a wrong one (any named
commit on the A/A history), the median measurement seconds and builds.

    python3 benches/bisect.py                       # REPEATS=10, both conditions
    REPEATS=3 CONDITIONS=quiet python3 benches/bisect.py

**The unpaired rule** (after Pinpoint's job_state and compare modules, simplified where
said): a commit's sample is its server's CPU per request over one 1 s window of
`bakeoff load -c 2` (server pinned to CPU 1, load to CPU 0, as bakeoff pins), CPU read from
/proc/PID/stat (clock ticks: about ±1 % of a window); 10 samples per commit, from one start of the server (cheaper than
Pinpoint's one job per sample: in its favour); two commits are *different* when
min(Kolmogorov–Smirnov p, Mann–Whitney U p) ≤ 0.01, *same* when it is above 0.5 (Pinpoint's
high threshold depends on the sample size and effect; 0.5 is a fixed stand-in), else
*unknown*: 10 more samples for both, up to 160 each, and unknown at the end counts as same.
The search: the endpoints compared first (same → nothing to find); then the midpoint's
samples, compared with the range's low end — different → the culprit is at or below it,
else with the high end — different → above it, else the search stops with no culprit. A
range of one commit names it.

**bakeoff**: `bakeoff bisect` with a plan of one point (2 clients, 1 s), 3 repetitions (a
step raises them to 5), the default budget and bands; its measurement seconds are its runs' (bisect.json), builds its
own. `KEEP=DIR` keeps each bisection's folder (`benches/bisect_steps.py` reads them);
`WAYS=K` passes `--ways K` (K−1 commits measured between a step's ends, fewer steps).
"""
import json
import math
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from calibrate import start_neighbours  # noqa: E402

# BAKEOFF names another binary (a copy, so a build may run beside a benchmark).
B = os.path.abspath(os.environ.get("BAKEOFF", "target/release/bakeoff"))
SERVER = open("tests/fixtures/fromsource/server.c").read()
REPEATS = int(os.environ.get("REPEATS", "10"))
CONDITIONS = os.environ.get("CONDITIONS", "quiet,neighbours").split(",")
NEIGHBOURS = int(os.environ.get("NEIGHBOURS", "2"))
HISTORIES = os.environ.get("HISTORIES", "+10 %,A/A").split(",")
SLOW_WORK = int(os.environ.get("SLOW_WORK", "24400"))
CULPRIT = 37
# One sample of the unpaired rule: a window of load, long enough that the CPU's clock ticks
# (10 ms) are about 1 % of it.
WINDOW = os.environ.get("WINDOW", "1s")
WAYS = os.environ.get("WAYS")
TICKS = os.sysconf("SC_CLK_TCK")

PLAN = """name = "bisect-bench"
repetitions = 3

[[contender]]
name = "server"
source = { git = "repo", ref = "main" }
build = [["cc", "-O1", "-o", "server", "server.c", "-lpthread"]]
command = ["{source}/server", "{port}"]
ready = { http = "http://127.0.0.1:{port}/", timeout = "20s" }

[[scenario]]
name = "get"
http = "/"
clients = [2]
duration = "1s"
"""


def git(repo, *args):
    return subprocess.run(["git", "-C", repo, *args], check=True, capture_output=True, text=True).stdout.strip()


def history(root, slow):
    """The 64-commit history (commit 0 is good) and its commit ids."""
    repo, ids = commits(root, [SLOW_WORK if slow and k >= CULPRIT else 20000 for k in range(65)])
    with open(os.path.join(root, "plan.toml"), "w") as f:
        f.write(PLAN)
    return repo, ids


def commits(root, works):
    """A repository of the server at ROOT/repo, commit k doing WORKS[k]; its commit ids."""
    repo = os.path.join(root, "repo")
    os.makedirs(repo)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "bench@example.com")
    git(repo, "config", "user.name", "bench")
    ids = []
    for k, work in enumerate(works):
        text = SERVER.replace("usage: server PORT", f"usage: server PORT ({k})").replace(
            "#define WORK 20000", f"#define WORK {work}"
        )
        with open(os.path.join(repo, "server.c"), "w") as f:
            f.write(text)
        git(repo, "add", "server.c")
        git(repo, "commit", "-q", "-m", f"commit {k}")
        ids.append(git(repo, "rev-parse", "HEAD"))
    return repo, ids


def run_bakeoff(root, ids, k):
    out = os.path.join(root, f"bisect-{k}")
    env = dict(os.environ, BAKEOFF_CACHE=os.path.join(root, "cache"))
    subprocess.run(
        [B, "bisect", "plan.toml", "--contender", "server", "--good", ids[0], "--bad", ids[64], "--out", out]
        + (["--ways", WAYS] if WAYS else []),
        cwd=root, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    rec = json.load(open(os.path.join(out, "bisect.json")))
    if os.environ.get("KEEP"):
        # Each bisection's folder (its steps' results), for `bakeoff report` afterwards.
        os.makedirs(os.environ["KEEP"], exist_ok=True)
        shutil.copytree(out, os.path.join(os.environ["KEEP"], f"{time.time():.3f}"))
    named = []
    answer = rec.get("answer") or {}
    for b in answer.get("blames", []):
        named.extend(range(b["from"] + 1, b["to"] + 1))
    seconds = sum(s["seconds"] for s in rec["steps"])
    # Commits built (a later repeat finds them in the cache: counted all the same).
    builds = len(rec["builds"])
    return named, seconds, builds, answer.get("kind")


# --- the unpaired rule ---------------------------------------------------------------------


def mwu_p(a, b):
    """Two-sided Mann–Whitney U p-value, normal approximation with ties and continuity."""
    n1, n2 = len(a), len(b)
    both = sorted([(x, 0) for x in a] + [(x, 1) for x in b])
    ranks = [0.0] * len(both)
    i = 0
    ties = 0.0
    while i < len(both):
        j = i
        while j + 1 < len(both) and both[j + 1][0] == both[i][0]:
            j += 1
        r = (i + j) / 2 + 1
        for k in range(i, j + 1):
            ranks[k] = r
        t = j - i + 1
        ties += t**3 - t
        i = j + 1
    r1 = sum(r for r, (_, g) in zip(ranks, both) if g == 0)
    u = r1 - n1 * (n1 + 1) / 2
    mu = n1 * n2 / 2
    n = n1 + n2
    sd = math.sqrt(n1 * n2 / 12 * ((n + 1) - ties / (n * (n - 1))))
    if sd == 0:
        return 1.0
    z = (abs(u - mu) - 0.5) / sd
    return min(1.0, math.erfc(max(z, 0) / math.sqrt(2)))


def ks_p(a, b):
    """Two-sided two-sample Kolmogorov–Smirnov p-value (asymptotic)."""
    a, b = sorted(a), sorted(b)
    n1, n2 = len(a), len(b)
    i = j = 0
    d = 0.0
    while i < n1 and j < n2:
        x = min(a[i], b[j])
        while i < n1 and a[i] <= x:
            i += 1
        while j < n2 and b[j] <= x:
            j += 1
        d = max(d, abs(i / n1 - j / n2))
    en = math.sqrt(n1 * n2 / (n1 + n2))
    lam = (en + 0.12 + 0.11 / en) * d
    p = 2 * sum((-1) ** (k - 1) * math.exp(-2 * k * k * lam * lam) for k in range(1, 101))
    return min(1.0, max(0.0, p))


class Unpaired:
    """Pinpoint's rule over built commits: samples per commit, compared unpaired."""

    def __init__(self, root, repo, ids):
        self.root, self.repo, self.ids = root, repo, ids
        self.samples = {}
        self.bins = {}
        self.seconds = 0.0

    def binary(self, k):
        if k not in self.bins:
            d = os.path.join(self.root, "unpaired", str(k))
            os.makedirs(d, exist_ok=True)
            src = git(self.repo, "show", f"{self.ids[k]}:server.c")
            with open(os.path.join(d, "server.c"), "w") as f:
                f.write(src)
            subprocess.run(["cc", "-O1", "-o", "server", "server.c", "-lpthread"], cwd=d, check=True)
            self.bins[k] = os.path.join(d, "server")
        return self.bins[k]

    def more(self, k, n=10):
        """n more samples of commit k, from one start of its server."""
        import socket

        t0 = time.monotonic()
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        p = subprocess.Popen(["taskset", "-c", "1", self.binary(k), str(port)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            for _ in range(200):
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                    break
                except OSError:
                    time.sleep(0.01)
            got = self.samples.setdefault(k, [])
            for _ in range(n):
                before = cpu_ticks(p.pid)
                r = subprocess.run(["taskset", "-c", "0", B, "load", "-z", WINDOW, "-c", "2", "--json",
                                    f"http://127.0.0.1:{port}/"], capture_output=True, text=True)
                after = cpu_ticks(p.pid)
                ok = json.loads(r.stdout)["successes"]
                if ok:
                    got.append((after - before) / TICKS / ok)
        finally:
            p.kill()
            p.wait()
        self.seconds += time.monotonic() - t0

    def compare(self, a, b):
        for k in (a, b):
            if len(self.samples.get(k, [])) < 10:
                self.more(k, 10 - len(self.samples.get(k, [])))
        while True:
            x, y = self.samples[a], self.samples[b]
            p = min(ks_p(x, y), mwu_p(x, y))
            if p <= 0.01:
                return "different"
            if p > 0.5 or min(len(x), len(y)) >= 160:
                return "same"
            self.more(a)
            self.more(b)

    def bisect(self):
        lo, hi = 0, 64
        if self.compare(lo, hi) == "same":
            return []
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self.compare(lo, mid) == "different":
                hi = mid
            elif self.compare(mid, hi) == "different":
                lo = mid
            else:
                return []
        return [hi]


def outcome(named, slow):
    """right: the culprit alone; range: several commits holding it; wrong: any commit named
    on the A/A history, or commits without the culprit; none: nothing named."""
    if not named:
        return "none"
    if not slow or CULPRIT not in named:
        return "wrong"
    return "right" if named == [CULPRIT] else "range"


def cpu_ticks(pid):
    """User + system CPU of the whole process, threads that have ended included, in clock
    ticks (/proc/PID/stat: the per-thread schedstat would miss the threads of the load's
    connections, which end with it)."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def median(xs):
    return statistics.median(xs) if xs else float("nan")


def main():
    if not os.path.exists(B):
        sys.exit("build first: cargo build --release")
    rows = []
    for cond in CONDITIONS:
        procs = start_neighbours(NEIGHBOURS) if cond == "neighbours" else []
        for hist in HISTORIES:
            slow = hist != "A/A"
            with tempfile.TemporaryDirectory(prefix="bakeoff-bisect-bench-") as root:
                repo, ids = history(root, slow)
                tally = {"bakeoff": [], "unpaired": []}
                for k in range(REPEATS):
                    named, secs, builds, kind = run_bakeoff(root, ids, k)
                    tally["bakeoff"].append((named, secs, builds))
                    u = Unpaired(root, repo, ids)
                    un = u.bisect()
                    tally["unpaired"].append((un, u.seconds, len(u.bins)))
                    print(f"{cond} {hist} #{k + 1}: bakeoff {kind} {named} {secs:.0f} s {builds} builds; "
                          f"unpaired {un} {u.seconds:.0f} s {len(u.bins)} builds", file=sys.stderr, flush=True)
                for who, runs in tally.items():
                    said = [outcome(n, slow) for n, _, _ in runs]
                    rows.append((cond, hist, who, *(said.count(w) for w in ("right", "range", "wrong", "none")),
                                 len(runs), median([s for _, s, _ in runs]), median([b for _, _, b in runs])))
        for p in procs:
            p.kill()
            p.wait()
    print("| machine | history | method | the culprit alone | a range holding it | a wrong commit | none named | runs | median measuring s | median builds |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for cond, hist, who, right, rng, wrong, none, n, secs, builds in rows:
        if hist == "A/A":
            right = rng = "–"
        if who == "bakeoff" and WAYS:
            who = f"bakeoff --ways {WAYS}"
        print(f"| {cond} | {hist} | {who} | {right} | {rng} | {wrong} | {none} | {n} | {secs:.0f} | {builds:.0f} |")


if __name__ == "__main__":
    main()
