//! Straight-line programs → register programs: the one linearization.
//!
//! Each tape instruction is lowered to binary operations, in the order Rust
//! would evaluate the expression (`a + b + c - d` left to right, `x^2` as
//! `x * x`, ...). Every back-end reads the result — the Rust printer
//! ([`super::rust`]), the interpreter and the JIT — so they agree to the bit by
//! construction.

pub use hamel_kernel::{Instr, Program};

use crate::sym::{Op, Operand, Tape};

struct Lowering {
    n_inputs: usize,
    consts: Vec<f64>,
    instrs: Vec<Instr>,
    /// register of each tape temporary
    temps: Vec<u32>,
    /// the register computing each instruction already emitted (value
    /// numbering: n-ary sums and products that share a prefix, such as
    /// `0.5 * h * a` and `0.5 * h * b`, compute it once)
    seen: std::collections::HashMap<(u8, u32, u64), u32>,
    /// how many products of the tape divide by each list of factors
    divisors: std::collections::HashMap<Vec<OperandKey>, u32>,
}

/// An operand, hashable.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum OperandKey {
    Input(usize),
    Const(u64),
    Temp(usize),
}

fn operand_keys(os: &[Operand]) -> Vec<OperandKey> {
    os.iter()
        .map(|o| match *o {
            Operand::Input(i) => OperandKey::Input(i),
            Operand::Const(c) => OperandKey::Const(c.to_bits()),
            Operand::Temp(t) => OperandKey::Temp(t),
        })
        .collect()
}

/// What identifies an instruction's value: the operation and its operands.
/// `a + b` and `b + a` (and likewise `*`) are the same number in IEEE
/// arithmetic, so their operands are ordered.
fn value_key(i: &Instr) -> (u8, u32, u64) {
    let ordered = |a: u32, b: u32| (a.min(b), u64::from(a.max(b)));
    match *i {
        Instr::Add(a, b) => {
            let (x, y) = ordered(a, b);
            (0, x, y)
        }
        Instr::Sub(a, b) => (1, a, u64::from(b)),
        Instr::Mul(a, b) => {
            let (x, y) = ordered(a, b);
            (2, x, y)
        }
        Instr::Div(a, b) => (3, a, u64::from(b)),
        Instr::Neg(a) => (4, a, 0),
        Instr::Sqrt(a) => (5, a, 0),
        Instr::Powi(a, n) => (6, a, n as u32 as u64),
        Instr::Powf(a, e) => (7, a, e.to_bits()),
        Instr::Pow(a, b) => (8, a, u64::from(b)),
        Instr::Call(f, a) => (9, a, f as u64),
        Instr::Atan2(a, b) => (10, a, u64::from(b)),
    }
}

impl Lowering {
    fn constant(&mut self, c: f64) -> u32 {
        let bits = c.to_bits();
        let k = match self.consts.iter().position(|x| x.to_bits() == bits) {
            Some(k) => k,
            None => {
                self.consts.push(c);
                self.consts.len() - 1
            }
        };
        (self.n_inputs + k) as u32
    }

    fn reg(&mut self, o: &Operand) -> u32 {
        match *o {
            Operand::Input(i) => i as u32,
            Operand::Const(c) => self.constant(c),
            Operand::Temp(t) => self.temps[t],
        }
    }

    fn push(&mut self, i: Instr) -> u32 {
        let key = value_key(&i);
        if let Some(&r) = self.seen.get(&key) {
            return r;
        }
        self.instrs.push(i);
        // Constants are appended while lowering, so result registers are
        // renumbered once all constants are known (see `finish`).
        let r = (RESULT_BASE + self.instrs.len() as u64 - 1) as u32;
        self.seen.insert(key, r);
        r
    }

    /// Left fold of `ops` with `f`, as Rust evaluates `a op b op c`.
    fn fold(&mut self, first: u32, rest: &[Operand], f: fn(u32, u32) -> Instr) -> u32 {
        let mut acc = first;
        for o in rest {
            let r = self.reg(o);
            acc = self.push(f(acc, r));
        }
        acc
    }

