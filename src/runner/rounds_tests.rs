//! The paired round logic on fakes: order, stolen rounds, the precision stop, the limit.

use super::*;
use crate::load::result::tests::part;
use crate::results::ProfileRun;
use crate::runner::seam::Sliced;
use std::time::Duration;

/// A contender that serves slices from a script: its server CPU per request in each
/// slice (by the slice's number), the host's steal, and when it dies or fails.
struct Fake {
    /// µs of server CPU per request in slice `i` (the last one repeats).
    cpu_us: Vec<f64>,
    steal: Vec<f64>,
    /// The /proc/stat ticks of that steal (two for any steal unless set).
    steal_ticks: Option<u64>,
    /// Calls it answers in a slice of 100 ms (scaled to the slice it is given).
    calls: u64,
    /// The stop of every slice it was given.
    stops: Vec<Stop>,
    /// It dies after this many slices.
    dies_after: Option<usize>,
    /// Its slice `i` fails.
    fails_at: Option<usize>,
    /// Which slices it served, with the clock of every fake (the order they ran in).
    served: Vec<u64>,
    clock: std::rc::Rc<std::cell::Cell<u64>>,
    connect_error: Option<String>,
    /// Each slice takes its length and this much more of the wall-clock (its edges).
    edges: Option<Duration>,
}

impl Fake {
    fn new(clock: &std::rc::Rc<std::cell::Cell<u64>>, cpu_us: &[f64]) -> Fake {
        Fake {
            cpu_us: cpu_us.to_vec(),
            steal: vec![0.0],
            steal_ticks: None,
            calls: 1000,
            stops: Vec::new(),
            dies_after: None,
            fails_at: None,
            served: Vec::new(),
            clock: clock.clone(),
            connect_error: None,
            edges: None,
        }
    }
}

impl Serving for Fake {
    fn failed(&self) -> Option<&str> {
        self.connect_error.as_deref()
    }
    fn leader(&self) -> Option<String> {
        None
    }
    fn slice(&mut self, stop: Stop, _: &mut dyn Reporter) -> Sliced {
        self.stops.push(stop);
        if let (Some(edges), Stop::Duration(d)) = (self.edges, stop) {
            std::thread::sleep(d + edges);
        }
        let i = self.served.len();
        let t = self.clock.get();
        self.clock.set(t + 1);
        self.served.push(t);
        if self.fails_at == Some(i) {
            return Sliced {
                load: Err("connection reset".into()),
                cost: None,
                steal: None,
            };
        }
        let at = |v: &[f64]| v[i.min(v.len() - 1)];
        let secs = match stop {
            Stop::Duration(d) => d.as_secs_f64(),
            Stop::Count(_) => 0.1,
        };
        let requests = ((self.calls as f64 * secs / 0.1).round() as u64).max(1);
        Sliced {
            load: Ok(part(&[100; 10], requests, secs)),
            cost: Some(ServerCost {
                cpu_s: at(&self.cpu_us) * requests as f64 / 1e6,
                voluntary_switches: 0,
                involuntary_switches: 0,
                wait_s: 0.0,
                others_s: None,
            }),
            steal: Some({
                let share = at(&self.steal);
                let ticks = if share > 0.0 { 2 } else { 0 };
                (share, self.steal_ticks.unwrap_or(ticks))
            }),
        }
    }
    fn cpu_s(&mut self) -> f64 {
        self.served.len() as f64 * 0.01
    }
    fn exited(&mut self) -> bool {
        self.dies_after.is_some_and(|n| self.served.len() >= n)
    }
    fn stop_profile(&mut self) -> Option<ProfileRun> {
        None
    }
}

fn id() -> PointId {
    PointId::at(1)
}

fn course(min: u32, max: u32, precision: Option<f64>) -> Course {
    Course {
        min,
        max,
        precision,
        bands: crate::stats::paired::Bands {
            noise: 0.01,
            equivalence: 0.02,
        },
        cpu: true,
        repetition: 1,
        repetitions: 1,
        stop: Stop::Duration(Duration::from_millis(100)),
        auto: None,
        wall: None,
    }
}

