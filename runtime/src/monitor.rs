//! Monitoring of invariants and constraint residuals along a run.

use crate::kernels::InvariantKind;

/// Error summary of one monitored quantity.
#[derive(Clone, Debug, PartialEq)]
pub struct InvariantReport {
    /// its name
    pub name: String,
    /// its kind
    pub kind: InvariantKind,
    /// value at the first observed state
    pub initial: f64,
    /// smallest value seen
    pub min: f64,
    /// largest value seen
    pub max: f64,
    /// `max |I − I₀|` (for constraints: `max |c|`)
    pub max_abs_error: f64,
    /// `max |I − I₀| / |I₀|` (for constraints, and where `I₀ = 0`: the absolute
    /// error; for a forced model's energy balance: relative to the largest
    /// |E| its energy reached, where that exceeds |I₀|)
    pub max_rel_error: f64,
    /// index of the first observation (for runs: the step) at which the value
    /// was NaN or infinite; from there on every error above is NaN, so that a
    /// summary never reports a finite error for a run that produced non-finite values
    pub non_finite_at: Option<u64>,
}

/// Tracks the largest deviation of each quantity from its initial value.
#[derive(Clone, Debug)]
pub struct Monitor {
    reports: Vec<InvariantReport>,
    started: bool,
    observed: u64,
    conditioning: Option<Conditioning>,
    /// the largest |E| of a forced model's energy seen so far (0: none): the
    /// scale its energy balance is judged against
    energy_scale: f64,
    /// where a forced model's energy is among the quantities
    forced_energy: Option<usize>,
    /// the largest kinetic energy seen (0: none observed), see
    /// [`Monitor::observe_kinetic`]
    kinetic_max: f64,
}

/// The condition number of the constrained kinetic metric along a run (see
/// [`Monitor::observe_conditioning`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Conditioning {
    /// at the first observation
    pub initial: f64,
    /// the largest seen (infinite: singular)
    pub max: f64,
    /// the step at which the largest was seen
    pub max_at: u64,
}

/// Bounds beyond which a run is flagged as not trustworthy (see [`Monitor::warnings`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Health {
    /// largest relative energy error accepted (default 0.1: no structure-preserving
    /// scheme at a step size that resolves the motion comes near it)
    pub energy_rel: f64,
    /// largest constraint residual accepted (default 1e-6; the hidden velocity
    /// level of holonomic constraints, `… (velocity)`, is not judged)
    pub constraint_abs: f64,
    /// largest growth of the kinetic metric's condition number over its
    /// initial value accepted (default 100: a pass near a singularity of the
    /// coordinates, e.g. the pole of spherical angles, grows it without bound
    /// while the models' regular motions change it by a factor below 10)
    pub conditioning_growth: f64,
    /// relative energy error beyond which a pass near a singularity (see
    /// `conditioning_growth`) counts as unresolved (default 1e-3: a planar
    /// swing through the pole of spherical angles at h = 0.1 keeps 8.6e-6; a
    /// near-polar pass from θ = 0.5 with φ' = 0.01 keeps 1.3e-4 at h = 0.001,
    /// its azimuth turning at most 0.11 rad a step, with clean h² scaling,
    /// and loses 1.1e-2 at h = 0.01, where the azimuth turns 0.94 rad a step
    /// and the pass takes three)
    pub energy_near_singularity: f64,
}

impl Default for Health {
    fn default() -> Self {
        Self {
            energy_rel: 0.1,
            constraint_abs: 1e-6,
            conditioning_growth: 100.0,
            energy_near_singularity: 1e-3,
        }
    }
}

