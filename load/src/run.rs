//! Fixed-step runs of a [`System`]: every step monitored, a subsample of
//! states recorded, Newton statistics and timing, and the run summary (the
//! object `hamel simulate --summary json` prints, and Python's `run.summary`).

use std::time::{Duration, Instant};

use hamel_kernel::Kernel;
use hamel_runtime::nalgebra::Dyn;
use hamel_runtime::run::energy_balance;
use hamel_runtime::{
    drive, DynState, DynStepper, Ended, Health, Host, InvariantKind, Kernels, Monitor, NewtonOptions, NewtonStats,
    StepError,
};
use serde_json::{json, Value};

use crate::{Backend, System};

/// How to run.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// step size
    pub h: f64,
    /// number of steps
    pub steps: u64,
    /// compensated (TwoSum) summation of the increments
    pub compensated: bool,
    /// record every `k`-th state (0: about 20,000 records at most); the
    /// initial and the last state are always recorded
    pub record_every: u64,
    /// the control inputs at each step (`None`: all zero)
    pub inputs: Option<crate::Schedule>,
    /// the Newton solve's settings (tolerance, iteration bound, ...);
    /// `NewtonOptions::default()` is what every stepper uses unless told
    pub newton: NewtonOptions,
}

/// The error of a quantity of kind `k` at value `v`, initial value `v0`:
/// relative for energy, the residual for constraints, the deviation otherwise.
pub fn error_of(k: InvariantKind, v: f64, v0: f64) -> f64 {
    k.error(v, v0)
}

impl RunOptions {
    /// Steps between recorded states: `record_every`, or for 0 as many as keep
    /// about 20,000 records.
    pub fn interval(&self) -> u64 {
        if self.record_every > 0 {
            self.record_every
        } else {
            self.steps.div_ceil(20_000).max(1)
        }
    }
}

/// A step failed during a run; what was computed until then is kept.
#[derive(Debug, thiserror::Error)]
#[error("{error}")]
pub struct RunFailed {
    /// why the step failed (step number, residual norm, iterations)
    pub error: StepError,
    /// the run up to the last good state (`options.steps` is the number of good steps)
    pub partial: Box<Run>,
}

impl RunFailed {
    /// What the run before the failure says of its cause (see [`failure_cause`]).
    pub fn cause(&self) -> Option<String> {
        failure_cause(&self.error, &self.partial)
    }

    /// The step's error, and [`RunFailed::cause`] where there is one.
    pub fn message(&self) -> String {
        failure_message(&self.error, &self.partial)
    }
}

/// `error`, and [`failure_cause`] and [`failure_location`] where there are
/// those.
pub fn failure_message(error: &StepError, partial: &Run) -> String {
    let notes = [failure_cause(error, partial), failure_location(partial)];
    notes
        .into_iter()
        .flatten()
        .fold(error.to_string(), |m, note| format!("{m}; {note}"))
}

/// Where the failed step that ended `partial` resisted, in the model's
/// terms: the unknown of Newton's largest last update (a link's, in a
/// chain), where known.
pub fn failure_location(partial: &Run) -> Option<String> {
    let unknown = partial.failed_unknown.as_ref()?;
    Some(format!("Newton's last update was largest in the unknown `{unknown}`"))
}

/// What the run up to a failed step (`partial`) says of the failure's
/// cause, where it says something: a Newton solve that diverged or stalled
/// after the energy had already drifted (by more than
/// [`Health::energy_near_singularity`] of the default [`Health`]) failed
/// because the step size no longer resolves the motion, and a smaller one
/// may carry the run further; the monitor's own warnings (a pass near a
/// singularity of the coordinates, a drift off the constraints) name other
/// causes. `None` where the run was healthy up to the failure: nothing then
/// points at a cause.
pub fn failure_cause(error: &StepError, partial: &Run) -> Option<String> {
    if !matches!(error, StepError::NonFinite { .. } | StepError::NotConverged { .. }) {
        return None;
    }
    let health = Health::default();
    let monitor = &partial.monitor;
    let warnings = monitor.warnings(&health);
    if !warnings.is_empty() {
        return Some(format!("before it failed, {}", warnings.join("; ")));
    }
    let drift = monitor
        .reports()
        .iter()
        .filter(|r| r.kind == InvariantKind::Energy)
        .map(|r| monitor.judged_energy_error(r))
        .fold(0.0f64, f64::max);
    (drift > health.energy_near_singularity).then(|| {
        let h = partial.options.h;
        format!(
            "before it failed, the energy had drifted by {drift:.1e} (relative) over {} good step(s): \
             the step size h = {h} no longer resolves the motion; a smaller one (h = {}, say) may carry the run further",
            partial.options.steps,
            h / 2.0
        )
    })
}

