"""Where the test data lives, resolved from this file so tests run from any directory."""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SEED = ROOT.parent / "shared" / "seeds" / "2026-09-22-inference-e1prep.md"
WORLD = ROOT / "examples" / "world"
