-- The side-by-side run's probes (compare_bench.rs), loaded with dofile into each Neovim: they
-- know nothing of the plugin under test, so the three are measured by the same code.
local M = {}
local hr = vim.uv and vim.uv.hrtime or vim.loop.hrtime

--- `n` cursor moves in the current buffer (200 lines or more), each with its CursorMoved and
--- every autocmd that runs (compare_bench times them by the main thread's CPU, less a Neovim
--- without the plugin).
function M.cursor_moved(n)
  for i = 1, n do
    vim.api.nvim_win_set_cursor(0, { (i % 200) + 1, i % 30 })
    vim.api.nvim_exec_autocmds("CursorMoved", {})
  end
end

-- Windows of the current tab with 'diff' set.
local function diff_wins()
  local wins = {}
  for _, w in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
    if vim.wo[w].diff then
      table.insert(wins, w)
    end
  end
  return wins
end

--- A timer every 2 ms (Vim's, so that it may look at windows): keeps the longest gap between
--- its ticks in __cmp.max (ns) and, once armed, the time both panes were first in diff mode with
--- the diff computed (what the first redraw would do) in __cmp.opened.
function M.watch()
  _G.__cmp = { max = 0, last = hr(), opened = 0, armed = false }
  __cmp.timer = vim.fn.timer_start(2, function()
    local now = hr()
    __cmp.max = math.max(__cmp.max, now - __cmp.last)
    __cmp.last = now
    if __cmp.armed and __cmp.opened == 0 then
      local wins = diff_wins()
      if #wins >= 2 then
        vim.api.nvim_win_call(wins[1], function()
          vim.fn.diff_hlID(1, 1)
        end)
        __cmp.opened = hr()
      end
    end
  end, { ["repeat"] = -1 })
end

function M.stop()
  vim.fn.timer_stop(__cmp.timer)
end

function M.arm()
  __cmp.opened, __cmp.max, __cmp.last, __cmp.armed = 0, 0, hr(), true
end

--- True once no window anywhere is in diff mode; the file's buffer is then wiped, so that each
--- review reads it from disk as the first one does.
function M.closed(path)
  for _, w in ipairs(vim.api.nvim_list_wins()) do
    if vim.wo[w].diff then
      return false
    end
  end
  __cmp.armed = false
  local b = vim.fn.bufnr(path)
  if b > 0 and not vim.bo[b].modified then
    if vim.api.nvim_get_current_buf() == b then
      vim.cmd("enew")
    end
    pcall(vim.api.nvim_buf_delete, b, { force = true })
  end
  return true
end

return M
