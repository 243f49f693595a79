"""The foundation every stage stands on: errors, settings, the briefing's words, dates, text, product names
and arXiv IDs."""
