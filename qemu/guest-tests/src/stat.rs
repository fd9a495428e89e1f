//! `o2g-stat` against the live module: an endpoint that received known
//! traffic (messages placed straight into posted receives, and messages
//! stored as unexpected) shows exactly those figures in `o2g-stat --json`
//! and in its table, as a separate process reads them.

use std::process::Command;
use std::time::{Duration, Instant};

use libo2g::{EndpointConfig, Post};

use crate::harness::{
    endpoint, libo2g_error, next_completion, pattern, sel, tcp_pair, Sender, PEER,
};
use crate::CheckResult;

/// Messages placed into receives posted first, and their sizes.
const MATCHED: [usize; 3] = [1, 4096, 70_000];
/// Messages that arrive with no receive posted, and their sizes.
const UNEXPECTED: [usize; 4] = [0, 17, 3000, 9000];

/// `o2g-stat`'s figures for this process's endpoint, key by key.
struct Row(Vec<(String, u64)>);

impl Row {
    fn get(&self, key: &str) -> Result<u64, String> {
        self.0
            .iter()
            .find(|(k, _)| k == key)
            .map(|&(_, v)| v)
            .ok_or_else(|| format!("o2g-stat --json has no \"{key}\""))
    }
}

/// Parses one line of `o2g-stat --json`: an object of numbers.
fn parse(line: &str) -> Result<Row, String> {
    let body = line
        .trim()
        .strip_prefix('{')
        .and_then(|l| l.strip_suffix('}'))
        .ok_or_else(|| format!("not a JSON object: {line}"))?;
    body.split(',')
        .map(|kv| {
            let (k, v) = kv.split_once(':').ok_or_else(|| format!("bad pair {kv}"))?;
            let k = k.trim().trim_matches('"').to_string();
            let v = v
                .trim()
                .parse()
                .map_err(|_| format!("not a number: {kv}"))?;
            Ok((k, v))
        })
        .collect::<Result<_, String>>()
        .map(Row)
}

/// Runs `o2g-stat ARGS` and returns its standard output, which must not
/// list o2g-stat's own open of the device.
fn o2g_stat(args: &[&str]) -> Result<String, String> {
    let child = Command::new("o2g-stat")
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("running o2g-stat: {e}"))?;
    let own = child.id().to_string();
    let out = child
        .wait_with_output()
        .map_err(|e| format!("running o2g-stat: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    if text.contains(&format!("\"pid\":{own},"))
        || text
            .lines()
            .any(|l| l.split_whitespace().next() == Some(&own))
    {
        return Err(format!(
            "o2g-stat lists its own endpoint (pid {own}):\n{text}"
        ));
    }
    if !out.status.success() {
        return Err(format!(
            "o2g-stat {args:?}: {}; {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    String::from_utf8(out.stdout).map_err(|e| format!("o2g-stat's output: {e}"))
}

pub(crate) fn live() -> CheckResult {
    let mut ep = endpoint(EndpointConfig::default())?;
    let (ours, theirs) = tcp_pair()?;
    ep.register_socket(&ours, PEER)
        .map_err(libo2g_error("register"))?;
    let mut peer = Sender::new(theirs);

    for (i, &len) in MATCHED.iter().enumerate() {
        match ep.post(vec![0u8; len], sel(i as u32), i as u64) {
            Ok(Post::Queued(_)) => {}
            Ok(_) => return Err(format!("tag {i}: a message was there before its send")),
            Err(e) => return Err(format!("post: {}", e.error)),
        }
        peer.send(i as u32, &pattern(i as u64, len))
            .map_err(|e| format!("send: {e}"))?;
        let c = next_completion(&mut ep)?;
        if c.len != len as u64 || c.status.is_err() {
            return Err(format!(
                "tag {i}: completed {} bytes, {:?}",
                c.len, c.status
            ));
        }
    }
    for (i, &len) in UNEXPECTED.iter().enumerate() {
        let tag = 100 + i as u32;
        peer.send(tag, &pattern(u64::from(tag), len))
            .map_err(|e| format!("send: {e}"))?;
    }
    let want_unexpected = UNEXPECTED.len() as u64;
    let deadline = Instant::now() + Duration::from_secs(60);
    while ep.stats().map_err(libo2g_error("stats"))?.unexpected_msgs < want_unexpected {
        if Instant::now() > deadline {
            return Err("the unexpected messages did not arrive within 60 s".into());
        }
        std::thread::sleep(Duration::from_millis(20));
    }

    // What another process reads: our endpoint's row (the listing shows
    // only the caller's endpoints to an unprivileged user; root sees all).
    let pid = u64::from(std::process::id());
    let json = o2g_stat(&["--json"])?;
    let rows: Vec<Row> = json.lines().map(parse).collect::<Result<_, _>>()?;
    let mine: Vec<&Row> = rows
        .iter()
        .filter(|r| r.get("pid").is_ok_and(|p| p == pid))
        .collect();
    let [row] = mine[..] else {
        return Err(format!(
            "o2g-stat --json lists {} endpoints of pid {pid}:\n{json}",
            mine.len()
        ));
    };
    let sum = |sizes: &[usize]| sizes.iter().sum::<usize>() as u64;
    let want = [
        ("sockets", 1),
        ("failed_sockets", 0),
        ("matched_msgs", MATCHED.len() as u64),
        ("matched_bytes", sum(&MATCHED)),
        ("unexpected_msgs", want_unexpected),
        ("unexpected_bytes", sum(&UNEXPECTED)),
        ("unexpected_now", want_unexpected),
        ("posted", 0),
        ("protocol_errors", 0),
        ("pinned_bytes", 0),
    ];
    for (key, value) in want {
        let got = row.get(key)?;
        if got != value {
            return Err(format!(
                "o2g-stat --json: {key} is {got}, the traffic says {value}:\n{json}"
            ));
        }
    }
    if row.get("dump_used")? < sum(&UNEXPECTED) {
        return Err(format!(
            "o2g-stat --json: dump_used below the stored bytes:\n{json}"
        ));
    }

    // The table: a header naming the columns and a row for our pid with
    // the same figures.
    let table = o2g_stat(&[])?;
    let mut lines = table.lines();
    let header: Vec<&str> = lines.next().unwrap_or("").split_whitespace().collect();
    let cells = lines
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|c| c.first() == Some(&pid.to_string().as_str()))
        .ok_or_else(|| format!("o2g-stat's table has no row for pid {pid}:\n{table}"))?;
    let cell = |h: &str| {
        header
            .iter()
            .position(|x| *x == h)
            .and_then(|i| cells.get(i))
            .and_then(|c| c.parse::<u64>().ok())
            .ok_or_else(|| format!("o2g-stat's table has no {h} for pid {pid}:\n{table}"))
    };
    if cell("MATCHED_B")? != sum(&MATCHED) || cell("UNEXP")? != want_unexpected {
        return Err(format!(
            "o2g-stat's table disagrees with the traffic:\n{table}"
        ));
    }
    println!(
        "stat: o2g-stat shows {} matched ({} B) and {} unexpected ({} B) messages, as sent",
        MATCHED.len(),
        sum(&MATCHED),
        want_unexpected,
        sum(&UNEXPECTED)
    );
    Ok(())
}
