"""The narrow channel between a student's notebook and the grader (homework
grading).

The graded hidden tests of a check cell do not judge the answer in the student's
Python process, where the notebook could have patched torch, the checks or the
import system. They call :func:`serve`, which connects to the grader
(:mod:`attnlab.teaching.verdicts`, a separate, clean process) through a Unix socket
and then only answers its requests: "call your function number ``i`` with these
inputs", sending back what it returned. The inputs are drawn, the references
computed and the verdict reached in the grader.

Only plain data crosses from the notebook: ``None``, booleans, numbers, strings,
lists, tuples, dictionaries with number or string keys, and tensors and NumPy arrays
as their raw numbers (dtype, shape, bytes); a function of the notebook travels as a
number that names it. A model or a record of the library (a trained network, a
batch, a training history) crosses in torch's weights-only format, which the grader
reads with torch's restricted loader: tensors, plain values and the library's own
classes (whose code is the grader's), no hooks, no attribute that hides a method. A
model class of the notebook's own crosses as a number that names it, and a model of
such a class as that number and its weights: the grader stands in for them and calls
the notebook for each of their methods. No pickle, no object of the notebook's own
classes: whatever the notebook sends, the grader decodes it into new values
(:func:`decode`). The other way, an input the
grader built that is not plain data (a model with the check's weights) travels
pickled: the notebook trusts its grader, never the reverse. Each message is one JSON
document after its length (4 bytes, big-endian).
"""

from __future__ import annotations

import base64
import dataclasses
import importlib
import inspect
import io
import json
import os
import pickle
import socket
import struct
import sys
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch

SOCKET_VARIABLE = "ATTNLAB_GRADER_SOCKET"  # where the grader listens, if it does
MOST_BYTES = 256 * 2**20  # the largest message either side accepts
KEYS = (int, float, str)  # the keys a dictionary sent may have
SCORES = "attnlab.attention"  # its functions (pure tensor maths) a model may hold
DTYPES = {
    "float16": (torch.float16, np.float16),
    "bfloat16": (torch.bfloat16, None),
    "float32": (torch.float32, np.float32),
    "float64": (torch.float64, np.float64),
    "int8": (torch.int8, np.int8),
    "int16": (torch.int16, np.int16),
    "int32": (torch.int32, np.int32),
    "int64": (torch.int64, np.int64),
    "uint8": (torch.uint8, np.uint8),
    "bool": (torch.bool, np.bool_),
}


# checks handed what the notebook built that is neither plain data, nor a model
# or record of the library, nor a model class of the notebook's own (a SoftDict)
IN_NOTEBOOK = frozenset({"check_query_training"})


def graded_here(names: list[str]) -> bool:
    """Whether a check cell calling the checks ``names`` is judged by the grader
    (else in the notebook)."""
    return bool(names) and not IN_NOTEBOOK.intersection(names)


ENDED = "the grader ended the graded tests of this cell without a verdict"


class ChannelError(ValueError):
    """A message that is not plain data, or a channel that broke."""


# --- plain data ---


