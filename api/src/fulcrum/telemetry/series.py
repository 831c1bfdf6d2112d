"""What a statistics series is made of: its key, its metrics and a point."""

from __future__ import annotations

from typing import TypeAlias

METRICS = ("cps", "activeconns", "inactconns", "inbps", "outbps", "inpps", "outpps")

# (service, backend endpoint), or (service, None) for the service's own series.
Key: TypeAlias = tuple[str, str | None]
# (UNIX time, one value per metric)
Point: TypeAlias = tuple[float, tuple[float, ...]]
