//! Linearization of a DAG into a straight-line program (the CSE'd form every
//! back-end consumes), and its f64 evaluation.
//!
//! Each distinct node reachable from the outputs becomes one instruction, in
//! dependency order. Signs and reciprocals are folded into instructions
//! (`a - b`, `a / b`) instead of `(-1)*b` and `b^-1`, since that is what the
//! generated code should compute.

use rustc_hash::FxHashMap as HashMap;

use super::graph::{Func, Graph, Id, Node};

/// An argument of an instruction.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Operand {
    /// Input slot `i` of the program.
    Input(usize),
    /// A number.
    Const(f64),
    /// Result of instruction `i`.
    Temp(usize),
}

/// One instruction; its result is the next temporary.
#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    /// `pos[0] + pos[1] + ... - neg[0] - neg[1] - ...`
    Sum {
        /// terms added
        pos: Vec<Operand>,
        /// terms subtracted
        neg: Vec<Operand>,
    },
    /// `(num[0] * num[1] * ...) / (den[0] * den[1] * ...)`
    Product {
        /// factors in the numerator
        num: Vec<Operand>,
        /// factors in the denominator
        den: Vec<Operand>,
    },
    /// integer power
    Powi(Operand, i32),
    /// square root
    Sqrt(Operand),
    /// real power with a numeric exponent
    Powf(Operand, f64),
    /// real power with a computed exponent
    Pow(Operand, Operand),
    /// elementary function
    Call(Func, Operand),
    /// `atan2(y, x)`
    Atan2(Operand, Operand),
}

/// A straight-line program: inputs, instructions, outputs.
#[derive(Clone, Debug, Default)]
pub struct Tape {
    /// Number of input slots.
    pub n_inputs: usize,
    /// Instructions in evaluation order.
    pub ops: Vec<Op>,
    /// Where each output's value is found.
    pub outputs: Vec<Operand>,
}

/// A symbol that an expression uses but the program has no input for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnboundSymbol(pub String);

struct Builder<'a> {
    g: &'a mut Graph,
    inputs: HashMap<Id, usize>,
    /// symbols computed from their definitions (see `Function::locals`)
    locals: HashMap<Id, Id>,
    memo: HashMap<Id, Operand>,
    ops: Vec<Op>,
}

