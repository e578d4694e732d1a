//! Dense LU with partial pivoting, in place, for fixed-size (`Const`) and
//! run-time-sized (`Dyn`) matrices alike: the derived code and the tape
//! back-end share this one factorization, so their Newton iterates agree to
//! the last bit.
//!
//! Ours rather than nalgebra's `lu()` because the pivot test here is the
//! singularity test the Newton driver reports, and because plain slice loops
//! cost less than nalgebra's generic indexing at these sizes.

use nalgebra::allocator::Allocator;
use nalgebra::{DefaultAllocator, Dim, OMatrix, OVector};

/// The matrix is singular to working precision.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Singular;

/// An LU factorization with partial pivoting of a square matrix of size `D`.
#[derive(Clone, Debug)]
pub struct Lu<D: Dim>
where
    DefaultAllocator: Allocator<D, D> + Allocator<D>,
{
    /// factors, column-major; the diagonal holds reciprocal pivots
    m: OMatrix<f64, D, D>,
    /// row interchanges, in order
    perm: OVector<usize, D>,
    /// dense factors: row `i` of the factors is row `order[i]` of the matrix
    /// (the interchanges composed, so that a solve gathers its right-hand
    /// side without a chain of swaps)
    order: OVector<usize, D>,
    /// `(kl, ku)`: the matrices factored have no entry more than `kl` below
    /// or `ku` above the diagonal (`None`: dense)
    band: Option<(usize, usize)>,
    /// banded factors, packed (see [`crate::packed_band`]); empty when dense
    packed: Vec<f64>,
    /// the banded factorization's operations on the band's structural
    /// non-zeros (see [`crate::sparse_band`])
    schedule: crate::sparse_band::Schedule,
    /// the values of the pattern's entries, in its order (see
    /// [`Lu::pattern_values_mut`]); empty without a pattern
    values: Vec<f64>,
    /// whether the matrix to factor next is in `values` (else in `m`)
    from_values: bool,
}

/// Why a matrix could not be factored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FactorError {
    /// singular to working precision
    Singular,
    /// an entry is NaN or infinite
    NonFinite,
}

