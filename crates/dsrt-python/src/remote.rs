//! Locations (paths or object-store URLs), the remote-open options of `Cache` and `Dataset`,
//! and `datasetrt.publish`.

use crate::errors::{enter, Error};
use dsrt_remote::{
    PublishOptions, RemoteError, RemoteOptions, RemotePrefix, ShardFetch, StoreLocation,
};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyString};
use std::path::PathBuf;
use std::time::Duration;

/// A cache location as given from Python: a `str` (a path or a URL) or an `os.PathLike`.
#[derive(Clone, Debug)]
pub(crate) enum Location {
    /// Valid UTF-8: opened through `dsrt_remote` (a path, a `file://` URL or a store URL).
    Text(String),
    /// A local path that is not valid UTF-8 (from `bytes` or an odd `os.PathLike`): opened as a
    /// local directory directly.
    Path(PathBuf),
}

impl Location {
    /// Extracts a location: `str`, `bytes` or `os.PathLike`.
    pub(crate) fn extract(obj: &Bound<'_, PyAny>) -> PyResult<Self> {
        if let Ok(s) = obj.cast::<PyString>() {
            return Ok(Self::Text(s.to_cow()?.into_owned()));
        }
        let path: PathBuf = obj.extract().map_err(|_| {
            PyTypeError::new_err(format!(
                "a cache location must be a str (path or URL) or an os.PathLike, not {}",
                obj.get_type()
                    .name()
                    .map_or_else(|_| "?".to_owned(), |n| n.to_string())
            ))
        })?;
        Ok(match path.to_str() {
            Some(s) => Self::Text(s.to_owned()),
            None => Self::Path(path),
        })
    }

    /// The location as a string, for `paths`, `repr` and pickling (lossy for a non-UTF-8 path).
    pub(crate) fn display(&self) -> String {
        match self {
            Self::Text(s) => s.clone(),
            Self::Path(p) => p.to_string_lossy().into_owned(),
        }
    }
}

/// The most `first_backoff` may be, in seconds: the retry backoff doubles up to 10 s, so a
/// larger first wait would be longer than every later one (and could overflow when doubled).
const MAX_FIRST_BACKOFF: f64 = 10.0;

/// The remote options of `Cache(...)` and `Dataset(...)` as Python passed them, unchecked
/// (None: the option's default).
pub(crate) struct RawRemoteArgs<'a, 'py> {
    /// `validate_cache`.
    pub(crate) validate_cache: bool,
    /// `cache_dir`.
    pub(crate) cache_dir: Option<PathBuf>,
    /// `cache_limit`: an int or a size string.
    pub(crate) cache_limit: Option<&'a Bound<'py, PyAny>>,
    /// `fetch`: "whole" or "range".
    pub(crate) fetch: &'a str,
    /// `prefetch_shards`: an int >= 0.
    pub(crate) prefetch_shards: Option<&'a Bound<'py, PyAny>>,
    /// `read_while_downloading`: a bool.
    pub(crate) read_while_downloading: Option<&'a Bound<'py, PyAny>>,
    /// `attempts`: an int >= 1.
    pub(crate) attempts: Option<&'a Bound<'py, PyAny>>,
    /// `first_backoff`: seconds, 0 to 10.
    pub(crate) first_backoff: Option<&'a Bound<'py, PyAny>>,
    /// `wait_for_room`: seconds >= 0.
    pub(crate) wait_for_room: Option<&'a Bound<'py, PyAny>>,
}

/// The options of `Cache(...)` and `Dataset(...)` that concern remote caches, as given.
#[derive(Clone, Debug)]
pub(crate) struct RemoteArgs {
    /// `cache_dir`, or None for the default (`$DSRT_CACHE_DIR`, else `~/.cache/datasetrt`).
    pub(crate) cache_dir: Option<PathBuf>,
    /// `cache_limit` in bytes, or None for the default (100 GiB).
    pub(crate) cache_limit: Option<u64>,
    /// `fetch`.
    pub(crate) fetch: ShardFetch,
    /// `validate_cache`.
    pub(crate) validate_cache: bool,
    /// `prefetch_shards`: downloads kept in flight ahead of a `Loader`.
    pub(crate) prefetch_shards: usize,
    /// `read_while_downloading`.
    pub(crate) read_while_downloading: bool,
    /// `attempts` per download (>= 1).
    pub(crate) attempts: u32,
    /// `first_backoff` in seconds as given (finite, 0 to 10), kept as a float so that the
    /// attribute and a pickled `Dataset` give back exactly the value passed.
    pub(crate) first_backoff: f64,
    /// `wait_for_room` in seconds as given (finite, >= 0, a `Duration`).
    pub(crate) wait_for_room: f64,
}

