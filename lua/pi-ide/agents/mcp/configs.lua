-- Each MCP client's config entry for pi-ide-mcp, as :PiIde mcp shows and copies it.
local M = {}

-- JSON as people write it: two spaces per level, keys sorted, "/" as itself (Neovim 0.10's
-- encoder escapes it, which TOML would refuse).
local function json(value, indent)
  indent = indent or ""
  if type(value) ~= "table" then
    return (vim.json.encode(value):gsub("\\/", "/"))
  end
  local inner, items = indent .. "  ", {}
  if vim.islist(value) then
    if #value == 0 then
      return "[]"
    end
    for _, v in ipairs(value) do
      table.insert(items, inner .. json(v, inner))
    end
    return "[\n" .. table.concat(items, ",\n") .. "\n" .. indent .. "]"
  end
  local keys = vim.tbl_keys(value)
  table.sort(keys)
  for _, k in ipairs(keys) do
    table.insert(items, ("%s%s: %s"):format(inner, vim.json.encode(k), json(value[k], inner)))
  end
  return "{\n" .. table.concat(items, ",\n") .. "\n" .. indent .. "}"
end

--- Each MCP client's config for `program`: { name, where, text }, in the order :PiIde mcp
--- shows them.
function M.for_program(program)
  local server = { command = program, args = {} }
  return {
    -- Codex starts the program with a short environment: env_vars passes on what says which
    -- Neovim (the one whose terminal runs it) and where the records are.
    { name = "codex", where = "~/.codex/config.toml (reviews outlast its 60 s default)", text = table.concat({
      "[mcp_servers.nvim]",
      ("command = %s"):format(json(program)),
      "tool_timeout_sec = 3600",
      'env_vars = ["NVIM", "PI_IDE_NVIM", "XDG_RUNTIME_DIR"]',
    }, "\n") },
    { name = "gemini", where = "~/.gemini/settings.json", text = json({ mcpServers = { nvim = server } }) },
    { name = "opencode", where = "opencode.json", text = json({ mcp = { nvim = { type = "local", command = { program } } } }) },
    { name = "cursor", where = "~/.cursor/mcp.json", text = json({ mcpServers = { nvim = server } }) },
    { name = "claude-desktop", where = "claude_desktop_config.json", text = json({ mcpServers = { nvim = server } }) },
    { name = "mcporter", where = "config/mcporter.json (or --config FILE)", text = json({ mcpServers = { nvim = server } }) },
    { name = "pi", where = "~/.pi/agent/mcp.json, with `pi install npm:pi-mcp-adapter`", text = json({ mcpServers = { nvim = server } }) },
    { name = "pi-settings", where = "the mcp block of ~/.pi/agent/settings.json (an MCP loader extension)", text = json({ mcp = { nvim = server } }) },
  }
end

return M
