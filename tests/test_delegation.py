"""The grader reads each answer's code: the library's own version, reached through
any chain of names, or code that hides what it calls, costs the check its points."""

import copy
import importlib
import pkgutil
from pathlib import Path

import nbformat
import pytest

from attnlab.teaching.delegation import findings
from attnlab.teaching.release import (
    chapter_notebooks,
    exercises,
    hidden_tests,
    solution_code,
    student_version,
)

NOTEBOOKS = chapter_notebooks(Path(__file__).resolve().parents[1] / "notebooks")
CHAPTER_1 = next(p for p in NOTEBOOKS if p.name.startswith("01_"))
LOOKUP = "ex-memory-soft-lookup"
RELEASE = student_version(nbformat.read(CHAPTER_1, as_version=4))
EXERCISE = next(
    e for e in exercises(nbformat.read(CHAPTER_1, as_version=4)) if e.label == LOOKUP
)


def solved(path: Path) -> nbformat.NotebookNode:
    """The students' version of a chapter with every worked solution written in."""
    source = nbformat.read(path, as_version=4)
    nb = student_version(source)
    for exercise in exercises(source):
        answer = source.cells[exercise.answer].source
        code = exercise.kind == "code"
        nb.cells[exercise.answer].source = solution_code(answer) if code else answer
    return nb


@pytest.fixture(scope="module")
def chapter_1() -> nbformat.NotebookNode:
    return solved(CHAPTER_1)


def lookup_answer(nb, answer: str, before: str | None = None):
    """Chapter 1 with the soft-lookup answer replaced (and a cell ``before`` it);
    what reading it finds in that exercise's check cell."""
    nb = copy.deepcopy(nb)
    nb.cells[EXERCISE.answer].source = answer
    if before is not None:
        nb.cells.insert(EXERCISE.answer, nbformat.v4.new_code_cell(before))
    return findings(nb, RELEASE).get(f"{LOOKUP}-check")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem[:2])
def test_no_worked_solution_is_refused(path):
    assert findings(solved(path)) == {}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem[:2])
def test_no_typical_wrong_answer_is_taken_for_delegation(path):
    """A wrong answer gets the check's message about its mistake, not this one."""
    import tests.wrong_answers as package

    wrong = {}
    for module in pkgutil.iter_modules(package.__path__):
        name = f"tests.wrong_answers.{module.name}"
        wrong.update(importlib.import_module(name).WRONG)
    nb = solved(path)
    for exercise in exercises(nbformat.read(path, as_version=4)):
        if exercise.label in wrong:
            nb.cells[exercise.answer].source = wrong[exercise.label]
    assert findings(nb) == {}


RIGHT = {
    "torch only": (
        "import torch\n"
        "def soft_lookup(query, keys, values):\n"
        "    w = torch.softmax(keys @ query, dim=0)\n"
        "    return w @ values, w",
        None,
    ),
    "a helper in another cell, locals and comprehensions": (
        "def soft_lookup(query, keys, values):\n    return mine(query, keys, values)",
        "import torch.nn.functional as F\n"
        "def mine(q, k, v):\n"
        "    try:\n"
        "        w = F.softmax(k @ q, 0)\n"
        "    except RuntimeError as err:\n"
        "        raise ValueError(str(err)) from None\n"
        "    rows = [x * 1 for x in w]\n"
        "    return w @ v, w",
    ),
    "the library's name rebound to the student's own function": (
        "import torch\n"
        "def attend(q, k, v):\n"
        "    w = torch.softmax(k @ q, 0)\n"
        "    return w @ v, w\n"
        "def soft_lookup(query, keys, values):\n"
        "    return attend(query, keys, values)",
        "from attnlab.attention import attend",
    ),
    "prints and warns with __import__": (
        "import torch\n"
        "def soft_lookup(query, keys, values):\n"
        "    print('a note', file=__import__('sys').stderr)\n"
        "    __import__('warnings').warn('my own warning')\n"
        "    w = torch.softmax(keys @ query, dim=0)\n"
        "    return w @ values, w",
        None,
    ),
    "an unbound name in a branch never taken, and in an annotation": (
        "import torch\n"
        "def soft_lookup(query, keys, values) -> Tensor:\n"
        "    if query is None:\n"
        "        plot_it(query)\n"
        "    w = torch.softmax(keys @ query, dim=0)\n"
        "    return w @ values, w",
        None,
    ),
}


