//! The ranking of predicates over a suite's runs, as the paper defines it: for a predicate P,
//! F(P) and S(P) the failing and passing runs where it was true, F(P observed) and S(P
//! observed) those that reached its site; Failure(P) = F/(S+F), Context(P) = F obs/(S obs + F
//! obs), Increase(P) = Failure - Context, and Importance(P) the harmonic mean of Increase and
//! log F(P)/log NumF. A predicate is left out unless its Increase is above 0 at the confidence
//! asked (`--confidence`, 95% by default: the lower end of the normal-approximation interval,
//! Failure's and Context's variances added, is above 0; the paper's pruning, which drops
//! predicates true in too few runs for their Increase to mean anything). The elimination takes
//! the most important predicate, drops every run where it is true, ranks again, and so on
//! until no failing run is left or no predicate has an Importance above 0.

use std::collections::HashSet;

/// One run: whether it failed, the sites it reached and the predicates it saw true.
#[derive(Clone, Debug, Default)]
pub struct RunPreds {
    pub failed: bool,
    pub observed: HashSet<usize>,
    pub truth: HashSet<usize>,
}

/// The predicates (each the site it is at), the runs, and z of the confidence interval an
/// Increase must be above 0 at (0: any Increase above 0).
#[derive(Clone, Debug, Default)]
pub struct Data {
    pub site_of: Vec<usize>,
    pub runs: Vec<RunPreds>,
    pub z: f64,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub f: u32,
    pub s: u32,
    pub f_obs: u32,
    pub s_obs: u32,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Scores {
    pub failure: f64,
    pub context: f64,
    pub increase: f64,
    pub importance: f64,
}

/// A predicate's place in a ranking.
#[derive(Clone, Debug, PartialEq)]
pub struct Ranked {
    pub pred: usize,
    pub counts: Counts,
    pub scores: Scores,
}

/// A predicate the elimination selected, with the failing runs (indexes) it explains, the
/// predicates as important as it, and the runs left when it was chosen.
#[derive(Clone, Debug, PartialEq)]
pub struct Selected {
    pub ranked: Ranked,
    pub explains: Vec<usize>,
    pub tied_with: Vec<usize>,
    pub runs_left: usize,
    pub failing_left: usize,
}

/// The scores of a predicate with counts `c` among `num_f` failing runs; None when it is
/// never true in a failing run or its Increase is not above 0 at the confidence of `z` (the
/// interval's half-width in standard deviations).
pub fn scores(c: Counts, num_f: u32, z: f64) -> Option<Scores> {
    if c.f == 0 || c.f_obs == 0 {
        return None;
    }
    let (true_in, observed) = ((c.f + c.s) as f64, (c.f_obs + c.s_obs) as f64);
    let failure = c.f as f64 / true_in;
    let context = c.f_obs as f64 / observed;
    let increase = failure - context;
    // Each a proportion of its runs: p (1 - p) / n.
    let variance = failure * (1.0 - failure) / true_in + context * (1.0 - context) / observed;
    if increase - z * variance.sqrt() <= 1e-12 {
        return None;
    }
    // With one failing run, log F / log NumF is 0/0: that run is all there is (1).
    let log_f = if num_f <= 1 { 1.0 } else { (c.f as f64).ln() / (num_f as f64).ln() };
    let importance = if log_f <= 0.0 { 0.0 } else { 2.0 / (1.0 / increase + 1.0 / log_f) };
    Some(Scores { failure, context, increase, importance })
}

/// Every predicate's counts over the runs `alive` says are left.
fn counts(data: &Data, alive: &[bool]) -> Vec<Counts> {
    let sites = data.site_of.iter().copied().max().map_or(0, |m| m + 1);
    let mut site_counts = vec![(0u32, 0u32); sites];
    let mut out = vec![Counts::default(); data.site_of.len()];
    for run in data.runs.iter().zip(alive).filter(|(_, a)| **a).map(|(r, _)| r) {
        for &s in &run.observed {
            if run.failed {
                site_counts[s].0 += 1;
            } else {
                site_counts[s].1 += 1;
            }
        }
        for &p in &run.truth {
            if run.failed {
                out[p].f += 1;
            } else {
                out[p].s += 1;
            }
        }
    }
    for (c, &s) in out.iter_mut().zip(&data.site_of) {
        (c.f_obs, c.s_obs) = site_counts[s];
    }
    out
}

/// The predicates with an Increase above 0 over the runs left, the most important first (then
/// the one true in more failing runs, then the first).
pub fn rank(data: &Data, alive: &[bool]) -> Vec<Ranked> {
    let num_f = data.runs.iter().zip(alive).filter(|(r, a)| **a && r.failed).count() as u32;
    let mut out: Vec<Ranked> =
        counts(data, alive).into_iter().enumerate().filter_map(|(pred, c)| Some(Ranked { pred, counts: c, scores: scores(c, num_f, data.z)? })).collect();
    out.sort_by(|a, b| b.scores.importance.total_cmp(&a.scores.importance).then(b.counts.f.cmp(&a.counts.f)).then(a.pred.cmp(&b.pred)));
    out
}

/// The elimination: the predicates it selects, in order.
pub fn eliminate(data: &Data) -> Vec<Selected> {
    let mut alive = vec![true; data.runs.len()];
    let mut out = Vec::new();
    loop {
        let failing_left = data.runs.iter().zip(&alive).filter(|(r, a)| **a && r.failed).count();
        if failing_left == 0 {
            break;
        }
        let ranked = rank(data, &alive);
        let Some(top) = ranked.first().filter(|t| t.scores.importance > 0.0).cloned() else { break };
        let tied_with = ranked[1..].iter().take_while(|r| (r.scores.importance - top.scores.importance).abs() < 1e-12).map(|r| r.pred).collect();
        let runs_left = alive.iter().filter(|a| **a).count();
        let mut explains = Vec::new();
        for (i, run) in data.runs.iter().enumerate() {
            if alive[i] && run.truth.contains(&top.pred) {
                alive[i] = false;
                if run.failed {
                    explains.push(i);
                }
            }
        }
        out.push(Selected { ranked: top, explains, tied_with, runs_left, failing_left });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const Z_95: f64 = 1.96;

    fn run(failed: bool, observed: &[usize], truth: &[usize]) -> RunPreds {
        RunPreds { failed, observed: observed.iter().copied().collect(), truth: truth.iter().copied().collect() }
    }

    #[test]
    fn scores_follow_the_papers_definitions() {
        // cbi_pred's P1 (answers.json): F 9, S 0, observed in 9 failing and 20 passing of 9.
        let s = scores(Counts { f: 9, s: 0, f_obs: 9, s_obs: 20 }, 9, Z_95).unwrap();
        assert!((s.failure - 1.0).abs() < 1e-9 && (s.context - 9.0 / 29.0).abs() < 1e-9);
        assert!((s.increase - 20.0 / 29.0).abs() < 1e-9);
        assert!((s.importance - 0.816327).abs() < 1e-6, "{s:?}");
        // P2: F 9, S 2.
        let s = scores(Counts { f: 9, s: 2, f_obs: 9, s_obs: 20 }, 9, Z_95).unwrap();
        assert!((s.importance - 0.673597).abs() < 1e-6, "{s:?}");
        // Increase 0 or below, or never true in a failing run: left out.
        assert_eq!(scores(Counts { f: 1, s: 2, f_obs: 1, s_obs: 2 }, 3, Z_95), None);
        assert_eq!(scores(Counts { f: 0, s: 2, f_obs: 1, s_obs: 2 }, 3, Z_95), None);
        // An Increase of 0.24 from 3 runs where it is true: its 95% interval reaches below 0
        // (kept without the test). The same proportions from ten times the runs are significant.
        assert_eq!(scores(Counts { f: 2, s: 1, f_obs: 3, s_obs: 4 }, 3, Z_95), None);
        assert!(scores(Counts { f: 2, s: 1, f_obs: 3, s_obs: 4 }, 3, 0.0).is_some());
        assert!(scores(Counts { f: 20, s: 10, f_obs: 30, s_obs: 40 }, 30, Z_95).is_some_and(|s| (s.increase - (2.0 / 3.0 - 3.0 / 7.0)).abs() < 1e-9));
        // True in one failing run of several: log 1 = 0, Importance 0.
        assert_eq!(scores(Counts { f: 1, s: 0, f_obs: 1, s_obs: 5 }, 3, Z_95).unwrap().importance, 0.0);
    }

    #[test]
    fn elimination_drops_the_runs_a_predicate_explains_and_a_redundant_one_with_them() {
        // Predicates 0 (site 0) and 1 (site 1) are true in the same failing runs, 1 also in a
        // passing one: 0 is selected and 1, redundant, is not. Predicate 2 explains the last
        // failing runs alone.
        let mut runs = vec![];
        for _ in 0..6 {
            runs.push(run(true, &[0, 1, 2], &[0, 1]));
        }
        for _ in 0..4 {
            runs.push(run(true, &[0, 1, 2], &[2]));
        }
        runs.push(run(false, &[0, 1, 2], &[1]));
        for _ in 0..12 {
            runs.push(run(false, &[0, 1, 2], &[]));
        }
        let data = Data { site_of: vec![0, 1, 2], runs, z: Z_95 };
        let first = rank(&data, &vec![true; data.runs.len()]);
        assert_eq!(first.iter().map(|r| r.pred).collect::<Vec<_>>(), [0, 2, 1]);
        let sel = eliminate(&data);
        assert_eq!(sel.iter().map(|s| s.ranked.pred).collect::<Vec<_>>(), [0, 2]);
        assert_eq!((sel[0].explains.clone(), sel[0].runs_left, sel[0].failing_left), (vec![0, 1, 2, 3, 4, 5], 23, 10));
        assert_eq!((sel[1].explains.clone(), sel[1].runs_left, sel[1].failing_left), (vec![6, 7, 8, 9], 17, 4));
    }
}
