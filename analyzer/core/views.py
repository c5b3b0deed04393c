"""How a run's record shows itself in a notebook: a hook filled from above.

Layer: core (imports nothing). `run.analysis.Analysis._repr_html_` calls `html`; the page it
returns is the HTML writer's, two layers up, which no lower layer may import. The top-level
package (`analyzer/__init__.py`, imported before any of its modules) sets `html_view` to a
function that imports `writers.html` only when a notebook first renders a result.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

html_view: Callable[[Any], str] | None = None  # set by analyzer/__init__.py


def html(record: Any) -> str | None:
    """The HTML view of `record`, or None (the plain repr) when nothing set the hook."""
    return html_view(record) if html_view is not None else None
