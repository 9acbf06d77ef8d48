#!/usr/bin/env python3
"""Where a generator's CPU per request goes, user space against the kernel (issue 27): bakeoff's
load engine and its peer (wrk for HTTP/1.1, h2load for h2c) against the same nginx as
benches/peers.py (pinned to CPU 1, each generator to CPU 0, one thread), alternating, ROUNDS
runs of BENCH_DURATION seconds each. Prints, per protocol and connection count, the median
user and system µs per request of each and its voluntary context switches per request (each
a sleep waiting for the server; getrusage of the child), and — with PERF=1 — the
largest kernel and user symbols of one more run of each (`perf record -e cpu-clock` on CPU 0;
hardware counters are not available on this VM).

    ROUNDS=6 BENCH_DURATION=2 BENCH_CONNS=1,16 python3 benches/split.py
    PERF=1 ROUNDS=2 BENCH_CONNS=16 BENCH_ONLY=HTTP/1.1 python3 benches/split.py

If the system time per request is most of it and both tools' are alike, no cut in user space
can take bakeoff far below its peer: the table says how far at most.
"""
import os
import resource
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peers as p  # noqa: E402

ROUNDS = int(os.environ.get("ROUNDS", "6"))
PERF = os.environ.get("PERF") == "1"
last = {}


def run(cmd):
    """peers.run, keeping user and system time apart."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(["taskset", "-c", p.GEN_CPU] + cmd, capture_output=True, text=True,
                         timeout=p.DURATION * 10 + 30)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode != 0:
        raise RuntimeError(f"{cmd[0]} failed: {out.stderr[-500:]}")
    last["user"] = after.ru_utime - before.ru_utime
    last["sys"] = after.ru_stime - before.ru_stime
    last["sleeps"] = after.ru_nvcsw - before.ru_nvcsw
    return out.stdout, last["user"] + last["sys"]


p.run = run


def perf_top(label, comms, fn, d):
    """The largest symbols of one run of fn, sampled on the generator's CPU, among the
    samples of the threads named `comms` (not the idle loop's)."""
    data = os.path.join(d, "perf.data")
    rec = subprocess.Popen(["perf", "record", "-q", "-e", "cpu-clock", "-F", "2999", "-C", p.GEN_CPU,
                            "-o", data], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        fn()
    finally:
        rec.terminate()
        rec.wait()
    rep = subprocess.run(["perf", "report", "-i", data, "--stdio", "--no-children", "--sort", "sym",
                          "--comms", comms, "--percentage", "relative", "--percent-limit", "1.5"],
                         capture_output=True, text=True)
    print(f"\n{label}: symbols over 1.5 % of its own samples on CPU 0 (`[k]` kernel, `[.]` user)\n")
    print("```")
    for line in rep.stdout.splitlines():
        if line.strip() and not line.startswith("#"):
            print(line.rstrip()[:120])
    print("```")


def main():
    if not os.path.exists(p.BAKEOFF):
        raise SystemExit("build first: cargo build --release")
    d = tempfile.mkdtemp()
    proc, (p1, p2, _, _), _ = p.start_nginx(d)
    h1, h2 = f"http://127.0.0.1:{p1}/index.html", f"http://127.0.0.1:{p2}/index.html"
    rows = [
        ("HTTP/1.1", "wrk", lambda c: p.tool_bakeoff(h1, c), lambda c: p.tool_wrk(h1, c)),
        ("h2c", "h2load", lambda c: p.tool_bakeoff(h2, c, h2=True), lambda c: p.tool_h2load(h2, c)),
    ]
    only = p.ONLY
    try:
        print("| protocol | connections | bakeoff user µs/req | sys | sleeps/req | peer | peer user µs/req | sys | sleeps/req | bakeoff ÷ peer, user | sys | all |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|")
        for proto, peer, ours, theirs in rows:
            if only and proto not in only:
                continue
            for c in p.CONNS:
                got = {"bakeoff": [], peer: []}
                for _ in range(ROUNDS):
                    for name, fn in [("bakeoff", ours), (peer, theirs)]:
                        n, _, _ = fn(c)
                        got[name].append((last["user"] * 1e6 / n, last["sys"] * 1e6 / n, last["sleeps"] / n))
                med = {k: [statistics.median(x[i] for x in v) for i in range(3)] for k, v in got.items()}
                (bu, bs, bw), (pu, ps, pw) = med["bakeoff"], med[peer]
                print(f"| {proto} | {c} | {bu:.2f} | {bs:.2f} | {bw:.2f} | {peer} | {pu:.2f} | {ps:.2f} | {pw:.2f} | "
                      f"{bu / pu:.2f}× | {bs / ps:.2f}× | {(bu + bs) / (pu + ps):.2f}× |")
                if PERF:
                    perf_top(f"bakeoff load, {proto}, {c} connections", "bakeoff,bakeoff-load-0", lambda: ours(c), d)
                    perf_top(f"{peer}, {proto}, {c} connections", peer, lambda: theirs(c), d)
    finally:
        proc.terminate()
        proc.wait()


if __name__ == "__main__":
    main()
