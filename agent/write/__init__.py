"""Write: the briefing as Markdown, its page, and the trace that ties each line to its sources."""
