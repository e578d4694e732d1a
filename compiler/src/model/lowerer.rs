//! Expression lowering: names, vectors, loops' indices and function calls
//! turned into scalar expressions of one graph, with located errors.

use std::collections::{HashMap, HashSet};

use crate::diagnostic::{Diagnostic, Span};
use crate::dsl::ast::*;
use crate::sym::{Func, Graph, Id};

#[derive(Clone, Copy, Debug)]
pub(super) enum Val {
    S(Id),
    V([Id; 3]),
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Param,
    Coord,
    Vel,
    Let,
    Input,
}

/// Loop bodies repeat at most this many times (a guard against runaway sizes).
pub(super) const MAX_RANGE: i64 = 10_000;
/// Items after unrolling all loops, at most.
pub(super) const MAX_ITEMS: usize = 200_000;

pub(super) struct Lowerer<'a> {
    pub(super) file: &'a str,
    pub(super) src: &'a str,
    pub(super) g: Graph,
    pub(super) scope: HashMap<String, Binding3>,
    pub(super) errors: Vec<Diagnostic>,
    pub(super) identity_frame: bool,
    /// sizes and loop variables in force
    pub(super) ienv: HashMap<String, i64>,
    /// names declared as indexed families (`e[i]`)
    pub(super) families: HashSet<String>,
    /// the sizes alone
    pub(super) sizes: HashMap<String, i64>,
    /// expression nodes that may still be lowered (a bound on total work)
    pub(super) budget: u64,
    /// the unroll limit was hit and reported (it is reported once)
    pub(super) unroll_limit_hit: bool,
    /// the symbol of time `t` (a name any declaration of `t` shadows)
    pub(super) time: Id,
}

/// Expression nodes lowered per model at most (unrolled loops and sums included).
pub const MAX_WORK: u64 = 5_000_000;

/// Proof that an error was reported: the only way to fail a lowering step,
/// so that no step can fail without a located message (the discipline of
/// serde_derive's `Ctxt`). [`Lowerer::error`] makes one.
#[derive(Clone, Copy, Debug)]
pub(super) struct Reported(());

/// A lowering step's result: the value, or the proof its error was reported.
pub(super) type LResult<T> = Result<T, Reported>;

/// What a name is bound to in scope: its value, kind and declaration place.
pub(super) type Binding3 = (Val, Kind, Span);

pub(super) const FUNCTIONS: &[&str] = &[
    "sin", "cos", "tan", "exp", "ln", "sqrt", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "dot", "cross",
    "norm", "norm2", "sum",
];

/// The name of time in expressions (forces only).
pub(super) const TIME: &str = "t";

/// Built-in constants: names that are not declared but always defined.
pub(super) const CONSTANTS: &[(&str, f64)] = &[("pi", std::f64::consts::PI)];

