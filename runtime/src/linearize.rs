//! The linearization `(A, B)` of one solved step, from the residual's parts
//! (docs/theory.md §8.4): written once for the plain and the composed step.

use nalgebra::{DefaultAllocator, Dim, OMatrix, OVector};

use crate::error::StepError;
use crate::kernels::{Alloc, Kernels};
use crate::lu::Lu;
use crate::system::Linearization;

/// `(A, B) = (∂z'/∂z, ∂z'/∂u)` of the step of size `h` with exogenous data
/// `e` from `z`, solved by `x` (implicit function theorem:
/// `A = I + ∂U/∂z − ∂U/∂x (∂R/∂x)⁻¹ ∂R/∂z`, `B = ∂U/∂u − ∂U/∂x (∂R/∂x)⁻¹ ∂R/∂u`;
/// B with one column per input, empty without inputs or unless `with_inputs`).
/// `step` numbers the step in errors.
#[allow(clippy::too_many_arguments)]
pub(crate) fn solved<S, Z, X>(
    sys: &S,
    h: f64,
    e: &[f64],
    z: &OVector<f64, Z>,
    x: &OVector<f64, X>,
    with_inputs: bool,
    step: u64,
) -> Result<Linearization<Z>, StepError>
where
    S: Kernels<Z, X> + ?Sized,
    Z: Dim,
    X: Dim,
    DefaultAllocator: Alloc<Z, X>,
{
    let Some((rz, uz, ux)) = sys.sensitivity_parts(h, e, z, x) else {
        return Err(StepError::InvalidInput(format!(
            "{} provides no step-map sensitivities (derive with `sensitivity = true`, or load with `compile_with_sensitivity`)",
            sys.scheme()
        )));
    };
    let (zd, xd) = sys.dims();
    let mut j = OMatrix::<f64, X, X>::zeros_generic(xd, xd);
    sys.jacobian(h, e, z, x, &mut j);
    let lu = Lu::factor(&j).map_err(|_| {
        let mut r = OVector::<f64, X>::zeros_generic(xd, nalgebra::U1);
        sys.residual(h, e, z, x, &mut r);
        StepError::Singular {
            step,
            iterations: 0,
            residual: r.norm(),
        }
    })?;
    // dx/dz = −J⁻¹ ∂R/∂z, column by column.
    let mut dxdz = OMatrix::<f64, X, Z>::zeros_generic(xd, zd);
    for c in 0..zd.value() {
        let mut col = -rz.column(c);
        lu.solve(&mut col);
        dxdz.set_column(c, &col);
    }
    let a = OMatrix::<f64, Z, Z>::identity_generic(zd, zd) + uz + &ux * dxdz;
    let r = e.len().saturating_sub(1);
    let mut b = nalgebra::DMatrix::<f64>::zeros(zd.value(), if with_inputs { r } else { 0 });
    if with_inputs && r > 0 {
        let Some((ru, uu)) = sys.input_sensitivity_parts(h, e, z, x) else {
            return Err(StepError::InvalidInput(format!(
                "{} was compiled without input sensitivities",
                sys.scheme()
            )));
        };
        // dz'/du = ∂U/∂u − ∂U/∂x J⁻¹ ∂R/∂u
        for c in 0..r {
            let mut col = OVector::<f64, X>::zeros_generic(xd, nalgebra::U1);
            for i in 0..xd.value() {
                col[i] = -ru[(i, c)];
            }
            lu.solve(&mut col);
            let dz = &ux * col;
            for i in 0..zd.value() {
                b[(i, c)] = uu[(i, c)] + dz[i];
            }
        }
    }
    Ok((a, b))
}
