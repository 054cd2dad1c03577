"""piweb settings: one module, configured from PIWEB_* environment variables.

SQLite and the in-memory channel layer by default, so a fresh checkout runs with no services;
PIWEB_DATABASE_URL and PIWEB_REDIS_URL switch to PostgreSQL and Redis.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import django_stubs_ext
from django.core.exceptions import ImproperlyConfigured

django_stubs_ext.monkeypatch()

BASE_DIR = Path(__file__).resolve().parent.parent


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise ImproperlyConfigured(f"{name} must be true or false, not {raw!r}")


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None:
        return default
    try:
        return int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be an integer, not {raw!r}") from None


def env_secret(name: str, default: str = "") -> str:
    """NAME, or the contents of the file named by NAME_FILE (Docker secrets)."""
    path = os.environ.get(f"{name}_FILE")
    if path:
        try:
            return Path(path).read_text().strip()
        except OSError as exc:
            raise ImproperlyConfigured(f"{name}_FILE: cannot read {path}: {exc}") from None
    return os.environ.get(name, default)


DEBUG = env_bool("PIWEB_DEBUG", True)
SECRET_KEY = env_secret("PIWEB_SECRET_KEY")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("PIWEB_SECRET_KEY is required when PIWEB_DEBUG is false")
    SECRET_KEY = "piweb-insecure-development-key-do-not-use-in-production"

# Key of the entries' tamper-evident hash chain. Changing it makes every stored chain fail
# verification, so set it once per deployment (defaults to one derived from the secret key).
PIWEB_CHAIN_KEY = env_secret("PIWEB_CHAIN_KEY") or hashlib.sha256(f"piweb-chain:{SECRET_KEY}".encode()).hexdigest()

ALLOWED_HOSTS = [h.strip() for h in env_str("PIWEB_ALLOWED_HOSTS", "127.0.0.1,localhost,testserver").split(",")]
CSRF_TRUSTED_ORIGINS = [o for o in env_str("PIWEB_CSRF_TRUSTED_ORIGINS").split(",") if o]

# Behind a TLS-terminating proxy (README, "Running in production"). PIWEB_TLS_PROXY: trust the
# proxy's X-Forwarded-Proto. PIWEB_HTTPS: the site is served over HTTPS only (secure cookies,
# redirects to HTTPS, HSTS). With neither, everything works over plain HTTP.
if env_bool("PIWEB_TLS_PROXY", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
HTTPS = env_bool("PIWEB_HTTPS", False)
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = HTTPS
SECURE_SSL_REDIRECT = HTTPS
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]  # load balancers probe over plain HTTP
SECURE_HSTS_SECONDS = env_int("PIWEB_HSTS_SECONDS", 31_536_000 if HTTPS else 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("PIWEB_HSTS_INCLUDE_SUBDOMAINS", HTTPS)
SECURE_HSTS_PRELOAD = env_bool("PIWEB_HSTS_PRELOAD", HTTPS)
X_FRAME_OPTIONS = "DENY"

# Content-Security-Policy (django-csp): the app's pages load only their own scripts and styles, no
# inline script or style, no eval (htmx's hx-on handlers live in static/piweb/app.js).
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'", "data:"],
        "connect-src": ["'self'"],
        "font-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    }
}

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "csp",
    "channels",
    "django_htmx",
    "template_partials",
    "ninja",
    "sessions_app",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "csp.middleware.CSPMiddleware",
    "sessions_app.access.audit.request_context_middleware",  # request.id, X-Request-ID, audit context
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "sessions_app.web.errors.AppErrorMiddleware",  # domain errors -> 404 / 403 / 400 / 409
]

ROOT_URLCONF = "piweb.urls"
WSGI_APPLICATION = "piweb.wsgi.application"
ASGI_APPLICATION = "piweb.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    }
]


def _database() -> dict[str, Any]:
    url = env_str("PIWEB_DATABASE_URL")
    if url:
        import dj_database_url

        return dict(dj_database_url.parse(url, conn_max_age=env_int("PIWEB_DB_CONN_MAX_AGE", 0)))
    # WAL + IMMEDIATE transactions + a busy timeout: concurrent writers queue instead of failing
    # with "database is locked".
    return {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": env_str("PIWEB_SQLITE_PATH", str(BASE_DIR / "db.sqlite3")),
        "OPTIONS": {
            "transaction_mode": "IMMEDIATE",
            "timeout": 30,
            # 4 KiB pages (the default). 16 KiB pages write a 100k import ~1.5x faster, but every
            # append then commits 4x the bytes to the WAL and checkpoints more: p99 ~10 -> ~18 ms.
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;",
        },
        "TEST": {"NAME": env_str("PIWEB_SQLITE_TEST_PATH", str(BASE_DIR / "var" / "test.sqlite3"))},
    }


DATABASES = {"default": _database()}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = env_str("PIWEB_REDIS_URL")
if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            # redis-py 8 reads with a 5 s socket timeout by default, as long as channels-redis's
            # blocking receive (BZPOPMIN) waits on the server: the two race, and a consumer dies
            # with "Timeout reading from ..." (django/channels_redis#422). A longer client timeout
            # still notices a dead connection.
            "CONFIG": {
                "hosts": [{"address": REDIS_URL, "socket_timeout": 30}],
                "capacity": 2000,
                "expiry": 30,
                "prefix": "piweb",
            },
        }
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(env_str("PIWEB_STATIC_ROOT", str(BASE_DIR / "var" / "static")))
# WhiteNoise serves what collectstatic put in STATIC_ROOT: compressed, under hashed names, cached
# for a year. Without collectstatic, pages still render (piweb/staticfiles.py falls back to the
# plain names) and WhiteNoise serves the files from the app's folders (WHITENOISE_USE_FINDERS).
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "piweb.staticfiles.ManifestWithFallback"},
}
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG

DATA_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024

# Import limits: a line or file beyond these is rejected with its line number.
PIWEB_IMPORT_MAX_LINE_BYTES = env_int("PIWEB_IMPORT_MAX_LINE_BYTES", 16 * 1024 * 1024)  # (~13x while parsed)
PIWEB_IMPORT_MAX_FILE_BYTES = env_int("PIWEB_IMPORT_MAX_FILE_BYTES", 2 * 1024 * 1024 * 1024)
PIWEB_IMPORT_MAX_DEPTH = env_int("PIWEB_IMPORT_MAX_DEPTH", 512)
# What a file may store outside its entries (repeated header or entry lines): beyond, refused.
PIWEB_IMPORT_MAX_EXTRA_BYTES = env_int("PIWEB_IMPORT_MAX_EXTRA_BYTES", 1024 * 1024)
# v1/v2 files are migrated whole, in memory (pi's migration needs every line): at most this big.
PIWEB_IMPORT_MAX_LEGACY_BYTES = env_int("PIWEB_IMPORT_MAX_LEGACY_BYTES", 64 * 1024 * 1024)
# An import keeps ~0.7 KB per entry of the file (id, place in the tree, chain hash): at most this many.
PIWEB_IMPORT_MAX_ENTRIES = env_int("PIWEB_IMPORT_MAX_ENTRIES", 400_000)
# An import's staging session untouched this long is taken for a stopped import: the janitor
# deletes it (an import touches it with every batch of rows it writes).
PIWEB_IMPORT_STALE_SECONDS = env_int("PIWEB_IMPORT_STALE_SECONDS", 600)
# ...and, for a `piweb sync` push of the same file, taken for one a server restart stopped after this
# long (the client retries its push: it would otherwise wait PIWEB_IMPORT_STALE_SECONDS).
PIWEB_SYNC_STALE_SECONDS = env_int("PIWEB_SYNC_STALE_SECONDS", 30)
# Files this big or bigger (new sessions, v3) have their rows built by a worker process; -1: never.
PIWEB_IMPORT_WORKER_MIN_BYTES = env_int("PIWEB_IMPORT_WORKER_MIN_BYTES", 4 * 1024 * 1024)
# Search: an import that adds more entries than this is published first and indexed right after
# by a background thread (store/search_index.py: the session says "indexing…" meanwhile); a
# smaller one is indexed before the import returns.
PIWEB_SEARCH_INDEX_INLINE_ENTRIES = env_int("PIWEB_SEARCH_INDEX_INLINE_ENTRIES", 5000)
# Search: the longest one search may keep the database busy (ms), then it stops and asks for a
# narrower query (store/search.py); a query of many one-letter prefixes could otherwise hold a
# core for minutes. 0: no limit.
PIWEB_SEARCH_TIMEOUT_MS = env_int("PIWEB_SEARCH_TIMEOUT_MS", 5000)
# SQLite: imports of files this big or bigger leave the WAL checkpoint to a background thread
# (sessions_app/checkpoint.py); -1: never.
PIWEB_BACKGROUND_CHECKPOINT_BYTES = env_int("PIWEB_BACKGROUND_CHECKPOINT_BYTES", 4 * 1024 * 1024)
# SQLite: each process checkpoints the WAL in a thread this often (ms) instead of in the commit
# that crosses 1,000 pages (sessions_app/checkpoint.py); 0: SQLite's own, inline.
PIWEB_WAL_CHECKPOINT_MS = env_int("PIWEB_WAL_CHECKPOINT_MS", 250)

# An HTML export of a session with more entries than this is refused, with a link to its JSONL
# export (which streams any size): the browser that opens the file must hold all of it.
PIWEB_EXPORT_HTML_MAX_ENTRIES = env_int("PIWEB_EXPORT_HTML_MAX_ENTRIES", 200_000)
# Imports from the session list run in a thread with progress; false: in the request (tests).
PIWEB_IMPORT_BACKGROUND = env_bool("PIWEB_IMPORT_BACKGROUND", True)

# LLM providers (sessions_app/llm/registry.py). No key: only the offline demo model is offered.
PIWEB_OPENAI_API_KEY = env_secret("PIWEB_OPENAI_API_KEY")
PIWEB_OPENAI_BASE_URL = env_str("PIWEB_OPENAI_BASE_URL")
PIWEB_ANTHROPIC_API_KEY = env_secret("PIWEB_ANTHROPIC_API_KEY")
PIWEB_ANTHROPIC_BASE_URL = env_str("PIWEB_ANTHROPIC_BASE_URL")
PIWEB_LLM_MODELS = env_str("PIWEB_LLM_MODELS")  # JSON list in pi's models.json shape; replaces the defaults
PIWEB_DEMO_DELAY = env_str("PIWEB_DEMO_DELAY", "0.02")  # seconds between the demo model's words

# Live chat (sessions_app/streaming.py): delta coalescing, crash detection, presence, compaction.
PIWEB_STREAM_INTERVAL_MS = env_int("PIWEB_STREAM_INTERVAL_MS", 10)  # coalescing only under load
PIWEB_STREAM_SAVE_MS = env_int("PIWEB_STREAM_SAVE_MS", 200)  # partial -> row, off the delta path; 0: before each delta
PIWEB_TURN_STALE_SECONDS = env_int("PIWEB_TURN_STALE_SECONDS", 15)
PIWEB_PRESENCE_TTL_SECONDS = env_int("PIWEB_PRESENCE_TTL_SECONDS", 90)
PIWEB_JANITOR = env_bool("PIWEB_JANITOR", True)
PIWEB_COMPACTION_ENABLED = env_bool("PIWEB_COMPACTION_ENABLED", True)
PIWEB_COMPACTION_RESERVE_TOKENS = env_int("PIWEB_COMPACTION_RESERVE_TOKENS", 16384)
PIWEB_COMPACTION_KEEP_RECENT_TOKENS = env_int("PIWEB_COMPACTION_KEEP_RECENT_TOKENS", 20000)
PIWEB_CHAT_SYSTEM_PROMPT = env_str("PIWEB_CHAT_SYSTEM_PROMPT", "You are a helpful assistant.")

# Audit trail (access/audit.py) and sign-in limits (access/signin.py). With proxies in front,
# PIWEB_TRUSTED_PROXY_COUNT says how many, so the client IP is read from X-Forwarded-For; without
# it every client is the proxy (README, "Running in production").
# The failure counts live in the default cache: set PIWEB_CACHE_URL with several server processes.
# tree_nodes' chunks and the sign-in failure counts. Per process by default (a 100k-entry tree is
# ~100 chunks of ~110 KB; the cap bounds memory to ~250 MB); PIWEB_CACHE_URL (redis://host/db, a
# database of its own: clearing the cache empties it) shares them between server processes.
CACHE_URL = env_str("PIWEB_CACHE_URL")
CACHES: dict[str, dict[str, Any]]
if CACHE_URL:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": CACHE_URL}}
else:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
            "OPTIONS": {"MAX_ENTRIES": env_int("PIWEB_CACHE_MAX_ENTRIES", 2000)},
        }
    }
PIWEB_TRUSTED_PROXY_COUNT = env_int("PIWEB_TRUSTED_PROXY_COUNT", 0)
PIWEB_SIGNIN_MAX_FAILURES = env_int("PIWEB_SIGNIN_MAX_FAILURES", 5)  # per username and client IP
PIWEB_SIGNIN_MAX_FAILURES_PER_CLIENT = env_int("PIWEB_SIGNIN_MAX_FAILURES_PER_CLIENT", 50)  # any usernames
PIWEB_SIGNIN_WINDOW_SECONDS = env_int("PIWEB_SIGNIN_WINDOW_SECONDS", 900)


# Email, for password reset only (access/password_reset.py). PIWEB_EMAIL_URL: smtp://user:pass@host:587
# (STARTTLS), smtps://user:pass@host:465 (TLS), or console: (mails printed, for development). Unset:
# no email, and no password reset is offered (its pages are 404, the sign-in page has no link).
def _email_backend(url: str) -> str:
    if not url:
        return "django.core.mail.backends.dummy.EmailBackend"
    scheme = urlsplit(url).scheme
    if scheme == "console":
        return "django.core.mail.backends.console.EmailBackend"
    if scheme not in ("smtp", "smtps") or not urlsplit(url).hostname:
        raise ImproperlyConfigured("PIWEB_EMAIL_URL must be smtp://[user:pass@]host[:port], smtps://... or console:")
    return "django.core.mail.backends.smtp.EmailBackend"


_EMAIL_URL = env_secret("PIWEB_EMAIL_URL")
EMAIL_BACKEND = _email_backend(_EMAIL_URL)
_MAIL = urlsplit(_EMAIL_URL)
EMAIL_USE_SSL = _MAIL.scheme == "smtps"
EMAIL_USE_TLS = _MAIL.scheme == "smtp"
EMAIL_HOST = _MAIL.hostname or "localhost"
EMAIL_PORT = _MAIL.port or (465 if EMAIL_USE_SSL else 587)
EMAIL_HOST_USER = unquote(_MAIL.username or "")
EMAIL_HOST_PASSWORD = unquote(_MAIL.password or "")
EMAIL_TIMEOUT = 10
PIWEB_PASSWORD_RESET = bool(_EMAIL_URL)
DEFAULT_FROM_EMAIL = env_str("PIWEB_EMAIL_FROM", "piweb@localhost")
# Review emails (store/review_mail.py: review requests, @mentions): on when email is configured, as
# password reset decides; PIWEB_REVIEW_EMAILS=false switches them off. PIWEB_SITE_URL makes their
# links absolute (https://piweb.example.com); unset, they carry the path only.
PIWEB_REVIEW_EMAILS = env_bool("PIWEB_REVIEW_EMAILS", bool(_EMAIL_URL))
PIWEB_SITE_URL = env_str("PIWEB_SITE_URL", "").rstrip("/")
# Reset requests counted in the cache per client IP and per address, in a window from the first.
PIWEB_PASSWORD_RESET_MAX_PER_CLIENT = env_int("PIWEB_PASSWORD_RESET_MAX_PER_CLIENT", 10)
PIWEB_PASSWORD_RESET_MAX_PER_ADDRESS = env_int("PIWEB_PASSWORD_RESET_MAX_PER_ADDRESS", 3)
PIWEB_PASSWORD_RESET_WINDOW_SECONDS = env_int("PIWEB_PASSWORD_RESET_WINDOW_SECONDS", 3600)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("PIWEB_LOG_LEVEL", "INFO")},
}

local_settings = BASE_DIR / "piweb" / "local_settings.py"
if local_settings.exists():  # pragma: no cover - optional per-deployment overrides
    from piweb.local_settings import *  # type: ignore[import-not-found, import-untyped, unused-ignore]  # noqa: F403
