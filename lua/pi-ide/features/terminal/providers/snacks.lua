-- snacks.nvim's terminal (LazyVim has it): its window style, stacking and keys, our process.
local M = {}

function M.available()
  local ok, snacks = pcall(require, "snacks")
  return ok and type(snacks) == "table" and snacks.terminal ~= nil
end

function M.open(spec)
  if not M.available() then
    return nil, 'terminal.provider is "snacks" but snacks.nvim is not installed (use "auto" or "split")'
  end
  local ok, term = pcall(require("snacks").terminal.open, spec.cmd, {
    cwd = spec.cwd,
    env = spec.env,
    -- We close on exit ourselves (close_on_exit), and keep the window of an agent that failed.
    auto_close = false,
    start_insert = true,
    auto_insert = false,
    win = {
      position = require("pi-ide.core.config").values.terminal.side,
      width = require("pi-ide.features.terminal.providers.native").split_width(),
    },
  })
  if not ok or not term or not term:buf_valid() then
    return nil, "snacks.nvim could not open a terminal: " .. tostring(ok and "no buffer" or term)
  end
  return { buf = term.buf, term = term }
end

function M.window(h)
  local win = h.term.win
  if win and vim.api.nvim_win_is_valid(win) and vim.api.nvim_win_get_tabpage(win) == vim.api.nvim_get_current_tabpage() then
    return win
  end
end

function M.show(h)
  if not M.window(h) then
    -- Open in another tab page: snacks would leave it there (show() of a valid window only
    -- updates it); it comes here instead.
    if h.term:win_valid() then
      h.term:hide()
    end
    h.term:show()
  end
  local win = M.window(h)
  if win then
    vim.api.nvim_set_current_win(win)
  end
end

function M.hide(h)
  if M.window(h) then
    h.term:hide()
  end
end

function M.close(h)
  pcall(h.term.close, h.term)
  if vim.api.nvim_buf_is_valid(h.buf) then
    pcall(vim.api.nvim_buf_delete, h.buf, { force = true })
  end
end

return M
