//! The open collection.

use crate::delete::{ConditionalPutCommitter, MaskCommitter};
use crate::error::AtlasError;
use crate::open::{fetch_mask, mask_from, read_container};
use crate::view::{resolve_schemas, resolved_schemas_bytes, DatasetView, ResolvedSchema};
use array_format::{
    ArrayFile, BlockCache, ReadConfig, DEFAULT_CACHE_CAPACITY, DEFAULT_IO_CACHE_CAPACITY,
};
use atlas_footer::budget::{heap_bytes, heap_of};
use atlas_footer::validate::VariableIndex;
use atlas_footer::{
    CollectionFooter, FooterBudget, VariableEntry, CONTAINER_OBJECT, DATASETS_SEGMENT, MASK_OBJECT,
};
use atlas_mask::DeletedSet;
use atlas_store::{CountingStore, SegmentView};
use object_access::StoreLocation;
use object_store::local::LocalFileSystem;
use object_store::path::Path;
use object_store::ObjectStore;
use std::any::Any;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock};
use tokio::sync::OnceCell;

/// Bytes of a segment's tail fetched with its trailer, so a small segment opens in one request.
const SEGMENT_TAIL_WINDOW: u64 = 64 * 1024;
/// A segment footer's bytes per array, a little above what a one-chunk array with statistics
/// and an attribute takes (about 340 bytes: 688 KB for 2,000 arrays).
const FOOTER_BYTES_PER_ARRAY: u64 = 512;
/// The most one segment's first read fetches, however many arrays it holds.
const MAX_SEGMENT_TAIL_WINDOW: u64 = 16 * 1024 * 1024;
/// A segment no larger than this is fetched whole by its first read and kept, so a cold read of
/// one of its arrays costs one request, not two (the footer, then the block). It is at most one
/// array-format block target (8 MiB) more than the largest tail window a segment this size
/// would fetch anyway.
const WHOLE_SEGMENT_MAX: u64 = 16 * 1024 * 1024;
/// The bytes of whole segments one open collection keeps; segments opened past it fetch only
/// their tail, and free it once the footer is parsed.
const RESIDENT_SEGMENTS_BUDGET: u64 = 64 * 1024 * 1024;

/// What [`Atlas::open`] accepts as a store: `Arc<dyn ObjectStore>`, or `Arc<S>` of any concrete
/// store `S`.
///
/// The concrete form is how `open` recognises object_store's `LocalFileSystem` and picks the
/// directory-`flock` delete path for it. An `Arc<dyn ObjectStore>` cannot be recognised:
/// `ObjectStore` has no `Any` supertrait and no method that names a local root, so nothing can
/// downcast it or learn where its files live (its `Display` text is not a contract, and a
/// wrapper may print the same). Such a store keeps conditional PUT, which on `LocalFileSystem`
/// falls back to last-writer-wins with a warning; open it as `Arc<LocalFileSystem>` or with
/// [`Atlas::open_local`] instead.
pub trait IntoAtlasStore {
    /// The store as a trait object, and, when it is a `LocalFileSystem` on Unix, the directory
    /// that holds the collection at `prefix`.
    fn into_atlas_store(self, prefix: &Path) -> (Arc<dyn ObjectStore>, Option<PathBuf>);
}

impl IntoAtlasStore for Arc<dyn ObjectStore> {
    fn into_atlas_store(self, _prefix: &Path) -> (Arc<dyn ObjectStore>, Option<PathBuf>) {
        (self, None)
    }
}

impl<S: ObjectStore> IntoAtlasStore for Arc<S> {
    fn into_atlas_store(self, prefix: &Path) -> (Arc<dyn ObjectStore>, Option<PathBuf>) {
        let local = if cfg!(unix) {
            (&self as &dyn Any)
                .downcast_ref::<Arc<LocalFileSystem>>()
                .and_then(|fs| fs.path_to_filesystem(prefix).ok())
        } else {
            None
        };
        (self, local)
    }
}

