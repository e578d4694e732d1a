//! Programs that repeat themselves, run as a loop: one plan for every
//! back-end that wants one.
//!
//! A chain's kernels compute, for every link, the same instructions on that
//! link's inputs (and a few of its neighbours' results): a few hundred
//! instructions per link of the director chain's residual and Jacobian.
//! Written out, that is straight-line machine code that grows with N, which
//! the step reads from memory once per call; as a loop it is one copy. A
//! [`Rolled`] plan finds the copies from the program alone, given which
//! member of the family (which link) each input belongs to, and proves them
//! copies: every instruction of the loop's every iteration is the
//! program's own instruction, with the same operation on the same
//! registers, so that a back-end running the plan computes the program's
//! numbers to the bit, only in another order.
//!
//! The plan: instructions `before` the loop (those that do not read its
//! results), `count` iterations of the loop's `body`, instructions `after`
//! it; values cross from one part to another through a scratch array of
//! [`Rolled::scratch_len`] values. A loop runs forward over the members, or
//! backward where each reads the results of the members after it.
//!
//! What the first loop leaves after it can hold further sweeps over the
//! links: a banded solve's back substitution, or every link's terms that
//! read a sum over all links (which the first loop computes, so they belong
//! to the last link by the rule above). Those instructions are planned
//! again, each belonging now to the *lowest* member it reads, into a second
//! loop, and so on ([`MAX_LOOPS`]).

use std::collections::HashMap;

use crate::program::{Instr, Program};

/// Fewest iterations worth a loop.
pub const MIN_COUNT: usize = 4;

/// Most loops in one plan.
pub const MAX_LOOPS: usize = 4;

/// Fewest instructions left after a loop worth planning another over.
const MIN_SWEEP: usize = 64;

/// How many iterations back the loop's body reads results through its
/// scratch arrays at most (a chain's links read their neighbours', the
/// maximal-coordinate chain's multipliers the link before's and the one
/// before that).
const REACH: usize = 3;

/// What an operand of the loop's body reads, at iteration `i` (from 0).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Operand {
    /// the result of body instruction `q` of the same iteration
    Local(u32),
    /// scratch value `at + i`
    Scratch {
        /// its slot at iteration 0
        at: usize,
    },
    /// input register `first + stride · i`
    Input {
        /// the register at iteration 0
        first: u32,
        /// registers from one iteration to the next
        stride: i64,
    },
    /// the same register at every iteration: an input, a constant or a
    /// result computed before the loop
    Fixed(u32),
    /// scratch value `at + stride · i`, where an earlier loop saved the
    /// result read (its own iteration's, in a chain of sweeps)
    Earlier {
        /// its slot at iteration 0
        at: usize,
        /// slots from one iteration to the next
        stride: i64,
    },
}

/// One instruction of the loop's body.
#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    /// the operation (its operand registers are one iteration's: only its
    /// kind and constant arguments are for reading)
    pub instr: Instr,
    /// what its operands read (as many as the instruction has)
    pub operands: Vec<Operand>,
    /// scratch slots (at iteration 0; `+ i` at iteration `i`) its result is
    /// stored into
    pub saves: Vec<usize>,
    /// outputs it writes: (output array, position at iteration 0,
    /// positions from one iteration to the next)
    pub outputs: Vec<(u32, usize, i64)>,
}

/// One loop of a plan, with the straight-line instructions run before it.
#[derive(Clone, Debug, PartialEq)]
pub struct Loop {
    /// instructions run before the loop, in program order
    pub before: Vec<usize>,
    /// registers stored into scratch before the loop: (register, slot)
    pub stores: Vec<(u32, usize)>,
    /// iterations of the loop
    pub count: usize,
    /// the loop's body
    pub body: Vec<Step>,
}

/// A program as straight-line parts around loops (see the module): each
/// loop's `before`, the loop, then the next; `after` the last.
#[derive(Clone, Debug, PartialEq)]
pub struct Rolled {
    /// the loops in the order they run (at least one)
    pub loops: Vec<Loop>,
    /// instructions run after the last loop, in program order
    pub after: Vec<usize>,
    /// registers computed by a loop and read after it: their scratch slot
    pub saved: HashMap<u32, usize>,
    /// the program's outputs no loop writes, by index
    pub rest: Vec<usize>,
    /// scratch values the plan needs
    pub scratch_len: usize,
}

/// The members a loop runs over, `lo..hi`, and in which direction.
#[derive(Clone, Copy)]
struct Links {
    lo: usize,
    hi: usize,
    backward: bool,
}

impl Links {
    /// The member of iteration `i`.
    fn member(self, i: usize) -> usize {
        if self.backward {
            self.hi - 1 - i
        } else {
            self.lo + i
        }
    }

    /// The iteration of member `m` (in the loop).
    fn iteration(self, m: u32) -> usize {
        if self.backward {
            self.hi - 1 - m as usize
        } else {
            m as usize - self.lo
        }
    }

    /// How many iterations before member `reader`'s member `read`'s runs
    /// (`None`: after it).
    fn distance(self, reader: u32, read: u32) -> Option<u32> {
        if self.backward {
            read.checked_sub(reader)
        } else {
            reader.checked_sub(read)
        }
    }
}

/// A loop planned over part of a program, and what it leaves.
struct Stage {
    lp: Loop,
    after: Vec<usize>,
    saved: HashMap<u32, usize>,
    rest: Vec<usize>,
    scratch_len: usize,
}

