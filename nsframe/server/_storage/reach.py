"""Why a storage root cannot be used, in one line an operator can act on.

A missing bucket, refused credentials or an endpoint that does not answer show up in the
first requests a catalog makes to its root: the start-up probe, the server's record.
The store's own message is tens of lines of retry state with the cause inside XML (and
some of these errors are not OSErrors, so `nsframe serve` printed a traceback).
`reaching` turns the errors it recognises into `StoreAccessError`, naming the root, what
is wrong and what to check; anything else passes unchanged.
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager

from nsframe.server._storage.location import StorageRoot
from nsframe.server._storage.objects import StoreCheckError

# An S3-style error body's code: <Code>NoSuchBucket</Code>.
_XML_CODE = re.compile(r"<Code>(\w+)</Code>")
MISSING_BUCKET = {"NoSuchBucket", "ContainerNotFound"}  # S3, Azure
REFUSED = {"InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied", "ExpiredToken",
           "InvalidToken", "TokenRefreshRequired", "AuthenticationFailed",
           "UnrecognizedClientException", "AccessDeniedException",
           "InvalidSignatureException", "MissingAuthenticationTokenException"}
# obstore's exception classes for a refused credential (they are not OSErrors)
_REFUSED_CLASSES = {"PermissionDeniedError", "UnauthenticatedError"}
# botocore's, for a DynamoDB endpoint that does not answer
_UNANSWERED_CLASSES = {"EndpointConnectionError", "ConnectTimeoutError", "ConnectionClosedError"}
_UNANSWERED = (("Connection refused", "connection refused"), ("dns error", "no such host"),
               ("timed out", "timed out"), ("tcp connect error", "no connection"),
               ("error sending request", "no connection"))


class StoreAccessError(StoreCheckError):
    """The root cannot be reached: no such bucket or table, credentials refused, or an
    endpoint that does not answer. The server must not start on it."""


@contextmanager
def reaching(location: StorageRoot) -> Iterator[None]:
    """Raise `StoreAccessError` for a store error of the block that `diagnose` explains."""
    try:
        yield
    except StoreCheckError:
        raise
    except Exception as exc:
        problem = diagnose(exc, location)
        if problem is None:
            raise
        raise StoreAccessError(problem) from exc


def diagnose(exc: BaseException, location: StorageRoot) -> str | None:
    """What is wrong with ``location``, if ``exc`` says so clearly; else None."""
    text = str(exc)
    dynamodb = type(exc).__module__.startswith("botocore")
    code = _code(exc, text)
    where = f"Cannot use the root {location.uri}"
    if dynamodb:
        endpoint = location.options.get("dynamodb_endpoint")
        at = f" at {endpoint}" if endpoint else ""
        if code == "ResourceNotFoundException":
            return (f"{where}: the DynamoDB table {location.ddb_table!r} does not exist{at}. "
                    "Create it (docs/replicas.md shows how), or check ddbTableName in the "
                    "root and dynamodb_endpoint (AWS_ENDPOINT_URL_DYNAMODB).")
        if code in REFUSED:
            return f"{where}: DynamoDB refused the credentials ({code}){at}. {_CHECK_KEYS}"
        if type(exc).__name__ in _UNANSWERED_CLASSES:
            return (f"{where}: the DynamoDB endpoint {endpoint or 'of AWS'} does not answer. "
                    "Check dynamodb_endpoint (AWS_ENDPOINT_URL_DYNAMODB), that DynamoDB "
                    "runs there, and the network.")
        return None
    endpoint = location.options.get("aws_endpoint") if location.provider == "aws" else None
    at = f" at {endpoint}" if endpoint else ""
    if code in MISSING_BUCKET or "The specified bucket does not exist" in text:
        bucket = urllib.parse.urlsplit(location.store_url()).netloc
        return (f"{where}: the bucket {bucket!r} does not exist{at}. Create it, or check "
                "the bucket in the root and the endpoint (aws_endpoint, AWS_ENDPOINT_URL).")
    if code in REFUSED or type(exc).__name__ in _REFUSED_CLASSES:
        return (f"{where}: the store refused the credentials ({code or 'permission denied'})"
                f"{at}. {_CHECK_KEYS}")
    reason = next((why for found, why in _UNANSWERED if found in text), None)
    if reason is not None and location.provider:
        option = ("aws_endpoint (AWS_ENDPOINT_URL)" if location.provider == "aws"
                  else "the store's endpoint option")
        return (f"{where}: the endpoint {endpoint or 'of the store'} does not answer "
                f"({reason}). Check {option}, that the store runs there, and the network.")
    return None


_CHECK_KEYS = ("Check aws_access_key_id, aws_secret_access_key and aws_session_token "
               "(AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, or the config "
               "file's [storage_options]) and that they may read and write there.")


def _code(exc: BaseException, text: str) -> str | None:
    """The store's error code: botocore's, or the one in an S3-style XML body."""
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        found = response.get("Error", {}).get("Code")
        if isinstance(found, str) and found:
            return found
    match = _XML_CODE.search(text)
    return match.group(1) if match else None
