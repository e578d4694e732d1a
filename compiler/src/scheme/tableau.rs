//! Momentum and force of a model whose Lagrangian reads a [`Tableau`]:
//! the members stay symbols, and the derivatives reach the coordinates and
//! velocities through them by reverse accumulation, each member's adjoint a
//! symbol too. A chain of definitions `a_k = f_k(q, ξ, a_{k−1})` then gives
//! adjoints `ā_k = ∂l/∂a_k + ā_{k+1} ∂f_{k+1}/∂a_k`, and every momentum
//! component reads the adjoints of the members its velocity enters
//! directly: the expressions stay as local as the definitions, where the
//! expanded ones couple every member (and are quadratic in their number).
//!
//! [`attach`] makes the symbols unknowns of a step, with their definitions
//! at the step's stage as rows: a larger system whose Jacobian is sparse.

use std::collections::{HashMap, HashSet};

use crate::model::{Model, Tableau};
use crate::sym::{Differentiator, Graph, Id, SubstMap};

use super::frame::Frame;
use super::mechanics::{hamel_force, legendre_energy, Mechanics};
use super::step::Draft;

/// `p` and `F` in the model's symbols and the tableau's, with the symbols'
/// definitions.
pub(super) struct Sparse {
    /// `p = ∂l/∂ξ`
    pub(super) p: Vec<Id>,
    /// `F = Ψᵀ ∂l/∂q + [ξ, p]*`
    pub(super) force: Vec<Id>,
    /// label, symbol and definition; a definition reads `q`, `ξ`, the
    /// parameters and symbols listed before it only
    pub(super) symbols: Vec<(String, Id, Id)>,
}

/// The symbols of `candidates` that `root` reads, each once, by a walk of
/// `root` alone (the graph as a whole is far larger than one definition).
fn reads(g: &Graph, root: Id, candidates: &HashSet<Id>) -> Vec<Id> {
    let mut found = HashSet::new();
    reads_into(g, root, candidates, &mut HashSet::new(), &mut found);
    let mut out: Vec<Id> = found.into_iter().collect();
    out.sort();
    out
}

/// Adds to `out` the `candidates` that `root` reads, entering no node of
/// `seen` (whose candidates an earlier call added) and marking those it
/// enters.
fn reads_into(g: &Graph, root: Id, candidates: &HashSet<Id>, seen: &mut HashSet<Id>, out: &mut HashSet<Id>) {
    let mut stack = vec![root];
    while let Some(id) = stack.pop() {
        if !seen.insert(id) {
            continue;
        }
        if candidates.contains(&id) {
            out.insert(id);
        }
        stack.extend(g.children(id));
    }
}

/// Derives [`Sparse`] for a model with a tableau (`None` without one, or
/// where the Lagrangian depends on time: its derivative is not kept).
pub(super) fn of(model: &mut Model, frame: &Frame) -> Option<Sparse> {
    let t = model.tableau.clone()?;
    let (q, v) = (model.q_syms(), model.v_syms());
    let time = model.time;
    let g = &mut model.graph;
    let (members, l) = kept_members(g, &t, &q, &v);
    let mut candidates: HashSet<Id> = q.iter().chain(&v).copied().collect();
    candidates.extend(members.iter().map(|m| m.1));
    if g.depends_on(l, &[time]) {
        return None;
    }
    let member_reads: Vec<Vec<Id>> = members.iter().map(|m| reads(g, m.2, &candidates)).collect();
    // readers[s]: the members whose definitions read symbol s.
    let mut readers: HashMap<Id, Vec<usize>> = HashMap::new();
    for (k, r) in member_reads.iter().enumerate() {
        for &s in r {
            readers.entry(s).or_default().push(k);
        }
    }
    let l_reads: HashSet<Id> = reads(g, l, &candidates).into_iter().collect();
    let mut adjoint: Vec<Id> = vec![g.constant(0.0); members.len()];
    let mut adjoints = Vec::new();
    let mut local = candidates.clone();
    for k in (0..members.len()).rev() {
        let a = members[k].1;
        let e = total_derivative(g, l, &l_reads, a, &readers, &members, &adjoint);
        adjoint[k] = if reads(g, e, &local).is_empty() {
            e
        } else {
            let s = g.symbol(&format!("__adj{k}"));
            local.insert(s);
            adjoints.push((format!("dl/d{}", members[k].0), s, e));
            s
        };
    }
    let p: Vec<Id> = v
        .iter()
        .map(|&x| total_derivative(g, l, &l_reads, x, &readers, &members, &adjoint))
        .collect();
    let dldq: Vec<Id> = q
        .iter()
        .map(|&x| total_derivative(g, l, &l_reads, x, &readers, &members, &adjoint))
        .collect();
    let force = hamel_force(g, frame, &v, &p, &dldq);
    let mut symbols = members;
    symbols.extend(adjoints);
    Some(Sparse { p, force, symbols })
}

