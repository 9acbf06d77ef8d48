#!/usr/bin/env python3
"""Memory flat in request count: bakeoff load's peak resident memory at ten times and a hundred
times the requests, every way it drives calls.

Starts nginx pinned to CPU 1 and etcd 3.5.1 (benches/peers.py), then runs `bakeoff load -n N
-t 1` pinned to CPU 0 for each N in COUNTS, each way of driving calls: HTTP/1.1 at one
connection (blocking calls), at 16 (the engine's ring) and at 16 through the runtime
(BAKEOFF_LOAD_IO=epoll), h2c at 16, HTTP/2 over TLS at 16 and gRPC unary (etcd KV/Range) at 16.
Peak memory is bakeoff's maximum resident set as GNU time reads it (Debian `time`). Prints a table: one row a way, one column a
count, and the growth from the least to the most requests.
    COUNTS=10000,100000,1000000 python3 benches/memory.py
"""
import json, os, subprocess, sys, tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peers  # noqa: E402

COUNTS = [int(n) for n in os.environ.get("COUNTS", "10000,100000,1000000").split(",")]


def peak(cmd, env=None):
    """Runs cmd pinned to the generator CPU under GNU time; (its JSON result, its peak resident
    MiB). GNU time, a small program, forks it: a child forked from this Python process would
    start its ru_maxrss at Python's own peak (exec keeps the larger)."""
    with tempfile.NamedTemporaryFile("r") as rss:
        p = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", rss.name,
                            "taskset", "-c", peers.GEN_CPU] + cmd,
                           capture_output=True, text=True, env=dict(os.environ, **(env or {})))
        if p.returncode != 0:
            raise RuntimeError(f"{cmd} failed: {p.stderr[-500:]}")
        return json.loads(p.stdout), int(rss.read().strip()) / 1024


def main():
    if not os.path.exists("/usr/bin/time"):
        raise SystemExit("GNU time is missing: apt-get install time")
    if not os.path.exists(peers.BAKEOFF):
        raise SystemExit("build first: cargo build --release")
    d = tempfile.mkdtemp()
    nginx, (p1, p2, _, p4), ca = peers.start_nginx(d)
    etcd, etcd_url = peers.start_etcd(d)
    h1 = f"http://127.0.0.1:{p1}/index.html"
    h2 = f"http://127.0.0.1:{p2}/index.html"
    t2 = f"https://127.0.0.1:{p4}/index.html"
    proto = os.path.join(peers.ROOT, "examples/etcd/protos/rpc.proto")
    # (row, arguments after `load -n N -t 1`, environment, the way the result must name)
    ways = [
        ("HTTP/1.1, 1 connection", ["-c", "1", h1], None, "blocking"),
        ("HTTP/1.1, 16", ["-c", "16", h1], None, "io_uring"),
        ("HTTP/1.1, 16, runtime", ["-c", "16", h1], {"BAKEOFF_LOAD_IO": "epoll"}, "epoll"),
        ("h2c, 16", ["-c", "16", "--h2", h2], None, "epoll"),
        ("HTTP/2 TLS, 16", ["-c", "16", "--h2", "--cacert", ca, t2], None, "epoll"),
    ]
    if etcd_url:
        ways.append(("gRPC unary, 16", ["-c", "16", "--grpc", etcd_url, "--proto", proto, "--call",
                                        "etcdserverpb.KV/Range", "-d", '{"key":"YmVuY2g="}'],
                     None, "epoll"))
    rows = []
    try:
        for name, args, env, way in ways:
            mib = []
            for n in COUNTS:
                r, m = peak([peers.BAKEOFF, "load", "-n", str(n), "-t", "1", "--json"] + args, env)
                if r["requests"] != n or r["generator"]["io"] != way:
                    raise RuntimeError(f"{name}: {r['requests']} requests by {r['generator']['io']}")
                mib.append(m)
                print(f"  {name}: {n} requests, peak {m:.1f} MiB", file=sys.stderr)
            rows.append((name, way, mib))
    finally:
        peers.stop((nginx, etcd), d)
    print("| load | its threads waited by | " + " | ".join(f"{n:,} requests" for n in COUNTS)
          + f" | {COUNTS[-1] // COUNTS[0]}× the requests |")
    print("|---|---|" + "---|" * len(COUNTS) + "---|")
    for name, way, mib in rows:
        print(f"| {name} | {way} | " + " | ".join(f"{m:.1f} MiB" for m in mib)
              + f" | {mib[-1] - mib[0]:+.1f} MiB |")


if __name__ == "__main__":
    main()
