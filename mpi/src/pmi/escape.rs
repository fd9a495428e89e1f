//! PMI-1's `key=value` words: escaping a value into one and splitting a
//! line back into them. The one copy, used by the client
//! (`mpi/src/pmi.rs`) and by o2grun's server (`mpi/src/bin/o2grun/wire.rs`,
//! which includes this file by path).

use std::collections::HashMap;

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

/// Splits a line into its `key=value` words and undoes the escapes in
/// each; words without `=` are ignored, a repeated key keeps its last
/// value.
pub(crate) fn parse(line: &str) -> HashMap<String, String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut chars = line.chars();
    // Whether `word` holds anything, escaped spaces included.
    let mut started = false;
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(next) = chars.next() {
                    word.push(next);
                }
                started = true;
            }
            // A line's own line break ends its last word.
            ' ' | '\n' | '\r' => {
                if started {
                    words.push(std::mem::take(&mut word));
                    started = false;
                }
            }
            c => {
                word.push(c);
                started = true;
            }
        }
    }
    if started {
        words.push(word);
    }
    // An escaped '=' in a key would be taken as the separator here; keys
    // are plain words in every PMI command.
    words
        .into_iter()
        .filter_map(|w| w.split_once('=').map(|(k, v)| (k.to_owned(), v.to_owned())))
        .collect()
}