    fn op(&mut self, op: &Op) -> u32 {
        match op {
            Op::Sum { pos, neg } => {
                if let Some((first, rest)) = pos.split_first() {
                    let f = self.reg(first);
                    let acc = self.fold(f, rest, Instr::Add);
                    self.fold(acc, neg, Instr::Sub)
                } else if let Some((first, rest)) = neg.split_first() {
                    let f = self.reg(first);
                    let n = self.push(Instr::Neg(f));
                    self.fold(n, rest, Instr::Sub)
                } else {
                    self.constant(0.0)
                }
            }
            Op::Product { num, den } => {
                let n = match num.split_first() {
                    Some((first, rest)) => {
                        let f = self.reg(first);
                        self.fold(f, rest, Instr::Mul)
                    }
                    None => self.constant(1.0),
                };
                match den.split_first() {
                    None => n,
                    Some((first, rest)) => {
                        let f = self.reg(first);
                        let d = self.fold(f, rest, Instr::Mul);
                        // A divisor shared by several quotients is inverted
                        // once: a division costs several multiplications.
                        if self.divisors.get(&operand_keys(den)).is_some_and(|&k| k > 1) {
                            let one = self.constant(1.0);
                            let r = self.push(Instr::Div(one, d));
                            if n == one {
                                r
                            } else {
                                self.push(Instr::Mul(n, r))
                            }
                        } else {
                            self.push(Instr::Div(n, d))
                        }
                    }
                }
            }
            Op::Powi(a, n) => {
                let a = self.reg(a);
                match n {
                    2 => self.push(Instr::Mul(a, a)),
                    3 => {
                        let s = self.push(Instr::Mul(a, a));
                        self.push(Instr::Mul(s, a))
                    }
                    _ => self.push(Instr::Powi(a, *n)),
                }
            }
            Op::Sqrt(a) => {
                let a = self.reg(a);
                self.push(Instr::Sqrt(a))
            }
            Op::Powf(a, e) => {
                let a = self.reg(a);
                self.push(Instr::Powf(a, *e))
            }
            Op::Pow(a, b) => {
                let (a, b) = (self.reg(a), self.reg(b));
                self.push(Instr::Pow(a, b))
            }
            Op::Call(f, a) => {
                let a = self.reg(a);
                self.push(Instr::Call(*f, a))
            }
            Op::Atan2(y, x) => {
                let (y, x) = (self.reg(y), self.reg(x));
                self.push(Instr::Atan2(y, x))
            }
        }
    }
}

/// Result registers are numbered from this marker until the constants are
/// known; no program has this many inputs and constants.
const RESULT_BASE: u64 = 1 << 31;

