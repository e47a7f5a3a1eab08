-- The review's winbars: on the proposal, the file, what changed, where this review stands among
-- the open ones and the keys; on the left, the file as it is on disk. Everything the two panes
-- cannot show (a whole file's line breaks changing, the final newline, the byte order mark, a
-- write to another path than the agent named as the old file, where a link leads) is said here.
local config = require("pi-ide.core.config")

local M = {}

local function escape(s)
  return (s:gsub("%%", "%%%%"))
end

local function key_label(lhs)
  local leader = vim.g.mapleader or "\\"
  return (lhs:gsub("<[Ll]eader>", leader == " " and "<Space>" or leader))
end

function M.display_name(path)
  return vim.fn.fnamemodify(path, ":~:.")
end

--- The file's name as a review says it: with where it really leads when a link is on the way
--- (the core's `real_path` and `linked`), "notes.txt → ~/dotfiles/profile.sh".
function M.target_name(path, real_path, linked)
  local name = M.display_name(path)
  return (linked and real_path) and (name .. " → " .. M.display_name(real_path)) or name
end

--- Whether the file a write to `path` lands in (its real target, when the core told it) is
--- outside the workspace.
function M.outside(path, real_path)
  return not require("pi-ide.core.workspace").contains(real_path or path)
end

-- The review's file, as its bar begins: a write outside the workspace says so before the name,
-- so that the warning is the part a narrow pane never cuts (the bar is cut after the name).
local function name_of(r)
  if r.outside == nil then
    r.outside = M.outside(r.path, r.real_path)
  end
  return (r.outside and "⚠ outside the workspace: " or "") .. M.target_name(r.path, r.real_path, r.linked)
end

-- The key hints that fit whole after `head` in the window, in their order (a hint cut to "<t"
-- helps no one). When room is short the accept key goes first, then the reject hint; ":w accept"
-- stays longest.
local function fit_hints(win, head, hints)
  if not vim.api.nvim_win_is_valid(win) then
    return hints
  end
  local room = vim.api.nvim_win_get_width(win) - vim.fn.strdisplaywidth(head) - #"  ·  "
  local width = function(list)
    return vim.fn.strdisplaywidth(table.concat(list, "  "))
  end
  while #hints > 0 and width(hints) > room do
    table.remove(hints, math.min(2, #hints))
  end
  return hints
end

-- When the bar is wider than its window, Neovim cuts it from the left, and the file's name
-- goes first: cut right after the name instead.
local function keep_name(win, bar, text, name)
  local fits = not vim.api.nvim_win_is_valid(win) or vim.fn.strdisplaywidth(text) <= vim.api.nvim_win_get_width(win)
  if fits then
    return bar
  end
  local escaped = escape(name)
  local at = bar:find(escaped, 1, true)
  return at and (bar:sub(1, at + #escaped - 1) .. "%<" .. bar:sub(at + #escaped)) or bar
end

-- What changed: "2 of 3 hunks kept" once a hunk was decided, else "+3 −1", "3 hunks".
local function counts_of(r)
  local kept, total = require("pi-ide.features.review.hunks").counts(r)
  if kept then
    return { ("%d of %d hunk%s kept"):format(kept, total, total == 1 and "" or "s") }
  elseif r.stats then
    return {
      ("+%d −%d"):format(r.stats.added, r.stats.removed),
      ("%d hunk%s"):format(#r.stats.hunks, #r.stats.hunks == 1 and "" or "s"),
    }
  end
  return { "…" } -- the core is still counting
end

-- The warnings of review `r` (the text's form, the file changed on disk since; outside the
-- workspace is said with its name), and where it stands among the open ones: appended to
-- `parts`.
local function add_warnings(parts, r, i, n)
  for _, change in ipairs(r.format_changes or {}) do
    table.insert(parts, "⚠ " .. change)
  end
  if n > 1 then
    table.insert(parts, ("%d of %d"):format(i, n))
  end
  if r.disk_changed then
    table.insert(parts, "⚠ changed on disk since it opened: cannot be accepted")
  end
end

local function right_bar(r, i, n)
  local keys = config.values.review.keys
  local parts = { name_of(r) }
  local counts = counts_of(r)
  vim.list_extend(parts, counts)
  add_warnings(parts, r, i, n)
  local writer_at
  if r.agent_writes then
    -- Its agent writes its own proposal after an accept; the text accepted is set over it.
    table.insert(parts, ("%s writes its proposal, then your text over it"):format(r.writer or "the agent"))
    writer_at = #parts
  end
  if r.user_edits then
    table.insert(parts, "⚠ your buffer has unsaved edits (kept; this diff is against the disk)" .. (r.overlap_note or ""))
  end
  local hints = { ":w accept" }
  if keys.accept then
    table.insert(hints, key_label(keys.accept) .. " accept")
  end
  table.insert(hints, keys.reject and (key_label(keys.reject) .. " reject") or ":q reject")
  local head = " " .. table.concat(parts, "  ·  ")
  local win = r.ui.right_win
  if writer_at and vim.api.nvim_win_is_valid(win) and vim.fn.strdisplaywidth(head) > vim.api.nvim_win_get_width(win) - 12 then
    -- A narrow pane: the short form, and no counts (the panes show the changes), so that
    -- ":w accept" keeps its room.
    parts[writer_at] = "agent+you"
    parts = vim.list_slice(parts, #counts + 2)
    table.insert(parts, 1, name_of(r))
    head = " " .. table.concat(parts, "  ·  ")
  end
  local shown = fit_hints(win, head, hints)
  local bar = escape(head) .. (#shown > 0 and ("  ·  " .. escape(table.concat(shown, "  "))) or "")
  return keep_name(r.ui.right_win, bar, head, parts[1])
end

local function left_bar(r)
  local state = r.old_error and ("⚠ cannot read: " .. r.old_error) or r.new_file and "new file" or "on disk"
  local name = name_of(r)
  local text = name .. "  ·  " .. state
  if r.old_path ~= r.path then
    -- The agent named another file as the old one; what is written, and shown here, is this.
    text = text .. "  ·  the agent's old_file_path: " .. M.display_name(r.old_path)
  end
  -- Which agent asks (and its session's title), when there is room for it.
  local asker = require("pi-ide.core.clients").label_of(r.client)
  local win = r.ui.left_win
  local room = vim.api.nvim_win_is_valid(win) and vim.api.nvim_win_get_width(win) or math.huge
  if asker and vim.fn.strdisplaywidth(" " .. text .. "  ·  asked by " .. asker) <= room then
    text = text .. "  ·  asked by " .. asker
  end
  return keep_name(win, " " .. escape(text), " " .. text, name)
end

-- The inline view's bar, on the file's window: the same counts and warnings, then the keys that
-- work in the file (a key the user mapped there stays theirs) and where editing is. When room
-- is short, the hunk keys go first, then "+3 −1", then the editing hint.
local function inline_bar(r, i, n)
  local keys = config.values.review.keys
  local inline = require("pi-ide.features.review.inline")
  local counts = counts_of(r)
  local function hint(lhs, what)
    return inline.has_key(r, lhs) and (key_label(lhs) .. " " .. what) or nil
  end
  local hints = { hint(keys.accept, "accept") or ":PiIde accept", hint(keys.reject, "reject") or ":PiIde reject" }
  local extra = { "edit: :PiIde panes", hint(keys.next_hunk, "next hunk"), hint(keys.reject_hunk, "reject hunk") }
  vim.list_extend(hints, extra, 1, 3)
  local win = r.ui.inline.win
  local room = vim.api.nvim_win_get_width(win)
  local function text()
    local parts = { name_of(r) }
    vim.list_extend(parts, counts)
    add_warnings(parts, r, i, n)
    return " " .. table.concat(parts, "  ·  ") .. "  ·  " .. table.concat(hints, "  ")
  end
  while vim.fn.strdisplaywidth(text()) > room and (#hints > 3 or #counts > 1) do
    if #hints > 3 then
      table.remove(hints)
    else
      table.remove(counts, 1)
    end
  end
  if vim.fn.strdisplaywidth(text()) > room then
    table.remove(hints)
  end
  return keep_name(win, escape(text()), text(), name_of(r))
end

--- Sets the winbars of every review on screen; `reviews` in their order.
function M.refresh(reviews)
  for i, r in ipairs(reviews) do
    if r.ui and r.ui.inline then
      if r.ui.inline.win and vim.api.nvim_win_is_valid(r.ui.inline.win) then
        require("pi-ide.features.review.inline").set_bar(r, inline_bar(r, i, #reviews))
      end
    elseif r.ui and r.ui.right_win then
      if vim.api.nvim_win_is_valid(r.ui.right_win) then
        vim.wo[r.ui.right_win].winbar = right_bar(r, i, #reviews)
      end
      if vim.api.nvim_win_is_valid(r.ui.left_win) then
        vim.wo[r.ui.left_win].winbar = left_bar(r)
      end
    end
  end
end

return M
