//! The start of a Newton solve as one program: the predictor, the
//! correction of its guess by the extrapolated error, and the residual and
//! Jacobian at the corrected guess (what
//! [`hamel_runtime::Kernels::predict_residual_jacobian`] computes), so that
//! the JIT runs them in one call where a small model's step pays for every
//! call (see [`hamel_runtime::native`]).

use hamel_kernel::{Instr, Program};
use hamel_runtime::native::{StartArray, START_TABLE};

use crate::evaluator::Slot;

/// The start program and the lengths of its argument arrays: the arrays of
/// [`START_TABLE`] in that order, then `h` and the last solution `w`. Its
/// outputs are the corrected guess `x`, the raw guess `p` and the error
/// `w − g` (`nx` values each), then the residual-and-Jacobian program's
/// outputs at `x`. `None` where the two programs read arrays other than
/// `p`, `e`, `z`, `h` and the unknowns (`w` the predictor, `x` the
/// residual), or read one at two lengths, or the predictor does not give
/// `nx` values.
pub(crate) fn start_program(
    predict: (&Program, &[(Slot, usize)]),
    residual_jacobian: (&Program, &[(Slot, usize)]),
    nx: usize,
) -> Option<(Program, Vec<usize>)> {
    let (pp, p_in) = predict;
    let (rj, rj_in) = residual_jacobian;
    if pp.outputs.len() != nx {
        return None;
    }
    // The length of each array the two read, one length each.
    let len = |s: Slot| -> Option<usize> {
        let mut found = None;
        for &(t, n) in p_in.iter().chain(rj_in) {
            if t == s {
                if found.is_some_and(|m| m != n) {
                    return None;
                }
                found = Some(n);
            }
        }
        Some(found.unwrap_or(0))
    };
    let (np, ne, nz) = (len(Slot::P)?, len(Slot::E)?, len(Slot::Z)?);
    let read_ok = |ins: &[(Slot, usize)], unknowns: Slot| {
        ins.iter().all(|&(s, n)| match s {
            Slot::P | Slot::E | Slot::Z => true,
            Slot::H => n == 1,
            s if s == unknowns => n == nx,
            _ => false,
        })
    };
    if !read_ok(p_in, Slot::W) || !read_ok(rj_in, Slot::X) {
        return None;
    }
    // The arrays, in the order of the table, then h and w.
    let mut arrays: Vec<usize> = START_TABLE
        .iter()
        .map(|a| match a {
            StartArray::P => np,
            StartArray::E => ne,
            StartArray::Z => nz,
            StartArray::Guess | StartArray::Error | StartArray::Error2 => nx,
            StartArray::Weights => 3,
        })
        .collect();
    arrays.extend([1, nx]);
    let first = |a: usize| arrays[..a].iter().sum::<usize>() as u32;
    let at = |a: StartArray| first(START_TABLE.iter().position(|&b| b == a).unwrap_or(0));
    let (h_at, w_at) = (first(START_TABLE.len()), first(START_TABLE.len() + 1));
    let n_inputs = arrays.iter().sum::<usize>();
    let consts: Vec<f64> = pp.consts.iter().chain(&rj.consts).copied().collect();
    let base = (n_inputs + consts.len()) as u32;
    // Where each input of a program lives in the start program (`x`: the
    // corrected guess, set once it is computed).
    let slot_at = |s: Slot| -> u32 {
        match s {
            Slot::P => at(StartArray::P),
            Slot::E => at(StartArray::E),
            Slot::Z => at(StartArray::Z),
            Slot::H => h_at,
            _ => w_at,
        }
    };
    let mut instrs: Vec<Instr> = Vec::with_capacity(pp.instrs.len() + 7 * nx + rj.instrs.len());
    // The predictor: its registers moved to the start program's.
    let p_map = |r: u32| -> u32 {
        let r = r as usize;
        if r < pp.n_inputs {
            let (s, i) = locate(p_in, r);
            slot_at(s) + i
        } else if r < pp.result_base() {
            (n_inputs + r - pp.n_inputs) as u32
        } else {
            base + (r - pp.result_base()) as u32
        }
    };
    instrs.extend(pp.instrs.iter().map(|&i| remap(i, p_map)));
    let guess: Vec<u32> = pp.outputs.iter().map(|&r| p_map(r)).collect();
    // The correction, in the order `extrapolate` computes it:
    // x = p + ((a err − b d) + c d2), err = w − g.
    let next = |instrs: &Vec<Instr>| base + instrs.len() as u32;
    let weight = |k: u32| at(StartArray::Weights) + k;
    let mut x = Vec::with_capacity(nx);
    let mut err = Vec::with_capacity(nx);
    for (i, &p) in guess.iter().enumerate() {
        let i = i as u32;
        let e = next(&instrs);
        instrs.push(Instr::Sub(w_at + i, at(StartArray::Guess) + i));
        instrs.push(Instr::Mul(weight(0), e));
        instrs.push(Instr::Mul(weight(1), at(StartArray::Error) + i));
        instrs.push(Instr::Sub(e + 1, e + 2));
        instrs.push(Instr::Mul(weight(2), at(StartArray::Error2) + i));
        instrs.push(Instr::Add(e + 3, e + 4));
        instrs.push(Instr::Add(p, e + 5));
        err.push(e);
        x.push(e + 6);
    }
    // The residual and Jacobian at the corrected guess.
    let offset = base + instrs.len() as u32;
    let rj_map = |r: u32| -> u32 {
        let r = r as usize;
        if r < rj.n_inputs {
            match locate(rj_in, r) {
                (Slot::X, i) => x[i as usize],
                (s, i) => slot_at(s) + i,
            }
        } else if r < rj.result_base() {
            (n_inputs + pp.consts.len() + r - rj.n_inputs) as u32
        } else {
            offset + (r - rj.result_base()) as u32
        }
    };
    instrs.extend(rj.instrs.iter().map(|&i| remap(i, rj_map)));
    let mut outputs = x.clone();
    outputs.extend(&guess);
    outputs.extend(&err);
    outputs.extend(rj.outputs.iter().map(|&r| rj_map(r)));
    let program = Program {
        n_inputs,
        consts,
        instrs,
        outputs,
    };
    Some((program, arrays))
}