/// Why a run did not finish.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// the initial state could not be observed (a singular observation system, non-finite values)
    #[error("{0}")]
    Start(StepError),
    /// a step failed
    #[error(transparent)]
    Failed(#[from] RunFailed),
    /// the run asked for is absurdly long or would record more than fits in memory
    #[error("{0}")]
    TooLarge(String),
    /// options no run can honour (a Newton tolerance that is not a positive
    /// finite number, an iteration bound of 0, an input array shorter than the run)
    #[error("{0}")]
    Options(String),
}

/// Most steps of one run (at 100 ns a step, about 3 years).
pub const MAX_STEPS: u64 = 1_000_000_000_000_000;
/// Most memory the recorded states of one run may take.
pub const MAX_RECORD_BYTES: u64 = 4 << 30;

/// Refuses a run that cannot finish or whose records cannot be held, before
/// anything is computed or written: more than [`MAX_STEPS`] steps, records
/// above [`MAX_RECORD_BYTES`], or Newton options no solve can honour.
pub fn check_run(sys: &System, opt: &RunOptions) -> Result<(), RunError> {
    check_newton(&opt.newton)?;
    check_inputs(opt)?;
    check_size(sys, opt.steps, opt.interval())
}

/// Refuses a per-step input array shorter than the run.
fn check_inputs(opt: &RunOptions) -> Result<(), RunError> {
    match &opt.inputs {
        Some(s) => s.check_steps(opt.steps).map_err(RunError::Options),
        None => Ok(()),
    }
}

/// Refuses Newton options no solve can honour, naming the setting.
fn check_newton(newton: &NewtonOptions) -> Result<(), RunError> {
    newton
        .check()
        .map_err(|e| RunError::Options(format!("Newton option {e}")))
}

/// Refuses runs that cannot finish or whose records cannot be held: more
/// than [`MAX_STEPS`] steps, or records above [`MAX_RECORD_BYTES`].
fn check_size(sys: &System, steps: u64, every: u64) -> Result<(), RunError> {
    if steps > MAX_STEPS {
        return Err(RunError::TooLarge(format!(
            "{steps} steps is more than any run can take (at most {MAX_STEPS:.0e}); check the step size and the end time"
        )));
    }
    let c = sys.compiled();
    let row = 8 * (1 + c.coordinates.len() + c.velocities.len() + c.invariants.len()) as u64;
    let records = steps / every.max(1) + 2;
    let bytes = records.saturating_mul(row);
    if bytes > MAX_RECORD_BYTES {
        return Err(RunError::TooLarge(format!(
            "recording one state in {every} of {steps} steps makes {records} records ({:.1} GiB in memory, about 3× that as CSV), more than {} GiB; record fewer (a larger recording interval) or shorten the run",
            bytes as f64 / (1u64 << 30) as f64,
            MAX_RECORD_BYTES >> 30
        )));
    }
    Ok(())
}

