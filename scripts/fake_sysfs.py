"""A faked two-node sysfs tree for SENTINEL_SYSFS_ROOT: node 0 with the CPUs, node 1 memory only (a CXL
expander or a KMEM-DAX node). Sentinel then plans and places for two nodes on a one-node machine; binds and
moves to node 1 fail and are counted (docs/topology.md). Used by tests and benches."""
import os


def fake_two_node_sysfs(root):
    node = os.path.join(root, "devices", "system", "node")
    for i in (0, 1):
        d = os.path.join(node, f"node{i}")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "meminfo"), "w") as f:
            f.write(f"Node {i} MemTotal:       8000000 kB\nNode {i} MemFree:        7000000 kB\n")
        with open(os.path.join(d, "cpulist"), "w") as f:
            f.write("0-1\n" if i == 0 else "\n")
        with open(os.path.join(d, "distance"), "w") as f:
            f.write("10 30\n" if i == 0 else "30 10\n")
    with open(os.path.join(node, "online"), "w") as f:
        f.write("0-1\n")
    return root
