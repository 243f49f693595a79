"""`predigest cassettes relay`: a folder of a real model's saved answers -> relayed cassettes.

The folder is laid out by document path, as the answers were collected:

```
FOLDER/answers/<document path>.json   the bare FileExtraction (SharedExtraction) the model returned, unedited
FOLDER/prompts/<document path>.txt    the messages it was shown (`predigest prompt show` output)
FOLDER/answers/compose/<topic>.json   optional: the EveningComposition it returned to the topic's composing call
FOLDER/prompts/compose/<topic>.txt    (`prompt show --doc compose/<topic>`, built from the answers above)
```

Every source of the evening needs an answer, and when `prompts/` is there every request must
equal what the model was shown; the cassettes then carry the answers into the repository, so
nothing later reads the folder again.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from agent.core.errors import PredigestError
from agent.extract.llm.relay import RelayedAnswer, read_printed_prompt, relay_answers
from agent.extract.prompting import compose_path
from agent.pipeline import Settings, answer_plan, compose_requests, evening_sources


def read_answers(folder: Path) -> list[RelayedAnswer]:
    """The saved answers of a folder, each with the printout it answered when there is one."""
    answers_dir, prompts_dir = folder / "answers", folder / "prompts"
    if not answers_dir.is_dir():
        raise PredigestError(f"{folder} has no answers/ folder", hint="lay it out as answers/<document path>.json")
    out = []
    for path in sorted(answers_dir.rglob("*.json")):
        doc = path.relative_to(answers_dir).as_posix().removesuffix(".json")
        shown_path = prompts_dir / f"{doc}.txt"
        if prompts_dir.is_dir() and not shown_path.is_file():
            raise PredigestError(f"no printed prompt {shown_path} for {path}", hint="add it, or drop prompts/")
        shown = read_printed_prompt(shown_path.read_text(encoding="utf-8")) if shown_path.is_file() else None
        out.append(RelayedAnswer(doc, path.read_text(encoding="utf-8"), shown))
    return out


def relay_folder(
    s: Settings, folder: Path, *, model: str, obtained: str, note: str = "", topics: Sequence[str] = ()
) -> list[Path]:
    """Write the relayed cassettes of one evening into `s.cassette_dir` (or the workspace's): of
    `s.topic`'s requests, or with several `topics` of the shared requests that carry them all."""
    asked = list(topics) if len(topics) > 1 else [s.topic]
    es = answer_plan(s, asked)
    requests, llm, sources = es.requests, es.llm, evening_sources(es.evenings)
    everything = read_answers(folder)
    composing = [a for a in everything if a.doc_path.startswith(compose_path(""))]
    answers = [a for a in everything if a not in composing]
    answered = {a.doc_path for a in answers}
    missing = [d.path for d in sources if d.path not in answered]
    if missing:
        raise PredigestError(
            f"no saved answer for {len(missing)} source(s) of the evening: {', '.join(missing)}",
            hint="a relayed set covers the whole evening, or its briefing would read as a quieter one",
        )
    split = sorted({r.doc_path for r in requests if r.chunks > 1} & answered)
    if split:
        raise PredigestError(f"split into parts, so one answer cannot stand for them: {', '.join(split)}", hint="")
    written = relay_answers(requests, answers, llm, model=model, date=obtained, note=note)
    if not composing:
        return written
    # a topic's composing request is built from the evening's extractions as they now replay, so after them
    by_doc = {compose_path(t): r for t, r in compose_requests(s, asked)[1].items()}
    if stray := sorted(a.doc_path for a in composing if a.doc_path not in by_doc):
        raise PredigestError(
            f"answers/{stray[0]}.json answers no topic of this run (composing answers: "
            f"{', '.join(sorted(by_doc)) or 'none'})",
            hint="name the file answers/compose/<topic>.json for a topic the command asks",
        )
    wanted = [by_doc[a.doc_path] for a in composing]
    return written + relay_answers(wanted, composing, llm, model=model, date=obtained, note=note)