impl<D: Dim> Lu<D>
where
    DefaultAllocator: Allocator<D, D> + Allocator<D>,
{
    /// Factors `a`. A pivot below `1e3 ε` times the largest entry counts as singular.
    pub fn factor(a: &OMatrix<f64, D, D>) -> Result<Self, Singular> {
        let (rows, _) = a.shape_generic();
        let mut lu = Self::with_matrix(rows, a.clone());
        lu.factor_in_place().map_err(|_| Singular)?;
        Ok(lu)
    }

    /// Storage for matrices of size `d`, holding `m`.
    fn with_matrix(d: D, m: OMatrix<f64, D, D>) -> Self {
        Self {
            m,
            perm: OVector::<usize, D>::from_element_generic(d, nalgebra::Const::<1>, 0),
            order: OVector::<usize, D>::from_element_generic(d, nalgebra::Const::<1>, 0),
            band: None,
            packed: Vec::new(),
            schedule: Default::default(),
            values: Vec::new(),
            from_values: false,
        }
    }

    /// Storage for factoring matrices of size `d` in place (see [`Lu::matrix_mut`]).
    // At fixed sizes this allocates nothing (empty vectors, inline
    // matrices): the Newton step of 1–3 unknowns takes one per step and
    // never drops it (`newton::step`), which would leak anything allocated
    // here.
    pub fn new(d: D) -> Self {
        Self::with_matrix(d, OMatrix::zeros_generic(d, d))
    }

    /// Storage for banded matrices of size `d`: no entry more than `kl` below
    /// or `ku` above the diagonal. Factoring and solving skip the entries
    /// outside the band (and its fill-in, `kl` more above), which are exact
    /// zeros, so the results are those of the dense factorization to the bit
    /// at O(n·kl·(kl + ku)) cost instead of O(n³).
    pub fn banded(d: D, kl: usize, ku: usize) -> Self {
        let n = d.value();
        if kl + ku + 1 >= n {
            return Self::new(d);
        }
        // At run-time sizes the matrix is allocated when first written (see
        // `Lu::allocate`): a Jacobian written as its pattern's values never
        // is, and the `n × n` zeros are 13 MB for a 128-link chain's 1280
        // unknowns.
        let m = match D::try_to_usize() {
            Some(_) => OMatrix::zeros_generic(d, d),
            None => OMatrix::zeros_generic(D::from_usize(0), D::from_usize(0)),
        };
        let mut lu = Self::with_matrix(d, m);
        lu.band = Some((kl, ku));
        lu.packed = vec![0.0; n * crate::packed_band::leading(kl, ku)];
        lu
    }

    /// Declares that the matrices to factor have zeros outside `pattern`
    /// (`(row, column)` pairs): banded factorizations then pivot with a
    /// threshold (a row within a factor 10 of the largest, the nearest the
    /// diagonal; a pivot kept while it is not below `1e-5` times the
    /// largest: the last factorization's, or those the Newton step loads
    /// from the state) and replay the banded LU's operations on the pattern's entries
    /// and their fill-in only (see the private module `sparse_band`). No
    /// effect on a dense factorization.
    pub fn set_pattern(&mut self, pattern: &[(u32, u32)]) {
        if let Some(band) = self.band {
            let n = self.perm.len();
            use crate::sparse_band::{Schedule, KEEP, THRESHOLD};
            self.schedule = Schedule::new(pattern, band, n, THRESHOLD, Some(KEEP));
            self.values = vec![0.0; pattern.len()];
        }
    }

    /// Lends the factorizations of a pattern (see [`Lu::set_pattern`],
    /// called before) a compiler for their steps: once the same steps have
    /// served long enough, they run compiled, with the same results to the
    /// bit (see [`crate::lu_code`]); `None` takes it back, and the code
    /// compiled. No effect without a pattern.
    pub fn set_compiler(&mut self, compiler: Option<&'static dyn crate::lu_code::LuCompiler>) {
        self.schedule.set_compiler(compiler);
    }

    /// How many factorizations ran compiled steps (see [`Lu::set_compiler`]),
    /// and how many times the steps were compiled.
    pub fn compiled_factorizations(&self) -> (u64, u64) {
        (self.schedule.compiled_factorizations, self.schedule.compilations)
    }

    /// The matrix to factor next as the values of the entries of the
    /// pattern given to [`Lu::set_pattern`], in its order (every other
    /// entry is zero): fill them, then call [`Lu::factor_in_place`]. `None`
    /// without a pattern. The factors are those of the same matrix written
    /// whole into [`Lu::matrix_mut`], to the bit.
    pub fn pattern_values_mut(&mut self) -> Option<&mut [f64]> {
        // Sizes 1–3 factor the matrix itself (see `factor_in_place`).
        if self.perm.len() <= 3 || !self.sparse() {
            return None;
        }
        self.from_values = true;
        Some(&mut self.values)
    }

    /// Whether banded factorizations replay a schedule (a pattern was set).
    fn sparse(&self) -> bool {
        let n = self.perm.len();
        self.band.is_some_and(|band| self.schedule.fits(band, n))
    }

    /// Makes the next factorizations keep the pivots `pivots` (offsets from
    /// each diagonal, [`crate::memory::NO_PIVOT`] for none) while they pass
    /// the check, where a pattern was set (see [`Lu::set_pattern`]);
    /// otherwise nothing.
    pub(crate) fn load_pivots(&mut self, pivots: &[u16]) {
        if self.sparse() {
            self.schedule.load_kept(pivots);
        }
    }

    /// The pivots the next factorization would keep (see
    /// [`Lu::load_pivots`]), into `pivots`, where a pattern was set.
    pub(crate) fn store_pivots(&self, pivots: &mut [u16]) {
        if self.sparse() && pivots.len() == self.schedule.kept().len() {
            pivots.copy_from_slice(self.schedule.kept());
        }
    }

    /// The `n × n` matrix, zero, where a banded one of run-time size has not
    /// been allocated yet (see [`Lu::banded`]).
    fn allocate(&mut self) {
        let n = self.perm.len();
        if self.m.nrows() != n {
            let d = D::from_usize(n);
            self.m = OMatrix::zeros_generic(d, d);
        }
    }

    /// `(kl, ku)` where factoring and solving skip the entries outside the
    /// band (see [`Lu::banded`]); the factors then live in a packed copy of
    /// the band and the matrix is only read. `None`: dense.
    pub fn band(&self) -> Option<(usize, usize)> {
        self.band
    }

    /// The matrix to factor next: fill it, then call [`Lu::factor_in_place`].
    pub fn matrix_mut(&mut self) -> &mut OMatrix<f64, D, D> {
        self.from_values = false;
        self.allocate();
        &mut self.m
    }

    /// Factors the matrix held (see [`Lu::matrix_mut`], and
    /// [`Lu::pattern_values_mut`] if that was called since) in place, allocating
    /// nothing. A pivot below `1e3 ε` times the largest entry counts as singular.
    #[inline]
    pub fn factor_in_place(&mut self) -> Result<(), FactorError> {
        self.factor_forward(None).map(|_| ())
    }

    /// [`Lu::factor_in_place`], a sparse LU's compiled steps applying their
    /// forward substitution to `rhs` as they go: the leading steps whose
    /// forward substitution `rhs` holds (see
    /// [`crate::sparse_band::Schedule::factor_forward`]).
    #[inline(always)]
    fn factor_forward(&mut self, rhs: Option<&mut [f64]>) -> Result<usize, FactorError> {
        if !self.from_values {
            self.allocate();
        }
        let n = self.perm.len();
        let s = self.m.as_mut_slice();
        let perm = self.perm.as_mut_slice();
        let order = self.order.as_mut_slice();
        // Sizes 1–3 first: at fixed sizes the test folds away, and with it
        // the calls that would take the matrix's address and keep it out of
        // registers.
        if n <= 3 {
            return invert_small(s, n).map(|_| 0);
        }
        match self.band {
            Some(band) if self.schedule.fits(band, n) => {
                let source = if self.from_values {
                    crate::sparse_band::Source::Values(&self.values)
                } else {
                    crate::sparse_band::Source::Matrix(s)
                };
                self.schedule.factor_forward(source, &mut self.packed, perm, rhs)?;
                Ok(self.schedule.forwarded())
            }
            Some(band) => {
                crate::packed_band::factor(s, &mut self.packed, perm, band, n, crate::packed_band::PARTIAL).map(|_| 0)
            }
            None if n <= SMALL && n > 4 => small_sizes!(n, factor_small(s, perm, order, None)).map(|_| 0),
            None if n <= SMALL => small_sizes!(n, factor_dense(s, perm, order)).map(|_| 0),
            None => factor_dense(s, perm, order, n).map(|_| 0),
        }
    }

    /// [`Lu::factor_in_place`], then [`Lu::solve`] for `b`, with the same
    /// results to the bit. Dense systems of 5–16 unknowns eliminate `b`
    /// along with the matrix, so that its forward substitution does not wait
    /// for the factorization to end. On error `b` holds garbage.
    // Always inlined: at fixed sizes the size test folds away before the
    // inliner weighs the small path's code, and a 3×3 system stays in
    // registers (the sphere's step: 120 against 85 ns otherwise).
    #[inline(always)]
    pub fn factor_solve_in_place(&mut self, b: &mut OVector<f64, D>) -> Result<(), FactorError> {
        let n = self.perm.len();
        if n > 4 && n <= SMALL && self.band.is_none() {
            return self.factor_solve_small(b);
        }
        if n > 3 && self.band.is_some_and(|band| self.schedule.fits(band, n)) {
            let forwarded = self.factor_forward(Some(b.as_mut_slice()))?;
            self.schedule
                .solve_from(&self.packed, self.perm.as_slice(), b.as_mut_slice(), forwarded);
            return Ok(());
        }
        self.factor_in_place()?;
        self.solve(b);
        Ok(())
    }

    /// [`Lu::factor_solve_in_place`] of dense systems of 5–16 unknowns.
    #[inline]
    fn factor_solve_small(&mut self, b: &mut OVector<f64, D>) -> Result<(), FactorError> {
        let n = self.perm.len();
        let s = self.m.as_mut_slice();
        let (perm, order) = (self.perm.as_mut_slice(), self.order.as_mut_slice());
        small_sizes!(n, factor_small(s, perm, order, Some(b.as_mut_slice())))
    }

    /// Overwrites `b` with the solution of `a x = b`.
    #[inline]
    pub fn solve(&self, b: &mut OVector<f64, D>) {
        let n = self.perm.len();
        if n <= 3 {
            return apply_small(self.m.as_slice(), b.as_mut_slice(), n);
        }
        let (m, perm, order) = (self.m.as_slice(), self.perm.as_slice(), self.order.as_slice());
        match self.band {
            Some(band) if self.schedule.fits(band, n) => self.schedule.solve(&self.packed, perm, b.as_mut_slice()),
            Some(band) => crate::packed_band::solve(&self.packed, perm, b.as_mut_slice(), band, n),
            None => small_sizes!(n, solve_dense(m, perm, order, b.as_mut_slice())),
        }
    }
}

