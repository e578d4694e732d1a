//! Native code for a sparse LU's steps ([`LuPlan`]): the factorization
//! and the solve as straight-line code, one IEEE operation per operation
//! of the plan and in its order, so that the factors and solutions are
//! those of the runtime's replay to the bit.
//!
//! A replay reads each step's offsets from lists and walks them in loops;
//! here they are constants in the instructions. The code is a few
//! instructions repeated (load, multiply, subtract, store at constant
//! offsets from two pointers), so it is written directly as x86-64 SSE2
//! machine code ([`x64`]) instead of through cranelift: cranelift took
//! 17 ms for the 16-link director chain's 1725 updates (about 1 µs per
//! IR instruction, register allocation and lowering of code that needs
//! neither), more than a thousand replays of it save; writing the bytes
//! takes microseconds, so a plan is compiled as soon as its steps settle.
//! cranelift-jit still provides the executable memory. On other targets
//! there is no compiled plan (the replay goes on).

use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{default_libcall_names, Linkage, Module};
use hamel_kernel::LuPlan;

use crate::codegen::host_isa;
use crate::{err, JitError};

/// `(ab, from, limit, tiny, keep)`: returns the step it stopped before.
type FactorFn = unsafe extern "C" fn(*mut f64, u64, u64, f64, f64) -> u64;
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
    /// Compiles `plan`; refuses a plan that names an entry outside its band
    /// or too far for a 32-bit displacement, and every plan on hosts
    /// without [`LU_COMPILED`].
    pub fn compile(plan: &LuPlan) -> Result<LuCode, JitError> {
        if !LU_COMPILED {
            return Err(JitError("no compiled LU on this host".into()));
        }
        let far = plan.len.max(plan.steps.len()) >= (i32::MAX / 8) as usize;
        if !plan.in_bounds() || far {
            return Err(JitError("an LU plan naming entries outside its band".into()));
        }
        let code = [x64::factor(plan), x64::forward(plan), x64::backward(plan)];
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
        })
    }

    /// Takes the plan's steps `from .. limit` on the packed band `ab` as
    /// far as they go: returns the step it stopped before, `limit` unless
    /// a step was refused (see [`hamel_kernel::lu_plan`]), leaving `ab` as
    /// the steps before it left it. The steps before `from` must have been
    /// the plan's. Nothing is done (`from` returned) where `ab` is shorter
    /// than the plan's band or the range is empty.
    pub fn factor(&self, ab: &mut [f64], from: usize, limit: usize, tiny: f64, keep: f64) -> usize {
        let limit = limit.min(self.n);
        if ab.len() < self.len || from >= limit {
            return from;
        }
        // SAFETY: every index the plan names is below `self.len` (checked
        // when compiled), `ab` is that long, and `from` is a step.
        unsafe { (self.factor)(ab.as_mut_ptr(), from as u64, limit as u64, tiny, keep) as usize }
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
        // SAFETY: as in `forward`.
        unsafe { (self.backward)(ab.as_ptr(), v.as_mut_ptr(), from as u64, (upto - 1) as u64) };
        true
    }
}

