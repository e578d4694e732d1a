//! `hamel check`: parse and validate model files; list what each scheme derives.

use std::path::PathBuf;

use hamel_cli::case::pairs;
use hamel_cli::Error;
use hamel_compiler::scheme::Scheme;

pub fn check(models: &[PathBuf], sizes: &[String]) -> Result<(), Error> {
    let sizes = pairs::<i64>("--size", sizes)?;
    let mut failed = 0;
    for path in models {
        let model = match hamel_cli::load_model_for(path, &sizes, &Scheme::LIST) {
            Ok(m) => m,
            Err(e) => {
                eprintln!("{e}");
                failed += 1;
                continue;
            }
        };
        hamel_cli::out!(
            "{}: model `{}` — {} coordinate(s), {} velocit{}, {} parameter(s), {} velocity / {} holonomic constraint(s), initial states: {}",
            path.display(),
            model.name,
            model.coords.len(),
            model.vels.len(),
            if model.vels.len() == 1 { "y" } else { "ies" },
            model.params.len(),
            model.velocity_constraints.len(),
            model.holonomic.len(),
            if model.initials.is_empty() {
                "none".to_string()
            } else {
                model.initials.iter().map(|i| i.name.as_str()).collect::<Vec<_>>().join(", ")
            }
        );
        if model.force.is_some() || !model.inputs.is_empty() {
            let inputs: Vec<&str> = model.inputs.iter().map(|s| s.name.as_str()).collect();
            hamel_cli::out!(
                "  forced: {}; inputs: {} (runs judge the energy balance E − E₀ − ΣW)",
                if model.force.is_some() {
                    "external force"
                } else {
                    "no force statement"
                },
                if inputs.is_empty() {
                    "none".to_string()
                } else {
                    inputs.join(", ")
                }
            );
        }
        let mut applicable = None;
        for scheme in Scheme::LIST {
            let label = scheme.name();
            let what = format!(
                "deriving {label} for `{}` ({} coordinates)",
                model.name,
                model.coords.len()
            );
            match hamel_cli::with_status(&what, || scheme.derive(&model)) {
                Ok(sys) => {
                    hamel_cli::out!(
                        "  {label:<18} {} unknowns, state of {}",
                        sys.unknowns.len(),
                        sys.state.len()
                    );
                    applicable.get_or_insert((scheme, sys));
                }
                Err(e) => hamel_cli::out!("  {label:<18} not applicable: {e}"),
            }
        }
        // A model no scheme can integrate is an error, as a parse error is:
        // each scheme's reason is printed above.
        if applicable.is_none() {
            eprintln!(
                "{}: no scheme applies to model `{}` (each scheme's reason is listed above)",
                path.display(),
                model.name
            );
            failed += 1;
            continue;
        }
        // Every initial state must be one a scheme can start from: finite,
        // on the constraints, with a non-singular kinetic metric.
        if let Some((_, derived)) = applicable {
            // The step derived above, not derived again.
            let step = hamel_compiler::emit::compiled::CompiledStep::new(&derived).map_err(Error::Scheme)?;
            let sys = hamel_cli::System::new(step, hamel_cli::Backend::Interpreter)?;
            for init in &model.initials {
                match hamel_load::initial(&sys, Some(&init.name), &[]) {
                    Ok((state, _)) => {
                        let (q, v) = sys.physical(&state.z, 0)?;
                        hamel_cli::out!(
                            "  initial `{}`: ok (kinetic metric condition number {:.1e})",
                            init.name,
                            sys.metric_condition(&q, &v)
                        )
                    }
                    Err(e) => {
                        eprintln!("{}: initial state `{}`: {e}", path.display(), init.name);
                        failed += 1;
                    }
                }
            }
        }
    }
    if failed > 0 {
        Err(Error::Model(format!(
            "{failed} model file(s) or initial state(s) that cannot run (see above)"
        )))
    } else {
        Ok(())
    }
}
