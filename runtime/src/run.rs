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

/// Sets the last of a forced model's monitored `values` (see [`monitored`])
/// to its energy balance `E − Σ W` (the energy is first among the
/// invariants), `work` the discrete work of the forces so far; nothing for
/// a free model.
pub fn energy_balance(values: &mut [f64], forced: bool, work: f64) {
    if forced {
        let n = values.len();
        values[n - 1] = values[0] - work;
    }
}

/// What a host does around the run loop [`drive`]: sets each step's inputs,
/// evaluates the monitored quantities of each state, and takes each state
/// once monitored (records, sinks, progress, cancellation).
pub trait Host<Z: Dim, X: Dim>
where
    DefaultAllocator: Alloc<Z, X>,
{
    /// Sets the inputs `u` of the step from `state` (they hold the previous
    /// step's). Called at every state, the last included: its inputs are
    /// those a next step would take, which hosts record with it.
    fn control(&mut self, _state: &StateOf<Z, X>, _u: &mut [f64]) -> Result<(), StepError> {
        Ok(())
    }

    /// Writes the model's invariants at `state` into `values` (in the order
    /// of [`Kernels::invariant_info`]; a forced model's last slot, the energy
    /// balance, is left to the loop).
    fn evaluate(&mut self, state: &StateOf<Z, X>, values: &mut [f64]) -> Result<(), StepError>;

    /// The kinetic energy at `state`, whose invariants are `values` (energy
    /// first), if the host can tell: the loop hands it to
    /// [`Monitor::observe_kinetic`] at the first state and every
    /// [`KINETIC_EVERY`] steps, so that an energy near zero is judged against
    /// the motion's scale.
    fn kinetic(&mut self, _state: &StateOf<Z, X>, _values: &[f64]) -> Option<f64> {
        None
    }

    /// Whether the loop evaluates and monitors the state at `step` (the
    /// first and the last always are). A host that observes fewer states
    /// must observe every state it records or stops at, and every
    /// [`KINETIC_EVERY`]-th; the default observes every state.
    fn observes(&mut self, _step: u64) -> bool {
        true
    }

    /// Takes `state` once `monitor` has observed it, with its monitored
    /// values (in the order of [`monitored`]) and the inputs of the step from
    /// it; the host may observe more (the metric's conditioning). Returning
    /// `false` ends the run at this state (a host's cancellation).
    fn visit(
        &mut self,
        state: &StateOf<Z, X>,
        values: &[f64],
        u: &[f64],
        monitor: &mut Monitor,
    ) -> Result<bool, StepError>;
}

/// Steps between the kinetic energies a run loop takes (see
/// [`Host::kinetic`]): an energy evaluation at a state with the velocities
/// set to zero, rare enough to cost nothing per step.
pub const KINETIC_EVERY: u64 = 64;

/// The kinetic energy `E(q, ξ) − E(q, 0)` at a physical state (at time `t`) whose energy
/// is `energy` (the energy at zero velocity is the potential, for every
/// Lagrangian whose velocity terms are quadratic or linear), with `scratch`
/// for the invariants at `(q, 0)`.
pub fn kinetic_energy<S, Z, X>(sys: &S, t: f64, q: &[f64], energy: f64, zeros: &[f64], scratch: &mut [f64]) -> f64
where
    S: Kernels<Z, X> + ?Sized,
    Z: Dim,
    X: Dim,
    DefaultAllocator: Alloc<Z, X>,
{
    sys.invariants_of(t, q, zeros, scratch);
    energy - scratch[0]
}

/// How a run loop ended without a failed step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ended {
    /// every step asked for was taken
    Finished,
    /// the host stopped the run (see [`Host::visit`]) after this many steps
    Stopped(u64),
}

