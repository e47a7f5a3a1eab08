-- openFile: show a file (optionally selecting lines or text), or with makeFrontmost = false only
-- load it, leaving every window, cursor and mode exactly as they were.
local buffers = require("pi-ide.core.buffers")

local M = {}

-- A window to show files in: the current one if it is a normal file window, else the first such
-- window of this tab, else a new split (never a floating, terminal or scratch window).
local function target_window()
  local function usable(win)
    if vim.api.nvim_win_get_config(win).relative ~= "" then
      return false
    end
    return vim.bo[vim.api.nvim_win_get_buf(win)].buftype == ""
  end
  local cur = vim.api.nvim_get_current_win()
  if usable(cur) then
    return cur
  end
  for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
    if usable(win) then
      return win
    end
  end
  vim.cmd("aboveleft vsplit")
  return vim.api.nvim_get_current_win()
end

local function find_text(buf, text, from_row, from_col)
  local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  for row = from_row, #lines do
    local col = lines[row]:find(text, row == from_row and from_col or 1, true)
    if col then
      return row, col - 1
    end
  end
end

local function select(win, mode, r1, c1, r2, c2)
  vim.api.nvim_win_set_cursor(win, { r1, c1 })
  vim.cmd.normal({ mode, bang = true })
  vim.api.nvim_win_set_cursor(win, { r2, math.max(c2, 0) })
end

local function apply_selection(win, buf, args)
  local line_count = vim.api.nvim_buf_line_count(buf)
  local function clamp(n)
    return math.max(1, math.min(n, line_count))
  end
  if args.startText and args.startText ~= "" then
    local r1, c1 = find_text(buf, args.startText, clamp(args.startLine or 1), 1)
    if not r1 then
      return ('Opened file, but text "%s" not found'):format(args.startText)
    end
    if args.endText and args.endText ~= "" then
      local r2, c2 = find_text(buf, args.endText, r1, c1 + #args.startText + 1)
      if not r2 then
        vim.api.nvim_win_set_cursor(win, { r1, c1 })
        return ('Opened file and positioned at "%s" (end text "%s" not found)'):format(args.startText, args.endText)
      end
      local e = c2 + #args.endText - 1
      if args.selectToEndOfLine then
        e = math.max(#vim.api.nvim_buf_get_lines(buf, r2 - 1, r2, false)[1] - 1, 0)
      end
      select(win, "v", r1, c1, r2, e)
      return ('Opened file and selected text from "%s" to "%s"'):format(args.startText, args.endText)
    end
    select(win, "v", r1, c1, r1, c1 + #args.startText - 1)
    return ('Opened file and selected text "%s"'):format(args.startText)
  end
  if args.startLine then
    local s = clamp(args.startLine)
    local e = clamp(args.endLine or args.startLine)
    select(win, "V", s, 0, math.max(s, e), 0)
    return ("Opened file and selected lines %d to %d"):format(s, math.max(s, e))
  end
end

function M.openFile(args)
  local path = buffers.to_path(args.filePath)
  local buf = buffers.find(path)
  local stat = vim.uv.fs_stat(path)
  if not buf and not stat then
    error("File not found: " .. path, 0)
  end
  -- Editing a FIFO or a device would hang Neovim or fill its memory; a folder is not a file.
  if not buf and stat.type ~= "file" then
    error(("Not a regular file (%s): %s"):format(stat.type, path), 0)
  end
  if args.makeFrontmost == false then
    buf = buf or vim.fn.bufadd(path)
    vim.fn.bufload(buf)
    vim.bo[buf].buflisted = true
    return vim.json.encode({
      success = true,
      filePath = path,
      languageId = vim.bo[buf].filetype ~= "" and vim.bo[buf].filetype or "plaintext",
      lineCount = vim.api.nvim_buf_line_count(buf),
    })
  end
  local win = target_window()
  if args.preview then
    vim.cmd("pedit " .. vim.fn.fnameescape(path))
    return "Opened file: " .. path
  end
  vim.api.nvim_set_current_win(win)
  if buf then
    vim.api.nvim_win_set_buf(win, buf)
  else
    vim.cmd("edit " .. vim.fn.fnameescape(path))
    buf = vim.api.nvim_win_get_buf(win)
  end
  return apply_selection(win, buf, args) or ("Opened file: " .. path)
end

return M
