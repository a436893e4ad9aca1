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
import functools
import json
import os
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any

#: confluent-kafka's ``SchemaRegistryClient`` configuration names we honour.
BASIC_AUTH = "basic.auth.user.info"
BEARER_TOKEN = "bearer.auth.token"


class SchemaRegistryError(RuntimeError):
    """The registry could not be reached or refused a request (``status``:
    the HTTP status it answered, when it answered)."""

    status: int | None = None


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
        self._reachable = False

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> SchemaRegistry:
        """From confluent-kafka's ``SchemaRegistryClient`` configuration
        (``url``, ``basic.auth.user.info``, ``bearer.auth.token``)."""
        return cls(str(config["url"]), basic_auth=config.get(BASIC_AUTH), bearer_token=config.get(BEARER_TOKEN))

    def _get(self, path: str, *, cache: bool = True) -> Any:
        """GET ``path`` as JSON; answers that can't change (a schema by id, a
        numbered version) are kept, lists and ``latest`` are asked each time."""
        with self._lock:
            if cache and path in self._cache:
                return self._cache[path]
        request = urllib.request.Request(self.url + path, headers=self._headers)
        try:
            with urllib.request.urlopen(request, timeout=self._timeout) as response:
                answer = json.loads(response.read())
        except urllib.error.HTTPError as error:
            detail = error.read().decode(errors="replace")[:200]
            refused = SchemaRegistryError(f"schema registry {self.url}: GET {path} answered {error.code}: {detail}")
            refused.status = error.code
            raise refused from None
        except (urllib.error.URLError, OSError) as error:
            reason = getattr(error, "reason", error)
            raise SchemaRegistryError(f"schema registry {self.url} cannot be reached: {reason}") from None
        if cache:
            with self._lock:
                self._cache[path] = answer
        return answer

    def check(self) -> None:
        """Raise :class:`SchemaRegistryError` unless the registry answers (asked
        until it has answered once)."""
        if not self._reachable:
            self._get("/subjects", cache=False)
            self._reachable = True

    def schema(self, schema_id: int) -> str:
        """The schema registered under ``schema_id``, as JSON text."""
        return str(self._get(f"/schemas/ids/{int(schema_id)}")["schema"])

    def subjects(self) -> list[str]:
        return [str(s) for s in self._get("/subjects", cache=False)]

    def subject_schemas(self, subject: str) -> list[tuple[int, str]]:
        """``(id, schema)`` of every version of ``subject``, oldest first."""
        quoted = urllib.parse.quote(subject, safe="")
        out = []
        for version in self._get(f"/subjects/{quoted}/versions", cache=False):
            entry = self._get(f"/subjects/{quoted}/versions/{int(version)}")
            out.append((int(entry["id"]), str(entry["schema"])))
        return out

    def latest(self, subject: str) -> tuple[int, str]:
        """``(id, schema)`` of the newest version of ``subject``."""
        entry = self._get(f"/subjects/{urllib.parse.quote(subject, safe='')}/versions/latest", cache=False)
        return int(entry["id"]), str(entry["schema"])

    def subjects_of(self, schema_id: int) -> list[str]:
        """The subjects ``schema_id`` is registered under (empty if the registry can't say)."""
        try:
            return [str(v["subject"]) for v in self._get(f"/schemas/ids/{int(schema_id)}/versions", cache=False)]
        except SchemaRegistryError:
            return []

    def schema_entry(self, schema_id: int) -> tuple[str, list[Reference]]:
        """The schema registered under ``schema_id`` and its references
        (``(import name, subject, version)``, as Protobuf schemas carry them)."""
        answer = self._get(f"/schemas/ids/{int(schema_id)}")
        return str(answer["schema"]), _references(answer.get("references"))

    def schema_by_guid(self, guid: str) -> tuple[str, list[Reference]]:
        """The schema with GUID ``guid`` (what header schema ids carry) and its references."""
        answer = self._get(f"/schemas/guids/{urllib.parse.quote(guid, safe='')}")
        return str(answer["schema"]), _references(answer.get("references"))

    def version_entry(self, subject: str, version: int) -> tuple[int, str, list[Reference]]:
        """``(id, schema, references)`` of one version of ``subject``."""
        entry = self._get(f"/subjects/{urllib.parse.quote(subject, safe='')}/versions/{int(version)}")
        return int(entry["id"]), str(entry["schema"]), _references(entry.get("references"))

    def subject_entries(self, subject: str) -> list[tuple[int, str, list[Reference]]]:
        """``(id, schema, references)`` of every version of ``subject``, oldest first."""
        quoted = urllib.parse.quote(subject, safe="")
        return [self.version_entry(subject, int(v)) for v in self._get(f"/subjects/{quoted}/versions", cache=False)]


#: A schema reference: the name the schema imports it by, its subject and version.
Reference = tuple[str, str, int]


def _references(found: Any) -> list[Reference]:
    out = []
    for ref in found or ():
        if isinstance(ref, Mapping):
            out.append((str(ref["name"]), str(ref["subject"]), int(ref["version"])))
        else:  # confluent-kafka's SchemaReference
            out.append((str(ref.name), str(ref.subject), int(ref.version)))
    return out


