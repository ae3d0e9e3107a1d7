//! NumPy's `.npy` format, version 1.0: the magic `\x93NUMPY`, the version bytes `1 0`, a
//! little-endian `u16` header length, and an ASCII header — a Python dict literal with `descr`,
//! `fortran_order` and `shape` — padded with spaces and ended by `\n` so that the data starts at
//! a multiple of 64 bytes; then the elements, C order.

use atlas::TimestampNs;

/// The first bytes of every `.npy` file.
pub(crate) const MAGIC: &[u8; 6] = b"\x93NUMPY";

/// An element type with a NumPy dtype.
pub(crate) trait NpyElement: Sized {
    /// NumPy's dtype string (`descr`) for `values`; variable-length types size it to the
    /// longest value.
    fn descr(values: &[Self]) -> String;
    /// Appends `values` in that dtype.
    fn write(values: &[Self], descr_width: usize, out: &mut Vec<u8>);
    /// The per-element width the dtype string declares (variable-length types only).
    fn width(_values: &[Self]) -> usize {
        0
    }
}

macro_rules! fixed {
    ($($t:ty => $descr:literal),* $(,)?) => {$(
        impl NpyElement for $t {
            fn descr(_: &[Self]) -> String {
                $descr.to_owned()
            }
            fn write(values: &[Self], _: usize, out: &mut Vec<u8>) {
                for v in values {
                    out.extend_from_slice(&v.to_le_bytes());
                }
            }
        }
    )*};
}

fixed!(
    i8 => "|i1", i16 => "<i2", i32 => "<i4", i64 => "<i8",
    u8 => "|u1", u16 => "<u2", u32 => "<u4", u64 => "<u8",
    f32 => "<f4", f64 => "<f8",
);

impl NpyElement for TimestampNs {
    fn descr(_: &[Self]) -> String {
        "<M8[ns]".to_owned()
    }
    fn write(values: &[Self], _: usize, out: &mut Vec<u8>) {
        for v in values {
            out.extend_from_slice(&v.0.to_le_bytes());
        }
    }
}

/// Fixed-width UCS-4 (`<U{n}`, `n` the most code points of any value), zero-padded.
impl NpyElement for String {
    fn width(values: &[Self]) -> usize {
        values
            .iter()
            .map(|s| s.chars().count())
            .max()
            .unwrap_or(0)
            .max(1)
    }
    fn descr(values: &[Self]) -> String {
        format!("<U{}", Self::width(values))
    }
    fn write(values: &[Self], width: usize, out: &mut Vec<u8>) {
        for s in values {
            let mut n = 0;
            for c in s.chars() {
                out.extend_from_slice(&u32::from(c).to_le_bytes());
                n += 1;
            }
            out.resize(out.len() + (width - n) * 4, 0);
        }
    }
}

/// Fixed-width bytes (`|S{n}`), zero-padded. NumPy drops trailing zero bytes when it reads
/// such a value back.
impl NpyElement for Vec<u8> {
    fn width(values: &[Self]) -> usize {
        values.iter().map(Vec::len).max().unwrap_or(0).max(1)
    }
    fn descr(values: &[Self]) -> String {
        format!("|S{}", Self::width(values))
    }
    fn write(values: &[Self], width: usize, out: &mut Vec<u8>) {
        for v in values {
            out.extend_from_slice(v);
            out.resize(out.len() + (width - v.len()), 0);
        }
    }
}

/// NumPy leaves room after the dict for the first axis to grow to this many digits in place.
const GROWTH_AXIS_MAX_DIGITS: usize = 21;

/// The header dict for `descr` and `shape`, as NumPy writes it, with the spare spaces NumPy
/// (1.24 and later) leaves for the first axis to grow.
fn header_dict(descr: &str, shape: &[usize]) -> String {
    let growth = shape.first().map_or(0, |n| {
        GROWTH_AXIS_MAX_DIGITS.saturating_sub(n.to_string().len())
    });
    let shape = match shape {
        [] => "()".to_owned(),
        [n] => format!("({n},)"),
        dims => format!(
            "({})",
            dims.iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let mut dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    dict.extend(std::iter::repeat_n(' ', growth));
    dict
}

/// The whole `.npy` file for `values` (C order) of `shape`; `None` if the header would not fit
/// version 1.0's `u16` length.
pub(crate) fn encode<T: NpyElement>(shape: &[usize], values: &[T]) -> Option<Vec<u8>> {
    let descr = T::descr(values);
    let mut header = header_dict(&descr, shape);
    // magic (6) + version (2) + length (2) + header, a multiple of 64, the last byte '\n'.
    let unpadded = MAGIC.len() + 2 + 2 + header.len() + 1;
    let padded = unpadded.div_ceil(64) * 64;
    header.extend(std::iter::repeat_n(' ', padded - unpadded));
    header.push('\n');
    let header_len = u16::try_from(header.len()).ok()?;
    let mut out = Vec::with_capacity(padded + values.len() * 8);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&[1, 0]);
    out.extend_from_slice(&header_len.to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    T::write(values, T::width(values), &mut out);
    Some(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn header_is_numpys_byte_for_byte() {
        // What `numpy.save` writes for `np.arange(6, dtype='<f4').reshape(2, 3)`: the dict, 20
        // spare spaces for the first axis, padding to 128 bytes, '\n'.
        let values: Vec<f32> = (0..6u8).map(f32::from).collect();
        let bytes = encode(&[2, 3], &values).unwrap();
        let mut expected = b"\x93NUMPY\x01\x00\x76\x00".to_vec();
        let dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
        expected.extend_from_slice(dict.as_bytes());
        expected.resize(127, b' ');
        expected.push(b'\n');
        assert_eq!(&bytes[..128], &expected[..]);
        assert_eq!(bytes.len(), 128 + 24);
        assert_eq!(&bytes[128..132], &0f32.to_le_bytes());
    }

    /// The header text and the data of a `.npy` file, after checking the framing.
    fn split(bytes: &[u8]) -> (String, &[u8]) {
        assert_eq!(&bytes[..8], b"\x93NUMPY\x01\x00");
        let len = usize::from(u16::from_le_bytes([bytes[8], bytes[9]]));
        assert_eq!((10 + len) % 64, 0, "data starts 64-aligned");
        assert_eq!(bytes[10 + len - 1], b'\n');
        (
            String::from_utf8(bytes[10..10 + len].to_vec()).unwrap(),
            &bytes[10 + len..],
        )
    }

    #[test]
    fn one_axis_zero_axes_and_text() {
        let file1 = encode(&[3], &[1i64, 2, 3]).unwrap();
        let (header, data) = split(&file1);
        assert!(header.starts_with("{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }"));
        assert_eq!(data.len(), 24);
        let file2 = encode::<u8>(&[], &[7]).unwrap();
        let (header, data) = split(&file2);
        assert!(header.starts_with("{'descr': '|u1', 'fortran_order': False, 'shape': (), }"));
        assert_eq!(data, [7]);
        let file3 = encode(&[2], &["é".to_owned(), "ab".to_owned()]).unwrap();
        let (header, data) = split(&file3);
        assert!(header.starts_with("{'descr': '<U2',"), "{header}");
        assert_eq!(
            data,
            [0xe9, 0, 0, 0, 0, 0, 0, 0, b'a', 0, 0, 0, b'b', 0, 0, 0]
        );
        let file4 = encode(&[2], &[vec![1u8], vec![]]).unwrap();
        let (header, data) = split(&file4);
        assert!(header.starts_with("{'descr': '|S1',"), "{header}");
        assert_eq!(data, [1, 0]);
    }
}
