"""Settings for judgeapp, read from the environment (CONTRACT §1).

A fresh clone runs with no variable set: SQLite in the project, an embedded broker in DATA_DIR, DEBUG on.
`JUDGEAPP_ENV=production` turns on the deploy checks' settings and refuses the development secret key.
Every variable read here is listed in `.env.example`.
"""

import importlib.util
import sys
import warnings
from decimal import Decimal
from pathlib import Path

import environ
from csp.constants import NONE, SELF, UNSAFE_INLINE
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env()
if (BASE_DIR / ".env").exists():
    environ.Env.read_env(BASE_DIR / ".env")

JUDGEAPP_ENV = env.str("JUDGEAPP_ENV", default="development")
if JUDGEAPP_ENV not in ("development", "production"):
    raise ImproperlyConfigured("JUDGEAPP_ENV must be 'development' or 'production'")
PRODUCTION = JUDGEAPP_ENV == "production"

DEVELOPMENT_SECRET_KEY = "django-insecure-judgeapp-development-key-do-not-use-in-production"
SECRET_KEY = env.str("SECRET_KEY", default=DEVELOPMENT_SECRET_KEY)
if PRODUCTION and (SECRET_KEY == DEVELOPMENT_SECRET_KEY or len(SECRET_KEY) < 50):
    raise ImproperlyConfigured(
        "SECRET_KEY must be set to a long random value in production; the development key is refused."
    )

# DEBUG is for the pages (a traceback in the browser): a Celery worker and a command have none to show, and
# DEBUG makes Django log every query, on SQLite with a second query that quotes its parameters (a tenth of
# a command's judgments per second, bench/overhead.py). The development server and the shell keep it.
_program = Path(sys.argv[0])  # `celery …` or `python -m celery …` (…/celery/__main__.py)
IS_CELERY_WORKER = "worker" in sys.argv[1:] and "celery" in (_program.name, _program.parent.name)
IS_COMMAND = _program.name == "manage.py" and len(sys.argv) > 1 and sys.argv[1] not in ("runserver", "shell")
DEBUG = env.bool("DJANGO_DEBUG", default=not PRODUCTION and not IS_CELERY_WORKER and not IS_COMMAND)
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=[] if PRODUCTION else ["*"])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_htmx",
    "template_partials",
    "csp",
    "judgeapp",
    "calibration",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "csp.middleware.CSPMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    # A path, query parameter or upload name that is no text: 400, one line; a full disk: 507 (issue 26).
    "judgeapp.judging.edge.EdgeMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # Login required everywhere (CONTRACT §5); views open to the public say so with @login_not_required.
    "django.contrib.auth.middleware.LoginRequiredMiddleware",
    # A page of many runs asks the same calibration questions once (judgeapp/judging/memo.py).
    "judgeapp.judging.memo.SharedReadsMiddleware",
]

if PRODUCTION or not DEBUG:
    # Static files straight from the app server: after collectstatic in production; on a laptop with DEBUG off
    # (what `up` serves, so a missing page is the site's 404, not a list of every URL) from the apps' static
    # folders, without a collectstatic. runserver itself serves them only with DEBUG on.
    MIDDLEWARE.insert(1, "whitenoise.middleware.WhiteNoiseMiddleware")
WHITENOISE_USE_FINDERS = not PRODUCTION
if not PRODUCTION:
    # Files come from the finders here; STATIC_ROOT exists only after a collectstatic.
    warnings.filterwarnings("ignore", message="No directory at: ", category=UserWarning)

ROOT_URLCONF = "judgeapp.urls"

# django-ninja's Swagger page and its scripts, served from here (no CDN), for the API's browsable docs. Found
# without importing ninja (as an installed app it would load pydantic and all of ninja in every command).
NINJA_DIR = Path(importlib.util.find_spec("ninja").origin).parent

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates", NINJA_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "judgeapp.context_processors.roles",
            ],
            # Each mode keeps its template tags in its own package (judgeapp/<mode>/templatetags.py).
            "libraries": {
                "judgeapp": "judgeapp.web.templatetags",
                "pointwise": "judgeapp.pointwise.templatetags",
                "jury": "judgeapp.jury.templatetags",
                "checkup": "judgeapp.checkup.templatetags",
            },
        },
    },
]

