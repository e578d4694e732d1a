//! Lowering of a syntax tree into the scalar model IR, with semantic checks.
//!
//! All vector notation is expanded to scalars here; every quantity of the model
//! becomes an expression in one [`Graph`]. Errors are collected, not stopped
//! at: a user sees every unknown name of a file in one go.

use std::collections::{HashMap, HashSet};

use crate::diagnostic::{Diagnostic, Diagnostics, Span};
use crate::dsl::ast::*;
use crate::sym::{Differentiator, Graph, Id};

mod body;
mod declare;
mod force;
mod initial;
mod ir;
mod lowerer;
mod tableau;
mod unroll;

pub use ir::*;
pub use lowerer::MAX_WORK;

use body::{Body, Context};
use declare::*;
use force::*;
use lowerer::*;
use unroll::*;

/// Why time may not appear in a frame equation, a velocity constraint or an
/// invariant, and what to write instead. (The Lagrangian and holonomic
/// constraints may depend on it: rheonomic systems, see `scheme::step`.)
const RHEONOMIC: &str = "depends on time `t`, which hamel takes in the Lagrangian and in holonomic constraints only (a rheonomic system: a driven support, a wire turned at a prescribed rate); a frame, a velocity constraint or an invariant that changes with time is not supported. Put the prescribed motion in the Lagrangian or in a `holonomic` constraint, or give its effect as a `force`, which may use `t`";

/// Parses and lowers a model file's text.
pub fn load(file: &str, src: &str) -> Result<Model, Diagnostics> {
    load_with_sizes(file, src, &[])
}

/// [`load`] with sizes of indexed families overridden (e.g. `N = 8` from a derive).
pub fn load_with_sizes(file: &str, src: &str, sizes: &[(String, i64)]) -> Result<Model, Diagnostics> {
    // Files saved by other editors: a byte-order mark, CR LF or CR-only line ends.
    let src = src.strip_prefix('\u{feff}').unwrap_or(src);
    let normalized;
    let src = if src.contains('\r') {
        normalized = src.replace("\r\n", "\n").replace('\r', "\n");
        normalized.as_str()
    } else {
        src
    };
    let ast = crate::dsl::parse(file, src).map_err(|d| Diagnostics(vec![d]))?;
    lower(file, src, &ast, sizes)
}

/// A function of time written in the model language, such as
/// `0.5 * sin(2 * pi * t)`: its graph and root, in which time is the symbol
/// `__t` (as in models). For input schedules; the text may use `t`, numbers,
/// `pi` and the built-in functions. Fails with the reason on anything else.
pub fn time_function(text: &str) -> Result<(Graph, Id), String> {
    if text.contains(['{', '}', '\n', ';']) || text.contains("//") || text.contains("/*") {
        return Err(format!("`{text}` is not an expression"));
    }
    // its syntax alone first, so that errors speak of the expression, not of
    // the model it is wrapped in below
    crate::dsl::parser::check_expression(text)?;
    let src = format!("model schedule {{ coordinates {{ s_ }} lagrangian = s_'^2 let value = {text} }}");
    let m = load("", &src).map_err(|d| {
        d.0.first()
            .map_or_else(|| "not an expression".to_string(), |d| d.message.clone())
    })?;
    let root = m
        .lets
        .iter()
        .find(|(n, _)| n == "value")
        .map(|(_, ids)| ids.clone())
        .ok_or("not an expression")?;
    if root.len() != 1 {
        return Err(format!("`{text}` is a vector; an input takes one number"));
    }
    let g = m.graph;
    let free: Vec<Id> = m.coords.iter().chain(&m.vels).map(|s| s.sym).collect();
    if g.depends_on(root[0], &free) {
        return Err(format!("`{text}` may depend on time `t` only"));
    }
    Ok((g, root[0]))
}

