//! A model file's step on the run-time back-ends: compiled functions
//! ([`CompiledStep`]) evaluated by an [`Evaluator`], driven by the same Newton
//! driver as derived code through the runtime's [`Kernels`] seam and [`hamel_runtime::DynStepper`].

use hamel_compiler::emit::compiled::CompiledStep;
use hamel_kernel::Kernel;
use hamel_runtime::lu;
use hamel_runtime::nalgebra::{DMatrix, DVector, Dyn};
use hamel_runtime::native::NativeStep;
use hamel_runtime::{DynState, InvariantKind, Kernels, NameList, StepError};

use crate::evaluator::{Args, Evaluator, FnId, Slot};
use crate::{Backend, LoadError};

/// A compiled step with parameter values.
///
/// A clone shares the compiled native code and has its own scratch space:
/// clone a system for each thread that steps it (a `System` is `Send`, not
/// `Sync`).
#[derive(Clone, Debug)]
pub struct System {
    step: std::sync::Arc<CompiledStep>,
    params: Vec<f64>,
    kernels: Evaluator,
    hot: Hot,
    /// the hot kernels as native functions (the JIT's, where they write
    /// whole matrices)
    native: Option<NativeStep>,
    /// time spent preparing the kernels (JIT: compiling them)
    prepared_in: std::time::Duration,
    /// the order of the steps a stepper takes (2: the scheme's own; 4, 6: composed)
    order: u32,
}

/// The functions Newton calls every iteration, looked up once.
#[derive(Clone, Debug)]
struct Hot {
    residual: FnId,
    /// residual and Jacobian, concatenated
    residual_jacobian: FnId,
    increment: FnId,
    predict: FnId,
    /// compiled only when asked for ([`crate::compile_with_sensitivity`])
    sensitivity: Option<FnId>,
    /// likewise, for models with inputs
    input_sensitivity: Option<FnId>,
    /// models with forces
    work: Option<FnId>,
}

impl System {
    /// The step with the parameter values of the model file, evaluated by `backend`.
    pub fn new(step: CompiledStep, backend: Backend) -> Result<Self, LoadError> {
        Self::new_kept(step, backend, None)
    }

    /// [`System::new`], loading the JIT's machine code from a cache entry
    /// instead of compiling it when the entry holds code for this step, and
    /// keeping it there when it does not.
    pub(crate) fn new_kept(
        step: CompiledStep,
        backend: Backend,
        cache: Option<(&crate::Cache, &crate::cache::Entry)>,
    ) -> Result<Self, LoadError> {
        let params: Vec<f64> = step.params.iter().map(|(_, d)| *d).collect();
        let started = std::time::Instant::now();
        let kernels = Evaluator::new_kept(&step, backend, cache)?;
        let prepared_in = started.elapsed();
        let get = |k: Kernel| {
            kernels
                .id(k)
                .ok_or_else(|| LoadError::Scheme(format!("internal error: the compiled step has no function `{k}`")))
        };
        let hot = Hot {
            residual: get(Kernel::Residual)?,
            residual_jacobian: get(Kernel::ResidualJacobian)?,
            increment: get(Kernel::Increment)?,
            predict: get(Kernel::Predict)?,
            sensitivity: kernels.id(Kernel::SensitivityParts),
            input_sensitivity: kernels.id(Kernel::InputSensitivityParts),
            work: kernels.id(Kernel::Work),
        };
        let native = native_step(&step, &kernels, &hot, params.len());
        Ok(Self {
            step: step.into(),
            params,
            kernels,
            native,
            hot,
            prepared_in,
            order: 2,
        })
    }

    /// Wall time spent preparing the kernels for the back-end (for the JIT:
    /// compiling every function to native code).
    pub fn prepare_time(&self) -> std::time::Duration {
        self.prepared_in
    }

    /// Makes steppers of this system take steps of order `order`: 2, the
    /// scheme's own step (the default), or 4 or 6, the scheme composed with
    /// itself (`hamel_runtime::compose`). Orders 4 and 6 need a symmetric
    /// scheme; the error names the argument `order`.
    pub fn set_order(&mut self, order: u32) -> Result<(), LoadError> {
        let constrained = self.step.invariants.iter().any(|(_, k)| k.is_residual());
        hamel_compiler::scheme::compose::check_order(self.step.kind, order, constrained)?;
        self.order = order;
        Ok(())
    }

    /// The order of the steps steppers of this system take (see [`System::set_order`]).
    pub fn step_order(&self) -> u32 {
        self.order
    }

