//! Opening: the tail probe, the footer, the mask. At most three requests, the mask's sent with
//! the probe.

use crate::error::AtlasError;
use atlas_footer::trailer::{check_header, locate_footer, parse_trailer, slice_of_probe};
use atlas_footer::validate::VariableIndex;
use atlas_footer::wire::decode_and_validate_within;
use atlas_footer::{CollectionFooter, FooterBudget, TAIL_PROBE};
use atlas_mask::DeletedSet;
use bytes::Bytes;
use object_store::path::Path;
use object_store::{GetOptions, GetRange, ObjectStore, ObjectStoreExt};

/// The reason [`read_container`] gives for a container that does not exist: a growing
/// collection has none, so an open that meets it looks for a manifest instead.
pub(crate) const NO_SUCH_OBJECT: &str = "no such object";

/// What an open learns about the container.
pub(crate) struct OpenedContainer {
    pub(crate) footer: CollectionFooter,
    pub(crate) variables: VariableIndex,
    /// What the footer may still cost: the open charges the tables it builds from it here.
    pub(crate) budget: FooterBudget,
}

/// Reads and validates the footer: one suffix GET, and a second range only if the footer is
/// larger than the probe.
pub(crate) async fn read_container(
    store: &dyn ObjectStore,
    container: &Path,
) -> Result<OpenedContainer, AtlasError> {
    let at = container.as_ref();
    let options = GetOptions {
        range: Some(GetRange::Suffix(TAIL_PROBE)),
        ..Default::default()
    };
    let probe = match store.get_opts(container, options).await {
        Ok(result) => result,
        Err(object_store::Error::NotFound { .. }) => {
            return Err(AtlasError::NotAnAtlasCollection {
                path: at.to_owned(),
                reason: NO_SUCH_OBJECT.into(),
            })
        }
        Err(e) => return Err(e.into()),
    };
    let size = probe.meta.size;
    let probe = probe.bytes().await?;
    let trailer = parse_trailer(&probe).map_err(|e| AtlasError::from_footer(at, e))?;
    // The leading copy is checked only when the probe already holds it: a round trip to prove
    // again what the trailer proved would be waste.
    if probe.len() as u64 == size {
        check_header(&probe).map_err(|e| AtlasError::from_footer(at, e))?;
    }
    let location = locate_footer(size, trailer).map_err(|e| AtlasError::from_footer(at, e))?;
    let frame: Bytes = match slice_of_probe(&probe, size, &location.footer) {
        Some(slice) => probe.slice_ref(slice),
        None => store.get_range(container, location.footer.clone()).await?,
    };
    let mut budget = FooterBudget::for_footer_size(trailer.footer_size);
    let (footer, variables) =
        decode_and_validate_within(&frame, location.segments_end, &mut budget)
            .map_err(|e| AtlasError::from_footer(at, e))?;
    Ok(OpenedContainer {
        footer,
        variables,
        budget,
    })
}

/// Reads `deleted.mask`: absent means nothing is deleted.
pub(crate) async fn read_mask(
    store: &dyn ObjectStore,
    mask: &Path,
    dataset_count: usize,
) -> Result<DeletedSet, AtlasError> {
    let bytes = fetch_mask(store, mask).await?;
    mask_from(mask, bytes.as_deref(), dataset_count)
}

/// The mask's bytes, `None` where there is no mask (nothing deleted). Fetched without the
/// dataset count, so that an open can fetch it alongside the container's tail.
pub(crate) async fn fetch_mask(
    store: &dyn ObjectStore,
    mask: &Path,
) -> Result<Option<Bytes>, AtlasError> {
    match store.get(mask).await {
        Ok(result) => Ok(Some(result.bytes().await?)),
        Err(object_store::Error::NotFound { .. }) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// The deleted set of a collection of `dataset_count` datasets from what [`fetch_mask`] got.
pub(crate) fn mask_from(
    mask: &Path,
    bytes: Option<&[u8]>,
    dataset_count: usize,
) -> Result<DeletedSet, AtlasError> {
    match bytes {
        Some(bytes) => decode_mask(mask, bytes, dataset_count),
        None => Ok(DeletedSet::new(dataset_count)),
    }
}

pub(crate) fn decode_mask(
    mask: &Path,
    bytes: &[u8],
    dataset_count: usize,
) -> Result<DeletedSet, AtlasError> {
    atlas_mask::decode(bytes, dataset_count).map_err(|source| AtlasError::Mask {
        path: mask.to_string(),
        source,
    })
}
