-- Qwen Code. Its TUI, in its IDE mode: Gemini CLI's companion protocol renamed (src/agents/qwen.rs,
-- companion/; the shared Lua side: agents.companion), found through a lock file in
-- ${QWEN_HOME:-~/.qwen}/ide that names our pid. Served from the start with `qwen = true`, or once
-- Neovim launches it. IDE mode must be on in it (/ide enable, or ide.enabled in its settings): we
-- never change its settings. Terminals Neovim starts are told our port, so the right Neovim wins
-- when two serve one folder. After a yes in its own terminal it writes its own proposal, not what
-- the user left in our review: that is said, and its write is a pending change.
--
-- In the chat (:PiIde chat qwen) over ACP (`qwen --acp`): its sessions start in mode `auto`,
-- which edits without asking, so the chat puts it in `default` (features/chat/acp/), where every
-- edit asks with a permission that carries the whole file, and qwen then has the client write it
-- (fs/write_text_file): the chat writes what the user accepted, a new file too (src/chat/acp/).
local M = {
  name = "qwen",
  label = "Qwen Code",
  short = "Qwen",
  install = "npm i -g @qwen-code/qwen-code",
  cmd = { "qwen" },
  health_title = "Qwen Code",
  writes_own_proposal = true,
  acp = {
    cmd = { "qwen", "--acp" },
    mcp = "stdio",
  },
}

local opt = require("pi-ide.core.options").opt

M.options = {
  -- Also serve Qwen Code's IDE mode (its TUI sends its edits to our review); off, nothing of it runs (no
  -- port, no lock file). It connects only with its IDE mode on (/ide enable). See |pi-ide-qwen|.
  -- @type boolean
  qwen = opt(false, { "boolean" }),
}

-- The port of our server picks this Neovim; with the workspace also given, its first-run
-- question does not offer to install a VS Code extension.
local companion = require("pi-ide.agents").companion({
  name = "qwen",
  title = "Qwen Code's IDE mode",
  file = "lock file",
  env = function(port)
    local folders = table.concat(require("pi-ide.core.workspace").folders(), ":")
    return { QWEN_CODE_IDE_SERVER_PORT = port, QWEN_CODE_IDE_WORKSPACE_PATH = folders }
  end,
})
M.serve, M.connect, M.status_line, M.health = companion.serve, companion.connect, companion.status_line, companion.health

--- :PiIde open qwen asks before each edit (a review in Neovim): its default mode, auto, edits
--- without asking. A mode the user chose stays theirs (given twice, or beside --yolo, qwen
--- refuses to start).
function M.launch_args(argv)
  for _, arg in ipairs(argv) do
    if arg == "-y" or arg == "--yolo" or arg:find("^%-%-approval%-mode") then
      return {}
    end
  end
  return { "--approval-mode", "default" }
end

return M
