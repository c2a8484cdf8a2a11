"""The schedulers the bench compares koordgang with, built from their Go modules under
``gomod/`` like the control plane: kube-scheduler, kube-scheduler with scheduler-plugins'
Coscheduling, and Koordinator's koord-scheduler."""