/// Calls `f(args…, n)` with `n` a literal for sizes up to 16, so that the
/// inlined loops are unrolled for run-time-sized (`Dyn`) matrices as they are
/// for fixed ones; the arithmetic is the same for every size.
macro_rules! small_sizes {
    ($n:expr, $f:ident($($a:expr),*)) => {
        match $n {
            1 => $f($($a,)* 1),
            2 => $f($($a,)* 2),
            3 => $f($($a,)* 3),
            4 => $f($($a,)* 4),
            5 => $f($($a,)* 5),
            6 => $f($($a,)* 6),
            7 => $f($($a,)* 7),
            8 => $f($($a,)* 8),
            9 => $f($($a,)* 9),
            10 => $f($($a,)* 10),
            11 => $f($($a,)* 11),
            12 => $f($($a,)* 12),
            13 => $f($($a,)* 13),
            14 => $f($($a,)* 14),
            15 => $f($($a,)* 15),
            16 => $f($($a,)* 16),
            n => $f($($a,)* n),
        }
    };
}
use small_sizes;

/// The checks of a matrix's entries before (or, for [`factor_small`], after)
/// factoring: all finite, and the largest magnitude, which pivots are
/// measured against. Branch-free, so that it vectorizes: `x · 0` is 0 for a
/// finite `x` and NaN otherwise. Eight lanes of accumulators: one would chain
/// every entry's addition and comparison (256 dependent operations for 8×8).
/// Both verdicts are independent of the order the entries come in.
pub(crate) struct EntryChecks {
    big: [f64; Self::LANES],
    poison: [f64; Self::LANES],
}

impl EntryChecks {
    const LANES: usize = 8;

    #[inline(always)]
    pub(crate) fn new() -> Self {
        Self {
            big: [0.0; Self::LANES],
            poison: [0.0; Self::LANES],
        }
    }

    #[inline(always)]
    pub(crate) fn take(&mut self, entries: &[f64]) {
        let mut take = |l: usize, x: f64| {
            self.poison[l] += x * 0.0;
            let a = x.abs();
            self.big[l] = if a > self.big[l] { a } else { self.big[l] };
        };
        let mut chunks = entries.chunks_exact(Self::LANES);
        for chunk in &mut chunks {
            for (l, &x) in chunk.iter().enumerate() {
                take(l, x);
            }
        }
        for (l, &x) in chunks.remainder().iter().enumerate() {
            take(l, x);
        }
    }

