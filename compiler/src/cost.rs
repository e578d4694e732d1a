//! What a derivation will cost before it runs. Chains grow steeply with
//! their size (the director chain's derivation as N^3 and steeper), and a
//! size the machine cannot handle in reasonable time must be refused at
//! once, with the estimate that refused it, rather than run for hours in
//! silence.
//!
//! The estimate is measured, not modelled: the scheme the host will derive
//! is derived at two small sizes (a doubling or two higher where those are
//! cheap), each timed on the CPU, fastest of a few rounds, in the form it
//! will take at the requested size (the midpoint Hamel step's sparse form where
//! [`TableauChoice::Auto`] keeps the model's tableau there, the dense form
//! elsewhere), and the time extrapolated as a power of the size whose
//! exponent steepens as measured ([`STEEPENING`]).
//!
//! Hosts that know the schemes they will derive ask [`check_schemes`];
//! [`check`] and [`estimate`] are for the default scheme.

use std::time::Instant;

use crate::model::Model;
use crate::scheme::{Scheme, TableauChoice};

/// Sizes at or below this derive without an estimate (a few seconds at
/// most); above it, the model is derived at half this size and at this size
/// to measure the growth (and at twice these, and so on, where the next
/// probe is cheap: [`PROBE_SHARE`]).
pub const PROBE_ABOVE: i64 = 16;

/// Derivations estimated above this many seconds are refused unless the
/// environment variable `HAMEL_MAX_DERIVE_SECONDS` allows more.
pub const DEFAULT_LIMIT_SECONDS: f64 = 600.0;

/// How much the exponent of the growth rises per doubling of the size past
/// the probes. The exponent of a derivation's time over a doubling of the
/// size rose from doubling to doubling in every series measured (on the
/// CPU, this project's 2-core machine): 2.2, 2.5, 2.9, 3.4 for the director
/// chain's sparse midpoint step (8 to 128 links); 2.6, 2.9, 3.1 for its
/// dense averaged step (8 to 64 links); 1.7, 1.8, 1.9, 2.0 for RATTLE on the
/// Cartesian chain (8 to 128 links): the parts that grow fastest take over
/// as the size grows. The probes' exponent alone fell short by a factor 1.5
/// to 2 four to eight times past them; risen by this much per doubling, the
/// estimates came within 0.77 to 1.35 times the derivations' time at 32 to
/// 128 links, and 0.81 for the midpoint step at 200
/// (`compiler/examples/cost_accuracy.rs`). Since kinetic metrics are
/// derived as Hessians (each pair once, [`crate::sym::hessian`]), the
/// midpoint step's derivation grows less steeply at first and the estimates
/// fell lower: 1.03, 0.76 and 0.69 times its time at 32, 64 and 128 links
/// (17 s there, measured on this project's 2-core machine).
///
/// Measured again after the derivations of long chains became 2–20 times
/// faster (2026-11-29, `cost_accuracy`, the chain models at 32 to 256 links
/// and the director chain at 512): RATTLE, Störmer–Verlet and
/// energy–momentum 0.93–1.27; the midpoint step 1.01–1.21 but 1.68 at 256
/// links (probes at 16 and 32, where its derivation still grows as N^1.3);
/// the averaged step 0.94–1.35 to 256 links and 0.55 at 512 (13.8 s; past
/// 256 links it grows as N^1.75, steeper than probes at 32 and 64 foretell).
/// A smaller steepening would centre the midpoint step's estimates and take
/// the averaged step's further under, so it stays; the estimates are
/// within a factor two either way, which is what a guard against hours
/// needs (the limit is minutes).
pub const STEEPENING: f64 = 0.25;

/// An extrapolated derivation time of one scheme.
#[derive(Clone, Debug, PartialEq)]
pub struct Estimate {
    /// the scheme that was derived at the probe sizes
    pub scheme: Scheme,
    /// whether its step keeps the model's tableau at the requested size (the
    /// sparse step, [`TableauChoice::Auto`]'s choice there), as the probes
    /// did
    pub tableau: bool,
    /// the size that was extrapolated (`N`) and its requested value
    pub size: (String, i64),
    /// the two probes: size value and seconds of derivation (the fastest of
    /// a few rounds, on the CPU where the system tells)
    pub probes: [(i64, f64); 2],
    /// the fitted exponent between the probes: time ∝ size^exponent there
    pub exponent: f64,
    /// the estimated seconds at the requested size
    pub seconds: f64,
}

