//! Lowering of a syntax tree into the scalar model IR, with semantic checks.
//!
//! All vector notation is expanded to scalars here; every quantity of the model
//! becomes an expression in one [`Graph`]. Errors are collected, not stopped
//! at: a user sees every unknown name of a file in one go.

use std::collections::{HashMap, HashSet};

use crate::diagnostic::{Diagnostic, Diagnostics, Span};
use crate::dsl::ast::*;
use crate::sym::{Differentiator, Func, Graph, Id};

/// A named scalar symbol of the model (a parameter, coordinate or velocity component).
#[derive(Clone, Debug)]
pub struct Scalar {
    /// display name, e.g. `gamma[0]` or `theta`
    pub name: String,
    /// its symbol node
    pub sym: Id,
}

/// A declared coordinate or velocity (scalar or 3-vector) and where its components start.
#[derive(Clone, Debug)]
pub struct Group {
    /// declared name
    pub name: String,
    /// declared type
    pub ty: Ty,
    /// index of its first component
    pub offset: usize,
}

/// A parameter with its default value.
#[derive(Clone, Debug)]
pub struct Param {
    /// name as in the model file, e.g. `m` or `m[2]`
    pub name: String,
    /// the struct field of the derive: the name, with `m[2]` written `m_2`
    pub field: String,
    /// its symbol node
    pub sym: Id,
    /// value from the model file
    pub default: f64,
}

/// A labelled scalar expression (constraint or invariant).
#[derive(Clone, Debug)]
pub struct Labelled {
    /// label shown in diagnostics and tables
    pub name: String,
    /// the expression
    pub expr: Id,
}

/// A named initial state: coordinates and velocities as expressions of the parameters.
#[derive(Clone, Debug)]
pub struct InitialState {
    /// its name
    pub name: String,
    /// one expression per coordinate component
    pub q: Vec<Id>,
    /// one expression per velocity component
    pub v: Vec<Id>,
}

/// The lowered model.
#[derive(Clone, Debug)]
pub struct Model {
    /// model name
    pub name: String,
    /// the model file's path as given
    pub file: String,
    /// all expressions
    pub graph: Graph,
    /// parameters, in file order
    pub params: Vec<Param>,
    /// coordinate components `q`
    pub coords: Vec<Scalar>,
    /// declared coordinates
    pub coord_groups: Vec<Group>,
    /// velocity components `ξ`
    pub vels: Vec<Scalar>,
    /// declared velocities
    pub vel_groups: Vec<Group>,
    /// `q' = f(q, ξ)` per coordinate component; `None` for the identity frame
    pub frame: Option<Vec<Id>>,
    /// `l(q, ξ)`
    pub lagrangian: Id,
    /// velocity constraints `A(q) ξ = 0`, as expressions
    pub velocity_constraints: Vec<Labelled>,
    /// holonomic constraints `g(q) = 0`, as expressions
    pub holonomic: Vec<Labelled>,
    /// user invariants (energy is added by the schemes)
    pub invariants: Vec<Labelled>,
    /// named initial states
    pub initials: Vec<InitialState>,
    /// the sizes of indexed families in force (`size N = ...`, possibly overridden)
    pub sizes: Vec<(String, i64)>,
    /// top-level `let` definitions in file order (`x[1]` for indexed ones): one
    /// expression for a scalar, three for a vector; tools evaluate them on runs
    pub lets: Vec<(String, Vec<Id>)>,
}

impl Model {
    /// Symbol nodes of the coordinates.
    pub fn q_syms(&self) -> Vec<Id> {
        self.coords.iter().map(|s| s.sym).collect()
    }

    /// Symbol nodes of the velocities.
    pub fn v_syms(&self) -> Vec<Id> {
        self.vels.iter().map(|s| s.sym).collect()
    }

    /// Looks up a parameter by name.
    pub fn param(&self, name: &str) -> Option<&Param> {
        self.params.iter().find(|p| p.name == name)
    }
}

#[derive(Clone, Copy, Debug)]
enum Val {
    S(Id),
    V([Id; 3]),
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Param,
    Coord,
    Vel,
    Let,
}

/// Loop bodies repeat at most this many times (a guard against runaway sizes).
const MAX_RANGE: i64 = 10_000;
/// Items after unrolling all loops, at most.
const MAX_ITEMS: usize = 200_000;

struct Lowerer<'a> {
    file: &'a str,
    src: &'a str,
    g: Graph,
    scope: HashMap<String, Binding3>,
    errors: Vec<Diagnostic>,
    identity_frame: bool,
    /// sizes and loop variables in force
    ienv: HashMap<String, i64>,
    /// names declared as indexed families (`e[i]`)
    families: HashSet<String>,
    /// the sizes alone
    sizes: HashMap<String, i64>,
    /// expression nodes that may still be lowered (a bound on total work)
    budget: u64,
    /// the unroll limit was hit and reported (it is reported once)
    unroll_limit_hit: bool,
}

/// Expression nodes lowered per model at most (unrolled loops and sums included).
pub const MAX_WORK: u64 = 5_000_000;

type LResult<T> = Result<T, ()>;

/// What a name is bound to in scope: its value, kind and declaration place.
type Binding3 = (Val, Kind, Span);

const FUNCTIONS: &[&str] = &[
    "sin", "cos", "tan", "exp", "ln", "sqrt", "dot", "cross", "norm", "norm2", "sum",
];