    /// The largest magnitude; an error if an entry is not finite, or if all
    /// are zero.
    #[inline(always)]
    pub(crate) fn verdict(&self) -> Result<f64, FactorError> {
        let poison: f64 = self.poison.iter().sum();
        let big = self.big.iter().fold(0.0f64, |b, &a| if a > b { a } else { b });
        if poison != 0.0 {
            Err(FactorError::NonFinite)
        } else if big == 0.0 {
            Err(FactorError::Singular)
        } else {
            Ok(big)
        }
    }
}

/// LU with partial pivoting of the column-major `n × n` matrix `s`, in place
/// (banded matrices: [`crate::packed_band`]).
#[inline(always)]
fn factor_core(s: &mut [f64], perm: &mut [usize], n: usize) -> Result<(), FactorError> {
    let s = &mut s[..n * n];
    // The factorization waits on the verdict.
    let mut checks = EntryChecks::new();
    checks.take(s);
    let big = checks.verdict()?;
    let tiny = big * 1e3 * f64::EPSILON;
    // s[col * n + row]
    for k in 0..n {
        let mut p = k;
        let mut pv = s[k * n + k].abs();
        for i in k + 1..n {
            let x = s[k * n + i].abs();
            if x > pv {
                p = i;
                pv = x;
            }
        }
        if pv <= tiny {
            return Err(FactorError::Singular);
        }
        perm[k] = p;
        // Whole rows, so that the solve may apply every interchange first.
        if p != k {
            for c in 0..n {
                s.swap(c * n + k, c * n + p);
            }
        }
        let inv = 1.0 / s[k * n + k];
        s[k * n + k] = inv;
        for i in k + 1..n {
            s[k * n + i] *= inv;
        }
        // Column by column: contiguous, vectorizable updates. Each entry
        // receives the same operation as row by row, so the factors are the
        // same to the bit whatever the loop order.
        // Trailing zero multipliers (structural zeros of a sparse Jacobian)
        // change nothing: the update stops at the last non-zero one.
        let last = (k + 1..n).rev().find(|&i| s[k * n + i] != 0.0).map_or(k + 1, |i| i + 1);
        let (head, tail) = s.split_at_mut((k + 1) * n);
        let mult = &head[k * n + k + 1..k * n + last];
        update_trailing(&mut tail[..(n - k - 1) * n], mult, k, n);
    }
    Ok(())
}

/// Dense matrices up to this size are factored by [`factor_small`].
const SMALL: usize = 16;

/// [`factor_core`] of a dense matrix of at most [`SMALL`] rows, arranged for
/// the latency of one factorization, which a Newton step waits on, rather
/// than for throughput: the same operations on every entry in the same
/// order, so the same factors to the bit (tested).
///
/// - The checks of the entries (finite; the scale a pivot is measured
///   against) decide only at the end: the elimination does not wait on a
///   scan of the whole matrix. A factorization that fails has computed
///   garbage, which nobody reads.
/// - The pivot is sought in four interleaved chains of comparisons, merged
///   so that the first row of largest magnitude wins, as in one chain.
/// - The pivot's reciprocal is taken from the value the search kept, not
///   loaded again once its row is known.
/// - The trailing update runs row by row, the multipliers and the pivot
///   row in local arrays: each entry is read after scalar stores of the same
///   width, where column-wise vector loads straddle the previous step's
///   stores and wait for them (8×8: 175 → 150 ns per factorization).
#[inline(always)]
fn factor_small(
    s: &mut [f64],
    perm: &mut [usize],
    order: &mut [usize],
    rhs: Option<&mut [f64]>,
    n: usize,
) -> Result<(), FactorError> {
    let s = &mut s[..n * n];
    // The right-hand side to eliminate along, in registers.
    let mut w = [0.0f64; SMALL];
    if let Some(v) = rhs.as_deref() {
        w[..n].copy_from_slice(&v[..n]);
    }
    let mut checks = EntryChecks::new();
    checks.take(s);
    let mut rows = [0usize; SMALL];
    for (i, r) in rows.iter_mut().enumerate() {
        *r = i;
    }
    let mut smallest = f64::INFINITY;
    for k in 0..n {
        const CHAINS: usize = 4;
        let (mut at, mut best, mut value) = ([k; CHAINS], [-1.0f64; CHAINS], [0.0f64; CHAINS]);
        for i in k..n {
            let l = (i - k) % CHAINS;
            let y = s[k * n + i];
            let x = y.abs();
            if x > best[l] {
                best[l] = x;
                at[l] = i;
                value[l] = y;
            }
        }
        let (mut p, mut pv, mut pivot) = (at[0], best[0], value[0]);
        for l in 1..CHAINS {
            if best[l] > pv || (best[l] == pv && at[l] < p) {
                p = at[l];
                pv = best[l];
                pivot = value[l];
            }
        }
        smallest = if pv < smallest { pv } else { smallest };
        perm[k] = p;
        rows.swap(k, p);
        let inv = 1.0 / pivot;
        if p != k {
            for c in 0..n {
                s.swap(c * n + k, c * n + p);
            }
            w.swap(k, p);
        }
        s[k * n + k] = inv;
        let mut u = [0.0f64; SMALL];
        for c in k + 1..n {
            u[c] = s[c * n + k];
        }
        for i in k + 1..n {
            let l = s[k * n + i] * inv;
            s[k * n + i] = l;
            for c in k + 1..n {
                s[c * n + i] -= l * u[c];
            }
            if rhs.is_some() {
                w[i] -= l * w[k];
            }
        }
    }
    order[..n].copy_from_slice(&rows[..n]);
    let big = checks.verdict()?;
    if smallest <= big * 1e3 * f64::EPSILON {
        return Err(FactorError::Singular);
    }
    if let Some(v) = rhs {
        back_substitute(s, &mut w[..n], n);
        v[..n].copy_from_slice(&w[..n]);
    }
    Ok(())
}