impl Estimate {
    /// The exponent of the growth at the requested size: [`Estimate::exponent`]
    /// (taken to hold between the probes) risen by [`STEEPENING`] per
    /// doubling past them.
    pub fn exponent_at_size(&self) -> f64 {
        self.exponent + STEEPENING * (doublings(self.probes[1].0, self.size.1) + 0.5)
    }
}

/// Doublings from the upper probe `hi` to the size `value`.
fn doublings(hi: i64, value: i64) -> f64 {
    (value as f64 / hi as f64).log2().max(0.0)
}

/// The time at `value` from `t_hi` seconds at `hi`, growing as the size to
/// `exponent` there and steeper by [`STEEPENING`] per doubling past it: the
/// exponent rises linearly in the size's logarithm from `exponent` at the
/// probes' middle (half a doubling below `hi`).
fn extrapolate(t_hi: f64, hi: i64, value: i64, exponent: f64) -> f64 {
    let d = doublings(hi, value);
    t_hi * (exponent * d + STEEPENING * d * (d + 1.0) / 2.0).exp2()
}

impl std::fmt::Display for Estimate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (n, v) = &self.size;
        write!(
            f,
            "about {} at {n} = {v} for {}{} (measured {:.2} s at {n} = {} and {:.2} s at {n} = {}: time ∝ {n}^{:.1} there, steepening to {n}^{:.1} at {n} = {v})",
            human_duration(self.seconds),
            self.scheme.name(),
            if self.tableau { "'s sparse step" } else { "" },
            self.probes[0].1,
            self.probes[0].0,
            self.probes[1].1,
            self.probes[1].0,
            self.exponent,
            self.exponent_at_size(),
        )
    }
}

/// Seconds as a person reads them: `0.4 s`, `40 s`, `12 min`, `3 h`, `5 days`.
pub fn human_duration(s: f64) -> String {
    if s < 10.0 {
        format!("{s:.1} s")
    } else if s < 120.0 {
        format!("{s:.0} s")
    } else if s < 7200.0 {
        format!("{:.0} min", s / 60.0)
    } else if s < 2.0 * 86400.0 {
        format!("{:.0} h", s / 3600.0)
    } else {
        format!("{:.0} days", s / 86400.0)
    }
}

/// The limit in seconds: `HAMEL_MAX_DERIVE_SECONDS` if set to a positive
/// number, else [`DEFAULT_LIMIT_SECONDS`].
pub fn limit_seconds() -> f64 {
    std::env::var("HAMEL_MAX_DERIVE_SECONDS")
        .ok()
        .and_then(|s| s.trim().parse::<f64>().ok())
        .filter(|s| *s > 0.0)
        .unwrap_or(DEFAULT_LIMIT_SECONDS)
}

/// Seconds the calling thread has spent on a CPU (Linux:
/// `/proc/thread-self/schedstat`, in nanoseconds), `None` where the system
/// does not tell. A derivation runs on one thread: its CPU time is what it
/// costs, whatever else the machine is doing.
fn thread_cpu_seconds() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: u64 = s.split_whitespace().next()?.parse().ok()?;
    Some(ns as f64 * 1e-9)
}

/// Seconds `f` takes (on the CPU where the system tells, else on the
/// clock), `None` when it fails.
fn timed(f: impl FnOnce() -> bool) -> Option<f64> {
    let (wall, cpu) = (Instant::now(), thread_cpu_seconds());
    if !f() {
        return None;
    }
    let seconds = match (cpu, thread_cpu_seconds()) {
        (Some(a), Some(b)) if b >= a => b - a,
        _ => wall.elapsed().as_secs_f64(),
    };
    Some(seconds.max(1e-4))
}

