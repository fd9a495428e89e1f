//! `o2g-stat`: lists every endpoint of the loaded o2g module with its
//! counters, one row (or one JSON object per line with `--json`) each.
//!
//! Opening the device makes an endpoint (the module lists every open
//! file, initialised or not); o2g-stat leaves its own out of what it
//! prints.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use libo2g::abi::EndpointSummary;
use libo2g::{Device, EndpointListing};

/// List the o2g module's endpoints and their counters.
#[derive(Debug, Parser)]
#[command(version)]
struct Args {
    /// Print one JSON object per endpoint and line instead of a table.
    #[arg(long)]
    json: bool,
    /// The o2g device node.
    #[arg(long, value_name = "PATH", default_value = Device::DEFAULT_PATH)]
    device: PathBuf,
}

/// One column: table header, JSON key, value.
struct Column {
    header: &'static str,
    key: &'static str,
    value: fn(&EndpointSummary) -> u64,
}

const COLUMNS: &[Column] = &[
    Column {
        header: "PID",
        key: "pid",
        value: |e| e.pid.into(),
    },
    Column {
        header: "ENDPOINT",
        key: "endpoint",
        value: |e| e.endpoint.into(),
    },
    Column {
        header: "SOCKETS",
        key: "sockets",
        value: |e| e.stats.sockets.into(),
    },
    Column {
        header: "FAILED",
        key: "failed_sockets",
        value: |e| e.stats.failed_sockets.into(),
    },
    Column {
        header: "MATCHED",
        key: "matched_msgs",
        value: |e| e.stats.matched_msgs,
    },
    Column {
        header: "MATCHED_B",
        key: "matched_bytes",
        value: |e| e.stats.matched_bytes,
    },
    Column {
        header: "UNEXP",
        key: "unexpected_msgs",
        value: |e| e.stats.unexpected_msgs,
    },
    Column {
        header: "UNEXP_B",
        key: "unexpected_bytes",
        value: |e| e.stats.unexpected_bytes,
    },
    Column {
        header: "BACKPRESSURE",
        key: "backpressure_events",
        value: |e| e.stats.backpressure_events,
    },
    Column {
        header: "PROTO_ERR",
        key: "protocol_errors",
        value: |e| e.stats.protocol_errors,
    },
    Column {
        header: "POSTED",
        key: "posted",
        value: |e| e.stats.posted.into(),
    },
    Column {
        header: "UNEXP_NOW",
        key: "unexpected_now",
        value: |e| e.stats.unexpected.into(),
    },
    Column {
        header: "DUMP_USED",
        key: "dump_used",
        value: |e| e.stats.dump_used,
    },
    Column {
        header: "PINNED",
        key: "pinned_bytes",
        value: |e| e.stats.pinned_bytes,
    },
    Column {
        header: "DEFERRED",
        key: "deferred_reads",
        value: |e| e.stats.deferred_reads,
    },
    Column {
        header: "NOTICES",
        key: "notices",
        value: |e| e.stats.notices,
    },
    Column {
        header: "RELEASED",
        key: "released_msgs",
        value: |e| e.stats.released_msgs,
    },
    Column {
        header: "BAD_REL",
        key: "bad_releases",
        value: |e| e.stats.bad_releases,
    },
    Column {
        header: "DEF_COPY",
        key: "deferred_copies",
        value: |e| e.stats.deferred_copies,
    },
];

/// A table with a header row and one right-aligned row per endpoint, and a
/// note when the module reported more endpoints than were listed.
fn render_table(listing: &EndpointListing) -> String {
    let rows: Vec<Vec<String>> = listing
        .endpoints
        .iter()
        .map(|e| COLUMNS.iter().map(|c| (c.value)(e).to_string()).collect())
        .collect();
    let widths: Vec<usize> = COLUMNS
        .iter()
        .enumerate()
        .map(|(i, c)| {
            rows.iter()
                .map(|r| r[i].len())
                .fold(c.header.len(), usize::max)
        })
        .collect();
    let mut out = String::new();
    let mut line = |cells: &mut dyn Iterator<Item = &str>| {
        let mut l = String::new();
        for (cell, w) in cells.zip(&widths) {
            let _ = write!(l, "{cell:>w$} ");
        }
        out.push_str(l.trim_end());
        out.push('\n');
    };
    line(&mut COLUMNS.iter().map(|c| c.header));
    for row in &rows {
        line(&mut row.iter().map(String::as_str));
    }
    if !listing.is_complete() {
        let _ = writeln!(
            out,
            "({} of {} endpoints shown)",
            listing.endpoints.len(),
            listing.total
        );
    }
    out
}

/// One JSON object per endpoint and line. All values are numbers, so no
/// escaping is needed.
fn render_json(listing: &EndpointListing) -> String {
    let mut out = String::new();
    for e in &listing.endpoints {
        out.push('{');
        for (i, c) in COLUMNS.iter().enumerate() {
            let sep = if i == 0 { "" } else { "," };
            let _ = write!(out, "{sep}\"{}\":{}", c.key, (c.value)(e));
        }
        out.push_str("}\n");
    }
    out
}

