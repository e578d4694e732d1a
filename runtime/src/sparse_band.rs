//! The banded LU of [`crate::packed_band`], replayed on the band's
//! structural non-zeros.
//!
//! A chain's Jacobian in its sparse tableau has a band of 25 diagonals but
//! about 4.5 entries per row (theory.md §9.5): the banded LU spends almost
//! all of its time on zeros. Given the pattern of entries that can be
//! non-zero (known symbolically: [`crate::Kernels::jacobian_pattern`]), a
//! factorization here runs the banded LU while recording the operations on
//! entries of the pattern and its fill-in, and later factorizations replay
//! only those.
//!
//! Pivoting is threshold partial pivoting ([`THRESHOLD`]): the pivot of
//! column `k` is the first row whose magnitude is at least a tenth of the
//! column's largest, so that a pivot stays where it is while candidates of
//! like size trade places (a chain's Jacobian holds many: `±1` couplings,
//! entries of links swinging alike), except that a kept pivot (the last
//! factorization's, or those [`Schedule::load_kept`] gave: the Newton step
//! gives the state's) stays while it is at least [`KEEP`] times the
//! column's largest (static pivoting with a check, theory.md §9.5). Without
//! that margin a pivot moved whenever a candidate crossed a tenth of the
//! largest: on the 64-link director chain (`tilted`), a constant `−1`
//! coupling and an entry near `0.1` swapped places about once per
//! factorization at h = 1e-3, and every move records operations anew. The
//! factors are those of the banded LU ([`crate::packed_band::eliminate`])
//! with the same interchanges to the bit (a zero skipped here may differ in
//! sign from the banded LU's, which no non-zero entry of the factors or of
//! a solution can see).
//!
//! A pivot that moves changes the structure of the rows below it only
//! within the band's active window; a recording from that step stops as
//! soon as the window's structure is one recorded there before, and the
//! replay goes on from that step. What a moved pivot recorded is kept (up
//! to [`MAX_VARIANTS`] per step, keyed by the window's structure and the
//! pivot), so a pivot that moves back and forth replays both ways. On the
//! 64-link director chain this cut recordings from 2.6 to 0.65 per
//! factorization (3 steps each) and the step by about 5 %.
//!
//! Recording allocates; it happens at the first factorization and where a
//! pivot moves (counted in [`Schedule::recordings`]), not in the steps
//! between.

use std::sync::Arc;

use crate::lu::FactorError;
use crate::lu_code::{CompiledLu, LuCompiler, LuPlan, LuStep};
use crate::memory::NO_PIVOT;
use crate::packed_band::{at, first_within, largest, leading, pivot};

/// The pivot threshold (see [`crate::packed_band::pivot`]): UMFPACK's
/// default. Any row within a factor 10 of the largest may pivot, which
/// bounds the growth of the factors' entries by 11 per step against 2 for
/// plain partial pivoting; Newton's iteration corrects what a less accurate
/// solve leaves. (The compiler's band ordering simulates this rule: shared
/// in `hamel_kernel::vocabulary`.)
pub(crate) const THRESHOLD: f64 = hamel_kernel::vocabulary::PIVOT_THRESHOLD;

/// A kept pivot stays while its magnitude is at least this times the
/// column's largest, theory.md §9.5's static pivot check: growth is then
/// bounded by `1 + 1/KEEP` per step, which the Newton iteration corrects
/// (the director chains' iterations per step are unchanged by it). It was
/// 1e-3, theory.md's τ, until 2026-11-29: on a long chain some link's pivot
/// then failed every few factorizations (entries of a director crossing
/// zero), the kept pivots became a mosaic no compiled sequence matched, and
/// a factorization of the 128-link chain entered compiled code about 40
/// times (`tilted`, h = 1e-3). At 1e-5, over 1000 steps of that run
/// (`chain_profile`, binaries side by side), the averaged director chain's
/// step fell from 28 to 23 µs at 64 links and from 96–97 to 70–72 µs at
/// 128, the midpoint one's from 79 to 61 µs at 128, with the iterations and
/// factorizations per step unchanged to 0.001 (1e-6 gained 10 % more at 64
/// links; 1e-5 keeps the growth a step may add at 1e5, far from the `1/ε`
/// where Newton's direction would be lost). The speed table's runs, 100
/// steps from `sway`, seldom move a pivot: 4–6 % at 128 links.
pub(crate) const KEEP: f64 = 1e-5;

/// A replay pays when it does at most this share of the banded LU's
/// updates: indexed updates cost about twice the banded LU's contiguous
/// ones. (Shared with the compiler's band ordering.)
const REPLAY_SHARE: f64 = hamel_kernel::vocabulary::REPLAY_SHARE;

/// How to factor the matrices of one band and pattern: the operations of
/// the banded LU on the entries that can be non-zero.
#[derive(Clone, Debug, Default)]
pub(crate) struct Schedule {
    /// `(kl, ku)` and the size the pattern was given for
    shape: (usize, usize, usize),
    /// the pivot threshold of a recording
    threshold: f64,
    /// a kept pivot stays while at least this times its column's largest
    /// (see [`KEEP`]); `None`: chosen by the threshold rule in every
    /// factorization
    keep: Option<f64>,
    /// the pivots to keep, an offset from each diagonal
    /// ([`crate::memory::NO_PIVOT`]: none): the last factorization's, or
    /// those given by [`Schedule::load_kept`]
    kept: Vec<u16>,
    /// `(packed index, index in the column-major matrix)` of the pattern's
    /// entries, in column-major order
    gather: Vec<(u32, u32)>,
    /// `(packed index, position in the pattern given)` of the same
    /// entries, for matrices given as the pattern's values ([`Source::Values`])
    compact: Vec<(u32, u32)>,
    /// packed entries the pattern holds
    pattern: Vec<bool>,
    /// the banded LU is cheaper than a replay (a band without structural
    /// zeros worth skipping): the schedule is not used
    dense: bool,
    /// the structure as a recording interchanges rows and fills in: the
    /// pattern between recordings
    work: Vec<bool>,
    /// the operations of each step the last factorization used, once
    /// recorded for every step
    steps: Vec<Step>,
    /// what else was recorded at each step (kept apart: the replay reads
    /// it only where a pivot moved)
    spare: Vec<Slot>,
    /// the id the next window structure seen is given (ids are never
    /// reused, so that a step's `next` cannot name another structure)
    next_window: u32,
    /// packed entries outside the pattern that the operations read or
    /// write: zeros before they start (of this recording and earlier ones:
    /// zeroing an entry nobody reads costs a store)
    zeros: Vec<u32>,
    /// the packed entries in `zeros`
    zeroed: Vec<bool>,
    /// how many times operations were recorded (from some step on)
    pub(crate) recordings: u64,
    /// and how many steps were recorded in all
    pub(crate) recorded_steps: u64,
    /// a slot outgrew [`MAX_WINDOWS`]: the next factorization records
    /// every step anew
    reset: bool,
    /// compiles the steps once they have settled (see [`crate::lu_code`])
    compiler: Option<&'static dyn LuCompiler>,
    /// the sequences of steps compiled so far (none after a reset, whose
    /// window ids start again)
    compiled: Vec<Compiled>,
    /// the runs of steps of the last factorization that compiled code took:
    /// `(first step, step after the last, index into compiled)`, in order
    /// (the replay took the others); the solve takes them from it too
    ran: Vec<(usize, usize, usize)>,
    /// the compiled sequence whose pivots are all those kept, where the
    /// last factorization ran wholly compiled and none were loaded since:
    /// the next factorization need not compare them
    whole: Option<usize>,
    /// factorizations since a step last changed
    settled: u64,
    /// a step changed in this factorization (a variant swapped in, or
    /// operations recorded)
    changed: bool,
    /// how many times steps were compiled
    pub(crate) compilations: u64,
    /// factorizations so far, and at the last compilation
    factorizations: u64,
    last_compilation: u64,
    /// factorizations begun by compiled steps
    pub(crate) compiled_factorizations: u64,
    /// the leading steps whose forward substitution the last factorization
    /// applied to the right-hand side it was given (compiled code and the
    /// replay take it along, a recording does not: see
    /// [`Schedule::factor_forward`])
    forwarded: usize,
}

