//! Speed of whole steps, measured side by side in one run (medians of
//! interleaved rounds): the derived sphere step against a hand-written one
//! (`benches/yardstick.rs`: its own algorithm and loop) and against the same
//! model run through the JIT, every scheme on the double spherical pendulum
//! derived and through the JIT, and chains of N links.
//!
//! `cargo run --release --example speed` prints a table and, as its last
//! line, one JSON object. `SPEED_CHAIN_MAX=16` limits the sizes of the
//! director chain's averaged step, `SPEED_MIDPOINT_MAX=32` those of its
//! midpoint step, `SPEED_CARTESIAN_MAX=32` the maximal-coordinate chain's
//! (default 128 each).
//!
//! With `-- --write` it also saves that JSON, with the date, machine and load,
//! to `bench/speed/results.json` and renders README.md's speed tables from it
//! (`bench/speed/render.rs`; `tests/readme_speed.rs` checks that they agree);
//! `-- --render` renders them from the committed JSON without measuring.

use std::time::Instant;

use hamel::{DynStepper, Integrator, State, StepSystem, Stepper};
use hamel_load::{compile, read_model, Backend};

#[path = "../bench/speed/render.rs"]
mod render;
#[path = "../benches/yardstick.rs"]
mod yardstick;
use yardstick::{SphereState, Yardstick};

macro_rules! model {
    ($name:ident, [$($field:ident),*], $($key:ident = $val:literal),*) => {
        #[derive(Integrator)]
        #[hamel($($key = $val),*, sensitivity = false)]
        pub struct $name { $(pub $field: f64),* }
    };
}

model!(
    Sphere,
    [m, r, g],
    model = "models/spherical_pendulum.hamel",
    scheme = "hamel_averaged"
);
model!(
    DspHamel,
    [m1, m2, l1, l2, g],
    model = "models/double_spherical_pendulum.hamel",
    scheme = "hamel_averaged"
);
model!(
    DspMidpoint,
    [m1, m2, l1, l2, g],
    model = "models/double_spherical_pendulum.hamel",
    scheme = "hamel",
    kinematics = "midpoint"
);
model!(
    DspRattle,
    [m1, m2, l1, l2, g],
    model = "models/double_spherical_pendulum_cartesian.hamel",
    scheme = "rattle"
);
model!(
    DspEm,
    [m1, m2, l1, l2, g],
    model = "models/double_spherical_pendulum_cartesian.hamel",
    scheme = "energy_momentum"
);
model!(
    DspSv,
    [m1, m2, l1, l2, g],
    model = "models/double_spherical_pendulum_cartesian.hamel",
    scheme = "stormer_verlet"
);

type Boxed = Box<dyn std::error::Error>;

/// Median of the values.
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// ns per step of `steps` calls of `step` on `state`.
fn time_steps<T, E: Into<Boxed>>(
    steps: u64,
    state: &mut T,
    mut step: impl FnMut(&mut T) -> Result<(), E>,
) -> Result<f64, Boxed> {
    let t0 = Instant::now();
    for _ in 0..steps {
        step(state).map_err(Into::into)?;
    }
    let ns = t0.elapsed().as_nanos() as f64 / steps as f64;
    std::hint::black_box(state);
    Ok(ns)
}

/// ns per step of `steps` derived steps from `start`.
fn time_derived<S: StepSystem<NZ, NX>, const NZ: usize, const NX: usize>(
    sys: &S,
    start: State<NZ, NX>,
    h: f64,
    steps: u64,
) -> Result<f64, Boxed> {
    let mut stepper = Stepper::new(sys, h)?;
    time_steps(steps, &mut { start }, |s| stepper.step(s))
}

/// ns per step of `steps` run-time-sized steps of `sys` from `start`.
fn time_dynamic(sys: &hamel_load::System, start: &hamel::DynState, h: f64, steps: u64) -> Result<f64, Boxed> {
    let mut stepper = DynStepper::new(sys, h)?;
    time_steps(steps, &mut start.clone(), |s| stepper.step(s))
}

