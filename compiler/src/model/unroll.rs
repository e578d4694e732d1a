//! Pass: `for` loops unrolled into the items they stand for, each with its
//! loop variables.

use crate::diagnostic::Span;
use crate::dsl::ast::*;

use super::lowerer::*;

/// An item with the loop variables in force where it stands.
pub(super) struct Placed<'a> {
    pub(super) item: &'a Item,
    pub(super) span: Span,
    pub(super) env: Vec<(String, i64)>,
}

pub(super) fn unroll<'a>(
    lw: &mut Lowerer,
    items: &'a [(Item, Span)],
    env: &[(String, i64)],
    out: &mut Vec<Placed<'a>>,
) {
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
pub(super) fn set_env(lw: &mut Lowerer, env: &[(String, i64)]) {
    lw.ienv = lw.sizes.clone();
    for (k, v) in env {
        lw.ienv.insert(k.clone(), *v);
    }
}
