//! The energy–momentum integrator (docs/schemes.md §5; Wendlandt 1995, Gonzalez's
//! discrete gradient) for models with holonomic constraints and a constant
//! mass matrix:
//!
//! ```text
//! q_{n+1} − q_n = h M⁻¹ (p_n + p_{n+1})/2
//! p_{n+1} − p_n = −h [∇̄V(q_n, q_{n+1}) + Ḡ(q_n, q_{n+1})ᵀ λ]
//! g(q_{n+1})    = 0
//! ```
//!
//! For a potential and constraints at most quadratic in `q` the discrete
//! gradient is exactly the gradient at the midpoint, which is what is generated;
//! other models are rejected (the general correction term needs a branch at
//! `q_{n+1} = q_n` that the expression language does not have).

use crate::model::Model;
use crate::sym::vector::{axpy, matvec, matvec_t, midpoint};
use crate::sym::{jacobian, Id};

use super::constrained::{analyse, coordinate_names, MomentumStep};
use super::mechanics::Mechanics;
use super::step::{at, force_at, scaled_dot, symbols, time_in_step, StepSystem};
use super::{Frame, SchemeError};

/// Derives the energy–momentum step for `model`.
pub fn derive(model: &Model) -> Result<StepSystem, SchemeError> {
    let mut model = model.clone();
    let cm = analyse(&mut model, "energy_momentum", true)?;
    let (q, v) = (model.q_syms(), model.v_syms());
    {
        let g = &mut model.graph;
        let hv = jacobian(g, &cm.grad_v, &q);
        let quadratic_v = hv.iter().flatten().all(|&e| !g.depends_on(e, &q));
        let quadratic_g = cm.hess_g.iter().flatten().flatten().all(|&e| !g.depends_on(e, &q));
        if !quadratic_v || !quadratic_g {
            return Err(SchemeError(format!(
                "energy_momentum currently needs a potential and constraints at most quadratic in the coordinates; {} has {}",
                model.file,
                if quadratic_v { "a constraint of higher degree" } else { "a potential of higher degree" }
            )));
        }
    }
    let frame = Frame::of(&mut model).map_err(|e| SchemeError(e.0))?;
    let mech = Mechanics::of(&mut model, &frame);
    let mut g = std::mem::take(&mut model.graph);
    let (n, c) = (q.len(), cm.g.len());
    let h = g.symbol("__h");
    let half = g.constant(0.5);
    let hh = g.mul2(half, h);
    let mh = g.neg(h);
    let z = symbols(&mut g, "__z", 2 * n);
    let x = symbols(&mut g, "__x", 2 * n + c);
    let w = symbols(&mut g, "__w", 2 * n + c);
    let (q0, p0) = z.split_at(n);
    let (q1, rest) = x.split_at(n);
    let (p1, lam) = rest.split_at(n);
    let qbar = midpoint(&mut g, q0, q1);
    let psum: Vec<Id> = p0.iter().zip(p1).map(|(&a, &b)| g.add2(a, b)).collect();
    let vbar = matvec(&mut g, &cm.m_inv, &psum);
    let mut residual = Vec::with_capacity(2 * n + c);
    let r1 = axpy(&mut g, q0, hh, &vbar);
    residual.extend(q1.iter().zip(&r1).map(|(&a, &b)| g.sub(a, b)));
    let grad_v = at(&mut g, &cm.grad_v, &q, &qbar, &v, &v);
    let gq: Vec<Vec<Id>> = cm.gq.iter().map(|row| at(&mut g, row, &q, &qbar, &v, &v)).collect();
    let gl = matvec_t(&mut g, &gq, lam);
    let force: Vec<Id> = grad_v.iter().zip(&gl).map(|(&a, &b)| g.add2(a, b)).collect();
    let mut r2 = axpy(&mut g, p0, mh, &force);
    // + h F_e(q̄, v̄, u_n, t_{n+½}), v̄ = M⁻¹(p_n + p_{n+1})/2
    let vmid: Vec<Id> = vbar.iter().map(|&a| g.scale(0.5, a)).collect();
    let t_half = time_in_step(&mut g, &model, h, 0.5);
    let fe = force_at(&mut g, &model, &qbar, &vmid, t_half, &model.u_syms());
    if let Some(fe) = &fe {
        r2 = axpy(&mut g, &r2, h, fe);
    }
    let work = fe.as_ref().map(|fe| scaled_dot(&mut g, fe, &vmid, h));
    residual.extend(p1.iter().zip(&r2).map(|(&a, &b)| g.sub(a, b)));
    residual.extend(at(&mut g, &cm.g, &q, q1, &v, &v));
    let next: Vec<Id> = q1.iter().chain(p1).copied().collect();
    let v0 = matvec(&mut g, &cm.m_inv, p0);
    let mut predictor = axpy(&mut g, q0, h, &v0);
    predictor.extend_from_slice(p0);
    predictor.extend_from_slice(&w[2 * n..]);
    let mv = matvec(&mut g, &cm.m, &v);
    let zero = g.constant(0.0);
    let init_warm: Vec<Id> = q
        .iter()
        .chain(&mv)
        .copied()
        .chain(std::iter::repeat_n(zero, c))
        .collect();
    let unknown_names = coordinate_names(&model, |c| format!("{c}+"))
        .into_iter()
        .chain(coordinate_names(&model, |c| format!("p({c})+")))
        .chain((0..c).map(|i| format!("lambda{i}")));
    let step = MomentumStep {
        scheme: "energy_momentum",
        h,
        unknowns: x.iter().copied().zip(unknown_names).collect(),
        z,
        previous: w,
        residual,
        next,
        predictor,
        init_warm,
        base: (0..2 * n + c).map(|i| (i < 2 * n).then_some(i)).collect(),
        work,
    };
    let draft = step.draft(&mut g, &model, &cm);
    Ok(draft.assemble(&model, g, mech.energy))
}
