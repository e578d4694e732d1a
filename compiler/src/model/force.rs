//! Pass: external forces, as one covector `F_e(q, ξ, u, t)` on the velocities.
//!
//! Users state forces as they think of them; each statement is turned into
//! its components dual to the velocities (virtual power, docs/schemes.md §8):
//!
//! - `force xi = f`: `f` as written, on the velocity group `xi` (without a
//!   frame, `force x = f` acts on `x'`);
//! - `force at x = f`: a spatial force `f` at the point `x(q)`:
//!   `F_e,a = ⟨f, ∂ẋ/∂ξ^a⟩ = Σ_k f_k (Dx Ψ)_{k a}`;
//! - `force at velocity w = f`: the same for a point whose velocity `w` is
//!   given (linear in the velocities), `F_e,a = ⟨f, ∂w/∂ξ^a⟩`;
//! - `dissipation = R`: the Rayleigh function, `F_e = −∂R/∂ξ`.

use crate::dsl::ast::*;
use crate::sym::{gradient, jacobian, Id};

use super::check_linear;
use super::ir::Group;
use super::lowerer::*;
use super::unroll::*;

/// Sums every force statement of the model; `None` when there is none.
/// `frame` holds `q' = f(q, ξ)` (`None` without a frame block).
pub(super) fn lower_forces(
    lw: &mut Lowerer,
    placed: &[Placed],
    coord_groups: &[Group],
    vel_groups: &[Group],
    q: &[Id],
    v: &[Id],
    frame: Option<&[Id]>,
) -> Option<Vec<Id>> {
    let mut terms: Vec<Vec<Id>> = vec![vec![]; v.len()];
    let mut any = false;
    // Ψ = ∂q'/∂ξ (the identity without a frame)
    let qdot: Vec<Id> = match frame {
        Some(f) => f.to_vec(),
        None if lw.identity_frame => v.to_vec(),
        None => vec![],
    };
    let psi = jacobian(&mut lw.g, &qdot, v);
    for p in placed {
        set_env(lw, &p.env);
        match p.item {
            Item::Force(Force::Generalized(b)) => {
                any = true;
                let Ok(name) = lw.resolve(&b.name) else { continue };
                let primed = format!("{name}'");
                let group = vel_groups
                    .iter()
                    .find(|g| g.name == name || (lw.identity_frame && g.name == primed));
                let Some(group) = group.cloned() else {
                    let hint = if coord_groups.iter().any(|g| g.name == name) {
                        " (a model with a frame takes forces on its velocities, or `force at` a point)"
                    } else {
                        ""
                    };
                    lw.error(
                        b.name.span,
                        format!("`force {name} = ...`: `{name}` is not a declared velocity{hint}"),
                    );
                    continue;
                };
                let Ok(val) = lw.expr(&b.value) else { continue };
                let val = Lowerer::flatten(val);
                if val.len() != group.ty.components() {
                    lw.error(
                        b.value.span,
                        format!(
                            "`{}` has {} component(s) but the force has {}",
                            group.name,
                            group.ty.components(),
                            val.len()
                        ),
                    );
                    continue;
                }
                for (k, &f) in val.iter().enumerate() {
                    terms[group.offset + k].push(f);
                }
            }
            Item::Force(Force::At(point, f)) => {
                any = true;
                let (Ok(x), Ok(f)) = (lw.vector(point, "a force's point"), lw.vector(f, "a spatial force")) else {
                    continue;
                };
                if x.iter().any(|&c| lw.g.depends_on(c, v)) {
                    lw.error(
                        point.span,
                        "a force's point must depend on the coordinates only; for a point given by its velocity write `force at velocity w = f`",
                    );
                    continue;
                }
                if psi.is_empty() {
                    continue; // the frame did not lower: reported there
                }
                let dx = jacobian(&mut lw.g, &x, q);
                for (a, col) in terms.iter_mut().enumerate() {
                    for (k, &fk) in f.iter().enumerate() {
                        let t: Vec<Id> = (0..q.len()).map(|i| lw.g.mul2(dx[k][i], psi[i][a])).collect();
                        let dxa = lw.g.add(&t);
                        if !lw.g.is_const(dxa, 0.0) {
                            col.push(lw.g.mul2(fk, dxa));
                        }
                    }
                }
            }
            Item::Force(Force::AtVelocity(w, f)) => {
                any = true;
                let (Ok(w_), Ok(f)) = (lw.vector(w, "a point's velocity"), lw.vector(f, "a spatial force")) else {
                    continue;
                };
                if !w_.iter().all(|&c| check_linear(&mut lw.g, c, v)) {
                    lw.error(
                        w.span,
                        "the velocity of a force's point must be linear and homogeneous in the velocities",
                    );
                    continue;
                }
                let dw = jacobian(&mut lw.g, &w_, v);
                for (a, col) in terms.iter_mut().enumerate() {
                    for (k, &fk) in f.iter().enumerate() {
                        if !lw.g.is_const(dw[k][a], 0.0) {
                            col.push(lw.g.mul2(fk, dw[k][a]));
                        }
                    }
                }
            }
            Item::Dissipation(e) => {
                any = true;
                let Ok(r) = lw.scalar(e) else { continue };
                let dr = gradient(&mut lw.g, r, v);
                for (col, d) in terms.iter_mut().zip(dr) {
                    if !lw.g.is_const(d, 0.0) {
                        col.push(lw.g.neg(d));
                    }
                }
            }
            _ => {}
        }
    }
    any.then(|| terms.iter().map(|t| lw.g.add(t)).collect())
}
