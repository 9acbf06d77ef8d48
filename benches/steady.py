#!/usr/bin/env python3
"""The steady generator benchmark: bakeoff's load engine against its peer, interleaved.

The paired idea applied to load generators. For each protocol × connection count, every
round runs the peer (wrk for HTTP/1.1, h2load for h2c and gRPC unary; for the TLS rows,
named in BENCH_ONLY only, h2load --h1 for "HTTP/1.1 TLS" and h2load for "h2 TLS") and `bakeoff load` for
one short slice each, in a fresh random order, against the same pinned server
(benches/peers.py starts them: nginx and etcd 3.5.1 on CPU 1, the generator on CPU 0, one
thread). A slice's figure is the generator's CPU time per request (user + system of the
process, from wait4). What drifts over minutes — a neighbour, the host's steal, the server
warming — drifts for both within a round, so each round's ratio cancels it; the table gives
the geometric mean of the rounds' ratios with a 95 % bootstrap interval.

What drifts within seconds does not cancel between two slices one after the other: on this
shared VM one round's ratio spreads ±8–12 %, and a 3 % change of the engine took more than a
hundred rounds to find that way. So two builds of bakeoff — the engine slowed on purpose by a
known amount (the test-only knob BAKEOFF_LOAD_BURN_NS: that many nanoseconds of CPU work after
each response), or another build (VS_BIN) — are measured *side by side*: both at the same
moment, on the same CPU, each with its own connections to the same server, each its own CPU
time. The host's second is the same second for both, and the ratio of two identical builds
spreads some ±0.4–0.9 % a round (HTTP/1.1 and h2c; ±1.5–2.2 % gRPC). Side by side, each
generator shares its CPU with the other, so its CPU per request is not what it is alone (about
half at one connection, where the CPU no longer idles between answers; 2–32 % more at 16 and
64) and is never set against the peer's; a side-by-side ratio says how two builds of the engine differ
under the same load, the alone one how bakeoff stands against its peer.

The knob is set from a first side-by-side round that is not counted (it also warms the
server): KNOB_PCT (default 3) per cent of bakeoff's CPU per request there. Its row says whether
the interval of "slowed / bakeoff" clears 1.

    ROUNDS=40 SLICE=1 BENCH_CONNS=1,16,64 BENCH_ONLY="HTTP/1.1,h2c,gRPC unary" KNOB_PCT=3 \
        python3 benches/steady.py
Needs target/release/bakeoff and the peers (benches/peers.sh installs them).
"""
import json, math, os, random, statistics, sys, tempfile, threading

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
# VS_BIN=PATH: in every row, another build of bakeoff (say the commit before a change to the
# engine, copied aside) side by side with this one, and a second table: this build ÷ that one.
VS_BIN = os.environ.get("VS_BIN")
# VS_ENV=KEY=VALUE: in every row, this build with KEY=VALUE in its environment side by side
# with itself without it, and a second table: this build ÷ it so. What one switch of the
# engine is worth, in one build: VS_ENV=BAKEOFF_RING_FILES=0 (the ring's operations naming
# descriptors rather than places in its table of files).
VS_ENV = os.environ.get("VS_ENV")
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
        peers.LOCAL.env = {key: value}
        try:
            return fn(c)
        finally:
            peers.LOCAL.env = {}
    return run


def with_bin(fn, path):
    def run(c):
        peers.LOCAL.bakeoff = path
        try:
            return fn(c)
        finally:
            del peers.LOCAL.bakeoff
    return run


def alone(fn):
    """A generator run by itself, its result as a slice of one."""
    return lambda c: (fn(c),)


