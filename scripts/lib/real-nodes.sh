# Real nodes for the test cluster: a kubelet per node, each with its own containerd (root, state, socket), its
# own CNI bridge and pod subnet, its own cgroup root and kubelet port; one kube-proxy and CoreDNS for the cluster.
# Sourced by scripts/test-cluster, which sets CACHE, CLUSTER, KWOK_WORKDIR and the bin dir ($BIN).
# The recipe and its traps: shared notes real-node/RECIPE.md (2026-11-22).
#
# Layout: $NODES_DIR/n<i>/{containerd/root (kept: imported images survive `down`), containerd/state, run, cni,
# kubelet, pki, logs}. Everything but containerd/root is removed by `down`. A short path on purpose: the kubelet
# and containerd put unix sockets under it, and a socket path may not exceed 107 bytes.

NODES_DIR=${ELASTREAM_NODES_DIR:-/var/lib/elastream-test/$CLUSTER}
POD_CIDR=10.88.0.0/16        # node i gets 10.88.i.0/24 on bridge elastream<i>
SERVICE_DNS_IP=10.0.0.10     # kwokctl's service CIDR is 10.0.0.0/24; the apiserver is 10.0.0.1
MASQ_COMMENT="elastream test cluster: pods to the outside"
REAL_LABEL=elastream.io/real-node
FAKE_TAINT=kwok.x-k8s.io/node=fake:NoSchedule

node_name() { echo "$CLUSTER-real-$1"; }
node_dir() { echo "$NODES_DIR/n$1"; }
host_ip() { ip -4 route get 1.1.1.1 2>/dev/null | awk '{for (i=1;i<NF;i++) if ($i=="src") {print $(i+1); exit}}'; }
pid_alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

