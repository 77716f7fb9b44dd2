"""The `nsframe` command: `nsframe serve` runs the REST service, `nsframe demo` shows it off."""

from __future__ import annotations

import argparse
import ipaddress
import logging
import logging.config
import os
import sys
from collections.abc import Iterable, Sequence

from nsframe._protocol.defaults import API_KEYS_ENV


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
        # Every setting of `serve` is declared once (`_config`); its flags, variables and
        # file keys are derived from it, so they are parsed here, past the server import.
        args = _config_file.serve_parser().parse_args(getattr(args, "serve_argv", []))
        origins: dict[str, str] = {}
        config = _config_file.config_from_args(args, os.environ, origins)
        if getattr(args, "print_config", False):
            print(_config_file.effective_settings(config, origins), end="")
            return 0
        # Logging first: the start-up collection logs from this process, in a thread,
        # perhaps before the workers start. In JSON, every line this process prints is
        # JSON from here on, start-up's included.
        logging.config.dictConfig(_logs.logging_config(config.log_level, config.log_format))
        if config.log_format == "json":
            _logs.capture_warnings("json")
            json_lines = True
        problem = _refuse_open_bind(config.host, config.credentials_configured)
        # Checked here, though each worker builds its own app (nsframe.server._workers): a
        # config or store the server refuses stops it here, with one message and exit
        # status 2, not in every worker (and not as workers the supervisor restarts).
        # The parent then collects what crashed servers left, in a thread, while its
        # workers serve (they are spawned, so share nothing it opened).
        collection = None if problem else _app.check_config(config)
    except (ValueError, TypeError, OSError, StoreCheckError) as exc:
        problem = f"nsframe serve: {exc}"
    say = _say_as_json if json_lines else _say
    if problem:
        say(problem, logging.ERROR)
        return 2
    auth = "credentials required" if config.credentials_configured else "open, no credentials"
    if config.host in ("0.0.0.0", "::") and not config.allow_hosts:
        say("nsframe: requests must name this server by a loopback address until you "
            "add its host names with --allow-host NAME", logging.WARNING)
    where = f"[{config.host}]" if ":" in config.host else config.host
    workers = f"{config.workers} workers" if config.workers > 1 else "1 worker"
    say(f"nsframe: serving {config.root} on http://{where}:{config.port} with {workers} "
        f"({auth})", logging.INFO)
    # Even one worker runs under a supervising parent, which holds the port: a worker
    # that crashes is restarted and the port stays open (docs/server.md, Crash containment).
    try:
        return _workers.serve_workers(config, host=config.host, port=config.port,
                                      workers=config.workers, log_level=config.log_level)
    finally:
        if collection is not None:
            collection.stop()


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
    # Its flags are derived from the settings' declarations, which live with the server
    # (nsframe.server._config): `_server_command` parses them, so that `nsframe --help`
    # stays light. `nsframe serve --help` lists them.
    serve = sub.add_parser("serve", help="run the REST service (nsframe serve --help)",
                           add_help=False)
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
    parser = build_parser()
    args, rest = parser.parse_known_args(argv)
    if args.command == "serve":
        args.serve_argv = rest
    elif rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    result: int = args.func(args)
    return result


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
