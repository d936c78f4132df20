"""Real loopback servers the tests start: fake agents and a fault injector.

Each binds 127.0.0.1 on a free port, serves from daemon threads, and stops itself when its
``with`` block ends, so a failing test never leaves a listener behind.
"""
