//! The hash-consed expression DAG and its canonicalizing constructors.
//!
//! Every expression is built through [`Graph`], which simplifies as it builds
//! (constant folding, neutral and absorbing elements, like terms and powers
//! merged) and stores each distinct node once. Equal sub-expressions therefore
//! share one [`Id`]: common-subexpression elimination comes by construction and
//! expressions never swell into trees.

use rustc_hash::FxHashMap as HashMap;

/// A substitution: symbol node → replacement expression.
pub type SubstMap = HashMap<Id, Id>;

/// Handle of a node in a [`Graph`]. Ids are ordered by creation, so a child
/// always has a smaller id than its parent.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub struct Id(pub u32);

impl Id {
    /// Position of the node in the graph's node table.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

pub use hamel_kernel::Func;

/// One node of the DAG. Children of `Add` and `Mul` are flattened and sorted, so
/// that commutative re-orderings hash to the same node.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub enum Node {
    /// A finite number, stored by its bits (never `-0.0`).
    Const(u64),
    /// A symbol: index into the graph's symbol table.
    Sym(u32),
    /// Sum of at least two terms; at most one constant, placed first.
    Add(Box<[Id]>),
    /// Product of at least two factors; at most one constant, placed first.
    Mul(Box<[Id]>),
    /// `base ^ exponent`.
    Pow(Id, Id),
    /// Elementary function.
    Call(Func, Id),
    /// `atan2(y, x)`.
    Atan2(Id, Id),
}

/// The expression store. See the module documentation.
#[derive(Default, Clone)]
pub struct Graph {
    nodes: Vec<Node>,
    /// per node: it holds no symbol (a number that folding left unfolded
    /// because it is not finite, such as `0 ^ -1`, unless it is a `Const`)
    closed: Vec<bool>,
    index: HashMap<Node, Id>,
    symbols: Vec<String>,
    symbol_index: HashMap<String, Id>,
}

impl std::fmt::Debug for Graph {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Graph({} nodes, {} symbols)", self.nodes.len(), self.symbols.len())
    }
}

impl Graph {
    /// An empty graph.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of distinct nodes stored.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// True when no node has been built.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The node behind an id.
    pub fn node(&self, id: Id) -> &Node {
        &self.nodes[id.index()]
    }

    /// How many symbols there are (numbered from 0).
    pub fn symbol_count(&self) -> usize {
        self.symbols.len()
    }

    /// Name of symbol number `s`.
    pub fn symbol_name(&self, s: u32) -> &str {
        &self.symbols[s as usize]
    }

    /// The value of a constant node.
    pub fn as_const(&self, id: Id) -> Option<f64> {
        match self.node(id) {
            Node::Const(bits) => Some(f64::from_bits(*bits)),
            _ => None,
        }
    }

    /// True when `id` is the constant `c`.
    pub fn is_const(&self, id: Id, c: f64) -> bool {
        self.as_const(id) == Some(c)
    }

    fn intern(&mut self, node: Node) -> Id {
        if let Some(&id) = self.index.get(&node) {
            return id;
        }
        let id = Id(u32::try_from(self.nodes.len()).expect("expression graph exceeds 2^32 nodes"));
        let closed = match &node {
            Node::Const(_) => true,
            Node::Sym(_) => false,
            Node::Add(xs) | Node::Mul(xs) => xs.iter().all(|x| self.closed[x.index()]),
            Node::Pow(a, b) | Node::Atan2(a, b) => self.closed[a.index()] && self.closed[b.index()],
            Node::Call(_, a) => self.closed[a.index()],
        };
        self.closed.push(closed);
        self.nodes.push(node.clone());
        self.index.insert(node, id);
        id
    }

    /// The symbol called `name`, created on first use.
    pub fn symbol(&mut self, name: &str) -> Id {
        if let Some(&id) = self.symbol_index.get(name) {
            return id;
        }
        let s = self.symbols.len() as u32;
        self.symbols.push(name.to_string());
        let id = self.intern(Node::Sym(s));
        self.symbol_index.insert(name.to_string(), id);
        id
    }

    /// A numeric constant. Non-finite values are kept as they are (the caller
    /// reports them); `-0.0` becomes `0.0`.
    pub fn constant(&mut self, value: f64) -> Id {
        let v = if value == 0.0 { 0.0 } else { value };
        self.intern(Node::Const(v.to_bits()))
    }

