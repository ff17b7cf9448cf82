"""Words for amounts and dates that more than one layer reads.

Units of measure (``UNITS``: a unit word → its class and its factor to the class's base
unit, so ``30 s`` and ``30000 ms`` are one value) and month names (``MONTHS``: full and
abbreviated English names → 1–12). Plain data, general English; the lifecycle's signals
compare quantities with them, recall reads dates in questions, and
:mod:`engram.store.titles` tells a number a title is named by from a value it states.
"""

from __future__ import annotations

import calendar

#: Unit words → (class, factor to the base unit).
UNITS: dict[str, tuple[str, float]] = {
    **{u: ("time", 0.001) for u in ("ms", "msec", "millisecond", "milliseconds")},
    **{u: ("time", 1.0) for u in ("s", "sec", "secs", "second", "seconds")},
    **{u: ("time", 60.0) for u in ("m", "min", "mins", "minute", "minutes")},
    **{u: ("time", 3600.0) for u in ("h", "hr", "hrs", "hour", "hours")},
    **{u: ("time", 86400.0) for u in ("d", "day", "days")},
    **{u: ("time", 604800.0) for u in ("w", "wk", "week", "weeks")},
    **{u: ("size", 1.0) for u in ("b", "byte", "bytes")},
    **{u: ("size", 1e3) for u in ("kb", "kilobyte", "kilobytes")},
    **{u: ("size", 1024.0) for u in ("kib",)},
    **{u: ("size", 1e6) for u in ("mb", "megabyte", "megabytes")},
    **{u: ("size", 1024.0**2) for u in ("mib",)},
    **{u: ("size", 1e9) for u in ("gb", "gigabyte", "gigabytes")},
    **{u: ("size", 1024.0**3) for u in ("gib",)},
    **{u: ("size", 1e12) for u in ("tb", "terabyte", "terabytes")},
    **{u: ("size", 1024.0**4) for u in ("tib",)},
    **{u: ("money", 1.0) for u in ("usd", "dollar", "dollars", "eur", "euro", "euros", "gbp")},
    **{u: ("percent", 1.0) for u in ("%", "percent", "pct")},
    **{u: ("ratio", 1.0) for u in ("x",)},
    **{u: ("count", 1.0) for u in ("k",)},
}

#: English month names and their abbreviations, lower-case, to the month's number.
MONTHS: dict[str, int] = {name.lower(): i for i, name in enumerate(calendar.month_name) if name}
MONTHS |= {name.lower(): i for i, name in enumerate(calendar.month_abbr) if name}
