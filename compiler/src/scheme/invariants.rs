//! What a user invariant is, decided from its expression (never its name):
//! a momentum is linear in the velocities and conserved by the free motion
//! (its rate along the constrained Hamel equations vanishes: Noether's
//! momenta, not a frame component such as the Chaplygin sleigh's angular
//! velocity, which is linear in the velocities and changes); a geometric
//! invariant depends on the positions alone and is kept by the kinematics
//! and the constraints (its rate `∇I · q'` vanishes on every velocity the
//! constraints allow); anything else is monitored.
//!
//! The geometric test is numerical, at a few pseudo-random points: the rate
//! is linear in `ξ`, so "kept" means its row `∂(∇I · q')/∂ξ` lies in the span
//! of the constraint rows. A symbolic zero test would depend on how far the
//! simplifier cancels (`⟨γ, γ × ξ⟩/‖γ‖` is zero only after expansion).

use crate::model::Model;
use crate::sym::{affine_in, gradient, jacobian, Graph, Id, Node, Point};

use super::mechanics::FreeMotion;
use super::InvariantKind;

/// The kind of each of `model.invariants`, in order. Works on a copy of
/// `graph`: the derivatives it takes must not number nodes of the step's
/// own graph (term order, and so rounding, follows node numbers).
///
/// `metric`, `∂p/∂ξ` where the scheme derived it, spares the momentum test
/// a directional derivative of the momenta per velocity at each point.
///
/// `free`, the frame's `Ψ` and the free motion's quantities where the
/// scheme derived them from the model itself, spares the momentum test
/// deriving them again (1.8 of the 128-link director chain's 12 s).
pub(crate) fn classify(
    model: &Model,
    graph: &Graph,
    metric: Option<&[Vec<Id>]>,
    free: Option<&FreeMotion>,
) -> Vec<InvariantKind> {
    if model.invariants.is_empty() {
        return vec![];
    }
    let mut g = graph.clone();
    let (q, v) = (model.q_syms(), model.v_syms());
    // q' = f(q, ξ): the frame, or the identity.
    let rate_of = |g: &mut Graph, e: Id| -> Id {
        let grad = gradient(g, e, &q);
        let terms: Vec<Id> = grad
            .iter()
            .enumerate()
            .map(|(i, &d)| {
                // Lazily: a frame may move more coordinates than there are velocities.
                let qdot = model.frame.as_ref().map_or_else(|| v[i], |f| f[i]);
                g.mul2(d, qdot)
            })
            .collect();
        g.add(&terms)
    };
    // Rows of the velocity-level constraints, each linear in ξ.
    let mut constraint_rows: Vec<Vec<Id>> = model
        .velocity_constraints
        .iter()
        .map(|c| gradient(&mut g, c.expr, &v))
        .collect();
    for c in &model.holonomic {
        let r = rate_of(&mut g, c.expr);
        constraint_rows.push(gradient(&mut g, r, &v));
    }
    // Geometric candidates are judged together (`kept_all`): the points and
    // the constraint rows' basis at each are theirs in common.
    let mut kinds = Vec::with_capacity(model.invariants.len());
    let (mut geometric, mut rows): (Vec<usize>, Vec<Vec<Id>>) = (Vec::new(), Vec::new());
    for (k, inv) in model.invariants.iter().enumerate() {
        kinds.push(if g.depends_on(inv.expr, &v) {
            if affine_in(&mut g, &[inv.expr], &v) && conserved(model, &g, inv.expr, metric, free) {
                InvariantKind::Momentum
            } else {
                InvariantKind::Monitored
            }
        } else {
            let r = rate_of(&mut g, inv.expr);
            geometric.push(k);
            rows.push(gradient(&mut g, r, &v));
            InvariantKind::Monitored
        });
    }
    for (k, is_kept) in geometric.into_iter().zip(kept_all(&g, model, &rows, &constraint_rows)) {
        if is_kept {
            kinds[k] = InvariantKind::Geometric;
        }
    }
    kinds
}

