//! A JIT back-end for register programs: each [`Program`] becomes one native
//! function `fn(args: *const *const f64, scratch: *mut f64, outs: *const *mut f64)`
//! through cranelift, writing its outputs into the output arrays in place,
//! reading its input registers from the argument arrays in place (the
//! program's inputs are the arrays concatenated, as the caller declares them).
//! A caller that calls a small program often can ask for a second, direct
//! entry ([`Direct`]), which takes its arrays without tables of pointers
//! and some of them by value.
//!
//! The generated code performs the program's instructions in the program's
//! order, one IEEE operation each: cranelift does not contract `a * b + c` into
//! a fused multiply–add, square roots are the correctly rounded `sqrt`
//! instruction, and every other elementary function (`powi`, `powf`, `sin`, …)
//! is a call to the very Rust `f64` method the interpreter and the derived code
//! use. Results are therefore bit-identical to theirs. It knows nothing of
//! mechanics: programs in, function pointers out.

#![warn(missing_docs)]

mod codegen;
mod ir;
mod kept;
mod lu;
mod rolled;

use codegen::{compile_all, host_isa};
use cranelift_codegen::ir::AbiParam;
use cranelift_frontend::FunctionBuilderContext;
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{default_libcall_names, Linkage, Module};
use hamel_kernel::{Func, Outputs, Partition, Program, Rolled};
use ir::{calls_in_order, direct_calls_in_order, Imports, Part};
pub use lu::{LuCode, LU_COMPILED};
pub use rolled::output_places;

/// Why a program could not be compiled.
#[derive(Debug, thiserror::Error)]
#[error("JIT compilation failed: {0}")]
pub struct JitError(String);

fn err(e: impl std::fmt::Display) -> JitError {
    JitError(e.to_string())
}

/// Signature of every compiled program: one pointer per argument array,
/// scratch space (see [`JitCode::scratch_len`]), one pointer per output array.
type Entry = unsafe extern "C" fn(*const *const f64, *mut f64, *const *mut f64);

/// Largest number of instructions compiled as one native function.
pub const CHUNK: usize = 2000;

/// Largest number of instructions of a program with a direct entry (a small
/// system's hot kernel) compiled as one native function, as the derive emits
/// such kernels whole up to 3000: cut at [`CHUNK`], the averaged Hamel double
/// pendulum's fused kernel (2103 instructions) passed its values between two
/// parts through memory, and its step took 1.74× the derived one's.
pub const DIRECT_WHOLE: usize = 3000;

extern "C" fn powi(x: f64, n: i32) -> f64 {
    x.powi(n)
}
extern "C" fn powf(x: f64, e: f64) -> f64 {
    x.powf(e)
}
extern "C" fn atan2(y: f64, x: f64) -> f64 {
    f64::atan2(y, x)
}

/// One host function per elementary function, calling [`Func::apply`], and
/// the tables that name them.
macro_rules! elementary {
    ($($f:ident => $name:ident),* $(,)?) => {
        $(
            extern "C" fn $name(x: f64) -> f64 {
                Func::$f.apply(x)
            }
        )*

        /// The host functions compiled code calls, by symbol name. Names carry a
        /// prefix so that they never resolve to the C library's functions of the same
        /// name (which need not round like Rust's).
        fn host_symbols() -> Vec<(&'static str, *const u8)> {
            vec![
                ("hamel_powi", powi as *const u8),
                ("hamel_powf", powf as *const u8),
                ("hamel_atan2", atan2 as *const u8),
                $((concat!("hamel_", stringify!($name)), $name as *const u8),)*
            ]
        }

        fn func_symbol(f: Func) -> &'static str {
            match f {
                $(Func::$f => concat!("hamel_", stringify!($name)),)*
            }
        }
    };
}

elementary!(
    Sin => sin,
    Cos => cos,
    Tan => tan,
    Exp => exp,
    Ln => ln,
    Asin => asin,
    Acos => acos,
    Atan => atan,
    Sinh => sinh,
    Cosh => cosh,
    Tanh => tanh,
);

/// One output array of a compiled program, of `len` values.
#[derive(Clone, Copy, Debug)]
pub struct OutputArray<'a> {
    /// the array's length
    pub len: usize,
    /// where the program's outputs for this array go: its next `at.len()`
    /// outputs at these positions (the other entries are left as they are),
    /// or, with `None`, its next `len` outputs at positions `0..len`
    pub at: Option<&'a [usize]>,
}

