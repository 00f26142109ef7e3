"""Alembic migrations of the request store (`gpu_assist.store.schema` runs them; `gpu-assist db upgrade` from a shell).

They live inside the package so they ship in the wheel. Each revision spells its tables out instead of reading
`store.metadata`, so a later change to the models cannot silently rewrite history.
"""