/// An option's value, or None when it was not given or given as None (its default).
fn given<'a, 'py>(value: Option<&'a Bound<'py, PyAny>>) -> Option<&'a Bound<'py, PyAny>> {
    value.filter(|v| !v.is_none())
}

impl RemoteArgs {
    /// Checks and converts the Python arguments; an invalid one raises a `TypeError` (wrong
    /// type) or `ValueError` (out of range) naming it.
    pub(crate) fn new(raw: RawRemoteArgs<'_, '_>) -> PyResult<Self> {
        let fetch = match raw.fetch {
            "whole" => ShardFetch::Whole,
            "range" => ShardFetch::Range,
            other => {
                return Err(PyValueError::new_err(format!(
                    "fetch must be \"whole\" or \"range\", not {other:?}"
                )))
            }
        };
        // An option not given takes `RemoteOptions`' default (its cache directory is unused).
        let defaults = RemoteOptions::new(PathBuf::new());
        let cache_limit = given(raw.cache_limit).map(parse_limit).transpose()?;
        let prefetch_shards = match given(raw.prefetch_shards) {
            Some(v) => {
                let n = parse_int("prefetch_shards", v, 0)?;
                usize::try_from(n).map_err(|_| {
                    PyValueError::new_err(format!("prefetch_shards is too large: {n}"))
                })?
            }
            None => defaults.prefetch_shards,
        };
        let attempts = match given(raw.attempts) {
            Some(v) => {
                let n = parse_int("attempts", v, 1)?;
                u32::try_from(n).map_err(|_| {
                    PyValueError::new_err(format!("attempts must be at most {}, not {n}", u32::MAX))
                })?
            }
            None => defaults.attempts,
        };
        let read_while_downloading = match given(raw.read_while_downloading) {
            Some(v) => parse_bool("read_while_downloading", v)?,
            None => defaults.read_while_downloading,
        };
        let first_backoff = match given(raw.first_backoff) {
            Some(v) => {
                let seconds = parse_seconds("first_backoff", v)?;
                if seconds > MAX_FIRST_BACKOFF {
                    return Err(PyValueError::new_err(format!(
                        "first_backoff must be at most {MAX_FIRST_BACKOFF} seconds (the backoff \
                         doubles up to 10 s), not {seconds}"
                    )));
                }
                seconds
            }
            None => defaults.first_backoff.as_secs_f64(),
        };
        let wait_for_room = match given(raw.wait_for_room) {
            Some(v) => parse_seconds("wait_for_room", v)?,
            None => defaults.wait_for_room.as_secs_f64(),
        };
        Ok(Self {
            cache_dir: raw.cache_dir,
            cache_limit,
            fetch,
            validate_cache: raw.validate_cache,
            prefetch_shards,
            read_while_downloading,
            attempts,
            first_backoff,
            wait_for_room,
        })
    }

    /// The `dsrt_remote` options.
    pub(crate) fn options(&self) -> RemoteOptions {
        let mut options = match &self.cache_dir {
            Some(dir) => RemoteOptions::new(dir.clone()),
            None => RemoteOptions::default(),
        };
        if let Some(limit) = self.cache_limit {
            options = options.cache_limit(limit);
        }
        // Both durations were checked to be finite, >= 0 and representable by `new`.
        options
            .fetch(self.fetch)
            .validate_cache(self.validate_cache)
            .prefetch_shards(self.prefetch_shards)
            .read_while_downloading(self.read_while_downloading)
            .retries(self.attempts, Duration::from_secs_f64(self.first_backoff))
            .wait_for_room(Duration::from_secs_f64(self.wait_for_room))
    }

