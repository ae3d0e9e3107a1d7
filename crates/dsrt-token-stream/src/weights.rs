//! Weights given as shares per source name (`{"code": 0.3, "web": 0.7}`), resolved to the
//! one weight per cache that [`crate::TokenConfig::weights`] takes.

use thiserror::Error;

/// Weights as a caller gives them: one per cache, or a share per source name.
#[derive(Debug, Clone, PartialEq)]
pub enum TokenWeights {
    /// One weight per cache, in dataset order (what [`crate::TokenConfig::weights`] takes).
    PerCache(Vec<f64>),
    /// A share of the epoch's tokens per source name (a cache manifest's `source`).
    PerSource(Vec<(String, f64)>),
}

impl TokenWeights {
    /// One weight per cache, where cache `c` holds source `sources[c]` and is called
    /// `cache_name(c)` in errors: as given, or by [`weights_by_source`].
    pub fn per_cache(
        self,
        sources: &[String],
        cache_name: impl Fn(usize) -> String,
    ) -> Result<Vec<f64>, SourceWeightsError> {
        match self {
            Self::PerCache(weights) => Ok(weights),
            Self::PerSource(shares) => weights_by_source(&shares, sources, cache_name),
        }
    }
}

/// Why shares per source name do not give one weight per cache.
#[derive(Debug, Error, Clone, PartialEq)]
#[non_exhaustive]
pub enum SourceWeightsError {
    /// A share names a source no cache holds.
    #[error("weights name the source {name:?}, which none of the caches holds (their sources: {sources})")]
    UnknownSource {
        /// The name given.
        name: String,
        /// The caches' sources, comma-separated.
        sources: String,
    },
    /// A cache's source has no share.
    #[error("weights give no share to the source {name:?} (cache {cache})")]
    MissingShare {
        /// The source.
        name: String,
        /// The cache that holds it.
        cache: String,
    },
    /// Two caches hold one source, so a share per source cannot say how to split it.
    #[error(
        "two caches hold the source {name:?} ({first} and {second}): give weights as a list, \
         one per cache"
    )]
    SharedSource {
        /// The source.
        name: String,
        /// The first cache holding it.
        first: String,
        /// Another.
        second: String,
    },
}

impl SourceWeightsError {
    /// Whether a name was looked up and not found (a share naming no cache's source, a source
    /// without its share: Python's `KeyError`), rather than found twice.
    pub fn is_lookup(&self) -> bool {
        !matches!(self, Self::SharedSource { .. })
    }
}

/// Each cache's weight from `shares` of the epoch's tokens per source name, where cache `c`
/// holds source `sources[c]` (its manifest's `source`) and is called `cache_name(c)` in errors.
/// Every source needs a share, every share a source, and a source one cache.
pub fn weights_by_source(
    shares: &[(String, f64)],
    sources: &[String],
    cache_name: impl Fn(usize) -> String,
) -> Result<Vec<f64>, SourceWeightsError> {
    if let Some((name, _)) = shares.iter().find(|(name, _)| !sources.contains(name)) {
        return Err(SourceWeightsError::UnknownSource {
            name: name.clone(),
            sources: sources.join(", "),
        });
    }
    sources
        .iter()
        .enumerate()
        .map(|(c, name)| {
            if let Some(first) = sources[..c].iter().position(|n| n == name) {
                return Err(SourceWeightsError::SharedSource {
                    name: name.clone(),
                    first: cache_name(first),
                    second: cache_name(c),
                });
            }
            let share = shares.iter().find(|(n, _)| n == name).map(|(_, w)| *w);
            share.ok_or_else(|| SourceWeightsError::MissingShare {
                name: name.clone(),
                cache: cache_name(c),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    fn shares(list: &[(&str, f64)]) -> Vec<(String, f64)> {
        list.iter().map(|(n, w)| ((*n).to_owned(), *w)).collect()
    }

    fn path(c: usize) -> String {
        format!("/caches/{c}")
    }

    #[test]
    fn shares_follow_the_caches_order() {
        let weights = weights_by_source(
            &shares(&[("web", 0.7), ("code", 0.3)]),
            &names(&["code", "web"]),
            path,
        );
        assert_eq!(weights, Ok(vec![0.3, 0.7]));
    }

    #[test]
    fn each_refusal_names_the_source_and_the_caches() {
        let unknown = weights_by_source(
            &shares(&[("code", 1.0), ("math", 1.0)]),
            &names(&["code"]),
            path,
        );
        assert_eq!(
            unknown.unwrap_err().to_string(),
            "weights name the source \"math\", which none of the caches holds (their sources: code)"
        );
        let missing = weights_by_source(&shares(&[("code", 1.0)]), &names(&["code", "web"]), path);
        assert_eq!(
            missing.unwrap_err(),
            SourceWeightsError::MissingShare {
                name: "web".into(),
                cache: "/caches/1".into()
            }
        );
        let shared = weights_by_source(&shares(&[("web", 1.0)]), &names(&["web", "web"]), path);
        let shared = shared.unwrap_err();
        assert!(
            shared.to_string().contains("(/caches/0 and /caches/1)"),
            "{shared}"
        );
        assert!(!shared.is_lookup());
        let lookups = [
            weights_by_source(&shares(&[("math", 1.0)]), &names(&["code"]), path),
            weights_by_source(&shares(&[]), &names(&["code"]), path),
        ];
        assert!(lookups.into_iter().all(|r| r.unwrap_err().is_lookup()));
    }

    #[test]
    fn weights_per_cache_pass_as_given_and_shares_resolve_by_source() {
        let sources = names(&["code", "web"]);
        let given = TokenWeights::PerCache(vec![2.0, 1.0]);
        assert_eq!(given.per_cache(&sources, path), Ok(vec![2.0, 1.0]));
        let by_source = TokenWeights::PerSource(shares(&[("web", 0.7), ("code", 0.3)]));
        assert_eq!(by_source.per_cache(&sources, path), Ok(vec![0.3, 0.7]));
        let unknown = TokenWeights::PerSource(shares(&[("math", 1.0)]));
        assert!(unknown.per_cache(&sources, path).unwrap_err().is_lookup());
    }
}
