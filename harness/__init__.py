"""The cluster harness: what the e2e tests, the soak, the bench and the demo share to drive a
real API server. ``kube`` (the cluster and object bodies), ``daemon`` (koordgang as a process or
a Deployment), ``rbac`` (the scheduler's own credentials), ``faultproxy`` (faults between the
daemon and the API server), ``dra`` (ResourceClaims), ``gangs`` (gangs of every API and their
checks), ``invariants`` (what must always hold, counted independently of the product),
``checks`` (all of them at once) and ``clients`` (real operators and controllers, built from
their released Go modules).

Tests live in ``e2e/`` and import from here; nothing here imports a test module."""
