//! Native code for a sparse LU's steps ([`LuPlan`]): the factorization
//! and the solve, one IEEE operation per operation of the plan and in its
//! order (adjacent rows two at a time in packed SSE2, each lane the scalar
//! operation), so that the factors and solutions are those of the
//! runtime's replay to the bit.
//!
//! A replay reads each step's offsets from lists and walks them in loops;
//! here they are constants in the instructions. Steps that repeat (a
//! chain's links: the same offsets a fixed distance further on) are one
//! loop ([`x64::Layout`]); the others are written out. The code is a few
//! instructions repeated (load, multiply, subtract, store at constant
//! offsets from a pointer), so it is written directly as x86-64 machine
//! code ([`x64`]) instead of through cranelift: cranelift took 17 ms for
//! the 16-link director chain's 1725 updates written out (about 1 µs per
//! IR instruction, register allocation and lowering of code that needs
//! neither), more than a thousand replays of it save; this takes about
//! 0.2 ms, so a plan is compiled as soon as its steps settle.
//! cranelift-jit still provides the executable memory. On other targets
//! there is no compiled plan (the replay goes on).

use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{default_libcall_names, Linkage, Module};
use hamel_kernel::LuPlan;

use crate::codegen::host_isa;
use crate::{err, JitError};

/// `(ab, v, from, limit, tiny, keep)`: returns the step it stopped before.
type FactorFn = unsafe extern "C" fn(*mut f64, *mut f64, u64, u64, f64, f64) -> u64;
/// `(ab, v, from, to)`.
type SolveFn = unsafe extern "C" fn(*const f64, *mut f64, u64, u64);

/// A compiled [`LuPlan`]; keeps its code alive while it is used.
pub struct LuCode {
    module: Option<JITModule>,
    factor: FactorFn,
    forward: SolveFn,
    backward: SolveFn,
    /// rows
    n: usize,
    /// the packed band's length
    len: usize,
    /// the plan, whose reference takes steps the code cannot be entered at
    plan: LuPlan,
    /// where the code loops
    layout: x64::Layout,
}

// SAFETY: the compiled functions touch only the arrays they are given; the
// module is only touched again on drop.
unsafe impl Send for LuCode {}
unsafe impl Sync for LuCode {}

impl std::fmt::Debug for LuCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LuCode").field("rows", &self.n).finish()
    }
}

impl Drop for LuCode {
    fn drop(&mut self) {
        if let Some(m) = self.module.take() {
            // SAFETY: the entries die with `self`; nothing can call them afterwards.
            unsafe { m.free_memory() };
        }
    }
}

/// Whether this host gets compiled plans (see the module's documentation).
pub const LU_COMPILED: bool = cfg!(all(target_arch = "x86_64", unix));

impl LuCode {
    /// Compiles `plan`, its factorization taking the forward substitution
    /// along ([`LuCode::factor_forward`]); refuses a plan that names an
    /// entry outside its band or too far for a 32-bit displacement, and
    /// every plan on hosts without [`LU_COMPILED`].
    pub fn compile(plan: &LuPlan) -> Result<LuCode, JitError> {
        // Fused at every size. Up to 2026-11-29 only plans of at most 256
        // rows were: at 64 links a director chain's factorizations entered
        // compiled code about 15 times each (its pivots a mosaic), only the
        // first run took the right-hand side along, and the bigger code
        // cost 3.6 % a step. Once pivots were kept longer
        // (`hamel_runtime`'s `KEEP`), a factorization runs compiled whole
        // far more often: fused, the speed table's chains (100 steps from
        // `sway`, h = 0.01, `chain_profile` binaries side by side) took
        // 8 % less at 32–128 director links (128: 74.5–77.8 → 69.8 µs) and
        // 13 % less at 128 energy–momentum links (35.1 → 30.5–30.7 µs);
        // 1000 steps from `tilted` at h = 1e-3, where pivots still move,
        // the director chains as before and the 128-link energy–momentum
        // one 12 % less.
        if !LU_COMPILED {
            return Err(JitError("no compiled LU on this host".into()));
        }
        let far = plan.len.max(plan.steps.len()) >= (i32::MAX / 8) as usize;
        if !plan.in_bounds() || far {
            return Err(JitError("an LU plan naming entries outside its band".into()));
        }
        let layout = x64::Layout::of(plan);
        let code = [
            x64::factor(plan, &layout),
            x64::forward(plan, &layout),
            x64::backward(plan, &layout),
        ];
        let isa = host_isa()?;
        let mut module = JITModule::new(JITBuilder::with_isa(isa, default_libcall_names()));
        // The declared signatures only name the functions: the bytes are
        // defined whole, and called through the types above.
        let sig = module.make_signature();
        let mut ids = Vec::with_capacity(code.len());
        for (name, bytes) in ["factor", "forward", "backward"].into_iter().zip(&code) {
            let id = module.declare_function(name, Linkage::Local, &sig).map_err(err)?;
            module.define_function_bytes(id, 16, bytes, &[]).map_err(err)?;
            ids.push(id);
        }
        module.finalize_definitions().map_err(err)?;
        let at = |i: usize| module.get_finalized_function(ids[i]);
        // SAFETY: the bytes are functions of the System V ABI with these
        // signatures (see `x64`).
        let (factor, forward, backward) = unsafe {
            (
                std::mem::transmute::<*const u8, FactorFn>(at(0)),
                std::mem::transmute::<*const u8, SolveFn>(at(1)),
                std::mem::transmute::<*const u8, SolveFn>(at(2)),
            )
        };
        Ok(LuCode {
            module: Some(module),
            factor,
            forward,
            backward,
            n: plan.steps.len(),
            len: plan.len,
            plan: plan.clone(),
            layout,
        })
    }

    /// Takes the plan's steps `from .. limit` on the packed band `ab` as
    /// far as they go: returns the step it stopped before, `limit` unless
    /// a step was refused (see [`hamel_kernel::lu_plan`]), leaving `ab` as
    /// the steps before it left it. The steps before `from` must have been
    /// the plan's. Nothing is done (`from` returned) where `ab` is shorter
    /// than the plan's band or the range is empty.
    pub fn factor(&self, ab: &mut [f64], from: usize, limit: usize, tiny: f64, keep: f64) -> usize {
        self.factor_forward(ab, None, from, limit, tiny, keep)
    }

    /// [`LuCode::factor`], each step taken applying its part of the
    /// forward substitution ([`LuCode::forward`]) to `v` as well (where
    /// given), to the bit: where it returns `k`, `v` is as
    /// `forward(ab, v, from, k)` would leave it (steps the code cannot be
    /// entered at, inside a loop's repetition, are the plan's reference's,
    /// their forward substitution too). Nothing is done where `v` is
    /// shorter than the plan's rows.
    pub fn factor_forward(
        &self,
        ab: &mut [f64],
        mut v: Option<&mut [f64]>,
        from: usize,
        limit: usize,
        tiny: f64,
        keep: f64,
    ) -> usize {
        let limit = limit.min(self.n);
        let short = v.as_ref().is_some_and(|v| v.len() < self.n);
        if ab.len() < self.len || short || from >= limit {
            return from;
        }
        // Inside a loop's repetition, the reference takes the steps to the
        // next one (the code is entered at repetitions), and their forward
        // substitution.
        let mut from = from;
        if !self.layout.entry(from) {
            let (start, next) = (from, self.layout.repetition(from).end.min(limit));
            from = self.plan.factor(ab, from, next, tiny, keep);
            if let Some(v) = v.as_deref_mut() {
                self.plan.forward(ab, v, start, from);
            }
            if from < next || from == limit {
                return from;
            }
        }
        let v = v.map_or(std::ptr::null_mut(), |v| v.as_mut_ptr());
        // SAFETY: every index the plan names is below `self.len` (checked
        // when compiled), `ab` is that long, `v` is null (not touched) or
        // has a row for each step, and `from` is an entry.
        unsafe { (self.factor)(ab.as_mut_ptr(), v, from as u64, limit as u64, tiny, keep) as usize }
    }

