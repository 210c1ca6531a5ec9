"""The caller's inputs, looked at before a tuning runs anything on them: the key generator
given them, what one call uses up (which no copy of the inputs can copy), and a set's own
input generator tried once."""

from __future__ import annotations

import inspect
import io
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from pytest_autotune.tune.client import Client, client_context
from pytest_autotune.tune.clone import mock_types
from pytest_autotune.tune.errors import InputGeneratorError
from pytest_autotune.tune.tunable_set import NotATuple, TunableSet, TuneInputs


def key_of(name: str, tunables: TunableSet, inputs: TuneInputs) -> Any:
    """`key_gen(*inputs)`; where the key generator cannot take these inputs at all, a
    TypeError that says so by the tuner's name, not only Python's "<lambda>() takes 1
    positional argument but 2 were given"."""
    try:
        return tunables.key_gen(*inputs)
    except TypeError as exc:
        if takes_inputs(tunables.key_gen, inputs):
            raise
        raise TypeError(
            f"{name}: the key generator cannot take the {len(inputs)} inputs given"
            f" ({exc}): it is called as key_gen(*inputs), with the candidates' arguments"
        ) from exc


def candidate_cannot_take(
    fn: Callable[..., Any], inputs: TuneInputs, exc: TypeError
) -> TypeError | None:
    """Where a candidate that raised `exc` cannot take the inputs at all, a TypeError that
    says it is called as `fn(*inputs)`, each input one argument; None where the TypeError
    is the candidate's own. The seed's multi-input kernels take one tuple
    (`|(lhs, rhs)| ...`), and ported as `lambda inputs: ...` every candidate failed with
    Python's "takes 1 positional argument but 2 were given" alone, which named neither the
    convention nor the fix."""
    if takes_inputs(fn, inputs):
        return None
    return TypeError(
        f"the candidate cannot take the {len(inputs)} inputs given ({exc}): it is called as"
        " fn(*inputs), one argument per input: a kernel of two inputs is"
        " `def kernel(lhs, rhs)`, not one that takes them as a tuple (the seed's"
        " `|(lhs, rhs)|`)"
    )


def takes_inputs(fn: Callable[..., Any], inputs: TuneInputs) -> bool:
    """Whether `fn(*inputs)` binds to `fn`'s signature; True where there is none to read
    (a builtin, a ufunc): the call's own error says it."""
    try:
        inspect.signature(fn).bind(*inputs)
    except TypeError:
        return False
    except ValueError:
        return True
    return True


def used_up_by_a_call(value: object) -> bool:
    """Whether one call may use `value` up: an iterator (a generator, `iter(...)`, a `map`),
    which no copy of the inputs can copy. A file or stream is not (a call may rewind it,
    `seek(0)`), nor a database cursor (DB-API's, `sqlite3.Cursor`: a call runs its query
    with `execute`; refused, a plain run of a test given one failed), nor a `MagicMock`,
    which has `__iter__` and `__next__` but is a fake (a logger, a client) that no call
    uses up: refused, the group of a test given one failed."""
    if not isinstance(value, Iterator) or isinstance(value, (io.IOBase, *mock_types())):
        return False
    return not (callable(getattr(value, "execute", None)) and hasattr(value, "fetchone"))


def used_up_within(value: object) -> str | None:
    """How `value` is, or holds, what one call uses up (`used_up_by_a_call`): "is an
    iterator (generator)", or "holds an iterator (generator) at ['rows']" inside the
    tuples, lists and dicts the input copy recurses into (`clone_value`), which copies
    them and shares the iterator: `{"rows": (i for i in ...)}` was tuned with the first
    candidate emptying it, and the call returned the sum of nothing. None where neither."""
    found = _used_up_at(value, set())
    if found is None:
        return None
    where, iterator = found
    what = f"an iterator ({type(iterator).__name__})"
    if not where:
        return f"is {what}"
    return f"holds {what} at {''.join(f'[{k!r}]' for k in reversed(where))}"


def used_up_input(inputs: Iterable[object]) -> tuple[int, str] | None:
    """The first of `inputs` that is or holds what one call uses up, by its index, and how
    (`used_up_within`); None where none does."""
    for index, value in enumerate(inputs):
        used_up = used_up_within(value)
        if used_up is not None:
            return index, used_up
    return None


_PLAIN_VALUES = (int, float, complex, bool, str, bytes, type(None))


def _used_up_at(value: object, seen: set[int]) -> tuple[list[Any], object] | None:
    """The keys, innermost first, of what in `value` one call uses up, and that value."""
    if used_up_by_a_call(value):
        return [], value
    if isinstance(value, (tuple, list)):
        items: Iterator[tuple[Any, Any]] = iter(enumerate(value))
    elif isinstance(value, dict):
        items = iter(value.items())
    else:
        return None
    if id(value) in seen:
        return None
    seen.add(id(value))
    for key, item in items:
        if type(item) in _PLAIN_VALUES:
            continue
        found = _used_up_at(item, seen)
        if found is not None:
            found[0].append(key)
            return found
    return None


def refuse_iterators(name: str, inputs: TuneInputs) -> None:
    """Refuse an input that one call uses up (a generator, `iter(...)`, a `map`): the
    default input generator cannot copy it, so the first candidate tuned emptied it for
    the others and for the call whose result is returned, a wrong answer with no word.
    Refused before anything runs on it; a key already decided calls the winner once, so
    an iterator is fine there."""
    found = used_up_input(inputs)
    if found is not None:
        index, used_up = found
        raise TypeError(
            f"{name}: input {index} {used_up}, which tuning"
            " would use up: every candidate is called on it, and the first would leave"
            " it empty for the others and for the call that returns; pass a list or a"
            " tuple (list(it))"
        )


def try_input_generator(
    name: str, key: Any, tunables: TunableSet, inputs: TuneInputs, client: Client
) -> None:
    """Call a set's own input generator once before anything runs, and raise what it raises
    as `InputGeneratorError`. Raised inside the checks and the timing, its error was
    recorded as each candidate's ("no candidate succeeded ... a: ValueError ..."), though
    none had run, its traceback was dropped, and the key was remembered as one no
    candidate can run."""
    try:
        with client_context(client):  # on the client's device, as the candidates' copies
            tunables.generate_inputs(key, inputs)
    except Exception as error:
        # `generate_inputs`' own refusal of a return that is no tuple says what it returned.
        what = (
            str(error)
            if isinstance(error, NotATuple)
            else f"the input generator raised {type(error).__name__}: {error}"
        )
        raise InputGeneratorError(
            f"{name}: for key {key!r}, {what}; no candidate was run"
        ) from error
