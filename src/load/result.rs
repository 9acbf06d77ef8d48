//! The result of one load run: the machine-readable contract behind `bakeoff load --json` and
//! every scenario point of a bake-off. Histograms are kept whole (HdrHistogram V2, base64), so
//! any percentile can be recomputed and runs can be merged later.

use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer, V2Serializer};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Bumped whenever a field changes meaning or disappears.
pub const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LoadResult {
    pub schema_version: u32,
    /// What was driven, e.g. `HTTP/1.1 GET http://127.0.0.1:8080/`.
    pub target: String,
    /// `closed` or `open`.
    pub pacing: String,
    /// Total rate in requests/s for an open loop.
    pub rate: Option<f64>,
    pub clients: usize,
    /// Requested count, when the run was bounded by one.
    pub stop_requests: Option<u64>,
    /// Requested duration in seconds, when the run was bounded by one.
    pub stop_duration_s: Option<f64>,
    pub warmup_s: f64,
    /// Requests sent during warm-up, excluded from everything below.
    pub warmup_requests: u64,
    /// True when the run was stopped early (Ctrl-C / SIGTERM, or its caller stopped it, e.g.
    /// because the server died).
    pub interrupted: bool,
    /// Seconds from the start of measuring to the last answer.
    pub duration_s: f64,
    /// Measured calls, whatever their outcome.
    pub requests: u64,
    pub successes: u64,
    pub failures: u64,
    pub requests_per_s: f64,
    /// Messages received (one per answer; one per message for gRPC streams).
    pub items: u64,
    pub items_per_s: f64,
    /// Response body bytes received.
    pub bytes: u64,
    pub bytes_per_s: f64,
    /// Latency of every answered call, in microseconds. In an open loop it is measured from
    /// when the request was due (corrected for coordinated omission).
    pub latency_us: Latency,
    /// Open loop only: time from the actual send to the answer (not corrected).
    pub service_time_us: Option<Latency>,
    pub outcomes: Vec<Outcome>,
    /// Open loop with a duration: requests due in the measured window that were never sent,
    /// because no client was free before it closed (the generator could not keep up).
    #[serde(default)]
    pub dropped: u64,
    /// Calls still in flight when a duration ended, or the load was stopped (`interrupted`),
    /// that did not finish within the grace (one second): left out of `requests`.
    #[serde(default)]
    pub unfinished: u64,
    /// Connections opened while measuring (the server closed one, or a call failed on it).
    #[serde(default)]
    pub reconnects: u64,
    /// What the TLS handshake negotiated (`TLSv1.3 TLS13_AES_128_GCM_SHA256 (ALPN h2)`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<String>,
    /// One entry per second of measuring.
    pub timeline: Vec<Second>,
    pub generator: Generator,
}

impl LoadResult {
    /// Whether most calls failed: then its latency and throughput are of failures (often
    /// fast), not of answers, and no comparison should use them.
    pub fn mostly_failed(&self) -> bool {
        self.requests > 0 && self.failures * 2 > self.requests
    }

