"""What a worker of `nsframe serve` is running, readable after the worker died.

A native crash (a SIGSEGV in Lance) ends the worker process before Python can log
anything. So each worker keeps a small file in shared memory (``/dev/shm`` where there
is one), mapped into its address space: `InFlight` writes an entry there when a request
starts (method, path, request id, content type; then the first bytes of a JSON body) and
clears it when the request ends. That costs memory writes, no system call. The
supervisor (`_workers`) reads the file of a worker that died, logs what it was running
(`describe`, which redacts), and removes it.

Layout: an 8-byte header (a count of requests running without an entry, when more than
`ENTRIES` run at once), then `ENTRIES` entries of `ENTRY_BYTES`: a length and a start
time (`_HEAD`), then that many bytes of NUL-separated fields. Bytes are written before
the length that counts them, so a worker that dies at any instant leaves whole entries.
"""

from __future__ import annotations

import mmap
import os
import re
import struct
import time
import urllib.parse
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from nsframe.server._security.access_log import _SECRET_KEY, printable
from nsframe.server._storage import redact

ENTRIES = 64
ENTRY_BYTES = 512
BODY_BYTES = 256  # of a JSON body: enough for the filter that crashed the engine
_HEADER = struct.Struct("<I4x")  # requests without an entry
_HEAD = struct.Struct("<Id4x")  # length of the fields, start (seconds since the epoch)
_LENGTH = struct.Struct("<I")
_FIELDS = ENTRY_BYTES - _HEAD.size
FILE_BYTES = _HEADER.size + ENTRIES * ENTRY_BYTES
_ZEROS = memoryview(bytes(ENTRY_BYTES))
_SEP = b"\x00"
_REQUEST_ID = b"x-request-id"
_CONTENT_TYPE = b"content-type"


