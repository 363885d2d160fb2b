"""The bench queue: reproductions and A/B jobs on the team's PostgreSQL, taken by a
worker on each host whose hardware matches (docs/fleet.md).

The queue itself is procrastinate's (leases through worker heartbeats, `SKIP LOCKED`
fetches, retries); this package adds what a job means here: its target, the hardware
it needs, the phase it reached, and the records and attestations it sealed.
"""
