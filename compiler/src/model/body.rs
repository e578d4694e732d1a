//! Stage 4 of lowering (see [`super::lower`]): the items of a model's body —
//! frame equations, the Lagrangian, constraints, invariants and initial
//! states — each lowered by its own function into one [`Body`].

use std::collections::HashSet;

use crate::diagnostic::Span;
use crate::dsl::ast::*;
use crate::sym::Id;

use super::declare::Declared;
use super::initial::lower_initial;
use super::lowerer::{Lowerer, Val};
use super::{check_linear, InitialState, Labelled, RHEONOMIC};

/// What the body's items lower to.
pub(super) struct Body {
    /// `Ψ(q)` row by row, one entry per coordinate (`None`: no equation
    /// lowered for it); `None` without a frame
    pub(super) frame: Option<Vec<Option<Id>>>,
    /// coordinates that have a frame equation (whether or not it lowered)
    pub(super) frame_written: HashSet<String>,
    pub(super) lagrangian: Option<Id>,
    pub(super) vcons: Vec<Labelled>,
    pub(super) hcons: Vec<Labelled>,
    pub(super) invariants: Vec<Labelled>,
    pub(super) initials: Vec<InitialState>,
}

/// What every item of the body is lowered against.
pub(super) struct Context<'d> {
    pub(super) decl: &'d Declared,
    pub(super) q_syms: Vec<Id>,
    pub(super) v_syms: Vec<Id>,
    /// the inputs, then time
    pub(super) exogenous: Vec<Id>,
    pub(super) time: Id,
}

impl Context<'_> {
    /// Whether `e` is free of the inputs (they may drive forces only) and,
    /// unless `timed` (the Lagrangian and holonomic constraints, which every
    /// scheme samples at its stage times), of time; reports `what` if not.
    pub(super) fn free_of_inputs(&self, lw: &mut Lowerer, e: Id, span: Span, what: &str, timed: bool) -> bool {
        if lw.g.depends_on(e, &self.exogenous[..self.exogenous.len() - 1]) {
            lw.error(
                span,
                format!(
                    "{what} may not depend on the inputs; they may drive `force` and `dissipation` only{}",
                    if timed { " (time `t` may appear)" } else { "" }
                ),
            );
            return false;
        }
        if !timed && lw.g.depends_on(e, &[self.time]) {
            lw.error(span, format!("{what} {RHEONOMIC}"));
            return false;
        }
        true
    }
}

impl Body {
    pub(super) fn new(has_frame: bool, coordinates: usize) -> Body {
        Body {
            frame: has_frame.then(|| vec![None; coordinates]),
            frame_written: HashSet::new(),
            lagrangian: None,
            vcons: vec![],
            hcons: vec![],
            invariants: vec![],
            initials: vec![],
        }
    }
}

