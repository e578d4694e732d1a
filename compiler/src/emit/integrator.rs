//! A [`StepSystem`] → the items `#[derive(Integrator)]` adds to a struct:
//! generated functions, the `StepSystem` trait impl of the runtime, and
//! inherent methods (initial states, stepper, physical state, invariants).

use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};

use super::rust::{self, EmitStats};
use crate::scheme::{InvariantKind, StepSystem};

/// What the glue needs to know about the user's struct.
pub struct Target<'a> {
    /// the struct's name
    pub ident: &'a Ident,
    /// absolute path of the model file (tracked with `include_str!` for rebuilds)
    pub model_path: &'a str,
    /// emit the step-map sensitivity (`Stepper::step_with_sensitivity`)
    pub sensitivity: bool,
}

/// Totals over the emitted functions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IntegratorStats {
    /// instructions over all functions
    pub ops: usize,
    /// emitted function bodies
    pub parts: usize,
}

/// Emits everything for `sys` on `target`. Fails only on an internal error
/// (an expression using a symbol that no function input provides).
pub fn emit(sys: &StepSystem, target: &Target) -> Result<(TokenStream, IntegratorStats), String> {
    let mut with_sensitivity;
    let sys = if target.sensitivity && sys.sensitivity.is_none() {
        with_sensitivity = sys.clone();
        with_sensitivity.add_sensitivity();
        &with_sensitivity
    } else {
        sys
    };
    let mut g = sys.graph.clone();
    let mut fns = Vec::new();
    let mut stats = IntegratorStats::default();
    let mut compensated = true;
    for f in sys.functions() {
        let unbound =
            |u: crate::sym::tape::UnboundSymbol| format!("internal error: `{}` uses unbound symbol `{}`", f.name, u.0);
        let (ts, EmitStats { ops, parts }) = rust::function(&mut g, &f).map_err(unbound)?;
        stats.ops += ops;
        stats.parts += parts;
        fns.push(ts);
        // Compensated runs evaluate residual and increment with the state in double-double.
        if f.name == "residual" || f.name == "increment" {
            match rust::function_dd(&mut g, &f, &["z".to_string()]).map_err(unbound)? {
                Some(ts) => fns.push(ts),
                None => compensated = false,
            }
        }
    }

    let ident = target.ident;
    let path = target.model_path;
    let np = sys.params.len();
    let nz = sys.state.len();
    let nx = sys.unknowns.len();
    let nq = sys.phys_q.len();
    let nv = sys.phys_v.len();
    let ni = sys.invariants.len();
    let nk = sys.obs_solution.len();
    let sensitivity_impl = if sys.sensitivity.is_some() {
        quote! {
                fn sensitivity_parts(
                    &self,
                    h: f64,
                    z: &__na::SVector<f64, #nz>,
                    x: &__na::SVector<f64, #nx>,
                ) -> Option<(__na::SMatrix<f64, #nx, #nz>, __na::SMatrix<f64, #nz, #nz>, __na::SMatrix<f64, #nz, #nx>)> {
                    let mut rz = [0.0f64; #nx * #nz];
                    let mut uz = [0.0f64; #nz * #nz];
                    let mut ux = [0.0f64; #nz * #nx];
                    __gen::sensitivity_parts(&self.__params(), &[h], &z.data.0[0], &x.data.0[0], &mut rz, &mut uz, &mut ux);
                    Some((
                        __na::SMatrix::<f64, #nx, #nz>::from_row_slice(&rz),
                        __na::SMatrix::<f64, #nz, #nz>::from_row_slice(&uz),
                        __na::SMatrix::<f64, #nz, #nx>::from_row_slice(&ux),
                    ))
                }

        }
    } else {
        quote!()
    };
    let compensated_impl = if compensated {
        quote! {
            #[inline]
            fn residual_compensated(
                &self,
                h: f64,
                z: &__na::SVector<f64, #nz>,
                lo: &__na::SVector<f64, #nz>,
                x: &__na::SVector<f64, #nx>,
            ) -> Option<__na::SVector<f64, #nx>> {
                let mut r = [0.0f64; #nx];
                __gen::residual_dd(&self.__params(), &[h], &z.data.0[0], &lo.data.0[0], &x.data.0[0], &mut r);
                Some(__na::SVector::from(r))
            }

            #[inline]
            fn increment_compensated(
                &self,
                h: f64,
                z: &__na::SVector<f64, #nz>,
                lo: &__na::SVector<f64, #nz>,
                x: &__na::SVector<f64, #nx>,
            ) -> Option<__na::SVector<f64, #nz>> {
                let mut dz = [0.0f64; #nz];
                __gen::increment_dd(&self.__params(), &[h], &z.data.0[0], &lo.data.0[0], &x.data.0[0], &mut dz);
                Some(__na::SVector::from(dz))
            }
        }
    } else {
        quote!()
    };
    let model = &sys.model;
    let scheme = &sys.scheme;
    let pnames: Vec<&str> = sys.params.iter().map(|(s, _)| s.name.as_str()).collect();
    let pfields: Vec<Ident> = pnames.iter().map(|n| format_ident!("{}", n)).collect();
    let pdefaults: Vec<f64> = sys.params.iter().map(|(_, d)| *d).collect();
    let qnames: Vec<&str> = sys.phys_q.iter().map(|s| s.name.as_str()).collect();
    let vnames: Vec<&str> = sys.phys_v.iter().map(|s| s.name.as_str()).collect();
    let znames: Vec<&str> = sys.state.iter().map(|s| s.name.as_str()).collect();
    let inv = sys.invariants.iter().map(|i| {
        let n = &i.name;
        let k = match i.kind {
            InvariantKind::Energy => quote!(Energy),
            InvariantKind::Monitored => quote!(Monitored),
            InvariantKind::Constraint => quote!(Constraint),
        };
        quote!((#n, __rt::InvariantKind::#k))
    });
    let init_names: Vec<&str> = sys.initials.iter().map(|(n, _, _)| n.as_str()).collect();
    let nin = init_names.len();
    let init_fns: Vec<Ident> = init_names.iter().map(|n| format_ident!("initial_{}", n)).collect();
    let observe = if nk == 0 {
        quote!(let y = [0.0f64; 0];)
    } else {
        quote! {
            let mut k = [0.0f64; #nk * #nk];
            let mut b = [0.0f64; #nk];
            __gen::observe_system(&p, z, &mut k, &mut b);
            let km = __na::SMatrix::<f64, #nk, #nk>::from_row_slice(&k);
            let mut bv = __na::SVector::<f64, #nk>::from(b);
            __rt::lu::solve_in_place(&km, &mut bv).map_err(|_| __rt::StepError::Observation {
                step,
                reason: "the mass matrix is singular here (a singularity of the model's coordinates?)".to_string(),
            })?;
            let y: [f64; #nk] = bv.into();
        }
    };
    let doc_struct = format!(
        "Integrator of model `{model}` ({}), scheme `{scheme}`.",
        target.model_path
    );
    let doc_state = format!("Scheme state: [{}].", znames.join(", "));

    let tokens = quote! {
        #[doc(hidden)]
        #[allow(non_snake_case, clippy::all)]
        const _: () = {
            const _: &str = include_str!(#path);
            use ::hamel::runtime as __rt;
            use ::hamel::runtime::nalgebra as __na;

            #[allow(clippy::all, unused_parens, non_snake_case, unused_imports)]
            mod __gen {
                use ::hamel::runtime::dd::Dd as __Dd;
                #(#fns)*
            }

            #[doc = #doc_struct]
            impl #ident {
                /// Name of the model in its file.
                pub const MODEL: &'static str = #model;
                /// Parameter names, in model order.
                pub const PARAMETERS: [&'static str; #np] = [#(#pnames),*];
                /// Coordinate component names.
                pub const COORDINATES: [&'static str; #nq] = [#(#qnames),*];
                /// Velocity component names.
                pub const VELOCITIES: [&'static str; #nv] = [#(#vnames),*];
                #[doc = #doc_state]
                pub const STATE: [&'static str; #nz] = [#(#znames),*];
                /// Names of the model's named initial states.
                pub const INITIAL_STATES: [&'static str; #nin] = [#(#init_names),*];
                const __INVARIANTS: [(&'static str, __rt::InvariantKind); #ni] = [#(#inv),*];

                /// The model with the parameter values of its file.
                pub fn with_defaults() -> Self {
                    Self { #(#pfields: #pdefaults),* }
                }

                fn __params(&self) -> [f64; #np] {
                    [#(self.#pfields),*]
                }

                fn __check_params(&self) -> Result<(), __rt::StepError> {
                    for (name, value) in Self::PARAMETERS.iter().zip(self.__params()) {
                        if !value.is_finite() {
                            return Err(__rt::StepError::InvalidInput(format!("parameter `{name}` = {value} is not finite")));
                        }
                    }
                    Ok(())
                }

                /// The scheme's state for physical coordinates `q` and velocities `ξ`.
                /// Fails on non-finite data, or where the physical state cannot be
                /// recovered from the scheme's state (a coordinate singularity).
                pub fn initial_state(&self, q: [f64; #nq], v: [f64; #nv]) -> Result<__rt::State<#nz, #nx>, __rt::StepError> {
                    if let Some(bad) = q.iter().chain(v.iter()).position(|x| !x.is_finite()) {
                        let name = Self::COORDINATES.iter().chain(Self::VELOCITIES.iter()).nth(bad).copied().unwrap_or("?");
                        return Err(__rt::StepError::InvalidInput(format!("initial value of `{name}` is not finite")));
                    }
                    self.__check_params()?;
                    let p = self.__params();
                    let mut z = [0.0f64; #nz];
                    let mut x = [0.0f64; #nx];
                    __gen::init_state(&p, &q, &v, &mut z, &mut x);
                    let state = __rt::State { z: __na::SVector::from(z), lo: __na::SVector::zeros(), warm: __na::SVector::from(x), step: 0 };
                    // Data off the constraints are never run silently.
                    let scale = 1.0 + q.iter().chain(v.iter()).map(|x| x * x).sum::<f64>();
                    let tolerance = 1e-9 * scale;
                    // Components a constraint eliminates (e.g. `xi[2] = 0`) do not
                    // enter the state: data that set them otherwise are refused.
                    let (q2, v2) = self.physical(&state)?;
                    let names = Self::COORDINATES.iter().chain(Self::VELOCITIES.iter());
                    for ((name, a), b) in names.zip(q.iter().chain(v.iter())).zip(q2.iter().chain(v2.iter())) {
                        if (a - b).abs() > tolerance {
                            return Err(__rt::StepError::InvalidInput(format!(
                                "the initial data are off the constraints: `{}` = {} but the constrained state has {:.6e} (difference {:.3e}); project them onto the constraints first",
                                name, a, b, a - b
                            )));
                        }
                    }
                    let mut values = [0.0f64; #ni];
                    __gen::invariants(&p, &q2, &v2, &mut values);
                    for (k, (name, kind)) in Self::__INVARIANTS.iter().enumerate() {
                        if *kind == __rt::InvariantKind::Constraint && !(values[k].abs() <= tolerance) {
                            return Err(__rt::StepError::InvalidInput(format!(
                                "the initial data violate `{}` by {:.3e} (tolerance {:.1e}); project them onto the constraints first",
                                name, values[k], tolerance
                            )));
                        }
                    }
                    Ok(state)
                }

                /// The physical data `(q, ξ)` of a named initial state of the model file.
                pub fn initial_conditions(&self, name: &str) -> Option<([f64; #nq], [f64; #nv])> {
                    let p = self.__params();
                    match name {
                        #(#init_names => {
                            let mut q = [0.0f64; #nq];
                            let mut v = [0.0f64; #nv];
                            __gen::#init_fns(&p, &mut q, &mut v);
                            Some((q, v))
                        })*
                        _ => None,
                    }
                }

                /// The scheme's state for a named initial state of the model file.
                pub fn initial(&self, name: &str) -> Result<__rt::State<#nz, #nx>, __rt::StepError> {
                    let (q, v) = self.initial_conditions(name).ok_or_else(|| {
                        __rt::StepError::InvalidInput(format!(
                            "model `{}` has no initial state `{}` (it has: {})",
                            Self::MODEL,
                            name,
                            Self::INITIAL_STATES.join(", ")
                        ))
                    })?;
                    self.initial_state(q, v)
                }

                /// A stepper with step size `h`.
                pub fn stepper(&self, h: f64) -> Result<__rt::Stepper<'_, Self, #nz, #nx>, __rt::StepError> {
                    self.__check_params()?;
                    __rt::Stepper::new(self, h)
                }

                /// The physical state `(q, ξ)` of a scheme state.
                pub fn physical(&self, state: &__rt::State<#nz, #nx>) -> Result<([f64; #nq], [f64; #nv]), __rt::StepError> {
                    let p = self.__params();
                    let step = state.step;
                    let z: &[f64; #nz] = &state.z.data.0[0];
                    #observe
                    let mut q = [0.0f64; #nq];
                    let mut v = [0.0f64; #nv];
                    __gen::physical(&p, z, &y, &mut q, &mut v);
                    if q.iter().chain(v.iter()).any(|x| !x.is_finite()) {
                        return Err(__rt::StepError::Observation { step, reason: "non-finite physical state".to_string() });
                    }
                    Ok((q, v))
                }

                /// Energy, the model's invariants and its constraint residuals at a state
                /// (names in `invariant_info`).
                pub fn invariants(&self, state: &__rt::State<#nz, #nx>) -> Result<[f64; #ni], __rt::StepError> {
                    let (q, v) = self.physical(state)?;
                    let p = self.__params();
                    let mut out = [0.0f64; #ni];
                    __gen::invariants(&p, &q, &v, &mut out);
                    Ok(out)
                }
            }

            impl __rt::StepSystem<#nz, #nx> for #ident {
                const SCHEME: &'static str = #scheme;

                #[inline]
                fn residual(&self, h: f64, z: &__na::SVector<f64, #nz>, x: &__na::SVector<f64, #nx>) -> __na::SVector<f64, #nx> {
                    let mut r = [0.0f64; #nx];
                    __gen::residual(&self.__params(), &[h], &z.data.0[0], &x.data.0[0], &mut r);
                    __na::SVector::from(r)
                }

                #[inline]
                fn jacobian(&self, h: f64, z: &__na::SVector<f64, #nz>, x: &__na::SVector<f64, #nx>) -> __na::SMatrix<f64, #nx, #nx> {
                    let mut j = [0.0f64; #nx * #nx];
                    __gen::jacobian(&self.__params(), &[h], &z.data.0[0], &x.data.0[0], &mut j);
                    __na::SMatrix::<f64, #nx, #nx>::from_row_slice(&j)
                }

                #[inline]
                fn increment(&self, h: f64, z: &__na::SVector<f64, #nz>, x: &__na::SVector<f64, #nx>) -> __na::SVector<f64, #nz> {
                    let mut out = [0.0f64; #nz];
                    __gen::increment(&self.__params(), &[h], &z.data.0[0], &x.data.0[0], &mut out);
                    __na::SVector::from(out)
                }

                #[inline]
                fn predict(&self, h: f64, z: &__na::SVector<f64, #nz>, w: &__na::SVector<f64, #nx>) -> __na::SVector<f64, #nx> {
                    let mut out = [0.0f64; #nx];
                    __gen::predict(&self.__params(), &[h], &z.data.0[0], &w.data.0[0], &mut out);
                    __na::SVector::from(out)
                }

                #sensitivity_impl

                #compensated_impl

                fn invariant_info(&self) -> &'static [(&'static str, __rt::InvariantKind)] {
                    &Self::__INVARIANTS
                }

                fn invariants_into(&self, z: &__na::SVector<f64, #nz>, out: &mut [f64]) -> Result<(), String> {
                    let state = __rt::State { z: *z, lo: __na::SVector::zeros(), warm: __na::SVector::zeros(), step: 0 };
                    let vals = self.invariants(&state).map_err(|e| e.to_string())?;
                    out[..#ni].copy_from_slice(&vals);
                    Ok(())
                }
            }
        };
    };
    Ok((tokens, stats))
}
