//! The reference integrator of the load tests: classical RK4 of equations
//! derived by hand (never of hamel's own), fine enough to stand for the
//! exact solution.

/// Classical RK4 of `y' = f(t, y)` from `y0` at t = 0 to `t_end` in `n` steps.
pub fn rk4(f: impl Fn(f64, &[f64]) -> Vec<f64>, y0: &[f64], t_end: f64, n: usize) -> Vec<f64> {
    let h = t_end / n as f64;
    let mut y = y0.to_vec();
    let axpy = |y: &[f64], k: &[f64], a: f64| -> Vec<f64> { y.iter().zip(k).map(|(y, k)| y + a * k).collect() };
    for i in 0..n {
        let t = i as f64 * h;
        let k1 = f(t, &y);
        let k2 = f(t + h / 2.0, &axpy(&y, &k1, h / 2.0));
        let k3 = f(t + h / 2.0, &axpy(&y, &k2, h / 2.0));
        let k4 = f(t + h, &axpy(&y, &k3, h));
        for j in 0..y.len() {
            y[j] += h / 6.0 * (k1[j] + 2.0 * k2[j] + 2.0 * k3[j] + k4[j]);
        }
    }
    y
}