/// The run loop of every host (the runtime's [`simulate_controlled`], the
/// loader's runs, the CLI and Python on it): from `state`, `steps` steps,
/// each state's inputs set by `host.control`, its invariants by
/// `host.evaluate`, for a forced model the energy balance `E − Σ W` (in the
/// last slot, see [`ENERGY_BALANCE`]) added here, once, then everything
/// observed by `monitor` and handed to `host.visit`. `u` holds the inputs as
/// the loop goes (the failed step's on error). On a failed step the error is
/// returned and `state` holds the last good state.
pub fn drive<S, Z, X, R>(
    stepper: &mut StepperOf<'_, S, Z, X, R>,
    state: &mut StateOf<Z, X>,
    steps: u64,
    monitor: &mut Monitor,
    u: &mut [f64],
    host: &mut impl Host<Z, X>,
) -> Result<Ended, StepError>
where
    S: Kernels<Z, X> + ?Sized,
    R: std::ops::Deref<Target = S>,
    Z: Dim,
    X: Dim,
    DefaultAllocator: Alloc<Z, X>,
{
    let forced = stepper.kernels().forced();
    let mut values = vec![0.0; stepper.kernels().invariant_info().len() + usize::from(forced)];
    // Monitors `st` and hands it to the host; false: the host stops here.
    let mut observe = |st: &StateOf<Z, X>, work: f64, u: &mut [f64], values: &mut [f64]| {
        host.control(st, u)?;
        if st.step == 0 || st.step == steps || host.observes(st.step) {
            host.evaluate(st, values)?;
            if st.step % KINETIC_EVERY == 0 || st.step == steps {
                if let Some(t) = host.kinetic(st, values) {
                    monitor.observe_kinetic(t);
                }
            }
            energy_balance(values, forced, work);
            monitor.observe_at(st.step, values);
        }
        host.visit(st, values, u, monitor)
    };
    if !observe(state, 0.0, u, &mut values)? {
        return Ok(Ended::Stopped(0));
    }
    for k in 1..=steps {
        stepper.step_with_inputs(state, u)?;
        if !observe(state, stepper.work_done, u, &mut values)? && k < steps {
            return Ok(Ended::Stopped(k));
        }
    }
    Ok(Ended::Finished)
}

/// [`simulate_with`] for a model with control inputs: before each step,
/// `control(state, u)` sets the inputs `u` of the step from `state` (they
/// start at the stepper's current inputs): a schedule (`u` from
/// `state.step`), an array, or feedback (`u` from `state.z`). It is called
/// at the last state too (see [`Host::control`]).
pub fn simulate_controlled<S, Z, X>(
    mut stepper: StepperOf<'_, S, Z, X>,
    state: &mut StateOf<Z, X>,
    steps: u64,
    control: impl FnMut(&StateOf<Z, X>, &mut [f64]),
    visit: impl FnMut(&StateOf<Z, X>),
) -> Result<RunSummary, StepError>
where
    S: Kernels<Z, X> + ?Sized,
    Z: Dim,
    X: Dim,
    DefaultAllocator: Alloc<Z, X>,
{
    /// The closures of [`simulate_controlled`] as a [`Host`].
    struct Closures<'s, S: ?Sized, C, V> {
        sys: &'s S,
        control: C,
        visit: V,
    }
    impl<S, Z, X, C, V> Host<Z, X> for Closures<'_, S, C, V>
    where
        S: Kernels<Z, X> + ?Sized,
        Z: Dim,
        X: Dim,
        DefaultAllocator: Alloc<Z, X>,
        C: FnMut(&StateOf<Z, X>, &mut [f64]),
        V: FnMut(&StateOf<Z, X>),
    {
        fn control(&mut self, state: &StateOf<Z, X>, u: &mut [f64]) -> Result<(), StepError> {
            (self.control)(state, u);
            Ok(())
        }
        fn evaluate(&mut self, st: &StateOf<Z, X>, values: &mut [f64]) -> Result<(), StepError> {
            self.sys
                .invariants_into(&st.z, values)
                .map_err(|reason| StepError::Observation { step: st.step, reason })
        }
        fn kinetic(&mut self, st: &StateOf<Z, X>, values: &[f64]) -> Option<f64> {
            let (q, v) = self.sys.physical_state(&st.z, st.step).ok()?;
            let mut scratch = vec![0.0; self.sys.invariant_info().len()];
            let t = self.sys.time_of(st.z.as_slice());
            Some(kinetic_energy(
                self.sys,
                t,
                &q,
                values[0],
                &vec![0.0; v.len()],
                &mut scratch,
            ))
        }
        fn visit(&mut self, state: &StateOf<Z, X>, _: &[f64], _: &[f64], _: &mut Monitor) -> Result<bool, StepError> {
            (self.visit)(state);
            Ok(true)
        }
    }
    let sys = stepper.system();
    let h = stepper.h();
    let mut monitor = Monitor::new(&monitored(sys));
    let mut u = stepper.inputs().to_vec();
    let mut host = Closures { sys, control, visit };
    drive(&mut stepper, state, steps, &mut monitor, &mut u, &mut host)?;
    Ok(RunSummary {
        steps,
        h,
        monitor,
        newton: stepper.stats,
    })
}