/// The model file `name` of `models/`, at size `n` where given.
fn model_file(name: &str, n: Option<usize>) -> Result<hamel_load::Model, Boxed> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/models/");
    let size: Vec<(String, i64)> = n.map(|n| ("N".to_string(), n as i64)).into_iter().collect();
    Ok(read_model(format!("{dir}{name}.hamel").as_ref(), &size)?)
}

/// Runs every contender once per round, `rounds` times, interleaved; returns
/// each one's median.
fn interleaved(rounds: usize, contenders: &mut [&mut dyn FnMut() -> Result<f64, Boxed>]) -> Result<Vec<f64>, Boxed> {
    let mut samples = vec![Vec::new(); contenders.len()];
    for _ in 0..rounds {
        for (i, c) in contenders.iter_mut().enumerate() {
            samples[i].push(c()?);
        }
    }
    Ok(samples.into_iter().map(median).collect())
}

/// A timed contender: one call, one median sample in ns per step.
type Contender<'a> = Box<dyn FnMut() -> Result<f64, Boxed> + 'a>;

/// Runs boxed contenders through [`interleaved`].
fn interleaved_boxed(rounds: usize, contenders: &mut [Contender]) -> Result<Vec<f64>, Boxed> {
    let mut refs: Vec<&mut dyn FnMut() -> Result<f64, Boxed>> = contenders
        .iter_mut()
        .map(|b| b.as_mut() as &mut dyn FnMut() -> Result<f64, Boxed>)
        .collect();
    interleaved(rounds, &mut refs)
}

fn main() -> Result<(), Boxed> {
    if std::env::args().any(|a| a == "--render") {
        // README.md's speed tables from the committed results, unmeasured.
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let results = std::fs::read_to_string(root.join("bench/speed/results.json"))?;
        return write_readme(&serde_json::from_str(&results)?);
    }
    let sphere = sphere()?;
    println!();
    let dsp = double_pendulum()?;
    println!();
    let chains = chains()?;
    let summary = summary(&sphere, &dsp, &chains);
    println!("{summary}");
    if std::env::args().any(|a| a == "--write") {
        write(summary)?;
    }
    Ok(())
}

/// Saves `summary` with the run's date, machine and load average to
/// `bench/speed/results.json` and renders README.md's speed tables from it.
fn write(mut summary: serde_json::Value) -> Result<(), Boxed> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let date = std::process::Command::new("date")
        .args(["-u", "+%Y-%m-%d"])
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map_or("?".into(), |d| d.trim().to_string());
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let load = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "?".into());
    summary["meta"] = serde_json::json!({
        "date": date,
        "machine": format!("{cpu}, {cores} cores"),
        "load_average": load,
    });
    let results = root.join("bench/speed/results.json");
    std::fs::write(&results, serde_json::to_string_pretty(&summary)? + "\n")?;
    println!("wrote {}", results.display());
    write_readme(&summary)
}

/// Renders README.md's speed tables from `summary`.
fn write_readme(summary: &serde_json::Value) -> Result<(), Boxed> {
    let readme_path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md");
    let readme = std::fs::read_to_string(&readme_path)?;
    let old = render::section(&readme).ok_or("README.md has no speed section markers")?;
    let readme = readme.replacen(old, &render::render(summary), 1);
    std::fs::write(&readme_path, readme)?;
    println!("wrote README.md's speed tables");
    Ok(())
}

/// The sphere's step times (derived, hand-written, JIT) and whether the JIT
/// gives the derived step's states to the bit.
struct SphereTimes {
    ns: Vec<f64>,
    same_bits: bool,
}