/// An open Atlas collection. Share it across tasks behind an `Arc`: every method takes `&self`.
pub struct Atlas {
    pub(crate) store: Arc<dyn ObjectStore>,
    pub(crate) container: Path,
    pub(crate) mask_path: Path,
    pub(crate) footer: CollectionFooter,
    /// The footer's schema pool with every index resolved.
    schemas: Vec<ResolvedSchema>,
    /// Replaced whole after a delete; readers take a snapshot. A part's holds the ordinals
    /// its version hides ([`Atlas::hidden`]) besides its mask's.
    deleted: RwLock<Arc<DeletedSet>>,
    /// For a part of a growing collection: the ordinals the version open hides (replace lines
    /// of the manifest), served as deleted, never written to the part's mask.
    hidden: Vec<u32>,
    /// One per variable, in container order.
    segments: Vec<Segment>,
    cache: Arc<BlockCache>,
    /// Bytes of whole segments kept in memory (see [`WHOLE_SEGMENT_MAX`]).
    resident: AtomicU64,
    pub(crate) committer: Arc<dyn MaskCommitter>,
    datasets_segment: Option<u32>,
    /// What the footer cost this open, against its limit.
    footer_budget: FooterBudget,
    /// A growing collection's parts, oldest first, each an `Atlas` of its own; empty for a
    /// plain collection (and for a part), whose datasets are this `Atlas`'s own.
    pub(crate) parts: Vec<Atlas>,
    /// The collection-wide ordinal of this `Atlas`'s first dataset: a part's offset in its
    /// growing collection, 0 otherwise.
    pub(crate) ordinal_base: u32,
    /// Set for a growing collection: the version open and the commits that made it.
    pub(crate) growing: Option<crate::growing::Growing>,
}

/// Which version of a location an open reads ([`Atlas::open_location_at`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum At<'t> {
    /// The latest (a plain collection has only this one).
    Latest,
    /// This version of a growing collection.
    Version(u64),
    /// The version this tag of a growing collection names.
    Tag(&'t str),
}

impl<'t> At<'t> {
    /// The version `tag` names when there is one, else `version`, else the latest: what a
    /// caller taking both (the CLI's `--at-tag` and `--at-version`, Python's `tag=` and
    /// `version=`) opens.
    pub fn of(version: Option<u64>, tag: Option<&'t str>) -> Self {
        match (tag, version) {
            (Some(tag), _) => At::Tag(tag),
            (None, Some(version)) => At::Version(version),
            (None, None) => At::Latest,
        }
    }
}

/// One variable's segment: its name resolved at open, and a cell so that it is opened at most
/// once, by whichever task asks first.
struct Segment {
    name: String,
    entry: VariableEntry,
    /// How many arrays the segment holds (one per dataset that has this variable): its
    /// footer grows with them, so the tail read that fetches the footer is sized by them.
    arrays: u64,
    file: OnceCell<ArrayFile>,
}

impl std::fmt::Debug for Atlas {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Atlas")
            .field("container", &self.container)
            .field("datasets", &self.footer.datasets.len())
            .field("segments", &self.footer.variables.len())
            .finish_non_exhaustive()
    }
}

impl Atlas {
    /// Opens the collection at `prefix` in `store`: at most three requests, whatever its size.
    ///
    /// `store` is an `Arc<dyn ObjectStore>` or an `Arc` of a concrete store (see
    /// [`IntoAtlasStore`]). Deletes go through a [`ConditionalPutCommitter`], except on an
    /// `Arc<LocalFileSystem>` (concrete type, Unix), where they go through a
    /// [`LocalFlockCommitter`](crate::LocalFlockCommitter) on the collection directory; see
    /// [`Atlas::with_committer`].
    pub async fn open(store: impl IntoAtlasStore, prefix: &Path) -> Result<Self, AtlasError> {
        let (store, local_dir) = store.into_atlas_store(prefix);
        if let Some(dir) = &local_dir {
            crate::local::check_local_collection(dir)?;
        }
        let atlas = Self::open_dyn(store, prefix).await?;
        Ok(match local_dir {
            Some(dir) => atlas.with_local_locks(dir),
            None => atlas,
        })
    }

    /// Opens a plain collection at `prefix`, or, where there is no `data.atlas` but a
    /// `collection.manifest`, the latest version of a growing one.
    async fn open_dyn(store: Arc<dyn ObjectStore>, prefix: &Path) -> Result<Self, AtlasError> {
        match Self::open_plain(Arc::clone(&store), prefix).await {
            Err(AtlasError::NotAnAtlasCollection { path, reason })
                if reason == crate::open::NO_SUCH_OBJECT =>
            {
                crate::growing::open_growing(store, prefix, None)
                    .await?
                    .ok_or(AtlasError::NotAnAtlasCollection { path, reason })
            }
            other => other,
        }
    }

