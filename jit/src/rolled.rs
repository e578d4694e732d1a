//! Cranelift IR of a program run as a loop ([`Rolled`]): the instructions
//! before the loop, the loop over its body, the instructions after it, and
//! the outputs the loop does not store, in one function of the array
//! convention `(argument pointers, scratch, output pointers)`.

use std::collections::HashMap;

use cranelift_codegen::ir::{
    condcodes::IntCC, types, Function, InstBuilder, MemFlagsData, Signature, UserFuncName, Value,
};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_jit::JITModule;
use cranelift_module::Module;
use hamel_kernel::rolled::Operand;
use hamel_kernel::{Program, Rolled};

use crate::ir::{Imports, Refs};
use crate::OutputArray;

/// Where each output of a program writing `out_arrays` goes, in order:
/// (output array, position in it), as [`Rolled::plan`] takes them.
pub fn output_places(out_arrays: &[OutputArray]) -> Vec<(u32, usize)> {
    let mut places = Vec::new();
    for (a, array) in out_arrays.iter().enumerate() {
        places.extend((0..array.count()).map(|i| (a as u32, array.at.map_or(i, |at| at[i]))));
    }
    places
}

/// Whether the plan's reads of inputs stay, iteration by iteration, in one
/// argument array (the JIT addresses them from that array's pointer).
pub(crate) fn fits(plan: &Rolled, arrays: &[usize]) -> bool {
    let input_at = inputs_at(arrays);
    plan.loops.iter().all(|lp| {
        lp.body.iter().flat_map(|s| &s.operands).all(|o| match *o {
            Operand::Input { first, stride } => {
                let last = first as i64 + stride * (lp.count as i64 - 1);
                last >= 0 && (last as usize) < input_at.len() && input_at[first as usize].0 == input_at[last as usize].0
            }
            _ => true,
        })
    })
}

/// Input register → (argument array, offset in it).
fn inputs_at(arrays: &[usize]) -> Vec<(usize, usize)> {
    arrays
        .iter()
        .enumerate()
        .flat_map(|(a, &len)| (0..len).map(move |i| (a, i)))
        .collect()
}

