//! One array of a run of datasets, read together from its segment.
//!
//! A variable's segment holds every dataset's array of it, back to back in dataset order, so a
//! run of datasets (consecutive or not) lies in a few adjacent blocks. [`Atlas::read_run`]
//! fetches those blocks in few ranged requests ([`ArrayFile::prefetch_arrays`]) and returns the
//! arrays in one buffer, ready to stack or concatenate; reading them dataset by dataset would
//! make one request per block and one call per dataset.

use crate::atlas::Atlas;
use crate::error::AtlasError;
use array_format::{ArrayElement, ArrayFile};
use atlas_model::from_segment_dtype;
use ndarray::{ArcArray, IxDyn};

/// One array of each dataset of a run, in the order asked for: every array's elements in
/// row-major order, one after the other, and each array's shape.
#[derive(Debug, Clone, PartialEq)]
pub struct Run<T> {
    values: Vec<T>,
    shapes: Vec<Vec<usize>>,
}

impl<T: Clone> Run<T> {
    /// Each dataset's array shape, in run order.
    pub fn shapes(&self) -> &[Vec<usize>] {
        &self.shapes
    }

    /// Every element, dataset after dataset, each array in row-major order.
    pub fn values(&self) -> &[T] {
        &self.values
    }

    /// The elements and the shapes.
    pub fn into_parts(self) -> (Vec<T>, Vec<Vec<usize>>) {
        (self.values, self.shapes)
    }

    /// The arrays stacked along a new leading axis: `[datasets, ...shape]`. Every array must
    /// have the same shape (`InvalidSelection` naming the first that differs otherwise).
    pub fn stacked(self, array: &str) -> Result<ArcArray<T, IxDyn>, AtlasError> {
        let mut shape = vec![self.shapes.len()];
        if let Some(first) = self.shapes.first() {
            if let Some(i) = self.shapes.iter().position(|s| s != first) {
                return Err(AtlasError::InvalidSelection {
                    array: array.to_owned(),
                    reason: format!(
                        "run position {i} has shape {:?}, position 0 {first:?}: cannot stack",
                        self.shapes[i]
                    ),
                });
            }
            shape.extend_from_slice(first);
        }
        into_array(array, shape, self.values)
    }

    /// The arrays concatenated along their first axis. Every array must have at least one
    /// axis and the same extents on the others (`InvalidSelection` otherwise).
    pub fn concatenated(self, array: &str) -> Result<ArcArray<T, IxDyn>, AtlasError> {
        let invalid = |reason: String| AtlasError::InvalidSelection {
            array: array.to_owned(),
            reason,
        };
        let Some(first) = self.shapes.first() else {
            return into_array(array, vec![0], self.values);
        };
        let Some((_, trailing)) = first.split_first() else {
            return Err(invalid(
                "0-d arrays have no axis to concatenate along".into(),
            ));
        };
        let mut length = 0usize;
        for (i, shape) in self.shapes.iter().enumerate() {
            match shape.split_first() {
                Some((n, rest)) if rest == trailing => length += n,
                _ => {
                    return Err(invalid(format!(
                        "run position {i} has shape {shape:?}, position 0 {first:?}: cannot \
                         concatenate along the first axis"
                    )))
                }
            }
        }
        let mut shape = vec![length];
        shape.extend_from_slice(trailing);
        into_array(array, shape, self.values)
    }
}

fn into_array<T>(
    array: &str,
    shape: Vec<usize>,
    values: Vec<T>,
) -> Result<ArcArray<T, IxDyn>, AtlasError> {
    ArcArray::from_shape_vec(IxDyn(&shape), values).map_err(|e| AtlasError::InvalidSelection {
        array: array.to_owned(),
        reason: format!("the run's elements do not fill shape {shape:?}: {e}"),
    })
}

