//! pest grammar → syntax tree.

use pest::iterators::Pair;
use pest::Parser;

use super::ast::*;
use crate::diagnostic::{Diagnostic, Span};

mod generated {
    // pest generates the `Rule` enum; it is an implementation detail.
    #![allow(missing_docs)]
    #[derive(pest_derive::Parser)]
    #[grammar = "dsl/grammar.pest"]
    pub struct ModelParser;
}
use generated::{ModelParser, Rule};

fn span(p: &Pair<Rule>) -> Span {
    Span::new(p.as_span().start(), p.as_span().end())
}

fn name(p: Pair<Rule>) -> Name {
    Name {
        span: span(&p),
        text: p.as_str().to_string(),
        index: None,
    }
}

/// `ident` or `ident[expr]`.
fn iname(p: Pair<Rule>) -> PResult<Name> {
    if p.as_rule() == Rule::ident {
        return Ok(name(p));
    }
    let sp = span(&p);
    let mut it = p.into_inner();
    let mut n = name(it.next().expect("grammar: iname ident"));
    if let Some(e) = it.next() {
        n.index = Some(Box::new(expr(e)?));
        n.span = sp;
    }
    Ok(n)
}

fn describe(rule: &Rule) -> Option<&'static str> {
    Some(match rule {
        Rule::EOI => "end of file",
        Rule::model => "`model`",
        Rule::ident => "a name",
        Rule::number => "a number",
        Rule::integer => "an index",
        Rule::iname => "a name",
        Rule::init_for => "`for`",
        Rule::expr => "an expression",
        Rule::add | Rule::sub | Rule::mul | Rule::div | Rule::pow => "an operator",
        Rule::index => "`[`",
        Rule::prime => "`'`",
        Rule::ty => "a type (`scalar` or `vec3`)",
        Rule::parameters
        | Rule::coordinates
        | Rule::velocities
        | Rule::frame
        | Rule::let_item
        | Rule::lagrangian
        | Rule::constraint
        | Rule::holonomic
        | Rule::invariant
        | Rule::initial
        | Rule::inputs
        | Rule::force_gen
        | Rule::force_at
        | Rule::force_vel
        | Rule::dissipation
        | Rule::size
        | Rule::for_block => "an item (parameters, inputs, coordinates, velocities, frame, let, lagrangian, constraint, holonomic, force, dissipation, invariant, initial, size, for)",
        Rule::param | Rule::assign => "`name = value`",
        Rule::decl => "a declaration `name` or `name: vec3`",
        Rule::frame_eq => "a frame equation `q' = ...`",
        _ => return None,
    })
}

fn syntax_error(file: &str, src: &str, e: pest::error::Error<Rule>) -> Diagnostic {
    let (start, end) = match e.location {
        pest::error::InputLocation::Pos(p) => (p, p + 1),
        pest::error::InputLocation::Span((a, b)) => (a, b),
    };
    let msg = match &e.variant {
        pest::error::ErrorVariant::ParsingError { positives, .. } => {
            let mut exp: Vec<&str> = positives.iter().filter_map(describe).collect();
            exp.sort();
            exp.dedup();
            let found = src[start.min(src.len())..]
                .split(|c: char| c.is_whitespace())
                .next()
                .filter(|s| !s.is_empty())
                .map_or("end of file".to_string(), |s| {
                    // control characters (a NUL byte) shown escaped, not raw
                    let shown: String = s
                        .chars()
                        .take(20)
                        .map(|c| {
                            if c.is_control() {
                                c.escape_debug().to_string()
                            } else {
                                c.to_string()
                            }
                        })
                        .collect();
                    format!("`{shown}`")
                });
            if exp.is_empty() {
                format!("syntax error: unexpected {found}")
            } else {
                format!("syntax error: expected {}, found {found}", exp.join(" or "))
            }
        }
        pest::error::ErrorVariant::CustomError { message } => message.clone(),
    };
    Diagnostic::new(file, src, Span::new(start, end), msg)
}

/// Deepest bracket nesting accepted (deeper input would exhaust the parser's stack).
pub const MAX_NESTING: usize = 200;
/// Most operators accepted in one model file (a guard against runaway input).
pub const MAX_OPERATORS: usize = 50_000;

