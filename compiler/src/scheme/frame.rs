//! Hamel frames: the matrix `Ψ(q)` and the frame bracket coefficients
//! `c^c_ab(q)` (docs/schemes.md §1), for identity, linear-action and invertible frames.

use crate::model::Model;
use crate::sym::{jacobian, linsolve, Graph, Id};

/// How the bracket coefficients were obtained.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameKind {
    /// `q' = ξ`: all brackets vanish.
    Identity,
    /// `Ψ(q) ξ = Σ ξ^a A_a q` with constant matrices `A_a`.
    LinearAction,
    /// `Ψ(q)` square and invertible: `c(q) = Ψ⁻¹ [u_a, u_b]`.
    Invertible,
}

/// `Ψ(q)` and the bracket coefficients of a model's frame.
#[derive(Clone, Debug)]
pub struct Frame {
    /// which construction applied
    pub kind: FrameKind,
    /// `Ψ[i][a]`: component `i` of the frame field `u_a`, in the model's coordinates
    pub psi: Vec<Vec<Id>>,
    /// `c[c][a][b]` with `[u_a, u_b] = c^c_ab u_c`
    pub c: Vec<Vec<Vec<Id>>>,
}

/// Why a frame's brackets could not be computed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FrameError(pub String);

/// Deterministic sample points for numeric identity checks.
fn sample(k: usize, i: usize) -> f64 {
    let x = ((k * 7919 + i * 104_729 + 13) % 1000) as f64 / 1000.0;
    0.3 + 1.1 * x
}

impl Frame {
    /// Analyses the model's frame.
    pub fn of(model: &mut Model) -> Result<Frame, FrameError> {
        let q = model.q_syms();
        let v = model.v_syms();
        let (n, m) = (q.len(), v.len());
        let g = &mut model.graph;
        let Some(f) = model.frame.clone() else {
            let one = g.constant(1.0);
            let zero = g.constant(0.0);
            let psi = (0..n)
                .map(|i| (0..m).map(|a| if i == a { one } else { zero }).collect())
                .collect();
            return Ok(Frame {
                kind: FrameKind::Identity,
                psi,
                c: vec![vec![vec![zero; m]; m]; m],
            });
        };
        let psi = jacobian(g, &f, &v);
        if let Some(c) = linear_action(g, &psi, &q)? {
            return Ok(Frame {
                kind: FrameKind::LinearAction,
                psi,
                c,
            });
        }
        if n != m {
            return Err(FrameError(format!(
                "the frame is neither a linear action (q' = Σ ξ^a A_a q with constant A_a) nor square ({n} coordinates, {m} velocities), so its brackets cannot be computed"
            )));
        }
        let c = invertible(g, &psi, &q)?;
        Ok(Frame {
            kind: FrameKind::Invertible,
            psi,
            c,
        })
    }

    /// The frame bracket `[ξ, η]_q` as expressions.
    pub fn bracket(&self, g: &mut Graph, xi: &[Id], eta: &[Id]) -> Vec<Id> {
        let m = xi.len();
        (0..m)
            .map(|c| {
                let mut terms = Vec::new();
                for a in 0..m {
                    for b in 0..m {
                        if !g.is_const(self.c[c][a][b], 0.0) {
                            terms.push(g.mul(&[self.c[c][a][b], xi[a], eta[b]]));
                        }
                    }
                }
                g.add(&terms)
            })
            .collect()
    }

    /// The dual bracket `[ξ, μ]*_q`, `([ξ, μ]*)_b = c^c_ab ξ^a μ_c`.
    pub fn co_bracket(&self, g: &mut Graph, xi: &[Id], mu: &[Id]) -> Vec<Id> {
        let m = xi.len();
        (0..m)
            .map(|b| {
                let mut terms = Vec::new();
                for a in 0..m {
                    for c in 0..m {
                        if !g.is_const(self.c[c][a][b], 0.0) {
                            terms.push(g.mul(&[self.c[c][a][b], xi[a], mu[c]]));
                        }
                    }
                }
                g.add(&terms)
            })
            .collect()
    }
}

