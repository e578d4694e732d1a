//! The stepper that drives any [`Kernels`] with Newton's method, and the
//! fixed-size name under which derived integrators are known.

use std::marker::PhantomData;
use std::ops::Deref;

use hamel_kernel::Exogenous;
use nalgebra::{Const, DefaultAllocator, Dim, Dyn, OMatrix, OVector};

use crate::compose::{self, Composition};
use crate::error::StepError;
use crate::kernels::{Alloc, Kernels};
use crate::newton::{self, NewtonOptions, NewtonStats, Workspace};
use crate::state::StateOf;

/// The step map's linearization `(A, B) = (∂z'/∂z, ∂z'/∂u)`.
pub type Linearization<Z> = (OMatrix<f64, Z, Z>, nalgebra::DMatrix<f64>);

/// A derived integrator with `NZ` state components and `NX` unknowns: any
/// [`Kernels`] of fixed sizes. Every `#[derive(Integrator)]` struct is one.
pub trait StepSystem<const NZ: usize, const NX: usize>: Kernels<Const<NZ>, Const<NX>> {}

impl<T: Kernels<Const<NZ>, Const<NX>> + ?Sized, const NZ: usize, const NX: usize> StepSystem<NZ, NX> for T {}

/// What a stepper's type says of `'a` and `S` besides `R`: nothing about
/// `Send` or `Sync` (a `fn` pointer is both), so an owning stepper of a
/// system that is `Send` but not `Sync` can move to another thread.
type Marker<'a, S> = PhantomData<(&'a (), fn() -> *const S)>;

/// Drives a [`Kernels`] with a fixed step size. Use [`Stepper`] for derived
/// integrators and [`DynStepper`] for models loaded at run time.
///
/// `R` is how the stepper holds its system: borrowed (`&'a S`, the default)
/// or owned ([`OwnedStepper`], a `Box<S>`; or an `Arc<S>`), so that a host
/// can keep one stepper as long as its trajectories live, without keeping
/// the system's owner alive alongside it.
pub struct StepperOf<'a, S: ?Sized, Z: Dim, X: Dim, R = &'a S>
where
    DefaultAllocator: Alloc<Z, X>,
{
    pub(crate) system: R,
    /// the borrow `R = &'a S` carries; unused by owning steppers
    life: Marker<'a, S>,
    pub(crate) h: f64,
    /// Newton settings
    pub options: NewtonOptions,
    /// accumulated Newton statistics
    pub stats: NewtonStats,
    /// add increments to the state with compensated (TwoSum) summation
    pub compensated: bool,
    /// time of the state with step counter 0 (`t_k = t0 + k h`) for the
    /// forces; a rheonomic model's state carries its own time instead
    /// ([`Kernels::time_slot`]), from 0 at its initial state
    pub t0: f64,
    pub(crate) work: Workspace<Z, X>,
    /// the exogenous data of the next step: `(t_k, u_k)`
    pub(crate) exo: Vec<f64>,
    /// the state before the step (forced models: the step's work needs it)
    before: Option<OVector<f64, Z>>,
    /// the discrete work of the external force summed over the steps taken
    pub work_done: f64,
    /// the sub-steps of a composed step (order 4 or 6, [`Kernels::order`])
    composition: Option<Box<Composition<Z, X>>>,
}

/// The stepper of a derived integrator.
pub type Stepper<'a, S, const NZ: usize, const NX: usize> = StepperOf<'a, S, Const<NZ>, Const<NX>>;

/// The stepper of an integrator whose sizes are known at run time.
pub type DynStepper<'a, S> = StepperOf<'a, S, Dyn, Dyn>;

/// A stepper that owns its system (`Box<S>`; systems that are `Sync` may
/// also be shared, `StepperOf::holding(Arc<S>, h)`): it borrows nothing, so
/// a host (Python) can keep it as long as its trajectories live.
pub type OwnedStepper<S, Z, X> = StepperOf<'static, S, Z, X, Box<S>>;

impl<S: ?Sized, Z: Dim, X: Dim, R> std::fmt::Debug for StepperOf<'_, S, Z, X, R>
where
    DefaultAllocator: Alloc<Z, X>,
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stepper")
            .field("h", &self.h)
            .field("options", &self.options)
            .field("stats", &self.stats)
            .field("compensated", &self.compensated)
            .finish_non_exhaustive()
    }
}