    /// `a + b`.
    pub fn add2(&mut self, a: Id, b: Id) -> Id {
        self.add(&[a, b])
    }

    /// `a - b`.
    pub fn sub(&mut self, a: Id, b: Id) -> Id {
        let nb = self.neg(b);
        self.add(&[a, nb])
    }

    /// `-a`.
    pub fn neg(&mut self, a: Id) -> Id {
        let m1 = self.constant(-1.0);
        self.mul(&[m1, a])
    }

    /// `a * b`.
    pub fn mul2(&mut self, a: Id, b: Id) -> Id {
        self.mul(&[a, b])
    }

    /// `c * a` for a number `c`.
    pub fn scale(&mut self, c: f64, a: Id) -> Id {
        let k = self.constant(c);
        self.mul(&[k, a])
    }

    /// `a / b`.
    pub fn div(&mut self, a: Id, b: Id) -> Id {
        let m1 = self.constant(-1.0);
        let inv = self.pow(b, m1);
        self.mul(&[a, inv])
    }

    /// `a ^ n` for a number `n`.
    pub fn powf(&mut self, a: Id, n: f64) -> Id {
        let e = self.constant(n);
        self.pow(a, e)
    }

    /// `sqrt(a)`, stored as `a ^ 0.5` so that powers of it merge.
    pub fn sqrt(&mut self, a: Id) -> Id {
        self.powf(a, 0.5)
    }

    /// Splits a term into (numeric coefficient, remaining monomial).
    fn split_coefficient(&mut self, t: Id) -> (f64, Id) {
        if let Node::Mul(fs) = self.node(t) {
            if let Some(c) = self.as_const(fs[0]) {
                let rest: Vec<Id> = fs[1..].to_vec();
                let r = if rest.len() == 1 {
                    rest[0]
                } else {
                    self.intern(Node::Mul(rest.into()))
                };
                return (c, r);
            }
        }
        (1.0, t)
    }

    /// Sum of `terms`: flattened, constants folded, like terms merged.
    pub fn add(&mut self, terms: &[Id]) -> Id {
        let mut flat = Vec::with_capacity(terms.len());
        for &t in terms {
            match self.node(t) {
                Node::Add(ts) => flat.extend_from_slice(ts),
                _ => flat.push(t),
            }
        }
        let mut constant = 0.0;
        let mut order: Vec<Id> = Vec::new();
        let mut coeffs: HashMap<Id, f64> = HashMap::default();
        for t in flat {
            if let Some(c) = self.as_const(t) {
                constant += c;
                continue;
            }
            let (c, rest) = self.split_coefficient(t);
            match coeffs.get_mut(&rest) {
                Some(v) => *v += c,
                None => {
                    coeffs.insert(rest, c);
                    order.push(rest);
                }
            }
        }
        let mut out = Vec::with_capacity(order.len() + 1);
        for rest in order {
            let c = coeffs[&rest];
            if c != 0.0 {
                let term = if c == 1.0 { rest } else { self.scale_raw(c, rest) };
                out.push(term);
            } else if self.closed[rest.index()] {
                // `inf - inf`: NaN, as in IEEE arithmetic, not 0
                return self.constant(f64::NAN);
            }
        }
        out.sort();
        if constant != 0.0 || out.is_empty() {
            let k = self.constant(constant);
            if out.is_empty() {
                return k;
            }
            out.insert(0, k);
        }
        if out.len() == 1 {
            return out[0];
        }
        self.intern(Node::Add(out.into()))
    }

    /// `c * m` for a monomial `m` without a coefficient, without re-merging powers.
    fn scale_raw(&mut self, c: f64, m: Id) -> Id {
        let k = self.constant(c);
        let mut fs = vec![k];
        match self.node(m) {
            Node::Mul(ms) => fs.extend_from_slice(ms),
            _ => fs.push(m),
        }
        self.intern(Node::Mul(fs.into()))
    }