impl OutputArray<'_> {
    /// How many of the program's outputs this array takes.
    pub fn count(&self) -> usize {
        self.at.map_or(self.len, <[usize]>::len)
    }
}

/// How a program's direct entry (see [`Direct`]) receives one of its
/// argument arrays.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Passed {
    /// through pointer `k` of the table the entry takes first
    Table(usize),
    /// by value: the array's values are the entry's value parameters `k`,
    /// `k + 1`, … (in registers, where the calling convention has enough)
    Values(usize),
}

/// A second entry of a program, for a caller that knows its argument arrays
/// ahead and calls it often: `fn(table: *const *const f64, scratch: *mut f64,
/// out_0: *mut f64, …, v_0: f64, …)`, one pointer per output array (no
/// table of them) and `values` value parameters. Arrays passed by value
/// skip the store and reload through memory that pointers cost on the
/// caller's critical path: a small Newton system's iterate goes to the
/// kernel in registers.
#[derive(Clone, Copy, Debug)]
pub struct Direct<'a> {
    /// the program's index among those compiled
    pub program: usize,
    /// how each of the program's argument arrays is passed, in order
    pub args: &'a [Passed],
    /// number of value parameters
    pub values: usize,
}

/// Most value parameters of a direct entry.
pub const MAX_VALUES: usize = 16;

/// Native code for a set of programs; keeps the code alive while it is used.
pub struct JitCode {
    module: Option<JITModule>,
    entries: Vec<Entry>,
    /// the direct entries, in the order requested
    direct: Vec<unsafe extern "C" fn()>,
    /// per function: argument array lengths, output array lengths
    shapes: Vec<(Vec<usize>, Vec<usize>)>,
    /// per function: the iterations and body length of each loop it runs,
    /// where it runs as loops
    loops: Vec<Option<Vec<(usize, usize)>>>,
    /// scratch values per function
    scratch: Vec<usize>,
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

/// Whether [`JitCode::compile_on`] compiles (and keeps the code as bytes)
/// or loads code kept before.
enum Code<'a> {
    Compile { keep: bool },
    Load(&'a [u8]),
}

/// Refuses direct entries that do not match their programs.
fn check_direct(programs: &[(&Program, &[usize], &[OutputArray])], direct: &[Direct]) -> Result<(), JitError> {
    for (j, d) in direct.iter().enumerate() {
        let Some((_, arrays, _)) = programs.get(d.program) else {
            return Err(JitError(format!("direct entry {j}: no program {}", d.program)));
        };
        let fits = d.values <= MAX_VALUES
            && d.args.len() == arrays.len()
            && d.args.iter().zip(*arrays).all(|(p, &len)| match *p {
                Passed::Table(_) => true,
                Passed::Values(k) => k + len <= d.values,
            });
        if !fits {
            return Err(JitError(format!(
                "direct entry {j}: {} arrays passed in {} values for arrays of lengths {arrays:?}",
                d.args.len(),
                d.values
            )));
        }
    }
    Ok(())
}

/// Refuses argument and output arrays that do not match their programs.
fn check_shapes(programs: &[(&Program, &[usize], &[OutputArray])]) -> Result<(), JitError> {
    for (k, (p, arrays, outs)) in programs.iter().enumerate() {
        let count: usize = outs.iter().map(OutputArray::count).sum();
        if count != p.outputs.len() {
            return Err(JitError(format!(
                "program {k}: output arrays of {count} values for {} outputs",
                p.outputs.len()
            )));
        }
        if let Some(a) = outs
            .iter()
            .find(|a| a.at.is_some_and(|at| at.iter().any(|&i| i >= a.len)))
        {
            return Err(JitError(format!(
                "program {k}: an output placed beyond its array of {} values",
                a.len
            )));
        }
        if arrays.iter().sum::<usize>() != p.n_inputs {
            return Err(JitError(format!(
                "program {k}: argument arrays of {} values for {} inputs",
                arrays.iter().sum::<usize>(),
                p.n_inputs
            )));
        }
    }
    Ok(())
}

impl JitCode {
    /// Compiles `programs`; function `i` of the result runs `programs[i].0`,
    /// whose input registers are filled from argument arrays of the lengths
    /// `programs[i].1`, in order.
    /// Its outputs form one array.
    pub fn compile(programs: &[(&Program, &[usize])]) -> Result<JitCode, JitError> {
        let outs: Vec<[usize; 1]> = programs.iter().map(|(p, _)| [p.outputs.len()]).collect();
        let with: Vec<(&Program, &[usize], &[usize])> =
            programs.iter().zip(&outs).map(|(&(p, a), o)| (p, a, &o[..])).collect();
        Self::compile_with_outputs(&with)
    }

