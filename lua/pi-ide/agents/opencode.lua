-- opencode: in the chat (:PiIde chat opencode) over ACP (`opencode acp`), and in a terminal
-- (:PiIde open opencode), where its TUI meets us as Claude Code's IDE does.
--
-- In the chat it writes files itself after a permission that carries the whole file: as
-- installed it never asks, so its entry's environment makes it ask for every edit and command
-- (OPENCODE_PERMISSION; never answered "always"). After an allow it also sends the write as
-- fs/write_text_file, without waiting: the chat answers that mirror of the allowed proposal at
-- once and sets the text the user accepted over its own write (src/chat/acp/).
--
-- Its TUI reads Claude Code's lockfiles in ~/.claude/ide (never $CLAUDE_CONFIG_DIR) and sends
-- Claude Code's header with the lockfile's token: a launch from Neovim gets our lockfile there,
-- touched so that this Neovim is the newest of those serving the folder (it takes the one whose
-- workspace folder is nearest its cwd, then the newest). Never CLAUDE_CODE_SSE_PORT or
-- OPENCODE_EDITOR_SSE_PORT: given a port it connects without the token, and is refused. It
-- then shows this Neovim's selection. After a restart of our server it reads the lockfiles
-- again as it reconnects: nothing to tell. It has no diff tools: its edits in a terminal are
-- not reviewed.
local M = {
  name = "opencode",
  label = "opencode",
  short = "opencode",
  install = "npm i -g opencode-ai",
  cmd = { "opencode" },
  -- The core serves it as Claude Code (:checkhealth tells its client by name).
  served_as = "claude",
  acp = {
    cmd = { "opencode", "acp" },
    env = { OPENCODE_PERMISSION = vim.json.encode({ edit = "ask", bash = "ask" }) },
    mcp = "stdio",
    writes_itself = true,
  },
}

---@param launch PiIde.Launch
function M.connect(launch)
  local home = launch.env.HOME or vim.env.HOME
  if not home or home == "" then
    return nil, "no HOME: opencode finds its editor in ~/.claude/ide"
  end
  local dir = vim.fn.fnamemodify(vim.fs.joinpath(home, ".claude", "ide"), ":p")
  local side, err = require("pi-ide.agents").serve("claude", { lock_dir = dir })
  if not side then
    return nil, err
  end
  local now = os.time()
  vim.uv.fs_utime(side.lockfile, now, now)
  return {}
end

return M
