"""Grading a whole class: several submissions at a time (attnlab.teaching.grading --workers), a
submission that crashes, loops or is not a notebook, the merged gradebook, the class
summary, and collecting the notebooks downloaded from Canvas or Moodle
(attnlab.teaching.collect).

The graded chapters are chapters 1 and 2 (the cheapest to grade), each cut after its
second code exercise, so that grading stays within seconds per submission; the
submissions are made from their students' version as .ci/grade_homework.py makes
them. Grading runs in quick mode, as the course's nbgrader_config.py sets it.
"""

import copy
import csv
import os
import shutil
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest

from attnlab.teaching.collect import (
    NOT_PLACED,
    PLACED,
    collect,
    moodle_student,
    read_map,
    read_roster_names,
)
from attnlab.teaching.grading import (
    GRADED,
    NOT_SUBMITTED,
    UNGRADABLE,
    Result,
    grade,
    main,
    nbgrader_api,
    summary,
)
from attnlab.teaching.release import (
    exercises,
    solution_code,
    student_version,
    write_course,
)
from tests.test_grading import released, write
from tests.wrong_answers.memory_scoring import WRONG

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = ["01_context_sensitive_memory", "02_scoring_functions"]
CODE_EXERCISES = 2  # each chapter is cut after its second code exercise


