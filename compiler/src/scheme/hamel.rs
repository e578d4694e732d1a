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
use crate::sym::{
    affine_in, directional, gradient, hessian, restage, saddle_product, symmetric_jacobian, Applied, Graph, Id,
    SubstMap,
};

use super::frame::Frame;
use super::mechanics::{FreeMotion, Mechanics};
use super::step::{self, at_time, force_at, power, scaled_dot, symbols, time_in_step, Draft, StepSystem};
use super::tableau;
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

/// The midpoint form's requirement, checked where the step is derived and
/// where hosts ask whether it applies: momenta affine in the velocities
/// ([`affine_in`]: a Hessian per check took 4.4 s of the 64-link director
/// chain's `applies`, O(N³), where momenta written linear in the velocities
/// pass by one pass over the graph), else [`NOT_QUADRATIC`].
pub(super) fn check_affine_momenta(g: &mut Graph, momenta: &[Id], v: &[Id]) -> Result<(), SchemeError> {
    if affine_in(g, momenta, v) {
        Ok(())
    } else {
        Err(SchemeError(NOT_QUADRATIC.into()))
    }
}

/// Derives the discrete Hamel step for `model`.
pub fn derive(model: &Model, kin: Kinematics, tableau: super::TableauChoice) -> Result<StepSystem, SchemeError> {
    let mut model = model.clone();
    check_form(&model)?;
    let frame = Frame::of(&mut model).map_err(|e| SchemeError(format!("hamel: {}", e.0)))?;
    let sparse = if super::Scheme::Hamel(kin).keeps_tableau(&model, tableau) {
        tableau::of(&mut model, &frame)
    } else {
        None
    };
    // Through the tableau where the step keeps one: the expanded momenta
    // and force of a chain are O(N²) nodes and took a quarter of a 256-link
    // derivation.
    let mech = match (&sparse, &model.tableau) {
        (Some(s), Some(t)) => {
            let v = model.v_syms();
            tableau::mechanics(&mut model.graph, t, s, &v)
        }
        _ => Mechanics::of(&mut model, &frame),
    };
    let cons = classify(&mut model);
    let mut g = std::mem::take(&mut model.graph);
    let mut step = Step::new(&mut g, &model, &mech, &frame, &cons);
    step.sparse = sparse.as_ref();
    let qbar = midpoint(&mut g, step.q0(), step.q1());
    let predictor = step.predictor(&mut g);
    let mut eqs = match kin {
        Kinematics::Midpoint => step.midpoint(&mut g, &qbar)?,
        Kinematics::Averaged => step.averaged(&mut g, &qbar),
    };
    let xi1 = step.full(step.k1());
    // The stage whose momentum and force read the tableau's symbols.
    let stage_q = match kin {
        Kinematics::Midpoint => qbar,
        Kinematics::Averaged => step.q1().to_vec(),
    };
    let (q, v) = (step.q.clone(), step.v.clone());
    // `∂p/∂ξ` for the invariants' classification: the observation's where
    // it has one, else from the momenta (one differentiation of p, not two
    // of E). Through a tableau there is none: the classification takes the
    // momenta's derivative along each velocity at its points instead (a
    // symbolic one is O(N²) entries). The health kernels take the momenta
    // themselves (the metric's product with a direction is their
    // derivative along it); through a tableau always (`∂p/∂ξ`, the Hessian
    // of l, is the Legendre condition itself), else where affine in ξ.
    let affine = g.degree_at_most_through(&mech.p, &step.v, 1, &mech.locals);
    let metric = eqs
        .observation
        .metric
        .take()
        .or_else(|| (affine && sparse.is_none()).then(|| hessian(&mut g, &mech.p, &step.v)));
    let momenta = (affine || sparse.is_some()).then(|| mech.p.clone());
    let mut draft = step.draft(kin, eqs, predictor);
    draft.kinetic_metric = metric;
    draft.momenta = momenta;
    draft.free_motion = Some(FreeMotion {
        psi: frame.psi.clone(),
        mechanics: mech.clone(),
    });
    if let Some(s) = &sparse {
        tableau::attach(&mut g, &mut draft, s, (&q, &stage_q), (&v, &xi1));
    }
    // The physical kernels read the tableau as the free motion does.
    draft.physical_locals = mech.locals.clone();
    let mut sys = draft.assemble(&model, g, mech.energy);
    // The monitor reads the model's invariants through the tableau too
    // (classified above in their expanded form).
    if let (Some(_), Some(t)) = (&sparse, &model.tableau) {
        if t.invariants.len() == model.invariants.len() {
            for (inv, &e) in sys.invariants[1..].iter_mut().zip(&t.invariants) {
                inv.expr = e;
            }
        }
    }
    sys.frame = Some(frame.psi.clone());
    Ok(sys)
}

