//! `hamel report`: the main job.

use std::path::Path;

use hamel_cli::{Backend, Error};

pub fn report_cmd(out: &Path, backend: Backend, force: bool) -> Result<(), Error> {
    hamel_cli::output::claim_dir(out, force)?;
    let started = std::time::Instant::now();
    eprintln!("hamel report: writing {} ({backend} back-end)", out.display());
    let index = hamel_cli::report::write(out, backend, &mut |line| eprintln!("{line}"))?;
    hamel_cli::out!(
        "report written in {:.1} s: {}",
        started.elapsed().as_secs_f64(),
        index.display()
    );
    hamel_cli::out!("(also {})", out.join("index.md").display());
    Ok(())
}
