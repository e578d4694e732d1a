//! Exact differentiation on the DAG.
//!
//! Derivatives are built with the same simplifying constructors, and memoized
//! per node, so the derivative of a shared sub-expression is built once.

use rustc_hash::FxHashMap as HashMap;

use super::graph::{Func, Graph, Id, Node};

/// Differentiates expressions with respect to one symbol, sharing work across
/// calls through a memo.
pub struct Differentiator {
    var: Id,
    memo: HashMap<Id, Id>,
}

impl Differentiator {
    /// Prepares `∂/∂var`; `var` must be a symbol node.
    pub fn new(var: Id) -> Self {
        Self {
            var,
            memo: HashMap::default(),
        }
    }

    /// `∂e/∂var`.
    pub fn diff(&mut self, g: &mut Graph, e: Id) -> Id {
        if let Some(&d) = self.memo.get(&e) {
            return d;
        }
        let d = match g.node(e).clone() {
            Node::Const(_) => g.constant(0.0),
            Node::Sym(_) => g.constant(if e == self.var { 1.0 } else { 0.0 }),
            Node::Add(ts) => {
                let ds: Vec<Id> = ts.iter().map(|&t| self.diff(g, t)).collect();
                g.add(&ds)
            }
            Node::Mul(fs) => {
                let mut terms = Vec::new();
                for i in 0..fs.len() {
                    let di = self.diff(g, fs[i]);
                    if g.is_const(di, 0.0) {
                        continue;
                    }
                    let mut prod: Vec<Id> = Vec::with_capacity(fs.len());
                    prod.extend(fs.iter().enumerate().filter(|&(j, _)| j != i).map(|(_, &f)| f));
                    prod.push(di);
                    terms.push(g.mul(&prod));
                }
                g.add(&terms)
            }
            Node::Pow(b, ex) => {
                let db = self.diff(g, b);
                let de = self.diff(g, ex);
                if g.is_const(de, 0.0) {
                    // d(b^n) = n b^(n-1) db
                    let m1 = g.constant(-1.0);
                    let nm1 = g.add2(ex, m1);
                    let p = g.pow(b, nm1);
                    g.mul(&[ex, p, db])
                } else {
                    // d(b^e) = b^e (de ln b + e db / b)
                    let lnb = g.call(Func::Ln, b);
                    let t1 = g.mul2(de, lnb);
                    let edb = g.mul2(ex, db);
                    let t2 = g.div(edb, b);
                    let s = g.add2(t1, t2);
                    g.mul2(e, s)
                }
            }
            Node::Atan2(y, x) => {
                // d atan2(y, x) = (x dy − y dx) / (x² + y²)
                let (dy, dx) = (self.diff(g, y), self.diff(g, x));
                let a = g.mul2(x, dy);
                let b = g.mul2(y, dx);
                let num = g.sub(a, b);
                let x2 = g.powf(x, 2.0);
                let y2 = g.powf(y, 2.0);
                let den = g.add2(x2, y2);
                g.div(num, den)
            }
            Node::Call(f, a) => {
                let da = self.diff(g, a);
                if g.is_const(da, 0.0) {
                    da
                } else {
                    let outer = match f {
                        Func::Sin => g.call(Func::Cos, a),
                        Func::Cos => {
                            let s = g.call(Func::Sin, a);
                            g.neg(s)
                        }
                        Func::Tan => {
                            let one = g.constant(1.0);
                            let t2 = g.powf(e, 2.0);
                            g.add2(one, t2)
                        }
                        Func::Exp => e,
                        Func::Ln => g.powf(a, -1.0),
                        // d asin a = (1 − a²)^(−1/2) da; d acos a = −(1 − a²)^(−1/2) da
                        Func::Asin | Func::Acos => {
                            let one = g.constant(1.0);
                            let a2 = g.powf(a, 2.0);
                            let d = g.sub(one, a2);
                            let r = g.powf(d, -0.5);
                            if f == Func::Asin {
                                r
                            } else {
                                g.neg(r)
                            }
                        }
                        Func::Atan => {
                            let one = g.constant(1.0);
                            let a2 = g.powf(a, 2.0);
                            let d = g.add2(one, a2);
                            g.powf(d, -1.0)
                        }
                        Func::Sinh => g.call(Func::Cosh, a),
                        Func::Cosh => g.call(Func::Sinh, a),
                        Func::Tanh => {
                            let one = g.constant(1.0);
                            let t2 = g.powf(e, 2.0);
                            g.sub(one, t2)
                        }
                    };
                    g.mul2(outer, da)
                }
            }
        };
        self.memo.insert(e, d);
        d
    }
}

