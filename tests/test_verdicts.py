"""The grader judges in a process of its own, through a channel of plain data."""

import base64
import contextlib
import io
import json
import math
import os
import sys
from pathlib import Path

import nbformat
import numpy as np
import pytest
import torch

from attnlab.exercises import ExerciseError
from attnlab.exercises._integrity import TAMPERED
from attnlab.luong import LuongDecoder
from attnlab.pointer import PointerNet
from attnlab.simple_attention import SimpleAttentionDecoder
from attnlab.tasks.geometry import tsp_data
from attnlab.tasks.neighbours import (
    NeighbourTagger,
    neighbour_accuracy,
    sentence_batch,
)
from attnlab.tasks.translation import build_model, examples_per_length, make_batch
from attnlab.teaching.channel import (
    SOCKET_VARIABLE,
    ChannelError,
    class_kind,
    decode,
    encode,
    graded_here,
    library_global,
    load_weights,
    model_weights,
    serve,
)
from attnlab.teaching.release import chapter_notebooks, exercises
from attnlab.teaching.verdicts import (
    NOT_RUN,
    OUTSIDE,
    Notebook,
    check_calls,
    grader,
    plan,
    session,
)
from tests.test_exercises_hard_attention import (
    good_reinforce_samples,
    good_straight_through,
    straight_through_in_place,
)
from tests.test_exercises_luong import (
    good_window_mass,
    window_mass_variant,
)
from tests.test_exercises_pointer import (
    feeds_start_vector,
    good_beam_gaps,
    good_sort_at_length,
)
from tests.test_exercises_pointer import good_greedy as good_pointer
from tests.test_exercises_scoring import good_masked_softmax
from tests.test_exercises_selfattn import (
    GoodScaled,
    IgnoresTheBeta,
    NotASimpleDecoder,
    ScalesTheWeights,
)
from tests.test_exercises_seq2seq import (
    detached_steps,
    feeds_predictions,
    good_greedy,
    good_loop,
    greedy_variant,
    reversal_run,
    reverses_by_assignment,
)
from tests.test_exercises_transformer import (
    Delegating,
    Detached,
    EmbeddingPositions,
    GoodPositions,
    NoLimit,
    delegated_decoder_layer,
    good_decoder,
    pre_norm_decoder,
)


def right_lookup(query, keys, values):
    weights = torch.softmax(keys @ query, dim=0)
    return weights @ values, weights


def uniform_lookup(query, keys, values):
    weights = torch.full((keys.shape[0],), 1 / keys.shape[0])
    return weights @ values, weights


@pytest.mark.parametrize(
    "value",
    [
        None,
        True,
        3,
        -2.5,
        float("inf"),
        "text",
        [1, [2.0, "x"]],
        (1, (2, 3)),
        {"a": (1, 2), "b": [None]},
        torch.arange(6.0).reshape(2, 3),
        torch.tensor([[True, False]]),
        torch.arange(4, dtype=torch.int64),
        torch.ones(2, dtype=torch.float64),
        torch.ones(3, dtype=torch.bfloat16) / 3,
        torch.zeros(0, 4),
        torch.tensor(1.5),
        np.arange(3.0),
        np.float32(0.25),
        torch.Size([2, 3]),
    ],
)
def test_plain_data_crosses_unchanged(value):
    back = decode(encode(value))
    if isinstance(value, torch.Tensor):
        assert type(back) is torch.Tensor and back.dtype == value.dtype
        assert back.shape == value.shape and torch.equal(back, value)
    elif isinstance(value, np.ndarray | np.generic):
        assert type(back) is type(value) and np.array_equal(back, value)
    elif isinstance(value, torch.Size):
        assert back == tuple(value)
    else:
        assert back == value and type(back) is type(value)


