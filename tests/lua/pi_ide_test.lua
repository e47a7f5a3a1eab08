-- What the Rust tests ask of Neovim, by name: `nvim.t("layout", json!([]))` runs
-- `require("pi_ide_test").layout()`. Lua the tests share lives here, as Lua, not in strings;
-- Lua one group of tests needs lives in pi_ide_test/<group>.lua (`nvim.t("review.pane_kinds",
-- json!([]))`), and tests/layout.rs fails on a Lua program of more than five lines in a string.
-- (tests/ is on the runtimepath of every Neovim the tests start; see testkit/src/nvim.rs.)
local M = {}

-- Notifications ------------------------------------------------------------------------------

local notes = {}

--- Records what vim.notify shows from now on.
function M.record_notify()
  notes = {}
  vim.notify = function(msg, level)
    table.insert(notes, { msg = tostring(msg), level = level })
  end
end

--- Every message shown so far.
function M.notes()
  return vim.tbl_map(function(n)
    return n.msg
  end, notes)
end

--- The messages shown at `level` (vim.log.levels).
function M.notes_at(level)
  return vim.tbl_map(function(n)
    return n.msg
  end, vim.tbl_filter(function(n)
    return n.level == level
  end, notes))
end

-- How many messages contain every one of the given pieces of text.
function M.count_notes(...)
  local pieces, n = { ... }, 0
  for _, note in ipairs(notes) do
    local all = true
    for _, p in ipairs(pieces) do
      all = all and note.msg:find(p, 1, true) ~= nil
    end
    n = n + (all and 1 or 0)
  end
  return n
end

--- Whether a message contains every one of the given pieces (for waiting on).
function M.has_note(...)
  return M.count_notes(...) > 0
end

--- Whether any message was shown at all.
function M.any_note()
  return #notes > 0
end

-- User events --------------------------------------------------------------------------------

local events = {}

--- Records these User events (with their data) from now on.
function M.record_events(...)
  events = {}
  for _, pattern in ipairs({ ... }) do
    vim.api.nvim_create_autocmd("User", {
      pattern = pattern,
      callback = function(a)
        table.insert(events, { event = pattern, data = a.data })
      end,
    })
  end
end

--- How many of `event` were recorded; with `key` and `value`, only those whose data has them.
function M.count_events(event, key, value)
  local n = 0
  for _, e in ipairs(events) do
    if e.event == event and (key == nil or (e.data or {})[key] == value) then
      n = n + 1
    end
  end
  return n
end

--- Whether `event` was recorded (for waiting on).
function M.has_event(event)
  return M.count_events(event) > 0
end

--- Every event recorded, in order, as { name, data }.
function M.recorded()
  return vim.tbl_map(function(e)
    return { e.event, e.data }
  end, events)
end

--- The data of the last `event` recorded.
function M.last_event(event)
  for i = #events, 1, -1 do
    if events[i].event == event then
      return events[i].data
    end
  end
end

-- Tools --------------------------------------------------------------------------------------

local replies = {}

--- Makes a tool park its calls: each call's reply function is kept, for `reply` to answer.
function M.park_calls(module, tool)
  replies = {}
  require(module)[tool] = function(_, reply)
    table.insert(replies, reply)
  end
end

function M.parked_calls()
  return #replies
end

--- Answers the i-th parked call with `value`; returns what reply returned (false: too late).
function M.reply(i, value)
  return replies[i](value)
end

-- Traffic to an agent -----------------------------------------------------------------------

--- The user types with an agent that reads nothing (Pi suspended with Ctrl-Z): each pause asks
--- for a suggestion of `size` bytes of context, and the next keystroke cancels it. Returns how
--- many were sent.
function M.typing_pauses(n, size)
  local requests, sent = require("pi-ide.core.requests"), 0
  local context = string.rep("x", size)
  for i = 1, n do
    local req = requests.send("getSuggestions", { cursorBefore = context .. i, cursorAfter = "" }, nil, function() end)
    if req then
      sent = sent + 1
      requests.cancel(req)
    end
  end
  return sent
end

--- `n` notifications of `size` bytes each to every agent; returns how many each got queued.
function M.notifications(n, size)
  local native, big, queued = require("pi-ide.core.native").get(), string.rep("z", size), 0
  for i = 1, n do
    queued = queued + native.notify_clients("at_mentioned", { filePath = big, lineStart = i })
  end
  return queued
end

--- How many reviews are on screen.
function M.reviews_shown()
  return (require("pi-ide.features.review").count())
end

-- Windows and buffers ------------------------------------------------------------------------

--- Where the user is: tab, window, cursor and the layout of windows.
function M.layout()
  return {
    vim.api.nvim_get_current_tabpage(),
    vim.api.nvim_get_current_win(),
    vim.api.nvim_win_get_cursor(0),
    vim.fn.winlayout(),
  }
end

--- How many windows are in diff mode.
function M.diff_windows()
  local n = 0
  for _, w in ipairs(vim.api.nvim_list_wins()) do
    if vim.wo[w].diff then
      n = n + 1
    end
  end
  return n
end

--- A review's pane: the buffer that b:pi_ide_review marks with `pane` ("proposal" or "disk"),
--- of the review named `tab_name` (any review's when nil).
local function pane(tab_name, which)
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    local r = vim.b[b].pi_ide_review
    if r and r.pane == which and (tab_name == nil or tab_name == vim.NIL or r.tab_name == tab_name) then
      return b
    end
  end
end

--- The lines of a review's pane (nil when there is none).
function M.pane_lines(tab_name, which)
  local b = pane(tab_name, which)
  return b and vim.api.nvim_buf_get_lines(b, 0, -1, false)
end

--- The names of a review's pane: { bufname(), full name } (nil when there is none).
function M.pane_name(tab_name, which)
  local b = pane(tab_name, which)
  return b and { vim.fn.bufname(b), vim.api.nvim_buf_get_name(b) }
end

--- The default tabline as drawn on the screen (its first row), trailing blanks cut.
function M.tabline()
  vim.cmd("redraw!")
  local cells = {}
  for c = 1, vim.o.columns do
    table.insert(cells, vim.fn.screenstring(1, c))
  end
  return (table.concat(cells):gsub("%s+$", ""))
end

-- The chat ------------------------------------------------------------------------------------

--- The chat's header (the conversation window's winbar); nil when the chat is not shown.
function M.chat_header()
  local w = vim.fn.win_findbuf(require("pi-ide.features.chat.view").buf())[1]
  return w and vim.wo[w].winbar
end

-- Suggestions ----------------------------------------------------------------------------------

--- The ghost text on screen: its inline part, then its virtual lines, joined with newlines;
--- nil when none is shown.
function M.ghost()
  local ns = require("pi-ide.features.suggest.ghost").ns
  for _, m in ipairs(vim.api.nvim_buf_get_extmarks(0, ns, 0, -1, { details = true })) do
    local d = m[4]
    if d.virt_text_pos == "inline" then
      local parts = { d.virt_text[1][1] }
      for _, l in ipairs(d.virt_lines or {}) do
        table.insert(parts, l[1][1])
      end
      return table.concat(parts, "\n")
    end
  end
end

return M
