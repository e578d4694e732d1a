//! Step time of the maximal-coordinate chain under RATTLE at h = 1e-3 from
//! `tilted` (issue 27), side by side: `cargo run --release --example
//! chain_profile [N…]` prints, per size, the unknowns and band Newton
//! solves, the median ns per step over interleaved rounds of 2000 steps, the
//! Newton iterations and factorizations per step, and the fitted exponent
//! (`ROUNDS`, default 7).
//! `TRACE=1` instead prints the largest size's iterations step by step.
//! `SPIN=seconds` instead steps the largest size for that long (for `perf`),
//! one stepper for every round.
//! `MODEL=spherical_chain SCHEME=hamel` profiles another chain model and
//! scheme (default `spherical_chain_cartesian`, `rattle`); `H` the step size,
//! `STEPS` the steps per round (`STEPS=speed`: 100 from `sway` unless
//! `INITIAL` says otherwise, and one
//! stepper per size kept across rounds, as `examples/speed.rs` times them); `UNKNOWNS=1` lists the unknowns in order; `TABLEAU=keep|substitute` overrides the
//! choice of a sparse tableau (default by size); `INITIAL` names the model's
//! initial state (default `tilted`, `sway` with `STEPS=speed`).
//! `KERNEL=1` instead times the residual-and-Jacobian kernel alone, per
//! size (ns per call and per operation): what the kernel costs apart
//! from the LU and the driver.

use std::time::Instant;

use hamel::{DynStepper, Kernels};
use hamel_load::{compile_with, read_model, Backend, TableauChoice};

type Boxed = Box<dyn std::error::Error>;

