//! Register programs: the one evaluation order of every hamel back-end.
//!
//! The compiler lowers each straight-line function to a [`Program`] of binary
//! register operations. The Rust printer (derive), the [`interpreter`](Program::eval_with)
//! and the JIT all read this one list in this one order, so the three give the
//! same numbers to the bit, not merely close ones.

use std::fmt;

use crate::dd::Dd;
use crate::func::Func;

/// One register operation; its result goes to the next register.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Instr {
    /// `a + b`
    Add(u32, u32),
    /// `a - b`
    Sub(u32, u32),
    /// `a * b`
    Mul(u32, u32),
    /// `a / b`
    Div(u32, u32),
    /// `-a`
    Neg(u32),
    /// `√a`
    Sqrt(u32),
    /// `a^n`, integer `n`
    Powi(u32, i32),
    /// `a^e`, numeric `e`
    Powf(u32, f64),
    /// `a^b`
    Pow(u32, u32),
    /// elementary function
    Call(Func, u32),
    /// `atan2(y, x)`, the angle of the point `(x, y)` (Rust's `f64::atan2`)
    Atan2(u32, u32),
}

impl Instr {
    /// The registers the instruction reads.
    pub fn operands(&self) -> ([u32; 2], usize) {
        match *self {
            Instr::Add(a, b)
            | Instr::Sub(a, b)
            | Instr::Mul(a, b)
            | Instr::Div(a, b)
            | Instr::Pow(a, b)
            | Instr::Atan2(a, b) => ([a, b], 2),
            Instr::Neg(a) | Instr::Sqrt(a) | Instr::Powi(a, _) | Instr::Powf(a, _) | Instr::Call(_, a) => ([a, 0], 1),
        }
    }
}

impl Instr {
    /// The instruction's result on the values `x` and `y` of its operands
    /// (`y` unread where it has one): the one arithmetic of every evaluation
    /// of a program in [`Value`]s.
    #[inline]
    pub fn apply<V: Value>(&self, x: V, y: V) -> V {
        match *self {
            Instr::Add(..) => x.add(y),
            Instr::Sub(..) => x.sub(y),
            Instr::Mul(..) => x.mul(y),
            Instr::Div(..) => x.div(y),
            Instr::Neg(_) => x.neg(),
            Instr::Sqrt(_) => x.sqrt(),
            Instr::Powi(_, n) => x.powi(n),
            Instr::Powf(_, e) => x.powf(e),
            Instr::Pow(..) => x.pow(y),
            Instr::Call(f, _) => x.call(f),
            Instr::Atan2(..) => x.atan2(y),
        }
    }
}

/// A program over registers laid out as `[inputs | constants | results]`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Program {
    /// number of input registers
    pub n_inputs: usize,
    /// constant registers, following the inputs
    pub consts: Vec<f64>,
    /// instructions; instruction `i` writes register `n_inputs + consts.len() + i`
    pub instrs: Vec<Instr>,
    /// register of each output
    pub outputs: Vec<u32>,
}

/// What a number type must do to run a program: the arithmetic of `f64`, or of
/// double-double for compensated runs (where elementary functions and real
/// powers act on the rounded value, as in the derived `*_dd` functions).
pub trait Value: Copy {
    /// An input or constant.
    fn from_f64(x: f64) -> Self;
    /// The nearest `f64`.
    fn to_f64(self) -> f64;
    /// `a + b`
    fn add(self, b: Self) -> Self;
    /// `a - b`
    fn sub(self, b: Self) -> Self;
    /// `a * b`
    fn mul(self, b: Self) -> Self;
    /// `a / b`
    fn div(self, b: Self) -> Self;
    /// `-a`
    fn neg(self) -> Self;
    /// `√a`
    fn sqrt(self) -> Self;
    /// `a^n`
    fn powi(self, n: i32) -> Self;
    /// `a^e`, numeric `e`
    fn powf(self, e: f64) -> Self;
    /// `a^b`
    fn pow(self, b: Self) -> Self;
    /// `f(a)`
    fn call(self, f: Func) -> Self;
    /// `atan2(self, x)`
    fn atan2(self, x: Self) -> Self;
}

impl Value for f64 {
    #[inline]
    fn from_f64(x: f64) -> f64 {
        x
    }
    #[inline]
    fn to_f64(self) -> f64 {
        self
    }
    #[inline]
    fn add(self, b: f64) -> f64 {
        self + b
    }
    #[inline]
    fn sub(self, b: f64) -> f64 {
        self - b
    }
    #[inline]
    fn mul(self, b: f64) -> f64 {
        self * b
    }
    #[inline]
    fn div(self, b: f64) -> f64 {
        self / b
    }
    #[inline]
    fn neg(self) -> f64 {
        -self
    }
    #[inline]
    fn sqrt(self) -> f64 {
        f64::sqrt(self)
    }
    #[inline]
    fn powi(self, n: i32) -> f64 {
        f64::powi(self, n)
    }
    #[inline]
    fn powf(self, e: f64) -> f64 {
        f64::powf(self, e)
    }
    #[inline]
    fn pow(self, b: f64) -> f64 {
        f64::powf(self, b)
    }
    #[inline]
    fn call(self, f: Func) -> f64 {
        f.apply(self)
    }
    #[inline]
    fn atan2(self, x: f64) -> f64 {
        f64::atan2(self, x)
    }
}