    /// Opens the one container at `prefix` (a plain collection, or one part of a growing one).
    pub(crate) async fn open_plain(
        store: Arc<dyn ObjectStore>,
        prefix: &Path,
    ) -> Result<Self, AtlasError> {
        let container = prefix.clone().join(CONTAINER_OBJECT);
        let mask_path = prefix.clone().join(MASK_OBJECT);
        // The mask is fetched alongside the container's tail: one round trip, not two, where
        // the footer fits in the tail probe. Its bytes are checked once the footer says how
        // many datasets there are; a missing container still reports itself first.
        let (opened, mask_bytes) = futures::join!(
            read_container(store.as_ref(), &container),
            fetch_mask(store.as_ref(), &mask_path)
        );
        let mut opened = opened?;
        // Everything built below from the footer is charged to the footer's budget first, so a
        // footer that decodes small but names a great deal is refused before it is built.
        let tables = open_tables_bytes(&opened.footer);
        opened
            .budget
            .charge(tables, || {
                "the open's tables (segments, schemas)".to_owned()
            })
            .map_err(|e| AtlasError::from_footer(container.as_ref(), e))?;
        let deleted = mask_from(
            &mask_path,
            mask_bytes?.as_deref(),
            opened.footer.datasets.len(),
        )?;
        let committer = Arc::new(ConditionalPutCommitter::new(
            Arc::clone(&store),
            mask_path.clone(),
        ));
        let segments = opened
            .footer
            .variables
            .iter()
            .enumerate()
            .map(|(i, entry)| {
                let name = opened.footer.string(entry.name).ok_or_else(|| {
                    AtlasError::corrupt(
                        container.as_ref(),
                        format!("variables[{i}].name"),
                        format!("string index {} is past the pool", entry.name),
                    )
                })?;
                Ok(Segment {
                    name: name.to_owned(),
                    entry: *entry,
                    arrays: 0,
                    file: OnceCell::new(),
                })
            })
            .collect::<Result<Vec<_>, AtlasError>>()?;
        let mut segments = segments;
        count_segment_arrays(&opened.footer, &opened.variables, &mut segments);
        let datasets_segment = segments
            .iter()
            .position(|s| s.name == DATASETS_SEGMENT)
            .and_then(|i| u32::try_from(i).ok());
        let schemas = resolve_schemas(container.as_ref(), &opened.footer, &opened.variables)?;
        Ok(Self {
            store,
            container,
            mask_path,
            footer: opened.footer,
            schemas,
            deleted: RwLock::new(Arc::new(deleted)),
            hidden: Vec::new(),
            segments,
            cache: Arc::new(BlockCache::new(
                DEFAULT_CACHE_CAPACITY as u64,
                DEFAULT_IO_CACHE_CAPACITY as u64,
            )),
            resident: AtomicU64::new(0),
            committer,
            datasets_segment,
            footer_budget: opened.budget,
            parts: Vec::new(),
            ordinal_base: 0,
            growing: None,
        })
    }

    /// The `Atlas` of a growing collection: no container of its own (an empty footer, no
    /// segments), serving `parts`' datasets.
    pub(crate) fn growing_shell(
        store: Arc<dyn ObjectStore>,
        prefix: &Path,
        growing: crate::growing::Growing,
        parts: Vec<Atlas>,
        created_unix_ms: i64,
    ) -> Self {
        let mask_path = prefix.clone().join(MASK_OBJECT);
        let committer = Arc::new(ConditionalPutCommitter::new(
            Arc::clone(&store),
            mask_path.clone(),
        ));
        Self {
            store,
            container: growing.manifest_path.clone(),
            mask_path,
            footer: atlas_footer::FooterBuilder::new()
                .finish(atlas_footer::Codec::Zstd, created_unix_ms),
            schemas: Vec::new(),
            deleted: RwLock::new(Arc::new(DeletedSet::new(0))),
            hidden: Vec::new(),
            segments: Vec::new(),
            cache: Arc::new(BlockCache::new(0, 0)),
            resident: AtomicU64::new(0),
            committer,
            datasets_segment: None,
            footer_budget: FooterBudget::for_footer_size(0),
            parts,
            ordinal_base: 0,
            growing: Some(growing),
        }
    }

