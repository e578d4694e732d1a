//! RATTLE (docs/schemes.md §4, HLW VII (1.26)) for models in generalized
//! coordinates with holonomic constraints (or none: velocity Verlet). With a
//! constant mass matrix and `L = ½ q̇ᵀ M q̇ − V(q)` the positions and momenta
//! are explicit in the multipliers, so Newton runs on `(λ, μ)` only:
//! `g(q_{n+1}(λ)) = 0` with the analytic Jacobian, and the linear velocity
//! condition for `μ`. Any other regular Lagrangian — a mass matrix that
//! depends on the coordinates, terms linear in the velocities (a Coriolis or
//! magnetic term: the Foucault pendulum in Cartesian coordinates) — takes
//! the general form of (1.26), HLW's RATTLE for a non-separable `H`, written
//! in velocities as the generalized Störmer–Verlet step is (see `general` below).

use crate::model::Model;
use crate::sym::vector::{axpy, dot, matvec, matvec_t};
use crate::sym::{Graph, Id};

use super::constrained::{analyse, not_constant_mass, MomentumStep};
use super::mechanics::Mechanics;
use super::step::{at_qvt, force_at, power, rheonomic, symbols, time_derivative, time_in_step, StepSystem};
use super::{Frame, SchemeError};

/// Derives RATTLE for `model`.
pub fn derive(model: &Model) -> Result<StepSystem, SchemeError> {
    let mut model = model.clone();
    if takes_general_form(&model) {
        return general(model);
    }
    let cm = analyse(&mut model, "rattle")?;
    let frame = Frame::of(&mut model).map_err(|e| SchemeError(e.0))?;
    let mech = Mechanics::of(&mut model, &frame);
    let mut g = std::mem::take(&mut model.graph);
    let (q, v) = (model.q_syms(), model.v_syms());
    let (n, c) = (q.len(), cm.g.len());
    let h = g.symbol("__h");
    let mhh = g.scale(-0.5, h);
    let z = symbols(&mut g, "__z", 2 * n);
    // A forced step adds the mean velocity v̄ = (q_{n+1} − q_n)/h as unknowns:
    // the trapezoidal forces F∓ = (h/2) F_e(q_{n|n+1}, v̄, u_n, t_{n|n+1})
    // depend on it (docs/schemes.md §8).
    let forced = model.force.is_some();
    let nv = if forced { n } else { 0 };
    let x = symbols(&mut g, "__x", 2 * c + nv);
    let w = symbols(&mut g, "__w", 2 * c + nv);
    let (q0, p0) = z.split_at(n);
    let (lam, rest) = x.split_at(c);
    let (mu, vb) = rest.split_at(c);
    // A rheonomic model's potential and constraints at the nodes' times
    // (t_n, t_{n+1}): RATTLE on the system with the time as a coordinate
    // (t' = 1), symmetric and second order; the end velocity keeps the
    // hidden constraint G v + ∂g/∂t = 0.
    let (t0, t1) = (model.time, time_in_step(&mut g, &model, h, 1.0));
    let here = |g: &mut Graph, e: &[Id], qs: &[Id], ts: Id| -> Vec<Id> { at_qvt(g, &model, e, &q, qs, &v, &v, ts) };
    // ∇V(q, t) + G(q, t)ᵀ λ
    let force = |g: &mut Graph, qs: &[Id], ts: Id, l: &[Id]| -> Vec<Id> {
        let grad_v = here(g, &cm.grad_v, qs, ts);
        if cm.gq.is_empty() {
            // Without constraints RATTLE is velocity Verlet (no reaction).
            return grad_v;
        }
        let gq: Vec<Vec<Id>> = cm.gq.iter().map(|row| here(g, row, qs, ts)).collect();
        let gl = matvec_t(g, &gq, l);
        grad_v.iter().zip(&gl).map(|(&a, &b)| g.add2(a, b)).collect()
    };
    let u = model.u_syms();
    let f0 = force(&mut g, q0, t0, lam);
    let mut ph = axpy(&mut g, p0, mhh, &f0);
    let hh = g.neg(mhh);
    let (mut work, mut fe0) = (None, None);
    if forced {
        let fe = force_at(&mut g, &model, q0, vb, model.time, &u).expect("forced");
        ph = axpy(&mut g, &ph, hh, &fe);
        fe0 = Some(fe);
    }
    let vh = matvec(&mut g, &cm.m_inv, &ph);
    let q1 = if forced {
        axpy(&mut g, q0, h, vb)
    } else {
        axpy(&mut g, q0, h, &vh)
    };
    let f1 = force(&mut g, &q1, t1, mu);
    let mut p1 = axpy(&mut g, &ph, mhh, &f1);
    if let Some(fe0) = &fe0 {
        let fe1 = force_at(&mut g, &model, &q1, vb, t1, &u).expect("forced");
        p1 = axpy(&mut g, &p1, hh, &fe1);
        let sum: Vec<Id> = fe0.iter().zip(&fe1).map(|(&a, &b)| g.add2(a, b)).collect();
        work = Some(super::step::scaled_dot(&mut g, &sum, vb, hh));
    }
    let mut residual = here(&mut g, &cm.g, &q1, t1);
    let gq1: Vec<Vec<Id>> = cm.gq.iter().map(|row| here(&mut g, row, &q1, t1)).collect();
    let v1 = matvec(&mut g, &cm.m_inv, &p1);
    let gt = time_derivative(&mut g, &model, &cm.g);
    let gv = matvec(&mut g, &gq1, &v1);
    let gt1 = here(&mut g, &gt, &q1, t1);
    residual.extend(gv.iter().zip(&gt1).map(|(&a, &b)| g.add2(a, b)));
    // dE/dt = −∂L/∂t + λ·∂g/∂t (the reaction's power, G q̇ = −∂g/∂t), by
    // the trapezoidal rule with each multiplier's half step; ∂L/∂t = −∂V/∂t
    // does not depend on the velocity.
    let timed = rheonomic(&g, &model).then(|| {
        let mut terms = Vec::new();
        for (qs, ts, l) in [(q0, t0, lam), (&q1[..], t1, mu)] {
            terms.push(here(&mut g, &[mech.lt], qs, ts)[0]);
            let gts = here(&mut g, &gt, qs, ts);
            let lg = dot(&mut g, l, &gts);
            terms.push(g.neg(lg));
        }
        let s = g.add(&terms);
        let w = g.mul2(hh, s);
        g.neg(w)
    });
    work = power(&mut g, work, timed);
    if forced {
        residual.extend(vb.iter().zip(&vh).map(|(&a, &b)| g.sub(a, b)));
    }
    let next: Vec<Id> = q1.iter().copied().chain(p1).collect();
    let zero = g.constant(0.0);
    let unknown_names = (0..c)
        .map(|i| format!("lambda{i}"))
        .chain((0..c).map(|i| format!("mu{i}")))
        .chain(model.coords.iter().take(nv).map(|s| format!("{}'(mean)", s.name)));
    let init_warm: Vec<Id> = std::iter::repeat_n(zero, 2 * c)
        .chain(v.iter().take(nv).copied())
        .collect();
    let step = MomentumStep {
        scheme: "rattle",
        h,
        unknowns: x.iter().copied().zip(unknown_names).collect(),
        z,
        previous: w.clone(),
        residual,
        next,
        predictor: w,
        init_warm,
        base: vec![None; 2 * c + nv],
        work,
    };
    let draft = step.draft(&mut g, &model, &cm);
    Ok(draft.assemble(&model, g, mech.energy))
}

/// Whether RATTLE takes its general form (HLW VII (1.26), stage and end
/// velocities as unknowns): generalized coordinates without velocity
/// constraints and a mass matrix that depends on them (or terms linear in the
/// velocities). The applicability check asks the same question.
pub(super) fn takes_general_form(model: &Model) -> bool {
    model.frame.is_none() && model.velocity_constraints.is_empty() && not_constant_mass(&mut model.clone()).is_some()
}

/// RATTLE for a general regular Lagrangian: the generalized Störmer–Verlet
/// step with the model's holonomic constraints
/// ([`super::stormer_verlet::general`], where its equations are).
fn general(model: Model) -> Result<StepSystem, SchemeError> {
    let mut model = model;
    let frame = Frame::of(&mut model).map_err(|e| SchemeError(e.0))?;
    let mech = Mechanics::of(&mut model, &frame);
    Ok(super::stormer_verlet::general(model, mech, "rattle"))
}