/// What a run produced.
#[derive(Clone, Debug)]
pub struct Run {
    /// model name
    pub model: String,
    /// scheme label (`rattle`, …; `rattle composed to order 4` for a
    /// composed step, see `System::set_order`)
    pub scheme: String,
    /// what evaluated the kernels
    pub backend: Backend,
    /// time the back-end took to prepare the kernels (JIT compilation), ms
    pub prepare_ms: f64,
    /// name of the initial state, if a named one was used
    pub initial: Option<String>,
    /// options of the run
    pub options: RunOptions,
    /// coordinate component names
    pub coordinates: Vec<String>,
    /// velocity component names
    pub velocities: Vec<String>,
    /// monitored quantities
    pub invariants: Vec<(String, InvariantKind)>,
    /// recorded step indices
    pub steps: Vec<u64>,
    /// recorded physical coordinates
    pub q: Vec<Vec<f64>>,
    /// recorded physical velocities
    pub v: Vec<Vec<f64>>,
    /// recorded invariant values
    pub values: Vec<Vec<f64>>,
    /// control input names (empty for a model without inputs)
    pub input_names: Vec<String>,
    /// recorded inputs: at each recorded state, those of the step from it
    pub u: Vec<Vec<f64>>,
    /// the discrete work of the external forces over the run (0 when free)
    pub work: f64,
    /// errors over every step
    pub monitor: Monitor,
    /// Newton statistics
    pub newton: NewtonStats,
    /// mean wall time of one step (Newton solve and update; monitoring
    /// excluded), estimated from the steps timed: every one of the first
    /// 64, then one in 8 standing for eight
    pub ns_per_step: f64,
    /// mean wall time of one step of the whole loop: the step, its
    /// monitoring, the health checks and the recording
    pub loop_ns_per_step: f64,
    /// the run's invariants were evaluated and judged at every step up to
    /// 64, at every recorded step, and every this many steps (see
    /// [`monitor_every`])
    pub monitored_every: u64,
    /// the host stopped the run before its end (see [`run_until`]);
    /// `options.steps` is the number of steps taken
    pub stopped: bool,
    /// of a run that ended at a failed step: the scheme's unknown in which
    /// Newton's last update was largest (see
    /// [`hamel_runtime::StepperOf::failed_unknown`]), where known
    pub failed_unknown: Option<String>,
}

impl Run {
    /// Time of record `k`.
    pub fn time(&self, k: usize) -> f64 {
        self.steps[k] as f64 * self.options.h
    }

    /// Error of quantity `i` in record `k`: relative for energy, deviation from
    /// the initial value for monitored quantities, the residual for constraints.
    pub fn error(&self, i: usize, k: usize) -> f64 {
        error_of(self.invariants[i].1, self.values[k][i], self.values[0][i])
    }

    /// Indices of the momenta: user invariants linear in the velocities.
    pub fn momentum_indices(&self) -> Vec<usize> {
        self.indices_of(|k| k == InvariantKind::Momentum)
    }

    fn indices_of(&self, keep: impl Fn(InvariantKind) -> bool) -> Vec<usize> {
        (0..self.invariants.len())
            .filter(|&i| keep(self.invariants[i].1))
            .collect()
    }

    /// Indices of quantities reported as constraint errors: constraint
    /// residuals (velocity constraints and holonomic ones at position level),
    /// and geometric invariants (lengths and norms that director and
    /// body-frame models keep by construction).
    pub fn constraint_indices(&self) -> Vec<usize> {
        self.indices_of(|k| {
            matches!(
                k,
                InvariantKind::Constraint | InvariantKind::DriftingConstraint | InvariantKind::Geometric
            )
        })
    }

    /// Indices of the hidden (velocity-level) constraints `∇g·q̇` of holonomic ones.
    pub fn hidden_constraint_indices(&self) -> Vec<usize> {
        self.indices_of(|k| k == InvariantKind::HiddenConstraint)
    }

    /// What makes the run untrustworthy (non-finite values, an energy or
    /// constraint error beyond [`hamel_runtime::Health`]'s defaults); empty if nothing.
    pub fn warnings(&self) -> Vec<String> {
        self.monitor.warnings(&hamel_runtime::Health::default())
    }

