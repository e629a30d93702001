"""Markdown in the notebook (faces/web/markdown.py): what an author types renders, and nothing an
author types becomes a script, an event handler, an inline style or an outside picture."""

from __future__ import annotations

import re

from hypothesis import given, settings, strategies as st

from meshnode.faces.web.markdown import MAX_CHARS, to_html


def test_the_usual_markdown_renders():
    html = to_html("**bold**, *em*, `code` and [a link](https://example.org/x)\n\n```py\nx = 1\n```\n\n- one\n- two")
    assert "<strong>bold</strong>" in html and "<em>em</em>" in html and "<code>code</code>" in html
    assert '<a href="https://example.org/x" rel="noopener noreferrer nofollow">a link</a>' in html
    assert '<pre><code class="language-py">x = 1\n</code></pre>' in html and "<li>two</li>" in html
    assert "<table>" in to_html("| a | b |\n|---|:-:|\n| 1 | 2 |") and to_html("") == ""


def test_hostile_text_stays_text():
    for text in ("<script>alert(1)</script>", '<img src=x onerror="alert(1)">', '<a href="javascript:alert(1)">x</a>',
                 "[x](javascript:alert(1))", "[x](data:text/html;base64,PHNjcmlwdD4=)", "[x](vbscript:msgbox)",
                 '<div style="position:fixed">over</div>', "![pic](https://tracker.example/p.png)"):
        html = to_html(text)
        tags = re.findall(r"<([a-z0-9]+)([^>]*)>", html)  # real tags (typed ones are escaped: &lt;)
        assert {tag for tag, _ in tags} <= {"p", "a"}, (text, html)
        assert not any(re.search(r"\bon\w+=|style=|href=\"(?!https?:)", attrs) for _, attrs in tags), (text, html)
    assert to_html("![a <b> pic](https://e/x.png)") == "<p>a &lt;b&gt; pic</p>"  # an image shows its words


def test_a_long_text_is_cut_with_a_note():
    html = to_html("x" * (MAX_CHARS + 10))
    assert html.count("x") == MAX_CHARS and "cut: too long to show whole" in html


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("<>\"'=:/()[]!*`#|-_ \nascriptonerjvbdhf1")), max_size=200))
def test_no_text_yields_a_tag_outside_the_list_or_an_attribute_outside_its_own(text):
    html = to_html(text)
    for tag, attrs in re.findall(r"<([a-z0-9]+)([^>]*)>", html):
        assert tag in {"p", "br", "strong", "em", "del", "code", "pre", "blockquote", "ul", "ol", "li", "a", "h1",
                       "h2", "h3", "h4", "h5", "h6", "hr", "table", "thead", "tbody", "tr", "th", "td"}, html
        names = set(re.findall(r'\s([a-z-]+)="', attrs))
        assert names <= {"href", "title", "rel", "start", "class"}, html
        assert not re.search(r'href="(?!https?:|mailto:)[a-zA-Z][a-zA-Z0-9+.-]*:', attrs), html  # relative ones stay