/// `col[k+1..][..mult.len()] −= mult · col[k]` for every column of `tail`
/// (columns of length `n`): the rank-one update of one elimination step.
#[inline(always)]
fn update_columns(tail: &mut [f64], mult: &[f64], k: usize, n: usize) {
    for col in tail.chunks_exact_mut(n) {
        let u = col[k];
        // A zero in the pivot row leaves its column as it is (up to the
        // sign of a zero entry): sparse Jacobians have many.
        if u == 0.0 {
            continue;
        }
        for (a, &f) in col[k + 1..].iter_mut().zip(mult) {
            *a -= f * u;
        }
    }
}

/// [`update_columns`], four lanes wide where the processor has AVX: the same
/// multiplications and subtractions (no fused multiply–add), so the same
/// bits as the baseline two-lane code. Pays for the large systems of long
/// chains (64×64: 28 → 22 µs per factorization).
#[inline(always)]
fn update_trailing(tail: &mut [f64], mult: &[f64], k: usize, n: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        /// # Safety
        /// The processor must have AVX.
        #[target_feature(enable = "avx")]
        unsafe fn wide(tail: &mut [f64], mult: &[f64], k: usize, n: usize) {
            update_columns(tail, mult, k, n)
        }
        if mult.len() > 16 && std::arch::is_x86_feature_detected!("avx") {
            // SAFETY: AVX is present (checked above).
            unsafe { wide(tail, mult, k, n) };
            return;
        }
    }
    update_columns(tail, mult, k, n)
}

/// The solve of dense factors ([`factor_core`] swaps their whole rows):
/// every row interchange is applied first, then the substitutions. Up to 16
/// unknowns the right-hand side is gathered by the composed `order` into a
/// local array, which at fixed sizes the substitutions index by constants,
/// so that it lives in registers instead of making a store-to-load round
/// trip per operation.
#[inline(always)]
fn solve_dense(m: &[f64], perm: &[usize], order: &[usize], v: &mut [f64], n: usize) {
    const LOCAL: usize = 16;
    let (m, v) = (&m[..n * n], &mut v[..n]);
    if n > LOCAL {
        for (k, &p) in perm.iter().enumerate().take(n) {
            v.swap(k, p);
        }
        return substitute(m, v, n);
    }
    let mut w = [0.0f64; LOCAL];
    for (w, &r) in w.iter_mut().zip(&order[..n]) {
        *w = v[r];
    }
    substitute(m, &mut w[..n], n);
    v.copy_from_slice(&w[..n]);
}

/// [`factor_core`] of a dense matrix, which also records the composed row
/// `order` (see [`Lu`]).
#[inline(always)]
fn factor_dense(s: &mut [f64], perm: &mut [usize], order: &mut [usize], n: usize) -> Result<(), FactorError> {
    factor_core(s, perm, n)?;
    for (i, o) in order.iter_mut().enumerate().take(n) {
        *o = i;
    }
    for (k, &p) in perm.iter().enumerate().take(n) {
        order.swap(k, p);
    }
    Ok(())
}

/// `v ← U⁻¹ L⁻¹ v` with the unit lower `L` and upper `U` (reciprocal
/// diagonal) of the `n × n` factors `m`, the interchanges applied before.
#[inline(always)]
fn substitute(m: &[f64], v: &mut [f64], n: usize) {
    let (m, v) = (&m[..n * n], &mut v[..n]);
    for k in 0..n {
        for i in k + 1..n {
            v[i] -= m[k * n + i] * v[k];
        }
    }
    back_substitute(m, v, n);
}

/// `v ← U⁻¹ v`, the second half of [`substitute`].
#[inline(always)]
fn back_substitute(m: &[f64], v: &mut [f64], n: usize) {
    let (m, v) = (&m[..n * n], &mut v[..n]);
    // The terms of the unknowns found earliest are subtracted first, so
    // that only the last subtraction waits on the unknown found just
    // before: the chain from one unknown to the next is one product and one
    // difference, not one difference per unknown left (8×8 solve: about
    // 15 ns less).
    for i in (0..n).rev() {
        let mut s = v[i];
        for j in (i + 1..n).rev() {
            s -= m[j * n + i] * v[j];
        }
        v[i] = s * m[i * n + i];
    }
}

