"""The grader: a clean process that reaches the verdict of every graded check
(homework grading).

    python -m attnlab.teaching.verdicts SOCKET PLAN VERDICTS CONTROL

``python -m attnlab.grading`` starts one for each submission before nbgrader runs
the notebook: a fork of a process of its own that has imported torch and the checks
once (:func:`zygote`), so that a grader starts in milliseconds. It listens on the
Unix socket ``SOCKET``; the hidden tests of each check cell
(:func:`attnlab.teaching.channel.serve`) connect, hand over the notebook's
functions, and answer the grader's calls of them through the channel of plain data.
The checks, their fresh inputs, their references and their comparisons run here,
where nothing the notebook patches (torch, NumPy, builtins, the import system,
``attnlab``) or inspects (frames, profilers) can reach them. ``PLAN`` (JSON) maps
the grade id of every check cell graded here to the names of its checks, as the
release has them; the verdicts are written to ``VERDICTS`` (JSON) after each cell:
``{grade_id: {"passed": bool, "message": str | None, "output": str, "complete":
bool}}``. A check cell whose tests never connect, or whose channel breaks, has no
passing verdict and earns nothing.

The grader holds the plan, and the grading process holds the sessions: the grader
hears a check cell only while nbgrader executes that very cell, which the grading
process announces on a control socket of its own that no notebook can reach
(:func:`session`, used by :class:`attnlab.teaching.execute.ExecuteEachCell`). Each
session takes one connection, naming that cell; a connection outside a session, one
naming another cell and a second one in the same session are refused and noted
(:attr:`Verdicts.refused`), so a notebook that finds the grader's socket (its path
is in the kernel's environment) can neither speak for a cell that has not run nor
speak twice for one.

A model a check builds for the answer to work on crosses to the notebook pickled
(the notebook trusts its grader; the grader never reads a pickle). A model class of
the notebook's own is stood in for here (:class:`Notebook`): a class of the same
library bases whose methods run in the notebook, on the weights held here. The
checks listed in :data:`attnlab.teaching.channel.IN_NOTEBOOK` are handed what the
channel cannot carry (a SoftDict); they still run in the notebook, verified by
:func:`attnlab.exercises._integrity.graded`.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import functools
import io
import itertools
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from attnlab.exercises._checking import ExerciseError, RemoteAnswer, _active, tensors
from attnlab.teaching.channel import (
    SOCKET_VARIABLE,
    ChannelError,
    decode,
    encode,
    graded_here,
    graph_inputs,
    library_base,
    load_weights,
    model_weights,
    receive,
    replace_tensors,
    send,
)

if TYPE_CHECKING:
    import nbformat

NOT_RUN = (
    "the graded tests of this cell did not run to the end, so the exercise earns"
    " no points"
)


def check_calls(source: str) -> list[str]:
    """The names of the ``check_*`` functions that a check cell's ``source``
    calls, in order."""
    from attnlab.teaching.release import check_call_nodes  # see plan

    return [call.func.id for call in check_call_nodes(source)]


def plan(release: nbformat.NotebookNode) -> dict[str, list[str]]:
    """The check cells of the released notebook that the grader judges: grade id ->
    the names of the checks the cell calls."""
    # here, not at the top: the grader process never reads a notebook, and nbformat
    # (with jsonschema's grammars) would cost it seconds on every submission
    from attnlab.teaching.release import cell_grade_id, is_check_cell

    cells = {}
    for cell in release.cells:
        if is_check_cell(cell):
            names = check_calls(cell.source)
            if graded_here(names):
                cells[cell_grade_id(cell)] = names
    return cells


class ChannelBroken(BaseException):
    """The notebook stopped answering (a time-out, a crash) or sent what is not
    plain data: no verdict. A BaseException, so that no check reports it as a
    wrong answer."""


class Notebook:
    """The notebook at the other end of ``connection``: what it sends is decoded
    into stand-ins that call it back."""

    def __init__(self, connection: socket.socket) -> None:
        self.connection = connection
        self.calls = itertools.count(1)  # the number of each call, for its backward
        self.classes: dict[str, type] = {}

    def stand_in(self, index: int, *sent: Any) -> Any:
        """Stand-in for what :func:`~attnlab.teaching.channel.decode` found: a
        function (``parameters``), a class (``kind``) or a model (``kind,
        weights``)."""
        if len(sent) == 1 and type(sent[0]) is list:
            return NotebookFunction(self, {"function": index}, sent[0])
        kind = self.stand_in_class(sent[0])
        if len(sent) == 1:
            kind.maker = NotebookFunction(self, {"function": index}, [])
            return kind
        model = kind.__new__(kind)
        torch.nn.Module.__init__(model)
        model._notebook, model._index = self, index
        for name, value in sent[1]:
            leaf, *path = name.split(".")[::-1]
            module: torch.nn.Module = model
            for part in reversed(path):
                if part not in module._modules:
                    _add(module, part, torch.nn.Module())
                module = module._modules[part]
            parameter = torch.nn.Parameter(value, requires_grad=value.requires_grad)
            _add(module, leaf, parameter)
        return model

    def stand_in_class(self, kind: dict[str, Any]) -> type:
        """A class that stands in for the notebook's class ``kind``: one for each
        kind, deriving from the library bases it names."""
        key = json.dumps(kind, sort_keys=True)
        if key not in self.classes:
            bases = tuple(library_base(name) for name in kind["bases"])
            methods = {
                name: RemoteMethod(name)
                for name in kind["methods"]
                if name.isidentifier()
                and not name.startswith("_")
                and (name == "forward" or not hasattr(NotebookModule, name))
            }
            try:
                self.classes[key] = NotebookClass(
                    kind["name"] or "Model", (NotebookModule, *bases), methods
                )
            except TypeError as exc:
                raise ChannelError(
                    f"a class that cannot be graded ({exc})"
                ) from None
        return self.classes[key]

    def exchange(self, request: dict) -> dict:
        """Send ``request``; the notebook's reply (an
        :class:`~attnlab.exercises.ExerciseError` if it reports a failure)."""
        try:
            send(self.connection, request)
            reply = receive(self.connection)
        except (ChannelError, OSError) as exc:
            raise ChannelBroken(str(exc)) from None
        if type(reply) is dict and type(reply.get("failed")) is str:
            error = ExerciseError(reply["failed"])
            if type(reply.get("raised")) is str:
                error.raised = reply["raised"]
            raise error
        if type(reply) is dict and ("value" in reply or "grads" in reply):
            return reply
        raise ChannelBroken("the notebook sent a reply the grader cannot read")


def _add(module: torch.nn.Module, name: str, value: Any) -> None:
    """Register the submodule or parameter ``value`` of a stand-in model."""
    if not (name.isidentifier() or name.isdigit()) or hasattr(module, name):
        raise ChannelError(f"a model with a part named {name!r} cannot be graded")
    if isinstance(value, torch.nn.Parameter):
        module.register_parameter(name, value)
    else:
        module.add_module(name, value)


class NotebookFunction(RemoteAnswer):
    """A function of the notebook, a class of its own or a method of one of its
    models (``target``: which), called through the channel."""

    def __init__(
        self,
        notebook: Notebook,
        target: dict[str, Any],
        params: list[str],
        model: NotebookModule | None = None,
    ) -> None:
        self.notebook, self.target, self.model = notebook, target, model
        self.__name__ = "your function"
        self.__signature__ = _signature(params)

    def call_remote(self, name: str, args: tuple, kwargs: dict) -> Any:
        info = _active.get()
        call = next(self.notebook.calls)
        request = {
            **self.target,
            "id": call,
            "check": info.name if info is not None else "",
            "name": name,
            "args": encode(list(args), objects=True),
            "kwargs": encode(dict(kwargs), objects=True),
        }
        model = self.model
        if model is not None:
            request["weights"] = encode(model_weights(model))
        reply = self.notebook.exchange(request)
        try:
            value = decode(reply["value"], self.notebook.stand_in)
            if model is not None:
                load_weights(model, decode(reply.get("weights")), whole=True)
        except ChannelError as exc:
            raise ChannelBroken(str(exc)) from None
        # outputs that carry a gradient: connected to the inputs that require one
        # (the model's weights among them), their backward pass computed by the
        # notebook
        inputs = graph_inputs((model, args, kwargs))
        outputs = [t for t in tensors(value) if t.requires_grad]
        if not (inputs and outputs):
            return value
        linked = Backward.apply(self.notebook, call, len(outputs), *outputs, *inputs)
        return replace_tensors(
            value, dict(zip(map(id, outputs), linked, strict=True))
        )


class NotebookClass(type):
    """The type of a stand-in for a model class of the notebook's own: calling it
    builds the model in the notebook."""

    maker: NotebookFunction

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        return cls.maker.call_remote(cls.__name__, args, kwargs)


class NotebookModule(RemoteAnswer, torch.nn.Module):
    """A model of a class of the notebook's own: its weights held here, where the
    check reads and changes them; each of its methods runs in the notebook, on
    them."""

    _notebook: Notebook
    _index: int

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.forward(*args, **kwargs)

    def call_remote(self, name: str, args: tuple, kwargs: dict) -> Any:
        forward = self.forward
        if isinstance(forward, RemoteAnswer):
            return forward.call_remote(name, args, kwargs)
        return forward(*args, **kwargs)


class RemoteMethod:
    """A method of a stand-in model, which runs in the notebook."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(
        self, model: NotebookModule | None, owner: type | None = None
    ) -> Any:
        if model is None:
            return self
        target = {"model": model._index, "method": self.name}
        bound = NotebookFunction(model._notebook, target, [], model)
        bound.__name__ = f"{type(model).__name__}.{self.name}"
        return bound


