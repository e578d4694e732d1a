//! Matrices that kernels give by their product with a direction (the
//! constrained kinetic metric, the midpoint step's observation system): a
//! long chain's product is code linear in its length where the matrix has
//! a quadratic number of entries, and a host forms the matrix when it needs
//! it, a column at a time.

/// Writes into `out` (row-major, `n × n`) the matrix `K` whose product with
/// a direction `apply(u, column)` writes into `column`: column `j` is
/// `K e_j`.
pub fn form(n: usize, out: &mut [f64], mut apply: impl FnMut(&[f64], &mut [f64])) {
    let (mut u, mut column) = (vec![0.0; n], vec![0.0; n]);
    for j in 0..n {
        u[j] = 1.0;
        apply(&u, &mut column);
        u[j] = 0.0;
        for (i, &k) in column.iter().enumerate() {
            out[i * n + j] = k;
        }
    }
}

#[cfg(test)]
mod tests {
    /// The columns of a known matrix come back in their places.
    #[test]
    fn a_matrix_is_formed_from_its_products() {
        let k = [[2.0, -1.0, 0.5], [4.0, 3.0, -2.0], [0.0, 7.0, 1.0]];
        let mut out = [0.0; 9];
        super::form(3, &mut out, |u, column| {
            for (i, c) in column.iter_mut().enumerate() {
                *c = (0..3).map(|j| k[i][j] * u[j]).sum();
            }
        });
        assert_eq!(out, [2.0, -1.0, 0.5, 4.0, 3.0, -2.0, 0.0, 7.0, 1.0]);
    }
}
