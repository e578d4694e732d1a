//! The run-time back-end wired to the runtime: a model file's step, compiled
//! to register programs ([`CompiledStep`]), driven by the same Newton driver
//! as derived code through [`StepEquations`] and [`hamel_runtime::DynStepper`].

use std::cell::RefCell;

use hamel_compiler::emit::compiled::CompiledStep;
use hamel_compiler::emit::program::{Instr, Program};
use hamel_compiler::scheme::InvariantKind as SymKind;
use hamel_runtime::dd::Dd;
use hamel_runtime::lu;
use hamel_runtime::nalgebra::{DMatrix, DVector, Dyn};
use hamel_runtime::{DynState, InvariantKind, StepEquations, StepError};

/// A compiled step with parameter values.
#[derive(Debug)]
pub struct TapeSystem {
    step: CompiledStep,
    params: Vec<f64>,
    /// the programs Newton calls every iteration, looked up once
    hot: [Program; 4],
    scratch: RefCell<(Vec<f64>, Vec<f64>)>,
}

const RESIDUAL: usize = 0;
const JACOBIAN: usize = 1;
const INCREMENT: usize = 2;
const PREDICT: usize = 3;

impl TapeSystem {
    /// The step with the parameter values of the model file.
    pub fn new(step: CompiledStep) -> Self {
        let params = step.params.iter().map(|(_, d)| *d).collect();
        let get = |n: &str| {
            step.program(n)
                .cloned()
                .unwrap_or_else(|| panic!("compiled step has no function `{n}`"))
        };
        let hot = [get("residual"), get("jacobian"), get("increment"), get("predict")];
        Self {
            step,
            params,
            hot,
            scratch: RefCell::new((Vec::new(), Vec::new())),
        }
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
        if !value.is_finite() {
            return Err(format!("parameter `{name}` = {value} is not finite"));
        }
        self.params[k] = value;
        Ok(())
    }

    fn run(&self, name: &str, args: &[&[f64]], outs: &mut [&mut [f64]]) {
        let prog: &Program = self
            .step
            .program(name)
            .unwrap_or_else(|| panic!("compiled step has no function `{name}`"));
        let mut guard = self.scratch.borrow_mut();
        let (inputs, regs) = &mut *guard;
        inputs.clear();
        for a in args {
            inputs.extend_from_slice(a);
        }
        let total: usize = outs.iter().map(|o| o.len()).sum();
        let mut flat = vec![0.0; total];
        prog.eval_into(inputs, regs, &mut flat);
        let mut k = 0;
        for o in outs.iter_mut() {
            let n = o.len();
            o.copy_from_slice(&flat[k..k + n]);
            k += n;
        }
    }

    /// Evaluates a hot program with arguments `(p, h, a, b)` into `out`.
    fn hot(&self, which: usize, h: f64, a: &[f64], b: &[f64], out: &mut [f64]) {
        let mut guard = self.scratch.borrow_mut();
        let (inputs, regs) = &mut *guard;
        inputs.clear();
        inputs.extend_from_slice(&self.params);
        inputs.push(h);
        inputs.extend_from_slice(a);
        inputs.extend_from_slice(b);
        self.hot[which].eval_into(inputs, regs, out);
    }

    /// Evaluates a hot program at the state `z + lo` in double-double
    /// arithmetic, as the derived `*_dd` functions do: the state enters as
    /// (hi, lo) pairs, every other input and constant as a double-double with
    /// zero low part; elementary functions act on the rounded value.
    fn hot_dd(&self, which: usize, h: f64, z: &[f64], lo: &[f64], x: &[f64], out: &mut [f64]) {
        let prog = &self.hot[which];
        let np = self.params.len();
        let mut regs: Vec<Dd> = Vec::with_capacity(prog.registers());
        regs.extend(self.params.iter().map(|&v| Dd::from(v)));
        regs.push(Dd::from(h));
        regs.extend(z.iter().zip(lo).map(|(&a, &b)| Dd::new(a, b)));
        regs.extend(x.iter().map(|&v| Dd::from(v)));
        debug_assert_eq!(regs.len(), prog.n_inputs);
        debug_assert_eq!(np + 1 + z.len() + x.len(), prog.n_inputs);
        regs.extend(prog.consts.iter().map(|&c| Dd::from(c)));
        for i in &prog.instrs {
            let r = |k: u32| regs[k as usize];
            let v = match *i {
                Instr::Add(a, b) => r(a) + r(b),
                Instr::Sub(a, b) => r(a) - r(b),
                Instr::Mul(a, b) => r(a) * r(b),
                Instr::Div(a, b) => r(a) / r(b),
                Instr::Neg(a) => -r(a),
                Instr::Sqrt(a) => r(a).sqrt(),
                Instr::Powi(a, n) => r(a).powi(n),
                Instr::Powf(a, e) => r(a).map(|v| v.powf(e)),
                Instr::Pow(a, b) => Dd::from(r(a).to_f64().powf(r(b).to_f64())),
                Instr::Call(f, a) => r(a).map(|v| f.apply(v)),
            };
            regs.push(v);
        }
        for (o, &k) in out.iter_mut().zip(&prog.outputs) {
            *o = regs[k as usize].to_f64();
        }
    }

