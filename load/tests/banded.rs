//! A long chain's banded Newton Jacobian: the JIT writes only its pattern's
//! entries, the interpreter the whole matrix; the two give the same
//! Jacobian and the same trajectory, to the bit.

use hamel_load::{compile, read_model, Backend, System};
use hamel_runtime::nalgebra::{DMatrix, DVector};
use hamel_runtime::{DynStepper, Kernels};

fn chain(scheme: &str, backend: Backend) -> System {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../models/spherical_chain_cartesian.hamel");
    let model = read_model(path.as_ref(), &[("N".into(), 12)]).unwrap();
    compile(&model, scheme.parse().unwrap(), backend).unwrap()
}

fn bits(v: &[f64]) -> Vec<u64> {
    v.iter().map(|x| x.to_bits()).collect()
}

#[test]
fn the_band_written_jacobian_equals_the_whole_one_and_steps_alike() {
    for scheme in ["rattle", "stormer_verlet", "energy_momentum"] {
        let jit = chain(scheme, Backend::Jit);
        let interp = chain(scheme, Backend::Interpreter);
        assert!(jit.jacobian_band().is_some(), "{scheme}: banded");
        assert!(jit.writes_jacobian_band(), "{scheme}: the JIT writes the band only");
        assert!(!interp.writes_jacobian_band());

        // The whole Jacobian, into a matrix holding garbage: every entry is
        // written (the zeros outside the band too).
        let state = jit.initial("tilted").unwrap();
        let n = state.warm.len();
        let x = DVector::from_fn(n, |i, _| 0.1 + 0.01 * i as f64);
        let mut rj = (DVector::zeros(n), DMatrix::from_element(n, n, f64::NAN));
        let mut ri = (DVector::zeros(n), DMatrix::zeros(n, n));
        let e: Vec<f64> = vec![0.0; jit.exogenous_len()];
        jit.residual_jacobian(0.01, &e, &state.z, &x, &mut rj.0, &mut rj.1);
        interp.residual_jacobian(0.01, &e, &state.z, &x, &mut ri.0, &mut ri.1);
        assert_eq!(bits(rj.0.as_slice()), bits(ri.0.as_slice()), "{scheme}: residual");
        assert_eq!(bits(rj.1.as_slice()), bits(ri.1.as_slice()), "{scheme}: Jacobian");

        // What Newton's sparse LU reads: the values of the pattern's
        // entries alone, the same bits; every other entry is zero.
        assert!(
            jit.writes_jacobian_pattern(),
            "{scheme}: the JIT writes the pattern's values"
        );
        assert!(!interp.writes_jacobian_pattern());
        let pattern = jit.jacobian_pattern().expect("a pattern");
        let mut values = vec![f64::NAN; pattern.len()];
        let mut r = DVector::from_element(n, f64::NAN);
        assert!(jit.residual_jacobian_pattern(0.01, &e, &state.z, &x, &mut r, &mut values));
        assert!(!interp.residual_jacobian_pattern(0.01, &e, &state.z, &x, &mut r.clone(), &mut values.clone()));
        assert_eq!(bits(r.as_slice()), bits(ri.0.as_slice()), "{scheme}: residual");
        let mut rest = ri.1.clone();
        for (&(i, j), v) in pattern.iter().zip(&values) {
            let (i, j) = (i as usize, j as usize);
            assert_eq!(v.to_bits(), ri.1[(i, j)].to_bits(), "{scheme}: entry ({i}, {j})");
            rest[(i, j)] = 0.0;
        }
        assert!(rest.iter().all(|&a| a == 0.0), "{scheme}: an entry outside the pattern");

        // Whole steps: Newton's banded LU refactors the band-written matrix.
        // The JIT lends its LU a compiler, so its factorizations replay the
        // band's structural operations and soon run compiled; the
        // interpreter's, without one, eliminate the whole band (these bands
        // are nearly full). Both keep their pivots by the same rule: the
        // same pivots, factors and states.
        let (mut a, mut b) = (state.clone(), interp.initial("tilted").unwrap());
        let (mut sa, mut sb) = (
            DynStepper::new(&jit, 0.01).unwrap(),
            DynStepper::new(&interp, 0.01).unwrap(),
        );
        for _ in 0..300 {
            sa.step(&mut a).unwrap();
            sb.step(&mut b).unwrap();
            assert_eq!(bits(a.z.as_slice()), bits(b.z.as_slice()), "{scheme}: step {}", a.step);
        }
        assert!(sa.stats.factorizations >= 300, "{scheme}: {:?}", sa.stats);
        assert_eq!(sb.compiled_factorizations(), 0, "{scheme}");
        if hamel_jit::LU_COMPILED {
            let share = sa.compiled_factorizations() as f64 / sa.stats.factorizations as f64;
            assert!(share > 0.5, "{scheme}: {share} of the factorizations ran compiled");
        }
    }
}
