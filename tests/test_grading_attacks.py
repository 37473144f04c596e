"""Submissions that attack the grader, graded as root and as an ordinary user (uid 65534), serially and with
two workers: none gains a point it did not earn, none harms another submission, the course or the package.

The chapter is chapter 1 cut after its second code exercise (tests/test_class_grading.py), whose answers are
functions. The attacks, each written as a student's cell:

- forgers: the untouched students' notebook (honest score 0) with a cell, at its end or before the answers,
  that connects to the grader's socket (its path is in the kernel's environment) and hands every check the
  worked answers as its own functions;
- a leaker (no points: it names the grader's socket): the worked answers, and a cell that reads the sandbox's first process's environment
  (/proc/1/environ), writes rows to its standard output and error (the grader's, if they were shared), fills the
  folder of the grader's socket and plants a file there for the next student, remounts the read-only package
  writable, and starts a process and a program; a looker, graded after it, lists that folder;
- a delegator: the first answer computed by a child process that runs the worked answer;
- a looper: the first answer loops inside ``try/except BaseException``, so that no interrupt stops it;
- a paster: the worked answers with a check cell copied and pasted (its grade id twice);
- linkers: a submission that is a symbolic or a hard link to the course's source notebook (the worked answers),
  a chapter folder that is a link to the source folder, and an honest submission beside a link to the gradebook.

The weekly workflow (grading.yml) runs the four ways to grade; .ci/run runs root serially and an ordinary user
with two workers (ATTNLAB_ATTACK_MATRIX=full for all four).
"""

import csv
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat
import pytest

import attnlab
from attnlab.teaching.grading import GRADED, UNGRADABLE, grade
from attnlab.teaching.release import (
    check_call_nodes,
    exercises,
    solution_code,
    student_version,
)
from attnlab.teaching.verdicts import OUTSIDE
from tests.test_class_grading import (  # noqa: F401 - released_course: a fixture
    CHAPTERS,
    cut,
    gradebook_scores,
    released_course,
    submit,
)

ROOT = Path(__file__).resolve().parents[1]
CHAPTER = CHAPTERS[0]
TIMEOUT = 20
MARKER = "attnlab-grader-secret-7f3a"  # in the grading process's environment only
NOBODY = 65534

FORGE = """\
# the grader's socket is in this kernel's environment: speak for every check cell
from attnlab.teaching.channel import serve
mine = {{}}
exec({answers!r}, mine)
for cell, calls in {calls!r}:
    try:
        serve(cell, [(name, tuple(eval(a, mine) for a in args), {{}}) for name, args in calls])
        print("forged", cell, "accepted")
    except BaseException as error:
        print("forged", cell, "refused:", type(error).__name__)
"""

LEAK = """\
import ctypes, os, subprocess, sys
import attnlab
print("environ of 1:", open("/proc/1/environ", "rb").read().replace(b"\\0", b" ").decode())
print("my environ:", sorted(os.environ))
os.write(1, b"ana  01_context_sensitive_memory  graded  5  FAKE ROW\\n")
os.write(2, b"FAKE ROW ON THE GRADER'S ERRORS\\n")
folder = os.path.dirname(os.environ["ATTNLAB_GRADER_SOCKET"])
for name, action in [
    ("plant", lambda: open(os.path.join(folder, "planted"), "w").write("x")),
    ("fill", lambda: open(os.path.join(folder, "filler"), "wb").write(bytes(2**24))),
    ("remount", lambda: ctypes.CDLL(None).mount(None, os.path.dirname(attnlab.__file__).encode(),
                                                 None, 0x20 | 0x1000, None) == 0 or 1 / 0),
    ("write package", lambda: open(attnlab.__file__, "a").write("# planted")),
    ("program", lambda: subprocess.run(["true"])),
    ("process", lambda: os.fork() == 0 and os._exit(0)),
]:
    try:
        action()
        print(name, "succeeded")
    except BaseException as error:
        print(name, "failed:", type(error).__name__)
"""

