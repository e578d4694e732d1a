//! A hand-written discrete Hamel step (averaged kinematics, ZLB12 (6.6)–(6.7))
//! for the body-frame spherical pendulum: the yardstick for generated code.
//! Shared by the step benchmark and the agreement test.

use hamel::nalgebra::{Const, SMatrix, SVector};
use hamel::{InvariantKind, Kernels, NameList};

/// Parameters of the pendulum.
pub struct HandWritten {
    pub m: f64,
    pub r: f64,
    pub g: f64,
}

impl Kernels<Const<5>, Const<5>> for HandWritten {
    fn model(&self) -> &str {
        "spherical_pendulum"
    }

    fn scheme(&self) -> &str {
        "hand-written hamel_averaged"
    }

    fn dims(&self) -> (Const<5>, Const<5>) {
        (Const, Const)
    }

    fn names(&self, list: NameList) -> Vec<&str> {
        match list {
            NameList::Parameters => vec!["m", "r", "g"],
            NameList::Coordinates => vec!["gamma[0]", "gamma[1]", "gamma[2]"],
            NameList::Velocities => vec!["xi[0]", "xi[1]"],
            NameList::State => vec!["gamma[0]", "gamma[1]", "gamma[2]", "xi[0]", "xi[1]"],
            NameList::Unknowns => vec!["gamma'[0]", "gamma'[1]", "gamma'[2]", "xi'[0]", "xi'[1]"],
            NameList::InitialStates | NameList::Inputs => vec![],
        }
    }

    fn invariant_info(&self) -> Vec<(&str, InvariantKind)> {
        vec![("energy", InvariantKind::Energy)]
    }

    fn parameters(&self) -> Vec<f64> {
        vec![self.m, self.r, self.g]
    }

    fn residual(&self, h: f64, _e: &[f64], z: &SVector<f64, 5>, x: &SVector<f64, 5>, out: &mut SVector<f64, 5>) {
        let inertia = self.m * self.r * self.r;
        let k = 0.5 * h * self.m * self.g * self.r;
        let gb = [(z[0] + x[0]) * 0.5, (z[1] + x[1]) * 0.5, (z[2] + x[2]) * 0.5];
        let xb = [(z[3] + x[3]) * 0.5, (z[4] + x[4]) * 0.5];
        // γ̄ × ξ̄ with ξ̄ = (ξ₁, ξ₂, 0)
        let c = [-gb[2] * xb[1], gb[2] * xb[0], gb[0] * xb[1] - gb[1] * xb[0]];
        *out = SVector::<f64, 5>::new(
            x[0] - z[0] - h * c[0],
            x[1] - z[1] - h * c[1],
            x[2] - z[2] - h * c[2],
            inertia * (x[3] - z[3]) - k * (x[1] + z[1]),
            inertia * (x[4] - z[4]) + k * (x[0] + z[0]),
        );
    }

    fn jacobian(&self, h: f64, _e: &[f64], z: &SVector<f64, 5>, x: &SVector<f64, 5>, out: &mut SMatrix<f64, 5, 5>) {
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
        *out = j;
    }

    fn increment(&self, _h: f64, _e: &[f64], z: &SVector<f64, 5>, x: &SVector<f64, 5>, out: &mut SVector<f64, 5>) {
        *out = x - z;
    }

    fn predict(&self, h: f64, _e: &[f64], z: &SVector<f64, 5>, w: &SVector<f64, 5>, out: &mut SVector<f64, 5>) {
        *out = SVector::<f64, 5>::new(
            z[0] + h * (-z[2] * w[4]),
            z[1] + h * (z[2] * w[3]),
            z[2] + h * (z[0] * w[4] - z[1] * w[3]),
            w[3],
            w[4],
        );
    }

    fn observe_size(&self) -> usize {
        0
    }

    fn state_of(&self, q: &[f64], v: &[f64], z: &mut [f64], x: &mut [f64]) {
        z[..3].copy_from_slice(q);
        z[3..].copy_from_slice(v);
        x.copy_from_slice(z);
    }

    fn observe(&self, _z: &[f64], _y: &mut [f64]) -> bool {
        true
    }

    fn physical_of(&self, z: &[f64], _y: &[f64], q: &mut [f64], v: &mut [f64]) {
        q.copy_from_slice(&z[..3]);
        v.copy_from_slice(&z[3..]);
    }

    fn invariants_of(&self, _t: f64, q: &[f64], v: &[f64], out: &mut [f64]) {
        let inertia = self.m * self.r * self.r;
        out[0] = 0.5 * inertia * (v[0] * v[0] + v[1] * v[1]) + self.m * self.g * self.r * q[2];
    }

    fn initial_data(&self, _name: &str, _q: &mut [f64], _v: &mut [f64]) -> bool {
        false
    }
}
