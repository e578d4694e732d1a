//! Cranelift IR of a register program: one function per part of the
//! program's partition, and an entry that calls the parts in order.

use cranelift_codegen::ir::{
    types, AbiParam, FuncRef, Function, InstBuilder, MemFlagsData, Signature, StackSlotData, StackSlotKind,
    UserFuncName, Value,
};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_jit::JITModule;
use cranelift_module::{FuncId, Linkage, Module};
use hamel_kernel::{Func, Instr, Partition, Program};

use crate::{err, func_symbol, Direct, JitError, OutputArray, Passed};

/// The host functions compiled code calls, declared in the module.
pub(crate) struct Imports {
    pub(crate) powi: FuncId,
    pub(crate) powf: FuncId,
    pub(crate) atan2: FuncId,
    pub(crate) elementary: Vec<(Func, FuncId)>,
}

impl Imports {
    pub(crate) fn declare(module: &mut JITModule) -> Result<Self, JitError> {
        let mut import = |name: &str, params: &[types::Type]| -> Result<FuncId, JitError> {
            let mut sig = module.make_signature();
            sig.params.extend(params.iter().map(|&t| AbiParam::new(t)));
            sig.returns.push(AbiParam::new(types::F64));
            module.declare_function(name, Linkage::Import, &sig).map_err(err)
        };
        let powi = import("hamel_powi", &[types::F64, types::I32])?;
        let powf = import("hamel_powf", &[types::F64, types::F64])?;
        let atan2 = import("hamel_atan2", &[types::F64, types::F64])?;
        let mut elementary = Vec::new();
        for f in Func::ALL {
            elementary.push((f, import(func_symbol(f), &[types::F64])?));
        }
        Ok(Self {
            powi,
            powf,
            atan2,
            elementary,
        })
    }
}

/// Part `index` of a program cut by `cut`, with the arrays it reads and writes.
pub(crate) struct Part<'a> {
    pub(crate) prog: &'a Program,
    pub(crate) arrays: &'a [usize],
    pub(crate) out_arrays: &'a [OutputArray<'a>],
    pub(crate) cut: &'a Partition,
    pub(crate) index: usize,
    /// the outputs (indices into the program's) this function stores
    pub(crate) outputs: std::ops::Range<usize>,
    /// the program's direct entry this function is (a program of one part),
    /// or `None`: it takes the argument and output arrays as tables
    pub(crate) direct: Option<&'a Direct<'a>>,
}

