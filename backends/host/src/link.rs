//! Linking executables: the program's object file plus the runtime's
//! static library, through the system C compiler driver (`cc`, or `$CC`).
//!
//! The runtime library is found, in order, at `$PGPU_RUNTIME_LIB`, beside
//! the running `pgpu` (a Cargo build directory: `target/<profile>/`), and
//! in `../lib/` from it (an installed tree). The executable is linked into
//! a temporary file in the output's directory and renamed over the output
//! only when `cc` succeeded, so a failed link never leaves a half-written
//! program behind.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The runtime's static library file name.
pub const RUNTIME_LIBRARY: &str = "libpgpu_runtime.a";

/// System libraries the runtime (Rust's standard library) needs.
pub const SYSTEM_LIBRARIES: &[&str] = &["-lpthread", "-ldl", "-lm"];

#[derive(Debug, thiserror::Error)]
pub enum LinkError {
    #[error(
        "cannot find the runtime library {RUNTIME_LIBRARY} (looked in: {}); build it with `cargo build -p pgpu-runtime` or set PGPU_RUNTIME_LIB",
        .searched.join(", ")
    )]
    RuntimeNotFound { searched: Vec<String> },
    #[error("cannot run the linker `{command}`: {message}")]
    Spawn { command: String, message: String },
    #[error("linking failed (`{command}`):\n{output}")]
    Failed { command: String, output: String },
    #[error("cannot write {path}: {message}")]
    Output { path: String, message: String },
}

/// The runtime library to link with.
pub fn runtime_library() -> Result<PathBuf, LinkError> {
    let mut candidates = vec![];
    if let Some(path) = std::env::var_os("PGPU_RUNTIME_LIB") {
        candidates.push(PathBuf::from(path));
    }
    if let Some(directory) = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(Path::to_path_buf))
    {
        candidates.push(directory.join(RUNTIME_LIBRARY));
        candidates.push(directory.join("..").join("lib").join(RUNTIME_LIBRARY));
    }
    candidates
        .iter()
        .find(|path| path.is_file())
        .cloned()
        .ok_or_else(|| LinkError::RuntimeNotFound {
            searched: candidates.iter().map(|p| p.display().to_string()).collect(),
        })
}

/// Links `objects` with the runtime into the executable `output`.
pub fn link_executable(objects: &[&Path], output: &Path) -> Result<(), LinkError> {
    link_with(objects, &runtime_library()?, output)
}

/// Links `objects` with the runtime library `runtime` into `output`.
fn link_with(objects: &[&Path], runtime: &Path, output: &Path) -> Result<(), LinkError> {
    let directory = match output.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let output_error = |message: String| LinkError::Output {
        path: output.display().to_string(),
        message,
    };
    let temporary = tempfile::Builder::new()
        .prefix(".pgpu-link-")
        .tempfile_in(&directory)
        .map_err(|error| output_error(error.to_string()))?;
    let compiler = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let mut command = Command::new(&compiler);
    command.arg("-o").arg(temporary.path());
    command.args(objects);
    command.arg(runtime);
    command.args(SYSTEM_LIBRARIES);
    let shown = format!("{command:?}");
    let result = command.output().map_err(|error| LinkError::Spawn {
        command: compiler.clone(),
        message: error.to_string(),
    })?;
    if !result.status.success() {
        return Err(LinkError::Failed {
            command: shown,
            output: String::from_utf8_lossy(&result.stderr).into_owned(),
        });
    }
    // The linker replaced the temporary file; make it executable as cc
    // would have made a fresh one.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let permissions = std::fs::Permissions::from_mode(0o755);
        std::fs::set_permissions(temporary.path(), permissions)
            .map_err(|error| output_error(error.to_string()))?;
    }
    temporary
        .persist(output)
        .map_err(|error| output_error(error.error.to_string()))?;
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_link_leaves_no_output() {
        let scratch = tempfile::tempdir().unwrap();
        let object = scratch.path().join("not-an-object.o");
        std::fs::write(&object, b"this is not an object file").unwrap();
        let runtime = scratch.path().join("libfake.a");
        std::fs::write(&runtime, b"!<arch>\n").unwrap();
        let output = scratch.path().join("program");
        let error = link_with(&[object.as_path()], &runtime, &output).unwrap_err();
        assert!(matches!(error, LinkError::Failed { .. }), "{error}");
        assert!(error.to_string().contains("linking failed"));
        assert!(!output.exists());
        // Only the inputs are left in the directory: no temporary file.
        let left: Vec<_> = std::fs::read_dir(scratch.path()).unwrap().collect();
        assert_eq!(left.len(), 2);
    }

    #[test]
    fn a_missing_directory_is_an_output_error() {
        let scratch = tempfile::tempdir().unwrap();
        let output = scratch.path().join("missing").join("program");
        let runtime = scratch.path().join("libfake.a");
        std::fs::write(&runtime, b"!<arch>\n").unwrap();
        let error = link_with(&[], &runtime, &output).unwrap_err();
        assert!(matches!(error, LinkError::Output { .. }), "{error}");
        assert!(error.to_string().contains("missing"));
    }
}