    /// The run summary (the `--summary json` object).
    pub fn summary(&self, file: &str) -> Value {
        let reports = self.monitor.reports();
        let energy = &reports[0];
        // The largest of an error over a set of quantities (None for an empty set).
        let largest = |ix: Vec<usize>, f: fn(&hamel_runtime::InvariantReport) -> f64| {
            ix.into_iter().map(|i| f(&reports[i])).reduce(f64::max)
        };
        let constraint = largest(self.constraint_indices(), |r| r.max_abs_error);
        let hidden = largest(self.hidden_constraint_indices(), |r| r.max_abs_error);
        let momentum = largest(self.momentum_indices(), |r| r.max_rel_error);
        let invariants: serde_json::Map<String, Value> = reports
            .iter()
            .map(|r| {
                (
                    r.name.clone(),
                    json!({
                        "kind": r.kind.name(),
                        "initial": r.initial, "min": r.min, "max": r.max,
                        "max_abs_error": r.max_abs_error, "max_rel_error": r.max_rel_error,
                    }),
                )
            })
            .collect();
        let warnings = self.warnings();
        let balance = reports.iter().find(|r| r.name == ENERGY_BALANCE);
        json!({
            "ok": warnings.is_empty(),
            "warnings": warnings,
            "model": self.model,
            "file": file,
            "scheme": self.scheme,
            "backend": self.backend.name(),
            "backend_prepare_ms": self.prepare_ms,
            "initial": self.initial,
            "steps": self.options.steps,
            "stopped": self.stopped,
            "h": self.options.h,
            "t_end": self.options.steps as f64 * self.options.h,
            "compensated": self.options.compensated,
            "energy_initial": energy.initial,
            "energy_min": energy.min,
            "energy_max": energy.max,
            "max_energy_error_rel": energy.max_rel_error,
            "max_energy_error_abs": energy.max_abs_error,
            "kinetic_energy_max": self.monitor.kinetic_max(),
            "max_energy_error_judged": self.monitor.judged_energy_error(energy),
            "max_constraint_error": constraint,
            "max_hidden_constraint_error": hidden,
            "max_momentum_error_rel": momentum,
            "newton_iterations_mean": self.newton.mean(),
            "newton_iterations_max": self.newton.max_iterations,
            "newton_factorizations_mean": self.newton.factorizations_mean(),
            "newton_restarts": self.newton.restarts,
            "newton_tolerance": self.options.newton.tolerance,
            "newton_iteration_bound": self.options.newton.max_iterations,
            "ns_per_step": self.ns_per_step,
            "loop_ns_per_step": self.loop_ns_per_step,
            "monitored_every": self.monitored_every,
            "metric_condition_initial": self.monitor.conditioning().map(|c| c.initial),
            "metric_condition_max": self.monitor.conditioning().map(|c| c.max),
            "metric_condition_max_step": self.monitor.conditioning().map(|c| c.max_at),
            "forced": balance.is_some(),
            "inputs": self.input_names,
            "work": balance.map(|_| self.work),
            "max_energy_balance_error_rel": balance.map(|r| r.max_rel_error),
            "invariants": invariants,
        })
    }
}

/// Runs `sys` from `state`. A failed step ends the run with its error (step
/// number, residual norm, iterations) and the run up to there.
pub fn run(sys: &System, state: DynState, initial: Option<String>, opt: &RunOptions) -> Result<Run, RunError> {
    run_observed(sys, state, initial, opt, &mut |_| {})
}

/// [`run`], calling `progress(k)` every 256 steps (for progress bars).
pub fn run_observed(
    sys: &System,
    state: DynState,
    initial: Option<String>,
    opt: &RunOptions,
    progress: &mut dyn FnMut(u64),
) -> Result<Run, RunError> {
    run_streamed(sys, state, initial, opt, 0, None, progress)
}

/// Where recorded states go as they are computed (e.g. CSV files), so that a
/// long run need not hold them.
pub trait Sink {
    /// One recorded state: step number, physical coordinates and velocities,
    /// and the monitored quantities (in the order of [`Run::invariants`]).
    /// `u` holds the inputs of the step from this state (empty without inputs).
    fn record(&mut self, step: u64, q: &[f64], v: &[f64], values: &[f64], u: &[f64]) -> Result<(), String>;
}

pub use hamel_runtime::run::{monitored, ENERGY_BALANCE};

