//! Pass: declarations of coordinates, velocities and parameters.

use crate::diagnostic::Span;
use crate::dsl::ast::*;

use super::ir::*;
use super::lowerer::*;

pub(super) fn declare_groups(
    lw: &mut Lowerer,
    decls: &[Decl],
    kind: Kind,
    out: &mut Vec<Scalar>,
    groups: &mut Vec<Group>,
) {
    for d in decls {
        let Ok(name) = lw.resolve(&d.name) else { continue };
        declare_group(lw, &name, d.name.span, d.ty, kind, out, groups);
    }
}

pub(super) fn declare_group(
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

/// The struct field that holds parameter `name` (`m[2]` → `m_2`).
pub(super) fn field_name(name: &str) -> String {
    name.replace("][", "_").replace('[', "_").replace(']', "")
}
