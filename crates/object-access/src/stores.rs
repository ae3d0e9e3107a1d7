//! One client per store and configuration, for the life of the process.
//!
//! Building an object_store client loads the system's root certificates and starts an empty
//! connection pool: a few milliseconds, and a TCP (and TLS) handshake on the first request.
//! Opening caches again and again (a dataset per epoch, one cache per call from Python) would
//! pay that every time; reusing the client makes a later open cost its requests alone.

use object_store::path::Path;
use object_store::ObjectStore;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

/// Clients kept at most; past it the registry starts over (a process rarely talks to more
/// than a few stores).
const MAX_STORES: usize = 32;

/// What identifies a client: the URL up to the store's own part (scheme, host, and for
/// path-style URLs the bucket or container), and every option it was configured with.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct StoreKey {
    base: String,
    options: Vec<(String, String)>,
}

/// The clients of this process. A forked child (a `DataLoader` worker) builds its own: its
/// parent's pooled connections belong to a runtime whose threads it does not have.
struct Registry {
    pid: u32,
    stores: HashMap<StoreKey, Arc<dyn ObjectStore>>,
}

static REGISTRY: Mutex<Option<Registry>> = Mutex::new(None);

/// The store of `url` and the path inside it, configured with `options`: the client built
/// for an earlier URL of the same store and options, or a new one.
pub(crate) fn store_for(
    url: &url::Url,
    options: Vec<(String, String)>,
) -> object_store::Result<(Arc<dyn ObjectStore>, Path)> {
    let (_, path) = object_store::ObjectStoreScheme::parse(url)?;
    let mut options = options;
    options.sort();
    let key = StoreKey {
        base: store_base(url, &path),
        options,
    };
    let pid = std::process::id();
    let mut registry = REGISTRY.lock().unwrap_or_else(PoisonError::into_inner);
    let registry = match &mut *registry {
        Some(r) if r.pid == pid && r.stores.len() < MAX_STORES => r,
        slot => slot.insert(Registry {
            pid,
            stores: HashMap::new(),
        }),
    };
    if let Some(store) = registry.stores.get(&key) {
        return Ok((Arc::clone(store), path));
    }
    let (store, parsed) = object_store::parse_url_opts(url, key.options.iter().cloned())?;
    let store: Arc<dyn ObjectStore> = Arc::from(store);
    registry.stores.insert(key, Arc::clone(&store));
    Ok((store, parsed))
}

/// `url` without the trailing segments that make up `path` (the object path inside the
/// store), nor its query or fragment.
fn store_base(url: &url::Url, path: &Path) -> String {
    let segments: Vec<&str> = url
        .path_segments()
        .map(|s| s.filter(|s| !s.is_empty()).collect())
        .unwrap_or_default();
    let keep = segments.len().saturating_sub(path.parts().count());
    let before_path = &url[..url::Position::BeforePath];
    format!("{before_path}/{}", segments[..keep].join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base(url: &str) -> String {
        let url = url::Url::parse(url).unwrap();
        let (_, path) = object_store::ObjectStoreScheme::parse(&url).unwrap();
        store_base(&url, &path)
    }

    #[test]
    fn the_base_is_the_store_part_of_the_url() {
        assert_eq!(base("s3://bucket/a/b/"), "s3://bucket/");
        assert_eq!(base("s3://bucket"), "s3://bucket/");
        assert_eq!(base("http://host:9000/x/y?q=1"), "http://host:9000/");
        assert_eq!(
            base("https://acct.blob.core.windows.net/container/a/b"),
            "https://acct.blob.core.windows.net/container"
        );
    }

    #[test]
    fn one_store_and_options_share_a_client_and_other_options_do_not() {
        let opts = || vec![("aws_region".to_owned(), "us-east-1".to_owned())];
        let a = url::Url::parse("s3://bucket/one").unwrap();
        let b = url::Url::parse("s3://bucket/two/three").unwrap();
        let (first, path_a) = store_for(&a, opts()).unwrap();
        let (second, path_b) = store_for(&b, opts()).unwrap();
        assert!(Arc::ptr_eq(&first, &second));
        assert_eq!((path_a.as_ref(), path_b.as_ref()), ("one", "two/three"));
        let other_region = vec![("aws_region".to_owned(), "eu-west-1".to_owned())];
        let (third, _) = store_for(&a, other_region).unwrap();
        assert!(!Arc::ptr_eq(&first, &third));
        let other_bucket = url::Url::parse("s3://elsewhere/one").unwrap();
        let (fourth, _) = store_for(&other_bucket, opts()).unwrap();
        assert!(!Arc::ptr_eq(&first, &fourth));
    }
}
