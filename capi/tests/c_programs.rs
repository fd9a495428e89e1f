//! The C ABI's tests: C programs in `tests/c/` built with `capi/mpicc`
//! (`-Wall -Werror`) and run with `o2grun` at 1, 2, 3, 4 and 7 ranks over
//! the socket transports; each program checks every value itself and
//! exits non-zero on any wrong one. Every program links with
//! `-Wl,-z,now`, so a function the library lacks fails at load. Also: the wrappers (`mpicc`, `mpicxx`,
//! their Open MPI and MPICH options, the pkg-config file; `wrappers.rs`),
//! fatal errors and `MPI_Abort` ending the job, so too a failed `MPI_Init`
//! and a call from a second thread, this header against MPICH 5.0's
//! standard-ABI `mpi.h` (constants, types, prototypes; `header.rs`), and
//! binary compatibility (programs compiled and linked against MPICH's
//! standard-ABI header and library, run unmodified against o2g's
//! `libmpi_abi.so.1` by `LD_LIBRARY_PATH`), and the Fortran bindings
//! (`fortran.rs`).
//!
//! Needs, in the same target directory: `o2grun` (built by
//! `cargo test --workspace`, or `cargo build -p mpi --bins`) and
//! `libmpi_abi.so` (which the harness builds itself: `cargo test` does not
//! build a cdylib). The MPICH files come from
//! `scripts/fetch-mpi-abi.sh` (run by `scripts/setup.sh`); without them the
//! ABI tests fail, they never skip.
//!
//! Prints libtest-style lines and a `test result:` summary
//! (`harness = false`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Instant;

#[path = "c_programs/fortran.rs"]
mod fortran;
#[path = "c_programs/function_table.rs"]
mod function_table;
#[path = "c_programs/header.rs"]
mod header;
#[path = "c_programs/profiling.rs"]
mod profiling;
#[path = "c_programs/wrappers.rs"]
mod wrappers;

/// Where everything is.
struct Env {
    manifest: PathBuf,
    profile: PathBuf,
    work: PathBuf,
}

impl Env {
    fn new() -> Result<Self, String> {
        let exe = std::env::current_exe().map_err(|e| e.to_string())?;
        // target/<profile>/deps/c_programs-<hash>
        let profile = exe
            .parent()
            .and_then(Path::parent)
            .ok_or("cannot locate the target directory")?
            .to_path_buf();
        let work = profile.join("capi-tests");
        std::fs::create_dir_all(&work).map_err(|e| e.to_string())?;
        let env = Self {
            manifest: PathBuf::from(env!("CARGO_MANIFEST_DIR")),
            profile,
            work,
        };
        env.build_library()?;
        Ok(env)
    }

    /// `cargo test` builds this package's test programs but not its cdylib,
    /// so the library is built here (a no-op when it is up to date).
    fn build_library(&self) -> Result<(), String> {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let mut c = Command::new(cargo);
        c.args(["build", "--quiet", "-p", "o2g-mpi-abi", "--manifest-path"])
            .arg(self.manifest.join("../Cargo.toml"));
        if self.profile.file_name().is_some_and(|n| n == "release") {
            c.arg("--release");
        }
        let st = c.status().map_err(|e| format!("cargo build: {e}"))?;
        if !st.success() || !self.profile.join("libmpi_abi.so").exists() {
            return Err(format!(
                "building libmpi_abi.so into {} failed ({st})",
                self.profile.display()
            ));
        }
        Ok(())
    }

    fn o2grun(&self) -> Result<PathBuf, String> {
        let p = self.profile.join("o2grun");
        if p.exists() {
            Ok(p)
        } else {
            Err(format!(
                "{} is missing: run `cargo build -p mpi --bins` (cargo test --workspace builds it)",
                p.display()
            ))
        }
    }

    /// `capi/mpicc` on the test library, linking with `-Wl,-z,now`: every
    /// symbol a program needs is bound at load, so a function the library
    /// lacks fails there, not on first call (or never).
    fn mpicc(&self) -> Command {
        let mut c = Command::new(self.manifest.join("mpicc"));
        c.env("O2G_MPI_LIBDIR", &self.profile).arg("-Wl,-z,now");
        c
    }

    fn source(&self, name: &str) -> PathBuf {
        self.manifest.join("tests/c").join(format!("{name}.c"))
    }

