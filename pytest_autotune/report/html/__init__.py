"""The HTML report (`--autotune-html=PATH`, `pytest-autotune report`): one self-contained
file, rendered from records alone.

Records, not the session's live objects, are the input, so `pytest-autotune report
records.jsonl` rebuilds the very report a CI run wrote, from the artifact it uploaded; given
the records of several runs, it shows each group's latest decision with its trend across
the runs. Records written outside pytest (by `LocalTuner`) lack the plugin's extras
(verdict, device, work): the report then shows "-" where they would be.

The page is as long as what needs attention: failing groups first and open, every other
group one collapsed line that opens on a click. Every number the page shows twice is the
same number (the winner's median is its precise measurement in the summary line, the card
and the candidate table alike), and every term is explained where it is shown.

The page needs no network: CSS and script are inlined from the package's templates, and the
charts are inline SVG (`report.svg`). jinja2 escapes every value, so candidate names, keys
and error messages, which are the user's text, always show as text; a Content Security
Policy that admits only our own script (by its hash) backs that up.

One module a step: `records` reads the records (and the plugin's `extra` in them),
`decision` shapes one decision's card (its `candidates` table, its `roofs` and its
`charts`), `run` the whole page's view (`views` holds what the template shows), and
`render` renders it.
"""

from __future__ import annotations

from pytest_autotune.report.html.records import measured_name, winner_samples
from pytest_autotune.report.html.render import render_html, write_html
from pytest_autotune.report.html.run import run_view
from pytest_autotune.report.html.views import TERMS
from pytest_autotune.report.names import key_text

__all__ = [
    "TERMS",
    "key_text",
    "measured_name",
    "render_html",
    "run_view",
    "winner_samples",
    "write_html",
]