/// The derived sphere step against the hand-written one and against the
/// JIT; prints its table.
fn sphere() -> Result<SphereTimes, Boxed> {
    let (h, steps) = (0.2, 10_000u64);
    let sphere = Sphere::with_defaults();
    let start = sphere.initial("published")?;
    let yard = Yardstick::new(sphere.r, sphere.g, h);
    let ystart = SphereState {
        gamma: [start.z[0], start.z[1], start.z[2]],
        xi: [start.z[3], start.z[4]],
    };
    // Same map: the two agree to round-off over the run.
    let mut a = start;
    let mut st = sphere.stepper(h)?;
    let mut b = ystart;
    let mut worst = 0.0f64;
    for _ in 0..steps {
        st.step(&mut a)?;
        yard.step(&mut b).ok_or("yardstick diverged")?;
        for i in 0..3 {
            worst = worst.max((a.z[i] - b.gamma[i]).abs());
        }
    }
    let mut gen = || time_derived(&sphere, start, h, steps);
    let mut hand = || {
        time_steps(steps, &mut { ystart }, |s| {
            yard.step(s).map(|_| ()).ok_or("yardstick diverged")
        })
    };
    // The same model through the JIT: the same states, to the bit.
    let sphere_jit = compile(
        &model_file("spherical_pendulum", None)?,
        "hamel_averaged".parse()?,
        Backend::Jit,
    )?;
    let jstart = sphere_jit.initial("published")?;
    let same_bits = {
        let (mut a, mut b) = (start, jstart.clone());
        let (mut sa, mut sb) = (sphere.stepper(h)?, DynStepper::new(&sphere_jit, h)?);
        (0..steps).all(|_| {
            sa.step(&mut a).is_ok()
                && sb.step(&mut b).is_ok()
                && a.z.iter().zip(b.z.iter()).all(|(x, y)| x.to_bits() == y.to_bits())
        })
    };
    let mut jit = || time_dynamic(&sphere_jit, &jstart, h, steps);
    let sphere_ns = interleaved(9, &mut [&mut gen, &mut hand, &mut jit])?;
    println!("Spherical pendulum, averaged Hamel, h = {h}, {steps} steps (medians of 9 interleaved rounds)");
    println!("  derived step      {:>9.0} ns", sphere_ns[0]);
    println!(
        "  hand-written step {:>9.0} ns   (ratio {:.2}; states agree to {worst:.1e})",
        sphere_ns[1],
        sphere_ns[0] / sphere_ns[1]
    );
    println!(
        "  JIT step          {:>9.0} ns   (JIT / derived {:.2}; same bits: {same_bits})",
        sphere_ns[2],
        sphere_ns[2] / sphere_ns[0]
    );
    Ok(SphereTimes {
        ns: sphere_ns,
        same_bits,
    })
}

/// The double spherical pendulum's schemes, in the order of [`DSP_SCHEMES`].
const DSP_SCHEMES: [&str; 5] = [
    "hamel_averaged",
    "hamel_midpoint",
    "rattle",
    "energy_momentum",
    "stormer_verlet",
];

/// Step times of every scheme on the double spherical pendulum, derived and
/// through the JIT, in the order of [`DSP_SCHEMES`].
struct DspTimes {
    derived: Vec<f64>,
    jit: Vec<f64>,
}

