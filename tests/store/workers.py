"""Writers for the concurrency tests, runnable in a thread or in a fresh (spawned) process.

Importable without Django being set up: a spawned process imports this module first and only
then configures Django against the test database the parent handed over.
"""

from __future__ import annotations

import os
import random
import traceback
from pathlib import Path
from typing import Any


def setup_django(database: dict[str, Any] | None) -> None:
    """In a spawned process: configure Django on the parent's (test) database."""
    if database is None:
        return
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "piweb.settings")
    import django
    from django.conf import settings

    django.setup()
    settings.DATABASES["default"].update(database)


def in_process(target: str, database: dict[str, Any], barrier: Any, queue: Any, *args: Any) -> None:
    """Process entry point: run one of this module's writers, put its report on the queue."""
    setup_django(database)
    queue.put(globals()[target](barrier, *args))


def _report() -> dict[str, Any]:
    return {"created": [], "labels": [], "moves": 0, "forks": [], "imported": [], "errors": []}


def writer(barrier: Any, session_pk: int, seed: int, ops: int, start_ids: list[str]) -> dict[str, Any]:
    """Random appends (explicit parent, leaf, new root), labels, leaf moves, branch summaries
    and forks on one session. Returns what it did; every exception is recorded, not raised."""
    from django.contrib.auth.models import User
    from django.db import connection

    from sessions_app.models import Session
    from sessions_app.store import services

    rng = random.Random(seed)
    report = _report()
    known = list(start_ids)
    try:
        owner = User.objects.get(pk=Session.objects.get(pk=session_pk).owner_id)
        barrier.wait(timeout=60)
        for i in range(ops):
            session = Session.objects.get(pk=session_pk)
            roll = rng.random()
            try:
                if roll < 0.35:
                    parent = rng.choice(known)
                    payload = {
                        "type": "message",
                        "message": {"role": "user", "content": f"w{seed}-{i}", "timestamp": i},
                    }
                    e = services.entry_append(session=session, payload=payload, parent_id=parent, author=owner)
                    report["created"].append((e.entry_id, parent))
                elif roll < 0.55:
                    e = services.entry_append(
                        session=session, payload={"type": "custom", "customType": "w", "data": {"w": seed, "i": i}}
                    )
                    report["created"].append((e.entry_id, "?"))
                elif roll < 0.6:
                    e = services.entry_append(
                        session=session,
                        payload={"type": "thinking_level_change", "thinkingLevel": "low"},
                        parent_id=None,
                    )
                    report["created"].append((e.entry_id, None))
                elif roll < 0.75:
                    target = rng.choice(known)
                    label = rng.choice([f"l{seed}-{i}", None])
                    e = services.label_set(session=session, target_id=target, label=label, author=owner)
                    report["created"].append((e.entry_id, "?"))
                    report["labels"].append((e.entry_id, target, label))
                elif roll < 0.85:
                    services.leaf_move(session=session, entry_id=rng.choice([*known, None]))
                    report["moves"] += 1
                    continue
                elif roll < 0.95:
                    target = rng.choice(known)
                    e = services.branch_with_summary(session=session, entry_id=target, summary=f"s{seed}-{i}")
                    report["created"].append((e.entry_id, target))
                else:
                    fork = services.session_fork(session=session, entry_id=rng.choice(known), owner=owner)
                    report["forks"].append(fork.pk)
                    continue
                known.append(e.entry_id)
            except Exception as exc:  # recorded, the test fails on any
                report["errors"].append(f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}")
    except Exception as exc:
        report["errors"].append(f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}")
    finally:
        connection.close()
    return report


def importer(barrier: Any, owner_pk: int, path: str, seed: int, rounds: int) -> dict[str, Any]:
    """Grow a pi file a few lines at a time (as pi does) and import it after each growth."""
    from django.contrib.auth.models import User
    from django.db import connection

    from sessions_app.core import jsjson
    from sessions_app.store.importing import pipeline

    report = _report()
    try:
        owner = User.objects.get(pk=owner_pk)
        barrier.wait(timeout=60)
        for r in range(rounds):
            data = Path(path).read_bytes()
            last = jsjson.loads(data.rstrip(b"\n").rsplit(b"\n", 1)[-1])
            parent = last["id"]
            lines = []
            for k in range(1 + r % 3):
                entry_id = f"f{seed:02d}{r:03d}{k}"[:8].ljust(8, "0")
                obj = {
                    "type": "message",
                    "id": entry_id,
                    "parentId": parent,
                    "timestamp": f"2025-12-09T00:{r % 60:02d}:{k:02d}.000Z",
                    "message": {"role": "assistant", "content": [{"type": "text", "text": f"pi {r}.{k}"}],
                                "provider": "anthropic", "model": "m", "timestamp": r},
                }  # fmt: skip
                lines.append(jsjson.dumps(obj))
                parent = entry_id
            with Path(path).open("ab") as f:
                f.write(("\n".join(lines) + "\n").encode())
            data = Path(path).read_bytes()
            try:
                result = pipeline.session_import(owner=owner, data=data, source_path=path)
                report["imported"].append(result.added)
                report["created"].extend((jsjson.loads(ln)["id"], jsjson.loads(ln)["parentId"]) for ln in lines)
            except Exception as exc:
                report["errors"].append(f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}")
    except Exception as exc:
        report["errors"].append(f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}")
    finally:
        connection.close()
    return report


def first_importer(barrier: Any, owner_pk: int, data: bytes) -> dict[str, Any]:
    """Import the same new file as every other first_importer, at the same moment."""
    from django.contrib.auth.models import User
    from django.db import connection

    from sessions_app.store.importing import pipeline

    report = _report()
    try:
        owner = User.objects.get(pk=owner_pk)
        barrier.wait(timeout=60)
        result = pipeline.session_import(owner=owner, data=data)
        report["imported"].append((result.created, result.added, result.session.pk))
    except Exception as exc:
        report["errors"].append(f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}")
    finally:
        connection.close()
    return report
