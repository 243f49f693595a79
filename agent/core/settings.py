"""The one settings model: every setting is a field here, with its default, its constraint and its
help text, and nowhere else.

Precedence is flags > environment > `predigest.toml` > defaults. The file is validated into these
models; the environment and the flags are applied on top with `updated()`, which validates the
result (pydantic's `model_copy(update=…)` does not), so a flag of `0` is a value, not "unset", and
an impossible value is the same one-line error wherever it came from.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic_core import PydanticCustomError

from agent.core.errors import PredigestError, where

Mode = Literal["tools", "json_schema"]
Backend = Literal["auto", "live", "record", "replay", "offline"]  # offline: agent.extract.offline.extractor, no model
EffectiveBackend = Literal["live", "record", "replay", "offline"]
Extraction = Literal["per-topic", "shared"]  # several topics: a request per document and topic, or one per document


def default_cache_dir() -> Path:
    """The user's cache dir, resolved when settings are built (never at import time)."""
    import platformdirs  # here: only a settings object with no cache folder given needs it

    return Path(platformdirs.user_cache_dir("predigest")) / "llm"


class _Frozen(BaseModel):
    # defer_build: a model's validator is built on its first use, not on import, so a command
    # pays only for the models it validates (`parse` none of these, `inbox` not `Settings`)
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True, defer_build=True)


_M = TypeVar("_M", bound=BaseModel)


def updated(model: _M, changes: Mapping[str, Any]) -> _M:
    """`model` with `changes` applied and validated: the constraints of the model are the only checks."""
    if not changes:
        return model
    data = {name: getattr(model, name) for name in type(model).model_fields}
    try:
        return type(model).model_validate({**data, **changes})
    except ValidationError as e:
        first = e.errors()[0]
        key = where(first)  # the message also shows the value given, which first_problem leaves out
        raise PredigestError(
            f"setting {key} = {first.get('input')!r}: {first['msg']}",
            hint="fix the flag (--" + key.replace("_", "-") + "), the environment variable or [llm] in predigest.toml",
        ) from None


def _finite_non_negative(x: object) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x >= 0


