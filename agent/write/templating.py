"""Jinja2 with autoescape on, templates and their CSS/JS read from the installed package.

Pages are built from templates rather than f-strings: every value is escaped unless a template
says otherwise, and the structure of a page can be read in one file. The stylesheet and the small
script a page needs are inlined when it is built, so the page is one file that loads nothing.
Templates ship as package data and are read through importlib.resources, so an installed
predigest (not only a checkout) finds them.
"""

from __future__ import annotations

from functools import cache
from importlib.resources import files

import jinja2
from markupsafe import Markup

from agent.core.errors import PredigestError

_CLOSERS = ("</script", "</style", "<!--")


def _read(name: str) -> str:
    try:
        return files("agent").joinpath("templates", name).read_text(encoding="utf-8")
    except (OSError, ValueError) as e:
        raise PredigestError(
            f"template {name} is missing from the installed package ({e})",
            hint="reinstall predigest: `pip install .` ships agent/templates",
        ) from e


def inline(name: str) -> Markup:
    """An asset's text, unescaped, for a <style> or <script> element. It must not be able to
    close that element early: our own files, checked anyway."""
    text = _read(name)
    if any(c in text.lower() for c in _CLOSERS):
        raise PredigestError(f"template asset {name} contains an element closer", hint="remove it from the asset")
    return Markup(text)


@cache
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FunctionLoader(lambda name: (_read(name), None, lambda: True)),
        autoescape=True,
        undefined=jinja2.StrictUndefined,  # a missing variable is an error, not an empty string
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.globals["inline"] = inline
    return env


def render(template: str, **context: object) -> str:
    return environment().get_template(template).render(**context)