LOOK = """\
import os
print("the socket folder holds:", sorted(os.listdir(os.path.dirname(os.environ["ATTNLAB_GRADER_SOCKET"]))))
"""

DELEGATE = """\
import json, subprocess, sys
import torch

def {name}(query, keys, values):
    # a child process computes the answer with the worked code
    code = {answer!r} + "\\nimport json, sys, torch\\n"
    code += "q, k, v = (torch.tensor(x) for x in json.loads(sys.stdin.read()))\\n"
    code += "r, w = {name}(q, k, v)\\nprint(json.dumps([r.tolist(), w.tolist()]))"
    data = json.dumps([query.tolist(), keys.tolist(), values.tolist()])
    out = subprocess.run([sys.executable, "-c", code], input=data, capture_output=True,
                         text=True, check=True).stdout
    result, weights = json.loads(out)
    return torch.tensor(result), torch.tensor(weights)
"""

LOOP = """\
def {name}(*args, **kwargs):
    while True:
        try:
            sum(range(10**6))
        except BaseException:
            pass
"""


def tree_digest(folder: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        digest.update(str(path.relative_to(folder)).encode() + path.read_bytes())
    return digest.hexdigest()


def solution() -> nbformat.NotebookNode:
    return cut(nbformat.read(ROOT / "notebooks" / f"{CHAPTER}.ipynb", as_version=4))


def hostile_class(course: Path) -> dict[str, float]:
    """Write every submission into ``course``; returns each graded student's expected total."""
    worked = solution()
    code = [e for e in exercises(worked) if e.kind == "code"]
    full = sum(e.points for e in code)
    first = code[0]
    untouched = student_version(worked)
    solved = nbformat.from_dict(json.loads(json.dumps(untouched)))
    answers = "\n\n".join(solution_code(worked.cells[e.answer].source) for e in code)
    imports = worked.cells[next(i for i, c in enumerate(worked.cells) if c.cell_type == "code") + 1].source
    for e in code:
        solved.cells[e.answer].source = solution_code(worked.cells[e.answer].source)
    calls = [
        (f"{e.label}-check",
         [(node.func.id, [ast_source(a) for a in node.args]) for node in check_call_nodes(worked.cells[e.check].source)])
        for e in code
    ]
    forge = FORGE.format(answers=imports + "\n\n" + answers, calls=calls)

    def with_cell(nb, source, at=None):
        nb = nbformat.from_dict(json.loads(json.dumps(nb)))
        cell = nbformat.v4.new_code_cell(source)
        if nb.nbformat_minor < 5:
            del cell["id"]
        nb.cells.insert(len(nb.cells) if at is None else at, cell)
        return nb

    name = first_function(worked.cells[first.answer].source)
    delegator = with_cell(solved, "")
    delegator.cells.pop()
    delegator.cells[first.answer].source = DELEGATE.format(
        name=name, answer=imports + "\n\n" + solution_code(worked.cells[first.answer].source))
    looper = with_cell(solved, "")
    looper.cells.pop()
    looper.cells[first.answer].source = LOOP.format(name=name)
    release = nbformat.read(course / "release" / CHAPTER / f"{CHAPTER}.ipynb", as_version=4)
    pasted = next(c for c in release.cells
                  if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == f"{code[1].label}-check")
    paster = with_cell(solved, pasted.source, at=code[1].check + 1)  # Jupyter's paste: right below
    paster.cells[code[1].check + 1].metadata = json.loads(json.dumps(pasted.metadata))
    students = {
        "ana": (solved, full),
        "bo": (untouched, 0.0),
        "forger-late": (with_cell(untouched, forge), 0.0),
        "forger-early": (with_cell(untouched, forge, at=first.answer), 0.0),
        # the worked answers, but a cell that names the grader's socket: no check earns points
        "leaker": (with_cell(solved, LEAK), 0.0),
        "looker": (with_cell(solved, LOOK), 0.0),
        "delegator": (delegator, full - first.points),
        "looper": (looper, full - first.points),
        "paster": (paster, full),
        "linker-data": (solved, None),
    }
    for student, (nb, _) in students.items():
        submit(course, CHAPTER, student, nb)
    source = course / "source" / CHAPTER / f"{CHAPTER}.ipynb"
    submitted = course / "submitted"
    (submitted / "linker-data" / CHAPTER / "gradebook.db").symlink_to(course / "gradebook.db")
    for student in ("linker-file", "linker-hard"):
        (submitted / student / CHAPTER).mkdir(parents=True)
    (submitted / "linker-file" / CHAPTER / f"{CHAPTER}.ipynb").symlink_to(source)
    (submitted / "linker-hard" / CHAPTER / f"{CHAPTER}.ipynb").hardlink_to(source)
    (submitted / "linker-folder").mkdir()
    (submitted / "linker-folder" / CHAPTER).symlink_to(source.parent)
    expected = {student: total for student, (_, total) in students.items()}
    expected.update({s: None for s in ("linker-file", "linker-hard", "linker-folder")})
    return expected


def ast_source(node) -> str:
    import ast

    return ast.unparse(node)


def first_function(source: str) -> str:
    import ast

    return next(n.name for n in ast.parse(solution_code(source)).body if isinstance(n, ast.FunctionDef))


def check(course: Path, rows: dict[str, dict], expected: dict[str, float | None], grader_output: str) -> None:
    """Every submission got what it earned, and nothing leaked or changed."""
    for student, total in expected.items():
        row = rows[student]
        if total is None:
            assert row["status"] == UNGRADABLE and row["reason"].startswith("refused:"), (student, row)
            assert not (course / "autograded" / student).exists(), student  # nothing read, nothing copied
            continue
        assert row["status"] == GRADED, (student, row["reason"])
        assert float(row["total"]) == total, (student, row)
    for student in ("forger-late", "forger-early"):
        assert OUTSIDE in rows[student]["reason"], rows[student]["reason"]
    for student in ("forger-late", "forger-early", "leaker", "looker"):
        assert "reaches for the grader" in rows[student]["reason"], rows[student]["reason"]
    assert "copies of graded cells" in rows["paster"]["reason"]
    assert "time-out" in rows["looper"]["reason"]
    leaked = (course / "autograded" / "leaker" / CHAPTER / f"{CHAPTER}.ipynb").read_text()
    assert MARKER not in leaked and "ATTNLAB_GRADER_SOCKET" in leaked  # the kernel's own environment
    for action in ("remount", "write package", "program", "process"):
        assert f"{action} failed" in leaked, action
    looked = (course / "autograded" / "looker" / CHAPTER / f"{CHAPTER}.ipynb").read_text()
    assert "the socket folder holds:" in looked and "planted" not in looked
    assert "FAKE ROW" not in grader_output


def survivors() -> list[str]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            text = (entry / "cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if "attnlab.teaching.confined" in text or "ipykernel" in text and "attnlab" in text:
            found.append(entry.name)
    return found


def as_nobody(argv: list[str]) -> list[str]:
    """``argv`` run as uid 65534 with this very Python. Where this Python or the repository lies below a folder
    that others may not enter (a Python under root's home), the command runs in a mount namespace of its own in
    which that folder is an empty one holding only what is needed, bound back to the same paths."""
    needed = {Path(p).resolve() for p in (sys.base_prefix, sys.prefix, ROOT)}
    closed = set()
    for path in needed:
        for folder in reversed(path.parents):  # the outermost first
            if folder != Path("/") and not os.stat(folder).st_mode & 0o001:
                closed.add(folder)
                break
    become = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--"]
    if not closed:
        return [*become, *argv]
    lines = ["set -e", "keep=$(mktemp -d)"]
    for number, path in enumerate(sorted(p for p in needed if any(p.is_relative_to(c) for c in closed))):
        lines += [f"mkdir -p $keep/{number}", f"mount --bind {path} $keep/{number}"]
    lines += [f"mount -t tmpfs -o mode=0755 tmpfs {folder}" for folder in sorted(closed)]
    for number, path in enumerate(sorted(p for p in needed if any(p.is_relative_to(c) for c in closed))):
        lines += [f"mkdir -p {path}", f"mount --bind $keep/{number} {path}"]
    lines.append('exec "$@"')
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", "\n".join(lines), "sh", *become, *argv]


MATRIX = [("root", 1), ("user", 2)]
if os.environ.get("ATTNLAB_ATTACK_MATRIX") == "full":
    MATRIX += [("root", 2), ("user", 1)]


@pytest.mark.parametrize(("who", "workers"), MATRIX, ids=[f"{w}-{n}-workers" for w, n in MATRIX])
def test_no_submission_gains_a_point_or_harms_another(released_course, who, workers, capfd):  # noqa: F811
    if who == "root" and os.geteuid() != 0:
        pytest.skip("grading as root needs root (an ordinary user grades in the other cases)")
    package = Path(attnlab.__file__).resolve().parent
    before = tree_digest(package)
    scratch = Path(tempfile.mkdtemp(prefix="attnlab-attacks-"))
    try:
        os.chmod(scratch, 0o755)
        course = scratch / "course"
        shutil.copytree(released_course, course)
        expected = hostile_class(course)
        taught = {name: tree_digest(course / name) for name in ("source", "release")}
        untouched = {s: tree_digest(course / "submitted" / s) for s in ("ana", "bo", "leaker", "looker")}
        csv_path = scratch / "grades.csv"
        if who == "root":
            os.environ[MARKER] = "1"
            try:
                grade(course, [CHAPTER], csv_path, quiet=True, workers=workers, timeout=TIMEOUT)
            finally:
                del os.environ[MARKER]
            captured = capfd.readouterr()
            output = captured.out + captured.err
        else:  # as root: switched to uid 65534; as an ordinary user: as that user
            home = scratch / "home"
            home.mkdir()
            python = Path(sys.executable)
            command = [str(python), "-m", "attnlab.grading", str(course), CHAPTER, "--csv", str(csv_path),
                       "--workers", str(workers), "--timeout", str(TIMEOUT)]
            if os.geteuid() == 0:
                subprocess.run(["chown", "-R", f"{NOBODY}:{NOBODY}", str(scratch)], check=True)
                command = as_nobody(command)
            env = {"PATH": f"{python.parent}:/usr/bin:/bin", "HOME": str(home), MARKER: "1",
                   "ATTNLAB_QUICK": "1", "OMP_NUM_THREADS": "1", "LANG": "C.UTF-8"}
            done = subprocess.run(command, env=env, capture_output=True, text=True, cwd=scratch, timeout=1800)
            output = done.stdout + done.stderr
            assert done.returncode == 0, output[-3000:]
        rows = {r["student"]: r for r in csv.DictReader(open(csv_path))}
        check(course, rows, expected, output)
        # the gradebook holds what the CSV says, cell by cell, for every graded student
        for (_, student, cell), score in gradebook_scores(course, [CHAPTER]).items():
            if cell.endswith("-check"):
                assert float(rows[student][cell]) == score, (student, cell)
        # the honest submissions are graded as handed in, and their feedback is the grader's
        for student in untouched:
            assert tree_digest(course / "submitted" / student) == untouched[student], student
        for student, total in expected.items():
            page = course / "feedback" / student / CHAPTER / f"{CHAPTER}.html"
            assert page.exists() == (total is not None), (student, rows[student]["reason"], output[-2000:])
        assert {name: tree_digest(course / name) for name in ("source", "release")} == taught
        assert tree_digest(package) == before
        assert survivors() == []
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
