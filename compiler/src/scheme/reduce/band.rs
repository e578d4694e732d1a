//! Band ordering of rows and unknowns (pass 5 of [`super::run`]).

use crate::scheme::step::StepSystem;
use crate::sym::{Graph, Id};

/// The Jacobian's sparsity pattern, known symbolically: rows and unknowns
/// are reordered together (reverse Cuthill–McKee on the pattern of
/// `J + Jᵀ`, row `i` staying paired with unknown `i`) when that narrows
/// the band enough for a banded LU to pay, and the band is recorded. Chains
/// in maximal coordinates give block-tridiagonal multiplier systems whose
/// band does not grow with the number of links.
pub(crate) fn run(sys: &mut StepSystem) {
    let n = sys.unknowns.len();
    sys.band = None;
    if n < 8 {
        return;
    }
    let nz = |g: &Graph, e: Id| !g.is_const(e, 0.0);
    let mut adj: Vec<Vec<usize>> = vec![Vec::new(); n];
    for i in 0..n {
        for j in 0..n {
            if i != j && (nz(&sys.graph, sys.jacobian[i][j]) || nz(&sys.graph, sys.jacobian[j][i])) {
                adj[i].push(j);
            }
        }
    }
    let band_of = |order: &[usize]| -> (usize, usize) {
        let mut pos = vec![0usize; n];
        for (k, &o) in order.iter().enumerate() {
            pos[o] = k;
        }
        let (mut kl, mut ku) = (0, 0);
        for i in 0..n {
            for j in 0..n {
                if nz(&sys.graph, sys.jacobian[i][j]) {
                    let (pi, pj) = (pos[i], pos[j]);
                    kl = kl.max(pi.saturating_sub(pj));
                    ku = ku.max(pj.saturating_sub(pi));
                }
            }
        }
        (kl, ku)
    };
    let natural: Vec<usize> = (0..n).collect();
    let order = reverse_cuthill_mckee(&adj);
    let (b0, b1) = (band_of(&natural), band_of(&order));
    let pays = |(kl, ku): (usize, usize)| 2 * (kl + ku) + 2 < n;
    let (order, band) = if b1.0 + b1.1 < b0.0 + b0.1 {
        (order, b1)
    } else {
        (natural, b0)
    };
    if !pays(band) {
        return;
    }
    let take = |v: &[Id]| order.iter().map(|&k| v[k]).collect::<Vec<Id>>();
    sys.residual = take(&sys.residual);
    sys.previous = take(&sys.previous);
    sys.predictor = take(&sys.predictor);
    sys.init_warm = take(&sys.init_warm);
    let names = std::mem::take(&mut sys.unknowns);
    sys.unknowns = order.iter().map(|&k| names[k].clone()).collect();
    // Rows and unknowns move together: the Jacobian is permuted, not re-derived.
    sys.jacobian = order
        .iter()
        .map(|&i| order.iter().map(|&j| sys.jacobian[i][j]).collect())
        .collect();
    sys.band = Some(band);
}

/// Reverse Cuthill–McKee ordering of an undirected graph given by adjacency
/// lists: breadth-first from a vertex of least degree, neighbours by
/// increasing degree, each component in turn, then reversed.
fn reverse_cuthill_mckee(adj: &[Vec<usize>]) -> Vec<usize> {
    let n = adj.len();
    let mut seen = vec![false; n];
    let mut order = Vec::with_capacity(n);
    while order.len() < n {
        let start = (0..n)
            .filter(|&v| !seen[v])
            .min_by_key(|&v| adj[v].len())
            .expect("an unvisited vertex");
        seen[start] = true;
        let mut queue = std::collections::VecDeque::from([start]);
        while let Some(v) = queue.pop_front() {
            order.push(v);
            let mut next: Vec<usize> = adj[v].iter().copied().filter(|&w| !seen[w]).collect();
            next.sort_by_key(|&w| (adj[w].len(), w));
            for w in next {
                seen[w] = true;
                queue.push_back(w);
            }
        }
    }
    order.reverse();
    order
}
