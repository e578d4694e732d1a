//! Fixed-step runs with monitoring of every invariant at every step.

use nalgebra::{DefaultAllocator, Dim};

use crate::error::StepError;
use crate::kernels::{Alloc, InvariantKind, Kernels};
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

/// Name of the quantity `E_k − Σ_{j<k} W_j` that runs of forced models monitor
/// in place of the energy (`W_j` the discrete work of the external forces over
/// step `j`): constant to round-off where the scheme's discrete energy balance
/// is exact (docs/schemes.md §8).
pub const ENERGY_BALANCE: &str = "energy balance";

/// The quantities a run of `sys` monitors, in order, with how each is judged:
/// the model's invariants, and for a forced model the energy balance
/// [`ENERGY_BALANCE`] last, judged in place of the energy (which is then only
/// recorded: forces change it).
pub fn monitored<S, Z, X>(sys: &S) -> Vec<(String, InvariantKind)>
where
    S: Kernels<Z, X> + ?Sized,
    Z: Dim,
    X: Dim,
    DefaultAllocator: Alloc<Z, X>,
{
    let forced = sys.forced();
    let mut info: Vec<(String, InvariantKind)> = sys
        .invariant_info()
        .into_iter()
        .map(|(n, k)| match k {
            InvariantKind::Energy if forced => (n.to_string(), InvariantKind::ForcedEnergy),
            _ => (n.to_string(), k),
        })
        .collect();
    if forced {
        info.push((ENERGY_BALANCE.to_string(), InvariantKind::Energy));
    }
    info
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
    stepper: StepperOf<'_, S, Z, X>,
    state: &mut StateOf<Z, X>,
    steps: u64,
    visit: impl FnMut(&StateOf<Z, X>),
) -> Result<RunSummary, StepError>
where
    S: Kernels<Z, X> + ?Sized,
    Z: Dim,
    X: Dim,
    DefaultAllocator: Alloc<Z, X>,
{
    simulate_controlled(stepper, state, steps, |_, _| {}, visit)
}

/// [`simulate_with`] for a model with control inputs: before each step,
/// `control(state, u)` sets the inputs `u` of the step from `state` (they
/// start at the stepper's current inputs): a schedule (`u` from
/// `state.step`), an array, or feedback (`u` from `state.z`).
pub fn simulate_controlled<S, Z, X>(
    mut stepper: StepperOf<'_, S, Z, X>,
    state: &mut StateOf<Z, X>,
    steps: u64,
    mut control: impl FnMut(&StateOf<Z, X>, &mut [f64]),
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
    let info = monitored(sys);
    let forced = sys.forced();
    let mut monitor = Monitor::new(&info);
    let mut values = vec![0.0; info.len()];
    let observe = |st: &StateOf<Z, X>, work: f64, values: &mut Vec<f64>, monitor: &mut Monitor| {
        sys.invariants_into(&st.z, values)
            .map_err(|reason| StepError::Observation { step: st.step, reason })?;
        if forced {
            let n = values.len();
            values[n - 1] = values[0] - work;
        }
        monitor.observe(values);
        Ok::<(), StepError>(())
    };
    observe(state, 0.0, &mut values, &mut monitor)?;
    visit(state);
    let mut u = stepper.inputs().to_vec();
    for _ in 0..steps {
        control(state, &mut u);
        stepper.step_with_inputs(state, &u)?;
        observe(state, stepper.work_done, &mut values, &mut monitor)?;
        visit(state);
    }
    Ok(RunSummary {
        steps,
        h,
        monitor,
        newton: stepper.stats,
    })
}
