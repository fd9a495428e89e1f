//! The connection to the process manager and the two syntaxes spoken on
//! it: PMI-1's lines (which PMI-2 also opens with) and PMI-2's frames.
//! Every answer is checked for the expected `cmd` and a zero `rc`, so the
//! conversations (`v1.rs`, `v2.rs`) only read the values they want.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};

use super::escape::parse;
use super::frame::{self, Command, FrameError, MAX_BODY};
use crate::error::{Error, Result};

/// A connected byte stream to the process manager.
pub(super) struct Link {
    reader: BufReader<Box<dyn Read>>,
    writer: Box<dyn Write>,
}

impl Link {
    pub(super) fn new(reader: Box<dyn Read>, writer: Box<dyn Write>) -> Self {
        Self {
            reader: BufReader::new(reader),
            writer,
        }
    }

    fn write(&mut self, bytes: &[u8]) -> Result<()> {
        self.writer
            .write_all(bytes)
            .and_then(|()| self.writer.flush())
            .map_err(|e| Error::io("writing to the process manager", e))
    }

    /// Sends one PMI-1 line (without its newline).
    pub(super) fn send_line(&mut self, line: &str) -> Result<()> {
        self.write(format!("{line}\n").as_bytes())
    }

    /// Reads one PMI-1 line, which must be `cmd` with `rc` zero or
    /// absent; returns its words.
    pub(super) fn expect_line(&mut self, cmd: &str) -> Result<HashMap<String, String>> {
        let mut line = String::new();
        let n = self
            .reader
            .read_line(&mut line)
            .map_err(|e| Error::io("reading from the process manager", e))?;
        if n == 0 {
            return Err(Error::Pmi(format!(
                "connection closed while waiting for {cmd}"
            )));
        }
        let r = parse(&line);
        if r.get("cmd").map(String::as_str) != Some(cmd) {
            return Err(Error::Pmi(format!(
                "expected cmd={cmd}, got {:?}",
                line.trim()
            )));
        }
        if let Some(rc) = r.get("rc").filter(|rc| *rc != "0") {
            return Err(Error::Pmi(format!(
                "{cmd} failed: rc={rc} {}",
                r.get("msg").map_or("", String::as_str)
            )));
        }
        Ok(r)
    }

    /// Sends `line` and reads its answer, `reply`.
    pub(super) fn call_line(&mut self, line: &str, reply: &str) -> Result<HashMap<String, String>> {
        self.send_line(line)?;
        self.expect_line(reply)
    }

    /// Sends one PMI-2 frame.
    pub(super) fn send_frame(&mut self, c: &Command) -> Result<()> {
        let bytes = c
            .encode()
            .map_err(|e| Error::Pmi(format!("cannot send {}: {e}", c.cmd())))?;
        self.write(&bytes)
    }

    /// Reads one PMI-2 frame, which must be `cmd` with `rc` zero (an
    /// answer without `rc` is refused, as MPICH's client refuses it).
    pub(super) fn expect_frame(&mut self, cmd: &str) -> Result<Command> {
        let got = match frame::read_frame(&mut self.reader, MAX_BODY) {
            Ok(Some(c)) => c,
            Ok(None) | Err(FrameError::Truncated) => {
                return Err(Error::Pmi(format!(
                    "connection closed while waiting for {cmd}"
                )))
            }
            Err(FrameError::Io(e)) => {
                return Err(Error::io(
                    format!("reading {cmd} from the process manager"),
                    e,
                ))
            }
            Err(e) => {
                return Err(Error::Pmi(format!(
                    "waiting for {cmd}, the process manager sent {e}"
                )))
            }
        };
        if got.cmd() != cmd {
            return Err(Error::Pmi(format!(
                "expected cmd={cmd}, got cmd={}",
                got.cmd()
            )));
        }
        match got.get("rc") {
            Some("0") => Ok(got),
            Some(rc) => Err(Error::Pmi(format!(
                "{cmd} failed: rc={rc} {}",
                got.get("errmsg").unwrap_or("")
            ))),
            None => Err(Error::Pmi(format!("{cmd} without rc"))),
        }
    }

    /// Sends `c` and reads its answer, `reply`.
    pub(super) fn call(&mut self, c: &Command, reply: &str) -> Result<Command> {
        self.send_frame(c)?;
        self.expect_frame(reply)
    }
}