    /// Whether the compiled Newton Jacobian writes only its band and the
    /// rows its banded LU fills in, or only its pattern's entries (the JIT,
    /// on systems whose Jacobian is banded): what Newton's matrices cost
    /// then grows with the band, not with the square of the unknowns.
    pub fn writes_jacobian_band(&self) -> bool {
        self.kernels.writes_band(self.hot.residual_jacobian)
    }

    /// The first loop the compiled residual-and-Jacobian kernel runs (the
    /// JIT, on a long chain): its iterations, one per link it covers, and
    /// the instructions of each; `None` where it is straight-line code.
    pub fn jacobian_loop(&self) -> Option<(usize, usize)> {
        self.jacobian_loops()?.first().copied()
    }

    /// Every loop the compiled residual-and-Jacobian kernel runs, in order
    /// (a second sweep over the links follows the first where the first's
    /// results feed every link); `None` where it is straight-line code.
    pub fn jacobian_loops(&self) -> Option<Vec<(usize, usize)>> {
        self.kernels.loop_shape(self.hot.residual_jacobian)
    }

    /// Whether the compiled Newton Jacobian writes the values of its
    /// [pattern](Kernels::jacobian_pattern)'s entries into an array of
    /// their own (see [`Kernels::residual_jacobian_pattern`]): the JIT, on
    /// systems whose banded Jacobian has a pattern.
    pub fn writes_jacobian_pattern(&self) -> bool {
        self.kernels.writes_pattern(self.hot.residual_jacobian).is_some()
    }

    /// The back-end evaluating the kernels.
    pub fn backend(&self) -> Backend {
        self.kernels.backend()
    }

    /// The compiled step (names, sizes, programs).
    pub fn compiled(&self) -> &CompiledStep {
        &self.step
    }

    /// Sets parameter `name` (struct-field spelling, e.g. `m_1` for `m[1]`).
    pub fn set_param(&mut self, name: &str, value: f64) -> Result<(), String> {
        let k = self.step.params.iter().position(|(n, _)| n == name).ok_or_else(|| {
            let known: Vec<&str> = self.step.params.iter().map(|(n, _)| n.as_str()).collect();
            format!(
                "model `{}` has no parameter `{name}` (it has: {})",
                self.step.model,
                known.join(", ")
            )
        })?;
        if let Some(e) = hamel_kernel::value::parameter_error(name, value) {
            return Err(e);
        }
        self.params[k] = value;
        Ok(())
    }

    /// The current value of parameter `name` (struct-field spelling).
    pub fn parameter(&self, name: &str) -> Option<f64> {
        let k = self.step.params.iter().position(|(n, _)| n == name)?;
        Some(self.params[k])
    }

    /// The current parameter values, in the order of [`CompiledStep::params`].
    pub fn parameters_vec(&self) -> Vec<f64> {
        self.params.clone()
    }

    /// Sets every parameter at once, in the order of [`CompiledStep::params`].
    pub fn set_param_values(&mut self, values: &[f64]) -> Result<(), String> {
        if values.len() != self.params.len() {
            return Err(format!(
                "model `{}` has {} parameter(s), {} value(s) given",
                self.step.model,
                self.params.len(),
                values.len()
            ));
        }
        for (k, &value) in values.iter().enumerate() {
            if let Some(e) = hamel_kernel::value::parameter_error(&self.step.params[k].0, value) {
                return Err(e);
            }
        }
        self.params.copy_from_slice(values);
        Ok(())
    }

    /// Evaluates the cold kernel `k` on `args`, its outputs split into `outs`.
    fn run(&self, k: Kernel, args: &Args, outs: &mut [&mut [f64]]) {
        let f = self
            .kernels
            .id(k)
            .unwrap_or_else(|| panic!("compiled step has no function `{k}`"));
        self.kernels.eval_split(f, args, outs);
    }

