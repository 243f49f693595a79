"""What is new, said once: the words the extraction prompts quote, for the rule `agent.rules.dedupe` applies.

The model is asked to judge novelty the way the rules will check it, so the two cannot drift: the
prompt's `{{novelty}}` is this text, and dedupe's docstring names it as the rule it applies.
"""

from __future__ import annotations

NOVELTY = """\
Judge novelty against the anchors listed with the document, citing an anchor by its id ("A3"):
  - "covered": the document tells an anchored subject and adds no figure, flag, version, ID or
    named result that the anchor does not already hold (its name and the facts listed after
    "holds:"), however it is worded and in whatever language. A recap of old news is covered.
  - "supplement": the same subject (the same release, paper, feature or benchmark) with at least
    one such new fact; cite the anchor it adds to.
  - "new": no listed anchor tells its subject. A new version of an anchored product ("X v0.24.0"
    when "X v0.23.0" is anchored) is "new", citing the earlier release's id as its anchor."""
