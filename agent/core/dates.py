"""Dates as the briefings write them: 'M-D', written by `month_day` and read back by `read_day`."""

from __future__ import annotations

import datetime as dt
import re

MONTH_DAY = r"\d{1,2}-\d{1,2}"  # 'M-D' inside a larger pattern; capture it whole and hand it to `read_day`
_ALONE = re.compile(rf"\s*({MONTH_DAY})\s*")
# How far past the evening an 'M-D' may still name a day of this year's calendar. Briefings and
# living documents name days already past; a later day only turns up when an earlier evening is
# re-run against documents written since, and such a re-run goes back weeks, not seasons. A wider
# lead would read an entry from last spring as next spring's.
LEAD = dt.timedelta(days=31)


def month_day(d: dt.date) -> str:
    """'9-22': month and day without zero padding, as the briefings name an evening. Built from
    the numbers because strftime's unpadded `%-m` is glibc's, not Python's."""
    return f"{d.month}-{d.day}"


def read_day(text: str, ref: dt.date) -> dt.date | None:
    """'9-18' (spaces around it allowed) read on the evening `ref`: the latest such day at most
    `LEAD` after `ref`. So '12-30' read on 1-2 is last year's, '9-21' read on 9-20 (a living
    document written after that evening) is tomorrow, '3-15' read on 9-22 is this March, and
    '2-29' is the last Feb 29. None for text that is not 'M-D', or names no day ('13-1')."""
    m = _ALONE.fullmatch(text)
    if m is None:
        return None
    month, day = (int(n) for n in m[1].split("-"))
    days: list[dt.date] = []
    for year in range(ref.year - 4, ref.year + 2):  # every day of the calendar comes round within four years
        try:
            days.append(dt.date(year, month, day))
        except ValueError:
            continue
    return max((d for d in days if d - ref <= LEAD), default=None)
