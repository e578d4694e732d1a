//! The JIT's compiler of sparse LU steps, lent to the steppers of systems
//! whose kernels the JIT compiled (see `hamel_runtime::lu_code`).

use std::sync::Arc;

use hamel_jit::LuCode;
use hamel_runtime::lu_code::{CompiledLu, LuCompiler, LuPlan};

/// Compiles plans with cranelift.
#[derive(Debug)]
pub(crate) struct JitLu;

/// The one compiler every JIT-backed system lends.
pub(crate) static JIT_LU: JitLu = JitLu;

impl LuCompiler for JitLu {
    fn compile(&self, plan: &LuPlan) -> Option<Arc<dyn CompiledLu>> {
        // A plan the JIT refuses is replayed: nothing is lost but time.
        let code = LuCode::compile(plan).ok()?;
        Some(Arc::new(Compiled(code)))
    }
}

#[derive(Debug)]
struct Compiled(LuCode);

impl CompiledLu for Compiled {
    fn factor(&self, ab: &mut [f64], v: Option<&mut [f64]>, from: usize, limit: usize, tiny: f64, keep: f64) -> usize {
        self.0.factor_forward(ab, v, from, limit, tiny, keep)
    }
    fn forward(&self, ab: &[f64], v: &mut [f64], from: usize, upto: usize) -> bool {
        self.0.forward(ab, v, from, upto)
    }
    fn backward(&self, ab: &[f64], v: &mut [f64], from: usize, upto: usize) -> bool {
        self.0.backward(ab, v, from, upto)
    }
}