def test_a_tensor_subclass_arrives_as_a_plain_tensor():
    class Agreeable(torch.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            return True

    sent = torch.ones(3).as_subclass(Agreeable)
    back = decode(encode(sent))
    assert type(back) is torch.Tensor
    assert not torch.allclose(back, torch.zeros(3))


def test_a_sent_function_is_a_number_and_its_parameters():
    functions = []
    data = encode([right_lookup, 2], functions)
    assert functions == [right_lookup]
    assert data == [{"$function": [0, ["query", "keys", "values"]]}, 2]
    assert decode(data, lambda i, params: (i, params)) == [
        (0, ["query", "keys", "values"]),
        2,
    ]


class Tagger(torch.nn.Module):
    """A model of the notebook's own: its code would run in the grader."""


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (object(), "object cannot be sent"),
        (right_lookup, "function cannot be sent"),
        (Tagger(), "Tagger cannot be sent"),
        ({(1, 2): 3}, "number or string keys"),
        (torch.ones(2, dtype=torch.complex64), "complex64"),
    ],
)
def test_what_is_not_plain_data_is_not_sent(value, message):
    with pytest.raises(ChannelError, match=message):
        encode(value)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"$pickle": "gASVAAAA"}, "not plain data"),
        ({"$tensor": ["float32", [2], "AAAA"]}, "do not fit"),
        ({"$tensor": ["object", [1], ""]}, "malformed"),
        ({"$tensor": ["float32", [-1], ""]}, "malformed shape"),
        ({"$function": [0, []]}, "not plain data"),  # no function expected here
        ({"a": 1, "b": 2}, "not plain data"),
    ],
)
def test_what_is_not_plain_data_is_not_received(data, message):
    with pytest.raises(ChannelError, match=message):
        decode(data)


def test_the_plan_holds_the_release_s_check_cells_judged_by_the_grader():
    def cell(grade_id, source):
        code = nbformat.v4.new_code_cell(source)
        code.metadata["nbgrader"] = {"grade_id": grade_id, "grade": True}
        return code

    release = nbformat.v4.new_notebook()
    release.cells = [
        cell("ex-a", "def f(): ..."),
        cell("ex-a-check", "check_soft_lookup(soft_lookup)\nprint(1)"),
        cell("ex-b-check", "check_query_training(learn_query, memory, target)"),
        nbformat.v4.new_markdown_cell("check_x(y)"),
    ]
    assert check_calls("x = 1\ncheck_a(f)\ncheck_b(f, g)\nprint(2)") == [
        "check_a",
        "check_b",
    ]
    # a check handed a SoftDict stays in the notebook
    assert plan(release) == {"ex-a-check": ["check_soft_lookup"]}