    /// Product of `factors`: flattened, constants folded, powers of one base merged.
    pub fn mul(&mut self, factors: &[Id]) -> Id {
        let mut flat = Vec::with_capacity(factors.len());
        for &f in factors {
            match self.node(f) {
                Node::Mul(fs) => flat.extend_from_slice(fs),
                _ => flat.push(f),
            }
        }
        let mut constant = 1.0;
        let mut order: Vec<Id> = Vec::new();
        let mut exps: HashMap<Id, Vec<Id>> = HashMap::default();
        for &f in &flat {
            if let Some(c) = self.as_const(f) {
                constant *= c;
                continue;
            }
            let (base, exp) = match self.node(f) {
                Node::Pow(b, e) => (*b, *e),
                _ => (f, self.constant(1.0)),
            };
            match exps.get_mut(&base) {
                Some(v) => v.push(exp),
                None => {
                    exps.insert(base, vec![exp]);
                    order.push(base);
                }
            }
        }
        if constant == 0.0 {
            return self.zero_times(&flat);
        }
        let mut out = Vec::with_capacity(order.len() + 1);
        for base in order {
            let es = exps.remove(&base).unwrap_or_default();
            let p = if es.len() == 1 {
                if self.is_const(es[0], 1.0) {
                    base
                } else {
                    self.intern(Node::Pow(base, es[0]))
                }
            } else {
                let e = self.add(&es);
                self.pow(base, e)
            };
            match self.node(p) {
                Node::Const(bits) => constant *= f64::from_bits(*bits),
                Node::Mul(ps) => {
                    let ps = ps.to_vec();
                    for q in ps {
                        match self.as_const(q) {
                            Some(c) => constant *= c,
                            None => out.push(q),
                        }
                    }
                }
                _ => out.push(p),
            }
        }
        if constant == 0.0 {
            return self.zero_times(&flat);
        }
        out.sort();
        // A number times a single sum distributes, so that `s - s` and
        // `2 (a + b) - 2 a` cancel as like terms.
        if out.len() == 1 && constant != 1.0 {
            if let Node::Add(ts) = self.node(out[0]).clone() {
                let scaled: Vec<Id> = ts.iter().map(|&t| self.scale(constant, t)).collect();
                return self.add(&scaled);
            }
        }
        if constant != 1.0 || out.is_empty() {
            let k = self.constant(constant);
            if out.is_empty() {
                return k;
            }
            out.insert(0, k);
        }
        if out.len() == 1 {
            return out[0];
        }
        self.intern(Node::Mul(out.into()))
    }

    /// `0 * f1 * f2 ...` for the factors `fs`: `0`, the
    /// symbolic simplification that keeps derivatives small, unless a factor
    /// is a number that is not finite (left unfolded, such as `0 ^ -1`):
    /// then NaN, as IEEE arithmetic gives (`0 / 0`, `0 * inf`), for the
    /// caller to refuse like any other non-finite value.
    fn zero_times(&mut self, fs: &[Id]) -> Id {
        if fs.iter().any(|&f| self.closed[f.index()] && self.as_const(f).is_none()) {
            return self.constant(f64::NAN);
        }
        self.constant(0.0)
    }

    /// Whether `a · b` is the number 0 as [`Graph::mul`] folds it: one
    /// factor is 0 and the other finite (`0 · inf` is NaN), so that a sum
    /// may leave the product out.
    pub fn is_zero_product(&self, a: Id, b: Id) -> bool {
        (self.is_const(a, 0.0) && self.zero_absorbs(b)) || (self.is_const(b, 0.0) && self.zero_absorbs(a))
    }

    /// Whether `0 · f` folds to 0: `f` is a finite number or reads a
    /// symbol (`0 · inf`, and `0 · 0^-1` left unfolded, are NaN).
    pub fn zero_absorbs(&self, f: Id) -> bool {
        match self.as_const(f) {
            Some(c) => c.is_finite(),
            None => !self.closed[f.index()],
        }
    }

    /// `base ^ exp`, with numeric folding and `(x^a)^n = x^(a n)` for integer `n`.
    pub fn pow(&mut self, base: Id, exp: Id) -> Id {
        let e = self.as_const(exp);
        if e == Some(0.0) {
            return self.constant(1.0);
        }
        if e == Some(1.0) {
            return base;
        }
        if let (Some(b), Some(e)) = (self.as_const(base), e) {
            let v = b.powf(e);
            if v.is_finite() {
                return self.constant(v);
            }
        }
        if self.is_const(base, 1.0) {
            return base;
        }
        if let Some(n) = e.filter(|n| n.fract() == 0.0) {
            match self.node(base).clone() {
                Node::Pow(b, a) => {
                    if let Some(a) = self.as_const(a) {
                        return self.powf(b, a * n);
                    }
                }
                Node::Mul(fs) => {
                    let ps: Vec<Id> = fs.iter().map(|&f| self.pow(f, exp)).collect();
                    return self.mul(&ps);
                }
                _ => {}
            }
        }
        self.intern(Node::Pow(base, exp))
    }