/// The member of the family each instruction's result belongs to: the
/// highest member among the inputs it reads, through its operands (`None`:
/// no member's).
fn members(prog: &Program, input_member: &[Option<u32>]) -> Vec<Option<u32>> {
    let base = prog.result_base();
    let mut member: Vec<Option<u32>> = Vec::with_capacity(prog.instrs.len());
    for ins in &prog.instrs {
        let (ops, k) = ins.operands();
        let m = ops[..k]
            .iter()
            .map(|&r| {
                let r = r as usize;
                if r >= base {
                    member[r - base]
                } else if r < prog.n_inputs {
                    input_member[r]
                } else {
                    None
                }
            })
            .max()
            .flatten();
        member.push(m);
    }
    member
}

/// For the instructions of `scope` (ascending), the lowest member among
/// what each reads: inputs by `input_member`, results outside `scope` by
/// `outer`, results in it by this rule; `None` outside `scope`.
fn lowest_members(
    prog: &Program,
    input_member: &[Option<u32>],
    scope: &[usize],
    outer: &[Option<u32>],
) -> Vec<Option<u32>> {
    let base = prog.result_base();
    let mut inside = vec![false; prog.instrs.len()];
    for &t in scope {
        inside[t] = true;
    }
    let mut member: Vec<Option<u32>> = vec![None; prog.instrs.len()];
    for &t in scope {
        let (ops, k) = prog.instrs[t].operands();
        member[t] = ops[..k]
            .iter()
            .filter_map(|&r| {
                let r = r as usize;
                if r >= base {
                    let u = r - base;
                    if inside[u] {
                        member[u]
                    } else {
                        outer[u]
                    }
                } else if r < prog.n_inputs {
                    input_member[r]
                } else {
                    None
                }
            })
            .min();
    }
    member
}

/// The instruction with its operand registers set to zero: what two
/// iterations' copies must share.
fn kind(i: &Instr) -> Instr {
    match *i {
        Instr::Add(..) => Instr::Add(0, 0),
        Instr::Sub(..) => Instr::Sub(0, 0),
        Instr::Mul(..) => Instr::Mul(0, 0),
        Instr::Div(..) => Instr::Div(0, 0),
        Instr::Neg(_) => Instr::Neg(0),
        Instr::Sqrt(_) => Instr::Sqrt(0),
        Instr::Powi(_, n) => Instr::Powi(0, n),
        Instr::Powf(_, e) => Instr::Powf(0, e),
        Instr::Pow(..) => Instr::Pow(0, 0),
        Instr::Call(f, _) => Instr::Call(f, 0),
        Instr::Atan2(..) => Instr::Atan2(0, 0),
    }
}

impl Rolled {
    /// The plan for `prog`, whose input register `r` belongs to member
    /// `input_member[r]` of a family (`None`: to none) and whose output `j`
    /// goes to position `places[j].1` of output array `places[j].0`; `None`
    /// where no run of at least [`MIN_COUNT`] members repeats.
    pub fn plan(prog: &Program, input_member: &[Option<u32>], places: &[(u32, usize)]) -> Option<Rolled> {
        assert_eq!(input_member.len(), prog.n_inputs, "a member (or none) per input");
        assert_eq!(places.len(), prog.outputs.len(), "a place per output");
        let mut member = members(prog, input_member);
        let all: Vec<usize> = (0..prog.instrs.len()).collect();
        let outs: Vec<usize> = (0..prog.outputs.len()).collect();
        let first = Self::stage(prog, &member, &all, &outs, places, (0, &HashMap::new()))?;
        let mut plan = Rolled {
            loops: vec![first.lp],
            after: first.after,
            saved: first.saved,
            rest: first.rest,
            scratch_len: first.scratch_len,
        };
        while plan.loops.len() < MAX_LOOPS && plan.after.len() >= MIN_SWEEP {
            let again = lowest_members(prog, input_member, &plan.after, &member);
            let earlier = (plan.scratch_len, &plan.saved);
            let Some(next) = Self::stage(prog, &again, &plan.after, &plan.rest, places, earlier) else {
                break;
            };
            for &t in &plan.after {
                member[t] = again[t];
            }
            plan.loops.push(next.lp);
            plan.after = next.after;
            plan.saved.extend(next.saved);
            plan.rest = next.rest;
            plan.scratch_len = next.scratch_len;
        }
        Some(plan)
    }