/// [`run_observed`], handing every recorded state to `sink` as it comes and
/// keeping in the returned [`Run`] only one in `keep` steps (rounded up to
/// a multiple of the recording interval; 0: every recorded state), plus the
/// first and the last: the run's memory stays bounded however long it is.
pub fn run_streamed(
    sys: &System,
    state: DynState,
    initial: Option<String>,
    opt: &RunOptions,
    keep: u64,
    sink: Option<&mut dyn Sink>,
    progress: &mut dyn FnMut(u64),
) -> Result<Run, RunError> {
    run_until(sys, state, initial, opt, keep, sink, &mut |k| {
        progress(k);
        true
    })
}

/// [`run_streamed`] that the host can stop: `go_on(k)`, called every 256
/// steps with the steps taken, returns `false` to end the run there (a
/// host's Ctrl-C). A stopped run is returned as far as it went, with
/// [`Run::stopped`] set and `options.steps` the steps taken.
pub fn run_until(
    sys: &System,
    mut state: DynState,
    initial: Option<String>,
    opt: &RunOptions,
    keep: u64,
    sink: Option<&mut dyn Sink>,
    go_on: &mut dyn FnMut(u64) -> bool,
) -> Result<Run, RunError> {
    let info = monitored(sys);
    let every = opt.interval();
    // What is recorded is bounded, whether it is held or streamed to disk.
    check_size(sys, opt.steps, every)?;
    check_newton(&opt.newton)?;
    check_inputs(opt)?;
    let c = sys.compiled();
    if opt.inputs.as_ref().is_some_and(|s| !s.is_empty()) && c.inputs.is_empty() {
        return Err(RunError::Start(StepError::InvalidInput(format!(
            "{} has no inputs to set",
            c.model
        ))));
    }
    let mut stepper = DynStepper::new(sys, opt.h)
        .map_err(RunError::Start)?
        .with_compensation(opt.compensated);
    stepper.options = opt.newton;
    let watch_every = monitor_every(sys);
    let mut host = Recorder {
        sys,
        opt,
        names: c.inputs.iter().map(String::as_str).collect(),
        every,
        keep: keep.div_ceil(every).max(1) * every,
        // The metric's conditioning is watched every step where it can change.
        watch: sys.metric_varies(),
        sink,
        go_on,
        run: Run {
            model: c.model.clone(),
            scheme: match sys.step_order() {
                2 => c.scheme.clone(),
                order => format!("{} composed to order {order}", c.scheme),
            },
            backend: sys.backend(),
            prepare_ms: sys.prepare_time().as_secs_f64() * 1e3,
            initial,
            options: RunOptions {
                record_every: every,
                ..opt.clone()
            },
            coordinates: c.coordinates.clone(),
            velocities: c.velocities.clone(),
            invariants: info.clone(),
            steps: Vec::new(),
            q: Vec::new(),
            v: Vec::new(),
            values: Vec::new(),
            input_names: c.inputs.clone(),
            u: Vec::new(),
            work: 0.0,
            monitor: Monitor::new(&[] as &[(&str, InvariantKind)]),
            newton: NewtonStats::default(),
            ns_per_step: 0.0,
            loop_ns_per_step: 0.0,
            monitored_every: watch_every,
            stopped: false,
            failed_unknown: None,
        },
        taken: 0,
        qv: (vec![0.0; c.coordinates.len()], vec![0.0; c.velocities.len()]),
        kinetic_scratch: (Vec::new(), Vec::new()),
        mark: None,
        stepping: Duration::ZERO,
        timed: 0,
        stood_for: 0,
        conditioning_next: 0,
        energy: info.iter().position(|(_, k)| *k == InvariantKind::Energy),
        energy_seen: 0.0,
        watch_every,
        fresh: false,
    };
    let mut monitor = Monitor::new(&info);
    let mut u = vec![0.0; c.inputs.len()];
    let started = Instant::now();
    let ended = drive(&mut stepper, &mut state, opt.steps, &mut monitor, &mut u, &mut host);
    let looped = started.elapsed();
    let taken = host.taken.saturating_sub(1);
    let mut run = match ended {
        Ok(ended) => {
            let mut run = host.run;
            run.stopped = matches!(ended, Ended::Stopped(_));
            run.options.steps = taken;
            if taken > 0 {
                run.ns_per_step = host.stepping.as_nanos() as f64 / host.stood_for.max(1) as f64;
                run.loop_ns_per_step = looped.as_nanos() as f64 / taken as f64;
            }
            run
        }
        Err(error) if host.taken == 0 => return Err(RunError::Start(error)),
        Err(error) => {
            // Keep the last good state in the records, then hand back what was computed.
            if host.run.steps.last() != Some(&state.step) {
                let mut values = vec![0.0; info.len()];
                let _ = host.evaluate(&state, &mut values).map(|()| {
                    energy_balance(&mut values, sys.forced(), stepper.work_done);
                    monitor.observe_at(state.step, &values);
                    let to_sink = !state.step.is_multiple_of(every);
                    host.take(&state, &values, &u, &mut monitor, to_sink, true)
                });
            }
            let mut run = host.run;
            run.monitor = monitor;
            run.newton = stepper.stats;
            run.work = stepper.work_done;
            run.options.steps = state.step;
            // Only these failures are a solve's (others leave it unset, or
            // as an earlier failure left it).
            let solve_failed = matches!(error, StepError::NotConverged { .. } | StepError::NonFinite { .. });
            run.failed_unknown = stepper
                .failed_unknown()
                .filter(|_| solve_failed)
                .and_then(|k| c.unknowns.get(k).cloned());
            return Err(RunFailed {
                error,
                partial: Box::new(run),
            }
            .into());
        }
    };
    run.monitor = monitor;
    run.newton = stepper.stats;
    run.work = stepper.work_done;
    Ok(run)
}

