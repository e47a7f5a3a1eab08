-- What the user is looking at, for the agent: the file, the cursor, the visual selection.
--
-- Per cursor move we only call the core's `selection_touch` (a lock and an atomic). The core
-- debounces and asks for the state once the cursor is still; then `compute()` reads it.
-- Leaving visual mode sends the selection at once, and keeps it as the state until the cursor
-- moves away (so `V…y`, then switching to the agent, is never lost). Only real files count:
-- terminals, help, quickfix and scratch buffers never replace the last file state.
local buffers = require("pi-ide.core.buffers")
local config = require("pi-ide.core.config")
local log = require("pi-ide.core.log")

local M = {}

local native
local augroup
local sticky -- { buf, row, col, tick, state }: a selection kept after leaving visual mode
local visual_entry_tick -- changedtick when visual mode began
local cached = { key = nil, text = nil } -- last extracted text, reused while nothing changed

-- Modes in which text is selected, and the region type getregion() takes for each: Visual
-- (v, V, CTRL-V) and Select (s, S, CTRL-S; snippets select their placeholders this way).
local SELECTING = { v = "v", V = "V", ["\22"] = "\22", s = "v", S = "V", ["\19"] = "\22" }

local is_file = buffers.is_file

local function line_at(buf, row0)
  return vim.api.nvim_buf_get_lines(buf, row0, row0 + 1, false)[1] or ""
end

