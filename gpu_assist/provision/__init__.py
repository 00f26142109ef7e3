"""Cloud provisioning adapters (AWS today): the only code that starts or stops machines."""