/// The members that stay symbols, with their definitions, and the
/// Lagrangian: a member whose definition reads neither coordinates,
/// velocities nor a member that stays (a constant, such as a chain's fixed
/// origin) is substituted.
fn kept_members(g: &mut Graph, t: &Tableau, q: &[Id], v: &[Id]) -> (Vec<(String, Id, Id)>, Id) {
    let mut varying: HashSet<Id> = q.iter().chain(v).copied().collect();
    let mut inline = SubstMap::default();
    let mut members = Vec::new();
    for ((label, s), &d) in t.symbols.iter().zip(&t.definitions) {
        let d = g.substitute(d, &inline);
        if reads(g, d, &varying).is_empty() {
            inline.insert(*s, d);
        } else {
            varying.insert(*s);
            members.push((label.clone(), *s, d));
        }
    }
    let l = g.substitute(t.lagrangian, &inline);
    (members, l)
}

/// `dl/dx` for a symbol `x` (a coordinate, velocity or member): the
/// explicit part plus, for each member whose definition reads `x`, that
/// member's adjoint times the definition's partial derivative.
fn total_derivative(
    g: &mut Graph,
    l: Id,
    l_reads: &HashSet<Id>,
    x: Id,
    readers: &HashMap<Id, Vec<usize>>,
    members: &[(String, Id, Id)],
    adjoint: &[Id],
) -> Id {
    let mut terms = Vec::new();
    if l_reads.contains(&x) {
        terms.push(Differentiator::new(x).diff(g, l));
    }
    for &j in readers.get(&x).map_or(&[][..], |r| &r[..]) {
        let d = Differentiator::new(x).diff(g, members[j].2);
        terms.push(g.mul2(adjoint[j], d));
    }
    g.add(&terms)
}

/// The locals of the kernels of a physical state ([`Draft::physical_locals`])
/// for a model with tableau `t` whose step keeps `sparse`: the members the
/// step does not keep (constants, such as a chain's fixed origin), then the
/// kept members and their adjoints, each `(symbol, definition)` in order.
fn physical_locals(t: &Tableau, sparse: &Sparse) -> Vec<(Id, Id)> {
    let kept: HashSet<Id> = sparse.symbols.iter().map(|s| s.1).collect();
    let constant = t
        .symbols
        .iter()
        .zip(&t.definitions)
        .filter(|((_, s), _)| !kept.contains(s));
    constant
        .map(|((_, s), &d)| (*s, d))
        .chain(sparse.symbols.iter().map(|&(_, s, d)| (s, d)))
        .collect()
}

/// The free motion's quantities through the tableau `t` whose step keeps
/// `sparse`: `p` and `F` as [`of`] derived them, the energy `⟨p, ξ⟩ − l`,
/// reading the members and adjoints as locals ([`physical_locals`]). A
/// chain's are O(N) where expanded they are O(N²); the Lagrangian reads no
/// time (else [`of`] keeps no tableau), so `∂l/∂t` is zero.
pub(super) fn mechanics(g: &mut Graph, t: &Tableau, sparse: &Sparse, v: &[Id]) -> Mechanics {
    Mechanics {
        p: sparse.p.clone(),
        force: sparse.force.clone(),
        energy: legendre_energy(g, &sparse.p, v, t.lagrangian),
        lt: g.constant(0.0),
        locals: physical_locals(t, sparse),
    }
}

