"""The HTTP client under `Connection`, in three layers:

- `wire`: answers off the wire (JSON, Arrow IPC decoded as it arrives) and paged listings;
- `transport`: the session, URLs, timeouts, retries and error answers as exceptions;
- `operations`: `Client`, one method per REST operation.

`Client` is public as `nsframe.Client`; the modules here are not.
"""

from __future__ import annotations

from nsframe._client.operations import Client

__all__ = ["Client"]