class LLMSettings(_Frozen):
    """How to reach the model and how far to go before giving up (`[llm]` in predigest.toml).

    `api_key` never comes from the file and is left out of `repr` and `model_dump()`, so the
    settings can be logged or stamped on a run record without leaking the key."""

    base_url: str = Field(default="https://api.openai.com/v1", description="OpenAI-compatible endpoint.")
    api_key: str = Field(default="", repr=False, exclude=True, description="From OPENAI_API_KEY only.")
    model: str = Field(default="gpt-4o-mini", description="Model name.")
    mode: Mode = Field(default="tools", description="Structured output mode: tools or json_schema.")
    backend: Backend = Field(
        default="auto",
        description="auto (live with a key; without one replay, or offline when no cassette answers the evening), "
        "live, record, replay or offline (no model: the documents' own structure).",
    )
    cassette_dir: Path = Field(
        default=Path("cassettes"),
        validation_alias=AliasChoices("cassette_dir", "cassettes"),
        description="Cassette folder (relative to the workspace in predigest.toml); the file may name a list "
        "of folders, one per topic's set: replay reads them all, record writes into the first.",
    )
    more_cassettes: tuple[Path, ...] = Field(
        default=(), description="The folders after the first of a `cassettes = [...]` list in predigest.toml."
    )
    cache_dir: Path | None = Field(
        default_factory=default_cache_dir, description="Response cache folder; none disables the cache."
    )
    concurrency: int = Field(default=4, ge=1, le=64, description="Calls in flight at once.")
    timeout_s: float = Field(default=120.0, gt=0, description="Seconds per HTTP attempt.")
    max_attempts: int = Field(default=5, ge=1, description="HTTP attempts per exchange, retries included.")
    max_total_s: float = Field(default=300.0, gt=0, description="Wall-clock bound on one exchange's attempts.")
    backoff_initial_s: float = Field(default=1.0, ge=0, description="First backoff; doubles per attempt, jittered.")
    backoff_max_s: float = Field(default=30.0, ge=0, description="Cap on one backoff (Retry-After is honoured).")
    max_validation_retries: int = Field(default=2, ge=0, description="Re-asks after a schema-invalid answer.")
    max_calls: int | None = Field(default=None, ge=0, description="Stop after this many requests (0: none).")
    max_cost_usd: float | None = Field(default=None, ge=0, description="Stop after this much spend in USD (0: none).")
    chunk_tokens: int = Field(default=6000, ge=500, description="Estimated tokens per call before a document is split.")
    max_parts: int = Field(default=12, ge=1, description="Calls one document may take; the rest is reported unread.")
    prices: dict[str, tuple[float, float] | tuple[float, float, float]] = Field(
        default_factory=dict,
        description="model -> (USD per 1M input tokens, USD per 1M output tokens[, USD per 1M cached input tokens]); "
        "without the third, a cached input token costs what any input token costs.",
    )
    extraction: Extraction = Field(
        default="per-topic",
        description="With several topics: per-topic (one request per document and topic) or shared "
        "(one request per document carrying every topic).",
    )
    compose: bool = Field(
        default=True,
        description="Ask the model to compose each topic's evening (one call per topic and evening, checked by "
        "the rules); false: the rules' assembly (the floor a failed or missing answer also falls back to).",
    )
    temperature: float = Field(default=0.0, ge=0, le=2, description="Sampling temperature.")
    replace_reference: bool = Field(default=False, description="Let `record` write over reference cassettes.")
    allow_stale: bool = Field(
        default=False,
        description="Replay: answer a request no cassette matches with the same document and part's answer "
        "recorded under another prompt (reported as stale).",
    )

    @field_validator("prices", mode="before")
    @classmethod
    def _plain_prices(cls, v: object) -> object:
        """Each price is two or three finite numbers ≥ 0: a negative, NaN or infinite price makes
        every cost meaningless and a `--max-cost` budget that never admits a call (it waited for
        ever). Checked here so the message names both accepted forms, not pydantic's tuple rules."""
        if not isinstance(v, Mapping):
            return v
        for model, price in v.items():
            numbers = isinstance(price, (list, tuple)) and 2 <= len(price) <= 3
            if not numbers or not all(_finite_non_negative(x) for x in price):
                raise PydanticCustomError(
                    "price",
                    f"the price of {model!r} is {price!r}: give [input, output] or [input, output, cached input], "
                    "USD per 1M tokens, each a finite number ≥ 0",
                )
        return v

    @model_validator(mode="before")
    @classmethod
    def _cassette_list(cls, data: Any) -> Any:
        """`cassettes = ["a", "b"]` in predigest.toml: a workspace whose topics' answers live in one
        set per topic names them all in one setting; the first is where `record` writes."""
        if not isinstance(data, Mapping):
            return data
        key = next((k for k in ("cassettes", "cassette_dir") if isinstance(data.get(k), list | tuple)), None)
        if key is None:
            return data
        folders = list(data[key])
        if not folders:
            raise ValueError("cassettes = [] names no folder: name at least one, or leave the setting out")
        return {**data, key: folders[0], "more_cassettes": tuple(folders[1:])}

    @property
    def cassette_dirs(self) -> tuple[Path, ...]:
        """Every folder replay reads answers from, the one `record` writes into first."""
        return (self.cassette_dir, *self.more_cassettes)

    @property
    def cassettes_gone(self) -> Path | None:
        """The first cassette folder, when none of them exists: replay has nothing to read. One folder
        of several gone (another topic's set, in a copied workspace) is not this: its requests miss."""
        return None if any(d.is_dir() for d in self.cassette_dirs) else self.cassette_dirs[0]

    def with_(self, **changes: Any) -> LLMSettings:
        return updated(self, changes)

    def price(self) -> tuple[float, float] | tuple[float, float, float] | None:
        """USD per 1M (input, output[, cached input]) tokens for the configured model."""
        return self.prices.get(self.model)

    def cost_usd(self, input_tokens: int, output_tokens: int, cached_tokens: int = 0) -> float:
        """What the tokens cost at the configured price; 0.0 when the model has no price.
        `cached_tokens` are the part of `input_tokens` the provider served from its prompt cache."""
        price = self.price()
        if price is None:
            return 0.0
        cached = min(max(cached_tokens, 0), input_tokens)
        cached_price = price[2] if len(price) == 3 else price[0]
        return ((input_tokens - cached) * price[0] + cached * cached_price + output_tokens * price[1]) / 1_000_000

    @property
    def effective_backend(self) -> EffectiveBackend:
        """`auto` means live when a key is set, replay otherwise: CI without a key never calls out."""
        if self.backend == "auto":
            return "live" if self.api_key else "replay"
        return self.backend

    def public_dict(self) -> dict[str, object]:
        """The settings as plain values for run records and `--debug` output, without the key."""
        return {
            **self.model_dump(mode="json"),
            "api_key": "set" if self.api_key else "",
            "effective_backend": self.effective_backend,
        }


