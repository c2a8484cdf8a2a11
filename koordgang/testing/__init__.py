"""Support for the tests: fakes of what the engine talks to, and builders of API objects.

- ``api``, ``clock``: the API server and the monotonic clock, as the engine sees them.
- ``harness``: the one engine fake, a whole ``Scheduler`` over those two, run step by step;
  ``cycles``: the same engine driven one scheduling cycle at a time, from a plain test.
- ``builders``: pods, nodes, gangs (members and PodGroups), DRA objects (slices, classes,
  claims), as the API server returns them and as the informers parse them.
- ``plugins``: small plugins that answer as a test sets, for the framework's own tests.
- ``fixtures``: the pytest fixtures over the harness; conftest.py files use them.
- ``contracts``: the import-linter contract that keeps all test code out of the product.

Not part of the product: left out of the wheel and the sdist (pyproject.toml, MANIFEST.in), and no
product module imports it (import-linter). The benchmarks may use it.
"""