def encode(
    value: Any,
    functions: list[Any] | None = None,
    objects: bool = False,
    models: list[Any] | None = None,
) -> Any:
    """``value`` as JSON-ready plain data. A function or a model class of the
    notebook's own (:func:`notebook_class`) is added to ``functions`` and sent as its
    index there (with its parameters' names, or what :func:`class_kind` says);
    without ``functions``, it is refused. A model of such a class is added to
    ``models`` and sent as its index and its parameters. With ``objects`` (the
    grader's side only), anything else is sent pickled; without, it raises
    :class:`ChannelError`."""
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int | float) and not isinstance(value, np.generic):
        return value if type(value) in (int, float) else _number(value)
    if isinstance(value, torch.Tensor):
        with torch._C.DisableTorchFunctionSubclass():  # a subclass sends its numbers
            grad = bool(value.requires_grad)
            tensor = value.detach().to("cpu").contiguous().as_subclass(torch.Tensor)
        name = str(tensor.dtype).removeprefix("torch.")
        if name not in DTYPES or tensor.is_complex():
            raise ChannelError(f"a tensor of dtype {name} cannot be sent")
        raw = tensor.view(torch.int16) if name == "bfloat16" else tensor
        data = raw.numpy().tobytes()
        text = base64.b64encode(data).decode()
        return {"$tensor": [name, list(tensor.shape), text, grad]}
    if isinstance(value, torch.Generator):
        return {"$generator": encode(value.get_state())}
    if isinstance(value, np.ndarray | np.generic):
        array = np.asarray(value)
        name = array.dtype.name
        if name not in DTYPES or DTYPES[name][1] is None:
            raise ChannelError(f"an array of dtype {name} cannot be sent")
        data = base64.b64encode(array.tobytes(order="C")).decode()
        key = "$array" if isinstance(value, np.ndarray) else "$scalar"
        return {key: [name, list(array.shape), data]}
    if models is not None and notebook_class(type(value)):
        models.append(value)
        weights = encode(model_weights(value))
        return {"$model": [len(models) - 1, class_kind(type(value)), weights]}
    if functions is not None and notebook_class(value):
        functions.append(value)
        return {"$class": [len(functions) - 1, class_kind(value)]}
    if not objects and library_class(type(value)):
        buffer = io.BytesIO()
        torch.save(value, buffer)
        return {"$torch": base64.b64encode(buffer.getvalue()).decode()}
    if isinstance(value, list | tuple | torch.Size):
        items = [encode(item, functions, objects, models) for item in value]
        return items if type(value) is list else {"$tuple": items}
    if isinstance(value, dict):
        if all(type(key) is str for key in value):
            return {
                "$dict": {
                    k: encode(v, functions, objects, models)
                    for k, v in value.items()
                }
            }
        if not all(type(key) in KEYS for key in value):
            raise ChannelError(
                "only dictionaries with number or string keys can be sent"
            )
        return {
            "$items": [
                [key, encode(item, functions, objects, models)]
                for key, item in value.items()
            ]
        }
    if callable(value) and not inspect.isclass(value) and functions is not None:
        functions.append(value)
        return {"$function": [len(functions) - 1, _parameters(value)]}
    if objects:
        try:
            return {"$object": base64.b64encode(pickle.dumps(value)).decode()}
        except (pickle.PicklingError, AttributeError, TypeError) as exc:
            raise ChannelError(f"a {type(value).__name__} cannot be sent") from exc
    raise ChannelError(f"a {type(value).__name__} cannot be sent")


def _number(value: int | float) -> int | float:
    """A subclass of int or float (an enum, a bool-like) as the plain number."""
    return int(value) if isinstance(value, int) else float(value)


