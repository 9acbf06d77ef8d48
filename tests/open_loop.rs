//! Open loop against a server that stalls once for a known time: latency measured from when
//! each request was due shows the stall; latency from the actual send (what a closed-loop
//! tool would report) hides it. This test is about the engine, so the server is in-process.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use bakeoff::load::{self, LoadConfig, Pacing, Stop};
use bakeoff::protocol::http1::{Http1, Http1Request};
use bakeoff::protocol::target::Endpoint;
use bakeoff::protocol::template::Template;

const STALL: Duration = Duration::from_millis(500);
const STALL_AT: usize = 20;

/// Answers HTTP/1.1 keep-alive GETs at once, except request number STALL_AT, which it holds
/// for STALL. Serves one connection, then exits.
fn stalling_server() -> (std::net::SocketAddr, std::thread::JoinHandle<usize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let handle = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        s.set_nodelay(true).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        let mut served = 0;
        loop {
            while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                buf.drain(..end + 4);
                served += 1;
                if served == STALL_AT {
                    std::thread::sleep(STALL);
                }
                s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                    .unwrap();
            }
            match s.read(&mut chunk) {
                Ok(0) | Err(_) => return served,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
    });
    (addr, handle)
}

#[test]
fn corrected_latency_shows_a_stall_that_service_time_hides() {
    let (addr, server) = stalling_server();
    let endpoint = Endpoint::parse(&format!("http://{addr}/")).unwrap();
    let request = Http1Request {
        method: "GET".into(),
        path: Template::parse("/").unwrap(),
        headers: vec![],
        body: None,
    };
    let proto = Arc::new(Http1::new(endpoint, request, 0, false));
    // 100 requests due at 100/s over one connection: about 50 fall due during the stall.
    let cfg = LoadConfig::new(
        Pacing::Open { rate: 100.0 },
        Stop::Count(100),
        1,
        1,
        Duration::ZERO,
        Duration::from_secs(5),
    )
    .unwrap();
    let r = load::run(proto, &cfg, &mut |_| load::Flow::Continue).unwrap();
    assert_eq!(r.requests, 100);
    assert_eq!(r.successes, 100);
    assert_eq!(server.join().unwrap(), 100);

    let corrected = r.latency_us.histogram().unwrap();
    let service = r.service_time_us.as_ref().unwrap().histogram().unwrap();
    let stall_us = STALL.as_micros() as u64;
    // Both see the one request the server held...
    assert!(corrected.max() >= stall_us && service.max() >= stall_us);
    // ...but only the corrected view shows everything that queued behind it.
    let queued = corrected.count_between(50_000, u64::MAX);
    assert!(
        queued >= 30,
        "only {queued} corrected latencies above 50 ms"
    );
    assert!(corrected.value_at_quantile(0.90) >= 200_000);
    assert!(service.count_between(50_000, u64::MAX) <= 2);
    assert!(service.value_at_quantile(0.90) < 50_000);
}

/// An open loop's measured window is its duration (issue 25, item 12): `-q 1 -z 3s` sends 3
/// requests over 3 s, so it achieved 1 request/s — not 1.5 because its last request fell due
/// at 2 s; `-q 0.5 -z 2s` sends one request in 2 s, not one in a millisecond (3421 req/s).
#[test]
fn an_open_loop_measures_its_whole_duration() {
    for (rate, secs, sent) in [(1.0, 3, 3), (0.5, 2, 1)] {
        let (addr, server) = stalling_server();
        let endpoint = Endpoint::parse(&format!("http://{addr}/")).unwrap();
        let request = Http1Request {
            method: "GET".into(),
            path: Template::parse("/").unwrap(),
            headers: vec![],
            body: None,
        };
        let proto = Arc::new(Http1::new(endpoint, request, 0, false));
        let d = Duration::from_secs(secs);
        let cfg = LoadConfig::new(
            Pacing::Open { rate },
            Stop::Duration(d),
            1,
            1,
            Duration::ZERO,
            Duration::from_secs(5),
        )
        .unwrap();
        let r = load::run(proto, &cfg, &mut |_| load::Flow::Continue).unwrap();
        assert_eq!(r.requests, sent, "-q {rate} -z {secs}s: {r:?}");
        assert!(
            r.duration_s >= d.as_secs_f64(),
            "-q {rate} -z {secs}s: {r:?}"
        );
        assert!(
            r.requests_per_s <= rate + 1e-9,
            "-q {rate} -z {secs}s: {r:?}"
        );
        drop(server);
    }
}
