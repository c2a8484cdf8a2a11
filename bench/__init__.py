"""Benchmarks of koordgang on the local control plane (kube-apiserver + etcd + kwok).

    python -m bench                         # every scenario, full size (10-15 minutes)
    python -m bench --scale 0.05 --scenarios plain,gang-1k
    make bench BENCH_ARGS="--scale 0.1"
    make bench PEERS=all                        # and the peers, side by side (about 30 min)
    make bench BENCH_ARGS="--scenarios gang-1k --gang-apis all"   # koordgang on each gang API
    python -m bench --scenarios large --skip-ceiling   # 5,000 nodes, 100,000 pods
    make bench BENCH_ARGS="--scenarios starvation"   # the starvation guard on and off (5 min)
    make bench PEERS=kube-scheduler BENCH_ARGS="--scenarios dra"   # DRA, beside kube-scheduler
    make bench PEERS=kube-scheduler BENCH_ARGS="--scenarios dra-forms --gang-apis kubernetes"

First the *ceiling*: a bare client (``bare_binder.py``) binds pre-created pods to pre-chosen
nodes as fast as the API server accepts, with no scheduling at all, its requests in flight
swept upwards until the API server saturates (``ceiling.py``). Then each throughput scenario (see
``scenarios.py``) runs on the same cluster: leftovers are deleted, nodes and pending pods are
created while the daemon is down, the daemon is started, and a watch records when each pod is
first bound. The ceiling is measured again after them, and the start-up scenario (a cluster full
of running pods) comes last. With peers (``schedulers.py``, ``peers/``) each scheduler gets its
own CRDs and ceiling and runs the same scenarios, its gangs in its own API (``gang_api.py``).
With ``--gang-apis`` koordgang runs its gang scenarios once more per other gang API listed
(``koordgang via volcano``, ...), after its own run and on its ceiling, and the report puts each
beside Koordinator's annotations; ``koordgang via scheduler-plugins`` reads the very PodGroups
Coscheduling reads. With peers, ``koordgang all events`` runs every scenario a peer runs once
more, writing a Scheduled Event for every bound pod as the peers do.
The DRA scenario (``dra.py``; only by name) gives every node a ResourceSlice of 8 devices and
every pod a ResourceClaim of its own, made before the window; kube-scheduler runs it with its
alpha gang scheduling switched on, its gangs as upstream PodGroups, and each run is checked by
``dra_check.py`` (no koordgang code) before it is measured. ``dra-forms`` (``dra_forms.py``,
Kubernetes 1.37) offers the GPUs as 1.37 does: partitions drawing on shared counters, a GPU
as an extended resource served through DRA, and one claim for a whole gang (its upstream
PodGroup's), checked by ``dra_forms_check.py``.
The starvation scenarios (``starvation.py``, ``starvation_run.py``) stream small pods instead
and measure how long one big gang waits among them, with koordgang's starvation guard and
without, and what the guard costs the small pods.
Every rate is also reported as a fraction of the ceilings measured around it, because on a
2-core machine absolute figures move with whatever else runs; the CPU each process used (and
what the rest of the machine used) is reported beside them.

Results go to ``bench-results/<UTC time>/`` (table, JSON, PNG, daemon logs);
``bench-results/latest`` points at the newest run.
"""
