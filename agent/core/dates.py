"""Dates as the briefings write them: 'M-D', written by `month_day` and read back by `read_day`."""

from __future__ import annotations

import datetime as dt
import re

MONTH_DAY = r"\d{1,2}-\d{1,2}"  # 'M-D' inside a larger pattern; capture it whole and hand it to `read_day`
_MONTH_DAY = re.compile(r"\s*(\d{1,2})-(\d{1,2})\s*")
# How far past the evening an 'M-D' may still name a day of this year's calendar. Briefings and
# living documents name days already past; a later day only turns up when an earlier evening is
# re-run against documents written since, and such a re-run goes back weeks, not seasons. A wider
# lead would read an entry from last spring as next spring's.
LEAD = dt.timedelta(days=31)


def month_day(d: dt.date) -> str:
    """'9-22': month and day without zero padding, as the briefings name an evening. Built from
    the numbers because strftime's unpadded `%-m` is glibc's, not Python's."""
    return f"{d.month}-{d.day}"


def read_month_day(text: str) -> tuple[int, int] | None:
    """(9, 22) from '9-22' (spaces around it allowed); None for anything else. The numbers are
    not checked against a calendar: `named_day` knows which years have them."""
    m = _MONTH_DAY.fullmatch(text)
    return (int(m[1]), int(m[2])) if m else None


def named_day(ref: dt.date, month: int, day: int) -> dt.date | None:
    """The day a briefing read on the evening `ref` means by month and day: the latest such day at
    most `LEAD` after `ref`. So '12-30' read on 1-2 is last year's, '9-21' read on 9-20 (a living
    document written after that evening) is tomorrow, and '3-15' read on 9-22 is this March.
    None when no year from last year to next has that day ('2-29' read in 2026, '13-1')."""
    days: list[dt.date] = []
    for year in (ref.year - 1, ref.year, ref.year + 1):
        try:
            days.append(dt.date(year, month, day))
        except ValueError:
            continue
    return max((d for d in days if d <= ref + LEAD), default=None)


def read_day(text: str, ref: dt.date) -> dt.date | None:
    """'9-18' read on the evening `ref` as `named_day` places it; None if unreadable."""
    md = read_month_day(text)
    return named_day(ref, *md) if md else None