class Backward(torch.autograd.Function):
    """Outputs of a call in the notebook, whose gradients with respect to the
    call's inputs the notebook computes."""

    @staticmethod
    def forward(ctx, notebook, call, n_outputs, *tensors):
        ctx.notebook, ctx.call, ctx.n_outputs = notebook, call, n_outputs
        ctx.n_inputs = len(tensors) - n_outputs
        return tuple(t.detach().clone() for t in tensors[:n_outputs])

    @staticmethod
    def backward(ctx, *grads):
        request = {"backward": ctx.call, "grads": encode(list(grads))}
        try:
            given = decode(ctx.notebook.exchange(request)["grads"])
        except ChannelError as exc:
            raise ChannelBroken(str(exc)) from None
        if not (type(given) is list and len(given) == ctx.n_inputs):
            raise ChannelBroken("the notebook sent gradients that do not fit")
        return (None, None, None, *[None] * ctx.n_outputs, *given)


def _signature(params: list[str]):
    import inspect

    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    valid = [p for p in params if p.isidentifier()]
    return inspect.Signature([inspect.Parameter(p, kind) for p in valid])


def judge(
    connection: socket.socket, plan: dict[str, list[str]], hello: Any
) -> tuple[str, dict]:
    """Grade the check cell that connected on ``connection`` and said ``hello``: its
    grade id and its verdict."""
    import attnlab.exercises as exercises

    cell = hello.get("cell") if type(hello) is dict else None
    if type(cell) is not str or cell not in plan:
        return "", {}
    verdict = {"passed": False, "message": NOT_RUN, "output": "", "complete": False}
    output = io.StringIO()
    try:
        calls = hello["calls"]
        names = [call[0] for call in calls]
        if names != plan[cell]:
            raise ExerciseError(
                "the check cell was changed: it must call "
                + ", ".join(plan[cell])
                + " as the assignment has it"
            )
        if hello.get("tampered"):
            raise ExerciseError(str(hello["tampered"]))
        notebook = Notebook(connection)
        for name, args, kwargs in calls:
            args = decode(args, notebook.stand_in)
            kwargs = decode(kwargs, notebook.stand_in)
            kwargs = {k: v for k, v in kwargs.items() if k != "seed"}
            with contextlib.redirect_stdout(output):
                getattr(exercises, name)(*args, seed=None, **kwargs)
        verdict.update(passed=True, message=None)
    except ExerciseError as exc:
        verdict["message"] = str(exc)
    except (ChannelBroken, OSError, KeyError, TypeError, ValueError):
        return cell, verdict  # the notebook stopped or sent what is not plain data
    verdict.update(output=output.getvalue(), complete=True)
    return cell, verdict


