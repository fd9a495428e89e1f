//! The Fortran bindings' tests: the programs in `tests/fortran/` (free
//! form with `use mpi`, one fixed-form program with `mpif.h`, one calling
//! C through the handle conversions), built with `capi/mpifort -Wall
//! -Werror` and run at 1, 2, 3, 4 and 7 ranks over `sockets-epoll` and on
//! 4 ranks over every other transport of the host. Each program checks
//! its results and ends the job with `MPI_Abort` on a wrong one. Also:
//! `capi/README.md`'s Fortran table against the library's symbols.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;

use super::{launch_ok, succeed, Env, TestFn};

/// The programs, and the file each is in.
const PROGRAMS: [(&str, &str); 10] = [
    ("ring", "ring.f90"),
    ("reduce", "reduce.f90"),
    ("alltoallv", "alltoallv.f90"),
    ("stencil", "stencil.f90"),
    ("ddt", "ddt.f90"),
    ("cg", "cg.f90"),
    ("legacy", "legacy.f"),
    ("interop", "interop.f90"),
    ("caching", "caching.f90"),
    ("rma", "rma.f90"),
];

fn dir(env: &Env) -> PathBuf {
    env.manifest.join("tests/fortran")
}

fn exe(env: &Env, name: &str) -> PathBuf {
    env.work.join(format!("fortran-{name}"))
}

/// `capi/mpifort` on the test library, binding every symbol at load.
fn mpifort(env: &Env) -> Command {
    let mut c = Command::new(env.manifest.join("mpifort"));
    c.env("O2G_MPI_LIBDIR", &env.profile)
        .args(["-Wall", "-Werror", "-O1", "-Wl,-z,now", "-I"])
        .arg(dir(env))
        .current_dir(&env.work);
    c
}

fn build(env: &Env, name: &str, file: &str) -> Result<(), String> {
    let mut fc = mpifort(env);
    fc.arg("-o").arg(exe(env, name)).arg(dir(env).join(file));
    if name == "interop" {
        let obj = env.work.join("fortran-interop_c.o");
        succeed(
            env.mpicc()
                .args(["-Wall", "-Werror", "-c", "-o"])
                .arg(&obj)
                .arg(dir(env).join("interop_c.c")),
        )?;
        fc.arg(&obj);
    }
    succeed(&mut fc).map(drop)
}

/// The README's "Fortran" table: the exported C functions without a
/// Fortran binding, by name.
fn unbound_rows(readme: &str) -> Result<BTreeSet<String>, String> {
    let section = readme
        .split("\n### C functions without a Fortran binding\n")
        .nth(1)
        .ok_or("capi/README.md has no \"### C functions without a Fortran binding\" section")?;
    let section = section.split("\n#").next().unwrap_or(section);
    let mut rows = BTreeSet::new();
    for line in section.lines() {
        let Some(rest) = line.strip_prefix("| `") else {
            continue;
        };
        let cells: Vec<&str> = rest.split('|').map(str::trim).collect();
        let [name, why, ..] = cells[..] else {
            return Err(format!("malformed row: {line}"));
        };
        if why.is_empty() {
            return Err(format!("{name} gives no reason"));
        }
        rows.insert(name.trim_end_matches('`').to_string());
    }
    Ok(rows)
}

/// The library's defined dynamic symbols.
fn symbols(env: &Env) -> Result<BTreeSet<String>, String> {
    let out = succeed(
        Command::new("nm")
            .args(["-D", "--defined-only"])
            .arg(env.profile.join("libmpi_abi.so")),
    )?;
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().last().map(str::to_string))
        .collect())
}

/// Every exported C function has `mpi_xxx_` and `pmpi_xxx_`, or a row in
/// the table saying why not, and no row names a function that has them.
fn table_matches(env: &Env) -> Result<(), String> {
    let readme =
        std::fs::read_to_string(env.manifest.join("README.md")).map_err(|e| e.to_string())?;
    let rows = unbound_rows(&readme)?;
    let syms = symbols(env)?;
    let mut wrong = Vec::new();
    for c in syms.iter().filter(|s| s.starts_with("MPI_")) {
        let f = format!("{}_", c.to_lowercase());
        let bound = syms.contains(&f) && syms.contains(&format!("p{f}"));
        if bound == rows.contains(c) {
            wrong.push(if bound {
                format!("{c} has a Fortran binding but a row saying why not")
            } else {
                format!("{c} has no Fortran binding and no row saying why")
            });
        }
    }
    for r in rows.iter().filter(|r| !syms.contains(*r)) {
        wrong.push(format!("{r} has a row but the library does not export it"));
    }
    if wrong.is_empty() {
        Ok(())
    } else {
        Err(wrong.join("\n"))
    }
}

pub(super) fn tests(env: &Env) -> Vec<(String, TestFn<'_>)> {
    let mut tests: Vec<(String, TestFn)> = vec![(
        "fortran_table_matches_the_library".into(),
        Box::new(move || table_matches(env)),
    )];
    for (name, file) in PROGRAMS {
        tests.push((
            format!("fortran_build_{name}_wall_werror"),
            Box::new(move || build(env, name, file)),
        ));
    }
    for (name, _) in PROGRAMS {
        for np in [1, 2, 3, 4, 7] {
            tests.push((
                format!("fortran_run_{name}_sockets-epoll_np{np}"),
                Box::new(move || launch_ok(env, &exe(env, name), np, "sockets-epoll", None)),
            ));
        }
        for transport in ["sockets-select", "sockets-poll", "dimmnet", "hyphenlink"] {
            tests.push((
                format!("fortran_run_{name}_{transport}_np4"),
                Box::new(move || launch_ok(env, &exe(env, name), 4, transport, None)),
            ));
        }
    }
    tests
}
