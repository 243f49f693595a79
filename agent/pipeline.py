"""The evening run, end to end: ingest → anchors → extract → rules → render → write.

`Settings` is the one settings object (flags > environment > predigest.toml > defaults); `run`
takes it and an optional `Extractor`, so tests and the eval can hand in their own.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from pydantic import ValidationError

from agent.anchors import AnchorRegistry, build_registry
from agent.compose import Composed, Limits, compose, merge_chunks
from agent.errors import LLMError, OutputExists, PredigestError, WorkspaceError
from agent.extract import CallRecord, ExtractionRequest, ExtractionResult, Extractor
from agent.ingest import Window, evening_window, scan, sources, unreadable
from agent.llm import LLMConfig
from agent.llm.config import resolve_backend
from agent.prompting import Template, build_requests, load_template
from agent.render import render
from agent.rules import DocResult, Finding
from agent.workspace import Workspace, load_workspace
from schemas.documents import SourceDoc
from schemas.extraction import FileExtraction


@dataclass(frozen=True)
class Settings:
    workspace: Path
    topic: str
    date: dt.date
    out: Path | None = None  # file or directory; default: the workspace's own inbox folder
    force: bool = False
    model: str | None = None
    mode: str | None = None
    base_url: str | None = None
    api_key: str = field(default="", repr=False)
    backend: str = "auto"
    cassette_dir: Path | None = None
    cache_dir: Path | None = None
    no_cache: bool = False
    concurrency: int | None = None
    max_calls: int | None = None
    max_cost_usd: float | None = None
    prompt: str = "extract"
    prompt_dir: Path | None = None  # default: the prompts/ folder of this project


def settings_from(flags: Mapping[str, object], env: Mapping[str, str]) -> Settings:
    """Flags win over the environment; the workspace's predigest.toml fills the rest later."""
    values = {k: v for k, v in flags.items() if v is not None}
    values.setdefault("api_key", env.get("OPENAI_API_KEY", ""))
    if "base_url" not in values and env.get("OPENAI_BASE_URL"):
        values["base_url"] = env["OPENAI_BASE_URL"]
    if "model" not in values and env.get("PREDIGEST_MODEL"):
        values["model"] = env["PREDIGEST_MODEL"]
    if "cache_dir" not in values and env.get("PREDIGEST_CACHE_DIR"):
        values["cache_dir"] = Path(env["PREDIGEST_CACHE_DIR"])
    return Settings(**values)  # type: ignore[arg-type]


def llm_config(ws: Workspace, s: Settings) -> LLMConfig:
    c = ws.config.llm
    cassettes = s.cassette_dir or (ws.root / (c.cassettes or "cassettes"))
    kwargs: dict[str, object] = {
        "model": s.model or c.model,
        "mode": s.mode or c.mode,
        "backend": s.backend,
        "api_key": s.api_key,
        "cassette_dir": Path(cassettes).resolve(),
        "concurrency": s.concurrency or c.concurrency,
        "timeout_s": c.timeout_s,
        "max_attempts": c.max_attempts,
        "max_validation_retries": c.max_validation_retries,
        "max_calls": s.max_calls or c.max_calls,
        "max_cost_usd": s.max_cost_usd or c.max_cost_usd,
        "prices": dict(c.prices),
    }
    if s.base_url:
        kwargs["base_url"] = s.base_url
    if s.no_cache:
        kwargs["cache_dir"] = None
    elif s.cache_dir:
        kwargs["cache_dir"] = s.cache_dir
    return LLMConfig(**kwargs)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Plan:
    """Everything decided before the first call: what is read, what is known, what is asked."""

    ws: Workspace
    window: Window
    docs: list[SourceDoc]
    registry: AnchorRegistry
    template: Template
    requests: list[ExtractionRequest]

    @property
    def sources(self) -> list[SourceDoc]:
        return sources(self.docs)