/// One step's symbols — step size, state `z = (q_k, κ_k)`, unknowns
/// `x = (q_{k+1}, κ_{k+1}, ν)` and the previous step's unknowns `w` — with
/// the model's quantities they are built from. `κ` are the kept velocity
/// components (midpoint: their momenta in the state).
struct Step<'a> {
    model: &'a Model,
    mech: &'a Mechanics,
    cons: &'a Constraints,
    q: Vec<Id>,
    v: Vec<Id>,
    /// coordinates, velocity components, general constraints
    n: usize,
    m: usize,
    nc: usize,
    rheonomic: bool,
    h: Id,
    /// `h/2`
    hh: Id,
    zero: Id,
    z: Vec<Id>,
    x: Vec<Id>,
    w: Vec<Id>,
    /// `Ψ(q)` row-major, `n × m`
    psi_flat: Vec<Id>,
    /// `A(q)` of the general constraints row-major, `nc × m`
    rows_flat: Vec<Id>,
    /// momentum and force of the step's stage in a tableau's symbols
    sparse: Option<&'a tableau::Sparse>,
}

/// The part of the step each kinematics derives in its own way.
struct Equations {
    residual: Vec<Id>,
    next: Vec<Id>,
    work: Option<Id>,
    observation: Observation,
    init_state: Vec<Id>,
}

/// How the physical velocity is recovered from the state: the linear system
/// `matrix · solution = rhs` (empty where none is needed) and `ξ` in terms of
/// state and solution.
struct Observation {
    matrix: Vec<Vec<Id>>,
    /// the matrix by its product with a direction, instead of `matrix`
    /// (a chain's through its tableau: O(N) where the matrix is O(N²))
    applied: Option<Applied>,
    rhs: Vec<Id>,
    solution: Vec<Id>,
    v: Vec<Id>,
    /// `∂p/∂ξ` in the physical symbols where the observation derived it
    /// for every velocity (see [`Draft::kinetic_metric`])
    metric: Option<Vec<Vec<Id>>>,
}