impl Lowerer<'_> {
    fn error(&mut self, span: Span, msg: impl Into<String>) {
        self.errors.push(Diagnostic::new(self.file, self.src, span, msg));
    }

    /// Evaluates an integer expression (numbers, sizes, loop variables, `+ - *`).
    fn eval_int(&mut self, e: &Expr) -> LResult<i64> {
        let bad = |lw: &mut Self| {
            lw.error(
                e.span,
                "expected an integer expression (whole numbers, sizes and loop variables with + - *)",
            );
            Err(())
        };
        match &e.kind {
            ExprKind::Number(x) if x.fract() == 0.0 && x.abs() < 1e15 => Ok(*x as i64),
            ExprKind::Name(n) => match self.ienv.get(n) {
                Some(&v) => Ok(v),
                None if self.scope.contains_key(n) => bad(self),
                None => {
                    self.error(e.span, format!("unknown size or loop variable `{n}`"));
                    Err(())
                }
            },
            ExprKind::Neg(a) => Ok(-self.eval_int(a)?),
            ExprKind::Binary(op @ (BinOp::Add | BinOp::Sub | BinOp::Mul), a, b) => {
                let (a, b) = (self.eval_int(a)?, self.eval_int(b)?);
                Ok(match op {
                    BinOp::Add => a + b,
                    BinOp::Sub => a - b,
                    _ => a * b,
                })
            }
            _ => bad(self),
        }
    }

    /// The full name of a declared or referenced name: `e[i]` with `i = 2` is `e[2]`.
    fn resolve(&mut self, n: &Name) -> LResult<String> {
        match &n.index {
            None => Ok(n.text.clone()),
            Some(ix) => {
                let k = self.eval_int(ix)?;
                let (base, prime) = match n.text.strip_suffix('\'') {
                    Some(b) => (b, "'"),
                    None => (n.text.as_str(), ""),
                };
                self.families.insert(base.to_string());
                Ok(format!("{base}[{k}]{prime}"))
            }
        }
    }

    fn declare(&mut self, name: &str, span: Span, val: Val, kind: Kind) {
        let base = name.split('[').next().unwrap_or(name);
        if FUNCTIONS.contains(&base) {
            self.error(
                span,
                format!("`{base}` is a built-in function and cannot be used as a name"),
            );
            return;
        }
        if self.ienv.contains_key(base) {
            self.error(
                span,
                format!("`{base}` is a size or loop variable and cannot be declared"),
            );
            return;
        }
        if let Some((_, _, prev)) = self.scope.get(name) {
            let prev = Diagnostic::new(self.file, self.src, *prev, "");
            self.error(
                span,
                format!(
                    "duplicate name `{name}` (first declared at line {}, column {})",
                    prev.line, prev.column
                ),
            );
            return;
        }
        self.scope.insert(name.to_string(), (val, kind, span));
    }

    fn scalar(&mut self, e: &Expr) -> LResult<Id> {
        match self.expr(e)? {
            Val::S(s) => Ok(s),
            Val::V(_) => {
                self.error(e.span, "expected a scalar here, found a 3-vector");
                Err(())
            }
        }
    }

    fn vector(&mut self, e: &Expr, what: &str) -> LResult<[Id; 3]> {
        match self.expr(e)? {
            Val::V(v) => Ok(v),
            Val::S(_) => {
                self.error(e.span, format!("{what} expects a 3-vector, found a scalar"));
                Err(())
            }
        }
    }

    fn lookup(&mut self, name: &str, span: Span) -> LResult<Val> {
        if let Some((v, _, _)) = self.scope.get(name) {
            return Ok(*v);
        }
        if let Some(&k) = self.ienv.get(name) {
            return Ok(Val::S(self.g.constant(k as f64)));
        }
        let hint = if name.ends_with('\'') {
            if self.identity_frame {
                format!("`{name}` is not the velocity of a declared coordinate")
            } else {
                "`q'` may only be used in models without a frame block; use the declared velocities".to_string()
            }
        } else if FUNCTIONS.contains(&name) {
            format!("`{name}` is a function; call it as `{name}(...)`")
        } else {
            format!("unknown name `{name}`")
        };
        self.error(span, hint);
        Err(())
    }

    /// `n[k]` for a family `n`, as a full name.
    fn family_member(&mut self, inner: &Expr, idx: &Expr) -> Option<LResult<String>> {
        match &inner.kind {
            ExprKind::Name(n) if self.families.contains(n) => Some(self.eval_int(idx).map(|k| format!("{n}[{k}]"))),
            _ => None,
        }
    }

    fn expr(&mut self, e: &Expr) -> LResult<Val> {
        if self.budget == 0 {
            return Err(());
        }
        self.budget -= 1;
        if self.budget == 0 {
            self.error(e.span, format!("the model expands to more than {MAX_WORK} expression nodes (loops and sums unrolled); reduce its sizes"));
            return Err(());
        }
        match &e.kind {
            ExprKind::Number(x) => Ok(Val::S(self.g.constant(*x))),
            ExprKind::Name(n) => self.lookup(n, e.span),
            ExprKind::Prime(inner) => match &inner.kind {
                ExprKind::Name(n) => self.lookup(&format!("{n}'"), e.span),
                ExprKind::Index(base, idx) => match self.family_member(base, idx) {
                    Some(name) => {
                        let name = name?;
                        self.lookup(&format!("{name}'"), e.span)
                    }
                    None => {
                        self.error(
                            e.span,
                            "`'` applies to a coordinate's name only (write `x'[0]`, not `x[0]'`)",
                        );
                        Err(())
                    }
                },
                _ => {
                    self.error(e.span, "`'` applies to a coordinate's name only");
                    Err(())
                }
            },
            ExprKind::Index(inner, idx) => {
                if let Some(name) = self.family_member(inner, idx) {
                    let name = name?;
                    return self.lookup(&name, e.span);
                }
                let v = self.expr(inner)?;
                let i = self.eval_int(idx)?;
                match v {
                    Val::V(v) if (0..3).contains(&i) => Ok(Val::S(v[i as usize])),
                    Val::V(_) => {
                        self.error(
                            e.span,
                            format!("index {i} out of range: a vec3 has components [0], [1], [2]"),
                        );
                        Err(())
                    }
                    Val::S(_) => {
                        self.error(e.span, "only 3-vectors and indexed families can be indexed");
                        Err(())
                    }
                }
            }
            ExprKind::Neg(a) => Ok(match self.expr(a)? {
                Val::S(s) => Val::S(self.g.neg(s)),
                Val::V(v) => Val::V(v.map(|c| self.g.neg(c))),
            }),
            ExprKind::Binary(op, a, b) => {
                let (va, vb) = (self.expr(a), self.expr(b));
                let (va, vb) = (va?, vb?);
                self.binary(*op, va, vb, e.span)
            }
            ExprKind::Tuple(items) => {
                if items.len() != 3 {
                    self.error(
                        e.span,
                        format!("a vector literal has 3 components, this one has {}", items.len()),
                    );
                    return Err(());
                }
                let c: Vec<LResult<Id>> = items.iter().map(|x| self.scalar(x)).collect();
                let c: Vec<Id> = c.into_iter().collect::<LResult<_>>()?;
                Ok(Val::V([c[0], c[1], c[2]]))
            }
            ExprKind::Call(f, args) => self.call(f, args, e.span),
            ExprKind::Sum { var, from, to, body } => {
                let (a, b) = (self.eval_int(from)?, self.eval_int(to)?);
                if b - a >= MAX_RANGE {
                    self.error(
                        e.span,
                        format!("sum over {} terms exceeds the limit of {MAX_RANGE}", b - a + 1),
                    );
                    return Err(());
                }
                let saved = self.ienv.insert(var.text.clone(), a);
                let mut terms: Vec<Val> = Vec::new();
                let mut ok = true;
                for k in a..=b {
                    self.ienv.insert(var.text.clone(), k);
                    match self.expr(body) {
                        Ok(v) => terms.push(v),
                        Err(()) => {
                            ok = false;
                            break;
                        }
                    }
                }
                match saved {
                    Some(v) => self.ienv.insert(var.text.clone(), v),
                    None => self.ienv.remove(&var.text),
                };
                if !ok {
                    return Err(());
                }
                match terms.first() {
                    None => Ok(Val::S(self.g.constant(0.0))),
                    Some(Val::S(_)) => {
                        let mut ids = Vec::with_capacity(terms.len());
                        for t in terms {
                            match t {
                                Val::S(s) => ids.push(s),
                                Val::V(_) => {
                                    self.error(body.span, "the terms of a sum mix scalars and vectors");
                                    return Err(());
                                }
                            }
                        }
                        Ok(Val::S(self.g.add(&ids)))
                    }
                    Some(Val::V(_)) => {
                        let mut comps: [Vec<Id>; 3] = Default::default();
                        for t in terms {
                            match t {
                                Val::V(v) => (0..3).for_each(|i| comps[i].push(v[i])),
                                Val::S(_) => {
                                    self.error(body.span, "the terms of a sum mix scalars and vectors");
                                    return Err(());
                                }
                            }
                        }
                        Ok(Val::V([0, 1, 2].map(|i| self.g.add(&comps[i]))))
                    }
                }
            }
        }
    }

    fn binary(&mut self, op: BinOp, a: Val, b: Val, span: Span) -> LResult<Val> {
        let g = &mut self.g;
        Ok(match (op, a, b) {
            (BinOp::Add, Val::S(x), Val::S(y)) => Val::S(g.add2(x, y)),
            (BinOp::Sub, Val::S(x), Val::S(y)) => Val::S(g.sub(x, y)),
            (BinOp::Mul, Val::S(x), Val::S(y)) => Val::S(g.mul2(x, y)),
            (BinOp::Div, Val::S(x), Val::S(y)) => Val::S(g.div(x, y)),
            (BinOp::Pow, Val::S(x), Val::S(y)) => Val::S(g.pow(x, y)),
            (BinOp::Add, Val::V(x), Val::V(y)) => Val::V([0, 1, 2].map(|i| g.add2(x[i], y[i]))),
            (BinOp::Sub, Val::V(x), Val::V(y)) => Val::V([0, 1, 2].map(|i| g.sub(x[i], y[i]))),
            (BinOp::Mul, Val::S(s), Val::V(v)) | (BinOp::Mul, Val::V(v), Val::S(s)) => Val::V(v.map(|c| g.mul2(s, c))),
            (BinOp::Div, Val::V(v), Val::S(s)) => Val::V(v.map(|c| g.div(c, s))),
            (op, a, b) => {
                let kind = |v: Val| if matches!(v, Val::S(_)) { "scalar" } else { "vec3" };
                let sym = match op {
                    BinOp::Add => "+",
                    BinOp::Sub => "-",
                    BinOp::Mul => "*",
                    BinOp::Div => "/",
                    BinOp::Pow => "^",
                };
                let hint = if op == BinOp::Mul {
                    " (use dot(a, b) or cross(a, b) for vectors)"
                } else {
                    ""
                };
                self.error(
                    span,
                    format!("`{sym}` is not defined for {} and {}{hint}", kind(a), kind(b)),
                );
                return Err(());
            }
        })
    }

    fn call(&mut self, f: &Name, args: &[Expr], span: Span) -> LResult<Val> {
        let arity = match f.text.as_str() {
            "dot" | "cross" => 2,
            "sin" | "cos" | "tan" | "exp" | "ln" | "sqrt" | "norm" | "norm2" => 1,
            other => {
                self.error(
                    f.span,
                    format!("unknown function `{other}` (known: {})", FUNCTIONS.join(", ")),
                );
                return Err(());
            }
        };
        if args.len() != arity {
            self.error(
                span,
                format!("`{}` takes {arity} argument(s), found {}", f.text, args.len()),
            );
            return Err(());
        }
        let elementary = |name: &str| match name {
            "sin" => Some(Func::Sin),
            "cos" => Some(Func::Cos),
            "tan" => Some(Func::Tan),
            "exp" => Some(Func::Exp),
            "ln" => Some(Func::Ln),
            _ => None,
        };
        if let Some(func) = elementary(&f.text) {
            let a = self.scalar(&args[0])?;
            return Ok(Val::S(self.g.call(func, a)));
        }
        match f.text.as_str() {
            "sqrt" => {
                let a = self.scalar(&args[0])?;
                Ok(Val::S(self.g.sqrt(a)))
            }
            "norm" | "norm2" => {
                let v = self.vector(&args[0], &f.text)?;
                let sq: Vec<Id> = v.iter().map(|&c| self.g.powf(c, 2.0)).collect();
                let n2 = self.g.add(&sq);
                Ok(Val::S(if f.text == "norm" { self.g.sqrt(n2) } else { n2 }))
            }
            _ => {
                let a = self.vector(&args[0], &f.text);
                let b = self.vector(&args[1], &f.text);
                let (a, b) = (a?, b?);
                let g = &mut self.g;
                if f.text == "dot" {
                    let t: Vec<Id> = (0..3).map(|i| g.mul2(a[i], b[i])).collect();
                    Ok(Val::S(g.add(&t)))
                } else {
                    let c = |g: &mut Graph, i: usize, j: usize| {
                        let x = g.mul2(a[i], b[j]);
                        let y = g.mul2(a[j], b[i]);
                        g.sub(x, y)
                    };
                    Ok(Val::V([c(g, 1, 2), c(g, 2, 0), c(g, 0, 1)]))
                }
            }
        }
    }

    fn flatten(v: Val) -> Vec<Id> {
        match v {
            Val::S(s) => vec![s],
            Val::V(v) => v.to_vec(),
        }
    }
}

