//! Generalized Störmer–Verlet (docs/schemes.md §3, HLW VI (3.4)) for models in
//! generalized coordinates, and its index-reduced form for models with
//! holonomic constraints and a constant mass matrix (ZLB12 §5).
//!
//! The general form needs `v(q, p)`, the inverse of the Legendre map. Rather
//! than inverting it symbolically, the stage velocities are extra unknowns with
//! the equations `∂L/∂q̇(q, v) = p`: a generated linear (for quadratic `L`)
//! solve inside the same Newton iteration, valid for any regular Lagrangian.

use crate::model::Model;
use crate::sym::vector::{axpy, dot, matmul, matvec, matvec_t, transpose};
use crate::sym::{gradient, hessian, jacobian, Graph, Id};

use super::constrained::{analyse, coordinate_names, ConstantMass, MomentumStep};
use super::mechanics::Mechanics;
use super::step::{at, at_qvt, force_at, power, rheonomic, symbols, time_derivative, time_in_step, Draft, StepSystem};
use super::{Frame, InvariantKind, SchemeError};

/// Refuses, before anything is derived, a model with a frame or velocity
/// constraints.
pub(super) fn check_form(model: &Model) -> Result<(), SchemeError> {
    if model.frame.is_some() {
        return Err(SchemeError(format!(
            "stormer_verlet needs a model in generalized coordinates (no `frame` block); {} defines a Hamel frame",
            model.file
        )));
    }
    if !model.velocity_constraints.is_empty() {
        return Err(SchemeError(format!(
            "stormer_verlet does not handle velocity constraints; {} has some",
            model.file
        )));
    }
    Ok(())
}

/// Derives Störmer–Verlet for `model`: the index-reduced form if it has
/// holonomic constraints, the general form otherwise.
pub fn derive(model: &Model) -> Result<StepSystem, SchemeError> {
    let mut model = model.clone();
    check_form(&model)?;
    let frame = Frame::of(&mut model).map_err(|e| SchemeError(e.0))?;
    let mech = Mechanics::of(&mut model, &frame);
    if model.holonomic.is_empty() {
        Ok(general(model, mech, "stormer_verlet"))
    } else {
        let cm = analyse(&mut model, "stormer_verlet (index-reduced)")?;
        Ok(index_reduced(model, mech, cm))
    }
}

fn half_h(g: &mut Graph, h: Id) -> Id {
    let half = g.constant(0.5);
    g.mul2(half, h)
}

/// Observation for `L` quadratic in q̇: `M(q) v = p − b(q)`.
fn legendre_observation(
    g: &mut Graph,
    model: &Model,
    mech: &Mechanics,
    zq: &[Id],
    zp: &[Id],
) -> (Vec<Vec<Id>>, Vec<Id>) {
    let (q, v) = (model.q_syms(), model.v_syms());
    let m = hessian(g, &mech.p, &v);
    let zero = g.constant(0.0);
    let zeros = vec![zero; v.len()];
    let mq = m.iter().map(|row| at(g, row, &q, zq, &v, &zeros)).collect();
    let b = at(g, &mech.p, &q, zq, &v, &zeros);
    let rhs = zp.iter().zip(&b).map(|(&p, &b)| g.sub(p, b)).collect();
    (mq, rhs)
}

