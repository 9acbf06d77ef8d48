//! The compact terminal summary of one load run.

use std::fmt::Write as _;

use super::{fmt_bytes, fmt_rate, fmt_us};
use crate::load::result::{Latency, LoadResult};

pub fn render(r: &LoadResult) -> String {
    let mut s = String::new();
    let mode = match r.rate {
        Some(rate) => format!("open loop at {} req/s", fmt_rate(rate)),
        None => "closed loop".to_string(),
    };
    let _ = writeln!(s, "Target     {}", r.target);
    let _ = writeln!(
        s,
        "Load       {} clients, {mode}, {} thread{}{}",
        r.clients,
        r.generator.threads,
        if r.generator.threads == 1 { "" } else { "s" },
        if r.warmup_requests > 0 {
            format!(", {} warm-up requests excluded", r.warmup_requests)
        } else {
            String::new()
        }
    );
    let _ = writeln!(
        s,
        "Requests   {} in {:.2} s: {} req/s, {}/s{}",
        r.requests,
        r.duration_s,
        fmt_rate(r.requests_per_s),
        fmt_bytes(r.bytes_per_s),
        if r.interrupted { " (interrupted)" } else { "" }
    );
    // Items are messages of a stream from the server: a unary call's one answer is no item.
    let streams = r.target.ends_with("(server-streaming)") || r.target.ends_with("(bidi)");
    if streams {
        let _ = writeln!(
            s,
            "Items      {} streamed messages: {} items/s",
            r.items,
            fmt_rate(r.items_per_s)
        );
    }
    let label = if r.service_time_us.is_some() {
        "Latency*  "
    } else {
        "Latency   "
    };
    let _ = writeln!(s, "{label} {}", latency_line(&r.latency_us));
    if let Some(svc) = &r.service_time_us {
        let _ = writeln!(s, "Service    {}", latency_line(svc));
        let _ = writeln!(
            s,
            "           * from when each request was due (corrected for coordinated omission); Service: from when it was sent"
        );
    }
    outcomes(r, &mut s);
    if let Some(t) = &r.tls {
        let _ = writeln!(s, "TLS        {t}");
    }
    let g = &r.generator;
    let waited = g
        .cpu_wait_s
        .map(|w| format!(" + {w:.2} s waiting for a CPU"))
        .unwrap_or_default();
    let _ = writeln!(
        s,
        "Generator  {:.2} s CPU{waited} ({:.1} µs/request); busy {:.0}% of its threads' time",
        g.cpu_user_s + g.cpu_system_s,
        g.cpu_us_per_request,
        g.utilization * 100.0
    );
    s
}

/// What the calls ended as (with an example of each failure), and what else happened to
/// them: requests never sent, calls cut off by the duration, reconnects.
fn outcomes(r: &LoadResult, s: &mut String) {
    let outcomes: Vec<String> = r
        .outcomes
        .iter()
        .map(|o| format!("{} × {}", o.label, o.count))
        .collect();
    let outcomes = if outcomes.is_empty() {
        "none: no measured call ended".to_string()
    } else {
        outcomes.join(", ")
    };
    let _ = writeln!(s, "Outcomes   {outcomes}");
    for o in r.outcomes.iter().filter(|o| !o.success) {
        if let Some(ex) = &o.example {
            let _ = writeln!(s, "           {}: {}", o.label, ex);
        }
    }
    let mut also = Vec::new();
    if r.dropped > 0 {
        also.push(format!(
            "{} requests due but never sent (no client was free: the generator or the server could not keep up)",
            r.dropped
        ));
    }
    if r.unfinished > 0 {
        also.push(format!(
            "{} calls still in flight when the {}, given up after the grace",
            r.unfinished,
            if r.interrupted {
                "load was stopped"
            } else {
                "duration ended"
            }
        ));
    }
    if r.reconnects > 0 {
        also.push(format!("{} reconnects while measuring", r.reconnects));
    }
    for a in also {
        let _ = writeln!(s, "           {a}");
    }
}

fn latency_line(l: &Latency) -> String {
    if l.count == 0 {
        return "no answers".to_string();
    }
    format!(
        "p50 {}  p90 {}  p99 {}  p99.9 {}  max {}  mean {}",
        fmt_us(l.p50 as f64),
        fmt_us(l.p90 as f64),
        fmt_us(l.p99 as f64),
        fmt_us(l.p99_9 as f64),
        fmt_us(l.max as f64),
        fmt_us(l.mean)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_are_shown_for_streams_from_the_server_only() {
        let mut r = crate::load::result::tests::part(&[100, 200], 10, 1.0);
        r.target = "gRPC http://127.0.0.1:1 /a.B/C (unary)".into();
        r.items = 0;
        assert!(!render(&r).contains("Items"), "{}", render(&r));
        r.target = "gRPC http://127.0.0.1:1 /a.B/C (server-streaming)".into();
        r.items = 1200;
        assert!(render(&r).contains("Items      1200 streamed messages"));
        r.target = "HTTP/1.1 GET http://127.0.0.1:1/".into();
        r.items = 3;
        assert!(!render(&r).contains("Items"));
    }

    #[test]
    fn calls_given_up_say_whether_a_duration_or_a_stop_ended_them() {
        let mut r = crate::load::result::tests::part(&[100], 1, 1.0);
        r.unfinished = 3;
        let line = "3 calls still in flight when the duration ended, given up after the grace";
        assert!(render(&r).contains(line), "{}", render(&r));
        r.interrupted = true;
        let line = "3 calls still in flight when the load was stopped, given up after the grace";
        assert!(render(&r).contains(line), "{}", render(&r));
        // Every call given up: no outcome line left blank.
        r.outcomes.clear();
        assert!(
            render(&r).contains("Outcomes   none: no measured call ended\n"),
            "{}",
            render(&r)
        );
    }
}
