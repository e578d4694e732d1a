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
    let calls = Calls::new(sys, &functions);
    let generated = generate(sys, &calls, target.simd)?;
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
fn generate(sys: &StepSystem, calls: &Calls, simd: bool) -> Result<Generated, String> {
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
    for f in calls.functions {
        let unbound =
            |u: crate::sym::tape::UnboundSymbol| format!("internal error: `{}` uses unbound symbol `{}`", f.name, u.0);
        let role = match f.name {
            k if k.is_hot() && simd => Role::Step,
            k if k.is_hot() => Role::StepBaseline,
            _ => Role::Once,
        };
        // A large banded step writes its Jacobian as its pattern's values
        // only (the dense methods scatter them).
        let pattern = calls.pattern_fn.as_ref().filter(|_| f.name == Kernel::ResidualJacobian);
        let (
            ts,
            EmitStats {
                ops,
                parts,
                iterations,
                data,
            },
        ) = rust::function(&mut g, pattern.unwrap_or(f), role, &member_of).map_err(unbound)?;
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

/// How the glue spells the step's vectors. A step of up to
/// [`crate::cost::MAX_FIXED_UNKNOWNS`] unknowns is fixed-size (`SVector`,
/// `State<NZ, NX>`, `Stepper`): its stepper holds its Newton matrix inline,
/// which small systems keep in registers. A larger one is sized at run time
/// (`DVector`, `DynState`, `DynStepper`), as the JIT's: its vectors and its
/// banded LU on the heap, its Jacobian written as its pattern's values.
#[derive(Clone, Copy)]
struct Dims {
    nz: usize,
    nx: usize,
    dynamic: bool,
}

impl Dims {
    fn of(sys: &StepSystem) -> Dims {
        let Sizes { nz, nx, .. } = Sizes::of(sys);
        Dims {
            nz,
            nx,
            dynamic: nx > crate::cost::MAX_FIXED_UNKNOWNS,
        }
    }

    /// The `Kernels` dimensions `(Z, X)`.
    fn types(&self) -> (TokenStream, TokenStream) {
        let (nz, nx) = (self.nz, self.nx);
        if self.dynamic {
            (quote!(__na::Dyn), quote!(__na::Dyn))
        } else {
            (quote!(__na::Const<#nz>), quote!(__na::Const<#nx>))
        }
    }

    /// A vector of `n` entries.
    fn vector(&self, n: usize) -> TokenStream {
        if self.dynamic {
            quote!(__na::DVector<f64>)
        } else {
            quote!(__na::SVector<f64, #n>)
        }
    }

    /// The unknowns' square matrix.
    fn square(&self) -> TokenStream {
        let nx = self.nx;
        if self.dynamic {
            quote!(__na::DMatrix<f64>)
        } else {
            quote!(__na::SMatrix<f64, #nx, #nx>)
        }
    }

    /// The `r × c` matrix of row-major `rows`.
    fn matrix_of_rows(&self, r: usize, c: usize, rows: TokenStream) -> TokenStream {
        if self.dynamic {
            quote!(__na::DMatrix::<f64>::from_row_slice(#r, #c, &#rows))
        } else {
            quote!(__na::SMatrix::<f64, #r, #c>::from_row_slice(&#rows))
        }
    }

    /// Vector `name` of `n` entries as the array a generated function reads.
    fn array(&self, name: &Ident, n: usize) -> TokenStream {
        if self.dynamic {
            quote!(<&[f64; #n]>::try_from(#name.as_slice()).expect("vector length"))
        } else {
            quote!(&#name.data.0[0])
        }
    }

    /// Vector `name` of `n` entries as the array a generated function writes.
    fn array_mut(&self, name: &Ident, n: usize) -> TokenStream {
        if self.dynamic {
            quote!(<&mut [f64; #n]>::try_from(#name.as_mut_slice()).expect("vector length"))
        } else {
            quote!(&mut #name.data.0[0])
        }
    }

    /// Zeros of `n` entries a generated function writes (on the heap where
    /// sized at run time: a large step's matrices would not fit the stack).
    fn scratch(&self, n: usize) -> TokenStream {
        if self.dynamic {
            quote!(::std::vec![0.0f64; #n])
        } else {
            quote!([0.0f64; #n])
        }
    }

    /// A scratch array (see [`Dims::scratch`]) passed to a generated function.
    fn scratch_arg(&self, name: &Ident, n: usize) -> TokenStream {
        if self.dynamic {
            quote!(<&mut [f64; #n]>::try_from(&mut #name[..]).expect("scratch length"))
        } else {
            quote!(&mut #name)
        }
    }

    /// The state's type.
    fn state(&self) -> TokenStream {
        let (nz, nx) = (self.nz, self.nx);
        if self.dynamic {
            quote!(__rt::DynState)
        } else {
            quote!(__rt::State<#nz, #nx>)
        }
    }

    /// The stepper's type and constructor path.
    fn stepper(&self) -> (TokenStream, TokenStream) {
        let (nz, nx) = (self.nz, self.nx);
        if self.dynamic {
            // Through `dyn Kernels`: the stepper's code is the runtime's,
            // not compiled again in the deriving crate.
            (quote!(__rt::SharedStepper<'_>), quote!(__rt::SharedStepper))
        } else {
            (quote!(__rt::Stepper<'_, Self, #nz, #nx>), quote!(__rt::Stepper))
        }
    }
}

/// A step's residual and Jacobian as the values of the Jacobian's pattern
/// (`Kernels::residual_jacobian_pattern`): what its LU reads, without the
/// `n²` stores of the whole matrix (3.3 MB per evaluation for the 64-link
/// director chain). Emitted instead of the whole matrix's function; `None`
/// for a step of fewer than [`hamel_kernel::PATTERN_MIN`] unknowns, whose
/// Jacobian stays whole, or an unbanded one.
fn pattern_function(
    sys: &StepSystem,
    functions: &[crate::sym::Function],
    pattern: &[(u32, u32)],
) -> Option<crate::sym::Function> {
    if sys.unknowns.len() < hamel_kernel::PATTERN_MIN {
        return None;
    }
    let f = functions.iter().find(|f| f.name == Kernel::ResidualJacobian)?;
    let [(rn, r), (_, j)] = &f.outputs[..] else {
        return None;
    };
    let n = r.len();
    if pattern.is_empty() || j.len() != n * n {
        return None;
    }
    // Column-major, as the whole matrix is written.
    let values = pattern.iter().map(|&(r, c)| j[c as usize * n + r as usize]).collect();
    Some(crate::sym::Function {
        name: Kernel::ResidualJacobian,
        inputs: f.inputs.clone(),
        outputs: vec![(rn.clone(), r.clone()), ("values".into(), values)],
        locals: f.locals.clone(),
    })
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
    dims: Dims,
    once: Vec<Slot>,
    /// the Jacobian's pattern (empty: none declared)
    pattern: Vec<(u32, u32)>,
    /// the residual and the pattern's values, emitted instead of the whole
    /// Jacobian (see [`pattern_function`])
    pattern_fn: Option<crate::sym::Function>,
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
            ((Arg::U, false), quote!(u.try_into().expect("direction length"))),
        ];
        let pattern = sys.jacobian_pattern();
        let pattern_fn = pattern_function(sys, functions, &pattern);
        Calls {
            functions,
            ne,
            dims: Dims::of(sys),
            once,
            pattern,
            pattern_fn,
        }
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
        let (ne, d) = (self.ne, self.dims);
        let w = format_ident!("{}", unknowns);
        let (z, lo) = (format_ident!("z"), format_ident!("lo"));
        let (zs, los, ws) = (d.array(&z, d.nz), d.array(&lo, d.nz), d.array(&w, d.nx));
        vec![
            ((Arg::P, false), quote!(&self.__params())),
            ((Arg::H, false), quote!(&[h])),
            (
                (Arg::E, false),
                quote!(<&[f64; #ne]>::try_from(e).expect("exogenous data length")),
            ),
            ((Arg::Z, false), zs),
            ((Arg::Z, true), los),
            ((Arg::X, false), ws.clone()),
            ((Arg::W, false), ws),
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
    let dims = Dims::of(sys);
    let state = dims.state();
    let (stepper_ty, stepper_new) = dims.stepper();
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
            pub fn initial_state(&self, q: [f64; #nq], v: [f64; #nv]) -> Result<#state, __rt::StepError> {
                __rt::Kernels::initial_state(self, &q, &v)
            }

            /// The physical data `(q, ξ)` of a named initial state of the model file.
            pub fn initial_conditions(&self, name: &str) -> Option<([f64; #nq], [f64; #nv])> {
                let mut q = [0.0f64; #nq];
                let mut v = [0.0f64; #nv];
                __rt::Kernels::initial_data(self, name, &mut q, &mut v).then_some((q, v))
            }

            /// The scheme's state for a named initial state of the model file.
            pub fn initial(&self, name: &str) -> Result<#state, __rt::StepError> {
                __rt::Kernels::initial_named(self, name)
            }

            /// A stepper with step size `h`.
            pub fn stepper(&self, h: f64) -> Result<#stepper_ty, __rt::StepError> {
                __rt::Kernels::check_parameters(self)?;
                #stepper_new::new(self, h)
            }

            /// The physical state `(q, ξ)` of a scheme state.
            pub fn physical(&self, state: &#state) -> Result<([f64; #nq], [f64; #nv]), __rt::StepError> {
                let mut q = [0.0f64; #nq];
                let mut v = [0.0f64; #nv];
                __rt::Kernels::physical_into(self, &state.z, state.step, &mut q, &mut v)?;
                Ok((q, v))
            }

            /// Energy, the model's invariants and its constraint residuals at a state
            /// (names in `invariant_info`).
            pub fn invariants(&self, state: &#state) -> Result<[f64; #ni], __rt::StepError> {
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
    let (zt, xt) = Dims::of(sys).types();
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
        impl __rt::Kernels<#zt, #xt> for #ident {
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
    let d = Dims::of(sys);
    let (nz, nx) = (d.nz, d.nx);
    let (zt, xt) = d.types();
    let dims = if d.dynamic {
        quote!((__na::Dyn(#nz), __na::Dyn(#nx)))
    } else {
        quote!((__na::Const, __na::Const))
    };
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

        fn dims(&self) -> (#zt, #xt) {
            #dims
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
    let d = Dims::of(sys);
    let (vz, vx, mxx) = (d.vector(nz), d.vector(nx), d.square());
    let (out, r) = (format_ident!("out"), format_ident!("r"));
    let (out_x, out_z) = (d.array_mut(&out, nx), d.array_mut(&out, nz));
    let out_mat = quote!(<&mut [f64; #nx * #nx]>::try_from(out.as_mut_slice()).expect("square matrix"));
    let out_j = quote!(<&mut [f64; #nx * #nx]>::try_from(j.as_mut_slice()).expect("square matrix"));
    let residual = calls.step(Kernel::Residual, "x", std::slice::from_ref(&out_x))?;
    let (jacobian, residual_jacobian, pattern_method) = match &calls.pattern_fn {
        // `jacobian` alone (sensitivities, simplified Newton) runs the fused
        // function and drops the residual: one function to compile, not two.
        None => (
            calls.step(Kernel::ResidualJacobian, "x", &[quote!(&mut [0.0f64; #nx]), out_mat])?,
            calls.step(Kernel::ResidualJacobian, "x", &[d.array_mut(&r, nx), out_j])?,
            quote!(),
        ),
        // The pattern's values, scattered into the matrix.
        Some(pf) => {
            let np = pf.outputs[1].1.len();
            let values = quote!(<&mut [f64; #np]>::try_from(&mut values[..]).expect("pattern length"));
            let into = |r: TokenStream, m: TokenStream| -> Result<TokenStream, String> {
                let c = calls.step(Kernel::ResidualJacobian, "x", &[r, values.clone()])?;
                Ok(quote! {
                    let mut values = ::std::vec![0.0f64; #np];
                    #c;
                    let pattern = __rt::Kernels::jacobian_pattern(self).unwrap_or(&[]);
                    #m.fill(0.0);
                    for (&(i, k), v) in pattern.iter().zip(&values) {
                        #m[(i as usize, k as usize)] = *v;
                    }
                })
            };
            let c = calls.step(Kernel::ResidualJacobian, "x", &[d.array_mut(&r, nx), quote!(values)])?;
            (
                into(quote!(&mut [0.0f64; #nx]), quote!(out))?,
                into(d.array_mut(&r, nx), quote!(j))?,
                quote! {
                    fn residual_jacobian_pattern(
                        &self,
                        h: f64,
                        e: &[f64],
                        z: &#vz,
                        x: &#vx,
                        r: &mut #vx,
                        values: &mut [f64],
                    ) -> bool {
                        let Ok(values) = <&mut [f64; #np]>::try_from(values) else {
                            return false;
                        };
                        #c;
                        true
                    }
                },
            )
        }
    };
    let increment = calls.step(Kernel::Increment, "x", std::slice::from_ref(&out_z))?;
    let predict = calls.step(Kernel::Predict, "previous", std::slice::from_ref(&out_x))?;
    let band = match sys.band {
        Some((kl, ku)) => quote!(Some((#kl, #ku))),
        None => quote!(None),
    };
    let pattern = if calls.pattern.is_empty() {
        quote!(None)
    } else {
        let (rows, cols): (Vec<u32>, Vec<u32>) = calls.pattern.iter().copied().unzip();
        quote!(Some(&[#((#rows, #cols)),*]))
    };
    let (residual_ops, residual_jacobian_ops) = (generated.residual_ops, generated.residual_jacobian_ops);
    Ok(quote! {
        #pattern_method

        #[inline]
        fn residual(&self, h: f64, e: &[f64], z: &#vz, x: &#vx, out: &mut #vx) {
            #residual;
        }

        #[inline]
        fn jacobian(&self, h: f64, e: &[f64], z: &#vz, x: &#vx, out: &mut #mxx) {
            #jacobian;
        }

        #[inline]
        fn residual_jacobian(
            &self,
            h: f64,
            e: &[f64],
            z: &#vz,
            x: &#vx,
            r: &mut #vx,
            j: &mut #mxx,
        ) {
            #residual_jacobian;
        }

        #[inline]
        fn increment(&self, h: f64, e: &[f64], z: &#vz, x: &#vx, out: &mut #vz) {
            #increment;
        }

        #[inline]
        fn predict(&self, h: f64, e: &[f64], z: &#vz, previous: &#vx, out: &mut #vx) {
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
    let d = Dims::of(sys);
    let (vz, vx) = (d.vector(nz), d.vector(nx));
    let [rz, uz, ux] = ["rz", "uz", "ux"].map(|n| format_ident!("{}", n));
    let c = calls.step(
        Kernel::SensitivityParts,
        "x",
        &[
            d.scratch_arg(&rz, nx * nz),
            d.scratch_arg(&uz, nz * nz),
            d.scratch_arg(&ux, nz * nx),
        ],
    )?;
    let (rz_new, uz_new, ux_new) = (d.scratch(nx * nz), d.scratch(nz * nz), d.scratch(nz * nx));
    let (mrz, muz, mux) = if d.dynamic {
        (
            quote!(__na::DMatrix<f64>),
            quote!(__na::DMatrix<f64>),
            quote!(__na::DMatrix<f64>),
        )
    } else {
        (
            quote!(__na::SMatrix<f64, #nx, #nz>),
            quote!(__na::SMatrix<f64, #nz, #nz>),
            quote!(__na::SMatrix<f64, #nz, #nx>),
        )
    };
    let (frz, fuz, fux) = (
        d.matrix_of_rows(nx, nz, quote!(rz)),
        d.matrix_of_rows(nz, nz, quote!(uz)),
        d.matrix_of_rows(nz, nx, quote!(ux)),
    );
    Ok(quote! {
            fn sensitivity_parts(
                &self,
                h: f64,
                e: &[f64],
                z: &#vz,
                x: &#vx,
            ) -> Option<(#mrz, #muz, #mux)> {
                let mut rz = #rz_new;
                let mut uz = #uz_new;
                let mut ux = #ux_new;
                #c;
                Some((#frz, #fuz, #fux))
            }

    })
}

/// The methods of a forced system: the step's derivative by the control
/// inputs and the work the forces do over a step, each where `sys` has it.
fn forcing_methods(sys: &StepSystem, calls: &Calls) -> Result<TokenStream, String> {
    let Sizes { nz, nx, nu, .. } = Sizes::of(sys);
    let d = Dims::of(sys);
    let (vz, vx) = (d.vector(nz), d.vector(nx));
    let mut ts = quote!();
    if sys.input_sensitivity.is_some() {
        let [ru, uu] = ["ru", "uu"].map(|n| format_ident!("{}", n));
        let c = calls.step(
            Kernel::InputSensitivityParts,
            "x",
            &[d.scratch_arg(&ru, nx * nu), d.scratch_arg(&uu, nz * nu)],
        )?;
        let (ru_new, uu_new) = (d.scratch(nx * nu), d.scratch(nz * nu));
        ts.extend(quote! {
            fn input_sensitivity_parts(
                &self,
                h: f64,
                e: &[f64],
                z: &#vz,
                x: &#vx,
            ) -> Option<(__na::DMatrix<f64>, __na::DMatrix<f64>)> {
                let mut ru = #ru_new;
                let mut uu = #uu_new;
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

            fn work(&self, h: f64, e: &[f64], z: &#vz, x: &#vx) -> Option<f64> {
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
    let d = Dims::of(sys);
    let (vz, vx) = (d.vector(nz), d.vector(nx));
    let out = format_ident!("out");
    let r = calls.step_compensated(Kernel::Residual, &[d.array_mut(&out, nx)])?;
    let u = calls.step_compensated(Kernel::Increment, &[d.array_mut(&out, nz)])?;
    Ok(quote! {
        #[inline]
        fn residual_compensated(
            &self,
            h: f64,
            e: &[f64],
            z: &#vz,
            lo: &#vz,
            x: &#vx,
            out: &mut #vx,
        ) -> bool {
            #r;
            true
        }

        #[inline]
        fn increment_compensated(
            &self,
            h: f64,
            e: &[f64],
            z: &#vz,
            lo: &#vz,
            x: &#vx,
            out: &mut #vz,
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

/// Observation systems of up to this many unknowns are solved on the stack
/// (in three copies of the matrix: 0.2 MB at this size).
const OBSERVE_ON_STACK: usize = 96;

/// The body of `observe`: solve the observation system `k y = b` at the
/// state; trivially true where nothing is observed.
fn observe_body(sys: &StepSystem, calls: &Calls) -> Result<TokenStream, String> {
    let nk = sys.obs_solution.len();
    if nk == 0 {
        return Ok(quote!(true));
    }
    // The kernel is the system's product with u: its matrix is formed a
    // column at a time (with `b`, which every call writes).
    let c = calls.once(
        Kernel::ObserveSystem,
        &[quote!(column.try_into().expect("column length")), quote!(&mut b)],
    )?;
    let fill = quote! {
        let p = self.__params();
        let mut b = [0.0f64; #nk];
        __rt::columns::form(#nk, &mut k[..], |u, column| #c);
    };
    // A long chain's system is too large for the stack (the 128-link
    // director chain's, 384 × 384, overflowed the main thread in three
    // copies): past `OBSERVE_ON_STACK` unknowns it lives on the heap.
    if nk > OBSERVE_ON_STACK {
        return Ok(quote! {
            let mut k = ::std::vec![0.0f64; #nk * #nk];
            #fill
            let km = __na::DMatrix::<f64>::from_row_slice(#nk, #nk, &k);
            let mut bv = __na::DVector::<f64>::from_column_slice(&b);
            if __rt::lu::solve_in_place(&km, &mut bv).is_err() {
                return false;
            }
            y.copy_from_slice(bv.as_slice());
            true
        });
    }
    Ok(quote! {
        let mut k = [0.0f64; #nk * #nk];
        #fill
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
    let metric = calls.once(Kernel::Metric, &[quote!(column.try_into().expect("column length"))])?;
    let mut ts = quote! {
        fn metric_size(&self) -> usize {
            #n
        }

        fn metric_varies(&self) -> bool {
            #varies
        }

        fn metric_at(&self, p: &[f64], q: &[f64], v: &[f64], out: &mut [f64]) {
            let p: [f64; #np] = p.try_into().expect("parameter count");
            // The kernel is the metric's product with a direction.
            __rt::columns::form(#n, out, |u, column| #metric);
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