/// Rounds of a probe derivation shorter than [`ONE_ROUND_SECONDS`]: the
/// fastest counts (the first of a process pays for warming up, and work
/// elsewhere on the machine slows any of them, even on the CPU, through the
/// caches it shares). Two that agree within [`AGREE`] are enough; else a
/// third.
const ROUNDS: usize = 3;
const AGREE: f64 = 1.1;
/// A probe taking this long is timed once: warming up is a small part of it.
const ONE_ROUND_SECONDS: f64 = 1.0;

/// A probe derivation predicted to take less than this many seconds (one
/// round) is worth its time, even for a small estimate: the probes move up a
/// doubling while the next upper one is, so that cheap schemes are measured
/// at sizes where their growth shows (RATTLE derives the 8-link Cartesian
/// chain in 15 to 25 ms, too little to time its ratio to 16 links
/// reliably).
pub const PROBE_FLOOR_SECONDS: f64 = 0.25;

/// The probes move up a doubling while the next upper one is predicted to
/// take less than this share of the estimate so far (the probes should not
/// add much to a derivation the guard accepts), up to
/// [`PROBE_BUDGET_SECONDS`] (a refusal comes within seconds).
pub const PROBE_SHARE: f64 = 0.05;

/// The most a probe derivation that moves the probes up may be predicted to
/// take (one round).
pub const PROBE_BUDGET_SECONDS: f64 = 1.5;

/// The model at the requested sizes, and how to load it at probe sizes,
/// where the largest requested size exceeds [`PROBE_ABOVE`].
struct Probes<'a> {
    file: &'a str,
    src: &'a str,
    sizes: &'a [(String, i64)],
    name: String,
    value: i64,
    /// the model at the requested sizes
    model: Model,
}

