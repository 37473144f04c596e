"""Copy Vega, Vega-Lite and Vega-Embed from the npm registry into ``book/_static/vega/``.

    python scripts/vendor_vega.py

The explorable figures (``attnlab.explorable``) load these three files from the built book, never from a CDN,
so that they work offline. The versions are ``attnlab.explorable.VENDORED`` (those that the pinned Altair
expects); this script installs exactly those with ``npm install --prefix`` into a temporary folder and copies
each minified build and its licence. Run it after changing the versions; the copies are committed.
"""

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from attnlab.explorable import VENDORED

VENDOR = Path(__file__).resolve().parent.parent / "book" / "_static" / "vega"


def main() -> None:
    with tempfile.TemporaryDirectory() as prefix:
        packages = [f"{package}@{version}" for package, version in VENDORED.items()]
        subprocess.run(["npm", "install", "--silent", "--no-save", "--no-package-lock", "--prefix", prefix,
                        *packages], check=True)
        shutil.rmtree(VENDOR, ignore_errors=True)
        VENDOR.mkdir(parents=True)
        for package, version in VENDORED.items():
            source = Path(prefix) / "node_modules" / package
            installed = json.loads((source / "package.json").read_text())["version"]
            if installed != version:
                sys.exit(f"npm installed {package} {installed}, expected {version}")
            shutil.copy(source / "build" / f"{package}.min.js", VENDOR / f"{package}-{version}.min.js")
            shutil.copy(source / "LICENSE", VENDOR / f"{package}-{version}.LICENSE")
    total = sum(p.stat().st_size for p in VENDOR.iterdir())
    print(f"{len(VENDORED)} packages copied to {VENDOR} ({total / 1e6:.2f} MB)")


if __name__ == "__main__":
    main()
