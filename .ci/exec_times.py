"""Print the seconds each notebook took to execute in the last book build (from Sphinx's saved environment)."""

import pickle
from pathlib import Path

env = pickle.loads(Path("_build/.doctrees/environment.pickle").read_bytes())
rows = []
for docname, meta in sorted(env.nb_metadata.items()):
    data = meta.get("exec_data")
    if data:
        rows.append((docname, data.get("runtime") or 0.0, "ok" if data.get("succeeded") else "FAILED"))
width = max((len(name) for name, _, _ in rows), default=10)
print(f"{'notebook':<{width}}  seconds  status")
for name, seconds, status in rows:
    print(f"{name:<{width}}  {seconds:7.1f}  {status}")
print(f"{'total':<{width}}  {sum(s for _, s, _ in rows):7.1f}")
