//! The energy–momentum integrator (docs/schemes.md §5; Wendlandt 1995, Gonzalez's
//! discrete gradient) for models with a constant mass matrix, with or without
//! holonomic constraints:
//!
//! ```text
//! q_{n+1} − q_n = h M⁻¹ (p_n + p_{n+1})/2
//! p_{n+1} − p_n = −h [∇̄V(q_n, q_{n+1}) + Ḡ(q_n, q_{n+1})ᵀ λ]
//! g(q_{n+1})    = 0
//! ```
//!
//! `∇̄f` is Gonzalez's discrete gradient, `∇f(q̄) + [f(q_{n+1}) − f(q_n) −
//! ⟨∇f(q̄), Δq⟩] Δq / ‖Δq‖²`, so that `⟨∇̄f, Δq⟩ = f(q_{n+1}) − f(q_n)`
//! exactly: the energy is kept, and `Ḡ Δq = g(q_{n+1}) − g(q_n) = 0` makes the
//! reactions do no work. For a function at most quadratic in `q` the
//! correction vanishes identically and is not generated (the midpoint
//! gradient; momenta of linear symmetries are then kept too). Otherwise the
//! correction's direction `Δq` carries a torque about a symmetry axis, so
//! momenta are kept to O(h²) only. At and near `Δq = 0` the correction is
//! `0/0`, and `f(q_{n+1}) − f(q_n)` is all cancellation: its round-off,
//! divided by `‖Δq‖²`, made the Newton Jacobian of a step from rest (whose
//! predictor has `Δq = 0`) non-finite (a pendulum released from rest failed
//! at step 0) or so large that Newton stopped at `Δq ≈ 1e-132` (a bead on a
//! rotating hoop stayed at rest): `models/gallery/planar_pendulum.hamel`,
//! `rotating_hoop.hamel`. The denominator is therefore `‖Δq‖² + δ²` with
//! `δ² = 1e-18 (1 + ‖q̄‖²)`: the correction vanishes at rest, its Jacobian
//! stays within round-off of the rest of the matrix, and on a step of the
//! usual size (`‖Δq‖ ≳ 1e-4`) it changes the correction by a relative
//! 1e-10 of a term that is itself O(‖Δq‖²): far below the energy's round-off.

use crate::model::Model;
use crate::sym::vector::{axpy, dot, matvec, matvec_t, midpoint};
use crate::sym::{jacobian, Graph, Id};

use super::constrained::{analyse, coordinate_names, ConstantMass, MomentumStep};
use super::mechanics::Mechanics;
use super::step::{
    at, at_time, force_at, power, rheonomic, scaled_dot, symbols, time_derivative, time_in_step, StepSystem,
};
use super::{Frame, SchemeError};

/// Derives the energy–momentum step for `model`.
pub fn derive(model: &Model) -> Result<StepSystem, SchemeError> {
    let mut model = model.clone();
    let cm = analyse(&mut model, "energy_momentum")?;
    let (q, v) = (model.q_syms(), model.v_syms());
    let quadratic = Quadratic::of(&mut model.graph, &cm, &q);
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
    let dq: Vec<Id> = q1.iter().zip(q0).map(|(&a, &b)| g.sub(a, b)).collect();
    let timed = rheonomic(&g, &model);
    let (t_half, t1) = (
        time_in_step(&mut g, &model, h, 0.5),
        time_in_step(&mut g, &model, h, 1.0),
    );
    let gradients = DiscreteGradient {
        model: &model,
        q: &q,
        v: &v,
        q0,
        q1,
        qbar: &qbar,
        dq: &dq,
        h,
        t_half,
        t1,
    };
    let reactions = gradients.potential_and_constraints(&mut g, &cm, &quadratic, timed, lam);
    let mut r2 = axpy(&mut g, p0, mh, &reactions.force);
    // + h F_e(q̄, v̄, u_n, t_{n+½}), v̄ = M⁻¹(p_n + p_{n+1})/2
    let vmid: Vec<Id> = vbar.iter().map(|&a| g.scale(0.5, a)).collect();
    let fe = force_at(&mut g, &model, &qbar, &vmid, t_half, &model.u_syms());
    if let Some(fe) = &fe {
        r2 = axpy(&mut g, &r2, h, fe);
    }
    let forces = fe.as_ref().map(|fe| scaled_dot(&mut g, fe, &vmid, h));
    let timed_work = timed.then(|| reactions.time_work(&mut g, h, lam));
    let work = power(&mut g, forces, timed_work);
    residual.extend(p1.iter().zip(&r2).map(|(&a, &b)| g.sub(a, b)));
    let g1 = at(&mut g, &cm.g, &q, q1, &v, &v);
    residual.extend(at_time(&mut g, &model, &g1, t1));
    let step = momentum_step(&mut g, &model, &cm, h, (z, x, w), residual, work);
    let draft = step.draft(&mut g, &model, &cm);
    Ok(draft.assemble(&model, g, mech.energy))
}

