-- Gemini CLI. In the chat (:PiIde chat gemini), its ACP mode: it reads and writes files through
-- the chat (fs/read_text_file, fs/write_text_file), so its reviews are editable and what the
-- user accepts is what is written. MCP servers given in session/new start only in a folder it
-- trusts (~/.gemini/trustedFolders.json).
-- Its TUI, in its IDE mode (the companion protocol; src/agents/gemini/): MCP over HTTP on a
-- loopback port of its own, found through a discovery file in $TMPDIR/gemini/ide. Served from
-- the start with `gemini = true`, or once Neovim launches it. IDE mode must be on in the CLI
-- (/ide enable, or ide.enabled in its settings): we never change its settings. Its process walk
-- never reaches Neovim, so terminals Neovim starts are told our pid and port (the right Neovim
-- wins when two serve one folder).
local M = {
  name = "gemini",
  label = "Gemini CLI",
  short = "Gemini",
  install = "npm i -g @google/gemini-cli",
  cmd = { "gemini" },
  health_title = "Gemini CLI",
  acp = { cmd = { "gemini", "--acp" }, mcp = "stdio" },
}

local opt = require("pi-ide.core.options").opt

M.options = {
  -- Also serve Gemini CLI's IDE mode (its TUI sends its edits to our review); off, nothing of it runs (no
  -- port, no discovery file). The CLI connects only with its IDE mode on (/ide enable). See
  -- |pi-ide-gemini|.
  -- @type boolean
  gemini = opt(false, { "boolean" }),
}

--- The environment that makes the CLI pick this Neovim: our pid and the port of its server.
local function env_of(side)
  local port = side and side.socket and side.socket:match(":(%d+)$")
  return port and { GEMINI_CLI_IDE_PID = tostring(vim.fn.getpid()), GEMINI_CLI_IDE_SERVER_PORT = port } or nil
end

--- Neovim's own environment, which :terminal inherits, names the server while it runs.
local function export(env)
  vim.env.GEMINI_CLI_IDE_PID = env and env.GEMINI_CLI_IDE_PID or nil
  vim.env.GEMINI_CLI_IDE_SERVER_PORT = env and env.GEMINI_CLI_IDE_SERVER_PORT or nil
end

local exported
local function export_while_served()
  if exported then
    return
  end
  exported = vim.api.nvim_create_augroup("PiIdeGeminiEnv", { clear = true })
  vim.api.nvim_create_autocmd("User", {
    group = exported,
    pattern = "PiIdeStarted",
    callback = function()
      export(env_of(require("pi-ide.agents").served("gemini")))
    end,
  })
  vim.api.nvim_create_autocmd("User", {
    group = exported,
    pattern = "PiIdeStopped",
    callback = function()
      export(nil)
    end,
  })
end

local function options()
  return { socket_dir = vim.fn.stdpath("run") }
end

function M.serve(values)
  if not values.gemini then
    return nil
  end
  export_while_served()
  return options()
end

---@param launch PiIde.Launch
function M.connect(launch)
  local side, err = require("pi-ide.agents").serve("gemini", options())
  if not side then
    return nil, err
  end
  export_while_served()
  local env = env_of(side)
  export(env)
  return env or nil, not env and "the Gemini CLI side has no port" or nil
end

--- CI=true (or GITHUB_ACTIONS=true) makes its TUI headless: it exits 42 on a terminal's stdin.
function M.exit_hint(status)
  local var = vim.env.CI == "true" and "CI" or vim.env.GITHUB_ACTIONS == "true" and "GITHUB_ACTIONS" or nil
  if status == 42 and var then
    return ("%s=true makes it headless; :let $%s = '' and open it again"):format(var, var)
  end
end

function M.status_line(st)
  local side = (st.served or {}).gemini
  return side and ("  gemini: http://%s/mcp, discovery file %s"):format(side.socket, side.lockfile)
    or "  gemini: off (setup({ gemini = true }))"
end

---@param info table require("pi-ide").info()
function M.health(info)
  local h = vim.health
  local side = require("pi-ide.agents").check_served(info, "gemini", "Gemini CLI's IDE mode")
  if not side then
    return
  end
  h.ok(("Gemini CLI's IDE mode served: http://%s/mcp, discovery file %s"):format(side.socket, side.lockfile))
  h.info("the CLI connects with its IDE mode on (/ide enable in it, or ide.enabled in its settings)")
end

return M