WSGI_APPLICATION = "judgeapp.wsgi.application"

# --- Database -------------------------------------------------------------------------------------------
DATABASES = {"default": env.db("DATABASE_URL", default=f"sqlite:///{BASE_DIR / 'db.sqlite3'}")}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Web, worker and CLI write to the same file at once: WAL lets readers go on during a write, IMMEDIATE
    # takes the write lock at BEGIN so two writers queue on busy_timeout instead of failing mid-transaction.
    DATABASES["default"]["OPTIONS"] = {
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA busy_timeout=30000;",
        "transaction_mode": "IMMEDIATE",
        "timeout": 30,
    }
    # The test database is a file, not memory, so that a real worker process can share it.
    DATABASES["default"]["TEST"] = {"NAME": str(BASE_DIR / "test-db.sqlite3")}
# Keep connections between requests and tasks: reconnecting for every judgment (and, on SQLite, running
# the PRAGMAs again) was a measurable part of a judgment's cost.
DATABASES["default"].setdefault("CONN_MAX_AGE", env.int("CONN_MAX_AGE", default=60))
DATABASES["default"].setdefault("CONN_HEALTH_CHECKS", True)

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Files ----------------------------------------------------------------------------------------------
DATA_DIR = Path(env.str("DATA_DIR", default=str(BASE_DIR / "data"))).resolve()
JUDGES_FILE = env.str("JUDGES_FILE", default=str(BASE_DIR / "judges.toml"))
# Server directories the web may offer for a batch rank or a blind comparison; nothing outside them.
BROWSE_ROOTS = [Path(p).resolve() for p in env.list("BROWSE_ROOTS", default=[str(DATA_DIR / "inbox")])]
# Artifacts and outputs larger than this are refused with a clear error, before anything is written.
ARTIFACT_MAX_BYTES = env.int("ARTIFACT_MAX_BYTES", default=200_000)
# Test sets, rubrics, outputs, label files and other inputs read from disk by the commands.
INPUT_MAX_BYTES = env.int("INPUT_MAX_BYTES", default=100_000_000)
UPLOAD_MAX_BYTES = env.int("UPLOAD_MAX_BYTES", default=20_000_000)
DATA_UPLOAD_MAX_MEMORY_SIZE = UPLOAD_MAX_BYTES
FILE_UPLOAD_MAX_MEMORY_SIZE = 2_500_000
# A test set of more cases is refused with one line, before it is stored: a run plans a unit per case and
# criterion, and a test set of millions of cases is a job for batches of test sets, not one run.
MAX_TESTSET_CASES = env.int("MAX_TESTSET_CASES", default=100_000)
# A run started in the browser that asks the judge more often than this says about how often, and starts only
# once its form's "Start this run of about N judge calls" is ticked (judging/forms.py: PreflightForm).
LARGE_RUN_CALLS = env.int("LARGE_RUN_CALLS", default=500)
# …or whose estimated cost (judging/costs.py, the judge's prices) is above this many dollars.
LARGE_RUN_COST = Decimal(env.str("LARGE_RUN_COST", default="5"))

