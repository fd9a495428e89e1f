//! Gives the C ABI library the standard ABI's SONAME (MPI 5.0 chapter 20,
//! "Application Binary Interface": the library is `libmpi_abi.so.1`), so a
//! program linked against any standard-ABI MPI loads o2g's by that name.

fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libmpi_abi.so.1");
    println!("cargo:rerun-if-changed=build.rs");
}