/// An item with the loop variables in force where it stands.
struct Placed<'a> {
    item: &'a Item,
    span: Span,
    env: Vec<(String, i64)>,
}

fn unroll<'a>(lw: &mut Lowerer, items: &'a [(Item, Span)], env: &[(String, i64)], out: &mut Vec<Placed<'a>>) {
    for (item, span) in items {
        if out.len() >= MAX_ITEMS {
            if !std::mem::replace(&mut lw.unroll_limit_hit, true) {
                lw.error(
                    *span,
                    format!("loops unroll to more than {MAX_ITEMS} items; reduce the sizes"),
                );
            }
            return;
        }
        match item {
            Item::For {
                var,
                from,
                to,
                items: body,
            } => {
                set_env(lw, env);
                let (Ok(a), Ok(b)) = (lw.eval_int(from), lw.eval_int(to)) else {
                    continue;
                };
                if b - a >= MAX_RANGE {
                    lw.error(
                        *span,
                        format!("loop over {} values exceeds the limit of {MAX_RANGE}", b - a + 1),
                    );
                    continue;
                }
                for k in a..=b {
                    let mut inner = env.to_vec();
                    inner.push((var.text.clone(), k));
                    unroll(lw, body, &inner, out);
                }
            }
            Item::Size(b) if !env.is_empty() => {
                lw.error(
                    b.name.span,
                    "`size` must stand at the top level of a model, not inside `for`",
                );
            }
            _ => out.push(Placed {
                item,
                span: *span,
                env: env.to_vec(),
            }),
        }
    }
}

