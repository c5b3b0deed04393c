"""Layer 4, detect: on candidate lines only, codes and their forms, record headers, the API
context, causes, link facts, fingerprints; `engine` runs it all over one stream and yields
findings.
"""
