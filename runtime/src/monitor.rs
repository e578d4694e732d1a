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
    /// `max |I − I₀| / |I₀|` (for constraints, and where `I₀ = 0`: the absolute error)
    pub max_rel_error: f64,
}

/// Tracks the largest deviation of each quantity from its initial value.
#[derive(Clone, Debug)]
pub struct Monitor {
    reports: Vec<InvariantReport>,
    started: bool,
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
            })
            .collect();
        Self {
            reports,
            started: false,
        }
    }

    /// Records the values at one state (the first call fixes the initial values).
    pub fn observe(&mut self, values: &[f64]) {
        for (r, &v) in self.reports.iter_mut().zip(values) {
            if !self.started {
                r.initial = v;
            }
            r.min = r.min.min(v);
            r.max = r.max.max(v);
            let abs = match r.kind {
                InvariantKind::Constraint => v.abs(),
                _ => (v - r.initial).abs(),
            };
            let rel = match r.kind {
                InvariantKind::Constraint => abs,
                _ if r.initial != 0.0 => abs / r.initial.abs(),
                _ => abs,
            };
            r.max_abs_error = r.max_abs_error.max(abs);
            r.max_rel_error = r.max_rel_error.max(rel);
        }
        self.started = true;
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
}
