//! Linear prediction of the predictor's error: weights `w` with
//! `e_{k+1} ≈ Σ_j w_j e_{k−j}`, fitted by least squares over every unknown
//! and the last [`WINDOW`] steps, from the inner products of the errors
//! alone.
//!
//! Why: a step's errors are combinations of the motion's modes (and smooth
//! trends), the same few for every unknown. A fixed rule (a polynomial, or
//! a polynomial times `(−1)ᵏ`) follows a mode only while `hω` is small;
//! long chains at h = 0.01 carry modes at `hω` ≈ 0.5–1 in their multipliers
//! (the 16-link energy–momentum chain's multipliers err with a period of
//! about ten steps), which no polynomial follows. A recurrence of order
//! [`ORDER`] annihilates up to four such modes at once, whatever their
//! frequencies, and least squares over all unknowns finds it from one
//! step's errors. On the errors of 100-step `chain_profile` runs from
//! `sway` at h = 0.01 (written out and fitted offline, steps 20 to 100),
//! the median error left (relative to the solution), best fixed rule
//! against this fit, was: energy–momentum 16 links 1.3e-5 → 7.6e-7, 32
//! links 5.3e-5 → 3.1e-6, 128 links 2.0e-4 → 1.4e-5; averaged director 16
//! links 9.3e-8 → 6.2e-9, 64 links 7.4e-7 → 2.9e-8; RATTLE 16 links 1.9e-6
//! → 4.4e-9, 64 links 4.4e-5 → 3.7e-7.
//!
//! Everything here is a function of a small Gram matrix, so the choice and
//! the fit cost a fixed number of operations whatever the size; the inner
//! products are the one pass over the unknowns (see
//! `predictor::extrapolate`).

pub(crate) use crate::memory::ORDER;

/// The steps whose errors the fit is to predict from the ones before each.
pub(crate) const WINDOW: usize = 4;

/// A fit is used for this many steps before it is fitted anew. The
/// recurrence follows the motion's frequencies, which change slowly: on
/// `chain_profile`'s runs (above), fits 8 steps old left errors at most 1.6
/// times those of fresh ones (RATTLE, 64 links: 3.7e-7 → 5.9e-7;
/// energy–momentum, 32 links: 3.1e-6 → 3.0e-6). Fitted every step, the fit
/// took 4 % of the 16-link averaged director chain's step (`perf`); every
/// eighth, under 1 %.
pub(crate) const REFIT: u8 = 8;

/// The errors a fit reads, the newest included.
pub(crate) const LAGS: usize = ORDER + WINDOW;

const _: () = assert!(
    LAGS == 1 + crate::memory::KEPT,
    "a fit reads the newest error and every one kept"
);

/// Added to the diagonal of the normal equations scaled to a unit diagonal:
/// consecutive errors are nearly parallel, and without it the
/// factorization may meet a pivot at round-off. Small enough that the fit
/// still follows modes whose errors are 1e-7 of the largest (on the 16-link
/// averaged director chain the median error left was 6.2e-9 with 1e-15,
/// 7.7e-9 with 1e-14, 2.7e-8 with 1e-13).
const RIDGE: f64 = 1e-15;

/// A fit whose prediction is larger than this many times the largest error
/// it was fitted to is refused: the errors of a motion do not grow that
/// fast from one step to the next, and a guess that far off could lead
/// Newton to another root.
const REACH: f64 = 4.0;

/// The errors apart by at most this many steps whose inner products the
/// fit and the choice read (a recurrence of order [`ORDER`] relates an
/// error to the [`ORDER`] before it): the products of errors further apart
/// are neither computed nor read.
pub(crate) const SPAN: usize = ORDER + 1;

/// Inner products of errors, newest first: `d[i][j] = ⟨e_{−i}, e_{−j}⟩`.
pub(crate) type Gram = [[f64; LAGS]; LAGS];

/// The unknowns whose errors are fitted apart: those absent from their own
/// equation in the Jacobian's pattern (the multipliers of constraints,
/// whose equations are the constraints), and the rest. Their errors follow
/// dynamics of their own (a chain's tensions against its bobs' momenta:
/// on the 64-link energy–momentum chain at h = 0.01 the momenta were left
/// 2.0e-3 off, relative, by one fit over all unknowns, 3.8e-4 by their
/// own), and in the 2-norm the larger would have the fit to itself.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Groups {
    /// the unknowns absent from their own equation, in order
    apart: Vec<u32>,
    /// the others, in order
    rest: Vec<u32>,
}

