//! Escaping a value for a PMI-1 `key=value` word: the one copy, used by
//! the client (`mpi/src/pmi.rs`) and by o2grun's server
//! (`mpi/src/bin/o2grun/wire.rs`, which includes this file by path).

/// `value` escaped for a `key=value` word the way MPICH's PMI wire code
/// reads it (and o2grun): a backslash before each space and backslash. A
/// line break cannot travel inside a line and becomes an (escaped) space.
pub(crate) fn escape(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            ' ' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            '\n' | '\r' => out.push_str("\\ "),
            c => out.push(c),
        }
    }
    out
}
