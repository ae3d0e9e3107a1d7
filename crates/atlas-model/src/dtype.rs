//! The footer's dtype and array-format's, variant for variant.

use array_format::DType as SegmentDType;
use atlas_footer::DType;

/// The footer form of a segment's dtype.
pub fn from_segment_dtype(dtype: &SegmentDType) -> DType {
    match dtype {
        SegmentDType::Bool => DType::Bool,
        SegmentDType::Int8 => DType::Int8,
        SegmentDType::Int16 => DType::Int16,
        SegmentDType::Int32 => DType::Int32,
        SegmentDType::Int64 => DType::Int64,
        SegmentDType::UInt8 => DType::UInt8,
        SegmentDType::UInt16 => DType::UInt16,
        SegmentDType::UInt32 => DType::UInt32,
        SegmentDType::UInt64 => DType::UInt64,
        SegmentDType::Float32 => DType::Float32,
        SegmentDType::Float64 => DType::Float64,
        SegmentDType::String => DType::String,
        SegmentDType::Binary => DType::Binary,
        SegmentDType::FixedSizeList { child, size } => DType::FixedSizeList {
            child: Box::new(from_segment_dtype(child)),
            size: *size,
        },
        SegmentDType::List { child } => DType::List {
            child: Box::new(from_segment_dtype(child)),
        },
        SegmentDType::TimestampNs => DType::TimestampNs,
    }
}

/// The segment form of a footer dtype.
pub fn to_segment_dtype(dtype: &DType) -> SegmentDType {
    match dtype {
        DType::Bool => SegmentDType::Bool,
        DType::Int8 => SegmentDType::Int8,
        DType::Int16 => SegmentDType::Int16,
        DType::Int32 => SegmentDType::Int32,
        DType::Int64 => SegmentDType::Int64,
        DType::UInt8 => SegmentDType::UInt8,
        DType::UInt16 => SegmentDType::UInt16,
        DType::UInt32 => SegmentDType::UInt32,
        DType::UInt64 => SegmentDType::UInt64,
        DType::Float32 => SegmentDType::Float32,
        DType::Float64 => SegmentDType::Float64,
        DType::String => SegmentDType::String,
        DType::Binary => SegmentDType::Binary,
        DType::FixedSizeList { child, size } => SegmentDType::FixedSizeList {
            child: Box::new(to_segment_dtype(child)),
            size: *size,
        },
        DType::List { child } => SegmentDType::List {
            child: Box::new(to_segment_dtype(child)),
        },
        DType::TimestampNs => SegmentDType::TimestampNs,
    }
}
