//! Symbolic solution of small dense linear systems (Gauss–Jordan on the DAG).
//!
//! Pivots are taken as the first entry that is not structurally zero; the
//! result is valid where those pivots do not vanish. That holds for constant
//! mass matrices and for blocks that are the identity at `h = 0`, not for a
//! general frame `Ψ(q)`: a rotation has no entry that is non-zero everywhere,
//! so frames are inverted by cofactors (`scheme/frame.rs`) up to a size.

use super::graph::{Graph, Id};

/// Solves `a · x = b` for `x` (`a`: n×n, `b`: n×k). `None` when a column has no
/// structurally non-zero pivot (the matrix is singular everywhere).
pub fn solve(g: &mut Graph, a: &[Vec<Id>], b: &[Vec<Id>]) -> Option<Vec<Vec<Id>>> {
    let n = a.len();
    let mut m: Vec<Vec<Id>> = a
        .iter()
        .zip(b)
        .map(|(ra, rb)| ra.iter().chain(rb).copied().collect())
        .collect();
    let width = m.first().map_or(0, Vec::len);
    for col in 0..n {
        let p = (col..n).find(|&r| !g.is_const(m[r][col], 0.0))?;
        m.swap(col, p);
        let piv = m[col][col];
        for j in col..width {
            m[col][j] = g.div(m[col][j], piv);
        }
        for r in 0..n {
            if r == col || g.is_const(m[r][col], 0.0) {
                continue;
            }
            let f = m[r][col];
            for j in col..width {
                let t = g.mul2(f, m[col][j]);
                m[r][j] = g.sub(m[r][j], t);
            }
        }
    }
    Some(m.into_iter().map(|row| row[n..].to_vec()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn solves_a_symbolic_two_by_two() {
        let mut g = Graph::new();
        let x = g.symbol("x");
        let one = g.constant(1.0);
        let zero = g.constant(0.0);
        let ex = g.call(super::super::Func::Exp, x);
        // [[0, e^x], [1, x]] · X = I
        let a = vec![vec![zero, ex], vec![one, x]];
        let b = vec![vec![one, zero], vec![zero, one]];
        let inv = solve(&mut g, &a, &b).unwrap();
        let xv = 0.3f64;
        let val = |g: &Graph, id| g.eval(id, &|_| xv);
        // check a · inv = I numerically
        for i in 0..2 {
            for j in 0..2 {
                let s: f64 = (0..2).map(|k| val(&g, a[i][k]) * val(&g, inv[k][j])).sum();
                assert!((s - if i == j { 1.0 } else { 0.0 }).abs() < 1e-14);
            }
        }
    }
}
