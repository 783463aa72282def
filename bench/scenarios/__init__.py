"""The eight measurements of `python -m bench`, one module each. Each returns `Row`s for the
table plus details for results.json.

orlgen and TRL run against the same server in the same run, in alternating pairs (the order
flips every pair); a row reports the median of each side and the ratio of medians (orlgen / TRL).
"""
