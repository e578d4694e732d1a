//! The discrete Hamel integrator (docs/schemes.md §2, Z16 §5, ZLB12), τ = ½.
//!
//! Two kinematics:
//! - `midpoint` (§2.1): one-step position–momentum form, state `(q_k, π_k)`;
//! - `averaged` (§2.2): the published energy-preserving form between
//!   midpoints, state `(Q_{k-1}, ξ_{k-1,k})`.
//!
//! Velocity constraints that fix one component (`ξ^a = 0`) are eliminated
//! symbolically (that unknown and that momentum row are dropped); all others get
//! a multiplier `ν`.

use crate::model::Model;
use crate::sym::vector::midpoint;
use crate::sym::{gradient, Graph, Id};

use super::frame::Frame;
use super::mechanics::Mechanics;
use super::step::{self, at_time, force_at, power, scaled_dot, symbols, time_in_step, Draft, StepSystem};
use super::SchemeError;

/// How the configuration advances over a step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kinematics {
    /// `q_{k+1} − q_k = h Ψ(q̄) ξ_{k,k+1}` at nodes (docs/schemes.md §2)
    Midpoint,
    /// `Q_k − Q_{k−1} = h Ψ(Q̄) (ξ_{k,k+1} + ξ_{k−1,k})/2` between midpoints (docs/schemes.md §2)
    Averaged,
}

impl Kinematics {
    /// Name as written in attributes.
    pub fn name(self) -> &'static str {
        match self {
            Kinematics::Midpoint => "midpoint",
            Kinematics::Averaged => "averaged",
        }
    }
}

/// Splits velocity constraints into eliminated components and general rows.
pub(super) struct Constraints {
    /// velocity components kept as unknowns
    pub(super) kept: Vec<usize>,
    /// general constraints: expressions `A_j(q) ξ` (model symbols)
    general: Vec<Id>,
    /// `A[j][a]` of the general constraints
    rows: Vec<Vec<Id>>,
}

pub(super) fn classify(model: &mut Model) -> Constraints {
    let q = model.q_syms();
    let v = model.v_syms();
    let g = &mut model.graph;
    let mut eliminated = vec![false; v.len()];
    let (mut general, mut rows) = (Vec::new(), Vec::new());
    for c in &model.velocity_constraints {
        let row = gradient(g, c.expr, &v);
        let nonzero: Vec<usize> = (0..v.len()).filter(|&a| !g.is_const(row[a], 0.0)).collect();
        if nonzero.len() == 1
            && g.as_const(row[nonzero[0]]).is_some()
            && !g.depends_on(c.expr, &q)
            && !eliminated[nonzero[0]]
        {
            eliminated[nonzero[0]] = true;
        } else {
            general.push(c.expr);
            rows.push(row);
        }
    }
    Constraints {
        kept: (0..v.len()).filter(|&a| !eliminated[a]).collect(),
        general,
        rows,
    }
}

/// Refuses, before anything is derived, a model with holonomic constraints.
pub(super) fn check_form(model: &Model) -> Result<(), SchemeError> {
    if model.holonomic.is_empty() {
        return Ok(());
    }
    Err(SchemeError(format!(
        "the hamel scheme imposes velocity constraints only; {} has holonomic constraints (use rattle or energy_momentum, or coordinates in which they hold, such as directors with a frame)",
        model.file
    )))
}

/// Why hamel_midpoint cannot take a Lagrangian (see [`derive`]).
pub(super) const NOT_QUADRATIC: &str = "hamel_midpoint: the Lagrangian is not quadratic in the velocities, so node velocities cannot be recovered from the momenta";