/// Matrices of size 1–3 are inverted in place by their adjugate: one
/// division and independent products, where elimination chains three
/// dependent divisions (a 3×3 Newton step of the sphere: 43 → 11 ns). Newton
/// reaches round-off either way: the solve's accuracy sets its rate, not its
/// limit.
///
/// The finiteness check costs no scan of the entries: the determinant is a
/// sum of products in which every entry appears, so it is finite exactly when
/// every entry is (short of overflow, itself a failure). The singularity test
/// is the LU's: the determinant against the size of the entries.
#[inline(always)]
fn invert_small(s: &mut [f64], n: usize) -> Result<(), FactorError> {
    let s = &mut s[..n * n];
    let big = s.iter().fold(0.0f64, |b, x| b.max(x.abs()));
    // |det| ≤ 1e3 ε big^n: a pivot below 1e3 ε big, as in `factor_core`.
    let tiny = 1e3 * f64::EPSILON * big;
    let check = |det: f64, scale: f64| {
        if !det.is_finite() {
            Err(FactorError::NonFinite)
        } else if det.abs() <= scale {
            Err(FactorError::Singular)
        } else {
            Ok(1.0 / det)
        }
    };
    match n {
        // An empty system (an explicit step) is its own inverse.
        0 => {}
        1 => {
            s[0] = check(s[0], tiny)?;
        }
        2 => {
            // column-major [a c; b d]
            let (a, b, c, d) = (s[0], s[1], s[2], s[3]);
            let inv = check(a * d - b * c, tiny * big)?;
            s.copy_from_slice(&[d * inv, -b * inv, -c * inv, a * inv]);
        }
        _ => {
            let m = |i: usize, j: usize| s[j * 3 + i];
            let c00 = m(1, 1) * m(2, 2) - m(1, 2) * m(2, 1);
            let c01 = m(1, 2) * m(2, 0) - m(1, 0) * m(2, 2);
            let c02 = m(1, 0) * m(2, 1) - m(1, 1) * m(2, 0);
            let det = m(0, 0) * c00 + m(0, 1) * c01 + m(0, 2) * c02;
            let inv = check(det, tiny * big * big)?;
            let adj = [
                c00,
                c01,
                c02,
                m(0, 2) * m(2, 1) - m(0, 1) * m(2, 2),
                m(0, 0) * m(2, 2) - m(0, 2) * m(2, 0),
                m(0, 1) * m(2, 0) - m(0, 0) * m(2, 1),
                m(0, 1) * m(1, 2) - m(0, 2) * m(1, 1),
                m(0, 2) * m(1, 0) - m(0, 0) * m(1, 2),
                m(0, 0) * m(1, 1) - m(0, 1) * m(1, 0),
            ];
            // `adj[i*3 + j]` is the cofactor C_ij; (A⁻¹)_ij = C_ji / det,
            // stored column-major at [j*3 + i].
            for i in 0..3 {
                for j in 0..3 {
                    s[j * 3 + i] = adj[j * 3 + i] * inv;
                }
            }
        }
    }
    Ok(())
}

/// `v ← A⁻¹ v` with the inverse [`invert_small`] left (column-major).
#[inline(always)]
fn apply_small(m: &[f64], v: &mut [f64], n: usize) {
    let mut out = [0.0f64; 3];
    for (i, o) in out.iter_mut().enumerate().take(n) {
        let mut acc = 0.0;
        for j in 0..n {
            acc += m[j * n + i] * v[j];
        }
        *o = acc;
    }
    v[..n].copy_from_slice(&out[..n]);
}