/// A sequence of steps, compiled, with what it was compiled from.
#[derive(Clone, Debug)]
struct Compiled {
    code: Arc<dyn CompiledLu>,
    /// the steps (their pivots: offsets from the diagonal)
    plan: LuPlan,
    /// the structure before each step (a [`Step::window`])
    windows: Vec<u32>,
    /// each step's interchange (`k` + its pivot)
    perm: Vec<usize>,
    /// each step's pivot, as in `plan`, apart: the replay compares them at
    /// every step and an entry at every step it might take, and read
    /// through the plan's steps (a few hundred bytes apart) each costs a
    /// load of its own cache line
    pivots: Vec<u16>,
    /// the last factorization it took steps of (see `Schedule::factorizations`)
    used: u64,
}

/// Where a replay stopped (see [`Schedule::replay`]): done, or the step to
/// record from, or the step compiled code can take from, with the
/// structure before it.
enum Stop {
    Done,
    Record(usize, u32),
    Compiled(usize, u32),
}

/// Factorizations without a changed step before the steps of the last are
/// compiled (where compiled code did not already run them all): compiling
/// costs about as much as a hundred replays save on a chain, and the
/// 32-link director chain's pivots (`tilted`, h = 1e-3) move every 50 to 80
/// factorizations, between three sequences of steps that recur.
pub(crate) const SETTLE: u64 = 16;

/// Compiled sequences kept per schedule: a new one replaces the one
/// unused longest.
const MAX_SEQUENCES: usize = 8;

/// Factorizations between compilations at least: where pivots keep
/// moving to new sequences, compiling costs at most a tenth of the
/// factorizations (about 25 replays' worth each on a chain).
const COMPILE_EVERY: u64 = 256;