    /// Opens a collection in a local directory. Deletes hold an advisory `flock` on the
    /// directory across read-merge-write, so concurrent deleters on one host lose nothing.
    /// A directory that does not exist is `NotAnAtlasCollection` ([`Atlas::open_location`]).
    pub async fn open_local(dir: impl AsRef<std::path::Path>) -> Result<Self, AtlasError> {
        let location = StoreLocation::Local(dir.as_ref().to_path_buf());
        Self::open_location(&location, |store| store).await
    }

    /// Opens the collection a location names (a directory, or a prefix of an object store, as
    /// [`StoreLocation::parse`] reads a path or URL: the one reading of the `atlas` command and
    /// the Python package), every request going through `wrap(store)` (a request counter, or
    /// the store as it is). A directory deletes through its `flock`
    /// ([`LocalFlockCommitter`](crate::LocalFlockCommitter)), a store through conditional PUT.
    /// A directory that does not exist holds no container: `NotAnAtlasCollection` naming
    /// `<dir>/data.atlas`, as an empty prefix of a store is.
    pub async fn open_location(
        location: &StoreLocation,
        wrap: impl FnOnce(Arc<dyn ObjectStore>) -> Arc<dyn ObjectStore>,
    ) -> Result<Self, AtlasError> {
        Self::open_location_version(location, None, wrap).await
    }

    /// [`Atlas::open_location`] of version `version` of a growing collection
    /// (`docs/format/growing.md`): `None` is the latest (and opens a plain collection too),
    /// `Some(n)` version `n` as its commit left it, straight from the manifest, in two round
    /// trips (the manifest, then every part's tail at once). A location naming the manifest
    /// object itself (`<collection>/collection.manifest`) opens the growing collection at it,
    /// the latest version in two round trips too (a plain location's latest costs a third:
    /// the plain probe that finds no `data.atlas`). A version the manifest does not
    /// have is [`AtlasError::Growing`] with
    /// [`GrowingProblem::NoSuchVersion`](crate::GrowingProblem::NoSuchVersion); asking a
    /// version of a plain collection is `NotAnAtlasCollection` naming the manifest.
    pub async fn open_location_version(
        location: &StoreLocation,
        version: Option<u64>,
        wrap: impl FnOnce(Arc<dyn ObjectStore>) -> Arc<dyn ObjectStore>,
    ) -> Result<Self, AtlasError> {
        let at = version.map_or(At::Latest, At::Version);
        Self::open_location_at(location, at, wrap).await
    }

    /// [`Atlas::open_location`] of the version tag `tag` of a growing collection names
    /// (`docs/format/growing.md`, "Tags"): the tag object, then as
    /// [`Atlas::open_location_version`] of that version. A tag the collection does not have is
    /// [`AtlasError::Growing`] with
    /// [`GrowingProblem::NoSuchTag`](crate::GrowingProblem::NoSuchTag).
    pub async fn open_location_tag(
        location: &StoreLocation,
        tag: &str,
        wrap: impl FnOnce(Arc<dyn ObjectStore>) -> Arc<dyn ObjectStore>,
    ) -> Result<Self, AtlasError> {
        Self::open_location_at(location, At::Tag(tag), wrap).await
    }

    /// [`Atlas::open_location`] of the version `at` names: [`Atlas::open_location_version`]
    /// or [`Atlas::open_location_tag`].
    pub async fn open_location_at(
        location: &StoreLocation,
        at: At<'_>,
        wrap: impl FnOnce(Arc<dyn ObjectStore>) -> Arc<dyn ObjectStore>,
    ) -> Result<Self, AtlasError> {
        let open = Self::open_location_with(location, at, |store| (wrap(store), ()));
        Ok(open.await?.0)
    }

    /// [`Atlas::open_location_at`] behind a [`CountingStore`] that keeps the most recent
    /// `recent` requests ([`CountingStore::with_capacity`]): the collection and the counter of
    /// every request it makes (what the Python package's `Collection.requests()` reads).
    pub async fn open_location_counted(
        location: &StoreLocation,
        at: At<'_>,
        recent: usize,
    ) -> Result<(Self, CountingStore), AtlasError> {
        Self::open_location_with(location, at, |store| {
            let counting = CountingStore::with_capacity(store, recent);
            (Arc::new(counting.clone()) as Arc<dyn ObjectStore>, counting)
        })
        .await
    }