    /// Arguments of a hot kernel: parameters, step size, state and `slot`.
    fn hot_args<'a>(&'a self, h: &'a [f64], e: &'a [f64], z: &'a [f64], slot: Slot, b: &'a [f64]) -> Args<'a> {
        Args::default()
            .with(Slot::P, &self.params)
            .with(Slot::H, h)
            .with(Slot::E, e)
            .with(Slot::Z, z)
            .with(slot, b)
    }

    fn pqv<'a>(&'a self, q: &'a [f64], v: &'a [f64]) -> Args<'a> {
        Args::default()
            .with(Slot::P, &self.params)
            .with(Slot::Q, q)
            .with(Slot::V, v)
    }

    /// Physical data `(q, ξ)` of a named initial state of the model file.
    pub fn initial_conditions(&self, name: &str) -> Option<(Vec<f64>, Vec<f64>)> {
        Kernels::initial_conditions(self, name)
    }

    /// The scheme's state for a named initial state.
    pub fn initial(&self, name: &str) -> Result<DynState, StepError> {
        self.initial_named(name)
    }

    /// Rejects parameter values no step can use (non-finite, subnormal).
    pub fn check_params(&self) -> Result<(), StepError> {
        self.check_parameters()
    }

    /// The physical state `(q, ξ)` of a scheme state `z` (taken at step `step`, for errors).
    pub fn physical(&self, z: &DVector<f64>, step: u64) -> Result<(Vec<f64>, Vec<f64>), StepError> {
        self.physical_state(z, step)
    }

    /// The model's `let` definitions (see [`CompiledStep::lets`]) at a physical state, concatenated.
    pub fn lets(&self, q: &[f64], v: &[f64]) -> Vec<f64> {
        let n = self.step.lets.iter().map(|(_, k)| k).sum();
        let mut out = vec![0.0; n];
        self.run(Kernel::Lets, &self.pqv(q, v), &mut [&mut out]);
        out
    }

    /// Condition number of the constrained kinetic metric `[[M, Aᵀ], [A, 0]]`
    /// at a physical state (see [`hamel_runtime::diagnosis::metric_condition`]).
    pub fn metric_condition(&self, q: &[f64], v: &[f64]) -> f64 {
        hamel_runtime::diagnosis::metric_condition(self, q, v)
    }

    /// Why the constrained kinetic metric is singular at `(q, v)`, naming the
    /// cause; `None` where it is not (see
    /// [`hamel_runtime::diagnosis::metric_diagnosis`]).
    pub fn metric_diagnosis(&self, q: &[f64], v: &[f64]) -> Option<String> {
        hamel_runtime::diagnosis::metric_diagnosis(self, q, v)
    }

    /// Why the frame cannot carry the motion at `(q, v)`; `None` where it is
    /// fine or where the model is in generalized coordinates (see
    /// [`hamel_runtime::diagnosis::frame_diagnosis`]).
    pub fn frame_diagnosis(&self, q: &[f64], v: &[f64]) -> Option<String> {
        hamel_runtime::diagnosis::frame_diagnosis(self, q, v)
    }

    /// Energy, invariants and constraint residuals at `z` (names in the compiled step).
    pub fn invariants(&self, z: &DVector<f64>, step: u64) -> Result<Vec<f64>, StepError> {
        let (q, v) = self.physical(z, step)?;
        Ok(self.invariants_at(self.time_of(z.as_slice()), &q, &v))
    }

    /// Energy, invariants and constraint residuals at a physical state `(q, ξ)`
    /// at time `t` (which only a rheonomic model's depend on).
    pub fn invariants_at(&self, t: f64, q: &[f64], v: &[f64]) -> Vec<f64> {
        let mut out = vec![0.0; self.step.invariants.len()];
        self.invariants_of(t, q, v, &mut out);
        out
    }
}

/// The native step of a JIT-compiled system: its four hot kernels, where
/// the Jacobian is written whole.
fn native_step(step: &CompiledStep, kernels: &Evaluator, hot: &Hot, np: usize) -> Option<NativeStep> {
    if kernels.writes_band(hot.residual_jacobian) {
        return None;
    }
    let (residual, s1, code) = kernels.native(hot.residual)?;
    let (residual_jacobian, s2, _) = kernels.native(hot.residual_jacobian)?;
    let (increment, s3, _) = kernels.native(hot.increment)?;
    let (predict, s4, _) = kernels.native(hot.predict)?;
    let (nz, nx) = (step.state.len(), step.unknowns.len());
    // The argument arrays each function declares, of their declared lengths.
    let declared = |f: FnId| {
        kernels.inputs(f).iter().all(|&(s, n)| match s {
            Slot::P => n == np,
            Slot::H => n == 1,
            Slot::E => n == step.exogenous_len,
            Slot::Z => n == nz,
            Slot::X | Slot::W => n == nx,
            _ => false,
        })
    };
    let outputs = |f: FnId, lengths: &[usize]| kernels.output_arrays(f) == Some(lengths);
    let fits = [hot.residual, hot.residual_jacobian, hot.increment, hot.predict]
        .into_iter()
        .all(declared)
        && outputs(hot.residual, &[nx])
        && outputs(hot.residual_jacobian, &[nx, nx * nx])
        && outputs(hot.increment, &[nz])
        && outputs(hot.predict, &[nx]);
    // SAFETY: the functions are the JIT's direct entries of the step's
    // kernels (`Evaluator::native`, laid out by `native::passed` for `nx`
    // unknowns), which read the argument arrays they declare (checked above
    // to be of the sizes given) and write their output arrays (checked
    // above), the Jacobian whole (not band-written), using at most their
    // scratch lengths of scratch space; `code` keeps them alive.
    fits.then(|| unsafe {
        NativeStep::new(
            residual,
            residual_jacobian,
            increment,
            predict,
            (np, step.exogenous_len, nz, nx),
            s1.max(s2).max(s3).max(s4),
            code,
        )
    })
}

