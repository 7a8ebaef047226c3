#!/usr/bin/env bash
# The README's first command: installs what is missing, builds, and trains the demo model.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
scripts/build.sh
build/apps/demo_spirals
