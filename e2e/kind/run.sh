#!/usr/bin/env bash
# Runs koordgang's end-to-end suite against a kind cluster with the scheduler deployed
# in-cluster, as a user would run it. Needs Docker, kind and kubectl. See README.md.
#
#   e2e/kind/run.sh [--keep] [--name NAME] [-- PYTEST_ARGS...]
#
# Environment:
#   KIND_NODE_IMAGE  node image for a new cluster (default: the one in cluster.yaml)
#   PYTHON           interpreter with koordgang's test dependencies
#                    (default: .venv/bin/python if present, else python3)
#   KWOK_BIN         a kwok binary to use instead of the one controlplane builds
#                    (into ~/.cache/koordgang/bin/, or $KOORDGANG_CACHE/bin/)
set -euo pipefail
# Written for bash 3.2 too (macOS): no mapfile, no empty-array expansion under set -u.

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "${SCRIPT_DIR}/../.." && pwd)"
# Everything below runs from the checkout's root (python -m e2e..., pytest e2e).
cd "${ROOT}"

CLUSTER="koordgang-e2e"
KEEP=0
PYTEST_ARGS=()
IMAGE="koordgang:dev"
NAMESPACE="koordgang-system"
INFRA_LABEL="koordgang.e2e/infra"
WORK_DIR=""
KUBECONFIG_FILE=""
KWOK_PID=""
KWOK_LOG=""

usage() {
    cat <<'USAGE'
Usage: e2e/kind/run.sh [--keep] [--name NAME] [-- PYTEST_ARGS...]

Creates (or reuses) a kind cluster, builds and loads the koordgang:dev image, deploys
the Helm chart (charts/koordgang, with e2e/kind/values.yaml), cordons the kind nodes, starts kwok for the
fake nodes the tests create, and runs `python -m pytest e2e -m e2e` against it.

  --keep        keep the cluster afterwards (default: delete it)
  --name NAME   kind cluster name (default: koordgang-e2e)
  -h, --help    show this help
  -- ARGS       further arguments for pytest, e.g. -- -k preemption -x
USAGE
}

step() { printf '\n==> %s\n' "$*"; }
info() { printf '    %s\n' "$*"; }
die() {
    printf 'error: %s\n' "$*" >&2
    exit 1
}

while (($# > 0)); do
    case "$1" in
        --keep) KEEP=1 ;;
        --name)
            (($# >= 2)) || die "--name needs a value"
            CLUSTER="$2"
            shift
            ;;
        --name=*) CLUSTER="${1#--name=}" ;;
        -h | --help)
            usage
            exit 0
            ;;
        --)
            shift
            PYTEST_ARGS=("$@")
            break
            ;;
        *)
            usage >&2
            die "unknown argument: $1"
            ;;
    esac
    shift
done

# Called by the EXIT trap.
# shellcheck disable=SC2317
cleanup() {
    local rc=$?
    set +e
    if [[ -n "${KWOK_PID}" ]] && kill -0 "${KWOK_PID}" 2>/dev/null; then
        step "Stopping kwok (pid ${KWOK_PID})"
        kill "${KWOK_PID}"
        wait "${KWOK_PID}" 2>/dev/null
    fi
    if ((KEEP)); then
        step "Keeping cluster ${CLUSTER}"
        info "kubectl --kubeconfig ${KUBECONFIG_FILE} get nodes"
        info "delete it with: kind delete cluster --name ${CLUSTER}"
    elif [[ -n "${KUBECONFIG_FILE}" ]]; then
        step "Deleting cluster ${CLUSTER}"
        kind delete cluster --name "${CLUSTER}"
        rm -f "${KUBECONFIG_FILE}"
        if [[ -n "${KWOK_LOG}" ]]; then info "kwok's log: ${KWOK_LOG}"; fi
    fi
    exit "${rc}"
}

# --- 1. tools ------------------------------------------------------------------------
step "Checking tools"
missing=()
for tool in docker kind kubectl; do
    command -v "${tool}" >/dev/null 2>&1 || missing+=("${tool}")