class WorkspaceSection(_Frozen):
    timezone: str = "Asia/Shanghai"
    window_end: str = Field(default="22:00", description="End of the evening window, HH:MM.")
    agent: str = Field(default="tom", description="Our own inbox folder: briefings are written there.")
    inbox_dir: str = "inbox"
    paper_cards_dir: str = "paper_cards"
    queue_dir: str = "work-queue"
    living_dir: str = "living"

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, v: str) -> str:
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

        try:
            ZoneInfo(v)
        except (ZoneInfoNotFoundError, ValueError) as e:
            raise ValueError(f"unknown timezone {v!r} (use an IANA name like 'Asia/Shanghai')") from e
        return v

    @field_validator("window_end")
    @classmethod
    def _clock_time(cls, v: str) -> str:
        try:
            dt.time.fromisoformat(v)
        except ValueError:
            raise ValueError(f"{v!r} is not a time of day HH:MM (e.g. '22:00')") from None
        if len(v) != 5:
            raise ValueError(f"{v!r} is not a time of day HH:MM (e.g. '22:00')")
        return v


class LimitsSection(_Frozen):
    min_increments: int = Field(default=3, ge=0)
    max_increments: int = Field(default=8, ge=1)
    min_stars: int = Field(default=4, ge=1, le=5, description="Stars a claim needs to be an increment.")
    secondary_min_stars: int = Field(default=3, ge=1, le=5, description="Stars for a secondary anchor.")
    max_secondary: int = Field(
        default=8, ge=0, description="Secondary anchors (四, 六, the patch) an evening holds; the rest are findings."
    )
    max_continued: int = Field(
        default=20, ge=0, description="Earlier papers 四 lists: those named tonight, then the newest."
    )
    max_to_verify: int = Field(default=6, ge=0, description="Items block 三 may hold; the rest are findings.")
    carry_evenings: int = Field(
        default=3, ge=1, description="Evenings an open to-verify item is carried before it is dropped unverified."
    )


class TopicSection(_Frozen):
    living: str
    profile: str = ""
    adjacent: str = ""


MAX_TOPIC_CHARS = 64  # a briefing's file name is DATE-TOPIC-e1prep.calls.jsonl: well under any file system's 255


class WorkspaceConfig(_Frozen):
    workspace: WorkspaceSection = Field(default_factory=WorkspaceSection)  # a factory: not validated on import
    llm: LLMSettings = Field(default_factory=LLMSettings)
    limits: LimitsSection = Field(default_factory=LimitsSection)
    topics: dict[str, TopicSection] = Field(default_factory=dict)

    @field_validator("topics")
    @classmethod
    def _plain_topic_names(cls, v: dict[str, TopicSection]) -> dict[str, TopicSection]:
        """A topic name is part of file names and of what is printed: '../x' wrote the briefing
        outside --out, a newline or a right-to-left mark was printed raw, 300 characters paid for
        every call and then failed to be a file name. Plain words only, the first odd character
        shown escaped."""
        for name in v:
            odd = next((c for c in name if not (c.isalnum() or c in "-_")), None)
            if odd is not None or not name or len(name) > MAX_TOPIC_CHARS:
                why = f"has {odd!r}" if odd is not None else f"is {len(name)} characters long"
                shown = repr(name[:MAX_TOPIC_CHARS]) + ("…" if len(name) > MAX_TOPIC_CHARS else "")
                raise PydanticCustomError(
                    "topic_name",
                    f"the topic name {shown} {why}: a topic is named with letters, digits, '-' and '_' "
                    f"(1 to {MAX_TOPIC_CHARS} of them), e.g. [topics.inference]",
                )
        return v

    @field_validator("llm", mode="before")
    @classmethod
    def _no_key_in_files(cls, v: object) -> object:
        if isinstance(v, Mapping) and "api_key" in v:
            raise ValueError("api_key does not belong in a file: set OPENAI_API_KEY instead")
        return v


