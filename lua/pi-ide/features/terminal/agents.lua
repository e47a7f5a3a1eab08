-- The agents :PiIde open can start: what each is called and how to install it. How each is run
-- (cmd, env) is the user's (config terminal.agents); what connects it is connect.lua.
local M = {}

M.names = { "pi", "claude", "copilot" }

local known = {
  pi = {
    label = "Pi",
    install = "npm i -g @earendil-works/pi-coding-agent, then: pi install npm:@ldelossa/pi-ide",
  },
  claude = { label = "Claude Code", install = "npm i -g @anthropic-ai/claude-code" },
  copilot = { label = "The Copilot CLI", install = "npm i -g @github/copilot" },
}

function M.known(name)
  return known[name] ~= nil
end

function M.label(name)
  return known[name].label
end

--- The argv to run `name` with `args` added, and its extra environment.
---@return string[] cmd, table<string, string> env
function M.command(name, args)
  local cfg = require("pi-ide.core.config").values.terminal.agents[name] or {}
  local default = require("pi-ide.core.config").defaults.terminal.agents[name]
  local cmd = vim.list_extend(vim.deepcopy(cfg.cmd or default.cmd), args or {})
  return cmd, vim.deepcopy(cfg.env or {})
end

--- Nil when the program can be run, else the message saying what to install.
function M.missing(name, cmd)
  if vim.fn.executable(cmd[1]) == 1 then
    return nil
  end
  return ("%s not found on PATH; install it: %s"):format(cmd[1], known[name].install)
end

return M