impl Part<'_> {
    /// The part's IR: its instructions in program order, one IEEE operation
    /// each, then the stores of its outputs.
    pub(crate) fn build(
        &self,
        module: &mut JITModule,
        imports: &Imports,
        sig: &Signature,
        fctx: &mut FunctionBuilderContext,
    ) -> Function {
        let (prog, arrays) = (self.prog, self.arrays);
        let tcfg = module.target_config();
        let ptr = tcfg.pointer_type();
        let width = i32::from(ptr.bytes() as u8);
        let base = prog.result_base();
        let slot = &self.cut.slot;
        // input register → (argument array, offset)
        let input_at: Vec<(usize, usize)> = arrays
            .iter()
            .enumerate()
            .flat_map(|(a, &len)| (0..len).map(move |i| (a, i)))
            .collect();
        let mut func = Function::with_name_signature(UserFuncName::default(), sig.clone());
        let (mut b, params) = entry_block(&mut func, fctx);
        // The array convention: (argument pointers, scratch, output
        // pointers); the direct one: (table, scratch, one pointer per output
        // array, the values passed by value).
        let (args, tmp, out) = (params[0], params[1], params[2]);
        let values_at = 2 + self.out_arrays.len();
        let refs = Refs::declare(module, imports, &mut b);
        let flags = MemFlagsData::trusted();
        let read = MemFlagsData::trusted().with_readonly();
        // Values of the registers this part has read or computed.
        let mut vals: Vec<Option<Value>> = vec![None; prog.registers()];
        let mut arg_base: Vec<Option<Value>> = vec![None; arrays.len()];
        let value = |r: u32,
                     b: &mut FunctionBuilder,
                     vals: &mut Vec<Option<Value>>,
                     arg_base: &mut Vec<Option<Value>>|
         -> Value {
            let r = r as usize;
            if let Some(v) = vals[r] {
                return v;
            }
            let v = if r < prog.n_inputs {
                let (a, i) = input_at[r];
                let (table, k) = match self.direct.map(|d| d.args[a]) {
                    Some(Passed::Values(k)) => return params[values_at + k + i],
                    Some(Passed::Table(k)) => (args, k),
                    None => (args, a),
                };
                let p = *arg_base[a].get_or_insert_with(|| b.ins().load(ptr, read, table, width * k as i32));
                b.ins().load(types::F64, read, p, (8 * i) as i32)
            } else if r < base {
                b.ins().f64const(prog.consts[r - prog.n_inputs])
            } else {
                let s = slot[r - base].expect("a result from another part has a scratch slot");
                b.ins().load(types::F64, flags, tmp, 8 * s as i32)
            };
            vals[r] = Some(v);
            v
        };
        for i in self.cut.range(self.index) {
            let v = refs.apply(&mut b, &prog.instrs[i], |r, b| value(r, b, &mut vals, &mut arg_base));
            vals[base + i] = Some(v);
            if let Some(s) = slot[i] {
                b.ins().store(flags, v, tmp, 8 * s as i32);
            }
        }
        if !self.outputs.is_empty() {
            let mut j = 0;
            for (a, array) in self.out_arrays.iter().enumerate() {
                let end = j + array.count();
                if array.count() == 0 || end <= self.outputs.start || j >= self.outputs.end {
                    j = end;
                    continue;
                }
                let dst = if self.direct.is_some() {
                    params[2 + a]
                } else {
                    b.ins().load(ptr, read, out, width * a as i32)
                };
                for i in 0..array.count() {
                    if !self.outputs.contains(&j) {
                        j += 1;
                        continue;
                    }
                    let v = value(prog.outputs[j], &mut b, &mut vals, &mut arg_base);
                    let at = array.at.map_or(i, |at| at[i]);
                    b.ins().store(flags, v, dst, (8 * at) as i32);
                    j += 1;
                }
            }
        }
        b.ins().return_(&[]);
        b.finalize(tcfg);
        func
    }
}

/// The host functions, referenced from the function being built.
pub(crate) struct Refs {
    powi: FuncRef,
    powf: FuncRef,
    atan2: FuncRef,
    elementary: Vec<(Func, FuncRef)>,
}

impl Refs {
    pub(crate) fn declare(module: &mut JITModule, imports: &Imports, b: &mut FunctionBuilder) -> Refs {
        let mut r = |id: FuncId| module.declare_func_in_func(id, b.func);
        Refs {
            powi: r(imports.powi),
            powf: r(imports.powf),
            atan2: r(imports.atan2),
            elementary: imports.elementary.iter().map(|&(f, id)| (f, r(id))).collect(),
        }
    }

    /// One instruction, one IEEE operation or host call, on the operands
    /// `operand` gives for its registers in order.
    pub(crate) fn apply(
        &self,
        b: &mut FunctionBuilder,
        ins: &Instr,
        mut operand: impl FnMut(u32, &mut FunctionBuilder) -> Value,
    ) -> Value {
        let call = |b: &mut FunctionBuilder, f: FuncRef, args: &[Value]| -> Value {
            let c = b.ins().call(f, args);
            b.inst_results(c)[0]
        };
        let (regs, _) = ins.operands();
        match *ins {
            Instr::Add(..) | Instr::Sub(..) | Instr::Mul(..) | Instr::Div(..) => {
                let x = operand(regs[0], b);
                let y = operand(regs[1], b);
                match *ins {
                    Instr::Add(..) => b.ins().fadd(x, y),
                    Instr::Sub(..) => b.ins().fsub(x, y),
                    Instr::Mul(..) => b.ins().fmul(x, y),
                    _ => b.ins().fdiv(x, y),
                }
            }
            Instr::Neg(_) => {
                let x = operand(regs[0], b);
                b.ins().fneg(x)
            }
            Instr::Sqrt(_) => {
                let x = operand(regs[0], b);
                b.ins().sqrt(x)
            }
            Instr::Powi(_, e) => {
                let x = operand(regs[0], b);
                let e = b.ins().iconst(types::I32, i64::from(e));
                call(b, self.powi, &[x, e])
            }
            Instr::Powf(_, e) => {
                let x = operand(regs[0], b);
                let e = b.ins().f64const(e);
                call(b, self.powf, &[x, e])
            }
            Instr::Pow(..) => {
                let x = operand(regs[0], b);
                let y = operand(regs[1], b);
                call(b, self.powf, &[x, y])
            }
            Instr::Atan2(..) => {
                let y = operand(regs[0], b);
                let x = operand(regs[1], b);
                call(b, self.atan2, &[y, x])
            }
            Instr::Call(f, _) => {
                let x = operand(regs[0], b);
                let fr = self
                    .elementary
                    .iter()
                    .find(|(g, _)| *g == f)
                    .map(|p| p.1)
                    .expect("every Func imported");
                call(b, fr, &[x])
            }
        }
    }
}