    /// The open of a location, the store wrapped by `wrap`, which also gives what the caller
    /// keeps of it.
    async fn open_location_with<T>(
        location: &StoreLocation,
        at: At<'_>,
        wrap: impl FnOnce(Arc<dyn ObjectStore>) -> (Arc<dyn ObjectStore>, T),
    ) -> Result<(Self, T), AtlasError> {
        // A location that names the manifest itself (`.../collection.manifest`) is a growing
        // collection: its latest version opens without the plain probe first, in two round
        // trips.
        let manifest = crate::manifest::MANIFEST_OBJECT;
        let (dir, prefix, growing) = match location {
            StoreLocation::Remote(remote) => {
                let prefix = remote.prefix();
                let (prefix, growing) = if prefix.filename() == Some(manifest) {
                    let parts: Vec<_> = prefix.parts().collect();
                    let parent = &parts[..parts.len().saturating_sub(1)];
                    (parent.iter().cloned().collect::<Path>(), true)
                } else {
                    (prefix.clone(), false)
                };
                let (store, kept) = wrap(remote.store());
                let atlas = Self::open_dyn_version(store, &prefix, at, growing).await?;
                return Ok((atlas, kept));
            }
            StoreLocation::Local(dir) => match dir.file_name() {
                Some(name) if name == manifest => (
                    dir.parent().unwrap_or(std::path::Path::new(".")),
                    Path::default(),
                    true,
                ),
                _ => (dir.as_path(), Path::default(), false),
            },
        };
        let canonical = std::fs::canonicalize(dir).map_err(|source| match source.kind() {
            std::io::ErrorKind::NotFound => AtlasError::NotAnAtlasCollection {
                path: dir.join(CONTAINER_OBJECT).display().to_string(),
                reason: "no such directory".to_owned(),
            },
            _ => AtlasError::Io {
                path: dir.display().to_string(),
                source,
            },
        })?;
        crate::local::check_local_collection(&canonical)?;
        let store = LocalFileSystem::new_with_prefix(&canonical)?;
        let (store, kept) = wrap(Arc::new(store));
        let atlas = Self::open_dyn_version(store, &prefix, at, growing).await?;
        Ok((atlas.with_local_locks(canonical), kept))
    }

    /// `growing`: the location named the manifest, so there is no plain probe.
    async fn open_dyn_version(
        store: Arc<dyn ObjectStore>,
        prefix: &Path,
        at: At<'_>,
        growing: bool,
    ) -> Result<Self, AtlasError> {
        let version = match at {
            At::Latest if !growing => return Self::open_dyn(store, prefix).await,
            At::Latest => None,
            At::Version(version) => Some(version),
            At::Tag(tag) => Some(crate::tag::read_tag(store.as_ref(), prefix, tag).await?),
        };
        crate::growing::open_growing(store, prefix, version)
            .await?
            .ok_or_else(|| AtlasError::NotAnAtlasCollection {
                path: crate::growing::manifest_path(prefix).to_string(),
                reason: "no such object: only a growing collection has versions".to_owned(),
            })
    }

    /// Uses `committer` for [`Atlas::delete`] instead of the default. On a growing collection
    /// each part's mask commits through the part's own committer (conditional PUT, or the
    /// part directory's lock when opened from a local directory), not this one.
    pub fn with_committer(mut self, committer: Arc<dyn MaskCommitter>) -> Self {
        self.committer = committer;
        self
    }

    /// Deletes through a [`LocalFlockCommitter`](crate::LocalFlockCommitter) on the local
    /// collection directory `dir`; a growing collection's parts each through one on their own
    /// directory (`parts/<id>`), where their masks live.
    pub(crate) fn with_local_locks(mut self, dir: std::path::PathBuf) -> Self {
        if let Some(growing) = &mut self.growing {
            growing.local_dir = Some(dir.clone());
            for (part, commit) in self.parts.iter_mut().zip(&growing.part_commits) {
                let part_dir = dir.join(crate::manifest::PARTS_DIR).join(&commit.part);
                part.committer = Arc::new(crate::local::LocalFlockCommitter::new(part_dir));
            }
        }
        self.with_committer(Arc::new(crate::local::LocalFlockCommitter::new(dir)))
    }

