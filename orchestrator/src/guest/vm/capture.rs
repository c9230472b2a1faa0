//! What a guest writes back, bounded: its record port read as capped
//! lines into a sink, its console and QEMU's stderr read as head and tail,
//! and QEMU's stderr watched for an accelerator that failed.

use super::*;

/// One line of at most `cap` bytes from an async reader, resumable: the
/// state lives here, so a read cancelled by `select!` loses nothing.
#[derive(Debug, Default)]
pub struct LineReader {
    buf: Vec<u8>,
    /// The line's length so far, including what was cut.
    len: u64,
}

/// A line as read: its first `cap` bytes and its whole length.
#[derive(Debug, PartialEq, Eq)]
pub struct CappedLine {
    pub bytes: Vec<u8>,
    pub len: u64,
}

impl LineReader {
    /// The next line (without its newline), `None` at the end of input. A
    /// last line without a newline is a line.
    pub async fn next<R: AsyncBufRead + Unpin>(
        &mut self,
        r: &mut R,
        cap: usize,
    ) -> std::io::Result<Option<CappedLine>> {
        loop {
            let available = r.fill_buf().await?;
            if available.is_empty() {
                if self.len == 0 {
                    return Ok(None);
                }
                return Ok(Some(self.take()));
            }
            let newline = available.iter().position(|b| *b == b'\n');
            let part = &available[..newline.unwrap_or(available.len())];
            let room = cap.saturating_sub(self.buf.len());
            self.buf.extend_from_slice(&part[..part.len().min(room)]);
            self.len += part.len() as u64;
            let used = part.len() + usize::from(newline.is_some());
            r.consume(used);
            if newline.is_some() {
                return Ok(Some(self.take()));
            }
        }
    }

    fn take(&mut self) -> CappedLine {
        let line = CappedLine {
            bytes: std::mem::take(&mut self.buf),
            len: self.len,
        };
        self.len = 0;
        line
    }
}

/// The record port's lines, taken in within the caps above.
#[derive(Debug)]
pub struct RecordSink {
    pub records: Vec<TimedRecord>,
    /// Bytes taken in at most ([`MAX_RECORD_BYTES`]).
    max_bytes: u64,
    bad_lines: Vec<String>,
    /// Bad lines beyond MAX_BAD_LINES, counted.
    bad_dropped: u64,
    /// Lines longer than MAX_RECORD_LINE.
    too_long: u64,
    /// Bytes taken in so far.
    bytes: u64,
    /// Lines (and their bytes) after MAX_RECORD_BYTES, not parsed.
    ignored: (u64, u64),
}

impl Default for RecordSink {
    fn default() -> RecordSink {
        RecordSink::new(MAX_RECORD_BYTES)
    }
}

impl RecordSink {
    pub fn new(max_bytes: u64) -> RecordSink {
        RecordSink {
            records: vec![],
            max_bytes,
            bad_lines: vec![],
            bad_dropped: 0,
            too_long: 0,
            bytes: 0,
            ignored: (0, 0),
        }
    }

    /// Takes one line that arrived `at_ms` after QEMU started.
    pub fn take(&mut self, line: CappedLine, at_ms: u64) {
        if self.bytes >= self.max_bytes {
            self.ignored.0 += 1;
            self.ignored.1 += line.len + 1;
            return;
        }
        self.bytes += line.len + 1;
        let text = String::from_utf8_lossy(&line.bytes);
        if line.len > MAX_RECORD_LINE as u64 {
            self.too_long += 1;
            self.bad(format!(
                "{} [line of {} bytes, longer than MAX_RECORD_LINE ({MAX_RECORD_LINE}): cut]",
                cut_to(&text, MAX_BAD_LINE_KEPT),
                line.len
            ));
            return;
        }
        match mmci_record::parse_line(&text) {
            Ok(record) => self.records.push(TimedRecord { at_ms, record }),
            Err(_) if text.len() > MAX_BAD_LINE_KEPT => self.bad(format!(
                "{} [line of {} bytes: cut]",
                cut_to(&text, MAX_BAD_LINE_KEPT),
                line.len
            )),
            Err(_) => self.bad(text.into_owned()),
        }
    }

    fn bad(&mut self, line: String) {
        if self.bad_lines.len() < MAX_BAD_LINES {
            self.bad_lines.push(line);
        } else {
            self.bad_dropped += 1;
        }
    }

