//! Native code from cranelift IR: the host's instruction set, and the
//! compilation of independent functions on every core.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use cranelift_codegen::control::ControlPlane;
use cranelift_codegen::ir::Function;
use cranelift_codegen::isa::{OwnedTargetIsa, TargetIsa};
use cranelift_codegen::settings::{self, Configurable};
use cranelift_codegen::Context;
use cranelift_module::{FuncId, ModuleReloc};

use crate::{err, JitError};

/// Below this many IR instructions in all, functions are compiled on the
/// calling thread: a thread costs more than it saves on small models.
const PARALLEL_MIN_INSTRUCTIONS: usize = 4000;

/// The host's instruction set, with the settings every function is built for.
pub(crate) fn host_isa() -> Result<OwnedTargetIsa, JitError> {
    let mut flags = settings::builder();
    flags.set("opt_level", "speed").map_err(err)?;
    // The IR verifier checks our lowering, not the model: on in debug
    // builds (every test), off in release, where it took 2–5 % of a
    // small model's loading (wasmtime's choice too).
    let verify = if cfg!(debug_assertions) { "true" } else { "false" };
    flags.set("enable_verifier", verify).map_err(err)?;
    flags.set("use_colocated_libcalls", "false").map_err(err)?;
    flags.set("is_pic", "false").map_err(err)?;
    cranelift_native::builder()
        .map_err(err)?
        .finish(settings::Flags::new(flags))
        .map_err(err)
}

/// One function's machine code, ready for `Module::define_function_bytes`.
pub(crate) struct Compiled {
    pub(crate) bytes: Vec<u8>,
    pub(crate) alignment: u64,
    pub(crate) relocs: Vec<ModuleReloc>,
}

/// How many threads compile `functions`: one per core, one for small models.
pub(crate) fn threads_for(functions: &[(FuncId, Function)]) -> usize {
    let size: usize = functions.iter().map(|(_, f)| f.dfg.num_insts()).sum();
    if size < PARALLEL_MIN_INSTRUCTIONS {
        1
    } else {
        std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(functions.len())
    }
}

/// Compiles every function to machine code on `threads` threads, in the
/// order given. Each function is compiled on its own, so the code does not
/// depend on how many threads share the work: the result is the same bytes
/// as one `Module::define_function` after another.
pub(crate) fn compile_all(
    isa: &dyn TargetIsa,
    functions: Vec<(FuncId, Function)>,
    threads: usize,
) -> Result<Vec<Compiled>, JitError> {
    if threads <= 1 || functions.len() <= 1 {
        return functions.into_iter().map(|(id, f)| compile_one(isa, id, f)).collect();
    }
    // Largest first, so that no thread is left with a long function at the end.
    let mut order: Vec<usize> = (0..functions.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(functions[i].1.dfg.num_insts()));
    let work: Vec<Mutex<Option<(FuncId, Function)>>> = functions.into_iter().map(|f| Mutex::new(Some(f))).collect();
    let done: Vec<Mutex<Option<Result<Compiled, JitError>>>> = work.iter().map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let k = next.fetch_add(1, Ordering::Relaxed);
                let Some(&i) = order.get(k) else { break };
                let taken = work[i].lock().map(|mut w| w.take()).ok().flatten();
                if let Some((id, f)) = taken {
                    let code = compile_one(isa, id, f);
                    if let Ok(mut slot) = done[i].lock() {
                        *slot = Some(code);
                    }
                }
            });
        }
    });
    done.into_iter()
        .map(|slot| {
            slot.into_inner()
                .ok()
                .flatten()
                .unwrap_or_else(|| Err(JitError("a compilation thread stopped".into())))
        })
        .collect()
}

fn compile_one(isa: &dyn TargetIsa, id: FuncId, func: Function) -> Result<Compiled, JitError> {
    let mut ctx = Context::for_function(func);
    ctx.compile(isa, &mut ControlPlane::default())
        .map_err(|e| err(format!("{:?}", e.inner)))?;
    let code = ctx
        .compiled_code()
        .ok_or_else(|| JitError("no code after compilation".into()))?;
    let alignment = u64::from(code.buffer.alignment);
    let bytes = code.buffer.data().to_vec();
    let relocs = code
        .buffer
        .relocs()
        .iter()
        .map(|r| ModuleReloc::from_mach_reloc(r, &ctx.func, id))
        .collect();
    Ok(Compiled {
        bytes,
        alignment,
        relocs,
    })
}