impl Groups {
    /// The groups of `n` unknowns under the Jacobian's `pattern` of
    /// `(row, column)` entries; one group where every unknown is in its own
    /// equation, or none is.
    pub(crate) fn of_pattern(n: usize, pattern: &[(u32, u32)]) -> Self {
        let mut on = vec![false; n];
        for &(r, c) in pattern {
            if r == c && (r as usize) < n {
                on[r as usize] = true;
            }
        }
        let (rest, apart): (Vec<u32>, Vec<u32>) = (0..n as u32).partition(|&i| on[i as usize]);
        if apart.is_empty() || rest.is_empty() {
            Self::default()
        } else {
            Self { apart, rest }
        }
    }

    /// The two groups, the unknowns apart and the rest; `None` where all
    /// are fitted together.
    pub(crate) fn apart(&self) -> Option<(&[u32], &[u32])> {
        (!self.apart.is_empty()).then_some((&self.apart[..], &self.rest[..]))
    }
}

/// The weights `w` minimizing `Σ_{t < WINDOW} ‖e_{−t} − Σ_j w_j
/// e_{−t−1−j}‖²`, from the Gram matrix of the last [`LAGS`] errors; `None`
/// where the normal equations are singular to working precision (an error
/// of zero, or errors that are multiples of one another), or where the
/// prediction would reach beyond [`REACH`] times the errors.
pub(crate) fn fit(d: &Gram) -> Option<[f64; ORDER]> {
    let mut g = [[0.0; ORDER]; ORDER];
    let mut b = [0.0; ORDER];
    for t in 0..WINDOW {
        let window = |row: &[f64; LAGS]| -> [f64; ORDER] { std::array::from_fn(|c| row[t + 1 + c]) };
        let top = window(&d[t]);
        for a in 0..ORDER {
            b[a] += top[a];
            let row = window(&d[t + 1 + a]);
            for (g, x) in g[a].iter_mut().zip(row) {
                *g += x;
            }
        }
    }
    // The ridge relative to each diagonal entry, as on the normal
    // equations scaled to a unit diagonal (elimination without pivoting
    // does not see the scaling otherwise).
    for a in 0..ORDER {
        if !(g[a][a] > 0.0 && g[a][a] < f64::INFINITY) {
            return None;
        }
        g[a][a] *= 1.0 + RIDGE;
    }
    // Gaussian elimination without pivoting (`g` is positive definite: its
    // pivots are those of its Cholesky factorization, squared), every loop
    // of a fixed length, the entries outside the triangle updated by zero:
    // no branch depends on the data, so that the fit takes the same
    // instructions at every step.
    let mut positive = true;
    let mut inv = [0.0; ORDER];
    for j in 0..ORDER {
        let p = g[j][j];
        positive &= p > 0.0;
        inv[j] = 1.0 / p;
        let pivot_row: [f64; ORDER] = std::array::from_fn(|c| if c > j { g[j][c] } else { 0.0 });
        let bj = b[j];
        for i in 0..ORDER {
            let l = if i > j { g[i][j] * inv[j] } else { 0.0 };
            for (x, y) in g[i].iter_mut().zip(pivot_row) {
                *x -= l * y;
            }
            b[i] -= l * bj;
        }
    }
    if !positive {
        return None;
    }
    // Back substitution by columns: each weight found is taken out of every
    // row above at once (by rows, each weight would wait on a chain of
    // dependent subtractions).
    let mut w = [0.0; ORDER];
    for i in (0..ORDER).rev() {
        w[i] = b[i] * inv[i];
        let wi = w[i];
        for (r, b) in b.iter_mut().enumerate() {
            *b -= if r < i { g[r][i] * wi } else { 0.0 };
        }
    }
    // The prediction's square norm, `wᵀ D w` over the newest errors.
    let mut reach = 0.0;
    let mut largest = 0.0f64;
    for a in 0..ORDER {
        let mut row = 0.0;
        for c in 0..ORDER {
            row += d[a][c] * w[c];
        }
        reach += w[a] * row;
        largest = largest.max(d[a][a]);
    }
    (reach.is_finite() && reach <= REACH * REACH * largest).then_some(w)
}