    /// The committer [`Atlas::delete`] goes through.
    pub fn committer(&self) -> &Arc<dyn MaskCommitter> {
        &self.committer
    }

    /// The validated footer.
    pub fn footer(&self) -> &CollectionFooter {
        &self.footer
    }

    /// The memory the footer cost this open (the decoded bytes, the footer, the tables built
    /// from it), against the most a footer of its stored size may cost
    /// ([`FooterBudget::for_footer_size`]); a footer that would cost more is refused.
    pub fn footer_budget(&self) -> &FooterBudget {
        &self.footer_budget
    }

    /// The container's path.
    pub fn container_path(&self) -> &Path {
        &self.container
    }

    /// The live (not deleted) dataset ordinals' count (over every part of a growing
    /// collection).
    pub fn dataset_count(&self) -> usize {
        self.members()
            .iter()
            .map(|m| m.footer.datasets.len() - m.deleted().len())
            .sum()
    }

    /// The `Atlas`es whose datasets this one serves: a growing collection's parts, or itself.
    pub(crate) fn members(&self) -> &[Atlas] {
        match self.growing {
            Some(_) => &self.parts,
            None => std::slice::from_ref(self),
        }
    }

    /// A snapshot of the deleted ordinals: the mask's, and for a part of a growing
    /// collection the ones its version hides too ([`Atlas::hidden`]).
    pub fn deleted(&self) -> Arc<DeletedSet> {
        Arc::clone(&self.deleted.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// The mask as committed, `set`, with the version's hides folded in.
    pub(crate) fn replace_deleted(&self, mut set: DeletedSet) {
        set.merge(self.hidden.iter().copied());
        *self.deleted.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(set);
    }

    /// For a part of a growing collection: the ordinals (the part's own) the version open
    /// hides because a later append replaced them (`docs/format/growing.md`, "Replacing"),
    /// ascending. They are served as deleted but are not in the part's mask: an older version
    /// still reads them. Empty for anything else.
    pub fn hidden(&self) -> &[u32] {
        &self.hidden
    }

    /// Hides `ordinals` (ascending, each a dataset of this container) as the version open
    /// asks: folded into the deleted set every read path consults.
    pub(crate) fn hide(&mut self, ordinals: Vec<u32>) {
        self.hidden = ordinals;
        let mask = self.deleted();
        self.replace_deleted(DeletedSet::clone(&mask));
    }

    /// The live dataset called `name`: one hash lookup (one per part of a growing collection).
    pub fn dataset(&self, name: &str) -> Option<DatasetView<'_>> {
        self.members().iter().find_map(|member| {
            let ordinal = member.footer.datasets.get_index_of(name)?;
            member.own_dataset_at(u32::try_from(ordinal).ok()?)
        })
    }

    /// [`Atlas::dataset`], or `DatasetNotFound` naming `name`.
    pub fn dataset_named(&self, name: &str) -> Result<DatasetView<'_>, AtlasError> {
        (self.dataset(name)).ok_or_else(|| AtlasError::DatasetNotFound(name.to_owned()))
    }