class InFlight:
    """ASGI middleware: keeps this worker's running requests in the file at ``path``."""

    def __init__(self, app: ASGIApp, path: Path) -> None:
        self.app = app
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.ftruncate(fd, FILE_BYTES)
            self._map = mmap.mmap(fd, FILE_BYTES)
        finally:
            os.close(fd)
        self._free = list(range(ENTRIES - 1, -1, -1))
        self._untracked = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if not self._free:
            await self._untracked_call(scope, receive, send)
            return
        # Runs on the event loop's thread, with no await between taking an entry and
        # writing it: no lock is needed.
        offset = _HEADER.size + self._free.pop() * ENTRY_BYTES
        request_id = content_type = b""
        for name, value in scope["headers"]:
            if name == _REQUEST_ID:
                request_id = value
            elif name == _CONTENT_TYPE:
                content_type = value
        fields = _SEP.join((scope["method"].encode(), scope.get("raw_path") or b"",
                            request_id, content_type))[:_FIELDS]
        start = offset + _HEAD.size
        self._map[start:start + len(fields)] = fields
        _HEAD.pack_into(self._map, offset, len(fields), time.time())  # last: now it counts
        if b"json" in content_type:
            receive = self._noting_body(offset, len(fields), receive)
        try:
            await self.app(scope, receive, send)
        finally:
            # Zeroed, not just marked free: no request's bytes stay behind in the file.
            self._map[offset:offset + ENTRY_BYTES] = _ZEROS
            self._free.append((offset - _HEADER.size) // ENTRY_BYTES)

    def _noting_body(self, offset: int, length: int, receive: Receive) -> Receive:
        """``receive``, appending the first bytes of the body to the entry at ``offset``."""
        noted = False

        async def noting() -> Message:
            nonlocal noted
            message = await receive()
            if not noted and message["type"] == "http.request":
                noted = True
                more = (_SEP + message.get("body", b"")[:BODY_BYTES])[:_FIELDS - length]
                end = offset + _HEAD.size + length
                # Appended after the fields, then counted: a worker that dies in between
                # leaves the entry as it was.
                self._map[end:end + len(more)] = more
                _LENGTH.pack_into(self._map, offset, length + len(more))
            return message

        return noting

    async def _untracked_call(self, scope: Scope, receive: Receive, send: Send) -> None:
        self._untracked += 1
        _HEADER.pack_into(self._map, 0, self._untracked)
        try:
            await self.app(scope, receive, send)
        finally:
            self._untracked -= 1
            _HEADER.pack_into(self._map, 0, self._untracked)


@dataclass(frozen=True)
class Running:
    """One request a worker was running: its start time and its raw fields."""

    started: float
    method: bytes
    raw_path: bytes
    request_id: bytes
    content_type: bytes
    body: bytes | None  # the first bytes of a JSON body, once the worker had them


def read(path: Path) -> tuple[list[Running], int]:
    """The requests recorded in the file at ``path``, oldest first, and how many more
    ran without an entry."""
    data = path.read_bytes()
    if len(data) < FILE_BYTES:
        return [], 0
    (untracked,) = _HEADER.unpack_from(data, 0)
    found: list[Running] = []
    for offset in range(_HEADER.size, FILE_BYTES, ENTRY_BYTES):
        length, started = _HEAD.unpack_from(data, offset)
        if not 0 < length <= _FIELDS:
            continue
        start = offset + _HEAD.size
        parts = data[start:start + length].split(_SEP, 4)
        if len(parts) < 4:
            continue
        method, raw_path, request_id, content_type = parts[:4]
        found.append(Running(started, method, raw_path, request_id, content_type,
                             parts[4] if len(parts) == 5 else None))
    found.sort(key=lambda running: running.started)
    return found, untracked


# "key": "value" (or a number, or a string cut off by the prefix's end) in JSON text.
_PAIR = re.compile(r'"((?:[^"\\]|\\.)*)"(\s*:\s*)("(?:[^"\\]|\\.)*(?:"|$)|[^,}\]\s]+)')
_BEARER = re.compile(r"(?i)\bbearer\s+[^\s\"',]+")
SUMMARY_CHARS = 200


def describe(running: Iterable[Running], untracked: int, *,
             secrets: Iterable[str] = (), now: float | None = None) -> str:
    """The requests, for one log line: no header but the request id, no query string,
    JSON values of secret-looking keys, bearer tokens and known secrets masked, every
    character that is not printable escaped, a body cut to `SUMMARY_CHARS`."""
    now = time.time() if now is None else now
    known = sorted({s for s in (*secrets, *redact.secret_values())
                    if len(s) >= redact.MIN_LENGTH}, key=len, reverse=True)
    parts = [_one(each, now, known) for each in running]
    count = len(parts) + untracked
    if untracked:
        parts.append(f"{untracked} more not recorded")
    if not parts:
        return "no request"
    return f"{count} request{'s' if count != 1 else ''}: " + "; ".join(parts)


def _one(running: Running, now: float, secrets: list[str]) -> str:
    path = urllib.parse.unquote(running.raw_path.decode("ascii", "replace"))
    text = f"{_clean(running.method, secrets)} {_clean(path, secrets)}"
    if running.request_id:
        text += f" id={_clean(running.request_id[:64], secrets)}"
    text += f" for {max(0.0, now - running.started):.1f}s"
    if running.body is not None:
        body = _clean(running.body, secrets)
        cut = len(body) > SUMMARY_CHARS or len(running.body) >= BODY_BYTES
        text += f" body={body[:SUMMARY_CHARS]}{'...' if cut else ''}"
    elif running.content_type:
        text += f" ({_clean(running.content_type, secrets)} body)"
    return text


def _clean(value: bytes | str, secrets: list[str]) -> str:
    text = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
    text = _PAIR.sub(_mask_pair, text)
    text = _BEARER.sub("Bearer <redacted>", text)
    for secret in secrets:
        text = text.replace(secret, redact.MASK)
    return printable(text)


def _mask_pair(match: re.Match[str]) -> str:
    key, colon, _ = match.groups()
    if not _SECRET_KEY.search(key):
        return match.group(0)
    return f'"{key}"{colon}"<redacted>"'