HELLO_SECONDS = 60  # how long a connection in a session may take to name its cell
OUTSIDE = "a connection to the grader outside the run of a check cell was refused"


def _refusal(open_cell: str | None, named: Any, done: set[str]) -> str | None:
    """Why a connection that named ``named`` is refused while ``open_cell`` runs
    (``done``: the cells already heard), or None if it is that cell's."""
    if open_cell is None:
        return OUTSIDE
    if open_cell in done:
        return f"a second connection to the grader during {open_cell} was refused"
    if named != open_cell:
        return f"a connection naming another cell during {open_cell} was refused"
    return None


def serve(
    path: Path,
    plan: dict[str, list[str]],
    out: Path,
    control: Path,
    ready: Callable[[], None] | None = None,
) -> None:
    """Listen on the Unix socket ``path`` for the notebook and on ``control`` for
    the grading process, which connects once and then opens (``{"open": grade
    id}``, answered ``{"opened": grade id}``) and closes (``{"close": grade id}``)
    the session of each check cell it executes; ``{"restart": true}`` after the
    notebook was started again in a new kernel, whose cells are each heard again.
    The connection of an open session is judged; every other is refused and noted.
    All verdicts and refusals so far are written to ``out`` after each. ``ready``
    is called once both listen; the grader ends when the grading process closes its
    control connection."""
    import selectors

    torch.set_num_threads(1)
    verdicts: dict[str, dict] = {}
    refused: list[str] = []
    open_cell: str | None = None
    done: set[str] = set()

    def write() -> None:
        partial = out.with_suffix(".partial")
        partial.write_text(json.dumps({"verdicts": verdicts, "refused": refused}))
        os.replace(partial, out)  # written before the notebook goes on

    with (
        socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server,
        socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as controls,
    ):
        server.bind(str(path))
        server.listen()
        controls.bind(str(control))
        controls.listen(1)
        if ready is not None:
            ready()
        grading, _ = controls.accept()
        with grading, selectors.DefaultSelector() as selector:
            selector.register(grading, selectors.EVENT_READ)
            selector.register(server, selectors.EVENT_READ)
            while True:
                for key, _ in selector.select():
                    if key.fileobj is grading:
                        try:
                            message = receive(grading)
                        except (ChannelError, OSError):
                            return  # the grading process is done
                        if "open" in message:
                            open_cell = str(message["open"])
                            send(grading, {"opened": open_cell})
                        elif "close" in message and message["close"] == open_cell:
                            open_cell = None
                        elif "restart" in message:
                            done.clear()
                        continue
                    connection, _ = server.accept()
                    with connection:
                        cell, verdict, why = _hear(connection, plan, open_cell, done)
                        if why is not None:
                            refused.append(why)
                        elif cell:
                            verdicts[cell] = verdict
                        write()
                        if cell and verdict["complete"]:
                            with contextlib.suppress(ChannelError, OSError):
                                send(connection, {"verdict": verdict["message"]})


