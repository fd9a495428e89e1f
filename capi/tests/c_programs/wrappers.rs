//! The compiler wrappers `mpicc`, `mpicxx` and `mpifort` (one script under
//! three names) and the pkg-config file: every option Open MPI's and MPICH's
//! wrappers accept prints the right flags and compiles nothing, the
//! compiler comes from the right variable, and the printed flags, the
//! pkg-config flags and `mpicxx` each build a program that runs.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::{launch_ok, run, succeed, Env, TestFn};

/// The variables that choose a wrapper's compiler.
const COMPILER_VARS: [&str; 6] = [
    "O2G_MPICC_CC",
    "CC",
    "O2G_MPICXX_CXX",
    "CXX",
    "O2G_MPIFORT_FC",
    "FC",
];

/// `capi/<name>` with the test library directory and no compiler
/// variables from the caller's environment.
fn wrapper(env: &Env, name: &str) -> Command {
    let mut c = Command::new(env.manifest.join(name));
    c.env("O2G_MPI_LIBDIR", &env.profile);
    for v in COMPILER_VARS {
        c.env_remove(v);
    }
    c
}

/// Runs `name args` with the compiler set to `false` (so compiling would
/// fail); returns the words it printed.
fn show(env: &Env, name: &str, args: &[&str]) -> Result<Vec<String>, String> {
    let var = match name {
        "mpicxx" => "O2G_MPICXX_CXX",
        "mpifort" => "O2G_MPIFORT_FC",
        _ => "O2G_MPICC_CC",
    };
    let out = succeed(wrapper(env, name).env(var, "false").args(args))?;
    let s = String::from_utf8_lossy(&out.stdout);
    if s.lines().count() != 1 {
        return Err(format!("{name} {args:?} printed not one line: {s}"));
    }
    Ok(s.split_whitespace().map(String::from).collect())
}

fn expect(name: &str, args: &[&str], got: &[String], want: &[String]) -> Result<(), String> {
    if got == want {
        Ok(())
    } else {
        Err(format!("{name} {args:?} printed {got:?}, want {want:?}"))
    }
}

/// Every printing option of one wrapper.
fn options(env: &Env, name: &str) -> Result<(), String> {
    // mpifort's headers (mpif.h, mpi.mod) are the build's, beside the library.
    let inc_dir = if name == "mpifort" {
        env.profile.join("fortran")
    } else {
        env.manifest.join("include")
    };
    let inc = format!("-I{}", inc_dir.display());
    let lib = env.profile.display().to_string();
    let link = vec![
        format!("-L{lib}"),
        format!("-Wl,-rpath,{lib}"),
        "-lmpi_abi".to_string(),
    ];
    let words = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let cmd = |mid: &[&str], with_link: bool| {
        let mut v = vec!["false".to_string(), inc.clone()];
        v.extend(words(mid));
        if with_link {
            v.extend(link.clone());
        }
        v
    };
    let cases: Vec<(Vec<&str>, Vec<String>)> = vec![
        (
            vec!["-show", "-o", "x", "x.c"],
            cmd(&["-o", "x", "x.c"], true),
        ),
        (vec!["-showme", "-O2", "x.c"], cmd(&["-O2", "x.c"], true)),
        (vec!["-show", "-c", "x.c"], cmd(&["-c", "x.c"], false)),
        (vec!["-compile_info"], cmd(&[], false)),
        (vec!["-compile-info", "x.c"], cmd(&["x.c"], false)),
        (vec!["-link_info"], cmd(&[], true)),
        (vec!["-link-info", "x.o"], cmd(&["x.o"], true)),
        (vec!["-showme:compile"], vec![inc.clone()]),
        (vec!["-showme:link"], link.clone()),
        (vec!["-showme:command"], words(&["false"])),
        (vec!["-showme:incdirs"], vec![inc_dir.display().to_string()]),
        (vec!["-showme:libdirs"], vec![lib.clone()]),
        (vec!["-showme:libs"], words(&["mpi_abi"])),
    ];
    for (args, want) in cases {
        expect(name, &args, &show(env, name, &args)?, &want)?;
    }
    if name == "mpifort" {
        let wide = run(wrapper(env, name).args(["-fdefault-integer-8", "-c", "x.f90"]))?;
        if wide.status.success() || !String::from_utf8_lossy(&wide.stderr).contains("4-byte") {
            return Err("mpifort -fdefault-integer-8 did not fail saying why".into());
        }
    }
    let bad = run(wrapper(env, name).arg("-showme:nonsense"))?;
    if bad.status.success() || !String::from_utf8_lossy(&bad.stderr).contains("-showme:nonsense") {
        return Err(format!(
            "{name} -showme:nonsense did not fail naming the option"
        ));
    }
    Ok(())
}

