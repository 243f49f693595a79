"""Dates as the briefings write them."""

from __future__ import annotations

import datetime as dt


def month_day(d: dt.date) -> str:
    """'9-22': month and day without zero padding, as the briefings name an evening. Built from
    the numbers because strftime's unpadded `%-m` is glibc's, not Python's."""
    return f"{d.month}-{d.day}"
