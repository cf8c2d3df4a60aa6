"""The tests' own, independent reading of the contract: a small reference model.

Nothing here imports schedcache internals. It recomputes from API JSON what a
NodeInfo must hold, models the NodeTree, and turns the public objects handed
out by the cache (NodeInfo, Dump, Snapshot) into plain, comparable data.
"""

import json
import math
import os
import re
from collections import Counter
from collections.abc import Mapping
from fractions import Fraction

from tests.schedcache.builders import BETA_REGION, BETA_ZONE, TOPO_REGION, TOPO_ZONE

# ---------------------------------------------------------------- quantities

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
_QTY = re.compile(r"^([+-]?)(\d+(?:\.\d*)?|\.\d+)(.*)$")


def parse_quantity(text):
    """A Kubernetes quantity string as an exact Fraction."""
    s = str(text)
    m = _QTY.match(s)
    if not m:
        raise ValueError("bad quantity %r" % (text,))
    sign, number, suffix = m.groups()
    if suffix in _BINARY:
        mult = Fraction(_BINARY[suffix])
    elif suffix in _DECIMAL:
        mult = _DECIMAL[suffix]
    elif re.fullmatch(r"[eE][+-]?\d+", suffix):
        mult = Fraction(10) ** int(suffix[1:])
    else:
        raise ValueError("bad quantity suffix %r" % (text,))
    value = Fraction(number if not number.endswith(".") else number[:-1]) * mult
    return -value if sign == "-" else value


def milli_value(text):
    return math.ceil(parse_quantity(text) * 1000)


def int_value(text):
    return math.ceil(parse_quantity(text))


# ------------------------------------------------------------------ resources

DEFAULT_MILLI_CPU = 100
DEFAULT_MEMORY = 200 * 1024 * 1024


def is_scalar_resource(name):
    """Extended resources (a domain-prefixed name outside kubernetes.io), hugepages-*,
    attachable-volumes-*: the names upstream keeps in ScalarResources."""
    if name.startswith("hugepages-") or name.startswith("attachable-volumes-"):
        return True
    if "/" not in name:
        return False
    if "kubernetes.io/" in name:
        return False
    if name.startswith("requests."):
        return False
    return True


def _empty():
    return {"milli_cpu": 0, "memory": 0, "ephemeral_storage": 0, "allowed_pod_number": 0, "scalar": {}}


def resource_list(rl):
    """A ResourceList (requests, overhead, allocatable) as a plain resource dict."""
    r = _empty()
    for name, q in (rl or {}).items():
        if name == "cpu":
            r["milli_cpu"] += milli_value(q)
        elif name == "memory":
            r["memory"] += int_value(q)
        elif name == "ephemeral-storage":
            r["ephemeral_storage"] += int_value(q)
        elif name == "pods":
            r["allowed_pod_number"] += int_value(q)
        elif is_scalar_resource(name):
            r["scalar"][name] = r["scalar"].get(name, 0) + int_value(q)
    return r


def _add(a, b):
    out = _empty()
    for k in ("milli_cpu", "memory", "ephemeral_storage", "allowed_pod_number"):
        out[k] = a[k] + b[k]
    keys = set(a["scalar"]) | set(b["scalar"])
    out["scalar"] = {k: a["scalar"].get(k, 0) + b["scalar"].get(k, 0) for k in keys}
    return out


def _max(a, b):
    out = _empty()
    for k in ("milli_cpu", "memory", "ephemeral_storage", "allowed_pod_number"):
        out[k] = max(a[k], b[k])
    keys = set(a["scalar"]) | set(b["scalar"])
    out["scalar"] = {k: max(a["scalar"].get(k, 0), b["scalar"].get(k, 0)) for k in keys}
    return out


def _requests(c):
    return ((c.get("resources") or {}).get("requests")) or {}


def _nonzero(requests):
    cpu = milli_value(requests["cpu"]) if "cpu" in requests else DEFAULT_MILLI_CPU
    mem = int_value(requests["memory"]) if "memory" in requests else DEFAULT_MEMORY
    return cpu, mem


