"""The core's plans: a workload (`workload.py`) sized on each GPU (`sizing.py`), priced through the quote's price table
into ranked plans (`recommendation.py`), and buying against renting (`tco.py`). Pure.
"""
