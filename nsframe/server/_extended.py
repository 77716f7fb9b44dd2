"""(Placeholder: routes arrive with their issue.)"""

from __future__ import annotations

from starlette.routing import Route

routes: list[Route] = []
