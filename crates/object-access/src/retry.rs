//! What "trying again later may help" means for a store or file failure.

/// Whether trying again later may cure `error`. object_store maps every answer it understands
/// to a specific variant (not found, precondition failed, permission denied, unauthenticated,
/// not supported, an invalid path or configuration key); what is left in `Generic` is the
/// transport (connect, reset, timeout, a body cut short) or a server error that outlived the
/// client's own retries. Only that is retryable.
///
/// Except on local disk: `LocalFileSystem` puts every file error but not-found in `Generic`
/// (a path that is a file where a directory should be, a permission refused, a failed read),
/// and those decide by the I/O error under them ([`is_retryable_io_error`]), as a local file
/// operation's do: retrying `atlas delete` on a regular file changes nothing.
pub fn is_retryable_store_error(error: &object_store::Error) -> bool {
    match error {
        object_store::Error::Generic {
            store: LOCAL_STORE,
            source,
        } => io_cause(source.as_ref()).is_some_and(is_retryable_io_error),
        object_store::Error::Generic { .. } => true,
        _ => false,
    }
}

/// The name `object_store`'s `LocalFileSystem` gives its `Generic` errors.
const LOCAL_STORE: &str = "LocalFileSystem";

/// The first `std::io::Error` in `error`'s chain of causes, itself included.
fn io_cause<'a>(
    error: &'a (dyn std::error::Error + Send + Sync + 'static),
) -> Option<&'a std::io::Error> {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(error) = cause {
        if let Some(io) = error.downcast_ref::<std::io::Error>() {
            return Some(io);
        }
        cause = error.source();
    }
    None
}

/// Whether trying again later may cure a local or socket failure: an interrupted, timed-out or
/// dropped connection or call, never a missing file, a refusal or bad data.
pub fn is_retryable_io_error(error: &std::io::Error) -> bool {
    use std::io::ErrorKind;
    matches!(
        error.kind(),
        ErrorKind::Interrupted
            | ErrorKind::WouldBlock
            | ErrorKind::TimedOut
            | ErrorKind::ConnectionRefused
            | ErrorKind::ConnectionReset
            | ErrorKind::ConnectionAborted
            | ErrorKind::NotConnected
            | ErrorKind::BrokenPipe
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use object_store::Error;

    fn boxed(text: &str) -> Box<dyn std::error::Error + Send + Sync> {
        text.into()
    }

    #[test]
    fn only_the_transport_and_outlasting_server_errors_are_retryable() {
        let generic = Error::Generic {
            store: "S3",
            source: boxed("connection reset"),
        };
        assert!(is_retryable_store_error(&generic));
        let refused = [
            Error::NotFound {
                path: "a".into(),
                source: boxed("404"),
            },
            Error::Precondition {
                path: "a".into(),
                source: boxed("412"),
            },
            Error::AlreadyExists {
                path: "a".into(),
                source: boxed("exists"),
            },
            Error::PermissionDenied {
                path: "a".into(),
                source: boxed("403"),
            },
            Error::Unauthenticated {
                path: "a".into(),
                source: boxed("401"),
            },
            Error::NotSupported {
                source: boxed("no"),
            },
            Error::NotImplemented {
                operation: "copy".into(),
                implementer: "test".into(),
            },
            Error::UnknownConfigurationKey {
                store: "S3",
                key: "aws_nope".into(),
            },
        ];
        for error in &refused {
            assert!(!is_retryable_store_error(error), "{error}");
        }
    }

    #[test]
    fn a_local_disk_failure_is_retryable_only_when_its_io_error_is() {
        use object_store::local::LocalFileSystem;
        use object_store::path::Path;
        use object_store::ObjectStoreExt;
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("file"), b"x").unwrap();
        let store = LocalFileSystem::new_with_prefix(dir.path()).unwrap();
        // A path through a regular file: ENOTDIR, which object_store reports as `Generic`.
        let through_a_file = crate::runtime()
            .unwrap()
            .block_on(store.get(&Path::from("file/data.atlas")))
            .unwrap_err();
        assert!(
            matches!(
                through_a_file,
                Error::Generic {
                    store: "LocalFileSystem",
                    ..
                }
            ),
            "{through_a_file:?}"
        );
        assert!(!is_retryable_store_error(&through_a_file));
        let timed_out = Error::Generic {
            store: "LocalFileSystem",
            source: Box::new(std::io::Error::from(std::io::ErrorKind::TimedOut)),
        };
        assert!(is_retryable_store_error(&timed_out));
        let no_io = Error::Generic {
            store: "LocalFileSystem",
            source: boxed("unable to walk dir"),
        };
        assert!(!is_retryable_store_error(&no_io));
    }

    #[test]
    fn dropped_connections_are_retryable_and_missing_files_are_not() {
        use std::io::{Error, ErrorKind};
        assert!(is_retryable_io_error(&Error::from(
            ErrorKind::ConnectionReset
        )));
        assert!(is_retryable_io_error(&Error::from(ErrorKind::TimedOut)));
        assert!(!is_retryable_io_error(&Error::from(ErrorKind::NotFound)));
        assert!(!is_retryable_io_error(&Error::from(
            ErrorKind::PermissionDenied
        )));
        assert!(!is_retryable_io_error(&Error::from(ErrorKind::InvalidData)));
    }
}
