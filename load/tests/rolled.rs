//! A long chain's kernels run as loops through the JIT (one copy of a
//! link's instructions, iterated; `hamel_kernel::Rolled`), and step to the
//! interpreter's bits: the loop computes the program's own instructions on
//! its own registers, in another order.

use hamel_load::{compile_with, read_model, Backend, System, TableauChoice};
use hamel_runtime::DynStepper;

fn chain(model: &str, scheme: &str, n: i64, backend: Backend) -> System {
    let path = format!("{}/../models/{model}.hamel", env!("CARGO_MANIFEST_DIR"));
    let model = read_model(path.as_ref(), &[("N".into(), n)]).unwrap();
    compile_with(&model, scheme.parse().unwrap(), backend, TableauChoice::Auto).unwrap()
}

#[test]
fn long_chains_step_as_loops_to_the_interpreter_s_bits() {
    for (model, scheme, n, body) in [
        ("spherical_chain", "hamel_midpoint", 12, 500..600),
        ("spherical_chain", "hamel_averaged", 12, 600..700),
        ("spherical_chain_cartesian", "energy_momentum", 40, 60..100),
        ("spherical_chain_cartesian", "rattle", 40, 90..110),
        ("spherical_chain_cartesian", "stormer_verlet", 40, 190..220),
    ] {
        let jit = chain(model, scheme, n, Backend::Jit);
        let interp = chain(model, scheme, n, Backend::Interpreter);
        // Every link but the few at the ends, whose instructions differ
        // (the pivot's, the free end's), is an iteration of the loop.
        let (count, len) = jit.jacobian_loop().expect("the Jacobian kernel runs as a loop");
        if scheme == "hamel_averaged" {
            // Its terms that read the first loop's sums over all links run
            // as a second loop.
            let loops = jit.jacobian_loops().unwrap_or_default();
            assert!(loops.len() >= 2 && loops[1].0 as i64 >= n - 6, "{loops:?}");
        }
        assert!(
            count as i64 >= n - 6 && body.contains(&len),
            "{scheme} N = {n}: {count} × {len}"
        );
        assert_eq!(interp.jacobian_loop(), None);
        let (mut a, mut b) = (jit.initial("tilted").unwrap(), interp.initial("tilted").unwrap());
        let (mut sa, mut sb) = (
            DynStepper::new(&jit, 0.01).unwrap(),
            DynStepper::new(&interp, 0.01).unwrap(),
        );
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        for _ in 0..30 {
            sa.step(&mut a).unwrap();
            sb.step(&mut b).unwrap();
            assert_eq!(
                bits(a.z.as_slice()),
                bits(b.z.as_slice()),
                "{scheme} N = {n}, step {}",
                a.step
            );
        }
    }
}
