//! Helpers shared by the integration tests.
#![allow(dead_code, clippy::unwrap_used)] // Test code; each test binary uses a part.

use atlas_footer::trailer::parse_trailer;
use atlas_footer::wire::decode_footer;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use std::sync::Arc;

/// Every segment of the collection `<prefix>/data.atlas` in `store`, in container order, as
/// `(variable name, segment bytes)`, found through the collection footer.
pub(crate) async fn written_segments(
    store: &Arc<dyn ObjectStore>,
    prefix: &str,
) -> Vec<(String, Vec<u8>)> {
    let container = store
        .get(&Path::from(format!("{prefix}/data.atlas")))
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    let trailer = parse_trailer(&container[container.len() - 16..]).unwrap();
    let footer_start = container.len() - 16 - trailer.footer_size as usize;
    let footer = decode_footer(&container[footer_start..container.len() - 16]).unwrap();
    footer
        .variables
        .iter()
        .map(|v| {
            let start = v.seg_offset as usize;
            let end = start + v.seg_len as usize;
            let name = footer.string(v.name).unwrap().to_owned();
            (name, container[start..end].to_vec())
        })
        .collect()
}