require_node_packages() {
  local missing=()
  command -v containerd >/dev/null || missing+=(containerd)
  command -v runc >/dev/null || missing+=(runc)
  [ -x /usr/lib/cni/bridge ] || missing+=(containernetworking-plugins)
  command -v iptables >/dev/null || missing+=(iptables)
  command -v conntrack >/dev/null || missing+=(conntrack)
  command -v debootstrap >/dev/null || missing+=(debootstrap)
  command -v socat >/dev/null || missing+=(socat)
  [ ${#missing[@]} -eq 0 ] && return 0
  log "installing ${missing[*]} (Debian packages, first run only)"
  # policy-rc.d exit 101: installing containerd must not start a system daemon; we start our own per node
  local created=""
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d && created=1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >&2 || {
    apt-get update -q >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >&2; }
  [ -n "$created" ] && rm -f /usr/sbin/policy-rc.d
  return 0
}

# kwokctl configuration for a cluster that may hold real nodes (used for every cluster: harmless without them)
write_kwokctl_config() {
  local pki=$KWOK_WORKDIR/clusters/$CLUSTER/pki out=$KWOK_WORKDIR/$CLUSTER-kwokctl.yaml
  mkdir -p "$KWOK_WORKDIR"
  cat > "$out" <<EOF
apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokctlConfiguration
options:
  kubeApiserverCertSANs: ["10.0.0.1"]   # in-cluster clients dial the ClusterIP of kubernetes.default
componentsPatches:
- name: kwok-controller                 # kwok simulates only its own nodes, never a real kubelet's
  extraArgs:
  - {key: manage-all-nodes, value: "false"}
  - {key: manage-nodes-with-annotation-selector, value: kwok.x-k8s.io/node=fake}
- name: kube-apiserver                  # reach kubelets (logs, exec) by IP, with a client cert
  extraArgs:
  - {key: kubelet-preferred-address-types, value: "InternalIP,Hostname"}
  - {key: kubelet-client-certificate, value: $pki/admin.crt}
  - {key: kubelet-client-key, value: $pki/admin.key}
EOF
  echo "$out"
}

write_node_configs() {
  local i=$1 name dir pki ip
  name=$(node_name "$i"); dir=$(node_dir "$i"); pki=$KWOK_WORKDIR/clusters/$CLUSTER/pki; ip=$(host_ip)
  mkdir -p "$dir"/{containerd/root,containerd/state,run,cni/net.d,cni/ipam,kubelet/root,kubelet/pod-logs,pki,logs}
  cat > "$dir/containerd/config.toml" <<EOF
version = 2
root = "$dir/containerd/root"
state = "$dir/containerd/state"
[grpc]
  address = "$dir/run/containerd.sock"
[ttrpc]
  address = "$dir/run/containerd.sock.ttrpc"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  restrict_oom_score_adj = true      # the VM drops CAP_SYS_RESOURCE: a negative oom_score_adj is EPERM
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"     # crun fails on hybrid cgroups
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$dir/cni/net.d"
EOF
  cat > "$dir/cni/net.d/10-elastream.conflist" <<EOF
{"cniVersion": "1.0.0", "name": "elastream$i", "plugins": [
  {"type": "bridge", "bridge": "elastream$i", "isGateway": true, "ipMasq": false, "hairpinMode": true,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.88.$i.0/24"}]], "routes": [{"dst": "0.0.0.0/0"}],
            "dataDir": "$dir/cni/ipam"}},
  {"type": "portmap", "capabilities": {"portMappings": true}}]}
EOF
  cat > "$dir/kubelet/config.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: /elastream/$name          # two kubelets on one host must not clean up each other's pod cgroups
containerRuntimeEndpoint: unix://$dir/run/containerd.sock
imageServiceEndpoint: unix://$dir/run/containerd.sock
podLogsDir: $dir/kubelet/pod-logs
address: $ip
port: $((11250 + i))
readOnlyPort: 0
healthzPort: 0
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $pki/ca.crt}
authorization: {mode: Webhook}
resolvConf: /etc/resolv.conf
clusterDomain: cluster.local
clusterDNS: ["$SERVICE_DNS_IP"]
evictionHard: {memory.available: "100Mi", nodefs.available: "2%", imagefs.available: "2%"}
imageGCHighThresholdPercent: 98
imageGCLowThresholdPercent: 95
serializeImagePulls: false
maxPods: 60
EOF
  # the node's identity: system:node:<name> in system:nodes, signed by the cluster CA (Node authorizer)
  openssl req -new -newkey rsa:2048 -nodes -keyout "$dir/pki/node.key" \
    -subj "/O=system:nodes/CN=system:node:$name" -out "$dir/pki/node.csr" 2>/dev/null
  openssl x509 -req -in "$dir/pki/node.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial -days 30 \
    -out "$dir/pki/node.crt" 2>/dev/null
  local server; server=$(awk '/server:/{print $2; exit}' "$(kubeconfig_path)")
  cat > "$dir/kubelet/kubeconfig.yaml" <<EOF
apiVersion: v1
kind: Config
clusters: [{name: $CLUSTER, cluster: {server: "$server", certificate-authority: $pki/ca.crt}}]
users: [{name: node, user: {client-certificate: $dir/pki/node.crt, client-key: $dir/pki/node.key}}]
contexts: [{name: node, context: {cluster: $CLUSTER, user: node}}]
current-context: node
EOF
}

# cgroup v1: the kubelet needs its cgroupRoot to exist in every hierarchy; cpuset children need cpus and mems
make_cgroup_root() {
  local name=$1 h d
  for h in /sys/fs/cgroup/*/; do
    [ "$(basename "$h")" = unified ] && continue
    for d in "$h/elastream" "$h/elastream/$name"; do
      mkdir -p "$d"
      if [ -f "$d/cpuset.cpus" ]; then
        [ -n "$(cat "$d/cpuset.cpus")" ] || cat "$(dirname "$d")/cpuset.cpus" > "$d/cpuset.cpus"
        [ -n "$(cat "$d/cpuset.mems")" ] || cat "$(dirname "$d")/cpuset.mems" > "$d/cpuset.mems"
      fi
    done
  done
}

remove_cgroup_root() {
  local h
  for h in /sys/fs/cgroup/*/; do
    [ -d "$h/elastream" ] || continue
    find "$h/elastream" -depth -type d -exec rmdir {} \; 2>/dev/null || true
  done
}

start_daemon() {  # start_daemon PIDFILE LOG CMD...: detached, so it outlives the caller
  local pidfile=$1 logf=$2; shift 2
  pid_alive "$pidfile" && return 0
  setsid nohup "$@" >"$logf" 2>&1 < /dev/null &
  echo $! > "$pidfile"
}