/// Rejects input whose shape alone would make the recursive parser or the
/// syntax tree overflow the stack.
/// Comments count for nothing: they are skipped, and an unterminated `/*`
/// is reported where it starts.
fn check_size(file: &str, src: &str) -> Result<(), Diagnostic> {
    let mut depth = 0usize;
    let mut ops = 0usize;
    let bytes = src.as_bytes();
    let mut chars = src.char_indices();
    while let Some((i, c)) = chars.next() {
        if c == '/' && bytes.get(i + 1) == Some(&b'/') {
            // To the end of the line.
            for (_, c) in chars.by_ref() {
                if c == '\n' {
                    break;
                }
            }
            continue;
        }
        if c == '/' && bytes.get(i + 1) == Some(&b'*') {
            match src[i + 2..].find("*/") {
                Some(k) => {
                    let end = i + 2 + k + 2;
                    while chars.clone().next().is_some_and(|(j, _)| j < end) {
                        chars.next();
                    }
                    continue;
                }
                None => {
                    return Err(Diagnostic::new(
                        file,
                        src,
                        Span::new(i, i + 2),
                        "unterminated comment: this `/*` has no `*/` before the end of the file".to_string(),
                    ))
                }
            }
        }
        match c {
            '(' | '[' | '{' => {
                depth += 1;
                if depth > MAX_NESTING {
                    return Err(Diagnostic::new(
                        file,
                        src,
                        Span::new(i, i + 1),
                        format!("brackets nested more than {MAX_NESTING} deep"),
                    ));
                }
            }
            ')' | ']' | '}' => depth = depth.saturating_sub(1),
            '+' | '-' | '*' | '/' | '^' => {
                ops += 1;
                if ops > MAX_OPERATORS {
                    return Err(Diagnostic::new(
                        file,
                        src,
                        Span::new(i, i + 1),
                        format!("more than {MAX_OPERATORS} operators in one model file; use `for` and `sum` for repeated structure"),
                    ));
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// Parses a model file's text. `file` is used in error messages only.
pub fn parse(file: &str, src: &str) -> Result<ModelAst, Diagnostic> {
    check_size(file, src)?;
    let mut pairs = ModelParser::parse(Rule::file, src).map_err(|e| syntax_error(file, src, e))?;
    let model = pairs
        .next()
        .and_then(|f| f.into_inner().next())
        .expect("grammar: file holds a model");
    let mut inner = model.into_inner();
    let mname = name(inner.next().expect("grammar: model has a name"));
    let mut items = Vec::new();
    let mut errors = Vec::new();
    for p in inner {
        let sp = span(&p);
        match item(p) {
            Ok(it) => items.push((it, sp)),
            Err((s, m)) => errors.push(Diagnostic::new(file, src, s, m)),
        }
    }
    if let Some(e) = errors.into_iter().next() {
        return Err(e);
    }
    Ok(ModelAst { name: mname, items })
}

/// Checks that `text` is one expression of the model language (its syntax
/// only: names are checked where it is used). `Err` is the message, with
/// the column where `text` has more than one line.
pub fn check_expression(text: &str) -> Result<(), String> {
    check_size("", text).map_err(|d| d.message)?;
    let pairs = ModelParser::parse(Rule::expression, text).map_err(|e| {
        let d = syntax_error("", text, e);
        let m = d.message.replace("end of file", "the end of the expression");
        format!("{m} (at column {})", d.column)
    })?;
    let p = pairs
        .into_iter()
        .next()
        .and_then(|p| p.into_inner().next())
        .expect("grammar: an expression");
    expr(p).map(|_| ()).map_err(|(_, m)| m)
}

type PResult<T> = Result<T, (Span, String)>;

fn binding(p: Pair<Rule>) -> PResult<Binding> {
    let mut it = p.into_inner().peekable();
    let mut n = iname(it.next().expect("grammar: binding name"))?;
    if let Some(pr) = it.next_if(|q| q.as_rule() == Rule::prime) {
        n.text.push('\'');
        n.span.end = span(&pr).end;
    }
    let value = expr(it.next().expect("grammar: binding value"))?;
    Ok(Binding { name: n, value })
}

fn equation(p: Pair<Rule>) -> PResult<Equation> {
    let sp = span(&p);
    let mut it = p.into_inner();
    let lhs = expr(it.next().expect("grammar: lhs"))?;
    let rhs = expr(it.next().expect("grammar: rhs"))?;
    Ok(Equation { lhs, rhs, span: sp })
}

fn decls(p: Pair<Rule>) -> PResult<Vec<Decl>> {
    p.into_inner()
        .map(|d| {
            let mut it = d.into_inner();
            let n = iname(it.next().expect("grammar: decl name"))?;
            let ty = match it.next().map(|t| t.as_str().to_string()) {
                Some(t) if t == "vec3" => Ty::Vec3,
                _ => Ty::Scalar,
            };
            Ok(Decl { name: n, ty })
        })
        .collect()
}

fn item(p: Pair<Rule>) -> PResult<Item> {
    Ok(match p.as_rule() {
        Rule::parameters => Item::Parameters(p.into_inner().map(binding).collect::<PResult<_>>()?),
        Rule::coordinates => Item::Coordinates(decls(p)?),
        Rule::velocities => Item::Velocities(decls(p)?),
        Rule::size => Item::Size(binding(p)?),
        Rule::for_block => {
            let mut it = p.into_inner();
            let var = name(it.next().expect("grammar: for variable"));
            let from = expr(it.next().expect("grammar: for start"))?;
            let to = expr(it.next().expect("grammar: for end"))?;
            let items = it
                .map(|q| {
                    let sp = span(&q);
                    item(q).map(|i| (i, sp))
                })
                .collect::<PResult<_>>()?;
            Item::For { var, from, to, items }
        }
        Rule::frame => Item::Frame(p.into_inner().map(binding).collect::<PResult<_>>()?),
        Rule::let_item => Item::Let(binding(p)?),
        Rule::lagrangian => Item::Lagrangian(expr(p.into_inner().next().expect("grammar: lagrangian"))?),
        Rule::constraint => Item::Constraint(equation(p)?),
        Rule::holonomic => Item::Holonomic(equation(p)?),
        Rule::invariant => Item::Invariant(binding(p)?),
        Rule::inputs => Item::Inputs(decls(p)?),
        Rule::force_gen => Item::Force(Force::Generalized(binding(p)?)),
        Rule::force_at | Rule::force_vel => {
            let at_velocity = p.as_rule() == Rule::force_vel;
            let mut it = p
                .into_inner()
                .filter(|q| !matches!(q.as_rule(), Rule::kw_at | Rule::kw_velocity));
            let place = expr(it.next().expect("grammar: force place"))?;
            let f = expr(it.next().expect("grammar: force value"))?;
            Item::Force(if at_velocity {
                Force::AtVelocity(place, f)
            } else {
                Force::At(place, f)
            })
        }
        Rule::dissipation => Item::Dissipation(expr(p.into_inner().next().expect("grammar: dissipation"))?),
        Rule::initial => {
            let mut it = p.into_inner();
            let n = name(it.next().expect("grammar: initial name"));
            let entries = it.map(init_entry).collect::<PResult<_>>()?;
            Item::Initial(Initial { name: n, entries })
        }
        r => unreachable!("grammar: unexpected item {r:?}"),
    })
}

fn init_entry(p: Pair<Rule>) -> PResult<InitEntry> {
    Ok(match p.as_rule() {
        Rule::let_item => InitEntry::Let(binding(p)?),
        Rule::init_for => {
            let mut it = p.into_inner();
            let var = name(it.next().expect("grammar: for variable"));
            let from = expr(it.next().expect("grammar: for start"))?;
            let to = expr(it.next().expect("grammar: for end"))?;
            let entries = it.map(init_entry).collect::<PResult<_>>()?;
            InitEntry::For { var, from, to, entries }
        }
        _ => InitEntry::Assign(binding(p)?),
    })
}

/// Deepest expression tree accepted, counted in operators and calls nested
/// inside each other. Long chains of `+ -` or `* /` do not count: they are
/// balanced, so only `^`, unary `-`, `'`, indexing and
/// calls nest. Every later pass walks the tree recursively; this bound keeps
/// them far from the end of the stack, in every host (CLI, Python, derive).
pub const MAX_EXPR_DEPTH: usize = 256;

/// Chains of more operands than this (of one precedence level, such as
/// `a + b - c + ...`) are built as a balanced tree rather than the left-deep
/// one that left associativity gives; shorter ones keep the exact shape the
/// user wrote, so the usual models evaluate bit for bit as before.
const BALANCE_ABOVE: usize = 32;

fn expr(p: Pair<Rule>) -> PResult<Expr> {
    expr_d(p).map(|(e, _)| e)
}

fn join(a: Span, b: Span) -> Span {
    Span::new(a.start.min(b.start), a.end.max(b.end))
}

fn too_deep(sp: Span, depth: usize) -> (Span, String) {
    (
        sp,
        format!("expression nested {depth} deep, more than the limit {MAX_EXPR_DEPTH}; split it with `let`"),
    )
}

fn node(kind: ExprKind, span: Span, depth: usize) -> PResult<(Expr, usize)> {
    if depth > MAX_EXPR_DEPTH {
        return Err(too_deep(span, depth));
    }
    Ok((Expr { kind, span }, depth))
}

/// An operand on the stack of [`expr_d`]: a finished expression with its
/// depth, or a left-associative chain still growing (`+ -` is class 1,
/// `* /` class 2); its first operand carries no operator.
enum Operand {
    Done(Expr, usize),
    Chain(u8, Vec<(BinOp, Expr, usize)>),
}

fn class(op: BinOp) -> u8 {
    match op {
        BinOp::Add | BinOp::Sub => 1,
        BinOp::Mul | BinOp::Div => 2,
        BinOp::Pow => 4,
    }
}

impl Operand {
    fn finish(self) -> PResult<(Expr, usize)> {
        match self {
            Operand::Done(e, d) => Ok((e, d)),
            Operand::Chain(c, items) => finish_chain(c, items),
        }
    }
}

/// Builds a chain `t0 op1 t1 op2 t2 ...` of one precedence level. Short
/// chains are left-deep, as written. Long ones are split in two halves,
/// recursively, which is exact algebra: `L + R`, or `L - R'` where `R'` is
/// the right half with its signs flipped; a product is split at a `*` only
/// (so that no factor moves into a denominator), or, when the rest holds
/// no `*`, at a `/` (`L / (b * c ...)`, all divisors being scalars).
fn finish_chain(class: u8, mut items: Vec<(BinOp, Expr, usize)>) -> PResult<(Expr, usize)> {
    if items.len() <= BALANCE_ABOVE {
        let mut it = items.into_iter();
        let (_, mut acc, mut d) = it.next().expect("a chain has a first operand");
        for (op, e, de) in it {
            let sp = join(acc.span, e.span);
            let depth = d.max(de) + 1;
            (acc, d) = node(ExprKind::Binary(op, Box::new(acc), Box::new(e)), sp, depth)?;
        }
        return Ok((acc, d));
    }
    let n = items.len();
    let mid = n / 2;
    let split = if class == 1 {
        mid
    } else {
        // the `*` nearest the middle, else (no `*` after the first operand
        // at all) the middle `/`
        let near = (1..n)
            .filter(|&k| items[k].0 == BinOp::Mul)
            .min_by_key(|&k| k.abs_diff(mid));
        match near {
            Some(k) => k,
            None => mid,
        }
    };
    let mut right = items.split_off(split);
    let op = right[0].0;
    let inverse = matches!(op, BinOp::Sub | BinOp::Div);
    if inverse {
        // every operator of a chain holding no `*` is `/`, so flipping makes
        // a plain product of divisors
        for (o, _, _) in right.iter_mut().skip(1) {
            *o = match *o {
                BinOp::Add => BinOp::Sub,
                BinOp::Sub => BinOp::Add,
                BinOp::Mul => BinOp::Div,
                BinOp::Div => BinOp::Mul,
                BinOp::Pow => BinOp::Pow,
            };
        }
    }
    let (l, dl) = finish_chain(class, items)?;
    let (r, dr) = finish_chain(class, right)?;
    let sp = join(l.span, r.span);
    node(ExprKind::Binary(op, Box::new(l), Box::new(r)), sp, dl.max(dr) + 1)
}

/// Pending operators of [`expr_d`], with their precedence: `+ -` 1,
/// `* /` 2, unary `-` 3, `^` 4 (right-associative); postfix operators (5)
/// apply at once.
enum Pending {
    Infix(BinOp),
    Neg(Span),
}

fn prec(p: &Pending) -> u8 {
    match p {
        Pending::Infix(op) => class(*op),
        Pending::Neg(_) => 3,
    }
}

/// Reduces the top pending operator.
fn reduce(ops: &mut Vec<Pending>, vals: &mut Vec<Operand>) -> PResult<()> {
    let top = ops.pop().expect("reduce: an operator is pending");
    let rhs = vals.pop().expect("reduce: an operand").finish()?;
    match top {
        Pending::Neg(sp) => {
            let span = join(sp, rhs.0.span);
            let (e, d) = node(ExprKind::Neg(Box::new(rhs.0)), span, rhs.1 + 1)?;
            vals.push(Operand::Done(e, d));
        }
        Pending::Infix(op) => {
            let lhs = vals.pop().expect("reduce: a left operand");
            let c = class(op);
            match lhs {
                Operand::Chain(lc, mut items) if lc == c && c != 4 => {
                    items.push((op, rhs.0, rhs.1));
                    vals.push(Operand::Chain(lc, items));
                }
                lhs if c != 4 => {
                    let (l, dl) = lhs.finish()?;
                    vals.push(Operand::Chain(c, vec![(BinOp::Add, l, dl), (op, rhs.0, rhs.1)]));
                }
                lhs => {
                    let (l, dl) = lhs.finish()?;
                    let span = join(l.span, rhs.0.span);
                    let (e, d) = node(
                        ExprKind::Binary(op, Box::new(l), Box::new(rhs.0)),
                        span,
                        dl.max(rhs.1) + 1,
                    )?;
                    vals.push(Operand::Done(e, d));
                }
            }
        }
    }
    Ok(())
}

/// Operator-precedence parsing of the flat sequence the grammar gives
/// (`prefix* primary postfix* (infix prefix* primary postfix*)*`), with
/// explicit stacks: no recursion along a chain of operators, however long.
/// Precedence, low to high: `+ -`, `* /`, unary `-`, `^` (right), postfix.
fn expr_d(p: Pair<Rule>) -> PResult<(Expr, usize)> {
    let mut ops: Vec<Pending> = Vec::new();
    let mut vals: Vec<Operand> = Vec::new();
    for q in p.into_inner() {
        match q.as_rule() {
            Rule::neg => ops.push(Pending::Neg(span(&q))),
            Rule::add | Rule::sub | Rule::mul | Rule::div | Rule::pow => {
                let op = match q.as_rule() {
                    Rule::add => BinOp::Add,
                    Rule::sub => BinOp::Sub,
                    Rule::mul => BinOp::Mul,
                    Rule::div => BinOp::Div,
                    _ => BinOp::Pow,
                };
                let pr = class(op);
                while let Some(top) = ops.last() {
                    let t = prec(top);
                    // left-associative operators reduce an equal precedence
                    if t > pr || (t == pr && op != BinOp::Pow) {
                        reduce(&mut ops, &mut vals)?;
                    } else {
                        break;
                    }
                }
                ops.push(Pending::Infix(op));
            }
            Rule::index | Rule::prime => {
                let (lhs, dl) = vals.pop().expect("grammar: postfix follows an operand").finish()?;
                let opsp = span(&q);
                let sp = join(lhs.span, opsp);
                let (kind, d) = if q.as_rule() == Rule::index {
                    let (i, di) = expr_d(q.into_inner().next().expect("grammar: index"))?;
                    (ExprKind::Index(Box::new(lhs), Box::new(i)), dl.max(di) + 1)
                } else {
                    (ExprKind::Prime(Box::new(lhs)), dl + 1)
                };
                let (e, d) = node(kind, sp, d)?;
                vals.push(Operand::Done(e, d));
            }
            _ => {
                let (e, d) = primary(q)?;
                vals.push(Operand::Done(e, d));
            }
        }
    }
    while !ops.is_empty() {
        reduce(&mut ops, &mut vals)?;
    }
    debug_assert_eq!(vals.len(), 1, "grammar: one expression");
    vals.pop().expect("grammar: an expression").finish()
}

fn primary(p: Pair<Rule>) -> PResult<(Expr, usize)> {
    let sp = span(&p);
    let (kind, d) = match p.as_rule() {
        Rule::number => (
            ExprKind::Number(
                p.as_str()
                    .parse::<f64>()
                    .map_err(|e| (sp, format!("bad number: {e}")))?,
            ),
            1,
        ),
        Rule::ident => (ExprKind::Name(p.as_str().to_string()), 1),
        Rule::expr => return expr_d(p),
        Rule::tuple => {
            let mut d = 0;
            let mut parts = Vec::new();
            for q in p.into_inner() {
                let (e, de) = expr_d(q)?;
                d = d.max(de);
                parts.push(e);
            }
            (ExprKind::Tuple(parts), d + 1)
        }
        Rule::sum => {
            let mut it = p.into_inner();
            let var = name(it.next().expect("grammar: sum variable"));
            let (from, d1) = expr_d(it.next().expect("grammar: sum start"))?;
            let (to, d2) = expr_d(it.next().expect("grammar: sum end"))?;
            let (body, d3) = expr_d(it.next().expect("grammar: sum body"))?;
            (
                ExprKind::Sum {
                    var,
                    from: Box::new(from),
                    to: Box::new(to),
                    body: Box::new(body),
                },
                d1.max(d2).max(d3) + 1,
            )
        }
        Rule::call => {
            let mut it = p.into_inner();
            let f = name(it.next().expect("grammar: call name"));
            let mut d = 0;
            let mut args = Vec::new();
            for q in it {
                let (e, de) = expr_d(q)?;
                d = d.max(de);
                args.push(e);
            }
            (ExprKind::Call(f, args), d + 1)
        }
        r => unreachable!("grammar: unexpected primary {r:?}"),
    };
    node(kind, sp, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_items_and_precedence() {
        let src = "model m { parameters { a = 2 }\n coordinates { q }\n lagrangian = -a*q'^2/2 + q[0] }";
        let ast = parse("m.hamel", src).unwrap();
        assert_eq!(ast.name.text, "m");
        assert_eq!(ast.items.len(), 3);
        let Item::Lagrangian(e) = &ast.items[2].0 else { panic!() };
        // top level is `+`
        let ExprKind::Binary(BinOp::Add, l, _) = &e.kind else {
            panic!("{e:?}")
        };
        // -a*q'^2/2 parses as ((-a) * (q')^2) / 2
        let ExprKind::Binary(BinOp::Div, l, _) = &l.kind else {
            panic!()
        };
        let ExprKind::Binary(BinOp::Mul, n, p) = &l.kind else {
            panic!()
        };
        assert!(matches!(n.kind, ExprKind::Neg(_)));
        let ExprKind::Binary(BinOp::Pow, b, _) = &p.kind else {
            panic!()
        };
        assert!(matches!(b.kind, ExprKind::Prime(_)));
    }

    #[test]
    fn syntax_error_has_place_and_caret() {
        let src = "model m {\n  lagrangian = 1 +\n}\n";
        let e = parse("m.hamel", src).unwrap_err();
        assert_eq!(e.line, 3, "{e}");
        assert!(e.to_string().contains("--> m.hamel:3:1"), "{e}");
        assert!(e.message.contains("expected"), "{e}");
    }

    #[test]
    fn comments_do_not_count_toward_the_limits() {
        let body = "model m { coordinates { q } lagrangian = q'^2 / 2 - q^2 / 2 }\n";
        let noise = "// ((((( + - * / ^ ))))) [[[ {{{\n/* ((((( + - * / ^ */\n".repeat(30_000);
        assert!(parse("m.hamel", &format!("{noise}{body}")).is_ok());
        let ops = "+ 1 ".repeat(MAX_OPERATORS + 1);
        let e = parse(
            "m.hamel",
            &format!("model m {{ coordinates {{ q }} lagrangian = q {ops} }}"),
        )
        .unwrap_err();
        assert!(e.message.contains("operators"), "{e}");
    }

    #[test]
    fn an_unterminated_block_comment_is_reported_where_it_starts() {
        let src = "model m {\n  coordinates { q } /* fine */\n  /* never closed\n  lagrangian = q'^2\n}\n";
        let e = parse("m.hamel", src).unwrap_err();
        assert_eq!(e.line, 3, "{e}");
        assert!(e.message.contains("unterminated comment"), "{e}");
    }
}