    /// `atan2(y, x)`, the angle of the point `(x, y)`; folded for numbers.
    pub fn atan2(&mut self, y: Id, x: Id) -> Id {
        if let (Some(a), Some(b)) = (self.as_const(y), self.as_const(x)) {
            return self.constant(f64::atan2(a, b));
        }
        self.intern(Node::Atan2(y, x))
    }

    /// `f(a)`, folded when `a` is a number.
    pub fn call(&mut self, f: Func, a: Id) -> Id {
        if let Some(x) = self.as_const(a) {
            let v = f.apply(x);
            if v.is_finite() {
                return self.constant(v);
            }
        }
        match (f, self.node(a)) {
            (Func::Ln, Node::Call(Func::Exp, x)) => return *x,
            (Func::Exp, Node::Call(Func::Ln, x)) => return *x,
            _ => {}
        }
        self.intern(Node::Call(f, a))
    }

    /// Replaces symbols by expressions (`map` from symbol node to replacement).
    pub fn substitute(&mut self, root: Id, map: &HashMap<Id, Id>) -> Id {
        let mut memo = HashMap::default();
        self.substitute_memo(root, map, &mut memo)
    }

    /// [`Graph::substitute`] over many roots sharing one memo.
    pub fn substitute_all(&mut self, roots: &[Id], map: &HashMap<Id, Id>) -> Vec<Id> {
        let mut memo = HashMap::default();
        roots.iter().map(|&r| self.substitute_memo(r, map, &mut memo)).collect()
    }

    fn substitute_memo(&mut self, root: Id, map: &HashMap<Id, Id>, memo: &mut HashMap<Id, Id>) -> Id {
        if let Some(&r) = memo.get(&root) {
            return r;
        }
        let out = match self.node(root).clone() {
            Node::Const(_) => root,
            Node::Sym(_) => map.get(&root).copied().unwrap_or(root),
            Node::Add(ts) => {
                let ts: Vec<Id> = ts.iter().map(|&t| self.substitute_memo(t, map, memo)).collect();
                self.add(&ts)
            }
            Node::Mul(fs) => {
                let fs: Vec<Id> = fs.iter().map(|&f| self.substitute_memo(f, map, memo)).collect();
                self.mul(&fs)
            }
            Node::Pow(b, e) => {
                let b = self.substitute_memo(b, map, memo);
                let e = self.substitute_memo(e, map, memo);
                self.pow(b, e)
            }
            Node::Call(f, a) => {
                let a = self.substitute_memo(a, map, memo);
                self.call(f, a)
            }
            Node::Atan2(y, x) => {
                let y = self.substitute_memo(y, map, memo);
                let x = self.substitute_memo(x, map, memo);
                self.atan2(y, x)
            }
        };
        memo.insert(root, out);
        out
    }

    /// The children of a node, in order.
    pub fn children(&self, id: Id) -> Vec<Id> {
        match self.node(id) {
            Node::Const(_) | Node::Sym(_) => vec![],
            Node::Add(xs) | Node::Mul(xs) => xs.to_vec(),
            Node::Pow(b, e) => vec![*b, *e],
            Node::Call(_, a) => vec![*a],
            Node::Atan2(y, x) => vec![*y, *x],
        }
    }

    /// The symbol nodes `root` reads, each once, in the order a depth-first
    /// walk from `root` meets them.
    pub fn symbols_read(&self, root: Id) -> Vec<Id> {
        self.symbols_read_since(root, Id(0))
    }

    /// The symbols `root` reads that are no older than `oldest`: nodes older
    /// than it are not entered (a child is older than its parent), so the
    /// model's quantities a step's row reaches are not walked when only the
    /// step's own symbols are sought (a long chain's rows each reach large
    /// shared sub-expressions of its state).
    pub fn symbols_read_since(&self, root: Id, oldest: Id) -> Vec<Id> {
        let (mut seen, mut stack, mut found) = (std::collections::HashSet::new(), vec![root], Vec::new());
        while let Some(x) = stack.pop() {
            if x < oldest || !seen.insert(x) {
                continue;
            }
            match self.node(x) {
                Node::Sym(_) => found.push(x),
                _ => stack.extend(self.children(x)),
            }
        }
        found
    }

