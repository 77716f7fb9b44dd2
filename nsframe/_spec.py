"""Temporary re-export of `nsframe._protocol.routes` (and the default delimiter).

The server still imports ``nsframe._spec``; once it imports `nsframe._protocol`
directly, this module goes. New code imports `nsframe._protocol.routes`.
"""

from __future__ import annotations

from nsframe._protocol.ids import DEFAULT_DELIMITER as DEFAULT_DELIMITER
from nsframe._protocol.routes import *  # noqa: F403