/// Lowers a parsed model, collecting every error it finds.
pub fn lower(file: &str, src: &str, ast: &ModelAst, size_overrides: &[(String, i64)]) -> Result<Model, Diagnostics> {
    let has_frame = ast
        .items
        .iter()
        .any(|(i, _)| contains(i, &|i| matches!(i, Item::Frame(_))));
    let mut g = Graph::new();
    // Not `t` itself: a parameter named `t` would be the same symbol.
    let time = g.symbol("__t");
    let mut lw = Lowerer {
        file,
        src,
        g,
        time,
        scope: HashMap::new(),
        errors: vec![],
        identity_frame: !has_frame,
        ienv: HashMap::new(),
        families: HashSet::new(),
        sizes: HashMap::new(),
        budget: MAX_WORK,
        unroll_limit_hit: false,
    };
    // The stages, in order. Each reports its errors into `lw`; a checkpoint
    // ends the lowering where what follows would only repeat the damage.
    // 1. Sizes (used anywhere), then the `for` families unrolled.
    let sizes = sizes(&mut lw, ast, size_overrides);
    let mut placed = Vec::new();
    unroll(&mut lw, &ast.items, &[], &mut placed);
    lw.checkpoint()?;
    // 2. Declarations.
    let decl = declarations(&mut lw, ast, &placed, has_frame);
    // 3. `let` bindings, in order.
    lets(&mut lw, &placed);
    // 4. The body: frame, Lagrangian, constraints, invariants, initial states.
    let cx = Context {
        decl: &decl,
        q_syms: decl.coords.iter().map(|s| s.sym).collect(),
        v_syms: decl.vels.iter().map(|s| s.sym).collect(),
        exogenous: decl.inputs.iter().map(|s| s.sym).chain([time]).collect(),
        time,
    };
    let mut out = Body::new(has_frame, decl.coords.len());
    for p in &placed {
        set_env(&mut lw, &p.env);
        match p.item {
            Item::Frame(eqs) => body::frame_equations(&mut lw, &cx, eqs, &mut out),
            Item::Lagrangian(e) => body::lagrangian(&mut lw, &cx, e, &mut out),
            Item::Constraint(eq) => body::constraint(&mut lw, &cx, eq, true, &mut out),
            Item::Holonomic(eq) => body::constraint(&mut lw, &cx, eq, false, &mut out),
            Item::Invariant(b) => body::invariant(&mut lw, &cx, b, &mut out),
            Item::Initial(init) => body::initial(&mut lw, &cx, init, &mut out),
            _ => {}
        }
    }
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
    if out.lagrangian.is_none() && lagrangians.is_empty() {
        lw.error(
            ast.name.span,
            format!("model `{}` has no `lagrangian = ...`", ast.name.text),
        );
    }
    // 4b. The Lagrangian once more, indexed `let`s kept as symbols.
    let tableau = if lw.errors.is_empty() {
        tableau::lower(&mut lw, &placed)
    } else {
        None
    };
    // 5. The frame complete, forces, inputs used.
    let frame = complete_frame(&mut lw, &decl, out.frame.take(), &out.frame_written);
    let force = lower_forces(
        &mut lw,
        &placed,
        &decl.coord_groups,
        &decl.vel_groups,
        &cx.q_syms,
        &cx.v_syms,
        frame.as_deref(),
    );
    unused_inputs(&mut lw, &decl, force.as_deref());
    lw.checkpoint()?;
    // 6. The model.
    let lets = collected_lets(&lw);
    let Declared {
        params,
        coords,
        coord_groups,
        vels,
        vel_groups,
        inputs,
        input_groups,
    } = decl;
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
        lagrangian: out.lagrangian.expect("checked above"),
        inputs,
        input_groups,
        time,
        force,
        velocity_constraints: out.vcons,
        holonomic: out.hcons,
        invariants: out.invariants,
        initials: out.initials,
        source_hash: source_hash(src, &sizes),
        sizes,
        lets,
        tableau,
    })
}

/// [`Model::source_hash`]: the text, then each size (in file order) with a
/// separator no source byte sequence can imitate, since lengths are hashed too.
fn source_hash(src: &str, sizes: &[(String, i64)]) -> u64 {
    use hamel_kernel::hash::{fnv1a, FNV_OFFSET};
    let mut h = fnv1a(FNV_OFFSET, &(src.len() as u64).to_le_bytes());
    h = fnv1a(h, src.as_bytes());
    for (name, v) in sizes {
        h = fnv1a(h, &(name.len() as u64).to_le_bytes());
        h = fnv1a(h, name.as_bytes());
        h = fnv1a(h, &v.to_le_bytes());
    }
    h
}

