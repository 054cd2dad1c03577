"""Importing a big file from the list page: the upload's progress, then the server-side import's
real progress (polled), then the result; and a rejected file's line-numbered errors."""

from __future__ import annotations

import pytest

from sessions_app.models import Session
from tests.browser.harness import wait_until
from tests.browser.shots import shot

pytestmark = pytest.mark.django_db(transaction=True)

RECORD = """() => {
  window.__jobs = []; window.__bar = [];
  const results = document.getElementById('import-results');
  const bar = document.querySelector('form[data-import] .bar');
  new MutationObserver(() => {
    results.querySelectorAll('progress[data-import-bar]')
      .forEach(p => window.__jobs.push(Number(p.value) / Number(p.max)));
  }).observe(results, {childList: true, subtree: true});
  new MutationObserver(() => window.__bar.push(Number(bar.getAttribute('aria-valuenow'))))
    .observe(bar, {attributes: true, attributeFilter: ['aria-valuenow']});
}"""


def test_a_big_import_shows_the_server_side_progress(login, server, generated, tmp_path):
    # An import of 80k entries (~90 MB) takes a second or two: several polls (300 ms) of its progress.
    path = tmp_path / "big-session.jsonl"
    path.write_bytes(generated(80000, seed=11))
    page = login()
    page.evaluate(RECORD)
    page.set_input_files("#import-files", str(path))
    wait_until(
        page,
        "() => { const p = document.querySelector('#import-results progress[data-import-bar]');"
        " return p && Number(p.value) > 0 && Number(p.value) < Number(p.max); }",
        timeout=120,
    )
    assert page.is_visible("form[data-import] .progress")
    shot(page, "gap-import-progress")
    page.wait_for_selector(".import-result.ok", timeout=300_000)
    shot(page, "gap-import-done")
    jobs = page.evaluate("window.__jobs")
    middle = sorted({round(v, 3) for v in jobs if 0 < v < 1})
    assert len(middle) >= 2, jobs  # the bar moved through several values on the way
    assert jobs == sorted(jobs), jobs  # and never went back
    bar = page.evaluate("window.__bar")
    assert any(30 < v < 100 for v in bar), bar  # the main bar too, past the upload's share
    assert bar[-1] == 100
    assert "imported" in page.inner_text("#import-results")
    assert Session.objects.count() == 1
    page.wait_for_selector("#session-table tbody tr td.name a")  # the list refreshed


def test_a_rejected_file_shows_its_errors_after_the_progress(login, server, tmp_path):
    path = tmp_path / "broken.jsonl"
    header = (
        b'{"type":"session","version":3,"id":"66666666-6666-4666-8666-666666666666",'
        b'"timestamp":"2026-01-05T10:00:00.000Z","cwd":"/x"}\n'
    )
    path.write_bytes(header + b"not json\n")
    page = login()
    page.set_input_files("#import-files", str(path))
    page.wait_for_selector(".import-result.bad")
    assert "line 2" in page.inner_text("#import-results")
    assert "0 of 1 file imported" in page.inner_text("form[data-import] .progress")
    assert not Session.objects.exists()
