"""The `nsframe` command: `nsframe serve` runs the REST service, `nsframe demo` shows it off."""

from __future__ import annotations

import argparse
import ipaddress
import logging
import os
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from nsframe._spec import DEFAULT_PORT

if TYPE_CHECKING:
    from nsframe.server import ServerConfig

API_KEYS_ENV = "NSFRAME_API_KEYS"


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name: it may resolve to anything


def _serve_config(args: argparse.Namespace, environ: Mapping[str, str]) -> ServerConfig:
    """The config from ``--config``, then the environment, then the other flags."""
    from nsframe.server._config import ServerConfig, parse_size
    from nsframe.server._config_file import add_keys, keys_from_env, load_config_file

    config = load_config_file(args.config, environ) if args.config else ServerConfig()
    if args.root is not None:
        config.root = args.root
    add_keys(config, keys_from_env(environ))
    add_keys(config, args.api_key or [])
    for entry in args.database or []:
        name, sep, path = entry.partition("=")
        if not sep or not name.strip() or not path.strip():
            raise ValueError(f"--database takes NAME=PATH, got {entry!r}")
        config.databases[name.strip()] = path.strip()
    if args.database_from_host:
        config.database_from_host = True
    if args.max_json_bytes is not None:
        config.max_json_bytes = parse_size(args.max_json_bytes)
    if args.max_body_bytes is not None:
        config.max_arrow_bytes = parse_size(args.max_body_bytes)
    config.storage_options.update(_storage_options(args.storage_option))
    if args.read_consistency_interval is not None:
        if args.read_consistency_interval < 0:
            raise ValueError("--read-consistency-interval takes seconds >= 0")
        config.read_consistency_interval = args.read_consistency_interval
    if args.vend_storage_options:
        config.vend_storage_options = True
    if args.skip_conditional_put_check:
        config.check_conditional_put = False
    return config


def _storage_options(entries: Sequence[str] | None) -> dict[str, str]:
    found: dict[str, str] = {}
    for entry in entries or []:
        key, sep, value = entry.partition("=")
        if not sep or not key.strip():
            # Not echoed: what was typed may be a secret.
            raise ValueError("--storage-option takes KEY=VALUE")
        found[key.strip()] = value
    return found


def _log_requests(level: str) -> None:
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    logger = logging.getLogger("nsframe")
    logger.addHandler(handler)
    logger.setLevel(level.upper())


def _serve(args: argparse.Namespace) -> int:
    try:
        import uvicorn

        from nsframe.server import create_app
    except ImportError:  # pragma: no cover - depends on the install
        print("The server needs its extra: pip install 'nsframe[server]'", file=sys.stderr)
        return 2
    try:
        config = _serve_config(args, os.environ)
    except (ValueError, TypeError, OSError) as exc:
        print(f"nsframe serve: {exc}", file=sys.stderr)
        return 2
    if not _is_loopback(args.host) and not config.credentials_configured:
        print(
            f"nsframe serve: refusing to bind {args.host}, an address other machines can "
            "reach, without credentials: anyone could read and change the data. Configure "
            f"--api-key KEY, the {API_KEYS_ENV} environment variable or a --config file "
            "with keys, tokens or jwt, or bind 127.0.0.1.",
            file=sys.stderr,
        )
        return 2
    from nsframe.server._storage.objects import StoreCheckError

    try:
        app = create_app(config=config)
    except (ValueError, TypeError, OSError, StoreCheckError) as exc:
        print(f"nsframe serve: {exc}", file=sys.stderr)
        return 2
    _log_requests(args.log_level)
    where = f"[{args.host}]" if ":" in args.host else args.host
    auth = "credentials required" if config.credentials_configured else "open, no credentials"
    print(f"nsframe: serving {config.root} on http://{where}:{args.port} ({auth})",
          file=sys.stderr)
    # Our access log replaces uvicorn's, which would print query strings.
    uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level,
                access_log=False)
    return 0


