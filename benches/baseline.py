#!/usr/bin/env python3
"""One connection's latency floor: bakeoff's p50 against a minimal blocking C client.

Builds benches/blocking.c (the `cc` command), starts nginx pinned to CPU 1 (benches/peers.py),
and runs, ROUNDS times in alternating order, `bakeoff load -c 1 -t 1` and the C client for
SLICE seconds each, pinned to CPU 0, against the same small static file. Prints each side's
median p50 and the median of the rounds' differences (issue 27 asks for no more than 5 µs).
bakeoff's p50 is whole microseconds (its histogram's unit), the C client's is to 0.1 µs.
    ROUNDS=10 SLICE=2 python3 benches/baseline.py
"""
import json, os, shutil, statistics, subprocess, sys, tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peers  # noqa: E402

ROUNDS = int(os.environ.get("ROUNDS", "10"))
SLICE = int(os.environ.get("SLICE", "2"))


def build_blocking(d):
    """benches/blocking.c built in the folder `d`; the program's path."""
    client = f"{d}/blocking"
    subprocess.run(["cc", "-O2", "-o", client,
                    os.path.join(peers.ROOT, "benches/blocking.c")], check=True)
    return client


def main():
    if not os.path.exists(peers.BAKEOFF):
        raise SystemExit("build first: cargo build --release")
    d = tempfile.mkdtemp()
    client = build_blocking(d)
    nginx, (port, _, _, _), _ = peers.start_nginx(d)
    url = f"http://127.0.0.1:{port}/index.html"
    pin = ["taskset", "-c", peers.GEN_CPU]
    ours, theirs = [], []
    try:
        for r in range(ROUNDS):
            for side in (("c", "bakeoff") if r % 2 else ("bakeoff", "c")):
                if side == "c":
                    out = subprocess.run(pin + [client, str(port), "/index.html", str(SLICE)],
                                         capture_output=True, text=True, check=True)
                    theirs.append(float(out.stdout.split()[1]))
                else:
                    out = subprocess.run(pin + [peers.BAKEOFF, "load", "-c", "1", "-t", "1", "-z",
                                                f"{SLICE}s", "--json", url],
                                         capture_output=True, text=True, check=True)
                    ours.append(float(json.loads(out.stdout)["latency_us"]["p50"]))
            print(f"  round {r + 1}: bakeoff p50 {ours[-1]:.0f} µs, C client {theirs[-1]:.1f} µs",
                  file=sys.stderr)
    finally:
        nginx.terminate()
        nginx.wait()
        shutil.rmtree(d, ignore_errors=True)
    diffs = [a - b for a, b in zip(ours, theirs)]
    print("| one connection, HTTP/1.1 | p50 µs (median of rounds) |")
    print("|---|---|")
    print(f"| minimal blocking C client (benches/blocking.c) | {statistics.median(theirs):.1f} |")
    print(f"| bakeoff load -c 1 | {statistics.median(ours):.0f} |")
    print(f"| bakeoff − C, median of {ROUNDS} rounds of {SLICE} s (range) | "
          f"**{statistics.median(diffs):+.1f}** ({min(diffs):+.1f} to {max(diffs):+.1f}) |")


if __name__ == "__main__":
    main()
