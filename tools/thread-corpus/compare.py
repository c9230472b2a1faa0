#!/usr/bin/env python3
"""Side by side: what `b4 am` and what `mmci series show` pick from each thread of a corpus.

Reads the corpus build.py wrote (`<corpus>/index.tsv` and the `.t.mbox.gz` files). For each
thread, requested by its index row's message-id:
  - b4: what `b4 am -m THREAD.mbox ROOT` assembles. b4 is imported (run this script with the
    python of the venv b4 is installed in) and driven through the same calls `b4 am` makes
    (b4.mbox.make_am up to the am-ready series): get_msgs_from_mailbox_or_maildir,
    get_strict_thread(msgs, root), LoreMailbox.add_message for each, get_series(revision=None,
    sloppytrailers=False, reroll=True), with the network off. `--check-cli N` runs the real
    `b4 am -m FILE -o DIR -i ROOT` on the first N threads and compares the revision and the
    patches' message-ids, so the emulation is checked against the command;
  - mmci: the `series_pick` example (cargo build -p orchestrator --example series_pick), which
    makes the library call `mmci series show` makes, for a thread requested by ROOT; it reports
    a refusal (incomplete revision) or "no patches" as such.
Writes `<out>/rows.tsv` (one row per thread: both picks and the class of (dis)agreement) and
prints a table of the classes with counts.

Usage:
  /work/b4venv/bin/python compare.py --corpus /work/corpus --mmci $CARGO_TARGET_DIR/debug/examples/series_pick --out DIR
"""

import argparse
import collections
import gzip
import json
import logging
import os
import re
import signal
import subprocess
import sys
import tempfile



# b4 takes minutes on some threads with huge attachments (a 1.4 MB gz kselftest thread of six
# mails ran over five); past this, the thread counts as a b4 error.
B4_TIMEOUT_S = 60


class B4Timeout(Exception):
    pass


def _timeout(_sig, _frame):
    raise B4Timeout(f"b4 took over {B4_TIMEOUT_S} s")


def b4_pick(mbox_path, root):
    """b4 am's series for the thread: a dict, or {'outcome': 'none'} when it finds none."""
    import b4

    msgs = b4.get_msgs_from_mailbox_or_maildir(mbox_path)
    msgs = b4.get_strict_thread(msgs, root) or []
    lmbx = b4.LoreMailbox()
    for msg in msgs:
        lmbx.add_message(msg)
    lser = lmbx.get_series(revision=None, sloppytrailers=False, reroll=True,
                           codereview_trailers=False)
    if lser is None:
        return {"outcome": "none"}
    cover = lser.patches[0].msgid if lser.patches and lser.patches[0] is not None else None
    patches = [p.msgid if p is not None else None for p in lser.patches[1:]]
    return {
        "outcome": "series" if lser.complete else "incomplete",
        "version": lser.revision,
        "total": lser.expected,
        "cover": cover,
        "patches": patches,
        "partial_reroll": bool(lser.partial_reroll),
        "revisions": sorted(lmbx.series.keys()),
    }


def b4_cli(mbox_path, root):
    """(revision, message-ids of the patches written) from the real `b4 am -i`: the revision
    from its output file's name, the ids from the `+ Message-ID:` trailers it lists."""
    with tempfile.TemporaryDirectory() as out:
        r = subprocess.run([os.path.join(os.path.dirname(sys.executable), "b4"), "--offline-mode",
                            "am", "-m", mbox_path, "-o", out, "-i", "--no-cover", root],
                           capture_output=True, text=True, timeout=300)
        files = [f for f in os.listdir(out) if f.endswith(".mbx")]
        if not files:
            return None, []
        ver = re.match(r"v(\d+)_", files[0])
        ids = re.findall(r"^\s+\+ Message-ID: <([^>]+)>$", r.stdout + r.stderr, re.M)
        return (int(ver.group(1)) if ver else 1), ids


