//! Register programs → Rust functions of fixed-size arrays.
//!
//! Knows programs and Rust; nothing of mechanics. The printer writes one `let`
//! per register instruction, in the program's order, so the emitted Rust
//! evaluates exactly what the interpreter and the JIT evaluate. One printer
//! serves `f64` and double-double bodies. Bodies longer than [`WHOLE`]
//! instructions (per-step kernels) or [`CHUNK`] (the rest) are split into
//! `#[inline(never)]` parts of [`CHUNK`] that share a scratch array, since rustc's compile time grows super-linearly with the
//! size of one function. Whole bodies of [`WIDE_MIN`] instructions or more
//! also get a copy compiled for AVX2, chosen at run time where the processor
//! has it.

use proc_macro2::{Ident, Literal, TokenStream};
use quote::{format_ident, quote};

use super::program::{lower, Instr, Program};
use crate::sym::tape::UnboundSymbol;
use crate::sym::{Function, Graph};

/// Whether the compiler building this crate, and so the crates whose derives
/// it expands, accepts AVX-512 target features (`build.rs`).
const AVX512: bool = cfg!(hamel_avx512);

/// Register instructions per part of a split body.
pub const CHUNK: usize = 800;

/// Bodies of the kernels a step runs ([`function`]) up to this many register
/// instructions are emitted whole: split, the double pendulum's fused Hamel
/// kernel (2103 instructions) ran 40 ns slower per step, its parts passing
/// values through memory. Beyond it, and beyond [`CHUNK`] for functions
/// called now and then ([`function_once`]), parts keep the compile time of
/// long chains linear.
pub const WHOLE: usize = 3000;

/// Statistics of an emitted function.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EmitStats {
    /// register instructions after common-subexpression elimination
    pub ops: usize,
    /// emitted functions (1 unless the body was split)
    pub parts: usize,
}

