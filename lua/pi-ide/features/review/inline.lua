-- The inline layout (review.layout = "inline"): a review shown inside the file's own window, as
-- a render of its proposal buffer, which stays hidden and remains the one source of truth
-- (hunks.lua decides hunks there, as in two panes). The file's removed lines are highlighted in
-- place, the added ones drawn as virtual lines under them; the file's buffer is never modified.
-- The keys taken in that buffer and the winbar of the window showing it are given back when the
-- review ends, however it ends. What cannot be shown so goes to two panes (show.lua), said why.
local config = require("pi-ide.core.config")
local hunks = require("pi-ide.features.review.hunks")
local log = require("pi-ide.core.log")

local M = {}

local ns = vim.api.nvim_create_namespace("pi_ide_inline")

vim.api.nvim_set_hl(0, "PiIdeInlineRemoved", { link = "DiffDelete", default = true })
vim.api.nvim_set_hl(0, "PiIdeInlineAdded", { link = "DiffAdd", default = true })
-- A rejected hunk's proposed lines, still shown (accepting it again brings them back).
vim.api.nvim_set_hl(0, "PiIdeInlineDropped", { link = "Comment", default = true })

--- A change of more lines than this (added and removed) is shown in two panes: thousands of
--- virtual lines are hard to read, and slow to draw.
M.MAX_LINES = 3000

-- Files shown inline now: buffer -> review (one review of a file at a time).
local showing = {}

-- The window of the current tab showing `buf` (the current window first), if any.
local function file_window(buf)
  local cur = vim.api.nvim_get_current_win()
  if vim.api.nvim_win_get_buf(cur) == buf then
    return cur
  end
  for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
    if vim.api.nvim_win_get_buf(win) == buf and vim.api.nvim_win_get_config(win).relative == "" then
      return win
    end
  end
end

--- Why review `r` cannot be shown inline, as far as is known before its hunks are counted;
--- else nil and its file: { buf, win }.
function M.cannot(r)
  if r.new_file or r.old_error then
    return r.new_file and "a new file" or "the file cannot be read"
  elseif r.old_path ~= r.path then
    return "the agent names another old file"
  end
  local buf = require("pi-ide.core.buffers").find(r.path)
  local win = buf and vim.api.nvim_buf_is_loaded(buf) and file_window(buf)
  if not win then
    return "not open in this tab"
  elseif vim.bo[buf].modified then
    return "your buffer has unsaved edits"
  elseif showing[buf] and showing[buf] ~= r then
    return "another review is inline in it"
  end
  return nil, { buf = buf, win = win }
end

-- Whether the file's buffer holds exactly the text on disk the answer is computed from (it was
-- not left behind by a change on disk): every line, and the final newline. What is drawn is
-- then what is sent; a buffer that differs anywhere, even away from the hunks, would show
-- lines the agent never gets.
local function lines_up(r, buf)
  local disk = r.proposal_bufs[1]
  if vim.api.nvim_buf_line_count(buf) ~= vim.api.nvim_buf_line_count(disk) or vim.bo[buf].eol ~= vim.bo[disk].eol then
    return false
  end
  return vim.deep_equal(vim.api.nvim_buf_get_lines(buf, 0, -1, false), vim.api.nvim_buf_get_lines(disk, 0, -1, false))
end

--- Why review `r`, its hunks counted, cannot be shown inline now; else nil and its file.
function M.cannot_now(r)
  local why, file = M.cannot(r)
  if why then
    return why
  end
  local changed = (r.stats.added or 0) + (r.stats.removed or 0)
  if changed > M.MAX_LINES then
    return ("%d lines change (inline: up to %d)"):format(changed, M.MAX_LINES)
  elseif r.hunks.unavailable or not lines_up(r, file.buf) then
    return "your buffer differs from the disk"
  end
  return nil, file
end

-- Tabs as the window would show them (virtual text shows a tab as one cell).
local function expand_tabs(text, ts)
  local col = 0
  return (text:gsub("([^\t]*)\t", function(before)
    col = col + vim.fn.strdisplaywidth(before)
    local n = ts - col % ts
    col = col + n
    return before .. string.rep(" ", n)
  end))
end

-- How the file's window draws: its width, the columns left of the text, the tab stop.
local function look_of(v)
  local info = v.win and vim.api.nvim_win_is_valid(v.win) and vim.fn.getwininfo(v.win)[1] or {}
  local gutter = info.textoff or 0
  return { width = info.width or 80, gutter = gutter, ts = vim.bo[v.buf].tabstop, blank = string.rep(" ", gutter) }
end

-- The proposal's lines of a hunk kept: "+" in the number column, the color to the edge.
local function added(h, look)
  local prefix = look.gutter >= 2 and (string.rep(" ", look.gutter - 2) .. "+ ") or look.blank
  local out = {}
  for _, text in ipairs(h.proposal) do
    text = prefix .. expand_tabs(text, look.ts)
    local pad = math.max(look.width - vim.fn.strdisplaywidth(text), 0)
    table.insert(out, { { text .. string.rep(" ", pad), "PiIdeInlineAdded" } })
  end
  return out