impl<'a> Probes<'a> {
    /// `None` for small sizes, or where the model does not load (the real
    /// derivation then reports why).
    fn of(file: &'a str, src: &'a str, sizes: &'a [(String, i64)]) -> Option<Probes<'a>> {
        let (name, value) = sizes.iter().filter(|(_, v)| *v > PROBE_ABOVE).max_by_key(|(_, v)| *v)?;
        Some(Probes {
            file,
            src,
            sizes,
            name: name.clone(),
            value: *value,
            model: crate::model::load_with_sizes(file, src, sizes).ok()?,
        })
    }

    /// The model with the probed size at `v` (other sizes capped at
    /// [`PROBE_ABOVE`]).
    fn at(&self, v: i64) -> Option<Model> {
        let probe: Vec<(String, i64)> = self
            .sizes
            .iter()
            .map(|(n, x)| (n.clone(), if *n == self.name { v } else { (*x).min(PROBE_ABOVE) }))
            .collect();
        crate::model::load_with_sizes(self.file, self.src, &probe).ok()
    }

    /// The estimate for `scheme`; `None` where it does not derive at the
    /// probe sizes (it does not apply: the real derivation reports why).
    fn estimate(&self, scheme: Scheme) -> Option<Estimate> {
        // The form of the step at the requested size, forced at every probe:
        // `Auto` itself would switch between them (5 links dense, 6 sparse
        // on the director chain) and measure no growth.
        let tableau = scheme.keeps_tableau(&self.model, TableauChoice::Auto);
        let form = if tableau {
            TableauChoice::Keep
        } else {
            TableauChoice::Substitute
        };
        let time = |v: i64| -> Option<f64> {
            let model = self.at(v)?;
            let mut rounds: Vec<f64> = Vec::new();
            while rounds.len() < ROUNDS {
                rounds.push(timed(|| scheme.derive_with(&model, form).is_ok())?);
                match rounds[..] {
                    [a] if a >= ONE_ROUND_SECONDS => break,
                    [a, b] if a.max(b) <= AGREE * a.min(b) => break,
                    _ => {}
                }
            }
            rounds.into_iter().reduce(f64::min)
        };
        // Between linear and sixth power: timer noise on tiny probes must
        // not give an absurd exponent either way.
        let fit = |(lo, t_lo): (i64, f64), (hi, t_hi): (i64, f64)| {
            ((t_hi / t_lo).ln() / (hi as f64 / lo as f64).ln()).clamp(1.0, 6.0)
        };
        let mut lo = (PROBE_ABOVE / 2, time(PROBE_ABOVE / 2)?);
        let mut hi = (PROBE_ABOVE, time(PROBE_ABOVE)?);
        let worth = |lo: (i64, f64), hi: (i64, f64)| {
            let so_far = extrapolate(hi.1, hi.0, self.value, fit(lo, hi));
            let next = hi.1 * 2f64.powf(fit(lo, hi));
            next < (PROBE_SHARE * so_far).clamp(PROBE_FLOOR_SECONDS, PROBE_BUDGET_SECONDS)
        };
        while 2 * hi.0 < self.value && worth(lo, hi) {
            let next = 2 * hi.0;
            (lo, hi) = (hi, (next, time(next)?));
        }
        let exponent = fit(lo, hi);
        Some(Estimate {
            scheme,
            tableau,
            size: (self.name.clone(), self.value),
            probes: [lo, hi],
            exponent,
            seconds: extrapolate(hi.1, hi.0, self.value, exponent),
        })
    }
}

/// The estimated time to derive `scheme` for the model `src` at `sizes`,
/// in the form it takes there, when a size exceeds [`PROBE_ABOVE`]; `None`
/// when none does, or when the model does not load or the scheme does not
/// derive at the small sizes (it does not apply; the real derivation then
/// reports why).
pub fn estimate_scheme(file: &str, src: &str, sizes: &[(String, i64)], scheme: Scheme) -> Option<Estimate> {
    Probes::of(file, src, sizes)?.estimate(scheme)
}

/// [`estimate_scheme`] for the default scheme, or the first of
/// [`Scheme::LIST`] that applies (at the smaller probe size).
pub fn estimate(file: &str, src: &str, sizes: &[(String, i64)]) -> Option<Estimate> {
    let probes = Probes::of(file, src, sizes)?;
    let small = probes.at(PROBE_ABOVE / 2)?;
    let scheme = std::iter::once(Scheme::DEFAULT)
        .chain(Scheme::LIST)
        .find(|s| s.applies(&small).is_ok())?;
    probes.estimate(scheme)
}

/// Refuses sizes whose derivation of `schemes` (each as many times as it
/// is listed), all together, is estimated beyond [`limit_seconds`]; returns
/// the estimates otherwise (for a progress note), one per scheme listed that
/// derives at the probe sizes, in their order; none for small sizes.
/// Schemes that do not derive at the probe sizes (they do not apply) are
/// left out: their real derivation reports why.
pub fn check_schemes(
    file: &str,
    src: &str,
    sizes: &[(String, i64)],
    schemes: &[Scheme],
) -> Result<Vec<Estimate>, String> {
    if schemes.is_empty() {
        return Ok(Vec::new());
    }
    let Some(probes) = Probes::of(file, src, sizes) else {
        return Ok(Vec::new());
    };
    let mut measured: Vec<(Scheme, Option<Estimate>)> = Vec::new();
    let mut estimates = Vec::new();
    for &s in schemes {
        if !measured.iter().any(|(m, _)| *m == s) {
            measured.push((s, probes.estimate(s)));
        }
        if let Some((_, Some(e))) = measured.iter().find(|(m, _)| *m == s) {
            estimates.push(e.clone());
        }
    }
    within(file, estimates, limit_seconds())
}

/// `estimates` if their sum is within `limit` seconds, else the refusal.
fn within(file: &str, estimates: Vec<Estimate>, limit: f64) -> Result<Vec<Estimate>, String> {
    if total_seconds(&estimates) > limit {
        return Err(refusal(file, &estimates, limit));
    }
    Ok(estimates)
}

/// Refuses sizes whose derivation of the default scheme (as [`estimate`])
/// is estimated beyond [`limit_seconds`]; returns the estimate otherwise
/// (for a progress note), `None` for small sizes. Hosts that know the
/// schemes they will derive use [`check_schemes`].
pub fn check(file: &str, src: &str, sizes: &[(String, i64)]) -> Result<Option<Estimate>, String> {
    let Some(e) = estimate(file, src, sizes) else {
        return Ok(None);
    };
    within(file, vec![e], limit_seconds()).map(|mut e| e.pop())
}

/// The estimated seconds of all `estimates` together.
pub fn total_seconds(estimates: &[Estimate]) -> f64 {
    estimates.iter().map(|e| e.seconds).sum()
}

fn refusal(file: &str, estimates: &[Estimate], limit: f64) -> String {
    let how = "set HAMEL_MAX_DERIVE_SECONDS to allow more";
    let instead = match estimates.len() {
        1 => "choose a smaller size, or the maximal-coordinate form of a chain, whose derivation grows slowly",
        _ => "choose a smaller size, fewer schemes, or the maximal-coordinate form of a chain, whose derivation grows slowly",
    };
    match estimates {
        [e] => format!(
            "{file}: deriving the model would take {e}, more than the limit of {} ({how}); {instead}",
            human_duration(limit)
        ),
        _ => {
            let (n, v) = &estimates[0].size;
            let each: Vec<String> = estimates.iter().map(Estimate::to_string).collect();
            format!(
                "{file}: deriving the model would take about {} at {n} = {v} for {} schemes, more than the limit of {} ({how}); \
                 {instead}. Each: {}",
                human_duration(total_seconds(estimates)),
                estimates.len(),
                human_duration(limit),
                each.join("; ")
            )
        }
    }
}

/// Most unknowns of a derived step sized at compile time. Such a step's
/// Newton workspace holds the `n × n` Jacobian as a fixed-size array, in the
/// stepper, which lives on the caller's stack and moves through a few frames
/// on the way there. Measured: the 24-link director chain's stepper (240
/// unknowns, a 0.46 MB matrix) steps on a 4 MiB stack but not on 2 MiB; the
/// 64-link one (640 unknowns) overflowed the main thread's 8 MiB. Above this
/// (a 1 MiB matrix) the derive emits a step sized at run time instead, as
/// the JIT's: `DynState`, `DynStepper`, its vectors and banded LU on the heap.
pub const MAX_FIXED_UNKNOWNS: usize = 362;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scheme::Kinematics;

