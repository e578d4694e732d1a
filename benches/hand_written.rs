//! A hand-written discrete Hamel step (averaged kinematics, ZLB12 (6.6)–(6.7))
//! for the body-frame spherical pendulum: the yardstick for generated code.
//! Shared by the step benchmark and the agreement test.

use hamel::nalgebra::{SMatrix, SVector};
use hamel::{InvariantKind, StepSystem};

/// Parameters of the pendulum.
pub struct HandWritten {
    pub m: f64,
    pub r: f64,
    pub g: f64,
}

static INFO: [(&str, InvariantKind); 1] = [("energy", InvariantKind::Energy)];

impl StepSystem<5, 5> for HandWritten {
    const SCHEME: &'static str = "hand-written hamel(averaged)";

    fn residual(&self, h: f64, z: &SVector<f64, 5>, x: &SVector<f64, 5>) -> SVector<f64, 5> {
        let inertia = self.m * self.r * self.r;
        let k = 0.5 * h * self.m * self.g * self.r;
        let gb = [(z[0] + x[0]) * 0.5, (z[1] + x[1]) * 0.5, (z[2] + x[2]) * 0.5];
        let xb = [(z[3] + x[3]) * 0.5, (z[4] + x[4]) * 0.5];
        // γ̄ × ξ̄ with ξ̄ = (ξ₁, ξ₂, 0)
        let c = [-gb[2] * xb[1], gb[2] * xb[0], gb[0] * xb[1] - gb[1] * xb[0]];
        SVector::<f64, 5>::new(
            x[0] - z[0] - h * c[0],
            x[1] - z[1] - h * c[1],
            x[2] - z[2] - h * c[2],
            inertia * (x[3] - z[3]) - k * (x[1] + z[1]),
            inertia * (x[4] - z[4]) + k * (x[0] + z[0]),
        )
    }

    fn jacobian(&self, h: f64, z: &SVector<f64, 5>, x: &SVector<f64, 5>) -> SMatrix<f64, 5, 5> {
        let inertia = self.m * self.r * self.r;
        let k = 0.5 * h * self.m * self.g * self.r;
        let gb = [(z[0] + x[0]) * 0.5, (z[1] + x[1]) * 0.5, (z[2] + x[2]) * 0.5];
        let xb = [(z[3] + x[3]) * 0.5, (z[4] + x[4]) * 0.5];
        let hh = 0.5 * h;
        #[rustfmt::skip]
        let j = SMatrix::<f64, 5, 5>::from_row_slice(&[
            1.0,       0.0,        hh * xb[1], 0.0,         hh * gb[2],
            0.0,       1.0,       -hh * xb[0], -hh * gb[2], 0.0,
            -hh * xb[1], hh * xb[0], 1.0,      hh * gb[1],  -hh * gb[0],
            0.0,       -k,         0.0,        inertia,     0.0,
            k,         0.0,        0.0,        0.0,         inertia,
        ]);
        j
    }

    fn increment(&self, _h: f64, z: &SVector<f64, 5>, x: &SVector<f64, 5>) -> SVector<f64, 5> {
        x - z
    }

    fn predict(&self, h: f64, z: &SVector<f64, 5>, w: &SVector<f64, 5>) -> SVector<f64, 5> {
        SVector::<f64, 5>::new(
            z[0] + h * (-z[2] * w[4]),
            z[1] + h * (z[2] * w[3]),
            z[2] + h * (z[0] * w[4] - z[1] * w[3]),
            w[3],
            w[4],
        )
    }

    fn invariant_info(&self) -> &'static [(&'static str, InvariantKind)] {
        &INFO
    }

    fn invariants_into(&self, z: &SVector<f64, 5>, out: &mut [f64]) -> Result<(), String> {
        let inertia = self.m * self.r * self.r;
        out[0] = 0.5 * inertia * (z[3] * z[3] + z[4] * z[4]) + self.m * self.g * self.r * z[2];
        Ok(())
    }
}
