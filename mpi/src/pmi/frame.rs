//! PMI-2's wire syntax: length-prefixed frames of `key=value;` pairs. The
//! one copy, used by the client (`mpi/src/pmi/v2.rs`) and by o2grun's
//! server (`mpi/src/bin/o2grun/wire2.rs`, which includes this file by
//! path).
//!
//! A frame is a 6-byte length field, the body's length in decimal padded
//! with spaces, and the body: `cmd=<name>;` and then `key=value;` pairs.
//! MPICH's client pads the length on the right (`"38    "`), hydra and
//! Slurm on the left (`"    38"`); both are read. A `;` inside a value is
//! doubled (`;;`), as MPICH's client and Slurm write it; nothing else is
//! escaped, so a key can hold neither `=` nor `;`. (hydra 4.0 neither
//! writes nor reads the doubling: a value with `;` does not survive it.
//! Nothing this crate publishes contains one.)
//!
//! Everything read here came from the other end of a socket: a malformed
//! frame is a [`FrameError`], never a panic, and a length is checked
//! against the reader's bound before anything is allocated for it.

use std::fmt;
use std::io::{self, Read};

/// Bytes of the length field.
pub(crate) const LEN_FIELD: usize = 6;

/// Longest body a length field can announce.
pub(crate) const MAX_BODY: usize = 999_999;

/// One PMI-2 command or response: its `cmd` and its other pairs, in the
/// order they came.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Command {
    cmd: String,
    pairs: Vec<(String, String)>,
}

/// Why a frame could not be read or written.
#[derive(Debug)]
pub(crate) enum FrameError {
    /// The connection failed.
    Io(io::Error),
    /// The connection ended inside a frame.
    Truncated,
    /// A length field that is not a number (shown as received).
    BadLength(String),
    /// A body longer than the reader takes (or than a length field holds).
    TooLong { len: usize, max: usize },
    /// A body that is not UTF-8.
    NotUtf8,
    /// A body that does not begin with `cmd=`.
    NoCmd(String),
    /// A pair without `=`, or with an empty key.
    BadPair(String),
    /// A key this side was asked to write that cannot travel.
    BadKey(String),
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameError::Io(e) => write!(f, "read: {e}"),
            FrameError::Truncated => write!(f, "the connection ended inside a PMI-2 frame"),
            FrameError::BadLength(field) => {
                write!(f, "a PMI-2 length field {field:?} that is not a number")
            }
            FrameError::TooLong { len, max } => {
                write!(f, "a PMI-2 frame of {len} bytes, more than {max}")
            }
            FrameError::NotUtf8 => write!(f, "a PMI-2 frame that is not UTF-8"),
            FrameError::NoCmd(body) => {
                write!(f, "a PMI-2 frame that does not begin with cmd=: {body:?}")
            }
            FrameError::BadPair(pair) => {
                write!(f, "a PMI-2 frame with a malformed pair: {pair:?}")
            }
            FrameError::BadKey(key) => write!(
                f,
                "the PMI-2 key {key:?}, which is empty or holds '=' or ';'"
            ),
        }
    }
}

/// The start of a long text, for a message.
fn shorten(text: &str) -> String {
    match text.char_indices().nth(60) {
        Some((i, _)) => format!("{}...", &text[..i]),
        None => text.to_owned(),
    }
}

impl Command {
    /// A command named `cmd`, without pairs yet.
    pub(crate) fn new(cmd: &str) -> Self {
        Self {
            cmd: cmd.to_owned(),
            pairs: Vec::new(),
        }
    }

    /// Adds `key=value`.
    pub(crate) fn with(mut self, key: &str, value: impl fmt::Display) -> Self {
        self.pairs.push((key.to_owned(), value.to_string()));
        self
    }

    /// The command's name.
    pub(crate) fn cmd(&self) -> &str {
        &self.cmd
    }

