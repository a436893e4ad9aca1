"""Just enough of a Kafka 0.10.0 broker, on 127.0.0.1, to capture the record
sets a real producer sends: Metadata v0/v1 (this broker leads partition 0 of
every topic asked for) and Produce v0-v2 (the record set is kept and
acknowledged). librdkafka talking to it with ``api.version.request=false``
and ``broker.version.fallback=0.10.0.0`` writes magic-1 message sets, exactly
the bytes of its Produce requests (no broker offset assignment).

Layouts: Kafka protocol guide (request header v1: api_key int16, api_version
int16, correlation_id int32, client_id nullable string; response header:
correlation_id int32).

>>> with FakeBroker() as broker:                                          # doctest: +SKIP
...     producer = Producer({"bootstrap.servers": broker.address, ...})
...     broker.record_sets                                                # [(topic, partition, bytes)]
"""

from __future__ import annotations

import socket
import struct
import threading
from typing import Any

PRODUCE, METADATA, API_VERSIONS = 0, 3, 18
#: What this broker speaks, as (api key, min version, max version): Kafka 0.10.0's
#: Produce v2 is the last one that carries magic-1 message sets.
#: librdkafka turns on magic 1 (its MsgVer1 feature) only when Fetch v2 is there too,
#: and lz4 only with FindCoordinator (10) v0, as a 0.10.0 broker lists them.
SUPPORTED = ((PRODUCE, 0, 2), (1, 0, 2), (METADATA, 0, 1), (10, 0, 0), (API_VERSIONS, 0, 0))


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def take(self, fmt: str) -> Any:
        (value,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return value

    def string(self) -> str | None:
        n = self.take(">h")
        if n < 0:
            return None
        text = self.data[self.pos : self.pos + n].decode()
        self.pos += n
        return text

    def bytes_(self) -> bytes | None:
        n = self.take(">i")
        if n < 0:
            return None
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out


def _string(text: str | None) -> bytes:
    if text is None:
        return struct.pack(">h", -1)
    raw = text.encode()
    return struct.pack(">h", len(raw)) + raw


class FakeBroker:
    """A one-node "cluster" on 127.0.0.1 that records every Produce request's record sets."""

    def __init__(self, magic: int = 1) -> None:
        # A 0.9 broker (Produce/Fetch v1) gets magic-0 message sets, a 0.10.0 one magic 1.
        self.supported = SUPPORTED if magic == 1 else ((PRODUCE, 0, 1), (1, 0, 1), *SUPPORTED[2:])
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = self._server.getsockname()[1]
        self.address = f"127.0.0.1:{self.port}"
        self.record_sets: list[tuple[str, int, bytes]] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def __enter__(self) -> FakeBroker:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._server.close()

    def _serve(self) -> None:
        self._server.settimeout(0.2)
        while not self._stop.is_set():
            try:
                conn, _ = self._server.accept()
            except (TimeoutError, OSError):
                continue
            threading.Thread(target=self._client, args=(conn,), daemon=True).start()

    def _client(self, conn: socket.socket) -> None:
        conn.settimeout(30)
        with conn:
            while not self._stop.is_set():
                head = self._recv(conn, 4)
                if head is None:
                    return
                request = self._recv(conn, struct.unpack(">i", head)[0])
                if request is None:
                    return
                reply = self._answer(_Reader(request))
                if reply is not None:
                    conn.sendall(struct.pack(">i", len(reply)) + reply)

    @staticmethod
    def _recv(conn: socket.socket, n: int) -> bytes | None:
        out = b""
        while len(out) < n:
            try:
                chunk = conn.recv(n - len(out))
            except OSError:
                return None
            if not chunk:
                return None
            out += chunk
        return out

    def _answer(self, r: _Reader) -> bytes | None:
        api_key, version, correlation = r.take(">h"), r.take(">h"), r.take(">i")
        r.string()  # client id
        header = struct.pack(">i", correlation)
        if api_key == API_VERSIONS:
            # Answered in v0's layout whatever the version asked (as brokers
            # do); a version above 0 gets UNSUPPORTED_VERSION (35) and the
            # client asks again with v0.
            error = 0 if version == 0 else 35
            body = struct.pack(">hi", error, len(self.supported))
            body += b"".join(struct.pack(">hhh", *api) for api in self.supported)
            return header + body
        if api_key == METADATA and version <= 1:
            n = r.take(">i")
            topics = [r.string() for _ in range(max(n, 0))]
            brokers = struct.pack(">i", 1) + struct.pack(">i", 0) + _string("127.0.0.1") + struct.pack(">i", self.port)
            if version == 1:
                brokers += _string(None) + struct.pack(">i", 0)  # rack; controller id
            body = struct.pack(">i", len(topics))
            for topic in topics:
                body += struct.pack(">h", 0) + _string(topic)
                if version == 1:
                    body += b"\x00"  # is_internal
                # one partition, led by node 0, replicas [0], isr [0]
                body += struct.pack(">ihiiiiii", 1, 0, 0, 0, 1, 0, 1, 0)
            return header + brokers + body
        if api_key == PRODUCE and version <= 2:
            acks = r.take(">h")
            r.take(">i")  # timeout
            response = []
            for _ in range(r.take(">i")):
                topic = r.string() or ""
                parts = []
                for _ in range(r.take(">i")):
                    partition = r.take(">i")
                    data = r.bytes_() or b""
                    with self._lock:
                        self.record_sets.append((topic, partition, data))
                    parts.append(partition)
                response.append((topic, parts))
            if acks == 0:
                return None
            body = struct.pack(">i", len(response))
            for topic, parts in response:
                body += _string(topic) + struct.pack(">i", len(parts))
                for partition in parts:
                    body += struct.pack(">ihq", partition, 0, 0)
                    if version >= 2:
                        body += struct.pack(">q", -1)  # log append time
            if version >= 1:
                body += struct.pack(">i", 0)  # throttle time
            return header + body
        raise ValueError(f"the fake broker can't answer api {api_key} v{version}")