    /// [`JitCode::compile`] for programs whose outputs are split into arrays
    /// of the lengths `programs[i].2`, in order, each written in place (a
    /// residual and a Jacobian into their own storage, without a copy).
    pub fn compile_with_outputs(programs: &[(&Program, &[usize], &[usize])]) -> Result<JitCode, JitError> {
        let arrays: Vec<Vec<OutputArray>> = programs
            .iter()
            .map(|(_, _, outs)| outs.iter().map(|&len| OutputArray { len, at: None }).collect())
            .collect();
        let with: Vec<(&Program, &[usize], &[OutputArray])> = programs
            .iter()
            .zip(&arrays)
            .map(|(&(p, a, _), o)| (p, a, &o[..]))
            .collect();
        Self::compile_placed(&with)
    }

    /// [`JitCode::compile_with_outputs`] for output arrays some of whose
    /// entries the program does not write (see [`OutputArray::at`]): a
    /// banded Jacobian written into a dense matrix whose other entries stay
    /// zero, at the cost of the band instead of the whole matrix.
    pub fn compile_placed(programs: &[(&Program, &[usize], &[OutputArray])]) -> Result<JitCode, JitError> {
        Self::compile_on(programs, &[], &[], None, Code::Compile { keep: false }).map(|(code, _)| code)
    }

    /// [`JitCode::compile_keeping`] (without keeping where `keep` is false),
    /// with the direct entries `direct` besides (see
    /// [`JitCode::direct_entry`]), and program `k` run as the loop
    /// `rolled[k]` plans where it has a plan (see [`Rolled`]; a program with
    /// a direct entry keeps its straight-line code).
    pub fn compile_direct(
        programs: &[(&Program, &[usize], &[OutputArray])],
        direct: &[Direct],
        rolled: &[Option<&Rolled>],
        keep: bool,
    ) -> Result<(JitCode, Option<Vec<u8>>), JitError> {
        Self::compile_on(programs, direct, rolled, None, Code::Compile { keep })
    }

    /// [`JitCode::load_placed`] for code [`JitCode::compile_direct`] kept,
    /// with the same direct entries and plans.
    pub fn load_direct(
        programs: &[(&Program, &[usize], &[OutputArray])],
        direct: &[Direct],
        rolled: &[Option<&Rolled>],
        bytes: &[u8],
    ) -> Result<JitCode, JitError> {
        Self::compile_on(programs, direct, rolled, None, Code::Load(bytes)).map(|(code, _)| code)
    }

    /// [`JitCode::compile_placed`], with the machine code as bytes that
    /// [`JitCode::load_placed`] accepts in a later process on this machine
    /// and build (`None` if this code cannot be kept).
    pub fn compile_keeping(
        programs: &[(&Program, &[usize], &[OutputArray])],
    ) -> Result<(JitCode, Option<Vec<u8>>), JitError> {
        Self::compile_on(programs, &[], &[], None, Code::Compile { keep: true })
    }

    /// The code [`JitCode::compile_keeping`] compiled for the same
    /// `programs` and kept as `bytes`, without compiling again. Bytes that
    /// were cut, changed, or compiled for another instruction set are refused
    /// (compile instead).
    pub fn load_placed(programs: &[(&Program, &[usize], &[OutputArray])], bytes: &[u8]) -> Result<JitCode, JitError> {
        Self::compile_on(programs, &[], &[], None, Code::Load(bytes)).map(|(code, _)| code)
    }