def pod_requests(pod):
    """(requested resource dict, non-zero milli cpu, non-zero memory) of one pod, as upstream:
    max(sum of containers, largest init container) per resource, plus spec.overhead."""
    spec = pod.get("spec") or {}
    total = _empty()
    nz_cpu = nz_mem = 0
    for c in spec.get("containers") or []:
        req = _requests(c)
        total = _add(total, resource_list(req))
        cpu, mem = _nonzero(req)
        nz_cpu += cpu
        nz_mem += mem
    for ic in spec.get("initContainers") or []:
        req = _requests(ic)
        total = _max(total, resource_list(req))
        cpu, mem = _nonzero(req)
        nz_cpu = max(nz_cpu, cpu)
        nz_mem = max(nz_mem, mem)
    overhead = spec.get("overhead") or {}
    if overhead:
        total = _add(total, resource_list(overhead))
        if "cpu" in overhead:
            nz_cpu += milli_value(overhead["cpu"])
        if "memory" in overhead:
            nz_mem += int_value(overhead["memory"])
    return total, nz_cpu, nz_mem


def sum_requests(pods):
    total = _empty()
    nz_cpu = nz_mem = 0
    for p in pods:
        r, c, m = pod_requests(p)
        total = _add(total, r)
        nz_cpu += c
        nz_mem += m
    total["scalar"] = {k: v for k, v in total["scalar"].items() if v}
    return total, nz_cpu, nz_mem


# ------------------------------------------------------------- pod properties


def host_ports(pod):
    """Set of (ip, protocol, port) a pod uses, defaults applied."""
    out = set()
    for c in (pod.get("spec") or {}).get("containers") or []:
        for p in c.get("ports") or []:
            hp = p.get("hostPort") or 0
            if hp > 0:
                out.add((p.get("hostIP") or "0.0.0.0", p.get("protocol") or "TCP", hp))
    return out


def has_pod_affinity(pod):
    aff = (pod.get("spec") or {}).get("affinity") or {}
    return bool(aff.get("podAffinity")) or bool(aff.get("podAntiAffinity"))


def has_required_anti_affinity(pod):
    aff = (pod.get("spec") or {}).get("affinity") or {}
    anti = aff.get("podAntiAffinity") or {}
    return bool(anti.get("requiredDuringSchedulingIgnoredDuringExecution"))


def pvc_keys(pod):
    ns = pod["metadata"].get("namespace", "")
    out = []
    for v in (pod.get("spec") or {}).get("volumes") or []:
        claim = (v.get("persistentVolumeClaim") or {}).get("claimName")
        if claim:
            out.append("%s/%s" % (ns, claim))
    return out


def uid(pod):
    return pod["metadata"]["uid"]


# ------------------------------------------------------------------ node tree


def zone_key(node):
    labels = (node.get("metadata") or {}).get("labels") or {}
    zone = labels[BETA_ZONE] if BETA_ZONE in labels else labels.get(TOPO_ZONE, "")
    region = labels[BETA_REGION] if BETA_REGION in labels else labels.get(TOPO_REGION, "")
    if region == "" and zone == "":
        return ""
    return region + ":\x00:" + zone


class RefNodeTree:
    """Upstream's NodeTree (zones in first-seen order, round robin next())."""

    def __init__(self):
        self.zones = []
        self.tree = {}  # zone -> [names]
        self.last = {}  # zone -> lastIndex
        self.zone_index = 0

    @property
    def num_nodes(self):
        return sum(len(v) for v in self.tree.values())

    def add(self, node):
        z, name = zone_key(node), node["metadata"]["name"]
        if z in self.tree:
            if name in self.tree[z]:
                return
            self.tree[z].append(name)
        else:
            self.zones.append(z)
            self.tree[z] = [name]
            self.last[z] = 0

    def remove(self, node):
        z, name = zone_key(node), node["metadata"]["name"]
        names = self.tree.get(z)
        if names is None or name not in names:
            return False
        names.remove(name)
        if not names:
            del self.tree[z]
            del self.last[z]
            self.zones.remove(z)
        return True

    def update(self, old, new):
        if old is not None and zone_key(old) == zone_key(new):
            return
        if old is not None:
            self.remove(old)
        self.add(new)

    def list(self):
        out, rank = [], 0
        while len(out) < self.num_nodes:
            for z in self.zones:
                if rank < len(self.tree[z]):
                    out.append(self.tree[z][rank])
            rank += 1
        return out

    def next(self):
        if not self.zones:
            return ""
        exhausted = 0
        while True:
            if self.zone_index >= len(self.zones):
                self.zone_index = 0
            z = self.zones[self.zone_index]
            self.zone_index += 1
            names = self.tree[z]
            if self.last[z] >= len(names):
                exhausted += 1
                if exhausted >= len(self.zones):
                    for k in self.last:
                        self.last[k] = 0
                    self.zone_index = 0
            else:
                name = names[self.last[z]]
                self.last[z] += 1
                return name