# The evenings the window arithmetic can place: far enough from the calendar's ends that a window
# (a day wide) and "the evening after" stay representable.
FIRST_DATE = dt.date(1970, 1, 1)
LAST_DATE = dt.date(9998, 12, 31)


def evening_date(value: str | dt.date, flag: str = "--date") -> dt.date:
    """The one date parser for evenings given by a user (flags, case files)."""
    try:
        day = value if isinstance(value, dt.date) else dt.date.fromisoformat(str(value))
    except ValueError:
        raise PredigestError(f"{flag} {value!r} is not a date", hint="use YYYY-MM-DD, e.g. 2026-09-22") from None
    if not FIRST_DATE <= day <= LAST_DATE:
        raise PredigestError(
            f"{flag} {day} is outside the evenings predigest can place ({FIRST_DATE} … {LAST_DATE})",
            hint="use the date of a real evening, e.g. 2026-09-22",
        )
    return day


class Settings(_Frozen):
    """One run's settings: what to read, where to write, and the `[llm]` values given on the
    command line or in the environment (applied over predigest.toml by `resolve_llm`)."""

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)

    workspace: Path
    topic: str
    date: dt.date
    out: Path | None = Field(default=None, description="File or folder for the briefing (default: own inbox).")
    force: bool = Field(default=False, description="Replace an existing briefing.")
    allow_partial: bool = Field(default=False, description="Write a partial briefing into the workspace inbox.")
    prompt_file: Path | None = Field(default=None, description="Prompt template file (default: prompts/extract.md).")
    llm: dict[str, Any] = Field(default_factory=dict, description="[llm] values from flags and environment.")

    @model_validator(mode="before")
    @classmethod
    def _route_llm_fields(cls, data: Any) -> Any:
        """`Settings(…, backend="replay", max_calls=0)` reads like the command line: keywords that
        name an `[llm]` field go into `llm` (`no_cache=True` is `cache_dir=None`)."""
        if not isinstance(data, Mapping):
            return data
        data = dict(data)
        given = dict(data.pop("llm", None) or {})
        routed = {n: data.pop(n) for n in list(data) if n in LLMSettings.model_fields or n in ("cassettes", "no_cache")}
        return {**data, "llm": {**given, **llm_overrides(routed, {})}}


ENV_LLM = {
    "OPENAI_API_KEY": "api_key",
    "OPENAI_BASE_URL": "base_url",
    "PREDIGEST_MODEL": "model",
    "PREDIGEST_CACHE_DIR": "cache_dir",
}


def llm_overrides(flags: Mapping[str, Any], env: Mapping[str, str]) -> dict[str, Any]:
    """The environment's values under the flags actually given: None means "not given", 0 is a
    value, and `no_cache=True` is `cache_dir=None`. The one place a flag becomes an `[llm]` value."""
    values: dict[str, Any] = {field: env[var] for var, field in ENV_LLM.items() if env.get(var)}
    values.update({k: v for k, v in flags.items() if v is not None and k != "no_cache"})
    if flags.get("no_cache"):
        values["cache_dir"] = None
    return values


def resolve_llm(base: LLMSettings, overrides: Mapping[str, Any], root: Path) -> LLMSettings:
    """predigest.toml's `[llm]` with the overrides applied; a relative cassette folder from the file
    is relative to the workspace (flags arrive already absolute from the CLI). A `--cassettes` flag
    replaces the file's whole list: the user named the one set to read."""
    s = base.model_copy(
        update={
            "cassette_dir": (root / base.cassette_dir).resolve(),
            "more_cassettes": tuple((root / p).resolve() for p in base.more_cassettes),
        }
    )
    if "cassette_dir" in overrides or "cassettes" in overrides:
        overrides = {**overrides, "more_cassettes": ()}
    return updated(s, overrides)
