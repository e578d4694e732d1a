//! A trailing linear block (pass 3 of [`super::run`]).

use std::collections::BTreeMap;

use super::{substitute_eliminated, Eliminated};
use crate::scheme::step::StepSystem;
use crate::sym::{Graph, Id};

/// Blocks smaller than this stay in the Newton system: there they cost
/// little, and eliminating them would change a small step's bits for
/// nothing.
const SMALLEST: usize = 4;

/// Fill-in allowed per eliminated unknown: beyond it the symbolic solve
/// would cost more than Newton's banded one.
const FILL_PER_UNKNOWN: usize = 4;

/// Eliminates the largest set `T` of unknowns that only rows affine in `T`
/// read, as many rows as unknowns: the system is then block triangular,
/// `R₁(x₁) = 0`, `R₂(x₁, y) = A(x₁) y + b(x₁) = 0`, and Newton need only
/// iterate on `x₁`; `y = −A⁻¹ b` enters the update, evaluated once per step.
/// RATTLE's velocity multipliers are such a block: `G(q₁) M⁻¹ p₁(λ, μ) = 0`
/// is linear in `μ`, and the position rows `g(q₁(λ))` do not read it, so
/// Newton runs on `λ` alone (its Jacobian half as wide and a quarter of the
/// operations on a chain).
///
/// `A` is solved symbolically, by elimination without pivoting in the
/// unknowns' order, skipping structural zeros; so only where that is safe and
/// cheap: `A` symmetric (structurally, entry for entry, with rows paired to
/// unknowns along its diagonal: the Schur complements `G M⁻¹ Gᵀ` of
/// constrained mechanics, definite where the constraints are independent,
/// which the original Newton system needs too), and fill-in at most
/// [`FILL_PER_UNKNOWN`] entries per unknown (a banded `A`). Reads the
/// Jacobian of [`StepSystem::finish_jacobian`] and keeps it valid: the rows
/// that stay do not read `T`, so their derivatives are the same.
pub(crate) fn run(sys: &mut StepSystem) -> Vec<Eliminated> {
    let x: Vec<Id> = sys.unknowns.iter().map(|s| s.sym).collect();
    let n = x.len();
    if n < 2 * SMALLEST || sys.jacobian.len() != n {
        return vec![];
    }
    let g = &mut sys.graph;
    let roots = sys.residual.iter().chain(sys.jacobian.iter().flatten()).copied();
    let masks = super::Reads::new(g, roots, &x);
    let reads = |e: Id, j: usize| masks.reads(e, j);
    let jac = &sys.jacobian;
    let nonzero: Vec<Vec<usize>> = jac
        .iter()
        .map(|row| (0..n).filter(|&j| !g.is_const(row[j], 0.0)).collect())
        .collect();
    // T: unknowns that no coefficient of an unknown of T reads.
    let mut in_t: Vec<bool> = x.iter().map(|xj| !sys.auxiliary.contains(xj)).collect();
    loop {
        let mut changed = false;
        for (r, cols) in nonzero.iter().enumerate() {
            for &c in cols {
                if !in_t[c] {
                    continue;
                }
                for (c2, t) in in_t.iter_mut().enumerate() {
                    if *t && reads(jac[r][c], c2) {
                        *t = false;
                        changed = true;
                    }
                }
            }
        }
        if !changed {
            break;
        }
    }
    let t: Vec<usize> = (0..n).filter(|&j| in_t[j]).collect();
    if t.len() < SMALLEST || t.len() == n {
        return vec![];
    }
    // Its rows: every row that reads T, one per unknown, paired greedily
    // along the diagonal.
    let s: Vec<usize> = (0..n).filter(|&r| nonzero[r].iter().any(|&c| in_t[c])).collect();
    let outside_reads = (0..n)
        .filter(|r| !s.contains(r))
        .any(|r| t.iter().any(|&c| reads(sys.residual[r], c)));
    if s.len() != t.len() || outside_reads {
        return vec![];
    }
    let mut pair = Vec::with_capacity(t.len());
    let mut used = vec![false; n];
    for &c in &t {
        let Some(&r) = s.iter().find(|&&r| !used[r] && nonzero[r].contains(&c)) else {
            return vec![];
        };
        used[r] = true;
        pair.push(r);
    }
    let m = t.len();
    let a = |i: usize, k: usize| jac[pair[i]][t[k]];
    for i in 0..m {
        for k in 0..i {
            if a(i, k) != a(k, i) {
                return vec![];
            }
        }
    }
    // A y = −R₂(y = 0), sparse rows.
    let mut rows: Vec<BTreeMap<usize, Id>> = (0..m)
        .map(|i| {
            (0..m)
                .filter(|&k| !g.is_const(a(i, k), 0.0))
                .map(|k| (k, a(i, k)))
                .collect()
        })
        .collect();
    let zero = g.constant(0.0);
    let y_zero: crate::sym::SubstMap = t.iter().map(|&c| (x[c], zero)).collect();
    let paired: Vec<Id> = pair.iter().map(|&r| sys.residual[r]).collect();
    let mut b: Vec<Id> = g
        .substitute_all(&paired, &y_zero)
        .into_iter()
        .map(|c0| g.neg(c0))
        .collect();
    let Some(y) = eliminate(g, &mut rows, &mut b, FILL_PER_UNKNOWN * m) else {
        return vec![];
    };
    let value: crate::sym::SubstMap = t.iter().zip(&y).map(|(&c, &v)| (x[c], v)).collect();
    // The Jacobian of the rows that stay, without T's columns.
    let keep_rows: Vec<usize> = (0..n).filter(|r| !pair.contains(r)).collect();
    let keep_cols: Vec<usize> = (0..n).filter(|&c| !in_t[c]).collect();
    let jacobian: Vec<Vec<Id>> = keep_rows
        .iter()
        .map(|&r| keep_cols.iter().map(|&c| sys.jacobian[r][c]).collect())
        .collect();
    let gone = substitute_eliminated(sys, &pair, &t, &value);
    sys.jacobian = jacobian;
    gone
}

