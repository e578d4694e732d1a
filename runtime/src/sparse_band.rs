//! The banded LU of [`crate::packed_band`], replayed on the band's
//! structural non-zeros.
//!
//! A chain's Jacobian in its sparse tableau has a band of 25 diagonals but
//! about three entries per row (theory.md §9.5): the banded LU spends almost
//! all of its time on zeros. Given the pattern of entries that can be
//! non-zero (known symbolically: [`crate::Kernels::jacobian_pattern`]), a
//! factorization here runs the banded LU while recording the operations on
//! entries of the pattern and its fill-in, and later factorizations replay
//! only those.
//!
//! Partial pivoting is kept: every replayed step checks that the recorded
//! pivot row is still the one [`crate::packed_band::factor`] would choose
//! (the first row of largest magnitude); where another wins, the steps from
//! there on are recorded anew. The factors are those of the banded LU to the
//! bit, whatever matrices came before (a zero skipped here may differ in
//! sign from the banded LU's, which no non-zero entry of the factors or of a
//! solution can see), so a step stays a function of the state it is handed.
//!
//! Recording allocates; it happens at the first factorization and where a
//! pivot moves (counted in [`Schedule::recordings`]), not in the steps
//! between.

use crate::lu::FactorError;
use crate::packed_band::{at, leading, pivot};

/// A replay pays when it does at most this share of the banded LU's
/// updates: indexed updates cost about twice the banded LU's contiguous
/// ones.
const REPLAY_SHARE: f64 = 0.4;

/// How to factor the matrices of one band and pattern: the operations of
/// the banded LU on the entries that can be non-zero.
#[derive(Clone, Debug, Default)]
pub(crate) struct Schedule {
    /// `(kl, ku)` and the size the pattern was given for
    shape: (usize, usize, usize),
    /// `(packed index, index in the column-major matrix)` of the pattern's
    /// entries, in column-major order
    gather: Vec<(u32, u32)>,
    /// packed entries the pattern holds
    pattern: Vec<bool>,
    /// the operations are recorded (for the pivots of the last matrix)
    recorded: bool,
    /// the banded LU is cheaper than a replay (a band without structural
    /// zeros worth skipping): the schedule is not used
    dense: bool,
    /// the pattern as a recording interchanges rows and fills in
    work: Vec<bool>,
    /// per step `k`, the ranges below into the lists of that step
    steps: Vec<Step>,
    /// `(packed index, row offset from k)` of column `k`'s structural
    /// entries on and below the diagonal, in row order: the pivot candidates
    candidates: Vec<(u32, u32)>,
    /// pairs of packed entries exchanged by the row interchange
    swaps: Vec<(u32, u32)>,
    /// `(packed index, row)` of the multipliers
    multipliers: Vec<(u32, u32)>,
    /// `(target, multiplier, pivot-row entry)`: `a[t] −= a[m] · a[u]`
    updates: Vec<(u32, u32, u32)>,
    /// packed entries outside the pattern that the operations read or
    /// write: zeros before they start (of this recording and earlier ones:
    /// zeroing an entry nobody reads costs a store)
    zeros: Vec<u32>,
    /// the packed entries in `zeros`
    zeroed: Vec<bool>,
    /// per row, the range into `upper` of its entries right of the diagonal
    rows: Vec<(u32, u32)>,
    /// `(packed index, column)` of the rows of U, columns in decreasing
    /// order (the order of the banded back substitution)
    upper: Vec<(u32, u32)>,
    /// how many times operations were recorded (from the first step or a later one)
    pub(crate) recordings: u64,
}

/// Where step `k`'s operations are in the lists of [`Schedule`].
#[derive(Clone, Copy, Debug, Default)]
struct Step {
    candidates: (u32, u32),
    /// the pivot's row offset from `k`
    pivot: u32,
    swaps: (u32, u32),
    multipliers: (u32, u32),
    updates: (u32, u32),
}

fn range(r: (u32, u32)) -> std::ops::Range<usize> {
    r.0 as usize..r.1 as usize
}

fn index(v: usize) -> u32 {
    u32::try_from(v).expect("a band of fewer than 2³² entries")
}

