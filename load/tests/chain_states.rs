//! The chain files' `sway` state (the speed table's motion) is the motion its
//! comment describes, and the same in both files: positions and velocities
//! computed here by hand from the formulas, against what each file's state
//! gives — the director form's `e_i`, `w_i`, the maximal-coordinate form's
//! bob positions `x_i = Σ_{j≤i} l e_j` and velocities `Σ_{j≤i} l w_j × e_j`.

use hamel_load::{compile, read_model, Backend};

fn cross(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}

/// Link `i`'s direction and angular velocity in `sway`.
fn sway(i: usize) -> ([f64; 3], [f64; 3]) {
    let i = i as f64;
    let a = 0.1 + 0.4 * (0.1 * i).sin();
    let c = 0.2 * (0.15 * i).cos();
    (
        [a.sin(), 0.0, -a.cos()],
        [c * a.cos(), 0.5 * (0.2 * i).sin(), c * a.sin()],
    )
}

fn initial(file: &str, n: usize, scheme: &str) -> (Vec<f64>, Vec<f64>) {
    let path = format!("{}/../models/{file}.hamel", env!("CARGO_MANIFEST_DIR"));
    let model = read_model(path.as_ref(), &[("N".into(), n as i64)]).unwrap();
    let sys = compile(&model, scheme.parse().unwrap(), Backend::Jit).unwrap();
    sys.initial_conditions("sway").expect("the state `sway`")
}

#[test]
fn the_sway_state_is_the_same_hanging_chain_in_both_files() {
    let n = 40;
    let (e, w) = initial("spherical_chain", n, "hamel");
    let (x, xdot) = initial("spherical_chain_cartesian", n, "rattle");
    let (mut pos, mut vel) = ([0.0; 3], [0.0; 3]);
    let (mut widest, mut fastest) = (0.0f64, 0.0f64);
    for i in 1..=n {
        let (ei, wi) = sway(i);
        let vi = cross(wi, ei);
        for k in 0..3 {
            pos[k] += ei[k];
            vel[k] += vi[k];
            let at = 3 * (i - 1) + k;
            assert!((e[at] - ei[k]).abs() <= 1e-15, "e[{i}][{k}]");
            assert!((w[at] - wi[k]).abs() <= 1e-15, "w[{i}][{k}]");
            assert!((x[at] - pos[k]).abs() <= 1e-13, "x[{i}][{k}]");
            assert!((xdot[at] - vel[k]).abs() <= 1e-13, "x'[{i}][{k}]");
        }
        // What the comment promises: unit links within 0.5 rad of the
        // vertical, no spin about them, angular speeds at most 0.55 rad/s.
        let dot = ei[0] * wi[0] + ei[1] * wi[1] + ei[2] * wi[2];
        assert!(dot.abs() <= 1e-16, "w[{i}] · e[{i}] = {dot}");
        widest = widest.max((-ei[2]).acos());
        fastest = fastest.max((wi[0] * wi[0] + wi[1] * wi[1] + wi[2] * wi[2]).sqrt());
    }
    assert!(widest <= 0.5 && fastest <= 0.55, "{widest} rad, {fastest} rad/s");
    // The bobs' speeds stay bounded along the chain (from `tilted` they
    // grow with i, to 128 m/s at 128 links): 5.05 m/s here, 5.09 at most
    // whatever N (the sums of the oscillating terms are bounded).
    let speed = (1..=n)
        .map(|i| (0..3).map(|k| xdot[3 * (i - 1) + k].powi(2)).sum::<f64>().sqrt())
        .fold(0.0f64, f64::max);
    assert!(speed <= 5.1, "largest bob speed {speed}");
}