    /// Several runs against the same target as one: counts summed, histograms added exactly
    /// (percentiles are never averaged), timelines laid end to end, rates over the summed
    /// measured time. `None` for no parts, or a stored histogram that does not decode.
    pub fn merge(parts: &[LoadResult]) -> Option<LoadResult> {
        let mut out = parts.first()?.clone();
        let hist = |l: &Latency| l.histogram().ok();
        // A decoded histogram tracks only up to its own largest value; let it grow.
        let grow = |mut h: Histogram<u64>| {
            h.auto(true);
            h
        };
        let mut latency = grow(hist(&out.latency_us)?);
        let mut service = out.service_time_us.as_ref().and_then(hist).map(grow);
        for p in &parts[1..] {
            latency.add(hist(&p.latency_us)?).ok()?;
            if let (Some(s), Some(h)) = (&mut service, p.service_time_us.as_ref().and_then(hist)) {
                s.add(h).ok()?;
            }
            let offset = out.timeline.len() as u64;
            out.timeline.extend(p.timeline.iter().map(|x| Second {
                second: x.second + offset,
                ..x.clone()
            }));
            for o in &p.outcomes {
                match out.outcomes.iter_mut().find(|x| {
                    (&x.kind, x.code, &x.label, x.success) == (&o.kind, o.code, &o.label, o.success)
                }) {
                    Some(x) => x.count += o.count,
                    None => out.outcomes.push(o.clone()),
                }
            }
            out.warmup_s += p.warmup_s;
            out.warmup_requests += p.warmup_requests;
            out.interrupted |= p.interrupted;
            out.duration_s += p.duration_s;
            out.requests += p.requests;
            out.successes += p.successes;
            out.failures += p.failures;
            out.items += p.items;
            out.bytes += p.bytes;
            out.dropped += p.dropped;
            out.unfinished += p.unfinished;
            out.reconnects += p.reconnects;
            out.tls = out.tls.take().or_else(|| p.tls.clone());
            let g = &mut out.generator;
            let busy = g.utilization * (g.cpu_user_s + g.cpu_system_s).max(1e-9);
            g.cpu_user_s += p.generator.cpu_user_s;
            g.cpu_system_s += p.generator.cpu_system_s;
            g.cpu_wait_s = g.cpu_wait_s.zip(p.generator.cpu_wait_s).map(|(a, b)| a + b);
            g.cpu_stolen_s = g
                .cpu_stolen_s
                .zip(p.generator.cpu_stolen_s)
                .map(|(a, b)| a + b);
            g.window_cpu_s = g
                .window_cpu_s
                .zip(p.generator.window_cpu_s)
                .map(|(a, b)| a + b);
            g.window_cpu_wait_s = g
                .window_cpu_wait_s
                .zip(p.generator.window_cpu_wait_s)
                .map(|(a, b)| a + b);
            // Utilization weighted by CPU time, the share each part's load threads worked.
            let theirs = p.generator.utilization
                * (p.generator.cpu_user_s + p.generator.cpu_system_s).max(1e-9);
            g.utilization = (busy + theirs) / (g.cpu_user_s + g.cpu_system_s).max(2e-9);
        }
        let calls = (out.requests + out.warmup_requests).max(1) as f64;
        out.generator.cpu_us_per_request =
            (out.generator.cpu_user_s + out.generator.cpu_system_s) * 1e6 / calls;
        out.generator.window_cpu_us_per_request = out
            .generator
            .window_cpu_s
            .filter(|_| out.requests > 0)
            .map(|c| c * 1e6 / out.requests as f64);
        let per_s = |n: u64| {
            if out.duration_s > 0.0 {
                n as f64 / out.duration_s
            } else {
                0.0
            }
        };
        out.requests_per_s = per_s(out.requests);
        out.items_per_s = per_s(out.items);
        out.bytes_per_s = per_s(out.bytes);
        out.stop_requests = out.stop_requests.map(|_| out.requests);
        out.stop_duration_s = out.stop_duration_s.map(|_| out.duration_s);
        out.latency_us = Latency::from_histogram(&latency);
        out.service_time_us = service.as_ref().map(Latency::from_histogram);
        out.generator.io = super::name_ways(
            parts
                .iter()
                .filter_map(|p| p.generator.io.as_deref())
                .flat_map(|io| io.split(" and ")),
        );
        Some(out)
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Latency {
    pub count: u64,
    pub min: u64,
    pub mean: f64,
    pub stdev: f64,
    pub p50: u64,
    pub p90: u64,
    pub p99: u64,
    pub p99_9: u64,
    pub max: u64,
    /// The whole histogram: HdrHistogram V2 encoding, base64.
    pub histogram: String,
}

impl Latency {
    pub fn from_histogram(h: &Histogram<u64>) -> Latency {
        let mut raw = Vec::new();
        V2Serializer::new()
            .serialize(h, &mut raw)
            .expect("serializing a histogram into memory cannot fail");
        let q = |p: f64| {
            if h.is_empty() {
                0
            } else {
                h.value_at_quantile(p)
            }
        };
        Latency {
            count: h.len(),
            min: if h.is_empty() { 0 } else { h.min() },
            mean: h.mean(),
            stdev: h.stdev(),
            p50: q(0.50),
            p90: q(0.90),
            p99: q(0.99),
            p99_9: q(0.999),
            max: h.max(),
            histogram: base64::engine::general_purpose::STANDARD.encode(raw),
        }
    }

    /// Decodes the stored histogram. A results file may come from another machine (a
    /// shard), so its header is checked before the decoder trusts it with an allocation
    /// ([`check_header`]).
    pub fn histogram(&self) -> Result<Histogram<u64>, String> {
        let raw = base64::engine::general_purpose::STANDARD
            .decode(&self.histogram)
            .map_err(|e| format!("histogram is not base64: {e}"))?;
        super::stored::check_header(&raw)?;
        Deserializer::new()
            .deserialize(&mut raw.as_slice())
            .map_err(|e| format!("histogram is not HdrHistogram V2: {e:?}"))
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Outcome {
    /// `http`, `grpc`, `jsonrpc_result`, `jsonrpc_error`, `connect_error`, `timeout`,
    /// `io_error` or `protocol_error`.
    pub kind: String,
    /// HTTP status, gRPC code number or JSON-RPC error code.
    pub code: Option<i64>,
    /// Human name, e.g. `HTTP 404` or `gRPC NOT_FOUND`.
    pub label: String,
    pub success: bool,
    pub count: u64,
    /// The first detail seen for this outcome (an error message, a gRPC status message).
    pub example: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Second {
    pub second: u64,
    pub requests: u64,
    pub failures: u64,
    pub items: u64,
    pub bytes: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Generator {
    pub threads: usize,
    /// CPUs the load threads were pinned to; empty when not pinned.
    pub cpus: Vec<usize>,
    /// CPU time the load threads used from the start signal to their last call (warm-up
    /// included).
    pub cpu_user_s: f64,
    pub cpu_system_s: f64,
    /// Time the load threads were ready to run but waited for a CPU (another process or
    /// thread had it); `None` where the kernel does not report it (no schedstat).
    #[serde(default)]
    pub cpu_wait_s: Option<f64>,
    /// Time the hypervisor took from the load threads' CPUs (steal), for threads pinned to
    /// one; `None` when they are not pinned.
    #[serde(default)]
    pub cpu_stolen_s: Option<f64>,
    /// CPU time per call, warm-up calls included.
    pub cpu_us_per_request: f64,
    /// Share of the load threads' time they were running or waiting for a CPU, 0..1 (warm-up
    /// included; time the hypervisor took from their CPUs left out): near 1, they never
    /// waited for an answer, so the client was the bottleneck.
    pub utilization: f64,
    /// The load threads' CPU time and run-queue wait over exactly the measured window (from
    /// their schedstat at the window's edges, as the server's cost is read), and the CPU per
    /// measured call; `None` where the kernel does not report schedstat, or for results
    /// written before these were recorded.
    #[serde(default)]
    pub window_cpu_s: Option<f64>,
    #[serde(default)]
    pub window_cpu_wait_s: Option<f64>,
    #[serde(default)]
    pub window_cpu_us_per_request: Option<f64>,
    /// How the load threads waited for the network: `io_uring` (the engine's own ring, for
    /// fixed HTTP/1.1 calls in a closed loop), `blocking` (the same calls on a thread of one
    /// connection) or `epoll` (the runtime), or several joined by " and " when threads, or
    /// the parts of a merged result, differed; `None` in results written before this was
    /// recorded.
    #[serde(default)]
    pub io: Option<String>,
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn a_histogram_header_that_asks_too_much_is_refused_before_decoding() {
        let mut h = Histogram::<u64>::new(3).unwrap();
        h.record(120).unwrap();
        let good = Latency::from_histogram(&h);
        assert!(good.histogram().is_ok());
        let raw = base64::engine::general_purpose::STANDARD
            .decode(&good.histogram)
            .unwrap();
        let with = |at: usize, bytes: &[u8]| {
            let mut r = raw.clone();
            r[at..at + bytes.len()].copy_from_slice(bytes);
            Latency {
                histogram: base64::engine::general_purpose::STANDARD.encode(r),
                ..good.clone()
            }
            .histogram()
            .unwrap_err()
        };
        // A payload of 2 GB (a shard from another machine once made `report` allocate it).
        let e = with(4, &0x8000_0000u32.to_be_bytes());
        assert!(e.contains("payload is 2147483648 bytes"), "{e}");
        // Compressed: would inflate to any size.
        assert!(with(0, &0x1c84_9314u32.to_be_bytes()).contains("cookie"));
        // Five significant digits: a counts array 100 times larger.
        assert!(with(12, &5u32.to_be_bytes()).contains("5 significant digits"));
        let short = Latency {
            histogram: base64::engine::general_purpose::STANDARD.encode(&raw[..20]),
            ..good.clone()
        };
        assert!(short
            .histogram()
            .unwrap_err()
            .contains("shorter than its header"));
    }

    #[test]
    fn histograms_round_trip_through_json() {
        let mut h = Histogram::<u64>::new(3).unwrap();
        for v in [10u64, 20, 30, 1_000, 250_000] {
            h.record(v).unwrap();
        }
        let l = Latency::from_histogram(&h);
        assert_eq!((l.count, l.min, l.p50), (5, 10, 30));
        assert!(l.max >= 250_000 && l.max < 250_300);
        let json = serde_json::to_string(&l).unwrap();
        let back: Latency = serde_json::from_str(&json).unwrap();
        let h2 = back.histogram().unwrap();
        assert_eq!(h2, h);
        assert!(back.histogram.starts_with("HISTF") || back.histogram.starts_with("HIST"));
    }

    /// A result of `requests` calls over `secs` with these latencies, for tests.
    pub(crate) fn part(values: &[u64], requests: u64, secs: f64) -> LoadResult {
        let mut h = Histogram::<u64>::new(3).unwrap();
        for v in values {
            h.record(*v).unwrap();
        }
        LoadResult {
            schema_version: SCHEMA_VERSION,
            target: "t".into(),
            pacing: "closed".into(),
            rate: None,
            clients: 1,
            stop_requests: None,
            stop_duration_s: Some(secs),
            warmup_s: 0.0,
            warmup_requests: 0,
            interrupted: false,
            duration_s: secs,
            requests,
            successes: requests,
            failures: 0,
            requests_per_s: requests as f64 / secs,
            items: requests,
            items_per_s: requests as f64 / secs,
            bytes: 0,
            bytes_per_s: 0.0,
            latency_us: Latency::from_histogram(&h),
            service_time_us: None,
            outcomes: vec![Outcome {
                kind: "http".into(),
                code: Some(200),
                label: "HTTP 200".into(),
                success: true,
                count: requests,
                example: None,
            }],
            dropped: 0,
            unfinished: 0,
            reconnects: 0,
            tls: None,
            timeline: vec![Second {
                second: 0,
                requests,
                ..Second::default()
            }],
            generator: Generator {
                threads: 1,
                cpus: vec![],
                cpu_user_s: 0.5,
                cpu_system_s: 0.0,
                cpu_wait_s: None,
                cpu_stolen_s: None,
                cpu_us_per_request: 0.0,
                utilization: 0.5,
                window_cpu_s: Some(0.25),
                window_cpu_wait_s: Some(0.0),
                window_cpu_us_per_request: None,
                io: Some("epoll".into()),
            },
        }
    }

    #[test]
    fn merged_runs_have_exact_percentiles_and_summed_counts() {
        let a: Vec<u64> = (1..=100).collect();
        // The second part reaches far past the first's largest value.
        let b: Vec<u64> = (101..=299).chain([40_000_000]).collect();
        let (mut pa, mut pb) = (part(&a, 100, 1.0), part(&b, 200, 1.0));
        (pa.reconnects, pb.reconnects, pb.dropped, pa.unfinished) = (1, 2, 5, 3);
        let m = LoadResult::merge(&[pa, pb]).unwrap();
        assert_eq!((m.reconnects, m.dropped, m.unfinished), (3, 5, 3));
        let mut all = Histogram::<u64>::new(3).unwrap();
        for v in a.iter().chain(&b) {
            all.record(*v).unwrap();
        }
        // The same percentiles as one histogram fed every sample.
        let one = Latency::from_histogram(&all);
        let figures = |l: &Latency| (l.count, l.min, l.p50, l.p90, l.p99, l.p99_9, l.max);
        assert_eq!(figures(&m.latency_us), figures(&one));
        assert_eq!(m.latency_us.mean, one.mean);
        assert_eq!(
            (m.requests, m.duration_s, m.requests_per_s),
            (300, 2.0, 150.0)
        );
        assert_eq!(m.outcomes.len(), 1);
        assert_eq!(m.outcomes[0].count, 300);
        assert_eq!(
            m.timeline.iter().map(|s| s.second).collect::<Vec<_>>(),
            [0, 1]
        );
        assert!((m.generator.utilization - 0.5).abs() < 1e-9);
        assert_eq!(m.generator.window_cpu_s, Some(0.5));
        assert!((m.generator.window_cpu_us_per_request.unwrap() - 0.5e6 / 300.0).abs() < 1e-6);
        assert!(LoadResult::merge(&[]).is_none());
    }

    #[test]
    fn a_merged_result_names_every_way_its_parts_waited() {
        let with = |io: Option<&str>| {
            let mut p = part(&[100], 1, 1.0);
            p.generator.io = io.map(str::to_string);
            p
        };
        let io = |parts: &[LoadResult]| LoadResult::merge(parts).unwrap().generator.io;
        // A ramp whose first step had one connection (blocking) and later ones many (ring).
        let ramp = [
            with(Some("blocking")),
            with(Some("io_uring")),
            with(Some("io_uring and epoll")),
        ];
        assert_eq!(
            io(&ramp).as_deref(),
            Some("io_uring and blocking and epoll")
        );
        assert_eq!(io(&ramp[1..2]).as_deref(), Some("io_uring"));
        // Parts written before the way was recorded say nothing of it, and add nothing.
        assert_eq!(io(&[with(None), with(None)]), None);
        assert_eq!(
            io(&[with(None), with(Some("blocking"))]).as_deref(),
            Some("blocking")
        );
        // A name this build does not know is kept, after the ones it does.
        assert_eq!(
            io(&[with(Some("someday")), with(Some("epoll"))]).as_deref(),
            Some("epoll and someday")
        );
    }

    #[test]
    fn an_empty_histogram_has_zero_percentiles() {
        let l = Latency::from_histogram(&Histogram::<u64>::new(3).unwrap());
        assert_eq!((l.count, l.p99, l.max), (0, 0, 0));
    }
}
