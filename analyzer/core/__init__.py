"""Layer 0, core: the records that cross stages (findings, observations, input stats), errors,
times, progress, and the one serialisation of a finding. Imports nothing else of ddtriage.
"""