/// The generalized Störmer–Verlet step (HLW VI (3.4)) for any regular
/// Lagrangian, the stage velocities unknowns beside the momenta; with the
/// model's holonomic constraints `g` it is RATTLE's general form (HLW VII
/// (1.26) with `H_p = v`, `H_q = −∂L/∂q`), labelled `scheme`:
///
/// ```text
/// p½ = p_n + (h/2) [∂L/∂q(q_n, v_a) − G(q_n)ᵀ λ + F_e(q_n, v_a, t_n)],   ∂L/∂q̇(q_n, v_a) = p½
/// q_{n+1} = q_n + (h/2)(v_a + v_b),                                       ∂L/∂q̇(q_{n+1}, v_b) = p½
/// g(q_{n+1}) = 0
/// p_{n+1} = p½ + (h/2) [∂L/∂q(q_{n+1}, v_b) − G(q_{n+1})ᵀ μ + F_e(q_{n+1}, v_b, t_{n+1})]
/// ∂L/∂q̇(q_{n+1}, v_{n+1}) = p_{n+1},   G(q_{n+1}) v_{n+1} = 0
/// ```
///
/// Without constraints the rows of `g`, `λ`, `μ` and `v_{n+1}` are absent
/// and it is the Störmer–Verlet step itself. Symplectic and symmetric; the
/// constraints and their hidden velocity level hold at every node to
/// round-off; momenta of symmetries of `L` and `g` are kept.
pub(super) fn general(model: Model, mech: Mechanics, scheme: &str) -> StepSystem {
    let mut model = model;
    let mut g = std::mem::take(&mut model.graph);
    let (q, v) = (model.q_syms(), model.v_syms());
    let (n, c) = (q.len(), model.holonomic.len());
    // The end velocity is an unknown only where the constraints need it.
    let ne = if c > 0 { 2 * c + n } else { 0 };
    let h = g.symbol("__h");
    let hh = half_h(&mut g, h);
    let z = symbols(&mut g, "__z", 2 * n);
    let x = symbols(&mut g, "__x", 4 * n + ne);
    let w = symbols(&mut g, "__w", 4 * n + ne);
    let (q0, p0) = z.split_at(n);
    let (ph, rest) = x.split_at(n);
    let (va, rest) = rest.split_at(n);
    let (q1, rest) = rest.split_at(n);
    let (vb, rest) = rest.split_at(n);
    let (lam, rest) = rest.split_at(c);
    let (mu, v1) = rest.split_at(c);
    let l = model.lagrangian;
    let dldq = gradient(&mut g, l, &q);
    let gs: Vec<Id> = model.holonomic.iter().map(|k| k.expr).collect();
    let gq = jacobian(&mut g, &gs, &q);
    let gt = time_derivative(&mut g, &model, &gs);
    // A rheonomic model's stages sit at their nodes' times, t_n and t_{n+1}:
    // this is Störmer–Verlet (and RATTLE) on the autonomous system with the
    // time as one more coordinate (t' = 1, advanced by the q-stage), so the
    // step stays symmetric, second order and symplectic in that space.
    let t0 = model.time;
    let t1 = time_in_step(&mut g, &model, h, 1.0);
    // ∂L/∂q(qs, vs, ts) − G(qs, ts)ᵀ l
    let force = |g: &mut Graph, qs: &[Id], vs: &[Id], ts: Id, l: &[Id]| -> Vec<Id> {
        let d = at_qvt(g, &model, &dldq, &q, qs, &v, vs, ts);
        if c == 0 {
            return d;
        }
        let gqs: Vec<Vec<Id>> = gq
            .iter()
            .map(|row| at_qvt(g, &model, row, &q, qs, &v, &v, ts))
            .collect();
        let gl = matvec_t(g, &gqs, l);
        d.iter().zip(&gl).map(|(&a, &b)| g.sub(a, b)).collect()
    };
    let dlq_a = force(&mut g, q0, va, t0, lam);
    let p_a = at(&mut g, &mech.p, &q, q0, &v, va);
    let p_b = at_qvt(&mut g, &model, &mech.p, &q, q1, &v, vb, t1);
    let mut residual = Vec::with_capacity(4 * n + ne);
    // External force in both half steps (Lobatto IIIA–IIIB on ṗ = ∂L/∂q + F_e).
    let u = model.u_syms();
    let fe_a = force_at(&mut g, &model, q0, va, t0, &u);
    let fe_b = force_at(&mut g, &model, q1, vb, t1, &u);
    let mut r1 = axpy(&mut g, p0, hh, &dlq_a);
    if let Some(fe) = &fe_a {
        r1 = axpy(&mut g, &r1, hh, fe);
    }
    residual.extend(ph.iter().zip(&r1).map(|(&a, &b)| g.sub(a, b)));
    residual.extend(p_a.iter().zip(ph).map(|(&a, &b)| g.sub(a, b)));
    let vs: Vec<Id> = va.iter().zip(vb).map(|(&a, &b)| g.add2(a, b)).collect();
    let r3 = axpy(&mut g, q0, hh, &vs);
    residual.extend(q1.iter().zip(&r3).map(|(&a, &b)| g.sub(a, b)));
    residual.extend(p_b.iter().zip(ph).map(|(&a, &b)| g.sub(a, b)));
    residual.extend(at_qvt(&mut g, &model, &gs, &q, q1, &v, &v, t1));
    let dlq_b = force(&mut g, q1, vb, t1, mu);
    let mut p1 = axpy(&mut g, ph, hh, &dlq_b);
    if let Some(fe) = &fe_b {
        p1 = axpy(&mut g, &p1, hh, fe);
    }
    // ∂g/∂t at (qs, ts)
    let gt_at = |g: &mut Graph, qs: &[Id], ts: Id| -> Vec<Id> { at_qvt(g, &model, &gt, &q, qs, &v, &v, ts) };
    if c > 0 {
        let p_1 = at_qvt(&mut g, &model, &mech.p, &q, q1, &v, v1, t1);
        residual.extend(p_1.iter().zip(&p1).map(|(&a, &b)| g.sub(a, b)));
        let gq1: Vec<Vec<Id>> = gq
            .iter()
            .map(|row| at_qvt(&mut g, &model, row, &q, q1, &v, &v, t1))
            .collect();
        // The hidden constraint d/dt g = G v + ∂g/∂t = 0 at the end.
        let gv = matvec(&mut g, &gq1, v1);
        let gt1 = gt_at(&mut g, q1, t1);
        residual.extend(gv.iter().zip(&gt1).map(|(&a, &b)| g.add2(a, b)));
    }
    let forces = mean_work(&mut g, fe_a.as_deref(), fe_b.as_deref(), q0, q1);
    // dE/dt = −∂L/∂t + λ·∂g/∂t (the reaction −Gᵀλ has power λ·∂g/∂t, as
    // G q̇ = −∂g/∂t): by the trapezoidal rule, each multiplier with the
    // half step whose impulse it is.
    let timed = rheonomic(&g, &model).then(|| {
        let nodes = [(q0, va, t0, lam), (q1, vb, t1, mu)].map(|(qs, vs, ts, l)| {
            let lt = at_qvt(&mut g, &model, &[mech.lt], &q, qs, &v, vs, ts)[0];
            (lt, l, gt_at(&mut g, qs, ts))
        });
        time_power(&mut g, hh, nodes)
    });
    let work = power(&mut g, forces, timed);
    let next: Vec<Id> = q1.iter().copied().chain(p1).collect();
    // First guess: the last step's end velocity (and multipliers).
    let (wl, wv) = if c > 0 {
        (&w[4 * n..4 * n + 2 * c], &w[4 * n + 2 * c..])
    } else {
        (&w[..0], &w[3 * n..])
    };
    let mut predictor: Vec<Id> = p0
        .iter()
        .copied()
        .chain(wv.iter().copied())
        .chain(axpy(&mut g, q0, h, wv))
        .chain(wv.iter().copied())
        .collect();
    let zero = g.constant(0.0);
    let mut init_warm: Vec<Id> = mech.p.iter().chain(&v).chain(&q).chain(&v).copied().collect();
    if c > 0 {
        predictor.extend(wl.iter().chain(wv).copied());
        init_warm.extend(std::iter::repeat_n(zero, 2 * c).chain(v.iter().copied()));
    }
    let init_state: Vec<Id> = q.iter().chain(&mech.p).copied().collect();
    let (obs_matrix, obs_rhs) = legendre_observation(&mut g, &model, &mech, q0, p0);
    let y = symbols(&mut g, "__y", n);
    let names = |f: &dyn Fn(&str) -> String| model.coords.iter().map(|c| f(&c.name)).collect::<Vec<_>>();
    let state_names: Vec<String> = names(&|c| c.to_string())
        .into_iter()
        .chain(names(&|c| format!("p({c})")))
        .collect();
    let mut unknown_names: Vec<String> = names(&|c| format!("p½({c})"))
        .into_iter()
        .chain(names(&|c| format!("{c}'(a)")))
        .chain(names(&|c| format!("{c}+")))
        .chain(names(&|c| format!("{c}'(b)")))
        .collect();
    if c > 0 {
        unknown_names.extend((0..c).map(|i| format!("lambda{i}")));
        unknown_names.extend((0..c).map(|i| format!("mu{i}")));
        unknown_names.extend(names(&|c| format!("{c}'+")));
    }
    let base = (0..4 * n + ne)
        .map(|i| (2 * n..3 * n).contains(&i).then(|| i - 2 * n))
        .collect();
    let draft = Draft {
        scheme: scheme.into(),
        h,
        state: z.iter().copied().zip(state_names).collect(),
        unknowns: x.iter().copied().zip(unknown_names).collect(),
        previous: w,
        residual,
        next,
        predictor,
        init_state,
        init_warm,
        obs_matrix,
        obs_applied: None,
        obs_rhs,
        obs_solution: y.clone(),
        obs_q: q0.to_vec(),
        obs_v: y,
        base,
        work,
        auxiliary: vec![],
        kinetic_metric: None,
        momenta: None,
        free_motion: None,
        physical_locals: Vec::new(),
    };
    draft.assemble(&model, g, mech.energy)
}

