//! Per-worker measurements: HDR histograms and counters only, so memory stays flat however
//! many requests a run sends. Workers record without sharing; the engine merges at the end.

use std::collections::BTreeMap;
use std::time::Instant;

use hdrhistogram::Histogram;

use super::result::{Outcome, Second};
use crate::protocol::{CallError, Class, Reply};

pub struct Recorder {
    pub latency: Histogram<u64>,
    pub service: Option<Histogram<u64>>,
    pub classes: BTreeMap<Class, (u64, Option<String>)>,
    pub requests: u64,
    pub successes: u64,
    pub items: u64,
    pub bytes: u64,
    pub timeline: Vec<Second>,
    pub warmup: u64,
    /// Connections opened while measuring: after the server closed one (HTTP/1.1
    /// `Connection: close`) or after a failed call.
    pub reconnects: u64,
    /// Calls given up at the end of a duration's grace, not recorded as requests.
    pub unfinished: u64,
    pub last_done: Option<Instant>,
    measure_start: Instant,
}

fn histogram() -> Histogram<u64> {
    // Microseconds with 3 significant digits; grows as needed, never drops a value.
    Histogram::new(3).expect("3 significant digits is valid")
}

fn micros(from: Instant, to: Instant) -> u64 {
    to.saturating_duration_since(from).as_micros() as u64
}

impl Recorder {
    pub fn new(measure_start: Instant, open_loop: bool) -> Recorder {
        Recorder {
            latency: histogram(),
            service: open_loop.then(histogram),
            classes: BTreeMap::new(),
            requests: 0,
            successes: 0,
            items: 0,
            bytes: 0,
            timeline: Vec::new(),
            warmup: 0,
            reconnects: 0,
            unfinished: 0,
            last_done: None,
            measure_start,
        }
    }

    /// Records one measured call. `from` is when its latency starts: the due time in an open
    /// loop when the client was late, else the send time.
    pub fn record(
        &mut self,
        from: Instant,
        sent: Instant,
        done: Instant,
        result: &Result<Reply, CallError>,
    ) {
        self.requests += 1;
        self.last_done = self.last_done.max(Some(done));
        let sec = done.saturating_duration_since(self.measure_start).as_secs() as usize;
        if self.timeline.len() <= sec {
            self.timeline.resize_with(sec + 1, Second::default);
        }
        let slot = &mut self.timeline[sec];
        slot.requests += 1;
        let (class, detail) = match result {
            Ok(reply) => {
                let _ = self.latency.record(micros(from, done));
                if let Some(s) = &mut self.service {
                    let _ = s.record(micros(sent, done));
                }
                self.items += reply.items;
                self.bytes += reply.bytes;
                slot.items += reply.items;
                slot.bytes += reply.bytes;
                (reply.class, reply.detail.as_deref())
            }
            Err(e) => (e.class(), None),
        };
        if class.is_success() {
            self.successes += 1;
        } else {
            slot.failures += 1;
        }
        let entry = self.classes.entry(class).or_insert((0, None));
        entry.0 += 1;
        if entry.1.is_none() {
            entry.1 = match result {
                Err(e) => Some(e.to_string()),
                Ok(_) => detail.map(str::to_string),
            };
        }
    }

    /// Items a call cut short by its timeout received before it was (a stream's messages):
    /// they arrived, so items/s counts them, in the second they ended.
    pub fn cut_short(&mut self, done: Instant, items: u64) {
        if items == 0 {
            return;
        }
        let sec = done.saturating_duration_since(self.measure_start).as_secs() as usize;
        if self.timeline.len() <= sec {
            self.timeline.resize_with(sec + 1, Second::default);
        }
        self.items += items;
        self.timeline[sec].items += items;
    }

    pub fn merge(&mut self, other: Recorder) {
        self.latency
            .add(&other.latency)
            .expect("auto-resizing histograms merge");
        if let (Some(a), Some(b)) = (&mut self.service, &other.service) {
            a.add(b).expect("auto-resizing histograms merge");
        }
        for (class, (n, example)) in other.classes {
            let e = self.classes.entry(class).or_insert((0, None));
            e.0 += n;
            if e.1.is_none() {
                e.1 = example;
            }
        }
        self.requests += other.requests;
        self.successes += other.successes;
        self.items += other.items;
        self.bytes += other.bytes;
        self.warmup += other.warmup;
        self.reconnects += other.reconnects;
        self.unfinished += other.unfinished;
        self.last_done = self.last_done.max(other.last_done);
        if self.timeline.len() < other.timeline.len() {
            self.timeline
                .resize_with(other.timeline.len(), Second::default);
        }
        for (a, b) in self.timeline.iter_mut().zip(other.timeline) {
            a.requests += b.requests;
            a.failures += b.failures;
            a.items += b.items;
            a.bytes += b.bytes;
        }
    }

    pub fn outcomes(&self) -> Vec<Outcome> {
        self.classes
            .iter()
            .map(|(class, (count, example))| Outcome {
                kind: class.kind().to_string(),
                code: class.code(),
                label: class.to_string(),
                success: class.is_success(),
                count: *count,
                example: example.clone(),
            })
            .collect()
    }

    pub fn timeline(&self) -> Vec<Second> {
        let mut t = self.timeline.clone();
        for (i, s) in t.iter_mut().enumerate() {
            s.second = i as u64;
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn reply(class: Class) -> Result<Reply, CallError> {
        Ok(Reply {
            class,
            items: 2,
            bytes: 10,
            body: None,
            detail: None,
            trailers: Vec::new(),
        })
    }

    #[test]
    fn records_classes_latency_and_timeline_then_merges() {
        let t0 = Instant::now();
        let mut a = Recorder::new(t0, false);
        a.record(
            t0,
            t0,
            t0 + Duration::from_millis(5),
            &reply(Class::Http(200)),
        );
        a.record(
            t0,
            t0,
            t0 + Duration::from_millis(1500),
            &reply(Class::Http(404)),
        );
        let mut b = Recorder::new(t0, false);
        b.record(
            t0,
            t0,
            t0 + Duration::from_millis(1),
            &Err(CallError::Timeout(Duration::from_secs(1))),
        );
        a.merge(b);
        assert_eq!((a.requests, a.successes, a.items, a.bytes), (3, 1, 4, 20));
        assert_eq!(a.latency.len(), 2, "a timeout has no latency");
        let tl = a.timeline();
        assert_eq!(tl.len(), 2);
        assert_eq!((tl[0].requests, tl[0].failures, tl[1].failures), (2, 1, 1));
        let labels: Vec<_> = a
            .outcomes()
            .iter()
            .map(|o| (o.label.clone(), o.count))
            .collect();
        assert_eq!(
            labels,
            [
                ("HTTP 200".into(), 1),
                ("HTTP 404".into(), 1),
                ("timeout".into(), 1)
            ]
        );
        assert!(a.outcomes()[2]
            .example
            .as_deref()
            .unwrap()
            .contains("no answer"));
    }

    #[test]
    fn open_loop_keeps_both_corrected_and_service_time() {
        let t0 = Instant::now();
        let mut r = Recorder::new(t0, true);
        let sent = t0 + Duration::from_millis(100);
        r.record(
            t0,
            sent,
            sent + Duration::from_millis(2),
            &reply(Class::Http(200)),
        );
        assert!(r.latency.max() >= 101_000);
        assert!(r.service.as_ref().unwrap().max() < 3_000);
    }
}
