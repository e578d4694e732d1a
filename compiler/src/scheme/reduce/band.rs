//! Band ordering of rows and unknowns (pass 5 of [`super::run`]).

use crate::scheme::step::StepSystem;
use crate::sym::{Graph, Id, Node};
use hamel_kernel::vocabulary::{PIVOT_THRESHOLD, REPLAY_SHARE};

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
    // The pattern once, row by row: every order below is judged on its
    // entries, not on the n² of the dense Jacobian (a 256-link chain has
    // 2560 unknowns).
    let pattern: Vec<Vec<usize>> = (0..n)
        .map(|i| (0..n).filter(|&j| nz(&sys.graph, sys.jacobian[i][j])).collect())
        .collect();
    let mut adj: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, row) in pattern.iter().enumerate() {
        for &j in row.iter().filter(|&&j| j != i) {
            adj[i].push(j);
            adj[j].push(i);
        }
    }
    for a in &mut adj {
        a.sort_unstable();
        a.dedup();
    }
    let band_of = |order: &[usize]| -> (usize, usize) {
        let mut pos = vec![0usize; n];
        for (k, &o) in order.iter().enumerate() {
            pos[o] = k;
        }
        let (mut kl, mut ku) = (0, 0);
        for (i, row) in pattern.iter().enumerate() {
            for &j in row {
                let (pi, pj) = (pos[i], pos[j]);
                kl = kl.max(pi.saturating_sub(pj));
                ku = ku.max(pj.saturating_sub(pi));
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
    let (order, band) = match by_links(sys, &order, band, &band_of) {
        Some((o, b)) if pays(b) => (o, b),
        _ => (order, band),
    };
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

/// Orders that keep each link's unknowns together, the links in turn from
/// either end, the kinds of unknown within a link in any order (a link: the
/// first index in an unknown's name, `w[3][1]+`, `v[3].x`; an unknown named
/// without one, a multiplier `nu2`, belongs with the unknowns of the rows it
/// enters, the highest link among them). Cuthill–McKee's levels interleave
/// neighbouring links, and the LU then carries more of them in its active
/// window: on the 16-link director chain's tableau the banded LU's updates
/// on structural non-zeros fall from 2090 to 1677 with the multiplier, the
/// link's velocity, its momentum adjoint and its bob velocity in that order,
/// from the pivot out. Which order is best depends on the pivots the
/// threshold rule takes, so the candidates are factored, at sample values
/// of every symbol, and the one whose LU costs least (the runtime's rule:
/// a replay of its structural updates where that pays, else the banded LU
/// whole) is returned with its band where it costs at least a tenth less
/// than `order`'s. `None` where the names give no links, or nothing is
/// gained (the energy–momentum chain: its band is factored whole in either
/// order).
fn by_links(
    sys: &StepSystem,
    order: &[usize],
    band: (usize, usize),
    band_of: &dyn Fn(&[usize]) -> (usize, usize),
) -> Option<(Vec<usize>, (usize, usize))> {
    let n = sys.unknowns.len();
    let link_of_name = crate::model::family_member;
    let kind_of = |name: &str| -> String {
        name.split('[')
            .next()
            .unwrap_or(name)
            .trim_end_matches(|c: char| c.is_ascii_digit())
            .to_string()
    };
    let g = &sys.graph;
    let mut link: Vec<Option<u32>> = sys.unknowns.iter().map(|u| link_of_name(&u.name)).collect();
    for j in 0..n {
        if link[j].is_none() {
            link[j] = (0..n)
                .filter(|&i| !g.is_const(sys.jacobian[i][j], 0.0))
                .filter_map(|i| link_of_name(&sys.unknowns[i].name))
                .max();
        }
    }
    let link: Vec<u32> = link.into_iter().collect::<Option<_>>()?;
    let mut kinds: Vec<String> = Vec::new();
    let kind: Vec<usize> = sys
        .unknowns
        .iter()
        .map(|u| {
            let k = kind_of(&u.name);
            kinds.iter().position(|x| *x == k).unwrap_or_else(|| {
                kinds.push(k);
                kinds.len() - 1
            })
        })
        .collect();
    let links = {
        let mut l = link.clone();
        l.sort_unstable();
        l.dedup();
        l.len()
    };
    if links < 4 || kinds.len() > 5 {
        return None;
    }
    let values = sample_jacobian(sys)?;
    let mut rank = vec![0usize; n];
    for (k, &o) in order.iter().enumerate() {
        rank[o] = k;
    }
    // What the runtime's LU costs, in banded updates: a replay of the
    // structural updates where it pays, else the banded LU whole.
    let cost = |updates: usize, (kl, ku): (usize, usize)| {
        let banded = (n * kl * (kl + ku + 1)) as f64;
        let updates = updates as f64;
        if updates <= REPLAY_SHARE * banded {
            updates / REPLAY_SHARE
        } else {
            banded
        }
    };
    let baseline = cost(threshold_lu_updates(&values, order, band)?, band);
    let mut best: Option<(f64, Vec<usize>, (usize, usize))> = None;
    for perm in permutations(kinds.len()) {
        for descending in [false, true] {
            let mut o: Vec<usize> = (0..n).collect();
            o.sort_by_key(|&u| {
                let l = if descending { u32::MAX - link[u] } else { link[u] };
                (l, perm[kind[u]], rank[u])
            });
            let b = band_of(&o);
            if let Some(updates) = threshold_lu_updates(&values, &o, b) {
                let c = cost(updates, b);
                if best.as_ref().is_none_or(|(u, _, _)| c < *u) {
                    best = Some((c, o, b));
                }
            }
        }
    }
    let (c, o, b) = best?;
    (c <= 0.9 * baseline).then_some((o, b))
}

/// Every permutation of `0..k`, as the position each element takes.
pub(super) fn permutations(k: usize) -> Vec<Vec<usize>> {
    if k == 0 {
        return vec![vec![]];
    }
    let mut out = Vec::new();
    for p in permutations(k - 1) {
        for at in 0..=p.len() {
            let mut q: Vec<usize> = p.iter().map(|&x| if x >= at { x + 1 } else { x }).collect();
            q.push(at);
            out.push(q);
        }
    }
    out
}

/// The Jacobian's structural non-zeros `(row, column, value)` at sample
/// values: `h = 0.01`, parameters at their defaults, every other symbol
/// somewhere in `[0.5, 1.5]` by its number (magnitudes like a model's in
/// its units; what the sample decides is only an order). `None` where an
/// entry is not finite there.
fn sample_jacobian(sys: &StepSystem) -> Option<Vec<(usize, usize, f64)>> {
    let g = &sys.graph;
    let sym = |id: Id| match g.node(id) {
        Node::Sym(s) => Some(*s),
        _ => None,
    };
    let mut fixed: Vec<(u32, f64)> = sys
        .params
        .iter()
        .filter_map(|(p, v)| sym(p.sym).map(|s| (s, *v)))
        .collect();
    fixed.extend(sym(sys.h).map(|s| (s, 0.01)));
    let value_of = |s: u32| {
        fixed
            .iter()
            .find(|&&(f, _)| f == s)
            .map_or_else(|| 0.5 + ((s as f64 + 1.0) * 0.618_033_988_749_895).fract(), |&(_, v)| v)
    };
    let n = sys.unknowns.len();
    let mut at = Vec::new();
    let mut roots = Vec::new();
    for i in 0..n {
        for j in 0..n {
            let e = sys.jacobian[i][j];
            if !g.is_const(e, 0.0) {
                at.push((i, j));
                roots.push(e);
            }
        }
    }
    let values = g.eval_all(&roots, &value_of);
    values
        .iter()
        .all(|v| v.is_finite())
        .then(|| at.into_iter().zip(values).map(|((i, j), v)| (i, j, v)).collect())
}

/// Updates on structural non-zeros of the runtime's banded LU (threshold
/// partial pivoting at a tenth, the first row in order within it) of the
/// matrix `entries` ordered by `order`, over its leading 400 unknowns at
/// most (a chain's elimination is local: the count per link settles within
/// a few links). `None` where a column has no pivot.
fn threshold_lu_updates(entries: &[(usize, usize, f64)], order: &[usize], (kl, ku): (usize, usize)) -> Option<usize> {
    let n = order.len();
    let m = n.min(400);
    let mut pos = vec![0usize; n];
    for (k, &o) in order.iter().enumerate() {
        pos[o] = k;
    }
    let mut a = vec![0.0f64; m * m];
    let mut s = vec![false; m * m];
    for &(i, j, v) in entries {
        let (r, c) = (pos[i], pos[j]);
        if r < m && c < m {
            a[r * m + c] = v;
            s[r * m + c] = true;
        }
    }
    let mut updates = 0;
    for k in 0..m {
        let last_row = (k + kl).min(m - 1);
        let last_col = (k + kl + ku).min(m - 1);
        let largest = (k..=last_row)
            .filter(|&r| s[r * m + k])
            .map(|r| a[r * m + k].abs())
            .fold(0.0, f64::max);
        if largest == 0.0 {
            return None;
        }
        let p = (k..=last_row).find(|&r| s[r * m + k] && a[r * m + k].abs() >= PIVOT_THRESHOLD * largest)?;
        if p != k {
            for c in k..=last_col {
                a.swap(k * m + c, p * m + c);
                s.swap(k * m + c, p * m + c);
            }
        }
        let upper: Vec<usize> = (k + 1..=last_col).filter(|&c| s[k * m + c]).collect();
        for r in k + 1..=last_row {
            if !s[r * m + k] {
                continue;
            }
            let l = a[r * m + k] / a[k * m + k];
            for &c in &upper {
                a[r * m + c] -= l * a[k * m + c];
                s[r * m + c] = true;
            }
            updates += upper.len();
        }
    }
    Some(updates)
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
