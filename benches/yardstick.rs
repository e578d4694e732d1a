//! The yardstick for generated steps: the body-frame spherical pendulum's
//! averaged discrete Hamel step (ZLB12 (6.6)–(6.7), docs/schemes.md §2) as a
//! skilled engineer writes it by hand, with its own algorithm and loop.
//!
//! The momentum equation `𝕀(ξ⁺ − ξ)/h = (mg/2)(γ⁺ + γ) × a`, with
//! `𝕀 = mr² diag(1, 1, 0)`, `a = (0, 0, r)`, gives `ξ⁺` explicitly in `γ⁺`:
//! `ξ⁺ = ξ + c (s₂, −s₁)`, `s = γ⁺ + γ`, `c = hg/(2r)`. What remains is the
//! kinematic equation `γ⁺ − γ = (h/4) s × (ξ⁺ + ξ)` in the three unknowns
//! `γ⁺`: a 3×3 Newton iteration with an analytic Jacobian, solved by
//! Cramer's rule, stopped at round-off. No allocation, no generic code.

/// The pendulum and step size.
#[derive(Clone, Copy, Debug)]
pub struct Yardstick {
    /// `h g / (2 r)`
    c: f64,
    /// `h / 4`
    q: f64,
    /// step size
    h: f64,
}

/// State between midpoints: `γ_{k−½}` and `ξ_{k−1,k}` (two components; ξ³ = 0).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SphereState {
    /// `γ`
    pub gamma: [f64; 3],
    /// `(ξ¹, ξ²)`
    pub xi: [f64; 2],
}

fn cross(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}

impl Yardstick {
    /// Pendulum of length `r` under gravity `g`, step `h` (the mass cancels).
    pub fn new(r: f64, g: f64, h: f64) -> Self {
        Yardstick {
            c: h * g / (2.0 * r),
            q: h / 4.0,
            h,
        }
    }

    /// One step; returns the Newton iteration count, or `None` if Newton
    /// failed to converge in 20 iterations (the state is then unchanged).
    #[inline]
    pub fn step(&self, st: &mut SphereState) -> Option<u32> {
        let g0 = st.gamma;
        let x0 = [st.xi[0], st.xi[1], 0.0];
        // Predictor: explicit Euler on the kinematics.
        let d = cross(g0, x0);
        let mut g = [g0[0] + self.h * d[0], g0[1] + self.h * d[1], g0[2] + self.h * d[2]];
        let mut last = f64::INFINITY;
        for it in 1..=20u32 {
            let s = [g[0] + g0[0], g[1] + g0[1], g[2] + g0[2]];
            let xm = [2.0 * x0[0] + self.c * s[1], 2.0 * x0[1] - self.c * s[0], 0.0];
            let sx = cross(s, xm);
            let r = [
                g[0] - g0[0] - self.q * sx[0],
                g[1] - g0[1] - self.q * sx[1],
                g[2] - g0[2] - self.q * sx[2],
            ];
            // J = I − q (−[xm]× + [s]× C), C = c [[0, 1, 0], [−1, 0, 0], [0, 0, 0]]:
            // d(s × xm) = ds × xm + s × (C ds).
            let (c, q) = (self.c, self.q);
            // −[xm]× (the matrix of v ↦ v × xm)
            let a = [[0.0, xm[2], -xm[1]], [-xm[2], 0.0, xm[0]], [xm[1], -xm[0], 0.0]];
            // [s]× C: columns s × (C e_j); C e0 = (0, −c, 0), C e1 = (c, 0, 0), C e2 = 0
            let b0 = cross(s, [0.0, -c, 0.0]);
            let b1 = cross(s, [c, 0.0, 0.0]);
            let mut j = [[0.0; 3]; 3];
            for i in 0..3 {
                j[i][0] = -q * (a[i][0] + b0[i]);
                j[i][1] = -q * (a[i][1] + b1[i]);
                j[i][2] = -q * a[i][2];
                j[i][i] += 1.0;
            }
            // Cramer's rule.
            let det = j[0][0] * (j[1][1] * j[2][2] - j[1][2] * j[2][1])
                - j[0][1] * (j[1][0] * j[2][2] - j[1][2] * j[2][0])
                + j[0][2] * (j[1][0] * j[2][1] - j[1][1] * j[2][0]);
            let inv = 1.0 / det;
            let dx = [
                inv * (r[0] * (j[1][1] * j[2][2] - j[1][2] * j[2][1]) - j[0][1] * (r[1] * j[2][2] - j[1][2] * r[2])
                    + j[0][2] * (r[1] * j[2][1] - j[1][1] * r[2])),
                inv * (j[0][0] * (r[1] * j[2][2] - j[1][2] * r[2]) - r[0] * (j[1][0] * j[2][2] - j[1][2] * j[2][0])
                    + j[0][2] * (j[1][0] * r[2] - r[1] * j[2][0])),
                inv * (j[0][0] * (j[1][1] * r[2] - r[1] * j[2][1]) - j[0][1] * (j[1][0] * r[2] - r[1] * j[2][0])
                    + r[0] * (j[1][0] * j[2][1] - j[1][1] * j[2][0])),
            ];
            g = [g[0] - dx[0], g[1] - dx[1], g[2] - dx[2]];
            let dn = (dx[0] * dx[0] + dx[1] * dx[1] + dx[2] * dx[2]).sqrt();
            // Stop at round-off: a tiny update, or one that no longer shrinks.
            if dn <= 4.0 * f64::EPSILON || (it > 1 && dn >= last) {
                let s = [g[0] + g0[0], g[1] + g0[1]];
                st.gamma = g;
                st.xi = [x0[0] + self.c * s[1], x0[1] - self.c * s[0]];
                return Some(it);
            }
            last = dn;
        }
        None
    }
}
