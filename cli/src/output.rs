//! Writing output files safely: never through a symbolic link, never over
//! files that hamel did not write (unless the user says `--force`).

use std::fs::File;
use std::path::Path;

use crate::Error;

/// Name of the file that marks a folder as one hamel writes into.
pub const MARKER: &str = ".hamel-output";

/// Extensions of the files hamel writes into an output folder.
const OURS: [&str; 6] = ["csv", "json", "svg", "png", "html", "md"];

/// Makes `dir` an output folder: creates it, or, where it exists without
/// hamel's marker, refuses it if it holds anything at all (unless `force`):
/// a folder of someone else's files is no place to write, even where no
/// name collides today. Then marks it.
pub fn claim_dir(dir: &Path, force: bool) -> Result<(), Error> {
    let io = Error::writing(dir);
    refuse_link(dir)?;
    if dir.join(MARKER).exists() {
        return Ok(());
    }
    if dir.exists() && !force {
        // the kinds of file hamel writes first, to name the likeliest clash
        let entries: Vec<std::path::PathBuf> = std::fs::read_dir(dir)
            .map_err(io)?
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .collect();
        let ours = |p: &&std::path::PathBuf| {
            p.is_dir()
                || p.extension()
                    .and_then(|x| x.to_str())
                    .is_some_and(|x| OURS.contains(&x))
        };
        let clash = entries.iter().find(ours).or(entries.first());
        if let Some(p) = clash {
            return Err(Error::Usage(format!(
                "`{}` holds `{}`, which hamel did not write; choose another --out, or pass --force to write into it",
                dir.display(),
                p.file_name()
                    .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
            )));
        }
    }
    std::fs::create_dir_all(dir).map_err(io)?;
    std::fs::write(dir.join(MARKER), "This folder holds output of the hamel command.\n").map_err(io)
}

/// Refuses to write through a symbolic link at `path`.
pub fn refuse_link(path: &Path) -> Result<(), Error> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => Err(Error::Output(format!(
            "`{}` is a symbolic link; hamel does not write through links",
            path.display()
        ))),
        _ => Ok(()),
    }
}

/// Creates (or truncates) the file at `path`, never through a link.
pub fn create(path: &Path) -> Result<File, Error> {
    refuse_link(path)?;
    File::create(path).map_err(|e| Error::Output(format!("cannot write `{}`: {e}", path.display())))
}

/// Writes `contents` to `path`, never through a link.
pub fn write(path: &Path, contents: impl AsRef<[u8]>) -> Result<(), Error> {
    use std::io::Write;
    create(path)?
        .write_all(contents.as_ref())
        .map_err(|e| Error::Output(format!("cannot write `{}`: {e}", path.display())))
}