    /// The unpacked MPICH 5.0 standard-ABI files.
    fn mpich(&self) -> Result<(PathBuf, PathBuf), String> {
        let cache = std::env::var_os("O2G_CACHE")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache/o2g")))
            .ok_or("neither O2G_CACHE nor HOME is set")?;
        let root = cache.join("mpi-abi/current/usr/lib/x86_64-linux-gnu");
        let inc = root.join("mpi_abi_mpich/include");
        let lib = root.join("libmpi_abi_mpich.so.1.0.0");
        if inc.join("mpi.h").exists() && lib.exists() {
            Ok((inc, lib))
        } else {
            Err(format!(
                "MPICH 5.0 standard-ABI files missing under {}: run scripts/fetch-mpi-abi.sh",
                root.display()
            ))
        }
    }

    /// A directory holding only `libmpi_abi.so.1` → o2g's library.
    fn abi_libdir(&self) -> Result<PathBuf, String> {
        let dir = self.work.join("abi-lib");
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        let link = dir.join("libmpi_abi.so.1");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(self.profile.join("libmpi_abi.so"), &link)
            .map_err(|e| e.to_string())?;
        Ok(dir)
    }
}

fn run(cmd: &mut Command) -> Result<Output, String> {
    cmd.output().map_err(|e| format!("{cmd:?}: {e}"))
}

fn describe(out: &Output) -> String {
    format!(
        "{}\n--- stdout\n{}--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn succeed(cmd: &mut Command) -> Result<Output, String> {
    let out = run(cmd)?;
    if out.status.success() {
        Ok(out)
    } else {
        Err(format!("{cmd:?} failed: {}", describe(&out)))
    }
}

/// Builds `tests/c/<name>.c` with our mpicc and `-Wall -Werror` (and
/// `-pthread` for the program that starts a thread).
fn build(env: &Env, name: &str) -> Result<PathBuf, String> {
    let exe = env.work.join(name);
    let mut cc = env.mpicc();
    cc.args(["-Wall", "-Werror", "-O1"]);
    if matches!(name, "threads" | "serialized" | "concurrent" | "multiple") {
        cc.arg("-pthread");
    }
    succeed(cc.arg("-o").arg(&exe).arg(env.source(name)))?;
    Ok(exe)
}

/// Runs `prog` on `np` ranks over `transport`, which must end the job
/// with a non-zero status, never print `not` on stdout, and name every
/// one of `want` on stderr.
fn launch_fatal(
    env: &Env,
    prog: &str,
    np: u32,
    transport: &str,
    not: &str,
    want: &[&str],
) -> Result<(), String> {
    let out = launch(env, &env.work.join(prog), np, transport, None)?;
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    let missing: Vec<&&str> = want.iter().filter(|w| !stderr.contains(**w)).collect();
    if out.status.success() || stdout.contains(not) || !missing.is_empty() {
        return Err(format!(
            "the job did not end with a message naming {missing:?}: {}",
            describe(&out)
        ));
    }
    Ok(())
}

/// Runs `prog` on `np` ranks over `transport`.
fn launch(
    env: &Env,
    prog: &Path,
    np: u32,
    transport: &str,
    libpath: Option<&Path>,
) -> Result<Output, String> {
    let mut cmd = Command::new(env.o2grun()?);
    cmd.args(["--timeout", "120", "-n", &np.to_string()])
        .arg(prog)
        .env("O2G_TRANSPORT", transport);
    if let Some(p) = libpath {
        cmd.env("LD_LIBRARY_PATH", p);
    }
    run(&mut cmd)
}

fn launch_ok(
    env: &Env,
    prog: &Path,
    np: u32,
    transport: &str,
    libpath: Option<&Path>,
) -> Result<(), String> {
    let out = launch(env, prog, np, transport, libpath)?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{} on {np} ranks ({transport}): {}",
            prog.display(),
            describe(&out)
        ))
    }
}

type TestFn<'a> = Box<dyn FnOnce() -> Result<(), String> + 'a>;

