//! Register programs → Rust functions of fixed-size arrays.
//!
//! Knows programs and Rust; nothing of mechanics. The printer writes one `let`
//! per register instruction, in the program's order, so the emitted Rust
//! evaluates exactly what the interpreter and the JIT evaluate. One printer
//! serves `f64` and double-double bodies.
//!
//! An `f64` body takes one of three shapes, which [`shape`] chooses from its
//! length and [`Role`] with the thresholds [`WIDE_MIN`], [`WHOLE`] and
//! [`CHUNK`] (and cuts split bodies into parts of [`PART`]):
//!
//! - [`Shape::Inline`]: one `#[inline]` function (short kernels, which small
//!   systems keep in registers inside the Newton driver);
//! - [`Shape::Copies`]: the per-step kernels of [`WIDE_MIN`]–[`WHOLE`]
//!   instructions, compiled three times (baseline, AVX2, AVX-512) behind a
//!   dispatcher that runs the widest copy the processor has, within the
//!   ceiling `hamel::runtime::isa` sets (so tests run every copy anywhere);
//! - [`Shape::Split`]: longer bodies, cut into `#[inline(never)]` parts that
//!   share a scratch array by the partition the JIT uses
//!   ([`hamel_kernel::Partition`]), since rustc's compile time grows
//!   super-linearly with the size of one function. Each part is a module of
//!   its own, so that LLVM optimizes them in parallel codegen units.
//!
//! A function called now and then of more than [`DATA_ABOVE`] instructions
//! that does not repeat is emitted as data instead: its program's bytes,
//! evaluated by the interpreter.
//!
//! A body of more than [`ROLL_ABOVE`] instructions that repeats per member of
//! an indexed family (a chain's link) is instead emitted as a loop over the
//! members, by the [`Rolled`] plan the JIT runs (straight-line instructions
//! before and after it), with instruction-set copies for per-step kernels:
//! its code, and rustc's time, stop growing with the chain.

use std::cell::RefCell;
use std::collections::HashMap;

use hamel_kernel::rolled::Operand;
use hamel_kernel::{Arg, Outputs, Partition, Rolled};
use proc_macro2::{Ident, Literal, TokenStream};
use quote::{format_ident, quote};

use super::program::{lower, Instr, Program};
use crate::sym::tape::UnboundSymbol;
use crate::sym::{Function, Graph, Id};

/// Whether copies get an AVX-512 one: asked for (feature `avx512`) and
/// accepted by the compiler building this crate, and so the crates whose
/// derives it expands (`build.rs`: Rust 1.89 on).
const AVX512: bool = cfg!(all(hamel_avx512, feature = "avx512"));

/// Functions called now and then ([`Role::Once`]) and double-double copies
/// ([`function_dd`]) of up to this many register instructions are emitted
/// whole.
pub const CHUNK: usize = 800;

/// Register instructions per part of a split body. LLVM's time grows faster
/// than linearly with a function's length: the 256-link RATTLE chain's
/// derived code built in 17.2–17.5 s of 16.4–16.6 s CPU with parts of 400,
/// against 19.0–19.3 s of 18.2–18.6 s with 800 and 20.1–20.4 s with 1600
/// (200: 17.2 s of 15.8 s). Shorter parts pass more values through memory:
/// its step took 40.2–40.9 µs against 39.6–39.9 µs with 800.
pub const PART: usize = 400;

/// Bodies of the kernels a step runs ([`Role::Step`], [`Role::StepBaseline`])
/// up to this many register instructions are emitted whole: split, the double
/// pendulum's fused Hamel kernel (2103 instructions) ran 40 ns slower per
/// step, its parts passing values through memory. Beyond it, and beyond
/// [`CHUNK`] for functions called now and then ([`Role::Once`]), parts keep
/// the compile time of long chains linear.
pub const WHOLE: usize = 3000;

/// Kernels a step runs of at least this many register instructions (and at
/// most [`WHOLE`]) get copies compiled for AVX2 and AVX-512
/// ([`Shape::Copies`]): long straight-line bodies are bound by instruction
/// fetch and decode, and AVX's three-operand encodings drop the register
/// copies SSE2 needs (double pendulum, averaged Hamel, fused kernel of 2103
/// instructions: step 980 → 850 ns). The arithmetic is the same, rounded the
/// same way (no fused multiply–adds), so every back-end still agrees to the
/// bit. Shorter bodies stay inlined whole into the Newton driver, where small
/// systems keep their Jacobian in registers: the double pendulum's
/// 484-instruction RATTLE kernel measured slower out of line in AVX than
/// inlined in SSE2. Split bodies get no copy: it would double the code that
/// long chains compile (16-link director chain: 17.9 → 33.5 s). The AVX-512
/// copy (feature `avx512`) uses AVX-512's 32 registers, which spill less.
pub const WIDE_MIN: usize = 512;

/// Bodies of more register instructions than this that repeat per member of
/// an indexed family (a chain's link) are emitted as a loop (see the module), as
/// the JIT runs them: written out, rustc's time grows with the chain.
pub const ROLL_ABOVE: usize = 2000;