end

-- The proposal's lines of a hunk rejected, dimmed and marked; a deletion rejected says so.
local function dropped(h, look)
  local mark = { "  ✗ rejected", "PiIdeHunkRejected" }
  local out = {}
  for i, text in ipairs(h.proposal) do
    table.insert(out, { { look.blank .. expand_tabs(text, look.ts), "PiIdeInlineDropped" }, i == 1 and mark or nil })
  end
  if #out == 0 then
    out = { { { look.blank .. "✗ rejected (the lines above stay)", "PiIdeHunkRejected" } } }
  end
  return out
end

-- Draws hunk `h` (in `state`) on the file's buffer: its removed rows highlighted unless it was
-- rejected, its proposed lines under them (above the first line for lines put before it).
-- Returns the marks' ids.
local function draw(buf, h, state, look)
  local first, count = h.left_row, h.left_count
  local ids = {}
  if state ~= "rejected" then
    for row = first, first + count - 1 do
      table.insert(ids, vim.api.nvim_buf_set_extmark(buf, ns, row, 0, { line_hl_group = "PiIdeInlineRemoved" }))
    end
  end
  local lines = state == "rejected" and dropped(h, look) or added(h, look)
  if #lines == 0 then
    return ids
  end
  local row = count > 0 and first + count - 1 or first - 1
  table.insert(ids, vim.api.nvim_buf_set_extmark(buf, ns, math.max(row, 0), 0, {
    virt_lines = lines,
    virt_lines_above = row < 0,
    virt_lines_leftcol = true,
  }))
  return ids
end

-- Lines drawn above the first line show only when the window is scrolled to them (Neovim's
-- "topfill"): when the window is at the top, it is scrolled so.
local function reveal_top(v, h)
  local win = v.win
  if h.left_row > 0 or h.left_count > 0 or not (win and vim.api.nvim_win_is_valid(win)) then
    return
  end
  vim.api.nvim_win_call(win, function()
    if vim.fn.line("w0") == 1 then
      vim.fn.winrestview({ topfill = #h.proposal })
    end
  end)
end

--- Draws review `r` on its file's buffer again, as its proposal holds it now: every hunk, or
--- only hunk `only` (one decided: a large review is not drawn whole for it).
function M.render(r, only)
  local v = r.ui and r.ui.inline
  if not (v and vim.api.nvim_buf_is_valid(v.buf) and vim.api.nvim_buf_is_valid(r.hunks.buf)) then
    return
  end
  if not (only and v.drawn) then
    vim.api.nvim_buf_clear_namespace(v.buf, ns, 0, -1)
    v.drawn = {}
  end
  local look = look_of(v)
  for _, h in ipairs(only and { only } or r.hunks.list) do
    for _, id in ipairs(v.drawn[h] or {}) do
      vim.api.nvim_buf_del_extmark(v.buf, ns, id)
    end
    v.drawn[h] = draw(v.buf, h, hunks.state(r.hunks, h), look)
    reveal_top(v, h)
  end
end

-- The keys the review takes in the file's buffer while it is up: the hunk keys, accept and
-- reject, over a map of the user's in that buffer (gitsigns' ]h: the hunks on screen are the
-- review's), which is kept aside and given back after, as the changes view does.
local function take_keys(r, v, view)
  local keys = config.values.review.keys
  local actions = require("pi-ide.features.review.hunk_keys").actions(r, view)
  local arming = require("pi-ide.features.review.arming")
  table.insert(actions, { keys.accept, function() if arming.allows(r) then view.accept(r) end end, "accept this proposal", true })
  table.insert(actions, { keys.reject, function() view.reject(r) end, "reject this proposal", true })
  local theirs = {}
  vim.api.nvim_buf_call(v.buf, function()
    for _, a in ipairs(actions) do
      local had = a[1] and vim.fn.maparg(a[1], "n", false, true)
      if had and had.buffer == 1 then
        v.saved[a[1]] = had
        table.insert(theirs, a[1])
      end
      if a[1] then
        vim.keymap.set("n", a[1], a[2], { buffer = v.buf, nowait = a[4], desc = "pi-ide: " .. a[3] })
        v.keys[a[1]] = true
      end
    end
  end)
  if #theirs > 0 then
    log.info("inline review of %s: %s of that buffer kept aside until it ends", r.path, table.concat(theirs, ", "))
  end
end

-- Takes back the keys the review set and gives back the user's (a key someone mapped over ours
-- meanwhile stays theirs).
local function give_back_keys(v)
  if not vim.api.nvim_buf_is_loaded(v.buf) then
    return
  end
  vim.api.nvim_buf_call(v.buf, function()
    for lhs in pairs(v.keys) do
      local m = vim.fn.maparg(lhs, "n", false, true)
      if m.buffer == 1 and (m.desc or ""):find("^pi%-ide: ") then
        pcall(vim.keymap.del, "n", lhs, { buffer = v.buf })
        if v.saved[lhs] then
          vim.fn.mapset("n", false, v.saved[lhs])
        end
      end
    end
  end)