impl Schedule {
    /// The schedule of `n × n` matrices of band `(kl, ku)` whose entries
    /// outside `pattern` (`(row, column)` pairs) are zero.
    pub(crate) fn new(pattern: &[(u32, u32)], (kl, ku): (usize, usize), n: usize) -> Self {
        let ld = leading(kl, ku);
        let mut entries: Vec<(u32, u32)> = pattern
            .iter()
            .filter(|&&(r, c)| {
                let (r, c) = (r as usize, c as usize);
                r < n && c < n && r <= c + kl && c <= r + ku
            })
            .map(|&(r, c)| {
                let (r, c) = (r as usize, c as usize);
                (index(at(ld, kl, ku, r, c)), index(c * n + r))
            })
            .collect();
        entries.sort_unstable_by_key(|e| e.1);
        entries.dedup();
        let mut mask = vec![false; n * ld];
        for &(e, _) in &entries {
            mask[e as usize] = true;
        }
        Self {
            shape: (kl, ku, n),
            gather: entries,
            pattern: mask,
            ..Self::default()
        }
    }

    /// Whether this schedule is for matrices of band `band` and size `n`.
    pub(crate) fn fits(&self, (kl, ku): (usize, usize), n: usize) -> bool {
        self.shape == (kl, ku, n) && !self.gather.is_empty()
    }

    /// Factors the column-major `n × n` matrix `s` into `ab` and `perm` as
    /// [`crate::packed_band::factor`] does, replaying the recorded
    /// operations where they still apply.
    pub(crate) fn factor(&mut self, s: &[f64], ab: &mut [f64], perm: &mut [usize]) -> Result<(), FactorError> {
        let (kl, ku, n) = self.shape;
        if self.dense {
            return crate::packed_band::factor(s, ab, perm, (kl, ku), n);
        }
        let big = if self.recorded {
            for &z in &self.zeros {
                ab[z as usize] = 0.0;
            }
            self.gather_checked(s, ab)?
        } else {
            ab.fill(0.0);
            self.gather_checked(s, ab)?
        };
        let tiny = big * 1e3 * f64::EPSILON;
        let from = if self.recorded {
            match self.replay(ab, perm, tiny)? {
                None => return Ok(()),
                Some(k) => k,
            }
        } else {
            0
        };
        self.record(from, ab, perm, tiny)
    }

    /// The pattern's entries of `s` into `ab`, with the checks of
    /// [`crate::lu::EntryChecks`]: the largest magnitude, or an error.
    fn gather_checked(&self, s: &[f64], ab: &mut [f64]) -> Result<f64, FactorError> {
        let (mut big, mut poison) = (0.0f64, 0.0f64);
        for &(e, i) in &self.gather {
            let x = s[i as usize];
            ab[e as usize] = x;
            poison += x * 0.0;
            big = if x.abs() > big { x.abs() } else { big };
        }
        if poison != 0.0 {
            Err(FactorError::NonFinite)
        } else if big == 0.0 {
            Err(FactorError::Singular)
        } else {
            Ok(big)
        }
    }

    /// Replays the recorded operations on `ab`: `None` when done, or the
    /// first step whose pivot is not the recorded one (`ab` then holds the
    /// matrix as the banded LU has it before that step).
    fn replay(&self, ab: &mut [f64], perm: &mut [usize], tiny: f64) -> Result<Option<usize>, FactorError> {
        let (kl, ku, _) = self.shape;
        let ld = leading(kl, ku);
        for (k, step) in self.steps.iter().enumerate() {
            // The first candidate of largest magnitude, as `pivot` finds it
            // among all rows of the band (the others are zeros).
            let (mut p, mut pv) = (0u32, 0.0f64);
            for &(i, off) in &self.candidates[range(step.candidates)] {
                let a = ab[i as usize].abs();
                if a > pv {
                    p = off;
                    pv = a;
                }
            }
            if pv <= tiny {
                return Err(FactorError::Singular);
            }
            if p != step.pivot {
                return Ok(Some(k));
            }
            perm[k] = k + p as usize;
            for &(a, b) in &self.swaps[range(step.swaps)] {
                ab.swap(a as usize, b as usize);
            }
            let d = at(ld, kl, ku, k, k);
            let inv = 1.0 / ab[d];
            ab[d] = inv;
            for &(m, _) in &self.multipliers[range(step.multipliers)] {
                ab[m as usize] *= inv;
            }
            for &(t, m, u) in &self.updates[range(step.updates)] {
                ab[t as usize] -= ab[m as usize] * ab[u as usize];
            }
        }
        Ok(None)
    }

