-- Kilo Code CLI: in the chat (:PiIde chat kilo) over ACP (`kilo acp`). An opencode fork, and
-- the same in the chat as opencode (agents/opencode.lua): it writes files itself after a
-- permission that carries the whole file, and as installed it never asks, so its entry's
-- environment makes it ask for every edit and command (KILO_PERMISSION; never answered
-- "always"). After an allow it also sends the write as fs/write_text_file, without waiting:
-- the chat answers that mirror of the allowed proposal at once and sets the text the user
-- accepted over its own write (src/chat/acp/).
--
-- Its TUI, like opencode's, reads Claude Code's lockfiles (~/.claude/ide) and honours
-- KILO_EDITOR_SSE_PORT: not launched from Neovim yet (no `cmd`), so not in :PiIde open.
local M = {
  name = "kilo",
  label = "Kilo Code",
  short = "Kilo",
  install = "npm i -g @kilocode/cli",
  acp = {
    cmd = { "kilo", "acp" },
    env = { KILO_PERMISSION = vim.json.encode({ edit = "ask", bash = "ask" }) },
    mcp = "stdio",
    writes_itself = true,
  },
}

return M
