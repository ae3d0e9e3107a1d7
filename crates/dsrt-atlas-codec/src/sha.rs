//! SHA-256 computed while bytes go to their destination.
//!
//! Writers hash in the same pass that writes, so a file is read once, by nobody.

use sha2::{Digest, Sha256};
use std::io::{self, Write};

/// A finished SHA-256 digest.
pub type Sha256Digest = [u8; 32];

/// Lowercase hex of `bytes`, the form manifests store checksums in.
pub fn to_hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        out.push(char::from(DIGITS[usize::from(byte >> 4)]));
        out.push(char::from(DIGITS[usize::from(byte & 0x0f)]));
    }
    out
}

/// The digest spelled by `hex`: exactly 64 lowercase hex digits (the manifest's form), else
/// `None`.
pub fn parse_sha256_hex(hex: &str) -> Option<Sha256Digest> {
    let bytes = hex.as_bytes();
    if bytes.len() != 64 {
        return None;
    }
    let digit = |b: u8| match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        _ => None,
    };
    let mut out = [0u8; 32];
    for (byte, pair) in out.iter_mut().zip(bytes.chunks_exact(2)) {
        *byte = digit(pair[0])? << 4 | digit(pair[1])?;
    }
    Some(out)
}

/// SHA-256 of a byte slice.
pub fn sha256(bytes: &[u8]) -> Sha256Digest {
    Sha256::digest(bytes).into()
}

/// SHA-256 of everything a reader yields, read in fixed-size chunks.
pub fn sha256_reader(mut reader: impl io::Read) -> io::Result<(Sha256Digest, u64)> {
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    let mut total = 0u64;
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        hasher.update(&buf[..n]);
        total += n as u64;
    }
    Ok((hasher.finalize().into(), total))
}

/// Wraps a writer and hashes every byte that the inner writer accepts.
#[derive(Debug)]
pub struct HashingWriter<W> {
    inner: W,
    hasher: Sha256,
    written: u64,
}

impl<W: Write> HashingWriter<W> {
    /// Starts hashing writes to `inner`.
    pub fn new(inner: W) -> Self {
        Self {
            inner,
            hasher: Sha256::new(),
            written: 0,
        }
    }

    /// Bytes accepted so far.
    pub fn bytes_written(&self) -> u64 {
        self.written
    }

    /// The inner writer.
    pub fn get_ref(&self) -> &W {
        &self.inner
    }

    /// The inner writer, mutably. Bytes written through it are not hashed.
    pub fn get_mut(&mut self) -> &mut W {
        &mut self.inner
    }

    /// Returns the inner writer, the digest of everything written and the byte count.
    pub fn finish(self) -> (W, Sha256Digest, u64) {
        (self.inner, self.hasher.finalize().into(), self.written)
    }
}

impl<W: Write> Write for HashingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        self.written += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
#[allow(clippy::cast_possible_truncation)] // test values are small
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_vector() {
        assert_eq!(
            to_hex(&sha256(b"abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    proptest! {
        #[test]
        fn hashing_writer_matches_one_shot(chunks in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..300), 0..10)) {
            let mut writer = HashingWriter::new(Vec::new());
            for chunk in &chunks {
                writer.write_all(chunk).unwrap();
            }
            let (bytes, digest, len) = writer.finish();
            prop_assert_eq!(len as usize, bytes.len());
            prop_assert_eq!(digest, sha256(&bytes));
            prop_assert_eq!(sha256_reader(&bytes[..]).unwrap(), (digest, len));
        }

        #[test]
        fn hex_round_trips(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let hex = to_hex(&bytes);
            let back: Vec<u8> = (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap()).collect();
            prop_assert_eq!(back, bytes);
        }
    }
}
