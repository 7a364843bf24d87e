"""Model families, so that a judge is never of the family of the system it grades (seed: Pointwise, Jury)."""

import re

# Checked in order; the first pattern found in the lower-cased model name wins.
_FAMILY_PATTERNS: list[tuple[str, str]] = [
    (r"(^|[/:_-])(gpt|o1|o3|o4|chatgpt|davinci|text-embedding)", "openai"),
    (r"claude", "anthropic"),
    (r"gemini|gemma|palm|bison", "google"),
    (r"llama|codellama", "meta"),
    (r"mistral|mixtral|ministral|codestral|pixtral", "mistral"),
    (r"qwen|qwq", "qwen"),
    (r"deepseek", "deepseek"),
    (r"phi-?\d", "microsoft"),
    (r"command|aya|cohere", "cohere"),
    (r"yi-", "01-ai"),
    (r"glm|chatglm", "zhipu"),
    (r"granite", "ibm"),
    (r"falcon", "tii"),
    (r"olmo|tulu", "allenai"),
    (r"nemotron", "nvidia"),
    (r"grok", "xai"),
    (r"internlm", "shanghai-ai-lab"),
    (r"fake|scripted|demo-judge", "scripted"),
]


def recognised_family(model: str) -> str | None:
    """The known family a model name belongs to, or None when it matches none."""
    name = model.lower().strip()
    for pattern, family in _FAMILY_PATTERNS:
        if re.search(pattern, name):
            return family
    return None


def family_from_model(model: str) -> str:
    """The family a model name belongs to, or the name's first word when it matches no known family."""
    name = model.lower().strip()
    family = recognised_family(name)
    if family:
        return family
    head = re.split(r"[/:_.\-\s]", name, maxsplit=1)[0]
    return head or "unknown"
