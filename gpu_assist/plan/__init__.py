"""The core's plans: a workload (`workload.py`, a named model's shape from `models.py`) sized on each GPU (`sizing/`:
memory, compute, layout), priced through the quote's price table into ranked plans (`recommendation.py`), and
buying against renting (`tco.py`). Pure.
"""