@pytest.mark.parametrize("answer, before", RIGHT.values(), ids=list(RIGHT))
def test_right_answers_in_any_form_are_not_refused(chapter_1, answer, before):
    assert lookup_answer(chapter_1, answer, before) is None


LIBRARY = "calls `attnlab.attention.attend`, the library's own version"
DELEGATING = {
    "imported": (
        "from attnlab.attention import attend\n"
        "def soft_lookup(q, k, v):\n    return attend(q, k, v)",
        None,
        LIBRARY,
    ),
    "profiler off, then the module's function": (
        "import attnlab.attention as A\n"
        "def soft_lookup(q, k, v):\n"
        "    import sys\n"
        "    sys.setprofile(None)\n"
        "    return A.attend(q, k, v)",
        None,
        LIBRARY,
    ),
    "the package's attribute chain": (
        "import attnlab\n"
        "def soft_lookup(q, k, v):\n    return attnlab.attention.attend(q, k, v)",
        None,
        LIBRARY,
    ),
    "a lambda in another cell": (
        "def soft_lookup(q, k, v):\n    return helper(q, k, v)",
        "from attnlab.attention import attend as _a\nhelper = lambda *x: _a(*x)",
        LIBRARY,
    ),
    "functools.partial": (
        "def soft_lookup(q, k, v):\n    return helper(q, k, v)",
        "import functools\n"
        "from attnlab import attention\n"
        "helper = functools.partial(attention.attend)",
        LIBRARY,
    ),
    "a loop's target": (
        "def soft_lookup(q, k, v):\n    return h(q, k, v)",
        "from attnlab.attention import attend\nfor h in [attend]:\n    pass",
        LIBRARY,
    ),
    "a walrus": (
        "def soft_lookup(q, k, v):\n    return h(q, k, v)",
        "from attnlab.attention import attend\n(h := attend)",
        LIBRARY,
    ),
    "set by a function through `global`": (
        "def soft_lookup(q, k, v):\n    return h(q, k, v)",
        "def setup():\n"
        "    global h\n"
        "    from attnlab.attention import attend as h\n"
        "setup()",
        LIBRARY,
    ),
    "a constant getattr": (
        "from attnlab import attention\n"
        "def soft_lookup(q, k, v):\n    return getattr(attention, 'attend')(q, k, v)",
        None,
        LIBRARY,
    ),
    "__import__ with a constant name": (
        "def soft_lookup(q, k, v):\n"
        "    return __import__('attnlab.attention').attention.attend(q, k, v)",
        None,
        LIBRARY,
    ),
    "torch patched with the library's function": (
        "import torch\ndef soft_lookup(q, k, v):\n    return torch.lookup(q, k, v)",
        "import torch\nfrom attnlab.attention import attend\ntorch.lookup = attend",
        LIBRARY,
    ),
    "a method of an exercised class": (
        "from attnlab.memory import SoftDict\n"
        "def soft_lookup(q, k, v):\n    return SoftDict(k, v).lookup(q)",
        None,
        "calls `attnlab.memory.SoftDict.lookup`, the library's own version",
    ),
    "a chain of thousands of aliases": (
        "def soft_lookup(q, k, v):\n    return h2999(q, k, v)",
        "from attnlab.attention import attend as h0\n"
        + "\n".join(f"h{i + 1} = h{i}" for i in range(2999)),
        LIBRARY,
    ),
    "a name bound by globals()": (
        "def soft_lookup(q, k, v):\n    return helper(q, k, v)",
        "from attnlab.attention import attend\nglobals()['helper'] = attend",
        "uses `helper`, which no cell of the notebook defines",
    ),
    "a name pushed into the kernel": (
        "def soft_lookup(q, k, v):\n    return helper(q, k, v)",
        "from attnlab.attention import attend\nget_ipython().push({'helper': attend})",
        "uses `helper`, which no cell of the notebook defines",
    ),
    "a torch attribute set with setattr": (
        "import torch\ndef soft_lookup(q, k, v):\n    return torch.lookup(q, k, v)",
        "import torch\nfrom attnlab.attention import attend\n"
        "setattr(torch, 'look' + 'up', attend)",
        "uses `torch.lookup`, which no cell of the notebook defines",
    ),
    "eval": (
        "def soft_lookup(q, k, v):\n    return eval('attend')(q, k, v)",
        None,
        "uses `eval`, which reaches past the code the notebook shows",
    ),
    "importlib": (
        "import importlib\n"
        "def soft_lookup(q, k, v):\n"
        "    return importlib.import_module('attnlab.attention').attend(q, k, v)",
        None,
        "which reaches past the code the notebook shows",
    ),
    "a computed getattr": (
        "import attnlab.attention as A\n"
        "def soft_lookup(q, k, v):\n    return getattr(A, 'att' + 'end')(q, k, v)",
        None,
        "uses `getattr` with a computed name",
    ),
    "the profiler switched off alone": (
        "import sys\ndef soft_lookup(q, k, v):\n    sys.setprofile(None)\n    return q",
        None,
        "uses `.setprofile`",
    ),
    "sys.modules": (
        "import sys\n"
        "def soft_lookup(q, k, v):\n"
        "    return sys.modules['attnlab.attention'].attend(q, k, v)",
        None,
        "uses `sys.modules`",
    ),
}