/// Makes the loop variables `env` (on top of the sizes) the integer environment.
fn set_env(lw: &mut Lowerer, env: &[(String, i64)]) {
    lw.ienv = lw.sizes.clone();
    for (k, v) in env {
        lw.ienv.insert(k.clone(), *v);
    }
}

fn declare_groups(lw: &mut Lowerer, decls: &[Decl], kind: Kind, out: &mut Vec<Scalar>, groups: &mut Vec<Group>) {
    for d in decls {
        let Ok(name) = lw.resolve(&d.name) else { continue };
        declare_group(lw, &name, d.name.span, d.ty, kind, out, groups);
    }
}

fn declare_group(
    lw: &mut Lowerer,
    name: &str,
    span: Span,
    ty: Ty,
    kind: Kind,
    out: &mut Vec<Scalar>,
    groups: &mut Vec<Group>,
) {
    let offset = out.len();
    let val = match ty {
        Ty::Scalar => {
            let s = lw.g.symbol(name);
            out.push(Scalar {
                name: name.to_string(),
                sym: s,
            });
            Val::S(s)
        }
        Ty::Vec3 => {
            let c = [0, 1, 2].map(|i| {
                let n = format!("{name}[{i}]");
                let s = lw.g.symbol(&n);
                out.push(Scalar { name: n, sym: s });
                s
            });
            Val::V(c)
        }
    };
    groups.push(Group {
        name: name.to_string(),
        ty,
        offset,
    });
    lw.declare(name, span, val, kind);
}