/// Lowers a straight-line program.
pub fn lower(tape: &Tape) -> Program {
    let mut l = Lowering {
        n_inputs: tape.n_inputs,
        consts: Vec::new(),
        instrs: Vec::new(),
        temps: Vec::with_capacity(tape.ops.len()),
        seen: Default::default(),
        divisors: Default::default(),
    };
    for op in &tape.ops {
        if let Op::Product { den, .. } = op {
            if !den.is_empty() {
                *l.divisors.entry(operand_keys(den)).or_default() += 1;
            }
        }
    }
    for op in &tape.ops {
        let r = l.op(op);
        l.temps.push(r);
    }
    let outputs: Vec<u32> = tape.outputs.iter().map(|o| l.reg(o)).collect();
    let base = (l.n_inputs + l.consts.len()) as u32;
    let fix = |r: u32| {
        if u64::from(r) >= RESULT_BASE {
            (u64::from(r) - RESULT_BASE) as u32 + base
        } else {
            r
        }
    };
    let instrs = l
        .instrs
        .iter()
        .map(|i| match *i {
            Instr::Add(a, b) => Instr::Add(fix(a), fix(b)),
            Instr::Sub(a, b) => Instr::Sub(fix(a), fix(b)),
            Instr::Mul(a, b) => Instr::Mul(fix(a), fix(b)),
            Instr::Div(a, b) => Instr::Div(fix(a), fix(b)),
            Instr::Neg(a) => Instr::Neg(fix(a)),
            Instr::Sqrt(a) => Instr::Sqrt(fix(a)),
            Instr::Powi(a, n) => Instr::Powi(fix(a), n),
            Instr::Powf(a, e) => Instr::Powf(fix(a), e),
            Instr::Pow(a, b) => Instr::Pow(fix(a), fix(b)),
            Instr::Call(f, a) => Instr::Call(f, fix(a)),
            Instr::Atan2(a, b) => Instr::Atan2(fix(a), fix(b)),
        })
        .collect();
    Program {
        n_inputs: l.n_inputs,
        consts: l.consts,
        instrs,
        outputs: outputs.into_iter().map(fix).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sym::{Func, Graph};

    /// Quotients by one divisor share its reciprocal: one division, and the
    /// values those of the graph to round-off.
    #[test]
    fn shared_divisors_are_inverted_once() {
        let mut g = Graph::new();
        let x = g.symbol("x");
        let y = g.symbol("y");
        let z = g.symbol("z");
        let d = g.add2(y, z);
        let a = g.div(x, d);
        let s = g.call(Func::Sin, x);
        let b = g.div(s, d);
        let c = g.div(y, x);
        let outs = [a, b, c];
        let p = lower(&Tape::build(&mut g, &[x, y, z], &outs).unwrap());
        let divisions = p.instrs.iter().filter(|i| matches!(i, Instr::Div(..))).count();
        assert_eq!(divisions, 2, "{:?}", p.instrs);
        for args in [[0.4, 2.5, -1.0], [1.3, 0.7, 3.0]] {
            let pv = p.eval(&args);
            for k in 0..outs.len() {
                let gv = g.eval(outs[k], &|s| args[s as usize]);
                assert!(
                    (pv[k] - gv).abs() <= 4.0 * f64::EPSILON * gv.abs(),
                    "{k}: {} vs {gv}",
                    pv[k]
                );
            }
        }
    }

    #[test]
    fn agrees_with_the_graph() {
        let mut g = Graph::new();
        let x = g.symbol("x");
        let y = g.symbol("y");
        let xy = g.mul2(x, y);
        let s = g.call(Func::Sin, xy);
        let a = g.sub(s, y);
        let b = g.div(s, x);
        let c = g.sqrt(b);
        let x3 = g.powf(x, 3.0);
        let d = g.add(&[x3, c, y]);
        let m = g.neg(d);
        let e = g.powf(y, -2.0);
        let outs = [a, b, c, m, e, x];
        let t = Tape::build(&mut g, &[x, y], &outs).unwrap();
        let p = lower(&t);
        for args in [[0.4, 2.5], [1.3, 0.7], [2.0, 1e-3]] {
            let pv = p.eval(&args);
            for k in 0..outs.len() {
                let gv = g.eval(outs[k], &|s| args[s as usize]);
                assert!((pv[k] - gv).abs() <= 1e-14 * (1.0 + gv.abs()), "{k}: {} vs {gv}", pv[k]);
            }
        }
    }

    /// A recurrence kept as locals, `x_i = x_{i−1} + y_i²`, costs an
    /// operation or two per member where its substitution costs a sum over
    /// all members before it, and gives the same values.
    #[test]
    fn locals_keep_a_recurrence_linear() {
        let mut g = Graph::new();
        let n = 40;
        let ys: Vec<_> = (0..n).map(|i| g.symbol(&format!("y{i}"))).collect();
        let (mut locals, mut map) = (Vec::new(), crate::sym::SubstMap::default());
        let mut prev = g.constant(0.0);
        let mut outs = Vec::new();
        for (i, &y) in ys.iter().enumerate() {
            let x = g.symbol(&format!("x{i}"));
            let y2 = g.powf(y, 2.0);
            let def = g.add2(prev, y2);
            locals.push((x, def));
            let e = g.substitute(def, &map);
            map.insert(x, e);
            outs.push(x);
            prev = x;
        }
        let kept = Tape::build_with(&mut g, &ys, &locals, &outs).unwrap();
        let expanded: Vec<_> = outs.iter().map(|&x| map[&x]).collect();
        let flat = Tape::build(&mut g, &ys, &expanded).unwrap();
        // Operands read: a sum of i terms is one instruction of i operands.
        let operands = |t: &Tape| -> usize {
            t.ops
                .iter()
                .map(|op| match op {
                    crate::sym::Op::Sum { pos, neg } => pos.len() + neg.len(),
                    _ => 1,
                })
                .sum()
        };
        assert!(operands(&kept) <= 3 * n, "{} operands", operands(&kept));
        assert!(operands(&flat) > n * n / 2, "{} operands", operands(&flat));
        let (kept, flat) = (lower(&kept), lower(&flat));
        let args: Vec<f64> = (0..n).map(|i| 0.1 * i as f64 - 1.3).collect();
        let (a, b) = (kept.eval(&args), flat.eval(&args));
        for i in 0..n {
            assert!((a[i] - b[i]).abs() <= 1e-13 * b[i].abs(), "{i}: {} vs {}", a[i], b[i]);
        }
        assert!(
            Tape::build(&mut g, &ys, &outs).is_err(),
            "without its locals, x is unbound"
        );
    }
}
