"""Errors in the caller's vocabulary: the value options' messages, written
with Python's keyword names (``value_format='json' needs value_schema``),
said again with the command line's (``--value-format json needs
--value-schema``) or the Spark source's (``valueFormat=json needs
valueSchema``) names. One home, so a message added for a new format is
translated everywhere too (the table is the core's, shared with the JVM source).

>>> in_words("value_format='json' needs value_schema (a pyarrow struct type or schema)", CLI)
'--value-format json needs --value-schema (a JSON Schema, Avro record schema or Spark DDL: a file or the text)'
>>> in_words("key_format must be one of binary, string, json, avro, not 'xml'", SPARK)
"keyFormat must be one of binary, string, json, avro, not 'xml'"
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

_P = ParamSpec("_P")
_R = TypeVar("_R")

#: The command line's names (``kafkabatch convert``).
CLI = "cli"

#: The ``kafka-log`` Spark source's option names.
SPARK = "spark"


def in_words(message: str, words: str) -> str:
    """``message`` with the value options' Python names replaced by ``words``'
    (:data:`CLI` or :data:`SPARK`); the table is the core's
    (``kafkabatch::vocabulary``), which the JVM source's errors use too."""
    from kafkabatch._kafkabatch import _in_words

    return _in_words(message, words)


def error_in_words(error: BaseException, words: str) -> BaseException:
    """The same kind of error (attributes kept), its message :func:`in_words`;
    other errors (a batch decoding error, whose message names files) as they are."""
    from kafkabatch._kafkabatch import KafkaBatchError, TieredStorageError, ValueDecodeError

    if (
        not isinstance(error, (ValueError, TypeError))
        or (isinstance(error, KafkaBatchError) and not isinstance(error, (ValueDecodeError, TieredStorageError)))
        or len(error.args) != 1
    ):
        return error
    text = in_words(str(error), words)
    if text == str(error):
        return error
    try:
        better = type(error)(text)
        for name, value in vars(error).items():
            setattr(better, name, value)
    except Exception:  # noqa: BLE001 - an error type with another constructor: keep it
        return error
    return better


def speaks(words: str) -> Callable[[Callable[_P, _R]], Callable[_P, _R]]:
    """Decorate a function whose ValueError/TypeError messages should use ``words``.

    >>> @speaks(SPARK)
    ... def check(): raise ValueError("value_format='json' needs value_schema")
    >>> check()
    Traceback (most recent call last):
    ...
    ValueError: valueFormat=json needs valueSchema
    """

    def decorate(func: Callable[_P, _R]) -> Callable[_P, _R]:
        if inspect.isgeneratorfunction(func):  # errors come while it is iterated

            @functools.wraps(func)
            def generator(*args: _P.args, **kwargs: _P.kwargs) -> Any:
                try:
                    return (yield from func(*args, **kwargs))  # type: ignore[misc]
                except (ValueError, TypeError) as error:
                    better = error_in_words(error, words)
                    if better is error:
                        raise
                    raise better from None

            return generator

        @functools.wraps(func)
        def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
            try:
                return func(*args, **kwargs)
            except (ValueError, TypeError) as error:
                better = error_in_words(error, words)
                if better is error:
                    raise
                raise better from None

        return wrapper

    return decorate