/// The work of a step's explicit time dependence, `−(h/2) Σ (∂L/∂t −
/// λ·∂g/∂t)` over its two nodes `(∂L/∂t, λ, ∂g/∂t)` (the trapezoidal rule,
/// each multiplier with the half step whose impulse it is).
fn time_power(g: &mut Graph, hh: Id, nodes: [(Id, &[Id], Vec<Id>); 2]) -> Id {
    let mut terms = Vec::new();
    for (lt, l, gts) in nodes {
        terms.push(lt);
        let lg = dot(g, l, &gts);
        terms.push(g.neg(lg));
    }
    let s = g.add(&terms);
    let w = g.mul2(hh, s);
    g.neg(w)
}

/// `⟨F⁻ + F⁺, (q_{n+1} − q_n)/h⟩` with `F∓ = (h/2) F_e`: `½⟨F_a + F_b, q_{n+1} − q_n⟩`.
fn mean_work(g: &mut Graph, fa: Option<&[Id]>, fb: Option<&[Id]>, q0: &[Id], q1: &[Id]) -> Option<Id> {
    let (fa, fb) = (fa?, fb?);
    let sum: Vec<Id> = fa.iter().zip(fb).map(|(&a, &b)| g.add2(a, b)).collect();
    let dq: Vec<Id> = q1.iter().zip(q0).map(|(&a, &b)| g.sub(a, b)).collect();
    let half = g.constant(0.5);
    Some(super::step::scaled_dot(g, &sum, &dq, half))
}

