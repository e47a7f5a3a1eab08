-- Drawing a suggestion as ghost text: the first line inline at the cursor, the rest as virtual
-- lines below, and "[i/n]" when there are alternatives. Extmarks are updated in place (same
-- ids), so moving through typeahead never flickers; with Neovim's window-scoped namespaces
-- only the current window shows it.
local M = {}

M.ns = vim.api.nvim_create_namespace("pi-ide-suggestion")
local marks = { buf = nil, text = nil, counter = nil }

-- Tabs in virtual text would not line up; expand them for the column they start at.
local function expand_tabs(s, start_col, tabstop)
  if not s:find("\t", 1, true) then
    return s
  end
  local out, col = {}, start_col
  for ch in s:gmatch("[%z\1-\127\194-\244][\128-\191]*") do
    if ch == "\t" then
      local n = tabstop - (col % tabstop)
      table.insert(out, string.rep(" ", n))
      col = col + n
    else
      table.insert(out, ch)
      col = col + vim.fn.strdisplaywidth(ch)
    end
  end
  return table.concat(out)
end

function M.clear()
  if marks.buf and vim.api.nvim_buf_is_valid(marks.buf) then
    vim.api.nvim_buf_clear_namespace(marks.buf, M.ns, 0, -1)
  end
  marks = { buf = nil, text = nil, counter = nil }
end

local api = vim.api
local scoped_win -- Neovim 0.10: the window the namespace was added to

-- Shows M.ns only in `win`: nvim__ns_set from 0.11 on; 0.10 has nvim__win_add_ns/del_ns, whose
-- extmarks must say `scoped = true` (returned). Without either, every window shows it.
local function scope_to(win)
  if api.nvim__ns_set then
    pcall(api.nvim__ns_set, M.ns, { wins = { win } })
    return false
  end
  local add = api.nvim_win_add_ns or api.nvim__win_add_ns
  local del = api.nvim_win_remove_ns or api.nvim__win_del_ns
  if not (add and del) then
    return false
  end
  if scoped_win ~= win then
    if scoped_win and api.nvim_win_is_valid(scoped_win) then
      pcall(del, scoped_win, M.ns)
    end
    scoped_win = pcall(add, win, M.ns) and win or nil
  end
  return scoped_win ~= nil and add == api.nvim__win_add_ns
end

--- Draws `text` at (row, col) of the current window's buffer; `index`/`count` for the counter.
function M.draw(win, row, col, prefix, text, index, count)
  local buf = vim.api.nvim_win_get_buf(win)
  if marks.buf and marks.buf ~= buf then
    M.clear()
  end
  local scoped = scope_to(win) or nil
  local ts = vim.bo[buf].tabstop
  local lines = vim.split(text, "\n", { plain = true })
  local first = expand_tabs(lines[1], vim.fn.strdisplaywidth(prefix), ts)
  local virt_lines = {}
  for i = 2, #lines do
    table.insert(virt_lines, { { expand_tabs(lines[i], 0, ts), "PiIdeSuggestion" } })
  end
  marks.text = vim.api.nvim_buf_set_extmark(buf, M.ns, row, col, {
    id = marks.text,
    virt_text = { { first, "PiIdeSuggestion" } },
    virt_text_pos = "inline",
    virt_lines = #virt_lines > 0 and virt_lines or nil,
    hl_mode = "combine",
    priority = 1000,
    scoped = scoped,
  })
  if count > 1 then
    marks.counter = vim.api.nvim_buf_set_extmark(buf, M.ns, row, 0, {
      id = marks.counter,
      virt_text = { { (" [%d/%d]"):format(index, count), "PiIdeSuggestionCounter" } },
      virt_text_pos = "eol",
      priority = 1000,
      scoped = scoped,
    })
  elseif marks.counter then
    pcall(vim.api.nvim_buf_del_extmark, buf, M.ns, marks.counter)
    marks.counter = nil
  end
  marks.buf = buf
end

function M.define_highlights()
  vim.api.nvim_set_hl(0, "PiIdeSuggestion", { link = "Comment", default = true })
  vim.api.nvim_set_hl(0, "PiIdeSuggestionCounter", { link = "NonText", default = true })
end

return M