    /// The forward substitution of `v` through the plan's steps `from ..
    /// upto`, by the factors they left in `ab`; `false` (nothing done)
    /// where `ab` or `v` is shorter than the plan's band or rows, or the
    /// range is empty.
    pub fn forward(&self, ab: &[f64], v: &mut [f64], from: usize, upto: usize) -> bool {
        let upto = upto.min(self.n);
        if ab.len() < self.len || v.len() < self.n || from >= upto {
            return false;
        }
        let mut from = from;
        if !self.layout.entry(from) {
            let next = self.layout.repetition(from).end.min(upto);
            self.plan.forward(ab, v, from, next);
            from = next;
            if from == upto {
                return true;
            }
        }
        // SAFETY: as in `factor`; the rows named are below `self.n`.
        unsafe { (self.forward)(ab.as_ptr(), v.as_mut_ptr(), from as u64, upto as u64) };
        true
    }

    /// The backward substitution of rows `upto − 1` down to `from` (the
    /// rows after them substituted already); `false` as for
    /// [`LuCode::forward`].
    pub fn backward(&self, ab: &[f64], v: &mut [f64], from: usize, upto: usize) -> bool {
        let upto = upto.min(self.n);
        if ab.len() < self.len || v.len() < self.n || from >= upto {
            return false;
        }
        let mut upto = upto;
        if !self.layout.top(upto - 1) {
            let bottom = self.layout.repetition(upto - 1).start.max(from);
            self.plan.backward(ab, v, bottom, upto);
            upto = bottom;
            if upto == from {
                return true;
            }
        }
        // SAFETY: as in `forward`.
        unsafe { (self.backward)(ab.as_ptr(), v.as_mut_ptr(), from as u64, (upto - 1) as u64) };
        true
    }
}

/// The plan as x86-64 machine code (SSE2, System V ABI: pointers in `rdi`,
/// `rsi`, doubles in `xmm0`, `xmm1`, the result in `rax`; every `xmm`
/// register is the caller's to save).
mod x64 {
    use hamel_kernel::{LuPlan, LuStep};

    /// The band's base register (`rdi`) and the right-hand side's (`rsi`).
    const AB: u8 = 7;
    const V: u8 = 6;

    // Registers of the factorization: the column's largest and products
    // (0), the reciprocal pivot (1), row k's entry (2), the entry updated
    // (3), the multipliers (4 ..= 11), `tiny` (12), `keep` (13), 1.0 (14)
    // and the mask of all bits but the sign (15).
    const BIG: u8 = 0;
    const INV: u8 = 1;
    const ROW: u8 = 2;
    const ENTRY: u8 = 3;
    const FIRST_M: u8 = 4;
    const HELD_M: usize = 8;
    const TINY: u8 = 12;
    const KEEP: u8 = 13;
    const ONE: u8 = 14;
    const MASK: u8 = 15;

    /// SSE opcodes (after `0F`) with their mandatory prefix.
    const MOVSD_LOAD: (u8, u8) = (0xF2, 0x10);
    const MOVSD_STORE: (u8, u8) = (0xF2, 0x11);
    const MULSD: (u8, u8) = (0xF2, 0x59);
    const SUBSD: (u8, u8) = (0xF2, 0x5C);
    const DIVSD: (u8, u8) = (0xF2, 0x5E);
    const MAXSD: (u8, u8) = (0xF2, 0x5F);
    const MOVAPD: (u8, u8) = (0x66, 0x28);
    const ANDPD: (u8, u8) = (0x66, 0x54);
    const XORPD: (u8, u8) = (0x66, 0x57);
    const UCOMISD: (u8, u8) = (0x66, 0x2E);
    const MOVUPD_LOAD: (u8, u8) = (0x66, 0x10);
    const MOVUPD_STORE: (u8, u8) = (0x66, 0x11);
    const MULPD: (u8, u8) = (0x66, 0x59);
    const SUBPD: (u8, u8) = (0x66, 0x5C);
    const UNPCKLPD: (u8, u8) = (0x66, 0x14);

    /// Row offsets as slots: `(offset, whether the next row is in the slot
    /// too)`, adjacent rows paired from the first of a run.
    fn pairs(offsets: &[u16]) -> Vec<(usize, bool)> {
        let mut slots = Vec::with_capacity(offsets.len());
        let mut i = 0;
        while i < offsets.len() {
            let o = offsets[i] as usize;
            let two = offsets.get(i + 1).is_some_and(|&p| p as usize == o + 1);
            slots.push((o, two));
            i += 1 + usize::from(two);
        }
        slots
    }

    /// Machine code being written.
    #[derive(Default)]
    struct Asm {
        code: Vec<u8>,
        /// each label's offset, once bound
        labels: Vec<Option<usize>>,
        /// `(where a rel32 is, its label)`
        jumps: Vec<(usize, usize)>,
        /// jump tables: `(label, the labels of its entries)`
        tables: Vec<(usize, Vec<usize>)>,
    }

    impl Asm {
        /// `op reg, reg2` (register operands).
        fn rr(&mut self, (prefix, op): (u8, u8), reg: u8, rm: u8) {
            self.code.push(prefix);
            let rex = 0x40 | ((reg >> 3) << 2) | (rm >> 3);
            if rex != 0x40 {
                self.code.push(rex);
            }
            self.code.extend([0x0F, op, 0xC0 | ((reg & 7) << 3) | (rm & 7)]);
        }

        /// `op reg, [base + 8 · index]` (or the store, `[…], reg`); `base`
        /// is `rdi`, `rsi` or `r8`–`r10`, none of which needs a SIB byte.
        fn rm(&mut self, (prefix, op): (u8, u8), reg: u8, base: u8, index: usize) {
            self.code.push(prefix);
            let rex = 0x40 | ((reg >> 3) << 2) | (base >> 3);
            if rex != 0x40 {
                self.code.push(rex);
            }
            self.code.extend([0x0F, op]);
            let disp = 8 * index as i64;
            if disp < 128 {
                self.code.push(0x40 | ((reg & 7) << 3) | (base & 7));
                self.code.push(disp as u8);
            } else {
                self.code.push(0x80 | ((reg & 7) << 3) | (base & 7));
                self.code.extend((disp as i32).to_le_bytes());
            }
        }

