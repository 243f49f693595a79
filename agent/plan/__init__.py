"""Plan: what the evening reads, what is already known, where the briefing goes (before any call)."""
