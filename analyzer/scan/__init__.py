"""Layer 3, scan: big blocks, the literal prefilter, collector envelopes unwrapped, lines the
runtime cut rejoined, the clock of a stream. The per-line boundary a compiled core replaces.
"""
