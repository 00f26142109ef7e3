"""Names vulture (`make lint`) cannot see being used, each with who uses it: frameworks that call them by name,
and dataclass fields read through `asdict` (JSON answers, DataFrames). Lines are attribute reads of `_`, vulture's
whitelist form; nothing runs this file. functools.singledispatch registrations are ignored by decorator
(`ignore_decorators` in [tool.vulture], pyproject.toml), not listed here."""

# jupyter_server and JupyterLab find an extension by these module-level names (gpu_assist/jupyter/__init__.py)
_._jupyter_server_extension_points
_._jupyter_labextension_paths
_._load_jupyter_server_extension
_.__getattr__  # PEP 562: `from gpu_assist.jupyter import QuotePanel` loads the panel module on first use
_.assistant  # the notebook API docs/jupyter.md documents: `from gpu_assist.jupyter import assistant; assistant()`
_.__dir__  # PEP 562: a notebook's completion lists `gpu_assist.quote` and the rest before they are loaded
_.spend  # the notebook API `gpu_assist.spend(…)` (notebook.py), reached through the package's __getattr__
_.tco  # the notebook API `gpu_assist.tco(…)`, likewise
_.parse_request  # pricing.query_parser: a request's text alone → Query, which bench/quote_speed.py times and tests call
_.post  # tornado calls a handler's post() for POST (gpu_assist/jupyter/routes.py)

# Alembic reads a migration's revision identifiers and calls its upgrade()/downgrade() (gpu_assist/migrations/)
_.down_revision
_.branch_labels
_.depends_on
_.downgrade

# gunicorn calls BaseApplication.load_config() before it forks (slackbot/prefork.py)
_.load_config

# argparse reads a subparsers action's metavar for its usage line and errors (gpu_assist/cli/parser.py)
_.metavar

# Dataclass fields no code reads by name: JSON answers and DataFrames take them through asdict()/to_dict()
_.price_currency  # pricing.QuoteOption, in every option of `quote --format json`
_.effective_tflops  # plan.plans.Plan (this and the next two), in `recommend --format json` and the notebook's frame
_.gpus_per_instance
_.pareto
_.gpu_memory_used_avg_mib  # fleet.FleetInstance, in `util fleet --format json`
_.utilization_memory_pct  # nvml.GpuSample (this and the next four), in `util --format json`
_.pcie_tx_kib_s
_.pcie_rx_kib_s
_.nvlink_active_links
_.sample_cost_s
_.vendor  # gpus.GpuSpec: a column of catalogs/gpus.csv, part of the record library code gets

# Public API that only notebooks and tests call
_.averages  # nvml.Poller.averages(): per-GPU averages over a window (tests/unit/test_nvml.py)
_.cancel  # workers.Place.cancel(): give a reserved place back (tests/unit/test_slack_workers.py)
_.TERMINAL  # states.TERMINAL: the states no transition leaves (tests/reliability/test_faults.py)
_.NATIVE_PROVIDERS  # providers.NATIVE_PROVIDERS: the clouds with fakes of their own (launch conformance, smoke/)

# Set and never read: pricing.py is being rewritten on another branch, which decides whether to keep it (#21)
_.offers_considered

# offers.Offer fields read by name through getattr(offer, PRICE_COLUMN[model]) (price_table.py, pricing.py), and the
# catalog schema's source_detail, kept whole in every row (the DataFrame of Catalog.offers, `catalog status`)
_.spot_hourly
_.reserved_1y_hourly
_.reserved_3y_hourly
_.source_detail

# A defect only the hand-written seed catalogs carry (catalogs/aliyun.csv, tencent.csv), read by value (facts.Flag)
_.ARTICLE_SPEC_MISMATCH

# prometheus_client calls a registered collector's collect() at each scrape (gpu_assist/metrics.py)
_.collect

# The provider registry's declarations read by tests/unit/test_provider_registry.py: a launch route no provider
# takes yet, and the price sources the bundled catalog's rows are checked against
_.ENGINE
_.price_sources