/// Stage 1: the sizes, file values or overrides, each checked.
fn sizes(lw: &mut Lowerer, ast: &ModelAst, size_overrides: &[(String, i64)]) -> Vec<(String, i64)> {
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
                lw.file,
                lw.src,
                ast.name.span,
                format!("model `{}` has no size `{n}` to set", ast.name.text),
            ));
        }
    }
    lw.sizes = lw.ienv.clone();
    sizes
}

/// Stage 3: the `let` bindings, in order.
fn lets(lw: &mut Lowerer, placed: &[Placed]) {
    for p in placed {
        if let Item::Let(b) = p.item {
            set_env(lw, &p.env);
            let Ok(name) = lw.resolve(&b.name) else { continue };
            if let Ok(v) = lw.expr(&b.value) {
                lw.declare(&name, b.name.span, v, Kind::Let);
            }
        }
    }
}

/// Stage 5: the frame `Ψ(q)` once every equation is lowered (`None` where
/// one is missing, reported, or without a frame).
fn complete_frame(
    lw: &mut Lowerer,
    decl: &Declared,
    frame: Option<Vec<Option<Id>>>,
    frame_written: &HashSet<String>,
) -> Option<Vec<Id>> {
    match frame {
        None => None,
        Some(fr) => {
            for grp in &decl.coord_groups {
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
    }
}

/// Stage 5: an input that no force reads would be set by every run and
/// change nothing, without a word.
fn unused_inputs(lw: &mut Lowerer, decl: &Declared, force: Option<&[Id]>) {
    for grp in &decl.input_groups {
        let comps: Vec<Id> = decl.inputs[grp.offset..grp.offset + grp.ty.components()]
            .iter()
            .map(|s| s.sym)
            .collect();
        if !force.is_some_and(|f| f.iter().any(|&e| lw.g.depends_on(e, &comps))) {
            let sp = lw.scope.get(&grp.name).map(|x| x.2).unwrap_or_default();
            lw.error(
                sp,
                format!(
                    "input `{}` is declared but no `force` uses it, so setting it would change nothing; use it in a force or remove it",
                    grp.name
                ),
            );
        }
    }
}

/// The model's `let` definitions, in file order.
fn collected_lets(lw: &Lowerer) -> Vec<(String, Vec<Id>)> {
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
    lets.into_iter().map(|(_, n, ids)| (n, ids)).collect()
}

/// True when `item` or an item nested in it satisfies `pred`.
fn contains(item: &Item, pred: &dyn Fn(&Item) -> bool) -> bool {
    match item {
        Item::For { items, .. } => items.iter().any(|(i, _)| contains(i, pred)),
        other => pred(other),
    }
}

/// True when `e` is linear and homogeneous in the symbols `vars`: its second
/// derivatives in them vanish and it vanishes when they do.
pub fn check_linear(g: &mut Graph, e: Id, vars: &[Id]) -> bool {
    // Derivatives in symbols `e` does not read vanish identically, so only
    // those it reads are taken: a chain's frame equations and constraints
    // each read a few of its 3N velocities, and all pairs of all of them
    // made loading a model O(N³) (12 s at 200 links, 95 s at 400).
    let read: HashSet<Id> = g.symbols_read(e).into_iter().collect();
    let vars: Vec<Id> = vars.iter().copied().filter(|v| read.contains(v)).collect();
    for &a in &vars {
        let da = Differentiator::new(a).diff(g, e);
        for &b in &vars {
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

    #[test]
    fn byte_order_marks_and_carriage_returns_are_accepted() {
        let src = "\u{feff}model b {\r  coordinates { q }\r\n  lagrangian = 0.5 * q'^2 + foo\r}\r";
        let e = load("b.hamel", src).unwrap_err();
        assert_eq!(e.0.len(), 1, "{e}");
        assert_eq!((e.0[0].line, e.0[0].column), (3, 29), "{e}");
        assert!(load("b.hamel", &src.replace(" + foo", "")).is_ok());
    }

    #[test]
    fn invariants_may_not_take_built_in_or_repeated_names() {
        let src = "model i {\n coordinates { q }\n lagrangian = q'^2\n invariant energy = q\n invariant a = q\n invariant a = q'\n}";
        let e = load("i.hamel", src).unwrap_err();
        assert_eq!(e.0.len(), 2, "{e}");
        assert!(e.0[0].message.contains("`energy` is monitored already"), "{e}");
        assert!(e.0[1].message.contains("duplicate invariant `a`"), "{e}");
    }
}
