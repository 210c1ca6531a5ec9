"""Rendering the report's view into one self-contained HTML document, and writing it."""

from __future__ import annotations

import base64
import hashlib
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import jinja2
from markupsafe import Markup

from pytest_autotune.report.html.run import run_view
from pytest_autotune.report.html.views import TERMS, RunView
from pytest_autotune.tune.files import replace_text
from pytest_autotune.tune.records import AutotuneRecord


def _environment() -> jinja2.Environment:
    """Autoescape on for every template, and undefined names fail loudly: a template that
    names a field the view lacks is our bug, not a blank cell."""
    return jinja2.Environment(
        loader=jinja2.PackageLoader("pytest_autotune.report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )


def render_html(records: Sequence[AutotuneRecord], *, title: str = "pytest-autotune") -> str:
    """The report of `records` as one HTML document.

    Raises `RecordError`, naming the record and field, when a record's results, checks,
    bounds or extras do not read; a missing extra is not an error (it shows as "-").
    """
    return _render(run_view(records, title=title))


def _render(view: RunView) -> str:
    env = _environment()
    loader = env.loader
    assert loader is not None
    script, _, _ = loader.get_source(env, "report.js")
    style, _, _ = loader.get_source(env, "report.css")
    style += hint_style(TERMS)
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    return env.get_template("report.html.j2").render(
        run=view,
        script=Markup(script),
        style=Markup(style),
        script_hash=f"sha256-{digest}",
    )


_CSS_PLAIN = re.compile(r"[A-Za-z0-9 .,:;()=%'+-]")
"""What a CSS string may hold as itself; anything else (a quote, a backslash, `<` of a
`</style>`) is written as an escape."""


def hint_style(terms: Mapping[str, str]) -> str:
    """The style that shows each term's explanation under every fact of that term (the
    `dd.hint` of its card, by `data-term`), so that it is written once in the page, not in
    each card: 14 explanations in each of 150 groups' cards were 0.77 MB of a 2.34 MB page.
    Generated content, so it shows with JavaScript off; the Terms section holds the same
    text, to select and to find."""
    rules = []
    for term, meaning in terms.items():
        text = "".join(c if _CSS_PLAIN.fullmatch(c) else f"\\{ord(c):06x}" for c in meaning)
        slug = term.replace(" ", "-")  # as the template names it
        rules.append(f'.facts dd.hint[data-term="{slug}"]::before {{ content: "{text}"; }}')
    return "\n" + "\n".join(rules) + "\n"


def write_html(
    path: str | os.PathLike[str],
    records: Sequence[AutotuneRecord],
    *,
    title: str = "pytest-autotune",
    stopped: str | None = None,
    notes: Sequence[str] = (),
) -> RunView:
    """Write the report to `path`, creating its folder, replacing any file there whole
    (`replace_text`); UTF-8, ending with a newline.
    `stopped`: why the run stopped early, which the records say where there are any.
    `notes`: the session's lines beside the terminal summary's table, listed on the page.
    Returns the view it shows, so a caller can say what was written as the page counts it."""
    view = run_view(records, title=title, stopped=stopped, notes=notes)
    text = _render(view)
    replace_text(Path(path), text if text.endswith("\n") else text + "\n")
    return view