impl Kernels<Dyn, Dyn> for System {
    fn native(&self) -> Option<(&NativeStep, &[f64])> {
        Some((self.native.as_ref()?, &self.params))
    }

    fn model(&self) -> &str {
        &self.step.model
    }

    fn metric_size(&self) -> usize {
        self.step.metric_size
    }

    fn metric_varies(&self) -> bool {
        self.step.metric_varies
    }

    fn metric_at(&self, p: &[f64], q: &[f64], v: &[f64], out: &mut [f64]) {
        // The kernel is the metric's product with a direction.
        hamel_runtime::columns::form(self.step.metric_size, out, |u, column| {
            let args = Args::default()
                .with(Slot::P, p)
                .with(Slot::Q, q)
                .with(Slot::V, v)
                .with(Slot::U, u);
            self.run(Kernel::Metric, &args, &mut [column]);
        });
    }

    fn frame_check_size(&self) -> Option<(usize, usize)> {
        self.step.frame_check
    }

    fn frame_check_at(&self, q: &[f64], v: &[f64], out: &mut [f64]) {
        self.run(Kernel::FrameCheck, &self.pqv(q, v), &mut [out]);
    }

    fn scheme(&self) -> &str {
        &self.step.scheme
    }

    fn order(&self) -> u32 {
        self.order
    }

    fn dims(&self) -> (Dyn, Dyn) {
        (Dyn(self.step.state.len()), Dyn(self.step.unknowns.len()))
    }

    fn names(&self, list: NameList) -> Vec<&str> {
        let v: Vec<&str> = match list {
            NameList::Parameters => return self.step.params.iter().map(|(n, _)| n.as_str()).collect(),
            NameList::Coordinates => self.step.coordinates.iter().map(String::as_str).collect(),
            NameList::Velocities => self.step.velocities.iter().map(String::as_str).collect(),
            NameList::State => self.step.state.iter().map(String::as_str).collect(),
            NameList::Unknowns => self.step.unknowns.iter().map(String::as_str).collect(),
            NameList::InitialStates => self.step.initials.iter().map(String::as_str).collect(),
            NameList::Inputs => self.step.inputs.iter().map(String::as_str).collect(),
        };
        v
    }

    fn invariant_info(&self) -> Vec<(&str, InvariantKind)> {
        self.step.invariants.iter().map(|(n, k)| (n.as_str(), *k)).collect()
    }

    fn parameters(&self) -> Vec<f64> {
        self.params.clone()
    }

    fn residual(&self, h: f64, e: &[f64], z: &DVector<f64>, x: &DVector<f64>, out: &mut DVector<f64>) {
        let h = [h];
        let args = self.hot_args(&h, e, z.as_slice(), Slot::X, x.as_slice());
        self.kernels.eval(self.hot.residual, &args, out.as_mut_slice());
    }

    fn jacobian(&self, h: f64, e: &[f64], z: &DVector<f64>, x: &DVector<f64>, out: &mut DMatrix<f64>) {
        // As the derived code does: the fused function, its residual dropped.
        let h = [h];
        let args = self.hot_args(&h, e, z.as_slice(), Slot::X, x.as_slice());
        // The program writes column-major, as nalgebra stores matrices.
        self.kernels
            .eval_tail(self.hot.residual_jacobian, &args, x.len(), out.as_mut_slice());
    }