    /// True when the expression `root` contains any of the symbol nodes in `syms`.
    pub fn depends_on(&self, root: Id, syms: &[Id]) -> bool {
        self.depends_on_any(&[root], syms)
    }

    /// True when any of the expressions `roots` contains any of the symbol
    /// nodes in `syms`: one walk, each node once (a walk per expression,
    /// each with a flag per node of the graph, was a tenth of a 256-link
    /// chain's derivation). Nothing is walked for no symbols, and nodes
    /// older than every symbol sought are not entered (a child is older
    /// than its parent).
    pub fn depends_on_any(&self, roots: &[Id], syms: &[Id]) -> bool {
        let (Some(&oldest), Some(&newest)) = (syms.iter().min(), syms.iter().max()) else {
            return false;
        };
        // A flag per id in the symbols' range, not a search of `syms` per
        // node: with a chain's velocities (3N of them) the search made the
        // walk O(nodes · N).
        let mut sought = vec![false; newest.index() - oldest.index() + 1];
        for s in syms {
            sought[s.index() - oldest.index()] = true;
        }
        let mut seen = vec![false; self.nodes.len()];
        let mut stack: Vec<Id> = roots.to_vec();
        while let Some(id) = stack.pop() {
            if id < oldest || seen[id.index()] {
                continue;
            }
            seen[id.index()] = true;
            if id <= newest && sought[id.index() - oldest.index()] {
                return true;
            }
            stack.extend(self.children(id));
        }
        false
    }

    /// True when every expression of `roots` is, as written, a polynomial
    /// of degree at most `d` in the symbols `syms` (coefficients free of
    /// them): sums take the largest degree, products the sum, integer powers
    /// the multiple, and a function, a non-integer power or `atan2` of an
    /// argument that reads them counts as of unbounded degree. Sufficient,
    /// not necessary: terms that cancel are not seen to. One pass over the
    /// nodes from the oldest symbol to the newest root (a child is older
    /// than its parent), where a Hessian costs a derivative per entry.
    pub fn degree_at_most(&self, roots: &[Id], syms: &[Id], d: u32) -> bool {
        let (Some(&oldest), Some(&newest)) = (syms.iter().min(), roots.iter().max()) else {
            return true;
        };
        if newest < oldest {
            return true;
        }
        let base = oldest.index();
        let mut degree = vec![0u32; newest.index() - base + 1];
        for s in syms {
            if *s <= newest {
                degree[s.index() - base] = 1;
            }
        }
        let of = |degree: &[u32], id: Id| if id < oldest { 0 } else { degree[id.index() - base] };
        for k in base..=newest.index() {
            let id = Id(k as u32);
            if let Some(deg) = self.node_degree(id, &|x| of(&degree, x)) {
                degree[k - base] = deg;
            }
        }
        roots.iter().all(|&r| of(&degree, r) <= d)
    }

    /// [`Graph::degree_at_most`] where each symbol of `locals`, `(symbol,
    /// definition)`, has its definition's degree ([`super::Function::locals`]):
    /// one pass over the nodes the roots reach through them.
    pub fn degree_at_most_through(&self, roots: &[Id], syms: &[Id], d: u32, locals: &[(Id, Id)]) -> bool {
        if locals.is_empty() {
            return self.degree_at_most(roots, syms, d);
        }
        let through = Through::new(self, locals);
        let mut degree: HashMap<Id, u32> = syms.iter().map(|&s| (s, 1)).collect();
        for id in through.post_order(roots) {
            if degree.contains_key(&id) {
                continue;
            }
            let of = |x: Id| degree.get(&x).copied().unwrap_or(0);
            // A constant or symbol has none, a local its definition's.
            let deg = match self.node_degree(id, &of) {
                Some(deg) => deg,
                None => through.children(id).first().map_or(0, |&def| of(def)),
            };
            degree.insert(id, deg);
        }
        roots.iter().all(|r| degree.get(r).copied().unwrap_or(0) <= d)
    }