# --- Default judge (CONTRACT §1) -------------------------------------------------------------------------
OPENAI_BASE_URL = env.str("OPENAI_BASE_URL", default="")
JUDGE_MODEL = env.str("JUDGE_MODEL", default="")
JUDGE_FAMILY = env.str("JUDGE_FAMILY", default="")
JUDGE_TIMEOUT_SECONDS = env.float("JUDGE_TIMEOUT_SECONDS", default=60.0)
JUDGE_MAX_ATTEMPTS = env.int("JUDGE_MAX_ATTEMPTS", default=5)
JUDGE_MAX_CONCURRENCY = env.int("JUDGE_MAX_CONCURRENCY", default=8)
JUDGE_BACKOFF_SECONDS = env.float("JUDGE_BACKOFF_SECONDS", default=0.5)  # first retry's wait; doubles each time
# How a judge's max_concurrency is held across processes (judgeapp/judging/limiters.py): "redis" (the
# broker's Redis) or "database" (slot rows). Default: redis when the broker is Redis, database otherwise.
# "host" (the lock files of earlier versions) is still accepted and means database.
JUDGE_LIMITER = env.str("JUDGE_LIMITER", default="")
if JUDGE_LIMITER not in ("", "host", "redis", "database"):
    raise ImproperlyConfigured("JUDGE_LIMITER must be redis or database")
JUDGE_LIMITER_REDIS_URL = env.str("JUDGE_LIMITER_REDIS_URL", default="")

# --- Celery ---------------------------------------------------------------------------------------------
# The default broker is kombu's filesystem transport under DATA_DIR: a real worker process, no server.
CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default="filesystem://localhost/")
BROKER_DIR = DATA_DIR / "broker"
if CELERY_BROKER_URL.startswith("filesystem://"):
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(BROKER_DIR / "queue"),
        "data_folder_out": str(BROKER_DIR / "queue"),
        "control_folder": str(BROKER_DIR / "control"),
        "processed_folder": str(BROKER_DIR / "processed"),
        "store_processed": False,
        # A worker asks for its next message only on this tick once its pool is full: at 0.05 s every unit
        # waited 25 ms on average (about 12% of a 0.2 s judge call, bench/pointwise.py); an idle worker
        # polling at 0.01 s costs about 1% more of a core.
        "polling_interval": 0.01,
    }
    # kombu's transport with atomic message writes (judgeapp/broker.py: its own can hand a worker half a file).
    CELERY_BROKER_TRANSPORT = "judgeapp.broker:Transport"
else:
    CELERY_BROKER_TRANSPORT_OPTIONS = {}
CELERY_TASK_DEFAULT_QUEUE = env.str("CELERY_QUEUE", default="judgeapp")
CELERY_TASK_IGNORE_RESULT = True  # run state lives in the models, not in a result backend
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
# One message in hand per process: a task is a batch of units (UNIT_BATCH_SIZE), so the broker's round trip
# is already shared by several judgments, and a worker holding many batches would leave other workers
# (other machines) idle at the end of a run (bench/scaleout.py). A killed worker loses what it held; the
# database recovery sends those units again.
CELERY_WORKER_PREFETCH_MULTIPLIER = env.int("WORKER_PREFETCH_MULTIPLIER", default=1)
# Celery's Django fixup closes every database connection before and after each task unless this is set:
# on PostgreSQL that is a new server process per judgment (bench/pointwise.py: one session per task, the
# database's CPU the bottleneck). With it, a pool process keeps its connection; judgeapp/signals.py drops
# one that is broken or older than CONN_MAX_AGE before each task, as Django does per request.
CELERY_DB_REUSE_MAX = env.int("CELERY_DB_REUSE_MAX", default=1_000_000)
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
# What a worker does when it starts and around each task (recovery, database connections, the agreement
# catch-up): imported by the worker, not by Django, so that a command which sends no task never loads Celery.
CELERY_IMPORTS = ("judgeapp.judging.signals", "calibration.signals")
CELERY_TASK_ALWAYS_EAGER = env.bool("CELERY_TASK_ALWAYS_EAGER", default=False)
# A judgment is a few judge calls with retries; a whole sequential run (a batch rank) takes longer.
UNIT_SOFT_TIME_LIMIT = env.int("UNIT_SOFT_TIME_LIMIT", default=600)
UNIT_HARD_TIME_LIMIT = UNIT_SOFT_TIME_LIMIT + 30
# Units claimed in one round trip and recorded in one transaction (judging/runs/units.py: judgments_claim,
# judgments_record); a Celery task judges a batch of at most this many.
UNIT_BATCH_SIZE = env.int("UNIT_BATCH_SIZE", default=16)
# A claim on a unit, a sequential run, a ranklist or a judge's slot lasts this long unless its holder renews it
# (judgeapp/judging/leases.py); the holder renews it every third of it while it works.
LEASE_SECONDS = env.int("LEASE_SECONDS", default=60)
# How long work waits for the database or Redis to come back (retrying with backoff) before it gives its units
# back to pending, never failing them (judgeapp/judging/outages.py).
SERVICE_OUTAGE_SECONDS = env.int("SERVICE_OUTAGE_SECONDS", default=600)
RUN_SOFT_TIME_LIMIT = env.int("RUN_SOFT_TIME_LIMIT", default=6 * 3600)
RUN_HARD_TIME_LIMIT = RUN_SOFT_TIME_LIMIT + 60
WORKER_CONCURRENCY = env.int("WORKER_CONCURRENCY", default=8)
# Labels arriving for a sample within this many seconds are counted by one agreement computation (a task sent
# with this countdown by the first of them); a mark of a sent task older than the second setting is taken as
# lost with its worker, and the next label sends another (calibration/services/agreement.py).
CALIBRATION_AGREEMENT_DEBOUNCE_SECONDS = env.float("CALIBRATION_AGREEMENT_DEBOUNCE_SECONDS", default=2.0)
CALIBRATION_AGREEMENT_QUEUED_STALE_SECONDS = env.int("CALIBRATION_AGREEMENT_QUEUED_STALE_SECONDS", default=600)
# The scripted demo judge that `manage.py up` starts for the demo (fakejudge; not a language model).
DEMO_JUDGE_PORT = env.int("DEMO_JUDGE_PORT", default=8931)