/// Constant matrices `A_a` with `Ψ(q)[:, a] = A_a q`, if the frame has that form.
fn linear_action(g: &mut Graph, psi: &[Vec<Id>], q: &[Id]) -> Result<Option<Vec<Vec<Vec<Id>>>>, FrameError> {
    let (n, m) = (q.len(), psi.first().map_or(0, Vec::len));
    let mut mats: Vec<Vec<f64>> = Vec::with_capacity(m); // A_a flattened row-major
    for a in 0..m {
        let col: Vec<Id> = (0..n).map(|i| psi[i][a]).collect();
        let d = jacobian(g, &col, q);
        let mut flat = Vec::with_capacity(n * n);
        for row in &d {
            for &e in row {
                match g.as_const(e) {
                    Some(c) => flat.push(c),
                    None => return Ok(None),
                }
            }
        }
        // Ψ[:, a] must equal A_a q exactly (no affine part).
        for k in 0..3 {
            for i in 0..n {
                let lhs = g.eval(psi[i][a], &|s| sample(k, s as usize));
                let rhs: f64 = (0..n)
                    .map(|j| flat[i * n + j] * g.eval(q[j], &|s| sample(k, s as usize)))
                    .sum();
                if (lhs - rhs).abs() > 1e-12 * (1.0 + lhs.abs()) {
                    return Ok(None);
                }
            }
        }
        mats.push(flat);
    }
    // Solve [A_a, A_b] = -c^c_ab A_c in the span of the A_c (least squares via normal equations).
    let nn = n * n;
    let gram: Vec<Vec<f64>> = (0..m)
        .map(|i| (0..m).map(|j| (0..nn).map(|k| mats[i][k] * mats[j][k]).sum()).collect())
        .collect();
    let zero = g.constant(0.0);
    let mut c = vec![vec![vec![zero; m]; m]; m];
    for a in 0..m {
        for b in 0..m {
            let comm: Vec<f64> = (0..n)
                .flat_map(|i| (0..n).map(move |j| (i, j)))
                .map(|(i, j)| {
                    (0..n)
                        .map(|k| mats[a][i * n + k] * mats[b][k * n + j] - mats[b][i * n + k] * mats[a][k * n + j])
                        .sum()
                })
                .collect();
            if comm.iter().all(|&x| x == 0.0) {
                continue;
            }
            let rhs: Vec<f64> = (0..m)
                .map(|i| -(0..nn).map(|k| mats[i][k] * comm[k]).sum::<f64>())
                .collect();
            let coef = solve_dense(gram.clone(), rhs).ok_or_else(|| {
                FrameError(
                    "the frame's matrices A_a are linearly dependent; choose independent quasi-velocities".into(),
                )
            })?;
            for (k, &x) in comm.iter().enumerate() {
                let back: f64 = -(0..m).map(|cc| coef[cc] * mats[cc][k]).sum::<f64>();
                if (back - x).abs() > 1e-9 * (1.0 + x.abs()) {
                    return Err(FrameError(format!(
                        "the commutator of frame fields {a} and {b} is not in the span of the frame: the frame is not a Lie algebra action"
                    )));
                }
            }
            for (cc, &x) in coef.iter().enumerate() {
                // The coefficients are exact small rationals in practice; round off the solve's noise.
                let r = (x * 1e9).round() / 1e9;
                c[cc][a][b] = g.constant(r);
            }
        }
    }
    Ok(Some(c))
}

/// `c(q) = Ψ(q)⁻¹ [u_a, u_b](q)` for a square frame.
fn invertible(g: &mut Graph, psi: &[Vec<Id>], q: &[Id]) -> Result<Vec<Vec<Vec<Id>>>, FrameError> {
    let n = q.len();
    let cols: Vec<Vec<Id>> = (0..n).map(|a| (0..n).map(|i| psi[i][a]).collect()).collect();
    let dcols: Vec<Vec<Vec<Id>>> = cols.iter().map(|u| jacobian(g, u, q)).collect();
    let mut pairs = Vec::new();
    let mut rhs: Vec<Vec<Id>> = vec![Vec::new(); n];
    for a in 0..n {
        for b in 0..n {
            // [u_a, u_b] = Du_b · u_a − Du_a · u_b
            for (i, r) in rhs.iter_mut().enumerate() {
                let mut t = Vec::new();
                for j in 0..n {
                    let x = g.mul2(dcols[b][i][j], cols[a][j]);
                    let y = g.mul2(dcols[a][i][j], cols[b][j]);
                    t.push(g.sub(x, y));
                }
                r.push(g.add(&t));
            }
            pairs.push((a, b));
        }
    }
    let sol =
        solve_frame(g, psi, &rhs).ok_or_else(|| FrameError("the frame matrix Ψ(q) is singular everywhere".into()))?;
    let zero = g.constant(0.0);
    let mut c = vec![vec![vec![zero; n]; n]; n];
    for (k, &(a, b)) in pairs.iter().enumerate() {
        for (cc, row) in sol.iter().enumerate() {
            c[cc][a][b] = row[k];
        }
    }
    Ok(c)
}

