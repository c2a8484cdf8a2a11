"""Real clients of the scheduler, run by e2e tests against the local control plane: programs
that create gangs the way users' clusters do. Built from pinned Go modules under ``gomod/`` and
cached like the control plane's binaries (``build.py``).

- ``training_operator``: the Kubeflow training-operator v1.7.0 (PyTorchJob etc.), which writes
  ``scheduling.x-k8s.io`` PodGroups (any ``--gang-scheduler-name`` but ``volcano``) or
  ``scheduling.volcano.sh`` PodGroups (``--gang-scheduler-name=volcano``).
"""