    /// `fetch` as its Python name.
    pub(crate) fn fetch_name(&self) -> &'static str {
        match self.fetch {
            ShardFetch::Range => "range",
            _ => "whole",
        }
    }

    /// `cache_dir` as given, as a string (None: the default).
    pub(crate) fn cache_dir_str(&self) -> Option<String> {
        self.cache_dir
            .as_ref()
            .map(|d| d.to_string_lossy().into_owned())
    }
}

/// The name of a Python value's type, for messages.
fn type_name(value: &Bound<'_, PyAny>) -> String {
    value
        .get_type()
        .name()
        .map_or_else(|_| "?".to_owned(), |n| n.to_string())
}

/// An int option: an `int` (or an object with `__index__`), not a bool or a float, at least
/// `min`.
fn parse_int(name: &str, value: &Bound<'_, PyAny>, min: i128) -> PyResult<i128> {
    if value.is_instance_of::<PyBool>() || value.is_instance_of::<PyFloat>() {
        return Err(PyTypeError::new_err(format!(
            "{name} must be an int, not {}",
            type_name(value)
        )));
    }
    let n: i128 = value.extract().map_err(|_| {
        PyTypeError::new_err(format!("{name} must be an int, not {}", type_name(value)))
    })?;
    if n < min {
        return Err(PyValueError::new_err(format!(
            "{name} must be >= {min}, not {n}"
        )));
    }
    Ok(n)
}

/// A bool option: `True` or `False` (not an int or any other truthy object).
fn parse_bool(name: &str, value: &Bound<'_, PyAny>) -> PyResult<bool> {
    value.cast::<PyBool>().map(|b| b.is_true()).map_err(|_| {
        PyTypeError::new_err(format!("{name} must be a bool, not {}", type_name(value)))
    })
}

/// A duration option in seconds: an int or a float (not a bool or a string), finite, >= 0 and
/// representable as a `Duration`.
fn parse_seconds(name: &str, value: &Bound<'_, PyAny>) -> PyResult<f64> {
    let not_a_number = || {
        PyTypeError::new_err(format!(
            "{name} must be a number of seconds (int or float), not {}",
            type_name(value)
        ))
    };
    if value.is_instance_of::<PyBool>() || value.is_instance_of::<PyString>() {
        return Err(not_a_number());
    }
    let seconds: f64 = value.extract().map_err(|_| not_a_number())?;
    if seconds.is_nan() || seconds.is_infinite() {
        return Err(PyValueError::new_err(format!(
            "{name} must be a finite number of seconds, not {seconds}"
        )));
    }
    if seconds < 0.0 {
        return Err(PyValueError::new_err(format!(
            "{name} must be >= 0 seconds, not {seconds}"
        )));
    }
    // -0.0 + 0.0 is 0.0: a negative zero is zero seconds.
    let seconds = seconds + 0.0;
    Duration::try_from_secs_f64(seconds)
        .map_err(|_| PyValueError::new_err(format!("{name} is too large: {seconds} seconds")))?;
    Ok(seconds)
}

/// `cache_limit`: an int (bytes) or a string such as `"20GB"`, `"512MiB"`, `"1.5 TiB"`.
fn parse_limit(value: &Bound<'_, PyAny>) -> PyResult<u64> {
    if let Ok(text) = value.cast::<PyString>() {
        return parse_size(&text.to_cow()?).map_err(PyValueError::new_err);
    }
    if value.is_instance_of::<PyBool>() {
        return Err(PyTypeError::new_err(
            "cache_limit must be an int (bytes) or a string like \"20GB\", not a bool",
        ));
    }
    let bytes: i128 = value.extract().map_err(|_| {
        PyTypeError::new_err("cache_limit must be an int (bytes) or a string like \"20GB\"")
    })?;
    u64::try_from(bytes)
        .map_err(|_| PyValueError::new_err(format!("cache_limit must be >= 0, not {bytes}")))
}

