//! The banded LU of [`crate::lu::Lu`] on a packed copy of the band.
//!
//! The Jacobian is written into an `n × n` column-major matrix, so a row's
//! entries lie `n` apart: eliminating along the band of a long chain (a few
//! thousand unknowns) touches a new cache line, and soon a new page, for
//! every entry. Packed as LAPACK packs bands (`2 kl + ku + 1` entries per
//! column, the `kl` first for the fill-in of row interchanges), the whole
//! band is a few hundred kilobytes read in order. The operations, and their
//! order, are those of the factorization in the full matrix, so the factors
//! are the same numbers.

use crate::lu::FactorError;

/// Entries per packed column.
pub(crate) fn leading(kl: usize, ku: usize) -> usize {
    2 * kl + ku + 1
}

/// Index of entry `(i, c)` in the packed band (`c − kl − ku ≤ i ≤ c + kl`).
#[inline(always)]
pub(crate) fn at(ld: usize, kl: usize, ku: usize, i: usize, c: usize) -> usize {
    c * ld + kl + ku + i - c
}

/// The pivot threshold of plain partial pivoting: the pivot is the first
/// row of largest magnitude, as in the dense factorization.
pub(crate) const PARTIAL: f64 = 1.0;

/// Copies the band of the column-major `n × n` matrix `s` into `ab` (the
/// fill-in rows zeroed), checks its entries as the full factorization does,
/// and factors it with threshold partial pivoting within the band (see
/// [`pivot`]; [`PARTIAL`]: plain partial pivoting). `perm[k]` is the row
/// swapped with row `k` at step `k`; the diagonal holds reciprocal pivots.
pub(crate) fn factor(
    s: &[f64],
    ab: &mut [f64],
    perm: &mut [usize],
    (kl, ku): (usize, usize),
    n: usize,
    threshold: f64,
) -> Result<(), FactorError> {
    let big = load(s, ab, (kl, ku), n)?;
    eliminate(ab, perm, (kl, ku), n, big, |_, col| pivot(col, threshold))
}

/// The band of the column-major `n × n` matrix `s` into `ab` (the fill-in
/// rows zeroed), its entries checked as the full factorization does: their
/// largest magnitude, or why it cannot be factored.
pub(crate) fn load(s: &[f64], ab: &mut [f64], (kl, ku): (usize, usize), n: usize) -> Result<f64, FactorError> {
    let ld = leading(kl, ku);
    let row_end = |k: usize| (k + kl + 1).min(n);
    let mut checks = crate::lu::EntryChecks::new();
    for c in 0..n {
        let first = c.saturating_sub(ku);
        let col = &mut ab[c * ld..(c + 1) * ld];
        col.fill(0.0);
        let from = at(ld, kl, ku, first, c) - c * ld;
        let len = row_end(c) - first;
        col[from..from + len].copy_from_slice(&s[c * n + first..c * n + row_end(c)]);
        checks.take(&col[from..from + len]);
    }
    checks.verdict()
}

/// [`factor`] on the band already in `ab` (fill-in rows zero), whose
/// largest magnitude is `big`, the pivot of step `k` chosen by
/// `choose(k, column)` among the column's entries on and below the
/// diagonal: the row offset, and the column's largest magnitude.
#[inline]
pub(crate) fn eliminate(
    ab: &mut [f64],
    perm: &mut [usize],
    (kl, ku): (usize, usize),
    n: usize,
    big: f64,
    mut choose: impl FnMut(usize, &[f64]) -> (usize, f64),
) -> Result<(), FactorError> {
    let ld = leading(kl, ku);
    let row_end = |k: usize| (k + kl + 1).min(n);
    let col_end = |k: usize| (k + kl + ku + 1).min(n);
    let tiny = big * 1e3 * f64::EPSILON;
    // Entry (k, c) for c ≥ k sits at `c·(ld − 1) + kl + ku + k`: a row of
    // the band is a stride of `ld − 1`, walked without index arithmetic.
    let stride = ld - 1;
    for k in 0..n {
        let (rows, cols) = (row_end(k), col_end(k));
        let d = at(ld, kl, ku, k, k);
        let (p, big) = choose(k, &ab[d..d + rows - k]);
        if big <= tiny {
            return Err(FactorError::Singular);
        }
        let p = k + p;
        perm[k] = p;
        if p != k {
            let mut ik = d;
            for _ in k..cols {
                ab.swap(ik, ik + p - k);
                ik += stride;
            }
        }
        let inv = 1.0 / ab[d];
        ab[d] = inv;
        for x in &mut ab[d + 1..d + rows - k] {
            *x *= inv;
        }
        // Trailing zero multipliers change nothing (see `lu::factor_core`).
        let len = ab[d + 1..d + rows - k]
            .iter()
            .rposition(|&x| x != 0.0)
            .map_or(0, |i| i + 1);
        if len == 0 {
            continue;
        }
        // The multipliers end before entry (k, k + 1), `stride` after the pivot.
        let (mult, rest) = ab[d + 1..].split_at_mut(stride - 1);
        update(rest, &mult[..len], stride, cols - k - 1);
    }
    Ok(())
}