# ------------------------------------------------- plain views of cache objects


def plain(obj):
    """Mappings/sequences handed out by the cache as plain dicts/lists (for ==)."""
    if type(obj) is dict:
        try:  # fast path for plain JSON data
            return json.loads(json.dumps(obj))
        except (TypeError, ValueError):
            pass
    if isinstance(obj, Mapping):
        return {k: plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [plain(v) for v in obj]
    return obj


def resource(r):
    """A Resource as a plain dict; zero scalar entries are dropped (a leftover key with 0
    means the same as no key)."""
    return {
        "milli_cpu": r.milli_cpu,
        "memory": r.memory,
        "ephemeral_storage": r.ephemeral_storage,
        "allowed_pod_number": r.allowed_pod_number,
        "scalar": {k: v for k, v in dict(r.scalar_resources or {}).items() if v},
    }


PROBE_IPS = ("0.0.0.0", "127.0.0.1", "10.9.9.9")
PROBE_PROTOCOLS = ("TCP", "UDP", "SCTP")


def ports_view(used_ports, ports=(80, 8080)):
    """What HostPortInfo exposes: its length and check_conflict over a probe grid."""
    grid = {}
    for ip in PROBE_IPS:
        for proto in PROBE_PROTOCOLS:
            for p in sorted(set(ports)):
                grid[(ip, proto, p)] = bool(used_ports.check_conflict(ip, proto, p))
    return {"len": len(used_ports), "conflicts": grid}


def pod_uid_of_info(pi):
    return pi.pod["metadata"]["uid"]


def node_name_of_info(ni):
    return None if ni.node is None else ni.node["metadata"]["name"]


def info_view(ni, images="full", with_generation=True):
    """A NodeInfo as plain data. images: "full" (size and num_nodes), "sizes", or None."""
    pods = sorted(((pod_uid_of_info(pi), plain(pi.pod)) for pi in ni.pods), key=lambda t: t[0])
    port_numbers = {80, 8080}
    for _, p in pods:
        port_numbers |= {t[2] for t in host_ports(p)}
    view = {
        "node": None if ni.node is None else plain(ni.node),
        "pods": pods,
        "requested": resource(ni.requested),
        "non_zero": (ni.non_zero_requested.milli_cpu, ni.non_zero_requested.memory),
        "allocatable": resource(ni.allocatable) if ni.node is not None else None,
        "ports": ports_view(ni.used_ports, port_numbers),
        "affinity": sorted(pod_uid_of_info(pi) for pi in ni.pods_with_affinity),
        "anti": sorted(pod_uid_of_info(pi) for pi in ni.pods_with_required_anti_affinity),
        "pvc": {k: v for k, v in dict(ni.pvc_ref_counts).items() if v},
    }
    if images and ni.node is not None:
        if images == "full":
            view["images"] = {k: (s.size, s.num_nodes) for k, s in dict(ni.image_states).items()}
        else:
            view["images"] = {k: s.size for k, s in dict(ni.image_states).items()}
    if with_generation:
        view["generation"] = ni.generation
    return view


def dump_view(cache, pods_to_probe=()):
    """Everything observable about a cache through its public API, as plain data."""
    d = cache.dump()
    view = {
        "assumed": sorted(d.assumed_pods),
        "nodes": {name: info_view(ni) for name, ni in d.nodes.items()},
        "node_count": cache.node_count(),
        "pod_count": cache.pod_count(),
        "tree": list(cache.node_tree.list()),
        "tree_num": cache.node_tree.num_nodes,
        "zones": list(cache.node_tree.zones),
    }
    states = {}
    for p in pods_to_probe:
        st = cache.pod_state(p)
        states[uid(p)] = (st, cache.is_assumed_pod(p), plain(cache.get_pod(p)) if st else None)
    view["pod_states"] = states
    return view


# ---------------------------------------------------------- expected NodeInfo


def expected_info(node, pods, present_nodes=None, generation=None):
    """What a NodeInfo (dump copy) must hold for this node object (or None) and pods.

    present_nodes: every node object in the cache, to count images' num_nodes.
    """
    req, nz_cpu, nz_mem = sum_requests(pods)
    used = set()
    for p in pods:
        used |= host_ports(p)
    port_numbers = {80, 8080} | {t[2] for t in used}
    grid = {}
    for ip in PROBE_IPS:
        for proto in PROBE_PROTOCOLS:
            for pn in sorted(port_numbers):
                hit = False
                for (uip, uproto, up) in used:
                    if uproto == proto and up == pn and (ip == "0.0.0.0" or uip == "0.0.0.0" or uip == ip):
                        hit = True
                grid[(ip, proto, pn)] = hit
    view = {
        "node": None if node is None else plain(node),
        "pods": sorted(((uid(p), plain(p)) for p in pods), key=lambda t: t[0]),
        "requested": req,
        "non_zero": (nz_cpu, nz_mem),
        "allocatable": None if node is None else resource_list(node["status"].get("allocatable")),
        "ports": {"len": len(used), "conflicts": grid},
        "affinity": sorted(uid(p) for p in pods if has_pod_affinity(p)),
        "anti": sorted(uid(p) for p in pods if has_required_anti_affinity(p)),
        "pvc": dict(Counter(k for p in pods for k in pvc_keys(p))),
    }
    if node is not None:
        images = {}
        for img in node["status"].get("images") or []:
            for name in img["names"]:
                holders = 0
                for other in present_nodes or [node]:
                    if any(name in i["names"] for i in other["status"].get("images") or []):
                        holders += 1
                images.setdefault(name, (img["sizeBytes"], holders))
        view["images"] = images
    if generation is not None:
        view["generation"] = generation
    return view


def without(view, *keys):
    return {k: v for k, v in view.items() if k not in keys}


# ------------------------------------------------------------------ hypothesis

PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "schedcache-default")