/// `(G M⁻¹ Gᵀ) λ + G M⁻¹ (∇V − F_e) − ∂²g(v, v) − 2 ∂G/∂t v − ∂²g/∂t²` at
/// `(qs, ts)` (zero for the hidden multiplier: d²/dt² g(q, t) = 0; without
/// `F_e` there a normal force would drive `g` off).
#[allow(clippy::too_many_arguments)]
fn hidden_multiplier_residual(
    g: &mut Graph,
    model: &Model,
    cm: &ConstantMass,
    qs: &[Id],
    ts: Id,
    vel: &[Id],
    lam: &[Id],
    fe: Option<&[Id]>,
) -> Vec<Id> {
    let (q, v) = (model.q_syms(), model.v_syms());
    let here = |g: &mut Graph, e: &[Id]| -> Vec<Id> { at_qvt(g, model, e, &q, qs, &v, &v, ts) };
    let gq: Vec<Vec<Id>> = cm.gq.iter().map(|row| here(g, row)).collect();
    let grad_v = here(g, &cm.grad_v);
    // The explicit time dependence of g: 2 ∂G/∂t v + ∂²g/∂t².
    let gt = time_derivative(g, model, &cm.g);
    let gtq = jacobian(g, &gt, &q);
    let gtt = time_derivative(g, model, &gt);
    let moving: Vec<Id> = (0..cm.g.len())
        .map(|i| {
            let row = here(g, &gtq[i]);
            let rv = dot(g, &row, vel);
            let two = g.scale(2.0, rv);
            let tt = here(g, &gtt[i..=i])[0];
            g.add2(two, tt)
        })
        .collect();
    let gm = matmul(g, &gq, &cm.m_inv);
    let gmgt = matmul(g, &gm, &transpose(&gq));
    let a = matvec(g, &gmgt, lam);
    let mut b = matvec(g, &gm, &grad_v);
    if let Some(fe) = fe {
        let gmf = matvec(g, &gm, fe);
        b = b.iter().zip(&gmf).map(|(&x, &y)| g.sub(x, y)).collect();
    }
    (0..cm.g.len())
        .map(|i| {
            // ∂²g(v, v) over the coordinates the constraint reads (the
            // non-zero entries of its gradient): the Hessian's other rows and
            // columns are zeros, whose products `dot` leaves out, so the sum
            // is the same node as the whole Hessian's (which was O(N²) per
            // constraint of a chain, O(N³) in all).
            let n = cm.gq[i].len();
            let mut reads: Vec<usize> = (0..n).filter(|&k| !g.is_const(cm.gq[i][k], 0.0)).collect();
            // (A zero of the gradient by cancellation might leave a column
            // of the Hessian that does not fold to 0: then all of it.)
            let hess_i = &cm.hess_g[i];
            if reads
                .iter()
                .any(|&k| (0..n).any(|l| !g.is_const(hess_i[k][l], 0.0) && !reads.contains(&l)))
            {
                reads = (0..n).collect();
            }
            let block: Vec<Id> = reads
                .iter()
                .flat_map(|&k| reads.iter().map(move |&l| cm.hess_g[i][k][l]))
                .collect();
            let block = here(g, &block);
            let v_reads: Vec<Id> = reads.iter().map(|&k| vel[k]).collect();
            let hess: Vec<Vec<Id>> = block.chunks(reads.len().max(1)).map(<[Id]>::to_vec).collect();
            let hv = matvec(g, &hess, &v_reads);
            let curv = dot(g, &v_reads, &hv);
            let s = g.add2(a[i], b[i]);
            let curv = g.add2(curv, moving[i]);
            g.sub(s, curv)
        })
        .collect()
}

