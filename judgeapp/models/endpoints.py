"""Judges and systems under test: where a model is reached, never the key itself."""

import uuid
from decimal import Decimal

from django.core.validators import MinValueValidator
from django.db import models

from .base import TimeStampedModel, content_hash, short_version
from .families import family_from_model, recognised_family
from .identity import identity_normalise


class StructuredOutput(models.TextChoices):
    NONE = "none", "none (parse the reply text)"
    JSON_OBJECT = "json_object", "json_object (llama.cpp takes a schema inside it)"
    JSON_SCHEMA = "json_schema", "json_schema (OpenAI, vLLM)"


class EndpointSource(models.TextChoices):
    FILE = "file", "judges file"
    ADMIN = "admin", "admin"
    ENV = "env", "environment (JUDGE_MODEL)"
    DEMO = "demo", "scripted demo server"
    # A judge that ran elsewhere (published verdicts brought in): no endpoint, never called from here.
    IMPORT = "import", "imported verdicts (no endpoint)"


class Endpoint(TimeStampedModel):
    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    name = models.SlugField(max_length=100, unique=True)
    model = models.CharField(max_length=200)
    family = models.CharField(max_length=50, blank=True, help_text="Derived from the model name when blank.")
    base_url = models.CharField(
        max_length=500, blank=True, help_text="OpenAI-compatible base URL; blank means OPENAI_BASE_URL."
    )
    api_key_env = models.CharField(
        max_length=100,
        default="OPENAI_API_KEY",
        help_text="The NAME of the environment variable that holds the key. The key itself is never stored.",
    )
    max_concurrency = models.PositiveIntegerField(default=8)
    structured_output = models.CharField(
        max_length=20, choices=StructuredOutput.choices, default=StructuredOutput.NONE
    )
    timeout_seconds = models.FloatField(default=60.0)
    max_tokens = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="The longest reply asked for, in tokens, sent on every call; blank means the mode's default.",
    )
    source = models.CharField(max_length=10, choices=EndpointSource.choices, default=EndpointSource.ADMIN)
    scripted_demo = models.BooleanField(
        default=False, help_text="Verdicts come from the repo's scripted demo server, not a language model."
    )

    class Meta:
        abstract = True
        ordering = ["name"]

    def __str__(self):
        return self.name

    @property
    def effective_family(self) -> str:
        return (self.family or family_from_model(self.model)).lower()

    @property
    def guessed_family(self) -> str:
        """The family the model name says, whatever the declared one."""
        return family_from_model(self.model).lower()

    @property
    def family_mismatch(self) -> bool:
        """A declared family that the model name contradicts (a known family other than the declared one)."""
        recognised = recognised_family(self.model)
        return bool(self.family) and recognised is not None and recognised != self.family.lower()

    def identity(self, default_base_url: str = "") -> tuple[str, str]:
        """Who answers: the server and the model, each spelled one way (models/identity.py: `127.0.0.1` is
        `localhost`, `SmolLM2` is `smollm2`). Two endpoints of one identity are one judge, whatever
        families they declare."""
        return identity_normalise(self.base_url or default_base_url or "", self.model)

    def config_snapshot(self) -> dict:
        """What defines this endpoint's behaviour; frozen into every run that uses it. No secret in it."""
        snapshot = {
            "name": self.name,
            "model": self.model,
            "family": self.effective_family,
            "base_url": self.base_url,
            "structured_output": self.structured_output,
            "temperature": 0.0,
            "scripted_demo": self.scripted_demo,
        }
        if self.max_tokens:  # only when set, so that the versions of endpoints without one stay as they were
            snapshot["max_tokens"] = self.max_tokens
        return snapshot

    @property
    def config_hash(self) -> str:
        return content_hash(self.config_snapshot())

    @property
    def version(self) -> str:
        return short_version(self.config_hash)


# A price per million tokens, in the judges' price currency (USD): a judge without both is unpriced, and a
# report's cost is then null (judging/costs.py). Not in the configuration snapshot: a price is what a call
# costs, not how the judge judges, so changing it changes no judge's version.
def price_field(what: str) -> models.DecimalField:
    return models.DecimalField(
        max_digits=12, decimal_places=4, null=True, blank=True, validators=[MinValueValidator(Decimal(0))],
        help_text=f"What a million {what} tokens cost, in dollars; blank: unpriced (reports show no cost).",
    )


class Judge(Endpoint):
    # The judge a command or a form uses when none is named: the one the judges file names as `default`
    # (or the demo's). The default judge from JUDGE_MODEL, the row named "default", comes first.
    is_default = models.BooleanField(default=False)

    input_price_per_million = price_field("prompt (input)")
    output_price_per_million = price_field("reply (output)")

    class Meta(Endpoint.Meta):
        constraints = [
            models.UniqueConstraint(fields=["is_default"], condition=models.Q(is_default=True), name="judge_one_default"),
            models.CheckConstraint(
                condition=models.Q(input_price_per_million__gte=0) | models.Q(input_price_per_million__isnull=True),
                name="judge_input_price_not_negative",
            ),
            models.CheckConstraint(
                condition=models.Q(output_price_per_million__gte=0) | models.Q(output_price_per_million__isnull=True),
                name="judge_output_price_not_negative",
            ),
        ]

    @property
    def priced(self) -> bool:
        return self.input_price_per_million is not None and self.output_price_per_million is not None


class System(Endpoint):
    system_prompt = models.TextField(blank=True)

    class Meta(Endpoint.Meta):
        pass

    def config_snapshot(self) -> dict:
        return {**super().config_snapshot(), "system_prompt": self.system_prompt}
