"""The `nsframe` command: `nsframe serve` runs the REST service, `nsframe demo` shows it off."""

from __future__ import annotations

import argparse
import ipaddress
import logging
import logging.config
import os
import sys
from collections.abc import Iterable, Sequence

from nsframe._protocol.defaults import API_KEYS_ENV, DEFAULT_ROOT
from nsframe._protocol.routes import DEFAULT_PORT


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name: it may resolve to anything


def _refuse_open_bind(host: str, credentials_configured: bool) -> str | None:
    """Why `nsframe serve` will not bind ``host``, or None when it may."""
    if _is_loopback(host) or credentials_configured:
        return None
    return (
        f"nsframe serve: refusing to bind {host}, an address other machines can "
        "reach, without credentials: anyone could read and change the data. Configure "
        f"--api-key KEY, the {API_KEYS_ENV} environment variable or a --config file "
        "with keys, tokens or jwt, or bind 127.0.0.1."
    )


def _server_command(args: argparse.Namespace) -> int:
    """``nsframe serve`` and ``nsframe gc``: the CLI's one way into the server.

    The server is imported here and nowhere else in the CLI, so ``--help``, ``nsframe
    demo`` and ``import nsframe._cli`` never load starlette, uvicorn or Lance
    (tests/client/test_import_boundaries.py allows this import and no other).
    """
    try:
        from nsframe.server import (
            StoreCheckError,
            _app,
            _config_file,
            _logs,
            _workers,
            collect_garbage,
        )
    except ImportError:  # pragma: no cover - depends on the install
        print(f"nsframe {args.command} needs the server extra: pip install 'nsframe[server]'",
              file=sys.stderr)
        return 2
    if args.command == "gc":
        try:
            garbage = collect_garbage(
                args.root, apply=args.apply, grace_seconds=args.grace,
                storage_options=_config_file.storage_option_flags(args.storage_option),
                check_store=not args.skip_conditional_put_check)
        except (ValueError, OSError, StoreCheckError) as exc:
            print(f"nsframe gc: {exc}", file=sys.stderr)
            return 2
        return _report_garbage(garbage.lines(), len(garbage.folders), len(garbage.keys),
                               garbage.bytes, applied=args.apply)

    json_lines = False
    try:
        config = _config_file.config_from_args(args, os.environ)
        if config.log_format == "json":
            # From here on, every line this process prints is JSON, start-up's included.
            logging.config.dictConfig(_logs.logging_config(args.log_level, "json"))
            _logs.capture_warnings("json")
            json_lines = True
        problem = _refuse_open_bind(args.host, config.credentials_configured)
        # Checked here, though each worker builds its own app (nsframe.server._workers): a
        # config or store the server refuses stops it here, with one message and exit
        # status 2, not in every worker (and not as workers the supervisor restarts).
        # Nothing stays open in this parent (its lease record goes with its catalogs).
        if not problem:
            _app.check_config(config)
    except (ValueError, TypeError, OSError, StoreCheckError) as exc:
        problem = f"nsframe serve: {exc}"
    say = _say_as_json if json_lines else _say
    if problem:
        say(problem, logging.ERROR)
        return 2
    auth = "credentials required" if config.credentials_configured else "open, no credentials"
    if args.host in ("0.0.0.0", "::") and not config.allow_hosts:
        say("nsframe: requests must name this server by a loopback address until you "
            "add its host names with --allow-host NAME", logging.WARNING)
    where = f"[{args.host}]" if ":" in args.host else args.host
    workers = f"{args.workers} workers" if args.workers > 1 else "1 worker"
    say(f"nsframe: serving {config.root} on http://{where}:{args.port} with {workers} "
        f"({auth})", logging.INFO)
    # Even one worker runs under a supervising parent, which holds the port: a worker
    # that crashes is restarted and the port stays open (docs/server.md, Crash containment).
    return _workers.serve_workers(config, host=args.host, port=args.port,
                                  workers=args.workers, log_level=args.log_level)


def _say(line: str, level: int) -> None:
    print(line, file=sys.stderr)


def _say_as_json(line: str, level: int) -> None:
    logging.getLogger("nsframe.server").log(level, "%s", line)


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _report_garbage(lines: Iterable[str], folders: int, files: int, nbytes: int, *,
                    applied: bool) -> int:
    verb = "removed" if applied else "would remove"
    for line in lines:
        print(f"{verb} {line}")
    print(f"nsframe gc: {verb} {folders} folder(s) and {files} file(s), {nbytes} bytes in "
          "folders" + ("" if applied else "; run again with --apply to remove them"))
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
                       help=f"storage root (default: the config file's, else {DEFAULT_ROOT})")
    serve.add_argument("--host", default="127.0.0.1",
                       help="address to bind (default 127.0.0.1; any other address needs "
                       "credentials)")
    serve.add_argument("--port", type=int, default=DEFAULT_PORT,
                       help=f"port (default {DEFAULT_PORT})")
    serve.add_argument("--log-level", default="info",
                       choices=["critical", "error", "warning", "info", "debug"])
    serve.add_argument("--log-format", choices=["text", "json"], default=None,
                       help="log lines as text (default) or one JSON object each, with "
                       "the request id")
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
    serve.add_argument("--read-consistency-interval", type=float, metavar="SECONDS",
                       help="let a read reuse what this server resolved up to SECONDS ago "
                       "(fewer store listings; may miss other replicas' latest commits). "
                       "Default 0: every read sees every acknowledged commit")
    serve.add_argument("--vend-storage-options", action="store_true",
                       help="describe returns the storage options (credentials included) "
                       "that a reader of the table's location needs")
    _storage_flags(serve)
    serve.add_argument("--workers", type=_positive, default=1, metavar="N",
                       help="server processes sharing the port (default 1); more serve more "
                       "concurrent clients")
    serve.set_defaults(func=_server_command)
    gc = sub.add_parser("gc", help="find (and with --apply, remove) what crashes left behind")
    gc.add_argument("root", help="storage root")
    gc.add_argument("--apply", action="store_true",
                    help="remove what was found (default: a dry run that only prints it)")
    gc.add_argument("--grace", type=float, default=3600.0, metavar="SECONDS",
                    help="leave unreferenced data files younger than this alone, unless a "
                    "crashed nsframe write made them (default 3600)")
    _storage_flags(gc)
    gc.set_defaults(func=_server_command)
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