    /// The banded LU on `ab` from step `from` on (the steps before it
    /// replayed), recording its operations on the entries of the pattern and
    /// its fill-in.
    fn record(&mut self, from: usize, ab: &mut [f64], perm: &mut [usize], tiny: f64) -> Result<(), FactorError> {
        let (kl, ku, n) = self.shape;
        let ld = leading(kl, ku);
        self.recorded = false;
        self.recordings += 1;
        // The structure as the steps before `from` left it.
        self.work.clear();
        self.work.extend_from_slice(&self.pattern);
        for step in &self.steps[..from] {
            for &(a, b) in &self.swaps[range(step.swaps)] {
                self.work.swap(a as usize, b as usize);
            }
            for &(t, _, _) in &self.updates[range(step.updates)] {
                self.work[t as usize] = true;
            }
        }
        if let Some(step) = self.steps.get(from).copied() {
            self.candidates.truncate(step.candidates.0 as usize);
            self.swaps.truncate(step.swaps.0 as usize);
            self.multipliers.truncate(step.multipliers.0 as usize);
            self.updates.truncate(step.updates.0 as usize);
        }
        self.steps.truncate(from);
        let (swaps, updates) = (self.swaps.len(), self.updates.len());
        let nz = &mut self.work;
        let stride = ld - 1;
        for k in from..n {
            let rows = (k + kl + 1).min(n);
            let cols = (k + ku + kl + 1).min(n);
            let d = at(ld, kl, ku, k, k);
            let mut step = Step::default();
            step.candidates.0 = index(self.candidates.len());
            for i in k..rows {
                if nz[d + i - k] {
                    self.candidates.push((index(d + i - k), index(i - k)));
                }
            }
            step.candidates.1 = index(self.candidates.len());
            let (p, pv) = pivot(&ab[d..d + rows - k]);
            if pv <= tiny {
                return Err(FactorError::Singular);
            }
            step.pivot = index(p);
            perm[k] = k + p;
            step.swaps.0 = index(self.swaps.len());
            if p != 0 {
                let mut ik = d;
                for _ in k..cols {
                    if nz[ik] || nz[ik + p] {
                        self.swaps.push((index(ik), index(ik + p)));
                        ab.swap(ik, ik + p);
                        nz.swap(ik, ik + p);
                    }
                    ik += stride;
                }
            }
            step.swaps.1 = index(self.swaps.len());
            let inv = 1.0 / ab[d];
            ab[d] = inv;
            step.multipliers.0 = index(self.multipliers.len());
            for i in k + 1..rows {
                if nz[d + i - k] {
                    self.multipliers.push((index(d + i - k), index(i)));
                    ab[d + i - k] *= inv;
                }
            }
            step.multipliers.1 = index(self.multipliers.len());
            step.updates.0 = index(self.updates.len());
            for c in k + 1..cols {
                let u = at(ld, kl, ku, k, c);
                if !nz[u] {
                    continue;
                }
                for &(m, i) in &self.multipliers[range(step.multipliers)] {
                    let t = at(ld, kl, ku, i as usize, c);
                    self.updates.push((index(t), m, index(u)));
                    ab[t] -= ab[m as usize] * ab[u];
                    nz[t] = true;
                }
            }
            step.updates.1 = index(self.updates.len());
            self.steps.push(step);
        }
        self.finish(from, swaps, updates);
        Ok(())
    }

