//! What one Newton solve tells the next of the same trajectory. Its own
//! module, depending on nothing else in the crate, because both the state
//! (which carries it) and the Newton loop (which reads and writes it) need
//! it: in `newton`, it made the modules a circle (state → newton → kernels
//! → state).

use nalgebra::allocator::Allocator;
use nalgebra::{DefaultAllocator, Dim, OVector, U1};

/// What one Newton solve tells the next of the same trajectory: how far off
/// the predictor was in the last three steps (eleven on wide systems, with
/// the errors' inner products and the recurrence fitted to them), how fast Newton contracted,
/// and the interchanges of a sparse LU's last factorization.
/// It is part of the state ([`crate::StateOf::newton`]), so that a step is a
/// function of the state it is handed, whichever stepper takes it.
#[derive(Debug, PartialEq)]
pub struct NewtonMemory<X: Dim>
where
    DefaultAllocator: Allocator<X>,
{
    /// the last step's predictor's guess
    pub(crate) guess: OVector<f64, X>,
    /// the predictor's error (solution minus guess) the step before
    pub(crate) error: OVector<f64, X>,
    /// and the step before that
    pub(crate) error2: OVector<f64, X>,
    /// and the [`OLDER`] before that, for the extrapolations of higher degree
    /// that systems of `CUBIC_MIN` unknowns or more may choose
    /// (`newton::predictor`; unused below it): a ring, `older[(head + j) %
    /// OLDER]` the error `3 + j` steps back, so that a step writes one of
    /// them instead of moving all
    pub(crate) older: [OVector<f64, X>; OLDER],
    /// where the ring `older` starts
    pub(crate) head: u8,
    /// the inner products of the errors kept, for wide systems, over each
    /// group of unknowns fitted apart: `gram[k][i][j]` of the errors `i + 1`
    /// and `j + 1` steps back (`error` is one step back, `error2` two, the
    /// ring the rest), from which the linear prediction of
    /// `newton::linear_prediction` is fitted and judged
    pub(crate) gram: [[[f64; KEPT]; KEPT]; GROUPS],
    /// the weights of the linear prediction fitted at the last step for each
    /// group, where one was (wide systems, all errors known)
    pub(crate) fit: [Option<[f64; ORDER]>; GROUPS],
    /// the steps since each group's fit was fitted
    pub(crate) fit_age: [u8; GROUPS],
    /// how many of the last steps' errors are known, the newest (of the
    /// step before, `guess` against its solution) included (0 to 3; to
    /// `3 + OLDER` from `CUBIC_MIN` unknowns)
    pub(crate) known: u8,
    /// the last estimate of Newton's constant `C` in `‖Δx_{j+1}‖ ≈ C ‖Δx_j‖²`,
    /// which predicts how fast the first factorization of the next step
    /// will contract
    pub(crate) contraction: Option<f64>,
    /// the row interchanges of the last factorization of a banded LU with a
    /// pattern (offsets from each diagonal; [`NO_PIVOT`]: none known),
    /// which the next keeps while they pass its pivot check
    pub(crate) pivots: OVector<u16, X>,
}

/// Errors older than `error2` kept for wide systems (see
/// [`NewtonMemory::older`]): the linear prediction of
/// `newton::linear_prediction` is fitted to twelve errors, the newest
/// (the step's own) and eleven kept.
pub(crate) const OLDER: usize = 9;

/// The errors a wide system keeps: `error`, `error2` and the ring.
pub(crate) const KEPT: usize = 2 + OLDER;

/// The groups of unknowns whose errors the linear prediction fits apart
/// (see `newton::linear_prediction::Groups`).
pub(crate) const GROUPS: usize = 2;

/// The order of the linear prediction (see `newton::linear_prediction`):
/// how many errors its weights weigh.
pub(crate) const ORDER: usize = 8;

/// No pivot known (see [`NewtonMemory::pivots`]).
pub(crate) const NO_PIVOT: u16 = u16::MAX;

