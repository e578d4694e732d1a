//! Small dense vector and matrix helpers over expressions.

use super::graph::{Graph, Id};

/// `Σ a_i b_i`
pub fn dot(g: &mut Graph, a: &[Id], b: &[Id]) -> Id {
    // Products that are 0 are left out: the sum is the same node, and the
    // rows of a chain's constraint Jacobians are almost all zeros.
    let mut t: Vec<Id> = Vec::new();
    for (&x, &y) in a.iter().zip(b) {
        if !g.is_zero_product(x, y) {
            t.push(g.mul2(x, y));
        }
    }
    g.add(&t)
}

/// `M v`
pub fn matvec(g: &mut Graph, m: &[Vec<Id>], v: &[Id]) -> Vec<Id> {
    m.iter().map(|row| dot(g, row, v)).collect()
}

/// `Mᵀ v`
pub fn matvec_t(g: &mut Graph, m: &[Vec<Id>], v: &[Id]) -> Vec<Id> {
    let cols = m.first().map_or(0, Vec::len);
    (0..cols)
        .map(|j| {
            let t: Vec<Id> = m.iter().zip(v).map(|(row, &x)| g.mul2(row[j], x)).collect();
            g.add(&t)
        })
        .collect()
}

/// `a + c b`
pub fn axpy(g: &mut Graph, a: &[Id], c: Id, b: &[Id]) -> Vec<Id> {
    a.iter()
        .zip(b)
        .map(|(&x, &y)| {
            let cy = g.mul2(c, y);
            g.add2(x, cy)
        })
        .collect()
}

/// `A B`
pub fn matmul(g: &mut Graph, a: &[Vec<Id>], b: &[Vec<Id>]) -> Vec<Vec<Id>> {
    // B's columns gathered once, not once per row of A.
    let cols = transpose(b);
    a.iter()
        .map(|row| cols.iter().map(|col| dot(g, row, col)).collect())
        .collect()
}

/// `Aᵀ`
pub fn transpose(a: &[Vec<Id>]) -> Vec<Vec<Id>> {
    let cols = a.first().map_or(0, Vec::len);
    (0..cols).map(|j| a.iter().map(|r| r[j]).collect()).collect()
}

/// `(a + b) / 2`
pub fn midpoint(g: &mut Graph, a: &[Id], b: &[Id]) -> Vec<Id> {
    let half = g.constant(0.5);
    a.iter()
        .zip(b)
        .map(|(&x, &y)| {
            let s = g.add2(x, y);
            g.mul2(half, s)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A dot product that leaves its zero products out is the node the sum
    /// with them gives; `0 · inf` is NaN, not a zero to leave out.
    #[test]
    fn a_dot_product_without_its_zero_products_is_the_same_node() {
        let mut g = Graph::new();
        let (x, y) = (g.symbol("x"), g.symbol("y"));
        let (zero, two, inf) = (g.constant(0.0), g.constant(2.0), g.constant(f64::INFINITY));
        let d = dot(&mut g, &[x, zero, two], &[y, x, x]);
        let terms: Vec<Id> = [(x, y), (zero, x), (two, x)]
            .iter()
            .map(|&(a, b)| g.mul2(a, b))
            .collect();
        assert_eq!(d, g.add(&terms));
        assert!(g.is_zero_product(zero, x) && g.is_zero_product(x, zero));
        assert!(!g.is_zero_product(zero, inf) && !g.is_zero_product(x, y));
        let nan = dot(&mut g, &[zero], &[inf]);
        assert!(g.as_const(nan).is_some_and(f64::is_nan));
        let none = dot(&mut g, &[zero, x], &[y, zero]);
        assert!(g.is_const(none, 0.0));
    }
}
