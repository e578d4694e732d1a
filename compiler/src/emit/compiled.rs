//! A [`StepSystem`] compiled for the run-time back-end: every function the
//! Rust back-end emits, as a [`Program`], with the names and sizes a tool
//! needs to run it. Pure `f64` evaluation; the runtime's Newton driver is
//! wired to it by the tools (`hamel-cli`), as the derive wires generated code.

use std::collections::BTreeMap;

use super::program::Program;
use crate::scheme::{InvariantKind, StepSystem};

/// The functions and metadata of one derived step, ready to evaluate.
#[derive(Clone, Debug)]
pub struct CompiledStep {
    /// model name
    pub model: String,
    /// scheme label, e.g. `hamel(averaged)`
    pub scheme: String,
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
    /// size of the linear solve that recovers the physical state (0: none)
    pub observe_size: usize,
    /// the model's `let` definitions that depend on the physical state and
    /// parameters only: name and number of components, in the order of the
    /// outputs of program `lets` (inputs `p, q, ξ`)
    pub lets: Vec<(String, usize)>,
    programs: BTreeMap<String, Program>,
}

impl CompiledStep {
    /// Compiles every function of `sys` (without sensitivities).
    pub fn new(sys: &StepSystem) -> Result<CompiledStep, String> {
        let mut g = sys.graph.clone();
        let mut programs = BTreeMap::new();
        for f in sys.functions() {
            let tape = f
                .tape(&mut g)
                .map_err(|u| format!("internal error: `{}` uses unbound symbol `{}`", f.name, u.0))?;
            programs.insert(f.name.clone(), Program::from_tape(&tape));
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
        programs.insert("lets".to_string(), Program::from_tape(&tape));
        let names = |s: &[crate::scheme::Slot]| s.iter().map(|s| s.name.clone()).collect::<Vec<_>>();
        Ok(CompiledStep {
            model: sys.model.clone(),
            scheme: sys.scheme.clone(),
            params: sys.params.iter().map(|(s, d)| (s.name.clone(), *d)).collect(),
            state: names(&sys.state),
            unknowns: names(&sys.unknowns),
            coordinates: names(&sys.phys_q),
            velocities: names(&sys.phys_v),
            invariants: sys.invariants.iter().map(|i| (i.name.clone(), i.kind)).collect(),
            initials: sys.initials.iter().map(|(n, _, _)| n.clone()).collect(),
            observe_size: sys.obs_solution.len(),
            lets,
            programs,
        })
    }

    /// The program of function `name` (`residual`, `jacobian`, `increment`,
    /// `predict`, `observe_system`, `physical`, `invariants`, `init_state`,
    /// `initial_<state>`), whose inputs are its argument arrays concatenated
    /// in the order of [`StepSystem::functions`].
    pub fn program(&self, name: &str) -> Option<&Program> {
        self.programs.get(name)
    }
}