def _parameters(fn: Callable) -> list[str]:
    try:
        return [
            p.name
            for p in inspect.signature(fn).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
    except (TypeError, ValueError):
        return []


def decode(
    data: Any,
    function: Callable[..., Any] | None = None,
    objects: bool = False,
) -> Any:
    """The plain values that :func:`encode` sent, made afresh. ``function(index,
    parameters)`` stands in for a sent function, ``function(index, kind)`` for a
    sent class and ``function(index, kind, weights)`` for a sent model (each refused
    without it); a pickled object is refused unless ``objects`` (the notebook,
    reading its grader)."""
    if data is None or type(data) in (bool, int, float, str):
        return data
    if type(data) is list:
        return [decode(item, function, objects) for item in data]
    if type(data) is not dict or len(data) != 1:
        raise ChannelError(f"not plain data: {type(data).__name__}")
    ((key, body),) = data.items()
    if key in ("$tensor", "$array", "$scalar"):
        return _decode_numbers(key, body)
    if key == "$generator":
        state = decode(body)
        if not (type(state) is torch.Tensor and state.dtype == torch.uint8):
            raise ChannelError("a malformed generator")
        generator = torch.Generator()
        try:
            generator.set_state(state)
        except RuntimeError:
            raise ChannelError("a malformed generator") from None
        return generator
    if key == "$tuple" and type(body) is list:
        return tuple(decode(item, function, objects) for item in body)
    if key == "$items" and type(body) is list:
        pairs = [
            (pair[0], pair[1])
            for pair in body
            if type(pair) is list and len(pair) == 2
        ]
        if len(pairs) != len(body) or not all(type(k) in KEYS for k, _ in pairs):
            raise ChannelError("a malformed dictionary")
        return {k: decode(v, function, objects) for k, v in pairs}
    if key == "$dict" and type(body) is dict:
        return {str(k): decode(v, function, objects) for k, v in body.items()}
    if key == "$torch" and type(body) is str:
        return _loaded(base64.b64decode(body, validate=True))
    if key == "$object" and objects and type(body) is str:
        return pickle.loads(base64.b64decode(body, validate=True))
    if key == "$function" and function is not None and _is_function(body):
        return function(body[0], [str(name) for name in body[1]])
    if key == "$class" and function is not None and _is_handle(body, 2):
        return function(body[0], _kind(body[1]))
    if key == "$model" and function is not None and _is_handle(body, 3):
        weights = decode(body[2])
        if not (
            type(weights) is list
            and all(_is_weight(pair) for pair in weights)
            and len({name for name, _ in weights}) == len(weights)
        ):
            raise ChannelError("a malformed model")
        return function(body[0], _kind(body[1]), weights)
    raise ChannelError(f"not plain data: {key!r}")


def notebook_class(kind: Any) -> bool:
    """Whether ``kind`` is a model class of the notebook's own (an ``nn.Module``
    outside the library): its code runs in the notebook only, so the grader stands in
    for it, calling the notebook for each of its methods."""
    return (
        isinstance(kind, type)
        and issubclass(kind, torch.nn.Module)
        and not library_class(kind)
    )


def class_kind(kind: type) -> dict[str, Any]:
    """What the grader needs to stand in for the notebook's model class ``kind``:
    its name, the library classes it derives from (the closest ones), and the names
    of its methods, its library bases' included (``nn.Module``'s own excluded)."""
    bases: list[type] = []
    for base in kind.__mro__:
        if library_class(base) and not any(issubclass(b, base) for b in bases):
            bases.append(base)
    methods = {
        name
        for base in kind.__mro__
        if issubclass(base, torch.nn.Module)
        and not base.__module__.startswith("torch.")
        for name, attribute in vars(base).items()
        if inspect.isfunction(attribute)
        and (name == "forward" or not name.startswith("_"))
    }
    return {
        "name": kind.__name__,
        "bases": [f"{base.__module__}.{base.__qualname__}" for base in bases],
        "methods": sorted(methods),
    }


def library_base(name: str) -> type:
    """The library's model class called ``name`` (module and qualified name):
    :func:`library_global`."""
    kind = library_global(name)
    if not (
        isinstance(kind, type)
        and issubclass(kind, torch.nn.Module)
        and library_class(kind)
    ):
        raise ChannelError(f"a class derived from {name} cannot be graded")
    return kind


def _kind(body: Any) -> dict[str, Any]:
    fields = {"name": str, "bases": list, "methods": list}
    if not (type(body) is dict and set(body) == set(fields)):
        raise ChannelError("a malformed class")
    if not all(type(body[k]) is kind for k, kind in fields.items()) or not all(
        type(item) is str for item in body["bases"] + body["methods"]
    ):
        raise ChannelError("a malformed class")
    return body


def _is_handle(body: Any, size: int) -> bool:
    return type(body) is list and len(body) == size and type(body[0]) is int


def _is_weight(pair: Any) -> bool:
    return (
        type(pair) is list
        and len(pair) == 2
        and type(pair[0]) is str
        and type(pair[1]) is torch.Tensor
        and pair[1].is_floating_point()
    )


def library_class(kind: type) -> bool:
    """Whether objects of class ``kind`` cross in torch's weights-only format: a
    module of torch.nn or of the library, or a dataclass or named tuple of the
    library (not of its checks or its grading)."""
    module = getattr(kind, "__module__", None) or ""
    ours = module.startswith("attnlab.") and not module.startswith(
        ("attnlab.exercises", "attnlab.teaching")
    )
    if isinstance(kind, type) and issubclass(kind, torch.nn.Module):
        return ours or module.startswith("torch.nn.modules.")
    named_tuple = isinstance(kind, type) and issubclass(kind, tuple)
    return ours and (
        dataclasses.is_dataclass(kind) or (named_tuple and hasattr(kind, "_fields"))
    )


def library_global(name: str) -> Any:
    """The object called ``name`` (module and name) in this process, the module
    imported first if it is one of the library's (its checks, its grading and its
    commands excepted); None if there is none."""
    module, _, qualname = name.rpartition(".")
    ours = (
        module.startswith("attnlab.")
        and not module.startswith(("attnlab.exercises", "attnlab.teaching"))
        and "__main__" not in module
    )
    if ours and module not in sys.modules:
        try:
            importlib.import_module(module)
        except ImportError:
            return None
    return getattr(sys.modules.get(module), qualname, None)


def _loaded(data: bytes) -> Any:
    """What :func:`encode` saved in torch's weights-only format, read with torch's
    restricted loader, which makes only tensors, plain values, the classes of
    :func:`library_class` (:func:`library_global`) and the score functions of
    :data:`SCORES`."""
    serialization = torch.serialization
    try:
        names = serialization.get_unsafe_globals_in_checkpoint(io.BytesIO(data))
    except Exception:  # not torch's format
        raise ChannelError("a malformed model") from None
    classes = []
    for name in names:
        kind = library_global(name)
        score = inspect.isfunction(kind) and kind.__module__ == SCORES
        if not (score or (isinstance(kind, type) and library_class(kind))):
            raise ChannelError(f"a {name} cannot be sent")
        classes.append(kind)
    try:
        with serialization.safe_globals(classes):
            value = torch.load(io.BytesIO(data), weights_only=True)
    except Exception as exc:
        raise ChannelError(f"a model that cannot be read ({exc})") from None
    _refuse_hidden_code(value)
    return value


def _refuse_hidden_code(value: Any) -> None:
    """Refuse a loaded model with a hook, or with an attribute of its own that
    stands in for one of its class's methods."""
    if isinstance(value, torch.nn.Module):
        for module in value.modules():
            for key, item in vars(module).items():
                hooks = key.endswith("hooks") and isinstance(item, dict) and item
                if hooks or callable(getattr(type(module), key, None)):
                    raise ChannelError(f"a model whose {key!r} was replaced")
    elif dataclasses.is_dataclass(value):
        for field in dataclasses.fields(value):
            _refuse_hidden_code(getattr(value, field.name))
    elif isinstance(value, list | tuple):
        for item in value:
            _refuse_hidden_code(item)
    elif isinstance(value, dict):
        for item in value.values():
            _refuse_hidden_code(item)


def _is_function(body: Any) -> bool:
    return (
        type(body) is list
        and len(body) == 2
        and type(body[0]) is int
        and type(body[1]) is list
    )


def _decode_numbers(key: str, body: Any) -> Any:
    sizes = (3, 4) if key == "$tensor" else (3,)
    if not (type(body) is list and len(body) in sizes and body[0] in DTYPES):
        raise ChannelError(f"a malformed {key}")
    name, shape, data = body[:3]
    grad = len(body) == 4 and body[3] is True
    if type(shape) is not list or not all(type(n) is int and n >= 0 for n in shape):
        raise ChannelError(f"a malformed shape {shape!r}")
    raw = base64.b64decode(str(data), validate=True)
    torch_dtype, numpy_dtype = DTYPES[name]
    storage = np.int16 if name == "bfloat16" else numpy_dtype
    if len(raw) != int(np.prod(shape)) * np.dtype(storage).itemsize:
        raise ChannelError(f"a {key} whose bytes do not fit its shape {shape}")
    array = np.frombuffer(raw, dtype=storage).reshape(shape).copy()
    if key == "$array":
        return array
    if key == "$scalar":
        return array[()]
    tensor = torch.from_numpy(array)
    tensor = tensor.view(torch_dtype) if name == "bfloat16" else tensor
    if grad and not tensor.is_floating_point():
        raise ChannelError(f"a {name} tensor cannot require a gradient")
    return tensor.requires_grad_(grad)


def graph_inputs(value: Any) -> list[torch.Tensor]:
    """The tensors in ``value`` that require a gradient, the parameters of the
    models in it included, in order: the inputs of a call's backward pass, found
    alike on both sides of the channel."""
    from attnlab.exercises._checking import tensors

    return [t for t in tensors(value, parameters=True) if t.requires_grad]


def replace_tensors(value: Any, new: dict[int, torch.Tensor]) -> Any:
    """``value`` with each tensor whose ``id`` is a key of ``new`` replaced."""
    if isinstance(value, torch.Tensor):
        return new.get(id(value), value)
    if isinstance(value, list | tuple):
        items = [replace_tensors(item, new) for item in value]
        return items if type(value) is list else tuple(items)
    if isinstance(value, dict):
        return {k: replace_tensors(v, new) for k, v in value.items()}
    return value


# --- messages ---


def send(connection: socket.socket, message: Any) -> None:
    """Send one JSON message, preceded by its length."""
    data = json.dumps(message).encode()
    if len(data) > MOST_BYTES:
        raise ChannelError(f"a message of {len(data)} bytes is too large")
    connection.sendall(struct.pack(">I", len(data)) + data)


def receive(connection: socket.socket) -> Any:
    """Receive one message; :class:`ChannelError` if the other side is gone."""
    (length,) = struct.unpack(">I", _exactly(connection, 4))
    if length > MOST_BYTES:
        raise ChannelError(f"a message of {length} bytes is too large")
    try:
        return json.loads(_exactly(connection, length))
    except ValueError:
        raise ChannelError("a message that is not JSON") from None


def _exactly(connection: socket.socket, size: int) -> bytes:
    chunks, left = [], size
    while left:
        chunk = connection.recv(min(left, 2**20))
        if not chunk:
            raise ChannelError("the other side closed the channel")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


# --- the notebook's side ---


def serve(cell: str, calls: Sequence[tuple[str, tuple, dict]]) -> None:
    """The graded hidden tests of check cell ``cell``: ``calls`` are its
    ``check_*`` calls as ``(name, args, kwargs)``.

    With a grader listening (:data:`SOCKET_VARIABLE`), hand it the arguments and
    answer its calls of the notebook's functions until it has its verdict, which is
    then shown (an :class:`~attnlab.exercises.ExerciseError` if the answer failed).
    Without one (nbgrader run by hand), run the checks here as before, through
    :func:`attnlab.exercises._integrity.graded`.
    """
    from attnlab.exercises._checking import CHECKS, ExerciseError
    from attnlab.exercises._integrity import graded, verify_integrity

    path = os.environ.get(SOCKET_VARIABLE)
    if not path or not graded_here([name for name, _, _ in calls]):
        if (note := _replaced()) is not None:
            raise ExerciseError(note)
        for name, args, kwargs in calls:
            graded(name, *args, **{**kwargs, "seed": None})
        return
    functions: list[Any] = []  # what the grader may call: functions and classes
    models: list[torch.nn.Module] = []  # models of the notebook's own classes
    try:
        verify_integrity()
        tampered = _replaced()
    except ExerciseError as exc:
        tampered = str(exc)
    sent = [
        [
            name,
            encode(list(args), functions, models=models),
            encode(dict(kwargs), functions, models=models),
        ]
        for name, args, kwargs in calls
    ]
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
        graphs: dict[int, tuple[list, list]] = {}
        try:
            connection.connect(path)
            send(connection, {"cell": cell, "calls": sent, "tampered": tampered})
            while "verdict" not in (request := receive(connection)):
                if "backward" in request:
                    send(connection, _backward(request, graphs))
                else:
                    reply = _answer(request, (functions, models), CHECKS, graphs)
                    send(connection, reply)
        except (ChannelError, OSError):  # the grader refused or ended the channel
            raise ExerciseError(ENDED) from None
    if request["verdict"] is not None:
        raise ExerciseError(request["verdict"])


# what a notebook would replace to sway checks run in its own process: each must
# still be a built-in, a method of a built-in type, or a function of its own package
WATCHED = (
    ("torch", ("allclose", "equal", "isclose")),
    ("torch.Tensor", ("allclose", "equal", "isclose", "__eq__")),
    ("math", ("isclose",)),
    ("numpy", ("allclose", "isclose", "array_equal")),
    ("sys", ("setprofile", "getprofile", "settrace", "gettrace")),
    ("builtins", ("isinstance", "callable", "getattr", "abs", "max")),
    ("importlib", ("import_module",)),
)


def _replaced() -> str | None:
    """The grader's note if the notebook replaced one of :data:`WATCHED`, else
    None."""
    import importlib
    import sys
    import types

    from attnlab.exercises._integrity import TAMPERED

    builtin = (
        types.BuiltinFunctionType,
        types.MethodDescriptorType,
        types.WrapperDescriptorType,
    )
    for owner, names in WATCHED:
        module, _, attribute = owner.partition(".")
        space = sys.modules.get(module) or importlib.import_module(module)
        space = getattr(space, attribute) if attribute else space
        for name in names:
            obj = getattr(space, name, None)
            own = getattr(obj, "__module__", None) or ""
            if not (isinstance(obj, builtin) or own.startswith(module)):
                return (
                    f"Grading stopped: {TAMPERED} ({owner}.{name} was replaced)."
                    " A notebook that replaces what checks use earns no points for"
                    " its checks: remove that code and hand the notebook in again."
                )
    return None


def _answer(
    request: dict,
    handles: tuple[list[Any], list[torch.nn.Module]],
    checks: dict,
    graphs: dict,
) -> dict:
    """Call the notebook's function or class that ``request`` names, or a method of
    one of its models (with the weights the grader holds), as the check's
    :func:`~attnlab.exercises._checking.call` would (the library's own version
    refused, inputs changed in place reported): its value (and the model's weights
    after the call), or the failure's message and the built-in exception raised. The
    inputs that require a gradient and the outputs that carry one are kept in
    ``graphs`` for :func:`_backward`."""
    from attnlab.exercises._checking import ExerciseError, call, checking, tensors

    functions, models = handles
    try:
        method = request.get("method")
        model = models[request["model"]] if method is not None else None
        if model is not None:
            fn = getattr(model, method)
            load_weights(model, decode(request["weights"]))
        else:
            fn = functions[request["function"]]
        args = decode(request["args"], objects=True)
        kwargs = decode(request["kwargs"], objects=True)
        with checking(checks[request["check"]]):
            value = call(fn, request["name"], *args, **kwargs)
        inputs = graph_inputs((model, args, kwargs))
        outputs = [t for t in tensors(value) if t.requires_grad]
        graphs[int(request["id"])] = (inputs, outputs)
        reply = {"value": encode(value, models=models)}
        if model is not None:
            reply["weights"] = encode(model_weights(model))
        return reply
    except ExerciseError as exc:
        return {"failed": str(exc), "raised": exc.raised}
    except ChannelError as exc:
        return {
            "failed": f"{request.get('name')} returned what cannot be graded: {exc}"
        }


def model_weights(model: torch.nn.Module) -> list[list]:
    """``model``'s parameters as they cross: [name, tensor] pairs."""
    return [[name, p] for name, p in model.named_parameters()]


def load_weights(
    model: torch.nn.Module, weights: Any, *, whole: bool = False
) -> None:
    """Set ``model``'s parameters to ``weights`` ([name, tensor] pairs, as
    :func:`model_weights` makes them). With ``whole`` (a stand-in following the
    notebook's model after a call) the pairs must name every parameter, and each
    parameter takes its pair's ``requires_grad`` too."""
    parameters = dict(model.named_parameters())
    if not (type(weights) is list and all(_is_weight(pair) for pair in weights)):
        raise ChannelError("weights that are not [name, tensor] pairs")
    if whole and sorted(name for name, _ in weights) != sorted(parameters):
        raise ChannelError("the model's parameters changed during the call")
    with torch.no_grad():
        for name, value in weights:
            if name not in parameters or value.shape != parameters[name].shape:
                raise ChannelError(f"weights that do not fit the model ({name})")
            parameters[name].copy_(value)
            if whole:
                parameters[name].requires_grad_(value.requires_grad)


def _backward(request: dict, graphs: dict) -> dict:
    """The gradients of a call's inputs, given those of its outputs (``None``
    where an input does not reach the outputs)."""
    from attnlab.exercises._checking import ExerciseError

    try:
        inputs, outputs = graphs[int(request["backward"])]
        given = decode(request["grads"])
        if not inputs:
            return {"grads": []}
        grads = torch.autograd.grad(
            outputs, inputs, given, allow_unused=True, retain_graph=True
        )
        return {"grads": encode(list(grads))}
    except (ChannelError, RuntimeError, ExerciseError) as exc:
        message = f"{type(exc).__name__}: {exc}"
        return {"failed": f"the backward pass of your function failed ({message})"}