fn main() -> Result<(), Boxed> {
    let sizes: Vec<usize> = std::env::args().skip(1).map(|s| s.parse()).collect::<Result<_, _>>()?;
    let sizes = if sizes.is_empty() { vec![16, 32, 64, 128] } else { sizes };
    let h: f64 = std::env::var("H").ok().and_then(|h| h.parse().ok()).unwrap_or(1e-3);
    let speed_like = std::env::var("STEPS").as_deref() == Ok("speed");
    let steps: u64 = std::env::var("STEPS").ok().and_then(|s| s.parse().ok()).unwrap_or(2000);
    let steps_of = |_: usize| if speed_like { 100 } else { steps };
    let rounds: usize = std::env::var("ROUNDS").ok().and_then(|r| r.parse().ok()).unwrap_or(7);
    let model_name = std::env::var("MODEL").unwrap_or_else(|_| "spherical_chain_cartesian".into());
    let scheme = std::env::var("SCHEME").unwrap_or_else(|_| "rattle".into());
    let init = std::env::var("INITIAL").unwrap_or_else(|_| if speed_like { "sway" } else { "tilted" }.into());
    let path = format!("{}/models/{model_name}.hamel", env!("CARGO_MANIFEST_DIR"));
    let mut systems = Vec::new();
    for &n in &sizes {
        let t0 = Instant::now();
        let model = read_model(path.as_ref(), &[("N".to_string(), n as i64)])?;
        let tableau = match std::env::var("TABLEAU").as_deref() {
            Ok("keep") => TableauChoice::Keep,
            Ok("substitute") => TableauChoice::Substitute,
            _ => TableauChoice::Auto,
        };
        let sys = compile_with(&model, scheme.parse()?, Backend::Jit, tableau)?;
        let compile_s = t0.elapsed().as_secs_f64();
        let c = sys.compiled();
        println!(
            "N = {n:>3}: {} unknowns, band {:?}, state {}, kernel ops (residual, residual+Jacobian) {:?}{}, compiled in {compile_s:.1} s",
            c.unknowns.len(),
            c.band,
            c.state.len(),
            sys.kernel_ops(),
            sys.jacobian_loops().map_or(String::new(), |loops| {
                let each: Vec<String> = loops.iter().map(|(k, len)| format!("{k} × {len}")).collect();
                format!(" (loops of {})", each.join(", then "))
            })
        );
        if std::env::var_os("UNKNOWNS").is_some() {
            println!("  unknowns in order: {}", c.unknowns.join(" "));
        }
        systems.push(sys);
    }
    if std::env::var_os("TRACE").is_some() {
        let sys = systems.last().ok_or("no size")?;
        let mut st = DynStepper::new(sys, h)?;
        let mut s = sys.initial(&init)?;
        for k in 0..steps_of(*sizes.last().ok_or("no size")?) {
            let (i0, f0) = (st.stats.iterations, st.stats.factorizations);
            st.step(&mut s)?;
            println!(
                "step {k:>4}: {} iterations, {} factorizations",
                st.stats.iterations - i0,
                st.stats.factorizations - f0
            );
        }
        return Ok(());
    }
    if let Ok(secs) = std::env::var("SPIN") {
        let secs: f64 = secs.parse()?;
        let sys = systems.last().ok_or("no size")?;
        let start = sys.initial(&init)?;
        let t0 = Instant::now();
        let mut total = 0u64;
        // One stepper, as the speed table keeps one: what is profiled is the
        // step, not the recording and compiling of a new stepper's LU.
        let mut st = DynStepper::new(sys, h)?;
        while t0.elapsed().as_secs_f64() < secs {
            let mut s = start.clone();
            for _ in 0..steps {
                st.step(&mut s)?;
            }
            total += steps;
        }
        println!(
            "{} steps, {:.0} ns/step",
            total,
            t0.elapsed().as_nanos() as f64 / total as f64
        );
        return Ok(());
    }
    if std::env::var_os("KERNEL").is_some() {
        for (sys, &n) in systems.iter().zip(&sizes) {
            kernel_time(sys, n, h, &init)?;
        }
        return Ok(());
    }
    let mut samples = vec![Vec::new(); sizes.len()];
    let mut stats = vec![(0.0, 0.0); sizes.len()];
    let mut cpu = vec![Vec::new(); sizes.len()];
    // One stepper per size across rounds where the speed example's way is
    // asked; else a fresh one each round.
    let mut kept = if speed_like {
        systems
            .iter()
            .map(|sys| DynStepper::new(sys, h))
            .collect::<Result<Vec<_>, _>>()?
    } else {
        Vec::new()
    };
    for _ in 0..rounds {
        for (k, sys) in systems.iter().enumerate() {
            let steps = steps_of(sizes[k]);
            let mut fresh;
            let st = if speed_like {
                &mut kept[k]
            } else {
                fresh = DynStepper::new(sys, h)?;
                &mut fresh
            };
            let mut s = sys.initial(&init)?;
            let (t0, c0) = (Instant::now(), cpu_ns());
            for _ in 0..steps {
                st.step(&mut s)?;
            }
            samples[k].push(t0.elapsed().as_nanos() as f64 / steps as f64);
            cpu[k].push((cpu_ns() - c0) as f64 / steps as f64);
            let n = st.stats.steps as f64;
            stats[k] = (st.stats.iterations as f64 / n, st.stats.factorizations as f64 / n);
            std::hint::black_box(&s);
        }
    }
    // The median, as asked; and the fastest round, which a loaded machine
    // (other builds on its cores) cannot make faster, only slower.
    let mut medians = Vec::new();
    let mut fastest = Vec::new();
    let mut on_cpu = Vec::new();
    for (k, &n) in sizes.iter().enumerate() {
        let mut v = samples[k].clone();
        v.sort_by(f64::total_cmp);
        let (med, min) = (v[v.len() / 2], v[0]);
        let mut c = cpu[k].clone();
        c.sort_by(f64::total_cmp);
        let cmed = c[c.len() / 2];
        println!(
            "N = {n:>3}: {med:>9.0} ns/step median, {min:>9.0} fastest, {cmed:>9.0} on the CPU (median)  ({:.3} iterations, {:.3} factorizations per step)",
            stats[k].0, stats[k].1
        );
        medians.push((n, med));
        fastest.push((n, min));
        on_cpu.push((n, cmed));
    }
    if let (Some(a), Some(b), Some(c)) = (exponent(&medians), exponent(&fastest), exponent(&on_cpu)) {
        println!("exponent over N ≥ 16: {a:.2} (medians), {b:.2} (fastest rounds), {c:.2} (CPU time medians)");
    }
    // From `tilted` the outer links turn faster as N grows, so at a fixed h
    // the predictor errs more and Newton takes more iterations: the time per
    // iteration is what the step's arithmetic costs.
    let per_iteration: Vec<(usize, f64)> = medians
        .iter()
        .zip(&stats)
        .map(|(&(n, t), &(it, _))| (n, t / it.max(1.0)))
        .collect();
    if let (Some(a), Some(b)) = (exponent(&per_iteration), exponent(&stats_points(&sizes, &stats))) {
        println!("exponent over N ≥ 16 of the time per Newton iteration: {a:.2}; of the iterations per step: {b:.2}");
    }
    Ok(())
}