        /// `op r64, imm32` for `op` = `/digit` of opcode 81 (add 0, sub 5,
        /// cmp 7), any register below `r16`.
        fn imm(&mut self, digit: u8, reg: u8, value: usize) {
            self.code
                .extend([0x48 | (reg >> 3), 0x81, 0xC0 | (digit << 3) | (reg & 7)]);
            self.code.extend((value as u32).to_le_bytes());
        }

        /// `mov dst, src` (64-bit registers below `r16`).
        fn mov(&mut self, dst: u8, src: u8) {
            self.code.extend([
                0x48 | ((src >> 3) << 2) | (dst >> 3),
                0x89,
                0xC0 | ((src & 7) << 3) | (dst & 7),
            ]);
        }

        /// `rax ← r9 + j` (the step index in a loop).
        fn step_index(&mut self, j: usize) {
            self.code.extend([0x49, 0x8D, 0x81]);
            self.code.extend((j as u32).to_le_bytes());
        }

        /// `cmp reg, rax` (a register below `r8`).
        fn cmp_rax(&mut self, reg: u8) {
            self.code.extend([0x48, 0x39, 0xC0 | reg]);
        }

        /// `xmm ← bits` (through `rax`).
        fn constant(&mut self, xmm: u8, bits: u64) {
            self.code.extend([0x48, 0xB8]);
            self.code.extend(bits.to_le_bytes());
            // movq xmm, rax
            self.code.extend([
                0x66,
                if xmm >= 8 { 0x4C } else { 0x48 },
                0x0F,
                0x6E,
                0xC0 | ((xmm & 7) << 3),
            ]);
        }

        /// `cmp reg, k` (a 64-bit register below `r8`).
        fn cmp(&mut self, reg: u8, k: usize) {
            self.code.extend([0x48, 0x81, 0xF8 | reg]);
            self.code.extend((k as u32).to_le_bytes());
        }

        fn label(&mut self) -> usize {
            self.labels.push(None);
            self.labels.len() - 1
        }

        fn bind(&mut self, label: usize) {
            self.labels[label] = Some(self.code.len());
        }

        /// A jump on condition `cc` (`0x86` jbe, `0x82` jb; `None`: always).
        fn jump(&mut self, cc: Option<u8>, label: usize) {
            match cc {
                Some(cc) => self.code.extend([0x0F, cc]),
                None => self.code.push(0xE9),
            }
            self.jumps.push((self.code.len(), label));
            self.code.extend([0; 4]);
        }

        /// `rax ← value; ret`.
        fn ret(&mut self, value: usize) {
            self.code.push(0xB8);
            self.code.extend((value as u32).to_le_bytes());
            self.code.push(0xC3);
        }

        /// A jump to `entries[index]`, `index` in register `reg` (`rsi`,
        /// `rdx` or `rcx`), through a table of offsets after the code
        /// (`rax` and `r11` are clobbered).
        fn dispatch(&mut self, reg: u8, entries: Vec<usize>) {
            let table = self.label();
            // lea rax, [rip + table]
            self.code.extend([0x48, 0x8D, 0x05]);
            self.jumps.push((self.code.len(), table));
            self.code.extend([0; 4]);
            // movsxd r11, dword [rax + reg · 4]; add rax, r11; jmp rax
            self.code.extend([0x4C, 0x63, 0x1C, 0x80 | (reg << 3)]);
            self.code.extend([0x4C, 0x01, 0xD8, 0xFF, 0xE0]);
            self.tables.push((table, entries));
        }

        /// The code, its tables written and its jumps resolved.
        fn finish(mut self) -> Vec<u8> {
            for (table, entries) in std::mem::take(&mut self.tables) {
                while !self.code.len().is_multiple_of(4) {
                    self.code.push(0xCC);
                }
                self.bind(table);
                let at = self.code.len();
                for e in entries {
                    let to = self.labels[e].expect("every entry is bound");
                    self.code.extend(((to as i64 - at as i64) as i32).to_le_bytes());
                }
            }
            for &(at, label) in &self.jumps {
                let to = self.labels[label].expect("every label jumped to is bound");
                let rel = to as i64 - (at as i64 + 4);
                self.code[at..at + 4].copy_from_slice(&(rel as i32).to_le_bytes());
            }
            self.code
        }
    }

    const JBE: Option<u8> = Some(0x86);
    const JB: Option<u8> = Some(0x82);
    const JA: Option<u8> = Some(0x87);
    const JE: Option<u8> = Some(0x84);
    /// Integer registers: arguments after the first two (`rsi`, `rdx`,
    /// `rcx`), and the loop's band and right-hand side pointers (`r8`,
    /// `r10`) and step index (`r9`).
    const RDX: u8 = 2;
    const RCX: u8 = 1;
    const R8: u8 = 8;
    const R9: u8 = 9;
    const R10: u8 = 10;
    const ADD: u8 = 0;
    const SUB: u8 = 5;
    const CMP: u8 = 7;

