# Sourced by scripts/test: makes sure the agent CLIs the end-to-end tests drive are installed in
# .deps/agents (project local, from npm, pinned) and exports PI_IDE_AGENTS with their bin folder.
# A new release that changes the wire shows up as a failing test once the pin is moved.
agents_dir="$root/.deps/agents"
agents_pins=("@github/copilot@1.0.102" "@anthropic-ai/claude-code@2.1.330")
agents_stamp="$agents_dir/.pins"
if [ "$(cat "$agents_stamp" 2>/dev/null)" != "${agents_pins[*]}" ]; then
  echo "pi-ide.nvim: installing the agent CLIs into .deps/agents (once): ${agents_pins[*]}" >&2
  mkdir -p "$agents_dir"
  [ -f "$agents_dir/package.json" ] || echo '{"name":"pi-ide-test-agents","private":true}' >"$agents_dir/package.json"
  (cd "$agents_dir" && npm install --no-audit --no-fund --loglevel=error "${agents_pins[@]}" >&2) \
    || { echo "pi-ide.nvim: could not install ${agents_pins[*]} with npm" >&2; exit 1; }
  echo "${agents_pins[*]}" >"$agents_stamp"
fi
export PI_IDE_AGENTS="$agents_dir/node_modules/.bin"