/// What a run of [`run_until`] does around the runtime's loop: inputs from
/// the schedule, the physical state and its invariants, records (held and
/// streamed), progress and timing.
struct Recorder<'r, 's, 'g> {
    sys: &'r System,
    opt: &'r RunOptions,
    names: Vec<&'r str>,
    every: u64,
    keep: u64,
    watch: bool,
    sink: Option<&'s mut dyn Sink>,
    go_on: &'g mut dyn FnMut(u64) -> bool,
    run: Run,
    /// states visited so far (steps taken + 1)
    taken: u64,
    /// the physical state of the state being visited (from `evaluate`)
    qv: (Vec<f64>, Vec<f64>),
    /// zero velocities and the invariants at them, for [`Host::kinetic`]
    kinetic_scratch: (Vec<f64>, Vec<f64>),
    /// when the last visit ended, if the step after it is timed, and how
    /// many steps it stands for (see [`timed`])
    mark: Option<(Instant, u32)>,
    /// wall time spent in the timed steps (monitoring excluded), each
    /// counted for the steps it stands for
    stepping: Duration,
    /// steps timed
    timed: u64,
    /// the steps they stand for
    stood_for: u64,
    /// the next step at which the metric's conditioning is due on the
    /// clock (see [`Recorder::conditioning_due`])
    conditioning_next: u64,
    /// where the judged energy (a forced model's: its balance) is among the
    /// monitored quantities
    energy: Option<usize>,
    /// the energy error when the conditioning was last taken for its growth
    energy_seen: f64,
    /// see [`monitor_every`]
    watch_every: u64,
    /// whether the state being visited was evaluated (its `qv` is its own)
    fresh: bool,
}

/// Steps from the start that are all monitored, whatever [`monitor_every`]
/// says: a run's first steps are where a wrong step size or state shows.
pub const MONITOR_ALL_UNTIL: u64 = 64;

/// The share of a step that monitoring a state may cost, estimated from
/// operation counts.
pub const MONITOR_SHARE: f64 = 0.1;

