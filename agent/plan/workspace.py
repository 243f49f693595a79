"""The workspace's own settings: `predigest.toml`, validated, with the topic looked up.

The file is the user's data, so every mistake in it gets a message naming the key and the file.
The sections themselves are defined once, in `agent.core.settings`.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Sequence
from pathlib import Path
from zoneinfo import ZoneInfo

from pydantic import BaseModel, ConfigDict, ValidationError

from agent.core.errors import PredigestError, WorkspaceError, first_problem, nearest, shown
from agent.core.settings import TopicSection, WorkspaceConfig

CONFIG_NAME = "predigest.toml"


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
            close = nearest(name, self.config.topics)
            raise WorkspaceError(
                f"topic {name!r} is not in {shown(self.root / CONFIG_NAME)} (known: {known})",
                hint=f"did you mean --topic {close}?"
                if close
                else f'add a [topics.{name}] table with at least `living = "living/{name}.md"`',
            ) from None

    def select(self, topics: Sequence[str], *, all_topics: bool) -> list[str]:
        """The topics a command is for: `--topic` as given (in order, each once; an unknown one
        is an error here, before anything is read), or every topic with `--all-topics`."""
        if all_topics and topics:
            raise PredigestError("--all-topics and --topic were both given", hint="pass one of them")
        if not topics and not all_topics:
            raise PredigestError("no topic given", hint="pass --topic NAME (once per topic), or --all-topics")
        names = list(dict.fromkeys(topics)) if topics else list(self.config.topics)
        if not names:
            raise WorkspaceError(f"{self.root / CONFIG_NAME} names no topic", hint="add a [topics.NAME] table")
        for name in names:
            self.topic(name)
        return names

    def set_by(self, key: str) -> str:
        """'[section] key in <file>': where a setting of this workspace was written, for messages."""
        section, _, name = key.rpartition(".")
        return f"[{section}] {name} in {shown(self.root / CONFIG_NAME)}"

    def missing_folders(self) -> list[str]:
        """The folders predigest.toml names under [workspace] that do not exist, each with the key
        that names it: said before any call rather than read as a workspace with nothing in it."""
        w = self.config.workspace
        keys = [k for k in ("paper_cards_dir", "queue_dir", "living_dir") if k in w.model_fields_set]  # inbox: ingest
        return [
            f"{shown(self.root / getattr(w, k))} (set by {self.set_by('workspace.' + k)})"
            for k in keys
            if not (self.root / getattr(w, k)).is_dir()
        ]

    def living_path(self, topic: str) -> Path:
        return self.root / self.topic(topic).living

    def living_rel(self, topic: str) -> str:
        """The living document's path as runs record it: relative to the workspace, with `..` when
        the user keeps it outside (`living = "../notes/inference.md"`, or an absolute path), so a
        record names the same file from either side. Lexical: a symbolic link is not followed."""
        return Path(os.path.relpath(self.living_path(topic), self.root)).as_posix()

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
        raise WorkspaceError(f"{cfg_path}: {first_problem(e)}", hint="see examples/world/predigest.toml") from e
    return Workspace(root=root.resolve(), config=config)
