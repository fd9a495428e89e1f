//! Gives the C ABI library the standard ABI's SONAME (MPI 5.0 chapter 20,
//! "Application Binary Interface": the library is `libmpi_abi.so.1`), so a
//! program linked against any standard-ABI MPI loads o2g's by that name;
//! and generates the Fortran bindings (`build/fortran.rs`).
//!
//! The Fortran headers go to `OUT_DIR` and, for `mpifort` in the build
//! tree, to `target/<profile>/fortran/` (`mpif.h`, `mpi.f90` and, when
//! gfortran is there, the compiled `mpi.mod`). `OUT_DIR` is
//! `target/<profile>/build/<crate>-<hash>/out`, so that directory is three
//! levels up; `capi/mpifort` looks for it beside the library.

#[path = "build/fortran.rs"]
mod fortran;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::{env, fs};

fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libmpi_abi.so.1");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=build/fortran.rs");
    println!("cargo:rerun-if-changed=include/mpi.h");
    println!("cargo:rerun-if-changed=README.md");
    println!("cargo:rerun-if-env-changed=O2G_FC");

    let header = fs::read_to_string("include/mpi.h").expect("include/mpi.h");
    let readme = fs::read_to_string("README.md").expect("README.md");
    let protos = fortran::prototypes(&header);
    let exported = fortran::exported(&readme);
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR"));
    write(
        &out.join("fortran_bindings.rs"),
        &fortran::rust_bindings(&protos, &exported),
    );

    let consts = fortran::constants(&header);
    let mpif = fortran::mpif_h(&consts);
    let module = fortran::module_f90(&protos, &exported, &consts);
    let dir = out
        .ancestors()
        .nth(3)
        .expect("OUT_DIR is target/<profile>/build/<crate>/out")
        .join("fortran");
    fs::create_dir_all(&dir).expect("create the Fortran directory");
    write(&dir.join("mpif.h"), &mpif);
    write(&dir.join("mpi.f90"), &module);
    compile_module(&dir);
}

/// Writes `text` to `path` unless it is already there, so an unchanged
/// header keeps its time stamp.
fn write(path: &Path, text: &str) {
    if fs::read_to_string(path).ok().as_deref() != Some(text) {
        fs::write(path, text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
}

/// Compiles `mpi.f90` into `mpi.mod` with gfortran (`$O2G_FC` if set). A
/// machine without gfortran builds the C ABI all the same and says why
/// `use mpi` is missing.
fn compile_module(dir: &Path) {
    let fc = env::var("O2G_FC").unwrap_or_else(|_| "gfortran".into());
    let status = Command::new(&fc)
        .current_dir(dir)
        .args(["-c", "-fsyntax-only", "mpi.f90"])
        .status();
    match status {
        Ok(s) if s.success() => {}
        Ok(s) => panic!("{fc} could not compile mpi.f90 ({s})"),
        Err(e) => println!(
            "cargo:warning=no Fortran compiler ({fc}: {e}): mpif.h is made, but `use mpi` needs gfortran at build time"
        ),
    }
}
