#!/usr/bin/env python3
"""The steady generator benchmark: bakeoff's load engine against its peer, interleaved.

The paired idea applied to load generators. For each protocol × connection count, every
round runs the peer (wrk for HTTP/1.1, h2load for h2c and gRPC unary), `bakeoff load`, and
`bakeoff load` slowed on purpose by a known amount (the test-only knob BAKEOFF_LOAD_BURN_NS:
the engine spins that long after each response) for one short slice each, in a fresh random
order, against the same pinned server (benches/peers.py starts them: nginx and etcd 3.5.1 on
CPU 1, the generator on CPU 0, one thread). A slice's figure is the generator's CPU time per
request (user + system of the process, from getrusage). What drifts — a neighbour, the
host's steal, the server warming — drifts for all three within a round, so each round's
ratio cancels it; the table gives the geometric mean of the rounds' ratios with a 95 %
bootstrap interval.

The knob is set from a first round that is not counted (it also warms the server): KNOB_PCT
(default 3) per cent of bakeoff's CPU per request there. Its row says whether the interval
of "slowed / bakeoff" clears 1: the benchmark is steady enough when it finds the knob and
the interval of bakeoff against its peer is narrower than the knob.

    ROUNDS=40 SLICE=1 BENCH_CONNS=1,16,64 BENCH_ONLY="HTTP/1.1,h2c,gRPC unary" KNOB_PCT=3 \
        python3 benches/steady.py
Needs target/release/bakeoff and the peers (benches/peers.sh installs them).
"""
import json, math, os, random, statistics, sys, tempfile, shutil

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peers  # noqa: E402
from baseline import build_blocking  # noqa: E402

ROUNDS = int(os.environ.get("ROUNDS", "40"))
SLICE = int(os.environ.get("SLICE", "1"))
KNOB_PCT = float(os.environ.get("KNOB_PCT", "3"))
CONNS = [int(c) for c in os.environ.get("BENCH_CONNS", "1,16,64").split(",")]
ONLY = [p for p in os.environ.get("BENCH_ONLY", "HTTP/1.1,h2c,gRPC unary").split(",") if p]
SEED = int(os.environ.get("SEED", "1"))
# VS_H2=1: a fourth generator in the h2c and gRPC rows, bakeoff with BAKEOFF_HTTP2_CLIENT=h2
# (the `h2` crate instead of the lean client), and a second table: lean ÷ h2 crate.
VS_H2 = os.environ.get("VS_H2") == "1"
# VS_EPOLL=1: a fourth generator in the HTTP/1.1 rows, bakeoff with BAKEOFF_LOAD_IO=epoll (the
# runtime instead of the engine's own io_uring), and a second table: io_uring ÷ epoll.
VS_EPOLL = os.environ.get("VS_EPOLL") == "1"
# VS_BIN=PATH: a further generator in every row, another build of bakeoff (say the commit before
# a change to the engine, copied aside), and a second table: this build ÷ that one.
VS_BIN = os.environ.get("VS_BIN")
# VS_C=1: in the HTTP/1.1 row at one connection, a further generator, the minimal blocking C
# client of benches/baseline.py (benches/blocking.c: a write and a read a request, nothing
# else), and a second table: bakeoff ÷ it — what one connection's CPU per request costs any
# client that waits for each answer, the floor bakeoff is measured against there.
VS_C = os.environ.get("VS_C") == "1"
peers.DURATION = SLICE


def interval(logs, rng, n=4000):
    """Geometric mean of the ratios and a 95 % percentile bootstrap interval of it."""
    means = sorted(statistics.fmean(rng.choices(logs, k=len(logs))) for _ in range(n))
    lo, hi = means[int(0.025 * n)], means[int(0.975 * n) - 1]
    return math.exp(statistics.fmean(logs)), math.exp(lo), math.exp(hi)


def with_env(fn, key, value):
    def run(c):
        os.environ[key] = value
        try:
            return fn(c)
        finally:
            del os.environ[key]
    return run


def with_bin(fn, path):
    def run(c):
        ours, peers.BAKEOFF = peers.BAKEOFF, path
        try:
            return fn(c)
        finally:
            peers.BAKEOFF = ours
    return run


def blocking_c(d, port):
    """benches/blocking.c built in `d`, as a generator of one connection to nginx's `port`."""
    client = build_blocking(d)

    def run(c):
        assert c == 1, "the blocking client has one connection"
        out, cpu = peers.run([client, str(port), "/index.html", str(SLICE)])
        return int(out.split()[0]), None, cpu
    return run


def with_knob(fn, ns):
    return with_env(fn, "BAKEOFF_LOAD_BURN_NS", str(ns))


