"""Teams get a slug (review requests name a team by it), a team's score configs, and the per-user
opt-out of review emails. Existing teams get their slug from their name, made unique with -2, -3...
(the same rule as access/teams.team_slug, copied: a migration keeps its own frozen code)."""

from __future__ import annotations

from typing import Any

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models
from django.utils.text import slugify


def fill_slugs(apps: Any, schema_editor: Any) -> None:
    Team = apps.get_model("sessions_app", "Team")
    taken: set[str] = set()
    for team in Team.objects.order_by("id"):
        base = (slugify(team.name) or "team")[:90]
        slug, n = base, 1
        while slug in taken:
            n += 1
            slug = f"{base}-{n}"
        taken.add(slug)
        team.slug = slug
        team.save(update_fields=["slug"])


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0013_search_index"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        # Plain and unindexed first: a SlugField here would make the "_like" index that the unique
        # slug below makes again (PostgreSQL: DuplicateTable).
        migrations.AddField(model_name="team", name="slug", field=models.CharField(max_length=100, null=True)),
        migrations.RunPython(fill_slugs, migrations.RunPython.noop),
        migrations.AlterField(model_name="team", name="slug", field=models.SlugField(max_length=100, unique=True)),
        migrations.CreateModel(
            name="ReviewEmailOptOut",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                (
                    "user",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE, related_name="+", to=settings.AUTH_USER_MODEL
                    ),
                ),
            ],
        ),
        migrations.CreateModel(
            name="ScoreConfig",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("name", models.CharField(max_length=100)),
                (
                    "kind",
                    models.CharField(
                        choices=[("numeric", "numeric"), ("categorical", "categorical"), ("boolean", "boolean")],
                        max_length=12,
                    ),
                ),
                ("min_value", models.FloatField(blank=True, null=True)),
                ("max_value", models.FloatField(blank=True, null=True)),
                ("choices", models.JSONField(blank=True, default=list)),
                ("description", models.CharField(blank=True, default="", max_length=200)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                (
                    "team",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="score_configs",
                        to="sessions_app.team",
                    ),
                ),
            ],
            options={
                "ordering": ["team", "name"],
                "constraints": [
                    models.UniqueConstraint(fields=("team", "name"), name="score_config_unique_name"),
                    models.CheckConstraint(
                        condition=models.Q(kind__in=["numeric", "categorical", "boolean"]),
                        name="score_config_kind_valid",
                    ),
                ],
            },
        ),
    ]
