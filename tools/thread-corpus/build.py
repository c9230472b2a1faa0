#!/usr/bin/env python3
"""Build a corpus of real patch threads, each in the form lore serves as `t.mbox.gz`.

Input: public-inbox v2 git archives (one commit per message, the raw mail in blob `m`), e.g.
the `linux-mailinglist-archives/<list>.0` repositories on GitHub. Output, per list:
`<out>/<list>/<NNNNN>.t.mbox.gz` and one `<out>/index.tsv` for all lists.

The thread rules are public-inbox's (Over.pm get_thread, Mbox.pm, MboxGz.pm), as
../shared/fixtures/lore-threads/README.md states them:
  - a thread is every message linked to the requested one through Message-ID, References and
    In-Reply-To, transitively, ghosts (ids of messages not in the archive) included;
  - plus every message whose normalised Subject equals the requested message's;
  - messages in arrival (commit) order;
  - each written mboxrd: the fixed `From mboxrd@z ...` line, the header without Lines:,
    Bytes:, Content-Length: and Status:, a blank line, the body with `>*From ` lines quoted
    one more level, one extra newline; gzip with no name and mtime 0.
The requested message of a thread is its first arrived non-reply `[PATCH ...]` mail (the mail
a lore link to the series names). Every thread that holds such a mail is kept.

Only the slice of each archive that is read (`--last N`: its last N messages) is the inbox:
links and subject matches reach no message outside it.

Usage:
  build.py --out /work/corpus --last 12000 LIST=GITDIR [LIST=GITDIR ...]

Python 3.11 standard library only; git on PATH.
"""

import argparse
import email.header
import gzip
import io
import os
import re
import subprocess
import sys

MBOXRD_FROM = b"From mboxrd@z Thu Jan  1 00:00:00 1970\n"
DROPPED_HEADERS = (b"lines", b"bytes", b"content-length", b"status")
ID_RE = re.compile(rb"<([^<>\s]+)>")
# A patch mail: the first [...] group holds the word PATCH (`[PATCH v2 1/3]`, `[RFC PATCH]`).
PATCH_TAG_RE = re.compile(r"^\s*\[[^\]]*\bPATCH\b", re.IGNORECASE)
REPLY_RE = re.compile(r"^\s*(re|aw|fwd?|回复)\s*:", re.IGNORECASE)


def commits(gitdir, last):
    """The archive's commits, oldest first; the last `last` of them when `last` > 0."""
    out = subprocess.run(
        ["git", "-C", gitdir, "rev-list", "--reverse", "--first-parent", "HEAD"],
        check=True, capture_output=True).stdout.split()
    return out[-last:] if last > 0 else out