impl Lowerer<'_> {
    /// Reports an error at `span`; the token it returns is what a failing
    /// step returns.
    pub(super) fn error(&mut self, span: Span, msg: impl Into<String>) -> Reported {
        self.errors.push(Diagnostic::new(self.file, self.src, span, msg));
        Reported(())
    }

    /// The token of an error reported earlier (the expansion budget, spent
    /// and reported once): only valid once one was.
    fn reported_before(&self) -> Reported {
        debug_assert!(!self.errors.is_empty(), "a step failed without a reported error");
        Reported(())
    }

    /// Ends a stage: the errors reported so far, if any, end the lowering
    /// (what follows would only repeat their damage).
    pub(super) fn checkpoint(&mut self) -> Result<(), super::Diagnostics> {
        if self.errors.is_empty() {
            Ok(())
        } else {
            Err(super::Diagnostics(std::mem::take(&mut self.errors)))
        }
    }

    /// Evaluates an integer expression (numbers, sizes, loop variables, `+ - *`).
    pub(super) fn eval_int(&mut self, e: &Expr) -> LResult<i64> {
        let bad = |lw: &mut Self| {
            Err(lw.error(
                e.span,
                "expected an integer expression (whole numbers, sizes and loop variables with + - *)",
            ))
        };
        match &e.kind {
            ExprKind::Number(x) if x.fract() == 0.0 && x.abs() < 1e15 => Ok(*x as i64),
            ExprKind::Name(n) => match self.ienv.get(n) {
                Some(&v) => Ok(v),
                None if self.scope.contains_key(n) => bad(self),
                None => Err(self.error(e.span, format!("unknown size or loop variable `{n}`"))),
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
    pub(super) fn resolve(&mut self, n: &Name) -> LResult<String> {
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

    pub(super) fn declare(&mut self, name: &str, span: Span, val: Val, kind: Kind) {
        let base = name.split('[').next().unwrap_or(name);
        if FUNCTIONS.contains(&base) {
            self.error(
                span,
                format!("`{base}` is a built-in function and cannot be used as a name"),
            );
            return;
        }
        if CONSTANTS.iter().any(|(n, _)| *n == base) {
            self.error(span, format!("`{base}` is a built-in constant and cannot be declared"));
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

    pub(super) fn scalar(&mut self, e: &Expr) -> LResult<Id> {
        match self.expr(e)? {
            Val::S(s) => Ok(s),
            Val::V(_) => Err(self.error(e.span, "expected a scalar here, found a 3-vector")),
        }
    }

    pub(super) fn vector(&mut self, e: &Expr, what: &str) -> LResult<[Id; 3]> {
        match self.expr(e)? {
            Val::V(v) => Ok(v),
            Val::S(_) => Err(self.error(e.span, format!("{what} expects a 3-vector, found a scalar"))),
        }
    }

    pub(super) fn lookup(&mut self, name: &str, span: Span) -> LResult<Val> {
        if let Some((v, _, _)) = self.scope.get(name) {
            return Ok(*v);
        }
        if let Some(&k) = self.ienv.get(name) {
            return Ok(Val::S(self.g.constant(k as f64)));
        }
        if let Some(&(_, c)) = CONSTANTS.iter().find(|(n, _)| *n == name) {
            return Ok(Val::S(self.g.constant(c)));
        }
        if name == TIME {
            return Ok(Val::S(self.time));
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
        Err(self.error(span, hint))
    }

    /// `n[k]` for a family `n`, as a full name.
    pub(super) fn family_member(&mut self, inner: &Expr, idx: &Expr) -> Option<LResult<String>> {
        match &inner.kind {
            ExprKind::Name(n) if self.families.contains(n) => Some(self.eval_int(idx).map(|k| format!("{n}[{k}]"))),
            _ => None,
        }
    }

    pub(super) fn expr(&mut self, e: &Expr) -> LResult<Val> {
        if self.budget == 0 {
            return Err(self.reported_before());
        }
        self.budget -= 1;
        if self.budget == 0 {
            return Err(self.error(e.span, format!("the model expands to more than {MAX_WORK} expression nodes (loops and sums unrolled); reduce its sizes")));
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
                    None => Err(self.error(
                        e.span,
                        "`'` applies to a coordinate's name only (write `x'[0]`, not `x[0]'`)",
                    )),
                },
                _ => Err(self.error(e.span, "`'` applies to a coordinate's name only")),
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
                    Val::V(_) => Err(self.error(
                        e.span,
                        format!("index {i} out of range: a vec3 has components [0], [1], [2]"),
                    )),
                    Val::S(_) => Err(self.error(e.span, "only 3-vectors and indexed families can be indexed")),
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
                    return Err(self.error(
                        e.span,
                        format!("a vector literal has 3 components, this one has {}", items.len()),
                    ));
                }
                let c: Vec<LResult<Id>> = items.iter().map(|x| self.scalar(x)).collect();
                let c: Vec<Id> = c.into_iter().collect::<LResult<_>>()?;
                Ok(Val::V([c[0], c[1], c[2]]))
            }
            ExprKind::Call(f, args) => self.call(f, args, e.span),
            ExprKind::Sum { var, from, to, body } => {
                let (a, b) = (self.eval_int(from)?, self.eval_int(to)?);
                if b - a >= MAX_RANGE {
                    return Err(self.error(
                        e.span,
                        format!("sum over {} terms exceeds the limit of {MAX_RANGE}", b - a + 1),
                    ));
                }
                let saved = self.ienv.insert(var.text.clone(), a);
                let mut terms: Vec<Val> = Vec::new();
                let mut ok = Ok(());
                for k in a..=b {
                    self.ienv.insert(var.text.clone(), k);
                    match self.expr(body) {
                        Ok(v) => terms.push(v),
                        Err(r) => {
                            ok = Err(r);
                            break;
                        }
                    }
                }
                match saved {
                    Some(v) => self.ienv.insert(var.text.clone(), v),
                    None => self.ienv.remove(&var.text),
                };
                ok?;
                match terms.first() {
                    None => Ok(Val::S(self.g.constant(0.0))),
                    Some(Val::S(_)) => {
                        let mut ids = Vec::with_capacity(terms.len());
                        for t in terms {
                            match t {
                                Val::S(s) => ids.push(s),
                                Val::V(_) => {
                                    return Err(self.error(body.span, "the terms of a sum mix scalars and vectors"));
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
                                    return Err(self.error(body.span, "the terms of a sum mix scalars and vectors"));
                                }
                            }
                        }
                        Ok(Val::V([0, 1, 2].map(|i| self.g.add(&comps[i]))))
                    }
                }
            }
        }
    }

    pub(super) fn binary(&mut self, op: BinOp, a: Val, b: Val, span: Span) -> LResult<Val> {
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
                return Err(self.error(
                    span,
                    format!("`{sym}` is not defined for {} and {}{hint}", kind(a), kind(b)),
                ));
            }
        })
    }

    pub(super) fn call(&mut self, f: &Name, args: &[Expr], span: Span) -> LResult<Val> {
        let arity = match f.text.as_str() {
            "dot" | "cross" | "atan2" => 2,
            "sin" | "cos" | "tan" | "exp" | "ln" | "sqrt" | "norm" | "norm2" | "asin" | "acos" | "atan" | "sinh"
            | "cosh" | "tanh" => 1,
            other => {
                return Err(self.error(
                    f.span,
                    format!("unknown function `{other}` (known: {})", FUNCTIONS.join(", ")),
                ));
            }
        };
        if args.len() != arity {
            return Err(self.error(
                span,
                format!("`{}` takes {arity} argument(s), found {}", f.text, args.len()),
            ));
        }
        let elementary = |name: &str| match name {
            "sin" => Some(Func::Sin),
            "cos" => Some(Func::Cos),
            "tan" => Some(Func::Tan),
            "exp" => Some(Func::Exp),
            "ln" => Some(Func::Ln),
            "asin" => Some(Func::Asin),
            "acos" => Some(Func::Acos),
            "atan" => Some(Func::Atan),
            "sinh" => Some(Func::Sinh),
            "cosh" => Some(Func::Cosh),
            "tanh" => Some(Func::Tanh),
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
            "atan2" => {
                let y = self.scalar(&args[0]);
                let x = self.scalar(&args[1]);
                let (y, x) = (y?, x?);
                Ok(Val::S(self.g.atan2(y, x)))
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

    pub(super) fn flatten(v: Val) -> Vec<Id> {
        match v {
            Val::S(s) => vec![s],
            Val::V(v) => v.to_vec(),
        }
    }
}