/// Functions called now and then ([`Role::Once`]) of more register
/// instructions than this that do not repeat per member of a family (a
/// chain's dense kinetic metric, its observation system, momenta of every
/// link) are emitted as data: their program's bytes, which the derived code
/// evaluates with the interpreter (the bits the printed code would give).
/// rustc took about 0.4 ms per statement of them (the 32-link director
/// chain's 100 634 statements, most of them these functions': a 39 s
/// build; 9 569 statements and 5.2–7.6 s as data), while the interpreter's
/// cost falls only where they are called: at the start of a run, and when a
/// physical state or invariants are asked for.
pub const DATA_ABOVE: usize = 4_000;

/// Statistics of an emitted function.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EmitStats {
    /// register instructions after common-subexpression elimination
    pub ops: usize,
    /// emitted functions (1 unless the body was split)
    pub parts: usize,
    /// iterations of the body's loops (0: straight-line; see [`ROLL_ABOVE`])
    pub iterations: usize,
    /// whether the body is data the interpreter evaluates (see [`DATA_ABOVE`])
    pub data: bool,
}

fn num(c: f64) -> TokenStream {
    // A folded `0/0` (an initial value, say) is a value like any other: the
    // step refuses it at run time with its name, as the other hosts do; a
    // literal cannot spell it (proc_macro2 panics on one).
    if c.is_nan() {
        return quote!(f64::NAN);
    }
    if c.is_infinite() {
        return if c > 0.0 {
            quote!(f64::INFINITY)
        } else {
            quote!(f64::NEG_INFINITY)
        };
    }
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
    inputs: Vec<(Ident, usize, bool)>,
    /// `name: &[f64; n]` per input (plus `name_lo` for double-double arguments), then
    /// `name: &mut [f64; n]` per output
    params: Vec<TokenStream>,
    /// (argument, index) per program output
    outs: Vec<(Ident, usize)>,
    /// every parameter's name, in order
    names: Vec<Ident>,
}