# --- Webhooks (docs/webhooks.md) --------------------------------------------------------------------------
# Each POST to a receiver: at most this long per connect, send and read (and the answer's first 4 KB read).
WEBHOOK_TIMEOUT_SECONDS = env.float("WEBHOOK_TIMEOUT_SECONDS", default=5.0)
# The waits before each retry (seconds): one attempt more than there are waits. A 429's Retry-After is
# honoured when longer, up to WEBHOOK_RETRY_AFTER_MAX_SECONDS.
WEBHOOK_RETRY_SECONDS = [float(s) for s in env.list("WEBHOOK_RETRY_SECONDS", default=["10", "30", "120", "600"])]
WEBHOOK_RETRY_AFTER_MAX_SECONDS = env.float("WEBHOOK_RETRY_AFTER_MAX_SECONDS", default=3600.0)
# The address people open judgeapp at: the link in each message's text.
SITE_URL = env.str("SITE_URL", default="http://localhost:8000").rstrip("/")

# --- Agent-as-a-Judge (docs/agent.md) --------------------------------------------------------------------
# A workspace (a directory or an uploaded archive) is copied into the run's directory within these limits.
AGENT_WORKSPACE_MAX_BYTES = env.int("AGENT_WORKSPACE_MAX_BYTES", default=50_000_000)
AGENT_WORKSPACE_MAX_FILES = env.int("AGENT_WORKSPACE_MAX_FILES", default=5_000)
AGENT_FILE_MAX_BYTES = env.int("AGENT_FILE_MAX_BYTES", default=20_000_000)
AGENT_TRACE_MAX_BYTES = env.int("AGENT_TRACE_MAX_BYTES", default=20_000_000)
# The judge's run_file sandbox (bubblewrap, `bwrap`; docs/agent.md): limits per call.
AGENT_SANDBOX_ENABLED = env.bool("AGENT_SANDBOX_ENABLED", default=True)
AGENT_SANDBOX_TIMEOUT_SECONDS = env.float("AGENT_SANDBOX_TIMEOUT_SECONDS", default=30.0)
AGENT_SANDBOX_MEMORY_MB = env.int("AGENT_SANDBOX_MEMORY_MB", default=512)
AGENT_SANDBOX_MAX_PROCESSES = env.int("AGENT_SANDBOX_MAX_PROCESSES", default=64)
# What a program may write: on top of its workspace copy, and again in /tmp and /dev/shm (tmpfs, RAM).
AGENT_SANDBOX_DISK_MB = env.int("AGENT_SANDBOX_DISK_MB", default=64)
AGENT_SANDBOX_OUTPUT_BYTES = env.int("AGENT_SANDBOX_OUTPUT_BYTES", default=8_000)
# The interpreter for .py files, found on /usr/local/bin:/usr/bin:/bin and mounted read-only with its
# installation (a system Python, or a venv of its own outside the app's directory; as root the sandbox
# runs as nobody, so every user must be able to read it: not under /root).
AGENT_SANDBOX_PYTHON = env.str("AGENT_SANDBOX_PYTHON", default="python3")

