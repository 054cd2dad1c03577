from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from sessions_app.core.filesource import Source
from sessions_app.errors import SessionsError
from sessions_app.management.users import user_named
from sessions_app.store.importing import pipeline


def session_files(paths: list[str]) -> list[Path]:
    """The .jsonl files named, or found under the directories named (pi's sessions/--cwd--/ layout)."""
    found: list[Path] = []
    for name in paths:
        path = Path(name).expanduser()
        if path.is_dir():
            found.extend(sorted(p for p in path.rglob("*.jsonl") if p.is_file()))
        elif path.is_file():
            found.append(path)
        else:
            raise CommandError(f"{name}: no such file or directory")
    return found


class Command(BaseCommand):
    help = (
        "Import pi session files or directories (e.g. ~/.pi/agent/sessions). Re-running imports only "
        "what was added to the files since, so it can mirror sessions pi is still writing."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("paths", nargs="+")
        parser.add_argument("--user", required=True, help="owner of the imported sessions")
        parser.add_argument("--partial", action="store_true", help="import the valid part of bad files")
        parser.add_argument("--no-progress", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        owner = user_named(options["user"])
        files = session_files(options["paths"])
        total = sum(f.stat().st_size for f in files)
        failed = created = grown = unchanged = 0
        with tqdm(total=total, unit="B", unit_scale=True, disable=options["no_progress"] or None) as bar:
            for path in files:
                data = Source.open(path)  # read a block at a time, never whole
                shown = 0

                def advance(done: int) -> None:
                    nonlocal shown
                    shown += done
                    bar.update(done)

                try:
                    result = pipeline.session_import(
                        owner=owner,
                        data=data,
                        source_path=str(path.resolve()),
                        partial=options["partial"],
                        progress=advance,
                    )
                except SessionsError as exc:
                    failed += 1
                    bar.write(self.style.ERROR(f"{path}: {exc.message}"))
                    for problem in exc.extra.get("errors", []):
                        where = f"{path}:{problem['line']}" if problem["line"] else str(path)
                        bar.write(f"  {where}: {problem['message']}")
                else:
                    if result.created:
                        created += 1
                    elif result.added:
                        grown += 1
                    else:
                        unchanged += 1
                    for problem in result.skipped:
                        bar.write(f"  {path}:{problem.line}: skipped: {problem.message}")
                finally:
                    data.close()
                bar.update(max(0, len(data) - shown))
        summary = f"{len(files)} files: {created} new, {grown} grown, {unchanged} unchanged, {failed} rejected"
        if failed:
            raise CommandError(summary)
        self.stdout.write(self.style.SUCCESS(summary))
