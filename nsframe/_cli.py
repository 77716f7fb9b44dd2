"""The `nsframe` command: `nsframe serve` runs the REST service, `nsframe demo` shows it off."""

from __future__ import annotations

import argparse
import dataclasses
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
    config.allow_hosts.extend(args.allow_host or [])
    config.allow_origins.extend(args.allow_origin or [])
    if args.host not in ("0.0.0.0", "::", ""):
        # The bound address is always a name the server answers to.
        config.allow_hosts.append(args.host)
    if args.query_timeout is not None:
        if args.query_timeout <= 0:
            raise ValueError(f"--query-timeout must be above 0, got {args.query_timeout}")
        config.limits = dataclasses.replace(config.limits, query_timeout=args.query_timeout)
    return config


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
    try:
        app = create_app(config=config)
    except (ValueError, TypeError, OSError) as exc:
        print(f"nsframe serve: {exc}", file=sys.stderr)
        return 2
    _log_requests(args.log_level)
    where = f"[{args.host}]" if ":" in args.host else args.host
    auth = "credentials required" if config.credentials_configured else "open, no credentials"
    print(f"nsframe: serving {config.root} on http://{where}:{args.port} ({auth})",
          file=sys.stderr)
    if args.host in ("0.0.0.0", "::") and not config.allow_hosts:
        print("nsframe: requests must name this server by a loopback address until you "
              "add its host names with --allow-host NAME", file=sys.stderr)
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
    garbage = collect_garbage(args.root, apply=args.apply, grace_seconds=args.grace)
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="nsframe", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run the REST service")
    serve.add_argument("root", nargs="?", default=None,
                       help="storage root (default: the config file's, else ./nsframe-data)")
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
    serve.add_argument("--allow-host", action="append", metavar="NAME",
                       help="also answer requests whose Host is NAME (repeatable; "
                       "*.example.com for subdomains, * for any); loopback names and the "
                       "bound --host are always allowed")
    serve.add_argument("--allow-origin", action="append", metavar="ORIGIN",
                       help="let web pages from ORIGIN (https://app.example.com) call the "
                       "server, with CORS (repeatable); requests from other origins are "
                       "refused")
    serve.add_argument("--query-timeout", type=float, metavar="SECONDS",
                       help="stop a query, count or scan after this long (default 60)")
    serve.set_defaults(func=_serve)
    gc = sub.add_parser("gc", help="find (and with --apply, remove) what crashes left behind")
    gc.add_argument("root", help="storage root")
    gc.add_argument("--apply", action="store_true",
                    help="remove what was found (default: a dry run that only prints it)")
    gc.add_argument("--grace", type=float, default=3600.0, metavar="SECONDS",
                    help="leave unreferenced data files younger than this alone, unless a "
                    "crashed nsframe write made them (default 3600)")
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
