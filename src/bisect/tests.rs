//! The search against a model history: each commit's cost, some commits that do not build,
//! some pairs that stay inconclusive. How a step is measured is tested in tests/bisect.rs.

use super::*;

/// A history of `n` + 1 commits: commit `i` costs `cost[i]` (1 = as good); a pair of
/// commits reads *different* when their costs differ, with an interval ±1 % around the
/// ratio, *equivalent* otherwise, *inconclusive* where `fog` says.
struct Model {
    cost: Vec<f64>,
    unbuilt: Vec<usize>,
    fog: Vec<usize>,
    built: Vec<usize>,
    runs: Vec<(Kind, Vec<usize>)>,
}

impl Model {
    fn new(n: usize) -> Model {
        Model {
            cost: vec![1.0; n + 1],
            unbuilt: vec![],
            fog: vec![],
            built: vec![],
            runs: vec![],
        }
    }
    /// Commit `at` and every later one cost `times` more.
    fn step(mut self, at: usize, times: f64) -> Model {
        for c in &mut self.cost[at..] {
            *c *= times;
        }
        self
    }
    fn run(&mut self, ways: usize) -> (Option<Hunt>, Answer) {
        let n = self.cost.len() - 1;
        search(self, n, ways, None, 40).unwrap().unwrap()
    }
    fn culprits(&mut self) -> Vec<(usize, usize, Why)> {
        self.culprits_ways(2)
    }
    fn culprits_ways(&mut self, ways: usize) -> Vec<(usize, usize, Why)> {
        match self.run(ways).1 {
            Answer::Culprits { blames } => blames.iter().map(|b| (b.from, b.to, b.why)).collect(),
            other => panic!("{other:?}"),
        }
    }
}

impl Bench for Model {
    fn builds(&mut self, i: usize) -> anyhow::Result<Option<bool>> {
        if !self.built.contains(&i) {
            self.built.push(i);
        }
        Ok(Some(!self.unbuilt.contains(&i)))
    }
    fn measure(
        &mut self,
        kind: Kind,
        at: &[usize],
        _: Option<Hunt>,
    ) -> anyhow::Result<Option<Vec<Pair>>> {
        self.runs.push((kind, at.to_vec()));
        let pairs = at
            .windows(2)
            .map(|w| {
                let ratio = self.cost[w[1]] / self.cost[w[0]];
                let (lo, hi) = (ratio / 1.01, ratio * 1.01);
                let fog = self.fog.contains(&w[1]);
                let call = if fog {
                    Call::Inconclusive
                } else if lo > 1.01 {
                    Call::Higher
                } else if hi < 1.0 / 1.01 {
                    Call::Lower
                } else {
                    Call::Equivalent
                };
                let (lo, hi) = if fog { (0.8, 1.4) } else { (lo, hi) };
                Pair {
                    from: w[0],
                    to: w[1],
                    points: vec![PointRead {
                        point: "get [clients=2]".into(),
                        call,
                        ratio,
                        lo,
                        hi,
                        text: String::new(),
                    }],
                }
            })
            .collect();
        Ok(Some(pairs))
    }
}

#[test]
fn one_slow_commit_is_named_and_confirmed_within_log2_steps() {
    let mut m = Model::new(64).step(37, 1.2);
    assert_eq!(m.culprits(), [(36, 37, Why::Confirmed)]);
    let steps = m.runs.iter().filter(|r| r.0 == Kind::Step).count();
    assert!(steps <= 6, "{:?}", m.runs);
    // The endpoints, the steps and the builds of the cuts: at most log2(64) + 4 builds.
    assert!(m.built.len() + 2 <= 10, "{:?}", m.built);
    assert_eq!(m.runs.last().unwrap(), &(Kind::Confirm, vec![36, 37]));
}

#[test]
fn the_hunt_is_sized_by_the_endpoints() {
    let mut m = Model::new(8).step(3, 1.44);
    let (hunt, _) = m.run(2);
    let hunt = hunt.unwrap();
    assert!(hunt.higher);
    assert!((hunt.effect - 0.2).abs() < 1e-9, "{hunt:?}");
    let mut m = Model::new(8).step(3, 1.0 / 1.44);
    assert!(!m.run(2).0.unwrap().higher);
}

#[test]
fn an_unchanged_history_is_not_reproduced() {
    let mut m = Model::new(64);
    assert_eq!(m.run(2), (None, Answer::NotReproduced));
    assert_eq!(m.runs.len(), 1);
    // A change that came and went between the endpoints.
    let mut m = Model::new(64).step(20, 1.2).step(30, 1.0 / 1.2);
    assert_eq!(m.run(2).1, Answer::NotReproduced);
}

#[test]
fn inconclusive_endpoints_say_so() {
    let mut m = Model::new(16).step(5, 1.2);
    m.fog = vec![16];
    assert_eq!(m.run(2).1, Answer::Undecided);
}

#[test]
fn two_slow_commits_are_both_named() {
    let mut m = Model::new(64).step(13, 1.2).step(41, 1.2);
    assert_eq!(
        m.culprits(),
        [(12, 13, Why::Confirmed), (40, 41, Why::Confirmed)]
    );
}

#[test]
fn a_commit_that_does_not_build_next_to_the_culprit_makes_a_range() {
    let mut m = Model::new(64).step(37, 1.2);
    m.unbuilt = vec![36];
    assert_eq!(m.culprits(), [(35, 37, Why::Unbuilt)]);
    // Further away it is skipped: its neighbour is measured instead.
    let mut m = Model::new(64).step(37, 1.2);
    m.unbuilt = vec![32];
    assert_eq!(m.culprits(), [(36, 37, Why::Confirmed)]);
    assert!(m.built.contains(&31) || m.built.contains(&33));
}

#[test]
fn a_pair_that_stays_inconclusive_leaves_its_range() {
    let mut m = Model::new(64).step(37, 1.2);
    m.fog = vec![48];
    let got = m.culprits();
    assert_eq!(got.len(), 1);
    // 32–64 was cut at 48: 48–64 proven unchanged, 32–48 inconclusive.
    assert_eq!(got, [(32, 48, Why::Inconclusive)]);
}

#[test]
fn more_ways_take_fewer_steps() {
    let mut two = Model::new(64).step(37, 1.2);
    let mut four = Model::new(64).step(37, 1.2);
    assert_eq!(two.culprits(), four.culprits_ways(4));
    let steps = |m: &Model| m.runs.iter().filter(|r| r.0 == Kind::Step).count();
    assert!(steps(&four) < steps(&two), "{:?} {:?}", four.runs, two.runs);
    assert!(four.runs.iter().any(|r| r.1.len() == 5));
}

#[test]
fn a_change_smaller_than_the_effect_is_not_hunted() {
    let mut m = Model::new(8).step(3, 1.05);
    let got = search(&mut m, 8, 2, Some(0.10), 40).unwrap().unwrap();
    assert_eq!(got.1, Answer::NotReproduced);
}

#[test]
fn the_step_limit_leaves_a_range() {
    let mut m = Model::new(64).step(37, 1.2);
    let got = search(&mut m, 64, 2, None, 2).unwrap().unwrap().1;
    let Answer::Culprits { blames } = got else {
        panic!("{got:?}")
    };
    assert_eq!(blames.len(), 1);
    assert_eq!(blames[0].why, Why::Limit);
    assert!(blames[0].from < 37 && blames[0].to >= 37 && blames[0].to - blames[0].from == 16);
}