impl<'a> Step<'a> {
    fn new(g: &mut Graph, model: &'a Model, mech: &'a Mechanics, frame: &Frame, cons: &'a Constraints) -> Step<'a> {
        let q = model.q_syms();
        let v = model.v_syms();
        let (n, m, nc) = (q.len(), v.len(), cons.general.len());
        let nk = cons.kept.len();
        let rheonomic = step::rheonomic(g, model);
        let h = g.symbol("__h");
        let half = g.constant(0.5);
        let hh = g.mul2(half, h);
        let zero = g.constant(0.0);
        let z = symbols(g, "__z", n + nk);
        let x = symbols(g, "__x", n + nk + nc);
        let w = symbols(g, "__w", n + nk + nc);
        Step {
            model,
            mech,
            cons,
            q,
            v,
            n,
            m,
            nc,
            rheonomic,
            h,
            hh,
            zero,
            z,
            x,
            w,
            psi_flat: frame.psi.iter().flatten().copied().collect(),
            rows_flat: cons.rows.iter().flatten().copied().collect(),
            sparse: None,
        }
    }

    fn nk(&self) -> usize {
        self.cons.kept.len()
    }

    fn q0(&self) -> &[Id] {
        &self.z[..self.n]
    }

    /// `κ_k`: kept velocity components (averaged) or their momenta (midpoint)
    fn k0(&self) -> &[Id] {
        &self.z[self.n..]
    }

    fn q1(&self) -> &[Id] {
        &self.x[..self.n]
    }

    fn k1(&self) -> &[Id] {
        &self.x[self.n..self.n + self.nk()]
    }

    fn nu(&self) -> &[Id] {
        &self.x[self.n + self.nk()..]
    }

    /// Full velocity vector from kept components (eliminated ones are zero).
    fn full(&self, kv: &[Id]) -> Vec<Id> {
        let mut out = vec![self.zero; self.m];
        for (k, &a) in self.cons.kept.iter().enumerate() {
            out[a] = kv[k];
        }
        out
    }

    /// Model expressions at `(q, ξ) = (qs, vs)`.
    fn at(&self, g: &mut Graph, exprs: &[Id], qs: &[Id], vs: &[Id]) -> Vec<Id> {
        step::at(g, exprs, &self.q, qs, &self.v, vs)
    }

    /// `Ψ ξ` for `Ψ` row-major.
    fn mul_psi(&self, g: &mut Graph, psi: &[Id], xi: &[Id]) -> Vec<Id> {
        let m = self.m;
        (0..self.n)
            .map(|i| {
                let t: Vec<Id> = (0..m).map(|a| g.mul2(psi[i * m + a], xi[a])).collect();
                g.add(&t)
            })
            .collect()
    }

    /// `Σ_j A_j(at)ᵀ ν_j`, component `a`, for `rows` the constraint rows at some point.
    fn a_t_nu(&self, g: &mut Graph, rows: &[Id], a: usize) -> Id {
        let nu = self.nu();
        let t: Vec<Id> = (0..self.nc).map(|j| g.mul2(rows[j * self.m + a], nu[j])).collect();
        g.add(&t)
    }

    /// The kinematic rows `q_{k+1} − q_k − h Ψ(q̄) ξ` for `psi` the frame at `q̄`.
    fn kinematic_rows(&self, g: &mut Graph, psi: &[Id], xi: &[Id]) -> Vec<Id> {
        let (q0, q1) = (self.q0(), self.q1());
        let dq = self.mul_psi(g, psi, xi);
        (0..self.n)
            .map(|i| {
                let s = g.sub(q1[i], q0[i]);
                let t = g.mul2(self.h, dq[i]);
                g.sub(s, t)
            })
            .collect()
    }

    /// Predictor: q ≈ q_k + h Ψ(q_k) ξ_prev, ξ ≈ ξ_prev, ν ≈ ν_prev.
    fn predictor(&self, g: &mut Graph) -> Vec<Id> {
        let (n, nk) = (self.n, self.nk());
        let q0 = self.q0();
        let (wk, wnu) = self.w[n..].split_at(nk);
        let psi0 = self.at(g, &self.psi_flat, q0, &self.v);
        let dq = self.mul_psi(g, &psi0, &self.full(wk));
        let mut predictor: Vec<Id> = (0..n)
            .map(|i| {
                let s = g.mul2(self.h, dq[i]);
                g.add2(q0[i], s)
            })
            .collect();
        predictor.extend_from_slice(wk);
        predictor.extend_from_slice(wnu);
        predictor
    }

    /// The one-step position–momentum form (docs/schemes.md §2.1), state
    /// `(q_k, π_k)`.
    fn midpoint(&self, g: &mut Graph, qbar: &[Id]) -> Result<Equations, SchemeError> {
        let (model, mech, hh) = (self.model, self.mech, self.hh);
        let pi = self.k0();
        let xi1 = self.full(self.k1());
        // A rheonomic Lagrangian is sampled where the discrete one is,
        // l_d = h l(q̄, ξ, t_{k+½}): the midpoint rule in time as in
        // space keeps the step symmetric (so second order) and
        // variational; its energy then changes by −h ∂l/∂t there.
        let t_half = time_in_step(g, model, self.h, 0.5);
        let (p, force) = self.sparse.map_or((&mech.p, &mech.force), |s| (&s.p, &s.force));
        let p_bar = self.at(g, p, qbar, &xi1);
        let p_bar = at_time(g, model, &p_bar, t_half);
        let f_bar = self.at(g, force, qbar, &xi1);
        let f_bar = at_time(g, model, &f_bar, t_half);
        // F̄_e = F_e(q̄, ξ, u_k, t_{k+½}), split (h/2, h/2) over the nodes.
        let fe_bar = force_at(g, model, qbar, &xi1, t_half, &model.u_syms());
        let forces = fe_bar.as_ref().map(|fe| scaled_dot(g, fe, &xi1, self.h));
        let timed = self.rheonomic.then(|| {
            let lt = self.at(g, &[mech.lt], qbar, &xi1);
            let lt = at_time(g, model, &lt, t_half)[0];
            let w = g.mul2(self.h, lt);
            g.neg(w)
        });
        let work = power(g, forces, timed);
        let hfe: Vec<Option<Id>> = (0..self.m)
            .map(|a| fe_bar.as_ref().map(|fe| g.mul2(hh, fe[a])))
            .collect();
        let psi_bar = self.at(g, &self.psi_flat, qbar, &xi1);
        let rows0 = self.at(g, &self.rows_flat, self.q0(), &self.v);
        let mut residual = self.kinematic_rows(g, &psi_bar, &xi1);
        for (k, &a) in self.cons.kept.iter().enumerate() {
            let hf = g.mul2(hh, f_bar[a]);
            let an = self.a_t_nu(g, &rows0, a);
            let mut terms = vec![hf, pi[k], an];
            terms.extend(hfe[a]);
            let r = minus(g, p_bar[a], &terms);
            residual.push(r);
        }
        let cbar = self.at(g, &self.cons.general, qbar, &xi1);
        residual.extend(cbar);
        let mut next: Vec<Id> = self.q1().to_vec();
        for &a in &self.cons.kept {
            let hf = g.mul2(hh, f_bar[a]);
            let mut terms = vec![p_bar[a], hf];
            terms.extend(hfe[a]);
            next.push(g.add(&terms));
        }
        let observation = self.node_velocity(g, &rows0)?;
        // π_0 = p(q_0, ξ_0), through the tableau's symbols where it has
        // one (the physical kernels compute them, `physical_locals`)
        let mut init_state: Vec<Id> = self.q.clone();
        init_state.extend(self.cons.kept.iter().map(|&a| p[a]));
        Ok(Equations {
            residual,
            next,
            work,
            observation,
            init_state,
        })
    }

    /// Node velocity from π in the midpoint form:
    /// [M_KK A_Kᵀ; A_K 0] [ξ_K; μ] = [π − b_K; 0] at q_k, for `rows0` the
    /// constraint rows at q_k. Needs the momentum affine in the velocities.
    fn node_velocity(&self, g: &mut Graph, rows0: &[Id]) -> Result<Observation, SchemeError> {
        let (m, nc, zero) = (self.m, self.nc, self.zero);
        let kept = &self.cons.kept;
        let (q0, pi) = (self.q0(), self.k0());
        let momenta: Vec<Id> = kept.iter().map(|&a| self.mech.p[a]).collect();
        if let Some(s) = self.sparse {
            // Affine as written through the tableau, or else once expanded
            // (terms might cancel).
            if !g.degree_at_most_through(&momenta, &self.v, 1, &self.mech.locals) {
                let expanded = tableau::at_stage(g, s, &momenta, (&self.q, &self.q), (&self.v, &self.v));
                check_affine_momenta(g, &expanded, &self.v)?;
            }
            let (applied, rhs) = self.node_velocity_applied(g, s, rows0);
            let y = symbols(g, "__y", self.nk() + nc);
            return Ok(Observation {
                v: self.full(&y[..self.nk()]),
                solution: y,
                matrix: Vec::new(),
                applied: Some(applied),
                rhs,
                metric: None,
            });
        }
        check_affine_momenta(g, &momenta, &self.v)?;
        // One derivative per velocity across the momenta, which share most
        // of their terms (a chain's couple every link); `∂p_a/∂ξ_b` and
        // `∂p_b/∂ξ_a` are one derivative of the Lagrangian.
        let hess = symmetric_jacobian(g, &momenta, &self.v, kept);
        let zeros = vec![zero; m];
        let mut matrix = Vec::new();
        let mut rhs = Vec::new();
        let b0 = self.at(g, &self.mech.p, q0, &zeros);
        for (k, &a) in kept.iter().enumerate() {
            let row: Vec<Id> = kept.iter().map(|&b| hess[k][b]).collect();
            let mut row = self.at(g, &row, q0, &zeros);
            for j in 0..nc {
                row.push(rows0[j * m + a]);
            }
            matrix.push(row);
            rhs.push(g.sub(pi[k], b0[a]));
        }
        for j in 0..nc {
            let mut row: Vec<Id> = kept.iter().map(|&a| rows0[j * m + a]).collect();
            row.extend(std::iter::repeat_n(zero, nc));
            matrix.push(row);
            rhs.push(zero);
        }
        let y = symbols(g, "__y", self.nk() + nc);
        Ok(Observation {
            v: self.full(&y[..self.nk()]),
            solution: y,
            matrix,
            applied: None,
            rhs,
            metric: kept.iter().copied().eq(0..m).then_some(hess),
        })
    }

    /// [`Step::node_velocity`]'s system through the tableau `s`: its
    /// product with a direction `u` (`M u` the momenta's derivative along
    /// the kept velocities' part of `u`, at `q_k` and rest) and its
    /// right-hand side, reading the tableau's members and their rates at
    /// that point as locals.
    fn node_velocity_applied(&self, g: &mut Graph, s: &tableau::Sparse, rows0: &[Id]) -> (Applied, Vec<Id>) {
        let (m, nc, nk) = (self.m, self.nc, self.nk());
        let kept = &self.cons.kept;
        let (q0, pi) = (self.q0(), self.k0());
        let u: Vec<Id> = (0..nk + nc).map(|i| g.symbol(&format!("__ou{i}"))).collect();
        let seeds: Vec<(Id, Id)> = kept.iter().zip(&u).map(|(&a, &ui)| (self.v[a], ui)).collect();
        let members: Vec<(Id, Id)> = s.symbols.iter().map(|&(_, sym, def)| (sym, def)).collect();
        let (mu, rates) = directional(g, &s.p, &seeds, &members, "__odu");
        // Everything at (q_k, 0): members, rates, the product and p(q_k, 0).
        let mut at_rest = SubstMap::default();
        at_rest.extend(self.q.iter().copied().zip(q0.iter().copied()));
        at_rest.extend(self.v.iter().map(|&x| (x, self.zero)));
        let locals: Vec<(Id, Id)> = members.into_iter().chain(rates).collect();
        let exprs: Vec<Id> = mu.iter().chain(&s.p).copied().collect();
        let (moved, locals) = restage(g, &exprs, &locals, &at_rest, "__ot");
        let (mu0, b0) = moved.split_at(m);
        // The kept velocities' rows and columns, and the constraint rows there.
        let mu0_k: Vec<Id> = kept.iter().map(|&a| mu0[a]).collect();
        let a_k: Vec<Vec<Id>> = (0..nc)
            .map(|j| kept.iter().map(|&a| rows0[j * m + a]).collect())
            .collect();
        let product = saddle_product(g, &mu0_k, &a_k, &u);
        let mut rhs: Vec<Id> = kept.iter().zip(pi).map(|(&a, &p)| g.sub(p, b0[a])).collect();
        rhs.extend(std::iter::repeat_n(self.zero, nc));
        let applied = Applied {
            product,
            direction: u,
            locals,
        };
        (applied, rhs)
    }

    /// The published energy-preserving form between midpoints
    /// (docs/schemes.md §2.2), state `(Q_{k-1}, ξ_{k-1,k})`.
    fn averaged(&self, g: &mut Graph, qbar: &[Id]) -> Equations {
        let (model, mech, hh) = (self.model, self.mech, self.hh);
        let (q0, q1) = (self.q0(), self.q1());
        let xi0 = self.full(self.k0());
        let xi1 = self.full(self.k1());
        let xibar = midpoint(g, &xi0, &xi1);
        // A rheonomic Lagrangian at each node's own time, as the forces
        // below: the trapezoidal rule in time keeps the step symmetric.
        let t1 = time_in_step(g, model, self.h, 1.0);
        // With a tableau, the end's momentum and force read its symbols
        // (unknowns of the step, rows at (q_{k+1}, ξ_{k+1}): `derive`
        // attaches them), the start's their definitions at the state.
        let (p, force) = self.sparse.map_or((&mech.p, &mech.force), |s| (&s.p, &s.force));
        let p1 = self.at(g, p, q1, &xi1);
        let p1 = at_time(g, model, &p1, t1);
        let f1 = self.at(g, force, q1, &xi1);
        let f1 = at_time(g, model, &f1, t1);
        let (p0, f0) = match self.sparse {
            Some(s) => {
                let both: Vec<Id> = s.p.iter().chain(&s.force).copied().collect();
                let mut at0 = tableau::at_stage(g, s, &both, (&self.q, q0), (&self.v, &xi0));
                let f0 = at0.split_off(s.p.len());
                (at0, f0)
            }
            None => (self.at(g, &mech.p, q0, &xi0), self.at(g, &mech.force, q0, &xi0)),
        };
        // The state (Q, ξ) is labelled with the time of the step's start,
        // as the initial data it starts from are: (q_0, ξ_0) at t_0. ZLB12
        // label Q_k with t_{k+½}; starting from node data under that label
        // shifts the solution by h/2, and a force depending on time then
        // acts half a step early (first order). Both stage forces belong
        // to this step's interval [t_k, t_{k+1}] and its input u_k (the
        // trapezoidal rule of the momentum equation), so a step depends on
        // (z_k, u_k, t_k) alone and its linearization is complete.
        let u_now = model.u_syms();
        let fe0 = force_at(g, model, q0, &xi0, model.time, &u_now);
        let fe1 = force_at(g, model, q1, &xi1, t1, &u_now);
        let fe_sum: Option<Vec<Id>> = fe0
            .zip(fe1)
            .map(|(a, b)| a.iter().zip(&b).map(|(&x, &y)| g.add2(x, y)).collect());
        let forces = fe_sum.as_ref().map(|fs| scaled_dot(g, fs, &xibar, hh));
        // −∫ ∂l/∂t dt by the same trapezoidal rule.
        let timed = self.rheonomic.then(|| {
            let lt0 = self.at(g, &[mech.lt], q0, &xi0)[0];
            let lt1 = self.at(g, &[mech.lt], q1, &xi1);
            let lt1 = at_time(g, model, &lt1, t1)[0];
            let s = g.add2(lt0, lt1);
            let w = g.mul2(hh, s);
            g.neg(w)
        });
        let work = power(g, forces, timed);
        let psi_bar = self.at(g, &self.psi_flat, qbar, &self.v);
        let rows_bar = self.at(g, &self.rows_flat, qbar, &self.v);
        let mut momentum_rows = Vec::with_capacity(self.nk());
        for &a in &self.cons.kept {
            let fs = g.add2(f0[a], f1[a]);
            let hf = g.mul2(hh, fs);
            let an = self.a_t_nu(g, &rows_bar, a);
            let mut terms = vec![p0[a], hf, an];
            terms.extend(fe_sum.as_ref().map(|fs| g.mul2(hh, fs[a])));
            let r = minus(g, p1[a], &terms);
            momentum_rows.push(r);
        }
        // Kinematic rows first, as in the midpoint form (derived after the
        // momentum rows all the same: the graph numbers its nodes in the
        // order they are made, and the emitted code follows it).
        let mut residual = self.kinematic_rows(g, &psi_bar, &xibar);
        residual.extend(momentum_rows);
        let c1 = self.at(g, &self.cons.general, q1, &xi1);
        residual.extend(c1);
        let mut next: Vec<Id> = q1.to_vec();
        next.extend_from_slice(self.k1());
        let mut init_state: Vec<Id> = self.q.clone();
        init_state.extend(self.cons.kept.iter().map(|&a| self.v[a]));
        Equations {
            residual,
            next,
            work,
            observation: Observation {
                matrix: vec![],
                applied: None,
                rhs: vec![],
                solution: vec![],
                v: xi0,
                metric: None,
            },
            init_state,
        }
    }

    /// The step as the shared assembly takes it: the equations of `kin`,
    /// names, warm start and the unknowns that become the next state.
    fn draft(self, kin: Kinematics, eqs: Equations, predictor: Vec<Id>) -> Draft {
        let (n, nc) = (self.n, self.nc);
        let nk = self.nk();
        let kept = &self.cons.kept;
        let mut init_warm: Vec<Id> = self.q.clone();
        init_warm.extend(kept.iter().map(|&a| self.v[a]));
        init_warm.extend(std::iter::repeat_n(self.zero, nc));
        let qn = |i: usize| self.model.coords[i].name.clone();
        let vn = |a: usize| self.model.vels[a].name.clone();
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
        Draft {
            scheme: format!("hamel_{}", kin.name()),
            h: self.h,
            state: self.z.iter().copied().zip(state_names).collect(),
            unknowns: self.x.iter().copied().zip(unknown_names).collect(),
            obs_q: self.q0().to_vec(),
            previous: self.w,
            residual: eqs.residual,
            next: eqs.next,
            predictor,
            init_state: eqs.init_state,
            init_warm,
            obs_matrix: eqs.observation.matrix,
            obs_applied: eqs.observation.applied,
            obs_rhs: eqs.observation.rhs,
            obs_solution: eqs.observation.solution,
            obs_v: eqs.observation.v,
            base,
            work: eqs.work,
            auxiliary: vec![],
            kinetic_metric: None,
            momenta: None,
            free_motion: None,
            physical_locals: Vec::new(),
        }
    }
}

/// `a − b₀ − b₁ − …`
fn minus(g: &mut Graph, a: Id, bs: &[Id]) -> Id {
    let mut t = vec![a];
    t.extend(bs.iter().map(|&b| g.neg(b)));
    g.add(&t)
}