    /// Physical data `(q, ξ)` of a named initial state of the model file.
    pub fn initial_conditions(&self, name: &str) -> Option<(Vec<f64>, Vec<f64>)> {
        if !self.step.initials.iter().any(|n| n == name) {
            return None;
        }
        let mut q = vec![0.0; self.step.coordinates.len()];
        let mut v = vec![0.0; self.step.velocities.len()];
        self.run(&format!("initial_{name}"), &[&self.params], &mut [&mut q, &mut v]);
        Some((q, v))
    }

    /// The scheme's state for a named initial state.
    pub fn initial(&self, name: &str) -> Result<DynState, StepError> {
        let (q, v) = self.initial_conditions(name).ok_or_else(|| {
            StepError::InvalidInput(format!(
                "model `{}` has no initial state `{name}` (it has: {})",
                self.step.model,
                if self.step.initials.is_empty() {
                    "none".to_string()
                } else {
                    self.step.initials.join(", ")
                }
            ))
        })?;
        self.initial_state(&q, &v)
    }

    /// The scheme's state for physical data; rejects non-finite data and data
    /// off the constraints, as the derived `initial_state` does.
    pub fn initial_state(&self, q: &[f64], v: &[f64]) -> Result<DynState, StepError> {
        let (nq, nv) = (self.step.coordinates.len(), self.step.velocities.len());
        if q.len() != nq || v.len() != nv {
            return Err(StepError::InvalidInput(format!(
                "expected {nq} coordinate and {nv} velocity values, got {} and {}",
                q.len(),
                v.len()
            )));
        }
        if let Some(bad) = q.iter().chain(v).position(|x| !x.is_finite()) {
            let name = self.step.coordinates.iter().chain(&self.step.velocities).nth(bad);
            return Err(StepError::InvalidInput(format!(
                "initial value of `{}` is not finite",
                name.map_or("?", |s| s.as_str())
            )));
        }
        self.check_params()?;
        let mut z = vec![0.0; self.step.state.len()];
        let mut x = vec![0.0; self.step.unknowns.len()];
        self.run("init_state", &[&self.params, q, v], &mut [&mut z, &mut x]);
        let nz = z.len();
        let state = DynState {
            z: DVector::from_vec(z),
            lo: DVector::zeros(nz),
            warm: DVector::from_vec(x),
            step: 0,
        };
        let scale = 1.0 + q.iter().chain(v).map(|x| x * x).sum::<f64>();
        let tolerance = 1e-9 * scale;
        // Components a constraint eliminates (e.g. `xi[2] = 0`) do not enter the
        // scheme's state: data that set them otherwise are refused, not dropped.
        let (q2, v2) = self.physical(&state.z, 0)?;
        let names = self.step.coordinates.iter().chain(&self.step.velocities);
        for ((name, a), b) in names.zip(q.iter().chain(v)).zip(q2.iter().chain(&v2)) {
            if (a - b).abs() > tolerance {
                return Err(StepError::InvalidInput(format!(
                    "the initial data are off the constraints: `{name}` = {a} but the constrained state has {b:.6e} (difference {:.3e}); project them onto the constraints first",
                    a - b
                )));
            }
        }
        let values = self.invariants_at(&q2, &v2);
        for (k, (name, kind)) in self.step.invariants.iter().enumerate() {
            if *kind == SymKind::Constraint && (values[k].is_nan() || values[k].abs() > tolerance) {
                return Err(StepError::InvalidInput(format!(
                    "the initial data violate `{name}` by {:.3e} (tolerance {tolerance:.1e}); project them onto the constraints first",
                    values[k]
                )));
            }
        }
        Ok(state)
    }

    /// Rejects non-finite parameters.
    pub fn check_params(&self) -> Result<(), StepError> {
        for ((name, _), value) in self.step.params.iter().zip(&self.params) {
            if !value.is_finite() {
                return Err(StepError::InvalidInput(format!(
                    "parameter `{name}` = {value} is not finite"
                )));
            }
        }
        Ok(())
    }

