"""Errors in the caller's vocabulary: the value options' messages, written
with Python's keyword names (``value_format='json' needs value_schema``),
said again with the command line's (``--value-format json needs
--value-schema``) or the Spark source's (``valueFormat=json needs
valueSchema``) names. One home, so a message added for a new format is
translated everywhere too.

>>> in_words("value_format='json' needs value_schema (a pyarrow struct type or schema)", CLI)
'--value-format json needs --value-schema (a JSON Schema, Avro record schema or Spark DDL: a file or the text)'
>>> in_words("key_format must be one of binary, string, json, avro, not 'xml'", SPARK)
"keyFormat must be one of binary, string, json, avro, not 'xml'"
"""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Callable, Mapping
from typing import Any, ParamSpec, TypeVar

_P = ParamSpec("_P")
_R = TypeVar("_R")

_PROTOBUF_SCHEMA = re.compile(
    r"\b(value|key)_schema \(a generated message class, or a dict with 'message' and 'descriptor_set' or 'proto'\)"
)
_FORMAT_IS = re.compile(r"\b(value|key)_format='(\w+)'(?: or '(\w+)')?")
_NAME = re.compile(r"\b(value_format|key_format|value_schema|key_schema|schema_registry|on_value_error|tiered_keys)\b")

#: The command line's names (``kafkabatch convert``).
CLI: Mapping[str, Any] = {
    "format_is": lambda column, fmt: f"--{column}-format {fmt}",
    "names": {
        "value_format": "--value-format",
        "key_format": "--key-format",
        "value_schema": "--value-schema",
        "key_schema": "--key-schema",
        "schema_registry": "--schema-registry",
        "on_value_error": "--on-value-error",
        "tiered_keys": "--tiered-key",
    },
    "json_schema": "(a JSON Schema, Avro record schema or Spark DDL: a file or the text)",
    "protobuf_schema": lambda c: f"--{c}-message with --{c}-schema (a .proto file) or --{c}-descriptor-set",
}

#: The ``kafka-log`` Spark source's option names.
SPARK: Mapping[str, Any] = {
    "format_is": lambda column, fmt: f"{column}Format={fmt}",
    "names": {
        "value_format": "valueFormat",
        "key_format": "keyFormat",
        "value_schema": "valueSchema",
        "key_schema": "keySchema",
        "schema_registry": "schemaRegistry",
        "on_value_error": "onValueError",
        "tiered_keys": "tieredKeys",
    },
    "json_schema": "(a Spark DDL string or StructType JSON)",
    "protobuf_schema": lambda c: f"{c}Message with {c}Schema (.proto text or file) or {c}DescriptorSet",
}


def in_words(message: str, words: Mapping[str, Any]) -> str:
    """``message`` with the value options' Python names replaced by ``words``
    (:data:`CLI` or :data:`SPARK`)."""

    def format_is(match: re.Match[str]) -> str:
        column, first, second = match.groups()
        text: str = words["format_is"](column, first)
        return text + (f" or {second}" if second else "")

    message = _PROTOBUF_SCHEMA.sub(lambda m: words["protobuf_schema"](m[1]), message)
    message = _FORMAT_IS.sub(format_is, message)
    message = _NAME.sub(lambda m: words["names"][m[1]], message)
    return message.replace("(a pyarrow struct type or schema)", words["json_schema"])


def error_in_words(error: BaseException, words: Mapping[str, Any]) -> BaseException:
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


def speaks(words: Mapping[str, Any]) -> Callable[[Callable[_P, _R]], Callable[_P, _R]]:
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