def plan(s: Settings) -> Plan:
    ws = load_workspace(s.workspace)
    docs = scan(ws, s.topic, s.date)
    registry = build_registry(docs, s.topic, s.date)
    template = load_template(s.prompt, s.prompt_dir) if s.prompt_dir else load_template(s.prompt)
    srcs = sources(docs)
    if not srcs:
        raise WorkspaceError(
            f"no document of {ws.root} falls in the window {evening_window(ws, s.date)}",
            hint=f"check --date, or run `predigest inbox {s.workspace} --topic {s.topic} --date {s.date}`",
        )
    return Plan(
        ws, evening_window(ws, s.date), docs, registry, template, build_requests(srcs, registry, ws, s.topic, template)
    )


def requests_for(p: Plan, doc: str) -> list[ExtractionRequest]:
    """The request(s) one document of the evening sends (several when it is split)."""
    reqs = [r for r in p.requests if r.doc_path == doc]
    if not reqs:
        known = ", ".join(d.path for d in p.sources)
        raise PredigestError(f"{doc} is not a source of the evening {p.window.date}", hint=f"pick one of: {known}")
    return reqs


def add_reference(s: Settings, doc: str, extraction: Path, note: str = "") -> Path:
    """Store a hand-written expected answer for one document as a reference cassette."""
    p = plan(s)
    reqs = requests_for(p, doc)
    if len(reqs) != 1:
        raise PredigestError(f"{doc} is split into {len(reqs)} parts", hint="reference cassettes take whole documents")
    try:
        answer = FileExtraction.model_validate_json(extraction.read_text(encoding="utf-8"))
    except (OSError, ValidationError) as e:
        first = e.errors()[0] if isinstance(e, ValidationError) else None
        what = f"{'.'.join(map(str, first['loc']))}: {first['msg']}" if first else str(e)
        raise PredigestError(
            f"{extraction} is not a FileExtraction ({what})", hint="see schemas/extraction.py for the fields"
        ) from e
    from agent.llm import write_reference_cassette  # lazy: imports openai + instructor

    return write_reference_cassette(reqs[0], answer, llm_config(p.ws, s), note=note)


def rekey(s: Settings) -> list[Path]:
    """Re-key the reference cassettes of an evening after an intended prompt or schema change."""
    from agent.llm import rekey_reference_cassettes  # lazy: imports openai + instructor

    p = plan(s)
    config = llm_config(p.ws, s)
    return rekey_reference_cassettes(config.cassette_dir, {r.doc_path: r for r in p.requests}, config)


@dataclass(frozen=True)
class RunReport:
    composed: Composed
    markdown: str
    records: list[CallRecord]
    out_path: Path
    json_path: Path
    calls_path: Path
    seconds: float
    backend: str
    plan: Plan  # what was read and known: the eval scores against it without scanning again

    @property
    def documents(self) -> int:
        return len(self.plan.sources)

    @property
    def findings(self) -> list[Finding]:
        return self.composed.findings


