"""Build the bundled default corpus from the Python documentation's reST sources.

This script is NOT imported at runtime; it documents (and reproduces) how
``roformer_lit/data/corpus/python_docs.txt.xz`` was made.

Source: Debian package ``python3.11-doc`` (bookworm, version 3.11.2-6+deb12u9), which
ships the Sphinx reST sources of the CPython documentation under
``/usr/share/doc/python3.11/html/_sources/*.rst.txt``. The documentation is
distributed under the PSF License Agreement (see ``corpus/LICENSE-PSF.txt``).

Only the prose-heavy sections are used: ``tutorial``, ``faq``, ``howto``, ``whatsnew``.
Processing (see :func:`rst_to_paragraphs`):

* code is dropped: ``::`` literal blocks, doctest blocks (``>>>``), and every directive
  (``.. code-block::``, ``.. testcode::``, ``.. index::`` ...) with its indented body,
  except admonitions (``note``, ``warning``, ...) whose body is prose and is kept;
* section titles, transitions, tables, comments, link targets, footnotes and field
  lists are dropped;
* inline markup is reduced to its text (``:func:`~os.path.join``` -> ``join``,
  ```text <url>`_`` -> ``text``, ````literal```` -> ``literal``, ``*emph*`` -> ``emph``);
* each paragraph / list item becomes one line; lines that do not look like English
  prose (fewer than 6 words, or under 70 % alphabetic words, or code-like) are dropped.

Usage (as root on a Debian bookworm machine, or with the .deb already downloaded)::

    apt-get update && apt-get download python3.11-doc
    dpkg-deb -x python3.11-doc_*.deb /tmp/pydoc
    python -m roformer_lit.data.build_corpus \\
        /tmp/pydoc/usr/share/doc/python3.11/html/_sources \\
        roformer_lit/data/corpus/python_docs.txt.xz --tokenizer

``--tokenizer`` also trains the default WordPiece tokenizer (vocab 8192, on the default
training split) and stores it as ``corpus/wordpiece-v8192-<key>.json.xz``, because HF
tokenizers' WordPiece training is not deterministic across processes.
"""

from __future__ import annotations

import argparse
import lzma
import re
from pathlib import Path

SECTIONS: tuple[str, ...] = ("tutorial", "faq", "howto", "whatsnew")
DEFAULT_VOCAB_SIZE = 8192  # CorpusDataModule defaults, for the bundled pre-trained tokenizer
DEFAULT_VAL_FRACTION = 0.05

# Directives whose indented body is English prose: keep the body, drop the directive line.
KEEP_BODY = {
    "note",
    "warning",
    "tip",
    "important",
    "attention",
    "caution",
    "hint",
    "danger",
    "error",
    "admonition",
    "impl-detail",
    "versionadded",
    "versionchanged",
    "deprecated",
    "topic",
    "sidebar",
    "epigraph",
    "only",
}

_DIRECTIVE = re.compile(r"^(\s*)\.\.(\s+([\w:-]+)::(.*))?")
_BULLET = re.compile(r"^(\s*)([-*+\u2022]|#\.|\d+\.|\(?[a-z]\)|\d+\))\s+(.*)$")
_SEPARATOR = re.compile(r"^\s*([=\-~^\"'`*+#_:.<>])\1{2,}\s*$")
_TABLE_LINE = re.compile(r"^\s*(\+[-=+]+\+?|\|.*|[=\- ]{5,})\s*$")
_FIELD = re.compile(r"^\s*:[\w -]+:(\s|$)")

