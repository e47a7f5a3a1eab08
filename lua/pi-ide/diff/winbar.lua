-- The review's winbars: on the proposal, the file, what changed, where this review stands among
-- the open ones and the keys; on the left, the file as it is on disk. Everything the two panes
-- cannot show (a whole file's line breaks changing, the final newline, the byte order mark, a
-- write to another path than the agent named as the old file) is said here.
local config = require("pi-ide.config")

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

local function right_bar(r, i, n)
  local keys = config.values.diff.keys
  local parts = { M.display_name(r.path) }
  if r.stats then
    table.insert(parts, ("+%d −%d"):format(r.stats.added, r.stats.removed))
    table.insert(parts, ("%d hunk%s"):format(#r.stats.hunks, #r.stats.hunks == 1 and "" or "s"))
  else
    table.insert(parts, "…") -- the core is still counting
  end
  for _, change in ipairs(r.format_changes or {}) do
    table.insert(parts, "⚠ " .. change)
  end
  if n > 1 then
    table.insert(parts, ("%d of %d"):format(i, n))
  end
  if r.read_only then
    table.insert(parts, "read-only: Copilot writes its own proposal")
  end
  if r.user_edits then
    table.insert(parts, "⚠ your buffer has unsaved edits (kept; this diff is against the disk)")
  end
  local hints = { ":w accept" }
  if keys.accept then
    table.insert(hints, key_label(keys.accept) .. " accept")
  end
  table.insert(hints, keys.reject and (key_label(keys.reject) .. " reject") or ":q reject")
  local head = " " .. table.concat(parts, "  ·  ")
  local shown = fit_hints(r.ui.right_win, head, hints)
  return escape(head) .. (#shown > 0 and ("  ·  " .. escape(table.concat(shown, "  "))) or "")
end

local function left_bar(r)
  local state = r.old_error and ("⚠ cannot read: " .. r.old_error) or r.new_file and "new file" or "on disk"
  local text = M.display_name(r.path) .. "  ·  " .. state
  local asker = require("pi-ide.agents").label_of(r.client)
  if asker then
    text = text .. "  ·  asked by " .. asker
  end
  if r.old_path ~= r.path then
    -- The agent named another file as the old one; what is written, and shown here, is this.
    text = text .. "  ·  the agent's old_file_path: " .. M.display_name(r.old_path)
  end
  return " " .. escape(text)
end

--- Sets the winbars of every review on screen; `reviews` in their order.
function M.refresh(reviews)
  for i, r in ipairs(reviews) do
    if r.ui then
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
