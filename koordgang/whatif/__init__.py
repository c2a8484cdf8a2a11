"""``koordgang whatif``: what would happen to a job if it were submitted now, worked out on a
fork of the scheduler's state (``fork.py``) without writing anything or changing the daemon."""
