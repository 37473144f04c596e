"""Collecting the notebooks downloaded from an LMS into nbgrader's layout.

    python -m attnlab.grading collect COURSE ASSIGNMENT SOURCE [--map CSV]
                                            [--roster CSV] [--report FILE]

(or ``python -m attnlab.collect COURSE ASSIGNMENT SOURCE ...``). ``SOURCE`` is a
folder or a ``.zip`` of the submissions as the LMS downloads them; each notebook
is placed at ``COURSE/submitted/<student>/<ASSIGNMENT>/<ASSIGNMENT>.ipynb``. The
names accepted:

- Canvas (*Download Submissions*): ``<lastfirst>_<userid>_<submissionid>_<file>``,
  with ``_late_`` (or ``_LATE_``) after the name for a late submission
  (``smithana_late_1234_5678_05_luong_attention.ipynb``); Canvas adds ``-1``,
  ``-2``... to a file name handed in again. The student is the Canvas user id.
- Moodle (*Download all submissions*): a folder per student,
  ``<Full Name>_<id>_assignsubmission_file_/<file>``, or flat files
  ``<Full Name>_<id>_assignsubmission_file_<file>``. Moodle's id is the
  participant's number in that one assignment, so the student is the full name in
  lower case, ASCII letters and digits joined by ``-`` (``ana-maria-lopez``). Two
  participants of one download with the same name are never merged: each gets its
  participant number appended (``ana-maria-lopez-203``), and the report says so;
  give them their ids with ``--map``. With ``--roster CSV`` (columns
  ``student,name``: the id you grade by and the full name as the LMS shows it) a
  Moodle name is replaced by the roster's id, the same in every assignment.
- Any name, with ``--map CSV``: columns ``file,student``, ``file`` being the path
  inside ``SOURCE`` or, where that is unique, the file's name. The map decides for
  the files it names; the others are matched by their LMS names.

Nothing is dropped silently: a file that is not an ``.ipynb``, a name that matches
none of the forms above, and the other files of a student who handed in several
(the one kept is the one named ``<ASSIGNMENT>.ipynb``, else the later submission,
else the one modified last, else the first by name; the report says why) are
printed and written to the report (default
``COURSE/collect-<ASSIGNMENT>-<date and time>.csv``, one per run, columns
``file,student,outcome,detail``).
"""

from __future__ import annotations

import argparse
import csv
import os
import re
import stat
import unicodedata
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

CANVAS = re.compile(
    r"^(?P<name>[^_/]+?)(?P<late>_(?i:late))?_(?P<user>\d+)_(?P<submission>\d+)_"
    r"(?P<file>[^/]+)$"
)
MOODLE = re.compile(
    r"(?:^|/)(?P<name>[^/]+?)_(?P<id>\d+)_assignsubmission_file_/?(?P<file>.+)$"
)
PLACED, NOT_PLACED = "placed", "not placed"


@dataclass
class Found:
    """One file of ``SOURCE``: its path inside it, its bytes' reader and what its
    name says."""

    path: str
    modified: tuple
    read: Callable[[], bytes]
    student: str = ""
    submission: int = 0
    participant: str = ""  # Moodle's participant number, where the name is Moodle's
    detail: str = ""
    refused: str = ""  # why it is not read at all (a link), if it is not


@dataclass
class Outcome:
    """One row of the report."""

    file: str
    student: str
    outcome: str
    detail: str


def moodle_student(full_name: str) -> str:
    """A student id from a Moodle full name: ASCII lower case, words joined by
    ``-``."""
    ascii_name = (
        unicodedata.normalize("NFKD", full_name).encode("ascii", "ignore").decode()
    )
    return "-".join(re.findall(r"[a-z0-9]+", ascii_name.lower()))


LINK = "a link or a special file, not a plain file: refused, nothing read through it"


def plain_file(info: os.stat_result) -> bool:
    """A plain file: not a link, not a special file, no other hard link."""
    return stat.S_ISREG(info.st_mode) and info.st_nlink == 1


def _zipped_plain(info: zipfile.ZipInfo) -> bool:
    """A member of a zip that is a plain file: its Unix file type (where the zip
    records one) is a regular file's, not a link's."""
    kind = stat.S_IFMT(info.external_attr >> 16)
    return kind in (0, stat.S_IFREG)


def _files(source: Path) -> list[Found]:
    """Every file of the folder or ``.zip`` ``source``, by path inside it. A link
    (symbolic or hard) or a special file is kept as refused (:data:`LINK`): never
    read, never followed into."""
    if source.is_dir() and not source.is_symlink():
        found = []
        for top, folders, files in os.walk(source, followlinks=False):
            for name in sorted([*folders, *files]):
                path = Path(top) / name
                info = path.lstat()
                if stat.S_ISDIR(info.st_mode):
                    continue
                found.append(
                    Found(
                        path.relative_to(source).as_posix(),
                        (info.st_mtime,),
                        path.read_bytes,
                        refused="" if plain_file(info) else LINK,
                    )
                )
        return sorted(found, key=lambda f: f.path)
    if source.is_file() and not source.is_symlink() and zipfile.is_zipfile(source):
        archive = zipfile.ZipFile(source)
        return [
            Found(
                info.filename,
                info.date_time,
                lambda name=info.filename: archive.read(name),
                refused="" if _zipped_plain(info) else LINK,
            )
            for info in sorted(archive.infolist(), key=lambda i: i.filename)
            if not info.is_dir()
        ]
    raise SystemExit(f"SOURCE must be a folder or a .zip file, got {source}")


