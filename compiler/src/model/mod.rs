//! Lowering of a syntax tree into the scalar model IR, with semantic checks.
//!
//! All vector notation is expanded to scalars here; every quantity of the model
//! becomes an expression in one [`Graph`]. Errors are collected, not stopped
//! at: a user sees every unknown name of a file in one go.

use std::collections::{HashMap, HashSet};

use crate::diagnostic::{Diagnostic, Diagnostics, Span};
use crate::dsl::ast::*;
use crate::sym::{Differentiator, Graph, Id};

mod declare;
mod force;
mod initial;
mod ir;
mod lowerer;
mod unroll;

pub use ir::*;
pub use lowerer::MAX_WORK;

use declare::*;
use force::*;
use initial::*;
use lowerer::*;
use unroll::*;

/// Why time may not appear in the Lagrangian, a constraint, the frame or
/// an invariant (a rheonomic system), what is missing, and what to write.
const RHEONOMIC: &str = "depends on time `t` (a rheonomic system), which hamel does not integrate yet: the steps could sample it at their stage times, but the recovery of velocities from a scheme's state, the invariants (the energy ⟨p, q'⟩ − L), the constraint residuals and the energy balance (which needs the power −∂L/∂t) are evaluated without time. Write the model in the moving frame, where it is autonomous (a bead on a hoop turning at a constant rate ω, in the hoop's angle: `lagrangian = 0.5 * m * R^2 * (th'^2 + omega^2 * sin(th)^2) + m * g * R * cos(th)`, models/gallery/rotating_hoop.hamel), or give the prescribed motion's effect as a `force`, which may use `t`";

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
    let (mut inputs, mut input_groups) = (vec![], vec![]);
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
            Item::Inputs(ds) => declare_groups(&mut lw, ds, Kind::Input, &mut inputs, &mut input_groups),
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
    // Inputs and time may drive forces only: everything else is a property of
    // the free motion, which the schemes treat as time-independent.
    let exogenous: Vec<Id> = inputs.iter().map(|s: &Scalar| s.sym).chain([time]).collect();
    let free_of_inputs = |lw: &mut Lowerer, e: Id, span: Span, what: &str| -> bool {
        if lw.g.depends_on(e, &exogenous[..exogenous.len() - 1]) {
            lw.error(
                span,
                format!(
                    "{what} may not depend on the inputs or on time `t`; they may drive `force` and `dissipation` only"
                ),
            );
            return false;
        }
        if lw.g.depends_on(e, &[time]) {
            lw.error(span, format!("{what} {RHEONOMIC}"));
            return false;
        }
        true
    };
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
                        if !free_of_inputs(&mut lw, r, eq.value.span, "a frame equation") {
                            break;
                        }
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
                    if free_of_inputs(&mut lw, l, e.span, "the Lagrangian") {
                        lagrangian = Some(l);
                    }
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
                    if !free_of_inputs(&mut lw, c, eq.span, "a constraint") {
                        break;
                    }
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
                if name == "energy" {
                    lw.error(
                        b.name.span,
                        "`energy` is monitored already (⟨p, ξ⟩ − l, from the Lagrangian): give this invariant another name",
                    );
                    continue;
                }
                if invariants
                    .iter()
                    .any(|i: &Labelled| i.name == name || i.name.starts_with(&format!("{name}[")))
                {
                    lw.error(b.name.span, format!("duplicate invariant `{name}`"));
                    continue;
                }
                if let Ok(v) = lw.expr(&b.value) {
                    if Lowerer::flatten(v)
                        .iter()
                        .any(|&e| !free_of_inputs(&mut lw, e, b.value.span, "an invariant"))
                    {
                        continue;
                    }
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
                    if s.q.iter().chain(&s.v).any(|&e| lw.g.depends_on(e, &exogenous)) {
                        lw.error(
                            init.name.span,
                            "an initial state may not depend on the inputs or on time `t`",
                        );
                        continue;
                    }
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
    let force = lower_forces(
        &mut lw,
        &placed,
        &coord_groups,
        &vel_groups,
        &q_syms,
        &v_syms,
        frame.as_deref(),
    );
    // An input that no force reads would be set by every run and change
    // nothing, without a word.
    for grp in &input_groups {
        let comps: Vec<Id> = inputs[grp.offset..grp.offset + grp.ty.components()]
            .iter()
            .map(|s| s.sym)
            .collect();
        if !force
            .as_ref()
            .is_some_and(|f| f.iter().any(|&e| lw.g.depends_on(e, &comps)))
        {
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
        inputs,
        input_groups,
        time,
        force,
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
