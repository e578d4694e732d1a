//! A [`StepSystem`] compiled for the run-time back-ends: every function the
//! Rust back-end emits, as a [`Program`] with its declared argument list, and
//! the names and sizes a host needs to run it. The interpreter and the JIT
//! (`hamel-load`) evaluate these programs; the derive prints the same ones.

use std::collections::BTreeMap;

use hamel_kernel::{Arg, Kernel};

use super::program::Program;
use crate::scheme::{InvariantKind, StepSystem};

/// The functions and metadata of one derived step, ready to evaluate.
#[derive(Clone, Debug)]
pub struct CompiledStep {
    /// model name
    pub model: String,
    /// scheme label, e.g. `hamel_averaged`
    pub scheme: String,
    /// which scheme derived it (`None`: a step assembled by hand)
    pub kind: Option<crate::scheme::Scheme>,
    /// parameter names (struct-field spelling) and defaults
    pub params: Vec<(String, f64)>,
    /// state component names
    pub state: Vec<String>,
    /// unknown names
    pub unknowns: Vec<String>,
    /// physical coordinate component names
    pub coordinates: Vec<String>,
    /// physical velocity component names
    pub velocities: Vec<String>,
    /// monitored quantities, energy first
    pub invariants: Vec<(String, InvariantKind)>,
    /// names of the model's initial states, in file order
    pub initials: Vec<String>,
    /// control input names
    pub inputs: Vec<String>,
    /// the Jacobian's band `(kl, ku)` where a banded LU pays
    pub band: Option<(usize, usize)>,
    /// `(row, column)` of the banded Jacobian's entries that can be
    /// non-zero, column by column (empty where dense)
    pub pattern: Vec<(u32, u32)>,
    /// length of the exogenous data `e = (t_k, u_k)` hot kernels read
    /// (0 for a model without forces or inputs)
    pub exogenous_len: usize,
    /// size of the linear solve that recovers the physical state (0: none)
    pub observe_size: usize,
    /// the model's `let` definitions that depend on the physical state and
    /// parameters only: name and number of components, in the order of the
    /// outputs of program `lets` (inputs `p, q, ξ`)
    pub lets: Vec<(String, usize)>,
    /// size of the constrained kinetic metric `K = [[M, Aᵀ], [A, 0]]` that
    /// function `metric` (inputs `p, q, v`) writes row-major (see
    /// [`crate::scheme::HealthKernels`])
    pub metric_size: usize,
    /// whether `K` depends on the configuration (if not, it never needs
    /// watching along a run)
    pub metric_varies: bool,
    /// rows and columns of `[Ψ; A]`, the frame's matrix stacked on the
    /// velocity-level constraint rows, that function `frame_check` (inputs
    /// `p, q, v`) writes row-major; `None` in generalized coordinates. Its
    /// columns are independent exactly when every velocity the constraints
    /// allow moves the configuration.
    pub frame_check: Option<(usize, usize)>,
    /// the state component that carries the time of a rheonomic model's
    /// state (see [`StepSystem::time`]); its invariants read that time
    pub time_slot: Option<usize>,
    pub(crate) functions: BTreeMap<Kernel, CompiledFunction>,
}

/// One function: its program and the arrays it reads and writes.
#[derive(Clone, Debug)]
pub struct CompiledFunction {
    /// the register program
    pub program: Program,
    /// argument arrays in the order their values fill the input registers:
    /// (which argument; length)
    pub inputs: Vec<(Arg, usize)>,
    /// result arrays in the order of the program's outputs: (name, length)
    pub outputs: Vec<(String, usize)>,
}

