"""Alerts that reach people: events sent by e-mail, webhook or syslog.

The events table is the outbox. A background dispatcher (`dispatcher.py`) reads, per channel,
the events after the channel's stored cursor, in their own short read transaction (so it sees
only committed events), sends them holding no database lock, then moves the cursor in a short
write. SQLite has one writer at a time, so event ids become visible in increasing order and a
cursor never skips an event committed later with a smaller id. A failed delivery leaves the
cursor where it was and is retried with back-off: nothing is lost across restarts.

Channels and rules are node-local, not replicated: each node sends what it saw, the pair's
shared events (health checks, which both nodes' keepalived run) only from the active node
(`kinds.PAIR_WIDE`), and a channel's secret stays on the node it was typed into, like the pair
key. Both nodes can be given the same channels where both should alert.
"""