end

--- Whether the review's key `lhs` works in its file's buffer (a map of the user's keeps it).
function M.has_key(r, lhs)
  local v = r.ui and r.ui.inline
  return v ~= nil and lhs ~= nil and v.keys[lhs] == true
end

-- The window's own winbar, given back (a winbar is remembered per buffer in a window: it is
-- given back before the file leaves the window, so that ours never comes back with it).
local function bar_off(v)
  if v.win and vim.api.nvim_win_is_valid(v.win) then
    vim.api.nvim_set_option_value("winbar", v.saved_bar, { scope = "local", win = v.win })
  end
  v.win = nil
end

--- Sets the review's winbar `text` on the window showing its file (winbar.lua).
function M.set_bar(r, text)
  local v = r.ui and r.ui.inline
  if v and v.win and vim.api.nvim_win_is_valid(v.win) then
    v.bar = text
    vim.api.nvim_set_option_value("winbar", text, { scope = "local", win = v.win })
  end
end

-- The winbar follows the file: on the window of this tab showing it, if one does.
local function follow(r, view)
  local v = r.ui and r.ui.inline
  if not v or (v.win and vim.api.nvim_win_is_valid(v.win) and vim.api.nvim_win_get_buf(v.win) == v.buf) then
    return
  end
  bar_off(v)
  v.win = file_window(v.buf)
  if v.win then
    M.render(r) -- the window's width may differ
    view.refresh()
  end
end

-- The view follows the file's window; the file leaving it takes the winbar along, and a split
-- of it does not copy ours. Anything that changes the file's text (typing, a reload, a
-- formatter) or unloads it ends the view at once: `moved(why)` goes on from there.
local function watch(r, v, view, moved)
  local function on(events, opts, fn)
    opts.group, opts.callback = v.group, log.guard("following an inline review", fn)
    vim.api.nvim_create_autocmd(events, opts)
  end
  on("WinLeave", {}, function() v.leaving_window = true end)
  on("WinEnter", {}, function() v.leaving_window = false end)
  on("BufLeave", { buffer = v.buf }, function()
    if not v.leaving_window and vim.api.nvim_get_current_win() == v.win then
      bar_off(v)
    end
  end)
  on("WinNew", {}, function()
    local win = vim.api.nvim_get_current_win()
    if v.bar and vim.api.nvim_get_option_value("winbar", { scope = "local", win = win }) == v.bar then
      vim.api.nvim_set_option_value("winbar", v.saved_bar, { scope = "local", win = win })
    end
  end)
  on({ "BufWinEnter", "TabEnter" }, {}, function() follow(r, view) end)
  -- Added lines span the window's width: drawn again when it changes.
  on({ "VimResized", "WinResized" }, {}, function()
    if vim.tbl_contains(vim.v.event.windows or { v.win }, v.win) then
      M.render(r)
    end
  end)
  on("WinClosed", {}, function() vim.schedule(function() follow(r, view) end) end)
  on("BufUnload", { buffer = v.buf }, function() moved("its buffer was unloaded") end)
  local function changed()
    vim.schedule(function()
      moved("the file was edited")
    end)
    return true
  end
  vim.api.nvim_buf_attach(v.buf, false, {
    on_lines = function()
      return v.closed or changed()
    end,
    on_reload = changed,
  })
end

--- Shows review `r` (its hunks counted, `file` from cannot_now) inline. `view`: the review's
--- view (init.lua); `moved(why)`: called once the view has ended while the review goes on
--- (the file was edited, or the user asked for two panes).
function M.show(r, file, view, moved)
  local v = { buf = file.buf, win = file.win, keys = {}, saved = {} }
  v.saved_bar = vim.api.nvim_get_option_value("winbar", { scope = "local", win = v.win })
  v.group = vim.api.nvim_create_augroup("PiIdeInline_" .. r.req, { clear = true })
  r.ui.inline = v
  showing[v.buf] = r
  -- Ends the view and hands the review on (init.lua's :PiIde panes calls it too).
  v.moved = function(why)
    if r.ui and r.ui.inline == v then
      M.close(r)
      moved(why)
    end
  end
  take_keys(r, v, view)
  M.render(r)
  watch(r, v, view, v.moved)
end

--- Takes the view away: marks, keys, winbar, watches. Safe to call twice, and from an
--- autocmd (nothing is closed or moved).
function M.close(r)
  local v = r.ui and r.ui.inline
  if not v then
    return
  end
  r.ui.inline = nil
  v.closed = true
  if showing[v.buf] == r then
    showing[v.buf] = nil
  end
  pcall(vim.api.nvim_del_augroup_by_id, v.group)
  if vim.api.nvim_buf_is_valid(v.buf) then
    vim.api.nvim_buf_clear_namespace(v.buf, ns, 0, -1)
    give_back_keys(v)
  end
  bar_off(v)
end

return M
