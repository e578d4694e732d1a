//! A linear map given by its product with a direction, and expressions
//! moved to another point through the locals they read.
//!
//! A chain's dense matrices (its kinetic metric, with O(N²) entries) are
//! O(N) as products: the derivative of its momenta along a direction,
//! through its tableau's recurrences (see [`super::directional`]). A host
//! forms the matrix a column at a time, by unit directions.

use super::graph::{Graph, Id, SubstMap};

/// `K u` for the symbols `u` of a direction (the kernel argument
/// [`hamel_kernel::Arg::U`]), reading `locals` ([`super::Function::locals`]).
#[derive(Clone, Debug, Default)]
pub struct Applied {
    /// `K u`, one entry per row of `K`
    pub product: Vec<Id>,
    /// the direction's symbols, one per column of `K`
    pub direction: Vec<Id>,
    /// `(symbol, definition)` in order, which the product reads
    pub locals: Vec<(Id, Id)>,
}

impl Applied {
    /// The product of the dense square matrix `rows` with a direction of
    /// symbols named `{prefix}{j}`.
    pub fn of_rows(g: &mut Graph, rows: &[Vec<Id>], prefix: &str) -> Applied {
        let direction: Vec<Id> = (0..rows.len()).map(|j| g.symbol(&format!("{prefix}{j}"))).collect();
        let product = super::vector::matvec(g, rows, &direction);
        Applied {
            product,
            direction,
            locals: Vec::new(),
        }
    }

    /// The map with `map`'s substitutions made in its product and locals.
    pub fn substitute(&self, g: &mut Graph, map: &SubstMap) -> Applied {
        Applied {
            product: g.substitute_all(&self.product, map),
            direction: self.direction.clone(),
            locals: self.locals.iter().map(|&(s, d)| (s, g.substitute(d, map))).collect(),
        }
    }
}

/// The product of a saddle-point matrix `[[M, Aᵀ], [A, 0]]` with a
/// direction `u = (u_v, u_λ)`, `[M u_v + Aᵀ u_λ; A u_v]`, given `M u_v` and
/// the rows of `A` (the constrained kinetic metric, the midpoint step's
/// observation system).
pub fn saddle_product(g: &mut Graph, m_u: &[Id], a_rows: &[Vec<Id>], u: &[Id]) -> Vec<Id> {
    let (u_v, u_l) = u.split_at(m_u.len());
    let at_ul = super::vector::matvec_t(g, a_rows, u_l); // empty without rows
    let mut out = Vec::with_capacity(u.len());
    for (i, &mu_i) in m_u.iter().enumerate() {
        out.push(at_ul.get(i).map_or(mu_i, |&t| g.add2(mu_i, t)));
    }
    out.extend(super::vector::matvec(g, a_rows, u_v));
    out
}

/// `exprs`, which read `locals` (`(symbol, definition)` in order), at the
/// point `map` (symbol → value): each local becomes a new symbol named
/// `{prefix}{k}` defined at that point, returned as the locals the moved
/// expressions read. Substituting the definitions themselves would expand
/// a recurrence into O(N²) nodes.
pub fn restage(
    g: &mut Graph,
    exprs: &[Id],
    locals: &[(Id, Id)],
    map: &SubstMap,
    prefix: &str,
) -> (Vec<Id>, Vec<(Id, Id)>) {
    let mut map = map.clone();
    let mut moved = Vec::with_capacity(locals.len());
    for (k, &(s, def)) in locals.iter().enumerate() {
        let d = g.substitute(def, &map);
        // A local the point makes constant (a velocity's member at rest)
        // is that constant, so that what reads it simplifies.
        if g.as_const(d).is_some() {
            map.insert(s, d);
            continue;
        }
        let s2 = g.symbol(&format!("{prefix}{k}"));
        map.insert(s, s2);
        moved.push((s2, d));
    }
    (g.substitute_all(exprs, &map), moved)
}