def run(
    s: Settings,
    extractor: Extractor | None = None,
    on_result: Callable[[ExtractionResult], None] | None = None,
    dry_out: bool = False,
    on_plan: Callable[[Plan], None] | None = None,
) -> RunReport:
    """One evening for one topic. Writes nothing until the briefing is complete.

    `on_plan` sees the plan before the first call, so a progress bar can size itself."""
    started = time.monotonic()
    p = plan(s)
    if on_plan is not None:
        on_plan(p)
    out_path = _out_path(p.ws, s)
    if out_path.exists() and not s.force and not dry_out:
        raise OutputExists(f"{out_path} already exists", hint="pass --force to replace it, or --out for another path")
    config = llm_config(p.ws, s)
    if extractor is None:
        from agent.llm import LLMExtractor  # lazy: imports openai + instructor

        extractor = LLMExtractor(config)
    results = extractor.extract_all(p.requests, on_result)
    failed = [r for r in results if r.extraction is None]
    if results and len(failed) == len(results):
        # A briefing built from nothing would read as "a quiet evening" and become tomorrow's
        # baseline: refuse, and say why, instead of writing it.
        raise LLMError(
            f"every extraction failed ({len(failed)} of {len(results)}); nothing was written. "
            f"First: {failed[0].record.doc_path}: {failed[0].record.error}",
            hint="fix the endpoint or the cassettes and run again",
        )
    doc_results = _doc_results(p, results)
    records = [r.record for r in results]
    footer = (
        f"本报告由 predigest 自动生成 · {s.date} · prompt {p.template.stamp} · model {config.model} · "
        f"{len(p.sources)} 份来源 · {len(records)} 次调用"
    )
    limits = Limits(**p.ws.config.limits.model_dump())
    baselines = [d for d in p.docs if d.kind == "baseline" and d.read]
    composed = compose(
        doc_results,
        p.registry,
        baselines,
        topic=s.topic,
        date=s.date,
        window=str(p.window),
        limits=limits,
        footer=footer,
    )
    markdown = render(composed.briefing)
    json_path = out_path.with_suffix(".json")
    calls_path = out_path.with_suffix(".calls.jsonl")
    if not dry_out:
        payload = {
            "briefing": composed.briefing.model_dump(mode="json"),
            "prompt": str(p.template.stamp),
            "model": config.model,
            "findings": [asdict(f) for f in composed.findings],
        }
        _write_atomic(out_path, markdown, s.force)
        _write_atomic(json_path, json.dumps(payload, ensure_ascii=False, indent=2) + "\n", True)
        _write_atomic(calls_path, "".join(json.dumps(asdict(r), ensure_ascii=False) + "\n" for r in records), True)
    return RunReport(
        composed,
        markdown,
        records,
        out_path,
        json_path,
        calls_path,
        time.monotonic() - started,
        backend=resolve_backend(config),
        plan=p,
    )


def _doc_results(p: Plan, results: list[ExtractionResult]) -> list[DocResult]:
    by_doc: dict[str, list[ExtractionResult]] = {}
    for r in results:
        by_doc.setdefault(r.request.doc_path, []).append(r)
    out = []
    for doc in p.sources:
        parts = sorted(by_doc.get(doc.path, []), key=lambda r: r.request.chunk)
        failed = [r for r in parts if r.extraction is None]
        if not parts or failed:
            why = failed[0].record.error if failed else "no extraction result"
            out.append(DocResult(doc, None, f"extraction failed: {why}"))
        else:
            out.append(DocResult(doc, merge_chunks([r.extraction for r in parts if r.extraction])))
    out += [DocResult(doc, None, doc.reason) for doc in unreadable(p.docs)]
    return out


def _out_path(ws: Workspace, s: Settings) -> Path:
    """`--out x.md` is the file; any other `--out` is a folder (existing or not) to write into."""
    name = f"{s.date.isoformat()}-{s.topic}-e1prep.md"
    if s.out is None:
        return ws.own_inbox() / name
    out = Path(s.out)
    return out if out.suffix == ".md" else out / name


def _write_atomic(path: Path, text: str, force: bool) -> None:
    """Write to a temporary file beside the target, then rename: a reader never sees half a
    briefing, and an interrupted run leaves the old file as it was."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        if force:
            os.replace(tmp, path)
        else:
            os.link(tmp, path)  # fails if the target appeared meanwhile: never a silent overwrite
            os.unlink(tmp)
    except FileExistsError:
        os.unlink(tmp)
        raise OutputExists(f"{path} appeared while the run was writing", hint="pass --force to replace it") from None
    except OSError as e:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise PredigestError(f"cannot write {path}: {e}", hint="check the folder exists and is writable") from e


__all__ = [
    "Plan",
    "RunReport",
    "Settings",
    "add_reference",
    "llm_config",
    "plan",
    "rekey",
    "replace",
    "requests_for",
    "run",
    "settings_from",
]
