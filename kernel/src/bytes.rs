//! A [`Program`] as bytes and back: how a host keeps a derivation in a cache
//! file, and how derived code carries a long function it evaluates rather
//! than compiles (the Rust printer's functions above `DATA_ABOVE`). One format for both, so
//! that a program read back evaluates to the bits of the one written:
//! numbers are stored by their bits, counts as little-endian `u64`.

use crate::func::Func;
use crate::program::{Instr, Program};

impl Program {
    /// Appends the program's bytes to `out` (read by [`Program::read_bytes`]).
    pub fn write_bytes(&self, out: &mut Vec<u8>) {
        let u64 = |out: &mut Vec<u8>, x: u64| out.extend_from_slice(&x.to_le_bytes());
        u64(out, self.n_inputs as u64);
        u64(out, self.consts.len() as u64);
        for c in &self.consts {
            u64(out, c.to_bits());
        }
        u64(out, self.instrs.len() as u64);
        for i in &self.instrs {
            let (code, a, b) = match *i {
                Instr::Add(a, b) => (0, a, u64::from(b)),
                Instr::Sub(a, b) => (1, a, u64::from(b)),
                Instr::Mul(a, b) => (2, a, u64::from(b)),
                Instr::Div(a, b) => (3, a, u64::from(b)),
                Instr::Neg(a) => (4, a, 0),
                Instr::Sqrt(a) => (5, a, 0),
                Instr::Powi(a, n) => (6, a, u64::from(n as u32)),
                Instr::Powf(a, e) => (7, a, e.to_bits()),
                Instr::Pow(a, b) => (8, a, u64::from(b)),
                Instr::Call(f, a) => (
                    9,
                    a,
                    Func::ALL.iter().position(|&g| g == f).expect("every Func listed") as u64,
                ),
                Instr::Atan2(a, b) => (10, a, u64::from(b)),
            };
            out.push(code);
            out.extend_from_slice(&a.to_le_bytes());
            u64(out, b);
        }
        u64(out, self.outputs.len() as u64);
        for o in &self.outputs {
            out.extend_from_slice(&o.to_le_bytes());
        }
    }