def _gc(args: argparse.Namespace) -> int:
    try:
        from nsframe.server import collect_garbage
    except ImportError:  # pragma: no cover - depends on the install
        print("nsframe gc needs the server extra: pip install 'nsframe[server]'",
              file=sys.stderr)
        return 2
    from nsframe.server._storage.objects import StoreCheckError

    try:
        garbage = collect_garbage(args.root, apply=args.apply, grace_seconds=args.grace,
                                  storage_options=_storage_options(args.storage_option),
                                  check_store=not args.skip_conditional_put_check)
    except (ValueError, OSError, StoreCheckError) as exc:
        print(f"nsframe gc: {exc}", file=sys.stderr)
        return 2
    verb = "removed" if args.apply else "would remove"
    for line in garbage.lines():
        print(f"{verb} {line}")
    print(f"nsframe gc: {verb} {len(garbage.folders)} folder(s) and {len(garbage.keys)} "
          f"file(s), {garbage.bytes} bytes in folders"
          + ("" if args.apply else "; run again with --apply to remove them"))
    return 0


def _demo(args: argparse.Namespace) -> int:
    from nsframe._demo import run

    return run(args.root)


def _storage_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--storage-option", action="append", metavar="KEY=VALUE",
                        help="an option of an object-store root, as Lance names it "
                        "(aws_endpoint=..., aws_region=..., allow_http=true; repeatable). "
                        "Secrets belong in the environment (AWS_SECRET_ACCESS_KEY ...) or "
                        "the config file, not in the process list")
    parser.add_argument("--skip-conditional-put-check", action="store_true",
                        help="start even on a store that ignores If-None-Match: UNSAFE, "
                        "concurrent writers can lose commits")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="nsframe", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run the REST service")
    serve.add_argument("root", nargs="?", default=None,
                       help="storage root: a folder, or s3://, s3+ddb://, gs://, az:// "
                       "(default: the config file's, else ./nsframe-data)")
    serve.add_argument("--host", default="127.0.0.1",
                       help="address to bind (default 127.0.0.1; any other address needs "
                       "credentials)")
    serve.add_argument("--port", type=int, default=DEFAULT_PORT, help="port (default 2333)")
    serve.add_argument("--log-level", default="info",
                       choices=["critical", "error", "warning", "info", "debug"])
    serve.add_argument("--config", metavar="PATH",
                       help="TOML file: credentials with scopes, databases, limits, jwt")
    serve.add_argument("--api-key", action="append", metavar="KEY",
                       help=f"accept this API key, full access (repeatable; {API_KEYS_ENV} "
                       "or --config keep it out of the process list)")
    serve.add_argument("--database", action="append", metavar="NAME=PATH",
                       help="serve another database from PATH (repeatable)")
    serve.add_argument("--database-from-host", action="store_true",
                       help="without x-service-database, take the database from the first "
                       "label of the host name")
    serve.add_argument("--max-body-bytes", metavar="SIZE",
                       help="largest Arrow insert body (default 64GiB)")
    serve.add_argument("--max-json-bytes", metavar="SIZE",
                       help="largest JSON body (default 16MiB)")
    serve.add_argument("--read-consistency-interval", type=float, metavar="SECONDS",
                       help="let a read reuse what this server resolved up to SECONDS ago "
                       "(fewer store listings; may miss other replicas' latest commits). "
                       "Default 0: every read sees every acknowledged commit")
    serve.add_argument("--vend-storage-options", action="store_true",
                       help="describe returns the storage options (credentials included) "
                       "that a reader of the table's location needs")
    _storage_flags(serve)
    serve.set_defaults(func=_serve)
    gc = sub.add_parser("gc", help="find (and with --apply, remove) what crashes left behind")
    gc.add_argument("root", help="storage root")
    gc.add_argument("--apply", action="store_true",
                    help="remove what was found (default: a dry run that only prints it)")
    gc.add_argument("--grace", type=float, default=3600.0, metavar="SECONDS",
                    help="leave unreferenced data files younger than this alone, unless a "
                    "crashed nsframe write made them (default 3600)")
    _storage_flags(gc)
    gc.set_defaults(func=_gc)
    demo = sub.add_parser("demo", help="start the embedded server, load a sample, print frames")
    demo.add_argument("root", nargs="?", default=None,
                      help="storage root (default: a temporary directory)")
    demo.set_defaults(func=_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    result: int = args.func(args)
    return result


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