impl Builder<'_> {
    fn operand(&mut self, id: Id) -> Result<Operand, UnboundSymbol> {
        if let Some(&o) = self.memo.get(&id) {
            return Ok(o);
        }
        let op = match self.g.node(id).clone() {
            Node::Const(bits) => return Ok(Operand::Const(f64::from_bits(bits))),
            Node::Sym(s) => {
                if let Some(&i) = self.inputs.get(&id) {
                    return Ok(Operand::Input(i));
                }
                let Some(&def) = self.locals.get(&id) else {
                    return Err(UnboundSymbol(self.g.symbol_name(s).to_string()));
                };
                // A local is its definition's value, computed once.
                let o = self.operand(def)?;
                self.memo.insert(id, o);
                return Ok(o);
            }
            Node::Add(ts) => {
                let (mut pos, mut neg) = (Vec::new(), Vec::new());
                for &t in ts.iter() {
                    match self.negated(t) {
                        Some(p) => neg.push(self.operand(p)?),
                        None => pos.push(self.operand(t)?),
                    }
                }
                Op::Sum { pos, neg }
            }
            Node::Mul(fs) => {
                let (mut num, mut den) = (Vec::new(), Vec::new());
                for &f in fs.iter() {
                    match self.reciprocal(f) {
                        Some(p) => den.push(self.operand(p)?),
                        None => num.push(self.operand(f)?),
                    }
                }
                Op::Product { num, den }
            }
            Node::Pow(b, e) => {
                let bo = self.operand(b)?;
                match self.g.as_const(e) {
                    Some(0.5) => Op::Sqrt(bo),
                    Some(n) if n.fract() == 0.0 && n.abs() <= 64.0 => Op::Powi(bo, n as i32),
                    Some(n) if n < 0.0 => {
                        // Only reached for a bare reciprocal power: 1 / b^|n|.
                        let p = self.g.powf(b, -n);
                        let po = self.operand(p)?;
                        Op::Product {
                            num: vec![Operand::Const(1.0)],
                            den: vec![po],
                        }
                    }
                    Some(n) => Op::Powf(bo, n),
                    None => Op::Pow(bo, self.operand(e)?),
                }
            }
            Node::Call(f, a) => Op::Call(f, self.operand(a)?),
            Node::Atan2(y, x) => Op::Atan2(self.operand(y)?, self.operand(x)?),
        };
        let o = Operand::Temp(self.ops.len());
        self.ops.push(op);
        self.memo.insert(id, o);
        Ok(o)
    }

    /// For a term `-c * m` (c > 0), the node `c * m`.
    fn negated(&mut self, t: Id) -> Option<Id> {
        match self.g.node(t).clone() {
            Node::Const(bits) if f64::from_bits(bits) < 0.0 => Some(self.g.constant(-f64::from_bits(bits))),
            Node::Mul(fs) => {
                let c = self.g.as_const(fs[0])?;
                if c >= 0.0 {
                    return None;
                }
                let k = self.g.constant(-c);
                let mut v = fs.to_vec();
                v[0] = k;
                Some(self.g.mul(&v))
            }
            _ => None,
        }
    }

    /// For a factor `b^-n` (n > 0), the node `b^n`.
    fn reciprocal(&mut self, f: Id) -> Option<Id> {
        if let Node::Pow(b, e) = self.g.node(f).clone() {
            let n = self.g.as_const(e)?;
            if n < 0.0 {
                return Some(self.g.powf(b, -n));
            }
        }
        None
    }
}

impl Tape {
    /// Linearizes `outputs`, reading symbol `inputs[i]` from input slot `i`.
    pub fn build(g: &mut Graph, inputs: &[Id], outputs: &[Id]) -> Result<Tape, UnboundSymbol> {
        Tape::build_with(g, inputs, &[], outputs)
    }

    /// [`Tape::build`] where the symbols of `locals` are computed from
    /// their definitions, `(symbol, definition)`, wherever an output reads
    /// them (a definition reads inputs and other locals).
    pub fn build_with(
        g: &mut Graph,
        inputs: &[Id],
        locals: &[(Id, Id)],
        outputs: &[Id],
    ) -> Result<Tape, UnboundSymbol> {
        let mut b = Builder {
            g,
            inputs: inputs.iter().enumerate().map(|(i, &s)| (s, i)).collect(),
            locals: locals.iter().copied().collect(),
            memo: HashMap::default(),
            ops: Vec::new(),
        };
        let outs = outputs.iter().map(|&o| b.operand(o)).collect::<Result<Vec<_>, _>>()?;
        Ok(Tape {
            n_inputs: inputs.len(),
            ops: b.ops,
            outputs: outs,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tape_agrees_with_graph_and_shares_nodes() {
        let mut g = Graph::new();
        let x = g.symbol("x");
        let y = g.symbol("y");
        let xy = g.mul2(x, y);
        let s = g.call(Func::Sin, xy);
        let a = g.sub(s, y);
        let b = g.div(s, x);
        let c = g.sqrt(b);
        let outs = [a, b, c];
        let t = Tape::build(&mut g, &[x, y], &outs).unwrap();
        // sin(x y) appears in all three outputs but is computed once
        let sins = t.ops.iter().filter(|o| matches!(o, Op::Call(Func::Sin, _))).count();
        assert_eq!(sins, 1);
    }

    #[test]
    fn unbound_symbol_is_reported() {
        let mut g = Graph::new();
        let x = g.symbol("x");
        let y = g.symbol("y");
        let e = g.add2(x, y);
        assert_eq!(Tape::build(&mut g, &[x], &[e]).unwrap_err(), UnboundSymbol("y".into()));
    }
}