def side_by_side(fa, fb):
    """Runs two generators at the same moment, each from its own thread (both pinned to the
    generator CPU, each with its own connections to the same server); returns both results.
    What the host does to one in that second it does to the other."""
    out = {}
    go = threading.Barrier(2)

    def one(key, fn, c):
        go.wait()
        out[key] = fn(c)

    def run(c):
        # Which of the two starts from this thread is drawn each time: neither gets a place.
        (ka, fx), (kb, fy) = random.sample([("a", fa), ("b", fb)], 2)
        t = threading.Thread(target=one, args=(kb, fy, c))
        t.start()
        one(ka, fx, c)
        t.join()
        if len(out) < 2:
            raise RuntimeError("a generator of a side-by-side slice failed")
        return out.pop("a"), out.pop("b")
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
    nginx, (p1, p2, p3, p4), ca = peers.start_nginx(d)
    etcd, etcd_url = peers.start_etcd(d) if "gRPC unary" in ONLY else (None, None)
    h1, h2 = f"http://127.0.0.1:{p1}/index.html", f"http://127.0.0.1:{p2}/index.html"
    t1, t2 = f"https://127.0.0.1:{p3}/index.html", f"https://127.0.0.1:{p4}/index.html"
    with open(f"{d}/range.bin", "wb") as f:
        f.write(peers.RANGE_FRAME)
    proto = os.path.join(peers.ROOT, "examples/etcd/protos/rpc.proto")
    # protocol -> (peer's name, the peer, bakeoff)
    cells = {
        "HTTP/1.1": ("wrk", lambda c: peers.tool_wrk(h1, c), lambda c: peers.tool_bakeoff(h1, c)),
        "h2c": ("h2load", lambda c: peers.tool_h2load(h2, c), lambda c: peers.tool_bakeoff(h2, c, h2=True)),
        "HTTP/1.1 TLS": ("h2load --h1", lambda c: peers.tool_h2load(t1, c, h1=True),
                         lambda c: peers.tool_bakeoff(t1, c, extra=["--cacert", ca])),
        "h2 TLS": ("h2load", lambda c: peers.tool_h2load(t2, c),
                   lambda c: peers.tool_bakeoff(t2, c, h2=True, extra=["--cacert", ca])),
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
                # The uncounted first round: warms up, and sizes the knob from bakeoff's CPU a
                # request beside a twin of itself, as the knob is measured.
                (n, _, cpu), _ = side_by_side(ours, ours)(c)
                base = cpu * 1e6 / max(n, 1)
                ns = int(base * 1000 * KNOB_PCT / 100)
                peer(c)
                # A slice runs one generator alone, or two side by side: the knob and another
                # build are each measured beside bakeoff at the same moment, what they are there
                # to find being a few per cent between two builds of the same engine.
                # Every slice gives a tuple of results, one a generator it ran.
                gens = {"peer": (alone(peer), ("peer",)), "bakeoff": (alone(ours), ("bakeoff",)),
                        "knob": (side_by_side(ours, with_knob(ours, ns)), ("twin", "slowed"))}
                if VS_H2 and name != "HTTP/1.1":
                    gens["h2 crate"] = (alone(with_env(ours, "BAKEOFF_HTTP2_CLIENT", "h2")), ("h2 crate",))
                if VS_EPOLL and name == "HTTP/1.1":
                    gens["epoll"] = (alone(with_env(ours, "BAKEOFF_LOAD_IO", "epoll")), ("epoll",))
                if VS_C and name == "HTTP/1.1" and c == 1:
                    gens["blocking C"] = (alone(blocking_c(d, p1)), ("blocking C",))
                if VS_BIN:
                    gens["other build"] = (side_by_side(ours, with_bin(ours, VS_BIN)), ("beside it", "other build"))
                if VS_ENV:
                    key, value = VS_ENV.split("=", 1)
                    gens["env"] = (side_by_side(ours, with_env(ours, key, value)), ("beside env", "env"))
                per = {f: [] for _, figures in gens.values() for f in figures}
                for r in range(ROUNDS):
                    order = list(gens)
                    rng.shuffle(order)
                    for g in order:
                        fn, figures = gens[g]
                        for f, (n, _, cpu) in zip(figures, fn(c)):
                            per[f].append(cpu * 1e6 / max(n, 1))
                    print(f"  {name} c={c} round {r + 1}: " + ", ".join(
                        f"{f} {v[-1]:.2f}" for f, v in per.items()) + " µs CPU/request", file=sys.stderr)
                raw.append({"protocol": name, "connections": c, "knob_ns": ns, **per})
                vs_peer = [math.log(a / b) for a, b in zip(per["bakeoff"], per["peer"])]
                knob = [math.log(a / b) for a, b in zip(per["slowed"], per["twin"])]
                # What sharing the CPU does to a generator's figure: bakeoff alone ÷ beside its twin.
                shared = [math.log(a / b) for a, b in zip(per["bakeoff"], per["twin"])]
                for other in ("h2 crate", "epoll", "blocking C"):
                    if other in per:
                        vs = [math.log(a / b) for a, b in zip(per["bakeoff"], per[other])]
                        to_peer = [math.log(a / b) for a, b in zip(per[other], per["peer"])]
                        variants.append((name, c, other, statistics.median(per[other]), interval(vs, rng),
                                         peer_name, interval(to_peer, rng)))
                if "other build" in per:
                    vs = [math.log(a / b) for a, b in zip(per["beside it"], per["other build"])]
                    variants.append((name, c, f"other build, side by side (±{statistics.stdev(vs) * 100:.1f} % a round)",
                                     statistics.median(per["other build"]), interval(vs, rng), peer_name, None))
                if "env" in per:
                    vs = [math.log(a / b) for a, b in zip(per["beside env"], per["env"])]
                    variants.append((name, c, f"itself with {VS_ENV}, side by side (±{statistics.stdev(vs) * 100:.1f} % a round)",
                                     statistics.median(per["env"]), interval(vs, rng), peer_name, None))
                rows.append((name, c, peer_name, statistics.median(per["bakeoff"]),
                             statistics.median(per["peer"]), interval(vs_peer, rng),
                             statistics.stdev(vs_peer), ns, base, interval(knob, rng), statistics.stdev(knob),
                             interval(shared, rng)))
    finally:
        peers.stop((nginx, etcd), d)
        if os.environ.get("RAW"):  # every slice's figure, for another look at the rounds
            with open(os.environ["RAW"], "w") as f:
                json.dump(raw, f)

    print(f"| protocol | connections | bakeoff µs CPU/request | peer | bakeoff ÷ peer (95 % interval, "
          f"{ROUNDS} rounds of {SLICE} s) | one round's spread | the {KNOB_PCT:g} % knob, side by side: "
          f"slowed ÷ bakeoff | found | bakeoff alone ÷ side by side |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, c, peer_name, ours, theirs, (m, lo, hi), sd, ns, base, (km, klo, khi), ksd, (sm, _, _) in rows:
        found = "yes" if klo > 1 else "no"
        print(f"| {name} | {c} | {ours:.2f} | {peer_name} {theirs:.2f} | **{m:.3f}×** ({lo:.3f}–{hi:.3f}) | "
              f"±{sd * 100:.1f} % | {km:.3f}× ({klo:.3f}–{khi:.3f}), ±{ksd * 100:.1f} % a round, {ns} ns of {base:.2f} µs | "
              f"{found} | {sm:.2f}× |")
    if variants:
        print()
        print("| protocol | connections | bakeoff against | its µs CPU/request | bakeoff ÷ it (95 % interval) | it ÷ the peer |")
        print("|---|---|---|---|---|---|")
        for name, c, other, theirs, (m, lo, hi), peer_name, to_peer in variants:
            # Side by side, a generator shares the CPU with another: its figure is not the one a
            # slice alone gives, so it is not set against the peer's.
            vs = "—" if to_peer is None else f"{to_peer[0]:.3f}× {peer_name}'s ({to_peer[1]:.3f}–{to_peer[2]:.3f})"
            print(f"| {name} | {c} | {other} | {theirs:.2f} | **{m:.3f}×** ({lo:.3f}–{hi:.3f}) | {vs} |")


if __name__ == "__main__":
    main()