/// The first row of `col` whose magnitude is at least `threshold` times the
/// largest, and the largest magnitude. With [`PARTIAL`] that is the first
/// row of largest magnitude; below it, the row nearest the diagonal among
/// those large enough (threshold partial pivoting, as sparse LU codes do:
/// a growth of at most `1 + 1/threshold` per step).
#[inline(always)]
pub(crate) fn pivot(col: &[f64], threshold: f64) -> (usize, f64) {
    pick(col.iter().map(|x| x.abs()), threshold)
}

/// [`pivot`] among candidates given by their magnitudes, in row order (a
/// replay reads only a column's structural entries): the candidate's
/// position, and the largest magnitude.
#[inline(always)]
pub(crate) fn pick(magnitudes: impl Iterator<Item = f64> + Clone, threshold: f64) -> (usize, f64) {
    let big = largest(magnitudes.clone());
    (first_within(magnitudes, threshold, big), big)
}

/// The largest of `magnitudes` (0 for none).
#[inline(always)]
pub(crate) fn largest(magnitudes: impl Iterator<Item = f64>) -> f64 {
    magnitudes.fold(0.0f64, |big, a| if a > big { a } else { big })
}

/// [`pick`]'s choice once the largest magnitude `big` is known: the first
/// candidate at least `threshold · big`.
#[inline(always)]
pub(crate) fn first_within(mut magnitudes: impl Iterator<Item = f64>, threshold: f64, big: f64) -> usize {
    let least = threshold * big;
    magnitudes.position(|a| a >= least).unwrap_or(0)
}

/// `a(i, c) −= mult[i] · a(k, c)` for the `count` columns after the pivot's,
/// `rest` starting at the pivot row's entry in the first of them (entries of
/// one row `stride` apart, the rows below each entry following it). A zero
/// in the pivot row leaves its column as it is (up to the sign of a zero).
#[inline(always)]
fn update(rest: &mut [f64], mult: &[f64], stride: usize, count: usize) {
    let len = mult.len();
    for j in 0..count {
        let top = j * stride;
        let u = rest[top];
        if u == 0.0 {
            continue;
        }
        for (a, &f) in rest[top + 1..top + 1 + len].iter_mut().zip(mult) {
            *a -= f * u;
        }
    }
}

/// Overwrites `v` with the solution of `a x = v` from the factors of
/// [`factor`]: each interchange just before its column's multipliers, then
/// the back substitution in the order of `lu::back_substitute`.
pub(crate) fn solve(ab: &[f64], perm: &[usize], v: &mut [f64], (kl, ku): (usize, usize), n: usize) {
    let ld = leading(kl, ku);
    let v = &mut v[..n];
    for k in 0..n {
        v.swap(k, perm[k]);
        let d = at(ld, kl, ku, k, k);
        let vk = v[k];
        for (x, &l) in v[k + 1..(k + kl + 1).min(n)].iter_mut().zip(&ab[d + 1..]) {
            *x -= l * vk;
        }
    }
    for i in (0..n).rev() {
        let mut s = v[i];
        for j in (i + 1..(i + kl + ku + 1).min(n)).rev() {
            s -= ab[at(ld, kl, ku, i, j)] * v[j];
        }
        v[i] = s * ab[at(ld, kl, ku, i, i)];
    }
}