/// The entry of a program cut into parts: calls them in order with its own
/// arguments.
pub(crate) fn calls_in_order(
    module: &mut JITModule,
    sig: &Signature,
    parts: &[FuncId],
    fctx: &mut FunctionBuilderContext,
) -> Function {
    let tcfg = module.target_config();
    let mut func = Function::with_name_signature(UserFuncName::default(), sig.clone());
    let (mut b, params) = entry_block(&mut func, fctx);
    for &p in parts {
        let f = module.declare_func_in_func(p, b.func);
        b.ins().call(f, &params);
    }
    b.ins().return_(&[]);
    b.finalize(tcfg);
    func
}

/// The direct entry of a program cut into parts: passes its arguments on as
/// the parts take them (tables of pointers, the values passed by value
/// stored on its stack) and calls the parts in order.
pub(crate) fn direct_calls_in_order(
    module: &mut JITModule,
    sig: &Signature,
    parts: &[FuncId],
    direct: &Direct,
    out_arrays: usize,
    fctx: &mut FunctionBuilderContext,
) -> Function {
    let tcfg = module.target_config();
    let ptr = tcfg.pointer_type();
    let width = ptr.bytes();
    let mut func = Function::with_name_signature(UserFuncName::default(), sig.clone());
    let (mut b, params) = entry_block(&mut func, fctx);
    let flags = MemFlagsData::trusted();
    let slot = |b: &mut FunctionBuilder, bytes: u32| {
        b.create_sized_stack_slot(StackSlotData::new(StackSlotKind::ExplicitSlot, bytes.max(8), 3))
    };
    let values = slot(&mut b, 8 * direct.values as u32);
    for k in 0..direct.values {
        b.ins()
            .stack_store(ptr, params[2 + out_arrays + k], values, (8 * k) as i32);
    }
    let args = slot(&mut b, width * direct.args.len() as u32);
    for (a, passed) in direct.args.iter().enumerate() {
        let p = match *passed {
            Passed::Table(k) => b.ins().load(ptr, flags, params[0], (width as usize * k) as i32),
            Passed::Values(k) => b.ins().stack_addr(ptr, values, (8 * k) as i32),
        };
        b.ins().stack_store(ptr, p, args, (width as usize * a) as i32);
    }
    let outs = slot(&mut b, width * out_arrays as u32);
    for a in 0..out_arrays {
        b.ins()
            .stack_store(ptr, params[2 + a], outs, (width as usize * a) as i32);
    }
    let (args, outs) = (b.ins().stack_addr(ptr, args, 0), b.ins().stack_addr(ptr, outs, 0));
    for &p in parts {
        let f = module.declare_func_in_func(p, b.func);
        b.ins().call(f, &[args, params[1], outs]);
    }
    b.ins().return_(&[]);
    b.finalize(tcfg);
    func
}

/// A builder positioned in `func`'s single block, which takes the
/// function's parameters (returned): every function here is straight-line.
fn entry_block<'f>(func: &'f mut Function, fctx: &'f mut FunctionBuilderContext) -> (FunctionBuilder<'f>, Vec<Value>) {
    let mut b = FunctionBuilder::new(func, fctx);
    let block = b.create_block();
    b.append_block_params_for_function_params(block);
    b.switch_to_block(block);
    b.seal_block(block);
    let params = b.block_params(block).to_vec();
    (b, params)
}