/// The plan as x86-64 machine code (SSE2, System V ABI: pointers in `rdi`,
/// `rsi`, doubles in `xmm0`, `xmm1`, the result in `rax`; every `xmm`
/// register is the caller's to save).
mod x64 {
    use hamel_kernel::LuPlan;

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
        /// is `rdi` or `rsi`, which need neither REX.B nor a SIB byte.
        fn rm(&mut self, (prefix, op): (u8, u8), reg: u8, base: u8, index: usize) {
            self.code.push(prefix);
            if reg >= 8 {
                self.code.push(0x44);
            }
            self.code.extend([0x0F, op]);
            let disp = 8 * index as i64;
            if disp < 128 {
                self.code.push(0x40 | ((reg & 7) << 3) | base);
                self.code.push(disp as u8);
            } else {
                self.code.push(0x80 | ((reg & 7) << 3) | base);
                self.code.extend((disp as i32).to_le_bytes());
            }
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
    /// Integer argument registers after the first two: `rsi`, `rdx`, `rcx`.
    const RSI: u8 = 6;
    const RDX: u8 = 2;
    const RCX: u8 = 1;

    /// `fn(ab, from, limit, tiny, keep) -> the step stopped before`: steps
    /// `from .. limit` (`from < limit ≤ n`).
    pub(super) fn factor(plan: &LuPlan) -> Vec<u8> {
        let mut a = Asm::default();
        let stride = plan.stride;
        a.rr(MOVAPD, TINY, 0);
        a.rr(MOVAPD, KEEP, 1);
        a.constant(MASK, !(1u64 << 63));
        a.constant(ONE, 1f64.to_bits());
        let entries: Vec<usize> = plan.steps.iter().map(|_| a.label()).collect();
        let stops: Vec<usize> = plan.steps.iter().map(|_| a.label()).collect();
        a.dispatch(RSI, entries.clone());
        for (k, s) in plan.steps.iter().enumerate() {
            let d = s.diagonal;
            a.bind(entries[k]);
            a.cmp(RDX, k);
            a.jump(JBE, stops[k]);
            // big = fold of |a(k + o, k)|: `maxsd a, big` is `a > big ? a : big`.
            a.rr(XORPD, BIG, BIG);
            for &o in &s.candidates {
                a.rm(MOVSD_LOAD, ENTRY, AB, d + o as usize);
                a.rr(ANDPD, ENTRY, MASK);
                a.rr(MAXSD, ENTRY, BIG);
                a.rr(MOVAPD, BIG, ENTRY);
            }
            // Stop where big ≤ tiny (or unordered) …
            a.rr(UCOMISD, BIG, TINY);
            a.jump(JBE, stops[k]);
            // … or |pivot| < keep · big (or unordered).
            a.rm(MOVSD_LOAD, ENTRY, AB, d + s.pivot as usize);
            a.rr(ANDPD, ENTRY, MASK);
            a.rr(MOVAPD, ROW, KEEP);
            a.rr(MULSD, ROW, BIG);
            a.rr(UCOMISD, ENTRY, ROW);
            a.jump(JB, stops[k]);
            let p = s.pivot as usize;
            for &c in &s.swaps {
                let e = d + c as usize * stride;
                a.rm(MOVSD_LOAD, ENTRY, AB, e);
                a.rm(MOVSD_LOAD, ROW, AB, e + p);
                a.rm(MOVSD_STORE, ROW, AB, e);
                a.rm(MOVSD_STORE, ENTRY, AB, e + p);
            }
            a.rr(MOVAPD, INV, ONE);
            a.rm(DIVSD, INV, AB, d);
            a.rm(MOVSD_STORE, INV, AB, d);
            for chunk in s.multipliers.chunks(HELD_M) {
                for (j, &o) in chunk.iter().enumerate() {
                    let m = FIRST_M + j as u8;
                    a.rm(MOVSD_LOAD, m, AB, d + o as usize);
                    a.rr(MULSD, m, INV);
                    a.rm(MOVSD_STORE, m, AB, d + o as usize);
                }
                for &c in &s.upper {
                    let u = d + c as usize * stride;
                    a.rm(MOVSD_LOAD, ROW, AB, u);
                    for (j, &o) in chunk.iter().enumerate() {
                        a.rm(MOVSD_LOAD, ENTRY, AB, u + o as usize);
                        a.rr(MOVAPD, BIG, FIRST_M + j as u8);
                        a.rr(MULSD, BIG, ROW);
                        a.rr(SUBSD, ENTRY, BIG);
                        a.rm(MOVSD_STORE, ENTRY, AB, u + o as usize);
                    }
                }
            }
        }
        a.ret(plan.steps.len());
        // Each step's stop: return the steps taken before it.
        for (k, &stop) in stops.iter().enumerate() {
            a.bind(stop);
            a.ret(k);
        }
        a.finish()
    }

    // Registers of the solves: a factor's entry and products (0), v[k] or
    // the row's sum (1), the entry updated (2), and the value handed to the
    // next row (3): each value of `v` the next row reads first (`v[k + 1]`
    // forward, `v[i + 1]` backward) is kept in a register as well as
    // stored, so that the chain from one row to the next does not wait for
    // a store to reach its load. Code entered at a row takes it from memory.
    const NEXT: u8 = 3;

    /// `fn(ab, v, from, upto)`: the forward substitution through steps
    /// `from .. upto` (`from < upto ≤ n`).
    pub(super) fn forward(plan: &LuPlan) -> Vec<u8> {
        let mut a = Asm::default();
        let end = a.label();
        let checks: Vec<usize> = plan.steps.iter().map(|_| a.label()).collect();
        let bodies: Vec<usize> = plan.steps.iter().map(|_| a.label()).collect();
        // Entries: a step that takes v[k] from a register is entered through
        // a stub that loads it.
        let mut stubs = Vec::new();
        let mut entries = checks.clone();
        let mut handed = false;
        for (k, s) in plan.steps.iter().enumerate() {
            if s.pivot == 0 && handed {
                entries[k] = a.label();
                stubs.push((k, entries[k]));
            }
            handed = s.multipliers.contains(&1);
        }
        a.dispatch(RDX, entries);
        let mut handed = false;
        for (k, s) in plan.steps.iter().enumerate() {
            a.bind(checks[k]);
            a.cmp(RCX, k);
            a.jump(JBE, end);
            let p = s.pivot as usize;
            if p != 0 {
                a.rm(MOVSD_LOAD, 2, V, k);
                a.rm(MOVSD_LOAD, 1, V, k + p);
                a.rm(MOVSD_STORE, 1, V, k);
                a.rm(MOVSD_STORE, 2, V, k + p);
            } else if handed {
                a.rr(MOVAPD, 1, NEXT);
            } else {
                a.rm(MOVSD_LOAD, 1, V, k);
            }
            a.bind(bodies[k]);
            handed = false;
            for &o in &s.multipliers {
                let r = if o == 1 { NEXT } else { 2 };
                a.rm(MOVSD_LOAD, 0, AB, s.diagonal + o as usize);
                a.rr(MULSD, 0, 1);
                a.rm(MOVSD_LOAD, r, V, k + o as usize);
                a.rr(SUBSD, r, 0);
                a.rm(MOVSD_STORE, r, V, k + o as usize);
                handed |= o == 1;
            }
        }
        a.bind(end);
        a.code.push(0xC3);
        for (k, stub) in stubs {
            a.bind(stub);
            a.cmp(RCX, k);
            a.jump(JBE, end);
            a.rm(MOVSD_LOAD, 1, V, k);
            a.jump(None, bodies[k]);
        }
        a.finish()
    }

    /// `fn(ab, v, lo, top)`: the backward substitution of rows `top` down
    /// to `lo` (`lo ≤ top < n`; the rows after `top` substituted already).
    pub(super) fn backward(plan: &LuPlan) -> Vec<u8> {
        let mut a = Asm::default();
        let stride = plan.stride;
        let n = plan.steps.len();
        let end = a.label();
        let rows: Vec<usize> = plan.steps.iter().map(|_| a.label()).collect();
        let stubs: Vec<usize> = plan.steps.iter().map(|_| a.label()).collect();
        a.dispatch(RCX, stubs.clone());
        let mut handed = false;
        for (i, s) in plan.steps.iter().enumerate().rev() {
            a.bind(rows[i]);
            a.cmp(RDX, i);
            a.jump(JA, end);
            a.rm(MOVSD_LOAD, 1, V, i);
            for &c in &s.upper {
                a.rm(MOVSD_LOAD, 0, AB, s.diagonal + c as usize * stride);
                if c == 1 && handed {
                    a.rr(MULSD, 0, NEXT);
                } else {
                    a.rm(MULSD, 0, V, i + c as usize);
                }
                a.rr(SUBSD, 1, 0);
            }
            a.rm(MULSD, 1, AB, s.diagonal);
            a.rm(MOVSD_STORE, 1, V, i);
            a.rr(MOVAPD, NEXT, 1);
            handed = true;
        }
        a.bind(end);
        a.code.push(0xC3);
        for (i, &stub) in stubs.iter().enumerate() {
            a.bind(stub);
            if i + 1 < n {
                a.rm(MOVSD_LOAD, NEXT, V, i + 1);
            }
            a.jump(None, rows[i]);
        }
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
