#!/usr/bin/env python3
"""Two builds of bakeoff's load engine against each other, interleaved: did a change to the
load path cost CPU? Each round runs OLD and NEW `bakeoff load` for one 1 s slice each, in a
random order, against one nginx pinned to CPU 1 (benches/peers.py), generators on CPU 0;
prints NEW ÷ OLD CPU per request, the geometric mean of ROUNDS rounds with a ±2.2 standard
error interval, for HTTP/1.1 and h2c at 1 and 16 connections.
    OLD=/tmp/old-bakeoff NEW=target/release/bakeoff ROUNDS=12 python3 benches/old_new.py
"""
import math, os, random, shutil, statistics, sys, tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peers  # noqa: E402

OLD, NEW = os.environ["OLD"], os.environ.get("NEW", peers.BAKEOFF)
ROUNDS = int(os.environ.get("ROUNDS", "12"))
peers.DURATION = 1


def cpu_per_request(binary, url, c, h2):
    peers.BAKEOFF = binary
    n, _, cpu = peers.tool_bakeoff(url, c, h2=h2)
    return cpu * 1e6 / max(n, 1)


def main():
    rng = random.Random(1)
    d = tempfile.mkdtemp()
    nginx, (p1, p2, _, _), _ = peers.start_nginx(d)
    urls = {"h2c": (f"http://127.0.0.1:{p2}/index.html", True),
            "HTTP/1.1": (f"http://127.0.0.1:{p1}/index.html", False)}
    print(f"| protocol | connections | new ÷ old CPU/request ({ROUNDS} rounds of 1 s) |")
    print("|---|---|---|")
    try:
        for name, (url, h2) in urls.items():
            for c in (1, 16):
                logs = []
                for _ in range(ROUNDS):
                    order = [OLD, NEW]
                    rng.shuffle(order)
                    v = {b: cpu_per_request(b, url, c, h2) for b in order}
                    logs.append(math.log(v[NEW] / v[OLD]))
                m, se = statistics.fmean(logs), statistics.stdev(logs) / len(logs) ** 0.5
                print(f"| {name} | {c} | {math.exp(m):.3f}× ({math.exp(m - 2.2 * se):.3f}–"
                      f"{math.exp(m + 2.2 * se):.3f}) |", flush=True)
    finally:
        nginx.terminate()
        nginx.wait()
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