def test_the_grader_process_does_not_import_the_notebook_format():
    """The grader starts once per submission: nbformat (and the grammars jsonschema
    builds on import) would cost it seconds each time, for nothing it reads."""
    import subprocess

    code = "import sys, attnlab.teaching.verdicts; print(sorted(sys.modules))"
    loaded = subprocess.run(
        [sys.executable, "-I", "-c", code],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "'nbformat'" not in loaded and "'jsonschema'" not in loaded


def heard(cell, calls):
    """The hidden tests of check cell ``cell`` as the grading process runs them: in
    the cell's session."""
    with session(cell):
        serve(cell, calls)


@pytest.fixture(scope="module")
def judged():
    """Check cells judged by one grader process, as a notebook's hidden tests would
    hand them over; returns (what the notebook saw, the grader's verdicts)."""
    saw = {}

    def hand_over(cell, answer, check="check_soft_lookup"):
        try:
            heard(cell, [(check, (answer,), {})])
            saw[cell] = None
        except ExerciseError as exc:
            saw[cell] = str(exc)

    names = [*CASES, "interrupted", "other"]
    cells = {f"{name}-check": ["check_soft_lookup"] for name in names}
    with grader(None, cells) as verdicts:
        for name, (answer, patches) in CASES.items():
            with pytest.MonkeyPatch.context() as inner:
                for target, attribute, value in patches:
                    inner.setattr(target, attribute, value)
                hand_over(f"{name}-check", answer)
        try:
            heard("interrupted-check", [("check_soft_lookup", (interrupted,), {})])
        except KeyboardInterrupt:
            pass
        hand_over("unplanned-check", right_lookup)
        # the last: the grader writes a verdict before the notebook goes on
        hand_over("other-check", right_lookup, check="check_sharpness")
    assert (
        SOCKET_VARIABLE not in os.environ
    )  # the grader is gone, and so is its socket
    return saw, verdicts


def interrupted(query, keys, values):
    raise KeyboardInterrupt  # as a time-out stops a cell


def frame_reader(query, keys, values):
    # what a check computed next to the call is not in this process
    caller = sys._getframe(1).f_locals
    expected = caller.get("expected") or caller.get("weights")
    if expected is None:
        return uniform_lookup(query, keys, values)
    return expected


def agreeable(query, keys, values):
    class Agreeable(torch.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            return True

    value, weights = uniform_lookup(query, keys, values)
    return value.as_subclass(Agreeable), weights.as_subclass(Agreeable)


always = lambda *args, **kwargs: True  # noqa: E731
disguised = type(always)(always.__code__, {}, "allclose")
disguised.__module__ = "torch"
CASES = {
    "right": (right_lookup, []),
    "wrong": (uniform_lookup, []),
    "patched-comparisons": (
        uniform_lookup,
        [
            (torch, "allclose", always),
            (torch, "equal", always),
            (math, "isclose", always),
        ],
    ),
    # replaced so that the notebook's own note of tampering misses them
    "disguised-comparisons": (
        uniform_lookup,
        [(torch, "allclose", disguised), (torch, "equal", disguised)],
    ),
    "subclass": (agreeable, []),
    "frames": (frame_reader, []),
}


def test_the_grader_passes_a_right_answer(judged):
    saw, verdicts = judged
    assert verdicts["right-check"]["passed"] and verdicts["right-check"]["complete"]
    assert "passed all" in verdicts["right-check"]["output"]
    assert saw["right-check"] is None


def test_replaced_comparisons_are_noted_as_tampering(judged):
    saw, verdicts = judged
    verdict = verdicts["patched-comparisons-check"]
    assert verdict["complete"] and not verdict["passed"]
    assert TAMPERED in verdict["message"] and "torch.allclose" in verdict["message"]


@pytest.mark.parametrize(
    "case", ["wrong", "disguised-comparisons", "subclass", "frames"]
)
def test_nothing_the_notebook_patches_or_reads_sways_the_verdict(judged, case):
    saw, verdicts = judged
    verdict = verdicts[f"{case}-check"]
    assert verdict["complete"] and not verdict["passed"]
    assert "soft_lookup" in verdict["message"]
    assert saw[f"{case}-check"] == verdict["message"]  # the notebook shows it too


def test_a_cell_outside_the_plan_is_not_judged(judged):
    saw, verdicts = judged
    assert "unplanned-check" not in verdicts
    assert "without a verdict" in saw["unplanned-check"]


def test_a_check_cell_that_calls_other_checks_than_the_release_fails(judged):
    saw, verdicts = judged
    assert (
        verdicts["other-check"]["complete"] and not verdicts["other-check"]["passed"]
    )
    assert "check cell was changed" in saw["other-check"]


def test_a_cell_stopped_while_the_grader_waits_has_no_verdict(judged):
    _, verdicts = judged
    verdict = verdicts["interrupted-check"]
    assert not verdict["complete"] and not verdict["passed"]
    assert verdict["message"] == NOT_RUN


def detached_straight_through(scores, noise, tau):
    return good_straight_through(scores, noise, tau).detach()


def detached_masked_softmax(scores, mask):
    return good_masked_softmax(scores, mask).detach()


def same_rows(theta, rewards, baseline, n, generator):
    return good_reinforce_samples(theta, rewards, baseline, n, torch.Generator())


GRADIENT_CASES = {
    # cell: (check, answer, what the message of a wrong answer names; None: passes)
    "straight-check": ("check_straight_through", good_straight_through, None),
    "straight-detached-check": (
        "check_straight_through",
        detached_straight_through,
        "gradient",
    ),
    "straight-in-place-check": (
        "check_straight_through",
        straight_through_in_place,
        "in place",
    ),
    "masked-check": ("check_masked_softmax", good_masked_softmax, None),
    "masked-detached-check": (
        "check_masked_softmax",
        detached_masked_softmax,
        "gradient",
    ),
    "samples-check": ("check_reinforce_samples", good_reinforce_samples, None),
    "samples-same-rows-check": ("check_reinforce_samples", same_rows, "generator"),
}


def judge_cases(cases, given=lambda cell, check: ()):
    """The check cells of ``cases`` (cell: (check, answer, named)), each handed its
    answer and ``given(cell, check)``, judged by one grader: its verdicts."""
    cells = {cell: [check] for cell, (check, _, _) in cases.items()}
    with grader(None, cells) as verdicts:
        for cell, (check, answer, _) in cases.items():
            with contextlib.suppress(ExerciseError):
                heard(cell, [(check, (answer, *given(cell, check)), {})])
    return verdicts


def assert_verdict(verdict, named):
    """``named``: None, the answer passes; "", the cell earns no verdict; else what
    the message of the wrong answer names."""
    assert verdict["complete"] == (named != ""), verdict["message"]
    assert verdict["passed"] == (named is None), verdict["message"]
    if named:
        assert named in verdict["message"]


@pytest.fixture(scope="module")
def judged_gradients():
    return judge_cases(GRADIENT_CASES)


@pytest.mark.parametrize("cell", list(GRADIENT_CASES))
def test_gradients_and_generators_cross_the_channel(judged_gradients, cell):
    """The notebook computes the backward pass of its answer on the grader's
    request, and a generator crosses as its state."""
    assert_verdict(judged_gradients[cell], GRADIENT_CASES[cell][2])


MODEL_CASES = {
    # cell: (check, answer, what the message of a wrong answer names; None: passes)
    "forcing-check": ("check_teacher_forcing", good_loop, None),
    "forcing-predictions-check": (
        "check_teacher_forcing",
        feeds_predictions,
        "own prediction",
    ),
    "forcing-detached-check": ("check_teacher_forcing", detached_steps, "gradient"),
    "greedy-check": ("check_greedy_decode", good_greedy, None),
    "greedy-early-check": (
        "check_greedy_decode",
        greedy_variant("stops-early"),
        "as soon as one sentence has ended",
    ),
    "pointer-check": ("check_greedy_pointer", good_pointer, None),
    "pointer-no-feedback-check": (
        "check_greedy_pointer",
        feeds_start_vector,
        "choices differ",
    ),
    "layer-check": ("check_decoder_layer", good_decoder, None),
    "layer-pre-norm-check": ("check_decoder_layer", pre_norm_decoder, "post-norm"),
    "layer-delegated-check": (
        "check_decoder_layer",
        delegated_decoder_layer,
        "library's own version",
    ),
}


@pytest.fixture(scope="module")
def judged_models():
    return judge_cases(MODEL_CASES)


@pytest.mark.parametrize("cell", list(MODEL_CASES))
def test_models_the_grader_built_cross_to_the_notebook(judged_models, cell):
    """A model the check built reaches the notebook's answer as a copy, and the
    gradient of the answer's result reaches the grader's model."""
    assert_verdict(judged_models[cell], MODEL_CASES[cell][2])


def test_a_library_model_crosses_as_weights_read_by_torch_s_restricted_loader():
    torch.manual_seed(0)
    model = PointerNet(d_input=1, d_hidden=8)
    batch = make_batch(examples_per_length(1, 5, 6, seed=0))
    sent = encode({"model": model, "batch": batch, 3: torch.nn.Linear(2, 2)})
    assert "$torch" in json.dumps(sent) and "$object" not in json.dumps(sent)
    got = decode(sent)
    assert type(got["model"]) is PointerNet and got["model"] is not model
    inputs = torch.rand(4, 5, 1)
    assert torch.equal(
        got["model"].greedy(inputs).indices, model.greedy(inputs).indices
    )
    assert (
        torch.equal(got["batch"].src, batch.src) and type(got[3]) is torch.nn.Linear
    )


def replaced_method(model):
    # a class the loader may make, in place of the method the check calls
    object.__setattr__(model, "greedy", torch.nn.Identity)


def with_hook(model):
    model.register_forward_hook(print)


@pytest.mark.parametrize(
    ("change", "message"),
    [(replaced_method, "'greedy' was replaced"), (with_hook, "cannot be sent")],
    ids=["method", "hook"],
)
def test_a_model_with_code_of_the_notebook_is_not_received(change, message):
    model = PointerNet(d_input=1, d_hidden=8)
    change(model)
    with pytest.raises(ChannelError, match=message):
        decode(encode(model))


class Shadowing(GoodPositions):
    """A class whose method would stand in for what the grader reads itself."""

    def parameters(self, recurse=True):
        return iter([])


def test_a_model_class_of_the_notebook_crosses_as_a_handle():
    functions, models = [], []
    model = GoodPositions(6, 4)
    sent = encode([GoodScaled, model], functions, models=models)
    assert functions == [GoodScaled] and models == [model]
    ((index, kind),) = sent[0].values()
    assert index == 0 and kind["name"] == "GoodScaled"
    assert kind["bases"] == ["attnlab.simple_attention.SimpleAttentionDecoder"]
    assert {"attention", "decode_init", "decode_step"} <= set(kind["methods"])
    stand_ins = Notebook(None)
    got = decode(sent, stand_ins.stand_in)
    assert issubclass(got[0], SimpleAttentionDecoder) and got[0].__name__ == "GoodScaled"
    assert isinstance(got[1], torch.nn.Module) and got[1] is not model
    assert [n for n, _ in got[1].named_parameters()] == ["table"]
    assert torch.equal(got[1].table, model.table) and got[1].table.requires_grad
    (nested,) = decode(encode([EmbeddingPositions(3, 2)], models=[]), stand_ins.stand_in)
    assert [n for n, _ in nested.named_parameters()] == ["embedding.weight"]


def test_a_stand_in_class_derives_from_the_library_only():
    stand_ins = Notebook(None)
    with pytest.raises(ChannelError, match="subprocess.Popen cannot be graded"):
        stand_ins.stand_in_class({"name": "X", "bases": ["subprocess.Popen"], "methods": []})
    kind = stand_ins.stand_in_class(class_kind(Shadowing))
    assert "forward" in vars(kind) and "parameters" not in vars(kind)
    with pytest.raises(ChannelError, match="malformed class"):
        decode({"$class": [0, {"name": 1, "bases": [], "methods": []}]}, stand_ins.stand_in)


def test_the_grader_imports_a_library_module_a_model_names_and_no_other():
    import subprocess

    assert library_global("attnlab.tasks.neighbours.NeighbourTagger") is NeighbourTagger
    names = ["attnlab.experiments.__main__", "attnlab.teaching.grading", "json.tool"]
    code = (
        "import sys\n"
        "from attnlab.teaching.channel import library_global\n"
        f"for name in {names!r}:\n"
        "    assert library_global(name + '.main') is None, name\n"
        f"print([name for name in {names!r} if name in sys.modules])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_class_outside_the_library_is_not_loaded():
    saved = io.BytesIO()
    torch.save([Tagger()], saved)
    body = base64.b64encode(saved.getvalue()).decode()
    with pytest.raises(ChannelError, match="Tagger cannot be sent"):
        decode({"$torch": body})
    with pytest.raises(ChannelError, match="malformed"):
        decode({"$torch": base64.b64encode(b"not a model").decode()})


NOTEBOOK_MODEL_CASES = {
    # cell: (check, arguments after the answer's, what a wrong answer's message
    # names; None: passes; "" no verdict)
    "mass-check": ("check_window_mass", good_window_mass, None),
    "mass-narrow-check": (
        "check_window_mass",
        window_mass_variant(narrow=True),
        "both ends included",
    ),
    "sort-check": ("check_sort_length", good_sort_at_length, None),
    "sort-hooked-check": ("check_sort_length", good_sort_at_length, ""),
    "gaps-check": ("check_beam_gaps", good_beam_gaps, None),
    "reversal-check": ("check_source_reversal", reversal_run, None),
    "reversal-in-place-check": (
        "check_source_reversal",
        reverses_by_assignment,
        "changed its input `test_batch` in place",
    ),
}


def notebook_models(cell, check):
    """What each check of NOTEBOOK_MODEL_CASES is handed after the answer (built
    for that check only)."""
    torch.manual_seed(0)
    if cell == "sort-hooked-check":
        hooked = PointerNet(d_input=1, d_hidden=16)
        hooked.register_forward_hook(print)  # code of the notebook, run by the grader
        return (hooked,)
    options = {"score": "dot", "input_feeding": False}
    return {
        "check_window_mass": lambda: (
            build_model(LuongDecoder, embed_size=8, hidden_size=8, **options),
            examples_per_length(1, 5, 14, seed=3),
        ),
        "check_sort_length": lambda: (PointerNet(d_input=1, d_hidden=16),),
        "check_beam_gaps": lambda: (
            PointerNet(2, 16),
            *tsp_data(40, 7, torch.Generator()),
        ),
        "check_source_reversal": lambda: (),
    }[check]()


@pytest.fixture(scope="module")
def judged_notebook_models():
    return judge_cases(NOTEBOOK_MODEL_CASES, notebook_models)


@pytest.mark.parametrize("cell", list(NOTEBOOK_MODEL_CASES))
def test_the_notebook_s_trained_models_and_batches_reach_the_grader(
    judged_notebook_models, cell
):
    """The grader judges checks handed the notebook's trained model, test examples
    or batch, and answers that return a model; a model that carries the notebook's
    code (a hook) earns no verdict."""
    assert_verdict(judged_notebook_models[cell], NOTEBOOK_MODEL_CASES[cell][2])


TAGGER_TEST = sentence_batch(10**6, 32)


def one_head_tagger(n_heads, steps):
    """The head experiment's answer, untrained: the check does not depend on the
    budget."""
    torch.manual_seed(0)
    model = NeighbourTagger(True, n_heads=n_heads)
    return model, neighbour_accuracy(model, TAGGER_TEST)


def tagger_error(n_heads, steps):
    model, accuracy = one_head_tagger(n_heads, steps)
    return model, 1 - accuracy


CLASS_CASES = {
    # cell: (check, answer, what the message of a wrong answer names; None: passes)
    "positions-check": ("check_learned_positions", GoodPositions, None),
    "positions-embedding-check": ("check_learned_positions", EmbeddingPositions, None),
    "positions-detached-check": (
        "check_learned_positions",
        Detached,
        "without gradient",
    ),
    "positions-no-limit-check": ("check_learned_positions", NoLimit, "did not raise"),
    "positions-delegating-check": (
        "check_learned_positions",
        Delegating,
        "library's own version",
    ),
    "scaled-check": ("check_scaled_simple_decoder", GoodScaled, None),
    "scaled-weights-check": (
        "check_scaled_simple_decoder",
        ScalesTheWeights,
        "multiplies the weights",
    ),
    "scaled-ignored-check": (
        "check_scaled_simple_decoder",
        IgnoresTheBeta,
        "do not change",
    ),
    "scaled-not-derived-check": (
        "check_scaled_simple_decoder",
        NotASimpleDecoder,
        "must derive from SimpleAttentionDecoder",
    ),
    "tagger-check": ("check_head_experiment", one_head_tagger, None),
    "tagger-error-rate-check": ("check_head_experiment", tagger_error, "error rate"),
}


@pytest.fixture(scope="module")
def judged_classes():
    def given(cell, check):
        return (TAGGER_TEST,) if check == "check_head_experiment" else ()

    return judge_cases(CLASS_CASES, given)


@pytest.mark.parametrize("cell", list(CLASS_CASES))
def test_the_student_s_model_classes_are_stood_in_for_by_the_grader(
    judged_classes, cell
):
    """A model class the student writes runs in the notebook only: the grader
    builds its models there, calls their methods there on the weights it holds,
    sets a weight and receives its gradient; a built-in exception the class raises
    reaches the check as itself. The head experiment's tagger, of the library,
    crosses as weights."""
    assert_verdict(judged_classes[cell], CLASS_CASES[cell][2])


def test_only_the_notebook_reads_a_pickled_model():
    model = torch.nn.Linear(2, 3)
    sent = encode([model, torch.ones(2)], objects=True)
    with pytest.raises(ChannelError, match="not plain data"):
        decode(sent)
    copy, ones = decode(sent, objects=True)
    assert copy is not model and torch.equal(copy.weight, model.weight)
    assert torch.equal(ones, torch.ones(2))


def test_weights_cross_as_name_tensor_pairs_and_load_back():
    """A model's weights cross as [name, tensor] pairs and load into a model of the
    same shape; a stand-in following the notebook's model (``whole``) also takes
    which weights require a gradient, and refuses pairs that miss a parameter."""
    torch.manual_seed(0)
    source, target = torch.nn.Linear(2, 3), torch.nn.Linear(2, 3)
    source.bias.requires_grad_(False)
    sent = decode(encode(model_weights(source)))
    assert [name for name, _ in sent] == ["weight", "bias"]
    load_weights(target, sent)
    assert torch.equal(target.weight, source.weight)
    assert torch.equal(target.bias, source.bias) and target.bias.requires_grad
    load_weights(target, sent, whole=True)
    assert not target.bias.requires_grad
    load_weights(target, sent[:1])  # the notebook may be sent some of them
    with pytest.raises(ChannelError, match="parameters changed during the call"):
        load_weights(target, sent[:1], whole=True)
    with pytest.raises(ChannelError, match=r"do not fit the model \(bias\)"):
        load_weights(target, [["bias", torch.zeros(4)]])
    with pytest.raises(ChannelError, match="do not fit the model"):
        load_weights(target, [["scale", torch.zeros(3)]])
    with pytest.raises(ChannelError, match="not \\[name, tensor\\] pairs"):
        load_weights(target, [["bias", [0.0, 0.0, 0.0]]])


def test_the_instructors_page_names_the_exercises_judged_in_the_notebook():
    root = Path(__file__).resolve().parents[1]
    chapters = []
    for path in chapter_notebooks(root / "notebooks"):
        nb = nbformat.read(path, as_version=4)
        for exercise in exercises(nb):
            if exercise.kind == "code":
                names = check_calls(nb.cells[exercise.check].source)
                if not graded_here(names):
                    chapters.append(int(path.name[:2]))
    page = (root / "book" / "instructors.md").read_text()
    section = page[page.index("(instructors-grader)=") : page.index("## Points")]
    if not chapters:
        assert "Every code exercise of the chapters is judged by the grader" in section
        assert "none of the course's chapters has one" in section
        return
    words = ["One", "Two", "Three", "Four", "Five", "Six", "Seven", "Eight", "Nine"]
    assert f"{words[len(chapters) - 1]} exercise" in section
    for chapter in sorted(set(chapters)):
        assert f"chapter {chapter}'s" in section


def test_a_hello_that_is_not_plain_data_does_not_stop_the_grader():
    import socket as sockets

    from attnlab.teaching.channel import send

    def say(hello):
        with sockets.socket(sockets.AF_UNIX, sockets.SOCK_STREAM) as connection:
            connection.connect(os.environ[SOCKET_VARIABLE])
            send(connection, hello)
            with contextlib.suppress(OSError):
                connection.recv(1)  # the grader closes the channel without a verdict

    cells = {"ex-check": ["check_soft_lookup"], "bad-check": ["check_soft_lookup"]}
    with grader(None, cells) as verdicts:
        for hello in ({"cell": ["ex-check"]}, {"cell": "ex-check", "calls": 3}, [1]):
            say(hello)  # outside any session: refused unread
        with session("bad-check"):
            say({"cell": "bad-check", "calls": 3})  # its session, not plain data
        heard("ex-check", [("check_soft_lookup", (right_lookup,), {})])
    assert verdicts["ex-check"]["passed"] and not verdicts["bad-check"]["complete"]
    assert verdicts.refused == [OUTSIDE] * 3


def test_each_grader_is_a_fork_of_one_process_and_ends_with_its_block():
    from attnlab.teaching.verdicts import _Zygote

    pids = []
    for _ in range(2):
        with grader(None, {"ex-check": ["check_soft_lookup"]}) as verdicts:
            heard("ex-check", [("check_soft_lookup", (right_lookup,), {})])
            zygote = _Zygote.process
            pids.append(max(int(p) for p in _children(zygote.pid)))
        assert verdicts["ex-check"]["passed"]
        assert str(pids[-1]) not in _children(zygote.pid)  # killed and reaped
    assert _Zygote.process is zygote and zygote.poll() is None and pids[0] != pids[1]


def test_the_graders_process_ends_with_the_grading_process():
    import subprocess

    code = (
        "from attnlab.teaching.verdicts import grader, _Zygote\n"
        "with grader(None, {}):\n"
        "    print(_Zygote.process.pid, flush=True)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert not Path(f"/proc/{int(done.stdout)}").exists()


def _children(pid: int) -> list[str]:
    """The pids of the processes ``pid`` started (Linux)."""
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return path.read_text().split()


def forge(cell):
    """What a notebook's own code can do with the grader's socket: name ``cell`` and
    hand the library's reference lookup; the grader's verdict, as the notebook sees
    it (None: passed)."""
    try:
        serve(cell, [("check_soft_lookup", (right_lookup,), {})])
    except ExerciseError as exc:
        return str(exc)
    return None


def test_the_grader_hears_a_cell_only_while_it_runs_and_only_once():
    cells = {"a-check": ["check_soft_lookup"], "b-check": ["check_soft_lookup"]}
    with grader(None, cells) as verdicts:
        forge("a-check")  # before any cell runs: an appended cell, or an early one
        with session("a-check"):
            with contextlib.suppress(ExerciseError):
                serve("a-check", [("check_soft_lookup", (uniform_lookup,), {})])
            forge("a-check")  # a second connection in the same session
        with session("b-check"):
            forge("a-check")  # naming another cell
        forge("b-check")  # after its session closed
    assert set(verdicts) == {"a-check"}  # b-check's session heard no one of its own
    assert not verdicts["a-check"]["passed"]  # the honest, wrong answer's verdict
    assert verdicts.refused == [
        OUTSIDE,
        "a second connection to the grader during a-check was refused",
        "a connection naming another cell during b-check was refused",
        OUTSIDE,
    ]


def test_after_a_restart_each_cell_is_heard_once_more():
    """A notebook run again in a new kernel (a cell stopped Python or ran past its time) speaks again."""
    from attnlab.teaching.verdicts import restarted

    with grader(None, {"a-check": ["check_soft_lookup"]}) as verdicts:
        with contextlib.suppress(ExerciseError):
            heard("a-check", [("check_soft_lookup", (uniform_lookup,), {})])
        restarted()
        heard("a-check", [("check_soft_lookup", (right_lookup,), {})])
    assert verdicts["a-check"]["passed"] and verdicts.refused == []


def test_a_session_needs_a_running_grader():
    with pytest.raises(RuntimeError, match="no grader"), session("a-check"):
        pass
