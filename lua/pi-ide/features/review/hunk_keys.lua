-- Deciding a review's hunks from its panes: `:PiIde hunk accept|reject` and its keys act on
-- the hunk under the cursor; `]h`/`[h` move between hunks. The keys are the review buffers'
-- own (gitsigns' `]h`/`[h` stay in the user's files; inline.lua takes them in the file's buffer
-- only where the user has no map of their own). hunks.lua holds what a hunk is.
local config = require("pi-ide.core.config")
local hunks = require("pi-ide.features.review.hunks")
local log = require("pi-ide.core.log")

local M = {}

local function say(msg, level)
  vim.notify("pi-ide.nvim: " .. msg, level or vim.log.levels.WARN)
end

-- Why review `r` cannot have a hunk decided from the current window, or nil.
local function cannot(r)
  local buf = vim.api.nvim_get_current_buf()
  if not (r.hunks and r.ui) then
    return "the review's hunks are still being counted"
  elseif r.hunks.unavailable then
    return "the proposal was edited before its hunks were counted: decide by editing it"
  elseif buf ~= r.ui.left_buf and buf ~= r.ui.right_buf and buf ~= (r.ui.inline or {}).buf then
    return "put the cursor in a pane of the review to decide a hunk"
  end
end

--- Decides the hunk under the cursor of review `r`: `action` "accept" or "reject". `view`:
--- the review's view (init.lua), told to redraw the winbars.
function M.decide(r, action, view)
  local why = cannot(r)
  if why then
    return say(why)
  end
  local buf = vim.api.nvim_get_current_buf()
  local h = hunks.at(r, buf, vim.api.nvim_win_get_cursor(0)[1] - 1)
  if not h then
    local next_key = config.values.review.keys.next_hunk or "]c"
    return say(("no hunk under the cursor (%s goes to the next one)"):format(next_key), vim.log.levels.INFO)
  end
  local err = hunks.set(r, h, action == "reject" and "rejected" or "kept")
  -- The core knows at once (the pane changed may not be the current one: no TextChanged).
  require("pi-ide.features.review.left").push(r)
  if err == "edited" then
    say("this hunk was edited by hand: it is left as you made it (undo with u, or edit it yourself)")
  end
  local stale = require("pi-ide.features.review.stale")
  if stale.look(r) then
    say(stale.message(r))
  end
  hunks.show(r)
  if r.ui.inline then
    require("pi-ide.features.review.inline").render(r, h)
  end
  view.refresh()
end

--- Moves the cursor `count` hunks forward (`dir` 1) or back (-1) among `lines` (each hunk's
--- first line, in order); stays put past the last one, as ]c does. The changes view's hunks
--- move so too (features/checkpoints/hunks.lua).
function M.go(lines, dir, count)
  local line = vim.fn.line(".")
  for _ = 1, count do
    local target
    for i = dir > 0 and 1 or #lines, dir > 0 and #lines or 1, dir do
      if (dir > 0 and lines[i] > line) or (dir < 0 and lines[i] < line) then
        target = lines[i]
        break
      end
    end
    if not target then
      break
    end
    line = target
  end
  vim.cmd("normal! m'")
  vim.api.nvim_win_set_cursor(0, { line, 0 })
end

--- Moves the cursor `count` hunks of review `r` forward (`dir` 1) or back (-1) in the pane
--- showing the current buffer.
function M.move(r, dir, count)
  if not (r.hunks and r.ui) then
    return
  end
  local buf = vim.api.nvim_get_current_buf()
  local lines = {}
  for _, h in ipairs(r.hunks.list) do
    table.insert(lines, hunks.row_of(r, buf, h) + 1)
  end
  M.go(lines, dir, count)
end

--- The hunk keys of review `r`: { lhs (nil when turned off), function, what it does }.
function M.actions(r, view)
  local keys = config.values.review.keys
  return {
    { keys.next_hunk, function() M.move(r, 1, vim.v.count1) end, "next hunk" },
    { keys.prev_hunk, function() M.move(r, -1, vim.v.count1) end, "previous hunk" },
    { keys.accept_hunk, function() M.decide(r, "accept", view) end, "accept the hunk under the cursor" },
    { keys.reject_hunk, function() M.decide(r, "reject", view) end, "reject the hunk under the cursor" },
  }
end

--- The hunk keys in both panes of review `r`, its marks kept up with the user's edits, and
--- the core told what the user left in it (left.lua).
function M.attach(r, group, view)
  require("pi-ide.features.review.left").attach(r, group)
  local actions = M.actions(r, view)
  for _, buf in ipairs({ r.ui.left_buf, r.ui.right_buf }) do
    for _, a in ipairs(actions) do
      if a[1] then
        vim.keymap.set("n", a[1], a[2], { buffer = buf, desc = "pi-ide: " .. a[3] })
      end
    end
  end
  vim.api.nvim_create_autocmd({ "TextChanged", "TextChangedI" }, {
    group = group,
    buffer = r.ui.right_buf,
    callback = log.guard("marking a review's hunks", function()
      if r.hunks and r.hunks.decided then
        hunks.show(r)
        view.refresh()
      end
    end),
  })
end

return M
