#!/usr/bin/env python3
"""Builds testdata/eval/tor/qa.json from a git mirror of the Tor Project's support portal.

The support portal (https://gitlab.torproject.org/tpo/web/support, mirrored at
https://github.com/torproject/support) is a Lektor site. Every
content/<topic>/<slug>/contents.lr of the question model is one FAQ entry:
its `title:` field is the question and its `description:` field (Markdown) the
answer. This script reads those files straight from the git objects of a bare
mirror (no work tree needed), turns each answer into plain Markdown and writes
{"pairs": [{"id", "question", "answer"}, ...]} sorted by id.

Usage:
    python3 build_qa.py [--repo PATH] [--commit SHA] [--out PATH]

Defaults: --repo /work/.mirror/torproject+support/repo, --commit the commit
recorded in ATTRIBUTION.md, --out qa.json next to this script. Standard library
only; needs git on PATH. Running it again on the same commit gives the same
bytes, so the extraction can be checked.
"""

import argparse
import configparser
import json
import os
import re
import subprocess
import sys

DEFAULT_REPO = "/work/.mirror/torproject+support/repo"
DEFAULT_COMMIT = "8257515c350b8972d5e121e30d794727f6882133"

# The user-facing topics. Left out: glossary, relay-operators, metrics, abuse,
# alternate-designs, little-t-tor, apt, rpm, mullvad-browser.
TOPICS = ("tbb", "connecting", "censorship", "tormobile", "onionservices",
          "about", "faq", "misc", "https", "get-in-touch", "tor-vpn")

# Entries whose answer is only a pointer to a link (no statement of its own),
# or that are not a question at all; decided by reading them. Reasons are
# repeated in ATTRIBUTION.md.
SKIP = {
    "tbb/tbb-24": "answer only points to the DuckDuckGo support portal and the issue tracker",
    "tbb/tbb-25": "answer only points to the NoScript FAQ and the bug tracker",
    "tbb/tbb-27": "answer only points to the Updating section of the Tor Browser Manual",
    "tbb/tbb-28": "answer only points to the Uninstalling section of the Tor Browser Manual",
    "tbb/tbb-46": "answer only points to the Installation section of the Tor Browser Manual",
    "misc/misc-8": "answer only points to the trademark FAQ page",
    "misc/misc-15": "answer only thanks the reader and points to the donor FAQ",
    "misc/menu": "not a question: the title field is misspelt ('itle') and empty, the description is a site menu",
}

MAX_ANSWER = 20000

# Element names removed when they appear as HTML tags outside code. Angle
# brackets that are not one of these (an e-mail address in gpg output, a
# placeholder such as <virtual port>) are text and stay.
HTML_TAGS = {
    "a", "abbr", "b", "blockquote", "br", "center", "code", "dd", "del", "details", "div",
    "dl", "dt", "em", "figcaption", "figure", "font", "h1", "h2", "h3", "h4", "h5", "h6",
    "hr", "i", "iframe", "img", "ins", "kbd", "li", "mark", "ol", "p", "pre", "s", "small",
    "source", "span", "strong", "sub", "summary", "sup", "table", "tbody", "td", "th",
    "thead", "tr", "u", "ul", "video",
}


def git(repo, *args):
    return subprocess.run(["git", "-C", repo] + list(args), check=True,
                          capture_output=True).stdout.decode("utf-8")


def parse_lektor(text):
    """Parses a Lektor contents.lr into {field: value}.

    Fields are separated by lines holding only '---'; a line of four or more
    dashes is an escaped line of one dash fewer. A field is 'name: value',
    the value running on over the following lines up to the next separator.
    """
    fields = {}
    block = []

    def flush():
        if not block:
            return
        m = re.match(r"([A-Za-z0-9_-]+)[ \t]*:(.*)", block[0])
        if m:
            first = m.group(2).strip()
            lines = ([first] if first else []) + block[1:]
            fields[m.group(1)] = "\n".join(lines).strip("\n")
        block.clear()

    for line in text.replace("\r\n", "\n").split("\n"):
        if re.fullmatch(r"---[ \t]*", line):
            flush()
            continue
        if re.fullmatch(r"-{4,}[ \t]*", line):
            line = line.rstrip()[1:]
        block.append(line)
    flush()
    return fields


def child_model(repo, commit, topic):
    """The model Lektor gives a topic's children that do not name one."""
    topic_fields = parse_lektor(git(repo, "show", f"{commit}:content/{topic}/contents.lr"))
    model = topic_fields.get("_model", "page").strip()
    ini = configparser.ConfigParser(interpolation=None)
    ini.read_string(git(repo, "show", f"{commit}:models/{model}.ini"))
    return ini.get("children", "model", fallback=None)


