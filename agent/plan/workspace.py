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

from agent.core.errors import PredigestError, WorkspaceError, first_problem
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
            raise WorkspaceError(
                f"topic {name!r} is not in {self.root / CONFIG_NAME} (known: {known})",
                hint=f'add a [topics.{name}] table with at least `living = "living/{name}.md"`',
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