    const CHAIN: &str = include_str!("../../models/spherical_chain.hamel");

    fn n(v: i64) -> Vec<(String, i64)> {
        vec![("N".into(), v)]
    }

    #[test]
    fn small_sizes_are_not_probed() {
        assert_eq!(estimate("chain", CHAIN, &n(PROBE_ABOVE)), None);
        assert_eq!(estimate("chain", CHAIN, &[]), None);
        assert_eq!(
            check_schemes("chain", CHAIN, &n(PROBE_ABOVE), &Scheme::LIST),
            Ok(Vec::new())
        );
    }

    #[test]
    fn the_estimate_is_of_the_scheme_asked_in_the_form_it_takes() {
        let sizes = n(40);
        let averaged = Scheme::Hamel(Kinematics::Averaged);
        // RATTLE needs generalized coordinates: the director chain has none,
        // so there is nothing to estimate (its derivation says why).
        assert_eq!(estimate_scheme("chain", CHAIN, &sizes, Scheme::Rattle), None);
        // One estimate per scheme listed that applies, in their order, a
        // repeated scheme counted twice (and probed once).
        let asked = [averaged, Scheme::Rattle, Scheme::DEFAULT, averaged];
        let all = check_schemes("chain", CHAIN, &sizes, &asked).unwrap();
        assert_eq!(
            all.iter().map(|e| e.scheme).collect::<Vec<_>>(),
            [averaged, Scheme::DEFAULT, averaged]
        );
        assert_eq!(all[0], all[2]);
        // At 40 links `Auto` keeps the tableau (6 members a link) of both
        // discrete Hamel steps: their probes derived the sparse steps.
        let at_40 = crate::model::load_with_sizes("chain", CHAIN, &sizes).unwrap();
        assert!(TableauChoice::Auto.keeps(&at_40));
        let (a, m) = (&all[0], &all[1]);
        assert!(m.tableau && a.tableau);
        assert!(
            m.to_string()
                .contains("at N = 40 for hamel_midpoint's sparse step (measured"),
            "{m}"
        );
        assert!(
            a.to_string()
                .contains("at N = 40 for hamel_averaged's sparse step (measured"),
            "{a}"
        );
        for e in [a, m] {
            assert_eq!(e.size, ("N".to_string(), 40));
            // 8 and 16 links, or a doubling higher where those derive fast
            assert_eq!(e.probes[1].0, 2 * e.probes[0].0);
            assert!(e.probes[0].0 >= PROBE_ABOVE / 2 && e.probes[1].0 < 40);
            // Past the upper probe the time grows at least as its exponent says.
            let (t_hi, hi) = (e.probes[1].1, e.probes[1].0 as f64);
            assert!(e.seconds >= t_hi * (40.0 / hi).powf(e.exponent), "{e}");
        }
    }