LINK = re.compile(
    r"(!?)\[((?:[^\[\]]|\[[^\[\]]*\])*)\]"          # [text], text may hold one level of [..]
    r"\(\s*<?([^()\s<>]*(?:\([^()\s]*\)[^()\s<>]*)*)>?"  # (url), url may hold balanced (..)
    r"(?:\s+(?:\"[^\"]*\"|'[^']*'))?\s*\)")         # optional "title"
AUTOLINK = re.compile(r"<((?:https?|ftp)://[^<>\s]+|mailto:[^<>\s]+)>")
TAG = re.compile(r"</?([A-Za-z][A-Za-z0-9]*)\b[^<>]*?/?>")
COMMENT = re.compile(r"<!--.*?-->", re.S)


def convert_inline(line):
    """Links become their text, images go, autolinks become the address, HTML tags go."""
    prev = None
    while prev != line:  # repeat so a link inside link text is also reduced
        prev = line
        line = LINK.sub(lambda m: "" if m.group(1) else m.group(2), line)
    line = AUTOLINK.sub(lambda m: m.group(1), line)
    line = TAG.sub(lambda m: "" if m.group(1).lower() in HTML_TAGS else m.group(0), line)
    return line


def to_plain_markdown(desc):
    """Turns an answer's Markdown into the plain Markdown stored in qa.json."""
    desc = COMMENT.sub("", desc)
    out = []
    fence = None
    for line in desc.split("\n"):
        line = line.rstrip()
        stripped = line.lstrip()
        if fence:
            out.append(line)
            if stripped.startswith(fence):
                fence = None
            continue
        if stripped.startswith("```") or stripped.startswith("~~~"):
            fence = stripped[:3]
            out.append(line)
            continue
        if line.startswith("    ") or line.startswith("\t"):
            # Indented code block line (the answers only indent code, never
            # nested list items, in the topics taken).
            out.append(line)
            continue
        converted = convert_inline(line).rstrip()
        if line.strip() and not converted.strip():
            continue  # the line held only an image or a tag: drop it
        out.append(converted)
    text = "\n".join(out).strip("\n")
    text = re.sub(r"\n{3,}", "\n\n", text)  # collapse runs of blank lines
    return text


def truncate(text, limit):
    """Cuts at the last paragraph boundary that keeps the text within limit."""
    if len(text) <= limit:
        return text, False
    paras = text.split("\n\n")
    kept = []
    for p in paras:
        if len("\n\n".join(kept + [p])) > limit:
            break
        kept.append(p)
    return "\n\n".join(kept), True


def only_links(desc):
    """True when the answer has no words outside its links."""
    rest = LINK.sub("", desc)
    rest = AUTOLINK.sub("", rest)
    return not re.search(r"[A-Za-z0-9]", rest)


def build(repo, commit):
    pairs, skipped, truncated = [], [], []
    for topic in TOPICS:
        default_model = child_model(repo, commit, topic)
        names = git(repo, "ls-tree", "-r", "--name-only", commit, f"content/{topic}").split("\n")
        for path in sorted(n for n in names if n.endswith("/contents.lr")):
            parts = path.split("/")
            if len(parts) != 4:
                continue  # the topic's own contents.lr
            pid = f"{parts[1]}/{parts[2]}"
            fields = parse_lektor(git(repo, "show", f"{commit}:{path}"))
            model = fields.get("_model", "").strip() or default_model
            if model != "question":
                skipped.append((pid, f"model {model!r}"))
                continue
            if pid in SKIP:
                skipped.append((pid, SKIP[pid]))
                continue
            title = fields.get("title", "").strip()
            desc = fields.get("description", "")
            if not title:
                skipped.append((pid, "no title"))
                continue
            if not desc.strip() or only_links(desc):
                skipped.append((pid, "description empty or only a link"))
                continue
            answer = to_plain_markdown(desc)
            answer, cut = truncate(answer, MAX_ANSWER)
            if cut:
                truncated.append(pid)
            pairs.append({"id": pid, "question": title, "answer": answer})
    pairs.sort(key=lambda p: p["id"])
    ids = [p["id"] for p in pairs]
    assert len(ids) == len(set(ids)), "duplicate ids"
    return pairs, skipped, truncated


def main(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repo", default=DEFAULT_REPO)
    ap.add_argument("--commit", default=DEFAULT_COMMIT)
    ap.add_argument("--out", default=os.path.join(here, "qa.json"))
    args = ap.parse_args(argv[1:])
    pairs, skipped, truncated = build(args.repo, args.commit)
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump({"pairs": pairs}, f, ensure_ascii=False, indent=1)
        f.write("\n")
    for pid, why in skipped:
        print(f"skipped {pid}: {why}", file=sys.stderr)
    for pid in truncated:
        print(f"truncated {pid} to {MAX_ANSWER} characters", file=sys.stderr)
    size = sum(len(p["answer"]) for p in pairs)
    print(f"wrote {args.out}: {len(pairs)} pairs, {size} answer characters, "
          f"{len(skipped)} skipped, {len(truncated)} truncated")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
