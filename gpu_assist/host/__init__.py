"""Adapters to this machine: its GPUs through NVML (`nvml.py`), and on a spot instance its metadata service's
interruption warning (`spot_watch.py`). Importing them touches no driver and no network.
"""
