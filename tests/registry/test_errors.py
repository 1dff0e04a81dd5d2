"""attn's errors and warnings cross process boundaries whole: message and attributes."""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import pickle

import pytest

import attn
from attn.registry import errors

#: One instance of every attn exception and warning, built as attn builds them.
INSTANCES = [
    errors.AttnError("base"),
    errors.AttnWarning("base warning"),
    errors.ConflictWarning("two claimants"),
    errors.PluginWarning("a plugin control"),
    errors.RejectedPluginWarning("rejected"),
    errors.InvalidPathError("no_module_part", "no module part"),
    errors.UnknownBackendError("Unknown attention backend: 'X'", name="X", registry="R"),
    errors.BackendNotRegisteredError("no default", name="CUSTOM", registry="R"),
    errors.BackendLoadError(
        "cannot load",
        backend="B",
        registry="R",
        path="m:C",
        distribution="acme",
        version="1.0",
        detail="ModuleNotFoundError: No module named 'm'",
    ),
    errors.BackendInterfaceError(
        "not a backend",
        backend="B",
        registry="R",
        path="m:C",
        distribution=None,
        version=None,
        detail="not a class",
    ),
    errors.PluginProblemError("strict", problems=("one", "two")),
    errors.AttnConfigError("ATTN_STRICT", "maybe", "a boolean"),
    errors.StateMismatchError("differs", differences=(("R", "N"),), missing_registries=("T",)),
    errors.SelectionError("none valid", "R", (), explicit=True),
]


def test_every_error_and_warning_class_is_covered():
    """INSTANCES holds one of each exception and warning class errors.py defines."""
    defined = {
        obj
        for obj in vars(errors).values()
        if isinstance(obj, type) and issubclass(obj, (errors.AttnError, errors.AttnWarning))
    }
    assert {type(e) for e in INSTANCES} == defined


@pytest.mark.parametrize("error", INSTANCES, ids=lambda e: type(e).__name__)
@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_round_trips_with_message_and_attributes(error, protocol):
    """pickle.loads(pickle.dumps(e)) is the same type, message, args and attributes."""
    copy = pickle.loads(pickle.dumps(error, protocol=protocol))  # noqa: S301 - our own bytes
    assert type(copy) is type(error)
    assert str(copy) == str(error)
    assert copy.args == error.args
    assert vars(copy) == vars(error)


def test_a_load_error_keeps_its_import_error_fields():
    """BackendLoadError's path (an ImportError slot) and msg survive too."""
    error = INSTANCES[8]
    copy = pickle.loads(pickle.dumps(error))  # noqa: S301 - our own bytes
    assert (copy.path, copy.msg, copy.backend) == ("m:C", "cannot load", "B")
    assert copy.distribution == "acme"


def load_unimportable() -> type:
    """In a worker: register a path whose module does not exist, and load it."""
    attn.register_mla_prefill_backend(attn.MLAPrefillBackendEnum.CUSTOM, "no_such_module:Prefill")
    return attn.MLAPrefillBackendEnum.CUSTOM.get_class()


def _check(error: BaseException) -> None:
    assert isinstance(error, attn.BackendLoadError)
    assert error.backend == "CUSTOM"
    assert error.registry == "MLAPrefillBackendEnum"
    assert error.path == "no_such_module:Prefill"
    assert error.detail == "ModuleNotFoundError: No module named 'no_such_module'"
    assert str(error).startswith("Cannot load MLA prefill backend 'CUSTOM' from a runtime ")


def test_a_worker_load_error_reaches_a_spawn_pool_caller():
    """multiprocessing.Pool (spawn): get() raises the worker's BackendLoadError, attributes kept."""
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        result = pool.apply_async(load_unimportable)
        with pytest.raises(attn.BackendLoadError) as caught:
            result.get(60)
    _check(caught.value)


def test_a_worker_load_error_reaches_a_process_pool_executor_caller():
    """ProcessPoolExecutor: the future raises the BackendLoadError, not BrokenProcessPool."""
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=context) as executor:
        future = executor.submit(load_unimportable)
        with pytest.raises(attn.BackendLoadError) as caught:
            future.result(60)
    _check(caught.value)


class _Exiting(Exception):  # noqa: N818 - named for what it does
    """An exception whose str() and repr() end the process."""

    def __str__(self) -> str:
        raise SystemExit(4)

    __repr__ = __str__


def test_describe_survives_a_str_that_exits():
    """describe() of an exception whose __str__ raises SystemExit names it instead of exiting."""
    assert errors.describe(_Exiting()) == (
        "_Exiting (its message cannot be shown: str() raised SystemExit)"
    )
    assert errors.shown(_Exiting()) == "(its repr() raises)"


def test_describe_lets_ctrl_c_through():
    """A KeyboardInterrupt inside __str__ is the user's: it propagates."""

    class Interrupted(Exception):  # noqa: N818 - named for what it does
        def __str__(self) -> str:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        errors.describe(Interrupted())


def test_describe_names_a_plugin_s_exit_and_survives_a_hostile_class():
    """SystemExit: its code (a plugin's or a host's) tried to exit; a hostile class: "exception"."""
    assert errors.describe(SystemExit(3)) == (
        "SystemExit: its code tried to exit the process (exit code 3)"
    )

    class Hostile(type):
        def __getattribute__(cls, name: str) -> object:
            if name == "__name__":
                raise RuntimeError(name)
            return super().__getattribute__(name)

    class OddError(Exception, metaclass=Hostile):
        pass

    assert errors.describe(OddError("boom")) == "exception: boom"

    class Interrupting(type):
        def __getattribute__(cls, name: str) -> object:
            if name == "__name__":
                raise KeyboardInterrupt
            return super().__getattribute__(name)

    class StoppedError(Exception, metaclass=Interrupting):
        pass

    with pytest.raises(KeyboardInterrupt):
        errors.describe(StoppedError("x"))


def test_a_selection_error_is_its_message():
    """str() of a SelectionError is the message alone, not its registry or rows."""
    error = errors.SelectionError("no attention backend is valid", "R", (), explicit=False)
    assert str(error) == "no attention backend is valid"
    assert (error.registry, error.explicit) == ("R", False)


def test_joined_lists_names_as_a_sentence_does():
    """The one list-in-words of messages: doctor's copies ('and'), show's near matches ('or')."""
    assert [errors.joined(items) for items in ([], ["a"], ["a", "b"], ["a", "b", "c"])] == [
        "",
        "a",
        "a and b",
        "a, b and c",
    ]
    assert errors.joined(["'X'", "'Y'", "'Z'"], "or") == "'X', 'Y' or 'Z'"


def test_an_exception_whose_class_attribute_raises_is_judged_by_its_type():
    """Plugin code's exception with a hostile ``__class__``: not Ctrl-C, and no new error."""

    class HostileError(Exception):
        @property
        def __class__(self):  # type: ignore[override]
            raise RuntimeError("class boom")

    assert not errors.passes_through(HostileError())
    assert errors.passes_through(KeyboardInterrupt())