ctr_node() { local dir; dir=$(node_dir "$1"); shift; ctr --address "$dir/run/containerd.sock" -n k8s.io "$@"; }

wait_socket() {
  local sock=$1 i
  for i in $(seq 100); do [ -S "$sock" ] && return 0; sleep 0.2; done
  log "containerd did not create $sock"; return 1
}

# import_image NODE_INDEX REF TAR: only when this node does not hold that exact tar's content yet
import_image() {
  local i=$1 ref=$2 tar=$3 dir marker
  dir=$(node_dir "$i"); marker=$dir/containerd/imported/$(basename "$tar")
  if [ -f "$marker" ] && ctr_node "$i" images ls -q | grep -qxF "$ref"; then return 0; fi
  log "importing $ref into $(node_name "$i")"
  ctr_node "$i" images import "$tar" >&2
  mkdir -p "$(dirname "$marker")"; touch "$marker"
}

start_real_node() {
  local i=$1 name dir ip
  name=$(node_name "$i"); dir=$(node_dir "$i"); ip=$(host_ip)
  pid_alive "$dir/run/kubelet.pid" && pid_alive "$dir/run/containerd.pid" && return 0  # up already
  write_node_configs "$i"
  start_daemon "$dir/run/containerd.pid" "$dir/logs/containerd.log" containerd --config "$dir/containerd/config.toml"
  wait_socket "$dir/run/containerd.sock"
  local ref tar
  while read -r ref tar; do import_image "$i" "$ref" "$tar"; done <<< "$INFRA_IMAGES"
  make_cgroup_root "$name"
  start_daemon "$dir/run/kubelet.pid" "$dir/logs/kubelet.log" "$BIN/kubelet" --config "$dir/kubelet/config.yaml" \
    --kubeconfig "$dir/kubelet/kubeconfig.yaml" --root-dir "$dir/kubelet/root" --hostname-override "$name" \
    --node-ip "$ip" --node-labels "$REAL_LABEL=true" -v=1
}

start_kube_proxy() {  # one for the host: every node shares its network namespace and iptables
  local dir=$NODES_DIR/kube-proxy
  pid_alive "$dir/kube-proxy.pid" && return 0  # it exits when its config file is rewritten, even unchanged
  mkdir -p "$dir"
  cat > "$dir/config.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
clientConnection: {kubeconfig: $(kubeconfig_path)}
hostnameOverride: $(node_name 1)
clusterCIDR: $POD_CIDR
metricsBindAddress: 127.0.0.1:10249
healthzBindAddress: 127.0.0.1:10256
conntrack: {maxPerCore: 0}
EOF
  start_daemon "$dir/kube-proxy.pid" "$dir/kube-proxy.log" "$BIN/kube-proxy" --config "$dir/config.yaml"
}

enable_forwarding() {
  [ -f "$NODES_DIR/ip_forward.orig" ] || cat /proc/sys/net/ipv4/ip_forward > "$NODES_DIR/ip_forward.orig"
  echo 1 > /proc/sys/net/ipv4/ip_forward
  # pods keep their IPs between nodes (the bridges route to each other); only traffic leaving the pod network is NATed
  iptables -t nat -C POSTROUTING -s "$POD_CIDR" ! -d "$POD_CIDR" -m comment --comment "$MASQ_COMMENT" -j MASQUERADE 2>/dev/null ||
    iptables -t nat -A POSTROUTING -s "$POD_CIDR" ! -d "$POD_CIDR" -m comment --comment "$MASQ_COMMENT" -j MASQUERADE
}

