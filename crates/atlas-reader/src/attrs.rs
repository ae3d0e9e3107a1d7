//! Attributes: declared in the footer's schema, stored in the segments.
//!
//! A key the schema does not declare is answered without a request. Anything else opens one
//! segment, which then serves every dataset.

use crate::atlas::Atlas;
use crate::error::AtlasError;
use crate::stats::unnamed_entry;
use crate::view::{ArrayLayout, DatasetView};
use array_format::ArrayFile;
use atlas_footer::{DType, DATASETS_SEGMENT};
use atlas_model::Attr;

impl DatasetView<'_> {
    /// Every dataset-level attribute. A dataset that declares none costs no request.
    pub async fn attributes(&self) -> Result<Vec<(String, Attr)>, AtlasError> {
        if self.schema().attrs().next().is_none() {
            return Ok(Vec::new());
        }
        let file = self.datasets_file().await?;
        collect(self, file, DATASETS_SEGMENT, self.schema().attrs())
    }

    /// Dataset-level attribute `key`; an undeclared key costs no request.
    pub async fn get_attribute(&self, key: &str) -> Result<Option<Attr>, AtlasError> {
        if self.schema().attr(key).is_none() {
            return Ok(None);
        }
        let file = self.datasets_file().await?;
        match file.get_attribute(self.name(), key) {
            Some(value) => Ok(Some(Attr::from_stored(value))),
            None => Err(missing(self, DATASETS_SEGMENT, key)),
        }
    }

    /// Every attribute of `array`. An array that declares none costs no request.
    pub async fn array_attributes(&self, array: &str) -> Result<Vec<(String, Attr)>, AtlasError> {
        let meta = self.array_meta(array)?;
        if meta.attrs().next().is_none() {
            return Ok(Vec::new());
        }
        let (file, _) = self.segment_entry(&meta).await?;
        collect(self, file, meta.name(), meta.attrs())
    }

    /// Attribute `key` of `array`; an undeclared key costs no request.
    pub async fn get_array_attribute(
        &self,
        array: &str,
        key: &str,
    ) -> Result<Option<Attr>, AtlasError> {
        let meta = self.array_meta(array)?;
        if meta.attr(key).is_none() {
            return Ok(None);
        }
        let (file, _) = self.segment_entry(&meta).await?;
        match file.get_attribute(self.name(), key) {
            Some(value) => Ok(Some(Attr::from_stored(value))),
            None => Err(missing(self, meta.name(), key)),
        }
    }

    async fn datasets_file(&self) -> Result<&ArrayFile, AtlasError> {
        let atlas = self.atlas();
        let variable = atlas.datasets_segment().ok_or_else(|| {
            AtlasError::corrupt(
                atlas.container.as_ref(),
                "variables",
                "dataset attributes declared, no _datasets segment",
            )
        })?;
        atlas.segment(variable).await
    }
}

/// The dataset's attributes in `segment`, which must hold every key the footer declares for it
/// (`declared`): a promised attribute the segment lacks is `CorruptCollection`.
fn collect<'a>(
    view: &DatasetView<'_>,
    file: &ArrayFile,
    segment: &str,
    declared: impl Iterator<Item = (&'a str, &'a DType)>,
) -> Result<Vec<(String, Attr)>, AtlasError> {
    let stored: Vec<(String, Attr)> = file
        .attributes(view.name())
        .ok_or_else(|| {
            AtlasError::corrupt(
                view.atlas().container.as_ref(),
                format!("segment '{segment}'"),
                format!("holds no entry for dataset '{}'", view.name()),
            )
        })?
        .map(|(k, v)| (k.to_string(), Attr::from_stored(v)))
        .collect();
    for (key, _) in declared {
        if !stored.iter().any(|(k, _)| k == key) {
            return Err(missing(view, segment, key));
        }
    }
    Ok(stored)
}

/// A declared attribute `key` of the dataset that `segment` does not hold.
fn missing(view: &DatasetView<'_>, segment: &str, key: &str) -> AtlasError {
    AtlasError::corrupt(
        view.atlas().container.as_ref(),
        format!("segment '{segment}'"),
        format!(
            "lacks attribute '{key}' of dataset '{}', which the footer declares",
            view.name()
        ),
    )
}

impl Atlas {
    /// The layout and the attributes of `array` in each of the live datasets `names`, in
    /// order: one segment opened once, whose footer answers them all without reading data.
    pub async fn array_layouts(
        &self,
        array: &str,
        names: &[impl AsRef<str>],
    ) -> Result<Vec<(ArrayLayout, Vec<(String, Attr)>)>, AtlasError> {
        let mut out = Vec::with_capacity(names.len());
        for name in names {
            let view = self.dataset_named(name.as_ref())?;
            out.push((
                view.array_layout(array).await?,
                view.array_attributes(array).await?,
            ));
        }
        Ok(out)
    }

    /// Dataset-level attribute `key` of every live dataset that has it, in ordinal order, from
    /// one open of the `_datasets` segment. A key no schema declares costs no request.
    ///
    /// A growing collection gives every part's, oldest part first.
    pub async fn attributes_by_dataset(
        &self,
        key: &str,
    ) -> Result<Vec<(String, Attr)>, AtlasError> {
        let mut out = Vec::new();
        for member in self.members() {
            out.extend(member.own_attributes_by_dataset(key).await?);
        }
        Ok(out)
    }

    async fn own_attributes_by_dataset(
        &self,
        key: &str,
    ) -> Result<Vec<(String, Attr)>, AtlasError> {
        let declared = self.footer.schema_pool.iter().any(|schema| {
            schema
                .attrs
                .iter()
                .any(|(k, _)| self.footer.string(*k) == Some(key))
        });
        let Some(variable) = self.datasets_segment().filter(|_| declared) else {
            return Ok(Vec::new());
        };
        let file = self.segment(variable).await?;
        let column = file.attribute_column(key);
        let deleted = self.deleted();
        let mut out = Vec::new();
        let mut ordinals = crate::stats::OrdinalCursor::new(self);
        for (i, info) in file.arrays().iter().enumerate() {
            let ordinal = ordinals.ordinal(&info.name).ok_or_else(|| {
                unnamed_entry(self.container.as_ref(), DATASETS_SEGMENT, &info.name)
            })?;
            if deleted.contains(ordinal) {
                continue;
            }
            match column.and_then(|c| c.get(i)).and_then(Option::as_ref) {
                Some(value) => out.push((info.name.to_string(), Attr::from_stored(value))),
                None => {
                    if let Some(view) = self.own_dataset_at(ordinal) {
                        if view.schema().attr(key).is_some() {
                            return Err(missing(&view, DATASETS_SEGMENT, key));
                        }
                    }
                }
            }
        }
        Ok(out)
    }
}
