//! Linear blocks of unknowns (pass 4 of [`super::run`]).

use super::{substitute_eliminated, Eliminated};
use crate::scheme::step::StepSystem;
use crate::sym::{Graph, Id};

/// Eliminates small blocks of unknowns the residual gives implicitly but
/// linearly: rows affine in a block `y` (one to three unknowns) whose
/// coefficient matrix `A` depends on the other unknowns but is the
/// identity at `h = 0` (so `A = I + O(h)`, invertible at the step sizes
/// the scheme resolves). Then `y = −A⁻¹ R(y = 0)` symbolically. The
/// kinematic rows of Hamel schemes with frames linear in `q` are such
/// blocks: `q⁺ − q − h Ψ(q̄) ξ̄ = 0` is a Cayley transform, explicit in ξ.
/// Reads the Jacobian of [`StepSystem::finish_jacobian`]; returns what it
/// eliminated (if anything, the Jacobian is then stale).
pub(crate) fn run(sys: &mut StepSystem) -> Vec<Eliminated> {
    let x: Vec<Id> = sys.unknowns.iter().map(|s| s.sym).collect();
    let n = x.len();
    if n <= 3 {
        return vec![];
    }
    let jac = std::mem::take(&mut sys.jacobian);
    let auxiliary: std::collections::HashSet<Id> = sys.auxiliary.iter().copied().collect();
    let g = &mut sys.graph;
    let zero = g.constant(0.0);
    let at_h0: crate::sym::SubstMap = [(sys.h, zero)].into_iter().collect();
    let is = |g: &mut Graph, e: Id, v: f64| {
        let e0 = g.substitute(e, &at_h0);
        g.is_const(e0, v)
    };
    // Pair each row with an unknown whose coefficient is 1 at h = 0.
    let mut pair_of_row: Vec<Option<usize>> = vec![None; n];
    let mut taken: Vec<bool> = x.iter().map(|xj| auxiliary.contains(xj)).collect();
    for i in 0..n {
        for j in 0..n {
            if !taken[j] && !g.is_const(jac[i][j], 0.0) && is(g, jac[i][j], 1.0) {
                pair_of_row[i] = Some(j);
                taken[j] = true;
                break;
            }
        }
    }
    let roots = sys.residual.iter().chain(jac.iter().flatten()).copied();
    let masks = super::Reads::new(g, roots, &x);
    let reads = |e: Id, j: usize| masks.reads(e, j);
    let mut used_rows = vec![false; n];
    let mut chosen_unknowns: Vec<usize> = Vec::new();
    let mut blocks: Vec<(Vec<usize>, Vec<usize>)> = Vec::new();
    for i0 in 0..n {
        let Some(j0) = pair_of_row[i0] else { continue };
        if used_rows[i0] {
            continue;
        }
        // The block: paired rows coupled through the paired unknowns.
        let mut rows = vec![i0];
        let mut cols = vec![j0];
        let mut k = 0;
        while k < rows.len() && rows.len() <= 3 {
            let r = rows[k];
            for (i, p) in pair_of_row.iter().enumerate() {
                if let Some(j) = *p {
                    if !rows.contains(&i) && (!g.is_const(jac[r][j], 0.0) || !g.is_const(jac[i][cols[k]], 0.0)) {
                        rows.push(i);
                        cols.push(j);
                    }
                }
            }
            k += 1;
        }
        if rows.len() > 3 || rows.len() < 2 {
            continue;
        }
        let affine = rows
            .iter()
            .all(|&r| cols.iter().all(|&c| cols.iter().all(|&c2| !reads(jac[r][c], c2))));
        let identity = rows.iter().enumerate().all(|(a, &r)| {
            cols.iter()
                .enumerate()
                .all(|(b, &c)| is(g, jac[r][c], if a == b { 1.0 } else { 0.0 }))
        });
        // Rows must not read unknowns of blocks already taken (and vice versa).
        let independent = rows
            .iter()
            .all(|&r| chosen_unknowns.iter().all(|&c| !reads(sys.residual[r], c)))
            && blocks
                .iter()
                .all(|(br, _)| br.iter().all(|&r| cols.iter().all(|&c| !reads(sys.residual[r], c))));
        if affine && identity && independent {
            for &r in &rows {
                used_rows[r] = true;
            }
            chosen_unknowns.extend(cols.iter().copied());
            blocks.push((rows, cols));
        }
    }
    if blocks.is_empty() {
        sys.jacobian = jac;
        return vec![];
    }
    let mut value = crate::sym::SubstMap::default();
    for (rows, cols) in &blocks {
        let y_zero: crate::sym::SubstMap = cols.iter().map(|&c| (x[c], zero)).collect();
        let a: Vec<Vec<Id>> = rows
            .iter()
            .map(|&r| cols.iter().map(|&c| jac[r][c]).collect())
            .collect();
        let rhs: Vec<Vec<Id>> = rows
            .iter()
            .map(|&r| {
                let c0 = g.substitute(sys.residual[r], &y_zero);
                vec![g.neg(c0)]
            })
            .collect();
        let Some(sol) = crate::sym::linsolve::solve(g, &a, &rhs) else {
            sys.jacobian = jac;
            return vec![];
        };
        for (k, &c) in cols.iter().enumerate() {
            value.insert(x[c], sol[k][0]);
        }
    }
    let gone_rows: Vec<usize> = blocks.iter().flat_map(|(r, _)| r.iter().copied()).collect();
    let gone: Vec<usize> = blocks.iter().flat_map(|(_, c)| c.iter().copied()).collect();
    substitute_eliminated(sys, &gone_rows, &gone, &value)
}
