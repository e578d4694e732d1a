//! What the constrained schemes (Störmer–Verlet with index reduction, RATTLE,
//! energy–momentum) need of a model: generalized coordinates, a constant mass
//! matrix, a potential and holonomic constraints with their derivatives.

use crate::model::Model;
use crate::sym::{gradient, hessian, jacobian, linsolve, Id};

use super::step::Draft;
use super::SchemeError;
use crate::sym::vector::matvec;
use crate::sym::Graph;

/// `L = ½ q̇ᵀ M q̇ − V(q)` with constant `M`, and constraints `g(q) = 0`.
pub struct ConstantMass {
    /// `M⁻¹` (expressions of parameters)
    pub m_inv: Vec<Vec<Id>>,
    /// `M`
    pub m: Vec<Vec<Id>>,
    /// `V(q)`
    pub v: Id,
    /// `∇V(q)`
    pub grad_v: Vec<Id>,
    /// `g(q)`
    pub g: Vec<Id>,
    /// `G(q) = ∂g/∂q`, one row per constraint
    pub gq: Vec<Vec<Id>>,
    /// Hessians `∇²g_i(q)`
    pub hess_g: Vec<Vec<Vec<Id>>>,
}

/// Checks the model's form for scheme `name` and extracts its parts.
pub fn analyse(model: &mut Model, name: &str) -> Result<ConstantMass, SchemeError> {
    let file = model.file.clone();
    if model.frame.is_some() {
        return Err(SchemeError(format!(
            "{name} needs a model in generalized coordinates (no `frame` block); {file} defines a Hamel frame"
        )));
    }
    if !model.velocity_constraints.is_empty() {
        return Err(SchemeError(format!(
            "{name} does not handle velocity constraints; {file} has some"
        )));
    }
    if let Some(why) = not_constant_mass(model) {
        return Err(SchemeError(format!("{name} {why}")));
    }
    let q = model.q_syms();
    let v = model.v_syms();
    let l = model.lagrangian;
    let g = &mut model.graph;
    let p = gradient(g, l, &v);
    let m = hessian(g, &p, &v);
    let zero = g.constant(0.0);
    let zeros = vec![zero; v.len()];
    let map: crate::sym::SubstMap = v.iter().copied().zip(zeros.iter().copied()).collect();
    let l0 = g.substitute(l, &map);
    let pot = g.neg(l0);
    let grad_v = gradient(g, pot, &q);
    let one = g.constant(1.0);
    let n = q.len();
    let eye: Vec<Vec<Id>> = (0..n)
        .map(|i| (0..n).map(|j| if i == j { one } else { zero }).collect())
        .collect();
    let m_inv = linsolve::solve(g, &m, &eye)
        .ok_or_else(|| SchemeError(format!("{name}: the mass matrix of {file} is singular")))?;
    let gs: Vec<Id> = model.holonomic.iter().map(|c| c.expr).collect();
    let gq = jacobian(g, &gs, &q);
    let hess_g = gq.iter().map(|row| jacobian(g, row, &q)).collect();
    Ok(ConstantMass {
        m_inv,
        m,
        v: pot,
        grad_v,
        g: gs,
        gq,
        hess_g,
    })
}

/// Why the Lagrangian of `model` (in generalized coordinates) is not
/// `½ q̇ᵀ M q̇ − V(q)` with a constant `M`, as a phrase after the scheme's
/// name (`needs a constant mass matrix; …`), or `None` when it is.
pub fn not_constant_mass(model: &mut Model) -> Option<String> {
    let file = model.file.clone();
    let q = model.q_syms();
    let v = model.v_syms();
    let l = model.lagrangian;
    let g = &mut model.graph;
    let p = gradient(g, l, &v);
    let m = hessian(g, &p, &v);
    let moving: Vec<Id> = q.iter().chain(&v).copied().chain([model.time]).collect();
    // One walk for the whole matrix; an entry by entry search only to name
    // the one that moves (a walk per entry, each with a flag per node of
    // the graph, was a tenth of a 256-link chain's derivation).
    let moves = g.depends_on_any(&m.concat(), &moving);
    for (i, row) in m.iter().enumerate().filter(|_| moves) {
        for (j, &e) in row.iter().enumerate() {
            if g.depends_on(e, &moving) {
                let dep = if g.depends_on(e, &v) {
                    "the velocities"
                } else if g.depends_on(e, &q) {
                    "the coordinates"
                } else {
                    "time"
                };
                return Some(format!(
                    "needs a constant mass matrix; the mass matrix of {file} depends on {dep} (entry [{i}][{j}] = {})",
                    g.display(e)
                ));
            }
        }
    }
    let zero = g.constant(0.0);
    let zeros = vec![zero; v.len()];
    let map: crate::sym::SubstMap = v.iter().copied().zip(zeros.iter().copied()).collect();
    for b in g.substitute_all(&p, &map) {
        if !g.is_const(b, 0.0) {
            return Some(format!(
                "needs L = ½ q̇ᵀ M q̇ − V(q); the Lagrangian of {file} has terms linear in the velocities"
            ));
        }
    }
    None
}

/// The scheme-specific parts of a step on the state `(q, p)` of a
/// constant-mass model (RATTLE, Störmer–Verlet, energy–momentum).
pub struct MomentumStep {
    /// scheme label
    pub scheme: &'static str,
    /// step size symbol
    pub h: Id,
    /// state symbols `(q, p)`
    pub z: Vec<Id>,
    /// unknown symbols and names
    pub unknowns: Vec<(Id, String)>,
    /// previous-solution symbols
    pub previous: Vec<Id>,
    /// residual
    pub residual: Vec<Id>,
    /// `(q', p')`
    pub next: Vec<Id>,
    /// predictor
    pub predictor: Vec<Id>,
    /// first warm start, in the physical symbols
    pub init_warm: Vec<Id>,
    /// unknowns that become state components
    pub base: Vec<Option<usize>>,
    /// discrete work of the external force
    pub work: Option<Id>,
}

impl MomentumStep {
    /// The draft: names `q…`, `p(q…)`, observation `ξ = M⁻¹ p`, initial state `(q, M ξ)`.
    pub fn draft(self, g: &mut Graph, model: &Model, cm: &ConstantMass) -> Draft {
        let n = model.coords.len();
        let (q0, p0) = self.z.split_at(n);
        let obs_v = matvec(g, &cm.m_inv, p0);
        let mv = matvec(g, &cm.m, &model.v_syms());
        let state_names = model
            .coords
            .iter()
            .map(|c| c.name.clone())
            .chain(model.coords.iter().map(|c| format!("p({})", c.name)));
        Draft {
            scheme: self.scheme.into(),
            h: self.h,
            state: self.z.iter().copied().zip(state_names).collect(),
            unknowns: self.unknowns,
            previous: self.previous,
            residual: self.residual,
            next: self.next,
            predictor: self.predictor,
            init_state: model.q_syms().into_iter().chain(mv).collect(),
            init_warm: self.init_warm,
            obs_matrix: vec![],
            obs_applied: None,
            obs_rhs: vec![],
            obs_solution: vec![],
            obs_q: q0.to_vec(),
            obs_v,
            base: self.base,
            work: self.work,
            auxiliary: vec![],
            kinetic_metric: None,
            momenta: None,
            free_motion: None,
            physical_locals: Vec::new(),
        }
    }
}

/// Names `f(c)` for every coordinate component `c`.
pub fn coordinate_names(model: &Model, f: impl Fn(&str) -> String) -> Vec<String> {
    model.coords.iter().map(|c| f(&c.name)).collect()
}