def _rows(
    path: Path, columns: tuple[str, ...]
) -> Iterator[tuple[int, dict[str, str], dict[str, str | None]]]:
    """The rows of a CSV that must have ``columns``: each row's line number, its
    ``columns`` stripped, and the row as read (for messages)."""
    with open(path, newline="", encoding="utf-8-sig") as file:
        reader = csv.DictReader(file)
        if not set(columns) <= set(reader.fieldnames or []):
            raise SystemExit(
                f"{path}: expected the columns {','.join(columns)}, got"
                f" {','.join(reader.fieldnames or []) or 'none'}"
            )
        for number, row in enumerate(reader, start=2):
            yield number, {c: (row[c] or "").strip() for c in columns}, row


def _folder_name(student: str) -> bool:
    """Whether ``student`` can name a student's folder."""
    return bool(student) and "/" not in student and not student.startswith(".")


def read_map(path: Path) -> dict[str, str]:
    """The ``file,student`` rows of a map CSV, as {file: student}."""
    mapping = {}
    for number, value, row in _rows(path, ("file", "student")):
        if not value["file"]:
            raise SystemExit(
                f"{path}, line {number}: expected a file name, got none"
            )
        if not _folder_name(value["student"]):
            raise SystemExit(
                f"{path}, line {number}: expected a student id (a folder name),"
                f" got {row['student']!r}"
            )
        mapping[value["file"]] = value["student"]
    return mapping


def read_roster_names(path: Path) -> dict[str, str | None]:
    """The ``student,name`` rows of a roster CSV, as {Moodle id of the name:
    student}; a name that two students share maps to None (give those a --map)."""
    ids: dict[str, str | None] = {}
    for number, value, row in _rows(path, ("student", "name")):
        student, name = value["student"], value["name"]
        if not _folder_name(student) or not name:
            raise SystemExit(
                f"{path}, line {number}: expected a student id (a folder name)"
                f" and a name, got {row['student']!r} and {row['name']!r}"
            )
        key = moodle_student(name)
        ids[key] = None if key in ids and ids[key] != student else student
    return ids


def _identify(
    found: Found,
    mapping: dict[str, str],
    names: dict[str, int],
    roster: dict[str, str | None],
) -> str:
    """Set ``found.student`` from the map, the LMS name or the roster's id for a
    Moodle name; returns why it could not be, or ''."""
    base = found.path.rsplit("/", 1)[-1]
    if found.path in mapping or (names[base] == 1 and base in mapping):
        found.student = mapping.get(found.path) or mapping[base]
        found.detail = "named in the map"
    elif match := MOODLE.search(found.path):
        found.student = moodle_student(match["name"])
        found.participant = match["id"]
        found.detail = f"Moodle: {match['name']}, participant {match['id']}"
        if roster.get(found.student):
            found.student = roster[found.student]
            found.detail += ", id from the roster"
        elif found.student in roster:
            found.detail += ", a name two students of the roster share (use --map)"
    elif match := CANVAS.match(base):
        found.student = match["user"]
        found.submission = int(match["submission"])
        found.detail = f"Canvas: {match['name']}, submission {match['submission']}"
        if match["late"]:
            found.detail += ", late"
    if not base.lower().endswith(".ipynb"):
        suffix = Path(base).suffix or "no extension"
        return f"not a notebook: expected a name ending in .ipynb, got {suffix}"
    if not found.student:
        return (
            "the name matches neither Canvas's <lastfirst>_<userid>_<submissionid>"
            "_<file> nor Moodle's <Full Name>_<id>_assignsubmission_file_<file>,"
            " and no --map names it"
        )
    return ""


def _why_kept(kept: Found, other: Found, assignment: str) -> str:
    """Why ``kept`` was placed rather than ``other``, another file of its
    student."""
    if _named_as(kept, assignment) != _named_as(other, assignment):
        return f"its name is the assignment's, {assignment}.ipynb"
    if kept.submission != other.submission:
        return f"the later submission ({kept.submission} after {other.submission})"
    if kept.modified != other.modified:
        return "modified later"
    return "first by name"


def _named_as(found: Found, assignment: str) -> bool:
    """Whether the file's original name is the assignment's notebook (Canvas's
    ``-1``, ``-2`` of a file handed in again allowed)."""
    name = found.path.rsplit("/", 1)[-1]
    return (
        re.search(rf"(^|_){re.escape(assignment)}(-\d+)?\.ipynb$", name) is not None
    )


