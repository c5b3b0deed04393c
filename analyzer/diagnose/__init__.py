"""Layer 5, diagnose: the tally of findings into a summary, bursts and their leads, incidents and
their story, fleets, known errors.
"""
