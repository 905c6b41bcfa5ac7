"""Measurement: the ready-probe listener, memory, host facts and the host sampler."""