    /// The degree of node `id` in the symbols whose degrees `of` gives
    /// (see [`Graph::degree_at_most`]) from its children's; `None` for a
    /// constant or a symbol, whose degree is given.
    fn node_degree(&self, id: Id, of: &dyn Fn(Id) -> u32) -> Option<u32> {
        const UNBOUNDED: u32 = u32::MAX;
        Some(match self.node(id) {
            Node::Const(_) | Node::Sym(_) => return None,
            Node::Add(xs) => xs.iter().map(|&x| of(x)).max().unwrap_or(0),
            Node::Mul(xs) => xs.iter().fold(0u32, |acc, &x| acc.saturating_add(of(x))),
            Node::Pow(b, e) => match (of(*b), self.node(*e)) {
                (0, _) if of(*e) == 0 => 0,
                (db, Node::Const(bits)) => {
                    let k = f64::from_bits(*bits);
                    if k >= 0.0 && k.fract() == 0.0 && k <= 64.0 {
                        db.saturating_mul(k as u32)
                    } else {
                        UNBOUNDED
                    }
                }
                _ => UNBOUNDED,
            },
            Node::Call(_, a) => {
                if of(*a) == 0 {
                    0
                } else {
                    UNBOUNDED
                }
            }
            Node::Atan2(y, x) => {
                if of(*y) == 0 && of(*x) == 0 {
                    0
                } else {
                    UNBOUNDED
                }
            }
        })
    }

    /// Number of operations if the expressions were trees (no sharing): what
    /// CSE saves, compared with the instructions of a [`Tape`](super::Tape). Saturates at `u64::MAX`.
    pub fn tree_size(&self, roots: &[Id]) -> u64 {
        let mut memo: Vec<Option<u64>> = vec![None; self.nodes.len()];
        let mut total: u64 = 0;
        for &r in roots {
            total = total.saturating_add(self.tree_size_of(r, &mut memo));
        }
        total
    }

    fn tree_size_of(&self, id: Id, memo: &mut Vec<Option<u64>>) -> u64 {
        if let Some(v) = memo[id.index()] {
            return v;
        }
        let ch = self.children(id);
        let v = if ch.is_empty() {
            0
        } else {
            ch.iter()
                .fold(1u64, |acc, &c| acc.saturating_add(self.tree_size_of(c, memo)))
        };
        memo[id.index()] = Some(v);
        v
    }

    /// Evaluates `root` with symbol values from `value_of` (by symbol number).
    pub fn eval(&self, root: Id, value_of: &dyn Fn(u32) -> f64) -> f64 {
        let mut memo: HashMap<Id, f64> = HashMap::default();
        self.eval_memo(root, value_of, &mut memo)
    }

    /// Evaluates every root of `roots` with symbol values from `value_of`,
    /// sharing the work on common subexpressions.
    pub fn eval_all(&self, roots: &[Id], value_of: &dyn Fn(u32) -> f64) -> Vec<f64> {
        let mut memo: HashMap<Id, f64> = HashMap::default();
        roots.iter().map(|&r| self.eval_memo(r, value_of, &mut memo)).collect()
    }

    fn eval_memo(&self, id: Id, value_of: &dyn Fn(u32) -> f64, memo: &mut HashMap<Id, f64>) -> f64 {
        if let Some(&v) = memo.get(&id) {
            return v;
        }
        let v = match self.node(id) {
            Node::Const(bits) => f64::from_bits(*bits),
            Node::Sym(s) => value_of(*s),
            Node::Add(ts) => ts.iter().map(|&t| self.eval_memo(t, value_of, memo)).sum(),
            Node::Mul(fs) => fs.iter().map(|&f| self.eval_memo(f, value_of, memo)).product(),
            Node::Pow(b, e) => {
                let b = self.eval_memo(*b, value_of, memo);
                let e = self.eval_memo(*e, value_of, memo);
                pow_value(b, e)
            }
            Node::Call(f, a) => f.apply(self.eval_memo(*a, value_of, memo)),
            Node::Atan2(y, x) => f64::atan2(self.eval_memo(*y, value_of, memo), self.eval_memo(*x, value_of, memo)),
        };
        memo.insert(id, v);
        v
    }

