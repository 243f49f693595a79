"""predigest: an evening's research inbox in, one grounded pre-digest briefing per topic out."""

__version__ = "0.1.0"
