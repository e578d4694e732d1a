//! What the command-line tests share: running the `hamel` binary from the
//! repository root, and a fresh scratch directory.
#![allow(dead_code)] // each test file uses what it needs

use std::path::{Path, PathBuf};
use std::process::Command;

/// Runs `hamel args…` from the repository root: exit code, stdout, stderr.
pub fn hamel(args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_hamel"))
        .args(args)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .output()
        .expect("the hamel binary runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

/// A scratch directory for this process and `name`, emptied, and removed
/// again when the guard drops: a test run leaves nothing in the temporary
/// directory (a thousand runs had left 3 GB there and filled a CI disk).
pub fn tmp(name: &str) -> Scratch {
    let d = std::env::temp_dir().join(format!("hamel-cli-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    Scratch(d)
}

/// [`tmp`], created: an empty scratch directory that exists (model and input
/// files are written into it).
pub fn scratch(name: &str) -> Scratch {
    let d = tmp(name);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A path removed when dropped (a directory, or the file a test made of it); reads as the [`Path`] it holds.
pub struct Scratch(PathBuf);

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for Scratch {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        // A test may have made the path a file instead.
        if std::fs::remove_dir_all(&self.0).is_err() {
            let _ = std::fs::remove_file(&self.0);
        }
    }
}
