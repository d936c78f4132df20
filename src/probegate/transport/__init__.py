"""What every layer that talks to the network shares: the request limiter and budget, usage,
transport errors, the one HTTP client and the one price function (docs/architecture.md).

Nothing here knows about probes, targets or verdicts; the engine, the targets and the judge sit
above it and spend from the same :class:`~probegate.transport.limiter.RequestLimiter`.
"""
