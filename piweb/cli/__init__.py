"""The `piweb` command: mirror pi's session folders to a piweb server, and pull sessions back.

A client of the REST API only: it imports nothing of Django or the server.

    piweb login --server URL --token TOKEN
    piweb sync [DIR ...] [--watch] [--team SLUG] [--exclude GLOB] [--dry-run]
    piweb pull ID [-o FILE] [--into-pi]
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Sequence
from pathlib import Path

from piweb.cli import config, files
from piweb.cli.http import ApiError, Client, Offline
from piweb.cli.sync import Options, Outcome, summary, sync_file


def _parser() -> argparse.ArgumentParser:
    # --server and --token go before or after the command (`piweb login --server URL --token T`).
    remote = argparse.ArgumentParser(add_help=False)
    remote.add_argument("--server", default=argparse.SUPPRESS, help="piweb's URL (else PIWEB_SERVER, else login's)")
    remote.add_argument("--token", default=argparse.SUPPRESS, help="an API token (else PIWEB_TOKEN, else login's)")
    parser = argparse.ArgumentParser(prog="piweb", description="Sync pi sessions with a piweb server.")
    parser.add_argument("--server", help="piweb's URL (else PIWEB_SERVER, else `piweb login`'s)")
    parser.add_argument("--token", help="an API token (else PIWEB_TOKEN, else `piweb login`'s)")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("login", parents=[remote], help="save --server and --token in the config file (mode 0600)")
    sync = commands.add_parser(
        "sync", parents=[remote], help="push pi session files (only the complete lines the server lacks)"
    )
    sync.add_argument("dirs", nargs="*", type=Path, help="folders or files (default: pi's sessions folder)")
    sync.add_argument("--watch", action="store_true", help="keep following the folders")
    sync.add_argument("--team", default="", help="new sessions go to this team (its id)")
    sync.add_argument("--exclude", action="append", default=[], metavar="GLOB", help="skip matching files")
    sync.add_argument("--dry-run", action="store_true", help="say what would be sent, send nothing")
    sync.add_argument("--no-watchdog", action="store_true", help=argparse.SUPPRESS)  # (tests: the polling path)
    pull = commands.add_parser("pull", parents=[remote], help="write a session as a pi file")
    pull.add_argument("id", help="the session's id in piweb, or pi's id")
    pull.add_argument("-o", "--output", type=Path, help="the file to write")
    pull.add_argument("--into-pi", action="store_true", help="into pi's sessions folder, where /resume finds it")
    pull.add_argument("--with-labels", action="store_true", help="append the labels made in piweb (pi label entries)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "login":
            if not args.server or not args.token:
                raise config.ConfigError("piweb login needs --server URL and --token TOKEN")
            remote = config.Remote(args.server.rstrip("/"), args.token)
            print(f"saved to {config.save(remote)}")
            return 0
        client = Client(config.resolve(args.server, args.token))
        if args.command == "pull":
            from piweb.cli.pull import pull

            print(pull(client, args.id, args.output, args.into_pi, args.with_labels))
            return 0
        return _sync(client, args)
    except config.ConfigError as error:
        print(f"piweb: {error}", file=sys.stderr)
        return 2
    except (ApiError, Offline) as error:
        print(f"piweb: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("piweb: stopped", file=sys.stderr)
        return 130


def _sync(client: Client, args: argparse.Namespace) -> int:
    roots = [Path(d).expanduser() for d in args.dirs] or files.default_roots()
    options = Options(team=args.team, dry_run=args.dry_run)
    outcomes: list[Outcome] = []

    def report(outcome: Outcome) -> None:
        outcomes.append(outcome)
        if outcome.kind in ("changed", "failed"):
            print(f"piweb sync: {outcome.path}: {outcome.kind}: {outcome.message}", file=sys.stderr)
        elif args.watch and outcome.kind in ("created", "appended"):
            print(f"piweb sync: {outcome.path}: {outcome.kind} {outcome.lines} line(s)", flush=True)

    if args.watch:
        from piweb.cli.watch import watch

        with contextlib.suppress(KeyboardInterrupt):  # Ctrl+C: stop cleanly, with the summary
            watch(client, roots, options, args.exclude, report, use_watchdog=not args.no_watchdog)
        print(summary(outcomes), flush=True)
        return 0
    for _, path in files.session_files(roots, args.exclude):
        try:
            report(sync_file(client, path, options))
        except ApiError as error:
            report(Outcome(path, "failed", message=str(error)))
    print(summary(outcomes))
    return 1 if any(o.kind in ("failed", "changed") for o in outcomes) else 0
