use crate::MetadataError;
use arrow_schema::{DataType, Field, Schema as ArrowSchema};
use dsrt_schema::{Column, ColumnType, Schema};

pub(crate) fn to_arrow_type(ty: ColumnType) -> DataType {
    match ty {
        ColumnType::Bool => DataType::Boolean,
        ColumnType::Int64 => DataType::Int64,
        ColumnType::Float64 => DataType::Float64,
        ColumnType::Utf8 => DataType::Utf8,
    }
}

fn from_arrow_type(field: &Field) -> Result<ColumnType, MetadataError> {
    match field.data_type() {
        DataType::Boolean => Ok(ColumnType::Bool),
        DataType::Int64 => Ok(ColumnType::Int64),
        DataType::Float64 => Ok(ColumnType::Float64),
        DataType::Utf8 => Ok(ColumnType::Utf8),
        other => Err(MetadataError::UnsupportedType {
            column: field.name().clone(),
            arrow_type: other.to_string(),
        }),
    }
}

pub(crate) fn to_arrow_schema(schema: &Schema) -> ArrowSchema {
    ArrowSchema::new(
        schema
            .columns()
            .iter()
            .map(|c| Field::new(&c.name, to_arrow_type(c.ty), c.nullable))
            .collect::<Vec<_>>(),
    )
}

pub(crate) fn from_arrow_schema(schema: &ArrowSchema) -> Result<Schema, MetadataError> {
    let columns = schema
        .fields()
        .iter()
        .map(|f| {
            Ok(Column::new(
                f.name().clone(),
                from_arrow_type(f)?,
                f.is_nullable(),
            ))
        })
        .collect::<Result<Vec<_>, MetadataError>>()?;
    Schema::new(columns).map_err(|e| MetadataError::Arrow(e.to_string()))
}
