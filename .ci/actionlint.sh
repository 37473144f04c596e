#!/usr/bin/env bash
# The GitHub Actions workflows (.github/workflows/*.yml) through actionlint: syntax, expressions, action inputs,
# permissions, and, where shellcheck is installed, shellcheck over every `run:` script.
# actionlint comes with .venv (requirements.lock); shellcheck from Debian's package, installed here if missing.
set -euo pipefail
cd "$(dirname "$0")/.."

actionlint=.venv/bin/actionlint
if [ ! -x "$actionlint" ]; then
  echo "no $actionlint: run make (requirements.lock pins it)" >&2
  exit 1
fi
if ! command -v shellcheck >/dev/null; then
  sudo=""
  if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
  { $sudo apt-get update -qq && $sudo apt-get install -y -qq shellcheck >/dev/null; } \
    || echo "warning: could not install shellcheck; the run: scripts are not checked" >&2
fi

"$actionlint" -version | head -n 1
if command -v shellcheck >/dev/null; then shellcheck --version | sed -n 2p; fi
"$actionlint" -no-color
echo "actionlint: $(find .github/workflows -name '*.yml' | wc -l) workflows, no problems"