fn num(c: f64) -> TokenStream {
    let lit = Literal::f64_suffixed(c.abs());
    if c < 0.0 || (c == 0.0 && c.is_sign_negative()) {
        quote!((-#lit))
    } else {
        quote!(#lit)
    }
}

/// The parameters of an emitted function and where each input and output lives.
struct Signature {
    /// (argument, index) per input register
    inputs: Vec<(Ident, usize)>,
    /// `name: &[f64; n]` per input (plus `name_lo` for double-double arguments), then
    /// `name: &mut [f64; n]` per output
    params: Vec<TokenStream>,
    /// (argument, index) per program output
    outs: Vec<(Ident, usize)>,
    /// every parameter's name, in order
    names: Vec<Ident>,
}

fn signature(f: &Function, dd_args: &[String]) -> Signature {
    let mut inputs = Vec::new();
    let mut params = Vec::new();
    let mut names = Vec::new();
    for (arg, syms) in &f.inputs {
        let id = format_ident!("{}", arg);
        let n = syms.len();
        params.push(quote!(#id: &[f64; #n]));
        names.push(id.clone());
        if dd_args.contains(arg) {
            let lo = format_ident!("{}_lo", arg);
            params.push(quote!(#lo: &[f64; #n]));
            names.push(lo);
        }
        inputs.extend((0..n).map(|k| (id.clone(), k)));
    }
    let mut outs = Vec::new();
    for (arg, exprs) in &f.outputs {
        let id = format_ident!("{}", arg);
        let n = exprs.len();
        params.push(quote!(#id: &mut [f64; #n]));
        names.push(id.clone());
        outs.extend((0..n).map(|k| (id.clone(), k)));
    }
    Signature {
        inputs,
        params,
        outs,
        names,
    }
}

/// Prints registers and instructions of one program as Rust expressions.
struct Printer<'a> {
    prog: &'a Program,
    sig: &'a Signature,
    /// double-double mode: the arguments passed as `hi` and `hi_lo` pairs
    dd: Option<&'a [String]>,
    /// chunk owning each instruction
    owner: Vec<usize>,
    /// slot in the shared scratch array of each instruction whose result
    /// crosses a chunk (or is an output of a split body)
    slot: Vec<Option<usize>>,
    /// chunk being printed (usize::MAX: the outer function)
    current: usize,
}

impl Printer<'_> {
    /// The value of register `r`.
    fn reg(&self, r: u32) -> TokenStream {
        let r = r as usize;
        let base = self.prog.result_base();
        if r < self.prog.n_inputs {
            let (a, k) = &self.sig.inputs[r];
            match self.dd {
                Some(dd) if dd.iter().any(|n| a == n) => {
                    let lo = format_ident!("{}_lo", a);
                    quote!(__Dd::new(#a[#k], #lo[#k]))
                }
                Some(_) => quote!(__Dd::from(#a[#k])),
                None => quote!(#a[#k]),
            }
        } else if r < base {
            let c = num(self.prog.consts[r - self.prog.n_inputs]);
            match self.dd {
                Some(_) => quote!(__Dd::from(#c)),
                None => c,
            }
        } else {
            let i = r - base;
            match self.slot[i] {
                Some(s) if self.owner[i] != self.current => quote!(__t[#s]),
                _ => {
                    let t = format_ident!("t{}", i);
                    quote!(#t)
                }
            }
        }
    }

    fn instr(&self, i: &Instr) -> TokenStream {
        let r = |k: u32| self.reg(k);
        let dd = self.dd.is_some();
        match *i {
            Instr::Add(a, b) => {
                let (a, b) = (r(a), r(b));
                quote!(#a + #b)
            }
            Instr::Sub(a, b) => {
                let (a, b) = (r(a), r(b));
                quote!(#a - #b)
            }
            Instr::Mul(a, b) => {
                let (a, b) = (r(a), r(b));
                quote!(#a * #b)
            }
            Instr::Div(a, b) => {
                let (a, b) = (r(a), r(b));
                quote!(#a / #b)
            }
            Instr::Neg(a) => {
                let a = r(a);
                quote!(-#a)
            }
            Instr::Sqrt(a) => {
                let a = r(a);
                if dd {
                    quote!(#a.sqrt())
                } else {
                    quote!(f64::sqrt(#a))
                }
            }
            Instr::Powi(a, n) => {
                let a = r(a);
                if dd {
                    quote!(#a.powi(#n))
                } else {
                    quote!(f64::powi(#a, #n))
                }
            }
            Instr::Powf(a, e) => {
                let (a, e) = (r(a), num(e));
                if dd {
                    quote!(#a.map(|v| f64::powf(v, #e)))
                } else {
                    quote!(f64::powf(#a, #e))
                }
            }
            Instr::Pow(a, b) => {
                let (a, b) = (r(a), r(b));
                if dd {
                    quote!(__Dd::from(f64::powf(#a.to_f64(), #b.to_f64())))
                } else {
                    quote!(f64::powf(#a, #b))
                }
            }
            Instr::Atan2(a, b) => {
                let (a, b) = (r(a), r(b));
                if dd {
                    quote!(__Dd::from(f64::atan2(#a.to_f64(), #b.to_f64())))
                } else {
                    quote!(f64::atan2(#a, #b))
                }
            }
            Instr::Call(f, a) => {
                let a = r(a);
                let f = format_ident!("{}", f.name());
                if dd {
                    quote!(#a.map(f64::#f))
                } else {
                    quote!(f64::#f(#a))
                }
            }
        }
    }

    /// `let t_i: T = ...;` for instruction `i`, stored to the scratch array where it escapes.
    fn stmt(&self, i: usize) -> TokenStream {
        let t = format_ident!("t{}", i);
        let e = self.instr(&self.prog.instrs[i]);
        let ty = if self.dd.is_some() { quote!(__Dd) } else { quote!(f64) };
        match self.slot[i] {
            Some(s) => quote!(let #t: #ty = #e; __t[#s] = #t;),
            None => quote!(let #t: #ty = #e;),
        }
    }

    /// `out[k] = value;` for every output.
    fn assigns(&self) -> Vec<TokenStream> {
        let round = self.dd.is_some();
        self.sig
            .outs
            .iter()
            .zip(&self.prog.outputs)
            .map(|((a, k), &o)| {
                let v = self.reg(o);
                if round {
                    quote!(#a[#k] = #v.to_f64();)
                } else {
                    quote!(#a[#k] = #v;)
                }
            })
            .collect()
    }
}

/// Emits `pub fn name(in0: &[f64; N0], ..., out0: &mut [f64; M0], ...)`, with
/// copies for wider instruction sets where the body is long enough to gain
/// (see [`WIDE_MIN`]): for the kernels a step runs.
pub fn function(g: &mut Graph, f: &Function) -> Result<(TokenStream, EmitStats), UnboundSymbol> {
    emit_function(g, f, true)
}

/// [`function`] without the copies for wider instruction sets: for functions
/// called now and then (invariants, initial states), where they would only
/// cost compile time (the 16-link chain's invariants: 2884 instructions).
pub fn function_once(g: &mut Graph, f: &Function) -> Result<(TokenStream, EmitStats), UnboundSymbol> {
    emit_function(g, f, false)
}

fn emit_function(g: &mut Graph, f: &Function, copies: bool) -> Result<(TokenStream, EmitStats), UnboundSymbol> {
    let prog = lower(&f.tape(g)?);
    let sig = signature(f, &[]);
    let n = prog.instrs.len();
    let whole = if copies { WHOLE } else { CHUNK };
    let nparts = if n <= whole { 1 } else { n.div_ceil(CHUNK) };
    let stats = EmitStats { ops: n, parts: nparts };
    let name = format_ident!("{}", f.name);
    let params = &sig.params;

    if nparts == 1 {
        let p = Printer {
            prog: &prog,
            sig: &sig,
            dd: None,
            owner: vec![0; n],
            slot: vec![None; n],
            current: 0,
        };
        let lets: Vec<TokenStream> = (0..n).map(|i| p.stmt(i)).collect();
        let assigns = p.assigns();
        if !copies || n < WIDE_MIN {
            return Ok((
                quote! {
                    #[inline]
                    #[allow(unused_variables, clippy::all)]
                    pub fn #name(#(#params),*) {
                        #(#lets)*
                        #(#assigns)*
                    }
                },
                stats,
            ));
        }
        let base = format_ident!("{}_base", f.name);
        let wide = format_ident!("{}_avx2", f.name);
        let widest = format_ident!("{}_avx512", f.name);
        let args: Vec<Ident> = sig.names.clone();
        let avx512 = AVX512.then(|| {
            quote! {
                #[cfg(target_arch = "x86_64")]
                #[target_feature(enable = "avx2,avx512f,avx512vl")]
                #[inline(never)]
                #[allow(unused_variables, unsafe_code, clippy::all)]
                unsafe fn #widest(#(#params),*) {
                    #(#lets)*
                    #(#assigns)*
                }
            }
        });
        let pick_avx512 = AVX512.then(|| {
            quote! {
                #[cfg(target_arch = "x86_64")]
                if ::std::arch::is_x86_feature_detected!("avx512f") && ::std::arch::is_x86_feature_detected!("avx512vl") {
                    // SAFETY: AVX2, AVX-512F and AVX-512VL are present (checked above).
                    return unsafe { #widest(#(#args),*) };
                }
            }
        });
        return Ok((
            quote! {
                #[inline(never)]
                #[allow(unused_variables, clippy::all)]
                fn #base(#(#params),*) {
                    #(#lets)*
                    #(#assigns)*
                }
                #[cfg(target_arch = "x86_64")]
                #[target_feature(enable = "avx2")]
                #[inline(never)]
                #[allow(unused_variables, unsafe_code, clippy::all)]
                unsafe fn #wide(#(#params),*) {
                    #(#lets)*
                    #(#assigns)*
                }
                #avx512
                #[inline]
                #[allow(unsafe_code)]
                pub fn #name(#(#params),*) {
                    #pick_avx512
                    #[cfg(target_arch = "x86_64")]
                    if ::std::arch::is_x86_feature_detected!("avx2") {
                        // SAFETY: AVX2 is present (checked above).
                        return unsafe { #wide(#(#args),*) };
                    }
                    #base(#(#args),*)
                }
            },
            stats,
        ));
    }

    // Split: results read outside their chunk, or by the outer function, live in `__t`.
    let owner: Vec<usize> = (0..n).map(|i| i / CHUNK).collect();
    let base = prog.result_base();
    let mut escapes = vec![false; n];
    for (i, ins) in prog.instrs.iter().enumerate() {
        let (ops, k) = ins.operands();
        for &r in &ops[..k] {
            let r = r as usize;
            if r >= base && owner[r - base] != owner[i] {
                escapes[r - base] = true;
            }
        }
    }
    for &o in &prog.outputs {
        if o as usize >= base {
            escapes[o as usize - base] = true;
        }
    }
    let mut slots = 0;
    let slot: Vec<Option<usize>> = escapes
        .iter()
        .map(|&e| {
            e.then(|| {
                slots += 1;
                slots - 1
            })
        })
        .collect();
    let in_args: Vec<TokenStream> = f
        .inputs
        .iter()
        .map(|(arg, syms)| {
            let id = format_ident!("{}", arg);
            let n = syms.len();
            quote!(#id: &[f64; #n])
        })
        .collect();
    let in_names: Vec<Ident> = f.inputs.iter().map(|(a, _)| format_ident!("{}", a)).collect();
    let mut p = Printer {
        prog: &prog,
        sig: &sig,
        dd: None,
        owner,
        slot,
        current: 0,
    };
    let mut parts = Vec::new();
    let mut calls = Vec::new();
    for c in 0..nparts {
        p.current = c;
        let part = format_ident!("{}_part{}", f.name, c);
        let body: Vec<TokenStream> = (c * CHUNK..((c + 1) * CHUNK).min(n)).map(|i| p.stmt(i)).collect();
        parts.push(quote! {
            #[inline(never)]
            #[allow(unused_variables, clippy::all)]
            fn #part(#(#in_args,)* __t: &mut [f64; #slots]) {
                #(#body)*
            }
        });
        calls.push(quote!(#part(#(#in_names,)* &mut __t);));
    }
    p.current = usize::MAX;
    let assigns = p.assigns();
    Ok((
        quote! {
            #(#parts)*
            #[allow(unused_variables, clippy::all)]
            pub fn #name(#(#params),*) {
                // Zeroed, though every slot is written before it is read:
                // `MaybeUninit` slots saved the memset but added 3–4 s to
                // the 16-link chain's 16 s build, and its step did not
                // change (29–30 µs).
                let mut __t = [0.0f64; #slots];
                #(#calls)*
                #(#assigns)*
            }
        },
        stats,
    ))
}

/// Whole bodies of at least this many register instructions also get a copy
/// compiled for AVX2, run where the processor has it: long straight-line
/// bodies are bound by instruction fetch and decode, and AVX's
/// three-operand encodings drop the register copies SSE2 needs (double
/// pendulum, averaged Hamel, fused kernel of 2103 instructions: step 980 →
/// 850 ns). The arithmetic is the same, rounded the same way (no fused
/// multiply–adds), so every back-end still agrees to the bit. Shorter bodies
/// stay inlined whole into the Newton driver, where small systems keep
/// their Jacobian in registers: the double pendulum's 484-instruction
/// RATTLE kernel measured slower out of line in AVX than inlined in SSE2.
/// Split bodies get no copy: it would double the code that long chains
/// compile (16-link director chain: 17.9 → 33.5 s). Where the compiler
/// accepts AVX-512 target features (Rust 1.89 on) a third copy uses
/// AVX-512's 32 registers, which spill less (the fused Hamel kernel: step
/// about 30 ns shorter again).
pub const WIDE_MIN: usize = 512;

/// Emits `pub fn <name>_dd(...)`: the same program evaluated in double-double
/// arithmetic (type `__Dd`, which the caller brings into scope), where each
/// argument named in `dd_args` comes as a pair `arg: &[f64; n], arg_lo: &[f64; n]`.
/// Results are rounded to `f64`. `None` for bodies above [`CHUNK`] instructions.
pub fn function_dd(g: &mut Graph, f: &Function, dd_args: &[String]) -> Result<Option<TokenStream>, UnboundSymbol> {
    let prog = lower(&f.tape(g)?);
    let n = prog.instrs.len();
    if n > CHUNK {
        return Ok(None);
    }
    let name = format_ident!("{}_dd", f.name);
    let sig = signature(f, dd_args);
    let p = Printer {
        prog: &prog,
        sig: &sig,
        dd: Some(dd_args),
        owner: vec![0; n],
        slot: vec![None; n],
        current: 0,
    };
    let lets = (0..n).map(|i| p.stmt(i));
    let assigns = p.assigns();
    let params = &sig.params;
    Ok(Some(quote! {
        #[inline]
        #[allow(unused_variables, clippy::all)]
        pub fn #name(#(#params),*) {
            #(#lets)*
            #(#assigns)*
        }
    }))
}