def _hear(
    connection: socket.socket,
    plan: dict[str, list[str]],
    open_cell: str | None,
    done: set[str],
) -> tuple[str, dict, str | None]:
    """One connection of the notebook while ``open_cell`` runs (``done``: the cells
    heard already): the cell judged and its verdict, or why it was refused."""
    try:
        hello = None
        if open_cell is not None:
            connection.settimeout(HELLO_SECONDS)
            hello = receive(connection)
            connection.settimeout(None)
        named = hello.get("cell") if type(hello) is dict else None
        if (why := _refusal(open_cell, named, done)) is not None:
            return "", {}, why
        done.add(open_cell)
        return (*judge(connection, plan, hello), None)
    except Exception:  # noqa: BLE001 - nothing a notebook sends stops the grader
        return "", {}, None


def _quiet() -> None:
    """Nothing this process prints reaches a terminal or a pipe: standard input,
    output and error are the null device."""
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
    sys.stdin = open(os.devnull)  # noqa: SIM115
    sys.stdout = sys.stderr = open(os.devnull, "w")  # noqa: SIM115


def zygote() -> None:
    """Start graders on request, each a fork of this process, which has imported
    torch and the checks once (a grader started afresh imports them in seconds).

    Reads one JSON line per request from standard input and answers one on
    standard output: ``{"socket", "control", "plan", "out", "cwd", "environment"}``
    forks a
    grader (:func:`serve`) and answers ``{"pid"}`` once it listens (``{"pid":
    null}`` if it died first); ``{"stop": pid}`` kills that grader and answers once
    it has ended.
    Ends, and its graders with it, when standard input closes (the grading process
    ended)."""
    requests, answers = sys.stdin, sys.stdout
    graders: set[int] = set()
    for line in requests:
        request = json.loads(line)
        if "stop" in request:
            pid = request["stop"]
            if pid in graders:
                graders.discard(pid)
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            answer: dict[str, Any] = {"stopped": pid}
        else:
            listening, told = os.pipe()
            pid = os.fork()
            if pid == 0:  # the grader
                os.close(listening)
                try:
                    _quiet()
                    os.environ.clear()  # as if started now, from this process
                    os.environ.update(request["environment"])
                    os.chdir(request["cwd"])
                    plan = json.loads(Path(request["plan"]).read_text())
                    serve(
                        Path(request["socket"]),
                        plan,
                        Path(request["out"]),
                        Path(request["control"]),
                        ready=functools.partial(os.close, told),
                    )
                finally:
                    os._exit(1)
            os.close(told)
            with os.fdopen(listening, "rb") as pipe:
                pipe.read()  # returns once the grader listens (or ended)
            graders.add(pid)
            started = Path(request["socket"]).exists()
            answer = {"pid": pid if started else None}
        answers.write(json.dumps(answer) + "\n")
        answers.flush()
    for pid in graders:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)


