//! A large derived model steps on an ordinary thread's stack. Every step
//! once reserved, in its frame, room for a `Z × Z` linearization matrix
//! that only a linearized composed step fills (295 KB for this 32-link
//! chain's 192 state components; 4.7 MB at 128 links, and at 256 links a
//! step overflowed the main thread's 8 MB).

use hamel::{Integrator, Stepper};

#[derive(Integrator)]
#[hamel(
    model = "models/spherical_chain_cartesian.hamel",
    scheme = "rattle",
    sensitivity = false,
    N = 32
)]
pub struct Chain32 {
    pub m: f64,
    pub l: f64,
    pub g: f64,
}

/// Steps the chain on a thread with `kib` KiB of stack; a stack overflow
/// aborts the test binary, which fails the test run.
fn steps_on_a_stack_of(kib: usize) -> usize {
    std::thread::Builder::new()
        .stack_size(kib * 1024)
        .spawn(|| {
            let c = Chain32::with_defaults();
            let mut s = c.initial("tilted").unwrap();
            let mut st = Stepper::new(&c, 1e-3).unwrap();
            for _ in 0..20 {
                st.step(&mut s).unwrap();
            }
            s.step as usize
        })
        .unwrap()
        .join()
        .unwrap()
}

#[test]
fn a_32_link_derived_chain_steps_within_a_quarter_mebibyte_of_stack() {
    assert_eq!(steps_on_a_stack_of(STACK_KIB), 20);
}

const STACK_KIB: usize = 256;