/// Whether the quantity `j` (linear in the velocities) is conserved by the
/// free constrained motion, tested at a few pseudo-random points: the
/// velocities are projected onto the constraints, the accelerations solved
/// from the Hamel equations `M ξ' + (∂p/∂q) Ψ ξ = F + Cᵀλ`,
/// `C ξ' + (∂(Cξ)/∂q) Ψ ξ = 0` (`F = Ψᵀ∂l/∂q + [ξ, p]*`, docs/schemes.md §1;
/// external forces left out: a momentum is a property of the free motion),
/// and the rate `∂j/∂q Ψ ξ + ∂j/∂ξ ξ'` compared with the size of its terms.
/// Holonomic constraints enter by their rates, so positions need not lie on
/// them: the motion then keeps another level set of the same constraints.
/// When no point can be evaluated (the frame fits no rule, the metric is
/// singular everywhere tried) the quantity keeps its linear form's kind.
fn conserved(model: &Model, graph: &Graph, j: Id, metric: Option<&[Vec<Id>]>, free: Option<&FreeMotion>) -> bool {
    let mut m = model.clone();
    m.graph = graph.clone();
    let (psi, mech) = match free {
        Some(f) => (f.psi.clone(), f.mechanics.clone()),
        None => {
            let Ok(frame) = super::Frame::of(&mut m) else {
                return true;
            };
            let mech = super::mechanics::Mechanics::of(&mut m, &frame);
            (frame.psi, mech)
        }
    };
    let (q, v) = (m.q_syms(), m.v_syms());
    let (nq, nv) = (q.len(), v.len());
    let metric = metric.filter(|rows| rows.len() == nv && rows.iter().all(|r| r.len() == nv));
    let g = &mut m.graph;
    // Constraint functions c(q, ξ), each linear in ξ.
    let mut cons: Vec<Id> = model.velocity_constraints.iter().map(|c| c.expr).collect();
    // q' = Ψξ once for all constraints (per constraint it was O(N³) on a
    // chain's N lengths), from Ψ's non-zero entries.
    let qdot: Vec<Id> = (0..nq)
        .map(|i| {
            let moved: Vec<usize> = (0..nv).filter(|&a| !g.is_const(psi[i][a], 0.0)).collect();
            let terms: Vec<Id> = moved.into_iter().map(|a| g.mul2(psi[i][a], v[a])).collect();
            g.add(&terms)
        })
        .collect();
    for c in &model.holonomic {
        let grad = gradient(g, c.expr, &q);
        let terms: Vec<Id> = (0..nq).map(|i| g.mul2(grad[i], qdot[i])).collect();
        cons.push(g.add(&terms));
    }
    // The constraint rows and the quantity's gradients are small; the mass
    // matrix and `∂p/∂q Ψξ` are taken at each point as directional
    // derivatives (`Point::tangent`): their symbolic Jacobians have
    // O(N²) entries on a director chain and took O(N³) to build (8.6 s of a
    // 64-link derivation's 22 s).
    let c_rows = jacobian(g, &cons, &v);
    let g = &m.graph;
    let index_of = |id: Id| match g.node(id) {
        Node::Sym(s) => Some(*s),
        _ => None,
    };
    let (qs, vs): (Vec<u32>, Vec<u32>) = (
        q.iter().filter_map(|&s| index_of(s)).collect(),
        v.iter().filter_map(|&s| index_of(s)).collect(),
    );
    if qs.len() != nq || vs.len() != nv {
        return true;
    }
    // Symbols other than parameters, coordinates and velocities (time, say)
    // at 0.5.
    let mut values = vec![0.5; g.symbol_count()];
    for p in &m.params {
        if let Some(s) = index_of(p.sym) {
            values[s as usize] = p.default;
        }
    }
    // `j`'s gradient is taken at each point by a reverse pass (`Point::gradient`).
    let roots: Vec<Id> = (psi.iter().flatten())
        .chain(c_rows.iter().flatten())
        .chain(&mech.p)
        .chain(&mech.force)
        .chain(&cons)
        .chain([&j])
        .chain(metric.into_iter().flatten().flatten())
        .copied()
        .collect();
    let mut tangent = vec![0.0; values.len()];
    // The expressions' nodes are walked once; each point re-evaluates them.
    let mut at = Point::with_locals(g, &roots, &mech.locals, &|s| values[s as usize]);
    let mut next = sample_points(0x2545_f491_4f6c_dd1d, 0.3);
    let mut checked = 0;
    for _ in 0..12 {
        let qv: Vec<f64> = (0..nq).map(|_| next()).collect();
        let mut xi: Vec<f64> = (0..nv).map(|_| next()).collect();
        // Project ξ onto the null space of the constraint rows (they depend
        // on q only, so ξ's values do not matter to them).
        let point = |at: &mut Point, values: &mut Vec<f64>, xi: &[f64]| {
            for (&s, &x) in qs.iter().zip(&qv).chain(vs.iter().zip(xi)) {
                values[s as usize] = x;
            }
            at.move_to(g, &|s| values[s as usize]);
        };
        point(&mut at, &mut values, &xi);
        let val = |at: &Point, e: Id| at.value(e).unwrap_or(f64::NAN);
        let rows: Vec<Vec<f64>> = c_rows
            .iter()
            .map(|r| r.iter().map(|&e| val(&at, e)).collect())
            .collect();
        let ortho = orthonormal(&rows);
        let whole = (0, xi.len());
        for o in &ortho {
            o.remove_from(&mut xi, whole);
        }
        point(&mut at, &mut values, &xi);
        let psi_xi: Vec<f64> = (0..nq)
            .map(|i| (0..nv).map(|a| val(&at, psi[i][a]) * xi[a]).sum())
            .collect();
        // Derivatives along q' = Ψξ, the velocities held.
        let along = |tangent: &mut Vec<f64>, dir: &[(u32, f64)], of: &[Id]| {
            for &(s, d) in dir {
                tangent[s as usize] = d;
            }
            let out = at.tangent(g, of, &|s| tangent[s as usize]);
            for &(s, _) in dir {
                tangent[s as usize] = 0.0;
            }
            out
        };
        let q_dir: Vec<(u32, f64)> = qs.iter().copied().zip(psi_xi.iter().copied()).collect();
        let p_q_psi_xi = along(&mut tangent, &q_dir, &mech.p);
        let c_q_psi_xi = along(&mut tangent, &q_dir, &cons);
        // KKT system [[M, Cᵀ], [C, 0]] (ξ', λ) = (F − P_q Ψξ, −C_q Ψξ), rows of
        // the independent constraints only; M is the scheme's `∂p/∂ξ` at the
        // point where it gave one, else column b is p's derivative along
        // velocity b (one pass over the momenta per velocity: O(N³) on a
        // director chain).
        let nc = rows.len();
        let n = nv + nc;
        let mut a = vec![vec![0.0; n + 1]; n];
        match metric {
            Some(rows) => {
                for (r, row) in rows.iter().enumerate() {
                    for (b, &e) in row.iter().enumerate() {
                        a[r][b] = val(&at, e);
                    }
                }
            }
            None => {
                // One search of the momenta's nodes for all the passes.
                let mut pass = at.tangents(&mech.p);
                for (b, &s) in vs.iter().enumerate() {
                    tangent[s as usize] = 1.0;
                    let column = pass.along(g, &|x| tangent[x as usize]);
                    tangent[s as usize] = 0.0;
                    for (r, m_rb) in column.into_iter().enumerate() {
                        a[r][b] = m_rb;
                    }
                }
            }
        }
        for r in 0..nv {
            for (k, row) in rows.iter().enumerate() {
                a[r][nv + k] = row[r];
            }
            a[r][n] = val(&at, mech.force[r]) - p_q_psi_xi[r];
        }
        for k in 0..nc {
            a[nv + k][..nv].copy_from_slice(&rows[k]);
            a[nv + k][n] = -c_q_psi_xi[k];
        }
        let grad = at.gradient(g, j);
        let partial = |s: &u32| grad.get(s).copied().unwrap_or(0.0);
        let jq: Vec<f64> = qs.iter().map(partial).collect();
        let jv: Vec<f64> = vs.iter().map(partial).collect();
        if a.iter().flatten().chain(&jq).chain(&jv).any(|x| !x.is_finite()) {
            continue;
        }
        let Some(sol) = solve_least_squares(a, nv) else {
            continue;
        };
        let (t1, t2) = (dot(&jq, &psi_xi), dot(&jv, &sol[..nv]));
        let scale = jq.iter().zip(&psi_xi).map(|(x, y)| (x * y).abs()).sum::<f64>()
            + jv.iter().zip(&sol[..nv]).map(|(x, y)| (x * y).abs()).sum::<f64>();
        if (t1 + t2).abs() > 1e-8 * scale.max(1e-300) && (t1 + t2).abs() > 1e-12 {
            return false;
        }
        checked += 1;
        if checked == 3 {
            return true;
        }
    }
    true
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// A row with the range of its non-zero entries: `v` holds entries
/// `lo..lo + v.len()`. A chain's constraint rows, and the orthonormal rows
/// made from them, touch a few links each: products and updates over the
/// whole length made Gram–Schmidt O(N³) (a tenth of a 512-link derivation).
struct Sparse {
    lo: usize,
    v: Vec<f64>,
}

impl Sparse {
    /// `x` read at its non-zero entries.
    fn of(x: &[f64]) -> Sparse {
        let (lo, hi) = support(x);
        Sparse {
            lo,
            v: x[lo..hi].to_vec(),
        }
    }

    fn hi(&self) -> usize {
        self.lo + self.v.len()
    }

    /// `x −= (x·o) o`, `x` being zero outside `range` (returned, grown to
    /// cover `o`'s entries where it changed). Where the ranges do not meet,
    /// `x·o` is a sum of zeros and nothing changes; where they do, the sum
    /// over their overlap is the whole sum (the other terms are zeros, up to
    /// the sign of a zero), so `x` ends as the dense update leaves it.
    fn remove_from(&self, x: &mut [f64], (lo, hi): (usize, usize)) -> (usize, usize) {
        let (a, b) = (self.lo.max(lo), self.hi().min(hi));
        if a >= b {
            return (lo, hi);
        }
        let c: f64 = x[a..b]
            .iter()
            .zip(&self.v[a - self.lo..b - self.lo])
            .map(|(p, q)| p * q)
            .sum();
        x[self.lo..self.hi()]
            .iter_mut()
            .zip(&self.v)
            .for_each(|(p, q)| *p -= c * q);
        (lo.min(self.lo), hi.max(self.hi()))
    }
}

/// The range from the first to past the last non-zero entry of `x`
/// (empty: `(0, 0)`).
fn support(x: &[f64]) -> (usize, usize) {
    match x.iter().position(|&v| v != 0.0) {
        Some(lo) => (lo, x.len() - x.iter().rev().position(|&v| v != 0.0).unwrap_or(0)),
        None => (0, 0),
    }
}

/// `x` less its components along the orthonormal rows `ortho`, taken twice
/// (classical Gram–Schmidt loses orthogonality in one pass).
fn remove_span(x: &mut [f64], ortho: &[Sparse]) {
    let mut range = support(x);
    for _ in 0..2 {
        for o in ortho {
            range = o.remove_from(x, range);
        }
    }
}

/// An orthonormal basis of the span of `rows` (Gram–Schmidt twice; rows
/// dependent on earlier ones to 1e-10 of the longest row are dropped).
fn orthonormal(rows: &[Vec<f64>]) -> Vec<Sparse> {
    let scale = rows.iter().map(|b| dot(b, b).sqrt()).fold(0.0, f64::max);
    orthonormal_to(rows, scale)
}

/// [`orthonormal`], dropping rows left shorter than `1e-10 · scale`.
fn orthonormal_to(rows: &[Vec<f64>], scale: f64) -> Vec<Sparse> {
    let mut ortho: Vec<Sparse> = vec![];
    for b in rows {
        let mut b = b.clone();
        remove_span(&mut b, &ortho);
        let n = dot(&b, &b).sqrt();
        if n > 1e-10 * scale {
            b.iter_mut().for_each(|x| *x /= n);
            ortho.push(Sparse::of(&b));
        }
    }
    ortho
}

/// Solves the augmented system `a` (rows `[A | b]`) for the accelerations
/// (its first `nv` unknowns) by Gaussian elimination with partial pivoting
/// and back substitution;
/// rows that repeat others (dependent constraints) are dropped. `None` when
/// the velocity block is singular.
fn solve_least_squares(mut a: Vec<Vec<f64>>, nv: usize) -> Option<Vec<f64>> {
    let n = a.len();
    let top = a.iter().flat_map(|r| r[..n].iter()).fold(0.0f64, |m, x| m.max(x.abs()));
    let mut pivots = vec![];
    let mut row = 0;
    for col in 0..n {
        let (p, best) = (row..n)
            .map(|r| (r, a[r][col].abs()))
            .fold((row, 0.0), |b, x| if x.1 > b.1 { x } else { b });
        if row >= n || best <= 1e-12 * top {
            if col < nv {
                return None;
            }
            continue;
        }
        a.swap(row, p);
        // Below the pivot only, then back substitution: half the work of
        // clearing the column above too (a 256-link chain's system has
        // 1024 rows, and the test takes three points).
        let (upper, lower) = a.split_at_mut(row + 1);
        let pivot_row = &upper[row];
        for r in lower.iter_mut() {
            let f = r[col] / pivot_row[col];
            if f != 0.0 {
                // Zipped slices: no bounds checks, so the loop vectorizes
                // (indexed, it was a fifth of a 256-link derivation).
                for (x, p) in r[col..=n].iter_mut().zip(&pivot_row[col..=n]) {
                    *x -= f * p;
                }
            }
        }
        pivots.push((row, col));
        row += 1;
    }
    // Unknowns without a pivot (of dependent constraint rows) stay zero.
    let mut x = vec![0.0; n];
    for &(r, c) in pivots.iter().rev() {
        let rest: f64 = pivots
            .iter()
            .filter(|&&(_, c2)| c2 > c)
            .map(|&(_, c2)| a[r][c2] * x[c2])
            .sum();
        x[c] = (a[r][n] - rest) / a[r][c];
    }
    Some(x)
}

/// Whether each of `rows` lies in the span of `basis` at every one of a few
/// pseudo-random points (positions and velocities in ±[0.3, 1.3], inputs and
/// time 0.5, parameters at their defaults); points where something is not
/// finite are skipped, and a row that is nowhere finite is not kept. Every
/// row meets the same points, and the basis is evaluated and made
/// orthonormal once at each (per row it was O(N³) on a chain's N lengths:
/// 2.8 s of a 128-link derivation).
fn kept_all(g: &Graph, model: &Model, rows: &[Vec<Id>], basis: &[Vec<Id>]) -> Vec<bool> {
    let index_of = |id: Id| match g.node(id) {
        Node::Sym(s) => Some(*s as usize),
        _ => None,
    };
    let mut values = vec![0.5; g.symbol_count()];
    for p in &model.params {
        if let Some(s) = index_of(p.sym) {
            values[s] = p.default;
        }
    }
    let free: Vec<usize> = model
        .coords
        .iter()
        .chain(&model.vels)
        .filter_map(|s| index_of(s.sym))
        .collect();
    let mut next = sample_points(0x9e37_79b9_7f4a_7c15, 0.3);
    let mut verdict: Vec<Option<bool>> = vec![None; rows.len()];
    let mut checked = vec![0; rows.len()];
    for _ in 0..12 {
        if verdict.iter().all(Option::is_some) {
            break;
        }
        for &s in &free {
            values[s] = next();
        }
        let value_of = |s: u32| values[s as usize];
        let eval = |e: &[Id]| -> Vec<f64> { e.iter().map(|&x| g.eval(x, &value_of)).collect() };
        let b: Vec<Vec<f64>> = basis.iter().map(|c| eval(c)).collect();
        if b.iter().flatten().any(|x| !x.is_finite()) {
            continue;
        }
        let longest = b.iter().map(|b| dot(b, b).sqrt()).fold(0.0, f64::max);
        let ortho = orthonormal_to(&b, longest);
        for (k, row) in rows.iter().enumerate() {
            if verdict[k].is_some() {
                continue;
            }
            let r = eval(row);
            if r.iter().any(|x| !x.is_finite()) {
                continue;
            }
            if !in_span(&r, &ortho, longest) {
                verdict[k] = Some(false);
                continue;
            }
            checked[k] += 1;
            if checked[k] == 3 {
                verdict[k] = Some(true);
            }
        }
    }
    verdict.into_iter().map(|v| v == Some(true)).collect()
}

/// A deterministic stream (xorshift) of values in ±[lo, lo + 1]: points
/// away from zero, where norms and divisions of model expressions are
/// regular. Shared by the compiler's numerical checks and their tests.
pub(crate) fn sample_points(seed: u64, lo: f64) -> impl FnMut() -> f64 {
    let mut s = seed | 1;
    move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        let x = (s >> 11) as f64 / (1u64 << 53) as f64;
        if s & 2 == 0 {
            lo + x
        } else {
            -lo - x
        }
    }
}