/// Solves `a x = b`; `b` is overwritten with `x`.
pub fn solve_in_place<D: Dim>(a: &OMatrix<f64, D, D>, b: &mut OVector<f64, D>) -> Result<(), Singular>
where
    DefaultAllocator: Allocator<D, D> + Allocator<D>,
{
    Lu::factor(a)?.solve(b);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use nalgebra::{DMatrix, DVector, SMatrix, SVector};

    #[test]
    fn solves_and_detects_singularity() {
        let a = SMatrix::<f64, 3, 3>::new(0.0, 2.0, 1.0, 1.0, 1.0, 0.0, 3.0, 0.0, 1.0);
        let a0 = a;
        let x = SVector::<f64, 3>::new(1.0, -2.0, 0.5);
        let mut b = a0 * x;
        solve_in_place(&a, &mut b).unwrap();
        assert!((b - x).norm() < 1e-14);
        let s = SMatrix::<f64, 2, 2>::new(1.0, 2.0, 2.0, 4.0);
        let mut c = SVector::<f64, 2>::new(1.0, 1.0);
        assert_eq!(solve_in_place(&s, &mut c), Err(Singular));
    }

    /// The adjugate path (sizes 1–3): non-finite entries show through the
    /// determinant; singularity is the LU's test (a pivot below 1e3 ε of the
    /// largest entry).
    #[test]
    fn small_inverses_report_non_finite_and_singular_matrices() {
        fn factor<const N: usize>(a: SMatrix<f64, N, N>) -> Result<(), FactorError> {
            let mut lu = Lu::new(nalgebra::Const::<N>);
            lu.matrix_mut().copy_from(&a);
            lu.factor_in_place()
        }
        let a = SMatrix::<f64, 3, 3>::new(2.0, -1.0, 0.5, 1.0, 3.0, -2.0, 0.25, 1.0, 4.0);
        for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            for k in 0..9 {
                let mut m = a;
                m[k] = bad;
                assert_eq!(factor(m), Err(FactorError::NonFinite), "entry {k} = {bad}");
            }
            for k in 0..4 {
                let mut m = SMatrix::<f64, 2, 2>::new(1.0, 2.0, -3.0, 0.5);
                m[k] = bad;
                assert_eq!(factor(m), Err(FactorError::NonFinite));
            }
            assert_eq!(factor(SMatrix::<f64, 1, 1>::new(bad)), Err(FactorError::NonFinite));
        }
        // Dependent lower rows: the cofactors are round-off, not the sum.
        let dep = SMatrix::<f64, 3, 3>::new(1.0, 2.0, 3.0, 0.1, 0.7, 0.3, 0.3, 2.1, 0.9);
        assert_eq!(factor(dep), Err(FactorError::Singular));
        let dep2 = SMatrix::<f64, 3, 3>::new(1.0, 2.0, 3.0, 2.0, 4.0, 6.0 * (1.0 + 1e-15), 0.5, 0.1, 0.2);
        assert_eq!(factor(dep2), Err(FactorError::Singular));
        assert_eq!(
            factor(SMatrix::<f64, 2, 2>::new(1.0, 2.0, 2.0, 4.0)),
            Err(FactorError::Singular)
        );
        assert_eq!(factor(SMatrix::<f64, 1, 1>::new(0.0)), Err(FactorError::Singular));
        // A pivot below 1e3 ε of the largest entry (the mass matrix of
        // polar angles 1e-7 rad from the pole), as the LU decides.
        assert_eq!(
            factor(SMatrix::<f64, 2, 2>::new(1.0, 0.0, 0.0, 1e-14)),
            Err(FactorError::Singular)
        );
        assert!(factor(SMatrix::<f64, 2, 2>::new(1.0, 0.0, 0.0, 1e-12)).is_ok());
        let x = SVector::<f64, 3>::new(1.0, -2.0, 0.5);
        let mut lu = Lu::new(nalgebra::Const::<3>);
        lu.matrix_mut().copy_from(&a);
        lu.factor_in_place().unwrap();
        let mut b = a * x;
        lu.solve(&mut b);
        assert!((b - x).amax() < 1e-14);
    }

    /// The packed banded factorization solves as the dense one does, to the
    /// bit, on sparse bands with zero diagonals (interchanges needed) and
    /// exact zeros inside the band (updates skipped), repeatedly in the same
    /// storage (the fill-in of one factorization must not reach the next).
    #[test]
    fn packed_band_solves_as_the_dense_factorization_to_the_bit() {
        let mut seed = 7u64;
        let mut rnd = || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((seed >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
        };
        for (n, kl, ku) in [(40, 3, 5), (60, 12, 12), (33, 1, 7), (25, 6, 2)] {
            let mut banded = Lu::banded(nalgebra::Dyn(n), kl, ku);
            let mut dense = Lu::new(nalgebra::Dyn(n));
            for _ in 0..3 {
                let a = DMatrix::from_fn(n, n, |i, j| {
                    let inside = i <= j + kl && j <= i + ku;
                    let r = rnd();
                    if !inside || r.abs() < 0.4 || (i == j && i % 3 == 0) {
                        0.0
                    } else {
                        r
                    }
                });
                banded.matrix_mut().copy_from(&a);
                dense.matrix_mut().copy_from(&a);
                let (rb, rd) = (banded.factor_in_place(), dense.factor_in_place());
                assert_eq!(rb, rd, "n = {n}");
                if rd.is_err() {
                    continue;
                }
                let b = DVector::from_fn(n, |_, _| rnd());
                let (mut xb, mut xd) = (b.clone(), b.clone());
                banded.solve(&mut xb);
                dense.solve(&mut xd);
                let bits = |v: &DVector<f64>| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&xb), bits(&xd), "n = {n}, kl = {kl}, ku = {ku}");
                assert!((&a * &xd - &b).amax() < 1e-8, "a solution");
            }
        }
    }

    /// A matrix given as its pattern's values factors and solves as the
    /// same matrix written whole, to the bit, and either storage may follow
    /// the other in one `Lu`.
    #[test]
    fn pattern_values_factor_as_the_whole_matrix() {
        let (n, kl, ku) = (48usize, 4, 4);
        let mut seed = 3u64;
        let mut rnd = || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((seed >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
        };
        // A chain-like pattern: about three entries per row, listed row by row.
        let pattern: Vec<(u32, u32)> = (0..n)
            .flat_map(|i| [i.saturating_sub(3), i, (i + 2).min(n - 1)].map(|j| (i as u32, j as u32)))
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .rev()
            .collect();
        let mut whole = Lu::banded(nalgebra::Dyn(n), kl, ku);
        let mut listed = Lu::banded(nalgebra::Dyn(n), kl, ku);
        whole.set_pattern(&pattern);
        listed.set_pattern(&pattern);
        let bits = |v: &DVector<f64>| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        for t in 0..6 {
            let values: Vec<f64> = pattern.iter().map(|_| rnd()).collect();
            let mut a = DMatrix::zeros(n, n);
            for (&(i, j), &v) in pattern.iter().zip(&values) {
                a[(i as usize, j as usize)] = v;
            }
            whole.matrix_mut().copy_from(&a);
            // Every other matrix through the whole matrix in `listed` too.
            if t % 2 == 0 {
                listed.pattern_values_mut().expect("a pattern").copy_from_slice(&values);
            } else {
                listed.matrix_mut().copy_from(&a);
            }
            assert_eq!(whole.factor_in_place(), listed.factor_in_place(), "matrix {t}");
            let b = DVector::from_fn(n, |_, _| rnd());
            let (mut x, mut y) = (b.clone(), b.clone());
            whole.solve(&mut x);
            listed.solve(&mut y);
            assert_eq!(bits(&x), bits(&y), "matrix {t}");
            assert!((&a * &x - &b).amax() < 1e-8, "a solution");
        }
        // Without a pattern there are no values to write.
        assert!(Lu::banded(nalgebra::Dyn(n), kl, ku).pattern_values_mut().is_none());
    }

    /// The latency-minded small path and the general one give the same
    /// factors, interchanges and verdicts, ties between pivot candidates
    /// included (entries drawn from a few values, so that they tie often).
    #[test]
    fn small_factorization_equals_the_general_one_to_the_bit() {
        let mut seed = 11u64;
        let mut rnd = || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 11) as f64 / (1u64 << 53) as f64
        };
        for n in 1..=SMALL {
            for trial in 0..200 {
                let a: Vec<f64> = (0..n * n)
                    .map(|_| {
                        let x = rnd();
                        if trial % 2 == 0 {
                            x - 0.5
                        } else {
                            (x * 5.0).floor() - 2.0
                        }
                    })
                    .collect();
                let (mut s1, mut s2) = (a.clone(), a.clone());
                let (mut p1, mut p2, mut o) = (vec![0; n], vec![0; n], vec![0; n]);
                let r1 = factor_small(&mut s1, &mut p1, &mut o, None, n);
                let r2 = factor_core(&mut s2, &mut p2, n);
                assert_eq!(r1, r2, "n = {n}, trial {trial}");
                if r1.is_ok() {
                    assert_eq!(p1, p2, "n = {n}, trial {trial}");
                    let mut composed: Vec<usize> = (0..n).collect();
                    for (k, &p) in p2.iter().enumerate() {
                        composed.swap(k, p);
                    }
                    assert_eq!(o, composed, "n = {n}, trial {trial}");
                    assert_eq!(
                        s1.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
                        s2.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
                        "n = {n}, trial {trial}"
                    );
                }
            }
        }
    }

    /// Eliminating the right-hand side along with the matrix gives the
    /// solution of factoring, then solving, to the bit.
    #[test]
    fn factoring_and_solving_at_once_equals_doing_it_in_turn() {
        let mut seed = 5u64;
        let mut rnd = || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((seed >> 11) as f64 / (1u64 << 53) as f64) - 0.5
        };
        for n in 1..=SMALL + 2 {
            for _ in 0..50 {
                let a = DMatrix::from_fn(n, n, |_, _| rnd());
                let b = DVector::from_fn(n, |_, _| rnd());
                let mut lu = Lu::new(nalgebra::Dyn(n));
                lu.matrix_mut().copy_from(&a);
                lu.factor_in_place().unwrap();
                let mut x = b.clone();
                lu.solve(&mut x);
                let mut both = Lu::new(nalgebra::Dyn(n));
                both.matrix_mut().copy_from(&a);
                let mut y = b.clone();
                both.factor_solve_in_place(&mut y).unwrap();
                assert_eq!(x.as_slice(), y.as_slice(), "n = {n}");
                assert_eq!(lu.m.as_slice(), both.m.as_slice(), "n = {n}");
                let mut z = b.clone();
                both.solve(&mut z);
                assert_eq!(x.as_slice(), z.as_slice(), "n = {n}");
            }
        }
    }

    #[test]
    fn banded_factors_equal_dense_ones_to_the_bit() {
        let mut seed = 7u64;
        let mut rnd = || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((seed >> 11) as f64 / (1u64 << 53) as f64) - 0.5
        };
        for (n, kl, ku) in [(12, 2, 1), (20, 1, 3), (9, 3, 3), (30, 2, 2)] {
            for _ in 0..20 {
                let a = DMatrix::from_fn(n, n, |i, j| if i <= j + kl && j <= i + ku { rnd() } else { 0.0 });
                let b = DVector::from_fn(n, |_, _| rnd());
                let mut dense = Lu::new(nalgebra::Dyn(n));
                dense.matrix_mut().copy_from(&a);
                dense.factor_in_place().unwrap();
                let mut band = Lu::banded(nalgebra::Dyn(n), kl, ku);
                assert!(band.band.is_some());
                band.matrix_mut().copy_from(&a);
                band.factor_in_place().unwrap();
                let (mut x, mut y) = (b.clone(), b.clone());
                dense.solve(&mut x);
                band.solve(&mut y);
                assert_eq!(x.as_slice(), y.as_slice(), "n = {n}, kl = {kl}, ku = {ku}");
                assert!((&a * &x - &b).amax() < 1e-9);
            }
        }
    }

    #[test]
    fn agrees_with_nalgebra_on_pivoting_systems_fixed_and_dynamic_bit_for_bit() {
        let mut seed = 3u64;
        let mut rnd = || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((seed >> 11) as f64 / (1u64 << 53) as f64) - 0.5
        };
        for _ in 0..50 {
            let a = SMatrix::<f64, 6, 6>::from_fn(|_, _| rnd());
            let b = SVector::<f64, 6>::from_fn(|_, _| rnd());
            let expect = a.lu().solve(&b).unwrap();
            let mut x = b;
            solve_in_place(&a, &mut x).unwrap();
            assert!((x - expect).amax() < 1e-10 * (1.0 + expect.amax()));
            let ad = DMatrix::from_column_slice(6, 6, a.as_slice());
            let mut xd = DVector::from_column_slice(b.as_slice());
            solve_in_place(&ad, &mut xd).unwrap();
            assert_eq!(xd.as_slice(), x.as_slice());
        }
    }
}
