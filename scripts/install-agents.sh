#!/usr/bin/env bash
# Installs the real agent CLIs that remem's end-to-end tests drive (Claude Code, Codex CLI,
# OpenCode, Gemini CLI) with npm, into the project-local, gitignored prefix .agents-bin/.
# Idempotent: an agent whose package is already in place (and whose binary link resolves) is skipped
# without starting it. Needs only the npm
# registry (no other downloads). Versions are pinned to the ones the end-to-end tests were verified with;
# override with REMEM_AGENT_VERSIONS=latest.
#
#   bash scripts/install-agents.sh            # all four
#   bash scripts/install-agents.sh codex      # only some
#
# Afterwards the binaries are in .agents-bin/bin/{claude,codex,opencode,gemini} and the
# OpenCode plugin package in .agents-bin/opencode-deps/ (tests find both there).
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
PREFIX=${REMEM_AGENTS_PREFIX:-$ROOT/.agents-bin}
mkdir -p "$PREFIX/bin"

if ! command -v npm >/dev/null 2>&1; then
  echo "install-agents: npm not found; skipping the real-agent CLIs (their e2e tests will skip)" >&2
  exit 0
fi

# name  npm-package  pinned-version  binary
AGENTS="claude:@anthropic-ai/claude-code:2.1.197:claude
codex:@openai/codex:0.171.0:codex
opencode:opencode-ai:1.18.33:opencode
gemini:@google/gemini-cli:0.61.0:gemini"

want=" $* "
failed=0
while IFS=: read -r name pkg version bin; do
  if [ -n "${*:-}" ] && [[ "$want" != *" $name "* ]]; then continue; fi
  dest="$PREFIX/$name"
  link="$PREFIX/bin/$bin"
  manifest="$dest/lib/node_modules/$pkg/package.json"
  if [ -x "$link" ] && [ -f "$manifest" ]; then
    have=$(sed -n 's/^  "version": "\(.*\)",*$/\1/p' "$manifest" | head -1)
    echo "install-agents: $name already installed ($pkg $have)"
  else
    spec="$pkg@$version"
    [ "${REMEM_AGENT_VERSIONS:-}" = "latest" ] && spec="$pkg"
    echo "install-agents: npm install $spec -> $dest"
    if npm install --no-audit --no-fund --loglevel=error --prefix "$dest" -g "$spec"; then
      ln -sfn "$dest/bin/$bin" "$link"
    else
      echo "install-agents: FAILED to install $spec" >&2
      failed=1
      continue
    fi
  fi
  # OpenCode wants @opencode-ai/plugin in its config dir; pre-install it once so that an offline
  # start does not stall ~70 s trying to fetch it.
  if [ "$name" = opencode ]; then
    deps="$PREFIX/opencode-deps"
    ocv=$(sed -n 's/^  "version": "\(.*\)",*$/\1/p' "$dest/lib/node_modules/$pkg/package.json" 2>/dev/null | head -1)
    ocv=${ocv:-$version}
    if [ -f "$deps/node_modules/@opencode-ai/plugin/package.json" ] \
       && grep -q "\"version\": \"$ocv\"" "$deps/node_modules/@opencode-ai/plugin/package.json"; then
      echo "install-agents: @opencode-ai/plugin@$ocv already in $deps"
    else
      mkdir -p "$deps"
      [ -f "$deps/package.json" ] || echo '{"dependencies": {}}' > "$deps/package.json"
      (cd "$deps" && npm install --no-audit --no-fund --loglevel=error "@opencode-ai/plugin@$ocv") \
        || { echo "install-agents: FAILED to install @opencode-ai/plugin@$ocv" >&2; failed=1; }
    fi
  fi
done <<< "$AGENTS"
exit $failed