    /// A run of steps that repeat: steps `start .. end` are `(end − start)
    /// / period` repetitions of the first `period` of them, at diagonals
    /// `shift` further on each time (a chain's links). The code holds one
    /// repetition as a loop.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub(super) struct Loop {
        pub(super) start: usize,
        pub(super) period: usize,
        pub(super) end: usize,
        /// the band entries between one repetition's diagonals and the next's
        pub(super) shift: usize,
    }

    impl Loop {
        fn holds(&self, k: usize) -> bool {
            self.start <= k && k < self.end
        }

        pub(super) fn repetitions(&self) -> usize {
            (self.end - self.start) / self.period
        }
    }

    /// Where the plan's steps repeat: its loops, in order and apart; the
    /// other steps are written out.
    ///
    /// Several loops, not one: a chain's links pivot alike only in runs.
    /// The threshold rule picks a link's pivot rows by its values, so the
    /// 128-link director chain from `sway` (links within 0.5 rad of the
    /// vertical in an S) has four kinds of link in runs of 2 to 23, and a
    /// single loop held 23 of its 128 links: the rest, written out, made a
    /// factorization's code 1.2 MB, beyond the core's caches. As 14 loops
    /// (1240 of its 1280 steps) it is 120 kB, the 16-link chain's 26 kB,
    /// and the 128-link step took 1.5 times less time.
    #[derive(Clone, Debug, Default, PartialEq, Eq)]
    pub(super) struct Layout {
        pub(super) loops: Vec<Loop>,
    }

    /// Repetitions fewer than this are written out.
    const MIN_REPEATS: usize = 3;
    /// Periods tried.
    const MAX_PERIOD: usize = 64;
    /// What a loop's own code (its pointers, count and jump, and a stub
    /// per repetition) costs, in written-out steps.
    const LOOP_COST: usize = 1;

    impl Layout {
        /// The layout of the least code: for each period, the runs that
        /// repeat at it, from the first step on; the period whose loops
        /// leave the fewest steps written out.
        pub(super) fn of(plan: &LuPlan) -> Layout {
            let steps = &plan.steps;
            let n = steps.len();
            let id = step_ids(steps);
            let same = |a: usize, b: usize| id[a] == id[b];
            let mut best = Layout::default();
            let mut written = n;
            for period in 1..=MAX_PERIOD.min(n / MIN_REPEATS) {
                let mut loops = Vec::new();
                let mut k = 0;
                while k + period < n {
                    if !same(k, k + period) {
                        k += 1;
                        continue;
                    }
                    // The longest run of steps equal to the step `period` on.
                    let from = k;
                    while k + period < n && same(k, k + period) {
                        k += 1;
                    }
                    // Steps from .. k + period repeat with this period.
                    let repeats = (k + period - from) / period;
                    let shift = steps[from + period].diagonal - steps[from].diagonal;
                    let uniform = (from..from + (repeats - 1) * period)
                        .all(|j| steps[j + period].diagonal - steps[j].diagonal == shift);
                    if repeats >= MIN_REPEATS && uniform {
                        let end = from + repeats * period;
                        loops.push(Loop {
                            start: from,
                            period,
                            end,
                            shift,
                        });
                        // What is left of the run may begin the next.
                        k = end;
                    }
                }
                let looped: usize = loops.iter().map(|l| l.end - l.start - l.period - LOOP_COST).sum();
                if n - looped < written {
                    written = n - looped;
                    best = Layout { loops };
                }
            }
            best
        }

        /// The index of the loop holding step `k`, if any.
        fn index_at(&self, k: usize) -> Option<usize> {
            let i = self.loops.partition_point(|l| l.end <= k);
            self.loops.get(i).filter(|l| l.holds(k)).map(|_| i)
        }

        /// The loop holding step `k`, if any.
        fn at(&self, k: usize) -> Option<&Loop> {
            self.index_at(k).map(|i| &self.loops[i])
        }

        /// Whether code may be entered at step `k` (forward): written-out
        /// steps and the first of each repetition.
        pub(super) fn entry(&self, k: usize) -> bool {
            self.at(k).is_none_or(|l| (k - l.start).is_multiple_of(l.period))
        }

        /// Whether the backward solve may be entered at row `k`: written-out
        /// rows and the last of each repetition.
        pub(super) fn top(&self, k: usize) -> bool {
            self.at(k).is_none_or(|l| (k + 1 - l.start).is_multiple_of(l.period))
        }

        /// The steps of the repetition holding step `k` (`k` alone where
        /// it is written out).
        pub(super) fn repetition(&self, k: usize) -> std::ops::Range<usize> {
            match self.at(k) {
                Some(l) => {
                    let first = l.start + (k - l.start) / l.period * l.period;
                    first..first + l.period
                }
                None => k..k + 1,
            }
        }
    }

    /// Each step's operations as a number, equal where they are (the first
    /// step with the same operations): comparing the lists at every pair
    /// of steps [`Layout::of`] tries took a quarter of a compilation (50 µs
    /// of 200 on the 16-link director chain).
    fn step_ids(steps: &[LuStep]) -> Vec<usize> {
        let same = |x: &LuStep, y: &LuStep| {
            x.pivot == y.pivot
                && x.candidates == y.candidates
                && x.swaps == y.swaps
                && x.multipliers == y.multipliers
                && x.upper == y.upper
        };
        // A fingerprint narrows the comparisons to steps that likely agree.
        let print = |s: &LuStep| {
            let lists = [&s.candidates, &s.swaps, &s.multipliers, &s.upper];
            let words = lists.iter().flat_map(|l| l.iter().chain([&u16::MAX]));
            words.fold(u64::from(s.pivot), |h, &w| {
                (h ^ u64::from(w)).wrapping_mul(0x100_0000_01b3)
            })
        };
        let mut first: std::collections::HashMap<u64, Vec<usize>> = std::collections::HashMap::new();
        let mut id = Vec::with_capacity(steps.len());
        for (k, s) in steps.iter().enumerate() {
            let seen = first.entry(print(s)).or_default();
            match seen.iter().find(|&&j| same(&steps[j], s)) {
                Some(&j) => id.push(j),
                None => {
                    seen.push(k);
                    id.push(k);
                }
            }
        }
        id
    }

    /// Where a step's code is: written out at step `k` (its entries at
    /// their indices from `rdi`, `rsi`), or step `j` of the loop from step
    /// `start` (from `r8`, `r10`, the step index `r9 + j`).
    #[derive(Clone, Copy)]
    enum At {
        Out(usize),
        Loop(usize, usize),
    }

    impl At {
        fn bases(self) -> (u8, u8) {
            match self {
                At::Out(_) => (AB, V),
                At::Loop(..) => (R8, R10),
            }
        }

        /// The step's row as its code names it: its own, or the first
        /// repetition's (`r10` and `r8` move on).
        fn row(self) -> usize {
            match self {
                At::Out(k) => k,
                At::Loop(start, j) => start + j,
            }
        }

        /// `cmp reg, k` for the step's index `k`, then a jump to `label`
        /// on `cc` (in a loop `rax` is left holding `k`).
        fn check(self, a: &mut Asm, reg: u8, cc: Option<u8>, label: usize) {
            match self {
                At::Out(k) => a.cmp(reg, k),
                At::Loop(_, j) => {
                    a.step_index(j);
                    a.cmp_rax(reg);
                }
            }
            a.jump(cc, label);
        }
    }

    /// `fn(ab, v, from, limit, tiny, keep) -> the step stopped before`:
    /// steps `from .. limit` (`from < limit ≤ n`, `from` an entry of
    /// `layout`), each applying its forward substitution to `v` too.
    pub(super) fn factor(plan: &LuPlan, layout: &Layout) -> Vec<u8> {
        let mut a = Asm::default();
        let n = plan.steps.len();
        a.rr(MOVAPD, TINY, 0);
        a.rr(MOVAPD, KEEP, 1);
        a.constant(MASK, !(1u64 << 63));
        a.constant(ONE, 1f64.to_bits());
        let labels: Vec<usize> = (0..n).map(|_| a.label()).collect();
        let stops: Vec<usize> = (0..n).map(|_| a.label()).collect();
        let (refuse, ret_rax) = (a.label(), a.label());
        let bodies: Vec<usize> = layout.loops.iter().map(|_| a.label()).collect();
        let entries = entries(&mut a, layout, &labels, refuse, Layout::entry);
        a.dispatch(RDX, entries.iter().map(|e| e.0).collect());
        let mut k = 0;
        for (l, &body) in layout.loops.iter().zip(&bodies) {
            for k in k..l.start {
                a.bind(labels[k]);
                factor_step(&mut a, plan, k, At::Out(k), stops[k]);
            }
            loop_pointers(&mut a, l, 0);
            a.bind(body);
            for j in 0..l.period {
                factor_step(&mut a, plan, l.start + j, At::Loop(l.start, j), ret_rax);
            }
            a.imm(ADD, R8, 8 * l.shift);
            a.imm(ADD, R10, 8 * l.period);
            a.imm(ADD, R9, l.period);
            a.imm(CMP, R9, l.end);
            a.jump(JB, body);
            k = l.end;
        }
        for k in k..n {
            a.bind(labels[k]);
            factor_step(&mut a, plan, k, At::Out(k), stops[k]);
        }
        a.ret(n);
        for (k, &stop) in stops.iter().enumerate() {
            a.bind(stop);
            a.ret(k);
        }
        a.bind(ret_rax);
        a.code.push(0xC3);
        a.bind(refuse);
        a.mov(0, RDX);
        a.code.push(0xC3);
        repetition_stubs(&mut a, layout, &entries, &bodies, false);
        a.finish()
    }

    /// A loop's pointers and index at repetition `i`: `r8 = rdi + 8 ·
    /// shift · i`, `r10 = rsi + 8 · period · i` (`lea`), `r9 = start +
    /// period · i`.
    fn loop_pointers(a: &mut Asm, l: &Loop, i: usize) {
        a.code.extend([0x4C, 0x8D, 0x87]);
        a.code.extend(((8 * l.shift * i) as u32).to_le_bytes());
        a.code.extend([0x4C, 0x8D, 0x96]);
        a.code.extend(((8 * l.period * i) as u32).to_le_bytes());
        a.code.extend([0x49, 0xC7, 0xC1]);
        a.code.extend(((l.start + l.period * i) as u32).to_le_bytes());
    }

    /// The dispatch table's targets: each written-out step's label in
    /// `written`, a stub for each repetition at the step where `enters`
    /// (`(label, Some((loop, repetition)))`), `refuse` elsewhere.
    fn entries(
        a: &mut Asm,
        layout: &Layout,
        written: &[usize],
        refuse: usize,
        enters: fn(&Layout, usize) -> bool,
    ) -> Vec<(usize, Option<(usize, usize)>)> {
        (0..written.len())
            .map(|k| match layout.index_at(k) {
                None => (written[k], None),
                Some(i) if enters(layout, k) => {
                    let l = &layout.loops[i];
                    (a.label(), Some((i, (k - l.start) / l.period)))
                }
                Some(_) => (refuse, None),
            })
            .collect()
    }

    /// The stubs that enter a loop's repetition `i` at its first step
    /// (forward) or its last (backward, `top`): the loop's pointers and
    /// index set, and for the backward solve the next row's value loaded.
    fn repetition_stubs(
        a: &mut Asm,
        layout: &Layout,
        entries: &[(usize, Option<(usize, usize)>)],
        bodies: &[usize],
        top: bool,
    ) {
        let n = entries.len();
        for &(label, at) in entries {
            let Some((l, i)) = at else { continue };
            let lp = &layout.loops[l];
            a.bind(label);
            loop_pointers(a, lp, i);
            let row = lp.start + lp.period * (i + 1);
            if top && row < n {
                a.rm(MOVSD_LOAD, NEXT, V, row);
            }
            a.jump(None, bodies[l]);
        }
    }

    /// Step `k` of the factorization, its code at `at`; a refused step
    /// jumps to `stop` (with `rax` = its index in a loop).
    fn factor_step(a: &mut Asm, plan: &LuPlan, k: usize, at: At, stop: usize) {
        let s = &plan.steps[k];
        let stride = plan.stride;
        let (base, v) = at.bases();
        let row = at.row();
        let d = s.diagonal;
        at.check(a, RCX, JBE, stop);
        // big = fold of |a(k + o, k)|: `maxsd a, big` is `a > big ? a : big`.
        a.rr(XORPD, BIG, BIG);
        for &o in &s.candidates {
            a.rm(MOVSD_LOAD, ENTRY, base, d + o as usize);
            a.rr(ANDPD, ENTRY, MASK);
            a.rr(MAXSD, ENTRY, BIG);
            a.rr(MOVAPD, BIG, ENTRY);
        }
        // Stop where big ≤ tiny (or unordered) …
        a.rr(UCOMISD, BIG, TINY);
        a.jump(JBE, stop);
        // … or |pivot| < keep · big (or unordered).
        a.rm(MOVSD_LOAD, ENTRY, base, d + s.pivot as usize);
        a.rr(ANDPD, ENTRY, MASK);
        a.rr(MOVAPD, ROW, KEEP);
        a.rr(MULSD, ROW, BIG);
        a.rr(UCOMISD, ENTRY, ROW);
        a.jump(JB, stop);
        let p = s.pivot as usize;
        for &c in &s.swaps {
            let e = d + c as usize * stride;
            a.rm(MOVSD_LOAD, ENTRY, base, e);
            a.rm(MOVSD_LOAD, ROW, base, e + p);
            a.rm(MOVSD_STORE, ROW, base, e);
            a.rm(MOVSD_STORE, ENTRY, base, e + p);
        }
        a.rr(MOVAPD, INV, ONE);
        a.rm(DIVSD, INV, base, d);
        a.rm(MOVSD_STORE, INV, base, d);
        // Multipliers in adjacent rows are updated two at a time (packed
        // SSE2: each lane the scalar operation, to the bit).
        let slots = pairs(&s.multipliers);
        // The forward substitution's step, where a right-hand side was
        // given (`rsi` not null): its interchange, then per chunk of
        // multipliers `v[k + o] −= l_o · v[k]`, as `forward` computes it.
        // Its chain from row to row (each row's value waits for the last)
        // runs here in the shadow of the updates; alone, the 16-link
        // director chain's forward solve took a tenth of its step.
        let skip = a.label();
        if p != 0 && slots.is_empty() {
            a.code.extend([0x48, 0x85, 0xF6]); // test rsi, rsi
            a.jump(JE, skip);
            swap_rows(a, v, row, p);
        }
        for (c, chunk) in slots.chunks(HELD_M).enumerate() {
            for (j, &(o, two)) in chunk.iter().enumerate() {
                let m = FIRST_M + j as u8;
                a.rm(MOVSD_LOAD, m, base, d + o);
                a.rr(MULSD, m, INV);
                a.rm(MOVSD_STORE, m, base, d + o);
                if two {
                    a.rm(MOVSD_LOAD, ENTRY, base, d + o + 1);
                    a.rr(MULSD, ENTRY, INV);
                    a.rm(MOVSD_STORE, ENTRY, base, d + o + 1);
                    a.rr(UNPCKLPD, m, ENTRY);
                }
            }
            for &c in &s.upper {
                let u = d + c as usize * stride;
                a.rm(MOVSD_LOAD, ROW, base, u);
                a.rr(UNPCKLPD, ROW, ROW);
                subtract_multiples(a, chunk, base, u);
            }
            let next = a.label();
            a.code.extend([0x48, 0x85, 0xF6]); // test rsi, rsi
            a.jump(JE, next);
            if c == 0 && p != 0 {
                swap_rows(a, v, row, p);
            }
            a.rm(MOVSD_LOAD, ROW, v, row);
            a.rr(UNPCKLPD, ROW, ROW);
            subtract_multiples(a, chunk, v, row);
            a.bind(next);
        }
        a.bind(skip);
    }

    /// `x[at + o] −= m_o · ROW` for the multipliers of `chunk` (held in
    /// registers from `FIRST_M`; adjacent rows two at a time), `x` at
    /// `base`: a column of the band (`at` its entry in the pivot row) or
    /// the right-hand side (`at` the pivot's row).
    fn subtract_multiples(a: &mut Asm, chunk: &[(usize, bool)], base: u8, at: usize) {
        for (j, &(o, two)) in chunk.iter().enumerate() {
            let (load, mul, sub, store) = if two {
                (MOVUPD_LOAD, MULPD, SUBPD, MOVUPD_STORE)
            } else {
                (MOVSD_LOAD, MULSD, SUBSD, MOVSD_STORE)
            };
            a.rm(load, ENTRY, base, at + o);
            a.rr(MOVAPD, BIG, FIRST_M + j as u8);
            a.rr(mul, BIG, ROW);
            a.rr(sub, ENTRY, BIG);
            a.rm(store, ENTRY, base, at + o);
        }
    }

    /// `v[row] ↔ v[row + p]`.
    fn swap_rows(a: &mut Asm, v: u8, row: usize, p: usize) {
        a.rm(MOVSD_LOAD, ENTRY, v, row);
        a.rm(MOVSD_LOAD, ROW, v, row + p);
        a.rm(MOVSD_STORE, ROW, v, row);
        a.rm(MOVSD_STORE, ENTRY, v, row + p);
    }

    // Registers of the solves: a factor's entry and products (0), v[k] or
    // the row's sum (1), the entry updated (2), the value handed to the
    // next row (3), v[k] in both lanes (4): each value of `v` the next row
    // reads first (`v[k + 1]` forward, `v[i + 1]` backward) is kept in a
    // register as well as stored, so that the chain from one row to the
    // next does not wait for a store to reach its load. Code entered at a
    // row takes it from memory.
    const NEXT: u8 = 3;

    /// `fn(ab, v, from, upto)`: the forward substitution through steps
    /// `from .. upto` (`from < upto ≤ n`, `from` an entry of `layout`).
    pub(super) fn forward(plan: &LuPlan, layout: &Layout) -> Vec<u8> {
        let mut a = Asm::default();
        let n = plan.steps.len();
        let labels: Vec<usize> = (0..n).map(|_| a.label()).collect();
        let (end, refuse) = (a.label(), a.label());
        let bodies: Vec<usize> = layout.loops.iter().map(|_| a.label()).collect();
        let entries = entries(&mut a, layout, &labels, refuse, Layout::entry);
        a.dispatch(RDX, entries.iter().map(|e| e.0).collect());
        let mut stubs = Vec::new();
        let mut handed = false;
        let step = |a: &mut Asm, k: usize, at: At, handed: &mut bool| {
            let s = &plan.steps[k];
            let (ab, v) = at.bases();
            let row = at.row();
            at.check(a, RCX, JBE, end);
            let p = s.pivot as usize;
            if p != 0 {
                a.rm(MOVSD_LOAD, 2, v, row);
                a.rm(MOVSD_LOAD, 1, v, row + p);
                a.rm(MOVSD_STORE, 1, v, row);
                a.rm(MOVSD_STORE, 2, v, row + p);
            } else if *handed {
                a.rr(MOVAPD, 1, NEXT);
            } else {
                a.rm(MOVSD_LOAD, 1, v, row);
            }
            // v[k + 1] first (the next step waits for it), then the other
            // rows, adjacent ones two at a time.
            *handed = s.multipliers.contains(&1);
            if *handed {
                a.rm(MOVSD_LOAD, 0, ab, s.diagonal + 1);
                a.rr(MULSD, 0, 1);
                a.rm(MOVSD_LOAD, NEXT, v, row + 1);
                a.rr(SUBSD, NEXT, 0);
                a.rm(MOVSD_STORE, NEXT, v, row + 1);
            }
            let rest: Vec<u16> = s.multipliers.iter().copied().filter(|&o| o != 1).collect();
            if !rest.is_empty() {
                a.rr(MOVAPD, 4, 1);
                a.rr(UNPCKLPD, 4, 4);
            }
            for (o, two) in pairs(&rest) {
                let (load, mul, sub, store) = if two {
                    (MOVUPD_LOAD, MULPD, SUBPD, MOVUPD_STORE)
                } else {
                    (MOVSD_LOAD, MULSD, SUBSD, MOVSD_STORE)
                };
                a.rm(load, 0, ab, s.diagonal + o);
                a.rr(mul, 0, 4);
                a.rm(load, 2, v, row + o);
                a.rr(sub, 2, 0);
                a.rm(store, 2, v, row + o);
            }
        };
        // A written-out step: its label, or a stub's where the step before
        // hands v[k] on (the stub loads it, then enters the step's code).
        let mut out = |a: &mut Asm, k: usize, handed: &mut bool| {
            if *handed && plan.steps[k].pivot == 0 {
                let inside = a.label();
                stubs.push((labels[k], inside, k));
                a.bind(inside);
            } else {
                a.bind(labels[k]);
            }
            step(a, k, At::Out(k), handed);
        };
        let mut k = 0;
        for (l, &body) in layout.loops.iter().zip(&bodies) {
            for k in k..l.start {
                out(&mut a, k, &mut handed);
            }
            loop_pointers(&mut a, l, 0);
            a.bind(body);
            // The first step of a repetition takes v[k] from memory.
            handed = false;
            for j in 0..l.period {
                step(&mut a, l.start + j, At::Loop(l.start, j), &mut handed);
            }
            a.imm(ADD, R8, 8 * l.shift);
            a.imm(ADD, R10, 8 * l.period);
            a.imm(ADD, R9, l.period);
            a.imm(CMP, R9, l.end);
            a.jump(JB, body);
            k = l.end;
        }
        for k in k..n {
            out(&mut a, k, &mut handed);
        }
        a.bind(end);
        a.code.push(0xC3);
        a.bind(refuse);
        a.code.push(0xC3);
        // An entered step whose v[k] the step before hands on: v[k] from
        // memory, then the step's code after its check and load.
        for (label, inside, k) in stubs {
            a.bind(label);
            a.cmp(RCX, k);
            a.jump(JBE, end);
            a.rm(MOVSD_LOAD, NEXT, V, k);
            a.jump(None, inside);
        }
        repetition_stubs(&mut a, layout, &entries, &bodies, false);
        a.finish()
    }

    /// `fn(ab, v, lo, top)`: the backward substitution of rows `top` down
    /// to `lo` (`lo ≤ top < n`, `top` a top of `layout`; the rows after it
    /// substituted already).
    pub(super) fn backward(plan: &LuPlan, layout: &Layout) -> Vec<u8> {
        let mut a = Asm::default();
        let stride = plan.stride;
        let n = plan.steps.len();
        let (end, refuse) = (a.label(), a.label());
        let bodies: Vec<usize> = layout.loops.iter().map(|_| a.label()).collect();
        let labels: Vec<usize> = (0..n).map(|_| a.label()).collect();
        // Tops: written-out rows (through a stub that loads the next row's
        // value) and the last row of each repetition.
        let stubs: Vec<usize> = (0..n).map(|_| a.label()).collect();
        let entries = entries(&mut a, layout, &stubs, refuse, Layout::top);
        a.dispatch(RCX, entries.iter().map(|e| e.0).collect());
        let row = |a: &mut Asm, k: usize, at: At, handed: bool| {
            let s = &plan.steps[k];
            let (ab, v) = at.bases();
            let r = at.row();
            at.check(a, RDX, JA, end);
            a.rm(MOVSD_LOAD, 1, v, r);
            for &c in &s.upper {
                a.rm(MOVSD_LOAD, 0, ab, s.diagonal + c as usize * stride);
                if c == 1 && handed {
                    a.rr(MULSD, 0, NEXT);
                } else {
                    a.rm(MULSD, 0, v, r + c as usize);
                }
                a.rr(SUBSD, 1, 0);
            }
            a.rm(MULSD, 1, ab, s.diagonal);
            a.rm(MOVSD_STORE, 1, v, r);
            a.rr(MOVAPD, NEXT, 1);
        };
        let mut k = n;
        for (l, &body) in layout.loops.iter().zip(&bodies).rev() {
            for k in (l.end..k).rev() {
                a.bind(labels[k]);
                row(&mut a, k, At::Out(k), true);
            }
            loop_pointers(&mut a, l, l.repetitions() - 1);
            a.bind(body);
            for j in (0..l.period).rev() {
                row(&mut a, l.start + j, At::Loop(l.start, j), true);
            }
            a.imm(SUB, R8, 8 * l.shift);
            a.imm(SUB, R10, 8 * l.period);
            a.imm(SUB, R9, l.period);
            a.imm(CMP, R9, l.start);
            // Signed: the index may go below zero when the loop starts at 0.
            a.code.extend([0x0F, 0x8D]);
            a.jumps.push((a.code.len(), body));
            a.code.extend([0; 4]);
            k = l.start;
        }
        for k in (0..k).rev() {
            a.bind(labels[k]);
            row(&mut a, k, At::Out(k), true);
        }
        a.bind(end);
        a.code.push(0xC3);
        a.bind(refuse);
        a.code.push(0xC3);
        for k in 0..n {
            if layout.at(k).is_none() {
                a.bind(stubs[k]);
                if k + 1 < n {
                    a.rm(MOVSD_LOAD, NEXT, V, k + 1);
                }
                a.jump(None, labels[k]);
            }
        }
        repetition_stubs(&mut a, layout, &entries, &bodies, true);
        a.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hamel_kernel::LuStep;

    /// A random `n × n` band `(kl, ku)`, packed with its fill-in rows, and
    /// the plan of its factorization with partial pivoting over the whole
    /// band (every entry structural), found by running the reference.
    fn band(n: usize, kl: usize, ku: usize, seed: u64) -> (Vec<f64>, LuPlan) {
        let ld = 2 * kl + ku + 1;
        let at = |i: usize, c: usize| c * ld + kl + ku + i - c;
        let mut state = seed;
        let mut rnd = move || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
        };
        let mut ab = vec![0.0; n * ld];
        for c in 0..n {
            for i in c.saturating_sub(ku)..(c + kl + 1).min(n) {
                ab[at(i, c)] = rnd();
            }
        }
        let mut plan = LuPlan {
            stride: ld - 1,
            len: n * ld,
            steps: Vec::new(),
        };
        let mut work = ab.clone();
        for k in 0..n {
            let rows = kl.min(n - 1 - k);
            let cols = (kl + ku).min(n - 1 - k);
            let d = at(k, k);
            let pivot = (0..=rows).fold(0, |p, o| if work[d + o].abs() > work[d + p].abs() { o } else { p });
            plan.steps.push(LuStep {
                diagonal: d,
                pivot: pivot as u16,
                candidates: (0..=rows as u16).collect(),
                swaps: if pivot == 0 {
                    vec![]
                } else {
                    (0..=cols as u16).collect()
                },
                multipliers: (1..=rows as u16).collect(),
                upper: (1..=cols as u16).rev().collect(),
            });
            assert_eq!(plan.factor(&mut work, k, k + 1, 0.0, 1.0), k + 1);
        }
        (ab, plan)
    }

    /// A diagonally dominant band whose plan pivots on the row below at
    /// the steps `pivots` picks: where they repeat with a period but for
    /// the last ones (the band narrows), its code loops.
    fn pivoting(n: usize, kl: usize, ku: usize, pivots: impl Fn(usize) -> bool) -> (Vec<f64>, LuPlan) {
        let (mut ab, mut plan) = band(n, kl, ku, 7);
        let ld = 2 * kl + ku + 1;
        for k in 0..n {
            ab[k * ld + kl + ku] += 10.0;
        }
        for (k, s) in plan.steps.iter_mut().enumerate() {
            let cols = (kl + ku).min(n - 1 - k);
            s.pivot = u16::from(pivots(k) && k + 1 < n);
            s.swaps = if s.pivot == 0 {
                vec![]
            } else {
                (0..=cols as u16).collect()
            };
        }
        (ab, plan)
    }

    /// Pivots at every `period`-th step: one loop.
    fn periodic(n: usize, kl: usize, ku: usize, period: usize) -> (Vec<f64>, LuPlan) {
        pivoting(n, kl, ku, |k| k % period == 1)
    }

    /// Blocks of `period` steps (a chain's links) of the kinds `kinds`
    /// names, kind `c` pivoting at the block's step `c` (none for kind 0),
    /// as links of a long chain pivot alike in runs.
    fn mosaic(kl: usize, ku: usize, period: usize, kinds: &[usize]) -> (Vec<f64>, LuPlan) {
        let n = period * kinds.len();
        pivoting(n, kl, ku, |k| {
            let c = kinds[k / period];
            c > 0 && k % period == c
        })
    }

    fn bits(x: &[f64]) -> Vec<u64> {
        x.iter().map(|v| v.to_bits()).collect()
    }

    #[test]
    fn compiled_steps_are_the_reference_to_the_bit() {
        if !LU_COMPILED {
            return;
        }
        for (n, kl, ku, seed) in [(23, 3, 2, 1), (40, 2, 6, 2), (5, 1, 1, 3), (64, 10, 10, 4)] {
            let (ab, plan) = band(n, kl, ku, seed);
            let code = LuCode::compile(&plan).unwrap();
            let (tiny, keep) = (1e-300, 1e-3);
            let mut want = ab.clone();
            assert_eq!(plan.factor(&mut want, 0, n, tiny, keep), n);
            let mut got = ab.clone();
            assert_eq!(code.factor(&mut got, 0, n, tiny, keep), n);
            assert_eq!(bits(&got), bits(&want));
            // In two runs, entered at a step.
            let mut split = ab.clone();
            assert_eq!(code.factor(&mut split, 0, n / 3, tiny, keep), n / 3);
            assert_eq!(code.factor(&mut split, n / 3, n, tiny, keep), n);
            assert_eq!(bits(&split), bits(&want));
            // The solve, whole and with its middle steps taken by the
            // reference (as the runtime does around a pivot that moved).
            let b: Vec<f64> = (0..n).map(|i| (i as f64 * 0.37).sin()).collect();
            let mut x = b.clone();
            plan.forward(&want, &mut x, 0, n);
            plan.backward(&want, &mut x, 0, n);
            let mut y = b.clone();
            assert!(code.forward(&got, &mut y, 0, n));
            assert!(code.backward(&got, &mut y, 0, n));
            assert_eq!(bits(&y), bits(&x));
            // The forward substitution taken along with the factorization.
            let (mut fused, mut f) = (ab.clone(), b.clone());
            assert_eq!(code.factor_forward(&mut fused, Some(&mut f), 0, n, tiny, keep), n);
            assert_eq!(bits(&fused), bits(&want));
            assert!(code.backward(&fused, &mut f, 0, n));
            assert_eq!(bits(&f), bits(&x));
            let (a, m) = (n / 4, n / 2);
            let mut z = b.clone();
            code.forward(&got, &mut z, 0, a);
            plan.forward(&got, &mut z, a, m);
            code.forward(&got, &mut z, m, n);
            code.backward(&got, &mut z, m, n);
            plan.backward(&got, &mut z, a, m);
            code.backward(&got, &mut z, 0, a);
            assert_eq!(bits(&z), bits(&x));
        }
    }

    /// Steps that repeat are loops: the code, entered and left at any
    /// step (the reference taking the steps of a repetition it cannot be
    /// entered at), gives the reference's bits.
    #[test]
    fn looped_steps_are_the_reference_to_the_bit() {
        if !LU_COMPILED {
            return;
        }
        for (n, kl, ku, period) in [(40, 2, 3, 1), (47, 3, 2, 3), (60, 4, 4, 5)] {
            let (ab, plan) = periodic(n, kl, ku, period);
            let layout = x64::Layout::of(&plan);
            assert!(
                layout.loops.iter().any(|l| l.end - l.start >= 3 * l.period),
                "{layout:?}"
            );
            agrees_in_runs(
                &ab,
                &plan,
                &[vec![], vec![1], vec![n / 2 + 1, n / 2 + 2], vec![7, 13, n - 2]],
            );
        }
    }

    /// Blocks that pivot alike in runs, as a long chain's links do: a loop
    /// for each run of three or more, the code the reference's bits
    /// entered anywhere, inside a loop, between two, at a run's edge.
    #[test]
    fn a_mosaic_of_pivots_is_several_loops() {
        if !LU_COMPILED {
            return;
        }
        let kinds = [0, 0, 0, 0, 2, 2, 2, 2, 2, 1, 0, 0, 0, 3, 3, 3, 2, 2, 2, 2, 0, 0];
        let (kl, ku, period) = (3, 4, 5);
        let (ab, plan) = mosaic(kl, ku, period, &kinds);
        let n = plan.steps.len();
        let layout = x64::Layout::of(&plan);
        let loops = &layout.loops;
        assert!(loops.len() >= 4, "{layout:?}");
        for (l, next) in loops.iter().zip(loops.iter().skip(1)) {
            assert!(l.start < l.end && l.end <= next.start, "{layout:?}");
        }
        for l in loops {
            assert!(l.repetitions() >= 3 && (l.end - l.start) % l.period == 0, "{l:?}");
            // A loop's repetitions are alike: same operations, one shift.
            let steps = &plan.steps;
            for k in l.start..l.end - l.period {
                let (a, b) = (&steps[k], &steps[k + l.period]);
                assert_eq!(
                    (a.pivot, &a.swaps, &a.upper),
                    (b.pivot, &b.swaps, &b.upper),
                    "{l:?} at {k}"
                );
                assert_eq!(b.diagonal - a.diagonal, l.shift);
            }
        }
        // Most steps are looped: each run's blocks but its first.
        let written = n - loops.iter().map(|l| l.end - l.start - l.period).sum::<usize>();
        assert!(written <= n / 2, "{written} of {n} written out: {layout:?}");
        let inside = loops[1].start + loops[1].period + 2;
        let between = loops[0].end;
        agrees_in_runs(
            &ab,
            &plan,
            &[
                vec![],
                vec![inside],
                vec![between, inside + 3],
                vec![3, 21, 22, 48, n - 7, n - 1],
            ],
        );
    }

    /// The compiled code in runs cut at `cuts` against the reference,
    /// bit for bit: the factorization, the two substitutions, and the two
    /// fused.
    fn agrees_in_runs(ab: &[f64], plan: &LuPlan, cuts: &[Vec<usize>]) {
        let n = plan.steps.len();
        let code = LuCode::compile(plan).unwrap();
        let (tiny, keep) = (1e-300, 1e-3);
        let mut want = ab.to_vec();
        assert_eq!(plan.factor(&mut want, 0, n, tiny, keep), n);
        for cuts in cuts {
            let mut got = ab.to_vec();
            let mut from = 0;
            for &to in cuts.iter().chain([&n]) {
                assert_eq!(code.factor(&mut got, from, to, tiny, keep), to, "{cuts:?}");
                from = to;
            }
            assert_eq!(bits(&got), bits(&want), "n = {n}, cuts {cuts:?}");
            let b: Vec<f64> = (0..n).map(|i| (i as f64 * 0.37).sin()).collect();
            let mut x = b.clone();
            plan.forward(&want, &mut x, 0, n);
            plan.backward(&want, &mut x, 0, n);
            // The solve in runs (forward in order, backward in reverse).
            let mut y = b.clone();
            let runs: Vec<usize> = [0].into_iter().chain(cuts.iter().copied()).chain([n]).collect();
            for w in runs.windows(2) {
                assert!(code.forward(&got, &mut y, w[0], w[1]));
            }
            for w in runs.windows(2).rev() {
                assert!(code.backward(&got, &mut y, w[0], w[1]));
            }
            assert_eq!(bits(&y), bits(&x), "n = {n}, cuts {cuts:?}");
            // Factored and forward-substituted at once, in the same runs.
            let (mut fused, mut f) = (ab.to_vec(), b.clone());
            for w in runs.windows(2) {
                assert_eq!(
                    code.factor_forward(&mut fused, Some(&mut f), w[0], w[1], tiny, keep),
                    w[1]
                );
            }
            assert_eq!(bits(&fused), bits(&want), "n = {n}, cuts {cuts:?}");
            // Entered inside a repetition too: the reference's steps take
            // their forward substitution along as well.
            assert!(code.backward(&fused, &mut f, 0, n));
            assert_eq!(bits(&f), bits(&x), "n = {n}, cuts {cuts:?}");
        }
    }

    #[test]
    fn a_refused_step_stops_the_code_before_it() {
        if !LU_COMPILED {
            return;
        }
        let (ab, mut plan) = band(30, 3, 3, 5);
        // Step 11 told to pivot on a row that is not its column's largest:
        // with keep = 0.999 the check refuses it (the reference agrees).
        let s = &mut plan.steps[11];
        s.pivot = if s.pivot == 0 { 1 } else { 0 };
        s.swaps = if s.pivot == 0 { vec![] } else { (0..=6).collect() };
        let code = LuCode::compile(&plan).unwrap();
        let mut want = ab.clone();
        let mut got = ab.clone();
        let stop = plan.factor(&mut want, 0, 30, 1e-300, 0.999);
        assert!(stop <= 11, "the reference stops at {stop}");
        assert_eq!(code.factor(&mut got, 0, 30, 1e-300, 0.999), stop);
        assert_eq!(bits(&got), bits(&want));
        // A column no larger than `tiny` stops it at once, as does an
        // empty range; a band too short is left alone.
        let mut first = ab.clone();
        assert_eq!(code.factor(&mut first, 0, 30, 1e300, 1e-3), 0);
        assert_eq!(bits(&first), bits(&ab));
        assert_eq!(code.factor(&mut first, 7, 7, 1e-300, 1e-3), 7);
        assert_eq!(code.factor(&mut first[..10], 0, 30, 1e-300, 1e-3), 0);
        assert!(!code.forward(&first, &mut [0.0; 3], 0, 30));
    }

    #[test]
    fn a_plan_naming_entries_outside_its_band_is_refused() {
        let (_, mut plan) = band(10, 2, 2, 6);
        plan.steps[9].upper.push(3);
        assert!(LuCode::compile(&plan).is_err());
    }
}
