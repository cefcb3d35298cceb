//! Descriptor sets of `translate: {protocol: descriptor}` routes, read and built into
//! transcoding tables at startup, `ferry validate` and every reload (on the blocking pool: file
//! reads and descriptor decoding stay off the async workers).
//!
//! A file that is missing, unreadable or not a usable `FileDescriptorSet` is a config error at
//! the route's `descriptor_set` field, so a bad descriptor is rejected like a bad config file.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

use ferry_config::{Config, ConfigErrors, StreamingFormat};
use ferry_filters::transcode::{StreamFormat, TranscodeSettings, Transcoder};
use sha2::{Digest, Sha256};

#[cfg(test)]
mod tests;

/// The transcoders of one config, by listener and route name.
#[derive(Debug, Clone, Default)]
pub struct Descriptors {
    routes: HashMap<(String, String), Loaded>,
    /// sha256 (hex) of every descriptor file read, by path.
    files: BTreeMap<PathBuf, String>,
}

#[derive(Debug, Clone)]
struct Loaded {
    transcoder: Transcoder,
    path: PathBuf,
}

// === impl Descriptors ===

impl Descriptors {
    /// Reads every descriptor file `config` names and builds each route's table. Blocking.
    pub fn load(config: &Config) -> Result<Descriptors, ConfigErrors> {
        let mut out = Descriptors::default();
        let mut errors = Vec::new();
        let mut read: HashMap<PathBuf, Vec<u8>> = HashMap::new();
        for l in &config.listeners {
            for r in &l.routes {
                let Some(t) = &r.translate else { continue };
                let Some(d) = &t.descriptor else { continue };
                let path = &d.descriptor_set;
                let bytes = match read.get(path) {
                    Some(b) => b,
                    None => match std::fs::read(path) {
                        Ok(b) => {
                            out.files.insert(path.clone(), hex_sha256(&b));
                            read.entry(path.clone()).or_insert(b)
                        }
                        Err(e) => {
                            errors.push(d.at.error(format!(
                                "cannot read descriptor set {}: {e}",
                                path.display()
                            )));
                            continue;
                        }
                    },
                };
                let settings = TranscodeSettings {
                    reject_unknown_fields: d.reject_unknown_fields,
                    streaming: match d.streaming {
                        StreamingFormat::Ndjson => StreamFormat::Ndjson,
                        StreamingFormat::Sse => StreamFormat::Sse,
                    },
                    max_body_bytes: t.max_decoded_bytes,
                    services: d.services.clone(),
                };
                match Transcoder::from_descriptor_set(bytes, settings) {
                    Ok(transcoder) => {
                        out.routes.insert(
                            (l.name.clone(), r.name.clone()),
                            Loaded {
                                transcoder,
                                path: path.clone(),
                            },
                        );
                    }
                    Err(e) => errors.push(d.at.error(format!("{}: {e}", path.display()))),
                }
            }
        }
        if errors.is_empty() {
            Ok(out)
        } else {
            Err(ConfigErrors { errors })
        }
    }

    /// [`Descriptors::load`] on the blocking pool.
    pub async fn load_async(config: &Config) -> Result<Descriptors, ConfigErrors> {
        if !Self::any(config) {
            return Ok(Descriptors::default());
        }
        let config = config.clone();
        tokio::task::spawn_blocking(move || Self::load(&config))
            .await
            .unwrap_or_else(|e| {
                Err(ConfigErrors::single(ferry_config::ConfigError {
                    file: String::new(),
                    line: 0,
                    col: 0,
                    path: String::new(),
                    message: format!("descriptor load task failed: {e}"),
                }))
            })
    }

    fn any(config: &Config) -> bool {
        config.listeners.iter().any(|l| {
            l.routes
                .iter()
                .any(|r| r.translate.as_ref().is_some_and(|t| t.descriptor.is_some()))
        })
    }

    /// The route's transcoder, if it has `protocol: descriptor`.
    pub fn transcoder(&self, listener: &str, route: &str) -> Option<Transcoder> {
        self.routes
            .get(&(listener.to_owned(), route.to_owned()))
            .map(|l| l.transcoder.clone())
    }

    /// Changes whenever any descriptor file's contents change (reload compares it, as the
    /// config version does not cover the files).
    pub fn fingerprint(&self) -> String {
        self.files.values().cloned().collect::<Vec<_>>().join(",")
    }

    /// The directories to watch for changes.
    pub fn dirs(&self) -> Vec<PathBuf> {
        let mut dirs: Vec<PathBuf> = self
            .files
            .keys()
            .filter_map(|p| p.parent())
            .map(|p| {
                if p.as_os_str().is_empty() {
                    PathBuf::from(".")
                } else {
                    p.to_path_buf()
                }
            })
            .collect();
        dirs.sort();
        dirs.dedup();
        dirs
    }

    /// `/config_dump`'s view: per route, the file, its sha256 and the bindings count.
    pub fn dump(&self) -> serde_json::Value {
        let mut routes: Vec<_> = self.routes.iter().collect();
        routes.sort_by(|a, b| a.0.cmp(b.0));
        routes
            .into_iter()
            .map(|((listener, route), l)| {
                serde_json::json!({
                    "listener": listener,
                    "route": route,
                    "descriptor_set": l.path.display().to_string(),
                    "sha256": self.files.get(&l.path),
                    "bindings": l.transcoder.bindings(),
                })
            })
            .collect()
    }
}

fn hex_sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}