fn go(fakes: &mut [Fake], c: Course) -> Done {
    let mut subjects: Vec<&mut dyn Serving> =
        fakes.iter_mut().map(|f| f as &mut dyn Serving).collect();
    let cancel = crate::cancel::Cancel::new();
    run(
        &mut subjects,
        c,
        &[(1, 0)],
        &id(),
        &cancel,
        &mut super::super::events::Quiet,
    )
}

#[test]
fn rounds_take_turns_in_a_williams_order() {
    let clock = Default::default();
    let mut f = [Fake::new(&clock, &[10.0]), Fake::new(&clock, &[10.0])];
    let done = go(&mut f, course(4, 4, None));
    assert_eq!(done.rounds, 4);
    // A B, B A, A B, B A: A at times 0, 3, 4, 7.
    assert_eq!(f[0].served, [0, 3, 4, 7]);
    assert_eq!(f[1].served, [1, 2, 5, 6]);
    let positions: Vec<u32> = done.points[0].slices.iter().map(|s| s.position).collect();
    assert_eq!(positions, [0, 1, 0, 1]);
    // The second repetition opens with B.
    let clock = Default::default();
    let mut f = [Fake::new(&clock, &[10.0]), Fake::new(&clock, &[10.0])];
    let c = Course {
        repetition: 2,
        ..course(2, 2, None)
    };
    go(&mut f, c);
    assert_eq!(
        f[1].served[0], 0,
        "repetition 2 begins with the other contender"
    );
}

#[test]
fn a_stolen_round_is_run_again_up_to_a_limit() {
    let clock = Default::default();
    let mut a = Fake::new(&clock, &[10.0]);
    a.steal = vec![0.0, 0.0, 0.5, 0.0]; // its third slice (round 2) was stolen from
    let mut f = [a, Fake::new(&clock, &[10.0])];
    let done = go(&mut f, course(4, 4, None));
    assert_eq!(done.rounds, 5, "one round more for the stolen one");
    // A host that steals every slice: at most half as many rounds again.
    let clock = Default::default();
    let mut a = Fake::new(&clock, &[10.0]);
    a.steal = vec![0.9];
    let mut f = [a, Fake::new(&clock, &[10.0])];
    assert_eq!(go(&mut f, course(4, 4, None)).rounds, 6);
    // One tick of steal is where /proc/stat's sampling fell as much as what the host took:
    // a 25 ms slice on two CPUs spans five, so one tick reads 20 %. Not run again.
    let clock = Default::default();
    let mut a = Fake::new(&clock, &[10.0]);
    a.steal = vec![0.2];
    a.steal_ticks = Some(1);
    let mut f = [a, Fake::new(&clock, &[10.0])];
    let done = go(&mut f, course(4, 4, None));
    assert_eq!(done.rounds, 4);
    assert!(done.points[0]
        .slices
        .iter()
        .all(|x| x.steal_ticks == Some(1) && !x.stolen()));
}

/// A slice's length in milliseconds (0 for a count).
fn ms(s: &Stop) -> u128 {
    match s {
        Stop::Duration(d) => d.as_millis(),
        Stop::Count(_) => 0,
    }
}