/// A wrapper, the variables set, the compiler it must choose.
type Choice = (
    &'static str,
    &'static [(&'static str, &'static str)],
    &'static str,
);

/// Which compiler each wrapper runs, by the variables set.
fn compiler_choice(env: &Env) -> Result<(), String> {
    let cases: [Choice; 11] = [
        ("mpicc", &[], "cc"),
        ("mpicc", &[("CC", "cc-a")], "cc-a"),
        ("mpicc", &[("CC", "cc-a"), ("O2G_MPICC_CC", "cc-b")], "cc-b"),
        (
            "mpicc",
            &[("CXX", "cxx-a"), ("O2G_MPICXX_CXX", "cxx-b")],
            "cc",
        ),
        ("mpicxx", &[("CC", "cc-a"), ("O2G_MPICC_CC", "cc-b")], "c++"),
        ("mpicxx", &[("CXX", "cxx-a")], "cxx-a"),
        (
            "mpicxx",
            &[("CXX", "cxx-a"), ("O2G_MPICXX_CXX", "cxx-b")],
            "cxx-b",
        ),
        ("mpifort", &[("CC", "cc-a")], "gfortran"),
        ("mpifort", &[("FC", "fc-a")], "fc-a"),
        (
            "mpifort",
            &[("FC", "fc-a"), ("O2G_MPIFORT_FC", "fc-b")],
            "fc-b",
        ),
        ("mpicc", &[("FC", "fc-a")], "cc"),
    ];
    for (name, vars, want) in cases {
        let mut c = wrapper(env, name);
        c.envs(vars.iter().copied()).arg("-showme:command");
        let out = succeed(&mut c)?;
        let got = String::from_utf8_lossy(&out.stdout).trim().to_string();
        if got != want {
            return Err(format!("{name} with {vars:?} runs {got}, want {want}"));
        }
    }
    Ok(())
}

/// Arguments are printed so that a shell reads them back unchanged.
fn show_quotes(env: &Env) -> Result<(), String> {
    let out = succeed(
        wrapper(env, "mpicc")
            .env("O2G_MPICC_CC", "false")
            .args(["-show", "-c", "a b.c", "-DX='y'"]),
    )?;
    let line = String::from_utf8_lossy(&out.stdout);
    let echoed = succeed(Command::new("sh").arg("-c").arg(format!(
        "for a in {}; do printf '%s\\n' \"$a\"; done",
        line.trim()
    )))?;
    let words: Vec<String> = String::from_utf8_lossy(&echoed.stdout)
        .lines()
        .map(String::from)
        .collect();
    let want = [
        "false".to_string(),
        format!("-I{}", env.manifest.join("include").display()),
        "-c".into(),
        "a b.c".into(),
        "-DX='y'".into(),
    ];
    if words == want {
        Ok(())
    } else {
        Err(format!(
            "-show printed {line}, which the shell reads as {words:?}"
        ))
    }
}

