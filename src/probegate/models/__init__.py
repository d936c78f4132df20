"""The data probegate moves around: probes, transcripts, verdicts, findings, scan reports."""
