"""Plan -> attempts -> concurrent execution -> verdicts; journal and resume."""
