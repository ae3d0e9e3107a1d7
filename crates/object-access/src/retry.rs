//! What "trying again later may help" means for a store or file failure.

/// Whether trying again later may cure `error`. object_store maps every answer it understands
/// to a specific variant (not found, precondition failed, permission denied, unauthenticated,
/// not supported, an invalid path or configuration key); what is left in `Generic` is the
/// transport (connect, reset, timeout, a body cut short) or a server error that outlived the
/// client's own retries. Only that is retryable.
pub fn is_retryable_store_error(error: &object_store::Error) -> bool {
    matches!(error, object_store::Error::Generic { .. })
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
