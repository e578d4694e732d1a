//! Straight-line programs → Rust functions of fixed-size arrays.
//!
//! Knows tapes and Rust; nothing of mechanics. Bodies longer than
//! [`CHUNK`] instructions are split into `#[inline(never)]` parts that share
//! a scratch array, since rustc's compile time grows super-linearly with the
//! size of one function.

use proc_macro2::{Ident, Literal, Span, TokenStream};
use quote::{format_ident, quote};

use crate::sym::tape::UnboundSymbol;
use crate::sym::{Func, Function, Graph, Op, Operand, Tape};

/// Largest number of instructions in one emitted function body.
pub const CHUNK: usize = 400;

/// Statistics of an emitted function.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EmitStats {
    /// instructions after common-subexpression elimination
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

struct Names<'a> {
    /// (argument ident, index within it) per tape input
    inputs: &'a [(Ident, usize)],
    /// chunk owning each temp
    owner: &'a [usize],
    /// chunk being emitted (usize::MAX: the outer function)
    current: usize,
    /// double-double mode: the arguments passed as `hi` and `hi_lo` pairs
    dd: Option<&'a [String]>,
}

impl Names<'_> {
    fn operand(&self, o: &Operand) -> TokenStream {
        let value = self.operand_raw(o);
        match (self.dd, o) {
            (Some(_), Operand::Const(_)) => quote!(__Dd::from(#value)),
            (Some(dd), Operand::Input(i)) => {
                let (a, k) = &self.inputs[*i];
                if dd.iter().any(|n| a == n) {
                    let lo = format_ident!("{}_lo", a);
                    quote!(__Dd::new(#a[#k], #lo[#k]))
                } else {
                    quote!(__Dd::from(#value))
                }
            }
            _ => value,
        }
    }

    fn operand_raw(&self, o: &Operand) -> TokenStream {
        match *o {
            Operand::Const(c) => num(c),
            Operand::Input(i) => {
                let (a, k) = &self.inputs[i];
                quote!(#a[#k])
            }
            Operand::Temp(t) => {
                if self.owner[t] == self.current {
                    let id = format_ident!("t{}", t);
                    quote!(#id)
                } else {
                    quote!(__t[#t])
                }
            }
        }
    }

    fn op(&self, op: &Op) -> TokenStream {
        let join = |xs: &[Operand], sep: TokenStream| -> TokenStream {
            let mut out = TokenStream::new();
            for (i, x) in xs.iter().enumerate() {
                if i > 0 {
                    out.extend(sep.clone());
                }
                out.extend(self.operand(x));
            }
            out
        };
        match op {
            Op::Sum { pos, neg } => {
                let n: Vec<TokenStream> = neg.iter().map(|x| self.operand(x)).collect();
                if pos.is_empty() {
                    // `-a - b`, not `0.0 - a - b`: IEEE forbids folding the zero away.
                    match n.split_first() {
                        Some((first, rest)) => quote!(-(#first) #(- #rest)*),
                        None if self.dd.is_some() => quote!(__Dd::from(0.0f64)),
                        None => quote!(0.0f64),
                    }
                } else {
                    let p = join(pos, quote!(+));
                    quote!(#p #(- #n)*)
                }
            }
            Op::Product { num, den } => {
                let one = if self.dd.is_some() {
                    quote!(__Dd::from(1.0f64))
                } else {
                    quote!(1.0f64)
                };
                let n = if num.is_empty() { one } else { join(num, quote!(*)) };
                if den.is_empty() {
                    n
                } else {
                    let d = join(den, quote!(*));
                    quote!(#n / (#d))
                }
            }
            Op::Powi(a, n) => {
                let a = self.operand(a);
                match (n, self.dd) {
                    (2, _) => quote!(#a * #a),
                    (3, _) => quote!(#a * #a * #a),
                    (_, Some(_)) => quote!((#a).powi(#n)),
                    _ => quote!(f64::powi(#a, #n)),
                }
            }
            Op::Sqrt(a) => {
                let a = self.operand(a);
                if self.dd.is_some() {
                    quote!((#a).sqrt())
                } else {
                    quote!(f64::sqrt(#a))
                }
            }
            Op::Powf(a, e) => {
                let a = self.operand(a);
                let e = num(*e);
                if self.dd.is_some() {
                    quote!((#a).map(|v| f64::powf(v, #e)))
                } else {
                    quote!(f64::powf(#a, #e))
                }
            }
            Op::Pow(a, b) => {
                let (a, b) = (self.operand(a), self.operand(b));
                if self.dd.is_some() {
                    quote!(__Dd::from(f64::powf((#a).to_f64(), (#b).to_f64())))
                } else {
                    quote!(f64::powf(#a, #b))
                }
            }
            Op::Call(f, a) => {
                let a = self.operand(a);
                let f = Ident::new(
                    match f {
                        Func::Ln => "ln",
                        other => other.name(),
                    },
                    Span::call_site(),
                );
                if self.dd.is_some() {
                    quote!((#a).map(f64::#f))
                } else {
                    quote!(f64::#f(#a))
                }
            }
        }
    }
}

fn operands(op: &Op) -> Vec<Operand> {
    match op {
        Op::Sum { pos, neg } => pos.iter().chain(neg).copied().collect(),
        Op::Product { num, den } => num.iter().chain(den).copied().collect(),
        Op::Powi(a, _) | Op::Sqrt(a) | Op::Powf(a, _) | Op::Call(_, a) => vec![*a],
        Op::Pow(a, b) => vec![*a, *b],
    }
}

/// The parameters of an emitted function and where each tape input and output lives.
struct Signature {
    /// (argument, index) per tape input
    inputs: Vec<(Ident, usize)>,
    /// `name: &[f64; n]` per input (plus `name_lo` for double-double arguments), then
    /// `name: &mut [f64; n]` per output
    params: Vec<TokenStream>,
    /// (argument, index) per tape output
    outs: Vec<(Ident, usize)>,
}

fn signature(f: &Function, dd_args: &[String]) -> Signature {
    let mut inputs = Vec::new();
    let mut params = Vec::new();
    for (arg, syms) in &f.inputs {
        let id = format_ident!("{}", arg);
        let n = syms.len();
        params.push(quote!(#id: &[f64; #n]));
        if dd_args.contains(arg) {
            let lo = format_ident!("{}_lo", arg);
            params.push(quote!(#lo: &[f64; #n]));
        }
        inputs.extend((0..n).map(|k| (id.clone(), k)));
    }
    let mut outs = Vec::new();
    for (arg, exprs) in &f.outputs {
        let id = format_ident!("{}", arg);
        let n = exprs.len();
        params.push(quote!(#id: &mut [f64; #n]));
        outs.extend((0..n).map(|k| (id.clone(), k)));
    }
    Signature { inputs, params, outs }
}

/// Emits `pub fn name(in0: &[f64; N0], ..., out0: &mut [f64; M0], ...)`.
pub fn function(g: &mut Graph, f: &Function) -> Result<(TokenStream, EmitStats), UnboundSymbol> {
    let tape: Tape = f.tape(g)?;
    let name = format_ident!("{}", f.name);
    let Signature { inputs, params, outs } = signature(f, &[]);
    let nops = tape.ops.len();
    let nparts = nops.div_ceil(CHUNK).max(1);
    let stats = EmitStats {
        ops: nops,
        parts: nparts,
    };
    let owner: Vec<usize> = (0..nops).map(|i| if nparts == 1 { 0 } else { i / CHUNK }).collect();

    if nparts == 1 {
        let names = Names {
            inputs: &inputs,
            owner: &owner,
            current: 0,
            dd: None,
        };
        let lets = tape.ops.iter().enumerate().map(|(i, op)| {
            let t = format_ident!("t{}", i);
            let e = names.op(op);
            quote!(let #t: f64 = #e;)
        });
        let assigns = outs.iter().zip(&tape.outputs).map(|((a, k), o)| {
            let v = names.operand(o);
            quote!(#a[#k] = #v;)
        });
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

    // Split: temps used outside their chunk (or as outputs) live in `__t`.
    let mut escapes = vec![false; nops];
    for (i, op) in tape.ops.iter().enumerate() {
        for o in operands(op) {
            if let Operand::Temp(t) = o {
                if owner[t] != owner[i] {
                    escapes[t] = true;
                }
            }
        }
    }
    for o in &tape.outputs {
        if let Operand::Temp(t) = o {
            escapes[*t] = true;
        }
    }
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
    let mut parts = Vec::new();
    let mut calls = Vec::new();
    for c in 0..nparts {
        let names = Names {
            inputs: &inputs,
            owner: &owner,
            current: c,
            dd: None,
        };
        let part = format_ident!("{}_part{}", f.name, c);
        let range = c * CHUNK..((c + 1) * CHUNK).min(nops);
        let body = range.map(|i| {
            let t = format_ident!("t{}", i);
            let e = names.op(&tape.ops[i]);
            if escapes[i] {
                quote!(let #t: f64 = #e; __t[#i] = #t;)
            } else {
                quote!(let #t: f64 = #e;)
            }
        });
        parts.push(quote! {
            #[inline(never)]
            #[allow(unused_variables, clippy::all)]
            fn #part(#(#in_args,)* __t: &mut [f64; #nops]) {
                #(#body)*
            }
        });
        calls.push(quote!(#part(#(#in_names,)* &mut __t);));
    }
    let names = Names {
        inputs: &inputs,
        owner: &owner,
        current: usize::MAX,
        dd: None,
    };
    let assigns = outs.iter().zip(&tape.outputs).map(|((a, k), o)| {
        let v = names.operand(o);
        quote!(#a[#k] = #v;)
    });
    Ok((
        quote! {
            #(#parts)*
            #[allow(unused_variables, clippy::all)]
            pub fn #name(#(#params),*) {
                let mut __t = [0.0f64; #nops];
                #(#calls)*
                #(#assigns)*
            }
        },
        stats,
    ))
}

/// Emits `pub fn <name>_dd(...)`: the same program evaluated in double-double
/// arithmetic (type `__Dd`, which the caller brings into scope), where each
/// argument named in `dd_args` comes as a pair `arg: &[f64; n], arg_lo: &[f64; n]`.
/// Results are rounded to `f64`. `None` for bodies above [`CHUNK`] instructions.
pub fn function_dd(g: &mut Graph, f: &Function, dd_args: &[String]) -> Result<Option<TokenStream>, UnboundSymbol> {
    let tape: Tape = f.tape(g)?;
    if tape.ops.len() > CHUNK {
        return Ok(None);
    }
    let name = format_ident!("{}_dd", f.name);
    let Signature { inputs, params, outs } = signature(f, dd_args);
    let owner = vec![0; tape.ops.len()];
    let names = Names {
        inputs: &inputs,
        owner: &owner,
        current: 0,
        dd: Some(dd_args),
    };
    let lets = tape.ops.iter().enumerate().map(|(i, op)| {
        let t = format_ident!("t{}", i);
        let e = names.op(op);
        quote!(let #t: __Dd = #e;)
    });
    let assigns = outs.iter().zip(&tape.outputs).map(|((a, k), o)| {
        let v = names.operand(o);
        quote!(#a[#k] = (#v).to_f64();)
    });
    Ok(Some(quote! {
        #[inline]
        #[allow(unused_variables, clippy::all)]
        pub fn #name(#(#params),*) {
            #(#lets)*
            #(#assigns)*
        }
    }))
}
