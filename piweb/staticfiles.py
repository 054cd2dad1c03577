"""Static files: WhiteNoise's compressed, hashed manifest, with plain names as a fallback.

After collectstatic every URL carries its content hash (cached for a year). Before it, or for a
file the manifest does not know, Django's manifest storage raises ValueError and every page using
{% static %} would answer 500; here the plain name is used instead (WhiteNoise serves it from the
app's folders), and the missing collectstatic is logged once.
"""

from __future__ import annotations

import logging

from whitenoise.storage import CompressedManifestStaticFilesStorage

log = logging.getLogger(__name__)


class ManifestWithFallback(CompressedManifestStaticFilesStorage):
    manifest_strict = False
    _warned = False

    def stored_name(self, name: str) -> str:
        try:
            return str(super().stored_name(name))
        except ValueError:
            if not ManifestWithFallback._warned:
                ManifestWithFallback._warned = True
                log.warning("static file %s is not in the manifest: run manage.py collectstatic", name)
            return name