impl Monitor {
    /// A monitor for the quantities described by `info`.
    pub fn new<N: AsRef<str>>(info: &[(N, InvariantKind)]) -> Self {
        let reports = info
            .iter()
            .map(|(name, kind)| InvariantReport {
                name: name.as_ref().to_string(),
                kind: *kind,
                initial: f64::NAN,
                min: f64::INFINITY,
                max: f64::NEG_INFINITY,
                max_abs_error: 0.0,
                max_rel_error: 0.0,
                non_finite_at: None,
            })
            .collect();
        Self {
            reports,
            started: false,
            observed: 0,
            conditioning: None,
            energy_scale: 0.0,
            forced_energy: info.iter().position(|(_, k)| *k == InvariantKind::ForcedEnergy),
            kinetic_max: 0.0,
        }
    }

    /// Records the kinetic energy `T` at a state (hosts take it now and
    /// then). An energy error is judged against `max(|E₀|, T_max)`, not
    /// `|E₀|` alone: a pendulum released from the horizontal, a Kepler
    /// parabola or a zero-energy throw starts with `E₀` at round-off, where
    /// the ratio to `|E₀|` says nothing about the motion.
    pub fn observe_kinetic(&mut self, t: f64) {
        if t.is_finite() {
            self.kinetic_max = self.kinetic_max.max(t.abs());
        }
    }

    /// The largest kinetic energy observed (0: none), see
    /// [`Monitor::observe_kinetic`].
    pub fn kinetic_max(&self) -> f64 {
        self.kinetic_max
    }

    /// The energy error a verdict judges for `r` (an energy): its largest
    /// relative error, or where the motion's kinetic energy exceeds the
    /// energy's own scale, the largest change relative to that (see
    /// [`Monitor::observe_kinetic`]). NaN stays NaN.
    pub fn judged_energy_error(&self, r: &InvariantReport) -> f64 {
        if r.max_rel_error.is_nan() || self.kinetic_max == 0.0 {
            return r.max_rel_error;
        }
        r.max_rel_error.min(r.max_abs_error / self.kinetic_max)
    }

    /// Records the condition number of the constrained kinetic metric at
    /// `step` (the first call fixes the initial value). Large growth means
    /// the motion passed near a singularity of the coordinates, where a step
    /// of fixed size resolves the motion badly (see [`Health::conditioning_growth`]).
    pub fn observe_conditioning(&mut self, step: u64, cond: f64) {
        let cond = if cond.is_nan() { f64::INFINITY } else { cond };
        match &mut self.conditioning {
            None => {
                self.conditioning = Some(Conditioning {
                    initial: cond,
                    max: cond,
                    max_at: step,
                })
            }
            Some(c) if cond > c.max => {
                c.max = cond;
                c.max_at = step;
            }
            Some(_) => {}
        }
    }

    /// The conditioning seen, if it was observed.
    pub fn conditioning(&self) -> Option<Conditioning> {
        self.conditioning
    }

    /// Records the values at one state (the first call fixes the initial values).
    ///
    /// This runs after every step of a run, so it divides only where a
    /// relative error can have grown: `|I − I₀| / |I₀|` is monotone in
    /// `|I − I₀|` (correctly rounded division by a fixed positive number), so
    /// its largest value comes with the largest absolute error; only a
    /// forced model's energy balance, judged against a scale that grows,
    /// is divided at every state.
    pub fn observe(&mut self, values: &[f64]) {
        self.observe_values(values);
    }

    /// [`Monitor::observe`] for the state of step `step` of a run that may
    /// not observe every step: a value found non-finite is reported from
    /// that step, not from the count of observations.
    pub fn observe_at(&mut self, step: u64, values: &[f64]) {
        self.observed = step;
        self.observe_values(values);
    }

