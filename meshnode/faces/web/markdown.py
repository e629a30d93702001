"""Markdown as the notebook shows it: messages, notes, diary entries and goals written by the person,
the agent, peers and A2A parties, rendered to HTML a page may insert as is.

Two locks, either enough alone: markdown-it-py with raw HTML off (text that looks like a tag is
shown as typed, and its link validator refuses ``javascript:``-like URLs), then nh3 (the Ammonia
sanitizer) keeping only the tags below, with links limited to http(s) and mailto and opened as
``noopener noreferrer nofollow``. Images are not kept (the page's CSP would refuse outside ones; an
image shows as its alt text). Text past ``MAX_CHARS`` is cut first, with a note.
"""

from __future__ import annotations

from functools import lru_cache

import nh3
from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml

MAX_CHARS = 64 * 1024
TAGS = {"p", "br", "strong", "em", "del", "code", "pre", "blockquote", "ul", "ol", "li", "a", "h1", "h2", "h3",
        "h4", "h5", "h6", "hr", "table", "thead", "tbody", "tr", "th", "td"}
ATTRIBUTES = {"a": {"href", "title"}, "ol": {"start"}, "code": {"class"}}  # no style: the CSP refuses inline styles
SCHEMES = {"http", "https", "mailto"}


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "breaks": True, "linkify": False, "typographer": False})
    md.enable(["table", "strikethrough"])
    md.add_render_rule("image", _image_as_words)
    return md


def _image_as_words(renderer, tokens, idx, options, env) -> str:
    """An image shows as its alt text (the CSP would refuse an outside picture anyway)."""
    return escapeHtml(renderer.renderInlineAsText(tokens[idx].children or [], options, env))


def to_html(text: str | None) -> str:
    """``text`` (Markdown, any author) as sanitized HTML; "" for none."""
    if not text:
        return ""
    cut = len(text) > MAX_CHARS
    html = _parser().render(text[:MAX_CHARS] + ("\n\n*(cut: too long to show whole)*" if cut else ""))
    return nh3.clean(html, tags=TAGS, attributes=ATTRIBUTES, url_schemes=SCHEMES, link_rel="noopener noreferrer nofollow",
                     strip_comments=True).strip()
