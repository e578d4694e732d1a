//! Which schemes may be composed to order 4 or 6 (docs/theory.md §10): the
//! symmetric ones. The composition itself runs in `hamel_runtime::compose`;
//! this is the knowledge every host checks an `order` against before
//! stepping (the derive at compile time, the run-time hosts when a model is
//! loaded).

use super::{Scheme, SchemeError};

/// Whether `scheme`'s step is symmetric, `Φ_{−h} = Φ_h⁻¹`, so that its
/// compositions reach orders 4 and 6. Every scheme here is; measured
/// (`load/tests/composition.rs`): composed, each reaches order 4.0 and 6.0,
/// the averaged Hamel step included (a symmetric one-step map between
/// midpoint states). `None` (a step assembled by hand) is not known to be.
pub fn symmetric(scheme: Option<Scheme>) -> bool {
    matches!(
        scheme,
        Some(Scheme::Hamel(_) | Scheme::Rattle | Scheme::EnergyMomentum | Scheme::StormerVerlet)
    )
}

/// Checks that `order` is offered (2, 4 or 6) and, for 4 and 6, that
/// `scheme` is symmetric; `constrained`: the model has constraints (their
/// residuals are among the step's invariants). The error names the argument
/// `order` and what to choose instead.
///
/// The energy–momentum step of a constrained model composes to order 4
/// only: its state carries a momentum component normal to the constraints
/// that changes sign every step (an eigenvalue −1 of the step map, docs/theory.md
/// §8.4), so the step is not close to the identity for small `h`, which the
/// order-6 conditions assume; measured, the nine-stage composition reaches
/// order 4.0 on the double pendulum (unconstrained, on Kepler: 6.0).
pub fn check_order(scheme: Option<Scheme>, order: u32, constrained: bool) -> Result<(), SchemeError> {
    let name = scheme.map_or("this step", Scheme::name);
    match order {
        2 => Ok(()),
        6 if scheme == Some(Scheme::EnergyMomentum) && constrained => Err(SchemeError(
            "order 6 is not reached by energy_momentum on a constrained model (measured: order 4; its momentum \
             normal to the constraints flips sign every step); choose order 4, or rattle or hamel_midpoint for order 6"
                .into(),
        )),
        4 | 6 if symmetric(scheme) => Ok(()),
        4 | 6 => Err(SchemeError(format!(
            "order {order} composes a symmetric scheme, and {name} is not known to be symmetric; \
             choose hamel, hamel_averaged, rattle, energy_momentum or stormer_verlet, or order 2"
        ))),
        _ => Err(SchemeError(format!(
            "order {order} is not offered: order must be 2 (the scheme itself), 4 or 6 (the scheme composed)"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scheme::Kinematics;

    #[test]
    fn orders_are_checked_against_the_scheme() {
        let averaged = Some(Scheme::Hamel(Kinematics::Averaged));
        assert!(check_order(averaged, 4, true).is_ok());
        assert!(check_order(Some(Scheme::Rattle), 6, true).is_ok());
        assert!(check_order(Some(Scheme::EnergyMomentum), 6, false).is_ok());
        assert!(check_order(Some(Scheme::EnergyMomentum), 4, true).is_ok());
        let e = check_order(Some(Scheme::EnergyMomentum), 6, true).unwrap_err().0;
        assert!(e.starts_with("order 6 is not reached by energy_momentum"), "{e}");
        let e = check_order(None, 4, false).unwrap_err().0;
        assert!(e.contains("order 4") && e.contains("not known to be symmetric"), "{e}");
        let e = check_order(Some(Scheme::Rattle), 3, false).unwrap_err().0;
        assert!(e.contains("order 3 is not offered"), "{e}");
    }
}