def _separate_namesakes(by_student: dict[str, list[Found]]) -> None:
    """Split, in place, a Moodle name that several participants share: each keeps
    its files under the name with its participant number appended."""
    for student, files in list(by_student.items()):
        participants = {f.participant for f in files if f.participant}
        if len(participants) < 2:
            continue
        del by_student[student]
        for f in files:
            f.student = f"{student}-{f.participant}" if f.participant else student
            f.detail += (
                f"; {len(participants)} participants named so, kept apart by their"
                " numbers (map them to ids with --map)"
            )
            by_student.setdefault(f.student, []).append(f)


def collect(
    course: Path,
    assignment: str,
    source: Path,
    mapping: dict[str, str] | None = None,
    roster: dict[str, str | None] | None = None,
) -> list[Outcome]:
    """Place the notebooks of ``source`` (a folder or a ``.zip``) at
    ``course/submitted/<student>/<assignment>/<assignment>.ipynb``, Moodle names
    replaced by the ids of ``roster`` (:func:`read_roster_names`); returns an
    :class:`Outcome` per file, the files placed first."""
    if not course.is_dir():
        raise SystemExit(f"COURSE must be an nbgrader course folder, got {course}")
    mapping = mapping or {}
    found = _files(source)
    names: dict[str, int] = {}
    for f in found:
        base = f.path.rsplit("/", 1)[-1]
        names[base] = names.get(base, 0) + 1
    unmatched, by_student = [], {}
    for f in found:
        reason = f.refused or _identify(f, mapping, names, roster or {})
        if reason:
            unmatched.append(Outcome(f.path, f.student, NOT_PLACED, reason))
        else:
            by_student.setdefault(f.student, []).append(f)
    _separate_namesakes(by_student)
    placed = []
    for student, files in sorted(by_student.items()):
        files.sort(
            key=lambda f: (
                not _named_as(f, assignment),
                -f.submission,
                tuple(-x for x in f.modified),
                f.path,
            )
        )
        kept = files[0]
        target = course / "submitted" / student / assignment / f"{assignment}.ipynb"
        detail = kept.detail
        if target.exists() or target.is_symlink():
            detail += "; replaced the notebook collected before"
            target.unlink()  # a link left there is replaced, never written through
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(kept.read())
        placed.append(Outcome(kept.path, student, PLACED, detail))
        unmatched += [
            Outcome(
                other.path,
                student,
                NOT_PLACED,
                f"{student} handed in more than one notebook: kept {kept.path}"
                f" ({_why_kept(kept, other, assignment)})",
            )
            for other in files[1:]
        ]
    paths = {f.path for f in found} | {f.path.rsplit("/", 1)[-1] for f in found}
    unmatched += [
        Outcome(name, student, NOT_PLACED, "named in the map, not found in SOURCE")
        for name, student in mapping.items()
        if name not in paths
    ]
    return placed + unmatched


def _new_report(course: Path, assignment: str) -> Path:
    """A report path of its own for this run: the date and time, and a number if
    another run of the same second wrote one."""
    stem = f"collect-{assignment}-{datetime.now().strftime('%Y%m%d-%H%M%S')}"
    path, number = course / f"{stem}.csv", 1
    while path.exists():
        number += 1
        path = course / f"{stem}-{number}.csv"
    return path


def write_report(outcomes: list[Outcome], path: Path) -> None:
    """The report CSV: one row per file, with the columns
    ``file,student,outcome,detail``."""
    with open(path, "w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(["file", "student", "outcome", "detail"])
        writer.writerows((o.file, o.student, o.outcome, o.detail) for o in outcomes)


def main(
    argv: list[str] | None = None, prog: str = "python -m attnlab.collect"
) -> None:
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
    parser.add_argument("course", type=Path, help="the nbgrader course folder")
    parser.add_argument("assignment", help="the assignment (chapter)")
    parser.add_argument("source", type=Path, help="a folder or a .zip from the LMS")
    parser.add_argument(
        "--map", type=Path, default=None, help="a CSV with the columns file,student"
    )
    parser.add_argument(
        "--roster",
        type=Path,
        default=None,
        help="a CSV with the columns student,name: Moodle names become these ids",
    )
    parser.add_argument(
        "--report",
        type=Path,
        default=None,
        help="default: COURSE/collect-ASSIGNMENT-<date and time>.csv, one per run",
    )
    args = parser.parse_args(argv)
    mapping = read_map(args.map) if args.map else {}
    roster = read_roster_names(args.roster) if args.roster else None
    outcomes = collect(args.course, args.assignment, args.source, mapping, roster)
    report = args.report or _new_report(args.course, args.assignment)
    write_report(outcomes, report)
    for o in outcomes:
        if o.outcome == PLACED:
            print(f"{o.student:24} <- {o.file}  ({o.detail})")
    left = [o for o in outcomes if o.outcome == NOT_PLACED]
    for o in left:
        print(f"NOT PLACED {o.file}: {o.detail}")
    print(
        f"{len(outcomes) - len(left)} notebooks placed in {args.course}/submitted,"
        f" {len(left)} files not placed; report: {report}"
    )


if __name__ == "__main__":
    main()