/// Whether the potential and each constraint are at most quadratic in `q`:
/// their discrete gradient is then the midpoint gradient, with no correction.
struct Quadratic {
    potential: bool,
    constraints: Vec<bool>,
}

impl Quadratic {
    fn of(g: &mut Graph, cm: &ConstantMass, q: &[Id]) -> Quadratic {
        // One walk per matrix, not one per entry: a chain's constraint
        // Hessians are 3N × 3N each, and a walk per entry (each with a flag
        // per node of the graph) made the 128-link chain's derivation 22 s.
        let hv = jacobian(g, &cm.grad_v, q);
        let potential = !g.depends_on_any(&hv.concat(), q);
        let constraints = cm.hess_g.iter().map(|h| !g.depends_on_any(&h.concat(), q)).collect();
        Quadratic { potential, constraints }
    }
}

/// Gonzalez's discrete gradient over one step `q_n → q_{n+1}` (see the
/// module's docs), with what it is evaluated at.
struct DiscreteGradient<'a> {
    model: &'a Model,
    q: &'a [Id],
    v: &'a [Id],
    q0: &'a [Id],
    q1: &'a [Id],
    qbar: &'a [Id],
    /// `q_{n+1} − q_n`
    dq: &'a [Id],
    h: Id,
    t_half: Id,
    t1: Id,
}

/// `∇̄V + Ḡᵀλ` and the time parts of the discrete gradients, `∂̄V/∂t` and
/// `∂̄g_i/∂t` (`None`: free of time).
struct Reactions {
    force: Vec<Id>,
    dt_v: Option<Id>,
    dt_g: Vec<Option<Id>>,
}

impl Reactions {
    /// `h (∂̄V/∂t + λ·∂̄g/∂t)`: the energy the explicit time dependence
    /// supplies over the step.
    fn time_work(&self, g: &mut Graph, h: Id, lam: &[Id]) -> Id {
        let mut supplied: Vec<Id> = self.dt_v.into_iter().collect();
        for (i, gt) in self.dt_g.iter().enumerate() {
            if let Some(gt) = gt {
                supplied.push(g.mul2(lam[i], *gt));
            }
        }
        let s = g.add(&supplied);
        g.mul2(h, s)
    }
}

