//! Orders four and six: a symmetric second-order step composed with itself
//! (docs/theory.md §10).
//!
//! For a symmetric (self-adjoint, `Φ_{−h} = Φ_h⁻¹`) step `Φ_h` of order 2 the
//! composition `Ψ_h = Φ_{γ_s h} ∘ … ∘ Φ_{γ_1 h}` with symmetric coefficients
//! (`γ_i = γ_{s+1−i}`) is symmetric, and of order 4 or 6 when the `γ_i` solve
//! the order conditions (Hairer, Lubich, Wanner, *Geometric Numerical
//! Integration*, 2nd ed., §II.4 and §V.3). What each sub-step conserves, the
//! composition conserves: the constraints (to the Newton tolerance), the
//! momentum maps the base step keeps exactly, symplecticity, and for the
//! energy–momentum step the energy.
//!
//! - order 4: the triple jump [`TRIPLE_JUMP`] (Yoshida 1990; Suzuki 1990),
//!   three sub-steps, the middle one backwards (`γ₂ < 0`);
//! - order 6: Kahan and Li's nine-stage `s9odr6a` [`KAHAN_LI_9`] (Kahan, Li,
//!   Math. Comp. 66, 1997; HLW V.3.2, eq. (3.12)): its error constant is far
//!   smaller than that of Yoshida's seven stages [`YOSHIDA_7`] or of the triple
//!   jump of the triple jump, at equal work (measured on the double
//!   pendulum: `load/tests/composition.rs`,
//!   `kahan_li_has_the_smallest_sixth_order_error_at_equal_work`).
//!
//! Sub-step `i` starts at `t_k + c_i h`, `c_i = γ_1 + … + γ_{i−1}`, with step
//! `γ_i h`: the step's kernels take the time and the step size as data, so a
//! forced model's force is evaluated at each sub-step's own times. Inputs
//! `u_k` are held over the whole composed step (zero-order hold).
//!
//! The energy–momentum step of a constrained model is the exception: its
//! normal momentum flips sign every step, so it is not close to the
//! identity, and composed to order 6 it reaches order 4 only (hosts refuse
//! that pair: `hamel_compiler::scheme::compose::check_order`).
//!
//! Each sub-step solves its own Newton system. Its first guess comes from the
//! same sub-step of the previous composed step (a *lane* per stage), never
//! from the previous sub-step: the unknowns scale with the sub-step's size and
//! sign, so the solution of a forward sub-step is a poor guess for the
//! backward one. The lanes live in the stepper; a state the stepper did not
//! produce itself starts them afresh from the state's warm start, as a first
//! step.

use nalgebra::{DefaultAllocator, Dim, OMatrix, OVector, U1};

use crate::error::StepError;
use crate::kernels::{Alloc, Kernels};
use crate::memory::NewtonMemory;
use crate::newton::{self, StepParts};
use crate::state::StateOf;
use crate::system::{Linearization, StepperOf};

/// `γ₁ = 1/(2 − 2^{1/3})`: the outer sub-steps of the triple jump.
const TJ1: f64 = 1.351_207_191_959_657_8;
/// `γ₂ = 1 − 2γ₁ = −2^{1/3}/(2 − 2^{1/3})`: its backward middle sub-step.
const TJ2: f64 = -1.702_414_383_919_315_3;

/// The triple jump (order 4, three sub-steps): `γ₁ = 1/(2 − 2^{1/3})`,
/// `γ₂ = 1 − 2γ₁`.
pub const TRIPLE_JUMP: [f64; 3] = [TJ1, TJ2, TJ1];

/// Suzuki's five stages of order 4 (`γ₁ = γ₂ = γ₄ = γ₅ = 1/(4 − 4^{1/3})`,
/// `γ₃ = 1 − 4γ₁`): a smaller error constant than the triple jump for one
/// more sub-step. Not selected by [`coefficients`]; kept for comparisons.
pub const SUZUKI_5: [f64; 5] = [
    0.414_490_771_794_375_7,
    0.414_490_771_794_375_7,
    -0.657_963_087_177_502_9,
    0.414_490_771_794_375_7,
    0.414_490_771_794_375_7,
];