    /// A loop over the instructions of `scope` (ascending; the others are
    /// computed before it), whose result `t` belongs to `member[t]`, storing
    /// those of the outputs `outs` it computes at regular places; its scratch
    /// slots from `scratch_base`, after those of earlier loops, which saved
    /// the results in `earlier` (register → slot).
    fn stage(
        prog: &Program,
        member: &[Option<u32>],
        scope: &[usize],
        outs: &[usize],
        places: &[(u32, usize)],
        (scratch_base, earlier): (usize, &HashMap<u32, usize>),
    ) -> Option<Stage> {
        let base = prog.result_base();
        let top = member.iter().flatten().max().copied()? as usize;
        // Each member's instructions in program order, and each
        // instruction's position among them.
        let mut groups: Vec<Vec<usize>> = vec![Vec::new(); top + 1];
        let mut pos = vec![0u32; prog.instrs.len()];
        for (i, m) in member.iter().enumerate() {
            if let Some(m) = m {
                pos[i] = groups[*m as usize].len() as u32;
                groups[*m as usize].push(i);
            }
        }
        let result = |r: u32| (r as usize).checked_sub(base);
        // The loop: the longest run of members whose instructions are the
        // copies of their predecessor's, operand for operand, with reads of
        // the member's own results at the same positions, of earlier
        // members' at the same distance and position, of inputs at the same
        // register distance, of anything else at the same register.
        let alike = |a: usize, b: usize| -> bool {
            let (ga, gb) = (&groups[a], &groups[b]);
            if ga.len() != gb.len() || ga.is_empty() {
                return false;
            }
            let mut input_step: HashMap<(usize, usize), i64> = HashMap::new();
            ga.iter().zip(gb).enumerate().all(|(p, (&x, &y))| {
                let (ix, iy) = (&prog.instrs[x], &prog.instrs[y]);
                if kind(ix) != kind(iy) {
                    return false;
                }
                let ((ox, k), (oy, _)) = (ix.operands(), iy.operands());
                (0..k).all(|s| {
                    let (rx, ry) = (ox[s], oy[s]);
                    match (result(rx), result(ry)) {
                        (Some(tx), Some(ty)) => match (member[tx], member[ty]) {
                            (Some(mx), Some(my)) => {
                                a as i64 - mx as i64 == b as i64 - my as i64 && pos[tx] == pos[ty]
                                    || mx == my && tx == ty
                            }
                            // results of no member: the same, or a table
                            (None, None) => true,
                            _ => false,
                        },
                        (None, None) if (rx as usize) < prog.n_inputs && (ry as usize) < prog.n_inputs => {
                            let d = ry as i64 - rx as i64;
                            *input_step.entry((p, s)).or_insert(d) == d
                        }
                        // constants: the same, or a table
                        (None, None) => (rx as usize) >= prog.n_inputs && (ry as usize) >= prog.n_inputs,
                        _ => false,
                    }
                })
            })
        };
        let (mut best, mut run) = ((0, 0), 0..0);
        for m in 1..=top {
            if alike(m - 1, m) {
                run = if run.end == m { run.start..m + 1 } else { m - 1..m + 1 };
                if run.len() > best.1 - best.0 {
                    best = (run.start, run.end);
                }
            }
        }
        let (lo, hi) = best;
        if hi - lo < MIN_COUNT {
            return None;
        }
        // Forward (each link reads the links before it), or else backward
        // (each reads the links after it: a back substitution).
        let build = |lo: usize, hi: usize| {
            [false, true].into_iter().find_map(|backward| {
                let links = Links { lo, hi, backward };
                Self::build(
                    prog,
                    member,
                    &groups,
                    &pos,
                    links,
                    scope,
                    (outs, places),
                    (scratch_base, earlier),
                )
            })
        };
        let whole = build(lo, hi)?;
        // Tables filled before the loop, one value per iteration, are often
        // an earlier loop's results but for an end link's, computed apart:
        // without that link, the loop reads them where they were saved.
        if whole.lp.stores.len() < whole.lp.count {
            return Some(whole);
        }
        let straight = |s: &Stage| s.lp.before.len() + s.lp.stores.len() + s.after.len();
        [(lo + 1, hi), (lo, hi - 1), (lo + 1, hi - 1)]
            .into_iter()
            .filter(|&(a, b)| b - a >= MIN_COUNT)
            .filter_map(|(a, b)| build(a, b))
            .chain([whole])
            .min_by_key(straight)
    }

