//! Pass: named initial states, checked and evaluated to numbers.

use crate::dsl::ast::*;
use crate::sym::Id;

use super::ir::*;
use super::lowerer::*;
use super::unroll::*;

pub(super) fn flatten_initial<'a>(
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
pub(super) fn lower_initial(
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
    // where each coordinate or velocity was given, to refuse a second value
    let mut given: std::collections::HashMap<String, crate::diagnostic::Span> = Default::default();
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
        if let Some(prev) = given.get(&name) {
            let prev = crate::diagnostic::Diagnostic::new(lw.file, lw.src, *prev, "");
            lw.error(
                b.name.span,
                format!(
                    "`{name}` is given twice in initial state `{}` (first at line {}, column {})",
                    init.name.text, prev.line, prev.column
                ),
            );
            ok = false;
            continue;
        }
        given.insert(name.clone(), b.name.span);
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
