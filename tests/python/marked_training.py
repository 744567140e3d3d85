"""A small PyTorch training run that marks its steps with the `sentinel` module and reports, as JSON
on stdout, its losses (float.hex) and what the module saw. Run by sentinel_module_test.py with and
without libsentinel.so preloaded."""
import json
import sys

import torch

import sentinel

STEPS = 6
torch.manual_seed(0)
torch.set_num_threads(1)
model = torch.nn.Sequential(torch.nn.Linear(128, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
data = torch.randn(64, 128)
target = torch.randint(0, 10, (64,))

report = {"loaded": sentinel.loaded(), "active": sentinel.active(), "stats_before": sentinel.stats(),
          "losses": [], "steps_seen": []}
for _ in range(STEPS):
    sentinel.step()
    optimizer.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(data), target)
    loss.backward()
    optimizer.step()
    report["losses"].append(float(loss).hex())
    report["steps_seen"].append(sentinel.stats().get("steps_detected"))
report["stats_after"] = sentinel.stats()
json.dump(report, sys.stdout)
