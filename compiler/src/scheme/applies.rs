//! Whether a scheme applies to a model, decided from the model's form
//! without deriving the step: hosts list the schemes of a model
//! (`Model.schemes()`, `hamel compare`) at the cost of these checks instead
//! of a full derivation per scheme. The checks are the ones each derivation
//! makes before its symbolic work, called from the same functions, so they
//! give the same answers with the same messages; `tests/applies.rs` checks
//! that on every model of `models/`.

use crate::model::Model;

use super::constrained::analyse;
use super::hamel::{check_affine_momenta, classify, Kinematics};
use super::mechanics::Mechanics;
use super::{Frame, Scheme, SchemeError};

impl Scheme {
    /// The scheme a host runs when none is named: the default `hamel`
    /// (midpoint kinematics) where it applies, else the first that does of
    /// [`Scheme::FALLBACKS`] — for a model with holonomic constraints in
    /// coordinates where they do not hold identically (a textbook's
    /// Cartesian chain, a bead on a wire), RATTLE. With the default's own
    /// reason for not applying, to tell the user why; the default's error
    /// where nothing applies.
    pub fn default_for(model: &Model) -> Result<(Scheme, Option<SchemeError>), SchemeError> {
        let default = Scheme::Hamel(Kinematics::Midpoint);
        let why = match default.applies(model) {
            Ok(()) => return Ok((default, None)),
            Err(why) => why,
        };
        match Scheme::FALLBACKS.into_iter().find(|s| s.applies(model).is_ok()) {
            Some(s) => Ok((s, Some(why))),
            None => Err(why),
        }
    }

    /// `Ok` where [`Scheme::derive`] succeeds for `model`, the error it
    /// would give otherwise, without deriving the step: the form each scheme
    /// needs (holonomic or velocity constraints, a frame and its rules, a
    /// constant mass matrix and `L = ½ q̇ᵀMq̇ − V`, a Lagrangian quadratic in
    /// the velocities for hamel_midpoint).
    pub fn applies(self, model: &Model) -> Result<(), SchemeError> {
        let mut model = model.clone();
        match self {
            Scheme::Hamel(kin) => {
                super::hamel::check_form(&model)?;
                let frame = Frame::of(&mut model).map_err(|e| SchemeError(format!("hamel: {}", e.0)))?;
                if kin == Kinematics::Midpoint {
                    // Node velocities come from the momenta: their Hessian in
                    // the velocities must not depend on them.
                    let mech = Mechanics::of(&mut model, &frame);
                    let kept = classify(&mut model).kept;
                    let v = model.v_syms();
                    let momenta: Vec<_> = kept.iter().map(|&a| mech.p[a]).collect();
                    check_affine_momenta(&mut model.graph, &momenta, &v)?;
                }
                Ok(())
            }
            Scheme::StormerVerlet => {
                super::stormer_verlet::check_form(&model)?;
                Frame::of(&mut model).map_err(|e| SchemeError(e.0))?;
                if !model.holonomic.is_empty() {
                    analyse(&mut model, "stormer_verlet (index-reduced)")?;
                }
                Ok(())
            }
            Scheme::Rattle => {
                if !super::rattle::takes_general_form(&model) {
                    analyse(&mut model, "rattle")?;
                }
                Frame::of(&mut model).map_err(|e| SchemeError(e.0))?;
                Ok(())
            }
            Scheme::EnergyMomentum => {
                analyse(&mut model, "energy_momentum")?;
                Frame::of(&mut model).map_err(|e| SchemeError(e.0))?;
                Ok(())
            }
        }
    }
}