class ConfluentClientRegistry(SchemaRegistry):
    """The same questions asked of a confluent-kafka ``SchemaRegistryClient``
    (a real one, or its ``mock://`` client), which caches what it fetches.

    >>> registry = ConfluentClientRegistry(SchemaRegistryClient.new_client({"url": "mock://x"}))  # doctest: +SKIP
    """

    def __init__(self, client: Any) -> None:
        self._client = client
        self.url = f"{type(client).__name__} client"
        self._reachable = False

    def _ask(self, what: str, call: Any) -> Any:
        try:
            return call()
        except Exception as error:  # confluent-kafka raises its own error types, and httpx's
            refused = SchemaRegistryError(f"schema registry client: {what}: {error}")
            refused.status = getattr(error, "http_status_code", None)
            raise refused from None

    def check(self) -> None:
        if not self._reachable:
            self._ask("list subjects", self._client.get_subjects)
            self._reachable = True

    def schema(self, schema_id: int) -> str:
        return str(self._ask(f"schema id {schema_id}", lambda: self._client.get_schema(int(schema_id))).schema_str)

    def subjects(self) -> list[str]:
        return [str(s) for s in self._ask("list subjects", self._client.get_subjects)]

    def subject_schemas(self, subject: str) -> list[tuple[int, str]]:
        out = []
        for version in sorted(self._ask(f"versions of {subject}", lambda: self._client.get_versions(subject))):
            entry = self._ask(f"{subject} version {version}", lambda v=version: self._client.get_version(subject, v))
            out.append((int(entry.schema_id), str(entry.schema.schema_str)))
        return out

    def latest(self, subject: str) -> tuple[int, str]:
        entry = self._ask(f"latest of {subject}", lambda: self._client.get_latest_version(subject))
        return int(entry.schema_id), str(entry.schema.schema_str)

    def schema_entry(self, schema_id: int) -> tuple[str, list[Reference]]:
        schema = self._ask(f"schema id {schema_id}", lambda: self._client.get_schema(int(schema_id)))
        return str(schema.schema_str), _references(schema.references)

    def schema_by_guid(self, guid: str) -> tuple[str, list[Reference]]:
        schema = self._ask(f"schema GUID {guid}", lambda: self._client.get_schema_by_guid(guid))
        return str(schema.schema_str), _references(schema.references)

    def version_entry(self, subject: str, version: int) -> tuple[int, str, list[Reference]]:
        entry = self._ask(f"{subject} version {version}", lambda: self._client.get_version(subject, int(version)))
        return int(entry.schema_id), str(entry.schema.schema_str), _references(entry.schema.references)

    def subject_entries(self, subject: str) -> list[tuple[int, str, list[Reference]]]:
        versions = sorted(self._ask(f"versions of {subject}", lambda: self._client.get_versions(subject)))
        return [self.version_entry(subject, int(v)) for v in versions]

    def subjects_of(self, schema_id: int) -> list[str]:
        lookup = getattr(self._client, "get_subjects_by_schema_id", None)
        try:
            found = [str(s) for s in lookup(int(schema_id))] if lookup is not None else []
        except Exception:  # an older client, or the mock client, without the lookup
            found = []
        if found:
            return found
        return [s for s in self.subjects() if any(i == int(schema_id) for i, _ in self.subject_schemas(s))]


def is_registry_file(spec: Any) -> bool:
    """Whether ``spec`` names a JSON file of ``{schema id: schema}`` (a path
    ending in ``.json``, not a URL) rather than a registry."""
    text = str(spec) if isinstance(spec, (str, os.PathLike)) else ""
    return bool(text) and "://" not in text and text.strip().lower().endswith(".json")


def registry_file(spec: Any) -> Any:
    """``{schema id: schema}`` from a JSON file such as ``kafkabatch generate``
    writes (``schemas/registry.json``) when ``spec`` names one; else ``spec``.

    >>> registry_file("sample-logs/schemas/registry.json")   # doctest: +SKIP
    {1: {'type': 'record', 'name': 'Shipment', ...}, 2: {...}}
    """
    if not is_registry_file(spec):
        return spec
    path = Path(spec)
    if not path.is_file():
        raise ValueError(f"schema_registry {str(spec)!r}: file not found")
    document = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(document, dict):
        raise ValueError(f"schema_registry {str(spec)!r}: expected a JSON object of schema id -> schema")
    return {int(k): v for k, v in document.items()}


def registry_of(spec: Any) -> SchemaRegistry | None:
    """A :class:`SchemaRegistry` for a URL, a confluent-style config dict
    (with ``url``) or a client (ours, or confluent-kafka's
    ``SchemaRegistryClient``); None for anything else (a dict of schemas).
    One client per URL and credentials in a process, so each schema id is
    fetched once however many calls name the registry."""
    if isinstance(spec, SchemaRegistry):
        return spec
    if hasattr(spec, "get_schema") and hasattr(spec, "get_latest_version"):
        return ConfluentClientRegistry(spec)
    if is_registry_file(spec):
        return None  # a file of {schema id: schema}, read by registry_file
    if isinstance(spec, str):
        return _client(spec, None, None)
    if isinstance(spec, Mapping) and "url" in spec:
        return _client(str(spec["url"]), spec.get(BASIC_AUTH), spec.get(BEARER_TOKEN))
    return None


@functools.lru_cache(maxsize=64)
def _client(url: str, basic_auth: str | None, bearer_token: str | None) -> SchemaRegistry:
    return SchemaRegistry(url, basic_auth=basic_auth, bearer_token=bearer_token)
