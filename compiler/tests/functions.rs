//! The elementary functions and constants of the model language: values,
//! derivatives against central differences, `atan2` against Rust's, `pi`.

use hamel_compiler::sym::{gradient, Graph};
use hamel_kernel::Func;

#[test]
fn derivatives_of_every_function_match_central_differences() {
    // Points inside every function's domain (asin and acos need |x| < 1).
    for f in Func::ALL {
        for x0 in [-0.7, -0.2, 0.35, 0.9] {
            if f == Func::Ln && x0 <= 0.0 {
                continue;
            }
            let mut g = Graph::new();
            let x = g.symbol("x");
            let e = g.call(f, x);
            let d = gradient(&mut g, e, &[x])[0];
            let at = |v: f64, id| g.eval(id, &|_| v);
            assert_eq!(at(x0, e), f.apply(x0), "{}({x0})", f.name());
            let h = 1e-6;
            let fd = (f.apply(x0 + h) - f.apply(x0 - h)) / (2.0 * h);
            let an = at(x0, d);
            assert!(
                (fd - an).abs() < 1e-8 * an.abs().max(1.0),
                "{}'({x0}): {an} vs {fd}",
                f.name()
            );
        }
    }
}

fn let_value(src_let: &str, q: f64, p: f64) -> f64 {
    let src = format!("model m {{ coordinates {{ q, p }} let a = {src_let} lagrangian = q'^2 + p'^2 }}");
    let m = hamel_compiler::load("m.hamel", &src).unwrap_or_else(|e| panic!("{e}"));
    let (_, ids) = m.lets.iter().find(|(n, _)| n == "a").unwrap();
    m.graph.eval(ids[0], &|s| match m.graph.symbol_name(s) {
        "q" => q,
        "p" => p,
        _ => f64::NAN,
    })
}

#[test]
fn atan2_in_model_files_is_rusts_with_its_derivative() {
    for (y, x) in [
        (0.3, 0.4),
        (0.3, -0.4),
        (-0.3, -0.4),
        (-2.0, 0.1),
        (1e-9, -1.0),
        (0.0, -1.0),
        (5.0, 0.0),
    ] {
        assert_eq!(let_value("atan2(q, p)", y, x), f64::atan2(y, x), "atan2({y}, {x})");
        // ∂/∂q atan2(q, p) = p / (p² + q²), against central differences.
        let h = 1e-6;
        let fd = (f64::atan2(y + h, x) - f64::atan2(y - h, x)) / (2.0 * h);
        if !(x < 0.0 && y.abs() < h) {
            // (not across the branch cut)
            assert!((fd - x / (x * x + y * y)).abs() < 1e-6, "{fd}");
        }
    }
    let mut g = Graph::new();
    let (y, x) = (g.symbol("y"), g.symbol("x"));
    let e = g.atan2(y, x);
    let d = gradient(&mut g, e, &[y, x]);
    let at = |id| g.eval(id, &|s| if s == 0 { 0.3 } else { -0.4 });
    assert!((at(d[0]) - (-0.4 / 0.25)).abs() < 1e-15 && (at(d[1]) - (-0.3 / 0.25)).abs() < 1e-15);
}

#[test]
fn pi_and_the_inverse_functions_in_model_files() {
    assert_eq!(let_value("atan(q / p)", 1.0, 1.0), std::f64::consts::FRAC_PI_4);
    assert_eq!(let_value("pi", 0.0, 0.0), std::f64::consts::PI);
    assert_eq!(let_value("asin(1) * 2", 0.0, 0.0), std::f64::consts::PI);
    let e = hamel_compiler::load(
        "m.hamel",
        "model m { parameters { pi = 3 } coordinates { q } lagrangian = q'^2 }",
    )
    .unwrap_err();
    assert!(e.to_string().contains("`pi` is a built-in constant"), "{e}");
    let e = hamel_compiler::load("m.hamel", "model m { coordinates { q } lagrangian = atanh(q) }").unwrap_err();
    assert!(
        e.to_string()
            .contains("unknown function `atanh` (known: sin, cos, tan, exp, ln, sqrt, asin"),
        "{e}"
    );
}
