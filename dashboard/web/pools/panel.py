"""What the pool panel shows, from the status the pools process publishes in Redis:
per pool its queue, its reservations counting down and its latency histogram as bars
of an inline SVG (geometry worked out here, so the template only draws)."""
import time
from dataclasses import dataclass, field

from dashboard.clients.pools_transport import read_status
from dashboard.readmodel.read_model import window_text

CHART_WIDTH, CHART_HEIGHT = 640, 150     # the bars' area
CHART_TOP, CHART_LABELS = 16, 30          # room for the counts above, the buckets below


@dataclass
class Bar:
    x: float
    y: float
    width: float
    height: float
    label: str
    count: int

    @property
    def count_y(self) -> float:
        return self.y - 3


@dataclass
class PoolPanel:
    name: str
    status: dict
    reservations: list = field(default_factory=list)   # dicts: key, remaining, percent
    bars: list = field(default_factory=list)

    def _ms(self, name):
        seconds = self.status["metrics"]["latency"][name]
        return None if seconds is None else f"{seconds * 1000:g}"

    @property
    def window_text(self) -> str:
        return window_text(self.status["recent"]["window"]) if self.status.get("recent") else ""

    @property
    def p50_ms(self):
        return self._ms("p50")

    @property
    def p99_ms(self):
        return self._ms("p99")


@dataclass
class Panel:
    running: bool
    age: float | None = None      # seconds since the pools process published
    pools: list = field(default_factory=list)
    chart_width: int = CHART_WIDTH
    chart_height: int = CHART_TOP + CHART_HEIGHT + CHART_LABELS
    label_y: int = CHART_TOP + CHART_HEIGHT + 16


def _bucket_label(bound: float) -> str:
    return f"≤{bound * 1000:g} ms" if bound < 1 else f"≤{bound:g} s"


def histogram_bars(latency: dict) -> list:
    counts, bounds = latency["counts"], latency["bounds"]
    labels = [_bucket_label(b) for b in bounds] + [f">{bounds[-1]:g} s"]
    tallest = max(counts) or 1
    width = CHART_WIDTH / len(counts)
    bars = []
    for i, (count, label) in enumerate(zip(counts, labels)):
        height = CHART_HEIGHT * count / tallest
        bars.append(Bar(x=round(i * width + 2, 1), y=round(CHART_TOP + CHART_HEIGHT - height, 1),
                        width=round(width - 4, 1), height=round(height, 1), label=label,
                        count=count))
    return bars


def panel(now: float | None = None) -> Panel:
    published = read_status()
    if published is None:
        return Panel(running=False)
    now = time.time() if now is None else now
    pools = []
    for name, status in sorted(published["pools"].items()):
        ttl = status["reservation_ttl"]
        reservations = [{**r, "percent": round(100 * r["remaining"] / ttl, 1)}
                        for r in status["reservations"]]
        pools.append(PoolPanel(name, status, reservations,
                               histogram_bars(status["metrics"]["latency"])))
    return Panel(running=True, age=round(now - published["at"], 1), pools=pools)
