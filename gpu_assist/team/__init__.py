"""The team's money and machines over time: spend, budgets, standing, commitments, idle and interrupted instances,
sharing advice. Pure functions of the store's records and `now`, so every face says the same figures.
"""
