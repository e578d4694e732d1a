//! The kernel seam: what a compiled model provides to the runtime, whoever
//! compiled it — the derive (fixed sizes), the interpreter or the JIT (sizes
//! known at run time). Everything that is not a kernel (initial-state checks,
//! recovery of the physical state, parameter checks, invariants along a run)
//! is written once here, as provided methods, on top of the kernels.

use nalgebra::allocator::Allocator;
use nalgebra::{DefaultAllocator, Dim, OMatrix, OVector};

use crate::error::StepError;
use crate::state::StateOf;

pub use hamel_kernel::InvariantKind;

/// The storage a step with state size `Z` and `X` unknowns needs: nalgebra's
/// allocator bounds, named once. Every `DefaultAllocator` has them.
pub trait Alloc<Z: Dim, X: Dim>:
    Allocator<Z> + Allocator<X> + Allocator<X, X> + Allocator<X, Z> + Allocator<Z, Z> + Allocator<Z, X>
{
}

impl<Z: Dim, X: Dim, A> Alloc<Z, X> for A where
    A: Allocator<Z> + Allocator<X> + Allocator<X, X> + Allocator<X, Z> + Allocator<Z, Z> + Allocator<Z, X>
{
}

/// A list of names a compiled model carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NameList {
    /// parameters, in model order (struct-field spelling: `m_1` for `m[1]`)
    Parameters,
    /// physical coordinate components
    Coordinates,
    /// physical velocity components
    Velocities,
    /// components of the scheme's state
    State,
    /// the step's unknowns
    Unknowns,
    /// the model file's named initial states
    InitialStates,
    /// control input components `u` (empty for a model without inputs)
    Inputs,
}

/// Largest observation system solved without a heap allocation.
const STACK_OBSERVE: usize = 32;

