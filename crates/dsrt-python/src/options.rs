//! The keyword options that several signatures share, declared once: the remote options of
//! `Cache` and `Dataset` ([`RemoteArgs`]) and the epoch settings of `Loader` and `RankPlan`
//! ([`PlanArgs`]). Each signature takes them as `**options` and shows them, with their
//! defaults, in its text signature (what `inspect.signature`, the stub check and the docs test
//! read); `py_support::Kwargs` takes each by name with its check, and refuses a name the signature does
//! not have, as Python refuses an unexpected keyword.

use datasetrt::{
    IterState, LoaderConfig, MixtureChange, Phase, PlanConfig, RemainderPolicy, Sampling, Schedule,
    Shuffle, Topology,
};
use dsrt_remote::{Access, RemoteOptions, ShardFetch};
pub(crate) use py_support::Kwargs;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyString};
use std::path::PathBuf;
use std::time::Duration;

/// A byte count: an int, or a byte size such as `"20GB"` or `"512MiB"` (the one grammar,
/// `datasetrt::parse_byte_size`, that `dsrt --cache-limit` reads too).
pub(crate) fn size(kwargs: &mut Kwargs<'_>, name: &str) -> PyResult<Option<u64>> {
    let Some(value) = kwargs.take(name)? else {
        return Ok(None);
    };
    if let Ok(text) = value.cast::<PyString>() {
        let bytes = datasetrt::parse_byte_size(&text.to_cow()?)
            .map_err(|e| PyValueError::new_err(format!("{name} {e}")))?;
        return Ok(Some(bytes));
    }
    let wrong = |what: &str| {
        PyTypeError::new_err(format!(
            "{name} must be an int (bytes) or a string like \"20GB\"{what}"
        ))
    };
    if value.is_instance_of::<PyBool>() {
        return Err(wrong(", not a bool"));
    }
    let bytes: i128 = value.extract().map_err(|_| wrong(""))?;
    let bytes = u64::try_from(bytes)
        .map_err(|_| PyValueError::new_err(format!("{name} must be >= 0, not {bytes}")))?;
    Ok(Some(bytes))
}

/// The most `first_backoff` may be, in seconds: the retry backoff doubles up to 10 s, so a
/// larger first wait would be longer than every later one.
const MAX_FIRST_BACKOFF: f64 = 10.0;

/// The options of `Cache(...)` and `Dataset(...)`: `validate_cache` and those of remote
/// caches, checked, with the values given kept for the attributes and for pickling.
#[derive(Clone, Debug)]
pub(crate) struct RemoteArgs {
    /// `validate_cache`.
    pub(crate) validate_cache: bool,
    /// `cache_dir`, or None for the default (`$DSRT_CACHE_DIR`, else `~/.cache/datasetrt/shard-cache`).
    pub(crate) cache_dir: Option<PathBuf>,
    /// `cache_limit` in bytes, or None for the default (100 GiB).
    pub(crate) cache_limit: Option<u64>,
    /// `fetch`.
    pub(crate) fetch: ShardFetch,
    /// `prefetch_shards`: downloads kept in flight ahead of a `Loader`.
    pub(crate) prefetch_shards: usize,
    /// `read_while_downloading`.
    pub(crate) read_while_downloading: bool,
    /// `attempts` per download (>= 1).
    pub(crate) attempts: u32,
    /// `first_backoff` in seconds as given (kept as a float so the attribute and a pickled
    /// `Dataset` give back exactly the value passed).
    pub(crate) first_backoff: f64,
    /// `wait_for_room` in seconds as given.
    pub(crate) wait_for_room: f64,
    /// `cache_access`: who may use the local cache directory.
    pub(crate) cache_access: Access,
}