def main():
    if not os.path.exists(peers.BAKEOFF):
        raise SystemExit("build first: cargo build --release")
    rng = random.Random(SEED)
    d = tempfile.mkdtemp()
    nginx, (p1, p2, _, _), _ = peers.start_nginx(d)
    etcd, etcd_url = peers.start_etcd(d) if "gRPC unary" in ONLY else (None, None)
    h1, h2 = f"http://127.0.0.1:{p1}/index.html", f"http://127.0.0.1:{p2}/index.html"
    with open(f"{d}/range.bin", "wb") as f:
        f.write(peers.RANGE_FRAME)
    proto = os.path.join(peers.ROOT, "examples/etcd/protos/rpc.proto")
    # protocol -> (peer's name, the peer, bakeoff)
    cells = {
        "HTTP/1.1": ("wrk", lambda c: peers.tool_wrk(h1, c), lambda c: peers.tool_bakeoff(h1, c)),
        "h2c": ("h2load", lambda c: peers.tool_h2load(h2, c), lambda c: peers.tool_bakeoff(h2, c, h2=True)),
    }
    if etcd_url:
        grpc = ["--grpc", etcd_url, "--proto", proto, "--call", "etcdserverpb.KV/Range", "-d", '{"key":"YmVuY2g="}']
        frame = ["-d", f"{d}/range.bin", "-H", "content-type: application/grpc", "-H", "te: trailers"]
        cells["gRPC unary"] = ("h2load",
                               lambda c: peers.tool_h2load(f"{etcd_url}/etcdserverpb.KV/Range", c, extra=frame),
                               lambda c: peers.tool_bakeoff(None, c, extra=grpc))
    rows, raw, variants = [], [], []
    try:
        for name in [p for p in ONLY if p in cells]:
            peer_name, peer, ours = cells[name]
            for c in CONNS:
                n, _, cpu = ours(c)  # the uncounted first round: warms up, sets the knob
                base = cpu * 1e6 / max(n, 1)
                ns = int(base * 1000 * KNOB_PCT / 100)
                peer(c)
                gens = {"peer": peer, "bakeoff": ours, "slowed": with_knob(ours, ns)}
                if VS_H2 and name != "HTTP/1.1":
                    gens["h2 crate"] = with_env(ours, "BAKEOFF_HTTP2_CLIENT", "h2")
                if VS_EPOLL and name == "HTTP/1.1":
                    gens["epoll"] = with_env(ours, "BAKEOFF_LOAD_IO", "epoll")
                if VS_C and name == "HTTP/1.1" and c == 1:
                    gens["blocking C"] = blocking_c(d, p1)
                if VS_BIN:
                    gens["other build"] = with_bin(ours, VS_BIN)
                per = {g: [] for g in gens}
                for r in range(ROUNDS):
                    order = list(gens)
                    rng.shuffle(order)
                    for g in order:
                        n, _, cpu = gens[g](c)
                        per[g].append(cpu * 1e6 / max(n, 1))
                    print(f"  {name} c={c} round {r + 1}: " + ", ".join(
                        f"{g} {per[g][-1]:.2f}" for g in gens) + " µs CPU/request", file=sys.stderr)
                raw.append({"protocol": name, "connections": c, "knob_ns": ns, **per})
                vs_peer = [math.log(a / b) for a, b in zip(per["bakeoff"], per["peer"])]
                knob = [math.log(a / b) for a, b in zip(per["slowed"], per["bakeoff"])]
                for other in ("h2 crate", "epoll", "other build", "blocking C"):
                    if other in per:
                        vs = [math.log(a / b) for a, b in zip(per["bakeoff"], per[other])]
                        to_peer = [math.log(a / b) for a, b in zip(per[other], per["peer"])]
                        variants.append((name, c, other, statistics.median(per[other]), interval(vs, rng),
                                         peer_name, interval(to_peer, rng)))
                rows.append((name, c, peer_name, statistics.median(per["bakeoff"]),
                             statistics.median(per["peer"]), interval(vs_peer, rng),
                             statistics.stdev(vs_peer), ns, base, interval(knob, rng)))
    finally:
        for p in (nginx, etcd):
            if p:
                p.terminate()
                p.wait()
        shutil.rmtree(d, ignore_errors=True)
        if os.environ.get("RAW"):  # every slice's figure, for another look at the rounds
            with open(os.environ["RAW"], "w") as f:
                json.dump(raw, f)

    print(f"| protocol | connections | bakeoff µs CPU/request | peer | bakeoff ÷ peer (95 % interval, "
          f"{ROUNDS} rounds of {SLICE} s) | one round's spread | the {KNOB_PCT:g} % knob: slowed ÷ bakeoff | found |")
    print("|---|---|---|---|---|---|---|---|")
    for name, c, peer_name, ours, theirs, (m, lo, hi), sd, ns, base, (km, klo, khi) in rows:
        found = "yes" if klo > 1 else "no"
        print(f"| {name} | {c} | {ours:.2f} | {peer_name} {theirs:.2f} | **{m:.3f}×** ({lo:.3f}–{hi:.3f}) | "
              f"±{sd * 100:.1f} % | {km:.3f}× ({klo:.3f}–{khi:.3f}), {ns} ns of {base:.2f} µs | {found} |")
    if variants:
        print()
        print("| protocol | connections | bakeoff against | its µs CPU/request | bakeoff ÷ it (95 % interval) | it ÷ the peer |")
        print("|---|---|---|---|---|---|")
        for name, c, other, theirs, (m, lo, hi), peer_name, (pm, plo, phi) in variants:
            print(f"| {name} | {c} | {other} | {theirs:.2f} | **{m:.3f}×** ({lo:.3f}–{hi:.3f}) | "
                  f"{pm:.3f}× {peer_name}'s ({plo:.3f}–{phi:.3f}) |")


if __name__ == "__main__":
    main()
