//! A manifest under an object-store prefix as `dsrt-migrate` replaces it: read with its
//! version, replaced by a PUT conditional on that version where the store has one.

use crate::error::{block_on, RemoteError};
use crate::RemotePrefix;
use dsrt_manifest::MANIFEST_FILE_NAME;
use dsrt_migrate::{CancelToken, ManifestStore, ReadManifest, Stored, UpdateCause, VersionToken};
use object_store::{ObjectStoreExt, PutMode, PutOptions, PutPayload, UpdateVersion};

/// The manifest of a cache under a store prefix.
///
/// A v2 manifest is replaced by a PUT conditional on the version read (If-Match on S3): if it
/// changed in between, nothing is overwritten and the migration stops
/// (`UpdateCause::ChangedConcurrently`). A store without conditional PUT gets a plain PUT
/// after re-reading the manifest unchanged, and the entry says `atomic: false`. A store's
/// objects are durable once written, so nothing is ever `durability_unknown`.
pub struct RemoteManifest {
    prefix: RemotePrefix,
}

impl RemoteManifest {
    /// The manifest of the cache under `prefix`.
    pub fn new(prefix: RemotePrefix) -> Self {
        Self { prefix }
    }

    /// The cache's prefix.
    pub fn prefix(&self) -> &RemotePrefix {
        &self.prefix
    }

    fn url(&self) -> String {
        self.prefix.object_url(MANIFEST_FILE_NAME)
    }

    async fn get(&self) -> Result<(Vec<u8>, VersionToken), RemoteError> {
        let location = self.prefix.object(MANIFEST_FILE_NAME);
        let read = async {
            let got = self.prefix.store().get(&location).await?;
            let token = VersionToken {
                e_tag: got.meta.e_tag.clone(),
                version: got.meta.version.clone(),
            };
            Ok((got.bytes().await?.to_vec(), token))
        };
        read.await.map_err(|source| RemoteError::Store {
            url: self.url(),
            source,
        })
    }

    async fn put(&self, read: &ReadManifest, bytes: Vec<u8>) -> Result<Stored, UpdateCause> {
        let location = self.prefix.object(MANIFEST_FILE_NAME);
        let payload = PutPayload::from(bytes);
        let version = UpdateVersion {
            e_tag: read.token.e_tag.clone(),
            version: read.token.version.clone(),
        };
        let conditional = PutOptions::from(PutMode::Update(version));
        match self
            .prefix
            .store()
            .put_opts(&location, payload.clone(), conditional)
            .await
        {
            Ok(_) => Ok(Stored::DURABLE),
            Err(object_store::Error::Precondition { .. }) => {
                Err(UpdateCause::ChangedConcurrently {
                    manifest: self.url(),
                })
            }
            Err(
                object_store::Error::NotImplemented { .. }
                | object_store::Error::NotSupported { .. },
            ) => {
                self.put_unconditionally(read, payload).await?;
                Ok(Stored {
                    atomic: false,
                    durability_unknown: None,
                })
            }
            Err(source) => Err(RemoteError::Store {
                url: self.url(),
                source,
            }
            .into()),
        }
    }

    /// The store cannot make the replacement conditional: re-read, and PUT only if unchanged.
    async fn put_unconditionally(
        &self,
        read: &ReadManifest,
        payload: PutPayload,
    ) -> Result<(), UpdateCause> {
        let (now, _) = self.get().await?;
        if now != read.bytes {
            return Err(UpdateCause::ChangedConcurrently {
                manifest: self.url(),
            });
        }
        self.prefix
            .store()
            .put(&self.prefix.object(MANIFEST_FILE_NAME), payload)
            .await
            .map(drop)
            .map_err(|source| {
                RemoteError::Store {
                    url: self.url(),
                    source,
                }
                .into()
            })
    }
}

impl ManifestStore for RemoteManifest {
    fn cache(&self) -> String {
        self.prefix.url().to_owned()
    }

    fn read(&self) -> Result<ReadManifest, UpdateCause> {
        let (bytes, token) = block_on(self.get())?;
        Ok(ReadManifest {
            bytes,
            token,
            location: self.url(),
            cache_key: self.prefix.url().into(),
        })
    }

    /// A store tells whether a PUT is allowed only by taking one: nothing to probe.
    fn check_writable(&self, _read: &ReadManifest) -> Result<(), UpdateCause> {
        Ok(())
    }

    /// A PUT cannot be taken back halfway, so `cancel` is left to the migration's check
    /// before each cache.
    fn replace(
        &self,
        read: &ReadManifest,
        bytes: Vec<u8>,
        _cancel: &CancelToken,
    ) -> Result<Stored, UpdateCause> {
        block_on(self.put(read, bytes))
    }

    /// An object is durable once written: nothing to do.
    fn keep(&self, _read: &ReadManifest) -> Result<Stored, UpdateCause> {
        Ok(Stored::DURABLE)
    }
}

/// A store failure as the migration's cause, keeping whether a retry may pass.
impl From<RemoteError> for UpdateCause {
    fn from(error: RemoteError) -> Self {
        Self::Store {
            retryable: error.is_retryable(),
            source: Box::new(error),
        }
    }
}
