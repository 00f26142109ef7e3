"""gpu-assist: GPU prices, plans and utilization across clouds, for Slack, Jupyter and the terminal.

Importing this package is cheap and touches no driver or network: pandas, NVML and boto3
are imported where they are used.
"""

from __future__ import annotations

from .errors import CatalogError, GpuAssistError, ParseError, PolicyError, ProvisionError

__all__ = ["CatalogError", "GpuAssistError", "ParseError", "PolicyError", "ProvisionError", "quote"]
__version__ = "0.1.0"


def quote(text: str, **options):
    """`gpu_assist.quote("8xA100 72h")` → a pandas DataFrame of options, cheapest first.

    Options are those of `pricing.quote` (top, all_regions, include_flagged, verified_only, currency).
    """
    import datetime as dt

    from .catalog import load_catalog
    from .pricing import quote as price
    from .request import parse_request

    catalog = load_catalog()
    request = parse_request(text, catalog.gpus)
    return price(request, catalog, today=dt.date.today(), **options).to_frame()