impl RemoteArgs {
    /// Takes and checks the options; an invalid one raises a `TypeError` (wrong type) or
    /// `ValueError` (out of range) naming it. An option not given takes `RemoteOptions`'
    /// default.
    pub(crate) fn take(kwargs: &mut Kwargs<'_>) -> PyResult<Self> {
        let defaults = RemoteOptions::new(PathBuf::new());
        let fetch = kwargs.get("fetch", "whole".to_owned())?;
        let fetch = ShardFetch::from_name(&fetch).ok_or_else(|| {
            PyValueError::new_err(format!(
                "fetch must be \"whole\" or \"range\", not {fetch:?}"
            ))
        })?;
        let prefetch_shards = match kwargs.int("prefetch_shards", 0)? {
            Some(n) => usize::try_from(n)
                .map_err(|_| PyValueError::new_err(format!("prefetch_shards is too large: {n}")))?,
            None => defaults.prefetch_shards,
        };
        let attempts = match kwargs.int("attempts", 1)? {
            Some(n) => u32::try_from(n).map_err(|_| {
                PyValueError::new_err(format!("attempts must be at most {}, not {n}", u32::MAX))
            })?,
            None => defaults.attempts,
        };
        let access = kwargs.get("cache_access", "private".to_owned())?;
        let cache_access = Access::from_name(&access).ok_or_else(|| {
            let message = format!("cache_access must be \"private\" or \"group\", not {access:?}");
            PyValueError::new_err(message)
        })?;
        let first_backoff = kwargs.seconds("first_backoff")?;
        if let Some(seconds) = first_backoff.filter(|&s| s > MAX_FIRST_BACKOFF) {
            return Err(PyValueError::new_err(format!(
                "first_backoff must be at most {MAX_FIRST_BACKOFF} seconds (the backoff doubles \
                 up to 10 s), not {seconds}"
            )));
        }
        Ok(Self {
            validate_cache: kwargs.get("validate_cache", false)?,
            cache_dir: kwargs.get("cache_dir", None)?,
            cache_limit: size(kwargs, "cache_limit")?,
            fetch,
            prefetch_shards,
            read_while_downloading: kwargs
                .boolean("read_while_downloading")?
                .unwrap_or(defaults.read_while_downloading),
            attempts,
            first_backoff: first_backoff.unwrap_or(defaults.first_backoff.as_secs_f64()),
            wait_for_room: kwargs
                .seconds("wait_for_room")?
                .unwrap_or(defaults.wait_for_room.as_secs_f64()),
            cache_access,
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
        // Both durations were checked to be finite, >= 0 and representable.
        options
            .fetch(self.fetch)
            .validate_cache(self.validate_cache)
            .prefetch_shards(self.prefetch_shards)
            .read_while_downloading(self.read_while_downloading)
            .retries(self.attempts, Duration::from_secs_f64(self.first_backoff))
            .wait_for_room(Duration::from_secs_f64(self.wait_for_room))
            .cache_access(self.cache_access)
    }

    /// `cache_dir` as given, as a string (None: the default).
    pub(crate) fn cache_dir_str(&self) -> Option<String> {
        self.cache_dir
            .as_ref()
            .map(|d| d.to_string_lossy().into_owned())
    }
}

/// The epoch settings of `Loader` and `RankPlan`: what decides the order of every rank's
/// samples.
#[derive(Debug)]
pub(crate) struct PlanArgs {
    /// Seed, weights, sampling, shuffle.
    pub(crate) plan: PlanConfig,
    /// The epoch.
    pub(crate) epoch: u64,
    /// This rank.
    pub(crate) rank: u64,
    /// The ranks and their nodes.
    pub(crate) topology: Topology,
    /// What the last round does.
    pub(crate) policy: RemainderPolicy,
}

impl PlanArgs {
    /// Takes and checks the settings (unknown names of `shuffle` and `policy` raise
    /// `ValueError`; an impossible topology the plan's `DatasetError`).
    pub(crate) fn take(kwargs: &mut Kwargs<'_>) -> PyResult<Self> {
        let seed = kwargs.get("seed", 0u64)?;
        let epoch = kwargs.get("epoch", 0u64)?;
        let weights = kwargs.get("weights", None)?;
        let samples_per_epoch = kwargs.get("samples_per_epoch", None)?;
        // `(length, weights)` pairs: `datasetrt.Phase` is a named tuple of them.
        let schedule: Option<Vec<(u64, Vec<f64>)>> = kwargs.get("schedule", None)?;
        let replacement = kwargs.get("replacement", false)?;
        let shuffle = kwargs.get("shuffle", "local".to_owned())?;
        let window_shards = kwargs.get("window_shards", 4usize)?;
        let rank = kwargs.get("rank", 0u64)?;
        let world_size = kwargs.get("world_size", 1u64)?;
        let ranks_per_node = kwargs.get("ranks_per_node", 1u64)?;
        let policy = kwargs.get("policy", "pad".to_owned())?;
        let shuffle = Shuffle::from_name(&shuffle, window_shards)
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        let policy = (policy.parse::<RemainderPolicy>())
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        let topology = Topology::new(world_size, ranks_per_node)
            .map_err(|e| crate::errors::Error::Dataset(e.into()))?;
        let sampling = match replacement {
            true => Sampling::WithReplacement,
            false => Sampling::WithoutReplacement,
        };
        let plan = PlanConfig {
            seed,
            weights,
            samples_per_epoch,
            sampling,
            shuffle,
            schedule: schedule.map(|phases| Schedule {
                phases: phases
                    .into_iter()
                    .map(|(samples, weights)| Phase { samples, weights })
                    .collect(),
            }),
        };
        Ok(Self {
            plan,
            epoch,
            rank,
            topology,
            policy,
        })
    }

    /// The loader's configuration with `workers` and `prefetch`.
    pub(crate) fn loader(&self, workers: usize, prefetch: usize) -> LoaderConfig {
        LoaderConfig {
            plan: self.plan.clone(),
            epoch: self.epoch,
            rank: self.rank,
            world_size: self.topology.world_size,
            ranks_per_node: self.topology.ranks_per_node,
            policy: self.policy,
            workers,
            prefetch,
            prefetch_bytes: None,
            resume: None,
        }
    }
}

/// An iteration state as a dict: `seed`, `epoch`, `position` (global positions consumed by
/// all ranks together), `epoch_len`, `cuts` (the node boundaries of the epoch's first run),
/// `remaining` (the positions not consumed, `[start, end]` pairs) and `mixture` (what the
/// epoch was planned with, compared on resume). Plain ints, strings, lists and dicts, so it
/// pickles and `json.dumps` it as is: it is the state's JSON form.
pub(crate) fn state_to_dict<'py>(
    py: Python<'py>,
    state: &IterState,
) -> PyResult<Bound<'py, PyAny>> {
    py_support::to_python(py, &state.listed())
}