    /// The live dataset at `ordinal`. A growing collection numbers its parts' datasets one
    /// after the other, oldest part first.
    pub fn dataset_at(&self, ordinal: u32) -> Option<DatasetView<'_>> {
        match &self.growing {
            Some(growing) => {
                let (part, local) = growing.locate(ordinal)?;
                self.parts.get(part)?.own_dataset_at(local)
            }
            None => self.own_dataset_at(ordinal),
        }
    }

    /// The live dataset at `ordinal` of this container.
    pub(crate) fn own_dataset_at(&self, ordinal: u32) -> Option<DatasetView<'_>> {
        if self.deleted().contains(ordinal) {
            return None;
        }
        let (name, schema) = self
            .footer
            .datasets
            .get_index(usize::try_from(ordinal).ok()?)?;
        DatasetView::new(self, ordinal, name, schema)
    }

    /// Every live dataset, in ordinal order.
    pub fn datasets(&self) -> impl Iterator<Item = DatasetView<'_>> + '_ {
        self.members().iter().flat_map(Atlas::own_datasets)
    }

    /// Every live dataset of this container, in ordinal order.
    pub(crate) fn own_datasets(&self) -> impl Iterator<Item = DatasetView<'_>> + '_ {
        let deleted = self.deleted();
        self.footer
            .datasets
            .iter()
            .zip(0u32..)
            .filter_map(move |((name, schema), ordinal)| {
                if deleted.contains(ordinal) {
                    None
                } else {
                    DatasetView::new(self, ordinal, name, schema)
                }
            })
    }

    /// Every variable (segment) with its name, in container order. A growing collection lists
    /// each variable once, with its entry in the oldest part that has it (the offsets are that
    /// part's).
    pub fn variables(&self) -> impl Iterator<Item = (&str, &VariableEntry)> + '_ {
        let mut seen = std::collections::HashSet::new();
        self.members()
            .iter()
            .flat_map(Atlas::own_variables)
            .filter(move |(name, _)| seen.insert(*name))
    }

    /// Every variable (segment) of this container, in container order.
    pub(crate) fn own_variables(&self) -> impl Iterator<Item = (&str, &VariableEntry)> + '_ {
        self.segments.iter().map(|s| (s.name.as_str(), &s.entry))
    }

    /// Schema `index` of the footer's pool, resolved.
    pub(crate) fn resolved_schema(&self, index: u32) -> Option<&ResolvedSchema> {
        self.schemas.get(usize::try_from(index).ok()?)
    }

    /// The ordinal of a live or deleted dataset, by name.
    pub(crate) fn ordinal_of(&self, name: &str) -> Option<u32> {
        u32::try_from(self.footer.datasets.get_index_of(name)?).ok()
    }

    /// The variable called `name`.
    pub(crate) fn variable_named(&self, name: &str) -> Option<u32> {
        let index = self.segments.iter().position(|s| s.name == name)?;
        u32::try_from(index).ok()
    }

    pub(crate) fn datasets_segment(&self) -> Option<u32> {
        self.datasets_segment
    }

    /// A store failure stays a store failure; anything else array-format refuses in a segment
    /// means the segment's bytes are damaged.
    pub(crate) fn segment_error(&self, segment: &str, error: array_format::Error) -> AtlasError {
        let name = segment.to_owned();
        match error {
            array_format::Error::Storage(_) | array_format::Error::Io(_) => AtlasError::Segment {
                variable: name,
                source: error,
            },
            other => AtlasError::corrupt(
                self.container.as_ref(),
                format!("segment '{name}'"),
                other.to_string(),
            ),
        }
    }

    /// The segment of `variable`, opened on first use and shared from then on.
    pub(crate) async fn segment(&self, variable: u32) -> Result<&ArrayFile, AtlasError> {
        self.open_segment(variable, true).await
    }

    /// The segment of `variable` for its footer alone (statistics, attributes): opened, if no
    /// one has yet, with its tail only, never fetched whole unless the tail is the whole
    /// segment. A selection over a 16 MiB segment then fetches its footer, not its data.
    pub(crate) async fn segment_footer(&self, variable: u32) -> Result<&ArrayFile, AtlasError> {
        self.open_segment(variable, false).await
    }

    /// `whole_if_small`: fetch a segment of at most [`WHOLE_SEGMENT_MAX`] whole (budget
    /// permitting), for the data reads that follow; else only when its tail window covers it.
    async fn open_segment(
        &self,
        variable: u32,
        whole_if_small: bool,
    ) -> Result<&ArrayFile, AtlasError> {
        let Some(segment) = self.segments.get(variable as usize) else {
            return Err(AtlasError::corrupt(
                self.container.as_ref(),
                "variables",
                format!("no variable {variable}"),
            ));
        };
        let entry = segment.entry;
        segment
            .file
            .get_or_try_init(|| async move {
                let location = Path::from(format!("segment/{variable}"));
                let small = whole_if_small || entry.seg_len <= tail_window(segment.arrays);
                let whole = small && self.reserve_whole_segment(entry.seg_len);
                let window = if whole {
                    entry.seg_len
                } else {
                    tail_window(segment.arrays)
                };
                let view = Arc::new(SegmentView::new(
                    Arc::clone(&self.store),
                    self.container.clone(),
                    entry.seg_offset,
                    entry.seg_len,
                    window,
                    location.clone(),
                ));
                // An Atlas writer writes each chunk once, so every block ends with a chunk: a
                // block claiming more is refused at open, not decoded whole.
                let config = ReadConfig {
                    cache: Some(Arc::clone(&self.cache)),
                    exact_blocks: true,
                    ..ReadConfig::default()
                };
                let opened = ArrayFile::open(view.clone(), location, config).await;
                let file = match opened {
                    Ok(file) => file,
                    Err(e) => {
                        if whole {
                            self.resident.fetch_sub(entry.seg_len, Ordering::Relaxed);
                        }
                        return Err(self.segment_error(&segment.name, e));
                    }
                };
                if !whole {
                    // The footer is parsed; its bytes (up to the window) need not stay in memory.
                    view.release_tail().await;
                }
                Ok(file)
            })
            .await
    }

    /// Whether a segment of `len` bytes may be fetched whole and kept: it is small enough and
    /// the collection's budget for such segments has room. Reserves the room when it has.
    fn reserve_whole_segment(&self, len: u64) -> bool {
        if len > WHOLE_SEGMENT_MAX {
            return false;
        }
        self.resident
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |held| {
                held.checked_add(len)
                    .filter(|&total| total <= RESIDENT_SEGMENTS_BUDGET)
            })
            .is_ok()
    }

    /// The bytes of whole segments this collection keeps in memory: segments of at most 16 MiB
    /// are fetched whole on first use, up to 64 MiB in all, so that a cold read of one of
    /// their arrays costs a single request.
    pub fn resident_segment_bytes(&self) -> u64 {
        self.resident.load(Ordering::Relaxed)
    }
}

