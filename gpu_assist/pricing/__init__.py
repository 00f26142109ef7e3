"""The core's prices for a question: the quote query (`query.py`, parsed from a person's words), every offer
priced for the job (`price_table.py`, `quote.py`), what the job costs beside its GPUs (`job_data.py`, `job_costs.py`)
and the comparison a buyer reads (`compare.py`). Pure: data in, data out; no I/O, no clock but the one passed in.
"""
