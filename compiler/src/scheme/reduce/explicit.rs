//! Explicit unknowns (pass 1 of [`super::run`]).

use super::{depends_memo, substitute_eliminated, Eliminated};
use crate::scheme::step::StepSystem;
use crate::sym::Id;

/// Eliminates the unknowns the residual gives explicitly: where row `i`
/// is affine in unknown `x_j` with a coefficient `a = ∂R_i/∂x_j` that
/// depends on parameters and the step size only (not on the unknowns,
/// the state or the inputs, so it is the same non-zero number all run),
/// `x_j = −R_i|_{x_j=0} / a` is substituted everywhere and row `i` and
/// `x_j` leave the Newton system. Newton then iterates on the genuinely
/// implicit unknowns only, as one would by hand (the sphere's averaged
/// step: the momentum rows give `ξ⁺` explicitly). Rounds repeat while
/// candidates remain; one round takes a set of pairs whose rows do not
/// read each other's eliminated unknowns.
pub(crate) fn run(sys: &mut StepSystem) -> Vec<Eliminated> {
    let mut eliminated = vec![];
    loop {
        let x: Vec<Id> = sys.unknowns.iter().map(|s| s.sym).collect();
        if x.len() <= 1 {
            return eliminated;
        }
        let mut varying: Vec<Id> = x.clone();
        varying.extend(sys.state.iter().map(|s| s.sym));
        varying.extend(sys.exogenous.iter().map(|s| s.sym));
        let varying_set: std::collections::HashSet<Id> = varying.iter().copied().collect();
        let mut memo: std::collections::HashMap<Id, bool> = Default::default();
        let auxiliary: std::collections::HashSet<Id> = sys.auxiliary.iter().copied().collect();
        let g = &mut sys.graph;
        // Which rows read which unknowns, and the candidate pivots.
        let masks = super::Reads::new(g, sys.residual.iter().copied(), &x);
        let reads = |row: Id, j: usize, masks: &super::Reads| masks.reads(row, j);
        let mut chosen: Vec<(usize, usize, Id)> = Vec::new();
        for (i, &row) in sys.residual.iter().enumerate() {
            if chosen.iter().any(|&(_, j, _)| reads(row, j, &masks)) {
                continue;
            }
            for (j, &xj) in x.iter().enumerate() {
                if !reads(row, j, &masks)
                    || auxiliary.contains(&xj)
                    || chosen
                        .iter()
                        .any(|&(ci, cj, _)| cj == j || reads(sys.residual[ci], j, &masks))
                {
                    continue;
                }
                // Only the nodes that read x_j are walked: a row of a long
                // chain's averaged step reaches large sub-expressions that do
                // not (the 512-link derivation spent most of its time here).
                let a = crate::sym::Differentiator::new(xj).diff_reading(g, row, &|e| masks.reads(e, j));
                if g.is_const(a, 0.0) || g.as_const(a).is_some_and(|c| !c.is_finite()) {
                    continue;
                }
                if depends_memo(g, a, &varying_set, &mut memo) {
                    continue;
                }
                chosen.push((i, j, a));
                break;
            }
        }
        if chosen.is_empty() {
            return eliminated;
        }
        // x_j = −R_i(x_j = 0) / a, in the remaining unknowns.
        let zero = g.constant(0.0);
        let mut value = crate::sym::SubstMap::default();
        for &(i, j, a) in &chosen {
            let mut m = crate::sym::SubstMap::default();
            m.insert(x[j], zero);
            let c = g.substitute(sys.residual[i], &m);
            let nc = g.neg(c);
            value.insert(x[j], g.div(nc, a));
        }
        let gone_rows: Vec<usize> = chosen.iter().map(|&(i, _, _)| i).collect();
        let gone: Vec<usize> = chosen.iter().map(|&(_, j, _)| j).collect();
        eliminated.extend(substitute_eliminated(sys, &gone_rows, &gone, &value));
    }
}
