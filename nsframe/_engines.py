"""Engines at a table's location: pylance, Daft and Ray open the Lance dataset that holds a
table directly, with the storage options the server vends (docs/operations.md).

The location is used exactly as describe gives it. On an ``s3+ddb://`` root it keeps its
scheme and ``?ddbTableName=``, and the options carry ``dynamodb_endpoint``: that is what
makes an engine commit through the DynamoDB table, as the server does. Stripping the
scheme would read (and commit) around it.

Every engine is imported when a method needs it, so ``import nsframe`` stays light.
"""

from __future__ import annotations

import importlib
import urllib.parse
from collections.abc import Mapping
from typing import Any

from nsframe.exceptions import StorageOptionsNotVendedError

# Where to get each engine, for the message of a missing one.
INSTALL = {
    "lance": "pip install 'nsframe[server]' (pylance)",
    "daft": "pip install 'nsframe[engines]' (daft and daft-lance)",
    "daft_lance": "pip install 'nsframe[engines]' (daft and daft-lance)",
    "ray": "pip install 'nsframe[ray]' (ray[data])",
}


def engine(module: str, method: str) -> Any:
    """Import ``module`` for ``method``, or say which extra to install."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        package = module.split(".")[0]
        raise ImportError(f"Table.{method}() needs {package}, which is not installed: "
                          f"{INSTALL[package]}.") from exc


def is_local(location: str) -> bool:
    """True for a folder (a path or a ``file://`` URL), which needs no storage options."""
    scheme = urllib.parse.urlsplit(location).scheme
    return scheme in ("", "file") or len(scheme) == 1  # C:\\ on Windows


def location_of(described: Mapping[str, Any], label: str) -> str:
    location = described.get("location")
    if described.get("is_only_declared") or not isinstance(location, str) or not location:
        raise ValueError(f"Table {label!r} is only declared, so it has no dataset yet: insert "
                         "data to create it.")
    return location


def vended_options(described: Mapping[str, Any], label: str) -> dict[str, str]:
    """The storage options describe vends for a table; ``{}`` for a folder, which needs
    none; else `StorageOptionsNotVendedError`, which names the server's setting."""
    vended = described.get("storage_options")
    if isinstance(vended, Mapping):
        return {str(key): str(value) for key, value in vended.items()}
    if is_local(location_of(described, label)):
        return {}
    raise StorageOptionsNotVendedError(
        f"The server does not hand out the storage options of table {label!r}: its operator "
        "turns them on with `nsframe serve --vend-storage-options` (environment: "
        "NSFRAME_VEND_STORAGE_OPTIONS=true; config file: vend_storage_options = true). "
        "Meanwhile, give the engine credentials of your own "
        "(storage_options=...), or let it find them in your environment.")


def reader_options(described: Mapping[str, Any], given: Mapping[str, str] | None
                   ) -> dict[str, str] | None:
    """What an engine opens the location with: the vended options, if any, overridden by
    the caller's; None leaves Lance to the store's environment and credential chain."""
    vended = described.get("storage_options")
    merged = {**(dict(vended) if isinstance(vended, Mapping) else {}), **(given or {})}
    return {str(k): str(v) for k, v in merged.items()} or None


def open_lance(location: str, options: dict[str, str] | None, *, branch: str | None,
               version: int | None) -> Any:
    """The Lance dataset at ``location``: the latest version of ``branch`` (None: main),
    or ``version`` of it."""
    lance = engine("lance", "to_lance")
    ds = lance.dataset(location, version=None if branch else version, storage_options=options)
    return ds if branch is None else ds.checkout_version((branch, version))


def main_branch_only(branch: str | None, method: str, label: str) -> None:
    """Daft and Ray reopen a dataset on their workers by location and version number, and
    a number names a version of the main branch: at a branch they would read main."""
    if branch is not None:
        raise ValueError(
            f"Table.{method}() reads the main branch only, and this handle of {label!r} is "
            f"at branch {branch!r}: the engine's workers reopen the dataset by version "
            "number, which names main's versions. Read a branch with to_lance().")


def daft_frame(ds: Any, options: dict[str, str] | None) -> Any:
    """A Daft DataFrame over the open dataset ``ds``, its workers pinned to its version.

    Not ``daft.read_lance(location, io_config=...)``: Daft turns an IOConfig into Lance's
    options only for ``s3://``, ``gs://`` and ``az://`` locations, so an ``s3+ddb://``
    location got none ("Failed to resolve region for bucket"), and an IOConfig has no
    place for ``dynamodb_endpoint``. The scan operator takes Lance's options as they are.
    """
    engine("daft", "to_daft")
    scan = engine("daft_lance.lance_scan", "to_daft")
    plan = importlib.import_module("daft.logical.builder")
    native = importlib.import_module("daft.daft")
    frame = importlib.import_module("daft.dataframe")
    operator = scan.LanceScanOperator(
        ds, open_kwargs={"storage_options": options, "version": ds.version})
    handle = native.ScanOperatorHandle.from_python_scan_operator(operator)
    return frame.DataFrame(plan.LogicalPlanBuilder.from_tabular_scan(scan_operator=handle))


def ray_dataset(location: str, options: dict[str, str] | None, version: int | None,
                **read_args: Any) -> Any:
    """A Ray Dataset over the table at ``location`` (``version``, or the latest)."""
    data = engine("ray.data", "to_ray")
    pinned = {} if version is None else {"version": version}
    return data.read_lance(location, storage_options=options, **pinned, **read_args)
