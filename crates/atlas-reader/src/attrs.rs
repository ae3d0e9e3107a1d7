//! Attributes: declared in the footer's schema, stored in the segments.
//!
//! A key the schema does not declare is answered without a request. Anything else opens one
//! segment, which then serves every dataset.

use crate::atlas::Atlas;
use crate::error::AtlasError;
use crate::view::DatasetView;
use array_format::ArrayFile;
use atlas_model::Attr;

impl DatasetView<'_> {
    /// Every dataset-level attribute. A dataset that declares none costs no request.
    pub async fn attributes(&self) -> Result<Vec<(String, Attr)>, AtlasError> {
        if self.schema().attrs().next().is_none() {
            return Ok(Vec::new());
        }
        let file = self.datasets_file().await?;
        Ok(collect(file, self.name()))
    }

    /// Dataset-level attribute `key`; an undeclared key costs no request.
    pub async fn get_attribute(&self, key: &str) -> Result<Option<Attr>, AtlasError> {
        if self.schema().attr(key).is_none() {
            return Ok(None);
        }
        let file = self.datasets_file().await?;
        Ok(file.get_attribute(self.name(), key).map(Attr::from_stored))
    }

    /// Every attribute of `array`. An array that declares none costs no request.
    pub async fn array_attributes(&self, array: &str) -> Result<Vec<(String, Attr)>, AtlasError> {
        let meta = self.array_meta(array)?;
        if meta.attrs().next().is_none() {
            return Ok(Vec::new());
        }
        let (file, _) = self.segment_entry(&meta).await?;
        Ok(collect(file, self.name()))
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
        Ok(file.get_attribute(self.name(), key).map(Attr::from_stored))
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

fn collect(file: &ArrayFile, dataset: &str) -> Vec<(String, Attr)> {
    file.attributes(dataset)
        .map(|attrs| {
            attrs
                .map(|(k, v)| (k.to_string(), Attr::from_stored(v)))
                .collect()
        })
        .unwrap_or_default()
}

impl Atlas {
    /// Dataset-level attribute `key` of every live dataset that has it, in ordinal order, from
    /// one open of the `_datasets` segment. A key no schema declares costs no request.
    pub async fn attributes_by_dataset(
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
        let Some(column) = file.attribute_column(key) else {
            return Ok(Vec::new());
        };
        let deleted = self.deleted();
        let mut out = Vec::new();
        let mut ordinals = crate::stats::OrdinalCursor::new(self);
        for (info, value) in file.arrays().iter().zip(column) {
            let live = ordinals
                .ordinal(&info.name)
                .is_some_and(|o| !deleted.contains(o));
            if let (true, Some(value)) = (live, value) {
                out.push((info.name.to_string(), Attr::from_stored(value)));
            }
        }
        Ok(out)
    }
}