/// Where a matrix to factor is.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Source<'a> {
    /// column-major, `n × n`, zero outside the pattern
    Matrix(&'a [f64]),
    /// the values of the pattern's entries, in the order the pattern was given
    Values(&'a [f64]),
}

/// Variants kept per step (see [`Slot`]): past it the oldest is dropped.
const MAX_VARIANTS: usize = 4;

/// Window structures kept per step: past it the whole schedule is recorded
/// anew (a bound on memory; not reached by pivots that come and go).
const MAX_WINDOWS: usize = 16;

/// What else was recorded at one step: variants of its operations, each
/// for one structure of the active window before it and one pivot. A pivot
/// that moves and moves back (an entry passing through zero as a link
/// swings) then replays the variant recorded when it first moved instead
/// of recording again.
#[derive(Clone, Debug, Default)]
struct Slot {
    /// variants other than the one in use, the latest first
    others: Vec<Step>,
    /// the structures of the active window seen here: `(id, bits)`, a bit
    /// per entry of rows `k ..= k + kl`, columns `k .. k + kl + ku + 1`
    windows: Vec<(u32, Vec<u64>)>,
}

/// The operations of step `k`, as offsets from its pivot `d = (k, k)` in
/// the packed band: row `k + o` of column `k` is `d + o`, column `k + c` of
/// row `k` is `d + c·(ld − 1)`, and entry `(k + o, k + c)` is the sum of
/// both. The update of step `k` is the outer product of its multipliers and
/// its row of U, so it needs no list of its own: `a(k + o, k + c) −=
/// a(k + o, k) · a(k, k + c)` for every multiplier offset `o` and U offset
/// `c`. Offsets are below `2 kl + ku + 1`; up to [`INLINE`] of them are
/// held in the step itself, so that the replay, which walks the steps in
/// order, reads them from one array (read through a pointer of each step,
/// they cost a dependent load per step: the 32-link chain's step took
/// 24.4–25.8 µs that way, 23.4 µs this way).
#[derive(Clone, Debug, Default)]
struct Step {
    /// the id of the window structure before the step (see [`Slot`])
    window: u32,
    /// the id of the structure it leaves for the next step
    next: u32,
    /// the pivot's row offset from `k`
    pivot: u16,
    /// where each list ends in `offsets`: the pivot candidates (column
    /// `k`'s structural entries on and below the diagonal, row offsets in
    /// row order), the interchange (column offsets of the entries
    /// exchanged), the multipliers (row offsets) and row `k` of U right of
    /// the diagonal (column offsets, decreasing: the order of the banded
    /// back substitution)
    ends: [u16; 4],
    /// the offsets, where they fit and are complete
    inline: [u16; INLINE],
    /// the offsets, while recorded or where they do not fit
    heap: Vec<u16>,
}

/// Multipliers a replayed step holds apart from the band while it updates
/// (a chain's steps have up to about 6).
const HELD: usize = 16;

/// Offsets a step holds in itself (a chain's steps have about 15).
const INLINE: usize = 28;

impl Step {
    fn offsets(&self) -> &[u16] {
        if self.heap.is_empty() {
            &self.inline[..self.ends[3] as usize]
        } else {
            &self.heap
        }
    }
    fn list(&self, which: usize) -> &[u16] {
        let from = if which == 0 { 0 } else { self.ends[which - 1] };
        &self.offsets()[from as usize..self.ends[which] as usize]
    }
    /// Moves the recorded offsets into the step where they fit.
    fn settle(&mut self) {
        if self.heap.len() <= INLINE {
            self.inline[..self.heap.len()].copy_from_slice(&self.heap);
            self.heap = Vec::new();
        }
    }
    fn candidates(&self) -> &[u16] {
        self.list(0)
    }
    fn swaps(&self) -> &[u16] {
        self.list(1)
    }
    fn multipliers(&self) -> &[u16] {
        self.list(2)
    }
    fn upper(&self) -> &[u16] {
        self.list(3)
    }
    /// Closes the list being pushed to `heap`.
    fn close(&mut self, which: usize) {
        self.ends[which] = offset(self.heap.len());
    }
}

/// The kept pivot `o` (an offset from the diagonal) where it is one of
/// `candidates` (the column's structural entries) and `value(o)` passes the
/// check against the column's largest magnitude `big`.
#[inline(always)]
fn kept_pivot(o: u16, keep: Option<f64>, candidates: &[u16], value: impl Fn(u16) -> f64, big: f64) -> Option<u16> {
    passes_check(o, keep, |o| value_if_candidate(o, candidates, &value), big)
}

/// Step `k` of the forward substitution of `v`: the interchange with row
/// `row`, then the multipliers (offsets below the pivot, whose entry is
/// `ab[d]`) times `v[k]` off the rows below.
#[inline(always)]
fn forward_step(ab: &[f64], v: &mut [f64], k: usize, row: usize, d: usize, multipliers: &[u16]) {
    v.swap(k, row);
    let vk = v[k];
    for &o in multipliers {
        v[k + o as usize] -= ab[d + o as usize] * vk;
    }
}

/// The check of a kept pivot `o`: `magnitude(o)` (negative for a row that
/// cannot pivot) at least `keep` times the column's largest, `big`.
#[inline(always)]
fn passes_check(o: u16, keep: Option<f64>, magnitude: impl FnOnce(u16) -> f64, big: f64) -> Option<u16> {
    let keep = keep?;
    (o != NO_PIVOT && magnitude(o) >= keep * big).then_some(o)
}

/// `|value(o)|` where `o` is one of `candidates`, else `-1`. A loop of
/// its own, not `contains`: the slices are a few entries long, and the
/// call `contains` compiles to cost the replay about 1 %.
#[inline(always)]
fn value_if_candidate(o: u16, candidates: &[u16], value: &impl Fn(u16) -> f64) -> f64 {
    for &c in candidates {
        if c == o {
            return value(o).abs();
        }
    }
    -1.0
}

fn offset(v: usize) -> u16 {
    u16::try_from(v).expect("a band of fewer than 2¹⁶ diagonals")
}

fn index(v: usize) -> u32 {
    u32::try_from(v).expect("a band of fewer than 2³² entries")
}

impl Schedule {
    /// The schedule of `n × n` matrices of band `(kl, ku)` whose entries
    /// outside `pattern` (`(row, column)` pairs) are zero, pivoted with
    /// `threshold` (see [`crate::packed_band::pivot`]), a kept pivot
    /// staying while at least `keep` times its column's largest ([`KEEP`];
    /// `None`: the threshold rule throughout).
    pub(crate) fn new(
        pattern: &[(u32, u32)],
        (kl, ku): (usize, usize),
        n: usize,
        threshold: f64,
        keep: Option<f64>,
    ) -> Self {
        let ld = leading(kl, ku);
        // (packed index, column-major index, position in `pattern`)
        let mut entries: Vec<(u32, u32, u32)> = pattern
            .iter()
            .enumerate()
            .filter(|&(_, &(r, c))| {
                let (r, c) = (r as usize, c as usize);
                r < n && c < n && r <= c + kl && c <= r + ku
            })
            .map(|(k, &(r, c))| {
                let (r, c) = (r as usize, c as usize);
                (index(at(ld, kl, ku, r, c)), index(c * n + r), index(k))
            })
            .collect();
        entries.sort_unstable_by_key(|e| (e.1, e.2));
        entries.dedup_by_key(|e| e.1);
        let mut mask = vec![false; n * ld];
        for &(e, _, _) in &entries {
            mask[e as usize] = true;
        }
        Self {
            shape: (kl, ku, n),
            threshold,
            keep,
            gather: entries.iter().map(|&(e, i, _)| (e, i)).collect(),
            compact: entries.iter().map(|&(e, _, k)| (e, k)).collect(),
            pattern: mask,
            ..Self::default()
        }
    }

    /// Whether this schedule is for matrices of band `band` and size `n`.
    pub(crate) fn fits(&self, (kl, ku): (usize, usize), n: usize) -> bool {
        self.shape == (kl, ku, n) && !self.gather.is_empty()
    }

    /// Keeps `pivots` (offsets from each diagonal) while they pass the
    /// check; none if they are not one per row.
    pub(crate) fn load_kept(&mut self, pivots: &[u16]) {
        let n = self.shape.2;
        self.kept.resize(n, NO_PIVOT);
        if pivots.len() == n {
            if self.kept != pivots {
                self.whole = None;
                self.kept.copy_from_slice(pivots);
            }
        } else {
            self.whole = None;
            self.kept.fill(NO_PIVOT);
        }
    }

    /// The pivots the next factorization keeps (see [`Schedule::load_kept`]).
    pub(crate) fn kept(&self) -> &[u16] {
        &self.kept
    }

    /// Whether every step's operations are recorded.
    fn recorded(&self) -> bool {
        self.steps.len() == self.shape.2
    }

    /// [`Schedule::factor_forward`] without a right-hand side.
    #[cfg(test)]
    pub(crate) fn factor(&mut self, source: Source, ab: &mut [f64], perm: &mut [usize]) -> Result<(), FactorError> {
        self.factor_forward(source, ab, perm, None)
    }

    /// Factors the matrix in `source` into `ab` and `perm` as
    /// [`crate::packed_band::factor`] does, replaying the recorded
    /// operations where they still apply, and applying the forward
    /// substitution of its steps to `rhs` as it goes, compiled or replayed,
    /// up to the first step it records anew (see [`Schedule::forwarded`]):
    /// the solve that follows goes on from there. On error `rhs` holds
    /// garbage.
    pub(crate) fn factor_forward(
        &mut self,
        source: Source,
        ab: &mut [f64],
        perm: &mut [usize],
        rhs: Option<&mut [f64]>,
    ) -> Result<(), FactorError> {
        let n = self.shape.2;
        self.kept.resize(n, NO_PIVOT);
        self.changed = false;
        self.ran.clear();
        self.forwarded = 0;
        self.factorizations += 1;
        if self.compiler.is_none() {
            self.compiled.clear();
            self.whole = None;
        }
        let done = self.factor_keeping(source, ab, perm, rhs);
        if self.changed || done.is_err() {
            self.settled = 0;
            // A failed factorization may have left other interchanges in
            // `perm` than the sequence's (see `factor_compiled`).
            self.whole = None;
        } else {
            self.settled += 1;
        }
        done?;
        // The pivots compiled steps took are those kept (they agreed).
        let mut from = 0;
        for (to, next) in self.ran.iter().map(|r| (r.0, r.1)).chain([(n, n)]) {
            for k in from..to {
                self.kept[k] = offset(perm[k] - k);
            }
            from = next;
        }
        let covered = self.ran.iter().map(|&(a, b, _)| b - a).sum::<usize>() == n;
        self.whole = match self.ran[..] {
            [(0, end, c)] if end == n => Some(c),
            _ => None,
        };
        if self.settled == SETTLE && !covered {
            self.compile();
        }
        Ok(())
    }

    /// The leading steps whose forward substitution the last
    /// [`Schedule::factor_forward`] applied to its right-hand side.
    pub(crate) fn forwarded(&self) -> usize {
        self.forwarded
    }

    /// Lends the schedule a compiler for its steps once they settle, or
    /// takes it back with what it compiled (from the next factorization:
    /// the last one's solve may still use it).
    pub(crate) fn set_compiler(&mut self, compiler: Option<&'static dyn LuCompiler>) {
        self.compiler = compiler;
    }

    /// Compiles the steps the last factorization took, where a compiler
    /// was lent and the pivots are kept, at most once every
    /// [`COMPILE_EVERY`] factorizations.
    #[cold]
    fn compile(&mut self) {
        let Some(compiler) = self.compiler else { return };
        let soon = self.compilations > 0 && self.factorizations - self.last_compilation < COMPILE_EVERY;
        if self.dense || self.keep.is_none() || !self.recorded() || soon {
            return;
        }
        // The sequence replaced is one this factorization did not take
        // steps of (its solve is still to come).
        let slot = if self.compiled.len() < MAX_SEQUENCES {
            self.compiled.len()
        } else {
            let free = (0..self.compiled.len()).filter(|&i| self.ran.iter().all(|r| r.2 != i));
            match free.min_by_key(|&i| self.compiled[i].used) {
                Some(i) => i,
                None => return,
            }
        };
        self.compilations += 1;
        self.last_compilation = self.factorizations;
        let (plan, windows) = self.plan();
        if let Some(code) = compiler.compile(&plan) {
            let c = Compiled {
                code,
                perm: plan
                    .steps
                    .iter()
                    .enumerate()
                    .map(|(k, s)| k + s.pivot as usize)
                    .collect(),
                pivots: plan.steps.iter().map(|s| s.pivot).collect(),
                plan,
                windows,
                used: self.factorizations,
            };
            if slot == self.compiled.len() {
                self.compiled.push(c);
            } else {
                self.compiled[slot] = c;
            }
        }
    }

    /// The steps the last factorization took, as a plan (see
    /// [`crate::lu_code`]), and the structure before each: those of the
    /// compiled code where it took them, the replayed ones elsewhere.
    fn plan(&self) -> (LuPlan, Vec<u32>) {
        let (kl, ku, n) = self.shape;
        let ld = leading(kl, ku);
        let mut steps = Vec::with_capacity(n);
        let mut windows = Vec::with_capacity(n);
        let mut runs = self.ran.iter().peekable();
        for (k, s) in self.steps.iter().enumerate() {
            while runs.next_if(|&&(_, b, _)| b <= k).is_some() {}
            match runs.peek() {
                Some(&&(a, _, c)) if a <= k => {
                    steps.push(self.compiled[c].plan.steps[k].clone());
                    windows.push(self.compiled[c].windows[k]);
                }
                _ => {
                    steps.push(LuStep {
                        diagonal: at(ld, kl, ku, k, k),
                        pivot: s.pivot,
                        candidates: s.candidates().to_vec(),
                        swaps: s.swaps().to_vec(),
                        multipliers: s.multipliers().to_vec(),
                        upper: s.upper().to_vec(),
                    });
                    windows.push(s.window);
                }
            }
        }
        let plan = LuPlan {
            stride: ld - 1,
            len: n * ld,
            steps,
        };
        (plan, windows)
    }

    /// Compiled steps on `ab` from step `k`, whose structure is `window`,
    /// as far as their pivots are the ones kept and pass their checks (of
    /// the compiled sequences whose step `k` is this one, the one that
    /// agrees longest), with their interchanges in `perm`: the step they
    /// stopped before and its structure, or `None` where no sequence
    /// agrees at `k`.
    #[inline]
    fn factor_compiled(
        &mut self,
        k: usize,
        window: u32,
        ab: &mut [f64],
        perm: &mut [usize],
        rhs: Option<&mut [f64]>,
        tiny: f64,
    ) -> Option<(usize, u32)> {
        let keep = self.keep?;
        // The common case: the last factorization ran wholly compiled.
        if let Some(c) = self.whole.filter(|_| k == 0) {
            // `perm` holds that factorization's interchanges, which are
            // this code's: copying them again took 0.5 % of the 16-link
            // director chain's step.
            return Some(self.run_compiled(c, 0, self.shape.2, ab, None, rhs, tiny, keep));
        }
        let kept = &self.kept[k..];
        let agree = |c: &Compiled| {
            if c.windows[k] == window {
                c.pivots[k..].iter().zip(kept).take_while(|(a, b)| a == b).count()
            } else {
                0
            }
        };
        let (which, agreed) = self
            .compiled
            .iter()
            .enumerate()
            .map(|(i, c)| (i, agree(c)))
            .max_by_key(|&(i, len)| (len, std::cmp::Reverse(i)))?;
        if agreed == 0 {
            return None;
        }
        Some(self.run_compiled(which, k, k + agreed, ab, Some(perm), rhs, tiny, keep))
    }

    /// Compiled sequence `which` on `ab` from step `k` to at most `limit`,
    /// its interchanges into `perm` (`None`: it holds them already), the
    /// forward substitution of its steps into `rhs` where that of the steps
    /// before `k` is in it: the step it stopped before and its structure.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn run_compiled(
        &mut self,
        which: usize,
        k: usize,
        limit: usize,
        ab: &mut [f64],
        perm: Option<&mut [usize]>,
        rhs: Option<&mut [f64]>,
        tiny: f64,
        keep: f64,
    ) -> (usize, u32) {
        let c = &self.compiled[which];
        let rhs = rhs.filter(|_| k == self.forwarded);
        let forwards = rhs.is_some();
        let taken = c.code.factor(ab, rhs, k, limit, tiny, keep);
        if forwards {
            self.forwarded = taken;
        }
        if let Some(perm) = perm {
            perm[k..taken].copy_from_slice(&c.perm[k..taken]);
        }
        let next = c.windows.get(taken).copied().unwrap_or(0);
        if taken > k {
            self.ran.push((k, taken, which));
            self.compiled[which].used = self.factorizations;
            self.compiled_factorizations += u64::from(k == 0);
        }
        (taken, next)
    }

    /// [`Schedule::factor_forward`], keeping `kept`.
    fn factor_keeping(
        &mut self,
        source: Source,
        ab: &mut [f64],
        perm: &mut [usize],
        mut rhs: Option<&mut [f64]>,
    ) -> Result<(), FactorError> {
        let (kl, ku, n) = self.shape;
        if self.dense {
            let big = match source {
                Source::Matrix(s) => crate::packed_band::load(s, ab, (kl, ku), n)?,
                Source::Values(_) => {
                    ab.fill(0.0);
                    self.gather_checked(source, ab)?
                }
            };
            // The replay's rule (see `replay`), on the whole column of the
            // band: its entries outside the structure are zeros, which
            // neither pass the check nor raise the largest, so the pivots,
            // and the factors, are those a replay would take.
            let (threshold, keep, kept) = (self.threshold, self.keep, &self.kept);
            return crate::packed_band::eliminate(ab, perm, (kl, ku), n, big, |k, col| {
                let magnitudes = col.iter().map(|x| x.abs());
                let big = largest(magnitudes.clone());
                let magnitude = |o: u16| col.get(o as usize).map_or(-1.0, |x| x.abs());
                match passes_check(kept[k], keep, magnitude, big) {
                    Some(o) => (o as usize, big),
                    None => (first_within(magnitudes, threshold, big), big),
                }
            });
        }
        let reset = std::mem::take(&mut self.reset);
        let recorded = self.recorded() && !reset;
        if recorded {
            // One store each: as runs of adjacent entries (a fill-in
            // column's), a call of `memset` per run took 6 % of the 16-link
            // director chain's step, and stores of fixed width chosen by
            // length 5 %, against 2 % this way.
            for &z in &self.zeros {
                ab[z as usize] = 0.0;
            }
        } else {
            self.changed = true;
            // Window ids start again: compiled sequences would name others.
            self.compiled.clear();
            self.whole = None;
            // Everything is recorded anew (a failed recording keeps none):
            // no structure is named any more, and ids may start again.
            ab.fill(0.0);
            self.steps.clear();
            self.spare.clear();
            self.next_window = 0;
        }
        let big = self.gather_checked(source, ab)?;
        let tiny = big * 1e3 * f64::EPSILON;
        let first = self.steps.first().map_or(0, |step| step.window);
        let mut next = if recorded {
            Stop::Compiled(0, first)
        } else {
            Stop::Record(0, first)
        };
        loop {
            next = match next {
                Stop::Done => return Ok(()),
                Stop::Compiled(k, window) => {
                    match self.factor_compiled(k, window, ab, perm, rhs.as_deref_mut(), tiny) {
                        Some((j, _)) if j == n => Stop::Done,
                        Some((j, window)) => self.replay(j, window, ab, perm, rhs.as_deref_mut(), tiny)?,
                        None => self.replay(k, window, ab, perm, rhs.as_deref_mut(), tiny)?,
                    }
                }
                Stop::Record(k, window) => match self.record(k, window, ab, perm, tiny) {
                    Ok(Some((back, window))) => self.replay(back, window, ab, perm, rhs.as_deref_mut(), tiny)?,
                    Ok(None) => Stop::Done,
                    Err(e) => {
                        // Nothing half-recorded is kept.
                        self.steps.clear();
                        return Err(e);
                    }
                },
            };
        }
    }

    /// The pattern's entries of `source` into `ab`, with the checks of
    /// [`crate::lu::EntryChecks`]: the largest magnitude, or an error.
    fn gather_checked(&self, source: Source, ab: &mut [f64]) -> Result<f64, FactorError> {
        let (list, s) = match source {
            Source::Matrix(s) => (&self.gather, s),
            Source::Values(values) => (&self.compact, values),
        };
        // Four running maxima, not one: a single one is a chain of
        // dependent compares through every entry (about 3 cycles each),
        // and the maximum of a set does not depend on the order it is
        // taken in, nor does whether a sum of `x · 0` is NaN.
        let (mut big, mut poison) = ([0.0f64; 4], [0.0f64; 4]);
        let chunks = list.chunks_exact(4);
        let rest = chunks.remainder();
        for quad in chunks {
            for (j, &(e, i)) in quad.iter().enumerate() {
                let x = s[i as usize];
                ab[e as usize] = x;
                poison[j] += x * 0.0;
                big[j] = if x.abs() > big[j] { x.abs() } else { big[j] };
            }
        }
        for &(e, i) in rest {
            let x = s[i as usize];
            ab[e as usize] = x;
            poison[0] += x * 0.0;
            big[0] = if x.abs() > big[0] { x.abs() } else { big[0] };
        }
        let poison = (poison[0] + poison[1]) + (poison[2] + poison[3]);
        let big = largest(big.into_iter());
        if poison != 0.0 {
            Err(FactorError::NonFinite)
        } else if big == 0.0 {
            Err(FactorError::Singular)
        } else {
            Ok(big)
        }
    }

    /// Replays the recorded operations from step `from` on, whose window
    /// has structure `window`, until done, or until the first step (and
    /// its structure) for which no variant was recorded with its structure
    /// and the pivot chosen (kept, or the rule's; `ab` then holds the
    /// matrix as the banded LU has it before that step), or a later step
    /// where compiled steps agree with the structure and the pivot kept.
    /// Each step's forward substitution goes into `rhs` as well, where that
    /// of the steps before it is there (see [`Schedule::forwarded`]).
    fn replay(
        &mut self,
        from: usize,
        mut window: u32,
        ab: &mut [f64],
        perm: &mut [usize],
        mut rhs: Option<&mut [f64]>,
        tiny: f64,
    ) -> Result<Stop, FactorError> {
        let (kl, ku, _) = self.shape;
        let ld = leading(kl, ku);
        let stride = ld - 1;
        let (threshold, keep) = (self.threshold, self.keep);
        let (spare, kept, changed) = (&mut self.spare, &self.kept, &mut self.changed);
        let forwarded = &mut self.forwarded;
        let compiled = &self.compiled;
        for (k, step) in self.steps.iter_mut().enumerate().skip(from) {
            // Not at `from`: compiled steps may have stopped there.
            let takes = |c: &Compiled| c.windows[k] == window && c.pivots[k] == kept[k];
            if k > from && compiled.iter().any(takes) {
                return Ok(Stop::Compiled(k, window));
            }
            // A variant of this structure in use; variants of one structure
            // share their candidates.
            if step.window != window {
                let others = &mut spare[k].others;
                let Some(v) = others.iter().position(|v| v.window == window) else {
                    return Ok(Stop::Record(k, window));
                };
                std::mem::swap(step, &mut others[v]);
                *changed = true;
            }
            // The recorded pivot while it passes the check, else the row
            // `pivot` chooses among all rows of the band (the others are
            // zeros).
            let d = at(ld, kl, ku, k, k);
            let candidates = step.candidates();
            let magnitudes = candidates.iter().map(|&o| ab[d + o as usize].abs());
            let big = largest(magnitudes.clone());
            if big <= tiny {
                return Err(FactorError::Singular);
            }
            // The threshold rule's row only where the kept pivot fails its
            // check: `pick`'s choice, without a second pass per step.
            let chosen = match kept_pivot(kept[k], keep, candidates, |o| ab[d + o as usize], big) {
                Some(o) => o,
                None => candidates[first_within(magnitudes, threshold, big)],
            };
            if chosen != step.pivot {
                let others = &mut spare[k].others;
                let Some(v) = others.iter().position(|v| v.window == window && v.pivot == chosen) else {
                    return Ok(Stop::Record(k, window));
                };
                std::mem::swap(step, &mut others[v]);
                *changed = true;
            }
            let step = &*step;
            let p = step.pivot as usize;
            perm[k] = k + p;
            for &c in step.swaps() {
                let e = d + c as usize * stride;
                ab.swap(e, e + p);
            }
            let inv = 1.0 / ab[d];
            ab[d] = inv;
            // The multipliers, scaled, in a local array (registers),
            // [`HELD`] at a time: read from `ab` inside the update, each
            // would be loaded again for every column, as a store to `ab`
            // might have changed it. Each update writes its own entry, so
            // the order of the chunks changes no bit.
            for chunk in step.multipliers().chunks(HELD) {
                let mut held = [0.0f64; HELD];
                for (h, &o) in held.iter_mut().zip(chunk) {
                    let m = ab[d + o as usize] * inv;
                    ab[d + o as usize] = m;
                    *h = m;
                }
                let held = &held[..chunk.len()];
                for &c in step.upper() {
                    let u = d + c as usize * stride;
                    let x = ab[u];
                    for (&o, &m) in chunk.iter().zip(held) {
                        ab[u + o as usize] -= m * x;
                    }
                }
            }
            if let Some(v) = rhs.as_deref_mut().filter(|_| *forwarded == k) {
                forward_step(ab, v, k, k + p, d, step.multipliers());
                *forwarded = k + 1;
            }
            window = step.next;
        }
        Ok(Stop::Done)
    }

    /// The structure of step `k`'s active window in `nz`, a bit per entry.
    fn window(&self, nz: &[bool], k: usize, bits: &mut Vec<u64>) {
        let (kl, ku, n) = self.shape;
        let ld = leading(kl, ku);
        bits.clear();
        let (mut word, mut filled) = (0u64, 0);
        for i in k..(k + kl + 1).min(n) {
            for c in k..(k + kl + ku + 1).min(n) {
                // Entries outside the packed band (below it) are zero.
                let bit = c + kl >= i && nz[at(ld, kl, ku, i, c)];
                word |= u64::from(bit) << filled;
                filled += 1;
                if filled == 64 {
                    bits.push(word);
                    (word, filled) = (0, 0);
                }
            }
        }
        bits.push(word);
    }

    /// The id of structure `bits` at step `k`, interned if new.
    fn intern(&mut self, k: usize, bits: &[u64]) -> u32 {
        if self.spare.len() <= k {
            self.spare.resize_with(k + 1, Slot::default);
        }
        let slot = &mut self.spare[k];
        if let Some((id, _)) = slot.windows.iter().find(|(_, w)| w.as_slice() == bits) {
            return *id;
        }
        let id = self.next_window;
        self.next_window += 1;
        slot.windows.push((id, bits.to_vec()));
        self.reset |= slot.windows.len() > MAX_WINDOWS;
        id
    }

    /// The banded LU on `ab` from step `from` on (the steps before it
    /// replayed; `window` the structure there), recording its operations on
    /// the entries of the pattern and its fill-in. Stops at the first later
    /// step whose structure a variant was recorded for, returning it and
    /// the structure: from there on the replay applies.
    fn record(
        &mut self,
        from: usize,
        window: u32,
        ab: &mut [f64],
        perm: &mut [usize],
        tiny: f64,
    ) -> Result<Option<(usize, u32)>, FactorError> {
        let (kl, ku, n) = self.shape;
        let ld = leading(kl, ku);
        self.recordings += 1;
        self.changed = true;
        // The structure before step `from`: the pattern, where no earlier
        // step reaches; its window as interned. `work` is the pattern
        // between recordings: a recording changes only the columns its
        // steps reach and puts them back, so that one recording a few steps
        // costs those steps, not a copy of the whole band.
        let mut nz = std::mem::take(&mut self.work);
        if nz.len() != self.pattern.len() {
            nz.clear();
            nz.extend_from_slice(&self.pattern);
        }
        let mut last = from;
        let restore = |nz: &mut [bool], pattern: &[bool], last: usize| {
            let range = from * ld..(last + kl + ku + 1).min(n) * ld;
            nz[range.clone()].copy_from_slice(&pattern[range]);
        };
        let mut bits = Vec::new();
        let known = self
            .spare
            .get(from)
            .and_then(|slot| slot.windows.iter().find(|w| w.0 == window));
        let mut id = match known {
            Some((id, seen)) => {
                let mut bit = 0;
                for i in from..(from + kl + 1).min(n) {
                    for c in from..(from + kl + ku + 1).min(n) {
                        if c + kl >= i {
                            nz[at(ld, kl, ku, i, c)] = seen[bit / 64] >> (bit % 64) & 1 == 1;
                        }
                        bit += 1;
                    }
                }
                *id
            }
            None => {
                // The first recording: the pattern's structure.
                self.window(&nz, from, &mut bits);
                self.intern(from, &bits)
            }
        };
        let stride = ld - 1;
        let mut back = None;
        for k in from..n {
            last = k;
            if k > from {
                self.window(&nz, k, &mut bits);
                id = self.intern(k, &bits);
                self.steps[k - 1].next = id;
                let recorded = self.steps.get(k).is_some_and(|s| s.window == id);
                if recorded || self.spare[k].others.iter().any(|v| v.window == id) {
                    back = Some((k, id));
                    break;
                }
            }
            self.recorded_steps += 1;
            let rows = (k + kl + 1).min(n);
            let cols = (k + ku + kl + 1).min(n);
            let d = at(ld, kl, ku, k, k);
            let mut step = Step {
                window: id,
                ..Step::default()
            };
            for i in k..rows {
                if nz[d + i - k] {
                    step.heap.push(offset(i - k));
                }
            }
            step.close(0);
            let (p, big) = pivot(&ab[d..d + rows - k], self.threshold);
            let p = match kept_pivot(self.kept[k], self.keep, step.candidates(), |o| ab[d + o as usize], big) {
                Some(o) => o as usize,
                None => p,
            };
            if big <= tiny {
                restore(&mut nz, &self.pattern, last);
                self.work = nz;
                return Err(FactorError::Singular);
            }
            step.pivot = offset(p);
            perm[k] = k + p;
            if p != 0 {
                let mut ik = d;
                for c in k..cols {
                    if nz[ik] || nz[ik + p] {
                        step.heap.push(offset(c - k));
                        ab.swap(ik, ik + p);
                        nz.swap(ik, ik + p);
                    }
                    ik += stride;
                }
            }
            step.close(1);
            let inv = 1.0 / ab[d];
            ab[d] = inv;
            for i in k + 1..rows {
                if nz[d + i - k] {
                    step.heap.push(offset(i - k));
                    ab[d + i - k] *= inv;
                }
            }
            step.close(2);
            // Row k of U: its entries are final (the updates below write
            // rows after k), and they are the columns the update reaches.
            for c in (k + 1..cols).rev() {
                if nz[d + (c - k) * stride] {
                    step.heap.push(offset(c - k));
                }
            }
            step.close(3);
            for &c in step.upper() {
                let u = d + c as usize * stride;
                for &o in step.multipliers() {
                    let t = u + o as usize;
                    ab[t] -= ab[d + o as usize] * ab[u];
                    nz[t] = true;
                }
            }
            self.zero_outside_pattern(k, &step);
            step.settle();
            if k < self.steps.len() {
                let old = std::mem::replace(&mut self.steps[k], step);
                let others = &mut self.spare[k].others;
                others.insert(0, old);
                others.truncate(MAX_VARIANTS - 1);
            } else {
                self.steps.push(step);
            }
        }
        restore(&mut nz, &self.pattern, last);
        self.work = nz;
        // Whether a replay pays is decided on a whole recording (the first,
        // or one from a pivot moved at the first step): summing the steps'
        // updates after every recording of a few steps would cost the band.
        if from == 0 {
            let updates: usize = self.steps.iter().map(|s| s.multipliers().len() * s.upper().len()).sum();
            let banded = n as f64 * kl as f64 * (kl + ku + 1) as f64;
            // Compiled steps have no index arithmetic to pay for.
            self.dense = self.compiler.is_none() && updates as f64 > REPLAY_SHARE * banded;
        }
        Ok(back)
    }

    /// Adds the entries outside the pattern that `step` reads or writes (its
    /// fill-in, and entries its interchange brings in) to those zeroed
    /// before a replay.
    fn zero_outside_pattern(&mut self, k: usize, step: &Step) {
        let (kl, ku, n) = self.shape;
        let ld = leading(kl, ku);
        let (d, stride, p) = (at(ld, kl, ku, k, k), ld - 1, step.pivot as usize);
        self.zeroed.resize(n * ld, false);
        let (pattern, zeroed, zeros) = (&self.pattern, &mut self.zeroed, &mut self.zeros);
        let mut zero = |e: usize| {
            if !pattern[e] && !zeroed[e] {
                zeroed[e] = true;
                zeros.push(index(e));
            }
        };
        for &c in step.swaps() {
            let e = d + c as usize * stride;
            zero(e);
            zero(e + p);
        }
        for &c in step.upper() {
            for &o in step.multipliers() {
                zero(d + c as usize * stride + o as usize);
            }
        }
    }

    /// Overwrites `v` with the solution of `a x = v` from the factors of
    /// [`Schedule::factor`], with the operations of
    /// [`crate::packed_band::solve`] on the structural non-zeros.
    pub(crate) fn solve(&self, ab: &[f64], perm: &[usize], v: &mut [f64]) {
        self.solve_from(ab, perm, v, 0);
    }

    /// [`Schedule::solve`] of a right-hand side whose forward substitution
    /// went through steps `..forwarded` already (see
    /// [`Schedule::factor_forward`]).
    pub(crate) fn solve_from(&self, ab: &[f64], perm: &[usize], v: &mut [f64], forwarded: usize) {
        let (kl, ku, n) = self.shape;
        if self.dense || !self.recorded() {
            debug_assert_eq!(forwarded, 0);
            return crate::packed_band::solve(ab, perm, v, (kl, ku), n);
        }
        let ld = leading(kl, ku);
        let stride = ld - 1;
        let v = &mut v[..n];
        // The runs of steps compiled code took, by that code (which takes
        // the band and right-hand side of the lengths it was given in the
        // factorization: it cannot refuse them here); the replay's between.
        let forward = |v: &mut [f64], steps: std::ops::Range<usize>| {
            for k in steps {
                forward_step(ab, v, k, perm[k], at(ld, kl, ku, k, k), self.steps[k].multipliers());
            }
        };
        let backward = |v: &mut [f64], rows: std::ops::Range<usize>| {
            for i in rows.rev() {
                let d = at(ld, kl, ku, i, i);
                let mut s = v[i];
                for &c in self.steps[i].upper() {
                    s -= ab[d + c as usize * stride] * v[i + c as usize];
                }
                v[i] = s * ab[d];
            }
        };
        let mut k = forwarded;
        // The runs that applied their forward substitution as they factored
        // end at `forwarded` at the latest.
        for &(a, b, c) in self.ran.iter().filter(|r| r.1 > forwarded) {
            let a = a.max(k);
            forward(v, k..a);
            self.compiled[c].code.forward(ab, v, a, b);
            k = b;
        }
        forward(v, k..n);
        let mut i = n;
        for &(a, b, c) in self.ran.iter().rev() {
            backward(v, b..i);
            self.compiled[c].code.backward(ab, v, a, b);
            i = a;
        }
        backward(v, 0..i);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A chain-like band: a fixed sparse pattern (about three entries per
    /// row), values drifting from one matrix to the next, entries that are
    /// sometimes exactly zero (so the pattern grows), constants `±1` that tie
    /// as pivot candidates, and zero diagonals that need interchanges.
    fn matrices(n: usize, (kl, ku): (usize, usize), count: usize) -> (Vec<(u32, u32)>, Vec<Vec<f64>>) {
        let mut seed = 17u64;
        let mut rnd = move || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 11) as f64 / (1u64 << 53) as f64
        };
        // Every third diagonal entry is zero and paired with `±1` couplings
        // (a multiplier's row); the others vary; a few more entries scatter
        // over the band.
        let mut pattern = vec![None; n * n];
        for c in 0..n {
            if c % 3 == 0 && c + 1 < n {
                pattern[c * n + c + 1] = Some(1.0);
                pattern[(c + 1) * n + c] = Some(-1.0);
            } else if c % 3 != 0 {
                pattern[c * n + c] = Some(0.0);
            }
            for r in c.saturating_sub(ku)..(c + kl + 1).min(n) {
                if r != c && pattern[c * n + r].is_none() && rnd() < 0.12 {
                    pattern[c * n + r] = Some(0.0);
                }
            }
        }
        // Each entry drifts by a few per cent from its own value: pivots
        // move rarely, where two candidates are close. A tenth of the
        // entries are exactly zero in the first matrices (the pattern grows).
        let entries: Vec<(f64, f64)> = pattern.iter().map(|_| (rnd() - 0.5, 6.0 * rnd())).collect();
        let structure = (0..n * n)
            .filter(|&e| pattern[e].is_some())
            .map(|e| ((e % n) as u32, (e / n) as u32))
            .collect();
        let values = (0..count)
            .map(|t| {
                pattern
                    .iter()
                    .zip(&entries)
                    .map(|(p, &(value, phase))| match *p {
                        Some(0.0) if t < 3 && phase < 0.6 => 0.0,
                        Some(0.0) => value * (1.0 + 0.05 * (0.3 * t as f64 + phase).sin()),
                        Some(one) => one,
                        None => 0.0,
                    })
                    .collect()
            })
            .collect();
        (structure, values)
    }

    /// The banded LU of the column-major `a` into `ab` and `perm` with the
    /// interchanges `pivots`, each checked to be at least `keep` times its
    /// column's largest.
    fn banded_with(
        a: &[f64],
        n: usize,
        band: (usize, usize),
        pivots: &[usize],
        keep: f64,
        ab: &mut [f64],
        perm: &mut [usize],
    ) -> Result<(), FactorError> {
        let (kl, ku) = band;
        let ld = leading(kl, ku);
        ab.fill(0.0);
        for c in 0..n {
            for r in c.saturating_sub(ku)..(c + kl + 1).min(n) {
                ab[at(ld, kl, ku, r, c)] = a[c * n + r];
            }
        }
        let big = a.iter().fold(0.0f64, |b, x| b.max(x.abs()));
        crate::packed_band::eliminate(ab, perm, band, n, big, |k, col| {
            let largest = col.iter().fold(0.0f64, |b, x| b.max(x.abs()));
            let p = pivots[k] - k;
            assert!(
                col[p].abs() >= keep * largest,
                "pivot {k}: {} against {largest}",
                col[p]
            );
            (p, largest)
        })
    }

    /// Replayed factors are the banded LU's with the same interchanges, to
    /// the bit, and those are the threshold rule's where every pivot is
    /// chosen afresh (no `keep`); kept pivots pass the check.
    #[test]
    fn replayed_factors_and_solutions_are_the_banded_ones_to_the_bit() {
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        for keep in [None, Some(KEEP)] {
            let mut moved = 0;
            for (n, band) in [(60, (6, 6)), (90, (12, 12)), (41, (3, 9))] {
                let ld = leading(band.0, band.1);
                let (structure, values) = matrices(n, band, 40);
                let mut schedule = Schedule::new(&structure, band, n, THRESHOLD, keep);
                // The same matrices given as their pattern's values, the
                // pattern listed in another order.
                let shuffled: Vec<(u32, u32)> = structure.iter().rev().copied().collect();
                let mut from_values = Schedule::new(&shuffled, band, n, THRESHOLD, keep);
                let (mut ab, mut reference) = (vec![0.0; n * ld], vec![0.0; n * ld]);
                let (mut perm, mut perm_ref) = (vec![0; n], vec![0; n]);
                let (mut ab_values, mut perm_values) = (vec![0.0; n * ld], vec![0; n]);
                let (mut factored, mut recorded_in) = (0u64, 0u64);
                for (t, a) in values.iter().enumerate() {
                    let before = schedule.recordings;
                    let got = schedule.factor(Source::Matrix(a), &mut ab, &mut perm);
                    recorded_in += u64::from(schedule.recordings > before);
                    let listed: Vec<f64> = shuffled.iter().map(|&(r, c)| a[c as usize * n + r as usize]).collect();
                    let got_values = from_values.factor(Source::Values(&listed), &mut ab_values, &mut perm_values);
                    assert_eq!(got_values, got, "n = {n}, matrix {t}, from values");
                    let rule = crate::packed_band::factor(a, &mut reference, &mut perm_ref, band, n, THRESHOLD);
                    if keep.is_none() || t == 0 {
                        assert_eq!(got, rule, "n = {n}, matrix {t}");
                    }
                    if got.is_err() {
                        continue;
                    }
                    factored += 1;
                    if keep.is_none() || t == 0 {
                        assert_eq!(perm, perm_ref, "n = {n}, matrix {t}: the threshold rule's interchanges");
                    }
                    banded_with(
                        a,
                        n,
                        band,
                        &perm,
                        keep.unwrap_or(THRESHOLD),
                        &mut reference,
                        &mut perm_ref,
                    )
                    .unwrap();
                    assert_eq!(perm_values, perm, "n = {n}, matrix {t}, from values");
                    assert_eq!(bits(&ab_values), bits(&ab), "n = {n}, matrix {t}, from values");
                    let rhs: Vec<f64> = (0..n).map(|i| (i as f64 * 0.37 + t as f64).sin()).collect();
                    let (mut x, mut y) = (rhs.clone(), rhs.clone());
                    schedule.solve(&ab, &perm, &mut x);
                    crate::packed_band::solve(&reference, &perm_ref, &mut y, band, n);
                    assert_eq!(bits(&x), bits(&y), "n = {n}, matrix {t}");
                    // And it is a solution.
                    let mut res = 0.0f64;
                    for i in 0..n {
                        let ax: f64 = (0..n).map(|j| a[j * n + i] * x[j]).sum();
                        res = res.max((ax - rhs[i]).abs());
                    }
                    assert!(res < 1e-8, "n = {n}, matrix {t}: residual {res}");
                }
                assert!(!schedule.dense, "n = {n}: the band is sparse enough to replay");
                assert!(
                    recorded_in < factored / 2,
                    "n = {n}: {recorded_in} of {factored} factorizations recorded"
                );
                moved += schedule.recordings - 1;
                // A moved pivot re-records a few steps, not the rest of the band.
                let again = schedule.recorded_steps - n as u64;
                let window = (band.0 + band.1 + 1) as u64;
                assert!(
                    again <= 4 * window * (schedule.recordings - 1),
                    "n = {n}: {again} steps recorded again for {} moves",
                    schedule.recordings - 1
                );
            }
            // Pivots moved (the drift brings close candidates past each
            // other), and were followed.
            if keep.is_none() {
                assert!(moved >= 5, "{moved} recordings after a pivot moved");
            }
        }
    }

    /// Plans "compiled" into their own reference ([`LuPlan::factor`]): what
    /// the schedule does with compiled code, without a code generator.
    #[derive(Debug)]
    struct Reference;
    static REFERENCE: Reference = Reference;

    #[derive(Debug)]
    struct Planned(LuPlan);

    impl LuCompiler for Reference {
        fn compile(&self, plan: &LuPlan) -> Option<Arc<dyn CompiledLu>> {
            Some(Arc::new(Planned(plan.clone())))
        }
    }

    impl CompiledLu for Planned {
        fn factor(
            &self,
            ab: &mut [f64],
            v: Option<&mut [f64]>,
            from: usize,
            limit: usize,
            tiny: f64,
            keep: f64,
        ) -> usize {
            let taken = self.0.factor(ab, from, limit, tiny, keep);
            if let Some(v) = v {
                self.0.forward(ab, v, from, taken);
            }
            taken
        }
        fn forward(&self, ab: &[f64], v: &mut [f64], from: usize, upto: usize) -> bool {
            self.0.forward(ab, v, from, upto);
            true
        }
        fn backward(&self, ab: &[f64], v: &mut [f64], from: usize, upto: usize) -> bool {
            self.0.backward(ab, v, from, upto);
            true
        }
    }

    /// With a compiler lent, settled steps run as compiled sequences, the
    /// replay taking over where a pivot moves and handing back where a
    /// sequence agrees again: the factors, interchanges and solutions are
    /// the replay's to the bit, through pivots that come and go.
    #[test]
    fn compiled_sequences_give_the_replay_s_bits() {
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        let (mut whole, mut parts, mut fused_whole) = (0, 0, 0);
        // A kept pivot must be half its column's largest in the second
        // round: pivots then move often.
        let cases = [(60, (6, 6)), (90, (12, 12)), (41, (3, 9))];
        for ((n, band), keep) in cases.into_iter().flat_map(|c| [(c, KEEP), (c, 0.5)]) {
            let ld = leading(band.0, band.1);
            let (structure, values) = matrices(n, band, 700);
            let mut replayed = Schedule::new(&structure, band, n, THRESHOLD, Some(keep));
            let mut compiled = Schedule::new(&structure, band, n, THRESHOLD, Some(keep));
            compiled.set_compiler(Some(&REFERENCE));
            let (mut ab, mut ab_c) = (vec![0.0; n * ld], vec![0.0; n * ld]);
            let (mut perm, mut perm_c) = (vec![0; n], vec![0; n]);
            let mut fused = 0;
            for (t, a) in values.iter().enumerate() {
                let rhs: Vec<f64> = (0..n).map(|i| (i as f64 * 0.37 + t as f64).sin()).collect();
                // The compiled schedule takes the forward substitution of
                // its leading compiled steps along.
                let mut f = rhs.clone();
                let want = replayed.factor(Source::Matrix(a), &mut ab, &mut perm);
                let recordings = compiled.recordings;
                let got = compiled.factor_forward(Source::Matrix(a), &mut ab_c, &mut perm_c, Some(&mut f));
                assert_eq!(got, want, "n = {n}, matrix {t}");
                if got.is_err() {
                    continue;
                }
                let forwarded = compiled.forwarded();
                // Compiled runs and the replay between them take it along
                // alike; only a recording stops it.
                if compiled.recordings == recordings {
                    assert_eq!(forwarded, n, "n = {n}, matrix {t}: {:?}", compiled.ran);
                }
                fused += usize::from(forwarded > 0);
                fused_whole += usize::from(forwarded == n);
                let covered: usize = compiled.ran.iter().map(|r| r.1 - r.0).sum();
                whole += usize::from(covered == n);
                parts += usize::from(covered > 0 && covered < n);
                assert_eq!(perm_c, perm, "n = {n}, matrix {t}");
                assert_eq!(bits(&ab_c), bits(&ab), "n = {n}, matrix {t}");
                let (mut x, mut y) = (rhs.clone(), rhs.clone());
                replayed.solve(&ab, &perm, &mut x);
                compiled.solve(&ab_c, &perm_c, &mut y);
                assert_eq!(bits(&y), bits(&x), "n = {n}, matrix {t}");
                compiled.solve_from(&ab_c, &perm_c, &mut f, forwarded);
                assert_eq!(bits(&f), bits(&x), "n = {n}, matrix {t}, {forwarded} steps forwarded");
            }
            assert!(compiled.compilations >= 1, "n = {n}: nothing compiled");
            assert!(fused > 0, "n = {n}: nothing forwarded as it factored");
        }
        // Both kinds of factorization happened.
        assert!(whole > 100 && parts > 10, "{whole} wholly and {parts} partly compiled");
        assert!(fused_whole > 100, "{fused_whole} forward substitutions wholly fused");
    }

    /// A factorization that fails after the replay took over from compiled
    /// code (a pivot refused, a variant of another recorded earlier taken,
    /// then a singular column) leaves its interchanges in `perm`: the next
    /// one, wholly compiled, must still give the replay's, not take `perm`
    /// as its code's.
    #[test]
    fn a_failed_factorization_leaves_no_interchanges_behind() {
        let (n, band) = (60, (6, 6));
        let ld = leading(band.0, band.1);
        let (structure, values) = matrices(n, band, 400);
        let mut replayed = Schedule::new(&structure, band, n, THRESHOLD, Some(KEEP));
        let mut compiled = Schedule::new(&structure, band, n, THRESHOLD, Some(KEEP));
        compiled.set_compiler(Some(&REFERENCE));
        let (mut ab, mut ab_c) = (vec![0.0; n * ld], vec![0.0; n * ld]);
        let (mut perm, mut perm_c) = (vec![0; n], vec![0; n]);
        let j = n / 2;
        // A large entry in column j off the pivot kept: once, early, so
        // that the pivot moves and stays (kept pivots stay while they
        // pass), and once more on the row first kept, with column j + 3
        // empty (zero columns stay zero through the steps before), after a
        // wholly compiled factorization.
        let (mut first, mut failed) = (None, false);
        for (t, a) in values.iter().enumerate() {
            let mut a = a.clone();
            let big = a.iter().fold(0.0f64, |m, x| m.max(x.abs()));
            if t == 5 {
                let r = structure
                    .iter()
                    .filter(|&&(r, c)| c as usize == j && r as usize >= j && r as usize != perm_c[j])
                    .map(|&(r, _)| r as usize)
                    .next()
                    .expect("a second candidate");
                first = Some(perm_c[j]);
                a[j * n + r] = 1e4 * big;
            } else if let Some(p) = first.filter(|_| compiled.whole.is_some() && !failed) {
                a[j * n + p] = 1e4 * big;
                a[(j + 3) * n..(j + 4) * n].fill(0.0);
                failed = true;
            }
            let want = replayed.factor(Source::Matrix(&a), &mut ab, &mut perm);
            let got = compiled.factor(Source::Matrix(&a), &mut ab_c, &mut perm_c);
            assert_eq!(got, want, "matrix {t}");
            eprintln!("{t} {:?} {:?} {}", got, compiled.whole, compiled.compilations);
            if got.is_ok() {
                assert_eq!(perm_c, perm, "matrix {t}");
            }
        }
        assert!(failed, "no factorization ran wholly compiled after the variant");
    }

    /// Threshold pivoting keeps pivots where plain partial pivoting moves
    /// them after candidates of like size, and so records less often; a
    /// replay that keeps its pivots while they pass the check, less still.
    #[test]
    fn a_threshold_moves_fewer_pivots_than_partial_pivoting() {
        let moves = |threshold: f64, keep: Option<f64>| {
            let mut total = 0;
            for (n, band) in [(60, (6, 6)), (90, (12, 12)), (41, (3, 9))] {
                let (structure, values) = matrices(n, band, 40);
                let mut schedule = Schedule::new(&structure, band, n, threshold, keep);
                let mut ab = vec![0.0; n * leading(band.0, band.1)];
                let mut perm = vec![0; n];
                for a in &values {
                    let _ = schedule.factor(Source::Matrix(a), &mut ab, &mut perm);
                }
                total += schedule.recordings - 1;
            }
            total
        };
        let partial = moves(crate::packed_band::PARTIAL, None);
        let threshold = moves(THRESHOLD, None);
        let kept = moves(THRESHOLD, Some(KEEP));
        assert!(
            threshold < partial,
            "{threshold} moves with a threshold, {partial} without"
        );
        // Kept pivots move only where one falls below `KEEP` of its column.
        assert!(
            kept < threshold,
            "{kept} moves keeping pivots, {threshold} choosing afresh"
        );
    }

    /// A pivot that moves and moves back, again and again, is recorded once
    /// each way: the variants are kept, and the factors stay the banded
    /// LU's.
    #[test]
    fn a_pivot_that_comes_and_goes_is_recorded_once_each_way() {
        let (n, band) = (40, (4, 4));
        let structure: Vec<(u32, u32)> = (0..n as u32)
            .flat_map(|i| [(i, i.saturating_sub(1)), (i, i), (i, (i + 1).min(n as u32 - 1))])
            .collect();
        let matrix = |t: usize| {
            let mut a = vec![0.0; n * n];
            for &(r, c) in &structure {
                let (r, c) = (r as usize, c as usize);
                a[c * n + r] = if r == c { 4.0 + 0.01 * (r + t) as f64 } else { 1.0 };
            }
            // Column 10's diagonal falls below `KEEP` times the entry
            // under it every other matrix, and that entry below `KEEP`
            // times the diagonal in the others: the pivot moves to row 11
            // and back. (Row 10's entry left of it is zero, so step 9
            // leaves it be.)
            a[9 * n + 10] = 0.0;
            if t % 2 == 1 {
                a[10 * n + 10] = 0.01 * KEEP;
            } else {
                a[10 * n + 11] = 0.01 * KEEP;
            }
            a
        };
        let mut schedule = Schedule::new(&structure, band, n, THRESHOLD, Some(KEEP));
        let ld = leading(band.0, band.1);
        let (mut ab, mut reference) = (vec![0.0; n * ld], vec![0.0; n * ld]);
        let (mut perm, mut perm_ref) = (vec![0; n], vec![0; n]);
        for t in 0..20 {
            let a = matrix(t);
            schedule.factor(Source::Matrix(&a), &mut ab, &mut perm).unwrap();
            crate::packed_band::factor(&a, &mut reference, &mut perm_ref, band, n, THRESHOLD).unwrap();
            assert_eq!(perm, perm_ref, "matrix {t}");
            assert_eq!(perm[10], if t % 2 == 1 { 11 } else { 10 }, "matrix {t}");
            let rhs: Vec<f64> = (0..n).map(|i| (i as f64).cos()).collect();
            let (mut x, mut y) = (rhs.clone(), rhs);
            schedule.solve(&ab, &perm, &mut x);
            crate::packed_band::solve(&reference, &perm_ref, &mut y, band, n);
            assert_eq!(x, y, "matrix {t}");
        }
        assert!(!schedule.dense);
        assert_eq!(
            schedule.recordings, 2,
            "the first factorization, then the moved pivot once"
        );
    }

    #[test]
    fn a_band_without_zeros_is_factored_by_the_banded_lu() {
        let (n, band) = (30, (2, 3));
        let a: Vec<f64> = (0..n * n)
            .map(|e| {
                let (c, r) = (e / n, e % n);
                if r + band.1 >= c && r <= c + band.0 {
                    1.0 + ((e * 7919) % 13) as f64
                } else {
                    0.0
                }
            })
            .collect();
        let structure: Vec<(u32, u32)> = (0..n * n)
            .filter(|&e| a[e] != 0.0)
            .map(|e| ((e % n) as u32, (e / n) as u32))
            .collect();
        let mut schedule = Schedule::new(&structure, band, n, THRESHOLD, Some(KEEP));
        let mut ab = vec![0.0; n * leading(band.0, band.1)];
        let mut perm = vec![0; n];
        schedule.factor(Source::Matrix(&a), &mut ab, &mut perm).unwrap();
        assert!(schedule.dense);
        // Given as the pattern's values, the same factors.
        let values: Vec<f64> = structure.iter().map(|&(r, c)| a[c as usize * n + r as usize]).collect();
        let (mut ab_values, mut perm_values) = (vec![f64::NAN; ab.len()], vec![0; n]);
        schedule
            .factor(Source::Values(&values), &mut ab_values, &mut perm_values)
            .unwrap();
        assert_eq!(perm_values, perm);
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&ab_values), bits(&ab));
    }
}