class MmciPicker:
    """The `series_pick` example (orchestrator/examples/series_pick.rs), one process for the
    whole corpus: the library call `mmci series show` makes for a thread requested by ROOT."""

    def __init__(self, exe):
        self.proc = subprocess.Popen([exe], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, encoding="utf-8")

    def pick(self, mbox_path, root):
        self.proc.stdin.write(f"{mbox_path}\t{root}\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())


def classify(b, m):
    """The class of a thread: `agree ...` or `differ: ...`, from the two picks."""
    bo, mo = b["outcome"], m["outcome"]
    if bo == "none" and mo == "none":
        return "agree: no series"
    if bo != mo:
        if bo in ("series", "incomplete") and mo in ("series", "incomplete"):
            same_v = b["version"] == m["version"]
            return f"differ: b4 {bo}, mmci {mo}" + (" (same revision)" if same_v else
                                                     " (other revision)")
        return f"differ: b4 {bo}, mmci {mo}"
    if bo == "incomplete":
        return ("agree: incomplete" if b["version"] == m["version"]
                else "differ: both incomplete, other revision")
    if bo == "error":
        return "differ: errors"
    if b["version"] != m["version"]:
        return "differ: other revision"
    bp = [p for p in b["patches"]]
    if bp != m["patches"]:
        if len(bp) != len(m["patches"]):
            return "differ: same revision, other patch count"
        return "differ: same revision, other mails"
    if b["cover"] != m["cover"]:
        return "differ: same patches, cover " + ("only b4" if not m["cover"] else
                                                 "only mmci" if not b["cover"] else "other")
    return "agree: same series"


def b4_picks(corpus, rows, cache_path, check_cli):
    """b4's pick for every row, from `cache_path` (JSON lines) where it holds one: b4 is the
    slow half (a few tenths of a second a thread) and does not change when mmci does."""
    import b4
    b4.can_network = False
    signal.signal(signal.SIGALRM, _timeout)
    cached = {}
    if os.path.exists(cache_path):
        with open(cache_path, encoding="utf-8") as f:
            for line in f:
                doc = json.loads(line)
                cached[doc["file"]] = doc["b4"]
    mismatches = 0
    with open(cache_path, "a", encoding="utf-8") as cache, \
            tempfile.TemporaryDirectory() as tmp:
        for i, row in enumerate(rows):
            rel, root = row[0], row[2]
            if rel in cached and i >= check_cli:
                continue
            plain = os.path.join(tmp, "t.mbox")
            with gzip.open(os.path.join(corpus, rel)) as src, open(plain, "wb") as dst:
                dst.write(src.read())
            signal.alarm(B4_TIMEOUT_S)
            try:
                b = b4_pick(plain, root)
            except Exception as e:  # b4 failing on a thread is a result too
                b = {"outcome": "error", "error": f"{type(e).__name__}: {e}"[:200]}
            finally:
                signal.alarm(0)
            if i < check_cli:
                ver, ids = b4_cli(plain, root)
                present = [p for p in b.get("patches", []) if p is not None]
                if b["outcome"] != "none" and (ver, ids) != (b.get("version"), present):
                    mismatches += 1
                    print(f"b4 am differs on {rel}: command v{ver} {ids}, "
                          f"emulated v{b.get('version')} {present}", file=sys.stderr)
            if rel not in cached:
                cache.write(json.dumps({"file": rel, "b4": b}) + "\n")
                cache.flush()
                cached[rel] = b
    if check_cli:
        print(f"b4 am command vs emulation: {mismatches} of {min(check_cli, len(rows))} differ")
    return cached


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--mmci", help="the series_pick example; without it, only b4's half")
    ap.add_argument("--out", required=True)
    ap.add_argument("--only", help="only index rows whose file contains this")
    ap.add_argument("--check-cli", type=int, default=0,
                    help="also run the real `b4 am` on the first N threads")
    args = ap.parse_args(argv)
    logging.getLogger("b4").setLevel(logging.CRITICAL + 1)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.corpus, "index.tsv"), encoding="utf-8") as f:
        rows = [l.rstrip("\n").split("\t") for l in f][1:]
    if args.only:
        rows = [r for r in rows if args.only in r[0]]
    picks = b4_picks(args.corpus, rows, os.path.join(args.out, "b4.jsonl"), args.check_cli)
    if not args.mmci:
        return
    mmci = MmciPicker(args.mmci)
    counts = collections.Counter()
    with open(os.path.join(args.out, "rows.tsv"), "w", encoding="utf-8") as out:
        out.write("file\troot\tclass\tb4\tmmci\n")
        for rel, _list, root, *_ in rows:
            b = picks[rel]
            m = mmci.pick(os.path.join(args.corpus, rel), root)
            cls = classify(b, m)
            counts[cls] += 1
            out.write(f"{rel}\t{root}\t{cls}\t{json.dumps(b)}\t{json.dumps(m)}\n")
    total = sum(counts.values())
    print(f"{total} threads")
    for cls, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        print(f"{n:6d}  {100.0 * n / total:5.1f}%  {cls}")


if __name__ == "__main__":
    main(sys.argv[1:])