/// How often a run evaluates and judges its invariants: every `k`-th step,
/// `k` ∈ {1, 2, 4, …, 64} the smallest for which the invariants' and the
/// physical state's kernels, the dense solve that gives the physical state
/// where there is one (midpoint Hamel's node velocities, `(2/3) m³` for its
/// `m` unknowns), and a fixed cost per monitored quantity cost at most
/// [`MONITOR_SHARE`] of one Newton iteration's kernels (the largest `k`
/// where none does: the 64-link director chain's solve of 256 unknowns,
/// about 3 ms, taken every 8th step, made the loop 4.5 times the step).
/// Counted in operations of the programs, not timed, so that every back-end and host
/// monitors the same steps and reports the same summary. Every recorded
/// step, the first [`MONITOR_ALL_UNTIL`] and the last are monitored too;
/// `k` divides the steps at which the loop takes the kinetic energy (64) and
/// a host may stop (256), so those are always monitored states. A run that
/// blows up between two monitored steps is still caught: its energy error
/// does not come back, and a step that is not finite stops the run.
pub fn monitor_every(sys: &System) -> u64 {
    let c = sys.compiled();
    let ops = |k: Kernel| c.program(k).map_or(0, |p| p.instrs.len()) as f64;
    let n = c.unknowns.len() as f64;
    let m = c.observe_size as f64;
    // The system's kernel is its product with a direction: m calls form it.
    let observe = m * ops(Kernel::ObserveSystem) + 2.0 / 3.0 * m * m * m + 2.0 * m * m;
    let watch = ops(Kernel::Invariants) + ops(Kernel::Physical) + observe + 16.0 * (c.invariants.len() + 4) as f64;
    let band = c.band.map_or(n, |(l, u)| (l + u + 1) as f64);
    let iteration = ops(Kernel::Residual) + ops(Kernel::ResidualJacobian) + ops(Kernel::Increment) + 2.0 * n * band;
    [1, 2, 4, 8, 16, 32, 64]
        .into_iter()
        .find(|&k| watch <= MONITOR_SHARE * k as f64 * iteration)
        .unwrap_or(64)
}

/// An energy error above which each doubling has the metric's conditioning
/// taken with it: a hundredth of what makes a pass near a singularity
/// unresolved (`Health::energy_near_singularity`), so the step where an
/// unresolved pass makes the error jump is always among those observed.
const ENERGY_WATCH: f64 = 1e-5;

/// Whether the step after `taken` visited states is timed, and for how
/// many steps it stands: each of the first 64 for itself, then one in 8
/// for eight. Reading the clock twice a step costs about 50 ns, a sixth of
/// a small model's step; the mean of a regular sample of steps estimates
/// the mean step as well on runs long enough to time, if each sample counts
/// for the steps it stands for (counted once each, the first 64 steps,
/// which record the LU's operations and compile them, made a third of a
/// 1000-step run's mean).
fn timed(taken: u64) -> Option<u32> {
    if taken <= 64 {
        Some(1)
    } else {
        taken.is_multiple_of(8).then_some(8)
    }
}

/// The share of the stepping time the sampled conditioning may take.
const CONDITIONING_SHARE: f64 = 0.01;

impl Recorder<'_, '_, '_> {
    /// Whether to take the metric's conditioning at step `step`: at the
    /// first state; where it can change, whenever the energy error doubles
    /// above [`ENERGY_WATCH`] (where a pass near a singularity shows),
    /// and otherwise every so many steps that it costs at most
    /// [`CONDITIONING_SHARE`] of the stepping (a dense factorization of the
    /// metric grows as N³ while a chain's step grows as N).
    fn conditioning_due(&mut self, step: u64, monitor: &Monitor) -> bool {
        if step == 0 {
            return true;
        }
        if !self.watch {
            return false;
        }
        let energy = self.energy.map_or(0.0, |i| monitor.reports()[i].max_rel_error);
        if energy > ENERGY_WATCH && energy > 2.0 * self.energy_seen {
            self.energy_seen = energy;
            return true;
        }
        step >= self.conditioning_next
    }

    /// After an observation of the conditioning at `step` that took
    /// `cost`: the next is due so many steps on that the observations take
    /// at most [`CONDITIONING_SHARE`] of the stepping (per step, the mean of
    /// the timed steps so far).
    fn conditioning_taken(&mut self, step: u64, cost: Duration) {
        // Until steps have been timed, the next is due once 16 have.
        if self.timed < 16 {
            self.conditioning_next = 16;
            return;
        }
        let per_step = self.stepping.as_secs_f64() / self.stood_for as f64;
        let every = (cost.as_secs_f64() / (CONDITIONING_SHARE * per_step)).ceil();
        self.conditioning_next = step + (every as u64).max(1);
    }

    /// Observes the metric's conditioning at `st` (see
    /// [`Recorder::conditioning_due`]) and hands the state to the sink and to
    /// the run as asked.
    fn take(
        &mut self,
        st: &DynState,
        values: &[f64],
        u: &[f64],
        monitor: &mut Monitor,
        to_sink: bool,
        to_run: bool,
    ) -> Result<(), StepError> {
        if self.conditioning_due(st.step, monitor) {
            let started = Instant::now();
            let (q, v) = &self.qv;
            monitor.observe_conditioning(st.step, self.sys.metric_condition(q, v));
            self.conditioning_taken(st.step, started.elapsed());
        }
        let (q, v) = &self.qv;
        if to_sink {
            if let Some(s) = self.sink.as_deref_mut() {
                s.record(st.step, q, v, values, u).map_err(StepError::InvalidInput)?;
            }
        }
        if to_run {
            self.run.steps.push(st.step);
            self.run.q.push(q.clone());
            self.run.v.push(v.clone());
            self.run.values.push(values.to_vec());
            self.run.u.push(u.to_vec());
        }
        Ok(())
    }
}

