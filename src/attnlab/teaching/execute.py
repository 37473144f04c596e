"""nbgrader's execution of a submission, where a cell that stops Python costs only
that cell: the preprocessor that ``python -m attnlab.grading`` puts in place of
nbgrader's ``Execute`` (homework grading; needs nbgrader).

When a cell ends the kernel (``os._exit``, a crash, running out of memory), the
cell gets an error output that says so, a new kernel runs the cells before it again
(without those that stopped a kernel), and execution goes on after it; so one such
answer loses its own exercise's points, not the whole submission's. A cell that runs
past its time limit is treated alike, whether or not the kernel could be
interrupted (a loop inside ``try/except BaseException`` cannot): the kernel is
killed, the cell is skipped in the new run, and where it was a check cell, the
answer it was calling is the release's stub there, so that no later cell waits on
it again.

Each check cell that the grader judges runs inside its session
(:func:`attnlab.teaching.verdicts.session`): the grader hears that cell only while
it runs, once.
"""

from __future__ import annotations

from nbclient import NotebookClient
from nbclient.exceptions import CellTimeoutError, DeadKernelError
from nbformat import NotebookNode
from nbgrader.preprocessors import Execute

from attnlab.teaching.grading import KERNEL_STOPPED
from attnlab.teaching.release import CHECK_SUFFIX, cell_grade_id
from attnlab.teaching.verdicts import graded_cells, released_stub, restarted, session

KERNEL_STOPPED_MESSAGE = (
    "this cell stopped the notebook's Python process (os._exit, a crash or running"
    " out of memory); the cells after it ran in a new one"
)
MOST_RESTARTS = 5  # a notebook whose cells stop Python more often is not graded
TIMED_OUT = "TimeoutError"  # the error of a cell past its time limit
STUB_NOTE = "# this answer ran past the time limit: the release's stub instead\n"


class _TimedOut(Exception):
    """A cell ran past its time limit."""


def timed_out(cell: NotebookNode) -> bool:
    """Whether ``cell`` ran past its time limit (its error output says so)."""
    return any(
        o.get("output_type") == "error" and o.get("ename") == TIMED_OUT
        for o in cell.get("outputs", [])
    )


def stopped_output() -> NotebookNode:
    """The error output of a cell during which the kernel died."""
    return NotebookNode(
        output_type="error",
        ename=KERNEL_STOPPED,
        evalue=KERNEL_STOPPED_MESSAGE,
        traceback=[f"{KERNEL_STOPPED}: {KERNEL_STOPPED_MESSAGE}"],
    )


class ExecuteEachCell(Execute):
    """nbgrader's ``Execute``, surviving a cell that stops the kernel (its
    configuration, ``c.Execute.*``, applies)."""

    def preprocess(self, nb, resources=None, km=None):
        """Execute the code cells of ``nb`` in order; returns ``(nb, resources)``."""
        self._check_assign_resources(resources)
        stopped: set[int] = set()
        while True:
            NotebookClient.__init__(self, nb, km)  # as nbconvert's preprocess does
            self.reset_execution_trackers()
            index = None
            try:
                with self.setup_kernel():
                    info = self.wait_for_reply(self.kc.kernel_info())
                    self.nb.metadata["language_info"] = info["content"][
                        "language_info"
                    ]
                    for index, cell in enumerate(self.nb.cells):
                        if index not in stopped:
                            self._execute(cell, index)
                break
            except (DeadKernelError, _TimedOut) as stop:
                if index is None or len(stopped) >= MOST_RESTARTS:
                    raise
                stopped.add(index)
                if isinstance(stop, _TimedOut):
                    self._stub_answer(index)
                else:
                    self.nb.cells[index].outputs = [stopped_output()]
                km = None  # a new kernel: the one that timed out is shut down
                restarted()
        self.set_widgets_metadata()
        return self.nb, self.resources

    def _stub_answer(self, index: int) -> None:
        """A check cell at ``index`` ran past its time limit: the answer it calls
        becomes the release's stub, so that no later cell waits on it again (an
        answer cell that looped is skipped itself)."""
        grade_id = cell_grade_id(self.nb.cells[index]) or ""
        answer = grade_id.removesuffix(CHECK_SUFFIX)
        stub = released_stub(answer) if answer != grade_id else None
        if stub is None:
            return
        for cell in self.nb.cells:
            if cell_grade_id(cell) == answer:
                cell.source = STUB_NOTE + stub

    def _execute(self, cell: NotebookNode, index: int) -> None:
        """Execute one cell, a check cell the grader judges inside its session;
        raises :class:`_TimedOut` if it ran past its time limit, whether or not the
        kernel then stopped it."""
        grade_id = cell_grade_id(cell)
        try:
            if grade_id and grade_id in graded_cells():
                with session(grade_id):
                    self.execute_cell(cell, index, store_history=True)
            else:
                self.execute_cell(cell, index, store_history=True)
        except CellTimeoutError:  # the kernel did not come back after its interrupt
            if not timed_out(cell):
                error = self.error_on_timeout or {"evalue": "", "traceback": []}
                cell.outputs.append(
                    NotebookNode(
                        output_type="error", **{**error, "ename": TIMED_OUT}
                    )
                )
            raise _TimedOut from None
        if timed_out(cell):
            raise _TimedOut