/// Whether `r` is a combination of the orthonormal rows `ortho` (of a basis
/// whose longest row is `longest`) to round-off: the residual of `r`, taken
/// twice for orthogonality.
fn in_span(r: &[f64], ortho: &[Sparse], longest: f64) -> bool {
    let scale = dot(r, r).sqrt() + longest;
    let mut res = r.to_vec();
    remove_span(&mut res, ortho);
    dot(&res, &res).sqrt() <= 1e-9 * scale.max(f64::MIN_POSITIVE)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(src: &str) -> Vec<(String, InvariantKind)> {
        let model = crate::load("t.hamel", src).unwrap();
        let k = classify(&model, &model.graph, None, None);
        model.invariants.iter().map(|i| i.name.clone()).zip(k).collect()
    }

    #[test]
    fn kinds_follow_what_a_quantity_is_not_its_name() {
        let k = kinds(
            "model m {
                parameters { m = 1.0, r = 9.8, g = 9.8 }
                coordinates { gamma: vec3 }
                velocities  { xi: vec3 }
                frame       { gamma' = cross(gamma, xi) }
                constraint  xi[2] = 0
                lagrangian  = 0.5 * m * r^2 * (xi[0]^2 + xi[1]^2) - m * g * r * gamma[2]
                invariant   length = norm(gamma)
                invariant   Jerk   = gamma[2]
                invariant   spin   = m * r^2 * dot(xi, gamma)
                invariant   J      = dot(xi, xi)
            }",
        );
        use InvariantKind::*;
        let want = [
            ("length", Geometric),
            ("Jerk", Monitored),
            ("spin", Momentum),
            ("J", Monitored),
        ];
        for ((n, k), (wn, wk)) in k.iter().zip(want) {
            assert_eq!((n.as_str(), *k), (wn, wk));
        }
    }

    #[test]
    fn a_holonomic_constraint_keeps_its_lengths() {
        let k = kinds(
            "model m {
                parameters { r = 2.0 }
                coordinates { x: vec3 }
                lagrangian = 0.5 * dot(x', x') - 9.8 * x[2]
                holonomic  norm2(x) = r^2
                invariant  length = norm(x)
                invariant  height = x[2]
                invariant  J = cross(x, x')[2]
            }",
        );
        let got: Vec<InvariantKind> = k.into_iter().map(|(_, k)| k).collect();
        assert_eq!(
            got,
            [
                InvariantKind::Geometric,
                InvariantKind::Monitored,
                InvariantKind::Momentum
            ]
        );
    }

    /// The kinds of the named invariants of a model file of `models/`.
    fn kinds_of(src: &str, names: &[&str]) -> Vec<InvariantKind> {
        let k = kinds(src);
        names
            .iter()
            .map(|n| k.iter().find(|(m, _)| m == n).map(|(_, k)| *k).unwrap())
            .collect()
    }

    #[test]
    fn a_momentum_is_conserved_not_merely_linear_in_the_velocities() {
        use InvariantKind::*;
        // The sleigh's angular velocity is linear in the velocities and
        // changes (v' = a ω², ω' = −m a v ω/(I + m a²)): monitored, in the
        // body frame and in Bloch's coordinates alike.
        let sleigh = include_str!("../../../models/chaplygin_sleigh.hamel");
        assert_eq!(kinds_of(sleigh, &["spin"]), [Monitored]);
        let bloch = include_str!("../../../models/gallery/chaplygin_sleigh_bloch.hamel");
        assert_eq!(kinds_of(bloch, &["spin"]), [Monitored]);
        // The knife edge's spin is conserved (the constraint does not involve φ').
        let knife = include_str!("../../../models/gallery/knife_edge_incline.hamel");
        assert_eq!(kinds_of(knife, &["spin"]), [Momentum]);
        // Euler–Poisson: the vertical angular momentum, and Ω₃ for I1 = I2 …
        let top = include_str!("../../../models/gallery/heavy_top.hamel");
        assert_eq!(kinds_of(top, &["vertical_momentum", "spin"]), [Momentum, Momentum]);
        // … but not for I1 ≠ I2.
        let asym = top.replace("I2 = 1.0", "I2 = 1.5");
        assert_eq!(kinds_of(&asym, &["spin"]), [Monitored]);
        // Rotation matrix with nine coordinates and three velocities (a frame
        // that moves more coordinates than it has velocities; it once indexed
        // the velocities by coordinate and panicked). |e3| is kept only where
        // the columns are orthonormal, not for every 3×3 matrix: monitored.
        let matrix = include_str!("../../../models/gallery/lagrange_top_matrix.hamel");
        assert_eq!(
            kinds_of(matrix, &["vertical_momentum", "spin", "unit"]),
            [Momentum, Momentum, Monitored]
        );
        // A cart with a pendulum (affine frame, a multiplier constraint).
        let cart = include_str!("../../../models/gallery/cart_spherical_pendulum.hamel");
        assert_eq!(kinds_of(cart, &["px", "py", "Jz"]), [Momentum, Momentum, Momentum]);
        // Holonomic constraints: the angular momenta of a particle on a sphere;
        // Kepler's L; the canonical angular momentum with a magnetic field.
        let sphere = include_str!("../../../models/gallery/particle_on_sphere.hamel");
        assert_eq!(kinds_of(sphere, &["Jx", "Jy", "Jz"]), [Momentum, Momentum, Momentum]);
        let charged = include_str!("../../../models/gallery/charged_particle.hamel");
        assert_eq!(kinds_of(charged, &["Lz", "pz"]), [Momentum, Momentum]);
        let planar = include_str!("../../../models/gallery/planar_body.hamel");
        assert_eq!(kinds_of(planar, &["spin", "horizontal_momentum"]), [Momentum, Momentum]);
    }

    #[test]
    fn the_hamel_steps_classify_with_their_own_mechanics_as_without() {
        // The Hamel schemes hand `classify` their frame and mechanics
        // (`FreeMotion`); the kinds are those it finds deriving its own.
        let top = include_str!("../../../models/gallery/heavy_top.hamel");
        let sources = [
            ("top", top.to_string()),
            ("asymmetric top", top.replace("I2 = 1.0", "I2 = 1.5")),
            ("sleigh", include_str!("../../../models/chaplygin_sleigh.hamel").into()),
            ("chain", include_str!("../../../models/spherical_chain.hamel").into()),
        ];
        for (name, src) in sources {
            let sizes = if name == "chain" {
                vec![("N".to_string(), 4)]
            } else {
                vec![]
            };
            let model = crate::model::load_with_sizes("t.hamel", &src, &sizes).unwrap();
            let own = classify(&model, &model.graph, None, None);
            assert!(
                own.contains(&InvariantKind::Momentum) || name != "top",
                "{name}: {own:?}"
            );
            for scheme in ["hamel_averaged", "hamel_midpoint"] {
                let sys = crate::scheme::Scheme::from_names(scheme, None)
                    .unwrap()
                    .derive(&model)
                    .unwrap();
                let kinds: Vec<InvariantKind> = sys.invariants[1..=own.len()].iter().map(|i| i.kind).collect();
                assert_eq!(kinds, own, "{name}, {scheme}");
            }
        }
    }

    #[test]
    fn span_test_separates_members_from_strangers() {
        let basis = vec![vec![1.0, 1.0, 0.0], vec![0.0, 1.0, 1.0]];
        let longest = 2f64.sqrt();
        let ortho = orthonormal_to(&basis, longest);
        assert!(in_span(&[2.0, 3.0, 1.0], &ortho, longest));
        assert!(!in_span(&[1.0, 0.0, 0.0], &ortho, longest));
        assert!(in_span(&[0.0, 0.0, 0.0], &[], 0.0));
        assert!(!in_span(&[1e-3, 0.0], &[], 0.0));
    }
}