impl<X: Dim> NewtonMemory<X>
where
    DefaultAllocator: Allocator<X>,
{
    /// Nothing known yet, for `x` unknowns (a first step).
    pub fn new(x: X) -> Self {
        Self {
            guess: OVector::zeros_generic(x, U1),
            error: OVector::zeros_generic(x, U1),
            error2: OVector::zeros_generic(x, U1),
            older: std::array::from_fn(|_| OVector::zeros_generic(x, U1)),
            head: 0,
            gram: [[[0.0; KEPT]; KEPT]; GROUPS],
            fit: [None; GROUPS],
            fit_age: [0; GROUPS],
            known: 0,
            contraction: None,
            pivots: OVector::from_element_generic(x, U1, NO_PIVOT),
        }
    }

    /// Forgets what earlier steps told (the next step is as a first one).
    pub fn forget(&mut self) {
        self.known = 0;
        self.fit = [None; GROUPS];
        self.contraction = None;
        self.pivots.fill(NO_PIVOT);
    }

    /// Whether nothing is remembered (a first step, or after
    /// [`NewtonMemory::forget`]): a solve from such a memory starts from the
    /// scheme's own predictor and finds its own pivots and contraction.
    pub(crate) fn is_blank(&self) -> bool {
        self.known == 0 && self.contraction.is_none() && self.pivots.iter().all(|&p| p == NO_PIVOT)
    }

    /// Whether the predictor reads `older` (see
    /// `newton::predictor::CUBIC_MIN`): where it does not, they are neither
    /// copied nor cloned (the smallest steps copy the memory in and out).
    #[inline(always)]
    fn wide(&self) -> bool {
        self.guess.len() >= crate::newton::CUBIC_MIN
    }

    /// A copy of a vector of `older` where they are read, else zeros.
    #[inline(always)]
    fn copy_if_wide(&self, e: &OVector<f64, X>) -> OVector<f64, X> {
        if self.wide() {
            e.clone()
        } else {
            OVector::zeros_generic(e.shape_generic().0, U1)
        }
    }

    /// Takes what a successful solve wrote apart into `fresh` (see
    /// `newton::predictor::extrapolate`): its guess, newest error,
    /// contraction and pivots, the older errors each moving one step back.
    /// Vectors of run-time size trade buffers (what `fresh` holds afterwards
    /// is scratch); fixed-size ones are copied.
    pub(crate) fn commit(&mut self, fresh: &mut Self) {
        if self.wide() {
            // The oldest error's slot takes `error2`, and the ring starts there.
            let slot = (self.head as usize + OLDER - 1) % OLDER;
            put(&mut self.older[slot], &mut self.error2);
            self.head = slot as u8;
            self.gram = fresh.gram;
            self.fit = fresh.fit;
            self.fit_age = fresh.fit_age;
            self.known = (self.known + 1).min(3 + OLDER as u8);
        } else {
            self.known = (self.known + 1).min(3);
        }
        put(&mut self.error2, &mut self.error);
        put(&mut self.error, &mut fresh.error);
        put(&mut self.guess, &mut fresh.guess);
        put(&mut self.pivots, &mut fresh.pivots);
        self.contraction = fresh.contraction;
    }

    /// Overwrites `self` with `other`, allocating nothing.
    pub(crate) fn copy_from(&mut self, other: &Self) {
        self.guess.copy_from(&other.guess);
        self.error.copy_from(&other.error);
        self.error2.copy_from(&other.error2);
        if self.wide() {
            for (mine, theirs) in self.older.iter_mut().zip(&other.older) {
                mine.copy_from(theirs);
            }
            self.gram = other.gram;
        }
        self.fit = other.fit;
        self.fit_age = other.fit_age;
        self.head = other.head;
        self.known = other.known;
        self.contraction = other.contraction;
        self.pivots.copy_from(&other.pivots);
    }
}

/// `to` takes `from`'s value, `from` keeping scratch: a trade of buffers
/// at run-time sizes, a copy at fixed ones (where a swap copies twice).
#[inline(always)]
fn put<T: nalgebra::Scalar, X: Dim>(to: &mut OVector<T, X>, from: &mut OVector<T, X>)
where
    DefaultAllocator: Allocator<X>,
{
    if X::try_to_usize().is_none() {
        std::mem::swap(to, from);
    } else {
        to.copy_from(from);
    }
}

impl<X: Dim> Clone for NewtonMemory<X>
where
    DefaultAllocator: Allocator<X>,
{
    fn clone(&self) -> Self {
        Self {
            guess: self.guess.clone(),
            error: self.error.clone(),
            error2: self.error2.clone(),
            older: std::array::from_fn(|j| self.copy_if_wide(&self.older[j])),
            head: self.head,
            gram: if self.wide() {
                self.gram
            } else {
                [[[0.0; KEPT]; KEPT]; GROUPS]
            },
            fit: self.fit,
            fit_age: self.fit_age,
            known: self.known,
            contraction: self.contraction,
            pivots: self.pivots.clone(),
        }
    }
}

impl<const N: usize> Copy for NewtonMemory<nalgebra::Const<N>> {}

impl<const N: usize> Default for NewtonMemory<nalgebra::Const<N>> {
    fn default() -> Self {
        Self::new(nalgebra::Const::<N>)
    }
}
