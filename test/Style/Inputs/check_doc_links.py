#!/usr/bin/env python3
"""Checks the links of README.md and docs/**/*.md: every relative link names a file or folder
inside the repository, and every #anchor names a heading of the page it points to (GitHub's
anchors). Prints one line per broken link and a summary; exits 1 if any is broken.

Usage: check_doc_links.py REPO_ROOT
"""

import os
import re
import sys

LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def strip_code(text, spans=True):
    """The text with fenced code blocks, and inline code spans if `spans`, blanked (same line
    count)."""
    out, fence = [], None
    for line in text.split("\n"):
        m = re.match(r"^\s*(```+|~~~+)", line)
        if fence:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = None
            out.append("")
            continue
        if m:
            fence = m.group(1)
            out.append("")
            continue
        out.append(re.sub(r"(`+)(?:(?!\1).)+?\1", "``", line) if spans else line)
    return out


def slug(heading):
    """GitHub's anchor for a heading's text."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # links: their text
    text = text.replace("`", "")
    text = re.sub(r"<[^>]+>", "", text)
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path, cache={}):
    if path not in cache:
        found, seen = set(), {}
        with open(path, encoding="utf-8") as f:
            for line in strip_code(f.read(), spans=False):
                m = re.match(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$", line)
                if not m:
                    continue
                base = slug(m.group(2))
                n = seen.get(base, 0)
                seen[base] = n + 1
                found.add(base if n == 0 else "%s-%d" % (base, n))
        cache[path] = found
    return cache[path]


def main():
    root = os.path.realpath(sys.argv[1])
    pages = [os.path.join(root, "README.md")]
    for folder, _, files in os.walk(os.path.join(root, "docs")):
        pages += [os.path.join(folder, f) for f in sorted(files) if f.endswith(".md")]
    links = broken = 0
    for page in sorted(pages):
        rel = os.path.relpath(page, root)
        with open(page, encoding="utf-8") as f:
            text = f.read()
        for number, line in enumerate(strip_code(text), 1):
            if "../shared/" in line:
                print("%s:%d: broken: '../shared/' is outside the repository" % (rel, number))
                broken += 1
            for m in LINK.finditer(line):
                target = m.group(1)
                if SCHEME.match(target):
                    continue
                links += 1
                name, _, anchor = target.partition("#")
                dest = os.path.realpath(os.path.join(os.path.dirname(page), name)) if name else page
                problem = None
                if os.path.commonpath([root, dest]) != root:
                    problem = "leaves the repository"
                elif not os.path.exists(dest):
                    problem = "no such file"
                elif anchor and not dest.endswith(".md"):
                    problem = "an anchor into a file that is not Markdown"
                elif anchor and anchor.lower() not in anchors(dest):
                    problem = "no heading with that anchor"
                if problem:
                    print("%s:%d: broken: '%s': %s" % (rel, number, target, problem))
                    broken += 1
    print("docs-links: %d files, %d links, %d broken" % (len(pages), links, broken))
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
