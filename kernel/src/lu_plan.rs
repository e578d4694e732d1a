//! A sparse LU factorization written out as the steps it takes, for
//! back-ends that compile it (the JIT): the operations the runtime's
//! replayed banded LU performs on one pattern with one choice of pivots,
//! and nothing else. It knows nothing of where the matrix came from.
//!
//! The matrix is a packed band (LAPACK's `gbtrf` layout, the fill-in rows
//! included): entry `(k + o, k + c)` of step `k` is at `diagonal + o + c ·
//! stride`. Step `k` of the factorization, in this order:
//!
//! 1. `big`: the largest of `|a(k + o, k)|` over `candidates` (a fold from
//!    zero, `if x > big { x } else { big }`, in the order given); the step
//!    is refused (the code stops before it) if `big ≤ tiny` or if
//!    `|a(k + pivot, k)| ≥ keep · big` does not hold;
//! 2. rows `k` and `k + pivot` exchange their entries in the columns `k +
//!    c`, `c` in `swaps`;
//! 3. `a(k, k)` becomes its reciprocal `inv`; each `a(k + o, k)`, `o` in
//!    `multipliers`, becomes `a(k + o, k) · inv` (the multiplier `m_o`);
//! 4. for `c` in `upper`, then `o` in `multipliers`: `a(k + o, k + c) −=
//!    m_o · a(k, k + c)` (a product, then a difference: no fused operation).
//!
//! Each entry is written at most once per step, so the order of the
//! updates within a step changes no bit. The solve of `A x = v` with these
//! factors: forward, for each step `k`, `v[k]` and `v[k + pivot]`
//! exchanged, then `v[k + o] −= m_o · v[k]`; backward, for each row `i`
//! from the last, `s = v[i]`, `s −= a(i, i + c) · v[i + c]` for `c` in
//! `upper` in its order, `v[i] = s · inv_i`.

/// The steps of one factorization (see the module's documentation).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LuPlan {
    /// the distance between a row's entries in the packed band
    pub stride: usize,
    /// the packed band's length: every index the steps name is below it
    pub len: usize,
    /// one per row and column, in order
    pub steps: Vec<LuStep>,
}

/// Step `k` of an [`LuPlan`]: offsets from its diagonal entry.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LuStep {
    /// the packed index of `a(k, k)`
    pub diagonal: usize,
    /// the pivot's row offset
    pub pivot: u16,
    /// row offsets of the entries of column `k` that may be non-zero (the
    /// pivot among them)
    pub candidates: Vec<u16>,
    /// column offsets of the entries the interchange exchanges
    pub swaps: Vec<u16>,
    /// row offsets of the multipliers
    pub multipliers: Vec<u16>,
    /// column offsets of row `k` of U right of the diagonal, in the order
    /// the backward solve subtracts them
    pub upper: Vec<u16>,
}

impl LuPlan {
    /// Takes steps `from .. limit` on the packed band `ab` as the module's
    /// documentation says, stopping before a refused one: returns the step
    /// it stopped before. The reference for compiled plans (and their
    /// tests); it panics on a plan that is not [`LuPlan::in_bounds`] for
    /// `ab`.
    pub fn factor(&self, ab: &mut [f64], from: usize, limit: usize, tiny: f64, keep: f64) -> usize {
        let stride = self.stride;
        for (k, s) in self.steps.iter().enumerate().take(limit).skip(from) {
            let d = s.diagonal;
            let big = s
                .candidates
                .iter()
                .map(|&o| ab[d + o as usize].abs())
                .fold(0.0f64, |big, x| if x > big { x } else { big });
            // (`>=` refuses a NaN pivot, as the replay's check does.)
            let passes = ab[d + s.pivot as usize].abs() >= keep * big;
            if big <= tiny || !passes {
                return k;
            }
            let p = s.pivot as usize;
            for &c in &s.swaps {
                let e = d + c as usize * stride;
                ab.swap(e, e + p);
            }
            let inv = 1.0 / ab[d];
            ab[d] = inv;
            for &o in &s.multipliers {
                ab[d + o as usize] *= inv;
            }
            for &c in &s.upper {
                let u = d + c as usize * stride;
                for &o in &s.multipliers {
                    ab[u + o as usize] -= ab[d + o as usize] * ab[u];
                }
            }
        }
        limit.max(from)
    }

    /// The forward substitution of `v` through steps `from .. upto` (the
    /// reference, as [`LuPlan::factor`]).
    pub fn forward(&self, ab: &[f64], v: &mut [f64], from: usize, upto: usize) {
        for (k, s) in self.steps.iter().enumerate().take(upto).skip(from) {
            v.swap(k, k + s.pivot as usize);
            let vk = v[k];
            for &o in &s.multipliers {
                v[k + o as usize] -= ab[s.diagonal + o as usize] * vk;
            }
        }
    }

    /// The backward substitution of rows `upto − 1` down to `from` (the
    /// reference, as [`LuPlan::factor`]).
    pub fn backward(&self, ab: &[f64], v: &mut [f64], from: usize, upto: usize) {
        for (i, s) in self.steps.iter().enumerate().take(upto).skip(from).rev() {
            let mut sum = v[i];
            for &c in &s.upper {
                sum -= ab[s.diagonal + c as usize * self.stride] * v[i + c as usize];
            }
            v[i] = sum * ab[s.diagonal];
        }
    }

    /// The number of updates (step 4) of one factorization.
    pub fn updates(&self) -> usize {
        self.steps.iter().map(|s| s.multipliers.len() * s.upper.len()).sum()
    }

    /// Whether every index the steps name lies in a band of `len` entries
    /// and every row they name below `steps.len()`: a compiled plan may
    /// then read and write without checks.
    pub fn in_bounds(&self) -> bool {
        let n = self.steps.len();
        self.steps.iter().enumerate().all(|(k, s)| {
            let rows = s
                .candidates
                .iter()
                .chain(&s.multipliers)
                .chain(std::iter::once(&s.pivot))
                .map(|&o| o as usize);
            let cols = s.swaps.iter().chain(&s.upper).map(|&c| c as usize);
            let (max_o, max_c) = (rows.max().unwrap_or(0), cols.max().unwrap_or(0));
            k + max_o < n && k + max_c < n && s.diagonal + max_o + max_c * self.stride < self.len
        })
    }
}
