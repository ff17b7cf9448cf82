"""Reading a page's query parameters, with the same refusals as the rest of engram.

A bad number or page size in an address is :class:`~engram.errors.InvalidInput` naming
the parameter, rendered as the error page (400) like any other refused input; empty
values mean "not given", as an HTML form sends them.
"""

from __future__ import annotations

from collections.abc import Sequence

from starlette.requests import Request

from engram.errors import InvalidInput


class Params:
    def __init__(self, request: Request) -> None:
        self.query = request.query_params

    def text(self, name: str) -> str | None:
        value = self.query.get(name, "").strip()
        return value or None

    def many(self, name: str) -> list[str] | None:
        values = [v.strip() for v in self.query.getlist(name) if v.strip()]
        return values or None

    def flag(self, name: str) -> bool:
        return self.query.get(name, "") in ("1", "on", "true", "yes")

    def number(self, name: str) -> float | None:
        raw = self.text(name)
        if raw is None:
            return None
        try:
            return float(raw)
        except ValueError:
            raise InvalidInput(f"{name} must be a number, not {raw!r}.", field=name, hint="e.g. 0.5") from None

    def optional_integer(self, name: str, *, low: int | None = None, high: int | None = None) -> int | None:
        raw = self.text(name)
        if raw is None:
            return None
        try:
            value = int(raw)
        except ValueError:
            raise InvalidInput(f"{name} must be a whole number, not {raw!r}.", field=name, hint="e.g. 1") from None
        if (low is not None and value < low) or (high is not None and value > high):
            span = f"{low if low is not None else '…'} to {high if high is not None else '…'}"
            raise InvalidInput(f"{name} must be {span}, not {value}.", field=name, hint=f"Use {span}.")
        return value

    def integer(
        self, name: str, default: int, *, low: int | None = None, high: int | None = None,
        choices: Sequence[int] | None = None,
    ) -> int:
        value = self.optional_integer(name, low=low, high=high)
        if value is None:
            return default
        if choices is not None and value not in choices:
            raise InvalidInput(
                f"{name} must be one of {', '.join(map(str, choices))}, not {value}.", field=name,
                hint=f"Use {choices[0]}.",
            )
        return value