fn signature(f: &Function, dd_args: &[Arg]) -> Signature {
    let mut inputs = Vec::new();
    let mut params = Vec::new();
    let mut names = Vec::new();
    for (arg, syms) in &f.inputs {
        let id = format_ident!("{}", arg.name());
        let n = syms.len();
        params.push(quote!(#id: &[f64; #n]));
        names.push(id.clone());
        let pair = dd_args.contains(arg);
        if pair {
            let lo = format_ident!("{}_lo", arg.name());
            params.push(quote!(#lo: &[f64; #n]));
            names.push(lo);
        }
        inputs.extend((0..n).map(|k| (id.clone(), k, pair)));
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
    /// double-double mode (the arguments passed as `hi` and `hi_lo` pairs
    /// are marked in the signature's inputs)
    dd: bool,
    /// the parts of a split body (`None`: printed whole)
    split: Option<&'a Partition>,
    /// part being printed (usize::MAX: the outer function of a split body)
    current: usize,
    /// `Some`: each input element and scratch slot a part reads is loaded
    /// once into a local, before the first instruction that reads it (see
    /// [`Printer::loads`]); marks of those loaded so far
    loaded: Option<RefCell<Loaded>>,
    /// results of a loop read after it: their slot in the scratch array
    /// (see [`rolled`])
    saved: Option<&'a HashMap<u32, usize>>,
}

/// The input registers and scratch slots a part has loaded into locals.
#[derive(Default)]
struct Loaded {
    inputs: Vec<bool>,
    slots: Vec<bool>,
}

impl Printer<'_> {
    /// The scratch slot of instruction `i`'s result, if it crosses parts.
    fn scratch(&self, i: usize) -> Option<usize> {
        self.split.and_then(|cut| cut.slot[i])
    }

    /// The value of register `r`.
    fn reg(&self, r: u32) -> TokenStream {
        let r = r as usize;
        let base = self.prog.result_base();
        if r < self.prog.n_inputs {
            let (a, k, pair) = &self.sig.inputs[r];
            if self.loaded.is_some() {
                let v = format_ident!("{}_{}", a, k);
                return quote!(#v);
            }
            match (self.dd, pair) {
                (true, true) => {
                    let lo = format_ident!("{}_lo", a);
                    quote!(__Dd::new(#a[#k], #lo[#k]))
                }
                (true, false) => quote!(__Dd::from(#a[#k])),
                (false, _) => quote!(#a[#k]),
            }
        } else if r < base {
            let c = num(self.prog.consts[r - self.prog.n_inputs]);
            if self.dd {
                quote!(__Dd::from(#c))
            } else {
                c
            }
        } else if let Some(s) = self.saved.and_then(|m| m.get(&(r as u32))) {
            quote!(__t[#s])
        } else {
            let i = r - base;
            match self.scratch(i) {
                Some(s) if self.split.is_some_and(|cut| cut.part_of(i) != self.current) => {
                    if self.loaded.is_some() {
                        let v = format_ident!("__s{}", s);
                        quote!(#v)
                    } else {
                        quote!(__t[#s])
                    }
                }
                _ => {
                    let t = format_ident!("t{}", i);
                    quote!(#t)
                }
            }
        }
    }

    /// `let z_3: f64 = z[3usize];` for each input element and scratch slot
    /// that instruction `i` reads and its part has not loaded yet, which
    /// [`Printer::reg`] then names. rustc type-checks an index expression in
    /// about 40 µs, twenty times a binary operation on locals; a 256-link
    /// chain's parts read 77 000 elements, 32 000 of them distinct. Each load
    /// stays next to its first reader, where LLVM put it before (it merged
    /// repeated loads of one element already), so the machine code is the
    /// same; binding every element read by one slice pattern at the top of
    /// the part instead cost more (pattern checking, register pressure).
    fn loads(&self, i: usize) -> TokenStream {
        let Some(loaded) = &self.loaded else {
            return TokenStream::new();
        };
        let mut loaded = loaded.borrow_mut();
        let base = self.prog.result_base();
        let (ops, k) = self.prog.instrs[i].operands();
        let mut out = TokenStream::new();
        for &r in &ops[..k] {
            let r = r as usize;
            if r < self.prog.n_inputs {
                if !std::mem::replace(&mut loaded.inputs[r], true) {
                    let (a, k, _) = &self.sig.inputs[r];
                    let v = format_ident!("{}_{}", a, k);
                    out.extend(quote!(let #v: f64 = #a[#k];));
                }
            } else if let Some(s) = r.checked_sub(base).and_then(|j| {
                self.scratch(j)
                    .filter(|_| self.split.is_some_and(|cut| cut.part_of(j) != self.current))
            }) {
                if !std::mem::replace(&mut loaded.slots[s], true) {
                    let v = format_ident!("__s{}", s);
                    out.extend(quote!(let #v: f64 = __t[#s];));
                }
            }
        }
        out
    }

    fn instr(&self, i: &Instr) -> TokenStream {
        let (ops, k) = i.operands();
        let b = (k == 2).then(|| self.reg(ops[1]));
        op_expr(i, self.reg(ops[0]), b, self.dd)
    }

    /// `let t_i: T = ...;` for instruction `i`, stored to the scratch array where it escapes.
    fn stmt(&self, i: usize) -> TokenStream {
        let t = format_ident!("t{}", i);
        let loads = self.loads(i);
        let e = self.instr(&self.prog.instrs[i]);
        let ty = if self.dd { quote!(__Dd) } else { quote!(f64) };
        match self.scratch(i) {
            Some(s) => quote!(#loads let #t: #ty = #e; __t[#s] = #t;),
            None => quote!(#loads let #t: #ty = #e;),
        }
    }

    /// `out[k] = value;` for every output. An array mostly of constant
    /// zeros (a sparse Jacobian, the constrained kinetic metric of a long
    /// chain) is filled with zeros once and only its other entries stored:
    /// one statement instead of thousands for rustc to compile.
    fn assigns(&self) -> Vec<TokenStream> {
        let all: Vec<usize> = (0..self.prog.outputs.len()).collect();
        let (mut fills, stores) = self.assigns_of(&all);
        fills.extend(stores);
        fills
    }

    /// [`Printer::assigns`] for the outputs `which` (indices among the
    /// program's): the `fill(0.0)`s, to run before anything else writes
    /// those arrays, and the stores.
    fn assigns_of(&self, which: &[usize]) -> (Vec<TokenStream>, Vec<TokenStream>) {
        let is_zero = |o: u32| {
            let r = o as usize;
            r >= self.prog.n_inputs && r < self.prog.result_base() && {
                let c = self.prog.consts[r - self.prog.n_inputs];
                c == 0.0 && c.is_sign_positive()
            }
        };
        let mut zeros: Vec<(&Ident, usize)> = Vec::new();
        for &j in which {
            let (a, _) = &self.sig.outs[j];
            let z = usize::from(is_zero(self.prog.outputs[j]));
            match zeros.iter_mut().find(|(b, _)| *b == a) {
                Some((_, n)) => *n += z,
                None => zeros.push((a, z)),
            }
        }
        let filled: Vec<&Ident> = zeros
            .into_iter()
            .filter(|&(_, n)| n >= ZERO_FILL_MIN)
            .map(|(a, _)| a)
            .collect();
        let fills = filled.iter().map(|a| quote!(#a.fill(0.0);)).collect();
        let kept: Vec<(&(Ident, usize), u32)> = which
            .iter()
            .map(|&j| (&self.sig.outs[j], self.prog.outputs[j]))
            .filter(|((a, _), o)| !(is_zero(*o) && filled.contains(&a)))
            .collect();
        // Many stores of constants, or copies of inputs, into one array (an
        // initial state, a predictor that keeps the previous unknowns, a
        // Jacobian's constant entries) go through a table and one loop:
        // thousands of stores in one block are most of LLVM's time on a long
        // chain (its scheduler and alias analysis grow faster than the block).
        let (tables, kept) = if self.dd { (Vec::new(), kept) } else { self.tabled(kept) };
        let mut stores: Vec<TokenStream> = tables;
        stores.extend(kept.into_iter().map(|((a, k), o)| {
            let v = self.reg(o);
            if self.dd {
                quote!(#a[#k] = #v.to_f64();)
            } else {
                quote!(#a[#k] = #v;)
            }
        }));
        (fills, stores)
    }

    /// The stores of `stores` that [`Printer::assigns_of`] writes as a
    /// table and a loop (constants, and copies of an input, at least
    /// [`TABLE_MIN`] into one array), and the others.
    fn tabled<'s>(&self, stores: Vec<Store<'s>>) -> (Vec<TokenStream>, Vec<Store<'s>>) {
        let (n_in, base) = (self.prog.n_inputs, self.prog.result_base());
        // Key: output array, and the input array copied (None: constants).
        let key = |a: &'s Ident, o: u32| -> Option<(&'s Ident, Option<Ident>)> {
            let r = o as usize;
            if r < n_in {
                Some((a, Some(self.sig.inputs[r].0.clone())))
            } else if r < base {
                Some((a, None))
            } else {
                None
            }
        };
        let mut count: Vec<((&Ident, Option<Ident>), usize)> = Vec::new();
        for &((a, _), o) in &stores {
            if let Some(k) = key(a, o) {
                match count.iter_mut().find(|(c, _)| *c == k) {
                    Some((_, n)) => *n += 1,
                    None => count.push((k, 1)),
                }
            }
        }
        let tabled: Vec<(&Ident, Option<Ident>)> = count
            .into_iter()
            .filter(|&(_, n)| n >= TABLE_MIN)
            .map(|(k, _)| k)
            .collect();
        let mut rest = Vec::new();
        let mut rows: Vec<Vec<TokenStream>> = vec![Vec::new(); tabled.len()];
        for (out, o) in stores {
            let (a, k) = out;
            let Some(t) = key(a, o).and_then(|kk| tabled.iter().position(|x| *x == kk)) else {
                rest.push((out, o));
                continue;
            };
            let r = o as usize;
            rows[t].push(if r < n_in {
                let j = self.sig.inputs[r].1;
                quote!((#k, #j))
            } else {
                let c = num(self.prog.consts[r - n_in]);
                quote!((#k, #c))
            });
        }
        let loops = tabled
            .iter()
            .zip(rows)
            .map(|((a, from), rows)| {
                let len = rows.len();
                match from {
                    Some(b) => quote! {
                        const __COPY: [(usize, usize); #len] = [#(#rows),*];
                        for &(k, j) in __COPY.iter() {
                            #a[k] = #b[j];
                        }
                    },
                    None => quote! {
                        const __CONST: [(usize, f64); #len] = [#(#rows),*];
                        for &(k, c) in __CONST.iter() {
                            #a[k] = c;
                        }
                    },
                }
            })
            .map(|body| quote!({ #body }))
            .collect();
        (loops, rest)
    }
}

/// Instruction `i` applied to operands `a` and `b` (`None` for one-operand
/// instructions), as a Rust expression of `f64` or, with `dd`, of `__Dd`.
fn op_expr(i: &Instr, a: TokenStream, b: Option<TokenStream>, dd: bool) -> TokenStream {
    let b = b.unwrap_or_default();
    match *i {
        Instr::Add(..) => quote!(#a + #b),
        Instr::Sub(..) => quote!(#a - #b),
        Instr::Mul(..) => quote!(#a * #b),
        Instr::Div(..) => quote!(#a / #b),
        Instr::Neg(_) => quote!(-#a),
        Instr::Sqrt(_) if dd => quote!(#a.sqrt()),
        Instr::Sqrt(_) => quote!(f64::sqrt(#a)),
        Instr::Powi(_, n) if dd => quote!(#a.powi(#n)),
        Instr::Powi(_, n) => quote!(f64::powi(#a, #n)),
        Instr::Powf(_, e) => {
            let e = num(e);
            if dd {
                quote!(#a.map(|v| f64::powf(v, #e)))
            } else {
                quote!(f64::powf(#a, #e))
            }
        }
        Instr::Pow(..) if dd => quote!(__Dd::from(f64::powf(#a.to_f64(), #b.to_f64()))),
        Instr::Pow(..) => quote!(f64::powf(#a, #b)),
        Instr::Atan2(..) if dd => quote!(__Dd::from(f64::atan2(#a.to_f64(), #b.to_f64()))),
        Instr::Atan2(..) => quote!(f64::atan2(#a, #b)),
        Instr::Call(f, _) => {
            let f = format_ident!("{}", f.name());
            if dd {
                quote!(#a.map(f64::#f))
            } else {
                quote!(f64::#f(#a))
            }
        }
    }
}

/// One output's store: its array and index, and the register stored.
type Store<'s> = (&'s (Ident, usize), u32);

/// Constant zeros in one output array from which it is filled with zeros
/// first (see `Printer::assigns`).
const ZERO_FILL_MIN: usize = 16;

/// Stores of constants, or copies of one input array, into one output
/// array from which they are written by a table and a loop (see
/// `Printer::assigns_of`).
pub const TABLE_MIN: usize = 16;

/// Where an emitted function is called, which decides its [`Shape`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// a kernel every step runs (residual, Jacobian, increment): whole up to
    /// [`WHOLE`] instructions, with instruction-set copies from [`WIDE_MIN`]
    Step,
    /// a kernel every step runs, without instruction-set copies (the
    /// attribute `simd = false`): the emitted code contains no `unsafe`
    StepBaseline,
    /// a function called now and then (invariants, initial states): whole up
    /// to [`CHUNK`] instructions, never copied, where copies would only cost
    /// compile time (the 16-link chain's invariants: 2884 instructions)
    Once,
}

/// Emits `pub fn name(in0: &[f64; N0], ..., out0: &mut [f64; M0], ...)` in
/// the [`Shape`] that [`shape`] chooses for its length and `role`, or as a
/// loop where it is long and repeats per member of a family: `member` gives
/// the member an input symbol belongs to (`None`: none, or not known).
pub fn function(
    g: &mut Graph,
    f: &Function,
    role: Role,
    member: &dyn Fn(Id) -> Option<u32>,
) -> Result<(TokenStream, EmitStats), UnboundSymbol> {
    let prog = lower(&f.tape(g)?);
    let sig = signature(f, &[]);
    let name = format_ident!("{}", f.name.symbol());
    let n = prog.instrs.len();
    let stats = |parts, iterations| EmitStats {
        ops: n,
        parts,
        iterations,
        data: false,
    };
    if let Some((body, iterations)) = rolled(f, &prog, &sig, member) {
        let params = &sig.params;
        let ts = match role {
            // A loop is not bound by instruction fetch as long bodies are,
            // but its arithmetic still gains from AVX's encodings.
            Role::Step => with_copies(body, &sig, &name),
            Role::StepBaseline | Role::Once => quote! {
                #[inline(never)]
                #[allow(unused_variables, unused_mut, clippy::all)]
                pub fn #name(#(#params),*) {
                    #body
                }
            },
        };
        return Ok((ts, stats(1, iterations)));
    }
    if role == Role::Once && n > DATA_ABOVE {
        let data = EmitStats {
            data: true,
            ..stats(1, 0)
        };
        return Ok((as_data(f, &prog, &sig, &name), data));
    }
    Ok(match shape(n, role) {
        Shape::Inline => (inline(&prog, &sig, &name), stats(1, 0)),
        Shape::Copies => (with_copies(whole_body(&prog, &sig), &sig, &name), stats(1, 0)),
        Shape::Split => {
            let cut = Partition::new(&prog, PART, Outputs::Caller);
            (split(&prog, &sig, &cut, f, &name), stats(cut.parts, 0))
        }
    })
}

/// A function of more than [`DATA_ABOVE`] instructions called now and then:
/// its program as bytes, read once (the first call) and evaluated by the
/// interpreter, which runs the program's instructions in its order with the
/// printer's arithmetic, so the results are the bits printed code would give.
fn as_data(f: &Function, prog: &Program, sig: &Signature, name: &Ident) -> TokenStream {
    let params = &sig.params;
    let bytes = Literal::byte_string(&prog.to_bytes());
    let inputs: Vec<Ident> = f.inputs.iter().map(|(a, _)| format_ident!("{}", a.name())).collect();
    let total: usize = f.outputs.iter().map(|(_, e)| e.len()).sum();
    let mut at = 0;
    let copies = f.outputs.iter().map(|(o, e)| {
        let id = format_ident!("{}", o);
        let (lo, hi) = (at, at + e.len());
        at = hi;
        quote!(#id.copy_from_slice(&__flat[#lo..#hi]);)
    });
    quote! {
        #[inline(never)]
        #[allow(unused_variables, clippy::all)]
        pub fn #name(#(#params),*) {
            static __PROGRAM: ::std::sync::OnceLock<::hamel::runtime::kernel::Program> = ::std::sync::OnceLock::new();
            let __program = __PROGRAM.get_or_init(|| {
                ::hamel::runtime::kernel::Program::from_bytes(#bytes)
                    .expect("internal error: a function hamel wrote as bytes does not read back")
            });
            let __inputs = ::std::iter::empty()#(.chain(#inputs.iter()))*.copied();
            let mut __flat = ::std::vec![0.0f64; #total];
            __program.eval_with(__inputs, &mut ::std::vec::Vec::new(), &mut __flat);
            #(#copies)*
        }
    }
}

/// The statements (`;`) of emitted code as text, outside string literals:
/// a function emitted as data ([`DATA_ABOVE`]) carries its program in a byte
/// string, whose bytes are no statements.
pub fn statements(text: &str) -> usize {
    let (mut count, mut quoted, mut escaped) = (0, false, false);
    for c in text.chars() {
        match (quoted, escaped, c) {
            (true, false, '\\') => escaped = true,
            (true, false, '"') => quoted = false,
            (true, ..) => escaped = false,
            (false, _, '"') => quoted = true,
            (false, _, ';') => count += 1,
            _ => {}
        }
    }
    count
}

/// How a body is emitted, by its length in register instructions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// one `#[inline]` function
    Inline,
    /// one function whose body has a baseline copy and copies compiled for
    /// wider instruction sets, one of them chosen at run time
    Copies,
    /// `#[inline(never)]` parts of [`PART`] instructions sharing a scratch array
    Split,
}

/// The shape of a body of `n` register instructions called in `role`.
pub fn shape(n: usize, role: Role) -> Shape {
    let whole = match role {
        Role::Step | Role::StepBaseline => WHOLE,
        Role::Once => CHUNK,
    };
    if n > whole {
        Shape::Split
    } else if role == Role::Step && n >= WIDE_MIN {
        Shape::Copies
    } else {
        Shape::Inline
    }
}

/// A printer of `f64` statements, whole (not split), reading the results
/// of loops from `saved`.
fn printer<'a>(prog: &'a Program, sig: &'a Signature, saved: Option<&'a HashMap<u32, usize>>) -> Printer<'a> {
    Printer {
        prog,
        sig,
        dd: false,
        split: None,
        current: 0,
        loaded: None,
        saved,
    }
}

/// The `let`s and output assignments of a whole body.
fn whole_body(prog: &Program, sig: &Signature) -> TokenStream {
    let p = printer(prog, sig, None);
    let lets = (0..prog.instrs.len()).map(|i| p.stmt(i));
    let assigns = p.assigns();
    quote!(#(#lets)* #(#assigns)*)
}

/// [`Shape::Inline`]: one function, inlined into its caller, where small
/// systems keep their values in registers.
fn inline(prog: &Program, sig: &Signature, name: &Ident) -> TokenStream {
    let params = &sig.params;
    let body = whole_body(prog, sig);
    quote! {
        #[inline]
        #[allow(unused_variables, clippy::all)]
        pub fn #name(#(#params),*) {
            #body
        }
    }
}

/// [`Shape::Copies`]: the body three times — baseline, AVX2, AVX-512 (where
/// the compiler accepts it, [`AVX512`]) — and a dispatcher that runs the
/// widest copy the processor has, within the ceiling
/// `hamel::runtime::isa::ceiling()` (so that tests can run every copy on one
/// machine). Each wide call is guarded by its own feature check, whatever the
/// ceiling says, so no copy runs on a processor that lacks its features.
fn with_copies(body: TokenStream, sig: &Signature, name: &Ident) -> TokenStream {
    let params = &sig.params;
    let args = &sig.names;
    let base = format_ident!("{}_base", name);
    let wide = format_ident!("{}_avx2", name);
    let widest = format_ident!("{}_avx512", name);
    let avx512 = AVX512.then(|| {
        quote! {
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx2,avx512f,avx512vl")]
            #[inline(never)]
            #[allow(unused_variables, unused_mut, clippy::all)]
            unsafe fn #widest(#(#params),*) {
                #body
            }
        }
    });
    let pick_avx512 = AVX512.then(|| {
        quote! {
            if __isa >= ::hamel::runtime::isa::Isa::Avx512
                && ::std::arch::is_x86_feature_detected!("avx512f")
                && ::std::arch::is_x86_feature_detected!("avx512vl")
            {
                #[cfg(debug_assertions)]
                ::hamel::runtime::isa::record(::hamel::runtime::isa::Isa::Avx512);
                // SAFETY: AVX2, AVX-512F and AVX-512VL are present (AVX-512F implies AVX2).
                return unsafe { #widest(#(#args),*) };
            }
        }
    });
    // No `#[allow(unsafe_code)]`: rustc does not report the `unsafe_code`
    // lint in code a macro of another crate wrote, while an `allow` under a
    // user's `#![forbid(unsafe_code)]` is an error (E0453).
    quote! {
        #[inline(never)]
        #[allow(unused_variables, unused_mut, clippy::all)]
        fn #base(#(#params),*) {
            #body
        }
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx2")]
        #[inline(never)]
        #[allow(unused_variables, unused_mut, clippy::all)]
        unsafe fn #wide(#(#params),*) {
            #body
        }
        #avx512
        #[inline]
        pub fn #name(#(#params),*) {
            #[cfg(target_arch = "x86_64")]
            {
                let __isa = ::hamel::runtime::isa::ceiling();
                #pick_avx512
                if __isa >= ::hamel::runtime::isa::Isa::Avx2 && ::std::arch::is_x86_feature_detected!("avx2") {
                    #[cfg(debug_assertions)]
                    ::hamel::runtime::isa::record(::hamel::runtime::isa::Isa::Avx2);
                    // SAFETY: AVX2 is present (checked here).
                    return unsafe { #wide(#(#args),*) };
                }
            }
            // Which copy ran, for tests (`isa::last_run`); nothing in release builds.
            #[cfg(debug_assertions)]
            ::hamel::runtime::isa::record(::hamel::runtime::isa::Isa::Baseline);
            #base(#(#args),*)
        }
    }
}

/// [`Shape::Split`]: `#[inline(never)]` parts that pass the values read
/// outside their part, and the outputs, through a scratch array `__t`.
fn split(prog: &Program, sig: &Signature, cut: &Partition, f: &Function, name: &Ident) -> TokenStream {
    let slots = cut.slots;
    let in_args: Vec<TokenStream> = f
        .inputs
        .iter()
        .map(|(arg, syms)| {
            let id = format_ident!("{}", arg.name());
            let n = syms.len();
            quote!(#id: &[f64; #n])
        })
        .collect();
    let in_names: Vec<Ident> = f.inputs.iter().map(|(a, _)| format_ident!("{}", a.name())).collect();
    let mut p = Printer {
        prog,
        sig,
        dd: false,
        split: Some(cut),
        current: 0,
        loaded: None,
        saved: None,
    };
    let mut parts = Vec::new();
    let mut calls = Vec::new();
    for c in 0..cut.parts {
        p.current = c;
        p.loaded = Some(RefCell::new(Loaded {
            inputs: vec![false; prog.n_inputs],
            slots: vec![false; slots],
        }));
        let part = format_ident!("{}_part{}", name, c);
        let body: Vec<TokenStream> = cut.range(c).map(|i| p.stmt(i)).collect();
        // A module per part: rustc puts each module's functions into one
        // codegen unit, and LLVM optimizes codegen units in parallel.
        parts.push(quote! {
            mod #part {
                #[inline(never)]
                #[allow(unused_variables, clippy::all)]
                pub(super) fn run(#(#in_args,)* __t: &mut [f64; #slots]) {
                    #(#body)*
                }
            }
        });
        calls.push(quote!(#part::run(#(#in_names,)* &mut __t);));
    }
    p.current = usize::MAX;
    p.loaded = None;
    let assigns = p.assigns();
    let params = &sig.params;
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
    }
}

/// The body of a function of more than [`ROLL_ABOVE`] instructions that
/// repeats per member of a family (`member_of` an input symbol), and its
/// loop's iterations: the straight-line instructions before a loop, the loop
/// (one copy of a member's instructions, by the [`Rolled`] plan the JIT
/// runs, which proves that every iteration computes the program's own
/// instructions), the straight-line instructions after it. `None` where no
/// plan exists, where the straight-line parts are longer than [`WHOLE`] (they
/// would want splitting), or where a read of an input in the loop would
/// cross argument arrays.
fn rolled(
    f: &Function,
    prog: &Program,
    sig: &Signature,
    member_of: &dyn Fn(Id) -> Option<u32>,
) -> Option<(TokenStream, usize)> {
    if prog.instrs.len() <= ROLL_ABOVE {
        return None;
    }
    let member: Vec<Option<u32>> = f
        .inputs
        .iter()
        .flat_map(|(_, syms)| syms)
        .map(|&s| member_of(s))
        .collect();
    let places: Vec<(u32, usize)> = f
        .outputs
        .iter()
        .enumerate()
        .flat_map(|(a, (_, e))| (0..e.len()).map(move |k| (a as u32, k)))
        .collect();
    let plan = Rolled::plan(prog, &member, &places)?;
    if plan.loops.iter().map(|lp| lp.before.len()).sum::<usize>() + plan.after.len() > WHOLE {
        return None;
    }
    let index = |k0: usize, stride: i64| -> TokenStream {
        let k0 = Literal::usize_unsuffixed(k0);
        let s = Literal::usize_unsuffixed(stride.unsigned_abs() as usize);
        match stride {
            0 => quote!(#k0),
            1 => quote!(#k0 + __i),
            -1 => quote!(#k0 - __i),
            d if d > 0 => quote!(#k0 + #s * __i),
            _ => quote!(#k0 - #s * __i),
        }
    };
    let p = printer(prog, sig, Some(&plan.saved));
    let mut loops = Vec::with_capacity(plan.loops.len());
    for lp in &plan.loops {
        let last = lp.count as i64 - 1;
        let mut body = Vec::with_capacity(lp.body.len());
        for (q, step) in lp.body.iter().enumerate() {
            let mut ops = Vec::with_capacity(2);
            for o in &step.operands {
                ops.push(match *o {
                    Operand::Local(j) => {
                        let l = format_ident!("__l{}", j);
                        quote!(#l)
                    }
                    Operand::Scratch { at } => {
                        let at = index(at, 1);
                        quote!(__t[#at])
                    }
                    Operand::Earlier { at, stride } => {
                        let at = index(at, stride);
                        quote!(__t[#at])
                    }
                    Operand::Input { first, stride } => {
                        let end = first as i64 + stride * last;
                        let (a, k0, _) = &sig.inputs[first as usize];
                        let same = usize::try_from(end)
                            .ok()
                            .and_then(|e| sig.inputs.get(e))
                            .is_some_and(|(b, _, _)| b == a);
                        if !same {
                            return None;
                        }
                        let at = index(*k0, stride);
                        quote!(#a[#at])
                    }
                    Operand::Fixed(r) => p.reg(r),
                });
            }
            let mut ops = ops.into_iter();
            let a = ops.next()?;
            let e = op_expr(&step.instr, a, ops.next(), false);
            let l = format_ident!("__l{}", q);
            let saves = step.saves.iter().map(|&at| {
                let at = index(at, 1);
                quote!(__t[#at] = #l;)
            });
            let outs = step.outputs.iter().map(|&(arr, p0, stride)| {
                let id = format_ident!("{}", f.outputs[arr as usize].0);
                let at = index(p0, stride);
                quote!(#id[#at] = #l;)
            });
            body.push(quote!(let #l: f64 = #e; #(#saves)* #(#outs)*));
        }
        let before = lp.before.iter().map(|&i| p.stmt(i));
        let stores = lp.stores.iter().map(|&(r, slot)| {
            let v = p.reg(r);
            quote!(__t[#slot] = #v;)
        });
        let count = lp.count;
        loops.push(quote! {
            #(#before)*
            #(#stores)*
            for __i in 0..#count {
                #(#body)*
            }
        });
    }
    let after = plan.after.iter().map(|&i| p.stmt(i));
    // Constant zeros among the outputs left for after the loops (a sparse
    // Jacobian's) are filled first, before the loops write those arrays.
    let (fills, rest) = p.assigns_of(&plan.rest);
    let slots = plan.scratch_len;
    let body = quote! {
        #(#fills)*
        let mut __t = [0.0f64; #slots];
        #(#loops)*
        #(#after)*
        #(#rest)*
    };
    Some((body, plan.loops.iter().map(|lp| lp.count).sum()))
}

/// Emits `pub fn <name>_dd(...)`: the same program evaluated in double-double
/// arithmetic (type `__Dd`, which the caller brings into scope), where each
/// argument named in `dd_args` comes as a pair `arg: &[f64; n], arg_lo: &[f64; n]`.
/// Results are rounded to `f64`. `None` for bodies above [`CHUNK`] instructions.
pub fn function_dd(g: &mut Graph, f: &Function, dd_args: &[Arg]) -> Result<Option<TokenStream>, UnboundSymbol> {
    let prog = lower(&f.tape(g)?);
    let n = prog.instrs.len();
    if n > CHUNK {
        return Ok(None);
    }
    let name = format_ident!("{}_dd", f.name.symbol());
    let sig = signature(f, dd_args);
    let p = Printer {
        prog: &prog,
        sig: &sig,
        dd: true,
        split: None,
        current: 0,
        loaded: None,
        saved: None,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_are_counted_outside_byte_strings() {
        // A byte string's `;` and escaped quote are its bytes, not code;
        // so are a string's, even one that ends in `b`.
        assert_eq!(statements(r#"let a = 1 ; f (b"x;\";y") ; g (c) ;"#), 3);
        assert_eq!(statements(r#"let s = "a;b" ; t (1) ;"#), 2);
    }

    #[test]
    fn shapes_change_at_the_named_thresholds() {
        use Shape::*;
        let at = |n, role| shape(n, role);
        assert_eq!(at(WIDE_MIN - 1, Role::Step), Inline);
        assert_eq!(at(WIDE_MIN, Role::Step), Copies);
        assert_eq!(at(WHOLE, Role::Step), Copies);
        assert_eq!(at(WHOLE + 1, Role::Step), Split);
        // Without copies a per-step kernel stays whole just as long.
        assert_eq!(at(WHOLE, Role::StepBaseline), Inline);
        assert_eq!(at(WHOLE + 1, Role::StepBaseline), Split);
        // Functions called now and then never get copies, and split sooner.
        assert_eq!(at(CHUNK, Role::Once), Inline);
        assert_eq!(at(CHUNK + 1, Role::Once), Split);
    }

    #[test]
    fn constants_that_are_not_finite_are_spelled_not_panicked_on() {
        // the derive of `initial released { th = 0/0 }` hit proc_macro2's
        // assertion ("internal error in hamel ... please report it")
        assert_eq!(num(f64::NAN).to_string(), quote!(f64::NAN).to_string());
        assert_eq!(num(f64::INFINITY).to_string(), quote!(f64::INFINITY).to_string());
        assert_eq!(
            num(f64::NEG_INFINITY).to_string(),
            quote!(f64::NEG_INFINITY).to_string()
        );
        assert_eq!(num(-2.5).to_string(), quote!((-2.5f64)).to_string());
    }

    /// Stores of constants and copies of an input go through a table from
    /// [`TABLE_MIN`] of them into one array; fewer stay single stores, as
    /// do computed values.
    #[test]
    fn many_constant_or_copied_outputs_are_tabled() {
        use crate::sym::{Function, Graph};
        use hamel_kernel::{Arg, Kernel};
        let emitted = |n: usize| {
            let mut g = Graph::new();
            let x: Vec<_> = (0..n).map(|i| g.symbol(&format!("x{i}"))).collect();
            let consts: Vec<_> = (0..n).map(|i| g.constant(0.5 + i as f64)).collect();
            let sum = g.add(&x);
            let f = Function {
                name: Kernel::Predict,
                inputs: vec![(Arg::W, x.clone())],
                outputs: vec![("a".into(), x.clone()), ("b".into(), consts), ("c".into(), vec![sum])],
                locals: Vec::new(),
            };
            function(&mut g, &f, Role::Once, &|_| None).unwrap().0.to_string()
        };
        let below = emitted(TABLE_MIN - 1);
        assert!(!below.contains("__COPY") && !below.contains("__CONST"), "{below}");
        let at = emitted(TABLE_MIN);
        assert!(at.contains("__COPY") && at.contains("__CONST"), "{at}");
        assert!(at.contains("c [0usize] ="), "a computed value is stored alone: {at}");
    }
}
