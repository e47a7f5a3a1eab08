-- Neovim's own :terminal, in a vertical split at the side of the screen or in a float. The
-- buffer outlives its window: hidden and shown again, the same session comes back.
local M = {}

local function cfg()
  return require("pi-ide.core.config").values.terminal
end

--- A size: a fraction of `total` below 1, else that many cells; never more than fits. (The
--- chat's windows are sized the same way.)
function M.size(v, total)
  local n = v < 1 and math.floor(total * v) or math.floor(v)
  return math.max(1, math.min(n, total - 2))
end
local size = M.size

-- An agent's TUI needs room: the split is never narrower than 40 columns (or half the screen).
local MIN_COLUMNS = 40

--- The split's width in columns, from `width` (default `terminal.width`).
function M.split_width(width)
  local cols = vim.o.columns
  return math.max(size(width or cfg().width, cols), math.min(MIN_COLUMNS, math.floor(cols / 2)))
end

local function open_window(buf, kind)
  if kind == "float" then
    local f = cfg().float
    local lines = vim.o.lines - vim.o.cmdheight - 1
    local w, h = size(f.width, vim.o.columns), size(f.height, lines)
    return vim.api.nvim_open_win(buf, true, {
      relative = "editor",
      width = w,
      height = h,
      row = math.floor((lines - h) / 2),
      col = math.floor((vim.o.columns - w) / 2),
      border = f.border,
      style = "minimal",
    })
  end
  -- win = -1: a split of the whole screen (like :botright vsplit), not of the current window.
  local win = vim.api.nvim_open_win(buf, true, { split = cfg().side, win = -1, width = M.split_width() })
  for name, value in pairs({ number = false, relativenumber = false, signcolumn = "no", winfixwidth = true, spell = false }) do
    vim.api.nvim_set_option_value(name, value, { win = win, scope = "local" })
  end
  return win
end

-- jobstart(term = true) from 0.11 on; termopen before (deprecated there).
local function start_job(cmd, opts)
  if vim.fn.has("nvim-0.11") == 1 then
    return vim.fn.jobstart(cmd, vim.tbl_extend("force", opts, { term = true }))
  end
  return vim.fn.termopen(cmd, opts)
end

--- Starts `spec.cmd` in a new terminal buffer shown in a new window. Returns the handle, or
--- nil and why.
function M.open(spec, kind)
  local buf = vim.api.nvim_create_buf(false, true)
  -- A window may not open (no room: E36; the command-line window: E11).
  local opened, win = pcall(open_window, buf, kind)
  local started, job = false, win
  if opened then
    started, job = pcall(vim.api.nvim_win_call, win, function()
      return start_job(spec.cmd, { cwd = spec.cwd, env = spec.env })
    end)
  end
  if not started or job <= 0 then
    if opened then
      pcall(vim.api.nvim_win_close, win, true)
    end
    pcall(vim.api.nvim_buf_delete, buf, { force = true })
    -- jobstart's error, not the traceback that comes with it.
    return nil, started and ("cannot run %s"):format(spec.cmd[1]) or tostring(job):match("[^\n]*")
  end
  vim.bo[buf].bufhidden = "hide"
  return { buf = buf, kind = kind }
end

--- The window showing the terminal in this tab page, if any.
function M.window(h)
  for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
    if vim.api.nvim_win_get_buf(win) == h.buf then
      return win
    end
  end
end

--- Shows the terminal (in a new window when it is hidden) and puts the cursor in it.
function M.show(h)
  local win = M.window(h)
  if win then
    vim.api.nvim_set_current_win(win)
    return
  end
  local ok, err = pcall(open_window, h.buf, h.kind)
  if not ok then
    require("pi-ide.core.log").notify("cannot open the agent's window: " .. tostring(err), vim.log.levels.ERROR)
  end
end

--- Closes the terminal's windows in this tab page; the buffer and its process go on. The last
--- window of a tab page cannot close: it shows the alternate (or an empty) buffer instead.
function M.hide(h)
  for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
    if vim.api.nvim_win_get_buf(win) == h.buf then
      if not pcall(vim.api.nvim_win_hide, win) then
        local alt = vim.fn.bufnr("#")
        local other = alt > 0 and alt ~= h.buf and vim.api.nvim_buf_is_valid(alt) and alt or vim.api.nvim_create_buf(true, false)
        vim.api.nvim_win_set_buf(win, other)
      end
    end
  end
end

--- Closes every window showing it and wipes the buffer (the process is gone).
function M.close(h)
  M.hide(h)
  if vim.api.nvim_buf_is_valid(h.buf) then
    pcall(vim.api.nvim_buf_delete, h.buf, { force = true })
  end
end

return M
