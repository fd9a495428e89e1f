//! The PMI-2 wire syntax, as MPICH's client, hydra and Slurm write it:
//! a 6-byte decimal length and a body of `key=value;` pairs, `;` in a
//! value doubled. The codec is the client's own
//! (`mpi/src/pmi/frame.rs`), compiled into this binary too; here are the
//! server's bound on a frame and how it tells a frame from a PMI-1 line.

// One file, compiled into the library and into this binary.
#[path = "../../pmi/frame.rs"]
mod frame;
pub(crate) use frame::{parse_len, read_frame, Command, FrameError, LEN_FIELD};

/// Longest frame body the server reads: as for a PMI-1 line
/// (`wire::MAX_LINE`), room for any legitimate `kvs-put` and a bound on
/// what one connection can make o2grun hold.
pub(crate) const MAX_FRAME: usize = 64 << 10;

/// Whether a message beginning with `first` is a PMI-2 frame: its length
/// field begins with a digit or padding, a PMI-1 line with `cmd=`.
pub(crate) fn is_frame_start(first: u8) -> bool {
    first.is_ascii_digit() || first == b' '
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_and_lines_are_told_apart_by_their_first_byte() {
        let frame = Command::new("fullinit").encode().expect("encodes");
        assert!(frame.first().copied().is_some_and(is_frame_start));
        let hydra = format!("{:>6}cmd=x;", 6);
        assert!(hydra.bytes().next().is_some_and(is_frame_start));
        assert!(!b"cmd=init pmi_version=2"
            .first()
            .copied()
            .is_some_and(is_frame_start));
    }

    #[test]
    fn the_server_reads_no_frame_past_its_bound() {
        let mut input = format!("{:<6}", MAX_FRAME + 1).into_bytes();
        input.extend(std::iter::repeat_n(b'a', MAX_FRAME + 1));
        let err = read_frame(&mut input.as_slice(), MAX_FRAME)
            .err()
            .map(|e| e.to_string());
        assert!(
            err.as_deref()
                .is_some_and(|e| e.contains("more than 65536")),
            "{err:?}"
        );
    }
}
