//! Stage 4b of lowering (see [`super::lower`]): the Lagrangian and the
//! invariants once more, with every member of an indexed `let` family kept
//! as a symbol of its own instead of the expression it stands for.
//!
//! A family defined by a recurrence (`x[i] = x[i-1] + …`) expands into sums
//! that grow with the index, so the expanded Lagrangian and everything
//! derived from it couple all members; kept as symbols, each member's
//! definition reads only its neighbours. A scheme may then keep them as
//! unknowns of its step (a sparse tableau) instead of substituting them.

use crate::dsl::ast::Item;
use crate::sym::Id;

use super::ir::Tableau;
use super::lowerer::{Kind, Lowerer, Val};
use super::unroll::{set_env, Placed};

/// The tableau view of the model's Lagrangian, or `None` where the model has
/// no indexed `let` (nothing to keep) or a definition fails to lower again.
pub(super) fn lower(lw: &mut Lowerer, placed: &[Placed]) -> Option<Tableau> {
    // A second lowering may not cost the model its work budget or report
    // anything: the model is what the first one made of it.
    let (saved, errors, budget) = (lw.scope.clone(), lw.errors.len(), lw.budget);
    let out = lower_in_scope(lw, placed);
    let failed = lw.errors.len() > errors;
    lw.scope = saved;
    lw.errors.truncate(errors);
    lw.budget = budget;
    out.filter(|t| !failed && !t.symbols.is_empty())
}

fn lower_in_scope(lw: &mut Lowerer, placed: &[Placed]) -> Option<Tableau> {
    let mut tableau = Tableau {
        symbols: vec![],
        definitions: vec![],
        lagrangian: crate::sym::Id(0),
        invariants: vec![],
    };
    let mut lagrangian = None;
    for p in placed {
        set_env(lw, &p.env);
        match p.item {
            Item::Let(b) => {
                let name = lw.resolve(&b.name).ok()?;
                let value = lw.expr(&b.value).ok()?;
                let value = if name.contains('[') {
                    let comps = match value {
                        Val::S(a) => vec![a],
                        Val::V(v) => v.to_vec(),
                    };
                    let syms: Vec<Id> = (0..comps.len())
                        .map(|c| lw.g.symbol(&format!("__let{}", tableau.symbols.len() + c)))
                        .collect();
                    for (c, (&s, &d)) in syms.iter().zip(&comps).enumerate() {
                        let label = if comps.len() == 1 {
                            name.clone()
                        } else {
                            format!("{name}.{}", ["x", "y", "z"][c])
                        };
                        tableau.symbols.push((label, s));
                        tableau.definitions.push(d);
                    }
                    match value {
                        Val::S(_) => Val::S(syms[0]),
                        Val::V(_) => Val::V([syms[0], syms[1], syms[2]]),
                    }
                } else {
                    value
                };
                let span = lw.scope.get(&name).map(|b| b.2).unwrap_or_default();
                lw.scope.insert(name, (value, Kind::Let, span));
            }
            Item::Lagrangian(e) => lagrangian = Some(lw.scalar(e).ok()?),

            _ => {}
        }
    }
    tableau.lagrangian = lagrangian?;
    // The invariants once every member is in scope (as the body lowers
    // them after all `let`s, `body::invariant`), a component each; one that
    // does not lower leaves them all to their expanded form.
    let errors = lw.errors.len();
    for p in placed {
        if let Item::Invariant(b) = p.item {
            set_env(lw, &p.env);
            match lw.expr(&b.value) {
                Ok(value) => tableau.invariants.extend(Lowerer::flatten(value)),
                Err(_) => {
                    tableau.invariants.clear();
                    break;
                }
            }
        }
    }
    if lw.errors.len() > errors {
        lw.errors.truncate(errors);
        tableau.invariants.clear();
    }
    Some(tableau)
}
