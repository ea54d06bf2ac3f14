#!/usr/bin/env bash
# Installs what the test layers need beyond npm packages: OpenSSH server (integration tests),
# Debian's PyTorch for CPU runs of the micro and profiler agent code, flake8, mypy and black for the Python
# side's static checks, Chromium (UI tests) and
# code-server (a real VS Code for the extension and UI tests), cached in the ignored .cache/ folder.
# Idempotent: a second run checks and returns in a second.
set -euo pipefail
cd "$(dirname "$0")/.."

CODE_SERVER_VERSION=4.100.3
CACHE="$PWD/.cache"
mkdir -p "$CACHE"

need_apt=()
[ -x /usr/sbin/sshd ] || need_apt+=(openssh-server openssh-client)
[ -x /usr/bin/chromium ] || need_apt+=(chromium)
command -v rg >/dev/null || need_apt+=(ripgrep)
dpkg -s libkrb5-dev >/dev/null 2>&1 || need_apt+=(libkrb5-dev)
/usr/bin/python3 -c 'import torch' >/dev/null 2>&1 || need_apt+=(python3-torch)
/usr/bin/python3 -c 'import flake8' >/dev/null 2>&1 || need_apt+=(python3-flake8)
/usr/bin/python3 -c 'import mypy' >/dev/null 2>&1 || need_apt+=(python3-mypy)
/usr/bin/python3 -c 'import black' >/dev/null 2>&1 || need_apt+=(black)
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then SUDO=sudo; else SUDO=; fi
  echo "setup: installing Debian packages: ${need_apt[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi

[ -d node_modules ] || PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund

# Complete only when its postinstall got to its last step (installing the built-in extensions'
# modules) and the version is the one asked for; anything less is removed and installed again.
code_server_pkg="$CACHE/code-server/node_modules/code-server"
code_server_ok() {
  [ -x "$CACHE/code-server/node_modules/.bin/code-server" ] &&
    [ -d "$code_server_pkg/lib/vscode/extensions/node_modules" ] &&
    [ "$(node -p "require('$code_server_pkg/package.json').version" 2>/dev/null)" = "$CODE_SERVER_VERSION" ]
}
if ! code_server_ok; then
  echo "setup: installing code-server $CODE_SERVER_VERSION into .cache/code-server (about a minute)"
  rm -rf "$CACHE/code-server"
  tmp="$CACHE/tmp"
  mkdir -p "$tmp/vscode-ripgrep-cache-1.15.11" "$tmp/rg/bin"
  # @vscode/ripgrep would download rg; it accepts a cached archive instead, made from Debian's rg.
  cp "$(command -v rg)" "$tmp/rg/bin/rg"
  tar -czf "$tmp/vscode-ripgrep-cache-1.15.11/ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz" -C "$tmp/rg/bin" rg
  TMPDIR="$tmp" npm_config_unsafe_perm=true npm_config_yes=true PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 \
    npm install --no-audit --no-fund --prefix "$CACHE/code-server" "code-server@$CODE_SERVER_VERSION" >"$CACHE/code-server-install.log" 2>&1 \
    || { tail -30 "$CACHE/code-server-install.log"; echo "setup: installing code-server failed; the full log is .cache/code-server-install.log" >&2; exit 1; }
  code_server_ok || { tail -30 "$CACHE/code-server-install.log"; echo "setup: code-server's postinstall did not finish (see .cache/code-server-install.log); it needs node 20, libkrb5-dev and a C++ toolchain" >&2; exit 1; }
fi
echo "setup: ready (sshd, chromium, python3-torch, flake8, mypy, black, code-server $CODE_SERVER_VERSION)"
