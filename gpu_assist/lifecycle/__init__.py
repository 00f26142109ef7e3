"""The approval requests' lifecycle, the only path to a launch or a stop: what a request asks for (`specs.py`), its
state machine (`states.py`), who may decide (`identity.py`, `policy.py`), what it would buy (`preview.py`), the
decisions (`approvals.py`), the carrying out (`orchestration.py`) and the port every cloud implements (`ports.py`).
Core: it imports no cloud SDK; a cloud's provisioner is handed in.
"""