/// The change of mixture a plan was resumed under as a dict (`position`, `weights`,
/// `schedule`, `added`, `removed` as dicts of `cache`, `cache_id` and `consumed`), in the JSON
/// form `dsrt iterate --json` prints; `None` without a change.
pub(crate) fn mixture_change_to_dict<'py>(
    py: Python<'py>,
    change: Option<&MixtureChange>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    change.map(|c| py_support::to_python(py, c)).transpose()
}

/// The state a dict from [`state_to_dict`] describes (`cuts` and `remaining` may be missing,
/// as in states saved before they existed).
pub(crate) fn state_from_dict(dict: &Bound<'_, PyAny>) -> PyResult<IterState> {
    py_support::from_python(dict, "an iteration state")
}

#[cfg(test)]
mod tests {
    use super::*;
    use pyo3::types::PyDict;

    fn kwargs<'py>(py: Python<'py>, code: &str) -> Bound<'py, PyDict> {
        let code = std::ffi::CString::new(code).unwrap();
        py.eval(&code, None, None).unwrap().cast_into().unwrap()
    }

    #[test]
    fn remote_options_take_their_defaults_sizes_and_refuse_a_stray_keyword() {
        Python::initialize();
        Python::attach(|py| {
            let given = kwargs(
                py,
                "dict(cache_limit='10MB', attempts=2, first_backoff=None)",
            );
            let mut options = Kwargs::new("Cache", Some(&given)).unwrap();
            let args = RemoteArgs::take(&mut options).unwrap();
            options.finish().unwrap();
            assert_eq!(args.cache_limit, Some(10_000_000));
            assert_eq!((args.attempts, args.first_backoff), (2, 0.1));
            assert_eq!(args.fetch.name(), "whole");
            assert_eq!(args.cache_access.name(), "private");
            let group = kwargs(py, "dict(cache_access='group')");
            let args = RemoteArgs::take(&mut Kwargs::new("Cache", Some(&group)).unwrap()).unwrap();
            assert_eq!(args.options().cache_access, Access::Group);
            let stray = kwargs(py, "dict(fetch='range', cache_dri='/x')");
            let mut options = Kwargs::new("Cache", Some(&stray)).unwrap();
            RemoteArgs::take(&mut options).unwrap();
            let error = options.finish().unwrap_err();
            assert_eq!(
                error.to_string(),
                "TypeError: Cache() got an unexpected keyword argument 'cache_dri'"
            );
            for (bad, message) in [
                (
                    "dict(attempts=True)",
                    "TypeError: attempts must be an int, not bool",
                ),
                (
                    "dict(wait_for_room=-1)",
                    "ValueError: wait_for_room must be >= 0 seconds, not -1",
                ),
                (
                    "dict(cache_access='world')",
                    "ValueError: cache_access must be \"private\" or \"group\", not \"world\"",
                ),
                (
                    "dict(cache_limit='20G')",
                    "ValueError: cache_limit \"20G\" is not a byte size",
                ),
            ] {
                let mut options = Kwargs::new("Cache", Some(&kwargs(py, bad))).unwrap();
                let error = RemoteArgs::take(&mut options).unwrap_err().to_string();
                assert!(error.starts_with(message), "{bad}: {error}");
            }
        });
    }

    #[test]
    fn plan_settings_by_name_and_a_state_as_its_json_dict() {
        Python::initialize();
        Python::attach(|py| {
            let given = kwargs(
                py,
                "dict(seed=7, shuffle='none', world_size=4, ranks_per_node=2, rank=3)",
            );
            let mut options = Kwargs::new("Loader", Some(&given)).unwrap();
            let args = PlanArgs::take(&mut options).unwrap();
            assert_eq!(
                (args.plan.seed, args.plan.shuffle),
                (7, Shuffle::Sequential)
            );
            assert_eq!((args.rank, args.topology.world_size), (3, 4));
            assert_eq!(args.plan.schedule, None);
            let scheduled = kwargs(py, "dict(schedule=[(10, [1, 0]), (5, [0.5, 0.5])])");
            let args =
                PlanArgs::take(&mut Kwargs::new("Loader", Some(&scheduled)).unwrap()).unwrap();
            let phases = args.plan.schedule.unwrap().phases;
            assert_eq!(
                phases,
                [
                    Phase {
                        samples: 10,
                        weights: vec![1.0, 0.0]
                    },
                    Phase {
                        samples: 5,
                        weights: vec![0.5, 0.5]
                    }
                ]
            );
            let bad = kwargs(py, "dict(policy='keep')");
            let error =
                PlanArgs::take(&mut Kwargs::new("Loader", Some(&bad)).unwrap()).unwrap_err();
            assert!(
                error
                    .to_string()
                    .contains("policy must be \"pad\" or \"drop\""),
                "{error}"
            );
            let state = IterState {
                seed: 1,
                epoch: 2,
                position: 3,
                epoch_len: 10,
                cuts: vec![5],
                remaining: None,
                mixture: None,
                continuation: None,
            };
            let dict = state_to_dict(py, &state).unwrap();
            let remaining: Vec<[u64; 2]> = dict.get_item("remaining").unwrap().extract().unwrap();
            assert_eq!(remaining, [[3, 10]]);
            let back = state_from_dict(&dict).unwrap();
            assert_eq!((back.position, back.cuts), (3, vec![5]));
        });
    }
}