impl Value for Dd {
    #[inline]
    fn from_f64(x: f64) -> Dd {
        Dd::from(x)
    }
    #[inline]
    fn to_f64(self) -> f64 {
        Dd::to_f64(self)
    }
    #[inline]
    fn add(self, b: Dd) -> Dd {
        self + b
    }
    #[inline]
    fn sub(self, b: Dd) -> Dd {
        self - b
    }
    #[inline]
    fn mul(self, b: Dd) -> Dd {
        self * b
    }
    #[inline]
    fn div(self, b: Dd) -> Dd {
        self / b
    }
    #[inline]
    fn neg(self) -> Dd {
        -self
    }
    #[inline]
    fn sqrt(self) -> Dd {
        Dd::sqrt(self)
    }
    #[inline]
    fn powi(self, n: i32) -> Dd {
        Dd::powi(self, n)
    }
    #[inline]
    fn powf(self, e: f64) -> Dd {
        self.map(|v| v.powf(e))
    }
    #[inline]
    fn pow(self, b: Dd) -> Dd {
        Dd::from(Dd::to_f64(self).powf(Dd::to_f64(b)))
    }
    #[inline]
    fn call(self, f: Func) -> Dd {
        self.map(|v| f.apply(v))
    }
    #[inline]
    fn atan2(self, x: Dd) -> Dd {
        Dd::from(f64::atan2(Dd::to_f64(self), Dd::to_f64(x)))
    }
}

impl Program {
    /// Number of registers the program uses.
    pub fn registers(&self) -> usize {
        self.n_inputs + self.consts.len() + self.instrs.len()
    }

    /// First result register.
    pub fn result_base(&self) -> usize {
        self.n_inputs + self.consts.len()
    }

    /// Evaluates the program in any [`Value`] arithmetic: `inputs` fills the
    /// input registers (all input arrays concatenated), `regs` is scratch space
    /// reused across calls, and each output is rounded to `f64` into `out`.
    pub fn eval_with<V: Value>(&self, inputs: impl IntoIterator<Item = V>, regs: &mut Vec<V>, out: &mut [f64]) {
        regs.clear();
        regs.reserve(self.registers());
        regs.extend(inputs);
        debug_assert_eq!(regs.len(), self.n_inputs);
        regs.extend(self.consts.iter().map(|&c| V::from_f64(c)));
        for i in &self.instrs {
            let (ops, k) = i.operands();
            let x = regs[ops[0] as usize];
            let y = if k == 2 { regs[ops[1] as usize] } else { x };
            regs.push(i.apply(x, y));
        }
        for (o, &k) in out.iter_mut().zip(&self.outputs) {
            *o = regs[k as usize].to_f64();
        }
    }

    /// Evaluates the program in `f64` on `inputs` (all input arrays concatenated).
    pub fn eval_into(&self, inputs: &[f64], regs: &mut Vec<f64>, out: &mut [f64]) {
        debug_assert_eq!(inputs.len(), self.n_inputs);
        self.eval_with(inputs.iter().copied(), regs, out);
    }

    /// Evaluates the program in `f64` into a new vector.
    pub fn eval(&self, inputs: &[f64]) -> Vec<f64> {
        let mut out = vec![0.0; self.outputs.len()];
        self.eval_into(inputs, &mut Vec::new(), &mut out);
        out
    }
}

/// The program as a listing, one register per line (`r5 = r0 * r3`): what the
/// snapshot tests keep, so that a change of evaluation order shows in review.
impl fmt::Display for Program {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.n_inputs {
            0 => writeln!(f, "no inputs")?,
            n => writeln!(f, "inputs r0..=r{}", n - 1)?,
        }
        for (k, c) in self.consts.iter().enumerate() {
            writeln!(f, "r{} = {c:?}", self.n_inputs + k)?;
        }
        let base = self.result_base();
        for (k, i) in self.instrs.iter().enumerate() {
            let rhs = match *i {
                Instr::Add(a, b) => format!("r{a} + r{b}"),
                Instr::Sub(a, b) => format!("r{a} - r{b}"),
                Instr::Mul(a, b) => format!("r{a} * r{b}"),
                Instr::Div(a, b) => format!("r{a} / r{b}"),
                Instr::Neg(a) => format!("-r{a}"),
                Instr::Sqrt(a) => format!("sqrt(r{a})"),
                Instr::Powi(a, n) => format!("powi(r{a}, {n})"),
                Instr::Powf(a, e) => format!("powf(r{a}, {e:?})"),
                Instr::Pow(a, b) => format!("powf(r{a}, r{b})"),
                Instr::Call(fu, a) => format!("{}(r{a})", fu.name()),
                Instr::Atan2(a, b) => format!("atan2(r{a}, r{b})"),
            };
            writeln!(f, "r{} = {rhs}", base + k)?;
        }
        let outs: Vec<String> = self.outputs.iter().map(|o| format!("r{o}")).collect();
        writeln!(f, "outputs {}", outs.join(", "))
    }
}