/// `‖e_0 − Σ_j w_j e_{−1−j}‖²` from the Gram matrix: how far the weights `w`
/// would have missed the newest error. Never below zero (the expansion
/// cancels where the miss is tiny: a rule that is exact there misses by
/// round-off of either sign).
#[inline(always)]
pub(crate) fn miss<const W: usize>(d: &Gram, w: &[f64; W]) -> f64 {
    const { assert!(W < SPAN + 1, "a miss reads products within the span") };
    // `uᵀ D u` with `u = (1, −w)`: `D u` row by row of `D` (it is
    // symmetric), independent sums, then its product with `u`.
    let mut v: [f64; SPAN] = std::array::from_fn(|c| d[0][c]);
    for (j, &w) in w.iter().enumerate() {
        for (v, &x) in v.iter_mut().zip(&d[j + 1][..SPAN]) {
            *v -= w * x;
        }
    }
    let mut sum = v[0];
    for j in 0..W {
        sum -= w[j] * v[j + 1];
    }
    sum.max(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Gram matrix of the errors `e(k)`, `k = 0, −1, …`.
    fn gram_of(e: impl Fn(i64) -> Vec<f64>) -> Gram {
        let v: Vec<Vec<f64>> = (0..LAGS as i64).map(|i| e(-i)).collect();
        std::array::from_fn(|i| std::array::from_fn(|j| v[i].iter().zip(&v[j]).map(|(a, b)| a * b).sum()))
    }

    /// The fit's prediction of `e(1)` from `e(0), e(−1), …`.
    fn predicted(w: &[f64; ORDER], e: &impl Fn(i64) -> Vec<f64>) -> Vec<f64> {
        let mut p = vec![0.0; e(0).len()];
        for (j, w) in w.iter().enumerate() {
            for (p, x) in p.iter_mut().zip(e(-(j as i64))) {
                *p += w * x;
            }
        }
        p
    }

    #[test]
    fn a_sum_of_modes_is_predicted_whatever_their_frequencies() {
        // Three unknowns, each a different mix of two oscillations (at
        // hω = 0.7 and 1.9, where polynomial rules miss by a large part of
        // the amplitude) and a linear trend: four modes, order eight.
        let e = |k: i64| {
            let k = k as f64;
            let (a, b) = ((0.7 * k).sin(), (1.9 * k + 0.3).cos());
            vec![a + 0.5 * b + 0.01 * k, -0.3 * a + b + 1.0, 2.0 * a - b + 0.02 * k]
        };
        let w = fit(&gram_of(e)).expect("a fit");
        let p = predicted(&w, &e);
        let truth = e(1);
        for (p, t) in p.iter().zip(&truth) {
            assert!((p - t).abs() < 1e-6, "{p} against {t}");
        }
        // The best polynomial rule of degree two misses by far more.
        let quadratic: Vec<f64> = (0..3).map(|i| 3.0 * e(0)[i] - 3.0 * e(-1)[i] + e(-2)[i]).collect();
        assert!(quadratic.iter().zip(&truth).any(|(p, t)| (p - t).abs() > 0.1));
    }

    #[test]
    fn the_miss_from_inner_products_is_the_miss() {
        let e = |k: i64| vec![(0.3 * k as f64).sin(), (k * k) as f64 * 0.01, 1.0 / (3.0 - k as f64)];
        let d = gram_of(e);
        let w = [1.5, -0.25, 0.1, 0.0, 0.0, 0.0, 0.0, 0.0];
        let direct: f64 = (0..3)
            .map(|i| {
                let p = w[0] * e(-1)[i] + w[1] * e(-2)[i] + w[2] * e(-3)[i];
                (e(0)[i] - p).powi(2)
            })
            .sum();
        assert!(
            (miss(&d, &w) - direct).abs() <= 1e-14 * d[0][0],
            "{} {direct}",
            miss(&d, &w)
        );
    }

    #[test]
    fn errors_without_content_have_no_fit() {
        assert_eq!(fit(&[[0.0; LAGS]; LAGS]), None);
        // Every error the same vector: the normal equations are singular
        // but for the ridge, which keeps the weights finite; they then
        // predict that vector.
        let e = |_: i64| vec![1.0, -2.0];
        if let Some(w) = fit(&gram_of(e)) {
            let p = predicted(&w, &e);
            assert!((p[0] - 1.0).abs() < 1e-6 && (p[1] + 2.0).abs() < 1e-6, "{p:?}");
        }
        let nan = [[f64::NAN; LAGS]; LAGS];
        assert_eq!(fit(&nan), None);
    }
}
