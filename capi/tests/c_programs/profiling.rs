//! The profiling interface: a tool built as a shared library
//! (`tests/c/interpose.c`) defines some MPI functions, counts the calls
//! and passes them on to the `PMPI_` names. Preloaded into an unchanged
//! program (`tests/c/profiled.c`), its counts must be exactly the calls
//! the program makes, on every rank; without it, the program runs as
//! usual and nothing is counted.

use std::path::PathBuf;
use std::process::Command;

use super::{build, describe, run, succeed, Env, TestFn};

/// Builds the interposer; every symbol it uses must resolve at link time
/// (`--no-undefined`), so a missing `PMPI_` name fails here.
fn interposer(env: &Env) -> Result<PathBuf, String> {
    let so = env.work.join("libinterpose.so");
    succeed(
        env.mpicc()
            .args(["-Wall", "-Werror", "-O1", "-shared", "-fPIC"])
            .args(["-Wl,--no-undefined", "-Wl,-z,now", "-o"])
            .arg(&so)
            .arg(env.source("interpose")),
    )?;
    Ok(so)
}

/// Runs `profiled` on `np` ranks, under the interposer if `tool` is set;
/// returns its standard output.
fn profiled(env: &Env, np: u32, tool: Option<&PathBuf>) -> Result<String, String> {
    let prog = build(env, "profiled")?;
    let mut cmd = Command::new(env.o2grun()?);
    cmd.args(["--timeout", "120", "-n", &np.to_string()])
        .arg("/usr/bin/env")
        .arg("LD_BIND_NOW=1");
    if let Some(so) = tool {
        cmd.arg(format!("LD_PRELOAD={}", so.display()));
    }
    cmd.arg(&prog).env("O2G_TRANSPORT", "sockets-epoll");
    let out = run(&mut cmd)?;
    if !out.status.success() {
        return Err(format!("profiled on {np} ranks: {}", describe(&out)));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn counts_every_call(env: &Env, np: u32) -> Result<(), String> {
    let so = interposer(env)?;
    let out = profiled(env, np, Some(&so))?;
    for rank in 0..np {
        let want = format!("o2g-profile rank {rank}: init=1 isend=3 recv=3 wait=3 allreduce=1");
        if !out.lines().any(|l| l == want) {
            return Err(format!("no line \"{want}\" in:\n{out}"));
        }
    }
    let plain = profiled(env, np, None)?;
    if plain.contains("o2g-profile") {
        return Err(format!("counts printed without the interposer:\n{plain}"));
    }
    Ok(())
}

/// The profiling tests.
pub(super) fn tests(env: &Env) -> Vec<(String, TestFn<'_>)> {
    [1, 3]
        .into_iter()
        .map(|np| {
            let f: TestFn<'_> = Box::new(move || counts_every_call(env, np));
            (format!("pmpi_interposer_counts_calls_np{np}"), f)
        })
        .collect()
}