impl Host<Dyn, Dyn> for Recorder<'_, '_, '_> {
    fn control(&mut self, st: &DynState, u: &mut [f64]) -> Result<(), StepError> {
        if let Some((mark, weight)) = self.mark.take() {
            // A timed step just ended: the time since the last visit is its own.
            self.stepping += mark.elapsed() * weight;
            self.timed += 1;
            self.stood_for += u64::from(weight);
        }
        match &self.opt.inputs {
            Some(s) if !u.is_empty() => s
                .at(&self.names, st.step as f64 * self.opt.h, self.opt.h, u)
                .map_err(StepError::InvalidInput),
            _ => Ok(()),
        }
    }

    fn observes(&mut self, step: u64) -> bool {
        step <= MONITOR_ALL_UNTIL || step.is_multiple_of(self.watch_every) || step.is_multiple_of(self.every)
    }

    fn evaluate(&mut self, st: &DynState, values: &mut [f64]) -> Result<(), StepError> {
        self.fresh = true;
        // Into buffers kept across steps: this runs at most every step.
        let (q, v) = &mut self.qv;
        self.sys.physical_into(&st.z, st.step, q, v)?;
        let own = self.sys.compiled().invariants.len();
        self.sys
            .invariants_of(self.sys.time_of(st.z.as_slice()), q, v, &mut values[..own]);
        Ok(())
    }

    fn kinetic(&mut self, st: &DynState, values: &[f64]) -> Option<f64> {
        let (q, v) = &self.qv;
        let (zeros, scratch) = &mut self.kinetic_scratch;
        zeros.resize(v.len(), 0.0);
        scratch.resize(self.sys.compiled().invariants.len(), 0.0);
        let t = self.sys.time_of(st.z.as_slice());
        Some(hamel_runtime::run::kinetic_energy(
            self.sys, t, q, values[0], zeros, scratch,
        ))
    }

    fn visit(&mut self, st: &DynState, values: &[f64], u: &[f64], monitor: &mut Monitor) -> Result<bool, StepError> {
        let k = self.taken;
        let last = k == self.opt.steps;
        let recorded = k.is_multiple_of(self.every) || last;
        let kept = recorded && (k.is_multiple_of(self.keep) || last);
        let fresh = std::mem::take(&mut self.fresh);
        if fresh || recorded {
            self.take(st, values, u, monitor, recorded, kept)?;
        }
        self.taken += 1;
        let go_on = k == 0 || !k.is_multiple_of(256) || (self.go_on)(k);
        if !go_on && !kept {
            // Stopped here: the last state belongs in the records.
            self.take(st, values, u, monitor, !recorded, true)?;
        }
        if let Some(weight) = timed(self.taken) {
            self.mark = Some((Instant::now(), weight));
        }
        Ok(go_on)
    }
}