    /// The program's bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.write_bytes(&mut out);
        out
    }

    /// Reads a program written by [`Program::write_bytes`] from `bytes` at
    /// `*at`, advancing `*at` past it. Fails on bytes cut short or corrupt,
    /// and on a program that would read a register before it is written or
    /// past its registers (which no evaluation could survive).
    pub fn read_bytes(bytes: &[u8], at: &mut usize) -> Result<Program, String> {
        let mut r = Reader { bytes, at: *at };
        let p = r.program()?;
        *at = r.at;
        Ok(p)
    }

    /// The program of exactly these bytes (see [`Program::read_bytes`]).
    pub fn from_bytes(bytes: &[u8]) -> Result<Program, String> {
        let mut at = 0;
        let p = Program::read_bytes(bytes, &mut at)?;
        if at != bytes.len() {
            return Err("bytes left after a program".into());
        }
        Ok(p)
    }
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], String> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.bytes.len());
        let end = end.ok_or("a program cut short")?;
        let s = &self.bytes[self.at..end];
        self.at = end;
        Ok(s)
    }
    fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().expect("8 bytes")))
    }
    fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().expect("4 bytes")))
    }
    /// A count of elements each at least `size` bytes long: one beyond what
    /// is left is corrupt (and would otherwise reserve without bound).
    fn count(&mut self, size: usize) -> Result<usize, String> {
        let n = usize::try_from(self.u64()?).map_err(|e| e.to_string())?;
        if n > (self.bytes.len() - self.at) / size {
            return Err("a program with a bad length".into());
        }
        Ok(n)
    }
    fn program(&mut self) -> Result<Program, String> {
        let n_inputs = usize::try_from(self.u64()?).map_err(|e| e.to_string())?;
        let consts = (0..self.count(8)?)
            .map(|_| self.u64().map(f64::from_bits))
            .collect::<Result<_, _>>()?;
        let instrs = (0..self.count(13)?).map(|_| self.instr()).collect::<Result<_, _>>()?;
        let outputs = (0..self.count(4)?).map(|_| self.u32()).collect::<Result<_, _>>()?;
        let p = Program {
            n_inputs,
            consts,
            instrs,
            outputs,
        };
        let base = (p.n_inputs as u64).checked_add(p.consts.len() as u64);
        let base = base.ok_or("a program with a bad length")?;
        for (k, i) in p.instrs.iter().enumerate() {
            let (ops, n) = i.operands();
            if ops[..n].iter().any(|&r| u64::from(r) >= base + k as u64) {
                return Err("a program with a bad operand".into());
            }
        }
        if p.outputs.iter().any(|&r| r as usize >= p.registers()) {
            return Err("a program with a bad output".into());
        }
        Ok(p)
    }
    fn instr(&mut self) -> Result<Instr, String> {
        let code = self.take(1)?[0];
        let a = self.u32()?;
        let b = self.u64()?;
        let reg = |b: u64| u32::try_from(b).map_err(|e| e.to_string());
        Ok(match code {
            0 => Instr::Add(a, reg(b)?),
            1 => Instr::Sub(a, reg(b)?),
            2 => Instr::Mul(a, reg(b)?),
            3 => Instr::Div(a, reg(b)?),
            4 => Instr::Neg(a),
            5 => Instr::Sqrt(a),
            6 => Instr::Powi(a, reg(b)? as i32),
            7 => Instr::Powf(a, f64::from_bits(b)),
            8 => Instr::Pow(a, reg(b)?),
            9 => Instr::Call(
                usize::try_from(b)
                    .ok()
                    .and_then(|i| Func::ALL.get(i).copied())
                    .ok_or_else(|| format!("unknown function code {b}"))?,
                a,
            ),
            10 => Instr::Atan2(a, reg(b)?),
            c => return Err(format!("unknown instruction code {c}")),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn every_instruction() -> Program {
        Program {
            n_inputs: 2,
            consts: vec![0.1, -0.0],
            instrs: vec![
                Instr::Add(0, 1),
                Instr::Sub(4, 2),
                Instr::Mul(5, 3),
                Instr::Div(6, 0),
                Instr::Neg(7),
                Instr::Sqrt(0),
                Instr::Powi(1, -3),
                Instr::Powf(0, 1.5),
                Instr::Pow(0, 1),
                Instr::Call(Func::Tanh, 1),
                Instr::Atan2(0, 1),
            ],
            outputs: vec![14, 3, 0, 12],
        }
    }

    #[test]
    fn a_program_read_back_is_the_one_written_and_evaluates_to_its_bits() {
        let p = every_instruction();
        let q = Program::from_bytes(&p.to_bytes()).expect("reads back");
        assert_eq!(p, q);
        let (a, b) = (p.eval(&[0.7, 1.3]), q.eval(&[0.7, 1.3]));
        assert_eq!(
            a.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
            b.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
        );
        // -0.0 keeps its sign: constants go by their bits.
        assert_eq!(q.consts[1].to_bits(), (-0.0f64).to_bits());
    }

    #[test]
    fn corrupt_bytes_are_refused_not_evaluated() {
        let bytes = every_instruction().to_bytes();
        // Every cut is refused, none panics.
        for n in 0..bytes.len() {
            assert!(Program::from_bytes(&bytes[..n]).is_err(), "cut at {n}");
        }
        // An operand that reads a register not yet written.
        let mut bad = every_instruction();
        bad.instrs[0] = Instr::Add(0, 4);
        assert_eq!(
            Program::from_bytes(&bad.to_bytes()),
            Err("a program with a bad operand".to_string())
        );
        // An output past the registers.
        let mut bad = every_instruction();
        bad.outputs[0] = 15;
        assert!(Program::from_bytes(&bad.to_bytes()).is_err());
        // Bytes after the program.
        let mut long = bytes.clone();
        long.push(0);
        assert!(Program::from_bytes(&long).is_err());
    }
}
