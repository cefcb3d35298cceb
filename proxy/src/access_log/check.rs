//! The access-log sinks' files, checked where the config is loaded (`ferry validate`,
//! `ferry run`, every reload) and reported at each sink's `path` like any config error:
//! the config crate reads no files, so this check lives here. Blocking (file system calls).

use std::fs::OpenOptions;
use std::io::ErrorKind;
use std::path::Path;

use ferry_config::{Config, ConfigErrors};

/// Every sink's file is writable, or its directory exists and lets ferry create it.
pub fn check(config: &Config) -> Result<(), ConfigErrors> {
    let errors: Vec<_> = config
        .access_log
        .iter()
        .filter_map(|s| writable(&s.path).err().map(|why| s.path_at.error(why)))
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(ConfigErrors { errors })
    }
}

fn writable(path: &Path) -> Result<(), String> {
    // An existing file (or device, such as /dev/stdout) is opened as the writer will open it.
    match OpenOptions::new().append(true).open(path) {
        Ok(_) => return Ok(()),
        Err(e) if e.kind() == ErrorKind::NotFound => {}
        Err(e) => {
            return Err(format!(
                "cannot write {}: {e} (expected a file ferry may append to)",
                path.display()
            ));
        }
    }
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => {
            return Err(format!(
                "{} is not a directory (expected an existing, writable directory)",
                dir.display()
            ));
        }
        Err(e) => {
            return Err(format!(
                "directory {} cannot be used: {e} (expected an existing, writable directory)",
                dir.display()
            ));
        }
    }
    // Creating the file is the one honest test (permission bits say nothing about root,
    // ACLs or a read-only mount); it is removed again so validating leaves no trace.
    match OpenOptions::new().append(true).create_new(true).open(path) {
        Ok(_) => {
            let _ = std::fs::remove_file(path);
            Ok(())
        }
        Err(e) => Err(format!(
            "cannot create {}: {e} (expected an existing, writable directory)",
            dir.display()
        )),
    }
}