class _Zygote:
    """This process's :func:`zygote`, started on first use (again if it ended)."""

    process: subprocess.Popen | None = None
    owner = 0  # the pid of the process that started it
    lock = threading.Lock()

    @classmethod
    def ask(cls, request: dict[str, Any]) -> dict[str, Any]:
        with cls.lock:
            stale = cls.process is None or cls.owner != os.getpid()
            if stale or cls.process.poll() is not None:
                cls.process = subprocess.Popen(
                    [sys.executable, "-I", "-m", __name__, "--zygote"],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                    text=True,
                )
                cls.owner = os.getpid()
                atexit.register(cls.close, cls.process)
            assert cls.process.stdin is not None and cls.process.stdout is not None
            try:
                cls.process.stdin.write(json.dumps(request) + "\n")
                cls.process.stdin.flush()
                answer = cls.process.stdout.readline()
            except OSError:
                answer = ""
            if not answer:
                cls.process.kill()
                cls.process.wait()
                raise RuntimeError("the grader process did not start")
            return json.loads(answer)

    @staticmethod
    def close(process: subprocess.Popen) -> None:
        """End ``process`` as the grading process ends: its graders end with it."""
        if process.stdin is not None:
            with contextlib.suppress(OSError):
                process.stdin.close()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


class Verdicts(dict):
    """The verdicts of one submission (grade id -> verdict), and the connections to
    the grader that were refused (:attr:`refused`, notes for the instructor)."""

    refused: list[str]


class _Sessions:
    """The control connection of this process's running grader, if one runs, with
    what the release says: the plan and the answers' stubs."""

    connection: socket.socket | None = None
    plan: dict[str, list[str]] = {}
    stubs: dict[str, str] = {}


def released_stub(grade_id: str) -> str | None:
    """The source the release gives the answer cell ``grade_id`` (None: not an
    answer cell, or no grader runs)."""
    return _Sessions.stubs.get(grade_id) if _Sessions.connection else None