/// Parses and lowers a model file's text.
pub fn load(file: &str, src: &str) -> Result<Model, Diagnostics> {
    load_with_sizes(file, src, &[])
}

/// [`load`] with sizes of indexed families overridden (e.g. `N = 8` from a derive).
pub fn load_with_sizes(file: &str, src: &str, sizes: &[(String, i64)]) -> Result<Model, Diagnostics> {
    let ast = crate::dsl::parse(file, src).map_err(|d| Diagnostics(vec![d]))?;
    lower(file, src, &ast, sizes)
}

/// The struct field that holds parameter `name` (`m[2]` → `m_2`).
fn field_name(name: &str) -> String {
    name.replace("][", "_").replace('[', "_").replace(']', "")
}

/// Lowers a parsed model, collecting every error it finds.
pub fn lower(file: &str, src: &str, ast: &ModelAst, size_overrides: &[(String, i64)]) -> Result<Model, Diagnostics> {
    let has_frame = ast
        .items
        .iter()
        .any(|(i, _)| contains(i, &|i| matches!(i, Item::Frame(_))));
    let mut lw = Lowerer {
        file,
        src,
        g: Graph::new(),
        scope: HashMap::new(),
        errors: vec![],
        identity_frame: !has_frame,
        ienv: HashMap::new(),
        families: HashSet::new(),
        sizes: HashMap::new(),
        budget: MAX_WORK,
        unroll_limit_hit: false,
    };

    // Sizes first: they may be used anywhere.
    let mut sizes: Vec<(String, i64)> = Vec::new();
    for (item, _) in &ast.items {
        if let Item::Size(b) = item {
            let v = match size_overrides.iter().find(|(n, _)| *n == b.name.text) {
                Some((_, v)) => Some(*v),
                None => lw.eval_int(&b.value).ok(),
            };
            if let Some(v) = v {
                if !(0..=MAX_RANGE).contains(&v) {
                    lw.error(
                        b.value.span,
                        format!("size `{}` = {v} is outside 0..={MAX_RANGE}", b.name.text),
                    );
                }
                if sizes.iter().any(|(n, _)| *n == b.name.text) {
                    lw.error(b.name.span, format!("duplicate size `{}`", b.name.text));
                }
                lw.ienv.insert(b.name.text.clone(), v);
                sizes.push((b.name.text.clone(), v));
            }
        }
    }
    for (n, _) in size_overrides {
        if !sizes.iter().any(|(s, _)| s == n) {
            lw.errors.push(Diagnostic::new(
                file,
                src,
                ast.name.span,
                format!("model `{}` has no size `{n}` to set", ast.name.text),
            ));
        }
    }
    lw.sizes = lw.ienv.clone();
    let mut placed = Vec::new();
    unroll(&mut lw, &ast.items, &[], &mut placed);
    if !lw.errors.is_empty() {
        // Sizes or loops are wrong: everything after would only repeat the damage.
        return Err(Diagnostics(lw.errors));
    }
    let enter = |lw: &mut Lowerer, p: &Placed| set_env(lw, &p.env);

    let mut params = Vec::new();
    let (mut coords, mut coord_groups, mut vels, mut vel_groups) = (vec![], vec![], vec![], vec![]);
    let lagrangians: Vec<&Placed> = placed
        .iter()
        .filter(|p| matches!(p.item, Item::Lagrangian(_)))
        .collect();
    if lagrangians.len() > 1 {
        let sp = lagrangians[1].span;
        lw.error(
            Span::new(sp.start, sp.start + "lagrangian".len()),
            "`lagrangian` may appear only once",
        );
    }
    for p in &placed {
        enter(&mut lw, p);
        match p.item {
            Item::Parameters(ps) => {
                for b in ps {
                    let Ok(name) = lw.resolve(&b.name) else { continue };
                    let default = lw.scalar(&b.value).ok().map(|e| lw.g.eval(e, &|_| f64::NAN));
                    match default {
                        Some(v) if v.is_finite() => {
                            let sym = lw.g.symbol(&name);
                            lw.declare(&name, b.name.span, Val::S(sym), Kind::Param);
                            params.push(Param {
                                field: field_name(&name),
                                name,
                                sym,
                                default: v,
                            });
                        }
                        Some(_) => lw.error(
                            b.value.span,
                            "a parameter's default must be a finite number (expressions of numbers and sizes)",
                        ),
                        None => {}
                    }
                }
            }
            Item::Coordinates(ds) => declare_groups(&mut lw, ds, Kind::Coord, &mut coords, &mut coord_groups),
            Item::Velocities(ds) => declare_groups(&mut lw, ds, Kind::Vel, &mut vels, &mut vel_groups),
            _ => {}
        }
    }
    if coords.is_empty() && lw.errors.is_empty() {
        lw.error(
            ast.name.span,
            format!("model `{}` declares no coordinates", ast.name.text),
        );
    }
    if !has_frame {
        if let Some(g) = vel_groups.first() {
            let sp = lw.scope.get(&g.name).map(|x| x.2).unwrap_or_default();
            lw.error(sp, "velocities are declared but there is no `frame` block saying how they move the coordinates (`q' = ...`); without velocities the frame is the identity and velocities are written `q'`");
        }
        // Identity frame: the velocity of `q` is `q'`.
        for grp in coord_groups.clone() {
            let sp = lw.scope.get(&grp.name).map(|x| x.2).unwrap_or_default();
            declare_group(
                &mut lw,
                &format!("{}'", grp.name),
                sp,
                grp.ty,
                Kind::Vel,
                &mut vels,
                &mut vel_groups,
            );
        }
    } else if vels.is_empty() {
        lw.error(
            ast.name.span,
            "a model with a frame must declare its velocities in a `velocities { ... }` block",
        );
    }

    // `let` bindings, in order.
    for p in &placed {
        if let Item::Let(b) = p.item {
            enter(&mut lw, p);
            let Ok(name) = lw.resolve(&b.name) else { continue };
            if let Ok(v) = lw.expr(&b.value) {
                lw.declare(&name, b.name.span, v, Kind::Let);
            }
        }
    }

    let v_syms: Vec<Id> = vels.iter().map(|s| s.sym).collect();
    let q_syms: Vec<Id> = coords.iter().map(|s| s.sym).collect();
    let mut frame: Option<Vec<Option<Id>>> = has_frame.then(|| vec![None; coords.len()]);
    // coordinates that have a frame equation (whether or not it lowered)
    let mut frame_written: HashSet<String> = HashSet::new();
    let mut lagrangian = None;
    let (mut vcons, mut hcons, mut invariants, mut initials) = (vec![], vec![], vec![], vec![]);
    for p in &placed {
        enter(&mut lw, p);
        match p.item {
            Item::Frame(eqs) => {
                for eq in eqs {
                    let Ok(name) = lw.resolve(&eq.name) else { continue };
                    let Some(grp) = coord_groups.iter().find(|g| g.name == name).cloned() else {
                        lw.error(
                            eq.name.span,
                            format!("`{name}'`: a frame equation's left side must be a declared coordinate"),
                        );
                        continue;
                    };
                    // Whatever goes wrong below is reported there, not as a missing equation.
                    frame_written.insert(grp.name.clone());
                    let Ok(rhs) = lw.expr(&eq.value) else { continue };
                    let rhs = Lowerer::flatten(rhs);
                    if rhs.len() != grp.ty.components() {
                        lw.error(
                            eq.value.span,
                            format!(
                                "`{}` has {} component(s) but the right side has {}",
                                grp.name,
                                grp.ty.components(),
                                rhs.len()
                            ),
                        );
                        continue;
                    }
                    let fr = frame.as_mut().expect("has frame");
                    if fr[grp.offset].is_some() {
                        lw.error(eq.name.span, format!("second frame equation for `{}`", grp.name));
                        continue;
                    }
                    for (k, &r) in rhs.iter().enumerate() {
                        if !check_linear(&mut lw.g, r, &v_syms) {
                            lw.error(
                                eq.value.span,
                                format!(
                                    "the frame equation of `{}` is not linear in the velocities (q' = Ψ(q) ξ required)",
                                    grp.name
                                ),
                            );
                            break;
                        }
                        fr[grp.offset + k] = Some(r);
                    }
                }
            }
            Item::Lagrangian(e) => {
                if let Ok(l) = lw.scalar(e) {
                    lagrangian = Some(l);
                }
            }
            Item::Constraint(eq) | Item::Holonomic(eq) => {
                let velocity = matches!(p.item, Item::Constraint(_));
                let (l, r) = (lw.expr(&eq.lhs), lw.expr(&eq.rhs));
                let (Ok(l), Ok(r)) = (l, r) else { continue };
                let (l, r) = (Lowerer::flatten(l), Lowerer::flatten(r));
                if l.len() != r.len() {
                    lw.error(eq.span, "the two sides of the constraint have different shapes");
                    continue;
                }
                for (k, (a, b)) in l.iter().zip(&r).enumerate() {
                    let c = lw.g.sub(*a, *b);
                    let comp = if l.len() > 1 { format!("[{k}]") } else { String::new() };
                    if velocity {
                        if !lw.g.depends_on(c, &v_syms) || !check_linear(&mut lw.g, c, &v_syms) {
                            lw.error(eq.span, "a velocity constraint must be linear and homogeneous in the velocities (A(q) ξ = 0); use `holonomic` for a position constraint");
                            break;
                        }
                        vcons.push(Labelled {
                            name: format!("constraint {}{comp}", vcons.len() + 1),
                            expr: c,
                        });
                    } else {
                        if lw.g.depends_on(c, &v_syms) {
                            lw.error(eq.span, "a holonomic constraint may depend on the coordinates only; use `constraint` for velocities");
                            break;
                        }
                        if !lw.g.depends_on(c, &q_syms) {
                            lw.error(eq.span, "this holonomic constraint does not depend on the coordinates");
                            break;
                        }
                        hcons.push(Labelled {
                            name: format!("holonomic {}{comp}", hcons.len() + 1),
                            expr: c,
                        });
                    }
                }
            }
            Item::Invariant(b) => {
                let Ok(name) = lw.resolve(&b.name) else { continue };
                if let Ok(v) = lw.expr(&b.value) {
                    match v {
                        Val::S(s) => invariants.push(Labelled { name, expr: s }),
                        Val::V(v) => {
                            for (k, c) in v.iter().enumerate() {
                                invariants.push(Labelled {
                                    name: format!("{name}[{k}]"),
                                    expr: *c,
                                });
                            }
                        }
                    }
                }
            }
            Item::Initial(init) => {
                if let Some(s) = lower_initial(
                    &mut lw,
                    init,
                    &coords,
                    &coord_groups,
                    &vels,
                    &vel_groups,
                    &q_syms,
                    &v_syms,
                ) {
                    if initials.iter().any(|i: &InitialState| i.name == s.name) {
                        lw.error(init.name.span, format!("duplicate initial state `{}`", s.name));
                    } else {
                        initials.push(s);
                    }
                }
            }
            _ => {}
        }
    }

    let frame = match frame {
        None => None,
        Some(fr) => {
            for grp in &coord_groups {
                if fr[grp.offset].is_none() && !frame_written.contains(&grp.name) {
                    let sp = lw.scope.get(&grp.name).map(|x| x.2).unwrap_or_default();
                    lw.error(
                        sp,
                        format!(
                            "coordinate `{}` has no frame equation (`{}' = ...`)",
                            grp.name, grp.name
                        ),
                    );
                }
            }
            fr.into_iter().collect::<Option<Vec<Id>>>()
        }
    };
    if lagrangian.is_none() && lagrangians.is_empty() {
        lw.error(
            ast.name.span,
            format!("model `{}` has no `lagrangian = ...`", ast.name.text),
        );
    }
    if !lw.errors.is_empty() {
        return Err(Diagnostics(lw.errors));
    }
    let mut lets: Vec<(usize, String, Vec<Id>)> = lw
        .scope
        .iter()
        .filter(|(_, (_, kind, _))| *kind == Kind::Let)
        .map(|(name, (val, _, span))| {
            let ids = match *val {
                Val::S(a) => vec![a],
                Val::V(v) => v.to_vec(),
            };
            (span.start, name.clone(), ids)
        })
        .collect();
    lets.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
    let lets = lets.into_iter().map(|(_, n, ids)| (n, ids)).collect();
    Ok(Model {
        name: ast.name.text.clone(),
        file: file.to_string(),
        graph: lw.g,
        params,
        coords,
        coord_groups,
        vels,
        vel_groups,
        frame: frame.filter(|_| has_frame),
        lagrangian: lagrangian.expect("checked above"),
        velocity_constraints: vcons,
        holonomic: hcons,
        invariants,
        initials,
        sizes,
        lets,
    })
}