/// Derives the discrete Hamel step for `model`.
pub fn derive(model: &Model, kin: Kinematics) -> Result<StepSystem, SchemeError> {
    let mut model = model.clone();
    check_form(&model)?;
    let frame = Frame::of(&mut model).map_err(|e| SchemeError(format!("hamel: {}", e.0)))?;
    let mech = Mechanics::of(&mut model, &frame);
    let cons = classify(&mut model);
    let q = model.q_syms();
    let v = model.v_syms();
    let (n, m, nc) = (q.len(), v.len(), cons.general.len());
    let kept = cons.kept.clone();
    let nk = kept.len();
    let mut g = std::mem::take(&mut model.graph);
    let rheonomic = step::rheonomic(&g, &model);

    let h = g.symbol("__h");
    let half = g.constant(0.5);
    let hh = g.mul2(half, h);
    let zero = g.constant(0.0);
    let z = symbols(&mut g, "__z", n + nk);
    let x = symbols(&mut g, "__x", n + nk + nc);
    let w = symbols(&mut g, "__w", n + nk + nc);

    // Full velocity vector from kept components (eliminated ones are zero).
    let full = |kv: &[Id]| -> Vec<Id> {
        let mut out = vec![zero; m];
        for (k, &a) in kept.iter().enumerate() {
            out[a] = kv[k];
        }
        out
    };
    // Evaluates model expressions at (q, ξ) = (qs, vs).
    let at = |g: &mut Graph, exprs: &[Id], qs: &[Id], vs: &[Id]| step::at(g, exprs, &q, qs, &v, vs);
    let psi_flat: Vec<Id> = frame.psi.iter().flatten().copied().collect();
    let rows_flat: Vec<Id> = cons.rows.iter().flatten().copied().collect();
    let mul_psi = |g: &mut Graph, psi: &[Id], xi: &[Id]| -> Vec<Id> {
        (0..n)
            .map(|i| {
                let t: Vec<Id> = (0..m).map(|a| g.mul2(psi[i * m + a], xi[a])).collect();
                g.add(&t)
            })
            .collect()
    };
    // Σ_j A_j(at)ᵀ ν_j, component a.
    let a_t_nu = |g: &mut Graph, rows: &[Id], nu: &[Id], a: usize| -> Id {
        let t: Vec<Id> = (0..nc).map(|j| g.mul2(rows[j * m + a], nu[j])).collect();
        g.add(&t)
    };

    let (q0, k0) = z.split_at(n);
    let (q1, rest) = x.split_at(n);
    let (k1, nu) = rest.split_at(nk);
    let wrest = &w[n..];
    let (wk, wnu) = wrest.split_at(nk);
    let xi1 = full(k1);
    let qbar = midpoint(&mut g, q0, q1);

    let mut residual = Vec::with_capacity(n + nk + nc);
    let update: Vec<Id>;
    let work: Option<Id>;
    let u_now = model.u_syms();
    let (obs_matrix, obs_rhs, obs_solution, obs_v): (Vec<Vec<Id>>, Vec<Id>, Vec<Id>, Vec<Id>);
    let init_state: Vec<Id>;

    // Predictor: q ≈ q_k + h Ψ(q_k) ξ_prev, ξ ≈ ξ_prev, ν ≈ ν_prev.
    let psi0 = at(&mut g, &psi_flat, q0, &v);
    let dq = mul_psi(&mut g, &psi0, &full(wk));
    let mut predictor: Vec<Id> = (0..n)
        .map(|i| {
            let s = g.mul2(h, dq[i]);
            g.add2(q0[i], s)
        })
        .collect();
    predictor.extend_from_slice(wk);
    predictor.extend_from_slice(wnu);

    match kin {
        Kinematics::Midpoint => {
            let pi = k0;
            // A rheonomic Lagrangian is sampled where the discrete one is,
            // l_d = h l(q̄, ξ, t_{k+½}): the midpoint rule in time as in
            // space keeps the step symmetric (so second order) and
            // variational; its energy then changes by −h ∂l/∂t there.
            let t_half = time_in_step(&mut g, &model, h, 0.5);
            let p_bar = at(&mut g, &mech.p, &qbar, &xi1);
            let p_bar = at_time(&mut g, &model, &p_bar, t_half);
            let f_bar = at(&mut g, &mech.force, &qbar, &xi1);
            let f_bar = at_time(&mut g, &model, &f_bar, t_half);
            // F̄_e = F_e(q̄, ξ, u_k, t_{k+½}), split (h/2, h/2) over the nodes.
            let fe_bar = force_at(&mut g, &model, &qbar, &xi1, t_half, &u_now);
            let forces = fe_bar.as_ref().map(|fe| scaled_dot(&mut g, fe, &xi1, h));
            let timed = rheonomic.then(|| {
                let lt = at(&mut g, &[mech.lt], &qbar, &xi1);
                let lt = at_time(&mut g, &model, &lt, t_half)[0];
                let w = g.mul2(h, lt);
                g.neg(w)
            });
            work = power(&mut g, forces, timed);
            let hfe: Vec<Option<Id>> = (0..m).map(|a| fe_bar.as_ref().map(|fe| g.mul2(hh, fe[a]))).collect();
            let psi_bar = at(&mut g, &psi_flat, &qbar, &xi1);
            let rows0 = at(&mut g, &rows_flat, q0, &v);
            let dq = mul_psi(&mut g, &psi_bar, &xi1);
            for i in 0..n {
                let s = g.sub(q1[i], q0[i]);
                let t = g.mul2(h, dq[i]);
                residual.push(g.sub(s, t));
            }
            for (k, &a) in kept.iter().enumerate() {
                let hf = g.mul2(hh, f_bar[a]);
                let an = a_t_nu(&mut g, &rows0, nu, a);
                let mut terms = vec![hf, pi[k], an];
                terms.extend(hfe[a]);
                let r = minus(&mut g, p_bar[a], &terms);
                residual.push(r);
            }
            let cbar = at(&mut g, &cons.general, &qbar, &xi1);
            residual.extend(cbar);
            let mut up: Vec<Id> = q1.to_vec();
            for &a in &kept {
                let hf = g.mul2(hh, f_bar[a]);
                let mut terms = vec![p_bar[a], hf];
                terms.extend(hfe[a]);
                up.push(g.add(&terms));
            }
            update = up;

            // Node velocity from π: [M_KK A_Kᵀ; A_K 0] [ξ_K; μ] = [π − b_K; 0] at q_k.
            let hess: Vec<Vec<Id>> = kept.iter().map(|&a| gradient(&mut g, mech.p[a], &v)).collect();
            for row in &hess {
                if row.iter().any(|&e| g.depends_on(e, &v)) {
                    return Err(SchemeError(NOT_QUADRATIC.into()));
                }
            }
            let zeros = vec![zero; m];
            let mut mat = Vec::new();
            let mut rhs = Vec::new();
            let b0 = at(&mut g, &mech.p, q0, &zeros);
            for (k, &a) in kept.iter().enumerate() {
                let mut row: Vec<Id> = kept.iter().map(|&b| hess[k][b]).collect();
                let hrow = at(&mut g, &row, q0, &zeros);
                row = hrow;
                for j in 0..nc {
                    row.push(rows0[j * m + a]);
                }
                mat.push(row);
                rhs.push(g.sub(pi[k], b0[a]));
            }
            for j in 0..nc {
                let mut row: Vec<Id> = kept.iter().map(|&a| rows0[j * m + a]).collect();
                row.extend(std::iter::repeat_n(zero, nc));
                mat.push(row);
                rhs.push(zero);
            }
            let y = symbols(&mut g, "__y", nk + nc);
            obs_v = full(&y[..nk]);
            obs_solution = y;
            obs_matrix = mat;
            obs_rhs = rhs;
            // π_0 = p(q_0, ξ_0)
            let mut z0: Vec<Id> = q.clone();
            z0.extend(kept.iter().map(|&a| mech.p[a]));
            init_state = z0;
        }
        Kinematics::Averaged => {
            let xi0 = full(k0);
            let xibar = midpoint(&mut g, &xi0, &xi1);
            // A rheonomic Lagrangian at each node's own time, as the forces
            // below: the trapezoidal rule in time keeps the step symmetric.
            let t1 = time_in_step(&mut g, &model, h, 1.0);
            let p1 = at(&mut g, &mech.p, q1, &xi1);
            let p1 = at_time(&mut g, &model, &p1, t1);
            let p0 = at(&mut g, &mech.p, q0, &xi0);
            let f1 = at(&mut g, &mech.force, q1, &xi1);
            let f1 = at_time(&mut g, &model, &f1, t1);
            let f0 = at(&mut g, &mech.force, q0, &xi0);
            // The state (Q, ξ) is labelled with the time of the step's start,
            // as the initial data it starts from are: (q_0, ξ_0) at t_0. ZLB12
            // label Q_k with t_{k+½}; starting from node data under that label
            // shifts the solution by h/2, and a force depending on time then
            // acts half a step early (first order). Both stage forces belong
            // to this step's interval [t_k, t_{k+1}] and its input u_k (the
            // trapezoidal rule of the momentum equation), so a step depends on
            // (z_k, u_k, t_k) alone and its linearization is complete.
            let fe0 = force_at(&mut g, &model, q0, &xi0, model.time, &u_now);
            let fe1 = force_at(&mut g, &model, q1, &xi1, t1, &u_now);
            let fe_sum: Option<Vec<Id>> = fe0
                .zip(fe1)
                .map(|(a, b)| a.iter().zip(&b).map(|(&x, &y)| g.add2(x, y)).collect());
            let forces = fe_sum.as_ref().map(|fs| scaled_dot(&mut g, fs, &xibar, hh));
            // −∫ ∂l/∂t dt by the same trapezoidal rule.
            let timed = rheonomic.then(|| {
                let lt0 = at(&mut g, &[mech.lt], q0, &xi0)[0];
                let lt1 = at(&mut g, &[mech.lt], q1, &xi1);
                let lt1 = at_time(&mut g, &model, &lt1, t1)[0];
                let s = g.add2(lt0, lt1);
                let w = g.mul2(hh, s);
                g.neg(w)
            });
            work = power(&mut g, forces, timed);
            let psi_bar = at(&mut g, &psi_flat, &qbar, &v);
            let rows_bar = at(&mut g, &rows_flat, &qbar, &v);
            for &a in &kept {
                let fs = g.add2(f0[a], f1[a]);
                let hf = g.mul2(hh, fs);
                let an = a_t_nu(&mut g, &rows_bar, nu, a);
                let mut terms = vec![p0[a], hf, an];
                terms.extend(fe_sum.as_ref().map(|fs| g.mul2(hh, fs[a])));
                let r = minus(&mut g, p1[a], &terms);
                residual.push(r);
            }
            let dq = mul_psi(&mut g, &psi_bar, &xibar);
            let mut kin_rows = Vec::with_capacity(n);
            for i in 0..n {
                let s = g.sub(q1[i], q0[i]);
                let t = g.mul2(h, dq[i]);
                kin_rows.push(g.sub(s, t));
            }
            // Kinematic rows first, as in the midpoint form.
            kin_rows.extend(residual);
            residual = kin_rows;
            let c1 = at(&mut g, &cons.general, q1, &xi1);
            residual.extend(c1);
            let mut up: Vec<Id> = q1.to_vec();
            up.extend_from_slice(k1);
            update = up;
            obs_matrix = vec![];
            obs_rhs = vec![];
            obs_solution = vec![];
            obs_v = xi0;
            let mut z0: Vec<Id> = q.clone();
            z0.extend(kept.iter().map(|&a| v[a]));
            init_state = z0;
        }
    }

    let mut init_warm: Vec<Id> = q.clone();
    init_warm.extend(kept.iter().map(|&a| v[a]));
    init_warm.extend(std::iter::repeat_n(zero, nc));

    let qn = |i: usize| model.coords[i].name.clone();
    let vn = |a: usize| model.vels[a].name.clone();
    let state_names = (0..n).map(qn).chain(kept.iter().map(|&a| match kin {
        Kinematics::Midpoint => format!("pi({})", vn(a)),
        Kinematics::Averaged => vn(a),
    }));
    let unknown_names = (0..n)
        .map(|i| format!("{}+", qn(i)))
        .chain(kept.iter().map(|&a| format!("{}+", vn(a))))
        .chain((0..nc).map(|j| format!("nu{j}")));
    // q_{k+1} becomes the state's q in both kinematics, and ξ_{k,k+1} the
    // state's ξ in the averaged one; multipliers have no state counterpart.
    let base: Vec<Option<usize>> = (0..n + nk + nc)
        .map(|i| match kin {
            _ if i < n => Some(i),
            Kinematics::Averaged if i < n + nk => Some(i),
            _ => None,
        })
        .collect();
    let draft = Draft {
        scheme: format!("hamel_{}", kin.name()),
        h,
        state: z.iter().copied().zip(state_names).collect(),
        unknowns: x.iter().copied().zip(unknown_names).collect(),
        previous: w,
        residual,
        next: update,
        predictor,
        init_state,
        init_warm,
        obs_matrix,
        obs_rhs,
        obs_solution,
        obs_q: q0.to_vec(),
        obs_v,
        base,
        work,
    };
    let mut sys = draft.assemble(&model, g, mech.energy);
    sys.frame = Some(frame.psi.clone());
    Ok(sys)
}

/// `a − b₀ − b₁ − …`
fn minus(g: &mut Graph, a: Id, bs: &[Id]) -> Id {
    let mut t = vec![a];
    t.extend(bs.iter().map(|&b| g.neg(b)));
    g.add(&t)
}
