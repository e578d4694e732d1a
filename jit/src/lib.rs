//! A JIT back-end for register programs: each [`Program`] becomes one native
//! function `fn(args: *const *const f64, out: *mut f64)` through cranelift,
//! reading its input registers from the argument arrays in place (the
//! program's inputs are the arrays concatenated, as the caller declares them).
//!
//! The generated code performs the program's instructions in the program's
//! order, one IEEE operation each: cranelift does not contract `a * b + c` into
//! a fused multiply–add, square roots are the correctly rounded `sqrt`
//! instruction, and every other elementary function (`powi`, `powf`, `sin`, …)
//! is a call to the very Rust `f64` method the interpreter and the derived code
//! use. Results are therefore bit-identical to theirs. It knows nothing of
//! mechanics: programs in, function pointers out.

#![warn(missing_docs)]

use cranelift_codegen::ir::{types, AbiParam, FuncRef, InstBuilder, MemFlagsData, Value};
use cranelift_codegen::settings::{self, Configurable};
use cranelift_codegen::Context;
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{default_libcall_names, FuncId, Linkage, Module};
use hamel_kernel::{Func, Instr, Program};

/// Why a program could not be compiled.
#[derive(Debug, thiserror::Error)]
#[error("JIT compilation failed: {0}")]
pub struct JitError(String);

fn err(e: impl std::fmt::Display) -> JitError {
    JitError(e.to_string())
}

/// Signature of every compiled program: one pointer per argument array, outputs concatenated.
type Entry = unsafe extern "C" fn(*const *const f64, *mut f64);

extern "C" fn powi(x: f64, n: i32) -> f64 {
    x.powi(n)
}
extern "C" fn powf(x: f64, e: f64) -> f64 {
    x.powf(e)
}
extern "C" fn sin(x: f64) -> f64 {
    Func::Sin.apply(x)
}
extern "C" fn cos(x: f64) -> f64 {
    Func::Cos.apply(x)
}
extern "C" fn tan(x: f64) -> f64 {
    Func::Tan.apply(x)
}
extern "C" fn exp(x: f64) -> f64 {
    Func::Exp.apply(x)
}
extern "C" fn ln(x: f64) -> f64 {
    Func::Ln.apply(x)
}

/// The host functions compiled code calls, by symbol name. Names carry a
/// prefix so that they never resolve to the C library's functions of the same
/// name (which need not round like Rust's).
fn host_symbols() -> [(&'static str, *const u8); 7] {
    [
        ("hamel_powi", powi as *const u8),
        ("hamel_powf", powf as *const u8),
        ("hamel_sin", sin as *const u8),
        ("hamel_cos", cos as *const u8),
        ("hamel_tan", tan as *const u8),
        ("hamel_exp", exp as *const u8),
        ("hamel_ln", ln as *const u8),
    ]
}

fn func_symbol(f: Func) -> &'static str {
    match f {
        Func::Sin => "hamel_sin",
        Func::Cos => "hamel_cos",
        Func::Tan => "hamel_tan",
        Func::Exp => "hamel_exp",
        Func::Ln => "hamel_ln",
    }
}

/// Native code for a set of programs; keeps the code alive while it is used.
pub struct JitCode {
    module: Option<JITModule>,
    entries: Vec<Entry>,
    /// argument array lengths and output count, per function
    shapes: Vec<(Vec<usize>, usize)>,
}

// SAFETY: the compiled functions are pure (they read `inputs`, write `out`,
// and call pure host functions); the module is only touched again on drop.
unsafe impl Send for JitCode {}
unsafe impl Sync for JitCode {}

impl std::fmt::Debug for JitCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JitCode")
            .field("functions", &self.entries.len())
            .finish()
    }
}

impl Drop for JitCode {
    fn drop(&mut self) {
        if let Some(m) = self.module.take() {
            // SAFETY: the entries die with `self`; nothing can call them afterwards.
            unsafe { m.free_memory() };
        }
    }
}

