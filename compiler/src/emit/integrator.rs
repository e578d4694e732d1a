//! A [`StepSystem`] → the items `#[derive(Integrator)]` adds to a struct:
//! generated functions, the `StepSystem` trait impl of the runtime, and
//! inherent methods (initial states, stepper, physical state, invariants).

use hamel_kernel::{Arg, Kernel};
use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};

use super::rust::{self, EmitStats, Role};
use crate::scheme::{InvariantKind, StepSystem};

/// What the glue needs to know about the user's struct.
pub struct Target<'a> {
    /// the struct's name
    pub ident: &'a Ident,
    /// absolute path of the model file (tracked with `include_str!` for rebuilds)
    pub model_path: &'a str,
    /// emit the step-map sensitivity (`Stepper::step_with_sensitivity`)
    pub sensitivity: bool,
    /// give the longer per-step kernels copies for AVX2 and AVX-512 chosen at
    /// run time ([`Role::Step`]); `false`: baseline only, no `unsafe` emitted
    pub simd: bool,
    /// the order of the steps its steppers take: 2, the scheme's own, or 4
    /// or 6, the scheme composed (checked by
    /// [`crate::scheme::compose::check_order`] before emitting)
    pub order: u32,
}

/// Totals over the emitted functions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IntegratorStats {
    /// instructions over all functions
    pub ops: usize,
    /// emitted function bodies
    pub parts: usize,
    /// functions emitted as a loop (per member of an indexed family)
    pub loops: usize,
    /// functions emitted as data the interpreter evaluates
    /// (`rust::DATA_ABOVE`)
    pub data: usize,
}

