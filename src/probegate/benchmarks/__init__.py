"""Probe sources written by others: external benchmarks probegate runs as probes.

A benchmark here brings its own probes (task pairs, each an attack with a conversation), its
own tools acting on its own environment (fresh for every attempt, handed to the engine as a
:class:`~probegate.targets.sandbox.Environments`), and its own check of each attempt, kept
beside probegate's verdict and never read into it (``Attempt.reference``). What probegate's
verdicts and the benchmark's checks agree on is the report's ``agreement`` section
(:mod:`probegate.benchmarks.agreement`; docs/agentdojo.md).

The benchmark's package is an optional extra, imported only when a scan asks for it.
"""
