//! `#[derive(Integrator)]`: reads a model file at compile time, derives the
//! chosen scheme symbolically and emits its step, Jacobian and diagnostics.
//!
//! A thin shell over `hamel-compiler`: attribute parsing and error reporting
//! live here, everything else there.

#![warn(missing_docs)]

use std::path::PathBuf;

use proc_macro::TokenStream;
use proc_macro2::Span;
use quote::quote;
use syn::{parse_macro_input, Data, DeriveInput, Fields, LitStr};

/// Derives an integrator from a model file.
///
/// ```ignore
/// #[derive(hamel::Integrator)]
/// #[hamel(model = "models/spherical_pendulum.hamel", scheme = "hamel", kinematics = "averaged")]
/// pub struct SphericalPendulum { pub m: f64, pub r: f64, pub g: f64 }
/// ```
///
/// The struct's fields are the model's parameters (all `f64`, same names).
/// The path is relative to the crate's `CARGO_MANIFEST_DIR`. With
/// `scheme = "hamel"`, or without `scheme` where it applies, the discrete
/// Hamel scheme with midpoint (variational) kinematics is derived;
/// `kinematics = "averaged"` (or `scheme = "hamel_averaged"`) gives the
/// averaged form of ZLB12. Without `scheme` on a model `hamel` does not
/// apply to (holonomic constraints in Cartesian coordinates, say), the
/// first that does of `rattle`, `energy_momentum`, `stormer_verlet`,
/// `hamel_averaged` is derived, as the CLI and Python choose it
/// (`Scheme::default_for`).
/// `order = 4` or `order = 6` makes steppers take the scheme composed with
/// itself (default 2; checked here: a scheme that cannot be composed to that
/// order is a compile error on the attribute).
#[proc_macro_derive(Integrator, attributes(hamel))]
pub fn derive_integrator(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    // A bug in the compiler must surface as a located error, not as a macro panic.
    let result = std::panic::catch_unwind(|| expand(&input)).unwrap_or_else(|panic| {
        let what = panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        Err(syn::Error::new(
            input.ident.span(),
            format!(
                "internal error in hamel while deriving `{}` (please report it): {what}",
                input.ident
            ),
        ))
    });
    match result {
        Ok(ts) => ts.into(),
        Err(e) => {
            let error = e.to_compile_error();
            let stub = stub(&input);
            quote!(#error #stub).into()
        }
    }
}

/// Items with the names and shapes the derive would have generated (sizes 0,
/// bodies unreachable), emitted beside a derive error so that the user sees
/// that error, not a cascade of "no function `with_defaults`" in their code.
fn stub(input: &DeriveInput) -> proc_macro2::TokenStream {
    if !input.generics.params.is_empty() || !matches!(input.data, Data::Struct(_)) {
        return quote!();
    }
    let ident = &input.ident;
    quote! {
        #[doc(hidden)]
        #[allow(unused_variables, unreachable_code, clippy::all)]
        const _: () = {
            use ::hamel::runtime as __rt;
            use ::hamel::runtime::nalgebra as __na;
            type __V = __na::SVector<f64, 0>;
            type __M = __na::SMatrix<f64, 0, 0>;
            impl #ident {
                pub const MODEL: &'static str = "";
                pub const PARAMETERS: [&'static str; 0] = [];
                pub const COORDINATES: [&'static str; 0] = [];
                pub const VELOCITIES: [&'static str; 0] = [];
                pub const STATE: [&'static str; 0] = [];
                pub const INITIAL_STATES: [&'static str; 0] = [];
                pub const INPUTS: [&'static str; 0] = [];
                pub fn with_defaults() -> Self { unreachable!() }
                pub fn initial_state(&self, q: [f64; 0], v: [f64; 0]) -> Result<__rt::State<0, 0>, __rt::StepError> { unreachable!() }
                pub fn initial_conditions(&self, name: &str) -> Option<([f64; 0], [f64; 0])> { unreachable!() }
                pub fn initial(&self, name: &str) -> Result<__rt::State<0, 0>, __rt::StepError> { unreachable!() }
                pub fn stepper(&self, h: f64) -> Result<__rt::Stepper<'_, Self, 0, 0>, __rt::StepError> { unreachable!() }
                pub fn physical(&self, state: &__rt::State<0, 0>) -> Result<([f64; 0], [f64; 0]), __rt::StepError> { unreachable!() }
                pub fn invariants(&self, state: &__rt::State<0, 0>) -> Result<[f64; 0], __rt::StepError> { unreachable!() }
            }
            impl __rt::Kernels<__na::Const<0>, __na::Const<0>> for #ident {
                fn model(&self) -> &str { unreachable!() }
                fn scheme(&self) -> &str { unreachable!() }
                fn dims(&self) -> (__na::Const<0>, __na::Const<0>) { unreachable!() }
                fn names(&self, list: __rt::NameList) -> Vec<&str> { unreachable!() }
                fn invariant_info(&self) -> Vec<(&str, __rt::InvariantKind)> { unreachable!() }
                fn parameters(&self) -> Vec<f64> { unreachable!() }
                fn residual(&self, h: f64, e: &[f64], z: &__V, x: &__V, out: &mut __V) { unreachable!() }
                fn jacobian(&self, h: f64, e: &[f64], z: &__V, x: &__V, out: &mut __M) { unreachable!() }
                fn increment(&self, h: f64, e: &[f64], z: &__V, x: &__V, out: &mut __V) { unreachable!() }
                fn predict(&self, h: f64, e: &[f64], z: &__V, w: &__V, out: &mut __V) { unreachable!() }
                fn observe_size(&self) -> usize { unreachable!() }
                fn state_of(&self, q: &[f64], v: &[f64], z: &mut [f64], x: &mut [f64]) { unreachable!() }
                fn observe(&self, z: &[f64], y: &mut [f64]) -> bool { unreachable!() }
                fn physical_of(&self, z: &[f64], y: &[f64], q: &mut [f64], v: &mut [f64]) { unreachable!() }
                fn invariants_of(&self, t: f64, q: &[f64], v: &[f64], out: &mut [f64]) { unreachable!() }
                fn initial_data(&self, name: &str, q: &mut [f64], v: &mut [f64]) -> bool { unreachable!() }
            }
        };
    }
}

struct Attr {
    model: LitStr,
    scheme: Option<LitStr>,
    kinematics: Option<LitStr>,
    /// sizes of indexed families, e.g. `N = 8`
    sizes: Vec<(String, i64)>,
    /// emit the step-map sensitivity (default false: asked for, since it is
    /// most of the generated code of large models)
    sensitivity: bool,
    /// instruction-set copies of the longer per-step kernels (default true;
    /// false: baseline only, and no `unsafe` in the emitted code)
    simd: bool,
    /// `order = 4` or `6`: the scheme composed (default 2, the scheme itself)
    order: Option<syn::LitInt>,
}

fn parse_attr(input: &DeriveInput) -> syn::Result<Attr> {
    let mut model = None;
    let mut scheme = None;
    let mut kinematics = None;
    let mut sizes = Vec::new();
    let mut sensitivity = false;
    let mut simd = true;
    let mut order = None;
    let mut found = false;
    for attr in input.attrs.iter().filter(|a| a.path().is_ident("hamel")) {
        found = true;
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("sensitivity") {
                sensitivity = meta.value()?.parse::<syn::LitBool>()?.value;
                return Ok(());
            }
            if meta.path.is_ident("simd") {
                simd = meta.value()?.parse::<syn::LitBool>()?.value;
                return Ok(());
            }
            if meta.path.is_ident("order") {
                order = Some(meta.value()?.parse::<syn::LitInt>()?);
                return Ok(());
            }
            let slot = if meta.path.is_ident("model") {
                &mut model
            } else if meta.path.is_ident("scheme") {
                &mut scheme
            } else if meta.path.is_ident("kinematics") {
                &mut kinematics
            } else if let Some(name) = meta.path.get_ident() {
                // Any other `NAME = <integer>` sets a size of the model (`size N = ...`).
                let value = meta.value()?;
                let lit: syn::LitInt = value.parse().map_err(|_| {
                    meta.error("unknown hamel attribute (expected `model`, `scheme`, `kinematics`, `sensitivity`, `simd`, `order`, or a model size such as `N = 8`)")
                })?;
                sizes.push((name.to_string(), lit.base10_parse::<i64>()?));
                return Ok(());
            } else {
                return Err(meta.error("unknown hamel attribute (expected `model`, `scheme` or `kinematics`)"));
            };
            *slot = Some(meta.value()?.parse::<LitStr>()?);
            Ok(())
        })?;
    }
    if !found {
        return Err(syn::Error::new(
            input.ident.span(),
            "missing #[hamel(model = \"path/to/model.hamel\", scheme = \"hamel\")] attribute",
        ));
    }
    let model = model.ok_or_else(|| {
        syn::Error::new(
            input.ident.span(),
            "#[hamel(...)] needs `model = \"path/to/model.hamel\"`",
        )
    })?;
    Ok(Attr {
        model,
        scheme,
        kinematics,
        sizes,
        sensitivity,
        simd,
        order,
    })
}

fn expand(input: &DeriveInput) -> syn::Result<proc_macro2::TokenStream> {
    let attr = parse_attr(input)?;
    if !input.generics.params.is_empty() {
        return Err(syn::Error::new_spanned(
            &input.generics,
            "an integrator struct cannot be generic",
        ));
    }
    let fields = match &input.data {
        Data::Struct(s) => match &s.fields {
            Fields::Named(f) => f.named.iter().collect::<Vec<_>>(),
            Fields::Unit => vec![],
            Fields::Unnamed(f) => {
                return Err(syn::Error::new_spanned(
                    f,
                    "the model's parameters must be named fields",
                ));
            }
        },
        _ => {
            return Err(syn::Error::new(
                input.ident.span(),
                "#[derive(Integrator)] applies to structs only",
            ))
        }
    };

    let rel = attr.model.value();
    let root = std::env::var("HAMEL_MANIFEST_DIR")
        .or_else(|_| std::env::var("CARGO_MANIFEST_DIR"))
        .map(PathBuf::from)
        .unwrap_or_default();
    let path = root.join(&rel);
    let src = std::fs::read_to_string(&path).map_err(|e| {
        let msg = format!("cannot read model file `{rel}` (paths are relative to the crate's Cargo.toml): {e}");
        syn::Error::new(attr.model.span(), msg)
    })?;
    let model = hamel_compiler::model::load_with_sizes(&rel, &src, &attr.sizes).map_err(|ds| {
        let mut all: Option<syn::Error> = None;
        for d in &ds.0 {
            let e = syn::Error::new(attr.model.span(), d.located());
            match &mut all {
                Some(a) => a.combine(e),
                None => all = Some(e),
            }
        }
        all.expect("a failed load reports at least one error")
    })?;
    // Fields ↔ parameters, every mismatch reported.
    let mut errors: Option<syn::Error> = None;
    let mut push = |e: syn::Error| match &mut errors {
        Some(all) => all.combine(e),
        None => errors = Some(e),
    };
    for f in &fields {
        let name = f.ident.as_ref().map(|i| i.to_string()).unwrap_or_default();
        if !model.params.iter().any(|p| p.field == name) {
            let known: Vec<&str> = model.params.iter().map(|p| p.field.as_str()).collect();
            push(syn::Error::new_spanned(
                f.ident.as_ref(),
                format!(
                    "field `{name}` is not a parameter of model `{}` (parameters: {})",
                    model.name,
                    known.join(", ")
                ),
            ));
        }
        let is_f64 = matches!(&f.ty, syn::Type::Path(p) if p.path.is_ident("f64"));
        if !is_f64 {
            push(syn::Error::new_spanned(
                &f.ty,
                format!("parameter field `{name}` must have type `f64`"),
            ));
        }
    }
    for p in &model.params {
        if !fields.iter().any(|f| f.ident.as_ref().is_some_and(|i| i == &p.field)) {
            push(syn::Error::new(
                input.ident.span(),
                format!(
                    "missing field `{}: f64` for parameter `{}` of model `{}` ({rel})",
                    p.field, p.name, model.name
                ),
            ));
        }
    }
    if let Some(e) = errors {
        return Err(e);
    }

    let scheme_name = attr.scheme.as_ref().map_or("hamel".to_string(), LitStr::value);
    let kin = attr.kinematics.as_ref().map(LitStr::value);
    // Neither named: the model's default, as every host chooses it.
    let default = (attr.scheme.is_none() && kin.is_none())
        .then(|| hamel_compiler::scheme::Scheme::default_for(&model).ok())
        .flatten()
        .map(|(s, _)| s);
    let scheme = match default {
        Some(s) => Ok(s),
        None => hamel_compiler::scheme::Scheme::from_names(&scheme_name, kin.as_deref()),
    }
    .map_err(|e| {
        // The scheme alone parses: then the kinematics are what is wrong.
        let scheme_ok = hamel_compiler::scheme::Scheme::from_names(&scheme_name, None).is_ok();
        let span = match (&attr.kinematics, &attr.scheme) {
            (Some(k), _) if scheme_ok => k.span(),
            (_, Some(s)) => s.span(),
            _ => Span::call_site(),
        };
        syn::Error::new(span, e.0)
    })?;
    // A size the machine cannot derive with this scheme in reasonable time
    // is refused now, with the estimate, instead of compiling for hours.
    hamel_compiler::cost::check_schemes(&rel, &src, &attr.sizes, &[scheme])
        .map_err(|e| syn::Error::new(attr.model.span(), e))?;
    let sys = scheme.derive(&model).map_err(|e| {
        syn::Error::new(
            attr.scheme.as_ref().map_or(attr.model.span(), LitStr::span),
            e.to_string(),
        )
    })?;
    let order = match &attr.order {
        None => 2,
        Some(lit) => {
            let constrained = sys.invariants.iter().any(|i| i.kind.is_residual());
            let order = lit.base10_parse::<u32>().map_err(|_| {
                syn::Error::new(
                    lit.span(),
                    format!("order {lit} is not offered: order must be 2, 4 or 6"),
                )
            })?;
            hamel_compiler::scheme::compose::check_order(sys.kind, order, constrained)
                .map_err(|e| syn::Error::new(lit.span(), e.0))?;
            order
        }
    };
    let abs = path.canonicalize().unwrap_or(path).display().to_string();
    let target = hamel_compiler::emit::integrator::Target {
        ident: &input.ident,
        model_path: &abs,
        sensitivity: attr.sensitivity,
        simd: attr.simd,
        order,
    };
    let (tokens, _stats) =
        hamel_compiler::emit::integrator::emit(&sys, &target).map_err(|e| syn::Error::new(Span::call_site(), e))?;
    Ok(quote!(#tokens))
}