/// `__gen::name(args…, outs…)`: the arguments in the order `f` declares its
/// inputs, each looked up in `slots` by argument (a double-double argument `a`
/// is followed by its low part, the entry `(a, true)`). Kernel inputs are
/// data: a new argument is one more entry in the caller's table, not a new
/// signature.
fn call(
    f: &crate::sym::Function,
    suffix: &str,
    dd_args: &[Arg],
    slots: &[Slot],
    outs: &[TokenStream],
) -> Result<TokenStream, String> {
    let slot = |a: Arg, lo: bool| {
        slots
            .iter()
            .find(|(s, _)| *s == (a, lo))
            .map(|(_, t)| t.clone())
            .ok_or_else(|| {
                format!(
                    "internal error: `{}` reads `{a}{}`, which the derive does not provide",
                    f.name,
                    if lo { "_lo" } else { "" }
                )
            })
    };
    let mut args = Vec::new();
    for (a, _) in &f.inputs {
        args.push(slot(*a, false)?);
        if dd_args.contains(a) {
            args.push(slot(*a, true)?);
        }
    }
    let name = format_ident!("{}{}", f.name.symbol(), suffix);
    Ok(quote!(__gen::#name(#(#args,)* #(#outs),*)))
}

/// A kernel input slot — `(argument, is its low part)` — and the expression a
/// generated method passes for it.
type Slot = ((Arg, bool), TokenStream);

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
    let functions = sys.functions();
    let generated = generate(sys, &functions, target.simd)?;
    let calls = Calls::new(sys, &functions);
    let path = target.model_path;
    let fns = &generated.fns;
    let inherent = inherent_impl(sys, target);
    let kernels = kernels_impl(sys, target, &calls, &generated)?;
    // The functions' module sits beside the struct, not inside the
    // `const _` block: rustc gives each module outside function-like items
    // its own codegen unit, and everything inside the block went to one
    // (the crate root's), which LLVM optimized on one thread.
    let module = format_ident!("__hamel_{}", target.ident);
    let tokens = quote! {
        #[doc(hidden)]
        #[allow(clippy::all, unused_parens, non_snake_case, unused_imports)]
        mod #module {
            use ::hamel::runtime::dd::Dd as __Dd;
            #(#fns)*
        }

        #[doc(hidden)]
        #[allow(non_snake_case, clippy::all)]
        const _: () = {
            const _: &str = include_str!(#path);
            use ::hamel::runtime as __rt;
            use ::hamel::runtime::nalgebra as __na;
            use #module as __gen;

            #inherent

            #kernels
        };
    };
    Ok((tokens, generated.stats))
}

/// The generated functions (the items of `mod __gen`) and what the glue
/// reports about them.
struct Generated {
    fns: Vec<TokenStream>,
    stats: IntegratorStats,
    /// every kernel the compensated step needs has a double-double copy
    compensated: bool,
    /// instructions of the residual and of the fused residual and Jacobian
    /// (`Kernels::kernel_ops`)
    residual_ops: usize,
    residual_jacobian_ops: usize,
}

/// Prints every function of `sys`, the per-step ones with instruction-set
/// copies where `simd` asks for them.
fn generate(sys: &StepSystem, functions: &[crate::sym::Function], simd: bool) -> Result<Generated, String> {
    let mut g = sys.graph.clone();
    let mut out = Generated {
        fns: Vec::new(),
        stats: IntegratorStats::default(),
        compensated: true,
        residual_ops: 0,
        residual_jacobian_ops: 0,
    };
    // Each input symbol's member of an indexed family (a chain's link): the
    // first index of its name (`q[12].x`: 12), for kernels emitted as loops.
    let mut member: std::collections::HashMap<crate::sym::Id, u32> = std::collections::HashMap::new();
    let slots = sys
        .state
        .iter()
        .chain(&sys.unknowns)
        .chain(&sys.phys_q)
        .chain(&sys.phys_v);
    for s in slots {
        if let Some(m) = crate::model::family_member(&s.name) {
            member.insert(s.sym, m);
        }
    }
    for (prev, u) in sys.previous.iter().zip(&sys.unknowns) {
        if let Some(m) = crate::model::family_member(&u.name) {
            member.insert(*prev, m);
        }
    }
    let member_of = |s: crate::sym::Id| member.get(&s).copied();
    for f in functions {
        let unbound =
            |u: crate::sym::tape::UnboundSymbol| format!("internal error: `{}` uses unbound symbol `{}`", f.name, u.0);
        let role = match f.name {
            k if k.is_hot() && simd => Role::Step,
            k if k.is_hot() => Role::StepBaseline,
            _ => Role::Once,
        };
        let (
            ts,
            EmitStats {
                ops,
                parts,
                iterations,
                data,
            },
        ) = rust::function(&mut g, f, role, &member_of).map_err(unbound)?;
        out.stats.loops += usize::from(iterations > 0);
        out.stats.data += usize::from(data);
        out.stats.ops += ops;
        out.stats.parts += parts;
        match f.name {
            Kernel::Residual => out.residual_ops = ops,
            Kernel::ResidualJacobian => out.residual_jacobian_ops = ops,
            _ => {}
        }
        out.fns.push(ts);
        // Compensated runs evaluate residual and increment with the state in double-double.
        if matches!(f.name, Kernel::Residual | Kernel::Increment) {
            match rust::function_dd(&mut g, f, &[Arg::Z]).map_err(unbound)? {
                Some(ts) => out.fns.push(ts),
                None => out.compensated = false,
            }
        }
    }
    Ok(out)
}

/// The lengths of the vectors the glue passes, as `sys` declares them.
struct Sizes {
    /// parameters
    np: usize,
    /// scheme state
    nz: usize,
    /// unknowns of the step equations
    nx: usize,
    /// physical coordinates
    nq: usize,
    /// physical velocities
    nv: usize,
    /// invariants and constraint residuals
    ni: usize,
    /// observed solution components (solved for from the state)
    nk: usize,
    /// exogenous data (time, inputs)
    ne: usize,
    /// control inputs
    nu: usize,
}

impl Sizes {
    fn of(sys: &StepSystem) -> Sizes {
        Sizes {
            np: sys.params.len(),
            nz: sys.state.len(),
            nx: sys.unknowns.len(),
            nq: sys.phys_q.len(),
            nv: sys.phys_v.len(),
            ni: sys.invariants.len(),
            nk: sys.obs_solution.len(),
            ne: sys.exogenous.len(),
            nu: sys.n_inputs(),
        }
    }
}

/// The generated functions of one step system, called with the arguments of
/// the trait methods: the per-step kernels with the stepper's vectors, the
/// others (initial states, physical state, invariants) with slices checked
/// into arrays.
struct Calls<'a> {
    functions: &'a [crate::sym::Function],
    ne: usize,
    once: Vec<Slot>,
}