/// Every scheme on the double spherical pendulum, derived and through the
/// JIT; prints its table.
fn double_pendulum() -> Result<DspTimes, Boxed> {
    let (h, steps) = (0.01, 2000u64);
    let dh = DspHamel::with_defaults();
    let dm = DspMidpoint::with_defaults();
    let dr = DspRattle::with_defaults();
    let de = DspEm::with_defaults();
    let ds = DspSv::with_defaults();
    let (sh, sm, sr, se, ss) = (
        dh.initial("pattern_I")?,
        dm.initial("pattern_I")?,
        dr.initial("pattern_I")?,
        de.initial("pattern_I")?,
        ds.initial("pattern_I")?,
    );
    // The same five through the JIT.
    let (director, maximal) = (
        model_file("double_spherical_pendulum", None)?,
        model_file("double_spherical_pendulum_cartesian", None)?,
    );
    let mut jits = Vec::new();
    for (i, scheme) in DSP_SCHEMES.iter().enumerate() {
        let sys = compile(if i < 2 { &director } else { &maximal }, scheme.parse()?, Backend::Jit)?;
        let start = sys.initial("pattern_I")?;
        jits.push((sys, start));
    }
    let mut contenders: Vec<Contender> = vec![
        Box::new(|| time_derived(&dh, sh, h, steps)),
        Box::new(|| time_derived(&dm, sm, h, steps)),
        Box::new(|| time_derived(&dr, sr, h, steps)),
        Box::new(|| time_derived(&de, se, h, steps)),
        Box::new(|| time_derived(&ds, ss, h, steps)),
    ];
    contenders.extend(
        jits.iter()
            .map(|(sys, start)| Box::new(move || time_dynamic(sys, start, h, steps)) as Contender),
    );
    let both = interleaved_boxed(7, &mut contenders)?;
    let (dsp, dsp_jit) = both.split_at(5);
    println!("Double spherical pendulum, Pattern I, h = {h}, {steps} steps (medians of 7 interleaved rounds)");
    println!("  {:<16} {:>9} {:>9} {:>14}", "", "derived", "JIT", "JIT / derived");
    for ((name, ns), jit) in DSP_SCHEMES.iter().zip(dsp).zip(dsp_jit) {
        println!("  {name:<16} {ns:>6.0} ns {jit:>6.0} ns {:>14.2}", jit / ns);
    }
    Ok(DspTimes {
        derived: dsp.to_vec(),
        jit: dsp_jit.to_vec(),
    })
}

/// The chain sizes timed.
const CHAIN_SIZES: [usize; 7] = [2, 4, 8, 16, 32, 64, 128];
/// The schemes timed on the chain in maximal coordinates.
const CARTESIAN: [&str; 3] = ["rattle", "stormer_verlet", "energy_momentum"];