/// The bytes a segment's first read fetches from its end: enough for the trailer and footer of
/// a segment of `arrays` arrays, so that opening it costs one request. A footer that is larger
/// than the estimate (arrays of many chunks) costs one more; the window never exceeds the
/// segment (`SegmentView` clamps it).
fn tail_window(arrays: u64) -> u64 {
    arrays
        .saturating_mul(FOOTER_BYTES_PER_ARRAY)
        .saturating_add(SEGMENT_TAIL_WINDOW)
        .min(MAX_SEGMENT_TAIL_WINDOW)
}

/// Counts, for each segment, the arrays it holds: each dataset has one array in the segment of
/// every array name its schema lists, and one in `_datasets` when it has attributes.
fn count_segment_arrays(
    footer: &CollectionFooter,
    variables: &VariableIndex,
    segments: &mut [Segment],
) {
    let mut datasets_per_schema = vec![0u64; footer.schema_pool.len()];
    for &schema in footer.datasets.schemas() {
        if let Some(count) = datasets_per_schema.get_mut(schema as usize) {
            *count += 1;
        }
    }
    let datasets_segment = segments.iter().position(|s| s.name == DATASETS_SEGMENT);
    for (schema, &count) in footer.schema_pool.iter().zip(&datasets_per_schema) {
        for &(name, _) in schema.arrays.iter() {
            let segment = variables
                .variable_of(name)
                .and_then(|v| segments.get_mut(v as usize));
            if let Some(segment) = segment {
                segment.arrays += count;
            }
        }
        if let (Some(i), false) = (datasets_segment, schema.attrs.is_empty()) {
            segments[i].arrays += count;
        }
    }
}

/// Heap bytes an open builds from `footer` besides the footer itself: one [`Segment`] (with its
/// name) per variable, the datasets per schema, the resolved schemas and the deleted set.
fn open_tables_bytes(footer: &CollectionFooter) -> u64 {
    let names: u64 = footer
        .variables
        .iter()
        .filter_map(|v| footer.string(v.name))
        .map(|name| heap_bytes(name.len() as u64))
        .sum();
    heap_of::<Segment>(footer.variables.len() as u64)
        + names
        + heap_of::<u64>(footer.schema_pool.len() as u64)
        + resolved_schemas_bytes(footer)
        + heap_of::<u64>(footer.datasets.len().div_ceil(64) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tag_wins_over_a_version_and_neither_is_the_latest() {
        assert_eq!(At::of(Some(3), Some("v1")), At::Tag("v1"));
        assert_eq!(At::of(Some(3), None), At::Version(3));
        assert_eq!(At::of(None, None), At::Latest);
    }
}