/// The array holding input register `r` of a program reading `inputs`, and
/// the offset in it.
fn locate(inputs: &[(Slot, usize)], r: usize) -> (Slot, u32) {
    let mut first = 0;
    for &(s, n) in inputs {
        if r < first + n {
            return (s, (r - first) as u32);
        }
        first += n;
    }
    // Not reached: every input register lies in an array.
    (Slot::P, 0)
}

/// `i` reading the registers `map` gives for its own.
fn remap(i: Instr, map: impl Fn(u32) -> u32) -> Instr {
    match i {
        Instr::Add(a, b) => Instr::Add(map(a), map(b)),
        Instr::Sub(a, b) => Instr::Sub(map(a), map(b)),
        Instr::Mul(a, b) => Instr::Mul(map(a), map(b)),
        Instr::Div(a, b) => Instr::Div(map(a), map(b)),
        Instr::Neg(a) => Instr::Neg(map(a)),
        Instr::Sqrt(a) => Instr::Sqrt(map(a)),
        Instr::Powi(a, n) => Instr::Powi(map(a), n),
        Instr::Powf(a, e) => Instr::Powf(map(a), e),
        Instr::Pow(a, b) => Instr::Pow(map(a), map(b)),
        Instr::Call(f, a) => Instr::Call(f, map(a)),
        Instr::Atan2(a, b) => Instr::Atan2(map(a), map(b)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{compile, read_model, Backend};
    use hamel_kernel::Kernel;

    /// Values that exercise every operation: distinct, of both signs, none
    /// special.
    fn values(n: usize, seed: f64) -> Vec<f64> {
        (0..n).map(|i| ((i as f64 + seed) * 0.731).sin() * 0.9 + 0.05).collect()
    }

    /// The start program gives what the predictor, the correction
    /// `extrapolate` applies and the residual-and-Jacobian kernel give one
    /// after another, to the bit, for every set of weights.
    #[test]
    fn the_start_program_is_its_three_parts_in_order() {
        for (model, scheme) in [
            ("spherical_pendulum", "hamel_averaged"),
            ("double_spherical_pendulum", "hamel_averaged"),
            ("double_spherical_pendulum_cartesian", "stormer_verlet"),
        ] {
            let path = format!("{}/../models/{model}.hamel", env!("CARGO_MANIFEST_DIR"));
            let m = read_model(path.as_ref(), &[]).unwrap();
            let sys = compile(&m, scheme.parse().unwrap(), Backend::Interpreter).unwrap();
            let step = sys.compiled();
            let nx = step.unknowns.len();
            let (p, rj) = (
                step.function(Kernel::Predict).unwrap(),
                step.function(Kernel::ResidualJacobian).unwrap(),
            );
            let (start, arrays) =
                start_program((&p.program, &p.inputs), (&rj.program, &rj.inputs), nx).expect("composed");
            // The arrays' values: the table's, then h and w.
            let vals: Vec<Vec<f64>> = arrays.iter().enumerate().map(|(k, &n)| values(n, k as f64)).collect();
            let of = |a: StartArray| &vals[START_TABLE.iter().position(|&b| b == a).unwrap()];
            let slot = |s: Slot| -> &[f64] {
                match s {
                    Slot::P => of(StartArray::P),
                    Slot::E => of(StartArray::E),
                    Slot::Z => of(StartArray::Z),
                    Slot::H => &vals[START_TABLE.len()],
                    _ => &vals[START_TABLE.len() + 1],
                }
            };
            let inputs = |ins: &[(Slot, usize)], x: &[f64]| -> Vec<f64> {
                ins.iter()
                    .flat_map(|&(s, _)| if s == Slot::X { x.to_vec() } else { slot(s).to_vec() })
                    .collect()
            };
            for weights in [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [2.0, 1.0, 0.0], [3.0, 3.0, 1.0]] {
                let mut vals = vals.clone();
                vals[START_TABLE.iter().position(|&b| b == StartArray::Weights).unwrap()] = weights.to_vec();
                let all: Vec<f64> = vals.iter().flatten().copied().collect();
                let got = start.eval(&all);
                // The three parts, one after another.
                let w = &vals[START_TABLE.len() + 1];
                let guess = p.program.eval(&inputs(&p.inputs, w));
                let [a, b, c] = weights;
                let (g, d, d2) = (of(StartArray::Guess), of(StartArray::Error), of(StartArray::Error2));
                let err: Vec<f64> = (0..nx).map(|i| w[i] - g[i]).collect();
                let x: Vec<f64> = (0..nx)
                    .map(|i| guess[i] + (a * err[i] - b * d[i] + c * d2[i]))
                    .collect();
                let mut want = x.clone();
                want.extend(&guess);
                want.extend(&err);
                want.extend(rj.program.eval(&inputs(&rj.inputs, &x)));
                let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&got), bits(&want), "{model} {scheme}, weights {weights:?}");
            }
        }
    }
}
