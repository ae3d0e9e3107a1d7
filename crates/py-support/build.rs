//! Unit tests embed the interpreter: their binaries find libpython by rpath, with no
//! `LD_LIBRARY_PATH` (a no-op for the extension modules, which do not link libpython).
fn main() {
    pyo3_build_config::add_libpython_rpath_link_args();
}