fn main() {
    let start = Instant::now();
    let env = match Env::new() {
        Ok(e) => e,
        Err(e) => {
            eprintln!("c_programs: {e}");
            std::process::exit(1);
        }
    };
    let env = &env;
    let mut tests: Vec<(String, TestFn)> = Vec::new();
    tests.extend(function_table::tests(env));
    tests.extend(profiling::tests(env));
    tests.extend(header::tests(env));
    tests.extend(wrappers::tests(env));
    tests.extend(fortran::tests(env));
    let programs = [
        "env",
        "p2p",
        "coll",
        "is",
        "handles",
        "coll2",
        "icoll",
        "ddt_coll",
        "pcoll",
        "p2p_modes",
        "waitsome",
        "persistent",
        "large_count",
        "mprobe",
        "grequest",
        "datatype",
        "group",
        "attr",
        "info",
        "errh",
        "topo",
        "neighbor",
        "intercomm",
        "type_attr",
        "comm_buffer",
        "comm_from_group",
        "abi_info",
        "serialized",
        "rma",
        "rma_sync",
        "rma_dynamic",
        "rma_shared",
        "rma_errors",
        "rma_module",
        "multiple",
    ];

    tests.push((
        "mpicc_passes_wall_werror".into(),
        Box::new(move || {
            let c = env.work.join("warns.c");
            std::fs::write(
                &c,
                "#include <mpi.h>\nint main(void) { int unused; return 0; }\n",
            )
            .map_err(|e| e.to_string())?;
            let out = run(env
                .mpicc()
                .args(["-Wall", "-Werror", "-o"])
                .arg(env.work.join("warns"))
                .arg(&c))?;
            if out.status.success() {
                return Err("a warning did not fail the build under -Wall -Werror".into());
            }
            succeed(
                env.mpicc()
                    .args(["-Wall", "-o"])
                    .arg(env.work.join("warns"))
                    .arg(&c),
            )
            .map(drop)
        }),
    ));
    for name in programs
        .iter()
        .chain(&["fatal", "abort", "init_fails", "threads", "concurrent"])
    {
        tests.push((
            format!("build_{name}_wall_werror"),
            Box::new(move || build(env, name).map(drop)),
        ));
    }
    for name in programs {
        for transport in ["sockets-epoll", "sockets-select"] {
            for np in [1, 2, 3, 4, 7] {
                tests.push((
                    format!("run_{name}_{transport}_np{np}"),
                    Box::new(move || launch_ok(env, &env.work.join(name), np, transport, None)),
                ));
            }
        }
    }
    // One-sided communication is carried out by each target's library:
    // every transport, as its own wait loop runs the agent.
    // So is a thread's turn while another waits (MPI_THREAD_MULTIPLE).
    for name in [
        "rma",
        "rma_sync",
        "rma_dynamic",
        "rma_shared",
        "rma_errors",
        "rma_module",
        "multiple",
    ] {
        for transport in ["sockets-poll", "dimmnet", "hyphenlink"] {
            tests.push((
                format!("run_{name}_{transport}_np4"),
                Box::new(move || launch_ok(env, &env.work.join(name), 4, transport, None)),
            ));
        }
    }
    for np in [1, 3] {
        tests.push((
            format!("errors_are_fatal_by_default_np{np}"),
            Box::new(move || {
                let out = launch(env, &env.work.join("fatal"), np, "sockets-epoll", None)?;
                let err = String::from_utf8_lossy(&out.stderr);
                if out.status.success() || !err.contains("MPI_ERR_ROOT") {
                    return Err(format!(
                        "the job was not ended by the error: {}",
                        describe(&out)
                    ));
                }
                if err.contains("primitive type") {
                    return Err(format!(
                        "the fatal message repeats an earlier returned error's reason: {err}"
                    ));
                }
                Ok(())
            }),
        ));
        tests.push((
            format!("abort_ends_the_job_np{np}"),
            Box::new(move || {
                let out = launch(env, &env.work.join("abort"), np, "sockets-select", None)?;
                let text = String::from_utf8_lossy(&out.stdout);
                if out.status.success() || text.contains("was not aborted") {
                    return Err(format!("MPI_Abort did not end the job: {}", describe(&out)));
                }
                Ok(())
            }),
        ));
    }
    for bad in ["bogus", "sockets_epoll"] {
        for np in [1, 2] {
            tests.push((
                format!("init_failure_is_fatal_{bad}_np{np}"),
                Box::new(move || {
                    let valid = "sockets-epoll, sockets-select, sockets-poll";
                    let quoted = format!("O2G_TRANSPORT=\"{bad}\"");
                    launch_fatal(
                        env,
                        "init_fails",
                        np,
                        bad,
                        "MPI_Init returned",
                        &["MPI_Init", &quoted, valid],
                    )
                }),
            ));
        }
    }
    tests.push((
        "init_thread_with_no_level_is_fatal".into(),
        Box::new(move || {
            let c = env.work.join("bad_level.c");
            std::fs::write(
                &c,
                "#include <mpi.h>\n#include <stdio.h>\nint main(int c, char **v) {\n    int p;\n    \
                 MPI_Init_thread(&c, &v, 12345, &p);\n    printf(\"returned\\n\");\n    return 0;\n}\n",
            )
            .map_err(|e| e.to_string())?;
            let exe = env.work.join("bad_level");
            succeed(env.mpicc().args(["-Wall", "-Werror", "-o"]).arg(&exe).arg(&c))?;
            let out = launch(env, &exe, 2, "sockets-epoll", None)?;
            let err = String::from_utf8_lossy(&out.stderr);
            if out.status.success()
                || String::from_utf8_lossy(&out.stdout).contains("returned")
                || !err.contains("MPI_Init_thread")
                || !err.contains("not a thread level")
            {
                return Err(format!("the job did not end saying why: {}", describe(&out)));
            }
            Ok(())
        }),
    ));
    // Two ranks and more: alone, the blocked receive is a deadlock the
    // library reports first.
    for np in [2, 3] {
        tests.push((
            format!("concurrent_calls_under_serialized_are_fatal_np{np}"),
            Box::new(move || {
                launch_fatal(
                    env,
                    "concurrent",
                    np,
                    "sockets-epoll",
                    "returned",
                    &[
                        "MPI_Comm_rank",
                        "another thread was inside MPI",
                        "MPI_THREAD_SERIALIZED",
                    ],
                )
            }),
        ));
        tests.push((
            format!("calls_from_a_second_thread_are_fatal_np{np}"),
            Box::new(move || {
                launch_fatal(
                    env,
                    "threads",
                    np,
                    "sockets-epoll",
                    "returned",
                    &[
                        "MPI_Send",
                        "called from a thread other than the one that initialized MPI",
                        "MPI_THREAD_FUNNELED",
                    ],
                )
            }),
        ));
    }
    for name in programs {
        tests.push((
            format!("binary_compat_{name}_built_with_mpich_abi"),
            Box::new(move || {
                let (inc, lib) = env.mpich()?;
                let exe = env.work.join(format!("{name}-mpich-abi"));
                // Compiled and linked "elsewhere": MPICH's standard-ABI
                // header and library, no o2g file at all.
                succeed(
                    Command::new("cc")
                        .args(["-Wall", "-O1", "-I"])
                        .arg(&inc)
                        .arg("-o")
                        .arg(&exe)
                        .arg(env.source(name))
                        .arg(&lib)
                        .arg("-Wl,--allow-shlib-undefined")
                        .arg("-Wl,-z,now"),
                )?;
                let dynamic = succeed(Command::new("readelf").arg("-d").arg(&exe))?;
                if !String::from_utf8_lossy(&dynamic.stdout).contains("[libmpi_abi.so.1]") {
                    return Err("the program does not need libmpi_abi.so.1".into());
                }
                // Without a library path it cannot start: the path is the
                // only thing that selects o2g.
                let bare = run(Command::new(&exe).env_remove("LD_LIBRARY_PATH"))?;
                if bare.status.success() {
                    return Err("the program started without libmpi_abi.so.1 on the path".into());
                }
                let dir = env.abi_libdir()?;
                launch_ok(env, &exe, 3, "sockets-epoll", Some(&dir))?;
                launch_ok(env, &exe, 4, "sockets-select", Some(&dir))
            }),
        ));
    }

    // As libtest: arguments that are not options keep only the tests whose
    // names contain one of them (a program's build test shares its name).
    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let before = tests.len();
    tests.retain(|(name, _)| {
        filters.is_empty() || filters.iter().any(|f| name.contains(f.as_str()))
    });
    let filtered = before - tests.len();
    let total = tests.len();
    println!("\nrunning {total} tests");
    let (mut passed, mut failed) = (0, Vec::new());
    for (name, f) in tests {
        match f() {
            Ok(()) => {
                println!("test {name} ... ok");
                passed += 1;
            }
            Err(e) => {
                println!("test {name} ... FAILED");
                failed.push((name, e));
            }
        }
    }
    if !failed.is_empty() {
        println!("\nfailures:");
        for (name, e) in &failed {
            println!("\n---- {name} ----\n{e}");
        }
    }
    println!(
        "\ntest result: {}. {} passed; {} failed; 0 ignored; 0 measured; {} filtered out; finished in {:.2}s\n",
        if failed.is_empty() { "ok" } else { "FAILED" },
        passed,
        failed.len(),
        filtered,
        start.elapsed().as_secs_f64()
    );
    if !failed.is_empty() {
        std::process::exit(1);
    }
}
