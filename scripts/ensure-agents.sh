# Sourced by scripts/test: makes sure the agent CLIs the end-to-end tests drive are installed in
# .deps/agents (project local, from npm, pinned) and exports PI_IDE_AGENTS with their bin folder.
# A new release that changes the wire shows up as a failing test once the pin is moved.
#
# Pi runs on its own Node 22 (the npm package `node`; the system's Node may be older), with the
# pi-ide extension, which no registry here ships: it is copied from ../shared/pi-ide-extension/
# beside this checkout into .deps/agents/pi-ide-extension/<version>, where its imports (`ws`,
# `@earendil-works/*`) resolve from .deps/agents/node_modules. The tests find all of Pi from
# PI_IDE_AGENTS (tests/support/pi_cli.rs), relative to the folder above node_modules/.bin:
#   node_modules/node/bin/node                                 Node 22
#   node_modules/@earendil-works/pi-coding-agent/dist/cli.js   Pi
#   pi-ide-extension/<version>                                 the extension (`pi -e <folder>`)
agents_dir="$root/.deps/agents"
pi_extension_version=0.2.4
agents_pins=("@github/copilot@1.0.102" "@anthropic-ai/claude-code@2.1.330"
  "node@22.23.3" "@earendil-works/pi-coding-agent@0.87.1" "@earendil-works/pi-ai@0.87.1" "ws@8.23.0"
  "mcporter@0.9.0" "@agentclientprotocol/claude-agent-acp@0.101.0" "@google/gemini-cli@0.61.0"
  "@openai/codex@0.169.0" "@zed-industries/codex-acp@0.16.0" "opencode-ai@1.18.33"
  "@qwen-code/qwen-code@0.24.4" "cline@3.0.65" "@kilocode/cli@7.7.7")
# Pi's MCP adapter declares Pi's packages up to 0.86 as peers; it runs with the 0.87 pinned
# above, so it goes in on its own without npm's peer check (and is not saved: the next install
# of the pins would refuse the mismatch).
mcp_adapter_pin="pi-mcp-adapter@2.36.0"
agents_stamp="$agents_dir/.pins"
agents_want="${agents_pins[*]} $mcp_adapter_pin pi-ide-extension@$pi_extension_version"
pi_extension_dir="$agents_dir/pi-ide-extension/$pi_extension_version"
if [ "$(cat "$agents_stamp" 2>/dev/null)" != "$agents_want" ] \
  || [ ! -x "$agents_dir/node_modules/node/bin/node" ] || [ ! -f "$pi_extension_dir/index.ts" ] \
  || [ ! -f "$agents_dir/node_modules/pi-mcp-adapter/index.ts" ]; then
  pi_extension_src="$root/../shared/pi-ide-extension/$pi_extension_version"
  if [ ! -f "$pi_extension_src/index.ts" ]; then
    echo "pi-ide.nvim: the pi-ide extension $pi_extension_version was not found ($pi_extension_src/index.ts is missing); the real Pi tests need it" >&2
    exit 1
  fi
  echo "pi-ide.nvim: installing the agent CLIs into .deps/agents (once): ${agents_pins[*]}" >&2
  mkdir -p "$agents_dir"
  [ -f "$agents_dir/package.json" ] || echo '{"name":"pi-ide-test-agents","private":true}' >"$agents_dir/package.json"
  (cd "$agents_dir" && npm install --save-exact --no-audit --no-fund --loglevel=error "${agents_pins[@]}" >&2) \
    || { echo "pi-ide.nvim: could not install ${agents_pins[*]} with npm" >&2; exit 1; }
  (cd "$agents_dir" && npm install --no-save --legacy-peer-deps --no-audit --no-fund --loglevel=error "$mcp_adapter_pin" >&2) \
    || { echo "pi-ide.nvim: could not install $mcp_adapter_pin with npm" >&2; exit 1; }
  # Replaced only when it differs (a Pi of another checkout sharing .deps may be loading it),
  # and then by a rename of a full copy.
  if ! diff -rq "$pi_extension_src" "$pi_extension_dir" >/dev/null 2>&1; then
    mkdir -p "${pi_extension_dir%/*}" \
      && pi_extension_tmp=$(mktemp -d "${pi_extension_dir%/*}/.copy.XXXXXX") \
      && cp -R "$pi_extension_src/." "$pi_extension_tmp/" && chmod -R u+w,go+rX "$pi_extension_tmp" \
      && rm -rf "$pi_extension_dir" && mv "$pi_extension_tmp" "$pi_extension_dir" \
      || { echo "pi-ide.nvim: could not copy $pi_extension_src into $pi_extension_dir" >&2; exit 1; }
  fi
  echo "$agents_want" >"$agents_stamp"
fi
export PI_IDE_AGENTS="$agents_dir/node_modules/.bin"