#[test]
fn an_auto_slice_holds_enough_calls_of_the_slowest_contender() {
    let auto = |repetitions| {
        let paired = crate::plan::Paired::default();
        assert_eq!(paired.slice, None, "slices are auto by default");
        Course::of(
            Stop::Duration(Duration::from_secs(1)),
            &paired,
            1,
            repetitions,
        )
    };
    // 10,000 calls a second each: 250 calls take 25 ms, the shortest slice; the limit is
    // what 3 s of such slices hold.
    let clock = Default::default();
    let mut f = [Fake::new(&clock, &[10.0]), Fake::new(&clock, &[10.0])];
    let done = go(&mut f, auto(1));
    assert_eq!(ms(&f[0].stops[0]), 100, "the first round probes");
    assert!(
        f[0].stops[1..].iter().all(|s| ms(s) == 25),
        "{:?}",
        f[0].stops
    );
    assert_eq!(done.points[0].round_limit, Some(120));
    // The one second of duration is 40 such slices: at least that many rounds.
    assert!(done.rounds >= 40, "{}", done.rounds);
    // One contender answers 20 calls a second: 250 of its calls would take 12.5 s, so its
    // slices are the longest there are, 1 s, for both; 3 s of them are 3 rounds, so the
    // limit is the least there is, 4.
    let clock = Default::default();
    let mut slow = Fake::new(&clock, &[10.0]);
    slow.calls = 2;
    let mut f = [Fake::new(&clock, &[10.0]), slow];
    let done = go(&mut f, auto(1));
    assert!(
        f[0].stops[1..].iter().all(|s| ms(s) == 1000),
        "{:?}",
        f[0].stops
    );
    assert_eq!(done.points[1].round_limit, Some(4));
    assert!(done.rounds <= 4 + 2, "{}", done.rounds);
    // 4,000 calls a second: 62.5 ms, up to the next millisecond.
    let clock = Default::default();
    let mut mid = Fake::new(&clock, &[10.0]);
    mid.calls = 400;
    let mut f = [mid, Fake::new(&clock, &[10.0])];
    go(&mut f, auto(1));
    assert_eq!(ms(&f[1].stops[2]), 63);
    // A fixed slice stays as it is.
    let paired = crate::plan::Paired {
        slice: Some(Duration::from_millis(40)),
        ..Default::default()
    };
    let c = Course::of(Stop::Duration(Duration::from_secs(1)), &paired, 1, 1);
    let clock = Default::default();
    let mut f = [Fake::new(&clock, &[10.0]), Fake::new(&clock, &[10.0])];
    go(&mut f, c);
    assert!(f[0].stops.iter().all(|s| ms(s) == 40));
}

/// 40,000 calls a second: 250 take 6.25 ms, so the shortest slice — 12 ms where the rounds
/// are held to the clock (a screen), 25 ms where they are not.
#[test]
fn an_auto_slice_held_to_the_clock_goes_down_to_12_ms() {
    let shortest = |rounds| {
        let paired = crate::plan::Paired {
            rounds,
            ..Default::default()
        };
        let c = Course::of(Stop::Duration(Duration::from_millis(300)), &paired, 1, 1);
        let clock = Default::default();
        let mut f = [Fake::new(&clock, &[10.0]), Fake::new(&clock, &[10.0])];
        for x in &mut f {
            x.calls = 4000;
        }
        go(&mut f, c);
        f[0].stops[1..].iter().map(ms).collect::<Vec<_>>()
    };
    let clocked = shortest(Rounds::Duration);
    assert!(clocked.iter().all(|&s| s == 12), "{clocked:?}");
    assert_eq!(
        clocked.len() + 1,
        26,
        "the probe, then 300 ms of 12 ms slices in pairs"
    );
    let full = shortest(Rounds::Fixed(6));
    assert!(full.iter().all(|&s| s == 25), "{full:?}");
}

#[test]
fn rounds_aim_at_the_interval_the_report_reads_over_its_repetitions() {
    // The same noisy rounds (±3 % a round around +0.3 %) reach ±2 % within a repetition
    // alone, but the report over three repetitions reads Student's t(2) = 4.3 over them:
    // a repetition of a three-repetition plan needs more rounds than a lone one, and one
    // of a ten-repetition plan fewer.
    let pattern = [10.0, 10.63, 9.97, 9.37, 10.33, 10.0];
    let noisy: Vec<f64> = (0..400).map(|i| pattern[i % 6]).collect();
    let rounds = |repetitions| {
        let clock = Default::default();
        let mut f = [Fake::new(&clock, &[10.0]), Fake::new(&clock, &noisy)];
        let c = Course {
            repetitions,
            ..course(4, 200, Some(0.02))
        };
        go(&mut f, c).rounds
    };
    let (one, three, ten) = (rounds(1), rounds(3), rounds(10));
    assert!(
        three > one,
        "{three} rounds at three repetitions, {one} at one"
    );
    assert!(ten < one, "{ten} rounds at ten repetitions, {one} at one");
}

#[test]
fn rounds_stop_once_precise_and_never_before_the_minimum() {
    // Steady figures: precise at once, so the rounds stop at the minimum.
    let clock = Default::default();
    let mut f = [Fake::new(&clock, &[10.0]), Fake::new(&clock, &[12.0])];
    let done = go(&mut f, course(4, 30, Some(0.02)));
    assert_eq!(done.rounds, 4);
    assert!(
        done.reached.is_some_and(|r| r <= 0.02),
        "{:?}",
        done.reached
    );
    // Noisy figures never reach ±1 %: the rounds go on to the limit.
    let clock = Default::default();
    let noisy = [10.0, 14.0, 9.0, 13.0, 8.0, 15.0];
    let mut f = [Fake::new(&clock, &[10.0]), Fake::new(&clock, &noisy)];
    f[1].cpu_us = (0..40).map(|i| noisy[i % noisy.len()]).collect();
    let done = go(&mut f, course(2, 10, Some(0.01)));
    assert_eq!(done.rounds, 10);
    assert!(done.reached.is_some_and(|r| r > 0.01), "{:?}", done.reached);
}