impl Atlas {
    /// Reads `array` whole from each dataset at `ordinals`, in that order (repeats allowed).
    ///
    /// Every dataset must be live (`DatasetNotFound` names a deleted one; an ordinal past the
    /// footer is `InvalidSelection`) and declare `array` (`ArrayNotFound`) as `T`
    /// (`TypeMismatch`); each one's entry in the segment is checked against the footer as
    /// [`DatasetView::read_array`](crate::DatasetView::read_array) checks it. The blocks the
    /// arrays lie in are fetched first, back-to-back blocks by one ranged request, through the
    /// collection's block cache (blocks already cached cost nothing, a small segment kept
    /// whole costs no request); unwritten chunks read as the array's fill value. Nothing is
    /// fetched before every dataset has been checked.
    ///
    /// In a growing collection, each stretch of consecutive ordinals that lie in one part is
    /// read from that part as above; the stretches are joined in the order asked for.
    pub async fn read_run<T: ArrayElement + Clone>(
        &self,
        array: &str,
        ordinals: &[u32],
    ) -> Result<Run<T>, AtlasError> {
        let Some(growing) = &self.growing else {
            return self.own_read_run(array, ordinals).await;
        };
        let mut located = Vec::with_capacity(ordinals.len());
        for &ordinal in ordinals {
            let at = growing
                .locate(ordinal)
                .ok_or_else(|| AtlasError::InvalidSelection {
                    array: array.to_owned(),
                    reason: format!(
                        "no dataset has ordinal {ordinal}: the collection has {}",
                        growing.total()
                    ),
                })?;
            located.push(at);
        }
        let mut run = Run {
            values: Vec::new(),
            shapes: Vec::with_capacity(ordinals.len()),
        };
        for stretch in located.chunk_by(|a, b| a.0 == b.0) {
            let Some(part) = stretch.first().and_then(|&(p, _)| self.parts.get(p)) else {
                continue;
            };
            let local: Vec<u32> = stretch.iter().map(|&(_, o)| o).collect();
            let Run { values, shapes } = part.own_read_run(array, &local).await?;
            run.values.extend(values);
            run.shapes.extend(shapes);
        }
        Ok(run)
    }

    async fn own_read_run<T: ArrayElement + Clone>(
        &self,
        array: &str,
        ordinals: &[u32],
    ) -> Result<Run<T>, AtlasError> {
        let requested = from_segment_dtype(&T::DTYPE);
        let mut names = Vec::with_capacity(ordinals.len());
        let mut segment: Option<(u32, &ArrayFile)> = None;
        for &ordinal in ordinals {
            let view = self.own_dataset_at(ordinal).ok_or_else(|| {
                match self.footer.datasets.get_index(ordinal as usize) {
                    Some((name, _)) => AtlasError::DatasetNotFound(name.to_owned()),
                    None => AtlasError::InvalidSelection {
                        array: array.to_owned(),
                        reason: format!(
                            "no dataset has ordinal {ordinal}: the collection has {}",
                            self.footer.datasets.len()
                        ),
                    },
                }
            })?;
            let meta = view.array_meta(array)?;
            if requested != *meta.dtype() {
                return Err(AtlasError::TypeMismatch {
                    array: array.to_owned(),
                    declared: meta.dtype().clone(),
                    requested,
                });
            }
            let (file, _) = view.segment_entry(&meta).await?;
            // One array name is one segment, so every dataset's entry is in the same file.
            if segment.is_none() {
                segment = Some((meta.variable(), file));
            }
            names.push(view.name());
        }
        let Some((variable, file)) = segment else {
            return Ok(Run {
                values: Vec::new(),
                shapes: Vec::new(),
            });
        };
        let segment_name = self
            .own_variables()
            .nth(variable as usize)
            .map_or(array, |(name, _)| name);
        file.prefetch_arrays(&names)
            .await
            .map_err(|e| self.segment_error(segment_name, e))?;
        let mut values = Vec::new();
        let mut shapes = Vec::with_capacity(names.len());
        for name in &names {
            let data = file
                .read_array::<T>(name, Vec::new(), Vec::new())
                .await
                .map_err(|e| self.segment_error(segment_name, e))?;
            shapes.push(data.shape().to_vec());
            values.extend(data.iter().cloned());
        }
        Ok(Run { values, shapes })
    }
}