_ROLE = re.compile(r":([\w:+-]+):`([^`]*)`")
_ROLE_PREFIX = {"pep": "PEP ", "rfc": "RFC ", "issue": "bpo-", "gh": "gh-"}
_LINK = re.compile(r"`([^`<]*?)\s*<[^`>]*>`__?")
_REF = re.compile(r"`([^`]+)`__?")
_LITERAL = re.compile(r"``(.+?)``")
_STRONG = re.compile(r"\*\*(.+?)\*\*")
_EMPH = re.compile(r"(?<![\w*])\*(\S(?:.*?\S)?)\*(?![\w*])")
_FOOTREF = re.compile(r"\s*\[(#\w*|\d+|\*)\]_")
_SUBST = re.compile(r"\|(\w[\w -]*)\|_?")
_WORD_LINK = re.compile(r"(?<!\w)([A-Za-z0-9]\w*?[A-Za-z0-9])__?(?=[\s.,;:)]|$)")
_ALPHA_WORD = re.compile(r"^[(\"']*[A-Za-z][A-Za-z'\u2019-]*[)\"'.,;:!?]*$")
_CODE_HINTS = (">>>", "def ", "import ", "print(", "==", "();", "{}", "self.", "</")


def _role_text(role: str, content: str) -> str:
    """Text shown for a role's content: ``title <target>`` -> title, ``~a.b`` -> b."""
    if role in _ROLE_PREFIX and content.isdigit():
        return _ROLE_PREFIX[role] + content
    m = re.match(r"^(.*?)\s*<[^>]*>$", content, flags=re.S)
    if m and m.group(1):
        return m.group(1)
    content = content.lstrip("!")
    if content.startswith("~"):
        content = content[1:].rsplit(".", 1)[-1]
    return content


def clean_inline(text: str) -> str:
    """Reduce reST inline markup to plain text and normalize whitespace."""
    text = _ROLE.sub(lambda m: _role_text(m.group(1), m.group(2)), text)
    text = _LINK.sub(lambda m: m.group(1), text)
    text = _LITERAL.sub(lambda m: m.group(1), text)
    text = _REF.sub(lambda m: m.group(1), text)
    text = _STRONG.sub(lambda m: m.group(1), text)
    text = _EMPH.sub(lambda m: m.group(1), text)
    text = _FOOTREF.sub("", text)
    text = _SUBST.sub(lambda m: m.group(1), text)
    text = _WORD_LINK.sub(lambda m: m.group(1), text)
    text = text.replace("\\", "")
    return re.sub(r"\s+", " ", text).strip()


def looks_like_prose(line: str) -> bool:
    """Heuristic English-prose filter for one cleaned paragraph."""
    words = line.split()
    if len(words) < 6:
        return False
    if any(h in line for h in _CODE_HINTS):
        return False
    alpha = sum(1 for w in words if _ALPHA_WORD.match(w))
    return alpha / len(words) >= 0.7


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def rst_to_paragraphs(text: str) -> list[str]:
    """Convert one reST document to a list of plain-text prose paragraphs."""
    lines = text.expandtabs(8).splitlines()
    out: list[str] = []
    cur: list[str] = []
    cur_indent = 0
    skip_deeper_than: int | None = None  # skip blank lines and lines indented more than this
    skip_paragraph = False  # skip until the next blank line (doctest block)

    def flush() -> None:
        nonlocal cur, skip_deeper_than
        if cur:
            last = cur[-1].rstrip()
            if last.endswith("::"):
                # A literal block follows: drop it (everything indented deeper).
                skip_deeper_than = cur_indent
                if last == "::" or last.endswith(" ::"):
                    cur[-1] = last[:-2].rstrip()
                else:
                    cur[-1] = last[:-1]
            para = clean_inline(" ".join(cur))
            if para:
                out.append(para)
        cur = []

    for line in lines:
        stripped = line.strip()
        if skip_deeper_than is not None:
            if not stripped or _indent(line) > skip_deeper_than:
                continue
            skip_deeper_than = None
        if not stripped:
            flush()
            skip_paragraph = False
            continue
        if skip_paragraph:
            continue
        if stripped.startswith(">>>"):
            flush()
            skip_paragraph = True
            continue
        m = _DIRECTIVE.match(line)
        if m and (stripped == ".." or stripped.startswith(".. ")):
            flush()
            name = m.group(3)
            if name is not None and name in KEEP_BODY:
                arg = (m.group(4) or "").strip()
                if arg and name not in {"versionadded", "versionchanged", "deprecated", "only"}:
                    cur, cur_indent = [arg], _indent(line)
                continue  # the indented body is processed as ordinary text
            skip_deeper_than = _indent(line)  # comment, target or directive: drop its body
            continue
        if _SEPARATOR.match(line):
            if len(cur) == 1:  # the line before was a section title
                cur = []
            else:
                flush()
            continue
        if _TABLE_LINE.match(line) or _FIELD.match(line):
            flush()
            skip_paragraph = True
            continue
        b = _BULLET.match(line)
        if b:
            flush()
            cur, cur_indent = [b.group(3)], _indent(line)
            continue
        if not cur:
            cur_indent = _indent(line)
        cur.append(stripped)
    flush()
    return [p for p in out if looks_like_prose(p)]


