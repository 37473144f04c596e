"""nbgrader's execution of a submission, where a cell that stops Python costs only
that cell: the preprocessor that ``python -m attnlab.grading`` puts in place of
nbgrader's ``Execute`` (homework grading; needs nbgrader).

When a cell ends the kernel (``os._exit``, a crash, running out of memory), the
cell gets an error output that says so, a new kernel runs the cells before it again
(without those that stopped a kernel), and execution goes on after it; so one such
answer loses its own exercise's points, not the whole submission's.
"""

from __future__ import annotations

from nbclient import NotebookClient
from nbclient.exceptions import DeadKernelError
from nbformat import NotebookNode
from nbgrader.preprocessors import Execute

from attnlab.teaching.grading import KERNEL_STOPPED

KERNEL_STOPPED_MESSAGE = (
    "this cell stopped the notebook's Python process (os._exit, a crash or running"
    " out of memory); the cells after it ran in a new one"
)
MOST_RESTARTS = 5  # a notebook whose cells stop Python more often is not graded


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
                            self.execute_cell(cell, index, store_history=True)
                break
            except DeadKernelError:
                if index is None or len(stopped) >= MOST_RESTARTS:
                    raise
                stopped.add(index)
                self.nb.cells[index].outputs = [stopped_output()]
                km = None  # a new kernel
        self.set_widgets_metadata()
        return self.nb, self.resources
