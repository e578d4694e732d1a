//! Values and directional derivatives of expressions at one point, without
//! building derivative expressions.
//!
//! A numerical test that needs a Jacobian only applied to vectors (`M v`,
//! `∂p/∂q · w`) can take each product as one forward-mode pass over the
//! expressions' nodes instead of differentiating every entry symbolically:
//! the symbolic Jacobian of a director chain's momenta has O(N²) entries
//! and took O(N³) to build, a pass costs the size of the expressions.

use rustc_hash::FxHashMap as HashMap;

use super::graph::{pow_value, Func, Graph, Id, Node, Through};

/// The nodes some roots reach, children before parents, and their values
/// at one point.
pub struct Point {
    /// reachable nodes in an order where each follows its children
    order: Vec<Id>,
    /// position of a node in `order`
    index: HashMap<Id, usize>,
    /// the value of each node of `order`
    value: Vec<f64>,
    /// the positions in `order` of each node's children, in the node's
    /// order: node `k`'s are `kids[first[k]..first[k + 1]]`. A tangent pass
    /// reads them instead of hashing each child (a director chain's
    /// invariant check takes one pass per velocity over an O(N²) graph).
    kids: Vec<usize>,
    first: Vec<usize>,
}

impl Point {
    /// Evaluates `roots` with symbol `s` at `value_of(s)`.
    pub fn new(g: &Graph, roots: &[Id], value_of: &dyn Fn(u32) -> f64) -> Self {
        Self::with_locals(g, roots, &[], value_of)
    }

    /// [`Point::new`] where each symbol of `locals`, `(symbol, definition)`,
    /// is its definition's value ([`super::Function::locals`]): its one
    /// child, through which tangents and gradients pass as well.
    pub fn with_locals(g: &Graph, roots: &[Id], locals: &[(Id, Id)], value_of: &dyn Fn(u32) -> f64) -> Self {
        let through = Through::new(g, locals);
        let order = through.post_order(roots);
        let index: HashMap<Id, usize> = order.iter().enumerate().map(|(k, &id)| (id, k)).collect();
        let (mut kids, mut first) = (Vec::new(), Vec::with_capacity(order.len() + 1));
        for &id in &order {
            first.push(kids.len());
            kids.extend(through.children(id).into_iter().map(|c| index[&c]));
        }
        first.push(kids.len());
        let mut point = Self {
            value: vec![0.0; order.len()],
            order,
            index,
            kids,
            first,
        };
        point.move_to(g, value_of);
        point
    }

    /// Evaluates the same roots at another point (symbol `s` at
    /// `value_of(s)`), on the nodes found by [`Point::new`]: a test at many
    /// points walks and indexes the expressions once (a chain's invariant
    /// test evaluates O(N²) nodes at each of its points).
    pub fn move_to(&mut self, g: &Graph, value_of: &dyn Fn(u32) -> f64) {
        for (k, &id) in self.order.iter().enumerate() {
            let kids = &self.kids[self.first[k]..self.first[k + 1]];
            let value = &self.value;
            let at = |j: usize| value[kids[j]];
            let x = match g.node(id) {
                Node::Const(bits) => f64::from_bits(*bits),
                // A local has its definition as its one child.
                Node::Sym(_) if kids.len() == 1 => at(0),
                Node::Sym(s) => value_of(*s),
                Node::Add(_) => (0..kids.len()).map(at).sum(),
                Node::Mul(_) => (0..kids.len()).map(at).product(),
                Node::Pow(_, _) => pow_value(at(0), at(1)),
                Node::Call(f, _) => f.apply(at(0)),
                Node::Atan2(_, _) => f64::atan2(at(0), at(1)),
            };
            self.value[k] = x;
        }
    }

    /// The value of `id`, one of the roots or a node they reach.
    pub fn value(&self, id: Id) -> Option<f64> {
        self.index.get(&id).map(|&k| self.value[k])
    }

