"""The workspace's own settings: `predigest.toml`, validated, with the topic looked up.

The file is the user's data, so every mistake in it gets a message naming the key and the file.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from agent.errors import WorkspaceError

CONFIG_NAME = "predigest.toml"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class WorkspaceSection(_Strict):
    timezone: str = "Asia/Shanghai"
    window_end: str = Field(default="22:00", pattern=r"^\d{2}:\d{2}$")
    agent: str = Field(default="tom", description="Our own inbox folder: briefings are written there.")
    inbox_dir: str = "inbox"
    paper_cards_dir: str = "paper_cards"
    queue_dir: str = "work-queue"
    living_dir: str = "living"

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, v: str) -> str:
        try:
            ZoneInfo(v)
        except (ZoneInfoNotFoundError, ValueError) as e:
            raise ValueError(f"unknown timezone {v!r} (use an IANA name like 'Asia/Shanghai')") from e
        return v


class LLMSection(_Strict):
    model: str = "gpt-4o-mini"
    mode: str = Field(default="tools", pattern="^(tools|json_schema)$")
    concurrency: int = Field(default=4, ge=1, le=64)
    timeout_s: float = Field(default=120.0, gt=0)
    max_attempts: int = Field(default=5, ge=1)
    max_validation_retries: int = Field(default=2, ge=0)
    max_calls: int | None = Field(default=None, ge=1)
    max_cost_usd: float | None = Field(default=None, gt=0)
    cassettes: str = Field(default="cassettes", description="Cassette folder, relative to the workspace.")
    chunk_tokens: int = Field(default=6000, ge=500, description="Budget per call before a document is split.")
    prices: dict[str, tuple[float, float]] = Field(default_factory=dict, description="model → (USD/1M in, USD/1M out)")


class LimitsSection(_Strict):
    min_increments: int = Field(default=3, ge=0)
    max_increments: int = Field(default=8, ge=1)
    min_stars: int = Field(default=4, ge=1, le=5, description="Stars a claim needs to be an increment.")
    secondary_min_stars: int = Field(default=3, ge=1, le=5, description="Stars for a secondary anchor.")
    max_to_verify: int = Field(default=6, ge=0, description="Items block 三 may hold; the rest are findings.")
    carry_evenings: int = Field(
        default=3, ge=1, description="Evenings an open to-verify item is carried before it is dropped unverified."
    )


class TopicSection(_Strict):
    living: str
    profile: str = ""
    adjacent: str = ""


class WorkspaceConfig(_Strict):
    workspace: WorkspaceSection = WorkspaceSection()
    llm: LLMSection = LLMSection()
    limits: LimitsSection = LimitsSection()
    topics: dict[str, TopicSection] = Field(default_factory=dict)


class Workspace(BaseModel):
    """A loaded workspace: its root and its validated configuration."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    root: Path
    config: WorkspaceConfig

    @property
    def tz(self) -> ZoneInfo:
        return ZoneInfo(self.config.workspace.timezone)

    def topic(self, name: str) -> TopicSection:
        try:
            return self.config.topics[name]
        except KeyError:
            known = ", ".join(sorted(self.config.topics)) or "none"
            raise WorkspaceError(
                f"topic {name!r} is not in {self.root / CONFIG_NAME} (known: {known})",
                hint=f'add a [topics.{name}] table with at least `living = "living/{name}.md"`',
            ) from None

    def living_path(self, topic: str) -> Path:
        return self.root / self.topic(topic).living

    def inbox(self) -> Path:
        return self.root / self.config.workspace.inbox_dir

    def own_inbox(self) -> Path:
        return self.inbox() / self.config.workspace.agent


def load_workspace(root: Path) -> Workspace:
    root = Path(root)
    if not root.is_dir():
        raise WorkspaceError(f"workspace {root} does not exist", hint="pass the folder that holds predigest.toml")
    cfg_path = root / CONFIG_NAME
    if not cfg_path.is_file():
        raise WorkspaceError(f"{cfg_path} is missing", hint="create it; see examples/world/predigest.toml")
    try:
        data = tomllib.loads(cfg_path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise WorkspaceError(f"{cfg_path} is not valid TOML: {e}", hint="fix the line it names") from e
    try:
        config = WorkspaceConfig.model_validate(data)
    except ValidationError as e:
        first = e.errors()[0]
        key = ".".join(str(p) for p in first["loc"])
        raise WorkspaceError(f"{cfg_path}: {key}: {first['msg']}", hint="see examples/world/predigest.toml") from e
    return Workspace(root=root.resolve(), config=config)