/// Step times of the chains, one entry per size of [`CHAIN_SIZES`] (`None`:
/// not timed at that size).
struct Chains {
    /// director form, averaged Hamel (a sparse tableau from 6 links on)
    hamel_ns: Vec<Option<f64>>,
    /// Newton iterations per step of each of `render::CHAIN_SCHEMES`, per size
    iterations: Vec<Vec<Option<f64>>>,
    /// and the factorizations they took
    factorizations: Vec<Vec<Option<f64>>>,
    /// the same schemes' good steps of the check (see [`CHECKED`]), per size
    lasts: Vec<Vec<Option<u64>>>,
    /// the steps checked, per size (`None`: none timed)
    horizons: Vec<Option<u64>>,
    /// its exponent over 16 … the largest size timed
    averaged_exponent: Option<f64>,
    /// director form, midpoint Hamel (a sparse tableau from 6 links on)
    midpoint_ns: Vec<Option<f64>>,
    /// its exponent over 16 … 128
    midpoint_exponent: Option<f64>,
    /// maximal coordinates, the schemes of [`CARTESIAN`]
    cartesian_ns: Vec<[Option<f64>; 3]>,
    /// the fastest scheme at each size, and its time
    fastest: Vec<Option<(f64, &'static str)>>,
    /// exponent `p` of step time ∝ N^p over 16 … 128, per scheme of [`CARTESIAN`]
    exponents: Vec<Option<f64>>,
    /// the same for the fastest form at each size
    fastest_exponent: Option<f64>,
}

/// Chains of N links through the JIT: director Hamel (spherical_chain.hamel)
/// and, in maximal coordinates (spherical_chain_cartesian.hamel), RATTLE,
/// Störmer–Verlet and energy–momentum, whose multiplier systems are banded.
/// Prints its table and the fitted exponents.
fn chains() -> Result<Chains, Boxed> {
    let env = |name: &str, default: usize| -> usize {
        std::env::var(name).ok().and_then(|s| s.parse().ok()).unwrap_or(default)
    };
    let (max_averaged, max_midpoint, max_cartesian) = (
        env("SPEED_CHAIN_MAX", 128),
        env("SPEED_MIDPOINT_MAX", 128),
        env("SPEED_CARTESIAN_MAX", 128),
    );
    let mut hamel_ns: Vec<Option<f64>> = Vec::new();
    let mut midpoint_ns: Vec<Option<f64>> = Vec::new();
    let mut cartesian_ns: Vec<[Option<f64>; 3]> = Vec::new();
    let mut fastest: Vec<Option<(f64, &str)>> = Vec::new();
    // Newton iterations per step, per scheme (in `render::CHAIN_SCHEMES`
    // order), per size.
    let mut iterations: Vec<Vec<Option<f64>>> = vec![Vec::new(); render::CHAIN_SCHEMES.len()];
    let mut factorizations: Vec<Vec<Option<f64>>> = vec![Vec::new(); render::CHAIN_SCHEMES.len()];
    let mut lasts: Vec<Vec<Option<u64>>> = vec![Vec::new(); render::CHAIN_SCHEMES.len()];
    let mut horizons: Vec<Option<u64>> = Vec::new();
    println!("Spherical chain, h = 0.01, JIT back-end, ns/step (medians of 5 interleaved rounds)");
    println!(
        "  {:>3} {:>12} {:>12} {:>12} {:>14} {:>16} {:>9}",
        "N", "hamel_averaged", "hamel_mid", "rattle", "stormer_verlet", "energy_momentum", "prep s"
    );
    // Every size's contenders are timed in the same rounds: a phase of the
    // machine (they last seconds to minutes) then slows all sizes alike
    // instead of the sizes it happened to fall on, which tilted the fitted
    // exponent (two runs minutes apart, sizes timed one after another: the
    // averaged chain's 1.11 and 1.30).
    let sets = CHAIN_SIZES
        .iter()
        .filter(|&&n| n <= max_cartesian)
        .map(|&n| prepare_chain(n, [n <= max_averaged, n <= max_midpoint]))
        .collect::<Result<Vec<_>, _>>()?;
    let mut timed = time_chains(&sets)?.into_iter();
    for &n in &CHAIN_SIZES {
        if n > max_cartesian {
            hamel_ns.push(None);
            midpoint_ns.push(None);
            cartesian_ns.push([None; 3]);
            fastest.push(None);
            iterations.iter_mut().for_each(|row| row.push(None));
            factorizations.iter_mut().for_each(|row| row.push(None));
            lasts.iter_mut().for_each(|row| row.push(None));
            horizons.push(None);
            continue;
        }
        let (names, ns, its, good) = timed.next().ok_or("a size not timed")?;
        let time_of = |name: &str| names.iter().position(|&s| s == name).map(|k| ns[k]);
        for (((row, factored), lasted), (scheme, _)) in iterations
            .iter_mut()
            .zip(&mut factorizations)
            .zip(&mut lasts)
            .zip(render::CHAIN_SCHEMES)
        {
            let k = names.iter().position(|&s| s == scheme);
            row.push(k.map(|k| its[k].0));
            factored.push(k.map(|k| its[k].1));
            lasted.push(k.map(|k| good[k]));
        }
        horizons.push(Some(CHECKED));
        hamel_ns.push(time_of("hamel_averaged"));
        midpoint_ns.push(time_of("hamel_midpoint"));
        let cart = &ns[ns.len() - 3..];
        cartesian_ns.push([Some(cart[0]), Some(cart[1]), Some(cart[2])]);
        let best = (0..ns.len()).min_by(|&a, &b| ns[a].total_cmp(&ns[b])).expect("schemes");
        fastest.push(Some((ns[best], names[best])));
    }
    // Step time against N over 16 … 128: the exponent of each Cartesian
    // scheme, and of the fastest form at each size.
    let fit = |f: &dyn Fn(usize) -> Option<f64>| {
        render::fitted_exponent(
            &CHAIN_SIZES
                .iter()
                .enumerate()
                .filter(|&(_, &n)| n >= 16)
                .filter_map(|(i, &n)| Some((n, f(i)?)))
                .collect::<Vec<_>>(),
        )
    };
    let exponents: Vec<Option<f64>> = (0..CARTESIAN.len()).map(|k| fit(&|i| cartesian_ns[i][k])).collect();
    let fastest_exponent = fit(&|i| fastest[i].map(|(ns, _)| ns));
    let midpoint_exponent = fit(&|i| midpoint_ns[i]);
    let averaged_exponent = fit(&|i| hamel_ns[i]);
    println!(
        "  step time ∝ N^p over N = 16 … 128: hamel_averaged p = {} (to N = {max_averaged}), hamel_midpoint p = {}, rattle p = {}, stormer_verlet p = {}, energy_momentum p = {}, fastest p = {}",
        averaged_exponent.map_or("-".into(), |p| format!("{p:.2}")),
        midpoint_exponent.map_or("-".into(), |p| format!("{p:.2}")),
        exponents[0].map_or("-".into(), |p| format!("{p:.2}")),
        exponents[1].map_or("-".into(), |p| format!("{p:.2}")),
        exponents[2].map_or("-".into(), |p| format!("{p:.2}")),
        fastest_exponent.map_or("-".into(), |p| format!("{p:.2}")),
    );
    Ok(Chains {
        hamel_ns,
        iterations,
        factorizations,
        lasts,
        horizons,
        averaged_exponent,
        midpoint_ns,
        midpoint_exponent,
        cartesian_ns,
        fastest,
        exponents,
        fastest_exponent,
    })
}

/// The chains' initial state: a hanging chain swaying, alike at every N
/// (links within 0.5 rad of the vertical, angular speeds bounded). The
/// files' first state, `tilted`, is a motion that grows with N (link i
/// turns at 0.8 − 0.1 i rad/s): at h = 0.01 every 128-link run from it stops at
/// steps 52–58, the averaged one at step 10, and a step time measured there
/// is that of a run failing.
const CHAIN_INITIAL: &str = "sway";

/// Steps a round of a chain times, at every N: one second of the motion,
/// the same steps of it at every size (a round of 4000 / N steps weighed
/// the first steps, where the predictor knows no past and Newton takes up
/// to 5 iterations, more at large N).
const TIMED: u64 = 100;

/// Names, ns per step, Newton iterations and factorizations per step and
/// good steps of the check (see [`CHECKED`]) of the schemes timed.
type ChainTimes = (Vec<&'static str>, Vec<f64>, Vec<(f64, f64)>, Vec<u64>);

/// Steps (10 s at h = 0.01) a chain's run from [`CHAIN_INITIAL`] is checked
/// over besides those timed: a time is of a run that resolves its motion
/// only where the run goes on.
const CHECKED: u64 = 1000;

/// The chain of `n` links under each scheme, compiled for the JIT, with its
/// initial state: what [`time_chains`] times.
struct ChainSet {
    n: usize,
    /// the schemes, the director ones first
    names: Vec<&'static str>,
    systems: Vec<hamel_load::System>,
    starts: Vec<hamel::DynState>,
    /// seconds of derivation and compilation
    prep: f64,
}

/// The chain of `n` links under each scheme (the director ones first, the
/// averaged and the midpoint one where `director` says).
fn prepare_chain(n: usize, director: [bool; 2]) -> Result<ChainSet, Boxed> {
    let t0 = Instant::now();
    let maximal = model_file("spherical_chain_cartesian", Some(n))?;
    let mut systems = Vec::new();
    if director.contains(&true) {
        let model = model_file("spherical_chain", Some(n))?;
        for (scheme, wanted) in ["hamel_averaged", "hamel_midpoint"].into_iter().zip(director) {
            if wanted {
                systems.push((scheme, compile(&model, scheme.parse()?, Backend::Jit)?));
            }
        }
    }
    for s in CARTESIAN {
        systems.push((s, compile(&maximal, s.parse()?, Backend::Jit)?));
    }
    let prep = t0.elapsed().as_secs_f64();
    let starts = systems
        .iter()
        .map(|(_, sys)| sys.initial(CHAIN_INITIAL))
        .collect::<Result<Vec<_>, _>>()?;
    let (names, systems) = systems.into_iter().unzip();
    Ok(ChainSet {
        n,
        names,
        systems,
        starts,
        prep,
    })
}

/// Times every set's schemes in the same interleaved rounds; per set, in
/// order: names, step times, iterations and good steps; prints the rows.
fn time_chains(sets: &[ChainSet]) -> Result<Vec<ChainTimes>, Boxed> {
    let steps = TIMED;
    // One stepper serves every round of its contender, as it serves every
    // trajectory a user runs with it: what is timed is the step, not the
    // set-up. (Its first factorization records the sparse LU's operations,
    // which later ones replay: in the first round only, which the median
    // leaves out. A new stepper per round made that recording, amortized
    // over a round's steps, part of the large chains' step: 64-link director
    // chain 75 against 65 µs.)
    let mut steppers = sets
        .iter()
        .map(|set| {
            set.systems
                .iter()
                .map(|sys| DynStepper::new(sys, 0.01))
                .collect::<Result<Vec<_>, _>>()
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut runs: Vec<Contender> = steppers
        .iter_mut()
        .zip(sets)
        .flat_map(|(steppers, set)| {
            steppers.iter_mut().zip(&set.starts).map(move |(stepper, start)| {
                Box::new(move || time_steps(steps, &mut start.clone(), |s| stepper.step(s))) as Contender
            })
        })
        .collect();
    let mut all_ns = interleaved_boxed(5, &mut runs)?.into_iter();
    drop(runs);
    let mut out = Vec::new();
    for (set, steppers) in sets.iter().zip(&steppers) {
        let ns: Vec<f64> = all_ns.by_ref().take(set.systems.len()).collect();
        // Newton iterations per step over every round: what a step's time is
        // made of besides its size (a long chain is stiffer, and at a fixed h
        // Newton needs more iterations).
        let iterations: Vec<(f64, f64)> = steppers
            .iter()
            .map(|st| {
                let steps = st.stats.steps.max(1) as f64;
                (
                    st.stats.iterations as f64 / steps,
                    st.stats.factorizations as f64 / steps,
                )
            })
            .collect();
        // How far each run goes with a fresh stepper.
        let horizon = CHECKED;
        let lasts: Vec<u64> = set
            .systems
            .iter()
            .zip(&set.starts)
            .map(|(sys, start)| {
                let mut stepper = DynStepper::new(sys, 0.01)?;
                let mut s = start.clone();
                let good = (0..horizon).take_while(|_| stepper.step(&mut s).is_ok()).count();
                Ok(good as u64)
            })
            .collect::<Result<_, Boxed>>()?;
        let (n, names) = (set.n, &set.names);
        for (name, &good) in names.iter().zip(&lasts).filter(|&(_, &good)| good < horizon) {
            println!("  ({name} at N = {n} fails at step {good} of {horizon})");
        }
        let cell = |name: &str| {
            names
                .iter()
                .position(|&s| s == name)
                .map_or("-".to_string(), |k| format!("{:.0}", ns[k]))
        };
        println!(
            "  {n:>3} {:>12} {:>12} {:>12} {:>14} {:>16} {:>9.1}",
            cell("hamel_averaged"),
            cell("hamel_midpoint"),
            cell("rattle"),
            cell("stormer_verlet"),
            cell("energy_momentum"),
            set.prep
        );
        out.push((names.clone(), ns, iterations, lasts));
    }
    Ok(out)
}

/// Rows of `render::CHAIN_SCHEMES`, in order, as an object keyed by scheme.
fn by_scheme<R: Into<serde_json::Value>>(rows: Vec<R>) -> serde_json::Map<String, serde_json::Value> {
    render::CHAIN_SCHEMES
        .iter()
        .zip(rows)
        .map(|((s, _), row)| (s.to_string(), row.into()))
        .collect()
}

/// The one JSON object the run ends with.
fn summary(sphere: &SphereTimes, dsp: &DspTimes, chains: &Chains) -> serde_json::Value {
    let (sphere_ns, same_bits) = (&sphere.ns, sphere.same_bits);
    let (dsp, dsp_jit) = (&dsp.derived, &dsp.jit);
    let Chains {
        hamel_ns,
        iterations,
        factorizations,
        lasts,
        horizons,
        averaged_exponent,
        midpoint_ns,
        midpoint_exponent,
        cartesian_ns,
        fastest,
        exponents,
        fastest_exponent,
    } = chains;
    let fastest_scheme = fastest.iter().rev().flatten().next().map(|(_, s)| *s);
    let column = |k: usize| cartesian_ns.iter().map(|c| c[k]).collect::<Vec<_>>();
    serde_json::json!({
        "sphere": {
            "generated_ns": sphere_ns[0], "hand_written_ns": sphere_ns[1],
            "jit_ns": sphere_ns[2], "jit_over_derived": sphere_ns[2] / sphere_ns[0], "jit_same_bits": same_bits,
        },
        "dsp": {
            "hamel_ns": dsp[0], "hamel_midpoint_ns": dsp[1], "rattle_ns": dsp[2],
            "energy_momentum_ns": dsp[3], "stormer_verlet_ns": dsp[4],
            "jit": {
                "hamel_ns": dsp_jit[0], "hamel_midpoint_ns": dsp_jit[1], "rattle_ns": dsp_jit[2],
                "energy_momentum_ns": dsp_jit[3], "stormer_verlet_ns": dsp_jit[4],
            },
            "jit_over_derived": {
                "hamel": dsp_jit[0] / dsp[0], "hamel_midpoint": dsp_jit[1] / dsp[1], "rattle": dsp_jit[2] / dsp[2],
                "energy_momentum": dsp_jit[3] / dsp[3], "stormer_verlet": dsp_jit[4] / dsp[4],
            },
        },
        "chain": {
            "sizes": CHAIN_SIZES,
            "hamel_ns": hamel_ns,
            "hamel_midpoint_ns": midpoint_ns,
            "rattle_ns": column(0),
            "stormer_verlet_ns": column(1),
            "energy_momentum_ns": column(2),
            "exponent_16_128": {
                "hamel_averaged": averaged_exponent,
                "hamel_midpoint": midpoint_exponent,
                "rattle": exponents[0], "stormer_verlet": exponents[1], "energy_momentum": exponents[2],
                "fastest": fastest_exponent,
            },
            "iterations_per_step": by_scheme(iterations.clone()),
            "factorizations_per_step": by_scheme(factorizations.clone()),
            "initial": CHAIN_INITIAL,
            "timed_steps": TIMED,
            "sizes_interleaved": true,
            "checked_steps": horizons,
            "good_steps": by_scheme(lasts.clone()),
            "fastest_ns": fastest.iter().map(|f| f.map(|(ns, _)| ns)).collect::<Vec<_>>(),
            "fastest_scheme": fastest_scheme,
            "fastest_scheme_per_size": fastest.iter().map(|f| f.map(|(_, s)| s)).collect::<Vec<_>>(),
            "backend": "jit",
            "models": ["spherical_chain.hamel (hamel, hamel_midpoint)", "spherical_chain_cartesian.hamel (rattle, stormer_verlet, energy_momentum)"],
        },
    })
}
