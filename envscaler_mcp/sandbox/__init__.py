"""The validator sandbox: untrusted validator code runs in worker processes under the OS layers
(isolation/confine_validators.py), a zygote per worker and a fresh batch process per scenario.

Nothing is imported here, so the worker process (`python -m envscaler_mcp.sandbox.worker`) starts with the
standard library only.
"""