/// Drops this process's own endpoint (the open that read the listing).
fn leave_out_own(listing: &mut EndpointListing, pid: u32) {
    let before = listing.endpoints.len();
    listing.endpoints.retain(|e| e.pid != pid);
    let dropped = (before - listing.endpoints.len()) as u32;
    listing.total = listing.total.saturating_sub(dropped);
}

fn main() -> ExitCode {
    let args = Args::parse();
    let mut listing = match Device::open_path(&args.device).and_then(|d| d.list_endpoints()) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("o2g-stat: {e}");
            return ExitCode::FAILURE;
        }
    };
    leave_out_own(&mut listing, std::process::id());
    if args.json {
        print!("{}", render_json(&listing));
        if !listing.is_complete() {
            eprintln!(
                "o2g-stat: {} of {} endpoints shown",
                listing.endpoints.len(),
                listing.total
            );
        }
    } else {
        print!("{}", render_table(&listing));
    }
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;
    use libo2g::abi::EndpointStats;

    fn listing() -> EndpointListing {
        let a = EndpointSummary {
            pid: 4242,
            endpoint: 1,
            stats: EndpointStats {
                sockets: 3,
                failed_sockets: 1,
                data_ready_events: 99,
                deferred_reads: 15,
                matched_msgs: 10,
                matched_bytes: 1_000_000,
                unexpected_msgs: 2,
                unexpected_bytes: 64,
                backpressure_events: 4,
                protocol_errors: 5,
                posted: 6,
                unexpected: 7,
                dump_used: 8192,
                pinned_bytes: 12345,
                notices: 16,
                released_msgs: 17,
                bad_releases: 18,
                deferred_copies: 19,
            },
        };
        let b = EndpointSummary {
            pid: 7,
            endpoint: 22,
            ..Default::default()
        };
        EndpointListing {
            endpoints: vec![a, b],
            total: 2,
        }
    }

    #[test]
    fn its_own_endpoint_is_left_out() {
        let mut l = listing();
        leave_out_own(&mut l, 7);
        assert_eq!(l.endpoints.len(), 1);
        assert_eq!((l.endpoints[0].pid, l.total), (4242, 1));
        assert!(l.is_complete());
        leave_out_own(&mut l, 99);
        assert_eq!((l.endpoints.len(), l.total), (1, 1));
    }

    #[test]
    fn table_has_a_header_and_right_aligned_rows() {
        let out = render_table(&listing());
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 3, "{out}");
        assert_eq!(
            lines[0],
            " PID ENDPOINT SOCKETS FAILED MATCHED MATCHED_B UNEXP UNEXP_B BACKPRESSURE \
             PROTO_ERR POSTED UNEXP_NOW DUMP_USED PINNED DEFERRED NOTICES RELEASED BAD_REL DEF_COPY"
        );
        let cells: Vec<&str> = lines[1].split_whitespace().collect();
        assert_eq!(
            cells,
            [
                "4242", "1", "3", "1", "10", "1000000", "2", "64", "4", "5", "6", "7", "8192",
                "12345", "15", "16", "17", "18", "19"
            ]
        );
        // Columns line up: every row is as long as the header.
        assert_eq!(lines[2].len(), lines[0].len(), "{out}");
        assert!(lines[2].starts_with("   7       22       0"), "{out}");
        assert!(!out.contains("shown"));
    }

    #[test]
    fn a_cut_listing_says_so() {
        let mut l = listing();
        l.total = 5000;
        assert!(render_table(&l).ends_with("(2 of 5000 endpoints shown)\n"));
    }

    #[test]
    fn no_endpoints_is_just_the_header() {
        let out = render_table(&EndpointListing::default());
        assert_eq!(out.lines().count(), 1);
        assert!(out.starts_with("PID ENDPOINT"));
        assert_eq!(render_json(&EndpointListing::default()), "");
    }

    #[test]
    fn json_lines_carry_every_counter() {
        let out = render_json(&listing());
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(
            lines[0],
            "{\"pid\":4242,\"endpoint\":1,\"sockets\":3,\"failed_sockets\":1,\
             \"matched_msgs\":10,\"matched_bytes\":1000000,\"unexpected_msgs\":2,\
             \"unexpected_bytes\":64,\"backpressure_events\":4,\"protocol_errors\":5,\
             \"posted\":6,\"unexpected_now\":7,\"dump_used\":8192,\"pinned_bytes\":12345,\
             \"deferred_reads\":15,\"notices\":16,\"released_msgs\":17,\"bad_releases\":18,\
             \"deferred_copies\":19}"
        );
        assert!(lines[1].starts_with("{\"pid\":7,\"endpoint\":22,"));
    }

    #[test]
    fn arguments_parse() {
        let a = Args::try_parse_from(["o2g-stat", "--json", "--device", "/tmp/x"]).unwrap();
        assert!(a.json);
        assert_eq!(a.device, PathBuf::from("/tmp/x"));
        let a = Args::try_parse_from(["o2g-stat"]).unwrap();
        assert!(!a.json);
        assert_eq!(a.device, PathBuf::from("/dev/o2g"));
    }
}