    /// The physical state `(q, ξ)` of a scheme state `z` (taken at step `step`, for errors).
    pub fn physical(&self, z: &DVector<f64>, step: u64) -> Result<(Vec<f64>, Vec<f64>), StepError> {
        let nk = self.step.observe_size;
        let mut y = vec![0.0; nk];
        if nk > 0 {
            let mut k = vec![0.0; nk * nk];
            let mut b = vec![0.0; nk];
            self.run("observe_system", &[&self.params, z.as_slice()], &mut [&mut k, &mut b]);
            let km = DMatrix::from_row_slice(nk, nk, &k);
            let mut bv = DVector::from_vec(b);
            lu::solve_in_place(&km, &mut bv).map_err(|_| StepError::Observation {
                step,
                reason: "the mass matrix is singular here (a singularity of the model's coordinates?)".to_string(),
            })?;
            y.copy_from_slice(bv.as_slice());
        }
        let mut q = vec![0.0; self.step.coordinates.len()];
        let mut v = vec![0.0; self.step.velocities.len()];
        self.run("physical", &[&self.params, z.as_slice(), &y], &mut [&mut q, &mut v]);
        if q.iter().chain(&v).any(|x| !x.is_finite()) {
            return Err(StepError::Observation {
                step,
                reason: "non-finite physical state".to_string(),
            });
        }
        Ok((q, v))
    }

    /// The model's `let` definitions (see [`CompiledStep::lets`]) at a physical state, concatenated.
    pub fn lets(&self, q: &[f64], v: &[f64]) -> Vec<f64> {
        let n = self.step.lets.iter().map(|(_, k)| k).sum();
        let mut out = vec![0.0; n];
        self.run("lets", &[&self.params, q, v], &mut [&mut out]);
        out
    }

    /// Names and kinds of the monitored quantities, energy first.
    pub fn invariant_info(&self) -> Vec<(String, InvariantKind)> {
        self.step
            .invariants
            .iter()
            .map(|(n, k)| (n.clone(), kind(*k)))
            .collect()
    }

    /// Energy, invariants and constraint residuals at `z` (names in the compiled step).
    pub fn invariants(&self, z: &DVector<f64>, step: u64) -> Result<Vec<f64>, StepError> {
        let (q, v) = self.physical(z, step)?;
        Ok(self.invariants_at(&q, &v))
    }

    /// Energy, invariants and constraint residuals at a physical state `(q, ξ)`.
    pub fn invariants_at(&self, q: &[f64], v: &[f64]) -> Vec<f64> {
        let mut out = vec![0.0; self.step.invariants.len()];
        self.run("invariants", &[&self.params, q, v], &mut [&mut out]);
        out
    }
}

fn kind(k: SymKind) -> InvariantKind {
    match k {
        SymKind::Energy => InvariantKind::Energy,
        SymKind::Monitored => InvariantKind::Monitored,
        SymKind::Constraint => InvariantKind::Constraint,
    }
}

impl StepEquations<Dyn, Dyn> for TapeSystem {
    fn step_residual(&self, h: f64, z: &DVector<f64>, x: &DVector<f64>) -> DVector<f64> {
        let mut r = DVector::zeros(self.step.unknowns.len());
        self.hot(RESIDUAL, h, z.as_slice(), x.as_slice(), r.as_mut_slice());
        r
    }

    fn step_jacobian(&self, h: f64, z: &DVector<f64>, x: &DVector<f64>) -> DMatrix<f64> {
        let n = self.step.unknowns.len();
        // The program writes row-major; nalgebra stores column-major: the transpose.
        let mut j = DMatrix::zeros(n, n);
        self.hot(JACOBIAN, h, z.as_slice(), x.as_slice(), j.as_mut_slice());
        j.transpose_mut();
        j
    }

    fn step_increment(&self, h: f64, z: &DVector<f64>, x: &DVector<f64>) -> DVector<f64> {
        let mut dz = DVector::zeros(self.step.state.len());
        self.hot(INCREMENT, h, z.as_slice(), x.as_slice(), dz.as_mut_slice());
        dz
    }

    fn step_predict(&self, h: f64, z: &DVector<f64>, w: &DVector<f64>) -> DVector<f64> {
        let mut x0 = DVector::zeros(self.step.unknowns.len());
        self.hot(PREDICT, h, z.as_slice(), w.as_slice(), x0.as_mut_slice());
        x0
    }

    fn step_residual_compensated(
        &self,
        h: f64,
        z: &DVector<f64>,
        lo: &DVector<f64>,
        x: &DVector<f64>,
    ) -> Option<DVector<f64>> {
        let mut r = DVector::zeros(self.step.unknowns.len());
        self.hot_dd(RESIDUAL, h, z.as_slice(), lo.as_slice(), x.as_slice(), r.as_mut_slice());
        Some(r)
    }

    fn step_increment_compensated(
        &self,
        h: f64,
        z: &DVector<f64>,
        lo: &DVector<f64>,
        x: &DVector<f64>,
    ) -> Option<DVector<f64>> {
        let mut dz = DVector::zeros(self.step.state.len());
        self.hot_dd(
            INCREMENT,
            h,
            z.as_slice(),
            lo.as_slice(),
            x.as_slice(),
            dz.as_mut_slice(),
        );
        Some(dz)
    }
}