-- Byte offset just past the character that starts at byte offset `col0`.
local function past_char(line, col0)
  if col0 >= #line then
    return #line
  end
  local b = line:byte(col0 + 1)
  local len = b >= 0xF0 and 4 or b >= 0xE0 and 3 or b >= 0xC0 and 2 or 1
  return math.min(col0 + len, #line)
end

local function utf16_len(line)
  return buffers.utf16_col(line, #line)
end

-- Percent-encoding a path is the costliest part of a state; remember the last one.
local url_of = { path = nil, url = nil }

local function file_fields(buf)
  local path = vim.api.nvim_buf_get_name(buf)
  if url_of.path ~= path then
    url_of.path, url_of.url = path, vim.uri_from_fname(path)
  end
  return path, url_of.url
end

-- The text of a region, at most selection_max_lines lines, reusing the last extraction.
local function region_text(buf, mode, sr, sc, er, ec)
  local max = config.values.selection_max_lines
  if er - sr + 1 > max then
    -- A block keeps its columns; other kinds run to the end of the last line kept.
    er, ec = sr + max - 1, mode == "\22" and ec or vim.v.maxcol
  end
  local key = table.concat({ buf, vim.api.nvim_buf_get_changedtick(buf), mode, sr, sc, er, ec }, ":")
  if cached.key ~= key then
    local ok, lines = pcall(vim.fn.getregion, { 0, sr, sc, 0 }, { 0, er, ec, 0 }, { type = mode })
    cached.key, cached.text = key, ok and table.concat(lines, "\n") or ""
  end
  return cached.text
end

--- The state for a region of the current buffer, given two (1-based line, 1-based byte column)
--- corners in any order.
local function region_state(buf, mode, l1, c1, l2, c2)
  if l1 > l2 or (l1 == l2 and c1 > c2) then
    l1, c1, l2, c2 = l2, c2, l1, c1
  end
  local first = line_at(buf, l1 - 1)
  local last = l1 == l2 and first or line_at(buf, l2 - 1)
  local start_char, end_char
  if mode == "V" then
    -- Whole lines: from the start of the first to the end of the last.
    start_char, end_char = 0, utf16_len(last)
  elseif mode == "v" then
    -- Inclusive of the character under the end: the end is just past it.
    start_char = buffers.utf16_col(first, math.min(c1 - 1, #first))
    end_char = buffers.utf16_col(last, past_char(last, math.min(c2 - 1, #last)))
  else
    -- Blockwise: the block's top-left and bottom-right corners (by byte column).
    local left, right = math.min(c1, c2), math.max(c1, c2)
    start_char = buffers.utf16_col(first, math.min(left - 1, #first))
    end_char = buffers.utf16_col(last, past_char(last, math.min(right - 1, #last)))
    c1, c2 = left, right
  end
  local path, url = file_fields(buf)
  return {
    text = region_text(buf, mode, l1, c1, l2, c2),
    filePath = path,
    fileUrl = url,
    selection = {
      start = { line = l1 - 1, character = start_char },
      ["end"] = { line = l2 - 1, character = end_char },
      isEmpty = false,
    },
  }
end

local function cursor_state(buf)
  local cur = vim.api.nvim_win_get_cursor(0)
  local char = buffers.utf16_col(line_at(buf, cur[1] - 1), cur[2])
  local path, url = file_fields(buf)
  local pos = { line = cur[1] - 1, character = char }
  return {
    text = "",
    filePath = path,
    fileUrl = url,
    selection = { start = pos, ["end"] = { line = pos.line, character = pos.character }, isEmpty = true },
  }
end

--- The current state, or nil when the current buffer is not a file (the last state stands).
function M.compute()
  local buf = vim.api.nvim_get_current_buf()
  if not is_file(buf) then
    return nil
  end
  local kind = SELECTING[vim.api.nvim_get_mode().mode:sub(1, 1)]
  if kind then
    sticky = nil
    local v, c = vim.fn.getpos("v"), vim.fn.getpos(".")
    return region_state(buf, kind, v[2], v[3], c[2], c[3])
  end
  if sticky then
    local cur = vim.api.nvim_win_get_cursor(0)
    if
      sticky.buf == buf
      and sticky.row == cur[1]
      and sticky.col == cur[2]
      and sticky.tick == vim.api.nvim_buf_get_changedtick(buf)
    then
      return sticky.state
    end
    sticky = nil
  end
  return cursor_state(buf)
end

local function send(state)
  if state and native then
    log.guard("sending the selection", native.selection_set)(state)
  end
end

--- Computes and sends the state now (the core drops it when nothing changed).
function M.flush()
  send(M.compute())
end

-- Whether a mark position (from getpos) points into the buffer.
local function valid_pos(buf, p)
  return p[2] >= 1 and p[3] >= 1 and p[2] <= vim.api.nvim_buf_line_count(buf)
end

-- Leaving Visual or Select mode: send the selection just made, and keep it until the cursor
-- moves. The '< and '> marks hold it; when they do not (never set in this buffer), the cursor
-- state follows instead.
local function on_visual_exit()
  local buf = vim.api.nvim_get_current_buf()
  local tick = vim.api.nvim_buf_get_changedtick(buf)
  local kind = SELECTING[vim.fn.visualmode()]
  local s, e = vim.fn.getpos("'<"), vim.fn.getpos("'>")
  if not is_file(buf) or tick ~= visual_entry_tick or not kind or not valid_pos(buf, s) or not valid_pos(buf, e) then
    -- An operator changed the text (d, c, >…), or there is no selection to speak of.
    native.selection_touch()
    return
  end
  local state = region_state(buf, kind, s[2], s[3], e[2], e[3])
  local cur = vim.api.nvim_win_get_cursor(0)
  sticky = { buf = buf, row = cur[1], col = cur[2], tick = tick, state = state }
  send(state)
end

-- Every mode change (:h mode()): only leaving the selecting modes for another kind of mode
-- is "leaving visual"; Visual <-> Select (a snippet's placeholder) is still selecting.
local function on_mode_changed()
  local old, new = vim.v.event.old_mode:sub(1, 1), vim.v.event.new_mode:sub(1, 1)
  if SELECTING[old] and not SELECTING[new] then
    on_visual_exit()
  else
    if SELECTING[new] and not SELECTING[old] then
      visual_entry_tick = vim.api.nvim_buf_get_changedtick(0)
    end
    native.selection_touch()
  end
end

function M.attach(mod)
  native = mod
  augroup = vim.api.nvim_create_augroup("PiIdeSelection", { clear = true })
  -- The core's function itself is the callback: no Lua frame in between on the hot path.
  vim.api.nvim_create_autocmd(
    { "CursorMoved", "CursorMovedI", "TextChanged", "TextChangedI", "BufEnter", "WinEnter" },
    { group = augroup, callback = native.selection_touch }
  )
  vim.api.nvim_create_autocmd("ModeChanged", { group = augroup, callback = log.guard("selection (ModeChanged)", on_mode_changed) })
end

function M.detach()
  if augroup then
    pcall(vim.api.nvim_del_augroup_by_id, augroup)
  end
  augroup, native, sticky = nil, nil, nil
  cached = { key = nil, text = nil }
end

return M
