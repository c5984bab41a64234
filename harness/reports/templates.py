"""The Jinja environment of every report rendered from reports/templates (the readiness
report, the nightly diff): one set of options, one Markdown-cell filter."""

from __future__ import annotations

import jinja2

from harness.core.versions import REPO_ROOT, release_label

TEMPLATES = REPO_ROOT / "reports" / "templates"


def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=jinja2.select_autoescape(["html", "html.j2"]),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["release"] = release_label  # "v1.38.0-beta.0, pre-release" in every header
    env.filters["md"] = lambda s: str(s).replace("|", "\\|").replace("\n", " ")  # a table cell
    return env
