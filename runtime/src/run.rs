//! Fixed-step runs with monitoring of every invariant at every step.

use crate::error::StepError;
use crate::monitor::Monitor;
use crate::newton::NewtonStats;
use crate::system::{State, StepSystem, Stepper};

/// What a run measured.
#[derive(Clone, Debug)]
pub struct RunSummary {
    /// steps taken
    pub steps: u64,
    /// step size
    pub h: f64,
    /// errors of energy, invariants and constraints over the run (initial state included)
    pub monitor: Monitor,
    /// Newton iteration counts
    pub newton: NewtonStats,
}

/// Takes `steps` steps of size `h` from `state`, monitoring invariants after each,
/// and calls `visit` with every state (the initial one included).
/// On a failed step the error is returned and `state` holds the last good state.
pub fn simulate<S, const NZ: usize, const NX: usize>(
    sys: &S,
    state: &mut State<NZ, NX>,
    h: f64,
    steps: u64,
    visit: impl FnMut(&State<NZ, NX>),
) -> Result<RunSummary, StepError>
where
    S: StepSystem<NZ, NX>,
{
    simulate_with(Stepper::new(sys, h)?, state, steps, visit)
}

/// [`simulate`] with a configured stepper (Newton options, compensated summation).
pub fn simulate_with<S, const NZ: usize, const NX: usize>(
    mut stepper: Stepper<'_, S, NZ, NX>,
    state: &mut State<NZ, NX>,
    steps: u64,
    mut visit: impl FnMut(&State<NZ, NX>),
) -> Result<RunSummary, StepError>
where
    S: StepSystem<NZ, NX>,
{
    let sys = stepper.system();
    let h = stepper.h();
    let info = sys.invariant_info();
    let mut monitor = Monitor::new(info);
    let mut values = vec![0.0; info.len()];
    let observe = |st: &State<NZ, NX>, values: &mut Vec<f64>, monitor: &mut Monitor| {
        sys.invariants_into(&st.z, values)
            .map_err(|reason| StepError::Observation { step: st.step, reason })?;
        monitor.observe(values);
        Ok::<(), StepError>(())
    };
    observe(state, &mut values, &mut monitor)?;
    visit(state);
    for _ in 0..steps {
        stepper.step(state)?;
        observe(state, &mut values, &mut monitor)?;
        visit(state);
    }
    Ok(RunSummary {
        steps,
        h,
        monitor,
        newton: stepper.stats,
    })
}