def blobs(gitdir, shas):
    """(sha, raw message) for each commit whose tree has `m` (a deletion commit has `d`)."""
    proc = subprocess.Popen(["git", "-C", gitdir, "cat-file", "--batch"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    # Feed from a thread-free writer: write all requests first would deadlock on big pipes,
    # so interleave one request and one answer.
    for sha in shas:
        proc.stdin.write(sha + b":m\n")
        proc.stdin.flush()
        head = proc.stdout.readline()
        if head.endswith(b" missing\n"):
            continue
        size = int(head.split()[2])
        data = proc.stdout.read(size)
        proc.stdout.read(1)
        yield sha, data
    proc.stdin.close()
    proc.wait()


def split_message(raw):
    """(header bytes, separator, body bytes); the separator is the first empty line."""
    m = re.search(rb"\r?\n\r?\n", raw)
    if not m:
        return raw, b"\n", b""
    cut = m.start() + (2 if raw[m.start()] == 13 else 1)
    return raw[:cut], raw[cut:m.end()], raw[m.end():]


def header_fields(header):
    """[(lowercased name, unfolded value bytes)] in order."""
    fields = []
    for line in header.splitlines():
        if line[:1] in (b" ", b"\t") and fields:
            name, value = fields[-1]
            fields[-1] = (name, value + b" " + line.strip())
        elif b":" in line:
            name, value = line.split(b":", 1)
            fields.append((name.strip().lower(), value.strip()))
    return fields


def decode_subject(value):
    """The Subject as text: RFC 2047 words decoded; undecodable bytes replaced, never raised."""
    text = value.decode("utf-8", "replace")
    try:
        return str(email.header.make_header(email.header.decode_header(text)))
    except Exception:  # a malformed encoded word: keep the raw text, as a reader would see it
        return text


def normalise_subject(subject):
    """public-inbox's subject_path: the key of the same-subject match."""
    s = re.sub(r"\s+", " ", subject.strip())
    s = s.rstrip(".")
    s = re.sub(r"^re: ", "", s, count=1, flags=re.IGNORECASE)
    s = re.sub(r"[^A-Za-z0-9_.~/-]+", "_", s)
    return s.lower()


class Message:
    __slots__ = ("num", "raw", "mid", "refs", "subject", "skey")

    def __init__(self, num, raw):
        self.num = num
        self.raw = raw
        header, _, _ = split_message(raw)
        fields = header_fields(header)
        get = lambda n: [v for k, v in fields if k == n]
        mids = [i for v in get(b"message-id") for i in ID_RE.findall(v)]
        self.mid = mids[0].decode("utf-8", "replace") if mids else f"no-message-id-{num}"
        refs = [i for v in get(b"references") + get(b"in-reply-to") for i in ID_RE.findall(v)]
        self.refs = [r.decode("utf-8", "replace") for r in refs]
        subj = get(b"subject")
        self.subject = decode_subject(subj[0]) if subj else ""
        self.skey = normalise_subject(self.subject)

    def is_patch(self):
        return bool(PATCH_TAG_RE.match(self.subject)) and not REPLY_RE.match(self.subject)


def mboxrd(raw):
    """One message as public-inbox writes it into a thread mbox."""
    header, sep, body = split_message(raw)
    out = [MBOXRD_FROM]
    skipping = False
    for line in header.splitlines(keepends=True):
        if line[:1] in (b" ", b"\t"):
            if not skipping:
                out.append(line)
            continue
        name = line.split(b":", 1)[0].strip().lower()
        skipping = name in DROPPED_HEADERS
        if not skipping:
            out.append(line)
    out.append(sep if sep.strip(b"\r\n") == b"" and sep.endswith(b"\n") else b"\n")
    for line in body.splitlines(keepends=True):
        if re.match(rb">*From ", line):
            line = b">" + line
        out.append(line)
    if body and not body.endswith(b"\n"):
        out.append(b"\n")
    out.append(b"\n")
    return b"".join(out)


class UnionFind:
    def __init__(self):
        self.parent = {}

    def find(self, x):
        p = self.parent.setdefault(x, x)
        while p != self.parent[p]:
            self.parent[p] = self.parent[self.parent[p]]
            p = self.parent[p]
        self.parent[x] = p
        return p

    def union(self, a, b):
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[rb] = ra


def threads(messages):
    """(requested message, [messages of its thread in arrival order]) for each thread with a
    [PATCH mail."""
    uf = UnionFind()
    for m in messages:
        uf.find(m.mid)
        for r in m.refs:
            uf.union(m.mid, r)
    by_tid, by_subject = {}, {}
    for m in messages:
        by_tid.setdefault(uf.find(m.mid), []).append(m)
        by_subject.setdefault(m.skey, []).append(m)
    for members in by_tid.values():
        root = next((m for m in members if m.is_patch()), None)
        if root is None:
            continue
        nums = {m.num for m in members}
        extra = [m for m in by_subject.get(root.skey, []) if m.num not in nums] if root.skey else []
        yield root, sorted(members + extra, key=lambda m: m.num)


def write_gz(path, data):
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0) as gz:
        gz.write(data)
    with open(path, "wb") as f:
        f.write(buf.getvalue())


def tsv_field(s):
    return s.replace("\t", " ").replace("\n", " ").replace("\r", " ")


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="corpus directory (outside the repository)")
    ap.add_argument("--last", type=int, default=0,
                    help="read only each archive's last N messages (0: all)")
    ap.add_argument("lists", nargs="+", metavar="LIST=GITDIR")
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    index = [["file", "list", "root_message_id", "mails", "patch_mails", "first_commit",
              "last_commit", "root_subject"]]
    for spec in args.lists:
        name, _, gitdir = spec.partition("=")
        if not gitdir:
            sys.exit(f"{spec}: want LIST=GITDIR")
        shas = commits(gitdir, args.last)
        messages = [Message(i, raw) for i, (_, raw) in enumerate(blobs(gitdir, shas))]
        os.makedirs(os.path.join(args.out, name), exist_ok=True)
        n = 0
        for root, members in sorted(threads(messages), key=lambda t: t[0].num):
            n += 1
            rel = f"{name}/{n:05d}.t.mbox.gz"
            write_gz(os.path.join(args.out, rel), b"".join(mboxrd(m.raw) for m in members))
            index.append([rel, name, root.mid, str(len(members)),
                          str(sum(m.is_patch() for m in members)),
                          shas[0].decode(), shas[-1].decode(), tsv_field(root.subject)])
        print(f"{name}: {len(messages)} messages from {len(shas)} commits "
              f"({shas[0].decode()[:12]}..{shas[-1].decode()[:12]}), {n} threads",
              file=sys.stderr)
    with open(os.path.join(args.out, "index.tsv"), "w", encoding="utf-8") as f:
        for row in index:
            f.write("\t".join(tsv_field(c) for c in row) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
