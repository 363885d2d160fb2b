"""Measurement: row quality, figures with named formulas, and their uncertainty.

Every figure and every flag here is re-derived from a run's raw rows (token ids and
their arrival times); nothing is read back from a stored summary. docs/measurement.md
states each rule, formula and threshold.
"""
