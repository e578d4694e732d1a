//! Reductions of a step system before Newton, as a list of passes (like
//! pest's optimizer): each takes the system in increment form and returns it
//! smaller or better ordered, with the same solutions. None of them knows
//! mechanics or Rust; they work on the residual's expressions, and every
//! back-end gets their result.
//!
//! 1. [`explicit`]: unknowns a row gives explicitly leave the system;
//! 2. the Jacobian is derived;
//! 3. [`linear`]: a large block of unknowns that only rows linear in it
//!    read leaves the Newton system for the update (the Jacobian stays valid);
//! 4. [`blocks`]: small blocks of unknowns the rows give linearly leave it
//!    (the Jacobian is derived again if they do);
//! 5. [`band`]: rows and unknowns are ordered for a banded LU where it pays.

use crate::sym::{Graph, Id};

use super::step::StepSystem;

pub(crate) mod band;
pub(crate) mod blocks;
pub(crate) mod explicit;
pub(crate) mod linear;

#[cfg(test)]
mod tests;

/// An unknown a pass eliminated, and its value in the unknowns that remain
/// after that pass (values of later passes or rounds may use it).
pub(crate) type Eliminated = (Id, Id);

/// Runs every pass in order; returns what the passes eliminated, in order.
pub(crate) fn run(sys: &mut StepSystem) -> Vec<Eliminated> {
    #[cfg(test)]
    if tests::disabled() {
        sys.finish_jacobian();
        return vec![];
    }
    let mut gone = explicit::run(sys);
    sys.finish_jacobian();
    gone.extend(linear::run(sys));
    let blocks = blocks::run(sys);
    if !blocks.is_empty() {
        sys.finish_jacobian();
    }
    gone.extend(blocks);
    band::run(sys);
    gone
}

/// Removes rows `gone_rows` and unknowns `gone` (whose values in the
/// remaining unknowns are `value`) from the system: the other rows, the
/// update and the work get the values substituted; the predictor guesses
/// an eliminated unknown from the previous solution of the others. Returns
/// the eliminated unknowns with their values, in the order of `gone`.
pub(super) fn substitute_eliminated(
    sys: &mut StepSystem,
    gone_rows: &[usize],
    gone: &[usize],
    value: &crate::sym::SubstMap,
) -> Vec<(Id, Id)> {
    let g = &mut sys.graph;
    let x: Vec<Id> = sys.unknowns.iter().map(|s| s.sym).collect();
    let keep = |k: usize| !gone.contains(&k);
    let rows: Vec<Id> = sys
        .residual
        .iter()
        .enumerate()
        .filter(|(i, _)| !gone_rows.contains(i))
        .map(|(_, &r)| r)
        .collect();
    sys.residual = g.substitute_all(&rows, value);
    sys.update = g.substitute_all(&sys.update, value);
    if let Some(w) = sys.work {
        sys.work = Some(g.substitute_all(&[w], value)[0]);
    }
    let to_prev: crate::sym::SubstMap = x.iter().copied().zip(sys.previous.iter().copied()).collect();
    // One memo for all: the eliminated values share nodes (a banded
    // solve's back substitution chains them), walked once, not once each.
    let values: Vec<Id> = gone.iter().map(|&j| value[&x[j]]).collect();
    let at_prev = g.substitute_all(&values, &to_prev);
    let prev_value: crate::sym::SubstMap = gone.iter().map(|&j| sys.previous[j]).zip(at_prev).collect();
    let pred: Vec<Id> = (0..x.len()).filter(|&k| keep(k)).map(|k| sys.predictor[k]).collect();
    sys.predictor = g.substitute_all(&pred, &prev_value);
    sys.init_warm = (0..x.len()).filter(|&k| keep(k)).map(|k| sys.init_warm[k]).collect();
    sys.previous = (0..x.len()).filter(|&k| keep(k)).map(|k| sys.previous[k]).collect();
    let names = std::mem::take(&mut sys.unknowns);
    sys.unknowns = names
        .into_iter()
        .enumerate()
        .filter(|(k, _)| keep(*k))
        .map(|(_, s)| s)
        .collect();
    gone.iter().map(|&j| (x[j], value[&x[j]])).collect()
}

/// Which unknowns each node reads, for the nodes of some expressions only:
/// one bit per unknown, computed over the sub-graph those expressions
/// reach. (A mask over the whole graph per unknown costs unknowns × nodes,
/// and the graph also holds the model's expanded quantities, which for a
/// long chain are far larger than its step.)
pub(super) struct Reads {
    index: std::collections::HashMap<Id, usize>,
    words: usize,
    bits: Vec<u64>,
}

impl Reads {
    /// For the nodes `roots` reach, the unknowns `x` among their leaves.
    pub(super) fn new(g: &Graph, roots: impl IntoIterator<Item = Id>, x: &[Id]) -> Reads {
        let mut seen = std::collections::HashSet::new();
        let mut stack: Vec<Id> = roots.into_iter().collect();
        while let Some(id) = stack.pop() {
            if seen.insert(id) {
                stack.extend(g.children(id));
            }
        }
        // Children before parents: nodes are created after their children.
        let mut nodes: Vec<Id> = seen.into_iter().collect();
        nodes.sort();
        let words = x.len().div_ceil(64).max(1);
        let index: std::collections::HashMap<Id, usize> = nodes.iter().enumerate().map(|(k, &id)| (id, k)).collect();
        let mut bits = vec![0u64; nodes.len() * words];
        let unknown: std::collections::HashMap<Id, usize> = x.iter().enumerate().map(|(j, &s)| (s, j)).collect();
        for (k, &id) in nodes.iter().enumerate() {
            if let Some(&j) = unknown.get(&id) {
                bits[k * words + j / 64] |= 1 << (j % 64);
            }
            for c in g.children(id) {
                let kc = index[&c];
                for w in 0..words {
                    bits[k * words + w] |= bits[kc * words + w];
                }
            }
        }
        Reads { index, words, bits }
    }

    /// Whether node `e` (one the roots reach) reads unknown `j`.
    pub(super) fn reads(&self, e: Id, j: usize) -> bool {
        self.index
            .get(&e)
            .is_some_and(|&k| self.bits[k * self.words + j / 64] & (1 << (j % 64)) != 0)
    }
}

/// Whether `root` depends on one of `syms`, remembering every node visited
/// (nodes never change, so `memo` stays valid as the graph grows).
pub(super) fn depends_memo(
    g: &Graph,
    root: Id,
    syms: &std::collections::HashSet<Id>,
    memo: &mut std::collections::HashMap<Id, bool>,
) -> bool {
    let mut stack = vec![(root, false)];
    while let Some((id, expanded)) = stack.pop() {
        if memo.contains_key(&id) {
            continue;
        }
        if syms.contains(&id) {
            memo.insert(id, true);
            continue;
        }
        let children = g.children(id);
        if expanded {
            let d = children.iter().any(|c| memo.get(c).copied().unwrap_or(false));
            memo.insert(id, d);
        } else {
            stack.push((id, true));
            stack.extend(
                children
                    .into_iter()
                    .filter(|c| !memo.contains_key(c))
                    .map(|c| (c, false)),
            );
        }
    }
    memo[&root]
}