    fn residual_jacobian(
        &self,
        h: f64,
        e: &[f64],
        z: &DVector<f64>,
        x: &DVector<f64>,
        r: &mut DVector<f64>,
        j: &mut DMatrix<f64>,
    ) {
        let h = [h];
        let args = self.hot_args(&h, e, z.as_slice(), Slot::X, x.as_slice());
        self.kernels.eval_split(
            self.hot.residual_jacobian,
            &args,
            &mut [r.as_mut_slice(), j.as_mut_slice()],
        );
    }

    fn residual_jacobian_band(
        &self,
        h: f64,
        e: &[f64],
        z: &DVector<f64>,
        x: &DVector<f64>,
        r: &mut DVector<f64>,
        j: &mut DMatrix<f64>,
    ) {
        let h = [h];
        let args = self.hot_args(&h, e, z.as_slice(), Slot::X, x.as_slice());
        self.kernels.eval_split_band(
            self.hot.residual_jacobian,
            &args,
            &mut [r.as_mut_slice(), j.as_mut_slice()],
        );
    }

    fn residual_jacobian_pattern(
        &self,
        h: f64,
        e: &[f64],
        z: &DVector<f64>,
        x: &DVector<f64>,
        r: &mut DVector<f64>,
        values: &mut [f64],
    ) -> bool {
        if self.kernels.writes_pattern(self.hot.residual_jacobian) != Some(values.len()) {
            return false;
        }
        let h = [h];
        let args = self.hot_args(&h, e, z.as_slice(), Slot::X, x.as_slice());
        self.kernels
            .eval_pattern(self.hot.residual_jacobian, &args, &mut [r.as_mut_slice(), values]);
        true
    }

    fn increment(&self, h: f64, e: &[f64], z: &DVector<f64>, x: &DVector<f64>, out: &mut DVector<f64>) {
        let h = [h];
        let args = self.hot_args(&h, e, z.as_slice(), Slot::X, x.as_slice());
        self.kernels.eval(self.hot.increment, &args, out.as_mut_slice());
    }

    fn predict(&self, h: f64, e: &[f64], z: &DVector<f64>, previous: &DVector<f64>, out: &mut DVector<f64>) {
        let h = [h];
        let args = self.hot_args(&h, e, z.as_slice(), Slot::W, previous.as_slice());
        self.kernels.eval(self.hot.predict, &args, out.as_mut_slice());
    }

    fn residual_compensated(
        &self,
        h: f64,
        e: &[f64],
        z: &DVector<f64>,
        lo: &DVector<f64>,
        x: &DVector<f64>,
        out: &mut DVector<f64>,
    ) -> bool {
        let h = [h];
        let args = self.hot_args(&h, e, z.as_slice(), Slot::X, x.as_slice());
        self.kernels
            .eval_dd(self.hot.residual, &args, Slot::Z, lo.as_slice(), out.as_mut_slice());
        true
    }

    fn increment_compensated(
        &self,
        h: f64,
        e: &[f64],
        z: &DVector<f64>,
        lo: &DVector<f64>,
        x: &DVector<f64>,
        out: &mut DVector<f64>,
    ) -> bool {
        let h = [h];
        let args = self.hot_args(&h, e, z.as_slice(), Slot::X, x.as_slice());
        self.kernels
            .eval_dd(self.hot.increment, &args, Slot::Z, lo.as_slice(), out.as_mut_slice());
        true
    }

    fn exogenous_len(&self) -> usize {
        self.step.exogenous_len
    }

    fn jacobian_band(&self) -> Option<(usize, usize)> {
        self.step.band
    }

    fn jacobian_pattern(&self) -> Option<&[(u32, u32)]> {
        (!self.step.pattern.is_empty()).then_some(&self.step.pattern[..])
    }