    #[test]
    fn the_forms_a_scheme_derives_are_what_auto_chooses() {
        let small = crate::model::load_with_sizes("chain", CHAIN, &n(4)).unwrap();
        let large = crate::model::load_with_sizes("chain", CHAIN, &n(40)).unwrap();
        for s in Scheme::LIST {
            assert!(!s.keeps_tableau(&small, TableauChoice::Auto), "{s}");
            assert_eq!(
                s.keeps_tableau(&large, TableauChoice::Auto),
                matches!(s, Scheme::Hamel(_)),
                "{s}"
            );
            assert!(!s.keeps_tableau(&large, TableauChoice::Substitute), "{s}");
        }
        assert!(Scheme::DEFAULT.keeps_tableau(&small, TableauChoice::Keep));
    }

    #[test]
    fn the_growth_steepens_past_the_probes() {
        // At the upper probe, the time measured there.
        assert_eq!(extrapolate(2.0, 16, 16, 3.0), 2.0);
        // One doubling past it: the exponent of that doubling is the probes'
        // risen by one step.
        let one = extrapolate(2.0, 16, 32, 3.0);
        assert!((one / 2.0 - 2f64.powf(3.0 + STEEPENING)).abs() < 1e-12, "{one}");
        // Two: each doubling steeper than the one before.
        let two = extrapolate(2.0, 16, 64, 3.0);
        assert!((two / one - 2f64.powf(3.0 + 2.0 * STEEPENING)).abs() < 1e-12, "{two}");
    }

    #[test]
    fn the_estimate_reads_as_a_sentence() {
        let e = Estimate {
            scheme: Scheme::Hamel(Kinematics::Averaged),
            tableau: false,
            size: ("N".into(), 200),
            probes: [(8, 0.2), (16, 1.8)],
            exponent: 3.2,
            seconds: 5100.0,
        };
        assert_eq!(
            e.to_string(),
            "about 85 min at N = 200 for hamel_averaged (measured 0.20 s at N = 8 and 1.80 s at N = 16: \
             time ∝ N^3.2 there, steepening to N^4.2 at N = 200)"
        );
        let sparse = Estimate {
            scheme: Scheme::DEFAULT,
            tableau: true,
            ..e.clone()
        };
        assert!(sparse
            .to_string()
            .starts_with("about 85 min at N = 200 for hamel_midpoint's sparse step (measured"));
        // Refused together, where each is within the limit but not their
        // sum: the total, then each.
        let both = within("chain.hamel", vec![sparse.clone(), e.clone()], 6000.0).unwrap_err();
        assert!(
            both.starts_with("chain.hamel: deriving the model would take about 3 h at N = 200 for 2 schemes, more than the limit of 100 min"),
            "{both}"
        );
        assert!(both.ends_with(&format!("Each: {sparse}; {e}")), "{both}");
        assert_eq!(within("chain.hamel", vec![e.clone()], 6000.0), Ok(vec![e.clone()]));
        assert_eq!(within("chain.hamel", vec![], 1e-9), Ok(vec![]));
        assert!(
            refusal("chain.hamel", std::slice::from_ref(&e), 600.0).starts_with(&format!(
                "chain.hamel: deriving the model would take {e}, more than the limit of 10 min"
            ))
        );
    }
}
