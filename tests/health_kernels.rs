//! The health kernels in derived code: the constrained kinetic metric and the
//! frame check that every back-end provides, judged by the runtime's
//! diagnosis, against closed forms. In spherical angles `M = m r² diag(1,
//! sin²θ)`, so the condition number is `1/sin²θ` and infinite at the pole;
//! for the director pendulum `K = [[m r²(I − eeᵀ), e], [eᵀ, 0]]` has the
//! eigenvalues `m r²` (twice, on `e^⊥`) and `±1`, so its condition number
//! is `m r²`.

#[macro_use]
mod common;

use hamel::runtime::diagnosis::{frame_diagnosis, metric_condition, metric_diagnosis};
use hamel::Kernels;

pendulum!(Angles, model = "models/spherical_pendulum_angles.hamel");
pendulum!(Director, model = "models/spherical_pendulum_director.hamel");

#[test]
fn the_metric_of_spherical_angles_has_its_closed_form_condition_and_its_pole() {
    let m = Angles::with_defaults();
    let (q, v) = m.initial_conditions("swing").unwrap();
    let want = 1.0 / q[0].sin().powi(2);
    let got = metric_condition(&m, &q, &v);
    assert!((got / want - 1.0).abs() < 1e-12, "{got} against {want}");
    assert!(m.metric_varies());
    let pole = [0.0, 0.5];
    assert_eq!(metric_condition(&m, &pole, &v), f64::INFINITY);
    let why = metric_diagnosis(&m, &pole, &v).expect("singular at the pole");
    assert!(why.contains("singular point of the coordinates"), "{why}");
    assert_eq!(metric_diagnosis(&m, &q, &v), None);
    // The identity frame moves every velocity, at the pole too: there the
    // metric, not the frame, is what is singular.
    assert_eq!(m.frame_check_size(), Some((2, 2)));
    assert_eq!(frame_diagnosis(&m, &pole, &v), None);
}

#[test]
fn the_director_pendulum_s_metric_and_frame_check_have_their_closed_forms() {
    let m = Director::with_defaults();
    let (q, v) = m.initial_conditions("published").unwrap();
    let want = m.m * m.r * m.r;
    let got = metric_condition(&m, &q, &v);
    assert!((got / want - 1.0).abs() < 1e-12, "{got} against {want}");
    // [Ψ; A]: three frame rows of rank 2, one constraint row.
    assert_eq!(m.frame_check_size(), Some((4, 3)));
    assert_eq!(frame_diagnosis(&m, &q, &v), None);
    // A zero mass removes every kinetic term: named as the cause.
    let light = Director { m: 0.0, r: m.r, g: m.g };
    let why = metric_diagnosis(&light, &q, &v).expect("singular without mass");
    assert!(why.contains("parameter(s) m = 0"), "{why}");
}

#[test]
fn derived_and_run_time_health_kernels_agree() {
    use hamel_load::{compile, read_model, Backend};
    let m = Director::with_defaults();
    let (q, v) = m.initial_conditions("published").unwrap();
    let model = read_model("models/spherical_pendulum_director.hamel".as_ref(), &[]).unwrap();
    let sys = compile(&model, "hamel".parse().unwrap(), Backend::Jit).unwrap();
    let (a, b) = (metric_condition(&m, &q, &v), sys.metric_condition(&q, &v));
    assert!((a / b - 1.0).abs() < 1e-13, "{a} against {b}");
    assert_eq!(m.metric_size(), sys.metric_size());
    assert_eq!(m.frame_check_size(), sys.frame_check_size());
}
