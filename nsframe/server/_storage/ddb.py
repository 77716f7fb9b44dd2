"""Create-if-absent through DynamoDB, for the catalog of an ``s3+ddb://`` root.

On such a root Lance commits manifests through a DynamoDB table (hash key ``base_uri``,
range key ``version``) instead of relying on the store's conditional PUT. obstore has
no DynamoDB mode, so the catalog claims each generation file in the same table: an item
``("nsframe:s3://<bucket>/<prefix>/<key>", 0)`` written with ``attribute_not_exists``, which
exactly one writer wins, whatever the S3 endpoint does with ``If-None-Match``. The item
holds the file's bytes; the winner then writes the object with a plain PUT. A writer
that lost makes sure the object is there (copying it from the item) before it reports
its loss, so it re-reads a state that includes the winner's generation even if the
winner crashed between the two writes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

ITEM_PREFIX = "nsframe:"


class DynamoClaims:
    """Conditional creation of keys of one root, recorded in one DynamoDB table."""

    def __init__(self, table: str, where: str, options: Mapping[str, str]) -> None:
        try:
            import boto3
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise ValueError("An s3+ddb:// root needs boto3: pip install 'nsframe[server]'"
                             ) from exc
        self.table = table
        self.where = where.rstrip("/")
        region = options.get("aws_region") or "us-east-1"
        self._client: Any = boto3.client(
            "dynamodb",
            endpoint_url=options.get("dynamodb_endpoint") or None,
            region_name=region,
            aws_access_key_id=options.get("aws_access_key_id") or None,
            aws_secret_access_key=options.get("aws_secret_access_key") or None,
            aws_session_token=options.get("aws_session_token") or None,
        )

    def _key(self, key: str) -> dict[str, Any]:
        return {"base_uri": {"S": f"{ITEM_PREFIX}{self.where}/{key}"}, "version": {"N": "0"}}

    def claim(self, key: str, data: bytes) -> bool:
        """Record ``key`` with ``data`` unless it was claimed before; True when this call did."""
        try:
            self._client.put_item(
                TableName=self.table,
                Item={**self._key(key), "body": {"B": data}},
                ConditionExpression="attribute_not_exists(base_uri)",
            )
        except self._client.exceptions.ConditionalCheckFailedException:
            return False
        return True

    def body(self, key: str) -> bytes | None:
        """The bytes a claim of ``key`` recorded (a strongly consistent read)."""
        found = self._client.get_item(TableName=self.table, Key=self._key(key),
                                      ConsistentRead=True)
        item = found.get("Item")
        return bytes(item["body"]["B"]) if item and "body" in item else None

    def release(self, keys: list[str]) -> None:
        """Forget the claims of ``keys`` (objects deleted for good), so that the table
        does not keep one item per short-lived key forever."""
        for start in range(0, len(keys), 25):  # BatchWriteItem takes 25 at a time
            requests = [{"DeleteRequest": {"Key": self._key(key)}}
                        for key in keys[start:start + 25]]
            pending: dict[str, Any] = {self.table: requests}
            for _ in range(5):
                answer = self._client.batch_write_item(RequestItems=pending)
                pending = answer.get("UnprocessedItems") or {}
                if not pending:
                    break