/// Yoshida's seven stages of order 6 (1990, solution A). Not selected by
/// [`coefficients`]; kept for comparisons.
pub const YOSHIDA_7: [f64; 7] = [
    0.784_513_610_477_557_3,
    0.235_573_213_359_358_1,
    -1.177_679_984_178_871,
    1.315_186_320_683_911_2,
    -1.177_679_984_178_871,
    0.235_573_213_359_358_1,
    0.784_513_610_477_557_3,
];

/// Kahan and Li's nine stages of order 6 (`s9odr6a`; HLW V.3.2, eq. (3.12)).
// The digits as published (to 20 places), rounded to the nearest f64.
#[allow(clippy::excessive_precision)]
pub const KAHAN_LI_9: [f64; 9] = [
    0.392_161_444_007_314_14,
    0.332_599_136_789_359_44,
    -0.706_246_172_557_639_4,
    0.082_213_596_293_550_8,
    0.798_543_990_934_829_9,
    0.082_213_596_293_550_8,
    -0.706_246_172_557_639_4,
    0.332_599_136_789_359_44,
    0.392_161_444_007_314_14,
];

/// The orders a stepper takes: the base scheme (2) and its compositions.
pub const ORDERS: [u32; 3] = [2, 4, 6];

/// The sub-step coefficients `γ_i` of the composed step of order `order`
/// (`[1.0]` for 2: the base step itself); `None` for an order not offered.
pub fn coefficients(order: u32) -> Option<&'static [f64]> {
    match order {
        2 => Some(&[1.0]),
        4 => Some(&TRIPLE_JUMP),
        6 => Some(&KAHAN_LI_9),
        _ => None,
    }
}

/// The error for an order not offered, naming the argument.
pub fn unknown_order(order: u32) -> String {
    format!("order {order} is not offered: order must be 2 (the scheme itself), 4 or 6 (the scheme composed)")
}

/// What the stepper of a composed step keeps: its coefficients, and a warm
/// start and Newton memory per sub-step (see the module documentation).
pub(crate) struct Composition<Z: Dim, X: Dim>
where
    DefaultAllocator: Alloc<Z, X>,
{
    /// the sub-steps' fractions of the step, `γ_i`
    gamma: &'static [f64],
    /// where each sub-step starts, as a fraction of the step: `c_i = Σ_{j<i} γ_j`
    start: Vec<f64>,
    /// the previous solution of each sub-step
    warm: Vec<OVector<f64, X>>,
    /// what each sub-step's last solve tells its next
    memory: Vec<NewtonMemory<X>>,
    /// the step count and state `z` the last composed step produced (the
    /// lanes continue only from it; `None`: no step yet)
    produced: Option<u64>,
    produced_z: OVector<f64, Z>,
    /// the state before the sub-step (the sub-step's work needs it)
    before: OVector<f64, Z>,
    /// copies of the state and the lanes before the step, restored if a
    /// sub-step fails (allocated once, like Newton's workspace)
    saved: StateOf<Z, X>,
    saved_warm: Vec<OVector<f64, X>>,
    saved_memory: Vec<NewtonMemory<X>>,
}

impl<Z: Dim, X: Dim> Composition<Z, X>
where
    DefaultAllocator: Alloc<Z, X>,
{
    /// The composition of order `order` for a state of size `z` and `x`
    /// unknowns; `Ok(None)` for order 2 (the base step).
    pub(crate) fn new(order: u32, z: Z, x: X) -> Result<Option<Self>, StepError> {
        let gamma = coefficients(order).ok_or_else(|| StepError::InvalidInput(unknown_order(order)))?;
        if gamma.len() == 1 {
            return Ok(None);
        }
        let start = gamma
            .iter()
            .scan(0.0, |c, g| {
                let s = *c;
                *c += g;
                Some(s)
            })
            .collect();
        Ok(Some(Self {
            gamma,
            start,
            warm: vec![OVector::zeros_generic(x, U1); gamma.len()],
            memory: (0..gamma.len()).map(|_| NewtonMemory::new(x)).collect(),
            produced: None,
            produced_z: OVector::zeros_generic(z, U1),
            before: OVector::zeros_generic(z, U1),
            saved: StateOf::zeros(z, x),
            saved_warm: vec![OVector::zeros_generic(x, U1); gamma.len()],
            saved_memory: (0..gamma.len()).map(|_| NewtonMemory::new(x)).collect(),
        }))
    }

    /// Number of sub-steps.
    pub(crate) fn stages(&self) -> usize {
        self.gamma.len()
    }

    /// Starts the lanes from `state` unless it is the state this composition
    /// produced last.
    fn continue_from(&mut self, state: &StateOf<Z, X>) {
        let continues = self.produced == Some(state.step) && self.produced_z == state.z;
        if !continues {
            for (w, m) in self.warm.iter_mut().zip(&mut self.memory) {
                w.copy_from(&state.warm);
                m.copy_from(&state.newton);
            }
        }
    }
}

