//! What a host sets (the options) and what it reads back (the statistics).

/// Settings of the Newton solve.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NewtonOptions {
    /// iteration bound; past it the step fails
    pub max_iterations: usize,
    /// relative tolerance of the stopping rule (machine epsilon by default)
    pub tolerance: f64,
    /// a stalled iteration (updates no longer decreasing) counts as converged when its
    /// update is below `stall_tolerance · max(‖x‖, ‖z‖)`: the round-off floor of badly
    /// scaled unknowns, such as multipliers at small step sizes, lies well above `ε‖x‖`
    pub stall_tolerance: f64,
    /// simplified Newton: factor the Jacobian once per step (at the predictor) and
    /// reuse it, refreshing it only when the iteration contracts slowly; cheaper
    /// iterations, linear instead of quadratic convergence
    pub simplified: bool,
    /// chord iterations: keep the first factorization of a step when the
    /// contraction predicted from the previous step is fast and the residuals
    /// it costs are cheaper than the factorizations it saves (the decision
    /// weighs the kernels' operation counts, so two models whose kernels
    /// compute the same values at different costs may round differently)
    pub chord: bool,
}

impl Default for NewtonOptions {
    fn default() -> Self {
        Self {
            max_iterations: 30,
            tolerance: f64::EPSILON,
            stall_tolerance: 1e-8,
            simplified: false,
            chord: true,
        }
    }
}

impl NewtonOptions {
    /// Refuses settings no solve can honour: a tolerance that is not a
    /// positive finite number, or an iteration bound of 0. The error names
    /// the setting by its field name, so hosts can rephrase it in their own
    /// spelling (a flag, a keyword argument).
    pub fn check(&self) -> Result<(), String> {
        if !(self.tolerance.is_finite() && self.tolerance > 0.0) {
            return Err(format!(
                "tolerance = {} must be a positive finite number",
                self.tolerance
            ));
        }
        if !(self.stall_tolerance.is_finite() && self.stall_tolerance > 0.0) {
            return Err(format!(
                "stall_tolerance = {} must be a positive finite number",
                self.stall_tolerance
            ));
        }
        if self.max_iterations == 0 {
            return Err("max_iterations = 0 must be at least 1".to_string());
        }
        Ok(())
    }
}

/// Iteration counts over a run.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct NewtonStats {
    /// steps solved
    pub steps: u64,
    /// iterations over all steps
    pub iterations: u64,
    /// largest iteration count of one step
    pub max_iterations: usize,
    /// Jacobian factorizations over all steps (fewer than iterations where
    /// Newton keeps factors: at round-off, in chord iterations, simplified)
    pub factorizations: u64,
    /// steps whose solve failed from the extrapolated guess and succeeded
    /// when started again from the scheme's own predictor, with nothing
    /// remembered (see `newton::step::advance`); counted in the other
    /// figures by that second solve
    pub restarts: u64,
}

impl NewtonStats {
    #[inline]
    pub(crate) fn record(&mut self, solved: Solved) {
        self.steps += 1;
        self.iterations += solved.iterations as u64;
        self.factorizations += solved.factorizations as u64;
        self.max_iterations = self.max_iterations.max(solved.iterations);
    }

    /// Mean factorizations per step.
    pub fn factorizations_mean(&self) -> f64 {
        if self.steps == 0 {
            0.0
        } else {
            self.factorizations as f64 / self.steps as f64
        }
    }

    /// Mean iterations per step.
    pub fn mean(&self) -> f64 {
        if self.steps == 0 {
            0.0
        } else {
            self.iterations as f64 / self.steps as f64
        }
    }
}

/// What a successful solve took.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Solved {
    pub(crate) iterations: usize,
    pub(crate) factorizations: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_pass_the_check_and_bad_values_are_named() {
        assert_eq!(NewtonOptions::default().check(), Ok(()));
        for tol in [0.0, -1e-12, f64::NAN, f64::INFINITY] {
            let opt = NewtonOptions {
                tolerance: tol,
                ..Default::default()
            };
            let err = opt.check().unwrap_err();
            assert!(err.starts_with("tolerance = "), "{err}");
        }
        let opt = NewtonOptions {
            max_iterations: 0,
            ..Default::default()
        };
        assert!(opt.check().unwrap_err().starts_with("max_iterations = 0"));
        let opt = NewtonOptions {
            stall_tolerance: f64::NAN,
            ..Default::default()
        };
        assert!(opt.check().unwrap_err().starts_with("stall_tolerance = "));
    }

    #[test]
    fn stats_record_means_and_maxima() {
        let mut s = NewtonStats::default();
        assert_eq!((s.mean(), s.factorizations_mean()), (0.0, 0.0));
        s.record(Solved {
            iterations: 3,
            factorizations: 2,
        });
        s.record(Solved {
            iterations: 1,
            factorizations: 1,
        });
        assert_eq!(
            (s.steps, s.iterations, s.max_iterations, s.factorizations),
            (2, 4, 3, 3)
        );
        assert_eq!((s.mean(), s.factorizations_mean()), (2.0, 1.5));
    }
}