impl<'a> Calls<'a> {
    fn new(sys: &StepSystem, functions: &'a [crate::sym::Function]) -> Calls<'a> {
        let Sizes { ne, nz, nk, nq, nv, .. } = Sizes::of(sys);
        let once = vec![
            ((Arg::P, false), quote!(&p)),
            ((Arg::E, false), arr("e", ne)),
            ((Arg::Z, false), arr("z", nz)),
            ((Arg::Y, false), arr("y", nk)),
            ((Arg::Q, false), arr("q", nq)),
            ((Arg::V, false), arr("v", nv)),
            ((Arg::T, false), quote!(&[t])),
        ];
        Calls { functions, ne, once }
    }

    fn function(&self, k: Kernel) -> Result<&'a crate::sym::Function, String> {
        self.functions
            .iter()
            .find(|f| f.name == k)
            .ok_or_else(|| format!("internal error: no function `{k}`"))
    }

    /// The per-step slots; the unknowns (and the Newton iterate `w`) are the
    /// method's argument named `unknowns`.
    fn step_slots(&self, unknowns: &str) -> Vec<Slot> {
        let ne = self.ne;
        let w = format_ident!("{}", unknowns);
        vec![
            ((Arg::P, false), quote!(&self.__params())),
            ((Arg::H, false), quote!(&[h])),
            (
                (Arg::E, false),
                quote!(<&[f64; #ne]>::try_from(e).expect("exogenous data length")),
            ),
            ((Arg::Z, false), quote!(&z.data.0[0])),
            ((Arg::Z, true), quote!(&lo.data.0[0])),
            ((Arg::X, false), quote!(&#w.data.0[0])),
            ((Arg::W, false), quote!(&#w.data.0[0])),
        ]
    }

    /// A call of per-step kernel `k` from a method whose unknowns are `unknowns`.
    fn step(&self, k: Kernel, unknowns: &str, outs: &[TokenStream]) -> Result<TokenStream, String> {
        call(self.function(k)?, "", &[], &self.step_slots(unknowns), outs)
    }

    /// A call of the double-double copy of per-step kernel `k` (state in
    /// double-double).
    fn step_compensated(&self, k: Kernel, outs: &[TokenStream]) -> Result<TokenStream, String> {
        call(self.function(k)?, "_dd", &[Arg::Z], &self.step_slots("x"), outs)
    }

    /// A call of kernel `k`, run once per query rather than per step.
    fn once(&self, k: Kernel, outs: &[TokenStream]) -> Result<TokenStream, String> {
        call(self.function(k)?, "", &[], &self.once, outs)
    }
}

/// The struct's inherent items: the name lists, the parameter defaults, and
/// the typed front of the `Kernels` methods (initial states, stepper,
/// physical state, invariants).
fn inherent_impl(sys: &StepSystem, target: &Target) -> TokenStream {
    let Sizes {
        np,
        nz,
        nx,
        nq,
        nv,
        ni,
        ne,
        nu,
        ..
    } = Sizes::of(sys);
    let ident = target.ident;
    let model = &sys.model;
    let pnames: Vec<&str> = sys.params.iter().map(|(s, _)| s.name.as_str()).collect();
    let pfields: Vec<Ident> = pnames.iter().map(|n| format_ident!("{}", n)).collect();
    let pdefaults: Vec<f64> = sys.params.iter().map(|(_, d)| *d).collect();
    let qnames: Vec<&str> = sys.phys_q.iter().map(|s| s.name.as_str()).collect();
    let vnames: Vec<&str> = sys.phys_v.iter().map(|s| s.name.as_str()).collect();
    let znames: Vec<&str> = sys.state.iter().map(|s| s.name.as_str()).collect();
    let xnames: Vec<&str> = sys.unknowns.iter().map(|s| s.name.as_str()).collect();
    let inv = sys.invariants.iter().map(|i| {
        let n = &i.name;
        let k = invariant_kind(i.kind);
        quote!((#n, __rt::InvariantKind::#k))
    });
    let unames: Vec<&str> = sys.exogenous[hamel_kernel::Exogenous::of_len(ne).input_range()]
        .iter()
        .map(|s| s.name.as_str())
        .collect();
    let init_names: Vec<&str> = sys.initials.iter().map(|(n, _, _)| n.as_str()).collect();
    let nin = init_names.len();
    let doc_struct = format!(
        "Integrator of model `{model}` ({}), scheme `{}`.",
        target.model_path, sys.scheme
    );
    let doc_state = format!("Scheme state: [{}].", znames.join(", "));
    quote! {
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
            /// Control input names (set them with `Stepper::set_inputs`).
            pub const INPUTS: [&'static str; #nu] = [#(#unames),*];
            /// Names of the model's named initial states.
            pub const INITIAL_STATES: [&'static str; #nin] = [#(#init_names),*];
            const __UNKNOWNS: [&'static str; #nx] = [#(#xnames),*];
            const __INVARIANTS: [(&'static str, __rt::InvariantKind); #ni] = [#(#inv),*];

            /// The model with the parameter values of its file.
            pub fn with_defaults() -> Self {
                Self { #(#pfields: #pdefaults),* }
            }

            fn __params(&self) -> [f64; #np] {
                [#(self.#pfields),*]
            }

            /// The scheme's state for physical coordinates `q` and velocities `ξ`.
            /// Fails on non-finite data, on data off the model's constraints, or
            /// where the physical state cannot be recovered from the scheme's
            /// state (a coordinate singularity).
            pub fn initial_state(&self, q: [f64; #nq], v: [f64; #nv]) -> Result<__rt::State<#nz, #nx>, __rt::StepError> {
                __rt::Kernels::initial_state(self, &q, &v)
            }

            /// The physical data `(q, ξ)` of a named initial state of the model file.
            pub fn initial_conditions(&self, name: &str) -> Option<([f64; #nq], [f64; #nv])> {
                let mut q = [0.0f64; #nq];
                let mut v = [0.0f64; #nv];
                __rt::Kernels::initial_data(self, name, &mut q, &mut v).then_some((q, v))
            }

            /// The scheme's state for a named initial state of the model file.
            pub fn initial(&self, name: &str) -> Result<__rt::State<#nz, #nx>, __rt::StepError> {
                __rt::Kernels::initial_named(self, name)
            }

            /// A stepper with step size `h`.
            pub fn stepper(&self, h: f64) -> Result<__rt::Stepper<'_, Self, #nz, #nx>, __rt::StepError> {
                __rt::Kernels::check_parameters(self)?;
                __rt::Stepper::new(self, h)
            }

            /// The physical state `(q, ξ)` of a scheme state.
            pub fn physical(&self, state: &__rt::State<#nz, #nx>) -> Result<([f64; #nq], [f64; #nv]), __rt::StepError> {
                let mut q = [0.0f64; #nq];
                let mut v = [0.0f64; #nv];
                __rt::Kernels::physical_into(self, &state.z, state.step, &mut q, &mut v)?;
                Ok((q, v))
            }

            /// Energy, the model's invariants and its constraint residuals at a state
            /// (names in `invariant_info`).
            pub fn invariants(&self, state: &__rt::State<#nz, #nx>) -> Result<[f64; #ni], __rt::StepError> {
                let (q, v) = self.physical(state)?;
                let mut out = [0.0f64; #ni];
                let t = __rt::Kernels::time_of(self, state.z.as_slice());
                __rt::Kernels::invariants_of(self, t, &q, &v, &mut out);
                Ok(out)
            }
        }
    }
}

/// The runtime's name of an invariant kind.
fn invariant_kind(kind: InvariantKind) -> TokenStream {
    match kind {
        InvariantKind::Energy => quote!(Energy),
        InvariantKind::ForcedEnergy => quote!(ForcedEnergy),
        InvariantKind::Momentum => quote!(Momentum),
        InvariantKind::Geometric => quote!(Geometric),
        InvariantKind::Monitored => quote!(Monitored),
        InvariantKind::Constraint => quote!(Constraint),
        InvariantKind::DriftingConstraint => quote!(DriftingConstraint),
        InvariantKind::HiddenConstraint => quote!(HiddenConstraint),
    }
}

/// The runtime's `Kernels` impl for the struct.
fn kernels_impl(
    sys: &StepSystem,
    target: &Target,
    calls: &Calls,
    generated: &Generated,
) -> Result<TokenStream, String> {
    let Sizes { nz, nx, .. } = Sizes::of(sys);
    let ident = target.ident;
    let description = description_methods(sys, target.order);
    let step = step_methods(sys, calls, generated)?;
    let sensitivity = sensitivity_method(sys, calls)?;
    let forcing = forcing_methods(sys, calls)?;
    let compensated = if generated.compensated {
        compensated_methods(sys, calls)?
    } else {
        quote!()
    };
    let physical = physical_methods(sys, calls)?;
    let health = health_methods(sys, calls)?;
    let initial = initial_data_method(sys, calls)?;
    Ok(quote! {
        #[allow(unused_variables)]
        impl __rt::Kernels<__na::Const<#nz>, __na::Const<#nx>> for #ident {
            #description

            #step

            #sensitivity

            #forcing

            #compensated

            #physical

            #health

            #initial
        }
    })
}

/// What the system is: model, scheme, order, sizes and names.
fn description_methods(sys: &StepSystem, order: u32) -> TokenStream {
    let Sizes { nz, nx, .. } = Sizes::of(sys);
    let model = &sys.model;
    let scheme = &sys.scheme;
    let order_fn = match order {
        2 => quote!(),
        order => quote! {
            fn order(&self) -> u32 {
                #order
            }
        },
    };
    quote! {
        fn model(&self) -> &str {
            #model
        }

        fn scheme(&self) -> &str {
            #scheme
        }

        #order_fn

        fn dims(&self) -> (__na::Const<#nz>, __na::Const<#nx>) {
            (__na::Const, __na::Const)
        }

        fn names(&self, list: __rt::NameList) -> Vec<&str> {
            match list {
                __rt::NameList::Parameters => Self::PARAMETERS.to_vec(),
                __rt::NameList::Coordinates => Self::COORDINATES.to_vec(),
                __rt::NameList::Velocities => Self::VELOCITIES.to_vec(),
                __rt::NameList::State => Self::STATE.to_vec(),
                __rt::NameList::Unknowns => Self::__UNKNOWNS.to_vec(),
                __rt::NameList::InitialStates => Self::INITIAL_STATES.to_vec(),
                __rt::NameList::Inputs => Self::INPUTS.to_vec(),
            }
        }

        fn invariant_info(&self) -> Vec<(&str, __rt::InvariantKind)> {
            Self::__INVARIANTS.to_vec()
        }

        fn parameters(&self) -> Vec<f64> {
            self.__params().to_vec()
        }
    }
}

/// The methods a step runs: residual, Jacobian, increment, predictor, and
/// what the Newton solve needs to know about them.
fn step_methods(sys: &StepSystem, calls: &Calls, generated: &Generated) -> Result<TokenStream, String> {
    let Sizes { nz, nx, ne, .. } = Sizes::of(sys);
    let out_vec = quote!(&mut out.data.0[0]);
    let out_mat = quote!(<&mut [f64; #nx * #nx]>::try_from(out.as_mut_slice()).expect("square matrix"));
    let out_j = quote!(<&mut [f64; #nx * #nx]>::try_from(j.as_mut_slice()).expect("square matrix"));
    let residual = calls.step(Kernel::Residual, "x", std::slice::from_ref(&out_vec))?;
    // `jacobian` alone (sensitivities, simplified Newton) runs the fused
    // function and drops the residual: one function to compile, not two.
    let jacobian = calls.step(Kernel::ResidualJacobian, "x", &[quote!(&mut [0.0f64; #nx]), out_mat])?;
    let residual_jacobian = calls.step(Kernel::ResidualJacobian, "x", &[quote!(&mut r.data.0[0]), out_j])?;
    let increment = calls.step(Kernel::Increment, "x", std::slice::from_ref(&out_vec))?;
    let predict = calls.step(Kernel::Predict, "previous", std::slice::from_ref(&out_vec))?;
    let band = match sys.band {
        Some((kl, ku)) => quote!(Some((#kl, #ku))),
        None => quote!(None),
    };
    let pattern = sys.jacobian_pattern();
    let pattern = if pattern.is_empty() {
        quote!(None)
    } else {
        let (rows, cols): (Vec<u32>, Vec<u32>) = pattern.into_iter().unzip();
        quote!(Some(&[#((#rows, #cols)),*]))
    };
    let (residual_ops, residual_jacobian_ops) = (generated.residual_ops, generated.residual_jacobian_ops);
    Ok(quote! {
        #[inline]
        fn residual(&self, h: f64, e: &[f64], z: &__na::SVector<f64, #nz>, x: &__na::SVector<f64, #nx>, out: &mut __na::SVector<f64, #nx>) {
            #residual;
        }

        #[inline]
        fn jacobian(&self, h: f64, e: &[f64], z: &__na::SVector<f64, #nz>, x: &__na::SVector<f64, #nx>, out: &mut __na::SMatrix<f64, #nx, #nx>) {
            #jacobian;
        }

        #[inline]
        fn residual_jacobian(
            &self,
            h: f64,
            e: &[f64],
            z: &__na::SVector<f64, #nz>,
            x: &__na::SVector<f64, #nx>,
            r: &mut __na::SVector<f64, #nx>,
            j: &mut __na::SMatrix<f64, #nx, #nx>,
        ) {
            #residual_jacobian;
        }

        #[inline]
        fn increment(&self, h: f64, e: &[f64], z: &__na::SVector<f64, #nz>, x: &__na::SVector<f64, #nx>, out: &mut __na::SVector<f64, #nz>) {
            #increment;
        }

        #[inline]
        fn predict(&self, h: f64, e: &[f64], z: &__na::SVector<f64, #nz>, previous: &__na::SVector<f64, #nx>, out: &mut __na::SVector<f64, #nx>) {
            #predict;
        }

        fn exogenous_len(&self) -> usize {
            #ne
        }

        fn jacobian_band(&self) -> Option<(usize, usize)> {
            #band
        }

        fn jacobian_pattern(&self) -> Option<&[(u32, u32)]> {
            #pattern
        }

        fn kernel_ops(&self) -> Option<(usize, usize)> {
            Some((#residual_ops, #residual_jacobian_ops))
        }
    })
}

/// `sensitivity_parts`, the pieces of the step map's derivative by the
/// state; none where `sys` has no sensitivity kernel.
fn sensitivity_method(sys: &StepSystem, calls: &Calls) -> Result<TokenStream, String> {
    if sys.sensitivity.is_none() {
        return Ok(quote!());
    }
    let Sizes { nz, nx, .. } = Sizes::of(sys);
    let c = calls.step(
        Kernel::SensitivityParts,
        "x",
        &[quote!(&mut rz), quote!(&mut uz), quote!(&mut ux)],
    )?;
    Ok(quote! {
            fn sensitivity_parts(
                &self,
                h: f64,
                e: &[f64],
                z: &__na::SVector<f64, #nz>,
                x: &__na::SVector<f64, #nx>,
            ) -> Option<(__na::SMatrix<f64, #nx, #nz>, __na::SMatrix<f64, #nz, #nz>, __na::SMatrix<f64, #nz, #nx>)> {
                let mut rz = [0.0f64; #nx * #nz];
                let mut uz = [0.0f64; #nz * #nz];
                let mut ux = [0.0f64; #nz * #nx];
                #c;
                Some((
                    __na::SMatrix::<f64, #nx, #nz>::from_row_slice(&rz),
                    __na::SMatrix::<f64, #nz, #nz>::from_row_slice(&uz),
                    __na::SMatrix::<f64, #nz, #nx>::from_row_slice(&ux),
                ))
            }

    })
}

/// The methods of a forced system: the step's derivative by the control
/// inputs and the work the forces do over a step, each where `sys` has it.
fn forcing_methods(sys: &StepSystem, calls: &Calls) -> Result<TokenStream, String> {
    let Sizes { nz, nx, nu, .. } = Sizes::of(sys);
    let mut ts = quote!();
    if sys.input_sensitivity.is_some() {
        let c = calls.step(Kernel::InputSensitivityParts, "x", &[quote!(&mut ru), quote!(&mut uu)])?;
        ts.extend(quote! {
            fn input_sensitivity_parts(
                &self,
                h: f64,
                e: &[f64],
                z: &__na::SVector<f64, #nz>,
                x: &__na::SVector<f64, #nx>,
            ) -> Option<(__na::DMatrix<f64>, __na::DMatrix<f64>)> {
                let mut ru = [0.0f64; #nx * #nu];
                let mut uu = [0.0f64; #nz * #nu];
                #c;
                Some((
                    __na::DMatrix::<f64>::from_row_slice(#nx, #nu, &ru),
                    __na::DMatrix::<f64>::from_row_slice(#nz, #nu, &uu),
                ))
            }
        });
    }
    if sys.work.is_some() {
        let c = calls.step(Kernel::Work, "x", &[quote!(&mut w)])?;
        ts.extend(quote! {
            fn forced(&self) -> bool {
                true
            }

            fn work(&self, h: f64, e: &[f64], z: &__na::SVector<f64, #nz>, x: &__na::SVector<f64, #nx>) -> Option<f64> {
                let mut w = [0.0f64; 1];
                #c;
                Some(w[0])
            }
        });
    }
    Ok(ts)
}

/// Residual and increment with the state in double-double (the high part
/// `z`, the low part `lo`), for compensated runs.
fn compensated_methods(sys: &StepSystem, calls: &Calls) -> Result<TokenStream, String> {
    let Sizes { nz, nx, .. } = Sizes::of(sys);
    let out_vec = quote!(&mut out.data.0[0]);
    let r = calls.step_compensated(Kernel::Residual, std::slice::from_ref(&out_vec))?;
    let u = calls.step_compensated(Kernel::Increment, std::slice::from_ref(&out_vec))?;
    Ok(quote! {
        #[inline]
        fn residual_compensated(
            &self,
            h: f64,
            e: &[f64],
            z: &__na::SVector<f64, #nz>,
            lo: &__na::SVector<f64, #nz>,
            x: &__na::SVector<f64, #nx>,
            out: &mut __na::SVector<f64, #nx>,
        ) -> bool {
            #r;
            true
        }

        #[inline]
        fn increment_compensated(
            &self,
            h: f64,
            e: &[f64],
            z: &__na::SVector<f64, #nz>,
            lo: &__na::SVector<f64, #nz>,
            x: &__na::SVector<f64, #nx>,
            out: &mut __na::SVector<f64, #nz>,
        ) -> bool {
            #u;
            true
        }
    })
}

/// The way between scheme state and physical state: the scheme state of
/// physical data, the observed solution, the physical state of a scheme
/// state, the time slot, and the invariants of physical data.
fn physical_methods(sys: &StepSystem, calls: &Calls) -> Result<TokenStream, String> {
    let Sizes {
        nz, nx, nq, nv, ni, nk, ..
    } = Sizes::of(sys);
    let state_of = calls.once(Kernel::InitState, &[arr_mut("z", nz), arr_mut("x", nx)])?;
    let physical = calls.once(Kernel::Physical, &[arr_mut("q", nq), arr_mut("v", nv)])?;
    let invariants = calls.once(Kernel::Invariants, &[arr_mut("out", ni)])?;
    let observe = observe_body(sys, calls)?;
    let time_fn = match sys.time {
        Some((i, _)) => quote! {
            fn time_slot(&self) -> Option<usize> {
                Some(#i)
            }
        },
        None => quote!(),
    };
    Ok(quote! {
        fn observe_size(&self) -> usize {
            #nk
        }

        fn physical_sizes(&self) -> (usize, usize) {
            (#nq, #nv)
        }

        fn state_of(&self, q: &[f64], v: &[f64], z: &mut [f64], x: &mut [f64]) {
            let p = self.__params();
            #state_of;
        }

        fn observe(&self, z: &[f64], y: &mut [f64]) -> bool {
            #observe
        }

        fn physical_of(&self, z: &[f64], y: &[f64], q: &mut [f64], v: &mut [f64]) {
            let p = self.__params();
            #physical;
        }

        #time_fn

        fn invariants_of(&self, t: f64, q: &[f64], v: &[f64], out: &mut [f64]) {
            let p = self.__params();
            let out = &mut out[..#ni];
            #invariants;
        }
    })
}

/// The body of `observe`: solve the observation system `k y = b` at the
/// state; trivially true where nothing is observed.
fn observe_body(sys: &StepSystem, calls: &Calls) -> Result<TokenStream, String> {
    let nk = sys.obs_solution.len();
    if nk == 0 {
        return Ok(quote!(true));
    }
    let c = calls.once(Kernel::ObserveSystem, &[quote!(&mut k), quote!(&mut b)])?;
    Ok(quote! {
        let p = self.__params();
        let mut k = [0.0f64; #nk * #nk];
        let mut b = [0.0f64; #nk];
        #c;
        let km = __na::SMatrix::<f64, #nk, #nk>::from_row_slice(&k);
        let mut bv = __na::SVector::<f64, #nk>::from(b);
        if __rt::lu::solve_in_place(&km, &mut bv).is_err() {
            return false;
        }
        y.copy_from_slice(bv.as_slice());
        true
    })
}

/// `initial_data`: the physical data of the model file's named initial states.
fn initial_data_method(sys: &StepSystem, calls: &Calls) -> Result<TokenStream, String> {
    let Sizes { nq, nv, .. } = Sizes::of(sys);
    let init_names: Vec<&str> = sys.initials.iter().map(|(n, _, _)| n.as_str()).collect();
    let init_calls = (0..init_names.len())
        .map(|i| calls.once(Kernel::Initial(i), &[arr_mut("q", nq), arr_mut("v", nv)]))
        .collect::<Result<Vec<_>, String>>()?;
    Ok(quote! {
        fn initial_data(&self, name: &str, q: &mut [f64], v: &mut [f64]) -> bool {
            let p = self.__params();
            match name {
                #(#init_names => {
                    #init_calls;
                    true
                })*
                _ => false,
            }
        }
    })
}

/// The `Kernels` methods of the health kernels (the constrained kinetic
/// metric, the frame check) that `sys` lists; none where it lists none.
fn health_methods(sys: &StepSystem, calls: &Calls) -> Result<TokenStream, String> {
    let Some(h) = &sys.health else {
        return Ok(TokenStream::new());
    };
    let np = sys.params.len();
    let (n, varies) = (h.metric_size, h.metric_varies);
    let metric = calls.once(Kernel::Metric, &[arr_mut("out", n * n)])?;
    let mut ts = quote! {
        fn metric_size(&self) -> usize {
            #n
        }

        fn metric_varies(&self) -> bool {
            #varies
        }

        fn metric_at(&self, p: &[f64], q: &[f64], v: &[f64], out: &mut [f64]) {
            let p: [f64; #np] = p.try_into().expect("parameter count");
            #metric;
        }
    };
    if let Some((rows, cols, _)) = &h.frame_check {
        let frame = calls.once(Kernel::FrameCheck, &[arr_mut("out", rows * cols)])?;
        ts.extend(quote! {
            fn frame_check_size(&self) -> Option<(usize, usize)> {
                Some((#rows, #cols))
            }

            fn frame_check_at(&self, q: &[f64], v: &[f64], out: &mut [f64]) {
                let p = self.__params();
                #frame;
            }
        });
    }
    Ok(ts)
}

/// `<&[f64; len]>::try_from(name)`: a slice argument as the array a generated function takes.
fn arr(n: &str, len: usize) -> TokenStream {
    let id = format_ident!("{}", n);
    quote!(<&[f64; #len]>::try_from(#id).expect("argument length"))
}

/// `<&mut [f64; len]>::try_from(name)`: a slice argument as the array a generated function takes.
fn arr_mut(n: &str, len: usize) -> TokenStream {
    let id = format_ident!("{}", n);
    quote!(<&mut [f64; #len]>::try_from(#id).expect("argument length"))
}