# --- Auth and web ---------------------------------------------------------------------------------------
# The development error page (and error mail) masks the credentials inside URLs: DATABASE_URL,
# CELERY_BROKER_URL and any other setting, environment variable or local variable (judgeapp/reporting.py).
DEFAULT_EXCEPTION_REPORTER_FILTER = "judgeapp.reporting.CredentialsMaskingFilter"
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"
# Failed logins and failed API tokens (judgeapp/throttle.py): an account or an address with this many
# failures within the window is answered 429 until the window ends; 0 turns the throttle off.
AUTH_FAILURE_LIMIT = env.int("AUTH_FAILURE_LIMIT", default=30)
AUTH_FAILURE_WINDOW_SECONDS = env.int("AUTH_FAILURE_WINDOW_SECONDS", default=900)
# Proxies in front of the app that append to X-Forwarded-For (a TLS proxy, a load balancer): the client's
# address is the entry the outermost of them wrote. 0 (the default): X-Forwarded-For is the client's own
# to write, and REMOTE_ADDR is the address.
TRUSTED_PROXY_COUNT = env.int("TRUSTED_PROXY_COUNT", default=0)

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static", NINJA_DIR / "static"]
STATIC_ROOT = BASE_DIR / "staticfiles"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            "whitenoise.storage.CompressedManifestStaticFilesStorage"
            if PRODUCTION
            else "django.contrib.staticfiles.storage.StaticFilesStorage"
        )
    },
}

# --- Content-Security-Policy (django-csp) ------------------------------------------------------------------
# Scripts only from the app's own static files: no inline script, no event-handler attribute, no eval (the
# htmx-config in templates/base.html turns off htmx's eval features and the style element it would inject).
# Stylesheets only from static files, though a style attribute may set a width or a colour (progress bars,
# histogram bars): CSS in an attribute runs nothing, and every URL it could load is held to 'self' above.
# Images from here and data: URIs (Swagger UI's icons). No plugin, no <base>, forms post only here, and no
# other site may frame a page. The same policy in development: a page that breaks under it breaks on the
# laptop and in the browser tests, not first in production (django-csp leaves DEBUG's 404 and 500 pages
# alone). CSP_REPORT_ONLY=true sends it as Content-Security-Policy-Report-Only instead: reported, not enforced.
_CSP = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF],
        "style-src-attr": [UNSAFE_INLINE],
        "img-src": [SELF, "data:"],
        "font-src": [SELF],
        "connect-src": [SELF],
        "object-src": [NONE],
        "base-uri": [NONE],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    }
}
if env.bool("CSP_REPORT_ONLY", default=False):
    CONTENT_SECURITY_POLICY_REPORT_ONLY = _CSP
else:
    CONTENT_SECURITY_POLICY = _CSP

# --- Production hardening (python manage.py check --deploy) ---------------------------------------------
if PRODUCTION:
    SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=True)
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=31_536_000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    SECURE_CONTENT_TYPE_NOSNIFF = True
    if env.bool("BEHIND_TLS_PROXY", default=False):
        SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="WARNING")},
    # httpx logs every request line at INFO; keep it quiet so nothing about a judge's endpoint is chatty.
    "loggers": {"httpx": {"level": "WARNING"}, "openai": {"level": "WARNING"}},
}