/// True when `item` or an item nested in it satisfies `pred`.
fn contains(item: &Item, pred: &dyn Fn(&Item) -> bool) -> bool {
    match item {
        Item::For { items, .. } => items.iter().any(|(i, _)| contains(i, pred)),
        other => pred(other),
    }
}

fn flatten_initial<'a>(
    lw: &mut Lowerer,
    entries: &'a [InitEntry],
    env: &[(String, i64)],
    out: &mut Vec<(&'a InitEntry, Vec<(String, i64)>)>,
) {
    for e in entries {
        match e {
            InitEntry::For { var, from, to, entries } => {
                set_env(lw, env);
                let (Ok(a), Ok(b)) = (lw.eval_int(from), lw.eval_int(to)) else {
                    continue;
                };
                if b - a >= MAX_RANGE {
                    lw.error(
                        from.span,
                        format!("loop over {} values exceeds the limit of {MAX_RANGE}", b - a + 1),
                    );
                    continue;
                }
                for k in a..=b {
                    let mut inner = env.to_vec();
                    inner.push((var.text.clone(), k));
                    flatten_initial(lw, entries, &inner, out);
                }
            }
            other => out.push((other, env.to_vec())),
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn lower_initial(
    lw: &mut Lowerer,
    init: &Initial,
    coords: &[Scalar],
    coord_groups: &[Group],
    vels: &[Scalar],
    vel_groups: &[Group],
    q_syms: &[Id],
    v_syms: &[Id],
) -> Option<InitialState> {
    let mut q: Vec<Option<Id>> = vec![None; coords.len()];
    let mut v: Vec<Option<Id>> = vec![None; vels.len()];
    let mut ok = true;
    let mut locals: Vec<(String, Option<Binding3>)> = Vec::new();
    let mut flat: Vec<(&InitEntry, Vec<(String, i64)>)> = Vec::new();
    flatten_initial(lw, &init.entries, &[], &mut flat);
    for (entry, env) in flat {
        set_env(lw, &env);
        let (is_let, b) = match entry {
            InitEntry::Let(b) => (true, b),
            InitEntry::Assign(b) => (false, b),
            InitEntry::For { .. } => unreachable!("flattened"),
        };
        let Ok(name) = lw.resolve(&b.name) else {
            ok = false;
            continue;
        };
        let Ok(val) = lw.expr(&b.value) else {
            ok = false;
            continue;
        };
        if is_let {
            // Local names shadow the model's for the rest of this initial state.
            let shadowed = lw.scope.remove(&name);
            lw.declare(&name, b.name.span, val, Kind::Let);
            locals.push((name, shadowed));
            continue;
        }
        let target = coord_groups
            .iter()
            .find(|g| g.name == name)
            .map(|g| (g, true))
            .or_else(|| vel_groups.iter().find(|g| g.name == name).map(|g| (g, false)));
        let Some((grp, is_q)) = target else {
            lw.error(
                b.name.span,
                format!("`{name}` is not a coordinate or velocity of this model"),
            );
            ok = false;
            continue;
        };
        let comps = Lowerer::flatten(val);
        if comps.len() != grp.ty.components() {
            lw.error(
                b.value.span,
                format!(
                    "`{}` has {} component(s), the value has {}",
                    grp.name,
                    grp.ty.components(),
                    comps.len()
                ),
            );
            ok = false;
            continue;
        }
        for (k, &c) in comps.iter().enumerate() {
            if lw.g.depends_on(c, q_syms) || lw.g.depends_on(c, v_syms) {
                lw.error(b.value.span, "initial values may use numbers and parameters only");
                ok = false;
                break;
            }
            let slot = if is_q {
                &mut q[grp.offset + k]
            } else {
                &mut v[grp.offset + k]
            };
            *slot = Some(c);
        }
    }
    for (name, shadowed) in locals.into_iter().rev() {
        lw.scope.remove(&name);
        if let Some(prev) = shadowed {
            lw.scope.insert(name, prev);
        }
    }
    for (grp, is_q) in coord_groups
        .iter()
        .map(|g| (g, true))
        .chain(vel_groups.iter().map(|g| (g, false)))
    {
        let set = if is_q {
            q[grp.offset].is_some()
        } else {
            v[grp.offset].is_some()
        };
        if !set && ok {
            lw.error(
                init.name.span,
                format!("initial state `{}` gives no value for `{}`", init.name.text, grp.name),
            );
            ok = false;
        }
    }
    if !ok {
        return None;
    }
    Some(InitialState {
        name: init.name.text.clone(),
        q: q.into_iter().map(|x| x.expect("checked")).collect(),
        v: v.into_iter().map(|x| x.expect("checked")).collect(),
    })
}

/// True when `e` is linear and homogeneous in the symbols `vars`: its second
/// derivatives in them vanish and it vanishes when they do.
pub fn check_linear(g: &mut Graph, e: Id, vars: &[Id]) -> bool {
    for &a in vars {
        let da = Differentiator::new(a).diff(g, e);
        for &b in vars {
            let dab = Differentiator::new(b).diff(g, da);
            if !g.is_const(dab, 0.0) {
                return false;
            }
        }
    }
    let zero = g.constant(0.0);
    let map: crate::sym::SubstMap = vars.iter().map(|&v| (v, zero)).collect();
    let at0 = g.substitute(e, &map);
    g.is_const(at0, 0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PENDULUM: &str = r#"
model spherical_pendulum {
    parameters { m = 1.0, r = 9.8, g = 9.8 }
    coordinates { gamma: vec3 }
    velocities  { xi: vec3 }
    frame       { gamma' = cross(gamma, xi) }
    constraint  xi[2] = 0
    lagrangian  = 0.5 * m * r^2 * (xi[0]^2 + xi[1]^2) - m * g * r * gamma[2]
    invariant   J = m * r^2 * dot(xi, gamma)
    initial published { gamma = (0.3, 0.2, -sqrt(1 - 0.3^2 - 0.2^2)), xi = (0.6, 0, 0) }
}
"#;

    #[test]
    fn lowers_the_spherical_pendulum() {
        let m = load("p.hamel", PENDULUM).unwrap();
        assert_eq!(m.coords.len(), 3);
        assert_eq!(m.vels.len(), 3);
        assert_eq!(m.params.len(), 3);
        assert_eq!(m.velocity_constraints.len(), 1);
        let init = &m.initials[0];
        let z = m.graph.eval(init.q[2], &|_| f64::NAN);
        assert!((z + 0.87f64.sqrt()).abs() < 1e-15);
    }

    #[test]
    fn reports_every_error_with_place() {
        let src = "model bad {\n  coordinates { q }\n  lagrangian = q'^2 + foo + bar(q)\n  constraint q^2 = 0\n}\n";
        let e = load("bad.hamel", src).unwrap_err();
        let msgs: Vec<&str> = e.0.iter().map(|d| d.message.as_str()).collect();
        assert_eq!(e.0.len(), 3, "{e}");
        assert!(msgs[0].contains("unknown name `foo`"));
        assert!(msgs[1].contains("unknown function `bar`"));
        assert!(msgs[2].contains("linear"));
        assert_eq!((e.0[0].line, e.0[0].column), (3, 23));
    }

    #[test]
    fn frame_checks() {
        let src = "model f {\n coordinates { a: vec3, b }\n velocities { w: vec3 }\n frame { a' = w * dot(w, a) }\n lagrangian = dot(w, w)\n}";
        let e = load("f.hamel", src).unwrap_err().to_string();
        assert!(e.contains("not linear in the velocities"), "{e}");
        assert!(e.contains("coordinate `b` has no frame equation"), "{e}");
    }

    #[test]
    fn a_frame_equation_that_fails_to_lower_is_reported_once() {
        let src = "model f {\n coordinates { a: vec3 }\n velocities { w: vec3 }\n frame { a' = cross(a, zeta) }\n lagrangian = dot(w, w)\n}";
        let e = load("f.hamel", src).unwrap_err();
        assert_eq!(e.0.len(), 1, "{e}");
        assert!(e.0[0].message.contains("unknown name `zeta`"), "{e}");
    }
}