impl JitCode {
    /// Compiles `programs`; function `i` of the result runs `programs[i].0`,
    /// whose input registers are filled from argument arrays of the lengths
    /// `programs[i].1`, in order.
    pub fn compile(programs: &[(&Program, &[usize])]) -> Result<JitCode, JitError> {
        for (k, (p, arrays)) in programs.iter().enumerate() {
            if arrays.iter().sum::<usize>() != p.n_inputs {
                return Err(JitError(format!(
                    "program {k}: argument arrays of {} values for {} inputs",
                    arrays.iter().sum::<usize>(),
                    p.n_inputs
                )));
            }
        }
        let mut flags = settings::builder();
        flags.set("opt_level", "speed").map_err(err)?;
        flags.set("use_colocated_libcalls", "false").map_err(err)?;
        flags.set("is_pic", "false").map_err(err)?;
        let isa = cranelift_native::builder()
            .map_err(err)?
            .finish(settings::Flags::new(flags))
            .map_err(err)?;
        let mut builder = JITBuilder::with_isa(isa, default_libcall_names());
        builder.symbols(host_symbols());
        let mut module = JITModule::new(builder);
        let tcfg = module.target_config();
        let ptr = tcfg.pointer_type();

        let mut import = |name: &str, params: &[types::Type]| -> Result<FuncId, JitError> {
            let mut sig = module.make_signature();
            sig.params.extend(params.iter().map(|&t| AbiParam::new(t)));
            sig.returns.push(AbiParam::new(types::F64));
            module.declare_function(name, Linkage::Import, &sig).map_err(err)
        };
        let powi_id = import("hamel_powi", &[types::F64, types::I32])?;
        let powf_id = import("hamel_powf", &[types::F64, types::F64])?;
        let mut func_ids = Vec::new();
        for f in Func::ALL {
            func_ids.push((f, import(func_symbol(f), &[types::F64])?));
        }

        let mut sig = module.make_signature();
        sig.params.push(AbiParam::new(ptr));
        sig.params.push(AbiParam::new(ptr));
        let mut ctx: Context = module.make_context();
        let mut fctx = FunctionBuilderContext::new();
        let mut ids = Vec::with_capacity(programs.len());
        for (k, &(prog, arrays)) in programs.iter().enumerate() {
            let id = module
                .declare_function(&format!("program{k}"), Linkage::Local, &sig)
                .map_err(err)?;
            ctx.func.signature = sig.clone();
            {
                let mut b = FunctionBuilder::new(&mut ctx.func, &mut fctx);
                let block = b.create_block();
                b.append_block_params_for_function_params(block);
                b.switch_to_block(block);
                b.seal_block(block);
                let (args, out) = (b.block_params(block)[0], b.block_params(block)[1]);
                let mut refs =
                    |id: FuncId, b: &mut FunctionBuilder| -> FuncRef { module.declare_func_in_func(id, b.func) };
                let powi_ref = refs(powi_id, &mut b);
                let powf_ref = refs(powf_id, &mut b);
                let func_refs: Vec<(Func, FuncRef)> = func_ids.iter().map(|&(f, id)| (f, refs(id, &mut b))).collect();
                let call = |b: &mut FunctionBuilder, f: FuncRef, args: &[Value]| -> Value {
                    let c = b.ins().call(f, args);
                    b.inst_results(c)[0]
                };
                let flags = MemFlagsData::trusted();
                let read = MemFlagsData::trusted().with_readonly();
                let mut regs: Vec<Value> = Vec::with_capacity(prog.registers());
                let width = i32::from(ptr.bytes() as u8);
                for (a, &n) in arrays.iter().enumerate() {
                    let base = b.ins().load(ptr, read, args, width * a as i32);
                    for i in 0..n {
                        regs.push(b.ins().load(types::F64, read, base, (8 * i) as i32));
                    }
                }
                for &c in &prog.consts {
                    regs.push(b.ins().f64const(c));
                }
                for ins in &prog.instrs {
                    let r = |k: u32| regs[k as usize];
                    let v = match *ins {
                        Instr::Add(a, c) => b.ins().fadd(r(a), r(c)),
                        Instr::Sub(a, c) => b.ins().fsub(r(a), r(c)),
                        Instr::Mul(a, c) => b.ins().fmul(r(a), r(c)),
                        Instr::Div(a, c) => b.ins().fdiv(r(a), r(c)),
                        Instr::Neg(a) => b.ins().fneg(r(a)),
                        Instr::Sqrt(a) => b.ins().sqrt(r(a)),
                        Instr::Powi(a, n) => {
                            let n = b.ins().iconst(types::I32, i64::from(n));
                            call(&mut b, powi_ref, &[r(a), n])
                        }
                        Instr::Powf(a, e) => {
                            let e = b.ins().f64const(e);
                            call(&mut b, powf_ref, &[r(a), e])
                        }
                        Instr::Pow(a, c) => call(&mut b, powf_ref, &[r(a), r(c)]),
                        Instr::Call(f, a) => {
                            let fr = func_refs
                                .iter()
                                .find(|(g, _)| *g == f)
                                .map(|p| p.1)
                                .expect("every Func imported");
                            call(&mut b, fr, &[r(a)])
                        }
                    };
                    regs.push(v);
                }
                for (j, &o) in prog.outputs.iter().enumerate() {
                    b.ins().store(flags, regs[o as usize], out, (8 * j) as i32);
                }
                b.ins().return_(&[]);
                b.finalize(tcfg);
            }
            module.define_function(id, &mut ctx).map_err(err)?;
            module.clear_context(&mut ctx);
            ids.push(id);
        }
        module.finalize_definitions().map_err(err)?;
        let entries = ids
            .iter()
            .map(|&id| {
                let p = module.get_finalized_function(id);
                // SAFETY: every function was built with the signature `Entry` describes.
                unsafe { std::mem::transmute::<*const u8, Entry>(p) }
            })
            .collect();
        Ok(JitCode {
            module: Some(module),
            entries,
            shapes: programs
                .iter()
                .map(|(p, arrays)| (arrays.to_vec(), p.outputs.len()))
                .collect(),
        })
    }

