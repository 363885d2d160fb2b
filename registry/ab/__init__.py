"""`registry ab A B`: a matched, interleaved A/B of two recipes or records: the axes they
differ on, an ABBA order of full engine starts, each sealed as a record, and the boost
with an interval over starts (docs/measurement.md)."""
