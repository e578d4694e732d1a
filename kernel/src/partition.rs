//! How a long program is cut into parts that pass values through a scratch
//! array: one rule for the Rust printer and the JIT.
//!
//! Both back-ends compile long programs as parts because their compile time
//! (rustc, cranelift's register allocation) grows faster than linearly with
//! the size of one function. Cutting changes where values live, never what is
//! computed: every part runs its instructions in program order, so a split
//! program gives the same bits as the whole one.

use std::ops::Range;

use crate::program::Program;

/// Who writes the outputs of a split program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outputs {
    /// A function that calls the parts and then reads every output from the
    /// scratch array (the Rust printer): every output computed by an
    /// instruction gets a slot.
    Caller,
    /// The last part (the JIT): only outputs computed by an earlier part get
    /// a slot.
    LastPart,
}

/// Consecutive parts of at most `part_len` instructions, and the scratch slot
/// of every result read outside the part that computes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Partition {
    /// instructions per part (the last part may hold fewer)
    pub part_len: usize,
    /// number of parts (at least 1)
    pub parts: usize,
    /// scratch slot of each instruction's result, where it crosses parts;
    /// slots are numbered in instruction order
    pub slot: Vec<Option<usize>>,
    /// number of scratch slots
    pub slots: usize,
}

impl Partition {
    /// Cuts `prog` into parts of `part_len` instructions (`part_len > 0`).
    pub fn new(prog: &Program, part_len: usize, outputs: Outputs) -> Self {
        assert!(part_len > 0, "a part holds at least one instruction");
        let n = prog.instrs.len();
        let parts = n.div_ceil(part_len).max(1);
        let base = prog.result_base();
        let mut escapes = vec![false; n];
        let mut read_by = |r: u32, reader: Option<usize>| {
            if let Some(i) = (r as usize).checked_sub(base) {
                if reader != Some(i / part_len) {
                    escapes[i] = true;
                }
            }
        };
        for (i, ins) in prog.instrs.iter().enumerate() {
            let (ops, k) = ins.operands();
            for &r in &ops[..k] {
                read_by(r, Some(i / part_len));
            }
        }
        let output_reader = match outputs {
            Outputs::Caller => None,
            Outputs::LastPart => Some(parts - 1),
        };
        for &o in &prog.outputs {
            read_by(o, output_reader);
        }
        let mut slots = 0;
        let slot = escapes
            .iter()
            .map(|&e| {
                e.then(|| {
                    slots += 1;
                    slots - 1
                })
            })
            .collect();
        Partition {
            part_len,
            parts,
            slot,
            slots,
        }
    }

    /// The part that runs instruction `i`.
    pub fn part_of(&self, i: usize) -> usize {
        i / self.part_len
    }

    /// The instructions of part `c`.
    pub fn range(&self, c: usize) -> Range<usize> {
        let n = self.slot.len();
        (c * self.part_len).min(n)..((c + 1) * self.part_len).min(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::program::Instr;

    /// Inputs `a, b` (registers 0, 1), no constants, results from register 2.
    fn prog(instrs: Vec<Instr>, outputs: Vec<u32>) -> Program {
        Program {
            n_inputs: 2,
            consts: vec![],
            instrs,
            outputs,
        }
    }

    #[test]
    fn parts_cover_the_program_in_order() {
        let p = prog((0..7).map(|_| Instr::Add(0, 1)).collect(), vec![]);
        let cut = Partition::new(&p, 3, Outputs::Caller);
        assert_eq!(cut.parts, 3);
        assert_eq!((0..3).map(|c| cut.range(c)).collect::<Vec<_>>(), [0..3, 3..6, 6..7]);
        assert!((0..7).all(|i| cut.range(cut.part_of(i)).contains(&i)));
        // Inputs are read by every part from the arguments: no slot.
        assert_eq!(cut.slots, 0);
        // An empty program is one (empty) part.
        assert_eq!(Partition::new(&prog(vec![], vec![]), 3, Outputs::LastPart).parts, 1);
    }

    #[test]
    fn results_read_elsewhere_get_slots_in_instruction_order() {
        // t0 = a+b, t1 = t0*a, t2 = t1-b | t3 = t0+t2, t4 = t3*t3 | t5 = t1/t4
        let p = prog(
            vec![
                Instr::Add(0, 1),
                Instr::Mul(2, 0),
                Instr::Sub(3, 1),
                Instr::Add(2, 4),
                Instr::Mul(5, 5),
                Instr::Div(3, 6),
            ],
            vec![7, 5, 1],
        );
        let caller = Partition::new(&p, 3, Outputs::Caller);
        // Parts [t0 t1 t2] [t3 t4 t5]: t0, t1, t2 are read by part 1; t3 and t5
        // are outputs; t4 is read only inside its part.
        assert_eq!(caller.slot, [Some(0), Some(1), Some(2), Some(3), None, Some(4)]);
        let last = Partition::new(&p, 2, Outputs::LastPart);
        // Parts [t0 t1] [t2 t3] [t4 t5]: t0 read by part 1, t1 by parts 1 and 2,
        // t3 by part 2 and as an output; t5 is written by the last part itself.
        assert_eq!(last.slot, [Some(0), Some(1), None, Some(2), None, None]);
        assert_eq!(last.slots, 3);
        // Read only inside its own part and not an output: no slot.
        let one = Partition::new(&p, 6, Outputs::LastPart);
        assert_eq!((one.parts, one.slots), (1, 0));
        assert_eq!(Partition::new(&p, 6, Outputs::Caller).slots, 2, "t3 and t5 are outputs");
    }
}
