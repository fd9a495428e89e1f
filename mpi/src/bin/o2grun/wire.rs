//! The PMI-1 wire syntax, as MPICH writes and reads it.
//!
//! A command is one line of `key=value` words separated by spaces. Inside a
//! word a backslash makes the next character literal, so a value can hold
//! spaces (`error_msg=no\ such\ file`) and backslashes (`\\`); MPICH's
//! clients and hydra escape and unescape the same way, and so does our
//! client (`mpi/src/pmi.rs`), whose escaping and parsing
//! (`mpi/src/pmi/escape.rs`) this binary compiles too. Lines are read with a bound on their length.

use std::fmt;
use std::io::{self, BufRead};

// One file, compiled into the library and into this binary.
#[path = "../../pmi/escape.rs"]
mod escape;
pub(crate) use escape::{escape, parse};

/// Longest line the server reads, newline excluded. The largest legitimate
/// line is a `put` of a rank's address or a shared-memory region's name,
/// well under the 1024 bytes `get_maxes` announces; this leaves room and
/// still bounds what one connection can make o2grun hold.
pub(crate) const MAX_LINE: usize = 64 << 10;

/// Why a line could not be read.
#[derive(Debug)]
pub(crate) enum LineError {
    /// The connection failed.
    Io(io::Error),
    /// More than the bound without a newline.
    TooLong(usize),
    /// Bytes that are not UTF-8.
    NotUtf8,
}

impl fmt::Display for LineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LineError::Io(e) => write!(f, "read: {e}"),
            LineError::TooLong(max) => write!(f, "a line longer than {max} bytes"),
            LineError::NotUtf8 => write!(f, "a line that is not UTF-8"),
        }
    }
}

/// Reads one line of at most `max` bytes (without its newline); `None` at
/// the end of the stream. An unfinished last line counts as the end: its
/// sender is gone, so nobody would read an answer.
pub(crate) fn read_line(r: &mut impl BufRead, max: usize) -> Result<Option<String>, LineError> {
    let mut line = Vec::new();
    loop {
        let avail = match r.fill_buf() {
            Ok(a) => a,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(LineError::Io(e)),
        };
        if avail.is_empty() {
            return Ok(None);
        }
        let (take, done) = match avail.iter().position(|&b| b == b'\n') {
            Some(i) => (i, true),
            None => (avail.len(), false),
        };
        if line.len() + take > max {
            return Err(LineError::TooLong(max));
        }
        line.extend_from_slice(&avail[..take]);
        r.consume(take + usize::from(done));
        if done {
            return String::from_utf8(line)
                .map(Some)
                .map_err(|_| LineError::NotUtf8);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(input: &[u8], max: usize) -> Vec<Result<Option<String>, String>> {
        let mut r = io::BufReader::with_capacity(4, input);
        let mut out = Vec::new();
        loop {
            let l = read_line(&mut r, max).map_err(|e| e.to_string());
            let end = !matches!(l, Ok(Some(_)));
            out.push(l);
            if end {
                return out;
            }
        }
    }

    #[test]
    fn lines_are_cut_at_newlines_across_buffer_refills() {
        assert_eq!(
            lines(b"cmd=init\ncmd=get_maxes\n", 64),
            vec![
                Ok(Some("cmd=init".into())),
                Ok(Some("cmd=get_maxes".into())),
                Ok(None)
            ]
        );
    }

    #[test]
    fn a_line_at_the_bound_is_read_and_one_byte_more_is_refused() {
        let at = [b'a'; 16];
        assert_eq!(
            lines(&[&at[..], b"\n"].concat(), 16)[0],
            Ok(Some("a".repeat(16)))
        );
        assert!(lines(&[&at[..], b"a\n"].concat(), 16)[0]
            .as_ref()
            .is_err_and(|e| e.contains("longer than 16")));
        // Without any newline: refused once past the bound, not read to
        // the end.
        let endless = std::iter::repeat_n(b'a', 1 << 20).collect::<Vec<_>>();
        assert!(lines(&endless, 16)[0].is_err());
    }

    #[test]
    fn invalid_utf8_and_unfinished_lines() {
        assert_eq!(
            lines(b"\xff\xfe\n", 64)[0],
            Err("a line that is not UTF-8".into())
        );
        assert_eq!(lines(b"cmd=init", 64), vec![Ok(None)]);
    }

    #[test]
    fn words_split_on_unescaped_spaces() {
        let kv =
            parse("cmd=abort  exitcode=7 error_msg=O2G_TRANSPORT\\ is\\ \\ bad\\\\ x noequals");
        assert_eq!(kv["cmd"], "abort");
        assert_eq!(kv["exitcode"], "7");
        assert_eq!(kv["error_msg"], "O2G_TRANSPORT is  bad\\");
        assert_eq!(kv.len(), 3);
        assert_eq!(parse("key=a=b")["key"], "a=b");
        assert_eq!(parse("v=\\ ")["v"], " ");
    }

    #[test]
    fn escaping_round_trips() {
        for text in [
            "O2G_TRANSPORT=o2g: /dev/o2g not available",
            "  leading and trailing  ",
            "back\\slash\\ and \\\\",
            "tab\there, équipe, 🚀",
            "",
        ] {
            let line = format!("cmd=abort error_msg={} exitcode=1", escape(text));
            assert_eq!(parse(&line)["error_msg"], text, "{line}");
        }
        assert_eq!(
            parse(&format!("m={}", escape("two\nlines")))["m"],
            "two lines"
        );
    }
}
