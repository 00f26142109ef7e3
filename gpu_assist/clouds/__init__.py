"""Adapters to the clouds' SDKs: the AWS client (`aws.py`), the fleet's metrics and actual cost (`fleet.py`,
`cost_explorer.py`) and the provisioners that launch and stop instances (`launch/`). They implement the ports the
core declares (`lifecycle.ports`); nothing in the core imports them.
"""