coredns_manifest() {
  cat <<EOF
apiVersion: v1
kind: ServiceAccount
metadata: {name: coredns, namespace: kube-system}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "system:coredns"}
rules:
- {apiGroups: [""], resources: [endpoints, services, pods, namespaces], verbs: [list, watch]}
- {apiGroups: [discovery.k8s.io], resources: [endpointslices], verbs: [list, watch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "system:coredns"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "system:coredns"}
subjects: [{kind: ServiceAccount, name: coredns, namespace: kube-system}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: coredns, namespace: kube-system}
data:
  Corefile: |
    .:53 {
        errors
        health :8080
        ready :8181
        kubernetes cluster.local in-addr.arpa ip6.arpa {
            pods insecure
            fallthrough in-addr.arpa ip6.arpa
        }
        forward . /etc/resolv.conf
        cache 30
    }
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: coredns, namespace: kube-system, labels: {k8s-app: kube-dns}}
spec:
  replicas: 1
  selector: {matchLabels: {k8s-app: kube-dns}}
  template:
    metadata: {labels: {k8s-app: kube-dns}}
    spec:
      serviceAccountName: coredns
      dnsPolicy: Default
      priorityClassName: system-cluster-critical
      nodeSelector: {$REAL_LABEL: "true"}
      containers:
      - name: coredns
        image: $COREDNS_IMAGE
        imagePullPolicy: IfNotPresent
        args: ["-conf", "/etc/coredns/Corefile"]
        ports:
        - {name: dns, containerPort: 53, protocol: UDP}
        - {name: dns-tcp, containerPort: 53, protocol: TCP}
        readinessProbe: {httpGet: {path: /ready, port: 8181}, periodSeconds: 2}
        resources: {requests: {cpu: 50m, memory: 64Mi}, limits: {memory: 128Mi}}
        volumeMounts: [{name: config, mountPath: /etc/coredns}]
      volumes: [{name: config, configMap: {name: coredns}}]
---
apiVersion: v1
kind: Service
metadata: {name: kube-dns, namespace: kube-system, labels: {k8s-app: kube-dns}}
spec:
  clusterIP: $SERVICE_DNS_IP
  selector: {k8s-app: kube-dns}
  ports:
  - {name: dns, port: 53, protocol: UDP}
  - {name: dns-tcp, port: 53, protocol: TCP}
EOF
}

wait_node_registered() {
  local _
  for _ in $(seq 120); do kubectl --kubeconfig "$2" get node "$1" >/dev/null 2>&1 && return 0; sleep 0.5; done
  log "node $1 did not register"; return 1
}

# up_real_nodes N: start N real nodes, kube-proxy and CoreDNS; returns when all are Ready
up_real_nodes() {
  local n=$1 i kc; kc=$(kubeconfig_path)
  [ "$n" -gt 0 ] || return 0
  [ "$(id -u)" -eq 0 ] || { log "real nodes need root (containerd, kubelet, iptables)"; return 1; }
  mkdir -p "$NODES_DIR"
  enable_forwarding
  for i in $(seq 1 "$n"); do start_real_node "$i"; done
  start_kube_proxy
  for i in $(seq 1 "$n"); do
    wait_node_registered "$(node_name "$i")" "$kc"
    kubectl --kubeconfig "$kc" wait --for=condition=Ready "node/$(node_name "$i")" --timeout=120s >&2 || {
      log "node $(node_name "$i") not Ready; its kubelet log: $(node_dir "$i")/logs/kubelet.log"; return 1; }
  done
  coredns_manifest | kubectl --kubeconfig "$kc" apply -f - >&2
  kubectl --kubeconfig "$kc" -n kube-system rollout status deployment/coredns --timeout=120s >&2
}

# Kwok's simulated nodes run nothing: with real nodes present, keep ordinary pods off them (a pod that wants a
# simulated node tolerates the taint).
taint_fake_nodes() {
  local kc; kc=$(kubeconfig_path)
  kubectl --kubeconfig "$kc" taint nodes -l type=kwok "$FAKE_TAINT" --overwrite >&2
}

stop_pidfile() {
  local f=$1 p _
  [ -f "$f" ] || return 0
  p=$(cat "$f")
  if kill "$p" 2>/dev/null; then
    for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.2; done
    kill -9 "$p" 2>/dev/null || true
  fi
  rm -f "$f"
}