    /// The derivative of each of `roots` (among those evaluated) along the
    /// direction that moves symbol `s` at rate `tangent_of(s)`.
    pub fn tangent(&self, g: &Graph, roots: &[Id], tangent_of: &dyn Fn(u32) -> f64) -> Vec<f64> {
        self.tangents(roots).along(g, tangent_of)
    }

    /// Derivatives of `roots` along one direction after another
    /// ([`Tangents::along`]): the nodes they reach are found once, and one
    /// buffer serves every pass (a pass per velocity over a chain's momenta,
    /// thousands at 512 links, each had searched and allocated anew).
    pub fn tangents<'p>(&'p self, roots: &'p [Id]) -> Tangents<'p> {
        // Only the nodes the roots reach: the point may hold far more (the
        // force beside the momentum), and a pass per direction visits them.
        // Visited in `order`'s order (children first), only those: a pass
        // per velocity over a chain's momenta does not step over the nodes
        // of its other quantities.
        let mut need = vec![false; self.order.len()];
        let mut needed = Vec::new();
        let mut stack: Vec<usize> = roots.iter().filter_map(|r| self.index.get(r).copied()).collect();
        while let Some(k) = stack.pop() {
            if !need[k] {
                need[k] = true;
                needed.push(k);
                stack.extend(&self.kids[self.first[k]..self.first[k + 1]]);
            }
        }
        needed.sort_unstable();
        Tangents {
            point: self,
            roots,
            needed,
            dot: vec![0.0; self.order.len()],
        }
    }

    /// The gradient of `root` (one of the roots) in every symbol it reads,
    /// by one reverse pass over its nodes: symbol number → derivative.
    /// Where a test needs all of one quantity's partial derivatives (a
    /// chain's angular momentum, O(N²) nodes, in its 6N coordinates and
    /// velocities), the symbolic gradient costs a pass per variable.
    pub fn gradient(&self, g: &Graph, root: Id) -> HashMap<u32, f64> {
        let mut out = HashMap::default();
        let Some(&top) = self.index.get(&root) else {
            return out;
        };
        // Children come before their parents in `order`: every node the
        // root reaches lies at or below it.
        let mut bar = vec![0.0; top + 1];
        bar[top] = 1.0;
        for k in (0..=top).rev() {
            let b = bar[k];
            if b == 0.0 {
                continue;
            }
            let kids = &self.kids[self.first[k]..self.first[k + 1]];
            let v = |j: usize| self.value[kids[j]];
            match g.node(self.order[k]) {
                Node::Const(_) => {}
                Node::Sym(_) if kids.len() == 1 => bar[kids[0]] += b,
                Node::Sym(s) => *out.entry(*s).or_insert(0.0) += b,
                Node::Add(_) => kids.iter().for_each(|&c| bar[c] += b),
                Node::Mul(_) => {
                    for i in 0..kids.len() {
                        let rest: f64 = (0..kids.len()).filter(|&j| j != i).map(v).product();
                        bar[kids[i]] += b * rest;
                    }
                }
                Node::Pow(_, e) => {
                    let (bv, ev) = (v(0), v(1));
                    bar[kids[0]] += b * ev * pow_value(bv, ev - 1.0);
                    // A constant exponent (the usual case) takes no share:
                    // the logarithm of a negative base would be NaN.
                    if !matches!(g.node(*e), Node::Const(_)) {
                        bar[kids[1]] += b * self.value[k] * bv.ln();
                    }
                }
                Node::Call(f, _) => bar[kids[0]] += b * outer(*f, v(0), self.value[k]),
                Node::Atan2(_, _) => {
                    let (yv, xv) = (v(0), v(1));
                    let r2 = xv * xv + yv * yv;
                    bar[kids[0]] += b * xv / r2;
                    bar[kids[1]] -= b * yv / r2;
                }
            }
        }
        out
    }
}