#[test]
fn an_undecided_point_gets_rounds_past_its_precision() {
    // Pairs of rounds at +0.5 % and +2.5 %: within ±2 % after a dozen rounds, but the
    // interval straddles the noise band's edge (1 %) and reaches past the equivalence
    // band (2 %): neither different nor equal, so the rounds go on to the limit.
    let clock = Default::default();
    let steps = [10.05, 10.05, 10.25, 10.25];
    let mut f = [Fake::new(&clock, &[10.0]), Fake::new(&clock, &[10.0])];
    f[1].cpu_us = (0..40).map(|i| steps[i % steps.len()]).collect();
    let done = go(&mut f, course(2, 30, Some(0.02)));
    assert!(
        done.reached.is_some_and(|r| r <= 0.02),
        "{:?}",
        done.reached
    );
    assert_eq!(
        done.rounds, 30,
        "precise but inconclusive: rounds to the limit"
    );
    // The same spread around +10 %: different, so it stops once precise.
    let clock = Default::default();
    let steps = [10.9, 10.9, 11.1, 11.1];
    let mut f = [Fake::new(&clock, &[10.0]), Fake::new(&clock, &[10.0])];
    f[1].cpu_us = (0..40).map(|i| steps[i % steps.len()]).collect();
    let done = go(&mut f, course(2, 30, Some(0.02)));
    assert!(done.rounds < 30, "{}", done.rounds);
}

#[test]
fn a_contender_that_fails_or_dies_sits_out_and_the_others_go_on() {
    let clock = Default::default();
    let mut a = Fake::new(&clock, &[10.0]);
    a.fails_at = Some(1);
    let mut b = Fake::new(&clock, &[10.0]);
    b.dies_after = Some(3);
    let mut c = Fake::new(&clock, &[10.0]);
    c.connect_error = Some("cannot connect".into());
    let mut f = [a, b, c];
    let mut subjects: Vec<&mut dyn Serving> = f.iter_mut().map(|x| x as &mut dyn Serving).collect();
    let cancel = crate::cancel::Cancel::new();
    let done = run(
        &mut subjects,
        course(6, 6, None),
        &[],
        &id(),
        &cancel,
        &mut super::super::events::Quiet,
    );
    assert_eq!(done.points[0].error.as_deref(), Some("connection reset"));
    assert_eq!(done.points[0].slices.len(), 1);
    assert_eq!(
        done.points[1].slices.len(),
        3,
        "it died after its third slice"
    );
    assert!(done.points[1].error.is_none());
    assert_eq!(done.points[2].error.as_deref(), Some("cannot connect"));
    assert!(done.points[2].slices.is_empty() && f[2].served.is_empty());
    assert_eq!(done.rounds, 3, "rounds end when nobody serves");
}

#[test]
fn a_cancelled_run_stops_between_rounds() {
    let clock = Default::default();
    let mut f = [Fake::new(&clock, &[10.0]), Fake::new(&clock, &[10.0])];
    let mut subjects: Vec<&mut dyn Serving> = f.iter_mut().map(|x| x as &mut dyn Serving).collect();
    let cancel = crate::cancel::Cancel::new();
    cancel.cancel();
    let done = run(
        &mut subjects,
        course(4, 4, None),
        &[(1, 0)],
        &id(),
        &cancel,
        &mut super::super::events::Quiet,
    );
    assert_eq!(done.rounds, 0);
    assert!(done
        .points
        .iter()
        .all(|p| p.slices.is_empty() && p.load.is_none()));
}