/// Every symbol of the tableau mapped to its definition with `map`'s
/// substitutions (coordinates and velocities to a stage, or none), each
/// substituted once on the earlier ones' nodes: the expressions share them
/// and grow as the definitions do, not as their expansion.
fn definitions(g: &mut Graph, sparse: &Sparse, mut map: SubstMap) -> SubstMap {
    for (_, s, d) in &sparse.symbols {
        let e = g.substitute(*d, &map);
        map.insert(*s, e);
    }
    map
}

/// `exprs` (in the model's coordinates, velocities and the tableau's
/// symbols) at the stage `(stage_q, stage_v)` with every symbol replaced
/// by its definition there: for quantities of a known stage (the averaged
/// step's start, the state), which no unknown enters.
pub(super) fn at_stage(
    g: &mut Graph,
    sparse: &Sparse,
    exprs: &[Id],
    (q, stage_q): (&[Id], &[Id]),
    (v, stage_v): (&[Id], &[Id]),
) -> Vec<Id> {
    let mut map = SubstMap::default();
    map.extend(q.iter().copied().zip(stage_q.iter().copied()));
    map.extend(v.iter().copied().zip(stage_v.iter().copied()));
    let map = definitions(g, sparse, map);
    g.substitute_all(exprs, &map)
}

/// Makes the tableau symbols that `draft`'s residual and update read (and
/// those their definitions read in turn) unknowns of the step: each gets
/// the row `a − f(q̄, ξ̄, …) = 0` at the stage `(stage_q, stage_v)`, is
/// guessed as its previous value and first as its value at the physical
/// state, and is marked auxiliary (see [`Draft::auxiliary`]). The caller
/// lists the definitions among the physical kernels' locals
/// ([`Draft::physical_locals`]), which that first guess reads.
pub(super) fn attach(
    g: &mut Graph,
    draft: &mut Draft,
    sparse: &Sparse,
    (q, stage_q): (&[Id], &[Id]),
    (v, stage_v): (&[Id], &[Id]),
) {
    let all: HashSet<Id> = sparse.symbols.iter().map(|s| s.1).collect();
    // Only the union is wanted: one walk for every root, each node once (a
    // walk per row entered the chain's shared sub-expressions once per row:
    // a quarter of the 256-link averaged derivation).
    let mut needed: HashSet<Id> = HashSet::new();
    let mut seen: HashSet<Id> = HashSet::new();
    for &r in draft.residual.iter().chain(&draft.next) {
        reads_into(g, r, &all, &mut seen, &mut needed);
    }
    for (_, s, d) in sparse.symbols.iter().rev() {
        if needed.contains(s) {
            reads_into(g, *d, &all, &mut seen, &mut needed);
        }
    }
    let mut to_unknown = SubstMap::default();
    let mut rows = Vec::new();
    for (k, (label, s, d)) in sparse.symbols.iter().enumerate() {
        if !needed.contains(s) {
            continue;
        }
        let (u, w) = (g.symbol(&format!("__xt{k}")), g.symbol(&format!("__wt{k}")));
        to_unknown.insert(*s, u);
        rows.push((u, *d));
        draft.unknowns.push((u, label.clone()));
        draft.previous.push(w);
        draft.predictor.push(w);
        // Its value at the physical state, its first guess: the symbol
        // itself, which the physical kernels compute from its definition
        // (`physical_locals`), linear in the chain's length.
        draft.init_warm.push(*s);
        draft.base.push(None);
        draft.auxiliary.push(u);
    }
    let mut stage = to_unknown.clone();
    stage.extend(q.iter().copied().zip(stage_q.iter().copied()));
    stage.extend(v.iter().copied().zip(stage_v.iter().copied()));
    draft.residual = g.substitute_all(&draft.residual, &to_unknown);
    draft.next = g.substitute_all(&draft.next, &to_unknown);
    for (u, d) in rows {
        let f = g.substitute(d, &stage);
        draft.residual.push(g.sub(u, f));
    }
}