def cut(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The solution notebook up to the check cell of its second code exercise."""
    code = [e for e in exercises(nb) if e.kind == "code"]
    short = copy.deepcopy(nb)
    short.cells = short.cells[: code[CODE_EXERCISES - 1].check + 1]
    return short


def submissions(nb: nbformat.NotebookNode) -> dict[str, nbformat.NotebookNode | str]:
    """Six students' submissions of the (cut) solution notebook ``nb``: right, untouched, one or two wrong
    answers, a deleted check cell, and a text file."""
    untouched = student_version(nb)
    code = [e for e in exercises(nb) if e.kind == "code"]
    solved = copy.deepcopy(untouched)
    for e in code:
        solved.cells[e.answer].source = solution_code(nb.cells[e.answer].source)
    one_wrong, both_wrong = copy.deepcopy(solved), copy.deepcopy(solved)
    one_wrong.cells[code[0].answer].source = WRONG[code[0].label]
    for e in code:
        if e.label in WRONG:
            both_wrong.cells[e.answer].source = WRONG[e.label]
    deleted = copy.deepcopy(solved)
    del deleted.cells[code[1].check]
    return {
        "ana": solved,
        "bo": untouched,
        "cy": one_wrong,
        "di": both_wrong,
        "ed": deleted,
        "fay": "These are my answers: 42.\n",
    }


def submit(
    course: Path, chapter: str, student: str, submission: nbformat.NotebookNode | str
) -> None:
    path = course / "submitted" / student / chapter / f"{chapter}.ipynb"
    if isinstance(submission, str):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(submission)
    else:
        write(path, submission)


@pytest.fixture(scope="module")
def released_course(tmp_path_factory) -> Path:
    """A course folder with the two cut chapters released, and no submission.

    nbgrader is the instructors' extra: `make test` has not installed it and skips the grading tests; `make grade`
    installs it and runs them with ATTNLAB_REQUIRE_NBGRADER=1, where a missing nbgrader is a failure."""
    if os.environ.get("ATTNLAB_REQUIRE_NBGRADER") != "1":
        pytest.importorskip("nbgrader")
    root = tmp_path_factory.mktemp("class")
    solutions = root / "solutions"
    solutions.mkdir()
    for chapter in CHAPTERS:
        nb = nbformat.read(ROOT / "notebooks" / f"{chapter}.ipynb", as_version=4)
        nbformat.write(cut(nb), solutions / f"{chapter}.ipynb")
    course = root / "course"
    write_course(sorted(solutions.glob("*.ipynb")), course)
    api = nbgrader_api(course)  # in this process: cheaper than nbgrader's command
    tools = str(Path(sys.executable).parent)  # nbgrader runs alembic from there
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PATH", f"{tools}{os.pathsep}{os.environ.get('PATH', '')}")
        for chapter in CHAPTERS:
            assert api.generate_assignment(chapter, force=True)["success"]
    return course


@pytest.fixture(scope="module")
def class_course(released_course, tmp_path_factory) -> Path:
    """The course with six students' submissions of each chapter and one student who handed nothing in."""
    course = tmp_path_factory.mktemp("submitted") / "course"
    shutil.copytree(released_course, course)
    for chapter in CHAPTERS:
        nb = nbformat.read(
            released_course / "source" / chapter / f"{chapter}.ipynb", as_version=4
        )
        solution = nbformat.read(
            ROOT / "notebooks" / f"{chapter}.ipynb", as_version=4
        )
        assert len(student_version(cut(solution)).cells) == len(nb.cells)
        for student, submission in submissions(cut(solution)).items():
            submit(course, chapter, student, submission)
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        gradebook.add_student("gus")  # in the gradebook, handed nothing in
    return course


def gradebook_scores(
    course: Path, chapters: list[str]
) -> dict[tuple[str, str, str], float | None]:
    """Every grade the course's gradebook holds: (chapter, student, cell) -> score (None: needs a manual grade)."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        return {
            (chapter, s.student.id, g.name): None
            if g.needs_manual_grade
            else float(g.score)
            for chapter in chapters
            for s in gradebook.assignment_submissions(chapter)
            for nb in s.notebooks
            for g in nb.grades
        }


def test_two_workers_grade_as_the_serial_run_does(class_course, tmp_path):
    serial, parallel = tmp_path / "serial", tmp_path / "parallel"
    shutil.copytree(class_course, serial)
    shutil.copytree(class_course, parallel)
    one = grade(serial, CHAPTERS, serial / "grades.csv", quiet=True)
    two = grade(parallel, CHAPTERS, parallel / "grades.csv", quiet=True, workers=2)
    assert (parallel / "grades.csv").read_text() == (
        serial / "grades.csv"
    ).read_text()
    assert [(r.student, r.assignment, r.status) for r in two] == [
        (r.student, r.assignment, r.status) for r in one
    ]
    rows = list(csv.DictReader(open(parallel / "grades.csv")))
    assert len(rows) == 2 * 7 and {r["status"] for r in rows} == {
        GRADED,
        UNGRADABLE,
        NOT_SUBMITTED,
    }
    by = {(r["student"], r["assignment"]): r for r in rows}
    for chapter in CHAPTERS:
        assert (
            float(by["ana", chapter]["total"])
            > float(by["cy", chapter]["total"])
            > 0
        )
        assert by["bo", chapter]["total"] == "0" and by["fay", chapter][
            "reason"
        ].startswith("not a notebook")
        assert by["ed", chapter]["reason"].startswith("deleted cells restored")
        assert by["ed", chapter]["total"] == by["ana", chapter]["total"]
    # the feedback pages and the autograded notebooks are where the serial run puts them
    for folder in ("feedback", "autograded"):
        files = sorted(p.relative_to(serial) for p in (serial / folder).rglob("*.*"))
        assert files and files == sorted(
            p.relative_to(parallel) for p in (parallel / folder).rglob("*.*")
        )
    # the merged gradebook holds every grade, as the serial run's does
    merged = gradebook_scores(parallel, CHAPTERS)
    assert merged == gradebook_scores(serial, CHAPTERS)
    graded = [r for r in rows if r["status"] == GRADED]
    assert len({(c, s) for c, s, _ in merged}) == len(graded) == 2 * 5
    for r in graded:
        for cell, points in r.items():
            if cell.endswith("-check") and points:  # the other chapter's cells: ""
                assert merged[r["assignment"], r["student"], cell] == float(points)
    assert (parallel / "grades-summary.md").read_text() == (
        serial / "grades-summary.md"
    ).read_text()
    assert (
        "7 students: 5 graded, 1 not submitted, 1 could not be graded."
        in (parallel / "grades-summary.md").read_text()
    )


CRASH = "import os\nos._exit(3)"  # the kernel dies in this cell
# kills the kernel's parent: without the sandbox, the grading process; in it, the
# sandbox's first process, which a signal from inside cannot stop
PARRICIDE = "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)"
NAP = "import time\ntime.sleep(60)"  # longer than the limit per cell, TIMEOUT
TIMEOUT = 20


def first_chapter(released: Path, tmp_path: Path) -> tuple:
    """A copy of the released course, the first chapter, its submissions (see
    :func:`submissions`) and its first code exercise."""
    course = tmp_path / "course"
    shutil.copytree(released, course)
    chapter = CHAPTERS[0]
    solution = cut(
        nbformat.read(ROOT / "notebooks" / f"{chapter}.ipynb", as_version=4)
    )
    first = next(e for e in exercises(solution) if e.kind == "code")
    return course, chapter, submissions(solution), first


def test_a_crash_a_loop_and_a_text_file_cost_only_their_own_points(
    released_course, tmp_path
):
    course, chapter, subs, first = first_chapter(released_course, tmp_path)
    crash, nap = copy.deepcopy(subs["ana"]), copy.deepcopy(subs["ana"])
    parricide = copy.deepcopy(subs["ana"])
    # in the first answer, before its function is defined: that exercise fails
    crash.cells[first.answer].source = f"{CRASH}\n" + crash.cells[first.answer].source
    nap.cells[first.answer].source = f"{NAP}\n" + nap.cells[first.answer].source
    parricide.cells.insert(0, nbformat.v4.new_code_cell(PARRICIDE))
    if parricide.nbformat_minor < 5:
        del parricide.cells[0]["id"]  # cell ids came with nbformat 4.5
    submit(course, chapter, "crash", crash)
    submit(course, chapter, "parricide", parricide)
    submit(course, chapter, "a-sleeper", nap)
    submit(course, chapter, "ana", subs["ana"])
    submit(course, chapter, "bo", subs["bo"])
    submit(course, chapter, "fay", subs["fay"])
    roster = ["ana", "bo", "crash", "parricide", "fay", "hal"]  # hal: no submission
    results = {
        r.student: r
        for r in grade(
            course,
            [chapter],
            course / "grades.csv",
            quiet=True,
            workers=2,
            timeout=TIMEOUT,
            roster=roster,
        )
    }
    full = results["ana"].total
    assert results["ana"].status == GRADED and full > 0
    check = f"{first.label}-check"
    for student, note in (("crash", "Python stopped in"), ("a-sleeper", "time-out in")):
        result = results[student]
        assert result.status == GRADED, (student, result.reason)
        assert f"{note} {first.label}" in result.reason
        assert result.points[check] == 0
        assert result.total == full - first.points
    assert "not on the roster" in results["a-sleeper"].reason
    assert results["parricide"].status == GRADED
    assert results["parricide"].total == full
    assert results["hal"].status == NOT_SUBMITTED
    assert results["fay"].status == UNGRADABLE and results["fay"].reason.startswith(
        "not a notebook"
    )
    rows = {r["student"]: r for r in csv.DictReader(open(course / "grades.csv"))}
    assert [rows[s]["total"] for s in ("fay", "bo", "hal")] == ["0"] * 3
    assert sorted(p.parts[-3] for p in (course / "feedback").rglob("*.html")) == [
        "a-sleeper",
        "ana",
        "bo",
        "crash",
        "parricide",
    ]


def test_the_same_limits_hold_serially(released_course, tmp_path):
    """A loop and a crash cost the same points in one process as with workers."""
    course, chapter, subs, first = first_chapter(released_course, tmp_path)
    nap = copy.deepcopy(subs["ana"])
    nap.cells[first.answer].source = f"{NAP}\n{CRASH}\n" + nap.cells[first.answer].source
    submit(course, chapter, "ana", subs["ana"])
    submit(course, chapter, "a-sleeper", nap)
    results = {
        r.student: r
        for r in grade(course, [chapter], course / "grades.csv", quiet=True, timeout=TIMEOUT)
    }
    sleeper = results["a-sleeper"]
    assert sleeper.status == GRADED and f"time-out in {first.label}" in sleeper.reason
    assert sleeper.total == results["ana"].total - first.points


def test_the_summary_counts_statuses_and_points_per_exercise(tmp_path):
    write(
        tmp_path / "release" / "01" / "01.ipynb", released()
    )  # one exercise, ex-a, of 2 points
    results = [
        Result(s, "01", GRADED, "", {"ex-a-check": p}, 1.0)
        for s, p in zip("abcd", [2.0, 2.0, 0.0, 1.0], strict=True)
    ]
    results += [
        Result("e", "01", UNGRADABLE, "empty file", {}, 0.0),
        Result("f", "01", NOT_SUBMITTED, "", {}, 0.0),
    ]
    text = summary(results, tmp_path)
    assert "6 students: 4 graded, 1 not submitted, 1 could not be graded." in text
    assert "| ex-a | 2 | 1.25 | 1.5 | 2 | 1 | 0 |" in text
    assert "- ex-a: 2 of 4" in text


def test_workers_and_timeout_must_be_positive(capsys):
    for option in (["--workers", "0"], ["--timeout", "-1"]):
        with pytest.raises(SystemExit):
            main(["course", "01", *option])
        assert "expected a number above 0" in capsys.readouterr().err


# --- collecting ---


def notebook_bytes(text: str = "") -> bytes:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell(text)]
    return nbformat.writes(nb).encode()


def placed(course: Path, chapter: str) -> dict[str, str]:
    return {
        p.parts[-3]: p.read_text()
        for p in sorted((course / "submitted").glob(f"*/{chapter}/{chapter}.ipynb"))
    }


def test_collect_a_canvas_zip(tmp_path):
    course, chapter = tmp_path / "course", "05_luong_attention"
    course.mkdir()
    files = {
        f"smithana_1234_9001_{chapter}.ipynb": notebook_bytes("ana"),
        f"leebo_late_5678_9002_{chapter}-1.ipynb": notebook_bytes("bo"),
        "leebo_late_5678_9002_scratch.ipynb": notebook_bytes("bo's scratch"),
        "kimcy_4321_9003_answers.pdf": b"%PDF",
        "my homework.ipynb": notebook_bytes(),
    }
    source = tmp_path / "submissions.zip"
    with zipfile.ZipFile(source, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    outcomes = {o.file: o for o in collect(course, chapter, source)}
    assert set(outcomes) == set(files)
    got = placed(course, chapter)
    assert (
        set(got) == {"1234", "5678"}
        and '"ana"' in got["1234"]
        and '"bo"' in got["5678"]
    )
    assert outcomes[f"leebo_late_5678_9002_{chapter}-1.ipynb"].detail.endswith(
        "late"
    )
    assert outcomes["leebo_late_5678_9002_scratch.ipynb"].outcome == NOT_PLACED
    assert (
        f"kept leebo_late_5678_9002_{chapter}-1.ipynb (its name is the assignment's"
        in (outcomes["leebo_late_5678_9002_scratch.ipynb"].detail)
    )
    assert outcomes["kimcy_4321_9003_answers.pdf"].detail.startswith(
        "not a notebook: expected a name ending in .ipynb"
    )
    assert outcomes["kimcy_4321_9003_answers.pdf"].student == "4321"
    assert outcomes["my homework.ipynb"].detail.startswith(
        "the name matches neither Canvas"
    )


def test_collect_reads_nothing_through_a_link(tmp_path):
    """An unzipped download whose files are links (to the instructor's source notebook, absolute or
    hard), or a zip that stores a link: refused, never read, nothing placed."""
    from attnlab.teaching.collect import LINK

    course, chapter = tmp_path / "course", "05_luong_attention"
    source_notebook = course / "source" / chapter / f"{chapter}.ipynb"
    source_notebook.parent.mkdir(parents=True)
    source_notebook.write_bytes(notebook_bytes("the worked solutions"))
    folder = tmp_path / "download"
    folder.mkdir()
    (folder / f"smithana_1234_9001_{chapter}.ipynb").symlink_to(source_notebook)
    (folder / f"leebo_5678_9002_{chapter}.ipynb").hardlink_to(source_notebook)
    (folder / "kimcy_4321_9003_data").symlink_to(course)  # a folder that is a link
    outcomes = {o.file: o for o in collect(course, chapter, folder)}
    assert set(outcomes) == {f"smithana_1234_9001_{chapter}.ipynb",
                             f"leebo_5678_9002_{chapter}.ipynb", "kimcy_4321_9003_data"}
    assert all(o.outcome == NOT_PLACED and o.detail == LINK for o in outcomes.values())
    assert not (course / "submitted").exists()
    archive_path = tmp_path / "submissions.zip"
    with zipfile.ZipFile(archive_path, "w") as archive:
        member = zipfile.ZipInfo(f"smithana_1234_9001_{chapter}.ipynb")
        member.external_attr = (0o120777 << 16)  # a symbolic link, as zip -y stores it
        archive.writestr(member, str(source_notebook))
        archive.writestr(f"leebo_5678_9002_{chapter}.ipynb", notebook_bytes("bo"))
    outcomes = {o.file: o for o in collect(course, chapter, archive_path)}
    assert outcomes[f"smithana_1234_9001_{chapter}.ipynb"].detail == LINK
    assert set(placed(course, chapter)) == {"5678"}


def test_collect_a_moodle_folder_with_the_command(tmp_path, capsys):
    course, chapter = tmp_path / "course", "01_context_sensitive_memory"
    course.mkdir()
    source = tmp_path / "download"
    files = {
        "Ana María López_88_assignsubmission_file_/homework.ipynb": notebook_bytes(
            "ana"
        ),
        "Bo Lee_89_assignsubmission_file_/old/homework.ipynb": notebook_bytes(
            "bo old"
        ),
        f"Bo Lee_89_assignsubmission_file_/{chapter}.ipynb": notebook_bytes("bo"),
        f"Cy Kim_90_assignsubmission_file_{chapter}.ipynb": notebook_bytes("cy"),
        "Cy Kim_90_assignsubmission_onlinetext_onlinetext.html": b"<p>see the notebook</p>",
    }
    for name, data in files.items():
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        (source / name).write_bytes(data)
    main(["collect", str(course), chapter, str(source)])
    out = capsys.readouterr().out
    got = placed(course, chapter)
    assert set(got) == {"ana-maria-lopez", "bo-lee", "cy-kim"}
    assert '"bo"' in got["bo-lee"] and '"cy"' in got["cy-kim"]
    assert "3 notebooks placed" in out and "2 files not placed" in out
    (report_file,) = course.glob(f"collect-{chapter}-*.csv")  # one per run
    report = {r["file"]: r for r in csv.DictReader(open(report_file))}
    assert set(report) == set(files)
    assert (
        report["Bo Lee_89_assignsubmission_file_/old/homework.ipynb"]["outcome"]
        == NOT_PLACED
    )
    assert report["Cy Kim_90_assignsubmission_onlinetext_onlinetext.html"][
        "detail"
    ].startswith("not a notebook")
    assert moodle_student("Zoë  O'Brien") == "zoe-o-brien"


def test_collect_by_a_map(tmp_path):
    course, chapter = tmp_path / "course", "02_scoring_functions"
    course.mkdir()
    source = tmp_path / "files"
    source.mkdir()
    for name in ("first.ipynb", "second.ipynb", "third.ipynb"):
        (source / name).write_bytes(notebook_bytes(name))
    mapping = tmp_path / "map.csv"
    mapping.write_text(
        "file,student\nfirst.ipynb,s001\nsecond.ipynb,s002\nfourth.ipynb,s004\n"
    )
    outcomes = {
        o.file: o for o in collect(course, chapter, source, read_map(mapping))
    }
    assert set(placed(course, chapter)) == {"s001", "s002"}
    assert (
        outcomes["first.ipynb"].outcome == PLACED
        and outcomes["third.ipynb"].outcome == NOT_PLACED
    )
    assert outcomes["fourth.ipynb"].detail == "named in the map, not found in SOURCE"
    (tmp_path / "bad.csv").write_text("name,id\nfirst.ipynb,s001\n")
    with pytest.raises(
        SystemExit, match="expected the columns file,student, got name,id"
    ):
        read_map(tmp_path / "bad.csv")


def test_collect_keeps_a_report_per_run(tmp_path):
    course, chapter = tmp_path / "course", "03_encoder_decoder"
    course.mkdir()
    source = tmp_path / "download"
    source.mkdir()
    (source / f"smithana_1234_9001_{chapter}.ipynb").write_bytes(notebook_bytes("ana"))
    for _ in range(3):  # within one second too
        main(["collect", str(course), chapter, str(source)])
    assert len(list(course.glob(f"collect-{chapter}-*.csv"))) == 3


def test_collect_gives_moodle_names_the_rosters_ids(tmp_path):
    course, chapter = tmp_path / "course", "04_bahdanau_attention"
    course.mkdir()
    source = tmp_path / "download"
    for name, text in (("Ana María López_17", "ana"), ("Bo Lee_18", "bo"),
                       ("Bo Lee_19", "other bo"), ("Cy Dunn_20", "cy")):
        path = source / f"{name}_assignsubmission_file_" / f"{chapter}.ipynb"
        path.parent.mkdir(parents=True)
        path.write_bytes(notebook_bytes(text))
    roster = tmp_path / "roster.csv"
    roster.write_text("student,name\ns001,Ana Maria Lopez\ns002,Bo Lee\ns003,Bo Lee\n")
    outcomes = collect(course, chapter, source, roster=read_roster_names(roster))
    got = placed(course, chapter)
    assert '"ana"' in got["s001"]  # accents and case do not matter
    assert "cy-dunn" in got  # not on the roster: the name, as before
    # two students of the roster share the name: neither id is guessed
    assert {"bo-lee-18", "bo-lee-19"} <= set(got)
    assert any("two students of the roster share" in o.detail for o in outcomes)


def test_collect_places_canvas_late_in_capitals_and_keeps_moodle_namesakes_apart(tmp_path):
    course, chapter = tmp_path / "course", "04_bahdanau_attention"
    course.mkdir()
    source = tmp_path / "download"
    files = {
        f"smithana_LATE_1234_9001_{chapter}.ipynb": notebook_bytes("ana"),
        f"Bo Lee_203_assignsubmission_file_/{chapter}.ipynb": notebook_bytes("bo 203"),
        f"Bo Lee_204_assignsubmission_file_/{chapter}.ipynb": notebook_bytes("bo 204"),
    }
    for name, data in files.items():
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        (source / name).write_bytes(data)
    outcomes = {o.file: o for o in collect(course, chapter, source)}
    assert all(o.outcome == PLACED for o in outcomes.values()), outcomes
    got = placed(course, chapter)
    assert set(got) == {"1234", "bo-lee-203", "bo-lee-204"}
    assert '"bo 203"' in got["bo-lee-203"] and '"bo 204"' in got["bo-lee-204"]
    assert outcomes[f"smithana_LATE_1234_9001_{chapter}.ipynb"].detail.endswith("late")
    assert "2 participants named so" in outcomes[f"Bo Lee_203_assignsubmission_file_/{chapter}.ipynb"].detail