    /// The value of `key`; the first, if it came more than once (as
    /// MPICH's client reads it).
    pub(crate) fn get(&self, key: &str) -> Option<&str> {
        self.pairs
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The whole frame: length field and body.
    pub(crate) fn encode(&self) -> Result<Vec<u8>, FrameError> {
        let mut body = String::new();
        for (key, value) in std::iter::once(("cmd", self.cmd.as_str()))
            .chain(self.pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        {
            if key.is_empty() || key.contains(['=', ';']) {
                return Err(FrameError::BadKey(key.to_owned()));
            }
            body.push_str(key);
            body.push('=');
            body.push_str(&value.replace(';', ";;"));
            body.push(';');
        }
        if body.len() > MAX_BODY {
            return Err(FrameError::TooLong {
                len: body.len(),
                max: MAX_BODY,
            });
        }
        // Left-aligned, as MPICH's client writes it.
        let mut frame = format!("{:<width$}", body.len(), width = LEN_FIELD).into_bytes();
        frame.extend_from_slice(body.as_bytes());
        Ok(frame)
    }

    /// Parses a body (without its length field).
    pub(crate) fn decode(body: &[u8]) -> Result<Self, FrameError> {
        let mut rest = std::str::from_utf8(body).map_err(|_| FrameError::NotUtf8)?;
        let mut pairs = Vec::new();
        while !rest.is_empty() {
            let Some((key, after)) = rest.split_once('=') else {
                return Err(FrameError::BadPair(shorten(rest)));
            };
            if key.is_empty() || key.contains(';') {
                return Err(FrameError::BadPair(shorten(rest)));
            }
            let (value, next) = split_value(after);
            pairs.push((key.to_owned(), value));
            rest = next;
        }
        let mut pairs = pairs.into_iter();
        match pairs.next() {
            Some((k, cmd)) if k == "cmd" => Ok(Self {
                cmd,
                pairs: pairs.collect(),
            }),
            _ => Err(FrameError::NoCmd(shorten(&String::from_utf8_lossy(body)))),
        }
    }
}

/// Splits a value (with `;;` undone) from what follows its terminating
/// `;`. A last value without one runs to the end.
fn split_value(s: &str) -> (String, &str) {
    let mut value = String::new();
    let mut start = 0;
    let mut search = 0;
    // Every index found is that of an ASCII ';', so each slice below
    // begins and ends on a character boundary.
    while let Some(found) = s.get(search..).and_then(|t| t.find(';')) {
        let at = search + found;
        if s.get(at + 1..at + 2) == Some(";") {
            value.push_str(s.get(start..=at).unwrap_or_default());
            start = at + 2;
            search = start;
        } else {
            value.push_str(s.get(start..at).unwrap_or_default());
            return (value, s.get(at + 1..).unwrap_or_default());
        }
    }
    value.push_str(s.get(start..).unwrap_or_default());
    (value, "")
}

/// The body length a length field announces: decimal digits with spaces
/// on either side.
pub(crate) fn parse_len(field: &[u8]) -> Result<usize, FrameError> {
    let bad = || FrameError::BadLength(String::from_utf8_lossy(field).into_owned());
    let text = std::str::from_utf8(field)
        .map_err(|_| bad())?
        .trim_matches(' ');
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    text.parse().map_err(|_| bad())
}

/// Fills `buf` from `r`; false if the stream ended before the first byte.
fn fill(r: &mut impl Read, buf: &mut [u8]) -> Result<bool, FrameError> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(buf.get_mut(got..).unwrap_or_default()) {
            Ok(0) if got == 0 => return Ok(false),
            Ok(0) => return Err(FrameError::Truncated),
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(FrameError::Io(e)),
        }
    }
    Ok(true)
}

