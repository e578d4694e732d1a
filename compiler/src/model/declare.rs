//! Stage 2 of lowering: declarations of parameters, coordinates, velocities and inputs.

use crate::diagnostic::Span;
use crate::dsl::ast::*;

use super::ir::*;
use super::lowerer::*;
use super::unroll::{set_env, Placed};

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

/// What a model declares: parameters, coordinates, velocities (for the
/// identity frame, `q'` of every coordinate) and inputs.
pub(super) struct Declared {
    pub(super) params: Vec<Param>,
    pub(super) coords: Vec<Scalar>,
    pub(super) coord_groups: Vec<Group>,
    pub(super) vels: Vec<Scalar>,
    pub(super) vel_groups: Vec<Group>,
    pub(super) inputs: Vec<Scalar>,
    pub(super) input_groups: Vec<Group>,
}

/// Stage 2 of lowering (see [`super::lower`]): the declarations, in file order.
pub(super) fn declarations(lw: &mut Lowerer, ast: &ModelAst, placed: &[Placed], has_frame: bool) -> Declared {
    let mut params = Vec::new();
    let (mut coords, mut coord_groups, mut vels, mut vel_groups) = (vec![], vec![], vec![], vec![]);
    let (mut inputs, mut input_groups) = (vec![], vec![]);
    for p in placed {
        set_env(lw, &p.env);
        match p.item {
            Item::Parameters(ps) => {
                for b in ps {
                    let Ok(name) = lw.resolve(&b.name) else { continue };
                    let default = lw.scalar(&b.value).ok().map(|e| lw.g.eval(e, &|_| f64::NAN));
                    let Some(v) = default else { continue };
                    match hamel_kernel::value::parameter_error(&name, v) {
                        Some(_) if !v.is_finite() => {
                            lw.error(
                                b.value.span,
                                "a parameter's default must be a finite number (expressions of numbers and sizes)",
                            );
                        }
                        Some(e) => {
                            lw.error(b.value.span, e);
                        }
                        None => {}
                    }
                    // Declared even when refused, so that its uses do not
                    // each add an "unknown name" to the one real error.
                    let sym = lw.g.symbol(&name);
                    lw.declare(&name, b.name.span, Val::S(sym), Kind::Param);
                    params.push(Param {
                        field: field_name(&name),
                        name,
                        sym,
                        default: v,
                    });
                }
            }
            Item::Coordinates(ds) => declare_groups(lw, ds, Kind::Coord, &mut coords, &mut coord_groups),
            Item::Velocities(ds) => declare_groups(lw, ds, Kind::Vel, &mut vels, &mut vel_groups),
            Item::Inputs(ds) => declare_groups(lw, ds, Kind::Input, &mut inputs, &mut input_groups),
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
                lw,
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

    Declared {
        params,
        coords,
        coord_groups,
        vels,
        vel_groups,
        inputs,
        input_groups,
    }
}
