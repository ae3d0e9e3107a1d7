//! Opens the DatasetRT golden fixture with `dsrt-reader` alone and prints what it holds.

use dsrt_reader::{Cache, OpenOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args()
        .nth(1)
        .ok_or("usage: downstream-reader-only CACHE_DIR")?;
    let cache = Cache::open(&path, OpenOptions::validated())?;
    let mut total = 0usize;
    for i in 0..cache.len() {
        total += cache.sample(i)?.payload.len();
    }
    println!("{path}: {} samples, {total} payload bytes", cache.len());
    Ok(())
}