impl DiscreteGradient<'_> {
    /// The discrete gradients of the potential and of each constraint,
    /// combined with the multipliers `lam` into the force `∇̄V + Ḡᵀλ`; in
    /// `(q, t)` for those that depend on time where the model does.
    fn potential_and_constraints(
        &self,
        g: &mut Graph,
        cm: &ConstantMass,
        quadratic: &Quadratic,
        timed: bool,
        lam: &[Id],
    ) -> Reactions {
        let t0 = self.model.time;
        let c = cm.g.len();
        let mut dt_v = None;
        let grad_v = if timed && g.depends_on(cm.v, &[t0]) {
            let (gv, vt) = self.in_q_and_t(g, cm.v, &cm.grad_v);
            dt_v = Some(vt);
            gv
        } else {
            self.in_q(g, cm.v, &cm.grad_v, quadratic.potential)
        };
        let mut dt_g = vec![None; c];
        let gq: Vec<Vec<Id>> = (0..c)
            .map(|i| {
                if timed && g.depends_on(cm.g[i], &[t0]) {
                    let (gi, gt) = self.in_q_and_t(g, cm.g[i], &cm.gq[i]);
                    dt_g[i] = Some(gt);
                    gi
                } else {
                    self.in_q(g, cm.g[i], &cm.gq[i], quadratic.constraints[i])
                }
            })
            .collect();
        let force = if c == 0 {
            grad_v
        } else {
            let gl = matvec_t(g, &gq, lam);
            grad_v.iter().zip(&gl).map(|(&a, &b)| g.add2(a, b)).collect()
        };
        Reactions { force, dt_v, dt_g }
    }

    /// `∇̄f` in `q` for `f` free of time with gradient `grad`; the midpoint
    /// gradient alone where `f` is `quadratic`.
    fn in_q(&self, g: &mut Graph, f: Id, grad: &[Id], quadratic: bool) -> Vec<Id> {
        let (q, v, dq) = (self.q, self.v, self.dq);
        let mid = at(g, grad, q, self.qbar, v, v);
        if quadratic {
            return mid;
        }
        let (f1, f0) = (at(g, &[f], q, self.q1, v, v)[0], at(g, &[f], q, self.q0, v, v)[0]);
        let slope = dot(g, &mid, dq);
        let (nf0, ns) = (g.neg(f0), g.neg(slope));
        let defect = g.add(&[f1, nf0, ns]);
        let norm2 = dot(g, dq, dq);
        let delta2 = self.rest_guard(g);
        let den = g.add2(norm2, delta2);
        let c = g.div(defect, den);
        axpy(g, &mid, c, dq)
    }

    /// A function of time as well is given the discrete gradient in (q, t),
    /// Δ = (Δq, h): its q-part enters the momenta, its t-part `∂̄f/∂t` the
    /// energy supplied, and ⟨∇̄_q f, Δq⟩ + h ∂̄f/∂t = f(q_{n+1}, t_{n+1}) −
    /// f(q_n, t_n) exactly, so the energy balance H_{n+1} − H_n =
    /// h (∂̄V/∂t + λ·∂̄g/∂t) holds to round-off as the energy does unforced
    /// (the midpoint in time keeps the step symmetric).
    fn in_q_and_t(&self, g: &mut Graph, f: Id, grad: &[Id]) -> (Vec<Id>, Id) {
        let (model, q, v, dq, h) = (self.model, self.q, self.v, self.dq, self.h);
        let ft = time_derivative(g, model, &[f])[0];
        let mid = at(g, grad, q, self.qbar, v, v);
        let mid = at_time(g, model, &mid, self.t_half);
        let mid_t = at(g, &[ft], q, self.qbar, v, v);
        let mid_t = at_time(g, model, &mid_t, self.t_half)[0];
        let f1 = at(g, &[f], q, self.q1, v, v);
        let f1 = at_time(g, model, &f1, self.t1)[0];
        let f0 = at(g, &[f], q, self.q0, v, v)[0];
        let slope = dot(g, &mid, dq);
        let slope_t = g.mul2(mid_t, h);
        let (nf0, ns, nst) = (g.neg(f0), g.neg(slope), g.neg(slope_t));
        let defect = g.add(&[f1, nf0, ns, nst]);
        let norm2 = dot(g, dq, dq);
        let hh2 = g.mul2(h, h);
        let delta2 = self.rest_guard(g);
        let den = g.add(&[norm2, hh2, delta2]);
        let c = g.div(defect, den);
        let ch = g.mul2(c, h);
        (axpy(g, &mid, c, dq), g.add2(mid_t, ch))
    }

    /// `δ² = 1e-18 (1 + ‖q̄‖²)`, added to the correction's denominator so
    /// that it vanishes at rest (see the module's docs).
    fn rest_guard(&self, g: &mut Graph) -> Id {
        let qq = dot(g, self.qbar, self.qbar);
        let one = g.constant(1.0);
        let scale = g.add2(one, qq);
        g.scale(1e-18, scale)
    }
}

/// The step as [`MomentumStep`] takes it, around `residual` and `work`:
/// predictor `(q_n + h M⁻¹ p_n, p_n, λ_prev)`, warm start `(q, M ξ, 0)`, names.
fn momentum_step(
    g: &mut Graph,
    model: &Model,
    cm: &ConstantMass,
    h: Id,
    (z, x, w): (Vec<Id>, Vec<Id>, Vec<Id>),
    residual: Vec<Id>,
    work: Option<Id>,
) -> MomentumStep {
    let (q, v) = (model.q_syms(), model.v_syms());
    let (n, c) = (q.len(), cm.g.len());
    let next: Vec<Id> = x[..2 * n].to_vec();
    let (q0, p0) = z.split_at(n);
    let v0 = matvec(g, &cm.m_inv, p0);
    let mut predictor = axpy(g, q0, h, &v0);
    predictor.extend_from_slice(p0);
    predictor.extend_from_slice(&w[2 * n..]);
    let mv = matvec(g, &cm.m, &v);
    let zero = g.constant(0.0);
    let init_warm: Vec<Id> = q
        .iter()
        .chain(&mv)
        .copied()
        .chain(std::iter::repeat_n(zero, c))
        .collect();
    let unknown_names = coordinate_names(model, |c| format!("{c}+"))
        .into_iter()
        .chain(coordinate_names(model, |c| format!("p({c})+")))
        .chain((0..c).map(|i| format!("lambda{i}")));
    MomentumStep {
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
    }
}