@pytest.mark.parametrize(
    "answer, before, says", DELEGATING.values(), ids=list(DELEGATING)
)
def test_the_library_reached_in_any_way_is_refused(chapter_1, answer, before, says):
    found = lookup_answer(chapter_1, answer, before)
    assert found is not None and says in found.message
    assert found.message.startswith("soft_lookup ")
    library = "the library's own version"
    kind = library if library in says else "cannot read"
    assert kind in found.note and found.note.endswith(f"{LOOKUP}-check")


def test_an_answer_the_check_is_not_handed_is_not_read(chapter_1):
    """Reading starts from what the check cell hands its checks."""
    nb = copy.deepcopy(chapter_1)
    nb.cells.append(nbformat.v4.new_code_cell("def unused():\n    return eval('1')"))
    assert findings(nb) == {}


def test_the_check_cell_is_read_with_its_hidden_tests(chapter_1):
    """Grading puts hidden tests into every check cell: the cell is still read."""
    nb = copy.deepcopy(chapter_1)
    check = nb.cells[EXERCISE.check]
    check.source = (
        hidden_tests(check.source, f"{LOOKUP}-check") + "\n" + check.source
    )
    nb.cells[EXERCISE.answer].source = (
        "from attnlab.attention import attend\n"
        "def soft_lookup(q, k, v):\n    return attend(q, k, v)"
    )
    assert LIBRARY in findings(nb)[f"{LOOKUP}-check"].message


def test_a_decorated_method_reached_through_its_class_is_refused():
    """Chapter 11's greedy decoding is a method under `@torch.no_grad()`: the
    class's methods are compared unwrapped, as the check names them."""
    path = next(p for p in NOTEBOOKS if p.name.startswith("11_"))
    source = nbformat.read(path, as_version=4)
    exercise = next(
        e for e in exercises(source) if e.label == "ex-pointer-greedy-mask"
    )
    nb = solved(path)
    nb.cells[exercise.answer].source += (
        "\nfrom attnlab.pointer import PointerNet as _library\n"
        "def fixed_greedy(*args, **kwargs):\n"
        "    return _library.greedy(*args, **kwargs)\n"
    )
    found = findings(nb, student_version(source))["ex-pointer-greedy-mask-check"]
    assert "calls `attnlab.pointer.PointerNet.greedy`" in found.message


@pytest.mark.parametrize("source", [
    "from attnlab.teaching.channel import serve",
    "import attnlab.teaching.verdicts as v",
    "from attnlab import teaching",
    "import os\npath = os.environ['ATTNLAB_GRADER_SOCKET']",
    "import sys\nsys.meta_path.insert(0, object())",
    "import importlib\nm = importlib.import_module('attnlab.' + 'teaching.channel')",
])
def test_a_notebook_that_reaches_for_the_grader_earns_no_check(source):
    from attnlab.teaching.delegation import reaches_grader

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1"), nbformat.v4.new_code_cell(source)])
    assert reaches_grader(nb) == "cell 1"


def test_a_notebook_that_names_nothing_of_the_grader_is_read_as_usual():
    from attnlab.teaching.delegation import reaches_grader

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "import attnlab.attention as a\nimport os\nprint(os.environ.get('HOME'), 'teaching')")])
    assert reaches_grader(nb) is None
