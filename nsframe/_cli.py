"""The `nsframe` command: `nsframe serve` runs the REST service, `nsframe demo` shows it off."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from nsframe._spec import DEFAULT_PORT


def _serve(args: argparse.Namespace) -> int:
    try:
        import uvicorn

        from nsframe.server import ServerConfig, create_app
    except ImportError:  # pragma: no cover - depends on the install
        print("The server needs its extra: pip install 'nsframe[server]'", file=sys.stderr)
        return 2
    config = ServerConfig(root=args.root)
    print(f"nsframe: serving {args.root} on http://{args.host}:{args.port}", file=sys.stderr)
    uvicorn.run(create_app(config=config), host=args.host, port=args.port,
                log_level=args.log_level)
    return 0


def _demo(args: argparse.Namespace) -> int:
    from nsframe._demo import run

    return run(args.root)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="nsframe", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run the REST service")
    serve.add_argument("root", nargs="?", default="./nsframe-data",
                       help="storage root (default ./nsframe-data)")
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=DEFAULT_PORT, help="port (default 2333)")
    serve.add_argument("--log-level", default="info")
    serve.set_defaults(func=_serve)
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
