"""The useful line first in Spark's errors from the ``kafka-log`` source.

PySpark hands an error raised in a Python data source to the JVM as its
formatted traceback, which becomes the message of Spark's
``AnalysisException`` (``[PYTHON_DATA_SOURCE_ERROR] Failed to create Python
data source instance: Traceback (most recent call last): ...``) or of the
``PythonException`` of a failed task: the message we wrote comes last, after
every frame. :func:`headline_first` raises the error again with its message
as its cause, an exception never raised and so printed as one line: Python's
traceback format prints the cause first, so Spark's message starts with ours.
PySpark's simplified tracebacks drop causes (``e.__cause__ = None``); the
error's class (a subclass named as its own) keeps this one.

>>> spark.read.format("kafka-log").option("valuemesage", "x").load(path)  # doctest: +SKIP
AnalysisException: [PYTHON_DATA_SOURCE_ERROR] Failed to create Python data source instance:
ValueError: unknown kafka-log option 'valuemesage'; did you mean 'valueMessage'? ...
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from types import TracebackType
from typing import Any, ParamSpec, TypeVar

_P = ParamSpec("_P")
_R = TypeVar("_R")


def with_headline(error: Exception) -> Exception:
    """``error`` again (same type for ``except``, same message and attributes),
    led by its message: a traceback of it starts with ``ValueError: <message>``
    (the nearest built-in type), then Python's "direct cause" line."""
    if "_headline" in vars(error):  # led already (nested decorators)
        return error
    text = " ".join(str(error).split()) or type(error).__name__
    builtin = next((t for t in type(error).__mro__ if t.__module__ == "builtins"), Exception)
    try:
        headline: BaseException = builtin(text)
    except Exception:  # noqa: BLE001 - a built-in with another constructor
        headline = Exception(text)
    try:
        led = Exception.__new__(_led_class(type(error)))
        led.args = error.args
        led.__dict__.update(vars(error))
    except Exception:  # noqa: BLE001 - a type that can't be copied: as it is
        return error
    led._headline = headline  # type: ignore[attr-defined]
    return led


def _headline_of(error: BaseException) -> BaseException | None:
    return error.__dict__.get("_headline")


def _keep_headline(error: BaseException, value: BaseException | None) -> None:
    """PySpark's simplified traceback sets ``__cause__ = None``: the headline stays."""


#: The subclass :func:`_led_class` made for each exception type.
_LED: dict[type[Exception], type[Exception]] = {}


def _led_class(cls: type[Exception]) -> type[Exception]:
    """A subclass of ``cls`` whose ``__cause__`` is its headline, whatever is
    set; named as ``cls`` is, so tracebacks show the same type."""
    if cls not in _LED:
        _LED[cls] = type(
            cls.__name__,
            (cls,),
            {
                "__cause__": property(_headline_of, _keep_headline),
                "__module__": cls.__module__,
                "__qualname__": cls.__qualname__,
            },
        )
    return _LED[cls]


def _below(error: BaseException) -> TracebackType | None:
    """``error``'s frames below the wrapper catching it (raising adds that one again)."""
    tb = error.__traceback__
    return tb.tb_next if tb is not None else None


def headline_first(func: Callable[_P, _R]) -> Callable[_P, _R]:
    """Decorate a data source method so that its errors reach Spark with
    their message first (see the module's docstring)."""
    if inspect.isgeneratorfunction(func):  # errors come while it is iterated

        @functools.wraps(func)
        def generator(*args: _P.args, **kwargs: _P.kwargs) -> Any:
            try:
                return (yield from func(*args, **kwargs))  # type: ignore[misc]
            except Exception as error:
                led = with_headline(error)
                if led is error:
                    raise
                raise led.with_traceback(_below(error)) from None

        return generator  # type: ignore[return-value]

    @functools.wraps(func)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return func(*args, **kwargs)
        except Exception as error:
            led = with_headline(error)
            if led is error:
                raise
            raise led.with_traceback(_below(error)) from None

    return wrapper