# down_real_nodes: no process, mount, veth, bridge, cgroup or iptables rule of ours is left; ip_forward restored
down_real_nodes() {
  [ -d "$NODES_DIR" ] || return 0
  local kc dir i; kc=$(kubeconfig_path)
  if [ -f "$kc" ] && ls "$NODES_DIR"/*/run/kubelet.pid >/dev/null 2>&1; then
    # pods first, so kubelets run CNI DEL and unmount their volumes
    kubectl --kubeconfig "$kc" delete pods --all -A --grace-period=3 --timeout=60s >/dev/null 2>&1 || true
  fi
  stop_pidfile "$NODES_DIR/kube-proxy/kube-proxy.pid"
  [ -x "$BIN/kube-proxy" ] && "$BIN/kube-proxy" --cleanup >/dev/null 2>&1 || true
  for dir in "$NODES_DIR"/*/; do
    [ -f "$dir/containerd/config.toml" ] || continue
    stop_pidfile "$dir/run/kubelet.pid"
    if pid_alive "$dir/run/containerd.pid"; then
      local c ctr_=(ctr --address "$dir/run/containerd.sock" -n k8s.io)
      for c in $("${ctr_[@]}" tasks ls -q 2>/dev/null); do "${ctr_[@]}" tasks kill -s KILL "$c" >/dev/null 2>&1 || true; done
      sleep 1
      for c in $("${ctr_[@]}" containers ls -q 2>/dev/null); do
        "${ctr_[@]}" tasks delete "$c" >/dev/null 2>&1 || true; "${ctr_[@]}" containers delete "$c" >/dev/null 2>&1 || true
      done
    fi
    stop_pidfile "$dir/run/containerd.pid"
    # shims of this node that outlived their containerd
    pkill -f "containerd-shim-runc-v2 .*-address $dir/run/containerd.sock" 2>/dev/null || true
    grep -F " ${dir%/}/" /proc/mounts | awk '{print $2}' | sort -r | xargs -r -n1 umount -l 2>/dev/null || true
    rm -rf "$dir/containerd/state" "$dir/kubelet" "$dir/cni/ipam" "$dir/run" "$dir/pki"
  done
  # pod network namespaces that outlived their sandbox (no process left in them) hold a veth each
  local ns_
  for ns_ in $(ip netns list 2>/dev/null | awk '$1 ~ /^cni-/ {print $1}'); do
    [ -z "$(ip netns pids "$ns_" 2>/dev/null)" ] && ip netns delete "$ns_" 2>/dev/null || true
  done
  for i in $(ip -o link show type bridge 2>/dev/null | awk -F': ' '{print $2}' | grep -E '^elastream[0-9]+$'); do
    ip link del "$i" 2>/dev/null || true
  done
  # veths whose bridge is gone are deleted with it; NAT rule and the kubelets' own chains (kube-proxy --cleanup leaves them)
  while iptables -t nat -D POSTROUTING -s "$POD_CIDR" ! -d "$POD_CIDR" -m comment --comment "$MASQ_COMMENT" -j MASQUERADE 2>/dev/null; do :; done
  local ipt c t
  for ipt in iptables ip6tables; do
    for c in INPUT OUTPUT; do while $ipt -D $c -j KUBE-FIREWALL 2>/dev/null; do :; done; done
    $ipt -F KUBE-FIREWALL 2>/dev/null || true; $ipt -X KUBE-FIREWALL 2>/dev/null || true
    for t in nat filter mangle; do
      $ipt -t $t -F KUBE-KUBELET-CANARY 2>/dev/null || true; $ipt -t $t -X KUBE-KUBELET-CANARY 2>/dev/null || true
    done
    $ipt -t mangle -F KUBE-IPTABLES-HINT 2>/dev/null || true; $ipt -t mangle -X KUBE-IPTABLES-HINT 2>/dev/null || true
  done
  remove_cgroup_root
  if [ -f "$NODES_DIR/ip_forward.orig" ]; then
    cat "$NODES_DIR/ip_forward.orig" > /proc/sys/net/ipv4/ip_forward; rm -f "$NODES_DIR/ip_forward.orig"
  fi
}

real_node_count() { ls -d "$NODES_DIR"/*/containerd/config.toml 2>/dev/null | wc -l; }

# images_into_nodes: build the project's images (scripts/build-images) and import them into every real node
images_into_nodes() {
  local built i ref tar n; n=$(real_node_count)
  built=$("$SCRIPTS/build-images" "$@")
  [ "$n" -gt 0 ] || { log "no real node is up: images built, not imported"; echo "$built"; return 0; }
  for i in $(seq 1 "$n"); do
    while read -r ref tar; do [ -n "$ref" ] && import_image "$i" "$ref" "$tar"; done <<< "$built"
  done
  echo "$built"
}