    fn lu_compiler(&self) -> Option<&'static dyn hamel_runtime::lu_code::LuCompiler> {
        // Only where it compiles: a schedule lent a compiler replays even a
        // nearly full band, which pays once its steps run compiled.
        let compiles = self.kernels.backend() == Backend::Jit && hamel_jit::LU_COMPILED;
        compiles.then_some(&crate::lu_jit::JIT_LU as _)
    }

    fn kernel_ops(&self) -> Option<(usize, usize)> {
        let ops = |k: Kernel| self.step.function(k).map(|f| f.program.instrs.len());
        Some((ops(Kernel::Residual)?, ops(Kernel::ResidualJacobian)?))
    }

    fn input_sensitivity_parts(
        &self,
        h: f64,
        e: &[f64],
        z: &DVector<f64>,
        x: &DVector<f64>,
    ) -> Option<(DMatrix<f64>, DMatrix<f64>)> {
        let f = self.hot.input_sensitivity?;
        let (nz, nx, nu) = (z.len(), x.len(), self.step.inputs.len());
        let h = [h];
        let args = self.hot_args(&h, e, z.as_slice(), Slot::X, x.as_slice());
        let mut flat = vec![0.0; (nx + nz) * nu];
        self.kernels.eval(f, &args, &mut flat);
        let (ru, uu) = flat.split_at(nx * nu);
        Some((DMatrix::from_row_slice(nx, nu, ru), DMatrix::from_row_slice(nz, nu, uu)))
    }

    fn work(&self, h: f64, e: &[f64], z: &DVector<f64>, x: &DVector<f64>) -> Option<f64> {
        let f = self.hot.work?;
        let h = [h];
        let args = self.hot_args(&h, e, z.as_slice(), Slot::X, x.as_slice());
        let mut w = [0.0];
        self.kernels.eval(f, &args, &mut w);
        Some(w[0])
    }

    fn forced(&self) -> bool {
        self.hot.work.is_some()
    }

    fn sensitivity_parts(
        &self,
        h: f64,
        e: &[f64],
        z: &DVector<f64>,
        x: &DVector<f64>,
    ) -> Option<(DMatrix<f64>, DMatrix<f64>, DMatrix<f64>)> {
        let f = self.hot.sensitivity?;
        let (nz, nx) = (z.len(), x.len());
        let h = [h];
        let args = self.hot_args(&h, e, z.as_slice(), Slot::X, x.as_slice());
        let mut flat = vec![0.0; nx * nz + nz * nz + nz * nx];
        self.kernels.eval(f, &args, &mut flat);
        // Row-major blocks ∂R/∂z (nx×nz), ∂U/∂z (nz×nz), ∂U/∂x (nz×nx).
        let (rz, rest) = flat.split_at(nx * nz);
        let (uz, ux) = rest.split_at(nz * nz);
        Some((
            DMatrix::from_row_slice(nx, nz, rz),
            DMatrix::from_row_slice(nz, nz, uz),
            DMatrix::from_row_slice(nz, nx, ux),
        ))
    }

    fn observe_size(&self) -> usize {
        self.step.observe_size
    }

    fn physical_sizes(&self) -> (usize, usize) {
        (self.step.coordinates.len(), self.step.velocities.len())
    }

    fn state_of(&self, q: &[f64], v: &[f64], z: &mut [f64], x: &mut [f64]) {
        self.run(Kernel::InitState, &self.pqv(q, v), &mut [z, x]);
    }

    fn observe(&self, z: &[f64], y: &mut [f64]) -> bool {
        // The kernel is the system's product with a direction (and `b`,
        // which every call writes).
        let nk = self.step.observe_size;
        let (mut k, mut b) = (vec![0.0; nk * nk], vec![0.0; nk]);
        hamel_runtime::columns::form(nk, &mut k, |u, column| {
            let args = Args::default()
                .with(Slot::P, &self.params)
                .with(Slot::Z, z)
                .with(Slot::U, u);
            self.run(Kernel::ObserveSystem, &args, &mut [column, &mut b]);
        });
        let km = DMatrix::from_row_slice(nk, nk, &k);
        let mut bv = DVector::from_vec(b);
        if lu::solve_in_place(&km, &mut bv).is_err() {
            return false;
        }
        y.copy_from_slice(bv.as_slice());
        true
    }

    fn physical_of(&self, z: &[f64], y: &[f64], q: &mut [f64], v: &mut [f64]) {
        self.run(
            Kernel::Physical,
            &Args::default()
                .with(Slot::P, &self.params)
                .with(Slot::Z, z)
                .with(Slot::Y, y),
            &mut [q, v],
        );
    }

    fn invariants_of(&self, t: f64, q: &[f64], v: &[f64], out: &mut [f64]) {
        let n = self.step.invariants.len();
        let t = [t];
        self.run(
            Kernel::Invariants,
            &self.pqv(q, v).with(Slot::T, &t),
            &mut [&mut out[..n]],
        );
    }

    fn time_slot(&self) -> Option<usize> {
        self.step.time_slot
    }

    fn initial_data(&self, name: &str, q: &mut [f64], v: &mut [f64]) -> bool {
        let Some(k) = self.step.initial_kernel(name) else {
            return false;
        };
        self.run(k, &Args::default().with(Slot::P, &self.params), &mut [q, v]);
        true
    }
}