    /// Compiles (or loads) on `threads` threads (`None`: as many as
    /// [`codegen::threads_for`] chooses), so that tests can force either path.
    fn compile_on(
        programs: &[(&Program, &[usize], &[OutputArray])],
        direct: &[Direct],
        rolled: &[Option<&Rolled>],
        threads: Option<usize>,
        how: Code,
    ) -> Result<(JitCode, Option<Vec<u8>>), JitError> {
        check_shapes(programs)?;
        check_direct(programs, direct)?;
        let isa = host_isa()?;
        let mut builder = JITBuilder::with_isa(isa.clone(), default_libcall_names());
        builder.symbols(host_symbols());
        let mut module = JITModule::new(builder);
        let imports = Imports::declare(&mut module)?;
        // Every function — a program's entry and the parts of a long program —
        // takes (argument array pointers, scratch, outputs).
        let mut sig = module.make_signature();
        for _ in 0..3 {
            sig.params.push(AbiParam::new(module.target_config().pointer_type()));
        }
        let build = matches!(how, Code::Compile { .. });
        let mut fctx = FunctionBuilderContext::new();
        let mut functions = Vec::new();
        let mut defined = Vec::new();
        let mut ids = Vec::with_capacity(programs.len());
        let mut scratch = Vec::with_capacity(programs.len());
        let mut cuts = Vec::with_capacity(programs.len());
        let mut parts_of = Vec::with_capacity(programs.len());
        let mut loops = Vec::with_capacity(programs.len());
        for (k, &(prog, arrays, out_arrays)) in programs.iter().enumerate() {
            let plan = rolled
                .get(k)
                .copied()
                .flatten()
                .filter(|p| direct.iter().all(|d| d.program != k) && rolled::fits(p, arrays));
            if let Some(plan) = plan {
                let id = module
                    .declare_function(&format!("program{k}"), Linkage::Local, &sig)
                    .map_err(err)?;
                if build {
                    let f = rolled::build(prog, plan, arrays, out_arrays, &mut module, &imports, &sig, &mut fctx);
                    functions.push((id, f));
                }
                defined.push(id);
                ids.push(id);
                scratch.push(plan.scratch_len);
                cuts.push(None);
                parts_of.push(vec![id]);
                loops.push(Some(plan.loops.iter().map(|lp| (lp.count, lp.body.len())).collect()));
                continue;
            }
            loops.push(None);
            // Long programs are compiled as parts (register allocation grows
            // faster than linearly with function size), cut by the rule the Rust
            // printer uses; results read by a later part, or outputs of an
            // earlier one, pass through the scratch array.
            // Outputs by the thousand (a dense mass matrix) are stored by
            // functions of their own, CHUNK at a time, from the scratch
            // array: in the last part, 150 000 stores took register
            // allocation minutes (96 links).
            let many = prog.outputs.len() > CHUNK;
            let whole = direct.iter().any(|d| d.program == k) && prog.instrs.len() <= DIRECT_WHOLE;
            let chunk = if whole { DIRECT_WHOLE } else { CHUNK };
            let cut = Partition::new(prog, chunk, if many { Outputs::Caller } else { Outputs::LastPart });
            let stores = if many { prog.outputs.len().div_ceil(CHUNK) } else { 0 };
            let mut part_ids = Vec::with_capacity(cut.parts + stores);
            for c in 0..cut.parts + stores {
                let id = module
                    .declare_function(&format!("program{k}_part{c}"), Linkage::Local, &sig)
                    .map_err(err)?;
                if build {
                    let outputs = if many {
                        let from = c.saturating_sub(cut.parts) * CHUNK;
                        (c >= cut.parts).then(|| from..(from + CHUNK).min(prog.outputs.len()))
                    } else {
                        (c + 1 == cut.parts).then_some(0..prog.outputs.len())
                    };
                    let part = Part {
                        prog,
                        arrays,
                        out_arrays,
                        cut: &cut,
                        index: c,
                        outputs: outputs.unwrap_or(0..0),
                        direct: None,
                    };
                    functions.push((id, part.build(&mut module, &imports, &sig, &mut fctx)));
                }
                defined.push(id);
                part_ids.push(id);
            }
            let id = if part_ids.len() == 1 {
                part_ids[0]
            } else {
                let id = module
                    .declare_function(&format!("program{k}"), Linkage::Local, &sig)
                    .map_err(err)?;
                if build {
                    functions.push((id, calls_in_order(&mut module, &sig, &part_ids, &mut fctx)));
                }
                defined.push(id);
                id
            };
            ids.push(id);
            scratch.push(cut.slots);
            cuts.push(Some(cut));
            parts_of.push(part_ids);
        }
        // A direct entry is the program compiled once more where it is one
        // part; a longer program's calls its parts, whose cost dwarfs the
        // tables it builds for them.
        let mut direct_ids = Vec::with_capacity(direct.len());
        for (j, d) in direct.iter().enumerate() {
            let (prog, arrays, out_arrays) = programs[d.program];
            let mut dsig = module.make_signature();
            for _ in 0..2 + out_arrays.len() {
                dsig.params.push(AbiParam::new(module.target_config().pointer_type()));
            }
            for _ in 0..d.values {
                dsig.params.push(AbiParam::new(cranelift_codegen::ir::types::F64));
            }
            let id = module
                .declare_function(&format!("direct{j}"), Linkage::Local, &dsig)
                .map_err(err)?;
            if build {
                // A program with a direct entry is never rolled (see above).
                let cut = cuts[d.program]
                    .as_ref()
                    .expect("a program with a direct entry is cut into parts");
                let f = if parts_of[d.program].len() == 1 {
                    let part = Part {
                        prog,
                        arrays,
                        out_arrays,
                        cut,
                        index: 0,
                        outputs: 0..prog.outputs.len(),
                        direct: Some(d),
                    };
                    part.build(&mut module, &imports, &dsig, &mut fctx)
                } else {
                    direct_calls_in_order(&mut module, &dsig, &parts_of[d.program], d, out_arrays.len(), &mut fctx)
                };
                functions.push((id, f));
            }
            defined.push(id);
            direct_ids.push(id);
        }
        let (code, kept) = match how {
            Code::Compile { keep } => {
                let threads = threads.unwrap_or_else(|| codegen::threads_for(&functions));
                let code = compile_all(&*isa, functions, threads)?;
                let kept = if keep { kept::write(&*isa, &code) } else { None };
                (code, kept)
            }
            Code::Load(bytes) => {
                let declared = module.declarations().get_functions().count() as u32;
                (kept::read(&*isa, bytes, defined.len(), declared)?, None)
            }
        };
        for (id, code) in defined.into_iter().zip(code) {
            module
                .define_function_bytes(id, code.alignment, &code.bytes, &code.relocs)
                .map_err(err)?;
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
        let direct = direct_ids
            .iter()
            .map(|&id| {
                let p = module.get_finalized_function(id);
                // SAFETY: a function pointer, of a type its callers transmute
                // to the signature `Direct` describes.
                unsafe { std::mem::transmute::<*const u8, unsafe extern "C" fn()>(p) }
            })
            .collect();
        let code = JitCode {
            module: Some(module),
            entries,
            direct,
            shapes: programs
                .iter()
                .map(|(_, arrays, outs)| (arrays.to_vec(), outs.iter().map(|a| a.len).collect()))
                .collect(),
            scratch,
            loops,
        };
        Ok((code, kept))
    }

    /// Number of compiled functions.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no function was compiled.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The iterations and body instructions of the first loop function `k`
    /// runs, where it was compiled from a [`Rolled`] plan.
    pub fn loop_shape(&self, k: usize) -> Option<(usize, usize)> {
        self.loop_shapes(k)?.first().copied()
    }

    /// The iterations and body instructions of every loop function `k`
    /// runs, in order, where it was compiled from a [`Rolled`] plan.
    pub fn loop_shapes(&self, k: usize) -> Option<&[(usize, usize)]> {
        self.loops.get(k)?.as_deref()
    }

    /// Number of scratch values function `k` needs (0 unless it was split
    /// into parts or runs as a loop).
    pub fn scratch_len(&self, k: usize) -> usize {
        self.scratch[k]
    }

    /// Runs function `k` on argument arrays given as pointers, writing its
    /// outputs into the output arrays given as pointers.
    ///
    /// # Safety
    /// `args` must point to as many pointers as function `k` has argument
    /// arrays, each valid for reading that array's length (see
    /// [`JitCode::compile`]); `scratch` must be valid for reading and writing
    /// [`JitCode::scratch_len`] values, and `outs` must point to as many
    /// pointers as the function has output arrays, each valid for writing
    /// that array's length.
    #[inline]
    pub unsafe fn call_raw(&self, k: usize, args: *const *const f64, scratch: *mut f64, outs: *const *mut f64) {
        // SAFETY: the caller's contract.
        unsafe { (self.entries[k])(args, scratch, outs) }
    }

    /// The native code of function `k`, to be called as [`JitCode::call_raw`]
    /// calls it (same contract), for as long as this code lives.
    pub fn entry(&self, k: usize) -> unsafe extern "C" fn(*const *const f64, *mut f64, *const *mut f64) {
        self.entries[k]
    }

    /// Direct entry `j`, in the order [`JitCode::compile_direct`] was given
    /// them, for as long as this code lives. Call it as the function its
    /// [`Direct`] describes: `fn(table, scratch, out_0, …, v_0, …)`, with
    /// the table holding a pointer for each array passed through it, each
    /// valid for reading that array's length, scratch valid for
    /// [`JitCode::scratch_len`] of its program, and each output pointer
    /// valid for writing its array's length.
    pub fn direct_entry(&self, j: usize) -> unsafe extern "C" fn() {
        self.direct[j]
    }

    /// Lengths of function `k`'s output arrays.
    pub fn output_arrays(&self, k: usize) -> &[usize] {
        &self.shapes[k].1
    }

    /// Runs function `k` on its argument arrays into `out` (outputs concatenated).
    ///
    /// # Panics
    /// If the arrays are not the lengths function `k` was compiled for.
    #[inline]
    pub fn call(&self, k: usize, args: &[&[f64]], out: &mut [f64]) {
        let (arrays, outs) = &self.shapes[k];
        assert!(
            args.len() == arrays.len()
                && args.iter().zip(arrays).all(|(a, &n)| a.len() == n)
                && out.len() == outs.iter().sum::<usize>(),
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
        let mut tmp = vec![0.0; self.scratch[k]];
        let mut at = 0;
        let dst: Vec<*mut f64> = outs
            .iter()
            .map(|&n| {
                let p = out[at..at + n].as_mut_ptr();
                at += n;
                p
            })
            .collect();
        // SAFETY: lengths checked above; the code reads exactly those arrays,
        // uses `scratch_len` scratch values and writes each output array
        // (consecutive pieces of `out`) within its length.
        unsafe { (self.entries[k])(ptrs.as_ptr(), tmp.as_mut_ptr(), dst.as_ptr()) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hamel_kernel::Instr;

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
                Instr::Call(Func::Asin, 14), // cos(√x) ∈ [−1, 1]
                Instr::Call(Func::Acos, 14),
                Instr::Call(Func::Atan, 8),
                Instr::Call(Func::Sinh, 1),
                Instr::Call(Func::Cosh, 1),
                Instr::Call(Func::Tanh, 8),
                Instr::Atan2(1, 8), // r24
            ],
            outputs: vec![
                4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 2, 0,
            ],
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

    #[test]
    fn split_programs_agree_with_the_interpreter_to_the_bit() {
        // A long chain whose values are read across parts and from inputs,
        // constants and earlier results alike.
        let mut instrs = Vec::new();
        let base = 3u32;
        for i in 0..(2 * CHUNK + 123) as u32 {
            let r = base + i;
            instrs.push(match i % 4 {
                0 => Instr::Add(r - 1, 0),
                1 => Instr::Mul(r - 1, if i > 7 { r - 7 } else { 1 }),
                2 => Instr::Call(Func::Sin, r - 1),
                _ => Instr::Sub(r - 1, 2),
            });
        }
        let n = instrs.len() as u32;
        let p = Program {
            n_inputs: 2,
            consts: vec![0.25],
            instrs,
            outputs: vec![base + n - 1, base + 5, base + CHUNK as u32 + 1, 1, 2],
        };
        let outs = [OutputArray {
            len: p.outputs.len(),
            at: None,
        }];
        let want = p.eval(&[0.3, 0.7]);
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        // Its parts compiled on one thread and on two give the same code.
        for threads in [1, 2] {
            let code = JitCode::compile_on(
                &[(&p, &[1, 1], &outs)],
                &[],
                &[],
                Some(threads),
                Code::Compile { keep: false },
            )
            .unwrap()
            .0;
            assert!(code.scratch_len(0) > 0, "the program was split");
            let mut out = vec![0.0; p.outputs.len()];
            code.call(0, &[&[0.3], &[0.7]], &mut out);
            assert_eq!(bits(&out), bits(&want), "{threads} thread(s)");
        }
    }

    /// More outputs than a function stores (a dense mass matrix): stored by
    /// functions of their own, in two output arrays, one of them placed
    /// (`at`), from results of every part, inputs and constants alike.
    #[test]
    fn programs_of_many_outputs_agree_with_the_interpreter_to_the_bit() {
        let base = 3u32;
        let instrs: Vec<Instr> = (0..(CHUNK + 300) as u32)
            .map(|i| {
                let previous = if i == 0 { 2 } else { base + i - 1 };
                match i % 3 {
                    0 => Instr::Add(previous, 0),
                    1 => Instr::Mul(previous, 1),
                    _ => Instr::Call(Func::Cos, previous),
                }
            })
            .collect();
        let n = instrs.len() as u32;
        // Outputs cycle over every register, past three chunks.
        let outputs: Vec<u32> = (0..(3 * CHUNK + 17) as u32).map(|k| (k * 7919) % (base + n)).collect();
        let p = Program {
            n_inputs: 2,
            consts: vec![0.5],
            instrs,
            outputs,
        };
        let first = CHUNK + 5;
        let second = p.outputs.len() - first;
        let placed: Vec<usize> = (0..second).rev().collect();
        let outs = [
            OutputArray { len: first, at: None },
            OutputArray {
                len: second,
                at: Some(&placed),
            },
        ];
        let want = p.eval(&[0.3, 0.7]);
        let code = JitCode::compile_placed(&[(&p, &[1, 1], &outs)]).unwrap();
        let mut out = vec![f64::NAN; p.outputs.len()];
        code.call(0, &[&[0.3], &[0.7]], &mut out);
        for (k, w) in want.iter().enumerate() {
            let got = if k < first {
                out[k]
            } else {
                out[first + placed[k - first]]
            };
            assert_eq!(got.to_bits(), w.to_bits(), "output {k}");
        }
    }

    /// A program of one part and one of several, each through its direct
    /// entry: the interpreter's values to the bit, whether an array comes
    /// through the table or by value, and the same entries from kept code.
    #[test]
    fn direct_entries_agree_with_the_interpreter_to_the_bit() {
        // Inputs (a, b | c, d, e): a and b through the table, c, d, e by
        // value, after an unused value parameter.
        let short = Program {
            n_inputs: 5,
            consts: vec![0.5],
            instrs: vec![
                Instr::Mul(0, 2),          // r6
                Instr::Sub(6, 3),          // r7
                Instr::Div(7, 4),          // r8
                Instr::Call(Func::Sin, 1), // r9
                Instr::Add(9, 5),          // r10
            ],
            outputs: vec![8, 10, 2, 0],
        };
        // A chain of `len` instructions; `middle` is longer than CHUNK but
        // compiled whole (DIRECT_WHOLE), `long` is cut into parts.
        let chain = |len: usize| {
            let mut instrs = Vec::new();
            for i in 0..len as u32 {
                let r = 6 + i;
                instrs.push(match i % 3 {
                    0 => Instr::Add(r - 1, (i % 5).min(4)),
                    1 => Instr::Mul(r - 1, 2),
                    _ => Instr::Call(Func::Cos, r - 1),
                });
            }
            let n = instrs.len() as u32;
            Program {
                n_inputs: 5,
                consts: vec![0.25],
                instrs,
                outputs: vec![5 + n, 6 + CHUNK as u32, 4, 1],
            }
        };
        let (middle, long) = (chain(CHUNK + 77), chain(DIRECT_WHOLE + 77));
        let outs = [OutputArray { len: 1, at: None }, OutputArray { len: 3, at: None }];
        let programs: [(&Program, &[usize], &[OutputArray]); 3] = [
            (&short, &[1, 3, 1], &outs),
            (&middle, &[1, 3, 1], &outs),
            (&long, &[1, 3, 1], &outs),
        ];
        let args = [Passed::Table(1), Passed::Values(1), Passed::Table(0)];
        let direct = [
            Direct {
                program: 0,
                args: &args,
                values: 4,
            },
            Direct {
                program: 1,
                args: &args,
                values: 4,
            },
            Direct {
                program: 2,
                args: &args,
                values: 4,
            },
        ];
        type F = unsafe extern "C" fn(*const *const f64, *mut f64, *mut f64, *mut f64, f64, f64, f64, f64);
        let (compiled, kept) = JitCode::compile_direct(&programs, &direct, &[], true).unwrap();
        let loaded = JitCode::load_direct(&programs, &direct, &[], &kept.expect("this code can be kept")).unwrap();
        let (a, b, c, d, e) = (0.3, -1.25, 2.5, 0.125, 7.0);
        for code in [&compiled, &loaded] {
            for (j, prog) in [&short, &middle, &long].into_iter().enumerate() {
                let want: Vec<u64> = prog.eval(&[a, b, c, d, e]).iter().map(|x| x.to_bits()).collect();
                let (mut o1, mut o2) = ([f64::NAN], [f64::NAN; 3]);
                let mut scratch = vec![0.0; code.scratch_len(j)];
                let table = [&e as *const f64, &a as *const f64];
                // SAFETY: the signature `direct[j]` describes; the table's
                // arrays and the outputs of their lengths; its scratch.
                unsafe {
                    let f = std::mem::transmute::<unsafe extern "C" fn(), F>(code.direct_entry(j));
                    f(
                        table.as_ptr(),
                        scratch.as_mut_ptr(),
                        o1.as_mut_ptr(),
                        o2.as_mut_ptr(),
                        f64::NAN,
                        b,
                        c,
                        d,
                    );
                }
                let got: Vec<u64> = o1.iter().chain(&o2).map(|x| x.to_bits()).collect();
                assert_eq!(got, want, "program {j}");
            }
        }
        assert_eq!(
            compiled.scratch_len(1),
            0,
            "a program with a direct entry is whole up to DIRECT_WHOLE"
        );
        assert!(compiled.scratch_len(2) > 0, "the long program was split");
        // Arrays that do not fit their values are refused.
        let bad = [Direct {
            program: 0,
            args: &args,
            values: 3,
        }];
        assert!(JitCode::compile_direct(&programs, &bad, &[], false).is_err());
    }

    #[test]
    fn kept_code_runs_as_compiled_and_damaged_code_is_refused() {
        // A long program (split into parts that call each other and the
        // host's `sin`) and a short one, so that both kinds of relocation occur.
        let mut instrs = Vec::new();
        for i in 0..(CHUNK + 50) as u32 {
            let r = 2 + i;
            instrs.push(if i % 3 == 0 {
                Instr::Call(Func::Sin, r - 1)
            } else {
                Instr::Add(r - 1, 0)
            });
        }
        let n = instrs.len() as u32;
        let long = Program {
            n_inputs: 1,
            consts: vec![0.5],
            instrs,
            outputs: vec![1 + n, 5],
        };
        let short = Program {
            n_inputs: 1,
            consts: vec![],
            instrs: vec![Instr::Call(Func::Cos, 0)],
            outputs: vec![1],
        };
        let (o2, o1) = ([OutputArray { len: 2, at: None }], [OutputArray { len: 1, at: None }]);
        let programs: [(&Program, &[usize], &[OutputArray]); 2] = [(&long, &[1], &o2), (&short, &[1], &o1)];
        let (compiled, kept) = JitCode::compile_keeping(&programs).unwrap();
        let kept = kept.expect("this code can be kept");
        let loaded = JitCode::load_placed(&programs, &kept).unwrap();
        let run = |code: &JitCode, k: usize, len: usize| {
            let mut out = vec![0.0; len];
            code.call(k, &[&[0.3]], &mut out);
            out.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
        };
        assert_eq!(run(&loaded, 0, 2), run(&compiled, 0, 2));
        assert_eq!(run(&loaded, 1, 1), run(&compiled, 1, 1));
        assert_eq!(
            run(&loaded, 0, 2),
            long.eval(&[0.3]).iter().map(|x| x.to_bits()).collect::<Vec<_>>()
        );
        // One flipped bit anywhere, a cut, or other programs: refused.
        for at in [0, 9, kept.len() / 2, kept.len() - 1] {
            let mut bad = kept.clone();
            bad[at] ^= 1;
            assert!(JitCode::load_placed(&programs, &bad).is_err(), "bit flipped at {at}");
        }
        assert!(JitCode::load_placed(&programs, &kept[..kept.len() - 9]).is_err());
        assert!(JitCode::load_placed(&programs[..1], &kept).is_err());
    }
}