/// Reads one frame whose body is at most `max` bytes; `None` if the
/// stream ends before it begins.
pub(crate) fn read_frame(r: &mut impl Read, max: usize) -> Result<Option<Command>, FrameError> {
    let mut field = [0u8; LEN_FIELD];
    if !fill(r, &mut field)? {
        return Ok(None);
    }
    let len = parse_len(&field)?;
    if len > max {
        return Err(FrameError::TooLong { len, max });
    }
    let mut body = vec![0u8; len];
    if !fill(r, &mut body)? && len > 0 {
        return Err(FrameError::Truncated);
    }
    Command::decode(&body).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(input: &[u8], max: usize) -> Vec<Result<Option<Command>, String>> {
        let mut r = input;
        let mut out = Vec::new();
        loop {
            let f = read_frame(&mut r, max).map_err(|e| e.to_string());
            let end = !matches!(f, Ok(Some(_)));
            out.push(f);
            if end {
                return out;
            }
        }
    }

    #[test]
    fn a_command_encodes_as_mpich_writes_it() {
        let c = Command::new("fullinit")
            .with("pmirank", 3)
            .with("threaded", "FALSE");
        let body = "cmd=fullinit;pmirank=3;threaded=FALSE;";
        assert_eq!(
            c.encode().expect("encodes"),
            format!("{:<6}{body}", body.len()).into_bytes()
        );
        assert_eq!(Command::decode(body.as_bytes()).expect("decodes"), c);
    }

    #[test]
    fn semicolons_in_values_are_doubled_and_round_trip() {
        for value in [";", "a;b", ";;", "a;", ";a", "", "é;🚀;", "x=y"] {
            let c = Command::new("kvs-put")
                .with("key", "k")
                .with("value", value);
            let frame = c.encode().expect("encodes");
            let got = frames(&frame, MAX_BODY);
            assert_eq!(got[0].as_ref().ok(), Some(&Some(c.clone())), "{value:?}");
        }
        let c = Command::new("kvs-put").with("value", "a;b");
        assert!(String::from_utf8(c.encode().expect("encodes"))
            .expect("utf-8")
            .ends_with("cmd=kvs-put;value=a;;b;"));
    }

    #[test]
    fn hydra_and_slurm_frames_are_read() {
        // Right-aligned length, as hydra writes it.
        let body = "cmd=kvs-get-response;found=TRUE;value=v;rc=0;";
        let hydra = format!("{:>6}{body}", body.len());
        let got = frames(hydra.as_bytes(), MAX_BODY);
        let c = got[0].as_ref().expect("read").as_ref().expect("a frame");
        assert_eq!(c.cmd(), "kvs-get-response");
        assert_eq!((c.get("found"), c.get("value")), (Some("TRUE"), Some("v")));
        assert_eq!(got[1].as_ref().ok(), Some(&None), "then the end");
        // A last pair without its ';'.
        let bare = Command::decode(b"cmd=finalize-response;rc=0").expect("decodes");
        assert_eq!(bare.get("rc"), Some("0"));
        assert_eq!(
            Command::decode(b"cmd=x;k=1;k=2;")
                .expect("decodes")
                .get("k"),
            Some("1")
        );
    }

    #[test]
    fn frames_follow_each_other() {
        let mut input = Command::new("kvs-fence").encode().expect("encodes");
        input.extend(Command::new("finalize").encode().expect("encodes"));
        let got = frames(&input, 64);
        let names: Vec<_> = got
            .iter()
            .filter_map(|f| f.as_ref().ok().and_then(|c| c.as_ref()))
            .map(|c| c.cmd().to_owned())
            .collect();
        assert_eq!(names, ["kvs-fence", "finalize"]);
    }

    #[test]
    fn malformed_frames_are_errors_not_panics() {
        for (input, want) in [
            (&b"cmd=init pmi_version=2\n"[..], "length field \"cmd=in\""),
            (b"12a   cmd=x;", "not a number"),
            (b"      ", "not a number"),
            (b"1 2   cmd=x;", "not a number"),
            (b"-1    ", "not a number"),
            (b"\xff\xfe    ", "not a number"),
            (b"+5    cmd=x", "not a number"),
            (b"100   cmd=x;", "more than 64"),
            (b"12    cmd=x", "ended inside"),
            (b"3  ", "ended inside"),
            (b"5     ab\xffcd", "not UTF-8"),
            (b"6     key=v;", "does not begin with cmd="),
            (b"0     ", "does not begin with cmd="),
            (b"10    cmd=x;junk", "malformed pair"),
            (b"9     cmd=x;=v;", "malformed pair"),
            (b"8     =x;cmd=y", "malformed pair"),
            (b"11    cmd=x;a;b=c", "malformed pair"),
        ] {
            let got = frames(input, 64);
            let err = got
                .last()
                .and_then(|f| f.as_ref().err())
                .unwrap_or_else(|| panic!("{input:?} was accepted: {got:?}"));
            assert!(err.contains(want), "{input:?}: {err}");
        }
        // A length past the bound is refused before its body is read.
        let mut huge = b"999999".to_vec();
        huge.extend(std::iter::repeat_n(b'a', 10));
        assert!(frames(&huge, 64)[0]
            .as_ref()
            .is_err_and(|e| e.contains("999999 bytes")));
        // Nothing at all is the end, not an error.
        assert_eq!(frames(b"", 64), vec![Ok(None)]);
    }

    #[test]
    fn keys_that_cannot_travel_and_oversize_bodies_are_refused() {
        for key in ["", "a=b", "a;b"] {
            let err = Command::new("kvs-put").with(key, "v").encode();
            assert!(matches!(err, Err(FrameError::BadKey(_))), "{key:?}");
        }
        let big = Command::new("kvs-put").with("value", "a".repeat(MAX_BODY));
        assert!(matches!(big.encode(), Err(FrameError::TooLong { .. })));
        let fits = Command::new("x").with("v", "a".repeat(MAX_BODY - 9));
        assert_eq!(
            fits.encode().map(|f| f.len()).ok(),
            Some(LEN_FIELD + MAX_BODY)
        );
    }
}
