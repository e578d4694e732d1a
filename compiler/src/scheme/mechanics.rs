//! Continuous Hamel quantities of a model (docs/schemes.md §1), as expressions in the
//! model's symbols `q`, `ξ` and parameters.

use crate::model::Model;
use crate::sym::{gradient, Graph, Id};

use super::frame::Frame;

/// Momentum, generalized force and energy of a model in its frame.
#[derive(Clone, Debug)]
pub struct Mechanics {
    /// `p = ∂l/∂ξ`
    pub p: Vec<Id>,
    /// `F = Ψᵀ ∂l/∂q + [ξ, p]*`
    pub force: Vec<Id>,
    /// `E = ⟨p, ξ⟩ − l`
    pub energy: Id,
    /// `∂l/∂t` (zero unless the model is rheonomic): `dE/dt = −∂l/∂t` plus
    /// the power of forces and of time-dependent constraints
    pub lt: Id,
    /// symbols the quantities read, each `(symbol, definition)` in order
    /// ([`crate::sym::Function::locals`]): a tableau's members and
    /// adjoints where they were derived through it, else none
    pub locals: Vec<(Id, Id)>,
}

impl Mechanics {
    /// Derives the quantities; the model's graph receives the new nodes.
    pub fn of(model: &mut Model, frame: &Frame) -> Mechanics {
        let q = model.q_syms();
        let v = model.v_syms();
        let l = model.lagrangian;
        let time = model.time;
        let g = &mut model.graph;
        let p = gradient(g, l, &v);
        let dldq = gradient(g, l, &q);
        let force = hamel_force(g, frame, &v, &p, &dldq);
        let energy = legendre_energy(g, &p, &v, l);
        let lt = gradient(g, l, &[time])[0];
        Mechanics {
            p,
            force,
            energy,
            lt,
            locals: Vec::new(),
        }
    }
}

/// A frame's `Ψ` and the [`Mechanics`] a scheme derived from the model as
/// written (not a reduced form of it), which the classification of the
/// invariants reuses instead of deriving them again.
#[derive(Clone, Debug)]
pub(crate) struct FreeMotion {
    /// `Ψ(q)`, a row per coordinate
    pub(crate) psi: Vec<Vec<Id>>,
    pub(crate) mechanics: Mechanics,
}

/// `E = ⟨p, ξ⟩ − l`.
pub(crate) fn legendre_energy(g: &mut Graph, p: &[Id], v: &[Id], l: Id) -> Id {
    let pv = crate::sym::vector::dot(g, p, v);
    g.sub(pv, l)
}

/// The force side of Hamel's equations, `ψᵀ ∂L/∂q + ad*`-bracket of the
/// momenta `p` of the velocities `v`: one entry per velocity.
pub(crate) fn hamel_force(g: &mut Graph, frame: &Frame, v: &[Id], p: &[Id], dldq: &[Id]) -> Vec<Id> {
    let bracket = frame.co_bracket(g, v, p);
    (0..v.len())
        .map(|a| {
            let mut t: Vec<Id> = (0..dldq.len()).map(|i| g.mul2(frame.psi[i][a], dldq[i])).collect();
            t.push(bracket[a]);
            g.add(&t)
        })
        .collect()
}