done
if ((${#missing[@]} > 0)); then
    die "not found on PATH: ${missing[*]}. Install Docker (https://docs.docker.com/engine/install/), kind (https://kind.sigs.k8s.io/docs/user/quick-start/#installation) and kubectl, or run the suite on the local control plane instead (see e2e/kind/README.md)."
fi
docker info >/dev/null 2>&1 ||
    die "docker is installed but its daemon does not answer (is Docker running, and may this user use it?)"

if [[ -z "${PYTHON:-}" ]]; then
    if [[ -x "${ROOT}/.venv/bin/python" ]]; then
        PYTHON="${ROOT}/.venv/bin/python"
    else
        PYTHON="python3"
    fi
fi
command -v "${PYTHON}" >/dev/null 2>&1 || die "python interpreter not found: ${PYTHON} (set PYTHON=...)"
"${PYTHON}" -c 'import pytest, koordgang' 2>/dev/null ||
    die "${PYTHON} lacks pytest or koordgang: run \`pip install -e '.[test]'\` in a venv, or set PYTHON=..."
docker_version="$(docker version --format '{{.Server.Version}}' 2>/dev/null)" || docker_version="?"
kind_version="$(kind version)"
info "docker ${docker_version}, ${kind_version}, python ${PYTHON}"

WORK_DIR="${XDG_CACHE_HOME:-${HOME}/.cache}/koordgang/kind/${CLUSTER}"
mkdir -p "${WORK_DIR}"
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# --- 2. cluster ----------------------------------------------------------------------
KUBECONFIG_FILE="${WORK_DIR}/kubeconfig"
if kind get clusters 2>/dev/null | grep -qx "${CLUSTER}"; then
    step "Reusing kind cluster ${CLUSTER}"
else
    step "Creating kind cluster ${CLUSTER}"
    create_args=(--name "${CLUSTER}" --config "${SCRIPT_DIR}/cluster.yaml"
        --kubeconfig "${KUBECONFIG_FILE}" --wait 120s)
    if [[ -n "${KIND_NODE_IMAGE:-}" ]]; then
        create_args+=(--image "${KIND_NODE_IMAGE}")
    fi
    kind create cluster "${create_args[@]}"
fi
# Written to its own file: the user's ~/.kube/config is left alone.
kind get kubeconfig --name "${CLUSTER}" >"${KUBECONFIG_FILE}"
export KUBECONFIG="${KUBECONFIG_FILE}"
info "kubeconfig: ${KUBECONFIG_FILE}"
kubectl version

# The kind nodes are the only real ones; mark them so that the cluster's own workloads
# stay there and leave the fake nodes' capacity to the tests.
nodes_out="$(kind get nodes --name "${CLUSTER}")"
KIND_NODES=()
while IFS= read -r node; do
    if [[ -n "${node}" ]]; then KIND_NODES+=("${node}"); fi
done <<<"${nodes_out}"
((${#KIND_NODES[@]} > 0)) || die "kind reports no nodes for cluster ${CLUSTER}"
kubectl label nodes "${KIND_NODES[@]}" "${INFRA_LABEL}=true" --overwrite
step "Keeping system DaemonSets and Deployments on the kind nodes"
selector_patch="{\"spec\":{\"template\":{\"spec\":{\"nodeSelector\":{\"${INFRA_LABEL}\":\"true\"}}}}}"
for ns in kube-system local-path-storage; do
    kubectl get namespace "${ns}" >/dev/null 2>&1 || continue
    for kind_name in daemonset deployment; do
        for obj in $(kubectl -n "${ns}" get "${kind_name}" -o name); do
            kubectl -n "${ns}" patch "${obj}" --type=strategic -p "${selector_patch}"
            kubectl -n "${ns}" rollout status "${obj}" --timeout=180s
        done
    done
done

# --- 3. image ------------------------------------------------------------------------
step "Building image ${IMAGE}"
docker build -t "${IMAGE}" "${ROOT}"
step "Loading ${IMAGE} into kind"
kind load docker-image "${IMAGE}" --name "${CLUSTER}"

# --- 4. deploy -----------------------------------------------------------------------
step "Deploying koordgang"
redeploy=0
if kubectl -n "${NAMESPACE}" get deployment koordgang >/dev/null 2>&1; then
    redeploy=1
fi
HELM="${HELM_BIN:-}"
if [[ -z "${HELM}" ]]; then
    info "building helm if it is not cached yet (controlplane; needs Go)"
    HELM="$("${PYTHON}" -c 'import sys
from controlplane import Reporter, ensure_built
print(ensure_built(Reporter(sys.stderr), names=["helm"])["helm"])')"
fi
[[ -x "${HELM}" ]] || die "helm binary not found or not executable: '${HELM}' (set HELM_BIN=...)"
# The chart, as a cluster admin installs it; values.yaml keeps the pod on the kind node.
"${HELM}" upgrade --install koordgang "${ROOT}/charts/koordgang" \
    --namespace "${NAMESPACE}" --create-namespace \
    --values "${SCRIPT_DIR}/values.yaml" \
    --set image.repository="${IMAGE%%:*}" --set image.tag="${IMAGE##*:}"
kubectl wait --for=condition=Established --timeout=60s \
    crd/podgroups.scheduling.sigs.k8s.io \
    crd/clusternetworktopologies.scheduling.koordinator.sh
if ((redeploy)); then
    # Same tag, new image: only a new pod picks it up.
    kubectl -n "${NAMESPACE}" rollout restart deployment/koordgang
fi
step "Waiting for the koordgang rollout"
if ! kubectl -n "${NAMESPACE}" rollout status deployment/koordgang --timeout=180s; then
    kubectl -n "${NAMESPACE}" describe pods -l app.kubernetes.io/name=koordgang || true
    kubectl -n "${NAMESPACE}" logs deployment/koordgang --tail=100 || true
    die "koordgang did not become ready"
fi

# --- 5. only fake nodes take test pods -------------------------------------------------
step "Cordoning the kind nodes: ${KIND_NODES[*]}"
kubectl cordon "${KIND_NODES[@]}"

# --- 6. kwok -------------------------------------------------------------------------
# The same kwok build and flags as the local control plane (controlplane/cluster.py),
# except the fake pod range, which must not overlap kind's real one (10.244.0.0/16).
step "Starting kwok"
KWOK="${KWOK_BIN:-}"
if [[ -z "${KWOK}" ]]; then
    info "building kwok if it is not cached yet (controlplane; needs Go)"
    # Progress goes to stderr, the binary's path to stdout.
    KWOK="$("${PYTHON}" -c 'import sys
from controlplane import Reporter, ensure_built
print(ensure_built(Reporter(sys.stderr), names=["kwok"])["kwok"])')"
fi
[[ -x "${KWOK}" ]] || die "kwok binary not found or not executable: '${KWOK}' (set KWOK_BIN=...)"
KWOK_PORT="$("${PYTHON}" -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])')"
KWOK_LOG="${WORK_DIR}/kwok.log"
mkdir -p "${WORK_DIR}/kwok"
KWOK_WORKDIR="${WORK_DIR}/kwok" "${KWOK}" \
    --kubeconfig="${KUBECONFIG_FILE}" \
    --manage-all-nodes=false \
    --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake \
    --node-lease-duration-seconds=40 \
    --cidr=10.254.0.1/16 \
    --config="${ROOT}/controlplane/kwok-stages.yaml" \
    --node-ip=192.0.2.1 \
    --server-address="127.0.0.1:${KWOK_PORT}" \
    >"${KWOK_LOG}" 2>&1 &
KWOK_PID=$!
kwok_healthy() {
    "${PYTHON}" -c 'import sys, urllib.request
try:
    with urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/healthz", timeout=1) as r:
        sys.exit(0 if r.status == 200 else 1)
except OSError:
    sys.exit(1)' "${KWOK_PORT}"
}
for _ in $(seq 1 60); do
    if ! kill -0 "${KWOK_PID}" 2>/dev/null; then
        tail -n 50 "${KWOK_LOG}" >&2 || true
        KWOK_PID=""
        die "kwok exited (log: ${KWOK_LOG})"
    fi
    # shellcheck disable=SC2310  # a failed probe is expected while kwok starts
    if kwok_healthy; then break; fi
    sleep 1
done
# shellcheck disable=SC2310
kwok_healthy || die "kwok is not healthy after 60 s (log: ${KWOK_LOG})"
info "kwok ${KWOK} (pid ${KWOK_PID}, log ${KWOK_LOG})"

# --- 7. tests ------------------------------------------------------------------------
step "Running the e2e suite"
set +e
KOORDGANG_E2E_KUBECONFIG="${KUBECONFIG_FILE}" \
    KOORDGANG_E2E_DAEMON=deployment \
    "${PYTHON}" -m pytest e2e -m e2e ${PYTEST_ARGS[@]+"${PYTEST_ARGS[@]}"}
rc=$?
set -e
if ((rc != 0)); then
    step "e2e suite failed (exit ${rc}); koordgang's last log lines:"
    kubectl -n "${NAMESPACE}" logs deployment/koordgang --tail=50 || true
fi
exit "${rc}"