/// Frames up to this size are inverted by cofactors (`n² 2ⁿ` nodes at most);
/// larger ones by symbolic elimination, whose pivots may vanish inside the
/// frame's domain.
const COFACTOR_LIMIT: usize = 10;

/// `Ψ⁻¹ b` for a square frame matrix, as `adj(Ψ) b / det Ψ`. Symbolic
/// elimination has to fix its pivots at compile time, in declaration order,
/// and a rotation has no entry that is non-zero everywhere: the sleigh's
/// frame with `velocities { om, u, w }` pivoted on `sin(th)` and divided by
/// zero at `th = 0`. The cofactor form divides by `det Ψ` only, which
/// vanishes exactly where the frame stops being a frame, whatever the order.
/// `None` when `det Ψ` is structurally zero.
fn solve_frame(g: &mut Graph, psi: &[Vec<Id>], b: &[Vec<Id>]) -> Option<Vec<Vec<Id>>> {
    let n = psi.len();
    if n > COFACTOR_LIMIT {
        return linsolve::solve(g, psi, b);
    }
    let all = (1u32 << n) - 1;
    let mut memo = std::collections::HashMap::new();
    let det = minor(g, psi, all, all, &mut memo);
    if g.is_const(det, 0.0) {
        return None;
    }
    let inv_det = g.powf(det, -1.0);
    // cof[i][j] = (−1)^(i+j) · det of Ψ without row i and column j
    let cof: Vec<Vec<Id>> = (0..n)
        .map(|i| {
            (0..n)
                .map(|j| {
                    let d = minor(g, psi, all & !(1 << i), all & !(1 << j), &mut memo);
                    if (i + j) % 2 == 0 {
                        d
                    } else {
                        g.neg(d)
                    }
                })
                .collect()
        })
        .collect();
    let k = b.first().map_or(0, Vec::len);
    Some(
        (0..n)
            .map(|c| {
                (0..k)
                    .map(|col| {
                        let t: Vec<Id> = (0..n).map(|i| g.mul2(cof[i][c], b[i][col])).collect();
                        let s = g.add(&t);
                        // A bracket that is ±u_c gives a numerator that is
                        // ±det Ψ term by term (the graph distributes the sign):
                        // a number, not a ratio that rounds.
                        if s == det {
                            g.constant(1.0)
                        } else if g.neg(s) == det {
                            g.constant(-1.0)
                        } else {
                            g.mul2(s, inv_det)
                        }
                    })
                    .collect()
            })
            .collect(),
    )
}

/// Determinant of the submatrix of `a` on the rows and columns whose bits are
/// set (equally many), by expansion along its first row; minors are shared
/// through `memo`.
fn minor(
    g: &mut Graph,
    a: &[Vec<Id>],
    rows: u32,
    cols: u32,
    memo: &mut std::collections::HashMap<(u32, u32), Id>,
) -> Id {
    if rows == 0 {
        return g.constant(1.0);
    }
    if let Some(&d) = memo.get(&(rows, cols)) {
        return d;
    }
    let r = rows.trailing_zeros() as usize;
    let mut terms = Vec::new();
    let mut sign = 1.0;
    for j in (0..a.len()).filter(|&j| cols & (1 << j) != 0) {
        if !g.is_const(a[r][j], 0.0) {
            let sub = minor(g, a, rows & !(1 << r), cols & !(1 << j), memo);
            let k = g.constant(sign);
            terms.push(g.mul(&[k, a[r][j], sub]));
        }
        sign = -sign;
    }
    let d = g.add(&terms);
    memo.insert((rows, cols), d);
    d
}

/// Dense Gaussian elimination with partial pivoting (tiny systems only).
pub(crate) fn solve_dense(mut a: Vec<Vec<f64>>, mut b: Vec<f64>) -> Option<Vec<f64>> {
    let n = b.len();
    for col in 0..n {
        let p = (col..n).max_by(|&i, &j| a[i][col].abs().total_cmp(&a[j][col].abs()))?;
        if a[p][col].abs() < 1e-12 {
            return None;
        }
        a.swap(col, p);
        b.swap(col, p);
        for r in col + 1..n {
            let f = a[r][col] / a[col][col];
            for k in col..n {
                a[r][k] -= f * a[col][k];
            }
            b[r] -= f * b[col];
        }
    }
    let mut x = vec![0.0; n];
    for i in (0..n).rev() {
        let s: f64 = (i + 1..n).map(|k| a[i][k] * x[k]).sum();
        x[i] = (b[i] - s) / a[i][i];
    }
    Some(x)
}