def restarted() -> None:
    """Tell the running grader that the notebook runs again from its start in a new
    kernel: each check cell may be heard once more."""
    if _Sessions.connection is not None:
        send(_Sessions.connection, {"restart": True})


def graded_cells() -> dict[str, list[str]]:
    """The plan of the grader running in this process (empty if none runs)."""
    return _Sessions.plan if _Sessions.connection is not None else {}


@contextlib.contextmanager
def session(cell: str) -> Iterator[None]:
    """The grader hears the check cell ``cell`` (one connection) while the block
    runs: the grading process wraps the execution of that cell in it."""
    connection = _Sessions.connection
    if connection is None:
        raise RuntimeError("no grader runs in this process")
    send(connection, {"open": cell})
    if receive(connection) != {"opened": cell}:
        raise RuntimeError(f"the grader did not open the session of {cell}")
    try:
        yield
    finally:
        send(connection, {"close": cell})


@contextlib.contextmanager
def grader(
    folder: Path | None,
    cells: dict[str, list[str]],
    stubs: dict[str, str] | None = None,
) -> Iterator[Verdicts]:
    """Run the grader for one submission while the block runs; the hidden tests
    find its socket, in ``folder`` (default: a new folder), by
    :data:`~attnlab.teaching.channel.SOCKET_VARIABLE`, and are heard only inside
    :func:`session`. ``stubs``: the release's source of each answer cell, which
    replaces an answer that never stops (:func:`released_stub`). Yields the
    verdicts (grade id -> verdict, and the refusals), filled when the block ends."""
    private = Path(tempfile.mkdtemp(prefix="attnlab-grader-"))
    folder = folder or private
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"grader-{secrets.token_hex(4)}"
    control = private / "control"  # in no folder a notebook can reach
    plan_path, out = private / "plan.json", private / "verdicts.json"
    plan_path.write_text(json.dumps(cells))
    previous = os.environ.get(SOCKET_VARIABLE)
    verdicts = Verdicts()
    verdicts.refused = []
    pid = None
    try:
        request = {
            "socket": path,
            "control": control,
            "plan": plan_path,
            "out": out,
            "cwd": private,
        }
        request = {k: str(v) for k, v in request.items()}
        pid = _Zygote.ask({**request, "environment": dict(os.environ)})["pid"]
        if pid is None:
            raise RuntimeError("the grader process did not start")
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        connection.connect(str(control))
        _Sessions.connection, _Sessions.plan = connection, cells
        _Sessions.stubs = dict(stubs or {})
        os.environ[SOCKET_VARIABLE] = str(path)
        yield verdicts
    finally:
        if previous is None:
            os.environ.pop(SOCKET_VARIABLE, None)
        else:
            os.environ[SOCKET_VARIABLE] = previous
        if _Sessions.connection is not None:
            _Sessions.connection.close()
            _Sessions.connection, _Sessions.plan, _Sessions.stubs = None, {}, {}
        if pid is not None:
            _Zygote.ask({"stop": pid})
        if out.exists():
            written = json.loads(out.read_text())
            verdicts.update(written["verdicts"])
            verdicts.refused += written["refused"]
        path.unlink(missing_ok=True)
        shutil.rmtree(private, ignore_errors=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m attnlab.teaching.verdicts",
        description=__doc__.splitlines()[0],
    )
    parser.add_argument("--zygote", action="store_true", help=zygote.__doc__)
    parser.add_argument("socket", type=Path, nargs="?")
    parser.add_argument("plan", type=Path, nargs="?")
    parser.add_argument("verdicts", type=Path, nargs="?")
    parser.add_argument("control", type=Path, nargs="?")
    args = parser.parse_args(argv)
    if args.zygote:
        zygote()
        return
    if args.control is None:
        parser.error("give SOCKET PLAN VERDICTS CONTROL, or --zygote")
    # nothing a check prints outside a cell's verdict reaches a terminal
    sys.stdout = sys.stderr = open(os.devnull, "w")  # noqa: SIM115
    plan = json.loads(args.plan.read_text())
    serve(args.socket, plan, args.verdicts, args.control)


if __name__ == "__main__":
    main()
