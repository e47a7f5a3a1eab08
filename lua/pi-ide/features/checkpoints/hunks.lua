-- Hunks in the :PiIde changes view (changes.lua: the checkpoint | the file): `:PiIde hunk
-- reject` takes the hunk under the cursor, from either pane, back to the checkpoint's text in
-- the file's buffer (modified, not written: the user's :w writes it, `u` undoes it), so that a
-- change made by an agent's shell can be undone hunk by hunk; ]h/[h move between hunks. There
-- is nothing to accept: the file already holds the change. The hunks are the checkpoint's text
-- against the buffer's, counted with vim.diff when asked, up to MAX_BYTES (a larger file is
-- left to `do`, Neovim's own diff, which the view has anyway). The keys (review.keys) are set
-- on the file's buffer only while the view shows it; what the user had on them comes back.
local config = require("pi-ide.core.config")

local M = {}

-- Counting hunks runs on the main thread: ~1 ms for 100 KiB; 2 MiB stays well under 50 ms.
local MAX_BYTES = 2 * 1024 * 1024

-- What the view shows now: { left, right (buffers), diffed, saved = { lhs -> the user's map } }.
local shown = nil

local function say(msg, level)
  vim.notify("pi-ide.nvim: " .. msg, level or vim.log.levels.WARN)
end

local function text(buf)
  return table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n") .. "\n"
end

-- The file's hunks against the checkpoint, { start_a, count_a, start_b, count_b } as vim.diff
-- gives them (1-based; a count of 0 starts at the line before); nil and why when too large.
local function list()
  local a, b = text(shown.left), text(shown.right)
  if #a > MAX_BYTES or #b > MAX_BYTES then
    return nil, ("this file is over %d MiB: take a hunk back with do (Neovim's diff)"):format(MAX_BYTES / 1048576)
  end
  return vim.diff(a, b, { result_type = "indices" })
end

-- Where hunk `h` starts and how many lines it has in the pane showing `buf`.
local function span(h, buf)
  if buf == shown.left then
    return h[1], h[2]
  end
  return h[3], h[4]
end

-- The hunk at line `l` of the pane showing `buf`: the one whose lines hold it, else one with
-- no lines there (Neovim shows those as filler lines between the line before and the next).
local function at(hunks, buf, l)
  local near
  for _, h in ipairs(hunks) do
    local start, count = span(h, buf)
    if count > 0 and l >= start and l < start + count then
      return h
    elseif count == 0 and (l == start or l == start + 1) then
      near = near or h
    end
  end
  return near
end

--- The current window is a pane of the view.
function M.here()
  local buf = vim.api.nvim_get_current_buf()
  return shown ~= nil and (buf == shown.left or buf == shown.right)
end

-- The checkpoint's lines of hunk `h` put in the file's buffer in place of its own.
local function take_back(h)
  local lines = vim.api.nvim_buf_get_lines(shown.left, h[1] - 1, h[1] - 1 + h[2], false)
  local first = h[4] > 0 and h[3] - 1 or h[3]
  vim.api.nvim_buf_set_lines(shown.right, first, first + h[4], false, lines)
end

--- :PiIde hunk accept|reject in the view.
function M.decide(action)
  if action == "accept" then
    return say("nothing to accept here: the file already holds this change (:PiIde hunk reject takes it back to the checkpoint's)", vim.log.levels.INFO)
  elseif not shown.diffed then
    return say("this file's checkpoint has no text to take back here")
  end
  local hunks, why = list()
  if not hunks then
    return say(why)
  end
  local h = at(hunks, vim.api.nvim_get_current_buf(), vim.fn.line("."))
  if not h then
    local next_key = config.values.review.keys.next_hunk or "]c"
    return say(("no hunk under the cursor (%s goes to the next one)"):format(next_key), vim.log.levels.INFO)
  end
  take_back(h)
end

--- Moves the cursor `count` hunks forward (`dir` 1) or back (-1); stays put past the last one.
function M.move(dir, count)
  local hunks = shown.diffed and list() or {}
  local buf = vim.api.nvim_get_current_buf()
  -- A hunk's first line; for one with no lines, the line before it.
  local lines = vim.tbl_map(function(h)
    return math.max(1, (span(h, buf)))
  end, hunks)
  require("pi-ide.features.review.hunk_keys").go(lines, dir, count)
end

local function actions()
  local keys = config.values.review.keys
  return {
    { keys.next_hunk, function() M.move(1, vim.v.count1) end, "next hunk" },
    { keys.prev_hunk, function() M.move(-1, vim.v.count1) end, "previous hunk" },
    { keys.accept_hunk, function() M.decide("accept") end, "nothing to accept: the file holds the change" },
    { keys.reject_hunk, function() M.decide("reject") end, "take the hunk under the cursor back to the checkpoint's" },
  }
end

--- The view shows checkpoint buffer `left` beside the file's buffer `right` (`diffed`: the
--- checkpoint has a text to diff): the keys on both, the user's own on `right` kept aside.
function M.attach(left, right, diffed)
  M.detach()
  shown = { left = left, right = right, diffed = diffed, saved = {} }
  for _, a in ipairs(actions()) do
    if a[1] then
      local had = vim.api.nvim_buf_call(right, function()
        return vim.fn.maparg(a[1], "n", false, true)
      end)
      if had.buffer == 1 then
        shown.saved[a[1]] = had
      end
      for _, buf in ipairs({ left, right }) do
        vim.keymap.set("n", a[1], a[2], { buffer = buf, desc = "pi-ide: " .. a[3] })
      end
    end
  end
end

--- The view shows another file or closed: the file's buffer gets back what the user had.
function M.detach()
  if not (shown and vim.api.nvim_buf_is_valid(shown.right)) then
    shown = nil
    return
  end
  for _, a in ipairs(actions()) do
    if a[1] then
      pcall(vim.keymap.del, "n", a[1], { buffer = shown.right })
      local had = shown.saved[a[1]]
      if had then
        vim.api.nvim_buf_call(shown.right, function()
          vim.fn.mapset("n", false, had)
        end)
      end
    end
  end
  shown = nil
end

return M