    /// Renders an expression in model-file syntax (for messages and tests).
    pub fn display(&self, id: Id) -> String {
        match self.node(id) {
            Node::Const(bits) => format!("{}", f64::from_bits(*bits)),
            Node::Sym(s) => self.symbols[*s as usize].clone(),
            Node::Add(ts) => {
                let parts: Vec<String> = ts.iter().map(|&t| self.display(t)).collect();
                format!("({})", parts.join(" + "))
            }
            Node::Mul(fs) => {
                let parts: Vec<String> = fs.iter().map(|&f| self.display(f)).collect();
                parts.join("*")
            }
            Node::Pow(b, e) => format!("{}^{}", self.display_atom(*b), self.display_atom(*e)),
            Node::Call(f, a) => format!("{}({})", f.name(), self.display(*a)),
            Node::Atan2(y, x) => format!("atan2({}, {})", self.display(*y), self.display(*x)),
        }
    }

    fn display_atom(&self, id: Id) -> String {
        match self.node(id) {
            Node::Mul(_) => format!("({})", self.display(id)),
            Node::Const(bits) if f64::from_bits(*bits) < 0.0 => format!("({})", self.display(id)),
            _ => self.display(id),
        }
    }
}

/// The graph read through locals ([`super::Function::locals`]): a local
/// symbol's one child is its definition, so that walks, values, tangents
/// and degrees pass through it.
pub struct Through<'g> {
    g: &'g Graph,
    defs: HashMap<Id, Id>,
}

impl<'g> Through<'g> {
    /// `g` with the symbols of `locals`, `(symbol, definition)`, standing
    /// for their definitions.
    pub fn new(g: &'g Graph, locals: &[(Id, Id)]) -> Self {
        Through {
            g,
            defs: locals.iter().copied().collect(),
        }
    }

    /// The children of a node, in order: a local's definition alone.
    pub fn children(&self, id: Id) -> Vec<Id> {
        match self.defs.get(&id) {
            Some(&def) => vec![def],
            None => self.g.children(id),
        }
    }

    /// Every node `roots` reach, each once, children before their parents.
    /// Iterative: expressions can be deeper than a recursion's stack allows
    /// (long sums built term by term, a chain's locals reading one another
    /// in a sequence as long as the chain).
    pub fn post_order(&self, roots: &[Id]) -> Vec<Id> {
        let mut order = Vec::new();
        let mut done: HashMap<Id, ()> = HashMap::default();
        let mut stack: Vec<(Id, bool)> = roots.iter().rev().map(|&r| (r, false)).collect();
        while let Some((id, expanded)) = stack.pop() {
            if done.contains_key(&id) {
                continue;
            }
            if expanded {
                done.insert(id, ());
                order.push(id);
                continue;
            }
            stack.push((id, true));
            for c in self.children(id).into_iter().rev() {
                if !done.contains_key(&c) {
                    stack.push((c, false));
                }
            }
        }
        order
    }
}

