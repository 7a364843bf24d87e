"""What Django's error page (DEBUG) and error e-mails show: credentials masked (settings:
DEFAULT_EXCEPTION_REPORTER_FILTER).

Django hides settings whose *name* looks secret (`SECRET_KEY`, `DATABASES["default"]["PASSWORD"]`), but a
URL carries its credentials in its value: `CELERY_BROKER_URL = "redis://:hunter2@cache:6379/0"`, and in
development the request's META holds the whole environment, `DATABASE_URL` included. Every text shown
(settings, META, cookies, a frame's local variables, at any depth) has the password of any URL in it
masked, and a variable or key whose name says it holds a URL with credentials is masked whole.
"""

from __future__ import annotations

import re

from django.views.debug import SafeExceptionReporterFilter

# scheme://user:password@host (the password may be empty: redis://:password@host), and scheme://token@host.
_URL_CREDENTIALS = re.compile(r"(?P<scheme>\b[a-z][a-z0-9+.-]*://)(?P<userinfo>[^\s/@'\"<>]+)@", re.I)


def mask_url_credentials(text: str, substitute: str) -> str:
    def masked(match: re.Match) -> str:
        user, sep, _password = match.group("userinfo").partition(":")
        if sep:
            return f"{match.group('scheme')}{user}:{substitute}@"
        return f"{match.group('scheme')}{substitute}@"  # a token as the user name

    return _URL_CREDENTIALS.sub(masked, text)


class _MaskedRepr:
    """Stands for an object whose repr held credentials: the page shows the masked repr."""

    def __init__(self, text: str):
        self.text = text

    def __repr__(self) -> str:
        return self.text


class CredentialsMaskingFilter(SafeExceptionReporterFilter):
    hidden_settings = re.compile("API|AUTH|TOKEN|KEY|SECRET|PASS|SIGNATURE|HTTP_COOKIE|CREDENTIAL|DSN", flags=re.I)

    def cleanse_setting(self, key, value):
        cleansed = super().cleanse_setting(key, value)
        return self._mask(cleansed)

    def cleanse_special_types(self, request, value):
        value = super().cleanse_special_types(request, value)
        if value is None or isinstance(value, (str, dict, list, tuple, int, float, bool, bytes)):
            return self._mask(value)
        # Any other object (a connection, a settings holder) is shown by its repr: mask that.
        try:
            text = repr(value)
        except Exception:  # noqa: BLE001 - the page shows what Django would: nothing better is known
            return value
        masked = mask_url_credentials(text, self.cleansed_substitute)
        return value if masked == text else _MaskedRepr(masked)

    def _mask(self, value):
        if isinstance(value, str):
            return mask_url_credentials(value, self.cleansed_substitute)
        if isinstance(value, dict):
            return {k: self._mask(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self._mask(v) for v in value]
        if isinstance(value, tuple):
            return tuple(self._mask(v) for v in value)
        return value
