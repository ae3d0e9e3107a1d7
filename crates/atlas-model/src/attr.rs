//! Attribute values as users write and read them.

use array_format::{AttributeValue, EcoString};
use atlas_footer::DType;
use serde::Serialize;

macro_rules! attr_enum {
    (
        copy { $($cv:ident($ct:ty) => $cd:ident),* $(,)? }
        list { $($lv:ident($lt:ty) => $ld:ident),* $(,)? }
    ) => {
        /// An attribute value.
        ///
        /// There is no timestamp variant: array-format's `AttributeValue` has none, so one could
        /// not read back. Store nanoseconds as [`Attr::Int64`] and name the unit in a second
        /// attribute. Every other stored value carries its own tag, so [`Attr::from_stored`]
        /// rebuilds it exactly and every write is exact.
        ///
        /// Serializes (for JSON output) as `{"Variant": value}`.
        #[derive(Debug, Clone, PartialEq, Serialize)]
        pub enum Attr {
            $(#[doc = concat!("A `", stringify!($ct), "`.")] $cv($ct),)*
            /// UTF-8 text.
            String(String),
            /// Bytes.
            Binary(Vec<u8>),
            $(#[doc = concat!("A list of `", stringify!($lt), "`.")] $lv(Vec<$lt>),)*
            /// A list of strings.
            StringList(Vec<String>),
            /// A list of byte strings.
            BinaryList(Vec<Vec<u8>>),
        }

        impl Attr {
            /// Rebuilds a value from what a segment stores, from its own tag alone.
            pub fn from_stored(value: &AttributeValue) -> Self {
                match value {
                    $(AttributeValue::$cv(v) => Attr::$cv(*v),)*
                    AttributeValue::String(v) => Attr::String(v.to_string()),
                    AttributeValue::Binary(v) => Attr::Binary(v.to_vec()),
                    $(AttributeValue::$lv(v) => Attr::$lv(v.to_vec()),)*
                    AttributeValue::StringList(v) => Attr::StringList(v.iter().map(|s| s.to_string()).collect()),
                    AttributeValue::BinaryList(v) => Attr::BinaryList(v.iter().map(|b| b.to_vec()).collect()),
                }
            }

            /// The form a segment stores.
            pub fn to_stored(&self) -> AttributeValue {
                match self {
                    $(Attr::$cv(v) => AttributeValue::$cv(*v),)*
                    Attr::String(v) => AttributeValue::String(EcoString::from(v.as_str())),
                    Attr::Binary(v) => AttributeValue::Binary(v.clone().into_boxed_slice()),
                    $(Attr::$lv(v) => AttributeValue::$lv(v.clone().into_boxed_slice()),)*
                    Attr::StringList(v) => AttributeValue::StringList(v.iter().map(|s| EcoString::from(s.as_str())).collect()),
                    Attr::BinaryList(v) => AttributeValue::BinaryList(v.iter().map(|b| b.clone().into_boxed_slice()).collect()),
                }
            }

            /// The type the footer's schema records for this value: a list is `List { child }`.
            pub fn dtype(&self) -> DType {
                match self {
                    $(Attr::$cv(_) => DType::$cd,)*
                    Attr::String(_) => DType::String,
                    Attr::Binary(_) => DType::Binary,
                    $(Attr::$lv(_) => DType::List { child: Box::new(DType::$ld) },)*
                    Attr::StringList(_) => DType::List { child: Box::new(DType::String) },
                    Attr::BinaryList(_) => DType::List { child: Box::new(DType::Binary) },
                }
            }
        }
    };
}

attr_enum! {
    copy {
        Bool(bool) => Bool, Int8(i8) => Int8, Int16(i16) => Int16, Int32(i32) => Int32,
        Int64(i64) => Int64, UInt8(u8) => UInt8, UInt16(u16) => UInt16, UInt32(u32) => UInt32,
        UInt64(u64) => UInt64, Float32(f32) => Float32, Float64(f64) => Float64,
    }
    list {
        BoolList(bool) => Bool, Int8List(i8) => Int8, Int16List(i16) => Int16,
        Int32List(i32) => Int32, Int64List(i64) => Int64, UInt8List(u8) => UInt8,
        UInt16List(u16) => UInt16, UInt32List(u32) => UInt32, UInt64List(u64) => UInt64,
        Float32List(f32) => Float32, Float64List(f64) => Float64,
    }
}

impl From<&str> for Attr {
    fn from(value: &str) -> Self {
        Attr::String(value.to_owned())
    }
}

impl From<f64> for Attr {
    fn from(value: f64) -> Self {
        Attr::Float64(value)
    }
}

impl From<i64> for Attr {
    fn from(value: i64) -> Self {
        Attr::Int64(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn attr() -> impl Strategy<Value = Attr> {
        prop_oneof![
            any::<bool>().prop_map(Attr::Bool),
            any::<i8>().prop_map(Attr::Int8),
            any::<i64>().prop_map(Attr::Int64),
            any::<u16>().prop_map(Attr::UInt16),
            any::<u64>().prop_map(Attr::UInt64),
            any::<f32>().prop_map(Attr::Float32),
            any::<f64>().prop_map(Attr::Float64),
            ".*".prop_map(Attr::String),
            proptest::collection::vec(any::<u8>(), 0..8).prop_map(Attr::Binary),
            proptest::collection::vec(any::<i32>(), 0..8).prop_map(Attr::Int32List),
            proptest::collection::vec(any::<f64>(), 0..8).prop_map(Attr::Float64List),
            proptest::collection::vec(".*", 0..4).prop_map(Attr::StringList),
            proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..4), 0..4)
                .prop_map(Attr::BinaryList),
        ]
    }

    proptest! {
        #[test]
        fn attrs_round_trip_through_the_stored_form(value in attr()) {
            let back = Attr::from_stored(&value.to_stored());
            // Compare through the stored form: it compares floats by bits, so NaN round trips.
            prop_assert_eq!(back.to_stored(), value.to_stored());
        }
    }

    #[test]
    fn list_dtypes_are_lists_of_the_scalar() {
        assert_eq!(
            Attr::Int32List(vec![1]).dtype(),
            DType::List {
                child: Box::new(DType::Int32)
            }
        );
        assert_eq!(Attr::from("K").dtype(), DType::String);
        assert_eq!(
            Attr::from_stored(&AttributeValue::Float64(0.5)),
            Attr::Float64(0.5)
        );
    }
}
