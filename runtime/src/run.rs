//! Fixed-step runs with monitoring of every invariant at every step.

use nalgebra::{DefaultAllocator, Dim};

use crate::error::StepError;
use crate::kernels::{Alloc, Kernels};
use crate::monitor::Monitor;
use crate::newton::NewtonStats;
use crate::state::StateOf;
use crate::system::StepperOf;

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
pub fn simulate<S, Z, X>(
    sys: &S,
    state: &mut StateOf<Z, X>,
    h: f64,
    steps: u64,
    visit: impl FnMut(&StateOf<Z, X>),
) -> Result<RunSummary, StepError>
where
    S: Kernels<Z, X> + ?Sized,
    Z: Dim,
    X: Dim,
    DefaultAllocator: Alloc<Z, X>,
{
    simulate_with(StepperOf::new(sys, h)?, state, steps, visit)
}

/// [`simulate`] with a configured stepper (Newton options, compensated summation).
pub fn simulate_with<S, Z, X>(
    mut stepper: StepperOf<'_, S, Z, X>,
    state: &mut StateOf<Z, X>,
    steps: u64,
    mut visit: impl FnMut(&StateOf<Z, X>),
) -> Result<RunSummary, StepError>
where
    S: Kernels<Z, X> + ?Sized,
    Z: Dim,
    X: Dim,
    DefaultAllocator: Alloc<Z, X>,
{
    let sys = stepper.system();
    let h = stepper.h();
    let info = sys.invariant_info();
    let mut monitor = Monitor::new(&info);
    let mut values = vec![0.0; info.len()];
    let observe = |st: &StateOf<Z, X>, values: &mut Vec<f64>, monitor: &mut Monitor| {
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
