//! What a user invariant is, decided from its expression (never its name):
//! a momentum is linear in the velocities; a geometric invariant depends on
//! the positions alone and is kept by the kinematics and the constraints (its
//! rate `∇I · q'` vanishes on every velocity the constraints allow); anything
//! else is monitored.
//!
//! The geometric test is numerical, at a few pseudo-random points: the rate
//! is linear in `ξ`, so "kept" means its row `∂(∇I · q')/∂ξ` lies in the span
//! of the constraint rows. A symbolic zero test would depend on how far the
//! simplifier cancels (`⟨γ, γ × ξ⟩/‖γ‖` is zero only after expansion).

use crate::model::Model;
use crate::sym::{gradient, Graph, Id, Node};

use super::InvariantKind;

/// The kind of each of `model.invariants`, in order. Works on a copy of
/// `graph`: the derivatives it takes must not number nodes of the step's
/// own graph (term order, and so rounding, follows node numbers).
pub(crate) fn classify(model: &Model, graph: &Graph) -> Vec<InvariantKind> {
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
                let qdot = model.frame.as_ref().map_or(v[i], |f| f[i]);
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
    model
        .invariants
        .iter()
        .map(|inv| {
            let dv = gradient(&mut g, inv.expr, &v);
            let velocity_free = |g: &Graph, e: Id| !g.depends_on(e, &v);
            if g.depends_on(inv.expr, &v) {
                if dv.iter().all(|&d| velocity_free(&g, d)) {
                    InvariantKind::Momentum
                } else {
                    InvariantKind::Monitored
                }
            } else {
                let r = rate_of(&mut g, inv.expr);
                let row = gradient(&mut g, r, &v);
                if kept(&g, model, &row, &constraint_rows) {
                    InvariantKind::Geometric
                } else {
                    InvariantKind::Monitored
                }
            }
        })
        .collect()
}

/// Whether `row` lies in the span of `rows` at every one of a few
/// pseudo-random points (positions and velocities in ±[0.3, 1.3], inputs and
/// time 0.5, parameters at their defaults); points where something is not
/// finite are skipped, and a row that is nowhere finite is not kept.
fn kept(g: &Graph, model: &Model, row: &[Id], rows: &[Vec<Id>]) -> bool {
    let index_of = |id: Id| match g.node(id) {
        Node::Sym(s) => Some(*s),
        _ => None,
    };
    let params: Vec<(u32, f64)> = model
        .params
        .iter()
        .filter_map(|p| index_of(p.sym).map(|s| (s, p.default)))
        .collect();
    let free: Vec<u32> = model
        .coords
        .iter()
        .chain(&model.vels)
        .filter_map(|s| index_of(s.sym))
        .collect();
    let mut next = sample_points(0x9e37_79b9_7f4a_7c15, 0.3);
    let mut checked = 0;
    for _ in 0..12 {
        let values: Vec<(u32, f64)> = free.iter().map(|&s| (s, next())).collect();
        let value_of = |s: u32| {
            values
                .iter()
                .chain(&params)
                .find(|(k, _)| *k == s)
                .map_or(0.5, |(_, x)| *x)
        };
        let eval = |e: &[Id]| -> Vec<f64> { e.iter().map(|&x| g.eval(x, &value_of)).collect() };
        let r = eval(row);
        let basis: Vec<Vec<f64>> = rows.iter().map(|c| eval(c)).collect();
        if r.iter().chain(basis.iter().flatten()).any(|x| !x.is_finite()) {
            continue;
        }
        if !in_span(&r, &basis) {
            return false;
        }
        checked += 1;
        if checked == 3 {
            return true;
        }
    }
    false
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

/// Whether `r` is a combination of `basis` to round-off: Gram–Schmidt (twice,
/// for orthogonality) on the basis, then the residual of `r`.
fn in_span(r: &[f64], basis: &[Vec<f64>]) -> bool {
    let dot = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f64>();
    let scale = dot(r, r).sqrt() + basis.iter().map(|b| dot(b, b).sqrt()).fold(0.0, f64::max);
    let mut ortho: Vec<Vec<f64>> = vec![];
    for b in basis {
        let mut b = b.clone();
        for _ in 0..2 {
            for o in &ortho {
                let c = dot(&b, o);
                b.iter_mut().zip(o).for_each(|(x, y)| *x -= c * y);
            }
        }
        let n = dot(&b, &b).sqrt();
        if n > 1e-10 * scale {
            ortho.push(b.iter().map(|x| x / n).collect());
        }
    }
    let mut res = r.to_vec();
    for _ in 0..2 {
        for o in &ortho {
            let c = dot(&res, o);
            res.iter_mut().zip(o).for_each(|(x, y)| *x -= c * y);
        }
    }
    dot(&res, &res).sqrt() <= 1e-9 * scale.max(f64::MIN_POSITIVE)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(src: &str) -> Vec<(String, InvariantKind)> {
        let model = crate::load("t.hamel", src).unwrap();
        let k = classify(&model, &model.graph);
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

    #[test]
    fn span_test_separates_members_from_strangers() {
        let basis = vec![vec![1.0, 1.0, 0.0], vec![0.0, 1.0, 1.0]];
        assert!(in_span(&[2.0, 3.0, 1.0], &basis));
        assert!(!in_span(&[1.0, 0.0, 0.0], &basis));
        assert!(in_span(&[0.0, 0.0, 0.0], &[]));
        assert!(!in_span(&[1e-3, 0.0], &[]));
    }
}
