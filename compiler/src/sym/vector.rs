//! Small dense vector and matrix helpers over expressions.

use super::graph::{Graph, Id};

/// `Σ a_i b_i`
pub fn dot(g: &mut Graph, a: &[Id], b: &[Id]) -> Id {
    let t: Vec<Id> = a.iter().zip(b).map(|(&x, &y)| g.mul2(x, y)).collect();
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
    let cols = b.first().map_or(0, Vec::len);
    a.iter()
        .map(|row| {
            (0..cols)
                .map(|j| {
                    let col: Vec<Id> = b.iter().map(|r| r[j]).collect();
                    dot(g, row, &col)
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
