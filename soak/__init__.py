"""`make soak`: churn of every kind of job with faults in turn, memory and invariants watched."""
