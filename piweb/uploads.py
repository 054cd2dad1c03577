"""Large uploads through daphne without Twisted's form parsing.

daphne hands each request body to Django untouched, but its request class is Twisted's, which
first parses any multipart/form-data body into request.args with the email package: for a 110 MB
pi session file that is ~2.5 s and several copies of the file in memory, for args daphne never
reads (Django parses the upload itself). Twisted has a switch for it, parsePOSTFormSubmission;
daphne does not pass it, so install() makes False its default for daphne's requests.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any


def install() -> bool:
    """Idempotent; False where daphne or the switch is missing (then nothing changes)."""
    try:
        from daphne.http_protocol import WebRequest
        from twisted.web import http
    except ImportError:
        return False
    if getattr(WebRequest, "_piweb_form_parsing_off", False):
        return True
    if "parsePOSTFormSubmission" not in inspect.signature(http.Request.__init__).parameters:
        return False
    original = WebRequest.__init__

    @functools.wraps(original)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("parsePOSTFormSubmission", False)
        original(self, *args, **kwargs)

    WebRequest.__init__ = __init__
    WebRequest._piweb_form_parsing_off = True
    return True
