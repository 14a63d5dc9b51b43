"""Citations in the code point at Leela Zero's sources or at documents inside the repository.

CONTRIBUTING.md: cite the file a behaviour comes from (`src/UCTSearch.cpp`, `autogtp/`, ...)
or a document in this repository, never a file beside the checkout. This test reads every text
file under leelaz/, tests/, scripts/ and kernels/ and fails on:
- a citation of the notes that live outside the repository (`../shared/docs`, the old
  "reference §N" / "reference doc N" numbering, the notes' file names);
- a `docs/NAME.md` path (or a bare `NAME.md §N`) that names no file in the repository;
- a `docs/NAME.md §N` whose section N is not a numbered heading of that file.
`../shared/data` (the 9-dan game collection, data rather than a citation) stays allowed.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCANNED = ("leelaz", "tests", "scripts", "kernels")
SUFFIXES = {".py", ".cl", ".js", ".sh", ".md", ".txt", ".toml", ".cfg"}
SKIPPED_PARTS = {"__pycache__", "node_modules", "fixtures"}
#: This file spells the forbidden forms out in its patterns.
THIS_FILE = Path(__file__).resolve()

#: Documents other branches add: they exist once those branches are merged. Remove an entry
#: when its file is in docs/; the allowance is for the merge, not a permanent exception.
EXPECTED_AFTER_MERGE: set[str] = set()  # docs a branch cites before they land: none now

FORBIDDEN = [
    (re.compile(r"shared/docs"), "the notes beside the checkout"),
    (re.compile(r"\.\./shared/(?!data\b)"), "a path beside the checkout other than its data"),
    (re.compile(r"reference\s+§|reference\s+(?:doc|notes)\s*,?\s*(?:\(?§|\d|section)"),
     "the old reference notes' numbering"),
    (re.compile(r"\(doc \d+(?:\.\d+)?[,)]"), "the old reference notes' numbering"),
    (re.compile(r"lz-0\.17-reference|zero-loop\.md|clients\.md|learning\.md|style\.md"
                r"|reference-on-gpu\.md|style item \d"), "a note that is not in the repository"),
]
DOC_PATH = re.compile(r"(?<![\w/.-])((?:\.\./)*docs/[\w.-]+\.md)")
BARE_DOC_SECTION = re.compile(r"(?<![\w/.-])([\w-]+\.md)\s*§")
SECTION = re.compile(r"§(\d+(?:\.\d+)?)")


def _cited_sections(line: str) -> list[tuple[str, list[str]]]:
    """(docs/NAME.md, the §N cited right after it, up to the closing parenthesis)."""
    out = []
    for m in re.finditer(r"(?<![\w/.-])(docs/[\w.-]+\.md)", line):
        tail = re.split(r"[)]|docs/", line[m.end():], maxsplit=1)[0]
        out.append((m.group(1), SECTION.findall(tail)))
    return out


def _files():
    for top in SCANNED:
        for path in sorted((ROOT / top).rglob("*")):
            if (path.is_file() and path.suffix in SUFFIXES and path.resolve() != THIS_FILE
                    and not SKIPPED_PARTS & set(path.relative_to(ROOT).parts)):
                yield path


def _lines():
    for path in _files():
        rel = path.relative_to(ROOT).as_posix()
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            yield rel, number, line


def _exists(doc: str) -> bool:
    return (ROOT / doc).is_file() or doc in EXPECTED_AFTER_MERGE


def _headings(doc: str) -> set[str]:
    """Section numbers of a document's numbered headings (`## 3. X` -> 3, `### 3.1 X` -> 3.1)."""
    text = (ROOT / doc).read_text()
    return {m.group(1) for m in re.finditer(r"^#+\s+(\d+(?:\.\d+)?)\.?\s", text, re.M)}


def test_nothing_cites_notes_outside_the_repository():
    found = [f"{rel}:{number}: {why}: {line.strip()}"
             for rel, number, line in _lines()
             for pattern, why in FORBIDDEN if pattern.search(line)]
    assert not found, "\n".join(found)


def test_every_cited_document_is_in_the_repository():
    missing = []
    for rel, number, line in _lines():
        base = (ROOT / rel).parent
        for doc in DOC_PATH.findall(line):
            target = (base / doc).resolve() if doc.startswith("..") else ROOT / doc
            name = target.relative_to(ROOT).as_posix() if ROOT in target.parents else doc
            if not _exists(name):
                missing.append(f"{rel}:{number}: {doc}")
        for name in BARE_DOC_SECTION.findall(line):
            if not (_exists(f"docs/{name}") or (ROOT / name).is_file()):
                missing.append(f"{rel}:{number}: {name}")
    assert not missing, "cited but not in the repository:\n" + "\n".join(missing)


def test_cited_sections_exist():
    wrong = []
    for rel, number, line in _lines():
        for doc, sections in _cited_sections(line):
            if not (ROOT / doc).is_file():
                continue  # the test above reports it
            have = _headings(doc)
            wrong += [f"{rel}:{number}: {doc} §{s}" for s in sections if s not in have]
    assert not wrong, "sections cited but not in the document:\n" + "\n".join(wrong)


def test_the_checks_see_what_they_should():
    """The patterns catch the forms they are for and let the allowed ones through."""
    bad = ["(shared/docs/zero-loop.md §1.3)", "(reference §5)", "(reference doc 4.3)",
           "(reference notes 4.6)", "see the reference notes, section 2", "clients.md §1.6",
           "../shared/docs/x", "(style item 10)",
           "(doc 3.9)", "(doc 3.9, 4)"]
    good = ["../shared/data/tygem-9d", "(src/Training.cpp)", "(Network::gather_features)",
            "the reference binary", "an independent reference for the NumPy backend"]
    assert all(any(p.search(s) for p, _ in FORBIDDEN) for s in bad)
    assert not any(p.search(s) for s in good for p, _ in FORBIDDEN)
    assert DOC_PATH.findall("see docs/dynamic-komi.md §3 and [x](../docs/log.md)") == [
        "docs/dynamic-komi.md", "../docs/log.md"]
    assert BARE_DOC_SECTION.findall("(dynamic-komi.md §5)") == ["dynamic-komi.md"]
    assert _cited_sections("(docs/dynamic-komi.md §3.1-3.3, §3.7, §4), §8") == [
        ("docs/dynamic-komi.md", ["3.1", "3.7", "4"])]
    assert {"1", "2.1", "3.3", "9"} <= _headings("docs/dynamic-komi.md")