def assert_refused(cache, call, exc_type, probe_pods=()):
    """`call()` must raise exc_type and leave every observable part of the cache as it was."""
    import pytest

    before = dump_view(cache, probe_pods)
    with pytest.raises(exc_type):
        call()
    after = dump_view(cache, probe_pods)
    assert after == before, "a refused operation changed the cache"


# ------------------------------------------------------------------ snapshots


def snapshot_names(snap):
    return [node_name_of_info(ni) for ni in snap.node_info_list]


def snapshot_view(snap, images="sizes"):
    """A Snapshot as plain data (num_nodes of images left out by default: a NodeInfo kept
    from an earlier update keeps the count of when it was copied)."""
    return {
        "map": {name: info_view(ni, images=images) for name, ni in snap.node_info_map.items()},
        "list": snapshot_names(snap),
        "affinity": [node_name_of_info(ni) for ni in snap.have_pods_with_affinity_node_info_list],
        "anti": [node_name_of_info(ni) for ni in snap.have_pods_with_required_anti_affinity_node_info_list],
        "pvc": sorted(snap.used_pvc_set),
    }


def assert_snapshot_consistent(cache, snap):
    """A snapshot just brought up to date must equal one built from scratch, hold exactly
    the cache's nodes that have a node object, in node_tree.list() order, with the derived
    lists and the PVC set matching its NodeInfos."""
    from schedcache import Snapshot

    fresh = Snapshot()
    cache.update_snapshot(fresh)
    got, want = snapshot_view(snap), snapshot_view(fresh)
    assert got == want, "incremental snapshot differs from one built from scratch"

    d = cache.dump()
    with_node = {n for n, ni in d.nodes.items() if ni.node is not None}
    assert set(snap.node_info_map) == with_node
    assert got["list"] == list(cache.node_tree.list())
    for name, ni in snap.node_info_map.items():
        assert node_name_of_info(ni) == name
        assert info_view(ni, images="sizes") == info_view(d.nodes[name], images="sizes")
    # derived lists: the nodes of node_info_list (in that order) having such pods
    assert got["affinity"] == [node_name_of_info(ni) for ni in snap.node_info_list if list(ni.pods_with_affinity)]
    assert got["anti"] == [
        node_name_of_info(ni) for ni in snap.node_info_list if list(ni.pods_with_required_anti_affinity)
    ]
    pvcs = set()
    for ni in snap.node_info_list:
        pvcs |= {k for k, v in dict(ni.pvc_ref_counts).items() if v}
    assert set(snap.used_pvc_set) == pvcs
    # the fresh snapshot counts images across all nodes at copy time
    for name, ni in fresh.node_info_map.items():
        assert info_view(ni)["images"] == info_view(d.nodes[name])["images"]
    for ni in snap.node_info_map.values():
        assert snap.generation >= ni.generation
    return fresh
