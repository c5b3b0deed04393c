"""Layer 2, knowledge: the YAML tables of analyzer/data/ (codes, APIs, remedy rules, neighbour
families, envelopes, link facts), validated with located errors and compiled once (`RuleSet`).
"""