    fn observe_values(&mut self, values: &[f64]) {
        // A forced model's energy balance keeps to round-off (or to the
        // scheme's O(h²)) of the energy the run reaches, not of E₀: a driven
        // or negatively damped model's energy grows far beyond it.
        if let Some(i) = self.forced_energy {
            let v = values[i];
            if v.is_finite() {
                self.energy_scale = self.energy_scale.max(v.abs());
            }
        }
        if !self.started {
            for (r, &v) in self.reports.iter_mut().zip(values) {
                r.initial = v;
            }
            self.started = true;
        }
        let scale = self.energy_scale;
        for (r, &v) in self.reports.iter_mut().zip(values) {
            if r.non_finite_at.is_some() {
                continue;
            }
            if !(v.is_finite() && r.initial.is_finite()) {
                r.non_finite_at = Some(self.observed);
                r.min = f64::NAN;
                r.max = f64::NAN;
                r.max_abs_error = f64::NAN;
                r.max_rel_error = f64::NAN;
                continue;
            }
            r.min = r.min.min(v);
            r.max = r.max.max(v);
            let residual = r.kind.is_residual();
            let abs = if residual { v.abs() } else { (v - r.initial).abs() };
            let scaled = r.kind == InvariantKind::Energy && scale > r.initial.abs();
            if abs > r.max_abs_error || scaled {
                let rel = match r.kind {
                    _ if residual => abs,
                    _ if scaled => abs / scale,
                    _ if r.initial != 0.0 => abs / r.initial.abs(),
                    _ => abs,
                };
                r.max_abs_error = r.max_abs_error.max(abs);
                r.max_rel_error = r.max_rel_error.max(rel);
            }
        }
        self.observed += 1;
    }

    /// Whether every quantity stayed finite and within `health`'s bounds.
    pub fn is_healthy(&self, health: &Health) -> bool {
        self.warnings(health).is_empty()
    }

    /// What makes the run untrustworthy, one sentence each (empty: nothing):
    /// a quantity that became NaN or infinite (with the observation index, the
    /// step of a run), an energy error or a constraint residual beyond `health`.
    ///
    /// A pass near a singularity of the coordinates (the metric's condition
    /// number grown beyond [`Health::conditioning_growth`]) is a warning only
    /// where the energy shows it was not resolved (an error beyond
    /// [`Health::energy_near_singularity`]): a planar swing of the spherical
    /// pendulum in angles crosses the pole with its energy error scaling
    /// cleanly as h², and is not flagged.
    pub fn warnings(&self, health: &Health) -> Vec<String> {
        let mut out = Vec::new();
        let energy_error = self
            .reports
            .iter()
            .filter(|r| r.kind == InvariantKind::Energy)
            .map(|r| self.judged_energy_error(r))
            .fold(0.0f64, |a, b| if b.is_nan() { f64::INFINITY } else { a.max(b) });
        // A drift off holonomic constraints changes the energy too; its
        // message names the cause and the remedy.
        let drift = self.reports.iter().find(|r| {
            r.kind == InvariantKind::DriftingConstraint
                && r.non_finite_at.is_none()
                && r.max_abs_error > health.constraint_abs
        });
        let singular_pass = self.conditioning.filter(|c| {
            c.max > health.conditioning_growth * c.initial && energy_error > health.energy_near_singularity
        });
        for r in &self.reports {
            if let Some(k) = r.non_finite_at {
                out.push(format!("`{}` is not finite from step {k} on", r.name));
                continue;
            }
            match r.kind {
                // Near a singularity, the message below names the cause.
                InvariantKind::Energy if self.judged_energy_error(r) > health.energy_rel && singular_pass.is_none() && drift.is_none() => out.push(format!(
                    "the energy changed by {:.3e} (relative), more than {:.1e}: the step size does not resolve the motion, or the run passed near a singularity of the coordinates",
                    self.judged_energy_error(r), health.energy_rel
                )),
                // The hidden velocity level of holonomic constraints
                // (`HiddenConstraint`) is reported, not judged:
                // energy–momentum does not impose it, by design.
                InvariantKind::Constraint if r.max_abs_error > health.constraint_abs => {
                    out.push(format!(
                        "constraint `{}` is violated by {:.3e}, more than {:.1e}",
                        r.name, r.max_abs_error, health.constraint_abs
                    ))
                }
                InvariantKind::DriftingConstraint if r.max_abs_error > health.constraint_abs => out.push(format!(
                    "constraint `{}` drifted by {:.3e}, more than {:.1e} (energy error {:.3e}): index-reduced Störmer–Verlet imposes holonomic constraints only through their second derivative, so the motion drifts off them; use rattle or energy_momentum, which keep them to round-off",
                    r.name, r.max_abs_error, health.constraint_abs, energy_error
                )),
                _ => {}
            }
        }
        if let Some(c) = singular_pass {
            out.push(format!(
                "the energy changed by {:.3e} (relative) and at step {} the kinetic metric's condition number reached {:.1e}, {:.0}× its initial {:.1e}: the run passed near a singularity of the coordinates (such as the pole of spherical angles), where the step size does not resolve the motion; use coordinates without it (a frame or directors) or a smaller step",
                energy_error,
                c.max_at,
                c.max,
                c.max / c.initial,
                c.initial
            ));
        }
        out
    }