impl CompiledStep {
    /// Compiles every function of `sys` (without sensitivities).
    pub fn new(sys: &StepSystem) -> Result<CompiledStep, String> {
        // A step assembled by hand has no health kernels yet.
        let with_health;
        let sys = if sys.health.is_none() {
            let mut s = sys.clone();
            s.add_health();
            with_health = s;
            &with_health
        } else {
            sys
        };
        let mut g = sys.graph.clone();
        let mut functions = BTreeMap::new();
        let outputs = |a: &[(String, Vec<crate::sym::Id>)]| a.iter().map(|(n, v)| (n.clone(), v.len())).collect();
        for f in sys.functions() {
            let tape = f
                .tape(&mut g)
                .map_err(|u| format!("internal error: `{}` uses unbound symbol `{}`", f.name, u.0))?;
            let program = super::program::lower(&tape);
            let inputs = f.inputs.iter().map(|(a, v)| (*a, v.len())).collect();
            let outputs = outputs(&f.outputs);
            functions.insert(
                f.name,
                CompiledFunction {
                    program,
                    inputs,
                    outputs,
                },
            );
        }
        // Lets are compiled one by one so that one the back-end cannot
        // evaluate (it cannot happen for model lets, but stay safe) is left out.
        let p: Vec<_> = sys.params.iter().map(|(s, _)| s.sym).collect();
        let q: Vec<_> = sys.phys_q.iter().map(|s| s.sym).collect();
        let v: Vec<_> = sys.phys_v.iter().map(|s| s.sym).collect();
        let inputs: Vec<_> = p.iter().chain(&q).chain(&v).copied().collect();
        let mut lets = Vec::new();
        let mut outs = Vec::new();
        for (name, ids) in &sys.lets {
            if crate::sym::Tape::build(&mut g, &inputs, ids).is_ok() {
                lets.push((name.clone(), ids.len()));
                outs.extend(ids.iter().copied());
            }
        }
        let tape = crate::sym::Tape::build(&mut g, &inputs, &outs)
            .map_err(|u| format!("internal error: lets use `{}`", u.0))?;
        let nlets = outs.len();
        functions.insert(
            Kernel::Lets,
            CompiledFunction {
                program: super::program::lower(&tape),
                inputs: vec![(Arg::P, p.len()), (Arg::Q, q.len()), (Arg::V, v.len())],
                outputs: vec![("l".into(), nlets)],
            },
        );
        let health = sys.health.as_ref().expect("health kernels derived above");
        let names = |s: &[crate::scheme::Slot]| s.iter().map(|s| s.name.clone()).collect::<Vec<_>>();
        Ok(CompiledStep {
            model: sys.model.clone(),
            scheme: sys.scheme.clone(),
            kind: sys.kind,
            params: sys.params.iter().map(|(s, d)| (s.name.clone(), *d)).collect(),
            state: names(&sys.state),
            unknowns: names(&sys.unknowns),
            coordinates: names(&sys.phys_q),
            velocities: names(&sys.phys_v),
            invariants: sys.invariants.iter().map(|i| (i.name.clone(), i.kind)).collect(),
            initials: sys.initials.iter().map(|(n, _, _)| n.clone()).collect(),
            inputs: sys.exogenous[hamel_kernel::Exogenous::of_len(sys.exogenous.len()).input_range()]
                .iter()
                .map(|s| s.name.clone())
                .collect(),
            exogenous_len: sys.exogenous.len(),
            band: sys.band,
            pattern: sys.jacobian_pattern(),
            observe_size: sys.obs_solution.len(),
            lets,
            metric_size: health.metric_size,
            metric_varies: health.metric_varies,
            frame_check: health.frame_check.as_ref().map(|(r, c, _)| (*r, *c)),
            time_slot: sys.time.map(|(i, _)| i),
            functions,
        })
    }

    /// The program of kernel `k`, whose inputs are its argument arrays
    /// concatenated in the order of [`StepSystem::functions`].
    pub fn program(&self, k: Kernel) -> Option<&Program> {
        self.functions.get(&k).map(|f| &f.program)
    }

    /// Kernel `k` with its argument lists (see [`CompiledStep::program`]).
    pub fn function(&self, k: Kernel) -> Option<&CompiledFunction> {
        self.functions.get(&k)
    }

    /// Every kernel.
    pub fn functions(&self) -> impl Iterator<Item = (Kernel, &CompiledFunction)> {
        self.functions.iter().map(|(n, f)| (*n, f))
    }

    /// The kernel of the initial state named `name` in the model file.
    pub fn initial_kernel(&self, name: &str) -> Option<Kernel> {
        self.initials.iter().position(|n| n == name).map(Kernel::Initial)
    }
}