fn index_reduced(model: Model, mech: Mechanics, cm: ConstantMass) -> StepSystem {
    let mut model = model;
    let mut g = std::mem::take(&mut model.graph);
    let (q, v) = (model.q_syms(), model.v_syms());
    let (n, c) = (q.len(), cm.g.len());
    let h = g.symbol("__h");
    let hh = half_h(&mut g, h);
    let z = symbols(&mut g, "__z", 2 * n);
    let x = symbols(&mut g, "__x", n + 2 * c);
    let w = symbols(&mut g, "__w", n + 2 * c);
    let (q0, p0) = z.split_at(n);
    let (ph, rest) = x.split_at(n);
    let (la, lb) = rest.split_at(c);
    let vh = matvec(&mut g, &cm.m_inv, ph);
    let q1 = axpy(&mut g, q0, h, &vh);
    let t0 = model.time;
    let t1 = time_in_step(&mut g, &model, h, 1.0);
    // f_p(q, t, λ) = −∇V(q, t) − G(q, t)ᵀ λ, at the nodes' times as in the
    // general form (Störmer–Verlet with the time as a coordinate)
    let fp = |g: &mut Graph, qs: &[Id], ts: Id, lam: &[Id]| -> Vec<Id> {
        let here = |g: &mut Graph, e: &[Id]| -> Vec<Id> { at_qvt(g, &model, e, &q, qs, &v, &v, ts) };
        let grad_v = here(g, &cm.grad_v);
        let gq: Vec<Vec<Id>> = cm.gq.iter().map(|row| here(g, row)).collect();
        let gl = matvec_t(g, &gq, lam);
        grad_v
            .iter()
            .zip(&gl)
            .map(|(&a, &b)| {
                let s = g.add2(a, b);
                g.neg(s)
            })
            .collect()
    };
    let fa = fp(&mut g, q0, t0, la);
    let fb = fp(&mut g, &q1, t1, lb);
    let u = model.u_syms();
    let fe_a = force_at(&mut g, &model, q0, &vh, t0, &u);
    let fe_b = force_at(&mut g, &model, &q1, &vh, t1, &u);
    let mut residual = Vec::with_capacity(n + 2 * c);
    let mut r1 = axpy(&mut g, p0, hh, &fa);
    if let Some(fe) = &fe_a {
        r1 = axpy(&mut g, &r1, hh, fe);
    }
    residual.extend(ph.iter().zip(&r1).map(|(&a, &b)| g.sub(a, b)));
    residual.extend(hidden_multiplier_residual(
        &mut g,
        &model,
        &cm,
        q0,
        t0,
        &vh,
        la,
        fe_a.as_deref(),
    ));
    residual.extend(hidden_multiplier_residual(
        &mut g,
        &model,
        &cm,
        &q1,
        t1,
        &vh,
        lb,
        fe_b.as_deref(),
    ));
    let mut p1 = axpy(&mut g, ph, hh, &fb);
    if let Some(fe) = &fe_b {
        p1 = axpy(&mut g, &p1, hh, fe);
    }
    let forces = mean_work(&mut g, fe_a.as_deref(), fe_b.as_deref(), q0, &q1);
    // −∂L/∂t + λ·∂g/∂t by the trapezoidal rule, as in the general form.
    let timed = rheonomic(&g, &model).then(|| {
        let gt = time_derivative(&mut g, &model, &cm.g);
        let nodes = [(q0, t0, la), (&q1[..], t1, lb)].map(|(qs, ts, l)| {
            let lt = at_qvt(&mut g, &model, &[mech.lt], &q, qs, &v, &vh, ts)[0];
            (lt, l, at_qvt(&mut g, &model, &gt, &q, qs, &v, &v, ts))
        });
        time_power(&mut g, hh, nodes)
    });
    let work = power(&mut g, forces, timed);
    let next: Vec<Id> = q1.iter().copied().chain(p1).collect();
    let wlb = &w[n + c..];
    let predictor: Vec<Id> = p0.iter().chain(wlb).chain(wlb).copied().collect();
    let mv = matvec(&mut g, &cm.m, &v);
    let zero = g.constant(0.0);
    let init_warm: Vec<Id> = mv.iter().copied().chain(std::iter::repeat_n(zero, 2 * c)).collect();
    let unknown_names = coordinate_names(&model, |c| format!("p½({c})"))
        .into_iter()
        .chain((0..c).map(|i| format!("lambda{i}(n)")))
        .chain((0..c).map(|i| format!("lambda{i}(n+1)")));
    let step = MomentumStep {
        scheme: "stormer_verlet(index-reduced)",
        h,
        unknowns: x.iter().copied().zip(unknown_names).collect(),
        z,
        previous: w,
        residual,
        next,
        predictor,
        init_warm,
        base: vec![None; n + 2 * c],
        work,
    };
    let draft = step.draft(&mut g, &model, &cm);
    let mut sys = draft.assemble(&model, g, mech.energy);
    // Index reduction imposes g only through its second derivative: the
    // residuals drift, and runs say so by their kind (not by this label).
    for inv in &mut sys.invariants {
        if inv.kind == InvariantKind::Constraint {
            inv.kind = InvariantKind::DriftingConstraint;
        }
    }
    sys
}