    /// The summaries, in the model's order.
    pub fn reports(&self) -> &[InvariantReport] {
        &self.reports
    }

    /// The summary of the quantity called `name`.
    pub fn get(&self, name: &str) -> Option<&InvariantReport> {
        self.reports.iter().find(|r| r.name == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tracks_relative_and_constraint_errors() {
        static INFO: [(&str, InvariantKind); 2] = [("E", InvariantKind::Energy), ("c", InvariantKind::Constraint)];
        let mut m = Monitor::new(&INFO);
        m.observe(&[2.0, 1e-16]);
        m.observe(&[2.002, -3e-16]);
        m.observe(&[1.999, 0.0]);
        let e = m.get("E").unwrap();
        assert!((e.max_abs_error - 0.002).abs() < 1e-15);
        assert!((e.max_rel_error - 0.001).abs() < 1e-15);
        assert_eq!(m.get("c").unwrap().max_abs_error, 3e-16);
    }

    #[test]
    fn non_finite_values_are_never_summarized_as_finite_errors() {
        static INFO: [(&str, InvariantKind); 2] = [("E", InvariantKind::Energy), ("J", InvariantKind::Monitored)];
        let mut m = Monitor::new(&INFO);
        m.observe(&[2.0, 1.0]);
        m.observe(&[2.1, 1.0]);
        m.observe(&[f64::NAN, 1.0]);
        m.observe(&[2.0, 1.0]);
        let e = m.get("E").unwrap();
        assert_eq!(e.non_finite_at, Some(2));
        assert!(e.max_rel_error.is_nan() && e.max_abs_error.is_nan());
        let w = m.warnings(&Health::default());
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("`E` is not finite from step 2"), "{w:?}");
        // NaN from the start is flagged too, not reported as error 0.
        let mut m = Monitor::new(&INFO);
        m.observe(&[f64::NAN, 1.0]);
        m.observe(&[f64::NAN, 1.0]);
        assert_eq!(m.get("E").unwrap().non_finite_at, Some(0));
        assert!(!m.is_healthy(&Health::default()));
    }

    #[test]
    fn a_resolved_pass_near_a_singularity_is_not_flagged_an_unresolved_one_is() {
        static INFO: [(&str, InvariantKind); 1] = [("energy", InvariantKind::Energy)];
        let run = |errors: &[f64]| {
            let mut m = Monitor::new(&INFO);
            for (k, e) in errors.iter().enumerate() {
                m.observe(&[-83.0 * (1.0 + e)]);
                m.observe_conditioning(k as u64, if k == 2 { 4e7 } else { 4.0 });
            }
            m.warnings(&Health::default())
        };
        assert!(run(&[0.0, 1e-8, 8.6e-6, 1e-8]).is_empty());
        // the near-polar pass at h = 0.001 (h² regime, once failed)
        assert!(run(&[0.0, 1e-8, 1.3e-4, 1e-8]).is_empty());
        let w = run(&[0.0, 1e-8, 1.2e-2, 1e-3]);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].contains("singularity of the coordinates") && w[0].contains("1.200e-2"),
            "{w:?}"
        );
        // Beyond the energy bound too: one message, naming the singularity.
        let w = run(&[0.0, 0.5, 0.5]);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("singularity"), "{w:?}");
    }

    #[test]
    fn a_forced_energy_balance_is_judged_against_the_energy_the_run_reaches() {
        static INFO: [(&str, InvariantKind); 2] = [
            ("energy", InvariantKind::ForcedEnergy),
            ("energy balance", InvariantKind::Energy),
        ];
        // A driven model: E grows from 1 to 1e4, the balance keeps to 1e-5 of E.
        let mut m = Monitor::new(&INFO);
        for k in 0..5 {
            let e = 10f64.powi(k);
            m.observe(&[e, 1.0 + 1e-5 * e]);
        }
        assert!(m.warnings(&Health::default()).is_empty());
        let b = m.get("energy balance").unwrap();
        assert!((b.max_rel_error - 1e-5).abs() < 1e-9, "{}", b.max_rel_error);
        // The same defect against a constant energy is flagged.
        let mut m = Monitor::new(&INFO);
        m.observe(&[1.0, 1.0]);
        m.observe(&[1.0, 1.2]);
        assert_eq!(m.warnings(&Health::default()).len(), 1);
    }

    #[test]
    fn dividing_only_at_a_new_largest_error_gives_every_step_s_largest_ratio() {
        // The ratio taken at every state, as a reference, against the
        // monitor's (which divides only where the absolute error grew).
        static INFO: [(&str, InvariantKind); 3] = [
            ("E", InvariantKind::Energy),
            ("J", InvariantKind::Momentum),
            ("c", InvariantKind::Constraint),
        ];
        let mut m = Monitor::new(&INFO);
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut noise = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed >> 11) as f64 / (1u64 << 53) as f64 - 0.5
        };
        let first = [-3.7, 0.3, 0.0];
        let mut rel = [0.0f64; 3];
        for k in 0..2000 {
            let v = if k == 0 {
                first
            } else {
                [
                    first[0] * (1.0 + 1e-3 * noise()),
                    first[1] + 1e-9 * noise(),
                    1e-14 * noise(),
                ]
            };
            m.observe(&v);
            rel[0] = rel[0].max((v[0] - first[0]).abs() / first[0].abs());
            rel[1] = rel[1].max((v[1] - first[1]).abs() / first[1].abs());
            rel[2] = rel[2].max(v[2].abs());
        }
        for (r, want) in m.reports().iter().zip(rel) {
            assert_eq!(r.max_rel_error, want, "{}", r.name);
        }
    }

    #[test]
    fn an_energy_at_round_off_is_judged_against_the_motion_s_kinetic_energy() {
        static INFO: [(&str, InvariantKind); 1] = [("energy", InvariantKind::Energy)];
        // A pendulum released from the horizontal: E₀ = −6e-16, the scheme
        // keeps E to 2e-3 while the bob reaches T = 9.8.
        let run = |kinetic: &[f64]| {
            let mut m = Monitor::new(&INFO);
            m.observe(&[-6e-16]);
            m.observe(&[2e-3]);
            for &t in kinetic {
                m.observe_kinetic(t);
            }
            m.warnings(&Health::default())
        };
        assert!(run(&[0.0, 9.8]).is_empty());
        // Without the kinetic energy, the ratio to E₀ is all there is.
        assert_eq!(run(&[]).len(), 1);
        // An error of the order of the motion's energy is flagged either way.
        let mut m = Monitor::new(&INFO);
        m.observe(&[-6e-16]);
        m.observe(&[5.0]);
        m.observe_kinetic(9.8);
        assert!(m.warnings(&Health::default())[0].contains("energy changed by 5.102e-1"));
    }

    #[test]
    fn an_energy_jump_is_flagged() {
        static INFO: [(&str, InvariantKind); 1] = [("energy", InvariantKind::Energy)];
        let mut m = Monitor::new(&INFO);
        m.observe(&[-8.46]);
        m.observe(&[1156.0]);
        assert!(m.warnings(&Health::default())[0].contains("energy changed by"));
    }
}
