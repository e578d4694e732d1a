//! Exact differentiation on the DAG.
//!
//! Derivatives are built with the same simplifying constructors, and memoized
//! per node, so the derivative of a shared sub-expression is built once.

use rustc_hash::FxHashMap as HashMap;

use super::graph::{Func, Graph, Id, Node};

/// Differentiates expressions with respect to one symbol, or along a
/// direction, sharing work across calls through a memo.
pub struct Differentiator {
    var: Option<Id>,
    /// each symbol's derivative along the direction (see
    /// [`Differentiator::along`]); a symbol not listed has none
    seeds: HashMap<Id, Id>,
    memo: HashMap<Id, Id>,
}

impl Differentiator {
    /// Prepares `∂/∂var`; `var` must be a symbol node.
    pub fn new(var: Id) -> Self {
        Self {
            var: Some(var),
            seeds: HashMap::default(),
            memo: HashMap::default(),
        }
    }

    /// Prepares the derivative along a direction in which symbol `s` moves
    /// at rate `d` for each `(s, d)` of `seeds` (a forward, directional
    /// derivative: one pass over an expression, where a Jacobian times the
    /// direction is a pass per symbol).
    pub fn along(seeds: &[(Id, Id)]) -> Self {
        Self {
            var: None,
            seeds: seeds.iter().copied().collect(),
            memo: HashMap::default(),
        }
    }

    /// Gives symbol `s` the rate `d` along the direction, before any
    /// expression that reads `s` is differentiated.
    pub fn seed(&mut self, s: Id, d: Id) {
        debug_assert!(!self.memo.contains_key(&s), "a symbol seeded after its use");
        self.seeds.insert(s, d);
    }

    /// `∂e/∂var`.
    pub fn diff(&mut self, g: &mut Graph, e: Id) -> Id {
        self.diff_within(g, e, None)
    }

    /// [`Differentiator::diff`], told which nodes read the variable
    /// (`reads(node)`, for every node `e` reaches): the others are zero
    /// without a walk through them. The derivative is the full walk's node.
    pub(crate) fn diff_reading(&mut self, g: &mut Graph, e: Id, reads: &dyn Fn(Id) -> bool) -> Id {
        self.diff_within(g, e, Some(reads))
    }

