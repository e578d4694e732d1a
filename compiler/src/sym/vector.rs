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
    // B's columns gathered once, not once per row of A; a row of A read at
    // its non-zero entries only, against every column whose entries a zero
    // absorbs (the product is then the same node as the whole row's: `dot`
    // leaves the zero products out). A chain's constraint Jacobian times
    // its inverse mass matrix was O(N³) written densely.
    let cols = transpose(b);
    let absorbed: Vec<bool> = cols.iter().map(|c| c.iter().all(|&e| g.zero_absorbs(e))).collect();
    a.iter()
        .map(|row| {
            let nz: Vec<usize> = (0..row.len()).filter(|&k| !g.is_const(row[k], 0.0)).collect();
            let sparse: Vec<Id> = nz.iter().map(|&k| row[k]).collect();
            cols.iter()
                .zip(&absorbed)
                .map(|(col, &absorbed)| {
                    if absorbed {
                        let col: Vec<Id> = nz.iter().map(|&k| col[k]).collect();
                        dot(g, &sparse, &col)
                    } else {
                        dot(g, row, col)
                    }
                })
                .collect()
        })
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

    /// The product read at A's non-zeros is the dense product's node; a
    /// column holding `inf` is read whole (its product with a 0 is NaN).
    #[test]
    fn a_matrix_product_at_the_non_zeros_is_the_dense_one() {
        let mut g = Graph::new();
        let (x, y) = (g.symbol("x"), g.symbol("y"));
        let (zero, two, inf) = (g.constant(0.0), g.constant(2.0), g.constant(f64::INFINITY));
        let a = vec![vec![x, zero, two], vec![zero, zero, y]];
        let b = vec![vec![y, zero], vec![x, inf], vec![two, x]];
        let p = matmul(&mut g, &a, &b);
        for (i, row) in a.iter().enumerate() {
            for j in 0..2 {
                let terms: Vec<Id> = (0..3).map(|k| g.mul2(row[k], b[k][j])).collect();
                let dense = g.add(&terms);
                assert_eq!(p[i][j], dense, "[{i}][{j}]");
            }
        }
        // The column with `inf` kept its NaN term: not y·x alone.
        let yx = g.mul2(y, x);
        assert_ne!(p[1][1], yx);
    }
}