/// One composed step of `stepper` from `state` (its composition taken out by
/// the caller); with `linearize`, also the linearization of the whole step
/// (`A = A_s ⋯ A_1`, `B = Σ_i A_s ⋯ A_{i+1} B_i`, the inputs held). On error
/// `state` is unchanged.
pub(crate) fn step<S, Z, X, R>(
    stepper: &mut StepperOf<'_, S, Z, X, R>,
    comp: &mut Composition<Z, X>,
    state: &mut StateOf<Z, X>,
    linearize: Option<bool>,
) -> Result<Option<Box<Linearization<Z>>>, StepError>
where
    S: Kernels<Z, X> + ?Sized,
    Z: Dim,
    X: Dim,
    R: std::ops::Deref<Target = S>,
    DefaultAllocator: Alloc<Z, X>,
{
    comp.continue_from(state);
    let k = state.step;
    let h = stepper.h;
    let t_k = stepper.t0 + k as f64 * h;
    copy_state(&mut comp.saved, state);
    for i in 0..comp.stages() {
        comp.saved_warm[i].copy_from(&comp.warm[i]);
        comp.saved_memory[i].copy_from(&comp.memory[i]);
    }
    let mut work = 0.0;
    // Boxed, and accumulated out of line: a `Z × Z` matrix in this frame
    // (4.7 MB at 768 state components) sat on the stack of every step of a
    // large derived model, linearized or not.
    let mut lin: Option<Box<Linearization<Z>>> = None;
    let mut run = |stepper: &mut StepperOf<'_, S, Z, X, R>, comp: &mut Composition<Z, X>| -> Result<(), StepError> {
        for i in 0..comp.stages() {
            let sys: &S = &stepper.system;
            let hi = comp.gamma[i] * h;
            if let Some(t) = stepper.exo.first_mut() {
                *t = t_k + comp.start[i] * h;
            }
            comp.before.copy_from(&state.z);
            let mut counter = k;
            newton::advance(
                sys,
                hi,
                &stepper.exo,
                &stepper.options,
                stepper.compensated,
                &mut stepper.stats,
                &mut stepper.work,
                StepParts {
                    z: &mut state.z,
                    lo: &mut state.lo,
                    warm: &mut comp.warm[i],
                    step: &mut counter,
                    newton: &mut comp.memory[i],
                },
            )?;
            if let Some(w) = sys.work(hi, &stepper.exo, &comp.before, &comp.warm[i]) {
                work += w;
            }
            if let Some(with_inputs) = linearize {
                let sub = SubStep {
                    h: hi,
                    e: &stepper.exo,
                    z: &comp.before,
                    x: &comp.warm[i],
                };
                accumulate(&mut lin, sys, sub, with_inputs, k)?;
            }
        }
        Ok(())
    };
    if let Err(e) = run(stepper, comp) {
        copy_state(state, &comp.saved);
        for i in 0..comp.stages() {
            comp.warm[i].copy_from(&comp.saved_warm[i]);
            comp.memory[i].copy_from(&comp.saved_memory[i]);
        }
        return Err(e);
    }
    stepper.work_done += work;
    state.warm.copy_from(&comp.warm[comp.stages() - 1]);
    state.step = k + 1;
    comp.produced = Some(state.step);
    comp.produced_z.copy_from(&state.z);
    Ok(lin)
}

/// One solved sub-step: its size, exogenous data, start and unknowns.
struct SubStep<'a, Z: Dim, X: Dim>
where
    DefaultAllocator: Alloc<Z, X>,
{
    h: f64,
    e: &'a [f64],
    z: &'a OVector<f64, Z>,
    x: &'a OVector<f64, X>,
}

