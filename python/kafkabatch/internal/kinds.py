"""Which topics are Kafka's internal topics, and the ``internal=`` keyword.

>>> resolve_internal("auto").kind_for("__consumer_offsets")
'consumer_offsets'
>>> resolve_internal({"mirror.__consumer_offsets": "consumer_offsets"}).kind_for("mirror.__consumer_offsets")
'consumer_offsets'
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from kafkabatch._util import closest

Kind = Literal["consumer_offsets", "transaction_state", "share_group_state", "cluster_metadata", "remote_log_metadata"]

#: The kinds of internal topic whose records kafkabatch decodes.
KINDS: tuple[Kind, ...] = (
    "consumer_offsets",
    "transaction_state",
    "share_group_state",
    "cluster_metadata",
    "remote_log_metadata",
)

#: Kafka's topic names for them (how ``internal="auto"`` recognises a topic).
INTERNAL_TOPICS: dict[str, Kind] = {
    "__consumer_offsets": "consumer_offsets",
    "__transaction_state": "transaction_state",
    "__share_group_state": "share_group_state",
    "__cluster_metadata": "cluster_metadata",
    "__remote_log_metadata": "remote_log_metadata",
}

#: The keywords that ask for internal topics' records decoded.
INTERNAL_OPTIONS: tuple[str, ...] = ("internal", "definitions", "internal_json")

InternalOption = Any
"""``"auto"`` (by topic name), ``"none"``/``None``/``False`` (off), a kind
(``"consumer_offsets"``, ...) or a topic name of :data:`INTERNAL_TOPICS`
for every topic read, or a mapping ``{topic: kind}`` added to the names
``"auto"`` knows (``"none"`` as a kind turns a name off)."""


@dataclass(frozen=True)
class Internal:
    """A resolved ``internal=`` option: the kind for every topic, or a topic → kind map."""

    kind: Kind | None = None
    topics: Mapping[str, Kind] = field(default_factory=dict)
    definitions: str | None = None
    json: bool = False

    def kind_for(self, topic: str | None) -> Kind | None:
        """The kind of ``topic``'s records, or None when it is not decoded."""
        if self.kind is not None:
            return self.kind
        return None if topic is None else self.topics.get(topic)


def _kind(value: Any, what: str) -> Kind | None:
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str, not {type(value).__name__}")
    name = value.strip().lower().replace("-", "_")
    if name == "none":
        return None
    if name in KINDS:
        return cast(Kind, name)
    if name in INTERNAL_TOPICS:
        return INTERNAL_TOPICS[name]
    if ("__" + name) in INTERNAL_TOPICS:
        return INTERNAL_TOPICS["__" + name]
    choices = ["auto", "none", *KINDS]
    close = closest(name, choices)
    hint = f"; did you mean {close!r}?" if close else ""
    raise ValueError(f"unknown {what} {value!r}: use 'auto', 'none' or one of {', '.join(KINDS)}{hint}")


def resolve_internal(internal: InternalOption, definitions: Any = None, json: bool = False) -> Internal | None:
    """``internal=`` (with ``definitions=``, a folder of Kafka's JSON message
    definitions, and ``json``) checked, or None when nothing is decoded.

    >>> resolve_internal("none") is None
    True
    >>> resolve_internal("consumer-offsets").kind
    'consumer_offsets'
    """
    if definitions is not None:
        if not isinstance(definitions, (str, os.PathLike)):
            raise TypeError(f"definitions must be a folder path, not {type(definitions).__name__}")
        definitions = os.fspath(definitions)
        if not os.path.isdir(definitions):
            raise FileNotFoundError(
                f"definitions: no folder {definitions!r} (a folder of Kafka's *.json message definitions)"
            )
    if not isinstance(json, bool):
        raise TypeError(f"internal_json must be a bool, not {type(json).__name__}")
    if internal is None or internal is False:
        return None
    if isinstance(internal, Mapping):
        topics = dict(INTERNAL_TOPICS)
        for topic, kind in internal.items():
            if not isinstance(topic, str):
                raise TypeError(f"internal: topic names must be str, not {type(topic).__name__}")
            resolved = _kind(kind, f"internal kind for topic {topic!r}")
            if resolved is None:
                topics.pop(topic, None)
            else:
                topics[topic] = resolved
        return Internal(topics=topics, definitions=definitions, json=json)
    if isinstance(internal, str) and internal.strip().lower() == "auto":
        return Internal(topics=dict(INTERNAL_TOPICS), definitions=definitions, json=json)
    if internal is True:
        raise TypeError("internal=True is ambiguous: use internal='auto' (by topic name) or a kind")
    kind = _kind(internal, "internal")
    return None if kind is None else Internal(kind=kind, definitions=definitions, json=json)


def pop_internal(options: dict[str, Any]) -> Internal | None:
    """Take the :data:`INTERNAL_OPTIONS` out of ``options``, resolved."""
    internal = options.pop("internal", None)
    definitions = options.pop("definitions", None)
    json = options.pop("internal_json", False)
    resolved = resolve_internal(internal, definitions, json)
    if resolved is None and (definitions is not None or json):
        raise ValueError("definitions= and internal_json= need internal= ('auto' or a kind)")
    return resolved


def kind_of_topic(topic: str) -> Kind | None:
    """The kind of one of Kafka's internal topics by its name, else None.

    >>> kind_of_topic("__cluster_metadata"), kind_of_topic("orders")
    ('cluster_metadata', None)
    """
    return INTERNAL_TOPICS.get(topic)