    /// The stage with the loop over `links`, checked instruction by
    /// instruction (`None` where a copy is not exact).
    #[allow(clippy::too_many_arguments)]
    fn build(
        prog: &Program,
        member: &[Option<u32>],
        groups: &[Vec<usize>],
        pos: &[u32],
        links: Links,
        scope: &[usize],
        (outs, places): (&[usize], &[(u32, usize)]),
        (scratch_base, earlier): (usize, &HashMap<u32, usize>),
    ) -> Option<Stage> {
        let base = prog.result_base();
        let Links { lo, hi, .. } = links;
        let count = hi - lo;
        let len = groups[lo].len();
        let in_loop = |t: usize| member[t].is_some_and(|m| (lo..hi).contains(&(m as usize)));
        // After the loop: what reads its results, directly or through
        // others; before it, the rest.
        let mut late = vec![false; prog.instrs.len()];
        for &t in scope {
            if !in_loop(t) {
                let (ops, k) = prog.instrs[t].operands();
                late[t] = ops[..k]
                    .iter()
                    .any(|&r| (r as usize).checked_sub(base).is_some_and(|u| in_loop(u) || late[u]));
            }
        }
        let before: Vec<usize> = scope.iter().copied().filter(|&t| !in_loop(t) && !late[t]).collect();
        let after: Vec<usize> = scope.iter().copied().filter(|&t| late[t]).collect();
        // Results the loop may read at a fixed register or through a table:
        // those computed before it (by an earlier stage, or before it here).
        let mut ready = vec![true; prog.instrs.len()];
        for &t in scope {
            ready[t] = false;
        }
        for &t in &before {
            ready[t] = true;
        }
        // Operands, as two iterations far enough in read them that reads of
        // earlier iterations, up to `REACH` back, fall inside the loop; a
        // read of an earlier member's result at distance d goes through a
        // scratch array written by the body (or, for iterations before d,
        // before the loop).
        let i0 = REACH.min(count - 2);
        let (m0, m1) = (links.member(i0), links.member(i0 + 1));
        let mut scratch_len = scratch_base;
        let mut carried: HashMap<(u32, u32), usize> = HashMap::new(); // (position, distance) → array
        let mut tables: HashMap<(usize, usize), usize> = HashMap::new(); // (step, operand) → array
        let mut body: Vec<Step> = Vec::with_capacity(len);
        let mut stores: Vec<(u32, usize)> = Vec::new();
        // Where every iteration's operand `s` of step `p` is a result an
        // earlier loop saved, a constant step apart: the first slot and the step.
        let progression = |p: usize, s: usize| -> Option<(usize, i64)> {
            let slot = |i: usize| {
                let (ops, _) = prog.instrs[groups[links.member(i)][p]].operands();
                earlier.get(&ops[s]).map(|&x| x as i64)
            };
            let at = slot(0)?;
            let stride = slot(1)? - at;
            (0..count)
                .all(|i| slot(i) == Some(at + stride * i as i64))
                .then_some((at as usize, stride))
        };
        for p in 0..len {
            let (t0, t1) = (groups[m0][p], groups[m1][p]);
            let (o0, k) = prog.instrs[t0].operands();
            let (o1, _) = prog.instrs[t1].operands();
            let (first_ops, _) = prog.instrs[groups[links.member(0)][p]].operands();
            let mut operands = Vec::with_capacity(k);
            for s in 0..k {
                let (r0, r1) = (o0[s], o1[s]);
                let op = match ((r0 as usize).checked_sub(base), (r1 as usize).checked_sub(base)) {
                    (Some(_), Some(b)) if in_loop(b) && member[b] == member[t1] => Operand::Local(pos[b]),
                    (Some(_), Some(b)) if in_loop(b) => {
                        // Iterations back (none forward: not computed yet).
                        let d = links.distance(member[t1]?, member[b]?)?;
                        let arr = *carried.entry((pos[b], d)).or_insert_with(|| {
                            scratch_len += count + d as usize;
                            scratch_len - count - d as usize
                        });
                        Operand::Scratch { at: arr }
                    }
                    _ if r0 == r1 => Operand::Fixed(r0),
                    (None, None) if (r0 as usize) < prog.n_inputs => Operand::Input {
                        first: first_ops[s],
                        stride: r1 as i64 - r0 as i64,
                    },
                    // An earlier loop's results, one per iteration, at
                    // slots a constant step apart; else a table.
                    results => match results.0.and(results.1).and_then(|_| progression(p, s)) {
                        Some((at, stride)) => Operand::Earlier { at, stride },
                        None => {
                            let arr = *tables.entry((p, s)).or_insert_with(|| {
                                scratch_len += count;
                                scratch_len - count
                            });
                            Operand::Scratch { at: arr }
                        }
                    },
                };
                operands.push(op);
            }
            body.push(Step {
                instr: prog.instrs[t0],
                operands,
                saves: Vec::new(),
                outputs: Vec::new(),
            });
        }
        // Every iteration's every operand, checked against the program's;
        // the scratch values the loop reads, assigned their writers.
        let mut written: HashMap<usize, u32> = HashMap::new(); // slot → register stored before
        for i in 0..count {
            let m = links.member(i);
            for (p, step) in body.iter().enumerate() {
                let t = groups[m][p];
                let ins = &prog.instrs[t];
                if kind(ins) != kind(&step.instr) {
                    return None;
                }
                let (ops, k) = ins.operands();
                for s in 0..k {
                    let r = ops[s];
                    match step.operands[s] {
                        Operand::Local(q) => {
                            if r as usize != base + groups[m][q as usize] || q as usize >= p {
                                return None;
                            }
                        }
                        Operand::Fixed(f) => {
                            if r != f || (r as usize) >= base && !ready[r as usize - base] {
                                return None;
                            }
                        }
                        Operand::Input { first, stride } => {
                            if r as i64 != first as i64 + stride * i as i64 {
                                return None;
                            }
                        }
                        Operand::Earlier { at, stride } => {
                            if earlier.get(&r).map(|&s| s as i64) != Some(at as i64 + stride * i as i64) {
                                return None;
                            }
                        }
                        Operand::Scratch { at } => {
                            let slot = at + i;
                            // A carried value: its array holds iteration j's
                            // result at `at + d + j`.
                            let carry = carried.iter().find(|(_, &a)| a == at).map(|(&(q, d), _)| (q, d));
                            match carry {
                                Some((q, d)) => {
                                    if let Some(src) = i.checked_sub(d as usize) {
                                        if r as usize != base + groups[links.member(src)][q as usize] {
                                            return None;
                                        }
                                    } else if !record(&mut written, slot, r, base, &ready) {
                                        return None;
                                    }
                                }
                                None => {
                                    if !record(&mut written, slot, r, base, &ready) {
                                        return None;
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        // In a fixed order, so that the code is the same from run to run.
        let mut carries: Vec<((u32, u32), usize)> = carried.iter().map(|(&k, &at)| (k, at)).collect();
        carries.sort_unstable();
        for ((q, d), at) in carries {
            body[q as usize].saves.push(at + d as usize);
        }
        stores.extend(written.iter().map(|(&slot, &r)| (r, slot)));
        stores.sort_unstable_by_key(|&(_, s)| s);
        // Results of the loop read after it.
        let mut saved: HashMap<u32, usize> = HashMap::new();
        let mut save_position = vec![None; len];
        let mut need = |r: u32, saved: &mut HashMap<u32, usize>, body: &mut Vec<Step>| {
            let Some(t) = (r as usize).checked_sub(base) else {
                return;
            };
            if !in_loop(t) {
                return;
            }
            let p = pos[t] as usize;
            let at = *save_position[p].get_or_insert_with(|| {
                scratch_len += count;
                body[p].saves.push(scratch_len - count);
                scratch_len - count
            });
            saved.insert(r, at + links.iteration(member[t].unwrap_or(0)));
        };
        for &t in &after {
            let (ops, k) = prog.instrs[t].operands();
            for &r in &ops[..k] {
                need(r, &mut saved, &mut body);
            }
        }
        // Outputs: those of a body step at positions that move by the same
        // step every iteration are stored by the loop, the others after it.
        let mut by_step: HashMap<(usize, usize), Vec<usize>> = HashMap::new(); // (step, iteration) → outputs
        let mut rest = Vec::new();
        for &j in outs {
            let r = prog.outputs[j];
            match (r as usize).checked_sub(base).filter(|&t| in_loop(t)) {
                Some(t) => by_step
                    .entry((pos[t] as usize, links.iteration(member[t].unwrap_or(0))))
                    .or_default()
                    .push(j),
                None => rest.push(j),
            }
        }
        for p in 0..len {
            let lists: Vec<&[usize]> = (0..count)
                .map(|i| by_step.get(&(p, i)).map_or(&[][..], |v| &v[..]))
                .collect();
            let regular = lists.iter().all(|l| l.len() == lists[0].len())
                && (0..lists[0].len()).all(|e| {
                    let (a0, p0) = places[lists[0][e]];
                    let stride = places[lists[1][e]].1 as i64 - p0 as i64;
                    lists
                        .iter()
                        .enumerate()
                        .all(|(i, l)| places[l[e]].0 == a0 && places[l[e]].1 as i64 == p0 as i64 + stride * i as i64)
                });
            if regular {
                for e in 0..lists[0].len() {
                    let (a0, p0) = places[lists[0][e]];
                    let stride = places[lists[1][e]].1 as i64 - p0 as i64;
                    body[p].outputs.push((a0, p0, stride));
                }
            } else {
                for l in &lists {
                    for &j in *l {
                        rest.push(j);
                        need(prog.outputs[j], &mut saved, &mut body);
                    }
                }
            }
        }
        rest.sort_unstable();
        Some(Stage {
            lp: Loop {
                before,
                stores,
                count,
                body,
            },
            after,
            saved,
            rest,
            scratch_len,
        })
    }

    /// Runs the plan in `f64`, as a back-end would: the program's outputs,
    /// to the bit, written at their `places` (as given to [`Rolled::plan`])
    /// into `outs`, one slice per output array.
    pub fn eval(&self, prog: &Program, places: &[(u32, usize)], inputs: &[f64], outs: &mut [&mut [f64]]) {
        let base = prog.result_base();
        let mut regs: Vec<f64> = inputs.to_vec();
        regs.extend(&prog.consts);
        regs.resize(prog.registers(), f64::NAN);
        let mut scratch = vec![f64::NAN; self.scratch_len];
        // A result of an earlier loop is read from its scratch slot.
        let get = |r: u32, regs: &[f64], scratch: &[f64]| self.saved.get(&r).map_or(regs[r as usize], |&s| scratch[s]);
        let run = |t: usize, regs: &mut Vec<f64>, scratch: &[f64]| {
            let (ops, k) = prog.instrs[t].operands();
            let x = get(ops[0], regs, scratch);
            let y = if k == 2 { get(ops[1], regs, scratch) } else { x };
            regs[base + t] = prog.instrs[t].apply(x, y);
        };
        for lp in &self.loops {
            for &t in &lp.before {
                run(t, &mut regs, &scratch);
            }
            for &(r, slot) in &lp.stores {
                scratch[slot] = get(r, &regs, &scratch);
            }
            let mut local = vec![0.0; lp.body.len()];
            for i in 0..lp.count {
                for (p, step) in lp.body.iter().enumerate() {
                    let read = |o: &Operand| match *o {
                        Operand::Local(q) => local[q as usize],
                        Operand::Scratch { at } => scratch[at + i],
                        Operand::Input { first, stride } => regs[(first as i64 + stride * i as i64) as usize],
                        Operand::Fixed(r) => get(r, &regs, &scratch),
                        Operand::Earlier { at, stride } => scratch[(at as i64 + stride * i as i64) as usize],
                    };
                    let x = read(&step.operands[0]);
                    let y = step.operands.get(1).map_or(x, read);
                    let v = step.instr.apply(x, y);
                    local[p] = v;
                    for &at in &step.saves {
                        scratch[at + i] = v;
                    }
                    for &(a, p0, stride) in &step.outputs {
                        outs[a as usize][(p0 as i64 + stride * i as i64) as usize] = v;
                    }
                }
            }
        }
        for &t in &self.after {
            run(t, &mut regs, &scratch);
        }
        for &j in &self.rest {
            let (a, at) = places[j];
            outs[a as usize][at] = get(prog.outputs[j], &regs, &scratch);
        }
    }
}

/// Records that `slot` holds register `r` before the loop, which must be
/// computed by then (`ready`) and the only register the slot holds.
fn record(written: &mut HashMap<usize, u32>, slot: usize, r: u32, base: usize, ready: &[bool]) -> bool {
    if (r as usize) >= base && !ready[r as usize - base] {
        return false;
    }
    *written.entry(slot).or_insert(r) == r
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::func::Func;

    /// A chain of `n` links in the shape of a chain's kernel: inputs
    /// `(p0, p1)` then `(a_k, b_k)` per link; a forward recurrence
    /// `s_k = s_{k-1} + a_k p0 p1`, a constant per link (a table), a
    /// function call, a last link with an extra term; outputs per link
    /// into two arrays, and a constant output per link (not the loop's).
    fn chain(n: usize) -> (Program, Vec<Option<u32>>, Vec<(u32, usize)>) {
        let n_inputs = 2 + 2 * n;
        let consts: Vec<f64> = [0.5, 2.0].into_iter().chain((0..n).map(|k| 1.0 + k as f64)).collect();
        let base = (n_inputs + consts.len()) as u32;
        let mut instrs = vec![Instr::Mul(0, 1)];
        let reg = |instrs: &Vec<Instr>| base + instrs.len() as u32 - 1;
        let mut outputs = Vec::new();
        let mut places = Vec::new();
        let mut prev_s = None;
        for k in 0..n {
            let (a, b) = (2 + 2 * k as u32, 3 + 2 * k as u32);
            instrs.push(Instr::Mul(a, base));
            let t1 = reg(&instrs);
            instrs.push(Instr::Add(t1, prev_s.unwrap_or(b)));
            let s = reg(&instrs);
            instrs.push(Instr::Call(Func::Sin, s));
            let t3 = reg(&instrs);
            instrs.push(Instr::Mul(t3, n_inputs as u32 + 2 + k as u32));
            let t4 = reg(&instrs);
            instrs.push(Instr::Sub(t4, b));
            let t5 = reg(&instrs);
            instrs.push(Instr::Div(t5, n_inputs as u32 + 1));
            let mut t6 = reg(&instrs);
            if k == n - 1 {
                instrs.push(Instr::Powi(t6, 3));
                t6 = reg(&instrs);
            }
            outputs.extend([t6, s, n_inputs as u32]);
            places.extend([(0, k), (1, 2 * k), (1, 2 * k + 1)]);
            prev_s = Some(s);
        }
        let member = (0..n_inputs).map(|r| (r >= 2).then(|| (r as u32 - 2) / 2)).collect();
        let prog = Program {
            n_inputs,
            consts,
            instrs,
            outputs,
        };
        (prog, member, places)
    }

    fn outputs_of(prog: &Program, places: &[(u32, usize)], inputs: &[f64]) -> Vec<Vec<f64>> {
        let flat = prog.eval(inputs);
        let lens = [0, 1].map(|a| places.iter().filter(|p| p.0 == a).map(|p| p.1 + 1).max().unwrap_or(0));
        let mut outs: Vec<Vec<f64>> = lens.iter().map(|&l| vec![0.0; l]).collect();
        for (v, &(a, at)) in flat.iter().zip(places) {
            outs[a as usize][at] = *v;
        }
        outs
    }

    /// Asserts that `plan` computes `prog`'s outputs at `places` from
    /// `inputs` to the bit.
    fn assert_gives_the_program_s_bits(
        plan: &Rolled,
        prog: &Program,
        places: &[(u32, usize)],
        inputs: &[f64],
        what: &str,
    ) {
        let want = outputs_of(prog, places, inputs);
        let mut got: Vec<Vec<f64>> = want.iter().map(|v| vec![f64::NAN; v.len()]).collect();
        let mut outs: Vec<&mut [f64]> = got.iter_mut().map(|v| &mut v[..]).collect();
        plan.eval(prog, places, inputs, &mut outs);
        for (w, g) in want.iter().zip(&got) {
            assert!(w.iter().zip(g).all(|(a, b)| a.to_bits() == b.to_bits()), "{what}");
        }
    }

    #[test]
    fn a_chain_runs_as_a_loop_to_the_bit() {
        for n in [6, 17, 64] {
            let (prog, member, places) = chain(n);
            let plan = Rolled::plan(&prog, &member, &places).expect("a loop");
            // Link 0 starts the recurrence and the last link has an extra
            // term: the loop holds the others.
            assert_eq!(plan.loops[0].count, n - 2, "n = {n}");
            assert_eq!(plan.loops[0].body.len(), 6);
            assert!(plan.loops[0].before.len() + plan.after.len() <= 1 + 6 + 7);
            assert_eq!(
                plan.rest.len(),
                n + 4,
                "the constant outputs, and the first and last links'"
            );
            let inputs: Vec<f64> = (0..prog.n_inputs).map(|r| 0.3 + 0.17 * r as f64).collect();
            assert_gives_the_program_s_bits(&plan, &prog, &places, &inputs, &format!("n = {n}"));
        }
    }

    #[test]
    fn programs_that_do_not_repeat_are_not_rolled() {
        let (prog, _, places) = chain(12);
        // No member of any family: nothing to roll.
        assert!(Rolled::plan(&prog, &vec![None; prog.n_inputs], &places).is_none());
        // Too short a chain.
        let (prog, member, places) = chain(4);
        assert!(Rolled::plan(&prog, &member, &places).is_none());
        // A copy that differs in one register only (link 7 reads p1 where
        // the others read p0 p1): the loop stops short of it.
        let (mut prog, member, places) = chain(16);
        let t = 1 + 7 * 6;
        assert_eq!(prog.instrs[t], Instr::Mul(2 + 14, prog.result_base() as u32));
        prog.instrs[t] = Instr::Mul(2 + 14, 1);
        let plan = Rolled::plan(&prog, &member, &places).expect("a loop");
        assert_eq!(plan.loops[0].count, 15 - 8, "links 8 … 14");
        let inputs: Vec<f64> = (0..prog.n_inputs).map(|r| 1.1 - 0.05 * r as f64).collect();
        assert_gives_the_program_s_bits(&plan, &prog, &places, &inputs, "link 7 changed");
    }

    /// `s_k = s_{k-1} + a_k²` forward; every link's `t_k = s_k / s_{n-1}`
    /// (which reads the whole sum); `y_k = t_k + y_{k+1} / 2` backward from
    /// `y_{n-1} = t_{n-1}`: outputs `y_k`, and `s_k` in a second array.
    fn sweeps(n: usize) -> (Program, Vec<Option<u32>>, Vec<(u32, usize)>) {
        let base = (n + 1) as u32;
        let mut instrs = Vec::new();
        let push = |i: Instr, instrs: &mut Vec<Instr>| {
            instrs.push(i);
            base + instrs.len() as u32 - 1
        };
        let mut s = Vec::new();
        for k in 0..n as u32 {
            let sq = push(Instr::Mul(k, k), &mut instrs);
            s.push(if k == 0 {
                sq
            } else {
                push(Instr::Add(s[k as usize - 1], sq), &mut instrs)
            });
        }
        let total = s[n - 1];
        let t: Vec<u32> = (0..n).map(|k| push(Instr::Div(s[k], total), &mut instrs)).collect();
        let mut y = vec![0; n];
        y[n - 1] = t[n - 1];
        for k in (0..n - 1).rev() {
            let half = push(Instr::Div(y[k + 1], n as u32), &mut instrs);
            y[k] = push(Instr::Add(t[k], half), &mut instrs);
        }
        let outputs: Vec<u32> = y.iter().chain(&s).copied().collect();
        let places = (0..n).map(|k| (0, k)).chain((0..n).map(|k| (1, k))).collect();
        let member = (0..=n).map(|r| (r < n).then_some(r as u32)).collect();
        let prog = Program {
            n_inputs: n + 1,
            consts: vec![],
            instrs,
            outputs,
        };
        (prog, member, places)
    }

    #[test]
    fn what_reads_a_loop_s_sum_runs_as_further_loops_forward_and_backward() {
        for n in [40, 100] {
            let (prog, member, places) = sweeps(n);
            let plan = Rolled::plan(&prog, &member, &places).expect("loops");
            let shapes: Vec<(usize, usize)> = plan.loops.iter().map(|lp| (lp.count, lp.body.len())).collect();
            // The forward sum, then the links' quotients and the back
            // substitution (each link's `t_k` belongs to it by the lowest
            // member it reads, and `y_k` reads `y_{k+1}`: a backward loop).
            assert!(shapes.len() >= 2, "n = {n}: {shapes:?}");
            assert!(shapes[0].0 >= n - 4 && shapes[1].0 >= n - 6, "n = {n}: {shapes:?}");
            let strides: Vec<i64> = plan.loops[1]
                .body
                .iter()
                .flat_map(|s| &s.outputs)
                .map(|o| o.2)
                .collect();
            assert_eq!(strides, [-1], "n = {n}: the second loop writes y_k backward");
            // and reads s_k where the first loop saved it, backward too
            let earlier = plan.loops[1].body.iter().flat_map(|s| &s.operands);
            assert!(
                earlier
                    .into_iter()
                    .any(|o| matches!(o, Operand::Earlier { stride: -1, .. })),
                "n = {n}: {:?}",
                plan.loops[1].body
            );
            assert!(plan.loops[1].stores.len() < 4, "no table of s_k filled before the loop");
            assert!(plan.after.len() < 12, "n = {n}: {} after", plan.after.len());
            let mut inputs: Vec<f64> = (0..n).map(|k| 0.4 + 0.01 * k as f64).collect();
            inputs.push(n as f64);
            assert_gives_the_program_s_bits(&plan, &prog, &places, &inputs, &format!("n = {n}"));
        }
    }

    #[test]
    fn reads_two_links_back_are_carried() {
        // u_k = a_k u_{k-2} + u_{k-1}, from u_0 = a_0, u_1 = a_1: each
        // iteration reads the last two iterations' results.
        let n = 20;
        let mut instrs = Vec::new();
        let base = n as u32;
        let mut u: Vec<u32> = Vec::new();
        for k in 0..n {
            let a = k as u32;
            if k < 2 {
                instrs.push(Instr::Mul(a, a));
            } else {
                instrs.push(Instr::Mul(a, u[k - 2]));
                let t = base + instrs.len() as u32 - 1;
                instrs.push(Instr::Add(t, u[k - 1]));
            }
            u.push(base + instrs.len() as u32 - 1);
        }
        let prog = Program {
            n_inputs: n,
            consts: vec![],
            instrs,
            outputs: u.clone(),
        };
        let member: Vec<Option<u32>> = (0..n as u32).map(Some).collect();
        let places: Vec<(u32, usize)> = (0..n).map(|k| (0, k)).collect();
        let plan = Rolled::plan(&prog, &member, &places).expect("a loop");
        // Links 0 and 1 have one instruction, not two: links 2 and 3, which
        // read them, differ from the others in where they read.
        assert_eq!((plan.loops[0].count, plan.loops[0].body.len()), (n - 4, 2));
        let inputs: Vec<f64> = (0..n).map(|k| 0.5 + 0.01 * k as f64).collect();
        let want = prog.eval(&inputs);
        let mut got = vec![f64::NAN; n];
        plan.eval(&prog, &places, &inputs, &mut [&mut got[..]]);
        assert_eq!(
            want.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
            got.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
        );
    }

    /// Random chains: a template of operations per link, on the link's
    /// inputs, its earlier results, a result one or two links back, a
    /// global result and constants (some per link); then, in most cases,
    /// one link's operation or operand changed, or an output moved. Every
    /// plan found must evaluate to the program's bits.
    #[test]
    fn random_chains_roll_to_the_program_s_bits_or_not_at_all() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut rand = |m: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % m as u64) as usize
        };
        let mut rolled = 0;
        for case in 0..300 {
            let n = 5 + rand(20);
            let width = 1 + rand(6);
            let n_inputs = 1 + 2 * n;
            let consts: Vec<f64> = (0..2 + n).map(|k| 0.5 + 0.25 * k as f64).collect();
            let base = (n_inputs + consts.len()) as u32;
            // template: (kind, two operand choices)
            let template: Vec<(usize, [usize; 2])> = (0..width).map(|_| (rand(6), [rand(100), rand(100)])).collect();
            let mut instrs = vec![Instr::Mul(0, 0)];
            let mut results: Vec<Vec<u32>> = Vec::new();
            for k in 0..n {
                let mut mine: Vec<u32> = Vec::new();
                for (j, &(kind, choice)) in template.iter().enumerate() {
                    let pick = |c: usize, mine: &Vec<u32>| -> u32 {
                        match c % 7 {
                            0 if !mine.is_empty() => mine[c % mine.len()],
                            1 if k >= 1 => results[k - 1][c % width],
                            2 if k >= 2 => results[k - 2][c % width],
                            3 => base,
                            4 => n_inputs as u32 + 2 + k as u32,
                            5 => n_inputs as u32,
                            _ => 1 + 2 * k as u32 + (c % 2) as u32,
                        }
                    };
                    let (a, b) = (pick(choice[0], &mine), pick(choice[1] / 7 + j, &mine));
                    let ins = match kind {
                        0 => Instr::Add(a, b),
                        1 => Instr::Sub(a, b),
                        2 => Instr::Mul(a, b),
                        3 => Instr::Div(a, b),
                        4 => Instr::Call(crate::func::Func::Sin, a),
                        _ => Instr::Powi(a, 2),
                    };
                    instrs.push(ins);
                    mine.push(base + instrs.len() as u32 - 1);
                }
                results.push(mine);
            }
            let mut outputs: Vec<u32> = Vec::new();
            for r in &results {
                outputs.extend([r[width - 1], r[0], n_inputs as u32]);
            }
            let mut places: Vec<(u32, usize)> = (0..outputs.len()).map(|j| (0, j)).collect();
            match rand(4) {
                0 => {}
                1 => {
                    let t = 1 + rand(instrs.len() - 1);
                    instrs[t] = match instrs[t] {
                        Instr::Add(a, b) => Instr::Sub(a, b),
                        Instr::Call(_, a) => Instr::Neg(a),
                        other => other,
                    };
                }
                2 => {
                    let t = 1 + rand(instrs.len() - 1);
                    if let Instr::Mul(a, _) = instrs[t] {
                        instrs[t] = Instr::Mul(a, n_inputs as u32 + 1);
                    }
                }
                _ => {
                    let j = rand(outputs.len());
                    places.swap(j, (j + 3) % outputs.len());
                }
            }
            let member: Vec<Option<u32>> = (0..n_inputs).map(|r| (r >= 1).then(|| (r as u32 - 1) / 2)).collect();
            let prog = Program {
                n_inputs,
                consts,
                instrs,
                outputs,
            };
            let Some(plan) = Rolled::plan(&prog, &member, &places) else {
                continue;
            };
            rolled += 1;
            assert_eq!(
                Rolled::plan(&prog, &member, &places).as_ref(),
                Some(&plan),
                "case {case}: the same plan again"
            );
            let inputs: Vec<f64> = (0..n_inputs).map(|r| 0.7 + 0.031 * r as f64).collect();
            let flat = prog.eval(&inputs);
            let mut want = vec![0.0; flat.len()];
            for (v, &(_, at)) in flat.iter().zip(&places) {
                want[at] = *v;
            }
            let mut got = vec![f64::NAN; flat.len()];
            plan.eval(&prog, &places, &inputs, &mut [&mut got[..]]);
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&got), bits(&want), "case {case}: n = {n}, width {width}");
        }
        assert!(rolled > 100, "{rolled} of 300 cases rolled");
    }
}
