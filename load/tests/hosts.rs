//! The host API: one run loop (the runtime's `simulate_controlled` and the
//! loader's runs agree to the bit, a forced model's energy balance included),
//! a run a host stops keeps what it computed, member files, the thread bound
//! and a member's panic kept to that member.

use std::sync::atomic::AtomicBool;

use hamel_load::ensemble::{isolate, members_of, run_many_until, MemberError};
use hamel_load::run::{run_until, ENERGY_BALANCE};
use hamel_load::table::Table;
use hamel_load::{compile, read_model, run, Backend, Member, RunOptions, Schedule};
use hamel_runtime::{simulate_controlled, DynStepper};

fn model(name: &str) -> hamel_load::Model {
    let path = format!("{}/../models/{name}.hamel", env!("CARGO_MANIFEST_DIR"));
    read_model(path.as_ref(), &[]).unwrap()
}

fn options(h: f64, steps: u64) -> RunOptions {
    RunOptions {
        h,
        steps,
        compensated: false,
        record_every: 1,
        inputs: None,
        newton: Default::default(),
    }
}

#[test]
fn the_runtime_loop_and_the_loaders_runs_agree_to_the_bit_on_a_driven_model() {
    let sys = compile(
        &model("torque_driven_spherical_pendulum"),
        "hamel_midpoint".parse().unwrap(),
        Backend::Jit,
    )
    .unwrap();
    let (h, steps) = (0.05, 400);
    let names = ["tau"];
    let mut opt = options(h, steps);
    opt.inputs = Some(Schedule::from_assignments(&names, &["tau=0.5*sin(t)".into()]).unwrap());
    let loaded = run(&sys, sys.initial("published").unwrap(), None, &opt).unwrap();
    // The same schedule as feedback through the runtime's loop.
    let schedule = opt.inputs.clone().unwrap();
    let mut state = sys.initial("published").unwrap();
    let mut zs = Vec::new();
    let summary = simulate_controlled(
        DynStepper::new(&sys, h).unwrap(),
        &mut state,
        steps,
        |s, u| schedule.at(&names, s.step as f64 * h, h, u).unwrap(),
        |s| zs.push(s.z.clone()),
    )
    .unwrap();
    assert_eq!(zs.len() as u64, steps + 1);
    let (q, v) = sys.physical(&state.z, steps).unwrap();
    assert_eq!((&q, &v), (&loaded.q[steps as usize], &loaded.v[steps as usize]));
    // The monitored quantities, the energy balance among them, are the same numbers.
    assert_eq!(summary.monitor.reports(), loaded.monitor.reports());
    let balance = summary.monitor.get(ENERGY_BALANCE).unwrap();
    assert!(balance.max_rel_error < 1e-12, "{}", balance.max_rel_error);
    assert_eq!(summary.newton, loaded.newton);
}

#[test]
fn a_stopped_run_keeps_its_states_up_to_the_stop() {
    let sys = compile(
        &model("spherical_pendulum"),
        "hamel_averaged".parse().unwrap(),
        Backend::Jit,
    )
    .unwrap();
    let opt = options(0.1, 10_000);
    let full = run(&sys, sys.initial("published").unwrap(), None, &opt).unwrap();
    assert!(!full.stopped);
    // The host says stop at its third question (every 256 steps).
    let mut asked = Vec::new();
    let stopped = run_until(&sys, sys.initial("published").unwrap(), None, &opt, 0, None, &mut |k| {
        asked.push(k);
        asked.len() < 3
    })
    .unwrap();
    assert!(stopped.stopped);
    assert_eq!(asked, [256, 512, 768]);
    assert_eq!(stopped.options.steps, 768);
    assert_eq!(*stopped.steps.last().unwrap(), 768);
    // The states up to the stop are the full run's, to the bit.
    assert_eq!(stopped.q[..], full.q[..769]);
    assert_eq!(stopped.values[..], full.values[..769]);
}

#[test]
fn member_tables_refuse_duplicate_columns_and_name_bad_cells() {
    let params = ["g", "m"];
    let t = Table::parse("m.csv", "init,g,th'\npublished,9,0.5\n,,\n").unwrap();
    let members = members_of(&t, &params, &Member::default()).unwrap();
    assert_eq!(members[0].init.as_deref(), Some("published"));
    assert_eq!(members[0].params, [("g".to_string(), 9.0)]);
    assert_eq!(members[0].state, [("th'".to_string(), vec![0.5])]);
    assert_eq!(members[1], Member::default());
    let e = Table::parse("m.csv", "g,g\n1,2\n").unwrap_err();
    assert_eq!(e, "m.csv:1: column `g` appears twice (columns 1 and 2)");
    let t = Table::parse("m.csv", "g\nnan\n").unwrap();
    let e = members_of(&t, &params, &Member::default()).unwrap_err().to_string();
    assert_eq!(e, "m.csv:2: column `g`: `nan` is not a finite number");
}

#[test]
fn thread_counts_are_bounded_and_a_panicking_member_fails_alone() {
    let sys = compile(
        &model("spherical_pendulum"),
        "hamel_averaged".parse().unwrap(),
        Backend::Jit,
    )
    .unwrap();
    let members = vec![Member::default(); 2];
    let stop = AtomicBool::new(false);
    let most = hamel_load::ensemble::THREADS_PER_CORE * hamel_load::ensemble::cores();
    for n in [0, most + 1, 1_000_000] {
        let started = std::time::Instant::now();
        let e = run_many_until(&sys, &members, &options(0.1, 10), Some(n), &stop).unwrap_err();
        assert!(
            e.to_string().starts_with(&format!("{n} threads: give 1 to {most}")),
            "{e}"
        );
        assert!(started.elapsed().as_millis() < 100);
    }
    assert!(run_many_until(&sys, &members, &options(0.1, 10), Some(most), &stop).is_ok());
    let failed = isolate::<()>(|| panic!("a bug in member 3"));
    assert!(
        matches!(&failed, Err(MemberError::Panicked(m)) if m == "a bug in member 3"),
        "{failed:?}"
    );
    // A stop set before the members start: each comes back at its initial state, stopped.
    let stop = AtomicBool::new(true);
    let runs = run_many_until(&sys, &members, &options(0.1, 10), Some(1), &stop).unwrap();
    for r in runs {
        let r = r.unwrap();
        assert!(r.stopped && r.options.steps == 0 && r.steps == [0]);
    }
}