/// Gradient of `e` with respect to each symbol of `vars`.
pub fn gradient(g: &mut Graph, e: Id, vars: &[Id]) -> Vec<Id> {
    // Only in the variables `e` reads: the derivative in another is zero,
    // which differentiating finds only after walking all of `e` (a chain's
    // constraint reads 6 of its 768 coordinates).
    let read: std::collections::HashSet<Id> = g.symbols_read(e).into_iter().collect();
    let zero = g.constant(0.0);
    vars.iter()
        .map(|&v| {
            if read.contains(&v) {
                Differentiator::new(v).diff(g, e)
            } else {
                zero
            }
        })
        .collect()
}

/// Dense Jacobian `∂fs[i]/∂vars[j]` (rows: functions), one memo per
/// variable, each function differentiated only in the variables it reads
/// (as in [`gradient`]).
pub fn jacobian(g: &mut Graph, fs: &[Id], vars: &[Id]) -> Vec<Vec<Id>> {
    let zero = g.constant(0.0);
    let column: std::collections::HashMap<Id, usize> = vars.iter().enumerate().map(|(j, &v)| (v, j)).collect();
    // readers[j]: the functions that read vars[j], in order.
    let mut readers: Vec<Vec<usize>> = vec![Vec::new(); vars.len()];
    for (i, &f) in fs.iter().enumerate() {
        for s in g.symbols_read(f) {
            if let Some(&j) = column.get(&s) {
                readers[j].push(i);
            }
        }
    }
    let mut rows = vec![vec![zero; vars.len()]; fs.len()];
    for (j, &v) in vars.iter().enumerate() {
        let mut d = Differentiator::new(v);
        for &i in &readers[j] {
            rows[i][j] = d.diff(g, fs[i]);
        }
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fd(g: &Graph, e: Id, var_index: u32, x: &[f64]) -> f64 {
        let h = 1e-6;
        let f = |d: f64| {
            g.eval(e, &|s| {
                if s == var_index {
                    x[s as usize] + d
                } else {
                    x[s as usize]
                }
            })
        };
        (f(h) - f(-h)) / (2.0 * h)
    }

    #[test]
    fn derivatives_match_finite_differences() {
        let mut g = Graph::new();
        let x = g.symbol("x");
        let y = g.symbol("y");
        // e = sin(x y) / sqrt(1 + x^2) + exp(y) ln(x) + tan(x)^3 + x^y
        let xy = g.mul2(x, y);
        let s = g.call(Func::Sin, xy);
        let one = g.constant(1.0);
        let x2 = g.powf(x, 2.0);
        let d = g.add2(one, x2);
        let r = g.sqrt(d);
        let a = g.div(s, r);
        let ey = g.call(Func::Exp, y);
        let lx = g.call(Func::Ln, x);
        let b = g.mul2(ey, lx);
        let tx = g.call(Func::Tan, x);
        let c = g.powf(tx, 3.0);
        let xpy = g.pow(x, y);
        let e = g.add(&[a, b, c, xpy]);
        let grad = gradient(&mut g, e, &[x, y]);
        let pt = [0.7, 1.3];
        for (k, &gk) in grad.iter().enumerate() {
            let exact = g.eval(gk, &|s| pt[s as usize]);
            let approx = fd(&g, e, k as u32, &pt);
            assert!(
                (exact - approx).abs() < 1e-8 * (1.0 + exact.abs()),
                "{k}: {exact} vs {approx}"
            );
        }
    }

    #[test]
    fn polynomial_derivative_is_canonical() {
        let mut g = Graph::new();
        let x = g.symbol("x");
        let x3 = g.powf(x, 3.0);
        let d = Differentiator::new(x).diff(&mut g, x3);
        let x2 = g.powf(x, 2.0);
        let expect = g.scale(3.0, x2);
        assert_eq!(d, expect);
        let dd = Differentiator::new(x).diff(&mut g, d);
        let expect2 = g.scale(6.0, x);
        assert_eq!(dd, expect2);
    }
}