/// Parses a byte size: a number (integer or decimal) and an optional unit, `B`, `KB`, `MB`,
/// `GB`, `TB`, `PB` (powers of 1000) or `KiB`, `MiB`, `GiB`, `TiB`, `PiB` (powers of 1024),
/// case-insensitive, with optional spaces between.
pub(crate) fn parse_size(text: &str) -> Result<u64, String> {
    let bad = || {
        format!(
            "cache_limit {text:?} is not a size: a number and a unit among B, KB, MB, GB, TB, \
             PB (powers of 1000) and KiB, MiB, GiB, TiB, PiB (powers of 1024), e.g. \"20GB\""
        )
    };
    let trimmed = text.trim();
    let split = trimmed
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(split);
    let unit = unit.trim().to_ascii_lowercase();
    let scale: u64 = match unit.as_str() {
        "" | "b" => 1,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        "tb" => 1_000_000_000_000,
        "pb" => 1_000_000_000_000_000,
        "kib" => 1 << 10,
        "mib" => 1 << 20,
        "gib" => 1 << 30,
        "tib" => 1 << 40,
        "pib" => 1 << 50,
        _ => return Err(bad()),
    };
    if number.is_empty() || number.matches('.').count() > 1 {
        return Err(bad());
    }
    let (whole, frac) = number.split_once('.').unwrap_or((number, ""));
    let whole: u128 = if whole.is_empty() {
        0
    } else {
        whole.parse().map_err(|_| bad())?
    };
    // Exact decimal arithmetic: whole * scale + frac * scale / 10^digits (rounded down).
    let mut bytes = whole.checked_mul(u128::from(scale)).ok_or_else(bad)?;
    if !frac.is_empty() {
        let digits = u32::try_from(frac.len()).map_err(|_| bad())?;
        let denominator = 10u128.checked_pow(digits).ok_or_else(bad)?;
        let numerator: u128 = frac.parse().map_err(|_| bad())?;
        bytes = numerator
            .checked_mul(u128::from(scale))
            .map(|n| n / denominator)
            .and_then(|n| bytes.checked_add(n))
            .ok_or_else(bad)?;
    }
    u64::try_from(bytes).map_err(|_| bad())
}

/// `publish(local_dir, url, *, overwrite_partial=False)`: uploads the finished cache in
/// `local_dir` to the object-store prefix `url` (e.g. `s3://bucket/caches/train`): every
/// shard, index.bin and metadata.arrow first (each checked by size; large files as multipart
/// uploads), `manifest.json` last and only if the prefix has none, so no reader ever sees a
/// half-published cache. Caches are write-once: a prefix holding a manifest.json raises
/// RemoteError (kind "already_published"), and one holding other objects (what a failed
/// publish leaves) raises kind "prefix_not_empty" unless `overwrite_partial=True`. The store
/// is configured from the environment (`AWS_*` for s3://). Returns a dict: `url`, `files`,
/// `bytes`, `multipart_files`, `retries` and `manifest_atomic` (False when the store has no
/// conditional PUT). The GIL is released while uploading.
#[pyfunction]
#[pyo3(signature = (local_dir, url, *, overwrite_partial = false))]
pub(crate) fn publish<'py>(
    py: Python<'py>,
    local_dir: PathBuf,
    url: &str,
    overwrite_partial: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let remote = remote_prefix(url, "publish", "write a local cache with CacheWriter")?;
    let options = PublishOptions {
        overwrite_partial,
        ..PublishOptions::default()
    };
    let report = enter(py, || {
        dsrt_remote::publish_cache(&local_dir, &remote, &options)
    })?;
    let dict = PyDict::new(py);
    dict.set_item("url", &report.url)?;
    dict.set_item("files", report.files)?;
    dict.set_item("bytes", report.bytes)?;
    dict.set_item("multipart_files", report.multipart_files)?;
    dict.set_item("retries", report.retries)?;
    dict.set_item("manifest_atomic", report.manifest_atomic)?;
    Ok(dict)
}

/// `_parse_size(text)`: the bytes `cache_limit=text` means (for tests and callers that want
/// to check a size string early).
#[pyfunction]
pub(crate) fn _parse_size(text: &str) -> PyResult<u64> {
    parse_size(text).map_err(PyValueError::new_err)
}

