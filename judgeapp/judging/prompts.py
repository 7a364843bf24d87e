"""The seed prompts, verbatim, and how they are filled in.

The texts live in `judgeapp/prompts/*.md`, copied word for word from the seeds; their content hash is the
prompt's version. Placeholders are `{{name}}`, filled in one pass, so a value that itself contains
`{{...}}` (a customer pasting a template) is never expanded a second time.
"""

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

PROMPTS_DIR = Path(__file__).resolve().parent.parent / "prompts"
_PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")


class PromptError(ValueError):
    pass


@dataclass(frozen=True)
class Prompt:
    name: str
    text: str

    @property
    def content_hash(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()

    @property
    def version(self) -> str:
        return self.content_hash[:12]

    @property
    def placeholders(self) -> set[str]:
        return set(_PLACEHOLDER.findall(self.text))

    def render(self, **values: str) -> str:
        missing = self.placeholders - values.keys()
        if missing:
            raise PromptError(f"prompt {self.name!r} needs {', '.join(sorted(missing))}")
        return _PLACEHOLDER.sub(lambda m: str(values[m.group(1)]), self.text)


def load_prompt(name: str) -> Prompt:
    path = PROMPTS_DIR / f"{name}.md"
    if not path.exists():
        raise PromptError(f"no prompt named {name!r} in {PROMPTS_DIR}")
    return Prompt(name=name, text=path.read_text(encoding="utf-8"))


def user_message(text: str) -> list[dict]:
    """The prompt as the single user message every judge call sends."""
    return [{"role": "user", "content": text}]
