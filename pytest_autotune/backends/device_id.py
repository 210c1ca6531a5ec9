"""A device's id: the name of its cache folder, shared by every machine of its class.

One rule for every client, so CPU and GPU folders read alike: the kind, then the model name
in lower case with every run of other characters made one dash, then what else the class
depends on (a CPU's thread count).
"""

from __future__ import annotations

import re


def device_id(kind: str, model: str, suffix: str = "") -> str:
    """`<kind>-<slug of model>[suffix]`, e.g. `cuda-nvidia-h200`; "unknown" for an empty slug."""
    slug = re.sub(r"[^a-z0-9]+", "-", model.lower()).strip("-")
    return f"{kind}-{slug or 'unknown'}{suffix}"
