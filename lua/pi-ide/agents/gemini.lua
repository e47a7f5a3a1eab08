-- Gemini CLI. In the chat (:PiIde chat gemini), its ACP mode: it reads and writes files through
-- the chat (fs/read_text_file, fs/write_text_file), so its reviews are editable and what the
-- user accepts is what is written. MCP servers given in session/new start only in a folder it
-- trusts (~/.gemini/trustedFolders.json).
-- Its TUI, in its IDE mode (the companion protocol; src/agents/gemini.rs, companion/): MCP over
-- HTTP on a loopback port of its own, found through a discovery file in $TMPDIR/gemini/ide.
-- Served from the start with `gemini = true`, or once Neovim launches it. IDE mode must be on in the CLI
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

-- Its pid and the port of its server make the CLI pick this Neovim.
local companion = require("pi-ide.agents").companion({
  name = "gemini",
  title = "Gemini CLI's IDE mode",
  file = "discovery file",
  env = function(port)
    return { GEMINI_CLI_IDE_PID = tostring(vim.fn.getpid()), GEMINI_CLI_IDE_SERVER_PORT = port }
  end,
})
M.serve, M.connect, M.status_line, M.health = companion.serve, companion.connect, companion.status_line, companion.health

--- CI=true (or GITHUB_ACTIONS=true) makes its TUI headless: it exits 42 on a terminal's stdin.
function M.exit_hint(status)
  local var = vim.env.CI == "true" and "CI" or vim.env.GITHUB_ACTIONS == "true" and "GITHUB_ACTIONS" or nil
  if status == 42 and var then
    return ("%s=true makes it headless; :let $%s = '' and open it again"):format(var, var)
  end
end

return M
