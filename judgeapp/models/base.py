import hashlib
import json

from django.db import models


class TimeStampedModel(models.Model):
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        abstract = True


def content_hash(data: bytes | str | dict | list) -> str:
    """sha256 hex of the content; dicts and lists are hashed in a canonical JSON form."""
    if isinstance(data, (dict, list)):
        data = json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    if isinstance(data, str):
        data = data.encode("utf-8")
    return hashlib.sha256(data).hexdigest()


def short_version(digest: str) -> str:
    """The form a version is shown in: the first 12 hex digits of its content hash."""
    return digest[:12]
