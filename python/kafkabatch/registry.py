"""A small, cached Confluent Schema Registry client (REST API, read-only).

Only what reading Confluent-framed values needs: a schema by id, a
subject's versions, the subjects an id is registered under. Every answer is
cached per process; basic auth and bearer tokens come from the URL or from
confluent-kafka's configuration names.

>>> registry = SchemaRegistry("http://registry:8081")        # doctest: +SKIP
>>> registry.schema(1)                                        # doctest: +SKIP
'{"type":"record","name":"Order",...}'
"""

from __future__ import annotations

import base64
import json
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from typing import Any

#: confluent-kafka's ``SchemaRegistryClient`` configuration names we honour.
BASIC_AUTH = "basic.auth.user.info"
BEARER_TOKEN = "bearer.auth.token"


class SchemaRegistryError(RuntimeError):
    """The registry could not be reached or refused a request."""


class SchemaRegistry:
    """Read schemas from a Confluent Schema Registry over HTTP(S).

    ``url`` may carry ``user:password@`` for basic auth; ``basic_auth``
    (``"user:password"``) and ``bearer_token`` set the ``Authorization``
    header instead.

    >>> SchemaRegistry("http://localhost:8081", bearer_token="t0k3n").url   # doctest: +SKIP
    'http://localhost:8081'
    """

    def __init__(
        self,
        url: str,
        *,
        basic_auth: str | None = None,
        bearer_token: str | None = None,
        timeout: float = 10.0,
    ) -> None:
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"schema registry URL must be http(s)://host[:port], not {url!r}")
        if parts.username is not None and basic_auth is None:
            basic_auth = f"{urllib.parse.unquote(parts.username)}:{urllib.parse.unquote(parts.password or '')}"
        netloc = parts.hostname + (f":{parts.port}" if parts.port else "")
        self.url = urllib.parse.urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))
        self._headers = {"Accept": "application/vnd.schemaregistry.v1+json, application/json"}
        if basic_auth is not None:
            self._headers["Authorization"] = "Basic " + base64.b64encode(basic_auth.encode()).decode()
        elif bearer_token is not None:
            self._headers["Authorization"] = f"Bearer {bearer_token}"
        self._timeout = timeout
        self._cache: dict[str, Any] = {}
        self._lock = threading.Lock()

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> SchemaRegistry:
        """From confluent-kafka's ``SchemaRegistryClient`` configuration
        (``url``, ``basic.auth.user.info``, ``bearer.auth.token``)."""
        return cls(str(config["url"]), basic_auth=config.get(BASIC_AUTH), bearer_token=config.get(BEARER_TOKEN))

    def _get(self, path: str) -> Any:
        with self._lock:
            if path in self._cache:
                return self._cache[path]
        request = urllib.request.Request(self.url + path, headers=self._headers)
        try:
            with urllib.request.urlopen(request, timeout=self._timeout) as response:
                answer = json.loads(response.read())
        except urllib.error.HTTPError as error:
            detail = error.read().decode(errors="replace")[:200]
            raise SchemaRegistryError(
                f"schema registry {self.url}: GET {path} answered {error.code}: {detail}"
            ) from None
        except (urllib.error.URLError, OSError) as error:
            reason = getattr(error, "reason", error)
            raise SchemaRegistryError(f"schema registry {self.url} cannot be reached: {reason}") from None
        with self._lock:
            self._cache[path] = answer
        return answer

    def check(self) -> None:
        """Raise :class:`SchemaRegistryError` unless the registry answers."""
        self._get("/subjects")

    def schema(self, schema_id: int) -> str:
        """The schema registered under ``schema_id``, as JSON text."""
        return str(self._get(f"/schemas/ids/{int(schema_id)}")["schema"])

    def subjects(self) -> list[str]:
        return [str(s) for s in self._get("/subjects")]

    def subject_schemas(self, subject: str) -> list[tuple[int, str]]:
        """``(id, schema)`` of every version of ``subject``, oldest first."""
        quoted = urllib.parse.quote(subject, safe="")
        out = []
        for version in self._get(f"/subjects/{quoted}/versions"):
            entry = self._get(f"/subjects/{quoted}/versions/{int(version)}")
            out.append((int(entry["id"]), str(entry["schema"])))
        return out

    def latest(self, subject: str) -> tuple[int, str]:
        """``(id, schema)`` of the newest version of ``subject``."""
        entry = self._get(f"/subjects/{urllib.parse.quote(subject, safe='')}/versions/latest")
        return int(entry["id"]), str(entry["schema"])

    def subjects_of(self, schema_id: int) -> list[str]:
        """The subjects ``schema_id`` is registered under (empty if the registry can't say)."""
        try:
            return [str(v["subject"]) for v in self._get(f"/schemas/ids/{int(schema_id)}/versions")]
        except SchemaRegistryError:
            return []


def registry_of(spec: Any) -> SchemaRegistry | None:
    """A :class:`SchemaRegistry` for a URL, a confluent-style config dict
    (with ``url``) or a client; None for anything else (a dict of schemas)."""
    if isinstance(spec, SchemaRegistry):
        return spec
    if isinstance(spec, str):
        return SchemaRegistry(spec)
    if isinstance(spec, Mapping) and "url" in spec:
        return SchemaRegistry.from_config(spec)
    return None