    /// [`Differentiator::diff`], told which nodes depend on the variable
    /// (`dependent(node)`, for every node `e` reaches): the others are zero
    /// without a walk through them.
    fn diff_within(&mut self, g: &mut Graph, e: Id, dependent: Option<&dyn Fn(Id) -> bool>) -> Id {
        if dependent.is_some_and(|d| !d(e)) {
            return g.constant(0.0);
        }
        if let Some(&d) = self.memo.get(&e) {
            return d;
        }
        let d = match g.node(e).clone() {
            Node::Const(_) => g.constant(0.0),
            Node::Sym(_) if self.var == Some(e) => g.constant(1.0),
            Node::Sym(_) => match self.seeds.get(&e) {
                Some(&d) => d,
                None => g.constant(0.0),
            },
            Node::Add(ts) => {
                let ds: Vec<Id> = ts.iter().map(|&t| self.diff_within(g, t, dependent)).collect();
                g.add(&ds)
            }
            Node::Mul(fs) => {
                let mut terms = Vec::new();
                for i in 0..fs.len() {
                    let di = self.diff_within(g, fs[i], dependent);
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
                let db = self.diff_within(g, b, dependent);
                let de = self.diff_within(g, ex, dependent);
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
                let (dy, dx) = (self.diff_within(g, y, dependent), self.diff_within(g, x, dependent));
                let a = g.mul2(x, dy);
                let b = g.mul2(y, dx);
                let num = g.sub(a, b);
                let x2 = g.powf(x, 2.0);
                let y2 = g.powf(y, 2.0);
                let den = g.add2(x2, y2);
                g.div(num, den)
            }
            Node::Call(f, a) => {
                let da = self.diff_within(g, a, dependent);
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

/// The derivatives of `exprs` along the direction `seeds` (see
/// [`Differentiator::along`]), where they read symbols defined by `locals`
/// (`(symbol, definition)` in order, a definition reading earlier ones:
/// [`super::Function::locals`]). Each local that moves along the direction
/// gets a symbol for its rate, named `{prefix}{k}` for the `k`-th local,
/// defined by the derivative of its definition: returned with the
/// derivatives, as locals the derivatives read. A recurrence's rates are a
/// recurrence too, as long as it is, where their expansion would not be.
pub fn directional(
    g: &mut Graph,
    exprs: &[Id],
    seeds: &[(Id, Id)],
    locals: &[(Id, Id)],
    prefix: &str,
) -> (Vec<Id>, Vec<(Id, Id)>) {
    let mut d = Differentiator::along(seeds);
    let mut rates = Vec::new();
    for (k, &(s, def)) in locals.iter().enumerate() {
        let ds = d.diff(g, def);
        if g.is_const(ds, 0.0) {
            continue;
        }
        let r = g.symbol(&format!("{prefix}{k}"));
        rates.push((r, ds));
        d.seed(s, r);
    }
    let out = exprs.iter().map(|&e| d.diff(g, e)).collect();
    (out, rates)
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
    jacobian_where(g, fs, vars, |_, _| true)
}

/// Whether every expression of `fs` is affine in `vars` (its Jacobian in
/// them reads none of them): by one pass over the graph where they are
/// written so ([`Graph::degree_at_most`]); only otherwise, since terms might
/// cancel, by the Jacobian (a Jacobian of a chain's momenta, or a gradient
/// of its angular momentum, is O(N³)).
pub fn affine_in(g: &mut Graph, fs: &[Id], vars: &[Id]) -> bool {
    if g.degree_at_most(fs, vars, 1) {
        return true;
    }
    let jac = jacobian(g, fs, vars);
    !g.depends_on_any(&jac.concat(), vars)
}

/// The Jacobian of gradients: `fs[i] = ∂φ/∂vars[of[i]]` for one scalar
/// `φ`, so that `∂fs[i]/∂vars[of[k]] = ∂fs[k]/∂vars[of[i]]` (the Hessian of
/// `φ` is symmetric). Each such pair is differentiated once, below the
/// diagonal, and the entry above it is the same node: a chain's kinetic
/// metric is dense and most of a long chain's derivation (3.8 s of the
/// 64-link director chain's 6 s), and its mirrored half need not be
/// derived again.
pub fn symmetric_jacobian(g: &mut Graph, fs: &[Id], vars: &[Id], of: &[usize]) -> Vec<Vec<Id>> {
    assert_eq!(fs.len(), of.len(), "one variable per gradient component");
    // row_of[j]: the function that is the gradient's component in vars[j]
    let mut row_of: Vec<Option<usize>> = vec![None; vars.len()];
    for (i, &j) in of.iter().enumerate() {
        row_of[j] = Some(i);
    }
    let mut rows = jacobian_where(g, fs, vars, |i, j| row_of[j].is_none() || j <= of[i]);
    for i in 0..fs.len() {
        for j in of[i] + 1..vars.len() {
            if let Some(k) = row_of[j] {
                rows[i][j] = rows[k][of[i]];
            }
        }
    }
    rows
}

/// The Jacobian of a whole gradient, `fs[i] = ∂φ/∂vars[i]`: the Hessian
/// of `φ` (see [`symmetric_jacobian`]).
pub fn hessian(g: &mut Graph, fs: &[Id], vars: &[Id]) -> Vec<Vec<Id>> {
    let of: Vec<usize> = (0..fs.len()).collect();
    symmetric_jacobian(g, fs, vars, &of)
}

/// [`jacobian`]'s entries `(i, j)` that `wanted` names; the others are zero.
fn jacobian_where(g: &mut Graph, fs: &[Id], vars: &[Id], wanted: impl Fn(usize, usize) -> bool) -> Vec<Vec<Id>> {
    let zero = g.constant(0.0);
    let column: std::collections::HashMap<Id, usize> = vars.iter().enumerate().map(|(j, &v)| (v, j)).collect();
    // readers[j]: the functions that read vars[j], in order.
    let mut readers: Vec<Vec<usize>> = vec![Vec::new(); vars.len()];
    let Some(&oldest) = vars.iter().min() else {
        return vec![Vec::new(); fs.len()];
    };
    for (i, &f) in fs.iter().enumerate() {
        for s in g.symbols_read_since(f, oldest) {
            if let Some(&j) = column.get(&s) {
                readers[j].push(i);
            }
        }
    }
    let mut rows = vec![vec![zero; vars.len()]; fs.len()];
    // Each variable's walk visits only the nodes that depend on it, found
    // upwards from the variable through the functions' nodes' parents: a
    // chain's momenta each read every velocity, and walking all of them
    // once per velocity was most of a 128-link derivation. The derivatives
    // are the walk's own (a node that does not depend on the variable has
    // derivative zero either way).
    let up = Parents::of(g, fs);
    let mut dependent = vec![false; g.len()];
    let mut marked: Vec<usize> = Vec::new();
    for (j, &v) in vars.iter().enumerate() {
        if !readers[j].iter().any(|&i| wanted(i, j)) {
            continue;
        }
        up.mark_from(v, &mut dependent, &mut marked);
        let mut d = Differentiator::new(v);
        let depends = |id: Id| dependent[id.index()];
        for &i in readers[j].iter().filter(|&&i| wanted(i, j)) {
            rows[i][j] = d.diff_within(g, fs[i], Some(&depends));
        }
        for &k in &marked {
            dependent[k] = false;
        }
        marked.clear();
    }
    rows
}

/// The parents of every node the roots reach, in compressed rows.
struct Parents {
    /// `list[start[k]..start[k + 1]]`: the parents of node `k`
    start: Vec<u32>,
    list: Vec<u32>,
}

impl Parents {
    fn of(g: &Graph, roots: &[Id]) -> Parents {
        let n = g.len();
        let mut seen = vec![false; n];
        let mut stack: Vec<Id> = roots.to_vec();
        let mut edges: Vec<(u32, u32)> = Vec::new();
        while let Some(x) = stack.pop() {
            if std::mem::replace(&mut seen[x.index()], true) {
                continue;
            }
            for c in g.children(x) {
                edges.push((c.index() as u32, x.index() as u32));
                stack.push(c);
            }
        }
        let mut start = vec![0u32; n + 1];
        for &(c, _) in &edges {
            start[c as usize + 1] += 1;
        }
        for k in 0..n {
            start[k + 1] += start[k];
        }
        let mut fill = start.clone();
        let mut list = vec![0u32; edges.len()];
        for &(c, p) in &edges {
            list[fill[c as usize] as usize] = p;
            fill[c as usize] += 1;
        }
        Parents { start, list }
    }

    /// Marks `v` and every node above it in `dependent`, listing them in
    /// `marked`.
    fn mark_from(&self, v: Id, dependent: &mut [bool], marked: &mut Vec<usize>) {
        let mut stack = vec![v.index()];
        while let Some(k) = stack.pop() {
            if std::mem::replace(&mut dependent[k], true) {
                continue;
            }
            marked.push(k);
            let (a, b) = (self.start[k] as usize, self.start[k + 1] as usize);
            stack.extend(self.list[a..b].iter().map(|&p| p as usize));
        }
    }
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
    fn jacobian_entries_are_the_full_walk_s_nodes() {
        // Functions of three variables sharing sub-expressions, with parts
        // that do not depend on some variables (powers, atan2, calls): the
        // walk restricted to dependent nodes must build the same nodes as
        // differentiating each entry alone, and evaluate like them.
        let mut g = Graph::new();
        let (x, y, z) = (g.symbol("x"), g.symbol("y"), g.symbol("z"));
        let xy = g.mul2(x, y);
        let s = g.call(Func::Sin, xy);
        let zz = g.powf(z, 2.5);
        let at = g.atan2(y, z);
        let r = g.powf(x, -0.5);
        let f0 = g.add(&[s, zz, at]);
        let f1 = g.mul(&[s, r, at]);
        let e = g.call(Func::Exp, zz);
        let f2 = g.add(&[e, r]);
        let fs = [f0, f1, f2];
        let vars = [x, y, z];
        let jac = jacobian(&mut g, &fs, &vars);
        for (i, &f) in fs.iter().enumerate() {
            for (j, &v) in vars.iter().enumerate() {
                let alone = Differentiator::new(v).diff(&mut g, f);
                assert_eq!(jac[i][j], alone, "entry ({i}, {j})");
            }
        }
        let pt = [0.7, 1.3, 0.4];
        for (i, &f) in fs.iter().enumerate() {
            for j in 0..3 {
                let exact = g.eval(jac[i][j], &|s| pt[s as usize]);
                let approx = fd(&g, f, j as u32, &pt);
                assert!(
                    (exact - approx).abs() < 1e-7 * (1.0 + exact.abs()),
                    "({i}, {j}): {exact} vs {approx}"
                );
            }
        }
    }

    #[test]
    fn a_derivative_told_which_nodes_read_the_variable_is_the_full_walk_s_node() {
        // Sub-expressions older than the variable (built before it, as a
        // model's quantities are before a step's unknowns) and ones beside
        // it: `symbols_read_since` sees only the newer symbols, and the
        // derivative walked only through the nodes that read the variable
        // is the node the full walk builds.
        let mut g = Graph::new();
        let (a, b) = (g.symbol("a"), g.symbol("b"));
        let ab = g.mul2(a, b);
        let big = g.call(Func::Sin, ab);
        let pw = g.powf(big, 2.5);
        let x = g.symbol("x");
        let y = g.symbol("y");
        let xy = g.mul2(x, pw);
        let ey = g.call(Func::Exp, y);
        let f = g.add(&[xy, ey, pw, b]);
        let mut since = g.symbols_read_since(f, x);
        since.sort();
        assert_eq!(since, vec![x, y]);
        let mut all = g.symbols_read(f);
        all.sort();
        assert_eq!(all, vec![a, b, x, y]);
        for v in [x, y] {
            let reads = |e: Id| g.symbols_read(e).contains(&v);
            let reading: std::collections::HashSet<Id> = (0..g.len() as u32).map(Id).filter(|&e| reads(e)).collect();
            let masked = Differentiator::new(v).diff_reading(&mut g, f, &|e| reading.contains(&e));
            let alone = Differentiator::new(v).diff(&mut g, f);
            assert_eq!(masked, alone);
        }
    }

    #[test]
    fn a_gradient_s_jacobian_is_derived_below_the_diagonal_and_mirrored() {
        // φ = sin(x y) z² + exp(x) y³ + atan2(y, z) x: its gradient in
        // (x, y, z), and a function `w` that is not a gradient component.
        let mut g = Graph::new();
        let (x, y, z) = (g.symbol("x"), g.symbol("y"), g.symbol("z"));
        let xy = g.mul2(x, y);
        let s = g.call(Func::Sin, xy);
        let z2 = g.powf(z, 2.0);
        let t0 = g.mul2(s, z2);
        let ex = g.call(Func::Exp, x);
        let y3 = g.powf(y, 3.0);
        let t1 = g.mul2(ex, y3);
        let at = g.atan2(y, z);
        let t2 = g.mul2(at, x);
        let phi = g.add(&[t0, t1, t2]);
        let vars = [x, y, z];
        let grad = gradient(&mut g, phi, &vars);
        let full = jacobian(&mut g, &grad, &vars);
        let h = hessian(&mut g, &grad, &vars);
        let pt = [0.7, 1.3, 0.4];
        for i in 0..3 {
            for j in 0..3 {
                if j <= i {
                    assert_eq!(h[i][j], full[i][j], "({i}, {j}) derived as before");
                } else {
                    assert_eq!(h[i][j], h[j][i], "({i}, {j}) mirrored");
                }
                let (a, b) = (
                    g.eval(h[i][j], &|s| pt[s as usize]),
                    g.eval(full[i][j], &|s| pt[s as usize]),
                );
                assert!((a - b).abs() < 1e-13 * (1.0 + b.abs()), "({i}, {j}): {a} vs {b}");
            }
        }
        // Two of the gradient's components, in z then y (the momenta of kept
        // velocities): their block is mirrored, the x column derived.
        let fs = [grad[2], grad[1]];
        let part = symmetric_jacobian(&mut g, &fs, &vars, &[2, 1]);
        assert_eq!(part[1][2], part[0][1], "∂(∂φ/∂y)/∂z is ∂(∂φ/∂z)/∂y");
        assert_eq!(part[0][1], full[2][1]);
        assert_eq!((part[0][0], part[1][0]), (full[2][0], full[1][0]));
        assert_eq!((part[0][2], part[1][1]), (full[2][2], full[1][1]));
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