/// `f'(a)`, given `a` and `f(a)`.
fn outer(f: Func, a: f64, fa: f64) -> f64 {
    match f {
        Func::Sin => a.cos(),
        Func::Cos => -a.sin(),
        Func::Tan => 1.0 + fa * fa,
        Func::Exp => fa,
        Func::Ln => 1.0 / a,
        Func::Asin => (1.0 - a * a).powf(-0.5),
        Func::Acos => -(1.0 - a * a).powf(-0.5),
        Func::Atan => 1.0 / (1.0 + a * a),
        Func::Sinh => a.cosh(),
        Func::Cosh => a.sinh(),
        Func::Tanh => 1.0 - fa * fa,
    }
}

/// The nodes some roots of a [`Point`] reach, for derivatives along one
/// direction after another ([`Point::tangents`]).
pub struct Tangents<'p> {
    point: &'p Point,
    roots: &'p [Id],
    /// the reached nodes' positions, children first
    needed: Vec<usize>,
    /// every pass writes each reached node before any node reads it
    dot: Vec<f64>,
}

impl Tangents<'_> {
    /// The derivative of each root along the direction that moves symbol
    /// `s` at rate `tangent_of(s)`: [`Point::tangent`].
    pub fn along(&mut self, g: &Graph, tangent_of: &dyn Fn(u32) -> f64) -> Vec<f64> {
        let p = self.point;
        let dot = &mut self.dot;
        for &k in &self.needed {
            let id = p.order[k];
            // The children's positions, in `g.children`'s order: the
            // operands of each node below, as its match reads them.
            let kids = &p.kids[p.first[k]..p.first[k + 1]];
            let d = |j: usize| dot[kids[j]];
            let v = |j: usize| p.value[kids[j]];
            dot[k] = match g.node(id) {
                Node::Const(_) => 0.0,
                Node::Sym(_) if kids.len() == 1 => d(0),
                Node::Sym(s) => tangent_of(*s),
                Node::Add(_) => (0..kids.len()).map(d).sum(),
                Node::Mul(_) => {
                    // Σ_i ḟ_i Π_{j≠i} f_j, without dividing by a zero factor.
                    let mut sum = 0.0;
                    for i in 0..kids.len() {
                        let df = d(i);
                        if df != 0.0 {
                            let rest: f64 = (0..kids.len()).filter(|&j| j != i).map(v).product();
                            sum += df * rest;
                        }
                    }
                    sum
                }
                Node::Pow(_, _) => {
                    let (db, de) = (d(0), d(1));
                    let (bv, ev) = (v(0), v(1));
                    let mut t = 0.0;
                    if db != 0.0 {
                        t += ev * pow_value(bv, ev - 1.0) * db;
                    }
                    if de != 0.0 {
                        t += p.value[k] * bv.ln() * de;
                    }
                    t
                }
                Node::Call(f, _) => {
                    let da = d(0);
                    if da == 0.0 {
                        0.0
                    } else {
                        outer(*f, v(0), p.value[k]) * da
                    }
                }
                Node::Atan2(_, _) => {
                    let (yv, xv) = (v(0), v(1));
                    (xv * d(0) - yv * d(1)) / (xv * xv + yv * yv)
                }
            };
        }
        self.roots
            .iter()
            .map(|r| p.index.get(r).map_or(0.0, |&k| dot[k]))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sym::gradient;

    /// Every kind of node: the tangent equals the symbolic gradient's
    /// entries, evaluated, dotted with the direction, and the reverse pass
    /// gives those entries.
    #[test]
    fn tangents_are_the_symbolic_gradient_along_the_direction() {
        let mut g = Graph::new();
        let (x, y, z) = (g.symbol("x"), g.symbol("y"), g.symbol("z"));
        let sx = g.call(Func::Sin, x);
        let xy = g.mul(&[x, y, sx]);
        let p = g.powf(z, 2.5);
        let q = g.pow(x, y);
        let a = g.atan2(y, z);
        let c = g.constant(3.0);
        let e = g.call(Func::Exp, y);
        let t = g.call(Func::Tanh, z);
        let s = g.add(&[xy, p, q, a, c, e, t]);
        let l = g.call(Func::Ln, s);
        let roots = [s, l, xy];
        let vars = [x, y, z];
        let point = [0.7, 1.3, 0.4];
        let dir = [0.2, -0.5, 1.1];
        let numbers: Vec<u32> = vars
            .iter()
            .map(|&v| match g.node(v) {
                Node::Sym(k) => *k,
                _ => unreachable!("a symbol"),
            })
            .collect();
        let sym = |s: u32| numbers.iter().position(|&k| k == s);
        let value_of = |s: u32| sym(s).map_or(0.0, |i| point[i]);
        let tangent_of = |s: u32| sym(s).map_or(0.0, |i| dir[i]);
        // Built elsewhere and moved here: the same values as built here.
        let mut at = Point::new(&g, &roots, &|_| 0.25);
        at.move_to(&g, &value_of);
        let got = at.tangent(&g, &roots, &tangent_of);
        for (k, &r) in roots.iter().enumerate() {
            assert!(
                (at.value(r).unwrap() - g.eval(r, &value_of)).abs() < 1e-14,
                "value of root {k}"
            );
            let grad = gradient(&mut g, r, &vars);
            let want: f64 = grad.iter().zip(dir).map(|(&d, w)| g.eval(d, &value_of) * w).sum();
            // The reverse pass gives every entry of the same gradient.
            let reverse = at.gradient(&g, r);
            for (i, &d) in grad.iter().enumerate() {
                let (want, got) = (g.eval(d, &value_of), reverse.get(&numbers[i]).copied().unwrap_or(0.0));
                assert!(
                    (got - want).abs() < 1e-13 * want.abs().max(1.0),
                    "root {k}, ∂/∂{i}: reverse {got} against {want}"
                );
            }
            assert!(
                (got[k] - want).abs() < 1e-13 * want.abs().max(1.0),
                "root {k}: {} against {want}",
                got[k]
            );
        }
    }

    /// The recurrence `{name}_k = step(g, {name}_{k−1}, y_k)` from 1, as
    /// locals, with each member's expansion (its definition substituted).
    fn recurrence(
        g: &mut Graph,
        name: &str,
        ys: &[Id],
        step: impl Fn(&mut Graph, Id, Id) -> Id,
    ) -> (Vec<(Id, Id)>, crate::sym::SubstMap) {
        let (mut locals, mut expand) = (Vec::new(), crate::sym::SubstMap::default());
        let mut prev = g.constant(1.0);
        for (k, &y) in ys.iter().enumerate() {
            let a = g.symbol(&format!("{name}{k}"));
            let def = step(g, prev, y);
            let e = g.substitute(def, &expand);
            expand.insert(a, e);
            locals.push((a, def));
            prev = a;
        }
        (locals, expand)
    }

    /// Expressions that read a recurrence kept as locals (`a_k = a_{k−1} ·
    /// y_k + sin(x y_k)`, read by a sum and a product): their values,
    /// tangents and gradients through the locals, the derivative along a
    /// direction as locals (`directional`), and their degree through them,
    /// are those of the same expressions with the definitions substituted.
    #[test]
    fn locals_are_their_definitions() {
        use crate::sym::{directional, Differentiator};
        let mut g = Graph::new();
        let x = g.symbol("x");
        let ys: Vec<Id> = (0..6).map(|k| g.symbol(&format!("y{k}"))).collect();
        let (locals, expand) = recurrence(&mut g, "a", &ys, |g, prev, y| {
            let xy = g.mul2(x, y);
            let s = g.call(Func::Sin, xy);
            let prod = g.mul2(prev, y);
            g.add2(prod, s)
        });
        let (a2, a5) = (locals[2].0, locals[5].0);
        let sq = g.powf(a5, 2.0);
        let r0 = g.add(&[a2, sq, x]);
        let r1 = g.mul2(a2, a5);
        let roots = [r0, r1];
        let flat = g.substitute_all(&roots, &expand);
        let vars: Vec<Id> = std::iter::once(x).chain(ys.iter().copied()).collect();
        let number = |g: &Graph, v: Id| match g.node(v) {
            Node::Sym(k) => *k,
            _ => unreachable!("a symbol"),
        };
        let numbers: Vec<u32> = vars.iter().map(|&v| number(&g, v)).collect();
        let point: Vec<f64> = (0..vars.len()).map(|i| 0.3 + 0.17 * i as f64).collect();
        let dir: Vec<f64> = (0..vars.len()).map(|i| 1.0 - 0.3 * i as f64).collect();
        let at_index = |s: u32, of: &[f64]| numbers.iter().position(|&k| k == s).map_or(0.0, |i| of[i]);
        let value_of = |s: u32| at_index(s, &point);
        let tangent_of = |s: u32| at_index(s, &dir);
        let kept = Point::with_locals(&g, &roots, &locals, &value_of);
        let expanded = Point::new(&g, &flat, &value_of);
        let (tk, te) = (
            kept.tangent(&g, &roots, &tangent_of),
            expanded.tangent(&g, &flat, &tangent_of),
        );
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-13 * b.abs().max(1.0);
        for k in 0..2 {
            let (vk, ve) = (kept.value(roots[k]).unwrap(), expanded.value(flat[k]).unwrap());
            assert!(close(vk, ve), "value {k}: {vk} against {ve}");
            assert!(close(tk[k], te[k]), "tangent {k}: {} against {}", tk[k], te[k]);
            let (gk, ge) = (kept.gradient(&g, roots[k]), expanded.gradient(&g, flat[k]));
            for &n in &numbers {
                let (a, b) = (gk.get(&n).copied().unwrap_or(0.0), ge.get(&n).copied().unwrap_or(0.0));
                assert!(close(a, b), "∂{k}/∂{n}: {a} against {b}");
            }
            assert!(gk.keys().all(|n| numbers.contains(n)), "no local is a variable");
        }
        // The directional derivative as expressions, with its rates as locals.
        let us: Vec<Id> = (0..vars.len()).map(|i| g.symbol(&format!("u{i}"))).collect();
        let seeds: Vec<(Id, Id)> = vars.iter().copied().zip(us.iter().copied()).collect();
        let (d, rates) = directional(&mut g, &roots, &seeds, &locals, "__rate");
        let all: Vec<(Id, Id)> = locals.iter().chain(&rates).copied().collect();
        let u_numbers: Vec<u32> = us.iter().map(|&u| number(&g, u)).collect();
        let with_u = |s: u32| match u_numbers.iter().position(|&k| k == s) {
            Some(i) => dir[i],
            None => value_of(s),
        };
        let along = Point::with_locals(&g, &d, &all, &with_u);
        for k in 0..2 {
            let mut want = 0.0;
            for (i, &v) in vars.iter().enumerate() {
                let dv = Differentiator::new(v).diff(&mut g, flat[k]);
                want += g.eval(dv, &value_of) * dir[i];
            }
            let got = along.value(d[k]).unwrap();
            assert!(close(got, want), "directional {k}: {got} against {want}");
        }
        // Degree through locals: `b_k = b_{k−1} y_k + x` is of degree k + 1
        // in the ys, so b_2 b_5 of 3 + 6, as once substituted; a sine of
        // them is of no bounded degree.
        let (poly, expand) = recurrence(&mut g, "b", &ys, |g, prev, y| {
            let prod = g.mul2(prev, y);
            g.add2(prod, x)
        });
        let r = g.mul2(poly[2].0, poly[5].0);
        let r_flat = g.substitute(r, &expand);
        for d in [8, 9] {
            assert_eq!(g.degree_at_most_through(&[r], &ys, d, &poly), d == 9, "degree {d}");
            assert_eq!(g.degree_at_most(&[r_flat], &ys, d), d == 9, "degree {d}, substituted");
        }
        assert!(!g.degree_at_most_through(&[r0], &ys, 64, &locals), "sin(x y_k)");
    }
}