/// The function running `prog` by `plan`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn build(
    prog: &Program,
    plan: &Rolled,
    arrays: &[usize],
    out_arrays: &[OutputArray],
    module: &mut JITModule,
    imports: &Imports,
    sig: &Signature,
    fctx: &mut FunctionBuilderContext,
) -> Function {
    let tcfg = module.target_config();
    let ptr = tcfg.pointer_type();
    let width = i32::from(ptr.bytes() as u8);
    let base = prog.result_base();
    let input_at = inputs_at(arrays);
    let places = output_places(out_arrays);
    let mut func = Function::with_name_signature(UserFuncName::default(), sig.clone());
    let mut b = FunctionBuilder::new(&mut func, fctx);
    let entry = b.create_block();
    b.append_block_params_for_function_params(entry);
    b.switch_to_block(entry);
    b.seal_block(entry);
    let params = b.block_params(entry).to_vec();
    let (args, tmp, out) = (params[0], params[1], params[2]);
    let refs = Refs::declare(module, imports, &mut b);
    let flags = MemFlagsData::trusted();
    let read = MemFlagsData::trusted().with_readonly();
    let arg_ptr: Vec<Value> = (0..arrays.len())
        .map(|a| b.ins().load(ptr, read, args, width * a as i32))
        .collect();
    let out_ptr: Vec<Value> = (0..out_arrays.len())
        .map(|a| b.ins().load(ptr, read, out, width * a as i32))
        .collect();
    // Registers computed or read outside the loop.
    // Register `r` read from where it lives outside a loop: an input, a
    // constant, or a loop's result saved to scratch.
    let source = |r: u32, b: &mut FunctionBuilder| -> Value {
        let r = r as usize;
        if r < prog.n_inputs {
            let (a, i) = input_at[r];
            b.ins().load(types::F64, read, arg_ptr[a], (8 * i) as i32)
        } else if r < base {
            b.ins().f64const(prog.consts[r - prog.n_inputs])
        } else {
            let s = *plan
                .saved
                .get(&(r as u32))
                .expect("a loop's result read after it is saved");
            b.ins().load(types::F64, flags, tmp, 8 * s as i32)
        }
    };
    let mut vals: Vec<Option<Value>> = vec![None; prog.registers()];
    let value = |r: u32, b: &mut FunctionBuilder, vals: &mut Vec<Option<Value>>| -> Value {
        *vals[r as usize].get_or_insert_with(|| source(r, b))
    };
    for lp in &plan.loops {
        for &t in &lp.before {
            let v = refs.apply(&mut b, &prog.instrs[t], |r, b| value(r, b, &mut vals));
            vals[base + t] = Some(v);
        }
        for &(r, slot) in &lp.stores {
            let v = value(r, &mut b, &mut vals);
            b.ins().store(flags, v, tmp, 8 * slot as i32);
        }
        // The loop: one block, its counter its parameter.
        let body = b.create_block();
        let exit = b.create_block();
        b.append_block_param(body, types::I64);
        let zero = b.ins().iconst(types::I64, 0);
        b.ins().jump(body, &[zero.into()]);
        b.switch_to_block(body);
        let i = b.block_params(body)[0];
        let bytes = b.ins().imul_imm_s(i, 8);
        // Pointers advanced to this iteration: per (array, stride).
        let mut advanced: HashMap<(u8, usize, i64), Value> = HashMap::new();
        let mut at = |b: &mut FunctionBuilder, kind: u8, array: usize, start: Value, stride: i64| -> Value {
            *advanced.entry((kind, array, stride)).or_insert_with(|| {
                let off = if stride == 1 {
                    bytes
                } else {
                    b.ins().imul_imm_s(bytes, stride)
                };
                b.ins().iadd(start, off)
            })
        };
        let mut local: Vec<Value> = Vec::with_capacity(lp.body.len());
        let mut fixed: HashMap<u32, Value> = HashMap::new();
        for step in &lp.body {
            let mut ops = [None, None];
            for (s, o) in step.operands.iter().enumerate() {
                ops[s] = Some(match *o {
                    Operand::Local(q) => local[q as usize],
                    Operand::Scratch { at: slot } => {
                        let p = at(&mut b, 0, 0, tmp, 1);
                        b.ins().load(types::F64, flags, p, 8 * slot as i32)
                    }
                    Operand::Earlier { at: slot, stride } => {
                        let p = at(&mut b, 0, 0, tmp, stride);
                        b.ins().load(types::F64, flags, p, 8 * slot as i32)
                    }
                    Operand::Input { first, stride } => {
                        let (a, off) = input_at[first as usize];
                        let p = at(&mut b, 1, a, arg_ptr[a], stride);
                        b.ins().load(types::F64, read, p, 8 * off as i32)
                    }
                    Operand::Fixed(r) => match vals[r as usize] {
                        Some(v) => v,
                        // Inputs, constants and an earlier loop's results are
                        // read where they are used, so that they do not stay
                        // in registers through the loop.
                        None => *fixed.entry(r).or_insert_with(|| source(r, &mut b)),
                    },
                });
            }
            let mut k = 0;
            let v = refs.apply(&mut b, &step.instr, |_, _| {
                k += 1;
                ops[k - 1].expect("an operand per register the instruction reads")
            });
            for &slot in &step.saves {
                let p = at(&mut b, 0, 0, tmp, 1);
                b.ins().store(flags, v, p, 8 * slot as i32);
            }
            for &(a, p0, stride) in &step.outputs {
                let p = at(&mut b, 2, a as usize, out_ptr[a as usize], stride);
                b.ins().store(flags, v, p, 8 * p0 as i32);
            }
            local.push(v);
        }
        let next = b.ins().iadd_imm_s(i, 1);
        let more = b.ins().icmp_imm_s(IntCC::SignedLessThan, next, lp.count as i64);
        b.ins().brif(more, body, &[next.into()], exit, &[]);
        b.seal_block(body);
        b.switch_to_block(exit);
        b.seal_block(exit);
    }
    for &t in &plan.after {
        let v = refs.apply(&mut b, &prog.instrs[t], |r, b| value(r, b, &mut vals));
        vals[base + t] = Some(v);
    }
    for &j in &plan.rest {
        let (a, p) = places[j];
        let v = value(prog.outputs[j], &mut b, &mut vals);
        b.ins().store(flags, v, out_ptr[a as usize], (8 * p) as i32);
    }
    b.ins().return_(&[]);
    b.finalize(tcfg);
    func
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::JitCode;
    use hamel_kernel::{Func, Instr};

    /// A chain of `n` links read from two arrays (`a`: three values per
    /// link, `b`: one): a recurrence through the links, a constant per link,
    /// calls and powers in the loop, outputs into a plain array and into one
    /// placed by `at`, constant outputs among them.
    fn chain(n: usize) -> (Program, [usize; 3], Vec<Option<u32>>, Vec<usize>) {
        let n_inputs = 2 + 3 * n + n;
        let consts: Vec<f64> = [0.5, 2.0]
            .into_iter()
            .chain((0..n).map(|k| 1.0 / (1.0 + k as f64)))
            .collect();
        let base = (n_inputs + consts.len()) as u32;
        let (a, b) = (
            |k: usize, c: usize| (2 + 3 * k + c) as u32,
            |k: usize| (2 + 3 * n + k) as u32,
        );
        let mut instrs = vec![Instr::Mul(0, 1)];
        let (mut first_out, mut second_out) = (Vec::new(), Vec::new());
        let mut prev = None;
        for k in 0..n {
            let push = |i: Instr, instrs: &mut Vec<Instr>| {
                instrs.push(i);
                base + instrs.len() as u32 - 1
            };
            let t1 = push(Instr::Mul(a(k, 0), base), &mut instrs);
            let t2 = push(Instr::Add(t1, prev.unwrap_or(b(k))), &mut instrs);
            let t3 = push(Instr::Call(Func::Sin, t2), &mut instrs);
            let t4 = push(Instr::Mul(t3, n_inputs as u32 + 2 + k as u32), &mut instrs);
            let t5 = push(Instr::Sub(t4, b(k)), &mut instrs);
            let t6 = push(Instr::Powi(t5, 2), &mut instrs);
            let t7 = push(Instr::Atan2(t6, a(k, 2)), &mut instrs);
            first_out.push(t7);
            second_out.extend([t2, n_inputs as u32, t6]);
            prev = Some(t2);
        }
        let outputs = first_out.into_iter().chain(second_out).collect();
        let at: Vec<usize> = (0..n).flat_map(|k| [3 * k + 1, 3 * k, 3 * k + 2]).collect();
        let member = (0..n_inputs)
            .map(|r| match r {
                0 | 1 => None,
                r if r < 2 + 3 * n => Some(((r - 2) / 3) as u32),
                r => Some((r - 2 - 3 * n) as u32),
            })
            .collect();
        let prog = Program {
            n_inputs,
            consts,
            instrs,
            outputs,
        };
        (prog, [2, 3 * n, n], member, at)
    }

    /// A forward sum over `n` links, every link's share of (most of) it, and a
    /// back substitution through the shares (`y_k = t_k + y_{k+1} / n`):
    /// three loops, the last backward, whose results come out reversed.
    #[test]
    fn loops_after_loops_and_backward_give_the_interpreter_s_bits() {
        let n = 30;
        let base = (n + 1) as u32;
        let mut instrs = Vec::new();
        let push = |i: Instr, instrs: &mut Vec<Instr>| {
            instrs.push(i);
            base + instrs.len() as u32 - 1
        };
        let mut s = Vec::new();
        for k in 0..n as u32 {
            let sq = push(Instr::Call(Func::Sin, k), &mut instrs);
            s.push(if k == 0 {
                sq
            } else {
                push(Instr::Add(s[k as usize - 1], sq), &mut instrs)
            });
        }
        // The sum up to the link before the last: a result of the first
        // loop, read by the second at a fixed slot.
        let t: Vec<u32> = (0..n as u32)
            .map(|k| push(Instr::Div(k, s[n - 2]), &mut instrs))
            .collect();
        let mut y = vec![t[n - 1]; n];
        for k in (0..n - 1).rev() {
            let part = push(Instr::Div(y[k + 1], n as u32), &mut instrs);
            y[k] = push(Instr::Add(t[k], part), &mut instrs);
        }
        let prog = Program {
            n_inputs: n + 1,
            consts: vec![],
            instrs,
            outputs: y,
        };
        let member: Vec<Option<u32>> = (0..=n).map(|r| (r < n).then_some(r as u32)).collect();
        let outs = [OutputArray { len: n, at: None }];
        let plan = Rolled::plan(&prog, &member, &output_places(&outs)).expect("loops");
        assert!(plan.loops.len() >= 2, "{} loops", plan.loops.len());
        let (code, _) =
            JitCode::compile_direct(&[(&prog, &[n + 1][..], &outs[..])], &[], &[Some(&plan)], false).expect("compiles");
        assert_eq!(code.loop_shapes(0).map(<[_]>::len), Some(plan.loops.len()));
        let inputs: Vec<f64> = (0..n).map(|k| 0.2 + 0.03 * k as f64).chain([n as f64]).collect();
        let mut got = vec![f64::NAN; n];
        code.call(0, &[&inputs], &mut got);
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&got), bits(&prog.eval(&inputs)));
    }

    #[test]
    fn a_rolled_program_gives_the_interpreter_s_bits() {
        for n in [5, 9, 40] {
            let (prog, arrays, member, at) = chain(n);
            let outs = [
                OutputArray { len: n, at: None },
                OutputArray {
                    len: 3 * n,
                    at: Some(&at),
                },
            ];
            let plan = Rolled::plan(&prog, &member, &output_places(&outs)).expect("a loop");
            assert_eq!((plan.loops[0].count, plan.loops[0].body.len()), (n - 1, 7), "n = {n}");
            let (code, _) = JitCode::compile_direct(&[(&prog, &arrays[..], &outs[..])], &[], &[Some(&plan)], false)
                .expect("compiles");
            assert_eq!(code.loop_shape(0), Some((n - 1, 7)));
            let inputs: Vec<f64> = (0..prog.n_inputs).map(|r| 0.9 - 0.013 * r as f64).collect();
            let (p, rest) = inputs.split_at(2);
            let (xa, xb) = rest.split_at(3 * n);
            let mut got = vec![f64::NAN; 4 * n];
            code.call(0, &[p, xa, xb], &mut got);
            let flat = prog.eval(&inputs);
            let mut want = vec![f64::NAN; 4 * n];
            want[..n].copy_from_slice(&flat[..n]);
            for (i, &pos) in at.iter().enumerate() {
                want[n + pos] = flat[n + i];
            }
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&got), bits(&want), "n = {n}");
        }
    }
}
