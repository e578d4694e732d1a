//! Which numbers a model parameter may hold, said once so that every host
//! (model file, CLI, Python, the derive, `hamel-load`) refuses the same ones.

/// Why `value` cannot be a parameter's value, or `None` if it can.
///
/// Refused: values that are not finite, and subnormal ones (non-zero but
/// smaller in magnitude than `f64::MIN_POSITIVE`, about 2.2e-308). A step
/// squares parameters and divides by them: a subnormal mass makes the
/// kinetic metric's inverse overflow to infinity, and one squared is zero, so
/// the run fails with a non-finite state or silently drops the term. Zero is
/// allowed (it means the term is absent; the metric's checks name it where
/// it removes a kinetic energy).
pub fn parameter_problem(value: f64) -> Option<String> {
    if !value.is_finite() {
        Some("is not finite".to_string())
    } else if value != 0.0 && !value.is_normal() {
        Some(format!(
            "is subnormal (non-zero but below {:.1e}, the smallest normal double): the step squares and divides by parameters, which overflows or loses every digit there; give a value of a reasonable magnitude (change units) or 0",
            f64::MIN_POSITIVE
        ))
    } else {
        None
    }
}

/// The message every host gives for parameter `name` holding `value`, or
/// `None` if it may (see [`parameter_problem`]).
pub fn parameter_error(name: &str, value: f64) -> Option<String> {
    parameter_problem(value).map(|why| format!("parameter `{name}` = {value:e} {why}"))
}

#[cfg(test)]
mod tests {
    use super::parameter_problem;

    #[test]
    fn normal_values_and_zero_pass_the_rest_are_refused_with_a_reason() {
        for ok in [1.0, -9.81, 0.0, -0.0, f64::MIN_POSITIVE, f64::MAX, 1e-300] {
            assert_eq!(parameter_problem(ok), None, "{ok}");
        }
        for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            assert_eq!(parameter_problem(bad).as_deref(), Some("is not finite"), "{bad}");
        }
        for tiny in [1e-320, -1e-320, 5e-324, f64::MIN_POSITIVE / 2.0] {
            let why = parameter_problem(tiny).unwrap();
            assert!(
                why.starts_with("is subnormal") && why.contains("2.2e-308"),
                "{tiny}: {why}"
            );
        }
    }
}
