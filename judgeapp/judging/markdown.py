"""Markdown a person wrote (a lead's instructions to annotators), rendered for a page that others read.

The text is hostile until shown otherwise: raw HTML is not rendered (it comes out as escaped text), a link
goes only to http, https or mailto (anything else — `javascript:`, `data:`, a relative path — stays as plain
text), images are not rendered (an image would load from anywhere the writer likes), and every link opens
with `rel="noopener noreferrer nofollow"`. The length is bounded before the text is parsed.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt

from judgeapp.judging.errors import InputError
from judgeapp.judging.text import text_refuse

MAX_MARKDOWN_LENGTH = 20_000
LINK_SCHEMES = frozenset({"http", "https", "mailto"})


def _link_allowed(url: str) -> bool:
    # markdown-it has decoded entities and percent-encoded the URL by now: "&#106;avascript:" is "javascript:".
    try:
        scheme = urlsplit(url.strip()).scheme.lower()
    except ValueError:
        return False
    return scheme in LINK_SCHEMES


def _renderer() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.disable("image")
    md.validateLink = _link_allowed

    def link_open(self, tokens, idx, options, env):
        tokens[idx].attrSet("rel", "noopener noreferrer nofollow")
        return self.renderToken(tokens, idx, options, env)

    md.add_render_rule("link_open", link_open)
    return md


_MD = _renderer()


def markdown_check(text: str, *, where: str = "the instructions", max_length: int = MAX_MARKDOWN_LENGTH) -> str:
    """The text with Windows line ends made plain, or InputError: too long, or not storable text."""
    text = text_refuse(text.replace("\r\n", "\n"), where)
    if len(text) > max_length:
        raise InputError(f"{where} are {len(text):,} characters long; at most {max_length:,}")
    return text


def markdown_html(text: str) -> SafeString:
    """The text rendered as HTML that is safe to put in a page (see the module's docstring). A text past the
    bound (stored before the bound, or written around the form) is cut, never parsed whole."""
    return mark_safe(_MD.render((text or "")[:MAX_MARKDOWN_LENGTH]))