    /// The bad lines for run.json, with a last line counting what was not
    /// kept.
    pub fn bad_lines(&self) -> Vec<String> {
        let mut out = self.bad_lines.clone();
        if self.bad_dropped > 0 {
            out.push(format!(
                "[mmci: {} more bad lines not kept (MAX_BAD_LINES = {MAX_BAD_LINES})]",
                self.bad_dropped
            ));
        }
        if self.ignored.0 > 0 {
            out.push(format!(
                "[mmci: {} lines ({} bytes) after the first {} bytes of records ignored (MAX_RECORD_BYTES)]",
                self.ignored.0, self.ignored.1, self.max_bytes
            ));
        }
        out
    }
}

/// The first `max` bytes of `s`, cut at a character boundary.
pub(super) fn cut_to(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// A file of `len` bytes read back as its first `head` and last `tail`
/// bytes, whole lines only, joined by a line saying how much was cut (the
/// whole file when it fits). Reads `head + tail` bytes at most, whatever
/// `len` claims.
pub fn read_head_tail<R: Read + Seek>(
    mut r: R,
    len: u64,
    head: u64,
    tail: u64,
    what: &str,
) -> std::io::Result<String> {
    let mut bytes = Vec::new();
    if len <= head + tail {
        r.take(head + tail).read_to_end(&mut bytes)?;
        return Ok(String::from_utf8_lossy(&bytes).into_owned());
    }
    (&mut r).take(head).read_to_end(&mut bytes)?;
    // Whole lines: the head up to its last newline, the tail from its first.
    let head_end = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    bytes.truncate(head_end);
    r.seek(SeekFrom::Start(len - tail))?;
    let mut end = Vec::new();
    r.take(tail).read_to_end(&mut end)?;
    let tail_start = end
        .iter()
        .position(|b| *b == b'\n')
        .map_or(end.len(), |i| i + 1);
    let cut = len - bytes.len() as u64 - (end.len() - tail_start) as u64;
    let mut text = String::from_utf8_lossy(&bytes).into_owned();
    text.push_str(&format!(
        "[mmci: {cut} bytes of the {what} cut here: it is {len} bytes, of which the first {head} and the last {tail} are read]\n"
    ));
    text.push_str(&String::from_utf8_lossy(&end[tail_start..]));
    Ok(text)
}

/// [`read_head_tail`] of the file at `path`; empty when it cannot be read.
pub(super) fn read_file_head_tail(path: &Path, head: u64, tail: u64, what: &str) -> String {
    std::fs::File::open(path)
        .and_then(|f| {
            let len = f.metadata()?.len();
            read_head_tail(f, len, head, tail, what)
        })
        .unwrap_or_default()
}

/// Has the console file passed [`MAX_CONSOLE_BYTES`]?
pub(super) fn console_flooded(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.len() > MAX_CONSOLE_BYTES)
}

/// QEMU's stderr while it runs: only what was added since the last look
/// is read, and whole lines are searched for an accelerator failure.
#[derive(Debug, Default)]
pub struct StderrWatch {
    offset: u64,
    /// The last line, when it has no newline yet.
    partial: Vec<u8>,
}

impl StderrWatch {
    /// Most bytes read per look; QEMU writes a few lines in all.
    const CHUNK: u64 = 1 << 20;

    /// Does what `r` holds past the last look (from `offset` on) name an
    /// accelerator failure?
    pub fn look<R: Read + Seek>(&mut self, mut r: R) -> bool {
        if r.seek(SeekFrom::Start(self.offset)).is_err() {
            return false;
        }
        let mut new = Vec::new();
        if r.take(Self::CHUNK).read_to_end(&mut new).is_err() {
            return false;
        }
        self.offset += new.len() as u64;
        self.partial.extend_from_slice(&new);
        let Some(last) = self.partial.iter().rposition(|b| *b == b'\n') else {
            // No whole line yet; a line longer than a chunk is no QEMU message.
            if self.partial.len() as u64 > Self::CHUNK {
                self.partial.clear();
            }
            return false;
        };
        let lines: Vec<u8> = self.partial.drain(..=last).collect();
        accel_failure(&String::from_utf8_lossy(&lines)).is_some()
    }
}