/// Solves `A y = b` for the sparse rows of `A` (structural zeros absent) by
/// elimination without pivoting, in order; `None` where a pivot is a
/// structural zero or the fill-in exceeds `budget` entries.
fn eliminate(g: &mut Graph, rows: &mut [BTreeMap<usize, Id>], b: &mut [Id], budget: usize) -> Option<Vec<Id>> {
    let m = rows.len();
    let mut fill = 0usize;
    for k in 0..m {
        let piv = *rows[k].get(&k)?;
        let upper: Vec<(usize, Id)> = rows[k].range(k + 1..).map(|(&j, &v)| (j, v)).collect();
        for i in k + 1..m {
            let Some(&aik) = rows[i].get(&k) else { continue };
            let l = g.div(aik, piv);
            rows[i].remove(&k);
            for &(j, akj) in &upper {
                let t = g.mul2(l, akj);
                match rows[i].get(&j).copied() {
                    Some(aij) => {
                        let v = g.sub(aij, t);
                        rows[i].insert(j, v);
                    }
                    None => {
                        fill += 1;
                        let v = g.neg(t);
                        rows[i].insert(j, v);
                    }
                }
            }
            let t = g.mul2(l, b[k]);
            b[i] = g.sub(b[i], t);
        }
        if fill > budget {
            return None;
        }
    }
    let mut y = vec![g.constant(0.0); m];
    for k in (0..m).rev() {
        let mut terms = vec![b[k]];
        for (&j, &akj) in rows[k].range(k + 1..) {
            let t = g.mul2(akj, y[j]);
            terms.push(g.neg(t));
        }
        let s = g.add(&terms);
        y[k] = g.div(s, rows[k][&k]);
    }
    Some(y)
}