#[test]
fn rounds_cover_the_duration_in_pairs() {
    let auto = Rounds::Auto {
        max: Some(30),
        precision: 0.02,
    };
    let of = |stop, rounds| {
        let paired = crate::plan::Paired {
            slice: Some(Duration::from_secs(1)),
            rounds,
            ..Default::default()
        };
        let c = Course::of(stop, &paired, 1, 3);
        (c.min, c.max, c.precision)
    };
    let s = Duration::from_secs(1);
    assert_eq!(
        of(Stop::Duration(Duration::from_secs(5)), auto),
        (6, 30, Some(0.02))
    );
    assert_eq!(
        of(Stop::Duration(Duration::from_millis(300)), auto),
        (2, 30, Some(0.02))
    );
    assert_eq!(of(Stop::Count(100), auto), (1, 1, None));
    assert_eq!(of(Stop::Duration(s), Rounds::Fixed(7)), (7, 7, None));
    // A night's screen: the duration's rounds, no more, no precision chased.
    assert_eq!(
        of(Stop::Duration(Duration::from_secs(5)), Rounds::Duration),
        (6, 6, None)
    );
    assert_eq!(
        of(Stop::Duration(Duration::from_millis(300)), Rounds::Duration),
        (2, 2, None)
    );
    let few = Rounds::Auto {
        max: Some(4),
        precision: 0.02,
    };
    // Without `max_rounds`: as many as 3 s of slices hold, at least 4.
    let limit = |ms| crate::plan::Paired::round_limit(None, Duration::from_millis(ms));
    assert_eq!((limit(25), limit(100), limit(1000)), (120, 30, 4));
    assert_eq!(
        crate::plan::Paired::round_limit(Some(8), Duration::from_millis(25)),
        8
    );
    assert_eq!(
        of(Stop::Duration(Duration::from_secs(9)), few),
        (4, 4, Some(0.02))
    );
}

/// A screen (`rounds = "duration"`) measures each contender as long as it would be alone,
/// wall-clock: its rounds stop within every contender's share of the repetition, the
/// slices' edges included — here slices of 10 ms that take at least 15 ms, so 400 ms hold
/// 12 rounds at most where the duration's slices alone would be 20.
#[test]
fn a_screen_stops_within_its_share_of_the_wall_clock() {
    let paired = crate::plan::Paired {
        slice: Some(Duration::from_millis(10)),
        rounds: Rounds::Duration,
        ..Default::default()
    };
    let screen = Course::of(Stop::Duration(Duration::from_millis(200)), &paired, 1, 3);
    assert_eq!(
        (screen.max, screen.wall),
        (20, Some(Duration::from_millis(200)))
    );
    let full = crate::plan::Paired {
        rounds: Rounds::Fixed(20),
        ..paired
    };
    let fixed = Course::of(Stop::Duration(Duration::from_millis(200)), &full, 1, 3);
    assert_eq!(
        fixed.wall, None,
        "only a screen's rounds are held to the clock"
    );
    let run = |edges, c| {
        let clock = Default::default();
        let mut f = [Fake::new(&clock, &[10.0]), Fake::new(&clock, &[10.0])];
        for x in &mut f {
            x.edges = edges;
        }
        go(&mut f, c).rounds
    };
    // A busy machine only makes the slices slower, so fewer rounds: never more.
    let timed = run(Some(Duration::from_millis(5)), screen);
    assert!(
        (2..=12).contains(&timed) && timed % 2 == 0,
        "{timed} rounds within 400 ms of slices taking 15 ms"
    );
    let unclocked = Course {
        wall: None,
        ..screen
    };
    assert_eq!(run(None, unclocked), 20, "the duration's rounds");
}

#[test]
fn the_main_ratio_is_throughput_when_the_plan_does_not_judge_cpu() {
    let clock = Default::default();
    let mut b = Fake::new(&clock, &[12.0]);
    b.calls = 500;
    let mut f = [Fake::new(&clock, &[10.0]), b];
    let done = go(&mut f, course(2, 2, None));
    let (base, other) = (&done.points[0].slices, &done.points[1].slices);
    let cpu = main_pairs(base, other, true);
    assert_eq!(cpu.len(), 1, "{cpu:?}");
    assert!((cpu[0].1 / cpu[0].0 - 1.2).abs() < 1e-9, "{cpu:?}");
    let rate = main_pairs(base, other, false);
    assert_eq!(rate.len(), 1, "{rate:?}");
    assert!((rate[0].1 / rate[0].0 - 0.5).abs() < 1e-9, "{rate:?}");
}
