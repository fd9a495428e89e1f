//! The function table at the end of `capi/README.md` against the two
//! things it describes: the standard ABI's functions (every `PMPI_`
//! prototype in MPICH 5.0's standard-ABI `mpi.h`) and the dynamic symbols
//! `libmpi_abi.so` exports.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use super::{succeed, Env, TestFn};

/// One row: exported or not, and why not.
struct Row {
    exported: bool,
    why_not: String,
}

/// The rows of the README's function table, by function name.
fn table(readme: &str) -> Result<BTreeMap<String, Row>, String> {
    let section = readme
        .split("\n## Function table\n")
        .nth(1)
        .ok_or("capi/README.md has no \"## Function table\" section")?;
    let mut rows = BTreeMap::new();
    for line in section.lines() {
        let Some(rest) = line.strip_prefix("| `") else {
            continue;
        };
        let cells: Vec<&str> = rest.split('|').map(str::trim).collect();
        let [name, exported, why_not, ..] = cells[..] else {
            return Err(format!("malformed row: {line}"));
        };
        let name = name.trim_end_matches('`').to_string();
        let exported = match exported {
            "yes" => true,
            "no" => false,
            other => return Err(format!("{name}: \"{other}\" is neither yes nor no")),
        };
        let row = Row {
            exported,
            why_not: why_not.to_string(),
        };
        if rows.insert(name.clone(), row).is_some() {
            return Err(format!("{name} has two rows"));
        }
    }
    Ok(rows)
}

/// The standard ABI's functions: the names of every `PMPI_` prototype of
/// a header, without the `P`.
fn abi_functions(header: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for (i, _) in header.match_indices("PMPI_") {
        let ident: String = header[i + 1..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if header[i + 1 + ident.len()..].trim_start().starts_with('(') {
            names.insert(ident);
        }
    }
    names
}

/// The `MPI_`/`PMPI_` functions a shared library defines.
fn exports(env: &Env) -> Result<BTreeSet<String>, String> {
    let lib = env.profile.join("libmpi_abi.so");
    let out = succeed(Command::new("nm").args(["-D", "--defined-only"]).arg(&lib))?;
    let text = String::from_utf8_lossy(&out.stdout);
    Ok(text
        .lines()
        .filter_map(|l| match l.split_whitespace().collect::<Vec<_>>()[..] {
            [_, "T", name] if name.starts_with("MPI_") || name.starts_with("PMPI_") => {
                Some(name.to_string())
            }
            _ => None,
        })
        .collect())
}

/// Up to 20 names of a list, for a readable failure.
fn some(names: &[String]) -> String {
    let mut s = names
        .iter()
        .take(20)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > 20 {
        s += &format!(" and {} more", names.len() - 20);
    }
    s
}

fn check(env: &Env) -> Result<(), String> {
    let readme =
        std::fs::read_to_string(env.manifest.join("README.md")).map_err(|e| e.to_string())?;
    let rows = table(&readme)?;
    let (inc, _) = env.mpich()?;
    let header = std::fs::read_to_string(inc.join("mpi.h")).map_err(|e| e.to_string())?;
    let abi = abi_functions(&header);
    if abi.len() < 600 {
        return Err(format!(
            "only {} functions found in MPICH's header",
            abi.len()
        ));
    }
    let exported = exports(env)?;
    let mut problems = Vec::new();
    let missing: Vec<String> = abi
        .iter()
        .filter(|f| !rows.contains_key(*f))
        .cloned()
        .collect();
    if !missing.is_empty() {
        problems.push(format!("no row for {}", some(&missing)));
    }
    let foreign: Vec<String> = rows.keys().filter(|f| !abi.contains(*f)).cloned().collect();
    if !foreign.is_empty() {
        problems.push(format!(
            "rows for functions not in the ABI: {}",
            some(&foreign)
        ));
    }
    let mut wrong = Vec::new();
    let mut no_profile = Vec::new();
    let mut no_reason = Vec::new();
    for (name, row) in &rows {
        if row.exported != exported.contains(name) {
            wrong.push(format!(
                "{name} ({})",
                if row.exported {
                    "not exported"
                } else {
                    "exported"
                }
            ));
        }
        if exported.contains(name) && !exported.contains(&format!("P{name}")) {
            no_profile.push(name.clone());
        }
        if !row.exported && row.why_not.is_empty() {
            no_reason.push(name.clone());
        }
    }
    if !wrong.is_empty() {
        problems.push(format!("the table is wrong about {}", some(&wrong)));
    }
    if !no_profile.is_empty() {
        problems.push(format!(
            "exported without a PMPI_ name: {}",
            some(&no_profile)
        ));
    }
    if !no_reason.is_empty() {
        problems.push(format!("no reason given for {}", some(&no_reason)));
    }
    let outside: Vec<String> = exported
        .iter()
        .filter(|s| !abi.contains(s.strip_prefix('P').unwrap_or(s)))
        .cloned()
        .collect();
    if !outside.is_empty() {
        problems.push(format!(
            "exported but not in the standard ABI: {}",
            some(&outside)
        ));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("; "))
    }
}

/// The function-table test.
pub(super) fn tests(env: &Env) -> Vec<(String, TestFn<'_>)> {
    vec![(
        "function_table_matches_the_library".into(),
        Box::new(move || check(env)),
    )]
}