def build(sources: Path, sections: tuple[str, ...] = SECTIONS) -> tuple[list[str], list[str]]:
    """Return (paragraphs, relative file names used) for the given doc sections."""
    paragraphs: list[str] = []
    used: list[str] = []
    for section in sections:
        for path in sorted((sources / section).glob("*.rst.txt")):
            paras = rst_to_paragraphs(path.read_text(encoding="utf-8"))
            if paras:
                used.append(f"{section}/{path.name}")
                paragraphs.extend(paras)
    return paragraphs, used


def main(argv: list[str] | None = None) -> None:
    """CLI entry point: ``python -m roformer_lit.data.build_corpus SOURCES OUT.txt.xz``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sources", type=Path, help="the html/_sources directory")
    parser.add_argument("out", type=Path, help="output .txt.xz file")
    parser.add_argument("--list-files", action="store_true", help="print the files used")
    parser.add_argument(
        "--tokenizer",
        action="store_true",
        help="also (re)train the default tokenizer next to OUT (needs OUT in the package dir)",
    )
    args = parser.parse_args(argv)
    paragraphs, used = build(args.sources)
    data = ("\n".join(paragraphs) + "\n").encode("utf-8")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with lzma.open(args.out, "wb", preset=9 | lzma.PRESET_EXTREME) as f:
        f.write(data)
    print(
        f"{len(used)} files, {len(paragraphs)} paragraphs, {len(data)} bytes raw, "
        f"{args.out.stat().st_size} bytes compressed -> {args.out}"
    )
    if args.list_files:
        print("\n".join(used))
    if args.tokenizer:
        print(f"default tokenizer -> {bundle_default_tokenizer(args.out.parent)}")


def bundle_default_tokenizer(corpus_dir: Path) -> Path:
    """Train the default tokenizer on the bundled corpus and store it xz-compressed.

    Training in HF ``tokenizers`` is not deterministic across processes, so shipping the
    tokenizer makes the default configuration reproducible on every machine. The file is
    named like a cache entry (see ``roformer_lit.data.tokenizer.cache_file_name``) and is
    found by ``load_or_train_tokenizer`` on a cache miss.
    """
    from roformer_lit.data.corpus import load_default_corpus, split_train_val
    from roformer_lit.data.tokenizer import cache_file_name, train_tokenizer

    train_docs, _ = split_train_val(load_default_corpus(), DEFAULT_VAL_FRACTION)
    out = corpus_dir / f"{cache_file_name(train_docs, DEFAULT_VOCAB_SIZE)}.xz"
    for old in corpus_dir.glob("wordpiece-*.json.xz"):
        old.unlink()
    tok = train_tokenizer(train_docs, DEFAULT_VOCAB_SIZE)
    out.write_bytes(lzma.compress(tok.to_str().encode("utf-8"), preset=9 | lzma.PRESET_EXTREME))
    return out


if __name__ == "__main__":
    main()
