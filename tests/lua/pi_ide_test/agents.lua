-- What tests/agents/ asks of Neovim, by name (see tests/lua/pi_ide_test.lua).
local M = {}

-- Launched agents --------------------------------------------------------------------------

--- The agent `name`'s terminal: its buffer, job, and the window showing it in this tab (0:
--- none); nil when it has no buffer.
function M.terminal(name)
  local t = require("pi-ide.features.terminal")
  local buf = t.buffer(name)
  if not buf then
    return vim.NIL
  end
  local win = vim.fn.bufwinid(buf)
  return {
    buf = buf,
    job = vim.b[buf].terminal_job_id,
    win = win,
    current = vim.api.nvim_get_current_buf() == buf,
    running = t.is_running(name),
    width = win > 0 and vim.api.nvim_win_get_width(win) or 0,
    float = win > 0 and vim.api.nvim_win_get_config(win).relative ~= "",
  }
end

return M
