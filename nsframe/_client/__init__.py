"""The client under `Connection`, in layers:

- `exchange`, `http`, `inprocess`: the transport protocol and its two transports
  (HTTP through urllib3, the embedded server in process), public as `nsframe.transport`;
- `wire`: answers off the wire (JSON, Arrow IPC decoded as it arrives) and paged listings;
- `transport`: headers, URLs, timeouts, retries and error answers as exceptions, the
  same over any transport;
- `operations`: `Client`, one method per REST operation.

`Client` is public as `nsframe.Client`; the modules here are not.
"""

from __future__ import annotations

from nsframe._client.operations import Client

__all__ = ["Client"]