/// The store prefix `url` names, or ValueError if it is a local path: `function` needs a
/// store (`instead` says what to use for a local directory).
fn remote_prefix(url: &str, function: &str, instead: &str) -> PyResult<RemotePrefix> {
    let location = StoreLocation::parse(url).map_err(|e| Error::from(RemoteError::from(e)))?;
    match location {
        StoreLocation::Remote(remote) => Ok(remote),
        StoreLocation::Local(_) => Err(PyValueError::new_err(format!(
            "{function} needs an object-store URL (s3://bucket/prefix, ...), not the local path \
             {url:?}; {instead}"
        ))),
    }
}

/// `_check_publish_target(url)`: raises RemoteError unless the prefix `url` can receive a
/// cache: kind "already_published" when it holds a manifest.json, "prefix_not_empty" when it
/// holds any other object (`dsrt_remote::check_publish_target`). What `datasetrt.ray`'s
/// datasink checks before a job writes anything.
#[pyfunction]
pub(crate) fn _check_publish_target(py: Python<'_>, url: &str) -> PyResult<()> {
    let remote = remote_prefix(url, "_check_publish_target", "check the directory")?;
    enter(py, || {
        dsrt_remote::check_publish_target(&remote, &PublishOptions::default())
    })
}

/// `_merge_remote_parts(url, parts, *, source, schema, version=3)`: joins the caches published
/// under the prefixes `parts` (`[(url, payload_bytes)]`, in order) into a new cache under `url`,
/// copying their shards on the store (`dsrt_remote::merge_remote_parts`); returns the summary
/// dict `CacheWriter.finish` gives (`path` is `url`) plus `manifest_atomic`. What
/// `datasetrt.ray`'s datasink commits a job on a store with.
#[pyfunction]
#[pyo3(signature = (url, parts, *, source, schema, version = 3))]
pub(crate) fn _merge_remote_parts<'py>(
    py: Python<'py>,
    url: &str,
    parts: Vec<(String, u64)>,
    source: String,
    schema: &Bound<'_, PyAny>,
    version: u64,
) -> PyResult<Bound<'py, PyDict>> {
    let schema = crate::values::schema_from_py(schema)?;
    let options = datasetrt::WriterOptions::new(source, schema)
        .manifest_version(crate::writer::manifest_version(version)?);
    let to = remote_prefix(
        url,
        "_merge_remote_parts",
        "join local parts with _merge_parts",
    )?;
    let parts = parts
        .iter()
        .map(|(part, payload_bytes)| {
            Ok(dsrt_remote::RemotePart {
                prefix: remote_prefix(part, "_merge_remote_parts", "publish the part first")?,
                payload_bytes: *payload_bytes,
            })
        })
        .collect::<PyResult<Vec<_>>>()?;
    let joined = enter(py, || {
        dsrt_remote::merge_remote_parts(&to, &parts, &options, &PublishOptions::default())
    })?;
    let dict = crate::writer::summary_dict(py, &joined.cache)?;
    dict.set_item("path", to.url())?;
    dict.set_item("manifest_atomic", joined.manifest_atomic)?;
    Ok(dict)
}

/// `_remove_remote_prefix(url)`: deletes every object under the prefix `url`
/// (`dsrt_remote::remove_prefix`): a job's staging prefix.
#[pyfunction]
pub(crate) fn _remove_remote_prefix(py: Python<'_>, url: &str) -> PyResult<()> {
    let remote = remote_prefix(url, "_remove_remote_prefix", "remove the directory")?;
    enter(py, || dsrt_remote::remove_prefix(&remote))
}

/// `_remove_unpublished_remote(url)`: deletes the shards, index.bin and metadata.arrow an
/// unfinished join left under `url`, unless a manifest.json is there
/// (`dsrt_remote::remove_unpublished_remote`).
#[pyfunction]
pub(crate) fn _remove_unpublished_remote(py: Python<'_>, url: &str) -> PyResult<()> {
    let remote = remote_prefix(url, "_remove_unpublished_remote", "use _remove_unpublished")?;
    enter(py, || dsrt_remote::remove_unpublished_remote(&remote))
}