    /// The lists that follow from the steps recorded from `from` on (and
    /// the swaps and updates from those indices on): the rows of U for the
    /// back substitution (a row is final after its own step), the entries
    /// to zero before a replay; and whether a replay pays.
    fn finish(&mut self, from: usize, swaps: usize, updates: usize) {
        let (kl, ku, n) = self.shape;
        let ld = leading(kl, ku);
        let nz = &self.work;
        self.rows.truncate(from);
        self.upper.truncate(self.rows.last().map_or(0, |r| r.1 as usize));
        for i in from..n {
            let start = index(self.upper.len());
            for j in (i + 1..(i + kl + ku + 1).min(n)).rev() {
                let e = at(ld, kl, ku, i, j);
                if nz[e] {
                    self.upper.push((index(e), index(j)));
                }
            }
            self.rows.push((start, index(self.upper.len())));
        }
        // Fill-in, and entries an interchange brings into the pattern.
        self.zeroed.resize(n * ld, false);
        let (pattern, zeroed, zeros) = (&self.pattern, &mut self.zeroed, &mut self.zeros);
        let mut zero = |e: u32| {
            if !pattern[e as usize] && !zeroed[e as usize] {
                zeroed[e as usize] = true;
                zeros.push(e);
            }
        };
        for &(a, b) in &self.swaps[swaps..] {
            zero(a);
            zero(b);
        }
        for &(t, _, _) in &self.updates[updates..] {
            zero(t);
        }
        let banded = n as f64 * kl as f64 * (kl + ku + 1) as f64;
        self.dense = self.updates.len() as f64 > REPLAY_SHARE * banded;
        self.recorded = true;
    }

    /// Overwrites `v` with the solution of `a x = v` from the factors of
    /// [`Schedule::factor`], with the operations of
    /// [`crate::packed_band::solve`] on the structural non-zeros.
    pub(crate) fn solve(&self, ab: &[f64], perm: &[usize], v: &mut [f64]) {
        let (kl, ku, n) = self.shape;
        if self.dense || !self.recorded {
            return crate::packed_band::solve(ab, perm, v, (kl, ku), n);
        }
        let ld = leading(kl, ku);
        let v = &mut v[..n];
        for (k, step) in self.steps.iter().enumerate() {
            v.swap(k, perm[k]);
            let vk = v[k];
            for &(l, i) in &self.multipliers[range(step.multipliers)] {
                v[i as usize] -= ab[l as usize] * vk;
            }
        }
        for i in (0..n).rev() {
            let mut s = v[i];
            for &(u, j) in &self.upper[range(self.rows[i])] {
                s -= ab[u as usize] * v[j as usize];
            }
            v[i] = s * ab[at(ld, kl, ku, i, i)];
        }
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

    #[test]
    fn replayed_factors_and_solutions_are_the_banded_ones_to_the_bit() {
        let mut moved = 0;
        for (n, band) in [(60, (6, 6)), (90, (12, 12)), (41, (3, 9))] {
            let ld = leading(band.0, band.1);
            let (structure, values) = matrices(n, band, 40);
            let mut schedule = Schedule::new(&structure, band, n);
            let (mut ab, mut reference) = (vec![0.0; n * ld], vec![0.0; n * ld]);
            let (mut perm, mut perm_ref) = (vec![0; n], vec![0; n]);
            let mut factored = 0u64;
            for (t, a) in values.iter().enumerate() {
                let got = schedule.factor(a, &mut ab, &mut perm);
                let want = crate::packed_band::factor(a, &mut reference, &mut perm_ref, band, n);
                assert_eq!(got, want, "n = {n}, matrix {t}");
                if want.is_err() {
                    continue;
                }
                factored += 1;
                assert_eq!(perm, perm_ref, "n = {n}, matrix {t}");
                let rhs: Vec<f64> = (0..n).map(|i| (i as f64 * 0.37 + t as f64).sin()).collect();
                let (mut x, mut y) = (rhs.clone(), rhs.clone());
                schedule.solve(&ab, &perm, &mut x);
                crate::packed_band::solve(&reference, &perm_ref, &mut y, band, n);
                let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
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
                schedule.recordings < factored / 2,
                "n = {n}: {} recordings in {factored} factorizations",
                schedule.recordings
            );
            moved += schedule.recordings - 1;
        }
        // Pivots moved (the drift brings close candidates past each other),
        // and were followed.
        assert!(moved >= 5, "{moved} recordings after a pivot moved");
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
        let mut schedule = Schedule::new(&structure, band, n);
        let mut ab = vec![0.0; n * leading(band.0, band.1)];
        let mut perm = vec![0; n];
        schedule.factor(&a, &mut ab, &mut perm).unwrap();
        assert!(schedule.dense);
    }
}