/// QEMU's words for an accelerator that cannot run the guest.
pub(super) const ACCEL_FAILURE_MARKERS: [&str; 3] =
    ["KVM internal error", "kvm run failed", "failed to set MSR"];

pub fn accel_failure(stderr: &str) -> Option<&str> {
    stderr
        .lines()
        .find(|l| ACCEL_FAILURE_MARKERS.iter().any(|m| l.contains(m)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines of any length through any buffer size: each comes whole up
    /// to the cap, with its real length; a last line without a newline
    /// counts; a cancelled read resumes where it stopped.
    #[tokio::test]
    async fn record_lines_are_read_capped() {
        let long = "x".repeat(100);
        let input = format!("short\n\n{long}\nmid-sized\nlast");
        for capacity in [1, 3, 7, 64, 4096] {
            let mut r = BufReader::with_capacity(capacity, input.as_bytes());
            let mut reader = LineReader::default();
            let mut got = vec![];
            while let Some(line) = reader.next(&mut r, 10).await.unwrap() {
                got.push((String::from_utf8(line.bytes).unwrap(), line.len));
            }
            let want: Vec<(String, u64)> = vec![
                ("short".into(), 5),
                ("".into(), 0),
                ("x".repeat(10), 100),
                ("mid-sized".into(), 9),
                ("last".into(), 4),
            ];
            assert_eq!(got, want, "buffer of {capacity}");
        }
        // A read cancelled mid-line (a timer tick in the select!) keeps
        // what it had: the line still comes whole.
        let (mut tx, rx) = tokio::io::duplex(64);
        let mut r = BufReader::new(rx);
        let mut reader = LineReader::default();
        use tokio::io::AsyncWriteExt;
        tx.write_all(b"{\"half").await.unwrap();
        let t = tokio::time::timeout(Duration::from_millis(50), reader.next(&mut r, 1 << 20)).await;
        assert!(t.is_err(), "no newline yet: {t:?}");
        tx.write_all(b" line\"}\n").await.unwrap();
        let line = reader.next(&mut r, 1 << 20).await.unwrap().unwrap();
        assert_eq!(line.bytes, b"{\"half line\"}");
    }

    /// What a hostile guest sends on the record port ends in run.json
    /// bounded: records parsed, a line over MAX_RECORD_LINE cut and counted
    /// as bad, at most MAX_BAD_LINES bad lines of at most MAX_BAD_LINE_KEPT
    /// bytes, the rest counted, nothing taken past the byte cap.
    #[test]
    fn record_port_output_is_bounded() {
        let record = mmci_record::Envelope::new(Record::Setup {
            step: "mounts".into(),
            detail: "ok".into(),
            ms: 3,
        })
        .to_line();
        let line = |text: &str| CappedLine {
            bytes: text.as_bytes()[..text.len().min(MAX_RECORD_LINE)].to_vec(),
            len: text.len() as u64,
        };
        let mut sink = RecordSink::default();
        sink.take(line(record.trim_end()), 5);
        let huge = "y".repeat(MAX_RECORD_LINE + 10);
        sink.take(line(&huge), 6);
        let wide = "z".repeat(MAX_BAD_LINE_KEPT * 2);
        sink.take(line(&wide), 7);
        for i in 0..MAX_BAD_LINES + 500 {
            sink.take(line(&format!("garbage {i}")), 8);
        }
        sink.take(line(record.trim_end()), 9);
        assert_eq!(sink.records.len(), 2);
        assert_eq!((sink.records[0].at_ms, sink.records[1].at_ms), (5, 9));
        let bad = sink.bad_lines();
        assert_eq!(bad.len(), MAX_BAD_LINES + 1);
        assert!(
            bad[0].starts_with(&"y".repeat(MAX_BAD_LINE_KEPT)),
            "{}",
            &bad[0][..50]
        );
        assert!(
            bad[0].ends_with(&format!(
                "[line of {} bytes, longer than MAX_RECORD_LINE (1048576): cut]",
                MAX_RECORD_LINE + 10
            )),
            "{}",
            &bad[0][MAX_BAD_LINE_KEPT..]
        );
        assert!(bad[1].ends_with(&format!("[line of {} bytes: cut]", MAX_BAD_LINE_KEPT * 2)));
        assert_eq!(bad[2], "garbage 0");
        assert_eq!(
            bad.last().unwrap(),
            "[mmci: 502 more bad lines not kept (MAX_BAD_LINES = 1000)]"
        );
        assert!(bad.iter().all(|b| b.len() < MAX_BAD_LINE_KEPT + 200));

        // Past the byte cap lines are counted, not parsed or kept.
        let mut sink = RecordSink::new(100);
        for _ in 0..10 {
            sink.take(line(record.trim_end()), 1);
        }
        let per = record.len() as u64;
        let taken = 100_u64.div_ceil(per);
        assert_eq!(sink.records.len() as u64, taken);
        assert_eq!(
            sink.bad_lines(),
            [format!(
                "[mmci: {} lines ({} bytes) after the first 100 bytes of records ignored (MAX_RECORD_BYTES)]",
                10 - taken,
                (10 - taken) * per
            )]
        );
        // Not UTF-8: a bad line, not the end of the port.
        let mut sink = RecordSink::default();
        sink.take(
            CappedLine {
                bytes: vec![0xff, b'a'],
                len: 2,
            },
            1,
        );
        sink.take(line(record.trim_end()), 2);
        assert_eq!(
            (sink.bad_lines(), sink.records.len()),
            (vec!["\u{fffd}a".to_string()], 1)
        );
    }

    /// The console read back: whole when it fits; else its head and tail
    /// in whole lines around a line naming the cut, never more than
    /// head + tail bytes read.
    #[test]
    fn console_is_read_as_head_and_tail() {
        let lines: String = (0..100).map(|i| format!("line {i:03}\n")).collect();
        let read = |head, tail| {
            read_head_tail(
                std::io::Cursor::new(lines.as_bytes()),
                lines.len() as u64,
                head,
                tail,
                "console",
            )
            .unwrap()
        };
        assert_eq!(read(1000, 0), lines);
        assert_eq!(read(500, 500), lines);
        let text = read(20, 30);
        assert_eq!(
            text,
            "line 000\nline 001\n[mmci: 855 bytes of the console cut here: it is 900 bytes, of which the first 20 and the last 30 are read]\nline 097\nline 098\nline 099\n"
        );
        // An 8 GiB console (sparse: zeros, no newline) reads 2 KiB.
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("console.log");
        let f = std::fs::File::create(&path).unwrap();
        f.set_len(8 << 30).unwrap(); // 8 GiB, sparse
        let text = read_file_head_tail(&path, 1024, 1024, "console");
        assert!(
            text.starts_with("[mmci: 8589934592 bytes of the console cut here"),
            "{}",
            &text[..80]
        );
        assert!(text.len() < 300, "{}", text.len());
    }

    /// The console file is watched by its size: a sparse file one byte past
    /// the cap counts as a flood, one at the cap does not.
    #[test]
    fn a_console_past_its_cap_is_a_flood() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("console.log");
        assert!(!console_flooded(&path), "a missing console is no flood");
        let f = std::fs::File::create(&path).unwrap();
        f.set_len(MAX_CONSOLE_BYTES).unwrap();
        assert!(!console_flooded(&path));
        f.set_len(MAX_CONSOLE_BYTES + 1).unwrap();
        assert!(console_flooded(&path));
    }

    /// QEMU's stderr is looked at incrementally: a failure is found when
    /// its line is complete, and old text is not read again.
    #[test]
    fn stderr_is_watched_incrementally() {
        let mut w = StderrWatch::default();
        let mut text = b"qemu-system-x86_64: warning: host doesn't support x\n".to_vec();
        assert!(!w.look(std::io::Cursor::new(&text)));
        assert_eq!(w.offset, text.len() as u64);
        text.extend_from_slice(b"KVM internal error. Sub");
        assert!(!w.look(std::io::Cursor::new(&text)), "half a line");
        text.extend_from_slice(b"error: 1\n");
        assert!(w.look(std::io::Cursor::new(&text)));
        assert!(!w.look(std::io::Cursor::new(&text)), "nothing new");
    }

    #[test]
    fn accel_failure_is_recognised() {
        let stderr = "KVM internal error. Suberror: 1\nextra data[0]: 0x0000000000000000\nemulation failure\n";
        assert_eq!(
            accel_failure(stderr),
            Some("KVM internal error. Suberror: 1")
        );
        assert_eq!(
            accel_failure("qemu-system-x86_64: terminating on signal 15\n"),
            None
        );
    }
}