/// Times the residual-and-Jacobian kernel at the predictor of the state
/// `init`, in rounds, and prints the median per call and per operation.
fn kernel_time(sys: &hamel_load::System, n: usize, h: f64, init: &str) -> Result<(), Boxed> {
    use nalgebra::DVector;
    let s = sys.initial(init)?;
    let (_, xd) = sys.dims();
    let mut x = DVector::zeros(xd.0);
    let zeros = x.clone();
    sys.predict(h, &[], &s.z, &zeros, &mut x);
    let mut r = DVector::zeros(xd.0);
    let Some(pattern) = sys.jacobian_pattern() else {
        println!("N = {n:>3}: no sparse pattern");
        return Ok(());
    };
    let mut values = vec![0.0; pattern.len()];
    let ops = sys.kernel_ops().map_or(0, |o| o.1);
    let reps = (2_000_000 / ops.max(1)).max(10);
    let mut rounds = Vec::new();
    for _ in 0..9 {
        let t0 = Instant::now();
        for _ in 0..reps {
            sys.residual_jacobian_pattern(h, &[], &s.z, &x, &mut r, &mut values);
            std::hint::black_box(&values);
        }
        rounds.push(t0.elapsed().as_nanos() as f64 / reps as f64);
    }
    rounds.sort_by(f64::total_cmp);
    let med = rounds[rounds.len() / 2];
    println!(
        "N = {n:>3}: residual+Jacobian {med:>9.0} ns per call, {:.3} ns per operation ({ops} operations)",
        med / ops.max(1) as f64
    );
    Ok(())
}

/// (N, Newton iterations per step) of every size.
fn stats_points(sizes: &[usize], stats: &[(f64, f64)]) -> Vec<(usize, f64)> {
    sizes.iter().zip(stats).map(|(&n, &(it, _))| (n, it)).collect()
}

/// Nanoseconds this thread has run on a CPU (Linux `schedstat`; 0 where
/// absent): on a machine shared with other builds, the time a round waited
/// for a core is not the step's.
fn cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// Exponent `p` of the least-squares fit `t ≈ c N^p` (log–log) over N ≥ 16.
fn exponent(points: &[(usize, f64)]) -> Option<f64> {
    let fit: Vec<(f64, f64)> = points
        .iter()
        .filter(|&&(n, _)| n >= 16)
        .map(|&(n, t)| ((n as f64).ln(), t.ln()))
        .collect();
    if fit.len() < 2 {
        return None;
    }
    let m = fit.len() as f64;
    let (mx, my) = (
        fit.iter().map(|p| p.0).sum::<f64>() / m,
        fit.iter().map(|p| p.1).sum::<f64>() / m,
    );
    let sxy: f64 = fit.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let sxx: f64 = fit.iter().map(|p| (p.0 - mx) * (p.0 - mx)).sum();
    Some(sxy / sxx)
}