/// Builds `tests/c/hello.c` with `cc`, the given compile and link flags and
/// `-Wl,-z,now`, and runs it on 2 ranks.
fn build_and_run(env: &Env, tag: &str, compile: &[String], link: &[String]) -> Result<(), String> {
    let exe = env.work.join(format!("hello-{tag}"));
    succeed(
        Command::new("cc")
            .args(["-Wall", "-Werror"])
            .args(compile)
            .arg("-o")
            .arg(&exe)
            .arg(env.source("hello"))
            .args(link)
            .arg("-Wl,-z,now"),
    )?;
    launch_ok(env, &exe, 2, "sockets-epoll", None)
}

/// The flags of `-showme:compile` and `-showme:link` are all a build needs.
fn showme_flags_build(env: &Env) -> Result<(), String> {
    let compile = show(env, "mpicc", &["-showme:compile"])?;
    let link = show(env, "mpicc", &["-showme:link"])?;
    build_and_run(env, "showme", &compile, &link)
}

/// `pkg-config --cflags --libs o2g-mpi` on the file mpicc writes next to
/// the library of a cargo build tree.
fn pkg_config(env: &Env) -> Result<(), String> {
    // Any run of the wrapper writes the file (capi/README.md).
    succeed(wrapper(env, "mpicc").arg("-showme:libdirs"))?;
    let dir: PathBuf = env.profile.join("pkgconfig");
    let flags = |what: &str| -> Result<Vec<String>, String> {
        let out = succeed(
            Command::new("pkg-config")
                .arg(what)
                .arg("o2g-mpi")
                .env("PKG_CONFIG_PATH", &dir),
        )
        .map_err(|e| format!("{e} (pkg-config comes with scripts/setup.sh)"))?;
        Ok(String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .map(String::from)
            .collect())
    };
    let cflags = flags("--cflags")?;
    let libs = flags("--libs")?;
    let lib = env.profile.display();
    let want_cflags = [format!("-I{}", env.manifest.join("include").display())];
    let want_libs = [
        format!("-L{lib}"),
        format!("-Wl,-rpath,{lib}"),
        "-lmpi_abi".into(),
    ];
    if cflags != want_cflags || libs != want_libs {
        return Err(format!(
            "pkg-config gives --cflags {cflags:?} --libs {libs:?}, want {want_cflags:?} {want_libs:?}"
        ));
    }
    build_and_run(env, "pkg-config", &cflags, &libs)
}

/// `mpicxx` builds `tests/c/cxx.cpp` warning-free and it runs.
fn cxx(env: &Env, np: u32) -> Result<(), String> {
    let exe = env.work.join("cxx");
    let src: &Path = &env.manifest.join("tests/c/cxx.cpp");
    succeed(
        wrapper(env, "mpicxx")
            .args([
                "-std=c++11",
                "-Wall",
                "-Wextra",
                "-Werror",
                "-O1",
                "-Wl,-z,now",
            ])
            .arg("-o")
            .arg(&exe)
            .arg(src),
    )?;
    launch_ok(env, &exe, np, "sockets-epoll", None)
}

/// The wrapper tests.
pub(super) fn tests(env: &Env) -> Vec<(String, TestFn<'_>)> {
    let mut t: Vec<(String, TestFn<'_>)> = Vec::new();
    for name in ["mpicc", "mpicxx", "mpifort"] {
        t.push((
            format!("{name}_options_print_flags_without_compiling"),
            Box::new(move || options(env, name)),
        ));
    }
    t.push((
        "wrappers_choose_the_compiler_by_name_and_variable".into(),
        Box::new(move || compiler_choice(env)),
    ));
    t.push((
        "mpicc_show_quotes_for_the_shell".into(),
        Box::new(move || show_quotes(env)),
    ));
    t.push((
        "mpicc_showme_flags_build_a_program".into(),
        Box::new(move || showme_flags_build(env)),
    ));
    t.push((
        "pkg_config_flags_build_a_program".into(),
        Box::new(move || pkg_config(env)),
    ));
    for np in [1, 3] {
        t.push((
            format!("mpicxx_builds_and_runs_cxx_np{np}"),
            Box::new(move || cxx(env, np)),
        ));
    }
    t
}