/// Multiplies the sub-step's linearization onto the product so far (`B` by
/// the chain rule). Never inlined, so that its `Z × Z` temporaries live in
/// its own frame, not in that of every composed step.
#[inline(never)]
fn accumulate<S, Z, X>(
    lin: &mut Option<Box<Linearization<Z>>>,
    sys: &S,
    sub: SubStep<'_, Z, X>,
    with_inputs: bool,
    k: u64,
) -> Result<(), StepError>
where
    S: Kernels<Z, X> + ?Sized,
    Z: Dim,
    X: Dim,
    DefaultAllocator: Alloc<Z, X>,
{
    let (a, b) = crate::linearize::solved(sys, sub.h, sub.e, sub.z, sub.x, with_inputs, k)?;
    *lin = Some(Box::new(match lin.take() {
        None => (a, b),
        Some(prev) => {
            let (a0, b0) = *prev;
            let b = if b.ncols() > 0 {
                let ab0 = to_dynamic(&a) * b0;
                ab0 + b
            } else {
                b
            };
            (a * a0, b)
        }
    }));
    Ok(())
}

/// Overwrites `to` with `from`, allocating nothing.
fn copy_state<Z: Dim, X: Dim>(to: &mut StateOf<Z, X>, from: &StateOf<Z, X>)
where
    DefaultAllocator: Alloc<Z, X>,
{
    to.z.copy_from(&from.z);
    to.lo.copy_from(&from.lo);
    to.warm.copy_from(&from.warm);
    to.step = from.step;
    to.newton.copy_from(&from.newton);
}

/// A fixed- or run-time-size square matrix as a dynamic one.
fn to_dynamic<Z: Dim>(a: &OMatrix<f64, Z, Z>) -> nalgebra::DMatrix<f64>
where
    DefaultAllocator: nalgebra::allocator::Allocator<Z, Z>,
{
    nalgebra::DMatrix::from_column_slice(a.nrows(), a.ncols(), a.as_slice())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The conditions for order 4 and 6 of a symmetric composition of a
    /// symmetric second-order step that involve sums of powers alone
    /// (HLW II.4 and V.3.2): `Σγ = 1`, `Σγ³ = 0`, and for order 6 `Σγ⁵ = 0`.
    #[test]
    fn coefficients_meet_the_power_sum_order_conditions() {
        let power = |g: &[f64], p: i32| g.iter().map(|x| x.powi(p)).sum::<f64>();
        for g in [&TRIPLE_JUMP[..], &SUZUKI_5, &YOSHIDA_7, &KAHAN_LI_9] {
            assert!((power(g, 1) - 1.0).abs() < 4e-16, "{g:?}");
            assert!(power(g, 3).abs() < 2e-15, "{g:?}: {}", power(g, 3));
            let n = g.len();
            assert!((0..n).all(|i| g[i] == g[n - 1 - i]), "symmetric");
        }
        for g in [&YOSHIDA_7[..], &KAHAN_LI_9] {
            assert!(power(g, 5).abs() < 1e-14, "{g:?}: {}", power(g, 5));
        }
        let exact = 1.0 / (2.0 - 2f64.cbrt());
        assert!((TJ1 - exact).abs() < 3e-16);
        assert!((TJ2 - (1.0 - 2.0 * exact)).abs() < 5e-16);
        assert_eq!(coefficients(3), None);
        assert_eq!(coefficients(2), Some(&[1.0][..]));
    }

    #[test]
    fn sub_steps_start_where_the_previous_ends() {
        let c = Composition::<nalgebra::Dyn, nalgebra::Dyn>::new(4, nalgebra::Dyn(2), nalgebra::Dyn(1))
            .unwrap()
            .unwrap();
        assert_eq!(c.start, vec![0.0, TJ1, TJ1 + TJ2]);
        assert!(
            Composition::<nalgebra::Dyn, nalgebra::Dyn>::new(2, nalgebra::Dyn(2), nalgebra::Dyn(1))
                .unwrap()
                .is_none()
        );
        let err = Composition::<nalgebra::Dyn, nalgebra::Dyn>::new(3, nalgebra::Dyn(2), nalgebra::Dyn(1)).err();
        assert!(err.unwrap().to_string().contains("order 3 is not offered"));
    }
}