/// A `frame { q' = Ψ(q) ξ }` block: one row of `Ψ` per coordinate component.
pub(super) fn frame_equations(lw: &mut Lowerer, cx: &Context, eqs: &[Binding], out: &mut Body) {
    for eq in eqs {
        let Ok(name) = lw.resolve(&eq.name) else { continue };
        let Some(grp) = cx.decl.coord_groups.iter().find(|g| g.name == name).cloned() else {
            lw.error(
                eq.name.span,
                format!("`{name}'`: a frame equation's left side must be a declared coordinate"),
            );
            continue;
        };
        // Whatever goes wrong below is reported there, not as a missing equation.
        out.frame_written.insert(grp.name.clone());
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
        let fr = out.frame.as_mut().expect("has frame");
        if fr[grp.offset].is_some() {
            lw.error(eq.name.span, format!("second frame equation for `{}`", grp.name));
            continue;
        }
        for (k, &r) in rhs.iter().enumerate() {
            if !cx.free_of_inputs(lw, r, eq.value.span, "a frame equation", false) {
                break;
            }
            if !check_linear(&mut lw.g, r, &cx.v_syms) {
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

/// `lagrangian = ...`.
pub(super) fn lagrangian(lw: &mut Lowerer, cx: &Context, e: &Expr, out: &mut Body) {
    if let Ok(l) = lw.scalar(e) {
        if cx.free_of_inputs(lw, l, e.span, "the Lagrangian", true) {
            out.lagrangian = Some(l);
        }
    }
}

/// `constraint a = b` (velocity level) or `holonomic a = b`, component by component.
pub(super) fn constraint(lw: &mut Lowerer, cx: &Context, eq: &Equation, velocity: bool, out: &mut Body) {
    let (l, r) = (lw.expr(&eq.lhs), lw.expr(&eq.rhs));
    let (Ok(l), Ok(r)) = (l, r) else { return };
    let (l, r) = (Lowerer::flatten(l), Lowerer::flatten(r));
    if l.len() != r.len() {
        lw.error(eq.span, "the two sides of the constraint have different shapes");
        return;
    }
    for (k, (a, b)) in l.iter().zip(&r).enumerate() {
        let c = lw.g.sub(*a, *b);
        if !cx.free_of_inputs(
            lw,
            c,
            eq.span,
            if velocity {
                "a velocity constraint"
            } else {
                "a holonomic constraint"
            },
            !velocity,
        ) {
            break;
        }
        let comp = if l.len() > 1 { format!("[{k}]") } else { String::new() };
        if velocity {
            if !lw.g.depends_on(c, &cx.v_syms) || !check_linear(&mut lw.g, c, &cx.v_syms) {
                lw.error(eq.span, "a velocity constraint must be linear and homogeneous in the velocities (A(q) ξ = 0); use `holonomic` for a position constraint");
                break;
            }
            out.vcons.push(Labelled {
                name: format!("constraint {}{comp}", out.vcons.len() + 1),
                expr: c,
            });
        } else {
            if lw.g.depends_on(c, &cx.v_syms) {
                lw.error(
                    eq.span,
                    "a holonomic constraint may depend on the coordinates only; use `constraint` for velocities",
                );
                break;
            }
            if !lw.g.depends_on(c, &cx.q_syms) {
                lw.error(eq.span, "this holonomic constraint does not depend on the coordinates");
                break;
            }
            out.hcons.push(Labelled {
                name: format!("holonomic {}{comp}", out.hcons.len() + 1),
                expr: c,
            });
        }
    }
}

/// `invariant name = ...`: a monitored quantity, vectors component by component.
pub(super) fn invariant(lw: &mut Lowerer, cx: &Context, b: &Binding, out: &mut Body) {
    let Ok(name) = lw.resolve(&b.name) else { return };
    if name == "energy" {
        lw.error(
            b.name.span,
            "`energy` is monitored already (⟨p, ξ⟩ − l, from the Lagrangian): give this invariant another name",
        );
        return;
    }
    if out
        .invariants
        .iter()
        .any(|i: &Labelled| i.name == name || i.name.starts_with(&format!("{name}[")))
    {
        lw.error(b.name.span, format!("duplicate invariant `{name}`"));
        return;
    }
    if let Ok(v) = lw.expr(&b.value) {
        if Lowerer::flatten(v)
            .iter()
            .any(|&e| !cx.free_of_inputs(lw, e, b.value.span, "an invariant", false))
        {
            return;
        }
        match v {
            Val::S(s) => out.invariants.push(Labelled { name, expr: s }),
            Val::V(v) => {
                for (k, c) in v.iter().enumerate() {
                    out.invariants.push(Labelled {
                        name: format!("{name}[{k}]"),
                        expr: *c,
                    });
                }
            }
        }
    }
}

/// `initial name { ... }`.
pub(super) fn initial(lw: &mut Lowerer, cx: &Context, init: &Initial, out: &mut Body) {
    if let Some(s) = lower_initial(
        lw,
        init,
        &cx.decl.coords,
        &cx.decl.coord_groups,
        &cx.decl.vels,
        &cx.decl.vel_groups,
        &cx.q_syms,
        &cx.v_syms,
    ) {
        if s.q.iter().chain(&s.v).any(|&e| lw.g.depends_on(e, &cx.exogenous)) {
            lw.error(
                init.name.span,
                "an initial state may not depend on the inputs or on time `t`",
            );
            return;
        }
        if out.initials.iter().any(|i: &InitialState| i.name == s.name) {
            lw.error(init.name.span, format!("duplicate initial state `{}`", s.name));
        } else {
            out.initials.push(s);
        }
    }
}
