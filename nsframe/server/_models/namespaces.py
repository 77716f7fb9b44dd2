"""Namespace operations: create (mode, properties) and drop (mode, behavior)."""

from __future__ import annotations

from nsframe.server._http.fields import Choice
from nsframe.server._http.validation import Envelope


class CreateMode(Choice):
    CHOICES = ("Create", "ExistOk", "Overwrite")
    DEFAULT = "Create"


class DropMode(Choice):
    CHOICES = ("Fail", "Skip")
    DEFAULT = "Fail"


class DropBehavior(Choice):
    CHOICES = ("Restrict", "Cascade")
    DEFAULT = "Restrict"


class CreateNamespaceRequest(Envelope, kw_only=True):
    mode: CreateMode = CreateMode.default()
    properties: dict[str, str] | None = None


class DropNamespaceRequest(Envelope, kw_only=True):
    mode: DropMode = DropMode.default()
    behavior: DropBehavior = DropBehavior.default()
