"""The foundation every stage stands on: errors, settings, the briefing's words, text and arXiv IDs."""