/// One compiled model under one scheme: the implicit step `R(x; z) = 0`,
/// `z' = z + U(x; z)` and the model's own kernels. `Z` is the size of the
/// scheme's state, `X` the number of unknowns (`Const` for derived code, `Dyn`
/// for the run-time back-ends).
///
/// Hot kernels write into `out`, so that a Newton iteration allocates nothing.
/// Matrices are nalgebra's (column-major).
pub trait Kernels<Z: Dim, X: Dim>
where
    DefaultAllocator: Alloc<Z, X>,
{
    /// Name of the model in its file.
    fn model(&self) -> &str;
    /// Scheme label, e.g. `hamel_averaged`.
    fn scheme(&self) -> &str;
    /// Sizes of the state and of the unknowns.
    fn dims(&self) -> (Z, X);
    /// The names of one list.
    fn names(&self, list: NameList) -> Vec<&str>;
    /// Names and kinds of the monitored quantities, energy first.
    fn invariant_info(&self) -> Vec<(&str, InvariantKind)>;
    /// Current parameter values, in the order of [`NameList::Parameters`].
    fn parameters(&self) -> Vec<f64>;

    /// `(kl, ku)` when the Jacobian `∂R/∂x` has no entry more than `kl` below
    /// or `ku` above its diagonal and a banded LU pays (`None`: dense).
    fn jacobian_band(&self) -> Option<(usize, usize)> {
        None
    }

    /// `(row, column)` of the entries of a banded Jacobian that can be
    /// non-zero (every other one is zero for every state): its LU then
    /// works on these and their fill-in only, to the same bits. `None`:
    /// unknown, the whole band is factored.
    fn jacobian_pattern(&self) -> Option<&[(u32, u32)]> {
        None
    }

    /// A compiler for the steps of the sparse LU of the Jacobian's pattern
    /// ([`Kernels::jacobian_pattern`]; see [`crate::lu_code`]): a back-end
    /// that generates code at run time lends one. `None` (the default):
    /// the LU replays its steps.
    fn lu_compiler(&self) -> Option<&'static dyn crate::lu_code::LuCompiler> {
        None
    }

    /// The hot kernels as native functions, with the parameter values they
    /// take: a stepper of small sizes then drives them with a Newton
    /// driver monomorphized for those sizes (see [`crate::native`]).
    /// `None` (the default): the stepper calls the methods of this trait.
    fn native(&self) -> Option<(&crate::native::NativeStep, &[f64])> {
        None
    }

    /// Operations of one [`Kernels::residual`] and of one
    /// [`Kernels::residual_jacobian`] evaluation, which tell Newton what
    /// keeping a factorization saves (`None`: unknown).
    fn kernel_ops(&self) -> Option<(usize, usize)> {
        None
    }

    /// Order of the step a stepper takes: 2, the scheme's own step (the
    /// default), or 4 or 6, the scheme composed with itself (see
    /// [`crate::compose`]; only symmetric schemes may ask for it).
    fn order(&self) -> u32 {
        2
    }

    /// Length of the step's exogenous data `e = (t_k, u_k)` (time at the
    /// start of the step, the inputs held over it): 0 for a model without
    /// forces or inputs, else `1 + r`.
    fn exogenous_len(&self) -> usize {
        0
    }

    /// `R(x; z, e)`.
    fn residual(&self, h: f64, e: &[f64], z: &OVector<f64, Z>, x: &OVector<f64, X>, out: &mut OVector<f64, X>);
    /// `∂R/∂x`, analytic.
    fn jacobian(&self, h: f64, e: &[f64], z: &OVector<f64, Z>, x: &OVector<f64, X>, out: &mut OMatrix<f64, X, X>);
    /// `R` and `∂R/∂x` together, as each Newton iteration needs them; the
    /// generated back-ends compute the subexpressions the two share once.
    fn residual_jacobian(
        &self,
        h: f64,
        e: &[f64],
        z: &OVector<f64, Z>,
        x: &OVector<f64, X>,
        r: &mut OVector<f64, X>,
        j: &mut OMatrix<f64, X, X>,
    ) {
        self.residual(h, e, z, x, r);
        self.jacobian(h, e, z, x, j);
    }
    /// [`Kernels::residual_jacobian`] into the matrix of a banded LU (see
    /// [`Kernels::jacobian_band`]), which has been zero or only factored by
    /// that LU since: entries more than `kl` below or `kl + ku` above the
    /// diagonal are zero already and need not be written, so that a long
    /// chain's Jacobian costs its band, not `n²` stores.
    #[allow(clippy::too_many_arguments)]
    fn residual_jacobian_band(
        &self,
        h: f64,
        e: &[f64],
        z: &OVector<f64, Z>,
        x: &OVector<f64, X>,
        r: &mut OVector<f64, X>,
        j: &mut OMatrix<f64, X, X>,
    ) {
        self.residual_jacobian(h, e, z, x, r, j);
    }
    /// [`Kernels::residual_jacobian`] with the Jacobian as the values of
    /// its [pattern](Kernels::jacobian_pattern)'s entries, in the pattern's
    /// order, into `values` (as long as the pattern): what a sparse LU
    /// reads, without the `n × n` matrix, whose band alone spans a cache
    /// line per column and whose rows lie `n` apart. `false` (the default):
    /// not written this way, nothing written.
    #[allow(clippy::too_many_arguments)]
    fn residual_jacobian_pattern(
        &self,
        _h: f64,
        _e: &[f64],
        _z: &OVector<f64, Z>,
        _x: &OVector<f64, X>,
        _r: &mut OVector<f64, X>,
        _values: &mut [f64],
    ) -> bool {
        false
    }
    /// The increment `z' − z = U(x; z, e)` once `R(x; z, e) = 0`.
    fn increment(&self, h: f64, e: &[f64], z: &OVector<f64, Z>, x: &OVector<f64, X>, out: &mut OVector<f64, Z>);
    /// Starting guess from the state and the previous step's solution.
    fn predict(&self, h: f64, e: &[f64], z: &OVector<f64, Z>, previous: &OVector<f64, X>, out: &mut OVector<f64, X>);
    /// The residual at the state `z + lo`, in double-double arithmetic, for
    /// compensated runs; `false` where not available (then nothing is written).
    fn residual_compensated(
        &self,
        _h: f64,
        _e: &[f64],
        _z: &OVector<f64, Z>,
        _lo: &OVector<f64, Z>,
        _x: &OVector<f64, X>,
        _out: &mut OVector<f64, X>,
    ) -> bool {
        false
    }
    /// The increment at `z + lo` in double-double (see [`Kernels::residual_compensated`]).
    fn increment_compensated(
        &self,
        _h: f64,
        _e: &[f64],
        _z: &OVector<f64, Z>,
        _lo: &OVector<f64, Z>,
        _x: &OVector<f64, X>,
        _out: &mut OVector<f64, Z>,
    ) -> bool {
        false
    }
    /// `(∂R/∂z, ∂U/∂z, ∂U/∂x)` at `(z, x)`, for step-map sensitivities;
    /// `None` where not compiled.
    #[allow(clippy::type_complexity)]
    fn sensitivity_parts(
        &self,
        _h: f64,
        _e: &[f64],
        _z: &OVector<f64, Z>,
        _x: &OVector<f64, X>,
    ) -> Option<(OMatrix<f64, X, Z>, OMatrix<f64, Z, Z>, OMatrix<f64, Z, X>)> {
        None
    }
    /// `(∂R/∂u, ∂U/∂u)` at `(z, x)` (`X × r` and `Z × r`), for the input
    /// sensitivity `∂z'/∂u_k`; `None` where not compiled or without inputs.
    fn input_sensitivity_parts(
        &self,
        _h: f64,
        _e: &[f64],
        _z: &OVector<f64, Z>,
        _x: &OVector<f64, X>,
    ) -> Option<(nalgebra::DMatrix<f64>, nalgebra::DMatrix<f64>)> {
        None
    }
    /// The discrete work `W_k = ⟨F⁻_k + F⁺_k, ξ_{k,k+1}⟩` of the external force
    /// over the step solved by `x`; `None` for a model without forces.
    fn work(&self, _h: f64, _e: &[f64], _z: &OVector<f64, Z>, _x: &OVector<f64, X>) -> Option<f64> {
        None
    }
    /// Whether the model has external forces: its energy then changes by the
    /// forces' work, and runs judge the energy balance instead (see
    /// [`crate::run::monitored`]).
    fn forced(&self) -> bool {
        false
    }

    /// Size of the linear system that recovers the physical state (0: none).
    fn observe_size(&self) -> usize;
    /// The scheme's state `z` and a first warm start `x` for physical data `(q, ξ)`.
    fn state_of(&self, q: &[f64], v: &[f64], z: &mut [f64], x: &mut [f64]);
    /// Solves the observation system at `z` into `y`; `false` where it is singular.
    fn observe(&self, z: &[f64], y: &mut [f64]) -> bool;
    /// The physical state `(q, ξ)` from `z` and the observation solution `y`.
    fn physical_of(&self, z: &[f64], y: &[f64], q: &mut [f64], v: &mut [f64]);
    /// Energy, invariants and constraint residuals at a physical state at
    /// time `t`, into the first entries of `out` (as many as
    /// [`Kernels::invariant_info`] names). Only a rheonomic model's (see
    /// [`Kernels::time_slot`]) depend on `t`; take it from [`Kernels::time_of`].
    fn invariants_of(&self, t: f64, q: &[f64], v: &[f64], out: &mut [f64]);
    /// For a rheonomic model (its Lagrangian or a holonomic constraint
    /// depends on time), the state component that carries the state's time
    /// (0 at an initial state, advanced by each step); `None` otherwise.
    fn time_slot(&self) -> Option<usize> {
        None
    }
    /// The physical data of a named initial state; `false` if the model has none of that name.
    fn initial_data(&self, name: &str, q: &mut [f64], v: &mut [f64]) -> bool;

    /// Size of the constrained kinetic metric `K = [[M, Aᵀ], [A, 0]]` (`M`
    /// the Hessian of the energy in the velocities, `A` the velocity-level
    /// constraint rows) that [`Kernels::metric_at`] writes; 0 where the
    /// kernels provide none. [`crate::diagnosis`] reads it.
    fn metric_size(&self) -> usize {
        0
    }

    /// Whether `K` depends on the configuration (if not, a run need not
    /// watch its conditioning).
    fn metric_varies(&self) -> bool {
        self.metric_size() > 0
    }

    /// `K` at the physical state `(q, ξ)` with parameter values `p` (the
    /// diagnosis varies them), row-major, into `out` (`metric_size²` values).
    fn metric_at(&self, _p: &[f64], _q: &[f64], _v: &[f64], _out: &mut [f64]) {}

    /// Rows and columns of `[Ψ; A]`, the Hamel frame's matrix stacked on the
    /// velocity-level constraint rows, that [`Kernels::frame_check_at`]
    /// writes; `None` in generalized coordinates or where not provided.
    fn frame_check_size(&self) -> Option<(usize, usize)> {
        None
    }

    /// `[Ψ; A]` at `(q, ξ)`, row-major, into `out`.
    fn frame_check_at(&self, _q: &[f64], _v: &[f64], _out: &mut [f64]) {}

    // ---- the model glue, once for every back-end ----

    /// The time of the state `z` for its invariants: a rheonomic model's
    /// state carries it ([`Kernels::time_slot`]); 0 for the others, whose
    /// invariants do not depend on it.
    fn time_of(&self, z: &[f64]) -> f64 {
        self.time_slot().and_then(|i| z.get(i).copied()).unwrap_or(0.0)
    }

    /// Rejects parameter values no step can use (non-finite, subnormal).
    fn check_parameters(&self) -> Result<(), StepError> {
        for (name, value) in self.names(NameList::Parameters).iter().zip(self.parameters()) {
            if let Some(e) = hamel_kernel::value::parameter_error(name, value) {
                return Err(StepError::InvalidInput(e));
            }
        }
        Ok(())
    }

    /// The physical state `(q, ξ)` of the scheme state `z` (taken at step
    /// `step`, for errors), written into `q` and `v`. Fails where the
    /// observation system is singular or the result is not finite.
    fn physical_into(&self, z: &OVector<f64, Z>, step: u64, q: &mut [f64], v: &mut [f64]) -> Result<(), StepError> {
        let n = self.observe_size();
        let mut stack = [0.0f64; STACK_OBSERVE];
        let mut heap = Vec::new();
        let y: &mut [f64] = if n <= STACK_OBSERVE {
            &mut stack[..n]
        } else {
            heap.resize(n, 0.0);
            &mut heap
        };
        if n > 0 && !self.observe(z.as_slice(), y) {
            return Err(StepError::Observation {
                step,
                reason: "the mass matrix is singular here (a singularity of the model's coordinates?)".to_string(),
            });
        }
        self.physical_of(z.as_slice(), y, q, v);
        if q.iter().chain(v.iter()).any(|x| !x.is_finite()) {
            return Err(StepError::Observation {
                step,
                reason: "non-finite physical state".to_string(),
            });
        }
        Ok(())
    }

    /// Numbers of physical coordinates and velocities. Implementations that
    /// know them without building name lists should say so: runs call this
    /// at every observed step.
    fn physical_sizes(&self) -> (usize, usize) {
        (
            self.names(NameList::Coordinates).len(),
            self.names(NameList::Velocities).len(),
        )
    }

    /// The physical state `(q, ξ)` of the scheme state `z`, as vectors.
    fn physical_state(&self, z: &OVector<f64, Z>, step: u64) -> Result<(Vec<f64>, Vec<f64>), StepError> {
        let (nq, nv) = self.physical_sizes();
        let (mut q, mut v) = (vec![0.0; nq], vec![0.0; nv]);
        self.physical_into(z, step, &mut q, &mut v)?;
        Ok((q, v))
    }

    /// Evaluates the monitored quantities on the physical state of `z` into
    /// `out`; allocates nothing for models of up to 32 coordinates and velocities.
    fn invariants_into(&self, z: &OVector<f64, Z>, out: &mut [f64]) -> Result<(), String> {
        let (nq, nv) = self.physical_sizes();
        let mut stack = [0.0f64; 2 * STACK_OBSERVE];
        let mut heap = Vec::new();
        let buf: &mut [f64] = if nq + nv <= stack.len() {
            &mut stack[..nq + nv]
        } else {
            heap.resize(nq + nv, 0.0);
            &mut heap
        };
        let (q, v) = buf.split_at_mut(nq);
        self.physical_into(z, 0, q, v).map_err(|e| match e {
            StepError::Observation { reason, .. } => reason,
            other => other.to_string(),
        })?;
        self.invariants_of(self.time_of(z.as_slice()), q, v, out);
        Ok(())
    }

    /// The scheme's state for physical data `(q, ξ)`. Refuses non-finite data,
    /// data whose components a constraint eliminates but that set them
    /// otherwise, and data off the model's constraints (tolerance
    /// `1e-9 · (1 + ‖(q, ξ)‖²)`).
    fn initial_state(&self, q: &[f64], v: &[f64]) -> Result<StateOf<Z, X>, StepError> {
        let qn = self.names(NameList::Coordinates);
        let vn = self.names(NameList::Velocities);
        if q.len() != qn.len() || v.len() != vn.len() {
            return Err(StepError::InvalidInput(format!(
                "expected {} coordinate and {} velocity values, got {} and {}",
                qn.len(),
                vn.len(),
                q.len(),
                v.len()
            )));
        }
        let names: Vec<&str> = qn.iter().chain(&vn).copied().collect();
        if let Some(bad) = q.iter().chain(v).position(|x| !x.is_finite()) {
            return Err(StepError::InvalidInput(format!(
                "initial value of `{}` is not finite",
                names[bad]
            )));
        }
        self.check_parameters()?;
        // Every host's rule (hamel_load::initial applies it too): where the
        // kinetic metric is singular the velocities are not determined, even
        // where a scheme's state can be formed from the data.
        if let Some(e) = singular_start(self, q, v) {
            return Err(e);
        }
        let (zd, xd) = self.dims();
        let mut state = StateOf::zeros(zd, xd);
        self.state_of(q, v, state.z.as_mut_slice(), state.warm.as_mut_slice());
        let scale = 1.0 + q.iter().chain(v).map(|x| x * x).sum::<f64>();
        let tolerance = 1e-9 * scale;
        // Components a constraint eliminates (e.g. `xi[2] = 0`) do not enter the
        // scheme's state: data that set them otherwise are refused, not dropped.
        // A singular start was refused above, so an error here has another cause.
        let (q2, v2) = self.physical_state(&state.z, 0)?;
        for ((name, a), b) in names.iter().zip(q.iter().chain(v)).zip(q2.iter().chain(&v2)) {
            if (a - b).abs() > tolerance {
                return Err(StepError::InvalidInput(format!(
                    "the initial data are off the constraints: `{name}` = {a} but the constrained state has {b:.6e} (difference {:.3e}); project them onto the constraints first",
                    a - b
                )));
            }
        }
        let info = self.invariant_info();
        let mut values = vec![0.0; info.len()];
        self.invariants_of(self.time_of(state.z.as_slice()), &q2, &v2, &mut values);
        for ((name, kind), value) in info.iter().zip(&values) {
            if kind.is_residual() && (value.is_nan() || value.abs() > tolerance) {
                return Err(StepError::InvalidInput(format!(
                    "the initial data violate `{name}` by {value:.3e} (tolerance {tolerance:.1e}); project them onto the constraints first"
                )));
            }
        }
        Ok(state)
    }

    /// The physical data `(q, ξ)` of a named initial state of the model file.
    fn initial_conditions(&self, name: &str) -> Option<(Vec<f64>, Vec<f64>)> {
        let mut q = vec![0.0; self.names(NameList::Coordinates).len()];
        let mut v = vec![0.0; self.names(NameList::Velocities).len()];
        self.initial_data(name, &mut q, &mut v).then_some((q, v))
    }

    /// The scheme's state for a named initial state of the model file.
    fn initial_named(&self, name: &str) -> Result<StateOf<Z, X>, StepError> {
        let (q, v) = self.initial_conditions(name).ok_or_else(|| {
            let known = self.names(NameList::InitialStates);
            StepError::InvalidInput(format!(
                "model `{}` has no initial state `{name}` (it has: {})",
                self.model(),
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                }
            ))
        })?;
        self.initial_state(&q, &v)
    }
}

/// Why `(q, ξ)` cannot start a run: a frame that moves too little, or a
/// singular kinetic metric; `None` where it can.
fn singular_start<S, Z, X>(sys: &S, q: &[f64], v: &[f64]) -> Option<StepError>
where
    S: Kernels<Z, X> + ?Sized,
    Z: Dim,
    X: Dim,
    DefaultAllocator: Alloc<Z, X>,
{
    if let Some(why) = crate::diagnosis::frame_diagnosis(sys, q, v) {
        return Some(StepError::InvalidInput(format!("at the initial state: {why}")));
    }
    crate::diagnosis::metric_diagnosis(sys, q, v).map(|why| {
        StepError::InvalidInput(format!(
            "at the initial state the kinetic metric (with the constraints) is singular, so the velocities are not determined: {why}"
        ))
    })
}