    /// Number of compiled functions.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no function was compiled.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Runs function `k` on argument arrays given as pointers, writing its outputs to `out`.
    ///
    /// # Safety
    /// `args` must point to as many pointers as function `k` has argument
    /// arrays, each valid for reading that array's length (see
    /// [`JitCode::compile`]), and `out` must be valid for writing its output count.
    #[inline]
    pub unsafe fn call_raw(&self, k: usize, args: *const *const f64, out: *mut f64) {
        // SAFETY: the caller's contract.
        unsafe { (self.entries[k])(args, out) }
    }

    /// Runs function `k` on its argument arrays into `out` (outputs concatenated).
    ///
    /// # Panics
    /// If the arrays are not the lengths function `k` was compiled for.
    #[inline]
    pub fn call(&self, k: usize, args: &[&[f64]], out: &mut [f64]) {
        let (arrays, no) = &self.shapes[k];
        assert!(
            args.len() == arrays.len() && args.iter().zip(arrays).all(|(a, &n)| a.len() == n) && out.len() == *no,
            "program {k}: wrong argument sizes"
        );
        let mut stack = [std::ptr::null::<f64>(); 16];
        let heap: Vec<*const f64>;
        let ptrs: &[*const f64] = if args.len() <= stack.len() {
            for (p, a) in stack.iter_mut().zip(args) {
                *p = a.as_ptr();
            }
            &stack[..args.len()]
        } else {
            heap = args.iter().map(|a| a.as_ptr()).collect();
            &heap
        };
        // SAFETY: lengths checked above; the code reads exactly those arrays and
        // writes `no` outputs.
        unsafe { (self.entries[k])(ptrs.as_ptr(), out.as_mut_ptr()) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agrees_with_the_interpreter_to_the_bit() {
        // x, y → every instruction kind once
        let p = Program {
            n_inputs: 2,
            consts: vec![2.5, -0.75],
            instrs: vec![
                Instr::Add(0, 1),    // r4
                Instr::Sub(4, 2),    // r5
                Instr::Mul(5, 3),    // r6
                Instr::Div(6, 0),    // r7
                Instr::Neg(7),       // r8
                Instr::Sqrt(0),      // r9
                Instr::Powi(1, -3),  // r10
                Instr::Powf(0, 1.7), // r11
                Instr::Pow(0, 1),    // r12
                Instr::Call(Func::Sin, 8),
                Instr::Call(Func::Cos, 9),
                Instr::Call(Func::Tan, 10),
                Instr::Call(Func::Exp, 3),
                Instr::Call(Func::Ln, 11),
            ],
            outputs: vec![4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 2, 0],
        };
        let code = JitCode::compile(&[(&p, &[2]), (&p, &[1, 0, 1])]).unwrap();
        assert_eq!(code.len(), 2);
        let mut out = vec![0.0; p.outputs.len()];
        for x in [0.3, 1.7, 12.25, 1e-9] {
            for y in [-2.0, 0.4, 3.3] {
                let want = p.eval(&[x, y]);
                code.call(0, &[&[x, y]], &mut out);
                for (a, b) in out.iter().zip(&want) {
                    assert_eq!(a.to_bits(), b.to_bits(), "x = {x}, y = {y}: {a} vs {b}");
                }
                code.call(1, &[&[x], &[], &[y]], &mut out);
                for (a, b) in out.iter().zip(&want) {
                    assert_eq!(a.to_bits(), b.to_bits(), "x = {x}, y = {y}: {a} vs {b}");
                }
            }
        }
    }
}