impl<'a, S: Kernels<Z, X> + ?Sized, Z: Dim, X: Dim> StepperOf<'a, S, Z, X>
where
    DefaultAllocator: Alloc<Z, X>,
{
    /// A stepper with step size `h` (finite, non-zero; negative runs
    /// backwards), taking the scheme's own step or, where the system asks for
    /// order 4 or 6 ([`Kernels::order`]), the scheme composed with itself
    /// ([`crate::compose`]).
    pub fn new(system: &'a S, h: f64) -> Result<Self, StepError> {
        Self::holding(system, h)
    }

    /// The system being stepped, borrowed for as long as the stepper's own borrow.
    pub fn system(&self) -> &'a S {
        self.system
    }
}

impl<S: Kernels<Z, X>, Z: Dim, X: Dim> OwnedStepper<S, Z, X>
where
    DefaultAllocator: Alloc<Z, X>,
{
    /// A stepper owning `system`, with step size `h` (finite, non-zero;
    /// negative runs backwards).
    pub fn owning(system: S, h: f64) -> Result<Self, StepError> {
        Self::holding(Box::new(system), h)
    }
}

impl<'a, S: Kernels<Z, X> + ?Sized, Z: Dim, X: Dim, R: Deref<Target = S>> StepperOf<'a, S, Z, X, R>
where
    DefaultAllocator: Alloc<Z, X>,
{
    /// A stepper holding its system as `R` (a borrow or an `Arc`), with step
    /// size `h` (finite, non-zero; negative runs backwards).
    pub fn holding(system: R, h: f64) -> Result<Self, StepError> {
        if !h.is_finite() || h == 0.0 {
            return Err(StepError::BadStepSize(h));
        }
        let (z, x) = system.dims();
        let band = system.jacobian_band();
        let ops = system.kernel_ops();
        let exo = system.exogenous_len();
        // A rheonomic model without forces has work (the power of its time
        // dependence) but no exogenous data.
        let keeps_before = exo > 0 || system.forced();
        let composition = Composition::new(system.order(), z, x)?.map(Box::new);
        let mut work = Workspace::with_costs(z, x, band, ops);
        if let Some(pattern) = system.jacobian_pattern() {
            work.set_pattern(pattern);
            work.set_lu_compiler(system.lu_compiler());
        }
        work.fix_sizes(&*system);
        Ok(Self {
            system,
            life: PhantomData,
            h,
            options: NewtonOptions::default(),
            stats: NewtonStats::default(),
            compensated: false,
            t0: 0.0,
            work,
            exo: vec![0.0; exo],
            before: keeps_before.then(|| OVector::<f64, Z>::zeros_generic(z, nalgebra::U1)),
            work_done: 0.0,
            composition,
        })
    }

    /// Number of control input components of the model.
    pub fn input_count(&self) -> usize {
        Exogenous::of_len(self.exo.len()).inputs
    }

    /// The inputs `u_k` held over the following steps (zero until set).
    pub fn inputs(&self) -> &[f64] {
        &self.exo[Exogenous::of_len(self.exo.len()).input_range()]
    }

    /// Sets the inputs held over the following steps (zero-order hold).
    /// Fails on a wrong length or a non-finite value.
    pub fn set_inputs(&mut self, u: &[f64]) -> Result<(), StepError> {
        let r = self.input_count();
        if u.len() != r {
            return Err(StepError::InvalidInput(format!(
                "{} takes {r} input value(s), got {}",
                self.system.model(),
                u.len()
            )));
        }
        if let Some(k) = u.iter().position(|v| !v.is_finite()) {
            let names = self.system.names(crate::kernels::NameList::Inputs);
            return Err(StepError::InvalidInput(format!(
                "input `{}` = {} is not finite",
                names.get(k).copied().unwrap_or("?"),
                u[k]
            )));
        }
        if r > 0 {
            let at = Exogenous::of_len(self.exo.len()).input_range();
            self.exo[at].copy_from_slice(u);
        }
        Ok(())
    }

    /// The exogenous data the step from `state` uses: `(t_k, u_k)`.
    fn exogenous(&mut self, step: u64) -> &[f64] {
        if let Some(t) = self.exo.get_mut(Exogenous::TIME) {
            *t = self.t0 + step as f64 * self.h;
        }
        &self.exo
    }

    /// Whether this stepper's steps go through a Newton driver of fixed
    /// sizes ([`crate::native`]: a run-time-sized system with native
    /// kernels of the sizes of a small model) rather than the run-time-sized
    /// one. Never with compensated summation, which only the latter does.
    pub fn fixed_sizes(&self) -> bool {
        self.work.has_fixed_sizes() && !self.compensated
    }

    /// The same stepper with the driver of fixed sizes allowed (the
    /// default, where the system has one) or not. Both take the same
    /// iterations to the same states, to the bit; `false` steps the same
    /// kernels through the run-time-sized driver, to check or time it.
    pub fn with_fixed_sizes(mut self, on: bool) -> Self {
        if on {
            self.work.fix_sizes(&*self.system);
        } else {
            self.work.unfix_sizes();
        }
        self
    }

    /// The same stepper with the steps of its sparse LU compiled once they
    /// settle (the default, where the system lends a compiler:
    /// [`Kernels::lu_compiler`]) or always replayed. Both take the same
    /// iterations to the same states, to the bit.
    pub fn with_compiled_lu(mut self, on: bool) -> Self {
        let compiler = if on { self.system.lu_compiler() } else { None };
        self.work.set_lu_compiler(compiler);
        self
    }

    /// Factorizations whose first steps ran as compiled code (see
    /// [`StepperOf::with_compiled_lu`]).
    pub fn compiled_factorizations(&self) -> u64 {
        self.work.compiled_factorizations()
    }

    /// Right after a step that failed with [`StepError::NotConverged`] or
    /// [`StepError::NonFinite`]: the unknown (an index into the scheme's
    /// unknowns, [`Kernels::names`] with
    /// [`NameList::Unknowns`](crate::NameList::Unknowns)) in which Newton's
    /// last update was largest or first non-finite, where the step's
    /// equations resisted; `None` where the solve failed before an update.
    /// After other steps it means nothing (it is not reset on success: that
    /// would cost a store every step).
    pub fn failed_unknown(&self) -> Option<usize> {
        self.work.failed_unknown()
    }

    /// The same stepper with compensated summation of the increments switched on or off.
    pub fn with_compensation(mut self, on: bool) -> Self {
        self.compensated = on;
        self
    }

    /// The system being stepped.
    pub fn kernels(&self) -> &S {
        &self.system
    }

    /// The step size.
    pub fn h(&self) -> f64 {
        self.h
    }

    /// Advances `state` by one step and returns the step-map sensitivity
    /// `∂z_{k+1}/∂z_k` (implicit function theorem on the solved residual).
    pub fn step_with_sensitivity(&mut self, state: &mut StateOf<Z, X>) -> Result<OMatrix<f64, Z, Z>, StepError> {
        self.step_linearized(state, false).map(|(a, _)| a)
    }

    /// Advances `state` by one step and returns the step map's linearization
    /// `(A, B) = (∂z_{k+1}/∂z_k, ∂z_{k+1}/∂u_k)` (B with one column per input;
    /// empty without inputs or when `with_inputs` is false).
    pub fn step_linearized(
        &mut self,
        state: &mut StateOf<Z, X>,
        with_inputs: bool,
    ) -> Result<Linearization<Z>, StepError> {
        if let Some(mut comp) = self.composition.take() {
            let done = compose::step(self, &mut comp, state, Some(with_inputs));
            self.composition = Some(comp);
            return done?
                .map(|lin| *lin)
                .ok_or_else(|| StepError::InvalidInput("a composed step returned no linearization".into()));
        }
        let before = state.clone();
        let e = self.exogenous(state.step).to_vec();
        self.step(state)?;
        crate::linearize::solved(
            &*self.system,
            self.h,
            &e,
            &before.z,
            &state.warm,
            with_inputs,
            before.step,
        )
        .inspect_err(|_| {
            *state = before.clone();
        })
    }

    /// Advances `state` by one step. On error `state` is unchanged.
    pub fn step(&mut self, state: &mut StateOf<Z, X>) -> Result<(), StepError> {
        if let Some(mut comp) = self.composition.take() {
            let done = compose::step(self, &mut comp, state, None);
            self.composition = Some(comp);
            return done.map(|_| ());
        }
        self.exogenous(state.step);
        if let Some(b) = &mut self.before {
            b.copy_from(&state.z);
        }
        newton::advance(
            &*self.system,
            self.h,
            &self.exo,
            &self.options,
            self.compensated,
            &mut self.stats,
            &mut self.work,
            newton::StepParts {
                z: &mut state.z,
                lo: &mut state.lo,
                warm: &mut state.warm,
                step: &mut state.step,
                newton: &mut state.newton,
            },
        )?;
        if let Some(b) = &self.before {
            if let Some(w) = self.system.work(self.h, &self.exo, b, &state.warm) {
                self.work_done += w;
            }
        }
        Ok(())
    }

    /// Sets the inputs (see [`StepperOf::set_inputs`]) and advances `state` by one step.
    pub fn step_with_inputs(&mut self, state: &mut StateOf<Z, X>, u: &[f64]) -> Result<(), StepError> {
        self.set_inputs(u)?;
        self.step(state)
    }
}
