use hamel::{Integrator, Stepper};
#[derive(Integrator)]
#[hamel(
    model = "models/spherical_chain.hamel",
    scheme = "hamel",
    sensitivity = false,
    N = 64
)]
pub struct Chain {
    pub m: f64,
    pub l: f64,
    pub g: f64,
}
fn main() {
    let c = Chain::with_defaults();
    let start = c.initial("tilted").unwrap();
    let mut best = f64::INFINITY;
    let mut iters = 0.0;
    for _ in 0..5 {
        let mut s = start;
        let mut st = Stepper::new(&c, 0.001).unwrap();
        let t = std::time::Instant::now();
        for _ in 0..200 {
            st.step(&mut s).unwrap();
        }
        best = best.min(t.elapsed().as_nanos() as f64 / 200.0);
        iters = st.stats.mean();
    }
    println!("{best:.0} {iters:.2}");
}