/// `b ^ e` as the generated code computes it (integer powers by `powi`).
pub fn pow_value(b: f64, e: f64) -> f64 {
    if e == 0.5 {
        b.sqrt()
    } else if e == -0.5 {
        1.0 / b.sqrt()
    } else if e.fract() == 0.0 && e.abs() <= 64.0 {
        b.powi(e as i32)
    } else {
        b.powf(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_folding_is_ieee_correct_but_zero_times_a_symbol_is_zero() {
        let mut g = Graph::new();
        let x = g.symbol("x");
        let (zero, one) = (g.constant(0.0), g.constant(1.0));
        // 0/0 and 0 * (1/0) are NaN, not 0 (hostile campaign finding 3)
        let nan = g.div(zero, zero);
        assert!(g.as_const(nan).is_some_and(f64::is_nan), "0/0 is NaN");
        let inf = g.div(one, zero);
        let z_inf = g.mul2(zero, inf);
        assert!(g.as_const(z_inf).is_some_and(f64::is_nan), "0 * (1/0) is NaN");
        let inf_minus_inf = g.sub(inf, inf);
        assert!(g.as_const(inf_minus_inf).is_some_and(f64::is_nan), "inf - inf is NaN");
        // ... while 0 * x and x - x stay 0: derivatives depend on it
        let zx = g.mul2(zero, x);
        assert!(g.is_const(zx, 0.0));
        let xx = g.sub(x, x);
        assert!(g.is_const(xx, 0.0));
        let x_over_x = g.div(x, x);
        assert!(g.is_const(x_over_x, 1.0));
        // 1/0 stays a non-finite expression for the caller to refuse
        assert!(g.eval(inf, &|_| 0.0).is_infinite());
    }

    #[test]
    fn the_degree_bound_sees_polynomials_as_written() {
        let mut g = Graph::new();
        // A coefficient created before the velocities: nodes older than
        // every symbol sought are not entered.
        let a = g.symbol("a");
        let cos_a = g.call(Func::Cos, a);
        let (v, w) = (g.symbol("v"), g.symbol("w"));
        let vs = [v, w];
        let two = g.constant(2.0);
        // ½ a v² + cos(a) v w: quadratic; its gradient in v linear
        let half = g.constant(0.5);
        let v2 = g.pow(v, two);
        let t1 = g.mul2(half, v2);
        let t1 = g.mul2(a, t1);
        let vw = g.mul2(v, w);
        let t2 = g.mul2(cos_a, vw);
        let l = g.add2(t1, t2);
        assert!(g.degree_at_most(&[l], &vs, 2));
        assert!(!g.degree_at_most(&[l], &vs, 1));
        let p = g.mul2(a, v);
        let p = g.add2(p, t2);
        assert!(!g.degree_at_most(&[p], &vs, 1), "v w is of degree two");
        let p = g.add2(p, a);
        let q = g.mul2(cos_a, w);
        assert!(g.degree_at_most(&[p, q], &vs, 2) && g.degree_at_most(&[q, a], &vs, 1));
        // Functions and non-integer powers of a velocity are unbounded;
        // of coefficients alone, constant.
        let s = g.call(Func::Sin, v);
        assert!(!g.degree_at_most(&[s], &vs, 5));
        let root = g.constant(0.5);
        let sqrt_v = g.pow(v, root);
        assert!(!g.degree_at_most(&[sqrt_v], &vs, 5));
        let sqrt_a = g.pow(a, root);
        let c = g.mul2(sqrt_a, v);
        assert!(g.degree_at_most(&[c], &vs, 1));
        // A quotient by a velocity is a power −1: unbounded.
        let q = g.div(a, v);
        assert!(!g.degree_at_most(&[q], &vs, 3));
        // No symbols sought: everything is of degree 0.
        assert!(g.degree_at_most(&[s, q], &[], 0));
    }

    #[test]
    fn like_terms_and_powers_merge() {
        let mut g = Graph::new();
        let x = g.symbol("x");
        let y = g.symbol("y");
        let xy = g.mul2(x, y);
        let yx = g.mul2(y, x);
        assert_eq!(xy, yx, "commuted products share one node");
        let s = g.add(&[xy, yx, x]);
        let two_xy = g.scale(2.0, xy);
        let expect = g.add2(two_xy, x);
        assert_eq!(s, expect);
        let d = g.sub(s, s);
        assert!(g.is_const(d, 0.0));
        let xx = g.mul2(x, x);
        let x2 = g.powf(x, 2.0);
        assert_eq!(xx, x2);
        let q = g.div(xx, x);
        assert_eq!(q, x);
        let r = g.sqrt(x);
        let rr = g.mul2(r, r);
        assert_eq!(rr, x);
    }

    #[test]
    fn neutral_absorbing_and_folding() {
        let mut g = Graph::new();
        let x = g.symbol("x");
        let zero = g.constant(0.0);
        let one = g.constant(1.0);
        assert_eq!(g.add2(x, zero), x);
        assert_eq!(g.mul2(x, one), x);
        assert!(g.is_const(g.clone().mul2(x, zero), 0.0));
        let a = g.constant(3.0);
        let b = g.constant(4.0);
        let c = g.add2(a, b);
        let p = g.pow(c, a);
        assert_eq!(g.as_const(p), Some(343.0));
        let s = g.call(Func::Sin, zero);
        assert_eq!(g.as_const(s), Some(0.0));
    }

    #[test]
    fn substitute_and_eval() {
        let mut g = Graph::new();
        let x = g.symbol("x");
        let y = g.symbol("y");
        let sx = g.call(Func::Sin, x);
        let e = g.mul2(sx, y);
        let two = g.constant(2.0);
        let map: HashMap<Id, Id> = [(y, two)].into_iter().collect();
        let e2 = g.substitute(e, &map);
        let v = g.eval(e2, &|_| 0.5);
        assert!((v - 2.0 * 0.5f64.sin()).abs() < 1e-15);
    }
}
